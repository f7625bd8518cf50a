// CPU kernels of Softmax and LogSumExp (ts/core/primitives/softmax.ts): float64, max-shifted,
// rounded once into the input dtype.
import type { MgArray } from "../../core/array.ts";
import { LogSumExp, Softmax } from "../../core/primitives/softmax.ts";
import { registerCpu } from "./registry.ts";
import { readNumbers, writeNumbers } from "./values.ts";

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

registerCpu(Softmax, ([a], [out]) => {
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
});

registerCpu(LogSumExp, ([a], [out]) => {
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
});
