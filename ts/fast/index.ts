// mg.fast: fused ops (rmsNorm, layerNorm, rope, scaledDotProductAttention, crossEntropy), the
// attention planner (sdpaPlan) and custom Metal kernels (metalKernel), through the options helper
// (ts/core/options.ts). Each op is a library call (ts/core/ownership.ts): what it builds and does
// not return is freed after its last use.
import { publicFunctions } from "../core/options.ts";
import * as metalKernelFns from "./metal-kernel.ts";
import * as ops from "./ops.ts";

// metalKernel returns a library function; it builds no arrays itself.
export const { kernelCompileCount, metalKernel } = publicFunctions("fast.", metalKernelFns, { library: false });
export { CustomKernel } from "./metal-kernel.ts";
export type { MetalKernel, MetalKernelCall, MetalKernelInput, MetalKernelOptions, TemplateArg } from "./metal-kernel.ts";
export const { crossEntropy, layerNorm, rmsNorm, rope, scaledDotProductAttention, sdpaPlan } = publicFunctions("fast.", ops);
export type { RopeOptions, SdpaOptions, SdpaPlan, SdpaPlanInput, SdpaStepPlan } from "./ops.ts";
