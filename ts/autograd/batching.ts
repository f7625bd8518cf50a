// Helpers for primitives' vmap rules. A batched input carries its batch axis at `axes[i]`; an
// unbatched one has axis -1. Rules build ordinary nodes, so a vmapped graph is one graph over the
// whole batch (no loop), and runs on whatever stream the transform made the default.
import type { MgArray } from "../core/array.ts";
import { resolveStream } from "../core/device.ts";
import { makeNode } from "../core/graph.ts";
import type { Primitive } from "../core/primitive.ts";
import { broadcastTo, expandDims, moveaxis } from "../core/ops/shape.ts";

/** The batch size: the extent of the batch axis of the first batched input. */
export function batchSize(inputs: readonly MgArray[], axes: readonly number[]): number {
  const i = axes.findIndex((a) => a >= 0);
  if (i < 0) throw new Error("[vmap] a vmap rule was called without a batched input (internal error).");
  return inputs[i]!.shape[axes[i]!]!;
}

/** Puts the batch axis of `x` at `to`; an unbatched `x` is broadcast along a new axis of size `size` there. */
export function moveBatchAxis(x: MgArray, axis: number, to: number, size: number): MgArray {
  if (axis >= 0) return axis === to ? x : moveaxis(x, axis, to);
  const e = expandDims(x, to);
  const shape = [...e.shape];
  shape[to] = size;
  return broadcastTo(e, shape);
}

/**
 * The rule of every elementwise primitive (its inputs share one shape): align the batch axes of
 * all inputs at the first batched input's axis (unbatched inputs broadcast along it) and apply
 * the primitive once. Unary primitives keep their axis without any data movement.
 */
export function vmapElementwise<P>(
  prim: Primitive<P>,
  inputs: readonly MgArray[],
  axes: readonly number[],
  params: P,
): [MgArray[], number[]] {
  const to = axes.find((a) => a >= 0)!;
  const size = batchSize(inputs, axes);
  const aligned = inputs.map((x, i) => moveBatchAxis(x, axes[i]!, to, size));
  const outs = makeNode(prim, aligned, params, resolveStream());
  return [outs, outs.map(() => to)];
}

/** Rule for primitives that need the batch axis first: moves every batched input's axis to 0. */
export function batchFirst(inputs: readonly MgArray[], axes: readonly number[]): MgArray[] {
  return inputs.map((x, i) => (axes[i]! >= 0 && axes[i] !== 0 ? moveaxis(x, axes[i]!, 0) : x));
}
