// Matmul and AddMM on the GPU: chooses a path, reads the operands in place and records the choice.
//
//   gemv     M == 1 or N == 1: gemv.metal, one pass over the matrix, any operand strides.
//   split-k  one matrix, few output tiles and a long K: K is cut into partitions computed in
//            parallel into float32 partial sums, then summed in order (gemm_splitk + _reduce).
//   gemm     everything else: simdgroup-matrix tiles (gemm.metal), batched over grid z.
//   complex  complex64: one thread per output element (no simdgroup matrices for complex).
//
// Operands whose last two axes are row-major (unit column stride) or column-major (unit row
// stride) are read in place, whatever their leading stride, offset or batch strides — a
// transposed or broadcast operand costs nothing. Any other layout is copied row-contiguously for
// the GEMM paths (every element is read many times there) and the copy is noted in the trace.
import type { MgArray, Node } from "../../core/array.ts";
import { bfloat16, complex64, type Dtype, float16, float32 } from "../../core/dtype.ts";
import { predictPlacement } from "../../core/layout.ts";
import { opName } from "../../core/primitive.ts";
import { AddMM, Matmul } from "../../core/primitives/matmul.ts";
import { formatShape, rowMajorStrides } from "../../core/shape.ts";
import { Precision } from "../../core/trace.ts";
import type { BufferBinding, InlineBytes } from "../runtime.ts";
import { copyKernel, encodeCopyInto } from "./copy.ts";
import { dtypeTag, mslType } from "./dtypes.ts";
import { type BoundArray, type GpuEncoder, int32Bytes, int64Bytes } from "./encoder.ts";
import { type KernelInstance, kernelPipeline } from "./kernels.ts";
import { registerGpu } from "./registry.ts";

// ---------------------------------------------------------------------------------------------
// Tiles and thresholds

export interface GemmTile {
  bm: number;
  bn: number;
  bk: number;
  wm: number;
  wn: number;
}

/** Big outputs: 64×64 tiles, four simdgroups of 32×32 (16 accumulators each). */
export const TILE_LARGE: GemmTile = { bm: 64, bn: 64, bk: 16, wm: 2, wn: 2 };
/** Everything else: 32×32 tiles (more threadgroups for the same output, less padding waste). */
export const TILE_SMALL: GemmTile = { bm: 32, bn: 32, bk: 16, wm: 2, wn: 2 };
/** 64×64 tiles pay once they alone give this many threadgroups (enough to fill a GPU). */
export const LARGE_TILE_MIN_GROUPS = 32;

/** Split-K when the output has at most this many 32×32 tiles (a GEMM would leave cores idle)… */
export const SPLITK_MAX_TILES = 16;
/** …and K is long: at least this, and at least SPLITK_K_OVER_MN × max(M, N). */
export const SPLITK_MIN_K = 1024;
export const SPLITK_K_OVER_MN = 4;
/** Partitions are at least this long along K, at most 32 of them, aiming at ~64 threadgroups. */
export const SPLITK_MIN_PARTITION = 256;
const SPLITK_MAX_PARTITIONS = 32;
const SPLITK_TARGET_GROUPS = 64;

const GEMV_ROWS_PER_GROUP = 4; // gemv: simdgroups (one output each) per threadgroup
const GEMV_T_SLICES = 4; // gemv_t: simdgroups splitting K per threadgroup of 32 outputs

const INT32_MAX = 2 ** 31 - 1;

/** The internal precision of a matmul in dtype d (guide §0, question 3). */
export function matmulPrecision(d: Dtype): string {
  if (d === float16) return Precision.accumulate("fp32", "fp16");
  if (d === bfloat16) return Precision.accumulate("fp32", "bf16");
  if (d === complex64) return "IEEE fp32 complex";
  return Precision.ieee("fp32");
}

// ---------------------------------------------------------------------------------------------
// Operand layouts

/** How the GEMM reads a matrix: in place row-major (element (r, c) at r·ld + c), in place
 *  column-major (at c·ld + r), or from a row-contiguous copy. */
type Orientation = { kind: "row"; ld: number } | { kind: "col"; ld: number } | { kind: "copy"; ld: number };

function orientation(rows: number, cols: number, rs: number, cs: number): Orientation {
  if (rows === 0 || cols === 0) return { kind: "row", ld: 0 }; // K == 0: never read
  if (cs === 1 || cols === 1) return { kind: "row", ld: rs };
  if (rs === 1 || rows === 1) return { kind: "col", ld: cs };
  return { kind: "copy", ld: cols };
}

/**
 * An operand's strides: its layout's or, before it is materialised, a prediction — through the
 * views that autograd puts in front of matmuls (dA = G·Bᵀ), else those of a fresh row-major kernel
 * output — so that the right kernels compile up front.
 */
function stridesOf(a: MgArray): readonly number[] {
  return predictPlacement(a).strides;
}

/** Batch axes with size 1 dropped and neighbours merged where every operand allows it. */
function collapseBatch(shape: readonly number[], strides: readonly (readonly number[])[]): { shape: number[]; strides: number[][] } {
  const outShape: number[] = [];
  const outStrides: number[][] = strides.map(() => []);
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i]!;
    if (d === 1) continue;
    const last = outShape.length - 1;
    // Axis i folds into the previous kept axis when, for every operand, stepping the previous
    // axis once equals stepping axis i d times.
    if (last >= 0 && strides.every((s, k) => outStrides[k]![last] === s[i]! * d)) {
      outShape[last]! *= d;
      strides.forEach((s, k) => (outStrides[k]![last] = s[i]!));
      continue;
    }
    outShape.push(d);
    strides.forEach((s, k) => outStrides[k]!.push(s[i]!));
  }
  return { shape: outShape, strides: outStrides };
}

// ---------------------------------------------------------------------------------------------
// Planning

interface Geometry {
  M: number;
  N: number;
  K: number;
  batchShape: number[];
  batchCount: number;
}

function geometry(node: Node): Geometry {
  const [a, b] = node.inputs;
  const out = node.outputs[0]!;
  const nd = out.ndim;
  const M = a!.shape[nd - 2]!;
  const K = a!.shape[nd - 1]!;
  const N = b!.shape[nd - 1]!;
  const batchShape = out.shape.slice(0, nd - 2);
  const batchCount = batchShape.reduce((x, y) => x * y, 1);
  const op = opName(node);
  for (const [name, v] of [["M", M], ["N", N], ["K", K]] as const) {
    if (v > INT32_MAX) throw new Error(`[${op}] ${name} = ${v} is too large for the GPU kernels (at most 2^31 - 1).`);
  }
  return { M, N, K, batchShape, batchCount };
}

type Plan =
  | { path: "gemv"; kernel: KernelInstance; transposed: boolean }
  | { path: "gemm"; kernel: KernelInstance; tile: GemmTile; a: Orientation; b: Orientation }
  | { path: "split-k"; kernel: KernelInstance; reduce: KernelInstance; tile: GemmTile; a: Orientation; b: Orientation; partitions: number; kSplit: number }
  | { path: "complex"; kernel: KernelInstance };

const ceilDiv = (x: number, y: number) => Math.ceil(x / y);

/** The split-K tile and partitioning, or null when a plain GEMM is the better choice. */
export function splitKPlan(M: number, N: number, K: number, batchCount: number): { tile: GemmTile; partitions: number; kSplit: number } | null {
  if (batchCount !== 1) return null;
  if (ceilDiv(M, 32) * ceilDiv(N, 32) > SPLITK_MAX_TILES) return null;
  if (K < SPLITK_MIN_K || K < SPLITK_K_OVER_MN * Math.max(M, N)) return null;
  const tile: GemmTile = { bm: M <= 16 ? 16 : 32, bn: N <= 16 ? 16 : 32, bk: 16, wm: 2, wn: 2 };
  const tiles = ceilDiv(M, tile.bm) * ceilDiv(N, tile.bn);
  const wanted = Math.min(Math.floor(K / SPLITK_MIN_PARTITION), ceilDiv(SPLITK_TARGET_GROUPS, tiles));
  const parts = Math.max(2, Math.min(SPLITK_MAX_PARTITIONS, wanted));
  const kSplit = ceilDiv(ceilDiv(K, parts), tile.bk) * tile.bk;
  return { tile, partitions: ceilDiv(K, kSplit), kSplit };
}

export function gemmTile(M: number, N: number, batchCount: number): GemmTile {
  return batchCount * ceilDiv(M, 64) * ceilDiv(N, 64) >= LARGE_TILE_MIN_GROUPS ? TILE_LARGE : TILE_SMALL;
}

const tileTag = (t: GemmTile) => `bm${t.bm}_bn${t.bn}_bk${t.bk}_wm${t.wm}_wn${t.wn}`;
const tileArgs = (t: GemmTile) => `${t.bm}, ${t.bn}, ${t.bk}, ${t.wm}, ${t.wn}`;

function plan(node: Node): Plan {
  const [a, b] = node.inputs;
  const dtype = node.outputs[0]!.dtype;
  const op = opName(node);
  const T = mslType(dtype, op);
  const tag = dtypeTag(dtype);
  const g = geometry(node);
  if (dtype === complex64) {
    return { path: "complex", kernel: { file: "gemm.metal", name: "mg_gemm_complex_c64", instantiation: "gemm_complex<complex64_t>" } };
  }
  if (dtype !== float32 && dtype !== float16 && dtype !== bfloat16) {
    throw new TypeError(`[${op}] ${dtype.name} has no GPU matmul kernel (float32, float16, bfloat16, complex64).`);
  }
  const nd = a!.ndim;
  const sa = stridesOf(a!);
  const sb = stridesOf(b!);
  if (g.M === 1 || g.N === 1) {
    // The matrix is A when N == 1, Bᵀ when M == 1; gemv_t when it runs along the outputs.
    const rows = g.N === 1 ? g.M : g.N;
    const [si, sk] = g.N === 1 ? [sa[nd - 2]!, sa[nd - 1]!] : [sb[nd - 1]!, sb[nd - 2]!];
    const transposed = rows > 1 && Math.abs(sk) !== 1 && si === 1;
    const kernel = transposed
      ? { file: "gemv.metal", name: `mg_gemv_t_${tag}_bn32_sk${GEMV_T_SLICES}`, instantiation: `gemv_t<${T}, ${GEMV_T_SLICES}>` }
      : { file: "gemv.metal", name: `mg_gemv_${tag}_bm${GEMV_ROWS_PER_GROUP}`, instantiation: `gemv<${T}, ${GEMV_ROWS_PER_GROUP}>` };
    return { path: "gemv", kernel, transposed };
  }
  const oa = orientation(g.M, g.K, sa[nd - 2]!, sa[nd - 1]!);
  const ob = orientation(g.K, g.N, sb[nd - 2]!, sb[nd - 1]!);
  const ta = oa.kind === "col";
  const tb = ob.kind === "col";
  const mode = `${ta ? "t" : "n"}${tb ? "t" : "n"}`;
  const split = splitKPlan(g.M, g.N, g.K, g.batchCount);
  if (split) {
    const t = split.tile;
    return {
      path: "split-k",
      kernel: { file: "gemm.metal", name: `mg_gemm_splitk_${mode}_${tag}_${tileTag(t)}`, instantiation: `gemm_splitk<${T}, ${tileArgs(t)}, ${ta}, ${tb}>` },
      reduce: { file: "gemm.metal", name: `mg_gemm_splitk_reduce_${tag}`, instantiation: `gemm_splitk_reduce<${T}>` },
      tile: t,
      a: oa,
      b: ob,
      partitions: split.partitions,
      kSplit: split.kSplit,
    };
  }
  const t = gemmTile(g.M, g.N, g.batchCount);
  return {
    path: "gemm",
    kernel: { file: "gemm.metal", name: `mg_gemm_${mode}_${tag}_${tileTag(t)}`, instantiation: `gemm<${T}, ${tileArgs(t)}, ${ta}, ${tb}>` },
    tile: t,
    a: oa,
    b: ob,
  };
}

/** The kernel instances a node will need (inputs not materialised yet are predicted row-major). */
function matmulKernels(node: Node): KernelInstance[] {
  const out = node.outputs[0]!;
  if (out.size === 0) return [];
  const p = plan(node);
  const list = [p.kernel];
  if (p.path === "split-k") list.push(p.reduce);
  if (p.path === "gemm" || p.path === "split-k") {
    if (p.a.kind === "copy") list.push(...copyKernel(node.inputs[0]!));
    if (p.b.kind === "copy") list.push(...copyKernel(node.inputs[1]!));
  }
  return list;
}

// ---------------------------------------------------------------------------------------------
// Encoding

/** Alpha, beta and whether C is read (BLAS: beta == 0 never reads C, so its NaNs cannot leak). */
interface Epilogue {
  alpha: number;
  beta: number;
  useC: boolean;
}

/** Packs GemmParams (gemm.metal): seven int64, six int32, two float32 — 88 bytes. */
function gemmParams(index: number, v: {
  aBase: number; bBase: number; cBase: number; lda: number; ldb: number; cSm: number; cSn: number;
  M: number; N: number; K: number; kSplit: number; batchNdim: number; useC: boolean; alpha: number; beta: number;
}): InlineBytes {
  const buf = new ArrayBuffer(88);
  const dv = new DataView(buf);
  [v.aBase, v.bBase, v.cBase, v.lda, v.ldb, v.cSm, v.cSn].forEach((x, i) => dv.setBigInt64(8 * i, BigInt(x), true));
  [v.M, v.N, v.K, v.kSplit, v.batchNdim, v.useC ? 1 : 0].forEach((x, i) => dv.setInt32(56 + 4 * i, x, true));
  dv.setFloat32(80, v.alpha, true);
  dv.setFloat32(84, v.beta, true);
  return { index, data: new Uint8Array(buf) };
}

/** Packs GemvParams (gemv.metal): seven int64, four int32, two float32 — 80 bytes. */
function gemvParams(index: number, v: {
  matBase: number; vecBase: number; cBase: number; matSi: number; matSk: number; vecSk: number; cSi: number;
  rows: number; K: number; batchNdim: number; useC: boolean; alpha: number; beta: number;
}): InlineBytes {
  const buf = new ArrayBuffer(80);
  const dv = new DataView(buf);
  [v.matBase, v.vecBase, v.cBase, v.matSi, v.matSk, v.vecSk, v.cSi].forEach((x, i) => dv.setBigInt64(8 * i, BigInt(x), true));
  [v.rows, v.K, v.batchNdim, v.useC ? 1 : 0].forEach((x, i) => dv.setInt32(56 + 4 * i, x, true));
  dv.setFloat32(72, v.alpha, true);
  dv.setFloat32(76, v.beta, true);
  return { index, data: new Uint8Array(buf) };
}

/** Packs ComplexGemmParams (gemm.metal): six int64, four int32 — 64 bytes. */
function complexParams(index: number, v: { aBase: number; bBase: number; aSm: number; aSk: number; bSk: number; bSn: number; M: number; N: number; K: number; batchNdim: number }): InlineBytes {
  const buf = new ArrayBuffer(64);
  const dv = new DataView(buf);
  [v.aBase, v.bBase, v.aSm, v.aSk, v.bSk, v.bSn].forEach((x, i) => dv.setBigInt64(8 * i, BigInt(x), true));
  [v.M, v.N, v.K, v.batchNdim].forEach((x, i) => dv.setInt32(48 + 4 * i, x, true));
  return { index, data: new Uint8Array(buf) };
}

/** An operand bound for a kernel, with strides for every axis of its (batch…, rows, cols) shape. */
interface Operand {
  bound: BoundArray;
  strides: readonly number[];
}

function bindInput(enc: GpuEncoder, a: MgArray, index: number): Operand {
  const bound = enc.input(a, index);
  return { bound, strides: bound.strides };
}

/**
 * Copies a GEMM operand that is neither row- nor column-major into row-contiguous scratch (noted
 * in the trace) with the strided copy kernel. Broadcast batch axes (stride 0) stay broadcast: one
 * copy per distinct matrix.
 */
function bindCopy(enc: GpuEncoder, node: Node, a: MgArray, which: string, index: number): Operand {
  const nd = a.ndim;
  const strides = a.layout!.strides;
  const kept = a.shape.map((d, i) => (i < nd - 2 && strides[i] === 0 ? 1 : d));
  const length = kept.reduce((x, y) => x * y, 1) * a.dtype.size;
  const scratch = enc.temporary(length);
  const distinct = kept.some((d, i) => d !== a.shape[i]) ? ` of its ${formatShape(kept)} distinct matrices` : "";
  enc.note(
    `copy: ${opName(node)} operand ${which} ${a.describe()} has strides (${strides.join(",")}), neither row- nor column-major in its last two axes; the GEMM reads a row-contiguous copy${distinct}`,
  );
  encodeCopyInto(enc, a, { index: 1, buffer: scratch, length, access: "write" }, { primitive: node.primitive.name, outputs: [a] }, kept);
  const copied = rowMajorStrides(kept).map((s, i) => (kept[i] !== a.shape[i] ? 0 : s));
  return { bound: { binding: { index, buffer: scratch, length, access: "read" }, base: 0, strides: copied, rowContiguous: true }, strides: copied };
}

function encodeMatmul(enc: GpuEncoder, node: Node, e: Epilogue): void {
  const out = node.outputs[0]!;
  const p = plan(node);
  const g = geometry(node);
  const [a, b, c] = node.inputs;
  const nd = out.ndim;
  // A TF32-class or NAX GEMM would be chosen here for float32 under policy "high"; none exists.
  const policy =
    (node.params as { precision?: "high" }).precision === "high" && out.dtype === float32
      ? ['precision policy matmul="high" allows TF32-class/NAX kernels; metalgrad has none, so this GEMM is IEEE fp32']
      : [];
  const trace = (layout: string, notes: string[] = []) => ({
    primitives: [node.primitive.name],
    inputs: node.inputs,
    outputs: node.outputs,
    layout,
    precision: matmulPrecision(out.dtype),
    notes: [...notes, ...policy],
  });

  if (p.path === "complex") {
    const A = bindInput(enc, a!, 0);
    const B = bindInput(enc, b!, 1);
    const D = enc.output(out, 2);
    const batch = collapseBatch(g.batchShape, [A.strides, B.strides]);
    const pipeline = kernelPipeline(p.kernel);
    enc.dispatch(
      {
        pipeline,
        buffers: [A.bound.binding, B.bound.binding, D.binding],
        bytes: [
          complexParams(3, {
            aBase: A.bound.base, bBase: B.bound.base, aSm: A.strides[nd - 2]!, aSk: A.strides[nd - 1]!, bSk: B.strides[nd - 2]!, bSn: B.strides[nd - 1]!,
            M: g.M, N: g.N, K: g.K, batchNdim: batch.shape.length,
          }),
          int32Bytes(4, batch.shape),
          int64Bytes(5, batch.strides.flat()),
        ],
        grid: [g.N, g.M, g.batchCount],
        threadgroup: [Math.min(32, g.N), Math.min(8, g.M), 1],
        mustWrite: [2],
      },
      trace("complex", ["complex64: one thread per output element, no simdgroup matrices"]),
    );
    return;
  }

  if (p.path === "gemv") {
    const A = bindInput(enc, a!, g.N === 1 ? 0 : 1);
    const B = bindInput(enc, b!, g.N === 1 ? 1 : 0);
    const C = c && e.useC ? bindInput(enc, c, 2) : { bound: { ...A.bound, binding: { ...A.bound.binding, index: 2 } }, strides: out.shape.map(() => 0) };
    const D = enc.output(out, 3);
    // N == 1: matrix A (rows M), vector B[:, 0]. M == 1: matrix Bᵀ (rows N), vector A[0, :].
    const [mat, vec] = g.N === 1 ? [A, B] : [B, A];
    const matSi = g.N === 1 ? A.strides[nd - 2]! : B.strides[nd - 1]!;
    const matSk = g.N === 1 ? A.strides[nd - 1]! : B.strides[nd - 2]!;
    const vecSk = g.N === 1 ? B.strides[nd - 2]! : A.strides[nd - 1]!;
    const cSi = g.N === 1 ? C.strides[nd - 2]! : C.strides[nd - 1]!;
    const rows = g.N === 1 ? g.M : g.N;
    const batch = collapseBatch(g.batchShape, [mat.strides, vec.strides, C.strides]);
    const pipeline = kernelPipeline(p.kernel);
    const [groups, threads] = p.transposed ? [ceilDiv(rows, 32), 32 * GEMV_T_SLICES] : [ceilDiv(rows, GEMV_ROWS_PER_GROUP), 32 * GEMV_ROWS_PER_GROUP];
    enc.dispatch(
      {
        pipeline,
        buffers: [mat.bound.binding, vec.bound.binding, C.bound.binding, D.binding],
        bytes: [
          gemvParams(4, {
            matBase: mat.bound.base, vecBase: vec.bound.base, cBase: C.bound.base, matSi, matSk, vecSk, cSi,
            rows, K: g.K, batchNdim: batch.shape.length, useC: e.useC, alpha: e.alpha, beta: e.beta,
          }),
          int32Bytes(5, batch.shape),
          int64Bytes(6, batch.strides.flat()),
        ],
        grid: [groups, 1, g.batchCount],
        threadgroup: [threads, 1, 1],
        mode: "threadgroups",
        mustWrite: [3],
      },
      trace("gemv"),
    );
    return;
  }

  // gemm and split-k: copies first (their own dispatches), then the product.
  const notes: string[] = [];
  const A = p.a.kind === "copy" ? bindCopy(enc, node, a!, "A", 0) : bindInput(enc, a!, 0);
  const B = p.b.kind === "copy" ? bindCopy(enc, node, b!, "B", 1) : bindInput(enc, b!, 1);
  if (p.a.kind === "copy") notes.push("A read from a row-contiguous copy (see the copy's record)");
  if (p.b.kind === "copy") notes.push("B read from a row-contiguous copy (see the copy's record)");
  const ld = (o: Operand, which: Orientation) => (which.kind === "col" ? o.strides[nd - 1]! : o.strides[nd - 2]!);
  const lda = ld(A, p.a);
  const ldb = ld(B, p.b);
  const t = p.tile;
  const threads = t.wm * t.wn * 32;

  if (p.path === "split-k") {
    const C = c && e.useC ? bindInput(enc, c, 1) : null;
    const partialBytes = p.partitions * g.M * g.N * float32.size;
    const partials = enc.temporary(partialBytes);
    const params = (index: number) =>
      gemmParams(index, {
        aBase: A.bound.base, bBase: B.bound.base, cBase: C ? C.bound.base : 0, lda, ldb,
        cSm: C ? C.strides[nd - 2]! : 0, cSn: C ? C.strides[nd - 1]! : 0,
        M: g.M, N: g.N, K: g.K, kSplit: p.kSplit, batchNdim: 0, useC: e.useC, alpha: e.alpha, beta: e.beta,
      });
    enc.dispatch(
      {
        pipeline: kernelPipeline(p.kernel),
        buffers: [A.bound.binding, B.bound.binding, { index: 2, buffer: partials, length: partialBytes, access: "write" }],
        bytes: [params(3)],
        grid: [ceilDiv(g.N, t.bn), ceilDiv(g.M, t.bm), p.partitions],
        threadgroup: [threads, 1, 1],
        mode: "threadgroups",
        mustWrite: [2],
      },
      trace("split-k", [
        ...notes,
        `split-k: K = ${g.K} in ${p.partitions} partitions of ${p.kSplit}, float32 partial sums (${p.partitions}×${g.M}×${g.N} scratch) summed in order by ${p.reduce.name}`,
      ]),
    );
    const P: BufferBinding = { index: 0, buffer: partials, length: partialBytes, access: "read" };
    const D = enc.output(out, 2);
    const tx = Math.min(32, g.N);
    enc.dispatch(
      {
        pipeline: kernelPipeline(p.reduce),
        buffers: [P, C ? C.bound.binding : { ...P, index: 1 }, D.binding],
        bytes: [params(3), int32Bytes(4, [p.partitions])],
        grid: [g.N, g.M, 1],
        threadgroup: [tx, Math.max(1, Math.min(g.M, Math.floor(256 / tx))), 1],
        mustWrite: [2],
      },
      trace("split-k reduce"),
    );
    return;
  }

  const C = c && e.useC ? bindInput(enc, c, 2) : { bound: { ...A.bound, binding: { ...A.bound.binding, index: 2 } }, strides: out.shape.map(() => 0) };
  const D = enc.output(out, 3);
  const batch = collapseBatch(g.batchShape, [A.strides, B.strides, C.strides]);
  enc.dispatch(
    {
      pipeline: kernelPipeline(p.kernel),
      buffers: [A.bound.binding, B.bound.binding, C.bound.binding, D.binding],
      bytes: [
        gemmParams(4, {
          aBase: A.bound.base, bBase: B.bound.base, cBase: C.bound.base, lda, ldb,
          cSm: C.strides[nd - 2]!, cSn: C.strides[nd - 1]!,
          M: g.M, N: g.N, K: g.K, kSplit: g.K, batchNdim: batch.shape.length, useC: e.useC, alpha: e.alpha, beta: e.beta,
        }),
        int32Bytes(5, batch.shape),
        int64Bytes(6, batch.strides.flat()),
      ],
      grid: [ceilDiv(g.N, t.bn), ceilDiv(g.M, t.bm), g.batchCount],
      threadgroup: [threads, 1, 1],
      mode: "threadgroups",
      mustWrite: [3],
    },
    trace("gemm", notes),
  );
}

registerGpu(Matmul, { kind: "kernel", kernels: matmulKernels, encode: (enc, node) => encodeMatmul(enc, node, { alpha: 1, beta: 0, useC: false }) });
registerGpu(AddMM, {
  kind: "kernel",
  kernels: matmulKernels,
  encode: (enc, node) => encodeMatmul(enc, node, { alpha: node.params.alpha, beta: node.params.beta, useC: node.params.beta !== 0 }),
});
