// Softmax and log-sum-exp over the last axis (MLX's Softmax and LogSumExp). The ops move any set
// of axes last and flatten them, so these records only ever see one trailing axis. Inputs are
// floating (the ops apply at_least_float). Rules: ts/core/rules/softmax.ts.
import type { Primitive } from "../primitive.ts";

export interface SoftmaxParams {
  /** Accumulate 16-bit inputs in float32 (MLX's `precise`). The CPU always accumulates in
   *  float64, which satisfies it; GPU kernels choose their accumulator from it. */
  precise: boolean;
}

export const Softmax: Primitive<SoftmaxParams> = {
  name: "Softmax",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  shapeless: "infer",
  paramsKey: (p) => (p.precise ? "precise" : ""),
};

/** log Σ exp(x) over the last axis, which the output keeps as size 1. */
export const LogSumExp: Primitive<Record<string, never>> = {
  name: "LogSumExp",
  outputSpecs: ([a]) => [{ shape: [...a!.shape.slice(0, -1), 1], dtype: a!.dtype }],
  shapeless: "infer",
  keptAxes: (_p, ndim) => [ndim - 1],
};
