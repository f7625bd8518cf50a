// customFunction (MLX's test_custom_function, trees, purity, a hand-written vjp that gradchecks)
// and checkpoint (same gradients, forward recomputed in the backward pass).
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { close, makeRng, uniform } from "./helpers.ts";

const f32 = (v: number | number[]) => mg.array(v, mg.float32);
const e1 = Math.exp(1);

describe("customFunction", () => {
  test("MLX's test_custom_function: defaults, then a custom vjp, jvp and vmap", () => {
    const myExp = mg.customFunction((x: MgArray) => mg.exp(x));
    expect(mg.grad(myExp)(f32(1)).item()).toBeCloseTo(e1, 5);
    let [[ex], [dex]] = mg.jvp(myExp, [f32(1)], [f32(1)]);
    expect(dex!.item()).toBeCloseTo(e1, 5);
    expect(ex!.item()).toBeCloseTo(e1, 5);
    close(mg.vmap(myExp)(mg.ones([10])), mg.exp(mg.ones([10])));

    myExp.vjp((x: MgArray) => mg.multiply(mg.onesLike(x), 42));
    expect(mg.grad(myExp)(f32(1)).item()).toBe(42);
    [[ex], [dex]] = mg.jvp(myExp, [f32(1)], [f32(1)]);
    expect(dex!.item()).toBeCloseTo(e1, 5);
    close(mg.vmap(myExp)(mg.ones([10])), mg.exp(mg.ones([10])));

    myExp.jvp((x: MgArray, dx: MgArray) => mg.multiply(mg.multiply(mg.onesLike(x), 7), dx));
    myExp.vmap((x: MgArray, axis: number) => [mg.multiply(mg.onesLike(x), 3), axis]);
    expect(mg.grad(myExp)(f32(1)).item()).toBe(42);
    [[ex], [dex]] = mg.jvp(myExp, [f32(1)], [f32(1)]);
    expect(dex!.item()).toBe(7);
    expect(ex!.item()).toBeCloseTo(e1, 5);
    expect(mg.vmap(myExp)(mg.ones([10])).tolist()).toEqual(new Array(10).fill(3));
    // The node forwards the outputs as views: no copy in the trace.
    const record = mg.trace(() => mg.stream(mg.cpu, () => myExp(f32(1)))).find((r) => r.kernel === "cpu:CustomTransforms")!;
    expect(record.notes).toEqual([]);
  });

  test("trees in and out, with custom vjp and jvp", () => {
    const myDouble = mg.customFunction((p: { x: MgArray; y: MgArray }) => ({ out: mg.multiply(mg.multiply(2, p.x), p.y) }));
    const loss = (p: { x: MgArray; y: MgArray }) => mg.sum(myDouble(p).out);
    let dy = mg.grad(loss)({ x: mg.ones([2]), y: mg.ones([2]) });
    expect(dy.x.tolist()).toEqual([2, 2]);
    expect(dy.y.tolist()).toEqual([2, 2]);

    myDouble.vjp((primals: { x: MgArray; y: MgArray }) => ({ x: mg.zerosLike(primals.x), y: mg.onesLike(primals.y) }));
    dy = mg.grad(loss)({ x: mg.ones([2]), y: mg.ones([2]) });
    expect(dy.x.tolist()).toEqual([0, 0]);
    expect(dy.y.tolist()).toEqual([1, 1]);

    const rng = makeRng(3);
    const outer = (a: MgArray, b: MgArray) => myDouble({ x: a, y: b }).out;
    const inputs: [MgArray, MgArray] = [uniform(rng, [2]), uniform(rng, [2])];
    const tans = [uniform(rng, [2]), uniform(rng, [2])];
    const [out1, dout1] = mg.jvp(outer, inputs, tans);
    myDouble.jvp((p: { x: MgArray; y: MgArray }, t: { x: MgArray; y: MgArray }) => ({
      out: mg.add(mg.add(mg.multiply(mg.multiply(2, p.x), t.y), mg.multiply(mg.multiply(2, p.y), t.x)), 1),
    }));
    const [out2, dout2] = mg.jvp(outer, inputs, tans);
    close(out1[0]!, out2[0]!);
    close(mg.add(dout1[0]!, 1), dout2[0]!);
  });

  test("a custom function is pure: captured arrays are constants (guide §9.4)", () => {
    const g = (x: MgArray, y: MgArray) => {
      const f = mg.customFunction((z: MgArray) => mg.multiply(z, y));
      f.vjp(() => {
        throw new Error("Abort!");
      });
      return f(x);
    };
    expect(g(f32(2), f32(3)).item()).toBe(6);
    expect(() => mg.grad(g)(f32(2), f32(3))).toThrow("Abort!");
    expect(mg.grad(g, 1)(f32(2), f32(3)).item()).toBe(0);
  });

  test("a hand-written vjp in ops passes gradcheck (and a wrong one does not)", () => {
    // softplus(x)·w with its derivative σ(x)·w written by hand.
    const softplusScale = mg.customFunction((x: MgArray, w: MgArray) => mg.multiply(mg.logaddexp(x, 0), w));
    softplusScale.vjp(([x, w]: MgArray[], g: MgArray) => [
      mg.sum(mg.multiply(mg.multiply(g, mg.sigmoid(x!)), w!), 0),
      mg.sum(mg.multiply(g, mg.logaddexp(x!, 0)), 1, true),
    ]);
    softplusScale.jvp(([x, w]: MgArray[], [tx, tw]: (MgArray | null)[]) => {
      let t = mg.zerosLike(mg.multiply(x!, w!));
      if (tx) t = mg.add(t, mg.multiply(mg.multiply(tx, mg.sigmoid(x!)), w!));
      if (tw) t = mg.add(t, mg.multiply(tw, mg.logaddexp(x!, 0)));
      return t;
    });
    const rng = makeRng(11);
    const x = uniform(rng, [3]);
    const w = uniform(rng, [4, 1]);
    const report = mg.testing.gradcheck(softplusScale, [x, w], { order: 2 });
    expect(report.ok).toBe(true);

    const wrong = mg.customFunction((x_: MgArray) => mg.sin(x_));
    wrong.vjp((x_: MgArray, g: MgArray) => mg.multiply(g, mg.cos(mg.multiply(x_, 1.01))));
    expect(() => mg.testing.gradcheck(wrong, [x])).toThrow("[gradcheck] derivative mismatch (order 1, vjp)");
  });

  test("errors from a custom rule's result are clear", () => {
    const f = mg.customFunction((x: MgArray, y: MgArray) => mg.multiply(x, y));
    f.vjp(() => [f32(1)]);
    expect(() => mg.grad(f)(f32(2), f32(3))).toThrow("[custom_function] The vjp result has 1 arrays but 2 were expected.");
    f.vjp(() => [f32([1, 2]), f32(1)]);
    expect(() => mg.grad(f)(f32(2), f32(3))).toThrow("[custom_function] The vjp result's array 0 has shape (2,) but its primal has shape ().");
    f.jvp(() => [f32([1, 2, 3])]);
    expect(() => mg.jvp(f, [f32(2), f32(3)], [f32(1), f32(1)])).toThrow("[custom_function] The jvp result's array 0 has shape (3,) but its output has shape ().");
  });
});

describe("checkpoint", () => {
  test("same value and gradients; the forward pass runs again in the backward pass", () => {
    let calls = 0;
    const block = (x: MgArray, w: MgArray) => {
      calls++;
      return mg.tanh(mg.matmul(x, w));
    };
    const rng = makeRng(5);
    const x = uniform(rng, [4, 3]);
    const w = uniform(rng, [3, 3]);
    const loss = (b: typeof block) => (w_: MgArray) => mg.sum(mg.square(b(b(x, w_), w_)));
    const [v1, g1] = mg.valueAndGrad(loss(block))(w);
    const plainCalls = calls;
    calls = 0;
    const [v2, g2] = mg.valueAndGrad(loss(mg.checkpoint(block)))(w);
    close(v2, v1, 1e-12, 1e-12);
    close(g2, g1, 1e-12, 1e-12);
    expect(plainCalls).toBe(2);
    expect(calls).toBe(4); // twice forward, twice recomputed for the backward pass
    // Second order through a checkpoint.
    expect(mg.testing.gradcheck(mg.checkpoint((a: MgArray) => mg.sin(mg.multiply(a, a))), [uniform(rng, [3])], { order: 2 }).ok).toBe(true);
    // Trees pass through.
    const tree = mg.checkpoint((p: { a: MgArray; b: MgArray }) => ({ s: mg.add(p.a, p.b), d: mg.subtract(p.a, p.b) }));
    const out = tree({ a: f32(3), b: f32(1) });
    expect([out.s.item(), out.d.item()]).toEqual([4, 2]);
    expect(mg.grad((a: MgArray) => tree({ a, b: f32(1) }).d)(f32(3)).item()).toBe(1);
  });
});
