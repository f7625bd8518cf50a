// Rotary position embedding on the GPU (Sources/Kernels/rope.metal): one thread per rotated pair
// or copied feature, one dispatch, forward or backward (the inverse rotation).
import type { Dtype } from "../../../core/dtype.ts";
import type { KernelInstance } from "../kernels.ts";
import { Precision } from "../../../core/trace.ts";
import { dtypeTag, mslType } from "../dtypes.ts";
import { kernelPipeline } from "../kernels.ts";
import { bind, type KernelOutput, type KernelSink, type KernelView, leadingBytes, mergeLeading, structBytes } from "./common.ts";

export interface RopeOptions {
  dims: number;
  traditional: boolean;
  /** The frequency base (ignored when freqs is bound). */
  base: number;
  scale: number;
  forward: boolean;
}

export function ropeKernel(dtype: Dtype): KernelInstance {
  return { file: "rope.metal", name: `mg_rope_${dtypeTag(dtype)}`, instantiation: `rope<${mslType(dtype, "rope")}>` };
}

export const ROPE_PRECISION = `${Precision.ieee("fp32")} rotation (precise cos/sin), rounded once to the input dtype`;

/**
 * out = rope(x) for x of shape (B, …, T, D). `offset` is an int32 view of one or B offsets;
 * `freqs` a float32 view of dims/2 frequencies, or null to use `base`.
 */
export function encodeRope(sink: KernelSink, x: KernelView, offset: KernelView, freqs: KernelView | null, out: KernelOutput, o: RopeOptions): void {
  const D = x.shape[x.shape.length - 1]!;
  const T = x.shape[x.shape.length - 2]!;
  const rows = D === 0 ? 0 : x.shape.slice(0, -1).reduce((p, s) => p * s, 1);
  if (rows === 0) return;
  const lead = mergeLeading(x.shape.slice(0, -1), [x.strides.slice(0, -1)]);
  const width = o.dims / 2 + D - o.dims;
  const pipeline = kernelPipeline(ropeKernel(x.dtype));
  const params = structBytes(4, [
    ["i64", x.base],
    ["i64", x.strides[x.strides.length - 1]!],
    ["i64", offset.base],
    ["i64", offset.shape.reduce((p, s) => p * s, 1) === 1 ? 0 : offset.strides[0]!],
    ["i64", freqs ? freqs.base : 0],
    ["i64", freqs ? freqs.strides[0]! : 0],
    ["i32", D],
    ["i32", o.dims],
    ["i32", T],
    ["i32", rows],
    ["i32", rows / x.shape[0]!],
    ["i32", lead.shape.length],
    ["i32", freqs ? 1 : 0],
    ["i32", o.traditional ? 1 : 0],
    ["i32", o.forward ? 1 : 0],
    ["f32", o.scale],
    ["f32", Math.log2(o.base)],
  ]);
  const tx = Math.min(width, 32);
  sink.dispatch(
    {
      pipeline,
      buffers: [bind(0, x, "read"), bind(1, offset, "read"), bind(2, freqs ?? offset, "read"), bind(3, out, "write")],
      bytes: [params, ...leadingBytes(5, 6, lead.shape, lead.strides)],
      grid: [width, rows, 1],
      threadgroup: [tx, Math.max(1, Math.floor(Math.min(256, pipeline.maxTotalThreadsPerThreadgroup) / tx)), 1],
      mustWrite: [3],
    },
    { layout: `pairs × rows${o.traditional ? ", traditional (interleaved pairs)" : ""}${o.forward ? "" : ", inverse rotation"}`, precision: ROPE_PRECISION },
  );
}
