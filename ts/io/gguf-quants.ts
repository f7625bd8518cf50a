// GGUF's block-quantized tensors, converted the way MLX loads them:
// - Q4_0, Q4_1 and Q8_0 become MLX's affine quantization with group size 32 (what
//   mx.dequantize(w, scales, biases, 32, bits) reads): packed uint32 weights, float16 scales and
//   biases, element i of a group at bits [b*i, b*(i+1)) of its word.
// - Q2_K, Q4_K and Q6_K are dequantized to float16 (MLX's fallback), computing each value in
//   float32 as ggml's reference does. MLX 0.32.4's Q4_K applies every even sub-block's scale and
//   minimum to the odd sub-block after it; here every sub-block uses its own (ggml, gguf-py).

/** Bytes per block and elements per block of each supported quantized type. */
export interface QuantType {
  readonly name: string;
  readonly blockElements: number;
  readonly blockBytes: number;
  /** MLX's bits for the repacked types; 0 for the ones dequantized to float16. */
  readonly bits: number;
}

export const Q4_0: QuantType = { name: "Q4_0", blockElements: 32, blockBytes: 18, bits: 4 };
export const Q4_1: QuantType = { name: "Q4_1", blockElements: 32, blockBytes: 20, bits: 4 };
export const Q8_0: QuantType = { name: "Q8_0", blockElements: 32, blockBytes: 34, bits: 8 };
export const Q2_K: QuantType = { name: "Q2_K", blockElements: 256, blockBytes: 84, bits: 0 };
export const Q4_K: QuantType = { name: "Q4_K", blockElements: 256, blockBytes: 144, bits: 0 };
export const Q6_K: QuantType = { name: "Q6_K", blockElements: 256, blockBytes: 210, bits: 0 };

const f16 = new Float16Array(1);
const f16Bits = new Uint16Array(f16.buffer);
function half(raw: Uint8Array, at: number): number {
  f16Bits[0] = raw[at]! | (raw[at + 1]! << 8);
  return f16[0]!;
}
const fr = Math.fround;

/**
 * Repacks `blocks` whole blocks of Q4_0/Q4_1/Q8_0 from `raw` into MLX's layout: `weights` (words
 * per block: 4 for 4-bit, 8 for 8-bit), `scales` and `biases` (float16 bits, one per block).
 */
export function repackBlocks(
  type: QuantType, raw: Uint8Array, blocks: number, weights: Uint32Array, scales: Uint16Array, biases: Uint16Array,
): void {
  const out16 = new Float16Array(biases.buffer, biases.byteOffset, biases.length);
  for (let b = 0; b < blocks; b++) {
    const at = b * type.blockBytes;
    const dBits = raw[at]! | (raw[at + 1]! << 8);
    scales[b] = dBits;
    if (type === Q4_1) {
      biases[b] = raw[at + 2]! | (raw[at + 3]! << 8);
    } else {
      // -8·d and -128·d are exact scalings; the float16 rounding only matters on overflow (-inf).
      out16[b] = (type === Q4_0 ? -8 : -128) * half(raw, at);
    }
    if (type === Q8_0) {
      // 32 signed bytes → unsigned (q + 128), four per word.
      const q = at + 2;
      for (let k = 0; k < 8; k++) {
        const p = q + 4 * k;
        weights[b * 8 + k] =
          (((raw[p]! ^ 0x80) | ((raw[p + 1]! ^ 0x80) << 8) | ((raw[p + 2]! ^ 0x80) << 16)) >>> 0) +
          (raw[p + 3]! ^ 0x80) * 0x1000000;
      }
    } else {
      // Nibble j of byte j holds element j (low) and element j + 16 (high).
      const q = at + (type === Q4_1 ? 4 : 2);
      for (let k = 0; k < 4; k++) {
        const base = q + (k & 1) * 8;
        const shift = k < 2 ? 0 : 4;
        let w = 0;
        for (let i = 7; i >= 0; i--) w = w * 16 + ((raw[base + i]! >> shift) & 0xf);
        weights[b * 4 + k] = w;
      }
    }
  }
}

/** Dequantizes `blocks` whole K-quant blocks of `raw` into `out` (float16), 256 values each. */
export function dequantizeBlocks(type: QuantType, raw: Uint8Array, blocks: number, out: Float16Array): void {
  const y = new Float32Array(256);
  for (let b = 0; b < blocks; b++) {
    const at = b * type.blockBytes;
    if (type === Q4_K) dequantQ4K(raw, at, y);
    else if (type === Q6_K) dequantQ6K(raw, at, y);
    else dequantQ2K(raw, at, y);
    out.set(y, b * 256);
  }
}

/** Q4_K: d, dmin (f16), 12 bytes of 6-bit sub-block scales and minimums, 128 bytes of nibbles. */
function dequantQ4K(raw: Uint8Array, at: number, y: Float32Array): void {
  const d = half(raw, at);
  const dmin = half(raw, at + 2);
  const sc = at + 4;
  const q0 = at + 16;
  // Sub-block j's 6-bit scale and minimum: bytes 0-3 and 4-7 hold j < 4 directly; j ≥ 4 is split
  // between the low/high nibbles of bytes 8-11 and the top two bits of bytes 0-7.
  const scaleMin = (j: number): [number, number] =>
    j < 4
      ? [raw[sc + j]! & 63, raw[sc + j + 4]! & 63]
      : [(raw[sc + j + 4]! & 0xf) | ((raw[sc + j - 4]! >> 6) << 4), (raw[sc + j + 4]! >> 4) | ((raw[sc + j]! >> 6) << 4)];
  for (let c = 0; c < 4; c++) {
    const [s1, m1] = scaleMin(2 * c);
    const [s2, m2] = scaleMin(2 * c + 1);
    const d1 = fr(d * s1);
    const min1 = fr(dmin * m1);
    const d2 = fr(d * s2);
    const min2 = fr(dmin * m2);
    const q = q0 + 32 * c;
    for (let l = 0; l < 32; l++) {
      y[64 * c + l] = fr(fr(d1 * (raw[q + l]! & 0xf)) - min1);
      y[64 * c + 32 + l] = fr(fr(d2 * (raw[q + l]! >> 4)) - min2);
    }
  }
}

/** Q6_K: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 int8 scales, d (f16). */
function dequantQ6K(raw: Uint8Array, at: number, y: Float32Array): void {
  const d = half(raw, at + 208);
  for (let n = 0; n < 2; n++) {
    const ql = at + 64 * n;
    const qh = at + 128 + 32 * n;
    const sc = at + 192 + 8 * n;
    const scale = (k: number) => fr(d * ((raw[sc + k]! << 24) >> 24));
    for (let l = 0; l < 32; l++) {
      const is = l >> 4;
      const h = raw[qh + l]!;
      const q1 = ((raw[ql + l]! & 0xf) | ((h & 3) << 4)) - 32;
      const q2 = ((raw[ql + l + 32]! & 0xf) | (((h >> 2) & 3) << 4)) - 32;
      const q3 = ((raw[ql + l]! >> 4) | (((h >> 4) & 3) << 4)) - 32;
      const q4 = ((raw[ql + l + 32]! >> 4) | (((h >> 6) & 3) << 4)) - 32;
      y[128 * n + l] = fr(scale(is) * q1);
      y[128 * n + l + 32] = fr(scale(is + 2) * q2);
      y[128 * n + l + 64] = fr(scale(is + 4) * q3);
      y[128 * n + l + 96] = fr(scale(is + 6) * q4);
    }
  }
}

/** Q2_K: 16 bytes of 4-bit scale/minimum pairs, 64 bytes of 2-bit values, d, dmin (f16). */
function dequantQ2K(raw: Uint8Array, at: number, y: Float32Array): void {
  const d = half(raw, at + 80);
  const dmin = half(raw, at + 82);
  let is = 0;
  let o = 0;
  for (let n = 0; n < 2; n++) {
    const q = at + 16 + 32 * n;
    for (let shift = 0; shift < 8; shift += 2) {
      for (let half16 = 0; half16 < 2; half16++) {
        const s = raw[at + is++]!;
        const dl = fr(d * (s & 0xf));
        const ml = fr(dmin * (s >> 4));
        for (let l = 0; l < 16; l++) y[o++] = fr(fr(dl * ((raw[q + 16 * half16 + l]! >> shift) & 3)) - ml);
      }
    }
  }
}
