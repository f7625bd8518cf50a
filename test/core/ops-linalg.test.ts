// mg.linalg beyond the parity cases: derivative rules (gradcheck in float64 on the CPU, every
// Jacobian entry against central differences plus the jvp/vjp identity), batching, vmap, the
// GPU-stream and dtype errors. MLX 0.32.4 has no derivative for these primitives, so the
// references are the finite differences.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { Xorshift32 } from "../fixtures/quantize/inputs.ts";
import { sliceStatic } from "../../ts/core/ops/slicing.ts";

const cpu = { stream: mg.cpu };

function rand(shape: number[], seed: number, shift = 0): MgArray {
  const r = new Xorshift32(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  const vals = Float64Array.from({ length: n }, () => r.next() / 2 ** 31 - 1);
  let a = mg.array(vals, mg.float64, { shape });
  if (shift !== 0) a = mg.add(a, mg.multiply(mg.eye(shape[shape.length - 1]!, null, 0, mg.float64), shift));
  return a;
}

/** Symmetric positive definite: B·Bᵀ + n·I. */
function spd(n: number, seed: number, batch: number[] = []): MgArray {
  const b = rand([...batch, n, n], seed);
  return mg.add(mg.matmul(b, mg.swapaxes(b, -1, -2)), mg.multiply(mg.eye(n, null, 0, mg.float64), n));
}

function check(fn: (...xs: MgArray[]) => unknown, inputs: MgArray[], opts: mg.testing.GradcheckOptions = {}): void {
  const report = mg.testing.gradcheck(fn, inputs, { stream: mg.cpu, raiseException: false, ...opts });
  expect({ ok: report.ok, message: report.message }).toEqual({ ok: true, message: report.message });
}

const sq = (x: MgArray) => mg.multiply(x, x, cpu);

describe("linalg derivatives (float64 gradcheck on the CPU)", () => {
  mg.setDefaultDevice(mg.cpu);

  test("inv, triInv (lower, upper), batched", () => {
    check((a) => mg.linalg.inv(a, cpu), [rand([3, 3], 1, 3)]);
    check((a) => mg.linalg.inv(a, cpu), [rand([2, 2, 2], 2, 2)]);
    check((a) => mg.linalg.triInv(a, cpu), [rand([4, 4], 3, 3)]);
    check((a) => mg.linalg.triInv(a, true, cpu), [rand([4, 4], 4, 3)]);
  });

  test("cholesky (lower, upper) and choleskyInv", () => {
    check((a) => mg.linalg.cholesky(a, cpu), [spd(3, 5)]);
    check((a) => mg.linalg.cholesky(a, true, cpu), [spd(4, 6)]);
    check((a) => mg.linalg.cholesky(a, cpu), [spd(2, 7, [2])]);
    check((l) => mg.linalg.choleskyInv(l, cpu), [mg.linalg.cholesky(spd(3, 8), cpu)]);
  });

  test("eigh values and vectors (both triangles), eigvalsh", () => {
    // Vectors squared: invariant under the sign each eigenvector is free to take.
    check((a) => { const [w, v] = mg.linalg.eigh(a, cpu); return [w, sq(v)]; }, [rand([3, 3], 9)]);
    check((a) => { const [w, v] = mg.linalg.eigh(a, "U", cpu); return [w, sq(v)]; }, [rand([4, 4], 10)]);
    check((a) => mg.linalg.eigvalsh(a, cpu), [rand([2, 3, 3], 11)]);
  });

  test("qr: tall, square, wide", () => {
    check((a) => mg.linalg.qr(a, cpu), [rand([4, 3], 12)]);
    check((a) => mg.linalg.qr(a, cpu), [rand([3, 3], 13)]);
    check((a) => mg.linalg.qr(a, cpu), [rand([2, 4], 14)]);
  });

  test("svd: values; vectors (squared, reduced parts) for tall, wide and square", () => {
    check((a) => mg.linalg.svd(a, false, cpu), [rand([4, 3], 15)]);
    check((a) => mg.linalg.svd(a, false, cpu), [rand([2, 5], 16)]);
    for (const [m, n, seed] of [[3, 3, 17], [4, 2, 18], [2, 4, 19]] as const) {
      const k = Math.min(m, n);
      check((a) => {
        const [u, s, vt] = mg.linalg.svd(a, cpu) as MgArray[];
        return [sq(sliceStatic(u!, [0, 0], [m, k])), s, sq(sliceStatic(vt!, [0, 0], [k, n]))];
      }, [rand([m, n], seed)]);
    }
  });

  test("lu, luFactor (square), det and slogdet on both paths, solve", () => {
    check((a) => mg.linalg.luFactor(a, cpu)[0], [rand([4, 4], 20)]);
    check((a) => mg.linalg.lu(a, cpu).slice(1), [rand([3, 3], 21)]);
    check((a) => mg.linalg.det(a, cpu), [rand([3, 3], 22)]);
    check((a) => mg.linalg.det(a, cpu), [rand([5, 5], 23, 1)]);
    check((a) => mg.linalg.slogdet(a, cpu)[1], [rand([4, 4], 24, 1)]);
    check((a, b) => mg.linalg.solve(a, b, cpu), [rand([3, 3], 25, 2), rand([3], 26)]);
    check((a, b) => mg.linalg.solve(a, b, cpu), [rand([2, 3, 3], 27, 2), rand([2, 3, 2], 28)]);
    check((a, b) => mg.linalg.solveTriangular(a, b, { upper: true, stream: mg.cpu }), [rand([3, 3], 29, 2), rand([3, 2], 30)]);
  });

  test("norm (vector, Frobenius, 2, nuc), pinv, cross", () => {
    check((a) => mg.linalg.norm(a), [rand([3, 4], 31)]);
    check((a) => mg.linalg.norm(a, 3, 1), [rand([3, 4], 32)]);
    check((a) => mg.linalg.norm(a, 2, null, false, cpu), [rand([3, 4], 33)]);
    check((a) => mg.linalg.norm(a, "nuc", null, false, cpu), [rand([4, 3], 34)]);
    check((a) => mg.linalg.pinv(a, cpu), [rand([4, 3], 35)]);
    check((a, b) => mg.linalg.cross(a, b), [rand([2, 3], 36), rand([3], 37)]);
  });
});

describe("linalg behaviour", () => {
  test("vmap over a batch axis equals the batched op", () => {
    const a = rand([3, 2, 2], 40, 2);
    const direct = mg.linalg.inv(a, cpu);
    const mapped = mg.vmap((x: MgArray) => mg.linalg.inv(x, cpu), 0)(a) as MgArray;
    expect(mg.allclose(mapped, direct, 1e-12, 1e-12).item()).toBe(true);
    const b = mg.moveaxis(rand([2, 2, 3], 41), 2, 0);
    const vals = mg.vmap((x: MgArray) => mg.linalg.eigvalsh(x, cpu), 0)(b) as MgArray;
    expect(mg.allclose(vals, mg.linalg.eigvalsh(b, cpu), 1e-12, 1e-12).item()).toBe(true);
  });

  test("batched factorizations agree matrix by matrix", () => {
    const a = rand([2, 3, 4, 4], 42);
    const [q, r] = mg.linalg.qr(a, cpu);
    expect(mg.allclose(mg.matmul(q, r), a, 1e-12, 1e-12).item()).toBe(true);
    const [u, s, vt] = mg.linalg.svd(a, cpu) as MgArray[];
    const us = mg.multiply(u!, mg.expandDims(s!, -2));
    expect(mg.allclose(mg.matmul(us, vt!), a, 1e-12, 1e-12).item()).toBe(true);
    const [w, v] = mg.linalg.eig(a, cpu);
    const av = mg.matmul(mg.astype(a, mg.complex64, cpu), v, cpu);
    const vw = mg.multiply(v, mg.expandDims(w, -2), cpu);
    expect(mg.allclose(av, vw, 1e-4, 1e-4).item()).toBe(true);
  });

  test("errors name the op: GPU stream, dtypes, shapes, singular matrices in a batch", () => {
    const a = rand([2, 2], 43, 1);
    expect(() => mg.linalg.qr(a, { stream: mg.gpu })).toThrow("[linalg.qr] This op is only supported on the CPU; use { stream: mg.cpu }.");
    expect(() => mg.linalg.det(a, { stream: mg.gpu })).toThrow("[linalg.det] This op is only supported on the CPU");
    expect(() => mg.linalg.cholesky(mg.eye(2, null, 0, mg.float16), cpu)).toThrow("[linalg.cholesky] Arrays must have type float32 or float64");
    expect(() => mg.linalg.eigh(mg.zeros([2, 3]), cpu)).toThrow("[linalg.eigh] Only defined for square matrices");
    expect(() => mg.linalg.svd(a, true, { bogus: 1 } as never)).toThrow("[linalg.svd] unknown option 'bogus'. Accepted options: 'computeUv', 'stream'.");
    const batch = mg.stack([mg.eye(2, null, 0, mg.float64), mg.zeros([2, 2], mg.float64)]);
    expect(() => mg.linalg.inv(batch, cpu).tolist()).toThrow("(matrix 1 of the batch)");
  });

  test("norm and cross run on the GPU", () => {
    const x = mg.array([[3, 4], [6, 8]], mg.float32);
    expect(mg.linalg.norm(x, null, 1, false, { stream: mg.gpu }).tolist()).toEqual([5, 10]);
    expect(mg.linalg.cross(mg.array([1, 0, 0], mg.float32), mg.array([0, 1, 0], mg.float32), { stream: mg.gpu }).tolist()).toEqual([0, 0, 1]);
  });
});
