// Launch geometry and lane plans every GPU kernel family shares: grids and threadgroups, one
// thread per element (`launch`), lanes along one axis (`axisLanes`, `dispatchLanes`: arg-reduce,
// scan, softmax), merged dimensions and strides known before an input exists.
import type { MgArray } from "../../core/array.ts";
import { bfloat16, complex64, type Dtype, float16 } from "../../core/dtype.ts";
import { rowMajorStrides } from "../../core/shape.ts";
import { Precision } from "../../core/trace.ts";
import type { BufferBinding, Dispatch, InlineBytes, Pipeline } from "../runtime.ts";
import { type BoundArray, type DispatchTrace, type GpuEncoder, int32Bytes, int64Bytes, needsLargeIndex } from "./encoder.ts";

/** 1-D grid for n threads, or 2-D when n does not fit one grid dimension. */
export function elementwiseGrid(n: number): [number, number, number] {
  if (n < 2 ** 32) return [n, 1, 1];
  const width = 2 ** 16;
  return [width, Math.ceil(n / width), 1];
}

/** A 1-D threadgroup for a grid `width` threads wide: 256 threads (MLX's choice), fewer when the
 *  pipeline allows fewer (register-limited pipelines do) or the grid is narrower. */
export function linearThreadgroup(pipeline: { maxTotalThreadsPerThreadgroup: number }, width: number): [number, number, number] {
  return [Math.max(1, Math.min(256, pipeline.maxTotalThreadsPerThreadgroup, width)), 1, 1];
}

/** One thread per element: a 1-D grid (2-D past 2^32), threadgroups of up to 256. */
export function launch(
  enc: GpuEncoder,
  pipeline: Pipeline,
  n: number,
  buffers: readonly BufferBinding[],
  bytes: readonly InlineBytes[],
  trace: { primitive: string; inputs: readonly MgArray[]; outputs: readonly MgArray[]; layout: string; precision?: string },
  mustWrite: readonly number[] = [],
): void {
  const record = { primitives: [trace.primitive], inputs: trace.inputs, outputs: trace.outputs, layout: trace.layout, precision: trace.precision ?? Precision.none };
  dispatchLinear(enc, pipeline, n, buffers, bytes, { mustWrite }, record);
}

/** `launch` with the whole dispatch trace and the output dependencies given (fused regions). */
export function dispatchLinear(enc: GpuEncoder, pipeline: Pipeline, n: number, buffers: readonly BufferBinding[], bytes: readonly InlineBytes[],
  writes: Pick<Dispatch, "mustWrite" | "dependencies">, trace: DispatchTrace): void {
  const grid = elementwiseGrid(n);
  enc.dispatch({ pipeline, buffers, bytes, grid, threadgroup: linearThreadgroup(pipeline, grid[0]), ...writes }, trace);
}

const INT32_LIMIT = 2 ** 31;
const SIMD = 32;

/** One dimension of a strided view: its extent and its stride in elements. */
export interface Dim {
  size: number;
  stride: number;
}

/** The strides an input will have: its own, or row-major when a kernel is about to produce it. */
export function knownStrides(a: MgArray): readonly number[] | null {
  if (a.layout) return a.layout.strides;
  const producer = a.node?.primitive;
  // A view's layout is only known once its input is evaluated; kernels write row-major outputs.
  if (!producer || producer.layout) return null;
  return rowMajorStrides(a.shape);
}

/** Merges neighbouring dimensions that are one run in memory (outer.stride = inner.size·inner.stride). */
export function mergeDims(dims: readonly Dim[]): Dim[] {
  const out: Dim[] = [];
  for (const d of dims) {
    if (d.size === 1) continue;
    const last = out[out.length - 1];
    if (last && last.stride === d.size * d.stride) out[out.length - 1] = { size: last.size * d.size, stride: d.stride };
    else out.push({ ...d });
  }
  return out;
}

/**
 * A threadgroup size for a kernel reducing with simdgroup shuffles: whole simdgroups, at most the
 * pipeline's maxTotalThreadsPerThreadgroup, about `work` threads (at least one simdgroup).
 */
export function simdThreadgroup(pipeline: Pipeline, work: number, op: string, cap = 1024): number {
  const max = Math.floor(Math.min(cap, pipeline.maxTotalThreadsPerThreadgroup) / SIMD) * SIMD;
  if (max < SIMD) {
    throw new Error(`[${op}] the pipeline ${pipeline.name} allows only ${pipeline.maxTotalThreadsPerThreadgroup} threads per threadgroup; its reduction needs a whole simdgroup of ${SIMD}.`);
  }
  const want = Math.ceil(Math.max(work, 1) / SIMD) * SIMD;
  return Math.min(max, want);
}

/** A grid of `count` threadgroups, two-dimensional when one dimension cannot hold it. */
export function groupGrid(count: number): [number, number, number] {
  if (count < INT32_LIMIT) return [Math.max(count, 1), 1, 1];
  const width = 65536;
  return [width, Math.ceil(count / width), 1];
}

/** The precision label of a floating accumulation in `acc` over `dtype` operands. */
export function accumulatePrecision(dtype: Dtype, acc: "fp32" | "fp16" | "bf16"): string {
  const operand = dtype === float16 ? "fp16" : dtype === bfloat16 ? "bf16" : dtype === complex64 ? "complex64" : "fp32";
  return Precision.accumulate(acc, operand);
}

/** The smallest power of two ≥ n (1 for n ≤ 1). */
export function nextPow2(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

/** Removes one axis from a shape-like list. */
export function without<T>(xs: readonly T[], axis: number): T[] {
  return xs.filter((_, i) => i !== axis);
}

/** An input read as independent lanes along one axis (arg-reduce, scan, softmax). */
export interface AxisLanes {
  /** The other dimensions in row-major lane order, merged. */
  others: Dim[];
  /** Elements per lane: the axis' length. */
  n: number;
  axisStride: number;
  lanes: number;
  large: boolean;
}

/** How `a` reads as lanes along `axis`, or null while its strides are unknown. */
export function axisLanes(a: MgArray, axis: number): AxisLanes | null {
  const strides = knownStrides(a);
  if (!strides) return null;
  const n = a.shape[axis]!;
  const others = mergeDims(a.shape.flatMap((size, i) => (i === axis ? [] : [{ size, stride: strides[i]! }])));
  return { others, n, axisStride: strides[axis]!, lanes: n === 0 ? 0 : a.size / n, large: needsLargeIndex(a.size, [a]) };
}

/** Lanes at least this long get a threadgroup each when their axis is contiguous or they are few. */
const ROW_MIN = 32;

/**
 * "row": a threadgroup cooperates on each lane (contiguous lanes, or too few lanes to fill the
 * GPU otherwise); "column": one thread walks each lane, so neighbouring threads read neighbouring
 * memory along a strided axis.
 */
export function laneLayout(l: AxisLanes): "row" | "column" {
  return l.n >= ROW_MIN && (Math.abs(l.axisStride) <= 1 || l.lanes < SIMD) ? "row" : "column";
}

/**
 * Dispatches a lane kernel reading `a` (buffer 0) into `o` (buffer 1). Buffers 2–5 carry the other
 * dimensions' sizes, strides and count, then base, n, lanes, the axis stride and `extra`. A "row"
 * kernel runs a threadgroup per lane, each thread taking `perThread` elements at a time; `op`
 * names the operation in errors.
 */
export function dispatchLanes(
  enc: GpuEncoder,
  pipeline: Pipeline,
  l: AxisLanes,
  layout: "row" | "column",
  perThread: number,
  op: string,
  io: { a: BoundArray; o: BoundArray; extra?: readonly number[] },
  trace: DispatchTrace,
): void {
  const buffers = [io.a.binding, io.o.binding];
  const bytes = [
    int32Bytes(2, l.others.map((d) => d.size)),
    int64Bytes(3, l.others.map((d) => d.stride)),
    int32Bytes(4, [l.others.length]),
    int64Bytes(5, [io.a.base, l.n, l.lanes, l.axisStride, ...(io.extra ?? [])]),
  ];
  const mustWrite = [io.o.binding.index];
  if (layout === "row") {
    const tg = simdThreadgroup(pipeline, Math.ceil(l.n / perThread), op);
    enc.dispatch({ pipeline, buffers, bytes, grid: groupGrid(l.lanes), threadgroup: [tg, 1, 1], mode: "threadgroups", mustWrite }, trace);
    return;
  }
  const grid = elementwiseGrid(l.lanes);
  enc.dispatch({ pipeline, buffers, bytes, grid, threadgroup: linearThreadgroup(pipeline, grid[0]), mustWrite }, trace);
}
