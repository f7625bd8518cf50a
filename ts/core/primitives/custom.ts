// CustomTransforms: one node standing for a function whose transforms are given rather than
// derived (mx.custom_function, mx.checkpoint, mx.depends). Its inputs are the function's arguments
// followed by its outputs (behind stop_gradient): the forward pass already ran, so evaluating it
// forwards the outputs as views, on every device. Its rules (ts/core/rules/custom.ts) call the
// ones carried in the params; ts/autograd/custom.ts builds the nodes.
import type { MgArray } from "../array.ts";
import type { Primitive } from "../primitive.ts";
import { sameView } from "../layout.ts";

export interface CustomTransformsParams {
  /** The trailing inputs that are the function's outputs. */
  numOutputs: number;
  vjp(primals: MgArray[], cotangents: MgArray[], outputs: MgArray[]): MgArray[];
  jvp(primals: MgArray[], tangents: MgArray[], argnums: number[]): MgArray[];
  vmap(inputs: MgArray[], axes: number[]): [MgArray[], number[]];
}

export const CustomTransforms: Primitive<CustomTransformsParams> = {
  name: "CustomTransforms",
  opName: () => "custom_function",
  outputSpecs: (inputs, p) =>
    inputs.slice(inputs.length - p.numOutputs).map((o) => ({ shape: [...o.shape], dtype: o.dtype })),
  // Each output is a view of its trailing input.
  layout(inputs, placements, _o, p) {
    const first = inputs.length - p.numOutputs;
    return placements.slice(first).map((l, i) => sameView(first + i, l));
  },
  shapeless: "infer",
};
