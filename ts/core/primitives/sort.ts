// Ordering primitives along one axis (MLX's Sort, ArgSort, Partition, ArgPartition, SearchSorted)
// and the two index moves their derivatives are made of: a gather along an axis and its adjoint,
// a scatter-add along an axis. Sorting is stable with NaN last (MLX's CPU order).
import type { MgArray } from "../array.ts";
import { resolveStream, type Stream } from "../device.ts";
import { uint32 } from "../dtype.ts";
import { makeArray } from "../graph.ts";
import type { Primitive } from "../primitive.ts";
import {
  argsortLanes, gatherAlongAxisRaw, readKeys, scatterAddAlongAxis as scatterAddCpu, searchSorted,
} from "../../backend/cpu/sort.ts";
import { readNumbers, writeNumbers } from "../../backend/cpu/values.ts";
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

/** Sorted copy along `axis`. */
export const Sort: Primitive<AxisParams> = {
  name: "Sort",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  cpu([a], [out], p) {
    const order = argsortLanes(readKeys(a!), a!.shape, p.axis);
    gatherAlongAxisRaw(a!, order, a!.shape, p.axis, out!);
  },
  // y = P x for the sorting permutation P, which is locally constant in x:
  // dx = Pᵀ g (scatter the cotangent back), and the tangent is P t (gather it forward).
  vjp([a], [g], _argnums, _outputs, p) {
    const perm = stopGradient(argsortOp(a!, p.axis));
    return [scatterAddAlong(g!, perm, p.axis, a!.shape)];
  },
  jvp([a], [t], _argnums, _outputs, p) {
    const perm = stopGradient(argsortOp(a!, p.axis));
    return [gatherAlong(t!, perm, p.axis)];
  },
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
  cpu([a], [out], p) {
    const order = argsortLanes(readKeys(a!), a!.shape, p.axis);
    gatherAlongAxisRaw(a!, order, a!.shape, p.axis, out!);
  },
  // As Sort: a locally constant permutation.
  vjp([a], [g], _argnums, _outputs, p) {
    const perm = stopGradient(argpartitionOp(a!, p.kth, p.axis));
    return [scatterAddAlong(g!, perm, p.axis, a!.shape)];
  },
  jvp([a], [t], _argnums, _outputs, p) {
    const perm = stopGradient(argpartitionOp(a!, p.kth, p.axis));
    return [gatherAlong(t!, perm, p.axis)];
  },
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

// ---------------------------------------------------------------------------------------------
// Index moves along one axis. `index` (uint32) has the output's shape for the gather and the
// updates' shape for the scatter; it matches the other array on every axis but `axis`.

/** out[…, k, …] = x[…, index[…, k, …], …]. */
export const GatherAlongAxis: Primitive<AxisParams> = {
  name: "GatherAlongAxis",
  outputSpecs: ([x, index]) => [{ shape: [...index!.shape], dtype: x!.dtype }],
  cpu([x, index], [out], p) {
    gatherAlongAxisRaw(x!, readIndex(index!), index!.shape, p.axis, out!);
  },
  // A gather is linear in x; its adjoint adds each cotangent back where it was read from.
  vjp([x, index], [g], argnums, _o, p) {
    return argnums.map((i) => (i === 0 ? scatterAddAlong(g!, index!, p.axis, x!.shape) : zerosLike(index!)));
  },
  jvp([, index], tangents, argnums, _o, p) {
    const k = argnums.indexOf(0);
    return [k >= 0 ? gatherAlong(tangents[k]!, index!, p.axis) : zerosLike(index!)];
  },
  // Both operands get the batch axis first (an unbatched one is broadcast along it).
  vmap(inputs, axes, p) {
    const [x, index] = batchFirst(inputs, axes);
    return [[gatherAlong(x!, index!, p.axis + 1)], [0]];
  },
  paramsKey: (p) => String(p.axis),
};

export interface ScatterAddParams {
  axis: number;
  /** Shape of the output (zeros plus the scattered updates). */
  shape: number[];
}

/** out = zeros(shape); out[…, index[…, k, …], …] += updates[…, k, …]. */
export const ScatterAddAlongAxis: Primitive<ScatterAddParams> = {
  name: "ScatterAddAlongAxis",
  outputSpecs: ([u], p) => [{ shape: [...p.shape], dtype: u!.dtype }],
  cpu([u, index], [out], p) {
    scatterAddCpu(u!, readIndex(index!), p.axis, out!);
  },
  // Linear in the updates; the adjoint of a scatter-add reads each cotangent where it was added.
  vjp([u, index], [g], argnums, _o, p) {
    return argnums.map((i) => (i === 0 ? gatherAlong(g!, index!, p.axis) : zerosLike(index!)));
  },
  jvp([, index], tangents, argnums, [y], p) {
    const k = argnums.indexOf(0);
    return [k >= 0 ? scatterAddAlong(tangents[k]!, index!, p.axis, p.shape) : zerosLike(y!)];
  },
  vmap(inputs, axes, p) {
    const [u, index] = batchFirst(inputs, axes);
    return [[scatterAddAlong(u!, index!, p.axis + 1, [u!.shape[0]!, ...p.shape])], [0]];
  },
  paramsKey: (p) => `${p.axis}|${p.shape.join(",")}`,
};

/** Moves each batch axis to the front; unbatched inputs are broadcast to the batch size. */
export function batchFirst(inputs: readonly MgArray[], axes: readonly number[]): MgArray[] {
  const k = axes.findIndex((b) => b >= 0);
  if (k < 0) throw new Error("[vmap] no batched input (internal error).");
  const size = inputs[k]!.shape[axes[k]!]!;
  return inputs.map((x, i) => {
    const b = axes[i]!;
    if (b >= 0) return moveaxis(x, b, 0);
    return broadcastTo(expandDims(x, 0), [size, ...x.shape]);
  });
}

function readIndex(index: MgArray): Float64Array {
  return readNumbers(index);
}

/** Builds a GatherAlongAxis node (indices must be in range; callers construct them). */
export function gatherAlong(x: MgArray, index: MgArray, axis: number, stream?: Stream): MgArray {
  return makeArray(GatherAlongAxis, [x, index], { axis }, stream ?? resolveStream());
}

/** Builds a ScatterAddAlongAxis node producing an array of `shape`. */
export function scatterAddAlong(updates: MgArray, index: MgArray, axis: number, shape: readonly number[], stream?: Stream): MgArray {
  return makeArray(ScatterAddAlongAxis, [updates, index], { axis, shape: [...shape] }, stream ?? resolveStream());
}

// The ops these rules call are built on the records above (an import cycle resolved lazily).
import { argpartition as argpartitionOp, argsort as argsortOp } from "../ops/sort.ts";
import { broadcastTo, expandDims, moveaxis } from "../ops/shape.ts";
