// Shared by the autograd tests: seeded random values and shapes, float64 inputs, and the list of
// devices the gradcheck table runs on.
import * as mg from "../../ts/index.ts";

import { mulberry32, type Rng } from "../../ts/testing/rng.ts";

export { mulberry32 as makeRng, type Rng };

/** A stable seed from a test name. */
export function seedOf(name: string): number {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return h >>> 0;
}

const size = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** Uniform values in [lo, hi), optionally with a random sign. */
export function uniform(rng: Rng, shape: readonly number[], lo = -1, hi = 1, randomSign = false): mg.MgArray {
  const v = new Float64Array(size(shape));
  for (let i = 0; i < v.length; i++) {
    const x = lo + (hi - lo) * rng();
    v[i] = randomSign && rng() < 0.5 ? -x : x;
  }
  return mg.array(v, mg.float64, { shape });
}

/** Distinct values (a shuffled ladder with jitter): no ties, gaps far above any finite-difference step. */
export function distinct(rng: Rng, shape: readonly number[], spread = 1): mg.MgArray {
  const n = size(shape);
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const v = Float64Array.from(order, (k) => spread * ((k - n / 2) * 0.37 + 0.1 * rng()));
  return mg.array(v, mg.float64, { shape });
}

/** Values whose fractional part stays in [0.15, 0.35] (away from the jumps of floor/ceil/round). */
export function offInteger(rng: Rng, shape: readonly number[]): mg.MgArray {
  const v = new Float64Array(size(shape));
  for (let i = 0; i < v.length; i++) v[i] = Math.floor(-3 + 6 * rng()) + 0.15 + 0.2 * rng();
  return mg.array(v, mg.float64, { shape });
}

/** A random shape: 0–3 dims of size 1–3 (size-1 axes included). */
export function randomShape(rng: Rng, minDims = 0, maxDims = 3): number[] {
  const nd = minDims + Math.floor(rng() * (maxDims - minDims + 1));
  return Array.from({ length: nd }, () => 1 + Math.floor(rng() * 3));
}

/**
 * Two shapes that broadcast together: `a` random (at least 1-D); `b` a suffix of it with some
 * dims set to 1 — and `a` gets a 1 where `b` keeps a dim, so both sides broadcast.
 */
export function broadcastPair(rng: Rng): [number[], number[]] {
  const full = randomShape(rng, 1, 3).map((d) => Math.max(d, 2));
  const drop = Math.floor(rng() * full.length);
  const b = full.slice(drop).map((d) => (rng() < 0.4 ? 1 : d));
  const a = full.map((d, i) => (i >= drop && b[i - drop] === d && rng() < 0.3 ? 1 : d));
  return [a, b];
}

export interface DeviceUnderTest {
  name: string;
  device: mg.Device;
  /** The dtype the analytic side runs in on this device. */
  dtype: mg.Dtype;
}

/** True when `device` evaluates a simple graph (the GPU backend may not be built or loaded). */
export function deviceWorks(device: mg.Device): boolean {
  try {
    const y = mg.add(mg.array([1, 2], mg.float32), 1, { stream: device });
    return JSON.stringify(y.tolist()) === "[2,3]";
  } catch {
    return false;
  }
}

/**
 * The devices the gradcheck table runs on: the CPU in float64, and the GPU in float32 (against
 * the same float64 CPU finite differences) once its backend evaluates. MG_TEST_GPU=1 makes a
 * missing GPU backend a failure instead of a skip.
 */
export function devicesUnderTest(): DeviceUnderTest[] {
  const list: DeviceUnderTest[] = [{ name: "cpu", device: mg.cpu, dtype: mg.float64 }];
  const gpuWanted = process.env.MG_TEST_GPU === "1";
  if (gpuWanted || deviceWorks(mg.gpu)) list.push({ name: "gpu", device: mg.gpu, dtype: mg.float32 });
  return list;
}

/** Values of an array as plain numbers (row-major). */
export function numbers(a: mg.MgArray): number[] {
  return Array.from(mg.astype(a, mg.float64, { stream: mg.cpu }).dataSync() as Float64Array);
}

/** Asserts two arrays agree elementwise within tolerances (shape included). */
export function close(actual: mg.MgArray, expected: mg.MgArray | readonly number[], atol = 1e-6, rtol = 1e-5): void {
  const e = Array.isArray(expected) ? [...expected] : numbers(expected as mg.MgArray);
  if (!Array.isArray(expected)) {
    const es = (expected as mg.MgArray).shape;
    if (JSON.stringify(actual.shape) !== JSON.stringify(es)) {
      throw new Error(`shape (${actual.shape}) differs from expected (${es})`);
    }
  }
  const a = numbers(actual);
  if (a.length !== e.length) throw new Error(`size ${a.length} differs from expected ${e.length}`);
  a.forEach((v, i) => {
    const w = e[i]!;
    if (v !== w && !(Math.abs(v - w) <= atol + rtol * Math.abs(w)) && !(Number.isNaN(v) && Number.isNaN(w))) {
      throw new Error(`element ${i}: ${v} differs from expected ${w} (actual ${a.join(", ")}; expected ${e.join(", ")})`);
    }
  });
}
