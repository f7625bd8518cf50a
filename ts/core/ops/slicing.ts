// Static slicing (a view): the building block of indexing, split and derivative rules.
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { Slice } from "../primitives/views.ts";
import { type StreamOptions, toArray, type ArrayInput } from "./convert.ts";

/**
 * A strided view `a[start:stop:step]` per axis, with already-normalised bounds (as MLX's C++
 * slice(a, start, stop, strides)). Negative steps walk backwards from `start` toward `stop`.
 */
export function sliceStatic(a: ArrayInput, start: readonly number[], stop: readonly number[], strides?: readonly number[], opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "slice");
  if (start.length !== x.ndim || stop.length !== x.ndim || (strides && strides.length !== x.ndim)) {
    throw new Error(`[slice] Invalid number of indices or strides for array with dimension ${x.ndim}.`);
  }
  const st = strides ? [...strides] : start.map(() => 1);
  if (st.some((s) => s === 0)) throw new Error("[slice] Slice step cannot be zero.");
  const identity = start.every((s, i) => s === 0 && stop[i] === x.shape[i] && st[i] === 1);
  if (identity) return x;
  return makeArray(Slice, [x], { start: [...start], stop: [...stop], strides: st }, resolveStream(opts.stream));
}
