// grad and valueAndGrad, as mx.grad and mx.value_and_grad: arguments may be trees of arrays; the
// gradient of each differentiated argument comes back with that argument's structure.
import { MgArray } from "../core/array.ts";
import { libraryFunction, userFunction } from "../core/ownership.ts";
import { isInexact } from "../core/dtype.ts";
import { stopGradient } from "../core/ops/elementwise.ts";
import { describeLeaf, type Transformable, treeFlatten, treeUnflatten } from "./tree.ts";
import { gradSeed, vjpFlat } from "./vjp.ts";

/** argnums as MLX takes it: one index, a list of indices, or undefined/null for the first. */
export type Argnums = number | readonly number[] | null | undefined;


/**
 * The gradient `argnums` selects from the arguments `P`: the argument's own type for one index
 * (trees included: the gradient of `{ w, b }` is a `{ w, b }`), and for a list of several, a tuple
 * of them in ascending index order (as MLX; a one-element list gives the gradient itself).
 */
export type GradientOf<P extends readonly unknown[], N> = N extends number ? P[N]
  : N extends readonly [infer I extends number] ? P[I]
  : N extends readonly number[] ? PickArguments<P, SortIndices<N>>
  : P[0];
type PickArguments<P extends readonly unknown[], S extends readonly number[]> = { -readonly [K in keyof S]: P[S[K] & number] };

// Argument indices sorted at the type level (small non-negative literals; plain number[] stays as is).
type Counter<N extends number, T extends unknown[] = []> = T["length"] extends N ? T : Counter<N, [...T, unknown]>;
type Below<A extends number, B extends number> = Counter<B> extends [...Counter<A>, unknown, ...unknown[]] ? true : false;
type Insert<X extends number, S extends readonly number[]> = S extends readonly [infer H extends number, ...infer T extends readonly number[]]
  ? Below<X, H> extends true ? [X, ...S] : [H, ...Insert<X, T>]
  : [X];
type SortIndices<N extends readonly number[]> = number extends N["length"] ? N
  : N extends readonly [infer H extends number, ...infer T extends readonly number[]] ? Insert<H, SortIndices<T>> : [];

/** grad's and valueAndGrad's options (MLX's parameters by name). */
export interface GradOptions<N extends Argnums = Argnums> {
  argnums?: N;
}

function normalizeArgnums(argnums: Argnums, tag: string): number[] {
  if (argnums !== undefined && argnums !== null && typeof argnums !== "number" && !Array.isArray(argnums)) {
    throw new TypeError(`[${tag}] argnums must be an integer or a list of integers, got ${describeLeaf(argnums)}.`);
  }
  const list = argnums === undefined || argnums === null ? [0] : typeof argnums === "number" ? [argnums] : [...argnums];
  if (list.length === 0) throw new Error(`[${tag}] Gradient wrt no argument requested.`);
  for (const a of list) {
    if (!Number.isInteger(a)) throw new TypeError(`[${tag}] argnums must be integers, got ${describeLeaf(a)}.`);
  }
  const sorted = [...list].sort((x, y) => x - y);
  if (sorted[0]! < 0) throw new Error(`[${tag}] Can't compute the gradient of negative argument index ${sorted[0]}.`);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] === sorted[i - 1]) throw new Error(`[${tag}] Duplicate argument index ${sorted[i]} is not allowed.`);
  }
  return sorted;
}

type AnyFn = (...args: unknown[]) => unknown;

function valueAndGradImpl(fn: AnyFn, argnums: Argnums, tag: "grad" | "value_and_grad") {
  if (typeof fn !== "function") throw new TypeError(`[${tag}] fun must be a function.`);
  const nums = normalizeArgnums(argnums, tag);
  return (...args: unknown[]): [unknown, unknown] => {
    const last = nums[nums.length - 1]!;
    if (last >= args.length) {
      throw new Error(
        `[${tag}] Can't compute the gradient of argument index ${last} because the function is called with only ${args.length} positional arguments.`,
      );
    }
    // Every array of every argument is traced (so that repeated arrays stay separate); only
    // those of the argnums arguments are differentiated, and those must be all arrays.
    const primals: MgArray[] = [];
    const gradIndices: number[] = [];
    const counts: number[] = [];
    args.forEach((arg, i) => {
      const differentiated = nums.includes(i);
      // An integer argument would silently get a zero gradient (integers carry none): say so.
      // (A JS literal like mg.array(2) is int32, where Python's mx.array(2.0) is float32.)
      if (differentiated && arg instanceof MgArray && !isInexact(arg.dtype)) {
        throw new TypeError(
          `[${tag}] Can't compute the gradient with respect to argument ${i} of dtype ${arg.dtype.name}: integer and ` +
            `bool arrays carry no gradient. Use a floating dtype, e.g. mg.array(2, mg.float32).`,
        );
      }
      const arrays = treeFlatten(arg, differentiated, tag);
      if (differentiated) {
        for (let k = 0; k < arrays.length; k++) gradIndices.push(primals.length + k);
        counts.push(arrays.length);
      }
      primals.push(...arrays);
    });

    let valueTree: unknown;
    const { outputs, vjps } = vjpFlat(
      (tracers) => {
        const out = (fn as AnyFn)(...(treeUnflatten(args, tracers) as unknown[]));
        valueTree = out;
        return flattenLoss(out, tag);
      },
      primals,
      () => [gradSeed()],
      gradIndices,
      { tag, skipStopGradientOutputs: true },
    );

    let start = 0;
    const perArg = nums.map((argIndex, k) => {
      const tree = treeUnflatten(args[argIndex], vjps, start);
      start += counts[k]!;
      return tree;
    });
    const grads = nums.length === 1 ? perArg[0] : perArg;
    return [treeUnflatten(valueTree, outputs), grads];
  };
}

/** The loss first, then auxiliary arrays behind stop_gradient (they take no cotangent). */
function flattenLoss(out: unknown, tag: "grad" | "value_and_grad"): MgArray[] {
  if (out instanceof MgArray) return [out];
  if (tag === "grad") {
    throw new TypeError(
      `[grad] The return value of the function whose gradient we want to compute should be a scalar array; but ${describeLeaf(out)} was returned.`,
    );
  }
  if (!Array.isArray(out)) {
    throw new TypeError(
      `[value_and_grad] The return value of the function whose gradient we want to compute should be either a scalar array or a list with the first value being a scalar array; but ${describeLeaf(out)} was returned.`,
    );
  }
  if (out.length === 0) {
    throw new TypeError(
      "[value_and_grad] The return value of the function whose gradient we want to compute should be either a scalar array or a non-empty list; we got an empty list.",
    );
  }
  if (!(out[0] instanceof MgArray)) {
    throw new TypeError(
      `[value_and_grad] The first value returned by the function whose gradient we want to compute should be a scalar array; but it was ${describeLeaf(out[0])}.`,
    );
  }
  const flat = treeFlatten(out);
  return flat.map((o, i) => (i === 0 ? o : stopGradient(o)));
}

/**
 * Returns a function computing the value and gradient of `fn`, as mx.value_and_grad. `fn` returns
 * a scalar loss, or a list whose first element is the scalar loss (the rest are returned as is).
 * The gradient is that of the argument `argnums` (default 0), or a list for several.
 * @example
 * mg.valueAndGrad((x: mg.MgArray, y: mg.MgArray) => mg.sum(mg.multiply(x, y)), [0, 1])(mg.array(2, mg.float32), mg.array(3, mg.float32))
 */
export function valueAndGrad<P extends unknown[], R, const N extends Argnums = 0>(
  fun: (...args: P) => R,
  argnums?: N,
): (...args: P) => [R, GradientOf<P, N>];
export function valueAndGrad<P extends unknown[], R, const N extends Argnums = 0>(
  fun: (...args: P) => R,
  options: GradOptions<N>,
): (...args: P) => [R, GradientOf<P, N>];
export function valueAndGrad(fun: Transformable, argnums?: Argnums | GradOptions): (...args: never[]) => [unknown, unknown] {
  if (typeof fun !== "function") throw new TypeError(`[value_and_grad] fun must be a function, got ${describeLeaf(fun)}.`);
  const impl = valueAndGradImpl(userFunction(fun as AnyFn), argnums as Argnums, "value_and_grad");
  return libraryFunction((...args: unknown[]) => impl(...args));
}

/**
 * Returns a function computing the gradient of the scalar function `fun`, as mx.grad: with respect
 * to argument `argnums` (default 0), which comes back with that argument's type (trees included),
 * or a tuple of gradients for a list of indices.
 * @example
 * mg.grad((x: mg.MgArray) => mg.sum(mg.square(x)))(mg.array([1, 2], mg.float32))
 */
export function grad<P extends unknown[], const N extends Argnums = 0>(
  fun: (...args: P) => unknown,
  argnums?: N,
): (...args: P) => GradientOf<P, N>;
export function grad<P extends unknown[], const N extends Argnums = 0>(
  fun: (...args: P) => unknown,
  options: GradOptions<N>,
): (...args: P) => GradientOf<P, N>;
export function grad(fun: Transformable, argnums?: Argnums | GradOptions): (...args: never[]) => unknown {
  if (typeof fun !== "function") throw new TypeError(`[grad] fun must be a function, got ${describeLeaf(fun)}.`);
  const impl = valueAndGradImpl(userFunction(fun as AnyFn), argnums as Argnums, "grad");
  return libraryFunction((...args: unknown[]) => impl(...args)[1]);
}
