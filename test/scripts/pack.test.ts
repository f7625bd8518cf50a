// `bun run pack` and what a user gets from it: the tarballs install into a fresh project offline
// (no registry: the platform package comes from its tarball, the other optional one is skipped),
// and with no Swift toolchain on PATH or LD_LIBRARY_PATH a script computes on the CPU device and —
// where a C++ compiler exists for the simulator — on the GPU device.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const work = mkdtempSync(join(tmpdir(), "mg-pack-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const version = (await Bun.file(join(ROOT, "package.json")).json()).version as string;
const platform = `${process.platform}-${process.arch}`;
const library = process.platform === "darwin" ? "libMetalGradRuntime.dylib" : "libMetalGradRuntime.so";
const built = existsSync(join(ROOT, ".build/release", library));

function run(cmd: string[], cwd: string, env: Record<string, string | undefined> = process.env) {
  const r = Bun.spawnSync(cmd, { cwd, env: env as Record<string, string>, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

/** PATH without any directory holding a Swift toolchain. */
function pathWithoutSwift(): string {
  return (process.env.PATH ?? "").split(delimiter)
    .filter((dir) => dir && !existsSync(join(dir, "swift")) && !existsSync(join(dir, "swiftc")))
    .join(delimiter);
}

describe.skipIf(!built)(`bun run pack → bun add offline → a script without Swift (${platform})`, () => {
  const dist = join(work, "dist");
  test("pack writes the main package and this platform's, at one version", () => {
    const r = run([process.execPath, "run", "scripts/pack.ts", "--out", dist], ROOT);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(readdirSync(dist).sort()).toEqual([`metalgrad-${platform}-${version}.tgz`, `metalgrad-${version}.tgz`].sort());
    const list = (tgz: string) => run(["tar", "tzf", join(dist, tgz)], work).out.trim().split("\n").sort();
    const main = list(`metalgrad-${version}.tgz`);
    for (const f of ["package/package.json", "package/README.md", "package/LICENSE", "package/ts/index.ts", "package/ts/io/index.ts", "package/Sources/Kernels/gemm.metal", "package/Sources/Kernels/utils.h"]) {
      expect(main).toContain(f);
    }
    expect(main.filter((f) => !/^package\/(ts\/|Sources\/Kernels\/|package\.json$|README\.md$|LICENSE$)/.test(f))).toEqual([]);
    const manifest = JSON.parse(run(["tar", "xzf", join(dist, `metalgrad-${version}.tgz`), "-O", "package/package.json"], work).out);
    expect(manifest.optionalDependencies).toEqual({ "metalgrad-linux-x64": version, "metalgrad-darwin-arm64": version });
    expect(manifest.devDependencies).toBeUndefined();
    const native = JSON.parse(run(["tar", "xzf", join(dist, `metalgrad-${platform}-${version}.tgz`), "-O", "package/package.json"], work).out);
    expect([native.version, native.os, native.cpu]).toEqual([version, [process.platform], [process.arch]]);
    expect(list(`metalgrad-${platform}-${version}.tgz`)).toContain(`package/${library}`);
  }, 120_000);

  test("the tarballs install into a fresh project with no registry, and compute with no Swift toolchain", () => {
    const project = join(work, "project");
    const cache = join(work, "bun-cache");
    run(["mkdir", "-p", project, cache], work);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "mg-install-check", private: true, type: "module" }));
    // The offline way: a registry nobody listens on. The platform package comes from its tarball;
    // the other platform's optional package fails to resolve, which optional dependencies allow.
    writeFileSync(join(project, "bunfig.toml"), '[install]\nregistry = "http://127.0.0.1:9/"\n');
    const env = { ...process.env, BUN_INSTALL_CACHE_DIR: cache, MG_RUNTIME_LIB: undefined, MG_TRACE: undefined };
    const add = run([process.execPath, "add", join(dist, `metalgrad-${version}.tgz`), join(dist, `metalgrad-${platform}-${version}.tgz`)], project, env);
    expect(add.code).toBe(0);
    const installed = join(project, "node_modules", `metalgrad-${platform}`, library);
    expect(existsSync(installed)).toBe(true);
    if (process.platform === "linux") {
      // The Swift runtime is linked in: only the C/C++ system libraries are needed.
      const ldd = run(["ldd", installed], project).out;
      expect(ldd).not.toMatch(/swift|Foundation|not found/i);
    }
    writeFileSync(join(project, "check.ts"), `
import * as mg from "metalgrad";
const out: Record<string, unknown> = { library: mg.deviceInfo().runtime_library, gpu: mg.isAvailable(mg.gpu) };
out.cpu = mg.matmul(mg.arange(6, undefined, undefined, mg.float32).reshape([2, 3]), mg.ones([3, 2]), { stream: mg.cpu }).tolist();
if (process.argv[2] === "gpu") out.gpuResult = mg.sum(mg.multiply(mg.arange(10), 2, { stream: mg.gpu }), null, false, { stream: mg.gpu }).item();
console.log(JSON.stringify(out));
`);
    const bare = { ...env, PATH: pathWithoutSwift(), LD_LIBRARY_PATH: undefined };
    const hasCxx = run(["sh", "-c", "command -v ${MG_SIM_CXX:-g++}"], project, bare).code === 0;
    const r = run([process.execPath, "check.ts", hasCxx || process.platform === "darwin" ? "gpu" : "cpu"], project, bare);
    expect(r.err).toBe("");
    const got = JSON.parse(r.out);
    expect(got.library).toBe(installed);
    expect(got.cpu).toEqual([[3, 3], [12, 12]]);
    if (hasCxx || process.platform === "darwin") expect(got.gpuResult).toBe(90);
    else console.log("no C++ compiler on PATH: the GPU check was skipped (the simulator needs one at run time)");
  }, 180_000);

  test("without its platform package (an unsupported platform), the import works and the CPU computes", () => {
    const project = join(work, "bare");
    const cache = join(work, "bun-cache-bare");
    run(["mkdir", "-p", project, cache], work);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "mg-bare-check", private: true, type: "module" }));
    writeFileSync(join(project, "bunfig.toml"), '[install]\nregistry = "http://127.0.0.1:9/"\n');
    const env = { ...process.env, BUN_INSTALL_CACHE_DIR: cache, MG_RUNTIME_LIB: undefined, MG_TRACE: undefined };
    expect(run([process.execPath, "add", join(dist, `metalgrad-${version}.tgz`)], project, env).code).toBe(0);
    expect(existsSync(join(project, "node_modules", `metalgrad-${platform}`))).toBe(false);
    writeFileSync(join(project, "check.ts"), `
import * as mg from "metalgrad";
const info = mg.deviceInfo();
console.log(JSON.stringify({ gpu: mg.isAvailable(mg.gpu), error: info.runtime_error, v: mg.sum(mg.arange(5)).item() }));
`);
    const r = run([process.execPath, "check.ts"], project, { ...env, PATH: pathWithoutSwift(), LD_LIBRARY_PATH: undefined });
    expect(r.err).toBe("");
    const got = JSON.parse(r.out);
    expect([got.gpu, got.v]).toEqual([false, 10]);
    expect(got.error).toContain(`the package metalgrad-${platform} is not installed`);
  }, 120_000);
});
