// Derivative and batching rules of RandomBits (ts/core/primitives/random.ts).
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { defineRules } from "../primitive.ts";
import { RandomBits } from "../primitives/random.ts";
import { zeros, zerosLike } from "../ops/creation.ts";
import { transpose } from "../ops/shape.ts";

defineRules(RandomBits, {
  // Random draws carry no derivative with respect to their keys (integer inputs).
  vjp: ([keys], _g, argnums) => argnums.map(() => zerosLike(keys!)),
  jvp: (_p, _t, _a, [out]) => [zeros(out!.shape, out!.dtype)],
  // Batched keys become leading output dimensions: one stream per key, as MLX's rule. The key
  // pair must stay the last axis, so a batch axis there is swapped with the one before it.
  vmap([keys], [axis], p): [MgArray[], number[]] {
    let k = keys!;
    let kax = axis!;
    if (kax === k.ndim - 1) {
      const perm = Array.from({ length: k.ndim }, (_, i) => i);
      [perm[kax], perm[kax - 1]] = [perm[kax - 1]!, perm[kax]!];
      k = transpose(k, perm);
      kax--;
    }
    const shape = [...p.shape];
    if (kax >= 0) shape.splice(kax, 0, k.shape[kax]!);
    // The node's stream (vmap runs rules on it), not the keys' stream: keys often live on the CPU.
    const out = makeArray(RandomBits, [k], { shape, width: p.width }, resolveStream());
    return [[out], [kax]];
  },
});
