// RMS and layer norm on the GPU (Sources/Kernels/norm.metal): one threadgroup per row, the
// single-read variant while a row fits 1024 threads × 4 elements, the looped one beyond; the
// backward is one dx kernel (which also saves each row's {μ, 1/σ}) plus the column reduction for
// the weight and bias gradients.
import type { Dtype } from "../../../core/dtype.ts";
import type { KernelInstance } from "../kernels.ts";
import { dtypeTag, mslType } from "../dtypes.ts";
import { kernelPipeline } from "../kernels.ts";
import { bind, bindScratch, type KernelOutput, type KernelSink, type KernelView, leadingBytes, mergeLeading, rowGrid, simdGroupSize, structBytes } from "./common.ts";
import { type Accumulate16, accumulationLabel, accumulatorOf, accumulatorParts } from "./precision.ts";

export interface NormOptions {
  /** Layer norm (centre and scale) rather than RMS norm (scale only). */
  layer: boolean;
  eps: number;
  accumulate16: Accumulate16;
}

/** Rows up to this length take one simdgroup each (no threadgroup barriers). */
export const NORM_ROWS_MAX = 1024;
/** Elements per thread of the single-read variant and the longest row it takes. */
export const NORM_READS = 4;
export const NORM_SINGLE_MAX = 1024 * NORM_READS;
/** Rows per threadgroup of the simdgroup-per-row kernels. */
const ROWS_PER_GROUP = 8;
/** Threads per row of the threadgroup-per-row backward. */
const VJP_THREADS = 256;

export type NormVariant = "rows" | "single" | "looped";
export function normVariant(n: number): NormVariant {
  return n <= NORM_ROWS_MAX ? "rows" : n <= NORM_SINGLE_MAX ? "single" : "looped";
}

const family = (layer: boolean): string => (layer ? "layer_norm" : "rms_norm");

export function normForwardKernel(dtype: Dtype, n: number, opts: NormOptions): KernelInstance {
  const t = mslType(dtype, family(opts.layer));
  const acc = accumulatorParts(dtype, accumulatorOf(dtype, opts.accumulate16));
  const layer = opts.layer ? "true" : "false";
  const variant = normVariant(n);
  if (variant === "rows") {
    return { file: "norm.metal", name: `mg_${family(opts.layer)}_rows_${dtypeTag(dtype)}${acc.suffix}`, instantiation: `norm_rows<${t}, ${acc.msl}, ${layer}>` };
  }
  if (variant === "single") {
    return {
      file: "norm.metal",
      name: `mg_${family(opts.layer)}_single_${dtypeTag(dtype)}${acc.suffix}`,
      instantiation: `norm_single<${t}, ${acc.msl}, ${NORM_READS}, ${layer}>`,
    };
  }
  return { file: "norm.metal", name: `mg_${family(opts.layer)}_looped_${dtypeTag(dtype)}${acc.suffix}`, instantiation: `norm_looped<${t}, ${acc.msl}, ${layer}>` };
}

export function normVjpKernels(dtype: Dtype, n: number, opts: NormOptions): { dx: KernelInstance; params: KernelInstance } {
  const t = mslType(dtype, family(opts.layer));
  const acc = accumulatorParts(dtype, accumulatorOf(dtype, opts.accumulate16));
  const layer = opts.layer ? "true" : "false";
  const rows = n <= NORM_SINGLE_MAX;
  return {
    dx: rows
      ? { file: "norm.metal", name: `mg_${family(opts.layer)}_vjp_rows_${dtypeTag(dtype)}${acc.suffix}`, instantiation: `norm_vjp_rows<${t}, ${acc.msl}, ${layer}>` }
      : { file: "norm.metal", name: `mg_${family(opts.layer)}_vjp_${dtypeTag(dtype)}${acc.suffix}`, instantiation: `norm_vjp<${t}, ${acc.msl}, ${layer}>` },
    params: { file: "norm.metal", name: `mg_${family(opts.layer)}_param_grad_${dtypeTag(dtype)}`, instantiation: `norm_param_grad<${t}, ${layer}>` },
  };
}

export function normPrecision(dtype: Dtype, opts: NormOptions): string {
  return `${accumulationLabel(dtype, accumulatorOf(dtype, opts.accumulate16))}; 1/σ in fp32`;
}

function paramFields(x: KernelView, g: KernelView | null, w: KernelView | null, b: KernelView | null, rows: number, ndim: number, opts: NormOptions) {
  const n = x.shape[x.shape.length - 1]!;
  return structBytes(0, [
    ["i64", x.base],
    ["i64", g ? g.base : 0],
    ["i64", x.strides[x.strides.length - 1]!],
    ["i64", g ? g.strides[g.strides.length - 1]! : 0],
    ["i64", w ? w.base : 0],
    ["i64", w ? w.strides[0]! : 0],
    ["i64", b ? b.base : 0],
    ["i64", b ? b.strides[0]! : 0],
    ["i32", n],
    ["i32", rows],
    ["i32", ndim],
    ["i32", w ? 1 : 0],
    ["i32", b ? 1 : 0],
    ["f32", opts.eps],
  ]);
}

/** out = norm(x)·w (+ b) over the last axis. w and b are 1-D (any stride) or null. */
export function encodeNorm(sink: KernelSink, x: KernelView, w: KernelView | null, b: KernelView | null, out: KernelOutput, opts: NormOptions): void {
  const n = x.shape[x.shape.length - 1] ?? 1;
  const rows = n === 0 ? 0 : x.shape.slice(0, -1).reduce((p, s) => p * s, 1);
  if (rows === 0 || n === 0) return;
  const lead = mergeLeading(x.shape.slice(0, -1), [x.strides.slice(0, -1)]);
  const kernel = normForwardKernel(x.dtype, n, opts);
  const pipeline = kernelPipeline(kernel);
  const variant = normVariant(n);
  const tg = variant === "rows" ? ROWS_PER_GROUP * 32 : simdGroupSize(pipeline.maxTotalThreadsPerThreadgroup, variant === "single" ? Math.ceil(n / NORM_READS) : n);
  if ((variant === "single" && tg * NORM_READS < n) || tg > pipeline.maxTotalThreadsPerThreadgroup) {
    throw new Error(`[${family(opts.layer)}] ${pipeline.name} allows ${pipeline.maxTotalThreadsPerThreadgroup} threads per threadgroup, too few for rows of ${n}.`);
  }
  const params = paramFields(x, null, w, b, rows, lead.shape.length, opts);
  params.index = 4;
  const layouts = { rows: "one simdgroup per row, 8 rows per threadgroup", single: "one row per threadgroup, row in registers", looped: "one row per threadgroup, looped" };
  sink.dispatch(
    {
      pipeline,
      buffers: [bind(0, x, "read"), bind(1, w ?? x, "read"), bind(2, b ?? x, "read"), bind(3, out, "write")],
      bytes: [params, ...leadingBytes(5, 6, lead.shape, lead.strides)],
      grid: variant === "rows" ? [Math.ceil(rows / ROWS_PER_GROUP), 1, 1] : rowGrid(rows),
      threadgroup: [tg, 1, 1],
      mode: "threadgroups",
      mustWrite: [3],
    },
    { layout: layouts[variant], precision: normPrecision(x.dtype, opts) },
  );
}

/**
 * Backward: dx (row-contiguous, x's dtype) and, when asked, dw and db (1-D, w's dtype). g is the
 * cotangent of the output (any view with x's shape).
 */
export function encodeNormVjp(
  sink: KernelSink,
  x: KernelView,
  w: KernelView | null,
  g: KernelView,
  dx: KernelOutput,
  dw: KernelOutput | null,
  db: KernelOutput | null,
  opts: NormOptions,
): void {
  const n = x.shape[x.shape.length - 1] ?? 1;
  const rows = n === 0 ? 0 : x.shape.slice(0, -1).reduce((p, s) => p * s, 1);
  const kernels = normVjpKernels(x.dtype, n, opts);
  const perSimd = n <= NORM_SINGLE_MAX;
  const lead = mergeLeading(x.shape.slice(0, -1), [x.strides.slice(0, -1), g.strides.slice(0, -1)]);
  const leading = leadingBytes(6, 7, lead.shape, lead.strides);
  const precision = `${normPrecision(x.dtype, opts)}; weight/bias sums in fp32`;
  if (rows === 0 || n === 0) {
    if (dw || db) throw new Error(`[${family(opts.layer)}] internal: parameter gradients of an empty input are zeros (the op fills them).`);
    return;
  }
  const stats = sink.temporary(rows * 8);
  const pipeline = kernelPipeline(kernels.dx);
  const params = paramFields(x, g, w, null, rows, lead.shape.length, opts);
  params.index = 5;
  sink.dispatch(
    {
      pipeline,
      buffers: [bind(0, x, "read"), bind(1, w ?? x, "read"), bind(2, g, "read"), bind(3, dx, "write"), bindScratch(4, stats, "write")],
      bytes: [params, ...leading],
      grid: perSimd ? [Math.ceil(rows / ROWS_PER_GROUP), 1, 1] : rowGrid(rows),
      threadgroup: [perSimd ? ROWS_PER_GROUP * 32 : simdGroupSize(pipeline.maxTotalThreadsPerThreadgroup, VJP_THREADS), 1, 1],
      mode: "threadgroups",
      mustWrite: [3],
    },
    { layout: perSimd ? "one simdgroup per row, 8 rows per threadgroup" : "one row per threadgroup, looped", precision },
  );
  if (!dw && !db) return;
  const reduce = kernelPipeline(kernels.params);
  // has_w / has_b in the reduction mean "write dw" / "write db".
  const rparams = paramFields(x, g, dw ? x : null, db ? x : null, rows, lead.shape.length, opts);
  rparams.index = 5;
  const dummy = dx;
  sink.dispatch(
    {
      pipeline: reduce,
      buffers: [bind(0, x, "read"), bind(1, g, "read"), bindScratch(2, stats, "read"), bind(3, dw ?? dummy, dw ? "write" : "read"), bind(4, db ?? dummy, db ? "write" : "read")],
      bytes: [rparams, ...leading],
      grid: [Math.ceil(n / 32), 1, 1],
      threadgroup: [256, 1, 1],
      mode: "threadgroups",
      mustWrite: [...(dw ? [3] : []), ...(db ? [4] : [])],
    },
    { layout: "column sums, 32 columns × 8 row slices per threadgroup", precision: "fp32 accumulate" },
  );
}
