// Between files and arrays: a loaded tensor becomes an evaluated array whose native buffer the
// loader fills in place (one copy, file → buffer), and a saved array hands out its bytes where they
// already live (no copy unless its layout needs one).
import { MgArray } from "../core/array.ts";
import type { Dtype } from "../core/dtype.ts";
import type { Stream } from "../core/device.ts";
import { contiguous } from "../core/ops/movement.ts";
import { formatShape, rowMajorStrides } from "../core/shape.ts";
import { Precision, record, tracing } from "../core/trace.ts";
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
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}
