// Shared by the I/O tests: exact comparison through row-major bytes, temporary directories, and
// Python (numpy/MLX) for cross-checks where it is installed.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import fc from "fast-check";
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

/**
 * Runs a Python script and returns its stdout parsed as JSON. The script ends with os._exit once
 * its output is flushed: MLX's CPU threads sometimes abort the interpreter's teardown ("terminate
 * called without an active exception"), after the answer is already written.
 */
export function python(script: string): unknown {
  const ending = "\nimport os as _os, sys as _sys\n_sys.stdout.flush()\n_sys.stderr.flush()\n_os._exit(0)\n";
  const r = Bun.spawnSync([PYTHON, "-c", script + ending], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`python failed: ${r.stderr.toString()}`);
  return JSON.parse(r.stdout.toString());
}

/** How many inputs each parser's fuzz property runs: a fixed budget in CI, more via
 *  `MG_FUZZ_RUNS=<n> bun test test/io` (scripts/fuzz-io.sh). */
export const FUZZ_RUNS = Number(process.env.MG_FUZZ_RUNS ?? 300);

/** Tallies of a fuzz run, printed by the tests so the number of inputs is on record. */
export interface FuzzTally {
  runs: number;
  loaded: number;
  rejected: number;
}

/**
 * Loads `bytes` as `format` from a file and classifies the outcome: a successful load (whose arrays
 * must not hold more than `maxExpansion` × the file's size), or a tagged `[load] <file>: …` error.
 * Anything else — an untagged exception, a TypeError from inside a parser — fails the property.
 */
export function loadOutcome(
  file: string, bytes: Uint8Array, format: "npy" | "npz" | "safetensors" | "gguf", tally: FuzzTally, maxExpansion = 1,
): void {
  writeFileSync(file, bytes);
  tally.runs++;
  let result: unknown;
  try {
    result = mg.load(file, format, format === "safetensors" || format === "gguf");
  } catch (e) {
    if (!(e instanceof mg.LoadError) || !(e as Error).message.startsWith(`[load] ${file}: `)) {
      throw new Error(`untagged failure on a ${bytes.length}-byte input: ${(e as Error).stack}`);
    }
    tally.rejected++;
    return;
  }
  tally.loaded++;
  const arrays: mg.MgArray[] = [];
  const walk = (x: unknown) => {
    if (x instanceof mg.MgArray) arrays.push(x);
    else if (x && typeof x === "object") Object.values(x).forEach(walk);
  };
  walk(result);
  let total = 0;
  for (const a of arrays) {
    total += a.nbytes;
    a.dispose();
  }
  if (total > bytes.length * maxExpansion + 1024) {
    throw new Error(`a ${bytes.length}-byte input produced ${total} bytes of arrays`);
  }
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Values that make lengths, counts and offsets interesting when written over a field. */
const SPECIAL_U64 = [0n, 1n, 7n, 8n, 0xffffn, 0x7fffffffn, 0x80000000n, 0xffffffffn, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n];

/**
 * Corruptions of valid files: truncation, byte overwrites, a 32/64-bit field overwritten with an
 * interesting or random value (header lengths, counts, offsets), insertions, deletions, and noise.
 */
export function corruptions(seeds: readonly Uint8Array[]): fc.Arbitrary<Uint8Array> {
  const seed = fc.constantFrom(...seeds);
  return fc.oneof(
    seed.chain((s) => fc.nat(s.length).map((n) => s.slice(0, n))),
    seed.chain((s) =>
      fc.array(fc.tuple(fc.nat(s.length - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }).map((changes) => {
        const c = s.slice();
        for (const [i, v] of changes) c[i] = v;
        return c;
      })),
    seed.chain((s) =>
      fc.tuple(fc.nat(Math.max(0, s.length - 8)), fc.oneof(fc.constantFrom(...SPECIAL_U64), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })), fc.boolean())
        .map(([i, v, wide]) => {
          const c = s.slice();
          const view = new DataView(c.buffer);
          if (wide && i + 8 <= c.length) view.setBigUint64(i, v, true);
          else if (i + 4 <= c.length) view.setUint32(i, Number(v & 0xffffffffn), true);
          return c;
        })),
    seed.chain((s) => fc.tuple(fc.nat(s.length), fc.uint8Array({ minLength: 1, maxLength: 64 })).map(([i, ins]) => concat(s.subarray(0, i), ins, s.subarray(i)))),
    seed.chain((s) => fc.tuple(fc.nat(s.length), fc.integer({ min: 1, max: 64 })).map(([i, n]) => concat(s.subarray(0, i), s.subarray(i + n)))),
    seed.chain((s) => fc.uint8Array({ maxLength: 512 }).map((noise) => concat(s.subarray(0, 8), noise))),
  );
}

export { concat };
