// Derivative and batching rules of Reduce (ts/core/primitives/reduce.ts).
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { defineRules } from "../primitive.ts";
import { Reduce } from "../primitives/reduce.ts";
import { zerosLike } from "../ops/creation.ts";
import * as ew from "../ops/elementwise.ts";
import { takeAlongAxis } from "../ops/indexing.ts";
import { cumprod, sum } from "../ops/reduce.ts";
import { broadcastTo, flip, reshape as reshapeTo, transpose as transposeTo } from "../ops/shape.ts";
import { argmax, argmin } from "../ops/sort.ts";

defineRules(Reduce, {
  vjp([a], [g], _argnums, [y], p) {
    const x = a!;
    switch (p.type) {
      case "sum":
        // Every input element contributes once: the cotangent broadcasts back.
        return [broadcastTo(g!, x.shape)];
      case "prod": {
        // ∂(∏x)/∂xᵢ = ∏_{j≠i} xⱼ, computed without dividing by xᵢ (stable with zeros).
        // Complex: the conjugate derivative (MLX's convention, as for multiply).
        return [ew.multiply(broadcastTo(g!, x.shape), ew.conjugate(productOfOthers(x, p.axes)))];
      }
      case "max":
      case "min": {
        // Ties share the gradient equally.
        const mask = ew.astype(ew.equal(x, broadcastTo(y!, x.shape)), x.dtype);
        const count = ew.astype(sum(mask, p.axes, true), x.dtype);
        return [ew.multiply(broadcastTo(ew.divide(g!, count), x.shape), mask)];
      }
      default:
        return [zerosLike(x)];
    }
  },
  jvp([a], [t], _argnums, [y], p) {
    const x = a!;
    switch (p.type) {
      case "sum":
        return [sum(t!, p.axes, true)];
      case "prod":
        return [sum(ew.multiply(t!, productOfOthers(x, p.axes)), p.axes, true)];
      case "max":
      case "min":
        // MLX's rule: the tangent of the first extreme element (argmax/argmin), not the mean over
        // ties the vjp uses — MLX's two rules differ at ties, and metalgrad follows both.
        return [tangentAtFirstExtreme(x, t!, p.axes, p.type === "max")];
      default:
        return [zerosLike(y!)];
    }
  },
  // Reduced axes keep size 1, so the batch axis stays where it is; axes at or after it shift.
  vmap([a], [ax], p) {
    const axes = p.axes.map((r) => (r >= ax! ? r + 1 : r));
    return [[makeArray(Reduce, [a!], { type: p.type, axes }, resolveStream())], [ax!]];
  },
});

/** Moves `axes` last and flattens them into one: [array, the permutation used]. */
function reducedAxesLast(x: MgArray, axes: readonly number[]): [MgArray, number[]] {
  const keep = Array.from({ length: x.ndim }, (_, i) => i).filter((i) => !axes.includes(i));
  const perm = [...keep, ...axes];
  const n = axes.reduce((acc, i) => acc * x.shape[i]!, 1);
  return [reshapeTo(transposeTo(x, perm), [...keep.map((i) => x.shape[i]!), n]), perm];
}

/** t at the first maximum (minimum) of x over `axes`, shaped as the reduction's output. */
function tangentAtFirstExtreme(x: MgArray, t: MgArray, axes: readonly number[], isMax: boolean): MgArray {
  const [xs] = reducedAxesLast(x, axes);
  const [ts] = reducedAxesLast(broadcastTo(t, x.shape), axes);
  const at = isMax ? argmax(xs, -1, true) : argmin(xs, -1, true);
  return reshapeTo(takeAlongAxis(ts, at, -1), x.shape.map((d, i) => (axes.includes(i) ? 1 : d)));
}

/** For each element, the product of the other elements along the reduced axes. */
function productOfOthers(x: MgArray, axes: readonly number[]): MgArray {
  // Move the reduced axes last and flatten them; then "product of the others" is the product of
  // an exclusive prefix scan and an exclusive suffix scan — no division, so zeros are fine.
  const nd = x.ndim;
  const [flat, perm] = reducedAxesLast(x, axes);
  const left = cumprod(flat, -1, { inclusive: false });
  const right = flip(cumprod(flip(flat, -1), -1, { inclusive: false }), -1);
  const others = ew.multiply(left, right);
  const back = reshapeTo(others, perm.map((i) => x.shape[i]!));
  const inverse = new Array<number>(nd);
  perm.forEach((p, i) => (inverse[p] = i));
  return transposeTo(back, inverse);
}
