// Views: where a layout-only primitive's output lives within its input's storage, computed from the
// input's placement (offset, strides, contiguity) alone. The layout rules of the view records
// (ts/core/primitives/views.ts …) are built from these, and every backend applies them the same
// way (`applyViews`); `predictPlacement` lets a backend see through views before they exist.
import { isColContiguous, isRowContiguous, type MgArray } from "./array.ts";
import type { Dtype } from "./dtype.ts";
import type { Placement, ViewOf } from "./primitive.ts";
import { rowMajorStrides } from "./shape.ts";

/** Makes `out` a view of `input`'s storage with the given item offset and strides. */
export function setView(out: MgArray, input: MgArray, offset: number, strides: readonly number[]): void {
  const l = input.layout!;
  out.setLayout(l.storage, offset, strides, true);
}

/** Gives each output the view a layout rule computed (inputs are evaluated). */
export function applyViews(inputs: readonly MgArray[], outputs: readonly MgArray[], views: readonly ViewOf[]): void {
  for (let i = 0; i < outputs.length; i++) {
    const v = views[i]!;
    setView(outputs[i]!, inputs[v.input]!, v.offset, v.strides);
  }
}

/** The same placement, seen whole (identity views: stop_gradient, forwarded outputs). */
export function sameView(input: number, p: Placement): ViewOf {
  return { input, offset: p.offset, strides: p.strides };
}

/** Strides of `shape` (right-aligned) broadcast to `to`: size-1 axes that grow and new axes get 0. */
export function broadcastStrides(shape: readonly number[], strides: readonly number[], to: readonly number[]): number[] {
  const nd = to.length;
  const off = nd - shape.length;
  // pushed in order, not new Array(n).fill: a packed array without the builtin call (per op)
  const out: number[] = [];
  for (let i = 0; i < off; i++) out.push(0);
  for (let i = 0; i < shape.length; i++) out.push(shape[i] === 1 && to[off + i] !== 1 ? 0 : strides[i]!);
  return out;
}

/** Strides after permuting the axes (output axis i is input axis axes[i]). */
export function transposeStrides(strides: readonly number[], axes: readonly number[]): number[] {
  return axes.map((ax) => strides[ax]!);
}

/** Strides that view `fromShape`/`fromStrides` as `toShape` without copying, or null if impossible. */
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

/** Output extent of a normalised slice along one axis. */
export function sliceLength(start: number, stop: number, step: number): number {
  if (step > 0) return Math.max(0, Math.ceil((stop - start) / step));
  return Math.max(0, Math.ceil((start - stop) / -step));
}

/** The view a[start::step] (per axis) of placement `p`; an empty output never reads its start. */
export function sliceView(p: Placement, start: readonly number[], steps: readonly number[], empty: boolean): ViewOf {
  let offset = p.offset;
  const strides = new Array<number>(start.length);
  for (let i = 0; i < start.length; i++) {
    // An empty output never reads its start, which may equal the axis length.
    if (!empty) offset += start[i]! * p.strides[i]!;
    strides[i] = p.strides[i]! * steps[i]!;
  }
  return { input: 0, offset, strides };
}

/**
 * The same bytes as another dtype (mx.view) in place: with equal item sizes the layout is kept;
 * otherwise only row-contiguous bytes aligned to the new item can be read in place (the last axis
 * changes length). Null when the bytes must be packed row-contiguously first.
 */
export function dtypeView(p: Placement, from: Dtype, to: Dtype, outShape: readonly number[]): ViewOf | null {
  const ib = from.size;
  const ob = to.size;
  if (ib === ob) return { input: 0, offset: p.offset, strides: p.strides };
  if (p.rowContiguous && (p.offset * ib) % ob === 0) return { input: 0, offset: (p.offset * ib) / ob, strides: rowMajorStrides(outShape) };
  return null;
}

/** mx.contiguous's test: the input itself when it is already dense (column-major, if allowed). */
export function isDense(p: Placement, allowColMajor: boolean): boolean {
  return p.rowContiguous || (allowColMajor && p.colContiguous);
}

/** A placement with the given strides (its contiguity computed). */
export function placementOf(shape: readonly number[], offset: number, strides: readonly number[]): Placement {
  return { offset, strides, rowContiguous: isRowContiguous(shape, strides), colContiguous: isColContiguous(shape, strides) };
}

/**
 * The placement `a` will have: its own once evaluated; through a chain of views, their layout
 * rules applied to the predicted placements of their inputs; otherwise that of a fresh kernel
 * output (row-major from 0). Backends use it to choose kernels before the inputs exist; a wrong
 * guess only costs a later compile, never a wrong result (kernels read the real layout).
 */
export function predictPlacement(a: MgArray, depth = 0): Placement {
  if (a.layout) return a.layout;
  const node = a.node;
  const rule = node?.primitive.layout;
  if (node && rule && depth < 8) {
    const views = rule.call(node.primitive, node.inputs, node.inputs.map((i) => predictPlacement(i, depth + 1)), node.outputs, node.params);
    const v = views?.[node.outputs.indexOf(a)];
    if (v) return placementOf(a.shape, v.offset, v.strides);
  }
  return placementOf(a.shape, 0, rowMajorStrides(a.shape));
}
