// Indexing on the GPU (Sources/Kernels/gather.metal, scatter.metal, slicing.metal): Gather,
// GatherAxis, Scatter, ScatterAxis, SliceUpdate, DynamicSlice and DynamicSliceUpdate. Every input
// is read in place through its strides; the only copies are the output's initial copy of the
// source that scatters and slice updates write into (as in MLX), and, past four index buffers,
// stacking the index arrays into one (noted in the trace).
//
// Out-of-range indices follow the policy of ts/core/primitives/indexing.ts, as on the CPU:
// negatives wrap once, reads outside give 0 and writes outside are dropped. With
// MG_CHECK_INDICES=1 the indices are checked on the host once the batch has run, and evaluation
// throws the same error as the CPU device.
import type { MgArray, Node } from "../../core/array.ts";
import { bool_, complex64, type Dtype, int16, int32, int64, int8, uint16, uint32, uint64, uint8 } from "../../core/dtype.ts";
import {
  type AxisParams, DynamicSlice, type DynamicSliceParams, DynamicSliceUpdate, type DynamicSliceUpdateParams, Gather, GatherAxis,
  type GatherParams, indexChecksEnabled, outOfBounds, Scatter, ScatterAxis, type ScatterAxisParams, type ScatterParams, SliceUpdate,
  type SliceUpdateParams, type UpdateMode,
} from "../../core/primitives/indexing.ts";
import { rowMajorStrides, shapeSize } from "../../core/shape.ts";
import { Precision } from "../../core/trace.ts";
import { allocateBuffer, Storage } from "../../memory/storage.ts";
import { readNumbers } from "../cpu/values.ts";
import type { BufferBinding, InlineBytes, Pipeline } from "../runtime.ts";
import { bitsTag, bitsType, copyStridedKernel, encodeCopyStrided } from "./copy.ts";
import { dtypeTag, mslType } from "./dtypes.ts";
import { elementwisePrecision } from "./elementwise.ts";
import { type GpuEncoder, idxTag, idxType, int32Bytes, int64Bytes, needsLargeIndex, viewExtent } from "./encoder.ts";
import { type KernelInstance, kernelPipeline } from "./kernels.ts";
import { elementwiseGrid, launch, linearThreadgroup } from "./launch.ts";
import { registerGpu } from "./registry.ts";

// ---------------------------------------------------------------------------------------------
// Index kinds


/** IndexKind in Sources/Kernels/indexing.h. */
const INDEX_KIND = new Map<Dtype, number>([
  [int8, 0], [int16, 1], [int32, 2], [int64, 3], [uint8, 4], [uint16, 5], [uint32, 6], [uint64, 7], [bool_, 4],
]);
function indexKind(d: Dtype, op: string): number {
  const k = INDEX_KIND.get(d);
  if (k === undefined) throw new Error(`[${op}] indices must be integers, got ${d.name}.`);
  return k;
}


function nativeOf(a: MgArray) {
  const native = a.layout!.storage.buffer.native;
  if (!native) throw new Error(`[gpu] ${a.describe()} has no native buffer (internal error).`);
  return native;
}



// ---------------------------------------------------------------------------------------------
// Index arrays: up to four buffers ("slots"); arrays sharing a buffer share a slot

const SLOTS = 4;

interface BoundIndices {
  /** Bindings at buffer indices 2…5 (unused slots repeat slot 0). */
  slots: BufferBinding[];
  shape: readonly number[];
  /** Per array: its strides over `shape`. */
  strides: number[];
  /** Per array: its first element within its slot's binding. */
  bases: number[];
  /** Per array: slot, axis. */
  info: number[];
  /** IndexKind of the arrays' dtype. */
  kind: number;
  /** Bit k: array k is row-contiguous. */
  contiguous: number;
  /** Elements the largest slot binding spans (for the large-index choice). */
  extent: number;
}

/** IndexArrays' shape, strides, bases and info as inline bytes at first … first + 3. */
function indexBytes(b: BoundIndices, first: number): InlineBytes[] {
  return [int32Bytes(first, b.shape), int64Bytes(first + 1, b.strides), int64Bytes(first + 2, b.bases), int32Bytes(first + 3, b.info)];
}

/**
 * Binds the index arrays of a gather or scatter (one broadcast shape and dtype) at buffer
 * indices 2…5: arrays in one buffer share a binding over the union of their views. More
 * buffers than slots are first stacked into one scratch buffer (a noted copy).
 */
function bindIndices(enc: GpuEncoder, idx: readonly MgArray[], axes: readonly number[], fallback: BufferBinding, primitive: string, outputs: readonly MgArray[]): BoundIndices {
  const shape = idx[0]?.shape ?? [];
  const ndim = shape.length;
  const b: BoundIndices = { slots: [], shape, strides: [], bases: [], info: [], kind: 2, contiguous: 0, extent: 0 };
  if (idx.length === 0) {
    b.slots = Array.from({ length: SLOTS }, (_, s) => ({ ...fallback, index: 2 + s, access: "read" as const }));
    return b;
  }
  b.kind = indexKind(idx[0]!.dtype, primitive);
  const item = idx[0]!.dtype.size;
  const groups = new Map<object, { lo: number; hi: number; members: number[] }>();
  idx.forEach((x, k) => {
    const l = x.layout!;
    const [lo, hi] = viewExtent(x.shape, l.strides, l.offset);
    const key = nativeOf(x);
    const g = groups.get(key);
    if (g) {
      g.lo = Math.min(g.lo, lo);
      g.hi = Math.max(g.hi, hi);
      g.members.push(k);
    } else groups.set(key, { lo, hi, members: [k] });
  });
  if (groups.size <= SLOTS) {
    let s = 0;
    for (const [native, g] of groups) {
      b.slots.push({ index: 2 + s, buffer: native as BufferBinding["buffer"], offset: g.lo * item, length: Math.max(g.hi - g.lo, 0) * item, access: "read" });
      b.extent = Math.max(b.extent, g.hi - g.lo);
      for (const k of g.members) {
        b.bases[k] = idx[k]!.layout!.offset - g.lo;
        b.info[2 * k] = s;
      }
      s++;
    }
    idx.forEach((x, k) => {
      b.strides.push(...(ndim ? x.layout!.strides : [0]));
      b.info[2 * k + 1] = axes[k]!;
      if (k < 31 && x.layout!.rowContiguous) b.contiguous |= 1 << k;
    });
  } else {
    const m = shapeSize(shape);
    const bytes = idx.length * m * item;
    const scratch = enc.temporary(bytes);
    const binding: BufferBinding = { index: 2, buffer: scratch, offset: 0, length: bytes, access: "write" };
    const rowMajor = rowMajorStrides(shape);
    enc.note(`copy: ${idx.length} index arrays in ${groups.size} buffers are stacked into one (the kernels bind ${SLOTS} index buffers)`);
    idx.forEach((x, k) => {
      encodeCopyStrided(enc, x, binding, k * m, rowMajor, true, { primitive, outputs, layout: "index stacking" });
      b.bases[k] = k * m;
      b.info[2 * k] = 0;
      b.info[2 * k + 1] = axes[k]!;
      b.strides.push(...(ndim ? rowMajor : [0]));
      if (k < 31) b.contiguous |= 1 << k;
    });
    b.slots.push({ ...binding, access: "read" });
    b.extent = idx.length * m;
  }
  while (b.slots.length < SLOTS) b.slots.push({ ...b.slots[0]!, index: 2 + b.slots.length });
  return b;
}

// ---------------------------------------------------------------------------------------------
// MG_CHECK_INDICES: the CPU device's checks, run on the host once the batch has computed the
// indices (they may be produced by the same batch), so evaluation throws the same error.

function hostValues(a: MgArray): Float64Array {
  a.layout!.storage.sync();
  return readNumbers(a);
}

/** Throws the CPU's error for the first index (row-major, then by array) whose slice leaves the array. */
function checkSliceIndices(op: string, shape: readonly number[], idx: readonly MgArray[], axes: readonly number[], sliceShape: readonly number[]): void {
  const n = idx.length ? idx[0]!.size : 1;
  if (n === 0 || shapeSize(sliceShape) === 0) return;
  const vals = idx.map(hostValues);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < idx.length; k++) {
      const ax = axes[k]!;
      const raw = vals[k]![i]!;
      const v = raw < 0 ? raw + shape[ax]! : raw;
      if (v < 0 || v + sliceShape[ax]! > shape[ax]!) throw outOfBounds(op, raw, ax, shape[ax]!);
    }
  }
}

function checkAxisIndices(op: string, idx: MgArray, axis: number, size: number): void {
  const vals = hostValues(idx);
  for (const raw of vals) {
    const v = raw < 0 ? raw + size : raw;
    if (v < 0 || v >= size) throw outOfBounds(op, raw, axis, size);
  }
}

function checkDynamicStart(op: "slice" | "slice_update", shape: readonly number[], start: MgArray, axes: readonly number[], extent: readonly number[]): void {
  const starts = shape.map(() => 0);
  Array.from(hostValues(start)).forEach((v, k) => (starts[axes[k]!] = v));
  const d = starts.findIndex((s, d) => s < 0 || s + extent[d]! > shape[d]!);
  if (d < 0) return;
  const what = op === "slice" ? "slice size" : "update size";
  throw new RangeError(`[${op}] Start index ${starts[d]} with ${what} ${extent[d]} is out of bounds for axis ${d} with size ${shape[d]} (MG_CHECK_INDICES is on).`);
}

/** Queues a check for after submission when MG_CHECK_INDICES is on. */
/** MG_CHECK_INDICES: `check` runs on the host after submit; when it fails, so do `node`'s outputs. */
function checkLater(enc: GpuEncoder, reads: readonly MgArray[], check: () => void, node: Node): void {
  if (indexChecksEnabled()) enc.afterSubmit(check, reads, node.outputs);
}

// ---------------------------------------------------------------------------------------------
// Gather / GatherAxis

function gatherKernel(d: Dtype, large: boolean): KernelInstance {
  return { file: "gather.metal", name: `mg_gather_${bitsTag(d)}_${idxTag(large)}`, instantiation: `gather<${bitsType(d)}, ${idxType(large)}>` };
}

function layoutLabel(arrays: readonly MgArray[], large: boolean, what = ""): string {
  const contiguous = arrays.every((a) => a.layout?.rowContiguous ?? true);
  return `${contiguous ? "contiguous" : "strided"}${what}${large ? ", large-index" : ""}`;
}

function encodeGather(enc: GpuEncoder, node: Node<GatherParams>): void {
  const p = node.params;
  const [src, ...idx] = node.inputs as [MgArray, ...MgArray[]];
  const out = node.outputs[0]!;
  const s = enc.input(src, 0);
  const o = enc.output(out, 1);
  const b = bindIndices(enc, idx, p.axes, s.binding, "gather", [out]);
  const large = needsLargeIndex(out.size, [src, ...idx], b.extent);
  launch(
    enc,
    kernelPipeline(gatherKernel(src.dtype, large)),
    out.size,
    [s.binding, o.binding, ...b.slots],
    [
      int32Bytes(6, src.shape),
      int64Bytes(7, s.strides),
      int32Bytes(8, p.sliceSizes),
      ...indexBytes(b, 9),
      int32Bytes(13, [src.ndim, b.shape.length, idx.length, b.kind, b.contiguous]),
      int64Bytes(14, [s.base, shapeSize(p.sliceSizes), out.size]),
    ],
    { primitive: "Gather", inputs: node.inputs, outputs: [out], layout: layoutLabel(node.inputs, large, `, ${idx.length} index array${idx.length === 1 ? "" : "s"}`) },
    [1],
  );
  checkLater(enc, idx, () => checkSliceIndices("gather", src.shape, idx, p.axes, p.sliceSizes), node);
}

registerGpu(Gather, {
  kind: "kernel",
  kernels: (node) => [gatherKernel(node.inputs[0]!.dtype, needsLargeIndex(node.outputs[0]!.size, node.inputs))],
  encode: encodeGather,
});

function gatherAxisKernel(d: Dtype, large: boolean): KernelInstance {
  return { file: "gather.metal", name: `mg_gather_axis_${bitsTag(d)}_${idxTag(large)}`, instantiation: `gather_axis<${bitsType(d)}, ${idxType(large)}>` };
}

function encodeGatherAxis(enc: GpuEncoder, node: Node<AxisParams>): void {
  const { axis } = node.params;
  const [src, idx] = node.inputs as [MgArray, MgArray];
  const out = node.outputs[0]!;
  const large = needsLargeIndex(out.size, node.inputs);
  const s = enc.input(src, 0);
  const o = enc.output(out, 1);
  const i = enc.input(idx, 2);
  const offAxis = s.strides.map((st, d) => (d === axis ? 0 : st));
  launch(
    enc,
    kernelPipeline(gatherAxisKernel(src.dtype, large)),
    out.size,
    [s.binding, o.binding, i.binding],
    [
      int32Bytes(3, out.shape),
      int64Bytes(4, i.strides),
      int64Bytes(5, offAxis),
      int32Bytes(6, [out.ndim, indexKind(idx.dtype, "take_along_axis"), i.rowContiguous ? 1 : 0]),
      int64Bytes(7, [s.base, i.base, out.size, src.shape[axis]!, s.strides[axis]!]),
    ],
    { primitive: "GatherAxis", inputs: node.inputs, outputs: [out], layout: layoutLabel(node.inputs, large) },
    [1],
  );
  checkLater(enc, [idx], () => checkAxisIndices("take_along_axis", idx, axis, src.shape[axis]!), node);
}

registerGpu(GatherAxis, {
  kind: "kernel",
  kernels: (node) => [gatherAxisKernel(node.inputs[0]!.dtype, needsLargeIndex(node.outputs[0]!.size, node.inputs))],
  encode: encodeGatherAxis,
});

// ---------------------------------------------------------------------------------------------
// Scatter / ScatterAxis

const UPDATE_OP: Record<UpdateMode, string> = { none: "UpdateNone", sum: "UpdateSum", prod: "UpdateProd", max: "UpdateMax", min: "UpdateMin" };

/** 64-bit elements have atomic sums only: their prod/max/min apply in order (scatter_ordered). */
const ordered = (d: Dtype, mode: UpdateMode) => d.size === 8 && mode !== "sum" && mode !== "none";

/** Compare-exchange works on whole 32-bit words: round a sub-word output's storage up to them. */
function allocateForAtomics(out: MgArray, mode: UpdateMode): void {
  if (out.layout) return;
  if (mode === "none" || out.dtype.size >= 4) {
    out.allocate();
    return;
  }
  const bytes = Math.ceil(out.nbytes / 4) * 4;
  out.setLayout(new Storage(allocateBuffer(bytes)), 0, rowMajorStrides(out.shape), false);
}

/** The output bound read-write for atomics (its binding covers whole words). */
function atomicOutput(enc: GpuEncoder, out: MgArray): BufferBinding {
  const o = enc.output(out, 0, "readwrite");
  return { ...o.binding, length: Math.ceil(out.nbytes / 4) * 4 };
}

function scatterPrecision(d: Dtype, mode: UpdateMode, how: string): string {
  if (d.kind !== "f" && d !== complex64) return Precision.exact;
  if (mode === "max" || mode === "min" || mode === "none") return Precision.exact;
  return `${elementwisePrecision(d)}, ${how}`;
}

function scatterKernel(d: Dtype, mode: UpdateMode, large: boolean): KernelInstance {
  const variant = ordered(d, mode) ? "ordered" : "atomic";
  return {
    file: "scatter.metal",
    name: `mg_scatter_${variant}_${dtypeTag(d)}_${mode}_${idxTag(large)}`,
    instantiation: `scatter_${variant}<${mslType(d, "scatter")}, ${UPDATE_OP[mode]}, ${idxType(large)}>`,
  };
}
const winnerKernel = (axis: boolean, large: boolean): KernelInstance => ({
  file: "scatter.metal",
  name: `mg_scatter${axis ? "_axis" : ""}_winner_${idxTag(large)}`,
  instantiation: `scatter${axis ? "_axis" : ""}_winner<${idxType(large)}>`,
});
const pickKernel = (d: Dtype, large: boolean): KernelInstance => ({
  file: "scatter.metal",
  name: `mg_scatter_pick_${bitsTag(d)}_${idxTag(large)}`,
  instantiation: `scatter_pick<${bitsType(d)}, ${idxType(large)}>`,
});
const CLEAR_KERNEL: KernelInstance = { file: "scatter.metal", name: "mg_scatter_clear_u32", instantiation: "scatter_clear<uint>" };

/** Kernels a scatter of `a` with `updates` will need (for compiling up front). */
function scatterKernels(a: MgArray, updates: MgArray, out: MgArray, mode: UpdateMode, axis: boolean, extra: readonly MgArray[]): KernelInstance[] {
  const large = needsLargeIndex(Math.max(out.size, updates.size), [a, updates, ...extra]);
  if (mode === "none") return [CLEAR_KERNEL, winnerKernel(axis, large), pickKernel(a.dtype, large)];
  const main = axis
    ? { file: "scatter.metal", name: `mg_scatter_axis_atomic_${dtypeTag(a.dtype)}_sum_${idxTag(large)}`, instantiation: `scatter_axis_atomic<${mslType(a.dtype, "scatter")}, UpdateSum, ${idxType(large)}>` }
    : scatterKernel(a.dtype, mode, large);
  return [sourceCopyKernel(a), main];
}

/** Update numbers are 32-bit in the winner pass; outputs past 2^32 elements have no uint grid. */
function checkNoneLimits(op: string, updates: MgArray, out: MgArray): void {
  if (updates.size >= 2 ** 32 - 1 || out.size >= 2 ** 32) {
    throw new Error(`[${op}] a "none" scatter on the GPU takes fewer than 2^32 - 1 updates into fewer than 2^32 elements (got ${updates.size} into ${out.size}); run it on the CPU.`);
  }
}

/** "none": clear the winners, record the last update aimed at each element, then pick. */
function encodeWinners(
  enc: GpuEncoder,
  primitive: string,
  inputs: readonly MgArray[],
  a: MgArray,
  updates: MgArray,
  out: MgArray,
  large: boolean,
  winnerPass: (winners: BufferBinding) => void,
): void {
  const bytes = out.size * 4;
  const winners = enc.temporary(bytes);
  const w: BufferBinding = { index: 0, buffer: winners, offset: 0, length: bytes, access: "readwrite" };
  launch(enc, kernelPipeline(CLEAR_KERNEL), out.size, [{ ...w, access: "write" }], [], { primitive, inputs: [], outputs: [out], layout: "winners: clear" });
  winnerPass(w);
  const s = enc.input(a, 1);
  const u = enc.input(updates, 2);
  const o = enc.output(out, 0);
  launch(
    enc,
    kernelPipeline(pickKernel(out.dtype, large)),
    out.size,
    [o.binding, s.binding, u.binding, { ...w, index: 3, access: "read" }],
    [
      int32Bytes(4, out.shape),
      int64Bytes(5, s.strides),
      int32Bytes(6, updates.shape),
      int64Bytes(7, u.strides),
      int32Bytes(8, [out.ndim, updates.ndim, s.rowContiguous ? 1 : 0, u.rowContiguous ? 1 : 0]),
      int64Bytes(9, [s.base, u.base, out.size]),
    ],
    { primitive, inputs, outputs: [out], layout: `winners: pick (last update in row-major order wins)${large ? ", large-index" : ""}` },
    [0],
  );
}

/** The output starts as a row-contiguous copy of the source (noted: the update happens in it). */
function copySource(enc: GpuEncoder, a: MgArray, out: MgArray, primitive: string): void {
  const o = enc.output(out, 1);
  if (a.size === 0) return;
  enc.note(`copy: ${primitive} updates a fresh copy of its source`);
  encodeCopyStrided(enc, a, o.binding, 0, rowMajorStrides(a.shape), true, { primitive, outputs: [out], layout: "copy of the source" }, true);
}

/** The copy copySource will use (for compiling up front). */
const sourceCopyKernel = (a: MgArray): KernelInstance => copyStridedKernel(a.dtype, needsLargeIndex(a.size, [a]));

function encodeScatter(enc: GpuEncoder, node: Node<ScatterParams>): void {
  const p = node.params;
  const a = node.inputs[0]!;
  const idx = node.inputs.slice(1, -1);
  const updates = node.inputs[node.inputs.length - 1]!;
  const out = node.outputs[0]!;
  const idxNdim = updates.ndim - a.ndim;
  const sliceShape = updates.shape.slice(idxNdim);
  const sliceN = shapeSize(sliceShape);
  const large = needsLargeIndex(Math.max(out.size, updates.size), [a, updates, ...idx]);
  if (updates.size === 0) {
    copySource(enc, a, out, "Scatter");
    return;
  }
  const indexArgs = (b: BoundIndices, u: { strides: readonly number[]; base: number; rowContiguous: boolean }, serial: boolean): InlineBytes[] => [
    int32Bytes(6, out.shape),
    int64Bytes(7, rowMajorStrides(out.shape)),
    int32Bytes(8, sliceShape),
    ...indexBytes(b, 9),
    int32Bytes(13, [a.ndim, idxNdim, idx.length, b.kind, b.contiguous, u.rowContiguous ? 1 : 0]),
    int32Bytes(14, updates.shape),
    int64Bytes(15, u.strides),
    int64Bytes(16, [u.base, sliceN, updates.size, serial ? 1 : 0]),
  ];
  const what = `, ${idx.length} index array${idx.length === 1 ? "" : "s"}`;
  if (p.mode === "none") {
    checkNoneLimits("scatter", updates, out);
    allocateForAtomics(out, "none");
    encodeWinners(enc, "Scatter", node.inputs, a, updates, out, large, (w) => {
      const b = bindIndices(enc, idx, p.axes, w, "scatter", [out]);
      const noUpdates = { strides: [], base: 0, rowContiguous: true };
      launch(enc, kernelPipeline(winnerKernel(false, large)), updates.size, [w, ...b.slots], indexArgs(b, noUpdates, false), {
        primitive: "Scatter", inputs: idx, outputs: [out], layout: `winners: last update per element${what}`,
      });
    });
  } else {
    allocateForAtomics(out, p.mode);
    copySource(enc, a, out, "Scatter");
    const o = atomicOutput(enc, out);
    const u = enc.input(updates, 1);
    const b = bindIndices(enc, idx, p.axes, u.binding, "scatter", [out]);
    const isOrdered = ordered(out.dtype, p.mode);
    // Slices wider than 1 on an indexed axis can overlap across slice positions: one thread.
    const serial = isOrdered && p.axes.some((ax) => sliceShape[ax]! > 1);
    const threads = isOrdered ? (serial ? 1 : sliceN) : updates.size;
    launch(enc, kernelPipeline(scatterKernel(out.dtype, p.mode, large)), threads, [o, u.binding, ...b.slots], indexArgs(b, u, serial), {
      primitive: "Scatter",
      inputs: node.inputs,
      outputs: [out],
      layout: `${isOrdered ? (serial ? "ordered, one thread" : "ordered, one thread per slice position") : "atomic"}, ${p.mode}${what}${large ? ", large-index" : ""}`,
      precision: scatterPrecision(out.dtype, p.mode, isOrdered ? "updates applied in row-major order" : "atomic updates in hardware order"),
    });
  }
  checkLater(enc, idx, () => checkSliceIndices("scatter", a.shape, idx, p.axes, sliceShape), node);
}

registerGpu(Scatter, {
  kind: "kernel",
  kernels: (node) => {
    const p = node.params;
    const ins = node.inputs;
    return scatterKernels(ins[0]!, ins[ins.length - 1]!, node.outputs[0]!, p.mode, false, ins.slice(1, -1));
  },
  encode: encodeScatter,
});

function encodeScatterAxis(enc: GpuEncoder, node: Node<ScatterAxisParams>): void {
  const p = node.params;
  const [a, idx, updates] = node.inputs as [MgArray, MgArray, MgArray];
  const out = node.outputs[0]!;
  const large = needsLargeIndex(Math.max(out.size, updates.size), node.inputs);
  if (updates.size === 0) {
    copySource(enc, a, out, "ScatterAxis");
    return;
  }
  const outStrides = rowMajorStrides(out.shape);
  const axisArgs = (i: { strides: readonly number[]; base: number; rowContiguous: boolean }, u: { strides: readonly number[]; base: number; rowContiguous: boolean }): InlineBytes[] => [
    int32Bytes(3, idx.shape),
    int64Bytes(4, i.strides),
    int64Bytes(5, u.strides),
    int64Bytes(6, outStrides.map((s, d) => (d === p.axis ? 0 : s))),
    int32Bytes(7, [idx.ndim, indexKind(idx.dtype, "put_along_axis"), i.rowContiguous ? 1 : 0, u.rowContiguous ? 1 : 0]),
    int64Bytes(8, [i.base, u.base, updates.size, out.shape[p.axis]!, outStrides[p.axis]!]),
  ];
  if (p.mode === "none") {
    checkNoneLimits("put_along_axis", updates, out);
    allocateForAtomics(out, "none");
    encodeWinners(enc, "ScatterAxis", node.inputs, a, updates, out, large, (w) => {
      const i = enc.input(idx, 2);
      launch(enc, kernelPipeline(winnerKernel(true, large)), updates.size, [w, i.binding], axisArgs(i, { strides: [0], base: 0, rowContiguous: true }), {
        primitive: "ScatterAxis", inputs: [idx], outputs: [out], layout: "winners: last update per element",
      });
    });
  } else {
    allocateForAtomics(out, "sum");
    copySource(enc, a, out, "ScatterAxis");
    const o = atomicOutput(enc, out);
    const u = enc.input(updates, 1);
    const i = enc.input(idx, 2);
    const [kernel] = scatterKernels(a, updates, out, "sum", true, [idx]).slice(-1);
    launch(enc, kernelPipeline(kernel!), updates.size, [o, u.binding, i.binding], axisArgs(i, u), {
      primitive: "ScatterAxis",
      inputs: node.inputs,
      outputs: [out],
      layout: `atomic, sum${large ? ", large-index" : ""}`,
      precision: scatterPrecision(out.dtype, "sum", "atomic updates in hardware order"),
    });
  }
  checkLater(enc, [idx], () => checkAxisIndices("put_along_axis", idx, p.axis, a.shape[p.axis]!), node);
}

registerGpu(ScatterAxis, {
  kind: "kernel",
  kernels: (node) => {
    const p = node.params;
    const [a, idx, u] = node.inputs as [MgArray, MgArray, MgArray];
    return scatterKernels(a, u, node.outputs[0]!, p.mode, true, [idx]);
  },
  encode: encodeScatterAxis,
});

// ---------------------------------------------------------------------------------------------
// SliceUpdate, DynamicSlice, DynamicSliceUpdate

const SLICE_UPDATE_OP: Record<UpdateMode, string> = { none: "UpdateNone", sum: "UpdateSum", prod: "UpdateProd", max: "UpdateMaxNan", min: "UpdateMinNan" };

function sliceUpdateKernel(d: Dtype, mode: UpdateMode, large: boolean): KernelInstance {
  // Assignment moves bits; the reducing modes compute in the dtype.
  const [T, tag] = mode === "none" ? [bitsType(d), bitsTag(d)] : [mslType(d, "slice_update"), dtypeTag(d)];
  return { file: "slicing.metal", name: `mg_slice_update_${tag}_${mode}_${idxTag(large)}`, instantiation: `slice_update<${T}, ${SLICE_UPDATE_OP[mode]}, ${idxType(large)}>` };
}

function encodeSliceUpdate(enc: GpuEncoder, node: Node<SliceUpdateParams>): void {
  const p = node.params;
  const [a, updates] = node.inputs as [MgArray, MgArray];
  const out = node.outputs[0]!;
  copySource(enc, a, out, "SliceUpdate");
  if (updates.size === 0) return;
  const large = needsLargeIndex(out.size, node.inputs);
  const outStrides = rowMajorStrides(out.shape);
  const base = p.start.reduce((acc, s, d) => acc + s * outStrides[d]!, 0);
  const o = enc.output(out, 0, "readwrite");
  const u = enc.input(updates, 1);
  launch(
    enc,
    kernelPipeline(sliceUpdateKernel(out.dtype, p.mode, large)),
    updates.size,
    [o.binding, u.binding],
    [
      int32Bytes(2, updates.shape),
      int64Bytes(3, u.strides),
      int64Bytes(4, outStrides.map((s, d) => s * p.strides[d]!)),
      int32Bytes(5, [updates.ndim, u.rowContiguous ? 1 : 0]),
      int64Bytes(6, [u.base, base, updates.size]),
    ],
    {
      primitive: "SliceUpdate",
      inputs: node.inputs,
      outputs: [out],
      layout: `${p.mode}, ${layoutLabel([updates], large)} update`,
      precision: p.mode === "none" || p.mode === "max" || p.mode === "min" ? Precision.none : elementwisePrecision(out.dtype),
    },
  );
}

registerGpu(SliceUpdate, {
  kind: "kernel",
  kernels: (node) => {
    const p = node.params;
    return [sourceCopyKernel(node.inputs[0]!), sliceUpdateKernel(node.outputs[0]!.dtype, p.mode, needsLargeIndex(node.outputs[0]!.size, node.inputs))];
  },
  encode: encodeSliceUpdate,
});

/** Per axis of the sliced array: which start belongs to it, or -1. */
function startOfAxis(ndim: number, axes: readonly number[]): number[] {
  const m = new Array<number>(ndim).fill(-1);
  axes.forEach((ax, k) => (m[ax] = k));
  return m;
}

function dynamicSliceKernel(d: Dtype, large: boolean): KernelInstance {
  return { file: "slicing.metal", name: `mg_dynamic_slice_${bitsTag(d)}_${idxTag(large)}`, instantiation: `dynamic_slice<${bitsType(d)}, ${idxType(large)}>` };
}

function encodeDynamicSlice(enc: GpuEncoder, node: Node<DynamicSliceParams>): void {
  const p = node.params;
  const [a, start] = node.inputs as [MgArray, MgArray];
  const out = node.outputs[0]!;
  const large = needsLargeIndex(out.size, [a]);
  const s = enc.input(a, 0);
  const o = enc.output(out, 1);
  const st = enc.input(start, 2);
  launch(
    enc,
    kernelPipeline(dynamicSliceKernel(a.dtype, large)),
    out.size,
    [s.binding, o.binding, st.binding],
    [
      int32Bytes(3, a.shape),
      int64Bytes(4, s.strides),
      int32Bytes(5, out.shape),
      int32Bytes(6, startOfAxis(a.ndim, p.axes)),
      int32Bytes(7, [a.ndim, indexKind(start.dtype, "slice")]),
      int64Bytes(8, [st.base, st.strides[0] ?? 0, s.base, out.size]),
    ],
    { primitive: "DynamicSlice", inputs: node.inputs, outputs: [out], layout: layoutLabel([a], large) },
    [1],
  );
  checkLater(enc, [start], () => checkDynamicStart("slice", a.shape, start, p.axes, out.shape), node);
}

registerGpu(DynamicSlice, {
  kind: "kernel",
  kernels: (node) => [dynamicSliceKernel(node.inputs[0]!.dtype, needsLargeIndex(node.outputs[0]!.size, [node.inputs[0]!]))],
  encode: encodeDynamicSlice,
});

function dynamicSliceUpdateKernel(d: Dtype, large: boolean): KernelInstance {
  return { file: "slicing.metal", name: `mg_dynamic_slice_update_${bitsTag(d)}_${idxTag(large)}`, instantiation: `dynamic_slice_update<${bitsType(d)}, ${idxType(large)}>` };
}

function encodeDynamicSliceUpdate(enc: GpuEncoder, node: Node<DynamicSliceUpdateParams>): void {
  const p = node.params;
  const [a, updates, start] = node.inputs as [MgArray, MgArray, MgArray];
  const out = node.outputs[0]!;
  copySource(enc, a, out, "DynamicSliceUpdate");
  if (updates.size > 0) {
    const large = needsLargeIndex(out.size, [a, updates]);
    const o = enc.output(out, 0, "readwrite");
    const u = enc.input(updates, 1);
    const st = enc.input(start, 2);
    launch(
      enc,
      kernelPipeline(dynamicSliceUpdateKernel(a.dtype, large)),
      updates.size,
      [o.binding, u.binding, st.binding],
      [
        int32Bytes(3, out.shape),
        int64Bytes(4, rowMajorStrides(out.shape)),
        int32Bytes(5, updates.shape),
        int64Bytes(6, u.strides),
        int32Bytes(7, startOfAxis(a.ndim, p.axes)),
        int32Bytes(8, [a.ndim, indexKind(start.dtype, "slice_update"), u.rowContiguous ? 1 : 0]),
        int64Bytes(9, [st.base, st.strides[0] ?? 0, u.base, updates.size]),
      ],
      { primitive: "DynamicSliceUpdate", inputs: node.inputs, outputs: [out], layout: layoutLabel([updates], large) },
    );
  }
  checkLater(enc, [start], () => checkDynamicStart("slice_update", a.shape, start, p.axes, updates.shape), node);
}

registerGpu(DynamicSliceUpdate, {
  kind: "kernel",
  kernels: (node) => [sourceCopyKernel(node.inputs[0]!), dynamicSliceUpdateKernel(node.inputs[0]!.dtype, needsLargeIndex(node.outputs[0]!.size, node.inputs.slice(0, 2)))],
  encode: encodeDynamicSliceUpdate,
});

