// The differential suite's reach: every primitive that computes (views — records with a layout
// rule — only re-describe memory) must run as a GPU kernel somewhere in test/backend/gpu, where
// each result is compared with the CPU device. A primitive added without a differential test
// fails here, by name.
//
// The other files run in a child process with MG_TRACE=1; the trace names each kernel's primitives.
import { expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import "../../../ts/index.ts";
import type { Primitive } from "../../../ts/core/primitive.ts";

const root = join(import.meta.dir, "../../..");

// MLX runs its linalg factorizations on the CPU only (a GPU stream is an error there and here):
// they have no GPU kernel to test.
const CPU_ONLY = new Set(["Cholesky", "Eig", "Eigh", "Inverse", "LUF", "QRF", "SVD"]);

async function computingPrimitives(): Promise<string[]> {
  const dir = join(root, "ts/core/primitives");
  const names = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
    const mod = (await import(join(dir, file))) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      const p = value as Partial<Primitive<unknown>> | null;
      if (p && typeof p === "object" && typeof p.name === "string" && typeof p.outputSpecs === "function" && !p.layout && !CPU_ONLY.has(p.name)) names.add(p.name);
    }
  }
  return [...names].sort();
}

test("every computing primitive runs as a GPU kernel in the differential suite", async () => {
  const expected = await computingPrimitives();
  expect(expected.length).toBeGreaterThan(70);
  const files = readdirSync(import.meta.dir)
    .filter((f) => f.endsWith(".test.ts") && f !== "coverage.test.ts")
    .map((f) => join(import.meta.dir, f));
  const child = Bun.spawnSync([process.execPath, "test", "--timeout", "180000", ...files], {
    cwd: root,
    env: { ...process.env, MG_TRACE: "1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const output = `${child.stdout.toString()}\n${child.stderr.toString()}`;
  expect(child.exitCode, output.slice(-2000)).toBe(0);
  const seen = new Set<string>();
  for (const m of output.matchAll(/^\[trace\] gpu \S+ \{([^}]*)\}/gm)) for (const name of m[1]!.split(",")) seen.add(name);
  expect(expected.filter((name) => !seen.has(name))).toEqual([]);
}, 600_000);
