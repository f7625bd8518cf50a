// ts/core/ops/convolution.ts against MLX's numbers (test/fixtures/mlx-nn/conv.json: outputs and
// the gradients of sum(output · cotangent) for both operands), MLX's argument forms and errors.
import { expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { functionTests } from "../nn/function-cases.ts";

functionTests("conv_", "conv");

test("shapes: MLX's argument forms", () => {
  const x = mg.zeros([1, 5, 3]);
  const w = mg.zeros([4, 2, 3]);
  expect(mg.conv1d(x, w).shape).toEqual([1, 4, 4]);
  expect(mg.conv1d(x, w, 2, 1).shape).toEqual([1, 3, 4]);
  expect(mg.convGeneral(x, w, { padding: [[1], [2]] }).shape).toEqual([1, 7, 4]);
  expect(mg.convGeneral(x, w, 1, -1).shape).toEqual([1, 2, 4]);
  expect(mg.conv2d(mg.zeros([1, 5, 5, 3]), mg.zeros([4, 2, 2, 3]), 1, [1, 2]).shape).toEqual([1, 6, 8, 4]);
  expect(mg.convGeneral(mg.zeros([1, 5, 5, 3]), mg.zeros([4, 2, 2, 3]), 1, [[1, 0], [2, 3]]).shape).toEqual([1, 7, 7, 4]);
  expect(mg.convTranspose1d(x, w, { stride: 2, padding: 1, outputPadding: 1 }).shape).toEqual([1, 9, 4]);
  expect(mg.convTranspose3d(mg.zeros([1, 2, 2, 2, 3]), mg.zeros([4, 2, 2, 2, 3]), 2).shape).toEqual([1, 4, 4, 4, 4]);
  expect(mg.conv1d(mg.zeros([0, 5, 3]), w).shape).toEqual([0, 4, 4]);
  expect(mg.conv1d(x, mg.zeros([0, 2, 3])).shape).toEqual([1, 4, 0]);
  expect(mg.conv1d(mg.astype(x, mg.bfloat16), mg.astype(w, mg.float16)).dtype).toBe(mg.float32);
  expect(mg.convolve(mg.array([1, 2, 3], mg.float32), mg.array([0, 1, 0.5])).tolist()).toEqual([0, 1, 2.5, 4, 1.5]);
});

test("errors name the op and the mismatched dims", () => {
  const x = mg.zeros([1, 5, 3]);
  const w = mg.zeros([4, 2, 3]);
  expect(() => mg.conv1d(x, mg.zeros([4, 2, 2]))).toThrow(
    "[conv1d] Expect the input channels in the input and weight array to match but got shapes - input: (1,5,3) and weight: (4,2,2)",
  );
  expect(() => mg.conv1d(x, w, { groups: 2 })).toThrow("[conv1d] The input channels must be divisible by the number of groups. Got input with shape (1,5,3) and 2 groups.");
  expect(() => mg.conv1d(mg.zeros([1, 5, 4]), mg.zeros([3, 2, 2]), 1, 0, 1, 2)).toThrow(
    "[conv1d] If groups > 1, the output channels must be divisible by the number of groups. Got 3 output channels and 2 groups.",
  );
  expect(() => mg.conv1d(x, w, { groups: 0 })).toThrow("[conv1d] groups must be a positive integer, got 0.");
  expect(() => mg.conv2d(x, w)).toThrow("[conv2d] Invalid input array with 3 dimensions for 2D convolution.");
  expect(() => mg.conv1d(x, mg.zeros([4, 2]))).toThrow("[conv1d] Invalid weight array with 2 dimensions for 1D convolution. Expected an array with 3 dimensions following the format [C_out, ..., C_in].");
  expect(() => mg.convGeneral(x, w, [1, 1])).toThrow("[conv_general] Invalid strides (1,1) for 1D convolution.");
  expect(() => mg.conv1d(x, w, 0)).toThrow("[conv1d] Stride sizes must be positive. Got strides (0).");
  expect(() => mg.conv1d(x, w, { dilation: 0 })).toThrow("[conv1d] Kernel dilation sizes must be positive. Got kernel dilation (0).");
  expect(() => mg.convGeneral(x, w, { inputDilation: 0 })).toThrow("[conv_general] Input dilation sizes must be positive. Got input dilation (0).");
  expect(() => mg.conv1d(mg.zeros([1, 1, 3]), w)).toThrow(
    "[conv1d] Spatial dimensions of input after padding cannot be smaller than weight spatial dimensions. Got error at axis 1 for input with shape (1,1,3), padding low (0), padding high (0), and weight of shape (4,2,3).",
  );
  expect(() => mg.conv1d(mg.zeros([1, 5, 3], mg.int32), w)).toThrow("[conv1d] Invalid input array with type int32. Convolution currently only supports floating point types");
  expect(() => mg.convTranspose2d(mg.zeros([1, 3, 3, 2]), mg.zeros([4, 3, 3, 2]), 2, 0, 1, 0, 2)).toThrow(
    "[conv_transpose2d] Given groups=2 and weights of shape (4,3,3,2), expected to have 4 input channels but got 2 input channels instead.",
  );
  expect(() => mg.conv1d(x, w, { strides: 2 } as never)).toThrow("[conv1d] unknown option 'strides' (did you mean 'stride'?). Accepted options: 'stride', 'padding', 'dilation', 'groups', 'stream'.");
  expect(() => mg.convolve(mg.zeros([2, 2]), mg.zeros([2]))).toThrow("[convolve] Inputs must be 1D.");
  expect(() => mg.convolve(mg.zeros([3]), mg.zeros([2]), "bad" as never)).toThrow("[convolve] Invalid mode.");
  expect(() => mg.conv1d(mg.zeros([1, 5, 3], mg.float64), mg.zeros([4, 2, 3], mg.float64), { stream: mg.gpu })).toThrow("[conv1d] float64 is not supported on the GPU; run it on the CPU with { stream: mg.cpu } or cast with astype(mg.float32).");
});

test("a 1×1 convolution runs as a matrix product", () => {
  const trace = mg.trace(() => mg.conv2d(mg.ones([1, 3, 3, 4], mg.float32, { stream: mg.cpu }), mg.ones([2, 1, 1, 4], mg.float32, { stream: mg.cpu }), { stream: mg.cpu }));
  expect(trace.map((r) => r.primitives).flat()).toContain("Matmul");
  expect(trace.map((r) => r.primitives).flat()).not.toContain("Convolution");
});

test("vmap over the input, the weight, or both equals the stacked convolutions", () => {
  for (const device of [mg.cpu, mg.gpu]) {
    mg.stream(device, () => {
      mg.random.seed(11);
      const xs = mg.random.normal([3, 2, 6, 5, 4]);
      const ws = mg.random.normal([3, 6, 3, 2, 2]);
      const conv = (x: mg.MgArray, w: mg.MgArray) => mg.conv2d(x, w, 1, [1, 0], 1, 2);
      const expected = (bx: boolean, bw: boolean) =>
        mg.stack([0, 1, 2].map((i) => conv(bx ? xs.index(i) : xs.index(0), bw ? ws.index(i) : ws.index(0))));
      const close = (a: mg.MgArray, b: mg.MgArray) => expect(mg.allclose(a, b, 1e-4, 1e-5).item()).toBe(true);
      close(mg.vmap(conv, [0, null])(xs, ws.index(0)), expected(true, false));
      close(mg.vmap(conv, [null, 0])(xs.index(0), ws), expected(false, true));
      close(mg.vmap(conv)(xs, ws), expected(true, true));
      // A batch axis elsewhere than first.
      close(mg.vmap(conv, [2, 0])(mg.moveaxis(xs, 0, 2), ws), expected(true, true));
    });
  }
});
