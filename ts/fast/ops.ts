// mg.fast's fused ops with MLX 0.32.4's signatures: rmsNorm, layerNorm, rope,
// scaledDotProductAttention, crossEntropy, and sdpaPlan (which kernel attention will run, before
// running it). Ops validate and promote as MLX does (mlx/fast.cpp), read the precision policy and
// build one fused primitive node (ts/fast/primitives.ts). An input combination no fused kernel
// takes runs the unfused composition instead; the trace records why and a one-time warning says
// so (MG_WARN=0 silences it).
import type { MgArray } from "../core/array.ts";
import { resolveStream, type StreamOrDevice } from "../core/device.ts";
import { bool_, type Dtype, float32, floating, integer, int32, issubdtype, promoteTypes, resultType } from "../core/dtype.ts";
import { graphRetained, makeArray, makeNode } from "../core/graph.ts";
import { retain } from "../core/ownership.ts";
import { isOptionsObject, type StreamOptions, toArray, type ArrayInput } from "../core/ops/convert.ts";
import { zeros } from "../core/ops/creation.ts";
import { astype } from "../core/ops/elementwise.ts";
import { broadcastTo } from "../core/ops/shape.ts";
import { formatShape } from "../core/shape.ts";
import { getPrecision, type PrecisionPolicy } from "../core/precision.ts";
import { annotate, warnOnce } from "../core/trace.ts";
import { gpuSdpaPlan, sdpaUnfusedReason, type SdpaProblem } from "../backend/gpu/fast/sdpa.ts";
import { CrossEntropy, LayerNorm, RMSNorm, RoPE, ScaledDotProductAttention, type SdpaParams } from "./primitives.ts";
import "./rules.ts";
import { sdpaUnfused } from "./unfused.ts";

/** Rejects option names the op does not take (MLX's keyword arguments are a closed set). */
function checkOptions(op: string, opts: unknown, known: readonly string[]): Record<string, unknown> {
  if (opts === undefined || opts === null) return {};
  if (!isOptionsObject(opts)) throw new TypeError(`[${op}] expected an options object as the last argument.`);
  for (const k of Object.keys(opts)) {
    if (!known.includes(k)) throw new TypeError(`[${op}] unknown option '${k}' (known: ${known.join(", ")}).`);
  }
  return opts;
}

function checkEps(op: string, eps: unknown): number {
  if (typeof eps !== "number" || Number.isNaN(eps)) throw new TypeError(`[${op}] eps must be a number, got ${typeof eps === "number" ? "NaN" : typeof eps}.`);
  return eps;
}

function streamOf(o: Record<string, unknown>): StreamOptions {
  return o.stream === undefined ? {} : { stream: o.stream as StreamOrDevice | null };
}

// Norms ------------------------------------------------------------------------------------------

function normParam(op: string, name: string, a: ArrayInput | null | undefined, x: MgArray): MgArray | null {
  if (a === null || a === undefined) return null;
  const w = toArray(a, op);
  if (w.ndim !== 1) throw new Error(`[${op}] ${name} must have 1 dimension but has ${w.ndim} dimensions.`);
  if (w.size !== x.shape[x.ndim - 1]) {
    throw new Error(`[${op}] ${name} must have the same size as the last dimension of x but has ${w.size} elements.`);
  }
  return w;
}

function normInput(op: string, a: ArrayInput): MgArray {
  const x = toArray(a, op);
  if (x.ndim === 0) throw new Error(`[${op}] Input must have at least 1 dimension but got input with 0 dimensions.`);
  return x;
}

/**
 * Root-mean-square normalisation over the last axis, as mx.fast.rms_norm:
 * y = x / sqrt(mean(x²) + eps) · weight (weight null: no scaling). Accumulates in float32 (policy
 * accumulate16 may ask for the input type); the output has the type of x and weight promoted.
 * @example
 * mg.fast.rmsNorm(mg.array([[1, 2, 3]], mg.float32), null, 1e-5)
 */
export function rmsNorm(x: ArrayInput, weight: ArrayInput | null, eps: number, opts: StreamOptions = {}): MgArray {
  const o = checkOptions("rms_norm", opts, ["stream"]);
  const xa = normInput("rms_norm", x);
  const w = normParam("rms_norm", "weight", weight, xa);
  checkEps("rms_norm", eps);
  const outType = w ? resultType(xa, w) : xa.dtype;
  if (!issubdtype(outType, floating)) throw new Error(`[rms_norm] Received unsupported type ${outType.name}.`);
  const s = streamOf(o);
  const inputs = [astype(xa, outType, s), ...(w ? [astype(w, outType, s)] : [])];
  return makeArray(RMSNorm, inputs, { eps, hasWeight: !!w, accumulate16: getPrecision().accumulate16 }, resolveStream(s.stream));
}

/**
 * Layer normalisation over the last axis, as mx.fast.layer_norm:
 * y = (x − mean) / sqrt(var + eps) · weight + bias (either may be null).
 * @example
 * mg.fast.layerNorm(mg.array([[1, 2, 3]], mg.float32), null, null, 1e-5)
 */
export function layerNorm(x: ArrayInput, weight: ArrayInput | null, bias: ArrayInput | null, eps: number, opts: StreamOptions = {}): MgArray {
  const o = checkOptions("layer_norm", opts, ["stream"]);
  const xa = normInput("layer_norm", x);
  const w = normParam("layer_norm", "weight", weight, xa);
  const b = normParam("layer_norm", "bias", bias, xa);
  checkEps("layer_norm", eps);
  const outType = w ? (b ? resultType(xa, w, b) : resultType(xa, w)) : xa.dtype;
  if (!issubdtype(outType, floating)) throw new Error(`[layer_norm] Received unsupported type ${outType.name}.`);
  const s = streamOf(o);
  const inputs = [astype(xa, outType, s), ...(w ? [astype(w, outType, s)] : []), ...(b ? [astype(b, outType, s)] : [])];
  return makeArray(LayerNorm, inputs, { eps, hasWeight: !!w, hasBias: !!b, accumulate16: getPrecision().accumulate16 }, resolveStream(s.stream));
}

// RoPE -------------------------------------------------------------------------------------------

/** mg.fast.rope's keyword options (MLX's traditional, base, scale, offset, freqs) and the stream. */
export interface RopeOptions extends StreamOptions {
  traditional: boolean;
  /** The frequency base; null exactly when freqs is given. */
  base: number | null;
  scale: number;
  /** Position of the first token: a number, or an integer array (scalar or one per batch entry). */
  offset: number | ArrayInput;
  freqs?: ArrayInput | null;
}

/**
 * Rotary positional encoding, as mx.fast.rope: x has shape (B, …, T, D); the first `dims`
 * features rotate in pairs (consecutive when traditional, else split halves), the rest pass
 * through. traditional, base, scale and offset are keyword-only and required, as in MLX.
 * @example
 * mg.fast.rope(mg.ones([1, 2, 4]), 4, { traditional: false, base: 10000, scale: 1, offset: 0 })
 */
export function rope(a: ArrayInput, dims: number, opts: RopeOptions): MgArray {
  const o = checkOptions("rope", opts, ["traditional", "base", "scale", "offset", "freqs", "stream"]);
  for (const k of ["traditional", "base", "scale", "offset"]) {
    if (!(k in o)) throw new TypeError(`[rope] missing the keyword argument '${k}' (traditional, base, scale and offset are required, as in MLX).`);
  }
  const s = streamOf(o);
  const x = toArray(a, "rope");
  if (x.ndim < 3) throw new Error(`[rope] Input must have at least 3 dimensions but got input with ${x.ndim} dimensions.`);
  if (!issubdtype(x.dtype, floating)) throw new Error(`[rope] Input must be a floating type but got ${x.dtype.name}.`);
  if (typeof o.traditional !== "boolean") throw new TypeError("[rope] traditional must be a boolean.");
  if (typeof o.scale !== "number") throw new TypeError("[rope] scale must be a number.");
  if (typeof o.offset === "number" && !Number.isInteger(o.offset)) throw new TypeError(`[rope] offset must be an integer, got ${o.offset}.`);
  let offset = toArray(o.offset as ArrayInput, "rope");
  if (offset.ndim > 1) throw new Error(`[rope] offset must have at most one dimension but has shape ${formatShape(offset.shape)}.`);
  if (offset.size !== 1 && offset.size !== x.shape[0]) {
    throw new Error(`[rope] offset must be a scalar or vector with ${x.shape[0]} elements but has shape ${formatShape(offset.shape)}.`);
  }
  if (!issubdtype(offset.dtype, integer)) throw new Error(`[rope] offset must be an integer but got type ${offset.dtype.name}.`);
  if (offset.dtype !== int32) offset = astype(offset, int32, s);
  if (!Number.isInteger(dims) || dims <= 0) throw new Error(`[rope] dims must be positive but got ${dims}.`);
  if (dims % 2 !== 0) throw new Error(`[rope] dims must be even but got ${dims}.`);
  if (dims > x.shape[x.ndim - 1]!) throw new Error(`[rope] dims must not exceed the input's last dimension (${x.shape[x.ndim - 1]}) but got ${dims}.`);
  const freqsIn = o.freqs ?? null;
  let freqs: MgArray | null = null;
  if (freqsIn !== null) {
    if (o.base !== null) throw new Error("[rope] Only one of base or freqs can have a value.");
    freqs = astype(toArray(freqsIn as ArrayInput, "rope"), float32, s);
    if (freqs.ndim !== 1 || freqs.shape[0] !== dims / 2) {
      throw new Error(`[rope] freqs must be one dimensional with size ${dims / 2} but got shape ${formatShape(freqs.shape)}.`);
    }
  } else if (o.base === null) {
    throw new Error("[rope] Neither base nor freqs has a value.");
  } else if (typeof o.base !== "number") {
    throw new TypeError("[rope] base must be a number or null.");
  }
  const params = { dims, traditional: o.traditional, base: (o.base as number | null) ?? 1, scale: o.scale, forward: true, hasFreqs: !!freqs };
  return makeArray(RoPE, [x, offset, ...(freqs ? [freqs] : [])], params, resolveStream(s.stream));
}

// Attention --------------------------------------------------------------------------------------

/** mg.fast.scaledDotProductAttention's keyword options (MLX's scale, mask, sinks, force_fused) and the stream. */
export interface SdpaOptions extends StreamOptions {
  /** Multiplies q·kᵀ (typically 1/sqrt(D)). Required, as in MLX. */
  scale: number;
  /** null, "causal" (lower-right aligned), or a boolean or additive array broadcastable to (B, Hq, qL, kL). */
  mask?: null | "causal" | ArrayInput;
  /** One attention-sink logit per query head. */
  sinks?: ArrayInput | null;
  /** Refuse to run unfused: throw if no fused kernel takes these inputs (MLX's force_fused). */
  forceFused?: boolean;
}

/** Inputs checked, cast and broadcast as MLX's scaled_dot_product_attention does. */
interface SdpaCall {
  q: MgArray;
  k: MgArray;
  v: MgArray;
  mask: MgArray | null;
  sinks: MgArray | null;
  params: SdpaParams;
  problem: SdpaProblem;
  stream: StreamOptions;
}

type Shaped = { shape: readonly number[]; dtype: Dtype };

function sdpaPrepare(qIn: ArrayInput, kIn: ArrayInput, vIn: ArrayInput, opts: SdpaOptions, op: string): SdpaCall {
  const tag = "[scaled_dot_product_attention]";
  const o = checkOptions(op, opts, ["scale", "mask", "sinks", "forceFused", "stream"]);
  if (typeof o.scale !== "number") throw new TypeError(`${tag} scale must be given as a number (it is keyword-only and required, as in MLX).`);
  const s = streamOf(o);
  const q0 = toArray(qIn, op);
  const k0 = toArray(kIn, op);
  const v0 = toArray(vIn, op);
  for (const t of [q0, k0, v0]) {
    if (t.ndim !== 4) throw new Error(`${tag} input with shape ${formatShape(t.shape)} expected to be rank 4`);
  }
  let maskMode: "none" | "causal" | "array" = "none";
  let maskArr: MgArray | null = null;
  const mask = o.mask ?? null;
  if (typeof mask === "string") {
    if (mask !== "causal") throw new Error(`${tag} invalid mask option '${mask}'. Must be 'causal', or an array.`);
    maskMode = "causal";
  } else if (mask !== null) {
    maskArr = toArray(mask as ArrayInput, op);
    maskMode = "array";
    if (maskArr.ndim > 4) throw new Error(`${tag} the mask with shape ${formatShape(maskArr.shape)} expected to have at most rank 4.`);
  }
  const B = q0.shape[0]!;
  for (const t of [k0, v0]) {
    if (t.shape[0] !== B) throw new Error(`${tag} mismatching batch dimension for input with shape ${formatShape(t.shape)}.`);
  }
  if (q0.shape[3] !== k0.shape[3]) {
    throw new Error(`${tag} query, keys expected to have matching last dimension; found query shape ${formatShape(q0.shape)} for keys shape ${formatShape(k0.shape)}.`);
  }
  if (k0.shape[1] !== v0.shape[1]) {
    throw new Error(`${tag} keys, values expected to have matching n_kv_heads; found keys with n_heads ${k0.shape[1]} for values with n_heads ${v0.shape[1]}.`);
  }
  if (k0.shape[2] !== v0.shape[2]) {
    throw new Error(`${tag} keys, values expected to have matching sequence length; found ${k0.shape[2]} and ${v0.shape[2]}.`);
  }
  const nQ = q0.shape[1]!;
  const nKv = k0.shape[1]!;
  if (nKv === 0 || nQ % nKv !== 0) throw new Error(`${tag} n_heads must be a multiple of n_kv_heads, found n_heads ${nQ} for n_kv_heads ${nKv}.`);
  const finalType = resultType(q0, k0, v0);
  if (!issubdtype(finalType, floating)) throw new Error(`${tag} Received unsupported type ${finalType.name}.`);
  const q = astype(q0, finalType, s);
  const k = astype(k0, finalType, s);
  const v = astype(v0, finalType, s);
  let maskKind: SdpaParams["mask"] = maskMode === "causal" ? "causal" : "none";
  if (maskArr) {
    if (promoteTypes(maskArr.dtype, finalType) !== finalType) throw new Error(`${tag} Mask type must promote to output type ${finalType.name}.`);
    maskKind = maskArr.dtype === bool_ ? "bool" : "additive";
    if (maskKind === "additive") maskArr = astype(maskArr, finalType, s);
    const full = [B, nQ, q.shape[2]!, k.shape[2]!];
    try {
      maskArr = broadcastTo(maskArr, full, s);
    } catch {
      throw new Error(`${tag} the mask with shape ${formatShape(maskArr.shape)} cannot be broadcast to (B, N_q, T_q, T_kv) = ${formatShape(full)}.`);
    }
  }
  let sinks: MgArray | null = null;
  if (o.sinks !== undefined && o.sinks !== null) {
    sinks = toArray(o.sinks as ArrayInput, op);
    if (promoteTypes(sinks.dtype, finalType) !== finalType) throw new Error(`${tag} Type of sinks must promote to output type ${finalType.name}.`);
    if (sinks.ndim !== 1 || sinks.shape[0] !== nQ) throw new Error(`${tag} Received invalid shape for sinks ${formatShape(sinks.shape)}.`);
    sinks = astype(sinks, finalType, s);
  }
  const policy = getPrecision();
  const params: SdpaParams = { scale: o.scale, mask: maskKind, hasSinks: !!sinks, accumulate16: policy.accumulate16, matmul: policy.matmul, stats: graphRetained() };
  const problem: SdpaProblem = { B, Hq: nQ, Hkv: nKv, qL: q.shape[2]!, kL: k.shape[2]!, Dk: q.shape[3]!, Dv: v.shape[3]!, dtype: finalType, mask: maskKind, sinks: !!sinks };
  return { q, k, v, mask: maskArr, sinks, params, problem, stream: s };
}

/** Why this call cannot run fused on its device, or null. */
function unfusedReason(c: SdpaCall, device: "cpu" | "gpu"): string | null {
  const p = c.problem;
  if (p.B * p.Hq * p.qL === 0 || p.kL === 0) return "an empty input (nothing to fuse)";
  return device === "gpu" ? sdpaUnfusedReason(p) : null;
}

/**
 * Multi-head attention, as mx.fast.scaled_dot_product_attention: softmax(scale·q·kᵀ + mask)·v
 * with q (B, Hq, qL, D), k (B, Hkv, kL, D), v (B, Hkv, kL, Dv) and Hq a multiple of Hkv (do not
 * pre-tile k and v). The softmax runs in float32 whatever the input type. Every head dim up to 256,
 * every mask kind, grouped-query heads and sinks run fused on the GPU, forward and backward;
 * mg.fast.sdpaPlan says what will run.
 * @example
 * const q = mg.ones([1, 1, 2, 4]);
 * mg.fast.scaledDotProductAttention(q, q, q, { scale: 0.5, mask: "causal" })
 */
export function scaledDotProductAttention(q: ArrayInput, k: ArrayInput, v: ArrayInput, opts: SdpaOptions): MgArray {
  const c = sdpaPrepare(q, k, v, opts, "scaled_dot_product_attention");
  const stream = resolveStream(c.stream.stream);
  const reason = unfusedReason(c, stream.device.type);
  if (reason) {
    if (opts.forceFused) {
      throw new Error(`[scaled_dot_product_attention] force_fused: no fused kernel takes these inputs (${reason}).`);
    }
    const mode = c.params.mask === "none" ? "none" : c.params.mask === "causal" ? "causal" : "array";
    const out = sdpaUnfused(c.q, c.k, c.v, c.params.scale, mode, c.mask, c.sinks, c.stream);
    const note = `mg.fast.scaledDotProductAttention ran unfused (matmul → softmax → matmul with a ${formatShape([c.problem.B, c.problem.Hq, c.problem.qL, c.problem.kL])} score matrix): ${reason}`;
    annotate(out, note);
    if (!reason.startsWith("an empty")) warnOnce(`sdpa-unfused:${reason}`, `${note}. The trace records every such call; MG_WARN=0 silences this warning.`);
    return out;
  }
  const inputs = [c.q, c.k, c.v, ...(c.mask ? [c.mask] : []), ...(c.sinks ? [c.sinks] : [])];
  const [out, stats] = makeNode(ScaledDotProductAttention, inputs, c.params, stream);
  // Under a transform the statistics outlive this call (the backward pass reads them).
  if (stats) retain(stats);
  return out!;
}

/** One pass of an attention plan (forward or backward): the kernel, whether it is fused, its tiles. */
export interface SdpaStepPlan {
  kernel: string;
  grid: [number, number, number];
  threadgroup: number;
  tiles: Record<string, number>;
}

/** What mg.fast.sdpaPlan answers: the forward and backward kernels, precision, scratch bytes and why. */
export interface SdpaPlan {
  device: "cpu" | "gpu";
  /** fused-prefill / fused-decode (GPU), cpu-reference (the CPU device's fused primitive) or unfused. */
  kernel: "fused-prefill" | "fused-decode" | "cpu-reference" | "unfused";
  fused: boolean;
  /** Why it is not fused (null when it is). */
  reason: string | null;
  steps: SdpaStepPlan[];
  /** Internal precision (guide §0, question 3). */
  accumulation: string;
  /** Scratch bytes beyond the output: decode partials, the per-row statistics, or (unfused) the score matrices. */
  scratchBytes: number;
  /** The precision policy the call would record. */
  policy: PrecisionPolicy;
  notes: string[];
  backward: {
    kernel: "fused-backward" | "cpu-reference" | "unfused";
    fused: boolean;
    reason: string | null;
    steps: SdpaStepPlan[];
    accumulation: string;
    scratchBytes: number;
  };
}

/** Arrays, or `{ shape, dtype }` descriptions of them (nothing is allocated or run). */
export type SdpaPlanInput = ArrayInput | Shaped;

const isShaped = (x: unknown): x is Shaped =>
  typeof x === "object" && x !== null && !Array.isArray(x) && "shape" in x && "dtype" in x && !("node" in x) && typeof (x as { describe?: unknown }).describe !== "function";

/**
 * What scaledDotProductAttention(q, k, v, opts) would run, answered before running it: the kernel
 * (fused-prefill / fused-decode with tile sizes, or unfused and why), the accumulation precision,
 * scratch memory, and the same for the backward pass. q, k, v (and an array mask) may be arrays or
 * `{ shape, dtype }` descriptions.
 * @example
 * const q = mg.ones([1, 1, 2, 4]);
 * mg.fast.sdpaPlan(q, q, q, { scale: 0.5 }).kernel
 */
export function sdpaPlan(q: SdpaPlanInput, k: SdpaPlanInput, v: SdpaPlanInput, opts: Omit<SdpaOptions, "mask"> & { mask?: null | "causal" | SdpaPlanInput }): SdpaPlan {
  const stand = (x: SdpaPlanInput | null | undefined): ArrayInput | null | undefined =>
    isShaped(x) ? zeros([...x.shape], x.dtype, { stream: resolveStream(opts.stream) }) : (x as ArrayInput | null | undefined);
  const mask = typeof opts.mask === "string" || opts.mask === null || opts.mask === undefined ? opts.mask : stand(opts.mask);
  const sinks = opts.sinks === null || opts.sinks === undefined ? opts.sinks : stand(opts.sinks as SdpaPlanInput);
  const c = sdpaPrepare(stand(q)!, stand(k)!, stand(v)!, { ...opts, mask, sinks } as SdpaOptions, "sdpa_plan");
  const stream = resolveStream(c.stream.stream);
  const device = stream.device.type;
  const p = c.problem;
  const policy = getPrecision();
  const reason = unfusedReason(c, device);
  const item = p.dtype.size;
  const statsBytes = p.B * p.Hq * p.qL * 8;
  const notes: string[] = [];
  if (policy.matmul === "high") notes.push('matmul policy "high" allows TF32-class/NAX kernels; none exists in metalgrad, so products are IEEE fp32.');
  if (reason) {
    const scores = p.B * p.Hq * p.qL * p.kL;
    const label = `${p.dtype.name} matmuls; softmax fp32 (precise) over a materialised score matrix`;
    return {
      device,
      kernel: "unfused",
      fused: false,
      reason,
      steps: [],
      accumulation: label,
      // scores and probabilities (input dtype), plus the float32 softmax inside
      scratchBytes: scores * (2 * item + 4),
      policy,
      notes,
      backward: { kernel: "unfused", fused: false, reason, steps: [], accumulation: label, scratchBytes: scores * (4 * item + 4) },
    };
  }
  if (device === "cpu") {
    const label =
      p.dtype.name === "float64"
        ? "float64 reference, one query row at a time (O(kL) memory)"
        : "fp32 products and softmax (native CPU kernels: blocks of query rows against the keys they see, O(rows·kL) scratch per thread; the TypeScript backend, MG_CPU_NATIVE=0, computes in float64), rounded once to the output dtype";
    return {
      device,
      kernel: "cpu-reference",
      fused: true,
      reason: null,
      steps: [{ kernel: "cpu:ScaledDotProductAttention", grid: [1, 1, 1], threadgroup: 1, tiles: {} }],
      accumulation: label,
      scratchBytes: statsBytes,
      policy,
      notes,
      backward: { kernel: "cpu-reference", fused: true, reason: null, steps: [{ kernel: "cpu:ScaledDotProductAttentionVJP", grid: [1, 1, 1], threadgroup: 1, tiles: {} }], accumulation: label, scratchBytes: 0 },
    };
  }
  const plan = gpuSdpaPlan(p, c.params);
  const steps = (list: typeof plan.steps) => list.map((s) => ({ kernel: s.kernel.name, grid: s.grid, threadgroup: s.threadgroup, tiles: s.tile }));
  if (p.dtype === float32 && policy.accumulate16 === "native") notes.push("accumulate16 applies to float16/bfloat16 inputs only.");
  return {
    device,
    kernel: plan.kind,
    fused: true,
    reason: null,
    steps: steps(plan.steps),
    accumulation: plan.precision,
    scratchBytes: plan.scratchBytes + plan.statsBytes,
    policy,
    notes,
    backward: { kernel: "fused-backward", fused: true, reason: null, steps: steps(plan.backward.steps), accumulation: plan.backward.precision, scratchBytes: plan.backward.scratchBytes },
  };
}

// Cross entropy ----------------------------------------------------------------------------------

/**
 * Cross entropy with class-index targets over the last axis, as mx.fast.cross_entropy:
 * logsumexp(logits) − logits[target], one fused kernel, float32 accumulation and a float32 loss
 * shaped like targets. A target outside [0, n) gives NaN.
 * @example
 * mg.fast.crossEntropy(mg.array([[1, 2, 3]], mg.float32), mg.array([2]))
 */
export function crossEntropy(logits: ArrayInput, targets: ArrayInput, opts: StreamOptions = {}): MgArray {
  const o = checkOptions("cross_entropy", opts, ["stream"]);
  const s = streamOf(o);
  const x = toArray(logits, "cross_entropy");
  let t = toArray(targets, "cross_entropy");
  if (x.ndim === 0) throw new Error("[cross_entropy] logits must have at least 1 dimension but got input with 0 dimensions.");
  if (!issubdtype(x.dtype, floating)) throw new Error(`[cross_entropy] Received unsupported logits type ${x.dtype.name}.`);
  if (!issubdtype(t.dtype, integer)) throw new Error(`[cross_entropy] targets must be integer class indices but got ${t.dtype.name}.`);
  const lead = x.shape.slice(0, -1);
  if (t.ndim !== lead.length || t.shape.some((d, i) => d !== lead[i])) {
    throw new Error(`[cross_entropy] targets shape ${formatShape(t.shape)} does not match logits shape ${formatShape(x.shape)} with the last axis removed.`);
  }
  if (t.dtype !== int32) t = astype(t, int32, s);
  return makeArray(CrossEntropy, [x, t], { accumulate16: getPrecision().accumulate16 }, resolveStream(s.stream));
}
