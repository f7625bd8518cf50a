// The mx.fast operations the nn layers use (layer_norm, rms_norm, rope,
// scaled_dot_product_attention), written as compositions of core ops with MLX's semantics and
// precision (statistics and the attention softmax in float32, the result in the input's dtype).
// Every layer calls these four functions and nothing else for that work, so switching to the fused
// mg.fast ops when they exist is a change to this file alone.
import type { MgArray } from "../core/array.ts";
import { bool_, type Dtype, finfo, float32, isFloating, promoteTypes } from "../core/dtype.ts";
import { arange } from "../core/ops/creation.ts";
import { add, astype, cos, exp, lessEqual, multiply, reciprocal, rsqrt, sin, square, subtract, where } from "../core/ops/elementwise.ts";
import { concatenate, stack } from "../core/ops/join.ts";
import { matmul } from "../core/ops/linalg-core.ts";
import { mean } from "../core/ops/reduce.ts";
import { expandDims, reshape, swapaxes } from "../core/ops/shape.ts";
import { sliceStatic } from "../core/ops/slicing.ts";
import { softmax } from "../core/ops/softmax.ts";
import { formatShape } from "../core/shape.ts";

/** The dtype statistics are computed in: float32 for half types, else the input's. */
function accumulationType(d: Dtype): Dtype {
  return isFloating(d) && d.size < 4 ? float32 : d;
}

/** (x − mean)/√(var + eps) over the last axis, then ·weight + bias, as mx.fast.layer_norm. */
export function layerNorm(x: MgArray, weight: MgArray | null, bias: MgArray | null, eps: number): MgArray {
  const outType = [weight, bias].reduce<Dtype>((d, p) => (p ? promoteTypes(d, p.dtype) : d), x.dtype);
  const xf = astype(x, accumulationType(x.dtype));
  const mu = mean(xf, -1, true);
  const centered = subtract(xf, mu);
  const v = mean(square(centered), -1, true);
  let y = astype(multiply(centered, rsqrt(add(v, eps))), outType);
  if (weight) y = multiply(y, weight);
  if (bias) y = add(y, bias);
  return y;
}

/** x/√(mean(x²) + eps) over the last axis, then ·weight, as mx.fast.rms_norm. */
export function rmsNorm(x: MgArray, weight: MgArray | null, eps: number): MgArray {
  const outType = weight ? promoteTypes(x.dtype, weight.dtype) : x.dtype;
  const xf = astype(x, accumulationType(x.dtype));
  let y = astype(multiply(xf, rsqrt(add(mean(square(xf), -1, true), eps))), outType);
  if (weight) y = multiply(y, weight);
  return y;
}

export interface RopeOptions {
  traditional: boolean;
  base: number | null;
  scale: number;
  offset: number | MgArray;
  freqs?: MgArray | null;
}

/**
 * Rotary position embedding over the first `dims` features of the last axis, positions along the
 * second-to-last axis starting at `offset`, as mx.fast.rope: angle (offset + i)·scale·base^(−2j/dims)
 * (or ·1/freqs[j]); `traditional` rotates adjacent pairs, otherwise the two halves.
 */
export function rope(x: MgArray, dims: number, o: RopeOptions): MgArray {
  if (x.ndim < 3) throw new Error(`[rope] Input must have at least 3 dimensions but got input with ${x.ndim} dimensions.`);
  const d = x.shape[x.ndim - 1]!;
  if (dims > d || dims % 2 !== 0) throw new Error(`[rope] dims must be even and at most ${d}, got ${dims}.`);
  if ((o.base === null) === (o.freqs == null)) throw new Error("[rope] Exactly one of base and freqs must be None.");
  const L = x.shape[x.ndim - 2]!;
  const half = dims / 2;
  const t = accumulationType(x.dtype);
  const invFreqs = o.freqs
    ? reciprocal(astype(o.freqs, float32))
    : exp(multiply(arange(0, half, float32), -Math.log(o.base as number) / half));
  const positions = multiply(add(arange(0, L, float32), o.offset), o.scale);
  const theta = multiply(expandDims(positions, 1), expandDims(invFreqs, 0));
  const c = cos(theta);
  const s = sin(theta);
  const xf = astype(x, t);
  const lead = x.shape.slice(0, -1);
  const rest = dims < d ? [sliceStatic(xf, [...lead.map(() => 0), dims], [...lead, d])] : [];
  let rotated: MgArray;
  if (o.traditional) {
    const zeros = lead.map(() => 0);
    const ones = lead.map(() => 1);
    const x1 = sliceStatic(xf, [...zeros, 0], [...lead, dims], [...ones, 2]);
    const x2 = sliceStatic(xf, [...zeros, 1], [...lead, dims], [...ones, 2]);
    const r1 = subtract(multiply(x1, c), multiply(x2, s));
    const r2 = add(multiply(x1, s), multiply(x2, c));
    rotated = reshape(stack([r1, r2], -1), [...lead, dims]);
  } else {
    const x1 = sliceStatic(xf, lead.map(() => 0).concat(0), [...lead, half]);
    const x2 = sliceStatic(xf, lead.map(() => 0).concat(half), [...lead, dims]);
    rotated = concatenate([subtract(multiply(x1, c), multiply(x2, s)), add(multiply(x1, s), multiply(x2, c))], -1);
  }
  const out = rest.length > 0 ? concatenate([rotated, ...rest], -1) : rotated;
  return astype(out, x.dtype);
}

export type AttentionMask = MgArray | "causal" | null;

/**
 * softmax(q·kᵀ·scale + mask)·v, as mx.fast.scaled_dot_product_attention: q (B, Hq, Lq, D), k and v
 * (B, Hkv, Lk, D) with Hq a multiple of Hkv (grouped-query attention); the softmax in float32. A
 * boolean mask keeps the entries that are true; "causal" lets query i see keys up to
 * i + Lk − Lq.
 */
export function scaledDotProductAttention(q: MgArray, k: MgArray, v: MgArray, scale: number, mask: AttentionMask): MgArray {
  if (q.ndim !== 4 || k.ndim !== 4 || v.ndim !== 4) {
    throw new Error(`[scaled_dot_product_attention] queries, keys and values must be 4-D, got ${formatShape(q.shape)}, ${formatShape(k.shape)}, ${formatShape(v.shape)}.`);
  }
  const [B, Hq, Lq, D] = q.shape as [number, number, number, number];
  const Hkv = k.shape[1]!;
  const Lk = k.shape[2]!;
  if (Hq % Hkv !== 0) {
    throw new Error(`[scaled_dot_product_attention] The number of query heads (${Hq}) must be a multiple of the number of key/value heads (${Hkv}).`);
  }
  const rep = Hq / Hkv;
  let qs = multiply(q, scale);
  let ks = k;
  let vs = v;
  if (rep > 1) {
    qs = reshape(qs, [B, Hkv, rep, Lq, D]);
    ks = expandDims(k, 2);
    vs = expandDims(v, 2);
  }
  let scores = matmul(qs, swapaxes(ks, -1, -2));
  if (mask !== null) {
    let m: MgArray;
    if (mask === "causal") {
      const offset = Lk - Lq;
      m = lessEqual(expandDims(arange(0, Lk), 0), expandDims(add(arange(0, Lq), offset), 1));
    } else if (typeof mask === "string") {
      throw new Error(`[scaled_dot_product_attention] invalid mask option '${mask}'. Must be 'causal', or an array.`);
    } else m = mask;
    if (rep > 1 && m.ndim === 4) m = expandDims(m, 2);
    scores = m.dtype === bool_ ? where(m, scores, finfo(scores.dtype).min) : add(scores, m);
  }
  const probs = astype(softmax(astype(scores, float32), -1, { precise: true }), scores.dtype);
  let out = matmul(probs, vs);
  if (rep > 1) out = reshape(out, [B, Hq, Lq, v.shape[3]!]);
  return out;
}
