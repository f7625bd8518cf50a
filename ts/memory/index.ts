// The memory API, with MLX's names and semantics (mx.get_active_memory …).
//
// The real footprint is active + cache: get_peak_memory is a high-water mark of *active* memory
// only, and freed buffers stay in the cache for reuse until clearCache() or the cache limit
// (guide §5.5; MLX's maintainers recommend active + cache for absolute footprint).
import { memory } from "./allocator.ts";
export { keep, liveArrayCount, tidy } from "./scope.ts";

/**
 * Bytes held by arrays (and in-flight GPU work), rounded as the allocator rounds.
 * @example
 * typeof mg.getActiveMemory()
 */
export function getActiveMemory(): number {
  return memory.stats().active;
}

/**
 * The high-water mark of active memory since start or the last resetPeakMemory().
 * @example
 * typeof mg.getPeakMemory()
 */
export function getPeakMemory(): number {
  return memory.stats().peak;
}

/**
 * Resets the peak memory to the active memory, as mx.reset_peak_memory.
 * @example
 * mg.resetPeakMemory()
 */
export function resetPeakMemory(): void {
  memory.resetPeak();
}

/**
 * Bytes of freed buffers kept for reuse.
 * @example
 * typeof mg.getCacheMemory()
 */
export function getCacheMemory(): number {
  return memory.stats().cache;
}

/**
 * Frees the cached buffers (memory a live JS view still points into is unmapped later).
 * @example
 * mg.clearCache()
 */
export function clearCache(): void {
  memory.clearCache();
}

/**
 * Sets the memory limit in bytes; returns the previous one. Beyond it an allocation first empties
 *  the cache, then fails with a clear error.
 * @example
 * mg.setMemoryLimit(mg.getMemoryLimit()) > 0
 */
export function setMemoryLimit(limit: number): number {
  return memory.setMemoryLimit(limit);
}

/**
 * The memory limit in bytes (MLX's default: 1.5 × the device's recommended working set).
 * @example
 * mg.getMemoryLimit() > 0
 */
export function getMemoryLimit(): number {
  return memory.stats().memoryLimit;
}

/**
 * Sets the cache limit in bytes (0 disables caching); returns the previous one.
 * @example
 * mg.setCacheLimit(mg.setCacheLimit(0)) >= 0
 */
export function setCacheLimit(limit: number): number {
  return memory.setCacheLimit(limit);
}

/**
 * Sets the wired limit in bytes; returns the previous one. Recorded only: wiring memory needs
 *  Metal residency sets, outside the API subset metalgrad uses.
 * @example
 * mg.setWiredLimit(0)
 */
export function setWiredLimit(limit: number): number {
  return memory.setWiredLimit(limit);
}
