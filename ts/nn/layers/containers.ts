// Sequential, as mlx.nn.Sequential.
import type { MgArray } from "../../core/array.ts";
import { Module } from "../module.ts";

/** A step of a Sequential: a module or a function of an array. */
export type Layer = Module | ((x: MgArray) => MgArray);

/**
 * Calls its modules (or plain functions) in order; they are the list entry `layers`.
 * @example
 * new mg.nn.Sequential(new mg.nn.Linear(2, 3), mg.nn.relu, new mg.nn.Linear(3, 1)).forward(mg.ones([4, 2])).shape
 */
export class Sequential extends Module {
  declare layers: Layer[];
  constructor(...modules: Layer[]) {
    super();
    this.layers = [...modules];
  }
  override forward(x: MgArray): MgArray {
    for (const m of this.layers) x = (m instanceof Module ? m.forward(x) : m(x)) as MgArray;
    return x;
  }
}
