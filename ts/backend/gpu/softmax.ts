// Softmax and LogSumExp on the GPU (Sources/Kernels/softmax.metal): one threadgroup per row of the
// last axis, read in place from any strided view. Softmax accumulates 16-bit inputs in float32
// when `precise` and in the input type otherwise (MLX's default); logsumexp always in float32.
// The trace's precision says which.
import type { Node } from "../../core/array.ts";
import { bfloat16, type Dtype, float16, float32 } from "../../core/dtype.ts";
import { LogSumExp, Softmax, type SoftmaxParams } from "../../core/primitives/softmax.ts";
import { dtypeTag, mslType } from "./dtypes.ts";
import { type GpuEncoder, idxType } from "./encoder.ts";
import { type KernelInstance, kernelPipeline } from "./kernels.ts";
import { accumulatePrecision, type AxisLanes, axisLanes, dispatchLanes } from "./launch.ts";
import { registerGpu } from "./registry.ts";

/** The rows: lanes along the last axis, each reduced by one threadgroup. */
function rowPlanOf(node: Node): AxisLanes | null {
  const a = node.inputs[0]!;
  return axisLanes(a, a.ndim - 1);
}

function checkFloat(d: Dtype, op: string): void {
  mslType(d, op); // float64 → "[op] float64 is not supported on the GPU."
  if (d !== float32 && d !== float16 && d !== bfloat16) throw new Error(`[${op}] ${d.name} input: the kernel takes floating inputs (the op casts them first).`);
}

/** Softmax's accumulator: the input type unless float32 is asked for (precise) or it is float32. */
function softmaxAcc(d: Dtype, precise: boolean): Dtype {
  return precise ? float32 : d;
}

function softmaxKernel(plan: AxisLanes, node: Node<SoftmaxParams>): KernelInstance {
  const d = node.inputs[0]!.dtype;
  checkFloat(d, "softmax");
  const acc = softmaxAcc(d, node.params.precise);
  const idx = idxType(plan.large);
  return {
    file: "softmax.metal",
    name: `mg_softmax_${dtypeTag(d)}_acc_${dtypeTag(acc)}${plan.large ? "_i64" : ""}`,
    instantiation: `softmax_rows<${mslType(d)}, ${mslType(acc)}, ${idx}>`,
  };
}

function logsumexpKernel(plan: AxisLanes, node: Node): KernelInstance {
  const d = node.inputs[0]!.dtype;
  checkFloat(d, "logsumexp");
  const idx = idxType(plan.large);
  return { file: "softmax.metal", name: `mg_logsumexp_${dtypeTag(d)}${plan.large ? "_i64" : ""}`, instantiation: `logsumexp_rows<${mslType(d)}, ${idx}>` };
}

function encodeRows(enc: GpuEncoder, node: Node, plan: AxisLanes, kernel: KernelInstance, precision: string, op: string): void {
  const x = node.inputs[0]!;
  const out = node.outputs[0]!;
  // Softmax's last pass reads each element before writing it (the row's max and sum come first):
  // the output may take over its input's buffer; logsumexp's output is smaller and never does.
  const io = { a: enc.input(x, 0), o: node.primitive === Softmax ? enc.outputInPlace(out, 1) : enc.output(out, 1) };
  const layout = `${x.layout!.rowContiguous ? "contiguous rows" : "strided rows"}${plan.large ? ", large-index" : ""}`;
  // 32 elements per thread (at least): the row's max and sum steps are a small share of the work,
  // and on the simulator each thread's share of the regions' and collectives' bookkeeping too
  // (softmax 1024²: 50 instructions per element against 68 with 16 per thread; callgrind, replay).
  dispatchLanes(enc, kernelPipeline(kernel), plan, "row", 32, op, io, { primitives: [node.primitive.name], inputs: [x], outputs: [out], layout, precision });
}

registerGpu(Softmax, {
  kind: "kernel",
  kernels(node) {
    const plan = rowPlanOf(node);
    return plan ? [softmaxKernel(plan, node)] : [];
  },
  encode(enc, node) {
    const plan = rowPlanOf(node)!;
    const d = node.inputs[0]!.dtype;
    const acc = softmaxAcc(d, node.params.precise);
    const precision = accumulatePrecision(d, acc === float32 ? "fp32" : acc === float16 ? "fp16" : "bf16");
    encodeRows(enc, node, plan, softmaxKernel(plan, node), precision, "softmax");
  },
});

registerGpu(LogSumExp, {
  kind: "kernel",
  kernels(node) {
    const plan = rowPlanOf(node);
    return plan ? [logsumexpKernel(plan, node)] : [];
  },
  encode(enc, node) {
    const plan = rowPlanOf(node)!;
    encodeRows(enc, node, plan, logsumexpKernel(plan, node), accumulatePrecision(node.inputs[0]!.dtype, "fp32"), "logsumexp");
  },
});
