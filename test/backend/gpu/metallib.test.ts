// Precompiled kernels: which instances come from metalgrad.metallib and which compile from source
// (the rule is pure and tested here; only a Mac can load a metallib), what the trace says, and the
// catalog → build-metallib path that makes the metallib (its generated sources compile here).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import * as mg from "../../../ts/index.ts";
import { runtime } from "../../../ts/backend/runtime.ts";
import { kernelSource } from "../../../ts/backend/gpu/kernels.ts";
import { findMetallib, type MetallibManifest, planInstance, sourceHash } from "../../../ts/backend/gpu/metallib.ts";

const ROOT = resolve(import.meta.dir, "../../..");
const tmp = mkdtempSync(join(tmpdir(), "mg-metallib-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("which instances come from the metallib", () => {
  const manifest: MetallibManifest = { format: 1, version: "0.0.0", files: { "unary.metal": { sha256: "abc", kernels: ["u_exp_f32"] } } };
  test("a matching file hash and a listed instance: the metallib", () => {
    expect(planInstance(manifest, "", "unary.metal", "u_exp_f32", "abc")).toEqual({ from: "metallib" });
  });
  test("otherwise source, saying why: no metallib, stale file, file or instance not in it", () => {
    expect(planInstance(null, "no metalgrad.metallib beside the runtime", "unary.metal", "u_exp_f32", "abc"))
      .toEqual({ from: "source", reason: "no metalgrad.metallib beside the runtime" });
    expect(planInstance(manifest, "", "unary.metal", "u_exp_f32", "def"))
      .toEqual({ from: "source", reason: "metalgrad.metallib is stale: built from another unary.metal than the one installed" });
    expect(planInstance(manifest, "", "binary.metal", "b_add", "abc")).toEqual({ from: "source", reason: "metalgrad.metallib holds nothing from binary.metal" });
    expect(planInstance(manifest, "", "unary.metal", "u_log_f32", "abc")).toEqual({ from: "source", reason: "metalgrad.metallib lacks the instance u_log_f32" });
  });
  test("finding it: beside the runtime or $MG_METALLIB; never on the simulator", () => {
    const saved = process.env.MG_METALLIB;
    try {
      delete process.env.MG_METALLIB;
      expect(findMetallib(join(tmp, "libMetalGradRuntime.dylib"), true).missing).toBe("the Metal simulator compiles MSL source");
      expect(findMetallib(join(tmp, "libMetalGradRuntime.dylib"), false).missing).toBe("no metalgrad.metallib beside the runtime");
      writeFileSync(join(tmp, "metalgrad.metallib"), "not really");
      expect(findMetallib(join(tmp, "libMetalGradRuntime.dylib"), false).missing).toMatch(/metalgrad\.metallib\.json is missing or unreadable/);
      writeFileSync(join(tmp, "metalgrad.metallib.json"), JSON.stringify(manifest));
      const found = findMetallib(join(tmp, "libMetalGradRuntime.dylib"), false);
      expect([found.path, found.manifest]).toEqual([join(tmp, "metalgrad.metallib"), manifest]);
      process.env.MG_METALLIB = "0";
      expect(findMetallib(join(tmp, "x"), false).missing).toBe("MG_METALLIB=0");
      process.env.MG_METALLIB = join(tmp, "elsewhere.metallib");
      expect(findMetallib(join(tmp, "x"), false).missing).toBe(`MG_METALLIB=${join(tmp, "elsewhere.metallib")} does not exist`);
    } finally {
      if (saved === undefined) delete process.env.MG_METALLIB;
      else process.env.MG_METALLIB = saved;
    }
  });
  test.if(runtime().device.isSimulator)("the simulator cannot load a metallib: a clear error", () => {
    expect(() => runtime().libraryFromFile(join(tmp, "metalgrad.metallib"))).toThrow(/\[mg_library_from_file\] .*compiled \.metallib files cannot run on the Metal simulator/);
  });
});

test("each GPU dispatch's trace record says where its pipeline came from", () => {
  const x = mg.arange(8, undefined, undefined, mg.float32);
  const records = mg.trace(() => mg.exp(mg.multiply(x, 2, { stream: mg.gpu }), { stream: mg.gpu }));
  const gpu = records.filter((r) => r.device === "gpu");
  expect(gpu.length).toBeGreaterThan(0);
  for (const r of gpu) {
    if (runtime().device.isSimulator) expect(r.pipelineFrom).toMatch(/^source: (the Metal simulator compiles MSL source|a generated kernel)$/);
    else expect(r.pipelineFrom).toMatch(/^(precompiled metalgrad\.metallib|source: .+)$/);
  }
});

test("the kernel catalog and build-metallib's sources: every recorded instance compiles from them", () => {
  const catalog = join(tmp, "catalog.jsonl");
  const code = `import * as mg from ${JSON.stringify(join(ROOT, "ts/index.ts"))};
mg.eval(mg.sum(mg.exp(mg.arange(16, undefined, undefined, mg.float32), { stream: mg.gpu }), null, false, { stream: mg.gpu }));`;
  const child = Bun.spawnSync([process.execPath, "-e", code], { env: { ...process.env, MG_KERNEL_CATALOG: catalog, MG_FUSION: "0", MG_TRACE: undefined }, stderr: "pipe" });
  expect(child.stderr.toString()).toBe("");
  const lines = readFileSync(catalog, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { file: string; name: string });
  expect(lines.length).toBeGreaterThanOrEqual(2);
  const out = join(tmp, "sources");
  const gen = Bun.spawnSync([process.execPath, "run", join(ROOT, "scripts/build-metallib.ts"), catalog, "--sources-only", out], { stdout: "pipe", stderr: "pipe" });
  expect(gen.stderr.toString()).toBe("");
  const manifest = JSON.parse(readFileSync(join(out, "metalgrad.metallib.json"), "utf8")) as MetallibManifest;
  for (const [file, entry] of Object.entries(manifest.files)) {
    expect(entry.sha256).toBe(sourceHash(kernelSource(file)));
    const names = runtime().library(readFileSync(join(out, file), "utf8")).functionNames;
    for (const k of entry.kernels) expect(names).toContain(k);
  }
  expect(Object.values(manifest.files).flatMap((f) => f.kernels).sort()).toEqual([...new Set(lines.map((l) => l.name))].sort());
}, 120_000);
