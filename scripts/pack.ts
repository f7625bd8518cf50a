// `bun run pack`: the npm tarballs, written to dist/.
//   dist/metalgrad-<version>.tgz               ts/, Sources/Kernels, README.md, LICENSE; its
//                                              optionalDependencies name both platform packages
//   dist/metalgrad-<platform>-<version>.tgz    the native runtime of this machine's platform, when
//                                              it is built (`swift build -c release`)
// Every package carries the root package.json's version. The main package's package.json is
// generated here: the checkout's own has no optionalDependencies, since `bun install` must work
// offline and the platform packages do not exist in a registry before they are published.
//
//   bun run pack [--out dist] [--no-native]
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");
const args = process.argv.slice(2);
const outIndex = args.indexOf("--out");
const OUT = resolve(ROOT, outIndex >= 0 ? args[outIndex + 1]! : "dist");
const withNative = !args.includes("--no-native");

interface PlatformPackage {
  name: string;
  library: string;
  /** Files beside the library that go in when present (the macOS metallib and its manifest). */
  extras: string[];
}
const PLATFORMS: Record<string, PlatformPackage> = {
  "linux-x64": { name: "metalgrad-linux-x64", library: "libMetalGradRuntime.so", extras: [] },
  "darwin-arm64": { name: "metalgrad-darwin-arm64", library: "libMetalGradRuntime.dylib", extras: ["metalgrad.metallib", "metalgrad.metallib.json"] },
};

const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Record<string, unknown>;
const version = root.version as string;
const stageRoot = join(OUT, "stage");
rmSync(stageRoot, { recursive: true, force: true });
mkdirSync(stageRoot, { recursive: true });

function run(cmd: string[], cwd: string): string {
  const r = Bun.spawnSync(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed in ${cwd}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

/** Packs a staged directory with `bun pm pack`; returns the tarball's path. */
function pack(dir: string): string {
  const out = run([process.execPath, "pm", "pack", "--destination", OUT, "--quiet"], dir);
  return out.split("\n").pop()!.trim();
}

// The main package.
const main = join(stageRoot, "metalgrad");
for (const path of ["ts", "Sources/Kernels", "README.md", "LICENSE"]) cpSync(join(ROOT, path), join(main, path), { recursive: true });
const mainManifest = {
  name: root.name,
  version,
  description: root.description,
  type: root.type,
  license: root.license,
  exports: root.exports,
  module: root.module,
  types: root.types,
  files: root.files,
  engines: root.engines,
  optionalDependencies: Object.fromEntries(Object.values(PLATFORMS).map((p) => [p.name, version])),
};
writeFileSync(join(main, "package.json"), `${JSON.stringify(mainManifest, null, 2)}\n`);
const written = [pack(main)];

// This machine's platform package, when its library is built.
const platform = `${process.platform}-${process.arch}`;
const native = PLATFORMS[platform];
let nativeNote = "";
if (!withNative) nativeNote = "--no-native: no platform package";
else if (!native) nativeNote = `no platform package for ${platform} (packages exist for ${Object.keys(PLATFORMS).join(", ")})`;
else {
  const built = join(ROOT, ".build/release", native.library);
  if (!existsSync(built)) nativeNote = `${native.name} skipped: ${built} is not built (swift build -c release)`;
  else {
    const dir = join(stageRoot, native.name);
    cpSync(join(ROOT, "packages", native.name), dir, { recursive: true });
    cpSync(join(ROOT, "LICENSE"), join(dir, "LICENSE"));
    cpSync(built, join(dir, native.library));
    // Symbols are for debugging the build tree; the package ships the stripped library when a
    // strip tool exists (the dynamic symbol table stays, which is all dlopen needs).
    const stripped = process.platform === "darwin"
      ? Bun.spawnSync(["strip", "-x", join(dir, native.library)]).exitCode === 0
      : Bun.spawnSync(["strip", "--strip-unneeded", join(dir, native.library)]).exitCode === 0;
    for (const extra of native.extras) {
      const path = join(ROOT, ".build/release", extra);
      if (existsSync(path)) cpSync(path, join(dir, extra));
    }
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Record<string, unknown>;
    manifest.version = version;
    manifest.files = (manifest.files as string[]).filter((f) => existsSync(join(dir, f)));
    writeFileSync(join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    written.push(pack(dir));
    if (!stripped) nativeNote = `${native.library} shipped unstripped (no strip tool)`;
  }
}
rmSync(stageRoot, { recursive: true, force: true });
for (const w of written) console.log(w);
if (nativeNote) console.log(`note: ${nativeNote}`);
