// Cross-entropy kernels (Sources/Kernels/cross_entropy.metal) against the float64 reference:
// forward loss and backward dlogits, every float dtype, strided logits, broadcast cotangents,
// targets out of range (NaN, never a wild read) and infinite logits.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bfloat16, type Dtype, float16, float32, int32 } from "../../../../ts/core/dtype.ts";
import { crossEntropyKernels, encodeCrossEntropy, encodeCrossEntropyVjp } from "../../../../ts/backend/gpu/fast/cross-entropy.ts";
import { prepareKernels } from "../../../../ts/backend/gpu/kernels.ts";
import { crossEntropyRef, crossEntropyVjpRef } from "../../../../ts/backend/cpu/fast.ts";
import { broadcast, dense, expectNear, normals, output, permuted, read, relTolerance, releaseAll, rounded, run } from "./harness.ts";

const DTYPES: Dtype[] = [float32, float16, bfloat16];
afterAll(releaseAll);
beforeAll(() => prepareKernels(DTYPES.flatMap((d) => Object.values(crossEntropyKernels(d, "float32")))));

describe.each(DTYPES.map((d) => [d.name, d] as const))("%s", (_name, d) => {
  for (const n of [10, 1000]) {
    test(`rows of ${n} classes: loss and dlogits`, () => {
      const rows = 6;
      const xr = rounded(normals(rows * n, n, 3), d);
      const targets = [0, n - 1, 3, 7, -1, n]; // the last two are out of range: NaN
      const x = dense(xr, [2, 3, n], d);
      const t = dense(targets, [2, 3], int32);
      const loss = output([2, 3], float32);
      const rec = run((sink) => encodeCrossEntropy(sink, x, t, loss, "float32"));
      expect(rec[0]!.precision).toContain(d === float32 ? "IEEE fp32" : "fp32 accumulate");
      // The loss subtracts two float32 values of size |x| ~ 10: absolute error ~ 10·2^-23·n-ish.
      expectNear(read(loss), crossEntropyRef(xr, n, targets), 1e-5, 10, `loss ${d.name}`);

      const gs = [1, -2, 0.5, 3, 1, 1];
      const g = dense(gs, [2, 3], float32);
      const dx = output([2, 3, n], d);
      run((sink) => encodeCrossEntropyVjp(sink, x, t, g, dx, "float32"));
      expectNear(read(dx), crossEntropyVjpRef(xr, n, targets, gs), relTolerance(d), 1e-3, `dlogits ${d.name}`);
    });
  }
});

test("strided logits and a broadcast cotangent (the vjp of a mean)", () => {
  const n = 33;
  const xr = rounded(normals(4 * n, 9), float32);
  const x = permuted(xr, [4, n], [1, 0], float32); // class axis has stride 4
  const targets = [1, 32, 0, 17];
  const t = dense(targets, [4], int32);
  const loss = output([4], float32);
  run((sink) => encodeCrossEntropy(sink, x, t, loss, "float32"));
  expectNear(read(loss), crossEntropyRef(xr, n, targets), 1e-5, 1, "strided loss");
  const g = broadcast([0.25], [1], [4], float32);
  const dx = output([4, n], float32);
  run((sink) => encodeCrossEntropyVjp(sink, x, t, g, dx, "float32"));
  expectNear(read(dx), crossEntropyVjpRef(xr, n, targets, [0.25, 0.25, 0.25, 0.25]), 2e-5, 1e-3, "strided dlogits");
});

test("infinite and NaN logits follow logsumexp", () => {
  const n = 4;
  const xs = [Infinity, 0, 1, 2, -Infinity, -Infinity, -Infinity, -Infinity, NaN, 0, 0, 0, -Infinity, 0, 1, 2];
  const x = dense(xs, [4, n], float32);
  const targets = [1, 0, 1, 0];
  const t = dense(targets, [4], int32);
  const loss = output([4], float32);
  run((sink) => encodeCrossEntropy(sink, x, t, loss, "float32"));
  const got = read(loss);
  expect(got[0]).toBe(Infinity); // logsumexp = ∞, minus a finite logit
  expect(got[1]).toBeNaN(); // −∞ − (−∞)
  expect(got[2]).toBeNaN();
  expect(got[3]).toBe(Infinity); // target logit −∞
});
