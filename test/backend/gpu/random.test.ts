// RandomBits on the GPU device (the Metal simulator here) against the CPU device: bit-identical
// threefry2x32 streams for every width, shape and key layout, and the distributions of mg.random
// (built from ops over those bits) equal on the gpu stream.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import { sliceStatic } from "../../../ts/core/ops/slicing.ts";
import { toleranceFor } from "../../../ts/testing/tolerances.ts";
import { expectClose, runOn } from "./harness.ts";

// Kernels compile on first use in the simulator (~0.5 s per compiler run, more on a loaded machine),
// and bunfig's [test] timeout is not a setting bun reads: allow for compiles here.
setDefaultTimeout(120_000);

const R = mg.random;

/** Asserts equal shapes, dtypes and integer values. */
function expectSame(gpu: MgArray, cpu: MgArray, what: string): void {
  expect(gpu.shape, `${what} shape`).toEqual(cpu.shape);
  expect(gpu.dtype.name, `${what} dtype`).toBe(cpu.dtype.name);
  const g = gpu.dataSync();
  const c = cpu.dataSync();
  for (let i = 0; i < c.length; i++) {
    if (g[i] !== c[i]) throw new Error(`${what}: element ${i} differs: gpu ${String(g[i])} vs cpu ${String(c[i])}`);
  }
}

/**
 * Runs every case on both devices (the GPU side in one eval) and compares each output exactly.
 * Returns how many RandomBits dispatches the GPU side made (proof that it ran there).
 */
function expectBitIdentical(cases: [string, () => MgArray][]): number {
  const cpu = cases.map(([, fn]) => runOn(mg.cpu, fn)[0]!);
  let gpu: MgArray[] = [];
  const records = mg.trace(() => (gpu = runOn(mg.gpu, () => cases.map(([, fn]) => fn()))));
  cases.forEach(([what], i) => expectSame(gpu[i]!, cpu[i]!, what));
  return records.filter((r) => r.device === "gpu" && r.primitives.includes("RandomBits")).length;
}

describe("RandomBits is bit-identical to the CPU device", () => {
  test("keys, shapes (odd and even word counts, partial last words) and widths 1, 2, 4", () => {
    const keys: [string, MgArray][] = [
      ["key(0)", R.key(0)],
      ["key(1)", R.key(1)],
      ["key(42)", R.key(42)],
      ["key(2^40 + 3)", R.key(2 ** 40 + 3)],
      ["words (0xffffffff, 0x12345678)", mg.array([0xffffffff, 0x12345678], mg.uint32)],
    ];
    const shapes = [[], [1], [2], [3], [5], [2, 5], [7, 3], [1000], [4097]];
    const cases: [string, () => MgArray][] = [];
    for (const [kname, key] of keys) {
      for (const shape of shapes) {
        for (const width of [1, 2, 4]) cases.push([`${kname} (${shape.join(",")}) width ${width}`, () => R.bits(shape, width, key)]);
      }
    }
    expect(expectBitIdentical(cases)).toBe(cases.length);
  });

  test("MLX's pinned values on the gpu stream: bits(key(0)) and split", () => {
    const [b, s] = runOn(mg.gpu, () => [R.bits([], 4, R.key(0)), R.split(R.key(0))]);
    expect(b!.item()).toBe(1797259609);
    const [cpuSplit] = runOn(mg.cpu, () => R.split(R.key(0)));
    expectSame(s!, cpuSplit!, "split");
  });

  test("batched keys from vmap: one stream per key, a transposed key array, nested batches", () => {
    const keys = mg.array([0, 0, 1, 1], mg.uint32).reshape(2, 2);
    const cube = mg.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5], mg.uint32).reshape(3, 2, 2);
    const draw3 = (k: MgArray) => R.bits([3], 4, k);
    const draw2 = (k: MgArray) => R.bits([2], 4, k);
    // MLX's pinned batched values (mlx/tests/random_tests.cpp), now computed on the GPU.
    let out: MgArray[] = [];
    const records = mg.trace(() => (out = runOn(mg.gpu, () => [mg.vmap(draw3)(keys), mg.vmap(draw3, 1)(keys), mg.vmap(mg.vmap(draw2))(cube), mg.vmap(mg.vmap(draw2, 1), 0)(cube)])));
    expect(records.filter((r) => r.device === "gpu" && r.primitives.includes("RandomBits")).length).toBe(4);
    const [a, b, c, d] = out;
    expect(a!.tolist()).toEqual([[4146024105, 1351547692, 2718843009], [3725146706, 1802982961, 1349634643]]);
    expect(b!.tolist()).toEqual([[2441914641, 1110694964, 3819641963], [2441914641, 1110694964, 3819641963]]);
    expect(c!.tolist()).toEqual([
      [[928981903, 3453687069], [3606183818, 460005496]],
      [[2799733733, 856293553], [4081856343, 3445925136]],
      [[2775548010, 1430281703], [305173070, 2615843348]],
    ]);
    expect(d!.tolist()).toEqual([
      [[1948878966, 4237131848], [1948878966, 4237131848]],
      [[2531170506, 1858648356], [2531170506, 1858648356]],
      [[740561898, 4234094099], [740561898, 4234094099]],
    ]);
    // Split keys (a (6, 2) array) and their transpose (a strided view), every width.
    const split = R.split(R.key(3), 6);
    const splitT = mg.stream(mg.cpu, () => mg.transpose(split));
    mg.eval(splitT);
    const cases: [string, () => MgArray][] = [];
    for (const width of [1, 2, 4]) {
      const draw = (k: MgArray) => R.bits([5], width, k);
      cases.push([`split width ${width}`, () => mg.vmap(draw)(split)]);
      cases.push([`transposed width ${width}`, () => mg.vmap(draw, 1)(splitT)]);
    }
    expect(expectBitIdentical(cases)).toBe(cases.length);
  });

  test("the trace names the kernel and the key layout", () => {
    // Every other key of eight: a (4, 2) view with a row stride of 4.
    const keys = mg.stream(mg.cpu, () => sliceStatic(R.split(R.key(5), 8), [0, 0], [8, 2], [2, 1]));
    mg.eval(keys);
    let drawn: MgArray | undefined;
    const records = mg.trace(() => mg.eval((drawn = mg.stream(mg.gpu, () => mg.vmap((k: MgArray) => R.bits([6], 2, k))(keys))))).filter((r) => r.device === "gpu");
    const bits = records.find((r) => r.primitives.includes("RandomBits"))!;
    expect(bits.kernel).toBe("mg_random_bits_u16");
    expect(bits.layout).toBe("strided keys, 4 keys");
    expect(bits.precision).toBe("exact");
    const [cpu] = runOn(mg.cpu, () => mg.vmap((k: MgArray) => R.bits([6], 2, k))(keys));
    expectSame(drawn!, cpu!, "strided keys");
  });

  test("zero-size outputs launch nothing and keep their shape", () => {
    const [e, f] = runOn(mg.gpu, () => [R.bits([0, 3], 4, R.key(1)), R.bits([4, 0], 1, R.key(1))]);
    expect(e!.shape).toEqual([0, 3]);
    expect(f!.shape).toEqual([4, 0]);
  });
});

/**
 * Samples built on erfinv agree within the dtype's tolerance widened by the inverse CDF's slope:
 * erfinv is ill-conditioned near ±1, where one float32 ulp of the (bit-identical) uniform input
 * moves a sample at 2.7σ by ~40 of its own ulps, so float32 erf/erfinv implementations differ there
 * by several ulps of the input. Allowed: atol + rtol·|x| + 12 ulps(2^-24) · √(π/2)·e^(x²/2).
 */
function expectSampleClose(gpu: MgArray, cpu: MgArray, what: string): void {
  if (gpu.dtype !== mg.float32) return expectClose(gpu, cpu, toleranceFor(cpu.dtype), what);
  expect(gpu.shape, `${what} shape`).toEqual(cpu.shape);
  const g = gpu.dataSync() as Float32Array;
  const c = cpu.dataSync() as Float32Array;
  const t = toleranceFor(mg.float32);
  for (let i = 0; i < c.length; i++) {
    const x = c[i]!;
    const slope = Math.sqrt(Math.PI / 2) * Math.exp((x * x) / 2);
    const allowed = t.atol + t.rtol * Math.abs(x) + 12 * 2 ** -24 * slope;
    if (!(Math.abs(g[i]! - x) <= allowed)) throw new Error(`${what}: element ${i} differs: gpu ${g[i]} vs cpu ${x} (allowed ${allowed})`);
  }
}

describe("mg.random distributions on the gpu stream", () => {
  const key = R.key(11);
  // Each distribution is a few fused kernels (one simulator compile each), so a representative
  // set: the three the brief names, a 16-bit float, 64-bit bounds, and two built on other kernels.
  test("uniform and randint equal the CPU exactly; bernoulli and permutation (a GPU argsort) too", () => {
    const low = mg.array([[-1], [0.25], [3]], mg.float32);
    expectBitIdentical([
      ["uniform float32", () => R.uniform(0, 1, [257], mg.float32, key)],
      ["uniform bounds", () => R.uniform(low, 5, [3, 40], mg.float32, key)],
      ["uniform bfloat16", () => R.uniform(0, 1, [64], mg.bfloat16, key)],
      ["randint int32", () => R.randint(-5, 17, [300], mg.int32, key)],
      ["randint int64 bounds", () => R.randint(mg.array([[-100], [7]], mg.int64), 1000, [2, 50], mg.int64, key)],
      ["bernoulli", () => R.bernoulli(mg.array(0.3, mg.float32), [200], key)],
      ["permutation", () => R.permutation(500, 0, key)],
    ]);
  });

  test("normal (real and complex) and truncatedNormal within the float tolerances", () => {
    const cases: [string, () => MgArray][] = [
      ["normal float32", () => R.normal([500], mg.float32, null, null, key)],
      ["normal loc/scale", () => R.normal([4, 25], mg.float32, 2, 0.5, key)],
      ["normal float16", () => R.normal([100], mg.float16, null, null, key)],
      ["normal complex64", () => R.normal([50], mg.complex64, null, null, key)],
      ["truncatedNormal", () => R.truncatedNormal(-1, 2, [200], mg.float32, key)],
    ];
    const cpu = cases.map(([, fn]) => runOn(mg.cpu, fn)[0]!);
    const gpu = runOn(mg.gpu, () => cases.map(([, fn]) => fn()));
    cases.forEach(([what], i) => expectSampleClose(gpu[i]!, cpu[i]!, what));
  });

  test("the global key works on the gpu stream and advances as on the CPU", () => {
    R.seed(123);
    const [a] = runOn(mg.gpu, () => R.uniform(0, 1, [8]));
    const [b] = runOn(mg.gpu, () => R.uniform(0, 1, [8]));
    R.seed(123);
    const [c] = runOn(mg.cpu, () => R.uniform(0, 1, [8]));
    const [d] = runOn(mg.cpu, () => R.uniform(0, 1, [8]));
    expectSame(a!, c!, "first draw");
    expectSame(b!, d!, "second draw");
    expect(a!.tolist()).not.toEqual(b!.tolist());
  });
});
