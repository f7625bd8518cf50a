// SVD, symmetric and general eigendecompositions: values against MLX 0.32.4 (float64), vectors
// by their defining identities (they are unique only up to sign or phase).
import { describe, expect, test } from "bun:test";
import { eigComplex, eighJacobi, eighJacobiComplex, eigGeneral, svd, svdComplex } from "../../../../ts/backend/cpu/linalg/spectral.ts";
import { LinalgError } from "../../../../ts/backend/cpu/linalg/factor.ts";
import { fixture, matmul, maxAbsDiff, transpose } from "./helpers.ts";
import { Xorshift32 } from "../../../fixtures/quantize/inputs.ts";

function identity(n: number): Float64Array {
  const x = new Float64Array(n * n);
  for (let i = 0; i < n; i++) x[i * n + i] = 1;
  return x;
}

function checkSvd(a: ArrayLike<number>, m: number, n: number, tol: number): Float64Array {
  const { u, s, vt } = svd(a, m, n, true);
  const k = Math.min(m, n);
  expect(maxAbsDiff(matmul(transpose(u!, m, m), u!, m, m, m), identity(m))).toBeLessThan(tol);
  expect(maxAbsDiff(matmul(vt!, transpose(vt!, n, n), n, n, n), identity(n))).toBeLessThan(tol);
  const us = new Float64Array(m * n);
  for (let i = 0; i < m; i++) for (let j = 0; j < k; j++) us[i * n + j] = u![i * m + j]! * s[j]!;
  expect(maxAbsDiff(matmul(us, vt!, m, n, n), a)).toBeLessThan(tol * Math.max(1, s[0] ?? 0));
  for (let j = 1; j < k; j++) expect(s[j]!).toBeLessThanOrEqual(s[j - 1]!);
  expect(Array.from(svd(a, m, n, false).s)).toEqual(Array.from(s));
  return s;
}

describe(`against MLX ${fixture.mlx}`, () => {
  for (const c of fixture.cases) {
    test(`${c.m}x${c.n}`, () => {
      const s = checkSvd(c.a, c.m, c.n, 1e-12);
      expect(maxAbsDiff(s, c.sv)).toBeLessThan(1e-10 * Math.max(1, c.sv[0]!));
      if (c.m !== c.n) return;
      const n = c.n;
      for (const uplo of ["L", "U"] as const) {
        const { w, v } = eighJacobi(c.a, n, uplo, true);
        expect(maxAbsDiff(w, uplo === "L" ? c.eigvalsh_l! : c.eigvalsh_u!)).toBeLessThan(1e-10);
        // S·V = V·diag(w) for the symmetric matrix the triangle defines
        const sym = new Float64Array(n * n);
        for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) sym[i * n + j] = (uplo === "L") === i >= j ? c.a[i * n + j]! : c.a[j * n + i]!;
        const vw = v!.map((x, idx) => x * w[idx % n]!);
        expect(maxAbsDiff(matmul(sym, v!, n, n, n), vw)).toBeLessThan(1e-11);
        expect(maxAbsDiff(matmul(transpose(v!, n, n), v!, n, n, n), identity(n))).toBeLessThan(1e-12);
      }
      const { wr, wi, vr, vi } = eigGeneral(c.a, n, true);
      // Eigenvalues as a multiset: match each of MLX's to the nearest unused one of ours.
      const used = new Set<number>();
      for (const [er, ei] of c.eigvals!) {
        let best = -1, bd = Infinity;
        for (let j = 0; j < n; j++) {
          if (used.has(j)) continue;
          const d = Math.hypot(wr[j]! - er, wi[j]! - ei);
          if (d < bd) (bd = d), (best = j);
        }
        used.add(best);
        // MLX returns complex64 even for float64 input: its values carry float32 rounding.
        expect(bd).toBeLessThan(2e-6 * Math.max(1, Math.hypot(er, ei)));
      }
      // A·v = λ·v, ‖v‖ = 1, the largest component real
      for (let j = 0; j < n; j++) {
        let nrm = 0, big = -1, bigIm = 0;
        for (let i = 0; i < n; i++) {
          let sr = 0, si = 0;
          for (let k = 0; k < n; k++) (sr += c.a[i * n + k]! * vr![k * n + j]!), (si += c.a[i * n + k]! * vi![k * n + j]!);
          const lr = wr[j]! * vr![i * n + j]! - wi[j]! * vi![i * n + j]!;
          const li = wr[j]! * vi![i * n + j]! + wi[j]! * vr![i * n + j]!;
          expect(Math.hypot(sr - lr, si - li)).toBeLessThan(1e-10 * Math.max(1, Math.hypot(wr[j]!, wi[j]!)));
          const mod = vr![i * n + j]! ** 2 + vi![i * n + j]! ** 2;
          nrm += mod;
          if (mod > big + 1e-12) (big = mod), (bigIm = vi![i * n + j]!);
        }
        expect(Math.abs(nrm - 1)).toBeLessThan(1e-12);
        expect(Math.abs(bigIm)).toBeLessThan(1e-12);
      }
    });
  }
});

describe("edge cases", () => {
  test("rank-deficient and zero matrices complete U to an orthonormal basis", () => {
    checkSvd([1, 2, 2, 4, 3, 6], 3, 2, 1e-13);
    checkSvd(new Float64Array(12), 4, 3, 1e-15);
    checkSvd(new Float64Array(12), 3, 4, 1e-15);
    checkSvd([0, 0, 0, 0, 0, 5], 2, 3, 1e-15);
  });

  test("random shapes up to 24", () => {
    const r = new Xorshift32(9);
    for (const [m, n] of [[24, 24], [24, 7], [7, 24], [1, 9], [9, 1], [13, 12]] as const) {
      const a = Float64Array.from({ length: m * n }, () => r.next() / 2 ** 31 - 1);
      checkSvd(a, m, n, 1e-12);
    }
  });

  test("eig of a rotation, a defective matrix, repeated eigenvalues", () => {
    const rot = eigGeneral([0, 1, -1, 0], 2, true);
    expect(Array.from(rot.wr).map((x) => x + 0)).toEqual([0, 0]);
    expect(Array.from(rot.wi).sort()).toEqual([-1, 1]);
    const jordan = eigGeneral([2, 1, 0, 2], 2, false);
    expect(Array.from(jordan.wr)).toEqual([2, 2]);
    const diag = eigGeneral([3, 0, 0, 0, 1, 0, 0, 0, 3], 3, true);
    expect(Array.from(diag.wr).sort()).toEqual([1, 3, 3]);
    // A companion matrix with roots 1, 2, 3, 4 (x⁴ − 10x³ + 35x² − 50x + 24)
    const comp = eigGeneral([10, -35, 50, -24, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0], 4, true);
    expect(Array.from(comp.wr).sort().map((x) => Math.round(x * 1e9) / 1e9)).toEqual([1, 2, 3, 4]);
  });

  test("non-finite input is a LinalgError, not a hang", () => {
    expect(() => svd([NaN, 1, 2, 3], 2, 2, true)).toThrow(LinalgError);
    expect(() => eighJacobi([Infinity, 1, 1, 3], 2, "L", true)).toThrow(LinalgError);
    expect(() => eigGeneral([NaN, 1, 1, 3], 2, true)).toThrow(LinalgError);
  });
});

describe("complex (Hermitian) variants", () => {
  const r = new Xorshift32(77);
  const rnd = (n: number) => Float64Array.from({ length: n }, () => r.next() / 2 ** 31 - 1);

  /** (A·B) for split complex row-major matrices. */
  function cmm(ar: Float64Array, ai: Float64Array, br: Float64Array, bi: Float64Array, m: number, k: number, n: number): [Float64Array, Float64Array] {
    const cr = new Float64Array(m * n), ci = new Float64Array(m * n);
    for (let i = 0; i < m; i++) for (let p = 0; p < k; p++) for (let j = 0; j < n; j++) {
      cr[i * n + j]! += ar[i * k + p]! * br[p * n + j]! - ai[i * k + p]! * bi[p * n + j]!;
      ci[i * n + j]! += ar[i * k + p]! * bi[p * n + j]! + ai[i * k + p]! * br[p * n + j]!;
    }
    return [cr, ci];
  }
  const ct = (re: Float64Array, im: Float64Array, r0: number, c0: number): [Float64Array, Float64Array] => [transpose(re, r0, c0), transpose(im, r0, c0).map((v) => -v)];

  test("svdComplex: U·S·Vᴴ = A with unitary U and Vᴴ (tall, wide, square, rank-deficient)", () => {
    for (const [m, n] of [[4, 3], [3, 5], [4, 4], [1, 3]] as const) {
      const ar = rnd(m * n), ai = rnd(m * n);
      if (m === 4 && n === 4) for (let i = 0; i < 4; i++) (ar[i * 4 + 3] = 2 * ar[i * 4]!), (ai[i * 4 + 3] = 2 * ai[i * 4]!);
      const { uRe, uIm, s, vtRe, vtIm } = svdComplex(ar, ai, m, n, true);
      const k = Math.min(m, n);
      const usr = new Float64Array(m * n), usi = new Float64Array(m * n);
      for (let i = 0; i < m; i++) for (let j = 0; j < k; j++) (usr[i * n + j] = uRe![i * m + j]! * s[j]!), (usi[i * n + j] = uIm![i * m + j]! * s[j]!);
      const [rr, ri] = cmm(usr, usi, vtRe!, vtIm!, m, n, n);
      expect(maxAbsDiff(rr, ar)).toBeLessThan(1e-12);
      expect(maxAbsDiff(ri, ai)).toBeLessThan(1e-12);
      const [uhr, uhi] = ct(uRe!, uIm!, m, m);
      const [er, ei] = cmm(uhr, uhi, uRe!, uIm!, m, m, m);
      expect(maxAbsDiff(er, identity(m))).toBeLessThan(1e-12);
      expect(maxAbsDiff(ei, new Float64Array(m * m))).toBeLessThan(1e-12);
      const [vr, vi] = ct(vtRe!, vtIm!, n, n);
      const [fr, fi] = cmm(vtRe!, vtIm!, vr, vi, n, n, n);
      expect(maxAbsDiff(fr, identity(n))).toBeLessThan(1e-12);
      expect(maxAbsDiff(fi, new Float64Array(n * n))).toBeLessThan(1e-12);
    }
  });

  test("eighJacobiComplex: A·V = V·diag(w) for the Hermitian matrix of either triangle", () => {
    for (const n of [1, 2, 5]) {
      for (const uplo of ["L", "U"] as const) {
        const ar = rnd(n * n), ai = rnd(n * n);
        const { w, vRe, vIm } = eighJacobiComplex(ar, ai, n, uplo, true);
        const hr = new Float64Array(n * n), hi = new Float64Array(n * n);
        for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
          const lowerHalf = (uplo === "L") === i >= j;
          const [si, sj] = lowerHalf ? [i, j] : [j, i];
          hr[i * n + j] = ar[si * n + sj]!;
          hi[i * n + j] = i === j ? 0 : lowerHalf ? ai[si * n + sj]! : -ai[si * n + sj]!;
        }
        const [avr, avi] = cmm(hr, hi, vRe!, vIm!, n, n, n);
        const vwr = vRe!.map((v, idx) => v * w[idx % n]!), vwi = vIm!.map((v, idx) => v * w[idx % n]!);
        expect(maxAbsDiff(avr, vwr)).toBeLessThan(1e-12);
        expect(maxAbsDiff(avi, vwi)).toBeLessThan(1e-12);
        for (let j = 1; j < n; j++) expect(w[j]!).toBeGreaterThanOrEqual(w[j - 1]!);
      }
    }
  });
});

describe("complex general eigenproblem", () => {
  const r = new Xorshift32(99);
  const rnd = (n: number) => Float64Array.from({ length: n }, () => r.next() / 2 ** 31 - 1);
  test("eigComplex: A·v = λ·v, unit vectors with their largest component real", () => {
    for (const n of [1, 2, 3, 6, 12]) {
      const ar = rnd(n * n), ai = rnd(n * n);
      const { wr, wi, vr, vi } = eigComplex(ar, ai, n, true);
      for (let k = 0; k < n; k++) {
        let nrm = 0, big = -1, bigIm = 0;
        for (let i = 0; i < n; i++) {
          let sr = 0, si = 0;
          for (let j = 0; j < n; j++) {
            sr += ar[i * n + j]! * vr![j * n + k]! - ai[i * n + j]! * vi![j * n + k]!;
            si += ar[i * n + j]! * vi![j * n + k]! + ai[i * n + j]! * vr![j * n + k]!;
          }
          const lr = wr[k]! * vr![i * n + k]! - wi[k]! * vi![i * n + k]!;
          const li = wr[k]! * vi![i * n + k]! + wi[k]! * vr![i * n + k]!;
          expect(Math.hypot(sr - lr, si - li)).toBeLessThan(1e-10);
          const mod = vr![i * n + k]! ** 2 + vi![i * n + k]! ** 2;
          nrm += mod;
          if (mod > big + 1e-12) (big = mod), (bigIm = vi![i * n + k]!);
        }
        expect(Math.abs(nrm - 1)).toBeLessThan(1e-12);
        expect(Math.abs(bigIm)).toBeLessThan(1e-12);
      }
      // Σλ = trace
      let tr = 0, ti = 0;
      for (let i = 0; i < n; i++) (tr += ar[i * n + i]!), (ti += ai[i * n + i]!);
      expect(Math.abs(wr.reduce((a, b) => a + b, 0) - tr)).toBeLessThan(1e-10);
      expect(Math.abs(wi.reduce((a, b) => a + b, 0) - ti)).toBeLessThan(1e-10);
    }
  });

  test("real input through the complex path agrees with the real algorithm", () => {
    const n = 5;
    const a = rnd(n * n);
    const c = eigComplex(a, new Float64Array(n * n), n, false);
    const g = eigGeneral(a, n, false);
    const key = (re: ArrayLike<number>, im: ArrayLike<number>) => Array.from(re, (v, i) => [Math.round(v * 1e8) / 1e8, Math.round(im[i]! * 1e8) / 1e8 + 0].join()).sort();
    expect(key(c.wr, c.wi)).toEqual(key(g.wr, g.wi));
  });
});
