// The FFT primitive on the native CPU kernels (Sources/MGCpu/fft.cpp): complex64 / float32 operands
// of any layout, transformed in float64 and rounded once, as the TypeScript reference
// (ts/backend/cpu/fft.ts), whose plans and butterflies the native kernels mirror.
import type { MgArray } from "../../../core/array.ts";
import type { FftParams } from "../../../core/primitives/fft.ts";
import { native } from "./ffi.ts";
import { addressOf, allocate, desc, discard, pushShape, pushStrides } from "./kernels.ts";

export function runFft([a]: readonly MgArray[], [out]: readonly MgArray[], p: FftParams): boolean {
  if (!a || !out || a.ndim === 0) return false;
  const nonEmpty = out.size > 0;
  if (nonEmpty && addressOf(a) < 0) return false;
  if (!allocate([out])) return false;
  const nd = a.ndim;
  desc.n = 0;
  desc.reserve(12 + 3 * nd + p.axes.length);
  desc.push(nd);
  desc.push(a.dtype.index);
  pushShape(a.shape);
  desc.push(nonEmpty ? addressOf(a) : 0);
  pushStrides(a);
  desc.push(out.dtype.index);
  pushShape(out.shape);
  desc.push(nonEmpty ? addressOf(out) : 0);
  desc.push(p.axes.length);
  for (const ax of p.axes) desc.push(ax);
  desc.push(p.inverse ? 1 : 0);
  desc.push(p.real ? 1 : 0);
  desc.push(p.n);
  if (desc.call(native().mg_cpu_fft)) return true;
  discard([out]);
  return false;
}
