// Softmax and log-sum-exp over the last axis (MLX's Softmax and LogSumExp). The ops move any set
// of axes last and flatten them, so these records only ever see one trailing axis. Inputs are
// floating (the ops apply at_least_float); the CPU reference works in float64, max-shifted, and
// rounds once into the input dtype.
import type { MgArray } from "../array.ts";
import type { Primitive } from "../primitive.ts";
import { readNumbers, writeNumbers } from "../../backend/cpu/values.ts";
import { multiply, subtract } from "../ops/elementwise.ts";
import { sum } from "../ops/reduce.ts";
import { logsumexpRule, softmaxRule } from "../../backend/gpu/softmax.ts";

export interface SoftmaxParams {
  /** Accumulate 16-bit inputs in float32 (MLX's `precise`). The CPU always accumulates in
   *  float64, which satisfies it; GPU kernels choose their accumulator from it. */
  precise: boolean;
}

/** Calls fn(row, start, n) for each row of the last axis of a row-major array. */
function forEachRow(x: MgArray, fn: (start: number, n: number, row: number) => void): void {
  const n = x.shape[x.ndim - 1]!;
  const rows = n === 0 ? 0 : x.size / n;
  for (let r = 0; r < rows; r++) fn(r * n, n, r);
}

/** The maximum of a row; NaN if the row holds one. */
function rowMax(v: Float64Array, start: number, n: number): number {
  let m = -Infinity;
  for (let k = 0; k < n; k++) {
    const e = v[start + k]!;
    if (e !== e) return NaN;
    if (e > m) m = e;
  }
  return m;
}

export const Softmax: Primitive<SoftmaxParams> = {
  name: "Softmax",
  gpu: softmaxRule,
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  cpu([a], [out]) {
    const v = readNumbers(a!);
    const r = new Float64Array(v.length);
    // exp(x − max) / Σ exp(x − max): an all −∞ row or a +∞ entry gives NaN (∞ − ∞), as MLX.
    forEachRow(a!, (s, n) => {
      const m = rowMax(v, s, n);
      let z = 0;
      for (let k = 0; k < n; k++) z += r[s + k] = Math.exp(v[s + k]! - m);
      for (let k = 0; k < n; k++) r[s + k]! /= z;
    });
    writeNumbers(out!, r);
  },
  // y = softmax(x): dy = y ⊙ (dx − Σ dx⊙y), a symmetric Jacobian, so vjp and jvp share the form.
  vjp(_p, [g], _a, [y]) {
    const gy = multiply(g!, y!);
    return [subtract(gy, multiply(y!, sum(gy, -1, true)))];
  },
  jvp(_p, [t], _a, [y]) {
    const ty = multiply(t!, y!);
    return [subtract(ty, multiply(y!, sum(ty, -1, true)))];
  },
  vmap([a], [b], p) {
    const [x, axis] = batchOffLastAxis(a!, b!);
    return [[makeArray(Softmax, [x], p, resolveStream())], [axis]];
  },
  paramsKey: (p) => (p.precise ? "precise" : ""),
};

/** log Σ exp(x) over the last axis, which the output keeps as size 1. */
export const LogSumExp: Primitive<Record<string, never>> = {
  name: "LogSumExp",
  gpu: logsumexpRule,
  outputSpecs: ([a]) => [{ shape: [...a!.shape.slice(0, -1), 1], dtype: a!.dtype }],
  cpu([a], [out]) {
    const v = readNumbers(a!);
    const n = a!.shape[a!.ndim - 1]!;
    const r = new Float64Array(n === 0 ? 0 : v.length / n);
    forEachRow(a!, (s, len, row) => {
      const m = rowMax(v, s, len);
      // An infinite max is the answer itself (all −∞ → −∞, any +∞ → +∞); NaN stays NaN.
      if (m === Infinity || m === -Infinity || m !== m) {
        r[row] = m;
        return;
      }
      let z = 0;
      for (let k = 0; k < len; k++) z += Math.exp(v[s + k]! - m);
      r[row] = m + Math.log(z);
    });
    writeNumbers(out!, r);
  },
  // ∂/∂xᵢ log Σⱼ exp(xⱼ) = softmax(x)ᵢ.
  vjp([a], [g]) {
    return [multiply(g!, softmax(a!, -1, { precise: true }))];
  },
  jvp([a], [t]) {
    return [sum(multiply(t!, softmax(a!, -1, { precise: true })), -1, true)];
  },
  vmap([a], [b]) {
    const [x, axis] = batchOffLastAxis(a!, b!);
    return [[makeArray(LogSumExp, [x], {}, resolveStream())], [axis]];
  },
};

/** These records reduce the last axis: a batch axis there is swapped one place left. */
function batchOffLastAxis(x: MgArray, b: number): [MgArray, number] {
  if (b !== x.ndim - 1) return [x, b];
  return [swapaxes(x, -1, -2), x.ndim - 2];
}

import { softmax } from "../ops/softmax.ts";
import { swapaxes } from "../ops/shape.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
