// The package entry (ts/index.ts) without a native runtime: importing never fails; the CPU device
// computes on JS-owned memory; the GPU device is unavailable and says why and how to get it.
// Each case runs in a child process whose runtime is hidden (MG_RUNTIME_LIB pointing nowhere).
import { describe, expect, test } from "bun:test";
import { join } from "node:path";

const ENTRY = join(import.meta.dir, "../ts/index.ts");
const NOWHERE = "/nonexistent/libMetalGradRuntime.so";

function withoutRuntime(body: string, env: Record<string, string> = {}): { out: unknown; stderr: string } {
  const code = `import * as mg from ${JSON.stringify(ENTRY)};\nconst out: Record<string, unknown> = {};\n${body}\nconsole.log(JSON.stringify(out, (_k, v) => typeof v === "bigint" ? String(v) : v));`;
  const r = Bun.spawnSync([process.execPath, "-e", code], {
    env: { ...process.env, MG_RUNTIME_LIB: NOWHERE, MG_TRACE: undefined, MG_DEFAULT_DEVICE: undefined, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`child failed (${r.exitCode}): ${r.stderr.toString()}`);
  return { out: JSON.parse(r.stdout.toString()), stderr: r.stderr.toString() };
}

describe("without a native runtime", () => {
  test("import succeeds; the GPU is unavailable and deviceInfo says why and how to get it", () => {
    const { out } = withoutRuntime(`
out.gpu = mg.isAvailable(mg.gpu); out.gpuType = mg.isAvailable("gpu"); out.count = mg.deviceCount("gpu");
out.cpu = mg.isAvailable(mg.cpu); out.default = mg.defaultDevice().type; out.info = mg.deviceInfo();`);
    const o = out as { gpu: boolean; gpuType: boolean; count: number; cpu: boolean; default: string; info: Record<string, unknown> };
    expect([o.gpu, o.gpuType, o.count, o.cpu, o.default]).toEqual([false, false, 0, true, "cpu"]);
    expect(o.info.gpu_available).toBe(false);
    expect(o.info.runtime_error).toContain(`MG_RUNTIME_LIB is set to ${NOWHERE}, which does not exist`);
    expect(o.info.how_to_get_the_runtime).toContain("bun add metalgrad");
    expect(o.info.how_to_get_the_runtime).toContain("metalgrad-darwin-arm64");
    expect(o.info.default_device).toBe("cpu");
  });

  test("the CPU device computes: ops, reductions, random, autograd, I/O, the memory API", () => {
    const { out } = withoutRuntime(`
const a = mg.arange(6, undefined, undefined, mg.float32).reshape([2, 3]);
out.matmul = mg.matmul(a, mg.transpose(a)).tolist();
out.sum = mg.sum(mg.exp(mg.zeros([4]))).item();
out.grad = mg.grad((x: mg.MgArray) => mg.sum(mg.square(x)))(mg.array([1, 2, 3], mg.float32)).tolist();
out.uniformShape = mg.random.uniform(0, 1, [3], mg.float32, mg.random.key(0)).shape;
const file = require("node:os").tmpdir() + "/mg-no-runtime-" + process.pid + ".safetensors";
mg.saveSafetensors(file, { a });
out.loaded = (mg.load(file) as Record<string, mg.MgArray>).a.tolist();
require("node:fs").rmSync(file);
const before = mg.getActiveMemory();
const big = mg.arange(1024 * 256, undefined, undefined, mg.float32);
mg.eval(big);
out.grew = mg.getActiveMemory() - before;
big.dispose();
out.back = mg.getActiveMemory() - before;
out.peakAtLeast = mg.getPeakMemory() >= 1024 * 256 * 4;
out.cache = mg.getCacheMemory();`);
    expect(out).toEqual({
      matmul: [[5, 14], [14, 50]], sum: 4, grad: [2, 4, 6], uniformShape: [3], loaded: [[0, 1, 2], [3, 4, 5]],
      grew: 1024 * 256 * 4, back: 0, peakAtLeast: true, cache: 0,
    });
  });

  test("a GPU op fails with MLX's message, the reason and what to do", () => {
    const { out } = withoutRuntime(`
for (const [k, f] of Object.entries({
  op: () => mg.add(mg.array(1), 1, { stream: mg.gpu }),
  scope: () => mg.stream(mg.gpu, () => mg.add(mg.array(1), 1)),
  newStream: () => mg.newStream(mg.gpu),
  metalKernel: () => mg.fast.metalKernel({ name: "k", inputNames: ["a"], outputNames: ["o"], source: "o[0] = a[0];" })({ inputs: [mg.array([1])], outputShapes: [[1]], outputDtypes: [mg.float32], grid: [1, 1, 1], threadgroup: [1, 1, 1] }),
})) {
  try { f(); out[k] = "no error"; } catch (e) { out[k] = (e as Error).message; }
}`);
    for (const [k, message] of Object.entries(out as Record<string, string>)) {
      expect({ k, message }).toEqual({ k, message: expect.stringContaining("[default_stream] Cannot get gpu stream without gpu backend: no native runtime ([runtime] MG_RUNTIME_LIB is set to") });
      expect(message).toContain("Run on the CPU device ({ stream: mg.cpu })");
    }
  });

  test("MG_DEFAULT_DEVICE=gpu falls back to the CPU with a warning", () => {
    const { out, stderr } = withoutRuntime("out.default = mg.defaultDevice().type; out.v = mg.add(mg.array([1]), 1).tolist();", { MG_DEFAULT_DEVICE: "gpu" });
    expect(out).toEqual({ default: "cpu", v: [2] });
    expect(stderr).toContain("MG_DEFAULT_DEVICE=gpu, but there is no GPU device (no native runtime");
  });
});
