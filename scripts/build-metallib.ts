// Precompiles metalgrad's kernels into .build/release/metalgrad.metallib (+ .json manifest) for the
// macOS package, so a Mac compiles nothing at first use (ts/backend/gpu/metallib.ts reads them).
//
// Which instances: the kernels are templates instantiated on demand, so the list comes from a run
// that recorded every instance it compiled — the test suite with MG_KERNEL_CATALOG set:
//   MG_KERNEL_CATALOG=.build/kernel-catalog.jsonl bun run test
//   bun run scripts/build-metallib.ts .build/kernel-catalog.jsonl       (macOS: xcrun metal, metallib)
//   bun run scripts/build-metallib.ts <catalog> --sources-only <dir>   (any OS: just the .metal files)
// Compiled as the runtime compiles source: safe math (-fno-fast-math), Metal 3.1 (macOS 14).
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { kernelSource } from "../ts/backend/gpu/kernels.ts";
import { METALLIB_NAME, type MetallibManifest, sourceHash } from "../ts/backend/gpu/metallib.ts";

const ROOT = resolve(import.meta.dir, "..");
const [catalogPath, ...rest] = process.argv.slice(2);
if (!catalogPath) {
  console.error("usage: bun run scripts/build-metallib.ts <catalog.jsonl> [--sources-only <dir>]");
  process.exit(2);
}
const sourcesOnly = rest[0] === "--sources-only";
const work = sourcesOnly ? resolve(rest[1] ?? ".build/metallib") : join(ROOT, ".build/metallib");

/** The catalog's instances, deduplicated, grouped by kernel file. */
function readCatalog(text: string): Map<string, Map<string, string>> {
  const byFile = new Map<string, Map<string, string>>();
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const { file, name, instantiation } = JSON.parse(line) as { file: string; name: string; instantiation: string };
    let m = byFile.get(file);
    if (!m) byFile.set(file, (m = new Map()));
    m.set(name, instantiation);
  }
  return byFile;
}

const byFile = readCatalog(readFileSync(catalogPath, "utf8"));
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const version = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version as string;
const manifest: MetallibManifest = { format: 1, version, files: {} };
const sources: string[] = [];
for (const [file, instances] of [...byFile].sort(([a], [b]) => a.localeCompare(b))) {
  const text = kernelSource(file);
  const lines = [...instances].sort(([a], [b]) => a.localeCompare(b))
    .map(([name, inst]) => `template [[host_name("${name}")]] [[kernel]] decltype(${inst}) ${inst};`);
  const path = join(work, file);
  writeFileSync(path, `${text}\n\n// instances\n${lines.join("\n")}\n`);
  sources.push(path);
  manifest.files[file] = { sha256: sourceHash(text), kernels: [...instances.keys()].sort() };
}
const count = Object.values(manifest.files).reduce((n, f) => n + f.kernels.length, 0);
if (sourcesOnly) {
  writeFileSync(join(work, `${METALLIB_NAME}.json`), `${JSON.stringify(manifest, null, 1)}\n`);
  console.log(`${count} instances from ${sources.length} files written to ${work}`);
  process.exit(0);
}

function run(cmd: string[]): void {
  const r = Bun.spawnSync(cmd, { stdout: "inherit", stderr: "inherit" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed (exit ${r.exitCode})`);
}
const airs = sources.map((src) => {
  const air = src.replace(/\.metal$/, ".air");
  run(["xcrun", "-sdk", "macosx", "metal", "-c", src, "-o", air, "-std=metal3.1", "-fno-fast-math"]);
  return air;
});
const out = join(ROOT, ".build/release", METALLIB_NAME);
run(["xcrun", "-sdk", "macosx", "metallib", ...airs, "-o", out]);
writeFileSync(`${out}.json`, `${JSON.stringify(manifest, null, 1)}\n`);
console.log(`${out}: ${count} instances from ${sources.length} files`);
