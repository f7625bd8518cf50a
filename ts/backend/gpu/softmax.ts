// Softmax and LogSumExp on the GPU (Sources/Kernels/softmax.metal): one threadgroup per row of the
// last axis, read in place from any strided view. Softmax accumulates 16-bit inputs in float32
// when `precise` and in the input type otherwise (MLX's default); logsumexp always in float32.
// The trace's precision says which.
import type { Node } from "../../core/array.ts";
import { bfloat16, type Dtype, float16, float32 } from "../../core/dtype.ts";
import type { GpuRule, KernelInstance } from "../../core/primitive.ts";
import type { SoftmaxParams } from "../../core/primitives/softmax.ts";
import { dtypeTag, mslType } from "./dtypes.ts";
import { type GpuEncoder, idxType, int32Bytes, int64Bytes, needsLargeIndex } from "./encoder.ts";
import { kernelPipeline } from "./kernels.ts";
import { accumulatePrecision, type Dim, groupGrid, knownStrides, mergeDims, simdThreadgroup } from "./reduce.ts";

interface RowPlan {
  /** Leading dimensions (row order), merged. */
  others: Dim[];
  n: number;
  stride: number;
  rows: number;
  large: boolean;
}

function rowPlanOf(node: Node): RowPlan | null {
  const a = node.inputs[0]!;
  const strides = knownStrides(a);
  if (!strides) return null;
  const last = a.ndim - 1;
  const n = a.shape[last]!;
  const others = mergeDims(a.shape.slice(0, last).map((size, i) => ({ size, stride: strides[i]! })));
  const rows = n === 0 ? 0 : a.size / n;
  const large = needsLargeIndex(a.size, [a]);
  return { others, n, stride: strides[last]!, rows, large };
}

function checkFloat(d: Dtype, op: string): void {
  mslType(d, op); // float64 → "[op] float64 is not supported on the GPU."
  if (d !== float32 && d !== float16 && d !== bfloat16) throw new Error(`[${op}] ${d.name} input: the kernel takes floating inputs (the op casts them first).`);
}

/** Softmax's accumulator: the input type unless float32 is asked for (precise) or it is float32. */
function softmaxAcc(d: Dtype, precise: boolean): Dtype {
  return precise ? float32 : d;
}

function softmaxKernel(plan: RowPlan, node: Node): KernelInstance {
  const d = node.inputs[0]!.dtype;
  checkFloat(d, "softmax");
  const acc = softmaxAcc(d, (node.params as SoftmaxParams).precise);
  const idx = idxType(plan.large);
  return {
    file: "softmax.metal",
    name: `mg_softmax_${dtypeTag(d)}_acc_${dtypeTag(acc)}${plan.large ? "_i64" : ""}`,
    instantiation: `softmax_rows<${mslType(d)}, ${mslType(acc)}, ${idx}>`,
  };
}

function logsumexpKernel(plan: RowPlan, node: Node): KernelInstance {
  const d = node.inputs[0]!.dtype;
  checkFloat(d, "logsumexp");
  const idx = idxType(plan.large);
  return { file: "softmax.metal", name: `mg_logsumexp_${dtypeTag(d)}${plan.large ? "_i64" : ""}`, instantiation: `logsumexp_rows<${mslType(d)}, ${idx}>` };
}

function encodeRows(enc: GpuEncoder, node: Node, kernel: KernelInstance, precision: string, op: string): void {
  const x = node.inputs[0]!;
  const out = node.outputs[0]!;
  const plan = rowPlanOf(node)!;
  const pipeline = kernelPipeline(kernel);
  const a = enc.input(x, 0);
  const o = enc.output(out, 1);
  const bytes = [
    int32Bytes(2, plan.others.map((d) => d.size)),
    int64Bytes(3, plan.others.map((d) => d.stride)),
    int32Bytes(4, [plan.others.length]),
    int64Bytes(5, [a.base, plan.n, plan.rows, plan.stride]),
  ];
  const tg = simdThreadgroup(pipeline, Math.ceil(plan.n / 4), op);
  const layout = `${x.layout!.rowContiguous ? "contiguous rows" : "strided rows"}${plan.large ? ", large-index" : ""}`;
  enc.dispatch(
    { pipeline, buffers: [a.binding, o.binding], bytes, grid: groupGrid(plan.rows), threadgroup: [tg, 1, 1], mode: "threadgroups", mustWrite: [1] },
    { primitives: [node.primitive.name], inputs: [x], outputs: [out], layout, precision },
  );
}

export const softmaxRule: GpuRule = {
  kind: "kernel",
  kernels(node) {
    const plan = rowPlanOf(node);
    return plan ? [softmaxKernel(plan, node)] : [];
  },
  encode(enc, node) {
    const plan = rowPlanOf(node)!;
    const d = node.inputs[0]!.dtype;
    const acc = softmaxAcc(d, (node.params as SoftmaxParams).precise);
    const precision = accumulatePrecision(d, acc === float32 ? "fp32" : acc === float16 ? "fp16" : "bf16");
    encodeRows(enc, node, softmaxKernel(plan, node), precision, "softmax");
  },
};

export const logsumexpRule: GpuRule = {
  kind: "kernel",
  kernels(node) {
    const plan = rowPlanOf(node);
    return plan ? [logsumexpKernel(plan, node)] : [];
  },
  encode(enc, node) {
    const plan = rowPlanOf(node)!;
    encodeRows(enc, node, logsumexpKernel(plan, node), accumulatePrecision(node.inputs[0]!.dtype, "fp32"), "logsumexp");
  },
};
