// mg.optimizers, as mlx.optimizers.
export { MultiOptimizer, Optimizer } from "./optimizer.ts";
export type { ParameterFilter, Schedule, Scheduled, State } from "./optimizer.ts";
export { AdaDelta, Adafactor, Adagrad, Adam, Adamax, AdamW, clipGradNorm, Lion, Muon, RMSprop, SGD } from "./optimizers.ts";
export { cosineDecay, exponentialDecay, joinSchedules, linearSchedule, stepDecay } from "./schedulers.ts";
