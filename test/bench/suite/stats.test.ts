// bench.ts's statistics: quantiles as numpy's default (linear), IQR spread, rounds per budget.
import { describe, expect, test } from "bun:test";
import { FULL_POLICY, QUICK_POLICY, quantile, roundsFor, summarize } from "../../../bench/suite/stats.ts";

describe("quantile and summarize", () => {
  test("linear interpolation between order statistics (numpy.quantile's default)", () => {
    // numpy.quantile([1, 2, 3, 4], [0.25, 0.5, 0.75]) = [1.75, 2.5, 3.25]
    expect([0.25, 0.5, 0.75].map((q) => quantile([4, 1, 3, 2], q))).toEqual([1.75, 2.5, 3.25]);
    expect(quantile([7], 0.3)).toBe(7);
    expect(quantile([], 0.5)).toBeNaN();
  });
  test("median, IQR, n, min and max", () => {
    expect(summarize([10, 1, 3, 2, 4])).toEqual({ median: 3, spread: 2, n: 5, min: 1, max: 10 });
  });
});

describe("roundsFor", () => {
  test("as many runs as fit the budget, within the policy's bounds", () => {
    expect(roundsFor(100, FULL_POLICY)).toBe(20); // 2000 ms / 100 ms
    expect(roundsFor(1, FULL_POLICY)).toBe(50);
    expect(roundsFor(5000, FULL_POLICY)).toBe(5);
    expect(roundsFor(0, QUICK_POLICY)).toBe(10);
    expect(roundsFor(40, QUICK_POLICY)).toBe(4); // ceil(150 / 40)
  });
});
