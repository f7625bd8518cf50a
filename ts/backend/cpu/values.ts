// Moving element values between array storage and flat JS arrays, for the CPU kernels.
// Kernels read their inputs as flat row-major values (strides and broadcasting applied), compute
// in float64 / BigInt / complex pairs, and store with the output dtype's rounding.
import type { MgArray } from "../../core/array.ts";
import {
  bfloat16, bfloat16BitsFromNumber, bool_, complex64, int64, numberFromBfloat16Bits,
  uint64,
} from "../../core/dtype.ts";
import { bigFromNumber, forEachOffset, storageCtor } from "../../core/elements.ts";
import type { TypedArray } from "../../memory/storage.ts";

export function storageView(a: MgArray): TypedArray {
  const layout = a.layout!;
  return layout.storage.view(a.dtype, storageCtor(a.dtype));
}

/** Row-major values of a number-domain array (every dtype but 64-bit ints and complex; bool as 0/1). */
export function readNumbers(a: MgArray): Float64Array {
  const layout = a.layout!;
  const view = storageView(a);
  const out = new Float64Array(a.size);
  const dt = a.dtype;
  if (dt === int64 || dt === uint64) {
    let i = 0;
    forEachOffset(a.shape, layout.strides, layout.offset, (o) => (out[i++] = Number(view[o] as bigint)));
  } else if (dt === complex64) {
    let i = 0; // the real part, as a cast complex → real does
    forEachOffset(a.shape, layout.strides, layout.offset, (o) => (out[i++] = view[2 * o] as number));
  } else if (dt === bfloat16) {
    let i = 0;
    forEachOffset(a.shape, layout.strides, layout.offset, (o) => (out[i++] = numberFromBfloat16Bits(view[o] as number)));
  } else if (layout.rowContiguous) {
    const n = out.length;
    const off = layout.offset;
    for (let i = 0; i < n; i++) out[i] = view[off + i] as number;
  } else {
    let i = 0;
    forEachOffset(a.shape, layout.strides, layout.offset, (o) => (out[i++] = view[o] as number));
  }
  return out;
}

/** Row-major values as bigints (exact for 64-bit ints; other integers converted exactly). */
export function readBigints(a: MgArray): bigint[] {
  const layout = a.layout!;
  const view = storageView(a);
  const out = new Array<bigint>(a.size);
  let i = 0;
  const dt = a.dtype;
  if (dt === int64 || dt === uint64) {
    forEachOffset(a.shape, layout.strides, layout.offset, (o) => (out[i++] = view[o] as bigint));
  } else {
    const nums = readNumbers(a);
    for (let j = 0; j < nums.length; j++) out[j] = bigFromNumber(nums[j]!);
  }
  return out;
}

/** Row-major complex values as interleaved (re, im) float64 pairs. */
export function readComplex(a: MgArray): Float64Array {
  const out = new Float64Array(2 * a.size);
  if (a.dtype === complex64) {
    const layout = a.layout!;
    const view = storageView(a);
    if (layout.rowContiguous) {
      // Dense pairs: one widening copy.
      out.set(view.subarray(2 * layout.offset, 2 * (layout.offset + a.size)) as Float32Array);
      return out;
    }
    let i = 0;
    forEachOffset(a.shape, layout.strides, layout.offset, (o) => {
      out[i++] = view[2 * o] as number;
      out[i++] = view[2 * o + 1] as number;
    });
  } else {
    const re = readNumbers(a);
    for (let j = 0; j < re.length; j++) out[2 * j] = re[j]!;
  }
  return out;
}

/** Allocates `out` and stores number values with its dtype's rounding (bool: nonzero, as a C
 *  cast, so NaN is true). */
export function writeNumbers(out: MgArray, values: ArrayLike<number>): void {
  // Every value is computed: an input this node alone still reads may give its buffer.
  out.allocateInPlace();
  const view = storageView(out);
  const n = out.size;
  const dt = out.dtype;
  if (dt === bfloat16) {
    for (let i = 0; i < n; i++) view[i] = bfloat16BitsFromNumber(values[i]!);
  } else if (dt === bool_) {
    for (let i = 0; i < n; i++) {
      view[i] = values[i] !== 0 ? 1 : 0;
    }
  } else if (dt === int64) {
    for (let i = 0; i < n; i++) view[i] = BigInt.asIntN(64, bigFromNumber(values[i]!));
  } else if (dt === uint64) {
    for (let i = 0; i < n; i++) view[i] = BigInt.asUintN(64, bigFromNumber(values[i]!));
  } else if (dt === complex64) {
    for (let i = 0; i < n; i++) {
      view[2 * i] = values[i]!;
      view[2 * i + 1] = 0;
    }
  } else {
    // Float16Array / Float32Array stores round to nearest even; integer stores wrap (a C cast
    // of an in-range value). Truncate floats first so that e.g. -1.5 → int gives -1 as in C.
    if (dt.kind === "i" || dt.kind === "u") {
      for (let i = 0; i < n; i++) {
        const v = values[i]!;
        view[i] = Number.isFinite(v) ? Math.trunc(v) : 0;
      }
    } else {
      for (let i = 0; i < n; i++) view[i] = values[i]!;
    }
  }
}

/** Allocates `out` (an integer or bool dtype) and stores bigint values, wrapping like C. */
export function writeBigints(out: MgArray, values: readonly bigint[]): void {
  const dt = out.dtype;
  if (dt === int64 || dt === uint64) {
    out.allocateInPlace();
    const view = storageView(out) as BigInt64Array | BigUint64Array;
    const wrap = dt === int64 ? (v: bigint) => BigInt.asIntN(64, v) : (v: bigint) => BigInt.asUintN(64, v);
    for (let i = 0; i < values.length; i++) view[i] = wrap(values[i]!);
    return;
  }
  if (dt === bool_) {
    writeNumbers(out, values.map((v) => (v !== 0n ? 1 : 0)));
    return;
  }
  // Narrower integers: wrap in BigInt first so large values keep their low bits exactly.
  const bits = dt.size * 8;
  const signed = dt.kind === "i";
  const nums = values.map((v) => Number(signed ? BigInt.asIntN(bits, v) : BigInt.asUintN(bits, v)));
  writeNumbers(out, nums);
}

/** Allocates a complex64 `out` and stores interleaved pairs (rounded to float32). */
export function writeComplex(out: MgArray, values: ArrayLike<number>): void {
  out.allocateInPlace();
  const view = storageView(out);
  for (let i = 0; i < values.length; i++) view[i] = values[i]!;
}
