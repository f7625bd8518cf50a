// Sorting and updates on the native CPU kernels: Sort/ArgSort/Partition/ArgPartition
// (Sources/MGCpu/sort.cpp: stable, NaN last, the reference's fully sorted lane for partitions) and
// Scatter/ScatterAxis/SliceUpdate/DynamicSliceUpdate (Sources/MGCpu/scatter.cpp: a copy of the
// source, then every update in order); DynamicSlice as a strided copy. Indices out of range, and
// starts that leave the array, decline to the reference (which zero-fills, drops or reports).
import type { MgArray } from "../../../core/array.ts";
import type { UpdateMode } from "../../../core/primitives/indexing.ts";
import { native } from "./ffi.ts";
import { addressOf, allocate, copyStrided, desc, discard, pushShape, pushStrides, rowMajor } from "./kernels.ts";

/** Sort (indices false) or ArgSort (true) along `axis`; Partition and ArgPartition likewise. */
export function runSort([a]: readonly MgArray[], [out]: readonly MgArray[], axis: number, indices: boolean): boolean {
  if (!a || !out || a.ndim === 0) return false;
  const nonEmpty = out.size > 0;
  if (nonEmpty && addressOf(a) < 0) return false;
  if (!allocate([out])) return false;
  desc.n = 0;
  desc.reserve(8 + 2 * a.ndim);
  desc.push(a.ndim);
  desc.push(a.dtype.index);
  pushShape(a.shape);
  desc.push(nonEmpty ? addressOf(a) : 0);
  pushStrides(a);
  desc.push(axis);
  desc.push(nonEmpty ? addressOf(out) : 0);
  desc.push(indices ? 1 : 0);
  if (desc.call(native().mg_cpu_sort)) return true;
  discard([out]);
  return false;
}

const MODES: Record<UpdateMode, number> = { none: 0, sum: 1, prod: 2, max: 3, min: 4 };

/** The common head of an update descriptor: the source, the output and the updates. */
function updateHead(src: MgArray, out: MgArray, updates: MgArray, mode: UpdateMode, nanMax: boolean, kind: number): void {
  const nonEmpty = out.size > 0;
  desc.n = 0;
  desc.reserve(16 + 4 * src.ndim + 4 * updates.ndim);
  desc.push(src.dtype.index);
  desc.push(MODES[mode]);
  desc.push(nanMax ? 1 : 0);
  desc.push(src.ndim);
  pushShape(src.shape);
  desc.push(nonEmpty ? addressOf(src) : 0);
  pushStrides(src);
  desc.push(nonEmpty ? addressOf(out) : 0);
  desc.push(kind);
  desc.push(updates.ndim);
  pushShape(updates.shape);
  desc.push(nonEmpty && updates.size > 0 ? addressOf(updates) : 0);
  pushStrides(updates);
}

function ready(out: MgArray, ...operands: (MgArray | undefined)[]): boolean {
  if (!out) return false;
  if (out.size > 0) for (const a of operands) if (!a || (a.size > 0 && addressOf(a) < 0)) return false;
  return allocate([out]);
}

function call(out: MgArray): boolean {
  if (desc.call(native().mg_cpu_scatter)) return true;
  discard([out]);
  return false;
}

/** out = src; then out[start + region strides] ⊕= update (static slice update). */
export function runSliceUpdate([src, upd]: readonly MgArray[], [out]: readonly MgArray[], start: readonly number[], strides: readonly number[], mode: UpdateMode): boolean {
  if (!src || !upd || !out || !ready(out, src, upd)) return false;
  const os = rowMajor(src.shape);
  updateHead(src, out, upd, mode, true, 0);
  desc.push(start.reduce((acc, s, d) => acc + s * os[d]!, 0));
  for (let d = 0; d < upd.ndim; d++) desc.push(os[d]! * strides[d]!);
  return call(out);
}

/** out = src; out[start : start + update.shape] = update, the start read from its array. */
export function runDynamicSliceUpdate([src, upd, start]: readonly MgArray[], [out]: readonly MgArray[], axes: readonly number[]): boolean {
  if (!src || !upd || !start || !out) return false;
  const starts = src.shape.map(() => 0);
  const given = Array.from(start.dataSync() as ArrayLike<number | bigint>, Number);
  given.forEach((v, k) => (starts[axes[k]!] = v));
  if (starts.some((s, d) => !(s >= 0 && s + upd.shape[d]! <= src.shape[d]!))) return false;
  return runSliceUpdate([src, upd], [out], starts, starts.map(() => 1), "none");
}

/** out = src[start : start + out.shape], the start read from its array: a strided copy. */
export function runDynamicSlice([src, start]: readonly MgArray[], [out]: readonly MgArray[], axes: readonly number[]): boolean {
  if (!src || !start || !out) return false;
  const starts = src.shape.map(() => 0);
  Array.from(start.dataSync() as ArrayLike<number | bigint>, Number).forEach((v, k) => (starts[axes[k]!] = v));
  if (starts.some((s, d) => !(s >= 0 && s + out.shape[d]! <= src.shape[d]!))) return false;
  if (out.size > 0 && addressOf(src) < 0) return false;
  if (!allocate([out])) return false;
  if (out.size === 0) return true;
  const st = src.layout!.strides;
  const offset = starts.reduce((acc, s, d) => acc + s * st[d]!, 0);
  if (copyStrided(out.shape, src.dtype.size, addressOf(src) + offset * src.dtype.size, st, addressOf(out), rowMajor(out.shape))) return true;
  discard([out]);
  return false;
}

/** out = src; out[…, idx[…, j, …], …] ⊕= updates[…, j, …] along `axis`. */
export function runScatterAxis([src, idx, upd]: readonly MgArray[], [out]: readonly MgArray[], axis: number, mode: UpdateMode): boolean {
  if (!src || !idx || !upd || !out || idx.ndim !== src.ndim || !upd.shape.every((d, i) => d === idx.shape[i]) || upd.ndim !== idx.ndim) return false;
  if (!ready(out, src, idx, upd)) return false;
  updateHead(src, out, upd, mode, false, 1);
  desc.push(axis);
  desc.push(out.size > 0 && idx.size > 0 ? addressOf(idx) : 0);
  desc.push(idx.dtype.index);
  pushStrides(idx);
  return call(out);
}

/** out = src; out[start(i) + s] ⊕= updates[i, s] for every index position i, in order. */
export function runScatter(inputs: readonly MgArray[], [out]: readonly MgArray[], axes: readonly number[], mode: UpdateMode): boolean {
  const src = inputs[0]!, upd = inputs[inputs.length - 1]!, idx = inputs.slice(1, -1);
  if (!out || upd.ndim < src.ndim || !ready(out, src, upd, ...idx)) return false;
  updateHead(src, out, upd, mode, false, 2);
  desc.push(idx.length);
  for (const x of idx) {
    if (x.ndim !== upd.ndim - src.ndim) {
      discard([out]);
      return false;
    }
    desc.push(out.size > 0 && x.size > 0 ? addressOf(x) : 0);
    desc.push(x.dtype.index);
    pushStrides(x);
  }
  for (const ax of axes) desc.push(ax);
  return call(out);
}
