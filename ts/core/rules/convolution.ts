// Derivative and batching rules of Convolution (ts/core/primitives/convolution.ts), written in ops. Per spatial axis, with stride s,
// kernel dilation kd, input dilation id, padding lo/hi, kernel size K, input length L and output
// length O, the forward pass is
//   y[n, o, c] = Σ_k Σ_ci xp[n, o·s + k·kd, g(c)·Cig + ci] · w[c, flip ? K−1−k : k, ci]
// where xp is x dilated by id and padded.
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { defineRules } from "../primitive.ts";
import { Convolution, type ConvolutionParams } from "../primitives/convolution.ts";
import { convolutionNode, flipKernel } from "../ops/convolution.ts";
import { zerosLike } from "../ops/creation.ts";
import { add } from "../ops/elementwise.ts";
import { moveaxis, reshape, transpose } from "../ops/shape.ts";
import { sliceStatic } from "../ops/slicing.ts";

const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);

/**
 * dL/dx: x[i] sits at xp[lo + i·id], which output o reads through tap k when o·s + k·kd equals
 * it. Dilating dy by s and padding it by (K−1)·kd − lo makes that a convolution of dy with the
 * kernel read backwards (flip negated), channels swapped per group, at stride id — its output
 * length is L when the high padding makes the span exactly (L−1)·id.
 */
function inputGradient(x: MgArray, w: MgArray, dy: MgArray, p: ConvolutionParams): MgArray {
  const nd = x.ndim - 2;
  if (x.size === 0 || dy.size === 0 || w.size === 0) return zerosLike(x);
  const G = p.groups;
  const cout = w.shape[0]!;
  const cog = cout / G;
  const cig = w.shape[nd + 1]!;
  const kShape = w.shape.slice(1, -1);
  // w (G·Cog, K…, Cig) → (G·Cig, K…, Cog): group g's input channels become its output channels.
  const wg = reshape(w, [G, cog, ...kShape, cig]);
  const wt = reshape(transpose(wg, [0, nd + 2, ...range(2, nd + 2), 1]), [G * cig, ...kShape, cog]);
  const lo: number[] = [];
  const hi: number[] = [];
  for (let a = 0; a < nd; a++) {
    const K = kShape[a]!;
    const L = x.shape[a + 1]!;
    const O = dy.shape[a + 1]!;
    const kd = p.kernelDilation[a]!;
    const l = (K - 1) * kd - p.paddingLo[a]!;
    lo.push(l);
    hi.push((L - 1) * p.inputDilation[a]! + (K - 1) * kd + 1 - ((O - 1) * p.stride[a]! + 1) - l);
  }
  return convolutionNode(dy, wt, {
    stride: [...p.inputDilation],
    paddingLo: lo,
    paddingHi: hi,
    kernelDilation: [...p.kernelDilation],
    inputDilation: [...p.stride],
    groups: G,
    flip: !p.flip,
  }, resolveStream());
}

/**
 * dL/dw[c, k, ci] = Σ_n Σ_o xp[n, o·s + k·kd, ci] · dy[n, o, c]: a convolution whose batch is
 * the input channel, whose channels are (group, sample) and whose kernel is dy (dilated by s), at
 * stride kd; its output covers at least K taps per axis and is cut to K.
 */
function weightGradient(x: MgArray, w: MgArray, dy: MgArray, p: ConvolutionParams): MgArray {
  const nd = x.ndim - 2;
  if (x.size === 0 || dy.size === 0 || w.size === 0) return zerosLike(w);
  const G = p.groups;
  const N = x.shape[0]!;
  const cig = w.shape[nd + 1]!;
  const cout = w.shape[0]!;
  const inSpatial = x.shape.slice(1, -1);
  const kShape = w.shape.slice(1, -1);
  // x (N, L…, G·Cig) → (Cig, L…, G·N)
  const xg = reshape(x, [N, ...inSpatial, G, cig]);
  const xt = reshape(transpose(xg, [nd + 2, ...range(1, nd + 1), nd + 1, 0]), [cig, ...inSpatial, G * N]);
  // dy (N, O…, Cout) → (Cout, O…, N)
  const dyt = transpose(dy, [nd + 1, ...range(1, nd + 1), 0]);
  let dw = convolutionNode(xt, dyt, {
    stride: [...p.kernelDilation],
    paddingLo: [...p.paddingLo],
    paddingHi: [...p.paddingHi],
    kernelDilation: [...p.stride],
    inputDilation: [...p.inputDilation],
    groups: G,
    flip: false,
  }, resolveStream());
  // (Cig, K'…, Cout) with K' ≥ K → (Cout, K…, Cig)
  if (dw.shape.slice(1, -1).some((k, a) => k !== kShape[a])) {
    dw = sliceStatic(dw, dw.shape.map(() => 0), [cig, ...kShape, cout]);
  }
  dw = transpose(dw, [nd + 1, ...range(1, nd + 1), 0]);
  return p.flip ? flipKernel(dw) : dw;
}

function convolutionVjp(
  [x, w]: readonly MgArray[],
  [dy]: readonly MgArray[],
  argnums: readonly number[],
  _outputs: readonly MgArray[],
  p: ConvolutionParams,
): MgArray[] {
  return argnums.map((i) => (i === 0 ? inputGradient(x!, w!, dy!, p) : weightGradient(x!, w!, dy!, p)));
}

/** The convolution is bilinear: dy = conv(dx, w) + conv(x, dw). */
function convolutionJvp(
  [x, w]: readonly MgArray[],
  tangents: readonly MgArray[],
  argnums: readonly number[],
  _outputs: readonly MgArray[],
  p: ConvolutionParams,
): MgArray[] {
  const parts = argnums.map((i, k) => (i === 0 ? convolutionNode(tangents[k]!, w!, p) : convolutionNode(x!, tangents[k]!, p)));
  return [parts.reduce((a, b) => add(a, b))];
}

/**
 * A batched input folds its batch into N; a batched weight folds its batch into each group's
 * output channels; both batched fold the batch into the groups (input channels and weights).
 */
function convolutionVmap(inputs: readonly MgArray[], axes: readonly number[], p: ConvolutionParams): [MgArray[], number[]] {
  const [x0, w0] = inputs as [MgArray, MgArray];
  const [bx, bw] = axes as [number, number];
  const s = resolveStream();
  if (bw < 0) {
    const x = moveaxis(x0, bx, 0);
    const [B, N] = x.shape as [number, number];
    const y = convolutionNode(reshape(x, [B * N, ...x.shape.slice(2)]), w0, p, s);
    return [[reshape(y, [B, N, ...y.shape.slice(1)])], [0]];
  }
  const w = moveaxis(w0, bw, 0);
  const B = w.shape[0]!;
  const G = p.groups;
  const cout = w.shape[1]!;
  const cog = cout / G;
  const nd = w.ndim - 3;
  const kRest = w.shape.slice(2);
  if (bx < 0) {
    // (B, G·Cog, K…, Cig) → (G·B·Cog, K…, Cig): group g's block holds every batch entry's filters.
    const wg = transpose(reshape(w, [B, G, cog, ...kRest]), [1, 0, ...range(2, nd + 4)]);
    const y = convolutionNode(x0, reshape(wg, [G * B * cog, ...kRest]), p, s);
    const lead = y.shape.slice(0, -1);
    const yb = moveaxis(reshape(y, [...lead, G, B, cog]), lead.length + 1, 0);
    return [[reshape(yb, [B, ...lead, cout])], [0]];
  }
  const x = moveaxis(x0, bx, 0);
  const [, N] = x.shape as [number, number];
  const spatial = x.shape.slice(2, -1);
  const cin = x.shape[x.ndim - 1]!;
  // (B, N, L…, C) → (N, L…, B·C) with B·G groups.
  const xf = reshape(transpose(x, [1, ...range(2, nd + 2), 0, nd + 2]), [N, ...spatial, B * cin]);
  const y = convolutionNode(xf, reshape(w, [B * cout, ...kRest]), { ...p, groups: B * G }, s);
  const lead = y.shape.slice(0, -1);
  const yb = moveaxis(reshape(y, [...lead, B, cout]), lead.length, 0);
  return [[yb], [0]];
}

defineRules(Convolution, { vjp: convolutionVjp, jvp: convolutionJvp, vmap: convolutionVmap });
