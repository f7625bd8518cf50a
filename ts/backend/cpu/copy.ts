// Copies between layouts, bit for bit (no value conversion): the CPU side of reshape copies,
// contiguous() and general strided copies.
import type { MgArray } from "../../core/array.ts";
import { complex64 } from "../../core/dtype.ts";
import { forEachOffset } from "../../core/elements.ts";
import { storageView } from "./values.ts";

/** Allocates `out` (same dtype and size as `src`) and copies `src`'s elements in row-major order. */
export function copyToContiguous(src: MgArray, out: MgArray): void {
  out.allocate();
  const l = src.layout!;
  const from = storageView(src);
  const to = storageView(out);
  if (src.dtype === complex64) {
    let i = 0;
    forEachOffset(src.shape, l.strides, l.offset, (o) => {
      to[i++] = from[2 * o]!;
      to[i++] = from[2 * o + 1]!;
    });
    return;
  }
  if (l.rowContiguous) {
    const n = src.size;
    // Typed-array set copies raw elements; subarray keeps it zero-copy on the source side.
    (to as Uint8Array).set((from as Uint8Array).subarray(l.offset, l.offset + n));
    return;
  }
  let i = 0;
  forEachOffset(src.shape, l.strides, l.offset, (o) => {
    to[i++] = from[o]!;
  });
}
