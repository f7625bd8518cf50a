// Index of the maximum or minimum along one axis (MLX's ArgReduce). The output keeps the reduced
// axis as size 1 and is uint32; the op squeezes it unless keepdims. Rules: ts/core/rules/sort.ts.
import { uint32 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";

export interface ArgReduceParams {
  type: "argmax" | "argmin";
  axis: number;
}

export const ArgReduce: Primitive<ArgReduceParams> = {
  name: "ArgReduce",
  opName: (p) => p.type,
  outputSpecs: ([a], p) => [{ shape: a!.shape.map((d, i) => (i === p.axis ? 1 : d)), dtype: uint32 }],
  shapeless: "infer",
  keptAxes: (p) => [p.axis],
  paramsKey: (p) => `${p.type}|${p.axis}`,
};
