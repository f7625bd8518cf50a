// Differential testing of the GPU device against the CPU device: run the same op on both and
// compare with the per-dtype tolerances of ts/testing/tolerances.ts (exact for integers and bool).
import { expect } from "bun:test";
import * as mg from "../../../ts/index.ts";
import { setNativeCpu } from "../../../ts/backend/cpu/native/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import { type Tolerance, toleranceFor } from "../../../ts/testing/tolerances.ts";
import { sliceStatic } from "../../../ts/core/ops/slicing.ts";
import { runtime } from "../../../ts/backend/runtime.ts";

export type Device = typeof mg.cpu;

/** Runs `fn` on a device (as the default stream) and returns its results, evaluated. The CPU runs
 *  the TypeScript reference kernels (float64-accurate), not the native ones. */
export function runOn(device: Device, fn: () => MgArray | MgArray[]): MgArray[] {
  const reference = device.type === "cpu" ? setNativeCpu(false) : null;
  try {
    const out = mg.stream(device, fn);
    const list = Array.isArray(out) ? out : [out];
    mg.eval(list);
    return list;
  } finally {
    if (reference !== null) setNativeCpu(reference);
  }
}

function flatValues(a: MgArray): (number | bigint | boolean)[] {
  if (a.dtype === mg.complex64) {
    const d = a.dataSync() as Float32Array;
    return Array.from(d);
  }
  const v = a.dtype === mg.bool_ ? Array.from(a.dataSync() as Uint8Array, (x) => x !== 0) : Array.from(a.dataSync() as ArrayLike<number | bigint>);
  return v;
}

/** Asserts GPU and CPU results agree: shapes and dtypes equal, values within tolerance. */
export function expectClose(gpu: MgArray, cpu: MgArray, tol: Tolerance = toleranceFor(cpu.dtype), what = ""): void {
  expect(gpu.shape, `${what} shape`).toEqual(cpu.shape);
  expect(gpu.dtype.name, `${what} dtype`).toBe(cpu.dtype.name);
  const g = flatValues(gpu);
  const c = flatValues(cpu);
  expect(g.length).toBe(c.length);
  let worst = -1;
  let worstErr = 0;
  for (let i = 0; i < c.length; i++) {
    const x = g[i]!;
    const y = c[i]!;
    if (typeof y !== "number" || typeof x !== "number") {
      if (x !== y) {
        worst = i;
        worstErr = Infinity;
        break;
      }
      continue;
    }
    if (Number.isNaN(y) || Number.isNaN(x) || !Number.isFinite(y) || !Number.isFinite(x)) {
      if (!(Object.is(x, y) || (Number.isNaN(x) && Number.isNaN(y)) || x === y)) {
        worst = i;
        worstErr = Infinity;
        break;
      }
      continue;
    }
    const err = Math.abs(x - y) - (tol.atol + tol.rtol * Math.abs(y));
    if (err > worstErr) {
      worstErr = err;
      worst = i;
    }
  }
  if (worst >= 0) {
    throw new Error(`${what}: element ${worst} differs: gpu ${String(g[worst])} vs cpu ${String(c[worst])} (rtol ${tol.rtol}, atol ${tol.atol})`);
  }
}

/** Runs `fn` on both devices and compares every result. */
export function expectDevicesAgree(fn: () => MgArray | MgArray[], what = "", tol?: (dtype: mg.Dtype) => Tolerance): void {
  const cpu = runOn(mg.cpu, fn);
  const gpu = runOn(mg.gpu, fn);
  expect(gpu.length).toBe(cpu.length);
  gpu.forEach((g, i) => expectClose(g, cpu[i]!, tol ? tol(cpu[i]!.dtype) : toleranceFor(cpu[i]!.dtype), `${what}[${i}]`));
}

/** Deterministic pseudo-random values in [lo, hi) (a tiny LCG; tests need reproducible data). */
export function seededValues(n: number, seed = 1, lo = -2, hi = 2): number[] {
  let s = seed >>> 0 || 1;
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = lo + ((hi - lo) * s) / 2 ** 32;
  }
  return out;
}

/** An evaluated input array of `shape` and dtype (values seeded, cast on the CPU). */
export function input(shape: number[], dtype: mg.Dtype, seed = 1, lo = -2, hi = 2): MgArray {
  const n = shape.reduce((a, b) => a * b, 1);
  let vals: number[] = seededValues(n, seed, lo, hi);
  if (dtype.kind === "i" || dtype.kind === "u" || dtype === mg.bool_) vals = vals.map((v) => Math.round(v * 10));
  const base = mg.array(Float64Array.from(vals), null, { shape });
  const out = mg.stream(mg.cpu, () => mg.astype(base, dtype));
  mg.eval(out);
  return out;
}

/**
 * The layouts every GPU kernel must read correctly: contiguous, transposed, sliced with a step,
 * broadcast from a smaller array, and a reversed view. Each entry builds an array of `shape`.
 */
export function layouts(shape: number[], dtype: mg.Dtype, seed = 1): [string, MgArray][] {
  const out: [string, MgArray][] = [["contiguous", input(shape, dtype, seed)]];
  const cpu = (fn: () => MgArray) => {
    const r = mg.stream(mg.cpu, fn);
    mg.eval(r);
    return r;
  };
  if (shape.length >= 2) {
    const t = [...shape];
    [t[t.length - 1], t[t.length - 2]] = [t[t.length - 2]!, t[t.length - 1]!];
    out.push(["transposed", cpu(() => mg.swapaxes(input(t, dtype, seed + 1), -1, -2))]);
  }
  const wide = [...shape];
  wide[wide.length - 1] = (wide[wide.length - 1] ?? 1) * 2;
  if (shape.length >= 1) {
    const src = input(wide, dtype, seed + 2);
    out.push(["sliced", cpu(() => sliceStatic(src, shape.map(() => 0), wide, shape.map((_, i) => (i === shape.length - 1 ? 2 : 1))))]);
    const row = input([shape[shape.length - 1]!], dtype, seed + 3);
    out.push(["broadcast", cpu(() => mg.broadcastTo(row, shape))]);
    out.push(["reversed", cpu(() => mg.flip(input(shape, dtype, seed + 4), -1))]);
  }
  return out;
}

export const GPU_FLOAT_DTYPES = [mg.float32, mg.float16, mg.bfloat16];
export const GPU_INT_DTYPES = [mg.int8, mg.int16, mg.int32, mg.int64, mg.uint8, mg.uint16, mg.uint32, mg.uint64];
export const GPU_DTYPES = [mg.bool_, ...GPU_INT_DTYPES, ...GPU_FLOAT_DTYPES, mg.complex64];

const announced = new Set<string>();
/**
 * Why this GPU cannot run the tests of a feature, or null when it can. Hosted macOS runners' "Apple
 * Paravirtual device" reports the apple5 family, below the apple7 that Metal lists for simdgroup
 * matrices and atomic<float>: those tests are skipped there, with this reason printed once.
 */
export function gpuLacks(feature: "simdgroupMatrix" | "atomicFloat", what: string): string | null {
  const d = runtime().device;
  const supported = feature === "simdgroupMatrix" ? d.supportsSimdgroupMatrix : d.supportsAtomicFloat;
  if (supported) return null;
  const reason = `${what} skipped: this GPU (${d.name}, apple${d.appleFamily} family) does not advertise ` +
    `${feature === "simdgroupMatrix" ? "simdgroup matrices" : "atomic<float>"} (Metal lists them from apple7)`;
  if (!announced.has(reason)) {
    announced.add(reason);
    console.warn(reason);
  }
  return reason;
}
