// metalgrad's kernels: MSL templates in Sources/Kernels, instantiated and compiled on first use
// (MLX's JIT mode). Instances requested together compile as one library — on the simulator that
// is one compiler run — and pipelines are cached by host name for the life of the process.
import { appendFileSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type KernelCacheLimits, type Library, type LibraryOptions, type Pipeline, runtime } from "../runtime.ts";
import { describeOrigin, type FoundMetallib, findMetallib, planInstance, sourceHash } from "./metallib.ts";

/** A compiled-on-demand kernel: a template in Sources/Kernels/<file> instantiated under `name`. */
export interface KernelInstance {
  /** File in Sources/Kernels holding the template (its `#include "…"`s are inlined). */
  file: string;
  /** The host_name the instance is compiled under (unique, a valid identifier). */
  name: string;
  /** The C++ template-id to instantiate, e.g. `unary_v<Exp, float, float>`. */
  instantiation: string;
  /** Compiled ahead of need, along with a kernel that is needed (a sibling op): when the library
   *  fails to compile, it compiles again without the speculative instances. */
  speculative?: boolean;
}

export const KERNEL_DIR = resolve(import.meta.dir, "../../../Sources/Kernels");

const fileCache = new Map<string, string>();

/** A kernel file with its `#include "x.h"` lines inlined (each header once), ready to compile. */
export function kernelSource(file: string): string {
  const cached = fileCache.get(file);
  if (cached !== undefined) return cached;
  const seen = new Set<string>();
  const inline = (name: string): string => {
    if (seen.has(name)) return "";
    seen.add(name);
    let text: string;
    try {
      text = readFileSync(resolve(KERNEL_DIR, name), "utf8");
    } catch {
      throw new Error(`[kernels] cannot read Sources/Kernels/${name} (is the package complete?)`);
    }
    return text.replace(/^[ \t]*#include\s+"([^"]+)"[^\n]*$/gm, (_m, inc: string) => inline(inc));
  };
  const out = inline(file);
  fileCache.set(file, out);
  return out;
}

function instantiationLine(k: KernelInstance): string {
  return `template [[host_name("${k.name}")]] [[kernel]] decltype(${k.instantiation}) ${k.instantiation};`;
}

const pipelines = new Map<string, Pipeline>();
let compiles = 0;

/**
 * Compiler runs so far (tests and benchmarks report it).
 * @example
 * typeof mg.fast.kernelCompileCount()
 */
export function kernelCompileCount(): number {
  return compiles;
}

// The precompiled kernels (macOS package), looked up once per process.
let metallib: (FoundMetallib & { library?: Library }) | undefined;
const fileHashes = new Map<string, string>();

function precompiled(): FoundMetallib & { library?: Library } {
  if (!metallib) {
    const rt = runtime();
    metallib = findMetallib(rt.libraryPath, rt.device.isSimulator);
    if (metallib.path) {
      try {
        metallib.library = rt.libraryFromFile(metallib.path);
      } catch (e) {
        metallib = { path: null, manifest: null, missing: `${metallib.path} could not be loaded (${(e as Error).message})` };
      }
    }
  }
  return metallib;
}

/** Compiles every instance not yet compiled (one library per source file), taking what it can from
 *  the precompiled metallib when there is one that matches today's sources. */
export function prepareKernels(instances: readonly KernelInstance[]): void {
  const missing = new Map<string, Map<string, KernelInstance>>();
  for (const k of instances) {
    if (pipelines.has(k.name)) continue;
    let byName = missing.get(k.file);
    if (!byName) missing.set(k.file, (byName = new Map()));
    if (!k.speculative || !byName.has(k.name)) byName.set(k.name, k);
  }
  if (missing.size === 0) return;
  const pre = precompiled();
  for (const [file, byName] of missing) {
    let hash = fileHashes.get(file);
    if (hash === undefined) fileHashes.set(file, (hash = sourceHash(kernelSource(file))));
    const fromSource: [KernelInstance, string][] = [];
    for (const k of byName.values()) {
      const origin = planInstance(pre.manifest, pre.missing, file, k.name, hash);
      if (origin.from === "metallib") {
        const p = pre.library!.pipeline(k.name);
        p.origin = describeOrigin(origin);
        pipelines.set(k.name, p);
      } else fromSource.push([k, describeOrigin(origin)]);
    }
    if (fromSource.length === 0) continue;
    let lib: Library;
    try {
      lib = compileLibrary(instancesSource(file, fromSource), `Sources/Kernels/${file}`);
    } catch (e) {
      // A speculative sibling the compiler rejects must not fail the kernels that are needed.
      // The retry shows in the trace (pipelineFrom) of every kernel it compiled.
      const needed = fromSource.filter(([k]) => !k.speculative);
      if (needed.length === fromSource.length) throw e;
      const dropped = fromSource.length - needed.length;
      const why = (e instanceof Error ? e.message : String(e)).split("\n")[0];
      fromSource.length = 0;
      for (const [k, origin] of needed) fromSource.push([k, `${origin}; compiled again without ${dropped} speculative sibling(s) the compiler rejected (${why})`]);
      if (needed.length === 0) continue;
      lib = compileLibrary(instancesSource(file, fromSource), `Sources/Kernels/${file}`);
    }
    for (const [k, origin] of fromSource) {
      const p = lib.pipeline(k.name);
      p.origin = origin;
      pipelines.set(k.name, p);
    }
    recordCatalog(file, fromSource.map(([k]) => k));
  }
}

// Instances in name order: a family compiles to the same source (one disk-cache entry shared by
// every process) whichever of its ops was needed first.
function instancesSource(file: string, list: readonly [KernelInstance, string][]): string {
  const lines = list.map(([k]) => instantiationLine(k)).sort();
  return `${kernelSource(file)}\n\n// instances\n${lines.join("\n")}\n`;
}

/** With MG_KERNEL_CATALOG=<file>, every instance compiled from source is appended to it (one JSON
 *  line each): the list scripts/build-metallib.ts precompiles. */
function recordCatalog(file: string, list: readonly KernelInstance[]): void {
  const out = process.env.MG_KERNEL_CATALOG;
  if (!out) return;
  appendFileSync(out, list.map((k) => `${JSON.stringify({ file, name: k.name, instantiation: k.instantiation })}\n`).join(""));
}

/** The pipeline of a kernel instance, compiling it if needed (with `siblings`, speculative
 *  instances that compile in the same run if they are not compiled yet). */
export function kernelPipeline(k: KernelInstance, siblings: readonly KernelInstance[] = []): Pipeline {
  let p = pipelines.get(k.name);
  if (!p) {
    prepareKernels(siblings.length ? [k, ...siblings] : [k]);
    p = pipelines.get(k.name)!;
  }
  return p;
}

const sourcePipelines = new Map<string, Pipeline>();

/** A pipeline from generated source (fused kernels, custom kernels), cached by `key`. */
export function sourcePipeline(key: string, source: string, functionName: string, options: LibraryOptions = {}): Pipeline {
  let p = sourcePipelines.get(key);
  if (!p) {
    p = compileLibrary(source, functionName, options).pipeline(functionName);
    p.origin = "source: a generated kernel";
    sourcePipelines.set(key, p);
  }
  return p;
}

/**
 * Compiles generated kernels that are not cached yet into one library (one compiler run on the
 * simulator): `header` once, then each kernel; later `sourcePipeline(name, …)` calls hit the cache.
 */
export function prepareSources(header: string, kernels: readonly { name: string; kernel: string }[]): void {
  const missing = new Map<string, string>();
  for (const k of kernels) if (!sourcePipelines.has(k.name)) missing.set(k.name, k.kernel);
  if (missing.size === 0) return;
  const lib = compileLibrary(`${header}\n\n${[...missing.values()].join("\n")}`, `${missing.size} generated kernel(s)`);
  for (const name of missing.keys()) {
    const p = lib.pipeline(name);
    p.origin = "source: a generated kernel";
    sourcePipelines.set(name, p);
  }
}

function compileLibrary(source: string, what: string, options: LibraryOptions = {}) {
  compiles++;
  try {
    return runtime().library(source, { checked: process.env.MG_SIM_CHECK === "1", ...options });
  } catch (e) {
    throw new Error(`[kernels] compiling ${what} failed: ${(e as Error).message}`);
  }
}

/**
 * Bounds how many compiled kernels stay loaded (issue 20: fusion compiles one kernel per distinct
 * elementwise chain, and a long-running process used to keep them all): built pipeline states
 * (default 1024, MG_KERNEL_CACHE_PIPELINES) and libraries (256, MG_KERNEL_CACHE_LIBRARIES) are
 * dropped least recently used first and rebuilt from their source when used again; on the
 * simulator, loaded kernel objects beyond those in use (128, MG_SIM_LIBRARY_CACHE; 64 MiB,
 * MG_SIM_LIBRARY_CACHE_MB) are unloaded. Limits left out (or below 1) are kept. Returns the
 * previous limits and what is loaded now.
 * @example
 * mg.setKernelCacheLimits({ pipelines: 2048 }).previous.pipelines
 */
export function setKernelCacheLimits(limits: Partial<KernelCacheLimits> = {}): { previous: KernelCacheLimits; loaded: KernelCacheLimits } {
  if (limits === null || typeof limits !== "object") throw new TypeError("[set_kernel_cache_limits] Expected an object of limits.");
  const known = ["pipelines", "libraries", "simulatorObjects", "simulatorBytes"];
  for (const [k, v] of Object.entries(limits)) {
    if (!known.includes(k)) throw new TypeError(`[set_kernel_cache_limits] Unknown limit '${k}' (known: ${known.join(", ")}).`);
    if (v !== undefined && (typeof v !== "number" || !Number.isInteger(v) || v < 0 || (k !== "simulatorBytes" && v > 2 ** 31 - 1))) {
      throw new RangeError(`[set_kernel_cache_limits] ${k} must be a non-negative integer, got ${String(v)}.`);
    }
  }
  return runtime().kernelCacheLimits(limits);
}
