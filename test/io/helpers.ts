// Shared by the I/O tests: exact comparison through row-major bytes, temporary directories, and
// Python (numpy/MLX) for cross-checks where it is installed.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as mg from "../../ts/index.ts";

/** The row-major little-endian bytes of `a`, in hex (bfloat16 through its bits). */
export function rowMajorHex(a: mg.MgArray): string {
  const data = a.dtype === mg.bfloat16 ? mg.view(a, mg.uint16).dataSync() : a.dataSync();
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("hex");
}

/** A fresh temporary directory, removed by the returned function. */
export function tempDir(prefix = "mg-io-"): { dir: string; path: (name: string) => string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, path: (name) => join(dir, name), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

const PYTHON = process.env.MG_MLX_PYTHON ?? "/work/mlxenv/bin/python";

/** True when `import <modules>` works in the MLX Python (absent in CI). */
export function pythonHas(...modules: string[]): boolean {
  try {
    const r = Bun.spawnSync([PYTHON, "-c", `import ${modules.join(", ")}`], { stdout: "ignore", stderr: "ignore" });
    return r.exitCode === 0;
  } catch {
    return false;
  }
}

/** Runs a Python script and returns its stdout parsed as JSON. */
export function python(script: string): unknown {
  const r = Bun.spawnSync([PYTHON, "-c", script], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`python failed: ${r.stderr.toString()}`);
  return JSON.parse(r.stdout.toString());
}
