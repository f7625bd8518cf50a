// The main job's training loop and evaluation: greedy decoding scored against an oracle model,
// the learning-rate schedule, and a tiny run that learns more than the answers' statistics.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/index.ts";
import { Decoder } from "../../../scripts/job/model.ts";
import { AdditionTask, VOCAB } from "../../../scripts/job/task.ts";
import { accuracy, batchArrays, complete, schedule, train, type TrainConfig } from "../../../scripts/job/train.ts";

const TINY: TrainConfig = {
  digits: 1,
  model: { dims: 32, layers: 1, heads: 2, mlpRatio: 4, ropeBase: 100 },
  batch: 32,
  steps: 40,
  learningRate: 1e-2,
  warmupSteps: 10,
  weightDecay: 0.01,
  betas: [0.9, 0.99],
  heldOut: 20,
  evalEvery: 0,
  evalSize: 0,
  seed: 0,
};

/**
 * A "model" that reads the prompt and writes the right next digit (or, with `wrongAt`, a wrong
 * one at that answer position): its logits are one-hot. Scores the decoding loop independently.
 */
class Oracle extends Decoder {
  constructor(readonly task: AdditionTask, readonly wrongAt: number | null = null) {
    super({ vocabSize: VOCAB.length, dims: 4, layers: 0, heads: 1, mlpRatio: 1, ropeBase: 100 });
  }
  override forward(tokens: MgArray, n?: number): MgArray {
    expect(n).toBe(1);
    const rows = tokens.tolist() as number[][];
    const P = this.task.promptLength;
    const d = this.task.digits;
    const logits = rows.map((row) => {
      const value = (from: number) => row.slice(from, from + d).reduceRight((acc, t) => acc * 10 + t, 0);
      const position = row.length - P;
      let digit = this.task.answer({ a: value(0), b: value(d + 1) })[position]!;
      if (position === this.wrongAt) digit = (digit + 1) % 10;
      return [VOCAB.map((_, t) => (t === digit ? 1 : 0))];
    });
    return mg.array(logits, mg.float32);
  }
}

describe("decoding and accuracy", () => {
  const task = new AdditionTask(2);
  const problems = [{ a: 0, b: 0 }, { a: 99, b: 99 }, { a: 12, b: 9 }, { a: 50, b: 50 }];
  test("greedy completion writes the answer digit by digit", () => {
    expect(complete(new Oracle(task), task, problems)).toEqual(problems.map((p) => task.answer(p)));
    expect(accuracy(new Oracle(task), task, problems)).toBe(1);
  });
  test("one wrong digit makes the whole answer wrong (exact match); chunks add up", () => {
    expect(accuracy(new Oracle(task, 2), task, problems)).toBe(0);
    expect(accuracy(new Oracle(task), task, problems, 3)).toBe(1);
    expect(accuracy(new Oracle(task), task, [])).toBe(0);
  });
});

describe("batches and schedule", () => {
  test("inputs are the sequence but its last token, targets the answer", () => {
    const task = new AdditionTask(1);
    const rows = Int32Array.from([...task.encode({ a: 7, b: 5 }), ...task.encode({ a: 1, b: 2 })]);
    const [inputs, targets] = batchArrays(task, rows, 2);
    expect(inputs.tolist()).toEqual([[7, 10, 5, 11, 2], [1, 10, 2, 11, 3]]);
    expect(targets.tolist()).toEqual([[2, 1], [3, 0]]);
  });
  test("linear warm-up to the peak, then cosine decay to a tenth", () => {
    const s = schedule({ ...TINY, learningRate: 0.01, warmupSteps: 10, steps: 110 });
    const at = (step: number) => s(mg.array(step, mg.int32)).item() as number;
    expect(at(0)).toBeCloseTo(0.001, 7); // linearSchedule starts at lr/warm-up
    expect(at(10)).toBeCloseTo(0.01, 7);
    expect(at(60)).toBeCloseTo(0.001 + 0.5 * 0.009, 6); // half-way through the cosine
    expect(at(110)).toBeCloseTo(0.001, 7);
  });
});

describe("training", () => {
  test("a tiny run learns more than the answers' statistics (CPU)", () => {
    // The answer of a 1-digit sum, written as units then tens: the units digit is uniform over
    // 10 values and the tens digit is 1 for 45 of the 100 problems. A model that knew only these
    // frequencies would score their mean entropy per answer token; learning any addition beats it.
    const pTens = 45 / 100;
    const entropy = (Math.log(10) - pTens * Math.log(pTens) - (1 - pTens) * Math.log(1 - pTens)) / 2;
    expect(entropy).toBeCloseTo(1.4954, 4);
    const r = mg.stream(mg.cpu, () => train(TINY));
    expect(r.losses.length).toBe(TINY.steps);
    const first = r.losses.slice(0, 5).reduce((a, b) => a + b) / 5;
    const last = r.losses.slice(-10).reduce((a, b) => a + b) / 10;
    expect(first).toBeGreaterThan(entropy);
    expect(last).toBeLessThan(entropy - 0.1);
    expect(r.peakBytes).toBeGreaterThan(r.parameterBytes);
    expect(r.tokensPerStep).toBe(32 * 5);
  });
  test("the GPU takes the same steps as the CPU (losses agree), and the trace records the step", () => {
    const config: TrainConfig = { ...TINY, model: { dims: 16, layers: 1, heads: 2, mlpRatio: 2, ropeBase: 100 }, batch: 4, steps: 2, warmupSteps: 1 };
    const cpu = mg.stream(mg.cpu, () => train(config, { traceStep: 2 }));
    const gpu = mg.stream(mg.gpu, () => train(config, { traceStep: 2 }));
    for (let i = 0; i < 2; i++) expect(gpu.losses[i]!).toBeCloseTo(cpu.losses[i]!, 4);
    expect(cpu.trace.every((r) => r.device === "cpu")).toBe(true);
    expect(gpu.trace.some((r) => r.device === "gpu" && r.primitives.includes("Matmul"))).toBe(true);
  });
});
