// Encoding one eval's GPU work into one command batch: binding arrays, packing small arguments,
// dispatching, and writing the kernel trace.
import type { Layout, MgArray, Node } from "../../core/array.ts";
import { rowMajorStrides } from "../../core/shape.ts";
import { allocateBuffer, type BufferLike, type PendingWork, type Storage } from "../../memory/storage.ts";
import { annotationsOf, record, tracing } from "../../core/trace.ts";
import type { BufferBinding, CommandBatch, Dispatch, InlineBytes, NativeBuffer, Pipeline, Size3 } from "../runtime.ts";

/** An array bound for a kernel: the binding plus how to address its elements from it. */
export interface BoundArray {
  binding: BufferBinding;
  /** Element index of the view's first element relative to the binding's start. */
  base: number;
  strides: readonly number[];
  rowContiguous: boolean;
}

export interface DispatchTrace {
  primitives: string[];
  inputs: readonly MgArray[];
  outputs: readonly MgArray[];
  layout: string;
  precision: string;
  notes?: string[];
}

function nativeOf(a: MgArray): NativeBuffer {
  const native = a.layout!.storage.buffer.native;
  if (!native) throw new Error(`[gpu] ${a.describe()} has no native buffer (internal error).`);
  return native;
}

/** The lowest and one-past-highest element offsets a strided view touches. */
export function viewExtent(shape: readonly number[], strides: readonly number[], offset: number): [number, number] {
  let lo = offset;
  let hi = offset;
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i]!;
    if (d === 0) return [offset, offset];
    const span = (d - 1) * strides[i]!;
    if (span < 0) lo += span;
    else hi += span;
  }
  return [lo, hi + 1];
}

// Kernels index in 32 bits unless a thread index or an element offset can reach 2^31; past that
// every kernel family has a "large-index" variant (int64_t indices).
const INT32_LIMIT = 2 ** 31;
let forceLargeIndex = false;

/**
 * Makes every GPU kernel take its 64-bit-index variant, so tests can check those variants on
 * arrays small enough to allocate. Returns the previous setting.
 */
export function setForceLargeIndex(on: boolean): boolean {
  const previous = forceLargeIndex;
  forceLargeIndex = on;
  return previous;
}

/** Elements an array's binding spans: its view's extent, or its size before it has data.
 *  (viewExtent's hi - lo, computed without the pair: this runs for every kernel choice.) */
function extentOf(a: MgArray): number {
  const l = a.layout;
  if (!l) return a.size;
  const shape = a.shape;
  const strides = l.strides;
  let span = 1;
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i]!;
    if (d === 0) return 0;
    span += Math.abs((d - 1) * strides[i]!);
  }
  return span;
}

/** The lowest element offset an evaluated array's view touches (viewExtent's lo, without the pair;
 *  with extentOf it gives the binding's range for every input of every dispatch). */
function lowestOffset(a: MgArray): number {
  const l = a.layout!;
  const shape = a.shape;
  let lo = l.offset;
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i]!;
    if (d === 0) return l.offset;
    const span = (d - 1) * l.strides[i]!;
    if (span < 0) lo += span;
  }
  return lo;
}

/**
 * True when a kernel needs its 64-bit-index variant: `count` threads (or elements walked), an
 * `extra` offset, or an element of one of `arrays` relative to its binding may reach 2^31.
 */
export function needsLargeIndex(count: number, arrays: readonly MgArray[], extra = 0): boolean {
  if (forceLargeIndex || count >= INT32_LIMIT || extra >= INT32_LIMIT) return true;
  for (let k = 0; k < arrays.length; k++) {
    const a = arrays[k]!;
    if (a.size >= INT32_LIMIT || extentOf(a) >= INT32_LIMIT) return true;
  }
  return false;
}
/** The index type and name tag of a kernel's 32- or 64-bit variant. */
export const idxType = (large: boolean): string => (large ? "int64_t" : "uint");
export const idxTag = (large: boolean): string => (large ? "i64" : "u32");

export class GpuEncoder {
  /** Notes recorded against the next dispatch's trace (copies, fallbacks). */
  private pendingNotes: string[] = [];
  dispatches = 0;
  /** Storages this batch writes: they get the submitted batch as their pending work (a list:
   *  a storage written twice is only marked twice). */
  readonly written: Storage[] = [];

  /** Scratch memory of multi-pass kernels, released once the batch is submitted. */
  private readonly temporaries: BufferLike[] = [];
  /**
   * Storage of internal arrays whose last reader is already encoded in this batch: later outputs of
   * the batch take it instead of allocating (MLX frees such buffers as the command buffer goes; a
   * batch is one command stream, so reuse inside it is ordered by the runtime's barriers).
   */
  private readonly recycled: Storage[] = [];

  constructor(readonly batch: CommandBatch) {}

  /**
   * A scratch buffer only this batch uses (intermediate passes of a sort, …). Bind it with
   * `{ index, buffer, access }`; it is released after submit and the runtime keeps its memory
   * until the batch completes.
   */
  temporary(bytes: number): NativeBuffer {
    const b = allocateBuffer(Math.max(bytes, 4));
    this.temporaries.push(b);
    return b.native!;
  }

  /** Called by the backend once the batch is submitted (or when nothing was dispatched). */
  releaseTemporaries(): void {
    for (const b of this.temporaries.splice(0)) b.release();
    for (const s of this.recycled.splice(0)) s.release();
  }

  /** Offers an array's storage for reuse by later outputs of this batch (see `recycled`). */
  recycle(a: MgArray): void {
    if (this.readAfterSubmit.has(a)) return;
    const s = a.surrenderStorage();
    if (s) this.recycled.push(s);
  }

  /** Allocates `a` row-contiguously, from a recycled storage of at least its size (at most twice). */
  private allocate(a: MgArray): Layout {
    const n = a.nbytes;
    const pool = this.recycled;
    for (let i = pool.length - 1; i >= 0; i--) {
      const s = pool[i]!;
      if (s.byteLength >= n && s.byteLength <= 2 * n) {
        pool.splice(i, 1);
        a.setLayout(s, 0, rowMajorStrides(a.shape), false);
        return a.layout!;
      }
    }
    return a.allocate();
  }

  /** Checks that read this batch's results on the host (MG_CHECK_INDICES), run after submit. */
  private readonly afterSubmitChecks: { check: () => void; failing: readonly MgArray[] }[] = [];

  /** Arrays an after-submit check reads: their storage is not recycled within the batch. */
  private readonly readAfterSubmit = new Set<MgArray>();

  /**
   * Runs `check` once the batch is submitted and its outputs carry it as pending work; `reads`
   * are the arrays it reads on the host; `failing`, the arrays that fail if the check does.
   */
  afterSubmit(check: () => void, reads: readonly MgArray[] = [], failing: readonly MgArray[] = []): void {
    this.afterSubmitChecks.push({ check, failing });
    for (const a of reads) this.readAfterSubmit.add(a);
  }

  /** Called by the backend after setting the outputs' pending work; a check may throw, and then
   *  its arrays (and what `nodes` computed from them) fail when read, as a failed kernel's do. */
  runAfterSubmit(nodes: readonly Node[] = []): void {
    const failed = new Map<MgArray, string>();
    let first: unknown = null;
    for (const { check, failing } of this.afterSubmitChecks.splice(0)) {
      try {
        check();
      } catch (e) {
        first ??= e;
        for (const a of failing) failed.set(a, e instanceof Error ? e.message : String(e));
      }
    }
    if (first === null) return;
    for (const n of nodes) {
      const cause = n.inputs.find((i) => failed.has(i));
      if (!cause) continue;
      const upstream = failed.get(cause)!;
      const message = upstream.startsWith(DEPENDENT) ? upstream : DEPENDENT + upstream;
      for (const o of n.outputs) if (!failed.has(o)) failed.set(o, message);
    }
    // The checked nodes' own outputs first: a view of one shares its storage and its message.
    const marked = new Set<Storage>();
    for (const [a, message] of failed) {
      const storage = a.layout?.storage;
      if (!storage || marked.has(storage)) continue;
      marked.add(storage);
      storage.pending = new FailedWork(message);
    }
    throw first;
  }

  /** Binds an evaluated (or already allocated, pending) array for reading at `index`. */
  input(a: MgArray, index: number): BoundArray {
    const l = a.layout!;
    const binding = this.inputBinding(a, index);
    return {
      binding,
      base: l.offset - binding.offset! / a.dtype.size,
      strides: l.strides,
      rowContiguous: l.rowContiguous,
    };
  }

  /** `input(a, index).binding` alone, for kernels that need no base or strides. */
  inputBinding(a: MgArray, index: number): BufferBinding {
    const item = a.dtype.size;
    return { index, buffer: nativeOf(a), offset: lowestOffset(a) * item, length: extentOf(a) * item, access: "read" };
  }

  /** Allocates `a` (row-contiguous) if needed and binds it for writing at `index`. */
  output(a: MgArray, index: number, access: "write" | "readwrite" = "write"): BoundArray {
    const binding = this.outputBinding(a, index, access);
    const l = a.layout!;
    return { binding, base: 0, strides: l.strides, rowContiguous: l.rowContiguous };
  }

  /**
   * `output`, for kernels that read each input element before writing the same output element
   * (elementwise, softmax's last pass): the output may take over the buffer of an input this node
   * is the last to read (MgArray.allocateInPlace, MLX's donation).
   */
  outputInPlace(a: MgArray, index: number): BoundArray {
    if (a.layout === null) a.allocateInPlace(false);
    return this.output(a, index);
  }

  /** `outputInPlace(a, index).binding` alone. */
  outputBindingInPlace(a: MgArray, index: number): BufferBinding {
    if (a.layout === null) a.allocateInPlace(false);
    return this.outputBinding(a, index);
  }

  /** `output(a, index, access).binding` alone. */
  outputBinding(a: MgArray, index: number, access: "write" | "readwrite" = "write"): BufferBinding {
    const l = a.layout ?? this.allocate(a);
    this.written.push(l.storage);
    const item = a.dtype.size;
    return { index, buffer: nativeOf(a), offset: l.offset * item, length: a.size * item, access };
  }

  // The hot path of single elementwise ops (CommandBatch.begin): bindings written straight into
  // the batch, no binding or dispatch objects. Outputs must have storage before begin().

  /** Starts a 1-D dispatch of `buffers` bindings and `bytes` inline entries (see CommandBatch.begin). */
  begin(pipeline: Pipeline, grid: number, threadgroup: number, buffers: number, bytes: number, mustWrite: number): void {
    this.batch.begin(pipeline, grid, threadgroup, buffers, bytes, mustWrite);
  }

  /** `inputBinding`, written into the open dispatch; returns `input(a, index).base`. */
  bindInput(a: MgArray, index: number): number {
    const item = a.dtype.size;
    const lo = lowestOffset(a);
    this.batch.bind(index, nativeOf(a), lo * item, extentOf(a) * item, 1);
    return a.layout!.offset - lo;
  }

  /** `outputBinding` (write access) of an output that has storage, written into the open dispatch. */
  bindOutput(a: MgArray, index: number): void {
    const l = a.layout!;
    this.written.push(l.storage);
    const item = a.dtype.size;
    this.batch.bind(index, nativeOf(a), l.offset * item, a.size * item, 2);
  }

  /** Closes the open dispatch and records its trace (null only when `tracing()` is false). */
  end(pipeline: Pipeline, grid: number, threadgroup: number, trace: DispatchTrace | null): void {
    this.batch.end();
    this.dispatches++;
    this.#traced(pipeline, grid, threadgroup, trace);
  }

  /** Records a copy or fallback for the next dispatch's trace record. */
  note(text: string): void {
    this.pendingNotes.push(text);
  }

  /**
   * Appends `d` to the batch and records its trace. `trace` may be null only when `tracing()` is
   * false: hot paths skip building a record no one will read.
   */
  dispatch(d: Dispatch, trace: DispatchTrace | null): void {
    this.batch.dispatch(d);
    this.dispatches++;
    this.#traced(d.pipeline, d.grid, d.threadgroup, trace);
  }

  #traced(pipeline: Pipeline, size: Size3, group: Size3, trace: DispatchTrace | null): void {
    if (!tracing()) {
      if (this.pendingNotes.length > 0) this.pendingNotes = [];
      return;
    }
    const notes = this.pendingNotes;
    this.pendingNotes = [];
    // The simulator's slow path is a fallback too: say so, with its reason.
    const exec = pipeline.simulatorExecution;
    if (exec.model === "fibers") notes.push(`simulator: runs as fibers, not in work-item form: ${exec.reason ?? ""}`);
    if (trace === null) throw new Error(`[gpu] internal: ${pipeline.name} dispatched without its trace record while tracing`);
    const grid = (typeof size === "number" ? [size, 1, 1] : [size[0], size[1] ?? 1, size[2] ?? 1]) as [number, number, number];
    const tg = (typeof group === "number" ? [group, 1, 1] : [group[0], group[1] ?? 1, group[2] ?? 1]) as [number, number, number];
    record({
      device: "gpu",
      kernel: pipeline.name,
      primitives: trace.primitives,
      inputDtypes: trace.inputs.map((i) => i.dtype.name),
      outputDtypes: trace.outputs.map((o) => o.dtype.name),
      layout: trace.layout,
      grid,
      threadgroup: tg,
      precision: trace.precision,
      notes: [...notes, ...(trace.notes ?? []), ...annotationsOf(trace.outputs)],
      pipelineFrom: pipeline.origin,
    });
  }
}

// Small argument packing ------------------------------------------------------------------------

/** int32 values as inline bytes (shapes, strides that fit, sizes). */
export function int32Bytes(index: number, values: readonly number[]): InlineBytes {
  return { index, data: Int32Array.from(values.length ? values : [0]) };
}

/** int64 values as inline bytes (strides and offsets of large arrays). */
export function int64Bytes(index: number, values: readonly number[]): InlineBytes {
  return { index, data: BigInt64Array.from((values.length ? values : [0]).map((v) => BigInt(v))) };
}

export function float32Bytes(index: number, values: readonly number[]): InlineBytes {
  return { index, data: Float32Array.from(values.length ? values : [0]) };
}


export type { Node };

const DEPENDENT = "[gpu] computed from an array whose kernel failed: ";

/** The pending work of an array whose kernel failed a host-side check: every read throws. */
class FailedWork implements PendingWork {
  constructor(readonly message: string) {}
  wait(): void {
    throw new Error(this.message);
  }
  finished(): Promise<void> {
    return Promise.reject(new Error(this.message));
  }
}
