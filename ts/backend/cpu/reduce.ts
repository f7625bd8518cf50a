// CPU kernels of Reduce and ArgReduce (ts/core/primitives/reduce.ts, argreduce.ts), computed in
// float64 (BigInt for 64-bit integers, pairs for complex) and rounded once to the output dtype.
import type { MgArray } from "../../core/array.ts";
import { complex64, type Dtype, int64, uint64 } from "../../core/dtype.ts";
import { ArgReduce } from "../../core/primitives/argreduce.ts";
import { Reduce, type ReduceType } from "../../core/primitives/reduce.ts";
import { registerCpu } from "./registry.ts";
import { argReduceLanes, readKeys } from "./sort.ts";
import { readBigints, readComplex, readNumbers, writeBigints, writeComplex, writeNumbers } from "./values.ts";

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

registerCpu(Reduce, ([a], [out], p) => {
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
});

registerCpu(ArgReduce, ([a], [out], p) => {
  writeNumbers(out!, argReduceLanes(readKeys(a!), a!.shape, p.axis, p.type === "argmax"));
});
