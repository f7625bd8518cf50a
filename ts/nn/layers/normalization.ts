// InstanceNorm, LayerNorm, RMSNorm, GroupNorm and BatchNorm, as mlx.nn. The normalisations go
// through ../fast-ops.ts (mx.fast.layer_norm / rms_norm semantics).
import type { MgArray } from "../../core/array.ts";
import { ones, zeros } from "../../core/ops/creation.ts";
import { add, multiply, rsqrt, subtract } from "../../core/ops/elementwise.ts";
import { mean, variance } from "../../core/ops/reduce.ts";
import { reshape, transpose } from "../../core/ops/shape.ts";
import { retain } from "../../core/ownership.ts";
import { keep } from "../../memory/scope.ts";
import { resolveOptions, type Trailing } from "../../core/options.ts";
import { layerNorm, rmsNorm } from "../fast-ops.ts";
import { type FreezeOptions, libraryForward, Module } from "../module.ts";

function checkEps(op: string, eps: number): void {
  if (!(eps > 0)) throw new RangeError(`[${op}] 'eps' must be positive but got ${eps}.`);
}

function range(a: number, b: number): number[] {
  return Array.from({ length: Math.max(0, b - a) }, (_, i) => a + i);
}

/**
 * Normalises each channel of each sample over the spatial axes (N, ..., C); affine optional.
 * @example
 * new mg.nn.InstanceNorm(3).forward(mg.ones([1, 4, 3])).shape
 */
export class InstanceNorm extends Module {
  declare weight?: MgArray;
  declare bias?: MgArray;
  readonly dims: number;
  readonly eps: number;
  constructor(dims: number, ...rest: Trailing<[eps: number, affine: boolean], { eps?: number; affine?: boolean }>) {
    super();
    const { eps, affine } = resolveOptions("InstanceNorm", rest, { eps: 1e-5, affine: false });
    checkEps("InstanceNorm", eps);
    if (affine) {
      this.weight = ones([dims]);
      this.bias = zeros([dims]);
    }
    this.dims = dims;
    this.eps = eps;
  }
  protected override _extraRepr(): string {
    return `${this.dims}, eps=${this.eps}, affine=${this.has("weight")}`;
  }
  override forward(x: MgArray): MgArray {
    if (x.ndim < 3) {
      throw new Error(`[InstanceNorm] expects inputs with at least 3 dimensions (N, ..., C) but the input has ${x.ndim} dimensions.`);
    }
    const n = x.shape[0]!;
    const c = x.shape[x.ndim - 1]!;
    const spatial = x.shape.slice(1, -1);
    const channelsFirst = transpose(x, [0, x.ndim - 1, ...range(1, x.ndim - 1)]);
    let y = layerNorm(reshape(channelsFirst, [n, c, -1]), null, null, this.eps);
    y = transpose(reshape(y, [n, c, ...spatial]), [0, ...range(2, spatial.length + 2), 1]);
    return this.has("weight") ? add(multiply(this.weight!, y), this.bias!) : y;
  }
}

/**
 * Normalises over the last axis with a learned scale (`weight`) and offset (`bias`).
 * @example
 * new mg.nn.LayerNorm(4).forward(mg.arange(4, mg.float32).reshape(1, 4))
 */
export class LayerNorm extends Module {
  declare weight?: MgArray;
  declare bias?: MgArray;
  readonly eps: number;
  readonly dims: number;
  constructor(dims: number, ...rest: Trailing<[eps: number, affine: boolean, bias: boolean], { eps?: number; affine?: boolean; bias?: boolean }>) {
    super();
    const { eps, affine, bias } = resolveOptions("LayerNorm", rest, { eps: 1e-5, affine: true, bias: true });
    checkEps("LayerNorm", eps);
    if (affine) {
      this.weight = ones([dims]);
      if (bias) this.bias = zeros([dims]);
    }
    this.eps = eps;
    this.dims = dims;
  }
  protected override _extraRepr(): string {
    return `${this.dims}, eps=${this.eps}, affine=${this.has("weight")}`;
  }
  override forward(x: MgArray): MgArray {
    return layerNorm(x, this.has("weight") ? this.weight! : null, this.has("bias") ? this.bias! : null, this.eps);
  }
}

/**
 * Root-mean-square normalisation over the last axis with a learned scale.
 * @example
 * new mg.nn.RMSNorm(4).forward(mg.full([1, 4], 2))
 */
export class RMSNorm extends Module {
  declare weight: MgArray;
  readonly eps: number;
  constructor(dims: number, ...rest: Trailing<[eps: number], { eps?: number }>) {
    super();
    const { eps } = resolveOptions("RMSNorm", rest, { eps: 1e-5 });
    checkEps("RMSNorm", eps);
    this.weight = ones([dims]);
    this.eps = eps;
  }
  protected override _extraRepr(): string {
    return `${this.weight.shape[0]}, eps=${this.eps}`;
  }
  override forward(x: MgArray): MgArray {
    return rmsNorm(x, this.weight, this.eps);
  }
}

/**
 * Normalises groups of channels over the spatial axes. MLX's default groups interleaved channels
 * (channel c in group c mod numGroups); `pytorchCompatible` groups consecutive channels.
 * @example
 * new mg.nn.GroupNorm(2, 4).forward(mg.ones([1, 3, 4])).shape
 */
export class GroupNorm extends Module {
  declare bias?: MgArray;
  declare weight?: MgArray;
  readonly numGroups: number;
  readonly dims: number;
  readonly eps: number;
  readonly pytorchCompatible: boolean;
  constructor(
    numGroups: number,
    dims: number,
    ...rest: Trailing<[eps: number, affine: boolean, pytorchCompatible: boolean], { eps?: number; affine?: boolean; pytorchCompatible?: boolean }>
  ) {
    super();
    const { eps, affine, pytorchCompatible } = resolveOptions("GroupNorm", rest, { eps: 1e-5, affine: true, pytorchCompatible: false });
    checkEps("GroupNorm", eps);
    if (!(numGroups > 0)) throw new RangeError(`[GroupNorm] The number of groups (${numGroups}) must be a positive integer.`);
    if (!(dims > 0)) throw new RangeError(`[GroupNorm] The number of features (${dims}) must be a positive integer.`);
    if (dims % numGroups !== 0) {
      throw new RangeError(`[GroupNorm] The number of features (${dims}) must be evenly divisible by the number of groups (${numGroups}).`);
    }
    if (affine) {
      this.bias = zeros([dims]);
      this.weight = ones([dims]);
    }
    this.numGroups = numGroups;
    this.dims = dims;
    this.eps = eps;
    this.pytorchCompatible = pytorchCompatible;
  }
  protected override _extraRepr(): string {
    return `${this.numGroups}, ${this.dims}, eps=${this.eps}, affine=${this.has("weight")}, pytorch_compatible=${this.pytorchCompatible}`;
  }
  private pytorchCompatibleGroupNorm(x: MgArray): MgArray {
    const g = this.numGroups;
    const batch = x.shape[0]!;
    const rest = x.shape.slice(1, -1);
    const dims = x.shape[x.ndim - 1]!;
    const groupSize = dims / g;
    let y = reshape(x, [batch, -1, g, groupSize]);
    y = reshape(transpose(y, [0, 2, 1, 3]), [batch, g, -1]);
    y = layerNorm(y, null, null, this.eps);
    y = reshape(y, [batch, g, -1, groupSize]);
    return reshape(transpose(y, [0, 2, 1, 3]), [batch, ...rest, dims]);
  }
  private groupNorm(x: MgArray): MgArray {
    const g = this.numGroups;
    const batch = x.shape[0]!;
    const rest = x.shape.slice(1, -1);
    const dims = x.shape[x.ndim - 1]!;
    const y = reshape(x, [batch, -1, g]);
    const means = mean(y, 1, true);
    const v = variance(y, 1, true);
    return reshape(multiply(subtract(y, means), rsqrt(add(v, this.eps))), [batch, ...rest, dims]);
  }
  override forward(x: MgArray): MgArray {
    const y = this.pytorchCompatible ? this.pytorchCompatibleGroupNorm(x) : this.groupNorm(x);
    return this.has("weight") ? add(multiply(this.weight!, y), this.bias!) : y;
  }
}

/**
 * Batch normalisation over all axes but the last (inputs of 2–4 dims). In training mode it uses
 * the batch statistics and updates running_mean/running_var (frozen entries, never trained); in
 * eval mode it uses the running statistics.
 * @example
 * new mg.nn.BatchNorm(3).forward(mg.ones([2, 3])).shape
 */
export class BatchNorm extends Module {
  declare weight?: MgArray;
  declare bias?: MgArray;
  declare running_mean?: MgArray;
  declare running_var?: MgArray;
  readonly numFeatures: number;
  readonly eps: number;
  readonly momentum: number;
  readonly trackRunningStats: boolean;
  constructor(
    numFeatures: number,
    ...rest: Trailing<
      [eps: number, momentum: number, affine: boolean, trackRunningStats: boolean],
      { eps?: number; momentum?: number; affine?: boolean; trackRunningStats?: boolean }
    >
  ) {
    super();
    const o = resolveOptions("BatchNorm", rest, { eps: 1e-5, momentum: 0.1, affine: true, trackRunningStats: true });
    checkEps("BatchNorm", o.eps);
    this.numFeatures = numFeatures;
    this.eps = o.eps;
    this.momentum = o.momentum;
    this.trackRunningStats = o.trackRunningStats;
    if (o.affine) {
      this.weight = ones([numFeatures]);
      this.bias = zeros([numFeatures]);
    }
    if (this.trackRunningStats) {
      this.running_mean = zeros([numFeatures]);
      this.running_var = ones([numFeatures]);
      this.freeze({ keys: ["running_mean", "running_var"], recurse: false });
    }
  }
  override unfreeze(options: FreezeOptions = {}): this {
    super.unfreeze(options);
    if (this.trackRunningStats) this.freeze({ keys: ["running_mean", "running_var"], recurse: false });
    return this;
  }
  protected override _extraRepr(): string {
    return `${this.numFeatures}, eps=${this.eps}, momentum=${this.momentum}, affine=${this.has("weight")}, track_running_stats=${this.trackRunningStats}`;
  }
  private stats(x: MgArray, ddof = 0): [MgArray, MgArray] {
    const axes = range(0, x.ndim - 1);
    return [mean(x, axes), variance(x, axes, false, ddof)];
  }
  override forward(x: MgArray): MgArray {
    if (x.ndim < 2 || x.ndim > 4) throw new Error(`[BatchNorm] Expected input tensor to have 2, 3 or 4 dimensions, but got ${x.ndim}`);
    if (this.training) {
      const statsSize = x.shape.slice(0, -1).reduce((a, b) => a * b, 1);
      if (statsSize === 1) throw new Error("[BatchNorm] training requires more than one value per channel.");
    }
    let [mu, v] = this.stats(x);
    if (this.training && this.trackRunningStats) {
      const m = this.momentum;
      const [, runningVar] = this.stats(x, 1);
      // Module state: it outlives this call (ownership) and a tidy scope around the training step.
      this.running_mean = keep(retain(add(multiply(1 - m, this.running_mean!), multiply(m, mu))));
      this.running_var = keep(retain(add(multiply(1 - m, this.running_var!), multiply(m, runningVar))));
    } else if (this.trackRunningStats) {
      mu = this.running_mean!;
      v = this.running_var!;
    }
    const y = multiply(subtract(x, mu), rsqrt(add(v, this.eps)));
    return this.has("weight") ? add(multiply(this.weight!, y), this.bias!) : y;
  }
}

libraryForward(InstanceNorm, LayerNorm, RMSNorm, GroupNorm, BatchNorm);
