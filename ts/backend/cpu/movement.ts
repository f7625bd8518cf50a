// CPU kernels of data movement and creation: the copies of views whose layout cannot express them
// (Reshape, View), Contiguous, Pad, Concatenate and Arange.
import { forEachOffset, lanesOf, storageCtor } from "../../core/elements.ts";
import { isDense, setView } from "../../core/layout.ts";
import { Arange } from "../../core/primitives/creation.ts";
import { Concatenate } from "../../core/primitives/join.ts";
import { Contiguous, lowPads, Pad, View } from "../../core/primitives/movement.ts";
import { Reshape } from "../../core/primitives/views.ts";
import { rowMajorStrides } from "../../core/shape.ts";
import { allocateBuffer, Storage } from "../../memory/storage.ts";
import { copyToContiguous } from "./copy.ts";
import { padCpu } from "./indexing.ts";
import { registerCpu } from "./registry.ts";
import { storageView, writeNumbers } from "./values.ts";

// A reshape of a view whose strides cannot be regrouped: the elements, row-contiguously.
registerCpu(Reshape, ([a], [out]) => copyToContiguous(a!, out!));

// A strided (or misaligned) input viewed as another dtype: pack its items row-major into new
// storage, then reinterpret.
registerCpu(View, ([a], [out]) => {
  const x = a!;
  const o = out!;
  const l = x.layout!;
  const storage = new Storage(allocateBuffer(x.nbytes));
  const to = storage.view(x.dtype, storageCtor(x.dtype));
  const from = storageView(x);
  const lanes = lanesOf(x.dtype);
  let i = 0;
  forEachOffset(x.shape, l.strides, l.offset, (off) => {
    for (let c = 0; c < lanes; c++) to[i * lanes + c] = from[off * lanes + c]!;
    i++;
  });
  o.setLayout(storage, 0, rowMajorStrides(o.shape), false);
});

registerCpu(Contiguous, ([a], [out], p) => {
  const l = a!.layout!;
  if (isDense(l, p.allowColMajor)) setView(out!, a!, l.offset, l.strides);
  else copyToContiguous(a!, out!);
});

registerCpu(Pad, ([a, value], [out], p) => padCpu(a!, value!, out!, lowPads(a!.ndim, p)));

registerCpu(Concatenate, (inputs, [out], p) => {
  const o = out!;
  o.allocate();
  const dst = storageView(o);
  const lanes = lanesOf(o.dtype);
  const outStrides = o.layout!.strides;
  let offsetAlong = 0;
  for (const x of inputs) {
    const l = x.layout!;
    const src = storageView(x);
    // Write x into the output region starting at offsetAlong on `axis`, in x's row-major order.
    let k = 0;
    const dstOffsets = new Float64Array(x.size);
    forEachOffset(x.shape, outStrides, offsetAlong * outStrides[p.axis]!, (off) => (dstOffsets[k++] = off));
    k = 0;
    forEachOffset(x.shape, l.strides, l.offset, (so) => {
      const d = dstOffsets[k++]!;
      for (let c = 0; c < lanes; c++) dst[d * lanes + c] = src[so * lanes + c]!;
    });
    offsetAlong += x.shape[p.axis]!;
  }
});

// start + i·step, computed in float64 and rounded once to the dtype.
registerCpu(Arange, (_inputs, [out], p) => {
  const v = new Float64Array(p.size);
  for (let i = 0; i < p.size; i++) v[i] = p.start + i * p.step;
  writeNumbers(out!, v);
});
