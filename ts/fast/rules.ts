// Derivative and batching rules of mg.fast's primitives (ts/fast/primitives.ts). The forward
// primitives' vjp builds the fused backward primitive; everything else (jvp, vmap, the derivatives
// of the backward primitives) is derived by the transforms from the unfused compositions
// (ts/fast/unfused.ts), as MLX's Custom primitives derive them from their fallbacks.
import type { MgArray } from "../core/array.ts";
import { resolveStream } from "../core/device.ts";
import { makeNode } from "../core/graph.ts";
import { annotate, warnOnce } from "../core/trace.ts";
import { defineRules, type Primitive, type Rules } from "../core/primitive.ts";
import { zeros, zerosLike } from "../core/ops/creation.ts";
import { reshape } from "../core/ops/shape.ts";
import { moveBatchAxis } from "../autograd/batching.ts";
import { jvpFlat } from "../autograd/jvp.ts";
import { vjpFlat } from "../autograd/vjp.ts";
import { vmapFlat } from "../autograd/vmap.ts";
import {
  CrossEntropy, type CrossEntropyParams, CrossEntropyVJP, LayerNorm, type LayerNormParams, LayerNormVJP, RMSNorm, type RMSNormParams, RMSNormVJP, RoPE,
  type RoPEParams, ScaledDotProductAttention, ScaledDotProductAttentionVJP, type SdpaParams,
} from "./primitives.ts";
import { crossEntropyUnfused, layerNormUnfused, rmsNormUnfused, ropeUnfused, sdpaUnfused } from "./unfused.ts";

type Composition<P> = (inputs: MgArray[], p: P) => MgArray[];

/** jvp of `fn` at the primals, tangents given for argnums (the others held constant). */
function jvpOf(fn: (xs: MgArray[]) => MgArray[], primals: readonly MgArray[], tangents: readonly MgArray[], argnums: readonly number[]): MgArray[] {
  const full = primals.map((_, i) => {
    const k = argnums.indexOf(i);
    return k < 0 ? null : tangents[k]!;
  });
  return jvpFlat(fn, primals, full, "jvp").jvps;
}

const vjpOf = (fn: (xs: MgArray[]) => MgArray[], primals: readonly MgArray[], cotangents: readonly MgArray[], argnums: readonly number[]) =>
  vjpFlat(fn, primals, cotangents, argnums, { tag: "vjp", skipStopGradientOutputs: false }).vjps;

/** Rules that differentiate and batch the composition a primitive computes. */
function compositionRules<P>(fn: Composition<P>): Rules<P> {
  return {
    vjp: (primals, cotangents, argnums, _outputs, p) => vjpOf((xs) => fn(xs, p), primals, cotangents, argnums),
    jvp: (primals, tangents, argnums, _outputs, p) => jvpOf((xs) => fn(xs, p), primals, tangents, argnums),
    vmap: (inputs, axes, p) => {
      const outs = vmapFlat((xs) => fn(xs, p), inputs, axes, (o) => o.map(() => 0));
      return [outs, outs.map(() => 0)];
    },
  };
}

/** The backward of a forward composition: inputs [...primals, g] → one cotangent per primal. */
function backwardOf<P>(forward: Composition<P>, primalCount: (xs: MgArray[], p: P) => number, argnums?: number[]): Composition<P> {
  return (xs, p) => {
    const n = primalCount(xs, p);
    const primals = xs.slice(0, n);
    return vjpOf((ys) => forward(ys, p), primals, [xs[xs.length - 1]!], argnums ?? primals.map((_, i) => i));
  };
}

// Norms ------------------------------------------------------------------------------------------

const rmsComposition: Composition<RMSNormParams> = (xs, p) => [rmsNormUnfused(xs[0]!, p.hasWeight ? xs[1]! : null, p.eps, xs[0]!.dtype)];

const layerComposition: Composition<LayerNormParams> = (xs, p) => {
  let k = 1;
  const w = p.hasWeight ? xs[k++]! : null;
  const b = p.hasBias ? xs[k++]! : null;
  return [layerNormUnfused(xs[0]!, w, b, p.eps, xs[0]!.dtype)];
};

/** The forward norm's vjp: one fused backward node giving every cotangent at once. */
function normVjp<P extends RMSNormParams>(backward: Primitive<P>): Rules<P>["vjp"] {
  return (primals, [g], argnums, _outputs, p) => {
    if (primals[0]!.size === 0) return argnums.map((i) => zerosLike(primals[i]!));
    const grads = makeNode(backward, [...primals, g!], p, resolveStream());
    return argnums.map((i) => grads[i]!);
  };
}

defineRules(RMSNorm, { ...compositionRules(rmsComposition), vjp: normVjp(RMSNormVJP) });
defineRules(RMSNormVJP, compositionRules(backwardOf(rmsComposition, (xs) => xs.length - 1)));
defineRules(LayerNorm, { ...compositionRules(layerComposition), vjp: normVjp(LayerNormVJP) });
defineRules(LayerNormVJP, compositionRules(backwardOf(layerComposition, (xs) => xs.length - 1)));

// RoPE -------------------------------------------------------------------------------------------

const ropeComposition: Composition<RoPEParams> = (xs, p) => [ropeUnfused(xs[0]!, xs[1]!, p.hasFreqs ? xs[2]! : null, p)];

defineRules(RoPE, {
  // The rotation is linear in x and orthogonal: its transpose is the inverse rotation.
  vjp(primals, [g], argnums, _o, p) {
    if (argnums.some((i) => i !== 0)) throw new Error("[rope] The vjp with respect to the frequencies (or offsets) is not supported.");
    return [makeNode(RoPE, [g!, ...primals.slice(1)], { ...p, forward: !p.forward }, resolveStream())[0]!];
  },
  jvp(primals, tangents, argnums, _o, p) {
    if (argnums.some((i) => i !== 0)) throw new Error("[rope] The jvp with respect to the frequencies (or offsets) is not supported.");
    return [makeNode(RoPE, [tangents[0]!, ...primals.slice(1)], p, resolveStream())[0]!];
  },
  vmap: compositionRules(ropeComposition).vmap!,
});

// Attention --------------------------------------------------------------------------------------

const sdpaPrimalCount = (p: SdpaParams): number => 3 + (p.mask === "bool" || p.mask === "additive" ? 1 : 0) + (p.hasSinks ? 1 : 0);

/** softmax(scale·q·kᵀ + mask)·v over inputs [q, k, v, mask?, sinks?], unfused. */
const sdpaComposition: Composition<SdpaParams> = (xs, p) => {
  let at = 3;
  const mask = p.mask === "bool" || p.mask === "additive" ? xs[at++]! : null;
  const sinks = p.hasSinks ? xs[at++]! : null;
  const mode = p.mask === "none" ? "none" : p.mask === "causal" ? "causal" : "array";
  return [sdpaUnfused(xs[0]!, xs[1]!, xs[2]!, p.scale, mode, mask, sinks)];
};

defineRules(ScaledDotProductAttention, {
  vjp(primals, [g], argnums, outputs, p) {
    // The cotangent of an additive mask or of the sinks is made of the score-sized gradient
    // (B, Hq, qL, kL) that the fused backward never forms: it comes from the composition's vjp,
    // which MLX's CPU fallback also runs (MLX's fused Metal path refuses it). The trace says so.
    const viaComposition = argnums.filter((i) => i >= 3);
    const extra = viaComposition.length > 0 ? vjpOf((xs) => sdpaComposition(xs, p), primals, [g!], viaComposition) : [];
    for (const e of extra) {
      annotate(e, "unfused: the gradient with respect to an attention mask or sinks has the scores' shape; it runs the composition (q·kᵀ, softmax and its vjp)");
    }
    if (extra.length > 0) {
      warnOnce("sdpa-mask-grad", "[scaled_dot_product_attention] the gradient with respect to the mask or sinks runs unfused (it forms the (B, H, qL, kL) scores); MG_WARN=0 silences this.");
    }
    const fusedArgs = argnums.filter((i) => i < 3);
    let grads: MgArray[] = [];
    if (fusedArgs.length > 0) {
      // A node built outside a transform (a compiled function traced before being differentiated)
      // saved no statistics: run the fused forward again, this time keeping them.
      const [o, stats] = p.stats ? outputs : makeNode(ScaledDotProductAttention, [...primals], { ...p, stats: true }, resolveStream());
      grads = makeNode(ScaledDotProductAttentionVJP, [...primals, o!, stats!, g!], { ...p, stats: true }, resolveStream());
    }
    return argnums.map((i) => (i < 3 ? grads[i]! : extra[viaComposition.indexOf(i)]!));
  },
  // The statistics output is an implementation detail: its tangent is zero.
  jvp: (primals, tangents, argnums, outputs, p) => [
    jvpOf((xs) => sdpaComposition(xs, p), primals, tangents, argnums)[0]!,
    ...outputs.slice(1).map((s) => zerosLike(s)),
  ],
  // The mapped axis joins the batch axis: one fused call over the whole batch. (The op broadcast
  // an array mask to the full (B, Hq, qL, kL), so it merges like q, k and v.)
  vmap(inputs, axes, p) {
    const sinksAt = p.hasSinks ? inputs.length - 1 : -1;
    if (sinksAt >= 0 && axes[sinksAt]! >= 0) throw new Error("[scaled_dot_product_attention] vmap over the attention sinks is not supported.");
    const first = axes.findIndex((a) => a >= 0);
    const size = inputs[first]!.shape[axes[first]!]!;
    const merged = inputs.map((x, i) => {
      if (i === sinksAt) return x;
      const y = moveBatchAxis(x, axes[i]!, 0, size);
      return reshape(y, [size * y.shape[1]!, ...y.shape.slice(2)]);
    });
    const B = merged[0]!.shape[0]! / size;
    const outs = makeNode(ScaledDotProductAttention, merged, p, resolveStream());
    return [outs.map((o) => reshape(o, [size, B, ...o.shape.slice(1)])), outs.map(() => 0)];
  },
});

// Inputs [q, k, v, mask?, sinks?, o, stats, dO]: the composition's cotangents of q, k and v.
defineRules(ScaledDotProductAttentionVJP, compositionRules(backwardOf(sdpaComposition, (_xs, p) => sdpaPrimalCount(p), [0, 1, 2])));

// Cross entropy ----------------------------------------------------------------------------------

const crossEntropyComposition: Composition<CrossEntropyParams> = (xs) => [crossEntropyUnfused(xs[0]!, xs[1]!)];

defineRules(CrossEntropy, {
  ...compositionRules(crossEntropyComposition),
  vjp(primals, [g], argnums, _o, p) {
    const [logits, targets] = primals as [MgArray, MgArray];
    if (logits.size === 0) return argnums.map((i) => zerosLike(primals[i]!));
    const dx = makeNode(CrossEntropyVJP, [logits, targets, g!], p, resolveStream())[0]!;
    return argnums.map((i) => (i === 0 ? dx : zeros(targets.shape, targets.dtype)));
  },
});

// Inputs [logits, targets, g]: the composition's cotangent of the logits.
defineRules(CrossEntropyVJP, compositionRules(backwardOf(crossEntropyComposition, () => 2, [0])));
