// Softmax and LogSumExp on the GPU device (the Metal simulator here) against the CPU device's
// float64 reference, plus special values, the `precise` accumulator and what the trace reports.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import type { TraceRecord } from "../../../ts/core/trace.ts";
import { setForceLargeIndex } from "../../../ts/backend/gpu/encoder.ts";
import { accumulationTolerance, normalizedTolerance } from "../../../ts/testing/tolerances.ts";
import { expectDevicesAgree, GPU_FLOAT_DTYPES, input, layouts, runOn } from "./harness.ts";

// logsumexp is a sum's logarithm; softmax outputs are shares of a sum (they shrink like 1/n).
const accum = (n: number) => (d: mg.Dtype) => accumulationTolerance(d, n);
const shares = (n: number) => (d: mg.Dtype) => normalizedTolerance(d, n);

function onCpu(fn: () => MgArray): MgArray {
  const r = mg.stream(mg.cpu, fn);
  mg.eval(r);
  return r;
}

function gpuTrace(fn: () => MgArray | MgArray[], primitive: string): TraceRecord[] {
  return mg.trace(() => mg.stream(mg.gpu, fn)).filter((r) => r.device === "gpu" && r.primitives.includes(primitive));
}

describe("Softmax and LogSumExp: dtypes, precise, sizes", () => {
  for (const dtype of GPU_FLOAT_DTYPES) {
    for (const n of [1, 7, 33, 1000, 4097]) {
      test(`${dtype.name}, rows of ${n}`, () => {
        const x = input([3, n], dtype, n + 50, -4, 4);
        expectDevicesAgree(() => [mg.softmax(x, -1), mg.softmax(x, -1, { precise: true })], `softmax ${dtype.name} n=${n}`, shares(n));
        expectDevicesAgree(() => [mg.logsumexp(x, -1), mg.logsumexp(x, 1, true)], `logsumexp ${dtype.name} n=${n}`, accum(n));
      });
    }
  }
  test("rows sum to one (float32, long rows)", () => {
    const x = input([2, 4097], mg.float32, 51, -20, 20);
    const [s] = runOn(mg.gpu, () => mg.sum(mg.softmax(x, -1), -1));
    for (const v of s!.tolist() as number[]) expect(Math.abs(v - 1)).toBeLessThan(1e-5);
  });
  test("zero-size inputs: softmax returns them, logsumexp throws at op time", () => {
    const e = onCpu(() => mg.zeros([0, 3]));
    const [s] = runOn(mg.gpu, () => mg.softmax(e, -1));
    expect(s!.shape).toEqual([0, 3]);
    expect(() => mg.stream(mg.gpu, () => mg.logsumexp(e, -1))).toThrow("[logsumexp] Received empty array.");
  });
  test("integer inputs become float32; one-element rows are 1 and their logsumexp the value", () => {
    const i = input([4, 9], mg.int32, 52);
    const one = input([5, 1], mg.float16, 53);
    expectDevicesAgree(() => [mg.softmax(i, -1), mg.softmax(one, -1)], "softmax of int and one-element rows", shares(9));
    expectDevicesAgree(() => [mg.logsumexp(i, 0), mg.logsumexp(one, -1)], "logsumexp of int and one-element rows", accum(4));
    const [s] = runOn(mg.gpu, () => mg.softmax(one, -1));
    expect((s!.tolist() as number[][]).every((r) => r[0] === 1)).toBe(true);
  });
});

describe("Softmax and LogSumExp: layouts and axes", () => {
  test("contiguous, transposed, sliced, broadcast and reversed views, every axis", () => {
    for (const [layout, x] of layouts([6, 40], mg.float32, 54)) {
      expectDevicesAgree(() => [mg.softmax(x, 1), mg.softmax(x, 0), mg.softmax(x)], `softmax ${layout}`, shares(240));
      expectDevicesAgree(() => [mg.logsumexp(x, 1), mg.logsumexp(x, 0), mg.logsumexp(x)], `logsumexp ${layout}`, accum(240));
    }
    const x3 = input([3, 4, 5], mg.bfloat16, 55);
    expectDevicesAgree(() => [mg.softmax(x3, [0, 2]), mg.softmax(x3, 1, { precise: true })], "3-d axes", shares(15));
    expectDevicesAgree(() => mg.logsumexp(x3, [1, 2], true), "3-d axes", accum(20));
  });
  test("a strided row view is read in place (the trace records no copy)", () => {
    const x = input([8, 50], mg.float32, 56);
    const [soft] = gpuTrace(() => mg.softmax(x, 0), "Softmax");
    expect(soft!.layout).toBe("strided rows");
    expect(soft!.notes).toEqual([]);
    const [lse] = gpuTrace(() => mg.logsumexp(x, 1), "LogSumExp");
    expect(lse!.layout).toBe("contiguous rows");
  });
});

describe("Softmax and LogSumExp: special values", () => {
  test("masked (−∞) entries, all −∞ rows, +∞ and NaN follow the reference", () => {
    const rows = [
      [0.5, -Infinity, 1.5, -Infinity, 2, -1, 0, 3],
      [-Infinity, -Infinity, -Infinity, -Infinity, -Infinity, -Infinity, -Infinity, -Infinity],
      [1, 2, Infinity, 4, 5, 6, 7, 8],
      [1, 2, 3, NaN, 5, 6, 7, 8],
      [Infinity, -Infinity, 0, 1, 2, 3, 4, 5],
      [1e30, -1e30, 3e29, 1, 2, 3, 4, 5],
    ];
    for (const dtype of GPU_FLOAT_DTYPES) {
      const x = onCpu(() => mg.astype(mg.array(rows), dtype));
      expectDevicesAgree(() => [mg.softmax(x, -1), mg.softmax(x, -1, { precise: true })], `softmax specials ${dtype.name}`, shares(8));
      expectDevicesAgree(() => mg.logsumexp(x, -1), `logsumexp specials ${dtype.name}`, accum(8));
      const [s, l] = runOn(mg.gpu, () => [mg.softmax(x, -1), mg.logsumexp(x, -1)]);
      const sv = s!.tolist() as number[][];
      expect(sv[0]![1]).toBe(0); // a masked entry gets exactly zero weight
      expect(sv[1]!.every(Number.isNaN)).toBe(true); // all −∞: 0/0
      expect(sv[2]!.every(Number.isNaN)).toBe(true); // +∞ − +∞
      expect(sv[3]!.every(Number.isNaN)).toBe(true);
      const lv = l!.tolist() as number[];
      expect(lv[1]).toBe(-Infinity);
      expect(lv[2]).toBe(Infinity);
      expect(Number.isNaN(lv[3]!)).toBe(true);
    }
  });
  test("float32 contiguous rows: special values and the maximum in the ragged last chunk (n % 4 ≠ 0)", () => {
    // The float32 kernel reads 4-element chunks; a row's n % 4 last elements are a chunk of their own.
    const rows = [
      [0, 1, 2, 3, 4, 5, NaN],
      [0, 1, 2, 3, 4, 5, Infinity],
      [-Infinity, -Infinity, -Infinity, -Infinity, -Infinity, -Infinity, 2],
      [-Infinity, -Infinity, -Infinity, -Infinity, -Infinity, -Infinity, -Infinity],
    ];
    const x = onCpu(() => mg.array(rows));
    expectDevicesAgree(() => mg.softmax(x, -1), "softmax ragged specials", shares(7));
    const sv = runOn(mg.gpu, () => mg.softmax(x, -1))[0]!.tolist() as number[][];
    for (const r of [0, 1, 3]) expect(sv[r]!.every(Number.isNaN)).toBe(true);
    expect(sv[2]).toEqual([0, 0, 0, 0, 0, 0, 1]);
    // A long row whose maximum is its last element (in the chunk after the threads' last full ones).
    const long = onCpu(() => mg.concatenate([input([2, 1029], mg.float32, 58, 0, 1), mg.full([2, 1], 30)], 1));
    expectDevicesAgree(() => mg.softmax(long, -1), "softmax ragged maximum", shares(1030));
  });
});

describe("Softmax and LogSumExp: precision and the trace", () => {
  test("precise accumulates 16-bit inputs in float32; the default accumulates in the input type", () => {
    for (const [dtype, tag, short] of [[mg.float16, "f16", "fp16"], [mg.bfloat16, "bf16", "bf16"]] as const) {
      const x = input([4, 300], dtype, 57);
      const [plain] = gpuTrace(() => mg.softmax(x, -1), "Softmax");
      const [precise] = gpuTrace(() => mg.softmax(x, -1, { precise: true }), "Softmax");
      const [lse] = gpuTrace(() => mg.logsumexp(x, -1), "LogSumExp");
      expect([plain!.kernel, plain!.precision]).toEqual([`mg_softmax_${tag}_acc_${tag}`, `${short} accumulate over ${short} operands`]);
      expect([precise!.kernel, precise!.precision]).toEqual([`mg_softmax_${tag}_acc_f32`, `fp32 accumulate over ${short} operands`]);
      expect(lse!.precision).toBe(`fp32 accumulate over ${short} operands`);
    }
    // A bfloat16 running sum of many equal terms stalls (256 + 1 = 256); float32 does not.
    const flat = onCpu(() => mg.zeros([1, 4096], mg.bfloat16));
    const [p] = runOn(mg.gpu, () => mg.softmax(flat, -1, { precise: true }));
    expect((p!.tolist() as number[][])[0]!.every((v) => v === 1 / 4096)).toBe(true);
  });
  test("the 64-bit index variants (forced on small arrays) agree", () => {
    const x = input([5, 70], mg.float32, 58);
    const xt = onCpu(() => mg.transpose(input([70, 5], mg.float32, 59)));
    const ops = () => [mg.softmax(x, -1), mg.logsumexp(xt, -1), mg.softmax(xt, 0)];
    const normalised = (d: mg.Dtype) => normalizedTolerance(d, 5);
    const previous = setForceLargeIndex(true);
    try {
      const records = mg.trace(() => mg.stream(mg.gpu, ops)).filter((r) => r.device === "gpu" && (r.primitives.includes("Softmax") || r.primitives.includes("LogSumExp")));
      expect(records.length).toBe(3);
      expect(records.every((r) => r.layout.endsWith("large-index") && r.kernel.endsWith("_i64"))).toBe(true);
      expectDevicesAgree(ops, "large-index", normalised);
    } finally {
      setForceLargeIndex(previous);
    }
  });
});
