// The CPU device: every primitive's TypeScript reference implementation, run synchronously.
import type { Node } from "../../core/array.ts";
import { registerBackend } from "../../core/graph.ts";

function runNode(node: Node): void {
  // Unified memory: a GPU result is readable once the batch that writes it has finished.
  for (const input of node.inputs) input.layout!.storage.sync();
  node.primitive.cpu(node.inputs, node.outputs, node.params);
}

registerBackend("cpu", {
  run(nodes) {
    for (const node of nodes) runNode(node);
  },
});
