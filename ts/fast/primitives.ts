// The records of mg.fast's fused primitives (MLX's RMSNorm, LayerNorm, RoPE,
// ScaledDotProductAttention and their VJP primitives, plus CrossEntropy): shape/dtype rules and
// params. Rules: ts/fast/rules.ts; kernels: ts/backend/cpu/fast-kernels.ts (float64 references)
// and ts/backend/gpu/fast/rules.ts (the fused Metal kernels).
import { type Dtype, float32, float64 } from "../core/dtype.ts";
import type { Accumulate16 } from "../core/precision.ts";
import type { Primitive } from "../core/primitive.ts";

export interface RMSNormParams {
  eps: number;
  hasWeight: boolean;
  accumulate16: Accumulate16;
}

export interface LayerNormParams extends RMSNormParams {
  hasBias: boolean;
}

export interface RoPEParams {
  dims: number;
  traditional: boolean;
  /** The frequency base (unused when hasFreqs). */
  base: number;
  scale: number;
  /** false: the inverse rotation (the vjp). */
  forward: boolean;
  hasFreqs: boolean;
}

export interface SdpaParams {
  scale: number;
  mask: "none" | "causal" | "bool" | "additive";
  hasSinks: boolean;
  accumulate16: Accumulate16;
  matmul: "highest" | "high";
  /** Also output each query row's softmax statistics (under a transform: the backward reads them). */
  stats: boolean;
}

export interface CrossEntropyParams {
  accumulate16: Accumulate16;
}

/** The loss dtype: float32 (MLX), float64 for float64 logits (CPU) so gradients check in float64. */
export const lossDtype = (d: Dtype): Dtype => (d === float64 ? float64 : float32);

const normParamsKey = (p: RMSNormParams | LayerNormParams) => `${p.eps}|${p.hasWeight}|${"hasBias" in p ? p.hasBias : ""}|${p.accumulate16}`;
const same = (a: { shape: readonly number[]; dtype: Dtype }) => ({ shape: [...a.shape], dtype: a.dtype });

/** Inputs [x, w?]; output y (x's shape and dtype). */
export const RMSNorm: Primitive<RMSNormParams> = {
  name: "RMSNorm",
  opName: () => "rms_norm",
  outputSpecs: ([x]) => [same(x!)],
  shapeless: "infer",
  paramsKey: normParamsKey,
};

/** Inputs [x, w?, g]; outputs [dx, dw?]. */
export const RMSNormVJP: Primitive<RMSNormParams> = {
  name: "RMSNormVJP",
  opName: () => "rms_norm",
  outputSpecs: (inputs) => inputs.slice(0, -1).map(same),
  shapeless: "infer",
  paramsKey: normParamsKey,
};

/** Inputs [x, w?, b?]; output y. */
export const LayerNorm: Primitive<LayerNormParams> = {
  name: "LayerNorm",
  opName: () => "layer_norm",
  outputSpecs: ([x]) => [same(x!)],
  shapeless: "infer",
  paramsKey: normParamsKey,
};

/** Inputs [x, w?, b?, g]; outputs [dx, dw?, db?]. */
export const LayerNormVJP: Primitive<LayerNormParams> = {
  name: "LayerNormVJP",
  opName: () => "layer_norm",
  outputSpecs: (inputs) => inputs.slice(0, -1).map(same),
  shapeless: "infer",
  paramsKey: normParamsKey,
};

/** Inputs [x, offset (int32, 1 or B), freqs? (float32, dims/2)]; output x rotated. */
export const RoPE: Primitive<RoPEParams> = {
  name: "RoPE",
  opName: () => "rope",
  outputSpecs: ([x]) => [same(x!)],
  shapeless: "infer",
  paramsKey: (p) => `${p.dims}|${p.traditional}|${p.base}|${p.scale}|${p.forward}|${p.hasFreqs}`,
};

const sdpaParamsKey = (p: SdpaParams) => `${p.scale}|${p.mask}|${p.hasSinks}|${p.accumulate16}|${p.matmul}|${p.stats}`;

/**
 * Inputs [q, k, v, mask?, sinks?] (an array mask broadcast to (B, Hq, qL, kL)); outputs the
 * attention output and, when params.stats (ops set it under a transform, as MLX outputs its
 * logsumexp only in training), each query row's softmax statistics {max (log2 domain), sum} in
 * float32, which the backward reads.
 */
export const ScaledDotProductAttention: Primitive<SdpaParams> = {
  name: "ScaledDotProductAttention",
  opName: () => "scaled_dot_product_attention",
  outputSpecs: ([q, , v], p) => [
    { shape: [q!.shape[0]!, q!.shape[1]!, q!.shape[2]!, v!.shape[3]!], dtype: q!.dtype },
    ...(p.stats ? [{ shape: [q!.shape[0]!, q!.shape[1]!, q!.shape[2]!, 2], dtype: float32 }] : []),
  ],
  shapeless: "infer",
  paramsKey: sdpaParamsKey,
};

/** Inputs [q, k, v, mask?, sinks?, o, stats, dO]; outputs [dq, dk, dv]. */
export const ScaledDotProductAttentionVJP: Primitive<SdpaParams> = {
  name: "ScaledDotProductAttentionVJP",
  opName: () => "scaled_dot_product_attention",
  outputSpecs: ([q, k, v]) => [same(q!), same(k!), same(v!)],
  shapeless: "infer",
  paramsKey: sdpaParamsKey,
};

/** Inputs [logits, targets (int32)]; output the loss (targets' shape, float32). */
export const CrossEntropy: Primitive<CrossEntropyParams> = {
  name: "CrossEntropy",
  opName: () => "cross_entropy",
  outputSpecs: ([x, t]) => [{ shape: [...t!.shape], dtype: lossDtype(x!.dtype) }],
  shapeless: "infer",
  paramsKey: (p) => p.accumulate16,
};

/** Inputs [logits, targets, g]; output dlogits. */
export const CrossEntropyVJP: Primitive<CrossEntropyParams> = {
  name: "CrossEntropyVJP",
  opName: () => "cross_entropy",
  outputSpecs: ([x]) => [same(x!)],
  shapeless: "infer",
  paramsKey: (p) => p.accumulate16,
};
