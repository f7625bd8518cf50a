// The native sorts and updates (Sources/MGCpu/sort.cpp and scatter.cpp, bound in
// ts/backend/cpu/native/indexing.ts) against the TypeScript reference (ts/backend/cpu/sort.ts and
// indexing.ts): every dtype, NaN/−0/ties (stable order), strided inputs, every axis; scatters with
// every mode and duplicate indices (applied in order), negative and out-of-range indices, static
// and dynamic slice updates; thread counts.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../../ts/index.ts";
import type { MgArray } from "../../../../ts/core/array.ts";
import type { Dtype } from "../../../../ts/core/dtype.ts";
import { makeArray } from "../../../../ts/core/graph.ts";
import { defaultStream } from "../../../../ts/core/device.ts";
import { Scatter, ScatterAxis, SliceUpdate } from "../../../../ts/core/primitives/indexing.ts";
import { both, compare, expectExact, expectThreadIndependent, kernelsOf, onReference, rng, S } from "./harness.ts";

const ALL: Dtype[] = [
  mg.bool_, mg.uint8, mg.uint16, mg.uint32, mg.uint64, mg.int8, mg.int16, mg.int32, mg.int64,
  mg.float16, mg.float32, mg.float64, mg.bfloat16, mg.complex64,
];
const D = defaultStream(mg.cpu);
const exact = (got: MgArray, want: MgArray, what: string) => expectExact(got, want, what);

/** n values of a dtype with many ties, NaN, ±0 and ±∞ among the floats, extremes among integers. */
function values(d: Dtype, n: number, seed: number): MgArray {
  const r = rng(seed);
  const specials = [NaN, 0, -0, Infinity, -Infinity, 1, -1, 0.5];
  const pick = () => Math.floor(r() * 7) - 3; // ties
  let data: unknown[];
  if (d === mg.bool_) data = Array.from({ length: n }, () => r() < 0.5);
  else if (d === mg.complex64) data = Array.from({ length: n }, (_, i) => ({ re: i % 11 === 0 ? NaN : pick(), im: i % 13 === 0 ? NaN : pick() * 0.5 }));
  else if (d.kind === "f" || d.kind === "V") data = Array.from({ length: n }, (_, i) => (i % 5 === 0 ? specials[i % specials.length]! : pick() + (r() < 0.3 ? r() : 0)));
  else if (d.size === 8) data = Array.from({ length: n }, (_, i) => (i % 7 === 0 ? (d.kind === "u" ? 2n ** 64n - 1n - BigInt(i) : -(2n ** 63n) + BigInt(i)) : BigInt(pick() + (d.kind === "u" ? 3 : 0))));
  else data = Array.from({ length: n }, () => (d.kind === "u" ? pick() + 3 : pick()));
  const a = mg.array(data as never, d);
  mg.eval(a);
  return a;
}

describe("native sort = reference", () => {
  for (const dtype of ALL) {
    test(`${dtype.name}: sort, argsort, partition, argpartition along every axis, strided`, () => {
      const x = onReference(() => mg.reshape(values(dtype, 6 * 70 * 5, 1), [6, 70, 5], S));
      const xt = onReference(() => mg.transpose(x, [2, 1, 0], S));
      const long = values(dtype, 3000, 2);
      for (const [name, a] of [["contiguous", x], ["transposed", xt]] as [string, MgArray][]) {
        for (const axis of [0, 1, 2]) {
          compare(both(() => [mg.sort(a, axis, S), mg.argsort(a, axis, S)]), `${dtype.name} ${name} axis ${axis}`, exact);
          compare(both(() => [mg.partition(a, 2, axis, S), mg.argpartition(a, 1, axis, S)]), `${dtype.name} ${name} partition axis ${axis}`, exact);
        }
      }
      compare(both(() => [mg.sort(long, 0, S), mg.argsort(long, 0, S), mg.topk(long, 17, 0, S)]), `${dtype.name} long lane`, exact);
    });
  }

  test("empty and single-element lanes", () => {
    const e = onReference(() => mg.zeros([3, 0], mg.float32, S));
    compare(both(() => [mg.sort(e, 1, S), mg.argsort(e, 0, S), mg.sort(mg.ones([4, 1], mg.int32, S), 1, S)]), "empty", exact);
  });

  test("the trace names the native kernel", () => {
    expect(kernelsOf(() => mg.argsort(values(mg.float32, 10, 3), 0, S))).toContain("cpu-native:ArgSort");
  });
});

describe("native scatter and slice updates = reference", () => {
  for (const dtype of ALL) {
    test(`${dtype.name}: every mode with duplicate and negative indices; scatter along an axis; slice updates`, () => {
      const a = onReference(() => mg.reshape(values(dtype, 8 * 6, 11), [8, 6], S));
      const at = onReference(() => mg.transpose(mg.reshape(values(dtype, 8 * 6, 12), [6, 8], S), undefined, S));
      const upd = onReference(() => mg.reshape(values(dtype, 5 * 6, 13), [5, 1, 6], S));
      const idx = mg.array([3, -1, 3, 0, 3], mg.int32);
      const modes = (dtype === mg.complex64 ? ["none", "sum", "prod", "max", "min"] : ["none", "sum", "prod", "max", "min"]) as ("none" | "sum" | "prod" | "max" | "min")[];
      for (const mode of modes) {
        for (const [name, src] of [["contiguous", a], ["transposed", at]] as [string, MgArray][]) {
          compare(both(() => [makeArray(Scatter, [src, idx, upd], { axes: [0], mode }, D)]), `${dtype.name} scatter ${mode} ${name}`, exact);
        }
        const region = onReference(() => mg.reshape(values(dtype, 3 * 2, 14), [3, 2], S));
        compare(both(() => [makeArray(SliceUpdate, [a, region], { start: [1, 0], stop: [7, 6], strides: [2, 3], mode }, D)]), `${dtype.name} slice update ${mode}`, exact);
      }
      // sum-scatter of strided (transposed) update rows, duplicate indices (an embedding's gradient)
      const updT = onReference(() => mg.transpose(mg.reshape(values(dtype, 6 * 5, 18), [6, 1, 5], S), [2, 1, 0], S));
      compare(both(() => [makeArray(Scatter, [a, idx, updT], { axes: [0], mode: "sum" }, D)]), `${dtype.name} scatter sum, transposed updates`, exact);
      // an assignment of a transposed region into a broadcast source (a strided view's gradient)
      const zeros = onReference(() => mg.broadcastTo(mg.zeros([1, 6], dtype, S), [8, 6], S));
      const regionT = onReference(() => mg.transpose(mg.reshape(values(dtype, 3 * 4, 17), [3, 4], S), undefined, S));
      compare(both(() => [makeArray(SliceUpdate, [zeros, regionT], { start: [0, 1], stop: [8, 6], strides: [2, 2], mode: "none" }, D)]), `${dtype.name} slice update into broadcast`, exact);
      // two index arrays (a point per pair), slice of one element
      const i0 = mg.array([[1, 1], [7, -8]], mg.int64), i1 = mg.array([[0, 0], [5, 2]], mg.uint8);
      const u2 = onReference(() => mg.reshape(values(dtype, 4, 15), [2, 2, 1, 1], S));
      compare(both(() => [makeArray(Scatter, [a, i0, i1, u2], { axes: [0, 1], mode: "sum" }, D)]), `${dtype.name} scatter two axes`, exact);
      const ia = mg.array([[0, 5, 5, 1, 0, 2], [7, 7, 7, 7, 0, -1]], mg.int32);
      const ua = onReference(() => mg.reshape(values(dtype, 12, 16), [2, 6], S));
      for (const mode of ["none", "sum"] as const) {
        compare(both(() => [makeArray(ScatterAxis, [a, ia, ua], { axis: 0, mode }, D)]), `${dtype.name} scatter axis ${mode}`, exact);
      }
    });
  }

  test("out-of-range indices and dynamic slices give the reference's results and errors", () => {
    const a = onReference(() => mg.reshape(mg.arange(0, 48, 1, mg.float32, S), [8, 6], S));
    const bad = mg.array([2, 9], mg.int32);
    const upd = onReference(() => mg.ones([2, 1, 6], mg.float32, S));
    compare(both(() => [makeArray(Scatter, [a, bad, upd], { axes: [0], mode: "sum" }, D)]), "scatter out of range", exact);
    compare(both(() => [mg.putAlongAxis(a, mg.array([[9, 0, 1, 2, 3, 4]], mg.int32), mg.ones([1, 6], mg.float32, S), 0, S)]), "put_along_axis out of range", exact);
    const u = onReference(() => mg.full([2, 3], 7, mg.float32, S));
    for (const start of [[1, 2], [7, 5], [-1, 0]]) {
      const st = mg.array(start, mg.int32);
      compare(both(() => [mg.sliceUpdate(a, u, st, [0, 1], S), mg.slice(a, st, [0, 1], [2, 3], S)]), `dynamic slice at ${start}`, exact);
    }
  });

  test("the trace names the native kernels", () => {
    const a = onReference(() => mg.zeros([4, 4], mg.float32, S));
    expect(kernelsOf(() => makeArray(Scatter, [a, mg.array([1], mg.int32), mg.ones([1, 1, 4], mg.float32, S)], { axes: [0], mode: "sum" }, D))).toContain("cpu-native:Scatter");
    expect(kernelsOf(() => mg.sliceUpdate(a, mg.ones([2, 2], mg.float32, S), mg.array([1, 1], mg.int32), [0, 1], S))).toContain("cpu-native:DynamicSliceUpdate");
  });
});

describe("native sort determinism", () => {
  const x = onReference(() => mg.reshape(values(mg.float32, 64 * 2000, 21), [64, 2000], S));
  test("1 thread and 4 threads give the same bits", () => expectThreadIndependent(() => [mg.sort(x, 1, S), mg.argsort(x, 0, S)], "sort"));
});
