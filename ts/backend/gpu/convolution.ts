// Convolution on the GPU (Sources/Kernels/conv.metal): chooses a kernel and records the choice.
//
//   gemm    implicit GEMM on simdgroup matrices, one GEMM per group: M = batch · output positions,
//           N = output channels per group, K = taps · input channels per group. Tiles of 32 or 64
//           rows and 16 or 32 channels (the smaller when a group has ≤ 16 output channels).
//   split-k the same tiles over partitions of K into float32 partial sums, then summed in order:
//           few output tiles and a long K (the weight gradient: K = batch · output positions).
//   direct  one thread per output element: depthwise and narrow groups (fewer than 16 output
//           channels per group), or taps · channels below 16, where GEMM tiles would be padding.
//   (1×1 kernels never get here: the op runs them as a matmul.)
//
// Operands that are not row-contiguous are copied into scratch first, noted in the trace.
import type { MgArray, Node } from "../../core/array.ts";
import { bfloat16, type Dtype, float16, float32 } from "../../core/dtype.ts";
import { Convolution, convGeometry, type ConvolutionParams } from "../../core/primitives/convolution.ts";
import type { BufferBinding, InlineBytes } from "../runtime.ts";
import { copyKernel, encodeCopyInto } from "./copy.ts";
import { dtypeTag, mslType } from "./dtypes.ts";
import type { GpuEncoder } from "./encoder.ts";
import { type KernelInstance, kernelPipeline } from "./kernels.ts";
import { matmulPrecision } from "./matmul.ts";
import { registerGpu } from "./registry.ts";

const INT32_MAX = 2 ** 31 - 1;
/** Below this many output channels per group (or taps · channels) the direct kernel runs. */
export const GEMM_MIN_CHANNELS = 16;
/** 64-row tiles once they alone give this many threadgroups. */
const LARGE_TILE_MIN_GROUPS = 32;
/** Split-K (as matmul's): at most this many 32-row output tiles, K at least this long and at
 *  least SPLITK_K_OVER_MN × max(M, channels); partitions of at least 256, at most 32 of them,
 *  aiming at 64 threadgroups. */
const SPLITK_MAX_TILES = 16;
const SPLITK_MIN_K = 1024;
const SPLITK_K_OVER_MN = 4;
const SPLITK_MIN_PARTITION = 256;
const SPLITK_MAX_PARTITIONS = 32;
const SPLITK_TARGET_GROUPS = 64;

interface Shape {
  M: number;
  K: number;
  cog: number;
  groups: number;
}

type Plan =
  | { path: "direct"; kernel: KernelInstance }
  | { path: "gemm"; kernel: KernelInstance; bm: number; bn: number }
  | { path: "split-k"; kernel: KernelInstance; reduce: KernelInstance; bm: number; bn: number; parts: number; kSplit: number };

function shapeOf(node: Node): Shape {
  const [x, w] = node.inputs as [MgArray, MgArray];
  const out = node.outputs[0]!;
  const p = node.params as ConvolutionParams;
  const g = convGeometry(x, w, out, p);
  const outPositions = g.outShape.reduce((a, b) => a * b, 1);
  const taps = g.kShape.reduce((a, b) => a * b, 1);
  return { M: g.batch * outPositions, K: taps * g.cinGroup, cog: g.coutGroup, groups: p.groups };
}

function plan(node: Node): Plan {
  const dtype: Dtype = node.outputs[0]!.dtype;
  if (dtype !== float32 && dtype !== float16 && dtype !== bfloat16) {
    throw new TypeError(`[conv] ${dtype.name} has no GPU convolution kernel (float32, float16, bfloat16).`);
  }
  const T = mslType(dtype, "conv");
  const tag = dtypeTag(dtype);
  const s = shapeOf(node);
  const bnFor = s.cog <= 16 ? 16 : 32;
  const tiles = s.groups * Math.ceil(s.M / 32) * Math.ceil(s.cog / bnFor);
  if (tiles <= SPLITK_MAX_TILES && s.K >= SPLITK_MIN_K && s.K >= SPLITK_K_OVER_MN * Math.max(s.M, s.cog)) {
    const wanted = Math.min(Math.floor(s.K / SPLITK_MIN_PARTITION), Math.ceil(SPLITK_TARGET_GROUPS / tiles));
    const parts = Math.max(2, Math.min(SPLITK_MAX_PARTITIONS, wanted));
    const kSplit = Math.ceil(Math.ceil(s.K / parts) / 16) * 16;
    return {
      path: "split-k",
      kernel: { file: "conv.metal", name: `mg_conv_gemm_splitk_${tag}_bm32_bn${bnFor}`, instantiation: `conv_gemm_splitk<${T}, 32, ${bnFor}, 16, 2, 2>` },
      reduce: { file: "conv.metal", name: `mg_conv_splitk_reduce_${tag}`, instantiation: `conv_splitk_reduce<${T}>` },
      bm: 32,
      bn: bnFor,
      parts: Math.ceil(s.K / kSplit),
      kSplit,
    };
  }
  if (s.cog < GEMM_MIN_CHANNELS || s.K < GEMM_MIN_CHANNELS) {
    return { path: "direct", kernel: { file: "conv.metal", name: `mg_conv_direct_${tag}`, instantiation: `conv_direct<${T}>` } };
  }
  const bn = s.cog <= 16 ? 16 : 32;
  const bm = s.groups * Math.ceil(s.M / 64) * Math.ceil(s.cog / bn) >= LARGE_TILE_MIN_GROUPS ? 64 : 32;
  return {
    path: "gemm",
    kernel: { file: "conv.metal", name: `mg_conv_gemm_${tag}_bm${bm}_bn${bn}`, instantiation: `conv_gemm<${T}, ${bm}, ${bn}, 16, 2, 2>` },
    bm,
    bn,
  };
}

function convKernels(node: Node): KernelInstance[] {
  if (node.outputs[0]!.size === 0) return [];
  const pl = plan(node);
  const list = [pl.kernel];
  if (pl.path === "split-k") list.push(pl.reduce);
  for (const a of node.inputs) if (a.layout && !a.layout.rowContiguous) list.push(...copyKernel(a));
  return list;
}

/** Packs ConvParams (conv.metal): two int64, then 33 int32, padded to the struct's 8-byte
 *  alignment — 152 bytes. */
function convParams(index: number, node: Node, xBase: number, wBase: number): InlineBytes {
  const [x, w] = node.inputs as [MgArray, MgArray];
  const out = node.outputs[0]!;
  const p = node.params as ConvolutionParams;
  const g = convGeometry(x, w, out, p);
  const three = (v: readonly number[], fill: number) => [0, 1, 2].map((i) => v[i] ?? fill);
  const outPositions = g.outShape.reduce((a, b) => a * b, 1);
  const inPositions = g.inShape.reduce((a, b) => a * b, 1);
  const taps = g.kShape.reduce((a, b) => a * b, 1);
  const ints = [
    g.nd, g.batch,
    ...three(g.inShape, 1), ...three(g.outShape, 1), ...three(g.kShape, 1),
    ...three(p.stride, 1), ...three(p.paddingLo, 0), ...three(p.kernelDilation, 1), ...three(p.inputDilation, 1),
    g.cin, g.cout, g.cinGroup, g.coutGroup, p.flip ? 1 : 0,
    g.batch * outPositions, taps * g.cinGroup, taps, outPositions, inPositions,
  ];
  const buf = new ArrayBuffer(Math.ceil((16 + 4 * ints.length) / 8) * 8);
  const dv = new DataView(buf);
  dv.setBigInt64(0, BigInt(xBase), true);
  dv.setBigInt64(8, BigInt(wBase), true);
  ints.forEach((v, i) => dv.setInt32(16 + 4 * i, v, true));
  return { index, data: new Uint8Array(buf) };
}

/** Binds an operand at `index`, copying it row-contiguously into scratch when it is a view. */
function bindOperand(enc: GpuEncoder, a: MgArray, which: string, index: number): { binding: BufferBinding; base: number } {
  const bound = enc.input(a, index);
  if (bound.rowContiguous) return { binding: bound.binding, base: bound.base };
  const length = a.size * a.dtype.size;
  const scratch = enc.temporary(length);
  enc.note(`copy: conv ${which} ${a.describe()} has strides (${bound.strides.join(",")}); the kernel reads a row-contiguous copy`);
  encodeCopyInto(enc, a, { index: 1, buffer: scratch, length, access: "write" }, { primitive: "Convolution", outputs: [a] });
  return { binding: { index, buffer: scratch, length, access: "read" }, base: 0 };
}

function encodeConvolution(enc: GpuEncoder, node: Node): void {
  const out = node.outputs[0]!;
  const [x, w] = node.inputs as [MgArray, MgArray];
  const o = enc.output(out, 2);
  if (out.size === 0) return;
  const s = shapeOf(node);
  for (const [name, v] of [["batch · output positions", s.M], ["taps · channels", s.K], ["output elements", out.size], ["input elements", x.size]] as const) {
    if (v > INT32_MAX) throw new Error(`[conv] ${name} = ${v} is too large for the GPU kernels (at most 2^31 - 1).`);
  }
  const pl = plan(node);
  const pipeline = kernelPipeline(pl.kernel);
  const xb = bindOperand(enc, x, "input", 0);
  const wb = bindOperand(enc, w, "weight", 1);
  const params = convParams(3, node, xb.base, wb.base);
  const buffers = [xb.binding, wb.binding, o.binding];
  const trace = {
    primitives: ["Convolution"],
    inputs: [x, w],
    outputs: [out],
    precision: matmulPrecision(out.dtype),
  };
  if (pl.path === "split-k") {
    const n = s.M * out.shape[out.ndim - 1]!;
    const scratchBytes = pl.parts * n * 4;
    const scratch = enc.temporary(scratchBytes);
    const grid: [number, number, number] = [Math.ceil(s.cog / pl.bn), Math.ceil(s.M / pl.bm), s.groups * pl.parts];
    enc.dispatch(
      {
        pipeline, buffers: [xb.binding, wb.binding, { index: 2, buffer: scratch, length: scratchBytes, access: "write" }],
        bytes: [params, { index: 4, data: Int32Array.from([pl.kSplit]) }], grid, threadgroup: [128, 1, 1], mode: "threadgroups", mustWrite: [2],
      },
      { ...trace, layout: `implicit GEMM 32x${pl.bn} tiles, split-K: ${pl.parts} partitions of ${pl.kSplit}` },
    );
    const reduce = kernelPipeline(pl.reduce);
    enc.dispatch(
      {
        pipeline: reduce,
        buffers: [{ index: 0, buffer: scratch, length: scratchBytes, access: "read" }, { ...o.binding, index: 1 }],
        bytes: [{ index: 2, data: BigInt64Array.from([BigInt(n)]) }, { index: 3, data: Int32Array.from([pl.parts]) }],
        grid: [n, 1, 1],
        threadgroup: [Math.min(256, reduce.maxTotalThreadsPerThreadgroup, n), 1, 1],
        mustWrite: [1],
      },
      { ...trace, inputs: [], layout: `split-K reduction of ${pl.parts} partitions` },
    );
    return;
  }
  if (pl.path === "gemm") {
    const grid: [number, number, number] = [Math.ceil(s.cog / pl.bn), Math.ceil(s.M / pl.bm), s.groups];
    enc.dispatch(
      { pipeline, buffers, bytes: [params], grid, threadgroup: [128, 1, 1], mode: "threadgroups", mustWrite: [2] },
      { ...trace, layout: `implicit GEMM ${pl.bm}x${pl.bn} tiles, ${s.groups} group${s.groups > 1 ? "s" : ""}` },
    );
    return;
  }
  const cout = out.shape[out.ndim - 1]!;
  const tx = Math.min(32, cout);
  const ty = Math.max(1, Math.min(s.M, Math.floor(Math.min(256, pipeline.maxTotalThreadsPerThreadgroup) / tx)));
  enc.dispatch(
    { pipeline, buffers, bytes: [params], grid: [cout, s.M, 1], threadgroup: [tx, ty, 1], mustWrite: [2] },
    { ...trace, layout: `direct (one thread per output; ${s.cog} output channel${s.cog > 1 ? "s" : ""} per group)` },
  );
}

registerGpu(Convolution, { kind: "kernel", kernels: convKernels, encode: encodeConvolution });
