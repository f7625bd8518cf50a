// MgArray: a lazy n-dimensional array. An array is a graph node (primitive, inputs, params,
// stream) until it is evaluated; then it holds a layout over a Storage and forgets its inputs.
import type { Dtype } from "./dtype.ts";
import type { Primitive } from "./primitive.ts";
import type { Stream } from "./device.ts";
import { formatShape, rowMajorStrides, shapeSize } from "./shape.ts";
import { allocateBuffer, Storage } from "../memory/storage.ts";

/** Where an evaluated array's elements live: a strided view of a storage. Offsets/strides in items. */
export interface Layout {
  readonly storage: Storage;
  readonly offset: number;
  readonly strides: readonly number[];
  /** Row-major dense from `offset` (size-1 dims ignored). */
  readonly rowContiguous: boolean;
  /** Column-major dense from `offset` (size-1 dims ignored). */
  readonly colContiguous: boolean;
}

export function isRowContiguous(shape: readonly number[], strides: readonly number[]): boolean {
  let expected = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    const d = shape[i]!;
    if (d === 0) return true;
    if (d !== 1) {
      if (strides[i] !== expected) return false;
      expected *= d;
    }
  }
  return true;
}

export function isColContiguous(shape: readonly number[], strides: readonly number[]): boolean {
  let expected = 1;
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i]!;
    if (d === 0) return true;
    if (d !== 1) {
      if (strides[i] !== expected) return false;
      expected *= d;
    }
  }
  return true;
}

/** One application of a primitive; its outputs are siblings (split, divmod …). `P` types the
 *  params for a backend rule registered against the record (a node in a graph is a Node<unknown>). */
export class Node<P = unknown> {
  outputs: MgArray[] = [];
  /** Scheduling mark (graph.ts): the epoch of the last schedule that visited this node. */
  mark = 0;
  constructor(
    readonly primitive: Primitive<P>,
    readonly params: P,
    public inputs: MgArray[],
    readonly stream: Stream,
  ) {}
}

/** Hooks the memory layer installs (scopes, live counts); kept here to avoid an import cycle. */
export interface ArrayHooks {
  created(a: MgArray): void;
  released(a: MgArray): void;
}
let hooks: ArrayHooks | null = null;
export function setArrayHooks(h: ArrayHooks): void {
  hooks = h;
}

/** Told of every array created (ownership.ts tracks what library calls create). */
let creationListener: ((a: MgArray) => void) | null = null;
export function setCreationListener(fn: (a: MgArray) => void): void {
  creationListener = fn;
}

/** How evaluation is triggered from an array (installed by graph.ts, avoiding a cycle). */
let evaluator: ((arrays: MgArray[]) => void) | null = null;
export function setEvaluator(fn: (arrays: MgArray[]) => void): void {
  evaluator = fn;
}

let nextId = 1;

/**
 * An N-dimensional array, as mx.array: lazy (ops build a graph; eval, item, tolist compute it), immutable, on a device. Create one with mg.array; its methods mirror MLX's array methods.
 * @example
 * mg.array([[1, 2], [3, 4]]).T.sum(0)
 */
export class MgArray {
  /** A number identifying the array (in traces and errors). */
  readonly id: number;
  /** The size of each axis. */
  readonly shape: readonly number[];
  /** Element count, computed once (shape never changes; kernels ask for it constantly). */
  readonly size: number;
  /** The element type. */
  readonly dtype: Dtype;
  /** The stream the array is computed on. */
  readonly stream: Stream;
  /** Producer while unevaluated; null once evaluated (detached) or for constants. */
  node: Node | null;
  /** Data once evaluated. */
  layout: Layout | null = null;
  /** Pending nodes that read this array; its storage is kept until they are evaluated. */
  graphRefs = 0;
  /** The user released this handle (dispose/tidy); using it is an error. */
  disposed = false;
  /**
   * Created by a library call that did not return it (ownership.ts): no one outside can name it, so
   * its storage goes as soon as no pending node needs it, and its producer once nothing reads it.
   */
  internal = false;
  /** Library code keeps this array beyond the call that created it (ownership.ts `retain`). */
  retained = false;
  /** An internal array whose data was released after its last use: reading it is a library bug. */
  private dataReleased = false;
  /** Its storage went to a later output of the same GPU batch (surrenderStorage): it was computed. */
  surrendered = false;
  /**
   * Scratch of a backend's pass over one eval (the GPU counts each input's readers in the batch it
   * encodes): `runReads`/`runLeft` are valid while `runMark` is that pass's number. As Node.mark,
   * fields rather than a map per eval: this is touched for every input of every node.
   * @internal
   */
  runMark = 0;
  /** Readers of this array in the current backend pass (valid while `runMark` matches). @internal */
  runReads = 0;
  /** Readers not yet encoded in the current backend pass (valid while `runMark` matches). @internal */
  runLeft = 0;
  private storageHeld = false;

  /**
   * Shared constants (the cached weak scalars ops create) belong to no scope and are never freed
   * by dispose: many graphs may read the same one.
   */
  readonly shared: boolean;

  constructor(shape: readonly number[], dtype: Dtype, stream: Stream, node: Node | null, shared = false) {
    this.id = nextId++;
    this.shape = shape;
    this.size = shapeSize(shape);
    this.dtype = dtype;
    this.stream = stream;
    this.node = node;
    this.shared = shared;
    if (!shared) {
      hooks?.created(this);
      creationListener?.(this);
    }
  }

  /** The number of axes. */
  get ndim(): number {
    return this.shape.length;
  }
  /** Bytes per element. */
  get itemsize(): number {
    return this.dtype.size;
  }
  /** Bytes of all elements. */
  get nbytes(): number {
    return this.size * this.dtype.size;
  }
  /** True once the array holds data. */
  get evaluated(): boolean {
    return this.layout !== null;
  }

  /** A short name for error messages: `array #12 (2,3) float32`. */
  describe(): string {
    return `array #${this.id} ${formatShape(this.shape)} ${this.dtype.name}`;
  }

  /** Throws if the user disposed this array. */
  checkUsable(op: string): void {
    if (this.disposed) throw new Error(`[${op}] ${this.describe()} was disposed and cannot be used.`);
    if (this.dataReleased) {
      throw new Error(
        `[${op}] ${this.describe()} is an intermediate that a library call created, did not return, and ` +
          `released after its last use (internal error: library code that keeps an array must retain it).`,
      );
    }
  }

  /** Gives this array its data. Retains the storage (one reference per array). */
  setLayout(storage: Storage, offset: number, strides: readonly number[], retain: boolean): void {
    if (this.layout) throw new Error(`[eval] ${this.describe()} already has data (internal error).`);
    if (retain) storage.retain();
    this.storageHeld = true;
    this.layout = {
      storage,
      offset,
      strides,
      rowContiguous: isRowContiguous(this.shape, strides),
      colContiguous: isColContiguous(this.shape, strides),
    };
  }

  /**
   * Forgets data given during an eval that failed before its work was submitted, so the array is
   * recomputed (or fails again) instead of exposing uncomputed memory.
   */
  discardData(): void {
    if (!this.layout) return;
    if (this.storageHeld) this.layout.storage.release();
    this.storageHeld = false;
    this.layout = null;
  }

  /** Allocates fresh row-major storage for this array (its own reference). */
  allocate(): Layout {
    const storage = new Storage(allocateBuffer(this.nbytes));
    this.setLayout(storage, 0, rowMajorStrides(this.shape), false);
    return this.layout!;
  }

  /**
   * Allocates this output, or takes over the buffer of an input this node is the last to read, as
   * MLX donates buffers: only for kernels that have read every input element they need before (or
   * at the same index as) writing it, and only from an input no one else can read — internal or
   * disposed, read by no other pending node, the sole holder of its storage, dense from offset 0,
   * with exactly this output's byte length and element count (so elements line up). The CPU
   * waits for GPU work writing the donor; a GPU kernel passes false (its batch is ordered after it).
   */
  allocateInPlace(waitForDonor = true): Layout {
    const node = this.node;
    if (node && node.outputs.length === 1) {
      for (const d of node.inputs) {
        if (donatable(d, this)) {
          const storage = d.layout!.storage;
          // The GPU orders the donor's writer before this kernel itself (same queue, or waited for).
          if (waitForDonor) storage.sync();
          this.setLayout(storage, 0, rowMajorStrides(this.shape), true);
          return this.layout!;
        }
      }
    }
    return this.allocate();
  }

  /** Evaluates this array (and its graph) if needed and waits for its data. */
  ensureEvaluated(op = "eval"): Layout {
    this.checkUsable(op);
    if (!this.layout) {
      if (!evaluator) throw new Error("[eval] no evaluator installed (internal error).");
      evaluator([this]);
    }
    const layout = this.layout!;
    layout.storage.sync();
    return layout;
  }

  /**
   * Releases this handle: the storage is returned to the allocator once no pending node needs it.
   * Idempotent.
   */
  dispose(): void {
    if (this.disposed || this.shared) return;
    this.disposed = true;
    hooks?.released(this);
    this.releaseIfUnused();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** Called by eval when a consumer node no longer needs this array. */
  dropGraphRef(): void {
    this.graphRefs--;
    this.releaseIfUnused();
  }

  /**
   * Gives up the storage of an internal or disposed array whose every reader is already encoded in
   * the GPU batch being built, so that a later output of the same batch reuses it (command order and
   * the runtime's write-after-read barrier keep the readers ahead of the new writer). A storage that
   * views share is only let go of here (null); the last of its arrays to surrender hands it over.
   * Null too when the array could still be read.
   */
  surrenderStorage(): Storage | null {
    const l = this.layout;
    if (!(this.internal || this.disposed) || l === null || !this.storageHeld) return null;
    this.storageHeld = false;
    this.layout = null;
    this.surrendered = true;
    if (this.internal) this.dataReleased = true;
    if (l.storage.holders === 1) return l.storage;
    l.storage.release();
    return null;
  }

  /** Library code keeps this array (ownership.ts `retain`): it is no longer internal. */
  retain(): void {
    this.checkUsable("retain");
    this.retained = true;
    this.internal = false;
  }

  /** Marks this array internal (its library call did not return it) and frees what no one needs. */
  makeInternal(): void {
    if (this.shared || this.disposed) return;
    this.internal = true;
    this.releaseIfUnused();
  }

  /** Frees the data of a disposed or internal array once no pending node needs it. */
  releaseIfUnused(): void {
    if (!(this.disposed || this.internal) || this.graphRefs > 0) return;
    if (this.node) {
      // An unevaluated array that nobody can use any more: forget its producer.
      const n = this.node;
      this.node = null;
      // The producer's inputs go only when no output can be read any more — a sibling output that
      // a pending node still reads (LU's factor, consumed while its pivots are dropped) keeps them.
      if (n.outputs.every((o) => unreachable(o) && (o.node !== n || o.graphRefs === 0))) {
        for (const i of n.inputs) i.dropGraphRef();
        n.inputs = [];
      }
    }
    if (this.layout && this.storageHeld) {
      this.storageHeld = false;
      this.layout.storage.release();
    }
    if (this.internal) {
      // Nothing outside the graph can read it again: forget the data too, so a library bug that
      // does is a clear error (checkUsable) rather than a read of freed memory.
      this.layout = null;
      this.dataReleased = true;
    }
  }
}

/** No handle outside the graph can read this array: the user disposed it or it is internal. */
function unreachable(a: MgArray): boolean {
  return a.disposed || a.internal;
}

function donatable(d: MgArray, out: MgArray): boolean {
  const l = d.layout;
  return (
    l !== null &&
    (d.internal || d.disposed) &&
    d.graphRefs === 1 &&
    l.offset === 0 &&
    l.rowContiguous &&
    d.size === out.size &&
    d.dtype.size === out.dtype.size &&
    l.storage.holders === 1 &&
    !d.shared
  );
}
