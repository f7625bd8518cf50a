// Reductions over a set of axes (MLX's Reduce). The output keeps reduced axes as size 1; the op
// squeezes them unless keepdims. Rules: ts/core/rules/reduce.ts.
import { bool_ } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";

export type ReduceType = "sum" | "prod" | "max" | "min" | "and" | "or";

/** The op each reduction type is (error tags and kernel names). */
export const REDUCE_OPS: Record<ReduceType, string> = { sum: "sum", prod: "prod", max: "max", min: "min", and: "all", or: "any" };

export interface ReduceParams {
  type: ReduceType;
  /** Sorted, normalised axes. */
  axes: number[];
}

export const Reduce: Primitive<ReduceParams> = {
  name: "Reduce",
  opName: (p) => REDUCE_OPS[p.type],
  outputSpecs([a], p) {
    const shape = a!.shape.map((d, i) => (p.axes.includes(i) ? 1 : d));
    let dtype = a!.dtype;
    if (p.type === "and" || p.type === "or") dtype = bool_;
    return [{ shape, dtype }];
  },
  shapeless: "infer",
  keptAxes: (p) => [...p.axes],
  paramsKey: (p) => `${p.type}|${p.axes.join(",")}`,
};
