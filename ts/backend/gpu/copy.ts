// Copies on the GPU: a strided view (or another dtype) into a fresh row-contiguous array, with the
// unary kernels and the Cast functor. Every copy the user did not ask for is noted in the trace by
// its caller.
import type { MgArray } from "../../core/array.ts";
import type { KernelInstance } from "../../core/primitive.ts";
import { Precision } from "../../core/trace.ts";
import { dtypeTag, mslType } from "./dtypes.ts";
import { accessOf, elementwiseGrid } from "./elementwise.ts";
import { type GpuEncoder, int32Bytes, int64Bytes, linearThreadgroup } from "./encoder.ts";
import { kernelPipeline } from "./kernels.ts";

function largeIndex(a: MgArray): boolean {
  const l = a.layout;
  if (a.size >= 2 ** 31) return true;
  if (!l) return false;
  let span = Math.abs(l.offset);
  a.shape.forEach((d, i) => (span += Math.abs(l.strides[i]!) * Math.max(d - 1, 0)));
  return span >= 2 ** 31;
}

/** The kernel that copies `src` (converting to `to`, default its own dtype) row-contiguously. */
export function copyKernel(src: MgArray, to = src.dtype): KernelInstance[] {
  if (!src.layout) return []; // not materialised yet: compiled on demand when encoded
  const T = mslType(src.dtype, "copy");
  const U = mslType(to, "copy");
  const tag = `${dtypeTag(src.dtype)}_${dtypeTag(to)}`;
  const large = largeIndex(src);
  if (src.layout && accessOf(src, src.size) === "contiguous" && !large) {
    return [{ file: "unary.metal", name: `mg_copy_v_${tag}`, instantiation: `unary_v<Cast<${U}>, ${T}, ${U}>` }];
  }
  const idx = large ? "int64_t" : "uint";
  return [{ file: "unary.metal", name: `mg_copy_g_${tag}_${large ? "i64" : "u32"}`, instantiation: `unary_g<Cast<${U}>, ${T}, ${U}, ${idx}>` }];
}

/** Encodes a copy of `src` into `out` (allocated row-contiguous, same shape). */
export function encodeCopy(enc: GpuEncoder, src: MgArray, out: MgArray, primitive: string): void {
  const [kernel] = copyKernel(src, out.dtype);
  const pipeline = kernelPipeline(kernel!);
  const a = enc.input(src, 0);
  const o = enc.output(out, 1);
  const n = out.size;
  const bytes = kernel!.instantiation.startsWith("unary_g")
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
    { primitives: [primitive], inputs: [src], outputs: [out], layout: kernel!.name.includes("_g_") ? "strided" : "contiguous", precision: Precision.none },
  );
}
