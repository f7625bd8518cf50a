// LU, triangular/general inverses, Cholesky and QR against MLX 0.32.4's float64 results
// (test/fixtures/linalg/cases.json, scripts/linalg-fixtures.py) and their defining identities.
import { describe, expect, test } from "bun:test";
import { cholesky, householderQr, inverse, LinalgError, luFactor, permutationFromPivots, triInverse } from "../../../../ts/backend/cpu/linalg/factor.ts";
import { fixture, matmul, maxAbsDiff, transpose } from "./helpers.ts";

describe(`factorizations against MLX ${fixture.mlx}`, () => {
  for (const c of fixture.cases) {
    const { m, n } = c;
    test(`${m}x${n}`, () => {
      const { lu, pivots, info } = luFactor(c.a, m, n);
      expect(info).toBe(0);
      expect(Array.from(pivots)).toEqual(c.pivots);
      expect(maxAbsDiff(lu, c.lu.flat())).toBeLessThan(1e-9);
      // P·A = L·U
      const k = Math.min(m, n);
      const L = new Float64Array(m * k), U = new Float64Array(k * n);
      for (let i = 0; i < m; i++) for (let j = 0; j < k; j++) L[i * k + j] = i === j ? 1 : i > j ? lu[i * n + j]! : 0;
      for (let i = 0; i < k; i++) for (let j = i; j < n; j++) U[i * n + j] = lu[i * n + j]!;
      const perm = permutationFromPivots(pivots, m);
      const pa = new Float64Array(m * n);
      for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) pa[i * n + j] = c.a[perm[i]! * n + j]!;
      expect(maxAbsDiff(matmul(L, U, m, k, n), pa)).toBeLessThan(1e-12);

      const { q, r } = householderQr(c.a, m, n);
      expect(maxAbsDiff(q, c.q.flat())).toBeLessThan(1e-9);
      expect(maxAbsDiff(r, c.r.flat())).toBeLessThan(1e-9);
      expect(maxAbsDiff(matmul(q, r, m, k, n), c.a)).toBeLessThan(1e-12);
      expect(maxAbsDiff(matmul(transpose(q, m, k), q, k, m, k), identity(k))).toBeLessThan(1e-13);

      if (m === n) {
        expect(maxAbsDiff(cholesky(c.spd!, n, false), c.chol_l!.flat())).toBeLessThan(1e-10);
        expect(maxAbsDiff(cholesky(c.spd!, n, true), c.chol_u!.flat())).toBeLessThan(1e-10);
        const scale = Math.max(1, ...c.inv!.flat().map(Math.abs));
        expect(maxAbsDiff(inverse(c.a, n), c.inv!.flat()) / scale).toBeLessThan(1e-9);
        const tl = c.tri_inv_l!.flat(), tu = c.tri_inv_u!.flat();
        expect(maxAbsDiff(triInverse(c.a, n, false), tl) / Math.max(1, ...tl.map(Math.abs))).toBeLessThan(1e-9);
        expect(maxAbsDiff(triInverse(c.a, n, true), tu) / Math.max(1, ...tu.map(Math.abs))).toBeLessThan(1e-9);
      }
    });
  }
});

function identity(n: number): Float64Array {
  const x = new Float64Array(n * n);
  for (let i = 0; i < n; i++) x[i * n + i] = 1;
  return x;
}

describe("LAPACK conventions", () => {
  test("a zero pivot is reported (1-based) and elimination goes on", () => {
    const { info, pivots } = luFactor([0, 1, 0, 2], 2, 2);
    expect(info).toBe(1);
    expect(Array.from(pivots)).toEqual([0, 1]);
    expect(() => inverse([1, 2, 2, 4], 2)).toThrow(LinalgError);
    expect(() => triInverse([1, 0, 5, 0], 2, false)).toThrow(/diagonal entry 2/);
  });

  test("Cholesky of an indefinite matrix stops like potrf (MLX's [[1,0],[2,-3]])", () => {
    expect(Array.from(cholesky([1, 2, 2, 1], 2, false))).toEqual([1, 0, 2, -3]);
    // Only the requested triangle is read.
    expect(Array.from(cholesky([4, 99, 2, 3], 2, false))).toEqual([2, 0, 1, Math.SQRT2]);
    expect(Array.from(cholesky([4, 2, 99, 3], 2, true))).toEqual([2, 1, 0, Math.SQRT2]);
  });

  test("QR of a matrix with a zero column keeps H = I for it (tau = 0)", () => {
    const { q, r } = householderQr([0, 1, 0, 2, 0, 3], 3, 2);
    expect(maxAbsDiff(matmul(q, r, 3, 2, 2), [0, 1, 0, 2, 0, 3])).toBeLessThan(1e-15);
  });
});
