// CPU kernels of the quantization primitives over arrays: batches of matrices laid out as MLX
// lays them out (groups along the last axis), computed by ./quantize.ts (MLX's bits and
// roundings). The products dequantize one weight row at a time (never the whole matrix) and
// accumulate in float64.
import type { MgArray } from "../../core/array.ts";
import { roundToDtype, type Dtype } from "../../core/dtype.ts";
import { Dequantize, GatherQMM, Quantize, QuantizedMatmul } from "../../core/primitives/quantized.ts";
import { readNumbers, writeNumbers } from "./values.ts";
import { registerCpu } from "./registry.ts";
import {
  affineDequantize, affineQuantize, fpDequantize, fpQuantize, type QuantizationMode, type Rounding, unpackCodes,
  FP4_E2M1, fromFp8E4m3,
} from "./quantize.ts";

export const rounding = (d: Dtype): Rounding => (x) => roundToDtype(x, d);

function words(a: MgArray): Uint32Array {
  return Uint32Array.from(readNumbers(a));
}

export interface QuantizeKernelParams {
  mode: QuantizationMode;
  groupSize: number;
  bits: number;
}

/** [w (+ global scale)] → [wq, scales (+ biases)]. */
export function quantizeCpu(inputs: readonly MgArray[], outputs: readonly MgArray[], p: QuantizeKernelParams): void {
  const w = inputs[0]!;
  const vals = readNumbers(w);
  const round = rounding(w.dtype);
  if (p.mode === "affine") {
    const q = affineQuantize(vals, p.groupSize, p.bits, round);
    writeNumbers(outputs[0]!, q.wq);
    writeNumbers(outputs[1]!, q.scales);
    writeNumbers(outputs[2]!, q.biases);
    return;
  }
  const global = inputs[1] ? Math.fround(readNumbers(inputs[1])[0]!) : undefined;
  const q = fpQuantize(vals, p.mode, p.groupSize, p.bits, round, global);
  writeNumbers(outputs[0]!, q.wq);
  writeNumbers(outputs[1]!, q.scales);
}

/** [wq, scales (, biases) (, global scale)] → [w]. Affine computes in the scales' dtype, then
 *  casts; the floating-point modes compute in the output dtype (float32 with a global scale). */
export function dequantizeCpu(inputs: readonly MgArray[], outputs: readonly MgArray[], p: QuantizeKernelParams): void {
  const out = outputs[0]!;
  const wq = words(inputs[0]!);
  if (p.mode === "affine") {
    const scales = inputs[1]!, biases = inputs[2]!;
    const vals = affineDequantize(wq, readNumbers(scales), readNumbers(biases), p.groupSize, p.bits, rounding(scales.dtype));
    writeNumbers(out, vals);
    return;
  }
  const global = inputs[2] ? Math.fround(readNumbers(inputs[2])[0]!) : undefined;
  writeNumbers(out, fpDequantize(wq, readNumbers(inputs[1]!), p.mode, p.groupSize, p.bits, rounding(out.dtype), global));
}

export interface QmmKernelParams extends QuantizeKernelParams {
  transpose: boolean;
}

/** One dequantized weight row (length `len`, starting at element `start` of a packed row) in
 *  the scales' dtype, as MLX's dequantize computes it. */
function dequantRow(
  p: QmmKernelParams, wq: Uint32Array, wordsPerRow: number, row: number, len: number,
  scales: Float64Array, biases: Float64Array | null, round: Rounding, out: Float64Array,
): void {
  const rowWords = wq.subarray(row * wordsPerRow, (row + 1) * wordsPerRow);
  const groups = len / p.groupSize;
  const codes = unpackCodes(rowWords, p.bits, len);
  for (let i = 0; i < len; i++) {
    const g = row * groups + Math.floor(i / p.groupSize);
    const c = codes[i]!;
    if (p.mode === "affine") out[i] = round(round(c * scales[g]!) + biases![g]!);
    else {
      const s = p.mode === "nvfp4" ? fromFp8E4m3(scales[g]!) : Math.pow(2, scales[g]! - 127);
      const v = p.mode === "mxfp8" ? fromFp8E4m3(c) : FP4_E2M1[c & 15]!;
      out[i] = v * s;
    }
  }
}

/**
 * [x (…, M, K), wq, scales (, biases)] → out (…, M, N): x·Wᵀ (transpose, W (N, K)) or x·W
 * (W (K, N)); x and the weights share their batch shape (the op broadcast them) or W is 2-D.
 */
export function quantizedMatmulCpu(inputs: readonly MgArray[], outputs: readonly MgArray[], p: QmmKernelParams): void {
  productCpu(inputs, outputs, p, null);
}

/** [x (Bx, M, K), wq (E, …), scales (, biases), lhs, rhs] → out (I, M, N). */
export function gatherQmmCpu(inputs: readonly MgArray[], outputs: readonly MgArray[], p: QmmKernelParams): void {
  const lhs = readNumbers(inputs[inputs.length - 2]!), rhs = readNumbers(inputs[inputs.length - 1]!);
  productCpu(inputs.slice(0, -2), outputs, p, { lhs, rhs });
}

function productCpu(inputs: readonly MgArray[], outputs: readonly MgArray[], p: QmmKernelParams, gather: { lhs: Float64Array; rhs: Float64Array } | null): void {
  const [x, w, s] = inputs as MgArray[];
  const b = p.mode === "affine" ? inputs[3]! : null;
  const out = outputs[0]!;
  const K = x!.shape[x!.ndim - 1]!;
  const M = x!.shape[x!.ndim - 2] ?? 1;
  const N = out.shape[out.ndim - 1]!;
  const xv = readNumbers(x!);
  const wq = words(w!);
  const sv = readNumbers(s!);
  const bv = b ? readNumbers(b) : null;
  const round = rounding(p.mode === "affine" ? s!.dtype : x!.dtype);
  const wBatch = w!.ndim > 2 ? w!.size / (w!.shape[w!.ndim - 1]! * w!.shape[w!.ndim - 2]!) : 1;
  const batches = gather ? gather.lhs.length : M * K === 0 ? 0 : xv.length / (M * K);
  const wRows = p.transpose ? N : K;
  const rowLen = p.transpose ? K : N;
  const wordsPerRow = (rowLen * p.bits) / 32;
  const groupsPerMatrix = (wRows * rowLen) / p.groupSize;
  const res = new Float64Array(batches * M * N);
  const row = new Float64Array(rowLen);
  for (let bi = 0; bi < batches; bi++) {
    const wi = gather ? gather.rhs[bi]! : wBatch === 1 ? 0 : bi;
    const xi = gather ? gather.lhs[bi]! : bi;
    if (gather && (wi >= wBatch || xi * M * K >= xv.length)) {
      throw new RangeError(`[gather_qmm] index pair (${xi}, ${wi}) is out of range for ${xv.length / Math.max(1, M * K)} inputs and ${wBatch} weight matrices.`);
    }
    const wqb = wq.subarray(wi * wRows * wordsPerRow, (wi + 1) * wRows * wordsPerRow);
    const sb = sv.subarray(wi * groupsPerMatrix, (wi + 1) * groupsPerMatrix);
    const bb = bv ? bv.subarray(wi * groupsPerMatrix, (wi + 1) * groupsPerMatrix) : null;
    const xo = xi * M * K, oo = bi * M * N;
    for (let r = 0; r < wRows; r++) {
      dequantRow(p, wqb, wordsPerRow, r, rowLen, sb, bb, round, row);
      if (p.transpose) {
        // out[m, r] = Σ_k x[m, k]·W[r, k]
        for (let m = 0; m < M; m++) {
          let acc = 0;
          for (let k = 0; k < K; k++) acc += xv[xo + m * K + k]! * row[k]!;
          res[oo + m * N + r] = acc;
        }
      } else {
        // out[m, :] += x[m, r]·W[r, :]
        for (let m = 0; m < M; m++) {
          const xm = xv[xo + m * K + r]!;
          if (xm === 0) continue;
          for (let n = 0; n < N; n++) res[oo + m * N + n]! += xm * row[n]!;
        }
      }
    }
  }
  writeNumbers(out, res);
}

registerCpu(Quantize, quantizeCpu);
registerCpu(Dequantize, dequantizeCpu);
registerCpu(QuantizedMatmul, quantizedMatmulCpu);
registerCpu(GatherQMM, gatherQmmCpu);
