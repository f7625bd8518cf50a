// Function transforms: grad, valueAndGrad, vjp, jvp, vmap, customFunction, checkpoint. Each goes
// through the options helper (ts/core/options.ts); the functions they return are library calls.
import { publicFunction } from "../core/options.ts";
import { grad as gradImpl, valueAndGrad as valueAndGradImpl } from "./grad.ts";
import { vjp as vjpImpl } from "./vjp.ts";
import { jvp as jvpImpl } from "./jvp.ts";
import { vmap as vmapImpl } from "./vmap.ts";
import { checkpoint as checkpointImpl, customFunction as customFunctionImpl } from "./custom.ts";

const transform = { library: false } as const;
export const grad = publicFunction("grad", gradImpl, transform);
export const valueAndGrad = publicFunction("valueAndGrad", valueAndGradImpl, transform);
export const vjp = publicFunction("vjp", vjpImpl);
export const jvp = publicFunction("jvp", jvpImpl);
export const vmap = publicFunction("vmap", vmapImpl, transform);
export const checkpoint = publicFunction("checkpoint", checkpointImpl, transform);
export const customFunction = publicFunction("customFunction", customFunctionImpl, transform);
export type { Argnums } from "./grad.ts";
export type { AxesSpec } from "./vmap.ts";
export type { CustomFunction, CustomJvp, CustomVjp, CustomVmap } from "./custom.ts";
