// Installs the allocator every Storage comes from.
import { setAllocator, type BufferLike } from "./storage.ts";

/** Plain JS memory: used until the native runtime's allocator is wired in. */
function jsBuffer(nbytes: number): BufferLike {
  const bytes = new ArrayBuffer(nbytes);
  return { byteLength: nbytes, bytes, handle: 0, release() {} };
}

setAllocator(jsBuffer);
