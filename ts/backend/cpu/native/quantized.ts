// QuantizedMatmul and GatherQMM on the native CPU kernels (Sources/MGCpu/quant.cpp): MLX's packed
// formats read in place (dequantised a chunk at a time, never as a whole matrix), float32
// accumulation (float64 for float64 x); Quantize (affine) and Dequantize with the reference's bits.
import type { MgArray } from "../../../core/array.ts";
import { uint32 } from "../../../core/dtype.ts";
import type { DequantizeParams, QuantizedMatmulParams, QuantizeParams } from "../../../core/primitives/quantized.ts";
import { native } from "./ffi.ts";
import { addressOf, allocate, desc, discard } from "./kernels.ts";

const MODES = { affine: 0, mxfp4: 1, mxfp8: 2, nvfp4: 3 } as const;

/** Pushes an operand: its address, `nb` batch strides and its row stride (rows must be dense). */
function pushOperand(a: MgArray | null, nb: number, gatherStride: number | null): boolean {
  if (!a) {
    desc.push(0);
    for (let i = 0; i < nb; i++) desc.push(0);
    desc.push(0);
    return true;
  }
  const s = a.layout!.strides;
  const nd = a.ndim;
  if (a.size > 0 && a.shape[nd - 1]! > 1 && s[nd - 1] !== 1) return false;
  desc.push(a.size > 0 ? addressOf(a) : 0);
  if (gatherStride !== null) desc.push(s[0]!);
  else for (let i = 0; i < nb; i++) desc.push(nd - 2 - nb + i >= 0 ? s[nd - 2 - nb + i]! : 0);
  desc.push(nd >= 2 ? s[nd - 2]! : 0);
  return true;
}

function run(inputs: readonly MgArray[], out: MgArray, p: QuantizedMatmulParams, gather: { lhs: MgArray; rhs: MgArray } | null): boolean {
  const [x, w, s] = inputs as [MgArray, MgArray, MgArray];
  const b = p.mode === "affine" ? inputs[3] ?? null : null;
  if (p.mode === "affine" && !b) return false;
  const K = x.shape[x.ndim - 1]!;
  const M = x.shape[x.ndim - 2] ?? 1;
  const N = out.shape[out.ndim - 1]!;
  const nb = gather ? 1 : out.ndim - 2;
  const batch = gather ? [gather.lhs.size] : out.shape.slice(0, -2);
  if (x.ndim < 2 || (!gather && w.ndim > 2 && w.ndim !== x.ndim)) return false;
  const nonEmpty = out.size > 0;
  for (const a of [x, w, s, b, gather?.lhs, gather?.rhs]) if (a && nonEmpty && a.size > 0 && addressOf(a) < 0) return false;
  if (gather && (gather.lhs.dtype !== uint32 || gather.rhs.dtype !== uint32)) return false;
  if (!allocate([out])) return false;
  desc.n = 0;
  desc.reserve(40 + 6 * nb);
  desc.push(MODES[p.mode]);
  desc.push(p.groupSize);
  desc.push(p.bits);
  desc.push(p.transpose ? 1 : 0);
  desc.push(x.dtype.index);
  desc.push(s.dtype.index);
  desc.push(M);
  desc.push(N);
  desc.push(K);
  desc.push(nb);
  for (const d of batch) desc.push(d);
  // unbatched weights (2-D) under a batched x: zero batch strides
  const wOperand = (a: MgArray | null) => (a && !gather && a.ndim === 2 && nb > 0 ? pushBroadcast(a, nb) : pushOperand(a, nb, gather ? 0 : null));
  const ok = pushOperand(x, nb, gather ? 0 : null) && wOperand(w) && wOperand(s) && wOperand(b);
  if (!ok) {
    discard([out]);
    return false;
  }
  desc.push(nonEmpty ? addressOf(out) : 0);
  desc.push(gather ? 1 : 0);
  desc.push(gather && nonEmpty ? addressOf(gather.lhs) : 0);
  desc.push(gather && nonEmpty ? addressOf(gather.rhs) : 0);
  desc.push(gather ? x.shape[0]! : 0);
  desc.push(gather ? w.shape[0]! : 0);
  if (desc.call(native().mg_cpu_quantized_matmul)) return true;
  discard([out]);
  return false;
}

function pushBroadcast(a: MgArray, nb: number): boolean {
  const s = a.layout!.strides;
  if (a.size > 0 && a.shape[1]! > 1 && s[1] !== 1) return false;
  desc.push(a.size > 0 ? addressOf(a) : 0);
  for (let i = 0; i < nb; i++) desc.push(0);
  desc.push(s[0]!);
  return true;
}

export function runQuantizedMatmul(inputs: readonly MgArray[], [out]: readonly MgArray[], p: QuantizedMatmulParams): boolean {
  return !!out && run(inputs, out, p, null);
}

export function runGatherQmm(inputs: readonly MgArray[], [out]: readonly MgArray[], p: QuantizedMatmulParams): boolean {
  if (!out) return false;
  const lhs = inputs[inputs.length - 2]!, rhs = inputs[inputs.length - 1]!;
  return run(inputs.slice(0, -2), out, p, { lhs, rhs });
}

/** The kernel the native side picks (the trace's name). */
export function qmmKernel(x: MgArray, p: QuantizedMatmulParams): string {
  return x.dtype.name !== "float64" && (x.shape[x.ndim - 2] ?? 1) <= 8 ? "qmv" : "qmm";
}

/** Quantize (affine; the floating-point modes decline to the reference). */
export function runQuantize([w]: readonly MgArray[], outputs: readonly MgArray[], p: QuantizeParams): boolean {
  if (!w || p.mode !== "affine" || outputs.length !== 3 || w.size === 0) return false;
  if (addressOf(w) < 0 || !w.layout!.rowContiguous) return false;
  if (!allocate(outputs)) return false;
  const rowLen = w.shape[w.ndim - 1]!;
  desc.n = 0;
  desc.push(0);
  desc.push(p.groupSize);
  desc.push(p.bits);
  desc.push(w.dtype.index);
  desc.push(w.size / rowLen);
  desc.push(rowLen);
  desc.push(addressOf(w));
  for (const o of outputs) desc.push(addressOf(o));
  if (desc.call(native().mg_cpu_quantize)) return true;
  discard(outputs);
  return false;
}

/** Dequantize (every mode). */
export function runDequantize(inputs: readonly MgArray[], [out]: readonly MgArray[], p: DequantizeParams): boolean {
  const [wq, s] = inputs;
  const b = p.mode === "affine" ? inputs[2] : null;
  const global = p.mode === "nvfp4" ? inputs[2] ?? null : null;
  if (!wq || !s || !out || out.size === 0 || out.dtype !== p.dtype) return false;
  for (const a of [wq, s, b, global]) if (a && (addressOf(a) < 0 || !a.layout!.rowContiguous)) return false;
  if (!allocate([out])) return false;
  const rowLen = out.shape[out.ndim - 1]!;
  desc.n = 0;
  desc.push(MODES[p.mode]);
  desc.push(p.groupSize);
  desc.push(p.bits);
  desc.push(out.dtype.index);
  desc.push(out.size / rowLen);
  desc.push(rowLen);
  desc.push(addressOf(wq));
  desc.push(addressOf(s));
  desc.push(b ? addressOf(b) : 0);
  desc.push(global ? addressOf(global) : 0);
  desc.push(addressOf(out));
  if (desc.call(native().mg_cpu_dequantize)) return true;
  discard([out]);
  return false;
}
