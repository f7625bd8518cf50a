// The Optimizer base class and MultiOptimizer, as mlx.optimizers. The state is a tree: "step" (a
// uint64 scalar), hyperparameters such as "learning_rate" (scalar arrays, recomputed each step when
// scheduled), and per-parameter dicts shaped like the parameters ({ layers: [{ weight: { m, v } }] }),
// with MLX's keys so states are interchangeable. Each update is lazy: evaluating the new parameters
// and the state together runs a whole step, and on the GPU each parameter's chain of elementwise
// ops fuses into one kernel.
import { MgArray } from "../core/array.ts";
import { type Dtype, float32, uint64 } from "../core/dtype.ts";
import { array } from "../core/ops/convert.ts";
import { add, astype } from "../core/ops/elementwise.ts";
import { libraryCall, retain } from "../core/ownership.ts";
import { keep } from "../memory/scope.ts";
import { callUser, type Module } from "../nn/module.ts";
import { dictEntries, type FlatTree, type NestedTree, treeFlatten, treeMap, treeMerge, treeUnflatten } from "../utils/tree.ts";
import { isPlainObject } from "../autograd/tree.ts";

/** A schedule maps the step (a uint64 scalar array) to a hyperparameter value. */
export type Schedule = (step: MgArray) => MgArray;
/** A hyperparameter: a number, an array, or a schedule. */
export type Scheduled = number | MgArray | Schedule;

/** One parameter's state (Adam's `m` and `v` …): arrays by name. */
export type State = Record<string, MgArray>;
/** The optimizer's state: `step`, `learning_rate` and the hyperparameters, and the per-parameter
 *  states in a tree shaped like the parameters. */
export type OptimizerState = Record<string, unknown>;

function scalar(v: number | MgArray): MgArray {
  // JS cannot tell 1.0 from 1: hyperparameters are float32 as MLX's Python floats make them.
  return v instanceof MgArray ? v : array(v, float32);
}

/**
 * The base class of optimizers, as mlx.optimizers.Optimizer: `update(model, grads)`, `applyGradients`, `state`, `learningRate`; subclasses define initSingle and applySingle.
 * @example
 * new mg.optimizers.SGD(0.5).learningRate
 */
export abstract class Optimizer {
  protected _initialized = false;
  protected _state: OptimizerState;
  protected readonly _schedulers: Record<string, Schedule>;
  /** Scalars of the current step shared by every parameter's update (see perStep). */
  private readonly _perStep = new Map<string, MgArray>();

  constructor(schedulers: Record<string, Schedule> | null = null) {
    this._state = { step: array(0n, uint64) };
    this._schedulers = { ...(schedulers ?? {}) };
  }

  /** Applies the gradients to the model's parameters (model.update(applyGradients(grads, model))). */
  update(model: Module, gradients: NestedTree<MgArray>): void {
    // One library call: the update's intermediates are freed after their last use; the new
    // parameters are retained by model.update and the state by applyGradients.
    libraryCall(() => model.update(this.applyGradients(gradients, model)));
  }

  /**
   * Creates the per-parameter state for `parameters` (a tree like model.trainableParameters()),
   * keeping state that already exists; runs on the first update otherwise.
   */
  init(parameters: NestedTree<MgArray>): void {
    const empty = (t: unknown) => treeMap(() => ({}), t);
    const merge = (params: unknown, state: unknown): unknown => {
      if (Array.isArray(params)) {
        const s = Array.isArray(state) ? [...state] : [];
        for (let i = 0; i < s.length && i < params.length; i++) s[i] = merge(params[i], s[i]);
        for (let i = s.length; i < params.length; i++) s.push(empty(params[i]));
        return s;
      }
      const entries = dictEntries(params);
      if (entries) {
        const dict = state as Record<string, unknown>;
        for (const [k, v] of entries) dict[k] = k in dict ? merge(v, dict[k]) : empty(v);
        return state;
      }
      return state;
    };
    merge(parameters, this._state);
    const tree: unknown = parameters;
    treeMap((p: unknown, s: unknown) => {
      if (p instanceof MgArray && isPlainObject(s) && Object.keys(s).length === 0) this.initSingle(p, s as State);
    }, tree, this._state);
    keepState(this._state);
    this._initialized = true;
  }

  /** Fills `state` (an empty object) for one parameter. */
  abstract initSingle(parameter: MgArray, state: State): void;

  /**
   * The updated parameters for `gradients` (a tree like the trainable parameters) applied to
   * `parameters` (a tree or the model itself, read at the gradients' places).
   */
  applyGradients<G extends NestedTree<MgArray>>(gradients: G, parameters: NestedTree<MgArray> | Module): G {
    return libraryCall(() => {
      if (!this._initialized) this.init(gradients);
      for (const [name, schedule] of Object.entries(this._schedulers)) this.state[name] = callUser(schedule, this.step);
      this.state.step = add(this.step, 1);
      this._perStep.clear();
      const grads: unknown = gradients;
      const out = treeMap((g: MgArray, p: MgArray, s: State) => this.applySingle(g, p, s), grads, parameters, this.state);
      keepState(this.state);
      return out as unknown as G;
    });
  }

  /**
   * A scalar of this step (the learning rate in a dtype, a bias correction) made once and shared
   * by every parameter's update: on the GPU a 0-d result is its own dispatch, so making it per
   * parameter would add a dispatch per parameter to the one fused update kernel.
   */
  protected perStep(key: string, make: () => MgArray): MgArray {
    let v = this._perStep.get(key);
    if (!v) this._perStep.set(key, (v = make()));
    return v;
  }

  /** The learning rate in `dtype` (MLX's learning_rate.astype(gradient.dtype)), once per step. */
  protected lr(dtype: Dtype): MgArray {
    return this.perStep(`lr/${dtype.name}`, () => astype(this.learningRate, dtype));
  }

  /** The updated parameter (and updated `state`) for one gradient. */
  abstract applySingle(gradient: MgArray, parameter: MgArray, state: State): MgArray;

  /** The optimizer's state tree (setting it re-initialises on the next update). */
  get state(): OptimizerState {
    return this._state;
  }
  set state(state: OptimizerState) {
    this._initialized = false;
    this._state = state;
  }

  /** The number of updates so far (a uint64 scalar). */
  get step(): MgArray {
    return this.state.step as MgArray;
  }

  get learningRate(): MgArray {
    return this.state.learning_rate as MgArray;
  }
  set learningRate(lr: number | MgArray) {
    this.state.learning_rate = keepState(scalar(lr));
  }

  /** Stores a hyperparameter: a schedule is evaluated at each step, a value becomes a scalar array. */
  protected maybeSchedule(name: string, param: Scheduled): void {
    let value: MgArray;
    if (typeof param === "function") {
      this._schedulers[name] = param;
      value = callUser(param, this.step);
    } else value = scalar(param);
    this.state[name] = keepState(value);
  }
}

/** A filter of MultiOptimizer: (dotted parameter path, gradient) → whether it is this optimizer's. */
export type ParameterFilter = (path: string, gradient: MgArray) => boolean;

/**
 * Several optimizers over disjoint parameter sets: parameter k goes to the first optimizer whose
 * filter accepts it (the last optimizer takes the rest), as mlx.optimizers.MultiOptimizer.
 * @example
 * const opt = new mg.optimizers.MultiOptimizer([new mg.optimizers.SGD(1), new mg.optimizers.SGD(0.1)], [(path) => path === "a"]);
 * opt.applyGradients({ a: mg.ones([1]), b: mg.ones([1]) }, { a: mg.zeros([1]), b: mg.zeros([1]) })
 */
export class MultiOptimizer extends Optimizer {
  readonly optimizers: Optimizer[];
  readonly filters: ParameterFilter[];

  constructor(optimizers: Optimizer[], filters: ParameterFilter[] = []) {
    super();
    this._state = {};
    if (filters.length !== optimizers.length - 1) {
      throw new Error(`[MultiOptimizer] Given ${filters.length} filters but ${optimizers.length - 1} needed.`);
    }
    this.optimizers = optimizers;
    this.filters = [...filters, () => true];
  }

  private splitDictionary(gradients: NestedTree<MgArray>): NestedTree<MgArray>[] {
    if (this.optimizers.length === 1) return [gradients];
    const parts: FlatTree<MgArray>[] = this.optimizers.map(() => []);
    for (const [k, g] of treeFlatten(gradients as unknown) as [string, MgArray][]) {
      const i = this.filters.findIndex((f) => f(k, g));
      parts[i]!.push([k, g]);
    }
    return parts.map((p) => (p.length > 0 ? (treeUnflatten(p) as NestedTree<MgArray>) : {}));
  }

  override init(parameters: NestedTree<MgArray>): void {
    const parts = this.splitDictionary(parameters);
    this.optimizers.forEach((o, i) => o.init(parts[i]!));
  }

  initSingle(): void {
    throw new Error("[MultiOptimizer] state is held by the inner optimizers.");
  }
  applySingle(): MgArray {
    throw new Error("[MultiOptimizer] updates are made by the inner optimizers.");
  }

  override applyGradients<G extends NestedTree<MgArray>>(gradients: G, parameters: NestedTree<MgArray> | Module): G {
    const parts = this.splitDictionary(gradients);
    let tree: unknown = {};
    this.optimizers.forEach((o, i) => {
      tree = treeMerge(tree, o.applyGradients(parts[i]!, parameters) as unknown);
    });
    return tree as G;
  }

  override get state(): OptimizerState {
    return { states: this.optimizers.map((o) => o.state) };
  }
  override set state(state: OptimizerState) {
    const states = state?.states;
    if (!Array.isArray(states) || states.length !== this.optimizers.length) {
      throw new Error("[MultiOptimizer] Invalid state provided");
    }
    this.optimizers.forEach((o, i) => (o.state = states[i] as OptimizerState));
  }

  override get learningRate(): MgArray {
    return this.optimizers[0]!.learningRate;
  }
  override set learningRate(lr: number | MgArray) {
    for (const o of this.optimizers) o.learningRate = lr;
  }
}

/** Optimizer state outlives the call that made it (ownership) and any tidy scope around a step. */
function keepState<T>(state: T): T {
  return keep(retain(state));
}
