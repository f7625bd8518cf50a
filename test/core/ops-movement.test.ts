import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { gradcheck, randomArray } from "./helpers/grad.ts";
import { allCoords, refOf } from "./helpers/numpy-ref.ts";

const flat = (a: MgArray): unknown[] => {
  const f = (x: unknown): unknown[] => (Array.isArray(x) ? x.flatMap(f) : [x]);
  return f(a.tolist());
};
const rowMajor = (coord: readonly number[], shape: readonly number[]) => coord.reduce((acc, c, i) => acc * shape[i]! + c, 0);

// One 2x3 array per dtype class, exact in its dtype.
function samples(): [string, MgArray][] {
  const v = [1, -2, 3, -4, 5, 6];
  return [
    ["bool", mg.array(v.map((x) => x > 0))],
    ["int8", mg.array(v, mg.int8)],
    ["uint16", mg.array(v.map((x) => Math.abs(x) * 1000), mg.uint16)],
    ["int32", mg.array(v.map((x) => x * 100000007), mg.int32)],
    ["uint32", mg.array(v.map((x) => Math.abs(x) * 700000000), mg.uint32)],
    ["int64", mg.array(v.map((x) => BigInt(x) * 1500000000000000001n), mg.int64)],
    ["uint64", mg.array(v.map((x) => BigInt(Math.abs(x)) * 3000000000000000001n), mg.uint64)],
    ["float16", mg.array(v.map((x) => x / 4), mg.float16)],
    ["bfloat16", mg.array(v.map((x) => x * 8), mg.bfloat16)],
    ["float32", mg.array(v.map((x) => x / 3), mg.float32)],
    ["float64", mg.array(v.map((x) => x / 7), mg.float64)],
    ["complex64", mg.array(v.map((x) => ({ re: x, im: 1 - x })), mg.complex64)],
  ].map(([n, x]) => [n as string, mg.reshape(x as MgArray, [2, 3])]);
}

describe("tile", () => {
  test("out[i] = a[i mod shape] with reps aligned to the right, every dtype", () => {
    for (const [name, a] of samples()) {
      for (const reps of [[2, 2], [3], [2, 1, 2], [1, 1]]) {
        const got = mg.tile(a, reps);
        const r = [...reps];
        const shape = [...a.shape];
        while (r.length < shape.length) r.unshift(1);
        while (shape.length < r.length) shape.unshift(1);
        const outShape = shape.map((d, i) => d * r[i]!);
        const av = refOf(a).data;
        expect([name, [...got.shape]]).toEqual([name, outShape]);
        expect([name, flat(got)]).toEqual([name, allCoords(outShape).map((c) => av[rowMajor(c.map((x, i) => x % shape[i]!), shape)])]);
      }
    }
    expect(mg.tile(mg.array([1, 2]), 0).shape).toEqual([0]);
    expect(mg.tile(mg.array(5), [2, 2]).tolist()).toEqual([[5, 5], [5, 5]]);
    expect(mg.tile(mg.transpose(mg.array([[1, 2], [3, 4]])), 2).tolist()).toEqual([[1, 3, 1, 3], [2, 4, 2, 4]]);
    expect(() => mg.tile(mg.array([1]), [-1])).toThrow("[tile] reps must be non-negative, got (-1,).");
    expect(() => mg.tile(mg.array([1]), 1.5)).toThrow("[tile] reps must be an integer, got 1.5.");
  });
});

describe("repeat", () => {
  test("each element repeated in place along an axis or the flattened array", () => {
    for (const [name, a] of samples()) {
      const av = refOf(a).data;
      expect([name, flat(mg.repeat(a, 2))]).toEqual([name, av.flatMap((v) => [v, v])]);
      const r1 = mg.repeat(a, 3, 1);
      expect([name, [...r1.shape]]).toEqual([name, [2, 9]]);
      expect([name, flat(r1)]).toEqual([name, allCoords([2, 9]).map(([i, j]) => av[i! * 3 + Math.floor(j! / 3)])]);
      const r0 = mg.repeat(a, 2, -2);
      expect([name, flat(r0)]).toEqual([name, allCoords([4, 3]).map(([i, j]) => av[Math.floor(i! / 2) * 3 + j!])]);
    }
    expect(mg.repeat(mg.array([[1, 2]]), 0, 1).shape).toEqual([1, 0]);
    expect(mg.repeat(mg.array(7), 3).tolist()).toEqual([7, 7, 7]);
    expect(() => mg.repeat(mg.array([1]), -1)).toThrow("[repeat] Number of repeats cannot be negative");
    expect(() => mg.repeat(mg.array([1]), 2, 1)).toThrow("[repeat] axis 1 is out of bounds for array with 1 dimensions.");
  });
});

/** NumPy's pad of one lane, built the way MLX does it: mirror what is already there, chunk by chunk. */
function refPadLane(v: unknown[], lo: number, hi: number, mode: string, c: unknown): unknown[] {
  const n = v.length;
  if (mode === "constant") return [...new Array(lo).fill(c), ...v, ...new Array(hi).fill(c)];
  if (mode === "edge") return [...new Array(lo).fill(v[0]), ...v, ...new Array(hi).fill(v[n - 1])];
  const off = mode === "reflect" && n > 1 ? 1 : 0;
  const tile = n - off;
  let out = [...v];
  for (let left = lo; left > 0; ) {
    const k = Math.min(left, tile);
    out = [...out.slice(off, off + k).reverse(), ...out];
    left -= k;
  }
  for (let right = hi; right > 0; ) {
    const k = Math.min(right, tile);
    out = [...out, ...out.slice(out.length - off - k, out.length - off).reverse()];
    right -= k;
  }
  return out;
}

function refPad2D(a: MgArray, pads: [number, number][], mode: string, c: unknown): { shape: number[]; data: unknown[] } {
  const [m, n] = a.shape as [number, number];
  const av = refOf(a).data;
  const rows = Array.from({ length: m }, (_, i) => refPadLane(av.slice(i * n, i * n + n), pads[1]![0], pads[1]![1], mode, c));
  const w = rows[0]?.length ?? n + pads[1]![0] + pads[1]![1];
  const cols = Array.from({ length: w }, (_, j) => refPadLane(rows.map((r) => r[j]), pads[0]![0], pads[0]![1], mode, c));
  const h = cols[0]?.length ?? m + pads[0]![0] + pads[0]![1];
  return { shape: [h, w], data: allCoords([h, w]).map(([i, j]) => cols[j!]![i!]) };
}

describe("pad", () => {
  test("the four modes on every dtype, pads wider than the axis", () => {
    for (const [name, a] of samples()) {
      for (const mode of ["constant", "edge", "reflect", "symmetric"] as const) {
        for (const pads of [[[1, 2], [0, 4]], [[3, 0], [7, 5]]] as [number, number][][]) {
          const got = mg.pad(a, pads, mode);
          const zero = a.dtype === mg.bool_ ? false : a.dtype === mg.complex64 ? { re: 0, im: 0 } : a.dtype.size === 8 && a.dtype !== mg.float64 ? 0n : 0;
          const want = refPad2D(a, pads, mode, zero);
          expect([name, mode, [...got.shape]]).toEqual([name, mode, want.shape]);
          expect([name, mode, flat(got)]).toEqual([name, mode, want.data]);
          expect(got.dtype).toBe(a.dtype);
        }
      }
    }
  });

  test("pad_width forms, constant values, 1-element axes, non-contiguous input", () => {
    const a = mg.array([1, 2, 3]);
    expect(mg.pad(a, 1).tolist()).toEqual([0, 1, 2, 3, 0]);
    expect(mg.pad(a, [2]).tolist()).toEqual([0, 0, 1, 2, 3, 0, 0]);
    expect(mg.pad(a, [1, 2], "constant", -1).tolist()).toEqual([-1, 1, 2, 3, -1, -1]);
    expect(mg.pad(a, [[2, 0]], "reflect").tolist()).toEqual([3, 2, 1, 2, 3]);
    expect(mg.pad(a, 4, "reflect").tolist()).toEqual([1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3]);
    expect(mg.pad(a, 4, "symmetric").tolist()).toEqual([3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1]);
    expect(mg.pad(mg.array([7]), 2, "reflect").tolist()).toEqual([7, 7, 7, 7, 7]);
    const m = mg.array([[1, 2], [3, 4]], mg.float16);
    expect(mg.pad(m, [[0, 1], [1, 0]], "constant", 0.5).tolist()).toEqual([[0.5, 1, 2], [0.5, 3, 4], [0.5, 0.5, 0.5]]);
    expect(mg.pad(m, 1, "constant", mg.array([9], mg.float32)).dtype).toBe(mg.float16);
    expect(mg.pad(mg.transpose(m), [[1, 0], [0, 1]], "edge").tolist()).toEqual([[1, 3, 3], [1, 3, 3], [2, 4, 4]]);
    expect(mg.pad(mg.array(5), 3).tolist()).toBe(5);
    expect(mg.pad(mg.zeros([0, 2]), [[1, 1], [0, 0]]).shape).toEqual([2, 2]);
    expect(mg.pad(a, 0, "reflect").tolist()).toEqual([1, 2, 3]);
  });

  test("errors", () => {
    const a = mg.zeros([2, 2]);
    expect(() => mg.pad(a, [[1, 1], [1, 1], [1, 1]])).toThrow("[pad] Invalid number of padding sizes passed to pad with axes of size 2");
    expect(() => mg.pad(a, [-1, 0])).toThrow("[pad] Invalid low padding size (-1) passed to pad for axis 0. Padding sizes must be non-negative");
    expect(() => mg.pad(a, [[0, 0], [0, -2]])).toThrow("[pad] Invalid high padding size (-2) passed to pad for axis 1.");
    expect(() => mg.pad(a, 1, "wrap" as never)).toThrow("[pad] Invalid padding mode (wrap) passed to pad");
    expect(() => mg.pad(mg.zeros([0]), 1, "reflect")).toThrow("[pad] Cannot pad empty axis 0 using mode 'reflect'.");
    expect(() => mg.pad(a, 1, "constant", mg.array([1, 2]))).toThrow("[pad] constant_values must be a scalar or a size-1 array, got shape (2,).");
    expect(() => mg.pad(a, [1, 2, 3])).toThrow("[pad] pad_width as a flat list must have 1 or 2 entries, got 3.");
    expect(() => mg.pad(mg.array([1], mg.uint8), 1, "constant", 300)).toThrow("[pad] Converting 300 to uint8 would result in overflow.");
  });

  test("gradients: the interior for the array, the border sum for the constant; edge/reflect add up", () => {
    const x = randomArray([3, 4], 1);
    gradcheck((a, c) => mg.pad(a, [[1, 2], [0, 3]], "constant", c), [x, mg.array(0.25, mg.float64)]);
    for (const mode of ["edge", "reflect", "symmetric"] as const) gradcheck((a) => mg.pad(a, [[2, 1], [5, 3]], mode), [x]);
  });
});

describe("roll", () => {
  const a = mg.reshape(mg.arange(12), [3, 4]);
  const refRoll = (x: MgArray, shifts: number[], axes: number[]) => {
    const xv = refOf(x).data;
    const s = [...x.shape];
    return allCoords(s).map((c) => {
      const src = [...c];
      axes.forEach((ax, i) => (src[ax] = (((c[ax]! - shifts[i]!) % s[ax]!) + s[ax]!) % s[ax]!));
      return xv[rowMajor(src, s)];
    });
  };

  test("all the shift/axis forms", () => {
    expect(mg.roll(a, 1).tolist()).toEqual([[11, 0, 1, 2], [3, 4, 5, 6], [7, 8, 9, 10]]);
    expect(mg.roll(a, [2, 3]).tolist()).toEqual(mg.roll(a, 5).tolist());
    expect(flat(mg.roll(a, -1, 1))).toEqual(refRoll(a, [-1], [1]));
    expect(flat(mg.roll(a, 2, [0, 1]))).toEqual(refRoll(a, [2, 2], [0, 1]));
    expect(flat(mg.roll(a, [1, -5], [1, 0]))).toEqual(refRoll(a, [1, -5], [1, 0]));
    expect(flat(mg.roll(a, [1, 2], 1))).toEqual(refRoll(a, [3], [1]));
    expect(flat(mg.roll(a, 4, 1))).toEqual(flat(a));
    expect(flat(mg.roll(a, 13, -2))).toEqual(refRoll(a, [1], [0]));
    const t = mg.transpose(a);
    expect(flat(mg.roll(t, 1, 0))).toEqual(refRoll(t, [1], [0]));
    expect(mg.roll(mg.zeros([0, 3]), 2, 0).shape).toEqual([0, 3]);
    for (const [name, x] of samples()) expect([name, flat(mg.roll(x, 1, 1))]).toEqual([name, refRoll(x, [1], [1])]);
  });

  test("errors and gradient", () => {
    expect(() => mg.roll(a, [1], [0, 1])).toThrow("[roll] At least one shift value per axis is required, 1 provided for 2 axes.");
    expect(() => mg.roll(a, 1, 2)).toThrow("[roll] Invalid axis 2 for array with 2 dimensions.");
    gradcheck((x) => mg.roll(x, [1, -2], [0, 1]), [randomArray([3, 4], 2)]);
  });
});

describe("diag / diagonal / trace", () => {
  const a = mg.reshape(mg.arange(12), [3, 4]);

  test("diagonal at offsets, on chosen axes, moved last", () => {
    expect(mg.diagonal(a).tolist()).toEqual([0, 5, 10]);
    expect(mg.diagonal(a, 1).tolist()).toEqual([1, 6, 11]);
    expect(mg.diagonal(a, 3).tolist()).toEqual([3]);
    expect(mg.diagonal(a, -2).tolist()).toEqual([8]);
    expect(mg.diagonal(a, 4).shape).toEqual([0]);
    expect(mg.diagonal(a, -5).shape).toEqual([0]);
    expect(mg.diagonal(a, 0, 1, 0).tolist()).toEqual([0, 5, 10]);
    const b = mg.reshape(mg.arange(24), [2, 3, 4]);
    const bv = refOf(b).data as number[];
    // axis1 = 2 runs i, axis2 = 0 runs i + 1: b[i + 1, :, i] for the one valid i = 0
    expect(mg.diagonal(b, 1, 2, 0).tolist()).toEqual([[12], [16], [20]]);
    // axis1 = 2 runs k + 1, axis2 = 1 runs k: e[i, k] = b[i, k, k + 1]
    const e = mg.diagonal(b, -1, -1, 1);
    expect(e.shape).toEqual([2, 3]);
    expect(flat(e)).toEqual(allCoords([2, 3]).map(([i, k]) => bv[i! * 12 + k! * 4 + (k! + 1)]));
    expect(a.diagonal(1).tolist()).toEqual([1, 6, 11]);
    for (const [name, x] of samples()) {
      const xv = refOf(x).data;
      expect([name, flat(mg.diagonal(x, 1))]).toEqual([name, [xv[1], xv[5]]]);
    }
    expect(mg.diagonal(mg.transpose(a)).tolist()).toEqual([0, 5, 10]);
  });

  test("diag builds or extracts", () => {
    expect(mg.diag(mg.array([1, 2, 3])).tolist()).toEqual([[1, 0, 0], [0, 2, 0], [0, 0, 3]]);
    expect(mg.diag(mg.array([1, 2]), -1).tolist()).toEqual([[0, 0, 0], [1, 0, 0], [0, 2, 0]]);
    expect(mg.diag(mg.array([true]), 2).tolist()).toEqual([[false, false, true], [false, false, false], [false, false, false]]);
    expect(mg.diag(mg.array([5n], mg.int64)).tolist()).toEqual([[5n]]);
    expect(mg.diag(mg.zeros([0])).shape).toEqual([0, 0]);
    expect(mg.diag(mg.zeros([0]), 2).tolist()).toEqual([[0, 0], [0, 0]]);
    expect(mg.diag(a, 1).tolist()).toEqual([1, 6, 11]);
    expect(mg.array([4, 5]).diag().tolist()).toEqual([[4, 0], [0, 5]]);
  });

  test("trace sums the diagonal (optionally in another dtype)", () => {
    expect(mg.trace(a).item()).toBe(15);
    expect(mg.trace(a, 1).item()).toBe(18);
    expect(mg.trace(a, -1, 0, 1, mg.float16).dtype).toBe(mg.float16);
    expect(mg.trace(a, -1).item()).toBe(4 + 9);
    const b = mg.reshape(mg.arange(24), [2, 3, 4]);
    expect(mg.trace(b, 0, 1, 2).tolist()).toEqual([0 + 5 + 10, 12 + 17 + 22]);
    expect(mg.trace(mg.array([[100, 1], [2, 100]], mg.int8)).item()).toBe(200);
    expect(mg.trace(mg.array([[100, 1], [2, 100]], mg.int8)).dtype).toBe(mg.int32);
  });

  test("errors and gradients", () => {
    expect(() => mg.diagonal(mg.array([1, 2]))).toThrow("[diagonal] Array must have at least two dimensions, but got 1 dimensions.");
    expect(() => mg.diagonal(a, 0, 0, 2)).toThrow("[diagonal] Invalid axis2 2 for array with 2 dimensions.");
    expect(() => mg.diagonal(a, 0, -3, 1)).toThrow("[diagonal] Invalid axis1 -3 for array with 2 dimensions.");
    expect(() => mg.diagonal(a, 0, 1, -1)).toThrow("[diagonal] axis1 and axis2 cannot be the same axis");
    expect(() => mg.trace(mg.array([1]))).toThrow("[trace] Array must have at least two dimensions, but got 1 dimensions.");
    expect(() => mg.diag(mg.zeros([2, 2, 2]))).toThrow("[diag] array must be 1-D or 2-D, got array with 3 dimensions.");
    const x = randomArray([3, 4], 3);
    gradcheck((m) => mg.diagonal(m, -1), [x]);
    gradcheck((m) => mg.trace(m, 1), [x]);
    gradcheck((v) => mg.diag(v, 1), [randomArray([3], 4)]);
  });
});

describe("view (bit reinterpretation) vs astype", () => {
  test("same item size keeps the shape; the bits are reinterpreted", () => {
    expect(mg.view(mg.array([1, -2], mg.float32), mg.uint32).tolist()).toEqual([0x3f800000, 0xc0000000]);
    expect(mg.astype(mg.array([1, -2], mg.float32), mg.uint32).tolist()).not.toEqual([0x3f800000, 0xc0000000]);
    expect(mg.view(mg.array([1, 0.5], mg.float16), mg.uint16).tolist()).toEqual([0x3c00, 0x3800]);
    expect(mg.view(mg.array([1, -0.5], mg.bfloat16), mg.int16).tolist()).toEqual([0x3f80, -16640]);
    expect(mg.view(mg.array([-1n], mg.int64), mg.uint64).tolist()).toEqual([2n ** 64n - 1n]);
    expect(mg.view(mg.array([1], mg.float64), mg.int64).tolist()).toEqual([0x3ff0000000000000n]);
    expect(mg.view(mg.array([true, false]), mg.uint8).tolist()).toEqual([1, 0]);
    expect(mg.view(mg.array([0, 3], mg.uint8), mg.bool_).tolist()).toEqual([false, true]);
    expect(mg.view(mg.array([200], mg.uint8), mg.int8).tolist()).toEqual([-56]);
    expect(mg.view(mg.array(1.5, mg.float32), mg.int32).item()).toBe(0x3fc00000);
    expect(mg.array([1], mg.float32).view(mg.float32).dtype).toBe(mg.float32);
  });

  test("different item sizes scale the last axis (little-endian)", () => {
    const b = mg.view(mg.array([[1, 2, 3, 4], [255, 0, 0, 128]], mg.uint8), mg.int32);
    expect(b.shape).toEqual([2, 1]);
    expect(b.tolist()).toEqual([[0x04030201], [-0x7fffff01]]);
    const bytes = mg.view(mg.array([[1.0, -0.0]], mg.float32), mg.uint8);
    expect(bytes.shape).toEqual([1, 8]);
    expect(bytes.tolist()).toEqual([[0, 0, 0x80, 0x3f, 0, 0, 0, 0x80]]);
    const c = mg.view(mg.array([1, 2, 3, 4], mg.float32), mg.complex64);
    expect(c.tolist()).toEqual([{ re: 1, im: 2 }, { re: 3, im: 4 }]);
    expect(mg.view(c, mg.float32).tolist()).toEqual([1, 2, 3, 4]);
    expect(mg.view(mg.array([1], mg.uint64), mg.uint16).tolist()).toEqual([1, 0, 0, 0]);
  });

  test("strided inputs are read row-major; aligned contiguous slices are views", () => {
    const m = mg.array([[1, 2], [3, 4]], mg.int16);
    expect(mg.view(mg.transpose(m), mg.int32).tolist()).toEqual([[1 + 3 * 65536], [2 + 4 * 65536]]);
    expect(mg.view(mg.broadcastTo(mg.array([7], mg.int16), [2, 2]), mg.int32).tolist()).toEqual([[7 + 7 * 65536], [7 + 7 * 65536]]);
    const base = mg.arange(8, mg.int16);
    mg.eval(base);
    const part = base.index("2:6");
    const v = mg.view(part, mg.int32);
    mg.eval(v);
    expect(v.tolist()).toEqual([2 + 3 * 65536, 4 + 5 * 65536]);
    expect(v.layout!.storage).toBe(base.layout!.storage);
    // an odd item offset cannot be addressed in int32 items: packed instead
    expect(mg.view(base.index("1:5"), mg.int32).tolist()).toEqual([1 + 2 * 65536, 3 + 4 * 65536]);
  });

  test("errors", () => {
    expect(() => mg.view(mg.array(1, mg.int32), mg.int8)).toThrow("[view] Changing the type of a scalar is only allowed for types with the same size.");
    expect(() => mg.view(mg.array([1, 2, 3], mg.int8), mg.int16)).toThrow("[view] When viewing as a larger dtype, the size in bytes of the last axis must be a multiple of the requested type size.");
  });
});

describe("contiguous / asStrided", () => {
  test("contiguous shares dense inputs and copies strided ones", () => {
    const a = mg.reshape(mg.arange(6), [2, 3]);
    mg.eval(a);
    const same = mg.contiguous(a);
    mg.eval(same);
    expect(same.layout!.storage).toBe(a.layout!.storage);
    const t = mg.contiguous(mg.transpose(a));
    mg.eval(t);
    expect(t.layout!.storage).not.toBe(a.layout!.storage);
    expect(t.layout!.rowContiguous).toBe(true);
    expect(t.tolist()).toEqual([[0, 3], [1, 4], [2, 5]]);
    const c = mg.contiguous(mg.transpose(a), true);
    mg.eval(c);
    expect(c.layout!.storage).toBe(a.layout!.storage);
    gradcheck((x) => mg.contiguous(mg.transpose(x)), [randomArray([2, 3], 5)]);
  });

  test("asStrided: windows over the row-major elements, default strides, offset", () => {
    const x = mg.arange(6, mg.float32);
    expect(mg.asStrided(x, [4, 3], [1, 1]).tolist()).toEqual([[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]]);
    expect(mg.asStrided(x, [2, 2], null, 1).tolist()).toEqual([[1, 2], [3, 4]]);
    expect(mg.asStrided(x, [3], [-2], 5).tolist()).toEqual([5, 3, 1]);
    expect(mg.asStrided(x).tolist()).toEqual([0, 1, 2, 3, 4, 5]);
    // a transposed input is read in its own row-major order
    const t = mg.transpose(mg.reshape(mg.arange(6, mg.int64), [2, 3]));
    expect(mg.asStrided(t, [2, 2], [2, 1]).tolist()).toEqual([[0n, 3n], [1n, 4n]]);
    expect(mg.asStrided(x, [0, 5], [100, 100]).shape).toEqual([0, 5]);
    expect(() => mg.asStrided(x, [-1])).toThrow("[as_strided] Negative dimensions not allowed.");
    expect(() => mg.asStrided(x, [3, 3], [1, 2])).toThrow("[as_strided] The view reads elements 0..6, outside the 6 elements of the array.");
    expect(() => mg.asStrided(x, [2], [-1], 0)).toThrow("[as_strided] The view reads elements -1..0, outside the 6 elements of the array.");
    expect(() => mg.asStrided(x, [2], [1, 1])).toThrow("[as_strided] Got 2 strides for a shape with 1 dimensions.");
    // overlapping windows: each element's gradient counts its windows
    gradcheck((v) => mg.asStrided(v, [4, 3], [1, 1]), [randomArray([6], 6)]);
    gradcheck((v) => mg.asStrided(mg.transpose(v), [2, 2], [1, 3], 1), [randomArray([3, 2], 7)]);
  });
});

describe("atleast1d/2d/3d, unstack, diff, kron, split method", () => {
  test("atleast shapes (MLX's placement)", () => {
    const s = mg.array(1);
    const v = mg.array([1, 2]);
    const m = mg.ones([2, 3]);
    const c = mg.ones([2, 3, 4]);
    expect([s, v, m, c].map((x) => mg.atleast1d(x).shape)).toEqual([[1], [2], [2, 3], [2, 3, 4]]);
    expect([s, v, m, c].map((x) => mg.atleast2d(x).shape)).toEqual([[1, 1], [1, 2], [2, 3], [2, 3, 4]]);
    expect([s, v, m, c].map((x) => mg.atleast3d(x).shape)).toEqual([[1, 1, 1], [1, 2, 1], [2, 3, 1], [2, 3, 4]]);
    const both = mg.atleast2d(s, v, { stream: mg.cpu }) as MgArray[];
    expect(both.map((x) => x.shape)).toEqual([[1, 1], [1, 2]]);
    expect(mg.atleast3d(v).tolist()).toEqual([[[1], [2]]]);
  });

  test("unstack", () => {
    const a = mg.reshape(mg.arange(6), [2, 3]);
    expect(mg.unstack(a).map((x) => x.tolist())).toEqual([[0, 1, 2], [3, 4, 5]]);
    expect(mg.unstack(a, { axis: -1 }).map((x) => x.tolist())).toEqual([[0, 3], [1, 4], [2, 5]]);
    expect(mg.unstack(mg.zeros([0, 2]))).toEqual([]);
    expect(() => mg.unstack(a, { axis: 2 })).toThrow("[unstack] axis 2 is out of bounds for array with 2 dimensions.");
    expect(a.split(3, 1).map((x) => x.tolist())).toEqual([[[0], [3]], [[1], [4]], [[2], [5]]]);
  });

  test("diff", () => {
    expect(mg.diff(mg.array([1, 4, 9, 16, 25])).tolist()).toEqual([3, 5, 7, 9]);
    expect(mg.diff(mg.array([1, 4, 9, 16, 25]), 2).tolist()).toEqual([2, 2, 2]);
    expect(mg.diff(mg.array([[1, 3], [6, 10]]), 1, 0).tolist()).toEqual([[5, 7]]);
    expect(mg.diff(mg.array([1, 2]), 0).tolist()).toEqual([1, 2]);
    expect(mg.diff(mg.array([1, 2]), 3).shape).toEqual([0]);
    // n beyond the axis length stops once the axis is empty (it used to loop n times: issue 20)
    const t0 = performance.now();
    expect(mg.diff(mg.array([[1, 2, 4]], mg.uint8), 2 ** 53).shape).toEqual([1, 0]);
    expect(mg.diff(mg.array([[1, 2, 4]], mg.uint8), 2 ** 53).dtype).toBe(mg.uint8);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(mg.diff(mg.array([5, 2], mg.uint8)).tolist()).toEqual([253]);
    expect(() => mg.diff(mg.array([1, 2]), 1, 1)).toThrow("[diff] Axis is out of bounds for the array.");
    expect(() => mg.diff(mg.array([1, 2]), -1)).toThrow("[diff] Order `n` must be non-negative.");
    gradcheck((x) => mg.diff(x, 2, 0), [randomArray([5, 2], 8)]);
  });

  test("kron", () => {
    const a = mg.array([[1, 2], [3, 4]]);
    const b = mg.array([[0, 5], [6, 7]]);
    const got = mg.kron(a, b);
    const av = refOf(a).data as number[];
    const bv = refOf(b).data as number[];
    expect(flat(got)).toEqual(allCoords([4, 4]).map(([i, j]) => av[Math.floor(i! / 2) * 2 + Math.floor(j! / 2)]! * bv[(i! % 2) * 2 + (j! % 2)]!));
    expect(mg.kron(mg.array([1, 2]), mg.array([[1], [10]])).tolist()).toEqual([[1, 2], [10, 20]]);
    expect(mg.kron(mg.array(3), mg.array([1, 2])).tolist()).toEqual([3, 6]);
    expect(mg.kron(mg.array([1.5], mg.float16), mg.array([2], mg.int8)).dtype).toBe(mg.float16);
    expect(() => mg.kron(mg.zeros([0]), a)).toThrow("[kron] Input arrays cannot be empty.");
    gradcheck((x, y) => mg.kron(x, y), [randomArray([2, 3], 9), randomArray([3, 1], 10)]);
  });

  test("tile and repeat gradients", () => {
    gradcheck((x) => mg.tile(x, [2, 1, 3]), [randomArray([2, 2], 11)]);
    gradcheck((x) => mg.repeat(x, 3, 0), [randomArray([2, 2], 12)]);
  });
});
