// nn.valueAndGrad and nn.checkpoint, as mlx.nn.value_and_grad / mlx.nn.checkpoint: transforms
// with respect to a module's trainable parameters. The module holds the transform's tracers while
// `fn` runs and its own parameters again afterwards (MLX leaves the tracers in place; restoring
// keeps a module from accumulating views of views across calls).
import { valueAndGrad as mgValueAndGrad } from "../autograd/grad.ts";
import { checkpoint as mgCheckpoint } from "../autograd/custom.ts";
import { libraryFunction } from "../core/ownership.ts";
import { Module, type ParametersOf } from "./module.ts";
import type { Transformable } from "../autograd/tree.ts";

type AnyFn = (...args: unknown[]) => unknown;

function checkModule(model: unknown, op: string): asserts model is Module {
  if (!(model instanceof Module)) throw new TypeError(`[${op}] the first argument must be an mg.nn.Module.`);
}

/**
 * Returns a function computing `fn(...args)` and its gradient with respect to `model`'s trainable
 * parameters: `[value, grads]`, grads shaped (and typed) like model.trainableParameters().
 * @example
 * const model = new mg.nn.Linear(2, 1);
 * const [loss, grads] = mg.nn.valueAndGrad(model, (x: mg.MgArray) => mg.sum(model.forward(x)))(mg.ones([3, 2]));
 * grads.weight
 */
export function valueAndGrad<M extends Module, P extends unknown[], R>(model: M, fn: (...args: P) => R): (...args: P) => [R, ParametersOf<M>] {
  checkModule(model, "value_and_grad");
  if (typeof fn !== "function") throw new TypeError("[value_and_grad] fn must be a function.");
  const call = fn as unknown as AnyFn;
  const inner = (params: Record<string, unknown>, ...args: unknown[]) => {
    model.updateUnkept(params);
    return call(...args);
  };
  const valueGrad = mgValueAndGrad(inner);
  return libraryFunction((...args: P) => {
    const params = model.trainableParameters() as Record<string, unknown>;
    try {
      return valueGrad(params, ...args) as [R, ParametersOf<M>];
    } finally {
      model.updateUnkept(params);
    }
  });
}

/**
 * Gradient checkpointing of `fn` (default: the module's forward) with respect to the module's
 * trainable parameters and fn's inputs: the backward pass recomputes fn's intermediates.
 * @example
 * const layer = new mg.nn.Linear(2, 2);
 * mg.nn.checkpoint(layer)(mg.ones([1, 2])).shape
 */
export function checkpoint<M extends Module>(module: M): M["forward"];
export function checkpoint<F extends Transformable>(module: Module, fn: F): F;
export function checkpoint(module: Module, fn?: Transformable): Transformable {
  checkModule(module, "checkpoint");
  const call: AnyFn = (fn as AnyFn | undefined) ?? ((...args: unknown[]) => module.forward(...args));
  const inner = (params: Record<string, unknown>, ...args: unknown[]) => {
    module.updateUnkept(params);
    return call(...args);
  };
  const checkpointed = mgCheckpoint(inner);
  return libraryFunction((...args: unknown[]) => {
    const params = module.trainableParameters() as Record<string, unknown>;
    try {
      return checkpointed(params, ...args);
    } finally {
      module.updateUnkept(params);
    }
  });
}
