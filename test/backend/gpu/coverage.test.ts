// The differential suite's reach: every primitive that computes (views — records with a layout
// rule — only re-describe memory) must run as a GPU kernel somewhere in test/backend/gpu, where
// each result is compared with the CPU device. A primitive added without a differential test
// fails here, by name.
//
// The other files run in a child process with MG_TRACE=1; the trace names each kernel's primitives.
// CI skips this file and checks the same from its own run of those files (coverage.ts).
import { expect, test } from "bun:test";
import { join } from "node:path";
import "../../../ts/index.ts";
import { computingPrimitives, differentialFiles, missingFrom } from "./coverage.ts";

const root = join(import.meta.dir, "../../..");

test("every computing primitive runs as a GPU kernel in the differential suite", async () => {
  expect((await computingPrimitives()).length).toBeGreaterThan(70);
  const child = Bun.spawnSync([process.execPath, "test", "--timeout", "180000", ...differentialFiles()], {
    cwd: root,
    env: { ...process.env, MG_TRACE: "1", MG_GPU_COVERAGE_DIR: "" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const output = `${child.stdout.toString()}\n${child.stderr.toString()}`;
  expect(child.exitCode, output.slice(-2000)).toBe(0);
  const seen = new Set<string>();
  for (const m of output.matchAll(/^\[trace\] gpu \S+ \{([^}]*)\}/gm)) for (const name of m[1]!.split(",")) seen.add(name);
  expect(await missingFrom(seen)).toEqual([]);
}, 600_000);
