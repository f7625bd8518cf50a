// Quantization primitives in MLX's packed formats (ts/backend/cpu/quantize.ts): Quantize
// ([w (, global scale)] → [wq, scales (, biases)]), Dequantize and QuantizedMatmul. The ops
// (ts/core/ops/quantized.ts) validate modes, shapes and dtypes and make the operands
// row-contiguous. Derivative rules: ./quantized-rules.ts.
import { type Dtype, uint32, uint8 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";
import type { QuantizationMode } from "../../backend/cpu/quantize.ts";
import { dequantizeCpu, quantizeCpu, quantizedMatmulCpu } from "../../backend/cpu/quantized-ops.ts";
import { dequantizeGpu, quantizedMatmulGpu, quantizeGpu } from "../../backend/gpu/quantized.ts";

export interface QuantizeParams {
  mode: QuantizationMode;
  groupSize: number;
  bits: number;
}

const key = (p: QuantizeParams) => `${p.mode}|${p.groupSize}|${p.bits}`;

export const Quantize: Primitive<QuantizeParams> = {
  name: "Quantize",
  outputSpecs([w], p) {
    const K = w!.shape[w!.ndim - 1]!;
    const wq = { shape: [...w!.shape.slice(0, -1), (K * p.bits) / 32], dtype: uint32 as Dtype };
    const sshape = [...w!.shape.slice(0, -1), K / p.groupSize];
    if (p.mode === "affine") return [wq, { shape: sshape, dtype: w!.dtype }, { shape: [...sshape], dtype: w!.dtype }];
    return [wq, { shape: sshape, dtype: uint8 as Dtype }];
  },
  cpu: (inputs, outputs, p) => quantizeCpu(inputs, outputs, p),
  gpu: quantizeGpu,
  paramsKey: key,
};

export interface DequantizeParams extends QuantizeParams {
  dtype: Dtype;
}

export const Dequantize: Primitive<DequantizeParams> = {
  name: "Dequantize",
  outputSpecs([wq], p) {
    const words = wq!.shape[wq!.ndim - 1]!;
    return [{ shape: [...wq!.shape.slice(0, -1), (words * 32) / p.bits], dtype: p.dtype }];
  },
  cpu: (inputs, outputs, p) => dequantizeCpu(inputs, outputs, p),
  gpu: dequantizeGpu,
  paramsKey: (p) => `${key(p)}|${p.dtype.name}`,
};

export interface QuantizedMatmulParams extends QuantizeParams {
  transpose: boolean;
}

/** x (…, M, K) times the dequantised W ((N, K) with transpose, else (K, N)); W 2-D or batched
 *  like x. */
export const QuantizedMatmul: Primitive<QuantizedMatmulParams> = {
  name: "QuantizedMatmul",
  outputSpecs([x, w], p) {
    const N = p.transpose ? w!.shape[w!.ndim - 2]! : (w!.shape[w!.ndim - 1]! * 32) / p.bits;
    return [{ shape: [...x!.shape.slice(0, -1), N], dtype: x!.dtype }];
  },
  cpu: (inputs, outputs, p) => quantizedMatmulCpu(inputs, outputs, p),
  gpu: quantizedMatmulGpu,
  paramsKey: (p) => `${key(p)}|${p.transpose}`,
};

