// Dropout, Dropout2d and Dropout3d, as mlx.nn: identity in eval mode; in training, a Bernoulli
// keep-mask (per element, or per channel for 2d/3d) and scaling by 1/(1 − p).
import type { MgArray } from "../../core/array.ts";
import { multiply } from "../../core/ops/elementwise.ts";
import { bernoulli } from "../../random/distributions.ts";
import { resolveOptions, type Trailing } from "../../core/options.ts";
import { libraryForward, Module } from "../module.ts";

function keepProbability(op: string, rest: unknown[]): number {
  const { p } = resolveOptions(op, rest, { p: 0.5 });
  if (!(p >= 0 && p < 1)) throw new RangeError(`[${op}] The dropout probability ${p} is not in [0, 1)`);
  return 1 - p;
}

function drop(x: MgArray, keep: number, maskShape: readonly number[]): MgArray {
  const mask = bernoulli(keep, maskShape);
  return multiply(multiply(mask, x), 1 / keep);
}

/**
 * Zeroes each element with probability `p` in training (scaling the rest by 1/(1 − p)); the identity in eval mode, as nn.Dropout.
 * @example
 * new mg.nn.Dropout(0.5).eval().forward(mg.ones([3]))
 */
export class Dropout extends Module {
  private readonly p1: number;
  constructor(...rest: Trailing<[p: number], { p?: number }>) {
    super();
    this.p1 = keepProbability("Dropout", rest);
  }
  protected override _extraRepr(): string {
    return `p=${1 - this.p1}`;
  }
  override forward(x: MgArray): MgArray {
    if (this.p1 === 1 || !this.training) return x;
    return drop(x, this.p1, x.shape);
  }
}

/**
 * Zeroes whole channels of NHWC / HWC inputs.
 * @example
 * new mg.nn.Dropout2d().eval().forward(mg.ones([1, 2, 2, 3])).shape
 */
export class Dropout2d extends Module {
  private readonly p1: number;
  constructor(...rest: Trailing<[p: number], { p?: number }>) {
    super();
    this.p1 = keepProbability("Dropout2d", rest);
  }
  protected override _extraRepr(): string {
    return `p=${1 - this.p1}`;
  }
  override forward(x: MgArray): MgArray {
    if (x.ndim !== 3 && x.ndim !== 4) throw new Error(`[Dropout2d] Received input with ${x.ndim} dimensions. Expected 3 or 4 dimensions.`);
    if (this.p1 === 1 || !this.training) return x;
    const shape = [...x.shape];
    shape[shape.length - 2] = shape[shape.length - 3] = 1;
    return drop(x, this.p1, shape);
  }
}

/**
 * Zeroes whole channels of NDHWC / DHWC inputs.
 * @example
 * new mg.nn.Dropout3d().eval().forward(mg.ones([1, 2, 2, 2, 3])).shape
 */
export class Dropout3d extends Module {
  private readonly p1: number;
  constructor(...rest: Trailing<[p: number], { p?: number }>) {
    super();
    this.p1 = keepProbability("Dropout3d", rest);
  }
  protected override _extraRepr(): string {
    return `p=${1 - this.p1}`;
  }
  override forward(x: MgArray): MgArray {
    if (x.ndim !== 4 && x.ndim !== 5) throw new Error(`[Dropout3d] Received input with ${x.ndim} dimensions. Expected 4 or 5 dimensions.`);
    if (this.p1 === 1 || !this.training) return x;
    const shape = [...x.shape];
    shape[shape.length - 2] = shape[shape.length - 3] = shape[shape.length - 4] = 1;
    return drop(x, this.p1, shape);
  }
}

libraryForward(Dropout, Dropout2d, Dropout3d);
