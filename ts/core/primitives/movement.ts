// Data-movement primitives without computed addresses: constant padding (MLX's Pad), bit
// reinterpretation (View) and materialising a layout (Contiguous).
import type { MgArray } from "../array.ts";
import type { Dtype } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";
import { rowMajorStrides } from "../shape.ts";
import { copyToContiguous } from "../../backend/cpu/copy.ts";
import { padCpu } from "../../backend/cpu/indexing.ts";
import { contiguousRule, padRule, viewRule } from "../../backend/gpu/movement.ts";
import { storageView } from "../../backend/cpu/values.ts";
import { forEachOffset, lanesOf, storageCtor } from "../elements.ts";
import { allocateBuffer, Storage } from "../../memory/storage.ts";
import { setView, viewBytesInPlace } from "./views.ts";

export interface PadParams {
  /** Normalised axes that are padded, with the low/high pad sizes of each. */
  axes: number[];
  low: number[];
  high: number[];
}

/** Full-rank low pad sizes (0 on axes that are not padded). */
function lowPads(ndim: number, p: PadParams): number[] {
  const low = new Array<number>(ndim).fill(0);
  p.axes.forEach((ax, i) => (low[ax] = p.low[i]!));
  return low;
}

/** out = value everywhere except the interior, which is `a`: inputs [a, value (0-D, a's dtype)]. */
export const Pad: Primitive<PadParams> = {
  name: "Pad",
  gpu: padRule,
  outputSpecs([a], p) {
    const shape = [...a!.shape];
    p.axes.forEach((ax, i) => (shape[ax] = shape[ax]! + p.low[i]! + p.high[i]!));
    return [{ shape, dtype: a!.dtype }];
  },
  cpu: ([a, value], [out], p) => padCpu(a!, value!, out!, lowPads(a!.ndim, p)),
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
  paramsKey: (p) => `${p.axes}|${p.low}|${p.high}`,
};

export interface ViewParams {
  dtype: Dtype;
}

/**
 * The same bytes read as another dtype (mx.view). With equal item sizes the output shares the
 * input's layout; otherwise the last axis scales by the size ratio and the input must be read
 * row-contiguously, so a strided input is copied first.
 *
 * No vjp/jvp: a bit reinterpretation has no derivative, and MLX's View defines none either.
 */
export const View: Primitive<ViewParams> = {
  name: "View",
  gpu: viewRule,
  view: true,
  outputSpecs([a], p) {
    const shape = [...a!.shape];
    const ib = a!.dtype.size;
    const ob = p.dtype.size;
    if (shape.length > 0) {
      if (ib < ob) shape[shape.length - 1] = shape[shape.length - 1]! / (ob / ib);
      else if (ib > ob) shape[shape.length - 1] = shape[shape.length - 1]! * (ib / ob);
    }
    return [{ shape, dtype: p.dtype }];
  },
  cpu([a], [out]) {
    const x = a!;
    const o = out!;
    if (viewBytesInPlace(x, o)) return;
    const l = x.layout!;
    // A strided (or misaligned) input: pack its items row-major into new storage, then reinterpret.
    const storage = new Storage(allocateBuffer(x.nbytes));
    const to = storage.view(x.dtype, storageCtor(x.dtype));
    const from = storageView(x);
    const lanes = lanesOf(x.dtype);
    let i = 0;
    forEachOffset(x.shape, l.strides, l.offset, (off) => {
      for (let c = 0; c < lanes; c++) to[i * lanes + c] = from[off * lanes + c]!;
      i++;
    });
    o.setLayout(storage, 0, rowMajorStrides(o.shape), false);
  },
  // Reinterpretation is per element except along the last axis when item sizes differ.
  vmap([a], [ax], p) {
    const last = ax === a!.ndim - 1 && a!.dtype.size !== p.dtype.size;
    const x = last ? moveaxis(a!, ax!, 0) : a!;
    return [[makeArray(View, [x], p, resolveStream())], [last ? 0 : ax!]];
  },
  paramsKey: (p) => p.dtype.name,
};

export interface ContiguousParams {
  allowColMajor: boolean;
}

/**
 * A dense layout (mx.contiguous): the input itself when it is already row-contiguous (or
 * column-contiguous, if allowed), otherwise a row-major copy.
 */
export const Contiguous: Primitive<ContiguousParams> = {
  name: "Contiguous",
  gpu: contiguousRule,
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  cpu([a], [out], p) {
    const l = a!.layout!;
    if (l.rowContiguous || (p.allowColMajor && l.colContiguous)) setView(out!, a!, l.offset, l.strides);
    else copyToContiguous(a!, out!);
  },
  vjp: (_p, [g]) => [g!],
  jvp: (_p, [t]) => [t!],
  vmap: ([a], [ax], p) => [[makeArray(Contiguous, [a!], p, resolveStream())], [ax!]],
  paramsKey: (p) => String(p.allowColMajor),
};

/** A Pad node (the value already has a's dtype). */
export function padConstantRaw(a: MgArray, value: MgArray, p: PadParams, opts: StreamOptions = {}): MgArray {
  return makeArray(Pad, [a, value], p, resolveStream(opts.stream));
}

import { resolveStream } from "../device.ts";
import type { StreamOptions } from "../ops/convert.ts";
import { makeArray } from "../graph.ts";
import * as ew from "../ops/elementwise.ts";
import { zerosLike } from "../ops/creation.ts";
import { sum } from "../ops/reduce.ts";
import { moveaxis } from "../ops/shape.ts";
import { sliceStatic } from "../ops/slicing.ts";
