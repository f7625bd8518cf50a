// Derivative and batching rules of Concatenate (ts/core/primitives/join.ts).
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { defineRules } from "../primitive.ts";
import { Concatenate } from "../primitives/join.ts";
import { zerosLike } from "../ops/creation.ts";
import { sliceStatic } from "../ops/slicing.ts";
import { batchSize, moveBatchAxis } from "../../autograd/batching.ts";

defineRules(Concatenate, {
  // Each input's cotangent is its slice of the output cotangent.
  vjp(inputs, [g], argnums, _o, p) {
    const starts: number[] = [];
    let s = 0;
    for (const x of inputs) {
      starts.push(s);
      s += x.shape[p.axis]!;
    }
    return argnums.map((i) => {
      const x = inputs[i]!;
      const start = x.shape.map(() => 0);
      const stop = [...g!.shape];
      start[p.axis] = starts[i]!;
      stop[p.axis] = starts[i]! + x.shape[p.axis]!;
      return sliceStatic(g!, start, stop);
    });
  },
  // Linear: the tangent is the concatenation of the inputs' tangents (zero where an input has none).
  jvp(inputs, tangents, argnums, _o, p) {
    const parts = inputs.map((x, i) => {
      const k = argnums.indexOf(i);
      return k >= 0 ? tangents[k]! : zerosLike(x);
    });
    return [makeArray(Concatenate, parts, p, resolveStream())];
  },
  // Batch axis first for every input (unbatched ones broadcast along it); the joined axis shifts.
  vmap(inputs, axes, p) {
    const size = batchSize(inputs, axes);
    const parts = inputs.map((x, i) => moveBatchAxis(x, axes[i]!, 0, size));
    return [[makeArray(Concatenate, parts, { axis: p.axis + 1 }, resolveStream())], [0]];
  },
});
