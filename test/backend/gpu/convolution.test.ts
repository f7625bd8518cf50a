// Convolution on the GPU device (the Metal simulator here) against float64 convolutions computed
// on the CPU device from the same (already rounded) inputs, with the kernel each case takes read
// from the trace: implicit GEMM (32/64-row, 16/32-channel tiles, per group) or direct.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import { input, runOn } from "./harness.ts";

const ROUNDOFF = new Map<mg.Dtype, number>([
  [mg.float32, 2 ** -24],
  [mg.float16, 2 ** -11],
  [mg.bfloat16, 2 ** -8],
]);

function cpu<T>(fn: () => T): T {
  const r = mg.stream(mg.cpu, fn);
  mg.eval(r as never);
  return r;
}

/**
 * |gpu − ref| ≤ u_dtype·|ref| + 4·√K·u_fp32·(|x| ⋆ |w|) elementwise, K the terms per output (the
 * inner-product bound of float32 accumulation, as for matmul); ref and |x| ⋆ |w| in float64.
 */
function expectConvClose(gpu: MgArray, conv: (x: MgArray, w: MgArray) => MgArray, x: MgArray, w: MgArray, K: number, what: string): void {
  const x64 = cpu(() => mg.astype(x, mg.float64));
  const w64 = cpu(() => mg.astype(w, mg.float64));
  const ref = cpu(() => conv(x64, w64));
  const mag = cpu(() => conv(mg.abs(x64), mg.abs(w64)));
  expect(gpu.shape, `${what} shape`).toEqual(ref.shape);
  const u = ROUNDOFF.get(gpu.dtype)!;
  const lambda = 4 * Math.sqrt(K) * 2 ** -24;
  const g = cpu(() => mg.astype(gpu, mg.float64)).dataSync() as Float64Array;
  const r = ref.dataSync() as Float64Array;
  const m = mag.dataSync() as Float64Array;
  for (let i = 0; i < r.length; i++) {
    const bound = u * Math.abs(r[i]!) + lambda * m[i]! + 1e-30;
    if (!(Math.abs(g[i]! - r[i]!) <= bound)) throw new Error(`${what}: element ${i} is ${g[i]}, float64 ${r[i]} (bound ${bound})`);
  }
}

interface Case {
  name: string;
  x: number[];
  w: number[];
  conv: (x: MgArray, w: MgArray) => MgArray;
  kernel: string;
}

const cases: Case[] = [
  { name: "conv2d, 32x32 tiles", x: [2, 6, 6, 16], w: [32, 3, 3, 16], conv: (x, w) => mg.conv2d(x, w, 1, 1), kernel: "mg_conv_gemm_{t}_bm32_bn32" },
  { name: "conv2d, 64x16 tiles", x: [2, 32, 32, 4], w: [16, 3, 3, 4], conv: (x, w) => mg.conv2d(x, w, 1, 1), kernel: "mg_conv_gemm_{t}_bm64_bn16" },
  { name: "conv1d, two groups", x: [2, 10, 32], w: [32, 3, 16], conv: (x, w) => mg.conv1d(x, w, { padding: 1, groups: 2 }), kernel: "mg_conv_gemm_{t}_bm32_bn16" },
  {
    name: "convGeneral: stride, both dilations, flip, negative and asymmetric padding",
    x: [1, 7, 6, 16],
    w: [16, 2, 3, 16],
    conv: (x, w) => mg.convGeneral(x, w, [2, 1], [[1, -1], [0, 2]], [1, 2], [2, 1], 1, true),
    kernel: "mg_conv_gemm_{t}_bm32_bn16",
  },
  { name: "conv3d", x: [1, 4, 4, 4, 8], w: [16, 2, 2, 2, 8], conv: (x, w) => mg.conv3d(x, w, 1, [1, 0, 1]), kernel: "mg_conv_gemm_{t}_bm32_bn16" },
  { name: "convTranspose2d", x: [1, 4, 4, 16], w: [24, 3, 3, 16], conv: (x, w) => mg.convTranspose2d(x, w, 2, 1, 1, 1), kernel: "mg_conv_gemm_{t}_bm32_bn32" },
  { name: "conv1d, long K: split-K", x: [1, 40, 64], w: [16, 20, 64], conv: (x, w) => mg.conv1d(x, w), kernel: "mg_conv_gemm_splitk_{t}_bm32_bn16" },
  { name: "conv1d, long K, 8 channels: split-K", x: [1, 40, 64], w: [8, 20, 64], conv: (x, w) => mg.conv1d(x, w, 1, 2), kernel: "mg_conv_gemm_splitk_{t}_bm32_bn16" },
  { name: "depthwise conv2d", x: [2, 5, 5, 6], w: [6, 3, 3, 1], conv: (x, w) => mg.conv2d(x, w, 2, 1, 1, 6), kernel: "mg_conv_direct_{t}" },
  { name: "narrow groups", x: [1, 9, 12], w: [8, 3, 3], conv: (x, w) => mg.conv1d(x, w, 1, 0, 2, 4), kernel: "mg_conv_direct_{t}" },
];

describe("Convolution on the GPU", () => {
  for (const dtype of [mg.float32, mg.float16, mg.bfloat16]) {
    const tag = dtype.name.replace("float", "f");
    for (const c of cases) {
      test(`${c.name} (${dtype.name})`, () => {
        const x = input(c.x, dtype, 3);
        const w = input(c.w, dtype, 4, -0.5, 0.5);
        let out: MgArray[] = [];
        const trace = mg.trace(() => (out = runOn(mg.gpu, () => c.conv(x, w))));
        expect(trace.map((r) => r.kernel)).toContain(c.kernel.replace("{t}", tag));
        const K = c.w.slice(1).reduce((a, b) => a * b, 1);
        expectConvClose(out[0]!, c.conv, x, w, K, c.name);
      });
    }
  }

  test("a strided view operand is copied first, and the trace says so", () => {
    const src = input([1, 8, 6, 16], mg.float32, 5);
    const x = cpu(() => mg.swapaxes(src, 1, 2));
    const w = input([16, 3, 3, 16], mg.float32, 6, -0.5, 0.5);
    const conv = (a: MgArray, b: MgArray) => mg.conv2d(a, b);
    let out: MgArray[] = [];
    const trace = mg.trace(() => (out = runOn(mg.gpu, () => conv(x, w))));
    expect(trace.flatMap((r) => r.notes).some((n) => n.startsWith("copy: conv input"))).toBe(true);
    expectConvClose(out[0]!, conv, x, w, 144, "view");
  });

  test("gradients on the GPU agree with the CPU's (implicit-GEMM and split-K sizes)", () => {
    for (const c of cases.filter((k) => !k.kernel.includes("direct"))) {
      const x = input(c.x, mg.float32, 7);
      const w = input(c.w, mg.float32, 8, -0.5, 0.5);
      const grads = (device: mg.Device) =>
        mg.stream(device, () => {
          const y = c.conv(x, w);
          const cot = mg.cos(mg.reshape(mg.arange(0, y.size, mg.float32), y.shape));
          const [, g] = mg.vjp((a: MgArray, b: MgArray) => c.conv(a, b), [x, w], [cot]);
          mg.eval(g);
          return g as MgArray[];
        });
      const onGpu = grads(mg.gpu);
      const onCpu = grads(mg.cpu);
      onGpu.forEach((g, i) => {
        const scale = mg.max(mg.abs(onCpu[i]!), null, false, { stream: mg.cpu }).item() as number;
        expect(mg.allclose(g, onCpu[i]!, 1e-4, 1e-5 * scale, { stream: mg.cpu }).item(), `${c.name} d${i === 0 ? "x" : "w"}`).toBe(true);
      });
    }
  });
});
