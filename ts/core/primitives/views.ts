// Primitives that only change how existing data is viewed (MLX's copy_shared_buffer family):
// broadcast, reshape, transpose, slice, as_strided. Their layout rules (ts/core/layout.ts) place
// the output in the input's storage; only a reshape of a non-contiguous input needs a copy, which
// the backends' Reshape kernels make and the trace records. Rules: ts/core/rules/views.ts.
import type { Primitive } from "../primitive.ts";
import { broadcastStrides, reshapeStrides, sliceLength, sliceView, transposeStrides } from "../layout.ts";

export interface BroadcastParams {
  shape: number[];
}

export const Broadcast: Primitive<BroadcastParams> = {
  name: "Broadcast",
  opName: () => "broadcast_to",
  fusion: "broadcast",
  outputSpecs: ([a], p) => [{ shape: p.shape, dtype: a!.dtype }],
  layout: ([a], [l], _o, p) => [{ input: 0, offset: l!.offset, strides: broadcastStrides(a!.shape, l!.strides, p.shape) }],
  // The target is the broadcast of the operands its elementwise consumer combines.
  shapeless: { resize: "broadcast", withShape: (p, shape) => ({ ...p, shape }) },
  paramsKey: (p) => p.shape.join(","),
};

export interface ReshapeParams {
  shape: number[];
}

export const Reshape: Primitive<ReshapeParams> = {
  name: "Reshape",
  outputSpecs: ([a], p) => [{ shape: p.shape, dtype: a!.dtype }],
  // Null (a copy) when the input's strides cannot be regrouped into the new shape.
  layout([a], [l], _o, p) {
    const strides = reshapeStrides(a!.shape, l!.strides, p.shape, l!.rowContiguous);
    return strides ? [{ input: 0, offset: l!.offset, strides }] : null;
  },
  // Only as the squeeze of a reduction's kept axes (sum without keepdims).
  shapeless: { resize: "squeeze", withShape: (p, shape) => ({ ...p, shape }) },
  paramsKey: (p) => p.shape.join(","),
};

export interface TransposeParams {
  axes: number[];
}

export const Transpose: Primitive<TransposeParams> = {
  name: "Transpose",
  outputSpecs: ([a], p) => [{ shape: p.axes.map((ax) => a!.shape[ax]!), dtype: a!.dtype }],
  layout: (_i, [l], _o, p) => [{ input: 0, offset: l!.offset, strides: transposeStrides(l!.strides, p.axes) }],
  shapeless: "infer",
  paramsKey: (p) => p.axes.join(","),
};

export interface SliceParams {
  start: number[];
  stop: number[];
  strides: number[];
}

export const Slice: Primitive<SliceParams> = {
  name: "Slice",
  outputSpecs: ([a], p) => [
    { shape: p.start.map((s, i) => sliceLength(s, p.stop[i]!, p.strides[i]!)), dtype: a!.dtype },
  ],
  layout: (_i, [l], [out], p) => [sliceView(l!, p.start, p.strides, out!.size === 0)],
  paramsKey: (p) => `${p.start}|${p.stop}|${p.strides}`,
};

export interface AsStridedParams {
  shape: number[];
  strides: number[];
  offset: number;
}

/** as_strided addresses the input's elements as if row-contiguous (MLX); the op makes it so. */
export const AsStrided: Primitive<AsStridedParams> = {
  name: "AsStrided",
  opName: () => "as_strided",
  outputSpecs: ([a], p) => [{ shape: p.shape, dtype: a!.dtype }],
  layout(_i, [l], _o, p) {
    if (!l!.rowContiguous) throw new Error("[as_strided] input must be row-contiguous (call contiguous() first).");
    return [{ input: 0, offset: l!.offset + p.offset, strides: p.strides }];
  },
  paramsKey: (p) => `${p.shape}|${p.strides}|${p.offset}`,
};
