// Shared by the linalg kernel tests: MLX's fixture and small dense helpers.
import { readFileSync } from "node:fs";

export interface LinalgCase {
  m: number;
  n: number;
  a: number[];
  lu: number[][];
  pivots: number[];
  q: number[][];
  r: number[][];
  sv: number[];
  spd?: number[];
  chol_l?: number[][];
  chol_u?: number[][];
  inv?: number[][];
  tri_inv_l?: number[][];
  tri_inv_u?: number[][];
  eigvalsh_l?: number[];
  eigvalsh_u?: number[];
  eigvals?: [number, number][];
  det?: number;
  slogdet?: [number, number];
}

export const fixture = JSON.parse(
  readFileSync(new URL("../../../fixtures/linalg/cases.json", import.meta.url).pathname, "utf8"),
) as { mlx: string; cases: LinalgCase[] };

export function matmul(a: ArrayLike<number>, b: ArrayLike<number>, m: number, k: number, n: number): Float64Array {
  const c = new Float64Array(m * n);
  for (let i = 0; i < m; i++) for (let p = 0; p < k; p++) for (let j = 0; j < n; j++) c[i * n + j]! += a[i * k + p]! * b[p * n + j]!;
  return c;
}

export function transpose(a: ArrayLike<number>, r: number, c: number): Float64Array {
  const t = new Float64Array(r * c);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) t[j * r + i] = a[i * c + j]!;
  return t;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Infinity;
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return Number.isNaN(d) ? Infinity : d;
}
