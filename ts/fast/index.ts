// mg.fast: custom Metal kernels (and, later, fused ops such as rms_norm and rope).
export { CustomKernel, kernelCompileCount, metalKernel } from "./metal-kernel.ts";
export type { MetalKernel, MetalKernelCall, MetalKernelInput, MetalKernelOptions, TemplateArg } from "./metal-kernel.ts";
