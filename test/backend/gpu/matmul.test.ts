// Matmul and AddMM on the GPU device (the Metal simulator here) against float64 products computed
// on the CPU device from the same (already rounded) inputs, with the path each case takes read
// from the kernel trace: gemv, gemm (simdgroup-matrix tiles), split-k, complex.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import type { TraceRecord } from "../../../ts/core/trace.ts";
import { sliceStatic } from "../../../ts/core/ops/slicing.ts";
import { expectClose, GPU_FLOAT_DTYPES, gpuLacks, input, runOn } from "./harness.ts";

// The GEMM kernels are built on simdgroup matrices.
const describeGemm = gpuLacks("simdgroupMatrix", "GPU matmul tests") ? describe.skip : describe;

/** Unit roundoff of one rounding into the dtype. */
const ROUNDOFF = new Map<mg.Dtype, number>([
  [mg.float32, 2 ** -24],
  [mg.float16, 2 ** -11],
  [mg.bfloat16, 2 ** -8],
]);

function cpu<T>(fn: () => T): T {
  const r = mg.stream(mg.cpu, fn);
  mg.eval(r as never);
  return r;
}

/**
 * Asserts a GPU product equals the float64 one within what float32 accumulation over K terms and
 * one rounding to the dtype allow, elementwise:
 *   |gpu − ref| ≤ u_dtype·|ref| + 4·√K·u_fp32·(|A|·|B|)
 * (the probabilistic bound of inner products, Higham & Mary 2019, with λ = 4). One lost or
 * wrong product term breaks it by orders of magnitude. `expected` builds the product from float64
 * operands (`abs` says whether they are to be taken in absolute value).
 */
function expectProductClose(gpu: MgArray, expected: (abs: boolean) => MgArray, K: number, what: string): void {
  const ref = cpu(() => expected(false));
  const mag = cpu(() => expected(true));
  expect(gpu.shape, `${what} shape`).toEqual(ref.shape);
  const u = ROUNDOFF.get(gpu.dtype)!;
  const g = cpu(() => mg.astype(gpu, mg.float64)).dataSync() as Float64Array;
  const r = ref.dataSync() as Float64Array;
  const m = mag.dataSync() as Float64Array;
  const lambda = 4 * Math.sqrt(Math.max(K, 1)) * 2 ** -24;
  for (let i = 0; i < r.length; i++) {
    const bound = u * Math.abs(r[i]!) + lambda * m[i]! + 1e-30;
    if (!(Math.abs(g[i]! - r[i]!) <= bound)) {
      throw new Error(`${what}: element ${i}: gpu ${g[i]} vs float64 ${r[i]} (|diff| ${Math.abs(g[i]! - r[i]!)} > bound ${bound})`);
    }
  }
}

const f64 = (x: MgArray, abs: boolean) => (abs ? mg.abs(mg.astype(x, mg.float64)) : mg.astype(x, mg.float64));

/** matmul(a, b) on the GPU with its trace, checked against the float64 product. */
function checkMatmul(a: MgArray, b: MgArray, what: string): TraceRecord[] {
  let out!: MgArray;
  const records = mg.trace(() => (out = mg.stream(mg.gpu, () => mg.matmul(a, b))));
  const K = a.shape[a.ndim - 1]!;
  expectProductClose(out, (abs) => mg.matmul(f64(a, abs), f64(b, abs)), K, what);
  return records;
}

const TAG = new Map<mg.Dtype, string>([[mg.float32, "f32"], [mg.float16, "f16"], [mg.bfloat16, "bf16"]]);
const products = (records: TraceRecord[]) => records.filter((r) => r.primitives.includes("Matmul") || r.primitives.includes("AddMM"));
const precisionOf = (d: mg.Dtype) =>
  d === mg.float32 ? "IEEE fp32" : d === mg.float16 ? "fp32 accumulate over fp16 operands" : "fp32 accumulate over bf16 operands";

describeGemm("the issue's shapes on every GPU float dtype", () => {
  // [label, a's shape, b's shape, expected path, kernel-name pattern]
  const cases: [string, number[], number[], string, RegExp][] = [
    ["1×K×N", [1, 300], [300, 70], "gemv", /^mg_gemv_t_\w+_bn32_sk4$/],
    ["M×K×1", [70, 300], [300, 1], "gemv", /^mg_gemv_\w+_bm4$/],
    ["33×65×17", [33, 65], [65, 17], "gemm", /^mg_gemm_nn_\w+_bm32_bn32_bk16_wm2_wn2$/],
    ["128×512×64", [128, 512], [512, 64], "gemm", /^mg_gemm_nn_\w+_bm32_bn32_bk16_wm2_wn2$/],
    ["batched 4×3×64×48 @ 48×80", [4, 3, 64, 48], [48, 80], "gemm", /^mg_gemm_nn_\w+_bm32_bn32_bk16_wm2_wn2$/],
    ["long-K 16×4096×16", [16, 4096], [4096, 16], "split-k", /^mg_gemm_splitk_nn_\w+_bm16_bn16_bk16_wm2_wn2$/],
  ];
  for (const dtype of GPU_FLOAT_DTYPES) {
    test(dtype.name, () => {
      cases.forEach(([label, sa, sb, path, kernel], i) => {
        const a = input(sa, dtype, 10 + i);
        const b = input(sb, dtype, 20 + i);
        const records = products(checkMatmul(a, b, `${label} ${dtype.name}`));
        expect(records[0]!.layout, label).toBe(path);
        expect(records[0]!.kernel, label).toMatch(kernel);
        expect(records[0]!.kernel, label).toContain(`_${TAG.get(dtype)}_`);
        for (const r of records) {
          expect(r.precision).toBe(precisionOf(dtype));
          expect(r.device).toBe("gpu");
        }
        if (path === "split-k") {
          expect(records.map((r) => r.layout)).toEqual(["split-k", "split-k reduce"]);
          expect(records[1]!.kernel).toMatch(/^mg_gemm_splitk_reduce_/);
          expect(records[0]!.notes.join()).toContain("K = 4096 in 16 partitions of 256");
        } else {
          expect(records.length).toBe(1);
        }
        expect(records.flatMap((r) => r.notes).some((n) => n.startsWith("copy"))).toBe(false);
      });
    });
  }
});

describeGemm("operand layouts", () => {
  test("transposed operands are read in place (no copy) on gemm, split-k and gemv", () => {
    const dtype = mg.float32;
    const at = input([45, 37], dtype, 1); // aᵀ: a is 37×45, column-major
    const bt = input([29, 45], dtype, 2); // bᵀ: b is 45×29, column-major
    const a = input([37, 45], dtype, 3);
    const b = input([45, 29], dtype, 4);
    const T = (x: MgArray) => mg.swapaxes(x, -1, -2);
    for (const [mode, x, y] of [["tn", T(at), b], ["nt", a, T(bt)], ["tt", T(at), T(bt)]] as const) {
      const recs = checkMatmul(cpu(() => x), cpu(() => y), `gemm ${mode}`);
      expect(recs.length, mode).toBe(1);
      expect(recs[0]!.kernel).toStartWith(`mg_gemm_${mode}_f32_`);
      expect(recs[0]!.notes).toEqual([]);
    }
    // split-k with both operands transposed
    const kt = input([16, 2048], dtype, 5);
    const kb = input([24, 2048], dtype, 6);
    const recs = checkMatmul(cpu(() => T(input([2048, 16], dtype, 7))), cpu(() => T(kb)), "split-k tt");
    expect(recs.map((r) => r.kernel)).toEqual(["mg_gemm_splitk_tt_f32_bm16_bn32_bk16_wm2_wn2", "mg_gemm_splitk_reduce_f32"]);
    // gemv over a transposed matrix: x·Bᵀ with B row-major reads B along K (the gemv kernel)
    const v = input([1, 2048], dtype, 8);
    const g1 = checkMatmul(v, cpu(() => T(kb)), "gemv x·Bᵀ");
    expect(g1.map((r) => r.kernel)).toEqual(["mg_gemv_f32_bm4"]);
    // and Aᵀ·x with A row-major runs along the outputs (gemv_t)
    const g2 = checkMatmul(cpu(() => T(kt)), input([16, 1], dtype, 9), "gemv Aᵀ·x");
    expect(g2.map((r) => r.kernel)).toEqual(["mg_gemv_t_f32_bn32_sk4"]);
    expect([...g1, ...g2].flatMap((r) => r.notes)).toEqual([]);
  });

  test("a reversed row axis (negative leading stride) and a column slice are read in place", () => {
    const a = input([40, 33], mg.float32, 11);
    const b = input([33, 50], mg.float32, 12);
    const flipped = cpu(() => mg.flip(a, 0));
    const recs = checkMatmul(flipped, b, "flipped rows");
    expect(recs.length).toBe(1);
    expect(recs[0]!.notes).toEqual([]);
    const wide = input([66, 50], mg.float32, 13);
    const cols = cpu(() => sliceStatic(wide, [10, 5], [43, 45], [1, 1])); // 33×40, row stride 50
    expect(products(checkMatmul(a, cols, "column slice"))[0]!.notes).toEqual([]);
  });

  test("an operand neither row- nor column-major is copied once, and the trace says so", () => {
    const wide = input([30, 84], mg.float32, 14);
    const stepped = cpu(() => sliceStatic(wide, [0, 0], [30, 84], [1, 2])); // 30×42, column stride 2
    const b = input([42, 20], mg.float32, 15);
    const recs = checkMatmul(stepped, b, "stepped columns");
    expect(recs.map((r) => r.layout)).toEqual(["strided", "gemm"]);
    expect(recs[0]!.primitives).toEqual(["Matmul"]);
    expect(recs[0]!.notes.join()).toMatch(/^copy: matmul operand A .* neither row- nor column-major/);
    expect(recs[1]!.notes.join()).toContain("A read from a row-contiguous copy");
    // A broadcast batch of such a matrix copies the one distinct matrix, not the whole batch.
    const a3 = input([5, 30, 20], mg.float32, 16);
    const b3 = cpu(() => mg.broadcastTo(sliceStatic(input([20, 40], mg.float32, 17), [0, 0], [20, 40], [1, 2]), [5, 20, 20]));
    const recs3 = checkMatmul(a3, b3, "broadcast stepped B");
    expect(recs3[0]!.notes.join()).toContain("of its (1,20,20) distinct matrices");
    expect(recs3.map((r) => r.layout)).toEqual(["strided", "gemm"]);
  });
});

describeGemm("batches", () => {
  test("broadcast batch axes are read with zero strides (no copies), on gemm and gemv", () => {
    const a = input([4, 3, 20, 24], mg.float32, 21);
    const b = input([3, 24, 28], mg.float32, 22); // broadcast over a's first axis
    const r1 = checkMatmul(a, b, "(4,3) @ (3)");
    expect(r1.map((r) => r.layout)).toEqual(["gemm"]);
    expect(r1[0]!.grid![2]).toBe(12);
    const c = input([2, 1, 20, 24], mg.float16, 23);
    const d = input([1, 3, 24, 28], mg.float16, 24); // both broadcast
    expect(checkMatmul(c, d, "(2,1) @ (1,3)").map((r) => r.layout)).toEqual(["gemm"]);
    // batched gemv: a row vector against a stack of matrices, and a stack of rows against one matrix
    const v = input([1, 24], mg.float32, 25);
    const r2 = checkMatmul(v, b, "(1,K) @ (3,K,N)");
    expect(r2.map((r) => [r.layout, r.grid![2]])).toEqual([["gemv", 3]]);
    const rows = input([6, 1, 24], mg.bfloat16, 26);
    const m = input([6, 24, 28], mg.bfloat16, 27);
    expect(checkMatmul(rows, m, "(6,1,K) @ (6,K,N)").map((r) => r.layout)).toEqual(["gemv"]);
  });

  test("64×64 tiles with partial edge tiles over a batch", () => {
    // 8 batches × 3×3 tiles of 64 reach the large-tile threshold; 130 = 2·64 + 2 leaves thin edges.
    const a = input([8, 130, 20], mg.float32, 28);
    const b = input([8, 20, 130], mg.float32, 29);
    const recs = checkMatmul(a, b, "batched 130×20×130");
    expect(recs[0]!.kernel).toBe("mg_gemm_nn_f32_bm64_bn64_bk16_wm2_wn2");
    expect(recs[0]!.grid).toEqual([3, 3, 8]);
  });
});

describeGemm("NumPy's 1-D rules", () => {
  test("vector·vector, vector·matrix, matrix·vector and batched forms", () => {
    for (const dtype of GPU_FLOAT_DTYPES) {
      const v = input([50], dtype, 31);
      const w = input([50], dtype, 32);
      const m = input([50, 9], dtype, 33);
      const n = input([7, 50], dtype, 34);
      const s = input([3, 7, 50], dtype, 35);
      const t = input([3, 50, 9], dtype, 36);
      const cases: [string, MgArray, MgArray, number[]][] = [
        ["v·w", v, w, []],
        ["v·M", v, m, [9]],
        ["N·v", n, v, [7]],
        ["S·v", s, v, [3, 7]],
        ["v·T", v, t, [3, 9]],
      ];
      for (const [label, x, y, shape] of cases) {
        const recs = checkMatmul(x, y, `${label} ${dtype.name}`);
        expect(products(recs).map((r) => r.layout), label).toEqual(["gemv"]);
        const [out] = runOn(mg.gpu, () => mg.matmul(x, y));
        expect(out!.shape, label).toEqual(shape);
      }
    }
  });

  test("errors: mismatched inner dimensions, integers, float64 on the GPU", () => {
    const a = input([3, 4], mg.float32, 37);
    expect(() => runOn(mg.gpu, () => mg.matmul(a, input([5, 2], mg.float32, 38)))).toThrow(/^\[matmul\] Last dimension of first input/);
    expect(() => runOn(mg.gpu, () => mg.matmul(input([3, 4], mg.int32, 39), input([4, 2], mg.int32, 40)))).toThrow(/^\[matmul\] Only inexact types/);
    const d = input([3, 4], mg.float64, 41);
    const e = input([4, 3], mg.float64, 42);
    // Refused when the node is built (ts/core/graph.ts), named by the primitive.
    expect(() => runOn(mg.gpu, () => mg.matmul(d, e))).toThrow("[matmul] float64 is not supported on the GPU; run it on the CPU with { stream: mg.cpu } or cast with astype(mg.float32).");
    expect(() => runOn(mg.gpu, () => mg.addmm(input([3, 3], mg.float64, 43), d, e))).toThrow("[addmm] float64 is not supported on the GPU; run it on the CPU with { stream: mg.cpu } or cast with astype(mg.float32).");
  });
});

describeGemm("addmm", () => {
  /** addmm on the GPU vs float64 α·(A·B) + β·C (the β·C term is exact enough to fold into ref). */
  function checkAddmm(c: MgArray, a: MgArray, b: MgArray, alpha: number, beta: number, what: string): TraceRecord[] {
    let out!: MgArray;
    const records = mg.trace(() => (out = mg.stream(mg.gpu, () => mg.addmm(c, a, b, alpha, beta))));
    const K = a.shape[a.ndim - 1]!;
    const al = Math.fround(alpha);
    const be = Math.fround(beta);
    expectProductClose(
      out,
      (abs) => {
        const p = mg.multiply(mg.matmul(f64(a, abs), f64(b, abs)), abs ? Math.abs(al) : al);
        return beta === 0 ? p : mg.add(p, mg.multiply(f64(c, abs), abs ? Math.abs(be) : be));
      },
      K,
      what,
    );
    return products(records);
  }

  test("alpha and beta on every path and dtype, C full or broadcast", () => {
    for (const dtype of GPU_FLOAT_DTYPES) {
      const tag = dtype.name;
      const a = input([33, 65], dtype, 51);
      const b = input([65, 17], dtype, 52);
      expect(checkAddmm(input([33, 17], dtype, 53), a, b, 0.5, -2, `gemm ${tag}`).map((r) => r.layout)).toEqual(["gemm"]);
      expect(checkAddmm(input([17], dtype, 54), a, b, 1, 1, `gemm, C a row ${tag}`).map((r) => r.layout)).toEqual(["gemm"]);
      const v = input([1, 65], dtype, 55);
      expect(checkAddmm(input([1, 17], dtype, 56), v, b, 1.5, 0.25, `gemv_t ${tag}`).map((r) => r.kernel)).toEqual([`mg_gemv_t_${TAG.get(dtype)}_bn32_sk4`]);
      const col = input([65, 1], dtype, 57);
      expect(checkAddmm(input([33, 1], dtype, 58), a, col, -1, 3, `gemv ${tag}`).map((r) => r.layout)).toEqual(["gemv"]);
      const ka = input([16, 2048], dtype, 59);
      const kb = input([2048, 24], dtype, 60);
      expect(checkAddmm(input([16, 24], dtype, 61), ka, kb, 0.75, 0.5, `split-k ${tag}`).map((r) => r.layout)).toEqual(["split-k", "split-k reduce"]);
    }
  });

  test("batched addmm with a broadcast C", () => {
    const a = input([3, 20, 24], mg.float32, 62);
    const b = input([3, 24, 28], mg.float32, 63);
    const c = input([20, 1], mg.float32, 64);
    expect(checkAddmm(c, a, b, 2, -0.5, "batched").map((r) => r.layout)).toEqual(["gemm"]);
  });

  test("beta = 0 never reads C: its NaNs do not reach the result on any path", () => {
    const nanC = (shape: number[]) => cpu(() => mg.full(shape, NaN, mg.float32));
    const cases: [number[], number[], string][] = [
      [[33, 40], [40, 17], "gemm"],
      [[1, 40], [40, 17], "gemv"],
      [[16, 2048], [2048, 16], "split-k"],
    ];
    for (const [sa, sb, path] of cases) {
      const a = input(sa, mg.float32, 65);
      const b = input(sb, mg.float32, 66);
      const recs = checkAddmm(nanC([sa[0]!, sb[1]!]), a, b, 2, 0, `beta 0 ${path}`);
      expect(recs[0]!.layout).toBe(path);
    }
  });
});

describeGemm("special cases", () => {
  test("complex64: one thread per element, transposed operands in place", () => {
    const re = (shape: number[], seed: number) => input(shape, mg.float32, seed);
    const cplx = (shape: number[], seed: number) => cpu(() => mg.add(re(shape, seed), mg.multiply(re(shape, seed + 100), mg.array({ re: 0, im: 1 }))));
    const a = cplx([5, 11], 71);
    const b = cplx([11, 6], 72);
    const bt = cpu(() => mg.swapaxes(cplx([2, 6, 11], 73), -1, -2));
    for (const [label, x, y] of [["plain", a, b], ["batched, transposed", a, bt]] as const) {
      const cpuOut = runOn(mg.cpu, () => mg.matmul(x, y))[0]!;
      let gpuOut!: MgArray;
      const recs = mg.trace(() => (gpuOut = mg.stream(mg.gpu, () => mg.matmul(x, y))));
      expect(recs.map((r) => [r.kernel, r.layout, r.precision])).toEqual([["mg_gemm_complex_c64", "complex", "IEEE fp32 complex"]]);
      expectClose(gpuOut, cpuOut, { rtol: 1e-5, atol: 1e-5 }, label);
    }
  });

  test("K = 0 gives zeros (and beta·C for addmm); empty outputs launch nothing", () => {
    const a = cpu(() => mg.zeros([4, 0]));
    const b = cpu(() => mg.zeros([0, 5]));
    const [z] = runOn(mg.gpu, () => mg.matmul(a, b));
    expect(z!.tolist()).toEqual(Array.from({ length: 4 }, () => [0, 0, 0, 0, 0]));
    const c = input([4, 5], mg.float32, 81);
    const [y] = runOn(mg.gpu, () => mg.addmm(c, a, b, 1, 2));
    const twice = cpu(() => mg.multiply(c, 2));
    expectClose(y!, twice, { rtol: 0, atol: 0 }, "beta·C");
    const recs = mg.trace(() => mg.stream(mg.gpu, () => mg.matmul(cpu(() => mg.zeros([0, 3])), input([3, 4], mg.float32, 82))));
    expect(products(recs)).toEqual([]);
  });

  test("NaN and infinities propagate as in the float64 product (zero padding of edge tiles adds none)", () => {
    const withSpecials = (shape: number[], seed: number, specials: [number, number, number][]) => {
      const v = Float64Array.from(input(shape, mg.float32, seed).dataSync() as Float32Array);
      for (const [r, c, x] of specials) v[r * shape[1]! + c] = x;
      return mg.array(Float32Array.from(v), null, { shape });
    };
    // Row 3 of A holds a NaN, row 7 an infinity meeting a zero of B in column 4 (∞·0 = NaN).
    const specialsA: [number, number, number][] = [[3, 5, NaN], [7, 2, Infinity]];
    for (const [M, K, N, path] of [[33, 20, 17, "gemm"], [9, 20, 1, "gemv"], [16, 1024, 16, "split-k"]] as const) {
      const a = withSpecials([M, K], 101, specialsA);
      const b = withSpecials([K, N], 102, [[2, Math.min(4, N - 1), 0]]);
      const cpuOut = runOn(mg.cpu, () => mg.matmul(a, b))[0]!;
      let gpuOut!: MgArray;
      const recs = products(mg.trace(() => (gpuOut = mg.stream(mg.gpu, () => mg.matmul(a, b)))));
      expect(recs[0]!.layout).toBe(path);
      expectClose(gpuOut, cpuOut, { rtol: 1e-4, atol: 1e-4 }, path);
      const out = gpuOut.dataSync() as Float32Array;
      expect(Number.isNaN(out[3 * N]!), path).toBe(true);
      expect(Number.isNaN(out[7 * N + Math.min(4, N - 1)]!), path).toBe(true);
      expect(Number.isFinite(out[0]!), path).toBe(true);
    }
  });

  test("gradients of a product run on the GPU and match the CPU", () => {
    const a = input([12, 20], mg.float32, 91);
    const b = input([20, 9], mg.float32, 92);
    const loss = (x: MgArray, y: MgArray) => mg.sum(mg.square(mg.matmul(x, y)));
    const g = (device: typeof mg.cpu) => runOn(device, () => mg.grad(loss, [0, 1])(a, b) as MgArray[]);
    const [ga, gb] = g(mg.gpu);
    const [ca, cb] = g(mg.cpu);
    expectClose(ga!, ca!, { rtol: 1e-4, atol: 1e-4 }, "dA");
    expectClose(gb!, cb!, { rtol: 1e-4, atol: 1e-4 }, "dB");
  });
});
