// Issue 3's acceptance through the whole stack: TypeScript → FFI → runtime → shim → MSL simulator
// (on a Mac the same kernels run on the GPU; simulator-only behaviour is skipped there). Every
// expected value comes from a reference written here in TypeScript: 16-bit float conversions by
// value arithmetic on exact doubles (not by bit tricks), reductions, scans and products in
// float64 or exact integers.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runtime, type Dispatch, type NativeBuffer } from "../../ts/backend/runtime.ts";

const rt = runtime();
const SIM = rt.device.isSimulator;
const RUNTIME_MODULE = join(import.meta.dir, "../../ts/backend/runtime.ts");

function upload(data: ArrayBufferView): NativeBuffer {
  const buffer = rt.newBuffer(data.byteLength);
  new Uint8Array(buffer.arrayBuffer).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return buffer;
}

function filled(words: number, value: number): NativeBuffer {
  const buffer = rt.newBuffer(4 * words);
  buffer.as(Uint32Array).fill(value);
  return buffer;
}

/** One dispatch in its own batch; throws the batch's error. */
function run(d: Dispatch): void {
  rt.newBatch().dispatch(d).submit().wait(120);
}

/** Runs `d` and returns the error message ("" when it succeeded). */
function failure(d: Dispatch): string {
  try {
    run(d);
    return "";
  } catch (e) {
    return (e as Error).message;
  }
}

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s;
  };
}

// ---------------------------------------------------------------------------------------------
// 16-bit float references, by value: decode to an exact double, round with explicit
// ties-to-even arithmetic on the scaled significand, encode.

const scratch = new DataView(new ArrayBuffer(8));

/** 2^k as an exact double (k within the normal range). */
function pow2(k: number): number {
  scratch.setUint32(0, ((k + 1023) << 20) >>> 0);
  scratch.setUint32(4, 0);
  return scratch.getFloat64(0);
}

/** floor(log2(x)) of a positive normal double, exactly. */
function exponentOf(x: number): number {
  scratch.setFloat64(0, x);
  return ((scratch.getUint32(0) >>> 20) & 0x7ff) - 1023;
}

function float32Bits(value: number): number {
  scratch.setFloat32(0, value);
  return scratch.getUint32(0);
}

/** The magnitude of a finite float32 bit pattern, as an exact double. */
function float32Magnitude(bits: number): number {
  const exp = (bits >>> 23) & 0xff;
  const man = bits & 0x7fffff;
  return exp === 0 ? man * pow2(-149) : (man + 0x800000) * pow2(exp - 150);
}

/** Rounds a positive magnitude to `mantissaBits` fractional bits, ties to even, never below 2^minExp's spacing. */
function roundToFormat(mag: number, mantissaBits: number, minExp: number): number {
  const spacing = pow2(Math.max(exponentOf(mag), minExp) - mantissaBits);
  const scaled = mag / spacing; // exact: division by a power of two
  let n = Math.floor(scaled);
  const frac = scaled - n;
  if (frac > 0.5 || (frac === 0.5 && n % 2 === 1)) n += 1;
  return n * spacing;
}

function halfFromFloat32Ref(bits: number): number {
  const sign = (bits >>> 16) & 0x8000;
  if (((bits >>> 23) & 0xff) === 0xff) {
    const man = bits & 0x7fffff;
    return man === 0 ? sign | 0x7c00 : sign | 0x7e00 | (man >>> 13); // NaN: quiet, high payload kept
  }
  const mag = float32Magnitude(bits);
  if (mag === 0) return sign;
  const r = roundToFormat(mag, 10, -14);
  if (r === 0) return sign;
  if (r >= 65536) return sign | 0x7c00;
  const e = exponentOf(r);
  if (e < -14) return sign | (r / pow2(-24));
  return sign | ((e + 15) << 10) | (r / pow2(e - 10) - 1024);
}

function bfloatFromFloat32Ref(bits: number): number {
  const sign = (bits >>> 16) & 0x8000;
  if (((bits >>> 23) & 0xff) === 0xff) {
    const man = bits & 0x7fffff;
    return man === 0 ? sign | 0x7f80 : ((bits >>> 16) | 0x40) & 0xffff; // NaN: quiet, high payload kept
  }
  const mag = float32Magnitude(bits);
  if (mag === 0) return sign;
  const r = roundToFormat(mag, 7, -126);
  if (r === 0) return sign;
  if (r >= pow2(128)) return sign | 0x7f80;
  const e = exponentOf(r);
  if (e < -126) return sign | (r / pow2(-133));
  return sign | ((e + 127) << 7) | (r / pow2(e - 7) - 128);
}

function float32FromHalfRef(h: number): number {
  const sign = (h & 0x8000) << 16;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0x1f) return (sign | 0x7f800000 | (m === 0 ? 0 : 0x400000 | (m << 13))) >>> 0; // NaN: quieted
  const mag = e === 0 ? m * pow2(-24) : (1024 + m) * pow2(e - 25);
  return (sign | float32Bits(mag)) >>> 0;
}

function float32FromBfloatRef(b: number): number {
  const sign = (b & 0x8000) << 16;
  const e = (b >>> 7) & 0xff;
  const m = b & 0x7f;
  if (e === 0xff) return (b << 16) >>> 0; // infinities and NaNs widen unchanged
  const mag = e === 0 ? m * pow2(-133) : (128 + m) * pow2(e - 134);
  return (sign | float32Bits(mag)) >>> 0;
}

/** Float32 patterns that exercise rounding to half and bfloat. */
function conversionInputs(): Uint32Array {
  const out: number[] = [];
  const next = (bits: number, by: number) => (bits + by) >>> 0;
  for (let h = 0; h < 0x7c00; h++) {
    // every finite half, the tie above it, and the floats either side of the tie
    for (const s of [0, 0x8000]) {
      const at = float32FromHalfRef(h | s);
      out.push(at);
      if (h + 1 <= 0x7c00) {
        const up = float32Magnitude(float32FromHalfRef(h + 1));
        const tie = float32Bits((float32Magnitude(at & 0x7fffffff) + up) / 2) | (s << 16);
        out.push(tie >>> 0, next(tie, 1), next(tie, -1));
      }
    }
  }
  for (let b = 0; b < 0x7f80; b += 3) {
    // bfloat values, ties (low half 0x8000) and neighbours, both signs
    for (const s of [0, 0x80000000]) {
      const at = ((b << 16) | s) >>> 0;
      out.push(at, (at | 0x8000) >>> 0, (at | 0x7fff) >>> 0, (at | 0x8001) >>> 0);
    }
  }
  // overflow edges, zeros, infinities, the smallest subnormals, NaN payloads
  for (const v of [65504, 65519, 65519.99, 65520, 65520.01, 3.4028234663852886e38, 2 ** -24, 2 ** -25, 2 ** -26]) {
    out.push(float32Bits(v), float32Bits(-v));
  }
  out.push(0, 0x80000000, 0x7f800000, 0xff800000, 1, 2, 0x80000001, 0x007fffff, 0x00400000, 0x33000000, 0x33000001);
  out.push(0x7f800001, 0x7fc00000, 0x7fffffff, 0xff800001, 0x7f802000, 0x7fa00000, 0xffc00001, 0x7f80e000, 0x7fbfffff);
  const random = lcg(12345);
  for (let i = 0; i < 120_000; i++) out.push(random());
  return Uint32Array.from(out);
}

const CONVERSIONS = `
#include <metal_stdlib>
using namespace metal;
kernel void half_to_float(const device ushort* in [[buffer(0)]], device uint* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
  out[i] = as_type<uint>(float(as_type<half>(in[i])));
}
kernel void bfloat_to_float(const device ushort* in [[buffer(0)]], device uint* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
  out[i] = as_type<uint>(float(as_type<bfloat>(in[i])));
}
kernel void float_to_half(const device uint* in [[buffer(0)]], device ushort* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
  out[i] = as_type<ushort>(half(as_type<float>(in[i])));
}
kernel void float_to_bfloat(const device uint* in [[buffer(0)]], device ushort* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
  out[i] = as_type<ushort>(bfloat(as_type<float>(in[i])));
}`;

function isNaN32(bits: number): boolean {
  return ((bits >>> 23) & 0xff) === 0xff && (bits & 0x7fffff) !== 0;
}

/** Runs a conversion kernel over `input`; returns the output words. */
function convert(name: string, input: Uint16Array | Uint32Array, outWords: "u16" | "u32"): Uint16Array | Uint32Array {
  const pipeline = rt.library(CONVERSIONS).pipeline(name);
  const inp = upload(input);
  const out = rt.newBuffer(input.length * (outWords === "u16" ? 2 : 4));
  try {
    run({
      pipeline,
      buffers: [
        { index: 0, buffer: inp, access: "read" },
        { index: 1, buffer: out, access: "write" },
      ],
      grid: input.length,
      threadgroup: 256,
    });
    return outWords === "u16" ? out.as(Uint16Array).slice() : out.as(Uint32Array).slice();
  } finally {
    inp.release();
    out.release();
  }
}

/** Indices where `got` differs from `want(input[i])`, as hex triples (first few). */
function mismatches(input: ArrayLike<number>, got: ArrayLike<number>, want: (x: number) => number, skip?: (x: number) => boolean): string[] {
  const bad: string[] = [];
  for (let i = 0; i < input.length; i++) {
    if (skip?.(input[i]!)) continue;
    const w = want(input[i]!) >>> 0;
    if ((got[i]! >>> 0) !== w && bad.length < 8) bad.push(`${input[i]!.toString(16)}→${got[i]!.toString(16)} (want ${w.toString(16)})`);
  }
  return bad;
}

describe("half and bfloat conversions are bit-exact", () => {
  const all16 = Uint16Array.from({ length: 65536 }, (_, i) => i);
  const halfNaN = (h: number) => (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
  const bfloatNaN = (b: number) => (b & 0x7f80) === 0x7f80 && (b & 0x7f) !== 0;

  test("half → float for all 65,536 bit patterns", () => {
    const got = convert("half_to_float", all16, "u32");
    expect(mismatches(all16, got, float32FromHalfRef, SIM ? undefined : halfNaN)).toEqual([]);
  });

  test("bfloat → float for all 65,536 bit patterns", () => {
    const got = convert("bfloat_to_float", all16, "u32");
    expect(mismatches(all16, got, float32FromBfloatRef, SIM ? undefined : bfloatNaN)).toEqual([]);
  });

  const inputs = conversionInputs();

  test(`float → half on ${inputs.length} float32 patterns (every half, ties, neighbours, subnormals, NaNs)`, () => {
    const got = convert("float_to_half", inputs, "u16");
    expect(mismatches(inputs, got, halfFromFloat32Ref, SIM ? undefined : isNaN32)).toEqual([]);
  });

  test(`float → bfloat on ${inputs.length} float32 patterns`, () => {
    const got = convert("float_to_bfloat", inputs, "u16");
    expect(mismatches(inputs, got, bfloatFromFloat32Ref, SIM ? undefined : isNaN32)).toEqual([]);
  });

  test("the references agree with the platform's float16 on every non-NaN pattern (a check of the references)", () => {
    const f16 = new Float16Array(1);
    const u16 = new Uint16Array(f16.buffer);
    const bad: string[] = [];
    for (const bits of inputs) {
      if (isNaN32(bits)) continue;
      scratch.setUint32(0, bits);
      f16[0] = scratch.getFloat32(0);
      if (u16[0] !== halfFromFloat32Ref(bits) && bad.length < 4) bad.push(bits.toString(16));
    }
    for (let h = 0; h < 65536; h++) {
      if (halfNaN(h)) continue;
      u16[0] = h;
      if (float32Bits(f16[0]!) !== float32FromHalfRef(h) && bad.length < 8) bad.push(`h${h.toString(16)}`);
    }
    expect(bad).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Threadgroups, simdgroups, barriers, collectives, simdgroup matrices.

const COLLECTIVES = `
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;

// Tree reduction over [[threadgroup(0)]] memory with a barrier per level.
kernel void tree_sum(const device int* x [[buffer(0)]], device int* sums [[buffer(1)]],
                     constant uint& n [[buffer(2)]], threadgroup int* scratch [[threadgroup(0)]],
                     uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                     uint size [[threads_per_threadgroup]], uint group [[threadgroup_position_in_grid]]) {
  scratch[lid] = gid < n ? x[gid] : 0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = size / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) sums[group] = scratch[0];
}

// Exclusive scan across a threadgroup: simd_prefix_exclusive_sum within each simdgroup, then over
// the simdgroups' totals.
kernel void block_scan(const device int* x [[buffer(0)]], device int* y [[buffer(1)]],
                       uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup int totals[32];
  const int v = x[gid];
  const int prefix = simd_prefix_exclusive_sum(v);
  const int total = simd_sum(v);
  if (lane == 0) totals[sg] = total;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    const int t = lane < nsg ? totals[lane] : 0;
    const int before = simd_prefix_exclusive_sum(t);
    if (lane < nsg) totals[lane] = before;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid] = prefix + totals[sg];
}

// Butterfly all-reduce with simd_shuffle_xor: every lane ends with its simdgroup's sum and max.
kernel void butterfly(const device float* x [[buffer(0)]], device float* sums [[buffer(1)]],
                      device float* maxima [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  float s = x[gid], m = x[gid];
  for (ushort offset = 16; offset > 0; offset >>= 1) {
    s += simd_shuffle_xor(s, offset);
    m = max(m, simd_shuffle_xor(m, offset));
  }
  sums[gid] = s;
  maxima[gid] = m;
}

// C = A * B (64x64) from 8x8 simdgroup matrices: one output tile per simdgroup, 4 per group.
kernel void matmul64(const device float* A [[buffer(0)]], const device float* B [[buffer(1)]],
                     device float* C [[buffer(2)]], uint sg [[simdgroup_index_in_threadgroup]],
                     uint group [[threadgroup_position_in_grid]]) {
  const uint tile = group * 4 + sg, ti = tile / 8, tj = tile % 8;
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < 64; k += 8) {
    simdgroup_float8x8 a, b;
    simdgroup_load(a, A + ti * 8 * 64 + k, 64);
    simdgroup_load(b, B + k * 64 + tj * 8, 64);
    simdgroup_multiply_accumulate(acc, a, b, acc);
  }
  simdgroup_store(acc, C + ti * 8 * 64 + tj * 8, 64);
}

// Edge threadgroups: only the grid's threads run, and a partial simdgroup's simd_sum sees only them.
kernel void edge(device uint* out [[buffer(0)]], device uint* sums [[buffer(1)]],
                 uint gid [[thread_position_in_grid]]) {
  out[gid] = gid * 3u + 1u;
  sums[gid] = simd_sum(gid);
}

// Only 10 threads of each threadgroup reach the barrier; the others have returned.
kernel void partial_barrier(device float* y [[buffer(0)]], uint lid [[thread_index_in_threadgroup]],
                            uint gid [[thread_position_in_grid]]) {
  if (lid >= 10) return;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid] = 1.0f;
}`;

describe("threadgroups, simdgroups and collectives match exact references", () => {
  const lib = rt.library(COLLECTIVES);

  test("threadgroup-memory tree reduction with barriers (100,003 ints, 256-thread groups)", () => {
    const n = 100_003;
    const random = lcg(7);
    const x = Int32Array.from({ length: n }, () => (random() % 2001) - 1000);
    const groups = Math.ceil(n / 256);
    const xs = upload(x);
    const sums = filled(groups, 0xdeadbeef);
    run({
      pipeline: lib.pipeline("tree_sum"),
      buffers: [
        { index: 0, buffer: xs, access: "read" },
        { index: 1, buffer: sums, access: "write" },
      ],
      bytes: [{ index: 2, data: new Uint32Array([n]) }],
      threadgroupMemory: [{ index: 0, length: 256 * 4 }],
      grid: groups,
      threadgroup: 256,
      mode: "threadgroups",
    });
    const want = new Int32Array(groups);
    for (let i = 0; i < n; i++) want[Math.floor(i / 256)]! += x[i]!;
    expect(Array.from(sums.as(Int32Array))).toEqual(Array.from(want));
  });

  test("simd_prefix_exclusive_sum scan across 256-thread threadgroups (edge group included)", () => {
    const n = 1000;
    const random = lcg(11);
    const x = Int32Array.from({ length: n }, () => (random() % 201) - 100);
    const xs = upload(x);
    const y = filled(n, 0);
    run({
      pipeline: lib.pipeline("block_scan"),
      buffers: [
        { index: 0, buffer: xs, access: "read" },
        { index: 1, buffer: y, access: "write" },
      ],
      grid: n,
      threadgroup: 256,
    });
    const want = new Int32Array(n);
    for (let i = 0; i < n; i++) want[i] = i % 256 === 0 ? 0 : want[i - 1]! + x[i - 1]!;
    expect(Array.from(y.as(Int32Array))).toEqual(Array.from(want));
  });

  test("simd_shuffle_xor butterfly gives every lane its simdgroup's sum and max", () => {
    const n = 4096;
    const random = lcg(5);
    const x = Float32Array.from({ length: n }, () => (random() % 1999) - 999);
    const xs = upload(x);
    const sums = rt.newBuffer(4 * n);
    const maxima = rt.newBuffer(4 * n);
    run({
      pipeline: lib.pipeline("butterfly"),
      buffers: [
        { index: 0, buffer: xs, access: "read" },
        { index: 1, buffer: sums, access: "write" },
        { index: 2, buffer: maxima, access: "write" },
      ],
      grid: n,
      threadgroup: 128,
    });
    const wantSum = new Float64Array(n);
    const wantMax = new Float64Array(n);
    for (let g = 0; g < n; g += 32) {
      let s = 0;
      let m = -Infinity;
      for (let j = g; j < g + 32; j++) {
        s += x[j]!;
        m = Math.max(m, x[j]!);
      }
      wantSum.fill(s, g, g + 32);
      wantMax.fill(m, g, g + 32);
    }
    expect(Array.from(sums.as(Float32Array))).toEqual(Array.from(wantSum));
    expect(Array.from(maxima.as(Float32Array))).toEqual(Array.from(wantMax));
  });

  function matmul(a: Float32Array, b: Float32Array): Float32Array {
    const A = upload(a);
    const B = upload(b);
    const C = filled(64 * 64, 0x7fc00000);
    run({
      pipeline: lib.pipeline("matmul64"),
      buffers: [
        { index: 0, buffer: A, access: "read" },
        { index: 1, buffer: B, access: "read" },
        { index: 2, buffer: C, access: "write" },
      ],
      grid: 16,
      threadgroup: 128,
      mode: "threadgroups",
    });
    return C.as(Float32Array).slice();
  }

  test("64x64 matmul from 8x8 simdgroup matrices: exact on small integers", () => {
    const a = Float32Array.from({ length: 4096 }, (_, i) => ((i * 7) % 11) - 5);
    const b = Float32Array.from({ length: 4096 }, (_, i) => ((i * 5) % 13) - 6);
    const got = matmul(a, b);
    const bad: number[] = [];
    for (let r = 0; r < 64; r++)
      for (let c = 0; c < 64; c++) {
        let s = 0;
        for (let k = 0; k < 64; k++) s += a[r * 64 + k]! * b[k * 64 + c]!;
        if (got[r * 64 + c] !== s) bad.push(r * 64 + c);
      }
    expect(bad).toEqual([]);
  });

  test("64x64 matmul from 8x8 simdgroup matrices: random floats within float32 rounding", () => {
    const random = lcg(99);
    const uniform = () => random() / 2 ** 31 - 1;
    const a = Float32Array.from({ length: 4096 }, uniform);
    const b = Float32Array.from({ length: 4096 }, uniform);
    const got = matmul(a, b);
    const bad: string[] = [];
    for (let r = 0; r < 64; r++)
      for (let c = 0; c < 64; c++) {
        let s = 0;
        let magnitude = 0;
        for (let k = 0; k < 64; k++) {
          s += a[r * 64 + k]! * b[k * 64 + c]!;
          magnitude += Math.abs(a[r * 64 + k]! * b[k * 64 + c]!);
        }
        // 64 float32 fused multiply-adds: each rounding moves the sum by at most half an ulp of
        // a partial sum, itself at most `magnitude`.
        const bound = 64 * 2 ** -24 * magnitude;
        if (!(Math.abs(got[r * 64 + c]! - s) <= bound)) bad.push(`(${r}, ${c}): ${got[r * 64 + c]} vs ${s}`);
      }
    expect(bad).toEqual([]);
  });

  test("a 1000-thread grid in 256-thread threadgroups runs exactly 1000 threads; the partial simdgroup's simd_sum sums its 8 live lanes", () => {
    const out = filled(1024, 0xdeadbeef);
    const sums = filled(1024, 0xdeadbeef);
    run({
      pipeline: lib.pipeline("edge"),
      buffers: [
        { index: 0, buffer: out, access: "write" },
        { index: 1, buffer: sums, access: "write" },
      ],
      grid: 1000,
      threadgroup: 256,
    });
    const o = out.as(Uint32Array);
    const s = sums.as(Uint32Array);
    const wantOut = Array.from({ length: 1024 }, (_, g) => (g < 1000 ? g * 3 + 1 : 0xdeadbeef));
    const wantSums = Array.from({ length: 1024 }, (_, g) => {
      if (g >= 1000) return 0xdeadbeef;
      const base = g - (g % 32);
      let total = 0;
      for (let j = base; j < Math.min(base + 32, 1000); j++) total += j;
      return total;
    });
    expect(Array.from(o)).toEqual(wantOut);
    expect(Array.from(s)).toEqual(wantSums);
    expect(s[995]).toBe(992 + 993 + 994 + 995 + 996 + 997 + 998 + 999);
  });

  test.if(SIM)("a barrier reached by only some threads of a threadgroup is an error, not a hang", () => {
    const y = rt.newBuffer(4 * 128);
    const started = performance.now();
    const message = failure({
      pipeline: lib.pipeline("partial_barrier"),
      buffers: [{ index: 0, buffer: y, access: "write" }],
      grid: 128,
      threadgroup: 64,
    });
    expect(message).toContain("[mgsim dispatch] threadgroup_barrier reached by 10 of 64 threads in kernel 'partial_barrier'");
    expect(message).toContain("54 thread(s) exited without reaching it");
    expect(performance.now() - started).toBeLessThan(30_000);
  });
});

// ---------------------------------------------------------------------------------------------
// Checked mode, the on-disk cache, fault recovery: the simulator's own behaviour.

const PLANTED = `
#include <metal_stdlib>
using namespace metal;
// plant 0: correct; 1: thread 5 writes one element past the end instead of its own; 2: thread 7
// writes nothing.
kernel void planted(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                    constant uint& plant [[buffer(2)]], constant uint& n [[buffer(3)]],
                    uint gid [[thread_position_in_grid]]) {
  if (plant == 2 && gid == 7) return;
  const uint at = plant == 1 && gid == 5 ? n : gid;
  y[at] = x[gid] * 2.0f;
}`;

describe.if(SIM)("checked mode", () => {
  const pipeline = rt.library(PLANTED, { checked: true }).pipeline("planted");
  const n = 100;
  const x = Float32Array.from({ length: n }, (_, i) => i - 50.5);

  function planted(plant: number): { message: string; y: Float32Array } {
    const xs = upload(x);
    const y = rt.newBuffer(4 * n);
    const message = failure({
      pipeline,
      buffers: [
        { index: 0, buffer: xs, access: "read", length: 4 * n },
        { index: 1, buffer: y, access: "write", length: 4 * n },
      ],
      bytes: [
        { index: 2, data: new Uint32Array([plant]) },
        { index: 3, data: new Uint32Array([n]) },
      ],
      grid: n,
      threadgroup: 32,
      mustWrite: [1],
    });
    return { message, y: y.as(Float32Array).slice() };
  }

  test("without a plant, nothing is reported and every output is right", () => {
    const { message, y } = planted(0);
    expect(message).toBe("");
    expect(Array.from(y)).toEqual(Array.from(x, (v) => v * 2));
  });

  test("a planted out-of-bounds write is reported with kernel, buffer, element and thread", () => {
    const { message } = planted(1);
    expect(message).toContain("out-of-bounds write in kernel 'planted': buffer(1) element 100 (byte offset 400, 4 bytes; the binding has 400 bytes) by thread (5, 0, 0)");
  });

  test("a planted unwritten output element is reported (mustWrite)", () => {
    const { message, y } = planted(2);
    expect(message).toContain("unwritten output in kernel 'planted': buffer(1) has 4 byte(s) never written (about 1 element(s) of 4 bytes), first at element 7");
    expect(message).not.toContain("out-of-bounds");
    expect(Number.isNaN(y[7])).toBe(true); // poisoned
    expect(y[8]).toBe(x[8]! * 2);
  });

  test("record memory is reused by later dispatches (nothing of theirs counts) and released by clearCache", () => {
    planted(0);
    const before = rt.simulatorStats();
    // A clean dispatch after ones that wrote every element: no leftover record makes a race, and
    // an element left unwritten is still found.
    expect(planted(0).message).toBe("");
    expect(planted(2).message).toContain("first at element 7");
    expect(planted(0).message).toBe("");
    const after = rt.simulatorStats();
    expect(Number(after.checkMemoryReuses) - Number(before.checkMemoryReuses)).toBeGreaterThanOrEqual(3 * 5);
    expect(after.checkMemoryMaps).toBe(before.checkMemoryMaps);
    rt.clearCache();
    planted(0);
    expect(Number(rt.simulatorStats().checkMemoryMaps)).toBeGreaterThan(Number(after.checkMemoryMaps));
  });
});

describe.if(SIM)("the on-disk cache", () => {
  test("a second process reusing the cache does not run the compiler", async () => {
    const source = `
kernel void cached_axpb(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
  y[i] = x[i] * 3.0f + 0.25f;
}
// nonce ${process.pid}-${Date.now()}-${Math.random()}`;
    const before = rt.simulatorStats();
    rt.library(source);
    const after = rt.simulatorStats();
    expect(Number(after.compilerInvocations)).toBeGreaterThan(Number(before.compilerInvocations));
    const dir = mkdtempSync(join(tmpdir(), "mg-sim-cache-test-"));
    try {
      const script = join(dir, "child.ts");
      writeFileSync(
        script,
        `import { runtime } from ${JSON.stringify(RUNTIME_MODULE)};
const rt = runtime();
const pipeline = rt.library(await Bun.file(${JSON.stringify(join(dir, "source.metal"))}).text()).pipeline("cached_axpb");
const x = rt.newBuffer(16), y = rt.newBuffer(16);
x.as(Float32Array).set([1, 2, 3, 4]);
rt.newBatch().dispatch({ pipeline, buffers: [{ index: 0, buffer: x, access: "read" }, { index: 1, buffer: y, access: "write" }], grid: 4, threadgroup: 4 }).submit().wait();
console.log(JSON.stringify({ stats: rt.simulatorStats(), y: Array.from(y.as(Float32Array)) }));
`,
      );
      writeFileSync(join(dir, "source.metal"), source);
      const child = Bun.spawn(["bun", script], {
        env: { ...process.env, MG_SIM_CACHE: String(after.cacheDirectory) },
        stdout: "pipe",
        stderr: "pipe",
      });
      const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
      const report = JSON.parse(stdout.trim().split("\n").at(-1)!) as { stats: Record<string, unknown>; y: number[] };
      expect(report.stats.compilerInvocations).toBe(0);
      expect(Number(report.stats.diskCacheHits)).toBeGreaterThanOrEqual(1);
      expect(report.stats.cacheDirectory).toBe(after.cacheDirectory);
      expect(report.y).toEqual([3.25, 6.25, 9.25, 12.25]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const FAULTS = `
#include <metal_stdlib>
using namespace metal;
// Thread 37 writes through a pointer made from an integer (page zero: never mapped).
kernel void wild_write(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  out[gid] = 1.0f;
  if (gid == 37) *reinterpret_cast<device float*>(ulong(0x1000) + 4 * gid) = 2.0f;
}
kernel void wild_read(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  out[gid] = gid == 9 ? *reinterpret_cast<const device float*>(ulong(0x2000)) : 0.0f;
}
// 512 KiB of locals in a lane whose stack has 256 KiB (the barrier makes the threads fibers).
kernel void huge_locals(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  float big[131072];
  for (uint i = 0; i < 131072; ++i) big[i] = out[i & 63] + float(i);
  threadgroup_barrier(mem_flags::mem_none);
  out[gid] = big[(gid * 7919u) & 131071u];
}
kernel void iota(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]],
                 uint lane [[thread_index_in_simdgroup]]) {
  out[gid] = float(gid) + simd_sum(1.0f) * 0.0f + float(lane) * 0.0f;
}`;

describe.if(SIM)("a fault in kernel code fails the batch, never the process", () => {
  const lib = rt.library(FAULTS);
  const out = rt.newBuffer(4 * 4096);

  // Write-only: a dispatch that reads a buffer a failed dispatch wrote fails too (failure isolation).
  function dispatch(name: string, threads: number): string {
    return failure({ pipeline: lib.pipeline(name), buffers: [{ index: 0, buffer: out, access: "write" }], grid: threads, threadgroup: 64 });
  }

  function stillWorks(threads: number): boolean {
    out.as(Float32Array).fill(-1);
    const message = dispatch("iota", threads);
    const o = out.as(Float32Array);
    return message === "" && o.subarray(0, threads).every((v, i) => v === i);
  }

  for (const threads of [64, 4096]) {
    test(`a wild pointer write (${threads} threads)`, () => {
      expect(dispatch("wild_write", threads)).toContain(
        "[mgsim dispatch] kernel 'wild_write': invalid memory access at address 0x1094 (thread position (37, 0, 0)); run with MG_SIM_CHECK=1 to find the access",
      );
      expect(stillWorks(threads)).toBe(true);
    });

    test(`a wild pointer read (${threads} threads)`, () => {
      expect(dispatch("wild_read", threads)).toContain(
        "kernel 'wild_read': invalid memory access at address 0x2000 (thread position (9, 0, 0))",
      );
      expect(stillWorks(threads)).toBe(true);
    });

    test(`a lane's stack overflow (${threads} threads)`, () => {
      const message = dispatch("huge_locals", threads);
      expect(message).toContain("kernel 'huge_locals': stack overflow in a lane of kernel huge_locals");
      expect(message).toContain("MG_SIM_STACK_KB raises the 256 KiB limit");
      expect(stillWorks(threads)).toBe(true);
    });
  }

  test("a fault outside kernel code still reaches Bun's crash handler", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mg-sim-crash-test-"));
    try {
      const script = join(dir, "crash.ts");
      writeFileSync(
        script,
        `import { CFunction, type Pointer } from "bun:ffi";
import { runtime } from ${JSON.stringify(RUNTIME_MODULE)};
const rt = runtime();
const pipeline = rt.library("kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = 1.0f; }").pipeline("k");
const o = rt.newBuffer(256);
rt.newBatch().dispatch({ pipeline, buffers: [{ index: 0, buffer: o, access: "write" }], grid: 64, threadgroup: 64 }).submit().wait();
console.log("dispatched");
CFunction({ ptr: 16 as unknown as Pointer, returns: "void", args: [] })();
console.log("survived");
`,
      );
      const child = Bun.spawn(["bun", script], { env: process.env, stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      expect(stdout).toContain("dispatched");
      expect(stdout).not.toContain("survived");
      expect(code).not.toBe(0);
      expect(stdout + stderr).toContain("Segmentation fault at address 0x10");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Kernels that are valid Metal compile and run as on a GPU; kernels Metal's compiler rejects are
// rejected here too (on a Mac these run against Metal's own compiler).
describe("fidelity to Metal's compiler", () => {
  test("a kernel signature and its instantiations built by macros, with the library's macros", () => {
    const lib = rt.library(
      `#include <metal_stdlib>
using namespace metal;
#define ARGS device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]
kernel void from_args(ARGS) { out[i] = float(i) * SCALE + float(__METAL_VERSION__ >= 300); }
template <typename T, typename U>
[[kernel]] void widened(device T* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = T(U(i) * U(3)); }
template <typename T> struct Id { using type = T; };
#define INSTANTIATE(name, T, U) \\
  template [[host_name(name)]] [[kernel]] decltype(widened<T, U>) widened<T, U>;
INSTANTIATE("widened_f", float, Id<float>::type)
template [[host_name("widened_i")]] [[kernel]] decltype(widened<int, Id<Id<int>>::type::type>) widened<int, Id<Id<int>>::type::type>;`,
      { macros: { SCALE: "2.5f" }, languageVersion: 0x30001 },
    );
    const out = rt.newBuffer(4 * 37);
    run({ pipeline: lib.pipeline("from_args"), buffers: [{ index: 0, buffer: out, access: "write" }], grid: 37, threadgroup: 16 });
    expect(Array.from(out.as(Float32Array))).toEqual(Array.from({ length: 37 }, (_, i) => i * 2.5 + 1));
    run({ pipeline: lib.pipeline("widened_f"), buffers: [{ index: 0, buffer: out, access: "write" }], grid: 37, threadgroup: 16 });
    expect(Array.from(out.as(Float32Array))).toEqual(Array.from({ length: 37 }, (_, i) => i * 3));
    run({ pipeline: lib.pipeline("widened_i"), buffers: [{ index: 0, buffer: out, access: "write" }], grid: 37, threadgroup: 16 });
    expect(Array.from(out.as(Int32Array))).toEqual(Array.from({ length: 37 }, (_, i) => i * 3));
  });

  test.if(SIM)("checked mode: an element read through a device pointer deduces a template argument", () => {
    const lib = rt.library(
      `#include <metal_stdlib>
using namespace metal;
template <class T> T pick(T a, T b) { return a > b ? a : b; }
kernel void picked(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = pick(out[i], 2.0f); }`,
      { checked: true },
    );
    const values = new Float32Array([0, 1, 2, 3, 4, -5, 7.5, 1.25]);
    const out = upload(values);
    run({ pipeline: lib.pipeline("picked"), buffers: [{ index: 0, buffer: out, access: "readwrite" }], grid: 8, threadgroup: 8 });
    expect(Array.from(out.as(Float32Array))).toEqual(Array.from(values, (v) => Math.max(v, 2)));
  });

  const rejected: Array<[string, string, string]> = [
    [
      "atomic_fetch_max_explicit on atomic_float",
      "kernel void k(device atomic_float* a [[buffer(0)]]) { atomic_fetch_max_explicit(a, 1.0f, memory_order_relaxed); }",
      "MSL: atomic<float> has no fetch_min / fetch_max",
    ],
    [
      "atomic_fetch_add_explicit on atomic_ulong",
      "kernel void k(device atomic_ulong* a [[buffer(0)]]) { atomic_fetch_add_explicit(a, 1ul, memory_order_relaxed); }",
      "MSL: atomic<ulong> has no fetch-and-modify functions",
    ],
    [
      "simd_sum of a long",
      "kernel void k(device long* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = simd_sum(long(i)); }",
      "MSL: simd_sum takes a scalar or vector of char, short, int, half, float or bfloat",
    ],
  ];
  for (const [what, body, message] of rejected) {
    test(`${what} does not compile`, () => {
      const source = `#include <metal_stdlib>\nusing namespace metal;\n${body}`;
      let error = "";
      try {
        rt.library(source);
      } catch (e) {
        error = (e as Error).message;
      }
      expect(error).not.toBe("");
      if (SIM) expect(error).toContain(message);
    });
  }
});

describe.if(SIM)("the dispatch watchdog", () => {
  test("an endless kernel fails its batch after MG_SIM_TIMEOUT_MS, naming the kernel; the process keeps working", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mg-sim-watchdog-test-"));
    try {
      const script = join(dir, "endless.ts");
      writeFileSync(
        script,
        `import { runtime } from ${JSON.stringify(RUNTIME_MODULE)};
const rt = runtime();
const lib = rt.library(\`
kernel void endless(device uint* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  for (uint k = 0;; ++k) o[i] = k;
}
kernel void iota(device uint* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = i; }\`);
const o = rt.newBuffer(4 * 4096);
const run = (name: string) => {
  const t0 = performance.now();
  try {
    rt.newBatch().dispatch({ pipeline: lib.pipeline(name), buffers: [{ index: 0, buffer: o, access: "write" }], grid: 4096, threadgroup: 64 }).submit().wait(60);
    return { error: "", ms: performance.now() - t0 };
  } catch (e) {
    return { error: (e as Error).message, ms: performance.now() - t0 };
  }
};
const stuck = run("endless");
const after = run("iota");
const iota = Array.from(o.as(Uint32Array)).every((v, i) => v === i);
console.log(JSON.stringify({ stuck, after, iota }));
`,
      );
      const child = Bun.spawn(["bun", script], { env: { ...process.env, MG_SIM_TIMEOUT_MS: "400" }, stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
      const report = JSON.parse(stdout.trim().split("\n").at(-1)!) as {
        stuck: { error: string; ms: number };
        after: { error: string };
        iota: boolean;
      };
      expect(report.stuck.error).toContain("kernel 'endless': the dispatch ran longer than 400 ms (MG_SIM_TIMEOUT_MS) and was stopped");
      expect(report.stuck.ms).toBeGreaterThanOrEqual(400);
      expect(report.stuck.ms).toBeLessThan(20000);
      expect(report.after.error).toBe("");
      expect(report.iota).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
