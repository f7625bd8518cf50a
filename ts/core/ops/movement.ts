// Data-movement ops: tile, repeat, pad, roll, diag, diagonal, trace, view, contiguous,
// asStrided, atleast1d/2d/3d, unstack, diff, kron. Most are compositions of views, gathers and
// joins (as in MLX), so their derivatives come from those primitives' rules.
import { MgArray } from "../array.ts";
import { type Dtype, dtypeArgument, int32 } from "../dtype.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { AsStrided } from "../primitives/views.ts";
import { Contiguous, View } from "../primitives/movement.ts";
import { padConstantRaw } from "./pad.ts";
import { formatShape, normalizeAxis, rowMajorStrides, shapeSize } from "../shape.ts";
import { type ArrayInput, fromValues, splitOptions, type StreamOptions, toArray, weakScalar } from "./convert.ts";
import { zeros } from "./creation.ts";
import { astype, multiply, subtract } from "./elementwise.ts";
import { concatenate, split } from "./join.ts";
import { sum } from "./reduce.ts";
import { gather, scatter } from "./scatter.ts";
import { broadcastTo, expandDims, flatten, moveaxis, reshape, squeeze } from "./shape.ts";
import { sliceStatic } from "./slicing.ts";

function checkInt(v: unknown, what: string, op: string): number {
  if (typeof v !== "number" || !Number.isInteger(v)) throw new TypeError(`[${op}] ${what} must be an integer, got ${String(v)}.`);
  return v;
}

/**
 * Repeats the whole array `reps` times along each axis, as mx.tile (reps align to the right).
 * @example
 * mg.tile(mg.array([1, 2]), [2, 2])
 */
export function tile(a: ArrayInput, reps: number | readonly number[], opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "tile");
  if (typeof reps !== "number" && !Array.isArray(reps)) throw new TypeError(`[tile] reps must be an integer or a list of integers, got ${String(reps)}.`);
  const r = (typeof reps === "number" ? [reps] : [...reps]).map((v) => checkInt(v, "reps", "tile"));
  if (r.some((v) => v < 0)) throw new RangeError(`[tile] reps must be non-negative, got ${formatShape(r)}.`);
  const shape = [...x.shape];
  while (r.length < shape.length) r.unshift(1);
  while (shape.length < r.length) shape.unshift(1);
  // (…, 1, d, …) broadcast to (…, r, d, …) and flattened pairwise to (…, r·d, …).
  const expand: number[] = [];
  const broad: number[] = [];
  const final: number[] = [];
  shape.forEach((d, i) => {
    if (r[i] !== 1) {
      expand.push(1);
      broad.push(r[i]!);
    }
    expand.push(d);
    broad.push(d);
    final.push(r[i]! * d);
  });
  return reshape(broadcastTo(reshape(x, expand, opts), broad, opts), final, opts);
}

/**
 * Repeats each element `repeats` times along `axis` (the flattened array when omitted), as mx.repeat.
 * @example
 * mg.repeat(mg.array([1, 2]), 2)
 */
export function repeat(a: ArrayInput, repeats: number, axis?: number | null, opts: StreamOptions = {}): MgArray {
  let x = toArray(a, "repeat");
  checkInt(repeats, "repeats", "repeat");
  if (repeats < 0) throw new RangeError("[repeat] Number of repeats cannot be negative");
  if (axis === undefined || axis === null) {
    x = flatten(x, 0, -1, opts);
    axis = 0;
  }
  const ax = normalizeAxis(axis, x.ndim, "repeat");
  if (repeats === 1) return x;
  // (…, d, 1, …) broadcast to (…, d, repeats, …) and merged: each element repeated in place.
  const shape = [...x.shape];
  shape.splice(ax + 1, 0, repeats);
  const out = broadcastTo(expandDims(x, ax + 1, opts), shape, opts);
  shape.splice(ax + 1, 1);
  shape[ax] = shape[ax]! * repeats;
  return reshape(out, shape, opts);
}

/**
 * pad's widths: one for every side, a (before, after) pair for every axis, or one pair per axis.
 */
export type PadWidth = number | readonly number[] | readonly (readonly number[])[];
/**
 * How pad fills: a constant, the edge value, or reflections (with or without the edge).
 */
export type PadMode = "constant" | "edge" | "reflect" | "symmetric";

/** Per-axis (low, high) pad sizes from any of mx.pad's pad_width forms. */
function padPairs(width: PadWidth, ndim: number): [number, number][] {
  const int = (v: unknown) => checkInt(v, "pad_width entries", "pad");
  if (typeof width === "number") return Array.from({ length: ndim }, () => [int(width), int(width)]);
  if (!Array.isArray(width)) throw new TypeError("[pad] pad_width must be an integer, a pair or a list of pairs.");
  const list = width as readonly (number | readonly number[])[];
  if (list.every((v) => typeof v === "number")) {
    const nums = list as readonly number[];
    if (nums.length === 1) return Array.from({ length: ndim }, () => [int(nums[0]), int(nums[0])]);
    if (nums.length === 2) return Array.from({ length: ndim }, () => [int(nums[0]), int(nums[1])]);
    throw new TypeError(`[pad] pad_width as a flat list must have 1 or 2 entries, got ${nums.length}.`);
  }
  const pairs = list.map((p) => {
    if (!Array.isArray(p) || p.length !== 2) throw new TypeError("[pad] pad_width must be an integer, a pair or a list of pairs.");
    return [int(p[0]), int(p[1])] as [number, number];
  });
  if (pairs.length === 1) return Array.from({ length: ndim }, () => [...pairs[0]!] as [number, number]);
  if (pairs.length !== ndim) {
    throw new Error(`[pad] Invalid number of padding sizes passed to pad with axes of size ${ndim}.`);
  }
  return pairs;
}

/**
 * Pads every axis, as mx.pad(a, pad_width, mode, constant_values). pad_width is an integer (all
 * sides), `[n]`, a pair `[low, high]` for every axis, or one pair per axis. Modes: "constant"
 * (with `constantValues`, a scalar), "edge" (repeat the border value), "reflect" (mirror without
 * the border: [1,2,3] → 3,2,[1,2,3],2,1) and "symmetric" (mirror with it: 2,1,[1,2,3],3,2).
 * @example
 * mg.pad(mg.array([1, 2]), [1, 2], { mode: "edge" })
 */
export function pad(a: ArrayInput, padWidth: PadWidth, mode: PadMode = "constant", constantValues: ArrayInput = 0, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "pad");
  const pairs = padPairs(padWidth, x.ndim);
  pairs.forEach(([lo, hi], i) => {
    if (lo < 0) throw new RangeError(`[pad] Invalid low padding size (${lo}) passed to pad for axis ${i}. Padding sizes must be non-negative`);
    if (hi < 0) throw new RangeError(`[pad] Invalid high padding size (${hi}) passed to pad for axis ${i}. Padding sizes must be non-negative`);
  });
  if (mode === "constant") {
    const v = weakScalar(constantValues as ArrayInput, x.dtype, "pad");
    if (v.size !== 1) throw new Error(`[pad] constant_values must be a scalar or a size-1 array, got shape ${formatShape(v.shape)}.`);
    if (pairs.every(([lo, hi]) => lo === 0 && hi === 0)) return x;
    const axes = pairs.map((_, i) => i);
    const value = astype(reshape(v, [], opts), x.dtype, opts);
    return padConstantRaw(x, value, { axes, low: pairs.map((p) => p[0]), high: pairs.map((p) => p[1]) }, opts);
  }
  if (mode !== "edge" && mode !== "reflect" && mode !== "symmetric") {
    throw new Error(`[pad] Invalid padding mode (${String(mode)}) passed to pad`);
  }
  // Each padded axis is one gather with the source position of every output position.
  let out = x;
  pairs.forEach(([lo, hi], ax) => {
    if (lo === 0 && hi === 0) return;
    const n = x.shape[ax]!;
    if (n === 0) throw new Error(`[pad] Cannot pad empty axis ${ax} using mode '${mode}'.`);
    const src = new Int32Array(lo + n + hi);
    for (let j = 0; j < src.length; j++) src[j] = padSource(j - lo, n, mode);
    out = take(out, fromValues(src, [src.length], int32), ax, opts);
  });
  return out;
}

/** The source position of position i (may be outside [0, n)) under an edge/reflect/symmetric pad. */
function padSource(i: number, n: number, mode: "edge" | "reflect" | "symmetric"): number {
  if (i >= 0 && i < n) return i;
  if (mode === "edge" || n === 1) return i < 0 ? 0 : n - 1;
  // reflect has period 2(n−1) (the border is not repeated), symmetric 2n (it is).
  const period = mode === "reflect" ? 2 * n - 2 : 2 * n;
  const m = ((i % period) + period) % period;
  if (m < n) return m;
  return mode === "reflect" ? period - m : period - 1 - m;
}

/**
 * Rolls elements along axes, as mx.roll(a, shift, axis): without an axis the flattened array
 * rolls by the total shift; one shift may serve several axes; several shifts on one axis add up.
 * @example
 * mg.roll(mg.array([1, 2, 3, 4]), 1)
 */
export function roll(a: ArrayInput, shift: number | readonly number[], axis?: number | readonly number[] | null, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "roll");
  const shifts = (typeof shift === "number" ? [shift] : [...shift]).map((v) => checkInt(v, "shift", "roll"));
  if (axis === undefined || axis === null) {
    const total = shifts.reduce((s, v) => s + v, 0);
    return reshape(rollAxes(flatten(x, 0, -1, opts), [total], [0], opts), x.shape, opts);
  }
  if (typeof axis === "number") return rollAxes(x, [shifts.reduce((s, v) => s + v, 0)], [axis], opts);
  const axes = [...axis];
  if (typeof shift === "number") return rollAxes(x, axes.map(() => shift), axes, opts);
  if (shifts.length < axes.length) {
    throw new Error(`[roll] At least one shift value per axis is required, ${shifts.length} provided for ${axes.length} axes.`);
  }
  return rollAxes(x, shifts, axes, opts);
}

function rollAxes(x: MgArray, shifts: readonly number[], axes: readonly number[], opts: StreamOptions): MgArray {
  let out = x;
  axes.forEach((axis, i) => {
    const ax = axis < 0 ? axis + x.ndim : axis;
    if (!Number.isInteger(axis) || ax < 0 || ax >= x.ndim) throw new RangeError(`[roll] Invalid axis ${axis} for array with ${x.ndim} dimensions.`);
    const n = x.shape[ax]!;
    if (n === 0) return;
    const s = shifts[i]!;
    const cut = s < 0 ? -s % n : n - (s % n);
    if (cut === 0 || cut === n) return;
    // The last n − cut elements move to the front.
    const [head, tail] = split(out, [cut], ax, opts);
    out = concatenate([tail!, head!], ax, opts);
  });
  return out;
}

/**
 * The diagonal at `offset` of the 2-D sub-arrays on axis1/axis2, moved to the last axis, as
 * mx.diagonal (a gather, so a copy).
 * @example
 * mg.diagonal(mg.array([[1, 2], [3, 4]]))
 */
export function diagonal(a: ArrayInput, offset = 0, axis1 = 0, axis2 = 1, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "diagonal");
  return diagonalOf(x, offset, axis1, axis2, "diagonal", opts);
}

function diagonalOf(x: MgArray, offset: number, axis1: number, axis2: number, op: string, opts: StreamOptions): MgArray {
  const nd = x.ndim;
  if (nd < 2) throw new Error(`[${op}] Array must have at least two dimensions, but got ${nd} dimensions.`);
  checkInt(offset, "offset", op);
  const ax1 = axis1 < 0 ? axis1 + nd : axis1;
  if (!Number.isInteger(axis1) || ax1 < 0 || ax1 >= nd) throw new RangeError(`[${op}] Invalid axis1 ${axis1} for array with ${nd} dimensions.`);
  const ax2 = axis2 < 0 ? axis2 + nd : axis2;
  if (!Number.isInteger(axis2) || ax2 < 0 || ax2 >= nd) throw new RangeError(`[${op}] Invalid axis2 ${axis2} for array with ${nd} dimensions.`);
  if (ax1 === ax2) throw new Error(`[${op}] axis1 and axis2 cannot be the same axis`);
  const off1 = Math.max(-offset, 0);
  const off2 = Math.max(offset, 0);
  const n = Math.max(0, Math.min(x.shape[ax1]! - off1, x.shape[ax2]! - off2));
  const rows = fromValues(Int32Array.from({ length: n }, (_, i) => off1 + i), [n], int32);
  const cols = fromValues(Int32Array.from({ length: n }, (_, i) => off2 + i), [n], int32);
  const sizes = [...x.shape];
  sizes[ax1] = 1;
  sizes[ax2] = 1;
  const g = gather(x, [rows, cols], [ax1, ax2], sizes, { ...opts, op });
  return moveaxis(squeeze(g, [ax1 + 1, ax2 + 1], opts), 0, -1, opts);
}

/**
 * Extracts the k-th diagonal of a 2-D array or builds a 2-D array with a 1-D one on it, as mx.diag.
 * @example
 * mg.diag(mg.array([1, 2]))
 */
export function diag(a: ArrayInput, k = 0, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "diag");
  checkInt(k, "k", "diag");
  if (x.ndim === 2) return diagonalOf(x, k, 0, 1, "diag", opts);
  if (x.ndim !== 1) throw new Error(`[diag] array must be 1-D or 2-D, got array with ${x.ndim} dimensions.`);
  const m = x.size;
  const n = m + Math.abs(k);
  const out = zeros([n, n], x.dtype, opts);
  if (m === 0) return out;
  const r0 = Math.max(0, -k);
  const c0 = Math.max(0, k);
  const rows = fromValues(Int32Array.from({ length: m }, (_, i) => r0 + i), [m], int32);
  const cols = fromValues(Int32Array.from({ length: m }, (_, i) => c0 + i), [m], int32);
  return scatter(out, [rows, cols], reshape(x, [m, 1, 1], opts), [0, 1], "none", { ...opts, op: "diag" });
}

/** Sum of the diagonal at `offset` of the axis1/axis2 planes, as mx.trace (dtype: accumulate in). */
export function trace(a: ArrayInput, offset = 0, axis1 = 0, axis2 = 1, dtype?: Dtype | null, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "trace");
  const d = diagonalOf(x, offset, axis1, axis2, "trace", opts);
  return sum(astype(d, dtype ?? x.dtype, opts), -1, false, opts);
}

/**
 * The same bytes as another dtype, as mx.view (versus astype, which converts values). When the
 * item sizes differ the last axis scales by their ratio: float32 (2, 4) → uint8 (2, 16);
 * uint8 (2, 16) → float32 (2, 4).
 * @example
 * mg.view(mg.array([1], mg.float32), mg.uint32)
 */
export function view(a: ArrayInput, dtype: Dtype, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "view");
  dtypeArgument("view", dtype);
  if (x.dtype === dtype) return x;
  const ib = x.dtype.size;
  const ob = dtype.size;
  if (x.ndim === 0 && ib !== ob) {
    throw new Error("[view] Changing the type of a scalar is only allowed for types with the same size.");
  }
  if (ib < ob && x.shape[x.ndim - 1]! % (ob / ib) !== 0) {
    throw new Error("[view] When viewing as a larger dtype, the size in bytes of the last axis must be a multiple of the requested type size.");
  }
  return makeArray(View, [x], { dtype }, resolveStream(opts.stream));
}

/**
 * A row-contiguous array with `a`'s values (the input itself when it already is), as mx.contiguous.
 * @example
 * mg.contiguous(mg.ones([2, 3]).T).shape
 */
export function contiguous(a: ArrayInput, allowColMajor = false, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "contiguous");
  return makeArray(Contiguous, [x], { allowColMajor: !!allowColMajor }, resolveStream(opts.stream));
}

/**
 * A view with explicit shape, strides (in elements) and offset over `a`'s elements taken in
 * row-major order, as mx.as_strided. MLX does not check the addresses; here a view that would
 * reach outside the array's elements is rejected.
 * @example
 * mg.asStrided(mg.arange(6), [2, 3], [1, 1])
 */
export function asStrided(a: ArrayInput, shape?: readonly number[] | null, strides?: readonly number[] | null, offset = 0, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "as_strided");
  const s = shape ? [...shape] : [...x.shape];
  for (const d of s) {
    checkInt(d, "shape entries", "as_strided");
    if (d < 0) throw new RangeError("[as_strided] Negative dimensions not allowed.");
  }
  const st = strides ? [...strides] : rowMajorStrides(s);
  if (st.length !== s.length) throw new Error(`[as_strided] Got ${st.length} strides for a shape with ${s.length} dimensions.`);
  st.forEach((v) => checkInt(v, "strides", "as_strided"));
  checkInt(offset, "offset", "as_strided");
  if (offset < 0) throw new RangeError("[as_strided] offset must be non-negative.");
  if (shapeSize(s) > 0) {
    let lo = offset;
    let hi = offset;
    s.forEach((d, i) => {
      const span = (d - 1) * st[i]!;
      if (span < 0) lo += span;
      else hi += span;
    });
    if (lo < 0 || hi >= x.size) {
      throw new RangeError(`[as_strided] The view reads elements ${lo}..${hi}, outside the ${x.size} elements of the array.`);
    }
  }
  const flat = contiguous(reshape(x, [x.size], opts), false, opts);
  return makeArray(AsStrided, [flat], { shape: s, strides: st, offset }, resolveStream(opts.stream));
}

/** MLX's placement of the new axes: (1,), (1, n), (1, n, 1) from 1-D and (m, n, 1) from 2-D. */
function atleastShape(shape: readonly number[], rank: number): number[] {
  if (rank === 1) return [1];
  if (rank === 2) return shape.length === 0 ? [1, 1] : [1, shape[0]!];
  return shape.length === 0 ? [1, 1, 1] : shape.length === 1 ? [1, shape[0]!, 1] : [shape[0]!, shape[1]!, 1];
}

function atleast(args: readonly (ArrayInput | StreamOptions | undefined)[], rank: number, op: string): MgArray | MgArray[] {
  const [arrays, opts] = splitOptions(args);
  const out = arrays.map((a) => {
    const x = toArray(a, op);
    return x.ndim >= rank ? x : reshape(x, atleastShape(x.shape, rank), opts);
  });
  return out.length === 1 ? out[0]! : out;
}

/**
 * Arrays with at least one dimension, as mx.atleast_1d: one array in, one out; several in, a list.
 * @example
 * mg.atleast1d(mg.array(5)).shape
 */
export function atleast1d(a: ArrayInput, opts?: StreamOptions): MgArray;
export function atleast1d(...arys: (ArrayInput | StreamOptions)[]): MgArray | MgArray[];
export function atleast1d(...arys: (ArrayInput | StreamOptions | undefined)[]): MgArray | MgArray[] {
  return atleast(arys, 1, "atleast_1d");
}

/**
 * Arrays with at least two dimensions, as mx.atleast_2d (1-D → (1, n)).
 * @example
 * mg.atleast2d(mg.array([1, 2])).shape
 */
export function atleast2d(a: ArrayInput, opts?: StreamOptions): MgArray;
export function atleast2d(...arys: (ArrayInput | StreamOptions)[]): MgArray | MgArray[];
export function atleast2d(...arys: (ArrayInput | StreamOptions | undefined)[]): MgArray | MgArray[] {
  return atleast(arys, 2, "atleast_2d");
}

/**
 * Arrays with at least three dimensions, as mx.atleast_3d (1-D → (1, n, 1), 2-D → (m, n, 1)).
 * @example
 * mg.atleast3d(mg.array([1, 2])).shape
 */
export function atleast3d(a: ArrayInput, opts?: StreamOptions): MgArray;
export function atleast3d(...arys: (ArrayInput | StreamOptions)[]): MgArray | MgArray[];
export function atleast3d(...arys: (ArrayInput | StreamOptions | undefined)[]): MgArray | MgArray[] {
  return atleast(arys, 3, "atleast_3d");
}

/**
 * unstack's keyword options: `axis` (default 0) and `stream`.
 */
export interface UnstackOptions extends StreamOptions {
  axis?: number;
}

/**
 * The sub-arrays along `axis` (keyword-only in MLX), each without that axis, as mx.unstack.
 * @example
 * mg.unstack(mg.array([[1, 2], [3, 4]]), { axis: 1 })
 */
export function unstack(x: ArrayInput, opts: UnstackOptions = {}): MgArray[] {
  const a = toArray(x, "unstack");
  const ax = normalizeAxis(opts.axis ?? 0, a.ndim, "unstack");
  const n = a.shape[ax]!;
  if (n === 0) return [];
  return split(a, n, ax, opts).map((p) => squeeze(p, ax, opts));
}

/**
 * The n-th discrete difference along `axis`, as mx.diff.
 * @example
 * mg.diff(mg.array([1, 4, 9, 16]))
 */
export function diff(a: ArrayInput, n = 1, axis = -1, opts: StreamOptions = {}): MgArray {
  let x = toArray(a, "diff");
  const ax = axis < 0 ? axis + x.ndim : axis;
  if (!Number.isInteger(axis) || ax < 0 || ax >= x.ndim) throw new RangeError("[diff] Axis is out of bounds for the array.");
  checkInt(n, "n", "diff");
  if (n < 0) throw new RangeError("[diff] Order `n` must be non-negative.");
  // Each difference shortens the axis by one: past its length every further one is the same
  // empty array, so n beyond length + 1 changes nothing (diff(x, 2**53) must not loop 2^53 times).
  const rounds = Math.min(n, x.shape[ax]! + 1);
  for (let i = 0; i < rounds; i++) {
    const len = x.shape[ax]!;
    const start = x.shape.map(() => 0);
    const stop = [...x.shape];
    start[ax] = Math.min(1, len);
    const upper = sliceStatic(x, start, x.shape, undefined, opts);
    start[ax] = 0;
    stop[ax] = Math.max(len - 1, 0);
    const lower = sliceStatic(x, start, stop, undefined, opts);
    x = subtract(upper, lower, opts);
  }
  return x;
}

/**
 * The Kronecker product, as mx.kron.
 * @example
 * mg.kron(mg.array([1, 2]), mg.array([1, 10]))
 */
export function kron(a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "kron");
  const y = toArray(b, "kron");
  if (x.size === 0 || y.size === 0) throw new Error("[kron] Input arrays cannot be empty.");
  const nd = Math.max(x.ndim, y.ndim);
  // Interleave the axes: x on even positions, y on odd ones; their product flattens pairwise.
  const xs = new Array<number>(2 * nd).fill(1);
  const ys = new Array<number>(2 * nd).fill(1);
  const out = new Array<number>(nd).fill(1);
  for (let i = nd - 1, j = x.ndim - 1; j >= 0; i--, j--) {
    xs[2 * i] = x.shape[j]!;
    out[i] = out[i]! * x.shape[j]!;
  }
  for (let i = nd - 1, j = y.ndim - 1; j >= 0; i--, j--) {
    ys[2 * i + 1] = y.shape[j]!;
    out[i] = out[i]! * y.shape[j]!;
  }
  return reshape(multiply(reshape(x, xs, opts), reshape(y, ys, opts), opts), out, opts);
}

import { take } from "./indexing.ts";
