// The bun:ffi binding of the native runtime (Sources/MetalGradRuntime, C ABI in CABI.swift).
//
// Rules from ../shared/reference/bun-ffi-notes.md that shape this file: counts and flags cross as
// i32/u32 and byte sizes as f64 (never u64); TypedArrays are passed directly (never a cached
// `ptr()`); many dispatches are packed into one Uint32Array and cross the boundary in one call; each
// buffer's memory is exposed through exactly one ArrayBuffer created with a native deallocator, so
// the GC sees its size and frees it if `release()` is never called.
import { dlopen, FFIType, toArrayBuffer, type Pointer } from "bun:ffi";
import { existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";

const LIB_NAME = process.platform === "darwin" ? "libMetalGradRuntime.dylib" : "libMetalGradRuntime.so";
const PACKAGE_ROOT = resolve(import.meta.dir, "../..");
const PLATFORM_PACKAGE = `metalgrad-${process.platform}-${process.arch}`;

const { ptr: P, i32, u32, f64, void: VOID, cstring } = FFIType;

const SYMBOLS = {
  mg_last_error: { args: [], returns: cstring },
  mg_device_info_json: { args: [], returns: cstring },
  mg_sim_stats_json: { args: [], returns: cstring },
  mg_runtime_stats_json: { args: [], returns: cstring },
  mg_memory_stats: { args: [P], returns: i32 },
  mg_memory_reset_peak: { args: [], returns: i32 },
  mg_memory_clear_cache: { args: [], returns: i32 },
  mg_memory_set_limit: { args: [f64], returns: f64 },
  mg_memory_set_cache_limit: { args: [f64], returns: f64 },
  mg_memory_set_wired_limit: { args: [f64], returns: f64 },
  mg_buffer_new: { args: [f64], returns: P },
  mg_buffer_new_at: { args: [f64, P], returns: P },
  mg_buffer_contents: { args: [P], returns: P },
  mg_buffer_length: { args: [P], returns: f64 },
  mg_buffer_release: { args: [P], returns: i32 },
  mg_buffer_failure: { args: [P], returns: i32 },
  mg_kernel_cache_limits: { args: [i32, i32, i32, f64, P], returns: i32 },
  mg_memory_park: { args: [P], returns: i32 },
  mg_memory_unpark: { args: [P], returns: i32 },
  mg_buffer_view_release: { args: [P, P], returns: VOID },
  mg_buffer_view_deallocator: { args: [], returns: P },
  mg_library_new: { args: [P, P, i32, u32, i32], returns: P },
  mg_library_from_file: { args: [P], returns: P },
  mg_library_function_names_json: { args: [P], returns: cstring },
  mg_pipeline_new: { args: [P, P, P, i32], returns: P },
  mg_pipeline_info: { args: [P, P], returns: i32 },
  mg_pipeline_execution_json: { args: [P], returns: cstring },
  mg_queue_new: { args: [], returns: P },
  mg_batch_submit: { args: [P, P, u32], returns: P },
  mg_batch_wait: { args: [P, f64], returns: i32 },
  mg_batch_poll: { args: [P], returns: i32 },
  mg_batch_gpu_times: { args: [P, P], returns: i32 },
  mg_batch_release: { args: [P], returns: i32 },
  mg_capture_start: { args: [P], returns: i32 },
  mg_capture_stop: { args: [], returns: i32 },
} as const;

function openNative(path: string) {
  return dlopen(path, SYMBOLS);
}

/** The bound C functions. */
export type NativeSymbols = ReturnType<typeof openNative>["symbols"];

export interface NativeLibrary {
  readonly path: string;
  readonly symbols: NativeSymbols;
}

/** How to get a runtime (deviceInfo() repeats it when there is none). */
export const RUNTIME_HINT =
  "`bun add metalgrad` installs it as the optional package metalgrad-darwin-arm64 (Apple silicon " +
  "Macs) or metalgrad-linux-x64 (Linux x64, GPU kernels on the Metal simulator); in a metalgrad " +
  "checkout, build it with `swift build -c release`; or point MG_RUNTIME_LIB at a built " +
  `${LIB_NAME}`;

/** The candidate paths in load order, with why each was or was not used. */
export function findRuntimeLibrary(): string {
  const override = process.env.MG_RUNTIME_LIB;
  if (override) {
    if (!existsSync(override)) {
      throw new Error(`[runtime] MG_RUNTIME_LIB is set to ${override}, which does not exist; ${RUNTIME_HINT}`);
    }
    return override;
  }
  // A local `swift build`: the newer of release and debug, so a stale build never shadows a fresh one.
  const local = ["release", "debug"]
    .map((config) => join(PACKAGE_ROOT, ".build", config, LIB_NAME))
    .filter((path) => existsSync(path))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  if (local[0]) return local[0];
  // A per-platform package exporting its library path (default export).
  try {
    const entry = import.meta.resolve(PLATFORM_PACKAGE);
    const required: unknown = createRequire(import.meta.url)(entry.startsWith("file:") ? new URL(entry).pathname : entry);
    const exported = typeof required === "string" ? required : (required as { default?: unknown }).default;
    if (typeof exported === "string" && existsSync(exported)) return exported;
  } catch {
    // Not installed: fall through to the error below.
  }
  throw new Error(
    `[runtime] cannot find the native runtime ${LIB_NAME}: MG_RUNTIME_LIB is unset, ` +
      `${join(PACKAGE_ROOT, ".build")}/{release,debug}/ has no ${LIB_NAME}, and the package ` +
      `${PLATFORM_PACKAGE} is not installed; ${RUNTIME_HINT}`,
  );
}

let nativeSingleton: NativeLibrary | undefined;

/** Loads the native library once per process. */
export function loadNative(): NativeLibrary {
  if (!nativeSingleton) {
    const path = findRuntimeLibrary();
    nativeSingleton = { path, symbols: openNative(path).symbols };
  }
  return nativeSingleton;
}

// ---------------------------------------------------------------------------------------------
// Helpers

const encoder = new TextEncoder();

/** A NUL-terminated UTF-8 copy, passed as a `ptr` argument. */
function cString(text: string): Uint8Array {
  return encoder.encode(`${text}\0`);
}

function handleOf(value: Pointer | bigint | null): Pointer | null {
  if (value === null || value === 0) return null;
  if (typeof value === "bigint") return Number(value) as Pointer;
  return value;
}

const TWO_32 = 4294967296;

// ---------------------------------------------------------------------------------------------
// Types

export interface DeviceInfo {
  name: string;
  architecture: string;
  generation: number;
  sizeClass: string;
  maxOpsPerCommandBuffer: number;
  maxMBPerCommandBuffer: number;
  maxThreadsPerThreadgroup: [number, number, number];
  recommendedMaxWorkingSetSize: number;
  hasUnifiedMemory: boolean;
  maxBufferLength: number;
  registryID: string;
  isSimulator: boolean;
  maxThreadgroupMemoryLength: number;
  /** The highest MTLGPUFamily.appleN the device reports (hosted macOS runners' paravirtual GPU: 5). */
  appleFamily: number;
  /** Advertised from apple7: kernels using them may fail elsewhere (the error then says so). */
  supportsSimdgroupMatrix: boolean;
  supportsAtomicFloat: boolean;
}

export interface MemoryStats {
  /** Bytes held by live buffers and in-flight batches (allocated lengths). */
  active: number;
  peak: number;
  /** Bytes of released buffers kept for reuse. */
  cache: number;
  /** Evicted memory still mapped because a JavaScript view points into it. */
  viewHeld: number;
  memoryLimit: number;
  cacheLimit: number;
  wiredLimit: number;
  /** Buffers not yet released by their owner. */
  liveBuffers: number;
}

export interface RuntimeCounters {
  batchesSubmitted: number;
  dispatchesEncoded: number;
  commandBuffersCommitted: number;
  memoryBarriers: number;
  batchesFailed: number;
  librariesCompiled: number;
  pipelinesCreated: number;
}

export type MathMode = "safe" | "relaxed" | "fast";

export interface LibraryOptions {
  /** Default "safe": IEEE special values (exp(-inf) == 0), as MLX. */
  mathMode?: MathMode;
  /** An MTLLanguageVersion raw value (0x30001 = 3.1 …); default: the device's newest. */
  languageVersion?: number;
  macros?: Record<string, string | number | boolean>;
  /** The simulator's checked mode: true, out-of-bounds accesses and unwritten must-write outputs
   *  fail the batch; "writes", out-of-bounds writes fail it and out-of-bounds reads give 0. */
  checked?: boolean | "writes";
}

/** MTLDataType raw values accepted as function constants. */
export const ConstantType = {
  float: 3,
  half: 16,
  int: 29,
  uint: 33,
  short: 37,
  ushort: 41,
  char: 45,
  uchar: 49,
  bool: 53,
  long: 81,
  ulong: 85,
} as const;
export type ConstantTypeName = keyof typeof ConstantType;

export interface FunctionConstant {
  index: number;
  type: ConstantTypeName;
  value: number | boolean | bigint;
}

export type Access = "read" | "write" | "readwrite";

export interface BufferBinding {
  index: number;
  buffer: NativeBuffer;
  /** Byte offset into the buffer (default 0). */
  offset?: number;
  /** The bytes the kernel may touch from offset (default: to the end); checked-mode bound. */
  length?: number;
  /** Drives memory barriers between dispatches. */
  access: Access;
}

export interface InlineBytes {
  index: number;
  /** Under 4096 bytes: passed with setBytes. */
  data: ArrayBufferView;
}

export type Size3 = number | readonly [number, number?, number?];

export interface Dispatch {
  pipeline: Pipeline;
  buffers?: readonly BufferBinding[];
  bytes?: readonly InlineBytes[];
  threadgroupMemory?: readonly { index: number; length: number }[];
  /** Threads ("threads", dispatchThreads, the default — MLX's convention) or threadgroups. */
  grid: Size3;
  threadgroup: Size3;
  mode?: "threads" | "threadgroups";
  /** Buffer indices every byte of which the kernel must write (simulator checked mode). */
  mustWrite?: readonly number[];
  /**
   * For written buffers whose values come from only some of the inputs (a fused kernel computing
   * independent chains): the binding indices each is computed from, as a bit mask. Only failure
   * isolation uses it (a failed input fails the outputs computed from it); a written buffer not
   * listed depends on everything the dispatch reads.
   */
  dependencies?: readonly { index: number; readMask: number }[];
}

// ---------------------------------------------------------------------------------------------
// Runtime

const ACCESS_BITS: Record<Access, number> = { read: 1, write: 2, readwrite: 3 };
const MATH_MODES: Record<MathMode, number> = { safe: 0, relaxed: 1, fast: 2 };

/** Releases batch handles whose SubmittedBatch was dropped without waiting (module scope: #35213). */
const batchFinalizer = new FinalizationRegistry<{ symbols: NativeSymbols; handle: Pointer }>(({ symbols, handle }) => {
  symbols.mg_batch_release(handle);
});
/** Zero-byte buffers have no memory and so no view deallocator: this is their GC backstop. */
const emptyBufferFinalizer = new FinalizationRegistry<{ symbols: NativeSymbols; handle: Pointer }>(
  ({ symbols, handle }) => {
    symbols.mg_buffer_release(handle);
  },
);

export class Runtime {
  readonly libraryPath: string;
  readonly device: DeviceInfo;
  /** @internal */
  readonly native: NativeSymbols;
  /** @internal the deallocator handed to toArrayBuffer */
  readonly viewDeallocator: Pointer;
  #defaultQueue: Queue | undefined;
  readonly #stats = new Float64Array(8);
  /** mg_buffer_new_at's out-parameters: the address, the allocated length. */
  readonly #address = new Float64Array(2);
  /** Buffers released by storages, kept for reuse by size (see BufferPool). */
  readonly pool: BufferPool;

  constructor(native: NativeLibrary = loadNative()) {
    this.libraryPath = native.path;
    this.native = native.symbols;
    const info = this.native.mg_device_info_json();
    if (info === null) this.fail();
    this.device = JSON.parse(String(info)) as DeviceInfo;
    const deallocator = handleOf(this.native.mg_buffer_view_deallocator());
    if (deallocator === null) throw new Error("[runtime] the native library returned no view deallocator");
    this.viewDeallocator = deallocator;
    this.pool = new BufferPool(this);
  }

  /** Throws the native runtime's last error. */
  fail(): never {
    throw new Error(String(this.native.mg_last_error() ?? "[runtime] unknown native error"));
  }

  memoryStats(): MemoryStats {
    if (this.native.mg_memory_stats(this.#stats) !== 0) this.fail();
    const s = this.#stats;
    return {
      active: s[0]!,
      peak: s[1]!,
      cache: s[2]!,
      viewHeld: s[3]!,
      memoryLimit: s[4]!,
      cacheLimit: s[5]!,
      wiredLimit: s[6]!,
      liveBuffers: s[7]!,
    };
  }

  /** Sets the kernel cache's limits (undefined or below 1: unchanged); returns the previous
   *  limits and what is loaded now (KernelCache.swift, and the simulator's loaded objects). */
  kernelCacheLimits(set: Partial<KernelCacheLimits>): { previous: KernelCacheLimits; loaded: KernelCacheLimits } {
    const out = new Float64Array(8);
    const n = (v: number | undefined) => (v === undefined ? 0 : v);
    if (this.native.mg_kernel_cache_limits(n(set.pipelines), n(set.libraries), n(set.simulatorObjects), n(set.simulatorBytes), out) !== 0) this.fail();
    const limits = (o: number): KernelCacheLimits => ({ pipelines: out[o]!, libraries: out[o + 1]!, simulatorObjects: out[o + 2]!, simulatorBytes: out[o + 3]! });
    return { previous: limits(0), loaded: limits(4) };
  }

  resetPeakMemory(): void {
    if (this.native.mg_memory_reset_peak() !== 0) this.fail();
  }

  /** Frees cached memory: the pool's parked buffers first, then the allocator's cache. */
  clearCache(): void {
    this.pool.drain();
    if (this.native.mg_memory_clear_cache() !== 0) this.fail();
  }

  /** Returns the previous limit. */
  setMemoryLimit(bytes: number): number {
    const previous = this.native.mg_memory_set_limit(bytes);
    if (previous < 0) this.fail();
    return previous;
  }

  setCacheLimit(bytes: number): number {
    // Parked buffers count as cache but only the pool can free them: let the allocator evict.
    this.pool.drain();
    const previous = this.native.mg_memory_set_cache_limit(bytes);
    if (previous < 0) this.fail();
    return previous;
  }

  /** Stored and reported only (residency sets are outside the runtime's Metal API subset). */
  setWiredLimit(bytes: number): number {
    const previous = this.native.mg_memory_set_wired_limit(bytes);
    if (previous < 0) this.fail();
    return previous;
  }

  /** The simulator's compile/dispatch counters; `{ simulator: false }` on a real GPU. */
  simulatorStats(): Record<string, unknown> {
    return JSON.parse(String(this.native.mg_sim_stats_json() ?? "{}")) as Record<string, unknown>;
  }

  counters(): RuntimeCounters {
    const json = this.native.mg_runtime_stats_json();
    if (json === null) this.fail();
    return JSON.parse(String(json)) as RuntimeCounters;
  }

  /** A new buffer (never from the pool: `pool.allocate` is the storages' allocator). */
  newBuffer(byteLength: number): NativeBuffer {
    return this.allocateBuffer(byteLength, null);
  }

  /** @internal a new buffer, released into `pool` when it is given */
  allocateBuffer(byteLength: number, pool: BufferPool | null): NativeBuffer {
    // One crossing: the handle, and the memory's address in #address[0].
    const address = this.#address;
    let handle = handleOf(this.native.mg_buffer_new_at(byteLength, address));
    if (handle === null && this.#limitedByMemory()) {
      // Parked buffers count against the limit but only the pool can free them; released buffers
      // whose ArrayBuffer the GC has not collected yet still map their memory (viewHeld), and a
      // full collection runs their deallocators. Try once more after both.
      const parked = this.pool.drain();
      const held = this.memoryStats().viewHeld;
      if (held > 0) Bun.gc(true);
      // (memoryStats and drain leave the last error alone when they succeed)
      if (parked > 0 || held > 0) handle = handleOf(this.native.mg_buffer_new_at(byteLength, address));
    }
    if (handle === null) this.fail();
    return new NativeBuffer(this, handle, byteLength, address[0]!, null, pool, address[1]!);
  }

  #limitedByMemory(): boolean {
    return String(this.native.mg_last_error()).includes("memory limit");
  }

  library(source: string, options: LibraryOptions = {}): Library {
    const mathMode = MATH_MODES[options.mathMode ?? "safe"];
    if (mathMode === undefined) {
      throw new Error(`[runtime] mathMode must be "safe", "relaxed" or "fast", got ${String(options.mathMode)}`);
    }
    const macroLines = Object.entries(options.macros ?? {}).map(([name, value]) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`[runtime] bad macro name '${name}'`);
      const text = typeof value === "boolean" ? (value ? "1" : "0") : String(value);
      if (text.includes("\n")) throw new Error(`[runtime] macro ${name}'s value contains a newline`);
      return `${name}=${text}`;
    });
    const handle = handleOf(
      this.native.mg_library_new(
        cString(source),
        macroLines.length > 0 ? cString(macroLines.join("\n")) : null,
        mathMode,
        options.languageVersion ?? 0,
        options.checked === "writes" ? 2 : options.checked ? 1 : 0,
      ),
    );
    if (handle === null) this.fail();
    return new Library(this, handle);
  }

  /** A precompiled library (.metallib); fails on the simulator, which runs MSL source only. */
  libraryFromFile(path: string): Library {
    const handle = handleOf(this.native.mg_library_from_file(cString(path)));
    if (handle === null) this.fail();
    return new Library(this, handle);
  }

  newQueue(): Queue {
    const handle = handleOf(this.native.mg_queue_new());
    if (handle === null) this.fail();
    return new Queue(handle);
  }

  get defaultQueue(): Queue {
    this.#defaultQueue ??= this.newQueue();
    return this.#defaultQueue;
  }

  newBatch(): CommandBatch {
    return new CommandBatch(this);
  }

  /** Starts a GPU capture to a .gputrace path (macOS with MTL_CAPTURE_ENABLED=1 only). */
  startCapture(path: string): void {
    if (this.native.mg_capture_start(cString(path)) !== 0) this.fail();
  }

  stopCapture(): void {
    if (this.native.mg_capture_stop() !== 0) this.fail();
  }
}

let runtimeSingleton: Runtime | undefined;
let loadFailure: Error | undefined;

/** The process-wide runtime, created on first use; throws why none could be loaded. */
export function runtime(): Runtime {
  if (runtimeSingleton) return runtimeSingleton;
  if (loadFailure) throw loadFailure;
  try {
    runtimeSingleton = new Runtime();
  } catch (e) {
    loadFailure = e instanceof Error ? e : new Error(String(e));
    throw loadFailure;
  }
  return runtimeSingleton;
}

/**
 * The runtime, or null when there is none (not installed for this platform, not built, or it
 * failed to load): metalgrad then runs on the CPU device alone, on JS-owned memory.
 */
export function tryRuntime(): Runtime | null {
  try {
    return runtime();
  } catch {
    return null;
  }
}

/** Why the runtime did not load (null when it did, or was not tried yet). */
export function runtimeLoadError(): string | null {
  return loadFailure ? loadFailure.message : null;
}

// ---------------------------------------------------------------------------------------------
// Buffers

type ToArrayBufferWithDeallocator = (
  pointer: Pointer,
  byteOffset: number,
  byteLength: number,
  context: Pointer,
  deallocator: Pointer,
) => ArrayBuffer;

/**
 * Device memory visible to the CPU. Its one ArrayBuffer view is created here, once; the view's
 * native deallocator drops the view pin and, if `release()` was never called, the ownership too,
 * so garbage collection alone frees an undisposed buffer.
 */
// A NativeBuffer is a BufferLike (ts/memory/storage.ts) by shape: the allocator installs
// `pool.allocate` as the storages' allocator, which is where TypeScript checks it. (This module imports
// nothing of metalgrad's, so memory/ can depend on it without a cycle.)
export class NativeBuffer {
  readonly handle: Pointer;
  readonly byteLength: number;
  /** @internal what the memory counters count for it (-1: not known, when not from Runtime.newBuffer or a pool) */
  readonly allocatedLength: number;
  /** The address of the buffer's memory (0 when empty): native CPU kernels take it directly. */
  readonly address: number;
  #view: ArrayBuffer | null;
  #released = false;
  readonly #runtime: Runtime;
  /** Where release() parks this buffer's memory for reuse (null: released to the allocator). */
  readonly #pool: BufferPool | null;
  /**
   * @internal whether the last submitted batch that bound this buffer was seen to complete (it is
   * parked only then). The batch's state, not the batch: a buffer keeps no batch alive.
   */
  lastBatch: BatchState | null = null;

  /**
   * @internal use Runtime.newBuffer (which passes the address it got with the handle) or
   * BufferPool.allocate (which passes the view of a parked buffer)
   */
  constructor(
    rt: Runtime,
    handle: Pointer,
    byteLength: number,
    address = -1,
    view: ArrayBuffer | null = null,
    pool: BufferPool | null = null,
    allocatedLength = -1,
  ) {
    this.#runtime = rt;
    this.handle = handle;
    this.byteLength = byteLength;
    this.allocatedLength = allocatedLength;
    this.#pool = byteLength === 0 ? null : pool;
    if (view !== null) {
      this.address = address;
      this.#view = view;
    } else if (byteLength === 0) {
      this.address = 0;
      this.#view = new ArrayBuffer(0);
      emptyBufferFinalizer.register(this, { symbols: rt.native, handle }, this);
    } else {
      const contents = address > 0 ? (address as Pointer) : handleOf(rt.native.mg_buffer_contents(handle));
      if (contents === null) {
        const message = String(rt.native.mg_last_error());
        rt.native.mg_buffer_release(handle);
        rt.native.mg_buffer_view_release(null, handle);
        throw new Error(message);
      }
      this.address = contents as number;
      // The 4th/5th arguments (context, JSTypedArrayBytesDeallocator) exist in Bun but are missing
      // from @types/bun.
      this.#view = (toArrayBuffer as unknown as ToArrayBufferWithDeallocator)(
        contents,
        0,
        byteLength,
        handle,
        rt.viewDeallocator,
      );
    }
  }

  /** The buffer's memory. Throws after release (the memory may already belong to another buffer). */
  get arrayBuffer(): ArrayBuffer {
    if (this.#view === null) throw new Error(`[NativeBuffer] buffer 0x${this.handle.toString(16)} was released`);
    return this.#view;
  }

  get released(): boolean {
    return this.#released;
  }

  // BufferLike (ts/memory/storage.ts): storages hold NativeBuffers directly, no wrapper per buffer.
  get bytes(): ArrayBuffer {
    return this.arrayBuffer;
  }

  get native(): NativeBuffer {
    return this;
  }

  /** A typed-array view of the whole buffer (cheap: shares the one ArrayBuffer). */
  as<T>(ctor: new (buffer: ArrayBuffer) => T): T {
    return new ctor(this.arrayBuffer);
  }

  /** Why the contents are invalid (its last GPU write failed, or was computed from a failed
   *  buffer), or null when they are valid. Meaningful once the batch that wrote it completed. */
  failure(): string | null {
    if (this.#released || this.#runtime.native.mg_buffer_failure(this.handle) === 0) return null;
    return String(this.#runtime.native.mg_last_error()).replace(/^\[mg_buffer_failure\] /, "");
  }

  /**
   * Gives the memory back to the allocator once in-flight batches finish (or parks it in its
   * pool for reuse by the next buffer of the same size). Idempotent.
   */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    const view = this.#view;
    this.#view = null;
    // A batch that may still run keeps the memory in use: released to the allocator, which holds
    // it until the batch completes. A buffer of a failed batch may carry a failure mark that a
    // reuse's host write would not clear: it goes back to the allocator, not to the pool.
    const batch = this.lastBatch;
    if (this.#pool !== null && view !== null && (batch === null || (batch.completed && !batch.failed)) && this.#pool.park(this, view)) return;
    if (this.byteLength === 0) emptyBufferFinalizer.unregister(this);
    if (this.#runtime.native.mg_buffer_release(this.handle) !== 0) this.#runtime.fail();
  }

  [Symbol.dispose](): void {
    this.release();
  }
}

/** A parked buffer: what a new NativeBuffer over it needs. */
interface Parked {
  handle: Pointer;
  address: number;
  view: ArrayBuffer;
  /** Its allocated length (the request rounded, or a larger cached block it reused). */
  length: number;
  /** Its byte length (the key of its list). */
  byteLength: number;
  /** Taken back (or evicted) since it was parked: its entry in the large tier's age queue is stale. */
  gone: boolean;
}

/**
 * Buffers that storages released, kept for reuse by their exact byte length. Taking one back costs
 * no allocator search, no new handle and no new ArrayBuffer (the parked buffer's view is reused).
 * On a tiny op that was a third of the host time. On a large one (a 1M-element add) the new view
 * cost ~20 µs, and each new view reports its whole length to the GC as external memory: a loop of
 * 4 MiB outputs ran a collection every ~40 ops, which evicted the op's operands from the caches
 * for the next ~10 ops (2–4× slower kernels). The allocator is told per handle (mg_memory_park /
 * mg_memory_unpark; releasing a parked buffer unparks it): parked memory counts as cache, exactly as
 * a release would, so the counters stay exact sums of allocated lengths (docs/ARCHITECTURE.md
 * "Allocator") — also when a pool becomes garbage with buffers parked (a test file's module
 * registry under `bun test --isolate`): their views' deallocators release parked records. A buffer whose
 * last batch has not been seen to complete is released instead, so parked memory is never in use
 * by the GPU. Two tiers: small buffers (below the allocator's 16 KiB page) up to MAX_BYTES, most
 * recently parked first; large ones up to LARGE_MAX_BYTES, where parking past the bound releases
 * the oldest parked large buffers to the allocator (its cache reuses them by fit). Both count
 * against the cache limit (parking is declined past it); clearCache, setCacheLimit and an
 * allocation that meets the memory limit drain the pool.
 */
export class BufferPool {
  /** Sizes of the small tier: below the allocator's 16 KiB page. */
  static readonly MAX_SIZE = 16384 - 1;
  /** Parked bytes (allocated lengths) of the small tier at most. */
  static readonly MAX_BYTES = 4 * 1024 * 1024;
  /** Parked bytes (allocated lengths) of the large tier at most. */
  static readonly LARGE_MAX_BYTES = 256 * 1024 * 1024;
  readonly #runtime: Runtime;
  readonly #free = new Map<number, Parked[]>();
  /** Parked large buffers in parking order (entries marked `gone` are skipped), from #largeHead. */
  #largeAge: Parked[] = [];
  #largeHead = 0;
  #bytes = 0;
  #largeBytes = 0;
  #count = 0;

  constructor(rt: Runtime) {
    this.#runtime = rt;
  }

  /** Bytes parked (allocated lengths), both tiers. */
  get parkedBytes(): number {
    return this.#bytes + this.#largeBytes;
  }

  /** Bytes parked in the large tier (allocated lengths). */
  get parkedLargeBytes(): number {
    return this.#largeBytes;
  }

  /** A buffer of `byteLength` bytes: the most recently parked one of that size, else a new one. */
  allocate(byteLength: number): NativeBuffer {
    const rt = this.#runtime;
    if (byteLength === 0) return rt.allocateBuffer(0, null);
    const list = this.#free.get(byteLength);
    const p = list !== undefined ? list.pop() : undefined;
    if (p === undefined) {
      // A parked large block the allocator would reuse for this size goes back to it first, so
      // reuse by fit (Allocator.swift) still works across sizes: parking costs no extra memory.
      if (byteLength > BufferPool.MAX_SIZE && this.#largeBytes > 0) this.#releaseFit(byteLength);
      return rt.allocateBuffer(byteLength, this);
    }
    if (byteLength > BufferPool.MAX_SIZE) {
      this.#largeBytes -= p.length;
      p.gone = true;
    } else {
      this.#bytes -= p.length;
    }
    this.#count--;
    if (rt.native.mg_memory_unpark(p.handle) !== 0) rt.fail();
    return new NativeBuffer(rt, p.handle, byteLength, p.address, p.view, this, p.length);
  }

  /** @internal NativeBuffer.release: true when the buffer was parked (else the caller releases it). */
  park(buffer: NativeBuffer, view: ArrayBuffer): boolean {
    const length = buffer.allocatedLength;
    if (length <= 0) return false;
    const large = buffer.byteLength > BufferPool.MAX_SIZE;
    if (large) {
      // Only a block of exactly the request's rounded length: one that reused a larger cached block
      // would hand that larger block to every later request of this size, where the allocator's
      // smallest-fit rule would find a tighter one (active and peak memory grew by it).
      if (length > BufferPool.LARGE_MAX_BYTES || length !== Math.ceil(buffer.byteLength / 16384) * 16384) return false;
      while (this.#largeBytes + length > BufferPool.LARGE_MAX_BYTES && this.#evictOldestLarge());
    } else if (this.#bytes + length > BufferPool.MAX_BYTES) {
      return false;
    }
    const status = this.#runtime.native.mg_memory_park(buffer.handle);
    if (status === 1) return false;
    if (status !== 0) this.#runtime.fail();
    let list = this.#free.get(buffer.byteLength);
    if (list === undefined) this.#free.set(buffer.byteLength, (list = []));
    const p: Parked = { handle: buffer.handle, address: buffer.address, view, length, byteLength: buffer.byteLength, gone: false };
    list.push(p);
    this.#count++;
    if (large) {
      this.#largeBytes += length;
      this.#largeAge.push(p);
      this.#compactAge();
    } else {
      this.#bytes += length;
    }
    return true;
  }

  /** Releases to the allocator the parked large buffer whose block best fits a request of
   *  `byteLength` bytes (the allocator's window: L ≤ length ≤ min(2L, L + 1 MiB)), if any. */
  #releaseFit(byteLength: number): void {
    const page = BufferPool.MAX_SIZE + 1;
    const rounded = Math.ceil(byteLength / page) * page;
    const upper = Math.min(2 * rounded, rounded + 1024 * 1024);
    let best: Parked | null = null;
    const age = this.#largeAge;
    for (let i = this.#largeHead; i < age.length; i++) {
      const p = age[i]!;
      if (!p.gone && p.length >= rounded && p.length <= upper && (best === null || p.length < best.length)) best = p;
    }
    if (best !== null) this.#release(best);
  }

  /** Takes a parked large buffer out of the pool and releases it to the allocator. */
  #release(p: Parked): void {
    p.gone = true;
    const list = this.#free.get(p.byteLength)!;
    list.splice(list.indexOf(p), 1);
    this.#largeBytes -= p.length;
    this.#count--;
    // Releasing a parked buffer unparks it (its bytes leave the parked cache; the peak stays).
    if (this.#runtime.native.mg_buffer_release(p.handle) !== 0) this.#runtime.fail();
  }

  /** Releases the large buffer parked longest ago to the allocator (false: none is parked). */
  #evictOldestLarge(): boolean {
    const age = this.#largeAge;
    while (this.#largeHead < age.length) {
      const p = age[this.#largeHead]!;
      age[this.#largeHead++] = undefined as unknown as Parked;
      if (p.gone) continue;
      this.#release(p);
      this.#compactAge();
      return true;
    }
    return false;
  }

  /** Drops the age queue's consumed head and stale entries once they dominate it. */
  #compactAge(): void {
    const age = this.#largeAge;
    if (age.length > 64 && (this.#largeHead * 2 > age.length || age.length > 4 * (this.#count + 16))) {
      this.#largeAge = age.slice(this.#largeHead).filter((p) => !p.gone);
      this.#largeHead = 0;
    }
  }

  /** Releases every parked buffer to the allocator; returns the bytes that were parked. */
  drain(): number {
    const drained = this.#bytes + this.#largeBytes;
    if (drained === 0) return 0;
    const native = this.#runtime.native;
    const lists = [...this.#free.values()];
    this.#free.clear();
    this.#largeAge = [];
    this.#largeHead = 0;
    this.#bytes = 0;
    this.#largeBytes = 0;
    this.#count = 0;
    for (const list of lists) {
      for (const p of list) {
        p.gone = true;
        if (native.mg_buffer_release(p.handle) !== 0) this.#runtime.fail();
      }
    }
    return drained;
  }
}

// ---------------------------------------------------------------------------------------------
// Libraries and pipelines

export class Library {
  readonly handle: Pointer;
  readonly #runtime: Runtime;
  readonly #pipelines = new Map<string, Pipeline>();

  /** @internal use Runtime.library */
  constructor(rt: Runtime, handle: Pointer) {
    this.#runtime = rt;
    this.handle = handle;
  }

  get functionNames(): string[] {
    const json = this.#runtime.native.mg_library_function_names_json(this.handle);
    if (json === null) this.#runtime.fail();
    return JSON.parse(String(json)) as string[];
  }

  pipeline(name: string, constants: readonly FunctionConstant[] = []): Pipeline {
    const key = constants.length === 0 ? name : `${name}\0${JSON.stringify(constants, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v))}`;
    const cached = this.#pipelines.get(key);
    if (cached) return cached;
    const words = new Uint32Array(Math.max(constants.length * 4, 1));
    const bytes = new DataView(words.buffer);
    constants.forEach((constant, i) => {
      const type = ConstantType[constant.type];
      if (type === undefined) throw new Error(`[Library.pipeline] unknown constant type '${constant.type}'`);
      words[i * 4] = constant.index;
      words[i * 4 + 1] = type;
      const at = (i * 4 + 2) * 4;
      const value = constant.value;
      switch (constant.type) {
        case "float":
          bytes.setFloat32(at, Number(value), true);
          break;
        case "half":
          bytes.setFloat16(at, Number(value), true);
          break;
        case "long":
        case "ulong":
          bytes.setBigUint64(at, BigInt.asUintN(64, BigInt(value)), true);
          break;
        case "bool":
          bytes.setUint8(at, value ? 1 : 0);
          break;
        default:
          bytes.setUint32(at, Number(value) >>> 0, true);
      }
    });
    const handle = handleOf(
      this.#runtime.native.mg_pipeline_new(this.handle, cString(name), words, constants.length),
    );
    if (handle === null) this.#runtime.fail();
    const info = new Int32Array(3);
    if (this.#runtime.native.mg_pipeline_info(handle, info) !== 0) this.#runtime.fail();
    const native = this.#runtime.native;
    const pipeline = new Pipeline(handle, name, info[0]!, info[1]!, info[2]!, () => {
      const json = native.mg_pipeline_execution_json(handle);
      return json === null ? {} : (JSON.parse(String(json)) as { model?: string; reason?: string });
    });
    this.#pipelines.set(key, pipeline);
    return pipeline;
  }
}

/** How many compiled kernels stay loaded: built pipeline states and libraries (rebuilt from their
 *  source when used again), and the simulator's loaded objects and their bytes. */
export interface KernelCacheLimits {
  pipelines: number;
  libraries: number;
  simulatorObjects: number;
  simulatorBytes: number;
}

export class Pipeline {
  #execution: { model?: string; reason?: string } | undefined;
  /** Where it came from, for the trace: the precompiled metallib, or source and why (kernels.ts). */
  origin: string | undefined;
  constructor(
    readonly handle: Pointer,
    readonly name: string,
    readonly maxTotalThreadsPerThreadgroup: number,
    readonly threadExecutionWidth: number,
    readonly staticThreadgroupMemoryLength: number,
    private readonly queryExecution: () => { model?: string; reason?: string } = () => ({}),
  ) {}

  /**
   * How the MSL simulator runs this kernel's threadgroups: "plain" (no barriers, collectives or
   * simdgroup matrices), "work-item" (split at them, no context switch per lane) or "fibers" (the
   * fallback, with the reason); {} on a real GPU.
   */
  get simulatorExecution(): { model?: string; reason?: string } {
    this.#execution ??= this.queryExecution();
    return this.#execution;
  }
}

/** A command queue: batches on one queue run in submission order. */
export class Queue {
  constructor(readonly handle: Pointer) {}
}

// ---------------------------------------------------------------------------------------------
// Command batches

const MAGIC = 0x3142474d;
/** Stands for an absent optional list in a dispatch, so none is allocated per call. */
const NONE: readonly never[] = [];
const OP_DISPATCH = 1;

/** Writes a grid or threadgroup size as three words at `at` (no [x, y, z] triple: a hot path). */
function putSize3(w: Uint32Array, at: number, value: Size3, what: string): void {
  let x: number | undefined;
  let y: number | undefined = 1;
  let z: number | undefined = 1;
  if (typeof value === "number") x = value;
  else {
    x = value[0];
    y = value[1] ?? 1;
    z = value[2] ?? 1;
  }
  if (!isDimension(x) || !isDimension(y) || !isDimension(z)) {
    throw new Error(`[CommandBatch] ${what} dimensions must be integers in [0, 2^32), got ${JSON.stringify(value)}`);
  }
  w[at] = x;
  w[at + 1] = y;
  w[at + 2] = z;
}

function isDimension(d: number | undefined): d is number {
  return Number.isInteger(d) && d! >= 0 && d! <= 0xffffffff;
}

/**
 * Packs dispatches into one growable Uint32Array (the format in docs/ARCHITECTURE.md) and submits
 * them all with one FFI call.
 */
/** The words of the last submitted batch, for the next batch to start with (no regrowth per eval). */
let spareWords: Uint32Array | null = null;

export class CommandBatch {
  #words: Uint32Array;
  #length = 2;
  #count = 0;
  readonly #runtime: Runtime;
  /** Buffers bound so far, kept reachable until submit so the GC cannot release them mid-batch
   *  (a list, repeats and all: cheaper per binding than a Set). */
  #buffers: NativeBuffer[] = [];

  /** @internal use Runtime.newBatch */
  constructor(rt: Runtime) {
    this.#runtime = rt;
    this.#words = spareWords ?? new Uint32Array(64);
    spareWords = null;
  }

  get dispatchCount(): number {
    return this.#count;
  }

  /** Words used so far (header included). */
  get wordCount(): number {
    return this.#length;
  }

  #reserve(extra: number): void {
    if (this.#length + extra <= this.#words.length) return;
    let capacity = this.#words.length * 2;
    while (capacity < this.#length + extra) capacity *= 2;
    const grown = new Uint32Array(capacity);
    grown.set(this.#words.subarray(0, this.#length));
    this.#words = grown;
  }

  dispatch(d: Dispatch): this {
    const buffers = d.buffers ?? NONE;
    const inline = d.bytes ?? NONE;
    const memory = d.threadgroupMemory ?? NONE;
    const deps = d.dependencies ?? NONE;
    let inlineWords = 0;
    for (const b of inline) inlineWords += 2 + Math.ceil(b.data.byteLength / 4);
    this.#reserve(15 + buffers.length * 8 + inlineWords + memory.length * 2 + (deps.length > 0 ? 1 + 2 * deps.length : 0));
    const w = this.#words;
    let at = this.#length;
    putSize3(w, at + 4, d.grid, "grid");
    putSize3(w, at + 7, d.threadgroup, "threadgroup");
    let mustLo = 0;
    let mustHi = 0;
    for (const index of d.mustWrite ?? NONE) {
      if (!Number.isInteger(index) || index < 0 || index > 63) {
        throw new Error(`[CommandBatch] mustWrite index ${index} is not in [0, 63]`);
      }
      if (index < 32) mustLo |= 1 << index;
      else mustHi |= 1 << (index - 32);
    }
    const pipeline = d.pipeline.handle as number;
    w[at++] = OP_DISPATCH;
    w[at++] = pipeline >>> 0;
    w[at++] = Math.floor(pipeline / TWO_32);
    w[at++] = ((d.mode ?? "threads") === "threads" ? 1 : 0) | (deps.length > 0 ? 2 : 0);
    at += 6; // grid and threadgroup, written above
    w[at++] = buffers.length;
    w[at++] = inline.length;
    w[at++] = memory.length;
    w[at++] = mustLo >>> 0;
    w[at++] = mustHi >>> 0;
    for (const b of buffers) {
      if (b.buffer.released) throw new Error(`[CommandBatch] buffer(${b.index}): buffer 0x${b.buffer.handle.toString(16)} was released`);
      const handle = b.buffer.handle as number;
      const offset = b.offset ?? 0;
      const length = b.length ?? 0;
      const access = ACCESS_BITS[b.access];
      if (access === undefined) throw new Error(`[CommandBatch] access must be read, write or readwrite, got ${String(b.access)}`);
      if (!Number.isInteger(offset) || offset < 0 || !Number.isInteger(length) || length < 0) {
        throw new Error(`[CommandBatch] buffer(${b.index}) offset ${offset} and length ${length} must be non-negative integers`);
      }
      w[at++] = b.index;
      w[at++] = handle >>> 0;
      w[at++] = Math.floor(handle / TWO_32);
      w[at++] = offset >>> 0;
      w[at++] = Math.floor(offset / TWO_32);
      w[at++] = length >>> 0;
      w[at++] = Math.floor(length / TWO_32);
      w[at++] = access;
      this.#buffers.push(b.buffer);
    }
    for (const b of inline) {
      const n = b.data.byteLength;
      w[at++] = b.index;
      w[at++] = n;
      const words = Math.ceil(n / 4);
      w.fill(0, at, at + words);
      new Uint8Array(w.buffer, at * 4, n).set(new Uint8Array(b.data.buffer, b.data.byteOffset, n));
      at += words;
    }
    for (const m of memory) {
      w[at++] = m.index;
      w[at++] = m.length;
    }
    if (deps.length > 0) {
      w[at++] = deps.length;
      for (const e of deps) {
        w[at++] = e.index;
        w[at++] = e.readMask >>> 0;
      }
    }
    this.#length = at;
    this.#count++;
    return this;
  }

  // The hot-path form of dispatch() (elementwise kernels, thousands per eval): no Dispatch or
  // binding objects. begin(), then exactly `buffers` bind() calls, then `bytes` inline calls, then
  // end(). Values are the caller's integers (the runtime validates the batch as a whole).
  #at = 0;
  #open = 0;

  /** @internal starts a 1-D dispatchThreads dispatch; `mustWrite`: a mask of buffer indices (< 32). */
  begin(pipeline: Pipeline, grid: number, threadgroup: number, buffers: number, bytes: number, mustWrite: number): void {
    if (this.#open !== 0) throw new Error("[CommandBatch] begin() inside an open dispatch (internal error)");
    this.#reserve(15 + buffers * 8);
    const w = this.#words;
    let at = this.#length;
    const handle = pipeline.handle as number;
    w[at++] = OP_DISPATCH;
    w[at++] = handle >>> 0;
    w[at++] = Math.floor(handle / TWO_32);
    w[at++] = 1;
    w[at++] = grid;
    w[at++] = 1;
    w[at++] = 1;
    w[at++] = threadgroup;
    w[at++] = 1;
    w[at++] = 1;
    w[at++] = buffers;
    w[at++] = bytes;
    w[at++] = 0;
    w[at++] = mustWrite >>> 0;
    w[at++] = 0;
    this.#at = at;
    this.#open = buffers + bytes + 1;
  }

  /** @internal binds `buffer` at `index` (`access`: 1 read, 2 write, 3 read-write) in the open dispatch. */
  bind(index: number, buffer: NativeBuffer, offset: number, length: number, access: number): void {
    if (buffer.released) throw new Error(`[CommandBatch] buffer(${index}): buffer 0x${buffer.handle.toString(16)} was released`);
    const w = this.#words;
    let at = this.#at;
    const handle = buffer.handle as number;
    w[at++] = index;
    w[at++] = handle >>> 0;
    w[at++] = Math.floor(handle / TWO_32);
    w[at++] = offset >>> 0;
    w[at++] = Math.floor(offset / TWO_32);
    w[at++] = length >>> 0;
    w[at++] = Math.floor(length / TWO_32);
    w[at++] = access;
    this.#at = at;
    this.#open--;
    this.#buffers.push(buffer);
  }

  /** @internal inline bytes at `index` in the open dispatch: `values` as int32 (`wide`: int64, two's complement). */
  inlineInts(index: number, values: readonly number[], wide: boolean): void {
    const n = Math.max(values.length, 1);
    const words = wide ? 2 * n : n;
    this.#length = this.#at;
    this.#reserve(2 + words);
    const w = this.#words;
    let at = this.#at;
    w[at++] = index;
    w[at++] = words * 4;
    if (values.length === 0) {
      w[at++] = 0;
      if (wide) w[at++] = 0;
    }
    for (let i = 0; i < values.length; i++) {
      const v = values[i]!;
      w[at++] = v >>> 0;
      if (wide) w[at++] = Math.floor(v / TWO_32) >>> 0;
    }
    this.#at = at;
    this.#open--;
  }

  /** @internal closes the open dispatch. */
  end(): void {
    if (this.#open !== 1) throw new Error("[CommandBatch] end(): the dispatch's bindings do not match begin() (internal error)");
    this.#open = 0;
    this.#length = this.#at;
    this.#count++;
  }

  /** Validates, encodes and commits every dispatch in one FFI call. The batch can then be reused. */
  submit(queue: Queue = this.#runtime.defaultQueue): SubmittedBatch {
    const w = this.#words;
    w[0] = MAGIC;
    w[1] = this.#count;
    // Hand over exactly the used words: a subarray view, not a cached pointer.
    const handle = handleOf(this.#runtime.native.mg_batch_submit(queue.handle, w.subarray(0, this.#length), this.#length));
    const bound = this.#buffers;
    this.reset();
    // The runtime copied what it keeps: the next batch may start with these words.
    if (w.length > 64 && (spareWords === null || spareWords.length < w.length)) {
      spareWords = w;
      this.#words = new Uint32Array(64);
    }
    if (handle === null) this.#runtime.fail();
    const submitted = new SubmittedBatch(this.#runtime, handle);
    const state = submitted.state;
    for (let i = 0; i < bound.length; i++) bound[i]!.lastBatch = state;
    return submitted;
  }

  /** Drops the encoded dispatches. */
  reset(): void {
    this.#length = 2;
    this.#count = 0;
    this.#open = 0;
    this.#buffers = [];
  }
}

export interface GpuTimes {
  /** Seconds on the host's monotonic clock. */
  start: number;
  end: number;
  /** end - start */
  seconds: number;
}

/** Whether a submitted batch was seen to complete (set by its wait or poll), and whether it failed. */
export class BatchState {
  completed = false;
  /** Some dispatch failed: the buffers it bound may carry a failure mark (NativeBuffer.failure). */
  failed = false;
}

/** A submitted batch: wait(), poll() or await done(); then gpuTimes(). */
export class SubmittedBatch {
  /** @internal completion as buffers that the batch bound see it (NativeBuffer.lastBatch) */
  readonly state = new BatchState();
  #handle: Pointer | null;
  #error: string | null = null;
  #times: GpuTimes | null = null;
  readonly #runtime: Runtime;

  /** @internal */
  constructor(rt: Runtime, handle: Pointer) {
    this.#runtime = rt;
    this.#handle = handle;
    batchFinalizer.register(this, { symbols: rt.native, handle }, this);
  }

  get completed(): boolean {
    return this.#handle === null;
  }

  #finish(error: string | null): void {
    const handle = this.#handle!;
    const times = new Float64Array(2);
    if (this.#runtime.native.mg_batch_gpu_times(handle, times) === 0) {
      this.#times = { start: times[0]!, end: times[1]!, seconds: times[1]! - times[0]! };
    }
    this.#error = error;
    this.#handle = null;
    this.state.completed = true;
    this.state.failed = error !== null;
    batchFinalizer.unregister(this);
    this.#runtime.native.mg_batch_release(handle);
  }

  #throwIfFailed(): void {
    if (this.#error !== null) throw new Error(this.#error);
  }

  /** Blocks until the GPU finishes; throws the command buffer's error if it failed. */
  wait(timeoutSeconds = Number.POSITIVE_INFINITY): void {
    if (this.#handle !== null) {
      const status = this.#runtime.native.mg_batch_wait(this.#handle, timeoutSeconds);
      if (status === 2) this.#runtime.fail();
      this.#finish(status === 0 ? null : String(this.#runtime.native.mg_last_error()));
    }
    this.#throwIfFailed();
  }

  /** True once complete (throws if it failed); never blocks. */
  poll(): boolean {
    if (this.#handle !== null) {
      const status = this.#runtime.native.mg_batch_poll(this.#handle);
      if (status === 0) return false;
      if (status === -2) this.#runtime.fail();
      this.#finish(status === 1 ? null : String(this.#runtime.native.mg_last_error()));
    }
    this.#throwIfFailed();
    return true;
  }

  /** Resolves when complete, polling without blocking the event loop. */
  async done(): Promise<void> {
    let delay = 0;
    while (!this.poll()) {
      await Bun.sleep(delay);
      delay = Math.min(delay + 0.25, 2);
    }
  }

  /** GPU start/end of the batch (after completion). */
  gpuTimes(): GpuTimes {
    if (this.#handle !== null) throw new Error("[SubmittedBatch] the batch has not completed; wait() or poll() first");
    if (this.#times === null) throw new Error("[SubmittedBatch] no GPU times were recorded for this batch");
    return this.#times;
  }
}
