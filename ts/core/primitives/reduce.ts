// Reductions over a set of axes (MLX's Reduce). The output keeps reduced axes as size 1; the op
// squeezes them unless keepdims.
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { bool_, complex64, type Dtype, int64, uint64 } from "../dtype.ts";
import { makeArray } from "../graph.ts";
import type { Primitive } from "../primitive.ts";
import { readBigints, readComplex, readNumbers, writeBigints, writeComplex, writeNumbers } from "../../backend/cpu/values.ts";
// The rules are written in ops built on this primitive: the import cycle is harmless because
// nothing is called while the modules load.
import { zerosLike } from "../ops/creation.ts";
import * as ew from "../ops/elementwise.ts";
import { cumprod, sum } from "../ops/reduce.ts";
import { broadcastTo, flip, reshape as reshapeTo, transpose as transposeTo } from "../ops/shape.ts";
import { argmax, argmin } from "../ops/sort.ts";
import { takeAlongAxis } from "../ops/indexing.ts";
import { reduceRule } from "../../backend/gpu/reduce.ts";

export type ReduceType = "sum" | "prod" | "max" | "min" | "and" | "or";

export interface ReduceParams {
  type: ReduceType;
  /** Sorted, normalised axes. */
  axes: number[];
}

/** For each input element (row-major), the index of the output element it reduces into. */
export function reductionTargets(shape: readonly number[], axes: readonly number[]): Int32Array {
  const nd = shape.length;
  const outStrides = new Array<number>(nd).fill(0);
  let s = 1;
  for (let i = nd - 1; i >= 0; i--) {
    if (!axes.includes(i)) {
      outStrides[i] = s;
      s *= shape[i]!;
    }
  }
  let size = 1;
  for (const d of shape) size *= d;
  const out = new Int32Array(size);
  if (size === 0) return out;
  const idx = new Array<number>(nd).fill(0);
  let target = 0;
  for (let i = 0; i < size; i++) {
    out[i] = target;
    for (let k = nd - 1; k >= 0; k--) {
      idx[k]!++;
      target += outStrides[k]!;
      if (idx[k]! < shape[k]!) break;
      target -= outStrides[k]! * shape[k]!;
      idx[k] = 0;
    }
  }
  return out;
}

function outSize(shape: readonly number[], axes: readonly number[]): number {
  let n = 1;
  shape.forEach((d, i) => {
    if (!axes.includes(i)) n *= d;
  });
  return n;
}

/**
 * `wrap32` is set for 32-bit integer outputs (sums and products are int32/uint32 there): every
 * step then wraps exactly like C (`| 0`, `Math.imul`), instead of losing low bits in a float64
 * accumulator once totals pass 2^53.
 */
function reduceNumbers(type: ReduceType, values: Float64Array, targets: Int32Array, n: number, wrap32: boolean): Float64Array {
  const out = new Float64Array(n);
  const init = type === "sum" || type === "or" ? 0 : type === "prod" || type === "and" ? 1 : type === "max" ? -Infinity : Infinity;
  out.fill(init);
  switch (type) {
    case "sum":
      if (wrap32) for (let i = 0; i < values.length; i++) out[targets[i]!] = (out[targets[i]!]! + values[i]!) | 0;
      else for (let i = 0; i < values.length; i++) out[targets[i]!]! += values[i]!;
      break;
    case "prod":
      if (wrap32) for (let i = 0; i < values.length; i++) out[targets[i]!] = Math.imul(out[targets[i]!]!, values[i]!);
      else for (let i = 0; i < values.length; i++) out[targets[i]!]! *= values[i]!;
      break;
    case "max":
      // NaN propagates: once a slot is NaN it stays NaN.
      for (let i = 0; i < values.length; i++) {
        const t = targets[i]!;
        const v = values[i]!;
        const o = out[t]!;
        if (v !== v || v > o) out[t] = o !== o ? o : v;
      }
      break;
    case "min":
      for (let i = 0; i < values.length; i++) {
        const t = targets[i]!;
        const v = values[i]!;
        const o = out[t]!;
        if (v !== v || v < o) out[t] = o !== o ? o : v;
      }
      break;
    case "and":
      for (let i = 0; i < values.length; i++) if (values[i] === 0) out[targets[i]!] = 0;
      break;
    case "or":
      for (let i = 0; i < values.length; i++) if (values[i] !== 0) out[targets[i]!] = 1;
      break;
  }
  return out;
}

function reduceBigints(type: ReduceType, values: bigint[], targets: Int32Array, n: number, dtype: Dtype): bigint[] {
  let out: bigint[];
  if (type === "sum") out = new Array<bigint>(n).fill(0n);
  else if (type === "prod") out = new Array<bigint>(n).fill(1n);
  else {
    // max/min start from the first element reaching each slot
    out = new Array<bigint>(n);
    const seen = new Uint8Array(n);
    for (let i = 0; i < values.length; i++) {
      const t = targets[i]!;
      const v = values[i]!;
      if (!seen[t] || (type === "max" ? v > out[t]! : v < out[t]!)) out[t] = v;
      seen[t] = 1;
    }
    return out;
  }
  const wrap = dtype === uint64 ? (v: bigint) => BigInt.asUintN(64, v) : (v: bigint) => BigInt.asIntN(64, v);
  for (let i = 0; i < values.length; i++) {
    const t = targets[i]!;
    out[t] = wrap(type === "sum" ? out[t]! + values[i]! : out[t]! * values[i]!);
  }
  return out;
}

/** Complex max/min order by real part, then imaginary part (MLX); all/any test both parts. */
function writeComplexOrder(type: ReduceType, v: Float64Array, targets: Int32Array, n: number, out: MgArray): void {
  if (type === "and" || type === "or") {
    const r = new Float64Array(n).fill(type === "and" ? 1 : 0);
    for (let i = 0; i < targets.length; i++) {
      const nonzero = v[2 * i] !== 0 || v[2 * i + 1] !== 0;
      if (type === "and" && !nonzero) r[targets[i]!] = 0;
      if (type === "or" && nonzero) r[targets[i]!] = 1;
    }
    writeNumbers(out, r);
    return;
  }
  const r = new Float64Array(2 * n);
  const seen = new Uint8Array(n);
  for (let i = 0; i < targets.length; i++) {
    const t = targets[i]!;
    const re = v[2 * i]!;
    const im = v[2 * i + 1]!;
    if (seen[t]) {
      const cr = r[2 * t]!;
      const ci = r[2 * t + 1]!;
      if (cr !== cr || ci !== ci) continue; // a NaN already won
      const nan = re !== re || im !== im;
      const better = type === "max" ? re > cr || (re === cr && im > ci) : re < cr || (re === cr && im < ci);
      if (!nan && !better) continue;
    }
    seen[t] = 1;
    r[2 * t] = re;
    r[2 * t + 1] = im;
  }
  writeComplex(out, r);
}

export const Reduce: Primitive<ReduceParams> = {
  name: "Reduce",
  gpu: reduceRule,
  outputSpecs([a], p) {
    const shape = a!.shape.map((d, i) => (p.axes.includes(i) ? 1 : d));
    let dtype = a!.dtype;
    if (p.type === "and" || p.type === "or") dtype = bool_;
    return [{ shape, dtype }];
  },
  cpu([a], [out], p) {
    const targets = reductionTargets(a!.shape, p.axes);
    const n = outSize(a!.shape, p.axes);
    const od = out!.dtype;
    if (a!.dtype === complex64 && (p.type === "max" || p.type === "min" || p.type === "and" || p.type === "or")) {
      writeComplexOrder(p.type, readComplex(a!), targets, n, out!);
    } else if (a!.dtype === complex64 && (p.type === "sum" || p.type === "prod")) {
      const v = readComplex(a!);
      const r = new Float64Array(2 * n);
      if (p.type === "prod") for (let i = 0; i < n; i++) r[2 * i] = 1;
      for (let i = 0; i < targets.length; i++) {
        const t = targets[i]!;
        if (p.type === "sum") {
          r[2 * t]! += v[2 * i]!;
          r[2 * t + 1]! += v[2 * i + 1]!;
        } else {
          const re = r[2 * t]! * v[2 * i]! - r[2 * t + 1]! * v[2 * i + 1]!;
          r[2 * t + 1] = r[2 * t]! * v[2 * i + 1]! + r[2 * t + 1]! * v[2 * i]!;
          r[2 * t] = re;
        }
      }
      writeComplex(out!, r);
    } else if ((od === int64 || od === uint64) && p.type !== "and" && p.type !== "or") {
      writeBigints(out!, reduceBigints(p.type, readBigints(a!), targets, n, od));
    } else {
      const isInt32 = (od.kind === "i" || od.kind === "u") && od.size === 4;
      // (int32 and uint32 share the same low 32 bits; the uint32 store reinterprets them)
      writeNumbers(out!, reduceNumbers(p.type, readNumbers(a!), targets, n, isInt32));
    }
  },
  vjp([a], [g], _argnums, [y], p) {
    const x = a!;
    switch (p.type) {
      case "sum":
        // Every input element contributes once: the cotangent broadcasts back.
        return [broadcastTo(g!, x.shape)];
      case "prod": {
        // ∂(∏x)/∂xᵢ = ∏_{j≠i} xⱼ, computed without dividing by xᵢ (stable with zeros).
        // Complex: the conjugate derivative (MLX's convention, as for multiply).
        return [ew.multiply(broadcastTo(g!, x.shape), ew.conjugate(productOfOthers(x, p.axes)))];
      }
      case "max":
      case "min": {
        // Ties share the gradient equally.
        const mask = ew.astype(ew.equal(x, broadcastTo(y!, x.shape)), x.dtype);
        const count = ew.astype(sum(mask, p.axes, true), x.dtype);
        return [ew.multiply(broadcastTo(ew.divide(g!, count), x.shape), mask)];
      }
      default:
        return [zerosLike(x)];
    }
  },
  jvp([a], [t], _argnums, [y], p) {
    const x = a!;
    switch (p.type) {
      case "sum":
        return [sum(t!, p.axes, true)];
      case "prod":
        return [sum(ew.multiply(t!, productOfOthers(x, p.axes)), p.axes, true)];
      case "max":
      case "min":
        // MLX's rule: the tangent of the first extreme element (argmax/argmin), not the mean over
        // ties the vjp uses — MLX's two rules differ at ties, and metalgrad follows both.
        return [tangentAtFirstExtreme(x, t!, p.axes, p.type === "max")];
      default:
        return [zerosLike(y!)];
    }
  },
  // Reduced axes keep size 1, so the batch axis stays where it is; axes at or after it shift.
  vmap([a], [ax], p) {
    const axes = p.axes.map((r) => (r >= ax! ? r + 1 : r));
    return [[makeArray(Reduce, [a!], { type: p.type, axes }, resolveStream())], [ax!]];
  },
  paramsKey: (p) => `${p.type}|${p.axes.join(",")}`,
};

/** Moves `axes` last and flattens them into one: [array, the permutation used]. */
function reducedAxesLast(x: MgArray, axes: readonly number[]): [MgArray, number[]] {
  const keep = Array.from({ length: x.ndim }, (_, i) => i).filter((i) => !axes.includes(i));
  const perm = [...keep, ...axes];
  const n = axes.reduce((acc, i) => acc * x.shape[i]!, 1);
  return [reshapeTo(transposeTo(x, perm), [...keep.map((i) => x.shape[i]!), n]), perm];
}

/** t at the first maximum (minimum) of x over `axes`, shaped as the reduction's output. */
function tangentAtFirstExtreme(x: MgArray, t: MgArray, axes: readonly number[], isMax: boolean): MgArray {
  const [xs] = reducedAxesLast(x, axes);
  const [ts] = reducedAxesLast(broadcastTo(t, x.shape), axes);
  const at = isMax ? argmax(xs, -1, true) : argmin(xs, -1, true);
  return reshapeTo(takeAlongAxis(ts, at, -1), x.shape.map((d, i) => (axes.includes(i) ? 1 : d)));
}

/** For each element, the product of the other elements along the reduced axes. */
function productOfOthers(x: MgArray, axes: readonly number[]): MgArray {
  // Move the reduced axes last and flatten them; then "product of the others" is the product of
  // an exclusive prefix scan and an exclusive suffix scan — no division, so zeros are fine.
  const nd = x.ndim;
  const [flat, perm] = reducedAxesLast(x, axes);
  const left = cumprod(flat, -1, { inclusive: false });
  const right = flip(cumprod(flip(flat, -1), -1, { inclusive: false }), -1);
  const others = ew.multiply(left, right);
  const back = reshapeTo(others, perm.map((i) => x.shape[i]!));
  const inverse = new Array<number>(nd);
  perm.forEach((p, i) => (inverse[p] = i));
  return transposeTo(back, inverse);
}
