// Sources/Kernels/quantized.metal run directly through the runtime: quantize/dequantize must
// equal the CPU reference — itself bit-exact with MLX — bit for bit; qmv/qmm must match a
// float64 product of the dequantised weights. Then the ops on the GPU against the CPU device.
import { describe, expect, test } from "bun:test";
import { prepareKernels, kernelPipeline } from "../../../ts/backend/gpu/kernels.ts";
import { runtime, type NativeBuffer } from "../../../ts/backend/runtime.ts";
import type { KernelInstance } from "../../../ts/backend/gpu/kernels.ts";
import {
  affineDequantize, affineQuantize, fpDequantize, fpQuantize, type QuantizationMode, type Rounding,
} from "../../../ts/backend/cpu/quantize.ts";
import { bfloat16BitsFromNumber, numberFromBfloat16Bits, roundBfloat16 } from "../../../ts/core/dtype.ts";
import { genValues, Xorshift32, type FloatDtypeName } from "../../fixtures/quantize/inputs.ts";
import * as mg from "../../../ts/index.ts";
import { expectClose, runOn } from "./harness.ts";

const rt = runtime();
const MSL: Record<FloatDtypeName, string> = { float32: "float", float16: "half", bfloat16: "bfloat" };
const ROUND: Record<FloatDtypeName, Rounding> = { float32: Math.fround, float16: Math.f16round, bfloat16: roundBfloat16 };
const MODE_ID: Record<QuantizationMode, number> = { affine: 0, mxfp4: 1, mxfp8: 2, nvfp4: 3 };

function encode(values: ArrayLike<number>, dtype: FloatDtypeName): ArrayBufferView {
  if (dtype === "float32") return Float32Array.from(values);
  if (dtype === "float16") return Float16Array.from(values);
  return Uint16Array.from(Array.from(values, bfloat16BitsFromNumber));
}
function decode(buf: NativeBuffer, dtype: FloatDtypeName, n: number): Float64Array {
  if (dtype === "float32") return Float64Array.from(buf.as(Float32Array).subarray(0, n));
  if (dtype === "float16") return Float64Array.from(buf.as(Float16Array).subarray(0, n));
  return Float64Array.from(buf.as(Uint16Array).subarray(0, n), numberFromBfloat16Bits);
}
function upload(data: ArrayBufferView): NativeBuffer {
  const b = rt.newBuffer(Math.max(data.byteLength, 4));
  new Uint8Array(b.arrayBuffer).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return b;
}
const u32 = (v: number) => Uint32Array.of(v);
const f32 = (v: number) => Float32Array.of(v);

function run(k: KernelInstance, buffers: (NativeBuffer | null)[], bytes: { index: number; data: ArrayBufferView }[], grid: [number, number, number], tg: [number, number, number], mode: "threads" | "threadgroups" = "threads"): void {
  rt.newBatch()
    .dispatch({
      pipeline: kernelPipeline(k),
      buffers: buffers.flatMap((buffer, index) => (buffer ? [{ index, buffer, access: "readwrite" as const }] : [])),
      bytes,
      grid,
      threadgroup: tg,
      mode,
    })
    .submit()
    .wait();
}

const aq = (t: FloatDtypeName, bits: number, gs: number): KernelInstance => ({
  file: "quantized.metal", name: `t_affine_quantize_${t}_${bits}_${gs}`, instantiation: `affine_quantize<${MSL[t]}, ${bits}, ${gs}>`,
});
const adq = (t: FloatDtypeName, u: FloatDtypeName, bits: number, gs: number): KernelInstance => ({
  file: "quantized.metal", name: `t_affine_dequantize_${t}_${u}_${bits}_${gs}`, instantiation: `affine_dequantize<${MSL[t]}, ${MSL[u]}, ${bits}, ${gs}>`,
});
const fq = (t: FloatDtypeName, mode: QuantizationMode): KernelInstance => ({
  file: "quantized.metal", name: `t_fp_quantize_${t}_${mode}`, instantiation: `fp_quantize<${MSL[t]}, ${MODE_ID[mode]}>`,
});
const fdq = (u: FloatDtypeName, mode: QuantizationMode): KernelInstance => ({
  file: "quantized.metal", name: `t_fp_dequantize_${u}_${mode}`, instantiation: `fp_dequantize<${MSL[u]}, ${MODE_ID[mode]}>`,
});

const AFFINE_CASES: [FloatDtypeName, number, number][] = [
  ...[2, 3, 4, 5, 6, 8].map((b) => ["float32", b, 64] as [FloatDtypeName, number, number]),
  ["float32", 4, 32], ["float32", 3, 128], ["float16", 4, 64], ["float16", 6, 32], ["bfloat16", 4, 64], ["bfloat16", 5, 128],
];
const FP_CASES: [FloatDtypeName, QuantizationMode][] = (["float32", "float16", "bfloat16"] as const).flatMap((t) =>
  (["mxfp4", "mxfp8", "nvfp4"] as const).map((m) => [t, m] as [FloatDtypeName, QuantizationMode]),
);

describe("quantize / dequantize kernels equal the CPU reference bit for bit", () => {
  test("affine", () => {
    prepareKernels([...AFFINE_CASES.map(([t, b, g]) => aq(t, b, g)), ...AFFINE_CASES.map(([t, b, g]) => adq(t, t, b, g))]);
    let seed = 100;
    for (const [t, bits, gs] of AFFINE_CASES) {
      for (const kind of ["normal", "grid", "groups", "extreme"]) {
        const rows = 4, cols = 256;
        const w = genValues(kind, t, rows, cols, gs, ++seed).map(ROUND[t]);
        const ref = affineQuantize(w, gs, bits, ROUND[t]);
        const groups = (rows * cols) / gs;
        const wb = upload(encode(w, t)), qb = rt.newBuffer(ref.wq.byteLength), sb = rt.newBuffer(groups * 4), bb = rt.newBuffer(groups * 4);
        run(aq(t, bits, gs), [wb, qb, sb, bb], [{ index: 4, data: u32(groups) }], [groups, 1, 1], [64, 1, 1]);
        const label = `${t} bits=${bits} gs=${gs} ${kind}`;
        expect({ label, wq: Array.from(qb.as(Uint32Array).subarray(0, ref.wq.length)) }).toEqual({ label, wq: Array.from(ref.wq) });
        expect({ label, s: Array.from(decode(sb, t, groups)) }).toEqual({ label, s: Array.from(ref.scales) });
        expect({ label, b: Array.from(decode(bb, t, groups)) }).toEqual({ label, b: Array.from(ref.biases) });
        const ob = rt.newBuffer(rows * cols * 4);
        run(adq(t, t, bits, gs), [qb, sb, bb, ob], [{ index: 4, data: u32(rows * cols) }], [rows * cols, 1, 1], [256, 1, 1]);
        const want = affineDequantize(ref.wq, ref.scales, ref.biases, gs, bits, ROUND[t]);
        const got = decode(ob, t, rows * cols);
        expect({ label, same: got.every((v, i) => Object.is(v, want[i]) || (Number.isNaN(v) && Number.isNaN(want[i]!))) }).toEqual({ label, same: true });
        for (const b of [wb, qb, sb, bb, ob]) b.release();
      }
    }
  }, 300_000);

  test("mxfp4, mxfp8, nvfp4 (with and without a global scale)", () => {
    prepareKernels([...FP_CASES.map(([t, m]) => fq(t, m)), ...FP_CASES.map(([t, m]) => fdq(t, m)), fdq("float32", "nvfp4")]);
    let seed = 500;
    for (const [t, mode] of FP_CASES) {
      for (const kind of ["normal", "grid", "groups", "extreme"]) {
        for (const global of mode === "nvfp4" ? [undefined, Math.fround(0.37)] : [undefined]) {
          const gs = mode === "nvfp4" ? 16 : 32, bits = mode === "mxfp8" ? 8 : 4;
          const rows = 4, cols = 256;
          const w = genValues(kind, t, rows, cols, gs, ++seed).map(ROUND[t]);
          const ref = fpQuantize(w, mode as "mxfp4", gs, bits, ROUND[t], global);
          const groups = (rows * cols) / gs;
          const gb = upload(f32(global ?? 0));
          const wb = upload(encode(w, t)), qb = rt.newBuffer(ref.wq.byteLength), sb = rt.newBuffer(groups);
          run(fq(t, mode), [wb, qb, sb, null, gb], [{ index: 3, data: u32(groups) }, { index: 5, data: u32(global === undefined ? 0 : 1) }], [groups, 1, 1], [64, 1, 1]);
          const label = `${t} ${mode} ${kind} global=${global}`;
          expect({ label, wq: Array.from(qb.as(Uint32Array).subarray(0, ref.wq.length)) }).toEqual({ label, wq: Array.from(ref.wq) });
          expect({ label, s: Array.from(sb.as(Uint8Array).subarray(0, groups)) }).toEqual({ label, s: Array.from(ref.scales) });
          // dequantize into the input's dtype (float32 when a global scale promotes)
          const ut: FloatDtypeName = global === undefined ? t : "float32";
          const ob = rt.newBuffer(rows * cols * 4);
          run(fdq(ut, mode), [qb, sb, ob, null, gb], [{ index: 3, data: u32(rows * cols) }, { index: 5, data: u32(global === undefined ? 0 : 1) }], [rows * cols, 1, 1], [256, 1, 1]);
          const want = fpDequantize(ref.wq, ref.scales, mode as "mxfp4", gs, bits, ROUND[t], global);
          const got = decode(ob, ut, rows * cols);
          const bad = Array.from(got).findIndex((v, i) => !(Object.is(v, want[i]) || (Number.isNaN(v) && Number.isNaN(want[i]!))));
          expect({ label, bad, got: got[bad], want: want[bad] }).toEqual({ label, bad: -1, got: undefined, want: undefined });
          for (const b of [wb, qb, sb, ob, gb]) b.release();
        }
      }
    }
  }, 300_000);
});

// ---------------------------------------------------------------------------------------------

interface Product {
  t: FloatDtypeName;
  mode: QuantizationMode;
  bits: number;
  gs: number;
  M: number;
  N: number;
  K: number;
  transpose: boolean;
}

function quantizedProduct(c: Product, seed: number, kernel: "qmv" | "qmm"): void {
  const { t, mode, bits, gs, M, N, K, transpose } = c;
  const r = new Xorshift32(seed);
  const rnd = () => (r.next() / 2 ** 32 - 0.5) * 2;
  const x = Float64Array.from({ length: M * K }, () => ROUND[t](rnd()));
  const wRows = transpose ? N : K, wCols = transpose ? K : N;
  const wf = Float64Array.from({ length: wRows * wCols }, () => ROUND[t](rnd()));
  let wq: Uint32Array, scaleData: ArrayBufferView, biasData: ArrayBufferView, wd: Float64Array;
  if (mode === "affine") {
    const q = affineQuantize(wf, gs, bits, ROUND[t]);
    wq = q.wq;
    scaleData = encode(q.scales, t);
    biasData = encode(q.biases, t);
    wd = affineDequantize(q.wq, q.scales, q.biases, gs, bits, ROUND[t]);
  } else {
    const q = fpQuantize(wf, mode, gs, bits, ROUND[t]);
    wq = q.wq;
    scaleData = q.scales;
    biasData = q.scales;
    wd = fpDequantize(q.wq, q.scales, mode, gs, bits, ROUND[t]);
  }
  const ref = new Float64Array(M * N);
  let scale = 0;
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let s = 0, a = 0;
      for (let k = 0; k < K; k++) {
        const wv = transpose ? wd[n * K + k]! : wd[k * N + n]!;
        s += x[m * K + k]! * wv;
        a += Math.abs(x[m * K + k]! * wv);
      }
      ref[m * N + n] = s;
      scale = Math.max(scale, a);
    }
  }
  const S = mode === "affine" ? MSL[t] : "uchar";
  const MR = Math.min(M, 8);
  const inst: KernelInstance = kernel === "qmv"
    ? { file: "quantized.metal", name: `t_qmv_${t}_${mode}_${bits}_${gs}_${MR}`, instantiation: `qmv<${MSL[t]}, ${S}, ${bits}, ${gs}, ${MODE_ID[mode]}, ${MR}, false>` }
    : { file: "quantized.metal", name: `t_qmm_${t}_${mode}_${bits}_${gs}_${transpose}`, instantiation: `qmm<${MSL[t]}, ${S}, ${bits}, ${gs}, ${MODE_ID[mode]}, ${transpose}, false>` };
  const xb = upload(encode(x, t)), wb = upload(wq), sb = upload(scaleData), bb = upload(biasData);
  const ob = rt.newBuffer(M * N * 4);
  const params = Int32Array.of(M, N, K, 0);
  const grid: [number, number, number] = kernel === "qmv" ? [Math.ceil(N / 8), Math.ceil(M / MR), 1] : [Math.ceil(N / 32), Math.ceil(M / 32), 1];
  run(inst, [xb, wb, sb, bb, ob, null, null, null, xb, xb], [{ index: 5, data: params }, { index: 6, data: Int32Array.of(0) }, { index: 7, data: BigInt64Array.of(0n) }],
    grid, [kernel === "qmv" ? 64 : 128, 1, 1], "threadgroups");
  const got = decode(ob, t, M * N);
  // float32 accumulation of K products, then one rounding to T
  const tol = (t === "float32" ? 2 ** -20 : t === "float16" ? 2 ** -10 : 2 ** -7) * scale + 1e-6;
  let worst = 0;
  for (let i = 0; i < M * N; i++) worst = Math.max(worst, Math.abs(got[i]! - ref[i]!) - (t === "float32" ? 0 : Math.abs(ref[i]!) * (t === "float16" ? 2 ** -11 : 2 ** -8)));
  expect({ c, kernel, ok: worst <= tol, worst, tol }).toMatchObject({ ok: true });
  for (const b of [xb, wb, sb, bb, ob]) b.release();
}

describe("quantized products", () => {
  const qmvCases: Product[] = [
    { t: "float32", mode: "affine", bits: 4, gs: 64, M: 1, N: 40, K: 256, transpose: true },
    { t: "float32", mode: "affine", bits: 3, gs: 32, M: 3, N: 13, K: 192, transpose: true },
    { t: "float32", mode: "affine", bits: 8, gs: 128, M: 8, N: 9, K: 384, transpose: true },
    { t: "float16", mode: "affine", bits: 5, gs: 64, M: 2, N: 17, K: 128, transpose: true },
    { t: "bfloat16", mode: "affine", bits: 6, gs: 32, M: 1, N: 8, K: 96, transpose: true },
    { t: "bfloat16", mode: "affine", bits: 2, gs: 64, M: 5, N: 12, K: 1088, transpose: true },
    { t: "float32", mode: "mxfp4", bits: 4, gs: 32, M: 1, N: 11, K: 160, transpose: true },
    { t: "float16", mode: "mxfp8", bits: 8, gs: 32, M: 4, N: 16, K: 64, transpose: true },
    { t: "bfloat16", mode: "nvfp4", bits: 4, gs: 16, M: 1, N: 7, K: 48, transpose: true },
  ];
  test("qmv (decode)", () => {
    qmvCases.forEach((c, i) => quantizedProduct(c, 40 + i, "qmv"));
  }, 300_000);

  const qmmCases: Product[] = [
    { t: "float32", mode: "affine", bits: 4, gs: 64, M: 33, N: 40, K: 256, transpose: true },
    { t: "float32", mode: "affine", bits: 3, gs: 32, M: 17, N: 64, K: 96, transpose: false },
    { t: "float16", mode: "affine", bits: 8, gs: 128, M: 40, N: 31, K: 128, transpose: true },
    { t: "bfloat16", mode: "affine", bits: 6, gs: 64, M: 9, N: 128, K: 70, transpose: false },
    { t: "float32", mode: "mxfp4", bits: 4, gs: 32, M: 20, N: 36, K: 96, transpose: true },
    { t: "float16", mode: "nvfp4", bits: 4, gs: 16, M: 12, N: 48, K: 40, transpose: false },
    { t: "bfloat16", mode: "mxfp8", bits: 8, gs: 32, M: 64, N: 33, K: 64, transpose: true },
  ];
  test("qmm (prefill, both transposes)", () => {
    qmmCases.forEach((c, i) => quantizedProduct(c, 80 + i, "qmm"));
  }, 300_000);
});

describe("quantization ops: GPU against the CPU device", () => {
  test("quantize and dequantize (bit for bit), quantizedMatmul decode and prefill, gatherQmm", () => {
    for (const [mode, gs, bits] of [["affine", 64, 4], ["affine", 32, 3], ["mxfp8", null, null], ["nvfp4", null, null]] as const) {
      const w = mg.astype(mg.reshape(mg.array(Float32Array.from(genValues("normal", "float32", 24, 128, 32, 900))), [24, 128]), mg.float16);
      const q = () => mg.quantize(w, gs, bits, mode);
      const gq = runOn(mg.gpu, q), cq = runOn(mg.cpu, q);
      gq.forEach((a, i) => expectClose(a, cq[i]!, { rtol: 0, atol: 0 }, `${mode} quantize output ${i}`));
      const biases = mode === "affine" ? cq[2]! : null;
      const dq = () => mg.dequantize(cq[0]!, cq[1]!, biases, gs, bits, mode);
      expectClose(runOn(mg.gpu, dq)[0]!, runOn(mg.cpu, dq)[0]!, { rtol: 0, atol: 0 }, `${mode} dequantize`);
      for (const M of [1, 3, 40]) {
        const x = mg.astype(mg.reshape(mg.array(Float32Array.from(genValues("normal", "float32", M, 128, 32, 901 + M))), [M, 128]), mg.float16);
        const mm = () => mg.quantizedMatmul(x, cq[0]!, cq[1]!, biases, true, gs, bits, mode);
        // float16: the CPU reference uses MLX's dequantised (float16-rounded) weights, the GPU
        // s·q + b in float32, so sums of 128 terms (|y| ≲ 10) differ by a few float16 ulps.
        expectClose(runOn(mg.gpu, mm)[0]!, runOn(mg.cpu, mm)[0]!, { rtol: 4e-3, atol: 3e-2 }, `${mode} qmm M=${M} float16`);
        const x32 = mg.astype(x, mg.float32);
        const mm32 = () => mg.quantizedMatmul(x32, cq[0]!, cq[1]!, biases, true, gs, bits, mode);
        expectClose(runOn(mg.gpu, mm32)[0]!, runOn(mg.cpu, mm32)[0]!, { rtol: 1e-3, atol: 2e-2 }, `${mode} qmm M=${M} float32 x`);
      }
    }
    const w3 = mg.reshape(mg.array(Float32Array.from(genValues("normal", "float32", 3 * 16, 64, 64, 950))), [3, 16, 64]);
    const [wq, sc, b] = runOn(mg.cpu, () => mg.quantize(w3));
    const x = mg.reshape(mg.array(Float32Array.from(genValues("normal", "float32", 2, 64, 64, 951))), [2, 1, 64]);
    const gather = () => mg.gatherQmm(x, wq!, sc!, b, { lhsIndices: mg.array([1, 0, 1]), rhsIndices: mg.array([2, 2, 0]) });
    expectClose(runOn(mg.gpu, gather)[0]!, runOn(mg.cpu, gather)[0]!, { rtol: 1e-5, atol: 1e-5 }, "gather_qmm");
  }, 300_000);
});
