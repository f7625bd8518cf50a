// Expected values marked "MLX 0.32.4" were produced by mlx.core.random on MLX's CPU device with
// the same keys; MLX's own pinned values come from mlx/tests/random_tests.cpp and
// python/tests/test_random.py. Statistical bounds are the distribution's moments ± 5 standard
// errors of the fixed-key sample.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { vjpOf } from "../core/helpers/grad.ts";

const R = mg.random;
const N = 100_000;

/** Values as float64 numbers (half floats widened exactly). */
function nums(a: mg.MgArray): number[] {
  const x = a.dtype === mg.float16 || a.dtype === mg.bfloat16 ? a.astype(mg.float32) : a;
  return Array.from(x.dataSync() as ArrayLike<number>, Number);
}
function moments(a: mg.MgArray): { mean: number; variance: number; min: number; max: number } {
  const v = nums(a);
  const mean = v.reduce((s, x) => s + x, 0) / v.length;
  const variance = v.reduce((s, x) => s + (x - mean) ** 2, 0) / v.length;
  return { mean, variance, min: Math.min(...v), max: Math.max(...v) };
}
function expectClose(actual: number[], expected: number[], atol: number): void {
  expect(actual.length).toBe(expected.length);
  actual.forEach((x, i) => {
    if (Math.abs(x - expected[i]!) > atol) throw new Error(`element ${i}: ${x} vs ${expected[i]} (atol ${atol})`);
  });
}
const toFloat = (n: number) => Math.fround(Math.fround(n) / Math.fround(4294967295)); // MLX's to_float

describe("uniform", () => {
  test("MLX's pinned values: float32(bits) / float32(UINT32_MAX)", () => {
    const a = R.uniform({ key: R.key(0) });
    expect(a.shape).toEqual([]);
    expect(a.dtype).toBe(mg.float32);
    expect(a.item()).toBe(toFloat(1797259609));
    expect(R.uniform({ key: R.key(0) }).item()).toBe(a.item());
    expect(R.uniform({ key: R.key(1) }).item()).toBe(toFloat(507451445));
    expect(R.uniform(0, 1, [3, 1], null, R.key(0)).tolist()).toEqual([
      [toFloat(4146024105)], [toFloat(1351547692)], [toFloat(2718843009)],
    ]);
  });

  test("half precision and broadcast bounds (MLX 0.32.4)", () => {
    const k7 = R.key(7);
    const h = R.uniform(0, 1, [8], mg.float16, k7);
    expect(h.dtype).toBe(mg.float16);
    expect(nums(h)).toEqual([0.01194000244140625, 0.379150390625, 0.33544921875, 0.0921630859375, 0.71923828125, 0.9990234375, 0.86865234375, 0.86279296875]);
    const b = R.uniform(-0.1, 0.1, [8], mg.bfloat16, k7);
    expect(b.dtype).toBe(mg.bfloat16);
    expect(nums(b)).toEqual([-0.09765625, -0.0244140625, -0.03271484375, -0.08154296875, 0.04345703125, 0.09912109375, 0.07373046875, 0.07275390625]);
    const c = R.uniform(mg.array([[0.0], [10.0]]), mg.array([1.0, 2.0, 4.0]), [2, 3], null, k7);
    expect(c.tolist()).toEqual([
      [0.06438560783863068, 0.4013848602771759, 1.7748786211013794],
      [6.559516429901123, 4.596660137176514, 8.04043197631836],
    ]);
  });

  test("every sample equals the formula applied to the bits (a second implementation)", () => {
    const key = R.key(11);
    const bits = nums(R.bits([4096], 4, key));
    const cases: [mg.Dtype, (x: number) => number, number, number, number][] = [
      [mg.float32, Math.fround, 1 - 2 ** -24, -3, 7],
      [mg.float16, Math.f16round, 1 - 2 ** -11, -3, 7],
      [mg.float32, Math.fround, 1 - 2 ** -24, 0.25, 0.5],
    ];
    for (const [dtype, round, cap, low, high] of cases) {
      const lo = round(Math.fround(low));
      const range = round(round(Math.fround(high)) - lo);
      const expected = bits.map((b) => {
        const u = round(Math.min(Math.fround(Math.fround(b) / 2 ** 32), cap));
        return round(round(range * u) + lo);
      });
      expect(nums(R.uniform(low, high, [4096], dtype, key))).toEqual(expected);
    }
  });

  test("samples lie in [low, high) and are uniform (fixed key)", () => {
    const key = R.key(42);
    const u = moments(R.uniform(0, 1, [N], null, key));
    expect(u.min).toBeGreaterThanOrEqual(0);
    expect(u.max).toBeLessThan(1);
    expect(Math.abs(u.mean - 0.5)).toBeLessThan(5 * Math.sqrt(1 / 12 / N));
    expect(Math.abs(u.variance - 1 / 12)).toBeLessThan(5 * Math.sqrt(1 / 180 / N));
    for (const dtype of [mg.float16, mg.bfloat16]) {
      const h = moments(R.uniform(0, 1, [N], dtype, key));
      expect(h.min).toBeGreaterThanOrEqual(0);
      expect(h.max).toBeLessThan(1); // capped below one in the target dtype
    }
    const w = moments(R.uniform(-1, 5, [N], null, key));
    expect(w.min).toBeGreaterThanOrEqual(-1);
    expect(w.max).toBeLessThan(5);
    const arr = moments(R.uniform(mg.array(-1), 5, [N], null, key));
    expect(arr.min).toBeGreaterThanOrEqual(-1);
    expect(arr.max).toBeLessThan(5);
  });

  test("shapes, dtypes and defaults", () => {
    expect(R.uniform(0, 1, [2, 3]).shape).toEqual([2, 3]);
    expect(R.uniform(0, 1, 4).shape).toEqual([4]);
    expect(R.uniform(0, 1, [0]).tolist()).toEqual([]);
    expect(R.uniform().dtype).toBe(R.uniform(0, 1, [], null).dtype);
    expect(R.uniform(mg.zeros([3, 1]), mg.ones([1, 3]), [3, 3]).shape).toEqual([3, 3]);
  });

  test("errors", () => {
    expect(() => R.uniform(0, 1, [2], mg.int32)).toThrow("[uniform] Can only generate uniform numbers with real floating point type (got int32).");
    expect(() => R.uniform(0, 1, [2], mg.float64)).toThrow("[uniform] Unsupported type float64");
    expect(() => R.uniform(0, 1, [2, -3])).toThrow("[uniform] Negative dimensions not allowed: (2,-3).");
    expect(() => R.uniform(mg.zeros([3, 3]), 1.0, [1, 3])).toThrow("[uniform] Cannot generate random values of shape (1,3) from broadcasted shape (3,3).");
    expect(() => R.uniform(mg.zeros([3, 3]), 1.0, [2, 3])).toThrow("[uniform] Shapes (2,3) and (3,3) cannot be broadcast.");
    expect(() => R.uniform(mg.zeros([3, 1]), mg.ones([1, 3]), [1, 3])).toThrow("[uniform] Cannot generate random values of shape (1,3) from broadcasted shape (3,3).");
  });
});

describe("normal", () => {
  // MLX's erfinv is a float32 polynomial; ours is accurate to float64 and rounded once, so
  // float32 samples agree with MLX to within a few ulps rather than bit for bit.
  const ULPS = 4e-6;

  test("values (MLX 0.32.4)", () => {
    const k7 = R.key(7);
    expectClose(nums(R.normal([8], { key: k7 })), [-2.259087085723877, -0.30747371912002563, -0.42510950565338135, -1.3274497985839844, 0.5800848603248596, 3.1724865436553955, 1.1208903789520264, 1.0928667783737183], ULPS);
    expectClose(nums(R.normal([5], { key: R.key(0) })), [0.1878441572189331, -1.2833421230316162, -0.2710915505886078, 1.2490599155426025, 0.24447001516819], ULPS);
    const ls = R.normal([2, 3], null, mg.array([1.0, 2.0, 3.0]), 0.5, k7);
    expect(ls.shape).toEqual([2, 3]);
    expectClose(nums(ls), [0.2405174970626831, 1.5804247856140137, 2.929227590560913, 0.8502456545829773, 2.227461338043213, 2.775331974029541], ULPS);
    // float16 rounding absorbs the erfinv ulps here: bit for bit.
    const h = R.normal([6], mg.float16, 1.5, 2.5, k7);
    expect(h.dtype).toBe(mg.float16);
    expect(nums(h)).toEqual([-2.296875, -0.59765625, 1.146484375, 0.75146484375, 2.63671875, 0.376953125]);
    const d = R.normal([4], mg.float64, null, null, k7);
    expect(d.dtype).toBe(mg.float64);
    expectClose(nums(d), [-0.7554662437553414, -0.7377373405166279, -0.11654735256144719, -0.6856647405940243], ULPS);
  });

  test("√2·erfinv of the uniform on (-1, 1)", () => {
    const key = R.key(5);
    const u = R.uniform(-Math.fround(1 - 2 ** -24), 1, [64], null, key);
    const expected = mg.multiply(mg.array(Math.SQRT2, mg.float32), mg.erfinv(u));
    expect(nums(R.normal([64], { key }))).toEqual(nums(expected));
  });

  test("loc and scale: loc + scale·N(0, 1), broadcasting", () => {
    const key = R.key(0);
    const a = nums(R.normal([3, 2], null, 1.0, 2.0, key));
    const b = nums(mg.add(mg.multiply(R.normal([3, 2], { key }), 2), 1));
    expectClose(a, b, 1e-6);
    const loc = R.normal([10, 2], { key: R.key(1) });
    expect(R.normal([2, 10, 2], null, loc, loc, key).shape).toEqual([2, 10, 2]);
    const v = R.normal([3, 1, 2], { key: R.key(1) });
    const h = R.normal([3, 4, 2], mg.float16, v, v, key);
    expect(h.dtype).toBe(mg.float16);
    expect(h.shape).toEqual([3, 4, 2]);
    expect(() => R.normal([2, 10, 2], null, mg.zeros([10]), mg.ones([10]), key)).toThrow("cannot be broadcast");
  });

  test("moments and finiteness (fixed key)", () => {
    const key = R.key(42);
    const s = moments(R.normal([N], { key }));
    expect(Math.abs(s.mean)).toBeLessThan(5 * Math.sqrt(1 / N));
    expect(Math.abs(s.variance - 1)).toBeLessThan(5 * Math.sqrt(2 / N));
    const t = moments(R.normal([N], null, 3, 0.5, key));
    expect(Math.abs(t.mean - 3)).toBeLessThan(5 * Math.sqrt(0.25 / N));
    expect(Math.abs(t.variance - 0.25)).toBeLessThan(5 * 0.25 * Math.sqrt(2 / N));
    for (const dtype of [mg.float16, mg.bfloat16]) {
      const h = moments(R.normal([10000], dtype, 0, 1, key));
      expect(Number.isFinite(h.min) && Number.isFinite(h.max)).toBe(true);
    }
  });

  test("complex64: real and imaginary parts N(0, 1/2) (MLX 0.32.4)", () => {
    const k7 = R.key(7);
    const c = R.normal([3], mg.complex64, null, null, k7);
    expect(c.dtype).toBe(mg.complex64);
    expect(c.shape).toEqual([3]);
    const pairs = (c.tolist() as { re: number; im: number }[]).flatMap((z) => [z.re, z.im]);
    expectClose(pairs, [-1.0740704536437988, -0.5933688879013062, -0.10008746385574341, -0.21178463101387024, 0.3216788172721863, -0.3177284300327301], ULPS);
    const ls = R.normal([2], mg.complex64, { re: 3, im: 1 }, 2.0, k7);
    const lsPairs = (ls.tolist() as { re: number; im: number }[]).flatMap((z) => [z.re, z.im]);
    expectClose(lsPairs, [1.9316093921661377, -0.04331815242767334, 2.835177183151245, 0.03032362461090088], 2 * ULPS);
    expect(R.normal([], mg.complex64).shape).toEqual([]);
    expect(R.normal([1, 2, 3, 4], mg.complex64, 3.0, 2.0).shape).toEqual([1, 2, 3, 4]);
    // Moments of the parts.
    const big = R.normal([N / 2], mg.complex64, null, null, R.key(42));
    const re = moments(mg.real(big));
    const im = moments(mg.imag(big));
    for (const part of [re, im]) {
      expect(Math.abs(part.mean)).toBeLessThan(5 * Math.sqrt(0.5 / (N / 2)));
      expect(Math.abs(part.variance - 0.5)).toBeLessThan(5 * 0.5 * Math.sqrt(2 / (N / 2)));
    }
  });

  test("errors", () => {
    expect(() => R.normal([2], mg.int32)).toThrow("[normal] Only floating point and complex64 types are supported (got int32).");
    expect(() => R.normal([-1])).toThrow("[normal] Negative dimensions not allowed: (-1,).");
  });
});

describe("truncatedNormal", () => {
  test("values (MLX 0.32.4; erf/erfinv agree to a few ulps)", () => {
    const t = R.truncatedNormal(-1.5, 2.0, [8], { key: R.key(7) });
    expectClose(nums(t), [-1.4208725690841675, -0.22218544781208038, -0.3261643052101135, -1.0332999229431152, 0.5872450470924377, 1.9874159097671509, 1.070618987083435, 1.046406626701355], 1e-6);
  });

  test("samples stay in [lower, upper]; moments of the truncated normal (fixed key)", () => {
    const s = moments(R.truncatedNormal(-1.5, 2.0, [N], { key: R.key(42) }));
    expect(s.min).toBeGreaterThanOrEqual(-1.5);
    expect(s.max).toBeLessThanOrEqual(2.0);
    // Mean and variance of N(0,1) truncated to [a, b]: Z = Φ(b) − Φ(a),
    // mean = (φ(a) − φ(b))/Z, var = 1 + (aφ(a) − bφ(b))/Z − mean².
    const phi = (x: number) => Math.exp(-x * x / 2) / Math.sqrt(2 * Math.PI);
    const Phi = (x: number) => 0.5 * (1 + (mg.erf(mg.array(x / Math.SQRT2, mg.float64)).item() as number));
    const z = Phi(2) - Phi(-1.5);
    const mean = (phi(-1.5) - phi(2)) / z;
    const variance = 1 + (-1.5 * phi(-1.5) - 2 * phi(2)) / z - mean * mean;
    expect(Math.abs(s.mean - mean)).toBeLessThan(5 * Math.sqrt(variance / N));
    expect(Math.abs(s.variance - variance)).toBeLessThan(0.02);
  });

  test("broadcast bounds, reversed bounds, empty, dtype", () => {
    const lower = mg.reshape(mg.array([-2.0, 0.0]), [1, 2]);
    const upper = mg.reshape(mg.array([0.0, 1.0, 2.0]), [3, 1]);
    const a = R.truncatedNormal(lower, upper);
    expect(a.shape).toEqual([3, 2]);
    expect(mg.all(mg.logicalAnd(mg.lessEqual(lower, a), mg.lessEqual(a, upper))).item()).toBe(true);
    expect(nums(R.truncatedNormal(2.0, -2.0, [5]))).toEqual([2, 2, 2, 2, 2]);
    const e = R.truncatedNormal(mg.array([]), mg.array([]));
    expect(e.size).toBe(0);
    expect(e.dtype).toBe(mg.float32);
    expect(R.truncatedNormal(-3.0, 3.0, [542, 399]).shape).toEqual([542, 399]);
    expect(R.truncatedNormal(-2.0, 2.0).size).toBe(1);
    const h = R.truncatedNormal(-2.0, 2.0, [100], mg.float16);
    expect(h.dtype).toBe(mg.float16);
    expect(Math.max(...nums(h).map(Math.abs))).toBeLessThanOrEqual(2);
    expect(R.truncatedNormal(0, 1).dtype).toBe(R.truncatedNormal(0, 1, null, null).dtype);
  });

  test("errors", () => {
    const lower = mg.array([-2.0, -1.0]);
    const higher = mg.array([1.0, 2.0, 3.0]);
    expect(() => R.truncatedNormal(lower, higher)).toThrow("[truncated_normal] Shapes (2,) and (3,) cannot be broadcast.");
    const l2 = mg.reshape(mg.array([-2.0, -3.0]), [1, 2]);
    const h2 = mg.reshape(mg.array([0.0, 3.0, 1.5]), [3, 1]);
    expect(() => R.truncatedNormal(l2, h2, [4, 2])).toThrow("[truncated_normal] Shapes");
    expect(() => R.truncatedNormal(0, 1, null, mg.int32)).toThrow("[truncated_normal] truncated_normal only accepts floating point dtypes (got int32).");
    expect(() => (R.truncatedNormal as (...a: unknown[]) => mg.MgArray)(0)).toThrow("[truncated_normal] lower and upper are required.");
  });
});

describe("randint", () => {
  test("values (MLX 0.32.4)", () => {
    const k7 = R.key(7);
    const a = R.randint(3, 15, [12], { key: k7 });
    expect(a.dtype).toBe(mg.int32);
    expect(a.tolist()).toEqual([10, 4, 5, 6, 8, 14, 12, 3, 3, 6, 4, 5]);
    expect(R.randint(-5, 5, [10], { key: R.key(0) }).tolist()).toEqual([-2, 1, -1, -3, -2, -1, -3, -3, 2, 2]);
    const u8 = R.randint(0, 256, [8], mg.uint8, k7);
    expect(u8.dtype).toBe(mg.uint8);
    expect(u8.tolist()).toEqual([3, 97, 85, 23, 184, 255, 222, 220]);
    // Beyond float32's integer resolution every draw rounds to the lower bound (as MLX).
    expect(R.randint(2 ** 40, 2 ** 40 + 1024, [6], mg.int64, k7).tolist()).toEqual(new Array(6).fill(1099511627776n));
  });

  test("range, determinism and coverage (fixed key)", () => {
    const key = R.key(0);
    const low = mg.array(3);
    const high = mg.array(15);
    const a = R.randint(low, high, [88], null, key);
    expect(a.shape).toEqual([88]);
    expect(a.tolist()).toEqual(R.randint(low, high, [88], null, key).tolist());
    const b = nums(R.randint(-10, 10, [N], null, key));
    expect(Math.min(...b)).toBe(-10);
    expect(Math.max(...b)).toBe(9);
    const counts = new Array(20).fill(0);
    for (const x of b) counts[x + 10]++;
    // Each of 20 values: N/20 ± 5σ of a binomial count.
    const sd = Math.sqrt(N * (1 / 20) * (19 / 20));
    for (const c of counts) expect(Math.abs(c - N / 20)).toBeLessThan(5 * sd);
    expect([...new Set(nums(R.randint(-5, 5, [20000], null, key)))].sort((x, y) => x - y)).toEqual([-5, -4, -3, -2, -1, 0, 1, 2, 3, 4]);
    expect(R.randint(mg.reshape(mg.array([0, 0, 0]), [3, 1]), mg.reshape(mg.array([12, 13, 14, 15]), [1, 4]), [3, 4]).shape).toEqual([3, 4]);
  });

  test("reversed bounds give low; bounds hold past float32 resolution; bool", () => {
    const key = R.key(0);
    expect(new Set(nums(R.randint(10, -10, [1000], null, key)))).toEqual(new Set([10]));
    for (const [dtype, low, high] of [[mg.int32, 2 ** 24, 2 ** 24 + 2], [mg.uint32, 2 ** 24, 2 ** 24 + 2], [mg.int64, 2 ** 40, 2 ** 40 + 1024]] as const) {
      const a = R.randint(low, high, [10000], dtype, key);
      expect(a.dtype).toBe(dtype);
      expect(mg.all(mg.greaterEqual(a, low)).item()).toBe(true);
      expect(mg.all(mg.less(a, high)).item()).toBe(true);
    }
    const t = R.randint(0, 2, [1000], mg.bool_, key);
    expect(t.dtype).toBe(mg.bool_);
    expect([...new Set(t.tolist() as boolean[])].sort()).toEqual([false, true]);
    expect(mg.any(R.randint(0, 1, [1000], mg.bool_, key)).item()).toBe(false);
    expect(R.randint(0, 1).dtype).toBe(R.randint(0, 1, [], null).dtype);
    expect(R.randint(0, 10, [], mg.uint32).dtype).toBe(mg.uint32);
  });

  test("errors", () => {
    expect(() => R.randint(3, 5, [1], mg.float32)).toThrow("[randint] randint only accepts integer dtypes and bool (got float32).");
    expect(() => R.randint(0, 3, [-2])).toThrow("[randint] Negative dimensions not allowed: (-2,).");
    expect(() => (R.randint as (...a: unknown[]) => mg.MgArray)(3)).toThrow("[randint] low and high are required.");
  });
});

describe("bernoulli", () => {
  test("values (MLX 0.32.4)", () => {
    expect(R.bernoulli(mg.array([0.1, 0.5, 0.9]), [4, 3], R.key(7)).tolist()).toEqual([
      [false, true, true], [false, true, false], [false, true, true], [false, true, true],
    ]);
    expect(R.bernoulli(0.5, [10], R.key(0)).tolist()).toEqual([true, false, true, true, true, true, true, true, false, false]);
  });

  test("bits < p·2³²: p ≥ 1 always, p ≤ 0 never; the rate (fixed key)", () => {
    const a = R.bernoulli();
    expect(a.shape).toEqual([]);
    expect(a.dtype).toBe(mg.bool_);
    expect(R.bernoulli(mg.array([2.0, -2.0], mg.float32)).tolist()).toEqual([true, false]);
    expect(R.bernoulli(mg.array(1.0, mg.float32), [1000]).tolist()).toEqual(new Array(1000).fill(true));
    expect(R.bernoulli(mg.array(0.0, mg.float32), [1000]).tolist()).toEqual(new Array(1000).fill(false));
    expect(R.bernoulli(mg.array(0.5, mg.float16)).dtype).toBe(mg.bool_);
    const rate = moments(R.bernoulli(0.3, [N], R.key(42))).mean;
    expect(Math.abs(rate - 0.3)).toBeLessThan(5 * Math.sqrt(0.3 * 0.7 / N));
    // p broadcasts over shape; the default shape is p's.
    expect(R.bernoulli(mg.array(0.5), [5]).shape).toEqual([5]);
    expect(R.bernoulli(mg.reshape(mg.array([0.1, 0.2, 0.3]), [1, 3]), [4, 3]).shape).toEqual([4, 3]);
    expect(R.bernoulli(mg.array([])).size).toBe(0);
  });

  test("errors", () => {
    const p = mg.array([0.1, 0.2, 0.3]);
    expect(() => R.bernoulli(p, [2])).toThrow("[bernoulli] Shapes (2,) and (3,) cannot be broadcast.");
    expect(() => R.bernoulli(p, [])).toThrow("[bernoulli] shape of `p` (3,) is incompatible with argument `shape` ().");
    expect(() => R.bernoulli(mg.array([]), [3, 3])).toThrow("[bernoulli] Shapes (3,3) and (0,) cannot be broadcast.");
    expect(() => R.bernoulli(0, [2])).toThrow("[bernoulli] bernoulli probability `p` must be a float type (got int32).");
    expect(() => R.bernoulli(mg.array(1, mg.int32))).toThrow("[bernoulli] bernoulli probability `p` must be a float type");
  });
});

describe("gumbel", () => {
  test("values (MLX 0.32.4)", () => {
    const k7 = R.key(7);
    // float32 logs (here MLX's and the native CPU's) agree to a few ulp, not bit for bit; −log(t)
    // near t = 1 turns that into an absolute error of a few 1e-8
    const want = [-1.4879366159439087, 0.030889837071299553, -0.08846480399370193, -0.8687850832939148, 1.1092846393585205, 7.1874518394470215, 1.9618029594421387, 1.9132311344146729];
    const got = nums(R.gumbel([8], { key: k7 }));
    want.forEach((w, i) => expect(Math.abs(got[i]! - w)).toBeLessThanOrEqual(2e-7 + 1e-6 * Math.abs(w)));
    const h = R.gumbel([8], mg.float16, k7);
    expect(h.dtype).toBe(mg.float16);
    expect(nums(h)).toEqual([-1.48828125, 0.0307464599609375, -0.08782958984375, -0.869140625, 1.1103515625, 6.9296875, 1.9599609375, 1.9130859375]);
  });

  test("−log(−log(u)) of the uniform; moments (fixed key)", () => {
    const key = R.key(3);
    const u = R.uniform(0, 1, [256], null, key);
    expect(nums(R.gumbel([256], { key }))).toEqual(nums(mg.negative(mg.log(mg.negative(mg.log(u))))));
    const s = moments(R.gumbel([N], { key: R.key(42) }));
    const euler = 0.5772156649015329;
    const variance = Math.PI ** 2 / 6;
    expect(Math.abs(s.mean - euler)).toBeLessThan(5 * Math.sqrt(variance / N));
    expect(Math.abs(s.variance - variance)).toBeLessThan(0.05);
    expect(R.gumbel([100, 100]).shape).toEqual([100, 100]);
    expect(R.gumbel([1, 1]).dtype).toBe(R.gumbel([1, 1], null).dtype);
  });

  test("errors", () => {
    expect(() => R.gumbel([2], mg.int32)).toThrow("[gumbel] Can only generate uniform numbers with real floating point type (got int32).");
  });
});

describe("laplace", () => {
  test("values (MLX 0.32.4)", () => {
    const k7 = R.key(7);
    expect(nums(R.laplace([8], { key: k7 }))).toEqual([3.7347986698150635, 0.27643513679504395, 0.39934852719306946, 1.6908650398254395, -0.5765072107315063, -6.494722366333008, -1.338134765625, -1.2929779291152954]);
    expect(nums(R.laplace([4], null, 0.3, 1.7, k7))).toEqual([1.6575791835784912, 1.6176097393035889, 0.4655318856239319, 1.5025784969329834]);
    const d = R.laplace([4], mg.float64, 0, 1, k7);
    expect(d.dtype).toBe(mg.float64);
    expect(nums(d)).toEqual([0.7985759392418034, 0.7750645414464395, 0.09737167350238181, 0.7073991165694854]);
    expect(nums(R.laplace([5], { key: R.key(0) }))).toEqual([-0.16134454309940338, 1.612581729888916, 0.24039064347743988, -1.5528535842895508, -0.21459664404392242]);
  });

  test("loc + scale·Laplace(0, 1); moments (fixed key)", () => {
    const key = R.key(0);
    expectClose(nums(R.laplace([3, 2], null, 1.0, 2.0, key)), nums(mg.add(mg.multiply(R.laplace([3, 2], { key }), 2), 1)), 1e-6);
    const s = moments(R.laplace([N], { key: R.key(42) }));
    expect(Math.abs(s.mean)).toBeLessThan(5 * Math.sqrt(2 / N));
    // Var = 2b²; the sample variance has standard error √((μ₄ − σ⁴)/N) = √(20/N).
    expect(Math.abs(s.variance - 2)).toBeLessThan(5 * Math.sqrt(20 / N));
    for (const dtype of [mg.float16, mg.bfloat16]) {
      const h = R.laplace([10000], dtype, 0, 1, R.key(1));
      expect(h.dtype).toBe(dtype);
      const m = moments(h);
      expect(Number.isFinite(m.min) && Number.isFinite(m.max)).toBe(true);
    }
  });

  test("errors", () => {
    expect(() => R.laplace([2], mg.int32)).toThrow("[laplace] Only real floating point types are supported (got int32).");
    expect(() => R.laplace([2], null, mg.array(1) as unknown as number)).toThrow("[laplace] loc must be a number");
  });
});

describe("determinism", () => {
  test("the same key gives the same draws; different keys differ", () => {
    const [a, b] = [R.key(100), R.key(101)];
    const draws: [string, (k: mg.MgArray) => mg.MgArray][] = [
      ["uniform", (k) => R.uniform(0, 1, [16], null, k)],
      ["normal", (k) => R.normal([16], { key: k })],
      ["truncatedNormal", (k) => R.truncatedNormal(-1, 1, [16], null, k)],
      ["randint", (k) => R.randint(0, 1000, [16], null, k)],
      ["bernoulli", (k) => R.bernoulli(0.5, [64], k)],
      ["gumbel", (k) => R.gumbel([16], { key: k })],
      ["laplace", (k) => R.laplace([16], { key: k })],
    ];
    for (const [, draw] of draws) {
      expect(draw(a).tolist()).toEqual(draw(a).tolist());
      expect(draw(a).tolist()).not.toEqual(draw(b).tolist());
    }
    const [s0, s1] = mg.split(R.split(a), 2, 0).map((k) => mg.reshape(k, [2]));
    expect(R.uniform(0, 1, [8], null, s0).tolist()).not.toEqual(R.uniform(0, 1, [8], null, s1).tolist());
  });
});

describe("categorical", () => {
  const logits = mg.array([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0]], mg.float32);

  test("values (MLX 0.32.4): Gumbel-max and the inverse CDF of one distribution", () => {
    const k7 = R.key(7);
    const a = R.categorical(logits, { key: k7 });
    expect(a.dtype).toBe(mg.uint32);
    expect(a.tolist()).toEqual([3, 1]);
    expect(R.categorical(logits, -1, null, 6, k7).tolist()).toEqual([[3, 3, 2, 3, 3, 2], [1, 0, 0, 0, 0, 0]]);
    expect(R.categorical(mg.array([0.0, 1.0, 2.0, 3.0], mg.float32), -1, null, 10, k7).tolist()).toEqual([3, 2, 2, 3, 2, 3, 2, 3, 3, 3]);
    expect(R.categorical(mg.array([[0.0, 1.0], [2.0, 3.0], [1.0, 1.0]], mg.float32), 0, [4, 2], null, k7).tolist()).toEqual([[1, 1], [1, 1], [1, 2], [1, 1]]);
  });

  test("Gumbel-max is argmax(logits + gumbel noise)", () => {
    const key = R.key(12);
    const lg = mg.reshape(mg.multiply(mg.astype(mg.arange(24), mg.float32), 0.1), [4, 6]);
    const g = R.gumbel([4, 6], { key });
    expect(R.categorical(lg, { key }).tolist()).toEqual(mg.argmax(mg.add(g, lg), 1).tolist());
  });

  test("sample frequencies match the probabilities (fixed key, both paths)", () => {
    const p = [0.1, 0.2, 0.7];
    const lg = mg.log(mg.array(p, mg.float32));
    const check = (draws: mg.MgArray) => {
      const v = nums(draws);
      for (let c = 0; c < 3; c++) {
        const f = v.filter((x) => x === c).length / v.length;
        expect(Math.abs(f - p[c]!)).toBeLessThan(5 * Math.sqrt((p[c]! * (1 - p[c]!)) / v.length));
      }
    };
    check(R.categorical(lg, -1, null, 50_000, R.key(42))); // inverse CDF
    check(R.categorical(mg.broadcastTo(lg, [50_000, 3]), { key: R.key(42) })); // Gumbel-max
  });

  test("infinite logits (mlx/tests/random_tests.cpp)", () => {
    expect(R.categorical(mg.array([1.0, -2.0, Infinity, 4.0, 3.0])).item()).toBe(2);
    expect(R.categorical(mg.array([-Infinity, -2.0, -Infinity, -Infinity])).item()).toBe(1);
    expect(R.categorical(mg.array([1.0, -2.0, Infinity, 4.0, 3.0]), 0, null, 5).tolist()).toEqual([2, 2, 2, 2, 2]);
    expect(R.categorical(mg.array([-Infinity, -2.0, -Infinity, -Infinity]), 0, null, 5).tolist()).toEqual([1, 1, 1, 1, 1]);
    const out = nums(R.categorical(mg.array([-Infinity, 0.0, -Infinity, 0.0]), 0, null, 100));
    expect(out.every((x) => x === 1 || x === 3)).toBe(true);
  });

  test("shapes (python/tests/test_random.py)", () => {
    const z = mg.zeros([10, 20]);
    expect(R.categorical(z, -1).shape).toEqual([10]);
    expect(R.categorical(z, 0).shape).toEqual([20]);
    expect(R.categorical(z, 1).shape).toEqual([10]);
    const out = R.categorical(z);
    expect(out.shape).toEqual([10]);
    expect(mg.max(out).item()).toBeLessThan(20);
    const s = R.categorical(z, 0, [5, 20]);
    expect(s.shape).toEqual([5, 20]);
    expect(mg.max(s).item()).toBeLessThan(10);
    expect(R.categorical(z, 1, null, 7).shape).toEqual([10, 7]);
    expect(R.categorical(z, 0, null, 7).shape).toEqual([20, 7]);
    const single = mg.zeros([20]);
    expect(R.categorical(single, -1, null, 7).shape).toEqual([7]);
    expect(R.categorical(single, 0, [5, 3]).shape).toEqual([5, 3]);
    expect(R.categorical(single, -1, null, 1).shape).toEqual([1]);
    expect(R.categorical(single, -1, null, 0).shape).toEqual([0]);
    const cube = mg.zeros([5, 4, 3]);
    expect(R.categorical(cube, -1, null, 7).shape).toEqual([5, 4, 7]);
    expect(R.categorical(cube, -2, null, 7).shape).toEqual([5, 3, 7]);
    expect(R.categorical(cube, -3, null, 7).shape).toEqual([4, 3, 7]);
  });

  test("errors", () => {
    const z = mg.zeros([10, 20]);
    expect(() => R.categorical(z, 2)).toThrow("[categorical] Invalid axis 2 for logits with 2 dimensions.");
    expect(() => R.categorical(z, -3)).toThrow("[categorical] Invalid axis -3 for logits with 2 dimensions.");
    expect(() => R.categorical(z, 1, [1])).toThrow("[categorical] Requested shape (1,) is not broadcast compatible with reduced logits shape (10,).");
    expect(() => R.categorical(z, 1, [11])).toThrow("[categorical] Shapes (11,) and (10,) cannot be broadcast.");
    expect(() => R.categorical(z, 1, [10, 1])).toThrow("[categorical] Requested shape (10,1) is not broadcast compatible with reduced logits shape (10,).");
    expect(() => R.categorical(z, -1, [10, 5], 5)).toThrow("[categorical] At most one of shape or num_samples can be specified.");
    expect(() => R.categorical(z, -1, null, -1)).toThrow("[categorical] num_samples must be non-negative, got -1.");
  });
});

describe("derivatives with respect to array parameters", () => {
  // The draws are built from ordinary ops, so parameters given as arrays get cotangents through
  // those ops' rules; the key (uint32) gets none.
  const key = R.key(21);
  const ones = mg.ones([4]);

  test("uniform: d/dlow = 1 − u, d/dhigh = u", () => {
    const lo = mg.array([-1, 0, 1, 2], mg.float32);
    const hi = mg.array([1, 2, 3, 5], mg.float32);
    const u = nums(R.uniform(0, 1, [4], null, key));
    const [gl, gh] = vjpOf((l, h) => R.uniform(l, h, [4], null, key), [lo, hi], ones);
    expectClose(nums(gl!), u.map((x) => 1 - x), 1e-6);
    expectClose(nums(gh!), u, 1e-6);
  });

  test("normal: d/dloc = 1, d/dscale = the standard draw", () => {
    const loc = mg.array([0.5, -1, 2, 0], mg.float32);
    const scale = mg.array([1, 2, 0.5, 3], mg.float32);
    const z = nums(R.normal([4], { key }));
    const [gl, gs] = vjpOf((l, s) => R.normal([4], null, l, s, key), [loc, scale], ones);
    expectClose(nums(gl!), [1, 1, 1, 1], 1e-6);
    expectClose(nums(gs!), z, 1e-6);
  });
});

describe("permutation", () => {
  test("values (MLX 0.32.4)", () => {
    const p = R.permutation(10, { key: R.key(7) });
    expect(p.dtype).toBe(mg.uint32);
    expect(p.tolist()).toEqual([4, 6, 1, 2, 5, 7, 8, 3, 0, 9]);
    expect(R.permutation(16, { key: R.key(3) }).tolist()).toEqual([2, 13, 10, 7, 14, 11, 15, 12, 6, 3, 9, 8, 5, 4, 1, 0]);
    expect(R.permutation(mg.reshape(mg.arange(12), [3, 4]), 1, R.key(7)).tolist()).toEqual([[0, 1, 3, 2], [4, 5, 7, 6], [8, 9, 11, 10]]);
    expect(R.permutation(mg.reshape(mg.arange(20), [4, 5]), 1, R.key(3)).tolist()).toEqual([
      [0, 1, 4, 3, 2], [5, 6, 9, 8, 7], [10, 11, 14, 13, 12], [15, 16, 19, 18, 17],
    ]);
  });

  test("the argsort of n random words", () => {
    const key = R.key(8);
    expect(R.permutation(100, { key }).tolist()).toEqual(mg.argsort(R.bits([100], 4, key)).tolist());
  });

  test("a permutation of the entries (python/tests/test_random.py)", () => {
    const sorted = (a: mg.MgArray) => nums(a).sort((x, y) => x - y);
    expect(sorted(R.permutation(4))).toEqual([0, 1, 2, 3]);
    expect(sorted(R.permutation(mg.array([0, 1, 2, 3])))).toEqual([0, 1, 2, 3]);
    const x = mg.reshape(mg.arange(16), [4, 4]);
    expect(mg.sort(R.permutation(x, 0), 0).tolist()).toEqual(x.tolist());
    expect(mg.sort(R.permutation(x, 1), 1).tolist()).toEqual(x.tolist());
    // Rows move whole along axis 0.
    const rows = R.permutation(x, 0, R.key(1)).tolist() as number[][];
    for (const r of rows) expect(r.map((v) => v - r[0]!)).toEqual([0, 1, 2, 3]);
    expect(mg.all(mg.equal(mg.arange(16384), R.permutation(16384))).item()).toBe(false);
    const one = R.permutation(mg.array([[1]]));
    expect(one.shape).toEqual([1, 1]);
    expect(one.dtype).toBe(mg.int32);
    expect(R.permutation(0).shape).toEqual([0]);
    const f = R.permutation(mg.array([0.5, 1.5, 2.5], mg.float16), { key: R.key(2) });
    expect(f.dtype).toBe(mg.float16);
    expect(nums(f).sort()).toEqual([0.5, 1.5, 2.5]);
  });

  test("errors", () => {
    expect(() => R.permutation(-1)).toThrow("[permutation] x must be non-negative, got -1.");
    expect(() => R.permutation(2.5)).toThrow("[permutation] x must be an integer, got 2.5.");
    expect(() => R.permutation(mg.zeros([2, 3]), 2)).toThrow("[permutation] axis 2 is out of bounds for array with 2 dimensions.");
    expect(() => (R.permutation as (...a: unknown[]) => mg.MgArray)()).toThrow("[permutation] x (an integer or an array) is required.");
  });
});
