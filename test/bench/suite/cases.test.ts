// bench.ts's cases compute what MLX computes: every case at --quick size, metalgrad's check
// against the Python worker's MLX check on the same inputs (skipped without a Python with MLX).
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as mg from "../../../ts/index.ts";
import { agrees, benchCases } from "../../../bench/suite/cases.ts";
import { PythonWorker } from "../../../bench/suite/python.ts";
import { pythonWith } from "../../../bench/util.ts";

const tmp = mkdtempSync(join(tmpdir(), "mg-bench-test-"));
const python = pythonWith(["mlx.core", "numpy"]);
const started = python ? await PythonWorker.start(python) : null;
const worker = started && "worker" in started ? started.worker : null;
afterAll(() => {
  worker?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

describe("agrees", () => {
  test("2e-3 relative, 2e-2 for half-precision cases", () => {
    expect(agrees("matmul f32 8×8×8", 1.0019, 1)).toBe(true);
    expect(agrees("matmul f32 8×8×8", 1.003, 1)).toBe(false);
    expect(agrees("matmul bf16 8×8×8", 1.015, 1)).toBe(true);
    expect(agrees("matmul f16 8×8×8", 1.03, 1)).toBe(false);
  });
});

describe.skipIf(!worker)("every quick case agrees with MLX on the CPU", () => {
  const cases = benchCases(true, tmp);
  test("the suite has every kind of case the issue names", () => {
    const groups = new Set(cases.map((c) => c.group));
    for (const g of ["elementwise", "reduction", "softmax", "matmul", "conv2d", "fast ops", "quantized", "training", "io"]) expect(groups.has(g)).toBe(true);
  });
  cases.forEach((c, i) => {
    test.skipIf(c.unavailable() !== null)(c.id, async () => {
      mg.random.seed(i + 1);
      const inputs = c.inputs();
      const file = join(tmp, `case-${i}.safetensors`);
      const hasInputs = Object.keys(inputs).length > 0;
      if (hasInputs) mg.saveSafetensors(file, inputs);
      c.target?.write();
      const mine = c.prepare(inputs, mg.cpu).check();
      const key = `test/${i}`;
      const prepared = await worker!.ask({ cmd: "prepare", key, system: "mlx", device: "cpu", op: c.op, params: c.params, ...(hasInputs ? { file } : {}) });
      expect(prepared.error ?? prepared.na ?? null).toBeNull();
      const theirs = (await worker!.ask({ cmd: "check", key })).value as number;
      await worker!.ask({ cmd: "drop", key });
      expect(Number.isFinite(mine)).toBe(true);
      expect({ mine, theirs, agree: agrees(c.id, mine, theirs) }).toEqual({ mine, theirs, agree: true });
    });
  });
});
