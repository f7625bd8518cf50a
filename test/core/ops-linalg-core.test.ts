import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { roundToDtype } from "../../ts/core/dtype.ts";
import { sliceStatic } from "../../ts/core/ops/slicing.ts";
import { checkVmap, expectClose, gradcheck, randomArray, values } from "./helpers/grad.ts";
import { makeArray } from "../../ts/core/graph.ts";
import { resolveStream } from "../../ts/core/device.ts";
import { AddMM, Matmul } from "../../ts/core/primitives/matmul.ts";
import { setNativeCpu } from "../../ts/backend/cpu/native/index.ts";
import { accumulationTolerance } from "../../ts/testing/tolerances.ts";

/** Runs `fn` on the TypeScript reference kernels (what the exact-rounding tests below describe). */
function onReference(fn: () => void): void {
  const prev = setNativeCpu(false);
  try {
    fn();
  } finally {
    setNativeCpu(prev);
  }
}

/** NumPy's matmul on float64 values by plain nested loops (the independent reference). */
function refMatmul(a: number[], as: number[], b: number[], bs: number[]): { v: number[]; shape: number[] } {
  const A = as.length === 1 ? [1, as[0]!] : as;
  const B = bs.length === 1 ? [bs[0]!, 1] : bs;
  const M = A[A.length - 2]!, K = A[A.length - 1]!, N = B[B.length - 1]!;
  const ba = A.slice(0, -2), bb = B.slice(0, -2);
  const nd = Math.max(ba.length, bb.length);
  const pa = [...new Array(nd - ba.length).fill(1), ...ba], pb = [...new Array(nd - bb.length).fill(1), ...bb];
  const batch = pa.map((d, i) => Math.max(d, pb[i]!));
  const count = batch.reduce((x, y) => x * y, 1);
  const out: number[] = [];
  for (let t = 0; t < count; t++) {
    // batch coordinates → offsets into a and b (size-1 dims broadcast)
    let rem = t, offA = 0, offB = 0, sa = M * K, sb = K * N;
    for (let d = nd - 1; d >= 0; d--) {
      const c = rem % batch[d]!;
      rem = Math.floor(rem / batch[d]!);
      offA += (pa[d] === 1 ? 0 : c) * sa;
      offB += (pb[d] === 1 ? 0 : c) * sb;
      sa *= pa[d]!;
      sb *= pb[d]!;
    }
    for (let i = 0; i < M; i++) {
      for (let j = 0; j < N; j++) {
        let s = 0;
        for (let k = 0; k < K; k++) s += a[offA + i * K + k]! * b[offB + k * N + j]!;
        out.push(s);
      }
    }
  }
  const shape = [...batch, ...(as.length === 1 ? [] : [M]), ...(bs.length === 1 ? [] : [N])];
  return { v: out, shape };
}

function checkMatmul(a: MgArray, b: MgArray, rtol = 1e-13): void {
  const want = refMatmul(values(a), [...a.shape], values(b), [...b.shape]);
  const got = mg.matmul(a, b);
  expect(got.shape).toEqual(want.shape);
  expectClose(values(got), want.v, rtol, 1e-13);
}

describe("matmul", () => {
  test("1-D rules: vector·matrix, matrix·vector, vector·vector", () => {
    const m = mg.array([[1, 2], [3, 4], [5, 6]], mg.float32);
    expect(mg.matmul(mg.array([1, 1, 1], mg.float32), m).tolist()).toEqual([9, 12]);
    expect(mg.matmul(m, mg.array([1, -1], mg.float32)).tolist()).toEqual([-1, -1, -1]);
    const dot = mg.matmul(mg.array([1, 2, 3], mg.float32), mg.array([4, 5, 6], mg.float32));
    expect(dot.shape).toEqual([]);
    expect(dot.item()).toBe(32);
    expect(mg.matmul(m, mg.array([[1], [2]], mg.float32)).tolist()).toEqual([[5], [11], [17]]);
    expect(m.matmul(mg.array([1, 0], mg.float32)).tolist()).toEqual([1, 3, 5]);
    // vector against a batch of matrices
    checkMatmul(randomArray([4], 1), randomArray([2, 4, 3], 2));
    checkMatmul(randomArray([2, 3, 4], 3), randomArray([4], 4));
  });

  test("batched, broadcast batch axes, and stacks against one matrix", () => {
    checkMatmul(randomArray([4, 3, 6, 5], 5), randomArray([5, 7], 6));
    checkMatmul(randomArray([6, 5], 7), randomArray([3, 5, 2], 8));
    checkMatmul(randomArray([4, 1, 3, 5], 9), randomArray([2, 5, 6], 10));
    checkMatmul(randomArray([1, 3, 5], 11), randomArray([4, 1, 5, 2], 12));
  });

  test("non-contiguous operands: transposed, sliced with steps, broadcast, negative strides", () => {
    const a = randomArray([6, 8], 13);
    const b = randomArray([8, 5], 14);
    checkMatmul(mg.transpose(randomArray([8, 6], 15)), b);
    checkMatmul(a, mg.transpose(randomArray([5, 8], 16)));
    checkMatmul(sliceStatic(randomArray([12, 8], 17), [0, 0], [12, 8], [2, 1]), sliceStatic(randomArray([8, 10], 18), [0, 1], [8, 10], [1, 2]));
    checkMatmul(mg.broadcastTo(randomArray([1, 8], 19), [6, 8]), b);
    checkMatmul(mg.broadcastTo(randomArray([1, 6, 8], 20), [3, 6, 8]), mg.swapaxes(randomArray([3, 5, 8], 21), 1, 2));
    checkMatmul(mg.flip(a, 0), mg.flip(b, 1));
  });

  test("sizes that straddle the kernel's blocks match the nested-loop reference", () => {
    checkMatmul(randomArray([37, 130], 22), randomArray([130, 600], 23), 1e-12);
    checkMatmul(randomArray([2, 3, 9, 70], 24), randomArray([70, 11], 25), 1e-12);
  });

  test("float32, float16 and bfloat16: the reference accumulates in float64 and rounds once; native GEMMs in float32", () => {
    const a64 = mg.multiply(randomArray([5, 33], 26), 3);
    const b64 = mg.multiply(randomArray([33, 4], 27), 3);
    for (const dtype of [mg.float32, mg.float16, mg.bfloat16]) {
      const a = mg.astype(a64, dtype);
      const b = mg.astype(b64, dtype);
      const exact = refMatmul(values(a), [5, 33], values(b), [33, 4]).v;
      onReference(() => {
        const r = mg.matmul(a, b);
        expect(r.dtype).toBe(dtype);
        expect(values(r)).toEqual(exact.map((x) => roundToDtype(x, dtype)));
      });
      const r = mg.matmul(a, b);
      expect(r.dtype).toBe(dtype);
      const tol = accumulationTolerance(dtype, 33);
      expectClose(values(r), exact.map((x) => roundToDtype(x, dtype)), tol.rtol * 9, tol.atol * 9);
    }
    // mixed: float16 @ float32 promotes to float32
    expect(mg.matmul(mg.ones([2, 2], mg.float16), mg.ones([2, 2], mg.float32)).dtype).toBe(mg.float32);
    expect(mg.matmul(mg.ones([2, 2], mg.bfloat16), mg.ones([2, 2], mg.float16)).dtype).toBe(mg.float32);
  });

  test("complex64", () => {
    const a = mg.array([[{ re: 1, im: 2 }, { re: 3, im: -1 }], [{ re: 0, im: 1 }, { re: 2, im: 0 }]]);
    const b = mg.array([[{ re: 2, im: 0 }], [{ re: 1, im: 1 }]]);
    // (1+2i)·2 + (3−i)(1+i) = 2+4i + 4+2i = 6+6i;  i·2 + 2(1+i) = 2+4i
    expect(mg.matmul(a, b).tolist()).toEqual([[{ re: 6, im: 6 }], [{ re: 2, im: 4 }]]);
    expect(mg.matmul(a, mg.array([1, 1], mg.float32)).tolist()).toEqual([{ re: 4, im: 1 }, { re: 2, im: 1 }]);
  });

  test("empty inner dimension gives zeros; empty outer dimensions give empty results; NaN propagates", () => {
    expect(mg.matmul(mg.zeros([2, 0]), mg.zeros([0, 3])).tolist()).toEqual([[0, 0, 0], [0, 0, 0]]);
    expect(mg.matmul(mg.zeros([0, 4]), mg.zeros([4, 3])).shape).toEqual([0, 3]);
    expect(mg.matmul(mg.zeros([5, 2, 4]), mg.zeros([4, 0])).shape).toEqual([5, 2, 0]);
    // 0·∞ is NaN even though the row is otherwise zero
    expect(values(mg.matmul(mg.array([[0, 1]], mg.float32), mg.array([[Infinity], [2]], mg.float32)))[0]).toBeNaN();
    expect(values(mg.matmul(mg.array([[NaN, 1]], mg.float32), mg.array([[0], [2]], mg.float32)))[0]).toBeNaN();
  });

  test("errors", () => {
    expect(() => mg.matmul(mg.array([[1, 2]]), mg.array([[3], [4]]))).toThrow(
      "[matmul] Only inexact types are supported but int32 and int32 were provided which results in int32, which is not a floating point type.",
    );
    expect(() => mg.matmul(mg.array(1.0), mg.ones([2]))).toThrow("[matmul] Got 0 dimension input. Inputs must have at least one dimension.");
    expect(() => mg.matmul(mg.ones([2, 3]), mg.ones([4, 5]))).toThrow(
      "[matmul] Last dimension of first input with shape (2,3) must match second to last dimension of second input with shape (4,5).",
    );
    expect(() => mg.matmul(mg.ones([3]), mg.ones([4]))).toThrow("[matmul] Last dimension of first input with shape (1,3)");
    expect(() => mg.matmul(mg.ones([2, 2, 3]), mg.ones([3, 3, 4]))).toThrow("[matmul] Shapes (2,) and (3,) cannot be broadcast.");
  });

  test("gradient dA = G·Bᵀ, dB = Aᵀ·G, with broadcast batch axes summed back", () => {
    gradcheck((a, b) => mg.matmul(a, b), [randomArray([3, 4], 30), randomArray([4, 2], 31)]);
    gradcheck((a, b) => mg.matmul(a, b), [randomArray([2, 1, 3, 4], 32), randomArray([3, 4, 2], 33)]);
    gradcheck((a, b) => mg.matmul(a, b), [randomArray([2, 3, 4], 34), randomArray([4, 2], 35)]);
    gradcheck((a, b) => mg.matmul(a, b), [randomArray([4], 36), randomArray([2, 4, 3], 37)]);
    gradcheck((a, b) => mg.matmul(a, b), [randomArray([4], 38), randomArray([4], 39)]);
    // hand-derived: for y = A·B with G = ones, dA[i,k] = Σ_j B[k,j], dB[k,j] = Σ_i A[i,k]
    const A = mg.array([[1, 2], [3, 4]], mg.float64);
    const B = mg.array([[5, 6], [7, 8]], mg.float64);
    const node = mg.matmul(A, B).node!;
    const [dA, dB] = node.primitive.vjp!(node.inputs, [mg.ones([2, 2], mg.float64)], [0, 1], node.outputs, node.params);
    expect(dA!.tolist()).toEqual([[11, 15], [11, 15]]);
    expect(dB!.tolist()).toEqual([[4, 4], [6, 6]]);
  });
});

describe("addmm", () => {
  test("beta·c + alpha·(a @ b) with c broadcast, alpha and beta as float32", () => {
    const a = randomArray([3, 4], 40), b = randomArray([4, 5], 41), c = randomArray([5], 42);
    const ab = refMatmul(values(a), [3, 4], values(b), [4, 5]).v;
    const cv = values(c);
    const alpha = Math.fround(0.1), beta = Math.fround(-2.3);
    const want = ab.map((x, i) => alpha * x + beta * cv[i % 5]!);
    const got = mg.addmm(c, a, b, 0.1, -2.3);
    expect(got.shape).toEqual([3, 5]);
    expectClose(values(got), want, 1e-14, 1e-15);
    // defaults alpha = beta = 1, batched, and a float32 result rounded once
    const a3 = mg.astype(randomArray([2, 3, 4], 43), mg.float32), b3 = mg.astype(randomArray([4, 2], 44), mg.float32);
    const c3 = mg.astype(randomArray([3, 1], 45), mg.float32);
    const r = refMatmul(values(a3), [2, 3, 4], values(b3), [4, 2]).v;
    const c3v = values(c3);
    const want3 = r.map((x, i) => Math.fround(x + c3v[Math.floor(i / 2) % 3]!));
    onReference(() => expect(values(mg.addmm(c3, a3, b3))).toEqual(want3));
    expectClose(values(mg.addmm(c3, a3, b3)), want3, 1e-6, 1e-6); // native: float32 accumulation
  });

  test("1-D operands, beta = 0 ignores NaN in c, complex via matmul + add", () => {
    const v = mg.array([1, 2], mg.float32);
    const m = mg.array([[1, 0, 1], [0, 1, 1]], mg.float32);
    expect(mg.addmm(mg.array([10, 20, 30], mg.float32), v, m).tolist()).toEqual([11, 22, 33]);
    expect(mg.addmm(mg.array(1, mg.float32), v, mg.array([3, 4], mg.float32), 2, 3).item()).toBe(25);
    expect(mg.addmm(mg.full([2], NaN), mg.array([[1, 2], [3, 4]], mg.float32), v, 1, 0).tolist()).toEqual([5, 11]);
    const z = mg.addmm(mg.array([{ re: 0, im: 1 }]), mg.array([[{ re: 1, im: 1 }]]), mg.array([[2]], mg.float32), 2, 1);
    expect(z.tolist()).toEqual([[{ re: 4, im: 5 }]]);
  });

  test("errors", () => {
    expect(() => mg.addmm(mg.zeros([2], mg.int8), mg.zeros([2, 3], mg.int32), mg.zeros([3, 2], mg.int32))).toThrow(
      "[addmm] Only real floating point types are supported but int8, int32 and int32 were provided which results in int32, which is not a real floating point type.",
    );
    // A float c makes the whole computation float (MLX's result_type of all three).
    expect(mg.addmm(mg.ones([2]), mg.ones([2, 3], mg.int32), mg.ones([3, 2], mg.int32)).tolist()).toEqual([[4, 4], [4, 4]]);
    expect(() => mg.addmm(mg.zeros([3, 3]), mg.zeros([2, 3]), mg.zeros([3, 2]))).toThrow("[addmm] input c with shape (3,3) must broadcast to the output shape (2,2).");
    expect(() => mg.addmm(mg.zeros([2]), mg.zeros([2, 3]), mg.zeros([4, 2]))).toThrow("[addmm] Last dimension of first input with shape (2,3)");
    expect(() => mg.addmm(mg.zeros([2]), mg.array(1.0), mg.zeros([4, 2]))).toThrow("[addmm] Got 0 dimension input.");
  });

  test("gradient: dA = α G·Bᵀ, dB = α Aᵀ·G, dC = β G", () => {
    gradcheck((c, a, b) => mg.addmm(c, a, b, 0.5, -1.5), [randomArray([3, 2], 50), randomArray([3, 4], 51), randomArray([4, 2], 52)]);
    gradcheck((c, a, b) => mg.addmm(c, a, b, 2, 0.25), [randomArray([2], 53), randomArray([2, 3, 4], 54), randomArray([4, 2], 55)]);
  });
});

describe("inner, outer, tensordot, vecdot", () => {
  test("tensordot with an axis count and with explicit axis lists", () => {
    const a = randomArray([3, 4, 5], 60), b = randomArray([4, 3, 2], 61);
    // axes ([1, 0], [0, 1]): out[k, l] = Σ_{i,j} a[i, j, k] b[j, i, l]
    const av = values(a), bv = values(b);
    const want: number[] = [];
    for (let k = 0; k < 5; k++) for (let l = 0; l < 2; l++) {
      let s = 0;
      for (let i = 0; i < 3; i++) for (let j = 0; j < 4; j++) s += av[i * 20 + j * 5 + k]! * bv[j * 6 + i * 2 + l]!;
      want.push(s);
    }
    const got = mg.tensordot(a, b, [[1, 0], [0, 1]]);
    expect(got.shape).toEqual([5, 2]);
    expectClose(values(got), want, 1e-13);
    // axes = 2 on (3,4,5)·(4,5,6) is a matrix product of the reshaped operands
    const c = randomArray([4, 5, 6], 62);
    expectClose(values(mg.tensordot(a, c)), refMatmul(av, [3, 20], values(c), [20, 6]).v, 1e-13);
    expectClose(values(mg.tensordot(a, c, 0)), values(mg.multiply(mg.reshape(a, [3, 4, 5, 1, 1, 1]), c)), 1e-15);
    expect(mg.tensordot(a, c, [-1, 1]).shape).toEqual([3, 4, 4, 6]);
  });

  test("tensordot errors", () => {
    const a = mg.zeros([3, 4]), b = mg.zeros([4, 3]);
    expect(() => mg.tensordot(a, b, -1)).toThrow("[tensordot] axis must be greater or equal to 0.");
    expect(() => mg.tensordot(a, b, 3)).toThrow("[tensordot] axis must be less than the number of dimensions of a and b.");
    expect(() => mg.tensordot(a, b, [[0], [0, 1]])).toThrow("[tensordot] axes must have the same size.");
    expect(() => mg.tensordot(a, b, [[0], [0]])).toThrow("[tensordot] a and b must have the same shape on the contracted axes.");
    expect(() => mg.tensordot(a, b, [[0]] as never)).toThrow("[tensordot] axes must be a list of two lists.");
  });

  test("inner over last axes, with a 0-D operand a product; outer flattens", () => {
    const a = randomArray([2, 3, 4], 63), b = randomArray([4], 64);
    expectClose(values(mg.inner(a, b)), refMatmul(values(a), [6, 4], values(b), [4]).v, 1e-13);
    expect(mg.inner(a, b).shape).toEqual([2, 3]);
    expect(mg.inner(mg.array([1, 2, 3], mg.float32), mg.array([4, 5, 6], mg.float32)).item()).toBe(32);
    expect(mg.inner(mg.array(2), mg.array([1, 2])).tolist()).toEqual([2, 4]);
    expect(mg.inner(mg.ones([1, 1, 2]), mg.ones([3, 2])).shape).toEqual([1, 1, 3]);
    expect(() => mg.inner(mg.ones([2]), mg.ones([3]))).toThrow("[inner] a and b must have the same last dimension.");
    expect(mg.outer(mg.array([1, 2, 3]), mg.array([[1, 10]])).tolist()).toEqual([[1, 10], [2, 20], [3, 30]]);
    expect(mg.outer(mg.array([{ re: 0, im: 1 }]), mg.array([2], mg.float32)).tolist()).toEqual([[{ re: 0, im: 2 }]]);
  });

  test("vecdot conjugates the first operand", () => {
    const a = mg.array([[1, 2, 3], [4, 5, 6]]);
    const b = mg.array([[7, 8, 9], [10, 11, 12]]);
    expect(mg.vecdot(a, b).tolist()).toEqual([50, 167]);
    expect(mg.vecdot(a, b, { axis: 0 }).tolist()).toEqual([47, 71, 99]);
    // vdot([1+2i, 3+4i], [5+6i, 7+8i]) = (1−2i)(5+6i) + (3−4i)(7+8i) = (17−4i) + (53−4i)
    const z = mg.vecdot(mg.array([{ re: 1, im: 2 }, { re: 3, im: 4 }]), mg.array([{ re: 5, im: 6 }, { re: 7, im: 8 }]));
    expect(z.item()).toEqual({ re: 70, im: -8 });
    expect(() => mg.vecdot(mg.array(1), mg.array([1]))).toThrow("[vecdot] inputs must be at least 1D.");
    expect(() => mg.vecdot(mg.array([1, 2]), mg.array([1, 2]), { axis: 1 })).toThrow("[vecdot] axis is out of bounds.");
    expect(() => mg.vecdot(mg.array([1, 2]), mg.array([1]))).toThrow("[vecdot] a and b must have the same size along axis.");
  });

  test("gradients through tensordot and inner", () => {
    gradcheck((a, b) => mg.tensordot(a, b, [[1, 0], [0, 1]]), [randomArray([3, 2, 2], 70), randomArray([2, 3, 2], 71)]);
    gradcheck((a, b) => mg.inner(a, b), [randomArray([2, 3], 72), randomArray([4, 3], 73)]);
  });
});

describe("vmap rules", () => {
  const mm = (a: MgArray, b: MgArray) => makeArray(Matmul, [a, b], {}, resolveStream());
  test("matmul with either or both operands batched, on any axis", () => {
    checkVmap(mm, [randomArray([4, 3, 5], 81), randomArray([5, 2], 82)], [0, -1]);
    checkVmap(mm, [randomArray([3, 5], 83), randomArray([5, 4, 2], 84)], [-1, 1]);
    checkVmap(mm, [randomArray([3, 5, 4], 85), randomArray([4, 5, 2], 86)], [2, 0]);
    checkVmap(mm, [randomArray([2, 4, 3, 5], 87), randomArray([2, 5, 1], 88)], [1, -1]);
  });
  test("addmm", () => {
    // AddMM's inputs are (a, b, c)
    const f = (a: MgArray, b: MgArray, c: MgArray) => makeArray(AddMM, [a, b, c], { alpha: 0.5, beta: 2 }, resolveStream());
    checkVmap(f, [randomArray([4, 3, 5], 90), randomArray([5, 2], 91), randomArray([3, 2], 89)], [0, -1, -1]);
    checkVmap(f, [randomArray([3, 5], 93), randomArray([5, 2], 94), randomArray([3, 2, 4], 92)], [-1, -1, 2]);
    checkVmap(f, [randomArray([3, 5], 95), randomArray([2, 5, 2], 96), randomArray([2, 3, 2], 97)], [-1, 0, 0]);
  });
});

describe("properties (fast-check)", () => {
  test("matmul equals the nested-loop reference for random ranks, sizes and broadcastable batches", () => {
    const dim = fc.integer({ min: 1, max: 5 });
    const batch = fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 2 });
    fc.assert(
      fc.property(dim, dim, dim, batch, batch, fc.integer({ min: 1, max: 1000 }), fc.boolean(), fc.boolean(), (m, k, n, ba, bb, seed, vecA, vecB) => {
        // make the batch shapes broadcastable: where both have an axis, one of them is 1 or they agree
        const nb = Math.min(ba.length, bb.length);
        for (let i = 1; i <= nb; i++) if (ba[ba.length - i] !== bb[bb.length - i]) bb[bb.length - i] = 1;
        const sa = vecA ? [k] : [...ba, m, k];
        const sb = vecB ? [k] : [...bb, k, n];
        checkMatmul(randomArray(sa, seed), randomArray(sb, seed + 1));
      }),
      { numRuns: 60 },
    );
  });
});
