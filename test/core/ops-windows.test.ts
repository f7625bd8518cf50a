// Window functions against their float64 definitions (numpy.hanning & co.), on both devices.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";

const defs: [string, (M: number, o?: mg.StreamOptions) => mg.MgArray, (n: number, M: number) => number][] = [
  ["hanning", mg.hanning, (n, M) => 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / (M - 1))],
  ["hamming", mg.hamming, (n, M) => 0.54 - 0.46 * Math.cos((2 * Math.PI * n) / (M - 1))],
  ["bartlett", mg.bartlett, (n, M) => 1 - Math.abs((2 * n) / (M - 1) - 1)],
  ["blackman", mg.blackman, (n, M) => 0.42 - 0.5 * Math.cos((2 * Math.PI * n) / (M - 1)) + 0.08 * Math.cos((4 * Math.PI * n) / (M - 1))],
];

describe("window functions", () => {
  for (const [name, fn, ref] of defs) {
    test(`${name}: float32 values of the definition for M = 2, 5, 12, 101`, () => {
      for (const stream of [mg.cpu, mg.gpu]) {
        for (const M of [2, 5, 12, 101]) {
          const w = fn(M, { stream });
          expect(w.dtype).toBe(mg.float32);
          expect(w.shape).toEqual([M]);
          (w.tolist() as number[]).forEach((v, n) => expect(Math.abs(v - ref(n, M))).toBeLessThan(2e-6));
        }
      }
    });
    test(`${name}: M ≤ 0 is empty, M = 1 is [1], M must be an integer`, () => {
      expect(fn(0).shape).toEqual([0]);
      expect(fn(-3).shape).toEqual([0]);
      expect(fn(0).dtype).toBe(mg.float32);
      expect(fn(1).tolist()).toEqual([1]);
      expect(() => fn(2.5)).toThrow(`[${name}] M must be an integer number of points, got 2.5.`);
      expect(() => fn("5" as unknown as number)).toThrow(`[${name}] M must be an integer number of points, got string.`);
    });
  }
  test("odd windows peak at exactly 1 in the middle", () => {
    for (const [, fn] of defs) expect((fn(5).tolist() as number[])[2]).toBeCloseTo(1, 6);
  });
});
