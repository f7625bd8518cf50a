// RMS / layer norm kernels (Sources/Kernels/norm.metal) against the float64 reference, run
// directly through the runtime: both variants (row in registers, looped), every float dtype,
// strided inputs, with and without weight and bias, forward and backward.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bfloat16, type Dtype, float16, float32 } from "../../../../ts/core/dtype.ts";
import { encodeNorm, encodeNormVjp, NORM_SINGLE_MAX, normForwardKernel, type NormOptions, normVariant, normVjpKernels } from "../../../../ts/backend/gpu/fast/norm.ts";
import { prepareKernels } from "../../../../ts/backend/gpu/kernels.ts";
import { normRows, normRowsVjp } from "../../../../ts/backend/cpu/fast.ts";
import { dense, expectNear, normals, output, permuted, read, relTolerance, releaseAll, rounded, run } from "./harness.ts";

const DTYPES: Dtype[] = [float32, float16, bfloat16];
afterAll(releaseAll);

beforeAll(() => {
  // One compiler run for every instance the tests use.
  const all = [];
  for (const d of DTYPES) {
    for (const layer of [false, true]) {
      const o: NormOptions = { layer, eps: 1e-5, accumulate16: "float32" };
      all.push(normForwardKernel(d, 8, o), normForwardKernel(d, 2000, o), normForwardKernel(d, NORM_SINGLE_MAX + 1, o));
      for (const n of [8, NORM_SINGLE_MAX + 1]) {
        const v = normVjpKernels(d, n, o);
        all.push(v.dx, v.params);
      }
    }
  }
  all.push(normForwardKernel(float16, 8, { layer: false, eps: 1e-5, accumulate16: "native" }));
  prepareKernels(all);
});

describe.each([false, true])("layer=%p", (layer) => {
  const name = layer ? "layer_norm" : "rms_norm";
  for (const d of DTYPES) {
    for (const [rows, n] of [
      [5, 1],
      [3, 67],
      [2, 1000],
      [3, 2000],
      [2, NORM_SINGLE_MAX + 37],
    ] as const) {
      test(`${name} ${d.name} ${rows}×${n} forward`, () => {
        const opts: NormOptions = { layer, eps: 1e-5, accumulate16: "float32" };
        const xs = rounded(normals(rows * n, rows * 31 + n, 2), d).map((v) => v + (layer ? 3 : 0));
        const xr = rounded(xs, d);
        const ws = rounded(normals(n, n + 5), d);
        const bs = rounded(normals(n, n + 9), d);
        const x = dense(xr, [rows, n], d);
        const w = dense(ws, [n], d);
        const b = dense(bs, [n], d);
        for (const [useW, useB] of [
          [true, true],
          [false, false],
        ]) {
          const out = output([rows, n], d);
          const rec = run((sink) => encodeNorm(sink, x, useW ? w : null, useB ? b : null, out, opts));
          expect(rec[0]!.kernel).toBe(`mg_${name}_${normVariant(n)}_${d === float32 ? "f32" : d === float16 ? "f16" : "bf16"}`);
          const ref = normRows(xr, n, useW ? ws : null, useB ? bs : null, opts);
          // The output rounds ŷ, w·ŷ and (+ b) to d: errors scale with |w·ŷ| + |b| ~ 1, not |out|.
          expectNear(read(out), ref, 3 * relTolerance(d), useB ? 1 : 1e-2, `${name} ${d.name} w=${useW} b=${useB}`);
        }
      });
    }

    for (const [rows, n] of [
      [6, 45],
      [3, NORM_SINGLE_MAX + 5],
    ] as const) test(`${name} ${d.name} backward (dx, dw, db) ${rows}×${n}`, () => {
      const opts: NormOptions = { layer, eps: 1e-5, accumulate16: "float32" };
      const xr = rounded(normals(rows * n, 17), d);
      const ws = rounded(normals(n, 18), d);
      const gs = rounded(normals(rows * n, 19), d);
      const x = dense(xr, [rows, n], d);
      const w = dense(ws, [n], d);
      const g = dense(gs, [rows, n], d);
      const dx = output([rows, n], d);
      const dw = output([n], d);
      const db = output([n], d);
      const rec = run((sink) => encodeNormVjp(sink, x, w, g, dx, dw, layer ? db : null, opts));
      const tag = d === float32 ? "f32" : d === float16 ? "f16" : "bf16";
      expect(rec.map((r) => r.kernel)).toEqual([`mg_${name}_vjp_${n <= NORM_SINGLE_MAX ? "rows_" : ""}${tag}`, `mg_${name}_param_grad_${tag}`]);
      const ref = normRowsVjp(xr, n, ws, gs, opts);
      const tol = 4 * relTolerance(d);
      expectNear(read(dx), ref.dx, tol, 0.05, `${name} dx`);
      expectNear(read(dw), ref.dw, tol, 0.05, `${name} dw`);
      if (layer) expectNear(read(db), ref.db, tol, 0.05, `${name} db`);
    });
  }

  test(`${name} reads strided rows and a strided row axis in place`, () => {
    const opts: NormOptions = { layer, eps: 1e-6, accumulate16: "float32" };
    const shape = [3, 4, 50];
    const count = 3 * 4 * 50;
    const xr = rounded(normals(count, 77), float32);
    // storage (50, 3, 4): the normalised axis has stride 12, rows are strided too
    const x = permuted(xr, shape, [2, 0, 1], float32);
    const ws = rounded(normals(50, 78), float32);
    const w = dense(ws, [50], float32);
    const out = output(shape, float32);
    run((sink) => encodeNorm(sink, x, w, null, out, opts));
    expectNear(read(out), normRows(xr, 50, ws, null, opts), 2e-5, 1e-2, "strided forward");
    const gs = rounded(normals(count, 79), float32);
    const g = permuted(gs, shape, [1, 2, 0], float32);
    const dx = output(shape, float32);
    const dw = output([50], float32);
    run((sink) => encodeNormVjp(sink, x, w, g, dx, dw, null, opts));
    const ref = normRowsVjp(xr, 50, ws, gs, opts);
    expectNear(read(dx), ref.dx, 5e-5, 0.05, "strided dx");
    expectNear(read(dw), ref.dw, 5e-5, 0.05, "strided dw");
  });
});

test("accumulate16 native: half sums, and the trace says so", () => {
  const opts: NormOptions = { layer: false, eps: 1e-5, accumulate16: "native" };
  const n = 64;
  const xr = rounded(normals(2 * n, 5), float16);
  const x = dense(xr, [2, n], float16);
  const out = output([2, n], float16);
  const rec = run((sink) => encodeNorm(sink, x, null, null, out, opts));
  expect(rec[0]!.kernel).toBe("mg_rms_norm_rows_f16_acc_f16");
  expect(rec[0]!.precision).toContain("fp16 accumulate over fp16 operands (policy accumulate16: native)");
  // 64 terms summed in half: within a few half roundings of the float64 value.
  expectNear(read(out), normRows(xr, n, null, null, opts), 2 ** -6, 1e-2, "native");
});
