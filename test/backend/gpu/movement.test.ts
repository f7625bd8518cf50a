// Data movement and creation on the GPU device (the Metal simulator here) against the CPU
// device: pad (every mode), concatenate of mixed layouts, view (layout or copy), contiguous,
// arange (exact integral path and float-float). Integers and bool exact; floats within the
// tolerances of ts/testing/tolerances.ts.
import { afterEach, describe, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import { setForceLargeIndex } from "../../../ts/backend/gpu/encoder.ts";
import { expectDevicesAgree, GPU_DTYPES, input, layouts, runOn } from "./harness.ts";

function onCpu(fn: () => MgArray): MgArray {
  const r = mg.stream(mg.cpu, fn);
  mg.eval(r);
  return r;
}

const gpuRecords = (fn: () => MgArray) => mg.trace(() => mg.stream(mg.gpu, fn)).filter((r) => r.device === "gpu");

afterEach(() => setForceLargeIndex(false));

describe("pad", () => {
  test("constant padding on every dtype, with a value", () => {
    const xs = GPU_DTYPES.map((d) => input([5, 7], d, 1));
    expectDevicesAgree(() => xs.flatMap((x) => [mg.pad(x, 2), mg.pad(x, [[1, 0], [3, 2]], "constant", 1)]), "dtypes");
  });

  test("every mode on every layout", () => {
    for (const [layout, x] of layouts([6, 9], mg.float32, 2)) {
      expectDevicesAgree(
        () => [mg.pad(x, [[2, 1], [0, 3]]), mg.pad(x, 3, "edge"), mg.pad(x, [[2, 4], [5, 1]], "reflect"), mg.pad(x, [[7, 0], [1, 10]], "symmetric")],
        layout,
      );
    }
    const [p] = runOn(mg.gpu, () => mg.pad(mg.array([1, 2, 3], mg.int32), [2, 3], "reflect"));
    expect(p!.tolist()).toEqual([3, 2, 1, 2, 3, 2, 1, 2]);
  });

  test("zero-size interior, one element, large pads", () => {
    const empty = onCpu(() => mg.zeros([0, 3], mg.int16));
    expectDevicesAgree(() => [mg.pad(empty, [[2, 1], [0, 0]], "constant", 5), mg.pad(mg.array([7], mg.uint8), 300, "constant", 1), mg.pad(mg.array([[2.5]], mg.bfloat16), [[1, 1], [0, 257]])], "edges");
    const records = gpuRecords(() => mg.pad(empty, [[2, 1], [0, 0]], "constant", 5));
    expect(records.map((r) => r.kernel)).toEqual(["mg_pad_b16_u32"]);
  });
});

describe("concatenate", () => {
  test("mixed layouts along every axis, with empty pieces", () => {
    const ls = layouts([4, 6], mg.int32, 3).map(([, x]) => x);
    const empty = onCpu(() => mg.zeros([4, 0], mg.int32));
    expectDevicesAgree(() => [mg.concatenate(ls, 0), mg.concatenate([...ls, empty], 1), mg.concatenate([ls[1]!, ls[3]!], -1), mg.concatenate(ls, null)], "2-D");
    const cube = input([3, 2, 5], mg.float16, 4);
    const cubeT = onCpu(() => mg.transpose(input([5, 2, 3], mg.float16, 5), [2, 1, 0]));
    expectDevicesAgree(() => [0, 1, 2].map((ax) => mg.concatenate([cube, cubeT, cube], ax)), "3-D");
    const records = gpuRecords(() => mg.concatenate([ls[0]!, ls[1]!], 1));
    expect(records.map((r) => r.kernel)).toEqual(["mg_copy_strided_b32_u32", "mg_copy_strided_b32_u32"]);
    expect(records.every((r) => r.notes.length === 0)).toBe(true);
  });

  test("every dtype, many pieces, one-element pieces", () => {
    const parts = GPU_DTYPES.map((d) => [input([3, 1], d, 6), input([3, 4], d, 7), input([3, 2], d, 8)]);
    expectDevicesAgree(() => parts.map((p) => mg.concatenate([...p, ...p, ...p], 1)), "dtypes");
    expectDevicesAgree(() => mg.concatenate([mg.array([1.5], mg.float32), mg.array([2.5], mg.float32)]), "one element");
  });
});

describe("view and contiguous", () => {
  test("view is a layout where the bytes allow it, else a noted copy", () => {
    const x = input([4, 6], mg.float32, 9);
    const t = onCpu(() => mg.transpose(x));
    const i8 = input([3, 9], mg.int8, 10);
    const cases: [string, () => MgArray, number][] = [
      ["same item size, transposed", () => mg.view(t, mg.int32), 0],
      ["to a smaller item, contiguous", () => mg.view(x, mg.uint8), 0],
      ["to a larger item, contiguous", () => mg.view(mg.view(x, mg.uint16), mg.complex64), 0],
      ["to a smaller item, transposed", () => mg.view(t, mg.bfloat16), 1],
      ["misaligned offset", () => mg.view(i8.index(":", "1:"), mg.int16), 1],
    ];
    for (const [what, fn, copies] of cases) {
      expectDevicesAgree(fn, what, () => ({ rtol: 0, atol: 0 }));
      const records = gpuRecords(fn);
      expect(records.length, what).toBe(copies);
      if (copies) expect(records[0]!.notes[0], what).toContain("needs its bytes row-contiguous");
    }
  });

  test("contiguous copies only when the layout is not dense", () => {
    for (const [layout, x] of layouts([5, 8], mg.uint16, 11)) {
      expectDevicesAgree(() => [mg.contiguous(x), mg.contiguous(x, true)], layout);
    }
    const x = input([5, 8], mg.complex64, 12);
    expect(gpuRecords(() => mg.contiguous(x)).length).toBe(0);
    expect(gpuRecords(() => mg.contiguous(mg.transpose(x), true)).length).toBe(0);
    expect(gpuRecords(() => mg.contiguous(mg.transpose(x))).map((r) => r.kernel)).toEqual(["mg_copy_strided_b64_u32"]);
  });
});

describe("arange", () => {
  test("integer dtypes are exact, wrapping like the CPU", () => {
    expectDevicesAgree(
      () => [
        mg.arange(1000),
        mg.arange(-7, 500, 3, mg.int64),
        mg.arange(250, 270, 1, mg.uint8),
        mg.arange(100, -100, -7, mg.int8),
        mg.arange(0, 70000, 1, mg.int16),
        mg.arange(2 ** 33, 2 ** 33 + 1000, 997, mg.int64),
        mg.arange(0, 10, 2, mg.uint64),
        mg.arange(0.5, 7.3, 0.7, mg.int32),
        mg.arange(-3.25, 3, 0.5, mg.int16),
        // Just below (above) whole numbers: the float-float pair's low part decides the truncation.
        mg.arange(3 - 2 ** -30, 20, 1, mg.int32),
        mg.arange(-3 + 2 ** -30, -20, -1, mg.int32),
      ],
      "integers",
    );
    const [a] = runOn(mg.gpu, () => mg.arange(250, 260, 1, mg.uint8));
    expect(a!.tolist()).toEqual([250, 251, 252, 253, 254, 255, 0, 1, 2, 3]);
  });

  test("float dtypes, integral and fractional steps", () => {
    expectDevicesAgree(
      () => [
        mg.arange(0, 1, 0.1),
        mg.arange(-2.5, 9.75, 0.125, mg.float16),
        mg.arange(0, 100000, 1.001, mg.float32),
        mg.arange(1e7, 1e7 + 300, 1, mg.float32),
        mg.arange(3, -40, -0.37, mg.bfloat16),
        mg.arange(0, 5, 1, mg.complex64),
        mg.arange(1, 2, 1e-5, mg.float32),
      ],
      "floats",
    );
    const records = gpuRecords(() => mg.arange(0, 1, 0.1));
    expect(records[0]!.kernel).toBe("mg_arange_f32");
    expect(records[0]!.precision).toContain("float-float");
    expect(gpuRecords(() => mg.arange(10, mg.float32))[0]!.precision).toContain("exact int64");
  });

  test("zero and one element", () => {
    const [e] = runOn(mg.gpu, () => mg.arange(0));
    expect(e!.shape).toEqual([0]);
    expectDevicesAgree(() => [mg.arange(5, 6), mg.arange(0.25, 0.3, 1, mg.float16)], "one");
  });
});

test("the 64-bit-index variants of pad, concatenate, contiguous and view agree", () => {
  setForceLargeIndex(true);
  const x = input([5, 6], mg.int32, 13);
  const t = onCpu(() => mg.transpose(x));
  expectDevicesAgree(() => [mg.pad(t, [[1, 2], [3, 0]], "constant", 9), mg.concatenate([x, t.index(":5", ":")], 1), mg.contiguous(t), mg.view(t, mg.uint8)], "large-index");
  expect(gpuRecords(() => mg.contiguous(t))[0]!.kernel).toBe("mg_copy_strided_b32_i64");
});
