// Reductions on the GPU (Sources/Kernels/reduce.metal, arg_reduce.metal): Reduce (sum, prod, max,
// min, and, or) and ArgReduce (argmax, argmin). Strided inputs are read in place — no copies: the
// host collapses the input's dimensions into kept and reduced groups and picks a layout variant:
//   all      every element into one value (two passes through scratch memory when large)
//   row      the reduced elements of an output are contiguous (stride 1)
//   column   the output's innermost kept dimension is contiguous in the input
//   general  anything else (elem_to_loc over the reduced dimensions)
import type { MgArray, Node } from "../../core/array.ts";
import { bfloat16, complex64, type Dtype, float16, float32, int64, uint64 } from "../../core/dtype.ts";
import { ArgReduce, type ArgReduceParams } from "../../core/primitives/argreduce.ts";
import { REDUCE_OPS, Reduce, type ReduceParams, type ReduceType } from "../../core/primitives/reduce.ts";
import { Precision } from "../../core/trace.ts";
import { dtypeTag, mslType } from "./dtypes.ts";
import { type GpuEncoder, idxType, int32Bytes, int64Bytes, needsLargeIndex } from "./encoder.ts";
import { type KernelInstance, kernelPipeline } from "./kernels.ts";
import {
  accumulatePrecision, type AxisLanes, axisLanes, type Dim, dispatchLanes, elementwiseGrid, groupGrid, knownStrides, laneLayout,
  linearThreadgroup, mergeDims, nextPow2, simdThreadgroup,
} from "./launch.ts";
import { registerGpu } from "./registry.ts";

const SIMD = 32;

// ---------------------------------------------------------------------------------------------
// Accumulators

interface Accumulator {
  /** MSL type of the accumulator (the Op's `acc`). */
  msl: string;
  /** Its byte size (scratch buffers of two-pass reductions). */
  bytes: number;
  /** The Op template-id, e.g. `Sum<float>`. */
  op: string;
}

/** Sums and products accumulate floats in float32 and integers in at least 32 bits, as MLX. */
function accumulatorOf(type: ReduceType, d: Dtype, op: string): Accumulator {
  if (type === "and") return { msl: "bool", bytes: 1, op: "And" };
  if (type === "or") return { msl: "bool", bytes: 1, op: "Or" };
  let msl: string;
  let bytes: number;
  if (d === float16 || d === bfloat16 || d === float32) [msl, bytes] = ["float", 4];
  else if (d === complex64) [msl, bytes] = ["complex64_t", 8];
  else if (type === "max" || type === "min") [msl, bytes] = [mslType(d, op), d.size];
  // Integer sums and products wrap: unsigned arithmetic wraps by definition (signed overflow is
  // undefined in MSL as in C++); the bits equal two's-complement results.
  else if (d === int64 || d === uint64) [msl, bytes] = ["uint64_t", 8];
  else [msl, bytes] = ["uint32_t", 4];
  const name = { sum: "Sum", prod: "Prod", max: "Max", min: "Min" }[type];
  return { msl, bytes, op: `${name}<${msl}>` };
}

function reducePrecision(type: ReduceType, d: Dtype, acc: Accumulator): string {
  if (type === "sum" || type === "prod") {
    if (d === float16 || d === bfloat16 || d === float32 || d === complex64) return accumulatePrecision(d, "fp32");
    return `${Precision.exact} (wrapping ${acc.bytes * 8}-bit integer accumulate)`;
  }
  return Precision.exact;
}

// ---------------------------------------------------------------------------------------------
// Reduce: planning

export type ReduceLayout = "all" | "row" | "column" | "general" | "empty";

export interface ReducePlan {
  layout: ReduceLayout;
  /** Kept dimensions in output order (merged where contiguous). */
  kept: Dim[];
  /** Reduced dimensions (made non-negative, sorted by stride, merged). */
  reduced: Dim[];
  /** Elements added to the input's base: flipping a negative reduced stride starts at its far end. */
  baseShift: number;
  /** Elements reduced into each output. */
  count: number;
  outputs: number;
  large: boolean;
}

/** How a Reduce over `axes` of a view with `shape`/`strides` runs (with 64-bit indices if `large`). */
export function planReduce(shape: readonly number[], strides: readonly number[], axes: readonly number[], large = false): ReducePlan {
  const size = shape.reduce((a, b) => a * b, 1);
  let count = 1;
  let outputs = 1;
  shape.forEach((d, i) => (axes.includes(i) ? (count *= d) : (outputs *= d)));
  if (size === 0) return { layout: "empty", kept: [], reduced: [], baseShift: 0, count, outputs, large: false };
  let baseShift = 0;
  const reducedDims: Dim[] = [];
  const keptDims: Dim[] = [];
  shape.forEach((d, i) => {
    if (d === 1) return;
    let s = strides[i]!;
    if (axes.includes(i)) {
      // The order elements are combined in does not matter: walk a reversed axis forwards.
      if (s < 0) {
        baseShift += (d - 1) * s;
        s = -s;
      }
      reducedDims.push({ size: d, stride: s });
    } else keptDims.push({ size: d, stride: s });
  });
  // Largest stride first, broadcast (stride 0) dimensions last, then merge runs.
  reducedDims.sort((a, b) => (a.stride === 0) !== (b.stride === 0) ? (a.stride === 0 ? 1 : -1) : b.stride - a.stride);
  const reduced = mergeDims(reducedDims);
  const kept = mergeDims(keptDims);
  let layout: ReduceLayout;
  if (kept.length === 0) layout = "all";
  else if (reduced.length === 1 && reduced[0]!.stride === 1) layout = "row";
  else if (kept[kept.length - 1]!.stride === 1) layout = "column";
  else layout = "general";
  return { layout, kept, reduced, baseShift, count, outputs, large };
}

/**
 * Elements each thread of an all/row/general reduction reads (at least): enough that the
 * threadgroup's combining steps (simd_sum, barriers) are a small share of its work, on a GPU and
 * more so on the simulator, which runs those steps once per lane.
 */
export const REDUCE_PER_THREAD = 16;
/** Threads per threadgroup an all/row/general reduction of `count` elements wants. */
function laneThreads(count: number): number {
  return Math.min(1024, Math.ceil(count / REDUCE_PER_THREAD));
}

/** Threadgroups of the first pass of an all-reduce (one when it fits one threadgroup's budget). */
export const ALL_REDUCE_PER_THREAD = 16;
function allReduceGroups(count: number, tg: number): number {
  return Math.min(512, Math.max(1, Math.ceil(count / (tg * ALL_REDUCE_PER_THREAD))));
}

interface ReduceKernels {
  main: KernelInstance;
  /** Second pass of a two-pass all-reduce (partials → output). */
  finish?: KernelInstance;
  acc: Accumulator;
}

const KERNEL_OF: Record<Exclude<ReduceLayout, "empty">, string> = { all: "reduce_all", row: "reduce_row", column: "reduce_col", general: "reduce_general" };

/** Outputs of at most this many elements each, when there are many, get one thread each. */
const SMALL_REDUCTION = 16;
const MANY_OUTPUTS = 256;

/**
 * The kernel a layout runs: a threadgroup per output would leave most threads idle when each
 * output reduces only a few elements, so many small row/general reductions run on the column
 * kernel — one thread per output, which reads any strides.
 */
function kernelLayout(plan: ReducePlan): Exclude<ReduceLayout, "empty"> {
  if (plan.layout === "empty") throw new Error("[reduce] internal: an empty reduction has no reading kernel");
  const small = (plan.layout === "row" || plan.layout === "general") && plan.count <= SMALL_REDUCTION && plan.outputs >= MANY_OUTPUTS;
  return small ? "column" : plan.layout;
}

function reduceKernelsFor(plan: ReducePlan, type: ReduceType, inDtype: Dtype, outDtype: Dtype, twoPass: boolean): ReduceKernels {
  const op = REDUCE_OPS[type];
  const acc = accumulatorOf(type, inDtype, op);
  const T = mslType(inDtype, op);
  const U = mslType(outDtype, op);
  const tagT = dtypeTag(inDtype);
  const tagU = dtypeTag(outDtype);
  if (plan.layout === "empty") {
    // "> >": the simulator's translator takes a nested template-id closed by ">>" for the kernel.
    return { main: { file: "reduce.metal", name: `mg_reduce_init_${type}_${tagU}`, instantiation: `reduce_init<${U}, ${acc.op} >` }, acc };
  }
  const idx = idxType(plan.large);
  const suffix = plan.large ? "_i64" : "";
  const kernel = kernelLayout(plan);
  const fn = KERNEL_OF[kernel];
  const variant = kernel === "column" ? "col" : kernel;
  if (plan.layout === "all" && twoPass) {
    const accTag = acc.msl.replace(/_t$/, "").replace("complex64", "c64");
    return {
      main: { file: "reduce.metal", name: `mg_reduce_all_${type}_${tagT}_${accTag}${suffix}`, instantiation: `${fn}<${T}, ${acc.msl}, ${acc.op}, ${idx}>` },
      finish: { file: "reduce.metal", name: `mg_reduce_all_${type}_${accTag}_${tagU}`, instantiation: `${fn}<${acc.msl}, ${U}, ${acc.op}, uint>` },
      acc,
    };
  }
  return { main: { file: "reduce.metal", name: `mg_reduce_${variant}_${type}_${tagT}_${tagU}${suffix}`, instantiation: `${fn}<${T}, ${U}, ${acc.op}, ${idx}>` }, acc };
}

function reducePlanOf(node: Node<ReduceParams>): ReducePlan | null {
  const a = node.inputs[0]!;
  const strides = knownStrides(a);
  if (!strides) return null;
  return planReduce(a.shape, strides, node.params.axes, needsLargeIndex(a.size, [a]));
}

function isTwoPass(plan: ReducePlan): boolean {
  return plan.layout === "all" && allReduceGroups(plan.count, laneThreads(plan.count)) > 1;
}

function reduceKernels(node: Node<ReduceParams>): KernelInstance[] {
  const plan = reducePlanOf(node);
  if (!plan) return [];
  const p = node.params;
  const k = reduceKernelsFor(plan, p.type, node.inputs[0]!.dtype, node.outputs[0]!.dtype, isTwoPass(plan));
  return k.finish ? [k.main, k.finish] : [k.main];
}

// ---------------------------------------------------------------------------------------------
// Reduce: encoding

function encodeReduce(enc: GpuEncoder, node: Node<ReduceParams>): void {
  const x = node.inputs[0]!;
  const out = node.outputs[0]!;
  const p = node.params;
  const plan = reducePlanOf(node)!;
  const op = REDUCE_OPS[p.type];
  const twoPass = isTwoPass(plan);
  const kernels = reduceKernelsFor(plan, p.type, x.dtype, out.dtype, twoPass);
  const precision = reducePrecision(p.type, x.dtype, kernels.acc);
  const trace = (layout: string, inputs: readonly MgArray[] = [x]) => ({ primitives: ["Reduce"], inputs, outputs: [out], layout, precision });
  const largeTag = plan.large ? ", large-index" : "";

  if (plan.layout === "empty") {
    // Nothing to read: every output is the identity (sum of nothing is 0, product 1, all true).
    const pipeline = kernelPipeline(kernels.main);
    const o = enc.output(out, 0);
    const grid = elementwiseGrid(out.size);
    enc.dispatch(
      { pipeline, buffers: [o.binding], bytes: [int64Bytes(1, [out.size])], grid, threadgroup: linearThreadgroup(pipeline, grid[0]), mustWrite: [0] },
      trace("empty (identity fill)", []),
    );
    return;
  }

  const a = enc.input(x, 0);
  const base = a.base + plan.baseShift;
  const pipeline = kernelPipeline(kernels.main);

  if (plan.layout === "all") {
    // Logically contiguous after merging: index directly; otherwise walk the reduced dimensions.
    const contiguous = plan.reduced.length === 1 && plan.reduced[0]!.stride === 1;
    const dims = plan.reduced;
    const tg = simdThreadgroup(pipeline, laneThreads(plan.count), op);
    const groups = twoPass ? allReduceGroups(plan.count, tg) : 1;
    const bytes = [
      int32Bytes(2, dims.map((d) => d.size)),
      int64Bytes(3, dims.map((d) => d.stride)),
      int32Bytes(4, [dims.length]),
      int64Bytes(5, [base, plan.count, contiguous ? 1 : 0]),
    ];
    if (!twoPass) {
      const o = enc.output(out, 1);
      enc.dispatch(
        { pipeline, buffers: [a.binding, o.binding], bytes, grid: [1, 1, 1], threadgroup: [tg, 1, 1], mode: "threadgroups", mustWrite: [1] },
        trace(`all${largeTag}`),
      );
      return;
    }
    // Pass 1: one partial per threadgroup into scratch memory; pass 2: the partials into the output.
    const scratch = enc.temporary(groups * kernels.acc.bytes);
    const partials = { index: 1, buffer: scratch, offset: 0, length: groups * kernels.acc.bytes };
    enc.dispatch(
      { pipeline, buffers: [a.binding, { ...partials, access: "write" }], bytes, grid: [groups, 1, 1], threadgroup: [tg, 1, 1], mode: "threadgroups", mustWrite: [1] },
      { ...trace(`all, two-pass (pass 1 of 2: ${groups} partials)${largeTag}`), notes: [`scratch: ${groups} ${kernels.acc.msl} partials`] },
    );
    const finish = kernelPipeline(kernels.finish!);
    const o = enc.output(out, 1);
    const tg2 = simdThreadgroup(finish, laneThreads(groups), op);
    enc.dispatch(
      {
        pipeline: finish,
        buffers: [{ ...partials, index: 0, access: "read" }, o.binding],
        bytes: [int32Bytes(2, [groups]), int64Bytes(3, [1]), int32Bytes(4, [1]), int64Bytes(5, [0, groups, 1])],
        grid: [1, 1, 1],
        threadgroup: [tg2, 1, 1],
        mode: "threadgroups",
        mustWrite: [1],
      },
      trace("all, two-pass (pass 2 of 2)"),
    );
    return;
  }

  const o = enc.output(out, 1);
  const kept = plan.kept;
  const reduced = plan.reduced;
  const bytes = [
    int32Bytes(2, kept.map((d) => d.size)),
    int64Bytes(3, kept.map((d) => d.stride)),
    int32Bytes(4, reduced.map((d) => d.size)),
    int64Bytes(5, reduced.map((d) => d.stride)),
    int32Bytes(6, [kept.length, reduced.length]),
    int64Bytes(7, [base, plan.count, plan.outputs]),
  ];
  const buffers = [a.binding, o.binding];
  if (kernelLayout(plan) === "column") {
    const ncols = kept[kept.length - 1]!.size;
    const max = Math.min(1024, pipeline.maxTotalThreadsPerThreadgroup);
    const tx = Math.min(SIMD, nextPow2(ncols), max);
    // Few columns leave room for more rows of partial sums (tall, narrow inputs).
    const ty = Math.max(1, Math.min(Math.floor(max / tx), nextPow2(Math.ceil(plan.count / 8))));
    const groups = Math.ceil(ncols / tx) * (plan.outputs / ncols);
    enc.dispatch(
      { pipeline, buffers, bytes, grid: groupGrid(groups), threadgroup: [tx, ty, 1], mode: "threadgroups", mustWrite: [1] },
      trace(`${plan.layout === "column" ? "column" : `${plan.layout}, ${plan.count} per output (one thread each)`}${largeTag}`),
    );
    return;
  }
  const tg = simdThreadgroup(pipeline, laneThreads(plan.count), op);
  enc.dispatch(
    { pipeline, buffers, bytes, grid: groupGrid(plan.outputs), threadgroup: [tg, 1, 1], mode: "threadgroups", mustWrite: [1] },
    trace(`${plan.layout}${largeTag}`),
  );
}

registerGpu(Reduce, { kind: "kernel", kernels: reduceKernels, encode: encodeReduce });

// ---------------------------------------------------------------------------------------------
// ArgReduce

interface ArgPlan extends AxisLanes {
  layout: "row" | "column";
}

function argPlanOf(node: Node<ArgReduceParams>): ArgPlan | null {
  const a = node.inputs[0]!;
  const lanes = axisLanes(a, node.params.axis);
  if (!lanes) return null;
  // complex64's ordering with NaN parts is only defined as a walk, so it always walks.
  return { ...lanes, layout: a.dtype === complex64 ? "column" : laneLayout(lanes) };
}

function argKernel(plan: ArgPlan, node: Node<ArgReduceParams>): KernelInstance {
  const p = node.params;
  const d = node.inputs[0]!.dtype;
  const T = mslType(d, p.type);
  const fn = plan.layout === "row" ? "arg_reduce_row" : "arg_reduce_col";
  const idx = idxType(plan.large);
  return {
    file: "arg_reduce.metal",
    name: `mg_${fn}_${p.type}_${dtypeTag(d)}${plan.large ? "_i64" : ""}`,
    instantiation: `${fn}<${T}, ${p.type === "argmax"}, ${idx}>`,
  };
}

function encodeArgReduce(enc: GpuEncoder, node: Node<ArgReduceParams>): void {
  const x = node.inputs[0]!;
  const out = node.outputs[0]!;
  const plan = argPlanOf(node)!;
  const pipeline = kernelPipeline(argKernel(plan, node));
  const io = { a: enc.input(x, 0), o: enc.output(out, 1) };
  dispatchLanes(enc, pipeline, plan, plan.layout, 4, node.params.type, io, {
    primitives: ["ArgReduce"],
    inputs: [x],
    outputs: [out],
    layout: `${plan.layout}${plan.large ? ", large-index" : ""}`,
    precision: Precision.exact,
  });
}

registerGpu(ArgReduce, {
  kind: "kernel",
  kernels(node) {
    const plan = argPlanOf(node);
    return plan ? [argKernel(plan, node)] : [];
  },
  encode: encodeArgReduce,
});
