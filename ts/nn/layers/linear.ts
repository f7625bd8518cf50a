// Identity, Linear and Bilinear, as mlx.nn.
import type { MgArray } from "../../core/array.ts";
import { add } from "../../core/ops/elementwise.ts";
import { addmm, matmul } from "../../core/ops/linalg-core.ts";
import { reshape, squeeze, swapaxes } from "../../core/ops/shape.ts";
import { uniform } from "../../random/distributions.ts";
import { resolveOptions, type Trailing } from "../../core/options.ts";
import { libraryForward, Module } from "../module.ts";

/**
 * Returns its input; takes (and ignores) any arguments, as MLX's.
 * @example
 * new mg.nn.Identity().forward(mg.array([1, 2]))
 */
export class Identity extends Module {
  constructor(..._args: unknown[]) {
    super();
  }
  override forward(x: MgArray): MgArray {
    return x;
  }
}

/**
 * y = x·Wᵀ + b with weight (outputDims, inputDims) and bias (outputDims,), both initialised from
 * U(−k, k), k = 1/√inputDims.
 * @example
 * new mg.nn.Linear(4, 2).forward(mg.ones([3, 4])).shape
 */
export class Linear extends Module {
  declare weight: MgArray;
  declare bias?: MgArray;
  constructor(inputDims: number, outputDims: number, ...rest: Trailing<[bias: boolean], { bias?: boolean }>) {
    super();
    const { bias } = resolveOptions("Linear", rest, { bias: true });
    const scale = Math.sqrt(1.0 / inputDims);
    this.weight = uniform(-scale, scale, [outputDims, inputDims]);
    if (bias) this.bias = uniform(-scale, scale, [outputDims]);
  }
  protected override _extraRepr(): string {
    return `input_dims=${this.weight.shape[1]}, output_dims=${this.weight.shape[0]}, bias=${this.has("bias")}`;
  }
  override forward(x: MgArray): MgArray {
    if (this.has("bias")) return addmm(this.bias!, x, this.weight.T);
    return matmul(x, this.weight.T);
  }
}

/**
 * yᵢ = x₂ᵀ·Wᵢ·x₁ + bᵢ with weight (outputDims, input2Dims, input1Dims) and bias (outputDims,), both
 * from U(−k, k), k = 1/√input1Dims.
 * @example
 * new mg.nn.Bilinear(2, 3, 4).forward(mg.ones([1, 2]), mg.ones([1, 3])).shape
 */
export class Bilinear extends Module {
  declare weight: MgArray;
  declare bias?: MgArray;
  constructor(input1Dims: number, input2Dims: number, outputDims: number, ...rest: Trailing<[bias: boolean], { bias?: boolean }>) {
    super();
    const { bias } = resolveOptions("Bilinear", rest, { bias: true });
    const scale = Math.sqrt(1.0 / input1Dims);
    this.weight = uniform(-scale, scale, [outputDims, input2Dims, input1Dims]);
    if (bias) this.bias = uniform(-scale, scale, [outputDims]);
  }
  protected override _extraRepr(): string {
    const [out, in2, in1] = this.weight.shape;
    return `input1_dims=${in1}, input2_dims=${in2}, output_dims=${out}, bias=${this.has("bias")}`;
  }
  override forward(x1: MgArray, x2: MgArray): MgArray {
    const [out, in2, in1] = this.weight.shape as [number, number, number];
    const lead = x1.shape.slice(0, -1);
    const a = reshape(x1, [-1, in1]);
    const b = reshape(x2, [-1, 1, in2]);
    const w = reshape(this.weight, [out * in2, in1]);
    let y = matmul(a, w.T);
    y = swapaxes(reshape(y, [-1, out, in2]), -2, -1);
    y = squeeze(matmul(b, y), 1);
    y = reshape(y, [...lead, out]);
    if (this.has("bias")) y = add(y, this.bias!);
    return y;
  }
}

libraryForward(Linear, Bilinear);
