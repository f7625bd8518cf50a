// Conv1d, Conv2d and Conv3d, as mlx.nn: weight (out, ...kernel, in / groups) from U(−k, k) with
// k = 1/√(in/groups · kernel size), bias zeros.
import type { MgArray } from "../../core/array.ts";
import { zeros } from "../../core/ops/creation.ts";
import { add } from "../../core/ops/elementwise.ts";
import { conv1d, conv2d, conv3d, type PerAxis } from "../../core/ops/convolution.ts";
import { uniform } from "../../random/distributions.ts";
import { resolveOptions, type Trailing } from "../../core/options.ts";
import { libraryForward, Module } from "../module.ts";

const tuple = (v: PerAxis, n: number): number[] => (typeof v === "number" ? Array.from({ length: n }, () => v) : [...v]);
const show = (v: PerAxis) => (typeof v === "number" ? String(v) : `(${v.join(", ")})`);

abstract class ConvNd extends Module {
  declare weight: MgArray;
  declare bias?: MgArray;
  readonly stride: PerAxis;
  readonly padding: PerAxis;
  readonly dilation: PerAxis;
  readonly groups: number;

  constructor(nd: number, inChannels: number, outChannels: number, kernelSize: PerAxis, o: { stride: PerAxis; padding: PerAxis; dilation: PerAxis; groups: number; bias: boolean }) {
    super();
    const name = new.target.name;
    if (inChannels % o.groups !== 0) {
      throw new Error(`[${name}] The number of input channels (${inChannels}) must be divisible by the number of groups (${o.groups})`);
    }
    const k = tuple(kernelSize, nd);
    const scale = Math.sqrt(1 / ((inChannels / o.groups) * k.reduce((a, b) => a * b, 1)));
    this.weight = uniform(-scale, scale, [outChannels, ...k, inChannels / o.groups]);
    if (o.bias) this.bias = zeros([outChannels]);
    // MLX keeps 2-D/3-D stride and padding as tuples and dilation as given.
    this.padding = nd > 1 ? tuple(o.padding, nd) : o.padding;
    this.stride = nd > 1 ? tuple(o.stride, nd) : o.stride;
    this.dilation = o.dilation;
    this.groups = o.groups;
  }
  protected override _extraRepr(): string {
    const w = this.weight.shape;
    const k = w.length === 3 ? String(w[1]) : `(${w.slice(1, -1).join(", ")})`;
    return `${w[w.length - 1]! * this.groups}, ${w[0]}, kernel_size=${k}, stride=${show(this.stride)}, padding=${show(this.padding)}, dilation=${show(this.dilation)}, groups=${this.groups}, bias=${this.has("bias")}`;
  }
  protected addBias(y: MgArray): MgArray {
    return this.has("bias") ? add(y, this.bias!) : y;
  }
}

type ConvRest = Trailing<
  [stride: PerAxis, padding: PerAxis, dilation: PerAxis, groups: number, bias: boolean],
  { stride?: PerAxis; padding?: PerAxis; dilation?: PerAxis; groups?: number; bias?: boolean }
>;
const convDefaults = () => ({ stride: 1 as PerAxis, padding: 0 as PerAxis, dilation: 1 as PerAxis, groups: 1, bias: true });

/**
 * 1-D convolution over (N, L, C_in) inputs.
 * @example
 * new mg.nn.Conv1d(1, 4, 3).forward(mg.ones([1, 8, 1])).shape
 */
export class Conv1d extends ConvNd {
  constructor(inChannels: number, outChannels: number, kernelSize: number, ...rest: ConvRest) {
    super(1, inChannels, outChannels, kernelSize, resolveOptions("Conv1d", rest, convDefaults()));
  }
  override forward(x: MgArray): MgArray {
    return this.addBias(conv1d(x, this.weight, this.stride, this.padding, this.dilation, this.groups));
  }
}

/**
 * 2-D convolution over (N, H, W, C_in) inputs.
 * @example
 * new mg.nn.Conv2d(1, 4, 3, { padding: 1 }).forward(mg.ones([1, 8, 8, 1])).shape
 */
export class Conv2d extends ConvNd {
  constructor(inChannels: number, outChannels: number, kernelSize: PerAxis, ...rest: ConvRest) {
    super(2, inChannels, outChannels, kernelSize, resolveOptions("Conv2d", rest, convDefaults()));
  }
  override forward(x: MgArray): MgArray {
    return this.addBias(conv2d(x, this.weight, this.stride, this.padding, this.dilation, this.groups));
  }
}

/**
 * 3-D convolution over (N, D, H, W, C_in) inputs (no groups, as MLX's).
 * @example
 * new mg.nn.Conv3d(1, 2, 2).forward(mg.ones([1, 3, 3, 3, 1])).shape
 */
export class Conv3d extends ConvNd {
  constructor(
    inChannels: number,
    outChannels: number,
    kernelSize: PerAxis,
    ...rest: Trailing<[stride: PerAxis, padding: PerAxis, dilation: PerAxis, bias: boolean], { stride?: PerAxis; padding?: PerAxis; dilation?: PerAxis; bias?: boolean }>
  ) {
    const o = resolveOptions("Conv3d", rest, { stride: 1 as PerAxis, padding: 0 as PerAxis, dilation: 1 as PerAxis, bias: true });
    super(3, inChannels, outChannels, kernelSize, { ...o, groups: 1 });
  }
  protected override _extraRepr(): string {
    const w = this.weight.shape;
    return `${w[w.length - 1]}, ${w[0]}, kernel_size=(${w.slice(1, -1).join(", ")}), stride=${show(this.stride)}, padding=${show(this.padding)}, dilation=${show(this.dilation)}, bias=${this.has("bias")}`;
  }
  override forward(x: MgArray): MgArray {
    return this.addBias(conv3d(x, this.weight, this.stride, this.padding, this.dilation));
  }
}

libraryForward(Conv1d, Conv2d, Conv3d);
