// The main job's checkpoint: safetensors with the config in its metadata; a fresh model loaded
// from it has the same parameters bit for bit and computes the same logits; MLX reads the file.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as mg from "../../../ts/index.ts";
import { loadCheckpoint, saveCheckpoint } from "../../../scripts/job/checkpoint.ts";
import { Decoder } from "../../../scripts/job/model.ts";
import { pythonWith } from "../../../bench/util.ts";

const dir = mkdtempSync(join(tmpdir(), "mg-checkpoint-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const config = { vocabSize: 12, dims: 16, layers: 1, heads: 2, mlpRatio: 2, ropeBase: 100 };

describe("checkpoint", () => {
  mg.random.seed(11);
  const model = new Decoder(config);
  const file = join(dir, "model.safetensors");
  const info = saveCheckpoint(model, file, { task: "addition-1" });
  test("saved: every parameter, the config and task in the metadata", () => {
    expect(info.tensors).toBe(model.namedParameters().length);
    const [arrays, metadata] = mg.load(file, { returnMetadata: true }) as [Record<string, mg.MgArray>, Record<string, string>];
    expect(Object.keys(arrays).sort()).toEqual(model.namedParameters().map(([n]) => n).sort());
    expect(JSON.parse(metadata.config!)).toEqual(config);
    expect(metadata.task).toBe("addition-1");
  });
  test("loaded into a fresh model: the same parameters bit for bit, the same logits", () => {
    const { model: fresh } = loadCheckpoint(file);
    const theirs = new Map(fresh.namedParameters());
    for (const [name, a] of model.namedParameters()) expect(mg.arrayEqual(a, theirs.get(name)!).item()).toBe(true);
    const tokens = mg.array([[3, 1, 10, 4, 11]], mg.int32);
    expect(mg.arrayEqual(fresh.forward(tokens), model.forward(tokens)).item()).toBe(true);
  });
  test("a file without the config is an error naming it", () => {
    const bare = join(dir, "bare.safetensors");
    mg.saveSafetensors(bare, { w: mg.ones([2]) });
    expect(() => loadCheckpoint(bare)).toThrow(`[main] ${bare}: no model config`);
  });
  const python = pythonWith(["mlx.core"]);
  test.skipIf(!python)("MLX reads the checkpoint: same names, shapes and sums", () => {
    const r = Bun.spawnSync([python!, "-c", `import mlx.core as mx, json, sys\nw = mx.load(sys.argv[1])\nprint(json.dumps({k: [list(v.shape), v.astype(mx.float32).sum().item()] for k, v in w.items()}))\nimport os; sys.stdout.flush(); os._exit(0)`, file]); // skip MLX's occasionally aborting teardown
    expect(r.exitCode).toBe(0);
    const theirs = JSON.parse(r.stdout.toString()) as Record<string, [number[], number]>;
    for (const [name, a] of model.namedParameters()) {
      expect(theirs[name]![0]).toEqual([...a.shape]);
      expect(theirs[name]![1]).toBeCloseTo(mg.sum(a).item() as number, 3);
    }
  });
});
