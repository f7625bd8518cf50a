// The native quantized products (Sources/MGCpu/quant.cpp, bound in ts/backend/cpu/native/
// quantized.ts) against the TypeScript reference (ts/backend/cpu/quantized.ts, float64
// accumulation): every mode, group size and bit width, both layouts (transpose), decode (M ≤ 8,
// dot products over dequantised chunks) and prefill (M > 8, the packed GEMM) sizes, every float
// dtype, batched and broadcast weights, gather_qmm; thread counts and instruction sets.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../../ts/index.ts";
import type { MgArray } from "../../../../ts/core/array.ts";
import type { Dtype } from "../../../../ts/core/dtype.ts";
import { accumulationTolerance } from "../../../../ts/testing/tolerances.ts";
import { acrossIsas, both, compare, expectClose, expectSameBits, expectThreadIndependent, kernelsOf, onReference, S, uniform } from "./harness.ts";

type Mode = "affine" | "mxfp4" | "mxfp8" | "nvfp4";
const FORMATS: [Mode, number, number][] = [
  ["affine", 32, 2], ["affine", 64, 3], ["affine", 64, 4], ["affine", 128, 5], ["affine", 64, 6], ["affine", 32, 8], ["affine", 128, 4],
  ["mxfp4", 32, 4], ["mxfp8", 32, 8], ["nvfp4", 16, 4],
];
const K = 256, N = 128;

const within = (got: MgArray, want: MgArray, what: string) => expectClose(got, want, accumulationTolerance(got.dtype, K), what);

function quantized(w: MgArray, mode: Mode, gs: number, bits: number, dtype: Dtype): MgArray[] {
  return onReference(() => {
    const q = mg.quantize(w, gs, bits, mode, S);
    // affine scales and biases in the product's dtype (the op casts them anyway)
    return mode === "affine" ? [q[0]!, mg.astype(q[1]!, dtype, S), mg.astype(q[2]!, dtype, S)] : q;
  });
}

describe("native quantized matmul = reference", () => {
  for (const [mode, gs, bits] of FORMATS) {
    test(`${mode}, group ${gs}, ${bits} bits: M in 1..40, both layouts, float32`, () => {
      const w = uniform([N, K], gs + bits), wt = uniform([K, N], gs + bits + 1);
      const [q, s, b] = quantized(w, mode, gs, bits, mg.float32);
      const [qt, st, bt] = quantized(wt, mode, gs, bits, mg.float32);
      for (const M of [1, 3, 8, 9, 40]) {
        const x = uniform([M, K], M);
        compare(both(() => [mg.quantizedMatmul(x, q!, s!, b ?? null, true, gs, bits, mode, S)]), `${mode}/${gs}/${bits} M=${M} transposed`, within);
        compare(both(() => [mg.quantizedMatmul(x, qt!, st!, bt ?? null, false, gs, bits, mode, S)]), `${mode}/${gs}/${bits} M=${M}`, within);
      }
    });
  }

  for (const dtype of [mg.float16, mg.bfloat16, mg.float64]) {
    test(`${dtype.name} x (affine, mxfp4): decode and prefill`, () => {
      const w = uniform([N, K], 3);
      for (const [mode, gs, bits] of [["affine", 64, 4], ["affine", 32, 3], ["mxfp4", 32, 4]] as [Mode, number, number][]) {
        const [q, s, b] = quantized(onReference(() => mg.astype(w, dtype === mg.float64 ? mg.float32 : dtype, S)), mode, gs, bits, dtype);
        for (const M of [1, 5, 24]) {
          const x = onReference(() => mg.astype(uniform([M, K], 10 + M), dtype, S));
          compare(both(() => [mg.quantizedMatmul(x, q!, s!, b ?? null, true, gs, bits, mode, S)]), `${dtype.name} ${mode}/${bits} M=${M}`, within);
        }
      }
    });
  }

  test("batched and broadcast weights, 1-D and 3-D x", () => {
    const w = uniform([3, N, K], 21);
    const [q, s, b] = quantized(w, "affine", 64, 4, mg.float32);
    const x3 = uniform([3, 5, K], 22), x1 = uniform([K], 23), xb = uniform([2, 3, 12, K], 24);
    const [q2, s2, b2] = quantized(uniform([N, K], 25), "affine", 64, 4, mg.float32);
    compare(both(() => [mg.quantizedMatmul(x3, q!, s!, b!, true, 64, 4, S)]), "batched weights", within);
    compare(both(() => [mg.quantizedMatmul(xb, q!, s!, b!, true, 64, 4, S)]), "broadcast batch of weights", within);
    compare(both(() => [mg.quantizedMatmul(x1, q2!, s2!, b2!, true, 64, 4, S)]), "1-D x", within);
    compare(both(() => [mg.quantizedMatmul(xb, q2!, s2!, b2!, true, 64, 4, S)]), "3-D x, one weight matrix", within);
  });

  test("gather_qmm: repeated and unsorted index pairs; an index out of range is the reference's error", () => {
    const w = uniform([4, N, K], 31);
    const [q, s, b] = quantized(w, "affine", 64, 4, mg.float32);
    const x = uniform([3, 2, K], 32), big = uniform([3, 20, K], 33);
    const lhs = mg.array([2, 0, 0, 1, 2], mg.uint32), rhs = mg.array([3, 3, 0, 1, 2], mg.uint32);
    compare(both(() => [mg.gatherQmm(x, q!, s!, b!, { lhsIndices: lhs, rhsIndices: rhs, groupSize: 64, bits: 4 })]), "gather_qmm decode", within);
    compare(both(() => [mg.gatherQmm(big, q!, s!, b!, { lhsIndices: lhs, rhsIndices: rhs, groupSize: 64, bits: 4 })]), "gather_qmm prefill", within);
    const [qf, sf] = quantized(w, "mxfp4", 32, 4, mg.float32);
    compare(both(() => [mg.gatherQmm(x, qf!, sf!, null, { lhsIndices: mg.array([0, 2], mg.uint32), rhsIndices: mg.array([1, 0], mg.uint32), mode: "mxfp4" })]), "gather_qmm mxfp4", within);
    const bad = mg.array([0, 7], mg.uint32);
    compare(both(() => [mg.gatherQmm(x, q!, s!, b!, { lhsIndices: mg.array([0, 1], mg.uint32), rhsIndices: bad, groupSize: 64, bits: 4 })]), "out of range", within, true);
  });

  test("empty products", () => {
    const [q, s, b] = quantized(uniform([N, K], 41), "affine", 64, 4, mg.float32);
    compare(both(() => [mg.quantizedMatmul(onReference(() => mg.zeros([0, K], mg.float32, S)), q!, s!, b!, true, 64, 4, S)]), "no rows", within);
  });

  test("the trace names the kernel: qmv for decode, qmm for prefill", () => {
    const [q, s, b] = quantized(uniform([N, K], 51), "affine", 64, 4, mg.float32);
    expect(kernelsOf(() => mg.quantizedMatmul(uniform([2, K], 52), q!, s!, b!, true, 64, 4, S))).toContain("cpu-native:QuantizedMatmul(qmv)");
    expect(kernelsOf(() => mg.quantizedMatmul(uniform([20, K], 53), q!, s!, b!, true, 64, 4, S))).toContain("cpu-native:QuantizedMatmul(qmm)");
  });
});

describe("native quantize and dequantize = reference, bit for bit", () => {
  const sameBits = (got: MgArray, want: MgArray, what: string) => expectSameBits(got, want, what);
  for (const dtype of [mg.float32, mg.float16, mg.bfloat16]) {
    test(`${dtype.name}: affine quantize (finite and non-finite groups), dequantize every mode`, () => {
      const w = onReference(() => mg.astype(uniform([12, 256], 71, mg.float32, 6), dtype, S));
      const specials = onReference(() => mg.where(mg.greater(w, 4, S), NaN, mg.where(mg.less(w, -5, S), -Infinity, w, S), S));
      for (const [gs, bits] of [[32, 2], [64, 3], [64, 4], [128, 5], [64, 6], [32, 8]]) {
        compare(both(() => mg.quantize(w, gs, bits, S)), `quantize ${dtype.name} ${gs}/${bits}`, sameBits);
        compare(both(() => mg.quantize(specials, gs, bits, S)), `quantize with NaN and infinities ${dtype.name} ${gs}/${bits}`, sameBits);
        for (const src of [w, specials]) {
          const [q, s, b] = onReference(() => mg.quantize(src, gs, bits, S));
          compare(both(() => [mg.dequantize(q!, s!, b!, gs, bits, S)]), `dequantize ${dtype.name} ${gs}/${bits}`, sameBits);
        }
      }
      for (const mode of ["mxfp4", "mxfp8", "nvfp4"] as const) {
        const [q, s] = onReference(() => mg.quantize(specials, undefined, undefined, mode, S));
        for (const out of [mg.float32, mg.float16, mg.bfloat16, mg.float64]) {
          compare(both(() => [mg.dequantize(q!, s!, null, undefined, undefined, mode, { dtype: out, stream: mg.cpu })]), `dequantize ${mode} → ${out.name}`, sameBits);
        }
      }
    });
  }

  test("nvfp4 with a global scale; the floating-point modes' quantize runs the reference", () => {
    const w = uniform([8, 64], 72, mg.float32, 3);
    const g = mg.array(3.5, mg.float32);
    const [q, s] = onReference(() => mg.quantize(w, 16, 4, "nvfp4", { globalScale: g, stream: mg.cpu }));
    compare(both(() => [mg.dequantize(q!, s!, null, 16, 4, "nvfp4", { globalScale: g, stream: mg.cpu })]), "nvfp4 global scale", sameBits);
    expect(kernelsOf(() => mg.quantize(w, 32, 4, "mxfp4", S))).toContain("cpu:Quantize");
    expect(kernelsOf(() => mg.quantize(w, 64, 4, S))).toContain("cpu-native:Quantize");
  });
});

describe("native quantized matmul determinism", () => {
  const [q, s, b] = quantized(uniform([512, 512], 61), "affine", 64, 4, mg.float32);
  const [qf, sf] = quantized(uniform([512, 512], 62), "mxfp4", 32, 4, mg.float32);
  const build = () => [1, 4, 37].flatMap((M) => {
    const x = uniform([M, 512], 63 + M);
    return [mg.quantizedMatmul(x, q!, s!, b!, true, 64, 4, S), mg.quantizedMatmul(x, q!, s!, b!, false, 64, 4, S), mg.quantizedMatmul(x, qf!, sf!, null, true, 32, 4, "mxfp4", S)];
  });
  test("1 thread and 4 threads give the same bits", () => expectThreadIndependent(build, "qmm"));
  test("both instruction sets agree with the reference", () => {
    const r = acrossIsas(build);
    if (!r) return;
    const reference = onReference(build);
    for (const outs of [r.baseline, r.best]) outs.forEach((o, k) => expectClose(o, reference[k]!, accumulationTolerance(mg.float32, 512), `isa case ${k}`));
  });
});
