// CPU kernels for data movement with computed addresses: gather/scatter (MLX's Gather, Scatter,
// GatherAxis, ScatterAxis), static and dynamic slice updates, and padding. Elements are moved as
// raw storage items (bit-exact for every dtype); scatter reductions compute in the dtype's own
// arithmetic, one update at a time, so every duplicate index is applied in order. Out-of-range
// indices follow the policy in ts/core/primitives/indexing.ts (wrapped once if negative; then
// read as 0 / dropped, or an error with MG_CHECK_INDICES=1).
import type { MgArray } from "../../core/array.ts";
import {
  bfloat16, bfloat16BitsFromNumber, bool_, complex64, type Dtype, int32, numberFromBfloat16Bits,
  uint32,
} from "../../core/dtype.ts";
import { elementOffsets, lanesOf } from "../../core/elements.ts";
import {
  DynamicSlice, DynamicSliceUpdate, Gather, GatherAxis, indexChecksEnabled, outOfBounds, Scatter, ScatterAxis, SliceUpdate,
  type UpdateMode,
} from "../../core/primitives/indexing.ts";
import { rowMajorStrides, shapeSize } from "../../core/shape.ts";
import type { TypedArray } from "../../memory/storage.ts";
import { copyToContiguous } from "./copy.ts";
import { registerCpu } from "./registry.ts";
import { readNumbers, storageView } from "./values.ts";

/** dst[d] ← dst[d] ⊕ src[s] for item offsets d and s, in the dtype's arithmetic. */
export type Combine = (dst: TypedArray, d: number, src: TypedArray, s: number) => void;

/**
 * The combining function for `dtype` and `mode`. `nanMax` selects NaN-propagating max/min (the
 * elementwise maximum, used by slice updates); otherwise max/min are MLX's scatter comparisons
 * `y = y > x ? y : x`, under which a NaN update wins and a NaN already present loses.
 */
export function combiner(dtype: Dtype, mode: UpdateMode, nanMax: boolean): Combine {
  if (dtype === complex64) return complexCombiner(mode);
  if (mode === "none") return (dst, d, src, s) => { dst[d] = src[s]!; };
  if (dtype === bool_) {
    // C++ bool arithmetic: += and max are "or", *= and min are "and".
    if (mode === "sum" || mode === "max") return (dst, d, src, s) => { dst[d] = dst[d] || src[s] ? 1 : 0; };
    return (dst, d, src, s) => { dst[d] = dst[d] && src[s] ? 1 : 0; };
  }
  if (dtype === bfloat16) {
    const op = numberOp(mode, nanMax, false);
    return (dst, d, src, s) => {
      dst[d] = bfloat16BitsFromNumber(op(numberFromBfloat16Bits(dst[d] as number), numberFromBfloat16Bits(src[s] as number)));
    };
  }
  if (dtype.size === 8 && (dtype.kind === "i" || dtype.kind === "u")) {
    // BigInt64Array/BigUint64Array stores wrap modulo 2^64 like C.
    switch (mode) {
      case "sum": return (dst, d, src, s) => { (dst as BigInt64Array)[d] = (dst[d] as bigint) + (src[s] as bigint); };
      case "prod": return (dst, d, src, s) => { (dst as BigInt64Array)[d] = (dst[d] as bigint) * (src[s] as bigint); };
      case "max": return (dst, d, src, s) => { if (!((dst[d] as bigint) > (src[s] as bigint))) dst[d] = src[s]!; };
      case "min": return (dst, d, src, s) => { if (!((dst[d] as bigint) < (src[s] as bigint))) dst[d] = src[s]!; };
    }
  }
  // Every other dtype: the typed-array store rounds (float16/32) or wraps (ints) once, which equals
  // the dtype's own + and × since the float64 result is exact or correctly rounded before that.
  const op = numberOp(mode, nanMax, dtype === int32 || dtype === uint32);
  return (dst, d, src, s) => { dst[d] = op(dst[d] as number, src[s] as number); };
}

function numberOp(mode: Exclude<UpdateMode, "none">, nanMax: boolean, int32Mul: boolean): (y: number, x: number) => number {
  switch (mode) {
    case "sum": return (y, x) => y + x;
    // 32-bit integer products exceed 2^53: Math.imul keeps the exact low 32 bits.
    case "prod": return int32Mul ? (y, x) => Math.imul(y, x) : (y, x) => y * x;
    case "max": return nanMax ? (y, x) => (y !== y ? y : y > x ? y : x) : (y, x) => (y > x ? y : x);
    case "min": return nanMax ? (y, x) => (y !== y ? y : y < x ? y : x) : (y, x) => (y < x ? y : x);
  }
}

function complexCombiner(mode: UpdateMode): Combine {
  switch (mode) {
    case "none":
      return (dst, d, src, s) => {
        dst[2 * d] = src[2 * s]!;
        dst[2 * d + 1] = src[2 * s + 1]!;
      };
    case "sum":
      return (dst, d, src, s) => {
        dst[2 * d] = (dst[2 * d] as number) + (src[2 * s] as number);
        dst[2 * d + 1] = (dst[2 * d + 1] as number) + (src[2 * s + 1] as number);
      };
    case "prod":
      return (dst, d, src, s) => {
        const a = dst[2 * d] as number, b = dst[2 * d + 1] as number;
        const c = src[2 * s] as number, e = src[2 * s + 1] as number;
        dst[2 * d] = a * c - b * e;
        dst[2 * d + 1] = a * e + b * c;
      };
    case "max":
    case "min": {
      // MLX orders complex numbers lexicographically (real part, then imaginary part).
      const sign = mode === "max" ? 1 : -1;
      return (dst, d, src, s) => {
        const yr = dst[2 * d] as number, yi = dst[2 * d + 1] as number;
        const xr = src[2 * s] as number, xi = src[2 * s + 1] as number;
        const yWins = sign * (yr - xr) > 0 || (yr === xr && sign * (yi - xi) > 0);
        if (!yWins) {
          dst[2 * d] = xr;
          dst[2 * d + 1] = xi;
        }
      };
    }
  }
}

/** Writes a zero item (0, 0n or 0+0i) at item offset d. */
function zeroAt(dst: TypedArray, d: number, lanes: number): void {
  if (dst instanceof BigInt64Array || dst instanceof BigUint64Array) dst[d] = 0n;
  else for (let c = 0; c < lanes; c++) dst[d * lanes + c] = 0;
}

function copyItem(dst: TypedArray, d: number, src: TypedArray, s: number, lanes: number): void {
  if (lanes === 1) dst[d] = src[s]!;
  else {
    dst[2 * d] = src[2 * s]!;
    dst[2 * d + 1] = src[2 * s + 1]!;
  }
}

/** Row-major coordinates (one Int32Array per axis) of every element of `shape`. */
function coordinates(shape: readonly number[]): Int32Array[] {
  const n = shapeSize(shape);
  const out = shape.map(() => new Int32Array(n));
  const idx = new Array<number>(shape.length).fill(0);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < shape.length; k++) out[k]![i] = idx[k]!;
    for (let k = shape.length - 1; k >= 0; k--) {
      if (++idx[k]! < shape[k]!) break;
      idx[k] = 0;
    }
  }
  return out;
}

/** An index value wrapped once when negative (MLX's offset_neg_idx). */
function wrap(v: number, size: number): number {
  return v < 0 ? v + size : v;
}

// ---------------------------------------------------------------------------------------------
// Gather / Scatter

/**
 * out[i, s...] = src[start(i) + s] where start(i) is indices[k][i] on axes[k] and 0 elsewhere,
 * for every slice position s < sliceSizes. `indices` share one shape and dtype.
 */
export function gatherCpu(src: MgArray, indices: readonly MgArray[], out: MgArray, axes: readonly number[], sliceSizes: readonly number[]): void {
  out.allocate();
  const dst = storageView(out);
  const sv = storageView(src);
  const lanes = lanesOf(src.dtype);
  const l = src.layout!;
  const nIdx = indices.length > 0 ? indices[0]!.size : 1;
  const sliceN = shapeSize(sliceSizes);
  if (nIdx === 0 || sliceN === 0) return;
  const idxVals = indices.map((x) => readNumbers(x));
  const rel = elementOffsets(sliceSizes, l.strides, 0);
  const sliceCoords = coordinates(sliceSizes);
  const checked = indexChecksEnabled();
  const starts = new Array<number>(axes.length);
  let o = 0;
  for (let i = 0; i < nIdx; i++) {
    let base = l.offset;
    let inside = true;
    for (let k = 0; k < axes.length; k++) {
      const ax = axes[k]!;
      const n = src.shape[ax]!;
      const v = wrap(idxVals[k]![i]!, n);
      starts[k] = v;
      if (v < 0 || v + sliceSizes[ax]! > n) {
        if (checked) throw outOfBounds("gather", idxVals[k]![i]!, ax, n);
        inside = false;
      } else base += v * l.strides[ax]!;
    }
    if (inside) {
      for (let j = 0; j < sliceN; j++) copyItem(dst, o++, sv, base + rel[j]!, lanes);
      continue;
    }
    // Partly outside: elements inside are read, the rest are 0.
    for (let j = 0; j < sliceN; j++, o++) {
      let off = l.offset;
      let ok = true;
      for (let d = 0; d < src.ndim && ok; d++) {
        const k = axes.indexOf(d);
        const c = (k >= 0 ? starts[k]! : 0) + sliceCoords[d]![j]!;
        if (c < 0 || c >= src.shape[d]!) ok = false;
        else off += c * l.strides[d]!;
      }
      if (ok) copyItem(dst, o, sv, off, lanes);
      else zeroAt(dst, o, lanes);
    }
  }
}

/**
 * out = src, then for every index position i and update-slice position s:
 * out[start(i) + s] ⊕= updates[i, s], in order (so duplicate indices all apply).
 */
export function scatterCpu(src: MgArray, indices: readonly MgArray[], updates: MgArray, out: MgArray, axes: readonly number[], mode: UpdateMode): void {
  copyToContiguous(src, out);
  const dst = storageView(out);
  const nd = src.ndim;
  const idxNdim = updates.ndim - nd;
  const sliceShape = updates.shape.slice(idxNdim);
  const sliceN = shapeSize(sliceShape);
  const nIdx = indices.length > 0 ? indices[0]!.size : 1;
  if (nIdx === 0 || sliceN === 0) return;
  const outStrides = rowMajorStrides(src.shape);
  const rel = elementOffsets(sliceShape, outStrides, 0);
  const ul = updates.layout!;
  const updOffsets = elementOffsets(updates.shape, ul.strides, ul.offset);
  const uv = storageView(updates);
  const combine = combiner(src.dtype, mode, false);
  const idxVals = indices.map((x) => readNumbers(x));
  const sliceCoords = coordinates(sliceShape);
  const checked = indexChecksEnabled();
  const starts = new Array<number>(axes.length);
  for (let i = 0; i < nIdx; i++) {
    let base = 0;
    let inside = true;
    for (let k = 0; k < axes.length; k++) {
      const ax = axes[k]!;
      const n = src.shape[ax]!;
      const v = wrap(idxVals[k]![i]!, n);
      starts[k] = v;
      if (v < 0 || v + sliceShape[ax]! > n) {
        if (checked) throw outOfBounds("scatter", idxVals[k]![i]!, ax, n);
        inside = false;
      } else base += v * outStrides[ax]!;
    }
    const u0 = i * sliceN;
    if (inside) {
      for (let j = 0; j < sliceN; j++) combine(dst, base + rel[j]!, uv, updOffsets[u0 + j]!);
      continue;
    }
    for (let j = 0; j < sliceN; j++) {
      let off = 0;
      let ok = true;
      for (let d = 0; d < nd && ok; d++) {
        const k = axes.indexOf(d);
        const c = (k >= 0 ? starts[k]! : 0) + sliceCoords[d]![j]!;
        if (c < 0 || c >= src.shape[d]!) ok = false;
        else off += c * outStrides[d]!;
      }
      if (ok) combine(dst, off, uv, updOffsets[u0 + j]!);
    }
  }
}

/** out[..., j, ...] = src[..., indices[..., j, ...], ...] along `axis` (shapes equal off-axis). */
export function gatherAxisCpu(src: MgArray, indices: MgArray, out: MgArray, axis: number): void {
  out.allocate();
  const dst = storageView(out);
  const sv = storageView(src);
  const lanes = lanesOf(src.dtype);
  const l = src.layout!;
  const n = src.shape[axis]!;
  const stride = l.strides[axis]!;
  const idx = readNumbers(indices);
  // Source offsets with the axis coordinate left at 0; the index adds it.
  const offStrides = [...l.strides];
  offStrides[axis] = 0;
  const bases = elementOffsets(indices.shape, offStrides, l.offset);
  const checked = indexChecksEnabled();
  for (let i = 0; i < idx.length; i++) {
    const v = wrap(idx[i]!, n);
    if (v >= 0 && v < n) copyItem(dst, i, sv, bases[i]! + v * stride, lanes);
    else if (checked) throw outOfBounds("take_along_axis", idx[i]!, axis, n);
    else zeroAt(dst, i, lanes);
  }
}

/** out = src; out[..., indices[..., j, ...], ...] ⊕= updates[..., j, ...] along `axis`. */
export function scatterAxisCpu(src: MgArray, indices: MgArray, updates: MgArray, out: MgArray, axis: number, mode: UpdateMode): void {
  copyToContiguous(src, out);
  const dst = storageView(out);
  const n = src.shape[axis]!;
  const outStrides = rowMajorStrides(src.shape);
  const stride = outStrides[axis]!;
  outStrides[axis] = 0;
  const bases = elementOffsets(indices.shape, outStrides, 0);
  const ul = updates.layout!;
  const updOffsets = elementOffsets(updates.shape, ul.strides, ul.offset);
  const uv = storageView(updates);
  const idx = readNumbers(indices);
  const combine = combiner(src.dtype, mode, false);
  const checked = indexChecksEnabled();
  for (let i = 0; i < idx.length; i++) {
    const v = wrap(idx[i]!, n);
    if (v >= 0 && v < n) combine(dst, bases[i]! + v * stride, uv, updOffsets[i]!);
    else if (checked) throw outOfBounds("put_along_axis", idx[i]!, axis, n);
  }
}

// ---------------------------------------------------------------------------------------------
// Slices at computed or static positions

/** Reads the start positions of a dynamic slice (a 0-D or 1-D integer array). */
function readStarts(start: MgArray): number[] {
  return Array.from(readNumbers(start));
}

/** out = src[start : start + out.shape] on `axes` (full extent elsewhere); outside reads 0. */
export function dynamicSliceCpu(src: MgArray, start: MgArray, out: MgArray, axes: readonly number[]): void {
  out.allocate();
  const dst = storageView(out);
  const sv = storageView(src);
  const lanes = lanesOf(src.dtype);
  const l = src.layout!;
  const starts = src.shape.map(() => 0);
  readStarts(start).forEach((v, k) => (starts[axes[k]!] = v));
  const inside = starts.every((s, d) => s >= 0 && s + out.shape[d]! <= src.shape[d]!);
  if (!inside && indexChecksEnabled()) {
    const d = starts.findIndex((s, d) => s < 0 || s + out.shape[d]! > src.shape[d]!);
    throw new RangeError(`[slice] Start index ${starts[d]} with slice size ${out.shape[d]} is out of bounds for axis ${d} with size ${src.shape[d]} (MG_CHECK_INDICES is on).`);
  }
  if (inside) {
    const base = l.offset + starts.reduce((acc, s, d) => acc + s * l.strides[d]!, 0);
    const offs = elementOffsets(out.shape, l.strides, base);
    for (let i = 0; i < offs.length; i++) copyItem(dst, i, sv, offs[i]!, lanes);
    return;
  }
  const coords = coordinates(out.shape);
  for (let i = 0; i < out.size; i++) {
    let off = l.offset;
    let ok = true;
    for (let d = 0; d < src.ndim && ok; d++) {
      const c = starts[d]! + coords[d]![i]!;
      if (c < 0 || c >= src.shape[d]!) ok = false;
      else off += c * l.strides[d]!;
    }
    if (ok) copyItem(dst, i, sv, off, lanes);
    else zeroAt(dst, i, lanes);
  }
}

/** out = src; out[start : start + update.shape] = update on `axes`; updates outside are dropped. */
export function dynamicSliceUpdateCpu(src: MgArray, update: MgArray, start: MgArray, out: MgArray, axes: readonly number[]): void {
  copyToContiguous(src, out);
  const dst = storageView(out);
  const uv = storageView(update);
  const lanes = lanesOf(src.dtype);
  const ul = update.layout!;
  const starts = src.shape.map(() => 0);
  readStarts(start).forEach((v, k) => (starts[axes[k]!] = v));
  const outStrides = rowMajorStrides(src.shape);
  const updOffsets = elementOffsets(update.shape, ul.strides, ul.offset);
  const inside = starts.every((s, d) => s >= 0 && s + update.shape[d]! <= src.shape[d]!);
  if (!inside && indexChecksEnabled()) {
    const d = starts.findIndex((s, d) => s < 0 || s + update.shape[d]! > src.shape[d]!);
    throw new RangeError(`[slice_update] Start index ${starts[d]} with update size ${update.shape[d]} is out of bounds for axis ${d} with size ${src.shape[d]} (MG_CHECK_INDICES is on).`);
  }
  if (inside) {
    const base = starts.reduce((acc, s, d) => acc + s * outStrides[d]!, 0);
    const offs = elementOffsets(update.shape, outStrides, base);
    for (let i = 0; i < offs.length; i++) copyItem(dst, offs[i]!, uv, updOffsets[i]!, lanes);
    return;
  }
  const coords = coordinates(update.shape);
  for (let i = 0; i < update.size; i++) {
    let off = 0;
    let ok = true;
    for (let d = 0; d < src.ndim && ok; d++) {
      const c = starts[d]! + coords[d]![i]!;
      if (c < 0 || c >= src.shape[d]!) ok = false;
      else off += c * outStrides[d]!;
    }
    if (ok) copyItem(dst, off, uv, updOffsets[i]!, lanes);
  }
}

/**
 * out = src, then out[start:stop:strides] ⊕= update (bounds already normalised, as Slice's).
 * Max/min propagate NaN here, as the elementwise maximum does (MLX's slice_update_max).
 */
export function sliceUpdateCpu(src: MgArray, update: MgArray, out: MgArray, start: readonly number[], strides: readonly number[], mode: UpdateMode): void {
  copyToContiguous(src, out);
  if (update.size === 0) return;
  const dst = storageView(out);
  const uv = storageView(update);
  const ul = update.layout!;
  const outStrides = rowMajorStrides(src.shape);
  const base = start.reduce((acc, s, d) => acc + s * outStrides[d]!, 0);
  const regionStrides = outStrides.map((s, d) => s * strides[d]!);
  const dOffs = elementOffsets(update.shape, regionStrides, base);
  const uOffs = elementOffsets(update.shape, ul.strides, ul.offset);
  const combine = combiner(src.dtype, mode, true);
  for (let i = 0; i < dOffs.length; i++) combine(dst, dOffs[i]!, uv, uOffs[i]!);
}

/** out = value everywhere, with `a` copied in at offset `low` on each axis. */
export function padCpu(a: MgArray, value: MgArray, out: MgArray, low: readonly number[]): void {
  out.allocate();
  const dst = storageView(out);
  const lanes = lanesOf(a.dtype);
  const vl = value.layout!;
  const vv = storageView(value);
  for (let i = 0; i < out.size; i++) copyItem(dst, i, vv, vl.offset, lanes);
  if (a.size === 0) return;
  const outStrides = rowMajorStrides(out.shape);
  const base = low.reduce((acc, s, d) => acc + s * outStrides[d]!, 0);
  const dOffs = elementOffsets(a.shape, outStrides, base);
  const l = a.layout!;
  const sOffs = elementOffsets(a.shape, l.strides, l.offset);
  const sv = storageView(a);
  for (let i = 0; i < dOffs.length; i++) copyItem(dst, dOffs[i]!, sv, sOffs[i]!, lanes);
}

// ---------------------------------------------------------------------------------------------
// Registrations

registerCpu(Gather, ([a, ...idx], [out], p) => gatherCpu(a!, idx, out!, p.axes, p.sliceSizes));
registerCpu(Scatter, (inputs, [out], p) => {
  scatterCpu(inputs[0]!, inputs.slice(1, -1), inputs[inputs.length - 1]!, out!, p.axes, p.mode);
});
registerCpu(GatherAxis, ([a, idx], [out], p) => gatherAxisCpu(a!, idx!, out!, p.axis));
registerCpu(ScatterAxis, ([a, idx, u], [out], p) => scatterAxisCpu(a!, idx!, u!, out!, p.axis, p.mode));
registerCpu(SliceUpdate, ([a, u], [out], p) => sliceUpdateCpu(a!, u!, out!, p.start, p.strides, p.mode));
registerCpu(DynamicSlice, ([a, start], [out], p) => dynamicSliceCpu(a!, start!, out!, p.axes));
registerCpu(DynamicSliceUpdate, ([a, u, start], [out], p) => dynamicSliceUpdateCpu(a!, u!, start!, out!, p.axes));
