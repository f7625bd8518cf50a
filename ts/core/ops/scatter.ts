// MLX's C++-level building blocks for indexing: gather, scatter (none/sum/prod/max/min), their
// along-one-axis forms, the static slice update with a reduce mode, and the raw dynamic slices.
// Public ops (take, a.index(...), a.at(...), pad …) and derivative rules are written with these.
// They are not part of mx's Python namespace, so ts/index.ts does not export them.
import type { MgArray } from "../array.ts";
import { bool_, type Dtype, isInexact, promoteTypes } from "../dtype.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import {
  DynamicSlice, DynamicSliceUpdate, Gather, GatherAxis, Scatter, ScatterAxis, SliceUpdate,
  sliceRegionShape, type UpdateMode,
} from "../primitives/indexing.ts";
import { broadcastShapes, formatShape, shapesEqual, shapeSize } from "../shape.ts";
import type { StreamOptions } from "./convert.ts";
import { add, astype, maximum, minimum, multiply } from "./elementwise.ts";
import { broadcastAll, broadcastToShape } from "./broadcast.ts";

export type { UpdateMode };

export interface IndexingOptions extends StreamOptions {
  /** The user-facing op named in error messages (default: the building block's own name). */
  op?: string;
}

/** One integer dtype for a set of index arrays (MLX's result_type); rejects bool and floats. */
export function indexDtype(indices: readonly MgArray[], op: string): Dtype | null {
  if (indices.length === 0) return null;
  for (const x of indices) {
    if (x.dtype === bool_) throw new TypeError(`[${op}] Boolean indices not supported.`);
  }
  const dtype = indices.map((x) => x.dtype).reduce(promoteTypes);
  if (isInexact(dtype)) {
    throw new TypeError(`[${op}] Got indices with invalid dtype ${dtype.name}. Indices must be integral.`);
  }
  return dtype;
}

function checkAxes(axes: readonly number[], ndim: number, nIndices: number, op: string): void {
  if (new Set(axes).size !== axes.length) throw new Error(`[${op}] Repeat axes not allowed in ${op}.`);
  if (axes.some((ax) => !Number.isInteger(ax) || ax < 0 || ax >= ndim)) {
    throw new RangeError(`[${op}] Axes don't match array dimensions.`);
  }
  if (nIndices !== axes.length) throw new Error(`[${op}] Number of index arrays does not match number of axes.`);
}

/**
 * Gathers slices of `a` (MLX's gather): for every position i of the broadcast index arrays, the
 * slice of extent `sliceSizes` starting at indices[k][i] on axes[k] (0 on other axes). The
 * output shape is broadcastShape(indices) ++ sliceSizes. Indices are not bounds-checked unless
 * MG_CHECK_INDICES=1 (the policy is in ts/core/primitives/indexing.ts).
 */
export function gather(a: MgArray, indices: readonly MgArray[], axes: readonly number[], sliceSizes: readonly number[], opts: IndexingOptions = {}): MgArray {
  const op = opts.op ?? "gather";
  if (indices.length > a.ndim) {
    throw new Error(`[${op}] Too many index arrays. Got ${indices.length} index arrays for input with ${a.ndim} dimensions.`);
  }
  checkAxes(axes, a.ndim, indices.length, op);
  if (sliceSizes.length !== a.ndim) {
    throw new Error(`[${op}] Got slice_sizes with size ${sliceSizes.length} for array with ${a.ndim} dimensions.`);
  }
  const dtype = indexDtype(indices, op);
  let idx = indices.length > 0 ? broadcastAll(indices, op, opts.stream) : [];
  idx = idx.map((x) => astype(x, dtype!, opts));
  if (a.size === 0) {
    const idxSize = idx.length > 0 ? idx[0]!.size : 1;
    if (idxSize !== 0 && shapeSize(sliceSizes) !== 0) {
      throw new Error(`[${op}] Cannot gather from an empty array: either the indices must be empty or the total slice size must be 0.`);
    }
  } else {
    for (let i = 0; i < a.ndim; i++) {
      const s = sliceSizes[i]!;
      if (!Number.isInteger(s) || s < 0 || s > a.shape[i]!) {
        throw new RangeError(`[${op}] Slice sizes must be in [0, a.shape(i)]. Got ${formatShape(sliceSizes)} for array with shape ${formatShape(a.shape)}.`);
      }
    }
  }
  return makeArray(Gather, [a, ...idx], { axes: [...axes], sliceSizes: [...sliceSizes] }, resolveStream(opts.stream));
}

/**
 * Combines `updates` into a copy of `a` at the positions given by the index arrays (MLX's
 * scatter): updates has shape broadcastShape(indices) ++ sliceShape with a's rank, and is cast
 * to a's dtype. Every update applies, in row-major order, so duplicates accumulate ("sum",
 * "prod", "max", "min") or the last one wins ("none").
 */
export function scatter(a: MgArray, indices: readonly MgArray[], updates: MgArray, axes: readonly number[], mode: UpdateMode = "none", opts: IndexingOptions = {}): MgArray {
  const op = opts.op ?? "scatter";
  if (indices.length > a.ndim) {
    throw new Error(`[${op}] Too many index arrays. Got ${indices.length} index arrays for input with ${a.ndim} dimensions.`);
  }
  checkAxes(axes, a.ndim, indices.length, op);
  const dtype = indexDtype(indices, op);
  let idx = indices.length > 0 ? broadcastAll(indices, op, opts.stream) : [];
  const idxShape = idx.length > 0 ? idx[0]!.shape : [];
  if (updates.ndim !== a.ndim + idxShape.length) {
    throw new Error(`[${op}] Updates with ${updates.ndim} dimensions does not match the sum of the array (${a.ndim}) and indices (${idxShape.length}) dimensions.`);
  }
  for (let i = 0; i < idxShape.length; i++) {
    if (updates.shape[i] !== idxShape[i]) {
      throw new Error(`[${op}] Update shape ${formatShape(updates.shape)} is not valid for broadcasted index shape ${formatShape(idxShape)}.`);
    }
  }
  for (let i = 0; i < a.ndim; i++) {
    if (updates.shape[i + idxShape.length]! > a.shape[i]!) {
      throw new Error(`[${op}] Updates with shape ${formatShape(updates.shape)} are too large for array with shape ${formatShape(a.shape)}.`);
    }
  }
  idx = idx.map((x) => astype(x, dtype!, opts));
  return makeArray(Scatter, [a, ...idx, astype(updates, a.dtype, opts)], { mode, axes: [...axes] }, resolveStream(opts.stream));
}

export const scatterAdd = (a: MgArray, indices: readonly MgArray[], updates: MgArray, axes: readonly number[], opts: IndexingOptions = {}) =>
  scatter(a, indices, updates, axes, "sum", opts);
export const scatterProd = (a: MgArray, indices: readonly MgArray[], updates: MgArray, axes: readonly number[], opts: IndexingOptions = {}) =>
  scatter(a, indices, updates, axes, "prod", opts);

/** GatherAxis on arrays that already agree off `axis` (take_along_axis after broadcasting). */
export function gatherAxis(a: MgArray, indices: MgArray, axis: number, opts: IndexingOptions = {}): MgArray {
  const op = opts.op ?? "take_along_axis";
  const dtype = indexDtype([indices], op)!;
  checkOffAxis([a.shape, indices.shape], axis, op);
  return makeArray(GatherAxis, [a, astype(indices, dtype, opts)], { axis }, resolveStream(opts.stream));
}

/** ScatterAxis on arrays that already agree (put_along_axis after broadcasting). */
export function scatterAxis(a: MgArray, indices: MgArray, updates: MgArray, axis: number, mode: "none" | "sum", opts: IndexingOptions = {}): MgArray {
  const op = opts.op ?? (mode === "none" ? "put_along_axis" : "scatter_add_axis");
  const dtype = indexDtype([indices], op)!;
  if (!shapesEqual(indices.shape, updates.shape)) {
    throw new Error(`[${op}] Indices ${formatShape(indices.shape)} and updates ${formatShape(updates.shape)} must have the same shape.`);
  }
  checkOffAxis([a.shape, indices.shape], axis, op);
  return makeArray(ScatterAxis, [a, astype(indices, dtype, opts), astype(updates, a.dtype, opts)], { mode, axis }, resolveStream(opts.stream));
}

function checkOffAxis(shapes: readonly (readonly number[])[], axis: number, op: string): void {
  const first = shapes[0]!;
  for (const s of shapes) {
    if (s.length !== first.length || s.some((d, i) => i !== axis && d !== first[i])) {
      throw new Error(`[${op}] Shapes ${shapes.map(formatShape).join(" and ")} must agree on every axis but ${axis}.`);
    }
  }
}

/** The dims of `shapes` broadcast together except on `axis`, where each keeps its own size. */
export function broadcastOffAxis(shapes: readonly (readonly number[])[], axis: number, op: string): number[][] {
  const off = shapes.map((s) => s.filter((_, i) => i !== axis));
  const common = broadcastShapes(off, op);
  return shapes.map((s) => {
    const r = [...common];
    r.splice(axis, 0, s[axis]!);
    return r;
  });
}

/**
 * a with the region a[start:stop:strides] replaced by (mode "none") or combined with `update`
 * (MLX's slice_update / slice_update_add …). Bounds are normalised as Slice's; the update is cast
 * to a's dtype and broadcast to the region's shape.
 */
export function sliceUpdateStatic(
  a: MgArray,
  update: MgArray,
  start: readonly number[],
  stop: readonly number[],
  strides: readonly number[],
  mode: UpdateMode = "none",
  opts: IndexingOptions = {},
): MgArray {
  const op = opts.op ?? "slice_update";
  if (start.length !== a.ndim || stop.length !== a.ndim || strides.length !== a.ndim) {
    throw new Error(`[${op}] Invalid number of indices or strides for array with dimension ${a.ndim}.`);
  }
  const p = { mode, start: [...start], stop: [...stop], strides: [...strides] };
  const region = sliceRegionShape(p);
  const upd = broadcastToShape(astype(update, a.dtype, opts), region, op, opts.stream);
  const whole = shapesEqual(region, a.shape) && p.strides.every((s, i) => s > 0 || region[i]! <= 1) && p.start.every((s, i) => s === 0 || region[i] === 0);
  if (whole) {
    switch (mode) {
      case "none": return upd;
      case "sum": return add(a, upd, opts);
      case "prod": return multiply(a, upd, opts);
      case "max": return maximum(a, upd, opts);
      case "min": return minimum(a, upd, opts);
    }
  }
  return makeArray(SliceUpdate, [a, upd], p, resolveStream(opts.stream));
}

/** DynamicSlice node; callers have validated axes, start and sizes (see `slice` in indexing.ts). */
export function dynamicSliceRaw(a: MgArray, start: MgArray, axes: readonly number[], sliceSize: readonly number[], opts: StreamOptions = {}): MgArray {
  return makeArray(DynamicSlice, [a, start], { axes: [...axes], sliceSize: [...sliceSize] }, resolveStream(opts.stream));
}

/** DynamicSliceUpdate node; the update already has a's rank and dtype. */
export function dynamicSliceUpdateRaw(a: MgArray, update: MgArray, start: MgArray, axes: readonly number[], opts: StreamOptions = {}): MgArray {
  return makeArray(DynamicSliceUpdate, [a, astype(update, a.dtype, opts), start], { axes: [...axes] }, resolveStream(opts.stream));
}
