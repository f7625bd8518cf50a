// CPU kernels of the linalg primitives: each matrix of a batch (the leading axes) goes through
// the float64 factorizations of factor.ts / spectral.ts; results are stored with the output
// dtype's rounding. A LAPACK-style failure becomes an error naming the op and the matrix.
import type { MgArray } from "../../../core/array.ts";
import { Cholesky, Eig, Eigh, Inverse, LUF, QRF, SVD } from "../../../core/primitives/linalg.ts";
import { registerCpu } from "../registry.ts";
import { readComplex, readNumbers, writeComplex, writeNumbers } from "../values.ts";
import { complex64 } from "../../../core/dtype.ts";
import { cholesky, householderQr, inverse, LinalgError, luFactor, permutationFromPivots, triInverse } from "./factor.ts";
import { eigComplex, eigGeneral, eighJacobi, eighJacobiComplex, svd, svdComplex } from "./spectral.ts";

function batchOf(a: MgArray): { count: number; m: number; n: number } {
  const m = a.shape[a.ndim - 2]!, n = a.shape[a.ndim - 1]!;
  return { count: m * n === 0 ? 0 : a.size / (m * n), m, n };
}

function failed(op: string, e: unknown, index: number, count: number): never {
  if (e instanceof LinalgError) throw new Error(`[${op}] ${e.message}${count > 1 ? ` (matrix ${index} of the batch)` : ""}.`);
  throw e;
}

export function luCpu(inputs: readonly MgArray[], outputs: readonly MgArray[]): void {
  const a = inputs[0]!;
  const { count, m, n } = batchOf(a);
  const k = Math.min(m, n);
  const vals = readNumbers(a);
  const lu = new Float64Array(vals.length);
  const piv = new Float64Array(count * k);
  const rows = new Float64Array(count * m);
  for (let b = 0; b < count; b++) {
    const r = luFactor(vals.subarray(b * m * n, (b + 1) * m * n), m, n);
    lu.set(r.lu, b * m * n);
    for (let i = 0; i < k; i++) piv[b * k + i] = r.pivots[i]!;
    // MLX's third output: the row of L·U each row of A is (A = (L·U)[rows]), the inverse of P.
    const perm = permutationFromPivots(r.pivots, m);
    for (let i = 0; i < m; i++) rows[b * m + perm[i]!] = i;
  }
  writeNumbers(outputs[0]!, lu);
  writeNumbers(outputs[1]!, piv);
  writeNumbers(outputs[2]!, rows);
}

export function qrCpu(inputs: readonly MgArray[], outputs: readonly MgArray[]): void {
  const a = inputs[0]!;
  const { count, m, n } = batchOf(a);
  const k = Math.min(m, n);
  const vals = readNumbers(a);
  const q = new Float64Array(count * m * k), r = new Float64Array(count * k * n);
  for (let b = 0; b < count; b++) {
    const res = householderQr(vals.subarray(b * m * n, (b + 1) * m * n), m, n);
    q.set(res.q, b * m * k);
    r.set(res.r, b * k * n);
  }
  writeNumbers(outputs[0]!, q);
  writeNumbers(outputs[1]!, r);
}

/** Split complex values (re, im) of a complex64 array. */
function readSplit(a: MgArray): [Float64Array, Float64Array] {
  const z = readComplex(a);
  const re = new Float64Array(a.size), im = new Float64Array(a.size);
  for (let i = 0; i < a.size; i++) (re[i] = z[2 * i]!), (im[i] = z[2 * i + 1]!);
  return [re, im];
}

function interleave(re: Float64Array, im: Float64Array): Float64Array {
  const z = new Float64Array(2 * re.length);
  for (let i = 0; i < re.length; i++) (z[2 * i] = re[i]!), (z[2 * i + 1] = im[i]!);
  return z;
}

function svdComplexCpu(a: MgArray, outputs: readonly MgArray[], computeUv: boolean): void {
  const { count, m, n } = batchOf(a);
  const k = Math.min(m, n);
  const [re, im] = readSplit(a);
  const s = new Float64Array(count * k);
  const uRe = new Float64Array(computeUv ? count * m * m : 0), uIm = new Float64Array(uRe.length);
  const vRe = new Float64Array(computeUv ? count * n * n : 0), vIm = new Float64Array(vRe.length);
  for (let b = 0; b < count; b++) {
    try {
      const r = svdComplex(re.subarray(b * m * n, (b + 1) * m * n), im.subarray(b * m * n, (b + 1) * m * n), m, n, computeUv);
      s.set(r.s, b * k);
      if (computeUv) {
        uRe.set(r.uRe!, b * m * m); uIm.set(r.uIm!, b * m * m);
        vRe.set(r.vtRe!, b * n * n); vIm.set(r.vtIm!, b * n * n);
      }
    } catch (e) {
      failed("linalg.svd", e, b, count);
    }
  }
  if (!computeUv) return writeNumbers(outputs[0]!, s);
  writeComplex(outputs[0]!, interleave(uRe, uIm));
  writeNumbers(outputs[1]!, s);
  writeComplex(outputs[2]!, interleave(vRe, vIm));
}

export function svdCpu(inputs: readonly MgArray[], outputs: readonly MgArray[], computeUv: boolean): void {
  const a = inputs[0]!;
  if (a.dtype === complex64) return svdComplexCpu(a, outputs, computeUv);
  const { count, m, n } = batchOf(a);
  const k = Math.min(m, n);
  const vals = readNumbers(a);
  const s = new Float64Array(count * k);
  const u = computeUv ? new Float64Array(count * m * m) : null;
  const vt = computeUv ? new Float64Array(count * n * n) : null;
  for (let b = 0; b < count; b++) {
    try {
      const res = svd(vals.subarray(b * m * n, (b + 1) * m * n), m, n, computeUv);
      s.set(res.s, b * k);
      if (u) u.set(res.u!, b * m * m);
      if (vt) vt.set(res.vt!, b * n * n);
    } catch (e) {
      failed("linalg.svd", e, b, count);
    }
  }
  if (computeUv) {
    writeNumbers(outputs[0]!, u!);
    writeNumbers(outputs[1]!, s);
    writeNumbers(outputs[2]!, vt!);
  } else {
    writeNumbers(outputs[0]!, s);
  }
}

export function inverseCpu(inputs: readonly MgArray[], outputs: readonly MgArray[], tri: boolean, upper: boolean): void {
  const a = inputs[0]!;
  const { count, n } = batchOf(a);
  const vals = readNumbers(a);
  const out = new Float64Array(vals.length);
  const op = tri ? "linalg.tri_inv" : "linalg.inv";
  for (let b = 0; b < count; b++) {
    const mat = vals.subarray(b * n * n, (b + 1) * n * n);
    try {
      out.set(tri ? triInverse(mat, n, upper) : inverse(mat, n), b * n * n);
    } catch (e) {
      failed(op, e, b, count);
    }
  }
  writeNumbers(outputs[0]!, out);
}

export function choleskyCpu(inputs: readonly MgArray[], outputs: readonly MgArray[], upper: boolean): void {
  const a = inputs[0]!;
  const { count, n } = batchOf(a);
  const vals = readNumbers(a);
  const out = new Float64Array(vals.length);
  for (let b = 0; b < count; b++) out.set(cholesky(vals.subarray(b * n * n, (b + 1) * n * n), n, upper), b * n * n);
  writeNumbers(outputs[0]!, out);
}

export function eighCpu(inputs: readonly MgArray[], outputs: readonly MgArray[], uplo: "L" | "U", vectors: boolean): void {
  const a = inputs[0]!;
  const { count, n } = batchOf(a);
  if (a.dtype === complex64) {
    const [re, im] = readSplit(a);
    const w = new Float64Array(count * n);
    const vRe = new Float64Array(vectors ? count * n * n : 0), vIm = new Float64Array(vRe.length);
    for (let b = 0; b < count; b++) {
      try {
        const r = eighJacobiComplex(re.subarray(b * n * n, (b + 1) * n * n), im.subarray(b * n * n, (b + 1) * n * n), n, uplo, vectors);
        w.set(r.w, b * n);
        if (vectors) (vRe.set(r.vRe!, b * n * n), vIm.set(r.vIm!, b * n * n));
      } catch (e) {
        failed(vectors ? "linalg.eigh" : "linalg.eigvalsh", e, b, count);
      }
    }
    writeNumbers(outputs[0]!, w);
    if (vectors) writeComplex(outputs[1]!, interleave(vRe, vIm));
    return;
  }
  const vals = readNumbers(a);
  const w = new Float64Array(count * n);
  const v = vectors ? new Float64Array(count * n * n) : null;
  for (let b = 0; b < count; b++) {
    try {
      const res = eighJacobi(vals.subarray(b * n * n, (b + 1) * n * n), n, uplo, vectors);
      w.set(res.w, b * n);
      if (v) v.set(res.v!, b * n * n);
    } catch (e) {
      failed(vectors ? "linalg.eigh" : "linalg.eigvalsh", e, b, count);
    }
  }
  writeNumbers(outputs[0]!, w);
  if (v) writeNumbers(outputs[1]!, v);
}

export function eigCpu(inputs: readonly MgArray[], outputs: readonly MgArray[], vectors: boolean): void {
  const a = inputs[0]!;
  const { count, n } = batchOf(a);
  const complex = a.dtype === complex64;
  const [vals, imag] = complex ? readSplit(a) : [readNumbers(a), null];
  const w = new Float64Array(2 * count * n);
  const v = vectors ? new Float64Array(2 * count * n * n) : null;
  for (let b = 0; b < count; b++) {
    try {
      const res = imag
        ? eigComplex(vals.subarray(b * n * n, (b + 1) * n * n), imag.subarray(b * n * n, (b + 1) * n * n), n, vectors)
        : eigGeneral(vals.subarray(b * n * n, (b + 1) * n * n), n, vectors);
      for (let i = 0; i < n; i++) (w[2 * (b * n + i)] = res.wr[i]!), (w[2 * (b * n + i) + 1] = res.wi[i]!);
      if (v) {
        for (let i = 0; i < n * n; i++) (v[2 * (b * n * n + i)] = res.vr![i]!), (v[2 * (b * n * n + i) + 1] = res.vi![i]!);
      }
    } catch (e) {
      failed(vectors ? "linalg.eig" : "linalg.eigvals", e, b, count);
    }
  }
  writeComplex(outputs[0]!, w);
  if (v) writeComplex(outputs[1]!, v);
}

registerCpu(LUF, (inputs, outputs) => luCpu(inputs, outputs));
registerCpu(QRF, (inputs, outputs) => qrCpu(inputs, outputs));
registerCpu(SVD, (inputs, outputs, p) => svdCpu(inputs, outputs, p.computeUv));
registerCpu(Inverse, (inputs, outputs, p) => inverseCpu(inputs, outputs, p.tri, p.upper));
registerCpu(Cholesky, (inputs, outputs, p) => choleskyCpu(inputs, outputs, p.upper));
registerCpu(Eigh, (inputs, outputs, p) => eighCpu(inputs, outputs, p.uplo, p.computeEigenvectors));
registerCpu(Eig, (inputs, outputs, p) => eigCpu(inputs, outputs, p.computeEigenvectors));
