// Function transforms: grad, valueAndGrad, vjp, jvp, vmap, customFunction, checkpoint.
export { grad, valueAndGrad } from "./grad.ts";
export type { Argnums } from "./grad.ts";
export { vjp } from "./vjp.ts";
export { jvp } from "./jvp.ts";
export { vmap } from "./vmap.ts";
export type { AxesSpec } from "./vmap.ts";
export { checkpoint, customFunction } from "./custom.ts";
export type { CustomFunction, CustomJvp, CustomVjp, CustomVmap } from "./custom.ts";
