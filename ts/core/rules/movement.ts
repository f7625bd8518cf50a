// Derivative and batching rules of Pad, View and Contiguous (ts/core/primitives/movement.ts).
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { defineRules } from "../primitive.ts";
import { Contiguous, lowPads, Pad, View } from "../primitives/movement.ts";
import { zerosLike } from "../ops/creation.ts";
import * as ew from "../ops/elementwise.ts";
import { padConstantRaw } from "../ops/pad.ts";
import { sum } from "../ops/reduce.ts";
import { moveaxis } from "../ops/shape.ts";
import { sliceStatic } from "../ops/slicing.ts";

defineRules(Pad, {
  vjp([a], [g], argnums, _o, p) {
    const low = lowPads(a!.ndim, p);
    const interior = sliceStatic(g!, low, low.map((l, i) => l + a!.shape[i]!));
    return argnums.map((i) =>
      // a's elements land in the interior; the pad value fills every other position.
      i === 0 ? interior : ew.astype(ew.subtract(sum(g!), sum(interior)), g!.dtype),
    );
  },
  jvp([a, value], tangents, argnums, _o, p) {
    const k0 = argnums.indexOf(0);
    const k1 = argnums.indexOf(1);
    const ta = k0 >= 0 ? tangents[k0]! : zerosLike(a!);
    const tv = k1 >= 0 ? tangents[k1]! : zerosLike(value!);
    return [padConstantRaw(ta, tv, p)];
  },
  vmap([a, value], [ax, vax], p) {
    if (vax! >= 0) throw new Error("[pad] vmap over the padding value is not supported (as in MLX).");
    const x = moveaxis(a!, ax!, 0);
    return [[padConstantRaw(x, value!, { axes: p.axes.map((d) => d + 1), low: p.low, high: p.high })], [0]];
  },
});

defineRules(View, {
  // Reinterpretation is per element except along the last axis when item sizes differ.
  vmap([a], [ax], p) {
    const last = ax === a!.ndim - 1 && a!.dtype.size !== p.dtype.size;
    const x = last ? moveaxis(a!, ax!, 0) : a!;
    return [[makeArray(View, [x], p, resolveStream())], [last ? 0 : ax!]];
  },
});

defineRules(Contiguous, {
  vjp: (_p, [g]) => [g!],
  jvp: (_p, [t]) => [t!],
  vmap: ([a], [ax], p) => [[makeArray(Contiguous, [a!], p, resolveStream())], [ax!]],
});
