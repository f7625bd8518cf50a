// mg.depends: ordering without data flow. The outputs are views of the inputs produced by one node
// that also reads the dependencies, so evaluating an output first evaluates every dependency. The
// node is a CustomTransforms (the record behind customFunction: a multi-input view on every
// device) with identity rules.
import { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { makeNode } from "../graph.ts";
import { CustomTransforms, type CustomTransformsParams } from "../primitives/custom.ts";
import { zerosLike } from "./creation.ts";

function arrayList(x: unknown, what: string): MgArray[] {
  const list = Array.isArray(x) ? x : [x];
  return list.map((a, i) => {
    if (!(a instanceof MgArray)) {
      const got = a === null ? "null" : typeof a;
      throw new TypeError(`[depends] ${what} must be arrays, got ${got}${Array.isArray(x) ? ` at position ${i}` : ""}.`);
    }
    a.checkUsable("depends");
    return a;
  });
}

/**
 * Arrays equal to `inputs` whose evaluation first evaluates `dependencies`, as mx.depends: an
 * array in, an array out; a list in, a list out. The gradient passes to the inputs unchanged and
 * the dependencies receive none. jvp and vmap pass through as well (MLX has no rule for them).
 * @example
 * mg.depends(mg.array([1, 2]), mg.array([3]))
 */
export function depends(inputs: MgArray, dependencies: MgArray | readonly MgArray[]): MgArray;
export function depends(inputs: readonly MgArray[], dependencies: MgArray | readonly MgArray[]): MgArray[];
export function depends(inputs: MgArray | readonly MgArray[], dependencies: MgArray | readonly MgArray[]): MgArray | MgArray[] {
  const xs = arrayList(inputs, "inputs");
  const deps = arrayList(dependencies, "dependencies");
  if (xs.length === 0) throw new Error("[depends] Expected at least one input.");
  const outs = dependsFlat(xs, deps);
  return inputs instanceof MgArray ? outs[0]! : outs;
}

/**
 * The node's inputs are [...deps, ...xs, ...xs]. CustomTransforms forwards the trailing copy of
 * xs and hands its rules only the leading inputs, so xs appear there too: the jvp and vmap rules
 * need them.
 */
function dependsFlat(xs: MgArray[], deps: MgArray[]): MgArray[] {
  const nd = deps.length;
  const params: CustomTransformsParams = {
    numOutputs: xs.length,
    // The cotangents reach xs through the forwarded copy; nothing flows to the leading inputs.
    vjp: (primals) => primals.map((p) => zerosLike(p)),
    jvp: (primals, tangents, argnums) => {
      const byInput = new Map<number, MgArray>();
      argnums.forEach((a, k) => byInput.set(a, tangents[k]!));
      return xs.map((x, j) => byInput.get(nd + j) ?? zerosLike(primals[nd + j] ?? x));
    },
    vmap: (inputs, axes) => {
      const outs = dependsFlat(inputs.slice(nd), inputs.slice(0, nd));
      return [outs, axes.slice(nd)];
    },
  };
  return makeNode(CustomTransforms, [...deps, ...xs, ...xs], params, resolveStream());
}
