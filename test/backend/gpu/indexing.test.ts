// Indexing kernels on the GPU device (the Metal simulator here) against the CPU device: gathers,
// scatters with every update mode (duplicates all applied), along-axis forms, dynamic and static
// slice updates; every GPU dtype, strided/broadcast/sliced inputs, out-of-range indices, the
// checked mode, both index widths. Integers and bool must agree exactly; floats within the
// tolerances of ts/testing/tolerances.ts.
import { afterEach, describe, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import * as S from "../../../ts/core/ops/scatter.ts";
import { setForceLargeIndex } from "../../../ts/backend/gpu/encoder.ts";
import { accumulationTolerance, toleranceFor } from "../../../ts/testing/tolerances.ts";
import { expectClose, expectDevicesAgree, GPU_DTYPES, input, layouts, runOn, seededValues } from "./harness.ts";

/** Evaluated integer indices in [lo, hi) of `shape` (seeded), in `dtype`. */
function indices(shape: number[], lo: number, hi: number, seed = 1, dtype: mg.Dtype = mg.int32): MgArray {
  const n = shape.reduce((a, b) => a * b, 1);
  const vals = seededValues(n, seed, lo, hi).map(Math.floor);
  return onCpu(() => mg.array(Float64Array.from(vals), dtype, { shape }));
}

/** Runs fn on the CPU device and evaluates it (builds strided views of inputs). */
function onCpu(fn: () => MgArray): MgArray {
  const r = mg.stream(mg.cpu, fn);
  mg.eval(r);
  return r;
}

const gpuRecords = (fn: () => unknown) => mg.trace(() => mg.stream(mg.gpu, fn as () => MgArray)).filter((r) => r.device === "gpu");

afterEach(() => {
  setForceLargeIndex(false);
  delete process.env.MG_CHECK_INDICES;
});

describe("gather", () => {
  test("take and a.index with integer arrays on every dtype (negative indices wrap)", () => {
    const i0 = indices([300], -37, 37, 2);
    const i1 = indices([5, 6], -11, 11, 3);
    const flat = indices([2, 129], 0, 407, 4);
    expectDevicesAgree(
      () =>
        GPU_DTYPES.flatMap((d) => {
          const x = input([37, 11], d, 5);
          return [mg.take(x, i0, 0), mg.take(x, i1, 1), mg.take(x, flat), x.index(i1, ":"), x.index(mg.take(i0, mg.arange(30), 0), mg.take(i1, mg.arange(30))), x.index(":", i1)];
        }),
      "take/index over dtypes",
    );
  });

  test("sources and indices read in place on every layout, with no copies", () => {
    const idx = indices([4, 3], -9, 9, 6);
    const idxLayouts: [string, MgArray][] = [
      ["contiguous", idx],
      ["transposed", onCpu(() => mg.transpose(indices([3, 4], -9, 9, 7)))],
      ["broadcast", onCpu(() => mg.broadcastTo(indices([3], 0, 9, 8), [4, 3]))],
      ["sliced", onCpu(() => indices([4, 6], -9, 9, 9).index(":", "::2"))],
    ];
    for (const [layout, x] of layouts([9, 13], mg.float32, 10)) {
      for (const [il, i] of idxLayouts) {
        expectDevicesAgree(() => [mg.take(x, i, 0), x.index(i, mg.remainder(i, 13)), mg.take(x, mg.remainder(i, 13), 1)], `${layout} source, ${il} indices`);
        const records = gpuRecords(() => mg.take(x, i, 0));
        expect(records.map((r) => r.kernel)).toEqual(["mg_gather_b32_u32"]);
        expect(records[0]!.notes).toEqual([]);
      }
    }
  });

  test("every index dtype, over its whole range", () => {
    const x = input([300, 3], mg.int32, 11);
    const byDtype: [mg.Dtype, number[]][] = [
      [mg.int8, [0, 127, -128, -1, 5]],
      [mg.uint8, [0, 255, 128, 200, 7]],
      [mg.int16, [299, -300, -150, 1000, -1000]],
      [mg.uint16, [299, 65535, 256, 300, 0]],
      [mg.int32, [299, -300, 2 ** 31 - 1, -(2 ** 31), 17]],
      [mg.uint32, [299, 2 ** 32 - 1, 2 ** 31, 150, 0]],
      [mg.int64, [299, -300, -1, 2 ** 40, -(2 ** 40)]],
      [mg.uint64, [299, 2 ** 63, 2 ** 40, 1, 0]],
    ];
    const results = (): MgArray[] => byDtype.map(([d, v]) => mg.take(x, mg.array(v.map((n) => (d.size === 8 ? BigInt(n) : n)), d), 0));
    expectDevicesAgree(results, "index dtypes");
    // Independent check of the wrap/out-of-range rule on uint8 (no wrap) and int8 (wraps once).
    const [i8, u8] = runOn(mg.gpu, results);
    const rows = x.tolist() as number[][];
    expect(i8!.tolist()).toEqual([0, 127, 172, 299, 5].map((r) => rows[r]!));
    expect(u8!.tolist()).toEqual([0, 255, 128, 200, 7].map((r) => rows[r]!));
  });

  test("gather with slices wider than one element, several index arrays, a slice that overhangs the edge", () => {
    const x = input([8, 7, 5], mg.float16, 12);
    const a = indices([3, 4], -8, 8, 13);
    const b = indices([3, 4], 0, 7, 14);
    expectDevicesAgree(
      () => [
        S.gather(x, [a, b], [0, 1], [1, 1, 5]),
        S.gather(x, [b], [1], [3, 4, 2]), // starts past 4 overhang axis 1: those elements read 0
        S.gather(x, [], [], [2, 3, 4]),
        S.gather(x, [mg.array(3), mg.array(-2)], [2, 0], [2, 2, 2]),
      ],
      "slices",
    );
  });

  test("takeAlongAxis on every dtype and layout", () => {
    const idx0 = indices([4, 9], -6, 6, 15);
    const idx1 = indices([6, 5], -9, 9, 16);
    const xs = GPU_DTYPES.map((d) => input([6, 9], d, 17));
    expectDevicesAgree(() => xs.flatMap((x) => [mg.takeAlongAxis(x, idx0, 0), mg.takeAlongAxis(x, idx1, 1), mg.takeAlongAxis(x, mg.reshape(idx1, [30]))]), "dtypes");
    for (const [layout, x] of layouts([6, 9], mg.bfloat16, 18)) {
      const it = onCpu(() => mg.transpose(indices([5, 6], -9, 9, 19)));
      expectDevicesAgree(() => [mg.takeAlongAxis(x, idx1, 1), mg.takeAlongAxis(x, it, 1), mg.takeAlongAxis(x, mg.broadcastTo(indices([1, 9], 0, 6, 20), [3, 9]), 0)], layout);
    }
  });

  test("zero-size and one-element gathers", () => {
    const x = input([5, 3], mg.float32, 21);
    const empty = mg.array([], mg.int32);
    const [t] = runOn(mg.gpu, () => mg.take(x, empty, 0));
    expect(t!.shape).toEqual([0, 3]);
    expectDevicesAgree(() => [mg.take(x, empty, 1), mg.take(mg.array([4.5], mg.float32), mg.array([0, 0, -1])), mg.takeAlongAxis(x, mg.zeros([0, 3], mg.int32), 0)], "edges");
    const none = onCpu(() => mg.zeros([0, 4], mg.int8));
    expectDevicesAgree(() => S.gather(none, [mg.array([], mg.int32)], [0], [1, 4]), "empty source");
  });
});

describe("scatter", () => {
  test("a.at(idx).add: 10,000 updates into 7 slots, every dtype (integers exact)", () => {
    const idx = indices([10000], 0, 7, 22);
    const updatesOf = (d: mg.Dtype): MgArray => {
      if (d === mg.float16) return onCpu(() => mg.multiply(mg.astype(indices([10000], 0, 3, 23), d), 0.5)); // sums stay exact in half
      if (d === mg.bfloat16) return onCpu(() => mg.multiply(mg.astype(indices([10000], 0, 2, 24), d), 0.0078125));
      return input([10000], d, 25, -0.4, 0.45);
    };
    const ups = GPU_DTYPES.map(updatesOf);
    const bases = GPU_DTYPES.map((d) => input([7], d, 26));
    const fn = () => GPU_DTYPES.map((_, k) => bases[k]!.at(idx).add(ups[k]!));
    const cpu = runOn(mg.cpu, fn);
    const gpu = runOn(mg.gpu, fn);
    GPU_DTYPES.forEach((d, k) => {
      const tol = d === mg.float32 || d === mg.complex64 ? accumulationTolerance(d, 10000 / 7) : toleranceFor(d);
      expectClose(gpu[k]!, cpu[k]!, tol, `add ${d.name}`);
    });
    // An independent reference for int32: per-slot sums in JS.
    const i = GPU_DTYPES.indexOf(mg.int32);
    const u = ups[i]!.tolist() as number[];
    const want = bases[i]!.tolist() as number[];
    (idx.tolist() as number[]).forEach((slot, j) => (want[slot] = want[slot]! + u[j]!));
    expect(gpu[i]!.tolist()).toEqual(want);
  });

  test("64-bit sums are exact across the low word's carries", () => {
    const big = [0xffffffffn, -1n, (1n << 40n) + 3n, -(1n << 33n), 0x7fffffffffffffffn, 0x80000001n];
    const idx = indices([3000], 0, 3, 27);
    const pick = (idx.tolist() as number[]).map((_, j) => big[j % big.length]!);
    for (const d of [mg.int64, mg.uint64]) {
      const u = mg.array(pick.map((v) => (d === mg.uint64 ? BigInt.asUintN(64, v) : v)), d);
      const [g] = runOn(mg.gpu, () => mg.zeros([3], d).at(idx).add(u));
      const want = [0n, 0n, 0n];
      (idx.tolist() as number[]).forEach((slot, j) => (want[slot] = want[slot]! + pick[j]!));
      const wrap = (v: bigint) => (d === mg.int64 ? BigInt.asIntN(64, v) : BigInt.asUintN(64, v));
      expect(g!.tolist()).toEqual(want.map(wrap));
    }
  });

  test("multiply, maximum and minimum with duplicates on every dtype (64-bit in order)", () => {
    const idx = indices([200], -7, 7, 28);
    const maxDtypes = GPU_DTYPES;
    const minDtypes = [mg.int8, mg.int32, mg.uint32, mg.float32, mg.bfloat16, mg.int64, mg.complex64];
    const prodValues = (d: mg.Dtype) => (d.kind === "f" || d === mg.complex64 ? input([200], d, 29, 0.9, 1.1) : input([200], d, 30, -0.3, 0.35));
    const fn = () => [
      ...GPU_DTYPES.map((d) => input([7], d, 31, 0.5, 1.5).at(idx).multiply(prodValues(d))),
      ...maxDtypes.map((d) => input([7], d, 32).at(idx).maximum(input([200], d, 33))),
      ...minDtypes.map((d) => input([7], d, 34).at(idx).minimum(input([200], d, 35))),
    ];
    const cpu = runOn(mg.cpu, fn);
    const gpu = runOn(mg.gpu, fn);
    const dtypes = [...GPU_DTYPES, ...maxDtypes, ...minDtypes];
    dtypes.forEach((d, k) => {
      const prod = k < GPU_DTYPES.length;
      // Float products round in hardware order; maxima and minima are exact.
      const tol = prod ? accumulationTolerance(d, 30) : { rtol: 0, atol: 0 };
      expectClose(gpu[k]!, cpu[k]!, tol, `${prod ? "prod" : "max/min"} ${d.name}`);
    });
    const records = gpuRecords(() => mg.zeros([3], mg.int64).at(mg.array([0, 1, 0])).multiply(mg.array([2, 3, 4], mg.int64)));
    expect(records.some((r) => r.kernel.startsWith("mg_scatter_ordered_i64_prod") && r.layout.startsWith("ordered, one thread per slice position"))).toBe(true);
  });

  test("overlapping slices wider than one element apply in order (one thread)", () => {
    const a = input([10, 2], mg.int64, 36);
    const idx = mg.array([0, 1, 2, 1, 6]);
    const u = input([5, 4, 2], mg.int64, 37);
    const fn = () => [S.scatter(a, [idx], u, [0], "prod"), S.scatter(a, [idx], u, [0], "max"), S.scatter(a, [idx], u, [0], "none"), S.scatter(a, [idx], u, [0], "sum")];
    expectDevicesAgree(fn, "overlapping");
    const records = gpuRecords(() => S.scatter(a, [idx], u, [0], "min"));
    expect(records.some((r) => r.layout.startsWith("ordered, one thread,"))).toBe(true);
  });

  test('"none" keeps the last update in row-major order, like the CPU, on every dtype', () => {
    const idx = indices([500], 0, 9, 38);
    const along = indices([40, 3], -9, 9, 41);
    const args = GPU_DTYPES.map((d) => [input([9, 3], d, 39), input([500, 1, 3], d, 40, -50, 50), input([40, 3], d, 42)] as const);
    expectDevicesAgree(
      () => args.flatMap(([a, u, v]) => [S.scatter(a, [idx], u, [0], "none"), mg.putAlongAxis(a, along, v, 0)]),
      "last writer",
      () => ({ rtol: 0, atol: 0 }),
    );
    const records = gpuRecords(() => S.scatter(input([9, 3], mg.float32, 39), [idx], input([500, 1, 3], mg.float32, 40), [0], "none"));
    expect(records.map((r) => r.kernel)).toEqual(["mg_scatter_clear_u32", "mg_scatter_winner_u32", "mg_scatter_pick_b32_u32"]);
  });

  test("scatter on strided sources, updates and indices; several index arrays; the at() slice form", () => {
    for (const [layout, a] of layouts([6, 5], mg.float32, 43)) {
      const i = onCpu(() => mg.transpose(indices([4, 3], -6, 6, 44)));
      const j = onCpu(() => mg.broadcastTo(indices([1, 4], 0, 5, 45), [3, 4]));
      const u = onCpu(() => mg.transpose(input([4, 3], mg.float32, 46)));
      expectDevicesAgree(
        () => [a.at(i, j).add(u), a.at(i, j).maximum(u), a.at(i).add(mg.ones([5])), a.at(i, "1:4").multiply(2), a.at("1:5:2", j).minimum(0.5)],
        layout,
        (d) => accumulationTolerance(d, 8),
      );
    }
  });

  test("scatter_add along an axis (ScatterAxis sum), putAlongAxis on every layout", () => {
    const idx = indices([6, 9], -4, 4, 47);
    expectDevicesAgree(
      () => [mg.int32, mg.uint8, mg.int64, mg.float32, mg.complex64, mg.bfloat16].map((d) => S.scatterAxis(input([4, 9], d, 48), idx, input([6, 9], d, 49), 0, "sum")),
      "scatter_add_axis",
      (d) => accumulationTolerance(d, 6),
    );
    for (const [layout, a] of layouts([6, 7], mg.int16, 50)) {
      const i = onCpu(() => mg.transpose(indices([7, 6], -7, 7, 51)));
      expectDevicesAgree(() => [mg.putAlongAxis(a, i, input([6, 7], mg.int16, 52), 1), mg.putAlongAxis(a, mg.array([[1], [0], [2], [1], [4], [6]]), 9, 1)], layout);
    }
  });

  test("out-of-range indices read 0 and drop their updates, as on the CPU", () => {
    const x = input([37, 4], mg.float32, 53);
    const bad = mg.array([40, -50, 36, -37, 100000, 3]);
    const huge = mg.array([0xffffffffffffffffn, 2n], mg.uint64);
    expectDevicesAgree(
      () => [
        mg.take(x, bad, 0),
        mg.take(x, huge, 0),
        x.at(bad).add(1),
        x.at(huge).add(1),
        S.scatter(x, [bad], input([6, 1, 4], mg.float32, 54), [0], "none"),
        mg.takeAlongAxis(x, mg.array([[5, -5, 4, 0]]), 1),
        mg.putAlongAxis(x, mg.array([[5, -5, 4, 0]]), 7, 1),
        mg.slice(x, mg.array([30]), [0], [10, 4]),
        mg.slice(x, mg.array([-3, 2]), [0, 1], [5, 4]),
        mg.sliceUpdate(x, mg.ones([10, 4]), mg.array([33]), [0]),
      ],
      "out of range",
    );
  });

  test("MG_CHECK_INDICES=1: GPU evaluation throws the CPU's error, also for indices computed in the same batch", () => {
    const x = input([37, 4], mg.float32, 55);
    process.env.MG_CHECK_INDICES = "1";
    const cases: [string, () => MgArray][] = [
      ["take", () => mg.take(x, mg.array([1, 40]), 0)],
      ["computed index", () => mg.take(x, mg.add(mg.array([1, 2, 36]), 1), 0)],
      ["at", () => x.at(mg.array([-38])).add(1)],
      ["take_along_axis", () => mg.takeAlongAxis(x, mg.array([[4]]), 1)],
      ["put_along_axis", () => mg.putAlongAxis(x, mg.array([[0, 0, 0, -5]]), 1, 1)],
      ["slice", () => mg.slice(x, mg.array([30]), [0], [10, 4])],
      ["slice_update", () => mg.sliceUpdate(x, mg.ones([2, 4]), mg.array([36]), [0])],
    ];
    for (const [what, fn] of cases) {
      let cpuError = "";
      try {
        runOn(mg.cpu, fn);
      } catch (e) {
        cpuError = (e as Error).message;
      }
      expect(cpuError, what).toContain("MG_CHECK_INDICES is on");
      expect(() => runOn(mg.gpu, fn), what).toThrow(cpuError);
    }
    // In-range indices pass.
    expectDevicesAgree(() => [mg.take(x, mg.array([0, 36, -37]), 0), x.at(mg.array([2, 2])).add(1)], "in range");
  });

  test("zero-size and one-element scatters", () => {
    const a = input([4, 3], mg.int32, 56);
    expectDevicesAgree(
      () => [
        a.at(mg.array([], mg.int32)).add(mg.zeros([0, 3], mg.int32)),
        S.scatter(a, [mg.array([], mg.int32)], mg.zeros([0, 1, 3], mg.int32), [0], "none"),
        mg.array([5], mg.int32).at(mg.array([0, 0, 0])).add(2),
        mg.array([5], mg.float32).at(0).multiply(3),
        mg.putAlongAxis(a, mg.zeros([0, 3], mg.int32), mg.zeros([0, 3], mg.int32), 0),
      ],
      "edges",
    );
    const [e] = runOn(mg.gpu, () => mg.zeros([3, 0], mg.float32).at(mg.array([1, 2])).add(1));
    expect(e!.shape).toEqual([3, 0]);
  });
});

describe("slices", () => {
  test("dynamic slice and sliceUpdate on every element size and layout", () => {
    expectDevicesAgree(
      () => [mg.bool_, mg.int16, mg.float32, mg.complex64].flatMap((d) => {
        const x = input([7, 10], d, 57);
        return [
          mg.slice(x, mg.array([2, 3]), [0, 1], [4, 5]),
          mg.slice(x, mg.array([4], mg.int64), [1], [7, 6]),
          mg.sliceUpdate(x, input([3, 4], d, 58), mg.array([1, 5], mg.uint8), [0, 1]),
          mg.sliceUpdate(x, input([4], d, 59), mg.array([2], mg.int16), [1]),
        ];
      }),
      "dtypes",
    );
    for (const [layout, x] of layouts([7, 10], mg.int32, 60)) {
      const start = onCpu(() => mg.array([9, 3, 1]).index("::-1"));
      expectDevicesAgree(() => [mg.slice(x, start.index("1:"), [1, 0], [2, 6]), mg.sliceUpdate(x, onCpu(() => mg.transpose(input([6, 2], mg.int32, 61))), start.index("1:"), [0, 1])], layout);
    }
  });

  test("static slice updates: assignment and every reduce mode, negative steps, NaN-propagating max/min", () => {
    const nan = mg.array([NaN, 1, -2, NaN], mg.float32);
    // Every mode on two dtypes; one reducing mode on each other dtype (each is its own kernel).
    const all = ["none", "sum", "prod", "max", "min"] as const;
    const plan: [mg.Dtype, readonly S.UpdateMode[]][] = [
      [mg.int8, all], [mg.float32, all], [mg.uint16, ["none", "max"]], [mg.int64, ["none", "prod"]],
      [mg.float16, ["none", "sum"]], [mg.complex64, ["none", "min"]],
    ];
    const args = plan.map(([d]) => [input([6, 8], d, 62), input([3, 4], d, 63)] as const);
    expectDevicesAgree(() => plan.flatMap(([, modes], k) => modes.map((mode) => S.sliceUpdateStatic(args[k]![0], args[k]![1], [5, 1], [-1, 8], [-2, 2], mode))), "modes");
    expectDevicesAgree(
      () => [mg.zeros([6], mg.float32).at("1:5").maximum(nan), mg.full([6], NaN, mg.float32).at("::2").minimum(mg.array([1, 2, 3], mg.float32)), mg.arange(10).at("2:8").add(mg.arange(6))],
      "NaN and at(slice)",
    );
  });
});

describe("index variants and traces", () => {
  test("the 64-bit-index variants agree with the CPU", () => {
    setForceLargeIndex(true);
    const x = input([9, 13], mg.float32, 64);
    const idx = indices([5, 3], -9, 9, 65);
    const fn = () => [
      mg.take(x, idx, 0),
      x.at(idx).add(1),
      x.at(mg.remainder(idx, 9)).maximum(2),
      S.scatter(x, [idx], input([5, 3, 1, 13], mg.float32, 66), [0], "none"),
      mg.takeAlongAxis(x, indices([9, 4], -13, 13, 67), 1),
      mg.putAlongAxis(x, indices([9, 4], -13, 13, 68), 0, 1),
      mg.slice(x, mg.array([2]), [1], [9, 8]),
      mg.sliceUpdate(x, mg.ones([2, 2]), mg.array([3, 3]), [0, 1]),
      S.sliceUpdateStatic(x, mg.ones([3, 13]), [0, 0], [9, 13], [3, 1], "sum"),
    ];
    expectDevicesAgree(fn, "large-index");
    const records = gpuRecords(() => mg.take(x, idx, 0));
    expect(records[0]!.kernel).toBe("mg_gather_b32_i64");
    expect(records[0]!.layout).toContain("large-index");
  });

  test("more index buffers than slots are stacked into one (a noted copy)", () => {
    const x = input([3, 4, 5, 2, 3], mg.int32, 69);
    const ids = [3, 4, 5, 2, 3].map((n, k) => indices([6], -n, n, 70 + k));
    expectDevicesAgree(() => x.index(...ids), "five index arrays");
    const records = gpuRecords(() => x.index(...ids));
    expect(records.some((r) => r.notes.some((n) => n.includes("stacked into one")))).toBe(true);
    expect(records[records.length - 1]!.kernel).toBe("mg_gather_b32_u32");
  });

  test("scatters note the copy of their source; their trace names the atomic and its precision", () => {
    const a = input([5], mg.float32, 75);
    const records = gpuRecords(() => a.at(mg.array([0, 0, 1])).add(mg.array([1, 2, 3], mg.float32)));
    const copy = records.find((r) => r.kernel.startsWith("mg_copy_strided"))!;
    expect(copy.notes[0]).toContain("copy: Scatter updates a fresh copy of its source");
    const atomic = records.find((r) => r.kernel === "mg_scatter_atomic_f32_sum_u32")!;
    expect(atomic.precision).toContain("atomic updates in hardware order");
  });
});
