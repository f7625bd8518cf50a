// MgArray methods for ordering, softmax-family and product ops (argmax, argmin, logsumexp, as
// MLX's array; matmul, as node-mlx, since JavaScript has no `@`). Kept apart from methods.ts so
// each group of ops owns its methods.
import { MgArray } from "./array.ts";
import type { Axes } from "./ops/reduce.ts";
import type { ArrayInput, StreamOptions } from "./ops/convert.ts";
import { publicMethod, type PublicFn } from "./options.ts";
import { matmul } from "./ops/linalg-core.ts";
import { logsumexp } from "./ops/softmax.ts";
import { argmax, argmin } from "./ops/sort.ts";

declare module "./array.ts" {
  interface MgArray {
    /** Indices of the maxima along `axis` (all axes when null); uint32, first index on ties. */
    argmax: PublicFn<(axis?: number | null, keepdims?: boolean, opts?: StreamOptions) => MgArray, "MgArray.argmax">;
    /** Indices of the minima along `axis` (all axes when null); uint32, first index on ties. */
    argmin: PublicFn<(axis?: number | null, keepdims?: boolean, opts?: StreamOptions) => MgArray, "MgArray.argmin">;
    /** log Σ exp over `axis` (all axes when null). */
    logsumexp: PublicFn<(axis?: Axes, keepdims?: boolean, opts?: StreamOptions) => MgArray, "MgArray.logsumexp">;
    /** The matrix product this @ other. */
    matmul: PublicFn<(other: ArrayInput, opts?: StreamOptions) => MgArray, "MgArray.matmul">;
  }
}

const methods: Record<string, (this: MgArray, ...args: never[]) => unknown> & ThisType<MgArray> = {
  argmax(axis?: number | null, keepdims?: boolean, opts?: StreamOptions) { return argmax(this, axis, keepdims ?? false, opts); },
  argmin(axis?: number | null, keepdims?: boolean, opts?: StreamOptions) { return argmin(this, axis, keepdims ?? false, opts); },
  logsumexp(axis?: Axes, keepdims?: boolean, opts?: StreamOptions) { return logsumexp(this, axis, keepdims ?? false, opts); },
  matmul(other: ArrayInput, opts?: StreamOptions) { return matmul(this, other, opts); },
};
const proto = MgArray.prototype as unknown as Record<string, unknown>;
// Methods that build arrays are library calls (ownership.ts), as the ops they call are.
for (const [name, fn] of Object.entries(methods)) {
  Object.defineProperty(proto, name, { value: publicMethod(`MgArray.${name}`, fn), writable: true, configurable: true });
}
