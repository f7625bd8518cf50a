// Joining arrays along an axis.
import type { MgArray } from "../array.ts";
import type { Primitive } from "../primitive.ts";
import { forEachOffset, lanesOf } from "../elements.ts";
import { storageView } from "../../backend/cpu/values.ts";
import { concatenateRule } from "../../backend/gpu/movement.ts";
import { sliceStatic } from "../ops/slicing.ts";
import { zerosLike } from "../ops/creation.ts";
import { resolveStream } from "../device.ts";
import { makeArray } from "../graph.ts";
import { batchSize, moveBatchAxis } from "../../autograd/batching.ts";

export interface ConcatenateParams {
  axis: number;
}

/** Inputs share a dtype and all dims but `axis` (the op casts and validates). */
export const Concatenate: Primitive<ConcatenateParams> = {
  name: "Concatenate",
  gpu: concatenateRule,
  outputSpecs(inputs, p) {
    const shape = [...inputs[0]!.shape];
    shape[p.axis] = inputs.reduce((acc, x) => acc + x.shape[p.axis]!, 0);
    return [{ shape, dtype: inputs[0]!.dtype }];
  },
  cpu(inputs, [out], p) {
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
  },
  // Each input's cotangent is its slice of the output cotangent.
  vjp(inputs, [g], argnums, _o, p) {
    const starts: number[] = [];
    let s = 0;
    for (const x of inputs) {
      starts.push(s);
      s += x.shape[p.axis]!;
    }
    return argnums.map((i) => {
      const x = inputs[i]!;
      const start = x.shape.map(() => 0);
      const stop = [...g!.shape];
      start[p.axis] = starts[i]!;
      stop[p.axis] = starts[i]! + x.shape[p.axis]!;
      return sliceStatic(g!, start, stop);
    });
  },
  // Linear: the tangent is the concatenation of the inputs' tangents (zero where an input has none).
  jvp(inputs, tangents, argnums, _o, p) {
    const parts = inputs.map((x, i) => {
      const k = argnums.indexOf(i);
      return k >= 0 ? tangents[k]! : zerosLike(x);
    });
    return [makeArray(Concatenate, parts, p, resolveStream())];
  },
  // Batch axis first for every input (unbatched ones broadcast along it); the joined axis shifts.
  vmap(inputs, axes, p) {
    const size = batchSize(inputs, axes);
    const parts = inputs.map((x, i) => moveBatchAxis(x, axes[i]!, 0, size));
    return [[makeArray(Concatenate, parts, { axis: p.axis + 1 }, resolveStream())], [0]];
  },
  paramsKey: (p) => String(p.axis),
};

export type { MgArray };
