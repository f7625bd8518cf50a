// Derivative and batching rules of the ordering primitives (ts/core/primitives/sort.ts) and of
// ArgReduce (ts/core/primitives/argreduce.ts). Sort and Partition move cotangents through the
// sorting permutation with take_along_axis / put_along_axis, as MLX's rules do.
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { defineRules, type Rules } from "../primitive.ts";
import { ArgReduce } from "../primitives/argreduce.ts";
import { ArgPartition, ArgSort, type AxisParams, Partition, SearchSorted, Sort } from "../primitives/sort.ts";
import { zerosLike } from "../ops/creation.ts";
import { stopGradient } from "../ops/elementwise.ts";
import { putAlongAxis, takeAlongAxis } from "../ops/indexing.ts";
import { argpartition as argpartitionOp, argsort as argsortOp } from "../ops/sort.ts";

/** The primitive's axis once a batch axis is inserted at `b` (-1: not batched). */
function shiftAxis(axis: number, b: number): number {
  return b >= 0 && b <= axis ? axis + 1 : axis;
}

/**
 * Sort and Partition reorder each lane by a permutation P that is locally constant in x, so
 * y = P x: dx = Pᵀ g (scatter the cotangent back) and the tangent is P t (gather it forward).
 */
function reorderingRules<P extends AxisParams>(permutation: (a: MgArray, p: P) => MgArray): Pick<Rules<P>, "vjp" | "jvp"> {
  return {
    vjp([a], [g], _argnums, _outputs, p) {
      return [putAlongAxis(zerosLike(a!), stopGradient(permutation(a!, p)), g!, p.axis)];
    },
    jvp([a], [t], _argnums, _outputs, p) {
      return [takeAlongAxis(t!, stopGradient(permutation(a!, p)), p.axis)];
    },
  };
}

defineRules(Sort, {
  ...reorderingRules((a, p) => argsortOp(a, p.axis)),
  // Sorting along an axis is independent for every other index: the batch axis just shifts it.
  vmap: ([a], [b], p) => [[makeArray(Sort, [a!], { axis: shiftAxis(p.axis, b!) }, resolveStream())], [b!]],
});

defineRules(ArgSort, {
  // Integer output: no gradient flows to the input.
  vjp: ([a]) => [zerosLike(a!)],
  jvp: (_p, _t, _a, [y]) => [zerosLike(y!)],
  vmap: ([a], [b], p) => [[makeArray(ArgSort, [a!], { axis: shiftAxis(p.axis, b!) }, resolveStream())], [b!]],
});

defineRules(Partition, {
  ...reorderingRules((a, p) => argpartitionOp(a, p.kth, p.axis)),
  vmap: ([a], [b], p) => [[makeArray(Partition, [a!], { kth: p.kth, axis: shiftAxis(p.axis, b!) }, resolveStream())], [b!]],
});

defineRules(ArgPartition, {
  vjp: ([a]) => [zerosLike(a!)],
  jvp: (_p, _t, _a, [y]) => [zerosLike(y!)],
  vmap: ([a], [b], p) => [[makeArray(ArgPartition, [a!], { kth: p.kth, axis: shiftAxis(p.axis, b!) }, resolveStream())], [b!]],
});

defineRules(SearchSorted, {
  // Piecewise constant in both inputs.
  vjp: (primals, _c, argnums) => argnums.map((i) => zerosLike(primals[i]!)),
  jvp: (_p, _t, _a, [y]) => [zerosLike(y!)],
  // Elementwise in the values; one sequence for all of them.
  vmap([a, v], [ba, bv], p) {
    if (ba! >= 0) {
      throw new Error("[searchsorted] Cannot vmap over the sorted sequence, only over the values being searched for.");
    }
    return [[makeArray(SearchSorted, [a!, v!], p, resolveStream())], [bv!]];
  },
});

defineRules(ArgReduce, {
  // An index is piecewise constant in the input: no gradient flows back, the tangent is zero.
  vjp: ([a]) => [zerosLike(a!)],
  jvp: (_p, _t, _a, [y]) => [zerosLike(y!)],
  // The reduced axis is kept (size 1), so the batch axis stays where it is.
  vmap: ([a], [b], p) => [[makeArray(ArgReduce, [a!], { type: p.type, axis: shiftAxis(p.axis, b!) }, resolveStream())], [b!]],
});
