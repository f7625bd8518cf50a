// mg.fast: fused ops (rmsNorm, layerNorm, rope, scaledDotProductAttention, crossEntropy), the
// attention planner (sdpaPlan) and custom Metal kernels (metalKernel).
export { CustomKernel, kernelCompileCount, metalKernel } from "./metal-kernel.ts";
export type { MetalKernel, MetalKernelCall, MetalKernelInput, MetalKernelOptions, TemplateArg } from "./metal-kernel.ts";
export { crossEntropy, layerNorm, rmsNorm, rope, scaledDotProductAttention, sdpaPlan } from "./ops.ts";
export type { RopeOptions, SdpaOptions, SdpaPlan, SdpaPlanInput, SdpaStepPlan } from "./ops.ts";
