// mg.fast's fused primitives (norms, RoPE, attention, cross entropy) on the native CPU kernels
// (Sources/MGCpu/fast.cpp): the float64
// references of ts/backend/cpu/fast.ts carried over operation for operation, over strided operands.
import type { MgArray } from "../../../core/array.ts";
import type { LayerNormParams, RMSNormParams, RoPEParams, SdpaParams } from "../../../fast/primitives.ts";
import { native } from "./ffi.ts";
import { addressOf, allocate, desc, discard, pushShape, pushStrides } from "./kernels.ts";

const usable = (a: MgArray | null | undefined) => !a || a.size === 0 || addressOf(a) >= 0;

function pushOperand(a: MgArray | null): void {
  desc.push(a && a.size > 0 ? addressOf(a) : 0);
  desc.push(a ? a.dtype.index : 10);
  if (a) pushStrides(a);
}

function pushVector(a: MgArray | null): void {
  desc.push(a && a.size > 0 ? addressOf(a) : 0);
  desc.push(a ? a.dtype.index : 10);
  desc.push(a && a.ndim > 0 ? a.layout!.strides[a.ndim - 1]! : 0);
}

function finish(entry: (d: Float64Array, n: number) => number, outputs: readonly MgArray[]): boolean {
  if (desc.call(entry)) return true;
  discard(outputs);
  return false;
}

/** RMSNorm / LayerNorm forward (vjp false) or backward (true). */
export function runNorm(inputs: readonly MgArray[], outputs: readonly MgArray[], p: RMSNormParams | LayerNormParams, layer: boolean, vjp: boolean): boolean {
  const x = inputs[0]!;
  let at = 1;
  const w = p.hasWeight ? inputs[at++]! : null;
  const b = layer && (p as LayerNormParams).hasBias ? inputs[at++]! : null;
  const g = vjp ? inputs[at++]! : null;
  if (x.ndim === 0 || ![x, w, b, g].every(usable)) return false;
  if ((w && w.ndim !== 1) || (b && b.ndim !== 1) || (g && g.ndim !== x.ndim)) return false;
  if (!allocate(outputs)) return false;
  desc.n = 0;
  desc.reserve(24 + 3 * x.ndim);
  desc.push(layer ? 1 : 0);
  desc.push(vjp ? 1 : 0);
  desc.push(x.ndim);
  pushShape(x.shape);
  pushOperand(x);
  pushVector(w);
  pushVector(b); // the vjp reads only its dtype (db's)
  desc.push(Math.fround(p.eps));
  desc.push(x.dtype.index);
  desc.push(addressOf(outputs[0]!));
  if (vjp) {
    pushOperand(g);
    let k = 1;
    desc.push(w ? addressOf(outputs[k++]!) : 0);
    desc.push(b ? addressOf(outputs[k++]!) : 0);
  }
  return finish(native().mg_cpu_norm, outputs);
}

/** RoPE (the rotation, or its inverse for the vjp). */
export function runRope(inputs: readonly MgArray[], [out]: readonly MgArray[], p: RoPEParams): boolean {
  const [x, offset, freqs] = inputs;
  if (!x || !offset || !out || x.ndim < 2 || ![x, offset, freqs].every(usable)) return false;
  if (!allocate([out])) return false;
  desc.n = 0;
  desc.reserve(24 + 3 * x.ndim);
  desc.push(x.ndim);
  pushShape(x.shape);
  pushOperand(x);
  desc.push(p.dims);
  desc.push(p.traditional ? 1 : 0);
  desc.push(p.forward ? 1 : 0);
  desc.push(Math.fround(p.base));
  desc.push(Math.fround(p.scale));
  desc.push(offset.size > 0 ? addressOf(offset) : 0);
  desc.push(offset.dtype.index);
  desc.push(Math.max(1, offset.size));
  desc.push(offset.ndim > 0 ? offset.layout!.strides[offset.ndim - 1]! : 0);
  pushVector(p.hasFreqs ? freqs ?? null : null);
  desc.push(out.dtype.index);
  desc.push(out.size > 0 ? addressOf(out) : 0);
  return finish(native().mg_cpu_rope, [out]);
}

const MASKS = { none: 0, causal: 1, bool: 2, additive: 3 } as const;

/** Scaled dot-product attention: forward ([o, stats?]) or its vjp ([dq, dk, dv]). */
export function runSdpa(inputs: readonly MgArray[], outputs: readonly MgArray[], p: SdpaParams, vjp: boolean): boolean {
  const [q, k, v] = inputs as [MgArray, MgArray, MgArray];
  let at = 3;
  const mask = p.mask === "bool" || p.mask === "additive" ? inputs[at++]! : null;
  const sinks = p.hasSinks ? inputs[at++]! : null;
  const g = vjp ? inputs[inputs.length - 1]! : null;
  if ([q, k, v].some((a) => a.ndim !== 4) || (mask && mask.ndim !== 4) || (g && g.ndim !== 4)) return false;
  if (![q, k, v, mask, sinks, g].every(usable)) return false;
  if (!allocate(outputs)) return false;
  desc.n = 0;
  desc.reserve(64);
  desc.push(vjp ? 1 : 0);
  desc.push(q.shape[0]!);
  desc.push(q.shape[1]!);
  desc.push(k.shape[1]!);
  desc.push(q.shape[2]!);
  desc.push(k.shape[2]!);
  desc.push(q.shape[3]!);
  desc.push(v.shape[3]!);
  desc.push(p.scale);
  desc.push(MASKS[p.mask]);
  pushOperand(q);
  pushOperand(k);
  pushOperand(v);
  if (mask) pushOperand(mask);
  else {
    desc.push(0);
    desc.push(0);
    for (let i = 0; i < 4; i++) desc.push(0);
  }
  pushVector(sinks);
  if (!vjp) {
    desc.push(outputs[0]!.size > 0 ? addressOf(outputs[0]!) : 0);
    desc.push(outputs[1] && outputs[1].size > 0 ? addressOf(outputs[1]) : 0);
  } else {
    pushOperand(g);
    for (const o of outputs) desc.push(o.size > 0 ? addressOf(o) : 0);
  }
  return finish(native().mg_cpu_sdpa, outputs);
}

/** Cross entropy with class-index targets: the loss (vjp false) or dlogits (true). */
export function runCrossEntropy(inputs: readonly MgArray[], [out]: readonly MgArray[], vjp: boolean): boolean {
  const [x, t, g] = inputs;
  if (!x || !t || !out || x.ndim === 0 || t.ndim !== x.ndim - 1 || (vjp && (!g || g.ndim !== t.ndim))) return false;
  if (![x, t, g].every(usable)) return false;
  if (!allocate([out])) return false;
  desc.n = 0;
  desc.reserve(16 + 4 * x.ndim);
  desc.push(vjp ? 1 : 0);
  desc.push(x.ndim);
  pushShape(x.shape);
  pushOperand(x);
  pushOperand(t);
  if (vjp) pushOperand(g!);
  desc.push(out.dtype.index);
  desc.push(out.size > 0 ? addressOf(out) : 0);
  return finish(native().mg_cpu_cross_entropy, [out]);
}
