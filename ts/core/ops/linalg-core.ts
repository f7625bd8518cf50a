// Products of arrays: matmul, addmm, inner, outer, tensordot, vecdot.
import { getPrecision } from "../precision.ts";
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { type Dtype, isComplex, isFloating, isInexact, promoteTypes } from "../dtype.ts";
import { makeArray } from "../graph.ts";
import { AddMM, Matmul } from "../primitives/matmul.ts";
import { broadcastShapes, formatShape, shapesEqual } from "../shape.ts";
import { type ArrayInput, type StreamOptions, toArray } from "./convert.ts";
import { add, astype, conjugate, multiply } from "./elementwise.ts";
import { sum } from "./reduce.ts";
import { broadcastToShape } from "./broadcast.ts";
import { broadcastTo, expandDims, flatten, reshape, transpose } from "./shape.ts";

interface Operands {
  /** At least 2-D, cast, batch axes broadcast (or `a` flattened to 2-D). */
  a: MgArray;
  b: MgArray;
  /** The (batch…, M, N) shape of the product before removing 1-D singleton axes. */
  expanded: number[];
  /** The result's shape. */
  final: number[];
}

/** MLX's matmul preparation: 1-D rules, the inner-dimension check, casting and batch broadcast. */
function prepare(op: string, x: MgArray, y: MgArray, dtype: Dtype, opts: StreamOptions): Operands {
  let a = x.ndim === 1 ? expandDims(x, 0, opts) : x;
  let b = y.ndim === 1 ? expandDims(y, 1, opts) : y;
  if (a.shape[a.ndim - 1] !== b.shape[b.ndim - 2]) {
    throw new Error(
      `[${op}] Last dimension of first input with shape ${formatShape(a.shape)} must match second to last dimension of second input with shape ${formatShape(b.shape)}.`,
    );
  }
  a = astype(a, dtype, opts);
  b = astype(b, dtype, opts);
  const M = a.shape[a.ndim - 2]!;
  const N = b.shape[b.ndim - 1]!;
  let batch: number[];
  if (x.ndim > 2 && y.ndim <= 2) {
    // A stack of matrices times one matrix is one tall product: no copies of b.
    batch = a.shape.slice(0, -2);
  } else {
    batch = broadcastShapes([a.shape.slice(0, -2), b.shape.slice(0, -2)], op);
  }
  const expanded = [...batch, M, N];
  const final = expanded.filter((_, i) => !((x.ndim === 1 && i === expanded.length - 2) || (y.ndim === 1 && i === expanded.length - 1)));
  return { a, b, expanded, final };
}

function run(op: string, p: Operands, x: MgArray, y: MgArray, build: (a: MgArray, b: MgArray, shape: number[]) => MgArray, opts: StreamOptions): MgArray {
  let { a, b } = p;
  let out: MgArray;
  if (x.ndim > 2 && y.ndim <= 2) {
    a = flatten(a, 0, -2, opts);
    out = build(a, b, [a.shape[0]!, b.shape[1]!]);
  } else {
    const batch = p.expanded.slice(0, -2);
    a = broadcastToShape(a, [...batch, ...a.shape.slice(-2)], op, opts.stream);
    b = broadcastToShape(b, [...batch, ...b.shape.slice(-2)], op, opts.stream);
    out = build(a, b, p.expanded);
  }
  return reshape(out, p.final, opts);
}

/** The precision policy as the matmul records carry it (ts/core/precision.ts): read when the op is called. */
function matmulPolicy(): { precision?: "high" } {
  return getPrecision().matmul === "high" ? { precision: "high" } : {};
}

/**
 * Matrix product with NumPy's rules, as mx.matmul: 1-D operands become a row (first) or column
 * (second) vector and that axis is removed again; leading axes are batch axes and broadcast.
 * Only inexact dtypes (MLX has no integer matmul).
 * @example
 * mg.matmul(mg.array([[1, 2], [3, 4]], mg.float32), mg.array([[1], [1]], mg.float32))
 */
export function matmul(a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "matmul");
  const y = toArray(b, "matmul");
  if (x.ndim === 0 || y.ndim === 0) {
    throw new Error("[matmul] Got 0 dimension input. Inputs must have at least one dimension.");
  }
  const dtype = promoteTypes(x.dtype, y.dtype);
  const p = prepare("matmul", x, y, dtype, opts);
  if (!isInexact(dtype)) {
    throw new TypeError(
      `[matmul] Only inexact types are supported but ${x.dtype.name} and ${y.dtype.name} were provided which results in ${dtype.name}, which is not a floating point type.`,
    );
  }
  const stream = resolveStream(opts.stream);
  return run("matmul", p, x, y, (l, r) => makeArray(Matmul, [l, r], matmulPolicy(), stream), opts);
}

/**
 * beta·c + alpha·(a @ b), as mx.addmm (alpha and beta are float32, as MLX's C++ parameters).
 * `c` must broadcast to the product's shape. Real floating dtypes; complex64 is computed as
 * matmul and add.
 * @example
 * mg.addmm(mg.ones([2, 2]), mg.eye(2), mg.full([2, 2], 2), 1, 0.5)
 */
export function addmm(c: ArrayInput, a: ArrayInput, b: ArrayInput, alpha = 1.0, beta = 1.0, opts: StreamOptions = {}): MgArray {
  const z = toArray(c, "addmm");
  const x = toArray(a, "addmm");
  const y = toArray(b, "addmm");
  if (x.ndim === 0 || y.ndim === 0) {
    throw new Error("[addmm] Got 0 dimension input. Inputs must have at least one dimension.");
  }
  const al = Math.fround(alpha);
  const be = Math.fround(beta);
  const dtype = promoteTypes(promoteTypes(x.dtype, y.dtype), z.dtype);
  if (isComplex(dtype)) {
    return add(multiply(matmul(x, y, opts), al, opts), multiply(be, z, opts), opts);
  }
  const p = prepare("addmm", x, y, dtype, opts);
  if (!isFloating(dtype)) {
    throw new TypeError(
      `[addmm] Only real floating point types are supported but ${z.dtype.name}, ${x.dtype.name} and ${y.dtype.name} were provided which results in ${dtype.name}, which is not a real floating point type.`,
    );
  }
  let cb: MgArray;
  try {
    const target = broadcastShapes([z.shape, p.final], "addmm");
    if (!shapesEqual(target, p.final)) throw new Error();
    cb = broadcastTo(astype(z, dtype, opts), p.final, opts);
  } catch {
    throw new Error(`[addmm] input c with shape ${formatShape(z.shape)} must broadcast to the output shape ${formatShape(p.final)}.`);
  }
  const stream = resolveStream(opts.stream);
  const params = { alpha: al, beta: be, ...matmulPolicy() };
  return run("addmm", p, x, y, (l, r, shape) => makeArray(AddMM, [l, r, reshape(cb, shape, opts)], params, stream), opts);
}

/**
 * tensordot's axes: how many trailing axes of a meet as many leading axes of b, or the two lists of axes.
 */
export type TensordotAxes = number | readonly [number | readonly number[], number | readonly number[]];

/**
 * Sums products over the given axes of `a` and `b`, as mx.tensordot: an integer n pairs the last
 * n axes of `a` with the first n of `b`; a pair of lists names the axes explicitly. The result's
 * axes are a's free axes followed by b's.
 * @example
 * mg.tensordot(mg.ones([2, 3]), mg.ones([3, 4]), 1).shape
 */
export function tensordot(a: ArrayInput, b: ArrayInput, axes: TensordotAxes = 2, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "tensordot");
  const y = toArray(b, "tensordot");
  let axesA: number[];
  let axesB: number[];
  if (typeof axes === "number") {
    if (!Number.isInteger(axes) || axes < 0) throw new RangeError("[tensordot] axis must be greater or equal to 0.");
    if (axes > Math.min(x.ndim, y.ndim)) {
      throw new RangeError("[tensordot] axis must be less than the number of dimensions of a and b.");
    }
    axesA = Array.from({ length: axes }, (_, i) => x.ndim - axes + i);
    axesB = Array.from({ length: axes }, (_, i) => i);
  } else {
    if (!Array.isArray(axes) || axes.length !== 2) throw new Error("[tensordot] axes must be a list of two lists.");
    const list = (v: number | readonly number[]) => (typeof v === "number" ? [v] : [...v]);
    axesA = list(axes[0]);
    axesB = list(axes[1]);
  }
  if (axesA.length !== axesB.length) throw new Error("[tensordot] axes must have the same size.");
  const norm = (ax: number, nd: number) => {
    const n = ax < 0 ? ax + nd : ax;
    if (!Number.isInteger(ax) || n < 0 || n >= nd) throw new RangeError(`[tensordot] axis ${ax} is out of bounds for array with ${nd} dimensions.`);
    return n;
  };
  axesA = axesA.map((ax) => norm(ax, x.ndim));
  axesB = axesB.map((ax) => norm(ax, y.ndim));
  if (new Set(axesA).size !== axesA.length || new Set(axesB).size !== axesB.length) {
    throw new Error("[tensordot] axes must not repeat.");
  }
  let csize = 1;
  for (let i = 0; i < axesA.length; i++) {
    if (x.shape[axesA[i]!] !== y.shape[axesB[i]!]) {
      throw new Error("[tensordot] a and b must have the same shape on the contracted axes.");
    }
    csize *= x.shape[axesA[i]!]!;
  }
  const freeA = x.shape.map((_, i) => i).filter((i) => !axesA.includes(i));
  const freeB = y.shape.map((_, i) => i).filter((i) => !axesB.includes(i));
  const sizeA = freeA.reduce((acc, i) => acc * x.shape[i]!, 1);
  const sizeB = freeB.reduce((acc, i) => acc * y.shape[i]!, 1);
  const lhs = reshape(transpose(x, [...freeA, ...axesA], opts), [sizeA, csize], opts);
  const rhs = reshape(transpose(y, [...axesB, ...freeB], opts), [csize, sizeB], opts);
  return reshape(matmul(lhs, rhs, opts), [...freeA.map((i) => x.shape[i]!), ...freeB.map((i) => y.shape[i]!)], opts);
}

/**
 * Sum of products over the last axes (a plain product when either is 0-D), as mx.inner.
 * @example
 * mg.inner(mg.array([1, 2, 3], mg.float32), mg.array([4, 5, 6], mg.float32))
 */
export function inner(a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "inner");
  const y = toArray(b, "inner");
  if (x.ndim === 0 || y.ndim === 0) return multiply(x, y, opts);
  if (x.shape[x.ndim - 1] !== y.shape[y.ndim - 1]) {
    throw new Error("[inner] a and b must have the same last dimension.");
  }
  return tensordot(x, y, [[-1], [-1]], opts);
}

/**
 * The outer product of the flattened inputs, as mx.outer: out[i, j] = a[i]·b[j].
 * @example
 * mg.outer(mg.array([1, 2]), mg.array([1, 10, 100]))
 */
export function outer(a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "outer");
  const y = toArray(b, "outer");
  return multiply(reshape(x, [x.size, 1], opts), flatten(y, 0, -1, opts), opts);
}

/**
 * vecdot's keyword options: `axis` (default −1) and `stream`.
 */
export interface VecdotOptions extends StreamOptions {
  axis?: number;
}

/**
 * Σ conj(a)·b along `axis` (keyword-only, default -1), as mx.vecdot.
 * @example
 * mg.vecdot(mg.array([[1, 2], [3, 4]], mg.float32), mg.array([[1, 1]], mg.float32))
 */
export function vecdot(a: ArrayInput, b: ArrayInput, opts: VecdotOptions = {}): MgArray {
  const x = toArray(a, "vecdot");
  const y = toArray(b, "vecdot");
  const axis = opts.axis ?? -1;
  if (x.ndim === 0 || y.ndim === 0) throw new Error("[vecdot] inputs must be at least 1D.");
  const ax = axis < 0 ? axis + x.ndim : axis;
  if (!Number.isInteger(axis) || ax < 0 || ax >= x.ndim) throw new RangeError("[vecdot] axis is out of bounds.");
  if (axis < 0 ? axis + y.ndim !== ax : axis >= y.ndim) throw new RangeError("[vecdot] axis is out of bounds.");
  if (x.shape[ax] !== y.shape[ax]) throw new Error("[vecdot] a and b must have the same size along axis.");
  return sum(multiply(conjugate(x, opts), y, opts), ax, false, opts);
}
