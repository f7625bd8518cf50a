// The CPU device's kernel table: every core primitive runs on the CPU (a kernel, or a layout rule
// for views), and a record without a kernel fails with a tagged error at eval.
import { describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import * as mg from "../../../ts/index.ts";
import { resolveStream } from "../../../ts/core/device.ts";
import { makeArray } from "../../../ts/core/graph.ts";
import type { Primitive } from "../../../ts/core/primitive.ts";
import { cpuKernels } from "../../../ts/backend/cpu/registry.ts";

async function coreRecords(): Promise<Primitive[]> {
  const dir = join(import.meta.dir, "../../../ts/core/primitives");
  const out: Primitive[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
    for (const value of Object.values((await import(join(dir, file))) as Record<string, unknown>)) {
      const p = value as Partial<Primitive> | null;
      if (p && typeof p === "object" && typeof p.name === "string" && typeof p.outputSpecs === "function") out.push(p as Primitive);
    }
  }
  return out;
}

describe("CPU kernels", () => {
  test("every core primitive has a CPU kernel or is a view", async () => {
    const records = await coreRecords();
    expect(records.length).toBeGreaterThan(80);
    expect(records.filter((p) => !p.layout && cpuKernels.lookup(p) === undefined).map((p) => p.name)).toEqual([]);
  });

  test("a primitive without a CPU kernel fails at eval, naming the op and the primitive", () => {
    const Orphan: Primitive<null> = { name: "Orphan", opName: () => "orphan_op", outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }] };
    const x = mg.array([1, 2], mg.float32);
    const y = makeArray(Orphan, [x], null, resolveStream(mg.cpu));
    expect(() => mg.eval(y)).toThrow("[orphan_op] Orphan has no cpu kernel.");
    const z = makeArray(Orphan, [x], null, resolveStream(mg.gpu));
    expect(() => mg.eval(z)).toThrow("[orphan_op] Orphan has no gpu kernel; run it on the CPU with { stream: mg.cpu }.");
  });
});
