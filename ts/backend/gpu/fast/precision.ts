// Accumulator choice and precision labels of the mg.fast kernels (guide §0, question 3).
import { bfloat16, type Dtype, float16, float32 } from "../../../core/dtype.ts";
import { Precision } from "../../../core/trace.ts";
import { dtypeTag, mslType } from "../dtypes.ts";

import type { Accumulate16 } from "../../../core/precision.ts";
export type { Accumulate16 };

/** The accumulator dtype of a kernel over `d` inputs under the policy. */
export function accumulatorOf(d: Dtype, accumulate16: Accumulate16): Dtype {
  return d === float32 || accumulate16 === "float32" ? float32 : d;
}

const short = (d: Dtype): string => (d === float16 ? "fp16" : d === bfloat16 ? "bf16" : "fp32");

/** "IEEE fp32" for float32, else "<acc> accumulate over <d> operands", with the policy that chose it. */
export function accumulationLabel(d: Dtype, acc: Dtype): string {
  if (d === float32) return Precision.ieee("fp32");
  const label = Precision.accumulate(short(acc), short(d));
  return acc === float32 ? `${label} (policy accumulate16: float32)` : `${label} (policy accumulate16: native)`;
}

/** The MSL accumulator type and a name suffix ("" for float, "_acc_f16" for native half). */
export function accumulatorParts(d: Dtype, acc: Dtype): { msl: string; suffix: string } {
  return { msl: mslType(acc, "fast"), suffix: acc === float32 || acc !== d ? "" : `_acc_${dtypeTag(acc)}` };
}
