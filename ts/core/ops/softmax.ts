// softmax and logsumexp over any set of axes: the axes are moved last and flattened into one, so
// the primitives (ts/core/primitives/softmax.ts) only reduce a trailing axis.
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { atLeastFloat, isComplex } from "../dtype.ts";
import { makeArray } from "../graph.ts";
import { LogSumExp, Softmax } from "../primitives/softmax.ts";
import { type ArrayInput, type StreamOptions, toArray } from "./convert.ts";
import * as ew from "./elementwise.ts";
import { max, sum, type Axes } from "./reduce.ts";
import { reshape, transpose } from "./shape.ts";
import { axisList, checkKeepdims } from "../shape.ts";

/**
 * softmax's keyword options: `precise` (16-bit inputs accumulate in float32) and `stream`.
 */
export interface SoftmaxOptions extends StreamOptions {
  /** Accumulate float16/bfloat16 inputs in float32 (MLX's keyword-only `precise`). */
  precise?: boolean;
}

/** Sorted, unique, in-range axes; all axes when null. */
function softmaxAxes(x: MgArray, axis: Axes, op: string): number[] {
  if (axis === undefined || axis === null) return Array.from({ length: x.ndim }, (_, i) => i);
  const list = axisList(axis, op);
  if (x.ndim === 0 && list.length > 0) {
    throw new Error(`[${op}] Received non-empty axes for array with 0 dimensions.`);
  }
  const out: number[] = [];
  for (const ax of list) {
    if (!Number.isInteger(ax)) throw new TypeError(`[${op}] axis must be an integer, got ${ax}.`);
    const n = ax < 0 ? ax + x.ndim : ax;
    if (n < 0 || n >= x.ndim) throw new RangeError(`[${op}] Invalid axis ${ax} for array with ${x.ndim} dimensions.`);
    if (out.includes(n)) throw new Error(`[${op}] Duplicate axes detected in reduction.`);
    out.push(n);
  }
  return out.sort((p, q) => p - q);
}

/**
 * Moves `axes` last and merges them into one trailing axis. Returns that array and the shape of
 * the moved (unmerged) array and the permutation, to undo it.
 */
function gatherAxesLast(x: MgArray, axes: readonly number[], opts: StreamOptions): { y: MgArray; moved: number[]; perm: number[] } {
  const keep = x.shape.map((_, i) => i).filter((i) => !axes.includes(i));
  const perm = [...keep, ...axes];
  const movedShape = perm.map((i) => x.shape[i]!);
  const n = axes.reduce((acc, i) => acc * x.shape[i]!, 1);
  const y = reshape(transpose(x, perm, opts), [...keep.map((i) => x.shape[i]!), n], opts);
  return { y, moved: movedShape, perm };
}

/**
 * exp(x) / Σ exp(x) over `axis` (all axes when null), as mx.softmax: max-shifted, so large inputs
 * do not overflow; integer inputs become float32. A row of all −∞ gives NaN, as in MLX.
 * @example
 * mg.softmax(mg.array([1, 2, 3], mg.float32))
 */
export function softmax(a: ArrayInput, axis?: Axes, opts: SoftmaxOptions = {}): MgArray {
  const x = toArray(a, "softmax");
  if (x.size === 0) return x;
  const axes = softmaxAxes(x, axis, "softmax");
  if (isComplex(x.dtype)) {
    // MLX's composite form (the primitive is real-only).
    const m = ew.stopGradient(max(x, axes, true, opts), opts);
    const e = ew.exp(ew.subtract(x, m, opts), opts);
    return ew.divide(e, sum(e, axes, true, opts), opts);
  }
  const xf = ew.astype(x, atLeastFloat(x.dtype), opts);
  const { y, moved, perm } = gatherAxesLast(xf, axes, opts);
  const s = makeArray(Softmax, [y], { precise: !!opts.precise }, resolveStream(opts.stream));
  const inverse = new Array<number>(perm.length);
  perm.forEach((p, i) => (inverse[p] = i));
  return transpose(reshape(s, moved, opts), inverse, opts);
}

/**
 * log Σ exp(x) over `axis` (all axes when null), as mx.logsumexp: max-shifted; a reduction whose
 * maximum is ±∞ gives that infinity (all −∞ → −∞). Reducing an empty array throws.
 * @example
 * mg.logsumexp(mg.array([1000, 1000], mg.float32))
 */
export function logsumexp(a: ArrayInput, axis?: Axes, keepdims = false, opts: StreamOptions = {}): MgArray {
  const o = opts;
  const keep = checkKeepdims("logsumexp", keepdims);
  const x = toArray(a, "logsumexp");
  if (x.size === 0) throw new Error("[logsumexp] Received empty array.");
  const axes = softmaxAxes(x, axis, "logsumexp");
  const outShape = keep ? x.shape.map((d, i) => (axes.includes(i) ? 1 : d)) : x.shape.filter((_, i) => !axes.includes(i));
  if (isComplex(x.dtype)) {
    const m = ew.stopGradient(max(x, axes, true, o), o);
    const out = ew.add(ew.log(sum(ew.exp(ew.subtract(x, m, o), o), axes, true, o), o), m, o);
    return reshape(ew.where(ew.isinf(m, o), m, out, o), outShape, o);
  }
  const xf = ew.astype(x, atLeastFloat(x.dtype), o);
  const { y } = gatherAxesLast(xf, axes, o);
  const r = makeArray(LogSumExp, [y], {}, resolveStream(o.stream));
  return reshape(r, outShape, o);
}
