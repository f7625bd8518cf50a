// customFunction and checkpoint, as mx.custom_function and mx.checkpoint. A custom function is
// one node (CustomTransforms, ts/core/primitives/custom.ts) whose inputs are the function's
// arguments followed by its outputs (behind stop_gradient): evaluating it forwards the outputs,
// and the transforms call the attached vjp/jvp/vmap instead of looking inside. It is pure:
// captured arrays are constants.
import { MgArray } from "../core/array.ts";
import { libraryFunction, userFunction } from "../core/ownership.ts";
import { formatShape, shapesEqual } from "../core/shape.ts";
import { resolveStream } from "../core/device.ts";
import { makeNode } from "../core/graph.ts";
import { CustomTransforms, type CustomTransformsParams } from "../core/primitives/custom.ts";
import { stopGradient } from "../core/ops/elementwise.ts";
import { zerosLike } from "../core/ops/creation.ts";
import { jvpFlat } from "./jvp.ts";
import { describeLeaf, isPlainObject, treeFlatten, treeUnflatten } from "./tree.ts";
import { flattenOutputs, vjpFlat } from "./vjp.ts";
import { vmapFlat } from "./vmap.ts";

type AnyFn = (...args: any[]) => any;
/** vjp(primals, cotangents, outputs) → cotangents shaped like primals (null: no gradient). */
export type CustomVjp = (primals: any, cotangents: any, outputs: any) => unknown;
/** jvp(primals, tangents) → tangents shaped like the outputs; a tangent is null for a constant input. */
export type CustomJvp = (primals: any, tangents: any) => unknown;
/** vmap(inputs, axes) → [outputs, outAxes]; an axis is null for an unmapped input or output. */
export type CustomVmap = (inputs: any, axes: any) => [unknown, unknown];

export interface CustomFunction<F extends AnyFn> {
  (...args: Parameters<F>): ReturnType<F>;
  /** Attaches a custom vjp; returns this function (chainable). */
  vjp(f: CustomVjp): CustomFunction<F>;
  /** Attaches a custom jvp; returns this function (chainable). */
  jvp(f: CustomJvp): CustomFunction<F>;
  /** Attaches a custom vectorization rule; returns this function (chainable). */
  vmap(f: CustomVmap): CustomFunction<F>;
}

/** Flattens a user result that should hold one array (or null) per array of `like`. */
function flattenMatching(result: unknown, like: readonly MgArray[], what: string, fill: (i: number) => MgArray): MgArray[] {
  const out: (MgArray | null)[] = [];
  const walk = (x: unknown): void => {
    if (x instanceof MgArray || x === null || x === undefined) out.push((x as MgArray | null | undefined) ?? null);
    else if (Array.isArray(x)) x.forEach(walk);
    else if (isPlainObject(x)) Object.values(x).forEach(walk);
    else throw new TypeError(`[custom_function] The ${what} must contain only arrays or null, but it contains ${describeLeaf(x)}.`);
  };
  walk(result);
  if (out.length !== like.length) {
    throw new Error(`[custom_function] The ${what} has ${out.length} arrays but ${like.length} were expected.`);
  }
  out.forEach((x, i) => {
    const want = like[i]!;
    if (x && !shapesEqual(x.shape, want.shape)) {
      const of = what.startsWith("vjp") ? "primal" : "output";
      throw new Error(`[custom_function] The ${what}'s array ${i} has shape ${formatShape(x.shape)} but its ${of} has shape ${formatShape(want.shape)}.`);
    }
  });
  return out.map((x, i) => x ?? fill(i));
}

interface UserRules {
  vjp: CustomVjp | null;
  jvp: CustomJvp | null;
  vmap: CustomVmap | null;
}

/**
 * Calls `fn` and wraps its outputs in one CustomTransforms node whose rules are the user's where
 * given, else the transforms of `fn` itself, re-traced from the primals (what checkpoint wants:
 * the backward pass recomputes the forward one instead of keeping its intermediates).
 */
function callWithRules(fn: AnyFn, args: unknown[], rules: UserRules, tag: string): unknown {
  const inputs = treeFlatten(args);
  let outTree: unknown;
  const inner = (arrays: MgArray[]): MgArray[] => {
    const out = fn(...(treeUnflatten(args, arrays) as unknown[]));
    outTree = out;
    return flattenOutputs(out, tag);
  };
  const userArgs = (arrays: readonly unknown[]): unknown => {
    const rebuilt = treeUnflatten(args, arrays) as unknown[];
    return rebuilt.length === 1 ? rebuilt[0] : rebuilt;
  };
  const fullTangents = (primals: MgArray[], tangents: MgArray[], argnums: number[]): (MgArray | null)[] => {
    const full: (MgArray | null)[] = primals.map(() => null);
    argnums.forEach((a, k) => (full[a] = tangents[k]!));
    return full;
  };
  const outputs = inner(inputs).map((o) => stopGradient(o));
  const structure = outTree;
  if (outputs.length === 0) return structure;
  const { vjp, jvp, vmap } = rules;

  const params: CustomTransformsParams = {
    numOutputs: outputs.length,
    vjp: vjp
      ? (primals, cotangents, outs) => {
          const r = vjp(userArgs(primals), treeUnflatten(structure, cotangents), treeUnflatten(structure, outs));
          return flattenMatching(r, primals, "vjp result", (i) => zerosLike(primals[i]!));
        }
      : (primals, cotangents) => vjpFlat(inner, primals, cotangents, primals.map((_, i) => i), { tag, skipStopGradientOutputs: false }).vjps,
    jvp: jvp
      ? (primals, tangents, argnums) => {
          const r = jvp(userArgs(primals), userArgs(fullTangents(primals, tangents, argnums)));
          return flattenMatching(r, outputs, "jvp result", (i) => zerosLike(outputs[i]!));
        }
      : (primals, tangents, argnums) => jvpFlat(inner, primals, fullTangents(primals, tangents, argnums), tag).jvps,
    vmap: vmap
      ? (xs, axes) => {
          const r = vmap(userArgs(xs), userArgs(axes.map((a) => (a < 0 ? null : a)) as unknown as MgArray[]));
          if (!Array.isArray(r) || r.length !== 2) {
            throw new TypeError("[custom_function] The vmap function should return a list [outputs, outAxes].");
          }
          const vouts = flattenOutputs(r[0], tag);
          return [vouts, flattenAxesLike(r[1], vouts.length)];
        }
      : (xs, axes) => {
          const outs = vmapFlat(inner, xs, axes, (o) => o.map(() => 0));
          return [outs, outs.map(() => 0)];
        },
  };
  const nodeOutputs = makeNode(CustomTransforms, [...inputs, ...outputs], params, outputs[0]?.stream ?? resolveStream());
  return treeUnflatten(structure, nodeOutputs);
}

/**
 * Wraps `fn` so that its vjp, jvp and vmap can be replaced, as mx.custom_function. Attach them
 * with `.vjp(...)`, `.jvp(...)`, `.vmap(...)`; those not attached fall back to transforming `fn`.
 * Arguments and results may be trees; the custom rules see them with the same structure (a
 * single argument as itself, several as a list).
 */
export function customFunction<F extends AnyFn>(fn: F): CustomFunction<F> {
  if (typeof fn !== "function") throw new TypeError("[custom_function] expected a function.");
  const rules: UserRules = { vjp: null, jvp: null, vmap: null };
  const userFn = userFunction(fn);
  const call = libraryFunction((...args: unknown[]): unknown =>
    rules.vjp || rules.jvp || rules.vmap ? callWithRules(userFn, args, { ...rules }, "custom_function") : userFn(...args));

  const f = call as unknown as CustomFunction<F>;
  f.vjp = (g: CustomVjp) => {
    if (typeof g !== "function") throw new TypeError("[custom_function] vjp expects a function.");
    rules.vjp = userFunction(g);
    return f;
  };
  f.jvp = (g: CustomJvp) => {
    if (typeof g !== "function") throw new TypeError("[custom_function] jvp expects a function.");
    rules.jvp = userFunction(g);
    return f;
  };
  f.vmap = (g: CustomVmap) => {
    if (typeof g !== "function") throw new TypeError("[custom_function] vmap expects a function.");
    rules.vmap = userFunction(g);
    return f;
  };
  return f;
}

/** Output axes returned by a custom vmap: a number/null per output, possibly nested like them. */
function flattenAxesLike(spec: unknown, count: number): number[] {
  const out: number[] = [];
  const walk = (x: unknown): void => {
    if (x === null || x === undefined) out.push(-1);
    else if (typeof x === "number" && Number.isInteger(x)) out.push(x);
    else if (Array.isArray(x)) x.forEach(walk);
    else if (isPlainObject(x)) Object.values(x).forEach(walk);
    else throw new TypeError(`[custom_function] vmap output axes must be integers or null, got ${describeLeaf(x)}.`);
  };
  walk(spec);
  if (out.length === 1 && count > 1) return new Array<number>(count).fill(out[0]!);
  if (out.length !== count) {
    throw new Error(`[custom_function] The vmap function returned ${out.length} output axes for ${count} outputs.`);
  }
  return out;
}

/**
 * Returns `fn` with its intermediates recomputed in the backward pass instead of kept from the
 * forward pass, as mx.checkpoint: trading compute for memory.
 */
export function checkpoint<F extends AnyFn>(fn: F): F {
  if (typeof fn !== "function") throw new TypeError("[checkpoint] expected a function.");
  const noRules: UserRules = { vjp: null, jvp: null, vmap: null };
  const userFn = userFunction(fn);
  return libraryFunction((...args: unknown[]) => callWithRules(userFn, args, noRules, "checkpoint")) as unknown as F;
}
