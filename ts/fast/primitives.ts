// The fused primitives of mg.fast (MLX's RMSNorm, LayerNorm, RoPE, ScaledDotProductAttention and
// their VJP primitives, plus CrossEntropy): one record each with its shape/dtype rule, kernels on
// both devices, and derivative and batching rules. The forward primitives' vjp builds the fused
// backward primitive; everything else (jvp, vmap, derivatives of the backward primitives) is
// derived by the transforms from the unfused compositions (ts/fast/unfused.ts), as MLX's Custom
// primitives derive them from their fallbacks.
import type { MgArray } from "../core/array.ts";
import { resolveStream } from "../core/device.ts";
import { type Dtype, float32, float64 } from "../core/dtype.ts";
import { makeNode } from "../core/graph.ts";
import type { Primitive } from "../core/primitive.ts";
import { zeros, zerosLike } from "../core/ops/creation.ts";
import { reshape } from "../core/ops/shape.ts";
import { jvpFlat } from "../autograd/jvp.ts";
import { vjpFlat } from "../autograd/vjp.ts";
import { moveBatchAxis } from "../autograd/batching.ts";
import { vmapFlat } from "../autograd/vmap.ts";
import {
  cpuCrossEntropy, cpuCrossEntropyVjp, cpuLayerNorm, cpuNormVjp, cpuRmsNorm, cpuRope, cpuSdpa, cpuSdpaVjp,
} from "../backend/cpu/fast-kernels.ts";
import {
  crossEntropyRule, crossEntropyVjpRule, layerNormRule, layerNormVjpRule, rmsNormRule, rmsNormVjpRule, ropeRule, sdpaRule, sdpaVjpRule,
} from "../backend/gpu/fast/rules.ts";
import type { Accumulate16 } from "../backend/gpu/fast/precision.ts";
import { crossEntropyUnfused, layerNormUnfused, rmsNormUnfused, ropeUnfused, sdpaUnfused } from "./unfused.ts";

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
}

export interface CrossEntropyParams {
  accumulate16: Accumulate16;
}

type Fn = (inputs: MgArray[]) => MgArray[];

/** jvp of `fn` (inputs → outputs) at the primals, tangents given for argnums. */
function jvpOf(fn: Fn, primals: readonly MgArray[], tangents: readonly MgArray[], argnums: readonly number[]): MgArray[] {
  const full = primals.map((_, i) => {
    const k = argnums.indexOf(i);
    return k < 0 ? null : tangents[k]!;
  });
  return jvpFlat(fn, primals, full, "jvp").jvps;
}

/** Rules that differentiate and batch `fn` itself: the composition a primitive computes. */
function compositionRules<P>(fn: (inputs: MgArray[], p: P) => MgArray[]): Pick<Primitive<P>, "vjp" | "jvp" | "vmap"> {
  return {
    vjp: (primals, cotangents, argnums, _outputs, p) => vjpFlat((xs) => fn(xs, p), primals, cotangents, argnums, { tag: "vjp", skipStopGradientOutputs: false }).vjps,
    jvp: (primals, tangents, argnums, _outputs, p) => jvpOf((xs) => fn(xs, p), primals, tangents, argnums),
    vmap: (inputs, axes, p) => {
      const outs = vmapFlat((xs) => fn(xs, p), inputs, axes, (o) => o.map(() => 0));
      return [outs, outs.map(() => 0)];
    },
  };
}

// Norms ------------------------------------------------------------------------------------------

function rmsComposition(xs: MgArray[], p: RMSNormParams): MgArray[] {
  return [rmsNormUnfused(xs[0]!, p.hasWeight ? xs[1]! : null, p.eps, xs[0]!.dtype)];
}

function layerComposition(xs: MgArray[], p: LayerNormParams): MgArray[] {
  let k = 1;
  const w = p.hasWeight ? xs[k++]! : null;
  const b = p.hasBias ? xs[k++]! : null;
  return [layerNormUnfused(xs[0]!, w, b, p.eps, xs[0]!.dtype)];
}

/** The backward of a norm as a composition: inputs [x, w?, b?, g] → [dx, dw?, db?]. */
function normVjpComposition<P extends RMSNormParams>(forward: (xs: MgArray[], p: P) => MgArray[]) {
  return (xs: MgArray[], p: P): MgArray[] => {
    const primals = xs.slice(0, -1);
    const g = xs[xs.length - 1]!;
    return vjpFlat((ys) => forward(ys, p), primals, [g], primals.map((_, i) => i), { tag: "vjp", skipStopGradientOutputs: false }).vjps;
  };
}

const normParamsKey = (p: RMSNormParams | LayerNormParams) => `${p.eps}|${p.hasWeight}|${"hasBias" in p ? p.hasBias : ""}|${p.accumulate16}`;

/** The forward rules of a norm: the vjp runs the fused backward primitive. */
function normVjp<P extends RMSNormParams>(vjpPrim: Primitive<P>, op: string): Primitive<P>["vjp"] {
  return (primals, [g], argnums, _outputs, p) => {
    const x = primals[0]!;
    if (x.size === 0) return argnums.map((i) => zerosLike(primals[i]!));
    const grads = makeNode(vjpPrim, [...primals, g!], p, resolveStream());
    if (grads.length !== primals.length) throw new Error(`[${op}] internal: the backward primitive returned ${grads.length} gradients.`);
    return argnums.map((i) => grads[i]!);
  };
}

export const RMSNormVJP: Primitive<RMSNormParams> = {
  name: "RMSNormVJP",
  outputSpecs: (inputs, p) => [{ shape: [...inputs[0]!.shape], dtype: inputs[0]!.dtype }, ...(p.hasWeight ? [{ shape: [...inputs[1]!.shape], dtype: inputs[1]!.dtype }] : [])],
  cpu: cpuNormVjp(false),
  gpu: rmsNormVjpRule,
  ...compositionRules(normVjpComposition(rmsComposition)),
  paramsKey: normParamsKey,
};

export const RMSNorm: Primitive<RMSNormParams> = {
  name: "RMSNorm",
  outputSpecs: ([x]) => [{ shape: [...x!.shape], dtype: x!.dtype }],
  cpu: cpuRmsNorm,
  gpu: rmsNormRule,
  vjp: normVjp(RMSNormVJP, "rms_norm"),
  jvp: compositionRules(rmsComposition).jvp,
  vmap: compositionRules(rmsComposition).vmap,
  paramsKey: normParamsKey,
};

export const LayerNormVJP: Primitive<LayerNormParams> = {
  name: "LayerNormVJP",
  outputSpecs: (inputs) => inputs.slice(0, -1).map((a) => ({ shape: [...a.shape], dtype: a.dtype })),
  cpu: cpuNormVjp(true),
  gpu: layerNormVjpRule,
  ...compositionRules(normVjpComposition(layerComposition)),
  paramsKey: normParamsKey,
};

export const LayerNorm: Primitive<LayerNormParams> = {
  name: "LayerNorm",
  outputSpecs: ([x]) => [{ shape: [...x!.shape], dtype: x!.dtype }],
  cpu: cpuLayerNorm,
  gpu: layerNormRule,
  vjp: normVjp(LayerNormVJP, "layer_norm"),
  jvp: compositionRules(layerComposition).jvp,
  vmap: compositionRules(layerComposition).vmap,
  paramsKey: normParamsKey,
};

// RoPE -------------------------------------------------------------------------------------------

function ropeComposition(xs: MgArray[], p: RoPEParams): MgArray[] {
  return [ropeUnfused(xs[0]!, xs[1]!, p.hasFreqs ? xs[2]! : null, p)];
}

export const RoPE: Primitive<RoPEParams> = {
  name: "RoPE",
  outputSpecs: ([x]) => [{ shape: [...x!.shape], dtype: x!.dtype }],
  cpu: cpuRope,
  gpu: ropeRule,
  // The rotation is linear in x and orthogonal: its transpose is the inverse rotation.
  vjp(primals, [g], argnums, _o, p) {
    if (argnums.some((i) => i !== 0)) throw new Error("[rope] The vjp with respect to the frequencies (or offsets) is not supported.");
    return [makeNode(RoPE, [g!, ...primals.slice(1)], { ...p, forward: !p.forward }, resolveStream())[0]!];
  },
  jvp(primals, tangents, argnums, _o, p) {
    if (argnums.some((i) => i !== 0)) throw new Error("[rope] The jvp with respect to the frequencies (or offsets) is not supported.");
    return [makeNode(RoPE, [tangents[0]!, ...primals.slice(1)], p, resolveStream())[0]!];
  },
  vmap: compositionRules(ropeComposition).vmap,
  paramsKey: (p) => `${p.dims}|${p.traditional}|${p.base}|${p.scale}|${p.forward}|${p.hasFreqs}`,
};

// Attention --------------------------------------------------------------------------------------

/** How many of the inputs after q, k, v are the mask and the sinks. */
const sdpaExtras = (p: SdpaParams): number => (p.mask === "bool" || p.mask === "additive" ? 1 : 0) + (p.hasSinks ? 1 : 0);

/** softmax(scale·q·kᵀ + mask)·v over inputs [q, k, v, mask?, sinks?], unfused. */
function sdpaComposition(xs: MgArray[], p: SdpaParams): MgArray[] {
  let at = 3;
  const mask = p.mask === "bool" || p.mask === "additive" ? xs[at++]! : null;
  const sinks = p.hasSinks ? xs[at++]! : null;
  return [sdpaUnfused(xs[0]!, xs[1]!, xs[2]!, p.scale, p.mask === "none" ? "none" : p.mask === "causal" ? "causal" : "array", mask, sinks)];
}

/** Inputs [q, k, v, mask?, sinks?, o, stats, dO] → [dq, dk, dv], unfused. */
function sdpaVjpComposition(xs: MgArray[], p: SdpaParams): MgArray[] {
  const n = 3 + sdpaExtras(p);
  const primals = xs.slice(0, n);
  const g = xs[xs.length - 1]!;
  return vjpFlat((ys) => sdpaComposition(ys, p), primals, [g], [0, 1, 2], { tag: "vjp", skipStopGradientOutputs: false }).vjps;
}

const sdpaParamsKey = (p: SdpaParams) => `${p.scale}|${p.mask}|${p.hasSinks}|${p.accumulate16}|${p.matmul}`;

export const ScaledDotProductAttentionVJP: Primitive<SdpaParams> = {
  name: "ScaledDotProductAttentionVJP",
  outputSpecs: ([q, k, v]) => [q!, k!, v!].map((a) => ({ shape: [...a.shape], dtype: a.dtype })),
  cpu: cpuSdpaVjp,
  gpu: sdpaVjpRule,
  ...compositionRules(sdpaVjpComposition),
  paramsKey: sdpaParamsKey,
};

export const ScaledDotProductAttention: Primitive<SdpaParams> = {
  name: "ScaledDotProductAttention",
  // The output, and each query row's softmax statistics {max, sum} (float32) for the backward.
  outputSpecs: ([q, , v]) => [
    { shape: [q!.shape[0]!, q!.shape[1]!, q!.shape[2]!, v!.shape[3]!], dtype: q!.dtype },
    { shape: [q!.shape[0]!, q!.shape[1]!, q!.shape[2]!, 2], dtype: float32 },
  ],
  cpu: cpuSdpa,
  gpu: sdpaRule,
  vjp(primals, [g], argnums, outputs, p) {
    if (argnums.some((i) => i >= 3)) {
      throw new Error("[scaled_dot_product_attention] Does not support VJP with respect to mask or attention sinks.");
    }
    const grads = makeNode(ScaledDotProductAttentionVJP, [...primals, outputs[0]!, outputs[1]!, g!], p, resolveStream());
    return argnums.map((i) => grads[i]!);
  },
  jvp(primals, tangents, argnums, outputs, p) {
    return [jvpOf((xs) => sdpaComposition(xs, p), primals, tangents, argnums)[0]!, zerosLike(outputs[1]!)];
  },
  // The mapped axis joins the batch axis: one fused call over the whole batch. (The op broadcast
  // an array mask to the full (B, Hq, qL, kL), so it merges like q, k and v.)
  vmap(inputs, axes, p) {
    const sinksAt = p.hasSinks ? inputs.length - 1 : -1;
    if (sinksAt >= 0 && axes[sinksAt]! >= 0) throw new Error("[scaled_dot_product_attention] vmap over the attention sinks is not supported.");
    const size = inputs[axes.findIndex((a) => a >= 0)]!.shape[axes.find((a) => a >= 0)!]!;
    const merged = inputs.map((x, i) => {
      if (i === sinksAt) return x;
      const y = moveBatchAxis(x, axes[i]!, 0, size);
      return reshape(y, [size * y.shape[1]!, ...y.shape.slice(2)]);
    });
    const B = inputs[0]!.shape.length === 4 ? inputs[0]!.shape[0]! : inputs[0]!.shape.filter((_, k) => k !== axes[0])[0]!;
    const [o, stats] = makeNode(ScaledDotProductAttention, merged, p, resolveStream());
    return [[reshape(o!, [size, B, ...o!.shape.slice(1)]), reshape(stats!, [size, B, ...stats!.shape.slice(1)])], [0, 0]];
  },
  paramsKey: sdpaParamsKey,
};

// Cross entropy ----------------------------------------------------------------------------------

/** The loss dtype: float32 (MLX), float64 for float64 logits (CPU) so gradients check in float64. */
export const lossDtype = (d: Dtype): Dtype => (d === float64 ? float64 : float32);

function crossEntropyComposition(xs: MgArray[]): MgArray[] {
  return [crossEntropyUnfused(xs[0]!, xs[1]!)];
}

function crossEntropyVjpComposition(xs: MgArray[]): MgArray[] {
  const [logits, targets, g] = xs as [MgArray, MgArray, MgArray];
  return vjpFlat((ys) => crossEntropyComposition([ys[0]!, targets]), [logits], [g], [0], { tag: "vjp", skipStopGradientOutputs: false }).vjps;
}

export const CrossEntropyVJP: Primitive<CrossEntropyParams> = {
  name: "CrossEntropyVJP",
  outputSpecs: ([x]) => [{ shape: [...x!.shape], dtype: x!.dtype }],
  cpu: cpuCrossEntropyVjp,
  gpu: crossEntropyVjpRule,
  ...compositionRules(crossEntropyVjpComposition),
  paramsKey: (p) => p.accumulate16,
};

export const CrossEntropy: Primitive<CrossEntropyParams> = {
  name: "CrossEntropy",
  outputSpecs: ([x, t]) => [{ shape: [...t!.shape], dtype: lossDtype(x!.dtype) }],
  cpu: cpuCrossEntropy,
  gpu: crossEntropyRule,
  vjp(primals, [g], argnums, _o, p) {
    const [logits, targets] = primals as [MgArray, MgArray];
    if (logits.size === 0) return argnums.map((i) => zerosLike(primals[i]!));
    const dx = makeNode(CrossEntropyVJP, [logits, targets, g!], p, resolveStream())[0]!;
    return argnums.map((i) => (i === 0 ? dx : zeros(targets.shape, targets.dtype)));
  },
  jvp: compositionRules(crossEntropyComposition).jvp,
  vmap: compositionRules(crossEntropyComposition).vmap,
  paramsKey: (p) => p.accumulate16,
};
