// mg.compile: a traced, shape-keyed cache of a function's graph (MLX's mx.compile semantics).
// Compiled results are compared with the uncompiled function bit for bit; a counter inside each
// function shows when it is traced (run) and when the recorded graph is replayed instead.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { mulberry32 } from "../../ts/testing/rng.ts";

setDefaultTimeout(120_000);

// Leave nothing behind for the next file: GPU work finished, and the arrays this file dropped
// collected now and the buffer cache emptied (the next file may measure exact active memory).
afterAll(() => {
  mg.synchronize();
  Bun.gc(true);
  mg.clearCache();
});

/** Seeded values in [-2, 2) as float32 data (cast to `dtype` on the CPU, so no default-device work). */
function rand(shape: number[], seed: number, dtype: mg.Dtype = mg.float32): MgArray {
  const next = mulberry32(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  const x = mg.array(Float32Array.from({ length: n }, () => 4 * next() - 2), mg.float32).reshape(shape);
  const out = dtype === mg.float32 ? x : mg.astype(x, dtype, { stream: mg.cpu });
  mg.eval(out);
  return out;
}

/** Bit-for-bit equality of values, shapes and dtypes (NaNs compare equal to NaNs). */
function expectIdentical(got: MgArray, want: MgArray, what = ""): void {
  expect(got.shape, `${what} shape`).toEqual(want.shape);
  expect(got.dtype, `${what} dtype`).toBe(want.dtype);
  const bytes = (a: MgArray) => {
    const v = a.dataSync();
    return Array.from(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
  };
  expect(bytes(got), what).toEqual(bytes(want));
}

/** A function with a bit of everything: elementwise chains, broadcasting, reductions, matmul. */
function model(x: MgArray, p: { w: MgArray; b: MgArray }) {
  const h = mg.tanh(mg.add(mg.matmul(x, p.w), p.b));
  const s = mg.softmax(h, -1);
  const m = mg.mean(mg.square(mg.subtract(h, mg.max(h, -1, true))), -1);
  return { out: [s, mg.exp(mg.multiply(m, 0.5))], total: mg.sum(s), name: "model" };
}

describe("compile", () => {
  test("compiled equals uncompiled bit for bit on the CPU; outputs keep their tree", () => {
    let calls = 0;
    const f = (x: MgArray, p: { w: MgArray; b: MgArray }) => {
      calls++;
      return model(x, p);
    };
    const cf = mg.compile(f);
    const p = { w: rand([5, 4], 2), b: rand([4], 3) };
    mg.stream(mg.cpu, () => {
      for (const seed of [1, 10, 20]) {
        const x = rand([3, 5], seed);
        const got = cf(x, p);
        const want = model(x, p);
        expect(got.name).toBe("model");
        expect(Array.isArray(got.out)).toBe(true);
        expectIdentical(got.out[0]!, want.out[0]!, "softmax");
        expectIdentical(got.out[1]!, want.out[1]!, "exp(mean)");
        expectIdentical(got.total, want.total, "sum");
      }
    });
    // Traced once: the later calls replayed the recorded graph without running f.
    expect(calls).toBe(1);
  });

  test("fn runs once per (structure, shapes, dtypes, constants); anything new traces again", () => {
    let calls = 0;
    const f = (x: MgArray, scale: number) => {
      calls++;
      return mg.multiply(mg.exp(x), scale);
    };
    const cf = mg.compile(f);
    const check = (x: MgArray, scale: number) => expectIdentical(cf(x, scale), f(x, scale));
    mg.stream(mg.cpu, () => {
      const before = () => calls;
      check(rand([2, 3], 1), 2); // traces (+1) and the reference call (+1)
      expect(before()).toBe(2);
      check(rand([2, 3], 2), 2); // replay; only the reference runs
      expect(calls).toBe(3);
      check(rand([4, 3], 3), 2); // new shape: traced again
      expect(calls).toBe(5);
      check(rand([2, 3], 4, mg.float16), 2); // new dtype
      expect(calls).toBe(7);
      check(rand([2, 3], 5), 3); // a non-array argument is part of the key
      expect(calls).toBe(9);
      check(rand([2, 3], 6), 2); // every earlier entry is still cached
      check(rand([4, 3], 7), 2);
      expect(calls).toBe(11);
    });
  });

  test("the default stream is part of the key: the same function on both devices", () => {
    let calls = 0;
    const cf = mg.compile((x: MgArray) => {
      calls++;
      return mg.sigmoid(mg.multiply(x, 3));
    });
    const x = rand([8], 1);
    const onCpu = mg.stream(mg.cpu, () => cf(x));
    const onGpu = mg.stream(mg.gpu, () => cf(x));
    expect(calls).toBe(2);
    expect(onCpu.stream.device.type).toBe("cpu");
    expect(onGpu.stream.device.type).toBe("gpu");
    const want = mg.stream(mg.gpu, () => mg.sigmoid(mg.multiply(x, 3)));
    expectIdentical(onGpu, want, "gpu");
  });

  test("elementwise chains in a compiled graph fuse as in any eval (one kernel, identical bits)", () => {
    const chain = (x: MgArray, y: MgArray) => {
      let z = mg.add(x, y);
      for (let i = 0; i < 10; i++) z = i % 2 === 0 ? mg.sin(mg.multiply(z, 1.5)) : mg.add(mg.exp(mg.negative(z)), y);
      return z;
    };
    const cf = mg.compile(chain);
    const x = rand([16, 32], 1);
    const y = rand([32], 2);
    mg.eval(x, y);
    mg.stream(mg.gpu, () => {
      let compiled: MgArray | undefined;
      let plain: MgArray | undefined;
      const a = mg.trace(() => (compiled = cf(x, y))).filter((r) => r.device === "gpu");
      const b = mg.trace(() => (plain = chain(x, y))).filter((r) => r.device === "gpu");
      expect(a).toHaveLength(1);
      expect(a[0]!.kernel).toBe(b[0]!.kernel);
      expect(a[0]!.primitives).toEqual(b[0]!.primitives);
      expect(a[0]!.primitives.length).toBeGreaterThan(15);
      expectIdentical(compiled!, plain!, "fused chain");
    });
  });

  test("compile of grad, grad of compile, valueAndGrad trees and vmap of compile", () => {
    const loss = (w: MgArray, x: MgArray) => mg.sum(mg.square(mg.tanh(mg.matmul(x, w))));
    const w = rand([4, 3], 1);
    const x = rand([5, 4], 2);
    mg.stream(mg.cpu, () => {
      let calls = 0;
      const g = mg.compile((a: MgArray, b: MgArray) => {
        calls++;
        return mg.grad(loss)(a, b);
      });
      expectIdentical(g(w, x), mg.grad(loss)(w, x), "compile(grad)");
      const x2 = rand([5, 4], 3);
      expectIdentical(g(w, x2), mg.grad(loss)(w, x2), "compile(grad), replayed");
      expect(calls).toBe(1);

      const cl = mg.compile(loss);
      expectIdentical(mg.grad(cl)(w, x), mg.grad(loss)(w, x), "grad(compile)");

      const vg = mg.compile(mg.valueAndGrad((p: { w: MgArray }, b: MgArray) => mg.sum(mg.multiply(p.w, b))));
      const [value, grads] = vg({ w: rand([3], 4) }, rand([3], 5)) as [MgArray, { w: MgArray }];
      expect(value.shape).toEqual([]);
      expect(Object.keys(grads)).toEqual(["w"]);
      expectIdentical(grads.w, rand([3], 5), "valueAndGrad tree");

      const rows = mg.vmap(mg.compile((r: MgArray) => mg.sum(mg.exp(r))))(x);
      expectIdentical(rows, mg.sum(mg.exp(x), -1), "vmap(compile)");
    });
  });

  test("a compiled function that launches a custom Metal kernel replays it", () => {
    const square = mg.fast.metalKernel({ name: "sq", inputNames: ["inp"], outputNames: ["out"], source: "uint i = thread_position_in_grid.x; out[i] = inp[i] * inp[i];" });
    let calls = 0;
    const f = (x: MgArray) => {
      calls++;
      const [y] = square({ inputs: [mg.add(x, 1)], grid: [x.size, 1, 1], threadgroup: [64, 1, 1], outputShapes: [x.shape], outputDtypes: [x.dtype] });
      return mg.sum(y!);
    };
    const cf = mg.compile(f);
    for (const seed of [1, 2, 3]) {
      const x = rand([100], seed);
      expectIdentical(cf(x), f(x), `seed ${seed}`);
    }
    expect(calls).toBe(4); // one trace, three reference calls
  });

  test("captured arrays are constants (MLX's semantics), and a disposed one is an error", () => {
    let w = mg.array([1, 2, 3], mg.float32);
    const cf = mg.compile((x: MgArray) => mg.multiply(x, w));
    const x = mg.array([1, 1, 1], mg.float32);
    expect(cf(x).tolist()).toEqual([1, 2, 3]);
    const first = w;
    w = mg.array([10, 20, 30], mg.float32);
    expect(cf(x).tolist()).toEqual([1, 2, 3]); // still the traced w
    first.dispose();
    expect(() => cf(x)).toThrow(/\[compile\] the function captured array #\d+ \(3,\) float32, which was disposed since it was traced/);
  });

  test("constants created while tracing survive the tidy scope of the first call", () => {
    const cf = mg.compile((x: MgArray) => mg.add(mg.multiply(x, mg.array([2, 3], mg.float32)), mg.ones([2])));
    const first = mg.tidy(() => cf(mg.array([1, 1], mg.float32)));
    expect(first.tolist()).toEqual([3, 4]);
    expect(cf(mg.array([2, 2], mg.float32)).tolist()).toEqual([5, 7]);
  });

  test("random numbers drawn inside a compiled function are fixed at trace time (and said so)", () => {
    const cf = mg.compile(function noisy(x: MgArray) {
      return mg.add(x, mg.random.normal([4]));
    });
    const x = mg.zeros([4]);
    let a: number[] = [];
    const original = process.stderr.write.bind(process.stderr);
    let printed = "";
    process.stderr.write = ((chunk: string | Uint8Array) => {
      printed += String(chunk);
      return true;
    }) as typeof process.stderr.write;
    try {
      a = cf(x).tolist() as number[];
    } finally {
      process.stderr.write = original;
    }
    expect(cf(x).tolist()).toEqual(a);
    expect(printed).toContain("[compile] 'noisy' draws random numbers from a key fixed when it was traced");
    // MLX 0.32.4 does the same: mx.compile(lambda: mx.random.uniform(0, 1, (2,))) returns one draw on every call
    expect(printed).toContain("as with MLX's mx.compile");
    expect(printed).toContain("take a key as an argument");
    // With the key as an argument, each call draws new numbers.
    const keyed = mg.compile((k: MgArray, y: MgArray) => mg.add(y, mg.random.normal([4], { key: k })));
    expect(keyed(mg.random.key(1), x).tolist()).not.toEqual(keyed(mg.random.key(2), x).tolist());
  });

  test("errors: eval inside, uncaptured inputs, bad arguments", () => {
    const reads = mg.compile((x: MgArray) => mg.multiply(x, mg.sum(x).item() as number));
    expect(() => reads(mg.ones([3]))).toThrow(/\[compile\] Attempting to eval an array during function transformations like compile or vmap is not allowed/);
    expect(() => mg.stream(mg.gpu, () => reads(mg.ones([3])))).toThrow(/\[compile\] Attempting to eval an array/);
    const x = mg.ones([3]);
    const closes = mg.compile((_y: MgArray) => mg.exp(x));
    expect(() => closes(x)).toThrow(/\[compile\] Attempting to compile a function with uncaptured inputs is not allowed/);
    expect(() => mg.compile(3 as unknown as () => void)).toThrow("[compile] fun must be a function.");
    expect(() => mg.compile((a: MgArray) => a, { shapeless: "yes" as unknown as boolean })).toThrow(/shapeless must be a boolean/);
  });

  test("disableCompile / enableCompile", () => {
    let calls = 0;
    const cf = mg.compile((x: MgArray) => {
      calls++;
      return mg.abs(x);
    });
    mg.disableCompile();
    try {
      cf(mg.ones([2]));
      cf(mg.ones([2]));
      expect(calls).toBe(2);
    } finally {
      mg.enableCompile();
    }
    cf(mg.ones([2]));
    cf(mg.ones([2]));
    expect(calls).toBe(3);
  });
});

describe("compile with shapeless: true", () => {
  test("new shapes of the same rank replay without tracing, broadcasting re-inferred", () => {
    let calls = 0;
    const f = (x: MgArray, y: MgArray) => {
      calls++;
      const z = mg.add(mg.multiply(x, 2), y); // y broadcast against x
      return [mg.exp(mg.negative(mg.abs(z))), mg.sum(z, -1), mg.softmax(z, -1)];
    };
    const cf = mg.compile(f, { shapeless: true });
    mg.stream(mg.cpu, () => {
      for (const [rows, cols, seed] of [[2, 3, 1], [5, 3, 2], [1, 7, 3], [4, 1, 4]]) {
        const x = rand([rows!, cols!], seed!);
        const y = rand([cols!], seed! + 10);
        const got = cf(x, y);
        const want = f(x, y);
        want.forEach((w, i) => expectIdentical(got[i]!, w, `${rows}x${cols}[${i}]`));
      }
      // 1 trace + 4 reference calls.
      expect(calls).toBe(5);
      // Another rank traces again.
      cf(rand([2, 2, 3], 5), rand([3], 6));
      expect(calls).toBe(6);
    });
  });

  test("graphs whose shapes are fixed at trace time are refused at the first call", () => {
    const x = rand([2, 6], 1);
    expect(() => mg.compile((a: MgArray) => mg.reshape(a, [3, 4]), { shapeless: true })(x)).toThrow(
      /\[compile\] shapeless compilation of the function is not supported: its graph has a Reshape node/,
    );
    expect(() => mg.compile((a: MgArray) => a.index("0:1"), { shapeless: true })(x)).toThrow(/has a Slice node/);
    // mean divides by a 1/N computed from the traced shape: it would be silently wrong.
    expect(() => mg.compile(function meanRows(a: MgArray) { return mg.mean(a, -1); }, { shapeless: true })(x)).toThrow(
      /\[compile\] shapeless compilation of 'meanRows' is not supported: it creates the constant array #\d+ \(\) float32 while tracing/,
    );
    // Without shapeless each shape is traced, so mean is right for every shape.
    const m = mg.compile((a: MgArray) => mg.mean(a, -1));
    expect(m(mg.array([[1, 2, 3]], mg.float32)).tolist()).toEqual([2]);
    expect(m(mg.array([[1, 2, 3, 6]], mg.float32)).tolist()).toEqual([3]);
  });

  test("a replay whose operands no longer broadcast is an error, not garbage", () => {
    const cf = mg.compile((x: MgArray, y: MgArray) => mg.add(x, y), { shapeless: true });
    expect(cf(rand([2, 3], 1), rand([2, 3], 2)).shape).toEqual([2, 3]);
    expect(() => cf(rand([2, 3], 1), rand([2, 4], 2))).toThrow(/\[compile\] shapeless replay of the function: Add gets inputs of shapes \(2,3\), \(2,4\)/);
  });
});
