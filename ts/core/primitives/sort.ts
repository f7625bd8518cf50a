// Ordering primitives along one axis (MLX's Sort, ArgSort, Partition, ArgPartition, SearchSorted).
// Sorting is stable with NaN last (MLX's CPU order). Their derivatives move cotangents through
// the sorting permutation with take_along_axis / put_along_axis, as MLX's rules do.
import { resolveStream } from "../device.ts";
import { uint32 } from "../dtype.ts";
import { makeArray } from "../graph.ts";
import type { MgArray } from "../array.ts";
import type { Primitive } from "../primitive.ts";
import {
  argsortLanes, gatherAlongAxisRaw, readKeys, searchSorted,
} from "../../backend/cpu/sort.ts";
import { writeNumbers } from "../../backend/cpu/values.ts";
import { searchSortedRule, sortRule } from "../../backend/gpu/sort.ts";
import { zerosLike } from "../ops/creation.ts";
import { stopGradient } from "../ops/elementwise.ts";

export interface AxisParams {
  axis: number;
}

/** The primitive's axis once a batch axis is inserted at `b` (-1: not batched). */
export function shiftAxis(axis: number, b: number): number {
  return b >= 0 && b <= axis ? axis + 1 : axis;
}

export interface PartitionParams {
  /** Normalised: 0 ≤ kth < shape[axis]. */
  kth: number;
  axis: number;
}

/**
 * Sort and Partition reorder each lane by a permutation P that is locally constant in x, so
 * y = P x: dx = Pᵀ g (scatter the cotangent back) and the tangent is P t (gather it forward).
 * Their CPU reference is the same: the fully sorted lane is also a valid partition.
 */
function reorderingRules<P extends AxisParams>(
  permutation: (a: MgArray, p: P) => MgArray,
): Pick<Primitive<P>, "cpu" | "vjp" | "jvp"> {
  return {
    cpu([a], [out], p) {
      const order = argsortLanes(readKeys(a!), a!.shape, p.axis);
      gatherAlongAxisRaw(a!, order, a!.shape, p.axis, out!);
    },
    vjp([a], [g], _argnums, _outputs, p) {
      return [putAlongAxis(zerosLike(a!), stopGradient(permutation(a!, p)), g!, p.axis)];
    },
    jvp([a], [t], _argnums, _outputs, p) {
      return [takeAlongAxis(t!, stopGradient(permutation(a!, p)), p.axis)];
    },
  };
}

/** Sorted copy along `axis`. */
export const Sort: Primitive<AxisParams> = {
  name: "Sort",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  ...reorderingRules((a, p) => argsortOp(a, p.axis)),
  gpu: sortRule("values"),
  // Sorting along an axis is independent for every other index: the batch axis just shifts it.
  vmap: ([a], [b], p) => [[makeArray(Sort, [a!], { axis: shiftAxis(p.axis, b!) }, resolveStream())], [b!]],
  paramsKey: (p) => String(p.axis),
};

/** Indices (uint32) that sort along `axis`, stable. */
export const ArgSort: Primitive<AxisParams> = {
  name: "ArgSort",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: uint32 }],
  cpu([a], [out], p) {
    writeNumbers(out!, argsortLanes(readKeys(a!), a!.shape, p.axis));
  },
  gpu: sortRule("indices"),
  // Integer output: no gradient flows to the input.
  vjp: ([a]) => [zerosLike(a!)],
  jvp: (_p, _t, _a, [y]) => [zerosLike(y!)],
  vmap: ([a], [b], p) => [[makeArray(ArgSort, [a!], { axis: shiftAxis(p.axis, b!) }, resolveStream())], [b!]],
  paramsKey: (p) => String(p.axis),
};

// Any arrangement with the kth element in its sorted place, smaller-or-equal elements before it
// and greater-or-equal after it is a valid partition. The CPU reference returns the fully
// sorted lane — one such arrangement, deterministic — so tests of other backends must check the
// partition property, not equality with this output.

/** Partitioned copy along `axis` around the kth element. */
export const Partition: Primitive<PartitionParams> = {
  name: "Partition",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  ...reorderingRules((a, p) => argpartitionOp(a, p.kth, p.axis)),
  gpu: sortRule("values"),
  vmap: ([a], [b], p) => [[makeArray(Partition, [a!], { kth: p.kth, axis: shiftAxis(p.axis, b!) }, resolveStream())], [b!]],
  paramsKey: (p) => `${p.kth}|${p.axis}`,
};

/** Indices (uint32) that partition along `axis` around the kth element. */
export const ArgPartition: Primitive<PartitionParams> = {
  name: "ArgPartition",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: uint32 }],
  cpu([a], [out], p) {
    writeNumbers(out!, argsortLanes(readKeys(a!), a!.shape, p.axis));
  },
  gpu: sortRule("indices"),
  vjp: ([a]) => [zerosLike(a!)],
  jvp: (_p, _t, _a, [y]) => [zerosLike(y!)],
  vmap: ([a], [b], p) => [[makeArray(ArgPartition, [a!], { kth: p.kth, axis: shiftAxis(p.axis, b!) }, resolveStream())], [b!]],
  paramsKey: (p) => `${p.kth}|${p.axis}`,
};

export interface SearchSortedParams {
  right: boolean;
}

/** Insertion points (uint32) of `values` into the 1-D ascending `sorted` (same dtype). */
export const SearchSorted: Primitive<SearchSortedParams> = {
  name: "SearchSorted",
  outputSpecs: ([, v]) => [{ shape: [...v!.shape], dtype: uint32 }],
  cpu([a, v], [out], p) {
    writeNumbers(out!, searchSorted(a!, v!, p.right));
  },
  gpu: searchSortedRule,
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
  paramsKey: (p) => (p.right ? "right" : "left"),
};

// The ops these rules call are built on the records above (an import cycle resolved lazily).
import { argpartition as argpartitionOp, argsort as argsortOp } from "../ops/sort.ts";
import { putAlongAxis, takeAlongAxis } from "../ops/indexing.ts";
