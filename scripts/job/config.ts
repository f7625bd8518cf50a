// The main job's presets. `full` is tuned to reach ≥ 95% exact match on held-out problems within
// 90 s on the CPU device of a 2-core machine; `quick` proves the whole path (training, evaluation,
// checkpoint, trace) in seconds — on the simulated GPU within a minute.
import type { TrainConfig } from "./train.ts";

export const ACCURACY_GOAL = 0.95;

// Tuned for the fewest CPU seconds to ≥ 95% (MLX sweeps over batch, learning rate, heads, MLP width
// and RoPE base, then this model on metalgrad's CPU): the loss sits near the answers' entropy for
// ~150 steps while attention finds the digit columns, then falls; 500 steps of 128 problems reach
// 99.6% (seed 0) and 100% (seed 1), 400 steps 96%.
export const FULL: TrainConfig = {
  digits: 3,
  model: { dims: 64, layers: 2, heads: 4, mlpRatio: 4, ropeBase: 10 },
  batch: 128,
  steps: 500,
  learningRate: 3e-3,
  warmupSteps: 30,
  weightDecay: 0.01,
  betas: [0.9, 0.99],
  heldOut: 1000,
  evalEvery: 100,
  evalSize: 200,
  seed: 0,
};

export const QUICK: TrainConfig = {
  ...FULL,
  model: { dims: 32, layers: 1, heads: 2, mlpRatio: 2, ropeBase: 10 },
  batch: 16,
  steps: 40,
  warmupSteps: 5,
  heldOut: 64,
  evalEvery: 0,
  evalSize: 0,
};

/** The preset for the flags, with --steps and --seed applied. */
export function presetFor(quick: boolean, steps: number | null, seed: number): TrainConfig {
  const base = quick ? QUICK : FULL;
  const s = steps ?? base.steps;
  return { ...base, steps: s, warmupSteps: Math.min(base.warmupSteps, Math.floor(s / 4)), evalEvery: Math.min(base.evalEvery, s), seed };
}
