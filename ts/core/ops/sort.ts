// Ordering ops: argmax, argmin, sort, argsort, partition, argpartition, topk, searchsorted.
// Index outputs are uint32, as MLX. An `axis` of null flattens the input first.
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { promoteTypes, uint32 } from "../dtype.ts";
import { makeArray } from "../graph.ts";
import { ArgReduce } from "../primitives/argreduce.ts";
import { ArgPartition, ArgSort, Partition, SearchSorted, Sort } from "../primitives/sort.ts";
import { checkKeepdims, formatShape, normalizeAxis } from "../shape.ts";
import { type ArrayInput, type StreamOptions, toArray } from "./convert.ts";
import { zeros } from "./creation.ts";
import { astype } from "./elementwise.ts";
import { flatten, reshape } from "./shape.ts";
import { sliceStatic } from "./slicing.ts";

function argReduce(type: "argmax" | "argmin", a: ArrayInput, axis: number | null | undefined, keepdims: boolean, opts: StreamOptions): MgArray {
  const o = opts;
  const keep = checkKeepdims(type, keepdims);
  const x = toArray(a, type);
  if (axis === undefined || axis === null) {
    // Over the flattened array; keepdims gives a (1, …, 1) result of the input's rank.
    const r = argReduce(type, flatten(x, 0, -1, o), 0, true, o);
    return reshape(r, keep ? x.shape.map(() => 1) : [], o);
  }
  if (x.size === 0) throw new Error(`[${type}] Cannot ${type} reduce zero size array.`);
  if (!Number.isInteger(axis)) throw new TypeError(`[${type}] axis must be an integer, got ${axis}.`);
  const ax = axis < 0 ? axis + x.ndim : axis;
  if (ax < 0 || ax >= x.ndim) throw new RangeError(`[${type}] Invalid axis ${axis} for array with ${x.ndim} dimensions.`);
  const keptShape = x.shape.map((d, i) => (i === ax ? 1 : d));
  // A size-1 axis has one candidate: index 0.
  const out = x.shape[ax] === 1
    ? zeros(keptShape, uint32, o)
    : makeArray(ArgReduce, [x], { type, axis: ax }, resolveStream(o.stream));
  return keep ? out : reshape(out, x.shape.filter((_, i) => i !== ax), o);
}

/**
 * Indices of the maximum along `axis` (all axes when null), as mx.argmax: uint32, the first index
 * on ties. NaN follows MLX's CPU backend: it never beats a number, but a NaN in first position is
 * never beaten either.
 * @example
 * mg.argmax(mg.array([[1, 9, 3], [7, 2, 7]]), 1)
 */
export function argmax(a: ArrayInput, axis?: number | null, keepdims = false, opts: StreamOptions = {}): MgArray {
  return argReduce("argmax", a, axis, keepdims, opts);
}

/**
 * Indices of the minimum along `axis`, as mx.argmin (see argmax for ties and NaN).
 * @example
 * mg.argmin(mg.array([3, 1, 2]))
 */
export function argmin(a: ArrayInput, axis?: number | null, keepdims = false, opts: StreamOptions = {}): MgArray {
  return argReduce("argmin", a, axis, keepdims, opts);
}

/** The input (flattened when axis is null) and the normalised axis. */
function axisInput(a: ArrayInput, axis: number | null | undefined, op: string, opts: StreamOptions): [MgArray, number] {
  const x = toArray(a, op);
  if (axis === null) return [flatten(x, 0, -1, opts), 0];
  return [x, normalizeAxis(axis ?? -1, x.ndim, op)];
}

/**
 * Sorted copy along `axis` (default -1; null sorts the flattened array), stable, NaN last.
 * @example
 * mg.sort(mg.array([[3, 1], [2, 4]]), 0)
 */
export function sort(a: ArrayInput, axis: number | null = -1, opts: StreamOptions = {}): MgArray {
  const [x, ax] = axisInput(a, axis, "sort", opts);
  return makeArray(Sort, [x], { axis: ax }, resolveStream(opts.stream));
}

/**
 * Indices (uint32) that sort along `axis`: stable (equal elements keep their order), NaN last.
 * @example
 * mg.argsort(mg.array([3, 1, 2]))
 */
export function argsort(a: ArrayInput, axis: number | null = -1, opts: StreamOptions = {}): MgArray {
  const [x, ax] = axisInput(a, axis, "argsort", opts);
  return makeArray(ArgSort, [x], { axis: ax }, resolveStream(opts.stream));
}

function checkKth(x: MgArray, kth: number, ax: number, axis: number | null, op: string): number {
  const n = x.shape[ax]!;
  const k = kth < 0 ? kth + n : kth;
  if (!Number.isInteger(kth) || k < 0 || k >= n) {
    throw new RangeError(`[${op}] Received invalid kth ${kth} along axis ${axis ?? 0} for array with shape: ${formatShape(x.shape)}.`);
  }
  return k;
}

/**
 * A copy along `axis` where the kth element is in its sorted position, everything before it is
 * not greater and everything after it is not smaller, as mx.partition. The order within each
 * side is unspecified (the CPU device returns it sorted).
 * @example
 * mg.partition(mg.array([5, 1, 4, 2]), 1)
 */
export function partition(a: ArrayInput, kth: number, axis: number | null = -1, opts: StreamOptions = {}): MgArray {
  const [x, ax] = axisInput(a, axis, "partition", opts);
  const k = checkKth(x, kth, ax, axis, "partition");
  return makeArray(Partition, [x], { kth: k, axis: ax }, resolveStream(opts.stream));
}

/**
 * Indices (uint32) that partition along `axis` around the kth element, as mx.argpartition.
 * @example
 * mg.argpartition(mg.array([5, 1, 4, 2]), 1)
 */
export function argpartition(a: ArrayInput, kth: number, axis: number | null = -1, opts: StreamOptions = {}): MgArray {
  const [x, ax] = axisInput(a, axis, "argpartition", opts);
  const k = checkKth(x, kth, ax, axis, "argpartition");
  return makeArray(ArgPartition, [x], { kth: k, axis: ax }, resolveStream(opts.stream));
}

/**
 * The k largest elements along `axis` (null: of the flattened array), as mx.topk: the last k of
 * a partition around the (n − k)th element, so not necessarily in sorted order (the CPU device
 * gives them ascending).
 * @example
 * mg.topk(mg.array([5, 1, 4, 2]), 2)
 */
export function topk(a: ArrayInput, k: number, axis: number | null = -1, opts: StreamOptions = {}): MgArray {
  const [x, ax] = axisInput(a, axis, "topk", opts);
  const n = x.shape[ax]!;
  if (!Number.isInteger(k) || k < 0 || k > n) {
    throw new RangeError(`[topk] Received invalid k=${k} along axis ${axis ?? 0} for array with shape: ${formatShape(x.shape)}.`);
  }
  if (k === n) return x;
  const start = x.shape.map((_, i) => (i === ax ? n - k : 0));
  if (k === 0) return sliceStatic(x, start, [...x.shape], undefined, opts);
  return sliceStatic(partition(x, -k, ax, opts), start, [...x.shape], undefined, opts);
}

/**
 * searchsorted's options object: `stream` (and `side` by name).
 */
export interface SearchSortedOptions extends StreamOptions {}

/**
 * Insertion points (uint32, shaped like `values`) that keep the 1-D ascending `sortedSequence`
 * sorted, as mx.searchsorted: side "left" gives the first suitable position, "right" the last.
 * Both inputs are promoted to a common dtype first; NaN orders after every number, as in sort.
 * @example
 * mg.searchsorted(mg.array([1, 3, 5]), mg.array([0, 3, 6]), "right")
 */
export function searchsorted(sortedSequence: ArrayInput, values: ArrayInput, side: "left" | "right" = "left", opts: SearchSortedOptions = {}): MgArray {
  if (side !== "left" && side !== "right") {
    throw new Error(`[searchsorted] Invalid side '${String(side)}'. Expected 'left' or 'right'.`);
  }
  const a = toArray(sortedSequence, "searchsorted");
  const v = toArray(values, "searchsorted");
  if (a.ndim !== 1) {
    throw new Error(`[searchsorted] The sorted sequence must be 1-D but has ${a.ndim} dimensions.`);
  }
  const dtype = promoteTypes(a.dtype, v.dtype);
  return makeArray(SearchSorted, [astype(a, dtype, opts), astype(v, dtype, opts)], { right: side === "right" }, resolveStream(opts.stream));
}
