// Indexing primitives (MLX's Gather, Scatter, GatherAxis, ScatterAxis, SliceUpdate, DynamicSlice,
// DynamicSliceUpdate): data moved to or from computed positions. Ops in ts/core/ops/scatter.ts
// and ts/core/ops/indexing.ts validate, promote and broadcast before building these nodes.
// Rules: ts/core/rules/indexing.ts.
//
// Index bounds, on every device: MLX does not check integer-array indices (an out-of-range index
// reads or writes unrelated memory). Here an index is wrapped once if negative (idx + size, as
// MLX) and then:
//   - unchecked (default): an element whose address falls outside the array reads as 0 and an
//     update aimed outside it is dropped — never memory outside the array;
//   - checked (MG_CHECK_INDICES=1): evaluation throws `[gather] Index 7 is out of bounds for
//     axis 0 with size 3 ...` (`outOfBounds`).
import type { Primitive } from "../primitive.ts";
import { sliceLength } from "../layout.ts";

/** How updates combine with existing elements (MLX's Scatter/SliceUpdate reduce types). */
export type UpdateMode = "none" | "sum" | "prod" | "max" | "min";

/** True when integer-array indices are bounds-checked at evaluation (MG_CHECK_INDICES=1). */
export function indexChecksEnabled(): boolean {
  const v = process.env.MG_CHECK_INDICES;
  return v !== undefined && v !== "" && v !== "0" && v.toLowerCase() !== "false";
}

/** The error of a checked out-of-range index (the same on every device). */
export function outOfBounds(op: string, index: number, axis: number, size: number): Error {
  return new RangeError(
    `[${op}] Index ${index} is out of bounds for axis ${axis} with size ${size} (MG_CHECK_INDICES is on).`,
  );
}

// ---------------------------------------------------------------------------------------------
// Gather

export interface GatherParams {
  /** The source axes the index arrays address, one per index array. */
  axes: number[];
  /** Extent of the slice taken at every index position (one per source axis). */
  sliceSizes: number[];
}

/**
 * out[i..., s...] = a[start(i) + s]: inputs are [a, ...indices] with the indices broadcast to one
 * shape and dtype; the output shape is indexShape ++ sliceSizes.
 */
export const Gather: Primitive<GatherParams> = {
  name: "Gather",
  outputSpecs: ([a, ...idx], p) => [{ shape: [...(idx[0]?.shape ?? []), ...p.sliceSizes], dtype: a!.dtype }],
  paramsKey: (p) => `${p.axes}|${p.sliceSizes}`,
};

// ---------------------------------------------------------------------------------------------
// Scatter

export interface ScatterParams {
  mode: UpdateMode;
  axes: number[];
}

/**
 * out = a with updates combined in at computed positions: inputs are [a, ...indices, updates];
 * updates has shape indexShape ++ sliceShape (sliceShape has a's rank). Updates apply one at a
 * time in row-major order, so every duplicate index takes effect ("none": the last one wins).
 */
export const Scatter: Primitive<ScatterParams> = {
  name: "Scatter",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  paramsKey: (p) => `${p.mode}|${p.axes}`,
};

// ---------------------------------------------------------------------------------------------
// Along one axis (take_along_axis / put_along_axis)

export interface AxisParams {
  axis: number;
}

/** out[..., j, ...] = a[..., idx[..., j, ...], ...]: inputs [a, idx] agree off `axis`. */
export const GatherAxis: Primitive<AxisParams> = {
  name: "GatherAxis",
  opName: () => "take_along_axis",
  outputSpecs: ([a, idx]) => [{ shape: [...idx!.shape], dtype: a!.dtype }],
  paramsKey: (p) => String(p.axis),
};

export interface ScatterAxisParams {
  mode: "none" | "sum";
  axis: number;
}

/** out = a; out[..., idx[..., j, ...], ...] = (or +=) upd[..., j, ...]: inputs [a, idx, upd]. */
export const ScatterAxis: Primitive<ScatterAxisParams> = {
  name: "ScatterAxis",
  opName: () => "put_along_axis",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  paramsKey: (p) => `${p.mode}|${p.axis}`,
};

// ---------------------------------------------------------------------------------------------
// Static slice update

export interface SliceUpdateParams {
  mode: UpdateMode;
  /** Normalised bounds, as Slice's: the region a[start:stop:strides] has the update's shape. */
  start: number[];
  stop: number[];
  strides: number[];
}

/** out = a with the region a[start:stop:strides] replaced by (or combined with) the update. */
export const SliceUpdate: Primitive<SliceUpdateParams> = {
  name: "SliceUpdate",
  opName: () => "slice_update",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  paramsKey: (p) => `${p.mode}|${p.start}|${p.stop}|${p.strides}`,
};

/** The update shape of a static slice update (the region's shape). */
export function sliceRegionShape(p: Pick<SliceUpdateParams, "start" | "stop" | "strides">): number[] {
  return p.start.map((s, i) => sliceLength(s, p.stop[i]!, p.strides[i]!));
}

// ---------------------------------------------------------------------------------------------
// Dynamic slices (start positions are an array input)

export interface DynamicSliceParams {
  axes: number[];
  sliceSize: number[];
}

/** out = a[start : start + sliceSize] on `axes`: inputs [a, start]. */
export const DynamicSlice: Primitive<DynamicSliceParams> = {
  name: "DynamicSlice",
  opName: () => "slice",
  outputSpecs: ([a], p) => [{ shape: [...p.sliceSize], dtype: a!.dtype }],
  paramsKey: (p) => `${p.axes}|${p.sliceSize}`,
};

export interface DynamicSliceUpdateParams {
  axes: number[];
}

/** out = a with a[start : start + update.shape] = update on `axes`: inputs [a, update, start]. */
export const DynamicSliceUpdate: Primitive<DynamicSliceUpdateParams> = {
  name: "DynamicSliceUpdate",
  opName: () => "slice_update",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  paramsKey: (p) => String(p.axes),
};
