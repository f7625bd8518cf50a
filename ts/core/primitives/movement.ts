// Data-movement primitives without computed addresses: constant padding (MLX's Pad), bit
// reinterpretation (View) and materialising a layout (Contiguous). Rules: ts/core/rules/movement.ts.
import type { Dtype } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";
import { dtypeView } from "../layout.ts";

export interface PadParams {
  /** Normalised axes that are padded, with the low/high pad sizes of each. */
  axes: number[];
  low: number[];
  high: number[];
}

/** Full-rank low pad sizes (0 on axes that are not padded). */
export function lowPads(ndim: number, p: PadParams): number[] {
  const low = new Array<number>(ndim).fill(0);
  p.axes.forEach((ax, i) => (low[ax] = p.low[i]!));
  return low;
}

/** out = value everywhere except the interior, which is `a`: inputs [a, value (0-D, a's dtype)]. */
export const Pad: Primitive<PadParams> = {
  name: "Pad",
  outputSpecs([a], p) {
    const shape = [...a!.shape];
    p.axes.forEach((ax, i) => (shape[ax] = shape[ax]! + p.low[i]! + p.high[i]!));
    return [{ shape, dtype: a!.dtype }];
  },
  paramsKey: (p) => `${p.axes}|${p.low}|${p.high}`,
};

export interface ViewParams {
  dtype: Dtype;
}

/**
 * The same bytes read as another dtype (mx.view). With equal item sizes the output shares the
 * input's layout; otherwise the last axis scales by the size ratio and the input must be read
 * row-contiguously, so a strided input is packed first (the backends' View kernels).
 *
 * No vjp/jvp: a bit reinterpretation has no derivative, and MLX's View defines none either.
 */
export const View: Primitive<ViewParams> = {
  name: "View",
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
  layout: ([a], [l], [out]) => {
    const v = dtypeView(l!, a!.dtype, out!.dtype, out!.shape);
    return v ? [v] : null;
  },
  paramsKey: (p) => p.dtype.name,
};

export interface ContiguousParams {
  allowColMajor: boolean;
}

/**
 * A dense layout (mx.contiguous): the input itself when it is already row-contiguous (or
 * column-contiguous, if allowed), otherwise a row-major copy. A kernel on every device (what was
 * asked for is a copy), which returns the input's layout where it is dense (`isDense`).
 */
export const Contiguous: Primitive<ContiguousParams> = {
  name: "Contiguous",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  shapeless: "infer",
  paramsKey: (p) => String(p.allowColMajor),
};
