// CPU kernel of Scan (ts/core/primitives/scan.ts): cumulative sums, products, extremes and
// log-sum-exps along one axis, in float64 (BigInt for 64-bit integers, pairs for complex).
import { bool_, complex64, int64, uint64 } from "../../core/dtype.ts";
import { Scan, type ScanParams, type ScanType } from "../../core/primitives/scan.ts";
import { logaddexp } from "./math.ts";
import { registerCpu } from "./registry.ts";
import { readBigints, readComplex, readNumbers, writeBigints, writeComplex, writeNumbers } from "./values.ts";

const IDENTITY: Record<ScanType, number> = { sum: 0, prod: 1, max: -Infinity, min: Infinity, logaddexp: -Infinity };

/** One scan step in float64 (integer sums and products wrap separately). */
function combine(type: ScanType, acc: number, v: number): number {
  switch (type) {
    case "sum": return acc + v;
    case "prod": return acc * v;
    case "max": return acc !== acc || v !== v ? NaN : v > acc ? v : acc;
    case "min": return acc !== acc || v !== v ? NaN : v < acc ? v : acc;
    case "logaddexp": return logaddexp(acc, v);
  }
}

/** Visits each 1-D lane along `axis` of a row-major array of `shape`: (base, stride, length). */
export function forEachLane(shape: readonly number[], axis: number, fn: (base: number, stride: number, n: number) => void): void {
  const n = shape[axis]!;
  let inner = 1;
  for (let i = axis + 1; i < shape.length; i++) inner *= shape[i]!;
  let outer = 1;
  for (let i = 0; i < axis; i++) outer *= shape[i]!;
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < inner; j++) fn(o * n * inner + j, inner, n);
  }
}

/** Complex cumulative sums and products on interleaved (re, im) values. */
function complexScan(v: Float64Array, shape: readonly number[], p: ScanParams): Float64Array {
  const r = new Float64Array(v.length);
  forEachLane(shape, p.axis, (base, stride, n) => {
    let re = p.type === "prod" ? 1 : 0;
    let im = 0;
    for (let k = 0; k < n; k++) {
      const i = base + stride * (p.reverse ? n - 1 - k : k);
      const [xr, xi] = [v[2 * i]!, v[2 * i + 1]!];
      const [nr, ni] = p.type === "sum" ? [re + xr, im + xi] : [re * xr - im * xi, re * xi + im * xr];
      r[2 * i] = p.inclusive ? nr : re;
      r[2 * i + 1] = p.inclusive ? ni : im;
      re = nr;
      im = ni;
    }
  });
  return r;
}

/** Wraps an integer held in a double to `bits` (≤ 32), as a C store into that type. */
function wrapper(bits: number, signed: boolean): (x: number) => number {
  if (bits === 32) return signed ? (x) => x | 0 : (x) => x >>> 0;
  const shift = 32 - bits;
  return signed ? (x) => ((x | 0) << shift) >> shift : (x) => (x | 0) & ((1 << bits) - 1);
}

registerCpu(Scan, ([a], [out], p) => {
  const x = a!;
  const d = out!.dtype;
  if (d === complex64 && (p.type === "sum" || p.type === "prod")) {
    writeComplex(out!, complexScan(readComplex(x), x.shape, p));
    return;
  }
  if ((d === int64 || d === uint64) && (p.type === "sum" || p.type === "prod" || p.type === "max" || p.type === "min")) {
    const v = readBigints(x);
    const r = new Array<bigint>(v.length);
    const wrap = d === int64 ? (z: bigint) => BigInt.asIntN(64, z) : (z: bigint) => BigInt.asUintN(64, z);
    forEachLane(x.shape, p.axis, (base, stride, n) => {
      let acc: bigint | null = null;
      for (let k = 0; k < n; k++) {
        const i = base + stride * (p.reverse ? n - 1 - k : k);
        const val = v[i]!;
        const next: bigint = acc === null ? val : p.type === "sum" ? wrap(acc + val) : p.type === "prod" ? wrap(acc * val) : p.type === "max" ? (val > acc ? val : acc) : (val < acc ? val : acc);
        if (p.inclusive) r[i] = next;
        else r[i] = acc ?? (p.type === "sum" ? 0n : p.type === "prod" ? 1n : p.type === "max" ? (d === uint64 ? 0n : -(2n ** 63n)) : (d === uint64 ? 2n ** 64n - 1n : 2n ** 63n - 1n));
        acc = next;
      }
    });
    writeBigints(out!, r);
    return;
  }
  const v = readNumbers(x);
  const r = new Float64Array(v.length);
  const isInt = d.kind === "i" || d.kind === "u";
  // Integer sums and products wrap at the dtype's width on every step (as C does), so results
  // stay exact however large the running value gets.
  const wrap = isInt ? wrapper(d.size * 8, d.kind === "i") : null;
  // Exclusive scans start from the identity: the dtype's extremes for integer max/min.
  let init = IDENTITY[p.type];
  if (isInt && p.type === "max") init = d.kind === "u" ? 0 : -(2 ** (d.size * 8 - 1));
  if (isInt && p.type === "min") init = d.kind === "u" ? 2 ** (d.size * 8) - 1 : 2 ** (d.size * 8 - 1) - 1;
  if (d === bool_) init = p.type === "min" || p.type === "prod" ? 1 : 0;
  forEachLane(x.shape, p.axis, (base, stride, n) => {
    let acc = init;
    for (let k = 0; k < n; k++) {
      const i = base + stride * (p.reverse ? n - 1 - k : k);
      let next: number;
      if (k === 0 && (p.type === "max" || p.type === "min")) next = v[i]!;
      else if (wrap && p.type === "sum") next = wrap(acc + v[i]!);
      else if (wrap && p.type === "prod") next = wrap(Math.imul(acc, v[i]!));
      else next = combine(p.type, acc, v[i]!);
      r[i] = p.inclusive ? next : acc;
      acc = next;
    }
  });
  writeNumbers(out!, r);
});
