// The native factorizations (Sources/MGCpu/linalg.cpp, bound in ts/backend/cpu/native/linalg.ts)
// against the TypeScript reference (ts/backend/cpu/linalg/factor.ts), whose algorithms they carry
// over with every element's sums in the same order: LU (square, tall, wide), inverses (general and
// triangular), Cholesky (including a stopped factorization), QR, the one-sided Jacobi SVD and the
// Jacobi eigh (ts/backend/cpu/linalg/spectral.ts), and the ops built on them, in float32 and
// float64, batched and strided; singular or non-finite matrices raise the reference's errors.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../../ts/index.ts";
import type { MgArray } from "../../../../ts/core/array.ts";
import { accumulationTolerance } from "../../../../ts/testing/tolerances.ts";
import { both, compare, expectClose, expectExact, expectThreadIndependent, kernelsOf, onReference, S, uniform } from "./harness.ts";

const exact = (got: MgArray, want: MgArray, what: string) => expectExact(got, want, what);
// ops composed with a matmul: the native GEMM accumulates float32 in float32 (the reference in float64)
const close = (got: MgArray, want: MgArray, what: string) => expectClose(got, want, accumulationTolerance(got.dtype, 81), what);

describe("native factorizations = reference", () => {
  for (const dtype of [mg.float32, mg.float64]) {
    test(`${dtype.name}: lu, inv, tri_inv, cholesky, qr and the ops built on them, batched and strided`, () => {
      const a = onReference(() => mg.astype(uniform([3, 9, 9], 1, mg.float32, 2), dtype, S));
      const at = onReference(() => mg.swapaxes(a, -1, -2, S));
      const tall = onReference(() => mg.astype(uniform([2, 7, 5], 2), dtype, S));
      const wide = onReference(() => mg.astype(uniform([5, 8], 3), dtype, S));
      const spd = onReference(() => mg.add(mg.matmul(a, at, S), mg.multiply(mg.eye(9, null, 0, dtype, S), 9, S), S));
      const rhs = onReference(() => mg.astype(uniform([3, 9, 2], 4), dtype, S));
      compare(both(() => [...mg.linalg.luFactor(a, S), ...mg.linalg.luFactor(tall, S), ...mg.linalg.luFactor(wide, S), ...mg.linalg.lu(at, S)]), `${dtype.name} lu`, exact);
      compare(both(() => [mg.linalg.inv(a, S), mg.linalg.inv(at, S), mg.linalg.triInv(a, false, S), mg.linalg.triInv(at, true, S)]), `${dtype.name} inverses`, exact);
      // a is not positive definite: potrf stops at the first non-positive pivot, as the reference
      compare(both(() => [mg.linalg.cholesky(spd, false, S), mg.linalg.cholesky(spd, true, S), mg.linalg.cholesky(a, false, S)]), `${dtype.name} cholesky`, exact);
      compare(both(() => [...mg.linalg.qr(a, S), ...mg.linalg.qr(tall, S), ...mg.linalg.qr(wide, S), ...mg.linalg.qr(at, S)]), `${dtype.name} qr`, exact);
      const svd = (x: MgArray, uv: boolean) => mg.linalg.svd(x, uv, S) as unknown as MgArray[];
      const rankOne = onReference(() => mg.ones([6, 4], dtype, S));
      compare(both(() => [...svd(a, true), ...svd(tall, true), ...svd(wide, true), ...svd(wide, false), ...svd(rankOne, true)]), `${dtype.name} svd`, exact);
      compare(both(() => [...mg.linalg.eigh(spd, "L", S), ...mg.linalg.eigh(a, "U", S), mg.linalg.eigvalsh(at, "L", S)]), `${dtype.name} eigh`, exact);
      compare(both(() => [mg.linalg.solve(a, rhs, S), mg.linalg.solveTriangular(a, rhs, { upper: true, stream: mg.cpu }), mg.linalg.choleskyInv(mg.linalg.cholesky(spd, false, S), false, S)]), `${dtype.name} solves`, close);
      compare(both(() => [mg.linalg.det(a, S), ...mg.linalg.slogdet(a, S)]), `${dtype.name} determinants`, close);
    });

    test(`${dtype.name}: singular matrices and special values`, () => {
      const zeros = onReference(() => mg.zeros([2, 3, 3], dtype, S));
      compare(both(() => [mg.linalg.inv(zeros, S)]), "singular inverse", exact, true);
      compare(both(() => [mg.linalg.triInv(zeros, false, S)]), "zero diagonal", exact, true);
      const nan = mg.array([[NaN, 1], [1, 1]], dtype);
      compare(both(() => [...(mg.linalg.svd(nan, true, S) as unknown as MgArray[])]), "svd of NaN", exact, true);
      compare(both(() => [...mg.linalg.eigh(nan, "L", S)]), "eigh of NaN", exact, true);
      compare(both(() => [...mg.linalg.luFactor(zeros, S)]), "lu of zeros (info, no error)", exact);
      const special = mg.array([[NaN, 1], [2, Infinity]], dtype);
      compare(both(() => [mg.linalg.inv(special, S), ...mg.linalg.qr(mg.array([[0, 1], [0, 2], [0, 3]], dtype), S)]), "special values", exact);
    });
  }

  test("the trace names the native kernels", () => {
    const a = uniform([4, 4], 11, mg.float32);
    expect(kernelsOf(() => mg.linalg.inv(a, S))).toContain("cpu-native:Inverse");
    expect(kernelsOf(() => mg.linalg.qr(a, S))).toContain("cpu-native:QRF");
  });

  test("1 thread and 4 threads give the same bits", () => {
    const a = uniform([16, 40, 40], 12, mg.float64);
    expectThreadIndependent(() => [mg.linalg.inv(a, S), ...mg.linalg.qr(a, S), ...mg.linalg.luFactor(a, S), ...mg.linalg.eigh(a, "L", S)], "factorizations");
  });
});
