// Cumulative reductions (Scan) on the GPU device (the Metal simulator here) against the CPU device,
// plus hand-derived facts: exact 64-bit prefix sums, NaN propagation, the identities exclusive
// scans start from, and what the trace reports.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import type { TraceRecord } from "../../../ts/core/trace.ts";
import { GpuEncoder, setForceLargeIndex } from "../../../ts/backend/gpu/encoder.ts";
import { sliceStatic } from "../../../ts/core/ops/slicing.ts";
import { accumulationTolerance } from "../../../ts/testing/tolerances.ts";
import { expectClose, expectDevicesAgree, GPU_DTYPES, GPU_FLOAT_DTYPES, input, layouts, runOn } from "./harness.ts";

const accum = (n: number) => (d: mg.Dtype) => accumulationTolerance(d, n);

function onCpu(fn: () => MgArray): MgArray {
  const r = mg.stream(mg.cpu, fn);
  mg.eval(r);
  return r;
}

function gpuTrace(fn: () => MgArray | MgArray[]): TraceRecord[] {
  return mg.trace(() => mg.stream(mg.gpu, fn)).filter((r) => r.device === "gpu" && r.primitives.includes("Scan"));
}

const DIRECTIONS = [
  { reverse: false, inclusive: true },
  { reverse: true, inclusive: true },
  { reverse: false, inclusive: false },
  { reverse: true, inclusive: false },
];

describe("Scan: every op on every GPU dtype", () => {
  for (const dtype of GPU_DTYPES) {
    test(dtype.name, () => {
      // |x| ≤ 1.5 keeps 40-term products in range for every float dtype.
      const x = input([4, 40], dtype, 31, -1.5, 1.5);
      const floating = dtype.kind === "f";
      // 8- and 16-bit products wrap after a few terms; the CPU reference multiplies them in
      // float64, which loses the low bits past 2^53, so they are checked against an exact int64
      // product cast down (2^8 and 2^16 divide 2^64) instead.
      const narrow = (dtype.kind === "i" || dtype.kind === "u") && dtype.size < 4;
      // Row scans for every dtype (the per-dtype code is shared with the column kernel, which
      // the direction tests below run on float32, int32 and int64).
      expectDevicesAgree(
        () => [
          mg.cumsum(x, 1), mg.cummax(x, 1), mg.cummin(x, 1, { reverse: true }),
          ...(narrow ? [] : [mg.cumprod(x, 1)]),
          ...(floating ? [mg.logcumsumexp(x, 1, { inclusive: false })] : []),
        ],
        dtype.name,
        accum(40),
      );
      if (narrow) {
        const gpu = runOn(mg.gpu, () => [mg.cumprod(x, 1), mg.cumprod(x, 1, { reverse: true, inclusive: false })]);
        const exact = runOn(mg.cpu, () => {
          const wide = mg.astype(x, mg.int64);
          return [mg.astype(mg.cumprod(wide, 1), dtype), mg.astype(mg.cumprod(wide, 1, { reverse: true, inclusive: false }), dtype)];
        });
        gpu.forEach((g, i) => expectClose(g, exact[i]!, undefined, `${dtype.name} cumprod ${i}`));
      }
    });
  }
});

describe("Scan: directions, sizes and layouts", () => {
  test("reverse and exclusive, row and column, every op", () => {
    for (const dtype of [mg.float32, mg.int32, mg.int64]) {
      const x = input([3, 45], dtype, 32, -1.5, 1.5);
      expectDevicesAgree(
        () =>
          DIRECTIONS.flatMap((o) => [
            mg.cumsum(x, 1, o), mg.cumprod(x, 0, o),
            // Exclusive max/min start from the type's extreme: the CPU differs for 8–32-bit
            // integers (tested below), so those are compared inclusive only.
            ...(o.inclusive || dtype !== mg.int32 ? [mg.cummax(x, 1, o), mg.cummin(x, 0, o)] : []),
            ...(dtype === mg.float32 ? [mg.logcumsumexp(x, 1, o), mg.logcumsumexp(x, 0, o)] : []),
          ]),
        dtype.name,
        accum(45),
      );
    }
  });
  // Rows of 33 and 1000: a threadgroup of one simdgroup; 4097: several simdgroups.
  for (const n of [1, 7, 33, 1000, 4097]) {
    test(`n = ${n}`, () => {
      for (const dtype of [mg.float32, mg.bfloat16, mg.int64]) {
        const rows = input([2, n], dtype, n + 40);
        const cols = input([n, 3], dtype, n + 41);
        expectDevicesAgree(
          () => [
            mg.cumsum(rows, 1), mg.cummax(rows, 1, { reverse: true }), mg.cumsum(rows, 1, { inclusive: false }),
            mg.cumsum(cols, 0), mg.cummin(cols, 0, { reverse: true }), mg.cumsum(cols, 0, { reverse: true, inclusive: false }),
          ],
          `${dtype.name} n=${n}`,
          accum(n),
        );
      }
    });
  }
  test("rows of several chunks carry from chunk to chunk", () => {
    // A chunk is 1024 threads × 32 elements (16 for 8-byte accumulators): 33000 is 2 and 3 chunks.
    for (const dtype of [mg.float32, mg.int64]) {
      const x = input([1, 33000], dtype, 42);
      expectDevicesAgree(() => [mg.cumsum(x, 1), mg.cumsum(x, 1, { reverse: true, inclusive: false })], `${dtype.name} 33000`, accum(33000));
    }
  });
  test("a threadgroup of one simdgroup carries from chunk to chunk (a pipeline limited to 32 threads)", () => {
    // The host gives a row of more than 1024 elements several simdgroups; a pipeline that allows
    // only 32 threads gets one, whose carry comes from its last lane (broadcast_lane).
    const dispatch = GpuEncoder.prototype.dispatch;
    GpuEncoder.prototype.dispatch = function (d, trace) {
      dispatch.call(this, d.pipeline.name.startsWith("mg_scan_row") ? { ...d, threadgroup: [32, 1, 1] } : d, trace);
    };
    try {
      for (const dtype of [mg.float32, mg.int64, mg.complex64]) {
        const x = input([2, 3000], dtype, 43);
        expectDevicesAgree(
          () => [mg.cumsum(x, 1), mg.cumsum(x, 1, { reverse: true, inclusive: false }), ...(dtype === mg.complex64 ? [] : [mg.cummax(x, 1)])],
          `${dtype.name} 3000 in 32 threads`,
          accum(3000),
        );
      }
    } finally {
      GpuEncoder.prototype.dispatch = dispatch;
    }
  });
  test("float32 unit-stride runs (read and written 4 at a time) give the element loops' bits", () => {
    // The same values scanned three ways, every op and direction: a contiguous row (whole
    // 32-element runs read and written as packed_float4), every second element of a wider row
    // (stride 2: read by the element loop) and a transposed column (read as packed_float4, written
    // by the element loop, the output's axis stride being 2).
    const n = 1000;
    const wide = input([2, 2 * n], mg.float32, 44, -1.5, 1.5);
    const strided = onCpu(() => sliceStatic(wide, [0, 0], [2, 2 * n], [1, 2]));
    const contiguous = onCpu(() => mg.contiguous(strided));
    const column = onCpu(() => mg.transpose(contiguous));
    const ops = (x: MgArray, axis: number) =>
      DIRECTIONS.flatMap((o) => [mg.cumsum(x, axis, o), mg.cumprod(x, axis, o), mg.cummax(x, axis, o), mg.cummin(x, axis, o), mg.logcumsumexp(x, axis, o)]);
    const bits = (a: MgArray) => Array.from(new Uint32Array((onCpu(() => mg.contiguous(a)).dataSync() as Float32Array).slice().buffer));
    const fast = runOn(mg.gpu, () => ops(contiguous, 1));
    const readLoop = runOn(mg.gpu, () => ops(strided, 1));
    const writeLoop = runOn(mg.gpu, () => ops(column, 0));
    fast.forEach((f, i) => {
      expect(bits(f), `op ${i}, strided`).toEqual(bits(readLoop[i]!));
      expect(bits(f), `op ${i}, transposed`).toEqual(bits(onCpu(() => mg.transpose(writeLoop[i]!))));
    });
  });
  test("contiguous, transposed, sliced, broadcast and reversed views along every axis", () => {
    for (const [layout, x] of layouts([5, 40], mg.float32, 33)) {
      expectDevicesAgree(
        () => [0, 1, -1].flatMap((axis) => DIRECTIONS.flatMap((o) => [mg.cumsum(x, axis, o), mg.cummax(x, axis, o)])),
        layout,
        accum(40),
      );
    }
    const t3 = onCpu(() => mg.transpose(input([6, 50, 4], mg.float32, 34), [2, 1, 0]));
    expectDevicesAgree(() => [mg.cumsum(t3, 1), mg.cumprod(t3, 0, { reverse: true }), mg.logcumsumexp(t3, 2), mg.cumsum(t3)], "transposed 3-d", accum(1200));
  });
  test("zero-size and one-element inputs", () => {
    const e = onCpu(() => mg.zeros([0, 3]));
    const [a, b] = runOn(mg.gpu, () => [mg.cumsum(e, 0), mg.cummax(e, 1)]);
    expect(a!.shape).toEqual([0, 3]);
    expect(b!.shape).toEqual([0, 3]);
    const one = input([1], mg.float32, 35);
    expectDevicesAgree(() => [mg.cumsum(one), mg.cumprod(one, 0, { inclusive: false }), mg.cummax(one, 0, { reverse: true })], "one element");
  });
});

describe("Scan: numerics", () => {
  test("64-bit integer prefix sums and products are exact and wrap like C", () => {
    const big = [2n ** 40n + 3n, -(2n ** 52n) + 7n, 2n ** 61n, 123456789012345n, -(2n ** 62n), 2n ** 62n + 1n];
    const x = mg.array(BigInt64Array.from(big));
    const [s, p, se] = runOn(mg.gpu, () => [mg.cumsum(x), mg.cumprod(x), mg.cumsum(x, 0, { reverse: true, inclusive: false })]);
    let acc = 0n;
    let prod = 1n;
    expect(s!.tolist()).toEqual(big.map((v) => (acc = BigInt.asIntN(64, acc + v))));
    expect(p!.tolist()).toEqual(big.map((v) => (prod = BigInt.asIntN(64, prod * v))));
    let suffix = 0n;
    const expected = new Array<bigint>(big.length);
    for (let i = big.length - 1; i >= 0; i--) {
      expected[i] = suffix;
      suffix = BigInt.asIntN(64, suffix + big[i]!);
    }
    expect(se!.tolist()).toEqual(expected);
    const u = mg.array(BigUint64Array.from([2n ** 63n + 11n, 2n ** 63n + 5n, 2n ** 62n]));
    expectDevicesAgree(() => [mg.cumsum(x), mg.cumprod(x), mg.cumsum(u), mg.cummax(u), mg.cummin(x, 0, { reverse: true })], "64-bit");
  });
  test("cummax / cummin propagate NaN from where it appears; logcumsumexp handles infinities", () => {
    for (const dtype of GPU_FLOAT_DTYPES) {
      const v = new Float32Array(2 * 50).map((_, i) => Math.sin(i));
      v[20] = NaN;
      v[50 + 45] = NaN;
      const x = onCpu(() => mg.astype(mg.array(v, null, { shape: [2, 50] }), dtype));
      const [mx, mnr] = runOn(mg.gpu, () => [mg.cummax(x, 1), mg.cummin(x, 1, { reverse: true })]);
      const m = mx!.tolist() as number[][];
      expect(m[0]!.slice(0, 20).some(Number.isNaN)).toBe(false);
      expect(m[0]!.slice(20).every(Number.isNaN)).toBe(true);
      const r = mnr!.tolist() as number[][];
      expect(r[1]!.slice(0, 46).every(Number.isNaN)).toBe(true);
      expect(r[1]!.slice(46).some(Number.isNaN)).toBe(false);
      const w = new Float32Array(40).map((_, i) => (i % 3 === 0 ? -Infinity : i / 10));
      w[30] = Infinity;
      const y = onCpu(() => mg.astype(mg.array(w), dtype));
      const allNegInf = onCpu(() => mg.astype(mg.full([35], -Infinity), dtype));
      expectDevicesAgree(
        () => [mg.cummax(x, 1), mg.cummin(x, 1, { reverse: true }), mg.cummax(mg.transpose(x), 0), mg.logcumsumexp(y), mg.logcumsumexp(y, 0, { reverse: true, inclusive: false }), mg.logcumsumexp(allNegInf)],
        `specials ${dtype.name}`,
        accum(50),
      );
      const [l] = runOn(mg.gpu, () => mg.logcumsumexp(allNegInf));
      expect((l!.tolist() as number[]).every((z) => z === -Infinity)).toBe(true);
    }
  });
  test("exclusive cummax / cummin start from the type's lowest / highest value (MLX's Limits)", () => {
    const base = mg.array([3, 1, 5, 2]);
    const cases: [mg.Dtype, number | bigint | boolean, number | bigint | boolean][] = [
      [mg.int8, -128, 127], [mg.uint8, 0, 255], [mg.int16, -32768, 32767], [mg.uint16, 0, 65535],
      [mg.int32, -(2 ** 31), 2 ** 31 - 1], [mg.uint32, 0, 2 ** 32 - 1], [mg.int64, -(2n ** 63n), 2n ** 63n - 1n],
      [mg.uint64, 0n, 2n ** 64n - 1n], [mg.bool_, false, true], [mg.float32, -Infinity, Infinity], [mg.bfloat16, -Infinity, Infinity],
    ];
    for (const [dtype, lowest, highest] of cases) {
      const x = onCpu(() => mg.astype(base, dtype));
      const [mx, mn] = runOn(mg.gpu, () => [mg.cummax(x, 0, { inclusive: false }), mg.cummin(x, 0, { inclusive: false, reverse: true })]);
      const mxv = mx!.tolist() as unknown[];
      const mnv = mn!.tolist() as unknown[];
      expect([mxv[0], mnv[3]], dtype.name).toEqual([lowest, highest]);
      const [mxi, mni] = runOn(mg.gpu, () => [mg.cummax(x, 0), mg.cummin(x, 0, { reverse: true })]);
      // Each exclusive output is the inclusive one a step earlier in scan order.
      expect(mxv.slice(1), dtype.name).toEqual((mxi!.tolist() as unknown[]).slice(0, 3));
      expect(mnv.slice(0, 3), dtype.name).toEqual((mni!.tolist() as unknown[]).slice(1));
    }
  });
  test("float16 prefix sums accumulate in float32", () => {
    const ones = onCpu(() => mg.ones([4096], mg.float16));
    const [c] = runOn(mg.gpu, () => mg.cumsum(ones));
    const v = c!.tolist() as number[];
    expect(v[4095]).toBe(4096); // a half accumulator stalls at 2048
    expect(v[2049]).toBe(2050); // exactly representable in half
    expect(v[2050]).toBe(2052); // 2051 is not: it rounds to even
  });
});

describe("Scan: the trace", () => {
  test("names the variant, the direction and the precision", () => {
    const x = input([4, 100], mg.float16, 36);
    const i = input([4, 100], mg.int64, 37);
    const [row] = gpuTrace(() => mg.cumsum(x, 1));
    const [col] = gpuTrace(() => mg.cumsum(x, 0, { reverse: true, inclusive: false }));
    const [mx] = gpuTrace(() => mg.cummax(x, 1));
    const [is] = gpuTrace(() => mg.cumsum(i, 1));
    expect([row!.kernel, row!.layout, row!.precision]).toEqual(["mg_scan_row_sum_f16_f16", "row (forward, inclusive)", "fp32 accumulate over fp16 operands"]);
    expect([col!.kernel, col!.layout]).toEqual(["mg_scan_col_sum_f16_f16", "column (reverse, exclusive)"]);
    expect(mx!.precision).toBe("exact");
    expect(is!.precision).toBe("exact (wrapping 64-bit integer accumulate)");
    expect([row, col, mx, is].every((r) => r!.notes.length === 0)).toBe(true); // strided reads, no copies
  });
  test("the 64-bit index variants (forced on small arrays) agree", () => {
    const x = input([5, 60], mg.float32, 38);
    const ops = () => [mg.cumsum(x, 1), mg.cummax(x, 0, { reverse: true }), mg.logcumsumexp(x, 1, { inclusive: false })];
    const previous = setForceLargeIndex(true);
    try {
      const records = gpuTrace(ops);
      expect(records.length).toBe(3);
      expect(records.every((r) => r.layout.endsWith("large-index") && r.kernel.endsWith("_i64"))).toBe(true);
      expectDevicesAgree(ops, "large-index", accum(60));
    } finally {
      setForceLargeIndex(previous);
    }
  });
});
