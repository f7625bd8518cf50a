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
import {
  checkDtype, checkInt, checkRandomShape, describe, parseArgs, type RandomArgs, type ShapeArg,
} from "./args.ts";
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
 */
export function uniform(
  ...args: RandomArgs<[low: ArrayInput, high: ArrayInput, shape: ShapeArg, dtype: Dtype | null, key: MgArray | null]>
): MgArray {
  const op = "uniform";
  const { positional: [low, high, s, d, k], stream } = parseArgs(op, args, ["low", "high", "shape", "dtype", "key"]);
  const lo = toArray((low ?? 0) as ArrayInput, op);
  const hi = toArray((high ?? 1) as ArrayInput, op);
  const shape = checkRandomShape(s ?? [], op);
  const dtype = checkDtype(d, float32, op);
  const key = resolveKey(k, op, stream);
  return uniformFrom(lo, hi, shape, dtype, key, { stream }, op);
}

/**
 * Normal samples, as mx.random.normal(shape=[], dtype=float32, loc=None, scale=None, key=None):
 * loc + scale·√2·erfinv(u) with u uniform on (-1, 1). For complex64 the real and imaginary
 * parts are each N(0, 1/2) (erfinv of two uniforms, without the √2).
 */
export function normal(
  ...args: RandomArgs<[shape: ShapeArg, dtype: Dtype | null, loc: ArrayInput | null, scale: ArrayInput | null, key: MgArray | null]>
): MgArray {
  const op = "normal";
  const { positional: [s, d, l, sc, k], stream } = parseArgs(op, args, ["shape", "dtype", "loc", "scale", "key"]);
  const shape = checkRandomShape(s ?? [], op);
  const dtype = checkDtype(d, float32, op);
  const key = resolveKey(k, op, stream);
  const o = { stream };
  const loc = l === undefined || l === null ? null : paramArray(l as ArrayInput, dtype, op);
  const scale = sc === undefined || sc === null ? null : paramArray(sc as ArrayInput, dtype, op);
  if (dtype === complex64) return complexNormal(shape, loc, scale, key, o);
  if (!isFloating(dtype)) throw new TypeError(`[${op}] Only floating point and complex64 types are supported (got ${dtype.name}).`);

  const u = symmetricUniform(shape, key, o, op);
  let appliedScale = array(Math.SQRT2, dtype);
  if (scale) appliedScale = multiply(appliedScale, astype(scale, dtype, o), o);
  let samples = astype(erfinv(u, o), dtype, o);
  samples = multiply(appliedScale, samples, o);
  if (loc) samples = add(astype(loc, dtype, o), samples, o);
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
 */
export function truncatedNormal(
  ...args: RandomArgs<[lower: ArrayInput, upper: ArrayInput, shape: ShapeArg | null, dtype: Dtype | null, key: MgArray | null]>
): MgArray {
  const op = "truncated_normal";
  const { positional: [lw, up, s, d, k], stream } = parseArgs(op, args, ["lower", "upper", "shape", "dtype", "key"]);
  if (lw === undefined || up === undefined) throw new TypeError(`[${op}] lower and upper are required.`);
  const lower = toArray(lw as ArrayInput, op);
  const upper = toArray(up as ArrayInput, op);
  const explicitShape = s === undefined || s === null ? null : checkRandomShape(s, op);
  const dtype = checkDtype(d, float32, op);
  const key = resolveKey(k, op, stream);
  const o = { stream };
  const shape = explicitShape ?? broadcastShapes([lower.shape, upper.shape], op);
  if (!isFloating(dtype)) throw new TypeError(`[${op}] truncated_normal only accepts floating point dtypes (got ${dtype.name}).`);

  const sqrt2 = array(Math.SQRT2, dtype);
  const lowerT = astype(lower, dtype, o);
  const upperT = astype(upper, dtype, o);
  const a = erf(divide(lowerT, sqrt2, o), o);
  const b = erf(divide(upperT, sqrt2, o), o);
  const u = uniformFrom(a, b, shape, dtype, key, o, op);
  const out = multiply(sqrt2, erfinv(u, o), o);
  return maximum(minimum(upperT, out, o), lowerT, o);
}

/**
 * Random integers in [low, high), as mx.random.randint(low, high, shape=[], dtype=int32,
 * key=None): floor of a float32 uniform on [low, high), cast to `dtype` and clamped to
 * [low, high − 1] (bounds beyond float32's 2²⁴ integer resolution stay respected, though not
 * every integer is reachable there). high ≤ low gives low everywhere.
 */
export function randint(
  ...args: RandomArgs<[low: ArrayInput, high: ArrayInput, shape: ShapeArg, dtype: Dtype | null, key: MgArray | null]>
): MgArray {
  const op = "randint";
  const { positional: [l, h, s, d, k], stream } = parseArgs(op, args, ["low", "high", "shape", "dtype", "key"]);
  if (l === undefined || h === undefined) throw new TypeError(`[${op}] low and high are required.`);
  const low = toArray(l as ArrayInput, op);
  const high = toArray(h as ArrayInput, op);
  const shape = checkRandomShape(s ?? [], op);
  const dtype = checkDtype(d, int32, op);
  const key = resolveKey(k, op, stream);
  const o = { stream };
  if (isInexact(dtype)) throw new TypeError(`[${op}] randint only accepts integer dtypes and bool (got ${dtype.name}).`);

  const u = uniformFrom(low, high, shape, float32, key, o, op);
  // astype truncates toward zero (-1.7 → -1), so floor first.
  const out = astype(floor(u, o), dtype, o);
  const last = astype(subtract(high, array(1, high.dtype), o), dtype, o);
  return maximum(minimum(out, last, o), astype(low, dtype, o), o);
}

/**
 * Bernoulli samples (bool) with probability p, as mx.random.bernoulli(p=0.5, shape=None,
 * key=None): bits < p·nextafter(2³², ∞), so p ≥ 1 is always true and p ≤ 0 always false.
 * p must be a floating array (a JS integer such as 1 is int32; write 1 as mg.array(1, mg.float32)).
 */
export function bernoulli(...args: RandomArgs<[p: ArrayInput, shape: ShapeArg | null, key: MgArray | null]>): MgArray {
  const op = "bernoulli";
  const { positional: [pa, s, k], stream } = parseArgs(op, args, ["p", "shape", "key"]);
  const p = toArray((pa ?? 0.5) as ArrayInput, op);
  const explicitShape = s === undefined || s === null ? null : checkRandomShape(s, op);
  const key = resolveKey(k, op, stream);
  const o = { stream };
  if (!isFloating(p.dtype)) {
    throw new TypeError(`[${op}] bernoulli probability \`p\` must be a float type (got ${p.dtype.name}).`);
  }
  const shape = explicitShape ?? [...p.shape];
  const outShape = broadcastShapes([shape, p.shape], op);
  if (!shapesEqual(outShape, shape)) {
    throw new RangeError(`[${op}] shape of \`p\` ${formatShape(p.shape)} is incompatible with argument \`shape\` ${formatShape(shape)}.`);
  }
  // Just above float32(UINT32_MAX) = 2³²: scales p onto the range of the bits.
  const upper = array(4294967808, float32);
  return less(bitsFromKey(shape, 4, key, stream), multiply(p, upper, o), o);
}

/** Standard Gumbel samples −log(−log(u)), as mx.random.gumbel(shape=[], dtype=float32, key=None). */
export function gumbel(...args: RandomArgs<[shape: ShapeArg, dtype: Dtype | null, key: MgArray | null]>): MgArray {
  const op = "gumbel";
  const { positional: [s, d, k], stream } = parseArgs(op, args, ["shape", "dtype", "key"]);
  const shape = checkRandomShape(s ?? [], op);
  const dtype = checkDtype(d, float32, op);
  const key = resolveKey(k, op, stream);
  return gumbelFrom(shape, dtype, key, { stream }, op);
}

function gumbelFrom(shape: number[], dtype: Dtype, key: MgArray, o: Opts, op: string): MgArray {
  return negative(log(negative(log(unitUniform(shape, dtype, key, o, op), o), o), o), o);
}

/**
 * Laplace samples, as mx.random.laplace(shape=[], dtype=float32, loc=0.0, scale=1.0, key=None):
 * sign(u)·log1p(−|u|) for u uniform on (-1, 1) (the inverse CDF), then scale and shift.
 * loc and scale are numbers (float32 in MLX).
 */
export function laplace(
  ...args: RandomArgs<[shape: ShapeArg, dtype: Dtype | null, loc: number, scale: number, key: MgArray | null]>
): MgArray {
  const op = "laplace";
  const { positional: [s, d, l, sc, k], stream } = parseArgs(op, args, ["shape", "dtype", "loc", "scale", "key"]);
  const shape = checkRandomShape(s ?? [], op);
  const dtype = checkDtype(d, float32, op);
  const loc = Math.fround(checkNumber(l ?? 0, "loc", op));
  const scale = Math.fround(checkNumber(sc ?? 1, "scale", op));
  const key = resolveKey(k, op, stream);
  const o = { stream };
  if (!isFloating(dtype)) throw new TypeError(`[${op}] Only real floating point types are supported (got ${dtype.name}).`);

  const u = symmetricUniform(shape, key, o, op);
  let samples = multiply(sign(u, o), log1p(multiply(array(-1.0, dtype), abs(u, o), o), o), o);
  samples = astype(samples, dtype, o);
  if (scale !== 1) samples = multiply(array(scale, dtype), samples, o);
  if (loc !== 0) samples = add(array(loc, dtype), samples, o);
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
 */
export function categorical(
  ...args: RandomArgs<[logits: ArrayInput, axis: number, shape: ShapeArg | null, numSamples: number | null, key: MgArray | null]>
): MgArray {
  const op = "categorical";
  const { positional: [lg, a, s, ns, k], stream } = parseArgs(op, args, ["logits", "axis", "shape", "numSamples", "key"]);
  if (lg === undefined) throw new TypeError(`[${op}] logits are required.`);
  const logits = toArray(lg as ArrayInput, op);
  const axisArg = a === undefined || a === null ? -1 : checkInt(a, "axis", op);
  const shapeArg = s === undefined || s === null ? null : checkRandomShape(s, op);
  const numSamples = ns === undefined || ns === null ? null : checkInt(ns, "numSamples", op);
  const key = resolveKey(k, op, stream);
  const o = { stream };
  if (shapeArg && numSamples !== null) throw new Error(`[${op}] At most one of shape or num_samples can be specified.`);
  const nd = logits.ndim;
  if (axisArg < -nd || axisArg >= nd) throw new RangeError(`[${op}] Invalid axis ${axisArg} for logits with ${nd} dimensions.`);
  const axis = normalizeAxis(axisArg, nd, op);

  if (shapeArg) {
    const reduced = logits.shape.filter((_, i) => i !== axis);
    const out = broadcastShapes([shapeArg, reduced], op);
    if (!shapesEqual(out, shapeArg)) {
      throw new RangeError(
        `[${op}] Requested shape ${formatShape(shapeArg)} is not broadcast compatible with reduced logits shape ${formatShape(reduced)}.`,
      );
    }
    return categoricalImpl(logits, axis, shapeArg, key, o);
  }
  if (numSamples !== null) {
    if (numSamples < 0) throw new RangeError(`[${op}] num_samples must be non-negative, got ${numSamples}.`);
    // A trailing unit axis on the logits broadcasts against the samples axis.
    const expanded = expandDims(logits, -1, o);
    const shape = expanded.shape.filter((_, i) => i !== axis);
    shape[shape.length - 1] = numSamples;
    return categoricalImpl(expanded, axis, shape, key, o);
  }
  return categoricalImpl(logits, axis, logits.shape.filter((_, i) => i !== axis), key, o);
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
 */
export function permutation(...args: RandomArgs<[x: number | ArrayInput, axis: number, key: MgArray | null]>): MgArray {
  const op = "permutation";
  const { positional: [xa, a, k], stream } = parseArgs(op, args, ["x", "axis", "key"]);
  if (xa === undefined || xa === null) throw new TypeError(`[${op}] x (an integer or an array) is required.`);
  const axisArg = a === undefined || a === null ? 0 : checkInt(a, "axis", op);
  const o = { stream };
  if (typeof xa === "number" || typeof xa === "bigint") {
    const n = checkInt(Number(xa), "x", op);
    if (n < 0) throw new RangeError(`[${op}] x must be non-negative, got ${n}.`);
    return argsort(bitsFromKey([n], 4, resolveKey(k, op, stream), stream), -1, o);
  }
  const x = toArray(xa as ArrayInput, op);
  const axis = normalizeAxis(axisArg, x.ndim, op);
  const key = resolveKey(k, op, stream);
  return take(x, argsort(bitsFromKey([x.shape[axis]!], 4, key, stream), -1, o), axis, o);
}
