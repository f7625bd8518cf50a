// The native CPU device: evaluates a stream's nodes with the kernels in Sources/MGCpu, fusing runs
// of elementwise nodes of one shape into one pass over memory, and falling back per node to the
// primitive's TypeScript reference where no native kernel exists (recorded in the kernel trace).
//
// MG_CPU_NATIVE=0 (or setNativeCpu(false)) runs every node on the TypeScript reference; MG_FUSION=0
// (or setCpuFusion(false)) runs elementwise nodes one by one. Fused and unfused runs give the same
// bits: a fused program performs the same operations with the same roundings, tile by tile.
import type { MgArray, Node } from "../../../core/array.ts";
import { type EvalContext, registerBackend } from "../../../core/graph.ts";
import { Precision, record, tracing } from "../../../core/trace.ts";
import { shapesEqual } from "../../../core/shape.ts";
import { bfloat16, complex64, type Dtype, float16, float64 } from "../../../core/dtype.ts";
import { Reduce } from "../../../core/primitives/reduce.ts";
import { ArgReduce } from "../../../core/primitives/argreduce.ts";
import { LogSumExp, Softmax } from "../../../core/primitives/softmax.ts";
import { Scan } from "../../../core/primitives/scan.ts";
import { AddMM, type AddMMParams, Matmul } from "../../../core/primitives/matmul.ts";
import { Reshape, reshapeStrides } from "../../../core/primitives/views.ts";
import { Contiguous, type ContiguousParams } from "../../../core/primitives/movement.ts";
import { lastError, lastNativeRun, nativeInfo } from "./ffi.ts";
import {
  nativeElementwiseOp, runArgReduce, runCopy, runElementwise, runMatmul, runReduce, runRegion,
  runScan, runSoftmax,
} from "./kernels.ts";
import { DivModPrimitive, opcodeOf } from "./opcodes.ts";

let nativeEnabled = process.env.MG_CPU_NATIVE !== "0";
let fusionEnabled = process.env.MG_FUSION !== "0";

/** Turns the native CPU kernels on or off (off: the TypeScript reference); returns the previous. */
export function setNativeCpu(enabled: boolean): boolean {
  const previous = nativeEnabled;
  nativeEnabled = enabled;
  return previous;
}

/** Turns CPU elementwise fusion on or off; returns the previous setting. */
export function setCpuFusion(enabled: boolean): boolean {
  const previous = fusionEnabled;
  fusionEnabled = enabled;
  return previous;
}

/** Longest elementwise chain one program runs (bounds the registers a tile needs). */
const MAX_FUSED_OPS = 64;

function inexact(d: Dtype): boolean {
  return d.kind === "f" || d.kind === "V" || d.kind === "c";
}

function syncInputs(node: Node): void {
  // Unified memory: a GPU result is readable once the batch that writes it has finished.
  for (const input of node.inputs) input.layout!.storage.sync();
}

// ---- the TypeScript reference (as ts/backend/cpu/index.ts runs it) --------------------------------

function runReference(node: Node, why: string | null): void {
  try {
    node.primitive.cpu(node.inputs, node.outputs, node.params);
  } catch (e) {
    if (!(e instanceof RangeError) || e.message.startsWith("[")) throw e;
    const outs = node.outputs.map((o) => o.describe()).join(", ");
    throw new RangeError(`[${node.primitive.name}] The CPU device could not allocate working memory for ${outs}: ${e.message}.`, { cause: e });
  }
  if (tracing()) {
    const copied = node.primitive.view && node.outputs.find((o) => !node.inputs.some((i) => i.layout!.storage === o.layout!.storage));
    const notes: string[] = [];
    if (copied) notes.push(`copy: ${node.primitive.name} of ${node.inputs[0]!.describe()} cannot be a view of its layout; its elements are copied row-contiguously`);
    if (why) notes.push(`fallback: ${why}; the TypeScript reference ran`);
    record({
      device: "cpu",
      kernel: `cpu:${node.primitive.name}`,
      primitives: [node.primitive.name],
      inputDtypes: node.inputs.map((i) => i.dtype.name),
      outputDtypes: node.outputs.map((o) => o.dtype.name),
      layout: node.inputs.every((i) => i.layout!.rowContiguous) ? "contiguous" : "strided",
      precision: node.primitive.view ? Precision.none : node.outputs.some((o) => inexact(o.dtype)) ? Precision.cpuReference : Precision.exact,
      notes,
    });
  }
}

// ---- trace records of native kernels ------------------------------------------------------------

/** The arithmetic precision of a native kernel computing `d` (16-bit floats compute in float32). */
function precisionOf(d: Dtype, accumulate: string | null): string {
  if (!inexact(d)) return Precision.exact;
  if (accumulate) return Precision.accumulate(accumulate, d.name);
  if (d === float16 || d === bfloat16) return `IEEE float32, rounded to ${d.name}`;
  if (d === complex64) return "float64, rounded to complex64";
  return Precision.ieee(d.name);
}

function layoutOf(inputs: readonly MgArray[]): string {
  return inputs.every((i) => i.layout!.rowContiguous) ? "contiguous" : "strided";
}

function recordNative(kernel: string, nodes: readonly Node[], inputs: readonly MgArray[], outputs: readonly MgArray[], precision: string, notes: string[] = []): void {
  record({
    device: "cpu",
    kernel: `cpu-native:${kernel}`,
    primitives: nodes.map((n) => n.primitive.name),
    inputDtypes: inputs.map((i) => i.dtype.name),
    outputDtypes: outputs.map((o) => o.dtype.name),
    layout: layoutOf(inputs),
    precision,
    notes,
  });
}

function gemmKernelName(dtype: Dtype): string {
  const info = nativeInfo();
  if (lastNativeRun().gemm === 1) return `gemm(blas ${info.blas})`;
  return `gemm(metalgrad ${info.isa} ${dtype === float64 ? "f64" : "f32"})`;
}

// ---- one node ----------------------------------------------------------------------------------------

/** Runs a node natively; false when no native kernel covers it (nothing was written). */
function runNative(node: Node): boolean {
  const p = node.primitive;
  if (opcodeOf(p) >= 0 || p === DivModPrimitive) {
    if (!runElementwise(node)) return false;
    if (tracing()) recordNative(p.name, [node], node.inputs, node.outputs, precisionOf(node.outputs[0]!.dtype, null));
    return true;
  }
  switch (p) {
    case Reduce: {
      if (!runReduce(node)) return false;
      if (tracing()) {
        const d = node.inputs[0]!.dtype;
        recordNative("reduce", [node], node.inputs, node.outputs, precisionOf(d, inexact(d) && d !== complex64 ? "float64" : null));
      }
      return true;
    }
    case ArgReduce:
      if (!runArgReduce(node)) return false;
      if (tracing()) recordNative("argreduce", [node], node.inputs, node.outputs, Precision.exact);
      return true;
    case Softmax:
    case LogSumExp: {
      if (!runSoftmax(node, p === LogSumExp)) return false;
      if (tracing()) {
        const d = node.inputs[0]!.dtype;
        recordNative(p === LogSumExp ? "logsumexp" : "softmax", [node], node.inputs, node.outputs, precisionOf(d, d === float64 ? null : "float32"));
      }
      return true;
    }
    case Scan: {
      if (!runScan(node)) return false;
      if (tracing()) {
        const d = node.inputs[0]!.dtype;
        recordNative("scan", [node], node.inputs, node.outputs, precisionOf(d, inexact(d) && d !== complex64 ? "float64" : null));
      }
      return true;
    }
    case Matmul:
    case AddMM: {
      if (!runMatmul(node, p === AddMM ? (node.params as AddMMParams) : null)) return false;
      if (tracing()) {
        const d = node.inputs[0]!.dtype;
        recordNative(gemmKernelName(d), [node], node.inputs, node.outputs, precisionOf(d, d === float64 ? null : "float32"));
      }
      return true;
    }
    case Reshape:
    case Contiguous: {
      const a = node.inputs[0]!;
      const out = node.outputs[0]!;
      const l = a.layout!;
      const isView =
        p === Reshape
          ? reshapeStrides(a.shape, l.strides, out.shape, l.rowContiguous) !== null
          : l.rowContiguous || ((node.params as ContiguousParams).allowColMajor && l.colContiguous);
      if (isView) return false; // a layout computation: the reference does it without copying
      if (!runCopy(a, out)) return false;
      if (tracing()) {
        recordNative("copy", [node], node.inputs, node.outputs, Precision.none, [
          `copy: ${p.name} of ${a.describe()} cannot be a view of its layout; its elements are copied row-contiguously`,
        ]);
      }
      return true;
    }
    default:
      return false;
  }
}

/** Native kernels exist for these primitives (for the dtypes the native side accepts). */
function hasNativeKernel(node: Node): boolean {
  const p = node.primitive;
  return opcodeOf(p) >= 0 || p === DivModPrimitive || p === Reduce || p === ArgReduce || p === Softmax ||
    p === LogSumExp || p === Scan || p === Matmul || p === AddMM;
}

function runNode(node: Node): void {
  syncInputs(node);
  if (nativeEnabled && runNative(node)) return;
  let why: string | null = null;
  if (nativeEnabled && tracing() && hasNativeKernel(node)) why = `no native kernel for ${node.primitive.name} on ${node.inputs.map((i) => i.dtype.name).join(", ")} (${lastError()})`;
  runReference(node, why);
}

// ---- fused regions --------------------------------------------------------------------------------------

function isFusable(node: Node): boolean {
  return node.outputs.length === 1 && opcodeOf(node.primitive) >= 0 && nativeElementwiseOp(node);
}

function readsAny(inputs: readonly MgArray[], arrays: ReadonlySet<MgArray>): boolean {
  for (let i = 0; i < inputs.length; i++) if (arrays.has(inputs[i]!)) return true;
  return false;
}

/** A region node's output is written if eval asked for it or a node outside the region reads it. */
function regionOutputs(nodes: readonly Node[], ctx: EvalContext): MgArray[] {
  const inside = new Map<MgArray, number>();
  for (const n of nodes) for (const i of n.inputs) inside.set(i, (inside.get(i) ?? 0) + 1);
  return nodes.map((n) => n.outputs[0]!).filter((o) => ctx.targets.has(o) || o.graphRefs > (inside.get(o) ?? 0));
}

function runRegionOrNodes(nodes: Node[], ctx: EvalContext): void {
  if (nodes.length === 1) {
    runNode(nodes[0]!);
    return;
  }
  for (const n of nodes) for (const i of n.inputs) i.layout?.storage.sync();
  const outputs = regionOutputs(nodes, ctx);
  if (runRegion(nodes, outputs)) {
    if (tracing()) {
      const produced = new Set(nodes.map((n) => n.outputs[0]!));
      const inputs = [...new Set(nodes.flatMap((n) => n.inputs.filter((i) => !produced.has(i))))];
      const d = nodes[nodes.length - 1]!.outputs[0]!.dtype;
      recordNative(`fused(${nodes.length})`, nodes, inputs, outputs, precisionOf(d, null));
    }
    return;
  }
  // some instruction has no native kernel: every node on its own (each output materialised)
  for (const n of nodes) runNode(n);
}

export const nativeCpuBackend = {
  run(nodes: readonly Node[], ctx: EvalContext): void {
    if (!nativeEnabled) {
      for (const node of nodes) runNode(node);
      return;
    }
    let open: Node[] = [];
    let inOpen = new Set<MgArray>();
    const close = () => {
      if (open.length === 0) return;
      const region = open;
      open = [];
      inOpen = new Set();
      runRegionOrNodes(region, ctx);
    };
    for (const node of nodes) {
      if (fusionEnabled && isFusable(node)) {
        const shape = node.outputs[0]!.shape;
        if (open.length > 0 && (!shapesEqual(open[0]!.outputs[0]!.shape, shape) || open.length >= MAX_FUSED_OPS)) close();
        open.push(node);
        inOpen.add(node.outputs[0]!);
        continue;
      }
      // a node that does not read the open region runs ahead of it
      if (open.length > 0 && readsAny(node.inputs, inOpen)) close();
      runNode(node);
    }
    close();
  },
};

registerBackend("cpu", nativeCpuBackend);
