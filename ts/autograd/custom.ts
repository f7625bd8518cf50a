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
import { describeLeaf, isPlainObject, type Transformable, treeFlatten, treeUnflatten } from "./tree.ts";
import { flattenOutputs, vjpFlat } from "./vjp.ts";
import { vmapFlat } from "./vmap.ts";

type AnyFn = (...args: unknown[]) => unknown;

/** What a custom rule sees of the arguments: a single argument as itself, several as a list. */
export type CustomPrimals<F extends Transformable> = Parameters<F> extends [infer A] ? A : Parameters<F>;
/** Arrays or null (no gradient / a constant), in any tree: what custom rules return. */
export type CustomRuleResult = MgArray | null | undefined | readonly CustomRuleResult[] | { readonly [key: string]: CustomRuleResult };
/** A tree like `T` whose arrays may be null (a tangent of a constant input, an unmapped axis). */
export type OrNull<T, Leaf = MgArray | null> = T extends MgArray ? Leaf
  : T extends readonly unknown[] ? { [K in keyof T]: OrNull<T[K], Leaf> }
  : T extends object ? { [K in keyof T]: OrNull<T[K], Leaf> }
  : T;
// The rules are declared as methods so that a rule may name narrower parameter types (`axis:
// number` where the machinery may pass null for an unmapped input it never has): methods compare
// parameters bivariantly.
interface Rules<F extends Transformable> {
  vjp(primals: CustomPrimals<F>, cotangents: ReturnType<F>, outputs: ReturnType<F>): CustomRuleResult;
  jvp(primals: CustomPrimals<F>, tangents: OrNull<CustomPrimals<F>>): CustomRuleResult;
  vmap(inputs: CustomPrimals<F>, axes: OrNull<CustomPrimals<F>, number | null>): [ReturnType<F>, unknown];
}
/** vjp(primals, cotangents, outputs) → cotangents shaped like primals (null: no gradient). */
export type CustomVjp<F extends Transformable = Transformable> = Rules<F>["vjp"];
/** jvp(primals, tangents) → tangents shaped like the outputs; a tangent is null for a constant input. */
export type CustomJvp<F extends Transformable = Transformable> = Rules<F>["jvp"];
/** vmap(inputs, axes) → [outputs, outAxes]; an axis is null for an unmapped input or output. */
export type CustomVmap<F extends Transformable = Transformable> = Rules<F>["vmap"];

/** What customFunction returns: the function, with .vjp, .jvp and .vmap to attach rules. */
export interface CustomFunction<F extends Transformable> {
  (...args: Parameters<F>): ReturnType<F>;
  /** Attaches a custom vjp; returns this function (chainable). */
  vjp(f: CustomVjp<F>): CustomFunction<F>;
  /** Attaches a custom jvp; returns this function (chainable). */
  jvp(f: CustomJvp<F>): CustomFunction<F>;
  /** Attaches a custom vectorization rule; returns this function (chainable). */
  vmap(f: CustomVmap<F>): CustomFunction<F>;
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

// The rules as the machinery calls them (trees of arrays in, trees out).
interface UserRules {
  vjp: ((primals: unknown, cotangents: unknown, outputs: unknown) => unknown) | null;
  jvp: ((primals: unknown, tangents: unknown) => unknown) | null;
  vmap: ((inputs: unknown, axes: unknown) => unknown) | null;
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
 * @example
 * const f = mg.customFunction((x: mg.MgArray) => mg.exp(x)).vjp((_x, g) => mg.multiply(g, 2));
 * mg.grad((x: mg.MgArray) => mg.sum(f(x)))(mg.array([0, 1], mg.float32))
 */
export function customFunction<F extends Transformable>(fun: F): CustomFunction<F> {
  if (typeof fun !== "function") throw new TypeError("[custom_function] expected a function.");
  const rules: UserRules = { vjp: null, jvp: null, vmap: null };
  const userFn = userFunction(fun as unknown as AnyFn);
  const call = libraryFunction((...args: unknown[]): unknown =>
    rules.vjp || rules.jvp || rules.vmap ? callWithRules(userFn, args, { ...rules }, "custom_function") : userFn(...args));

  const f = call as unknown as CustomFunction<F>;
  f.vjp = (g: CustomVjp<F>) => {
    if (typeof g !== "function") throw new TypeError("[custom_function] vjp expects a function.");
    rules.vjp = userFunction(g as unknown as NonNullable<UserRules["vjp"]>);
    return f;
  };
  f.jvp = (g: CustomJvp<F>) => {
    if (typeof g !== "function") throw new TypeError("[custom_function] jvp expects a function.");
    rules.jvp = userFunction(g as unknown as NonNullable<UserRules["jvp"]>);
    return f;
  };
  f.vmap = (g: CustomVmap<F>) => {
    if (typeof g !== "function") throw new TypeError("[custom_function] vmap expects a function.");
    rules.vmap = userFunction(g as unknown as NonNullable<UserRules["vmap"]>);
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
 * @example
 * mg.grad(mg.checkpoint((x: mg.MgArray) => mg.sum(mg.square(mg.sin(x)))))(mg.array([1], mg.float32))
 */
export function checkpoint<F extends Transformable>(fun: F): F {
  if (typeof fun !== "function") throw new TypeError("[checkpoint] expected a function.");
  const noRules: UserRules = { vjp: null, jvp: null, vmap: null };
  const userFn = userFunction(fun as unknown as AnyFn);
  return libraryFunction((...args: unknown[]) => callWithRules(userFn, args, noRules, "checkpoint")) as unknown as F;
}
