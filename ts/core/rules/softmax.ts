// Derivative and batching rules of Softmax and LogSumExp (ts/core/primitives/softmax.ts).
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { defineRules } from "../primitive.ts";
import { LogSumExp, Softmax } from "../primitives/softmax.ts";
import { multiply, subtract } from "../ops/elementwise.ts";
import { sum } from "../ops/reduce.ts";
import { swapaxes } from "../ops/shape.ts";
import { softmax } from "../ops/softmax.ts";

/** These records reduce the last axis: a batch axis there is swapped one place left. */
function batchOffLastAxis(x: MgArray, b: number): [MgArray, number] {
  if (b !== x.ndim - 1) return [x, b];
  return [swapaxes(x, -1, -2), x.ndim - 2];
}

defineRules(Softmax, {
  // y = softmax(x): dy = y ⊙ (dx − Σ dx⊙y), a symmetric Jacobian, so vjp and jvp share the form.
  vjp(_p, [g], _a, [y]) {
    const gy = multiply(g!, y!);
    return [subtract(gy, multiply(y!, sum(gy, -1, true)))];
  },
  jvp(_p, [t], _a, [y]) {
    const ty = multiply(t!, y!);
    return [subtract(ty, multiply(y!, sum(ty, -1, true)))];
  },
  vmap([a], [b], p) {
    const [x, axis] = batchOffLastAxis(a!, b!);
    return [[makeArray(Softmax, [x], p, resolveStream())], [axis]];
  },
});

defineRules(LogSumExp, {
  // ∂/∂xᵢ log Σⱼ exp(xⱼ) = softmax(x)ᵢ.
  vjp: ([a], [g]) => [multiply(g!, softmax(a!, -1, { precise: true }))],
  jvp: ([a], [t]) => [sum(multiply(t!, softmax(a!, -1, { precise: true })), -1, true)],
  vmap([a], [b]) {
    const [x, axis] = batchOffLastAxis(a!, b!);
    return [[makeArray(LogSumExp, [x], {}, resolveStream())], [axis]];
  },
});
