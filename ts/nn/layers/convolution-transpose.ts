// ConvTranspose1d, ConvTranspose2d and ConvTranspose3d, as mlx.nn: weight (out, ...kernel, in)
// from U(−k, k) with k = 1/√(in · kernel size), bias zeros.
import type { MgArray } from "../../core/array.ts";
import { zeros } from "../../core/ops/creation.ts";
import { add } from "../../core/ops/elementwise.ts";
import { convTranspose1d, convTranspose2d, convTranspose3d, type PerAxis } from "../../core/ops/convolution.ts";
import { uniform } from "../../random/distributions.ts";
import { resolveOptions, type Trailing } from "../../core/options.ts";
import { libraryForward, Module } from "../module.ts";

const tuple = (v: PerAxis, n: number): number[] => (typeof v === "number" ? Array.from({ length: n }, () => v) : [...v]);
const show = (v: PerAxis) => (typeof v === "number" ? String(v) : `(${v.join(", ")})`);

type Rest = Trailing<
  [stride: PerAxis, padding: PerAxis, dilation: PerAxis, outputPadding: PerAxis, bias: boolean],
  { stride?: PerAxis; padding?: PerAxis; dilation?: PerAxis; outputPadding?: PerAxis; bias?: boolean }
>;

abstract class ConvTransposeNd extends Module {
  declare weight: MgArray;
  declare bias?: MgArray;
  readonly stride: PerAxis;
  readonly padding: PerAxis;
  readonly dilation: PerAxis;
  readonly outputPadding: PerAxis;

  constructor(nd: number, inChannels: number, outChannels: number, kernelSize: PerAxis, rest: unknown[]) {
    super();
    const o = resolveOptions(new.target.name, rest, { stride: 1 as PerAxis, padding: 0 as PerAxis, dilation: 1 as PerAxis, outputPadding: 0 as PerAxis, bias: true });
    const k = tuple(kernelSize, nd);
    const scale = Math.sqrt(1 / (inChannels * k.reduce((a, b) => a * b, 1)));
    this.weight = uniform(-scale, scale, [outChannels, ...k, inChannels]);
    if (o.bias) this.bias = zeros([outChannels]);
    this.padding = nd > 1 ? tuple(o.padding, nd) : o.padding;
    this.stride = nd > 1 ? tuple(o.stride, nd) : o.stride;
    this.dilation = o.dilation;
    this.outputPadding = nd > 1 ? tuple(o.outputPadding, nd) : o.outputPadding;
  }
  protected override _extraRepr(): string {
    const w = this.weight.shape;
    const k = w.length === 3 ? String(w[1]) : `(${w.slice(1, -1).join(", ")})`;
    return `${w[w.length - 1]}, ${w[0]}, kernel_size=${k}, stride=${show(this.stride)}, padding=${show(this.padding)}, dilation=${show(this.dilation)}, output_padding=${show(this.outputPadding)}, bias=${this.has("bias")}`;
  }
  protected addBias(y: MgArray): MgArray {
    return this.has("bias") ? add(y, this.bias!) : y;
  }
}

/**
 * Transposed 1-D convolution over (N, L, C_in) inputs.
 * @example
 * new mg.nn.ConvTranspose1d(1, 2, 3, { stride: 2 }).forward(mg.ones([1, 4, 1])).shape
 */
export class ConvTranspose1d extends ConvTransposeNd {
  constructor(inChannels: number, outChannels: number, kernelSize: number, ...rest: Rest) {
    super(1, inChannels, outChannels, kernelSize, rest);
  }
  override forward(x: MgArray): MgArray {
    return this.addBias(convTranspose1d(x, this.weight, this.stride, this.padding, this.dilation, this.outputPadding));
  }
}

/**
 * Transposed 2-D convolution over (N, H, W, C_in) inputs.
 * @example
 * new mg.nn.ConvTranspose2d(1, 2, 2, { stride: 2 }).forward(mg.ones([1, 3, 3, 1])).shape
 */
export class ConvTranspose2d extends ConvTransposeNd {
  constructor(inChannels: number, outChannels: number, kernelSize: PerAxis, ...rest: Rest) {
    super(2, inChannels, outChannels, kernelSize, rest);
  }
  override forward(x: MgArray): MgArray {
    return this.addBias(convTranspose2d(x, this.weight, this.stride, this.padding, this.dilation, this.outputPadding));
  }
}

/**
 * Transposed 3-D convolution over (N, D, H, W, C_in) inputs.
 * @example
 * new mg.nn.ConvTranspose3d(1, 1, 2).forward(mg.ones([1, 2, 2, 2, 1])).shape
 */
export class ConvTranspose3d extends ConvTransposeNd {
  constructor(inChannels: number, outChannels: number, kernelSize: PerAxis, ...rest: Rest) {
    super(3, inChannels, outChannels, kernelSize, rest);
  }
  override forward(x: MgArray): MgArray {
    return this.addBias(convTranspose3d(x, this.weight, this.stride, this.padding, this.dilation, this.outputPadding));
  }
}

libraryForward(ConvTranspose1d, ConvTranspose2d, ConvTranspose3d);
