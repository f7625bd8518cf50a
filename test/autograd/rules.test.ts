// The derivative rules of every differentiable primitive, checked by mg.testing.gradcheck: each
// analytic Jacobian entry (vjp) against float64 central differences, and the jvp against the vjp
// through ⟨u, J·v⟩ = ⟨Jᵀ·u, v⟩. Shapes are random (seeded per case) and include size-1 axes and
// broadcasting. Elementwise ops and matmul are also checked to second order.
//
// The table runs once per device in devicesUnderTest(): the CPU in float64 today, and the GPU
// (float32 analytic side against the same float64 CPU differences) as soon as its backend
// evaluates — MG_TEST_GPU=1 makes a missing GPU backend fail instead of being skipped.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import type { Primitive } from "../../ts/core/primitive.ts";
import { gpuRules } from "../../ts/backend/gpu/registry.ts";
import * as Elementwise from "../../ts/core/primitives/elementwise.ts";
import * as Join from "../../ts/core/primitives/join.ts";
import * as Reduce from "../../ts/core/primitives/reduce.ts";
import * as Scan from "../../ts/core/primitives/scan.ts";
import * as Views from "../../ts/core/primitives/views.ts";
import * as Convolution from "../../ts/core/primitives/convolution.ts";
import {
  broadcastPair, devicesUnderTest, distinct, makeRng, offInteger, randomShape, type Rng, seedOf, uniform,
} from "./helpers.ts";

type Fn = (...xs: MgArray[]) => unknown;

interface Case {
  name: string;
  fn: Fn;
  inputs: (rng: Rng) => MgArray[];
  /** Highest derivative order to check (default 1). */
  order?: number;
  /** Extra gradcheck options (looser tolerances for lossy casts …). */
  opts?: mg.testing.GradcheckOptions;
}

const cases: Case[] = [];

/** x + i·y as complex64. */
function complexOf(x: MgArray, y: MgArray): MgArray {
  return mg.add(mg.astype(x, mg.complex64), mg.multiply(mg.astype(y, mg.complex64), { re: 0, im: 1 }));
}
const add = (c: Case) => cases.push(c);

// ---------------------------------------------------------------------------------------------
// Unary elementwise (first and second order), each on its smooth domain.

const unary: [string, (x: MgArray) => MgArray, number, number, boolean?][] = [
  ["abs", mg.abs, 0.2, 2, true],
  ["negative", mg.negative, -2, 2],
  ["sign", mg.sign, 0.2, 2, true],
  ["square", mg.square, -2, 2],
  ["sqrt", mg.sqrt, 0.3, 3],
  ["rsqrt", mg.rsqrt, 0.3, 3],
  ["reciprocal", mg.reciprocal, 0.3, 3, true],
  ["exp", mg.exp, -2, 2],
  ["expm1", mg.expm1, -2, 2],
  ["log", mg.log, 0.3, 3],
  ["log2", mg.log2, 0.3, 3],
  ["log10", mg.log10, 0.3, 3],
  ["log1p", mg.log1p, -0.5, 2],
  ["sin", mg.sin, -3, 3],
  ["cos", mg.cos, -3, 3],
  ["tan", mg.tan, -1.2, 1.2],
  ["arcsin", mg.arcsin, -0.8, 0.8],
  ["arccos", mg.arccos, -0.8, 0.8],
  ["arctan", mg.arctan, -3, 3],
  ["sinh", mg.sinh, -2, 2],
  ["cosh", mg.cosh, -2, 2],
  ["tanh", mg.tanh, -2, 2],
  ["arcsinh", mg.arcsinh, -3, 3],
  ["arccosh", mg.arccosh, 1.3, 3],
  ["arctanh", mg.arctanh, -0.8, 0.8],
  ["sigmoid", mg.sigmoid, -3, 3],
  ["erf", mg.erf, -2, 2],
  ["erfinv", mg.erfinv, -0.8, 0.8],
  ["degrees", mg.degrees, -2, 2],
];
for (const [name, f, lo, hi, randomSign] of unary) {
  add({ name, fn: (x) => f(x), inputs: (r) => [uniform(r, randomShape(r), lo, hi, randomSign)], order: 2 });
}
for (const [name, f] of [["floor", mg.floor], ["ceil", mg.ceil], ["round", (x: MgArray) => mg.round(x)]] as const) {
  add({ name, fn: (x) => f(x), inputs: (r) => [offInteger(r, randomShape(r))], order: 2 });
}
add({
  name: "astype float64→float32 (cotangent cast back)",
  fn: (x) => mg.astype(x, mg.float32),
  inputs: (r) => [uniform(r, randomShape(r), -2, 2)],
  opts: { eps: 1e-2, atol: 1e-4, rtol: 1e-4 },
});
add({
  name: "astype to complex64 and real() back",
  fn: (x) => mg.multiply(mg.real(mg.astype(x, mg.complex64)), 3),
  inputs: (r) => [uniform(r, randomShape(r), -2, 2)],
  opts: { eps: 1e-2, atol: 1e-4, rtol: 1e-4 },
});
add({
  name: "stopGradient (of a constant factor: no gradient through it)",
  fn: (x, k) => mg.multiply(x, mg.stopGradient(mg.astype(k!, x.dtype))),
  inputs: (r) => [uniform(r, [2, 3]), mg.array(new Int32Array([1, -2, 3]), mg.int32, { shape: [3] })],
  order: 2,
});
add({
  name: "conjugate (complex)",
  fn: (x, y) => mg.real(mg.multiply(mg.conjugate(complexOf(x, y!)), { re: 0, im: 1 })),
  inputs: (r) => [uniform(r, [3]), uniform(r, [3])],
  opts: { eps: 1e-2, atol: 1e-4, rtol: 1e-4 },
});
add({
  name: "exp and multiply of complex values (conjugate multipliers)",
  fn: (x, y) => {
    const z = mg.multiply(mg.exp(complexOf(x, y!)), complexOf(y!, x));
    return [mg.real(z), mg.imag(z)];
  },
  inputs: (r) => [uniform(r, [3], -1, 1), uniform(r, [3], -1, 1)],
  opts: { eps: 1e-3, atol: 1e-3, rtol: 1e-3 },
});
add({
  name: "imag of a complex product",
  fn: (x, y) => mg.imag(mg.multiply(mg.astype(x, mg.complex64), mg.multiply(mg.astype(y, mg.complex64), { re: 0, im: 1 }))),
  inputs: (r) => [uniform(r, [2, 3]), uniform(r, [3])],
  opts: { eps: 1e-2, atol: 1e-4, rtol: 1e-4 },
});

// ---------------------------------------------------------------------------------------------
// Binary elementwise with broadcasting (first and second order).

function pair(lo: number, hi: number, lo2 = lo, hi2 = hi, sign2 = false) {
  return (r: Rng) => {
    const [a, b] = broadcastPair(r);
    return [uniform(r, a, lo, hi), uniform(r, b, lo2, hi2, sign2)];
  };
}
add({ name: "add", fn: (a, b) => mg.add(a, b), inputs: pair(-2, 2), order: 2 });
add({ name: "subtract", fn: (a, b) => mg.subtract(a, b), inputs: pair(-2, 2), order: 2 });
add({ name: "multiply", fn: (a, b) => mg.multiply(a, b), inputs: pair(-2, 2), order: 2 });
add({ name: "divide", fn: (a, b) => mg.divide(a, b), inputs: pair(-2, 2, 0.5, 2, true), order: 2 });
add({ name: "power", fn: (a, b) => mg.power(a, b), inputs: pair(0.5, 2, -2, 2), order: 2 });
add({ name: "logaddexp", fn: (a, b) => mg.logaddexp(a, b), inputs: pair(-2, 2), order: 2 });
add({ name: "arctan2", fn: (a, b) => mg.arctan2(a, b), inputs: pair(-2, 2, 0.5, 2, true), order: 2 });
add({
  name: "maximum",
  fn: (a, b) => mg.maximum(a, b),
  inputs: (r) => {
    const [s, t] = broadcastPair(r);
    return [distinct(r, s), mg.add(distinct(r, t), 0.05)];
  },
  order: 2,
});
add({
  name: "minimum",
  fn: (a, b) => mg.minimum(a, b),
  inputs: (r) => {
    const [s, t] = broadcastPair(r);
    return [distinct(r, s), mg.add(distinct(r, t), 0.05)];
  },
  order: 2,
});
/** a = b·(k + f) with f ∈ [0.2, 0.8]: a/b stays away from integers, where remainder jumps. */
function remainderInputs(r: Rng): MgArray[] {
  const [s, t] = broadcastPair(r);
  const b = uniform(r, t, 0.7, 2, true);
  const q = mg.add(mg.floor(uniform(r, s, -3, 3)), uniform(r, s, 0.2, 0.8));
  return [mg.multiply(q, b), b];
}
add({ name: "remainder", fn: (a, b) => mg.remainder(a, b), inputs: remainderInputs, order: 2 });
add({ name: "floorDivide (float)", fn: (a, b) => mg.floorDivide(a, b), inputs: remainderInputs, order: 2 });
add({ name: "divmod (both outputs)", fn: (a, b) => mg.divmod(a, b), inputs: remainderInputs, order: 2 });

// Ternary.
add({
  name: "where",
  fn: (c, a, b) => mg.where(mg.greater(c, 0), a, b),
  inputs: (r) => [uniform(r, [3, 1], -1, 1), uniform(r, [3, 4], -2, 2), uniform(r, [4], -2, 2)],
  order: 2,
});
add({
  name: "clip",
  fn: (x) => mg.clip(x, -0.5, 0.5),
  inputs: (r) => {
    // Values kept 0.1 away from the bounds.
    const v = uniform(r, randomShape(r, 1), 0.1, 0.4);
    const s = uniform(r, v.shape, -1, 1);
    return [mg.add(mg.multiply(mg.sign(s), v), mg.multiply(mg.sign(s), mg.greater(uniform(r, v.shape, 0, 1), 0.5)))];
  },
  order: 2,
});

// ---------------------------------------------------------------------------------------------
// Reductions.

const reduceShape = (r: Rng) => randomShape(r, 1, 3).map((d) => d + 1);
add({ name: "sum (all)", fn: (x) => mg.sum(x), inputs: (r) => [uniform(r, reduceShape(r))], order: 2 });
add({ name: "sum (axis, keepdims)", fn: (x) => mg.sum(x, -1, true), inputs: (r) => [uniform(r, reduceShape(r))] });
add({ name: "sum (axes 0 and 2)", fn: (x) => mg.sum(x, [0, 2]), inputs: (r) => [uniform(r, [2, 3, 2])] });
add({ name: "mean", fn: (x) => mg.mean(x, 0), inputs: (r) => [uniform(r, reduceShape(r))] });
add({ name: "variance", fn: (x) => mg.variance(x, -1, false, 1), inputs: (r) => [uniform(r, [3, 4])], order: 2 });
add({ name: "std", fn: (x) => mg.std(x, 0), inputs: (r) => [uniform(r, [4, 2])], order: 2 });
add({ name: "prod", fn: (x) => mg.prod(x, -1), inputs: (r) => [uniform(r, reduceShape(r), 0.5, 1.5, true)], order: 2 });
add({
  name: "prod with zeros (stable, exact to second order)",
  fn: (x) => mg.prod(x, 1),
  inputs: () => [mg.array([[0, 2, 3, 0.5], [1.5, 0, 2, -1], [0, 0, 2, 3], [1, 2, -3, 0.5]], mg.float64)],
  order: 2,
});
add({ name: "max", fn: (x) => mg.max(x, 0), inputs: (r) => [distinct(r, [3, 4])], order: 2 });
add({ name: "min", fn: (x) => mg.min(x), inputs: (r) => [distinct(r, reduceShape(r))], order: 2 });
add({ name: "logsumexp", fn: (x) => mg.logsumexp(x, -1), inputs: (r) => [uniform(r, [3, 4], -2, 2)], order: 2 });
add({ name: "logsumexp (axes 0, 2)", fn: (x) => mg.logsumexp(x, [0, 2], true), inputs: (r) => [uniform(r, [2, 3, 2], -2, 2)] });
add({ name: "softmax", fn: (x) => mg.softmax(x, -1), inputs: (r) => [uniform(r, [3, 4], -2, 2)], order: 2 });

// ---------------------------------------------------------------------------------------------
// Scans: every type, direction and inclusiveness.

for (const reverse of [false, true]) {
  for (const inclusive of [true, false]) {
    const tag = `${reverse ? "reverse" : "forward"}, ${inclusive ? "inclusive" : "exclusive"}`;
    const o = { reverse, inclusive };
    add({ name: `cumsum (${tag})`, fn: (x) => mg.cumsum(x, 1, o), inputs: (r) => [uniform(r, [2, 4])], order: 2 });
    add({ name: `cumprod (${tag})`, fn: (x) => mg.cumprod(x, 0, o), inputs: (r) => [uniform(r, [4, 2], 0.5, 1.5, true)], order: 2 });
    add({
      name: `cumprod with zeros (${tag})`,
      fn: (x) => mg.cumprod(x, -1, o),
      inputs: () => [mg.array([[2, 0, 1.5, 0, 3], [0.5, 2, 0, -1, 2]], mg.float64)],
      order: 2,
    });
    add({ name: `cummax (${tag})`, fn: (x) => mg.cummax(x, 1, o), inputs: (r) => [distinct(r, [2, 5])], order: 2 });
    add({ name: `cummin (${tag})`, fn: (x) => mg.cummin(x, 0, o), inputs: (r) => [distinct(r, [5, 2])], order: 2 });
    add({ name: `logcumsumexp (${tag})`, fn: (x) => mg.logcumsumexp(x, 1, o), inputs: (r) => [uniform(r, [2, 4], -2, 2)], order: 2 });
  }
}

// ---------------------------------------------------------------------------------------------
// Views, joins and data movement.

add({ name: "reshape", fn: (x) => mg.reshape(x, [-1]), inputs: (r) => [uniform(r, randomShape(r, 1))], order: 2 });
add({ name: "reshape of a transposed view", fn: (x) => mg.reshape(mg.transpose(x), [2, 6]), inputs: (r) => [uniform(r, [3, 4])] });
add({ name: "transpose", fn: (x) => mg.transpose(x, [2, 0, 1]), inputs: (r) => [uniform(r, [2, 3, 1])] });
add({ name: "swapaxes", fn: (x) => mg.swapaxes(x, 0, 1), inputs: (r) => [uniform(r, [3, 2])] });
add({ name: "moveaxis", fn: (x) => mg.moveaxis(x, 0, -1), inputs: (r) => [uniform(r, [2, 1, 3])] });
add({ name: "expandDims and squeeze", fn: (x) => mg.squeeze(mg.expandDims(x, [0, 2]), 0), inputs: (r) => [uniform(r, [3, 2])] });
add({ name: "flatten", fn: (x) => mg.flatten(x, 1), inputs: (r) => [uniform(r, [2, 2, 3])] });
add({
  name: "broadcastTo (summed back)",
  fn: (x) => mg.broadcastTo(x, [2, 3, 4]),
  inputs: (r) => [uniform(r, r() < 0.5 ? [3, 1] : [1, 4])],
  order: 2,
});
add({ name: "broadcast in a binary op (size-1 axes)", fn: (x, y) => mg.multiply(x, y), inputs: (r) => [uniform(r, [1, 3, 1]), uniform(r, [2, 1, 4])] });
add({ name: "slice (strided)", fn: (x) => x.index("1:", { start: 0, stop: null, step: 2 }), inputs: (r) => [uniform(r, [3, 5])] });
add({ name: "slice (negative step)", fn: (x) => x.index({ start: null, stop: null, step: -2 }), inputs: (r) => [uniform(r, [6])] });
add({ name: "flip", fn: (x) => mg.flip(x, 1), inputs: (r) => [uniform(r, [2, 3])] });
add({ name: "integer index and newaxis", fn: (x) => x.index(1, null, "..."), inputs: (r) => [uniform(r, [3, 2])] });
add({ name: "concatenate", fn: (a, b) => mg.concatenate([a, b, a], 1), inputs: (r) => [uniform(r, [2, 1]), uniform(r, [2, 3])], order: 2 });
add({ name: "stack", fn: (a, b) => mg.stack([a, b], 1), inputs: (r) => [uniform(r, [2, 3]), uniform(r, [2, 3])] });
add({ name: "split", fn: (x) => mg.split(x, [1, 3], 1), inputs: (r) => [uniform(r, [2, 4])] });
add({ name: "asStrided (overlapping windows)", fn: (x) => mg.asStrided(x, [3, 3], [1, 1]), inputs: (r) => [uniform(r, [5])] });
add({ name: "pad", fn: (x) => mg.pad(x, [[1, 0], [0, 2]]), inputs: (r) => [uniform(r, [2, 3])] });
add({ name: "tile", fn: (x) => mg.tile(x, [2, 1]), inputs: (r) => [uniform(r, [2, 3])] });
add({ name: "repeat", fn: (x) => mg.repeat(x, 2, 1), inputs: (r) => [uniform(r, [2, 3])] });
add({ name: "roll", fn: (x) => mg.roll(x, 1, 1), inputs: (r) => [uniform(r, [2, 3])] });
add({ name: "diagonal and trace", fn: (x) => [mg.diagonal(x, 1), mg.trace(x)], inputs: (r) => [uniform(r, [3, 4])] });
add({ name: "contiguous", fn: (x) => mg.contiguous(mg.transpose(x)), inputs: (r) => [uniform(r, [2, 3])] });

// Indexing with integer arrays (gather and scatter-add of cotangents).
const idx = (values: number[], shape?: number[]) => mg.array(new Int32Array(values), mg.int32, { shape: shape ?? [values.length] });
add({ name: "take (repeated indices)", fn: (x) => mg.take(x, idx([2, 0, 2]), 1), inputs: (r) => [uniform(r, [2, 3])] });
add({ name: "takeAlongAxis", fn: (x) => mg.takeAlongAxis(x, idx([1, 0, 1, 1], [2, 2]), 1), inputs: (r) => [uniform(r, [2, 3])] });
add({ name: "putAlongAxis", fn: (x, v) => mg.putAlongAxis(x, idx([2, 0], [2, 1]), v, 1), inputs: (r) => [uniform(r, [2, 3]), uniform(r, [2, 1])] });
add({ name: "index with an integer array", fn: (x) => x.index(idx([1, 1, 0])), inputs: (r) => [uniform(r, [2, 3])] });
add({ name: "at(...).add with repeated indices", fn: (x, v) => x.at(idx([0, 2, 0])).add(v), inputs: (r) => [uniform(r, [3, 2]), uniform(r, [3, 2])] });
add({ name: "sliceUpdate", fn: (x, u) => mg.sliceUpdate(x, u, idx([1]), [1]), inputs: (r) => [uniform(r, [2, 4]), uniform(r, [2, 2])] });
add({ name: "dynamic slice", fn: (x) => mg.slice(x, idx([1]), [0], [2, 3]), inputs: (r) => [uniform(r, [4, 3])] });

// Ordering.
add({ name: "sort", fn: (x) => mg.sort(x, 1), inputs: (r) => [distinct(r, [2, 4])] });
add({ name: "topk", fn: (x) => mg.topk(x, 2, -1), inputs: (r) => [distinct(r, [3, 4])] });
add({ name: "partition", fn: (x) => mg.partition(x, 1, 0), inputs: (r) => [distinct(r, [4, 2])] });

// ---------------------------------------------------------------------------------------------
// Products (second order).

add({ name: "matmul", fn: (a, b) => mg.matmul(a, b), inputs: (r) => [uniform(r, [2, 3]), uniform(r, [3, 2])], order: 2 });
add({ name: "matmul (batched, broadcast batch)", fn: (a, b) => mg.matmul(a, b), inputs: (r) => [uniform(r, [2, 1, 2, 3]), uniform(r, [3, 3, 2])], order: 2 });
add({ name: "matmul (1-D operands)", fn: (a, b) => [mg.matmul(a, b), mg.matmul(b, a)], inputs: (r) => [uniform(r, [3]), uniform(r, [3, 3])], order: 2 });
add({ name: "addmm", fn: (c, a, b) => mg.addmm(c, a, b, 0.5, 2), inputs: (r) => [uniform(r, [2, 1]), uniform(r, [2, 3]), uniform(r, [3, 2])] });
add({ name: "einsum", fn: (a, b) => mg.einsum("ij,jk->ik", a, b), inputs: (r) => [uniform(r, [2, 3]), uniform(r, [3, 2])] });
add({ name: "einsum (trace and broadcast batch)", fn: (a, b) => mg.einsum("bii,bj->bj", a, b), inputs: (r) => [uniform(r, [2, 3, 3]), uniform(r, [2, 4])] });
add({ name: "tensordot", fn: (a, b) => mg.tensordot(a, b, 1), inputs: (r) => [uniform(r, [2, 3]), uniform(r, [3, 2])] });
add({ name: "inner and outer", fn: (a, b) => [mg.inner(a, b), mg.outer(a, b)], inputs: (r) => [uniform(r, [3]), uniform(r, [3])] });
add({ name: "kron", fn: (a, b) => mg.kron(a, b), inputs: (r) => [uniform(r, [2, 1]), uniform(r, [2, 2])] });
add({ name: "diff", fn: (a) => mg.diff(a, 2, 0), inputs: (r) => [uniform(r, [4, 2])] });

// ---------------------------------------------------------------------------------------------
// Convolutions: strides, padding (also negative and asymmetric), both dilations, groups, flip,
// transposed (input-dilated) forms, 1-3 spatial axes (a 1×1 kernel runs as a matmul: not here).

add({ name: "conv1d (stride, padding, dilation)", fn: (x, w) => mg.conv1d(x, w, 2, 1, 2), inputs: (r) => [uniform(r, [2, 7, 3]), uniform(r, [4, 3, 3])], order: 2 });
add({ name: "conv2d (groups, padding)", fn: (x, w) => mg.conv2d(x, w, 1, [1, 0], 1, 2), inputs: (r) => [uniform(r, [1, 4, 3, 4]), uniform(r, [6, 2, 2, 2])] });
add({ name: "conv2d (depthwise, stride)", fn: (x, w) => mg.conv2d(x, w, [2, 1], 1, 1, 3), inputs: (r) => [uniform(r, [2, 5, 4, 3]), uniform(r, [3, 3, 2, 1])] });
add({ name: "conv3d", fn: (x, w) => mg.conv3d(x, w, [1, 2, 1], [0, 1, 1]), inputs: (r) => [uniform(r, [1, 3, 3, 4, 2]), uniform(r, [2, 2, 2, 2, 2])] });
add({ name: "convTranspose2d (stride, output padding)", fn: (x, w) => mg.convTranspose2d(x, w, 2, 1, 1, 1), inputs: (r) => [uniform(r, [1, 3, 2, 2]), uniform(r, [3, 3, 2, 2])] });
add({ name: "convTranspose1d (groups, dilation)", fn: (x, w) => mg.convTranspose1d(x, w, { stride: 3, dilation: 2, groups: 2 }), inputs: (r) => [uniform(r, [2, 3, 4]), uniform(r, [4, 2, 2])] });
add({
  name: "convGeneral (input dilation, flip, negative and asymmetric padding)",
  fn: (x, w) => mg.convGeneral(x, w, [1, 2], [[2, -1], [0, 3]], [1, 2], [2, 1], 1, true),
  inputs: (r) => [uniform(r, [2, 3, 5, 2]), uniform(r, [3, 2, 2, 2])],
});
add({ name: "convolve", fn: (a, v) => [mg.convolve(a, v), mg.convolve(a, v, "same"), mg.convolve(v, a, "valid")], inputs: (r) => [uniform(r, [5]), uniform(r, [3])] });

// ---------------------------------------------------------------------------------------------

/** The primitives in the graphs of `arrays` (unevaluated), through every input. */
function primitivesIn(arrays: readonly unknown[], into: Set<Primitive<unknown>>): void {
  const stack = (arrays as unknown[]).flat(3).filter((a): a is MgArray => a instanceof mg.MgArray);
  const seen = new Set<unknown>();
  while (stack.length > 0) {
    const a = stack.pop()!;
    if (!a.node || seen.has(a.node)) continue;
    seen.add(a.node);
    into.add(a.node.primitive);
    stack.push(...a.node.inputs);
  }
}

/**
 * Primitives without a GPU rule that a case's analytic side would run on `device`: the forward,
 * vjp and jvp graphs (and those of the vjp for order 2), traced without evaluating anything.
 */
function missingKernels(c: Case, inputs: MgArray[], device: mg.Device): string[] {
  if (device.type !== "gpu") return [];
  const used = new Set<Primitive<unknown>>();
  mg.stream(device, () => {
    const flat = (out: unknown) => ((out instanceof mg.MgArray ? [out] : (out as unknown[]).flat(3)) as MgArray[]).filter((o) => mg.isFloating(o.dtype));
    let f = (...xs: MgArray[]) => flat(c.fn(...xs));
    for (let k = 1; k <= (c.order ?? 1); k++) {
      const outs = f(...inputs);
      primitivesIn(outs, used);
      primitivesIn(mg.vjp(f, inputs, outs.map((o) => mg.onesLike(o)))[1], used);
      primitivesIn(mg.jvp(f, inputs, inputs.map((x) => mg.onesLike(x)))[1], used);
      const prev = f;
      f = (...xs: MgArray[]) => (mg.vjp(prev, xs, prev(...xs).map((o) => mg.onesLike(o)))[1] as MgArray[]).filter((g) => mg.isFloating(g.dtype));
    }
  });
  return [...used].filter((p) => !p.layout && gpuRules.lookup(p) === undefined).map((p) => p.name).filter((n, i, all) => all.indexOf(n) === i).sort();
}

describe.each(devicesUnderTest())("gradcheck of every differentiable primitive on the $name device", ({ device, dtype }) => {
  for (const c of cases) {
    const name = `${c.name}${(c.order ?? 1) > 1 ? " (to order 2)" : ""}`;
    const inputs = c.inputs(makeRng(seedOf(c.name))).map((x) => (mg.isFloating(x.dtype) && x.dtype !== dtype ? mg.astype(x, dtype) : x));
    // A case whose graphs need a primitive the device has no kernel for yet waits for it (listed
    // as todo with the primitives it needs) instead of failing on the missing kernel.
    const missing = missingKernels(c, inputs, device);
    if (missing.length > 0) {
      test.todo(`${name} (needs ${device.type} kernels for ${missing.join(", ")})`);
      continue;
    }
    test(name, () => {
      const report = mg.testing.gradcheck(c.fn, inputs, { stream: device, order: c.order ?? 1, ...c.opts });
      expect(report.ok).toBe(true);
      expect(report.compared).toBeGreaterThan(0);
    });
  }
});

describe("the table covers every differentiable primitive record", () => {
  test("each record with a vjp in the core modules is reached by some case", () => {
    // Trace every case once and collect the primitives in its graph.
    const reached = new Set<unknown>();
    for (const c of cases) {
      const out = c.fn(...c.inputs(makeRng(seedOf(c.name))));
      const stack: MgArray[] = (Array.isArray(out) ? out : [out]).flat(2) as MgArray[];
      const seen = new Set<unknown>();
      while (stack.length > 0) {
        const a = stack.pop()!;
        if (!a.node || seen.has(a.node)) continue;
        seen.add(a.node);
        reached.add(a.node.primitive);
        stack.push(...a.node.inputs);
      }
    }
    const records = [Elementwise, Join, Reduce, Scan, Views, Convolution].flatMap((m) =>
      Object.values(m).filter((v): v is Primitive<unknown> => typeof v === "object" && v !== null && "outputSpecs" in v && "vjp" in v && !!v.vjp),
    );
    const missing = records.filter((p) => !reached.has(p)).map((p) => p.name);
    expect(missing).toEqual([]);
  });
});
