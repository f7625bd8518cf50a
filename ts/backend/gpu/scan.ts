// Cumulative reductions on the GPU (Sources/Kernels/scan.metal): cumsum, cumprod, cummax, cummin
// and logcumsumexp along any axis, forward or reverse, inclusive or exclusive, read in place from
// any strided view. A lane whose axis is contiguous in memory is scanned by a whole threadgroup
// ("row"); lanes along a strided axis are walked one thread each ("column": neighbouring threads
// read neighbouring memory). Floats accumulate in float32; integers in at least 32 bits, wrapping.
import type { Node } from "../../core/array.ts";
import { bfloat16, bool_, complex64, type Dtype, float16, float32, int64, uint64 } from "../../core/dtype.ts";
import { SCAN_OPS, Scan, type ScanParams, type ScanType } from "../../core/primitives/scan.ts";
import { Precision } from "../../core/trace.ts";
import { dtypeTag, mslType } from "./dtypes.ts";
import { type GpuEncoder, idxType } from "./encoder.ts";
import { type KernelInstance, kernelPipeline } from "./kernels.ts";
import { accumulatePrecision, type AxisLanes, axisLanes, dispatchLanes, laneLayout } from "./launch.ts";
import { registerGpu } from "./registry.ts";

/** Elements each thread of a row scan handles per chunk (ScanReads in scan.metal): 32, or 16 for 8-byte accumulators. */
function scanReads(acc: string): number {
  return acc === "complex64_t" || acc === "uint64_t" || acc === "int64_t" ? 16 : 32;
}

function isFloat(d: Dtype): boolean {
  return d === float32 || d === float16 || d === bfloat16;
}

/** The Op template-id: floats in float32, integer sums and products in unsigned 32 or 64 bits (wrapping), as reduce.ts. */
function scanOp(type: ScanType, d: Dtype, op: string): { op: string; acc: string } {
  let acc: string;
  if (isFloat(d)) acc = "float";
  else if (d === complex64) acc = "complex64_t";
  else if (type === "max" || type === "min") acc = mslType(d, op);
  else if (d === int64 || d === uint64) acc = "uint64_t";
  else acc = "uint32_t";
  const name = { sum: "Sum", prod: "Prod", max: "Max", min: "Min", logaddexp: "LogAddExpOp" }[type];
  return { op: `${name}<${acc}>`, acc };
}

interface ScanPlan extends AxisLanes {
  layout: "row" | "column";
}

function scanPlanOf(node: Node<ScanParams>): ScanPlan | null {
  const lanes = axisLanes(node.inputs[0]!, node.params.axis);
  return lanes && { ...lanes, layout: laneLayout(lanes) };
}

function scanKernel(plan: ScanPlan, type: ScanType, inD: Dtype, outD: Dtype): KernelInstance {
  const op = SCAN_OPS[type];
  const { op: opId } = scanOp(type, inD, op);
  const fn = plan.layout === "row" ? "scan_row" : "scan_col";
  const idx = idxType(plan.large);
  return {
    file: "scan.metal",
    name: `mg_${fn}_${type}_${dtypeTag(inD)}_${dtypeTag(outD)}${plan.large ? "_i64" : ""}`,
    instantiation: `${fn}<${mslType(inD, op)}, ${mslType(outD, op)}, ${opId}, ${idx}>`,
  };
}

// Sibling scans: a test (or a model) that scans a dtype one way usually scans it the other ways
// too, and on the simulator a compiler run costs ~60 ms before its first instance, so the first
// scan of a dtype and layout compiles the other scans its ops can ask for in the same run
// (speculative: a sibling the compiler rejects is dropped, kernels.ts). cumsum of bool counts in
// int32 and logcumsumexp takes floats only (ts/core/ops/reduce.ts), so those are not siblings.
function scanTypes(d: Dtype): ScanType[] {
  if (isFloat(d)) return ["sum", "prod", "max", "min", "logaddexp"];
  if (d === bool_) return ["prod", "max", "min"];
  return ["sum", "prod", "max", "min"];
}

/** The node's scan kernel, then its speculative siblings. */
function scanKernels(plan: ScanPlan, node: Node<ScanParams>): KernelInstance[] {
  const p = node.params;
  const inD = node.inputs[0]!.dtype;
  const outD = node.outputs[0]!.dtype;
  const siblings = inD === outD && !plan.large ? scanTypes(inD).filter((t) => t !== p.type) : []; // (large-index: rare, alone)
  return [scanKernel(plan, p.type, inD, outD), ...siblings.map((t) => ({ ...scanKernel(plan, t, inD, outD), speculative: true }))];
}

function scanPrecision(type: ScanType, d: Dtype, acc: string): string {
  if (isFloat(d) || d === complex64) return type === "max" || type === "min" ? Precision.exact : accumulatePrecision(d, "fp32");
  if (type === "max" || type === "min") return Precision.exact;
  return `${Precision.exact} (wrapping ${acc === "uint64_t" ? 64 : 32}-bit integer accumulate)`;
}

function encodeScan(enc: GpuEncoder, node: Node<ScanParams>): void {
  const x = node.inputs[0]!;
  const out = node.outputs[0]!;
  const p = node.params;
  const op = SCAN_OPS[p.type];
  if (p.type === "logaddexp" && !isFloat(x.dtype)) throw new Error(`[${op}] ${x.dtype.name} is not supported (floating inputs only).`);
  const plan = scanPlanOf(node)!;
  const [kernel, ...siblings] = scanKernels(plan, node);
  const pipeline = kernelPipeline(kernel!, siblings);
  // The output's stride along the axis: the elements after it.
  const inner = x.shape.slice(p.axis + 1).reduce((m, d) => m * d, 1);
  const flags = (p.reverse ? 1 : 0) | (p.inclusive ? 2 : 0);
  const io = { a: enc.input(x, 0), o: enc.output(out, 1), extra: [inner, flags] };
  const direction = `${p.reverse ? "reverse" : "forward"}, ${p.inclusive ? "inclusive" : "exclusive"}`;
  const { acc } = scanOp(p.type, x.dtype, op);
  dispatchLanes(enc, pipeline, plan, plan.layout, scanReads(acc), op, io, {
    primitives: ["Scan"],
    inputs: [x],
    outputs: [out],
    layout: `${plan.layout} (${direction})${plan.large ? ", large-index" : ""}`,
    precision: scanPrecision(p.type, x.dtype, acc),
  });
}

registerGpu(Scan, {
  kind: "kernel",
  kernels(node) {
    const plan = scanPlanOf(node);
    return plan ? scanKernels(plan, node) : [];
  },
  encode: encodeScan,
});
