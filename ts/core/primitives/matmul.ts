// Matrix products (MLX's Matmul and AddMM). Inputs are (batch…, M, K) and (batch…, K, N) of one
// inexact dtype with equal batch shapes: the ops insert the 1-D singleton axes and broadcast
// the batch axes (zero-stride views) before building these nodes, so batch broadcasting is summed
// back by the Broadcast view's vjp in the graph.
import type { MgArray } from "../array.ts";
import { complex64 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";
import { interleave, matmulValues } from "../../backend/cpu/matmul.ts";
import { matmulGpu } from "../../backend/gpu/matmul.ts";
import { readNumbers, writeComplex, writeNumbers } from "../../backend/cpu/values.ts";
import { add, conjugate, multiply } from "../ops/elementwise.ts";
import { broadcastTo, expandDims, moveaxis, swapaxes } from "../ops/shape.ts";
import { sumToShape } from "./views.ts";

/** The conjugate transpose of the last two axes (the plain transpose for real dtypes). */
function adjoint(x: MgArray): MgArray {
  return swapaxes(conjugate(x), -1, -2);
}

const outShape = (a: MgArray, b: MgArray) => [...a.shape.slice(0, -1), b.shape[b.ndim - 1]!];

/** y = A·B over the last two axes. */
export const Matmul: Primitive<Record<string, never>> = {
  name: "Matmul",
  outputSpecs: ([a, b]) => [{ shape: outShape(a!, b!), dtype: a!.dtype }],
  cpu([a, b], [out]) {
    const { re, im } = matmulValues(a!, b!);
    if (im) writeComplex(out!, interleave(re, im));
    else writeNumbers(out!, re);
  },
  gpu: matmulGpu,
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
};

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

export interface AddMMParams {
  /** Already rounded to float32, as MLX's C++ `float alpha, beta`. */
  alpha: number;
  beta: number;
}

/** y = α·(A·B) + β·C; C has the output's shape. With β = 0, C is not read (BLAS convention,
 *  so a NaN in C does not leak into the result). Real floating dtypes only. */
export const AddMM: Primitive<AddMMParams> = {
  name: "AddMM",
  outputSpecs: ([a, b]) => [{ shape: outShape(a!, b!), dtype: a!.dtype }],
  cpu([a, b, c], [out], p) {
    if (a!.dtype === complex64) throw new Error("[addmm] complex64 is computed as matmul + add (internal error).");
    const { re } = matmulValues(a!, b!);
    if (p.beta === 0) {
      for (let i = 0; i < re.length; i++) re[i] = p.alpha * re[i]!;
    } else {
      const cv = readNumbers(c!);
      for (let i = 0; i < re.length; i++) re[i] = p.alpha * re[i]! + p.beta * cv[i]!;
    }
    writeNumbers(out!, re);
  },
  gpu: matmulGpu,
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
  paramsKey: (p) => `${p.alpha}|${p.beta}`,
};

import { addmm, matmul } from "../ops/linalg-core.ts";
