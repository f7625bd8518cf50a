// Quantization in MLX's packed formats, bit for bit (MLX 0.32.4's CPU results).
//
// Affine mode: per group of `groupSize` consecutive elements along the last axis, a scale and a
// bias in the input's dtype; each element becomes round((w - bias) / scale) clamped to
// [0, 2^bits - 1], and the codes form a little-endian bit stream (element k at bit k·bits),
// stored as uint32 words. MLX's CPU kernel computes in float32 and rounds only the stored
// scale and bias to the dtype.
//
// Floating-point modes (mxfp4, mxfp8, nvfp4): one uint8 scale per group — an e8m0 exponent
// (group 32) or an e4m3 float (nvfp4, group 16) — and e2m1 (4-bit) or e4m3 (8-bit) codes. MLX's
// CPU computes them with ordinary ops in the input's dtype, so each step here rounds to that
// dtype where MLX's op would, and the fp4 code is the first nearest entry of the e2m1 table (an
// argmin), not the e2m1 encoder's tie rule. Checked against MLX 0.32.4 (whose e8m0 exponent is
// ⌈log2⌉, unlike the round(log2) of the MLX sources up to 0.32.1). Non-finite inputs give
// MLX-specific garbage (x86 NaN signs, integer-conversion overflow) and are not reproduced.
//
// Values are plain JS numbers that already hold a value of their dtype; `Rounding` maps a real
// number to the dtype's nearest value (Math.fround for float32 …).

import { type QuantizationMode } from "../../core/primitives/quantized.ts";
export { defaultQuantizationParams, QUANTIZATION_MODES, type QuantizationMode } from "../../core/primitives/quantized.ts";
export type Rounding = (x: number) => number;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const f16 = new Float16Array(1);
const u16 = new Uint16Array(f16.buffer);

function floatBits(x: number): number {
  f32[0] = x;
  return u32[0]!;
}
function floatFromBits(b: number): number {
  u32[0] = b >>> 0;
  return f32[0]!;
}

/** ⌈log2 x⌉ for a finite x > 0, exact (Math.log2 may be off by an ulp next to a power of two). */
export function ceilLog2(x: number): number {
  if (!(x > 0) || !Number.isFinite(x)) return Math.log2(x); // NaN, ±Infinity: no exponent
  let e = Math.floor(Math.log2(x));
  while (Math.pow(2, e) > x) e--;
  while (Math.pow(2, e + 1) <= x) e++;
  return Math.pow(2, e) === x ? e : e + 1;
}

/** std::rint: round half to even. */
export function rint(x: number): number {
  if (!Number.isFinite(x)) return x;
  const r = Math.round(x); // half up
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

// ---------------------------------------------------------------------------------------------
// fp8 e4m3 (MLX's ToFP8/FromFP8), fp4 e2m1 table

/** float32 → e4m3 bits, MLX's (PyTorch's) conversion: round to nearest even, saturating at
 *  ±448 (0x7E), and NaN saturates too (MLX's CPU path has no NaN branch). */
export function toFp8E4m3(x: number): number {
  let bits = floatBits(x);
  const sign = (bits & 0x80000000) >>> 0;
  bits = (bits ^ sign) >>> 0;
  let result: number;
  if (bits >= 543 << 21) {
    result = 0x7e;
  } else if (bits < 121 << 23) {
    // Small magnitudes: adding 2^-6·2^(−3)…(the denorm mask's float) rounds the mantissa in float32.
    const denorm = 141 << 23;
    const sum = floatBits(Math.fround(floatFromBits(bits) + floatFromBits(denorm)));
    result = (sum - denorm) & 0xff;
  } else {
    const mantOdd = (bits >>> 20) & 1;
    const adj = (bits + (((7 - 127) << 23) >>> 0) + 0x7ffff + mantOdd) >>> 0;
    result = (adj >>> 20) & 0xff;
  }
  return result | (sign >>> 24);
}

/** e4m3 bits → value (as MLX: the bits shifted into a half, times 256). */
export function fromFp8E4m3(b: number): number {
  u16[0] = (b & 127) << 7;
  const v = f16[0]! * 256;
  return b & 128 ? -v : v;
}

/** The e2m1 values in code order (MLX's FP4_LUT). */
export const FP4_E2M1 = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6] as const;

// ---------------------------------------------------------------------------------------------
// Affine

function checkAffine(groupSize: number, bits: number): void {
  if (groupSize !== 32 && groupSize !== 64 && groupSize !== 128) {
    throw new Error(`[quantize] The requested group size ${groupSize} is not supported. The supported group sizes are 32, 64, and 128.`);
  }
  if (!(bits >= 2 && bits <= 8) || bits === 7 || !Number.isInteger(bits)) {
    throw new Error(`[quantize] The requested number of bits ${bits} is not supported. The supported bits are 2, 3, 4, 5, 6 and 8.`);
  }
}

export interface AffineQuantized {
  /** n·bits/32 words: the codes as a little-endian bit stream. */
  wq: Uint32Array;
  /** One per group, rounded to the input's dtype. */
  scales: Float64Array;
  biases: Float64Array;
}

/**
 * Affine quantization of `w` (length a multiple of groupSize, groups consecutive) as MLX's CPU
 * kernel: float32 arithmetic, scale and bias rounded by `round` (the input's dtype) when stored.
 */
export function affineQuantize(w: ArrayLike<number>, groupSize: number, bits: number, round: Rounding): AffineQuantized {
  checkAffine(groupSize, bits);
  const n = w.length;
  const groups = n / groupSize;
  const nBins = (1 << bits) - 1;
  const eps = Math.fround(1e-7);
  const wq = new Uint32Array((n * bits) / 32);
  const scales = new Float64Array(groups);
  const biases = new Float64Array(groups);
  const fr = Math.fround;
  for (let g = 0; g < groups; g++) {
    const base = g * groupSize;
    let wMin = Infinity;
    let wMax = -Infinity;
    for (let j = 0; j < groupSize; j++) {
      const v = w[base + j]!;
      // std::max/std::min keep the first argument when a comparison with NaN is false.
      if (wMax < v) wMax = v;
      if (v < wMin) wMin = v;
    }
    // The edge with the larger magnitude is represented exactly (code 0 or 2^bits - 1).
    const mask = Math.abs(wMin) > Math.abs(wMax);
    const range = fr(fr(wMax - wMin) / nBins);
    let scale = range < eps ? eps : range; // std::max(range, eps): a NaN range stays NaN
    scale = mask ? scale : -scale;
    const edge = mask ? wMin : wMax;
    const q0 = rint(fr(edge / scale));
    let bias = 0;
    if (q0 !== 0) {
      scale = fr(edge / q0);
      bias = edge;
    }
    // Codes: bit position (base + j)·bits in the row's stream.
    let bitPos = base * bits;
    for (let j = 0; j < groupSize; j++, bitPos += bits) {
      let q = rint(fr(fr(w[base + j]! - bias) / scale));
      q = Math.min(Math.max(q, 0), nBins); // std::min(std::max(q, 0), n): NaN → 0 then stays
      if (Number.isNaN(q)) q = 0;
      const word = bitPos >>> 5;
      const shift = bitPos & 31;
      wq[word] = (wq[word]! | (q << shift)) >>> 0;
      if (shift + bits > 32) wq[word + 1] = (wq[word + 1]! | (q >>> (32 - shift))) >>> 0;
    }
    scales[g] = round(scale);
    biases[g] = round(bias);
  }
  return { wq, scales, biases };
}

/** The integer codes of an affine-packed stream (n codes starting at element `start`). */
export function unpackCodes(wq: Uint32Array, bits: number, n: number, start = 0): Uint8Array {
  const out = new Uint8Array(n);
  const mask = (1 << bits) - 1;
  let bitPos = start * bits;
  for (let i = 0; i < n; i++, bitPos += bits) {
    const word = bitPos >>> 5;
    const shift = bitPos & 31;
    let v = wq[word]! >>> shift;
    if (shift + bits > 32) v |= wq[word + 1]! << (32 - shift);
    out[i] = v & mask;
  }
  return out;
}

/** w = code·scale + bias per group, each op rounded to the scales' dtype (MLX's dequantize). */
export function affineDequantize(
  wq: Uint32Array,
  scales: ArrayLike<number>,
  biases: ArrayLike<number>,
  groupSize: number,
  bits: number,
  round: Rounding,
): Float64Array {
  const n = (wq.length * 32) / bits;
  const codes = unpackCodes(wq, bits, n);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const g = (i / groupSize) | 0;
    out[i] = round(round(codes[i]! * scales[g]!) + biases[g]!);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Floating-point modes

function checkFpMode(op: string, mode: QuantizationMode, groupSize: number, bits: number): void {
  const gs = mode === "nvfp4" ? 16 : 32;
  const b = mode === "mxfp8" ? 8 : 4;
  if (groupSize !== gs) throw new Error(`[${op}] ${mode} quantization requires group size ${gs} but got ${groupSize}.`);
  if (bits !== b) throw new Error(`[${op}] ${mode} quantization requires bits to be ${b} but got ${bits}.`);
}

export interface FpQuantized {
  wq: Uint32Array;
  /** One uint8 per group: e8m0 exponent (mx modes) or e4m3 value (nvfp4). */
  scales: Uint8Array;
}

/** Index of the first minimum of |x - table[i]|, each difference rounded by `round` (argmin). */
function nearestFp4(x: number, table: readonly number[], round: Rounding): number {
  let best = 0;
  let bestD = Math.abs(round(x - table[0]!));
  if (Number.isNaN(bestD)) return 0; // MLX's argmin keeps the first NaN
  for (let i = 1; i < 16; i++) {
    const d = Math.abs(round(x - table[i]!));
    if (d < bestD || Number.isNaN(d)) {
      best = i;
      bestD = d;
      if (Number.isNaN(d)) break;
    }
  }
  return best;
}

/**
 * mxfp4 / mxfp8 / nvfp4 quantization as MLX's CPU graph: `round` is the input's dtype,
 * `globalScale` (nvfp4 only) a float32 value.
 */
export function fpQuantize(
  w: ArrayLike<number>,
  mode: Exclude<QuantizationMode, "affine">,
  groupSize: number,
  bits: number,
  round: Rounding,
  globalScale?: number,
): FpQuantized {
  checkFpMode("quantize", mode, groupSize, bits);
  const n = w.length;
  const groups = n / groupSize;
  const maxval = bits === 4 ? 6 : 448;
  const fr = Math.fround;
  const wq = new Uint32Array((n * bits) / 32);
  const scales = new Uint8Array(groups);
  const bytes = new Uint8Array(wq.buffer);
  // nvfp4 divides after the e4m3 scale in the dtype, then multiplies by a float32 array: the
  // codes are then chosen in float32 (promotion), while the mx modes stay in the dtype.
  const encode = globalScale === undefined ? 1 : fr(fr(448 * 6) / globalScale);
  const lutRound: Rounding = mode === "nvfp4" ? fr : round;
  const table = FP4_E2M1.map((v) => round(v));
  const scaled = new Float64Array(groupSize);
  for (let g = 0; g < groups; g++) {
    const base = g * groupSize;
    let amax = -Infinity;
    for (let j = 0; j < groupSize; j++) {
      const a = Math.abs(w[base + j]!);
      if (a > amax || Number.isNaN(a)) amax = Number.isNaN(amax) ? amax : a;
    }
    let s = round(amax / maxval);
    if (mode === "nvfp4") {
      const code = toFp8E4m3(fr(s * encode)); // multiply by the float32 encode (promoted)
      scales[g] = code;
      const sv = round(fromFp8E4m3(code));
      for (let j = 0; j < groupSize; j++) scaled[j] = fr(round(w[base + j]! / sv) * encode);
    } else {
      // e8m0: the exponent ⌈log2 s⌉, exactly (0 for a zero scale), so the group's largest
      // magnitude maps to at most the element format's maximum; MLX 0.32.4 stores e + 127
      // wrapped to a byte (no clamping), and divides by 2^e in the dtype.
      const e = s === 0 ? 0 : ceilLog2(s);
      const p = round(Math.pow(2, e));
      for (let j = 0; j < groupSize; j++) scaled[j] = round(w[base + j]! / p);
      scales[g] = Number.isFinite(e) ? (e + 127) & 0xff : 0;
    }
    if (bits === 4) {
      for (let j = 0; j < groupSize; j++) {
        const code = nearestFp4(scaled[j]!, table, lutRound);
        const i = base + j;
        bytes[i >>> 1] = bytes[i >>> 1]! | (code << ((i & 1) * 4));
      }
    } else {
      for (let j = 0; j < groupSize; j++) bytes[base + j] = toFp8E4m3(scaled[j]!);
    }
  }
  return { wq, scales };
}

/**
 * Dequantization of the floating-point modes as MLX's CPU graph, into `round` (the output
 * dtype). With a global scale (nvfp4) MLX's arithmetic promotes to float32: `outRound` is then
 * Math.fround whatever dtype was asked for (the caller reports the float32 dtype).
 */
export function fpDequantize(
  wq: Uint32Array,
  scales: ArrayLike<number>,
  mode: Exclude<QuantizationMode, "affine">,
  groupSize: number,
  bits: number,
  round: Rounding,
  globalScale?: number,
): Float64Array {
  checkFpMode("dequantize", mode, groupSize, bits);
  const n = (wq.length * 32) / bits;
  const bytes = new Uint8Array(wq.buffer, wq.byteOffset, wq.byteLength);
  const out = new Float64Array(n);
  const fr = Math.fround;
  for (let g = 0; g < n / groupSize; g++) {
    const sb = scales[g]!;
    let s: number;
    let outRound = round;
    if (mode === "nvfp4") {
      s = round(fromFp8E4m3(sb));
      if (globalScale !== undefined) {
        s = fr(s * fr(globalScale / round(448 * 6)));
        outRound = fr;
      }
    } else {
      s = round(Math.pow(2, round(sb - 127)));
    }
    for (let j = 0; j < groupSize; j++) {
      const i = g * groupSize + j;
      const v = bits === 4 ? FP4_E2M1[(bytes[i >>> 1]! >>> ((i & 1) * 4)) & 15]! : fromFp8E4m3(bytes[i]!);
      out[i] = outRound(round(v) * s);
    }
  }
  return out;
}

/** Dequantized weights in float64 for the matmul references (exact codes times scales). */
export function dequantizeAny(
  mode: QuantizationMode,
  wq: Uint32Array,
  scales: ArrayLike<number>,
  biases: ArrayLike<number> | null,
  groupSize: number,
  bits: number,
  round: Rounding,
  globalScale?: number,
): Float64Array {
  return mode === "affine"
    ? affineDequantize(wq, scales, biases!, groupSize, bits, round)
    : fpDequantize(wq, scales, mode, groupSize, bits, round, globalScale);
}
