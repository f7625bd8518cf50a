// Precompiled kernels. The macOS package ships Sources/Kernels compiled by `xcrun metal` into
// metalgrad.metallib (scripts/build-metallib.ts), with a manifest, metalgrad.metallib.json, naming
// for each kernel file the SHA-256 of the source it was built from and the instances it holds. An
// instance comes from the metallib when its file's source today has that hash; otherwise it
// compiles from source (MLX's JIT path), and each dispatch's trace record says which (pipelineFrom).
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

export const METALLIB_NAME = "metalgrad.metallib";

export interface MetallibManifest {
  format: 1;
  /** The version of metalgrad whose kernels it holds (informational). */
  version: string;
  /** Per kernel file: the hash of its source (includes inlined) and the instances compiled. */
  files: Record<string, { sha256: string; kernels: string[] }>;
}

export type Origin = { from: "metallib" } | { from: "source"; reason: string };

export function sourceHash(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}

/**
 * Where an instance's pipeline should come from. Pure, so the rule is tested without a Mac:
 * `manifest` is null when there is no usable metallib (`missing` says why).
 */
export function planInstance(
  manifest: MetallibManifest | null, missing: string, file: string, name: string, hash: string,
): Origin {
  if (!manifest) return { from: "source", reason: missing };
  const entry = manifest.files[file];
  if (!entry) return { from: "source", reason: `${METALLIB_NAME} holds nothing from ${file}` };
  if (entry.sha256 !== hash) {
    return { from: "source", reason: `${METALLIB_NAME} is stale: built from another ${file} than the one installed` };
  }
  if (!entry.kernels.includes(name)) return { from: "source", reason: `${METALLIB_NAME} lacks the instance ${name}` };
  return { from: "metallib" };
}

/** The trace's wording for an origin. */
export function describeOrigin(o: Origin): string {
  return o.from === "metallib" ? `precompiled ${METALLIB_NAME}` : `source: ${o.reason}`;
}

export interface FoundMetallib {
  path: string | null;
  manifest: MetallibManifest | null;
  /** Why there is none (when path or manifest is null). */
  missing: string;
}

/**
 * The metallib to use: $MG_METALLIB (a path, or "0" for none), else metalgrad.metallib beside the
 * runtime library. The simulator runs MSL source only, so it never uses one.
 */
export function findMetallib(runtimeLibraryPath: string, simulator: boolean): FoundMetallib {
  if (simulator) return { path: null, manifest: null, missing: "the Metal simulator compiles MSL source" };
  const env = process.env.MG_METALLIB;
  if (env === "0") return { path: null, manifest: null, missing: "MG_METALLIB=0" };
  const path = env || join(dirname(runtimeLibraryPath), METALLIB_NAME);
  if (!existsSync(path)) {
    return { path: null, manifest: null, missing: env ? `MG_METALLIB=${env} does not exist` : `no ${METALLIB_NAME} beside the runtime` };
  }
  const manifestPath = `${path}.json`;
  try {
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as MetallibManifest;
    if (manifest.format !== 1 || typeof manifest.files !== "object") throw new Error("unknown format");
    return { path, manifest, missing: "" };
  } catch (e) {
    return { path: null, manifest: null, missing: `${manifestPath} is missing or unreadable (${(e as Error).message})` };
  }
}
