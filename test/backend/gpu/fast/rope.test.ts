// RoPE kernel (Sources/Kernels/rope.metal) against the float64 reference: both pair layouts,
// partial rotation, base and custom frequencies, scalar and per-batch offsets, strided inputs,
// and the backward (inverse) rotation.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bfloat16, type Dtype, float16, float32, int32 } from "../../../../ts/core/dtype.ts";
import { encodeRope, ropeKernel } from "../../../../ts/backend/gpu/fast/rope.ts";
import { prepareKernels } from "../../../../ts/backend/gpu/kernels.ts";
import { ropeRef } from "../../../../ts/backend/cpu/fast.ts";
import { dense, expectNear, normals, output, permuted, read, relTolerance, releaseAll, rounded, run } from "./harness.ts";

const DTYPES: Dtype[] = [float32, float16, bfloat16];
afterAll(releaseAll);
beforeAll(() => prepareKernels(DTYPES.map(ropeKernel)));

describe.each(DTYPES.map((d) => [d.name, d] as const))("%s", (_name, d) => {
  for (const traditional of [false, true]) {
    for (const dims of [16, 6]) {
      test(`traditional=${traditional} dims=${dims}/16, base, per-batch offsets, forward and inverse`, () => {
        const shape = [2, 3, 5, 16];
        const xr = rounded(normals(2 * 3 * 5 * 16, dims + (traditional ? 1 : 0)), d);
        const x = dense(xr, shape, d);
        const offsets = [3, 100];
        const off = dense(offsets, [2], int32);
        for (const forward of [true, false]) {
          const out = output(shape, d);
          const rec = run((sink) => encodeRope(sink, x, off, null, out, { dims, traditional, base: 10000, scale: 0.5, forward }));
          expect(rec[0]!.kernel).toBe(`mg_rope_${d === float32 ? "f32" : d === float16 ? "f16" : "bf16"}`);
          const ref = ropeRef(xr, shape, { dims, traditional, base: 10000, scale: 0.5, offsets, freqs: null, forward });
          expectNear(read(out), ref, d === float32 ? 2e-5 : relTolerance(d), 1, `rope ${d.name}`);
        }
      });
    }
  }

  test("custom frequencies and a scalar offset on a 3-D input", () => {
    const shape = [2, 7, 8];
    const xr = rounded(normals(2 * 7 * 8, 3), d);
    const x = dense(xr, shape, d);
    const freqs = [1, 2.5, 40, 1000];
    const f = dense(freqs, [4], float32);
    const off = dense([12], [1], int32);
    const out = output(shape, d);
    run((sink) => encodeRope(sink, x, off, f, out, { dims: 8, traditional: false, base: 1, scale: 1, forward: true }));
    const ref = ropeRef(xr, shape, { dims: 8, traditional: false, base: null, scale: 1, offsets: [12], freqs: Float64Array.from(freqs), forward: true });
    expectNear(read(out), ref, d === float32 ? 2e-5 : relTolerance(d), 1, "freqs");
  });
});

test("reads a (B, T, H, D) tensor seen as (B, H, T, D) in place", () => {
  const shape = [2, 4, 6, 32]; // logical (B, H, T, D), stored (B, T, H, D)
  const xr = rounded(normals(2 * 4 * 6 * 32, 11), float32);
  const x = permuted(xr, shape, [0, 2, 1, 3], float32);
  const off = dense([5], [1], int32);
  const out = output(shape, float32);
  run((sink) => encodeRope(sink, x, off, null, out, { dims: 32, traditional: false, base: 500, scale: 1, forward: true }));
  expectNear(read(out), ropeRef(xr, shape, { dims: 32, traditional: false, base: 500, scale: 1, offsets: [5], freqs: null, forward: true }), 2e-5, 1, "strided");
});
