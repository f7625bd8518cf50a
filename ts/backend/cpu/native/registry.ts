// The native CPU device's kernel table: what Sources/MGCpu computes, falling back per primitive to
// the TypeScript kernels (ts/backend/cpu) for everything not registered here. A registered kernel
// may still decline a case (a dtype the native side lacks): it then runs the TypeScript kernel
// itself and the trace says so.
import type { Primitive } from "../../../core/primitive.ts";
import { KernelRegistry } from "../../../core/registry.ts";
import { type CpuKernel, cpuKernels } from "../registry.ts";
import { tryRuntime } from "../../runtime.ts";

export const nativeKernels = new KernelRegistry<CpuKernel<any>>("cpu", { fallback: cpuKernels });

export function registerNative<P>(record: Primitive<P>, kernel: CpuKernel<NoInfer<P>>): void {
  nativeKernels.register(record, kernel);
}

let enabled = process.env.MG_CPU_NATIVE !== "0";
// Without the runtime library (not installed for this platform, not built) the CPU device runs the
// TypeScript kernels on JS memory: the native table stays out of the way.
let available: boolean | null = null;

/** Whether native kernels run (MG_CPU_NATIVE=0 or setNativeCpu(false): the TypeScript reference). */
export function nativeEnabled(): boolean {
  if (!enabled) return false;
  available ??= tryRuntime() !== null;
  return available;
}

/** Turns the native CPU kernels on or off; returns the previous setting. */
export function setNativeCpu(on: boolean): boolean {
  const previous = enabled;
  enabled = on;
  return previous;
}

/** What the last kernel run through this table did, for the trace (set only while tracing). */
export interface KernelNote {
  kernel: string;
  precision: string;
  notes: string[];
}
let note: KernelNote | null = null;
export function noteKernel(n: KernelNote | null): void {
  note = n;
}
export function takeNote(): KernelNote | null {
  const n = note;
  note = null;
  return n;
}
