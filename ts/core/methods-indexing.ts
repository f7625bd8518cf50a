// MgArray's indexing and data-movement methods, as MLX's array has them: a.index(...) for
// Python's a[...], a.at(...) for a.at[...], diag, diagonal, view, split, and iteration over the
// first axis. Kept apart from methods.ts (same declaration-merging pattern).
import { MgArray } from "./array.ts";
import type { Dtype } from "./dtype.ts";
import type { StreamOptions } from "./ops/convert.ts";
import { libraryCall, libraryFunction } from "./ownership.ts";
import { publicMethod, type PublicFn } from "./options.ts";
import { ArrayAt, getItem, type IndexItem } from "./ops/index-expr.ts";
import { split } from "./ops/join.ts";
import { diag, diagonal, view } from "./ops/movement.ts";

declare module "./array.ts" {
  interface MgArray {
    /**
     * Python's `a[...]`: one item per axis — integers, slices (":", "1:3", "::-1" or
     * { start, stop, step }), null (new axis), "..." and integer arrays. See ts/core/ops/indexing.ts.
     */
    index(...indices: IndexItem[]): MgArray;
    /** Python's `a.at[...]`: `a.at(idx).add(v)` and subtract/multiply/divide/maximum/minimum. */
    at(...indices: IndexItem[]): ArrayAt;
    /** The k-th diagonal (2-D) or a diagonal matrix (1-D), as mg.diag. */
    diag: PublicFn<(k?: number, opts?: StreamOptions) => MgArray, "MgArray.diag">;
    /** The diagonal between two axes, as mg.diagonal. */
    diagonal: PublicFn<(offset?: number, axis1?: number, axis2?: number, opts?: StreamOptions) => MgArray, "MgArray.diagonal">;
    /** The same bytes as another dtype (see mg.view); astype converts values instead. */
    view: PublicFn<(dtype: Dtype, opts?: StreamOptions) => MgArray, "MgArray.view">;
    /** Pieces along `axis`, as mg.split. */
    split: PublicFn<(indicesOrSections: number | readonly number[], axis?: number, opts?: StreamOptions) => MgArray[], "MgArray.split">;
    /** Iterates over the first axis (a.index(0), a.index(1), …), as iterating an mx.array. */
    [Symbol.iterator](): Iterator<MgArray>;
  }
}

const methods: Record<string, (this: MgArray, ...args: never[]) => unknown> & ThisType<MgArray> = {
  index(...indices: IndexItem[]) { return getItem(this, indices); },
  at(...indices: IndexItem[]) {
    this.checkUsable("at");
    return new ArrayAt(this, indices);
  },
  diag(k?: number, o?: StreamOptions) { return diag(this, k, o); },
  diagonal(offset?: number, axis1?: number, axis2?: number, o?: StreamOptions) { return diagonal(this, offset, axis1, axis2, o); },
  view(dtype: Dtype, o?: StreamOptions) { return view(this, dtype, o); },
  split(s: number | readonly number[], axis?: number, o?: StreamOptions) { return split(this, s, axis, o); },
};
const proto = MgArray.prototype as unknown as Record<string | symbol, unknown>;
// Methods that build arrays are library calls (ownership.ts), as the ops they call are.
for (const [name, fn] of Object.entries(methods)) {
  Object.defineProperty(proto, name, { value: publicMethod(`MgArray.${name}`, fn, { library: name !== "at" }), writable: true, configurable: true });
}
const atProto = ArrayAt.prototype as unknown as Record<string, (...args: never[]) => unknown>;
for (const name of ["add", "subtract", "multiply", "divide", "maximum", "minimum"]) atProto[name] = libraryFunction(atProto[name]!);
Object.defineProperty(proto, Symbol.iterator, {
  *value(this: MgArray): Generator<MgArray> {
    if (this.ndim === 0) throw new TypeError("[iter] iteration over a 0-d array.");
    const n = this.shape[0]!;
    for (let i = 0; i < n; i++) yield libraryCall(() => getItem(this, [i]));
  },
  writable: true,
  configurable: true,
});
