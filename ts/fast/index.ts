// mg.fast: custom Metal kernels (and, later, fused ops such as rms_norm and rope), through the
// options helper (ts/core/options.ts).
import { publicFunctions } from "../core/options.ts";
import * as metalKernelFns from "./metal-kernel.ts";

// metalKernel returns a library function; it builds no arrays itself.
export const { kernelCompileCount, metalKernel } = publicFunctions("fast.", metalKernelFns, { library: false });
export { CustomKernel } from "./metal-kernel.ts";
export type { MetalKernel, MetalKernelCall, MetalKernelInput, MetalKernelOptions, TemplateArg } from "./metal-kernel.ts";
