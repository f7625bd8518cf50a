// Running nodes on a CPU-side backend: synchronously, one node at a time, in schedule order. Views
// come from the records' layout rules; every other node runs its kernel from a table. The
// TypeScript CPU device is `cpuBackend(cpuKernels)`; a native CPU backend can run the same loop
// over its own table falling back to `cpuKernels` (KernelRegistry's `fallback`).
import type { Node } from "../../core/array.ts";
import type { Backend } from "../../core/graph.ts";
import { opName } from "../../core/primitive.ts";
import { applyViews } from "../../core/layout.ts";
import type { KernelRegistry } from "../../core/registry.ts";
import { annotationsOf, Precision, record, tracing } from "../../core/trace.ts";
import type { CpuKernel } from "./registry.ts";

export interface CpuBackendOptions {
  /** Trace records name kernels `<prefix>:<Primitive>` (default "cpu"). */
  kernelPrefix?: string;
  /** Precision label of inexact results (default: the float64 reference's). */
  precision?: string;
}

export function cpuBackend(kernels: KernelRegistry<CpuKernel<any>>, options: CpuBackendOptions = {}): Backend {
  const prefix = options.kernelPrefix ?? "cpu";
  const inexactPrecision = options.precision ?? Precision.cpuReference;

  const runNode = (node: Node): void => {
    // Unified memory: a GPU result is readable once the batch that writes it has finished.
    for (const input of node.inputs) input.layout!.storage.sync();
    const p = node.primitive;
    if (p.placeholder) throw p.placeholder(node.params);
    // A layout-only primitive whose layout cannot express the view runs its kernel: a copy.
    let copied = false;
    try {
      const views = p.layout ? p.layout(node.inputs, node.inputs.map((i) => i.layout!), node.outputs, node.params) : null;
      if (views) applyViews(node.inputs, node.outputs, views);
      else {
        copied = p.layout !== undefined;
        kernels.require(node)(node.inputs, node.outputs, node.params);
      }
    } catch (e) {
      // A kernel that fails leaves no data behind: reading its outputs recomputes them, and fails
      // again, instead of showing what it wrote before failing (MG_CHECK_INDICES checks last).
      for (const o of node.outputs) if (o.node === node) o.discardData();
      // The CPU references work in JS arrays; the engine's allocation failure ("Out of memory",
      // "Invalid typed array length") names neither the op nor the size.
      if (!(e instanceof RangeError) || e.message.startsWith("[")) throw e;
      const outs = node.outputs.map((o) => o.describe()).join(", ");
      throw new RangeError(`[${opName(node)}] The CPU device could not allocate working memory for ${outs}: ${e.message}.`, { cause: e });
    }
    if (tracing()) {
      const inexact = node.outputs.some((o) => o.dtype.kind === "f" || o.dtype.kind === "V" || o.dtype.kind === "c");
      record({
        device: "cpu",
        kernel: `${prefix}:${p.name}`,
        primitives: [p.name],
        inputDtypes: node.inputs.map((i) => i.dtype.name),
        outputDtypes: node.outputs.map((o) => o.dtype.name),
        layout: node.inputs.every((i) => i.layout!.rowContiguous) ? "contiguous" : "strided",
        precision: p.layout ? Precision.none : inexact ? inexactPrecision : Precision.exact,
        // A view whose input's layout cannot express it (a reshape of a non-contiguous view, a
        // strided array viewed as a wider dtype) was copied: the trace says so.
        notes: [
          ...(copied ? [`copy: ${p.name} of ${node.inputs[0]!.describe()} cannot be a view of its layout; its elements are copied row-contiguously`] : []),
          ...annotationsOf(node.outputs),
        ],
      });
    }
  };

  return {
    run(nodes, ctx) {
      for (const node of nodes) {
        runNode(node);
        // The node's inputs are read: the last use of an internal array frees it now.
        ctx.finished(node);
      }
    },
  };
}
