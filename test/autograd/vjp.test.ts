// vjp: MLX's vjp tests, cotangent pairing and errors, the scan gradients MLX pins down, and what a
// transform leaves behind in the graph.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { close } from "./helpers.ts";

const f32 = (v: number | number[] | number[][]) => mg.array(v, mg.float32);
const first = (vjps: unknown[]) => vjps[0] as MgArray;

describe("vjp", () => {
  test("MLX's test_vjp", () => {
    let [out, dout] = mg.vjp((x: MgArray) => mg.multiply(2, x), [f32(1)], [f32(2)]);
    expect(out[0]!.item()).toBe(2);
    expect(first(dout).item()).toBe(4);

    const [, dout2] = mg.vjp((x: MgArray, y: MgArray) => mg.multiply(x, y), [f32(4), f32(2)], [f32(3)]);
    expect(dout2.map((d) => d.item())).toEqual([6, 12]);

    const [, d3] = mg.vjp(
      (x: MgArray, y: MgArray, z: MgArray) => [mg.multiply(x, y), mg.multiply(y, z)],
      [f32(2), f32(4), f32(6)],
      [f32(1), f32(3)],
    );
    expect((d3 as MgArray[]).map((d) => d.item())).toEqual([4, 2 + 18, 12]);
  });

  test("outputs behind stop_gradient take no cotangent; counts and shapes are checked", () => {
    const [outs, vjps] = mg.vjp((x: MgArray) => [mg.stopGradient(mg.square(x)), mg.multiply(x, 3)], [f32(2)], [f32(1)]);
    expect(outs.map((o) => o.item())).toEqual([4, 6]);
    expect(first(vjps).item()).toBe(3);
    expect(() => mg.vjp((x: MgArray) => [x, x], [f32(2)], [f32(1)])).toThrow(
      "[vjp] Number of outputs to compute gradients for (2) does not match number of cotangents (1).",
    );
    expect(() => mg.vjp((x: MgArray) => x, [f32([1, 2])], [f32([1, 2, 3])])).toThrow("[vjp] Output shape (2,) does not match cotangent shape (3,).");
  });

  test("primals and cotangents may be trees; the vjps keep the primals' structure", () => {
    const [, [g]] = mg.vjp(
      (p: { w: MgArray; b: MgArray[] }) => mg.add(mg.multiply(p.w, p.b[0]!), p.b[1]!),
      [{ w: f32([1, 2]), b: [f32([3, 4]), f32([5, 6])] }],
      [f32([1, 10])],
    );
    const tree = g as { w: MgArray; b: MgArray[] };
    expect(tree.w.tolist()).toEqual([3, 40]);
    expect(tree.b[0]!.tolist()).toEqual([1, 20]);
    expect(tree.b[1]!.tolist()).toEqual([1, 10]);
  });

  test("an output that does not depend on the primal gives zeros of the primal's shape", () => {
    const [, vjps] = mg.vjp((_x: MgArray) => f32([1, 2, 3]), [f32([[1, 2], [3, 4]])], [f32([1, 1, 1])]);
    expect(first(vjps).tolist()).toEqual([[0, 0], [0, 0]]);
  });

  test("a primitive without a vjp rule is named in the error", () => {
    const NoRule = { name: "NoRule", outputSpecs: ([a]: readonly MgArray[]) => [{ shape: [...a!.shape], dtype: a!.dtype }], cpu() {} };
    expect(() => mg.vjp((x: MgArray) => makeArray(NoRule, [x], null, resolveStream()), [f32(1)], [f32(1)])).toThrow(
      "[vjp] NoRule has no vjp rule.",
    );
  });
});

describe("scan gradients (MLX's test_cumprod_grad, test_cummax_grad, test_cummin_grad)", () => {
  const sumOf = (f: (y: MgArray) => MgArray) => (y: MgArray) => mg.sum(f(y));
  const cases: [string, (y: MgArray) => MgArray, number[], number[]][] = [
    ["cumprod", (y) => mg.cumprod(y), [2, 1, 2, 2, 3], [20, 38, 18, 16, 8]],
    ["cumprod", (y) => mg.cumprod(y), [2, 0, 2, 2, 3], [1, 38, 0, 0, 0]],
    ["cumprod", (y) => mg.cumprod(y), [2, 0, 2, 0, 3], [1, 6, 0, 0, 0]],
    ["cumprod exclusive", (y) => mg.cumprod(y, null, { inclusive: false }), [2, 1, 2, 2, 3], [8, 14, 6, 4, 0]],
    ["cumprod exclusive", (y) => mg.cumprod(y, null, { inclusive: false }), [2, 0, 2, 2, 3], [1, 14, 0, 0, 0]],
    ["cumprod exclusive", (y) => mg.cumprod(y, null, { inclusive: false }), [2, 0, 2, 0, 3], [1, 6, 0, 0, 0]],
    ["cumprod reverse exclusive", (y) => mg.cumprod(y, null, { inclusive: false, reverse: true }), [2, 1, 2, 2, 3], [0, 12, 12, 15, 11]],
    ["cumprod reverse exclusive", (y) => mg.cumprod(y, null, { inclusive: false, reverse: true }), [2, 0, 2, 2, 3], [0, 12, 6, 9, 7]],
    ["cumprod reverse exclusive", (y) => mg.cumprod(y, null, { inclusive: false, reverse: true }), [2, 0, 2, 0, 3], [0, 0, 0, 9, 1]],
    ["cumprod reverse", (y) => mg.cumprod(y, null, { reverse: true }), [2, 1, 2, 2, 3], [12, 36, 24, 27, 19]],
    ["cumprod reverse", (y) => mg.cumprod(y, null, { reverse: true }), [2, 0, 2, 2, 3], [0, 36, 6, 9, 7]],
    ["cumprod reverse", (y) => mg.cumprod(y, null, { reverse: true }), [2, 0, 2, 0, 3], [0, 0, 0, 9, 1]],
    ["cummax", (y) => mg.cummax(y), [3, 3, 1, 5, 5], [1, 2, 0, 1, 1]],
    ["cummax exclusive", (y) => mg.cummax(y, null, { inclusive: false }), [3, 3, 1, 5, 5], [1, 2, 0, 1, 0]],
    ["cummax reverse", (y) => mg.cummax(y, null, { reverse: true }), [3, 3, 1, 5, 5], [0, 0, 0, 4, 1]],
    ["cummax reverse exclusive", (y) => mg.cummax(y, null, { reverse: true, inclusive: false }), [3, 3, 1, 5, 5], [0, 0, 0, 3, 1]],
    ["cummin", (y) => mg.cummin(y), [3, 3, 1, 5, 5], [1, 1, 3, 0, 0]],
    ["cummin exclusive", (y) => mg.cummin(y, null, { inclusive: false }), [3, 3, 1, 5, 5], [1, 1, 2, 0, 0]],
    ["cummin reverse", (y) => mg.cummin(y, null, { reverse: true }), [3, 3, 1, 5, 5], [0, 0, 3, 1, 1]],
    ["cummin reverse exclusive", (y) => mg.cummin(y, null, { reverse: true, inclusive: false }), [3, 3, 1, 5, 5], [0, 0, 2, 1, 1]],
  ];
  for (const [name, f, y, expected] of cases) {
    test(`${name} at [${y}] → [${expected}]`, () => {
      close(mg.grad(sumOf(f))(f32(y)), expected, 1e-5, 1e-5);
    });
  }

  test("cummax/cummin route non-uniform cotangents to the owner; 2-D along either axis", () => {
    const a = f32([3, 3, 1, 5, 5]);
    const cot = f32([10, 1, 1, 100, 1000]);
    close(first(mg.vjp((y: MgArray) => mg.cummax(y), [a], [cot])[1]), [10, 2, 0, 100, 1000]);
    close(first(mg.vjp((y: MgArray) => mg.cummin(y), [a], [cot])[1]), [10, 1, 1101, 0, 0]);
    const m = f32([[1, 3, 3], [4, 2, 4]]);
    close(mg.grad((y: MgArray) => mg.sum(mg.cummax(y, 1)))(m), [1, 1, 1, 2, 0, 1]);
    close(mg.grad((y: MgArray) => mg.sum(mg.cummax(y, 1, { inclusive: false })))(m), [1, 1, 0, 2, 0, 0]);
    close(mg.grad((y: MgArray) => mg.sum(mg.cummin(y, 0)))(m), [2, 1, 2, 0, 1, 0]);
  });

  test("max/min reductions share the gradient between ties; prod of zeros is exact", () => {
    close(mg.grad((y: MgArray) => mg.max(y))(f32([1, 3, 3, 2])), [0, 0.5, 0.5, 0]);
    close(mg.grad((y: MgArray) => mg.min(y, 1).sum())(f32([[2, 2, 2], [1, 4, 1]])), [1 / 3, 1 / 3, 1 / 3, 0.5, 0, 0.5]);
    close(mg.grad((y: MgArray) => mg.prod(y))(f32([2, 0, 3])), [0, 6, 0]);
    close(mg.grad((y: MgArray) => mg.prod(y))(f32([2, 0, 3, 0])), [0, 0, 0, 0]);
    // d²/dy₁dy₃ of y₀y₁y₂y₃ at two zeros is y₀y₂, not 0.
    const hess = mg.grad((y: MgArray) => mg.grad((z: MgArray) => mg.prod(z))(y).index(1))(f32([2, 0, 3, 0]));
    close(hess, [0, 0, 0, 6]);
  });
});

describe("complex products (MLX's test_complex_prod_vjp)", () => {
  const c = (re: number, im: number) => ({ re, im });
  test("prod over an axis: the cotangent times the conjugate product of the others", () => {
    const primal = mg.array([[c(1, 1), c(2, -1), c(0.5, 0)], [c(-1, 0.5), c(1, 3), c(2, 2)]], mg.complex64);
    const cot = mg.array([c(1, 0.5), c(-1, 2), c(0.25, -1)], mg.complex64);
    const [, [v]] = mg.vjp((x: MgArray) => mg.prod(x, 0), [primal], [cot]);
    const expected = mg.stack([mg.multiply(mg.conjugate(primal.index(1)), cot), mg.multiply(mg.conjugate(primal.index(0)), cot)]);
    close(mg.real(v as MgArray), mg.real(expected), 1e-6, 1e-6);
    close(mg.imag(v as MgArray), mg.imag(expected), 1e-6, 1e-6);
    // The same as the vjp of multiply.
    const [, vm] = mg.vjp(mg.multiply, [primal.index(0), primal.index(1)], [cot]);
    close(mg.imag(v as MgArray), mg.imag(mg.stack(vm as MgArray[])), 1e-6, 1e-6);
  });

  test("cumprod: the vjp is the conjugate transpose of the jvp's Jacobian", () => {
    const z = mg.array([c(1, 1), c(2, -1), c(0, 0), c(0.5, 2)], mg.complex64);
    const g = mg.array([c(1, -1), c(0.5, 2), c(-1, 0), c(2, 1)], mg.complex64);
    expect(mg.cumprod(z).tolist()).toEqual([c(1, 1), c(3, 1), c(0, 0), c(0, 0)]);
    const n = 4;
    const J: { re: number; im: number }[][] = Array.from({ length: n }, () => []);
    for (let k = 0; k < n; k++) {
      const e = mg.array(Array.from({ length: n }, (_, i) => (i === k ? c(1, 0) : c(0, 0))), mg.complex64);
      const col = mg.jvp((x: MgArray) => mg.cumprod(x), [z], [e])[1][0]!.tolist() as { re: number; im: number }[];
      col.forEach((v, i) => (J[i]![k] = v));
    }
    const gv = g.tolist() as { re: number; im: number }[];
    // vjp_k = Σ_i g_i · conj(J_ik)
    const expected = Array.from({ length: n }, (_, k) =>
      gv.reduce((acc, gi, i) => {
        const j = J[i]![k]!;
        return c(acc.re + gi.re * j.re + gi.im * j.im, acc.im + gi.im * j.re - gi.re * j.im);
      }, c(0, 0)),
    );
    const [, [v]] = mg.vjp((x: MgArray) => mg.cumprod(x), [z], [g]);
    const got = (v as MgArray).tolist() as { re: number; im: number }[];
    got.forEach((x, k) => {
      expect(x.re).toBeCloseTo(expected[k]!.re, 5);
      expect(x.im).toBeCloseTo(expected[k]!.im, 5);
    });
  });
});

describe("what a transform leaves in the graph", () => {
  test("values evaluated during the trace are detached once the outermost transform returns", () => {
    const x = f32([1, 2, 3]);
    let seen: MgArray | null = null;
    const [value, g] = mg.valueAndGrad((y: MgArray) => {
      const h = mg.exp(y);
      h.tolist(); // evaluated while the graph is retained
      seen = h;
      return mg.sum(mg.multiply(h, y));
    })(x);
    // The intermediate kept its data but no longer holds its inputs.
    expect(seen!.evaluated).toBe(true);
    expect(seen!.node).toBe(null);
    mg.eval(value, g);
    expect(value.node).toBe(null);
    expect(g.node).toBe(null);
    // Nothing pending reads x any more, so disposing it frees its storage right away.
    expect(x.graphRefs).toBe(0);
  });

  test("nested transforms keep the graph until the outermost one is done", () => {
    const f = (y: MgArray) => {
      const h = mg.sin(y);
      mg.eval(h);
      return mg.sum(mg.multiply(h, h));
    };
    const x = mg.array([0.2, 0.7], mg.float64);
    // d²/dy² (sin²y) = 2cos(2y); the inner grad's evaluated intermediates must survive for the outer.
    const g2 = mg.grad((y: MgArray) => mg.sum(mg.grad(f)(y)))(x);
    close(g2, [2 * Math.cos(0.4), 2 * Math.cos(1.4)], 1e-12, 1e-12);
    expect(x.graphRefs).toBe(0);
  });
});

import { resolveStream } from "../../ts/core/device.ts";
import { makeArray } from "../../ts/core/graph.ts";
