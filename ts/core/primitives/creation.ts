// Primitives that make data from parameters alone.
import type { Dtype } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";
import { writeNumbers } from "../../backend/cpu/values.ts";
import { arangeRule } from "../../backend/gpu/movement.ts";

export interface ArangeParams {
  start: number;
  step: number;
  size: number;
  dtype: Dtype;
}

/** start + i·step, computed in float64 and rounded once to the dtype. */
export const Arange: Primitive<ArangeParams> = {
  name: "Arange",
  gpu: arangeRule,
  outputSpecs: (_i, p) => [{ shape: [p.size], dtype: p.dtype }],
  cpu(_inputs, [out], p) {
    const v = new Float64Array(p.size);
    for (let i = 0; i < p.size; i++) v[i] = p.start + i * p.step;
    writeNumbers(out!, v);
  },
  paramsKey: (p) => `${p.start}|${p.step}|${p.size}|${p.dtype.name}`,
};
