// MLX's linalg primitives: LUF, QRF, SVD, Inverse, Cholesky, Eigh, Eig. Inputs are (batch…, m, n)
// float32/float64 arrays on a CPU stream (the ops check); every other linalg function is composed
// from these and ordinary ops, as in MLX. Rules: ts/core/rules/linalg.ts; CPU kernels:
// the CPU backend's linalg/kernels.ts (no GPU kernels, as in MLX).
import type { MgArray } from "../array.ts";
import { complex64, type Dtype, float32, uint32 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";

const batchShape = (a: MgArray) => a.shape.slice(0, -2);
const dims = (a: MgArray) => [a.shape[a.ndim - 2]!, a.shape[a.ndim - 1]!] as const;

/** A = P·L·U: [LU packed (a's shape), pivots (batch…, min(m, n)) uint32, rows (batch…, m) uint32]. */
export const LUF: Primitive<Record<string, never>> = {
  name: "LUF",
  opName: () => "linalg.lu_factor",
  outputSpecs: ([a]) => {
    const [m, n] = dims(a!);
    return [
      { shape: [...a!.shape], dtype: a!.dtype },
      { shape: [...batchShape(a!), Math.min(m, n)], dtype: uint32 },
      { shape: [...batchShape(a!), m], dtype: uint32 },
    ];
  },
};

/** A = Q·R, reduced: Q (…, m, k), R (…, k, n), k = min(m, n). */
export const QRF: Primitive<Record<string, never>> = {
  name: "QRF",
  opName: () => "linalg.qr",
  outputSpecs: ([a]) => {
    const [m, n] = dims(a!);
    const k = Math.min(m, n);
    return [
      { shape: [...batchShape(a!), m, k], dtype: a!.dtype },
      { shape: [...batchShape(a!), k, n], dtype: a!.dtype },
    ];
  },
};

export interface SvdParams {
  computeUv: boolean;
}

/** A = U·diag(S)·Vᵀ with full U (…, m, m) and Vᵀ (…, n, n); S (…, min(m, n)) descending. */
export const SVD: Primitive<SvdParams> = {
  name: "SVD",
  opName: () => "linalg.svd",
  outputSpecs: ([a], p) => {
    const [m, n] = dims(a!);
    // complex64 input: real singular values (float32), complex U and Vᴴ.
    const s = { shape: [...batchShape(a!), Math.min(m, n)], dtype: a!.dtype === complex64 ? float32 : a!.dtype };
    if (!p.computeUv) return [s];
    return [{ shape: [...batchShape(a!), m, m], dtype: a!.dtype }, s, { shape: [...batchShape(a!), n, n], dtype: a!.dtype }];
  },
  paramsKey: (p) => `${p.computeUv}`,
};

export interface InverseParams {
  /** Only the triangle (lower unless `upper`) is read and inverted; the other is zero. */
  tri: boolean;
  upper: boolean;
}

export const Inverse: Primitive<InverseParams> = {
  name: "Inverse",
  opName: (p) => (p.tri ? "linalg.tri_inv" : "linalg.inv"),
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  paramsKey: (p) => `${p.tri}|${p.upper}`,
};

export interface CholeskyParams {
  upper: boolean;
}

export const Cholesky: Primitive<CholeskyParams> = {
  name: "Cholesky",
  opName: () => "linalg.cholesky",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  paramsKey: (p) => `${p.upper}`,
};

export interface EighParams {
  uplo: "L" | "U";
  computeEigenvectors: boolean;
}

/** Symmetric eigendecomposition from one triangle: [w ascending (…, n)] (+ [V (…, n, n)]). */
export const Eigh: Primitive<EighParams> = {
  name: "Eigh",
  opName: (p) => (p.computeEigenvectors ? "linalg.eigh" : "linalg.eigvalsh"),
  outputSpecs: ([a], p) => {
    // complex64 (Hermitian) input: real eigenvalues (float32), complex eigenvectors.
    const w = { shape: a!.shape.slice(0, -1), dtype: a!.dtype === complex64 ? float32 : a!.dtype };
    return p.computeEigenvectors ? [w, { shape: [...a!.shape], dtype: a!.dtype }] : [w];
  },
  paramsKey: (p) => `${p.uplo}|${p.computeEigenvectors}`,
};

export interface EigParams {
  computeEigenvectors: boolean;
}

/** General eigendecomposition: complex64 eigenvalues (…, n) (+ eigenvectors (…, n, n)). */
export const Eig: Primitive<EigParams> = {
  name: "Eig",
  opName: (p) => (p.computeEigenvectors ? "linalg.eig" : "linalg.eigvals"),
  outputSpecs: ([a], p) => {
    const w = { shape: a!.shape.slice(0, -1), dtype: complex64 as Dtype };
    return p.computeEigenvectors ? [w, { shape: [...a!.shape], dtype: complex64 as Dtype }] : [w];
  },
  paramsKey: (p) => `${p.computeEigenvectors}`,
};
