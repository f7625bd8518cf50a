// Training and evaluation of the main job's model, as a metalgrad user writes them: loss and
// gradients from nn.valueAndGrad, AdamW with warm-up and cosine decay, one tidy scope per step
// (the step's intermediates are freed at its end; the new parameters and optimizer state are
// kept by the optimizer), then one eval of loss, parameters and state. Greedy decoding for the
// exact-match accuracy on held-out problems.
import * as mg from "../../ts/index.ts";
import type { MgArray, TraceRecord } from "../../ts/index.ts";
import { Decoder, type ModelConfig } from "./model.ts";
import { AdditionData, AdditionTask, type Problem, VOCAB } from "./task.ts";

export interface TrainConfig {
  digits: number;
  model: Omit<ModelConfig, "vocabSize">;
  batch: number;
  steps: number;
  learningRate: number;
  warmupSteps: number;
  weightDecay: number;
  /** AdamW's betas: a short run wants a second moment that forgets faster than the default 0.999. */
  betas: [number, number];
  /** Held-out problems scored at the end. */
  heldOut: number;
  /** Held-out problems scored during training (the first of them), every `evalEvery` steps; 0: never. */
  evalEvery: number;
  evalSize: number;
  seed: number;
}

export interface StepInfo {
  step: number;
  loss: number;
}

export interface EvalPoint {
  step: number;
  accuracy: number;
}

export interface TrainResult {
  model: Decoder;
  data: AdditionData;
  losses: number[];
  evals: EvalPoint[];
  /** Wall-clock seconds of the training steps (evaluations during training excluded). */
  trainSeconds: number;
  /** CPU seconds this process spent in those steps (every thread): a load-independent measure. */
  trainCpuSeconds: number;
  /** High-water mark of active array memory over training: parameters, AdamW state, a step's intermediates. */
  peakBytes: number;
  /** Memory the parameters held before training. */
  parameterBytes: number;
  tokensPerStep: number;
  /** The kernel trace of step `traceStep` (empty when not asked). */
  trace: TraceRecord[];
}

export interface TrainHooks {
  /** Called once the model and data are ready, right before the first step. */
  onStart?: () => void;
  onStep?: (s: StepInfo) => void;
  onEval?: (e: EvalPoint) => void;
  /** Record the kernel trace of this step (the first is special: it creates the optimizer state). */
  traceStep?: number;
}

export function makeModel(config: TrainConfig): Decoder {
  return new Decoder({ vocabSize: VOCAB.length, ...config.model });
}

/** Cross entropy of the answer tokens: the model reads each sequence but its last token, and is scored where it predicts the answer. */
export function answerLoss(model: Decoder, inputs: MgArray, targets: MgArray): MgArray {
  const logits = model.forward(inputs, targets.shape[1]!);
  return mg.nn.losses.crossEntropy(logits, targets, { reduction: "mean" });
}

/** Inputs (B, L−1) and answer targets (B, answerLength) of a flat batch of sequences. */
export function batchArrays(task: AdditionTask, rows: Int32Array, batch: number): [MgArray, MgArray] {
  const L = task.sequenceLength;
  const tokens = mg.array(rows, mg.int32, { shape: [batch, L] });
  return [tokens.index(":", { stop: L - 1 }), tokens.index(":", { start: task.promptLength })];
}

/**
 * Greedy completions of `problems`: the answer's digits one at a time, each from the model's
 * logits at the last position. Returns the answer tokens of each problem.
 */
export function complete(model: Decoder, task: AdditionTask, problems: readonly Problem[]): number[][] {
  if (problems.length === 0) return [];
  const P = task.promptLength;
  const prompts = new Int32Array(problems.length * P);
  problems.forEach((p, i) => prompts.set(task.prompt(p), i * P));
  const answers = mg.tidy(() => {
    let seq = mg.array(prompts, mg.int32, { shape: [problems.length, P] });
    for (let i = 0; i < task.answerLength; i++) {
      const next = mg.argmax(model.forward(seq, 1), -1).astype(mg.int32);
      seq = mg.concatenate([seq, next], 1);
    }
    return seq.index(":", { start: P });
  });
  const flat = answers.tolist() as number[][];
  answers.dispose();
  return flat;
}

/** Exact-match accuracy: the fraction of problems whose every answer digit is right. */
export function accuracy(model: Decoder, task: AdditionTask, problems: readonly Problem[], chunk = 500): number {
  let right = 0;
  for (let i = 0; i < problems.length; i += chunk) {
    const part = problems.slice(i, i + chunk);
    complete(model, task, part).forEach((ans, j) => {
      if (task.decodeAnswer(ans) === part[j]!.a + part[j]!.b) right++;
    });
  }
  return problems.length ? right / problems.length : 0;
}

/** Warm-up from 0 to the peak learning rate, then cosine decay to a tenth of it. */
export function schedule(c: TrainConfig): mg.optimizers.Schedule {
  const warm = Math.min(c.warmupSteps, c.steps - 1);
  const decay = mg.optimizers.cosineDecay(c.learningRate, Math.max(1, c.steps - warm), c.learningRate * 0.1);
  if (warm <= 0) return decay;
  return mg.optimizers.joinSchedules([mg.optimizers.linearSchedule(c.learningRate / warm, c.learningRate, warm), decay], [warm]);
}

/**
 * Trains a fresh model on the addition task. `onStep` sees each step's loss (for the progress
 * line); `onEval` each intermediate accuracy. Runs on the current default device/stream.
 */
export function train(c: TrainConfig, hooks: TrainHooks = {}): TrainResult {
  const task = new AdditionTask(c.digits);
  const data = new AdditionData(task, c.heldOut, c.seed);
  mg.random.seed(c.seed);
  const model = makeModel(c);
  mg.eval(model.parameters());
  const optimizer = new mg.optimizers.AdamW(schedule(c), { betas: c.betas, weightDecay: c.weightDecay });
  const lossAndGrad = mg.nn.valueAndGrad(model, answerLoss);
  const losses: number[] = [];
  const evals: EvalPoint[] = [];
  const evalSet = data.heldOut.slice(0, c.evalSize);

  const memoryBefore = mg.getActiveMemory();
  mg.resetPeakMemory();
  let seconds = 0;
  let cpuSeconds = 0;
  let trace: TraceRecord[] = [];
  hooks.onStart?.();
  for (let step = 1; step <= c.steps; step++) {
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const [inputs, targets] = batchArrays(task, data.trainingBatch(c.batch), c.batch);
    const run = () => {
      const l = mg.tidy(() => {
        const [value, grads] = lossAndGrad(model, inputs, targets);
        optimizer.update(model, grads);
        return value;
      });
      mg.eval(l, model.parameters(), optimizer.state);
      return l;
    };
    let loss!: MgArray;
    if (step === hooks.traceStep) {
      trace = mg.trace(() => {
        loss = run();
      });
    } else loss = run();
    const value = loss.item() as number;
    loss.dispose();
    inputs.dispose();
    targets.dispose();
    const cpu = process.cpuUsage(cpu0);
    cpuSeconds += (cpu.user + cpu.system) / 1e6;
    seconds += (performance.now() - t0) / 1000;
    losses.push(value);
    hooks.onStep?.({ step, loss: value });
    if (c.evalEvery > 0 && (step % c.evalEvery === 0 || step === c.steps) && evalSet.length > 0) {
      const point = { step, accuracy: accuracy(model, task, evalSet) };
      evals.push(point);
      hooks.onEval?.(point);
    }
  }
  return {
    model, data, losses, evals, trainSeconds: seconds, trainCpuSeconds: cpuSeconds,
    peakBytes: mg.getPeakMemory(), parameterBytes: memoryBefore, tokensPerStep: c.batch * (task.sequenceLength - 1), trace,
  };
}
