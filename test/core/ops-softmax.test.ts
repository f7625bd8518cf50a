import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import * as mg from "../../ts/index.ts";
import { roundToDtype } from "../../ts/core/dtype.ts";
import { sliceStatic } from "../../ts/core/ops/slicing.ts";
import { checkVmap, expectClose, gradcheck, randomArray, values } from "./helpers/grad.ts";
import { makeArray } from "../../ts/core/graph.ts";
import { resolveStream } from "../../ts/core/device.ts";
import { LogSumExp, Softmax } from "../../ts/core/primitives/softmax.ts";
import { setNativeCpu } from "../../ts/backend/cpu/native/index.ts";
import { normalizedTolerance } from "../../ts/testing/tolerances.ts";

/** Float64 reference over a set of axes of a row-major array: groups elements by their
 *  coordinates on the kept axes. Returns, for each element, its group id. */
function groups(shape: number[], axes: number[]): number[] {
  const n = shape.reduce((a, b) => a * b, 1);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    let rem = i;
    let g = 0;
    for (let d = shape.length - 1, mult = 1; d >= 0; d--) {
      const c = rem % shape[d]!;
      rem = Math.floor(rem / shape[d]!);
      if (!axes.includes(d)) {
        g += c * mult;
        mult *= shape[d]!;
      }
    }
    out.push(g);
  }
  return out;
}

function refSoftmax(v: number[], shape: number[], axes: number[]): number[] {
  const g = groups(shape, axes);
  const m = new Map<number, number>();
  v.forEach((x, i) => m.set(g[i]!, Math.max(m.get(g[i]!) ?? -Infinity, x)));
  const z = new Map<number, number>();
  v.forEach((x, i) => z.set(g[i]!, (z.get(g[i]!) ?? 0) + Math.exp(x - m.get(g[i]!)!)));
  return v.map((x, i) => Math.exp(x - m.get(g[i]!)!) / z.get(g[i]!)!);
}

function refLogsumexp(v: number[], shape: number[], axes: number[]): number[] {
  const g = groups(shape, axes);
  const m = new Map<number, number>();
  v.forEach((x, i) => m.set(g[i]!, Math.max(m.get(g[i]!) ?? -Infinity, x)));
  const z = new Map<number, number>();
  v.forEach((x, i) => z.set(g[i]!, (z.get(g[i]!) ?? 0) + Math.exp(x - m.get(g[i]!)!)));
  return [...m.keys()].sort((a, b) => a - b).map((k) => m.get(k)! + Math.log(z.get(k)!));
}

const AXES: (number[] | null)[] = [null, [0], [1], [2], [0, 1], [1, 2], [0, 2], [0, 1, 2]];

describe("softmax", () => {
  test("float64 matches the reference over every axis set; float32 and float16 round once (reference), within tolerance (native)", () => {
    const x64 = mg.multiply(randomArray([3, 4, 5], 1), 4);
    const v = values(x64);
    for (const axes of AXES) {
      const ax = axes ?? [0, 1, 2];
      const want = refSoftmax(v, [3, 4, 5], ax);
      expectClose(values(mg.softmax(x64, axes)), want, 1e-14, 1e-16);
      for (const dtype of [mg.float32, mg.float16, mg.bfloat16]) {
        // The input is first rounded to the dtype; the result is its exact softmax rounded once.
        const xd = mg.astype(x64, dtype);
        const exact = refSoftmax(values(xd), [3, 4, 5], ax).map((e) => roundToDtype(e, dtype));
        const prev = setNativeCpu(false);
        try {
          const got = mg.softmax(xd, axes, { precise: true });
          expect(got.dtype).toBe(dtype);
          expect(values(got)).toEqual(exact);
        } finally {
          setNativeCpu(prev);
        }
        const tol = normalizedTolerance(dtype, ax.reduce((n, a) => n * [3, 4, 5][a]!, 1));
        expectClose(values(mg.softmax(xd, axes, { precise: true })), exact, tol.rtol, tol.atol);
      }
    }
    expect(values(mg.softmax(x64, 1))).toEqual(values(mg.softmax(x64, [1])));
  });

  test("integers become float32; transposed and sliced inputs; scalar", () => {
    const xi = mg.array([[1, 2, 3], [0, 0, 0]]);
    const s = mg.softmax(xi, -1);
    expect(s.dtype).toBe(mg.float32);
    expect(values(s)).toEqual(refSoftmax([1, 2, 3, 0, 0, 0], [2, 3], [1]).map(Math.fround));
    const base = randomArray([8, 4], 3);
    const sl = sliceStatic(base, [0, 0], [8, 2]);
    expectClose(values(mg.softmax(sl, -1)), refSoftmax(values(sl), [8, 2], [1]), 1e-14);
    const t = mg.transpose(randomArray([4, 3, 5], 4), [2, 0, 1]);
    expectClose(values(mg.softmax(t, -1)), refSoftmax(values(t), [5, 4, 3], [2]), 1e-14);
    expect(mg.softmax(mg.array(2.5)).item()).toBe(1);
    expect(mg.softmax(mg.zeros([0, 3])).shape).toEqual([0, 3]);
  });

  test("stable for large inputs; −∞ entries give 0; an all −∞ row or a +∞ entry gives NaN", () => {
    const big = values(mg.softmax(mg.array([1000, 1001, 1002], mg.float64)));
    expectClose(big, refSoftmax([0, 1, 2], [3], [0]), 1e-14);
    const a = new Float64Array(100).fill(-Infinity);
    a[99] = 0;
    const s = values(mg.softmax(mg.array(a)));
    expect(s[99]).toBe(1);
    expect(s.slice(0, 99).every((e) => e === 0)).toBe(true);
    for (const n of [127, 128, 129]) expect(values(mg.softmax(mg.full([n], -Infinity))).every(Number.isNaN)).toBe(true);
    expect(values(mg.softmax(mg.array([1, Infinity]))).every(Number.isNaN)).toBe(true);
    expect(values(mg.softmax(mg.array([1, NaN, 2]))).every(Number.isNaN)).toBe(true);
  });

  test("errors", () => {
    expect(() => mg.softmax(mg.array(1.0), -1)).toThrow("[softmax] Received non-empty axes for array with 0 dimensions.");
    expect(() => mg.softmax(mg.zeros([2, 3]), 2)).toThrow("[softmax] Invalid axis 2 for array with 2 dimensions.");
    expect(() => mg.softmax(mg.zeros([2, 3]), [1, -1])).toThrow("[softmax] Duplicate axes detected in reduction.");
  });

  test("gradient y ⊙ (g − Σ g⊙y) over one and several axes", () => {
    const x = randomArray([2, 3, 4], 8);
    gradcheck((a) => mg.softmax(a, -1), [x]);
    gradcheck((a) => mg.softmax(a, [0, 2]), [x]);
    gradcheck((a) => mg.softmax(a), [x]);
  });
});

describe("logsumexp", () => {
  test("float64 matches the reference over every axis set, with keepdims shapes", () => {
    const x = mg.multiply(randomArray([3, 4, 5], 2), 5);
    const v = values(x);
    for (const axes of AXES) {
      const ax = axes ?? [0, 1, 2];
      const r = mg.logsumexp(x, axes);
      expect(r.shape).toEqual([3, 4, 5].filter((_, i) => !ax.includes(i)));
      expectClose(values(r), refLogsumexp(v, [3, 4, 5], ax), 1e-14, 1e-15);
      const k = mg.logsumexp(x, axes, true);
      expect(k.shape).toEqual([3, 4, 5].map((d, i) => (ax.includes(i) ? 1 : d)));
      expect(values(k)).toEqual(values(r));
      expect(mg.logsumexp(x, axes, { keepdims: true }).shape).toEqual(k.shape);
    }
  });

  test("dtypes: float16 rounds once, integers become float32; full reduction of size-1-leading shapes is a scalar", () => {
    const h = mg.array([0.5, 1.5, -2, 3], mg.float16);
    expect(values(mg.logsumexp(h))).toEqual([roundToDtype(refLogsumexp(values(h), [4], [0])[0]!, mg.float16)]);
    const i = mg.logsumexp(mg.array([1, 2, 3]));
    expect(i.dtype).toBe(mg.float32);
    expect(i.item()).toBe(Math.fround(refLogsumexp([1, 2, 3], [3], [0])[0]!));
    for (const shape of [[1, 2], [1, 1], [1, 1, 8]]) expect(mg.logsumexp(mg.ones(shape)).shape).toEqual([]);
    expect(mg.logsumexp(mg.array(1.5)).item()).toBe(1.5);
  });

  test("stable for large inputs; ±∞ and NaN", () => {
    expectClose(values(mg.logsumexp(mg.array([1000, 1000], mg.float64))), [1000 + Math.LN2], 1e-15);
    expect(mg.logsumexp(mg.array([-Infinity, -Infinity])).item()).toBe(-Infinity);
    expect(mg.logsumexp(mg.array([-Infinity, 0], mg.float64)).item()).toBe(0);
    expect(mg.logsumexp(mg.array([1, Infinity])).item()).toBe(Infinity);
    expect(mg.logsumexp(mg.array([1, NaN])).item()).toBeNaN();
    expect(mg.logsumexp(mg.array([[-Infinity, -Infinity], [0, 0]], mg.float64), 1).tolist()).toEqual([-Infinity, Math.LN2]);
    expect(mg.array([[1, 2], [3, 4]], mg.float64).logsumexp(1, true).shape).toEqual([2, 1]);
  });

  test("transposed and broadcast inputs", () => {
    const x = mg.swapaxes(randomArray([2, 2, 8], 6), 0, 1);
    expectClose(values(mg.logsumexp(x, 2)), refLogsumexp(values(x), [2, 2, 8], [2]), 1e-14);
    const b = mg.broadcastTo(randomArray([2, 1, 8], 7), [2, 2, 8]);
    expectClose(values(mg.logsumexp(b)), refLogsumexp(values(b), [2, 2, 8], [0, 1, 2]), 1e-14);
  });

  test("errors", () => {
    expect(() => mg.logsumexp(mg.zeros([0]))).toThrow("[logsumexp] Received empty array.");
    expect(() => mg.logsumexp(mg.array(1), 0)).toThrow("[logsumexp] Received non-empty axes for array with 0 dimensions.");
    expect(() => mg.logsumexp(mg.zeros([2]), 1)).toThrow("[logsumexp] Invalid axis 1 for array with 1 dimensions.");
  });

  test("gradient g · softmax(x)", () => {
    const x = randomArray([3, 4], 12);
    gradcheck((a) => mg.logsumexp(a, 1), [x]);
    gradcheck((a) => mg.logsumexp(a, 0, true), [x]);
    gradcheck((a) => mg.logsumexp(a), [x]);
  });
});

describe("vmap rules", () => {
  test("softmax and logsumexp reduce the last per-example axis wherever the batch axis is", () => {
    const x = randomArray([3, 4, 5], 80);
    for (const b of [0, 1, 2]) {
      checkVmap((a) => makeArray(Softmax, [a], { precise: false }, resolveStream()), [x], [b]);
      checkVmap((a) => makeArray(LogSumExp, [a], {}, resolveStream()), [x], [b]);
    }
  });
});

describe("properties (fast-check)", () => {
  test("softmax rows sum to 1 and logsumexp equals the float64 log Σ exp, for random shapes and axes", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 3 }), fc.integer({ min: 1, max: 500 }), fc.integer({ min: 0, max: 7 }), (shape, seed, mask) => {
        const axes = shape.map((_, i) => i).filter((i) => (mask >> i) & 1);
        const x = mg.multiply(randomArray(shape, seed), 30);
        const s = mg.softmax(x, axes);
        expectClose(values(mg.sum(s, axes)), new Array(values(mg.sum(s, axes)).length).fill(1), 1e-12);
        const ax = axes.length ? axes : null;
        expectClose(values(mg.logsumexp(x, ax)), refLogsumexp(values(x), shape, axes.length ? axes : shape.map((_, i) => i)), 1e-13, 1e-13);
      }),
      { numRuns: 80 },
    );
  });
});
