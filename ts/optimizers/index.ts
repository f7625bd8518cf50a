// mg.optimizers, as mlx.optimizers. Functions that build arrays are library calls
// (ts/core/ownership.ts); the schedules they return are library calls too.
import { publicNamespace } from "../core/options.ts";
import { clipGradNorm as clip } from "./optimizers.ts";
import * as schedulers from "./schedulers.ts";

export { MultiOptimizer, Optimizer } from "./optimizer.ts";
export type { ParameterFilter, Schedule, Scheduled, State } from "./optimizer.ts";
export { AdaDelta, Adafactor, Adagrad, Adam, Adamax, AdamW, Lion, Muon, RMSprop, SGD } from "./optimizers.ts";
export const { clipGradNorm } = publicNamespace("optimizers.", { clipGradNorm: clip });
export const { cosineDecay, exponentialDecay, joinSchedules, linearSchedule, stepDecay } = publicNamespace("optimizers.", schedulers);
