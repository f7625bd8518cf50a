// The GPU differential suite's reach (see coverage.test.ts): which primitives compute, and which of
// them ran as a GPU kernel in test/backend/gpu/*.test.ts, where each result is compared with the
// CPU device.
//
// Two ways to know what ran: coverage.test.ts re-runs those files in a child process with
// MG_TRACE=1 (what a developer runs alone); CI records it during its own run instead of running
// them twice: with MG_GPU_COVERAGE_DIR set, test/setup.ts calls recordGpuCoverage, each process
// appends the primitives of the GPU records made by tests of those files to <dir>/<pid>.txt, and
// `bun test/backend/gpu/coverage.ts <dir>` checks the union after the suite.
import { afterEach, beforeEach } from "bun:test";
import { appendFileSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Primitive } from "../../../ts/core/primitive.ts";
import { addTraceListener } from "../../../ts/core/trace.ts";

const root = join(import.meta.dir, "../../..");

// MLX runs its linalg factorizations on the CPU only (a GPU stream is an error there and here):
// they have no GPU kernel to test.
const CPU_ONLY = new Set(["Cholesky", "Eig", "Eigh", "Inverse", "LUF", "QRF", "SVD"]);

/** Primitives that compute (views — records with a layout rule — only re-describe memory). */
export async function computingPrimitives(): Promise<string[]> {
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

/** The differential suite's files: test/backend/gpu/*.test.ts except the coverage test itself. */
export function differentialFiles(): string[] {
  return readdirSync(import.meta.dir)
    .filter((f) => f.endsWith(".test.ts") && f !== "coverage.test.ts")
    .map((f) => join(import.meta.dir, f));
}

/** While a test of a differential file runs, appends the primitives of new GPU records to <dir>/<pid>.txt. */
export function recordGpuCoverage(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const files = new Set(differentialFiles());
  const out = join(dir, `${process.pid}.txt`);
  const seen = new Set<string>();
  let fresh: string[] = [];
  let stop: (() => void) | null = null;
  // Bun.main is the test file running now (also with --parallel --no-isolate).
  beforeEach(() => {
    if (files.has(Bun.main)) {
      stop ??= addTraceListener((r) => {
        if (r.device !== "gpu") return;
        for (const p of r.primitives) if (!seen.has(p)) (seen.add(p), fresh.push(p));
      });
    } else if (stop) {
      stop();
      stop = null;
    }
  });
  afterEach(() => {
    if (fresh.length === 0) return;
    appendFileSync(out, `${fresh.join("\n")}\n`);
    fresh = [];
  });
}

/** The computing primitives no GPU record named. */
export async function missingFrom(seen: ReadonlySet<string>): Promise<string[]> {
  return (await computingPrimitives()).filter((name) => !seen.has(name));
}

// CI's check: `bun test/backend/gpu/coverage.ts <dir>` after the suite ran with MG_GPU_COVERAGE_DIR=<dir>.
if (import.meta.main) {
  const dir = process.argv[2];
  if (!dir) {
    console.error("usage: bun test/backend/gpu/coverage.ts <dir written under MG_GPU_COVERAGE_DIR>");
    process.exit(2);
  }
  const seen = new Set<string>();
  let files = 0;
  try {
    for (const f of readdirSync(dir).filter((x) => x.endsWith(".txt"))) {
      files++;
      for (const line of readFileSync(join(dir, f), "utf8").split("\n")) if (line) seen.add(line);
    }
  } catch (e) {
    console.error(`gpu coverage: cannot read ${dir}: ${(e as Error).message}`);
  }
  const missing = await missingFrom(seen);
  const expected = (await computingPrimitives()).length;
  if (files === 0 || expected <= 70 || missing.length > 0) {
    console.log(
      files === 0
        ? `FAIL no GPU coverage was recorded in ${dir}`
        : expected <= 70
          ? `FAIL only ${expected} computing primitives found`
          : `FAIL primitives that never ran as a GPU kernel in test/backend/gpu: ${missing.join(", ")}`,
    );
    console.log("gpu-coverage: 0 passed, 1 failed");
    process.exit(1);
  }
  console.log(`every computing primitive (${expected}) ran as a GPU kernel in the differential suite (${seen.size} primitives seen)`);
  console.log("gpu-coverage: 1 passed, 0 failed");
}
