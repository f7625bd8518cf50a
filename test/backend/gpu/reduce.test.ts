// Reductions (Reduce) and argmax/argmin (ArgReduce) on the GPU device (the Metal simulator here)
// against the CPU device, plus hand-derived cases where the CPU reference cannot speak (complex
// ordering) and facts the trace must state (layout variant, accumulator precision).
//
// Kernel instantiations are kept few: each test evaluates many reductions at once, so that their
// kernels compile in one compiler run, and the full dtype sweep runs on two layouts only.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import { sliceStatic } from "../../../ts/core/ops/slicing.ts";
import type { TraceRecord } from "../../../ts/core/trace.ts";
import { setForceLargeIndex } from "../../../ts/backend/gpu/encoder.ts";
import { planReduce } from "../../../ts/backend/gpu/reduce.ts";
import { simdThreadgroup } from "../../../ts/backend/gpu/launch.ts";
import type { Pipeline } from "../../../ts/backend/runtime.ts";
import { accumulationTolerance } from "../../../ts/testing/tolerances.ts";
import { expectDevicesAgree, GPU_DTYPES, GPU_FLOAT_DTYPES, input, layouts, runOn } from "./harness.ts";

/** Floats within the accumulation tolerance for `n` terms; integers and bool exact. */
const accum = (n: number) => (d: mg.Dtype) => accumulationTolerance(d, n);

/** The GPU trace records of `fn` evaluated on the GPU. */
function gpuTrace(fn: () => MgArray | MgArray[]): TraceRecord[] {
  return mg.trace(() => mg.stream(mg.gpu, fn)).filter((r) => r.device === "gpu");
}

function onCpu(fn: () => MgArray): MgArray {
  const r = mg.stream(mg.cpu, fn);
  mg.eval(r);
  return r;
}

const AXES: (number | number[] | null)[] = [0, 1, 2, -1, [0, 1], [0, 2], [1, 2], [-3, -1], null];

// Every dtype runs through the row kernel (the per-dtype code — loads, accumulators, shuffles — is
// shared by all variants); the other variants run on a few dtypes below.
describe("Reduce: every op on every GPU dtype", () => {
  for (const dtype of GPU_DTYPES) {
    test(dtype.name, () => {
      // Products of 33 values stay in range for every float dtype (|x| ≤ 1.5).
      const x = input([7, 33], dtype, 3, -1.5, 1.5);
      expectDevicesAgree(
        () => [mg.sum(x, 1), mg.prod(x, 1), mg.max(x, 1), mg.min(x, 1), mg.all(x, 1), mg.any(x, 1)],
        `${dtype.name} rows`,
        accum(33),
      );
    });
  }
});

describe("Reduce: layouts, axes and keepdims", () => {
  for (const dtype of [mg.float32, mg.int32, mg.float16]) {
    test(`${dtype.name}: contiguous, transposed, sliced, broadcast and reversed views, every axis set`, () => {
      for (const [layout, x] of layouts([5, 6, 7], dtype, 11)) {
        expectDevicesAgree(
          () => AXES.flatMap((axes) => [mg.sum(x, axes), mg.max(x, axes, true), mg.min(x, axes)]),
          `${dtype.name} ${layout}`,
          accum(210),
        );
      }
    });
  }
  test("keepdims keeps reduced axes as size 1", () => {
    const x = input([4, 5, 6], mg.float32, 12);
    const [a, b, c] = runOn(mg.gpu, () => [mg.sum(x, [0, 2], true), mg.max(x, 1, true), mg.any(x, null, true)]);
    expect(a!.shape).toEqual([1, 5, 1]);
    expect(b!.shape).toEqual([4, 1, 6]);
    expect(c!.shape).toEqual([1, 1, 1]);
    expectDevicesAgree(() => [mg.sum(x, [0, 2], true), mg.max(x, 1, true), mg.prod(x, [1, 2], true)], "keepdims", accum(30));
  });
  test("a transposed 3-d view reduced over its middle axis (no dimension merges)", () => {
    const x = onCpu(() => mg.transpose(input([6, 5, 4], mg.float32, 13), [2, 0, 1]));
    expectDevicesAgree(() => [mg.sum(x, 1), mg.sum(x, [0, 2]), mg.max(x, [1, 2])], "transposed 3-d", accum(30));
  });
});

describe("Reduce: sizes that are not multiples of any tile", () => {
  for (const n of [1, 7, 33, 1000, 4097]) {
    test(`n = ${n}`, () => {
      for (const dtype of [mg.float32, mg.bfloat16, mg.int64]) {
        const rows = input([3, n], dtype, n);
        const cols = input([n, 3], dtype, n + 1);
        const flat = input([n], dtype, n + 2);
        expectDevicesAgree(
          () => [mg.sum(rows, 1), mg.max(rows, 1), mg.sum(cols, 0), mg.min(cols, 0), mg.sum(flat), mg.max(flat)],
          `${dtype.name} n=${n}`,
          accum(n),
        );
      }
    });
  }
  test("long all-reduces run in two passes (partials through scratch memory)", () => {
    const n = 40_003;
    for (const dtype of [mg.float32, mg.float16, mg.int64, mg.uint8]) {
      const x = input([n], dtype, 5);
      const ops = () => [mg.sum(x), mg.max(x), mg.min(x)];
      expectDevicesAgree(ops, `${dtype.name} two-pass`, accum(n));
      const records = gpuTrace(() => mg.sum(x));
      const reduce = records.filter((r) => r.primitives.includes("Reduce"));
      expect(reduce.map((r) => r.layout)).toEqual([expect.stringContaining("all, two-pass (pass 1 of 2"), "all, two-pass (pass 2 of 2)"]);
      expect(reduce[0]!.notes.join(" ")).toContain("scratch");
    }
    const b = onCpu(() => mg.greater(input([n], mg.float32, 6), -1.9999));
    expectDevicesAgree(() => [mg.all(b), mg.any(mg.logicalNot(b))], "bool two-pass");
  });
  test("a long column reduction and a wide one", () => {
    const tall = input([5000, 3], mg.float32, 7);
    const wide = input([40, 300], mg.int32, 8);
    expectDevicesAgree(() => [mg.sum(tall, 0), mg.max(tall, 0), mg.sum(wide, 0), mg.min(wide, 0)], "columns", accum(5000));
  });
});

describe("Reduce: zero-size and one-element inputs", () => {
  test("reducing nothing gives the identity; max/min of nothing throws at op time", () => {
    const e = onCpu(() => mg.zeros([0, 3]));
    const [s, p, a, o, s1] = runOn(mg.gpu, () => [mg.sum(e, 0), mg.prod(e, 0), mg.all(e, 0), mg.any(e, 0), mg.sum(e, 1)]);
    expect(s!.tolist()).toEqual([0, 0, 0]);
    expect(p!.tolist()).toEqual([1, 1, 1]);
    expect(a!.tolist()).toEqual([true, true, true]);
    expect(o!.tolist()).toEqual([false, false, false]);
    expect(s1!.shape).toEqual([0]);
    const [total] = runOn(mg.gpu, () => mg.sum(onCpu(() => mg.zeros([0]))));
    expect(total!.item()).toBe(0);
    const records = gpuTrace(() => mg.sum(e, 0));
    expect(records.find((r) => r.primitives.includes("Reduce"))!.layout).toBe("empty (identity fill)");
    expect(() => mg.stream(mg.gpu, () => mg.max(e))).toThrow(/\[max\] Cannot max reduce/);
    expect(() => mg.stream(mg.gpu, () => mg.min(e, 0))).toThrow(/\[min\] Cannot min reduce/);
    const [m1] = runOn(mg.gpu, () => mg.min(e, 1)); // nothing is reduced into nothing
    expect(m1!.shape).toEqual([0]);
    expectDevicesAgree(() => [mg.sum(e, 0), mg.prod(e, 0), mg.all(e, 0), mg.any(e, 0)], "empty");
  });
  test("one-element inputs", () => {
    for (const dtype of [mg.float32, mg.int64, mg.bool_]) {
      const x = input([1], dtype, 9);
      const y = input([1, 1, 1], dtype, 10);
      expectDevicesAgree(() => [mg.sum(x), mg.max(x), mg.prod(y, [0, 2]), mg.all(y), mg.any(x)], `${dtype.name} one element`);
    }
  });
});

describe("Reduce: numerics", () => {
  test("float16 and bfloat16 accumulate in float32 (a 16-bit running sum would stall)", () => {
    // In half, 2048 + 1 rounds back to 2048; in bfloat16, 256 + 1 rounds back to 256.
    const ones16 = onCpu(() => mg.ones([3, 4096], mg.float16));
    const onesBf = onCpu(() => mg.ones([1024], mg.bfloat16));
    const [a, b, c] = runOn(mg.gpu, () => [mg.sum(ones16, 1), mg.sum(onesBf), mg.sum(ones16, 0)]);
    expect(a!.tolist()).toEqual([4096, 4096, 4096]);
    expect(b!.item()).toBe(1024);
    expect((c!.tolist() as number[]).every((v) => v === 3)).toBe(true);
    const records = gpuTrace(() => [mg.sum(ones16, 1), mg.sum(onesBf)]);
    expect(records.map((r) => r.precision)).toEqual(["fp32 accumulate over fp16 operands", "fp32 accumulate over bf16 operands"]);
  });
  test("64-bit integer sums and products are exact and wrap like C", () => {
    const big = [2n ** 40n + 3n, -(2n ** 52n) + 7n, 2n ** 61n, 123456789012345n, -(2n ** 62n)];
    const x = mg.array(BigInt64Array.from(big));
    const [s, p] = runOn(mg.gpu, () => [mg.sum(x), mg.prod(x)]);
    expect(s!.item()).toBe(BigInt.asIntN(64, big.reduce((a, b) => a + b, 0n)));
    expect(p!.item()).toBe(BigInt.asIntN(64, big.reduce((a, b) => a * b, 1n)));
    const u = mg.array(BigUint64Array.from([2n ** 63n + 11n, 2n ** 63n + 5n, 2n ** 62n]));
    const [us, umax] = runOn(mg.gpu, () => [mg.sum(u), mg.max(u)]);
    expect(us!.item()).toBe(BigInt.asUintN(64, 2n ** 63n + 11n + 2n ** 63n + 5n + 2n ** 62n));
    expect(umax!.item()).toBe(2n ** 63n + 11n);
    expect(gpuTrace(() => mg.sum(x))[0]!.precision).toBe("exact (wrapping 64-bit integer accumulate)");
    expectDevicesAgree(() => [mg.sum(x), mg.prod(x), mg.sum(u), mg.min(u)], "64-bit");
  });
  test("32-bit integer sums wrap identically on both devices", () => {
    const x = onCpu(() => mg.astype(mg.add(mg.multiply(mg.arange(3000), 7919), 2 ** 30), mg.int32));
    expectDevicesAgree(() => [mg.sum(x), mg.sum(mg.reshape(x, [30, 100]), 1), mg.prod(mg.reshape(x, [100, 30]), 0)], "int32 wrap");
  });
  test("max and min propagate NaN in every layout; infinities are ordinary values", () => {
    for (const dtype of GPU_FLOAT_DTYPES) {
      const v = new Float32Array(4 * 40).map((_, i) => Math.sin(i));
      v[5] = NaN; // row 0, early
      v[40 + 39] = NaN; // row 1, last
      v[80 + 3] = Infinity;
      v[120 + 17] = -Infinity;
      const x = onCpu(() => mg.astype(mg.array(v, null, { shape: [4, 40] }), dtype));
      const [mx, mn, all] = runOn(mg.gpu, () => [mg.max(x, 1), mg.min(x, 1), mg.max(x)]);
      const mxv = mx!.tolist() as number[];
      const mnv = mn!.tolist() as number[];
      expect(Number.isNaN(mxv[0]!) && Number.isNaN(mxv[1]!) && Number.isNaN(mnv[0]!) && Number.isNaN(mnv[1]!)).toBe(true);
      expect(mxv[2]).toBe(Infinity);
      expect(mnv[3]).toBe(-Infinity);
      expect(Number.isNaN(all!.item() as number)).toBe(true);
      const xt = onCpu(() => mg.transpose(x));
      expectDevicesAgree(() => [mg.max(x, 1), mg.min(x, 0), mg.max(xt, 0), mg.min(xt, 1), mg.max(x), mg.min(xt)], `NaN ${dtype.name}`);
    }
  });
  test("all / any on controlled rows (row, column and all layouts)", () => {
    const rows = [
      [1, 1, 1, 1, 1, 1, 1, 1],
      [0, 0, 0, 0, 0, 0, 0, 0],
      [1, 1, 1, 1, 1, 1, 1, 0],
      [0, 0, 0, 2, 0, 0, 0, 0],
    ];
    for (const dtype of [mg.bool_, mg.int8, mg.float32, mg.uint64]) {
      const x = onCpu(() => mg.astype(mg.array(rows), dtype));
      const [a, o, ac, oc] = runOn(mg.gpu, () => [mg.all(x, 1), mg.any(x, 1), mg.all(x, 0), mg.any(x, 0)]);
      expect(a!.tolist()).toEqual([true, false, false, false]);
      expect(o!.tolist()).toEqual([true, false, true, true]);
      expect(ac!.tolist()).toEqual([false, false, false, false, false, false, false, false]);
      expect(oc!.tolist()).toEqual([true, true, true, true, true, true, true, true]);
      expectDevicesAgree(() => [mg.all(x), mg.any(x), mg.all(mg.transpose(x), 0)], `all/any ${dtype.name}`);
    }
  });
  test("complex64: sums and products against the CPU; max/min order by real then imaginary part", () => {
    const re = [1, 3, 3, -2, 0.5, 3];
    const im = [2, -1, 5, 4, -0.25, 5];
    const z = mg.array(re.map((r, i) => ({ re: r, im: im[i]! })));
    expectDevicesAgree(() => [mg.sum(z), mg.prod(z), mg.sum(mg.reshape(z, [2, 3]), 0), mg.prod(mg.reshape(z, [3, 2]), 1)], "complex", accum(6));
    // The CPU reference reduces real parts only (imaginary parts are dropped), so these are
    // hand-checked: MLX orders complex numbers lexicographically, and any/all test both parts.
    const [mx, mn, any] = runOn(mg.gpu, () => [mg.max(z), mg.min(z), mg.any(mg.array([{ re: 0, im: 0 }, { re: 0, im: 2 }]))]);
    expect(mx!.item()).toEqual({ re: 3, im: 5 });
    expect(mn!.item()).toEqual({ re: -2, im: 4 });
    expect(any!.item()).toBe(true);
  });
});

describe("Reduce: the trace names the layout variant and the precision", () => {
  test("all, row, column and general", () => {
    const x = input([8, 1000], mg.float32, 14);
    const stepped = onCpu(() => sliceStatic(input([6, 16], mg.float32, 15), [0, 0], [6, 16], [1, 2]));
    const shortRows = input([300, 7], mg.float32, 18);
    const shortStepped = onCpu(() => sliceStatic(input([300, 14], mg.float32, 19), [0, 0], [300, 14], [1, 2]));
    const cases: [string, () => MgArray, string, string][] = [
      ["sum of everything", () => mg.sum(x), "all", "mg_reduce_all_sum_f32_f32"],
      ["sum over the contiguous last axis", () => mg.sum(x, 1), "row", "mg_reduce_row_sum_f32_f32"],
      ["sum over the strided first axis", () => mg.sum(x, 0), "column", "mg_reduce_col_sum_f32_f32"],
      ["max over the first axis of a transpose (contiguous in memory)", () => mg.max(mg.transpose(x), 0), "row", "mg_reduce_row_max_f32_f32"],
      ["sum over a stepped slice's last axis", () => mg.sum(stepped, 1), "general", "mg_reduce_general_sum_f32_f32"],
      ["many short rows: one thread per output", () => mg.sum(shortRows, 1), "row, 7 per output (one thread each)", "mg_reduce_col_sum_f32_f32"],
      ["many short strided rows", () => mg.max(shortStepped, 1), "general, 7 per output (one thread each)", "mg_reduce_col_max_f32_f32"],
    ];
    for (const [what, fn, layout, kernel] of cases) {
      const records = gpuTrace(fn).filter((r) => r.primitives.includes("Reduce"));
      expect(records.length, what).toBe(1);
      expect(records[0]!.layout, what).toBe(layout);
      expect(records[0]!.kernel, what).toBe(kernel);
      expect(records[0]!.notes, what).toEqual([]); // read in place: no copies
    }
    expectDevicesAgree(() => cases.map(([, fn]) => fn()), "trace cases", accum(8000));
    const [intRecord] = gpuTrace(() => mg.max(onCpu(() => mg.astype(x, mg.int16)), 1));
    expect(intRecord!.precision).toBe("exact");
  });
  test("the 64-bit index variants (forced on small arrays) agree too", () => {
    const x = input([6, 40], mg.float32, 16);
    const stepped = onCpu(() => sliceStatic(input([6, 80], mg.float32, 17), [0, 0], [6, 80], [1, 2]));
    const ops = () => [mg.sum(x), mg.sum(x, 1), mg.sum(x, 0), mg.sum(stepped, 1), mg.argmax(x, 1), mg.argmin(x, 0)];
    const previous = setForceLargeIndex(true);
    try {
      const records = gpuTrace(ops).filter((r) => r.primitives.some((p) => p === "Reduce" || p === "ArgReduce"));
      expect(records.length).toBe(6);
      expect(records.every((r) => r.layout.endsWith("large-index") && r.kernel.endsWith("_i64"))).toBe(true);
      expectDevicesAgree(ops, "large-index", accum(240));
    } finally {
      setForceLargeIndex(previous);
    }
  });
});

describe("Reduce: planning (no kernels)", () => {
  test("dimensions merge and the layout follows memory, not the logical axis order", () => {
    // (4, 1000) row-major: the last axis is a contiguous row, the first a column.
    expect(planReduce([4, 1000], [1000, 1], [1])).toMatchObject({ layout: "row", count: 1000, outputs: 4 });
    expect(planReduce([4, 1000], [1000, 1], [0])).toMatchObject({ layout: "column", kept: [{ size: 1000, stride: 1 }] });
    // Its transpose reduced over axis 0 reads contiguous rows.
    expect(planReduce([1000, 4], [1, 1000], [0]).layout).toBe("row");
    // Reduced axes 0 and 2 of a row-major (2, 3, 4): not one run; the kept middle is strided.
    expect(planReduce([2, 3, 4], [12, 4, 1], [0, 2])).toMatchObject({ layout: "general", reduced: [{ size: 2, stride: 12 }, { size: 4, stride: 1 }] });
    // Adjacent reduced axes merge into one run, size-1 axes vanish, reversed axes walk forwards.
    expect(planReduce([5, 1, 6, 7], [42, 42, 7, 1], [2, 3])).toMatchObject({ layout: "row", reduced: [{ size: 42, stride: 1 }] });
    expect(planReduce([6], [-1], [0])).toMatchObject({ layout: "all", baseShift: -5, reduced: [{ size: 6, stride: 1 }] });
    expect(planReduce([0, 3], [3, 1], [0]).layout).toBe("empty");
  });
  test("threadgroups are whole simdgroups within the pipeline's limit", () => {
    const pipeline = (max: number) => ({ name: "p", maxTotalThreadsPerThreadgroup: max }) as Pipeline;
    expect(simdThreadgroup(pipeline(1024), 5000, "sum")).toBe(1024);
    expect(simdThreadgroup(pipeline(1024), 70, "sum")).toBe(96);
    expect(simdThreadgroup(pipeline(100), 5000, "sum")).toBe(96);
    expect(simdThreadgroup(pipeline(1024), 0, "sum")).toBe(32);
    expect(() => simdThreadgroup(pipeline(16), 100, "sum")).toThrow("[sum] the pipeline p allows only 16 threads per threadgroup");
  });
});

describe("ArgReduce", () => {
  for (const dtype of GPU_DTYPES) {
    test(`argmax / argmin on ${dtype.name}: cooperative rows and walked lanes`, () => {
      const x = input([5, 40], dtype, 21);
      const short = input([6, 7], dtype, 22);
      expectDevicesAgree(
        () => [mg.argmax(x, 1), mg.argmin(x, 1), mg.argmax(x, 0), mg.argmin(x, 0), mg.argmax(short, 1), mg.argmin(short), mg.argmax(x)],
        `${dtype.name}`,
      );
    });
  }
  test("ties go to the first index, across simdgroups and threadgroup rounds", () => {
    const n = 1000;
    const v = new Float32Array(n).fill(1);
    v[700] = 5;
    v[500] = 5;
    v[999] = 5;
    v[300] = -5;
    v[600] = -5;
    const x = mg.array(v);
    const [amax, amin] = runOn(mg.gpu, () => [mg.argmax(x), mg.argmin(x)]);
    expect(amax!.item()).toBe(500);
    expect(amin!.item()).toBe(300);
    const flat = onCpu(() => mg.zeros([3, 64], mg.int32));
    const [z] = runOn(mg.gpu, () => mg.argmax(flat, 1));
    expect(z!.tolist()).toEqual([0, 0, 0]);
    const signed = mg.array([-0, 0, -0, 0, ...new Array(60).fill(-1)], mg.float32);
    const [s] = runOn(mg.gpu, () => mg.argmax(signed));
    expect(s!.item()).toBe(0); // -0 and 0 are equal: the first wins
  });
  test("the first NaN wins (MLX 0.32.4), across simdgroups and in long lanes", () => {
    const n = 64;
    const make = (nanAt: number[]) => {
      const v = new Float32Array(n).map((_, i) => Math.cos(i * 1.3));
      for (const k of nanAt) v[k] = NaN;
      return v;
    };
    const rows = [make([0]), make([10, 40]), make(Array.from({ length: n }, (_, i) => i)), make([n - 1]), make([])];
    const data = new Float32Array(rows.length * n);
    rows.forEach((r, i) => data.set(r, i * n));
    for (const dtype of GPU_FLOAT_DTYPES) {
      const x = onCpu(() => mg.astype(mg.array(data, null, { shape: [rows.length, n] }), dtype));
      const [amax, amin] = runOn(mg.gpu, () => [mg.argmax(x, 1), mg.argmin(x, 1)]);
      // The NaN-free row as stored in this dtype (rounding makes ties: the first index wins).
      const cosines = (onCpu(() => mg.astype(x, mg.float32)).tolist() as number[][])[4]!;
      // leading NaN, two NaNs (the first), all NaN, trailing NaN, none
      expect(amax!.tolist()).toEqual([0, 10, 0, n - 1, cosines.indexOf(Math.max(...cosines))]);
      expect(amin!.tolist()).toEqual([0, 10, 0, n - 1, cosines.indexOf(Math.min(...cosines))]);
      const xt = onCpu(() => mg.transpose(x));
      expectDevicesAgree(() => [mg.argmax(x, 1), mg.argmin(x, 1), mg.argmax(xt, 0), mg.argmin(xt, 0)], `NaN ${dtype.name}`);
    }
    // 5000 elements: each thread strides over the lane, NaNs are met out of order.
    const long = new Float32Array(5000).map((_, i) => Math.sin(i));
    long[4321] = NaN;
    long[1234] = NaN;
    long[2999] = NaN;
    const [lmax, lmin] = runOn(mg.gpu, () => [mg.argmax(mg.array(long)), mg.argmin(mg.array(long))]);
    expect([lmax!.item(), lmin!.item()]).toEqual([1234, 1234]);
  });
  test("layouts: transposed, sliced, broadcast and reversed views", () => {
    for (const dtype of [mg.float32, mg.int32]) {
      for (const [layout, x] of layouts([6, 50], dtype, 23)) {
        expectDevicesAgree(() => [mg.argmax(x, 1), mg.argmin(x, 0), mg.argmax(x, -1, true), mg.argmin(x)], `${dtype.name} ${layout}`);
      }
    }
  });
  test("zero-size inputs throw at op time", () => {
    const e = onCpu(() => mg.zeros([0, 3]));
    expect(() => mg.stream(mg.gpu, () => mg.argmax(e, 0))).toThrow(/\[argmax\] Cannot argmax reduce/);
    expect(() => mg.stream(mg.gpu, () => mg.argmin(e))).toThrow(/\[argmin\] Cannot argmin reduce/);
  });
  test("complex64 orders lexicographically (walked lanes)", () => {
    const z = mg.array([{ re: 1, im: 2 }, { re: 3, im: -1 }, { re: 3, im: 5 }, { re: -2, im: 9 }, { re: 3, im: 5 }]);
    const [amax, amin] = runOn(mg.gpu, () => [mg.argmax(z), mg.argmin(z)]);
    expect(amax!.item()).toBe(2);
    expect(amin!.item()).toBe(3);
    expectDevicesAgree(() => [mg.argmax(z), mg.argmin(z)], "complex");
  });
  test("the trace names the variant", () => {
    const x = input([4, 100], mg.float32, 24);
    const [row] = gpuTrace(() => mg.argmax(x, 1));
    const [col] = gpuTrace(() => mg.argmax(x, 0));
    expect([row!.layout, row!.kernel]).toEqual(["row", "mg_arg_reduce_row_argmax_f32"]);
    expect([col!.layout, col!.kernel]).toEqual(["column", "mg_arg_reduce_col_argmax_f32"]);
    expect(row!.outputDtypes).toEqual(["uint32"]);
  });
});
