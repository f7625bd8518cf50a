// cpuBackend over another kernel table: how a new CPU-side backend (a native one) plugs in — it
// registers what it implements and falls back to the TypeScript kernels per primitive; views come
// from the records' layout rules in either case.
import { expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import { registerBackend } from "../../../ts/core/graph.ts";
import { Add } from "../../../ts/core/primitives/elementwise.ts";
import { KernelRegistry } from "../../../ts/core/registry.ts";
import { cpuBackend } from "../../../ts/backend/cpu/backend.ts";
import { type CpuKernel, cpuKernels } from "../../../ts/backend/cpu/registry.ts";

test("a backend with its own table runs its kernels, falls back per primitive, and names itself in the trace", () => {
  const calls: string[] = [];
  const native = new KernelRegistry<CpuKernel<any>>("cpu", { fallback: cpuKernels });
  const tsAdd = cpuKernels.lookup(Add)!;
  native.register(Add, (inputs, outputs, params) => {
    calls.push(`Add of ${inputs.map((i) => i.dtype.name).join(",")}`);
    tsAdd(inputs, outputs, params);
  });
  const previous = registerBackend("cpu", cpuBackend(native, { kernelPrefix: "native" }))!;
  try {
    const a = mg.array([[1, 2, 3], [4, 5, 6]], mg.float32);
    const b = mg.array([10, 20, 30], mg.float32);
    let sum: mg.MgArray | null = null;
    let flat: mg.MgArray | null = null;
    const records = mg.stream(mg.cpu, () =>
      mg.trace(() => {
        sum = mg.multiply(mg.add(mg.transpose(a), mg.reshape(b, [3, 1])), 2);
        // A transposed view reshaped: the layout rule asks for a copy, the fallback's Reshape kernel.
        flat = mg.reshape(mg.transpose(a), [6]);
        return [sum, flat];
      }),
    );
    expect(sum!.tolist()).toEqual([[22, 28], [44, 50], [66, 72]]);
    expect(flat!.tolist()).toEqual([1, 4, 2, 5, 3, 6]);
    expect(calls).toEqual(["Add of float32,float32"]);
    const kernels = records.map((r) => r.kernel);
    expect(kernels).toContain("native:Add");
    expect(kernels).toContain("native:Multiply");
    expect(kernels.every((k) => k.startsWith("native:"))).toBe(true);
    const reshapes = records.filter((r) => r.kernel === "native:Reshape");
    expect(reshapes.map((r) => r.notes.length)).toEqual([0, 1]);
    expect(reshapes[1]!.notes[0]).toStartWith("copy: Reshape of array");
  } finally {
    registerBackend("cpu", previous);
  }
  // The previous backend (the native one by default) is back.
  const kernel = mg.stream(mg.cpu, () => mg.trace(() => mg.add(mg.array([1], mg.float32), 1))).map((r) => r.kernel);
  expect(kernel.some((k) => k === "cpu:Add" || k === "cpu-native:Add" || k.startsWith("cpu-native:fused"))).toBe(true);
  expect(kernel.some((k) => k.startsWith("native:"))).toBe(false);
});
