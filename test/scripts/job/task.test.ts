// The main job's task: token layout, round trips, held-out problems never in training, seeding.
import { describe, expect, test } from "bun:test";
import { AdditionData, AdditionTask, EQUALS, PLUS, Rng } from "../../../scripts/job/task.ts";

describe("AdditionTask", () => {
  const task = new AdditionTask(3);
  test("layout: prompt 2·digits + 2 tokens, answer digits + 1", () => {
    expect([task.promptLength, task.answerLength, task.sequenceLength, task.limit]).toEqual([8, 4, 12, 1000]);
  });
  test("123+45=168 is written least significant digit first, zero-padded", () => {
    const p = { a: 123, b: 45 };
    expect(task.prompt(p)).toEqual([3, 2, 1, PLUS, 5, 4, 0, EQUALS]);
    expect(task.answer(p)).toEqual([8, 6, 1, 0]);
    expect(task.show(task.encode(p))).toBe("321+540=8610");
    expect(task.format(p)).toBe("123+45=168");
  });
  test("the carry reaches the extra digit: 999+999=1998", () => {
    expect(task.answer({ a: 999, b: 999 })).toEqual([8, 9, 9, 1]);
    expect(task.decodeAnswer([8, 9, 9, 1])).toBe(1998);
  });
  test("decodeAnswer inverts answer for every sum; a non-digit token decodes to null", () => {
    for (let s = 0; s < 1999; s += 37) expect(task.decodeAnswer(task.answer({ a: s >> 1, b: s - (s >> 1) }))).toBe(s);
    expect(task.decodeAnswer([1, PLUS, 0, 0])).toBeNull();
    expect(task.format({ a: 1, b: 2 }, null)).toBe("1+2=?");
  });
  test("digits out of range are an error naming the task", () => {
    expect(() => new AdditionTask(0)).toThrow("[task] digits");
    expect(() => new AdditionTask(2.5)).toThrow("[task] digits");
  });
});

describe("Rng", () => {
  test("same seed, same stream; different seeds differ; values in [0, 1)", () => {
    const a = new Rng(7);
    const b = new Rng(7);
    const c = new Rng(8);
    const xs = Array.from({ length: 1000 }, () => a.next());
    expect(Array.from({ length: 1000 }, () => b.next())).toEqual(xs);
    expect(Array.from({ length: 5 }, () => c.next())).not.toEqual(xs.slice(0, 5));
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
  });
  test("int(n) covers [0, n) about uniformly", () => {
    const r = new Rng(1);
    const counts = new Array(10).fill(0);
    for (let i = 0; i < 20000; i++) counts[r.int(10)]++;
    // Each bucket expects 2000; ±10% is over 7 standard deviations.
    for (const n of counts) expect(Math.abs(n - 2000)).toBeLessThan(200);
  });
});

describe("AdditionData", () => {
  test("held-out problems are distinct, in range, and never drawn for training", () => {
    const data = new AdditionData(new AdditionTask(2), 1000, 3);
    const keys = new Set(data.heldOut.map((p) => `${p.a}+${p.b}`));
    expect(keys.size).toBe(1000);
    expect(data.heldOut.every((p) => p.a >= 0 && p.a < 100 && p.b >= 0 && p.b < 100)).toBe(true);
    // 2-digit problems: 10,000 pairs, 1000 held out; 20,000 draws would hit a held-out pair ~2000 times.
    const train = data.trainingProblems(20000);
    expect(train.some((p) => keys.has(`${p.a}+${p.b}`))).toBe(false);
    expect(new Set(train.map((p) => `${p.a}+${p.b}`)).size).toBeGreaterThan(8000);
  });
  test("the seed fixes held-out and training problems", () => {
    const task = new AdditionTask(3);
    const a = new AdditionData(task, 50, 1);
    const b = new AdditionData(task, 50, 1);
    const c = new AdditionData(task, 50, 2);
    expect(b.heldOut).toEqual(a.heldOut);
    expect(b.trainingBatch(8)).toEqual(a.trainingBatch(8));
    expect(c.heldOut).not.toEqual(a.heldOut);
  });
  test("trainingBatch holds encoded sequences row after row", () => {
    const task = new AdditionTask(3);
    const data = new AdditionData(task, 10, 0);
    const rows = data.trainingBatch(4);
    expect(rows.length).toBe(4 * 12);
    for (let i = 0; i < 4; i++) {
      const row = Array.from(rows.subarray(i * 12, (i + 1) * 12));
      const a = row[0]! + 10 * row[1]! + 100 * row[2]!;
      const b = row[4]! + 10 * row[5]! + 100 * row[6]!;
      expect(row).toEqual(task.encode({ a, b }));
    }
  });
  test("too many held-out problems for the task is an error", () => {
    expect(() => new AdditionData(new AdditionTask(1), 60, 0)).toThrow("[task]");
  });
});
