// The CPU device: every primitive's TypeScript reference implementation, run synchronously.
import type { Node } from "../../core/array.ts";
import { registerBackend } from "../../core/graph.ts";
import { annotationsOf, Precision, record, tracing } from "../../core/trace.ts";

function runNode(node: Node): void {
  // Unified memory: a GPU result is readable once the batch that writes it has finished.
  for (const input of node.inputs) input.layout!.storage.sync();
  try {
    node.primitive.cpu(node.inputs, node.outputs, node.params);
  } catch (e) {
    // The CPU references work in JS arrays; the engine's allocation failure ("Out of memory",
    // "Invalid typed array length") names neither the op nor the size.
    if (!(e instanceof RangeError) || e.message.startsWith("[")) throw e;
    const outs = node.outputs.map((o) => o.describe()).join(", ");
    throw new RangeError(`[${node.primitive.name}] The CPU device could not allocate working memory for ${outs}: ${e.message}.`, { cause: e });
  }
  if (tracing()) {
    const inexact = node.outputs.some((o) => o.dtype.kind === "f" || o.dtype.kind === "V" || o.dtype.kind === "c");
    // A layout-only primitive whose output got storage of its own had to copy (a reshape of a
    // non-contiguous view, a strided array viewed as a wider dtype): the trace says so.
    const copied = node.primitive.view && node.outputs.find((o) => !node.inputs.some((i) => i.layout!.storage === o.layout!.storage));
    record({
      device: "cpu",
      kernel: `cpu:${node.primitive.name}`,
      primitives: [node.primitive.name],
      inputDtypes: node.inputs.map((i) => i.dtype.name),
      outputDtypes: node.outputs.map((o) => o.dtype.name),
      layout: node.inputs.every((i) => i.layout!.rowContiguous) ? "contiguous" : "strided",
      precision: node.primitive.view ? Precision.none : inexact ? Precision.cpuReference : Precision.exact,
      notes: [
        ...(copied ? [`copy: ${node.primitive.name} of ${node.inputs[0]!.describe()} cannot be a view of its layout; its elements are copied row-contiguously`] : []),
        ...annotationsOf(node.outputs),
      ],
    });
  }
}

registerBackend("cpu", {
  run(nodes) {
    for (const node of nodes) runNode(node);
  },
});
