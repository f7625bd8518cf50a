// The CPU device's kernels for the mg.fast primitives: inputs read as float64, the references of
// ts/backend/cpu/fast.ts, each output rounded once to its dtype.
import type { MgArray } from "../../core/array.ts";
import {
  CrossEntropy, type CrossEntropyParams, CrossEntropyVJP, LayerNorm, type LayerNormParams, LayerNormVJP, RMSNorm, type RMSNormParams, RMSNormVJP,
  RoPE, type RoPEParams, ScaledDotProductAttention, ScaledDotProductAttentionVJP, type SdpaParams,
} from "../../fast/primitives.ts";
import { registerCpu } from "./registry.ts";
import {
  crossEntropyRef, crossEntropyVjpRef, normRows, normRowsVjp, ropeRef, type SdpaDims, sdpaForward, type SdpaRefOptions, sdpaVjpRef,
} from "./fast.ts";
import { readNumbers, writeNumbers } from "./values.ts";
import { bfloat16, type Dtype, float16, float32, roundBfloat16 } from "../../core/dtype.ts";

const lastDim = (x: MgArray): number => x.shape[x.ndim - 1] ?? 1;

/** Rounding to a float dtype's values (the norms round their affine part per operation, as MLX). */
function rounderFor(d: Dtype): ((v: number) => number) | undefined {
  if (d === float32) return Math.fround;
  if (d === float16) return Math.f16round;
  if (d === bfloat16) return roundBfloat16;
  return undefined;
}

function cpuRmsNorm(inputs: readonly MgArray[], [out]: readonly MgArray[], p: RMSNormParams): void {
  const x = inputs[0]!;
  const w = p.hasWeight ? readNumbers(inputs[1]!) : null;
  writeNumbers(out!, normRows(readNumbers(x), lastDim(x), w, null, { layer: false, eps: p.eps, round: rounderFor(out!.dtype) }));
}

function cpuLayerNorm(inputs: readonly MgArray[], [out]: readonly MgArray[], p: LayerNormParams): void {
  const x = inputs[0]!;
  let k = 1;
  const w = p.hasWeight ? readNumbers(inputs[k++]!) : null;
  const b = p.hasBias ? readNumbers(inputs[k++]!) : null;
  writeNumbers(out!, normRows(readNumbers(x), lastDim(x), w, b, { layer: true, eps: p.eps, round: rounderFor(out!.dtype) }));
}

/** Inputs [x, w?, b?, g]; outputs [dx, dw?, db?] (as the params say). */
function cpuNormVjp(layer: boolean) {
  return (inputs: readonly MgArray[], outputs: readonly MgArray[], p: RMSNormParams | LayerNormParams): void => {
    const x = inputs[0]!;
    const hasBias = layer && (p as LayerNormParams).hasBias;
    const w = p.hasWeight ? readNumbers(inputs[1]!) : null;
    const g = readNumbers(inputs[inputs.length - 1]!);
    const r = normRowsVjp(readNumbers(x), lastDim(x), w, g, { layer, eps: p.eps });
    let k = 0;
    writeNumbers(outputs[k++]!, r.dx);
    if (p.hasWeight) writeNumbers(outputs[k++]!, r.dw);
    if (hasBias) writeNumbers(outputs[k++]!, r.db);
  };
}

function cpuRope(inputs: readonly MgArray[], [out]: readonly MgArray[], p: RoPEParams): void {
  const x = inputs[0]!;
  writeNumbers(
    out!,
    ropeRef(readNumbers(x), x.shape, {
      dims: p.dims,
      traditional: p.traditional,
      base: p.hasFreqs ? null : p.base,
      scale: p.scale,
      offsets: Array.from(readNumbers(inputs[1]!)),
      freqs: p.hasFreqs ? readNumbers(inputs[2]!) : null,
      forward: p.forward,
    }),
  );
}

function sdpaDims(q: MgArray, k: MgArray, v: MgArray): SdpaDims {
  return { B: q.shape[0]!, Hq: q.shape[1]!, Hkv: k.shape[1]!, qL: q.shape[2]!, kL: k.shape[2]!, Dk: q.shape[3]!, Dv: v.shape[3]! };
}

function sdpaRefOptions(inputs: readonly MgArray[], p: SdpaParams): SdpaRefOptions {
  let k = 3;
  const mask = p.mask === "bool" || p.mask === "additive" ? { kind: p.mask, values: readNumbers(inputs[k++]!) } : { kind: p.mask };
  const sinks = p.hasSinks ? readNumbers(inputs[k++]!) : null;
  return { scale: p.scale, mask: mask as SdpaRefOptions["mask"], sinks };
}

/** Inputs [q, k, v, mask?, sinks?]; outputs [o, stats]. */
function cpuSdpa(inputs: readonly MgArray[], [o, stats]: readonly MgArray[], p: SdpaParams): void {
  const [q, k, v] = inputs as [MgArray, MgArray, MgArray];
  const d = sdpaDims(q, k, v);
  const opts = sdpaRefOptions(inputs, p);
  const r = sdpaForward(readNumbers(q), readNumbers(k), readNumbers(v), d, opts);
  writeNumbers(o!, r.out);
  if (stats) writeNumbers(stats, r.stats);
}

/** Inputs [q, k, v, mask?, sinks?, o, stats, dO]; outputs [dq, dk, dv]. */
function cpuSdpaVjp(inputs: readonly MgArray[], [dq, dk, dv]: readonly MgArray[], p: SdpaParams): void {
  const [q, k, v] = inputs as [MgArray, MgArray, MgArray];
  const g = sdpaVjpRef(readNumbers(q), readNumbers(k), readNumbers(v), sdpaDims(q, k, v), sdpaRefOptions(inputs, p), readNumbers(inputs[inputs.length - 1]!));
  writeNumbers(dq!, g.dq);
  writeNumbers(dk!, g.dk);
  writeNumbers(dv!, g.dv);
}

function cpuCrossEntropy([logits, targets]: readonly MgArray[], [loss]: readonly MgArray[], _p: CrossEntropyParams): void {
  writeNumbers(loss!, crossEntropyRef(readNumbers(logits!), lastDim(logits!), readNumbers(targets!)));
}

/** Inputs [logits, targets, g]; output [dlogits]. */
function cpuCrossEntropyVjp([logits, targets, g]: readonly MgArray[], [dx]: readonly MgArray[], _p: CrossEntropyParams): void {
  writeNumbers(dx!, crossEntropyVjpRef(readNumbers(logits!), lastDim(logits!), readNumbers(targets!), readNumbers(g!)));
}

registerCpu(RMSNorm, cpuRmsNorm);
registerCpu(RMSNormVJP, cpuNormVjp(false));
registerCpu(LayerNorm, cpuLayerNorm);
registerCpu(LayerNormVJP, cpuNormVjp(true));
registerCpu(RoPE, cpuRope);
registerCpu(ScaledDotProductAttention, cpuSdpa);
registerCpu(ScaledDotProductAttentionVJP, cpuSdpaVjp);
registerCpu(CrossEntropy, cpuCrossEntropy);
registerCpu(CrossEntropyVJP, cpuCrossEntropyVjp);
