// Sorting on the GPU (Sources/Kernels/sort.metal): Sort, ArgSort, Partition, ArgPartition and
// SearchSorted. Elements compare as (key, index) pairs, a strict total order, so the results equal
// the CPU device's stable sort exactly. Rows of up to SORT_BLOCK elements sort in one threadgroup
// (short rows several to a threadgroup); longer rows sort in blocks and are merged in passes
// through scratch memory.
// Partitions are full sorts: a sorted row is a valid partition around every kth.
import type { MgArray, Node } from "../../core/array.ts";
import { complex64, type Dtype, int64, uint64 } from "../../core/dtype.ts";
import { ArgPartition, ArgSort, type AxisParams, Partition, SearchSorted, Sort } from "../../core/primitives/sort.ts";
import { Precision } from "../../core/trace.ts";
import type { BufferBinding, InlineBytes } from "../runtime.ts";
import { dtypeTag, mslType } from "./dtypes.ts";
import { type BoundArray, type GpuEncoder, int32Bytes, int64Bytes } from "./encoder.ts";
import { type KernelInstance, kernelPipeline } from "./kernels.ts";
import { elementwiseGrid, linearThreadgroup, nextPow2, without } from "./launch.ts";
import { type KernelRule, registerGpu } from "./registry.ts";

/** Elements one threadgroup sorts (a power of two): 2048 pairs of 64-bit keys use 24 KiB. */
export const SORT_BLOCK = 2048;
/** Sorted positions one merge thread writes (kMergePerThread in sort.metal). */
const MERGE_PER_THREAD = 8;
/**
 * Threads of a block-sort threadgroup: each owns block/threads consecutive positions (16 for a
 * full block), so the bitonic steps inside a chunk need no barrier — 35 barriers for 2048
 * elements instead of 66.
 */
const SORT_THREADS = 128;

/** SortOutput in sort.metal. */
const enum Mode {
  Indices = 0,
  Values = 1,
  Runs = 2,
}

/** The unsigned key type a dtype sorts by: 64-bit for 64-bit integers and complex numbers. */
function keyType(d: Dtype): "uint" | "ulong" {
  return d === int64 || d === uint64 || d === complex64 ? "ulong" : "uint";
}

function sortKernels(dtype: Dtype, n: number, op: string): KernelInstance[] {
  const T = mslType(dtype, op);
  const K = keyType(dtype);
  const tag = dtypeTag(dtype);
  const block: KernelInstance = { file: "sort.metal", name: `mg_sort_block_${tag}`, instantiation: `sort_block<${T}, ${K}>` };
  if (n <= SORT_BLOCK) return [block];
  return [block, { file: "sort.metal", name: `mg_sort_merge_${tag}`, instantiation: `sort_merge<${T}, ${K}>` }];
}

/** The block sort needs a power-of-two thread count (each thread owns an equal chunk). */
function pow2Floor(n: number): number {
  let p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

interface SortGeometry {
  inBase: number;
  inStride: number;
  outStride: number;
  n: number;
  rows: number;
  block: number;
  segment: number;
  width: number;
  mode: Mode;
  ndim: number;
}

/** The SortRows struct of sort.metal (56 bytes: three int64, seven 32-bit fields, padding). */
function sortRows(index: number, f: SortGeometry): InlineBytes {
  const buf = new ArrayBuffer(56);
  const v = new DataView(buf);
  v.setBigInt64(0, BigInt(f.inBase), true);
  v.setBigInt64(8, BigInt(f.inStride), true);
  v.setBigInt64(16, BigInt(f.outStride), true);
  v.setUint32(24, f.n, true);
  v.setUint32(28, f.rows, true);
  v.setUint32(32, f.block, true);
  v.setUint32(36, f.segment, true);
  v.setUint32(40, f.width, true);
  v.setInt32(44, f.mode, true);
  v.setInt32(48, f.ndim, true);
  return { index, data: new Uint8Array(buf) };
}

function layoutName(a: MgArray): string {
  return a.layout!.rowContiguous ? "contiguous" : "strided";
}

/** Encodes the node's sort along `axis`: the sorting indices (uint32) or the sorted values. */
function encodeSort(enc: GpuEncoder, node: Node, axis: number, what: "indices" | "values"): void {
  const x = node.inputs[0]!;
  const out = node.outputs[0]!;
  const op = node.primitive.name;
  const n = x.shape[axis]!;
  if (n >= 2 ** 32) throw new Error(`[${op}] rows of ${n} elements are too long for the GPU sort (at most 2^32 - 1).`);
  const rows = x.size / n;
  const kernels = sortKernels(x.dtype, n, op);
  const keyBytes = keyType(x.dtype) === "ulong" ? 8 : 4;

  const input = enc.input(x, 0);
  const output = enc.output(out, what === "values" ? 1 : 2);
  const rowShape = without(x.shape, axis);
  const geometry = [
    int32Bytes(5, rowShape),
    int64Bytes(6, without(input.strides, axis)),
    int64Bytes(7, without(output.strides, axis)),
  ];
  const base = { inBase: input.base, inStride: input.strides[axis]!, outStride: output.strides[axis]!, n, rows, ndim: rowShape.length };
  // Slots a pass does not touch are bound to the input (read-only), so every argument has a buffer.
  const unused = (index: number): BufferBinding => ({ ...input.binding, index });
  const finalMode = what === "values" ? Mode.Values : Mode.Indices;
  const finalBindings = (): BufferBinding[] => (what === "values" ? [output.binding, unused(2), unused(3)] : [unused(1), output.binding, unused(3)]);
  const notes = op === "Partition" || op === "ArgPartition" ? ["full sort: a sorted row is a valid partition around every kth"] : [];
  const trace = { primitives: [op], inputs: [x], outputs: [out], precision: Precision.exact, notes };
  const layout = layoutName(x);

  const blockPipeline = kernelPipeline(kernels[0]!);
  if (n <= SORT_BLOCK) {
    // Short rows share a threadgroup, each in its own power-of-two segment of the block.
    const segment = nextPow2(n);
    const perGroup = Math.min(SORT_BLOCK / segment, nextPow2(rows));
    const block = segment * perGroup;
    const threads = pow2Floor(Math.max(1, Math.min(SORT_THREADS, block / 2, blockPipeline.maxTotalThreadsPerThreadgroup)));
    enc.dispatch(
      {
        pipeline: blockPipeline,
        buffers: [input.binding, ...finalBindings()],
        bytes: [sortRows(4, { ...base, block, segment, width: 0, mode: finalMode }), ...geometry],
        threadgroupMemory: tgMemory(block, keyBytes),
        grid: [threads, Math.ceil(rows / perGroup), 1],
        threadgroup: [threads, 1, 1],
        mustWrite: [output.binding.index],
      },
      { ...trace, layout: `${layout}, ${perGroup === 1 ? "one row" : `${perGroup} rows`} per threadgroup` },
    );
    return;
  }

  // Long rows: sort blocks into runs, then merge runs pairwise until one remains.
  const total = rows * n;
  const blocks = Math.ceil(n / SORT_BLOCK);
  const passes = Math.ceil(Math.log2(blocks));
  // Ping-pong scratch: a second set only when an intermediate pass writes runs.
  const runs = Array.from({ length: passes > 1 ? 2 : 1 }, () => ({ keys: enc.temporary(total * keyBytes), idx: enc.temporary(total * 4) }));
  const threads = pow2Floor(Math.min(SORT_THREADS, blockPipeline.maxTotalThreadsPerThreadgroup));
  const runBindings = (r: (typeof runs)[number], keysIndex: number, idxIndex: number, access: "read" | "write"): BufferBinding[] => [
    { index: idxIndex, buffer: r.idx, offset: 0, length: total * 4, access },
    { index: keysIndex, buffer: r.keys, offset: 0, length: total * keyBytes, access },
  ];
  enc.dispatch(
    {
      pipeline: blockPipeline,
      buffers: [input.binding, unused(1), ...runBindings(runs[0]!, 3, 2, "write")],
      bytes: [sortRows(4, { ...base, block: SORT_BLOCK, segment: SORT_BLOCK, width: 0, mode: Mode.Runs }), ...geometry],
      threadgroupMemory: tgMemory(SORT_BLOCK, keyBytes),
      grid: [blocks * threads, rows, 1],
      threadgroup: [threads, 1, 1],
      mustWrite: [2, 3],
    },
    { ...trace, layout: `${layout}, ${blocks} blocks of ${SORT_BLOCK} per row`, notes: [...notes, `${blocks} sorted runs per row, merged in ${passes} passes through scratch`] },
  );
  const mergePipeline = kernelPipeline(kernels[1]!);
  const mergeThreads = Math.ceil(n / MERGE_PER_THREAD);
  let from = 0;
  for (let width = SORT_BLOCK; width < n; width *= 2) {
    const last = width * 2 >= n;
    const src = runs[from]!;
    const buffers = last ? [input.binding, ...finalBindings()] : [input.binding, unused(1), ...runBindings(runs[1 - from]!, 3, 2, "write")];
    enc.dispatch(
      {
        pipeline: mergePipeline,
        buffers: [...buffers, ...runBindings(src, 8, 9, "read")],
        bytes: [sortRows(4, { ...base, block: SORT_BLOCK, segment: SORT_BLOCK, width, mode: last ? finalMode : Mode.Runs }), ...geometry],
        grid: [mergeThreads, rows, 1],
        threadgroup: linearThreadgroup(mergePipeline, mergeThreads),
        mustWrite: last ? [output.binding.index] : [2, 3],
      },
      { ...trace, layout: `merge runs of ${width}`, notes: [] },
    );
    from = 1 - from;
  }
}

/** Threadgroup memory for `block` keys and indices (lengths are multiples of 16 bytes in Metal). */
function tgMemory(block: number, keyBytes: number): { index: number; length: number }[] {
  const round = (b: number) => Math.ceil(b / 16) * 16;
  return [
    { index: 0, length: round(block * keyBytes) },
    { index: 1, length: round(block * 4) },
  ];
}

/** The GPU rule of Sort / Partition (values) and ArgSort / ArgPartition (indices). */
function sortRule(what: "indices" | "values"): KernelRule<AxisParams> {
  return {
    kind: "kernel",
    kernels: (node) => sortKernels(node.inputs[0]!.dtype, node.inputs[0]!.shape[node.params.axis]!, node.primitive.name),
    encode: (enc, node) => encodeSort(enc, node, node.params.axis, what),
  };
}

registerGpu(Sort, sortRule("values"));
registerGpu(Partition, sortRule("values"));
registerGpu(ArgSort, sortRule("indices"));
registerGpu(ArgPartition, sortRule("indices"));

// ---------------------------------------------------------------------------------------------
// SearchSorted

function searchKernel(dtype: Dtype): KernelInstance {
  return { file: "sort.metal", name: `mg_searchsorted_${dtypeTag(dtype)}`, instantiation: `search_sorted<${mslType(dtype, "searchsorted")}>` };
}

/** The SearchParams struct of sort.metal (48 bytes). */
function searchParams(index: number, seq: BoundArray, seqN: number, values: BoundArray, size: number, right: boolean, ndim: number): InlineBytes {
  const buf = new ArrayBuffer(48);
  const v = new DataView(buf);
  v.setBigInt64(0, BigInt(seq.base), true);
  v.setBigInt64(8, BigInt(seq.strides[0] ?? 1), true);
  v.setBigInt64(16, BigInt(values.base), true);
  v.setBigInt64(24, BigInt(size), true);
  v.setUint32(32, seqN, true);
  v.setInt32(36, right ? 1 : 0, true);
  v.setInt32(40, ndim, true);
  v.setInt32(44, values.rowContiguous ? 1 : 0, true);
  return { index, data: new Uint8Array(buf) };
}

registerGpu(SearchSorted, {
  kind: "kernel",
  kernels: (node) => [searchKernel(node.inputs[0]!.dtype)],
  encode(enc, node) {
    const [a, v] = node.inputs as [MgArray, MgArray];
    const out = node.outputs[0]!;
    const right = node.params.right;
    if (a.size >= 2 ** 32) throw new Error(`[searchsorted] a sequence of ${a.size} elements is too long for the GPU (at most 2^32 - 1).`);
    const pipeline = kernelPipeline(searchKernel(a.dtype));
    const seq = enc.input(a, 0);
    const values = enc.input(v, 1);
    const o = enc.output(out, 2);
    const n = out.size;
    // An empty sequence reads nothing: bind the values in its place so the slot is valid.
    const seqBinding = a.size === 0 ? { ...values.binding, index: 0 } : seq.binding;
    const grid = elementwiseGrid(n);
    enc.dispatch(
      {
        pipeline,
        buffers: [seqBinding, values.binding, o.binding],
        bytes: [searchParams(3, seq, a.size, values, n, right, v.ndim), int32Bytes(4, v.shape), int64Bytes(5, values.strides)],
        grid,
        threadgroup: linearThreadgroup(pipeline, grid[0]),
        mustWrite: [2],
      },
      { primitives: ["SearchSorted"], inputs: [a, v], outputs: [out], layout: values.rowContiguous ? "contiguous" : "strided", precision: Precision.exact },
    );
  },
});
