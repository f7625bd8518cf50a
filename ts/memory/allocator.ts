// Installs the allocator every Storage comes from: the native runtime's, so that array data lives
// in buffers both devices read (unified memory) and the GC sees its size — or, when there is no
// native runtime, JS-owned ArrayBuffers for the CPU device alone (with the same memory counters).
//
// Memory pressure: JavaScriptCore collects ArrayBuffers by their reported size, which bounds a
// loop that never disposes. As a backstop, when active memory crosses a threshold a full
// collection runs once — and the threshold moves up, so this never happens on every step.
import { totalmem } from "node:os";
import { type MemoryStats, tryRuntime } from "../backend/runtime.ts";
import { setAllocator, type BufferLike } from "./storage.ts";

const CHECK_EVERY_BYTES = 64 * 1024 * 1024;
// A full collection runs once active memory has grown this much past what survived the last one.
const PRESSURE_HEADROOM = 256 * 1024 * 1024;
let sinceCheck = 0;
let pressureThreshold = PRESSURE_HEADROOM;
let pressureCollections = 0;

/**
 * How many full collections memory pressure has triggered (for tests and benchmarks).
 * @example
 * typeof mg.pressureCollectionCount()
 */
export function pressureCollectionCount(): number {
  return pressureCollections;
}

/** The memory API's source: the runtime's allocator, or the JS fallback's counters. */
export interface MemoryBackend {
  stats(): MemoryStats;
  resetPeak(): void;
  clearCache(): void;
  setMemoryLimit(bytes: number): number;
  setCacheLimit(bytes: number): number;
  setWiredLimit(bytes: number): number;
}

/** JS-owned memory (no native runtime): exact counts of live bytes, no cache (the GC frees). */
class JsMemory implements MemoryBackend {
  active = 0;
  peak = 0;
  live = 0;
  memoryLimit = Math.floor(totalmem() * 1.5);
  cacheLimit = 0;
  wiredLimit = 0;
  // A buffer dropped without release() is counted out when the GC collects it.
  readonly finalizer = new FinalizationRegistry<number>((bytes) => this.free(bytes));

  allocate(bytes: number): BufferLike {
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new Error(`[allocate] a buffer cannot have ${bytes} bytes`);
    if (this.active + bytes > this.memoryLimit) {
      throw new Error(`[allocate] ${bytes} bytes would exceed the memory limit: ${this.active} bytes active + ${bytes} > limit ${this.memoryLimit}; release arrays or raise the limit (setMemoryLimit)`);
    }
    const memory = this;
    this.active += bytes;
    this.live++;
    this.peak = Math.max(this.peak, this.active);
    const buffer: BufferLike & { freed: boolean } = {
      byteLength: bytes,
      bytes: new ArrayBuffer(bytes),
      freed: false,
      release() {
        if (buffer.freed) return;
        buffer.freed = true;
        memory.finalizer.unregister(buffer);
        memory.free(bytes);
      },
    };
    this.finalizer.register(buffer, bytes, buffer);
    return buffer;
  }

  free(bytes: number): void {
    this.active -= bytes;
    this.live--;
  }

  stats(): MemoryStats {
    return {
      active: this.active, peak: this.peak, cache: 0, viewHeld: 0, memoryLimit: this.memoryLimit,
      cacheLimit: this.cacheLimit, wiredLimit: this.wiredLimit, liveBuffers: this.live,
    };
  }
  resetPeak(): void {
    this.peak = this.active;
  }
  clearCache(): void {}
  setMemoryLimit(bytes: number): number {
    const previous = this.memoryLimit;
    this.memoryLimit = bytes;
    return previous;
  }
  setCacheLimit(bytes: number): number {
    const previous = this.cacheLimit;
    this.cacheLimit = bytes;
    return previous;
  }
  setWiredLimit(bytes: number): number {
    const previous = this.wiredLimit;
    this.wiredLimit = bytes;
    return previous;
  }
}

const rt = tryRuntime();
const js = rt ? null : new JsMemory();

export const memory: MemoryBackend = rt
  ? {
      stats: () => rt.memoryStats(),
      resetPeak: () => rt.resetPeakMemory(),
      clearCache: () => rt.clearCache(),
      setMemoryLimit: (b) => rt.setMemoryLimit(b),
      setCacheLimit: (b) => rt.setCacheLimit(b),
      setWiredLimit: (b) => rt.setWiredLimit(b),
    }
  : js!;

function checkPressure(): void {
  const active = memory.stats().active;
  if (active <= pressureThreshold) return;
  Bun.gc(true);
  pressureCollections++;
  pressureThreshold = memory.stats().active + PRESSURE_HEADROOM;
}

/**
 * Announces `bytes` about to be allocated as a batch (a file's tensors): the pressure check runs
 * once for all of it — at most one collection, before the batch — instead of once per 256 MiB
 * crossed inside it (4 full collections on a first 1 GiB load, a fifth of its time). The batch's
 * own allocations cannot be garbage, so collecting between them finds nothing the first did not.
 */
export function beforeAllocations(bytes: number): void {
  const active = memory.stats().active;
  if (active + bytes > pressureThreshold) {
    Bun.gc(true);
    pressureCollections++;
    pressureThreshold = memory.stats().active + bytes + PRESSURE_HEADROOM;
  }
  sinceCheck = 0;
}

setAllocator((nbytes: number): BufferLike => {
  sinceCheck += nbytes;
  if (sinceCheck >= CHECK_EVERY_BYTES) {
    sinceCheck = 0;
    checkPressure();
  }
  return rt ? rt.pool.allocate(nbytes) : js!.allocate(nbytes);
});
