// mg.utils trees, as mlx.utils: a tree is nested JS arrays (Python's lists and tuples) and plain
// objects (dicts); anything else is a leaf. Flat forms use MLX's dotted keys ("layers.0.weight"),
// so a flattened model is exactly the name → array list of an MLX checkpoint. Modules are dicts
// in MLX; here any object with a [TREE_NODE]() method (mg.nn.Module) is walked as a dict.
import { isOptionsObject } from "../core/ops/convert.ts";
import { isPlainObject } from "../autograd/tree.ts";
import { checkOptionNames } from "../core/options.ts";

/** Objects that trees walk into as dicts: the method returns their [key, child] entries. */
export const TREE_NODE: unique symbol = Symbol.for("metalgrad.treeNode");
/**
 * An object trees walk into as a dict (mg.nn.Module is one): its [TREE_NODE]() gives its entries.
 */
export interface TreeNode {
  [TREE_NODE](): [string, unknown][];
}

/**
 * Decides what a tree walk treats as a leaf.
 */
export type IsLeaf = ((x: unknown) => boolean) | null | undefined;
/** A flattened tree: [dotted key, leaf] pairs. */
export type FlatTree<L = unknown> = [string, L][];

/** A tree: a leaf, a list of trees or a plain object of trees (MLX's lists, tuples and dicts). */
export type Tree<L = unknown> = L | readonly Tree<L>[] | { readonly [key: string]: Tree<L> };
/** The dict or list form of a tree (what Module.update and Optimizer.update take). */
export type NestedTree<L = unknown> = { readonly [key: string]: Tree<L> } | readonly Tree<L>[];

/** The leaf types of a tree type: what its lists and plain objects hold at the bottom (an absent
 *  optional entry is no leaf). */
export type LeafOf<T> = T extends readonly (infer E)[] ? LeafOf<E>
  : T extends TreeNode ? unknown
  : T extends { readonly [key: string]: unknown } ? (T extends Function ? T : { [K in keyof T]-?: LeafOf<Exclude<T[K], undefined>> }[keyof T])
  : T;
/** The leaf type a callback over the tree's leaves takes (any, as `never`, where the tree's leaves are not typed). */
export type LeafParam<T> = unknown extends LeafOf<T> ? never : LeafOf<T>;
/** `T` with every leaf replaced by `R` (treeMap's result). */
export type MapLeaves<T, R> = unknown extends T ? unknown
  : T extends readonly unknown[] ? { -readonly [K in keyof T]: MapLeaves<T[K], R> }
  : T extends TreeNode ? { [key: string]: Tree<R> }
  : T extends Function ? R
  : T extends { readonly [key: string]: unknown } ? { -readonly [K in keyof T]: MapLeaves<T[K], R> }
  : R;

function isTreeNode(x: unknown): x is TreeNode {
  return x !== null && typeof x === "object" && typeof (x as Partial<TreeNode>)[TREE_NODE] === "function";
}

/** The entries of a dict-like node (a plain object or a tree node), or null for other values. */
export function dictEntries(x: unknown): [string, unknown][] | null {
  if (isPlainObject(x)) return Object.entries(x);
  if (isTreeNode(x)) return x[TREE_NODE]();
  return null;
}

function child(tree: unknown, key: string | number, op: string): unknown {
  if (tree === null || typeof tree !== "object") {
    throw new TypeError(`[${op}] the extra trees must have the structure of the first one; found a leaf where '${key}' was expected.`);
  }
  return (tree as Record<string | number, unknown>)[key];
}

/** Splits a trailing options object that holds only the given option names off `rest`. */
function splitTrailing(rest: unknown[], names: readonly string[]): [unknown[], Record<string, unknown>] {
  const last = rest[rest.length - 1];
  if (isOptionsObject(last)) {
    const keys = Object.keys(last);
    if (keys.length > 0 && keys.every((k) => names.includes(k))) return [rest.slice(0, -1), last];
  }
  return [rest, {}];
}

/**
 * Applies `fn` to the leaves of `tree` and returns a tree of the results, as mlx.utils.tree_map.
 * Extra trees (`rest`) have at least `tree`'s structure; their leaves at the same places are passed
 * as extra arguments. A trailing `{ isLeaf }` says what counts as a leaf (an object with only
 * that key is read as the options, never as an extra tree).
 * @example
 * mg.utils.treeMap((x: number) => x * 10, { a: [1, 2], b: 3 })
 */
export function treeMap<T, R>(fn: (leaf: NoInfer<LeafParam<T>>, ...others: never[]) => R, tree: T, ...rest: unknown[]): MapLeaves<T, R>;
export function treeMap(fn: (...leaves: never[]) => unknown, tree: unknown, ...rest: unknown[]): unknown {
  checkFunction(fn, "tree_map");
  const apply = fn as (...leaves: unknown[]) => unknown;
  const [trees, options] = splitTrailing(rest, ["isLeaf"]);
  const isLeaf = options.isLeaf as IsLeaf;
  const walk = acyclic("tree_map", (t: unknown, others: unknown[]): unknown => {
    if (isLeaf && isLeaf(t)) return apply(t, ...others);
    if (Array.isArray(t)) return t.map((c, i) => walk(c, others.map((r) => child(r, i, "tree_map"))));
    const entries = dictEntries(t);
    if (entries) {
      const out: Record<string, unknown> = {};
      for (const [k, c] of entries) out[k] = walk(c, others.map((r) => child(r, k, "tree_map")));
      return out;
    }
    return apply(t, ...others);
  });
  return walk(tree, trees);
}

/**
 * treeMap whose `fn` also receives each leaf's dotted path first, as
 * mlx.utils.tree_map_with_path. Options: `{ isLeaf, path }` (`path` prefixes every path).
 * @example
 * mg.utils.treeMapWithPath((path: string) => path, { a: [1, 2] })
 */
export function treeMapWithPath<T, R>(fn: (path: string, leaf: NoInfer<LeafParam<T>>, ...others: never[]) => R, tree: T, ...rest: unknown[]): MapLeaves<T, R>;
export function treeMapWithPath(fn: (path: string, ...leaves: never[]) => unknown, tree: unknown, ...rest: unknown[]): unknown {
  checkFunction(fn, "tree_map_with_path");
  const apply = fn as (path: string, ...leaves: unknown[]) => unknown;
  const [trees, options] = splitTrailing(rest, ["isLeaf", "path"]);
  const isLeaf = options.isLeaf as IsLeaf;
  const walk = acyclic("tree_map_with_path", (t: unknown, others: unknown[], path: string | undefined): unknown => {
    if (isLeaf && isLeaf(t)) return apply(path as string, t, ...others);
    const prefix = path ? `${path}.` : "";
    if (Array.isArray(t)) {
      return t.map((c, i) => walk(c, others.map((r) => child(r, i, "tree_map_with_path")), `${prefix}${i}`));
    }
    const entries = dictEntries(t);
    if (entries) {
      const out: Record<string, unknown> = {};
      for (const [k, c] of entries) out[k] = walk(c, others.map((r) => child(r, k, "tree_map_with_path")), `${prefix}${k}`);
      return out;
    }
    return apply(path as string, t, ...others);
  });
  return walk(tree, trees, options.path as string | undefined);
}

/**
 * treeFlatten's options: prefix, isLeaf, destination.
 */
export interface TreeFlattenOptions {
  prefix?: string;
  isLeaf?: IsLeaf;
  destination?: FlatTree | Record<string, unknown> | null;
}

/**
 * Flattens a tree to [dottedKey, leaf] pairs, as mlx.utils.tree_flatten(tree, prefix="",
 * is_leaf=None, destination=None). As in MLX the first character of `prefix` is dropped (pass
 * ".name" to prefix keys with "name."). With a plain-object `destination` the pairs are written
 * into it as keys and the object is returned.
 * @example
 * mg.utils.treeFlatten({ a: [1, 2], b: { c: 3 } })
 */
export function treeFlatten<T>(tree: T, prefix?: string | TreeFlattenOptions, isLeaf?: IsLeaf, destination?: FlatTree | null): FlatTree<LeafOf<T>>;
export function treeFlatten<T>(tree: T, prefix: string, isLeaf: IsLeaf, destination: Record<string, unknown>): Record<string, LeafOf<T>>;
export function treeFlatten(tree: unknown, ...rest: unknown[]): FlatTree | Record<string, unknown> {
  let opts: TreeFlattenOptions = {};
  // A plain object is an options object except in the destination position (the 4th argument).
  if (rest.length >= 1 && rest.length <= 2 && isOptionsObject(rest[rest.length - 1])) {
    opts = rest.pop() as TreeFlattenOptions;
    checkOptionNames("tree_flatten", opts, ["prefix", "isLeaf", "destination"]);
  }
  if (rest.length > 3) throw new TypeError(`[tree_flatten] takes at most 4 arguments, got ${rest.length + 1}.`);
  const prefix = (rest[0] as string | undefined) ?? opts.prefix ?? "";
  const isLeaf = (rest[1] as IsLeaf) ?? opts.isLeaf ?? null;
  const destination = (rest[2] as FlatTree | Record<string, unknown> | null | undefined) ?? opts.destination ?? [];
  if (typeof prefix !== "string") throw new TypeError("[tree_flatten] prefix must be a string.");
  if (isLeaf !== null) checkFunction(isLeaf, "tree_flatten", "isLeaf");
  let add: (key: string, value: unknown) => void;
  if (Array.isArray(destination)) add = (k, v) => void destination.push([k, v]);
  else if (isOptionsObject(destination)) add = (k, v) => void ((destination as Record<string, unknown>)[k] = v);
  else throw new TypeError("[tree_flatten] Destination should be either a list or a dictionary or None");
  const walk = acyclic("tree_flatten", (t: unknown, p: string): void => {
    if (isLeaf && isLeaf(t)) return add(p.slice(1), t);
    if (Array.isArray(t)) return t.forEach((c, i) => walk(c, `${p}.${i}`));
    const entries = dictEntries(t);
    if (entries) return entries.forEach(([k, c]) => walk(c, `${p}.${k}`));
    add(p.slice(1), t);
  });
  walk(tree, prefix);
  return destination;
}

/**
 * Rebuilds a tree from its flat form ([key, value] pairs or a {key: value} object), as
 * mlx.utils.tree_unflatten: a level whose keys are all integers becomes a list (gaps filled with
 * empty objects), any other level an object.
 * @example
 * mg.utils.treeUnflatten([["a.0", 1], ["a.1", 2], ["b", 3]])
 */
export function treeUnflatten<L>(tree: FlatTree<L> | Record<string, L>): Tree<L> {
  if (tree === null || typeof tree !== "object") throw new TypeError(`[tree_unflatten] expected a list of [key, value] pairs or an object, got ${String(tree)}.`);
  const items: [string, unknown][] = Array.isArray(tree) ? tree : Object.entries(tree);
  for (const item of items) {
    if (!Array.isArray(item) || item.length !== 2 || typeof item[0] !== "string") {
      throw new TypeError("[tree_unflatten] expected [key, value] pairs with string keys.");
    }
  }
  if (items.length === 1 && items[0]![0] === "") return items[0]![1] as Tree<L>;
  const children = new Map<string, [string, unknown][]>();
  for (const [key, value] of items) {
    const dot = key.indexOf(".");
    const head = dot < 0 ? key : key.slice(0, dot);
    const tail = dot < 0 ? "" : key.slice(dot + 1);
    let list = children.get(head);
    if (!list) children.set(head, (list = []));
    list.push([tail, value]);
  }
  // A list when every key is an integer, and no two spell the same integer ("01" and "1").
  const indices = new Map<number, string>();
  let isList = true;
  for (const k of children.keys()) {
    if (!/^\s*[+-]?\d+\s*$/.test(k)) {
      isList = false;
      break;
    }
    indices.set(Number.parseInt(k, 10), k);
  }
  if (isList && indices.size === children.size) {
    const out: unknown[] = [];
    for (const [i, k] of [...indices.entries()].sort((a, b) => a[0] - b[0])) {
      while (out.length < i) out.push({});
      out.push(treeUnflatten(children.get(k)!));
    }
    return out as Tree<L>;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of children) out[k] = treeUnflatten(v);
  return out as Tree<L>;
}

/**
 * Reduces the leaves of a tree with `fn(accumulator, leaf)`, as mlx.utils.tree_reduce(fn, tree,
 * initializer=None, is_leaf=None): without an initializer the first leaf starts the reduction.
 * @example
 * mg.utils.treeReduce((acc: number, x: number) => acc + x, { a: [1, 2], b: 3 }, 0)
 */
export function treeReduce<T, A>(fn: (acc: A, leaf: NoInfer<LeafParam<T>>) => A, tree: T, initializer?: A, isLeaf?: IsLeaf): A;
export function treeReduce(fn: (acc: never, leaf: never) => unknown, tree: unknown, initializer?: unknown, isLeaf?: IsLeaf): unknown {
  checkFunction(fn, "tree_reduce");
  if (isLeaf != null) checkFunction(isLeaf, "tree_reduce", "isLeaf");
  const reduce = fn as (acc: unknown, leaf: unknown) => unknown;
  const walk = acyclic("tree_reduce", (t: unknown, acc: unknown): unknown => {
    if (isLeaf && isLeaf(t)) return acc == null ? t : reduce(acc, t);
    if (Array.isArray(t)) {
      for (const c of t) acc = walk(c, acc);
      return acc;
    }
    const entries = dictEntries(t);
    if (entries) {
      for (const [, c] of entries) acc = walk(c, acc);
      return acc;
    }
    return acc == null ? t : reduce(acc, t);
  });
  return walk(tree, initializer ?? null);
}

function isEmptyContainer(x: unknown): boolean {
  if (Array.isArray(x)) return x.length === 0;
  const entries = dictEntries(x);
  return entries !== null && entries.length === 0;
}

/**
 * Merges two trees holding values at different places, as mlx.utils.tree_merge (a deep update):
 * empty containers are empty subtrees; leaves present in both need `mergeFn`.
 * @example
 * mg.utils.treeMerge({ a: 1 }, { b: 2 })
 */
export function treeMerge<A, B>(treeA: A, treeB: B, mergeFn?: ((a: NoInfer<LeafParam<A>>, b: NoInfer<LeafParam<B>>) => unknown) | null): Tree<LeafOf<A> | LeafOf<B>>;
export function treeMerge(treeA: unknown, treeB: unknown, mergeFn?: ((a: never, b: never) => unknown) | null): unknown {
  if (mergeFn != null) checkFunction(mergeFn, "tree_merge", "mergeFn");
  const emptyA = isEmptyContainer(treeA);
  const emptyB = isEmptyContainer(treeB);
  if (emptyA && emptyB) {
    if (Array.isArray(treeA) !== Array.isArray(treeB)) throw new TypeError("[tree_merge] Cannot merge a list with a dict.");
    return Array.isArray(treeA) ? [] : {};
  }
  const a = emptyA ? null : treeA;
  const b = emptyB ? null : treeB;
  if (a == null && b != null) return b;
  if (a != null && b == null) return a;
  if (Array.isArray(a) && Array.isArray(b)) {
    const n = Math.max(a.length, b.length);
    return Array.from({ length: n }, (_, i) => treeMerge(a[i] ?? null, b[i] ?? null, mergeFn));
  }
  const ea = dictEntries(a);
  const eb = dictEntries(b);
  if (ea && eb) {
    const ma = new Map(ea);
    const mb = new Map(eb);
    const out: Record<string, unknown> = {};
    for (const k of new Set([...ma.keys(), ...mb.keys()])) out[k] = treeMerge(ma.get(k) ?? null, mb.get(k) ?? null, mergeFn as never);
    return out;
  }
  if (!mergeFn) throw new Error("[tree_merge] Trees contain elements at the same locations but no merge function was provided");
  return (mergeFn as (x: unknown, y: unknown) => unknown)(a, b);
}

/** A function argument, or a tagged error naming what was given. */
function checkFunction(fn: unknown, op: string, what = "fn"): void {
  if (typeof fn !== "function") {
    const got = typeof fn === "string" ? `the string "${fn}"` : typeof fn === "object" ? (fn === null ? "null" : "an object") : typeof fn === "symbol" ? "a symbol" : String(fn);
    throw new TypeError(`[${op}] ${what} must be a function, got ${got}.`);
  }
}

/** Wraps a tree walk so that a container met again on its own path is an error: a tree that
 *  contains itself has no end (it overflowed the stack after seconds of building key paths). */
function acyclic<A extends unknown[], R>(op: string, walk: (t: unknown, ...rest: A) => R): (t: unknown, ...rest: A) => R {
  const path = new Set<unknown>();
  return (t: unknown, ...rest: A): R => {
    if (t === null || typeof t !== "object") return walk(t, ...rest);
    if (path.has(t)) throw new TypeError(`[${op}] The tree contains itself (a cycle).`);
    path.add(t);
    try {
      return walk(t, ...rest);
    } finally {
      path.delete(t);
    }
  };
}
