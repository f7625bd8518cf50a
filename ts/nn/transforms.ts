// nn.valueAndGrad and nn.checkpoint, as mlx.nn.value_and_grad / mlx.nn.checkpoint: transforms
// with respect to a module's trainable parameters. The module holds the transform's tracers while
// `fn` runs and its own parameters again afterwards (MLX leaves the tracers in place; restoring
// keeps a module from accumulating views of views across calls).
import { valueAndGrad as mgValueAndGrad } from "../autograd/grad.ts";
import { checkpoint as mgCheckpoint } from "../autograd/custom.ts";
import { libraryFunction } from "../core/ownership.ts";
import { Module } from "./module.ts";

type AnyFn = (...args: any[]) => any;

function checkModule(model: unknown, op: string): asserts model is Module {
  if (!(model instanceof Module)) throw new TypeError(`[${op}] the first argument must be an mg.nn.Module.`);
}

/**
 * Returns a function computing `fn(...args)` and its gradient with respect to `model`'s trainable
 * parameters (a tree shaped like model.trainableParameters()): `[value, grads]`.
 */
export function valueAndGrad<F extends AnyFn>(model: Module, fn: F): (...args: Parameters<F>) => [ReturnType<F>, any] {
  checkModule(model, "value_and_grad");
  if (typeof fn !== "function") throw new TypeError("[value_and_grad] fn must be a function.");
  const inner = (params: Record<string, unknown>, ...args: unknown[]) => {
    model.updateUnkept(params);
    return fn(...args);
  };
  const valueGrad = mgValueAndGrad(inner);
  return libraryFunction((...args: Parameters<F>) => {
    const params = model.trainableParameters();
    try {
      return valueGrad(params, ...args) as [ReturnType<F>, any];
    } finally {
      model.updateUnkept(params);
    }
  });
}

/**
 * Gradient checkpointing of `fn` (default: the module's forward) with respect to the module's
 * trainable parameters and fn's inputs: the backward pass recomputes fn's intermediates.
 */
export function checkpoint<F extends AnyFn>(module: Module, fn?: F): F {
  checkModule(module, "checkpoint");
  const call: AnyFn = fn ?? ((...args: unknown[]) => module.forward(...args));
  const inner = (params: Record<string, unknown>, ...args: unknown[]) => {
    module.updateUnkept(params);
    return call(...args);
  };
  const checkpointed = mgCheckpoint(inner);
  return libraryFunction((...args: unknown[]) => {
    const params = module.trainableParameters();
    try {
      return checkpointed(params, ...args);
    } finally {
      module.updateUnkept(params);
    }
  }) as unknown as F;
}
