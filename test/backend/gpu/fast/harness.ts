// Drives the mg.fast kernels directly through the runtime (no graph): uploads float64 values in a
// dtype, describes strided views of them, runs encode functions into one command batch, and
// compares results with float64 references.
import { expect } from "bun:test";
import { bfloat16, bfloat16BitsFromNumber, bool_, type Dtype, float16, float32, int32, numberFromBfloat16Bits } from "../../../../ts/core/dtype.ts";
import type { KernelOutput, KernelSink, KernelView } from "../../../../ts/backend/gpu/fast/common.ts";
import { type NativeBuffer, runtime } from "../../../../ts/backend/runtime.ts";
import { mulberry32 } from "../../../../ts/testing/rng.ts";

const rt = runtime();

/** Deterministic standard normals (mulberry32 + Box–Muller). */
export function normals(count: number, seed: number, scale = 1): Float64Array {
  const uniform = mulberry32(seed);
  const out = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const u = Math.max(uniform(), 1e-12);
    out[i] = scale * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * uniform());
  }
  return out;
}

/** A value rounded to a dtype, as a number. */
export function roundTo(x: number, d: Dtype): number {
  if (d === float32) return Math.fround(x);
  if (d === float16) return Math.f16round(x);
  if (d === bfloat16) return numberFromBfloat16Bits(bfloat16BitsFromNumber(x));
  return x;
}

export function rounded(values: ArrayLike<number>, d: Dtype): Float64Array {
  return Float64Array.from(values, (v) => roundTo(v, d));
}

/** A device buffer holding `values` in dtype d. */
export function upload(values: ArrayLike<number>, d: Dtype): NativeBuffer {
  const buffer = rt.newBuffer(Math.max(values.length * d.size, 4));
  const ab = buffer.arrayBuffer;
  if (d === float32) new Float32Array(ab).set(Array.from(values));
  else if (d === float16) new Float16Array(ab).set(Array.from(values));
  else if (d === bfloat16) new Uint16Array(ab).set(Array.from(values, bfloat16BitsFromNumber));
  else if (d === int32) new Int32Array(ab).set(Array.from(values));
  else if (d === bool_) new Uint8Array(ab).set(Array.from(values, (v) => (v ? 1 : 0)));
  else throw new Error(`upload: ${d.name}`);
  return buffer;
}

export function download(buffer: NativeBuffer, count: number, d: Dtype): Float64Array {
  const ab = buffer.arrayBuffer;
  if (d === float32) return Float64Array.from(new Float32Array(ab, 0, count));
  if (d === float16) return Float64Array.from(new Float16Array(ab, 0, count));
  if (d === bfloat16) return Float64Array.from(new Uint16Array(ab, 0, count), numberFromBfloat16Bits);
  throw new Error(`download: ${d.name}`);
}

const owned: NativeBuffer[] = [];

/** Row-major strides of a shape. */
export function rowMajor(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i]!;
  }
  return s;
}

/** A row-major array of `values` (already in the dtype's range) as a kernel view. */
export function dense(values: ArrayLike<number>, shape: readonly number[], d: Dtype): KernelView {
  const buffer = upload(values, d);
  owned.push(buffer);
  return { buffer, offset: 0, length: buffer.byteLength, base: 0, shape, strides: rowMajor(shape), dtype: d };
}

/**
 * The same logical array stored transposed by `perm` (storage axis k holds logical axis perm[k]),
 * so the view's strides are not row-major: kernels must read it in place.
 */
export function permuted(values: ArrayLike<number>, shape: readonly number[], perm: readonly number[], d: Dtype): KernelView {
  const storedShape = perm.map((p) => shape[p]!);
  const storedStrides = rowMajor(storedShape);
  const strides = new Array<number>(shape.length);
  perm.forEach((p, k) => (strides[p] = storedStrides[k]!));
  const stored = new Float64Array(values.length);
  const logical = rowMajor(shape);
  for (let i = 0; i < values.length; i++) {
    let off = 0;
    let rem = i;
    for (let a = 0; a < shape.length; a++) {
      const idx = Math.floor(rem / logical[a]!);
      rem -= idx * logical[a]!;
      off += idx * strides[a]!;
    }
    stored[off] = values[i]!;
  }
  const buffer = upload(stored, d);
  owned.push(buffer);
  return { buffer, offset: 0, length: buffer.byteLength, base: 0, shape, strides, dtype: d };
}

/** A broadcast view: `values` of shape `small` seen as `shape` (stride 0 where small has 1). */
export function broadcast(values: ArrayLike<number>, small: readonly number[], shape: readonly number[], d: Dtype): KernelView {
  const buffer = upload(values, d);
  owned.push(buffer);
  const rm = rowMajor(small);
  const strides = shape.map((_, i) => (small[i] === 1 ? 0 : rm[i]!));
  return { buffer, offset: 0, length: buffer.byteLength, base: 0, shape, strides, dtype: d };
}

export function output(shape: readonly number[], d: Dtype): KernelOutput {
  const count = shape.reduce((p, s) => p * s, 1);
  const buffer = rt.newBuffer(Math.max(count * d.size, 4));
  owned.push(buffer);
  return { buffer, offset: 0, length: count * d.size, shape, dtype: d };
}

export function read(o: KernelOutput): Float64Array {
  return download(o.buffer, o.shape.reduce((p, s) => p * s, 1), o.dtype);
}

export interface Recorded {
  kernel: string;
  layout: string;
  precision: string;
  grid: number[];
  threadgroup: number[];
}

/** Runs `encode` into one batch (checked mode when MG_SIM_CHECK=1), waits, and returns what was dispatched. */
export function run(encode: (sink: KernelSink) => void): Recorded[] {
  const batch = rt.newBatch();
  const temps: NativeBuffer[] = [];
  const recorded: Recorded[] = [];
  const sink: KernelSink = {
    dispatch(d, facts) {
      batch.dispatch(d);
      const g = typeof d.grid === "number" ? [d.grid] : [...d.grid];
      const t = typeof d.threadgroup === "number" ? [d.threadgroup] : [...d.threadgroup];
      recorded.push({ kernel: d.pipeline.name, layout: facts.layout, precision: facts.precision, grid: g as number[], threadgroup: t as number[] });
    },
    temporary(bytes) {
      const b = rt.newBuffer(Math.max(bytes, 4));
      temps.push(b);
      return b;
    },
  };
  try {
    encode(sink);
    batch.submit().wait();
  } finally {
    for (const b of temps) b.release();
  }
  return recorded;
}

/** Releases every buffer the helpers created (call in afterAll / afterEach). */
export function releaseAll(): void {
  for (const b of owned.splice(0)) b.release();
}

/** Per-dtype bound on |got − ref| / (|ref| + floor) for results rounded once or twice to d. */
export function relTolerance(d: Dtype): number {
  if (d === float32) return 2e-5;
  if (d === float16) return 2 ** -9;
  return 2 ** -6; // bfloat16
}

/** Asserts every element within rtol·(|ref| + atol); NaN matches NaN and infinities match exactly. */
export function expectNear(got: ArrayLike<number>, ref: ArrayLike<number>, rtol: number, atol: number, what: string): void {
  expect(got.length, `${what}: length`).toBe(ref.length);
  let worst = 0;
  let at = -1;
  for (let i = 0; i < ref.length; i++) {
    const g = got[i]!;
    const r = ref[i]!;
    if (Number.isNaN(r) || !Number.isFinite(r)) {
      if (!(Object.is(g, r) || (Number.isNaN(g) && Number.isNaN(r)))) {
        throw new Error(`${what}: element ${i} is ${g}, expected ${r}`);
      }
      continue;
    }
    const err = Math.abs(g - r) / (Math.abs(r) + atol);
    if (!(err <= worst)) {
      worst = Number.isNaN(err) ? Infinity : err;
      at = i;
    }
  }
  if (worst > rtol) throw new Error(`${what}: worst relative error ${worst.toExponential(3)} > ${rtol.toExponential(3)} at element ${at} (got ${got[at]}, expected ${ref[at]})`);
}
