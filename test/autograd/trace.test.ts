// What transforms do to memory: a training step repeated inside tidy leaves no array and no byte
// behind (tracers, retained intermediates, cotangents and vmap traces included).
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { makeRng, uniform } from "./helpers.ts";

describe("transforms do not leak", () => {
  const rng = makeRng(99);
  const params = { w: mg.astype(uniform(rng, [16, 8]), mg.float32), b: mg.astype(uniform(rng, [8]), mg.float32) };
  const x = mg.astype(uniform(rng, [4, 16]), mg.float32);
  mg.eval(params, x);
  const loss = (p: typeof params, inp: MgArray) => {
    const h = mg.tanh(mg.add(mg.matmul(inp, p.w), p.b));
    h.tolist(); // evaluated while the transform retains the graph
    return mg.mean(mg.square(h));
  };

  test("valueAndGrad, jvp of grad, vmap of grad and checkpoint, many times over: the same live arrays and active bytes", () => {
    const step = () =>
      mg.tidy(() => {
        const [l, g] = mg.valueAndGrad(loss)(params, x);
        const [, hv] = mg.jvp((w: MgArray) => mg.grad((w2: MgArray) => loss({ w: w2, b: params.b }, x))(w), [params.w], [mg.onesLike(params.w)]);
        const perRow = mg.vmap(mg.grad((r: MgArray) => mg.sum(mg.sin(mg.matmul(r, params.w)))))(x);
        const c = mg.grad((w: MgArray) => mg.sum(mg.checkpoint((a: MgArray) => mg.exp(mg.matmul(x, a)))(w)))(params.w);
        mg.eval(l, g, hv, perRow, c);
        return null;
      });
    step(); // warm caches (kernels, constants)
    // Earlier test files' garbage may be collected mid-loop: collect it first so only this
    // test's allocations move the counters.
    mg.synchronize();
    for (let last = -1, i = 0; i < 20 && mg.getActiveMemory() !== last; i++) {
      last = mg.getActiveMemory();
      Bun.gc(true);
    }
    const arrays = mg.liveArrayCount();
    const bytes = mg.getActiveMemory();
    for (let i = 0; i < 10; i++) step();
    expect(mg.liveArrayCount()).toBe(arrays);
    expect(mg.getActiveMemory()).toBe(bytes);
  });

  test("without tidy: what the trace evaluated is detached, so the inputs are free to be disposed", () => {
    const [l, g] = mg.valueAndGrad(loss)(params, x);
    mg.eval(l, g);
    expect(l.node).toBe(null);
    expect([params.w.graphRefs, params.b.graphRefs, x.graphRefs]).toEqual([0, 0, 0]);
  });

  test("vmap releases its trace: a captured array is referenced only by the batched graph", () => {
    const c = mg.array([1, 2, 3], mg.float32);
    const out = mg.vmap((r: MgArray) => mg.multiply(mg.exp(r), c))(mg.ones([4, 3]));
    expect(c.graphRefs).toBe(1); // the batched multiply, still pending
    mg.eval(out);
    expect(c.graphRefs).toBe(0);
  });

  test("the user's arrays are not held by any pending node after a transform's results are evaluated", () => {
    const w = mg.array([0.3, -0.2], mg.float32);
    const g = mg.tidy(() => {
      const out = mg.grad((a: MgArray) => mg.sum(mg.multiply(mg.exp(a), a)))(w);
      mg.eval(out);
      return out;
    });
    expect(g.node).toBe(null);
    expect(w.graphRefs).toBe(0);
  });
});
