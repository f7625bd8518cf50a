// mg.fft: MLX 0.32.4's 18 functions. The transforms build one FFT node over all their axes after
// padding (zeros) or slicing the input to the requested sizes, then apply the norm's scale — as
// mlx/fft.cpp does, so shapes, dtypes (complex64; irfft float32) and errors follow MLX. Both
// devices. fftfreq/fftshift are ordinary ops; stft/istft are framing, windows and the transforms.
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { complex64, type Dtype, float32, isComplex } from "../dtype.ts";
import { makeArray } from "../graph.ts";
import { FFT } from "../primitives/fft.ts";
import { formatShape } from "../shape.ts";
import { type ArrayInput, type StreamOptions, toArray } from "./convert.ts";
import { arange, zeros } from "./creation.ts";
import { add, astype, divide, maximum, multiply, real, where, greater, abs } from "./elementwise.ts";
import { concatenate } from "./join.ts";
import { pad, roll } from "./movement.ts";
import { expandDims, reshape, swapaxes } from "./shape.ts";
import { bindArgs } from "../options.ts";
import { sliceStatic } from "./slicing.ts";
import { take } from "./indexing.ts";

type Norm = "backward" | "ortho" | "forward";

function parseNorm(op: string, v: unknown): Norm {
  const norm = v ?? "backward";
  if (norm !== "backward" && norm !== "ortho" && norm !== "forward") {
    throw new Error(`[${op}] Invalid norm. Expected one of {'backward', 'ortho', 'forward'}.`);
  }
  return norm;
}

function scaleFactor(n: readonly number[], norm: Norm, inverse: boolean): number {
  if (n.length === 0) return 1;
  const count = n.reduce((a, b) => a * b, 1);
  if (norm === "backward") return 1;
  if (norm === "ortho") return inverse ? Math.sqrt(count) : 1 / Math.sqrt(count);
  return inverse ? count : 1 / count;
}

/** mlx::fft::fft_impl: sizes n per axis, real/inverse flags. */
function fftImpl(op: string, a: MgArray, n: number[], axes: number[], real: boolean, inverse: boolean, norm: Norm, opts: StreamOptions): MgArray {
  if (a.ndim < 1) throw new Error(`[${op}] Requires array with at least one dimension.`);
  if (n.length !== axes.length) throw new Error(`[${op}] Shape and axes have different sizes.`);
  if (axes.length === 0) return a;
  const valid = axes.map((ax) => (ax < 0 ? ax + a.ndim : ax));
  if (new Set(valid).size !== valid.length) throw new Error(`[${op}] Duplicated axis received (${axes.join(", ")}).`);
  if (valid.some((ax) => ax < 0 || ax >= a.ndim)) throw new Error(`[${op}] Invalid axis received for array with ${a.ndim} dimensions.`);
  if (n.some((v) => !Number.isInteger(v) || v <= 0)) throw new Error(`[${op}] Invalid FFT output size requested (${n.join(", ")}).`);
  const inShape = [...a.shape];
  valid.forEach((ax, i) => (inShape[ax] = n[i]!));
  const lastAxis = valid[valid.length - 1]!;
  if (real && inverse) inShape[lastAxis] = Math.floor(n[n.length - 1]! / 2) + 1;
  let x = a;
  // Slice what is too long, zero-pad what is too short.
  if (inShape.some((d, i) => d < x.shape[i]!)) {
    x = sliceStatic(x, inShape.map(() => 0), inShape.map((d, i) => Math.min(d, x.shape[i]!)), undefined, opts);
  }
  if (inShape.some((d, i) => d > x.shape[i]!)) {
    x = pad(x, inShape.map((d, i) => [0, d - x.shape[i]!] as [number, number]), "constant", 0, opts);
  }
  // A complex input to rfft is cast to float32 (its real part), as MLX does.
  const inType: Dtype = real && !inverse ? float32 : complex64;
  const out = makeArray(FFT, [astype(x, inType, opts)], { axes: valid, inverse, real, n: real && inverse ? n[n.length - 1]! : 0 }, resolveStream(opts.stream));
  const scale = scaleFactor(n, norm, inverse);
  return scale !== 1 ? multiply(out, astype(scale, out.dtype, opts), opts) : out;
}

/** Sizes per axis when not given: the input's (irfft: 2·(bins − 1) on the last axis). */
function defaultSizes(a: MgArray, axes: number[], real: boolean, inverse: boolean): number[] {
  const n = axes.map((ax) => a.shape[ax < 0 ? ax + a.ndim : ax] ?? 0);
  if (real && inverse && n.length > 0) n[n.length - 1] = (n[n.length - 1]! - 1) * 2;
  return n;
}

function oneDim(op: string, real: boolean, inverse: boolean, a: ArrayInput, rest: unknown[]): MgArray {
  const x = toArray(a, op);
  const p = bindArgs(op, rest, [{ name: "n" }, { name: "axis" }, { name: "norm" }]);
  const axis = (p.axis as number | undefined) ?? -1;
  const norm = parseNorm(op, p.norm);
  const opts: StreamOptions = { stream: p.stream };
  if (x.ndim < 1) throw new Error(`[${op}] Requires array with at least one dimension.`);
  const n = p.n === undefined || p.n === null ? defaultSizes(x, [axis], real, inverse) : [p.n as number];
  return fftImpl(op, x, n, [axis], real, inverse, norm, opts);
}

function nDim(op: string, real: boolean, inverse: boolean, defaultAxes: number[] | null, a: ArrayInput, rest: unknown[]): MgArray {
  const x = toArray(a, op);
  const p = bindArgs(op, rest, [{ name: "s" }, { name: "axes" }, { name: "norm" }]);
  const norm = parseNorm(op, p.norm);
  const opts: StreamOptions = { stream: p.stream };
  // axes: undefined → the op's default; null → every axis (as Python's axes=None).
  const axesArg = p.axes === undefined ? defaultAxes : (p.axes as number[] | null);
  const s = p.s as number[] | null | undefined;
  if (axesArg === null && s !== undefined && s !== null) throw new Error(`[${op}] \`axes\` should not be \`None\` if \`s\` is not \`None\`.`);
  const axes = axesArg ?? x.shape.map((_, i) => i);
  const n = s === undefined || s === null ? defaultSizes(x, axes, real, inverse) : [...s];
  return fftImpl(op, x, n, [...axes], real, inverse, norm, opts);
}

/**
 * One-dimensional DFT, as mx.fft.fft(a, n=None, axis=-1, norm='backward').
 * @example
 * mg.fft.fft(mg.array([1, 0, 0, 0], mg.float32))
 */
export const fft = (a: ArrayInput, ...rest: unknown[]): MgArray => oneDim("fft", false, false, a, rest);
/**
 * One-dimensional inverse DFT, as mx.fft.ifft.
 * @example
 * mg.fft.ifft(mg.fft.fft(mg.array([1, 2, 3, 4], mg.float32)))
 */
export const ifft = (a: ArrayInput, ...rest: unknown[]): MgArray => oneDim("ifft", false, true, a, rest);
/**
 * DFT of real input (the n/2 + 1 non-negative frequencies), as mx.fft.rfft.
 * @example
 * mg.fft.rfft(mg.array([1, 2, 3, 4], mg.float32))
 */
export const rfft = (a: ArrayInput, ...rest: unknown[]): MgArray => oneDim("rfft", true, false, a, rest);
/**
 * Inverse of rfft (real output of length n, default 2·(bins − 1)), as mx.fft.irfft.
 * @example
 * mg.fft.irfft(mg.fft.rfft(mg.array([1, 2, 3, 4], mg.float32)))
 */
export const irfft = (a: ArrayInput, ...rest: unknown[]): MgArray => oneDim("irfft", true, true, a, rest);
/**
 * Two-dimensional DFT, as mx.fft.fft2(a, s=None, axes=(-2, -1), norm='backward').
 * @example
 * mg.fft.fft2(mg.ones([2, 2])).shape
 */
export const fft2 = (a: ArrayInput, ...rest: unknown[]): MgArray => nDim("fft2", false, false, [-2, -1], a, rest);
/**
 * The inverse 2-D discrete Fourier transform over `axes` (default the last two), as mx.fft.ifft2.
 * @example
 * mg.fft.ifft2(mg.fft.fft2(mg.ones([2, 2])))
 */
export const ifft2 = (a: ArrayInput, ...rest: unknown[]): MgArray => nDim("ifft2", false, true, [-2, -1], a, rest);
/**
 * The 2-D Fourier transform of a real array (the last axis halved), as mx.fft.rfft2.
 * @example
 * mg.fft.rfft2(mg.ones([4, 4])).shape
 */
export const rfft2 = (a: ArrayInput, ...rest: unknown[]): MgArray => nDim("rfft2", true, false, [-2, -1], a, rest);
/**
 * The inverse of rfft2: a real 2-D array, as mx.fft.irfft2.
 * @example
 * mg.fft.irfft2(mg.fft.rfft2(mg.ones([4, 4]))).shape
 */
export const irfft2 = (a: ArrayInput, ...rest: unknown[]): MgArray => nDim("irfft2", true, true, [-2, -1], a, rest);
/**
 * n-dimensional DFT over `axes` (default: all), as mx.fft.fftn(a, s=None, axes=None).
 * @example
 * mg.fft.fftn(mg.ones([2, 2, 2])).shape
 */
export const fftn = (a: ArrayInput, ...rest: unknown[]): MgArray => nDim("fftn", false, false, null, a, rest);
/**
 * The inverse n-D discrete Fourier transform over `axes` (default all), as mx.fft.ifftn.
 * @example
 * mg.fft.ifftn(mg.fft.fftn(mg.ones([2, 2]))).shape
 */
export const ifftn = (a: ArrayInput, ...rest: unknown[]): MgArray => nDim("ifftn", false, true, null, a, rest);
/**
 * The n-D Fourier transform of a real array (the last axis halved), as mx.fft.rfftn.
 * @example
 * mg.fft.rfftn(mg.ones([2, 4])).shape
 */
export const rfftn = (a: ArrayInput, ...rest: unknown[]): MgArray => nDim("rfftn", true, false, null, a, rest);
/**
 * The inverse of rfftn: a real n-D array, as mx.fft.irfftn.
 * @example
 * mg.fft.irfftn(mg.fft.rfftn(mg.ones([2, 4]))).shape
 */
export const irfftn = (a: ArrayInput, ...rest: unknown[]): MgArray => nDim("irfftn", true, true, null, a, rest);

// ---------------------------------------------------------------------------------------------
// Frequencies and shifts

function freqArgs(op: string, n: number, rest: unknown[]): { d: number; opts: StreamOptions } {
  const p = bindArgs(op, rest, [{ name: "d" }]);
  const d = (p.d as number | undefined) ?? 1;
  if (!Number.isInteger(n) || n <= 0) throw new Error(`[${op}] \`n\` must be greater than 0.`);
  if (d === 0) throw new Error(`[${op}] \`d\` must be non-zero.`);
  return { d, opts: { stream: p.stream } };
}

/**
 * Sample frequencies of an n-point DFT (float32), as mx.fft.fftfreq(n, d=1.0).
 * @example
 * mg.fft.fftfreq(4)
 */
export function fftfreq(n: number, ...rest: unknown[]): MgArray {
  const { d, opts } = freqArgs("fftfreq", n, rest);
  const pos = arange(0, Math.floor((n + 1) / 2), 1, float32, opts);
  const neg = arange(-Math.floor(n / 2), 0, 1, float32, opts);
  return multiply(concatenate([pos, neg], 0, opts), astype(Math.fround(1 / (n * d)), float32, opts), opts);
}

/**
 * Sample frequencies of rfft (float32), as mx.fft.rfftfreq(n, d=1.0).
 * @example
 * mg.fft.rfftfreq(4)
 */
export function rfftfreq(n: number, ...rest: unknown[]): MgArray {
  const { d, opts } = freqArgs("rfftfreq", n, rest);
  return multiply(arange(0, Math.floor(n / 2) + 1, 1, float32, opts), astype(Math.fround(1 / (n * d)), float32, opts), opts);
}

function shiftImpl(op: string, inverse: boolean, a: ArrayInput, rest: unknown[]): MgArray {
  const x = toArray(a, op);
  const p = bindArgs(op, rest, [{ name: "axes" }]);
  const opts: StreamOptions = { stream: p.stream };
  const axesArg = p.axes as number | number[] | null | undefined;
  if (x.ndim < 1 && (axesArg === undefined || axesArg === null)) return x;
  const axes = axesArg === undefined || axesArg === null ? x.shape.map((_, i) => i) : typeof axesArg === "number" ? [axesArg] : [...axesArg];
  if (axes.length === 0) return x;
  const shifts = axes.map((ax) => {
    const axis = ax < 0 ? ax + x.ndim : ax;
    if (axis < 0 || axis >= x.ndim) throw new Error(`[${op}] Invalid axis ${ax} for array with ${x.ndim} dimensions.`);
    const s = Math.floor(x.shape[axis]! / 2);
    return inverse ? -s : s;
  });
  return roll(x, shifts, axes, opts);
}

/**
 * Moves the zero frequency to the centre, as mx.fft.fftshift(a, axes=None).
 * @example
 * mg.fft.fftshift(mg.arange(4))
 */
export const fftshift = (a: ArrayInput, ...rest: unknown[]): MgArray => shiftImpl("fftshift", false, a, rest);
/**
 * The inverse of fftshift, as mx.fft.ifftshift(a, axes=None).
 * @example
 * mg.fft.ifftshift(mg.fft.fftshift(mg.arange(5)))
 */
export const ifftshift = (a: ArrayInput, ...rest: unknown[]): MgArray => shiftImpl("ifftshift", true, a, rest);

// ---------------------------------------------------------------------------------------------
// Short-time transforms

/** The window as n_fft samples: given (length winLength) centred with zeros, else ones. */
function paddedWindow(op: string, window: MgArray | null | undefined, winLength: number, nFft: number, opts: StreamOptions): MgArray {
  let w = window ?? null;
  if (w === null) {
    w = astype(arange(0, winLength, 1, float32, opts), float32, opts);
    w = add(multiply(w, 0, opts), 1, opts);
  } else {
    if (w.ndim !== 1) throw new Error(`[${op}] window must be one-dimensional; received shape ${formatShape(w.shape)}.`);
    if (w.shape[0] !== winLength) throw new Error(`[${op}] window has length ${w.shape[0]} but win_length is ${winLength}.`);
  }
  if (winLength < nFft) {
    const left = Math.floor((nFft - winLength) / 2);
    w = pad(w, [[left, nFft - winLength - left]], "constant", 0, opts);
  }
  return w;
}

/** Frame starts as a gather index: (frames, n_fft) positions into the signal's last axis. */
function frameIndex(frames: number, nFft: number, hop: number, opts: StreamOptions): MgArray {
  const starts = multiply(arange(0, frames, 1, undefined, opts), hop, opts);
  return add(expandDims(starts, 1, opts), expandDims(arange(0, nFft, 1, undefined, opts), 0, opts), opts);
}

/**
 * Short-time Fourier transform of the last axis, as mx.fft.stft(x, n_fft=2048, hop_length=None,
 * win_length=None, window=None, center=True, pad_mode='reflect', norm='backward',
 * onesided=None): (…, n_freq, n_frames) complex64.
 * @example
 * mg.fft.stft(mg.ones([64]), { nFft: 16 }).shape
 */
export function stft(x: ArrayInput, ...rest: unknown[]): MgArray {
  const op = "stft";
  const a = toArray(x, op);
  const p = bindArgs(op, rest, [
    { name: "nFft" }, { name: "hopLength" }, { name: "winLength" }, { name: "window" }, { name: "center" },
    { name: "padMode" }, { name: "norm" }, { name: "onesided" },
  ]);
  const opts: StreamOptions = { stream: p.stream };
  const nFft = (p.nFft as number | undefined) ?? 2048;
  const hop = (p.hopLength as number | null | undefined) ?? Math.floor(nFft / 4);
  const winLength = (p.winLength as number | null | undefined) ?? nFft;
  const center = (p.center as boolean | undefined) ?? true;
  const padMode = (p.padMode as string | undefined) ?? "reflect";
  const norm = parseNorm(op, p.norm);
  const onesided = (p.onesided as boolean | null | undefined) ?? !isComplex(a.dtype);
  if (a.ndim < 1) throw new Error(`[${op}] Input must have at least one dimension.`);
  if (!Number.isInteger(nFft) || nFft <= 0) throw new Error(`[${op}] n_fft must be a positive integer; received ${nFft}.`);
  if (!Number.isInteger(hop) || hop <= 0) throw new Error(`[${op}] hop_length must be a positive integer; received ${hop}.`);
  if (!Number.isInteger(winLength) || winLength <= 0 || winLength > nFft) throw new Error(`[${op}] win_length must be in [1, n_fft]; received ${winLength}.`);
  if (onesided && isComplex(a.dtype)) throw new Error(`[${op}] onesided output is only defined for real input.`);
  const win = paddedWindow(op, p.window === undefined || p.window === null ? null : toArray(p.window as ArrayInput, op), winLength, nFft, opts);
  let sig = a;
  if (center) {
    const half = Math.floor(nFft / 2);
    const widths = sig.shape.map((_, i) => (i === sig.ndim - 1 ? [half, half] : [0, 0]) as [number, number]);
    if (padMode === "reflect") {
      if (sig.shape[sig.ndim - 1]! <= half) throw new Error(`[${op}] reflect padding needs a signal longer than n_fft // 2 (${half}); received ${sig.shape[sig.ndim - 1]}.`);
      sig = pad(sig, widths, "reflect", 0, opts);
    } else if (padMode === "constant") sig = pad(sig, widths, "constant", 0, opts);
    else if (padMode === "edge") sig = pad(sig, widths, "edge", 0, opts);
    else throw new Error(`[${op}] pad_mode must be 'reflect', 'constant' or 'edge'; received '${padMode}'.`);
  }
  const len = sig.shape[sig.ndim - 1]!;
  if (len < nFft) throw new Error(`[${op}] The input (length ${len}) is shorter than n_fft (${nFft}).`);
  const frames = 1 + Math.floor((len - nFft) / hop);
  const idx = frameIndex(frames, nFft, hop, opts);
  // (…, frames, n_fft) frames, windowed
  const framed = multiply(take(sig, idx, -1, opts), win, opts);
  const spec = onesided ? rfft(framed, null, -1, norm, opts) : fft(framed, null, -1, norm, opts);
  return swapaxes(spec, -1, -2, opts);
}

/**
 * Inverse STFT by windowed overlap-add normalized by the squared-window envelope, as
 * mx.fft.istft(stft_matrix, n_fft=None, hop_length=None, win_length=None, window=None,
 * center=True, norm='backward', onesided=None, length=None).
 * @example
 * mg.fft.istft(mg.fft.stft(mg.ones([64]), { nFft: 16 }), { nFft: 16 }).shape
 */
export function istft(stftMatrix: ArrayInput, ...rest: unknown[]): MgArray {
  const op = "istft";
  const S = toArray(stftMatrix, op);
  const p = bindArgs(op, rest, [
    { name: "nFft" }, { name: "hopLength" }, { name: "winLength" }, { name: "window" }, { name: "center" },
    { name: "norm" }, { name: "onesided" }, { name: "length" },
  ]);
  const opts: StreamOptions = { stream: p.stream };
  if (S.ndim < 2) throw new Error(`[${op}] stft_matrix must have shape (..., n_freq, n_frames); received ${formatShape(S.shape)}.`);
  const onesided = (p.onesided as boolean | null | undefined) ?? true;
  const nFreq = S.shape[S.ndim - 2]!;
  const frames = S.shape[S.ndim - 1]!;
  const nFft = (p.nFft as number | null | undefined) ?? (onesided ? 2 * (nFreq - 1) : nFreq);
  const hop = (p.hopLength as number | null | undefined) ?? Math.floor(nFft / 4);
  const winLength = (p.winLength as number | null | undefined) ?? nFft;
  const center = (p.center as boolean | undefined) ?? true;
  const norm = parseNorm(op, p.norm);
  const length = p.length as number | null | undefined;
  if (!Number.isInteger(nFft) || nFft <= 0) throw new Error(`[${op}] n_fft must be a positive integer; received ${nFft}.`);
  if (!Number.isInteger(hop) || hop <= 0) throw new Error(`[${op}] hop_length must be a positive integer; received ${hop}.`);
  const win = paddedWindow(op, p.window === undefined || p.window === null ? null : toArray(p.window as ArrayInput, op), winLength, nFft, opts);
  // (…, frames, n_fft) time frames
  const spec = swapaxes(S, -1, -2, opts);
  let framesT = onesided ? irfft(spec, nFft, -1, norm, opts) : ifft(spec, nFft, -1, norm, opts);
  if (!onesided) framesT = real(framesT, opts);
  framesT = multiply(framesT, win, opts);
  const total = nFft + hop * (frames - 1);
  // Overlap-add: scatter-add each frame at its offset, through a one-hot (frames·n_fft → total) sum.
  const y = overlapAdd(framesT, hop, total, opts);
  const env = overlapAdd(broadcastFrames(multiply(win, win, opts), frames, opts), hop, total, opts);
  let out = where(greater(abs(env, opts), 1e-11, opts), divide(y, maximum(env, 1e-11, opts), opts), zeros([], float32, opts), opts);
  const start = center ? Math.floor(nFft / 2) : 0;
  let end = center ? total - Math.floor(nFft / 2) : total;
  if (length !== undefined && length !== null) end = start + length;
  const lead = out.shape.slice(0, -1);
  const avail = out.shape[out.ndim - 1]!;
  out = sliceStatic(out, [...lead.map(() => 0), Math.min(start, avail)], [...lead, Math.min(end, avail)], undefined, opts);
  if (length !== undefined && length !== null && out.shape[out.ndim - 1]! < length) {
    out = pad(out, [...lead.map(() => [0, 0] as [number, number]), [0, length - out.shape[out.ndim - 1]!]], "constant", 0, opts);
  }
  return out;
}

function broadcastFrames(w: MgArray, frames: number, opts: StreamOptions): MgArray {
  return multiply(expandDims(w, 0, opts), add(zeros([frames, 1], float32, opts), 1, opts), opts);
}

/** Σ_f frames[…, f, k] placed at f·hop + k in a signal of `total` samples. */
function overlapAdd(frames: MgArray, hop: number, total: number, opts: StreamOptions): MgArray {
  const nf = frames.shape[frames.ndim - 2]!, nFft = frames.shape[frames.ndim - 1]!;
  // Split each frame into hop-sized chunks: frame f chunk c lands at chunk f + c of the output.
  const chunks = Math.ceil(nFft / hop);
  const padded = pad(frames, [...frames.shape.slice(0, -1).map(() => [0, 0] as [number, number]), [0, chunks * hop - nFft]], "constant", 0, opts);
  const lead = frames.shape.slice(0, -2);
  const byChunk = reshape(padded, [...lead, nf, chunks, hop], opts);
  const parts: MgArray[] = [];
  for (let c = 0; c < chunks; c++) {
    const part = sliceStatic(byChunk, [...lead.map(() => 0), 0, c, 0], [...lead, nf, c + 1, hop], undefined, opts);
    const flat = reshape(part, [...lead, nf * hop], opts);
    parts.push(pad(flat, [...lead.map(() => [0, 0] as [number, number]), [c * hop, (chunks - 1 - c) * hop]], "constant", 0, opts));
  }
  let acc = parts.reduce((s, x) => add(s, x, opts));
  const len = acc.shape[acc.ndim - 1]!;
  acc = sliceStatic(acc, [...lead.map(() => 0), 0], [...lead, Math.min(total, len)], undefined, opts);
  return acc;
}


