// mg.fast: fused ops (rmsNorm, layerNorm, rope, scaledDotProductAttention, crossEntropy), the
// attention planner (sdpaPlan) and custom Metal kernels (metalKernel). Each op is a library call
// (ts/core/ownership.ts): what it builds and does not return is freed after its last use.
import { libraryFunctions } from "../core/ownership.ts";
import * as ops from "./ops.ts";

export { CustomKernel, kernelCompileCount, metalKernel } from "./metal-kernel.ts";
export type { MetalKernel, MetalKernelCall, MetalKernelInput, MetalKernelOptions, TemplateArg } from "./metal-kernel.ts";
export const { crossEntropy, layerNorm, rmsNorm, rope, scaledDotProductAttention, sdpaPlan } = libraryFunctions(ops);
export type { RopeOptions, SdpaOptions, SdpaPlan, SdpaPlanInput, SdpaStepPlan } from "./ops.ts";
