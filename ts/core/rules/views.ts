// Derivative and batching rules of the view primitives (ts/core/primitives/views.ts).
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { int32 } from "../dtype.ts";
import { makeArray } from "../graph.ts";
import { defineRules } from "../primitive.ts";
import { AsStrided, type AsStridedParams, Broadcast, Reshape, Slice, Transpose } from "../primitives/views.ts";
import { arange, zerosLike } from "../ops/creation.ts";
import { contiguous } from "../ops/movement.ts";
import { sum } from "../ops/reduce.ts";
import { scatterAdd, sliceUpdateStatic } from "../ops/scatter.ts";
import * as ops from "../ops/shape.ts";
import { sliceStatic } from "../ops/slicing.ts";

/** Sums `g` down to `shape` (the adjoint of broadcasting to g.shape). */
export function sumToShape(g: MgArray, shape: readonly number[]): MgArray {
  if (g.ndim === shape.length && g.shape.every((d, i) => d === shape[i])) return g;
  const lead = g.ndim - shape.length;
  const axes: number[] = [];
  for (let i = 0; i < g.ndim; i++) {
    if (i < lead || (shape[i - lead] === 1 && g.shape[i] !== 1)) axes.push(i);
  }
  let r = sum(g, axes, true);
  if (lead > 0) r = ops.reshape(r, shape);
  return r;
}

defineRules(Broadcast, {
  // d/da broadcast(a) is the sum of the cotangent over the broadcast axes.
  vjp: ([a], [g]) => [sumToShape(g!, a!.shape)],
  jvp: (_p, [t], _argnums, _o, p) => [ops.broadcastTo(t!, p.shape)],
  // Batch axis first, the element's dims right-aligned under the target shape.
  vmap([a], [ax], p) {
    const x = ops.moveaxis(a!, ax!, 0);
    const rest = x.shape.slice(1);
    const aligned = ops.reshape(x, [x.shape[0]!, ...new Array<number>(p.shape.length - rest.length).fill(1), ...rest]);
    return [[ops.broadcastTo(aligned, [x.shape[0]!, ...p.shape])], [0]];
  },
});

defineRules(Reshape, {
  vjp: ([a], [g]) => [ops.reshape(g!, a!.shape)],
  jvp: (_p, [t], _a, _o, p) => [ops.reshape(t!, p.shape)],
  vmap([a], [ax], p) {
    const x = ops.moveaxis(a!, ax!, 0);
    return [[ops.reshape(x, [x.shape[0]!, ...p.shape])], [0]];
  },
});

defineRules(Transpose, {
  vjp(_p, [g], _a, _o, p) {
    const inverse = new Array<number>(p.axes.length);
    p.axes.forEach((ax, i) => (inverse[ax] = i));
    return [ops.transpose(g!, inverse)];
  },
  jvp: (_p, [t], _a, _o, p) => [ops.transpose(t!, p.axes)],
  vmap: ([a], [ax], p) => [[ops.transpose(ops.moveaxis(a!, ax!, 0), [0, ...p.axes.map((d) => d + 1)])], [0]],
});

defineRules(Slice, {
  // The cotangent goes back into the region that was read; the rest of a gets zero.
  vjp: ([a], [g], _a, _o, p) => [sliceUpdateStatic(zerosLike(a!), g!, p.start, p.stop, p.strides, "none")],
  jvp: (_p, [t], _a, _o, p) => [sliceStatic(t!, p.start, p.stop, p.strides)],
  // The batch axis stays in place and is taken whole.
  vmap([a], [ax], p) {
    const b = ax!;
    const insert = (v: number[], x: number) => [...v.slice(0, b), x, ...v.slice(b)];
    return [[sliceStatic(a!, insert(p.start, 0), insert(p.stop, a!.shape[b]!), insert(p.strides, 1))], [b]];
  },
});

/** An AsStrided node over `a` made flat and row-contiguous (what the addressing assumes). */
function asStridedRaw(a: MgArray, p: AsStridedParams): MgArray {
  const flat = contiguous(ops.reshape(a, [a.size]));
  return makeArray(AsStrided, [flat], { shape: [...p.shape], strides: [...p.strides], offset: p.offset }, resolveStream());
}

defineRules(AsStrided, {
  // Output element j reads input element offset + Σ coord·stride, possibly several times: the
  // cotangent is scatter-added to those positions (MLX's rule). The op made the input flat.
  vjp([a], [g], _a, _o, p) {
    const n = a!.size;
    const positions = ops.reshape(asStridedRaw(arange(0, n, int32), p), [g!.size]);
    const grad = scatterAdd(zerosLike(a!, null), [positions], ops.reshape(g!, [g!.size, 1]), [0]);
    return [ops.reshape(grad, a!.shape)];
  },
  jvp: (_p, [t], _a, _o, p) => [asStridedRaw(t!, p)],
  // Batch elements are consecutive blocks of the (contiguous, batch-first) input.
  vmap([a], [ax], p) {
    const x = contiguous(ops.moveaxis(a!, ax!, 0));
    const block = x.shape.slice(1).reduce((m, d) => m * d, 1);
    const params = { shape: [x.shape[0]!, ...p.shape], strides: [block, ...p.strides], offset: p.offset };
    return [[makeArray(AsStrided, [x], params, resolveStream())], [0]];
  },
});
