// Joining arrays along an axis. Rules: ts/core/rules/join.ts.
import type { Primitive } from "../primitive.ts";

export interface ConcatenateParams {
  axis: number;
}

/** Inputs share a dtype and all dims but `axis` (the op casts and validates). */
export const Concatenate: Primitive<ConcatenateParams> = {
  name: "Concatenate",
  outputSpecs(inputs, p) {
    const shape = [...inputs[0]!.shape];
    shape[p.axis] = inputs.reduce((acc, x) => acc + x.shape[p.axis]!, 0);
    return [{ shape, dtype: inputs[0]!.dtype }];
  },
  paramsKey: (p) => String(p.axis),
};
