// The per-dtype tolerances metalgrad uses when it compares a GPU result with the CPU device's
// float64-accurate reference (one place, so every differential test and user agrees).
//
//   |gpu − cpu| ≤ atol + rtol·|cpu|, elementwise; NaN matches NaN and ±inf must match exactly.
//
// Integer and bool results must be equal. The float rows allow a few units in the last place of
// the dtype (the GPU computes single ops in the dtype — half in half, bfloat in float rounded once
// — and accumulates reductions and matmuls in float32), scaled for accumulation over long axes
// with `accumulationTolerance`.
import { bfloat16, complex64, type Dtype, float16, float32, float64 } from "../core/dtype.ts";

/** A tolerance: |a − b| ≤ atol + rtol·|b|. */
export interface Tolerance {
  rtol: number;
  atol: number;
}

/** The default tolerance of each floating dtype. */
export const TOLERANCES: ReadonlyMap<Dtype, Tolerance> = new Map([
  [float32, { rtol: 2e-6, atol: 1e-6 }],
  [complex64, { rtol: 2e-6, atol: 1e-6 }],
  [float16, { rtol: 2e-3, atol: 1e-3 }],
  [bfloat16, { rtol: 1.6e-2, atol: 1e-2 }],
  [float64, { rtol: 1e-12, atol: 1e-14 }],
]);

/**
 * The tolerance for a dtype (exact for integers and bool).
 * @example
 * mg.testing.toleranceFor(mg.float16)
 */
export function toleranceFor(dtype: Dtype): Tolerance {
  return TOLERANCES.get(dtype) ?? { rtol: 0, atol: 0 };
}

/**
 * The tolerance for results accumulated over `n` terms (sums, matmuls): rounding grows ~√n.
 * @example
 * mg.testing.accumulationTolerance(mg.float32, 1000)
 */
export function accumulationTolerance(dtype: Dtype, n: number): Tolerance {
  const t = toleranceFor(dtype);
  const f = Math.max(1, Math.sqrt(Math.max(n, 1)));
  return { rtol: t.rtol * f, atol: t.atol * f };
}

/**
 * The tolerance for normalised results over `n` terms (softmax): each output is one term's share
 * of a sum, so it shrinks like 1/n while its relative error grows with the sum's (~√n roundings).
 * accumulationTolerance's absolute part grows with n instead, which for outputs of size 1/n would
 * accept almost any error; here it shrinks like the outputs (never below the dtype's subnormal
 * spacing for n ≤ 2^14, so underflowed outputs still compare).
 */
export function normalizedTolerance(dtype: Dtype, n: number): Tolerance {
  const t = toleranceFor(dtype);
  const m = Math.max(n, 1);
  return { rtol: t.rtol * Math.max(1, Math.sqrt(m)), atol: t.atol / m };
}
