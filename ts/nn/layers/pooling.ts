// MaxPool1d/2d/3d and AvgPool1d/2d/3d, as mlx.nn: channels-last inputs (N, ...spatial, C),
// windows as a strided view (a reshape when they tile the input exactly), reduced by max or mean.
import type { MgArray } from "../../core/array.ts";
import { asStrided, pad } from "../../core/ops/movement.ts";
import { max, mean } from "../../core/ops/reduce.ts";
import { reshape, transpose } from "../../core/ops/shape.ts";
import { sliceStatic } from "../../core/ops/slicing.ts";
import { resolveOptions, type Trailing } from "../../core/options.ts";
import { libraryForward, Module } from "../module.ts";

type IntOrTuple = number | readonly number[];

function valueOrList(x: unknown, n: number, msg: string): number[] {
  if (Array.isArray(x)) {
    if (x.length !== n || !x.every((v) => Number.isInteger(v))) throw new TypeError(msg);
    return [...x];
  }
  if (!Number.isInteger(x)) throw new TypeError(msg);
  return Array.from({ length: n }, () => x as number);
}

function nonOverlappingWindows(x: MgArray, window: readonly number[]): MgArray {
  const shape = x.shape;
  const newShape = [shape[0]!];
  window.forEach((w, i) => newShape.push(Math.floor(shape[i + 1]! / w), w));
  newShape.push(shape[shape.length - 1]!);
  const last = newShape.length - 1;
  const order = [0];
  for (let i = 1; i < last; i += 2) order.push(i);
  for (let i = 2; i < last; i += 2) order.push(i);
  order.push(last);
  return transpose(reshape(x, newShape), order);
}

/** (N, ...out, ...window, C) windows of x (N, ...spatial, C). */
export function slidingWindows(x: MgArray, window: readonly number[], strides: readonly number[]): MgArray {
  if (x.ndim < 3) {
    throw new Error(`[sliding_windows] To extract sliding windows at least 1 spatial dimension (3 total) is needed but the input only has ${x.ndim} dimensions.`);
  }
  const spatial = x.shape.slice(1, -1);
  if (spatial.length !== window.length || window.length !== strides.length) {
    throw new Error(
      `[sliding_windows] To extract sliding windows the window shapes and strides must have the same number of spatial dimensions as the signal but the signal has ${spatial.length} dims and the window shape has ${window.length} and strides have ${strides.length}.`,
    );
  }
  if (spatial.every((size, i) => window[i] === strides[i] && size % window[i]! === 0)) return nonOverlappingWindows(x, window);
  if (spatial.every((_, i) => window[i] === strides[i])) {
    // Non-overlapping windows that leave a remainder: the elements past the last whole window are
    // never read, so slicing them off gives the same windows, and a slice's gradient instead of
    // as_strided's (a scatter-add through an index array of the whole input).
    const stop = x.shape.map((size, d) => (d === 0 || d === x.ndim - 1 ? size : Math.floor(size / window[d - 1]!) * window[d - 1]!));
    return nonOverlappingWindows(sliceStatic(x, stop.map(() => 0), stop), window);
  }
  const shape = x.shape;
  const elemStrides = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    elemStrides[i] = acc;
    acc *= shape[i]!;
  }
  const finalShape = [shape[0]!, ...spatial.map((size, i) => Math.floor((size - window[i]!) / strides[i]!) + 1), ...window, shape[shape.length - 1]!];
  const inner = elemStrides.slice(1, -1);
  const finalStrides = [elemStrides[0]!, ...inner.map((s, i) => s * strides[i]!), ...inner, elemStrides[elemStrides.length - 1]!];
  return asStrided(x, finalShape, finalStrides);
}

abstract class Pool extends Module {
  protected readonly kernelSize: number[];
  protected readonly stride: number[];
  protected readonly padding: number[];
  private readonly axes: number[];
  constructor(
    private readonly pooling: (x: MgArray, axes: number[]) => MgArray,
    private readonly paddingValue: number,
    dims: number,
    kernelSize: IntOrTuple,
    rest: unknown[],
  ) {
    super();
    const name = new.target.name;
    const o = resolveOptions(name, rest, { stride: null as IntOrTuple | null, padding: 0 as IntOrTuple });
    const msg = (p: string) => `[${name}] '${p}' must be an integer or a tuple containing ${dims} integer${dims > 1 ? "s" : ""}`;
    this.kernelSize = valueOrList(kernelSize, dims, msg("kernel_size"));
    this.stride = o.stride !== null ? valueOrList(o.stride, dims, msg("stride")) : [...this.kernelSize];
    this.padding = valueOrList(o.padding, dims, msg("padding"));
    for (const [p, values] of [["kernel_size", this.kernelSize], ["stride", this.stride]] as const) {
      if (values.some((v) => v <= 0)) throw new RangeError(`[${name}] '${p}' must be positive but got (${values.join(", ")}).`);
    }
    if (this.padding.some((p) => p < 0)) throw new RangeError(`[${name}] 'padding' must be non-negative but got (${this.padding.join(", ")}).`);
    this.axes = Array.from({ length: dims }, (_, i) => -dims - 1 + i);
  }
  protected override _extraRepr(): string {
    return `kernel_size=(${this.kernelSize.join(", ")}), stride=(${this.stride.join(", ")}), padding=(${this.padding.join(", ")})`;
  }
  override forward(x: MgArray): MgArray {
    if (this.padding.some((p) => p > 0)) {
      x = pad(x, [[0, 0], ...this.padding.map((p) => [p, p]), [0, 0]], "constant", this.paddingValue);
    }
    return this.pooling(slidingWindows(x, this.kernelSize, this.stride), this.axes);
  }
}

type PoolRest<T extends readonly unknown[]> = Trailing<[stride: T[0] | null, padding: T[0]], { stride?: T[0] | null; padding?: T[0] }>;
const maxOf = (x: MgArray, axes: number[]) => max(x, axes);
const meanOf = (x: MgArray, axes: number[]) => mean(x, axes);

/**
 * Max over windows of (N, L, C); stride defaults to the kernel size.
 * @example
 * new mg.nn.MaxPool1d(2).forward(mg.arange(4, mg.float32).reshape(1, 4, 1)).shape
 */
export class MaxPool1d extends Pool {
  constructor(kernelSize: IntOrTuple, ...rest: PoolRest<[IntOrTuple]>) {
    super(maxOf, -Infinity, 1, kernelSize, rest);
  }
}
/**
 * Mean over windows of (N, L, C) (padding counts as zeros).
 * @example
 * new mg.nn.AvgPool1d(2).forward(mg.arange(4, mg.float32).reshape(1, 4, 1)).shape
 */
export class AvgPool1d extends Pool {
  constructor(kernelSize: IntOrTuple, ...rest: PoolRest<[IntOrTuple]>) {
    super(meanOf, 0, 1, kernelSize, rest);
  }
}
/**
 * 2-D max pooling over (N, H, W, C) inputs, as nn.MaxPool2d.
 * @example
 * new mg.nn.MaxPool2d(2).forward(mg.ones([1, 4, 4, 1])).shape
 */
export class MaxPool2d extends Pool {
  constructor(kernelSize: IntOrTuple, ...rest: PoolRest<[IntOrTuple]>) {
    super(maxOf, -Infinity, 2, kernelSize, rest);
  }
}
/**
 * 2-D average pooling over (N, H, W, C) inputs, as nn.AvgPool2d.
 * @example
 * new mg.nn.AvgPool2d(2).forward(mg.ones([1, 4, 4, 1])).shape
 */
export class AvgPool2d extends Pool {
  constructor(kernelSize: IntOrTuple, ...rest: PoolRest<[IntOrTuple]>) {
    super(meanOf, 0, 2, kernelSize, rest);
  }
}
/**
 * 3-D max pooling over (N, D, H, W, C) inputs, as nn.MaxPool3d.
 * @example
 * new mg.nn.MaxPool3d(2).forward(mg.ones([1, 2, 2, 2, 1])).shape
 */
export class MaxPool3d extends Pool {
  constructor(kernelSize: IntOrTuple, ...rest: PoolRest<[IntOrTuple]>) {
    super(maxOf, -Infinity, 3, kernelSize, rest);
  }
}
/**
 * 3-D average pooling over (N, D, H, W, C) inputs, as nn.AvgPool3d.
 * @example
 * new mg.nn.AvgPool3d(2).forward(mg.ones([1, 2, 2, 2, 1])).shape
 */
export class AvgPool3d extends Pool {
  constructor(kernelSize: IntOrTuple, ...rest: PoolRest<[IntOrTuple]>) {
    super(meanOf, 0, 3, kernelSize, rest);
  }
}

libraryForward(Pool);
