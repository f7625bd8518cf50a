// CPU machinery for elementwise primitives: read inputs as flat values in their JS domain,
// apply a scalar function, store with the output dtype's rounding.
import type { MgArray } from "../../core/array.ts";
import { complex64, type Dtype, is64BitInteger } from "../../core/dtype.ts";
import {
  readBigints, readComplex, readNumbers, writeBigints, writeComplex, writeNumbers,
} from "./values.ts";

export type NumFn1 = (x: number) => number;
export type BigFn1 = (x: bigint) => bigint;
export type CplxFn1 = (re: number, im: number) => [number, number];
export type NumFn2 = (x: number, y: number) => number;
export type BigFn2 = (x: bigint, y: bigint) => bigint;
export type CplxFn2 = (ar: number, ai: number, br: number, bi: number) => [number, number];

export interface ScalarFns1 {
  num?: NumFn1;
  big?: BigFn1;
  cplx?: CplxFn1;
  /** Integer-domain variant for 32-bit-and-narrower ints when `num` is not exact (e.g. multiply). */
  int?: (x: number, dtype: Dtype) => number;
}

export interface ScalarFns2 {
  num?: NumFn2;
  big?: BigFn2;
  cplx?: CplxFn2;
  /** For 32-bit-and-narrower integer dtypes when float64 arithmetic is not exact. */
  int?: (x: number, y: number, dtype: Dtype) => number;
  /** Comparisons on complex values produce a number (0/1), not a complex. */
  cplxToNum?: (ar: number, ai: number, br: number, bi: number) => number;
}

function unsupported(op: string, d: Dtype): Error {
  return new Error(`[${op}] not supported for ${d.name}.`);
}

export function cpuUnary(op: string, fns: ScalarFns1, x: MgArray, out: MgArray): void {
  const d = x.dtype;
  if (d === complex64) {
    if (!fns.cplx) throw unsupported(op, d);
    const v = readComplex(x);
    const n = x.size;
    if (out.dtype === complex64) {
      const r = new Float64Array(2 * n);
      for (let i = 0; i < n; i++) {
        const [re, im] = fns.cplx(v[2 * i]!, v[2 * i + 1]!);
        r[2 * i] = re;
        r[2 * i + 1] = im;
      }
      writeComplex(out, r);
    } else {
      const r = new Float64Array(n);
      for (let i = 0; i < n; i++) r[i] = fns.cplx(v[2 * i]!, v[2 * i + 1]!)[0];
      writeNumbers(out, r);
    }
    return;
  }
  if (is64BitInteger(d) && fns.big) {
    const v = readBigints(x);
    const fn = fns.big;
    writeBigints(out, v.map((e) => fn(e)));
    return;
  }
  const v = readNumbers(x);
  const n = v.length;
  const r = new Float64Array(n);
  if ((d.kind === "i" || d.kind === "u") && fns.int) {
    const fn = fns.int;
    for (let i = 0; i < n; i++) r[i] = fn(v[i]!, d);
  } else {
    if (!fns.num) throw unsupported(op, d);
    const fn = fns.num;
    for (let i = 0; i < n; i++) r[i] = fn(v[i]!);
  }
  writeNumbers(out, r);
}

/** Inputs have equal shapes (ops broadcast them first) and equal dtypes. */
export function cpuBinary(op: string, fns: ScalarFns2, a: MgArray, b: MgArray, out: MgArray): void {
  const d = a.dtype;
  const n = out.size;
  if (d === complex64) {
    const va = readComplex(a);
    const vb = readComplex(b);
    if (out.dtype === complex64) {
      if (!fns.cplx) throw unsupported(op, d);
      const r = new Float64Array(2 * n);
      for (let i = 0; i < n; i++) {
        const [re, im] = fns.cplx(va[2 * i]!, va[2 * i + 1]!, vb[2 * i]!, vb[2 * i + 1]!);
        r[2 * i] = re;
        r[2 * i + 1] = im;
      }
      writeComplex(out, r);
    } else {
      if (!fns.cplxToNum) throw unsupported(op, d);
      const r = new Float64Array(n);
      for (let i = 0; i < n; i++) r[i] = fns.cplxToNum(va[2 * i]!, va[2 * i + 1]!, vb[2 * i]!, vb[2 * i + 1]!);
      writeNumbers(out, r);
    }
    return;
  }
  if (is64BitInteger(d)) {
    if (!fns.big) throw unsupported(op, d);
    const va = readBigints(a);
    const vb = readBigints(b);
    const fn = fns.big;
    const r = new Array<bigint>(n);
    for (let i = 0; i < n; i++) r[i] = fn(va[i]!, vb[i]!);
    writeBigints(out, r);
    return;
  }
  const va = readNumbers(a);
  const vb = readNumbers(b);
  const r = new Float64Array(n);
  if ((d.kind === "i" || d.kind === "u") && fns.int) {
    const fn = fns.int;
    for (let i = 0; i < n; i++) r[i] = fn(va[i]!, vb[i]!, d);
  } else {
    if (!fns.num) throw unsupported(op, d);
    const fn = fns.num;
    for (let i = 0; i < n; i++) r[i] = fn(va[i]!, vb[i]!);
  }
  writeNumbers(out, r);
}
