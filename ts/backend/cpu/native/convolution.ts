// The Convolution primitive on the native CPU kernels (Sources/MGCpu/conv.cpp): an implicit GEMM per
// group over strided operands (forward and the backward passes, which are Convolution nodes too),
// a direct loop for depthwise convolutions.
import type { MgArray } from "../../../core/array.ts";
import type { ConvolutionParams } from "../../../core/primitives/convolution.ts";
import { native } from "./ffi.ts";
import { addressOf, allocate, desc, discard } from "./kernels.ts";

export function runConvolution([x, w]: readonly MgArray[], [out]: readonly MgArray[], p: ConvolutionParams): boolean {
  if (!x || !w || !out || out.dtype !== x.dtype || w.dtype !== x.dtype) return false;
  const nd = x.ndim - 2;
  if (nd < 1 || nd > 3 || w.ndim !== x.ndim) return false;
  const nonEmpty = out.size > 0;
  if (nonEmpty && ((x.size > 0 && addressOf(x) < 0) || (w.size > 0 && addressOf(w) < 0))) return false;
  if (!allocate([out])) return false;
  desc.n = 0;
  desc.reserve(16 + 12 * nd);
  desc.push(nd);
  desc.push(x.dtype.index);
  for (const d of x.shape) desc.push(d);
  desc.push(nonEmpty && x.size > 0 ? addressOf(x) : 0);
  for (const s of x.layout!.strides) desc.push(s);
  for (const d of w.shape) desc.push(d);
  desc.push(nonEmpty && w.size > 0 ? addressOf(w) : 0);
  for (const s of w.layout!.strides) desc.push(s);
  for (let a = 0; a < nd; a++) desc.push(out.shape[a + 1]!);
  desc.push(nonEmpty ? addressOf(out) : 0);
  for (const v of p.stride) desc.push(v);
  for (const v of p.paddingLo) desc.push(v);
  for (const v of p.kernelDilation) desc.push(v);
  for (const v of p.inputDilation) desc.push(v);
  desc.push(p.groups);
  desc.push(p.flip ? 1 : 0);
  if (desc.call(native().mg_cpu_convolution)) return true;
  discard([out]);
  return false;
}
