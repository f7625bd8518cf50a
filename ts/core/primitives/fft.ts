// MLX's FFT primitive: complex→complex, real→complex or complex→real transforms over several axes
// in one node (inverses include 1/n, as MLX's); the ops (ts/core/ops/fft.ts) pad or slice the input
// to the transform sizes and apply the norm's scale. complex64 on both devices; the CPU reference
// (the CPU backend's fft.ts) computes in float64, the GPU's (fft.metal) in float32.
// Rules: ts/core/rules/fft.ts.
import { complex64, float32 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";

export interface FftParams {
  /** Axes transformed (normalized, distinct). For real transforms the last one is the real axis. */
  axes: number[];
  inverse: boolean;
  real: boolean;
  /** irfft: the output length of the last axis (its input holds n/2 + 1 bins). */
  n: number;
}

export function fftOutShape(inShape: readonly number[], p: FftParams): number[] {
  const out = [...inShape];
  if (p.real) {
    const last = p.axes[p.axes.length - 1]!;
    out[last] = p.inverse ? p.n : Math.floor(inShape[last]! / 2) + 1;
  }
  return out;
}

export const FFT: Primitive<FftParams> = {
  name: "FFT",
  outputSpecs: ([a], p) => [{ shape: fftOutShape(a!.shape, p), dtype: p.real && p.inverse ? float32 : complex64 }],
  opName: (p) => (p.real ? (p.inverse ? "irfftn" : "rfftn") : p.inverse ? "ifftn" : "fftn"),
  paramsKey: (p) => `${p.axes.join(",")}|${p.inverse}|${p.real}|${p.n}`,
};
