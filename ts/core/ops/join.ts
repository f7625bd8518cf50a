// concatenate, stack, split.
import type { MgArray } from "../array.ts";
import { promoteTypes } from "../dtype.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { Concatenate } from "../primitives/join.ts";
import { Slice } from "../primitives/views.ts";
import { formatShape, normalizeAxis } from "../shape.ts";
import { type ArrayInput, type StreamOptions, toArray } from "./convert.ts";
import { astype } from "./elementwise.ts";
import { expandDims, flatten } from "./shape.ts";
import { sliceStatic } from "./slicing.ts";

/**
 * Joins arrays along an existing axis (axis null flattens them first), as mx.concatenate.
 * @example
 * mg.concatenate([mg.array([1, 2]), mg.array([3])])
 */
export function concatenate(arrays: readonly ArrayInput[], axis: number | null = 0, opts: StreamOptions = {}): MgArray {
  if (!Array.isArray(arrays)) throw new TypeError(`[concatenate] Expected a list of arrays, got ${typeof arrays}.`);
  if (arrays.length === 0) throw new Error("[concatenate] No arrays provided for concatenation");
  let xs = arrays.map((a) => toArray(a, "concatenate"));
  if (axis === null) {
    xs = xs.map((x) => flatten(x, 0, -1, opts));
    axis = 0;
  }
  const first = xs[0]!;
  const ax = normalizeAxis(axis, first.ndim, "concatenate");
  for (const x of xs) {
    if (x.ndim !== first.ndim) {
      throw new Error(`[concatenate] All the input arrays must have the same number of dimensions, got ${formatShape(first.shape)} and ${formatShape(x.shape)}.`);
    }
    for (let i = 0; i < x.ndim; i++) {
      if (i !== ax && x.shape[i] !== first.shape[i]) {
        throw new Error(`[concatenate] All the input array dimensions except for the concatenation axis must match exactly, got ${formatShape(first.shape)} and ${formatShape(x.shape)}.`);
      }
    }
  }
  const dtype = xs.map((x) => x.dtype).reduce(promoteTypes);
  xs = xs.map((x) => astype(x, dtype, opts));
  if (xs.length === 1) return xs[0]!;
  return makeArray(Concatenate, xs, { axis: ax }, resolveStream(opts.stream));
}
export const concat = concatenate;

/**
 * Joins arrays along a new axis, as mx.stack.
 * @example
 * mg.stack([mg.array([1, 2]), mg.array([3, 4])], 1)
 */
export function stack(arrays: readonly ArrayInput[], axis = 0, opts: StreamOptions = {}): MgArray {
  if (!Array.isArray(arrays)) throw new TypeError(`[stack] Expected a list of arrays, got ${typeof arrays}.`);
  if (arrays.length === 0) throw new Error("[stack] No arrays provided for stacking");
  const xs = arrays.map((a) => toArray(a, "stack"));
  const first = xs[0]!;
  for (const x of xs) {
    if (x.ndim !== first.ndim || x.shape.some((d, i) => d !== first.shape[i])) {
      throw new Error(`[stack] All arrays must have the same shape, got ${formatShape(first.shape)} and ${formatShape(x.shape)}.`);
    }
  }
  const ax = normalizeAxis(axis, first.ndim + 1, "stack");
  return concatenate(xs.map((x) => expandDims(x, ax, opts)), ax, opts);
}

/**
 * Splits into equal sections (an integer) or at the given indices, as mx.split. The parts are
 * views of the input.
 * @example
 * mg.split(mg.arange(6), [1, 4])
 */
export function split(a: ArrayInput, indicesOrSections: number | readonly number[], axis = 0, opts: StreamOptions = {}): MgArray[] {
  const x = toArray(a, "split");
  const ax = normalizeAxis(axis, x.ndim, "split");
  const n = x.shape[ax]!;
  let cuts: number[];
  if (typeof indicesOrSections === "number") {
    const k = indicesOrSections;
    if (!Number.isInteger(k) || k <= 0) throw new Error(`[split] Invalid number of sections ${k}.`);
    if (n % k !== 0) throw new Error(`[split] Array split does not result in sub arrays with equal size: ${n} into ${k}.`);
    cuts = Array.from({ length: k - 1 }, (_, i) => ((i + 1) * n) / k);
  } else cuts = [...indicesOrSections];
  const bounds = [0, ...cuts.map((c) => Math.min(Math.max(c < 0 ? c + n : c, 0), n)), n];
  const parts: MgArray[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const start = x.shape.map(() => 0);
    const stop = [...x.shape];
    start[ax] = bounds[i]!;
    stop[ax] = Math.max(bounds[i + 1]!, bounds[i]!);
    let part = sliceStatic(x, start, stop, undefined, opts);
    // A whole-array slice is x itself; each part must be its own array (disposing one part must
    // not dispose another, or x): split(zeros([0]), 3) gave one object three times.
    if (part === x) part = makeArray(Slice, [x], { start, stop, strides: start.map(() => 1) }, resolveStream(opts.stream));
    parts.push(part);
  }
  return parts;
}
