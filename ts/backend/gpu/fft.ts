// GPU FFTs (Sources/Kernels/fft.metal): plans with float64 twiddles rounded to float32, and the
// dispatch sequence for one batch of 1-D transforms along an axis. One threadgroup per line when
// the line fits threadgroup memory (n ≤ 2048) and needs no Bluestein; otherwise contiguous scratch
// lines and one dispatch per Stockham pass (Bluestein: chirp, FFT of the padded length m,
// pointwise product with the chirp's transform, inverse FFT, chirp).
import { fftPlan, MAX_DIRECT_RADIX, runFft, twiddle } from "../cpu/fft.ts";
import { FFT } from "../../core/primitives/fft.ts";
import { tracing } from "../../core/trace.ts";
import { type KernelInstance, kernelPipeline } from "./kernels.ts";
import { registerGpu } from "./registry.ts";
import type { Dispatch, InlineBytes, NativeBuffer } from "../runtime.ts";
import { runtime } from "../runtime.ts";

/** Largest length transformed by one threadgroup (two float2 buffers in 32 KiB). */
export const FFT_THREADGROUP_MAX = 2048;

export type FftKind = "c2c" | "r2c" | "c2r";
const KIND_ID: Record<FftKind, number> = { c2c: 0, r2c: 1, c2r: 2 };

interface GpuPass {
  radix: number;
  ns: number;
  toff: number;
  roff: number;
}

interface GpuStockham {
  n: number;
  sign: 1 | -1;
  passes: GpuPass[];
  /** Twiddles then roots, as float2. */
  table: NativeBuffer;
  planWords: Int32Array;
}

interface GpuBluestein {
  n: number;
  m: number;
  chirp: NativeBuffer;
  /** Forward FFT (length m) of the conjugate chirp laid out circularly. */
  bhat: NativeBuffer;
  fwd: GpuStockham;
  inv: GpuStockham;
}

export type GpuFftPlan = { kind: "stockham"; s: GpuStockham } | { kind: "bluestein"; b: GpuBluestein };

function factorize(n: number): number[] {
  const f: number[] = [];
  while (n % 4 === 0) (f.push(4), (n /= 4));
  while (n % 2 === 0) (f.push(2), (n /= 2));
  for (let p = 3; p * p <= n; p += 2) while (n % p === 0) (f.push(p), (n /= p));
  if (n > 1) f.push(n);
  return f;
}

function uploadFloat32(values: ArrayLike<number>): NativeBuffer {
  const b = runtime().newBuffer(Math.max(values.length * 4, 8));
  b.as(Float32Array).set(values);
  return b;
}

const plans = new Map<string, GpuFftPlan>();

function stockham(n: number, sign: 1 | -1): GpuStockham {
  const passes: GpuPass[] = [];
  const table: number[] = [];
  let ns = 1;
  for (const radix of factorize(n)) {
    const toff = table.length / 2;
    for (let b = 0; b < ns; b++) {
      for (let r = 1; r < radix; r++) table.push(...twiddle(r * b, ns * radix, sign));
    }
    let roff = 0;
    if (![2, 3, 4, 5, 7].includes(radix)) {
      roff = table.length / 2;
      for (let k = 0; k < radix; k++) table.push(...twiddle(k, radix, sign));
    }
    passes.push({ radix, ns, toff, roff });
    ns *= radix;
  }
  const planWords = Int32Array.from([passes.length, ...passes.flatMap((p) => [p.radix, p.ns, p.toff, p.roff])]);
  return { n, sign, passes, table: uploadFloat32(table), planWords };
}

/** The GPU plan for length n (cached for the process: tables are small). */
export function gpuFftPlan(n: number, sign: 1 | -1): GpuFftPlan {
  const key = `${n}|${sign}`;
  let plan = plans.get(key);
  if (plan) return plan;
  if (factorize(n).every((p) => p <= MAX_DIRECT_RADIX)) {
    plan = { kind: "stockham", s: stockham(n, sign) };
  } else {
    let m = 1;
    while (m < 2 * n - 1) m *= 2;
    const chirp: number[] = [];
    for (let k = 0; k < n; k++) chirp.push(...twiddle(Number((BigInt(k) * BigInt(k)) % BigInt(2 * n)), 2 * n, sign));
    const bRe = new Float64Array(m), bIm = new Float64Array(m);
    for (let k = 0; k < n; k++) {
      bRe[k] = chirp[2 * k]!;
      bIm[k] = -chirp[2 * k + 1]!;
      if (k > 0) (bRe[m - k] = bRe[k]!), (bIm[m - k] = bIm[k]!);
    }
    runFft(fftPlan(m, -1), bRe, bIm);
    const bhat: number[] = [];
    for (let k = 0; k < m; k++) bhat.push(bRe[k]!, bIm[k]!);
    plan = { kind: "bluestein", b: { n, m, chirp: uploadFloat32(chirp), bhat: uploadFloat32(bhat), fwd: stockham(m, -1), inv: stockham(m, 1) } };
  }
  plans.set(key, plan);
  return plan;
}

const inst = (name: string, instantiation: string): KernelInstance => ({ file: "fft.metal", name, instantiation });
const LINE = (k: FftKind) => inst(`mg_fft_line_${k}`, `fft_line<${KIND_ID[k]}>`);
const LOAD = (k: FftKind) => inst(`mg_fft_load_${k}`, `fft_load<${KIND_ID[k]}>`);
const STORE = (k: FftKind) => inst(`mg_fft_store_${k}`, `fft_store<${KIND_ID[k]}>`);
const PASS = inst("mg_fft_pass", "fft_pass<float2>");
const CHIRP_IN = inst("mg_fft_chirp_in", "fft_chirp_in<float2>");
const POINTWISE = inst("mg_fft_pointwise", "fft_pointwise<float2>");
const CHIRP_OUT = inst("mg_fft_chirp_out", "fft_chirp_out<float2>");

/** The kernel instances a transform of this kind and length will use. */
export function fftKernels(kind: FftKind, n: number): KernelInstance[] {
  const fits = n <= FFT_THREADGROUP_MAX && factorize(n).every((p) => p <= MAX_DIRECT_RADIX);
  if (fits) return [LINE(kind)];
  const ks = [LOAD(kind), STORE(kind), PASS];
  if (!factorize(n).every((p) => p <= MAX_DIRECT_RADIX)) ks.push(CHIRP_IN, POINTWISE, CHIRP_OUT, LINE("c2c"));
  return ks;
}

/** A binding of a buffer from a byte offset (an array's storage), optionally bounded. */
export interface FftBinding {
  buffer: NativeBuffer;
  offset?: number;
  length?: number;
}

/** Where dispatches go: the GPU encoder in the backend, a raw batch in kernel tests. */
export interface FftDispatcher {
  dispatch(d: Dispatch, what: string): void;
  /** Scratch memory for this batch. */
  temporary(bytes: number): NativeBuffer;
}

export interface FftJob {
  kind: FftKind;
  n: number;
  /** Elements available along the axis in the input (fewer are zero-padded, more ignored). */
  nIn: number;
  /** Elements written along the axis (n, or n/2 + 1 for r2c). */
  nOut: number;
  lines: number;
  /** Line axes (the input's axes but the transformed one, in order) and each side's strides. */
  lineShape: number[];
  inLineStrides: number[];
  outLineStrides: number[];
  inBase: number;
  outBase: number;
  inStride: number;
  outStride: number;
  sign: 1 | -1;
  scale: number;
  input: FftBinding;
  output: FftBinding;
}

function paramsBytes(index: number, j: FftJob, n: number): InlineBytes {
  // struct FftParams: 4 ints, 4 int64, then int, int, float (padded to 8-byte alignment)
  const buf = new ArrayBuffer(4 * 4 + 4 * 8 + 4 * 4);
  const dv = new DataView(buf);
  [n, j.nIn, j.nOut, j.lines].forEach((v, i) => dv.setInt32(4 * i, v, true));
  [j.inBase, j.outBase, j.inStride, j.outStride].forEach((v, i) => dv.setBigInt64(16 + 8 * i, BigInt(v), true));
  dv.setInt32(48, j.lineShape.length, true);
  dv.setInt32(52, j.sign, true);
  dv.setFloat32(56, j.scale, true);
  return { index, data: new Uint8Array(buf) };
}

function lineBytes(j: FftJob): InlineBytes[] {
  const nd = j.lineShape.length;
  return [
    { index: 5, data: Int32Array.from(nd > 0 ? j.lineShape : [0]) },
    { index: 6, data: BigInt64Array.from((nd > 0 ? [...j.inLineStrides, ...j.outLineStrides] : [0, 0]).map(BigInt)) },
  ];
}

/** Encodes one batch of transforms. */
export function encodeFft(d: FftDispatcher, j: FftJob): void {
  const n = j.n;
  const plan = gpuFftPlan(n, j.sign);
  const inB = { index: 0, buffer: j.input.buffer, offset: j.input.offset, length: j.input.length, access: "read" as const };
  if (plan.kind === "stockham" && n <= FFT_THREADGROUP_MAX) {
    const pipeline = kernelPipeline(LINE(j.kind));
    const threads = Math.min(pipeline.maxTotalThreadsPerThreadgroup, 256, Math.max(32, Math.ceil(n / Math.min(...plan.s.passes.map((p) => p.radix), n || 1) / 32) * 32));
    d.dispatch({
      pipeline,
      buffers: [
        inB,
        { index: 1, buffer: j.output.buffer, offset: j.output.offset, length: j.output.length, access: "write" },
        { index: 2, buffer: plan.s.table, access: "read" },
      ],
      bytes: [paramsBytes(3, j, n), { index: 4, data: plan.s.planWords }, ...lineBytes(j)],
      threadgroupMemory: [{ index: 0, length: Math.max(16, 2 * n * 8) }],
      grid: [j.lines, 1, 1],
      threadgroup: [threads, 1, 1],
      mode: "threadgroups",
    }, `fft_line ${j.kind} n=${n}`);
    return;
  }
  // Several dispatches through contiguous [lines, n] scratch.
  const lines = j.lines;
  const s0 = d.temporary(lines * n * 8);
  d.dispatch({
    pipeline: kernelPipeline(LOAD(j.kind)),
    buffers: [inB, { index: 1, buffer: s0, access: "write" }],
    bytes: [paramsBytes(3, j, n), ...lineBytes(j)],
    grid: [n, lines, 1],
    threadgroup: [Math.min(256, n), 1, 1],
  }, `fft_load ${j.kind} n=${n}`);
  let result: NativeBuffer;
  if (plan.kind === "stockham") {
    const s1 = d.temporary(lines * n * 8);
    result = runPasses(d, plan.s, s0, s1, lines);
  } else {
    const { m, chirp, bhat, fwd, inv } = plan.b;
    const a0 = d.temporary(lines * m * 8), a1 = d.temporary(lines * m * 8);
    const nml = Int32Array.of(n, m, lines, 0); // int3: 16 bytes in Metal
    d.dispatch({
      pipeline: kernelPipeline(CHIRP_IN),
      buffers: [{ index: 0, buffer: s0, access: "read" }, { index: 1, buffer: a0, access: "write" }, { index: 2, buffer: chirp, access: "read" }],
      bytes: [{ index: 3, data: nml }],
      grid: [m, lines, 1],
      threadgroup: [Math.min(256, m), 1, 1],
    }, `fft_chirp_in n=${n} m=${m}`);
    const f = innerFft(d, fwd, a0, a1, lines);
    d.dispatch({
      pipeline: kernelPipeline(POINTWISE),
      buffers: [{ index: 0, buffer: f, access: "readwrite" }, { index: 1, buffer: bhat, access: "read" }],
      bytes: [{ index: 2, data: Int32Array.of(m, lines) }],
      grid: [m, lines, 1],
      threadgroup: [Math.min(256, m), 1, 1],
    }, `fft_pointwise m=${m}`);
    const g = innerFft(d, inv, f, f === a0 ? a1 : a0, lines);
    d.dispatch({
      pipeline: kernelPipeline(CHIRP_OUT),
      buffers: [{ index: 0, buffer: g, access: "read" }, { index: 1, buffer: s0, access: "write" }, { index: 2, buffer: chirp, access: "read" }],
      bytes: [{ index: 3, data: nml }],
      grid: [n, lines, 1],
      threadgroup: [Math.min(256, n), 1, 1],
    }, `fft_chirp_out n=${n}`);
    result = s0;
  }
  d.dispatch({
    pipeline: kernelPipeline(STORE(j.kind)),
    buffers: [{ index: 0, buffer: result, access: "read" }, { index: 1, buffer: j.output.buffer, offset: j.output.offset, length: j.output.length, access: "write" }],
    bytes: [paramsBytes(3, j, n), ...lineBytes(j)],
    grid: [j.nOut, lines, 1],
    threadgroup: [Math.min(256, j.nOut), 1, 1],
  }, `fft_store ${j.kind} n=${n}`);
}

/** Bluestein's power-of-two transforms over contiguous [lines, m] scratch: one threadgroup per
 *  line when m fits (one dispatch, unscaled), else the passes. Returns the buffer holding it. */
function innerFft(d: FftDispatcher, s: GpuStockham, a: NativeBuffer, b: NativeBuffer, lines: number): NativeBuffer {
  if (s.n > FFT_THREADGROUP_MAX) return runPasses(d, s, a, b, lines);
  const pipeline = kernelPipeline(LINE("c2c"));
  const job: FftJob = {
    kind: "c2c", n: s.n, nIn: s.n, nOut: s.n, lines, lineShape: [lines], inLineStrides: [s.n], outLineStrides: [s.n],
    inBase: 0, outBase: 0, inStride: 1, outStride: 1, sign: s.sign, scale: 1, input: { buffer: a }, output: { buffer: b },
  };
  d.dispatch({
    pipeline,
    buffers: [{ index: 0, buffer: a, access: "read" }, { index: 1, buffer: b, access: "write" }, { index: 2, buffer: s.table, access: "read" }],
    bytes: [paramsBytes(3, job, s.n), { index: 4, data: s.planWords }, ...lineBytes(job)],
    threadgroupMemory: [{ index: 0, length: 2 * s.n * 8 }],
    grid: [lines, 1, 1],
    threadgroup: [Math.min(pipeline.maxTotalThreadsPerThreadgroup, 256), 1, 1],
    mode: "threadgroups",
  }, `fft_line c2c n=${s.n} (Bluestein)`);
  return b;
}

/** Stockham passes ping-ponging between a and b; returns the buffer holding the result. */
function runPasses(d: FftDispatcher, s: GpuStockham, a: NativeBuffer, b: NativeBuffer, lines: number): NativeBuffer {
  let x = a, y = b;
  for (const p of s.passes) {
    d.dispatch({
      pipeline: kernelPipeline(PASS),
      buffers: [{ index: 0, buffer: x, access: "read" }, { index: 1, buffer: y, access: "write" }, { index: 2, buffer: s.table, access: "read" }],
      bytes: [
        { index: 3, data: Int32Array.of(s.n) },
        { index: 4, data: Int32Array.of(p.radix, p.ns, p.toff, p.roff) },
        { index: 5, data: Int32Array.of(s.sign) },
        { index: 6, data: Int32Array.of(lines) },
      ],
      grid: [s.n / p.radix, lines, 1],
      threadgroup: [Math.min(256, s.n / p.radix), 1, 1],
    }, `fft_pass radix ${p.radix} n=${s.n}`);
    [x, y] = [y, x];
  }
  return x;
}

// ---------------------------------------------------------------------------------------------
// The FFT primitive's GPU rule

interface FftNodeParams {
  axes: number[];
  inverse: boolean;
  real: boolean;
  n: number;
}

interface Step {
  kind: FftKind;
  axis: number;
  n: number;
  /** Shapes of the step's source and destination. */
  src: number[];
  dst: number[];
}

const rowMajorStrides = (shape: readonly number[]): number[] => {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) (s[i] = acc), (acc *= shape[i]!);
  return s;
};

/** The 1-D transforms of an FFT node, in order (MLX's: rfft first, irfft last). */
function fftSteps(inShape: readonly number[], outShape: readonly number[], p: FftNodeParams): Step[] {
  const last = p.axes[p.axes.length - 1]!;
  const others = p.axes.slice(0, -1);
  const steps: Step[] = [];
  if (!p.real) {
    for (const ax of p.axes) steps.push({ kind: "c2c", axis: ax, n: inShape[ax]!, src: [...inShape], dst: [...inShape] });
  } else if (!p.inverse) {
    steps.push({ kind: "r2c", axis: last, n: inShape[last]!, src: [...inShape], dst: [...outShape] });
    for (const ax of others) steps.push({ kind: "c2c", axis: ax, n: outShape[ax]!, src: [...outShape], dst: [...outShape] });
  } else {
    for (const ax of others) steps.push({ kind: "c2c", axis: ax, n: inShape[ax]!, src: [...inShape], dst: [...inShape] });
    steps.push({ kind: "c2r", axis: last, n: p.n, src: [...inShape], dst: [...outShape] });
  }
  return steps.filter((s) => s.src.every((d) => d > 0));
}

/** Kernel instances an FFT node needs. */
export function fftNodeKernels(inShape: readonly number[], outShape: readonly number[], p: FftNodeParams): KernelInstance[] {
  return fftSteps(inShape, outShape, p).flatMap((s) => fftKernels(s.kind, s.n));
}

/** A source or destination of a step: a binding plus how its elements are addressed. */
export interface FftOperand {
  binding: FftBinding;
  base: number;
  strides: readonly number[];
}

/**
 * Encodes an FFT node: each 1-D step reads the previous one's result (the first reads `input`
 * with its strides) and writes row-contiguous complex64 scratch, the last step the output.
 */
export function encodeFftNode(d: FftDispatcher, input: FftOperand, output: FftOperand, inShape: readonly number[], outShape: readonly number[], p: FftNodeParams): void {
  const steps = fftSteps(inShape, outShape, p);
  let src = input;
  steps.forEach((s, i) => {
    const lastStep = i === steps.length - 1;
    const dst: FftOperand = lastStep
      ? output
      : { binding: { buffer: d.temporary(8 * s.dst.reduce((a, b) => a * b, 1)), offset: 0 }, base: 0, strides: rowMajorStrides(s.dst) };
    const without = (xs: readonly number[]) => xs.filter((_, k) => k !== s.axis);
    const lineShape = without(s.src);
    encodeFft(d, {
      kind: s.kind,
      n: s.n,
      nIn: s.src[s.axis]!,
      nOut: s.dst[s.axis]!,
      lines: lineShape.reduce((a, b) => a * b, 1),
      lineShape,
      inLineStrides: without(src.strides),
      outLineStrides: without(dst.strides),
      inBase: src.base,
      outBase: dst.base,
      inStride: src.strides[s.axis]!,
      outStride: dst.strides[s.axis]!,
      sign: p.inverse ? 1 : -1,
      scale: p.inverse ? 1 / s.n : 1,
      input: src.binding,
      output: dst.binding,
    });
    src = dst;
  });
}

registerGpu(FFT, {
  kind: "kernel",
  kernels: (node) => fftNodeKernels(node.inputs[0]!.shape, node.outputs[0]!.shape, node.params),
  encode(enc, node) {
    const a = node.inputs[0]!, out = node.outputs[0]!;
    const i = enc.input(a, 0), o = enc.output(out, 1);
    if (out.size === 0 || a.size === 0) return;
    const trace = { primitives: ["FFT"], inputs: [a], outputs: [out], layout: i.rowContiguous ? "contiguous" : "strided", precision: "IEEE fp32 (float64 twiddle tables)" };
    encodeFftNode(
      { dispatch: (d) => enc.dispatch(d, tracing() ? trace : null), temporary: (bytes) => enc.temporary(bytes) },
      { binding: i.binding, base: i.base, strides: i.strides },
      { binding: o.binding, base: o.base, strides: o.strides },
      a.shape, out.shape, node.params,
    );
  },
});
