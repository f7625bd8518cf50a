// Array data: one Storage per allocation, shared by every array that views it (reshape,
// transpose, slice and broadcast are views). Storage owns one native buffer; JS typed-array views
// over it are created once per dtype and reused.
import type { Dtype } from "../core/dtype.ts";

/** What the native runtime hands out (ts/backend/runtime.ts implements it). */
export interface BufferLike {
  readonly byteLength: number;
  /** The buffer's memory as an ArrayBuffer, created once (zero-copy over native memory). */
  readonly bytes: ArrayBuffer;
  /** Returns the memory to the allocator; idempotent. */
  release(): void;
  /** The runtime's buffer object, for GPU bindings. */
  readonly native?: import("../backend/runtime.ts").NativeBuffer;
}

export type TypedArray =
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float16Array
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array;

export interface TypedArrayConstructor {
  new (buffer: ArrayBuffer, byteOffset: number, length: number): TypedArray;
  readonly BYTES_PER_ELEMENT: number;
}

type Allocator = (nbytes: number) => BufferLike;

let allocator: Allocator | null = null;

/** Installs the allocator (the native runtime's). Kept injectable so that memory/ can wrap it. */
export function setAllocator(a: Allocator): void {
  allocator = a;
}

export function allocateBuffer(nbytes: number): BufferLike {
  if (!allocator) throw new Error("[allocate] no allocator installed (the native runtime did not load).");
  return allocator(nbytes);
}

/** An in-flight GPU batch that writes a storage; reading waits for it. */
export interface PendingWork {
  /** Blocks until the work finishes; throws if it failed — for `storage`, only if the failure
   *  reached that storage (a failed kernel fails exactly the arrays computed from it). */
  wait(storage?: Storage): void;
  /** Resolves when the work finishes, without blocking the event loop (rejects like wait). */
  finished(storage?: Storage): Promise<void>;
}

export class Storage {
  /** Arrays (and in-flight work) referencing this storage. */
  private refs = 1;
  private typedViews: Map<Dtype, TypedArray> | null = null;
  /** GPU work that produces this storage's contents, if not yet known complete. */
  pending: PendingWork | null = null;

  constructor(readonly buffer: BufferLike) {}

  get byteLength(): number {
    return this.buffer.byteLength;
  }

  get released(): boolean {
    return this.refs <= 0;
  }

  /** Arrays (and in-flight work) holding this storage. */
  get holders(): number {
    return this.refs;
  }

  retain(): void {
    if (this.refs <= 0) throw new Error("[storage] retain after release (internal error)");
    this.refs++;
  }

  release(): void {
    if (this.refs <= 0) return;
    if (--this.refs === 0) {
      this.typedViews = null;
      this.buffer.release();
    }
  }

  /** Resolves once GPU work writing this storage is done, polling without blocking. */
  async syncAsync(): Promise<void> {
    const p = this.pending;
    if (p) {
      await p.finished(this);
      this.pending = null;
    }
  }

  /** Waits for any GPU work that writes this storage. */
  sync(): void {
    const p = this.pending;
    if (p) {
      p.wait(this);
      this.pending = null;
    }
  }

  /** A typed view over the whole buffer, interpreted with `ctor` (created once per dtype). */
  view(dtype: Dtype, ctor: TypedArrayConstructor): TypedArray {
    let views = this.typedViews;
    if (!views) views = this.typedViews = new Map();
    let v = views.get(dtype);
    if (!v) {
      const bytes = this.buffer.bytes;
      // Views of a dtype whose size does not divide the allocation see whole elements only.
      v = new ctor(bytes, 0, Math.floor(bytes.byteLength / ctor.BYTES_PER_ELEMENT));
      views.set(dtype, v);
    }
    return v;
  }
}
