// Elementwise kernels on the GPU device (the Metal simulator here) against the CPU device.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import type { Primitive } from "../../../ts/core/primitive.ts";
import { setForceLargeIndex } from "../../../ts/backend/gpu/encoder.ts";
import { inFlightBatchCount } from "../../../ts/backend/gpu/index.ts";
import { expectClose, expectDevicesAgree, GPU_FLOAT_DTYPES, GPU_INT_DTYPES, input, layouts, runOn } from "./harness.ts";

const UNARY_FLOAT: [string, (x: MgArray) => MgArray, [number, number]][] = [
  ["exp", mg.exp, [-3, 3]], ["expm1", mg.expm1, [-1, 1]], ["log", mg.log, [0.1, 5]], ["log2", mg.log2, [0.1, 5]],
  ["log10", mg.log10, [0.1, 5]], ["log1p", mg.log1p, [-0.5, 3]], ["sin", mg.sin, [-3, 3]], ["cos", mg.cos, [-3, 3]],
  ["tan", mg.tan, [-1, 1]], ["arcsin", mg.arcsin, [-0.9, 0.9]], ["arccos", mg.arccos, [-0.9, 0.9]], ["arctan", mg.arctan, [-3, 3]],
  ["sinh", mg.sinh, [-2, 2]], ["cosh", mg.cosh, [-2, 2]], ["tanh", mg.tanh, [-3, 3]], ["arcsinh", mg.arcsinh, [-3, 3]],
  ["arccosh", mg.arccosh, [1.1, 4]], ["arctanh", mg.arctanh, [-0.9, 0.9]], ["sqrt", mg.sqrt, [0, 4]], ["rsqrt", mg.rsqrt, [0.1, 4]],
  ["sigmoid", mg.sigmoid, [-6, 6]], ["erf", mg.erf, [-3, 3]], ["erfinv", mg.erfinv, [-0.95, 0.95]], ["abs", mg.abs, [-3, 3]],
  ["negative", mg.negative, [-3, 3]], ["sign", mg.sign, [-3, 3]], ["square", mg.square, [-3, 3]], ["floor", mg.floor, [-3, 3]],
  ["ceil", mg.ceil, [-3, 3]], ["round", (x) => mg.round(x), [-3, 3]],
];

describe("unary float ops, every float dtype and layout", () => {
  for (const [name, fn, [lo, hi]] of UNARY_FLOAT) {
    test(name, () => {
      for (const dtype of GPU_FLOAT_DTYPES) {
        const x = input([5, 7], dtype, 3, lo, hi);
        expectDevicesAgree(() => fn(x), `${name} ${dtype.name}`);
      }
      for (const [layout, x] of layouts([4, 6], mg.float32, 5)) {
        const clipped = mg.stream(mg.cpu, () => mg.clip(x, lo, hi));
        mg.eval(clipped);
        expectDevicesAgree(() => fn(clipped), `${name} ${layout}`);
      }
    });
  }
});

describe("binary ops", () => {
  const ops: [string, (a: MgArray, b: MgArray) => MgArray][] = [
    ["add", mg.add], ["subtract", mg.subtract], ["multiply", mg.multiply], ["maximum", mg.maximum], ["minimum", mg.minimum],
    ["equal", mg.equal], ["notEqual", mg.notEqual], ["less", mg.less], ["lessEqual", mg.lessEqual],
    ["greater", mg.greater], ["greaterEqual", mg.greaterEqual],
  ];
  for (const [name, fn] of ops) {
    test(`${name} on every dtype`, () => {
      for (const dtype of [...GPU_FLOAT_DTYPES, ...GPU_INT_DTYPES]) {
        const a = input([3, 5], dtype, 7);
        const b = input([3, 5], dtype, 8);
        expectDevicesAgree(() => fn(a, b), `${name} ${dtype.name}`);
      }
    });
  }
  test("scalar-vector, vector-scalar and strided variants", () => {
    const v = input([6, 4], mg.float32, 9);
    const s = input([1], mg.float32, 10);
    for (const [layout, x] of layouts([6, 4], mg.float32, 11)) {
      expectDevicesAgree(() => mg.add(x, v), `vv/${layout}`);
      expectDevicesAgree(() => mg.multiply(s, x), `sv/${layout}`);
      expectDevicesAgree(() => mg.subtract(x, s), `vs/${layout}`);
    }
  });
  test("divide, power, arctan2, logaddexp, remainder on floats", () => {
    for (const dtype of GPU_FLOAT_DTYPES) {
      const a = input([4, 9], dtype, 12, 0.5, 3);
      const b = input([4, 9], dtype, 13, 0.5, 3);
      expectDevicesAgree(() => [mg.divide(a, b), mg.power(a, b), mg.arctan2(a, b), mg.logaddexp(a, b), mg.remainder(mg.negative(a), b)], dtype.name);
    }
  });
  test("integer floor division, remainder and divmod match Python's floored semantics", () => {
    const a = mg.array([-7, 7, -7, 7, -1, 1, -5, 5, 6, -6], mg.int32);
    const b = mg.array([2, 2, -2, -2, 3, -3, 3, -3, 3, 3], mg.int32);
    const [q, r] = runOn(mg.gpu, () => mg.divmod(a, b));
    expect(q!.tolist()).toEqual([-4, 3, 3, -4, -1, -1, -2, -2, 2, -2]);
    expect(r!.tolist()).toEqual([1, 1, -1, -1, 2, -2, 1, -1, 0, 0]);
    expectDevicesAgree(() => [mg.floorDivide(a, b), mg.remainder(a, b)], "int32");
    const a64 = mg.astype(a, mg.int64);
    const b64 = mg.astype(b, mg.int64);
    expectDevicesAgree(() => [mg.floorDivide(a64, b64), mg.remainder(a64, b64)], "int64");
  });
  test("bitwise ops and shifts on integers", () => {
    for (const dtype of GPU_INT_DTYPES) {
      const a = input([10], dtype, 14, 0, 12);
      const b = mg.stream(mg.cpu, () => mg.astype(mg.array([0, 1, 2, 3, 1, 2, 3, 0, 1, 2]), dtype));
      expectDevicesAgree(() => [mg.bitwiseAnd(a, b), mg.bitwiseOr(a, b), mg.bitwiseXor(a, b), mg.leftShift(a, b), mg.rightShift(a, b), mg.bitwiseInvert(a)], dtype.name);
    }
  });
  test("complex arithmetic", () => {
    const a = mg.array([{ re: 1, im: 2 }, { re: -0.5, im: 3 }, { re: 2, im: -1 }]);
    const b = mg.array([{ re: 0.25, im: -1 }, { re: 2, im: 0.5 }, { re: -1, im: -1 }]);
    expectDevicesAgree(() => [mg.add(a, b), mg.multiply(a, b), mg.divide(a, b), mg.exp(a), mg.abs(a), mg.sqrt(a), mg.conjugate(a)], "complex64");
    expectDevicesAgree(() => [mg.subtract(a, b), mg.real(a), mg.imag(a), mg.equal(a, b), mg.negative(a)], "complex64 parts");
    // Strided: the real and imaginary parts of a transposed complex matrix.
    const m = mg.reshape(mg.array(Array.from({ length: 6 }, (_, i) => ({ re: i - 2, im: 0.5 * i }))), [2, 3]).T;
    expectDevicesAgree(() => [mg.real(m), mg.imag(m)], "complex64 transposed");
  });
  test("logical and, or, not on bool and on numbers (nonzero is true)", () => {
    const p = mg.array([true, true, false, false, true, false, true]);
    const q = mg.array([true, false, true, false, false, false, true]);
    const x = mg.array([0, 1.5, -2, 0, Number.NaN, 3, 0], mg.float32);
    const n = mg.array([0, 7, 0, -1, 2, 0, 5], mg.int32);
    expectDevicesAgree(() => [mg.logicalAnd(p, q), mg.logicalOr(p, q), mg.logicalNot(p)], "bool");
    expectDevicesAgree(() => [mg.logicalAnd(x, n), mg.logicalOr(x, n), mg.logicalNot(x), mg.logicalNot(n)], "float32/int32");
    const [and, or] = runOn(mg.gpu, () => [mg.logicalAnd(p, q), mg.logicalOr(x, n)]);
    expect(and!.tolist()).toEqual([true, false, false, false, false, false, true]);
    expect(or!.tolist()).toEqual([false, true, true, true, true, true, true]);
    for (const [layout, v] of layouts([4, 6], mg.float32, 21)) {
      expectDevicesAgree(() => mg.logicalAnd(mg.greater(v, 0), mg.less(v, 0.5)), `logicalAnd ${layout}`);
    }
  });
});

describe("ternary, casts and special values", () => {
  test("where on strided and broadcast inputs", () => {
    const c = mg.stream(mg.cpu, () => mg.greater(input([4, 6], mg.float32, 15), 0));
    for (const [layout, x] of layouts([4, 6], mg.float32, 16)) {
      expectDevicesAgree(() => mg.where(c, x, mg.negative(x)), layout);
    }
  });
  test("astype between dtypes", () => {
    const x = input([3, 4], mg.float32, 17, -100, 100);
    for (const to of [mg.int32, mg.uint8, mg.int64, mg.float16, mg.bfloat16, mg.bool_, mg.complex64]) {
      const src = to === mg.uint8 ? mg.stream(mg.cpu, () => mg.abs(x)) : x;
      expectDevicesAgree(() => mg.astype(src, to), to.name);
    }
  });
  test("NaN, infinities and signed zeros", () => {
    const x = mg.array([NaN, Infinity, -Infinity, 0, -0, 1e-40, 3.5e38], mg.float32);
    expectDevicesAgree(() => [mg.exp(mg.negative(x)), mg.maximum(x, 0), mg.minimum(x, 0), mg.isnan(x), mg.isinf(x), mg.sign(x)], "specials");
    const [m] = runOn(mg.gpu, () => mg.maximum(mg.array([NaN], mg.float32), 0));
    expect(Number.isNaN(m!.item() as number)).toBe(true);
  });
  test("zero-size and one-element arrays", () => {
    const e = mg.stream(mg.cpu, () => mg.zeros([0, 3]));
    const [r] = runOn(mg.gpu, () => mg.exp(e));
    expect(r!.shape).toEqual([0, 3]);
    const one = mg.array([2.5], mg.float32);
    expectDevicesAgree(() => mg.multiply(mg.exp(one), one), "one element");
  });
});

describe("64-bit index variants", () => {
  test("forced on small arrays, single, fused and copy kernels agree with the CPU", () => {
    const x = input([6, 5], mg.float32, 24);
    const y = input([5], mg.float32, 25);
    const c = mg.stream(mg.cpu, () => mg.greater(x, 0));
    const t = mg.stream(mg.cpu, () => mg.transpose(x));
    mg.eval(c, t);
    const ops = () => [mg.exp(x), mg.exp(t), mg.add(x, y), mg.multiply(t, 2), mg.where(c, x, y), mg.divmod(x, y)[1]!, mg.reshape(t, [30])];
    const previous = mg.setFusion(false);
    const previousLarge = setForceLargeIndex(true);
    try {
      const records = mg.trace(() => mg.stream(mg.gpu, ops)).filter((r) => r.device === "gpu");
      expect(records.length).toBe(7);
      expect(records.every((r) => r.layout.endsWith("large-index"))).toBe(true);
      expectDevicesAgree(ops, "large-index");
      mg.setFusion(true);
      const chain = () => mg.tanh(mg.add(mg.multiply(t, 2), mg.exp(t)));
      const [fused] = mg.trace(() => mg.stream(mg.gpu, chain)).filter((r) => r.device === "gpu");
      expect(fused!.layout).toBe("fused general, large-index"); // 30 elements: the general kernel
      expectDevicesAgree(chain, "fused large-index");
    } finally {
      setForceLargeIndex(previousLarge);
      mg.setFusion(previous);
    }
  });
});

describe("automatic fusion", () => {
  const chain = (x: MgArray, y: MgArray) => {
    let z = mg.add(x, y);
    for (let i = 0; i < 19; i++) {
      const k = i % 5;
      z = k === 0 ? mg.multiply(z, 1.01) : k === 1 ? mg.tanh(z) : k === 2 ? mg.add(z, y) : k === 3 ? mg.exp(mg.multiply(z, 0.1)) : mg.subtract(z, x);
    }
    return z;
  };
  test("a chain of 20 elementwise ops over broadcast inputs launches one kernel and equals the unfused result bit for bit", () => {
    for (const dtype of GPU_FLOAT_DTYPES) {
      const x = input([7, 13], dtype, 21, -1, 1);
      const y = input([13], dtype, 22, -1, 1);
      let fused: MgArray | undefined;
      const records = mg.trace(() => (fused = mg.stream(mg.gpu, () => chain(x, y))));
      const gpuRecords = records.filter((r) => r.device === "gpu");
      expect(gpuRecords.length).toBe(1);
      expect(gpuRecords[0]!.primitives.length).toBeGreaterThanOrEqual(20);
      const previous = mg.setFusion(false);
      let unfused: MgArray | undefined;
      try {
        const unfusedRecords = mg.trace(() => (unfused = mg.stream(mg.gpu, () => chain(x, y))));
        expect(unfusedRecords.filter((r) => r.device === "gpu").length).toBeGreaterThanOrEqual(20);
      } finally {
        mg.setFusion(previous);
      }
      const f = fused!.dataSync() as Float32Array;
      const u = unfused!.dataSync() as Float32Array;
      expect(Array.from(f).every((v, i) => Object.is(v, u[i]))).toBe(true);
      const [cpu] = runOn(mg.cpu, () => chain(x, y));
      expectClose(fused!, cpu!, { rtol: dtype === mg.float32 ? 1e-5 : dtype === mg.float16 ? 2e-2 : 1e-1, atol: dtype === mg.float32 ? 1e-5 : 5e-2 }, `chain ${dtype.name}`);
    }
  });
  test("small regions that differ only in their inputs' access share one general kernel; large ones are specialised", () => {
    // tanh(a * b + c) with b, c scalars, full arrays, or b a transposed view: one structure
    const region = (a: MgArray, b: MgArray, c: MgArray) => mg.tanh(mg.add(mg.multiply(a, b), c));
    const run = (shape: number[], variant: "scalars" | "arrays" | "transposed") => {
      const a = input(shape, mg.float32, 31, -1, 1);
      const b = variant === "scalars" ? mg.array(0.75, mg.float32) : variant === "arrays" ? input(shape, mg.float32, 32, -1, 1) : mg.transpose(input([...shape].reverse(), mg.float32, 33, -1, 1));
      const c = variant === "scalars" ? mg.array(-0.5, mg.float32) : input(shape, mg.float32, 34, -1, 1);
      mg.eval(b, c);
      let out: MgArray | undefined;
      const [record] = mg.trace(() => (out = mg.stream(mg.gpu, () => region(a, b, c)))).filter((r) => r.device === "gpu");
      expect(record!.primitives).toEqual(["Multiply", "Add", "Tanh"]);
      const [cpu] = runOn(mg.cpu, () => region(a, b, c));
      expect(Array.from(out!.dataSync() as Float32Array)).toEqual(Array.from(cpu!.dataSync() as Float32Array));
      return record!;
    };
    const small = (["scalars", "arrays", "transposed"] as const).map((v) => run([12, 20], v));
    expect(new Set(small.map((r) => r.kernel)).size).toBe(1);
    expect(small.map((r) => r.layout)).toEqual(["fused general", "fused general", "fused general"]);
    const large = (["scalars", "arrays", "transposed"] as const).map((v) => run([80, 70], v));
    expect(new Set(large.map((r) => r.kernel)).size).toBe(3);
    expect(large.map((r) => r.layout)).toEqual(["fused contiguous", "fused contiguous", "fused strided"]);
  });
  test("an intermediate someone else reads is written out; one nobody reads is recomputed on demand", () => {
    const x = input([5, 5], mg.float32, 23);
    const t = mg.stream(mg.gpu, () => mg.exp(x));
    const u = mg.stream(mg.gpu, () => mg.multiply(t, 2));
    const v = mg.stream(mg.gpu, () => mg.add(t, 1));
    mg.eval(u); // t is also read by v's pending node, so it must be materialised
    expect(t.evaluated).toBe(true);
    const w = mg.stream(mg.gpu, () => mg.sin(mg.cos(x)));
    const inner = (w as unknown as { node: { inputs: MgArray[] } }).node.inputs[0]!;
    mg.eval(w);
    expect(inner.evaluated).toBe(false);
    expectClose(inner, mg.stream(mg.cpu, () => mg.cos(x)));
    mg.eval(v);
  });
});

describe("GPU errors", () => {
  test("float64 on the GPU throws", () => {
    const x = mg.array([1, 2], mg.float64);
    expect(() => mg.stream(mg.gpu, () => mg.exp(x))).toThrow("float64 is not supported on the GPU");
  });

  test("the error names the op the user called, not the broadcast it builds first", () => {
    const x = mg.array([1, 2], mg.float64);
    expect(() => mg.add(x, 1, { stream: mg.gpu })).toThrow("[add] float64 is not supported on the GPU; run it on the CPU with { stream: mg.cpu } or cast with astype(mg.float32).");
    expect(() => mg.multiply(x, mg.ones([3, 2]), { stream: mg.gpu })).toThrow("[multiply] float64 is not supported on the GPU; run it on the CPU with { stream: mg.cpu } or cast with astype(mg.float32).");
  });
});

describe("a failed eval leaves no uncomputed data behind", () => {
  test("when encoding throws midway, earlier outputs of the batch are recomputed, not read as garbage", async () => {
    const { makeArray } = await import("../../../ts/core/graph.ts");
    const { registerGpu } = await import("../../../ts/backend/gpu/registry.ts");
    const failing: Primitive<null> = {
      name: "AlwaysFailsOnGpu",
      outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
    };
    registerGpu(failing, {
      kind: "kernel",
      encode() {
        throw new Error("[AlwaysFailsOnGpu] planted encode failure");
      },
    });
    const x = mg.array([1, 2, 3], mg.float32);
    const a = mg.exp(x, { stream: mg.gpu });
    const bad = makeArray(failing, [a], null, a.stream);
    expect(() => mg.eval(a, bad)).toThrow("planted encode failure");
    expect(a.evaluated).toBe(false);
    expect(a.tolist()).toEqual([1, 2, 3].map((v) => Math.fround(Math.exp(v))));
    expect(() => mg.eval(bad)).toThrow("planted encode failure");
  });
});

describe("pacing", () => {
  test("at most 10 batches run ahead of the host (MLX's MAX_ACTIVE_TASKS), and results stay right", () => {
    const x = mg.array(new Float32Array(1 << 18).fill(1));
    mg.eval(x);
    let y = x;
    let most = 0;
    for (let i = 0; i < 40; i++) {
      y = mg.add(y, 1, { stream: mg.gpu });
      mg.eval(y); // one batch per eval, never waited for here
      most = Math.max(most, inFlightBatchCount());
    }
    expect(most).toBeLessThanOrEqual(10);
    expect(most).toBeGreaterThan(0);
    expect((y.dataSync() as Float32Array)[12345]).toBe(41);
  });
});
