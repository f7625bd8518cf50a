// Sorting kernels on the GPU device (the Metal simulator here) against the CPU device: sort and
// argsort bit for bit (the CPU sort is stable, NaN last), searchsorted exactly, and the partition
// property for partition/argpartition (any valid partition is allowed).
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import { sliceStatic } from "../../../ts/core/ops/slicing.ts";
import { GPU_DTYPES, layouts, runOn } from "./harness.ts";

// Kernels compile on first use in the simulator (~0.5 s per compiler run, more on a loaded machine),
// and bunfig's [test] timeout is not a setting bun reads: allow for compiles here.
setDefaultTimeout(120_000);

/** Raw bytes of an array's row-major values. */
function bytesOf(a: MgArray): Uint8Array {
  const d = a.dataSync();
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
}

/** Asserts two results are equal bit for bit (shape, dtype and every byte). */
function expectBitEqual(gpu: MgArray, cpu: MgArray, what: string): void {
  expect(gpu.shape, `${what} shape`).toEqual(cpu.shape);
  expect(gpu.dtype.name, `${what} dtype`).toBe(cpu.dtype.name);
  const g = bytesOf(gpu);
  const c = bytesOf(cpu);
  expect(g.length, `${what} bytes`).toBe(c.length);
  const item = cpu.dtype.size;
  for (let i = 0; i < c.length; i++) {
    if (g[i] !== c[i]) {
      const e = Math.floor(i / item);
      const at = (a: MgArray) => JSON.stringify(a.reshape(-1).index(e).item(), (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v));
      throw new Error(`${what}: element ${e} differs: gpu ${at(gpu)} vs cpu ${at(cpu)}`);
    }
  }
}

type Case = [what: string, fn: () => MgArray[]];

/**
 * Runs every case on both devices and asserts every output is bit-equal. The GPU side is one eval,
 * so the kernels all cases need compile together (one simulator compiler run, not one per case).
 */
function expectExact(cases: Case[]): void {
  const cpu = cases.map(([, fn]) => runOn(mg.cpu, fn));
  const gpu = runOn(mg.gpu, () => cases.flatMap(([, fn]) => fn()));
  let k = 0;
  cases.forEach(([what], c) => cpu[c]!.forEach((want, i) => expectBitEqual(gpu[k++]!, want, `${what}[${i}]`)));
  expect(k).toBe(gpu.length);
}

function lcg(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

/**
 * Values with many ties (a few levels) and, for floats, NaN, ±0 and ±inf sprinkled in — what
 * makes stability and the NaN/-0 rules observable. Built in float64/int64 on the CPU, then cast.
 */
function tiedInput(shape: number[], dtype: mg.Dtype, seed = 1, levels = 9): MgArray {
  const n = shape.reduce((a, b) => a * b, 1);
  const rnd = lcg(seed);
  let base: MgArray;
  if (dtype === mg.int64 || dtype === mg.uint64) {
    // Beyond 2^53 (and negative, which wraps to huge uint64 values): keys need all 64 bits.
    const big = [2n ** 62n + 1n, 2n ** 62n, -(2n ** 62n), 2n ** 53n + 1n, 2n ** 53n, -1n, 0n, 5n, -(2n ** 63n), 2n ** 63n - 1n];
    const v = BigInt64Array.from({ length: n }, () => big[Math.floor(rnd() * Math.min(levels, big.length))]!);
    base = mg.array(v, mg.int64, { shape });
  } else if (dtype === mg.complex64) {
    const parts = [-1, -0, 0, 0.5, 2, NaN, Infinity];
    const v = Array.from({ length: n }, () => {
      const re = parts[Math.floor(rnd() * 5)]!; // few real parts: ties broken by the imaginary part
      const im = rnd() < 0.08 ? parts[5 + Math.floor(rnd() * 2)]! : parts[Math.floor(rnd() * 5)]!;
      return { re, im };
    });
    base = n === 0 ? mg.zeros(shape, mg.complex64) : mg.reshape(mg.array(v), shape);
  } else {
    const isFloat = dtype.kind === "f";
    const specials = [NaN, -0, 0, Infinity, -Infinity];
    const v = Float64Array.from({ length: n }, () => {
      if (isFloat && rnd() < 0.1) return specials[Math.floor(rnd() * specials.length)]!;
      const k = Math.floor(rnd() * levels) - Math.floor(levels / 2);
      return isFloat ? k / 4 : dtype.kind === "u" ? k + levels : k;
    });
    base = mg.array(v, mg.float64, { shape });
  }
  const out = mg.stream(mg.cpu, () => mg.astype(base, dtype));
  mg.eval(out);
  return out;
}

function cpuView(fn: () => MgArray): MgArray {
  const r = mg.stream(mg.cpu, fn);
  mg.eval(r);
  return r;
}

describe("sort and argsort equal the CPU's stable sort bit for bit", () => {
  test("every GPU dtype, ties, NaN, -0 and infinities, along the last and the first axis", () => {
    expectExact(
      GPU_DTYPES.map((dtype): Case => {
        const x = tiedInput([5, 33], dtype, 3);
        return [dtype.name, () => [mg.sort(x), mg.argsort(x), mg.sort(x, 0), mg.argsort(x, 0), mg.argsort(x, null)]];
      }),
    );
  });

  test("layouts: contiguous, transposed, sliced, broadcast and reversed views, any axis", () => {
    const cases: Case[] = [];
    for (const dtype of [mg.float32, mg.int64, mg.float16]) {
      for (const [layout, x] of layouts([6, 40], dtype, 7)) {
        cases.push([`${dtype.name} ${layout}`, () => [mg.sort(x), mg.argsort(x), mg.sort(x, 0), mg.argsort(x, 0)]]);
      }
    }
    // A middle axis of a 3-D view whose other axes are permuted and sliced.
    const t = cpuView(() => sliceStatic(mg.transpose(tiedInput([8, 5, 6], mg.int32, 9), [2, 0, 1]), [1, 0, 0], [6, 8, 5], [2, 1, 1]));
    cases.push(["3-D view", () => [mg.sort(t, 1), mg.argsort(t, 1), mg.argsort(t, 0), mg.argsort(t, 2)]]);
    expectExact(cases);
  });

  test("row lengths 1, 7, 33, 1000 and 4097 (several threadgroups merged) on many rows", () => {
    const cases: Case[] = [1, 7, 33, 1000, 4097].map((n): Case => {
      const x = tiedInput([3, n], mg.float32, n, 40);
      return [`float32 n=${n}`, () => [mg.sort(x), mg.argsort(x)]];
    });
    const i64 = tiedInput([2, 4097], mg.int64, 11);
    cases.push(["int64 n=4097", () => [mg.sort(i64), mg.argsort(i64)]]);
    const c = tiedInput([4097], mg.complex64, 12);
    cases.push(["complex64 n=4097", () => [mg.sort(c), mg.argsort(c)]]);
    // Long strided rows: the sorted axis is the first of a (4097, 3) array and of its transpose.
    const col = tiedInput([4097, 3], mg.int16, 13, 50);
    const colT = cpuView(() => mg.transpose(tiedInput([3, 4097], mg.bfloat16, 14, 50)));
    cases.push(["strided long rows", () => [mg.sort(col, 0), mg.argsort(col, 0), mg.sort(colT, 0), mg.argsort(colT, 0)]]);
    // Many short rows: several rows share a threadgroup, over many threadgroups (and a partial last one).
    const many = tiedInput([1500, 7], mg.float32, 18, 6);
    cases.push(["1500 short rows", () => [mg.sort(many), mg.argsort(many), mg.argsort(mg.transpose(many), 0)]]);
    expectExact(cases);
  });

  test("one large row of 100,000 elements with heavy ties keeps index order across merge passes", () => {
    const x = tiedInput([100_000], mg.float32, 15, 1000);
    expectExact([["100000", () => [mg.sort(x), mg.argsort(x)]]]);
  });

  test("zero-size and one-element arrays", () => {
    for (const shape of [[0], [0, 4], [4, 0], [1], [1, 1]]) {
      const x = tiedInput(shape, mg.float32, 16);
      const [s, a] = runOn(mg.gpu, () => [mg.sort(x), mg.argsort(x, 0)]);
      expect(s!.shape).toEqual(shape);
      expect(a!.shape).toEqual(shape);
      expectExact([[`shape (${shape.join(",")})`, () => [mg.sort(x), mg.argsort(x, 0)]]]);
    }
  });

  test("hand-checked: stable ties, 0 and -0 equal (kept in order), NaN payloads and NaN last", () => {
    // 0x7fc00001 and 0x7fc00002: two NaNs with different payloads keep their order and bits.
    const bits = new Uint32Array([0x40400000, 0x7fc00002, 0x00000000, 0x80000000, 0x3f800000, 0x7fc00001, 0xbf800000, 0x3f800000]);
    const x = cpuView(() => mg.view(mg.array(bits, mg.uint32), mg.float32));
    const [s, a] = runOn(mg.gpu, () => [mg.sort(x), mg.argsort(x)]);
    expect(Array.from(a!.dataSync() as Uint32Array)).toEqual([6, 2, 3, 4, 7, 0, 1, 5]);
    expect(Array.from(new Uint32Array((s!.dataSync() as Float32Array).slice().buffer))).toEqual(
      [0xbf800000, 0x00000000, 0x80000000, 0x3f800000, 0x3f800000, 0x40400000, 0x7fc00002, 0x7fc00001],
    );
  });

  test("a long sort runs as block sort plus merge passes (trace)", () => {
    const x = tiedInput([2, 5000], mg.float32, 17);
    const records = mg.trace(() => mg.eval(mg.argsort(x, -1, { stream: mg.gpu }))).filter((r) => r.device === "gpu");
    expect(records.map((r) => r.kernel)).toEqual(["mg_sort_block_f32", "mg_sort_merge_f32", "mg_sort_merge_f32"]);
    expect(records[0]!.layout).toContain("3 blocks of 2048");
    expect(records.every((r) => r.precision === "exact")).toBe(true);
  });

  test("float64 is rejected on the GPU with a tagged error", () => {
    const x = mg.array([3, 1, 2], mg.float64);
    expect(() => mg.eval(mg.sort(x, -1, { stream: mg.gpu }))).toThrow("[sort] float64 is not supported on the GPU; run it on the CPU with { stream: mg.cpu } or cast with astype(mg.float32).");
  });
});

// ---------------------------------------------------------------------------------------------

describe("searchsorted", () => {
  test("left and right on every GPU dtype, values strided, NaN and ties", () => {
    expectExact(
      GPU_DTYPES.map((dtype): Case => {
        const seq = cpuView(() => mg.sort(tiedInput([40], dtype, 21), -1));
        // Every sequence element, other values, and the values transposed (a strided view).
        const vals = cpuView(() => mg.transpose(mg.concatenate([mg.reshape(seq, [5, 8]), tiedInput([5, 8], dtype, 22)], 1)));
        return [dtype.name, () => [mg.searchsorted(seq, vals), mg.searchsorted(seq, vals, "right")]];
      }),
    );
  });

  test("a strided sequence, scalar and empty values, an empty sequence", () => {
    const sorted = cpuView(() => mg.sort(tiedInput([61], mg.float32, 23, 20)));
    const stepped = cpuView(() => sliceStatic(sorted, [0], [61], [3]));
    const v = tiedInput([4, 6], mg.float32, 24, 20);
    expectExact([
      ["stepped sequence", () => [mg.searchsorted(stepped, v), mg.searchsorted(stepped, v, "right")]],
      ["scalar value", () => [mg.searchsorted(sorted, mg.array(0.25, mg.float32), "right")]],
    ]);
    const none = mg.zeros([0], mg.float32);
    const [e] = runOn(mg.gpu, () => mg.searchsorted(sorted, none));
    expect(e!.shape).toEqual([0]);
    expectExact([["empty sequence", () => [mg.searchsorted(none, v), mg.searchsorted(none, v, "right")]]]);
  });

  test("hand-checked insertion points", () => {
    const a = mg.array([1, 2, 2, 2, 5, NaN], mg.float32);
    const v = mg.array([0, 2, 3, 5, 6, NaN, -0], mg.float32);
    const [l, r] = runOn(mg.gpu, () => [mg.searchsorted(a, v), mg.searchsorted(a, v, "right")]);
    expect(Array.from(l!.dataSync() as Uint32Array)).toEqual([0, 1, 4, 4, 5, 5, 0]);
    expect(Array.from(r!.dataSync() as Uint32Array)).toEqual([0, 4, 4, 5, 5, 6, 0]);
  });
});

// ---------------------------------------------------------------------------------------------

/** A total order on numbers with NaN last (NaNs equal), as the sort's. */
function cmp(x: number | bigint, y: number | bigint): number {
  if (typeof x === "bigint" || typeof y === "bigint") return x < y ? -1 : x > y ? 1 : 0;
  const xn = Number.isNaN(x);
  const yn = Number.isNaN(y);
  if (xn || yn) return xn === yn ? 0 : xn ? 1 : -1;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Checks that each row (along the last axis) of `got` is a partition around `kth` of `x`'s row. */
function expectPartition(x: MgArray, got: MgArray, kth: number, what: string): void {
  const n = x.shape[x.ndim - 1]!;
  const k = kth < 0 ? kth + n : kth;
  const xs = Array.from(x.dataSync() as ArrayLike<number | bigint>);
  const gs = Array.from(got.dataSync() as ArrayLike<number | bigint>);
  for (let r = 0; r < xs.length / n; r++) {
    const row = gs.slice(r * n, r * n + n);
    const want = xs.slice(r * n, r * n + n).sort(cmp);
    // Same multiset, the kth element in its sorted place, none smaller after it nor larger before.
    expect([...row].sort(cmp).map(String), `${what} row ${r} is a permutation`).toEqual(want.map(String));
    expect(cmp(row[k]!, want[k]!), `${what} row ${r} kth`).toBe(0);
    for (let i = 0; i < n; i++) {
      const c = cmp(row[i]!, row[k]!);
      if ((i < k && c > 0) || (i > k && c < 0)) throw new Error(`${what} row ${r}: element ${i} is on the wrong side of kth ${k}`);
    }
  }
}

describe("partition and argpartition: the partition property", () => {
  test("values and indices around several kth, both axes, floats with NaN, int32, int64", () => {
    for (const dtype of [mg.float32, mg.float16, mg.int32, mg.int64]) {
      const x = tiedInput([4, 37], dtype, 31, 12);
      for (const kth of [0, 5, 18, -1]) {
        const [p, ap, p0] = runOn(mg.gpu, () => [mg.partition(x, kth), mg.argpartition(x, kth), mg.partition(x, kth % 4, 0)]);
        expectPartition(x, p!, kth, `${dtype.name} partition kth=${kth}`);
        const taken = cpuView(() => mg.takeAlongAxis(x, ap!, -1));
        expectPartition(x, taken, kth, `${dtype.name} argpartition kth=${kth}`);
        const xt = cpuView(() => mg.swapaxes(x, 0, 1));
        expectPartition(xt, cpuView(() => mg.swapaxes(p0!, 0, 1)), kth % 4, `${dtype.name} partition axis 0 kth=${kth % 4}`);
      }
    }
  });

  test("long rows (multi-block) and topk", () => {
    const x = tiedInput([2, 5000], mg.float32, 32, 300);
    const [p, ap, top] = runOn(mg.gpu, () => [mg.partition(x, 2500), mg.argpartition(x, -3), mg.topk(x, 10)]);
    expectPartition(x, p!, 2500, "partition 5000");
    expectPartition(x, cpuView(() => mg.takeAlongAxis(x, ap!, -1)), -3, "argpartition 5000");
    const [cpuTop] = runOn(mg.cpu, () => mg.topk(x, 10));
    expectBitEqual(cpuView(() => mg.sort(top!)), cpuView(() => mg.sort(cpuTop!)), "topk multiset");
  });

  test("the trace says a partition is a full sort", () => {
    const x = tiedInput([9], mg.int32, 33);
    const [rec] = mg.trace(() => mg.eval(mg.partition(x, 4, -1, { stream: mg.gpu }))).filter((r) => r.device === "gpu");
    expect(rec!.primitives).toEqual(["Partition"]);
    expect(rec!.notes.join(" ")).toContain("full sort");
  });
});
