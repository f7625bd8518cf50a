// Trees of arrays, as MLX's pytrees: nested JS arrays (lists/tuples) and plain objects (dicts)
// whose leaves are arrays or other values. Transforms flatten arguments and results to a list of
// arrays, run, and rebuild the same structure around the transformed arrays.
import { MgArray } from "../core/array.ts";

/** Any function a transform accepts; transforms carry its parameter and result types through. */
export type Transformable = (...args: never[]) => unknown;

/** A tree: an array, a JS array of trees, a plain object of trees, or any other leaf value. */
export type Tree = MgArray | readonly Tree[] | { readonly [key: string]: Tree } | unknown;

/** True for `{...}` literals and `Object.create(null)`: the only objects walked into. */
export function isPlainObject(x: unknown): x is Record<string, unknown> {
  if (x === null || typeof x !== "object" || x instanceof MgArray || Array.isArray(x)) return false;
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

/**
 * The arrays of a tree in order (JS arrays by index, objects by key order). With `strict`, any
 * leaf that is not an array is an error (the arguments we differentiate must be all arrays).
 */
export function treeFlatten(tree: unknown, strict = false, op = "tree_flatten"): MgArray[] {
  const out: MgArray[] = [];
  const walk = (x: unknown): void => {
    if (x instanceof MgArray) out.push(x);
    else if (Array.isArray(x)) x.forEach(walk);
    else if (isPlainObject(x)) Object.values(x).forEach(walk);
    else if (strict) {
      throw new TypeError(`[${op}] The argument should contain only arrays, but it contains ${describeLeaf(x)}.`);
    }
  };
  walk(tree);
  return out;
}

/** Rebuilds `tree` with its arrays replaced, in order, by `arrays[start…]`. */
export function treeUnflatten(tree: unknown, arrays: readonly unknown[], start = 0): unknown {
  let i = start;
  const build = (x: unknown): unknown => {
    if (x instanceof MgArray) {
      if (i >= arrays.length) throw new Error("[tree_unflatten] Not enough arrays to fill the tree (internal error).");
      return arrays[i++];
    }
    if (Array.isArray(x)) return x.map(build);
    if (isPlainObject(x)) {
      const o: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(x)) o[k] = build(v);
      return o;
    }
    return x;
  };
  return build(tree);
}

/** A short description of a non-array leaf for error messages. */
export function describeLeaf(x: unknown): string {
  if (x === null) return "null";
  if (x === undefined) return "undefined";
  if (typeof x === "object") return x.constructor?.name ?? "object";
  if (typeof x === "bigint") return `bigint ${x}`;
  if (typeof x === "symbol" || typeof x === "function") return typeof x;
  return `${typeof x} ${JSON.stringify(x)}`;
}
