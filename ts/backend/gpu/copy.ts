// Copies on the GPU: a strided view (or another dtype) into a fresh row-contiguous array, with the
// unary kernels and the Cast functor. Every copy the user did not ask for is noted in the trace by
// its caller.
import type { MgArray } from "../../core/array.ts";
import type { KernelInstance } from "../../core/primitive.ts";
import { Precision } from "../../core/trace.ts";
import { dtypeTag, mslType } from "./dtypes.ts";
import { accessOf, elementwiseGrid } from "./elementwise.ts";
import { type GpuEncoder, idxTag, idxType, int32Bytes, int64Bytes, linearThreadgroup, needsLargeIndex } from "./encoder.ts";
import { kernelPipeline } from "./kernels.ts";

/** The kernel that copies `src` (converting to `to`, default its own dtype) row-contiguously. */
export function copyKernel(src: MgArray, to = src.dtype): KernelInstance[] {
  if (!src.layout) return []; // not materialised yet: compiled on demand when encoded
  const T = mslType(src.dtype, "copy");
  const U = mslType(to, "copy");
  const tag = `${dtypeTag(src.dtype)}_${dtypeTag(to)}`;
  const large = needsLargeIndex(src.size, [src]);
  if (src.layout && accessOf(src, src.size) === "contiguous" && !large) {
    return [{ file: "unary.metal", name: `mg_copy_v_${tag}`, instantiation: `unary_v<Cast<${U}>, ${T}, ${U}>` }];
  }
  return [{ file: "unary.metal", name: `mg_copy_g_${tag}_${idxTag(large)}`, instantiation: `unary_g<Cast<${U}>, ${T}, ${U}, ${idxType(large)}>` }];
}

/** Encodes a copy of `src` into `out` (allocated row-contiguous, same shape). */
export function encodeCopy(enc: GpuEncoder, src: MgArray, out: MgArray, primitive: string): void {
  const [kernel] = copyKernel(src, out.dtype);
  const pipeline = kernelPipeline(kernel!);
  const a = enc.input(src, 0);
  const o = enc.output(out, 1);
  const n = out.size;
  const strided = kernel!.instantiation.startsWith("unary_g");
  const bytes = strided
    ? // Walk the source's own shape with its strides (a reshape copy's output shape differs).
      [int32Bytes(2, src.shape), int64Bytes(3, [...a.strides]), int32Bytes(4, [src.ndim]), int64Bytes(5, [a.base]), int64Bytes(6, [n])]
    : [];
  const grid = elementwiseGrid(n);
  enc.dispatch(
    {
      pipeline,
      buffers: [a.binding, o.binding],
      bytes,
      grid,
      threadgroup: linearThreadgroup(pipeline, grid[0]),
      mustWrite: [1],
    },
    { primitives: [primitive], inputs: [src], outputs: [out], layout: `${strided ? "strided" : "contiguous"}${needsLargeIndex(src.size, [src]) ? ", large-index" : ""}`, precision: Precision.none },
  );
}
