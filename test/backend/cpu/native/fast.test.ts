// mg.fast's fused primitives on the native CPU kernels (Sources/MGCpu/fast.cpp, bound in
// ts/backend/cpu/native/fast.ts) against the float64 references (ts/backend/cpu/fast.ts): the
// norms, RoPE and cross entropy carry them over operation for operation (equal values for every
// float dtype); attention and cross entropy on float32/float16/bfloat16 run in float32 on the
// vectorised kernels (MLX's precision), so they match within the dtype's accumulation tolerance
// (float64: exactly).
// Every mask kind, sinks, grouped heads, strided operands, forward and backward; thread counts give
// the same bits.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../../ts/index.ts";
import type { MgArray } from "../../../../ts/core/array.ts";
import type { Dtype } from "../../../../ts/core/dtype.ts";
import { accumulationTolerance } from "../../../../ts/testing/tolerances.ts";
import { both, compare, expectClose, expectExact, expectThreadIndependent, kernelsOf, onReference, S, uniform } from "./harness.ts";

const exact = (got: MgArray, want: MgArray, what: string) => expectExact(got, want, what);
const input = (shape: number[], seed: number, dtype: Dtype) => onReference(() => mg.astype(uniform(shape, seed, mg.float32, 2), dtype, S));
type Grad = (...a: MgArray[]) => MgArray[];

describe("native mg.fast = reference", () => {
  for (const dtype of [mg.float32, mg.float16, mg.bfloat16, mg.float64]) {
    test(`${dtype.name}: layer_norm and rms_norm, forward and backward, strided and broadcast operands`, () => {
      const x = input([3, 5, 40], 1, dtype), w = input([40], 2, dtype), b = input([40], 3, dtype), g = input([3, 5, 40], 4, dtype);
      const xt = onReference(() => mg.transpose(input([40, 5, 3], 5, dtype), [2, 1, 0], S));
      compare(both(() => [mg.fast.layerNorm(x, w, b, 1e-5, S), mg.fast.layerNorm(x, null, null, 1e-3, S), mg.fast.rmsNorm(x, w, 1e-6, S), mg.fast.rmsNorm(xt, null, 1e-6, S), mg.fast.layerNorm(xt, w, null, 1e-5, S)]), `${dtype.name} norms`, exact);
      const ln = mg.grad((a: MgArray, ww: MgArray, bb: MgArray) => mg.sum(mg.multiply(mg.fast.layerNorm(a, ww, bb, 1e-5, S), g, S), undefined, S), [0, 1, 2]) as unknown as Grad;
      const rn = mg.grad((a: MgArray, ww: MgArray) => mg.sum(mg.multiply(mg.fast.rmsNorm(a, ww, 1e-5, S), g, S), undefined, S), [0, 1]) as unknown as Grad;
      // a broadcast cotangent (the gradient of a plain sum)
      const lnSum = mg.grad((a: MgArray) => mg.sum(mg.fast.layerNorm(a, null, null, 1e-5, S), undefined, S)) as unknown as (a: MgArray) => MgArray;
      compare(both(() => [...ln(x, w, b), ...rn(xt, w), lnSum(x)]), `${dtype.name} norm gradients`, exact);
    });

    test(`${dtype.name}: attention with every mask kind, sinks and grouped heads, forward and backward`, () => {
      const q = input([2, 4, 9, 16], 11, dtype), k = input([2, 2, 13, 16], 12, dtype), v = input([2, 2, 13, 8], 13, dtype);
      const g = input([2, 4, 9, 8], 14, dtype);
      const qs = onReference(() => mg.transpose(input([2, 9, 4, 16], 15, dtype), [0, 2, 1, 3], S));
      const masks: [string, unknown][] = [
        ["none", undefined], ["causal", "causal"],
        ["bool", onReference(() => mg.greater(uniform([2, 1, 9, 13], 16), -0.3, S))],
        ["bool hiding whole rows", onReference(() => mg.greater(uniform([9, 13], 17), 0.9, S))],
        ["additive", input([9, 13], 18, dtype)],
      ];
      for (const [name, mask] of masks) {
        for (const sinks of [null, input([4], 19, dtype)]) {
          const opts = { scale: 0.3, mask: mask as never, sinks, stream: mg.cpu };
          compare(both(() => [mg.fast.scaledDotProductAttention(q, k, v, opts), mg.fast.scaledDotProductAttention(qs, k, v, opts)]), `${dtype.name} sdpa ${name}${sinks ? " sinks" : ""}`, attention(13));
          const f = mg.grad((a: MgArray, kk: MgArray, vv: MgArray) => mg.sum(mg.multiply(mg.fast.scaledDotProductAttention(a, kk, vv, opts), g, S), undefined, S), [0, 1, 2]) as unknown as Grad;
          compare(both(() => f(q, k, v)), `${dtype.name} sdpa gradients ${name}${sinks ? " sinks" : ""}`, attention(13));
        }
      }
      // several blocks of query rows (partial last block), causal rows ending mid-block, qL < kL
      const ql = input([1, 4, 61, 40], 51, dtype), kl = input([1, 2, 70, 40], 52, dtype), vl = input([1, 2, 70, 24], 53, dtype), gl = input([1, 4, 61, 24], 54, dtype);
      for (const mask of [undefined, "causal"]) {
        const opts = { scale: 0.2, mask: mask as never, stream: mg.cpu };
        const f = mg.grad((a: MgArray, kk: MgArray, vv: MgArray) => mg.sum(mg.multiply(mg.fast.scaledDotProductAttention(a, kk, vv, opts), gl, S), undefined, S), [0, 1, 2]) as unknown as Grad;
        compare(both(() => [mg.fast.scaledDotProductAttention(ql, kl, vl, opts), ...f(ql, kl, vl)]), `${dtype.name} sdpa blocks ${mask ?? "none"}`, attention(70 * 4));
      }
      // exact for float64, else float32 accumulation against the float64 reference
      function attention(n: number) {
        return (got: MgArray, want: MgArray, what: string) => (dtype === mg.float64 ? expectExact(got, want, what) : expectClose(got, want, accumulationTolerance(dtype, n), what));
      }
    });

    test(`${dtype.name}: rope (traditional or not, offsets, frequencies, partial dims) and its inverse`, () => {
      const x = input([2, 3, 7, 16], 21, dtype);
      const xt = onReference(() => mg.transpose(input([2, 7, 3, 16], 22, dtype), [0, 2, 1, 3], S));
      compare(both(() => [
        mg.fast.rope(x, 16, { traditional: false, base: 10000, scale: 1, offset: 3, stream: mg.cpu }),
        mg.fast.rope(xt, 8, { traditional: true, base: 500, scale: 0.5, offset: mg.array([1, 6], mg.int32), stream: mg.cpu }),
        mg.fast.rope(x, 10, { traditional: false, base: null, scale: 2, offset: 0, freqs: mg.array([1, 2, 4, 8, 16], mg.float32), stream: mg.cpu }),
      ]), `${dtype.name} rope`, exact);
      const cot = input([2, 3, 7, 16], 23, dtype);
      const f = mg.grad((a: MgArray) => mg.sum(mg.multiply(mg.fast.rope(a, 12, { traditional: false, base: 10000, scale: 1, offset: 2, stream: mg.cpu }), cot, S), undefined, S)) as unknown as (a: MgArray) => MgArray;
      compare(both(() => [f(x)]), `${dtype.name} rope gradient`, exact);
    });
  }

  for (const dtype of [mg.float32, mg.float16, mg.float64]) {
    test(`${dtype.name}: cross entropy and its gradient, targets out of range, strided logits`, () => {
      const x = input([4, 5, 11], 31, dtype);
      const xt = onReference(() => mg.transpose(input([11, 5, 4], 32, dtype), [2, 1, 0], S));
      const t = mg.array([[0, 10, 3, -1, 11], [2, 2, 2, 2, 2], [9, 8, 7, 6, 5], [1, 0, 1, 0, 1]], mg.int32);
      const special = onReference(() => mg.where(mg.greater(x, 1.5, S), Infinity, mg.where(mg.less(x, -1.7, S), NaN, x, S), S));
      // float64 logits: the float64 reference exactly; else float32 (MLX's precision)
      const close = (got: MgArray, want: MgArray, what: string) => (dtype === mg.float64 ? expectExact(got, want, what) : expectClose(got, want, accumulationTolerance(got.dtype, 11), what));
      compare(both(() => [mg.fast.crossEntropy(x, t, S), mg.fast.crossEntropy(xt, t, S), mg.fast.crossEntropy(special, t, S)]), `${dtype.name} cross entropy`, close);
      const g = input([4, 5], 33, dtype);
      const f = mg.grad((a: MgArray) => mg.sum(mg.multiply(mg.fast.crossEntropy(a, t, S), mg.astype(g, mg.float32, S), S), undefined, S)) as unknown as (a: MgArray) => MgArray;
      compare(both(() => [f(x), f(xt), f(special)]), `${dtype.name} cross entropy gradient`, close);
    });
  }

  test("attention with MLX's additive causal mask (finfo.min: exp underflows to 0) and cotangent rows holding inf or NaN", () => {
    // masked scores minus the row maximum lie far below exp's underflow point, and their p = 0 terms
    // of dV and D are skipped unless dO's row or dp is not finite: all of it must match the reference
    // (float64 runs the reference's arithmetic: exactly; the others MLX's float32: within tolerance)
    for (const dtype of [mg.float32, mg.float16, mg.float64]) {
      const exact = (got: MgArray, want: MgArray, what: string) =>
        dtype === mg.float64 ? expectExact(got, want, what) : expectClose(got, want, accumulationTolerance(got.dtype, 12), what);
      const q = input([2, 2, 12, 8], 51, dtype), k = input([2, 2, 12, 8], 52, dtype), v = input([2, 2, 12, 8], 53, dtype);
      const mask = onReference(() => mg.astype(mg.nn.MultiHeadAttention.createAdditiveCausalMask(12), dtype, S));
      const special = onReference(() => {
        const g = input([2, 2, 12, 8], 54, dtype);
        const rows = mg.reshape(mg.arange(12, S), [1, 1, 12, 1], S);
        return mg.where(mg.equal(rows, 3, S), Infinity, mg.where(mg.equal(rows, 7, S), NaN, g, S), S);
      });
      const opts = { scale: 0.35, mask, stream: mg.cpu };
      compare(both(() => [mg.fast.scaledDotProductAttention(q, k, v, opts)]), `${dtype.name} additive causal`, exact);
      for (const [name, g] of [["finite", input([2, 2, 12, 8], 55, dtype)], ["inf and NaN rows", special]] as const) {
        const f = mg.grad((a: MgArray, kk: MgArray, vv: MgArray) => mg.sum(mg.multiply(mg.fast.scaledDotProductAttention(a, kk, vv, opts), g, S), undefined, S), [0, 1, 2]) as unknown as Grad;
        compare(both(() => f(q, k, v)), `${dtype.name} additive causal gradients, ${name} cotangent`, exact);
      }
    }
  });

  test("the trace names the native kernels", () => {
    const x = uniform([2, 8], 31);
    expect(kernelsOf(() => mg.fast.layerNorm(x, null, null, 1e-5, S))).toContain("cpu-native:LayerNorm");
    const q = uniform([1, 1, 4, 8], 32);
    expect(kernelsOf(() => mg.fast.scaledDotProductAttention(q, q, q, { scale: 1, stream: mg.cpu }))).toContain("cpu-native:ScaledDotProductAttention");
  });
});

describe("native mg.fast determinism", () => {
  const q = uniform([4, 8, 64, 32], 41), k = uniform([4, 2, 64, 32], 42), v = uniform([4, 2, 64, 32], 43), x = uniform([256, 512], 44);
  const f = mg.grad((a: MgArray, kk: MgArray, vv: MgArray) => mg.sum(mg.fast.scaledDotProductAttention(a, kk, vv, { scale: 0.2, mask: "causal", stream: mg.cpu }), undefined, S), [0, 1, 2]) as unknown as Grad;
  const ln = mg.grad((a: MgArray, w: MgArray) => mg.sum(mg.square(mg.fast.layerNorm(a, w, null, 1e-5, S), S), undefined, S), [0, 1]) as unknown as Grad;
  test("1 thread and 4 threads give the same bits", () => expectThreadIndependent(() => [...f(q, k, v), ...ln(x, uniform([512], 45))], "fast"));
});
