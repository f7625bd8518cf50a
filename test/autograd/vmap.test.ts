// vmap: agreement with an explicit loop (matmul, reductions, grad, and a rule per primitive
// family), in/out axes and trees, errors, and that a vmapped graph is one batched graph.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import type { Node } from "../../ts/core/array.ts";
import { resolveStream } from "../../ts/core/device.ts";
import { makeArray } from "../../ts/core/graph.ts";
import { close, makeRng, uniform } from "./helpers.ts";

const rng = makeRng(7);

/** The explicit loop vmap replaces: fn on each slice along `axis`, stacked on axis 0. */
function loop(fn: (...xs: MgArray[]) => MgArray, inputs: MgArray[], inAxes: (number | null)[]): MgArray {
  const n = inputs.find((_, i) => inAxes[i] !== null)!.shape[inAxes.find((a) => a !== null)!]!;
  const outs: MgArray[] = [];
  for (let b = 0; b < n; b++) {
    outs.push(fn(...inputs.map((x, i) => (inAxes[i] === null ? x : mg.take(x, b, inAxes[i]!)))));
  }
  return mg.stack(outs, 0);
}

/** Primitive names in the graph of `a` (to check that vmap builds one batched graph). */
function primitivesOf(a: MgArray): string[] {
  const names: string[] = [];
  const seen = new Set<Node>();
  const stack = [a];
  while (stack.length) {
    const x = stack.pop()!;
    if (!x.node || seen.has(x.node)) continue;
    seen.add(x.node);
    names.push(x.node.primitive.name);
    stack.push(...x.node.inputs);
  }
  return names;
}

describe("vmap agrees with an explicit loop", () => {
  test("matmul: batched left operand, shared right operand, and both batched on other axes", () => {
    const a = uniform(rng, [4, 2, 3]);
    const b = uniform(rng, [3, 5]);
    const v = mg.vmap(mg.matmul, [0, null])(a, b);
    // One batched product (checked before evaluation detaches the graph), equal to the loop.
    expect(primitivesOf(v).filter((n) => n === "Matmul").length).toBe(1);
    close(v, loop(mg.matmul, [a, b], [0, null]), 1e-12, 1e-12);
    const bb = uniform(rng, [3, 4, 5]);
    const v2 = mg.vmap(mg.matmul, [0, 1])(a, bb);
    close(v2, loop(mg.matmul, [a, bb], [0, 1]), 1e-12, 1e-12);
    // Vector-matrix products of each row.
    const rows = uniform(rng, [6, 3]);
    close(mg.vmap((r: MgArray) => mg.matmul(r, b))(rows), mg.matmul(rows, b), 1e-12, 1e-12);
  });

  test("reductions over the element's axes, with the batch axis anywhere", () => {
    const x = uniform(rng, [3, 4, 5]);
    for (const inAxis of [0, 1, 2]) {
      const f = (y: MgArray) => mg.sum(mg.multiply(y, y), 0);
      close(mg.vmap(f, inAxis)(x), loop(f, [x], [inAxis]), 1e-12, 1e-12);
      const g = (y: MgArray) => mg.max(y, -1, true);
      close(mg.vmap(g, inAxis)(x), loop(g, [x], [inAxis]), 1e-12, 1e-12);
      const h = (y: MgArray) => mg.logsumexp(y, -1);
      close(mg.vmap(h, inAxis)(x), loop(h, [x], [inAxis]), 1e-12, 1e-12);
    }
    const v = mg.vmap((y: MgArray) => mg.prod(y))(x);
    expect(primitivesOf(v).filter((n) => n === "Reduce").length).toBe(1);
  });

  test("grad: per-example gradients of a small model", () => {
    const w = uniform(rng, [3, 2]);
    const xs = uniform(rng, [5, 3]);
    const ys = uniform(rng, [5, 2]);
    const loss = (w_: MgArray, x: MgArray, y: MgArray) => mg.sum(mg.square(mg.subtract(mg.tanh(mg.matmul(x, w_)), y)));
    const perExample = mg.vmap(mg.grad(loss), [null, 0, 0])(w, xs, ys);
    expect(perExample.shape).toEqual([5, 3, 2]);
    close(perExample, loop(mg.grad(loss), [w, xs, ys], [null, 0, 0]), 1e-12, 1e-12);
    // And the sum of per-example gradients is the batch gradient.
    close(mg.sum(perExample, 0), mg.grad((w_: MgArray) => mg.sum(mg.vmap((x: MgArray, y: MgArray) => loss(w_, x, y))(xs, ys)))(w), 1e-12, 1e-12);
  });

  test("a rule per family: elementwise with broadcasting, views, scans, joins, where, divmod, casts", () => {
    const x = uniform(rng, [4, 3, 2]);
    const y = uniform(rng, [2]);
    const fns: [string, (a: MgArray) => MgArray][] = [
      ["binary with an unbatched operand", (a) => mg.add(mg.exp(a), y)],
      ["power and logaddexp", (a) => mg.logaddexp(mg.power(mg.abs(a), 1.5), a)],
      ["reshape", (a) => mg.reshape(a, [2, 3])],
      ["transpose", (a) => mg.transpose(a)],
      ["broadcast", (a) => mg.broadcastTo(mg.sum(a, 0, true), [2, 3, 2])],
      ["slice", (a) => a.index("1:", { start: null, stop: null, step: -1 })],
      ["cumsum", (a) => mg.cumsum(a, 1, { reverse: true })],
      ["cummax", (a) => mg.cummax(a, 0)],
      ["logcumsumexp", (a) => mg.logcumsumexp(a, 0, { inclusive: false })],
      ["concatenate with an unbatched part", (a) => mg.concatenate([a, mg.ones([1, 2], mg.float64)], 0)],
      ["where", (a) => mg.where(mg.greater(a, 0), a, mg.negative(y))],
      ["divmod", (a) => mg.divmod(a, 0.3)[1]],
      ["astype", (a) => mg.astype(a, mg.float32)],
      ["stop_gradient", (a) => mg.stopGradient(a)],
      ["softmax", (a) => mg.softmax(a, -1)],
      ["asStrided", (a) => mg.asStrided(mg.flatten(a), [2, 2], [1, 1])],
      ["sort", (a) => mg.sort(a, 0)],
    ];
    for (const [name, f] of fns) {
      for (const inAxis of [0, 2]) {
        const xa = mg.moveaxis(x, 0, inAxis);
        const expected = loop(f, [xa], [inAxis]);
        const actual = mg.vmap(f, inAxis)(xa);
        try {
          close(actual, expected, 1e-6, 1e-6);
        } catch (e) {
          throw new Error(`${name} (in axis ${inAxis}): ${(e as Error).message}`);
        }
      }
    }
  });

  test("nested vmap is an outer product of maps", () => {
    const a = uniform(rng, [3, 2]);
    const b = uniform(rng, [4, 2]);
    const dots = mg.vmap((u: MgArray) => mg.vmap((v: MgArray) => mg.sum(mg.multiply(u, v)))(b))(a);
    close(dots, mg.matmul(a, mg.transpose(b)), 1e-12, 1e-12);
  });

  test("grad of vmap and vmap of jvp", () => {
    const x = uniform(rng, [4, 3]);
    const g = mg.grad((y: MgArray) => mg.sum(mg.vmap((r: MgArray) => mg.multiply(mg.sum(mg.sin(r)), mg.sum(r)))(y)))(x);
    close(g, loop(mg.grad((r: MgArray) => mg.multiply(mg.sum(mg.sin(r)), mg.sum(r))), [x], [0]), 1e-12, 1e-12);
    const t = mg.onesLike(x);
    const jv = mg.vmap((r: MgArray, s: MgArray) => mg.jvp(mg.tanh, [r], [s])[1][0]!)(x, t);
    close(jv, mg.subtract(1, mg.square(mg.tanh(x))), 1e-12, 1e-12);
  });
});

describe("axes and trees", () => {
  test("in/out axes as in MLX's test_binary", () => {
    const x = uniform(rng, [2, 4]);
    const y = uniform(rng, [4, 2]);
    close(mg.vmap(mg.multiply, [0, 1])(x, y), mg.multiply(x, mg.transpose(y)));
    close(mg.vmap(mg.multiply, [0, 1], 1)(x, y), mg.transpose(mg.multiply(x, mg.transpose(y))));
    close(mg.vmap(mg.exp, 1, 1)(x), mg.exp(x));
    close(mg.vmap(mg.exp, -1, -1)(x), mg.exp(x));
  });

  test("trees of inputs and outputs (test_tree)", () => {
    const tree = { a: uniform(rng, [2, 4]), b: [uniform(rng, [2, 4]), uniform(rng, [2, 4])] };
    const myFun = (t: typeof tree) => mg.multiply(mg.add(t.a, t.b[0]!), t.b[1]!);
    close(mg.vmap(myFun)(tree), myFun(tree));
    close(mg.vmap(myFun, { a: 0, b: 0 })(tree), myFun(tree));
    close(mg.vmap(myFun, { a: 0, b: [0, 0] })(tree), myFun(tree));
    expect(() => mg.vmap(myFun, { a: 0, b: [[0, 0], 0] })(tree)).toThrow("[vmap]");
    const t2 = { a: uniform(rng, [2, 4]), b: [uniform(rng, [4, 2]), uniform(rng, [4, 2])] };
    close(mg.vmap(myFun, { a: 0, b: [1, 1] })(t2), mg.multiply(mg.add(t2.a, mg.transpose(t2.b[0]!)), mg.transpose(t2.b[1]!)));

    const two = (x: MgArray, y: MgArray) => ({ a: mg.add(x, y), b: mg.multiply(x, y) });
    const x = uniform(rng, [2, 4]);
    const y = uniform(rng, [2, 4]);
    const out = mg.vmap(two, 0, { a: 1, b: 0 })(x, y);
    close(mg.transpose(out.a), mg.add(x, y));
    close(out.b, mg.multiply(x, y));
    expect(() => mg.vmap(two, 0, [0, 1])(x, y)).toThrow("[vmap]");
    expect(() => mg.vmap(two, 0, { a: 0, c: 1 })(x, y)).toThrow("[vmap]");
  });

  test("unmapped inputs and outputs that do not depend on the mapped ones", () => {
    const x = uniform(rng, [3, 2]);
    const c = uniform(rng, [2]);
    const [dep, indep] = mg.vmap((a: MgArray, k: MgArray) => [mg.add(a, k), mg.exp(k)], [0, null])(x, c);
    close(dep!, mg.add(x, c));
    expect(indep!.shape).toEqual([3, 2]);
    close(indep!, mg.broadcastTo(mg.exp(c), [3, 2]));
    const [kept] = mg.vmap((a: MgArray, k: MgArray) => [mg.exp(k), a], [0, null], [null, 0])(x, c);
    close(kept!, mg.exp(c));
  });
});

describe("errors", () => {
  test("MLX's test_basics", () => {
    expect(() => mg.vmap(mg.exp)(mg.array(1, mg.float32))).toThrow("[vmap] Cannot vmap an input with zero dimensions.");
    expect(() => mg.vmap(mg.exp)("hello" as unknown as MgArray)).toThrow("[vmap] The argument should contain only arrays");
    expect(() => mg.vmap(mg.exp, "hello" as never)(mg.array([0, 1]))).toThrow("[vmap] in_axes must be a number, null, or a tree");
    expect(() => mg.vmap(mg.exp, 2)(mg.array([0, 1]))).toThrow("[vmap] Invalid vectorization axis 2 for array with shape (2,).");
    expect(() => mg.vmap(mg.exp, 0, "hello" as never)(mg.array([0, 1]))).toThrow("[vmap] out_axes must be a number, null, or a tree");
    expect(() => mg.vmap(mg.exp, 0, 2)(mg.array([0, 1]))).toThrow("[vmap] Invalid output vectorization axis 2 for array with shape ().");
    expect(() => mg.vmap(mg.add)(mg.ones([2]), mg.ones([3]))).toThrow("[vmap] Inconsistent axis sizes: 3 and 2.");
    expect(() => mg.vmap(mg.add, [null, null])(mg.ones([2]), mg.ones([2]))).toThrow("[vmap] At least one of in_axes must be non-None.");
  });

  test("evaluating inside vmap is an error; a primitive without a rule is named", () => {
    expect(() => mg.vmap((x: MgArray) => mg.exp(x).item() as unknown as MgArray)(mg.ones([2]))).toThrow(
      "[vmap] Attempting to eval an array during function transformations like vmap is not allowed",
    );
    const NoRule = { name: "NoRule", outputSpecs: ([a]: readonly MgArray[]) => [{ shape: [...a!.shape], dtype: a!.dtype }], cpu() {} };
    expect(() => mg.vmap((x: MgArray) => makeArray(NoRule, [x], null, resolveStream()))(mg.ones([2]))).toThrow(
      "[vmap] NoRule has no vmap rule.",
    );
  });
});
