// The dense factorizations (LUF, Inverse, Cholesky, QRF, and the real SVD and Eigh) on the native CPU kernels
// (Sources/MGCpu/linalg.cpp): the reference's algorithms in float64 over batches of strided
// matrices. A singular (or, for SVD/Eigh, non-finite) matrix declines, so the reference raises the
// op's error; complex matrices run the reference.
import type { MgArray } from "../../../core/array.ts";
import { native } from "./ffi.ts";
import { addressOf, allocate, desc, discard, pushShape, pushStrides } from "./kernels.ts";

export const LinalgOp = { lu: 0, inverse: 1, triInverse: 2, cholesky: 3, qr: 4, svd: 5, eigh: 6 } as const;

export function runLinalg([a]: readonly MgArray[], outputs: readonly MgArray[], op: number, upper: boolean, vectors = false): boolean {
  if (!a || a.ndim < 2 || a.dtype.kind === "c") return false;
  const nonEmpty = outputs.every((o) => o.size > 0);
  if (nonEmpty && addressOf(a) < 0) return false;
  if (!allocate(outputs)) return false;
  desc.n = 0;
  desc.reserve(8 + 2 * a.ndim + outputs.length);
  desc.push(op);
  desc.push(upper ? 1 : 0);
  desc.push(vectors ? 1 : 0);
  desc.push(a.dtype.index);
  desc.push(a.ndim);
  pushShape(a.shape);
  desc.push(nonEmpty ? addressOf(a) : 0);
  pushStrides(a);
  for (const o of outputs) desc.push(nonEmpty ? addressOf(o) : 0);
  if (desc.call(native().mg_cpu_linalg)) return true;
  discard(outputs);
  return false;
}
