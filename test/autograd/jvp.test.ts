// jvp: MLX's jvp tests (constant inputs, partly traced inputs, comparisons, bitwise ops) and errors.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { close } from "./helpers.ts";

const f32 = (v: number | number[]) => mg.array(v, mg.float32);

describe("jvp", () => {
  test("MLX's test_jvp", () => {
    let [out, dout] = mg.jvp((x: MgArray) => mg.multiply(2, x), [f32(1)], [f32(2)]);
    expect(out[0]!.item()).toBe(2);
    expect(dout[0]!.item()).toBe(4);
    [, out] = mg.jvp((x: MgArray, y: MgArray) => mg.multiply(x, y), [f32(4), f32(2)], [f32(3), f32(2)]);
    expect(out[0]!.item()).toBe(4 * 2 + 2 * 3);
    [, out] = mg.jvp((x: MgArray, y: MgArray, z: MgArray) => [mg.multiply(x, y), mg.multiply(y, z)], [f32(2), f32(4), f32(6)], [f32(1), f32(3), f32(1)]);
    expect(out.map((o) => o.item())).toEqual([4 + 6, 4 + 18]);
  });

  test("comparison outputs have zero tangents in the tangent's dtype", () => {
    const x = f32([1, -2, 3]);
    for (const op of [mg.greater, mg.less, mg.equal, mg.greaterEqual, mg.lessEqual, mg.notEqual]) {
      const [, [t]] = mg.jvp((y: MgArray) => op(y, 0), [x], [mg.onesLike(x)]);
      expect(t!.dtype).toBe(mg.float32);
      expect(t!.tolist()).toEqual([0, 0, 0]);
    }
  });

  test("constant inputs (test_jvp_with_constant_inputs)", () => {
    const sq = (t: MgArray) => mg.power(mg.add(t, 1), 2);
    const cases = [
      (t: MgArray) => mg.where(mg.greater(sq(t), -1), sq(t), 999),
      (t: MgArray) => mg.where(mg.less(sq(t), -1), 999, sq(t)),
      (t: MgArray) => mg.where(mg.array(true), sq(t), 999),
      (t: MgArray) => mg.where(mg.array(false), 999, sq(t)),
    ];
    for (const fun of cases) expect(mg.jvp(fun, [f32(0)], [f32(1)])[1][0]!.item()).toBe(2);
    const [, [d]] = mg.jvp((a: MgArray, b: MgArray) => mg.where(mg.array([true, false]), a, b), [mg.zeros([2]), mg.zeros([2])], [f32([1, 2]), f32([3, 4])]);
    expect(d!.tolist()).toEqual([1, 4]);
    const [, [z]] = mg.jvp((c: MgArray) => mg.where(mg.greater(c, 0), 2, 3), [f32(1)], [f32(1)]);
    expect(z!.item()).toBe(0);
    expect(z!.dtype).toBe(mg.float32);
    expect(mg.jvp((y: MgArray) => mg.arctan2(y, f32(2)), [f32(1)], [f32(1)])[1][0]!.item()).toBeCloseTo(0.4, 6);
    expect(mg.jvp((x: MgArray) => mg.arctan2(f32(2), x), [f32(1)], [f32(1)])[1][0]!.item()).toBeCloseTo(-0.4, 6);
  });

  test("partly traced inputs use their own tangents (test_jvp_with_partly_traced_inputs)", () => {
    const fun = (a: MgArray, b: MgArray) => mg.power(a, b);
    const primals: [MgArray, MgArray] = [f32(2), f32(3)];
    const dyda = 12;
    const dydb = Math.log(2) * 8;
    expect(mg.jvp(fun, primals, [f32(1), f32(0)])[1][0]!.item()).toBeCloseTo(dyda, 4);
    expect(mg.jvp(fun, primals, [f32(0), f32(1)])[1][0]!.item()).toBeCloseTo(dydb, 4);
    expect(mg.jvp(fun, primals, [f32(1), f32(1)])[1][0]!.item()).toBeCloseTo(dyda + dydb, 4);
    expect(mg.jvp((a: MgArray) => mg.power(a, f32(3)), [f32(2)], [f32(1)])[1][0]!.item()).toBeCloseTo(dyda, 4);
    expect(mg.jvp((b: MgArray) => mg.power(f32(2), b), [f32(3)], [f32(1)])[1][0]!.item()).toBeCloseTo(dydb, 4);
    // slice_update with a subset of traced inputs.
    const src = mg.zeros([4]);
    const upd = mg.ones([2]);
    const start = mg.array([1]);
    expect(mg.jvp((u: MgArray) => mg.sliceUpdate(src, u, start, [0]), [upd], [mg.ones([2])])[1][0]!.tolist()).toEqual([0, 1, 1, 0]);
    expect(mg.jvp((s: MgArray) => mg.sliceUpdate(s, upd, start, [0]), [src], [mg.ones([4])])[1][0]!.tolist()).toEqual([1, 0, 0, 1]);
    expect(mg.jvp((s: MgArray, u: MgArray) => mg.sliceUpdate(s, u, start, [0]), [src, upd], [mg.ones([4]), mg.full([2], 2)])[1][0]!.tolist()).toEqual([1, 2, 2, 1]);
  });

  test("divmod: one tangent per output; the remainder moves with the dividend", () => {
    // MLX returns zero for both (its DivMod has no derivative); r = x − 3⌊x/3⌋ has dr/dx = 1.
    const [, [dq, dr]] = mg.jvp((x: MgArray) => {
      const [q, r] = mg.divmod(x, f32(3));
      return [q, mg.negative(r)];
    }, [f32(7)], [f32(1)]);
    expect(dq!.item()).toBe(0);
    expect(dr!.item()).toBe(-1);
  });

  test("tangents through bitwise and logical ops are not corrupted (test_jvp_through_bitwise_ops)", () => {
    const x = f32([0, 1, 2]);
    const f1 = (y: MgArray) => mg.add(y, mg.astype(mg.logicalAnd(mg.equal(y, 0), mg.greater(y, -1)), mg.float32));
    expect(mg.jvp(f1, [x], [mg.onesLike(x)])[1][0]!.tolist()).toEqual([1, 1, 1]);
    const f2 = (y: MgArray) => mg.multiply(y, mg.astype(mg.logicalOr(mg.equal(y, 0), mg.greater(y, 1)), mg.float32));
    expect(mg.jvp(f2, [x], [mg.onesLike(x)])[1][0]!.tolist()).toEqual([1, 0, 1]);
  });

  test("complex: the jvp of a holomorphic op multiplies by f′(z), that of real(z) is Re(t)", () => {
    const z = mg.array([{ re: 0.5, im: -1 }, { re: 2, im: 0.25 }], mg.complex64);
    const t = mg.array([{ re: 1, im: 2 }, { re: -1, im: 0.5 }], mg.complex64);
    const [, [d]] = mg.jvp(mg.exp, [z], [t]);
    close(mg.real(d!), mg.real(mg.multiply(t, mg.exp(z))), 1e-5, 1e-5);
    close(mg.imag(d!), mg.imag(mg.multiply(t, mg.exp(z))), 1e-5, 1e-5);
    const [, [re]] = mg.jvp((w: MgArray) => mg.real(w), [z], [t]);
    expect(re!.dtype).toBe(mg.float32);
    expect(re!.tolist()).toEqual([1, -1]);
    // The vjp uses the conjugate derivative (MLX's convention): g·conj(exp z).
    const [, [g]] = mg.vjp(mg.exp, [z], [t]);
    close(mg.imag(g as MgArray), mg.imag(mg.multiply(t, mg.conjugate(mg.exp(z)))), 1e-5, 1e-5);
  });

  test("errors", () => {
    expect(() => mg.jvp((x: MgArray) => x, [f32(1), f32(2)] as unknown as [MgArray], [f32(1)])).toThrow("[jvp] Number of inputs does not match number of tangents.");
    expect(() => mg.jvp((x: MgArray) => x, [f32([1, 2])], [f32([1, 2, 3])])).toThrow("[jvp] Input shape (2,) does not match shape of tangent (3,)");
  });
});
