// The optimizers of mlx.optimizers, formula for formula (same op order, so float32 results round
// the same way): SGD, RMSprop, Adagrad, AdaDelta, Adam, AdamW, Adamax, Lion, Adafactor, Muon, and
// clipGradNorm.
import type { MgArray } from "../core/array.ts";
import { float16, float32, floating, issubdtype } from "../core/dtype.ts";
import { zeros, zerosLike } from "../core/ops/creation.ts";
import {
  abs, add, astype, divide, maximum, minimum, multiply, power, rsqrt, sign, sqrt, square, subtract,
} from "../core/ops/elementwise.ts";
import { depends } from "../core/ops/depends.ts";
import { addmm, matmul } from "../core/ops/linalg-core.ts";
import { mean, sum } from "../core/ops/reduce.ts";
import { expandDims, reshape } from "../core/ops/shape.ts";
import { resolveOptions, type Trailing } from "../core/options.ts";
import { treeMap, treeReduce } from "../utils/tree.ts";
import { Optimizer, type Scheduled, type State } from "./optimizer.ts";

/**
 * The new parameter, evaluated after `state` (a view of it that depends on the state). A state
 * update the parameter's update does not read (Lion's m, AdaDelta's u) is otherwise evaluated
 * apart, after every parameter, and the GPU fuses it into a second kernel per parameter; planned
 * just before the parameter it joins the parameter's one fused kernel.
 */
function fuseWith(parameter: MgArray, state: MgArray, scalars: MgArray[] = []): MgArray {
  // The step's scalars come first, so that they do not cut the state's kernel from the parameter's.
  return depends(parameter, [...scalars, state]);
}

/**
 * Stochastic gradient descent with optional momentum, weight decay, dampening and Nesterov
 * momentum, as optimizers.SGD(learning_rate, momentum=0.0, weight_decay=0.0, dampening=0.0,
 * nesterov=False).
 * @example
 * new mg.optimizers.SGD(0.1).applyGradients({ w: mg.ones([2]) }, { w: mg.zeros([2]) }).w
 */
export class SGD extends Optimizer {
  readonly momentum: number;
  readonly weightDecay: number;
  readonly dampening: number;
  readonly nesterov: boolean;
  constructor(
    learningRate: Scheduled,
    ...rest: Trailing<
      [momentum: number, weightDecay: number, dampening: number, nesterov: boolean],
      { momentum?: number; weightDecay?: number; dampening?: number; nesterov?: boolean }
    >
  ) {
    super();
    const o = resolveOptions("SGD", rest, { momentum: 0.0, weightDecay: 0.0, dampening: 0.0, nesterov: false });
    if (o.nesterov && (o.momentum <= 0 || o.dampening !== 0)) throw new Error("[SGD] Nesterov momentum requires a momentum and zero dampening.");
    this.maybeSchedule("learning_rate", learningRate);
    this.momentum = o.momentum;
    this.weightDecay = o.weightDecay;
    this.dampening = o.dampening;
    this.nesterov = o.nesterov;
  }
  initSingle(parameter: MgArray, state: State): void {
    state.v = zerosLike(parameter);
  }
  applySingle(gradient: MgArray, parameter: MgArray, state: State): MgArray {
    if (this.weightDecay !== 0) gradient = add(gradient, multiply(this.weightDecay, parameter));
    const lr = this.lr(gradient.dtype);
    if (this.momentum <= 0) return subtract(parameter, multiply(lr, gradient));
    let v = multiply(this.momentum, state.v!);
    v = this.dampening > 0 ? add(v, multiply(1 - this.dampening, gradient)) : add(v, gradient);
    const update = this.nesterov ? add(gradient, multiply(this.momentum, v)) : v;
    state.v = v;
    return subtract(parameter, multiply(lr, update));
  }
}

/**
 * RMSprop, as optimizers.RMSprop(learning_rate, alpha=0.99, eps=1e-8).
 * @example
 * new mg.optimizers.RMSprop(0.1).applyGradients({ w: mg.ones([2]) }, { w: mg.zeros([2]) }).w
 */
export class RMSprop extends Optimizer {
  readonly alpha: number;
  readonly eps: number;
  constructor(learningRate: Scheduled, ...rest: Trailing<[alpha: number, eps: number], { alpha?: number; eps?: number }>) {
    super();
    const o = resolveOptions("RMSprop", rest, { alpha: 0.99, eps: 1e-8 });
    this.maybeSchedule("learning_rate", learningRate);
    this.alpha = o.alpha;
    this.eps = o.eps;
    if (this.alpha < 0) throw new RangeError(`[RMSprop] alpha should be >=0, ${this.alpha} was provided instead`);
    if (this.eps <= 0) throw new RangeError(`[RMSprop] epsilon should be >0, ${this.eps} was provided instead`);
  }
  initSingle(parameter: MgArray, state: State): void {
    state.v = zerosLike(parameter);
  }
  applySingle(gradient: MgArray, parameter: MgArray, state: State): MgArray {
    const lr = this.lr(gradient.dtype);
    const v = add(multiply(this.alpha, state.v!), multiply(1 - this.alpha, square(gradient)));
    state.v = v;
    return subtract(parameter, divide(multiply(lr, gradient), add(sqrt(v), this.eps)));
  }
}

/**
 * Adagrad, as optimizers.Adagrad(learning_rate, eps=1e-8).
 * @example
 * new mg.optimizers.Adagrad(0.1).applyGradients({ w: mg.ones([2]) }, { w: mg.zeros([2]) }).w
 */
export class Adagrad extends Optimizer {
  readonly eps: number;
  constructor(learningRate: Scheduled, ...rest: Trailing<[eps: number], { eps?: number }>) {
    super();
    const o = resolveOptions("Adagrad", rest, { eps: 1e-8 });
    this.maybeSchedule("learning_rate", learningRate);
    this.eps = o.eps;
    if (this.eps <= 0) throw new RangeError(`[Adagrad] epsilon should be >0, ${this.eps} was provided instead`);
  }
  initSingle(parameter: MgArray, state: State): void {
    state.v = zerosLike(parameter);
  }
  applySingle(gradient: MgArray, parameter: MgArray, state: State): MgArray {
    const lr = this.lr(gradient.dtype);
    const v = add(state.v!, square(gradient));
    state.v = v;
    return subtract(parameter, divide(multiply(lr, gradient), add(sqrt(v), this.eps)));
  }
}

/**
 * AdaDelta, as optimizers.AdaDelta(learning_rate, rho=0.9, eps=1e-6).
 * @example
 * new mg.optimizers.AdaDelta(1.0).applyGradients({ w: mg.ones([2]) }, { w: mg.zeros([2]) }).w
 */
export class AdaDelta extends Optimizer {
  readonly rho: number;
  readonly eps: number;
  constructor(learningRate: Scheduled, ...rest: Trailing<[rho: number, eps: number], { rho?: number; eps?: number }>) {
    super();
    const o = resolveOptions("AdaDelta", rest, { rho: 0.9, eps: 1e-6 });
    this.maybeSchedule("learning_rate", learningRate);
    this.rho = o.rho;
    this.eps = o.eps;
    if (this.rho < 0) throw new RangeError(`[AdaDelta] rho should be >=0, ${this.rho} was provided instead`);
    if (this.eps <= 0) throw new RangeError(`[AdaDelta] epsilon should be >0, ${this.eps} was provided instead`);
  }
  initSingle(parameter: MgArray, state: State): void {
    state.v = zerosLike(parameter);
    state.u = zerosLike(parameter);
  }
  applySingle(gradient: MgArray, parameter: MgArray, state: State): MgArray {
    const lr = this.lr(gradient.dtype);
    const { rho, eps } = this;
    const v = add(multiply(rho, state.v!), multiply(1 - rho, square(gradient)));
    const d = multiply(divide(sqrt(add(state.u!, eps)), sqrt(add(v, eps))), gradient);
    const u = add(multiply(rho, state.u!), multiply(1 - rho, square(d)));
    state.v = v;
    state.u = u;
    return fuseWith(subtract(parameter, multiply(lr, d)), u, [lr]);
  }
}

function checkBetas(op: string, betas: readonly number[]): void {
  betas.forEach((b, i) => {
    if (!(b >= 0 && b < 1)) throw new RangeError(`[${op}] beta${i + 1} should be in [0, 1), ${b} was provided instead`);
  });
}

/**
 * Adam, as optimizers.Adam(learning_rate, betas=[0.9, 0.999], eps=1e-8, bias_correction=False):
 * MLX's default has no bias correction.
 * @example
 * new mg.optimizers.Adam(0.1).applyGradients({ w: mg.ones([2]) }, { w: mg.zeros([2]) }).w
 */
export class Adam extends Optimizer {
  readonly betas: [number, number];
  readonly eps: number;
  readonly biasCorrection: boolean;
  constructor(
    learningRate: Scheduled,
    ...rest: Trailing<[betas: readonly number[], eps: number, biasCorrection: boolean], { betas?: readonly number[]; eps?: number; biasCorrection?: boolean }>
  ) {
    super();
    const o = resolveOptions(new.target.name, rest, { betas: [0.9, 0.999] as readonly number[], eps: 1e-8, biasCorrection: false });
    checkBetas(new.target.name, o.betas);
    if (!(o.eps >= 0)) throw new RangeError(`[${new.target.name}] epsilon should be >=0, ${o.eps} was provided instead`);
    this.maybeSchedule("learning_rate", learningRate);
    this.betas = [o.betas[0]!, o.betas[1]!];
    this.eps = o.eps;
    this.biasCorrection = o.biasCorrection;
  }
  initSingle(parameter: MgArray, state: State): void {
    state.m = zerosLike(parameter);
    state.v = zerosLike(parameter);
  }
  applySingle(gradient: MgArray, parameter: MgArray, state: State): MgArray {
    const lr = this.lr(gradient.dtype);
    const [b1, b2] = this.betas;
    const step = this.step;
    const m = add(multiply(b1, state.m!), multiply(1 - b1, gradient));
    const v = add(multiply(b2, state.v!), multiply(1 - b2, square(gradient)));
    state.m = m;
    state.v = v;
    if (this.biasCorrection) {
      const d = gradient.dtype;
      const c1 = this.perStep(`c1/${d.name}`, () => astype(divide(lr, subtract(1, power(b1, step))), d));
      const c2 = this.perStep(`c2/${d.name}`, () => astype(rsqrt(subtract(1, power(b2, step))), d));
      return subtract(parameter, divide(multiply(c1, m), add(multiply(sqrt(v), c2), this.eps)));
    }
    return subtract(parameter, divide(multiply(lr, m), add(sqrt(v), this.eps)));
  }
}

/**
 * Adam with decoupled weight decay, as optimizers.AdamW(learning_rate, betas=[0.9, 0.999],
 * eps=1e-8, weight_decay=0.01, bias_correction=False).
 * @example
 * new mg.optimizers.AdamW(0.1).applyGradients({ w: mg.ones([2]) }, { w: mg.ones([2]) }).w
 */
export class AdamW extends Adam {
  readonly weightDecay: number;
  constructor(
    learningRate: Scheduled,
    ...rest: Trailing<
      [betas: readonly number[], eps: number, weightDecay: number, biasCorrection: boolean],
      { betas?: readonly number[]; eps?: number; weightDecay?: number; biasCorrection?: boolean }
    >
  ) {
    const o = resolveOptions("AdamW", rest, { betas: [0.9, 0.999] as readonly number[], eps: 1e-8, weightDecay: 0.01, biasCorrection: false });
    super(learningRate, o.betas, o.eps, o.biasCorrection);
    this.weightDecay = o.weightDecay;
  }
  override applySingle(gradient: MgArray, parameter: MgArray, state: State): MgArray {
    const lr = this.lr(gradient.dtype);
    const decay = this.perStep(`decay/${gradient.dtype.name}`, () => subtract(1, multiply(lr, this.weightDecay)));
    return super.applySingle(gradient, multiply(parameter, decay), state);
  }
}

/**
 * Adamax (Adam with the infinity norm), as optimizers.Adamax(learning_rate, betas=[0.9, 0.999], eps=1e-8).
 * @example
 * new mg.optimizers.Adamax(0.1).applyGradients({ w: mg.ones([2]) }, { w: mg.zeros([2]) }).w
 */
export class Adamax extends Adam {
  constructor(learningRate: Scheduled, ...rest: Trailing<[betas: readonly number[], eps: number], { betas?: readonly number[]; eps?: number }>) {
    const o = resolveOptions("Adamax", rest, { betas: [0.9, 0.999] as readonly number[], eps: 1e-8 });
    super(learningRate, o.betas, o.eps);
  }
  override applySingle(gradient: MgArray, parameter: MgArray, state: State): MgArray {
    const lr = this.lr(gradient.dtype);
    const [b1, b2] = this.betas;
    const m = add(multiply(b1, state.m!), multiply(1 - b1, gradient));
    const v = maximum(multiply(b2, state.v!), abs(gradient));
    state.m = m;
    state.v = v;
    return subtract(parameter, divide(multiply(lr, m), add(v, this.eps)));
  }
}

/**
 * Lion (sign updates), as optimizers.Lion(learning_rate, betas=[0.9, 0.99], weight_decay=0.0).
 * @example
 * new mg.optimizers.Lion(0.1).applyGradients({ w: mg.ones([2]) }, { w: mg.zeros([2]) }).w
 */
export class Lion extends Optimizer {
  readonly betas: [number, number];
  readonly weightDecay: number;
  constructor(learningRate: Scheduled, ...rest: Trailing<[betas: readonly number[], weightDecay: number], { betas?: readonly number[]; weightDecay?: number }>) {
    super();
    const o = resolveOptions("Lion", rest, { betas: [0.9, 0.99] as readonly number[], weightDecay: 0.0 });
    checkBetas("Lion", o.betas);
    this.maybeSchedule("learning_rate", learningRate);
    this.betas = [o.betas[0]!, o.betas[1]!];
    this.weightDecay = o.weightDecay;
  }
  initSingle(parameter: MgArray, state: State): void {
    state.m = zerosLike(parameter);
  }
  applySingle(gradient: MgArray, parameter: MgArray, state: State): MgArray {
    const lr = this.lr(gradient.dtype);
    const [b1, b2] = this.betas;
    const m = state.m! as MgArray;
    const c = add(multiply(b1, m), multiply(1 - b1, gradient));
    state.m = add(multiply(b2, m), multiply(1 - b2, gradient));
    const next = state.m! as MgArray;
    const scalars = [lr];
    if (this.weightDecay > 0) {
      const decay = this.perStep(`decay/${gradient.dtype.name}`, () => subtract(1, multiply(lr, this.weightDecay)));
      scalars.push(decay);
      parameter = multiply(decay, parameter);
    }
    return fuseWith(subtract(parameter, multiply(lr, sign(c))), next, scalars);
  }
}

interface AdafactorOptions {
  learningRate?: Scheduled | null;
  eps?: readonly [number, number];
  clipThreshold?: number;
  decayRate?: number;
  beta1?: number | null;
  weightDecay?: number;
  scaleParameter?: boolean;
  relativeStep?: boolean;
  warmupInit?: boolean;
}

/**
 * Adafactor (factored second moments for matrices), as optimizers.Adafactor(learning_rate=None,
 * eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8, beta_1=None, weight_decay=0.0,
 * scale_parameter=True, relative_step=True, warmup_init=False).
 * @example
 * new mg.optimizers.Adafactor().applyGradients({ w: mg.ones([2]) }, { w: mg.zeros([2]) }).w.shape
 */
export class Adafactor extends Optimizer {
  readonly eps: readonly [number, number];
  readonly clipThreshold: number;
  readonly decayRate: number;
  readonly beta1: number | null;
  readonly weightDecay: number;
  readonly scaleParameter: boolean;
  readonly relativeStep: boolean;
  readonly warmupInit: boolean;
  constructor(
    ...rest: Trailing<
      [
        learningRate: Scheduled | null, eps: readonly [number, number], clipThreshold: number, decayRate: number, beta1: number | null,
        weightDecay: number, scaleParameter: boolean, relativeStep: boolean, warmupInit: boolean,
      ],
      AdafactorOptions
    >
  ) {
    super();
    const o = resolveOptions("Adafactor", rest, {
      learningRate: null as Scheduled | null,
      eps: [1e-30, 1e-3] as readonly [number, number],
      clipThreshold: 1.0,
      decayRate: -0.8,
      beta1: null as number | null,
      weightDecay: 0.0,
      scaleParameter: true,
      relativeStep: true,
      warmupInit: false,
    });
    if (o.learningRate !== null) this.maybeSchedule("learning_rate", o.learningRate);
    this.eps = o.eps;
    this.clipThreshold = o.clipThreshold;
    this.decayRate = o.decayRate;
    this.beta1 = o.beta1;
    this.weightDecay = o.weightDecay;
    this.scaleParameter = o.scaleParameter;
    this.relativeStep = o.relativeStep;
    this.warmupInit = o.warmupInit;
  }
  initSingle(parameter: MgArray, state: State): void {
    if (parameter.ndim >= 2) {
      const shape = parameter.shape;
      state.exp_avg_sq_row = zeros(shape.slice(0, -1), parameter.dtype);
      state.exp_avg_sq_col = zeros([...shape.slice(0, -2), shape[shape.length - 1]!], parameter.dtype);
    } else state.exp_avg_sq = zerosLike(parameter);
    if (this.beta1 !== null) state.exp_avg = zerosLike(parameter);
  }
  private rms(x: MgArray): MgArray {
    return sqrt(mean(square(x)));
  }
  private computeLearningRate(step: MgArray, parameterRms: MgArray): MgArray {
    let relative: MgArray;
    if (this.relativeStep) {
      const minStep = this.warmupInit ? multiply(1e-6, step) : 1e-2;
      relative = minimum(minStep, rsqrt(step));
    } else relative = this.learningRate;
    relative = astype(relative, parameterRms.dtype);
    const parameterScale = this.scaleParameter ? maximum(this.eps[1], parameterRms) : 1.0;
    return multiply(parameterScale, relative);
  }
  private approximateExpMovingAvg(row: MgArray, col: MgArray): MgArray {
    const r = rsqrt(divide(row, mean(row, -1, true)));
    const c = rsqrt(col);
    return multiply(expandDims(r, -1), expandDims(c, -2));
  }
  applySingle(gradient: MgArray, parameter: MgArray, state: State): MgArray {
    const factored = gradient.ndim >= 2;
    const step = this.step;
    const parameterRms = this.rms(parameter);
    const learningRate = this.computeLearningRate(step, parameterRms);
    const beta2 = subtract(1.0, astype(power(step, this.decayRate), parameterRms.dtype));
    let update = add(square(gradient), this.eps[0]);
    if (factored) {
      const row = add(multiply(beta2, state.exp_avg_sq_row!), multiply(subtract(1, beta2), mean(update, -1)));
      const col = add(multiply(beta2, state.exp_avg_sq_col!), multiply(subtract(1, beta2), mean(update, -2)));
      state.exp_avg_sq_row = row;
      state.exp_avg_sq_col = col;
      update = multiply(this.approximateExpMovingAvg(row, col), gradient);
    } else {
      const avg = add(multiply(beta2, state.exp_avg_sq!), multiply(subtract(1, beta2), update));
      state.exp_avg_sq = avg;
      update = multiply(rsqrt(avg), gradient);
    }
    update = divide(update, maximum(1.0, divide(this.rms(update), this.clipThreshold)));
    update = multiply(learningRate, update);
    if (this.beta1 !== null) {
      const avg = add(multiply(this.beta1, state.exp_avg!), multiply(1 - this.beta1, update));
      state.exp_avg = avg;
      update = avg;
    }
    if (this.weightDecay !== 0) parameter = add(parameter, multiply(parameter, multiply(-this.weightDecay, learningRate)));
    return subtract(parameter, update);
  }
}

/**
 * Muon (momentum orthogonalised by Newton–Schulz iterations for matrices), as
 * optimizers.Muon(learning_rate, momentum=0.95, weight_decay=0.01, nesterov=True, ns_steps=5).
 * @example
 * new mg.optimizers.Muon(0.1).applyGradients({ w: mg.ones([2, 2]) }, { w: mg.zeros([2, 2]) }).w.shape
 */
export class Muon extends Optimizer {
  readonly momentum: number;
  readonly weightDecay: number;
  readonly nesterov: boolean;
  readonly nsSteps: number;
  constructor(
    learningRate: Scheduled,
    ...rest: Trailing<
      [momentum: number, weightDecay: number, nesterov: boolean, nsSteps: number],
      { momentum?: number; weightDecay?: number; nesterov?: boolean; nsSteps?: number }
    >
  ) {
    super();
    const o = resolveOptions("Muon", rest, { momentum: 0.95, weightDecay: 0.01, nesterov: true, nsSteps: 5 });
    this.maybeSchedule("learning_rate", learningRate);
    this.momentum = o.momentum;
    this.weightDecay = o.weightDecay;
    this.nesterov = o.nesterov;
    this.nsSteps = o.nsSteps;
  }
  initSingle(parameter: MgArray, state: State): void {
    state.v = zerosLike(parameter);
  }
  private zeropowerViaNewtonSchulz5(X: MgArray, steps: number): MgArray {
    if (X.ndim !== 2) throw new Error(`[Muon] Expected a 2D array for Newton-Schulz iteration, got ${X.ndim} dimensions.`);
    const [a, b, c] = [3.4445, -4.775, 2.0315];
    const transposed = X.shape[0]! > X.shape[1]!;
    if (transposed) X = X.T;
    X = divide(X, add(sqrt(sum(square(X), null, true)), 1e-7));
    for (let i = 0; i < steps; i++) {
      const A = matmul(X, X.T);
      const B = addmm(multiply(b, A), A, A, c, 1.0);
      X = addmm(multiply(a, X), B, X, 1.0, 1.0);
    }
    return transposed ? X.T : X;
  }
  applySingle(gradient: MgArray, parameter: MgArray, state: State): MgArray {
    if (this.weightDecay !== 0) gradient = add(gradient, multiply(this.weightDecay, parameter));
    let v = multiply(this.momentum, state.v!);
    v = add(v, multiply(1 - this.momentum, gradient));
    state.v = v;
    let update = this.nesterov ? add(multiply(gradient, 1 - this.momentum), multiply(v, this.momentum)) : v;
    let lr = this.lr(gradient.dtype);
    if (update.ndim >= 2) {
      const shape = update.shape;
      const reshaped = update.ndim > 2;
      if (reshaped) update = reshape(update, [shape[0]!, -1]);
      update = this.zeropowerViaNewtonSchulz5(update, this.nsSteps);
      if (reshaped) update = reshape(update, shape);
      lr = multiply(lr, Math.max(1, update.shape[update.ndim - 2]! / update.shape[update.ndim - 1]!) ** 0.5);
    }
    return subtract(parameter, multiply(lr, update));
  }
}

/**
 * Rescales a gradient tree so its global 2-norm is at most `maxNorm`, as
 * optimizers.clip_grad_norm(grads, max_norm): returns [clipped gradients, total norm].
 * @example
 * mg.optimizers.clipGradNorm({ w: mg.array([3, 4], mg.float32) }, 1)[1]
 */
export function clipGradNorm<T>(grads: T, maxNorm: number): [T, MgArray] {
  const tree: unknown = grads;
  if (maxNorm < 0) throw new RangeError(`[clip_grad_norm] max_norm should be >=0, ${maxNorm} was provided instead`);
  const squaredNorm = (g: MgArray) => sum(square(g.dtype === float16 ? astype(g, float32) : g));
  const normSquared = treeReduce((acc: MgArray | number, g: MgArray) => add(acc, squaredNorm(g)), tree, 0.0) as MgArray;
  const totalNorm = sqrt(normSquared);
  const normalizer = minimum(divide(maxNorm, add(totalNorm, 1e-6)), 1.0);
  const clipped = treeMap((g: MgArray) => (issubdtype(g.dtype, floating) ? astype(multiply(g, normalizer), g.dtype) : multiply(g, normalizer)), tree);
  return [clipped as T, totalNorm];
}
