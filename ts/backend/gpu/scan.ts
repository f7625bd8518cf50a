// Cumulative reductions on the GPU (Sources/Kernels/scan.metal): cumsum, cumprod, cummax, cummin
// and logcumsumexp along any axis, forward or reverse, inclusive or exclusive, read in place from
// any strided view. A lane whose axis is contiguous in memory is scanned by a whole threadgroup
// ("row"); lanes along a strided axis are walked one thread each ("column": neighbouring threads
// read neighbouring memory). Floats accumulate in float32; integers in at least 32 bits, wrapping.
import type { Node } from "../../core/array.ts";
import { bfloat16, complex64, type Dtype, float16, float32, int64, uint64 } from "../../core/dtype.ts";
import type { GpuRule, KernelInstance } from "../../core/primitive.ts";
import type { ScanParams, ScanType } from "../../core/primitives/scan.ts";
import { Precision } from "../../core/trace.ts";
import { dtypeTag, mslType } from "./dtypes.ts";
import { elementwiseGrid } from "./elementwise.ts";
import { type GpuEncoder, idxType, int32Bytes, int64Bytes, linearThreadgroup, needsLargeIndex } from "./encoder.ts";
import { kernelPipeline } from "./kernels.ts";
import { accumulatePrecision, type Dim, groupGrid, knownStrides, mergeDims, simdThreadgroup, without } from "./reduce.ts";

/** Elements each thread of a row scan handles per chunk (MG_SCAN_READS in scan.metal). */
const SCAN_READS = 4;
/** Lanes at least this long (with a contiguous axis) are scanned by a threadgroup each. */
const ROW_MIN = 32;

const OP_NAMES: Record<ScanType, string> = { sum: "cumsum", prod: "cumprod", max: "cummax", min: "cummin", logaddexp: "logcumsumexp" };

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

interface ScanPlan {
  layout: "row" | "column";
  /** The other dimensions in row-major lane order (merged). */
  others: Dim[];
  n: number;
  axisStride: number;
  lanes: number;
  /** Elements after the axis: the output's stride along it. */
  inner: number;
  large: boolean;
}

function scanPlanOf(node: Node): ScanPlan | null {
  const a = node.inputs[0]!;
  const strides = knownStrides(a);
  if (!strides) return null;
  const p = node.params as ScanParams;
  const n = a.shape[p.axis]!;
  const axisStride = strides[p.axis]!;
  const others = mergeDims(without(a.shape, p.axis).map((size, i) => ({ size, stride: without(strides, p.axis)[i]! })));
  const lanes = n === 0 ? 0 : a.size / n;
  const inner = a.shape.slice(p.axis + 1).reduce((x, y) => x * y, 1);
  const cooperative = n >= ROW_MIN && (Math.abs(axisStride) <= 1 || lanes < 32);
  const large = needsLargeIndex(a.size, [a]);
  return { layout: cooperative ? "row" : "column", others, n, axisStride, lanes, inner, large };
}

function scanKernel(plan: ScanPlan, node: Node): KernelInstance {
  const p = node.params as ScanParams;
  const inD = node.inputs[0]!.dtype;
  const outD = node.outputs[0]!.dtype;
  const op = OP_NAMES[p.type];
  const { op: opId } = scanOp(p.type, inD, op);
  const fn = plan.layout === "row" ? "scan_row" : "scan_col";
  const idx = idxType(plan.large);
  return {
    file: "scan.metal",
    name: `mg_${fn}_${p.type}_${dtypeTag(inD)}_${dtypeTag(outD)}${plan.large ? "_i64" : ""}`,
    instantiation: `${fn}<${mslType(inD, op)}, ${mslType(outD, op)}, ${opId}, ${idx}>`,
  };
}

function scanPrecision(type: ScanType, d: Dtype, acc: string): string {
  if (isFloat(d) || d === complex64) return type === "max" || type === "min" ? Precision.exact : accumulatePrecision(d, "fp32");
  if (type === "max" || type === "min") return Precision.exact;
  return `${Precision.exact} (wrapping ${acc === "uint64_t" ? 64 : 32}-bit integer accumulate)`;
}

function encodeScan(enc: GpuEncoder, node: Node): void {
  const x = node.inputs[0]!;
  const out = node.outputs[0]!;
  const p = node.params as ScanParams;
  const op = OP_NAMES[p.type];
  if (p.type === "logaddexp" && !isFloat(x.dtype)) throw new Error(`[${op}] ${x.dtype.name} is not supported (floating inputs only).`);
  const plan = scanPlanOf(node)!;
  const pipeline = kernelPipeline(scanKernel(plan, node));
  const a = enc.input(x, 0);
  const o = enc.output(out, 1);
  const flags = (p.reverse ? 1 : 0) | (p.inclusive ? 2 : 0);
  const bytes = [
    int32Bytes(2, plan.others.map((d) => d.size)),
    int64Bytes(3, plan.others.map((d) => d.stride)),
    int32Bytes(4, [plan.others.length]),
    int64Bytes(5, [a.base, plan.n, plan.lanes, plan.axisStride, plan.inner, flags]),
  ];
  const direction = `${p.reverse ? "reverse" : "forward"}, ${p.inclusive ? "inclusive" : "exclusive"}`;
  const trace = {
    primitives: ["Scan"],
    inputs: [x],
    outputs: [out],
    layout: `${plan.layout} (${direction})${plan.large ? ", large-index" : ""}`,
    precision: scanPrecision(p.type, x.dtype, scanOp(p.type, x.dtype, op).acc),
  };
  if (plan.layout === "row") {
    const tg = simdThreadgroup(pipeline, Math.ceil(plan.n / SCAN_READS), op);
    enc.dispatch({ pipeline, buffers: [a.binding, o.binding], bytes, grid: groupGrid(plan.lanes), threadgroup: [tg, 1, 1], mode: "threadgroups", mustWrite: [1] }, trace);
    return;
  }
  const grid = elementwiseGrid(plan.lanes);
  enc.dispatch(
    { pipeline, buffers: [a.binding, o.binding], bytes, grid, threadgroup: linearThreadgroup(pipeline, grid[0]), mustWrite: [1] },
    trace,
  );
}

export const scanRule: GpuRule = {
  kind: "kernel",
  kernels(node) {
    const plan = scanPlanOf(node);
    return plan ? [scanKernel(plan, node)] : [];
  },
  encode: encodeScan,
};
