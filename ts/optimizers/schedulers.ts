// Learning-rate schedules, as mlx.optimizers.schedulers: each returns a function of the step (a
// uint64 scalar array) computing the value with MLX's formula.
import type { MgArray } from "../core/array.ts";
import { float32 } from "../core/dtype.ts";
import { array } from "../core/ops/convert.ts";
import { add, cos, floorDivide, less, minimum, multiply, power, subtract, where } from "../core/ops/elementwise.ts";
import { libraryFunction } from "../core/ownership.ts";
import { callUser } from "../nn/module.ts";
import { resolveOptions, type Trailing } from "../core/options.ts";
import type { Schedule } from "./optimizer.ts";

// Python's floats are float32 here even when integral (JS cannot tell 1.0 from 1): a weak integer
// next to the uint64 step would keep the result integral.
const float = (x: number) => array(x, float32);

/**
 * init · decayRate^step.
 * @example
 * mg.optimizers.exponentialDecay(1, 0.5)(mg.array(2))
 */
export function exponentialDecay(init: number, decayRate: number): Schedule {
  return libraryFunction<Schedule>((step) => multiply(init, power(float(decayRate), step)));
}

/**
 * init · decayRate^⌊step / stepSize⌋.
 * @example
 * mg.optimizers.stepDecay(1, 0.5, 2)(mg.array(4))
 */
export function stepDecay(init: number, decayRate: number, stepSize: number): Schedule {
  if (stepSize < 1) throw new RangeError(`[step_decay] step_size must be greater than 0, but got ${stepSize}.`);
  return libraryFunction<Schedule>((step) => multiply(init, power(float(decayRate), floorDivide(step, stepSize))));
}

/**
 * Cosine decay from init to `end` over decaySteps steps, then constant, as cosine_decay(init, decay_steps, end=0.0).
 * @example
 * mg.optimizers.cosineDecay(1, 10)(mg.array(5))
 */
export function cosineDecay(init: number, decaySteps: number, ...rest: Trailing<[end: number], { end?: number }>): Schedule {
  const { end } = resolveOptions("cosine_decay", rest, { end: 0.0 });
  if (decaySteps < 1) throw new RangeError(`[cosine_decay] decay_steps must be greater than 0, but got ${decaySteps}.`);
  return libraryFunction<Schedule>((step) => {
    const s = minimum(step, decaySteps);
    const decay = multiply(0.5, add(1.0, cos(multiply(Math.PI / decaySteps, s))));
    return add(end, multiply(decay, init - end));
  });
}

/**
 * Runs schedules[i] from boundaries[i − 1] on, each seeing the steps since its boundary.
 * @example
 * mg.optimizers.joinSchedules([mg.optimizers.linearSchedule(0, 1, 10), mg.optimizers.exponentialDecay(1, 0.9)], [10])(mg.array(5))
 */
export function joinSchedules(schedules: readonly Schedule[], boundaries: readonly number[]): Schedule {
  if (schedules.length === 0) throw new Error("[join_schedules] Must provide at least 1 schedule to join.");
  if (schedules.length !== boundaries.length + 1) {
    throw new Error(`[join_schedules] Received ${boundaries.length} boundaries but expected ${schedules.length - 1}.`);
  }
  // The schedules may be the user's: they run as user code inside this library call.
  return libraryFunction<Schedule>((step: MgArray) => {
    let output = callUser(schedules[0]!, step);
    boundaries.forEach((boundary, i) => {
      output = where(less(step, boundary), output, callUser(schedules[i + 1]!, subtract(step, boundary)));
    });
    return output;
  });
}

/**
 * Linear from init to end over `steps` steps, then constant.
 * @example
 * mg.optimizers.linearSchedule(0, 1, 10)(mg.array(5))
 */
export function linearSchedule(init: number, end: number, steps: number): Schedule {
  if (steps < 1) throw new RangeError(`[linear_schedule] steps must be greater than 0, but got ${steps}.`);
  return libraryFunction<Schedule>((step) => add(multiply(minimum(step, steps), float((end - init) / steps)), init));
}
