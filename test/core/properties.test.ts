// Property-based checks (fast-check) of broadcasting, promotion and reduction identities on
// random shapes and dtypes, against float64 evaluations written here with plain index math.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import * as mg from "../../ts/index.ts";
import { promoteTypes } from "../../ts/core/dtype.ts";

const REAL = [mg.bool_, mg.uint8, mg.uint16, mg.uint32, mg.int8, mg.int16, mg.int32, mg.int64, mg.float16, mg.float32, mg.float64, mg.bfloat16];
const dtypeArb = fc.constantFrom(...REAL);
const shapeArb = fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 0, maxLength: 4 });

/** Two shapes that broadcast: each dim of b is the matching dim of a, or 1; b may be shorter. */
const broadcastPair = shapeArb.chain((a) =>
  fc.tuple(fc.constant(a), fc.array(fc.boolean(), { minLength: a.length, maxLength: a.length }), fc.integer({ min: 0, max: a.length }))
    .map(([sa, ones, drop]) => [sa, sa.map((d, i) => (ones[i] ? 1 : d)).slice(drop)] as const),
);

const size = (s: readonly number[]) => s.reduce((x, y) => x * y, 1);
const strides = (s: readonly number[]) => {
  const out = new Array<number>(s.length);
  let k = 1;
  for (let i = s.length - 1; i >= 0; i--) {
    out[i] = k;
    k *= s[i]!;
  }
  return out;
};
/** The flat index in `from` (broadcast to `to`) read by flat output index i. */
function broadcastIndex(i: number, to: readonly number[], from: readonly number[]): number {
  const ts = strides(to);
  const fs = strides(from);
  const off = to.length - from.length;
  let idx = 0;
  for (let d = 0; d < to.length; d++) {
    const coord = Math.floor(i / ts[d]!) % to[d]!;
    if (d >= off && from[d - off] !== 1) idx += coord * fs[d - off]!;
  }
  return idx;
}

function values(n: number, seed: number): number[] {
  let s = seed >>> 0 || 1;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return Math.round(((s / 2 ** 32) * 200 - 100) * 4) / 4; // quarters in [-100, 100): exact in every float dtype range
  });
}

describe("broadcasting", () => {
  test("add broadcasts like index math on random shape pairs (float64)", () => {
    fc.assert(
      fc.property(broadcastPair, fc.integer({ min: 1, max: 1e6 }), ([sa, sb], seed) => {
        const va = values(size(sa), seed);
        const vb = values(size(sb), seed + 1);
        const a = mg.array(Float64Array.from(va), null, { shape: sa });
        const b = mg.array(Float64Array.from(vb), null, { shape: sb });
        const out = mg.add(a, b);
        expect(out.shape).toEqual([...sa]);
        const got = Array.from(out.dataSync() as Float64Array);
        const want = got.map((_, i) => va[i]! + vb[broadcastIndex(i, sa, sb)]!);
        expect(got).toEqual(want);
        // symmetric: b + a broadcasts to the same result
        expect(Array.from(mg.add(b, a).dataSync() as Float64Array)).toEqual(want);
      }),
      { numRuns: 60 },
    );
  });
  test("incompatible shapes throw a tagged error", () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 5 }), fc.integer({ min: 2, max: 5 }), (x, y) => {
        fc.pre(x !== y);
        expect(() => mg.multiply(mg.zeros([x]), mg.zeros([y]))).toThrow("[multiply] Shapes");
      }),
      { numRuns: 20 },
    );
  });
});

describe("promotion", () => {
  test("the op result dtype is promoteTypes, symmetric, idempotent and an upper bound", () => {
    fc.assert(
      fc.property(dtypeArb, dtypeArb, (da, db) => {
        const t = promoteTypes(da, db);
        expect(promoteTypes(db, da)).toBe(t);
        expect(promoteTypes(da, da)).toBe(da);
        expect(promoteTypes(da, t)).toBe(t);
        expect(mg.canCast(da, t)).toBe(true);
        const a = mg.astype(mg.array([1, 0]), da);
        const b = mg.astype(mg.array([2, 3]), db);
        expect(mg.add(a, b).dtype).toBe(t);
        expect(mg.maximum(a, b).dtype).toBe(t);
        expect(mg.less(a, b).dtype).toBe(mg.bool_);
      }),
      { numRuns: 150 },
    );
  });
  test("values survive promotion exactly when they fit (small integers in every real dtype)", () => {
    fc.assert(
      fc.property(dtypeArb, dtypeArb, fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 60 }), (da, db, x, y) => {
        const a = mg.astype(mg.array([x]), da);
        const b = mg.astype(mg.array([y]), db);
        const t = promoteTypes(da, db);
        // 0..60, and sums up to 120, fit every real dtype exactly; bool holds only whether it is nonzero
        const exact = (v: number, d: mg.Dtype) => (d === mg.bool_ ? (v !== 0 ? 1 : 0) : v);
        const sum = Number(mg.add(a, b).item());
        const xa = exact(x, da);
        const yb = exact(y, db);
        if (t === mg.bool_) expect(sum).toBe(xa + yb !== 0 ? 1 : 0);
        else if (t === mg.float16 || t === mg.bfloat16) expect(sum).toBe(Number(mg.array([xa + yb], t).item()));
        else expect(sum).toBe(xa + yb);
      }),
      { numRuns: 150 },
    );
  });
});

describe("reductions", () => {
  const withAxes = shapeArb.filter((s) => s.length > 0).chain((s) =>
    fc.tuple(fc.constant(s), fc.subarray(s.map((_, i) => i), { minLength: 1 }), fc.integer({ min: 1, max: 1e6 })),
  );

  test("sum over random axes equals a float64 loop; keepdims keeps rank", () => {
    fc.assert(
      fc.property(withAxes, ([shape, axes, seed]) => {
        const v = values(size(shape), seed);
        const a = mg.array(Float64Array.from(v), null, { shape });
        const out = mg.sum(a, axes, true);
        const outShape = shape.map((d, i) => (axes.includes(i) ? 1 : d));
        expect(out.shape).toEqual(outShape);
        const want = new Array<number>(size(outShape)).fill(0);
        v.forEach((x, i) => {
          want[broadcastIndexInverse(i, shape, outShape)]! += x;
        });
        expect(Array.from(out.dataSync() as Float64Array)).toEqual(want);
      }),
      { numRuns: 60 },
    );
  });
  test("identities: sum(a+b) = sum(a)+sum(b) exactly for int32; mean·n = sum; max ≥ every element", () => {
    fc.assert(
      fc.property(shapeArb, fc.integer({ min: 1, max: 1e6 }), (shape, seed) => {
        const n = size(shape);
        const va = values(n, seed).map(Math.round);
        const vb = values(n, seed + 7).map(Math.round);
        const a = mg.array(Int32Array.from(va), null, { shape });
        const b = mg.array(Int32Array.from(vb), null, { shape });
        expect(mg.sum(mg.add(a, b)).item()).toBe(Number(mg.sum(a).item()) + Number(mg.sum(b).item()));
        const f = mg.astype(a, mg.float64);
        expect(Number(mg.mean(f).item()) * n).toBeCloseTo(va.reduce((x, y) => x + y, 0), 8);
        const mx = Number(mg.max(a).item());
        expect(va.every((x) => x <= mx) && va.includes(mx)).toBe(true);
        expect(Number(mg.min(mg.negative(a)).item()) === -mx).toBe(true); // === : an int 0 is not -0
      }),
      { numRuns: 60 },
    );
  });
  test("reducing in steps equals reducing at once (float64 sums of quarters are exact)", () => {
    fc.assert(
      fc.property(shapeArb.filter((s) => s.length >= 2), fc.integer({ min: 1, max: 1e6 }), (shape, seed) => {
        const a = mg.array(Float64Array.from(values(size(shape), seed)), null, { shape });
        const once = mg.sum(a, [0, 1]);
        const steps = mg.sum(mg.sum(a, 1), 0);
        expect(Array.from(once.dataSync() as Float64Array)).toEqual(Array.from(steps.dataSync() as Float64Array));
      }),
      { numRuns: 40 },
    );
  });
});

/** The flat index of the reduced (keepdims) output that input element i accumulates into. */
function broadcastIndexInverse(i: number, shape: readonly number[], outShape: readonly number[]): number {
  const is = strides(shape);
  const os = strides(outShape);
  let idx = 0;
  for (let d = 0; d < shape.length; d++) {
    const coord = Math.floor(i / is[d]!) % shape[d]!;
    if (outShape[d] !== 1 || shape[d] === 1) idx += coord * os[d]!;
  }
  return idx;
}
