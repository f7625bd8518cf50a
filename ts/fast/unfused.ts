// The unfused compositions of the mg.fast ops, in ordinary ops, following MLX's own fallbacks in
// mlx/fast.cpp step for step (the same casts, the same masking by finfo.min, the same softmax in
// float32). They define what the fused kernels must equal; they run when an input combination
// cannot be fused (the trace says why); and jvp and vmap of the fused primitives go through them.
// Inputs are validated and promoted by the ops (ts/fast/ops.ts) first.
//
// One deliberate difference: MLX computes the norms in float32 even for float64 inputs; here a
// float64 input (CPU only) stays float64, so float64 gradient checks are meaningful.
import type { MgArray } from "../core/array.ts";
import { bool_, type Dtype, finfo, float32, float64 } from "../core/dtype.ts";
import type { StreamOptions } from "../core/ops/convert.ts";
import { arange, full } from "../core/ops/creation.ts";
import { add, astype, cos, exp, greaterEqual, multiply, reciprocal, rsqrt, sin, square, subtract, where } from "../core/ops/elementwise.ts";
import { takeAlongAxis } from "../core/ops/indexing.ts";
import { concatenate } from "../core/ops/join.ts";
import { matmul } from "../core/ops/linalg-core.ts";
import { mean } from "../core/ops/reduce.ts";
import { broadcastTo, expandDims, flatten, reshape, squeeze, swapaxes, unflatten } from "../core/ops/shape.ts";
import { sliceStatic } from "../core/ops/slicing.ts";
import { logsumexp, softmax } from "../core/ops/softmax.ts";

/** The type the norms compute in: float32, or float64 for float64 inputs (see above). */
const normCompute = (d: Dtype): Dtype => (d === float64 ? float64 : float32);

/** x·rsqrt(mean(x²) + eps), cast to outType, times w. */
export function rmsNormUnfused(x: MgArray, w: MgArray | null, eps: number, outType: Dtype, o: StreamOptions = {}): MgArray {
  const ct = normCompute(x.dtype);
  const xf = astype(x, ct, o);
  let y = multiply(xf, rsqrt(add(mean(square(xf, o), -1, true, o), full([], eps, ct, o), o), o), o);
  y = astype(y, outType, o);
  return w ? multiply(y, w, o) : y;
}

/** (x − μ)·rsqrt(var + eps), cast to outType, times w, plus b. */
export function layerNormUnfused(x: MgArray, w: MgArray | null, b: MgArray | null, eps: number, outType: Dtype, o: StreamOptions = {}): MgArray {
  const ct = normCompute(x.dtype);
  const xf = astype(x, ct, o);
  const xc = subtract(xf, mean(xf, -1, true, o), o);
  const v = mean(square(xc, o), -1, true, o);
  let y = astype(multiply(xc, rsqrt(add(v, full([], eps, ct, o), o), o), o), outType, o);
  if (w) y = multiply(y, w, o);
  if (b) y = add(y, b, o);
  return y;
}

export interface RopeSpec {
  dims: number;
  traditional: boolean;
  /** The base (used when freqs is null). */
  base: number;
  scale: number;
  /** Forward rotation, or its inverse (the vjp). */
  forward: boolean;
}

/** Rotary embedding of x (B, …, T, D); offset: int32 scalar or (B,); freqs: float32 (dims/2,) or null. */
export function ropeUnfused(x: MgArray, offset: MgArray, freqs: MgArray | null, s: RopeSpec, o: StreamOptions = {}): MgArray {
  const shape = x.shape;
  let x4 = x;
  if (x.ndim === 3) x4 = expandDims(x, 1, o);
  else if (x.ndim > 4) x4 = flatten(x, 1, x.ndim - 3, o);
  const [B, N, T] = x4.shape as [number, number, number, number];
  const t = x.dtype;
  const half = s.dims / 2;
  const off = offset.size > 1 ? expandDims(offset, [-1, -2], o) : offset;
  const positions = multiply(add(arange(0, T, 1, float32, o), off, o), full([], s.scale, float32, o), o);
  const invFreqs = freqs
    ? reciprocal(freqs, o)
    : exp(multiply(arange(0, -half, -1, float32, o), full([], Math.log(s.base) / half, float32, o), o), o);
  const theta = multiply(expandDims(positions, -1, o), invFreqs, o);
  const coss = astype(cos(theta, o), t, o);
  const sins = astype(sin(theta, o), t, o);
  const rotate = (x1: MgArray, x2: MgArray): [MgArray, MgArray] =>
    s.forward
      ? [subtract(multiply(x1, coss, o), multiply(x2, sins, o), o), add(multiply(x1, sins, o), multiply(x2, coss, o), o)]
      : [add(multiply(x2, sins, o), multiply(x1, coss, o), o), subtract(multiply(x2, coss, o), multiply(x1, sins, o), o)];
  const D = x4.shape[3]!;
  let out: MgArray;
  if (s.traditional) {
    const x1 = sliceStatic(x4, [0, 0, 0, 0], [B, N, T, s.dims], [1, 1, 1, 2], o);
    const x2 = sliceStatic(x4, [0, 0, 0, 1], [B, N, T, s.dims], [1, 1, 1, 2], o);
    const [r1, r2] = rotate(x1, x2);
    out = reshape(concatenate([expandDims(r1, -1, o), expandDims(r2, -1, o)], -1, o), [B, N, T, s.dims], o);
    if (s.dims < D) out = concatenate([out, sliceStatic(x4, [0, 0, 0, s.dims], [B, N, T, D], undefined, o)], -1, o);
  } else {
    const x1 = sliceStatic(x4, [0, 0, 0, 0], [B, N, T, half], undefined, o);
    const x2 = sliceStatic(x4, [0, 0, 0, half], [B, N, T, s.dims], undefined, o);
    const parts = rotate(x1, x2);
    if (s.dims < D) parts.push(sliceStatic(x4, [0, 0, 0, s.dims], [B, N, T, D], undefined, o));
    out = concatenate(parts, -1, o);
  }
  return reshape(out, [...shape], o);
}

export type SdpaMaskMode = "none" | "causal" | "array";

/**
 * softmax(scale·q·kᵀ + mask)·v with grouped-query heads and sinks, materialising the scores as MLX's
 * fallback does. `mask` (when mode is "array") is boolean or q's dtype, broadcastable to
 * (B, Hq, qL, kL); sinks: (Hq,) in q's dtype.
 */
export function sdpaUnfused(
  q: MgArray,
  k: MgArray,
  v: MgArray,
  scale: number,
  mode: SdpaMaskMode,
  mask: MgArray | null,
  sinks: MgArray | null,
  o: StreamOptions = {},
): MgArray {
  const nQ = q.shape[1]!;
  const nKv = k.shape[1]!;
  const nRep = nQ / nKv;
  let qs = multiply(full([], scale, q.dtype, o), q, o);
  let kk = k;
  let vv = v;
  if (nRep > 1) {
    qs = unflatten(qs, 1, [nKv, nRep], o);
    kk = expandDims(k, 2, o);
    vv = expandDims(v, 2, o);
  }
  let scores = matmul(qs, swapaxes(kk, -1, -2, o), o);
  if (mode !== "none") {
    let m: MgArray;
    if (mode === "causal") {
      const kL = k.shape[2]!;
      const qL = q.shape[2]!;
      const qIdx = expandDims(arange(kL - qL, kL, 1, undefined, o), 1, o);
      const kIdx = expandDims(arange(0, kL, 1, undefined, o), 0, o);
      m = greaterEqual(qIdx, kIdx, o);
    } else {
      m = mask!;
    }
    if (nRep > 1 && m.ndim >= 3) m = m.shape[m.ndim - 3] === 1 ? expandDims(m, -3, o) : unflatten(m, -3, [nKv, nRep], o);
    scores = m.dtype === bool_ ? where(m, scores, full([], finfo(scores.dtype).min, scores.dtype, o), o) : add(scores, m, o);
  }
  if (sinks) {
    let sk = expandDims(sinks, [0, 2, 3], o);
    if (scores.ndim === 5) sk = unflatten(sk, 1, [nKv, nRep], o);
    const shape = [...scores.shape];
    shape[shape.length - 1] = 1;
    scores = concatenate([broadcastTo(sk, shape, o), scores], -1, o);
  }
  scores = softmax(scores, -1, { precise: true, ...o });
  if (sinks) {
    const start = scores.shape.map((_, i) => (i === scores.ndim - 1 ? 1 : 0));
    scores = sliceStatic(scores, start, [...scores.shape], undefined, o);
  }
  let out = matmul(scores, vv, o);
  if (nRep > 1) out = flatten(out, 1, 2, o);
  return out;
}

/** logsumexp(logits) − logits[target] over the last axis, in float32 (MLX's CPU composition). */
export function crossEntropyUnfused(logits: MgArray, targets: MgArray, o: StreamOptions = {}): MgArray {
  const picked = squeeze(takeAlongAxis(logits, expandDims(targets, -1, o), -1, o), -1, o);
  return astype(subtract(logsumexp(logits, -1, false, o), picked, o), logits.dtype === float64 ? float64 : float32, o);
}
