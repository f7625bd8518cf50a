// mg.quantize, mg.dequantize, mg.quantizedMatmul and mg.gatherQmm: MLX 0.32.4's signatures,
// validation and dtype rules (mlx/ops.cpp), on both devices. Packed layouts and roundings are
// MLX's bit for bit (the CPU backend's quantize.ts, tested against MLX's own outputs).
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { bfloat16, type Dtype, float32, float64, isFloating, promoteTypes, resultType, uint32, uint8 } from "../dtype.ts";
import { makeNode } from "../graph.ts";
import { Dequantize, GatherQMM, Quantize, QuantizedMatmul } from "../primitives/quantized.ts";
import { broadcastShapes, formatShape } from "../shape.ts";
import { defaultQuantizationParams, QUANTIZATION_MODES, type QuantizationMode } from "../primitives/quantized.ts";
import { type ArrayInput, type StreamOptions, toArray } from "./convert.ts";
import { arange } from "./creation.ts";
import { astype } from "./elementwise.ts";
import { take } from "./indexing.ts";
import { contiguous } from "./movement.ts";
import { broadcastArrays, broadcastTo, flatten, reshape } from "./shape.ts";
import { bindArgs } from "../options.ts";

export type { QuantizationMode };

function parseMode(op: string, m: unknown): QuantizationMode {
  const mode = (m ?? "affine") as QuantizationMode;
  if (!QUANTIZATION_MODES.includes(mode)) {
    throw new Error(`[${op}] Invalid quantization mode '${String(m)}'; expected one of ${QUANTIZATION_MODES.map((x) => `'${x}'`).join(", ")}.`);
  }
  return mode;
}

function params(op: string, mode: QuantizationMode, groupSize: unknown, bits: unknown): { groupSize: number; bits: number } {
  const d = defaultQuantizationParams(mode);
  const gs = (groupSize as number | null | undefined) ?? d.groupSize;
  const b = (bits as number | null | undefined) ?? d.bits;
  if (mode === "affine") {
    if (gs !== 32 && gs !== 64 && gs !== 128) throw new Error(`[${op}] The requested group size ${gs} is not supported. The supported group sizes are 32, 64, and 128.`);
    if (!Number.isInteger(b) || b < 2 || b > 8 || b === 7) throw new Error(`[${op}] The requested number of bits ${b} is not supported. The supported bits are 2, 3, 4, 5, 6 and 8.`);
  } else {
    const egs = mode === "nvfp4" ? 16 : 32, eb = mode === "mxfp8" ? 8 : 4;
    if (gs !== egs) throw new Error(`[${op}] ${mode} quantization requires group size ${egs} but got ${gs}.`);
    if (b !== eb) throw new Error(`[${op}] ${mode} quantization requires bits to be ${eb} but got ${b}.`);
  }
  return { groupSize: gs, bits: b };
}

function globalScaleArg(op: string, mode: QuantizationMode, g: unknown): MgArray | null {
  if (g === undefined || g === null) return null;
  if (mode !== "nvfp4") throw new Error(`[${op}] Global scale is only supported for 'nvfp4' quantization mode.`);
  const a = toArray(g as ArrayInput, op);
  if (a.size !== 1) throw new Error(`[${op}] Global scale must be a scalar but got shape ${formatShape(a.shape)}.`);
  if (a.dtype !== float32) throw new TypeError(`[${op}] Global scale must have dtype float32 but got ${a.dtype.name}.`);
  return reshape(a, []);
}

/**
 * Quantizes the last axis in groups, as mx.quantize(w, group_size=None, bits=None,
 * mode='affine', *, global_scale=None): [wq (uint32), scales, biases] for affine (scales and
 * biases in w's dtype), [wq, scales (uint8)] for mxfp4, mxfp8 and nvfp4.
 * @example
 * mg.quantize(mg.ones([2, 64]), { groupSize: 64, bits: 4 }).map((a) => a.shape)
 */
export function quantize(w: ArrayInput, ...rest: unknown[]): MgArray[] {
  const op = "quantize";
  const x = toArray(w, op);
  const p = bindArgs(op, rest, [{ name: "groupSize" }, { name: "bits" }, { name: "mode" }, { name: "globalScale", keywordOnly: true }]);
  const mode = parseMode(op, p.mode);
  const { groupSize, bits } = params(op, mode, p.groupSize, p.bits);
  if (!isFloating(x.dtype)) throw new TypeError(`[quantize] Only real floating types can be quantized but w has type ${x.dtype.name}.`);
  if (x.ndim < 2) throw new Error(`[quantize] The matrix to be quantized must have at least 2 dimension but it has only ${x.ndim}.`);
  if (x.shape[x.ndim - 1]! % groupSize !== 0) {
    throw new Error(`[quantize] The last dimension of the matrix needs to be divisible by the quantization group size ${groupSize}. However the provided matrix has shape ${formatShape(x.shape)}`);
  }
  if (mode === "affine" && x.dtype === float64) {
    throw new TypeError("[quantize] Affine quantization supports float16, bfloat16 and float32 inputs (MLX's kernel), not float64.");
  }
  const g = globalScaleArg(op, mode, p.globalScale);
  const stream = resolveStream(p.stream);
  const inputs = [contiguous(x, false, { stream: p.stream })];
  if (g) inputs.push(g);
  return makeNode(Quantize, inputs, { mode, groupSize, bits }, stream);
}

/**
 * Inverse of quantize, as mx.dequantize(w, scales, biases=None, group_size=None, bits=None,
 * mode='affine', global_scale=None, dtype=None): affine results in the scales' dtype (or
 * `dtype`), the floating-point modes in bfloat16 (or `dtype`; float32 with a global scale, as
 * MLX's arithmetic promotes).
 * @example
 * const [w, scales, biases] = mg.quantize(mg.ones([1, 64]), 64, 4);
 * mg.max(mg.abs(mg.subtract(mg.dequantize(w!, scales!, biases!, 64, 4), 1)))
 */
export function dequantize(w: ArrayInput, scales: ArrayInput, ...rest: unknown[]): MgArray {
  const op = "dequantize";
  const p = bindArgs(op, rest, [{ name: "biases" }, { name: "groupSize" }, { name: "bits" }, { name: "mode" }, { name: "globalScale" }, { name: "dtype" }]);
  const wq = toArray(w, op), s = toArray(scales, op);
  const b = p.biases === undefined || p.biases === null ? null : toArray(p.biases as ArrayInput, op);
  const mode = parseMode(op, p.mode);
  const outDtype = p.dtype as Dtype | null | undefined;
  if (outDtype && !isFloating(outDtype)) throw new TypeError(`[dequantize] Only real floating types are supported but output dtype == ${outDtype.name}.`);
  let dtype: Dtype;
  if (mode === "affine") {
    if (!b) throw new Error("[dequantize] Biases must be provided for affine quantization.");
    const rt = resultType(s, b);
    if (!isFloating(rt)) throw new TypeError(`[dequantize] Only real floating types are supported but scales.dtype() == ${s.dtype.name} and biases.dtype() == ${b.dtype.name}.`);
    dtype = outDtype ?? rt;
  } else {
    if (s.dtype !== uint8) throw new TypeError(`[dequantize] Scale type must be uint8 but received type ${s.dtype.name}.`);
    if (b) throw new Error(`[dequantize] Biases must be null for quantization mode '${mode}'.`);
    dtype = outDtype ?? bfloat16;
  }
  const d = defaultQuantizationParams(mode);
  const groupSize = (p.groupSize as number | null | undefined) ?? d.groupSize;
  const bits = (p.bits as number | null | undefined) ?? d.bits;
  if (!(bits > 0)) throw new Error(`[dequantize] Invalid value for bits: ${bits}`);
  if (!(groupSize > 0)) throw new Error(`[dequantize] Invalid value for group_size: ${groupSize}`);
  if (wq.dtype !== uint32) throw new TypeError("[dequantize] The matrix should be given as a uint32");
  if (wq.ndim < 2) throw new Error(`[dequantize] The matrix to be dequantized must have at least 2 dimension but it has only ${wq.ndim}.`);
  if (mode !== "affine") params(op, mode, groupSize, bits);
  const g = globalScaleArg(op, mode, p.globalScale);
  const ws = wq.shape.slice(0, -1), ss = s.shape.slice(0, -1);
  const sameLead = wq.ndim === s.ndim && ws.every((v, i) => v === ss[i]) && (!b || (b.ndim === s.ndim && b.shape.every((v, i) => v === s.shape[i])));
  const what = mode === "affine" ? "scales and biases" : "scales";
  if (!sameLead) throw new Error(`[dequantize] Shape of ${what} does not match the matrix`);
  if ((wq.shape[wq.ndim - 1]! * 32) / bits !== s.shape[s.ndim - 1]! * groupSize) {
    throw new Error(`[dequantize] Shape of ${what} does not match the matrix given the quantization parameters. Provided matrix of shape ${formatShape(wq.shape)} and scales of shape ${formatShape(s.shape)} with group_size=${groupSize} and bits=${bits}.`);
  }
  const opts: StreamOptions = { stream: p.stream };
  const stream = resolveStream(p.stream);
  if (mode === "affine") {
    const rt = resultType(s, b!);
    const out = makeNode(Dequantize, [contiguous(wq, false, opts), contiguous(astype(s, rt, opts), false, opts), contiguous(astype(b!, rt, opts), false, opts)], { mode, groupSize, bits, dtype: rt }, stream)[0]!;
    return dtype === rt ? out : astype(out, dtype, opts);
  }
  const inputs = [contiguous(wq, false, opts), contiguous(s, false, opts)];
  if (g) inputs.push(g);
  return makeNode(Dequantize, inputs, { mode, groupSize, bits, dtype: g ? float32 : dtype }, stream)[0]!;
}

interface QmmSetup {
  x: MgArray;
  w: MgArray;
  s: MgArray;
  b: MgArray | null;
  mode: QuantizationMode;
  groupSize: number;
  bits: number;
  transpose: boolean;
  dtype: Dtype;
  N: number;
}

function setupQmm(op: string, xIn: ArrayInput, wIn: ArrayInput, sIn: ArrayInput, p: Record<string, unknown>): QmmSetup {
  const x = toArray(xIn, op), w = toArray(wIn, op), s = toArray(sIn, op);
  const b = p.biases === undefined || p.biases === null ? null : toArray(p.biases as ArrayInput, op);
  const mode = parseMode(op, p.mode);
  const transpose = (p.transpose as boolean | undefined) ?? true;
  let dtype: Dtype;
  if (mode === "affine") {
    if (!b) throw new Error(`[${op}] Biases must be provided for affine quantization.`);
    const rt = resultType(s, b);
    if (!isFloating(rt)) throw new TypeError(`[${op}] Only real floating types are supported but scales.dtype() == ${s.dtype.name} and biases.dtype() == ${b.dtype.name}.`);
    dtype = promoteTypes(x.dtype, rt);
  } else {
    if (s.dtype !== uint8) throw new TypeError(`[${op}] Scale type must be uint8 but received type ${s.dtype.name}.`);
    if (b) throw new Error(`[${op}] Biases must be null for quantization mode '${mode}'.`);
    dtype = x.dtype;
  }
  const d = defaultQuantizationParams(mode);
  const groupSize = (p.groupSize as number | null | undefined) ?? d.groupSize;
  const bits = (p.bits as number | null | undefined) ?? d.bits;
  if (mode !== "affine") params(op, mode, groupSize, bits);
  if (w.dtype !== uint32) throw new TypeError(`[${op}] The weight matrix should be uint32 but received ${w.dtype.name}`);
  if (b && (b.ndim !== s.ndim || !b.shape.every((v, i) => v === s.shape[i]))) {
    throw new Error(`[${op}] Scales and biases should have the same shape. Received scales with shape ${formatShape(s.shape)} and biases with ${formatShape(b.shape)}`);
  }
  if (w.ndim < 2 || s.ndim !== w.ndim || !w.shape.slice(0, -2).every((v, i) => v === s.shape[i])) {
    throw new Error(`[${op}] Weight and scales should have the same batch shape. Received weight with shape ${formatShape(w.shape)}, scales with ${formatShape(s.shape)}.`);
  }
  if ((w.shape[w.ndim - 1]! * 32) / bits !== s.shape[s.ndim - 1]! * groupSize || s.shape[s.ndim - 2] !== w.shape[w.ndim - 2]) {
    throw new Error(`[${op}] The shapes of the weight and scales are incompatible based on bits and group_size. w.shape() == ${formatShape(w.shape)} and scales.shape() == ${formatShape(s.shape)} with group_size=${groupSize} and bits=${bits}`);
  }
  const inner = transpose ? (w.shape[w.ndim - 1]! * 32) / bits : w.shape[w.ndim - 2]!;
  const outer = transpose ? w.shape[w.ndim - 2]! : (w.shape[w.ndim - 1]! * 32) / bits;
  if (x.ndim < 1 || x.shape[x.ndim - 1] !== inner) {
    throw new Error(`[${op}] Last dimension of first input with shape (..., ${x.shape[x.ndim - 1]}) does not match the expanded quantized matrix (${inner}, ${outer}) computed from shape ${formatShape(w.shape)} with group_size=${groupSize}, bits=${bits} and transpose=${transpose ? "true" : "false"}`);
  }
  if (!isFloating(dtype)) throw new TypeError(`[${op}] Only real floating types are supported but x.dtype() == ${x.dtype.name}.`);
  // float64 products run on the CPU (MLX refuses them; gradcheck's float64 side needs them).
  return { x, w, s, b, mode, groupSize, bits, transpose, dtype, N: outer };
}

function runQmm(q: QmmSetup, opts: StreamOptions): MgArray {
  const stream = resolveStream(opts.stream);
  let x = astype(q.x, q.dtype, opts);
  let { w, s, b } = q;
  if (q.mode === "affine") {
    s = astype(s, q.dtype, opts);
    b = astype(b!, q.dtype, opts);
  }
  const outShape = [...x.shape.slice(0, -1), q.N];
  if (w.ndim > 2) {
    if (x.ndim < 3) {
      throw new Error(`[quantized_matmul] The weights have batch axes ${formatShape(w.shape.slice(0, -2))} but x of shape ${formatShape(x.shape)} has none; give x matching batch axes.`);
    }
    // Batched weights: broadcast the batch axes of x and of the weights together.
    const batch = broadcastShapes([x.shape.slice(0, -2), w.shape.slice(0, -2)], "quantized_matmul");
    x = broadcastTo(x, [...batch, ...x.shape.slice(-2)], opts);
    w = broadcastTo(w, [...batch, ...w.shape.slice(-2)], opts);
    s = broadcastTo(s, [...batch, ...s.shape.slice(-2)], opts);
    if (b) b = broadcastTo(b, [...batch, ...b.shape.slice(-2)], opts);
    const inputs = [contiguous(x, false, opts), w, s, ...(b ? [b] : [])];
    return makeNode(QuantizedMatmul, inputs, { mode: q.mode, groupSize: q.groupSize, bits: q.bits, transpose: q.transpose }, stream)[0]!;
  }
  // One weight matrix: every leading axis of x is a row.
  const rows = x.ndim === 1 ? reshape(x, [1, x.shape[0]!], opts) : flatten(x, 0, -2, opts);
  const inputs = [contiguous(rows, false, opts), contiguous(w, false, opts), contiguous(s, false, opts), ...(b ? [contiguous(b, false, opts)] : [])];
  const out = makeNode(QuantizedMatmul, inputs, { mode: q.mode, groupSize: q.groupSize, bits: q.bits, transpose: q.transpose }, stream)[0]!;
  return reshape(out, outShape, opts);
}

/**
 * x times the dequantised weights without materializing them, as mx.quantized_matmul(x, w,
 * scales, biases=None, transpose=True, group_size=None, bits=None, mode='affine').
 * @example
 * const [w, scales, biases] = mg.quantize(mg.ones([2, 64]), 64, 4);
 * mg.quantizedMatmul(mg.ones([1, 64]), w!, scales!, biases!, true, 64, 4)
 */
export function quantizedMatmul(x: ArrayInput, w: ArrayInput, scales: ArrayInput, ...rest: unknown[]): MgArray {
  const op = "quantized_matmul";
  const p = bindArgs(op, rest, [{ name: "biases" }, { name: "transpose" }, { name: "groupSize" }, { name: "bits" }, { name: "mode" }]);
  return runQmm(setupQmm(op, x, w, scales, p), { stream: p.stream });
}

/**
 * Quantized matmul with gathered batches (mixture-of-experts), as mx.gather_qmm(x, w, scales,
 * biases=None, lhs_indices=None, rhs_indices=None, transpose=True, group_size=None, bits=None,
 * mode='affine', global_scale=None, *, sorted_indices=False): out[i] = x[lhs[i]] @ W[rhs[i]].
 * One node; its kernels read the selected experts in place (sorted_indices is only a hint).
 * @example
 * const [w, scales, biases] = mg.quantize(mg.ones([3, 2, 64]), 64, 4);
 * mg.gatherQmm(mg.ones([1, 64]), w!, scales!, biases!, { rhsIndices: mg.array([2], mg.uint32), groupSize: 64, bits: 4 }).shape
 */
export function gatherQmm(x: ArrayInput, w: ArrayInput, scales: ArrayInput, ...rest: unknown[]): MgArray {
  const op = "gather_qmm";
  const p = bindArgs(op, rest, [
    { name: "biases" }, { name: "lhsIndices" }, { name: "rhsIndices" }, { name: "transpose" }, { name: "groupSize" },
    { name: "bits" }, { name: "mode" }, { name: "globalScale" }, { name: "sortedIndices", keywordOnly: true },
  ]);
  const opts: StreamOptions = { stream: p.stream };
  const q = setupQmm(op, x, w, scales, p);
  if (p.globalScale !== undefined && p.globalScale !== null) {
    throw new Error("[gather_qmm] global_scale is not supported yet (nvfp4 weights quantized without one are).");
  }
  if ((p.lhsIndices === undefined || p.lhsIndices === null) && (p.rhsIndices === undefined || p.rhsIndices === null)) return runQmm(q, opts);
  const indices = (given: unknown, a: MgArray, what: string): MgArray => {
    if (given !== undefined && given !== null) {
      const idx = toArray(given as ArrayInput, op);
      if (idx.dtype.kind !== "i" && idx.dtype.kind !== "u") throw new TypeError(`[${op}] ${what} must be integers; received ${idx.dtype.name}.`);
      return idx;
    }
    const lead = a.shape.slice(0, -2);
    return reshape(arange(0, lead.reduce((m, v) => m * v, 1), 1, uint32, opts), lead, opts);
  };
  const [lhs, rhs] = broadcastArrays(indices(p.lhsIndices, q.x, "lhs_indices"), indices(p.rhsIndices, q.w, "rhs_indices"), opts);
  // One node: x and the experts flattened to one batch axis each, the index pairs to one list.
  const flatBatch = (a: MgArray) => reshape(a, [a.shape.slice(0, -2).reduce((m, v) => m * v, 1), ...a.shape.slice(-2)], opts);
  let x3 = astype(q.x, q.dtype, opts);
  x3 = q.x.ndim === 1 ? reshape(x3, [1, 1, q.x.shape[0]!], opts) : flatBatch(x3);
  const w3 = flatBatch(q.w);
  let s3 = flatBatch(q.s);
  let b3 = q.b ? flatBatch(q.b) : null;
  if (q.mode === "affine") {
    s3 = astype(s3, q.dtype, opts);
    b3 = astype(b3!, q.dtype, opts);
  }
  const flatIdx = (a: MgArray) => astype(flatten(a, 0, -1, opts), uint32, opts);
  const inputs = [contiguous(x3, false, opts), contiguous(w3, false, opts), contiguous(s3, false, opts), ...(b3 ? [contiguous(b3, false, opts)] : []), contiguous(flatIdx(lhs!), false, opts), contiguous(flatIdx(rhs!), false, opts)];
  const out = makeNode(GatherQMM, inputs, { mode: q.mode, groupSize: q.groupSize, bits: q.bits, transpose: q.transpose }, resolveStream(opts.stream))[0]!;
  return reshape(out, [...lhs!.shape, x3.shape[x3.ndim - 2]!, q.N], opts);
}
