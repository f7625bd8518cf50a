// Broadcasting views for ops, with errors that name the op that asked. Internal: index.ts
// re-exports the public mg.broadcastTo and mg.broadcastArrays from shape.ts, not these.
import type { MgArray } from "../array.ts";
import { resolveStream, type StreamOrDevice } from "../device.ts";
import { makeArray, rejectFloat64OnGpu } from "../graph.ts";
import { Broadcast } from "../primitives/views.ts";
import { broadcastShapes, formatShape, shapesEqual } from "../shape.ts";

/** `x` as a view of `shape` (itself when it already has it). */
export function broadcastToShape(x: MgArray, shape: readonly number[], op: string, stream?: StreamOrDevice | null): MgArray {
  const target = [...shape];
  if (!shapesEqual(broadcastShapes([x.shape, target], op), target)) {
    throw new Error(`[${op}] Cannot broadcast array of shape ${formatShape(x.shape)} into shape ${formatShape(target)}.`);
  }
  if (shapesEqual(x.shape, target)) return x;
  return makeArray(Broadcast, [x], { shape: target }, resolveStream(stream));
}

/** The arrays as views of their common broadcast shape. */
export function broadcastAll(xs: readonly MgArray[], op: string, stream?: StreamOrDevice | null): MgArray[] {
  const shape = broadcastShapes(xs.map((x) => x.shape), op);
  const s = resolveStream(stream);
  // (the dtype list only matters on the GPU: no array per op on the CPU)
  if (s.device.type === "gpu") rejectFloat64OnGpu(op, xs.map((x) => x.dtype), s);
  return xs.map((x) => (shapesEqual(x.shape, shape) ? x : makeArray(Broadcast, [x], { shape }, s)));
}
