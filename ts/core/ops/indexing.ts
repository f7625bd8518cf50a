// Public indexing ops: take, takeAlongAxis, putAlongAxis, and MLX's dynamic slice / sliceUpdate.
// Index expressions (a.index(...), a.at(...)) are in ./index-expr.ts, documented there.
import { type MgArray } from "../array.ts";
import { isInteger } from "../dtype.ts";
import { formatShape, normalizeAxis } from "../shape.ts";
import { type ArrayInput, type StreamOptions, toArray, weakScalar } from "./convert.ts";
import * as ew from "./elementwise.ts";
import { indexArray, staticIndex } from "./index-expr.ts";
import {
  broadcastOffAxis, dynamicSliceRaw, dynamicSliceUpdateRaw, gather, gatherAxis, indexDtype,
  scatterAxis,
} from "./scatter.ts";
import { broadcastAll, broadcastToShape } from "./broadcast.ts";
import { flatten, reshape, squeeze, transpose } from "./shape.ts";
import { sliceStatic } from "./slicing.ts";

export { Ellipsis, newaxis } from "./index-expr.ts";
export type { ArrayAt, IndexItem, SliceSpec } from "./index-expr.ts";

// ---------------------------------------------------------------------------------------------
// take / take_along_axis / put_along_axis

function checkAxisArg(axis: number, ndim: number, op: string): number {
  if (!Number.isInteger(axis) || axis < -ndim || axis >= ndim) {
    throw new RangeError(`[${op}] Received invalid axis ${axis} for array with ${ndim} dimensions.`);
  }
  return axis < 0 ? axis + ndim : axis;
}

/**
 * Elements of `a` at `indices` along `axis` (of the flattened array when omitted), as mx.take:
 * the result's shape is a.shape[:axis] ++ indices.shape ++ a.shape[axis+1:]. An integer index
 * gives a view; an array index gathers (not bounds-checked, see the top of this file).
 * @example
 * mg.take(mg.array([10, 20, 30]), mg.array([2, 0]))
 */
export function take(a: ArrayInput, indices: number | bigint | ArrayInput, axis?: number | null, opts: StreamOptions = {}): MgArray {
  let x = toArray(a, "take");
  if (axis === undefined || axis === null) {
    x = flatten(x, 0, -1, opts);
    axis = 0;
  }
  const ax = checkAxisArg(axis, x.ndim, "take");
  if (typeof indices === "number" || typeof indices === "bigint") {
    if (x.size === 0) throw new Error("[take] Cannot do a non-empty take from an array with zero elements.");
    const i = staticIndex(indices, x.shape[ax]!, ax, "take");
    const start = x.shape.map(() => 0);
    const stop = [...x.shape];
    start[ax] = i;
    stop[ax] = i + 1;
    return squeeze(sliceStatic(x, start, stop, undefined, opts), ax, opts);
  }
  const idx = indexArray(indices, "take");
  if (x.shape[ax] === 0 && idx.size !== 0) throw new Error("[take] Cannot do a non-empty take from an empty axis.");
  const sizes = [...x.shape];
  sizes[ax] = 1;
  let out = gather(x, [idx], [ax], sizes, { ...opts, op: "take" });
  const k = idx.ndim;
  if (ax !== 0) {
    // gather puts the index dims first: move them to where `axis` was.
    const perm = [
      ...Array.from({ length: ax }, (_, i) => k + i),
      ...Array.from({ length: k }, (_, i) => i),
      ...Array.from({ length: out.ndim - k - ax }, (_, i) => k + ax + i),
    ];
    out = transpose(out, perm, opts);
  }
  return squeeze(out, k + ax, opts);
}

/**
 * a[..., indices[..., j, ...], ...] along `axis` (the flattened array when omitted), as
 * mx.take_along_axis: `indices` has a's rank and broadcasts with `a` on the other axes.
 * @example
 * mg.takeAlongAxis(mg.array([[3, 1], [2, 4]]), mg.array([[1], [0]]), 1)
 */
export function takeAlongAxis(a: ArrayInput, indices: ArrayInput, axis?: number | null, opts: StreamOptions = {}): MgArray {
  let x = toArray(a, "take_along_axis");
  const idx = indexArray(indices, "take_along_axis");
  if (axis === undefined || axis === null) {
    x = reshape(x, [x.size], opts);
    axis = 0;
  }
  const ax = normalizeAxis(axis, x.ndim, "take_along_axis");
  if (idx.ndim !== x.ndim) {
    throw new Error(`[take_along_axis] Indices of dimension ${idx.ndim} does not match array of dimension ${x.ndim}.`);
  }
  indexDtype([idx], "take_along_axis");
  const [sa, si] = broadcastOffAxis([x.shape, idx.shape], ax, "take_along_axis");
  const bx = broadcastToShape(x, sa!, "take_along_axis", opts.stream);
  const bi = broadcastToShape(idx, si!, "take_along_axis", opts.stream);
  return gatherAxis(bx, bi, ax, { ...opts, op: "take_along_axis" });
}

/**
 * A copy of `a` with `values` written at `indices` along `axis` (the flattened array when
 * omitted), as mx.put_along_axis. With repeated indices the last value wins.
 * @example
 * mg.putAlongAxis(mg.zeros([2, 3], mg.int32), mg.array([[1], [2]]), 7, 1)
 */
export function putAlongAxis(a: ArrayInput, indices: ArrayInput, values: ArrayInput, axis?: number | null, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "put_along_axis");
  const idx = indexArray(indices, "put_along_axis");
  if (axis === undefined || axis === null) {
    return reshape(putAlongAxis(reshape(x, [x.size], opts), idx, values, 0, opts), x.shape, opts);
  }
  const ax = normalizeAxis(axis, x.ndim, "put_along_axis");
  if (idx.ndim !== x.ndim) {
    throw new Error(`[put_along_axis] Indices of dimension ${idx.ndim} does not match array of dimension ${x.ndim}.`);
  }
  indexDtype([idx], "put_along_axis");
  if (x.size === 0) return x;
  let upd = ew.astype(weakScalar(values, x.dtype, "put_along_axis"), x.dtype, opts);
  if (upd.ndim > idx.ndim) upd = squeeze(upd, Array.from({ length: upd.ndim - idx.ndim }, (_, i) => i), opts);
  const op = "put_along_axis";
  const [bi, bu] = broadcastAll([idx, upd], op, opts.stream);
  const [sx, si, su] = broadcastOffAxis([x.shape, bi!.shape, bu!.shape], ax, op);
  const to = (y: MgArray, shape: number[]) => broadcastToShape(y, shape, op, opts.stream);
  return scatterAxis(to(x, sx!), to(bi!, si!), to(bu!, su!), ax, "none", { ...opts, op });
}

// ---------------------------------------------------------------------------------------------
// Dynamic slices (mx.slice / mx.slice_update)

/** MLX's normalize_dynamic_slice_inputs: the start array and axes, validated; axes normalised. */
function dynamicSliceInputs(a: MgArray, startIndices: ArrayInput, axes: readonly number[], op: string): [MgArray, number[]] {
  const start = indexArray(startIndices, op);
  if (start.size > a.ndim) throw new Error(`[${op}] Invalid number of starting positions for array with dimension ${a.ndim}.`);
  if (start.ndim > 1) {
    throw new Error(`[${op}] array of starting indices must be zero or one dimensional but has dimension ${start.ndim}.`);
  }
  if (start.size !== axes.length) {
    throw new Error(`[${op}] Number of starting indices ${start.size} does not match number of axes ${axes.length}.`);
  }
  if (!isInteger(start.dtype)) throw new TypeError(`[${op}] Start indices must be integers, got type ${start.dtype.name}.`);
  const norm = axes.map((ax) => {
    const n = Number.isInteger(ax) ? (ax < 0 ? ax + a.ndim : ax) : -1;
    if (n < 0 || n >= a.ndim) throw new RangeError(`[${op}] Invalid axis ${ax} for array with dimension ${a.ndim}.`);
    return n;
  });
  if (new Set(norm).size !== norm.length) throw new Error(`[${op}] Repeat axes not allowed.`);
  return [start, norm];
}

/**
 * The slice of extent `sliceSize` (one size per axis of `a`) that starts at `startIndices` on
 * `axes` and at 0 on the others, as mx.slice — the start is an array, so it can be computed
 * lazily. Positions past the array's end read 0 (MG_CHECK_INDICES=1 makes them an error).
 * @example
 * mg.slice(mg.arange(10), mg.array([3]), [0], [4])
 */
export function slice(a: ArrayInput, startIndices: ArrayInput, axes: readonly number[], sliceSize: readonly number[], opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "slice");
  const [start, ax] = dynamicSliceInputs(x, startIndices, axes, "slice");
  if (sliceSize.length !== x.ndim) throw new Error(`[slice] Invalid slice size for array with ${x.ndim} dimensions.`);
  sliceSize.forEach((s, i) => {
    if (!Number.isInteger(s) || s < 0 || s > x.shape[i]!) {
      throw new RangeError(`[slice] Invalid slice size ${formatShape(sliceSize)} for array with shape ${formatShape(x.shape)}.`);
    }
  });
  return dynamicSliceRaw(x, start, ax, sliceSize, opts);
}

/**
 * A copy of `a` with `update` written at `startIndices` on `axes` (0 on the others), as
 * mx.slice_update. The update is cast to a's dtype and broadcast to its region: missing leading
 * axes take a's sizes (1 on the sliced axes).
 * @example
 * mg.sliceUpdate(mg.zeros([5], mg.int32), mg.array([7, 8]), mg.array([1]), [0])
 */
export function sliceUpdate(a: ArrayInput, update: ArrayInput, startIndices: ArrayInput, axes: readonly number[], opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "slice_update");
  const [start, ax] = dynamicSliceInputs(x, startIndices, axes, "slice_update");
  const u = weakScalar(update, x.dtype, "slice_update");
  if (u.ndim > x.ndim) {
    throw new Error(`[slice_update] The update ${formatShape(u.shape)} has more dimensions than the array ${formatShape(x.shape)}.`);
  }
  const lead = x.ndim - u.ndim;
  const shape = [...x.shape.slice(0, lead), ...u.shape.map((d, i) => Math.min(d, x.shape[lead + i]!))];
  for (const a of ax) if (a < lead) shape[a] = 1;
  const upd = broadcastToShape(ew.astype(u, x.dtype, opts), shape, "slice_update", opts.stream);
  return dynamicSliceUpdateRaw(x, upd, start, ax, opts);
}
