// Installs the allocator every Storage comes from: the native runtime's, so that array data lives
// in buffers both devices read (unified memory) and the GC sees its size.
import { runtime } from "../backend/runtime.ts";
import { setAllocator, type BufferLike } from "./storage.ts";

setAllocator((nbytes: number): BufferLike => {
  const buffer = runtime().newBuffer(nbytes);
  return {
    byteLength: nbytes,
    get bytes() {
      return buffer.arrayBuffer;
    },
    handle: buffer.handle as unknown as number,
    release: () => buffer.release(),
    native: buffer,
  } as BufferLike;
});
