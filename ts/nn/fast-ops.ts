// The mx.fast operations the nn layers use (layer_norm, rms_norm, rope,
// scaled_dot_product_attention): every layer calls these four functions and nothing else for that
// work. They are mg.fast's fused ops (ts/fast/ops.ts: one kernel each, forward and backward, and
// attention's fused backward), as MLX's layers call mx.fast.
import type { MgArray } from "../core/array.ts";
import * as fast from "../fast/ops.ts";

/** (x − mean)/√(var + eps) over the last axis, then ·weight + bias, as mx.fast.layer_norm. */
export function layerNorm(x: MgArray, weight: MgArray | null, bias: MgArray | null, eps: number): MgArray {
  return fast.layerNorm(x, weight, bias, eps);
}

/** x/√(mean(x²) + eps) over the last axis, then ·weight, as mx.fast.rms_norm. */
export function rmsNorm(x: MgArray, weight: MgArray | null, eps: number): MgArray {
  return fast.rmsNorm(x, weight, eps);
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
 * second-to-last axis starting at `offset`, as mx.fast.rope.
 */
export function rope(x: MgArray, dims: number, o: RopeOptions): MgArray {
  return fast.rope(x, dims, { traditional: o.traditional, base: o.base, scale: o.scale, offset: o.offset, freqs: o.freqs ?? null });
}

export type AttentionMask = MgArray | "causal" | null;

/** softmax(q·kᵀ·scale + mask)·v, as mx.fast.scaled_dot_product_attention (GQA, every mask kind). */
export function scaledDotProductAttention(q: MgArray, k: MgArray, v: MgArray, scale: number, mask: AttentionMask): MgArray {
  return fast.scaledDotProductAttention(q, k, v, { scale, mask });
}
