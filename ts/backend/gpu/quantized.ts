// GPU rules of the quantization primitives (Sources/Kernels/quantized.metal): quantize and
// dequantize, and quantized products — qmv for decode (transpose, at most 8 rows per matrix),
// the tiled qmm otherwise. The ops hand these row-contiguous operands (a copy only when a view
// is not), so kernels index matrices densely and batch entries through strides.
import type { MgArray, Node } from "../../core/array.ts";
import { Dequantize, GatherQMM, Quantize, QuantizedMatmul } from "../../core/primitives/quantized.ts";
import { tracing } from "../../core/trace.ts";
import { type GpuEncoder, int32Bytes, int64Bytes } from "./encoder.ts";
import { dtypeTag, mslType } from "./dtypes.ts";
import { type KernelInstance, kernelPipeline } from "./kernels.ts";
import { registerGpu } from "./registry.ts";
import type { QuantizationMode } from "../cpu/quantize.ts";

const MODE_ID: Record<QuantizationMode, number> = { affine: 0, mxfp4: 1, mxfp8: 2, nvfp4: 3 };

export interface QuantGpuParams {
  mode: QuantizationMode;
  groupSize: number;
  bits: number;
}

export interface QmmGpuParams extends QuantGpuParams {
  transpose: boolean;
}

const inst = (name: string, instantiation: string): KernelInstance => ({ file: "quantized.metal", name, instantiation });

/** The kernels index their operands densely: the ops guarantee it (contiguous()); a violation
 *  is an internal error, never a wild read. `matrixOnly`: only the last two axes must be dense
 *  (the batch axes go through strides). */
function requireDense(op: string, a: MgArray, matrixOnly = false): void {
  const l = a.layout!;
  if (!matrixOnly) {
    if (!l.rowContiguous && a.size > 1) throw new Error(`[${op}] internal: a non-contiguous operand ${a.describe()} reached the GPU kernel.`);
    return;
  }
  const n = a.ndim;
  const cols = a.shape[n - 1]!, rows = a.shape[n - 2] ?? 1;
  const ok = (cols <= 1 || l.strides[n - 1] === 1) && (rows <= 1 || n < 2 || l.strides[n - 2] === cols);
  if (!ok) throw new Error(`[${op}] internal: the matrices of ${a.describe()} are not row-contiguous.`);
}

function trace(node: Node, layout: string, notes: string[] = []) {
  return tracing() ? { primitives: [node.primitive.name], inputs: node.inputs, outputs: node.outputs, layout, precision: "fp32 accumulate over dequantised operands", notes } : null;
}

// ---------------------------------------------------------------------------------------------
// Quantize / dequantize

function quantizeKernel(w: MgArray, p: QuantGpuParams): KernelInstance {
  const t = mslType(w.dtype, "quantize");
  return p.mode === "affine"
    ? inst(`mg_affine_quantize_${dtypeTag(w.dtype)}_${p.bits}_${p.groupSize}`, `affine_quantize<${t}, ${p.bits}, ${p.groupSize}>`)
    : inst(`mg_fp_quantize_${dtypeTag(w.dtype)}_${p.mode}`, `fp_quantize<${t}, ${MODE_ID[p.mode]}>`);
}

export const quantizeGpu = {
  kind: "kernel" as const,
  kernels: (node: Node) => [quantizeKernel(node.inputs[0]!, node.params as QuantGpuParams)],
  encode(enc: GpuEncoder, node: Node): void {
    const p = node.params as QuantGpuParams;
    const w = node.inputs[0]!;
    requireDense("quantize", w);
    const groups = w.size / p.groupSize;
    const buffers = [enc.inputBinding(w, 0), ...node.outputs.map((o, i) => enc.outputBinding(o, i + 1))];
    const bytes = [];
    if (p.mode === "affine") {
      bytes.push({ index: 4, data: Uint32Array.of(groups) });
    } else {
      // nvfp4's global scale (a float32 scalar the op checked) is read by the kernel; without one
      // the scales are bound again in its place and not read.
      const g = node.inputs[1];
      buffers.push(g ? enc.inputBinding(g, 4) : { ...buffers[0]!, index: 4 });
      bytes.push({ index: 3, data: Uint32Array.of(groups) }, { index: 5, data: Uint32Array.of(g ? 1 : 0) });
    }
    if (groups === 0) return;
    const pipeline = kernelPipeline(quantizeKernel(w, p));
    enc.dispatch({ pipeline, buffers, bytes, grid: [groups, 1, 1], threadgroup: [Math.min(64, groups), 1, 1] }, trace(node, "contiguous"));
  },
};

function dequantizeKernel(node: Node, p: QuantGpuParams): KernelInstance {
  const out = node.outputs[0]!;
  if (p.mode === "affine") {
    const s = node.inputs[1]!;
    return inst(`mg_affine_dequantize_${dtypeTag(s.dtype)}_${dtypeTag(out.dtype)}_${p.bits}_${p.groupSize}`,
      `affine_dequantize<${mslType(s.dtype)}, ${mslType(out.dtype)}, ${p.bits}, ${p.groupSize}>`);
  }
  return inst(`mg_fp_dequantize_${dtypeTag(out.dtype)}_${p.mode}`, `fp_dequantize<${mslType(out.dtype)}, ${MODE_ID[p.mode]}>`);
}

export const dequantizeGpu = {
  kind: "kernel" as const,
  kernels: (node: Node) => [dequantizeKernel(node, node.params as QuantGpuParams)],
  encode(enc: GpuEncoder, node: Node): void {
    const p = node.params as QuantGpuParams;
    const out = node.outputs[0]!;
    for (const a of node.inputs.slice(0, p.mode === "affine" ? 3 : 2)) requireDense("dequantize", a);
    const pipeline = kernelPipeline(dequantizeKernel(node, p));
    const size = out.size;
    if (p.mode === "affine") {
      const buffers = [0, 1, 2].map((i) => enc.inputBinding(node.inputs[i]!, i));
      buffers.push(enc.outputBinding(out, 3));
      if (size === 0) return;
      enc.dispatch({ pipeline, buffers, bytes: [{ index: 4, data: Uint32Array.of(size) }], grid: [size, 1, 1], threadgroup: [Math.min(256, size), 1, 1] }, trace(node, "contiguous"));
      return;
    }
    const buffers = [enc.inputBinding(node.inputs[0]!, 0), enc.inputBinding(node.inputs[1]!, 1), enc.outputBinding(out, 2)];
    const g = node.inputs[2];
    buffers.push(g ? enc.inputBinding(g, 4) : { ...buffers[0]!, index: 4 });
    if (size === 0) return;
    enc.dispatch({
      pipeline, buffers,
      bytes: [{ index: 3, data: Uint32Array.of(size) }, { index: 5, data: Uint32Array.of(g ? 1 : 0) }],
      grid: [size, 1, 1], threadgroup: [Math.min(256, size), 1, 1],
    }, trace(node, "contiguous"));
  },
};

// ---------------------------------------------------------------------------------------------
// Products

/** Rows per qmv dispatch (MR): the matrix's rows when few, else the product uses qmm. */
export const QMV_MAX_ROWS = 8;

function productKernel(node: Node, gather: boolean): { k: KernelInstance; qmv: boolean; mr: number } {
  const p = node.params as QmmGpuParams;
  const x = node.inputs[0]!;
  const M = x.shape[x.ndim - 2]!;
  const t = mslType(x.dtype, "quantized_matmul");
  const s = p.mode === "affine" ? t : "uchar";
  const tag = `${dtypeTag(x.dtype)}_${p.mode}_${p.bits}_${p.groupSize}${gather ? "_gather" : ""}`;
  if (p.transpose && M <= QMV_MAX_ROWS) {
    const mr = Math.max(1, M);
    return { k: inst(`mg_qmv_${tag}_${mr}`, `qmv<${t}, ${s}, ${p.bits}, ${p.groupSize}, ${MODE_ID[p.mode]}, ${mr}, ${gather}>`), qmv: true, mr };
  }
  return { k: inst(`mg_qmm_${tag}_${p.transpose ? "t" : "n"}`, `qmm<${t}, ${s}, ${p.bits}, ${p.groupSize}, ${MODE_ID[p.mode]}, ${p.transpose}, ${gather}>`), qmv: false, mr: 0 };
}

function productGpu(gather: boolean) {
  return {
    kind: "kernel" as const,
    kernels: (node: Node) => [productKernel(node, gather).k],
    encode(enc: GpuEncoder, node: Node): void {
      const p = node.params as QmmGpuParams;
      const [x, w, s] = node.inputs as MgArray[];
      const out = node.outputs[0]!;
      const K = x!.shape[x!.ndim - 1]!, M = x!.shape[x!.ndim - 2]!, N = out.shape[out.ndim - 1]!;
      const mats = gather ? node.inputs.slice(0, -2) : node.inputs;
      for (const a of mats) requireDense(gather ? "gather_qmm" : "quantized_matmul", a, true);
      const xb = enc.input(x!, 0), wb = enc.input(w!, 1), sb = enc.input(s!, 2);
      // fp modes have no biases: bind the scales again (never read).
      const bb = p.mode === "affine" ? enc.inputBinding(node.inputs[3]!, 3) : { ...sb.binding, index: 3 };
      const ob = enc.outputBinding(out, 4);
      const [lb, rb] = gather
        ? [enc.inputBinding(node.inputs[node.inputs.length - 2]!, 8), enc.inputBinding(node.inputs[node.inputs.length - 1]!, 9)]
        : [{ ...xb.binding, index: 8 }, { ...xb.binding, index: 9 }];
      if (out.size === 0) return;
      let batch: number[], strides: number[], count: number;
      if (gather) {
        // One batch entry per index pair; the kernel reads lhs/rhs and steps whole matrices.
        count = out.shape[0]!;
        batch = [count];
        const mat = (a: MgArray) => a.shape[a.ndim - 1]! * a.shape[a.ndim - 2]!;
        strides = [mat(x!), mat(w!), mat(s!)];
      } else {
        // Batch axes: x's leading axes; W's and the scales' strides are 0 where they broadcast.
        batch = x!.shape.slice(0, -2);
        const bstride = (a: MgArray, st: readonly number[]) => (a.ndim > 2 ? st.slice(0, -2) : batch.map(() => 0));
        strides = [...bstride(x!, xb.strides), ...bstride(w!, wb.strides), ...bstride(s!, sb.strides)];
        count = batch.reduce((a, b) => a * b, 1);
      }
      const { k, qmv, mr } = productKernel(node, gather);
      const pipeline = kernelPipeline(k);
      const grid: [number, number, number] = qmv ? [Math.ceil(N / 8), Math.ceil(M / mr), count] : [Math.ceil(N / 32), Math.ceil(M / 32), count];
      enc.dispatch({
        pipeline,
        buffers: [xb.binding, wb.binding, sb.binding, bb, ob, lb, rb],
        bytes: [int32Bytes(5, [M, N, K, gather ? 0 : batch.length]), int32Bytes(6, batch), int64Bytes(7, strides)],
        grid,
        threadgroup: [qmv ? 64 : 128, 1, 1],
        mode: "threadgroups",
      }, trace(node, qmv ? `qmv (${M} row${M === 1 ? "" : "s"})` : "qmm", ["packed weights read directly (dequantised per tile, no copy)"]));
    },
  };
}

export const quantizedMatmulGpu = productGpu(false);
export const gatherQmmGpu = productGpu(true);

registerGpu(Quantize, quantizeGpu);
registerGpu(Dequantize, dequantizeGpu);
registerGpu(QuantizedMatmul, quantizedMatmulGpu);
registerGpu(GatherQMM, gatherQmmGpu);
