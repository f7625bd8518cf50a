import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import * as mg from "../../ts/index.ts";
import { sliceStatic } from "../../ts/core/ops/slicing.ts";
import { checkVmap, gradcheck, randomArray, values } from "./helpers/grad.ts";
import { makeArray } from "../../ts/core/graph.ts";
import type { MgArray } from "../../ts/core/array.ts";
import type { Primitive } from "../../ts/core/primitive.ts";
import { resolveStream } from "../../ts/core/device.ts";
import { ArgReduce } from "../../ts/core/primitives/argreduce.ts";
import { ArgPartition, ArgSort, Partition, SearchSorted, Sort } from "../../ts/core/primitives/sort.ts";

const f32 = (v: number) => Math.fround(v);

/** A second, straightforward implementation: stable sort of one lane with NaN last. */
function refArgsort(lane: number[]): number[] {
  const idx = lane.map((_, i) => i);
  const key = (v: number) => (Number.isNaN(v) ? Infinity : v);
  // insertion sort: stable by construction
  for (let i = 1; i < idx.length; i++) {
    const cur = idx[i]!;
    let j = i - 1;
    const less = (a: number, b: number) => (Number.isNaN(lane[a]!) ? false : Number.isNaN(lane[b]!) ? true : key(lane[a]!) < key(lane[b]!));
    while (j >= 0 && less(cur, idx[j]!)) {
      idx[j + 1] = idx[j]!;
      j--;
    }
    idx[j + 1] = cur;
  }
  return idx;
}

/** Lanes of a row-major array along `axis`: [start indices, stride, length]. */
function lanes(shape: number[], axis: number): [number[], number, number] {
  const n = shape[axis]!;
  const inner = shape.slice(axis + 1).reduce((a, b) => a * b, 1);
  const outer = shape.slice(0, axis).reduce((a, b) => a * b, 1);
  const starts: number[] = [];
  for (let o = 0; o < outer; o++) for (let j = 0; j < inner; j++) starts.push(o * n * inner + j);
  return [starts, inner, n];
}

describe("argmax / argmin", () => {
  test("first index on ties, uint32, every axis and keepdims", () => {
    const x = mg.array([[1, 3, 3, 0], [2, 2, -1, -1], [5, 5, 5, 5]]);
    expect(mg.argmax(x, 1).tolist()).toEqual([1, 0, 0]);
    expect(mg.argmin(x, 1).tolist()).toEqual([3, 2, 0]);
    expect(mg.argmax(x, 0).tolist()).toEqual([2, 2, 2, 2]);
    expect(mg.argmin(x, 0).tolist()).toEqual([0, 1, 1, 1]);
    expect(mg.argmax(x, 1).dtype).toBe(mg.uint32);
    expect(mg.argmax(x, -1, true).shape).toEqual([3, 1]);
    expect(mg.argmax(x, 0, { keepdims: true }).tolist()).toEqual([[2, 2, 2, 2]]);
    // axis null: over the flattened array, first of the tied 5s
    expect(mg.argmax(x).item()).toBe(8);
    expect(mg.argmax(x).shape).toEqual([]);
    expect(mg.argmin(x, null, true).shape).toEqual([1, 1]);
    expect(mg.argmin(x, null, true).tolist()).toEqual([[6]]);
    // size-1 axis: always 0
    expect(mg.argmax(mg.array([[4], [7]]), 1).tolist()).toEqual([0, 0]);
    expect(x.argmax(1).tolist()).toEqual([1, 0, 0]);
    expect(x.argmin().item()).toBe(6);
  });

  test("matches a loop reference on random data over each axis, incl. transposed and broadcast inputs", () => {
    const base = randomArray([4, 5, 6], 3);
    for (const x of [base, mg.transpose(base, [2, 0, 1]), mg.broadcastTo(sliceStatic(base, [0, 0, 0], [4, 1, 6]), [4, 5, 6])]) {
      const v = values(x);
      for (let axis = 0; axis < 3; axis++) {
        const [starts, stride, n] = lanes([...x.shape], axis);
        const wantMax = starts.map((s) => { let b = 0; for (let k = 1; k < n; k++) if (v[s + k * stride]! > v[s + b * stride]!) b = k; return b; });
        const wantMin = starts.map((s) => { let b = 0; for (let k = 1; k < n; k++) if (v[s + k * stride]! < v[s + b * stride]!) b = k; return b; });
        expect(values(mg.argmax(x, axis))).toEqual(wantMax);
        expect(values(mg.argmin(x, axis))).toEqual(wantMin);
      }
    }
  });

  test("the first NaN wins, so argmax/argmin agree with max/min (MLX 0.32.4, numpy, torch)", () => {
    // The cases of ml-explore/mlx#4274, as MLX 0.32.4 (with #4292) answers them.
    const cases: [number[], number, number][] = [
      [[3, NaN, 1, 5], 1, 1],
      [[NaN, 1, 2], 0, 0],
      [[1, 2, NaN], 2, 2],
      [[Infinity, NaN, -Infinity], 1, 1],
      [[-1, -2, NaN], 2, 2],
      [[1, NaN, NaN], 1, 1],
      [[5, 1, 4], 0, 1], // no NaN: unchanged
    ];
    for (const [v, amax, amin] of cases) {
      const x = mg.array(v, mg.float32);
      expect([mg.argmax(x).item(), mg.argmin(x).item()]).toEqual([amax, amin]);
      for (const d of [mg.float16, mg.bfloat16, mg.float64]) expect(mg.argmax(x.astype(d)).item()).toBe(amax);
    }
    const m = mg.array([[1, NaN, 3], [NaN, 2, NaN]], mg.float32);
    expect(mg.argmax(m, 0).tolist()).toEqual([1, 0, 1]);
    expect(mg.argmin(m, 1).tolist()).toEqual([1, 0]);
    // complex64: a NaN in either part
    expect(mg.argmax(mg.array([{ re: 1, im: 0 }, { re: NaN, im: 0 }, { re: 3, im: 0 }])).item()).toBe(1);
    expect(mg.argmin(mg.array([{ re: 1, im: 0 }, { re: 0, im: NaN }, { re: 3, im: 0 }])).item()).toBe(1);
  });

  test("every dtype: ints, int64 beyond 2^53, bool, float16, bfloat16, complex (lexicographic)", () => {
    expect(mg.argmax(mg.array([2n ** 60n, 2n ** 60n + 1n, 2n ** 60n - 1n])).item()).toBe(1);
    expect(mg.argmin(mg.array([5n, -(2n ** 62n), 7n], mg.uint64)).item()).toBe(0); // -2^62 wraps to a large uint64
    expect(mg.argmax(mg.array([false, true, true])).item()).toBe(1);
    expect(mg.argmax(mg.array([-3, 100, 7], mg.int8)).item()).toBe(1);
    expect(mg.argmax(mg.array([1, 1.0009765625, 1.001], mg.float16)).item()).toBe(1); // 1.001 rounds to 1.0009765625
    expect(mg.argmin(mg.array([0.5, -2, -2], mg.bfloat16)).item()).toBe(1);
    const z = mg.array([{ re: 1, im: 5 }, { re: 2, im: -1 }, { re: 2, im: 3 }, { re: 2, im: 3 }]);
    expect(mg.argmax(z).item()).toBe(2);
    expect(mg.argmin(z).item()).toBe(0);
  });

  test("errors", () => {
    expect(() => mg.argmax(mg.zeros([0]))).toThrow("[argmax] Cannot argmax reduce zero size array.");
    expect(() => mg.argmin(mg.zeros([3, 0]), 0)).toThrow("[argmin] Cannot argmin reduce zero size array.");
    expect(() => mg.argmax(mg.zeros([2, 3]), 2)).toThrow("[argmax] Invalid axis 2 for array with 2 dimensions.");
    expect(() => mg.argmin(mg.zeros([2, 3]), -3)).toThrow("[argmin] Invalid axis -3");
  });

  test("no gradient: zero cotangent and tangent", () => {
    const x = randomArray([3, 4], 1);
    const node = mg.argmax(x, 1, true).node!;
    expect(node.primitive.name).toBe("ArgReduce");
    const [gx] = node.primitive.vjp!(node.inputs, [mg.onesLike(node.outputs[0]!)], [0], node.outputs, node.params);
    expect(gx!.shape).toEqual([3, 4]);
    expect(values(gx!)).toEqual(new Array(12).fill(0));
    const [tx] = node.primitive.jvp!(node.inputs, [mg.onesLike(x)], [0], node.outputs, node.params);
    expect(tx!.dtype).toBe(mg.uint32);
    expect(values(tx!)).toEqual([0, 0, 0]);
  });
});

describe("sort / argsort", () => {
  test("NaN last, -0 ties 0 stably, every float dtype", () => {
    for (const dtype of [mg.float32, mg.float16, mg.bfloat16, mg.float64]) {
      const x = mg.array([3, NaN, 2, 0, -0, -Infinity, NaN, Infinity], dtype);
      const s = values(mg.sort(x));
      expect(s.slice(0, 6)).toEqual([-Infinity, 0, -0, 2, 3, Infinity]);
      expect(Object.is(s[1], 0) && Object.is(s[2], -0)).toBe(true); // stable: 0 came before -0
      expect(Number.isNaN(s[6]!) && Number.isNaN(s[7]!)).toBe(true);
      expect(mg.argsort(x).tolist()).toEqual([5, 3, 4, 2, 0, 7, 1, 6]);
      expect(mg.sort(x).dtype).toBe(dtype);
    }
  });

  test("stable argsort matches an insertion-sort reference along every axis, on strided and broadcast views", () => {
    // few distinct values: many ties
    const base = mg.round(mg.multiply(randomArray([6, 4, 10], 5), 3));
    const views = [
      base,
      sliceStatic(base, [0, 0, 0], [6, 4, 10], [2, 1, 2]),
      mg.transpose(base, [1, 2, 0]),
      mg.broadcastTo(sliceStatic(base, [0, 0, 0], [1, 4, 10]), [3, 4, 10]),
    ];
    for (const x of views) {
      const v = values(x);
      for (const axis of [0, 1, 2]) {
        const [starts, stride, n] = lanes([...x.shape], axis);
        const wantIdx = new Array<number>(v.length);
        const wantVal = new Array<number>(v.length);
        for (const s of starts) {
          const lane = Array.from({ length: n }, (_, k) => v[s + k * stride]!);
          refArgsort(lane).forEach((p, k) => {
            wantIdx[s + k * stride] = p;
            wantVal[s + k * stride] = lane[p]!;
          });
        }
        expect(values(mg.argsort(x, axis))).toEqual(wantIdx);
        expect(values(mg.sort(x, axis))).toEqual(wantVal);
      }
    }
  });

  test("axis null flattens; default axis is -1; 1-D strided input", () => {
    const x = mg.array([[4, 3], [2, 1], [5, 4], [3, 2]]);
    expect(mg.sort(x, null).tolist()).toEqual([1, 2, 2, 3, 3, 4, 4, 5]);
    expect(mg.sort(x).tolist()).toEqual([[3, 4], [1, 2], [4, 5], [2, 3]]);
    expect(mg.argsort(sliceStatic(x, [0, 1], [4, 2]).reshape(4)).tolist()).toEqual([1, 3, 0, 2]);
    expect(mg.argsort(x, null).dtype).toBe(mg.uint32);
  });

  test("64-bit integers sort exactly; complex lexicographically with NaN last; bool and uint8", () => {
    const big = [2n ** 62n + 1n, -(2n ** 62n), 2n ** 62n, 0n];
    expect(mg.sort(mg.array(big)).tolist()).toEqual([-(2n ** 62n), 0n, 2n ** 62n, 2n ** 62n + 1n]);
    expect(mg.argsort(mg.array([2n ** 64n - 1n, 1n, 2n ** 63n], mg.uint64)).tolist()).toEqual([1, 2, 0]);
    const z = mg.array([{ re: 3, im: 1 }, { re: NaN, im: 2 }, { re: 2, im: 1 }, { re: 0, im: 1 }, { re: 2, im: -1 }]);
    const s = mg.sort(z).tolist() as { re: number; im: number }[];
    expect(s.slice(0, 4)).toEqual([{ re: 0, im: 1 }, { re: 2, im: -1 }, { re: 2, im: 1 }, { re: 3, im: 1 }]);
    expect(Number.isNaN(s[4]!.re) && s[4]!.im === 2).toBe(true);
    expect(mg.sort(mg.array([true, false, true])).tolist()).toEqual([false, true, true]);
    expect(mg.sort(mg.array([200, 3, 255, 0], mg.uint8)).tolist()).toEqual([0, 3, 200, 255]);
  });

  test("empty arrays and errors", () => {
    expect(mg.sort(mg.zeros([0, 3])).shape).toEqual([0, 3]);
    expect(mg.argsort(mg.zeros([2, 0]), 1).shape).toEqual([2, 0]);
    expect(() => mg.sort(mg.array(1))).toThrow("[sort] axis -1 is out of bounds for array with 0 dimensions.");
    expect(() => mg.argsort(mg.zeros([2, 2]), 2)).toThrow("[argsort] axis 2 is out of bounds");
  });

  test("gradient: the cotangent is scattered back through the permutation", () => {
    const x = randomArray([3, 5], 11);
    gradcheck((a) => mg.sort(a, 1), [x]);
    gradcheck((a) => mg.sort(a, 0), [x]);
    gradcheck((a) => mg.sort(a, null), [x]);
    // hand-derived: sort([3, 1, 2]) = [1, 2, 3]; cotangent [10, 20, 30] lands on [30, 10, 20]
    const sortNode = mg.sort(mg.array([3, 1, 2], mg.float64)).node!;
    const [g] = sortNode.primitive.vjp!(sortNode.inputs, [mg.array([10, 20, 30], mg.float64)], [0], sortNode.outputs, sortNode.params);
    expect(g!.tolist()).toEqual([30, 10, 20]);
  });
});

describe("partition / argpartition / topk", () => {
  /** The partition property of one lane around position k. */
  function checkPartition(lane: number[], k: number, sorted: number[]): void {
    expect(lane[k]).toBe(sorted[k]!);
    for (let i = 0; i < k; i++) expect(lane[i]! <= lane[k]!).toBe(true);
    for (let i = k + 1; i < lane.length; i++) expect(lane[i]! >= lane[k]!).toBe(true);
    expect([...lane].sort((a, b) => a - b)).toEqual(sorted);
  }

  test("the kth element lands in place with smaller before and larger after, every axis and kth", () => {
    const x = mg.round(mg.multiply(randomArray([3, 4, 5], 2), 10));
    for (const axis of [0, 1, 2]) {
      for (const kth of [-2, 0, 2]) {
        const p = values(mg.partition(x, kth, axis));
        const idx = values(mg.argpartition(x, kth, axis));
        const v = values(x);
        const [starts, stride, n] = lanes([3, 4, 5], axis);
        const k = kth < 0 ? kth + n : kth;
        for (const s of starts) {
          const lane = Array.from({ length: n }, (_, j) => v[s + j * stride]!);
          const sorted = [...lane].sort((a, b) => a - b);
          checkPartition(Array.from({ length: n }, (_, j) => p[s + j * stride]!), k, sorted);
          checkPartition(Array.from({ length: n }, (_, j) => lane[idx[s + j * stride]!]!), k, sorted);
        }
      }
    }
    expect(mg.partition(x, 1).dtype).toBe(mg.float64);
    expect(mg.argpartition(x, 1).dtype).toBe(mg.uint32);
    expect(mg.partition(x, 3, null).shape).toEqual([60]);
  });

  test("MLX's argpartition cases on broadcast and transposed inputs", () => {
    expect(mg.argpartition(mg.broadcastTo(mg.array([1, 2, 3]), [2, 3]), 1, 0).tolist()).toEqual([[0, 0, 0], [1, 1, 1]]);
    expect(mg.argpartition(mg.array([[1, 2], [3, 4]]).T, 1, 0).tolist()).toEqual([[0, 0], [1, 1]]);
  });

  test("topk returns the k largest (NaN counts as largest), k = 0 and k = n", () => {
    const x = mg.array([[5, 1, 9, 3, 9], [0, -1, NaN, 7, 2]]);
    const t = mg.topk(x, 2);
    expect(t.shape).toEqual([2, 2]);
    const rows = t.tolist() as number[][];
    expect([...rows[0]!].sort((a, b) => a - b)).toEqual([9, 9]);
    expect(rows[1]!.includes(7) && rows[1]!.some(Number.isNaN)).toBe(true);
    expect(() => mg.topk(x, 3, 0)).toThrow("[topk] Received invalid k=3 along axis 0 for array with shape: (2,5).");
  });

  test("topk along axis 0 and flattened, dtype kept", () => {
    const x = mg.array([[4, 8, 1], [6, 2, 7]], mg.int16);
    const t0 = mg.topk(x, 1, 0);
    expect(t0.tolist()).toEqual([[6, 8, 7]]);
    expect(t0.dtype).toBe(mg.int16);
    expect((mg.topk(x, 3, null).tolist() as number[]).sort((a, b) => a - b)).toEqual([6, 7, 8]);
    expect(mg.topk(x, 0).shape).toEqual([2, 0]);
    expect(mg.topk(x, 3).tolist()).toEqual([[4, 8, 1], [6, 2, 7]]);
  });

  test("errors name the op and the bad kth / k", () => {
    const x = mg.zeros([3, 4]);
    expect(() => mg.partition(x, 4)).toThrow("[partition] Received invalid kth 4 along axis -1 for array with shape: (3,4).");
    expect(() => mg.argpartition(x, -5, 1)).toThrow("[argpartition] Received invalid kth -5");
    expect(() => mg.topk(x, 5)).toThrow("[topk] Received invalid k=5 along axis -1 for array with shape: (3,4).");
    expect(() => mg.topk(x, -1, 0)).toThrow("[topk] Received invalid k=-1");
  });

  test("gradients of partition and topk flow to the chosen elements only", () => {
    const x = randomArray([2, 6], 21);
    gradcheck((a) => mg.partition(a, 2, 1), [x]);
    gradcheck((a) => mg.topk(a, 3, 1), [x]);
    gradcheck((a) => mg.topk(a, 2, null), [x]);
  });
});

describe("searchsorted", () => {
  test("left and right sides, uint32, MLX's cases", () => {
    const a = mg.array([1, 2, 2, 4], mg.float32);
    const v = mg.array([0, 1, 2, 3, 5], mg.float32);
    expect(mg.searchsorted(a, v).tolist()).toEqual([0, 0, 1, 3, 4]);
    expect(mg.searchsorted(a, v, "right").tolist()).toEqual([0, 1, 3, 3, 4]);
    expect(mg.searchsorted(a, v).dtype).toBe(mg.uint32);
    // promoted, not truncated: 4.5 lands after the 4
    expect(mg.searchsorted(mg.array([1, 3, 4, 7], mg.int32), mg.array([4.5], mg.float32)).tolist()).toEqual([3]);
    expect(mg.searchsorted(mg.array([1, 3, 5, 7]), mg.array([0, 4, 8])).tolist()).toEqual([0, 2, 4]);
  });

  test("against a linear scan on random data, with shaped and non-contiguous values", () => {
    const seq = mg.sort(randomArray([33], 4));
    const s = values(seq);
    const vals = mg.transpose(mg.multiply(randomArray([4, 6], 9), 2));
    for (const side of ["left", "right"] as const) {
      const got = mg.searchsorted(seq, vals, side);
      expect(got.shape).toEqual([6, 4]);
      const want = values(vals).map((q) => s.filter((e) => (side === "left" ? e < q : e <= q)).length);
      expect(values(got)).toEqual(want);
    }
    expect(mg.searchsorted(mg.arange(16, mg.float32), mg.array(7.5)).shape).toEqual([]);
    expect(mg.searchsorted(mg.arange(16, mg.float32), mg.array(7.5)).item()).toBe(8);
  });

  test("NaN orders last; empty inputs; int64 exactly", () => {
    const nan = mg.array([NaN]);
    expect(mg.searchsorted(mg.array([1, 2, 3], mg.float32), nan).tolist()).toEqual([3]);
    const a = mg.array([1, 2, NaN], mg.float32);
    expect(mg.searchsorted(a, nan).tolist()).toEqual([2]);
    expect(mg.searchsorted(a, nan, "right").tolist()).toEqual([3]);
    expect(mg.searchsorted(mg.array([], mg.float32), mg.array([1, -1], mg.float32)).tolist()).toEqual([0, 0]);
    expect(mg.searchsorted(mg.arange(4, mg.float32), mg.array([], mg.float32)).size).toBe(0);
    expect(mg.searchsorted(mg.array([2n ** 60n, 2n ** 60n + 2n]), mg.array([2n ** 60n + 1n])).tolist()).toEqual([1]);
  });

  test("errors", () => {
    expect(() => mg.searchsorted(mg.zeros([3, 4]), mg.array([1]))).toThrow("[searchsorted] The sorted sequence must be 1-D but has 2 dimensions.");
    expect(() => mg.searchsorted(mg.array(1), mg.array([1]))).toThrow("[searchsorted] The sorted sequence must be 1-D but has 0 dimensions.");
    expect(() => mg.searchsorted(mg.array([1, 2]), mg.array([1]), "middle" as "left")).toThrow("[searchsorted] Invalid side 'middle'. Expected 'left' or 'right'.");
  });
});

describe("float rounding of sorted values", () => {
  test("sort copies values bit for bit (float32 stays float32)", () => {
    const x = mg.array([0.1, 0.3, 0.2], mg.float32);
    expect(mg.sort(x).tolist()).toEqual([f32(0.1), f32(0.2), f32(0.3)]);
  });
});

describe("vmap rules", () => {
  const node = <P>(prim: Primitive<P>, params: P) => (...xs: MgArray[]) =>
    makeArray(prim, xs, params, resolveStream());

  test("axis primitives shift their axis past the batch axis", () => {
    const x = mg.round(mg.multiply(randomArray([3, 4, 5], 90), 4));
    for (const b of [0, 1, 2]) {
      checkVmap(node(ArgReduce, { type: "argmax" as const, axis: 1 }), [x], [b]);
      checkVmap(node(ArgReduce, { type: "argmin" as const, axis: 0 }), [x], [b]);
      checkVmap(node(Sort, { axis: 1 }), [x], [b]);
      checkVmap(node(ArgSort, { axis: 0 }), [x], [b]);
      checkVmap(node(Partition, { kth: 1, axis: 1 }), [x], [b]);
      checkVmap(node(ArgPartition, { kth: 2, axis: 0 }), [x], [b]);
    }
  });

  test("searchsorted maps over the values only", () => {
    const seq = mg.sort(randomArray([9], 91));
    checkVmap(node(SearchSorted, { right: true }), [seq, randomArray([4, 3], 92)], [-1, 1]);
    const n = mg.searchsorted(seq, mg.zeros([2], mg.float64)).node!;
    expect(() => n.primitive.vmap!([mg.zeros([2, 9], mg.float64), mg.zeros([2], mg.float64)], [0, -1], n.params)).toThrow(
      "[searchsorted] Cannot vmap over the sorted sequence, only over the values being searched for.",
    );
  });
});

describe("properties (fast-check)", () => {
  const values1d = fc.array(fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constant(NaN), fc.double({ noNaN: true, min: -1e3, max: 1e3 })), { maxLength: 24 });

  test("sort is a non-decreasing permutation with NaN last; argsort is its stable witness", () => {
    fc.assert(
      fc.property(values1d, (v) => {
        const x = mg.array(Float64Array.from(v));
        const s = values(mg.sort(x));
        const idx = values(mg.argsort(x));
        const nums = v.filter((e) => !Number.isNaN(e));
        const plainZero = (e: number) => (e === 0 ? 0 : e); // -0 and 0 tie in the order
        expect(s.slice(0, nums.length).map(plainZero)).toEqual([...nums].sort((a, b) => a - b).map(plainZero));
        expect(s.slice(nums.length).every(Number.isNaN)).toBe(true);
        expect([...idx].sort((a, b) => a - b)).toEqual(v.map((_, i) => i));
        idx.forEach((p, k) => expect(Object.is(v[p]!, s[k]!) || (Number.isNaN(v[p]!) && Number.isNaN(s[k]!))).toBe(true));
        for (let k = 1; k < idx.length; k++) {
          const a = v[idx[k - 1]!]!, b = v[idx[k]!]!;
          const tie = a === b || (Number.isNaN(a) && Number.isNaN(b));
          if (tie) expect(idx[k - 1]! < idx[k]!).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });

  test("searchsorted agrees with counting, on both sides", () => {
    fc.assert(
      fc.property(values1d, values1d, (seq, q) => {
        const sorted = mg.sort(mg.array(Float64Array.from(seq)));
        const s = values(sorted);
        const lessNanLast = (a: number, b: number) => (Number.isNaN(a) ? false : Number.isNaN(b) ? true : a < b);
        const vals = mg.array(Float64Array.from(q));
        expect(values(mg.searchsorted(sorted, vals))).toEqual(q.map((e) => s.filter((x) => lessNanLast(x, e)).length));
        expect(values(mg.searchsorted(sorted, vals, "right"))).toEqual(q.map((e) => s.filter((x) => !lessNanLast(e, x)).length));
      }),
      { numRuns: 150 },
    );
  });
});
