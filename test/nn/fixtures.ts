// MLX's numbers for mg.nn / mg.optimizers (test/fixtures/mlx-nn, written by
// scripts/mlx-nn-fixtures.py): decoding arrays and comparing results with them.
import { expect } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as mg from "../../ts/index.ts";

/** An array as the fixtures store it. */
export interface Enc {
  shape: number[];
  dtype: string;
  data: (number | string)[];
}

export interface Tolerance {
  rtol: number;
  atol: number;
}

/** Compositions of float32 ops with other summation orders than MLX's: a few ulps of the
 *  largest intermediate. */
export const DEFAULT_TOL: Tolerance = { rtol: 2e-5, atol: 2e-5 };

export function loadFixture<T>(name: string): { mlx: string; cases: T[] } {
  return JSON.parse(readFileSync(join(import.meta.dir, "../fixtures/mlx-nn", `${name}.json`), "utf8"));
}

export function isEnc(v: unknown): v is Enc {
  return v !== null && typeof v === "object" && "shape" in v && "dtype" in v && "data" in v;
}

function value(x: number | string): number {
  if (x === "nan") return NaN;
  if (x === "inf") return Infinity;
  if (x === "-inf") return -Infinity;
  return x as number;
}

/** Fixture values as metalgrad values: arrays (on the default stream) inside lists and objects. */
export function decode(v: unknown): any {
  if (isEnc(v)) {
    const dtype = (mg as unknown as Record<string, mg.Dtype>)[v.dtype === "bool" ? "bool_" : v.dtype]!;
    if (v.dtype === "bool") return mg.array(v.data.map((x) => x === 1 || x === true as unknown), mg.bool_).reshape(v.shape);
    if (dtype === mg.uint64 || dtype === mg.int64) return mg.array(v.data.map((x) => BigInt(x as number)), dtype).reshape(v.shape);
    return mg.array(v.data.map(value), dtype).reshape(v.shape);
  }
  if (Array.isArray(v)) return v.map(decode);
  if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, decode(x)]));
  return v;
}

/** [name, array] pairs from the fixtures' [name, Enc] pairs. */
export function decodePairs(pairs: [string, Enc][]): [string, mg.MgArray][] {
  return pairs.map(([k, v]) => [k, decode(v) as mg.MgArray]);
}

/** The largest |got − want| − rtol·|want| over the elements (≤ atol passes). */
export function expectClose(got: unknown, want: Enc, where: string, tol: Tolerance = DEFAULT_TOL): void {
  expect(got instanceof mg.MgArray, `${where}: expected an array, got ${String(got)}`).toBe(true);
  const a = got as mg.MgArray;
  expect([...a.shape], `${where}: shape`).toEqual(want.shape);
  expect(a.dtype.name as string, `${where}: dtype`).toBe(want.dtype);
  const data = Array.from(mg.astype(a, a.dtype === mg.bool_ || mg.isInteger(a.dtype) ? mg.float64 : mg.float32, { stream: mg.cpu }).dataSync() as ArrayLike<number>);
  let worst = 0;
  let at = -1;
  // The fixtures store the shortest decimal of each float32: read it back as that float32.
  const exact = want.dtype === "float32" ? Math.fround : (v: number) => v;
  want.data.forEach((w0, i) => {
    const w = exact(value(w0));
    const g = data[i]!;
    if (Number.isNaN(w)) {
      if (!Number.isNaN(g)) [worst, at] = [Infinity, i];
      return;
    }
    if (!Number.isFinite(w)) {
      if (g !== w) [worst, at] = [Infinity, i];
      return;
    }
    const excess = Math.abs(g - w) - tol.rtol * Math.abs(w);
    if (excess > worst || Number.isNaN(excess)) [worst, at] = [Number.isNaN(excess) ? Infinity : excess, i];
  });
  if (worst > tol.atol) {
    throw new Error(`${where}: element ${at} is ${data[at]}, MLX has ${want.data[at]} (excess ${worst.toExponential(2)} > atol ${tol.atol}, rtol ${tol.rtol})`);
  }
}

/** Compares [name, array] pairs with the fixture's pairs (same names, same order). */
export function expectPairsClose(got: [string, unknown][], want: [string, Enc][], where: string, tol?: Tolerance): void {
  expect(got.map(([k]) => k), `${where}: names`).toEqual(want.map(([k]) => k));
  want.forEach(([k, w], i) => expectClose(got[i]![1], w, `${where}.${k}`, tol));
}

/** Evaluates a TypeScript expression from a fixture with `mg` (and `scope`'s names) in scope. */
export function evalTs(expr: string, scope: Record<string, unknown> = {}): any {
  const names = Object.keys(scope);
  return new Function("mg", ...names, `return (${expr});`)(mg, ...names.map((n) => scope[n]));
}

export const DEVICES = [mg.cpu, mg.gpu] as const;
