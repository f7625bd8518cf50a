// The CPU device's kernel table: one TypeScript function per primitive record, registered with
// registerCpu(Record, (inputs, outputs, params) => …), its params typed by the record. Inputs are
// evaluated (and synced); each output must be given data (`out.allocate()` and a write, the
// writers of values.ts, or a view with `setView` from ts/core/layout.ts). Layout-only records
// need no kernel unless their layout rule can return null (then the kernel copies).
import type { MgArray } from "../../core/array.ts";
import type { Primitive } from "../../core/primitive.ts";
import { KernelRegistry } from "../../core/registry.ts";

export type CpuKernel<P> = (inputs: readonly MgArray[], outputs: readonly MgArray[], params: P) => void;

/** The TypeScript kernels: the CPU device's, and the oracle other backends are tested against.
 *  (The registry erases each kernel's params type; registerCpu is where it is checked.) */
export const cpuKernels = new KernelRegistry<CpuKernel<any>>("cpu");

export function registerCpu<P>(record: Primitive<P>, kernel: CpuKernel<NoInfer<P>>): void {
  cpuKernels.register(record, kernel);
}
