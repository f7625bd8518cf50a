// The rules of CustomTransforms (ts/core/primitives/custom.ts): the ones its params carry, applied
// to the function's arguments (the leading inputs); the forwarded outputs pass cotangents through.
import { defineRules } from "../primitive.ts";
import { CustomTransforms } from "../primitives/custom.ts";

defineRules(CustomTransforms, {
  vjp(primals, cotangents, argnums, outputs, p) {
    const n = primals.length - p.numOutputs;
    const all = p.vjp(primals.slice(0, n), [...cotangents], [...outputs]);
    return argnums.map((i) => (i < n ? all[i]! : cotangents[i - n]!));
  },
  jvp(primals, tangents, argnums, _outputs, p) {
    const n = primals.length - p.numOutputs;
    const keep = argnums.flatMap((a, k) => (a < n ? [k] : []));
    return p.jvp(primals.slice(0, n), keep.map((k) => tangents[k]!), keep.map((k) => argnums[k]!));
  },
  vmap(inputs, axes, p) {
    const n = inputs.length - p.numOutputs;
    return p.vmap(inputs.slice(0, n), axes.slice(0, n));
  },
});
