// The quantization kernels against MLX 0.32.4's own outputs, bit for bit
// (test/fixtures/quantize/cases.json from scripts/quantize-fixtures.py; MG_QUANT_FIXTURE points
// at a larger generated file for a longer local run).
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import {
  affineDequantize, affineQuantize, fpDequantize, fpQuantize, fromFp8E4m3, rint, toFp8E4m3,
  unpackCodes, type QuantizationMode, type Rounding,
} from "../../../ts/backend/cpu/quantize.ts";
import { bfloat16BitsFromNumber, numberFromBfloat16Bits, roundBfloat16 } from "../../../ts/core/dtype.ts";
import { fnv1a, fromBase64, genValues, type FloatDtypeName } from "../../fixtures/quantize/inputs.ts";

const ROUND: Record<FloatDtypeName, Rounding> = { float32: Math.fround, float16: Math.f16round, bfloat16: roundBfloat16 };

/** Element bytes; NaNs as the positive quiet NaN, as the fixture writes them (an x86 NaN's
 *  sign and payload mean nothing, and JS engines do not keep them). */
function encode(values: ArrayLike<number>, dtype: string): Uint8Array {
  if (dtype === "float32") {
    const u = new Uint32Array(Float32Array.from(values).buffer);
    for (let i = 0; i < u.length; i++) if ((u[i]! & 0x7fffffff) > 0x7f800000) u[i] = 0x7fc00000;
    return new Uint8Array(u.buffer);
  }
  if (dtype === "float16") {
    const u = new Uint16Array(Float16Array.from(values).buffer);
    for (let i = 0; i < u.length; i++) if ((u[i]! & 0x7fff) > 0x7c00) u[i] = 0x7e00;
    return new Uint8Array(u.buffer);
  }
  if (dtype === "bfloat16") return new Uint8Array(Uint16Array.from(Array.from(values, (v) => (Number.isNaN(v) ? 0x7fc0 : bfloat16BitsFromNumber(v)))).buffer);
  throw new Error(dtype);
}

function decode(bytes: Uint8Array, dtype: string): Float64Array {
  const b = bytes.slice().buffer;
  if (dtype === "float32") return Float64Array.from(new Float32Array(b));
  if (dtype === "float16") return Float64Array.from(new Float16Array(b));
  return Float64Array.from(new Uint16Array(b), numberFromBfloat16Bits);
}

interface Case {
  dtype: FloatDtypeName;
  mode: QuantizationMode;
  groupSize: number;
  bits: number;
  kind: string;
  seed: number;
  shape: number[];
  globalScale: number | null;
  input: number;
  wq: string;
  scales: string;
  biases?: string;
  dequantize: Record<string, { dtype: string; hash: number }>;
}

const path = process.env.MG_QUANT_FIXTURE ?? new URL("../../fixtures/quantize/cases.json", import.meta.url).pathname;
const fixture = JSON.parse(readFileSync(path, "utf8")) as { mlx: string; cases: Case[] };

function hex(bytes: Uint8Array, at: number, n = 8): string {
  return Array.from(bytes.slice(at, at + n), (b) => b.toString(16).padStart(2, "0")).join(" ");
}

/** The first differing byte, for a readable failure. */
function sameBytes(name: string, got: Uint8Array, want: Uint8Array): string | null {
  if (got.length !== want.length) return `${name}: ${got.length} bytes, MLX ${want.length}`;
  for (let i = 0; i < got.length; i++) {
    if (got[i] !== want[i]) return `${name}: byte ${i} differs: got ${hex(got, i & ~3)}, MLX ${hex(want, i & ~3)}`;
  }
  return null;
}

describe(`quantize kernels against MLX ${fixture.mlx} (${fixture.cases.length} cases)`, () => {
  test("every case: wq, scales, biases bit for bit; dequantize hashes", () => {
    const failures: string[] = [];
    for (const c of fixture.cases) {
      const label = `${c.dtype} ${c.mode} gs=${c.groupSize} bits=${c.bits} ${c.kind} seed=${c.seed}`;
      const cols = c.shape[c.shape.length - 1]!;
      const rows = c.shape.reduce((a, b) => a * b, 1) / cols;
      const round = ROUND[c.dtype];
      const w = genValues(c.kind, c.dtype, rows, cols, c.groupSize, c.seed).map(round);
      if (fnv1a(encode(w, c.dtype)) !== c.input) {
        failures.push(`${label}: the regenerated input differs from the one MLX saw`);
        continue;
      }
      let wq: Uint32Array;
      let scaleBytes: Uint8Array;
      let deq: (dtype: string) => Float64Array;
      const g = c.globalScale ?? undefined;
      if (c.mode === "affine") {
        const q = affineQuantize(w, c.groupSize, c.bits, round);
        wq = q.wq;
        scaleBytes = encode(q.scales, c.dtype);
        const err = sameBytes("biases", encode(q.biases, c.dtype), fromBase64(c.biases!));
        if (err) failures.push(`${label}: ${err}`);
        // dequantize computes in the scales' dtype, then casts to the requested one
        deq = (dt) => affineDequantize(wq, q.scales, q.biases, c.groupSize, c.bits, round).map(ROUND[dt as FloatDtypeName]);
      } else {
        const q = fpQuantize(w, c.mode, c.groupSize, c.bits, round, g);
        wq = q.wq;
        scaleBytes = q.scales;
        deq = (dt) => fpDequantize(wq, q.scales, c.mode as "mxfp4", c.groupSize, c.bits, ROUND[dt as FloatDtypeName], g);
      }
      for (const err of [
        sameBytes("wq", new Uint8Array(wq.buffer), fromBase64(c.wq)),
        sameBytes("scales", scaleBytes, fromBase64(c.scales)),
      ]) if (err) failures.push(`${label}: ${err}`);
      for (const [key, d] of Object.entries(c.dequantize)) {
        const dt = key === "default" ? (c.mode === "affine" ? c.dtype : "bfloat16") : key;
        const values = deq(dt);
        if (fnv1a(encode(values, d.dtype)) !== d.hash) failures.push(`${label}: dequantize to ${dt} (${d.dtype}) differs`);
      }
    }
    expect(failures.slice(0, 20)).toEqual([]);
  });
});

describe("quantize building blocks", () => {
  test("rint rounds half to even", () => {
    expect([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, -2.6].map(rint)).toEqual([0, 2, 2, -0, -2, -2, 2, -3]);
  });

  test("e4m3: every code round-trips, ties round to even, saturation at 448", () => {
    for (let b = 0; b < 256; b++) {
      if ((b & 0x7f) === 0x7f) continue; // NaN codes
      expect(toFp8E4m3(fromFp8E4m3(b))).toBe(b === 0x80 ? 0x80 : b);
    }
    expect(fromFp8E4m3(0x7e)).toBe(448);
    expect(toFp8E4m3(1e6)).toBe(0x7e);
    expect(toFp8E4m3(-1e6)).toBe(0xfe);
    // 1.0625 lies halfway between 1 (0x38) and 1.125 (0x39): even mantissa wins.
    expect(toFp8E4m3(1.0625)).toBe(0x38);
    expect(toFp8E4m3(1.1875)).toBe(0x3a);
    // Smallest subnormal 2^-9, half of it ties to zero.
    expect(fromFp8E4m3(1)).toBe(2 ** -9);
    expect(toFp8E4m3(2 ** -10)).toBe(0);
    expect(toFp8E4m3(3 * 2 ** -10)).toBe(2);
  });

  test("affine codes form a little-endian bit stream (3 bits straddle words)", () => {
    const w = Array.from({ length: 32 }, (_, i) => i % 8);
    const { wq, scales, biases } = affineQuantize(w, 32, 3, Math.fround);
    // MLX anchors the edge of larger magnitude (max = 7 here) at a code with a negative scale:
    // w = 7 - code.
    expect(Array.from(scales)).toEqual([-1]);
    expect(Array.from(biases)).toEqual([7]);
    expect(wq.length).toBe(3);
    // codes 7 - (i mod 8): the first word holds codes 0..9 and the low 2 bits of code 10.
    let expected = 0n;
    for (let i = 0; i < 32; i++) expected |= BigInt(7 - (i % 8)) << BigInt(3 * i);
    const got = BigInt(wq[0]!) | (BigInt(wq[1]!) << 32n) | (BigInt(wq[2]!) << 64n);
    expect(got).toBe(expected);
    expect(Array.from(unpackCodes(wq, 3, 32))).toEqual(w.map((v) => 7 - v));
  });
});
