// Scaled dot-product attention on the GPU (Sources/Kernels/sdpa.metal): the kernel choice and
// tile sizes (planSdpaKernels — also what mg.fast.sdpaPlan reports), and the encoders of the
// forward (fused prefill, or fused decode + combine) and the backward (dQ pass, then dK/dV pass).
//
// Selection, in order: head dims above SDPA_MAX_HEAD_DIM are not fused (the op runs the
// composition); qL ≤ SDPA_DECODE_MAX_QUERIES takes the decode kernel (keys split over
// threadgroups); everything else the tiled prefill kernel. Tiles are the largest that fit the
// device's threadgroup memory. This is the one place a NAX (TensorOps) or TF32-class attention
// kernel would be chosen; none exists, so `policy.matmul = "high"` changes nothing and the plan
// says so.
import { bfloat16, type Dtype, float16, float32 } from "../../../core/dtype.ts";
import type { Accumulate16 } from "../../../core/precision.ts";
import { runtime } from "../../runtime.ts";
import type { KernelInstance } from "../kernels.ts";
import { dtypeTag, mslType } from "../dtypes.ts";
import { kernelPipeline } from "../kernels.ts";
import { bind, bindScratch, type KernelOutput, type KernelSink, type KernelView, structBytes } from "./common.ts";
import { accumulatorOf } from "./precision.ts";

export const SDPA_MAX_HEAD_DIM = 256;
export const SDPA_DECODE_MAX_QUERIES = 8;
/** Key lengths up to this take the one-pass backward (one threadgroup per key/value head). */
export const SDPA_ONEPASS_MAX_KEYS = 256;
/** Simdgroups per threadgroup of the tiled kernels (8 query rows or keys each). */
const NSG = 4;
/** Threads of the decode kernel (one key each per step). */
const DECODE_THREADS = 128;
const DECODE_MAX_BLOCKS = 64;

export type SdpaMaskKind = "none" | "causal" | "bool" | "additive";

export interface SdpaProblem {
  B: number;
  Hq: number;
  Hkv: number;
  qL: number;
  kL: number;
  Dk: number;
  Dv: number;
  dtype: Dtype;
  mask: SdpaMaskKind;
  sinks: boolean;
}

export interface SdpaKernelStep {
  kernel: KernelInstance;
  /** Threadgroups (x, y, z) and threads per threadgroup. */
  grid: [number, number, number];
  threadgroup: number;
  /** Tile sizes, for the plan and the trace. */
  tile: Record<string, number>;
}

export interface SdpaKernelPlan {
  kind: "fused-prefill" | "fused-decode";
  steps: SdpaKernelStep[];
  /** Scratch bytes of the forward (decode partials) beyond its outputs. */
  scratchBytes: number;
  /** Bytes of the per-row statistics the forward saves for the backward ({m, l} float pairs). */
  statsBytes: number;
  precision: string;
  backward: { steps: SdpaKernelStep[]; scratchBytes: number; precision: string };
}

const pad8 = (d: number): number => Math.max(8, Math.ceil(d / 8) * 8);
const short = (d: Dtype): string => (d === float16 ? "fp16" : d === bfloat16 ? "bf16" : "fp32");

/** Why a problem cannot run fused on the GPU, or null. */
export function sdpaUnfusedReason(p: SdpaProblem): string | null {
  if (p.Dk > SDPA_MAX_HEAD_DIM || p.Dv > SDPA_MAX_HEAD_DIM) {
    return `head dim ${Math.max(p.Dk, p.Dv)} exceeds ${SDPA_MAX_HEAD_DIM}, the largest the fused kernels hold in registers`;
  }
  if (p.dtype !== float32 && p.dtype !== float16 && p.dtype !== bfloat16) return `${p.dtype.name} has no GPU attention kernel`;
  return null;
}

/** The largest block (rows of a staged tile) in `choices` whose tiles fit `budget` bytes. */
function fitBlock(choices: readonly number[], bytes: (block: number) => number, budget: number): number {
  for (const c of choices) if (bytes(c) <= budget) return c;
  return choices[choices.length - 1]!;
}

/** Kernel choice and tiles for a problem the fused kernels take (sdpaUnfusedReason is null). */
export function planSdpaKernels(p: SdpaProblem, accumulate16: Accumulate16, threadgroupMemory: number, onePassMaxKeys = SDPA_ONEPASS_MAX_KEYS): SdpaKernelPlan {
  const t = mslType(p.dtype, "scaled_dot_product_attention");
  const tag = dtypeTag(p.dtype);
  const acc = accumulatorOf(p.dtype, accumulate16);
  const accSize = acc.size;
  const DK = pad8(p.Dk);
  const DV = pad8(p.Dv);
  const budget = Math.min(threadgroupMemory, 32768) - 512;
  const statsBytes = p.B * p.Hq * p.qL * 8;

  // Backward: dQ over query tiles (K, V blocks staged in float), then dK/dV over key tiles (Q, dO
  // blocks staged in float). Always float32.
  const bkDq = fitBlock([32, 16, 8], (bk) => (bk * (DK + 4) + bk * (DV + 4) + NSG * 64 + NSG * 8) * 4, budget);
  const bqKv = fitBlock([32, 16, 8], (bq) => (bq * (DK + 4) + bq * (DV + 4) + NSG * 64 + 3 * bq) * 4, budget);
  const twoPass = {
    steps: [
      {
        kernel: {
          file: "sdpa.metal",
          name: `mg_sdpa_backward_dq_${tag}_dk${DK}_dv${DV}_bk${bkDq}`,
          instantiation: `sdpa_backward_dq<${t}, ${DK}, ${DV}, ${bkDq}, ${NSG}>`,
        },
        grid: [Math.ceil(p.qL / (8 * NSG)), p.Hq, p.B] as [number, number, number],
        threadgroup: 32 * NSG,
        tile: { BQ: 8 * NSG, BK: bkDq },
      },
      {
        kernel: {
          file: "sdpa.metal",
          name: `mg_sdpa_backward_dkdv_${tag}_dk${DK}_dv${DV}_bq${bqKv}`,
          instantiation: `sdpa_backward_dkdv<${t}, ${DK}, ${DV}, ${bqKv}, ${NSG}>`,
        },
        grid: [Math.ceil(p.kL / (8 * NSG)), p.Hkv, p.B] as [number, number, number],
        threadgroup: 32 * NSG,
        tile: { BK: 8 * NSG, BQ: bqKv },
      },
    ],
    // D = rowsum(dO∘O), one float per query row.
    scratchBytes: p.B * p.Hq * p.qL * 4,
    precision: `${p.dtype === float32 ? "IEEE fp32 products" : `fp32 accumulate over ${short(p.dtype)} operands`} (simdgroup matrices); P recomputed from the saved row statistics`,
  };
  // Short key ranges: one pass per key/value head (P and dS once per tile, 5 products instead of
  // 7; parallel over B·Hkv threadgroups only, which long sequences cannot afford).
  const backward =
    p.kL <= onePassMaxKeys
      ? {
          steps: [
            {
              kernel: {
                file: "sdpa.metal",
                name: `mg_sdpa_backward_onepass_${tag}_dk${DK}_dv${DV}_bq${bqKv}`,
                instantiation: `sdpa_backward_onepass<${t}, ${DK}, ${DV}, ${bqKv}, ${NSG}>`,
              },
              grid: [1, p.Hkv, p.B] as [number, number, number],
              threadgroup: 32 * NSG,
              tile: { BK: 8 * NSG, BQ: bqKv },
            },
          ],
          // dQ accumulated in float, rows padded to a multiple of 8
          scratchBytes: p.B * p.Hq * Math.ceil(p.qL / 8) * 8 * DK * 4,
          precision: `${twoPass.precision}; one pass (kL ≤ ${SDPA_ONEPASS_MAX_KEYS}): dQ summed in float scratch in a fixed order`,
        }
      : twoPass;

  if (p.qL <= SDPA_DECODE_MAX_QUERIES) {
    const heads = p.B * p.Hq;
    // Enough chunks to occupy the GPU (about 256 threadgroups), each at least one step of keys.
    const want = Math.max(1, Math.min(DECODE_MAX_BLOCKS, Math.ceil(256 / heads), Math.ceil(p.kL / DECODE_THREADS)));
    const chunk = Math.max(DECODE_THREADS, Math.ceil(Math.ceil(p.kL / want) / DECODE_THREADS) * DECODE_THREADS);
    const blocks = Math.max(1, Math.ceil(p.kL / chunk));
    return {
      kind: "fused-decode",
      steps: [
        {
          kernel: { file: "sdpa.metal", name: `mg_sdpa_decode_${tag}`, instantiation: `sdpa_decode<${t}, ${SDPA_MAX_HEAD_DIM}, ${SDPA_MAX_HEAD_DIM}, ${DECODE_THREADS}>` },
          grid: [blocks, p.Hq, p.B],
          threadgroup: DECODE_THREADS,
          tile: { blocks, chunk, keysPerStep: DECODE_THREADS },
        },
        {
          kernel: { file: "sdpa.metal", name: `mg_sdpa_decode_combine_${tag}`, instantiation: `sdpa_decode_combine<${t}, ${DECODE_THREADS}>` },
          grid: [p.qL, p.Hq, p.B],
          threadgroup: DECODE_THREADS,
          tile: { blocks },
        },
      ],
      scratchBytes: heads * blocks * p.qL * (p.Dv * 4 + 8),
      statsBytes,
      precision:
        `${p.dtype === float32 ? "IEEE fp32" : `fp32 accumulate over ${short(p.dtype)} operands`}; softmax fp32 (online, ${blocks} key chunk${blocks === 1 ? "" : "s"} merged)` +
        (p.dtype !== float32 && accumulate16 === "native" ? '; policy accumulate16 "native" does not apply to the decode kernel (memory-bound: float32 costs nothing)' : ""),
      backward,
    };
  }

  const bk = fitBlock([32, 16, 8], (b) => (b * (DK + 16 / accSize) + b * (DV + 16 / accSize) + NSG * 64) * accSize, budget);
  const policy = p.dtype === float32 ? "" : acc === float32 ? " (policy accumulate16: float32)" : " (policy accumulate16: native)";
  const products = p.dtype === float32 ? "IEEE fp32 products" : `${acc === float32 ? "fp32" : short(acc)} accumulate over ${short(p.dtype)} operands`;
  return {
    kind: "fused-prefill",
    steps: [
      {
        kernel: {
          file: "sdpa.metal",
          name: `mg_sdpa_prefill_${tag}${acc === float32 || p.dtype === float32 ? "" : `_acc_${tag}`}_dk${DK}_dv${DV}_bk${bk}`,
          instantiation: `sdpa_prefill<${t}, ${mslType(acc)}, ${DK}, ${DV}, ${bk}, ${NSG}>`,
        },
        grid: [Math.ceil(p.qL / (8 * NSG)), p.Hq, p.B],
        threadgroup: 32 * NSG,
        tile: { BQ: 8 * NSG, BK: bk, DK, DV },
      },
    ],
    scratchBytes: 0,
    statsBytes,
    precision: `${products} (simdgroup matrices)${policy}; softmax fp32 (online, exp2)`,
    backward,
  };
}

function strides4(v: KernelView | null): number[] {
  return v ? [...v.strides] : [0, 0, 0, 0];
}

function params(
  index: number,
  p: SdpaProblem,
  scale: number,
  v: { q: KernelView; k: KernelView; v: KernelView; mask: KernelView | null; sinks: KernelView | null; o?: KernelView; dO?: KernelView },
  blocks = 0,
  chunk = 0,
) {
  const maskKind = p.mask === "bool" ? 1 : p.mask === "additive" ? 2 : 0;
  return structBytes(index, [
    ["i64", v.q.base],
    ["i64", v.k.base],
    ["i64", v.v.base],
    ["i64", v.mask ? v.mask.base : 0],
    ["i64", v.o ? v.o.base : 0],
    ["i64", v.dO ? v.dO.base : 0],
    ["i64", v.sinks ? v.sinks.base : 0],
    ["i64", v.sinks ? v.sinks.strides[0]! : 0],
    ...[v.q, v.k, v.v, v.mask, v.o ?? null, v.dO ?? null].flatMap((x) => strides4(x).map((s) => ["i64", s] as const)),
    ["i32", p.B],
    ["i32", p.Hq],
    ["i32", p.Hkv],
    ["i32", p.qL],
    ["i32", p.kL],
    ["i32", p.Dk],
    ["i32", p.Dv],
    ["i32", p.Hq / p.Hkv],
    ["i32", p.mask === "causal" ? 1 : 0],
    ["i32", maskKind],
    ["i32", p.sinks ? 1 : 0],
    ["i32", blocks],
    ["i32", chunk],
    ["f32", scale * Math.LOG2E],
  ]);
}

export interface SdpaViews {
  q: KernelView;
  k: KernelView;
  v: KernelView;
  /** [B, Hq, qL, kL]-shaped view (broadcast strides allowed): bool or q's dtype; null otherwise. */
  mask: KernelView | null;
  sinks: KernelView | null;
}

/** Forward: o ([B, Hq, qL, Dv], row-contiguous) and stats ([B, Hq, qL] {m, l} float pairs). */
export function encodeSdpa(sink: KernelSink, p: SdpaProblem, plan: SdpaKernelPlan, scale: number, views: SdpaViews, o: KernelOutput, stats: KernelOutput): void {
  const { q, k, v, mask, sinks } = views;
  const dummy = q;
  const inputs = [bind(0, q, "read"), bind(1, k, "read"), bind(2, v, "read"), bind(3, mask && p.mask === "bool" ? mask : dummy, "read"), bind(4, mask && p.mask === "additive" ? mask : dummy, "read")];
  const facts = (step: SdpaKernelStep, what: string) => ({
    layout: `${what}; ${Object.entries(step.tile).map(([n, x]) => `${n}=${x}`).join(" ")}; mask ${p.mask}${p.sinks ? ", sinks" : ""}${p.Hq !== p.Hkv ? `, GQA ${p.Hq / p.Hkv}:1` : ""}`,
    precision: plan.precision,
  });
  if (plan.kind === "fused-prefill") {
    const step = plan.steps[0]!;
    sink.dispatch(
      {
        pipeline: kernelPipeline(step.kernel),
        buffers: [...inputs, bind(5, sinks ?? dummy, "read"), bind(6, o, "write"), bind(7, stats, "write")],
        bytes: [params(8, p, scale, views)],
        grid: step.grid,
        threadgroup: [step.threadgroup, 1, 1],
        mode: "threadgroups",
        mustWrite: [6, 7],
      },
      facts(step, "fused prefill: tiled, online softmax"),
    );
    return;
  }
  const [main, combine] = plan.steps as [SdpaKernelStep, SdpaKernelStep];
  const { blocks, chunk } = main.tile as { blocks: number; chunk: number };
  const heads = p.B * p.Hq;
  const partialO = sink.temporary(heads * blocks * p.qL * p.Dv * 4);
  const partialML = sink.temporary(heads * blocks * p.qL * 8);
  sink.dispatch(
    {
      pipeline: kernelPipeline(main.kernel),
      buffers: [...inputs, bindScratch(5, partialO, "write"), bindScratch(6, partialML, "write")],
      bytes: [params(7, p, scale, views, blocks, chunk)],
      grid: main.grid,
      threadgroup: [main.threadgroup, 1, 1],
      mode: "threadgroups",
    },
    facts(main, "fused decode: keys split across threadgroups"),
  );
  sink.dispatch(
    {
      pipeline: kernelPipeline(combine.kernel),
      buffers: [bindScratch(0, partialO, "read"), bindScratch(1, partialML, "read"), bind(2, sinks ?? dummy, "read"), bind(3, o, "write"), bind(4, stats, "write")],
      bytes: [params(5, p, scale, views, blocks, chunk)],
      grid: combine.grid,
      threadgroup: [combine.threadgroup, 1, 1],
      mode: "threadgroups",
      mustWrite: [3, 4],
    },
    facts(combine, "fused decode: merge of the key chunks"),
  );
}

/**
 * Backward: dq ([B, Hq, qL, Dk]), dk and dv ([B, Hkv, kL, Dk|Dv]), row-contiguous, from the
 * forward's output `o` and statistics and the cotangent dO (any view of o's shape).
 */
export function encodeSdpaVjp(
  sink: KernelSink,
  p: SdpaProblem,
  plan: SdpaKernelPlan,
  scale: number,
  views: SdpaViews & { o: KernelView; stats: KernelView; dO: KernelView },
  dq: KernelOutput,
  dk: KernelOutput,
  dv: KernelOutput,
): void {
  const { q, k, v, mask, o, stats, dO } = views;
  const dummy = q;
  const inputs = [bind(0, q, "read"), bind(1, k, "read"), bind(2, v, "read"), bind(3, mask && p.mask === "bool" ? mask : dummy, "read"), bind(4, mask && p.mask === "additive" ? mask : dummy, "read")];
  const [dqStep, kvStep] = plan.backward.steps as [SdpaKernelStep, SdpaKernelStep | undefined];
  const D = sink.temporary(plan.backward.scratchBytes);
  const layout = (step: SdpaKernelStep, what: string) => `${what}; ${Object.entries(step.tile).map(([n, x]) => `${n}=${x}`).join(" ")}; mask ${p.mask}${p.Hq !== p.Hkv ? `, GQA ${p.Hq / p.Hkv}:1` : ""}`;
  if (!kvStep) {
    sink.dispatch(
      {
        pipeline: kernelPipeline(dqStep.kernel),
        buffers: [...inputs, bind(5, o, "read"), bind(6, stats, "read"), bind(7, dO, "read"), bind(8, dq, "write"), bind(9, dk, "write"), bind(10, dv, "write"), bindScratch(11, D, "write")],
        bytes: [params(12, p, scale, { ...views, o, dO })],
        grid: dqStep.grid,
        threadgroup: [dqStep.threadgroup, 1, 1],
        mode: "threadgroups",
        mustWrite: [8, 9, 10],
      },
      {
        layout: layout(dqStep, `fused backward, one pass (kL ≤ ${SDPA_ONEPASS_MAX_KEYS}): dQ, dK, dV from P and dS computed once per tile`),
        precision: plan.backward.precision,
      },
    );
    return;
  }
  sink.dispatch(
    {
      pipeline: kernelPipeline(dqStep.kernel),
      buffers: [...inputs, bind(5, o, "read"), bind(6, stats, "read"), bind(7, dO, "read"), bind(8, dq, "write"), bindScratch(9, D, "write")],
      bytes: [params(10, p, scale, { ...views, o, dO })],
      grid: dqStep.grid,
      threadgroup: [dqStep.threadgroup, 1, 1],
      mode: "threadgroups",
      mustWrite: [8],
    },
    { layout: layout(dqStep, "fused backward (flash-attention-2), query side: dQ and D = rowsum(dO∘O)"), precision: plan.backward.precision },
  );
  sink.dispatch(
    {
      pipeline: kernelPipeline(kvStep.kernel),
      buffers: [...inputs, bind(5, stats, "read"), bindScratch(6, D, "read"), bind(7, dO, "read"), bind(8, dk, "write"), bind(9, dv, "write")],
      bytes: [params(10, p, scale, { ...views, o, dO })],
      grid: kvStep.grid,
      threadgroup: [kvStep.threadgroup, 1, 1],
      mode: "threadgroups",
      mustWrite: [8, 9],
    },
    { layout: layout(kvStep, "fused backward (flash-attention-2), key side: dK, dV"), precision: plan.backward.precision },
  );
}

/** The plan the GPU runs for a fusable problem (mg.fast.sdpaPlan reports the same). */
export function gpuSdpaPlan(problem: SdpaProblem, p: { accumulate16: Accumulate16 }): SdpaKernelPlan {
  const reason = sdpaUnfusedReason(problem);
  if (reason) throw new Error(`[scaled_dot_product_attention] internal: an unfusable problem reached the fused kernel (${reason}).`);
  return planSdpaKernels(problem, p.accumulate16, runtime().device.maxThreadgroupMemoryLength);
}
