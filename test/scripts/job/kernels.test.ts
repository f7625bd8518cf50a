// The kernel-trace summary of a training step.
import { describe, expect, test } from "bun:test";
import type { TraceRecord } from "../../../ts/index.ts";
import { formatSummary, isFused, kernelFamily, summarize } from "../../../scripts/job/kernels.ts";
import * as mg from "../../../ts/index.ts";

const rec = (kernel: string, primitives: string[], precision: string, notes: string[] = []): TraceRecord => ({
  device: "gpu", kernel, primitives, inputDtypes: ["float32"], outputDtypes: ["float32"], layout: "contiguous", precision, notes,
});

describe("summarize", () => {
  const records = [
    rec("mg_fused_3ca4b4fd007bbe4", ["Multiply", "Add"], "IEEE fp32"),
    rec("mg_fused_be288d1316fb9cbe", ["Multiply", "Tanh"], "IEEE fp32"),
    rec("mg_gemm_nn_f32", ["Matmul"], "IEEE fp32"),
    rec("mg_gemm_nn_f32", ["Matmul"], "IEEE fp32"),
    rec("mg_gemm_nn_f32", ["Matmul"], "IEEE fp32", ["copy: Reshape of array #12 (2,3) float32 cannot be a view"]),
    rec("mg_copy", ["Reshape"], "no arithmetic", ["copy: Reshape of array #345 (2,3) float32 cannot be a view"]),
    rec("mg_rms_norm_f32", ["RMSNorm"], "fp32 accumulate over fp32 operands"),
  ];
  const s = summarize(records);
  test("counts runs, fused runs (several primitives or an mg.fast op), mg.fast runs", () => {
    expect([s.runs, s.fusedRuns, s.fastRuns]).toEqual([7, 3, 1]);
    expect(isFused(records[2]!)).toBe(false);
  });
  test("groups generated fused kernels by family, most runs first", () => {
    expect(kernelFamily("mg_fused_3ca4b4fd007bbe4")).toBe("mg_fused_*");
    expect(kernelFamily("cpu:Matmul")).toBe("cpu:Matmul");
    expect(s.rows.map((r) => [r.kernel, r.runs, r.fused])).toEqual([
      ["mg_gemm_nn_f32", 3, false], ["mg_fused_*", 2, true], ["mg_copy", 1, false], ["mg_rms_norm_f32", 1, true],
    ]);
    expect(s.rows[1]!.primitives).toEqual(["Multiply", "Add", "Tanh"]);
  });
  test("precisions and notes with counts", () => {
    expect(s.precisions).toEqual([["IEEE fp32", 5], ["fp32 accumulate over fp32 operands", 1], ["no arithmetic", 1]]);
    // Notes of one kind count together whatever array they name.
    expect(s.notes).toEqual([["copy: Reshape of array (2,3) float32 cannot be a view", 2]]);
    const text = formatSummary(s, 2).join("\n");
    expect(text).toContain("7 kernel runs: 3 fused (1 of them mg.fast ops), 4 single-primitive");
    expect(text).toContain("… 2 more kernels (2 runs)");
    expect(text).toContain("2× copy: Reshape of array (2,3) float32 cannot be a view");
  });
  test("a real trace: a CPU matmul then softmax", () => {
    const x = mg.ones([2, 3], mg.float32, { stream: mg.cpu });
    const t = mg.trace(() => mg.softmax(mg.matmul(x, mg.transpose(x), { stream: mg.cpu }), -1, { stream: mg.cpu }));
    const sum = summarize(t);
    expect(sum.rows.flatMap((r) => r.primitives)).toEqual(expect.arrayContaining(["Matmul", "Softmax"]));
    expect(sum.rows.every((r) => r.kernel.startsWith("cpu"))).toBe(true);
    expect(sum.runs).toBe(t.length);
  });
});
