// Ordering primitives along one axis (MLX's Sort, ArgSort, Partition, ArgPartition, SearchSorted).
// Sorting is stable with NaN last (MLX's CPU order). Rules: ts/core/rules/sort.ts.
import { uint32 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";

export interface AxisParams {
  axis: number;
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
  shapeless: "infer",
  paramsKey: (p) => String(p.axis),
};

/** Indices (uint32) that sort along `axis`, stable. */
export const ArgSort: Primitive<AxisParams> = {
  name: "ArgSort",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: uint32 }],
  shapeless: "infer",
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
  paramsKey: (p) => `${p.kth}|${p.axis}`,
};

/** Indices (uint32) that partition along `axis` around the kth element. */
export const ArgPartition: Primitive<PartitionParams> = {
  name: "ArgPartition",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: uint32 }],
  paramsKey: (p) => `${p.kth}|${p.axis}`,
};

export interface SearchSortedParams {
  right: boolean;
}

/** Insertion points (uint32) of `values` into the 1-D ascending `sorted` (same dtype). */
export const SearchSorted: Primitive<SearchSortedParams> = {
  name: "SearchSorted",
  outputSpecs: ([, v]) => [{ shape: [...v!.shape], dtype: uint32 }],
  paramsKey: (p) => (p.right ? "right" : "left"),
};
