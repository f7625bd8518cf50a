// Primitives that make data from parameters alone.
import type { Dtype } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";

export interface ArangeParams {
  start: number;
  step: number;
  size: number;
  dtype: Dtype;
}

/** start + i·step, computed in float64 and rounded once to the dtype. */
export const Arange: Primitive<ArangeParams> = {
  name: "Arange",
  outputSpecs: (_i, p) => [{ shape: [p.size], dtype: p.dtype }],
  paramsKey: (p) => `${p.start}|${p.step}|${p.size}|${p.dtype.name}`,
};
