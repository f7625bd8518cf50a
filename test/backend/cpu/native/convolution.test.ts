// The native convolution (Sources/MGCpu/conv.cpp, bound in ts/backend/cpu/native/convolution.ts)
// against the TypeScript reference (ts/backend/cpu/convolution.ts, float64 accumulation): 1–3
// spatial axes, strides, padding (negative too), kernel and input dilation, flips, groups and
// depthwise, every float dtype, strided and broadcast operands, the backward passes (Convolution
// nodes too), empty shapes, non-finite values; thread counts and instruction sets.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../../ts/index.ts";
import type { MgArray } from "../../../../ts/core/array.ts";
import type { Dtype } from "../../../../ts/core/dtype.ts";
import { accumulationTolerance } from "../../../../ts/testing/tolerances.ts";
import { acrossIsas, both, compare, expectClose, expectThreadIndependent, kernelsOf, onReference, S, uniform } from "./harness.ts";

const FLOATS: Dtype[] = [mg.float32, mg.float64, mg.float16, mg.bfloat16];

/** Compares within the accumulation tolerance of `n` products (16-bit floats: their own grid). */
const within = (n: number) => (got: MgArray, want: MgArray, what: string) => expectClose(got, want, accumulationTolerance(got.dtype, n), what);

const input = (shape: number[], seed: number, dtype: Dtype) => onReference(() => mg.astype(uniform(shape, seed), dtype, S));

describe("native convolution = reference", () => {
  for (const dtype of FLOATS) {
    test(`${dtype.name}: 1-3 spatial axes, strides, padding, dilations, flips, groups`, () => {
      const x2 = input([3, 11, 12, 6], 1, dtype);
      const w2 = input([8, 3, 3, 6], 2, dtype);
      const wg = input([4, 3, 2, 3], 3, dtype); // groups 2
      const wd = input([6, 3, 3, 1], 4, dtype); // depthwise
      const x1 = input([2, 17, 5], 5, dtype), w1 = input([7, 4, 5], 6, dtype);
      const x3 = input([2, 5, 6, 7, 3], 7, dtype), w3 = input([4, 2, 3, 2, 3], 8, dtype);
      const cases: [string, number, () => MgArray][] = [
        ["conv2d", 54, () => mg.conv2d(x2, w2, 1, 0, 1, 1, S)],
        ["stride 2, padding 1", 54, () => mg.conv2d(x2, w2, 2, 1, 1, 1, S)],
        ["stride (1, 3), padding (2, 0), dilation (2, 1)", 54, () => mg.conv2d(x2, w2, [1, 3], [2, 0], [2, 1], 1, S)],
        ["groups 2", 18, () => mg.conv2d(x2, wg, 1, 1, 1, 2, S)],
        ["depthwise", 9, () => mg.conv2d(x2, wd, 1, 1, 1, 6, S)],
        ["conv1d stride 2 padding 3", 20, () => mg.conv1d(x1, w1, 2, 3, 1, 1, S)],
        ["conv3d", 36, () => mg.conv3d(x3, w3, 1, 1, 1, 1, S)],
        ["flip, input dilation, asymmetric and negative padding", 54, () => mg.convGeneral(x2, w2, [1, 2], [[2, -1], [1, 3]], [1, 2], [2, 1], 1, true, S)],
        ["transposed", 54, () => mg.convTranspose2d(x2, input([5, 3, 3, 6], 9, dtype), 2, 1, 1, 1, 1, S)],
      ];
      for (const [name, n, build] of cases) compare(both(() => [build()]), `${dtype.name} ${name}`, within(n));
    });
  }

  test("strided, transposed and broadcast operands", () => {
    const x = onReference(() => mg.transpose(uniform([3, 5, 10, 9], 11), [0, 2, 3, 1], S)); // channels strided
    const w = onReference(() => mg.transpose(uniform([4, 3, 3, 5], 12), [0, 2, 1, 3], S)); // kernel axes swapped
    const xb = onReference(() => mg.broadcastTo(uniform([1, 10, 9, 5], 13), [4, 10, 9, 5], S));
    const xs = uniform([3, 20, 9, 5], 14).index(":", "::2");
    for (const [name, build] of [
      ["transposed input", () => mg.conv2d(x, w, 1, 1, 1, 1, S)],
      ["broadcast batch", () => mg.conv2d(xb, w, 2, 0, 1, 1, S)],
      ["sliced input", () => mg.conv2d(xs, w, 1, 0, 1, 1, S)],
    ] as [string, () => MgArray][]) compare(both(() => [build()]), name, within(45));
  });

  test("gradients with respect to input and weight (Convolution nodes in the backward pass)", () => {
    const x = uniform([4, 9, 10, 6], 21), w = uniform([8, 3, 3, 3], 22), cot = uniform([4, 5, 5, 8], 23);
    const loss = (a: MgArray, b: MgArray) => mg.sum(mg.multiply(mg.conv2d(a, b, 2, 1, 1, 2, S), cot, S), undefined, S);
    const g = mg.grad(loss, [0, 1]) as unknown as (a: MgArray, b: MgArray) => MgArray[];
    compare(both(() => g(x, w)), "grouped strided conv gradients", within(4 * 25 * 8));
    const x1 = uniform([16, 14, 14, 1], 24), w1 = uniform([8, 3, 3, 1], 25);
    const g1 = mg.grad((a: MgArray, b: MgArray) => mg.sum(mg.square(mg.conv2d(a, b, 1, 0, 1, 1, S), S), undefined, S), [0, 1]) as unknown as (a: MgArray, b: MgArray) => MgArray[];
    compare(both(() => g1(x1, w1)), "single-channel conv gradients", within(16 * 144 * 8));
  });

  test("empty shapes", () => {
    const w = uniform([4, 3, 3, 2], 31);
    compare(both(() => [mg.conv2d(mg.zeros([0, 6, 6, 2], mg.float32, S), w, 1, 0, 1, 1, S)]), "empty batch", within(1));
    compare(both(() => [mg.conv2d(mg.zeros([2, 0, 6, 2], mg.float32, S), w, 1, 2, 1, 1, S)]), "empty spatial axis with padding", within(1));
    compare(both(() => [mg.conv2d(uniform([2, 6, 6, 2], 32), mg.zeros([0, 3, 3, 2], mg.float32, S), 1, 0, 1, 1, S)]), "no output channels", within(1));
  });

  test("non-finite inputs give the reference's NaN and infinities; a non-finite weight declines to the reference", () => {
    const x = onReference(() => mg.where(mg.greater(uniform([2, 7, 7, 3], 41), 0.9, S), Infinity, mg.where(mg.less(uniform([2, 7, 7, 3], 42), -0.95, S), NaN, uniform([2, 7, 7, 3], 43), S), S));
    const w = uniform([4, 3, 3, 3], 44);
    compare(both(() => [mg.conv2d(x, w, 1, 1, 1, 1, S)]), "non-finite input", within(27));
    const wi = onReference(() => mg.where(mg.greater(w, 0.9, S), Infinity, w, S));
    compare(both(() => [mg.conv2d(uniform([2, 7, 7, 3], 45), wi, 1, 1, 1, 1, S)]), "infinite weight with padding", within(27));
    const rec = mg.trace(() => mg.conv2d(uniform([2, 7, 7, 3], 45), wi, 1, 1, 1, 1, S)).find((r) => r.kernel.endsWith("Convolution"));
    expect(rec?.kernel).toBe("cpu:Convolution");
    expect(rec?.notes.join(" ")).toContain("a weight is infinite or NaN");
  });

  test("the trace names the native kernel and its precision", () => {
    const x = uniform([2, 6, 6, 4], 51);
    expect(kernelsOf(() => mg.conv2d(x, uniform([3, 3, 3, 4], 52), 1, 0, 1, 1, S))).toContain("cpu-native:Convolution(implicit gemm)");
    expect(kernelsOf(() => mg.conv2d(x, uniform([4, 3, 3, 1], 53), 1, 0, 1, 4, S))).toContain("cpu-native:Convolution(depthwise)");
    const rec = mg.trace(() => mg.conv2d(x, uniform([3, 3, 3, 4], 52), 1, 0, 1, 1, S)).find((r) => r.kernel.startsWith("cpu-native:Convolution"));
    expect(rec?.precision).toContain("float32");
  });
});

describe("native convolution determinism", () => {
  const x = uniform([16, 20, 20, 8], 61), w = uniform([24, 3, 3, 8], 62), wd = uniform([8, 5, 5, 1], 63);
  const build = () => [mg.conv2d(x, w, 1, 1, 1, 1, S), mg.conv2d(x, wd, 2, 2, 1, 8, S)];
  test("1 thread and 4 threads give the same bits", () => expectThreadIndependent(build, "conv"));
  test("both instruction sets agree with the reference", () => {
    const r = acrossIsas(build);
    if (!r) return;
    const reference = onReference(build);
    for (const outs of [r.baseline, r.best]) outs.forEach((o, k) => expectClose(o, reference[k]!, accumulationTolerance(mg.float32, 72), `isa case ${k}`));
  });
});
