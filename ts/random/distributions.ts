// Distributions over threefry bits, each the exact composition of ops MLX's mlx/random.cpp
// builds, so the CPU device reproduces MLX's samples: uniform maps uint32 bits to [0, 1) in
// float32 and then to [low, high) in the target dtype, normal is √2·erfinv of a uniform on
// (-1, 1), and so on. Parameters given as arrays (low/high, loc/scale, bounds) enter through
// ordinary differentiable ops; the bits themselves have no derivative.
import type { MgArray } from "../core/array.ts";
import {
  bfloat16, complex64, type Dtype, float16, float32, float64, int32, isFloating, isInexact, promoteTypes,
  uint32,
} from "../core/dtype.ts";
import type { Stream } from "../core/device.ts";
import { broadcastShapes, formatShape, normalizeAxis, shapesEqual } from "../core/shape.ts";
import { array, type ArrayInput, toArray } from "../core/ops/convert.ts";
import {
  abs, add, astype, divide, equal, erf, erfinv, exp, floor, isinf, less, log, log1p, maximum, minimum, multiply,
  negative, sign, subtract, where,
} from "../core/ops/elementwise.ts";
import { expandDims, reshape, squeeze } from "../core/ops/shape.ts";
import { split } from "../core/ops/join.ts";
import { cumsum, max, sum } from "../core/ops/reduce.ts";
import { argmax, argsort, searchsorted } from "../core/ops/sort.ts";
import { take } from "../core/ops/indexing.ts";
import { checkDtype, checkInt, checkRandomShape, describe, type ShapeArg } from "./args.ts";
import { resolveStream } from "../core/device.ts";
import type { StreamOptions } from "../core/ops/convert.ts";
import { bitsFromKey, resolveKey } from "./keys.ts";

type Opts = { stream: Stream };

/** Largest value below 1 in each supported dtype, as a float32: uniform draws are capped there
 *  so that samples stay in [low, high) after rounding to the target dtype. */
const BELOW_ONE = new Map<Dtype, number>([
  [float32, Math.fround(1 - 2 ** -24)],
  [float16, 1 - 2 ** -11], // float16 bits 0x3BFF
  [bfloat16, 1 - 2 ** -8], // bfloat16 bits 0x3F7F
]);

/** nextafter(-1.0f, 0.0f): normal and laplace draw from the open interval (-1, 1). */
const ABOVE_MINUS_ONE = -Math.fround(1 - 2 ** -24);

/**
 * uniform(low, high, shape, dtype, key), MLX's formula:
 *   u = min(float32(bits) / float32(2³²−1), below_one(dtype))  → cast to dtype
 *   out = (high − low)·u + low                                  (in dtype)
 */
function uniformFrom(low: MgArray, high: MgArray, shape: number[], dtype: Dtype, key: MgArray, o: Opts, op: string): MgArray {
  if (!isFloating(dtype)) {
    throw new TypeError(`[${op}] Can only generate uniform numbers with real floating point type (got ${dtype.name}).`);
  }
  const lo = astype(low, dtype, o);
  const hi = astype(high, dtype, o);
  const range = subtract(hi, lo, o);
  const outShape = broadcastShapes([shape, range.shape], op);
  if (!shapesEqual(outShape, shape)) {
    throw new RangeError(
      `[${op}] Cannot generate random values of shape ${formatShape(shape)} from broadcasted shape ${formatShape(outShape)}.`,
    );
  }
  const upper = BELOW_ONE.get(dtype);
  if (upper === undefined) throw new TypeError(`[${op}] Unsupported type ${dtype.name} (uniform samples float32, float16 or bfloat16).`);
  // uint32 / float32 promotes to float32: the bits are rounded to float32 before the division.
  let u = divide(bitsFromKey(shape, 4, key, o.stream), array(4294967295, float32), o);
  u = astype(minimum(u, array(upper, float32), o), dtype, o);
  return add(multiply(range, u, o), lo, o);
}

/** uniform on [0, 1) in `dtype` (MLX's uniform(shape, dtype, key)). */
function unitUniform(shape: number[], dtype: Dtype, key: MgArray, o: Opts, op: string): MgArray {
  return uniformFrom(array(0.0, dtype), array(1.0, dtype), shape, dtype, key, o, op);
}

/** uniform on (-1, 1) in float32: the source of normal, laplace and complex normal draws. */
function symmetricUniform(shape: number[], key: MgArray, o: Opts, op: string): MgArray {
  return uniformFrom(array(ABOVE_MINUS_ONE, float32), array(1.0, float32), shape, float32, key, o, op);
}

/**
 * A loc/scale parameter converted as MLX's Python layer does (to_array with the sample dtype):
 * integers become `dtype`; other numbers become `dtype` when it is a real float type (through
 * float32, except float64) and float32 otherwise; arrays are used as they are.
 */
function paramArray(v: ArrayInput, dtype: Dtype, op: string): MgArray {
  if (typeof v === "number" && !Number.isInteger(v)) {
    if (dtype === float64) return array(v, float64);
    return array(Math.fround(v), isFloating(dtype) ? dtype : float32);
  }
  if (typeof v === "number" || typeof v === "boolean") return array(v, dtype);
  return toArray(v, op);
}

// ---------------------------------------------------------------------------------------------
// Public API

/**
 * Uniform samples on [low, high), as mx.random.uniform(low=0, high=1, shape=[], dtype=float32,
 * key=None). low and high broadcast to `shape`.
 * @example
 * mg.random.uniform(0, 1, [3], { key: mg.random.key(0) })
 */
export function uniform(
  low: ArrayInput = 0, high: ArrayInput = 1, shape: ShapeArg = [], dtype: Dtype | null = float32, key: MgArray | null = null,
  opts: StreamOptions = {},
): MgArray {
  const op = "uniform";
  const stream = resolveStream(opts.stream);
  const [s, d, k] = [shape, dtype, key];
  const lo = toArray(low ?? 0, op);
  const hi = toArray(high ?? 1, op);
  return uniformFrom(lo, hi, checkRandomShape(s ?? [], op), checkDtype(d, float32, op), resolveKey(k, op, stream), { stream }, op);
}

/**
 * Normal samples, as mx.random.normal(shape=[], dtype=float32, loc=None, scale=None, key=None):
 * loc + scale·√2·erfinv(u) with u uniform on (-1, 1). For complex64 the real and imaginary
 * parts are each N(0, 1/2) (erfinv of two uniforms, without the √2).
 * @example
 * mg.random.normal([2], { key: mg.random.key(0) })
 */
export function normal(
  shape: ShapeArg = [], dtype: Dtype | null = float32, loc: ArrayInput | null = null, scale: ArrayInput | null = null,
  key: MgArray | null = null, opts: StreamOptions = {},
): MgArray {
  const op = "normal";
  const stream = resolveStream(opts.stream);
  const [s, d, l, sc, k] = [shape, dtype, loc, scale, key];
  shape = checkRandomShape(s ?? [], op);
  dtype = checkDtype(d, float32, op);
  key = resolveKey(k, op, stream);
  const o = { stream };
  loc = l === undefined || l === null ? null : paramArray(l, dtype, op);
  scale = sc === undefined || sc === null ? null : paramArray(sc, dtype, op);
  if (dtype === complex64) return complexNormal(shape as number[], loc as MgArray | null, scale as MgArray | null, key, o);
  if (!isFloating(dtype)) throw new TypeError(`[${op}] Only floating point and complex64 types are supported (got ${dtype.name}).`);

  const u = symmetricUniform(shape as number[], key, o, op);
  let appliedScale = array(Math.SQRT2, dtype);
  if (scale) appliedScale = multiply(appliedScale, astype(scale as MgArray, dtype, o), o);
  let samples = astype(erfinv(u, o), dtype, o);
  samples = multiply(appliedScale, samples, o);
  if (loc) samples = add(astype(loc as MgArray, dtype, o), samples, o);
  return samples;
}

/** erfinv of a (…, 2) uniform read as (re, im) pairs: the bits of MLX's view as complex64. */
function complexNormal(shape: number[], loc: MgArray | null, scale: MgArray | null, key: MgArray, o: Opts): MgArray {
  const pairShape = [...shape, 2];
  const e = erfinv(symmetricUniform(pairShape, key, o, "normal"), o);
  const [re, im] = split(e, 2, -1, o).map((part) => squeeze(part, -1, o)) as [MgArray, MgArray];
  // re + i·im, exactly: (im + 0i)·(0 + 1i) = (±0, im) and re ± 0 = re (samples are never −0).
  let samples = add(astype(re, complex64, o), multiply(astype(im, complex64, o), array({ re: 0, im: 1 }), o), o);
  if (scale) samples = multiply(scale, samples, o);
  if (loc) samples = add(loc, samples, o);
  return samples;
}

/**
 * Samples of a normal truncated to [lower, upper], as mx.random.truncated_normal(lower, upper,
 * shape=None, dtype=float32, key=None): √2·erfinv(u) with u uniform on [erf(lower/√2),
 * erf(upper/√2)), clipped into the bounds. The default shape broadcasts lower with upper.
 * @example
 * mg.random.truncatedNormal(-1, 1, [3], { key: mg.random.key(0) })
 */
export function truncatedNormal(
  lower: ArrayInput, upper: ArrayInput, shape: ShapeArg | null = null, dtype: Dtype | null = float32, key: MgArray | null = null,
  opts: StreamOptions = {},
): MgArray {
  const op = "truncated_normal";
  const stream = resolveStream(opts.stream);
  const [lw, up, s, d, k] = [lower, upper, shape, dtype, key];
  if (lw === undefined || up === undefined) throw new TypeError(`[${op}] lower and upper are required.`);
  lower = toArray(lw, op);
  upper = toArray(up, op);
  const explicitShape = s === undefined || s === null ? null : checkRandomShape(s, op);
  const dt = checkDtype(d, float32, op);
  const validKey = resolveKey(k, op, stream);
  const o = { stream };
  const outShape = explicitShape ?? broadcastShapes([lower.shape, upper.shape], op);
  if (!isFloating(dt)) throw new TypeError(`[${op}] truncated_normal only accepts floating point dtypes (got ${dt.name}).`);

  const sqrt2 = array(Math.SQRT2, dt);
  const lowerT = astype(lower, dt, o);
  const upperT = astype(upper, dt, o);
  const a = erf(divide(lowerT, sqrt2, o), o);
  const b = erf(divide(upperT, sqrt2, o), o);
  const u = uniformFrom(a, b, outShape, dt, validKey, o, op);
  const out = multiply(sqrt2, erfinv(u, o), o);
  return maximum(minimum(upperT, out, o), lowerT, o);
}

/**
 * Random integers in [low, high), as mx.random.randint(low, high, shape=[], dtype=int32,
 * key=None): floor of a float32 uniform on [low, high), cast to `dtype` and clamped to
 * [low, high − 1] (bounds beyond float32's 2²⁴ integer resolution stay respected, though not
 * every integer is reachable there). high ≤ low gives low everywhere.
 * @example
 * mg.random.randint(0, 10, [4], { key: mg.random.key(0) })
 */
export function randint(
  low: ArrayInput, high: ArrayInput, shape: ShapeArg = [], dtype: Dtype | null = int32, key: MgArray | null = null,
  opts: StreamOptions = {},
): MgArray {
  const op = "randint";
  const stream = resolveStream(opts.stream);
  if (low === undefined || high === undefined) throw new TypeError(`[${op}] low and high are required.`);
  const lo = toArray(low, op);
  const hi = toArray(high, op);
  const outShape = checkRandomShape(shape ?? [], op);
  const dt = checkDtype(dtype, int32, op);
  const validKey = resolveKey(key, op, stream);
  const o = { stream };
  if (isInexact(dt)) throw new TypeError(`[${op}] randint only accepts integer dtypes and bool (got ${dt.name}).`);

  const u = uniformFrom(lo, hi, outShape, float32, validKey, o, op);
  // astype truncates toward zero (-1.7 → -1), so floor first.
  const out = astype(floor(u, o), dt, o);
  const last = astype(subtract(hi, array(1, hi.dtype), o), dt, o);
  return maximum(minimum(out, last, o), astype(lo, dt, o), o);
}

/**
 * Bernoulli samples (bool) with probability p, as mx.random.bernoulli(p=0.5, shape=None,
 * key=None): bits < p·nextafter(2³², ∞), so p ≥ 1 is always true and p ≤ 0 always false.
 * p must be a floating array (a JS integer such as 1 is int32; write 1 as mg.array(1, mg.float32)).
 * @example
 * mg.random.bernoulli(0.5, [4], mg.random.key(0))
 */
export function bernoulli(p: ArrayInput = 0.5, shape: ShapeArg | null = null, key: MgArray | null = null, opts: StreamOptions = {}): MgArray {
  const op = "bernoulli";
  const stream = resolveStream(opts.stream);
  const [pa, s, k] = [p, shape, key];
  p = toArray(pa ?? 0.5, op);
  const explicitShape = s === undefined || s === null ? null : checkRandomShape(s, op);
  const validKey = resolveKey(k, op, stream);
  const o = { stream };
  if (!isFloating(p.dtype)) {
    throw new TypeError(`[${op}] bernoulli probability \`p\` must be a float type (got ${p.dtype.name}).`);
  }
  const drawShape = explicitShape ?? [...p.shape];
  const outShape = broadcastShapes([drawShape, p.shape], op);
  if (!shapesEqual(outShape, drawShape)) {
    throw new RangeError(`[${op}] shape of \`p\` ${formatShape(p.shape)} is incompatible with argument \`shape\` ${formatShape(drawShape)}.`);
  }
  // Just above float32(UINT32_MAX) = 2³²: scales p onto the range of the bits.
  const upper = array(4294967808, float32);
  return less(bitsFromKey(drawShape, 4, validKey, stream), multiply(p, upper, o), o);
}

/**
 * Standard Gumbel samples −log(−log(u)), as mx.random.gumbel(shape=[], dtype=float32, key=None).
 * @example
 * mg.random.gumbel([2], { key: mg.random.key(0) })
 */
export function gumbel(shape: ShapeArg = [], dtype: Dtype | null = float32, key: MgArray | null = null, opts: StreamOptions = {}): MgArray {
  const op = "gumbel";
  const stream = resolveStream(opts.stream);
  return gumbelFrom(checkRandomShape(shape ?? [], op), checkDtype(dtype, float32, op), resolveKey(key, op, stream), { stream }, op);
}

function gumbelFrom(shape: number[], dtype: Dtype, key: MgArray, o: Opts, op: string): MgArray {
  return negative(log(negative(log(unitUniform(shape, dtype, key, o, op), o), o), o), o);
}

/**
 * Laplace samples, as mx.random.laplace(shape=[], dtype=float32, loc=0.0, scale=1.0, key=None):
 * sign(u)·log1p(−|u|) for u uniform on (-1, 1) (the inverse CDF), then scale and shift.
 * loc and scale are numbers (float32 in MLX).
 * @example
 * mg.random.laplace([2], { key: mg.random.key(0) })
 */
export function laplace(
  shape: ShapeArg = [], dtype: Dtype | null = float32, loc = 0.0, scale = 1.0, key: MgArray | null = null, opts: StreamOptions = {},
): MgArray {
  const op = "laplace";
  const stream = resolveStream(opts.stream);
  const outShape = checkRandomShape(shape ?? [], op);
  const dt = checkDtype(dtype, float32, op);
  const l = Math.fround(checkNumber(loc ?? 0, "loc", op));
  const sc = Math.fround(checkNumber(scale ?? 1, "scale", op));
  const validKey = resolveKey(key, op, stream);
  const o = { stream };
  if (!isFloating(dt)) throw new TypeError(`[${op}] Only real floating point types are supported (got ${dt.name}).`);

  const u = symmetricUniform(outShape, validKey, o, op);
  let samples = multiply(sign(u, o), log1p(multiply(array(-1.0, dt), abs(u, o), o), o), o);
  samples = astype(samples, dt, o);
  if (sc !== 1) samples = multiply(array(sc, dt), samples, o);
  if (l !== 0) samples = add(array(l, dt), samples, o);
  return samples;
}

function checkNumber(x: unknown, name: string, op: string): number {
  if (typeof x !== "number") throw new TypeError(`[${op}] ${name} must be a number, got ${describe(x)}.`);
  return x;
}

// ---------------------------------------------------------------------------------------------
// Categorical

/**
 * Samples from categorical distributions given by unnormalised log-probabilities, as
 * mx.random.categorical(logits, axis=-1, shape=None, num_samples=None, key=None); uint32 indices
 * along `axis`. At most one of shape and numSamples: `shape` must broadcast with the logits'
 * shape without `axis`; numSamples draws that many per distribution (a last output axis).
 * Default: one draw per distribution.
 * @example
 * mg.random.categorical(mg.log(mg.array([0.1, 0.9])), { numSamples: 4, key: mg.random.key(0) })
 */
export function categorical(
  logits: ArrayInput, axis = -1, shape: ShapeArg | null = null, numSamples: number | null = null, key: MgArray | null = null,
  opts: StreamOptions = {},
): MgArray {
  const op = "categorical";
  const stream = resolveStream(opts.stream);
  const [lg, a, s, ns, k] = [logits, axis, shape, numSamples, key];
  if (lg === undefined) throw new TypeError(`[${op}] logits are required.`);
  const lgArr = toArray(lg, op);
  const axisArg = a === undefined || a === null ? -1 : checkInt(a, "axis", op);
  const shapeArg = s === undefined || s === null ? null : checkRandomShape(s, op);
  const numSamplesValue = ns === undefined || ns === null ? null : checkInt(ns, "numSamples", op);
  const validKey = resolveKey(k, op, stream);
  const o = { stream };
  if (shapeArg && numSamplesValue !== null) throw new Error(`[${op}] At most one of shape or num_samples can be specified.`);
  const nd = lgArr.ndim;
  if (axisArg < -nd || axisArg >= nd) throw new RangeError(`[${op}] Invalid axis ${axisArg} for logits with ${nd} dimensions.`);
  const ax = normalizeAxis(axisArg, nd, op);

  if (shapeArg) {
    const reduced = lgArr.shape.filter((_, i) => i !== ax);
    const out = broadcastShapes([shapeArg, reduced], op);
    if (!shapesEqual(out, shapeArg)) {
      throw new RangeError(
        `[${op}] Requested shape ${formatShape(shapeArg)} is not broadcast compatible with reduced logits shape ${formatShape(reduced)}.`,
      );
    }
    return categoricalImpl(lgArr, ax, shapeArg, validKey, o);
  }
  if (numSamplesValue !== null) {
    if (numSamplesValue < 0) throw new RangeError(`[${op}] num_samples must be non-negative, got ${numSamplesValue}.`);
    // A trailing unit axis on the logits broadcasts against the samples axis.
    const expanded = expandDims(lgArr, -1, o);
    const sampleShape = expanded.shape.filter((_, i) => i !== ax);
    sampleShape[sampleShape.length - 1] = numSamplesValue;
    return categoricalImpl(expanded, ax, sampleShape, validKey, o);
  }
  return categoricalImpl(lgArr, ax, lgArr.shape.filter((_, i) => i !== ax), validKey, o);
}

function categoricalImpl(logits: MgArray, axis: number, shape: number[], key: MgArray, o: Opts): MgArray {
  const n = logits.shape[axis]!;
  // A single distribution drawn many times: inverse CDF, O(n + samples) instead of O(n·samples).
  if (n > 0 && logits.size === n && shape.length > 0) return categoricalInverseCdf(reshape(logits, [n], o), shape, key, o);
  // Gumbel-max: argmax over the category axis of logits + Gumbel noise.
  const offset = axis + shape.length - logits.ndim + 1;
  const gumbelShape = [...shape];
  gumbelShape.splice(offset, 0, n);
  const g = gumbelFrom(gumbelShape, float32, key, o, "categorical");
  return argmax(add(g, logits, o), offset, false, o);
}

/**
 * Index i with cdf[i] ≤ u·total < cdf[i + 1] for the exclusive cumulative sum of exp(x − max).
 * When the maximum is infinite the distribution is uniform over the entries equal to it.
 */
function categoricalInverseCdf(logits: MgArray, shape: number[], key: MgArray, o: Opts): MgArray {
  const dtype = promoteTypes(logits.dtype, float32);
  const x = astype(logits, dtype, o);
  const m = max(x, null, false, o);
  const w = where(isinf(m, o), astype(equal(x, m, o), dtype, o), exp(subtract(x, m, o), o), o);
  const cdf = cumsum(w, 0, { ...o, reverse: false, inclusive: false });
  const u = multiply(unitUniform(shape, float32, key, o, "categorical"), sum(w, null, false, o), o);
  return subtract(searchsorted(cdf, u, "right", o), array(1, uint32), o);
}

// ---------------------------------------------------------------------------------------------
// Permutation

/**
 * A random permutation, as mx.random.permutation(x, axis=0, key=None): for an integer n, a
 * permutation of arange(n) (uint32: the argsort of n random uint32 words); for an array, its
 * entries along `axis` in a random order.
 * @example
 * mg.random.permutation(5, { key: mg.random.key(0) })
 */
export function permutation(x: number | ArrayInput, axis = 0, key: MgArray | null = null, opts: StreamOptions = {}): MgArray {
  const op = "permutation";
  const stream = resolveStream(opts.stream);
  const [xa, a, k] = [x, axis, key];
  if (xa === undefined || xa === null) throw new TypeError(`[${op}] x (an integer or an array) is required.`);
  const axisArg = a === undefined || a === null ? 0 : checkInt(a, "axis", op);
  const o = { stream };
  if (typeof xa === "number" || typeof xa === "bigint") {
    const n = checkInt(Number(xa), "x", op);
    if (n < 0) throw new RangeError(`[${op}] x must be non-negative, got ${n}.`);
    return argsort(bitsFromKey([n], 4, resolveKey(k, op, stream), stream), -1, o);
  }
  const xs = toArray(xa as ArrayInput, op);
  const ax = normalizeAxis(axisArg, xs.ndim, op);
  const validKey = resolveKey(k, op, stream);
  return take(xs, argsort(bitsFromKey([xs.shape[ax]!], 4, validKey, stream), -1, o), ax, o);
}
