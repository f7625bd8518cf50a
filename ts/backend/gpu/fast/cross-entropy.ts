// Cross entropy with class-index targets on the GPU (Sources/Kernels/cross_entropy.metal): one
// threadgroup per row, forward (float32 loss) and backward (dlogits in the logits' dtype).
import type { Dtype } from "../../../core/dtype.ts";
import type { KernelInstance } from "../kernels.ts";
import { dtypeTag, mslType } from "../dtypes.ts";
import { kernelPipeline } from "../kernels.ts";
import { bind, type KernelOutput, type KernelSink, type KernelView, leadingBytes, mergeLeading, rowGrid, simdGroupSize, structBytes } from "./common.ts";
import { type Accumulate16, accumulationLabel, accumulatorOf, accumulatorParts } from "./precision.ts";

/** Threads per row: each strides over the classes (a 32k vocabulary is 125 reads per thread). */
const CE_THREADS = 256;

export function crossEntropyKernels(dtype: Dtype, accumulate16: Accumulate16): { forward: KernelInstance; backward: KernelInstance } {
  const t = mslType(dtype, "cross_entropy");
  const acc = accumulatorParts(dtype, accumulatorOf(dtype, accumulate16));
  const tag = `${dtypeTag(dtype)}${acc.suffix}`;
  return {
    forward: { file: "cross_entropy.metal", name: `mg_cross_entropy_forward_${tag}`, instantiation: `cross_entropy_forward<${t}, ${acc.msl}>` },
    backward: { file: "cross_entropy.metal", name: `mg_cross_entropy_backward_${tag}`, instantiation: `cross_entropy_backward<${t}, ${acc.msl}>` },
  };
}

export function crossEntropyPrecision(dtype: Dtype, accumulate16: Accumulate16): string {
  return `${accumulationLabel(dtype, accumulatorOf(dtype, accumulate16))}; precise exp/log`;
}

function rowsOf(x: KernelView): number {
  const n = x.shape[x.shape.length - 1]!;
  return n === 0 ? 0 : x.shape.slice(0, -1).reduce((p, s) => p * s, 1);
}

function params(index: number, x: KernelView, t: KernelView, g: KernelView | null, rows: number, ndim: number) {
  return structBytes(index, [
    ["i64", x.base],
    ["i64", t.base],
    ["i64", g ? g.base : 0],
    ["i64", x.strides[x.strides.length - 1]!],
    ["i32", x.shape[x.shape.length - 1]!],
    ["i32", rows],
    ["i32", ndim],
  ]);
}

/** loss (float32, targets' shape, row-contiguous) from logits x (…, n) and int32 targets (…). */
export function encodeCrossEntropy(sink: KernelSink, x: KernelView, targets: KernelView, loss: KernelOutput, accumulate16: Accumulate16): void {
  const rows = rowsOf(x);
  if (rows === 0) return;
  const n = x.shape[x.shape.length - 1]!;
  const lead = mergeLeading(x.shape.slice(0, -1), [x.strides.slice(0, -1), targets.strides]);
  const pipeline = kernelPipeline(crossEntropyKernels(x.dtype, accumulate16).forward);
  sink.dispatch(
    {
      pipeline,
      buffers: [bind(0, x, "read"), bind(1, targets, "read"), bind(2, loss, "write")],
      bytes: [params(3, x, targets, null, rows, lead.shape.length), ...leadingBytes(4, 5, lead.shape, lead.strides)],
      grid: rowGrid(rows),
      threadgroup: [simdGroupSize(pipeline.maxTotalThreadsPerThreadgroup, n, CE_THREADS), 1, 1],
      mode: "threadgroups",
      mustWrite: [2],
    },
    { layout: "one row per threadgroup", precision: crossEntropyPrecision(x.dtype, accumulate16) },
  );
}

/** dx = g·(softmax(x) − onehot(targets)) in x's dtype; g: float32 with the targets' shape. */
export function encodeCrossEntropyVjp(sink: KernelSink, x: KernelView, targets: KernelView, g: KernelView, dx: KernelOutput, accumulate16: Accumulate16): void {
  const rows = rowsOf(x);
  if (rows === 0) return;
  const n = x.shape[x.shape.length - 1]!;
  const lead = mergeLeading(x.shape.slice(0, -1), [x.strides.slice(0, -1), targets.strides, g.strides]);
  const pipeline = kernelPipeline(crossEntropyKernels(x.dtype, accumulate16).backward);
  sink.dispatch(
    {
      pipeline,
      buffers: [bind(0, x, "read"), bind(1, targets, "read"), bind(2, g, "read"), bind(3, dx, "write")],
      bytes: [params(4, x, targets, g, rows, lead.shape.length), ...leadingBytes(5, 6, lead.shape, lead.strides)],
      grid: rowGrid(rows),
      threadgroup: [simdGroupSize(pipeline.maxTotalThreadsPerThreadgroup, n, CE_THREADS), 1, 1],
      mode: "threadgroups",
      mustWrite: [3],
    },
    { layout: "one row per threadgroup", precision: crossEntropyPrecision(x.dtype, accumulate16) },
  );
}
