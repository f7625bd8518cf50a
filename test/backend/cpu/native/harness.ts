// Shared checks for the native CPU kernels of the families in ts/backend/cpu/native/*.ts: run a
// graph natively and on the TypeScript reference, and compare (exactly, within a tolerance, or bit
// for bit across thread counts and instruction sets).
import { expect } from "bun:test";
import * as mg from "../../../../ts/index.ts";
import type { MgArray } from "../../../../ts/core/array.ts";
import { nativeInfo, setNativeCpu, setNativeIsa, setNativeThreads } from "../../../../ts/backend/cpu/native/index.ts";
import type { Tolerance } from "../../../../ts/testing/tolerances.ts";

export const S = { stream: mg.cpu };

/** A deterministic generator of floats in [0, 1). */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

/** An evaluated float32 (or float64) array of uniform values in [-scale, scale). */
export function uniform(shape: number[], seed: number, dtype = mg.float32, scale = 1): MgArray {
  const r = rng(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  const a = mg.reshape(mg.array(Array.from({ length: n }, () => (2 * r() - 1) * scale), dtype), shape);
  mg.eval(a);
  return a;
}

/** An evaluated complex64 array with uniform real and imaginary parts in [-1, 1). */
export function complexUniform(shape: number[], seed: number): MgArray {
  const r = rng(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  const a = mg.reshape(mg.array(Array.from({ length: n }, () => ({ re: 2 * r() - 1, im: 2 * r() - 1 })), mg.complex64), shape);
  mg.eval(a);
  return a;
}

/** Evaluates `build` on the reference kernels (for building views and expected values). */
export function onReference<T>(build: () => T): T {
  const prev = setNativeCpu(false);
  try {
    const out = build();
    mg.eval(out as never);
    return out;
  } finally {
    setNativeCpu(prev);
  }
}

/** `build` evaluated natively and on the reference: both results, or both errors. */
export function both(build: () => MgArray[]): { native: MgArray[] | Error; reference: MgArray[] | Error } {
  const run = (on: boolean) => {
    const prev = setNativeCpu(on);
    try {
      const out = build();
      mg.eval(out);
      return out;
    } catch (e) {
      return e as Error;
    } finally {
      setNativeCpu(prev);
    }
  };
  return { native: run(true), reference: run(false) };
}

function values(a: MgArray): (number | bigint | boolean)[] {
  const data = a.dataSync();
  if (a.dtype === mg.bool_) return Array.from(data as Uint8Array, (x) => x !== 0);
  return Array.from(data as ArrayLike<number | bigint>);
}

const same = (x: unknown, y: unknown) => Object.is(x, y) || (typeof x === "number" && typeof y === "number" && Number.isNaN(x) && Number.isNaN(y));

/** Equal shapes, dtypes and values (NaN matches NaN, +0 and −0 differ). */
export function expectExact(got: MgArray, want: MgArray, what: string): void {
  expect(got.shape, what).toEqual(want.shape);
  expect(got.dtype.name, what).toBe(want.dtype.name);
  const g = values(got), w = values(want);
  for (let i = 0; i < w.length; i++) if (!same(g[i], w[i])) throw new Error(`${what}: element ${i}: native ${String(g[i])} vs reference ${String(w[i])}`);
}

/** |got − want| ≤ atol + rtol·|want| elementwise; non-finite values must match exactly. */
export function expectClose(got: MgArray, want: MgArray, tol: Tolerance, what: string): void {
  expect(got.shape, what).toEqual(want.shape);
  expect(got.dtype.name, what).toBe(want.dtype.name);
  const g = values(got), w = values(want);
  for (let i = 0; i < w.length; i++) {
    const x = g[i]!, y = w[i]!;
    if (typeof x !== "number" || typeof y !== "number") {
      if (x !== y) throw new Error(`${what}: element ${i}: native ${String(x)} vs reference ${String(y)}`);
      continue;
    }
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      if (!same(x, y) && x !== y) throw new Error(`${what}: element ${i}: native ${x} vs reference ${y}`);
      continue;
    }
    if (Math.abs(x - y) > tol.atol + tol.rtol * Math.abs(y)) throw new Error(`${what}: element ${i}: native ${x} vs reference ${y} (rtol ${tol.rtol}, atol ${tol.atol})`);
  }
}

/**
 * Compares a `both` result: results that pass `check`, or (with `errors`) the same error. Without
 * `errors` a failing reference fails the test, so a case cannot pass by erroring on both sides.
 */
export function compare(r: ReturnType<typeof both>, what: string, check: (got: MgArray, want: MgArray, what: string) => void, errors = false): void {
  if (r.reference instanceof Error) {
    if (!errors) throw new Error(`${what}: the reference failed: ${r.reference.message}`);
    expect(r.native instanceof Error ? r.native.message : "ran", what).toBe(r.reference.message);
    return;
  }
  if (r.native instanceof Error) throw new Error(`${what}: native failed: ${r.native.message}`);
  const ref = r.reference;
  r.native.forEach((out, k) => check(out, ref[k]!, `${what}[${k}]`));
}

function bytes(a: MgArray): Uint8Array {
  const d = a.dataSync();
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength).slice();
}

/** Whether the little-endian float of `dtype` at byte `at` is a NaN (exponent all ones, mantissa not 0). */
function isNaNAt(bytes: Uint8Array, at: number, dtype: string): boolean {
  const v = new DataView(bytes.buffer, bytes.byteOffset);
  switch (dtype) {
    case "float16": { const h = v.getUint16(at, true); return (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0; }
    case "bfloat16": { const h = v.getUint16(at, true); return (h & 0x7f80) === 0x7f80 && (h & 0x7f) !== 0; }
    case "float32":
    case "complex64": return Number.isNaN(v.getFloat32(at, true));
    case "float64": return Number.isNaN(v.getFloat64(at, true));
    default: return false;
  }
}

/**
 * Same bytes, except that two NaNs are equal whatever their sign and payload: neither MLX nor IEEE
 * fixes them, and the TypeScript reference's NaN bits change with JavaScriptCore's tier (the
 * interpreter stores a canonical +NaN, JIT code the x86 default -NaN).
 */
export function expectSameBits(x: MgArray, y: MgArray, what: string): void {
  const a = bytes(x), b = bytes(y);
  expect(a.length, what).toBe(b.length);
  const size = x.dtype.name === "complex64" ? 4 : x.dtype.size; // complex: two float32 parts
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    const at = i - (i % size);
    if (x.dtype === y.dtype && isNaNAt(a, at, x.dtype.name) && isNaNAt(b, at, y.dtype.name)) { i = at + size - 1; continue; }
    throw new Error(`${what}: byte ${i} differs (${a[i]} vs ${b[i]})`);
  }
}

/** `build` natively with 1 thread and with 4: the same bits. */
export function expectThreadIndependent(build: () => MgArray[], what: string): void {
  const prev = setNativeThreads(1);
  try {
    const one = build();
    mg.eval(one);
    setNativeThreads(4);
    const four = build();
    mg.eval(four);
    one.forEach((o, k) => expectSameBits(o, four[k]!, `${what}[${k}] 1 vs 4 threads`));
  } finally {
    setNativeThreads(prev);
  }
}

/** `build` natively on the baseline instruction set and on the best vector one (AVX2, or AVX2 with AVX-512 elementwise kernels) when the machine has it. */
export function acrossIsas(build: () => MgArray[]): { baseline: MgArray[]; best: MgArray[] } | null {
  const isa = nativeInfo().isa;
  if (isa !== "avx2" && isa !== "avx512") return null;
  try {
    setNativeIsa("baseline");
    const baseline = build();
    mg.eval(baseline);
    setNativeIsa(isa === "avx512" ? "avx512" : "avx2");
    const best = build();
    mg.eval(best);
    return { baseline, best };
  } finally {
    setNativeIsa("best");
  }
}

/** The trace's kernel names for evaluating `build`. */
export function kernelsOf(build: () => MgArray | MgArray[]): string[] {
  return mg.trace(build).map((r) => r.kernel);
}
