// Copies on the GPU: a strided view into row-contiguous memory (a fresh array, or scratch a kernel
// reads instead of its input), with the unary kernels and the Cast functor; and raw-bit copies
// between any two layouts with copy_strided (slicing.metal). Every copy the user did not ask for
// is noted in the trace by its caller.
import type { MgArray } from "../../core/array.ts";
import type { Dtype } from "../../core/dtype.ts";
import { shapeSize } from "../../core/shape.ts";
import { Precision } from "../../core/trace.ts";
import type { BufferBinding } from "../runtime.ts";
import { dtypeTag, GPU_DTYPES, mslType } from "./dtypes.ts";
import { type GpuEncoder, idxTag, idxType, int32Bytes, int64Bytes, needsLargeIndex } from "./encoder.ts";
import { type KernelInstance, kernelPipeline } from "./kernels.ts";
import { accessOf } from "./elementwise.ts";
import { elementwiseGrid, launch, linearThreadgroup } from "./launch.ts";

/** The kernel that copies `src` row-contiguously (none to compile before `src` has data). */
export function copyKernel(src: MgArray): KernelInstance[] {
  if (!src.layout) return [];
  const T = mslType(src.dtype, "copy");
  const tag = `${dtypeTag(src.dtype)}_${dtypeTag(src.dtype)}`;
  const large = needsLargeIndex(src.size, [src]);
  if (accessOf(src, src.size) === "contiguous" && !large) {
    return [{ file: "unary.metal", name: `mg_copy_v_${tag}`, instantiation: `unary_v<Cast<${T}>, ${T}, ${T}>` }];
  }
  // The strided copy of every other dtype compiles in the same run (speculative, as the
  // elementwise families: a test that copies views of one dtype usually sweeps several).
  const strided = (d: Dtype, speculative: boolean): KernelInstance => {
    const U = mslType(d, "copy");
    const t = `${dtypeTag(d)}_${dtypeTag(d)}`;
    return { file: "unary.metal", name: `mg_copy_g_${t}_${idxTag(large)}`, instantiation: `unary_g<Cast<${U}>, ${U}, ${U}, ${idxType(large)}>`, ...(speculative ? { speculative } : {}) };
  };
  // (Large-index copies are rare: they compile alone.)
  if (large) return [strided(src.dtype, false)];
  return [strided(src.dtype, false), ...GPU_DTYPES.filter((d) => d !== src.dtype).map((d) => strided(d, true))];
}

/**
 * Encodes a row-major copy of `src` into `dst` (bound at index 1), walking `shape` with src's
 * strides: src's own shape by default, or one with broadcast axes cut to 1 (one copy of each
 * distinct element). The trace names the primitive the copy serves.
 */
export function encodeCopyInto(
  enc: GpuEncoder,
  src: MgArray,
  dst: BufferBinding,
  trace: { primitive: string; outputs: readonly MgArray[] },
  shape: readonly number[] = src.shape,
): void {
  const [kernel, ...siblings] = copyKernel(src);
  const pipeline = kernelPipeline(kernel!, siblings);
  const a = enc.input(src, 0);
  const n = shapeSize(shape);
  const strided = kernel!.instantiation.startsWith("unary_g");
  const bytes = strided ? [int32Bytes(2, shape), int64Bytes(3, [...a.strides]), int32Bytes(4, [shape.length]), int64Bytes(5, [a.base]), int64Bytes(6, [n])] : [];
  const grid = elementwiseGrid(n);
  const layout = `${strided ? "strided" : "contiguous"}${needsLargeIndex(src.size, [src]) ? ", large-index" : ""}`;
  enc.dispatch(
    { pipeline, buffers: [a.binding, { ...dst, index: 1 }], bytes, grid, threadgroup: linearThreadgroup(pipeline, grid[0]), mustWrite: [1] },
    { primitives: [trace.primitive], inputs: [src], outputs: trace.outputs, layout, precision: Precision.none },
  );
}

/** Encodes a copy of `src` into `out` (allocated row-contiguous; same elements, any shape). */
export function encodeCopy(enc: GpuEncoder, src: MgArray, out: MgArray, primitive: string): void {
  encodeCopyInto(enc, src, enc.output(out, 1).binding, { primitive, outputs: [out] });
}

// ---------------------------------------------------------------------------------------------
// Raw-bit copies between layouts

/** Pure moves copy raw bits: one kernel instance per element size serves every dtype. */
export function bitsType(d: Dtype): string {
  switch (d.size) {
    case 1: return "uint8_t";
    case 2: return "uint16_t";
    case 4: return "uint32_t";
    case 8: return "uint64_t";
    default: throw new Error(`[gpu] no GPU element type of ${d.size} bytes (${d.name}).`);
  }
}
export const bitsTag = (d: Dtype): string => `b${8 * d.size}`;

/** copy_strided (slicing.metal) for elements of dtype d. */
export function copyStridedKernel(d: Dtype, large: boolean): KernelInstance {
  return { file: "slicing.metal", name: `mg_copy_strided_${bitsTag(d)}_${idxTag(large)}`, instantiation: `copy_strided<${bitsType(d)}, ${idxType(large)}>` };
}

/**
 * Copies `src` (any layout) into `dst` — a binding whose elements `shape` addresses with
 * `dstStrides` from `dstBase` — with copy_strided.
 */
export function encodeCopyStrided(
  enc: GpuEncoder,
  src: MgArray,
  dst: BufferBinding,
  dstBase: number,
  dstStrides: readonly number[],
  dstContiguous: boolean,
  trace: { primitive: string; outputs: readonly MgArray[]; layout: string },
  mustWrite = false,
): void {
  const large = needsLargeIndex(src.size, [src], dstBase + src.size);
  const pipeline = kernelPipeline(copyStridedKernel(src.dtype, large));
  const s = enc.input(src, 0);
  launch(
    enc,
    pipeline,
    src.size,
    [s.binding, { ...dst, index: 1 }],
    [
      int32Bytes(2, src.shape),
      int64Bytes(3, s.strides),
      int64Bytes(4, dstStrides),
      int32Bytes(5, [src.ndim, s.rowContiguous ? 1 : 0, dstContiguous ? 1 : 0]),
      int64Bytes(6, [s.base, dstBase, src.size]),
    ],
    { primitive: trace.primitive, inputs: [src], outputs: trace.outputs, layout: `${trace.layout}${large ? ", large-index" : ""}` },
    mustWrite ? [1] : [],
  );
}
