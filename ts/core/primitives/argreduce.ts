// Index of the maximum or minimum along one axis (MLX's ArgReduce). The output keeps the reduced
// axis as size 1 and is uint32; the op squeezes it unless keepdims.
import { uint32 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";
import { argReduceLanes, readKeys } from "../../backend/cpu/sort.ts";
import { writeNumbers } from "../../backend/cpu/values.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { zerosLike } from "../ops/creation.ts";
import { shiftAxis } from "./sort.ts";
import { argReduceRule } from "../../backend/gpu/reduce.ts";

export interface ArgReduceParams {
  type: "argmax" | "argmin";
  axis: number;
}

export const ArgReduce: Primitive<ArgReduceParams> = {
  name: "ArgReduce",
  gpu: argReduceRule,
  outputSpecs: ([a], p) => [{ shape: a!.shape.map((d, i) => (i === p.axis ? 1 : d)), dtype: uint32 }],
  cpu([a], [out], p) {
    writeNumbers(out!, argReduceLanes(readKeys(a!), a!.shape, p.axis, p.type === "argmax"));
  },
  // An index is piecewise constant in the input: no gradient flows back, the tangent is zero.
  vjp: ([a]) => [zerosLike(a!)],
  jvp: (_p, _t, _a, [y]) => [zerosLike(y!)],
  // The reduced axis is kept (size 1), so the batch axis stays where it is.
  vmap: ([a], [b], p) => [[makeArray(ArgReduce, [a!], { type: p.type, axis: shiftAxis(p.axis, b!) }, resolveStream())], [b!]],
  paramsKey: (p) => `${p.type}|${p.axis}`,
};
