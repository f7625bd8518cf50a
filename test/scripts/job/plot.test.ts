// The loss-curve writers: braille terminal plot, SVG document, smoothing and ticks.
import { describe, expect, test } from "bun:test";
import { formatTick, niceTicks, smooth, svgPlot, terminalPlot } from "../../../scripts/job/plot.ts";

/** The (column, row) of every braille dot in the plot's cell area (rows counted from the top). */
function dots(lines: string[], height: number): [number, number][] {
  const bits = [[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]];
  const out: [number, number][] = [];
  lines.slice(0, height).forEach((line, row) => {
    const cells = [...line.slice(line.indexOf("┤") + 1)];
    cells.forEach((ch, col) => {
      const b = ch.charCodeAt(0) - 0x2800;
      for (let dx = 0; dx < 2; dx++) for (let dy = 0; dy < 4; dy++) if (b & bits[dx]![dy]!) out.push([col * 2 + dx, row * 4 + dy]);
    });
  });
  return out;
}

describe("smooth", () => {
  test("bias-corrected EMA: a constant stays constant; hand-computed values", () => {
    expect(smooth([3, 3, 3, 3])).toEqual([3, 3, 3, 3].map((v) => expect.closeTo(v, 12)));
    // beta 0.5: m1 = 0.5·2 → /0.5 = 2; m2 = 0.5·1 + 0.5·4 = 2.5 → /0.75 = 10/3.
    const s = smooth([2, 4], 0.5);
    expect(s[0]).toBeCloseTo(2, 12);
    expect(s[1]).toBeCloseTo(10 / 3, 12);
  });
});

describe("ticks", () => {
  test("niceTicks picks 1/2/5 steps covering the range", () => {
    expect(niceTicks(0, 1, 5)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(1, 600, 6)).toEqual([100, 200, 300, 400, 500, 600]);
    expect(niceTicks(-3, 7, 5)).toEqual([-2, 0, 2, 4, 6]);
  });
  test("formatTick keeps labels short", () => {
    expect([0, 0.5, 0.0123, 2.5, 150, 1e-4, 1e5].map(formatTick)).toEqual(["0", "0.5", "0.012", "2.5", "150", "1e-4", "1e5"]);
  });
});

describe("terminalPlot", () => {
  test("shape: height rows of width braille cells, an axis and the x range", () => {
    const lines = terminalPlot([5, 4, 3, 2, 1], { width: 20, height: 6, xStart: 1 });
    expect(lines.length).toBe(8);
    for (const l of lines.slice(0, 6)) expect([...l.slice(l.indexOf("┤") + 1)].length).toBe(20);
    expect(lines[6]).toContain("└" + "─".repeat(20));
    expect(lines[7]!.trim().split(/\s+/)).toEqual(["1", "5"]);
    expect(lines[0]!.trim().startsWith("5")).toBe(true);
    expect(lines[5]!.trim().startsWith("1")).toBe(true);
  });
  test("a falling line: every column has a dot and the dots never go up", () => {
    const values = Array.from({ length: 200 }, (_, i) => 10 - i / 20);
    const d = dots(terminalPlot(values, { width: 30, height: 8 }), 8);
    const topByColumn = new Map<number, number>();
    for (const [c, r] of d) topByColumn.set(c, Math.max(topByColumn.get(c) ?? -1, r));
    expect(topByColumn.size).toBe(60);
    const lowest = [...topByColumn.entries()].sort((a, b) => a[0] - b[0]).map(([, r]) => r);
    for (let i = 1; i < lowest.length; i++) expect(lowest[i]!).toBeGreaterThanOrEqual(lowest[i - 1]!);
    expect(lowest[0]).toBe(0);
    expect(lowest.at(-1)).toBe(31);
  });
  test("log scale: 100 → 10 → 1 puts 10 on the middle row", () => {
    const d = dots(terminalPlot([100, 10, 1], { width: 3, height: 3, logY: true }), 3);
    // 6 columns of dots over 3 values (two each); rows 0..11, log10 spans 2 → middle row 5.5 → 6 (rounded).
    const rowOf = (c: number) => Math.max(...d.filter(([col]) => col === c).map(([, r]) => r));
    expect(rowOf(0)).toBe(0);
    expect(rowOf(2)).toBe(6);
    expect(rowOf(5)).toBe(11);
  });
  test("non-finite values are skipped, an empty series still draws the frame", () => {
    expect(terminalPlot([1, NaN, Infinity, 0.5], { width: 4, height: 2 }).length).toBe(4);
    expect(terminalPlot([], { width: 4, height: 2 }).length).toBe(4);
  });
});

describe("svgPlot", () => {
  const svg = svgPlot(
    [
      { name: "loss <raw>", points: [[1, 2], [2, 1], [3, 0.1], [4, NaN]] },
      { name: "accuracy", points: [[2, 0.5], [4, 1]], dots: true, rightAxis: true },
    ],
    { title: "A & B", xLabel: "step", yLabel: "loss", rightLabel: "accuracy", logY: true, caption: ["run facts"] },
  );
  test("a self-contained SVG document: no script, no external reference, escaped text", () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
    expect(svg).not.toContain("<script");
    expect(svg.replace('xmlns="http://www.w3.org/2000/svg"', "")).not.toMatch(/https?:|href=/);
    expect(svg).toContain("A &amp; B");
    expect(svg).toContain("loss &lt;raw&gt;");
  });
  test("tags balance (well-formed)", () => {
    const stack: string[] = [];
    for (const m of svg.matchAll(/<(\/?)([a-z]+)[^>]*?(\/?)>/g)) {
      if (m[1]) expect(stack.pop()).toBe(m[2]);
      else if (!m[3]) stack.push(m[2]!);
    }
    expect(stack).toEqual([]);
  });
  test("the line has one point per finite value; log axis ticks at decades; accuracy dots on the right axis", () => {
    const path = svg.match(/<path d="([^"]+)"/)![1]!;
    const pts = [...path.matchAll(/[ML]([\d.]+) ([\d.]+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
    expect(pts.length).toBe(3);
    // Larger losses sit higher (smaller y in SVG coordinates).
    expect(pts[0]![1]).toBeLessThan(pts[1]![1]!);
    expect(pts[1]![1]).toBeLessThan(pts[2]![1]!);
    for (const t of [">0.1<", ">1<", ">10<", ">100%<", ">50%<"]) expect(svg).toContain(t);
    const circles = [...svg.matchAll(/<circle cx="([\d.]+)" cy="([\d.]+)"/g)].map((m) => Number(m[2]));
    expect(circles.length).toBe(2);
    expect(circles[1]).toBeLessThan(circles[0]!); // 100% above 50%
  });
});
