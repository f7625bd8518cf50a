// metalgrad against MLX itself. test/fixtures/mlx-parity/cases.txt pairs an MLX Python expression
// with the metalgrad expression that means the same; expected.json holds what a real MLX returned
// for the Python side (scripts/mlx-parity.py regenerates it). Each case runs on the cpu and on the
// gpu device and must give MLX's dtype and shape, its values (exactly for integers and bool, within
// ts/testing/tolerances.ts for floats, NaN for NaN), or throw where MLX throws. repr_ cases compare
// the printed form character for character.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as mg from "../../ts/index.ts";
import { toleranceFor } from "../../ts/testing/tolerances.ts";

const dir = join(import.meta.dir, "../fixtures/mlx-parity");

type Plain = number | boolean | string | bigint | Plain[] | { re: Plain; im: Plain } | { int: string };
type Expected = { value: Plain; dtype?: string; shape?: number[] } | { error: string } | { repr: string };

const expected = JSON.parse(readFileSync(join(dir, "expected.json"), "utf8")) as { mlx: string; cases: Record<string, Expected> };
const cases = readFileSync(join(dir, "cases.txt"), "utf8")
  .split("\n")
  .filter((line) => line.trim() !== "" && !line.startsWith("#"))
  .map((line) => {
    const [name, , ts] = line.split("|") as [string, string, string];
    return { name, ts };
  });

/** tolist() output in expected.json's encoding (non-finite floats as strings, integers beyond
 *  2^53 as bigints — expected.json writes them as {"int": "…"}). */
function plain(v: unknown): Plain {
  if (v instanceof mg.MgArray) return plain(v.tolist());
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === "object" && "re" in v && "im" in v) return { re: plain(v.re), im: plain(v.im) };
  if (typeof v === "bigint") return v >= -(2n ** 53n) && v <= 2n ** 53n ? Number(v) : v;
  if (typeof v === "number" && !Number.isFinite(v)) return Number.isNaN(v) ? "nan" : v > 0 ? "inf" : "-inf";
  return v as Plain;
}

const show = (v: Plain): string => JSON.stringify(v, (_k, x: unknown) => (typeof x === "bigint" ? `${x}n` : x));

function expectValuesClose(got: Plain, want: Plain, rtol: number, atol: number, where: string): void {
  if (Array.isArray(want)) {
    expect(Array.isArray(got) && got.length === want.length, `${where}: ${show(got)} vs ${show(want)}`).toBe(true);
    want.forEach((w, i) => expectValuesClose((got as Plain[])[i]!, w, rtol, atol, `${where}[${i}]`));
    return;
  }
  if (typeof want === "object" && "int" in want) {
    expect(got, `${where}: MLX ${want.int}`).toBe(BigInt(want.int));
    return;
  }
  if (typeof want === "object" && typeof got === "object") {
    const g = got as { re: Plain; im: Plain };
    expectValuesClose(g.re, want.re, rtol, atol, `${where}.re`);
    expectValuesClose(g.im, want.im, rtol, atol, `${where}.im`);
    return;
  }
  if (typeof want === "number" && typeof got === "number") {
    expect(Math.abs(got - want) <= atol + rtol * Math.abs(want), `${where}: got ${got}, MLX ${want}`).toBe(true);
    // The sign of zero is part of an elementwise answer (1/x, atan2, copysign depend on it); in
    // composite results (a matrix inverse …) it depends on the algorithm's order of operations.
    if (want === 0 && got === 0 && where.startsWith("cc_")) expect(Object.is(got, -0), `${where}: got ${Object.is(got, -0) ? "-0" : "+0"}, MLX ${Object.is(want, -0) ? "-0" : "+0"}`).toBe(Object.is(want, -0));
    return;
  }
  expect(got, where).toEqual(want);
}

describe(`parity with MLX ${expected.mlx}`, () => {
  test("every case has an MLX result", () => {
    expect(cases.length).toBeGreaterThan(150);
    expect(cases.filter((c) => !(c.name in expected.cases)).map((c) => c.name)).toEqual([]);
  });

  for (const device of [mg.cpu, mg.gpu]) {
    test.each(cases)(`$name on ${device.type}`, ({ name, ts }) => {
      const want = expected.cases[name]!;
      const run = (): unknown => mg.stream(device, () => new Function("mg", `return (${ts});`)(mg));
      if ("error" in want) {
        expect(run).toThrow();
        return;
      }
      const got = run();
      if ("repr" in want) {
        expect(String(got)).toBe(want.repr);
        return;
      }
      if (!(got instanceof mg.MgArray)) {
        // Several arrays (gradients for argnums, a split) or a plain value (a shape): float32 math.
        const { rtol, atol } = toleranceFor(mg.float32);
        expectValuesClose(plain(got), want.value, rtol, atol, name);
        return;
      }
      expect(got.dtype.name as string).toBe(want.dtype!);
      expect(got.shape).toEqual(want.shape!);
      const { rtol, atol } = toleranceFor(got.dtype);
      expectValuesClose(plain(got.tolist()), want.value, rtol, atol, name);
    });
  }
});
