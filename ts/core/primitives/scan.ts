// Cumulative reductions along one axis (MLX's Scan): sum, prod, max, min, logaddexp; reverse and
// inclusive/exclusive.
import type { MgArray } from "../array.ts";
import { int64, uint64 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";
import { logaddexp } from "../../backend/cpu/math.ts";
import { readBigints, readNumbers, writeBigints, writeNumbers } from "../../backend/cpu/values.ts";

export type ScanType = "sum" | "prod" | "max" | "min" | "logaddexp";

export interface ScanParams {
  type: ScanType;
  axis: number;
  reverse: boolean;
  inclusive: boolean;
}

const IDENTITY: Record<ScanType, number> = { sum: 0, prod: 1, max: -Infinity, min: Infinity, logaddexp: -Infinity };

function combine(type: ScanType, acc: number, v: number, int32: boolean): number {
  switch (type) {
    case "sum": return acc + v;
    case "prod": return int32 ? Math.imul(acc, v) : acc * v;
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

export const Scan: Primitive<ScanParams> = {
  name: "Scan",
  outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  cpu([a], [out], p) {
    const x = a!;
    const d = out!.dtype;
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
    const int32 = (d.kind === "i" || d.kind === "u") && d.size === 4;
    const init = p.type === "max" && (d.kind === "i" || d.kind === "u") ? -Infinity : IDENTITY[p.type];
    forEachLane(x.shape, p.axis, (base, stride, n) => {
      let acc = init;
      for (let k = 0; k < n; k++) {
        const i = base + stride * (p.reverse ? n - 1 - k : k);
        const next = k === 0 && (p.type === "max" || p.type === "min") ? v[i]! : combine(p.type, acc, v[i]!, int32);
        r[i] = p.inclusive ? next : acc;
        acc = next;
      }
    });
    writeNumbers(out!, r);
  },
  paramsKey: (p) => `${p.type}|${p.axis}|${p.reverse}|${p.inclusive}`,
};

export type { MgArray };
