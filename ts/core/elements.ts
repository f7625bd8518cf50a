// Reading and writing array elements on the CPU. Memory is unified, so both devices' results are
// read here (after waiting for the GPU work that writes them).
import {
  bfloat16, bool_, complex64, type Dtype, float16, float32, float64,
  int16, int32, int64, int8, numberFromBfloat16Bits, uint16, uint32, uint64, uint8,
} from "./dtype.ts";
import type { TypedArray, TypedArrayConstructor } from "../memory/storage.ts";

/** The typed array that stores a dtype's elements (bfloat16 as bits; complex64 as float pairs). */
export function storageCtor(dtype: Dtype): TypedArrayConstructor {
  switch (dtype) {
    case bool_:
    case uint8: return Uint8Array;
    case uint16:
    case bfloat16: return Uint16Array;
    case uint32: return Uint32Array;
    case uint64: return BigUint64Array;
    case int8: return Int8Array;
    case int16: return Int16Array;
    case int32: return Int32Array;
    case int64: return BigInt64Array;
    case float16: return Float16Array;
    case float32:
    case complex64: return Float32Array;
    case float64: return Float64Array;
    default: throw new Error(`[elements] unknown dtype ${String(dtype)}`);
  }
}

/** Elements per item in the storage view (2 for complex64). */
export function lanesOf(dtype: Dtype): number {
  return dtype === complex64 ? 2 : 1;
}

/** One element as JS reads it: a number, a bigint (64-bit integers), a boolean or a {re, im}. */
export type ElementValue = number | bigint | boolean | Complex;
/** A complex64 value: {re, im}. */
export interface Complex {
  re: number;
  im: number;
}

/** Reads item `i` of a storage view as a number (bfloat16 decoded, bool as 0/1). */
export function readNumber(view: TypedArray, dtype: Dtype, i: number): number {
  if (dtype === bfloat16) return numberFromBfloat16Bits(view[i] as number);
  const v = view[i]!;
  return typeof v === "bigint" ? Number(v) : v;
}

/** Float → integer as a C cast of an in-range value (truncation); NaN and ±Inf give 0. */
export function bigFromNumber(v: number): bigint {
  return Number.isFinite(v) ? BigInt(Math.trunc(v)) : 0n;
}

/**
 * The elements of an array view (shape, strides, offset in items) in row-major order of `shape`,
 * as a JS array of plain values (numbers, bigints, booleans for bool_, {re, im} for complex).
 */
export function collectValues(
  view: TypedArray,
  dtype: Dtype,
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
): ElementValue[] {
  const out: ElementValue[] = [];
  forEachOffset(shape, strides, offset, (o) => out.push(valueAt(view, dtype, o)));
  return out;
}

/** The item at storage offset `o` as a plain value (as collectValues gives it). */
export function valueAt(view: TypedArray, dtype: Dtype, o: number): ElementValue {
  if (dtype === bool_) return view[o] !== 0;
  if (dtype === complex64) return { re: view[2 * o] as number, im: view[2 * o + 1] as number };
  if (dtype === int64 || dtype === uint64) return view[o] as bigint;
  return readNumber(view, dtype, o);
}

/** Calls fn with the storage offset of every element of a strided view, in row-major order. */
export function forEachOffset(
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
  fn: (offset: number) => void,
): void {
  const nd = shape.length;
  let size = 1;
  for (const d of shape) size *= d;
  if (size === 0) return;
  if (nd === 0) {
    fn(offset);
    return;
  }
  const idx = new Array<number>(nd).fill(0);
  const last = nd - 1;
  const lastDim = shape[last]!;
  const lastStride = strides[last]!;
  let base = offset;
  for (;;) {
    for (let j = 0, o = base; j < lastDim; j++, o += lastStride) fn(o);
    // advance the outer indices (odometer), keeping `base` in step
    let k = last - 1;
    while (k >= 0) {
      idx[k]!++;
      base += strides[k]!;
      if (idx[k]! < shape[k]!) break;
      base -= strides[k]! * shape[k]!;
      idx[k] = 0;
      k--;
    }
    if (k < 0) return;
  }
}

/** Storage offsets of every element of a strided view, row-major, as an Int32/Float64 array. */
export function elementOffsets(
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
): Float64Array {
  let size = 1;
  for (const d of shape) size *= d;
  const out = new Float64Array(size);
  let i = 0;
  forEachOffset(shape, strides, offset, (o) => {
    out[i++] = o;
  });
  return out;
}
