// The native CPU device: evaluates a stream's nodes with the kernels in Sources/MGCpu (its table,
// ./registry.ts, falls back per primitive to the TypeScript kernels), and fuses runs of elementwise
// nodes of one shape into one program that makes one pass over memory.
//
// MG_CPU_NATIVE=0 (or setNativeCpu(false)) runs every node on the TypeScript reference; MG_FUSION=0
// (or setCpuFusion(false)) runs elementwise nodes one by one. Fused and unfused runs give the same
// bits: a fused program performs the same operations with the same roundings, tile by tile.
import "../index.ts"; // the TypeScript kernels this table falls back to
import "./register.ts";
import type { MgArray, Node } from "../../../core/array.ts";
import { type Backend, type EvalContext, registerBackend } from "../../../core/graph.ts";
import { applyViews } from "../../../core/layout.ts";
import { shapesEqual } from "../../../core/shape.ts";
import { annotationsOf, Precision, record, tracing } from "../../../core/trace.ts";
import { opName } from "../../../core/primitive.ts";
import { nativeElementwiseOp, runElementwise, runRegion } from "./kernels.ts";
import { opcodeOf } from "./opcodes.ts";
import { inexact, precisionOf } from "./register.ts";
import { nativeEnabled, nativeKernels, takeNote } from "./registry.ts";

export { setNativeCpu } from "./registry.ts";
export { nativeInfo, setGemmProvider, setNativeIsa, setNativeThreads } from "./ffi.ts";

let fusionEnabled = process.env.MG_FUSION !== "0";

/** Turns CPU elementwise fusion on or off; returns the previous setting. */
export function setCpuFusion(enabled: boolean): boolean {
  const previous = fusionEnabled;
  fusionEnabled = enabled;
  return previous;
}

/** Longest elementwise chain one program runs (bounds the registers a tile needs). */
const MAX_FUSED_OPS = 64;

function layoutOf(inputs: readonly MgArray[]): string {
  return inputs.every((i) => i.layout!.rowContiguous) ? "contiguous" : "strided";
}

/**
 * The engine's allocation failure (TypeScript kernels) and the runtime's (an output buffer) name
 * neither the op nor the array: both get the op's tag.
 */
function allocationError(node: Node, outputs: readonly MgArray[], e: unknown): unknown {
  if (!(e instanceof Error)) return e;
  const engine = e instanceof RangeError && !e.message.startsWith("[");
  if (!engine && !e.message.startsWith("[mg_buffer_new]")) return e;
  const outs = outputs.map((o) => o.describe()).join(", ");
  return new RangeError(`[${opName(node)}] The CPU device could not allocate working memory for ${outs}: ${e.message}${engine ? "." : ""}`, { cause: e });
}

function runNode(node: Node): void {
  // Unified memory: a GPU result is readable once the batch that writes it has finished.
  for (const input of node.inputs) input.layout!.storage.sync();
  const p = node.primitive;
  if (p.placeholder) throw p.placeholder(node.params);
  let copied = false;
  try {
    const views = p.layout ? p.layout(node.inputs, node.inputs.map((i) => i.layout!), node.outputs, node.params) : null;
    if (views) applyViews(node.inputs, node.outputs, views);
    else {
      copied = p.layout !== undefined;
      nativeKernels.require(node)(node.inputs, node.outputs, node.params);
    }
  } catch (e) {
    // A kernel that fails leaves no data behind: reading its outputs recomputes them, and fails
    // again, instead of showing what it wrote before failing (MG_CHECK_INDICES checks last).
    for (const o of node.outputs) if (o.node === node) o.discardData();
    throw allocationError(node, node.outputs, e);
  }
  if (tracing()) {
    const note = takeNote();
    const anyInexact = node.outputs.some((o) => inexact(o.dtype));
    record({
      device: "cpu",
      kernel: note?.kernel ?? `cpu:${p.name}`,
      primitives: [p.name],
      inputDtypes: node.inputs.map((i) => i.dtype.name),
      outputDtypes: node.outputs.map((o) => o.dtype.name),
      layout: layoutOf(node.inputs),
      precision: note?.precision ?? (p.layout && !copied ? Precision.none : anyInexact ? Precision.cpuReference : Precision.exact),
      notes: [
        ...(note?.notes ?? (copied ? [`copy: ${p.name} of ${node.inputs[0]!.describe()} cannot be a view of its layout; its elements are copied row-contiguously`] : [])),
        ...annotationsOf(node.outputs),
      ],
    });
  }
}

// ---- fused regions --------------------------------------------------------------------------------------

/** The common tiny-op path: one elementwise node straight to its native kernel (no table lookup,
 *  no wrappers); false when the native side declines (the caller then runs the table's kernel). */
function runElementwiseNode(node: Node): boolean {
  const inputs = node.inputs;
  for (let i = 0; i < inputs.length; i++) inputs[i]!.layout!.storage.sync();
  try {
    return runElementwise(node.primitive, inputs, node.outputs);
  } catch (e) {
    throw allocationError(node, node.outputs, e);
  }
}

function isFusable(node: Node): boolean {
  return node.outputs.length === 1 && node.primitive.fusion !== undefined && opcodeOf(node.primitive) >= 0 && nativeElementwiseOp(node);
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
  if (nodes.length > 1) {
    for (const n of nodes) for (const i of n.inputs) i.layout?.storage.sync();
    const outputs = regionOutputs(nodes, ctx);
    let ran: boolean;
    try {
      ran = runRegion(nodes, outputs);
    } catch (e) {
      throw allocationError(nodes[nodes.length - 1]!, outputs, e);
    }
    if (ran) {
      if (tracing()) {
        const produced = new Set(nodes.map((n) => n.outputs[0]!));
        const inputs = [...new Set(nodes.flatMap((n) => n.inputs.filter((i) => !produced.has(i))))];
        const d = nodes[nodes.length - 1]!.outputs[0]!.dtype;
        record({
          device: "cpu",
          kernel: `cpu-native:fused(${nodes.length})`,
          primitives: nodes.map((n) => n.primitive.name),
          inputDtypes: inputs.map((i) => i.dtype.name),
          outputDtypes: outputs.map((o) => o.dtype.name),
          layout: layoutOf(inputs),
          precision: precisionOf(d, null),
          notes: annotationsOf(outputs),
        });
      }
      for (const n of nodes) ctx.finished(n);
      return;
    }
  }
  // one node, or an instruction without a native kernel: node by node, each output materialised
  for (const n of nodes) {
    if (nodes.length === 1 && !tracing() && runElementwiseNode(n)) {
      ctx.finished(n);
      continue;
    }
    runNode(n);
    ctx.finished(n);
  }
}

// Open regions, one per nesting level (a kernel may evaluate another graph: custom functions).
const openRegions: Node[][] = [];
let depth = 0;

/** Whether `node` reads the output of a node in the open region. */
function readsRegion(node: Node, open: readonly Node[]): boolean {
  const inputs = node.inputs;
  for (let i = 0; i < inputs.length; i++) {
    const x = inputs[i]!;
    if (x.layout === null && x.node !== null && open.includes(x.node)) return true;
  }
  return false;
}

function closeRegion(open: Node[], ctx: EvalContext): void {
  if (open.length === 1) {
    // the common case (a lone elementwise op): no region array
    const node = open[0]!;
    open.length = 0;
    if (!tracing() && runElementwiseNode(node)) ctx.finished(node);
    else runRegionOrNodes([node], ctx);
    return;
  }
  const region = open.splice(0);
  runRegionOrNodes(region, ctx);
}

export const nativeCpuBackend: Backend = {
  run(nodes, ctx) {
    if (!nativeEnabled() || !fusionEnabled) {
      for (const node of nodes) {
        runNode(node);
        ctx.finished(node);
      }
      return;
    }
    const open = (openRegions[depth] ??= []);
    depth++;
    try {
      for (const node of nodes) {
        if (isFusable(node)) {
          if (open.length > 0 && (!shapesEqual(open[0]!.outputs[0]!.shape, node.outputs[0]!.shape) || open.length >= MAX_FUSED_OPS)) closeRegion(open, ctx);
          open.push(node);
          continue;
        }
        // a node that does not read the open region runs ahead of it
        if (open.length > 0 && readsRegion(node, open)) closeRegion(open, ctx);
        runNode(node);
        ctx.finished(node);
      }
      if (open.length > 0) closeRegion(open, ctx);
    } finally {
      open.length = 0;
      depth--;
    }
  },
};

registerBackend("cpu", nativeCpuBackend);
