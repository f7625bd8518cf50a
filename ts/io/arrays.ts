// Between files and arrays: a loaded tensor becomes an evaluated array whose native buffer the
// loader fills in place (one copy, file → buffer), and a saved array hands out its bytes where they
// already live (no copy unless its layout needs one).
import { MgArray } from "../core/array.ts";
import type { Dtype } from "../core/dtype.ts";
import type { Stream } from "../core/device.ts";
import { contiguous } from "../core/ops/movement.ts";
import { formatShape, rowMajorStrides } from "../core/shape.ts";
import { Precision, record, tracing } from "../core/trace.ts";
import { beforeAllocations } from "../memory/allocator.ts";
import { allocateBuffer, Storage } from "../memory/storage.ts";

/** MLX's dimensions are int32. */
export const MAX_DIMENSION = 2 ** 31 - 1;

/** Column-major strides (Fortran order), in elements. */
export function colMajorStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let s = 1;
  for (let i = 0; i < shape.length; i++) {
    strides[i] = s;
    s *= shape[i]!;
  }
  return strides;
}

/** The byte size of `shape` × `itemBytes`, or null beyond 2^53 (no file is that large). */
export function byteSize(shape: readonly number[], itemBytes: number): number | null {
  if (shape.includes(0)) return 0;
  let n = itemBytes;
  for (const d of shape) {
    n *= d;
    if (n > Number.MAX_SAFE_INTEGER) return null;
  }
  return n;
}

/** A new evaluated array of `shape` and `dtype` with uninitialised data, and its bytes to fill. */
export function newArray(
  shape: readonly number[],
  dtype: Dtype,
  stream: Stream,
  order: "C" | "F" = "C",
): { array: MgArray; bytes: Uint8Array } {
  const array = new MgArray([...shape], dtype, stream, null);
  const storage = new Storage(allocateBuffer(array.nbytes));
  array.setLayout(storage, 0, order === "C" ? rowMajorStrides(shape) : colMajorStrides(shape), false);
  return { array, bytes: new Uint8Array(storage.buffer.bytes, 0, array.nbytes) };
}

/** Tensors smaller than this share buffers with their neighbours in the file (see newArrays). */
export const SHARED_TENSOR_BYTES = 1 << 20;
/** A shared buffer holds at most this much: what one small tensor still alive can keep allocated. */
export const SHARED_BUFFER_BYTES = 16 << 20;
/** Where each tensor starts in a shared buffer: a multiple of every element size (and cache line). */
const SHARED_ALIGN = 64;

/** A tensor a loader is about to read: its name (for the trace), shape and dtype. */
export interface TensorSpec {
  name: string;
  shape: readonly number[];
  dtype: Dtype;
}

/**
 * New evaluated arrays for a loader's tensors, in order, with the bytes to fill. Tensors of at
 * least SHARED_TENSOR_BYTES get their own buffers; runs of smaller ones are packed into shared
 * buffers of at most SHARED_BUFFER_BYTES, each array a view at its own offset — one allocation
 * (and, on first use, one mapping) instead of one per tensor, the largest cost after the copy on a
 * file of many small tensors. The cost: a shared buffer is freed when the last of its
 * arrays is, so a small tensor kept alive keeps up to SHARED_BUFFER_BYTES; the trace records each
 * shared buffer and the tensors in it.
 */
export function newArrays(tensors: readonly TensorSpec[], stream: Stream, kernel: string): { array: MgArray; bytes: Uint8Array }[] {
  const out: { array: MgArray; bytes: Uint8Array }[] = [];
  let total = 0;
  for (const t of tensors) total += byteSize(t.shape, t.dtype.size)!;
  beforeAllocations(total);
  try {
    let i = 0;
    while (i < tensors.length) {
      // The run of small tensors starting at i that fits in one shared buffer.
      let end = i;
      let bytes = 0;
      for (; end < tensors.length; end++) {
        const t = tensors[end]!;
        const n = byteSize(t.shape, t.dtype.size)!;
        if (n === 0 || n >= SHARED_TENSOR_BYTES) break;
        const at = Math.ceil(bytes / SHARED_ALIGN) * SHARED_ALIGN;
        if (at + n > SHARED_BUFFER_BYTES) break;
        bytes = at + n;
      }
      if (end - i < 2) {
        const t = tensors[i]!;
        out.push(newArray(t.shape, t.dtype, stream));
        i++;
        continue;
      }
      const storage = new Storage(allocateBuffer(bytes));
      let at = 0;
      for (let k = i; k < end; k++) {
        const t = tensors[k]!;
        const array = new MgArray([...t.shape], t.dtype, stream, null);
        // The storage starts with one reference: the first array takes it, the others retain.
        array.setLayout(storage, at / t.dtype.size, rowMajorStrides(t.shape), k > i);
        out.push({ array, bytes: new Uint8Array(storage.buffer.bytes, at, array.nbytes) });
        at = Math.ceil((at + array.nbytes) / SHARED_ALIGN) * SHARED_ALIGN;
      }
      const first = tensors[i]!.name;
      const last = tensors[end - 1]!.name;
      const count = end - i;
      if (tracing()) {
        const dtypes = [...new Set(tensors.slice(i, end).map((t) => t.dtype.name))];
        record({
          device: "cpu",
          kernel,
          primitives: ["Load"],
          inputDtypes: dtypes,
          outputDtypes: dtypes,
          layout: "views of one shared buffer",
          precision: Precision.none,
          notes: [`${count} tensors ('${first}' … '${last}'), each under ${SHARED_TENSOR_BYTES} bytes, share one buffer of ` +
            `${bytes} bytes: its memory returns when the last of them is freed`],
        });
      }
      i = end;
    }
  } catch (e) {
    disposeAll(out.map((o) => o.array));
    throw e;
  }
  return out;
}

/** Disposes arrays made so far when a load fails part way (their buffers go back at once). */
export function disposeAll(arrays: Iterable<MgArray>): void {
  for (const a of arrays) a.dispose();
}

/** An array's bytes in row-major (or, where allowed, column-major) order. */
export interface ArrayBytes {
  bytes: Uint8Array;
  fortran: boolean;
  /** Releases the temporary copy, if one was made. */
  done(): void;
}

/**
 * Evaluates `a` and returns its bytes as they lie in its buffer when its layout is dense (row-major,
 * or column-major when `allowFortran`), else of a contiguous copy (recorded in the trace).
 */
export function arrayBytes(a: MgArray, op: string, allowFortran: boolean): ArrayBytes {
  const layout = a.ensureEvaluated(op);
  const dense = layout.rowContiguous || (allowFortran && layout.colContiguous);
  if (dense) {
    const storage = layout.storage;
    return {
      bytes: new Uint8Array(storage.buffer.bytes, layout.offset * a.itemsize, a.nbytes),
      fortran: !layout.rowContiguous,
      done: () => {},
    };
  }
  const copy = contiguous(a);
  const copyLayout = copy.ensureEvaluated(op);
  traceIo(op, a.dtype.name, a.dtype, "copy", () => [
    `${a.describe()} is not contiguous: saved from a row-major copy of ${a.nbytes} bytes`,
  ]);
  return {
    bytes: new Uint8Array(copyLayout.storage.buffer.bytes, copyLayout.offset * a.itemsize, a.nbytes),
    fortran: false,
    done: () => copy.dispose(),
  };
}

/** A trace record for one tensor read or written (only built when someone listens). */
export function traceIo(
  kernel: string, fileType: string, dtype: Dtype, layout: string, notes: () => string[], precision?: string,
): void {
  if (!tracing()) return;
  record({
    device: "cpu",
    kernel,
    primitives: [kernel.startsWith("load") ? "Load" : "Save"],
    inputDtypes: [fileType],
    outputDtypes: [dtype.name],
    layout,
    precision: precision ?? Precision.none,
    notes: notes(),
  });
}

/** `name (2,3) F32` for messages. */
export function describeTensor(name: string, shape: readonly number[], type: string): string {
  return `tensor '${name}' ${formatShape(shape)} ${type}`;
}

/** Sets `obj[key]` as an own data property, even for keys such as `__proto__` a file may contain. */
export function setEntry<T>(obj: Record<string, T>, key: string, value: T): void {
  // A name the object does not have, own or inherited, is a plain assignment (defineProperty costs
  // ~1 µs, a tenth of a small tensor's load); '__proto__', 'constructor', … are defined.
  if (!(key in obj)) obj[key] = value;
  else Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}
