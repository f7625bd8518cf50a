// The native CPU kernels (Sources/MGCpu) against the TypeScript reference kernels, per primitive
// and dtype, on random, special-value, strided, broadcast, empty and huge (broadcast) inputs; plus
// the properties the native device promises: fused = unfused bit for bit, thread counts 1 and N
// give the same bits, both instruction sets agree with the reference, documented ulp bounds.
import { afterAll, describe, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import type { Dtype } from "../../../ts/core/dtype.ts";
import { makeArray, makeNode } from "../../../ts/core/graph.ts";
import { defaultStream } from "../../../ts/core/device.ts";
import type { Primitive } from "../../../ts/core/primitive.ts";
import * as P from "../../../ts/core/primitives/elementwise.ts";
import {
  nativeInfo, setCpuFusion, setNativeCpu, setNativeIsa, setNativeThreads,
} from "../../../ts/backend/cpu/native/index.ts";
import { native } from "../../../ts/backend/cpu/native/ffi.ts";
import { accumulationTolerance, normalizedTolerance, type Tolerance, toleranceFor } from "../../../ts/testing/tolerances.ts";

const S = { stream: mg.cpu };
const D = defaultStream(mg.cpu);

afterAll(() => {
  setNativeCpu(true);
  setCpuFusion(true);
  setNativeThreads(0);
  setNativeIsa("best");
});

const ALL: Dtype[] = [
  mg.bool_, mg.uint8, mg.uint16, mg.uint32, mg.uint64, mg.int8, mg.int16, mg.int32, mg.int64,
  mg.float16, mg.float32, mg.float64, mg.bfloat16, mg.complex64,
];
const FLOATS: Dtype[] = [mg.float16, mg.float32, mg.float64, mg.bfloat16];

// ---- deterministic inputs ---------------------------------------------------------------------------

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

const FLOAT_SPECIALS = [0, -0, 1, -1, 0.5, -0.5, 2, -2.5, 3, 1e-3, -7.25, 1e30, -1e30, 1e-40, 65504, 1e5,
  Infinity, -Infinity, NaN, 5e-324, 0.9999, -0.9999, 88.7, -103.5, 10, 100];

function intRange(d: Dtype): [bigint, bigint] {
  const bits = BigInt(d.size * 8);
  return d.kind === "u" ? [0n, (1n << bits) - 1n] : [-(1n << (bits - 1n)), (1n << (bits - 1n)) - 1n];
}

/** n values of dtype d as JS leaves (mg.array writes them without running a kernel). */
function leaves(d: Dtype, n: number, seed: number): unknown[] {
  const r = rng(seed);
  const out: unknown[] = [];
  if (d === mg.bool_) {
    for (let i = 0; i < n; i++) out.push(r() < 0.5);
    return out;
  }
  if (d === mg.complex64) {
    for (let i = 0; i < n; i++) {
      const re = i < FLOAT_SPECIALS.length ? FLOAT_SPECIALS[i]! : (r() - 0.5) * 8;
      const im = i % 3 === 0 ? 0 : i < FLOAT_SPECIALS.length ? FLOAT_SPECIALS[(i * 7) % FLOAT_SPECIALS.length]! : (r() - 0.5) * 8;
      out.push({ re, im });
    }
    return out;
  }
  if (d.kind === "i" || d.kind === "u") {
    const [lo, hi] = intRange(d);
    const specials = [0n, 1n, 2n, 3n, 7n, 31n, 33n, 64n, lo, hi, lo + 1n, hi - 1n];
    if (d.kind === "i") specials.push(-1n, -2n, -7n, -33n);
    for (let i = 0; i < n; i++) {
      let v: bigint;
      if (i < specials.length) v = specials[i]!;
      else if (r() < 0.5) v = BigInt(Math.floor((r() - (d.kind === "i" ? 0.5 : 0)) * 200));
      else v = lo + BigInt(Math.floor(r() * 2 ** 52)) * ((hi - lo) / 2n ** 52n);
      if (v < lo) v = lo;
      if (v > hi) v = hi;
      out.push(d.size === 8 ? v : Number(v));
    }
    return out;
  }
  for (let i = 0; i < n; i++) out.push(i < FLOAT_SPECIALS.length ? FLOAT_SPECIALS[i]! : (r() - 0.5) * (r() < 0.2 ? 200 : 6));
  return out;
}

/** An evaluated input of shape [n] of dtype d (written directly, no kernel). */
function input(d: Dtype, n: number, seed: number): MgArray {
  const a = mg.array(leaves(d, n, seed) as never, d);
  mg.eval(a);
  return a;
}

/** Evaluates under the reference kernels (for building strided/broadcast views). */
function ref<T>(fn: () => T): T {
  const prev = setNativeCpu(false);
  try {
    const out = fn();
    mg.eval(out as never);
    return out;
  } finally {
    setNativeCpu(prev);
  }
}

// ---- comparison --------------------------------------------------------------------------------------

function values(a: MgArray): (number | bigint | boolean)[] {
  const data = a.dataSync();
  if (a.dtype === mg.bool_) return Array.from(data as Uint8Array, (x) => x !== 0);
  return Array.from(data as ArrayLike<number | bigint>);
}

function sameNumber(x: number, y: number): boolean {
  return Object.is(x, y) || (Number.isNaN(x) && Number.isNaN(y));
}

/** Exact agreement (NaN matches NaN; +0 and −0 differ). */
function expectExact(got: MgArray, want: MgArray, what: string): void {
  expect(got.shape, what).toEqual(want.shape);
  expect(got.dtype.name, what).toBe(want.dtype.name);
  const g = values(got);
  const w = values(want);
  for (let i = 0; i < w.length; i++) {
    const x = g[i]!;
    const y = w[i]!;
    const ok = typeof x === "number" && typeof y === "number" ? sameNumber(x, y) : x === y;
    if (!ok) throw new Error(`${what}: element ${i}: native ${String(x)} vs reference ${String(y)}`);
  }
}

function expectClose(got: MgArray, want: MgArray, tol: Tolerance, what: string): void {
  expect(got.shape, what).toEqual(want.shape);
  expect(got.dtype.name, what).toBe(want.dtype.name);
  const g = values(got);
  const w = values(want);
  for (let i = 0; i < w.length; i++) {
    const x = g[i]!;
    const y = w[i]!;
    if (typeof x !== "number" || typeof y !== "number") {
      if (x !== y) throw new Error(`${what}: element ${i}: native ${String(x)} vs reference ${String(y)}`);
      continue;
    }
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      if (!sameNumber(x, y) && x !== y) throw new Error(`${what}: element ${i}: native ${x} vs reference ${y}`);
      continue;
    }
    if (Math.abs(x - y) > tol.atol + tol.rtol * Math.abs(y)) {
      throw new Error(`${what}: element ${i}: native ${x} vs reference ${y} (rtol ${tol.rtol}, atol ${tol.atol})`);
    }
  }
}

/** Raw bytes of an array's values (row-major), for bit-for-bit comparisons. */
function bytes(a: MgArray): Uint8Array {
  const d = a.dataSync();
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength).slice();
}

function expectSameBits(x: MgArray, y: MgArray, what: string): void {
  const a = bytes(x);
  const b = bytes(y);
  expect(a.length, what).toBe(b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) throw new Error(`${what}: byte ${i} differs (${a[i]} vs ${b[i]})`);
}

/** Builds with `build` twice — native, then reference — and returns both results or both errors. */
function both(build: () => MgArray[]): { native: MgArray[] | Error; reference: MgArray[] | Error } {
  const run = (on: boolean) => {
    const prev = setNativeCpu(on);
    try {
      const out = build();
      mg.eval(out);
      return out;
    } catch (e) {
      return e as Error;
    } finally {
      setNativeCpu(prev);
    }
  };
  return { native: run(true), reference: run(false) };
}

// Elementwise ops whose native float results must equal the reference exactly (one rounding of an
// exact result, or no rounding at all).
const EXACT_FLOAT_OPS = new Set<Primitive<any>>([
  P.Abs, P.Negative, P.Sign, P.Square, P.Sqrt, P.Floor, P.Ceil, P.Round, P.Conjugate, P.Real, P.Imag,
  P.Add, P.Subtract, P.Multiply, P.Divide, P.Maximum, P.Minimum, P.Equal, P.EqualNan, P.NotEqual,
  P.Greater, P.GreaterEqual, P.Less, P.LessEqual, P.LogicalNot, P.LogicalAnd, P.LogicalOr,
  P.Remainder, P.FloorDivide, P.Select, P.AsType, P.DivMod,
]);

function compareResults(record: Primitive<any>, r: ReturnType<typeof both>, what: string, tol?: (d: Dtype) => Tolerance): void {
  if (r.reference instanceof Error) {
    // BigInt shifts by huge counts exhaust the reference's memory; the native kernel defines them
    // (0, or the sign) and is checked in "64-bit shifts" below
    if (r.reference.message.includes("BigInt generated from this operation is too big")) return;
    // the reference rejects this case: the native device must reject it the same way
    expect(r.native instanceof Error ? r.native.message : "ran", what).toBe(r.reference.message);
    return;
  }
  if (r.native instanceof Error) throw new Error(`${what}: native failed: ${r.native.message}`);
  r.native.forEach((out, k) => {
    const want = r.reference instanceof Error ? null : r.reference[k]!;
    const d = want!.dtype;
    const exact = !(d.kind === "f" || d.kind === "V" || d.kind === "c") || EXACT_FLOAT_OPS.has(record);
    if (exact && !tol) expectExact(out, want!, `${what}[${k}]`);
    else expectClose(out, want!, tol ? tol(d) : toleranceFor(d), `${what}[${k}]`);
  });
}

// ---- elementwise ----------------------------------------------------------------------------------------

const UNARY = [P.Abs, P.Negative, P.Sign, P.Square, P.Sqrt, P.Rsqrt, P.Exp, P.Expm1, P.Log, P.Log2, P.Log10,
  P.Log1p, P.Sin, P.Cos, P.Tan, P.ArcSin, P.ArcCos, P.ArcTan, P.Sinh, P.Cosh, P.Tanh, P.ArcSinh, P.ArcCosh,
  P.ArcTanh, P.Floor, P.Ceil, P.Round, P.Sigmoid, P.Erf, P.ErfInv, P.LogicalNot, P.BitwiseInvert,
  P.Conjugate, P.Real, P.Imag];
const BINARY = [P.Add, P.Subtract, P.Multiply, P.Divide, P.FloorDivide, P.Remainder, P.Power, P.Maximum,
  P.Minimum, P.LogAddExp, P.ArcTan2, P.Equal, P.EqualNan, P.NotEqual, P.Greater, P.GreaterEqual, P.Less,
  P.LessEqual, P.LogicalAnd, P.LogicalOr, P.BitwiseAnd, P.BitwiseOr, P.BitwiseXor, P.LeftShift, P.RightShift];

// f32 transcendental results of the vectorised math differ from the reference's rounded float64
// by a few ulp; elsewhere the tolerance rows of ts/testing/tolerances.ts apply.
const N = 1100; // crosses one 1024-element tile boundary

describe("native elementwise = reference, every primitive and dtype", () => {
  for (const dtype of ALL) {
    test(`unary on ${dtype.name} (contiguous and strided)`, () => {
      const x = input(dtype, N, 11);
      const xt = ref(() => mg.transpose(mg.reshape(input(dtype, 30 * 37, 12), [30, 37]), undefined, S));
      for (const record of UNARY) {
        compareResults(record, both(() => [makeArray(record, [x], null, D)]), `${record.name} ${dtype.name}`);
        compareResults(record, both(() => [makeArray(record, [xt], null, D)]), `${record.name} ${dtype.name} strided`);
      }
    });
    test(`binary on ${dtype.name} (contiguous, strided, broadcast)`, () => {
      const a = input(dtype, N, 21);
      const b = input(dtype, N, 22);
      const at = ref(() => mg.transpose(mg.reshape(input(dtype, 30 * 37, 23), [30, 37]), undefined, S));
      const row = ref(() => mg.broadcastTo(input(dtype, 30, 24), [37, 30], S));
      const scalar = ref(() => mg.broadcastTo(mg.array(leaves(dtype, 1, 25) as never, dtype).reshape([]), [37, 30], S));
      for (const record of BINARY) {
        compareResults(record, both(() => [makeArray(record, [a, b], null, D)]), `${record.name} ${dtype.name}`);
        compareResults(record, both(() => [makeArray(record, [at, row], null, D)]), `${record.name} ${dtype.name} strided×broadcast`);
        compareResults(record, both(() => [makeArray(record, [scalar, at], null, D)]), `${record.name} ${dtype.name} scalar×strided`);
      }
      compareResults(P.DivMod, both(() => makeNode(P.DivMod, [a, b], null, D)), `DivMod ${dtype.name}`);
      const c = input(mg.bool_, N, 26);
      compareResults(P.Select, both(() => [makeArray(P.Select, [c, a, b], null, D)]), `Select ${dtype.name}`);
    });
    test(`casts from ${dtype.name} to every dtype`, () => {
      const x = input(dtype, N, 31);
      const xt = ref(() => mg.transpose(mg.reshape(input(dtype, 30 * 37, 32), [30, 37]), undefined, S));
      for (const to of ALL) {
        compareResults(P.AsType, both(() => [makeArray(P.AsType, [x], { dtype: to }, D)]), `${dtype.name}→${to.name}`);
        compareResults(P.AsType, both(() => [makeArray(P.AsType, [xt], { dtype: to }, D)]), `${dtype.name}→${to.name} strided`);
      }
    });
  }

  // The native kernel casts an integer to float32 and rounds that to the 16-bit grid; the reference
  // rounds the integer once. Every 16-bit integer, and wide ones around the float16 overflow
  // (65504 / 65520), float32's exact range (2^24) and the type bounds.
  test("integer → float16/bfloat16 casts: every 16-bit integer and the wide boundaries", () => {
    const wide: bigint[] = [];
    for (const c of [65503n, 65504n, 65505n, 65511n, 65512n, 65519n, 65520n, 65521n, 1n << 24n, (1n << 24n) + 1n,
      (1n << 24n) + 3n, (1n << 31n) - 1n, 1n << 31n, (1n << 32n) - 1n, (1n << 53n) + 1n, (1n << 63n) - 1n, 1n << 63n,
      (1n << 64n) - 1n]) {
      wide.push(c, -c);
    }
    const cases: MgArray[] = [
      mg.array(Array.from({ length: 65536 }, (_, i) => i - 32768), mg.int16),
      mg.array(Array.from({ length: 65536 }, (_, i) => i), mg.uint16),
      mg.array(Array.from({ length: 256 }, (_, i) => i), mg.uint8),
      mg.array([true, false], mg.bool_),
    ];
    for (const [d, lo, hi] of [[mg.int32, -(1n << 31n), (1n << 31n) - 1n], [mg.uint32, 0n, (1n << 32n) - 1n],
      [mg.int64, -(1n << 63n), (1n << 63n) - 1n], [mg.uint64, 0n, (1n << 64n) - 1n]] as const) {
      const vals = wide.filter((v) => v >= lo && v <= hi);
      cases.push(d.size === 8 ? mg.array(vals, d) : mg.array(vals.map(Number), d));
    }
    for (const x of cases) {
      for (const to of [mg.float16, mg.bfloat16]) {
        const r = both(() => [mg.astype(x, to, S)]);
        compareResults(P.AsType, r, `${x.dtype.name}→${to.name}`);
        // a scalar source (stride-0 broadcast)
        const s = ref(() => mg.broadcastTo(mg.reshape(mg.take(x, mg.array([x.size - 1], mg.int32), 0, S), [], S), [5], S));
        compareResults(P.AsType, both(() => [mg.astype(s, to, S)]), `${x.dtype.name}→${to.name} scalar`);
      }
    }
  });

  test("64-bit shifts by any count: the count modulo 64 (docs/corner-cases.md)", () => {
    const x = mg.array([1n, -8n, 5n, -1n, 3n, 1n], mg.int64);
    const y = mg.array([3n, 1n, 64n, 70n, -1n, 63n], mg.int64);
    expect(mg.leftShift(x, y, S).tolist()).toEqual([8n, -16n, 5n, -64n, -(2n ** 63n), -(2n ** 63n)]);
    expect(mg.rightShift(x, y, S).tolist()).toEqual([0n, -4n, 5n, -1n, 0n, 0n]);
    const u = mg.array([2n ** 64n - 1n, 1n], mg.uint64);
    const v = mg.array([60n, 64n], mg.uint64);
    expect(mg.rightShift(u, v, S).tolist()).toEqual([15n, 1n]);
    expect(mg.leftShift(u, v, S).tolist()).toEqual([2n ** 64n - 2n ** 60n, 1n]);
  });

  test("empty and 0-d inputs", () => {
    for (const shape of [[0], [3, 0], []] as number[][]) {
      const x = ref(() => mg.zeros(shape, mg.float32, S));
      const y = ref(() => mg.ones(shape, mg.float32, S));
      compareResults(P.Add, both(() => [makeArray(P.Add, [x, y], null, D)]), `add ${JSON.stringify(shape)}`);
      compareResults(P.Exp, both(() => [makeArray(P.Exp, [y], null, D)]), `exp ${JSON.stringify(shape)}`);
    }
  });

  test("the trace names the native kernel, and a declined case falls back with a note", () => {
    const x = input(mg.float32, 8, 1);
    const recs = mg.trace(() => mg.exp(x, S));
    expect(recs.map((r) => r.kernel)).toContain("cpu-native:Exp");
    // complex64 has no logical_not rule in the reference either: the error is the reference's
    const z = input(mg.complex64, 4, 2);
    expect(() => mg.eval(makeArray(P.LogicalNot, [z], null, D))).toThrow();
  });

  // The native tables compile kernels only for the (op, dtype) pairs the ops can build (integer
  // math is computed in float32, logical ops on bool, …): every pair an op builds runs natively.
  test("every elementwise op, on every dtype it accepts, runs a native kernel (no fallback)", () => {
    type Op = (x: MgArray, y: MgArray) => MgArray | MgArray[];
    const ops: [string, Op][] = [
      ...([
        "abs", "negative", "sign", "square", "sqrt", "rsqrt", "exp", "expm1", "log", "log2", "log10", "log1p", "sin",
        "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "floor",
        "ceil", "round", "sigmoid", "erf", "erfinv", "logicalNot", "bitwiseInvert", "conjugate", "real", "imag",
      ] as const).map((n): [string, Op] => [n, (x) => (mg[n] as (a: MgArray, o: object) => MgArray)(x, S)]),
      ...([
        "add", "subtract", "multiply", "divide", "floorDivide", "remainder", "divmod", "power", "maximum", "minimum",
        "logaddexp", "arctan2", "equal", "notEqual", "greater", "greaterEqual", "less", "lessEqual", "logicalAnd",
        "logicalOr", "bitwiseAnd", "bitwiseOr", "bitwiseXor", "leftShift", "rightShift",
      ] as const).map((n): [string, Op] => [n, (x, y) => (mg[n] as (a: MgArray, b: MgArray, o: object) => MgArray)(x, y, S)]),
      ["where", (x, y) => mg.where(mg.greater(mg.abs(mg.real(x, S), S), 0.5, S), x, y, S)],
      ["arrayEqual(equalNan)", (x, y) => mg.arrayEqual(x, y, true, S)],
      ...ALL.map((to): [string, Op] => [`astype ${to.name}`, (x) => mg.astype(x, to, S)]),
    ];
    const checked = new Set<string>();
    for (const fused of [true, false]) {
      const prev = setCpuFusion(fused);
      try {
        for (const dtype of ALL) {
          const x = input(dtype, 40, 41);
          const y = input(dtype, 40, 42);
          for (const [name, op] of ops) {
            let recs: mg.TraceRecord[];
            try {
              recs = mg.trace(() => op(x, y));
            } catch {
              continue; // the op rejects this dtype
            }
            for (const r of recs) {
              const fallback = r.notes.find((n) => n.startsWith("fallback:"));
              if (fallback) throw new Error(`${name} on ${dtype.name}${fused ? "" : " (unfused)"}: ${fallback}`);
              if (r.kernel.startsWith("cpu-native:")) checked.add(`${name} ${dtype.name} ${fused}`);
            }
          }
        }
      } finally {
        setCpuFusion(prev);
      }
    }
    expect(checked.size).toBeGreaterThan(1400);
  });
});

// ---- fusion ------------------------------------------------------------------------------------------------

/** GELU's tanh form, 10 ops: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
function gelu(x: MgArray): MgArray {
  const x3 = mg.multiply(mg.multiply(x, x, S), x, S);
  const inner = mg.multiply(mg.add(x, mg.multiply(x3, 0.044715, S), S), Math.sqrt(2 / Math.PI), S);
  return mg.multiply(mg.multiply(x, 0.5, S), mg.add(mg.tanh(inner, S), 1, S), S);
}

describe("fusion", () => {
  for (const dtype of [mg.float32, mg.float16, mg.bfloat16, mg.float64]) {
    test(`a fused GELU chain equals the unfused ops bit for bit (${dtype.name})`, () => {
      const x = ref(() => mg.astype(input(mg.float32, 5000, 41), dtype, S));
      const prev = setCpuFusion(false);
      const unfused = gelu(x);
      mg.eval(unfused);
      setCpuFusion(true);
      let fused: MgArray | null = null;
      const recs = mg.trace(() => (fused = gelu(x)));
      setCpuFusion(prev);
      expect(recs.some((r) => r.kernel.startsWith("cpu-native:fused"))).toBe(true);
      expectSameBits(fused!, unfused, `gelu ${dtype.name}`);
    });
  }

  test("mixed dtypes, comparisons, selects and strided inputs fuse bit-exactly", () => {
    const a = ref(() => mg.transpose(mg.reshape(input(mg.float32, 64 * 50, 51), [64, 50]), undefined, S));
    const b = ref(() => mg.broadcastTo(input(mg.float32, 64, 52), [50, 64], S));
    const i = ref(() => mg.reshape(input(mg.int32, 50 * 64, 53), [50, 64], S));
    const build = () => {
      const s = mg.add(mg.exp(mg.minimum(a, 3, S), S), mg.astype(mg.remainder(i, 7, S), mg.float32, S), S);
      const m = mg.where(mg.greater(s, b, S), mg.sigmoid(s, S), mg.multiply(b, mg.log(mg.abs(s, S), S), S), S);
      return mg.astype(mg.multiply(m, 3.5, S), mg.float16, S);
    };
    const prev = setCpuFusion(false);
    const unfused = build();
    mg.eval(unfused);
    setCpuFusion(true);
    const fused = build();
    mg.eval(fused);
    setCpuFusion(prev);
    expectSameBits(fused, unfused, "mixed chain");
    // and both agree with the reference
    const reference = ref(build);
    expectClose(fused, reference, toleranceFor(mg.float16), "mixed chain vs reference");
  });

  // A fused program reuses one temporary register, so most instructions write what they read
  // (dst == operand): the kernels' block loops must read a block before writing it. The expected
  // values are computed here, op by op (float32: Math.fround after each exact double op, which is
  // the single float32 rounding; int32: Math.imul and |0 wraparound), at lengths around the
  // kernels' block and tile sizes.
  for (const [dtype, round] of [
    [mg.float32, Math.fround],
    [mg.float64, (v: number) => v],
    [mg.int32, (v: number) => v | 0],
  ] as const) {
    test(`in-place instructions of a fused chain equal a step-by-step computation (${dtype.name})`, () => {
      const mul = dtype === mg.int32 ? Math.imul : (a: number, b: number) => round(a * b);
      for (const n of [1, 7, 15, 16, 17, 33, 1023, 1025, 5003]) {
        const x = input(dtype, n, 70 + n);
        const xs = Array.from(x.dataSync() as ArrayLike<number>);
        const build = () => {
          let t = mg.multiply(x, x, S);
          t = mg.multiply(t, x, S);
          t = mg.add(t, x, S);
          t = mg.multiply(t, 3, S);
          t = mg.subtract(t, x, S);
          t = mg.maximum(t, -5, S);
          return mg.multiply(t, t, S);
        };
        let y: MgArray | null = null;
        const recs = mg.trace(() => (y = build()));
        expect(recs.some((r) => r.kernel.startsWith("cpu-native:fused")), `fused at n=${n}`).toBe(true);
        const got = y!.dataSync() as ArrayLike<number>;
        for (let i = 0; i < n; i++) {
          const v = xs[i]!;
          let t = mul(v, v);
          t = mul(t, v);
          t = round(t + v);
          t = mul(t, 3);
          t = round(t - v);
          t = Number.isNaN(t) ? t : Math.max(t, -5);
          const want = mul(t, t);
          if (!Object.is(got[i], want) && !(Number.isNaN(got[i]!) && Number.isNaN(want)))
            throw new Error(`${dtype.name} n=${n} element ${i}: ${got[i]} vs ${want} (x=${v})`);
        }
      }
    });
  }

  test("an intermediate someone else reads is materialised; others are recomputed when read", () => {
    const x = input(mg.float32, 3000, 61);
    const e = mg.exp(x, S);
    const y = mg.multiply(e, 2, S);
    const z = mg.sum(e, undefined, S); // reads e outside the region
    mg.eval(y, z);
    expect(e.evaluated).toBe(true);
    expectClose(e, ref(() => mg.exp(x, S)), toleranceFor(mg.float32), "materialised intermediate");
    const hidden = mg.sin(x, S);
    const w = mg.add(mg.square(hidden, S), 1, S);
    mg.eval(w);
    expectClose(hidden, ref(() => mg.sin(x, S)), toleranceFor(mg.float32), "recomputed intermediate");
  });
});

// ---- reductions, argreduce, scans, softmax ------------------------------------------------------------------

describe("reductions", () => {
  const types = ["sum", "prod", "max", "min", "all", "any"] as const;
  const run = (type: (typeof types)[number], x: MgArray, axes: number[] | undefined): MgArray => {
    switch (type) {
      case "sum": return mg.sum(x, axes, S);
      case "prod": return mg.prod(x, axes, S);
      case "max": return mg.max(x, axes, S);
      case "min": return mg.min(x, axes, S);
      case "all": return mg.all(x, axes, S);
      case "any": return mg.any(x, axes, S);
    }
  };
  for (const dtype of ALL) {
    test(`${dtype.name}: every reduction over several axis sets and layouts`, () => {
      const base = ref(() => mg.reshape(input(dtype, 6 * 35 * 9, 71), [6, 35, 9], S));
      const transposed = ref(() => mg.transpose(base, [2, 0, 1], S));
      const broadcast = ref(() => mg.broadcastTo(input(dtype, 9, 72), [5, 35, 9], S));
      const empty = ref(() => mg.zeros([4, 0, 3], dtype, S));
      for (const [name, x] of [["contiguous", base], ["transposed", transposed], ["broadcast", broadcast], ["empty", empty]] as const) {
        for (const axes of [undefined, [0], [1], [2], [0, 2], [1, 2]]) {
          for (const type of types) {
            if ((type === "max" || type === "min") && name === "empty") continue; // the op rejects it
            const what = `${type} ${dtype.name} ${name} axes=${JSON.stringify(axes)}`;
            const r = both(() => [run(type, x, axes)]);
            const n = axes ? axes.reduce((p, a) => p * x.shape[a]!, 1) : x.size;
            compareResults(P.Add, r, what, type === "sum" || type === "prod" ? (d) => accumulationTolerance(d, n) : undefined);
          }
        }
      }
    });
  }

  test("a huge reduction: 2^31 + 2 broadcast elements (64-bit indexing throughout)", () => {
    // Dimensions stop at 2^31 - 1 (MLX's int32 dimensions), so 2^31 + 2 elements take two axes.
    const n = 2 ** 30 + 1;
    const x = ref(() => mg.broadcastTo(mg.array([0.5], mg.float32), [2, n], S));
    const s = mg.sum(x, undefined, S);
    expect(s.item()).toBe(Math.fround(2 * n * 0.5));
    const i = ref(() => mg.broadcastTo(mg.array([3], mg.int32), [2, n], S));
    expect(mg.max(i, undefined, S).tolist()).toEqual(3);
    expect(mg.min(i, [0, 1], S).tolist()).toEqual(3);
  }, 120000);
});

describe("argmax / argmin", () => {
  for (const dtype of ALL) {
    test(`${dtype.name} along every axis, with ties and NaNs`, () => {
      const x = ref(() => mg.reshape(input(dtype, 7 * 40 * 3, 81), [7, 40, 3], S));
      const xt = ref(() => mg.transpose(x, [1, 2, 0], S));
      for (const a of [x, xt]) {
        for (let axis = 0; axis < 3; axis++) {
          compareResults(P.Add, both(() => [mg.argmax(a, axis, S)]), `argmax ${dtype.name} axis ${axis}`);
          compareResults(P.Add, both(() => [mg.argmin(a, axis, S)]), `argmin ${dtype.name} axis ${axis}`);
        }
      }
    });
  }
});

describe("scans", () => {
  const kinds = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"] as const;
  for (const dtype of ALL) {
    test(`${dtype.name}: every scan, reversed and exclusive`, () => {
      const x = ref(() => mg.reshape(input(dtype, 5 * 60, 91), [5, 60], S));
      const xt = ref(() => mg.transpose(x, undefined, S));
      for (const a of [x, xt]) {
        for (const axis of [0, 1]) {
          for (const reverse of [false, true]) {
            for (const inclusive of [true, false]) {
              for (const kind of kinds) {
                const opts = { reverse, inclusive, stream: mg.cpu };
                const build = () => {
                  switch (kind) {
                    case "cumsum": return [mg.cumsum(a, axis, opts)];
                    case "cumprod": return [mg.cumprod(a, axis, opts)];
                    case "cummax": return [mg.cummax(a, axis, opts)];
                    case "cummin": return [mg.cummin(a, axis, opts)];
                    case "logcumsumexp": return [mg.logcumsumexp(a, axis, opts)];
                  }
                };
                compareResults(P.Add, both(build), `${kind} ${dtype.name} axis ${axis} rev ${reverse} incl ${inclusive}`, (d) => accumulationTolerance(d, 60));
              }
            }
          }
        }
      }
    });
  }
});

describe("softmax and logsumexp", () => {
  for (const dtype of FLOATS) {
    test(`${dtype.name}, rows with infinities and NaN, strided input`, () => {
      const x = ref(() => mg.reshape(input(mg.float32, 12 * 300, 101), [12, 300], S));
      const xd = ref(() => mg.astype(x, dtype, S));
      const xt = ref(() => mg.transpose(mg.reshape(mg.astype(input(mg.float32, 300 * 12, 102), dtype, S), [300, 12], S), undefined, S));
      const special = ref(() => mg.astype(mg.array([[1, 2, 3], [-Infinity, -Infinity, -Infinity], [Infinity, 1, 2], [NaN, 1, 2], [-Infinity, 0, 1]], mg.float32), dtype, S));
      for (const a of [xd, xt, special]) {
        const n = a.shape[1]!;
        compareResults(P.Exp, both(() => [mg.softmax(a, -1, S)]), `softmax ${dtype.name}`, (d) => normalizedTolerance(d, n));
        compareResults(P.Exp, both(() => [mg.logsumexp(a, -1, S)]), `logsumexp ${dtype.name}`, (d) => accumulationTolerance(d, n));
      }
    });
  }
});

// ---- data movement ----------------------------------------------------------------------------------------

describe("concatenate, pad, arange", () => {
  for (const dtype of ALL) {
    test(`${dtype.name}: concatenate (strided and broadcast parts), pad (strided input), arange`, () => {
      const a = ref(() => mg.transpose(mg.reshape(input(dtype, 6 * 7, 141), [7, 6], S), undefined, S));
      const b = ref(() => mg.reshape(input(dtype, 6 * 3, 142), [6, 3], S));
      const c = ref(() => mg.broadcastTo(mg.reshape(input(dtype, 6, 143), [6, 1], S), [6, 4], S));
      const e = ref(() => mg.zeros([6, 0], dtype, S));
      compareResults(P.AsType, both(() => [mg.concatenate([a, b, e, c], 1, S)]), `concatenate axis 1 ${dtype.name}`);
      compareResults(P.AsType, both(() => [mg.concatenate([mg.transpose(a, undefined, S), mg.transpose(c, undefined, S)], 0, S)]), `concatenate axis 0 ${dtype.name}`);
      compareResults(P.AsType, both(() => [mg.pad(a, [[1, 2], [0, 3]], "constant", 0, S)]), `pad ${dtype.name}`);
      if (dtype !== mg.complex64) {
        compareResults(P.AsType, both(() => [mg.arange(-3, 40, 1.25, dtype, S)]), `arange ${dtype.name}`);
      }
      if (dtype === mg.int32) {
        // integral steps (the int32 fast path), and values past int32's range (they wrap)
        for (const [start, stop, step] of [[-7, 50, 3], [40, -9, -4], [2147483640, 2147483650, 2], [-2147483648, -2147483640, 1]] as const) {
          compareResults(P.AsType, both(() => [mg.arange(start, stop, step, dtype, S)]), `arange int32 ${start}:${stop}:${step}`);
        }
      }
    });
  }
});

describe("gathers", () => {
  for (const dtype of ALL) {
    test(`${dtype.name}: take along and across axes, negative and out-of-range indices, strided operands`, () => {
      const a = ref(() => mg.transpose(mg.reshape(input(dtype, 5 * 8, 151), [8, 5], S), undefined, S)); // (5, 8) strided
      const i32 = mg.array([0, 4, -1, 2, 2, -5], mg.int32);
      const u8 = mg.array([1, 3, 7], mg.uint8);
      compareResults(P.AsType, both(() => [mg.take(a, i32, 0, S)]), `take axis 0 ${dtype.name}`);
      compareResults(P.AsType, both(() => [mg.take(a, u8, 1, S)]), `take axis 1 ${dtype.name}`);
      compareResults(P.AsType, both(() => [mg.take(a, mg.reshape(i32, [2, 3], S), undefined, S)]), `take flat ${dtype.name}`);
      const along = mg.array([[0, 7, -1], [2, 2, 3], [1, 0, 5], [6, 6, 6], [4, -8, 3]], mg.int32);
      compareResults(P.AsType, both(() => [mg.takeAlongAxis(a, along, 1, S)]), `take_along_axis ${dtype.name}`);
      compareResults(P.AsType, both(() => [mg.takeAlongAxis(a, mg.array([[0], [4], [-2]], mg.int64), 0, S)]), `take_along_axis axis 0 ${dtype.name}`);
      // out of range: the reference's policy applies (the native kernel declines)
      compareResults(P.AsType, both(() => [mg.take(a, mg.array([9], mg.int32), 0, S)]), `take out of range ${dtype.name}`);
      compareResults(P.AsType, both(() => [mg.take(a, mg.zeros([0], mg.int32), 0, S)]), `take empty ${dtype.name}`);
    });
  }
});

describe("random bits", () => {
  test("Threefry streams equal the reference bit for bit: widths 1, 2, 4, odd word counts, many keys", () => {
    const cases: [number[], Dtype][] = [[[1000], mg.float32], [[7], mg.float16], [[3, 5], mg.bfloat16], [[1], mg.float32], [[4097], mg.float32]];
    for (const [shape, dtype] of cases) {
      const key = mg.random.key(11);
      compareResults(P.AsType, both(() => [mg.random.bits(shape, 4, key, S)]), `bits 4 ${shape}`);
      compareResults(P.AsType, both(() => [mg.random.bits(shape, 2, key, S)]), `bits 2 ${shape}`);
      compareResults(P.AsType, both(() => [mg.random.bits(shape, 1, key, S)]), `bits 1 ${shape}`);
      compareResults(P.AsType, both(() => [mg.random.uniform(0, 1, shape as number[], dtype, key, S)]), `uniform ${dtype.name} ${shape}`);
    }
    const keys = mg.random.split(mg.random.key(3), 37);
    compareResults(P.AsType, both(() => [mg.random.bits([37, 9], 4, keys, S)]), "37 keys");
  });
});

// ---- matmul --------------------------------------------------------------------------------------------------

/** n values uniform in [-1, 1) as float32 (well-conditioned products for GEMM comparisons). */
function uniform(n: number, seed: number): MgArray {
  const r = rng(seed);
  const a = mg.array(Float32Array.from({ length: n }, () => 2 * r() - 1));
  mg.eval(a);
  return a;
}

describe("matmul", () => {
  const shapes: [number, number, number][] = [[1, 1, 1], [5, 7, 3], [37, 45, 29], [64, 256, 256], [130, 17, 300], [6, 16, 256], [13, 1, 9], [0, 4, 3], [3, 4, 0]];
  for (const dtype of FLOATS) {
    test(`${dtype.name}: shapes with edge tiles, transposed operands, batches`, () => {
      for (const [m, n, k] of shapes) {
        const a = ref(() => mg.astype(mg.reshape(uniform(m * k, 111), [m, k], S), dtype, S));
        const b = ref(() => mg.astype(mg.reshape(uniform(k * n, 112), [k, n], S), dtype, S));
        const tol = (d: Dtype) => accumulationTolerance(d, Math.max(k, 1) * 40);
        compareResults(P.Add, both(() => [mg.matmul(a, b, S)]), `${dtype.name} ${m}x${n}x${k}`, tol);
        const at = ref(() => mg.transpose(mg.astype(mg.reshape(uniform(m * k, 113), [k, m], S), dtype, S), undefined, S));
        const bt = ref(() => mg.transpose(mg.astype(mg.reshape(uniform(k * n, 114), [n, k], S), dtype, S), undefined, S));
        compareResults(P.Add, both(() => [mg.matmul(at, bt, S)]), `${dtype.name} ${m}x${n}x${k} transposed`, tol);
      }
      const a3 = ref(() => mg.astype(mg.reshape(uniform(4 * 9 * 11, 115), [4, 9, 11], S), dtype, S));
      const b2 = ref(() => mg.astype(mg.reshape(uniform(11 * 21, 116), [11, 21], S), dtype, S));
      compareResults(P.Add, both(() => [mg.matmul(a3, b2, S)]), `${dtype.name} batch broadcast`, (d) => accumulationTolerance(d, 11 * 40));
      const c = ref(() => mg.astype(mg.reshape(uniform(9 * 21, 117), [9, 21], S), dtype, S));
      const a2 = ref(() => mg.astype(mg.reshape(uniform(9 * 11, 118), [9, 11], S), dtype, S));
      compareResults(P.Add, both(() => [mg.addmm(c, a2, b2, 0.5, 2, S)]), `${dtype.name} addmm`, (d) => accumulationTolerance(d, 11 * 40));
    });
  }
});

// ---- properties ----------------------------------------------------------------------------------------------

describe("determinism", () => {
  const cases: [string, () => MgArray][] = [];
  const x = input(mg.float32, 1 << 20, 121);
  const m = ref(() => mg.reshape(input(mg.float32, 512 * 384, 122), [512, 384], S));
  const mt = ref(() => mg.transpose(m, undefined, S));
  cases.push(["gelu 1M", () => gelu(x)]);
  cases.push(["sum 1M", () => mg.sum(x, undefined, S)]);
  cases.push(["row sums", () => mg.sum(m, [1], S)]);
  cases.push(["column sums", () => mg.sum(m, [0], S)]);
  cases.push(["matmul", () => mg.matmul(m, mt, S)]);
  cases.push(["softmax", () => mg.softmax(m, -1, S)]);
  cases.push(["cumsum", () => mg.cumsum(m, 0, S)]);
  for (const [name, build] of cases) {
    test(`${name}: 1 thread and 4 threads give the same bits`, () => {
      const prev = setNativeThreads(1);
      const one = build();
      mg.eval(one);
      setNativeThreads(4);
      const four = build();
      mg.eval(four);
      setNativeThreads(prev);
      expectSameBits(one, four, name);
    });
  }

  test("GEMM with B packed once for all row tasks (4 threads) = each task packing its own (1 thread, one row task)", () => {
    // M ≤ 144 is one row task on 1 thread; more threads split the rows (these products are large
    // enough for 2) and share one packed B. K spans two KC blocks, N ends in a partial micro-panel,
    // B is transposed, batched or broadcast.
    const a = ref(() => mg.reshape(uniform(3 * 140 * 300, 141), [3, 140, 300], S));
    const b = ref(() => mg.reshape(uniform(3 * 300 * 310, 142), [3, 300, 310], S));
    const bt = ref(() => mg.transpose(mg.reshape(uniform(310 * 300, 143), [310, 300], S), undefined, S));
    const c = ref(() => mg.reshape(uniform(140 * 310, 144), [140, 310], S));
    const a2 = ref(() => mg.reshape(uniform(140 * 300, 145), [140, 300], S));
    const build = () => [mg.matmul(a, b, S), mg.matmul(a, bt, S), mg.addmm(c, a2, bt, 0.5, 2, S), mg.matmul(mg.astype(a2, mg.float64, S), mg.astype(bt, mg.float64, S), S)];
    const prev = setNativeThreads(1);
    const one = build();
    mg.eval(one);
    setNativeThreads(4);
    const four = build();
    mg.eval(four);
    setNativeThreads(prev);
    one.forEach((o, k) => expectSameBits(o, four[k]!, `product ${k}`));
    const want = ref(() => build());
    one.forEach((o, k) => expectClose(o, want[k]!, accumulationTolerance(o.dtype, 300 * 40), `product ${k} vs reference`));
  });

  test("both instruction sets agree with the reference; exact ops and sums bit for bit", () => {
    const info = nativeInfo();
    if (info.isa !== "avx2" && info.isa !== "avx512") return; // a machine without AVX2 only has the baseline
    const a = ref(() => mg.multiply(uniform(5000, 131), 20, S)); // finite: NaN signs may differ by ISA
    const b = uniform(5000, 132);
    const run = (isa: "baseline" | "avx2") => {
      setNativeIsa(isa);
      const outs = [mg.add(a, b, S), mg.multiply(a, b, S), mg.sum(a, undefined, S), mg.astype(a, mg.float16, S), mg.exp(a, S), mg.tanh(a, S), mg.matmul(mg.reshape(a, [50, 100], S), mg.reshape(b, [100, 50], S), S)];
      mg.eval(outs);
      return outs;
    };
    const base = run("baseline");
    const avx = run("avx2");
    setNativeIsa("best");
    for (let i = 0; i < 4; i++) expectSameBits(base[i]!, avx[i]!, `exact op ${i}`);
    const reference = ref(() => [mg.exp(a, S), mg.tanh(a, S), mg.matmul(mg.reshape(a, [50, 100], S), mg.reshape(b, [100, 50], S), S)]);
    for (const outs of [base, avx]) {
      expectClose(outs[4]!, reference[0]!, toleranceFor(mg.float32), "exp");
      expectClose(outs[5]!, reference[1]!, toleranceFor(mg.float32), "tanh");
      expectClose(outs[6]!, reference[2]!, accumulationTolerance(mg.float32, 100 * 40), "matmul");
    }
  });
});

// The AVX-512 table replaces only lane-wise float kernels (isa_avx512.cpp): each element's bits must
// be the AVX2 kernels' (same FMA polynomials, 16 lanes instead of 8, padded tails of 1–15 lanes).
describe("AVX-512 elementwise kernels", () => {
  test("give the AVX2 kernels' bits: every replaced op, float dtypes, scalar operands, tails", () => {
    if (nativeInfo().isa !== "avx512") return; // only machines with AVX-512 run this table
    const unary = [mg.negative, mg.square, mg.sqrt, mg.abs, mg.exp, mg.log, mg.tanh, mg.sigmoid, mg.erf];
    const binary = [mg.add, mg.subtract, mg.multiply, mg.divide, mg.maximum, mg.minimum];
    const build = (x: MgArray, y: MgArray, s: number) => {
      const outs: MgArray[] = [];
      for (const f of unary) outs.push(f(x, S));
      for (const f of binary) outs.push(f(x, y, S), f(x, s, S), f(s, y, S));
      return outs;
    };
    const cases: MgArray[][] = [];
    for (const dtype of [mg.float32, mg.float64, mg.float16, mg.bfloat16]) {
      for (const n of [1, 15, 17, 31, 33, 1100]) {
        const x = ref(() => mg.astype(input(mg.float32, n, 90 + n), dtype, S));
        const y = ref(() => mg.astype(input(mg.float32, n, 190 + n), dtype, S));
        cases.push([x, y]);
      }
    }
    const run = (isa: "avx2" | "avx512") => {
      expect(setNativeIsa(isa)).toBe(isa);
      const prev = setCpuFusion(false); // one kernel per op: each replaced kernel on its own
      try {
        const outs = cases.flatMap(([x, y]) => [...build(x!, y!, 0.75), gelu(x!)]);
        mg.eval(outs);
        return outs;
      } finally {
        setCpuFusion(prev);
        setNativeIsa("best");
      }
    };
    const avx2 = run("avx2");
    const avx512 = run("avx512");
    avx2.forEach((a, k) => expectSameBits(avx512[k]!, a, `output ${k} (${a.dtype.name}, ${a.size} elements)`));
  });
});

// ---- documented accuracy of the float32 math ----------------------------------------------------------------

function ulpError(got: number, want: number): number {
  if (Number.isNaN(want)) return Number.isNaN(got) ? 0 : Infinity;
  if (!Number.isFinite(want)) return got === want ? 0 : Infinity;
  const w = Math.fround(want);
  const a = Math.abs(w);
  // one ulp of float32 at w (subnormals: 2^-149)
  const e = a === 0 ? -149 : Math.max(Math.floor(Math.log2(a)) - 23, -149);
  return Math.abs(got - want) / 2 ** e;
}

describe("float32 math accuracy (documented bounds, docs/ARCHITECTURE.md)", () => {
  const bounds: [string, (x: MgArray) => MgArray, (x: number) => number, number, [number, number]][] = [
    ["exp", (x) => mg.exp(x, S), Math.exp, 2, [-104, 89]],
    ["log", (x) => mg.log(x, S), Math.log, 2, [1e-38, 1e6]],
    ["tanh", (x) => mg.tanh(x, S), Math.tanh, 3, [-10, 10]],
    ["sigmoid", (x) => mg.sigmoid(x, S), (x) => (x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x))), 3, [-90, 90]],
    ["erf", (x) => mg.erf(x, S), erf64, 4, [-5, 5]],
  ];
  for (const [name, f, exact, bound, [lo, hi]] of bounds) {
    test(`${name}: at most ${bound} ulp over [${lo}, ${hi}]`, () => {
      const n = 200000;
      const xs = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        const t = i / (n - 1);
        xs[i] = name === "log" ? Math.exp(Math.log(lo) + t * (Math.log(hi) - Math.log(lo))) : lo + t * (hi - lo);
      }
      const y = f(mg.array(xs)).dataSync() as Float32Array;
      let worst = 0;
      let at = 0;
      for (let i = 0; i < n; i++) {
        const err = ulpError(y[i]!, exact(xs[i]!));
        if (err > worst) {
          worst = err;
          at = xs[i]!;
        }
      }
      if (worst > bound) throw new Error(`${name}: ${worst.toFixed(2)} ulp at ${at}`);
    });
  }

  // exp takes a short path for vectors of 8 whose lanes all lie in [-87, 88]; a NaN in every
  // vector forces the full path everywhere: the other lanes must keep their bits.
  test("exp, tanh and sigmoid: the in-range short path gives the full path's bits", () => {
    const n = 80000;
    const xs = new Float32Array(n);
    for (let i = 0; i < n; i++) xs[i] = -87 + (175 * i) / (n - 1);
    const forced = xs.slice();
    for (let i = 0; i < n; i += 8) forced[i] = NaN;
    for (const f of [(x: MgArray) => mg.exp(x, S), (x: MgArray) => mg.tanh(x, S), (x: MgArray) => mg.sigmoid(x, S)]) {
      const a = f(mg.array(xs)).dataSync() as Float32Array;
      const b = f(mg.array(forced)).dataSync() as Float32Array;
      for (let i = 0; i < n; i++) {
        if (i % 8 === 0) {
          expect(Number.isNaN(b[i]!)).toBe(true);
          continue;
        }
        if (!Object.is(a[i], b[i])) throw new Error(`element ${i} (x=${xs[i]}): ${a[i]} vs ${b[i]}`);
      }
    }
  });
});

// erf in float64 by its Taylor series / continued fraction (independent of both implementations)
function erf64(x: number): number {
  const ax = Math.abs(x);
  if (ax < 2.5) {
    let term = x;
    let sum = x;
    for (let n = 1; n < 200; n++) {
      term *= (-x * x) / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-18 * Math.abs(sum)) break;
    }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc by Lentz's continued fraction
  let f = ax;
  let c = ax;
  let d = 0;
  for (let n = 1; n < 500; n++) {
    const an = n / 2;
    d = ax + an * d;
    d = d === 0 ? 1e-300 : 1 / d;
    c = ax + an / c;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-17) break;
  }
  const erfc = Math.exp(-ax * ax) / (Math.sqrt(Math.PI) * f);
  return x > 0 ? 1 - erfc : erfc - 1;
}

// ---- the C ABI --------------------------------------------------------------------------------------------------

describe("C ABI", () => {
  test("a bad descriptor is an error with a message, never a crash", () => {
    const bad = new Float64Array([1, 1, 1, 0, 1, 4]); // too short
    expect(native().mg_cpu_elementwise(bad, bad.length)).toBe(2);
    expect(String(native().mg_cpu_last_error())).toContain("[mg_cpu_elementwise] descriptor too short");
    const wrongDtype = new Float64Array([0, 1, 99]);
    expect(native().mg_cpu_reduce(wrongDtype, 3)).toBe(2);
    expect(String(native().mg_cpu_last_error())).toContain("[mg_cpu_reduce]");
  });
});
