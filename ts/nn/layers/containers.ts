// Sequential, as mlx.nn.Sequential.
import { Module } from "../module.ts";

type Layer = Module | ((x: any) => any);

/** Calls its modules (or plain functions) in order; they are the list entry `layers`. */
export class Sequential extends Module {
  declare layers: Layer[];
  constructor(...modules: Layer[]) {
    super();
    this.layers = [...modules];
  }
  override forward(x: any): any {
    for (const m of this.layers) x = m instanceof Module ? m.forward(x) : m(x);
    return x;
  }
}
