// Installs the allocator every Storage comes from: the native runtime's, so that array data lives
// in buffers both devices read (unified memory) and the GC sees its size.
//
// Memory pressure: JavaScriptCore collects ArrayBuffers by their reported size, which bounds a
// loop that never disposes. As a backstop, when active memory crosses a threshold a full
// collection runs once — and the threshold moves up, so this never happens on every step.
import { runtime } from "../backend/runtime.ts";
import { setAllocator, type BufferLike } from "./storage.ts";

const CHECK_EVERY_BYTES = 64 * 1024 * 1024;
// A full collection runs once active memory has grown this much past what survived the last one.
const PRESSURE_HEADROOM = 256 * 1024 * 1024;
let sinceCheck = 0;
let pressureThreshold = PRESSURE_HEADROOM;
let pressureCollections = 0;

/** How many full collections memory pressure has triggered (for tests and benchmarks). */
export function pressureCollectionCount(): number {
  return pressureCollections;
}

function checkPressure(): void {
  const rt = runtime();
  const active = rt.memoryStats().active;
  if (active <= pressureThreshold) return;
  Bun.gc(true);
  pressureCollections++;
  pressureThreshold = rt.memoryStats().active + PRESSURE_HEADROOM;
}

setAllocator((nbytes: number): BufferLike => {
  sinceCheck += nbytes;
  if (sinceCheck >= CHECK_EVERY_BYTES) {
    sinceCheck = 0;
    checkPressure();
  }
  return runtime().newBuffer(nbytes);
});
