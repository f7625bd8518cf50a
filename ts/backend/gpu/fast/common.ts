// What the mg.fast kernels share on the host side: views of device memory as the kernels address
// them, the sink dispatches go to (an eval's encoder, or a test's command batch), and C-struct
// packing of their parameter blocks.
import type { Dtype } from "../../../core/dtype.ts";
import type { Access, BufferBinding, Dispatch, InlineBytes, NativeBuffer } from "../../runtime.ts";

/** A strided view bound for a kernel: `base` is its first element relative to the binding. */
export interface KernelView {
  buffer: NativeBuffer;
  /** Byte offset and length of the binding. */
  offset: number;
  length: number;
  base: number;
  shape: readonly number[];
  strides: readonly number[];
  dtype: Dtype;
}

/** A row-contiguous output (the kernels write whole rows from the binding's start). */
export interface KernelOutput {
  buffer: NativeBuffer;
  offset: number;
  length: number;
  shape: readonly number[];
  dtype: Dtype;
}

/** Trace facts a dispatch carries (the GPU rule adds primitives, inputs and outputs). */
export interface DispatchFacts {
  layout: string;
  precision: string;
  notes?: string[];
}

/** Where dispatches go: an eval's GpuEncoder, or a test's own command batch. */
export interface KernelSink {
  dispatch(d: Dispatch, facts: DispatchFacts): void;
  /** Scratch memory that lives until the batch completes. */
  temporary(bytes: number): NativeBuffer;
}

export function bind(index: number, v: KernelView | KernelOutput, access: Access): BufferBinding {
  return { index, buffer: v.buffer, offset: v.offset, length: v.length, access };
}

export function bindScratch(index: number, buffer: NativeBuffer, access: Access): BufferBinding {
  return { index, buffer, access };
}

export type Field = readonly ["i64" | "i32" | "f32", number];

/**
 * A C struct of int64/int32/float fields in declaration order with natural alignment, padded to
 * 8 bytes — the layout Metal gives the kernels' parameter structs.
 */
export function structBytes(index: number, fields: readonly Field[]): InlineBytes {
  let size = 0;
  for (const [t] of fields) size = (t === "i64" ? Math.ceil(size / 8) * 8 : size) + (t === "i64" ? 8 : 4);
  const bytes = new ArrayBuffer(Math.ceil(size / 8) * 8);
  const view = new DataView(bytes);
  let at = 0;
  for (const [t, v] of fields) {
    if (t === "i64") {
      at = Math.ceil(at / 8) * 8;
      view.setBigInt64(at, BigInt(v), true);
      at += 8;
    } else if (t === "i32") {
      view.setInt32(at, v, true);
      at += 4;
    } else {
      view.setFloat32(at, v, true);
      at += 4;
    }
  }
  return { index, data: new Uint8Array(bytes) };
}

/**
 * Leading dimensions of several views with one shape, merged where every view is one run in
 * memory across the pair (outer stride = inner size · inner stride) and without unit dimensions.
 * Row-major order is kept, so row r of the merged shape is row r of the original.
 */
export function mergeLeading(shape: readonly number[], strides: readonly (readonly number[])[]): { shape: number[]; strides: number[][] } {
  const outShape: number[] = [];
  const outStrides: number[][] = strides.map(() => []);
  for (let d = 0; d < shape.length; d++) {
    const size = shape[d]!;
    if (size === 1) continue;
    const last = outShape.length - 1;
    const mergeable = last >= 0 && strides.every((s, k) => outStrides[k]![last] === size * s[d]!);
    if (mergeable) {
      outShape[last] = outShape[last]! * size;
      strides.forEach((s, k) => (outStrides[k]![last] = s[d]!));
    } else {
      outShape.push(size);
      strides.forEach((s, k) => outStrides[k]!.push(s[d]!));
    }
  }
  return { shape: outShape, strides: outStrides };
}

/** Leading-dimension shape and (concatenated) strides buffers; at least one entry each, as Metal
 *  needs every buffer argument bound. */
export function leadingBytes(shapeIndex: number, stridesIndex: number, shape: readonly number[], strides: readonly (readonly number[])[]): InlineBytes[] {
  const flat = strides.flat();
  return [
    { index: shapeIndex, data: Int32Array.from(shape.length ? shape : [1]) },
    { index: stridesIndex, data: BigInt64Array.from((flat.length ? flat : [0]).map((s) => BigInt(s))) },
  ];
}

/** Threadgroups for `count` rows: one dimension below 2^31, else two. */
export function rowGrid(count: number): [number, number, number] {
  if (count < 2 ** 31) return [Math.max(count, 1), 1, 1];
  const width = 65536;
  return [width, Math.ceil(count / width), 1];
}

export const SIMD = 32;

/** Whole simdgroups, about `work` threads, at most `cap` and the pipeline's maximum. */
export function simdGroupSize(maxThreads: number, work: number, cap = 1024): number {
  const max = Math.floor(Math.min(cap, maxThreads) / SIMD) * SIMD;
  return Math.min(max, Math.ceil(Math.max(work, 1) / SIMD) * SIMD);
}
