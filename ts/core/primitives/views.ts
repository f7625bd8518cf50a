// Primitives that only change how existing data is viewed (MLX's copy_shared_buffer family):
// broadcast, reshape, transpose, slice, as_strided. They allocate nothing unless a reshape of a
// non-contiguous input forces a copy, which the trace records.
import type { MgArray } from "../array.ts";
import type { Primitive } from "../primitive.ts";
import { rowMajorStrides } from "../shape.ts";
import { copyToContiguous } from "../../backend/cpu/copy.ts";
import * as ops from "../ops/shape.ts";
import { sum } from "../ops/reduce.ts";

/** Makes `out` a view of `input`'s storage with the given item offset and strides. */
export function setView(out: MgArray, input: MgArray, offset: number, strides: readonly number[]): void {
  const l = input.layout!;
  out.setLayout(l.storage, offset, strides, true);
}

/**
 * Makes `out` (mg.view's result) a view of `x`'s bytes as its own dtype when the layout allows:
 * equal item sizes, or row-contiguous bytes aligned to the new item. False when the bytes must be
 * packed row-contiguously first (the last axis changes length).
 */
export function viewBytesInPlace(x: MgArray, out: MgArray): boolean {
  const l = x.layout!;
  const ib = x.dtype.size;
  const ob = out.dtype.size;
  if (ib === ob) setView(out, x, l.offset, l.strides);
  else if (l.rowContiguous && (l.offset * ib) % ob === 0) setView(out, x, (l.offset * ib) / ob, rowMajorStrides(out.shape));
  else return false;
  return true;
}

export interface BroadcastParams {
  shape: number[];
}

export const Broadcast: Primitive<BroadcastParams> = {
  name: "Broadcast",
  view: true,
  gpu: { kind: "view" },
  fusion: "broadcast",
  outputSpecs: ([a], p) => [{ shape: p.shape, dtype: a!.dtype }],
  cpu([a], [out], p) {
    const l = a!.layout!;
    const nd = p.shape.length;
    const off = nd - a!.ndim;
    const strides = new Array<number>(nd).fill(0);
    for (let i = 0; i < a!.ndim; i++) {
      strides[off + i] = a!.shape[i] === 1 && p.shape[off + i] !== 1 ? 0 : l.strides[i]!;
    }
    setView(out!, a!, l.offset, strides);
  },
  // d/da broadcast(a) is the sum of the cotangent over the broadcast axes.
  vjp([a], [g]) {
    return [sumToShape(g!, a!.shape)];
  },
  jvp(_p, [t], _argnums, _o, p) {
    return [ops.broadcastTo(t!, p.shape)];
  },
  // Batch axis first, the element's dims right-aligned under the target shape.
  vmap([a], [ax], p) {
    const x = ops.moveaxis(a!, ax!, 0);
    const rest = x.shape.slice(1);
    const aligned = ops.reshape(x, [x.shape[0]!, ...new Array<number>(p.shape.length - rest.length).fill(1), ...rest]);
    return [[ops.broadcastTo(aligned, [x.shape[0]!, ...p.shape])], [0]];
  },
  paramsKey: (p) => p.shape.join(","),
};

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

export interface ReshapeParams {
  shape: number[];
}

/** Strides that view `l` (of `fromShape`) as `toShape` without copying, or null if impossible. */
export function reshapeStrides(
  fromShape: readonly number[],
  fromStrides: readonly number[],
  toShape: readonly number[],
  rowContiguous: boolean,
): number[] | null {
  if (rowContiguous || toShape.includes(0)) return rowMajorStrides(toShape);
  // Merge/split runs of dimensions that are contiguous with each other (NumPy's attempt_nocopy).
  const oldShape: number[] = [];
  const oldStrides: number[] = [];
  for (let i = 0; i < fromShape.length; i++) {
    if (fromShape[i] !== 1) {
      oldShape.push(fromShape[i]!);
      oldStrides.push(fromStrides[i]!);
    }
  }
  const out = new Array<number>(toShape.length).fill(0);
  let oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < toShape.length && oi < oldShape.length) {
    let np = toShape[ni]!;
    let op = oldShape[oi]!;
    while (np !== op) {
      if (np < op) np *= toShape[nj++]!;
      else op *= oldShape[oj++]!;
    }
    for (let k = oi; k < oj - 1; k++) {
      if (oldStrides[k] !== oldShape[k + 1]! * oldStrides[k + 1]!) return null;
    }
    out[nj - 1] = oldStrides[oj - 1]!;
    for (let k = nj - 1; k > ni; k--) out[k - 1] = out[k]! * toShape[k]!;
    ni = nj++;
    oi = oj++;
  }
  // Trailing size-1 dimensions: any stride works; reuse the last one as NumPy does.
  const last = ni >= 1 ? out[ni - 1]! : 1;
  for (let k = ni; k < toShape.length; k++) out[k] = last;
  return out;
}

export const Reshape: Primitive<ReshapeParams> = {
  name: "Reshape",
  view: true,
  gpu: { kind: "view" },
  outputSpecs: ([a], p) => [{ shape: p.shape, dtype: a!.dtype }],
  cpu([a], [out], p) {
    const l = a!.layout!;
    const strides = reshapeStrides(a!.shape, l.strides, p.shape, l.rowContiguous);
    if (strides) setView(out!, a!, l.offset, strides);
    else copyToContiguous(a!, out!);
  },
  vjp([a], [g]) {
    return [ops.reshape(g!, a!.shape)];
  },
  jvp(_p, [t], _a, _o, p) {
    return [ops.reshape(t!, p.shape)];
  },
  vmap([a], [ax], p) {
    const x = ops.moveaxis(a!, ax!, 0);
    return [[ops.reshape(x, [x.shape[0]!, ...p.shape])], [0]];
  },
  paramsKey: (p) => p.shape.join(","),
};

export interface TransposeParams {
  axes: number[];
}

export const Transpose: Primitive<TransposeParams> = {
  name: "Transpose",
  view: true,
  gpu: { kind: "view" },
  outputSpecs: ([a], p) => [{ shape: p.axes.map((ax) => a!.shape[ax]!), dtype: a!.dtype }],
  cpu([a], [out], p) {
    const l = a!.layout!;
    setView(out!, a!, l.offset, p.axes.map((ax) => l.strides[ax]!));
  },
  vjp(_p, [g], _a, _o, p) {
    const inverse = new Array<number>(p.axes.length);
    p.axes.forEach((ax, i) => (inverse[ax] = i));
    return [ops.transpose(g!, inverse)];
  },
  jvp(_p, [t], _a, _o, p) {
    return [ops.transpose(t!, p.axes)];
  },
  vmap([a], [ax], p) {
    return [[ops.transpose(ops.moveaxis(a!, ax!, 0), [0, ...p.axes.map((d) => d + 1)])], [0]];
  },
  paramsKey: (p) => p.axes.join(","),
};

export interface SliceParams {
  start: number[];
  stop: number[];
  strides: number[];
}

/** Output extent of a normalised slice along one axis. */
export function sliceLength(start: number, stop: number, step: number): number {
  if (step > 0) return Math.max(0, Math.ceil((stop - start) / step));
  return Math.max(0, Math.ceil((start - stop) / -step));
}

export const Slice: Primitive<SliceParams> = {
  name: "Slice",
  view: true,
  gpu: { kind: "view" },
  outputSpecs: ([a], p) => [
    { shape: p.start.map((s, i) => sliceLength(s, p.stop[i]!, p.strides[i]!)), dtype: a!.dtype },
  ],
  cpu([a], [out], p) {
    const l = a!.layout!;
    let offset = l.offset;
    const strides = new Array<number>(a!.ndim);
    for (let i = 0; i < a!.ndim; i++) {
      // An empty output never reads its start, which may equal the axis length.
      if (out!.size > 0) offset += p.start[i]! * l.strides[i]!;
      strides[i] = l.strides[i]! * p.strides[i]!;
    }
    setView(out!, a!, offset, strides);
  },
  // The cotangent goes back into the region that was read; the rest of a gets zero.
  vjp([a], [g], _a, _o, p) {
    return [sliceUpdateStatic(zerosLike(a!), g!, p.start, p.stop, p.strides, "none")];
  },
  jvp(_p, [t], _a, _o, p) {
    return [sliceStatic(t!, p.start, p.stop, p.strides)];
  },
  // The batch axis stays in place and is taken whole.
  vmap([a], [ax], p) {
    const b = ax!;
    const insert = (v: number[], x: number) => [...v.slice(0, b), x, ...v.slice(b)];
    return [[sliceStatic(a!, insert(p.start, 0), insert(p.stop, a!.shape[b]!), insert(p.strides, 1))], [b]];
  },
  paramsKey: (p) => `${p.start}|${p.stop}|${p.strides}`,
};

export interface AsStridedParams {
  shape: number[];
  strides: number[];
  offset: number;
}

export const AsStrided: Primitive<AsStridedParams> = {
  name: "AsStrided",
  view: true,
  gpu: { kind: "view" },
  outputSpecs: ([a], p) => [{ shape: p.shape, dtype: a!.dtype }],
  cpu([a], [out], p) {
    // as_strided addresses the input's data as if it were row-contiguous (MLX semantics).
    const src = a!.layout!.rowContiguous ? a! : null;
    if (src) setView(out!, a!, a!.layout!.offset + p.offset, p.strides);
    else {
      throw new Error("[as_strided] input must be row-contiguous (call contiguous() first).");
    }
  },
  // Output element j reads input element offset + Σ coord·stride, possibly several times: the
  // cotangent is scatter-added to those positions (MLX's rule). The op made the input flat.
  vjp([a], [g], _a, _o, p) {
    const n = a!.size;
    const positions = ops.reshape(asStridedRaw(arange(0, n, int32), p), [g!.size]);
    const grad = scatterAdd(zerosLike(a!, null), [positions], ops.reshape(g!, [g!.size, 1]), [0]);
    return [ops.reshape(grad, a!.shape)];
  },
  jvp(_p, [t], _a, _o, p) {
    return [asStridedRaw(t!, p)];
  },
  // Batch elements are consecutive blocks of the (contiguous, batch-first) input.
  vmap([a], [ax], p) {
    const x = contiguous(ops.moveaxis(a!, ax!, 0));
    const block = x.shape.slice(1).reduce((m, d) => m * d, 1);
    const params = { shape: [x.shape[0]!, ...p.shape], strides: [block, ...p.strides], offset: p.offset };
    return [[makeArray(AsStrided, [x], params, resolveStream())], [0]];
  },
  paramsKey: (p) => `${p.shape}|${p.strides}|${p.offset}`,
};

/** An AsStrided node over `a` made flat and row-contiguous (what the addressing assumes). */
export function asStridedRaw(a: MgArray, p: AsStridedParams): MgArray {
  const flat = contiguous(ops.reshape(a, [a.size]));
  return makeArray(AsStrided, [flat], { shape: [...p.shape], strides: [...p.strides], offset: p.offset }, resolveStream());
}

// Ops used by the derivative rules above (imported last: they import these records).
import { int32 } from "../dtype.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { arange, zerosLike } from "../ops/creation.ts";
import { contiguous } from "../ops/movement.ts";
import { scatterAdd, sliceUpdateStatic } from "../ops/scatter.ts";
import { sliceStatic } from "../ops/slicing.ts";
