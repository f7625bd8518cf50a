import { afterEach, describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { scatter, sliceUpdateStatic, scatterAxis } from "../../ts/core/ops/scatter.ts";
import { gradcheck, randomArray } from "./helpers/grad.ts";
import { allCoords, pySlice, refAt, refGetItem, refOf } from "./helpers/numpy-ref.ts";

const flat = (a: MgArray): unknown[] => {
  const f = (x: unknown): unknown[] => (Array.isArray(x) ? x.flatMap(f) : [x]);
  return f(a.tolist());
};

/** Checks a.index(...items) against the reference, shape and values. */
function checkIndex(a: MgArray, ...items: Parameters<MgArray["index"]>): void {
  const want = refGetItem(refOf(a), items as never);
  const got = a.index(...items);
  expect([...got.shape]).toEqual(want.shape);
  expect(flat(got)).toEqual(want.data);
}

afterEach(() => {
  delete process.env.MG_CHECK_INDICES;
});

// One array per dtype class with distinctive values (exact in each dtype).
function samples(): [string, MgArray][] {
  const v = [0, 1, -2, 3, -4, 5, 6, -7, 8, 9, -10, 11];
  return [
    ["bool", mg.array(v.map((x) => x % 3 === 0), mg.bool_)],
    ["int8", mg.array(v, mg.int8)],
    ["uint8", mg.array(v.map(Math.abs), mg.uint8)],
    ["int16", mg.array(v.map((x) => x * 1000), mg.int16)],
    ["uint16", mg.array(v.map((x) => Math.abs(x) * 5000), mg.uint16)],
    ["int32", mg.array(v.map((x) => x * 100000007), mg.int32)],
    ["uint32", mg.array(v.map((x) => Math.abs(x) * 400000000), mg.uint32)],
    ["int64", mg.array(v.map((x) => BigInt(x) * 800000000000000001n), mg.int64)],
    ["uint64", mg.array(v.map((x) => BigInt(Math.abs(x)) * 1537228672809129301n), mg.uint64)],
    ["float16", mg.array(v.map((x) => x + 0.5), mg.float16)],
    ["bfloat16", mg.array(v.map((x) => x * 0.25), mg.bfloat16)],
    ["float32", mg.array(v.map((x) => x / 3), mg.float32)],
    ["float64", mg.array(v.map((x) => x / 7), mg.float64)],
    ["complex64", mg.array(v.map((x) => ({ re: x, im: -x / 2 })), mg.complex64)],
  ];
}

describe("take", () => {
  test("every dtype: values gathered exactly, negative indices wrap", () => {
    for (const [name, x] of samples()) {
      const a = mg.reshape(x, [3, 4]);
      const rows = refOf(a);
      const idx = [2, -1, 0, 0];
      const got = mg.take(a, mg.array(idx), 1);
      expect([name, got.dtype]).toEqual([name, a.dtype]);
      expect([...got.shape]).toEqual([3, 4]);
      const want = allCoords([3, 4]).map(([i, j]) => rows.data[i! * 4 + ((idx[j!]! + 4) % 4)]);
      expect([name, flat(got)]).toEqual([name, want]);
      // axis null: the flattened array
      expect([name, flat(mg.take(a, mg.array([[11, 0], [5, -12]])))]).toEqual([name, [11, 0, 5, 0].map((i) => rows.data[i])]);
    }
  });

  test("shape is a.shape[:axis] ++ indices.shape ++ a.shape[axis+1:]", () => {
    const a = mg.reshape(mg.arange(24), [2, 3, 4]);
    const idx = mg.array([[0, 2], [1, 1], [2, 0]]);
    expect(mg.take(a, idx, 0).shape).toEqual([3, 2, 3, 4]);
    expect(mg.take(a, idx, 1).shape).toEqual([2, 3, 2, 4]);
    expect(mg.take(a, idx, -1).shape).toEqual([2, 3, 3, 2]);
    const t = mg.take(a, idx, 1);
    // t[b, i, j, k] = a[b, idx[i, j], k]
    const av = refOf(a).data as number[];
    const iv = refOf(idx).data as number[];
    expect(flat(t)).toEqual(allCoords([2, 3, 2, 4]).map(([b, i, j, k]) => av[b! * 12 + iv[i! * 2 + j!]! * 4 + k!]));
  });

  test("an integer index is a view without the axis; out of range is an error", () => {
    const a = mg.reshape(mg.arange(12), [3, 4]);
    mg.eval(a);
    const r = mg.take(a, -1, 0);
    expect(r.tolist()).toEqual([8, 9, 10, 11]);
    expect(r.layout!.storage).toBe(a.layout!.storage);
    expect(mg.take(a, 2, 1).tolist()).toEqual([2, 6, 10]);
    expect(mg.take(a, 7).item()).toBe(7);
    expect(() => mg.take(a, 3, 0)).toThrow("[take] Index 3 is out of bounds for axis 0 with size 3.");
    expect(() => mg.take(a, 0, 2)).toThrow("[take] Received invalid axis 2 for array with 2 dimensions.");
  });

  test("non-contiguous inputs and indices", () => {
    const base = mg.reshape(mg.arange(20, mg.float32), [4, 5]);
    const idx = mg.transpose(mg.array([[0, 1], [1, 0], [1, 1]]));
    for (const x of [mg.transpose(base), base.index("::-2", "1:"), mg.broadcastTo(mg.array([[1, 2, 3, 4]], mg.float32), [5, 4])]) {
      const xv = refOf(x);
      const got = mg.take(x, idx, 0);
      const iv = refOf(idx).data as number[];
      const n = x.shape[1]!;
      expect([...got.shape]).toEqual([2, 3, n]);
      expect(flat(got)).toEqual(allCoords([2, 3, n]).map(([i, j, k]) => xv.data[iv[i! * 3 + j!]! * n + k!]));
    }
  });

  test("empty indices and empty arrays", () => {
    const a = mg.reshape(mg.arange(6), [2, 3]);
    expect(mg.take(a, [], 1).shape).toEqual([2, 0]);
    expect(mg.take(a, mg.zeros([0, 2], mg.int32), 0).shape).toEqual([0, 2, 3]);
    const e = mg.zeros([0, 3]);
    expect(mg.take(e, mg.array([0, 1]), 1).shape).toEqual([0, 2]);
    expect(() => mg.take(e, mg.array([0]), 0)).toThrow("[take] Cannot do a non-empty take from an empty axis.");
    expect(() => mg.take(e, 0, 0)).toThrow("[take] Cannot do a non-empty take from an array with zero elements.");
  });

  test("index dtypes: any integer type, not float or bool", () => {
    const a = mg.array([10, 20, 30]);
    for (const d of [mg.uint8, mg.int8, mg.uint16, mg.int16, mg.uint32, mg.int32, mg.int64, mg.uint64]) {
      expect(mg.take(a, mg.array([2, 0], d)).tolist()).toEqual([30, 10]);
    }
    expect(mg.take(a, mg.array([-1], mg.int64)).tolist()).toEqual([30]);
    expect(() => mg.take(a, mg.array([1.5]))).toThrow("[take] Got indices with invalid dtype float32. Indices must be integral.");
    expect(() => mg.take(a, mg.array([true]))).toThrow("[take] Boolean indices not supported.");
  });
});

describe("out-of-range integer-array indices", () => {
  test("unchecked (MLX's default): reads give 0, updates are dropped", () => {
    const a = mg.array([1.5, 2.5, 3.5]);
    expect(mg.take(a, mg.array([0, 3, -4, 7])).tolist()).toEqual([1.5, 0, 0, 0]);
    expect(a.at(mg.array([1, 5, -9])).add(10).tolist()).toEqual([1.5, 12.5, 3.5]);
    const m = mg.reshape(mg.arange(6, mg.int64), [2, 3]);
    expect(mg.takeAlongAxis(m, mg.array([[3], [-1]]), 1).tolist()).toEqual([[0n], [5n]]);
    expect(mg.putAlongAxis(m, mg.array([[4], [1]]), 9, 1).tolist()).toEqual([[0n, 1n, 2n], [3n, 9n, 5n]]);
    expect(mg.slice(m, mg.array([1, 2]), [0, 1], [2, 2]).tolist()).toEqual([[5n, 0n], [0n, 0n]]);
    expect(mg.sliceUpdate(m, mg.array([[7, 8]]), mg.array([1, 2]), [0, 1]).tolist()).toEqual([[0n, 1n, 2n], [3n, 4n, 7n]]);
  });

  test("MG_CHECK_INDICES=1 makes evaluation throw a tagged error", () => {
    process.env.MG_CHECK_INDICES = "1";
    const a = mg.array([1.5, 2.5, 3.5]);
    expect(mg.take(a, mg.array([0, -3, 2])).tolist()).toEqual([1.5, 1.5, 3.5]);
    expect(() => mg.take(a, mg.array([0, 3])).tolist()).toThrow("[gather] Index 3 is out of bounds for axis 0 with size 3 (MG_CHECK_INDICES is on).");
    expect(() => a.index(mg.array([-4])).tolist()).toThrow("[gather] Index -4 is out of bounds for axis 0 with size 3");
    expect(() => a.at(mg.array([3])).add(1).tolist()).toThrow("[scatter] Index 3 is out of bounds for axis 0 with size 3");
    const m = mg.reshape(mg.arange(6), [2, 3]);
    expect(() => mg.takeAlongAxis(m, mg.array([[3], [0]]), 1).tolist()).toThrow("[take_along_axis] Index 3 is out of bounds for axis 1 with size 3");
    expect(() => mg.putAlongAxis(m, mg.array([[0], [5]]), 1, 1).tolist()).toThrow("[put_along_axis] Index 5 is out of bounds for axis 1 with size 3");
    expect(() => mg.slice(m, mg.array([1]), [0], [2, 3]).tolist()).toThrow("[slice] Start index 1 with slice size 2 is out of bounds for axis 0 with size 2");
    expect(() => mg.sliceUpdate(m, mg.array([1, 1]), mg.array([2]), [1]).tolist()).toThrow("[slice_update] Start index 2 with update size 2 is out of bounds for axis 1 with size 3");
  });
});

describe("takeAlongAxis / putAlongAxis", () => {
  test("take_along_axis matches a loop, with broadcasting off the axis and every dtype", () => {
    for (const [name, x] of samples()) {
      const a = mg.reshape(x, [3, 4]);
      const av = refOf(a).data;
      const idx = mg.array([[3, 0, -1], [1, 1, 2], [0, 2, 3]]);
      const iv = refOf(idx).data as number[];
      const got = mg.takeAlongAxis(a, idx, 1);
      expect([name, flat(got)]).toEqual([name, allCoords([3, 3]).map(([i, j]) => av[i! * 4 + ((iv[i! * 3 + j!]! + 4) % 4)])]);
      // indices (1, 4) broadcast over a's 3 rows on axis 1... along axis 0
      const got0 = mg.takeAlongAxis(a, mg.array([[2, 0, 1, 2]]), 0);
      expect([name, flat(got0)]).toEqual([name, [2, 0, 1, 2].map((r, j) => av[r * 4 + j])]);
    }
    // axis null: the flattened array with 1-D indices
    expect(mg.takeAlongAxis(mg.array([[1, 2], [3, 4]]), mg.array([3, 0]), null).tolist()).toEqual([4, 1]);
    // a broadcasts to the indices' shape off the axis
    expect(mg.takeAlongAxis(mg.array([[5, 6, 7]]), mg.array([[2], [0]]), 1).tolist()).toEqual([[7], [5]]);
  });

  test("take_along_axis errors", () => {
    const a = mg.zeros([2, 3]);
    expect(() => mg.takeAlongAxis(a, mg.array([0]), 1)).toThrow("[take_along_axis] Indices of dimension 1 does not match array of dimension 2.");
    expect(() => mg.takeAlongAxis(a, mg.array([[0]]), 2)).toThrow("[take_along_axis] axis 2 is out of bounds for array with 2 dimensions.");
    expect(() => mg.takeAlongAxis(a, mg.array([[0.5]]), 1)).toThrow("[take_along_axis] Got indices with invalid dtype float32");
    expect(() => mg.takeAlongAxis(a, mg.zeros([3, 1], mg.int32), 1)).toThrow("[take_along_axis] Shapes");
  });

  test("put_along_axis: last write wins, values broadcast and are cast", () => {
    const a = mg.zeros([2, 4], mg.int32);
    const got = mg.putAlongAxis(a, mg.array([[1, 3, 1], [0, 0, 2]]), mg.array([[5, 6, 7], [8, 9, 10]]), 1);
    expect(got.tolist()).toEqual([[0, 7, 0, 6], [9, 0, 10, 0]]);
    expect(got.dtype).toBe(mg.int32);
    expect(mg.putAlongAxis(a, mg.array([[1], [2]]), 2.7, 1).tolist()).toEqual([[0, 2, 0, 0], [0, 0, 2, 0]]);
    expect(mg.putAlongAxis(mg.array([[1, 2], [3, 4]]), mg.array([3]), mg.array([-1]), null).tolist()).toEqual([[1, 2], [3, -1]]);
    expect(mg.putAlongAxis(mg.zeros([0, 3]), mg.zeros([0, 1], mg.int32), 1, 1).shape).toEqual([0, 3]);
    for (const [name, x] of samples()) {
      const b = mg.reshape(x, [3, 4]);
      const v = mg.take(mg.reshape(b, [12]), mg.array([11, 10, 9]));
      const r = mg.putAlongAxis(b, mg.array([[0], [2], [3]]), mg.reshape(v, [3, 1]), 1);
      const want = [...refOf(b).data];
      want[0] = refOf(b).data[11];
      want[6] = refOf(b).data[10];
      want[11] = refOf(b).data[9];
      expect([name, flat(r)]).toEqual([name, want]);
    }
  });
});

describe("slice / sliceUpdate (start indices as an array)", () => {
  test("MLX's dynamic slicing cases", () => {
    const x = mg.reshape(mg.arange(64), [4, 4, 4]);
    checkSame(mg.slice(x, mg.array([1, 2, 3]), [0, 1, 2], [3, 2, 1]), x.index("1:", "2:", "3:"));
    const y = mg.reshape(mg.arange(5 * 6 * 7 * 8), [5, 6, 7, 8]);
    checkSame(mg.slice(y, mg.array([1, 2, 3, 4]), [0, 1, 2, 3], [2, 2, 2, 2]), y.index("1:3", "2:4", "3:5", "4:6"));
    const upd = mg.reshape(mg.arange(1, 7), [3, 2, 1]);
    const out = mg.sliceUpdate(mg.zeros([4, 4, 4], mg.int32), upd, mg.array([1, 2, 3]), [0, 1, 2]);
    const want = mg.zeros([4, 4, 4], mg.int32).at("1:", "2:", "3:").add(upd);
    checkSame(out, want);
  });

  test("axes subset, negative axes, computed starts, non-contiguous input, scalar start", () => {
    const x = mg.transpose(mg.reshape(mg.arange(12, mg.float64), [3, 4]));
    const start = mg.add(mg.array([1]), 1);
    checkSame(mg.slice(x, start, [-1], [4, 1]), x.index(":", "2:3"));
    checkSame(mg.slice(x, mg.array(1), [0], [2, 3]), x.index("1:3", ":"));
    // update broadcasts: missing leading axes take a's sizes, 1 on sliced axes
    const u = mg.sliceUpdate(mg.zeros([3, 4]), mg.array([7, 8]), mg.array([1]), [0]);
    // (MLX: a short update is not widened along axes it has: only 2 columns are written)
    expect(u.tolist()).toEqual([[0, 0, 0, 0], [7, 8, 0, 0], [0, 0, 0, 0]]);
    expect(mg.sliceUpdate(mg.zeros([2, 3], mg.int8), 5, mg.array([0, 1]), [0, 1]).tolist()).toEqual([[0, 5, 0], [0, 0, 0]]);
  });

  test("errors", () => {
    const a = mg.zeros([3, 4]);
    expect(() => mg.slice(a, mg.array([1, 1, 1]), [0, 1, 0], [1, 1])).toThrow("[slice] Invalid number of starting positions for array with dimension 2.");
    expect(() => mg.slice(a, mg.array([[1]]), [0], [1, 1])).toThrow("[slice] array of starting indices must be zero or one dimensional but has dimension 2.");
    expect(() => mg.slice(a, mg.array([1, 1]), [0], [1, 1])).toThrow("[slice] Number of starting indices 2 does not match number of axes 1.");
    expect(() => mg.slice(a, mg.array([1], mg.float32), [0], [1, 1])).toThrow("[slice] Start indices must be integers, got type float32.");
    expect(() => mg.slice(a, mg.array([1]), [2], [1, 1])).toThrow("[slice] Invalid axis 2 for array with dimension 2.");
    expect(() => mg.slice(a, mg.array([1, 1]), [0, -2], [1, 1])).toThrow("[slice] Repeat axes not allowed.");
    expect(() => mg.slice(a, mg.array([1]), [0], [1])).toThrow("[slice] Invalid slice size for array with 2 dimensions.");
    expect(() => mg.slice(a, mg.array([1]), [0], [4, 1])).toThrow("[slice] Invalid slice size (4,1) for array with shape (3,4).");
    expect(() => mg.sliceUpdate(a, mg.zeros([1, 1, 1]), mg.array([1]), [0])).toThrow("[slice_update] The update (1,1,1) has more dimensions than the array (3,4).");
    expect(() => mg.sliceUpdate(a, mg.zeros([2, 5]), mg.array([1]), [0])).toThrow("[slice_update] Shapes (2,5) and (2,4) cannot be broadcast.");
  });
});

function checkSame(got: MgArray, want: MgArray): void {
  expect([...got.shape]).toEqual([...want.shape]);
  expect(got.dtype).toBe(want.dtype);
  expect(flat(got)).toEqual(flat(want));
}

describe("a.index(...)", () => {
  const a = mg.reshape(mg.arange(64, mg.int32), [8, 8]);

  test("Python slice bounds (the reference itself, on NumPy's known answers)", () => {
    expect(pySlice(-3, 3, -1, 20)).toEqual([17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4]);
    expect(pySlice(25, -50, -1, 20).length).toBe(20);
    expect(pySlice(8, 3, null, 8)).toEqual([]);
    expect(pySlice(7, 10, null, 8)).toEqual([7]);
    expect(pySlice(2, 50, 4, 64)).toEqual([2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46]);
    expect(pySlice(-10, null, 2, 5)).toEqual([0, 2, 4]);
  });

  test("integers, slices (string and object forms), newaxis and ellipsis (MLX's test_indexing)", () => {
    const v = mg.arange(64, mg.float32);
    checkIndex(v, "2:50:4");
    checkIndex(v, "::-1");
    checkIndex(v, "-3:3:-1");
    checkIndex(v, "25:-50:-1");
    checkIndex(v, { start: 2, stop: 50, step: 4 });
    checkIndex(v, { step: -3 });
    checkIndex(a, 5);
    checkIndex(a, -1);
    checkIndex(a, null);
    checkIndex(a, ":", null);
    checkIndex(a, 0, 0);
    checkIndex(a, "2:4", "5:");
    checkIndex(a, ":", "0:5");
    checkIndex(a, ":", "::2");
    checkIndex(a, "-2:", ":-1");
    checkIndex(a, "8:3");
    checkIndex(a, "7:10");
    checkIndex(a, 0, ":5");
    checkIndex(a, ":", -1);
    checkIndex(a, "...", 3);
    checkIndex(a, 2, "...", null);
    checkIndex(a, " 1 : : 2 ", { start: -1, stop: null, step: -2 });
    expect(a.index(0, 0).ndim).toBe(0);
    expect(a.index(0, 0).item()).toBe(0);
    expect(mg.array([1]).index("...").shape).toEqual([1]);
    expect(a.index().shape).toEqual([8, 8]);
    expect(mg.array(3).index(null).shape).toEqual([1]);
    expect(mg.array(3).index("...", null, null).shape).toEqual([1, 1]);
    expect(a.index(mg.newaxis, mg.Ellipsis, mg.newaxis).shape).toEqual([1, 8, 8, 1]);
    expect(a.index(5n, -1n).item()).toBe(47);
  });

  test("basic indexing makes views (no copy)", () => {
    mg.eval(a);
    for (const b of [a.index(3), a.index("::-1", "1:7:2"), a.index(null, 2, "...", null), a.index(4, 5)]) {
      mg.eval(b);
      expect(b.layout!.storage).toBe(a.layout!.storage);
    }
    const t = mg.transpose(a);
    mg.eval(t);
    const tb = t.index("1:3", -1);
    mg.eval(tb);
    expect(tb.layout!.storage).toBe(a.layout!.storage);
    expect(tb.tolist()).toEqual([57, 58]);
  });

  test("integer arrays: NumPy's placement rules (MLX's check_slices cases and permutations)", () => {
    const idx = mg.array([0, 1, 2, 7, 5], mg.uint32);
    checkIndex(a, idx);
    checkIndex(a, idx, 0);
    checkIndex(a, idx, ":5");
    checkIndex(a, ":", idx);
    checkIndex(a, [0, 3], [-1, 2]);
    checkIndex(a, new Int32Array([7, 1]), new Uint8Array([2, 2]));
    checkIndex(a, mg.array(-2), ":3");
    checkIndex(a, "1:3", mg.array(4, mg.int64));
    const b = mg.reshape(mg.arange(16), [4, 4]);
    checkIndex(b, mg.array([0, 1, 2, 3]), mg.array([0, 1, 2, 3]));
    checkIndex(b, mg.array([0, 1, 2, 3]), mg.array([1, 0, 3, 3]));
    checkIndex(b, mg.array([[0, 1]]), mg.array([[0], [1], [3]]));
    const c = mg.reshape(mg.arange(64), [2, 4, 2, 4]);
    checkIndex(c, 0, mg.array([0, 1, 2]));
    checkIndex(c, "0:1", mg.array([0, 1, 2]));
    checkIndex(c, "0:1", mg.array([0, 1, 2]), ":", "0:4:2");
    checkIndex(c, "0:1", mg.array([0, 1, 2]), ":", mg.array([1, 2, 0]));
    checkIndex(c, "0:1", mg.array([0, 1, 2]), 1, mg.array([1, 2, 0]));
    checkIndex(c, "0:1", mg.array([0, 1, 2]), mg.array([1, 0, 0]), "0:1");
    checkIndex(c, "0:1", mg.array([[0], [1], [2]]), mg.array([[1, 0, 0]]), "0:1");
    checkIndex(c, "0:2", mg.array([[0], [1], [2]]), "0:2", mg.array([[1, 0, 0]]));
    const perms = <T,>(xs: T[]): T[][] => (xs.length <= 1 ? [xs] : xs.flatMap((x, i) => perms([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p])));
    const arr = mg.array([1, 0]);
    for (const p of perms<Parameters<MgArray["index"]>[number]>([":", ":", 0, arr])) checkIndex(c, ...p);
    for (const p of perms<Parameters<MgArray["index"]>[number]>([":", ":", 0, arr, null, null])) checkIndex(c, ...p);
    for (const p of perms<Parameters<MgArray["index"]>[number]>([0, arr, null, "...", ":"])) checkIndex(c, ...p);
  });

  test("integer arrays on non-contiguous arrays, negative entries, every dtype", () => {
    const s = mg.reshape(mg.arange(128), [16, 8]).index("::2", ":");
    const i = mg.arange(8).index("::2");
    checkIndex(s, i, i);
    checkIndex(mg.reshape(mg.arange(10), [5, 2]), "2:-1", 0);
    checkIndex(mg.transpose(mg.reshape(mg.arange(24), [2, 3, 4]), [2, 0, 1]), [-1, 0], ":", mg.array([[2], [0]]));
    checkIndex(mg.broadcastTo(mg.array([[1, 2, 3]]), [4, 3]), mg.array([[3, 0]]), mg.array([-1]));
    for (const [name, x] of samples()) {
      const m = mg.reshape(x, [3, 4]);
      const want = refGetItem(refOf(m), [mg.array([2, -3]), "::-2"] as never);
      expect([name, flat(m.index(mg.array([2, -3]), "::-2"))]).toEqual([name, want.data]);
    }
  });

  test("empty index arrays and empty axes", () => {
    expect(a.index([]).shape).toEqual([0, 8]);
    expect(a.index(":", mg.zeros([2, 0], mg.int32)).shape).toEqual([8, 2, 0]);
    expect(mg.zeros([0, 3]).index(mg.zeros([0], mg.int32)).shape).toEqual([0, 3]);
    expect(mg.zeros([0, 3]).index("...", [2, 1]).shape).toEqual([0, 2]);
    expect(() => mg.zeros([0, 3]).index([0])).toThrow("[index] Cannot index axis 0 of size 0 with a non-empty index array.");
  });

  test("errors", () => {
    expect(() => a.index(8)).toThrow("[index] Index 8 is out of bounds for axis 0 with size 8.");
    expect(() => a.index(0, -9)).toThrow("[index] Index -9 is out of bounds for axis 1 with size 8.");
    expect(() => a.index(0, 0, 0)).toThrow("[index] Too many indices for array with 2 dimensions.");
    expect(() => mg.array(1).index(0)).toThrow("[index] Too many indices for array with 0 dimensions.");
    expect(() => a.index("...", 0, "...")).toThrow('[index] An index can only have a single ellipsis ("...").');
    expect(() => a.index("1:2:0")).toThrow("[index] Slice step cannot be zero.");
    expect(() => a.index("a:b")).toThrow("[index] Invalid slice 'a:b'");
    expect(() => a.index(1.5)).toThrow("[index] Indices must be integers, got 1.5.");
    expect(() => a.index({ start: 0.5 })).toThrow("[index] Slice indices must be integers or null, got 0.5.");
    expect(() => a.index(true as never)).toThrow("[index] Booleans cannot be used as indices");
    expect(() => a.index(mg.array([true, false]))).toThrow("[index] Boolean array indices are not supported");
    expect(() => a.index(mg.array([0], mg.float16))).toThrow("[index] Index arrays must have an integer dtype, got float16.");
    expect(() => a.index({ begin: 1 } as never)).toThrow("[index] Cannot index an array with this object");
    expect(() => a.index(mg.array([[0, 1]]), mg.array([0, 1, 2]))).toThrow("[index] Shapes (1,2) and (3,) cannot be broadcast.");
  });

  test("iteration over the first axis", () => {
    expect([...mg.array([[1, 2], [3, 4]])].map((r) => r.tolist())).toEqual([[1, 2], [3, 4]]);
    expect(() => [...mg.array(1)]).toThrow("[iter] iteration over a 0-d array.");
  });
});

describe("a.at(...)", () => {
  test("every duplicate update is applied (MLX's test_array_at)", () => {
    expect(mg.zeros([2], mg.int32).at([0, 1, 0, 1]).add(1).tolist()).toEqual([2, 2]);
    let a = mg.array(1);
    a = a.at(null).add(1);
    expect(a.item()).toBe(2);
    a = mg.array([0, 1, 2]);
    a = a.at(1).add(2);
    expect(a.tolist()).toEqual([0, 3, 2]);
    a = a.at(mg.array([0, 0, 0, 0])).add(1);
    expect(a.tolist()).toEqual([4, 3, 2]);
    const z = mg.zeros([10, 10]).at(0).add(mg.arange(10));
    expect(z.index(0).tolist()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const ix = mg.array([0, 2, 3, 7]);
    const iy = mg.array([3, 3, 1, 2]);
    const u = mg.array([0.25, 0.5, 1.5, 2.75]);
    const s = mg.zeros([10, 10]).at(ix, iy).add(u);
    expect(s.sum().item()).toBe(5);
    expect(s.index(ix, iy).tolist()).toEqual([0.25, 0.5, 1.5, 2.75]);
    const src = mg.array([1.0, 2.0]).index(null, ":").at("0:1").add(mg.array([1.0, 2.0]).index(null, null, null));
    expect(src.tolist()).toEqual([[2, 4]]);
  });

  test("all six ops on advanced and slice-only expressions (MLX's cases)", () => {
    for (const idx of [[mg.array([0, 4]), ":", 0], ["1:3", ":", 0]] as Parameters<MgArray["index"]>[]) {
      let a = mg.reshape(mg.arange(100, mg.float32), [10, 5, 2]);
      const update = mg.ones([2, 5]);
      a = a.at(...idx).multiply(0);
      a = a.at(...idx).add(update);
      expect(a.index(...idx).tolist()).toEqual(update.tolist());
      a = a.at(...idx).subtract(update);
      expect(a.index(...idx).tolist()).toEqual(mg.zerosLike(update).tolist());
      a = a.at(...idx).add(mg.multiply(2, update));
      a = a.at(...idx).multiply(mg.multiply(2, update));
      expect(a.index(...idx).tolist()).toEqual(mg.full([2, 5], 4).tolist());
      a = a.at(...idx).divide(mg.multiply(3, update));
      expect(a.index(...idx).tolist()).toEqual(mg.full([2, 5], Math.fround(4 * Math.fround(1 / 3))).tolist());
      a = a.at(...idx).multiply(0).at(...idx).add(5);
      const upd = mg.reshape(mg.arange(10), [2, 5]);
      expect(a.at(...idx).maximum(upd).index(...idx).tolist()).toEqual(mg.maximum(5, upd).astype(mg.float32).tolist());
      expect(a.at(...idx).minimum(upd).index(...idx).tolist()).toEqual(mg.minimum(5, upd).astype(mg.float32).tolist());
      // the untouched elements are unchanged
      const rest = a.at(...idx).add(upd);
      const changed = new Set(refGetItemPositions([10, 5, 2], idx));
      const before = flat(a) as number[];
      (flat(rest) as number[]).forEach((v, i) => { if (!changed.has(i)) expect(v).toBe(before[i]!); });
    }
  });

  test("matches the sequential reference: mixed slices, newaxis, ellipsis, duplicates, broadcasting", () => {
    const x = mg.reshape(mg.arange(2 * 4 * 2 * 4, mg.float64), [2, 4, 2, 4]);
    const cases: [Parameters<MgArray["index"]>, MgArray][] = [
      [[0, mg.array([0, 1, 1])], mg.array([1, 2, 3, 4])],
      [["0:1", mg.array([0, 2, 0]), ":", "0:4:2"], mg.array([10, 20])],
      [["0:1", mg.array([[0], [1], [1]]), mg.array([[1, 0, 1]]), "0:1"], mg.array(1)],
      [["0:2", mg.array([[0], [1], [0]]), "0:2", mg.array([[1, 0, 1]])], mg.arange(2)],
      [[null, 1, "...", mg.array([3, 3, -1])], mg.array([[[1, 2]]])],
      [[mg.array([1, 1]), null, ":", mg.array([0, 0])], mg.array(7)],
      [["::-1", 2, "1:", "::-3"], mg.array([5, 6])],
      [[mg.array([-1, 1]), "...", 3], mg.array([[1, 2], [3, 4], [5, 6], [7, 8]])],
    ];
    const ops: ["add" | "subtract" | "multiply" | "maximum" | "minimum", (o: number, u: number) => number][] = [
      ["add", (o, u) => o + u],
      ["subtract", (o, u) => o - u],
      ["multiply", (o, u) => o * u],
      ["maximum", (o, u) => (o > u ? o : u)],
      ["minimum", (o, u) => (o < u ? o : u)],
    ];
    for (const [idx, u] of cases) {
      for (const [op, fn] of ops) {
        const got = x.at(...idx)[op](u);
        const want = refAt(refOf(x), idx as never, refOf(u), fn);
        expect([String(idx), op, flat(got)]).toEqual([String(idx), op, want.data]);
      }
    }
  });

  test("dtype arithmetic per update: wraps, bigints, bool, rounding at every step, complex", () => {
    const twice = [0, 0];
    expect(mg.array([127], mg.int8).at(twice).add(1).tolist()).toEqual([-127]);
    expect(mg.array([200], mg.uint8).at(twice).multiply(2).tolist()).toEqual([32]);
    expect(mg.array([65536], mg.int32).at(twice).multiply(65536).tolist()).toEqual([0]);
    expect(mg.array([3], mg.int32).at(twice).multiply(1000000007).tolist()).toEqual([Number(BigInt.asIntN(32, 3n * 1000000007n ** 2n))]);
    expect(mg.array([4294967295], mg.uint32).at([0]).add(1).tolist()).toEqual([0]);
    expect(mg.array([9007199254740993n], mg.int64).at(twice).add(1n).tolist()).toEqual([9007199254740995n]);
    expect(mg.array([2n ** 62n], mg.int64).at(twice).multiply(2n).tolist()).toEqual([0n]);
    expect(mg.array([2n ** 64n - 1n], mg.uint64).at([0]).add(1n).tolist()).toEqual([0n]);
    expect(mg.array([-5n, 5n], mg.int64).at([0, 0, 1]).maximum(mg.array([-7n, 3n, 9n], mg.int64)).tolist()).toEqual([3n, 9n]);
    expect(mg.array([false, true, false]).at([0, 1, 1]).add(mg.array([true, false, false])).tolist()).toEqual([true, true, false]);
    expect(mg.array([true, true]).at([0, 0, 1]).multiply(mg.array([true, false, true])).tolist()).toEqual([false, true]);
    // float16: 2048 + 1 rounds back to 2048 (ties to even) at each of the two steps
    expect(mg.array([2048], mg.float16).at(twice).add(1).tolist()).toEqual([2048]);
    expect(mg.array([256], mg.bfloat16).at(twice).add(1).tolist()).toEqual([256]);
    expect(mg.array([16777216], mg.float32).at(twice).add(1).tolist()).toEqual([16777216]);
    expect(mg.array([0.1], mg.float64).at(twice).add(0.2).tolist()).toEqual([0.1 + 0.2 + 0.2]);
    const c = mg.array([{ re: 1, im: 2 }, { re: 0, im: 0 }], mg.complex64);
    expect(c.at([0, 0]).multiply(mg.array([{ re: 3, im: 4 }, { re: 0, im: 1 }], mg.complex64)).tolist()).toEqual([{ re: -10, im: -5 }, { re: 0, im: 0 }]);
    expect(c.at([1, 1, 1]).add({ re: 1, im: -1 }).index(1).item()).toEqual({ re: 3, im: -3 });
    // max/min order complex numbers by real, then imaginary part (MLX)
    expect(c.at([0, 0]).maximum(mg.array([{ re: 1, im: 3 }, { re: 0, im: 9 }], mg.complex64)).index(0).item()).toEqual({ re: 1, im: 3 });
    // scatter max follows MLX's `y > x ? y : x`: a NaN update wins, an existing NaN loses
    expect(mg.array([1, NaN], mg.float32).at([0, 1]).maximum(mg.array([NaN, 2], mg.float32)).tolist()).toEqual([NaN, 2]);
    // slice updates use the elementwise maximum, which propagates NaN
    expect(mg.array([1, NaN], mg.float32).at("0:2").maximum(mg.array([NaN, 2], mg.float32)).tolist()).toEqual([NaN, NaN]);
    // scalars are weak: they take the array's dtype
    expect(mg.array([1, 2], mg.int8).at(0).add(3).dtype).toBe(mg.int8);
    expect(mg.array([1, 2], mg.float16).at([0]).add(0.5).dtype).toBe(mg.float16);
  });

  test("non-contiguous arrays and updates (MLX's slice-update cases)", () => {
    const tr = mg.transpose(mg.ones([5, 2]));
    expect(mg.zeros([4, 5]).at("1:3", ":").add(tr).index("1:3", ":").tolist()).toEqual(tr.tolist());
    const src = mg.reshape(mg.arange(20, mg.float32), [4, 5]);
    expect(mg.zeros([5, 4]).at(":", "1:3").add(src.index("1:3", ":").T).index(":", "1:3").tolist()).toEqual(src.index("1:3", ":").T.tolist());
    const s2 = mg.reshape(mg.arange(30, mg.float32), [5, 6]);
    expect(mg.zeros([5, 6]).at("1:4", "1:5").add(s2.index("0:3", "0:4")).index("1:4", "1:5").tolist()).toEqual(s2.index("0:3", "0:4").tolist());
    expect(mg.zeros([5, 5]).at("-3:-1", ":").add(mg.ones([2, 5])).sum(1).tolist()).toEqual([0, 0, 5, 5, 0]);
    expect(mg.zeros([6, 6]).at("1:5:2", "0:6:2").add(mg.ones([2, 3])).index("1:5:2", "0:6:2").tolist()).toEqual(mg.ones([2, 3]).tolist());
    const t3 = mg.transpose(mg.ones([4, 3, 5]), [1, 0, 2]);
    expect(mg.zeros([3, 4, 5]).at(":", ":", ":").add(t3).tolist()).toEqual(t3.tolist());
    expect(mg.zeros([4, 5, 6]).at("1:3", 2, ":").add(mg.ones([2, 6])).sum().item()).toBe(12);
    // the array itself transposed / broadcast
    const b = mg.broadcastTo(mg.array([1, 2, 3], mg.int32), [2, 3]);
    expect(b.at(mg.array([1, 1]), mg.array([0, 2])).add(10).tolist()).toEqual([[1, 2, 3], [11, 2, 13]]);
    const t = mg.transpose(mg.reshape(mg.arange(6, mg.int32), [2, 3]));
    expect(t.at(mg.array([2, 0, 2]), 1).add(1).tolist()).toEqual([[0, 4], [1, 4], [2, 7]]);
  });

  test("errors", () => {
    const a = mg.zeros([3, 4]);
    expect(() => a.at(0, 0, 0).add(1)).toThrow("[at] Too many indices for array with 2 dimensions.");
    expect(() => a.at(3).add(1)).toThrow("[at] Index 3 is out of bounds for axis 0 with size 3.");
    expect(() => a.at("0:2").add(mg.ones([3, 4]))).toThrow("[at] Shapes (3,4) and (2,4) cannot be broadcast.");
    expect(() => a.at(mg.array([0, 1])).add(mg.ones([3, 4]))).toThrow("[at] Shapes (3,4) and (2,4) cannot be broadcast.");
    expect(() => mg.zeros([2], mg.int32).at(0).divide(2)).toThrow("[at] divide on a int32 array would scatter a truncated reciprocal");
    expect(() => mg.array([1], mg.int8).at(0).add(300)).toThrow("[at] Converting 300 to int8 would result in overflow.");
  });
});

/** Flat positions a basic/advanced expression selects (for the "untouched elements" checks). */
function refGetItemPositions(shape: number[], idx: Parameters<MgArray["index"]>): number[] {
  const n = shape.reduce((p, d) => p * d, 1);
  const ids = { shape, data: Array.from({ length: n }, (_, i) => i) };
  return refGetItem(ids, idx as never).data as number[];
}

describe("derivative rules (float64 finite differences)", () => {
  const x = randomArray([4, 3], 1);
  const dup = mg.array([2, 0, 2, 3]);

  test("Gather: take / index with repeated indices scatter-add the cotangent back", () => {
    gradcheck((a) => mg.take(a, dup, 0), [x]);
    gradcheck((a) => mg.take(a, mg.array([[1, 1], [0, -1]]), 1), [x]);
    gradcheck((a) => a.index(dup, mg.array([1, 1, 0, 2])), [x]);
    gradcheck((a) => a.index("::-1", mg.array([2, 2])), [x]);
    gradcheck((a) => mg.diagonal(a, 1), [x]);
  });

  test("Slice: basic indexing", () => {
    gradcheck((a) => a.index("1::2", "::-1"), [x]);
    gradcheck((a) => a.index(2), [x]);
    gradcheck((a) => mg.take(a, -1, 1), [x]);
  });

  test("Scatter: sum, prod (with zero updates), max, min and none, wrt array and updates", () => {
    const u = randomArray([4], 2);
    gradcheck((a, v) => a.at(dup, 1).add(v), [x, u]);
    gradcheck((a, v) => a.at(dup, 1).subtract(v), [x, u]);
    gradcheck((a, v) => a.at(dup, mg.array([1, 1, 1, 0])).multiply(v), [x, u]);
    const withZeros = mg.array([0.5, 0, -1.5, 0, 0, 2], mg.float64);
    const at = mg.array([1, 1, 2, 2, 3, 3]);
    gradcheck((a, v) => a.at(at, 0).multiply(v), [x, withZeros]);
    gradcheck((a, v) => a.at(dup, 2).maximum(v), [x, u]);
    gradcheck((a, v) => a.at(dup, 2).minimum(v), [x, u]);
    gradcheck((a, v) => a.at(dup, 0).divide(mg.add(v, 3)), [x, u]);
    // mode "none": only the last write to a position survives
    gradcheck((a, v) => scatter(a, [dup], mg.reshape(v, [4, 1, 3]), [0], "none"), [x, randomArray([4, 3], 3)]);
  });

  test("SliceUpdate: slice-only a.at(...) in every mode", () => {
    const u = randomArray([2, 3], 4);
    gradcheck((a, v) => a.at("1:3").add(v), [x, u]);
    gradcheck((a, v) => a.at("::-2").multiply(v), [x, u]);
    gradcheck((a, v) => a.at("1:3").maximum(v), [x, u]);
    gradcheck((a, v) => a.at("0:4:2").minimum(v), [x, u]);
    gradcheck((a, v) => sliceUpdateStatic(a, v, [3, 0], [-1, 3], [-2, 1], "none"), [x, u]);
  });

  test("GatherAxis / ScatterAxis", () => {
    const idx = mg.array([[2, 2], [0, 1], [1, 1], [0, 0]]);
    gradcheck((a) => mg.takeAlongAxis(a, idx, 1), [x]);
    gradcheck((a, v) => mg.putAlongAxis(a, idx, v, 1), [x, randomArray([4, 2], 5)]);
    gradcheck((a, v) => scatterAxis(a, idx, v, 1, "sum"), [x, randomArray([4, 2], 6)]);
  });

  test("DynamicSlice / DynamicSliceUpdate", () => {
    gradcheck((a) => mg.slice(a, mg.array([1, 1]), [0, 1], [2, 2]), [x]);
    gradcheck((a, v) => mg.sliceUpdate(a, v, mg.array([2]), [0]), [x, randomArray([2, 3], 7)]);
  });

  test("indices get no gradient: asking for one is an error naming stopGradient", () => {
    const a = mg.array([1.0, 2.0, 3.0]);
    const i = mg.array([0, 2]);
    const y = mg.take(a, i);
    const node = y.node!;
    const gather = node.inputs.length === 2 ? node : node.inputs[0]!.node!;
    expect(() => gather.primitive.vjp!(gather.inputs, [mg.onesLike(y)], [1], gather.outputs, gather.params)).toThrow(
      "[gather] Cannot calculate VJP with respect to indices. Use stopGradient on indices",
    );
  });
});

describe("vmap rules (against the per-element results, stacked)", () => {
  /** vmap(fn, inAxes)(...xs) equals stacking fn over the batch elements. */
  function checkVmap(fn: (...xs: MgArray[]) => MgArray, xs: MgArray[], inAxes: (number | null)[]): void {
    const got = mg.vmap(fn, inAxes)(...xs) as MgArray;
    const n = xs.find((_, i) => inAxes[i] !== null)!.shape[inAxes.find((a) => a !== null)!]!;
    const parts = Array.from({ length: n }, (_, b) => fn(...xs.map((x, i) => (inAxes[i] === null ? x : mg.take(x, b, inAxes[i]!)))));
    const want = mg.stack(parts);
    expect([...got.shape]).toEqual([...want.shape]);
    expect(flat(got)).toEqual(flat(want));
  }
  const x = mg.reshape(mg.arange(2 * 4 * 3, mg.float32), [2, 4, 3]);
  const i2 = mg.array([[2, 0, 2], [1, 3, 3]]);

  test("Gather: batched source, batched indices, both", () => {
    checkVmap((a) => mg.take(a, mg.array([1, 1, 0]), 1), [x], [0]);
    checkVmap((a) => a.index(mg.array([3, 0]), "::-1"), [x], [0]);
    checkVmap((a, i) => mg.take(a, i, 0), [mg.reshape(mg.arange(12), [4, 3]), i2], [null, 0]);
    checkVmap((a, i) => mg.take(a, i, 0), [x, i2], [0, 0]);
    checkVmap((a, i) => a.index(i, mg.array([2, 1, 0])), [x, mg.transpose(i2)], [0, 1]);
    checkVmap((a, i) => mg.take(a, i, 1), [x, mg.array([[0, 1, 2], [2, 2, 0]], mg.uint8)], [2, 1]);
  });

  test("Scatter, GatherAxis, ScatterAxis, SliceUpdate", () => {
    const u = mg.reshape(mg.arange(6, mg.float32), [2, 3]);
    checkVmap((a, v) => a.at(mg.array([1, 1, 2])).add(v), [x, u], [0, 0]);
    checkVmap((a, v) => a.at(mg.array([1, 1, 2]), 0).multiply(v), [x, mg.add(u, 1)], [0, 0]);
    checkVmap((a, v) => a.at(mg.array([3, 0]), ":").maximum(v), [x, mg.array([[5, 40, 5], [60, 6, 6]], mg.float32)], [0, null]);
    checkVmap((a, i) => a.at(i).add(1), [mg.zeros([4, 3]), i2], [null, 0]);
    checkVmap((a, i, v) => a.at(i, 1).subtract(v), [x, i2, u], [0, 0, 0]);
    checkVmap((a, i) => mg.takeAlongAxis(a, i, 0), [x, mg.array([[[3, 0, 1]], [[2, 2, 2]]])], [0, 0]);
    checkVmap((a, i) => mg.putAlongAxis(a, i, mg.array(-1, mg.float32), 1), [x, mg.array([[[2], [0], [1], [1]], [[0], [0], [0], [0]]])], [0, 0]);
    checkVmap((a, v) => a.at("1:3").add(v), [x, u], [0, null]);
    checkVmap((a, v) => a.at(":", "::2").minimum(v), [x, mg.reshape(mg.arange(16, mg.float32), [2, 4, 2])], [0, 0]);
  });

  test("DynamicSlice(Update), Pad, View, Contiguous", () => {
    checkVmap((a) => mg.slice(a, mg.array([1, 1]), [0, 1], [2, 2]), [x], [0]);
    checkVmap((a, v) => mg.sliceUpdate(a, v, mg.array([2]), [0]), [x, mg.ones([2, 1, 3])], [0, 0]);
    checkVmap((a) => mg.pad(a, [[1, 0], [0, 2]], "constant", 7), [x], [2]);
    checkVmap((a) => mg.pad(a, [[2, 1], [1, 3]], "reflect"), [x], [1]);
    checkVmap((a) => mg.view(a, mg.uint8), [x], [0]);
    checkVmap((a) => mg.view(a, mg.uint16), [x], [2]);
    checkVmap((a) => mg.contiguous(a), [mg.transpose(x)], [1]);
    checkVmap((a) => mg.diag(a, 1), [mg.reshape(mg.arange(6), [2, 3])], [0]);
    expect(() => mg.vmap((a: MgArray, s: MgArray) => mg.slice(a, s, [0], [1, 3]), [0, 0])(x, mg.array([[0], [1]]))).toThrow(
      "[slice] vmap over the start indices is not supported (as in MLX).",
    );
  });
});
