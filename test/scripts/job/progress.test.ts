// The live progress line: in place on a terminal (throttled), plain lines elsewhere.
import { describe, expect, test } from "bun:test";
import { formatDuration, formatRate, Progress } from "../../../scripts/job/progress.ts";

function fake(tty: boolean, total: number, plainEvery?: number) {
  let t = 1000;
  const out: string[] = [];
  const p = new Progress(total, { tty, write: (s) => out.push(s), now: () => t, tokensPerStep: 100, plainEvery });
  return { p, out, advance: (ms: number) => (t += ms) };
}

describe("formatting", () => {
  test("durations and rates", () => {
    expect([0.04, 12.34, 59.9, 65, 3599, 3725].map(formatDuration)).toEqual(["0.0s", "12.3s", "59.9s", "1m05s", "59m59s", "1h02m"]);
    expect(formatDuration(NaN)).toBe("?");
    expect([850, 12345, 1_200_000].map(formatRate)).toEqual(["850", "12.3k", "1.20M"]);
  });
});

describe("Progress", () => {
  test("plain mode: the first step, every plainEvery-th and the last, each on its own line", () => {
    const { p, out, advance } = fake(false, 10, 4);
    for (let s = 1; s <= 10; s++) {
      advance(100);
      p.update(s, 1 / s);
    }
    expect(out.map((l) => l.match(/step +(\d+)/)![1])).toEqual(["1", "4", "8", "10"]);
    expect(out.every((l) => l.endsWith("\n") && !l.includes("\r"))).toBe(true);
    // 100 tokens per 100 ms = 1000 tok/s; at step 4, 6 steps of 0.1 s remain.
    expect(out[1]).toBe("step  4/10  loss 0.2500    1000 tok/s  elapsed 0.4s  ETA 0.6s\n");
    expect(out[3]).toContain("ETA 0.0s");
  });
  test("terminal mode: rewrites one line in place, at most every 125 ms, and ends it with a newline", () => {
    const { p, out, advance } = fake(true, 100);
    for (let s = 1; s <= 100; s++) {
      advance(50);
      p.update(s, 1);
    }
    // 100 steps over 5 s, one draw per 125 ms (every third step at 50 ms) plus the last.
    expect(out.length).toBeGreaterThan(30);
    expect(out.length).toBeLessThan(45);
    expect(out.slice(0, -1).every((l) => l.startsWith("\r") && !l.includes("\n"))).toBe(true);
    expect(out.at(-2)).toContain("step 100/100");
    expect(out.at(-1)).toBe("\n");
  });
  test("the rate forgets slow first steps (a window of 20 steps)", () => {
    const { p, out, advance } = fake(false, 40, 40);
    advance(5000); // a slow first step (compiling, allocating)
    p.update(1, 1);
    for (let s = 2; s <= 40; s++) {
      advance(10);
      p.update(s, 1);
    }
    expect(out.at(-1)).toContain("10.0k tok/s");
  });
  test("note() clears the live line before printing", () => {
    const { p, out, advance } = fake(true, 10);
    advance(200);
    p.update(1, 2);
    p.note("eval: 50%");
    expect(out.at(-1)).toMatch(/^\r +\reval: 50%\n$/);
  });
});
