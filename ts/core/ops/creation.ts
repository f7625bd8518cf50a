// Array creation: full/zeros/ones (broadcast views of one value), arange, linspace, eye, tri …
import { MgArray } from "../array.ts";
import { bool_, type Dtype, dtypeArgument, float32, float64, int32, isScalar, type Scalar } from "../dtype.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { Arange } from "../primitives/creation.ts";
import { Contiguous } from "../primitives/movement.ts";
import { checkShape } from "../shape.ts";
import {
  array, type ArrayInput, type ArrayOptions, checkOperand, fromValues, isOptionsObject, splitOptions, type StreamOptions, toArray,
} from "./convert.ts";
import { astype, equal, greaterEqual, add, where, multiply, subtract, divide } from "./elementwise.ts";
import { broadcastToShape } from "./broadcast.ts";
import { broadcastTo, expandDims } from "./shape.ts";

/**
 * An array of `shape` filled with `vals`, as mx.full (a broadcast view until written).
 * @example
 * mg.full([2, 2], 7)
 */
export function full(shape: number | readonly number[], vals: ArrayInput, dtype?: Dtype | null, opts: StreamOptions = {}): MgArray {
  const s = checkShape(shape, "full");
  if (dtype != null) dtypeArgument("full", dtype);
  let v = isScalar(vals) && dtype ? fromValues([vals], [], dtype) : toArray(vals, "full");
  if (dtype && v.dtype !== dtype) v = astype(v, dtype, opts);
  return broadcastToShape(v, s, "full", opts.stream);
}

/**
 * An array of `shape` filled with zeros (float32 unless `dtype` is given). `empty` is the same
 * function (arrays are never uninitialised).
 * @example
 * mg.zeros([2], mg.int32)
 */
export function zeros(shape: number | readonly number[], dtype: Dtype = float32, opts: StreamOptions = {}): MgArray {
  dtypeArgument("zeros", dtype);
  return full(shape, 0, dtype, opts);
}

/**
 * An array of `shape` filled with ones (float32 unless `dtype` is given).
 * @example
 * mg.ones([2, 3])
 */
export function ones(shape: number | readonly number[], dtype: Dtype = float32, opts: StreamOptions = {}): MgArray {
  dtypeArgument("ones", dtype);
  return full(shape, 1, dtype, opts);
}

// As mx.empty, which is mx.zeros: arrays are never uninitialised, so an empty array is zeros.
export const empty = zeros;

/**
 * An array shaped like `a` filled with `vals`, in `a`'s dtype unless `dtype` is given.
 * @example
 * mg.fullLike(mg.array([1, 2, 3]), 9)
 */
export function fullLike(a: ArrayInput, vals: ArrayInput, dtype?: Dtype | null, opts: StreamOptions = {}): MgArray {
  if (dtype != null) dtypeArgument("full_like", dtype);
  const x = toArray(a, "full_like");
  return full(x.shape, vals, dtype ?? x.dtype, opts);
}

/**
 * Zeros shaped like `a`, in its dtype unless `dtype` is given. `emptyLike` is the same function.
 * @example
 * mg.zerosLike(mg.array([1.5, 2.5]))
 */
export function zerosLike(a: ArrayInput, dtype?: Dtype | null, opts: StreamOptions = {}): MgArray {
  if (dtype != null) dtypeArgument("zeros_like", dtype);
  const x = toArray(a, "zeros_like");
  return full(x.shape, 0, dtype ?? x.dtype, opts);
}

/**
 * Ones shaped like `a`, in its dtype unless `dtype` is given.
 * @example
 * mg.onesLike(mg.array([[1, 2]]))
 */
export function onesLike(a: ArrayInput, dtype?: Dtype | null, opts: StreamOptions = {}): MgArray {
  if (dtype != null) dtypeArgument("ones_like", dtype);
  const x = toArray(a, "ones_like");
  return full(x.shape, 1, dtype ?? x.dtype, opts);
}

// As mx.empty_like, which is mx.zeros_like.
export const emptyLike = zerosLike;

/**
 * asarray's keyword options: `copy` (true: always a new array; false: never copy) and `shape` for a flat typed array.
 */
export interface AsarrayOptions extends ArrayOptions {
  /**
   * true: always a new array (arrays are immutable, so a copy of an array may share its storage;
   * it has its own handle and lifetime). false: never copy; an error when a copy is needed. null
   * or absent: copy only when needed.
   */
  copy?: boolean | null;
}

/**
 * Converts the input to an array, as mx.asarray(a, dtype, *, copy). An array of the requested dtype
 * is returned as is unless `copy` is true; anything else (JS numbers, lists, typed arrays, another
 * dtype) is copied into a new array, so `copy: false` fails for it.
 * @example
 * mg.asarray([1, 2], mg.float16)
 */
export function asarray(a: ArrayInput, dtype?: Dtype | null, opts: AsarrayOptions = {}): MgArray {
  if (dtype != null) dtypeArgument("asarray", dtype);
  const copy = opts.copy ?? null;
  if (copy !== null && typeof copy !== "boolean") throw new TypeError(`[asarray] copy must be a boolean or null, got ${typeof copy}.`);
  if (a instanceof MgArray) {
    a.checkUsable("asarray");
    if (dtype != null && dtype !== a.dtype) {
      if (copy === false) throw new Error(`[asarray] Unable to avoid copy while creating an array as requested: casting ${a.dtype.name} to ${dtype.name} makes a new array.`);
      return astype(a, dtype);
    }
    // mg.contiguous(a), built here: movement.ts builds on this file.
    return copy === true ? makeArray(Contiguous, [a], { allowColMajor: false }, resolveStream()) : a;
  }
  checkOperand(a, "asarray");
  if (copy === false) throw new Error("[asarray] Unable to avoid copy while creating an array as requested: JS values are always copied into array memory.");
  return array(a, dtype, opts);
}

/**
 * Evenly spaced values, as mx.arange: `arange(stop)`, `arange(start, stop)`,
 * `arange(start, stop, step)`, each optionally followed by a dtype. Integral arguments give
 * int32, any fractional one float32.
 * @example
 * mg.arange(0, 1, 0.25)
 */
export function arange(
  start: number,
  stop?: number | Dtype | null,
  step?: number | Dtype | null,
  dtype?: Dtype | null,
  opts: StreamOptions = {},
): MgArray {
  // A dtype may follow the numbers directly (arange(5, int32), arange(0, 5, float32)).
  const args = [start, stop, step, dtype];
  dtype = null;
  const nums: number[] = [];
  for (const a of args) {
    if (a === null || a === undefined) continue;
    if (typeof a === "number") {
      if (dtype !== null) throw new TypeError("[arange] the dtype comes after the numbers: arange(start, stop, step, dtype).");
      nums.push(a);
    } else dtype = dtypeArgument("arange", a);
  }
  // arange(stop, { step }) is MLX's arange(stop, step=...): a lone number is the stop.
  if (nums.length === 2 && (stop === undefined || stop === null) && typeof step === "number") nums.unshift(0);
  let lo = 0, hi: number, inc = 1;
  if (nums.length === 1) hi = nums[0]!;
  else if (nums.length === 2) [lo, hi] = nums as [number, number];
  else if (nums.length === 3) [lo, hi, inc] = nums as [number, number, number];
  else throw new TypeError("[arange] expected arange(stop), arange(start, stop) or arange(start, stop, step).");
  if (dtype === null) dtype = nums.every(Number.isInteger) ? int32 : float32;
  if (dtype === bool_) throw new TypeError("[arange] bool not supported for arange.");
  if (Number.isNaN(lo) || Number.isNaN(hi) || Number.isNaN(inc) || !Number.isFinite(lo) || !Number.isFinite(hi)) {
    throw new RangeError("[arange] Cannot compute length.");
  }
  if (inc === 0) throw new RangeError("[arange] step must be nonzero.");
  const size = Math.max(Math.ceil((hi - lo) / inc), 0);
  if (size > 2147483647) throw new RangeError("[arange] Maximum size exceeded.");
  return makeArray(Arange, [], { start: lo, step: inc, size, dtype }, resolveStream(opts.stream));
}

/**
 * `num` evenly spaced samples over [start, stop] — or [start, stop) without `endpoint` — as
 * mx.linspace(start, stop, num, endpoint, dtype) (interpolated as MLX does).
 * @example
 * mg.linspace(0, 1, 5)
 */
export function linspace(start: number, stop: number, num = 50, endpoint = true, dtype: Dtype | null = float32, opts: StreamOptions = {}): MgArray {
  if (dtype != null) dtypeArgument("linspace", dtype);
  if (!Number.isInteger(num) || num < 0) throw new RangeError(`[linspace] number of samples, ${num}, must be non-negative.`);
  const out = dtype ?? float32;
  if (num === 1) return astype(fromValues([start], [1], float32), out, opts);
  const inner = out === float64 ? float64 : float32;
  const den = endpoint ? num - 1 : num;
  const t = divide(arange(0, num, 1, inner, opts), fromValues([den], [], inner), opts);
  const tBar = subtract(fromValues([1], [], inner), t, opts);
  return astype(add(multiply(tBar, fromValues([start], [], inner), opts), multiply(t, fromValues([stop], [], inner), opts), opts), out, opts);
}

/** For tri and eye: an n×m grid's row indices plus k (a column) and its column indices (a row). */
function shiftedRowsAndColumns(op: string, n: number, m: number | null | undefined, k: number, opts: StreamOptions): [MgArray, MgArray] {
  const cols = m ?? n;
  if (!Number.isInteger(n) || n < 0 || !Number.isInteger(cols) || cols < 0) {
    throw new RangeError(`[${op}] N and M must be non-negative integers, got ${n} and ${cols}.`);
  }
  if (!Number.isInteger(k)) throw new TypeError(`[${op}] k must be an integer, got ${k}.`);
  const rows = expandDims(add(arange(0, n, 1, int32, opts), k, opts), 1, opts);
  return [rows, expandDims(arange(0, cols, 1, int32, opts), 0, opts)];
}

/**
 * Lower-triangular ones: out[i, j] = 1 when j ≤ i + k, as mx.tri.
 * @example
 * mg.tri(3, 3, 0, mg.int32)
 */
export function tri(n: number, m?: number | null, k = 0, dtype: Dtype = float32, opts: StreamOptions = {}): MgArray {
  dtypeArgument("tri", dtype);
  const [rows, cols] = shiftedRowsAndColumns("tri", n, m, k, opts);
  return astype(greaterEqual(rows, cols, opts), dtype, opts);
}

/**
 * Zeros above the k-th diagonal of the last two axes.
 * @example
 * mg.tril(mg.ones([3, 3], mg.int32))
 */
export function tril(x: ArrayInput, k = 0, opts: StreamOptions = {}): MgArray {
  const a = toArray(x, "tril");
  if (a.ndim < 2) throw new Error("[tril] array must be at least 2-D");
  const mask = tri(a.shape[a.ndim - 2]!, a.shape[a.ndim - 1]!, k, bool_, opts);
  return where(mask, a, zerosLike(a, null, opts), opts);
}

/**
 * Zeros below the k-th diagonal of the last two axes.
 * @example
 * mg.triu(mg.ones([3, 3], mg.int32), 1)
 */
export function triu(x: ArrayInput, k = 0, opts: StreamOptions = {}): MgArray {
  const a = toArray(x, "triu");
  if (a.ndim < 2) throw new Error("[triu] array must be at least 2-D");
  const mask = tri(a.shape[a.ndim - 2]!, a.shape[a.ndim - 1]!, k - 1, bool_, opts);
  return where(mask, zerosLike(a, null, opts), a, opts);
}

/**
 * Ones on the k-th diagonal, as mx.eye.
 * @example
 * mg.eye(2, 3, 1)
 */
export function eye(n: number, m?: number | null, k = 0, dtype: Dtype = float32, opts: StreamOptions = {}): MgArray {
  dtypeArgument("eye", dtype);
  const [rows, cols] = shiftedRowsAndColumns("eye", n, m, k, opts);
  return astype(equal(rows, cols, opts), dtype, opts);
}

/**
 * The n×n identity matrix.
 * @example
 * mg.identity(2, mg.int32)
 */
export function identity(n: number, dtype: Dtype = float32, opts: StreamOptions = {}): MgArray {
  dtypeArgument("identity", dtype);
  return eye(n, n, 0, dtype, opts);
}

/** meshgrid's keyword options: `sparse`, `indexing` ("xy" or "ij") and `stream`. */
export interface MeshgridOptions extends StreamOptions {
  sparse?: boolean;
  indexing?: "xy" | "ij";
}

/**
 * Coordinate grids from 1-D arrays, as mx.meshgrid(*arrays, sparse, indexing): Cartesian 'xy' or
 *  matrix 'ij' indexing. A trailing plain object is the options.
 * @example
 * mg.meshgrid(mg.array([1, 2, 3]), mg.array([4, 5]), { indexing: "ij" })
 */
export function meshgrid(...args: (ArrayInput | MeshgridOptions)[]): MgArray[] {
  const [arrays, opts] = splitOptions<MeshgridOptions>(args);
  const indexing = opts.indexing ?? "xy";
  if (indexing !== "xy" && indexing !== "ij") throw new Error(`[meshgrid] Invalid indexing value '${String(indexing)}'. Must be 'xy' or 'ij'.`);
  const xs = arrays.map((a) => toArray(a, "meshgrid"));
  for (const x of xs) if (x.ndim !== 1) throw new Error("[meshgrid] Input arrays must be 1-D.");
  const n = xs.length;
  const shapes = xs.map((x, i) => {
    const s = new Array<number>(n).fill(1);
    s[i] = x.shape[0]!;
    return s;
  });
  if (indexing === "xy" && n > 1) {
    for (const s of shapes) [s[0], s[1]] = [s[1]!, s[0]!];
  }
  const outs = xs.map((x, i) => x.ndim === shapes[i]!.length ? x : reshapeTo(x, shapes[i]!, opts));
  if (opts.sparse) return outs;
  const full = shapes.reduce((acc, s) => acc.map((d, i) => Math.max(d, s[i]!)), new Array<number>(n).fill(1));
  return outs.map((o) => broadcastTo(o, full, opts));
}
import { reshape as reshapeTo } from "./shape.ts";

export type { Scalar };
