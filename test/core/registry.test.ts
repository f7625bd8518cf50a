// KernelRegistry: a backend's table of kernels per primitive record, with a fallback table and
// the `[op] Primitive has no <device> kernel` error.
import { describe, expect, test } from "bun:test";
import "../../ts/index.ts";
import { Node } from "../../ts/core/array.ts";
import { cpu, defaultStream } from "../../ts/core/device.ts";
import type { Primitive } from "../../ts/core/primitive.ts";
import { KernelRegistry, noKernel } from "../../ts/core/registry.ts";

const record = (name: string, op?: string): Primitive<{ k: number }> => ({
  name,
  ...(op ? { opName: (p: { k: number }) => `${op}${p.k}` } : {}),
  outputSpecs: () => [],
});
const nodeOf = (p: Primitive<{ k: number }>) => new Node(p, { k: 7 }, [], defaultStream(cpu));

describe("KernelRegistry", () => {
  test("finds a record's kernel, else its fallback's, else fails naming op, primitive and device", () => {
    const A = record("Alpha");
    const B = record("Beta", "beta_op");
    const C = record("Gamma");
    const base = new KernelRegistry<string>("cpu");
    base.register(A, "base A");
    base.register(B, "base B");
    const native = new KernelRegistry<string>("cpu", { fallback: base, hint: "try another stream" });
    native.register(B, "native B");
    expect(native.lookup(A)).toBe("base A");
    expect(native.lookup(B)).toBe("native B");
    expect(native.lookup(C)).toBeUndefined();
    expect(native.require(nodeOf(B))).toBe("native B");
    // op: the record's opName of the node's params, else the name lower-cased.
    expect(() => native.require(nodeOf(C))).toThrow("[gamma] Gamma has no cpu kernel; try another stream.");
    expect(noKernel(nodeOf(B), "gpu").message).toBe("[beta_op7] Beta has no gpu kernel.");
  });

  test("a record registered twice is an error", () => {
    const A = record("Alpha");
    const t = new KernelRegistry<number>("gpu");
    t.register(A, 1);
    expect(() => t.register(A, 2)).toThrow("[register] Alpha already has a gpu kernel.");
  });
});
