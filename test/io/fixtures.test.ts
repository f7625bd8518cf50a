// Files written by numpy, MLX, the safetensors library and in GGUF's layout (test/fixtures/io,
// made by scripts/io-fixtures.py) load to the bytes MLX's mx.load returns for them — or numpy's /
// gguf-py's where MLX 0.32.4 is wrong (each such case carries a note in expected.json).
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import * as mg from "../../ts/index.ts";
import { rowMajorHex } from "./helpers.ts";

const DIR = join(import.meta.dir, "../fixtures/io");
interface TensorExpectation {
  dtype: string;
  shape: number[];
  hex: string;
}
interface FileExpectation {
  format: string;
  source: string;
  error?: string;
  note?: string;
  tensors?: Record<string, TensorExpectation>;
  metadata?: Record<string, string | string[] | TensorExpectation>;
}
const expected = (await Bun.file(join(DIR, "expected.json")).json()) as { files: Record<string, FileExpectation> };

function expectTensor(a: mg.MgArray, e: TensorExpectation, what: string): void {
  expect({ what, dtype: a.dtype.name as string, shape: [...a.shape] }).toEqual({ what, dtype: e.dtype, shape: e.shape });
  expect({ what, hex: rowMajorHex(a) }).toEqual({ what, hex: e.hex });
}

describe("fixtures written by other libraries", () => {
  const entries = Object.entries(expected.files);
  test("every fixture is listed and present", async () => {
    expect(entries.length).toBeGreaterThan(50);
    for (const [name] of entries) expect(await Bun.file(join(DIR, name)).exists()).toBe(true);
  });

  for (const [name, e] of entries) {
    test(`${name} (${e.source})${e.note ? ` — ${e.note}` : ""}`, () => {
      const file = join(DIR, name);
      if (e.error !== undefined) {
        expect(() => mg.load(file)).toThrow(`[load] ${file}: `);
        expect(() => mg.load(file)).toThrow(e.error);
        return;
      }
      const withMetadata = e.metadata !== undefined;
      const result = mg.load(file, null, withMetadata);
      const [arrays, metadata] = withMetadata
        ? (result as [Record<string, mg.MgArray>, mg.Metadata])
        : [result, undefined];
      const tensors = arrays instanceof mg.MgArray ? { "": arrays } : (arrays as Record<string, mg.MgArray>);
      expect(Object.keys(tensors).sort()).toEqual(Object.keys(e.tensors!).sort());
      for (const [k, t] of Object.entries(e.tensors!)) expectTensor(tensors[k]!, t, `${name}:${k}`);
      if (withMetadata) {
        expect(Object.keys(metadata!).sort()).toEqual(Object.keys(e.metadata!).sort());
        for (const [k, v] of Object.entries(e.metadata!)) {
          const got = metadata![k];
          if (typeof v === "string" || Array.isArray(v)) expect(got).toEqual(v);
          else expectTensor(got as mg.MgArray, v, `${name}: metadata ${k}`);
        }
      }
    });
  }
});
