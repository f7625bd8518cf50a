// Matrix products (MLX's Matmul and AddMM). Inputs are (batch…, M, K) and (batch…, K, N) of one
// inexact dtype with equal batch shapes: the ops insert the 1-D singleton axes and broadcast
// the batch axes (zero-stride views) before building these nodes, so batch broadcasting is summed
// back by the Broadcast view's vjp in the graph. Rules: ts/core/rules/matmul.ts.
import type { MgArray } from "../array.ts";
import type { Primitive } from "../primitive.ts";

const outShape = (a: MgArray, b: MgArray) => [...a.shape.slice(0, -1), b.shape[b.ndim - 1]!];

export interface MatmulParams {
  /**
   * Set when the op was called under precision policy matmul = "high" (TF32-class or NAX kernels
   * allowed). A backend with such kernels may choose them for float32; today none exists, and the
   * trace says so.
   */
  precision?: "high";
}

/** y = A·B over the last two axes. */
export const Matmul: Primitive<MatmulParams> = {
  name: "Matmul",
  outputSpecs: ([a, b]) => [{ shape: outShape(a!, b!), dtype: a!.dtype }],
  shapeless: "infer",
  paramsKey: (p) => p.precision ?? "",
};

export interface AddMMParams extends MatmulParams {
  /** Already rounded to float32, as MLX's C++ `float alpha, beta`. */
  alpha: number;
  beta: number;
}

/** y = α·(A·B) + β·C; C has the output's shape. With β = 0, C is not read (BLAS convention,
 *  so a NaN in C does not leak into the result). Real floating dtypes only. */
export const AddMM: Primitive<AddMMParams> = {
  name: "AddMM",
  outputSpecs: ([a, b]) => [{ shape: outShape(a!, b!), dtype: a!.dtype }],
  shapeless: "infer",
  paramsKey: (p) => `${p.alpha}|${p.beta}|${p.precision ?? ""}`,
};
