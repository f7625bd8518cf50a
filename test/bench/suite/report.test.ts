// bench.ts's output: JSON rows, ratios, text and Markdown tables, the self-contained HTML page.
import { describe, expect, test } from "bun:test";
import { type CaseResult, caseTable, formatMs, html, markdownSummary, rate, ratio, rows } from "../../../bench/suite/report.ts";
import { summarize } from "../../../bench/suite/stats.ts";

const results: CaseResult[] = [
  {
    id: "matmul f32 4×4×4", group: "matmul", work: { flops: 128 },
    measurements: [
      { system: "metalgrad", device: "cpu", summary: summarize([4, 4, 6]) },
      { system: "metalgrad", device: "gpu-sim", na: "the Metal simulator is not a performance device" },
      { system: "MLX", device: "cpu", summary: summarize([2, 2, 2]) },
      { system: "numpy", device: "cpu", summary: summarize([1, 3]) },
    ],
  },
  {
    id: "rmsNorm <x> forward", group: "fast ops", work: { bytes: 2e6 },
    measurements: [
      { system: "metalgrad", device: "cpu", na: "mg.fast.rmsNorm is not in this build yet" },
      { system: "MLX", device: "cpu", summary: summarize([0.5]) },
    ],
  },
];

describe("rows (latest.json)", () => {
  test("one row per system and device: median ms, n, IQR; null and a note where not available", () => {
    expect(rows(results).slice(0, 2)).toEqual([
      { case: "matmul f32 4×4×4", group: "matmul", system: "metalgrad", device: "cpu", value: 4, unit: "ms", n: 3, spread: 1 },
      {
        case: "matmul f32 4×4×4", group: "matmul", system: "metalgrad", device: "gpu-sim", value: null, unit: "ms", n: 0, spread: null,
        note: "the Metal simulator is not a performance device",
      },
    ]);
    expect(rows(results).length).toBe(6);
  });
});

describe("numbers", () => {
  test("metalgrad/MLX is the ratio of medians on the same device; none without MLX there", () => {
    expect(ratio(results[0]!, results[0]!.measurements[0]!)).toBe(2);
    expect(ratio(results[0]!, results[0]!.measurements[3]!)).toBeNull(); // numpy: no ratio
    expect(ratio(results[1]!, results[1]!.measurements[0]!)).toBeNull();
  });
  test("rates and durations", () => {
    expect(rate({ flops: 2e9 }, 1000)).toBe("2.00 GFLOP/s");
    expect(rate({ bytes: 5e8 }, 250)).toBe("2.00 GB/s");
    expect(rate({}, 1)).toBe("");
    expect([0.0123, 1.5, 123.4, 2500].map(formatMs)).toEqual(["0.012 ms", "1.50 ms", "123 ms", "2.50 s"]);
  });
});

describe("tables", () => {
  test("the text table of a case", () => {
    const t = caseTable(results[0]!);
    expect(t[0]).toBe("matmul f32 4×4×4 (1.28e-7 GFLOP)");
    expect(t[2]).toMatch(/^ {2}metalgrad +cpu +4\.00 ms +1\.00 ms +3 +0\.0000320 GFLOP\/s +2\.0×$/);
    expect(t[3]).toContain("not available: the Metal simulator is not a performance device");
  });
  test("the Markdown summary: columns for what measured anything, n/a elsewhere", () => {
    expect(markdownSummary(results)).toEqual([
      "| case | metalgrad cpu | MLX cpu | numpy cpu | metalgrad/MLX cpu |",
      "|---|---:|---:|---:|---:|",
      "| matmul f32 4×4×4 | 4.00 ms | 2.00 ms | 2.00 ms | 2.0× |",
      "| rmsNorm <x> forward | n/a | 0.50 ms | n/a | — |",
    ]);
  });
});

describe("html", () => {
  const page = html(results, { title: "bench & co", facts: ["2 cores"] });
  test("self-contained: no script, no external reference; text escaped", () => {
    expect(page.startsWith("<!doctype html>")).toBe(true);
    expect(page).not.toContain("<script");
    expect(page.replace(/xmlns="http:\/\/www\.w3\.org\/2000\/svg"/g, "")).not.toMatch(/https?:|src=|href=/);
    expect(page).toContain("bench &amp; co");
    expect(page).toContain("rmsNorm &lt;x&gt; forward");
  });
  test("a chart per group with a bar per measurement, and the not-available reasons", () => {
    expect(page.match(/<svg /g)!.length).toBe(2);
    // matmul: three bars; fast ops: one (metalgrad is not available).
    expect(page.match(/<rect /g)!.length).toBe(4);
    expect(page).toContain("not available: mg.fast.rmsNorm is not in this build yet");
  });
});
