// Quantization primitives in MLX's packed formats (described in the CPU backend's quantize.ts): Quantize
// ([w (, global scale)] → [wq, scales (, biases)]), Dequantize and QuantizedMatmul. The ops
// (ts/core/ops/quantized.ts) validate modes, shapes and dtypes and make the operands
// row-contiguous. Rules: ts/core/rules/quantized.ts; kernels: quantized.ts of each backend.
import { type Dtype, uint32, uint8 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";
/** A quantization format: affine (scales and biases) or the mxfp4/mxfp8/nvfp4 float formats. */
export type QuantizationMode = "affine" | "mxfp4" | "mxfp8" | "nvfp4";

export const QUANTIZATION_MODES: readonly QuantizationMode[] = ["affine", "mxfp4", "mxfp8", "nvfp4"];

/** MLX's default (group size, bits) per mode. */
export function defaultQuantizationParams(mode: QuantizationMode): { groupSize: number; bits: number } {
  switch (mode) {
    case "affine": return { groupSize: 64, bits: 4 };
    case "nvfp4": return { groupSize: 16, bits: 4 };
    case "mxfp4": return { groupSize: 32, bits: 4 };
    case "mxfp8": return { groupSize: 32, bits: 8 };
  }
}


export interface QuantizeParams {
  mode: QuantizationMode;
  groupSize: number;
  bits: number;
}

const key = (p: QuantizeParams) => `${p.mode}|${p.groupSize}|${p.bits}`;

export const Quantize: Primitive<QuantizeParams> = {
  name: "Quantize",
  opName: () => "quantize",
  outputSpecs([w], p) {
    const K = w!.shape[w!.ndim - 1]!;
    const wq = { shape: [...w!.shape.slice(0, -1), (K * p.bits) / 32], dtype: uint32 as Dtype };
    const sshape = [...w!.shape.slice(0, -1), K / p.groupSize];
    if (p.mode === "affine") return [wq, { shape: sshape, dtype: w!.dtype }, { shape: [...sshape], dtype: w!.dtype }];
    return [wq, { shape: sshape, dtype: uint8 as Dtype }];
  },
  paramsKey: key,
};

export interface DequantizeParams extends QuantizeParams {
  dtype: Dtype;
}

export const Dequantize: Primitive<DequantizeParams> = {
  name: "Dequantize",
  opName: () => "dequantize",
  outputSpecs([wq], p) {
    const words = wq!.shape[wq!.ndim - 1]!;
    return [{ shape: [...wq!.shape.slice(0, -1), (words * 32) / p.bits], dtype: p.dtype }];
  },
  paramsKey: (p) => `${key(p)}|${p.dtype.name}`,
};

export interface QuantizedMatmulParams extends QuantizeParams {
  transpose: boolean;
}

/** x (…, M, K) times the dequantised W ((N, K) with transpose, else (K, N)); W 2-D or batched
 *  like x. */
export const QuantizedMatmul: Primitive<QuantizedMatmulParams> = {
  name: "QuantizedMatmul",
  opName: () => "quantized_matmul",
  outputSpecs([x, w], p) {
    const N = p.transpose ? w!.shape[w!.ndim - 2]! : (w!.shape[w!.ndim - 1]! * 32) / p.bits;
    return [{ shape: [...x!.shape.slice(0, -1), N], dtype: x!.dtype }];
  },
  paramsKey: (p) => `${key(p)}|${p.transpose}`,
};


/** gather_qmm: out[i] = x[lhs[i]] times the dequantised W[rhs[i]]; inputs [x (Bx, M, K), w (E, …),
 *  scales (, biases), lhs, rhs] with x and the weights flattened to one batch axis and the
 *  indices (uint32, one shape) flattened too; output (indices, M, N). */
export const GatherQMM: Primitive<QuantizedMatmulParams> = {
  name: "GatherQMM",
  opName: () => "gather_qmm",
  outputSpecs(inputs, p) {
    const [x, w] = inputs;
    const idx = inputs[inputs.length - 1]!;
    const N = p.transpose ? w!.shape[w!.ndim - 2]! : (w!.shape[w!.ndim - 1]! * 32) / p.bits;
    return [{ shape: [idx.size, x!.shape[x!.ndim - 2]!, N], dtype: x!.dtype }];
  },
  paramsKey: (p) => `${key(p)}|${p.transpose}`,
};
