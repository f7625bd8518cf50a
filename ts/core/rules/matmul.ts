// Derivative and batching rules of Matmul and AddMM (ts/core/primitives/matmul.ts).
import type { MgArray } from "../array.ts";
import { defineRules } from "../primitive.ts";
import { AddMM, Matmul } from "../primitives/matmul.ts";
import { add, conjugate, multiply } from "../ops/elementwise.ts";
import { addmm, matmul } from "../ops/linalg-core.ts";
import { broadcastTo, expandDims, moveaxis, swapaxes } from "../ops/shape.ts";
import { sumToShape } from "./views.ts";

/** The conjugate transpose of the last two axes (the plain transpose for real dtypes). */
function adjoint(x: MgArray): MgArray {
  return swapaxes(conjugate(x), -1, -2);
}

/** Each batch axis moved to the front; an unbatched input gets a size-1 axis there. */
function leadingBatch(inputs: readonly MgArray[], axes: readonly number[]): MgArray[] {
  return inputs.map((x, i) => (axes[i]! >= 0 ? moveaxis(x, axes[i]!, 0) : expandDims(x, 0)));
}

/** Each batch axis moved to the front; unbatched inputs broadcast to the batch size. */
function batchFirst(inputs: readonly MgArray[], axes: readonly number[]): MgArray[] {
  const k = axes.findIndex((b) => b >= 0);
  const size = inputs[k]!.shape[axes[k]!]!;
  return inputs.map((x, i) => (axes[i]! >= 0 ? moveaxis(x, axes[i]!, 0) : broadcastTo(expandDims(x, 0), [size, ...x.shape])));
}

defineRules(Matmul, {
  // y = A·B:  dA = G·Bᴴ,  dB = Aᴴ·G  (ᴴ = conjugate transpose; for real dtypes the transpose).
  vjp([a, b], [g], argnums) {
    return argnums.map((i) =>
      i === 0 ? sumToShape(matmul(g!, adjoint(b!)), a!.shape) : sumToShape(matmul(adjoint(a!), g!), b!.shape),
    );
  },
  // dy = dA·B + A·dB
  jvp([a, b], tangents, argnums) {
    const parts = argnums.map((i, k) => (i === 0 ? matmul(tangents[k]!, b!) : matmul(a!, tangents[k]!)));
    return [parts.reduce((x, y) => add(x, y))];
  },
  // Operands share their rank here; with the batch axis first (size 1 when unbatched) the op's
  // batch broadcasting does the rest.
  vmap(inputs, axes) {
    const [a, b] = leadingBatch(inputs, axes);
    return [[matmul(a!, b!)], [0]];
  },
});

defineRules(AddMM, {
  // y = α A·B + β C:  dA = α G·Bᵀ,  dB = α Aᵀ·G,  dC = β G.
  vjp([a, b, c], [g], argnums, _o, p) {
    return argnums.map((i) => {
      if (i === 0) return sumToShape(multiply(matmul(g!, adjoint(b!)), p.alpha), a!.shape);
      if (i === 1) return sumToShape(multiply(matmul(adjoint(a!), g!), p.alpha), b!.shape);
      return sumToShape(multiply(g!, p.beta), c!.shape);
    });
  },
  // dy = α (dA·B + A·dB) + β dC
  jvp([a, b], tangents, argnums, _o, p) {
    const parts = argnums.map((i, k) => {
      const t = tangents[k]!;
      if (i === 0) return multiply(matmul(t, b!), p.alpha);
      if (i === 1) return multiply(matmul(a!, t), p.alpha);
      return multiply(t, p.beta);
    });
    return [parts.reduce((x, y) => add(x, y))];
  },
  // c must broadcast to a·b's shape, so a and b carry the full batch even when only c is batched.
  vmap(inputs, axes, p) {
    const [a, b, c] = batchFirst(inputs, axes);
    return [[addmm(c!, a!, b!, p.alpha, p.beta)], [0]];
  },
});
