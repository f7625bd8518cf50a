// mg.fast.metalKernel: the guide's worked examples (§8.1 myexp, §9.1 strided exp, §8.3 rownorm,
// §8.2 grid_sample, §9.4 its backward), the generated source (§7.3), MLX's own test_fast cases,
// errors, caching, checked mode, and issue 6's acceptance: grid_sample as a custom function whose
// forward and backward passes are Metal kernels, gradchecked on the gpu stream against float64.
// Every reference is computed independently here, in float64 TypeScript. The guide's kernel bodies
// are read from test/fixtures/guide-kernels (the C++ simulator harness reads the same files).
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { gpuLacks } from "../backend/gpu/harness.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { mulberry32 } from "../../ts/testing/rng.ts";
import { guideKernel } from "../fixtures/guide-kernels.ts";
import {
  type Dims, GRID_SAMPLE_SAFE_SOURCE, GRID_SAMPLE_SOURCE, GRID_SAMPLE_VJP_FIXED_SOURCE, GRID_SAMPLE_VJP_SOURCE,
  gridSampleReference, gridSampleVjpReference,
} from "./grid-sample.ts";

// Each new kernel is a compiler run on the simulator: cold, a test can exceed bun's default 5 s
// (bunfig.toml's `timeout` does not apply here).
setDefaultTimeout(120_000);

// Helpers ---------------------------------------------------------------------------------------

function normals(n: number, seed: number): Float64Array {
  const next = mulberry32(seed);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
  return out;
}

function uniforms(n: number, seed: number, lo: number, hi: number): Float64Array {
  const next = mulberry32(seed);
  return Float64Array.from({ length: n }, () => lo + (hi - lo) * next());
}

const size = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** A float32 array (values rounded to float32 once). */
function f32(values: ArrayLike<number>, shape: readonly number[]): MgArray {
  return mg.array(Float32Array.from(values), mg.float32).reshape([...shape]);
}

/** Values as float64 (reads wait for the GPU). */
function values(a: MgArray): Float64Array {
  return Float64Array.from(a.dataSync() as ArrayLike<number>);
}

/** Asserts |got − ref| ≤ atol + rtol·|ref| everywhere, naming the worst element. */
function expectNear(got: ArrayLike<number>, ref: ArrayLike<number>, atol: number, rtol: number, what: string): void {
  expect(got.length, `${what}: length`).toBe(ref.length);
  let worst = -1;
  let excess = 0;
  for (let i = 0; i < ref.length; i++) {
    const e = Math.abs(got[i]! - ref[i]!) - (atol + rtol * Math.abs(ref[i]!));
    if (!(e <= excess)) {
      excess = Number.isNaN(e) ? Infinity : e;
      worst = i;
    }
  }
  if (worst >= 0) throw new Error(`${what}: element ${worst} is ${got[worst]} but the reference is ${ref[worst]} (atol ${atol}, rtol ${rtol})`);
}

/** Runs fn and returns what it printed to stdout. */
function captureStdout(fn: () => void): string {
  const original = process.stdout.write.bind(process.stdout);
  let text = "";
  process.stdout.write = ((chunk: string | Uint8Array) => {
    text += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
    return true;
  }) as typeof process.stdout.write;
  try {
    fn();
  } finally {
    process.stdout.write = original;
  }
  return text;
}

/** Checked mode is the simulator's: a GPU runs the same kernels unchecked. */
const ON_SIMULATOR = mg.deviceInfo().is_simulator === true;

const squash = (s: string) => s.replace(/\s+/g, " ").trim();

/** The GPU dispatches of what fn evaluates (lazy CPU inputs add cpu records). */
function gpuTrace(fn: () => unknown): mg.TraceRecord[] {
  return mg.trace(fn).filter((r) => r.device === "gpu");
}

// Leave nothing behind for the next file: GPU work finished, and the arrays this file dropped
// collected now and the buffer cache emptied (the next file may measure exact active memory).
afterAll(() => {
  mg.synchronize();
  Bun.gc(true);
  mg.clearCache();
});

// §8.1 ----------------------------------------------------------------------------------------

const MYEXP_SOURCE = guideKernel("myexp");
const myexp = mg.fast.metalKernel({ name: "myexp", inputNames: ["inp"], outputNames: ["out"], source: MYEXP_SOURCE });

function expElementwise(a: MgArray, opts: { verbose?: boolean } = {}): MgArray {
  const [out] = myexp({
    inputs: [a],
    template: [["T", mg.float32]],
    grid: [a.size, 1, 1],
    threadgroup: [256, 1, 1],
    outputShapes: [a.shape],
    outputDtypes: [a.dtype],
    ...opts,
  });
  return out!;
}

describe("§8.1 myexp", () => {
  test("float32 storage, 1000 elements (the last threadgroup is partial)", () => {
    const x = Float32Array.from(normals(1000, 1));
    const got = values(expElementwise(f32(x, [10, 100])));
    const ref = Array.from(x, (v) => Math.exp(v));
    expectNear(got, ref, 0, 4 * 2 ** -23, "myexp float32");
  });

  test("float16 storage computed in float (T = float), as the guide's (4, 16) example", () => {
    const a = mg.astype(f32(normals(64, 2), [4, 16]), mg.float16);
    const x = values(a);
    const b = expElementwise(a);
    expect(b.dtype).toBe(mg.float16);
    // exp in float, rounded once to half: within half an ulp of half (plus float's own error).
    expectNear(values(b), Array.from(x, (v) => Math.exp(v)), 0, 2 ** -11 + 2 ** -20, "myexp float16");
    // …and as mx.allclose(b, mx.exp(a)) in the guide: against metalgrad's own exp on the CPU.
    expectNear(values(b), values(mg.exp(a, { stream: mg.cpu })), 0, 2 ** -10, "myexp vs mg.exp");
  });

  test("verbose prints the §7.3 generated source", () => {
    const a = mg.astype(f32(normals(64, 3), [4, 16]), mg.float16);
    let b: MgArray | undefined;
    const printed = captureStdout(() => {
      b = expElementwise(a, { verbose: true });
    });
    expect(printed.startsWith("Generated source code for `myexp`:\n```\n")).toBe(true);
    const body = printed.slice(printed.indexOf("```\n") + 4, printed.lastIndexOf("```"));
    // The guide's listing, verbatim (whitespace aside).
    const guide = `
template <typename T>
[[kernel]] void custom_kernel_myexp_float_float16_t_float16_t(
        const device float16_t* inp [[buffer(0)]],
        device float16_t* out [[buffer(1)]],
        uint3 thread_position_in_grid [[thread_position_in_grid]]) {

        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::exp(tmp);

}

template [[host_name("custom_kernel_myexp_float_float16_t_float16_t")]] [[kernel]]
decltype(custom_kernel_myexp_float_float16_t_float16_t<float>)
custom_kernel_myexp_float_float16_t_float16_t<float>;`;
    expect(squash(body)).toBe(squash(guide));
    expectNear(values(b!), values(mg.exp(a, { stream: mg.cpu })), 0, 2 ** -10, "verbose run");
  });

  test("the trace names the kernel, its grid and threadgroup", () => {
    const a = f32(normals(300, 4), [300]);
    const records = mg.trace(() => expElementwise(a));
    expect(records).toHaveLength(1);
    const r = records[0]!;
    expect(r.kernel).toBe("custom_kernel_myexp_float_float_float");
    expect(r.primitives).toEqual(["CustomKernel"]);
    expect(r.grid).toEqual([300, 1, 1]);
    expect(r.threadgroup).toEqual([256, 1, 1]);
    expect(r.precision).toContain("math mode safe");
    expect(r.notes).toEqual([]);
    // A grid smaller than the threadgroup: the threadgroup is clamped to it (as MLX), and said so.
    const small = mg.trace(() => expElementwise(f32([1, 2, 3], [3])))[0]!;
    expect(small.threadgroup).toEqual([3, 1, 1]);
    expect(small.notes.join()).toContain("clamped to the grid");
  });
});

// §9.1 ----------------------------------------------------------------------------------------

const STRIDED_SOURCE = guideKernel("myexp_strided");
const myexpStrided = mg.fast.metalKernel({
  name: "myexp_strided",
  inputNames: ["inp"],
  outputNames: ["out"],
  source: STRIDED_SOURCE,
  ensureRowContiguous: false,
});
// The same body indexing with the raw linear index.
const myexpLinearNoCopy = mg.fast.metalKernel({
  name: "myexp_linear",
  inputNames: ["inp"],
  outputNames: ["out"],
  source: MYEXP_SOURCE,
  ensureRowContiguous: false,
});

function launch(kernel: mg.fast.MetalKernel, a: MgArray): MgArray {
  return kernel({
    inputs: [a],
    template: [["T", mg.float32]],
    grid: [a.size, 1, 1],
    threadgroup: [256, 1, 1],
    outputShapes: [a.shape],
    outputDtypes: [a.dtype],
  })[0]!;
}

describe("§9.1 strided inputs", () => {
  const base = mg.astype(f32(normals(64, 5), [4, 16]), mg.float16);
  mg.eval(base);
  const all = values(base);
  const sliced = base.index("::2"); // rows 0 and 2: not contiguous
  const slicedRef = [...all.slice(0, 16), ...all.slice(32, 48)].map((v) => Math.exp(v));

  test("ensureRowContiguous: false with elem_to_loc reads a sliced input in place (no copy)", () => {
    let out: MgArray | undefined;
    const records = gpuTrace(() => (out = launch(myexpStrided, sliced)));
    expect(records).toHaveLength(1);
    expect(records[0]!.notes.join()).not.toContain("copy");
    expect(records[0]!.layout).toBe("strided inputs");
    expectNear(values(out!), slicedRef, 0, 2 ** -10, "strided exp of a[::2]");
  });

  test("…and a transposed and a reversed (negative-stride) input", () => {
    const t = mg.transpose(base); // (16, 4), strides (1, 16)
    const tRef = Array.from({ length: 64 }, (_, i) => Math.exp(all[(i % 4) * 16 + Math.floor(i / 4)]!));
    expectNear(values(launch(myexpStrided, t)), tRef, 0, 2 ** -10, "strided exp of a.T");
    const flipped = base.index("::-1", "::-1");
    const fRef = Array.from({ length: 64 }, (_, i) => Math.exp(all[63 - i]!));
    let out: MgArray | undefined;
    const records = gpuTrace(() => (out = launch(myexpStrided, flipped)));
    expectNear(values(out!), fRef, 0, 2 ** -10, "strided exp of a[::-1, ::-1]");
    // Inputs are bound at their first element; one that reaches below it is packed first.
    expect(records[0]!.notes.join()).toContain("negative strides");
  });

  test("without elem_to_loc, ensureRowContiguous: false silently reads the wrong elements (why the default is true)", () => {
    const got = values(launch(myexpLinearNoCopy, sliced));
    // It reads the first 32 elements of the underlying buffer (rows 0 and 1), not rows 0 and 2…
    const wrong = Array.from(all.slice(0, 32), (v) => Math.exp(v));
    expectNear(got, wrong, 0, 2 ** -10, "linear index over a[::2]");
    // …so half of the result is wrong, with no error: the guide's documented silent failure.
    let differing = 0;
    for (let i = 0; i < 32; i++) if (Math.abs(got[i]! - slicedRef[i]!) > 1e-2 * Math.abs(slicedRef[i]!)) differing++;
    expect(differing).toBeGreaterThanOrEqual(12);
  });

  test("with the default ensureRowContiguous: true the same body is right, and the copy is in the trace", () => {
    let out: MgArray | undefined;
    const records = gpuTrace(() => (out = launch(myexp, sliced)));
    expectNear(values(out!), slicedRef, 0, 2 ** -10, "copied a[::2]");
    expect(records).toHaveLength(2);
    expect(records[0]!.notes.join()).toMatch(/input 'inp' .* is not row-contiguous and ensureRowContiguous is true/);
    expect(records[1]!.kernel).toBe("custom_kernel_myexp_float_float16_t_float16_t");
  });

  test("a row-contiguous input is never copied", () => {
    const records = gpuTrace(() => launch(myexp, base.index("1:3")));
    expect(records).toHaveLength(1);
  });
});

// §8.3 ----------------------------------------------------------------------------------------

const ROWNORM = mg.fast.metalKernel({
  name: "rownorm",
  inputNames: ["x", "w", "eps"],
  outputNames: ["out"],
  source: guideKernel("rownorm"),
});
const SIMD_WIDTH = 32;

function rownorm(x: MgArray, w: MgArray, eps: number): MgArray {
  const nRows = x.size / x.shape[x.ndim - 1]!;
  const [out] = ROWNORM({
    inputs: [x, w, mg.array([eps], mg.float32)],
    template: [["T", x.dtype]],
    grid: [nRows * SIMD_WIDTH, 1, 1],
    threadgroup: [256, 1, 1],
    outputShapes: [x.shape],
    outputDtypes: [x.dtype],
  });
  return out!;
}

describe("§8.3 rownorm", () => {
  for (const shape of [[2, 17, 512], [3, 1000]]) {
    test(`${shape.join("×")} against a float64 reference`, () => {
      const D = shape[shape.length - 1]!;
      const xv = Float32Array.from(normals(size(shape), 10 + D));
      const wv = Float32Array.from(normals(D, 11 + D));
      const eps = Math.fround(1e-5);
      const got = values(rownorm(f32(xv, shape), f32(wv, [D]), 1e-5));
      const ref = new Float64Array(xv.length);
      for (let r = 0; r < xv.length / D; r++) {
        let ss = 0;
        for (let i = 0; i < D; i++) ss += xv[r * D + i]! ** 2;
        const scale = 1 / Math.sqrt(ss / D + eps);
        for (let i = 0; i < D; i++) ref[r * D + i] = xv[r * D + i]! * scale * wv[i]!;
      }
      expectNear(got, ref, 1e-6, 2e-6, `rownorm ${shape.join("x")}`);
    });
  }

  test("the 1-element eps goes in the constant address space, x and w in device memory", () => {
    const printed = captureStdout(() => {
      ROWNORM({
        inputs: [f32(normals(64, 1), [2, 32]), f32(normals(32, 2), [32]), mg.array([1e-5], mg.float32)],
        template: [["T", mg.float32]],
        grid: [64, 1, 1],
        threadgroup: [64, 1, 1],
        outputShapes: [[2, 32]],
        outputDtypes: [mg.float32],
        verbose: true,
      });
    });
    expect(printed).toContain("custom_kernel_rownorm_float_float_float_floatc_float(");
    expect(printed).toContain("const device float* x [[buffer(0)]]");
    expect(printed).toContain("const constant int* x_shape [[buffer(1)]]");
    expect(printed).toContain("const constant int& x_ndim [[buffer(2)]]");
    expect(printed).toContain("const device float* w [[buffer(3)]]");
    expect(printed).toContain("const constant float* eps [[buffer(4)]]");
    expect(printed).toContain("device float* out [[buffer(5)]]");
    expect(printed).not.toContain("x_strides [[");
    expect(printed).toContain("uint thread_index_in_simdgroup [[thread_index_in_simdgroup]]");
    expect(printed).toContain("uint threads_per_simdgroup [[threads_per_simdgroup]]");
  });
});

// §8.2 ----------------------------------------------------------------------------------------

const gridSampleKernel = mg.fast.metalKernel({ name: "grid_sample", inputNames: ["x", "grid"], outputNames: ["out"], source: GRID_SAMPLE_SOURCE });
const gridSampleSafeKernel = mg.fast.metalKernel({ name: "grid_sample_safe", inputNames: ["x", "grid"], outputNames: ["out"], source: GRID_SAMPLE_SAFE_SOURCE });

function runGridSample(kernel: mg.fast.MetalKernel, x: MgArray, grid: MgArray): MgArray {
  const [B, , , C] = x.shape as [number, number, number, number];
  const [, gN, gM, D] = grid.shape as [number, number, number, number];
  if (D !== 2) throw new Error("Last dim of `grid` must be size 2.");
  const outShape = [B, gN, gM, C];
  return kernel({
    inputs: [x, grid],
    template: [["T", x.dtype]],
    outputShapes: [outShape],
    outputDtypes: [x.dtype],
    grid: [size(outShape), 1, 1],
    threadgroup: [256, 1, 1],
  })[0]!;
}

function gridSampleData(d: Dims, seed: number, lo: number, hi: number) {
  const xv = Float32Array.from(normals(d.N * d.H * d.W * d.C, seed));
  const gv = Float32Array.from(uniforms(d.N * d.gH * d.gW * 2, seed + 1, lo, hi));
  return { xv, gv, x: f32(xv, [d.N, d.H, d.W, d.C]), grid: f32(gv, [d.N, d.gH, d.gW, 2]) };
}

describe("§8.2 grid_sample forward", () => {
  const d: Dims = { N: 2, H: 9, W: 12, C: 5, gH: 7, gW: 6 };

  test("the verbatim listing on sample points whose corners are inside the image", () => {
    // ix = ((g + 1)·W − 1)/2 ∈ [0, W − 1) keeps every corner in bounds.
    const { xv, gv, x, grid } = gridSampleData(d, 20, 1 / d.H - 1 + 1e-3, 1 - 1 / d.H - 1e-3);
    expectNear(values(runGridSample(gridSampleKernel, x, grid)), gridSampleReference(xv, gv, d), 1e-5, 1e-5, "grid_sample");
  });

  test("bounds-tested loads handle points beyond the border (zeros outside), float32 and float16", () => {
    const { xv, gv, x, grid } = gridSampleData(d, 21, -1.3, 1.3);
    const ref = gridSampleReference(xv, gv, d);
    expectNear(values(runGridSample(gridSampleSafeKernel, x, grid)), ref, 1e-5, 1e-5, "grid_sample float32");
    const x16 = mg.astype(x, mg.float16);
    const ref16 = gridSampleReference(values(x16), gv, d);
    expectNear(values(runGridSample(gridSampleSafeKernel, x16, grid)), ref16, 5e-3, 5e-3, "grid_sample float16");
  });

  test.skipIf(!ON_SIMULATOR)("checked mode catches the verbatim listing's out-of-bounds loads at the border", () => {
    const checked = mg.fast.metalKernel({ name: "grid_sample", inputNames: ["x", "grid"], outputNames: ["out"], source: GRID_SAMPLE_SOURCE, checked: true });
    const { x, grid } = gridSampleData(d, 22, -1.3, 1.3);
    const out = runGridSample(checked, x, grid);
    expect(() => out.dataSync()).toThrow(/out-of-bounds read in kernel 'custom_kernel_grid_sample_float_float_float_float': buffer\(0\) element -\d+/);
  });
});

// §9.4 ----------------------------------------------------------------------------------------

function makeVjpKernel(source: string, name = "grid_sample_grad", checked?: boolean) {
  return mg.fast.metalKernel({
    name,
    inputNames: ["x", "grid", "cotangent"],
    outputNames: ["x_grad", "grid_grad"],
    source,
    atomicOutputs: true,
    ...(checked === undefined ? {} : { checked }),
  });
}
const gridSampleVjpKernel = makeVjpKernel(GRID_SAMPLE_VJP_SOURCE);

function runGridSampleVjp(kernel: mg.fast.MetalKernel, x: MgArray, grid: MgArray, cotangent: MgArray, initValue: number | null = 0): [MgArray, MgArray] {
  const [B, , , C] = x.shape as [number, number, number, number];
  const [, gN, gM] = grid.shape as [number, number, number, number];
  // Pad the output channels to the simd group size so that the simd_sums don't overlap.
  const simdgroupSize = 32;
  const cPadded = Math.ceil(C / simdgroupSize) * simdgroupSize;
  const [xGrad, gridGrad] = kernel({
    inputs: [x, grid, cotangent],
    template: [["T", x.dtype]],
    outputShapes: [x.shape, grid.shape],
    outputDtypes: [x.dtype, x.dtype],
    grid: [B * gN * gM * cPadded, 1, 1],
    threadgroup: [256, 1, 1],
    initValue,
  });
  return [xGrad!, gridGrad!];
}

(gpuLacks("atomicFloat", "grid_sample backward (atomic<float> outputs)") ? describe.skip : describe)("§9.4 grid_sample backward: atomicOutputs and initValue", () => {
  test("the verbatim listing matches the hand-derived gradients (even H and W)", () => {
    const d: Dims = { N: 2, H: 8, W: 10, C: 3, gH: 5, gW: 4 };
    const { xv, gv, x, grid } = gridSampleData(d, 30, -1.2, 1.2);
    const cv = Float32Array.from(normals(d.N * d.gH * d.gW * d.C, 32));
    let xGrad: MgArray | undefined;
    let gridGrad: MgArray | undefined;
    const records = gpuTrace(() => ([xGrad, gridGrad] = runGridSampleVjp(gridSampleVjpKernel, x, grid, f32(cv, [d.N, d.gH, d.gW, d.C]))));
    const ref = gridSampleVjpReference(xv, gv, cv, d);
    expectNear(values(xGrad!), ref.xGrad, 1e-5, 1e-5, "x_grad");
    expectNear(values(gridGrad!), ref.gridGrad, 1e-4, 1e-5, "grid_grad");
    // Two fills (initValue) before the kernel, each saying why.
    expect(records.map((r) => r.kernel)).toEqual(["mg_custom_init_f32", "mg_custom_init_f32", "custom_kernel_grid_sample_grad_float_float_float_float_float_float"]);
    expect(records[0]!.notes.join()).toContain("initValue 0: fills 'x_grad'");
  });

  test("the signature declares atomic outputs", () => {
    const d: Dims = { N: 1, H: 2, W: 2, C: 1, gH: 1, gW: 1 };
    const { x, grid } = gridSampleData(d, 33, -0.5, 0.5);
    const printed = captureStdout(() => {
      gridSampleVjpKernel({
        inputs: [x, grid, f32([1], [1, 1, 1, 1])],
        template: [["T", mg.float32]],
        outputShapes: [x.shape, grid.shape],
        outputDtypes: [mg.float32, mg.float32],
        grid: [32, 1, 1],
        threadgroup: [32, 1, 1],
        initValue: 0,
        verbose: true,
      });
    });
    expect(printed).toContain("device atomic<float>* x_grad [[buffer(");
    expect(printed).toContain("device atomic<float>* grid_grad [[buffer(");
  });

  test("with odd H the verbatim `T giy_mult = H / 2;` divides integers: its grid gradient is off, the fixed one is not", () => {
    const d: Dims = { N: 1, H: 5, W: 6, C: 2, gH: 3, gW: 3 };
    const { xv, gv, x, grid } = gridSampleData(d, 40, -0.9, 0.9);
    const cv = Float32Array.from(normals(d.N * d.gH * d.gW * d.C, 41));
    const cot = f32(cv, [d.N, d.gH, d.gW, d.C]);
    const ref = gridSampleVjpReference(xv, gv, cv, d);
    const [, verbatim] = runGridSampleVjp(gridSampleVjpKernel, x, grid, cot);
    const v = values(verbatim);
    // The y components come out scaled by (H − 1)/H = 2/2.5.
    for (let i = 1; i < v.length; i += 2) expect(v[i]!).toBeCloseTo((ref.gridGrad[i]! * 4) / 5, 4);
    const [, fixed] = runGridSampleVjp(makeVjpKernel(GRID_SAMPLE_VJP_FIXED_SOURCE, "grid_sample_grad_fixed"), x, grid, cot);
    expectNear(values(fixed), ref.gridGrad, 1e-4, 1e-5, "fixed grid_grad");
  });

  test.skipIf(!ON_SIMULATOR)("without initValue, checked mode reports the x_grad elements no sample touched", () => {
    const d: Dims = { N: 1, H: 6, W: 6, C: 2, gH: 1, gW: 1 };
    const { x, grid } = gridSampleData(d, 42, -0.2, 0.2);
    const [xGrad] = runGridSampleVjp(makeVjpKernel(GRID_SAMPLE_VJP_SOURCE, "grid_sample_grad", true), x, grid, f32([1, 1], [1, 1, 1, 2]), null);
    // (the 1×1×1×2 grid and cotangent have fewer than 8 elements: constant-memory inputs, hence floatc)
    expect(() => xGrad.dataSync()).toThrow(/unwritten output in kernel 'custom_kernel_grid_sample_grad_float_float_floatc_floatc_float_float': buffer\(5\) has \d+ byte\(s\) never written/);
  });
});

// MLX's test_fast cases and the remaining conveniences --------------------------------------------

describe("arguments, attributes, helpers (MLX's test_custom_kernel_*)", () => {
  test("scalars become `constant T&`, small arrays go in constant memory, int/bool/dtype template arguments", () => {
    const kernel = mg.fast.metalKernel({
      name: "arg_test",
      inputNames: ["a", "b", "c", "d"],
      outputNames: ["out1", "out2"],
      source: `
        uint elem = thread_position_in_grid.x;
        T tmp = a[0];
        if (e) {
            out1[elem] = a[1] + b[2] + c[3] + d + f;
        } else {
            out1[elem] = 1;
        }
        out2[elem] = a[1] + b[2] + c[1] - d;
      `,
    });
    const av = Array.from(normals(18, 50), (v) => Math.fround(v));
    const a = f32(av, [3, 6]);
    const c = mg.astype(f32([0.5, -1.25, 2, 3.75], [2, 2]), mg.bfloat16); // exact in bfloat16
    let outs: MgArray[] = [];
    const printed = captureStdout(() => {
      outs = kernel({
        inputs: [a, mg.array([3, 4, 5]), c, 7.3],
        template: [["e", true], ["f", 3], ["T", mg.float16]],
        grid: [6, 1, 1],
        threadgroup: [2, 1, 1],
        outputShapes: [[3, 2], [3, 2]],
        outputDtypes: [mg.float32, mg.int32],
        verbose: true,
      });
    });
    expect(printed).toContain("template <bool e, int f, typename T>");
    expect(printed).toContain("custom_kernel_arg_test_1_3_float16_t_float_int32_tc_bfloat16_tc_floats_float_int32_t(");
    expect(printed).toContain("const device float* a [[buffer(0)]]");
    expect(printed).toContain("const constant int32_t* b [[buffer(1)]]");
    expect(printed).toContain("const constant bfloat16_t* c [[buffer(2)]]");
    expect(printed).toContain("const constant float& d [[buffer(3)]]");
    expect(printed).toContain("<1, 3, float16_t>");
    // float arithmetic, as the kernel does it: a[1] + b[2] is float, + c[3] (bfloat → float) …
    const d = Math.fround(7.3);
    const out1 = Math.fround(Math.fround(Math.fround(Math.fround(av[1]! + 5) + 3.75) + d) + 3);
    const out2 = Math.trunc(Math.fround(Math.fround(Math.fround(av[1]! + 5) + -1.25) - d));
    expect(values(outs[0]!)).toEqual(new Float64Array(6).fill(out1));
    expect(Array.from(outs[1]!.dataSync() as Int32Array)).toEqual(new Array(6).fill(out2));
  });

  test("attributes appear when mentioned: threads_per_threadgroup, threads_per_simdgroup", () => {
    const kernel = mg.fast.metalKernel({
      name: "test_fun",
      inputNames: ["a"],
      outputNames: ["out"],
      source: "if (thread_position_in_grid.x == 0) { out[0] = threads_per_threadgroup.x; out[1] = threads_per_simdgroup; }",
    });
    const [out] = kernel({ inputs: [mg.zeros([1, 1])], grid: [2, 1, 1], threadgroup: [2, 1, 1], outputShapes: [[2]], outputDtypes: [mg.uint32] });
    expect(out!.tolist()).toEqual([2, 32]);
  });

  // MLX also injects grid_origin and grid_size (stage-in attributes); the simulator refuses them
  // at compile time ("unsupported construct '[[grid_size]]'"), so they are not exercised here.
  test("MLX's Table 5.8 attributes have their values (grid 100, threadgroup 64: the last one partial)", () => {
    const local = (i: number) => i % 64;
    const size = (i: number) => (i < 64 ? 64 : 36);
    const expected: [string, (i: number) => number][] = [
      ["thread_position_in_grid.x", (i) => i],
      ["thread_position_in_threadgroup.x", local],
      ["thread_index_in_threadgroup", local],
      ["threadgroup_position_in_grid.x", (i) => Math.floor(i / 64)],
      ["threadgroups_per_grid.x", () => 2],
      ["threads_per_grid.x", () => 100],
      ["threads_per_threadgroup.x", size],
      ["dispatch_threads_per_threadgroup.x", () => 64],
      ["thread_execution_width", () => 32],
      ["threads_per_simdgroup", () => 32],
      ["thread_index_in_simdgroup", (i) => local(i) % 32],
      ["simdgroup_index_in_threadgroup", (i) => Math.floor(local(i) / 32)],
      ["simdgroups_per_threadgroup", (i) => Math.ceil(size(i) / 32)],
      ["dispatch_simdgroups_per_threadgroup", () => 2],
      ["thread_index_in_quadgroup", (i) => local(i) % 4],
      ["quadgroup_index_in_threadgroup", (i) => Math.floor(local(i) / 4)],
      ["quadgroups_per_threadgroup", (i) => Math.ceil(size(i) / 4)],
      ["dispatch_quadgroups_per_threadgroup", () => 16],
    ];
    for (const [expr, want] of expected) {
      const attr = expr.replace(".x", "");
      const kernel = mg.fast.metalKernel({ name: `attr_${attr}`, inputNames: [], outputNames: ["out"], source: `out[thread_position_in_grid.x] = uint(${expr});` });
      let out: MgArray[] = [];
      const printed = captureStdout(() => {
        out = kernel({ inputs: [], grid: [100, 1, 1], threadgroup: [64, 1, 1], outputShapes: [[100]], outputDtypes: [mg.uint32], verbose: true });
      });
      expect(printed).toContain(`${attr} [[${attr}]]`);
      expect(out[0]!.tolist(), attr).toEqual(Array.from({ length: 100 }, (_, i) => want(i)));
    }
  });

  test("header helpers (§9.3) and MLX's utils: elem_to_loc, ceildiv on mixed types", () => {
    const kernel = mg.fast.metalKernel({
      name: "myexp_precise",
      inputNames: ["inp"],
      outputNames: ["out", "blocks"],
      header: `
template <typename T>
T do_exp(T x) { return metal::precise::exp(x); }
`,
      source: `
        uint elem = thread_position_in_grid.x;
        out[elem] = do_exp(inp[elem]);
        if (elem == 0) blocks[0] = ceildiv(int(inp_shape[0]) * 10, threads_per_simdgroup);
      `,
    });
    const x = Float32Array.from(normals(10, 60));
    const [out, blocks] = kernel({ inputs: [f32(x, [10])], grid: [10, 1, 1], threadgroup: [16, 1, 1], outputShapes: [[10], [1]], outputDtypes: [mg.float32, mg.int32] });
    expectNear(values(out!), Array.from(x, (v) => Math.exp(v)), 0, 2 * 2 ** -23, "precise exp");
    expect(blocks!.tolist()).toEqual([Math.ceil(100 / 32)]);
  });

  test("initValue fills what the kernel leaves alone; bool and int outputs too", () => {
    const kernel = mg.fast.metalKernel({
      name: "evens",
      inputNames: ["inp"],
      outputNames: ["out", "flags"],
      source: "uint i = thread_position_in_grid.x; if (i % 2 == 0) { out[i] = inp[i]; flags[i] = false; }",
    });
    const [out, flags] = kernel({
      inputs: [mg.arange(7, mg.int32)],
      grid: [7, 1, 1],
      threadgroup: [4, 1, 1],
      outputShapes: [[7], [7]],
      outputDtypes: [mg.int32, mg.bool_],
      initValue: -3,
    });
    expect(out!.tolist()).toEqual([0, -3, 2, -3, 4, -3, 6]);
    expect(flags!.tolist()).toEqual([false, true, false, true, false, true, false]);
  });

  test("a grid with a zero dimension launches nothing; outputs are the initValue", () => {
    const kernel = mg.fast.metalKernel({ name: "noop", inputNames: ["inp"], outputNames: ["out"], source: "out[0] = inp[0];" });
    let out: MgArray | undefined;
    // (the broadcast input is not even copied: nothing reads it)
    const records = gpuTrace(() => (out = kernel({ inputs: [mg.ones([4])], grid: [0, 1, 1], threadgroup: [32, 1, 1], outputShapes: [[4]], outputDtypes: [mg.float32], initValue: 2 })[0]));
    expect(out!.tolist()).toEqual([2, 2, 2, 2]);
    expect(records.map((r) => r.kernel)).toEqual(["mg_custom_init_f32"]);
  });
});

describe("compiled once per distinct source", () => {
  test("repeated calls reuse the pipeline; a new template or dtype compiles once more", () => {
    const kernel = mg.fast.metalKernel({ name: "cache_probe", inputNames: ["inp"], outputNames: ["out"], source: "uint i = thread_position_in_grid.x; out[i] = inp[i] * T(2);" });
    const call = (x: MgArray, T: mg.Dtype) => kernel({ inputs: [x], template: [["T", T]], grid: [x.size, 1, 1], threadgroup: [32, 1, 1], outputShapes: [x.shape], outputDtypes: [x.dtype] })[0]!;
    const x = f32([1, 2, 3], [3]);
    const c0 = mg.fast.kernelCompileCount();
    expect(call(x, mg.float32).tolist()).toEqual([2, 4, 6]);
    const c1 = mg.fast.kernelCompileCount();
    expect(c1 - c0).toBe(1);
    for (let i = 0; i < 3; i++) expect(call(f32([i, 1, 2], [3]), mg.float32).tolist()).toEqual([2 * i, 2, 4]);
    expect(mg.fast.kernelCompileCount()).toBe(c1);
    // An identical kernel object built again shares the compiled source.
    const again = mg.fast.metalKernel({ name: "cache_probe", inputNames: ["inp"], outputNames: ["out"], source: "uint i = thread_position_in_grid.x; out[i] = inp[i] * T(2);" });
    again({ inputs: [x], template: [["T", mg.float32]], grid: [3, 1, 1], threadgroup: [32, 1, 1], outputShapes: [[3]], outputDtypes: [mg.float32] });
    expect(mg.fast.kernelCompileCount()).toBe(c1);
    call(x, mg.float16);
    expect(mg.fast.kernelCompileCount()).toBe(c1 + 1);
    // The math mode is part of the compiled library: same source, another mode, another compile.
    const fast = mg.fast.metalKernel({ name: "cache_probe", inputNames: ["inp"], outputNames: ["out"], source: "uint i = thread_position_in_grid.x; out[i] = inp[i] * T(2);", compileOptions: { mathMode: "fast" } });
    expect(fast({ inputs: [x], template: [["T", mg.float32]], grid: [3, 1, 1], threadgroup: [32, 1, 1], outputShapes: [[3]], outputDtypes: [mg.float32] })[0]!.tolist()).toEqual([2, 4, 6]);
    expect(mg.fast.kernelCompileCount()).toBe(c1 + 2);
  });

  test("two kernels with one name and different sources in one eval each run their own code (MLX #3832)", () => {
    const callKernel = (a: MgArray, source: string) =>
      mg.fast.metalKernel({ name: "dup_name", inputNames: ["inp"], outputNames: ["out"], source })({
        inputs: [a], grid: [a.size, 1, 1], threadgroup: [a.size, 1, 1], outputShapes: [a.shape], outputDtypes: [a.dtype],
      })[0]!;
    const a = mg.arange(32, mg.float32);
    const outA = callKernel(a, "uint e = thread_position_in_grid.x; out[e] = inp[e] * 2.0f;");
    const outB = callKernel(a, "uint e = thread_position_in_grid.x; out[e] = inp[e] + 100.0f;");
    mg.eval(outA, outB);
    expect(outA.tolist()).toEqual(Array.from({ length: 32 }, (_, i) => 2 * i));
    expect(outB.tolist()).toEqual(Array.from({ length: 32 }, (_, i) => i + 100));
  });

  test("mixed input dtypes in one graph (MLX's test_custom_kernel_mixed_dtypes)", () => {
    const kernel = mg.fast.metalKernel({ name: "mixed_dtypes", inputNames: ["inp"], outputNames: ["out"], source: "uint elem = thread_position_in_grid.x; out[elem] = inp[elem] + inp[elem];" });
    const call = (a: MgArray) => kernel({ inputs: [a], grid: [a.size, 1, 1], threadgroup: [a.size, 1, 1], outputShapes: [a.shape], outputDtypes: [a.dtype] })[0]!;
    const out = mg.add(mg.astype(call(mg.full([32], 1.5, mg.float16)), mg.float32), call(mg.full([32], 2.5, mg.float32)), { stream: mg.gpu });
    expect(out.tolist()).toEqual(new Array(32).fill(8));
  });
});

describe("errors", () => {
  const base = { name: "e", inputNames: ["inp"], outputNames: ["out"], source: "out[0] = inp[0];" };
  const okCall = { inputs: [mg.ones([4])], grid: [4, 1, 1] as const, threadgroup: [4, 1, 1] as const, outputShapes: [[4]], outputDtypes: [mg.float32] };

  test("math mode: MLX's messages", () => {
    const msg = "[metal_kernel] Expected math_mode to be 'safe', 'relaxed', or 'fast'.";
    expect(() => mg.fast.metalKernel({ ...base, mathMode: "precise" })).toThrow(msg);
    expect(() => mg.fast.metalKernel({ ...base, compileOptions: { math_mode: "precise" } })).toThrow(msg);
    expect(() => mg.fast.metalKernel({ ...base, compileOptions: { mathMode: 3 } })).toThrow(msg);
    expect(() => mg.fast.metalKernel({ ...base, compileOptions: { unknown: "value" } })).toThrow("[metal_kernel] Unknown compile option `unknown`.");
    for (const mode of ["safe", "relaxed", "fast"]) {
      const [out] = mg.fast.metalKernel({ ...base, compileOptions: { math_mode: mode } })({ ...okCall, initValue: 0 });
      expect(out!.tolist()).toEqual([1, 0, 0, 0]);
    }
  });

  test("an oversized threadgroup is an error at the call, never a silent all-zero output", () => {
    const k = mg.fast.metalKernel(base);
    expect(() => k({ ...okCall, threadgroup: [2048, 1, 1] })).toThrow(
      /\[metal_kernel\] Thread group size \(2048\) is greater than the maximum allowed threads per threadgroup \(1024\)/,
    );
    expect(() => k({ ...okCall, threadgroup: [32, 32, 2] })).toThrow(/Thread group size \(2048\)/);
    expect(() => k({ ...okCall, threadgroup: [0, 1, 1] })).toThrow(/threadgroup must be three integers ≥ 1/);
    expect(() => k({ ...okCall, grid: [4, 1] as unknown as [number, number, number] })).toThrow(/grid must be three integers ≥ 0/);
  });

  test("template arguments must be dtypes, integers or booleans", () => {
    const k = mg.fast.metalKernel(base);
    expect(() => k({ ...okCall, template: [["T", "float" as unknown as mg.Dtype]] })).toThrow(
      /\[metal_kernel\] Invalid template argument 'T' \(string 'float'\)\. Must be `Dtype`, `int` or `bool`/,
    );
    expect(() => k({ ...okCall, template: [["N", 1.5]] })).toThrow(/Invalid template argument 'N' \(number 1.5\)/);
    expect(() => k({ ...okCall, template: [["T", mg.float64]] })).toThrow(/\[metal_kernel\] float64 is not supported on the GPU \(template argument 'T'\)/);
    expect(() => k({ ...okCall, template: [["T", mg.float32], ["T", mg.float16]] })).toThrow(/template argument 'T' is given twice/);
    expect(() => k({ ...okCall, template: [["2T", mg.float32]] })).toThrow(/'2T' is not a valid identifier/);
  });

  test("counts of inputs and outputs (MLX's messages)", () => {
    const k = mg.fast.metalKernel(base);
    expect(() => k({ ...okCall, outputShapes: [[4], [4]] })).toThrow("[metal_kernel] Expected `output_shapes` to have size 1 but got size 2.");
    expect(() => k({ ...okCall, outputDtypes: [] })).toThrow("[metal_kernel] Expected `output_dtypes` to have size 1 but got size 0.");
    expect(() => k({ ...okCall, inputs: [] })).toThrow("[metal_kernel] Expected `inputs` to have size 1 but got size 0.");
    expect(() => mg.fast.metalKernel({ ...base, outputNames: [] })).toThrow("[metal_kernel] Must specify at least one output.");
    expect(() => mg.fast.metalKernel({ ...base, inputNames: ["x", "x"] })).toThrow(/the name 'x' is used for two parameters/);
    expect(() => mg.fast.metalKernel({ ...base, name: "my-kernel" })).toThrow(/name must be a non-empty string of letters, digits and underscores/);
  });

  test("devices and dtypes: the CPU stream, float64, atomics Metal does not have", () => {
    const k = mg.fast.metalKernel(base);
    expect(() => k({ ...okCall, stream: mg.cpu })).toThrow(/\[metal_kernel\] Only supports the GPU/);
    expect(() => k({ ...okCall, inputs: [mg.ones([4], mg.float64, { stream: mg.cpu })] })).toThrow(/\[metal_kernel\] float64 is not supported on the GPU \(input\)/);
    expect(() => k({ ...okCall, outputDtypes: [mg.float64] })).toThrow(/float64 is not supported on the GPU \(output 'out'\)/);
    const atomic = mg.fast.metalKernel({ ...base, atomicOutputs: true });
    expect(() => atomic({ ...okCall, outputDtypes: [mg.float16] })).toThrow(/atomicOutputs: Metal has atomics for int32, uint32, float32, bool and uint64 only, but output 'out' is float16/);
    // The default device is the CPU on Linux, yet an unspecified stream runs the kernel on the GPU (as MLX).
    const [out] = k(okCall);
    expect(out!.stream.device.type).toBe("gpu");
  });

  test("compile errors name the kernel and carry the compiler's diagnostics", () => {
    const k = mg.fast.metalKernel({ ...base, name: "broken", source: "\n  uint i = thread_position_in_grid.x;\n  out[i] = inp[i] +;\n" });
    // Line 3 of the source string (a 4-element input is a constant-memory one: floatc).
    expect(() => k(okCall)).toThrow(/\[metal_kernel\] kernel 'broken' \(custom_kernel_broken_floatc_float\) failed to compile: [\s\S]*metal_kernel broken source:3:\d+: error/);
  });

  test("a custom kernel is opaque to transforms: wrap it in customFunction", () => {
    const f = (x: MgArray) => mg.sum(expElementwise(x));
    expect(() => mg.grad(f)(f32([1, 2], [2]))).toThrow(/\[vjp\] CustomKernel 'myexp' has no vjp rule: .* mg\.customFunction/);
    expect(() => mg.vmap((x: MgArray) => expElementwise(x))(f32([1, 2, 3, 4], [2, 2]))).toThrow(/\[vmap\] CustomKernel 'myexp' has no vmap rule/);
  });
});

describe("lazy graph and checked mode", () => {
  test("composes with ops on both devices; what follows the kernel fuses as usual", () => {
    const x = f32(normals(40, 70), [5, 8]);
    const pre = mg.stream(mg.cpu, () => mg.multiply(mg.add(x, 1), 0.5)); // lazy CPU ops feeding the kernel
    let y: MgArray | undefined;
    const records = mg.trace(() => (y = mg.stream(mg.gpu, () => mg.sqrt(mg.add(mg.multiply(expElementwise(pre), 2), 1)))));
    const xv = values(x);
    expectNear(values(y!), Array.from(xv, (v) => Math.sqrt(2 * Math.exp((Math.fround(v + 1) * 0.5)) + 1)), 0, 1e-6, "kernel in a graph");
    const gpuKernels = records.filter((r) => r.device === "gpu").map((r) => r.kernel);
    expect(gpuKernels[0]).toBe("custom_kernel_myexp_float_float_float");
    expect(gpuKernels.slice(1).every((k) => k.startsWith("mg_fused_"))).toBe(true);
    expect(gpuKernels).toHaveLength(2);
  });

  test.skipIf(!ON_SIMULATOR)("checked mode catches an unwritten output element; initValue lifts the must-write", () => {
    const partial = mg.fast.metalKernel({ name: "partial", inputNames: ["inp"], outputNames: ["out"], checked: true, source: "uint i = thread_position_in_grid.x; if (i > 0) out[i] = inp[i];" });
    const call = (initValue: number | null) =>
      partial({ inputs: [mg.arange(10, mg.float32)], grid: [10, 1, 1], threadgroup: [32, 1, 1], outputShapes: [[10]], outputDtypes: [mg.float32], initValue })[0]!;
    expect(() => call(null).dataSync()).toThrow(
      /unwritten output in kernel 'custom_kernel_partial_float_float': buffer\(1\) has 4 byte\(s\) never written .* first at element 0/,
    );
    expect(call(-1).tolist()).toEqual([-1, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});

// Issue 6: grid_sample as a custom function with Metal forward and backward passes -------------

/** MLX's grid_sample_ref in metalgrad ops (corners clamped before the gather, then masked). */
function gridSampleOps(x: MgArray, grid: MgArray): MgArray {
  const [N, H, W] = x.shape as [number, number, number, number];
  const gx = grid.index("...", 0);
  const gy = grid.index("...", 1);
  const ix = mg.divide(mg.subtract(mg.multiply(mg.add(gx, 1), W), 1), 2);
  const iy = mg.divide(mg.subtract(mg.multiply(mg.add(gy, 1), H), 1), 2);
  const ix0 = mg.floor(ix);
  const iy0 = mg.floor(iy);
  const batch = mg.reshape(mg.arange(N, mg.int32), [N, 1, 1]);
  let out: MgArray | null = null;
  for (const [dy, dx] of [[0, 0], [0, 1], [1, 0], [1, 1]] as const) {
    const cy = mg.add(iy0, dy);
    const cx = mg.add(ix0, dx);
    const wy = dy === 0 ? mg.subtract(mg.add(iy0, 1), iy) : mg.subtract(iy, iy0);
    const wx = dx === 0 ? mg.subtract(mg.add(ix0, 1), ix) : mg.subtract(ix, ix0);
    const inside = mg.logicalAnd(mg.logicalAnd(mg.greaterEqual(cy, 0), mg.lessEqual(cy, H - 1)), mg.logicalAnd(mg.greaterEqual(cx, 0), mg.lessEqual(cx, W - 1)));
    const yi = mg.astype(mg.clip(cy, 0, H - 1), mg.int32);
    const xi = mg.astype(mg.clip(cx, 0, W - 1), mg.int32);
    const corner = x.index(batch, yi, xi); // (N, gH, gW, C)
    const w = mg.multiply(mg.multiply(wy, wx), mg.astype(inside, x.dtype));
    const term = mg.multiply(mg.expandDims(w, -1), corner);
    out = out ? mg.add(out, term) : term;
  }
  return out!;
}

/** The §8.2 forward (bounds-tested loads) as the custom function's body; float64 has no Metal
 *  type, so gradcheck's float64 numerical reference on the CPU evaluates the ops version. */
const gridSample = mg.customFunction((x: MgArray, grid: MgArray) => {
  if (x.ndim !== 4) throw new Error("`x` must be 4D.");
  if (grid.ndim !== 4) throw new Error("`grid` must be 4D.");
  if (x.dtype === mg.float64) return gridSampleOps(x, grid);
  return runGridSample(gridSampleSafeKernel, x, grid);
});
gridSample.vjp((primals: [MgArray, MgArray], cotangent: MgArray) => {
  const [x, grid] = primals;
  return runGridSampleVjp(gridSampleVjpKernel, x, grid, cotangent);
});
// A forward-mode rule from the ops version, so gradcheck's ⟨u, J·v⟩ = ⟨Jᵀ·u, v⟩ identity pits an
// independent jvp against the kernel's vjp.
gridSample.jvp((primals: [MgArray, MgArray], tangents: [MgArray | null, MgArray | null]) => {
  const [x, grid] = primals;
  const t = [tangents[0] ?? mg.zerosLike(x), tangents[1] ?? mg.zerosLike(grid)];
  return mg.jvp(gridSampleOps, [x, grid], t)[1][0]!;
});

describe("issue 6: grid_sample as mg.customFunction with Metal forward and backward passes", () => {
  const d: Dims = { N: 2, H: 4, W: 6, C: 3, gH: 2, gW: 2 };
  const { xv, gv, x, grid } = gridSampleData(d, 80, -1.15, 1.15);

  test("the ops reference equals the TypeScript reference (what the numerical side differentiates)", () => {
    const ref = gridSampleReference(xv, gv, d);
    const got = mg.stream(mg.cpu, () => gridSampleOps(mg.astype(x, mg.float64), mg.astype(grid, mg.float64)));
    expectNear(values(got), ref, 1e-12, 1e-12, "grid_sample ops (float64)");
  });

  test("gradcheck on the gpu stream: kernel vjp vs float64 central differences, and vs the ops jvp", () => {
    const report = mg.testing.gradcheck(gridSample, [x, grid], { stream: mg.gpu, atol: 2e-4, rtol: 2e-3 });
    expect(report.ok).toBe(true);
    // Every Jacobian entry of both inputs (plus the two jvp identities) was compared.
    const outputs = d.N * d.gH * d.gW * d.C;
    expect(report.compared).toBe(outputs * (x.size + grid.size) + 2);
  });

  test("the gradient path really runs the §9.4 kernel (trace), and mg.grad agrees with the reference", () => {
    const cv = Float32Array.from(normals(d.N * d.gH * d.gW * d.C, 81));
    const w = f32(cv, [d.N, d.gH, d.gW, d.C]);
    let grads: MgArray[] = [];
    const records = mg.trace(() => {
      grads = mg.grad((a: MgArray, g: MgArray) => mg.sum(mg.multiply(gridSample(a, g), w)), [0, 1])(x, grid) as MgArray[];
      return grads;
    });
    expect(records.some((r) => r.kernel === "custom_kernel_grid_sample_grad_float_float_float_float_float_float")).toBe(true);
    const ref = gridSampleVjpReference(xv, gv, cv, d);
    expectNear(values(grads[0]!), ref.xGrad, 1e-5, 1e-5, "grad x");
    expectNear(values(grads[1]!), ref.gridGrad, 1e-4, 1e-5, "grad grid");
  });

  test("gradcheck fails when the backward kernel is wrong (odd W with the verbatim integer W / 2)", () => {
    const odd: Dims = { N: 1, H: 4, W: 5, C: 2, gH: 2, gW: 1 };
    const data = gridSampleData(odd, 90, -0.8, 0.8);
    const wrong = mg.customFunction((a: MgArray, g: MgArray) => (a.dtype === mg.float64 ? gridSampleOps(a, g) : runGridSample(gridSampleSafeKernel, a, g)));
    wrong.vjp((primals: [MgArray, MgArray], cot: MgArray) => runGridSampleVjp(gridSampleVjpKernel, primals[0], primals[1], cot));
    const report = mg.testing.gradcheck(wrong, [data.x, data.grid], { stream: mg.gpu, directions: 0, raiseException: false });
    expect(report.ok).toBe(false);
    expect(report.worst!.input).toBe(1); // the grid's gradient
    expect(report.worst!.inputIndex[3]).toBe(0); // its x component
  });
});

// Issue 20: a custom kernel cannot take the process down -----------------------------------------

describe("custom kernels cannot take the process down (issue 20)", () => {
  const call = (kernel: mg.fast.MetalKernel, n = 4) =>
    kernel({ inputs: [mg.arange(n, mg.float32)], grid: [n, 1, 1], threadgroup: [n, 1, 1], outputShapes: [[n]], outputDtypes: [mg.float32] })[0]!;
  const compileError = (source: string, name: string): string => {
    try {
      call(mg.fast.metalKernel({ name, inputNames: ["inp"], outputNames: ["out"], source }));
      return "";
    } catch (e) {
      return (e as Error).message;
    }
  };

  test.skipIf(!ON_SIMULATOR)("by default an out-of-bounds write fails the dispatch; an out-of-bounds read gives 0 (as on a GPU)", () => {
    const writer = mg.fast.metalKernel({ name: "oob_write", inputNames: ["inp"], outputNames: ["out"], source: "uint i = thread_position_in_grid.x;\nout[i] = inp[i];\nout[i + 4096] = 1.0f;" });
    expect(() => call(writer).tolist()).toThrow(/out-of-bounds write in kernel 'custom_kernel_oob_write_floatc_float': buffer\(1\) element 4096/);
    const reader = mg.fast.metalKernel({ name: "oob_read", inputNames: ["inp"], outputNames: ["out"], source: "uint i = thread_position_in_grid.x;\nout[i] = inp[i] + inp[i + 100];" });
    expect(call(reader).tolist()).toEqual([0, 1, 2, 3]);
    // no must-write by default: a kernel may leave outputs unwritten, as in MLX
    const partial = mg.fast.metalKernel({ name: "partial_default", inputNames: ["inp"], outputNames: ["out"], source: "uint i = thread_position_in_grid.x;\nif (i > 0) out[i] = inp[i];" });
    expect((call(partial).tolist() as number[]).slice(1)).toEqual([1, 2, 3]);
    // the process is fine, and so are other kernels
    expect(call(mg.fast.metalKernel({ name: "fine", inputNames: ["inp"], outputNames: ["out"], source: "uint i = thread_position_in_grid.x;\nout[i] = 2.0f * inp[i];" })).tolist()).toEqual([0, 2, 4, 6]);
  });

  test.skipIf(!ON_SIMULATOR)("calls to the C library and inline assembly are compile errors, as on Metal; nothing runs", () => {
    const marker = `/tmp/mg-issue20-${process.pid}`;
    const m = compileError(`uint i = thread_position_in_grid.x;\nif (i == 0) system("touch ${marker}");\nout[i] = inp[i];`, "libc_system");
    expect(m).toContain(":2:13: error: use of 'system', which is not a Metal Shading Language function");
    expect(require("node:fs").existsSync(marker)).toBe(false);
    expect(compileError("uint i = thread_position_in_grid.x;\nif (i == 3) abort();\nout[i] = inp[i];", "libc_abort")).toContain("error: use of 'abort'");
    expect(compileError("uint i = thread_position_in_grid.x;\nvoid *p = malloc(64);\nout[i] = p ? inp[i] : 0.0f;", "libc_malloc")).toContain("error: use of 'malloc'");
    expect(compileError("uint i = thread_position_in_grid.x;\nif (i == 1) __builtin_abort();\nout[i] = inp[i];", "builtin_abort")).toContain("error: use of 'abort'");
    expect(compileError('uint i = thread_position_in_grid.x;\nasm volatile("nop");\nout[i] = inp[i];', "inline_asm")).toContain(":2:1: error: inline assembly is not supported");
  });
});
