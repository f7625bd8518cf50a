// Shape ops that view data: reshape, flatten, squeeze, expand_dims, transpose, broadcasting.
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { Reshape, Slice, Transpose } from "../primitives/views.ts";
import { axisList, broadcastShapes as broadcastShapeList, checkShape, formatShape, normalizeAxes, normalizeAxis, shapeSize, shapesEqual } from "../shape.ts";
import { broadcastAll, broadcastToShape } from "./broadcast.ts";
import { type ArrayInput, splitOptions, type StreamOptions, toArray } from "./convert.ts";

/** Resolves one -1 in a requested shape for `size` elements and checks the element count. */
function resolveShape(size: number, shape: readonly number[], op: string): number[] {
  if (typeof shape === "number") shape = [shape];
  if (!Array.isArray(shape)) throw new TypeError(`[${op}] shape must be an integer or a list of integers, got ${typeof shape}.`);
  const out = [...shape];
  let infer = -1;
  let known = 1;
  for (let i = 0; i < out.length; i++) {
    const d = out[i]!;
    if (d === -1) {
      if (infer >= 0) throw new Error(`[${op}] Can only infer one dimension.`);
      infer = i;
    } else if (!Number.isInteger(d) || d < 0) {
      throw new Error(`[${op}] Invalid dimension ${d} in shape ${formatShape(shape)}.`);
    } else known *= d;
  }
  if (infer >= 0) {
    if (known === 0 || size % known !== 0) {
      throw new Error(`[${op}] Cannot infer the shape of an array of size ${size} into shape ${formatShape(shape)}.`);
    }
    out[infer] = size / known;
  }
  if (shapeSize(out) !== size) {
    throw new Error(`[${op}] Cannot reshape array of size ${size} into shape ${formatShape(shape)}.`);
  }
  return out;
}

/**
 * The same elements in `shape` (one dimension may be −1); a view where the layout allows.
 * @example
 * mg.reshape(mg.arange(6), [2, -1])
 */
export function reshape(a: ArrayInput, shape: readonly number[], opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "reshape");
  const s = resolveShape(x.size, shape, "reshape");
  if (shapesEqual(s, x.shape)) return x;
  return makeArray(Reshape, [x], { shape: s }, resolveStream(opts.stream));
}

/**
 * Flattens axes startAxis..endAxis (inclusive) into one, as mx.flatten.
 * @example
 * mg.flatten(mg.ones([2, 3, 4]), 1).shape
 */
export function flatten(a: ArrayInput, startAxis = 0, endAxis = -1, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "flatten");
  if (x.ndim === 0) return reshape(x, [1], opts);
  const s = normalizeAxis(startAxis, x.ndim, "flatten");
  const e = normalizeAxis(endAxis, x.ndim, "flatten");
  if (s > e) throw new Error("[flatten] start_axis must be less than or equal to end_axis.");
  const shape = [...x.shape.slice(0, s), shapeSize(x.shape.slice(s, e + 1)), ...x.shape.slice(e + 1)];
  return reshape(x, shape, opts);
}

/**
 * Splits one axis into `shape`, as mx.unflatten.
 * @example
 * mg.unflatten(mg.arange(6), 0, [2, 3])
 */
export function unflatten(a: ArrayInput, axis: number, shape: readonly number[], opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "unflatten");
  const ax = normalizeAxis(axis, x.ndim, "unflatten");
  if (shape.length === 0) throw new Error("[unflatten] The shape must have at least one dimension.");
  const inner = resolveShape(x.shape[ax]!, shape, "unflatten");
  return reshape(x, [...x.shape.slice(0, ax), ...inner, ...x.shape.slice(ax + 1)], opts);
}

/**
 * The array without its size-1 axes (or only those in `axis`).
 * @example
 * mg.squeeze(mg.ones([1, 3, 1])).shape
 */
export function squeeze(a: ArrayInput, axis?: number | readonly number[] | null, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "squeeze");
  let axes: number[];
  if (axis === undefined || axis === null) axes = x.shape.flatMap((d, i) => (d === 1 ? [i] : []));
  else {
    axes = normalizeAxes(axis, x.ndim, "squeeze");
    for (const ax of axes) {
      if (x.shape[ax] !== 1) throw new Error(`[squeeze] Cannot squeeze axis ${ax} with size ${x.shape[ax]} which is not equal to 1.`);
    }
  }
  return reshape(x, x.shape.filter((_, i) => !axes.includes(i)), opts);
}

/**
 * The array with a new size-1 axis at `axis` (or at each of several).
 * @example
 * mg.expandDims(mg.array([1, 2]), 0).shape
 */
export function expandDims(a: ArrayInput, axis: number | readonly number[], opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "expand_dims");
  const list = axisList(axis, "expand_dims");
  const outNdim = x.ndim + list.length;
  const axes = normalizeAxes(list, outNdim, "expand_dims");
  const shape: number[] = [];
  let k = 0;
  for (let i = 0; i < outNdim; i++) shape.push(axes.includes(i) ? 1 : x.shape[k++]!);
  return reshape(x, shape, opts);
}

/**
 * The axes permuted by `axes` (reversed when omitted); a view. `permuteDims` is the same function.
 * @example
 * mg.transpose(mg.array([[1, 2, 3]]))
 */
export function transpose(a: ArrayInput, axes?: readonly number[] | null, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "transpose");
  let perm: number[];
  if (axes === undefined || axes === null) perm = Array.from({ length: x.ndim }, (_, i) => x.ndim - 1 - i);
  else {
    if (axes.length !== x.ndim) {
      throw new Error(`[transpose] Received ${axes.length} axes for array with ${x.ndim} dimensions.`);
    }
    perm = axes.map((ax) => normalizeAxis(ax, x.ndim, "transpose"));
    if (new Set(perm).size !== perm.length) throw new Error("[transpose] Repeat axes not allowed.");
  }
  if (perm.every((p, i) => p === i)) return x;
  return makeArray(Transpose, [x], { axes: perm }, resolveStream(opts.stream));
}

// The array-API spelling of transpose, as mx.permute_dims (the same function).
export const permuteDims = transpose;

/**
 * Swaps the last two axes, as mx.matrix_transpose (a view); the array must be at least 2-D.
 * @example
 * mg.matrixTranspose(mg.ones([5, 2, 3])).shape
 */
export function matrixTranspose(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "matrix_transpose");
  if (x.ndim < 2) throw new Error(`[matrix_transpose] Input array must have at least 2 dimensions, got ${x.ndim}.`);
  return swapaxes(x, -2, -1, opts);
}

/**
 * The array with two axes exchanged (a view).
 * @example
 * mg.swapaxes(mg.ones([2, 3, 4]), 0, 2).shape
 */
export function swapaxes(a: ArrayInput, axis1: number, axis2: number, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "swapaxes");
  const i = normalizeAxis(axis1, x.ndim, "swapaxes");
  const j = normalizeAxis(axis2, x.ndim, "swapaxes");
  const perm = Array.from({ length: x.ndim }, (_, k) => k);
  perm[i] = j;
  perm[j] = i;
  return transpose(x, perm, opts);
}

/**
 * The array with axis `source` moved to `destination` (a view).
 * @example
 * mg.moveaxis(mg.ones([2, 3, 4]), 0, -1).shape
 */
export function moveaxis(a: ArrayInput, source: number, destination: number, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "moveaxis");
  const s = normalizeAxis(source, x.ndim, "moveaxis");
  const d = normalizeAxis(destination, x.ndim, "moveaxis");
  const perm = Array.from({ length: x.ndim }, (_, k) => k).filter((k) => k !== s);
  perm.splice(d, 0, s);
  return transpose(x, perm, opts);
}

/**
 * `a` broadcast to `shape` (a view), as mx.broadcast_to.
 * @example
 * mg.broadcastTo(mg.array([1, 2]), [2, 2])
 */
export function broadcastTo(a: ArrayInput, shape: readonly number[], opts: StreamOptions = {}): MgArray {
  return broadcastToShape(toArray(a, "broadcast_to"), checkShape(shape, "broadcast_to"), "broadcast_to", opts.stream);
}

/**
 * The arrays broadcast to their common shape (views), as mx.broadcast_arrays(*arrays); a trailing
 *  options object may carry `stream`.
 * @example
 * mg.broadcastArrays(mg.array([1, 2]), mg.array([[1], [2]])).map((a) => a.shape)
 */
export function broadcastArrays(...args: (ArrayInput | StreamOptions)[]): MgArray[] {
  const [arrays, opts] = splitOptions(args);
  return broadcastAll(arrays.map((a) => toArray(a, "broadcast_arrays")), "broadcast_arrays", opts.stream);
}

/**
 * The shape the given shapes broadcast to, as mx.broadcast_shapes(*shapes): broadcastShapes([1],
 * [3, 1]) is [3, 1]. Throws when they cannot be broadcast together.
 * @example
 * mg.broadcastShapes([1, 3], [2, 1])
 */
export function broadcastShapes(...shapes: (readonly number[])[]): number[] {
  if (shapes.length === 0) throw new Error("[broadcast_shapes] Must provide at least one shape.");
  for (const s of shapes) {
    if (!Array.isArray(s)) {
      throw new TypeError(`[broadcast_shapes] Each shape must be a list of integers, got ${s === null ? "null" : typeof s}.`);
    }
    for (const d of s as unknown[]) {
      if (typeof d !== "number" || !Number.isInteger(d) || d < 0) {
        throw new TypeError(`[broadcast_shapes] Each dimension must be a non-negative integer, got ${String(d)} in ${formatShape(s)}.`);
      }
    }
  }
  return broadcastShapeList(shapes, "broadcast_shapes");
}

/**
 * Reverses the order of elements along the given axes (all when omitted), as mx.flip. A view.
 * @example
 * mg.flip(mg.array([[1, 2], [3, 4]]), 1)
 */
export function flip(a: ArrayInput, axis?: number | readonly number[] | null, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "flip");
  const axes = normalizeAxes(axis ?? null, x.ndim, "flip");
  if (axes.length === 0) return x;
  const start = x.shape.map((d, i) => (axes.includes(i) ? d - 1 : 0));
  const stop = x.shape.map((d, i) => (axes.includes(i) ? -1 : d));
  const strides = x.shape.map((_, i) => (axes.includes(i) ? -1 : 1));
  return makeArray(Slice, [x], { start, stop, strides }, resolveStream(opts.stream));
}
