// Convolutions, as mx.conv1d/conv2d/conv3d, mx.conv_transpose1d/2d/3d, mx.conv_general and
// mx.convolve: channels-last (input (N, ...spatial, C_in), weight (C_out, ...kernel, C_in/groups)),
// MLX's argument forms (a number or one per spatial axis; conv_general's padding also as
// [low, high] lists) and MLX's checks, each error tagged with the op called.
import type { MgArray } from "../array.ts";
import { type Dtype, isFloating, promoteTypes } from "../dtype.ts";
import { resolveStream, type Stream } from "../device.ts";
import { makeArray, rejectFloat64OnGpu } from "../graph.ts";
import { Convolution, type ConvolutionParams, convOutputShape } from "../primitives/convolution.ts";
import { formatShape } from "../shape.ts";
import { type ArrayInput, type StreamOptions, toArray } from "./convert.ts";
import { astype } from "./elementwise.ts";
import { matmul } from "./linalg-core.ts";
import { flip as flipAxes, reshape } from "./shape.ts";
import { resolveOptions, type Trailing } from "../options.ts";

/** A per-spatial-axis argument: one number for every axis, or one per axis. */
export type PerAxis = number | readonly number[];
/** conv_general's padding: a number, one per axis, or [low per axis, high per axis]. */
export type GeneralPadding = PerAxis | readonly [readonly number[], readonly number[]];

function fmt(values: readonly number[]): string {
  return `(${values.join(",")})`;
}

function perAxis(op: string, value: unknown, nd: number, what: string, label: string): number[] {
  const list = typeof value === "number" ? Array.from({ length: nd }, () => value) : value;
  if (!Array.isArray(list) || !list.every((v) => Number.isInteger(v))) {
    throw new TypeError(`[${op}] ${what} must be an integer or a list of ${nd} integers, got ${JSON.stringify(value)}.`);
  }
  if (list.length !== nd) throw new Error(`[${op}] Invalid ${label} ${fmt(list)} for ${nd}D convolution.`);
  return [...list];
}

interface GeneralArgs {
  stride: PerAxis;
  padding: GeneralPadding;
  kernelDilation: PerAxis;
  inputDilation: PerAxis;
  groups: number;
  flip: boolean;
}

/** Validates a convolution the way MLX's conv_general does and builds its node. */
function convolution(op: string, input: ArrayInput, weight: ArrayInput, a: GeneralArgs, stream: Stream): MgArray {
  let x = toArray(input, op);
  let w = toArray(weight, op);
  for (const arr of [x, w]) {
    if (!isFloating(arr.dtype)) {
      throw new TypeError(`[${op}] Invalid ${arr === x ? "input" : "weight"} array with type ${arr.dtype.name}. Convolution currently only supports floating point types`);
    }
  }
  const nd = x.ndim - 2;
  if (nd < 1 || nd > 3) {
    throw new Error(`[${op}] Only works for inputs with 1-3 spatial dimensions. The inputs must be in the format [N, ..., C_in]`);
  }
  if (w.ndim !== x.ndim) {
    throw new Error(
      `[${op}] Invalid weight array with ${w.ndim} dimensions for ${nd}D convolution. Expected an array with ${nd + 2} dimensions following the format [C_out, ..., C_in].`,
    );
  }
  const groups = a.groups;
  if (!Number.isInteger(groups) || groups < 1) throw new RangeError(`[${op}] groups must be a positive integer, got ${groups}.`);
  const cin = x.shape[x.ndim - 1]!;
  const cout = w.shape[0]!;
  if (cin % groups !== 0) {
    throw new Error(`[${op}] The input channels must be divisible by the number of groups. Got input with shape ${formatShape(x.shape)} and ${groups} groups.`);
  }
  if (groups > 1 && cout % groups !== 0) {
    throw new Error(`[${op}] If groups > 1, the output channels must be divisible by the number of groups. Got ${cout} output channels and ${groups} groups.`);
  }
  if (w.shape[w.ndim - 1]! * groups !== cin) {
    throw new Error(
      `[${op}] Expect the input channels in the input and weight array to match but got shapes - input: ${formatShape(x.shape)} and weight: ${formatShape(w.shape)}`,
    );
  }
  const stride = perAxis(op, a.stride, nd, "stride", "strides");
  const kernelDilation = perAxis(op, a.kernelDilation, nd, "kernel dilation", "kernel dilation");
  const inputDilation = perAxis(op, a.inputDilation, nd, "input dilation", "input dilation");
  let paddingLo: number[];
  let paddingHi: number[];
  const pad = a.padding;
  if (Array.isArray(pad) && pad.length === 2 && Array.isArray(pad[0]) && Array.isArray(pad[1])) {
    paddingLo = perAxis(op, pad[0], nd, "padding", "padding");
    paddingHi = perAxis(op, pad[1], nd, "padding", "padding");
  } else {
    paddingLo = perAxis(op, pad, nd, "padding", "padding");
    paddingHi = [...paddingLo];
  }
  if (stride.some((s) => s <= 0)) throw new RangeError(`[${op}] Stride sizes must be positive. Got strides ${fmt(stride)}.`);
  if (kernelDilation.some((s) => s <= 0)) throw new RangeError(`[${op}] Kernel dilation sizes must be positive. Got kernel dilation ${fmt(kernelDilation)}.`);
  if (inputDilation.some((s) => s <= 0)) throw new RangeError(`[${op}] Input dilation sizes must be positive. Got input dilation ${fmt(inputDilation)}.`);
  for (let i = 0; i < nd; i++) {
    const L = x.shape[i + 1]!;
    const dilatedIn = L === 0 ? 0 : (L - 1) * inputDilation[i]! + 1;
    const dilatedK = (w.shape[i + 1]! - 1) * kernelDilation[i]! + 1;
    if (dilatedIn + paddingLo[i]! + paddingHi[i]! < dilatedK) {
      throw new Error(
        `[${op}] Spatial dimensions of input after padding cannot be smaller than weight spatial dimensions. Got error at axis ${i + 1} for input with shape ${formatShape(x.shape)}, padding low ${fmt(paddingLo)}, padding high ${fmt(paddingHi)}, and weight of shape ${formatShape(w.shape)}.`,
      );
    }
  }
  const dtype: Dtype = promoteTypes(x.dtype, w.dtype);
  rejectFloat64OnGpu(op, [dtype], stream);
  x = astype(x, dtype, { stream });
  w = astype(w, dtype, { stream });
  const params: ConvolutionParams = { stride, paddingLo, paddingHi, kernelDilation, inputDilation, groups, flip: a.flip };
  return convolutionNode(x, w, params, stream);
}

/**
 * The node for validated operands of one dtype (also what the derivative rules build). A 1×1
 * kernel at stride 1 without padding or dilation is a matrix product: it runs as one.
 */
export function convolutionNode(x: MgArray, w: MgArray, p: ConvolutionParams, stream: Stream = resolveStream()): MgArray {
  const nd = x.ndim - 2;
  const unit = (v: number[]) => v.every((s) => s === 1);
  const pointwise = w.shape.slice(1, -1).every((k) => k === 1) && p.groups === 1 && unit(p.stride) && unit(p.inputDilation) &&
    p.paddingLo.every((v) => v === 0) && p.paddingHi.every((v) => v === 0);
  if (pointwise && x.size > 0 && w.size > 0) {
    const cin = x.shape[nd + 1]!;
    const cout = w.shape[0]!;
    const y = matmul(reshape(x, [-1, cin], { stream }), reshape(w, [cout, cin], { stream }).T, { stream });
    return reshape(y, convOutputShape(x.shape, w.shape, p), { stream });
  }
  return makeArray(Convolution, [x, w], p, stream);
}

/** The kernel of `w` reversed along its spatial axes (flip) — used by the derivative rules. */
export function flipKernel(w: MgArray): MgArray {
  return flipAxes(w, Array.from({ length: w.ndim - 2 }, (_, i) => i + 1));
}

type ConvRest = Trailing<
  [stride: PerAxis, padding: PerAxis, dilation: PerAxis, groups: number],
  { stride?: PerAxis; padding?: PerAxis; dilation?: PerAxis; groups?: number } & StreamOptions
>;

function convN(op: string, nd: number, input: ArrayInput, weight: ArrayInput, rest: unknown[]): MgArray {
  const o = resolveOptions(op, rest, { stride: 1 as PerAxis, padding: 0 as PerAxis, dilation: 1 as PerAxis, groups: 1 }, ["stream"]);
  const x = toArray(input, op);
  if (x.ndim !== nd + 2) {
    throw new Error(`[${op}] Invalid input array with ${x.ndim} dimensions for ${nd}D convolution. Expected an array with ${nd + 2} dimensions following the format [N, ..., C_in].`);
  }
  return convolution(op, x, weight, {
    stride: o.stride, padding: o.padding, kernelDilation: o.dilation, inputDilation: 1, groups: o.groups, flip: false,
  }, resolveStream(o.stream as StreamOptions["stream"]));
}

/**
 * 1-D convolution (correlation) of (N, L, C_in) by (C_out, K, C_in/groups), as mx.conv1d.
 * @example
 * mg.conv1d(mg.ones([1, 5, 1]), mg.ones([1, 3, 1]), { padding: 1 })
 */
export function conv1d(input: ArrayInput, weight: ArrayInput, ...rest: ConvRest): MgArray {
  return convN("conv1d", 1, input, weight, rest);
}
/**
 * 2-D convolution of (N, H, W, C_in) by (C_out, KH, KW, C_in/groups), as mx.conv2d.
 * @example
 * mg.conv2d(mg.ones([1, 4, 4, 1]), mg.ones([2, 3, 3, 1]), { stride: 2 }).shape
 */
export function conv2d(input: ArrayInput, weight: ArrayInput, ...rest: ConvRest): MgArray {
  return convN("conv2d", 2, input, weight, rest);
}
/**
 * 3-D convolution of (N, D, H, W, C_in) by (C_out, KD, KH, KW, C_in/groups), as mx.conv3d.
 * @example
 * mg.conv3d(mg.ones([1, 3, 3, 3, 1]), mg.ones([1, 2, 2, 2, 1])).shape
 */
export function conv3d(input: ArrayInput, weight: ArrayInput, ...rest: ConvRest): MgArray {
  return convN("conv3d", 3, input, weight, rest);
}

/**
 * The general convolution, as mx.conv_general(input, weight, stride=1, padding=0,
 * kernel_dilation=1, input_dilation=1, groups=1, flip=False): any of 1–3 spatial axes; padding
 * per axis or as [low, high] lists (negative values crop).
 * @example
 * mg.convGeneral(mg.ones([1, 4, 1]), mg.ones([1, 2, 1]), { inputDilation: 2 }).shape
 */
export function convGeneral(
  input: ArrayInput,
  weight: ArrayInput,
  ...rest: Trailing<
    [stride: PerAxis, padding: GeneralPadding, kernelDilation: PerAxis, inputDilation: PerAxis, groups: number, flip: boolean],
    { stride?: PerAxis; padding?: GeneralPadding; kernelDilation?: PerAxis; inputDilation?: PerAxis; groups?: number; flip?: boolean } & StreamOptions
  >
): MgArray {
  const op = "conv_general";
  const o = resolveOptions(
    op,
    rest,
    { stride: 1 as PerAxis, padding: 0 as GeneralPadding, kernelDilation: 1 as PerAxis, inputDilation: 1 as PerAxis, groups: 1, flip: false },
    ["stream"],
  );
  return convolution(op, input, weight, o, resolveStream(o.stream as StreamOptions["stream"]));
}

type ConvTransposeRest = Trailing<
  [stride: PerAxis, padding: PerAxis, dilation: PerAxis, outputPadding: PerAxis, groups: number],
  { stride?: PerAxis; padding?: PerAxis; dilation?: PerAxis; outputPadding?: PerAxis; groups?: number } & StreamOptions
>;

/**
 * A transposed convolution (the gradient of a convolution with respect to its input), as MLX
 * computes it: conv_general with input dilation = stride, the flipped kernel, and padding
 * (K − 1)·dilation − padding low and that + output_padding high.
 */
function convTransposeN(op: string, nd: number, input: ArrayInput, weight: ArrayInput, rest: unknown[]): MgArray {
  const o = resolveOptions(
    op,
    rest,
    { stride: 1 as PerAxis, padding: 0 as PerAxis, dilation: 1 as PerAxis, outputPadding: 0 as PerAxis, groups: 1 },
    ["stream"],
  );
  const x = toArray(input, op);
  const w = toArray(weight, op);
  if (x.ndim !== nd + 2) {
    throw new Error(`[${op}] Invalid input array with ${x.ndim} dimensions for ${nd}D convolution. Expected an array with ${nd + 2} dimensions following the format [N, ..., C_in].`);
  }
  if (w.ndim !== nd + 2) {
    throw new Error(
      `[${op}] Invalid weight array with ${w.ndim} dimensions for ${nd}D convolution. Expected an array with ${nd + 2} dimensions following the format [C_out, ..., C_in].`,
    );
  }
  const stride = perAxis(op, o.stride, nd, "stride", "strides");
  const padding = perAxis(op, o.padding, nd, "padding", "padding");
  const dilation = perAxis(op, o.dilation, nd, "dilation", "kernel dilation");
  const outputPadding = perAxis(op, o.outputPadding, nd, "output padding", "output padding");
  const cin = x.shape[x.ndim - 1]!;
  if (Number.isInteger(o.groups) && o.groups >= 1 && w.shape[w.ndim - 1]! * o.groups !== cin) {
    throw new Error(
      `[${op}] Given groups=${o.groups} and weights of shape ${formatShape(w.shape)}, expected to have ${w.shape[w.ndim - 1]! * o.groups} input channels but got ${cin} input channels instead.`,
    );
  }
  const lo: number[] = [];
  const hi: number[] = [];
  for (let i = 0; i < nd; i++) {
    const kSize = 1 + dilation[i]! * (w.shape[i + 1]! - 1);
    lo.push(kSize - padding[i]! - 1);
    const convOut = (x.shape[i + 1]! - 1) * stride[i]! - 2 * padding[i]! + kSize;
    const outSize = 1 + stride[i]! * (x.shape[i + 1]! - 1);
    hi.push(convOut - outSize + padding[i]! + outputPadding[i]!);
  }
  return convolution(op, x, w, { stride: 1, padding: [lo, hi], kernelDilation: dilation, inputDilation: stride, groups: o.groups, flip: true },
    resolveStream(o.stream as StreamOptions["stream"]));
}

/**
 * As mx.conv_transpose1d(input, weight, stride=1, padding=0, dilation=1, output_padding=0, groups=1).
 * @example
 * mg.convTranspose1d(mg.ones([1, 3, 1]), mg.ones([1, 2, 1]), { stride: 2 })
 */
export function convTranspose1d(input: ArrayInput, weight: ArrayInput, ...rest: ConvTransposeRest): MgArray {
  return convTransposeN("conv_transpose1d", 1, input, weight, rest);
}
/**
 * The transposed 2-D convolution (the gradient of conv2d with respect to its input), as mx.conv_transpose2d: input (N, H, W, C), weight (C_out, kH, kW, C_in).
 * @example
 * mg.convTranspose2d(mg.ones([1, 2, 2, 1]), mg.ones([1, 2, 2, 1]), { stride: 2 }).shape
 */
export function convTranspose2d(input: ArrayInput, weight: ArrayInput, ...rest: ConvTransposeRest): MgArray {
  return convTransposeN("conv_transpose2d", 2, input, weight, rest);
}
/**
 * The transposed 3-D convolution, as mx.conv_transpose3d: input (N, D, H, W, C), weight (C_out, kD, kH, kW, C_in).
 * @example
 * mg.convTranspose3d(mg.ones([1, 2, 2, 2, 1]), mg.ones([1, 2, 2, 2, 1])).shape
 */
export function convTranspose3d(input: ArrayInput, weight: ArrayInput, ...rest: ConvTransposeRest): MgArray {
  return convTransposeN("conv_transpose3d", 3, input, weight, rest);
}

/**
 * convolve's output size: the full overlap, the input's size ("same") or only complete overlaps.
 */
export type ConvolveMode = "full" | "same" | "valid";

/**
 * The discrete 1-D convolution of `a` and `v`, as mx.convolve (numpy.convolve): "full" (length
 * n + m − 1), "same" (length max(n, m), centred) or "valid" (length max(n, m) − min(n, m) + 1).
 * @example
 * mg.convolve(mg.array([1, 2, 3], mg.float32), mg.array([0, 1, 0.5], mg.float32))
 */
export function convolve(a: ArrayInput, v: ArrayInput, ...rest: Trailing<[mode: ConvolveMode], { mode?: ConvolveMode } & StreamOptions>): MgArray {
  const op = "convolve";
  const { mode, stream } = resolveOptions(op, rest, { mode: "full" as ConvolveMode }, ["stream"]);
  const x = toArray(a, op);
  const y = toArray(v, op);
  if (x.ndim !== 1 || y.ndim !== 1) throw new Error(`[${op}] Inputs must be 1D.`);
  if (x.size === 0 || y.size === 0) throw new Error(`[${op}] Inputs cannot be empty.`);
  const [signal, kernel] = x.size < y.size ? [y, x] : [x, y];
  const m = kernel.size;
  let lo: number;
  let hi: number;
  if (mode === "full") [lo, hi] = [m - 1, m - 1];
  else if (mode === "same") [lo, hi] = [Math.floor(m / 2), Math.floor((m - 1) / 2)];
  else if (mode === "valid") [lo, hi] = [0, 0];
  else throw new Error(`[${op}] Invalid mode.`);
  const s = resolveStream(stream as StreamOptions["stream"]);
  const out = convolution(op, reshape(signal, [1, -1, 1], { stream: s }), reshape(kernel, [1, -1, 1], { stream: s }), {
    stride: 1, padding: [[lo], [hi]], kernelDilation: 1, inputDilation: 1, groups: 1, flip: true,
  }, s);
  return reshape(out, [-1], { stream: s });
}
