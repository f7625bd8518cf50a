// MLX's FFT primitive: complex→complex, real→complex or complex→real transforms over several axes
// in one node (inverses include 1/n, as MLX's); the ops (ts/core/ops/fft.ts) pad or slice the input
// to the transform sizes and apply the norm's scale. complex64 on both devices; the CPU reference
// computes in float64.
import { complex64, float32 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";
import { tracing } from "../trace.ts";
import { type FftParams, fftValues } from "../../backend/cpu/fft.ts";
import { readComplex, readNumbers, writeComplex, writeNumbers } from "../../backend/cpu/values.ts";
import { encodeFftNode, fftNodeKernels } from "../../backend/gpu/fft.ts";
import type { GpuEncoder } from "../../backend/gpu/encoder.ts";

export type { FftParams };

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
  cpu([a], [out], p) {
    const input = p.real && !p.inverse ? readNumbers(a!) : readComplex(a!);
    const values = fftValues(input, a!.shape, out!.shape, p);
    if (p.real && p.inverse) writeNumbers(out!, values);
    else writeComplex(out!, values);
  },
  gpu: {
    kind: "kernel",
    kernels: (node) => fftNodeKernels(node.inputs[0]!.shape, node.outputs[0]!.shape, node.params as FftParams),
    encode(enc: GpuEncoder, node) {
      const a = node.inputs[0]!, out = node.outputs[0]!;
      const p = node.params as FftParams;
      const i = enc.input(a, 0), o = enc.output(out, 1);
      if (out.size === 0 || a.size === 0) return;
      const trace = { primitives: ["FFT"], inputs: [a], outputs: [out], layout: i.rowContiguous ? "contiguous" : "strided", precision: "IEEE fp32 (float64 twiddle tables)" };
      encodeFftNode(
        { dispatch: (d) => enc.dispatch(d, tracing() ? trace : null), temporary: (bytes) => enc.temporary(bytes) },
        { binding: i.binding, base: i.base, strides: i.strides },
        { binding: o.binding, base: o.base, strides: o.strides },
        a.shape, out.shape, p,
      );
    },
  },
  paramsKey: (p) => `${p.axes.join(",")}|${p.inverse}|${p.real}|${p.n}`,
};
