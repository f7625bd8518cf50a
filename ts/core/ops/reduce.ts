// Reductions and scans: sum, prod, max, min, all, any, mean, variance, std, cumulative ops.
import type { MgArray } from "../array.ts";
import {
  atLeastFloat, bool_, complex64, type Dtype, dtypeArgument, float32, int32, int64, isComplex, isInexact, uint32, uint64,
} from "../dtype.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { Reduce, type ReduceType } from "../primitives/reduce.ts";
import { Scan, type ScanType } from "../primitives/scan.ts";
import { axisList, checkKeepdims, normalizeAxis } from "../shape.ts";
import { sliceStatic } from "./slicing.ts";
import { sort } from "./sort.ts";
import { type ArrayInput, fromValues, type StreamOptions, toArray } from "./convert.ts";
import * as ew from "./elementwise.ts";
import { flatten, reshape, transpose } from "./shape.ts";

/** An axis or a list of axes; null or undefined for all. */
export type Axes = number | readonly number[] | null | undefined;

/** The reductions' options object: `stream` (and, by name, `axis` and `keepdims`). */
export interface ReduceOptions extends StreamOptions {}

/** Validates axes as MLX's compute_reduce_shape: sorted, unique, in range; optional empty check. */
function reduceAxes(a: MgArray, axis: Axes, op: string, noIdentity = false): number[] {
  const nd = a.ndim;
  const list = axis === undefined || axis === null ? Array.from({ length: nd }, (_, i) => i) : axisList(axis, op);
  const out: number[] = [];
  for (const ax of list) {
    if (!Number.isInteger(ax)) throw new TypeError(`[${op}] axis must be an integer, got ${ax}.`);
    const n = ax < 0 ? ax + nd : ax;
    if (n < 0 || n >= nd) throw new RangeError(`[${op}] Invalid axis ${ax} for array with ${nd} dimensions.`);
    if (out.includes(n)) throw new Error(`[${op}] Duplicate axes detected in reduction.`);
    if (noIdentity && a.shape[n] === 0) throw new Error(`[${op}] Cannot ${op} reduce over axis ${n} with size 0.`);
    out.push(n);
  }
  return out.sort((x, y) => x - y);
}

/** Integer sums and products widen as MLX: ≤32-bit signed → int32, unsigned → uint32, bool → int32. */
function accumulateDtype(d: Dtype): Dtype {
  if (d === bool_) return int32;
  if (d.kind === "i") return d.size <= 4 ? int32 : int64;
  if (d.kind === "u") return d.size <= 4 ? uint32 : uint64;
  return d;
}

function reduceOp(type: ReduceType, op: string, a: ArrayInput, axis: Axes, keepdims: boolean, opts: StreamOptions): MgArray {
  checkKeepdims(op, keepdims);
  let x = toArray(a, op);
  const noIdentity = type === "max" || type === "min";
  if (axis !== undefined && axis !== null && typeof axis !== "number" && axis.length === 0 && (type === "sum" || type === "prod")) return x;
  const axes = reduceAxes(x, axis, op, noIdentity);
  if (type === "sum" || type === "prod") x = ew.astype(x, accumulateDtype(x.dtype), opts);
  const isNoop = axes.every((ax) => x.shape[ax] === 1);
  let out: MgArray;
  if (isNoop) out = type === "and" || type === "or" ? ew.astype(x, bool_, opts) : x;
  else out = makeArray(Reduce, [x], { type, axes }, resolveStream(opts.stream));
  if (!keepdims && axes.length > 0) out = reshape(out, out.shape.filter((_, i) => !axes.includes(i)), opts);
  return out;
}

/**
 * The sum over `axis` (all axes when omitted); integers and bool accumulate in at least 32 bits, as MLX.
 * @example
 * mg.sum(mg.array([[1, 2, 3], [4, 5, 6]]), { axis: 1 })
 */
export const sum = (a: ArrayInput, axis?: Axes, keepdims = false, opts: ReduceOptions = {}): MgArray =>
  reduceOp("sum", "sum", a, axis, keepdims, opts);
/**
 * The product over `axis` (all axes when omitted).
 * @example
 * mg.prod(mg.array([[1, 2, 3], [4, 5, 6]]), 0)
 */
export const prod = (a: ArrayInput, axis?: Axes, keepdims = false, opts: ReduceOptions = {}): MgArray =>
  reduceOp("prod", "prod", a, axis, keepdims, opts);
/**
 * The maximum over `axis` (all axes when omitted); NaN propagates.
 * @example
 * mg.max(mg.array([[1, 2, 3], [4, 5, 6]]), 1, true)
 */
export const max = (a: ArrayInput, axis?: Axes, keepdims = false, opts: ReduceOptions = {}): MgArray =>
  reduceOp("max", "max", a, axis, keepdims, opts);
/**
 * The minimum over `axis` (all axes when omitted); NaN propagates.
 * @example
 * mg.min(mg.array([[1, 2, 3], [4, 5, 6]]))
 */
export const min = (a: ArrayInput, axis?: Axes, keepdims = false, opts: ReduceOptions = {}): MgArray =>
  reduceOp("min", "min", a, axis, keepdims, opts);
/**
 * Whether every element over `axis` is nonzero (all axes when omitted).
 * @example
 * mg.all(mg.array([[true, false], [true, true]]), 1)
 */
export const all = (a: ArrayInput, axis?: Axes, keepdims = false, opts: ReduceOptions = {}): MgArray =>
  reduceOp("and", "all", a, axis, keepdims, opts);
/**
 * Whether some element over `axis` is nonzero (all axes when omitted).
 * @example
 * mg.any(mg.array([[true, false], [false, false]]), 1)
 */
export const any = (a: ArrayInput, axis?: Axes, keepdims = false, opts: ReduceOptions = {}): MgArray =>
  reduceOp("or", "any", a, axis, keepdims, opts);

/**
 * The minimum and the maximum over the axes, as mx.minmax: [min, max].
 * @example
 * mg.minmax(mg.array([3, 1, 2]))
 */
export function minmax(a: ArrayInput, axis?: Axes, keepdims = false, opts: ReduceOptions = {}): [MgArray, MgArray] {
  const x = toArray(a, "minmax");
  return [min(x, axis, keepdims, opts), max(x, axis, keepdims, opts)];
}

/**
 * The median over the axes (all when omitted), as mx.median: the middle element of the sorted
 * values, or the mean of the two middle ones — (lo + hi) · 0.5 in the result dtype, so float16
 * can overflow as in MLX. Integers and bool give float32; float and complex keep their dtype. A
 * NaN anywhere along the reduced axes makes the result NaN.
 * @example
 * mg.median(mg.array([[1, 5, 3], [2, 8, 4]]), 1)
 */
export function median(a: ArrayInput, axis?: Axes, keepdims = false, opts: ReduceOptions = {}): MgArray {
  const o = opts;
  const keep = keepdims;
  const x = toArray(a, "median");
  const nd = x.ndim;
  let axes: number[];
  if (axis === undefined || axis === null) axes = Array.from({ length: nd }, (_, i) => i);
  else {
    const list = axisList(axis, "median");
    if (list.length === 0) throw new Error("[median] axis must name at least one axis, got an empty list.");
    axes = list.map((ax) => normalizeAxis(ax, nd, "median"));
    if (new Set(axes).size !== axes.length) throw new Error("[median] Received duplicate axis.");
  }
  const kept = Array.from({ length: nd }, (_, i) => i).filter((i) => !axes.includes(i));
  const keptShape = kept.map((i) => x.shape[i]!);
  const n = axes.reduce((acc, ax) => acc * x.shape[ax]!, 1);
  if (n === 0) throw new Error("[median] Cannot take median along empty axis.");
  const dtype = atLeastFloat(x.dtype);
  // The reduced elements of each output on one last axis, sorted (NaN last).
  const rows = reshape(transpose(x, [...kept, ...axes], o), [...keptShape, n], o);
  const sorted = sort(rows, -1, o);
  const at = (k: number): MgArray => {
    const part = sliceStatic(sorted, [...keptShape.map(() => 0), k], [...keptShape, k + 1], undefined, o);
    return ew.astype(reshape(part, keptShape, o), dtype, o);
  };
  let m = n % 2 === 1 ? at((n - 1) / 2) : ew.multiply(ew.add(at(n / 2 - 1), at(n / 2), o), 0.5, o);
  if (isInexact(dtype)) m = ew.where(any(ew.isnan(rows, o), -1, false, o), NaN, m, o);
  return keep ? reshape(m, x.shape.map((d, i) => (axes.includes(i) ? 1 : d)), o) : m;
}

/** The reciprocal of the number of reduced elements, in `dtype`. */
function inverseCount(a: MgArray, axes: readonly number[], dtype: Dtype): MgArray {
  const n = axes.reduce((acc, ax) => acc * a.shape[ax]!, 1);
  return fromValues([1 / n], [], dtype);
}

/**
 * The mean over `axis` (all axes when omitted); integers give float32.
 * @example
 * mg.mean(mg.array([[1, 2, 3], [4, 5, 6]]), { axis: 0, keepdims: true })
 */
export function mean(a: ArrayInput, axis?: Axes, keepdims = false, opts: ReduceOptions = {}): MgArray {
  const x = toArray(a, "mean");
  const axes = reduceAxes(x, axis, "mean");
  return ew.multiply(sum(x, axes, keepdims, opts), inverseCount(x, axes, atLeastFloat(x.dtype)), opts);
}

/** variance's and std's options object: `stream` (and, by name, `axis`, `keepdims`, `ddof`). */
export interface VarianceOptions extends ReduceOptions {}

/**
 * Variance with `ddof` (MLX's var: N − ddof clamped at 0, so var([1,2], ddof=2) is inf).
 * @example
 * mg.variance(mg.array([1, 2, 3, 4], mg.float32))
 */
export function variance(a: ArrayInput, axis?: Axes, keepdims = false, ddof = 0, opts: VarianceOptions = {}): MgArray {
  return varianceOf("var", a, axis, keepdims, ddof, opts);
}

function varianceOf(op: string, a: ArrayInput, axis: Axes, keepdims: boolean, ddof: number, opts: VarianceOptions): MgArray {
  // keepdims and ddof are positional (MLX's var(a, axis, keepdims, ddof)): an options object or a
  // string in their place would silently mean keepdims=true or a NaN divisor.
  if (typeof keepdims !== "boolean") throw new TypeError(`[${op}] keepdims must be a boolean, got ${typeof keepdims}; the signature is ${op}(a, axis, keepdims, ddof, options).`);
  if (!Number.isInteger(ddof)) throw new TypeError(`[${op}] ddof must be an integer, got ${typeof ddof === "number" ? ddof : typeof ddof}.`);
  const x = toArray(a, op);
  const axes = reduceAxes(x, axis, op);
  let dtype = atLeastFloat(x.dtype);
  const mu = mean(x, axes, true, opts);
  const d = ew.subtract(x, mu, opts);
  const sq = isComplex(dtype) ? ew.real(ew.multiply(d, ew.conjugate(d, opts), opts), opts) : ew.square(d, opts);
  if (isComplex(dtype)) dtype = float32;
  const v = sum(sq, axes, keepdims, opts);
  const n = axes.reduce((acc, ax) => acc * x.shape[ax]!, 1);
  if (ddof !== 0) return ew.divide(v, fromValues([Math.max(n - ddof, 0)], [], dtype), opts);
  return ew.multiply(v, fromValues([1 / n], [], dtype), opts);
}

/**
 * The standard deviation over `axis` with `ddof` delta degrees of freedom (√variance).
 * @example
 * mg.std(mg.array([1, 2, 3, 4], mg.float32), { ddof: 1 })
 */
export function std(a: ArrayInput, axis?: Axes, keepdims = false, ddof = 0, opts: VarianceOptions = {}): MgArray {
  return ew.sqrt(varianceOf("std", a, axis, keepdims, ddof, opts), opts);
}

/**
 * Number of nonzero elements (axis and keepdims are keyword-only in MLX).
 * @example
 * mg.countNonzero(mg.array([[0, 1], [2, 0]]), { axis: 0 })
 */
export function countNonzero(a: ArrayInput, opts: ReduceOptions & { axis?: Axes; keepdims?: boolean } = {}): MgArray {
  const x = toArray(a, "count_nonzero");
  return sum(ew.astype(ew.notEqual(x, 0, opts), int32, opts), opts.axis, !!opts.keepdims, opts);
}

// ---------------------------------------------------------------------------------------------
// Scans

/** The scans' keyword options: `reverse`, `inclusive` and `stream`. */
export interface ScanOptions extends StreamOptions {
  reverse?: boolean;
  inclusive?: boolean;
}
/** cumsum's and cumprod's keyword options: `reverse`, `inclusive`, `dtype` (cast first) and `stream`. */
export interface CumOptions extends ScanOptions {
  dtype?: Dtype | null;
}

function scanOp(type: ScanType, op: string, a: ArrayInput, axis: number | null | undefined, opts: CumOptions): MgArray {
  let x = toArray(a, op);
  if (axis === undefined || axis === null) {
    x = flatten(x, 0, -1, opts);
    axis = 0;
  }
  if (x.ndim === 0) x = reshape(x, [1], opts);
  const ax = normalizeAxis(axis, x.ndim, op);
  if (type === "sum" || type === "prod") {
    // As MLX: cast to `dtype` first; a bool sum then counts in int32, a bool product stays bool.
    if (opts.dtype != null) x = ew.astype(x, dtypeArgument(op, opts.dtype), opts);
    if (type === "sum" && x.dtype === bool_) x = ew.astype(x, int32, opts);
  } else if (opts.dtype != null) {
    throw new TypeError(`[${op}] takes no dtype (only cumsum and cumprod do).`);
  }
  if (type === "logaddexp") {
    if (x.dtype === complex64) throw new TypeError(`[${op}] Not supported for complex64.`);
    x = ew.astype(x, atLeastFloat(x.dtype), opts);
  }
  return makeArray(Scan, [x], { type, axis: ax, reverse: !!opts.reverse, inclusive: opts.inclusive ?? true }, resolveStream(opts.stream));
}

/**
 * The cumulative sum along `axis` (of the flattened array when omitted); `reverse`, `inclusive` and `dtype` are keyword options. `cumulativeSum` is the same function.
 * @example
 * mg.cumsum(mg.array([1, 2, 3, 4]), { reverse: true })
 */
export const cumsum = (a: ArrayInput, axis?: number | null, opts: CumOptions = {}) => scanOp("sum", "cumsum", a, axis, opts);
/**
 * The cumulative product along `axis` (of the flattened array when omitted). `cumulativeProd` is the same function.
 * @example
 * mg.cumprod(mg.array([1, 2, 3, 4]), 0, { inclusive: false })
 */
export const cumprod = (a: ArrayInput, axis?: number | null, opts: CumOptions = {}) => scanOp("prod", "cumprod", a, axis, opts);
// The array-API spellings of cumsum and cumprod (the same functions in MLX).
export const cumulativeSum = cumsum;
export const cumulativeProd = cumprod;
/**
 * The running maximum along `axis` (of the flattened array when omitted).
 * @example
 * mg.cummax(mg.array([1, 3, 2, 5]))
 */
export const cummax = (a: ArrayInput, axis?: number | null, opts: ScanOptions = {}) => scanOp("max", "cummax", a, axis, opts);
/**
 * The running minimum along `axis` (of the flattened array when omitted).
 * @example
 * mg.cummin(mg.array([4, 3, 5, 1]))
 */
export const cummin = (a: ArrayInput, axis?: number | null, opts: ScanOptions = {}) => scanOp("min", "cummin", a, axis, opts);
/**
 * The running log Σ exp along `axis` (of the flattened array when omitted), without overflow.
 * @example
 * mg.logcumsumexp(mg.array([0, 0, 0], mg.float32))
 */
export const logcumsumexp = (a: ArrayInput, axis?: number | null, opts: ScanOptions = {}) => scanOp("logaddexp", "logcumsumexp", a, axis, opts);

// ---------------------------------------------------------------------------------------------
// Whole-array comparisons

/**
 * True when shapes match and all elements are equal (NaN == NaN with equalNan), as mx.array_equal.
 * @example
 * mg.arrayEqual(mg.array([1, NaN]), mg.array([1, NaN]), true)
 */
export function arrayEqual(a: ArrayInput, b: ArrayInput, equalNan = false, opts: StreamOptions = {}): MgArray {
  const [x, y] = [toArray(a, "array_equal"), toArray(b, "array_equal")];
  if (x.ndim !== y.ndim || x.shape.some((d, i) => d !== y.shape[i])) return fromValues([false], [], bool_);
  return all(equalNan ? ew.equalOrBothNan(x, y, opts) : ew.equal(x, y, opts), null, false, opts);
}

/** allclose's options: `equalNan` (NaN equals NaN) and `stream`. */
export interface AllCloseOptions extends StreamOptions {
  equalNan?: boolean;
}

/**
 * all(isclose(a, b, rtol, atol)), as mx.allclose.
 * @example
 * mg.allclose(mg.array([1, 2]), mg.array([1, 2.000001]))
 */
export function allclose(a: ArrayInput, b: ArrayInput, rtol = 1e-5, atol = 1e-8, opts: AllCloseOptions = {}): MgArray {
  ew.checkTolerances("allclose", rtol, atol);
  return all(ew.isclose(a, b, rtol, atol, opts), null, false, opts);
}
