// Vectorizing map, as mx.vmap: trace the function once on placeholders shaped like one batch
// element, then rewrite the traced graph with each primitive's vmap rule so that it runs over the
// whole batch at once. A primitive without a vmap rule is an error naming it (no silent loop).
import { MgArray, Node } from "../core/array.ts";
import { libraryFunction, userCall } from "../core/ownership.ts";
import type { Dtype } from "../core/dtype.ts";
import { makeArray } from "../core/graph.ts";
import { missingRule, type Primitive } from "../core/primitive.ts";
import { formatShape, shapesEqual } from "../core/shape.ts";
import { broadcastTo, expandDims, moveaxis } from "../core/ops/shape.ts";
import { buildTape, onStream } from "./trace.ts";
// The rules every transform reads (attached to the records as this module loads).
import "../core/rules/index.ts";
import { describeLeaf, isPlainObject, type Transformable, treeFlatten, treeUnflatten } from "./tree.ts";

type AnyFn = (...args: unknown[]) => unknown;

interface PlaceholderParams {
  shape: number[];
  dtype: Dtype;
}

/** A traced batch element: it has no data, so evaluating anything that depends on it fails clearly. */
const VmapInput: Primitive<PlaceholderParams> = {
  name: "VmapInput",
  outputSpecs: (_i, p) => [{ shape: [...p.shape], dtype: p.dtype }],
  placeholder: () =>
    new Error(
      "[vmap] Attempting to eval an array during function transformations like vmap is not allowed " +
        "(the value depends on a vmapped input: item, tolist, eval and data are not available inside vmap).",
    ),
};

/** Axes spec: a number, null (not mapped) or a tree prefix of the arguments/outputs. */
export type AxesSpec = number | null | undefined | readonly AxesSpec[] | { readonly [key: string]: AxesSpec };

/** vmap's options (MLX's parameters by name). */
export interface VmapOptions {
  inAxes?: AxesSpec;
  outAxes?: AxesSpec;
}

/**
 * One axis per array of `tree`, from an axes prefix tree: a number or null applies to every array
 * below it. Negative axes count from the end (for outputs, of the batched result).
 */
function flattenAxes(tree: unknown, spec: unknown, output: boolean, what: string): number[] {
  const out: number[] = [];
  const walk = (t: unknown, s: unknown): void => {
    if (s === null || s === undefined || typeof s === "number") {
      for (const a of treeFlatten(t)) {
        if (s === null || s === undefined) {
          out.push(-1);
          continue;
        }
        if (!Number.isInteger(s)) throw new TypeError(`[vmap] ${what} must be integers or null, got ${s}.`);
        if (!output && a.ndim === 0) throw new Error("[vmap] Cannot vmap an input with zero dimensions.");
        const nd = a.ndim + (output ? 1 : 0);
        const ax = s < 0 ? s + nd : s;
        if (ax < 0 || ax >= nd) {
          throw new Error(
            `[vmap] Invalid${output ? " output " : " "}vectorization axis ${s} for array with shape ${formatShape(a.shape)}.`,
          );
        }
        out.push(ax);
      }
      return;
    }
    if (Array.isArray(s)) {
      if (!Array.isArray(t) || t.length !== s.length) {
        throw new Error(`[vmap] ${what} ${JSON.stringify(s)} do not match the structure of the ${output ? "outputs" : "arguments"}.`);
      }
      s.forEach((si, i) => walk(t[i], si));
      return;
    }
    if (isPlainObject(s)) {
      if (!isPlainObject(t)) {
        throw new Error(`[vmap] ${what} ${JSON.stringify(s)} do not match the structure of the ${output ? "outputs" : "arguments"}.`);
      }
      const keys = Object.keys(t);
      const sk = Object.keys(s);
      if (keys.length !== sk.length || !keys.every((k) => k in s)) {
        throw new Error(`[vmap] ${what} keys (${sk.join(", ")}) do not match the keys of the ${output ? "outputs" : "arguments"} (${keys.join(", ")}).`);
      }
      for (const k of keys) walk(t[k], s[k]);
      return;
    }
    throw new TypeError(`[vmap] ${what} must be a number, null, or a tree of those; got ${describeLeaf(s)}.`);
  };
  walk(tree, spec);
  return out;
}

/** Replaces the traced nodes by an error node and releases their inputs: the trace is garbage now. */
function releaseTrace(tape: readonly Node[]): void {
  for (const node of tape) {
    const inputs = node.inputs;
    node.inputs = [];
    for (const o of node.outputs) {
      if (o.node !== node) continue;
      const dead: Node = new Node(VmapInput, { shape: [...o.shape], dtype: o.dtype }, [], node.stream);
      dead.outputs = [o];
      o.node = dead;
    }
    for (const i of inputs) i.dropGraphRef();
  }
}

/**
 * The core of vmap on flat lists: `inAxes[i]` is the batch axis of `inputs[i]` (-1 unmapped).
 * `outAxesOf` gives the requested output axes once the outputs are known.
 */
export function vmapFlat(
  fn: (inputs: MgArray[]) => MgArray[],
  inputs: readonly MgArray[],
  inAxes: readonly number[],
  outAxesOf: (outputs: readonly MgArray[]) => number[],
): MgArray[] {
  if (inAxes.length !== inputs.length) {
    throw new Error(`[vmap] The number of in axes (${inAxes.length}) must match the number of inputs (${inputs.length}).`);
  }
  let size = -1;
  inputs.forEach((x, i) => {
    const ax = inAxes[i]!;
    if (ax < 0) return;
    if (x.ndim === 0) throw new Error("[vmap] Cannot vmap an input with zero dimensions.");
    if (ax >= x.ndim) throw new Error(`[vmap] Axis ${ax} invalid for input with ${x.ndim} dimensions.`);
    const n = x.shape[ax]!;
    if (size >= 0 && n !== size) throw new Error(`[vmap] Inconsistent axis sizes: ${n} and ${size}.`);
    size = n;
  });
  if (size < 0) throw new Error("[vmap] At least one of in_axes must be non-None.");

  // Trace on placeholders.
  const placeholders = inputs.map((x, i) => {
    const ax = inAxes[i]!;
    if (ax < 0) return x;
    const shape = x.shape.filter((_, k) => k !== ax);
    return makeArray(VmapInput, [], { shape, dtype: x.dtype }, x.stream);
  });
  const traced = fn(placeholders);
  const outAxes = outAxesOf(traced);
  if (outAxes.length !== traced.length) {
    throw new Error(`[vmap] The number of out axes (${outAxes.length}) must match the number of outputs (${traced.length}).`);
  }

  const batched = new Map<MgArray, [MgArray, number]>();
  const stop = new Set<MgArray>();
  const active = new Set<MgArray>();
  placeholders.forEach((p, i) => {
    if (inAxes[i]! < 0) return;
    batched.set(p, [inputs[i]!, inAxes[i]!]);
    stop.add(p);
    active.add(p);
  });
  const tape = buildTape(traced, { stop, active, differentiate: false });

  try {
    for (const node of tape) {
      const rule = node.primitive.vmap;
      if (!rule) throw missingRule(node.primitive, "vmap");
      const vin: MgArray[] = [];
      const vax: number[] = [];
      for (const x of node.inputs) {
        const b = batched.get(x);
        vin.push(b ? b[0] : x);
        vax.push(b ? b[1] : -1);
      }
      const [vout, vaxOut] = onStream(node.stream, () => rule.call(node.primitive, vin, vax, node.params));
      if (vout.length !== node.outputs.length || vaxOut.length !== node.outputs.length) {
        throw new Error(
          `[vmap] ${node.primitive.name} returned ${vout.length} outputs for ${node.outputs.length} (internal error in its vmap rule).`,
        );
      }
      node.outputs.forEach((o, j) => {
        const v = vout[j]!;
        const ax = vaxOut[j]!;
        const expected = ax < 0 ? [...o.shape] : [...o.shape.slice(0, ax), size, ...o.shape.slice(ax)];
        if (!shapesEqual(v.shape, expected) || v.dtype !== o.dtype) {
          throw new Error(
            `[vmap] ${node.primitive.name} returned ${formatShape(v.shape)} ${v.dtype.name} with batch axis ${ax} for an ` +
              `output of ${formatShape(o.shape)} ${o.dtype.name} (internal error in its vmap rule).`,
          );
        }
        batched.set(o, [v, ax]);
      });
    }

    return traced.map((o, i) => {
      const want = outAxes[i]!;
      const b = batched.get(o);
      if (b && b[1] >= 0) {
        const [v, ax] = b;
        if (want < 0) {
          throw new Error(`[vmap] out_axes is null for output ${i}, but it depends on a vmapped input.`);
        }
        return ax === want ? v : moveaxis(v, ax, want);
      }
      // The output does not depend on the mapped inputs: repeat it along the batch axis.
      const v = b ? b[0] : o;
      if (want < 0) return v;
      const e = expandDims(v, want);
      const shape = [...e.shape];
      shape[want] = size;
      return broadcastTo(e, shape);
    });
  } finally {
    releaseTrace(tape);
  }
}

/**
 * Returns a vectorized version of `fn`, as mx.vmap. `inAxes` (default 0) gives the mapped axis of
 * each argument — a number, null (not mapped) or a tree prefix of the arguments; `outAxes`
 * (default 0) likewise for the outputs. Arguments and outputs are arrays or trees of arrays.
 * @example
 * mg.vmap((x: mg.MgArray) => mg.sum(x))(mg.array([[1, 2], [3, 4]]))
 */
export function vmap<F extends Transformable>(fun: F, inAxes?: AxesSpec, outAxes?: AxesSpec): F;
export function vmap<F extends Transformable>(fun: F, options: VmapOptions): F;
export function vmap<F extends Transformable>(fun: F, inAxes: AxesSpec, options: Pick<VmapOptions, "outAxes">): F;
export function vmap<F extends Transformable>(fun: F, inAxes: AxesSpec | VmapOptions = 0, outAxes: AxesSpec | VmapOptions = 0): F {
  if (typeof fun !== "function") throw new TypeError("[vmap] fun must be a function.");
  const vfn = (...args: unknown[]): unknown => {
    const inputs = treeFlatten(args, true, "vmap");
    // A single argument is matched against the axes directly (mx.vmap(f, in_axes=1)(x)).
    let inTree: unknown = args.length === 1 ? args[0] : args;
    let inSpec: unknown = inAxes;
    if (args.length === 1 && Array.isArray(inAxes) && inAxes.length === 1 && !Array.isArray(args[0])) {
      inSpec = inAxes[0];
    }
    if (args.length === 1 && !Array.isArray(args[0]) && !isPlainObject(args[0]) && typeof inSpec === "object" && inSpec !== null) {
      inTree = args;
    }
    const flatIn = flattenAxes(inTree, inSpec, false, "in_axes");
    let outTree: unknown;
    const outs = vmapFlat(
      (xs) => {
        outTree = userCall(() => (fun as unknown as AnyFn)(...(treeUnflatten(args, xs) as unknown[])));
        if (outTree instanceof MgArray) return [outTree];
        return treeFlatten(outTree, true, "vmap");
      },
      inputs,
      flatIn,
      () => flattenAxes(outTree, outAxes, true, "out_axes"),
    );
    return treeUnflatten(outTree, outs);
  };
  return libraryFunction(vfn) as unknown as F;
}
