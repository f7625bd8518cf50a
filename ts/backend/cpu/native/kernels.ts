// Encoding nodes as native CPU kernel calls (Sources/MGCpu). Each function returns true when the
// native kernel ran (its outputs hold data) and false when no native kernel exists for the case:
// then nothing was written and the caller runs the TypeScript reference.
import type { MgArray, Node } from "../../../core/array.ts";
import type { Primitive } from "../../../core/primitive.ts";
import type { Dtype } from "../../../core/dtype.ts";
import { Select } from "../../../core/primitives/elementwise.ts";
import type { ReduceParams } from "../../../core/primitives/reduce.ts";
import type { ScanParams } from "../../../core/primitives/scan.ts";
import type { ArgReduceParams } from "../../../core/primitives/argreduce.ts";
import type { AddMMParams } from "../../../core/primitives/matmul.ts";
import { Descriptor, native } from "./ffi.ts";
import { DivModPrimitive, Op, opcodeOf } from "./opcodes.ts";

/** The descriptor every native call fills (one, reused: calls are synchronous). */
export const desc = new Descriptor();

/** The address of an evaluated array's first element, or -1 when its memory is not native. */
export function addressOf(a: MgArray): number {
  const l = a.layout!;
  const nb = l.storage.buffer.native;
  if (!nb) return -1;
  return nb.address + l.offset * a.dtype.size;
}

export function pushShape(shape: readonly number[]): void {
  for (let i = 0; i < shape.length; i++) desc.d[desc.n++] = shape[i]!;
}

export function pushStrides(a: MgArray): void {
  const s = a.layout!.strides;
  for (let i = 0; i < s.length; i++) desc.d[desc.n++] = s[i]!;
}

/**
 * Allocates outputs; on failure they are discarded again (the reference allocates its own).
 * `inPlace`: the kernel reads every element of an input before (or where) it writes the output's
 * element of the same index, so an output may take over the buffer of an input it alone reads
 * (MgArray.allocateInPlace: MLX's donation).
 */
export function allocate(outputs: readonly MgArray[], inPlace = false): boolean {
  for (const o of outputs) {
    if (inPlace) o.allocateInPlace();
    else o.allocate();
    if (addressOf(o) < 0) {
      for (const x of outputs) x.discardData();
      return false;
    }
  }
  return true;
}

export function discard(outputs: readonly MgArray[]): void {
  for (const o of outputs) o.discardData();
}

// (op, dtype, output dtype) combinations the native side declined: never asked again.
const declined = new Set<number>();
const comboKey = (op: number, d: number, o: number) => op * 256 + d * 16 + o;

/** The instruction dtype of an elementwise node: its inputs' (Select: its values'). */
function instrDtype(node: Node): Dtype {
  return node.inputs[node.primitive === Select ? 1 : 0]!.dtype;
}
function recordDtype(p: Primitive<unknown>, inputs: readonly MgArray[]): Dtype {
  return inputs[p === Select ? 1 : 0]!.dtype;
}

/** Whether an elementwise node can be an instruction of a native program (its op is known and
 *  its dtypes were not declined before). */
export function nativeElementwiseOp(node: Node): boolean {
  const op = opcodeOf(node.primitive);
  if (op < 0) return node.primitive === DivModPrimitive;
  return !declined.has(comboKey(op, instrDtype(node).index, node.outputs[0]!.dtype.index));
}

/** One elementwise node (or DivMod) as a one- or two-instruction program. */
export function runElementwise(p: Primitive<unknown>, inputs: readonly MgArray[], outputs: readonly MgArray[]): boolean {
  const divmod = p === DivModPrimitive;
  const op = divmod ? Op.DivModQuotient : opcodeOf(p);
  if (op < 0) return false;
  const dt = recordDtype(p, inputs).index;
  const odt = outputs[0]!.dtype.index;
  const key = comboKey(op, dt, odt);
  if (declined.has(key)) return false;
  const shape = outputs[0]!.shape;
  const nd = shape.length;
  const nIn = inputs.length;
  for (let k = 0; k < nIn; k++) if (addressOf(inputs[k]!) < 0) return false;
  if (!allocate(outputs, true)) return false;
  desc.n = 0;
  desc.reserve(8 + nd * (nIn + 1) + 3 * nIn + 2 * 3 + 14);
  const d = desc.d;
  d[0] = nd;
  d[1] = nIn;
  d[2] = outputs.length;
  d[3] = 0;
  d[4] = outputs.length;
  desc.n = 5;
  pushShape(shape);
  for (let k = 0; k < nIn; k++) {
    const a = inputs[k]!;
    d[desc.n++] = addressOf(a);
    d[desc.n++] = a.dtype.index;
    pushStrides(a);
  }
  for (let k = 0; k < outputs.length; k++) {
    d[desc.n++] = addressOf(outputs[k]!);
    d[desc.n++] = outputs[k]!.dtype.index;
  }
  for (let k = 0; k < outputs.length; k++) {
    d[desc.n++] = divmod ? (k === 0 ? Op.DivModQuotient : Op.DivModRemainder) : op;
    d[desc.n++] = dt;
    d[desc.n++] = outputs[k]!.dtype.index;
    d[desc.n++] = nIn + k;
    d[desc.n++] = 0;
    d[desc.n++] = nIn > 1 ? 1 : -1;
    d[desc.n++] = nIn > 2 ? 2 : -1;
  }
  if (desc.call(native().mg_cpu_elementwise)) return true;
  declined.add(key);
  discard(outputs);
  return false;
}

/**
 * A fused region: elementwise nodes of one output shape, in order, as one program over tiles.
 * `materialize` lists the outputs someone outside reads; the other intermediates live in tile
 * registers only (their arrays keep their nodes and are recomputed if read later).
 */
export function runRegion(nodes: readonly Node[], materialize: readonly MgArray[]): boolean {
  const shape = nodes[0]!.outputs[0]!.shape;
  const produced = new Map<MgArray, number>(); // array → node index
  nodes.forEach((n, i) => produced.set(n.outputs[0]!, i));
  // inputs: arrays read but not produced here, in first-use order
  const inputs: MgArray[] = [];
  const inputIndex = new Map<MgArray, number>();
  const lastUse = new Map<MgArray, number>();
  for (let i = 0; i < nodes.length; i++) {
    for (const x of nodes[i]!.inputs) {
      lastUse.set(x, i);
      if (!produced.has(x) && !inputIndex.has(x)) {
        if (addressOf(x) < 0) return false;
        inputIndex.set(x, inputs.length);
        inputs.push(x);
      }
    }
  }
  const nIn = inputs.length;
  const outIndex = new Map<MgArray, number>();
  materialize.forEach((o, k) => outIndex.set(o, nIn + k));
  const nOut = materialize.length;
  // temporaries: one per dtype still live, reused after their last read
  const temps: Dtype[] = [];
  const free = new Map<Dtype, number[]>();
  const operand = new Map<MgArray, number>();
  for (const [x, k] of inputIndex) operand.set(x, k);
  const instrs: number[] = [];
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i]!;
    const op = opcodeOf(n.primitive);
    if (op < 0) return false;
    const y = n.outputs[0]!;
    let dst = outIndex.get(y);
    if (dst === undefined) {
      const pool = free.get(y.dtype);
      if (pool && pool.length > 0) dst = pool.pop()!;
      else {
        dst = -1 - temps.length; // resolved after the inputs and outputs are counted
        temps.push(y.dtype);
      }
    }
    operand.set(y, dst);
    const src = n.inputs.map((x) => operand.get(x)!);
    instrs.push(op, instrDtype(n).index, y.dtype.index, dst, src[0]!, src[1] ?? NONE, src[2] ?? NONE);
    // release temporaries whose last reader this was
    for (const x of n.inputs) {
      const o = operand.get(x)!;
      if (o < 0 && o !== NONE && lastUse.get(x) === i && !outIndex.has(x)) {
        let pool = free.get(x.dtype);
        if (!pool) free.set(x.dtype, (pool = []));
        if (!pool.includes(o)) pool.push(o);
      }
    }
  }
  // A region output may take over an input's buffer: donatable inputs have one reader, the node of
  // that output, whose instruction reads each element before writing the same index.
  if (!allocate(materialize, true)) return false;
  const nd = shape.length;
  desc.n = 0;
  desc.reserve(5 + nd + nIn * (2 + nd) + 2 * nOut + temps.length + instrs.length);
  desc.push(nd);
  desc.push(nIn);
  desc.push(nOut);
  desc.push(temps.length);
  desc.push(instrs.length / 7);
  pushShape(shape);
  for (const a of inputs) {
    desc.push(addressOf(a));
    desc.push(a.dtype.index);
    pushStrides(a);
  }
  for (const o of materialize) {
    desc.push(addressOf(o));
    desc.push(o.dtype.index);
  }
  for (const t of temps) desc.push(t.index);
  const tempBase = nIn + nOut;
  for (let j = 0; j < instrs.length; j++) {
    const v = instrs[j]!;
    const field = j % 7;
    // operand fields (3..6): a negative operand is temporary number -1-v
    desc.push(field >= 3 && v < 0 && v !== NONE ? tempBase + (-1 - v) : v === NONE ? -1 : v);
  }
  if (desc.call(native().mg_cpu_elementwise)) return true;
  discard(materialize);
  return false;
}
const NONE = -0x7fffffff;

const REDUCE_TYPES = { sum: 0, prod: 1, max: 2, min: 3, and: 4, or: 5 } as const;

export function runReduce([a]: readonly MgArray[], [out]: readonly MgArray[], p: ReduceParams): boolean {
  if (!a || !out) return false;
  if (addressOf(a) < 0) return false;
  const nd = a.ndim;
  if (!allocate([out])) return false;
  desc.n = 0;
  desc.reserve(8 + 3 * nd);
  desc.push(nd);
  desc.push(REDUCE_TYPES[p.type]);
  desc.push(a.dtype.index);
  pushShape(a.shape);
  desc.push(addressOf(a));
  pushStrides(a);
  desc.push(p.axes.length);
  for (const ax of p.axes) desc.push(ax);
  desc.push(addressOf(out));
  if (desc.call(native().mg_cpu_reduce)) return true;
  discard([out]);
  return false;
}

export function runArgReduce([a]: readonly MgArray[], [out]: readonly MgArray[], p: ArgReduceParams): boolean {
  if (!a || !out || addressOf(a) < 0 || a.ndim === 0) return false;
  if (!allocate([out])) return false;
  desc.n = 0;
  desc.reserve(8 + 2 * a.ndim);
  desc.push(a.ndim);
  desc.push(a.dtype.index);
  desc.push(p.type === "argmax" ? 1 : 0);
  pushShape(a.shape);
  desc.push(addressOf(a));
  pushStrides(a);
  desc.push(p.axis);
  desc.push(addressOf(out));
  if (desc.call(native().mg_cpu_argreduce)) return true;
  discard([out]);
  return false;
}

/** Softmax (logSumExp false) or LogSumExp (true) over the last axis. */
export function runSoftmax([a]: readonly MgArray[], [out]: readonly MgArray[], logSumExp: boolean): boolean {
  if (!a || !out || addressOf(a) < 0 || a.ndim === 0) return false;
  // softmax reads a row (max, then each element) before writing it: in place is safe
  if (!allocate([out], !logSumExp)) return false;
  desc.n = 0;
  desc.reserve(6 + 2 * a.ndim);
  desc.push(a.ndim);
  desc.push(a.dtype.index);
  desc.push(logSumExp ? 1 : 0);
  pushShape(a.shape);
  desc.push(addressOf(a));
  pushStrides(a);
  desc.push(addressOf(out));
  if (desc.call(native().mg_cpu_softmax)) return true;
  discard([out]);
  return false;
}

const SCAN_TYPES = { sum: 0, prod: 1, max: 2, min: 3, logaddexp: 4 } as const;

export function runScan([a]: readonly MgArray[], [out]: readonly MgArray[], p: ScanParams): boolean {
  if (!a || !out || addressOf(a) < 0 || a.ndim === 0 || out.dtype !== a.dtype) return false;
  // a scan reads each element of a lane before writing the same index: in place is safe
  if (!allocate([out], true)) return false;
  desc.n = 0;
  desc.reserve(10 + 2 * a.ndim);
  desc.push(a.ndim);
  desc.push(a.dtype.index);
  desc.push(SCAN_TYPES[p.type]);
  desc.push(p.reverse ? 1 : 0);
  desc.push(p.inclusive ? 1 : 0);
  pushShape(a.shape);
  desc.push(addressOf(a));
  pushStrides(a);
  desc.push(p.axis);
  desc.push(addressOf(out));
  if (desc.call(native().mg_cpu_scan)) return true;
  discard([out]);
  return false;
}

function pushMatrix(x: MgArray, batchDims: number): void {
  const s = x.layout!.strides;
  const nd = x.ndim;
  desc.push(addressOf(x));
  for (let i = 0; i < batchDims; i++) desc.push(s[i]!);
  desc.push(s[nd - 2]!);
  desc.push(s[nd - 1]!);
}

/** Matmul (params null) or AddMM: out = alpha·(a·b) + beta·c. */
export function runMatmul(inputs: readonly MgArray[], [out]: readonly MgArray[], addmm: AddMMParams | null): boolean {
  const [a, b, c] = inputs;
  if (!out || addressOf(a!) < 0 || addressOf(b!) < 0 || (c && addressOf(c) < 0)) return false;
  const nd = a!.ndim;
  if (nd < 2 || b!.ndim !== nd || out.dtype !== a!.dtype) return false;
  const nb = nd - 2;
  const beta = addmm ? addmm.beta : 0;
  if (!allocate([out])) return false;
  desc.n = 0;
  desc.reserve(20 + 4 * nd);
  desc.push(a!.dtype.index);
  desc.push(nb);
  desc.push(a!.shape[nd - 2]!);
  desc.push(b!.shape[nd - 1]!);
  desc.push(a!.shape[nd - 1]!);
  for (let i = 0; i < nb; i++) desc.push(out.shape[i]!);
  pushMatrix(a!, nb);
  pushMatrix(b!, nb);
  desc.push(addressOf(out));
  desc.push(addmm ? addmm.alpha : 1);
  desc.push(beta);
  if (beta !== 0 && c) {
    if (c.ndim !== nd) {
      discard([out]);
      return false;
    }
    pushMatrix(c, nb);
  } else {
    desc.push(0);
    for (let i = 0; i < nb + 2; i++) desc.push(0);
  }
  if (desc.call(native().mg_cpu_matmul)) return true;
  discard([out]);
  return false;
}

/** A row-major copy of a strided view (bit for bit: an identity cast of same-sized integers). */
export function runCopy(src: MgArray, out: MgArray): boolean {
  if (addressOf(src) < 0 || src.dtype.size !== out.dtype.size) return false;
  const bits = [0, 1, 2, 0, 3, 0, 0, 0, 4][src.dtype.size]!; // uint8/16/32/64 by size
  if (bits === 0) return false;
  if (!allocate([out])) return false;
  const nd = src.ndim;
  desc.n = 0;
  desc.reserve(16 + 2 * nd);
  desc.push(nd);
  desc.push(1);
  desc.push(1);
  desc.push(0);
  desc.push(1);
  pushShape(src.shape);
  desc.push(addressOf(src));
  desc.push(bits);
  pushStrides(src);
  desc.push(addressOf(out));
  desc.push(bits);
  desc.push(Op.Cast);
  desc.push(bits);
  desc.push(bits);
  desc.push(1);
  desc.push(0);
  desc.push(-1);
  desc.push(-1);
  if (desc.call(native().mg_cpu_elementwise)) return true;
  discard([out]);
  return false;
}

// ---- data movement ------------------------------------------------------------------------------------

/** dst (at `dstAddress`, strides `dstStrides`) ← src over `shape`, bit for bit (zero source
 *  strides fill). */
export function copyStrided(shape: readonly number[], esize: number, src: number, srcStrides: readonly number[], dst: number, dstStrides: readonly number[]): boolean {
  const nd = shape.length;
  desc.n = 0;
  desc.reserve(6 + 3 * nd);
  desc.push(nd);
  desc.push(esize);
  pushShape(shape);
  desc.push(src);
  for (let i = 0; i < nd; i++) desc.push(srcStrides[i]!);
  desc.push(dst);
  for (let i = 0; i < nd; i++) desc.push(dstStrides[i]!);
  return desc.call(native().mg_cpu_copy);
}

export function rowMajor(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i]!;
  }
  return s;
}

export function runConcatenate(inputs: readonly MgArray[], [out]: readonly MgArray[], axis: number): boolean {
  if (!out) return false;
  for (const x of inputs) if (x.size > 0 && addressOf(x) < 0) return false;
  if (!allocate([out])) return false;
  const os = rowMajor(out.shape);
  const esize = out.dtype.size;
  const base = addressOf(out);
  let along = 0;
  for (const x of inputs) {
    if (x.size > 0 && !copyStrided(x.shape, esize, addressOf(x), x.layout!.strides, base + along * os[axis]! * esize, os)) {
      discard([out]);
      return false;
    }
    along += x.shape[axis]!;
  }
  return true;
}

/** out = value everywhere, then `a` at offset `low` (Pad). */
export function runPad([a, value]: readonly MgArray[], [out]: readonly MgArray[], low: readonly number[]): boolean {
  if (!a || !value || !out || addressOf(value) < 0 || (a.size > 0 && addressOf(a) < 0)) return false;
  if (!allocate([out])) return false;
  const esize = out.dtype.size;
  const os = rowMajor(out.shape);
  const ok =
    copyStrided(out.shape, esize, addressOf(value), out.shape.map(() => 0), addressOf(out), os) &&
    (a.size === 0 || copyStrided(a.shape, esize, addressOf(a), a.layout!.strides, addressOf(out) + low.reduce((acc, l, d) => acc + l * os[d]!, 0) * esize, os));
  if (!ok) discard([out]);
  return ok;
}

export function runArange([out]: readonly MgArray[], start: number, step: number, size: number): boolean {
  if (!out || !allocate([out])) return false;
  desc.n = 0;
  desc.push(out.dtype.index);
  desc.push(size);
  desc.push(start);
  desc.push(step);
  desc.push(size > 0 ? addressOf(out) : 0);
  if (desc.call(native().mg_cpu_arange)) return true;
  discard([out]);
  return false;
}

/** RandomBits: one Threefry stream per key (its key words come in the descriptor). */
export function runRandomBits([keys]: readonly MgArray[], [out]: readonly MgArray[], width: number): boolean {
  if (!keys || !out || keys.dtype.size !== 4) return false;
  const k = keys.dataSync() as Uint32Array;
  const numKeys = k.length / 2;
  if (!allocate([out])) return false;
  desc.n = 0;
  desc.reserve(3 + k.length);
  desc.push(numKeys);
  desc.push(numKeys === 0 ? 0 : (out.size / numKeys) * width);
  desc.push(out.size > 0 ? addressOf(out) : 0);
  for (let i = 0; i < k.length; i++) desc.push(k[i]!);
  if (desc.call(native().mg_cpu_random_bits)) return true;
  discard([out]);
  return false;
}

// ---- gathers ------------------------------------------------------------------------------------------------

/** Gather: slices of `a` at the index positions (index arrays share one broadcast shape). An index
 *  out of range declines (the reference zero-fills or throws, as configured). */
export function runGather([a, ...idx]: readonly MgArray[], [out]: readonly MgArray[], axes: readonly number[], sliceSizes: readonly number[]): boolean {
  if (!a || !out || out.dtype.size > 8 || ![1, 2, 4, 8].includes(a.dtype.size)) return false;
  const ishape = idx[0]?.shape ?? [];
  const nonEmpty = out.size > 0;
  if (nonEmpty && (addressOf(a) < 0 || idx.some((x) => addressOf(x) < 0))) return false;
  if (!allocate([out])) return false;
  const nd = a.ndim;
  desc.n = 0;
  desc.reserve(10 + 3 * nd + ishape.length + idx.length * (2 + ishape.length) + axes.length);
  desc.push(nd);
  desc.push(a.dtype.size);
  pushShape(a.shape);
  desc.push(nonEmpty ? addressOf(a) : 0);
  pushStrides(a);
  desc.push(idx.length);
  desc.push(ishape.length);
  pushShape(ishape);
  for (const x of idx) {
    desc.push(nonEmpty ? addressOf(x) : 0);
    desc.push(x.dtype.index);
    pushStrides(x);
  }
  for (const ax of axes) desc.push(ax);
  for (const s of sliceSizes) desc.push(s);
  desc.push(nonEmpty ? addressOf(out) : 0);
  if (desc.call(native().mg_cpu_gather)) return true;
  discard([out]);
  return false;
}

/** take_along_axis. */
export function runGatherAxis([a, idx]: readonly MgArray[], [out]: readonly MgArray[], axis: number): boolean {
  if (!a || !idx || !out || ![1, 2, 4, 8].includes(a.dtype.size) || a.ndim === 0) return false;
  const nonEmpty = out.size > 0;
  if (nonEmpty && (addressOf(a) < 0 || addressOf(idx) < 0)) return false;
  if (!allocate([out])) return false;
  const nd = idx.ndim;
  desc.n = 0;
  desc.reserve(10 + 3 * nd);
  desc.push(nd);
  desc.push(a.dtype.size);
  pushShape(idx.shape);
  desc.push(nonEmpty ? addressOf(a) : 0);
  pushStrides(a);
  desc.push(axis);
  desc.push(a.shape[axis]!);
  desc.push(nonEmpty ? addressOf(idx) : 0);
  desc.push(idx.dtype.index);
  pushStrides(idx);
  desc.push(nonEmpty ? addressOf(out) : 0);
  if (desc.call(native().mg_cpu_gather_axis)) return true;
  discard([out]);
  return false;
}
