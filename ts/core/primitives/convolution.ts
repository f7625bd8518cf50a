// Convolution (MLX's Convolution primitive): channels-last input (N, ...spatial, C_in) and weight
// (C_out, ...kernel, C_in / groups) of one floating dtype, 1 to 3 spatial axes. Per spatial axis:
// the input is dilated by inputDilation (zeros between elements), padded by paddingLo/paddingHi
// (negative padding crops), and correlated with the kernel dilated by kernelDilation at `stride`;
// `flip` reverses the kernel (a true convolution). Output channel c reads input channel group
// ⌊c / (C_out / groups)⌋. Transposed convolutions are this primitive with inputDilation = stride.
// Rules: ts/core/rules/convolution.ts; each backend registers its kernels for it.
import type { MgArray } from "../array.ts";
import type { Primitive } from "../primitive.ts";

export interface ConvolutionParams {
  stride: number[];
  paddingLo: number[];
  paddingHi: number[];
  kernelDilation: number[];
  inputDilation: number[];
  groups: number;
  flip: boolean;
}

/** The output length of one spatial axis (may be ≤ 0 when the kernel does not fit). */
export function convOutputLength(inLen: number, kLen: number, p: ConvolutionParams, axis: number): number {
  const dilatedIn = inLen === 0 ? 0 : (inLen - 1) * p.inputDilation[axis]! + 1;
  const dilatedK = (kLen - 1) * p.kernelDilation[axis]! + 1;
  const span = dilatedIn + p.paddingLo[axis]! + p.paddingHi[axis]! - dilatedK;
  return span < 0 ? 0 : Math.floor(span / p.stride[axis]!) + 1;
}

export function convOutputShape(input: readonly number[], weight: readonly number[], p: ConvolutionParams): number[] {
  const nd = input.length - 2;
  const spatial = Array.from({ length: nd }, (_, i) => convOutputLength(input[i + 1]!, weight[i + 1]!, p, i));
  return [input[0]!, ...spatial, weight[0]!];
}

export const Convolution: Primitive<ConvolutionParams> = {
  name: "Convolution",
  opName: () => "conv",
  outputSpecs: ([x, w], p) => [{ shape: convOutputShape(x!.shape, w!.shape, p), dtype: x!.dtype }],
  paramsKey: (p) => `${p.stride}|${p.paddingLo}|${p.paddingHi}|${p.kernelDilation}|${p.inputDilation}|${p.groups}|${p.flip}`,
};

/** The params as MgArray-free data for the kernels (spatial rank and sizes). */
export interface ConvGeometry {
  nd: number;
  batch: number;
  inShape: number[];
  outShape: number[];
  kShape: number[];
  cin: number;
  cout: number;
  cinGroup: number;
  coutGroup: number;
}

export function convGeometry(x: MgArray, w: MgArray, out: MgArray, p: ConvolutionParams): ConvGeometry {
  const nd = x.ndim - 2;
  const cin = x.shape[x.ndim - 1]!;
  const cout = w.shape[0]!;
  return {
    nd,
    batch: x.shape[0]!,
    inShape: x.shape.slice(1, -1),
    outShape: out.shape.slice(1, -1),
    kShape: w.shape.slice(1, -1),
    cin,
    cout,
    cinGroup: cin / p.groups,
    coutGroup: cout / p.groups,
  };
}
