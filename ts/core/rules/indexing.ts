// Derivative and batching rules of the indexing primitives (ts/core/primitives/indexing.ts).
//
// Derivatives are never taken with respect to integer inputs (indices, start positions): as in
// MLX, asking for one is an error that suggests stopGradient.
import type { MgArray } from "../array.ts";
import { type Dtype, int32 } from "../dtype.ts";
import { defineRules } from "../primitive.ts";
import {
  DynamicSlice, DynamicSliceUpdate, Gather, GatherAxis, Scatter, ScatterAxis, SliceUpdate, type UpdateMode,
} from "../primitives/indexing.ts";
import * as S from "../ops/scatter.ts";
import * as ew from "../ops/elementwise.ts";
import { arange, full, onesLike, zerosLike } from "../ops/creation.ts";
import { broadcastTo, expandDims, reshape, squeeze } from "../ops/shape.ts";
import { sliceStatic } from "../ops/slicing.ts";
import { batchSize, moveBatchAxis } from "../../autograd/batching.ts";

function noIndexGradient(op: string, rule: "VJP" | "JVP"): Error {
  return new Error(
    `[${op}] Cannot calculate ${rule} with respect to indices. ` +
      "Use stopGradient on indices to stop gradients from being computed.",
  );
}


/** The tangent of input `i` among `argnums`/`tangents`, or null when it has none. */
function tangentOf(i: number, tangents: readonly MgArray[], argnums: readonly number[]): MgArray | null {
  const k = argnums.indexOf(i);
  return k >= 0 ? tangents[k]! : null;
}


defineRules(Gather, {
  vjp([a, ...idx], [g], argnums, _o, p) {
    return argnums.map((i) => {
      if (i !== 0) throw noIndexGradient("gather", "VJP");
      return S.scatterAdd(zerosLike(a!), idx, g!, p.axes);
    });
  },
  // Gathering is linear in the source: the tangent is gathered the same way.
  jvp([, ...idx], tangents, argnums, _o, p) {
    if (argnums.length !== 1 || argnums[0] !== 0) throw noIndexGradient("gather", "JVP");
    return [S.gather(tangents[0]!, idx, p.axes, p.sliceSizes)];
  },
  // Batch first. A batched source gains a leading axis taken whole (or, when the indices are
  // batched too, addressed by an extra iota index); batched indices just add a leading index dim.
  vmap(inputs, vaxes, p) {
    const [a, ...idx] = inputs;
    const B = batchSize(inputs, vaxes);
    const srcBatched = vaxes[0]! >= 0;
    const idxBatched = vaxes.slice(1).some((ax) => ax >= 0);
    const src = srcBatched ? moveBatchAxis(a!, vaxes[0]!, 0, B) : a!;
    const axes = srcBatched ? p.axes.map((ax) => ax + 1) : [...p.axes];
    if (!idxBatched) {
      // Output: indexShape ++ [B] ++ sliceSizes — the batch axis sits after the index dims.
      return [[S.gather(src, idx, axes, srcBatched ? [B, ...p.sliceSizes] : p.sliceSizes)], [idx[0]?.ndim ?? 0]];
    }
    const bidx = idx.map((x, i) => moveBatchAxis(x, vaxes[i + 1]!, 0, B));
    if (!srcBatched) return [[S.gather(src, bidx, axes, p.sliceSizes)], [0]];
    const shape = bidx[0]!.shape;
    const iota = batchIota(B, shape, bidx[0]!.dtype);
    const out = S.gather(src, [...bidx, iota], [...axes, 0], [1, ...p.sliceSizes]);
    return [[squeeze(out, shape.length)], [0]];
  },
});

/** 0..B−1 along the leading axis of `shape`, in an index dtype that holds B and joins `like`. */
function batchIota(B: number, shape: readonly number[], like: Dtype): MgArray {
  const dtype = like.size >= 4 ? like : int32;
  return ew.astype(broadcastTo(reshape(arange(0, B, int32), [B, ...shape.slice(1).map(() => 1)]), shape), dtype);
}

defineRules(Scatter, {
  vjp(inputs, [g], argnums, [y], p) {
    const a = inputs[0]!;
    const idx = inputs.slice(1, -1);
    const u = inputs[inputs.length - 1]!;
    const last = inputs.length - 1;
    const sliceSizes = u.shape.slice(u.ndim - a.ndim);
    const gatherAt = (x: MgArray) => S.gather(x, idx, p.axes, sliceSizes);
    return argnums.map((i) => {
      if (i === 0) {
        switch (p.mode) {
          // Overwritten positions no longer depend on a.
          case "none": return S.scatter(g!, idx, zerosLike(u), p.axes, "none");
          case "sum": return g!;
          // y = a · ∏ updates at that position.
          case "prod": return ew.multiply(g!, S.scatterProd(onesLike(a), idx, u, p.axes));
          // a keeps the gradient where it is still the extreme value.
          default: return ew.where(ew.equal(y!, a), g!, zerosLike(g!));
        }
      }
      if (i !== last) throw noIndexGradient("scatter", "VJP");
      switch (p.mode) {
        // Only the last update aimed at a position survives, so only it gets the cotangent.
        case "none": return ew.where(lastWriterMask(a, idx, u, p.axes), gatherAt(g!), zerosLike(u));
        case "sum": return gatherAt(g!);
        // ∂y/∂u_k = a · ∏_{j≠k} u_j (same position): computed without dividing by a zero u_k.
        case "prod": return ew.astype(ew.multiply(gatherAt(g!), productOfOthers(a, idx, u, p.axes)), u.dtype);
        // An update gets the cotangent where it is the extreme value (ties all receive it, as MLX).
        default: return ew.where(ew.equal(gatherAt(y!), u), gatherAt(g!), zerosLike(u));
      }
    });
  },
  jvp(inputs, tangents, argnums, [y], p) {
    const a = inputs[0]!;
    const idx = inputs.slice(1, -1);
    const last = inputs.length - 1;
    const u = inputs[last]!;
    if (argnums.some((i) => i !== 0 && i !== last)) throw noIndexGradient("scatter", "JVP");
    const ta = tangentOf(0, tangents, argnums) ?? zerosLike(a);
    const tu = tangentOf(last, tangents, argnums) ?? zerosLike(u);
    const sliceSizes = u.shape.slice(u.ndim - a.ndim);
    switch (p.mode) {
      case "none":
      case "sum":
        // Linear in (a, updates) for fixed indices.
        return [S.scatter(ta, idx, tu, p.axes, p.mode)];
      case "prod":
        // d(a·∏u) = da·∏u + Σ_k du_k·(a·∏_{j≠k} u_j)
        return [ew.add(
          ew.multiply(ta, S.scatterProd(onesLike(a), idx, u, p.axes)),
          S.scatterAdd(zerosLike(a), idx, ew.astype(ew.multiply(tu, productOfOthers(a, idx, u, p.axes)), u.dtype), p.axes),
        )];
      default: {
        // The tangent of whichever operand is the extreme value (the transpose of the vjp).
        const fromA = ew.where(ew.equal(y!, a), ta, zerosLike(ta));
        const winners = ew.equal(S.gather(y!, idx, p.axes, sliceSizes), u);
        return [ew.add(fromA, S.scatterAdd(zerosLike(a), idx, ew.where(winners, tu, zerosLike(tu)), p.axes))];
      }
    }
  },
  // Everything batch first; an iota index on the new leading axis keeps each batch element's
  // updates in its own slice of the (batched) array.
  vmap(inputs, vaxes, p) {
    const B = batchSize(inputs, vaxes);
    const last = inputs.length - 1;
    const [a, ...idx] = inputs.slice(0, last).map((x, i) => moveBatchAxis(x, vaxes[i]!, 0, B));
    const u = moveBatchAxis(inputs[last]!, vaxes[last]!, 0, B);
    const shape = idx[0]?.shape ?? [B];
    const iota = batchIota(B, shape, idx[0]?.dtype ?? int32);
    const updates = expandDims(u, shape.length);
    return [[S.scatter(a!, [...idx, iota], updates, [...p.axes.map((ax) => ax + 1), 0], p.mode)], [0]];
  },
});

/** For each update element: true when it is the last one written to its position. */
function lastWriterMask(a: MgArray, idx: readonly MgArray[], u: MgArray, axes: readonly number[]): MgArray {
  const ids = reshape(arange(0, u.size, int32), u.shape);
  const writer = S.scatter(full(a.shape, -1, int32), idx, ids, axes, "none");
  return ew.equal(S.gather(writer, idx, axes, u.shape.slice(u.ndim - a.ndim)), ids);
}

/**
 * For each update u_k aimed at position p: a[p] · ∏ of the other updates aimed at p. With P = a ·
 * ∏(nonzero updates) and Z = the number of zero updates at p, that is P/u_k when u_k ≠ 0 and
 * Z = 0, P when u_k = 0 and Z = 1, and 0 otherwise — no division by zero.
 */
function productOfOthers(a: MgArray, idx: readonly MgArray[], u: MgArray, axes: readonly number[]): MgArray {
  const sliceSizes = u.shape.slice(u.ndim - a.ndim);
  const isZero = ew.equal(u, 0);
  const P = S.scatterProd(a, idx, ew.where(isZero, onesLike(u), u), axes);
  const Z = S.scatterAdd(zerosLike(a, int32), idx, ew.astype(isZero, int32), axes);
  const Pk = S.gather(P, idx, axes, sliceSizes);
  const Zk = S.gather(Z, idx, axes, sliceSizes);
  const whenZero = ew.where(ew.equal(Zk, 1), Pk, zerosLike(Pk));
  const whenNonzero = ew.where(ew.equal(Zk, 0), ew.divide(Pk, ew.where(isZero, onesLike(u), u)), 0);
  return ew.where(isZero, whenZero, whenNonzero);
}

defineRules(GatherAxis, {
  vjp([a, idx], [g], argnums, _o, p) {
    return argnums.map((i) => {
      if (i !== 0) throw noIndexGradient("take_along_axis", "VJP");
      return S.scatterAxis(zerosLike(a!), idx!, g!, p.axis, "sum");
    });
  },
  jvp([, idx], tangents, argnums, _o, p) {
    if (argnums.length !== 1 || argnums[0] !== 0) throw noIndexGradient("take_along_axis", "JVP");
    return [S.gatherAxis(tangents[0]!, idx!, p.axis)];
  },
  vmap(inputs, vaxes, p) {
    const B = batchSize(inputs, vaxes);
    const [a, idx] = inputs.map((x, i) => moveBatchAxis(x, vaxes[i]!, 0, B));
    return [[S.gatherAxis(a!, idx!, p.axis + 1)], [0]];
  },
});

defineRules(ScatterAxis, {
  vjp([a, idx, u], [g], argnums, _o, p) {
    return argnums.map((i) => {
      if (i === 0) return p.mode === "sum" ? g! : S.scatterAxis(g!, idx!, zerosLike(u!), p.axis, "none");
      if (i !== 2) throw noIndexGradient("put_along_axis", "VJP");
      const taken = S.gatherAxis(g!, idx!, p.axis);
      if (p.mode === "sum") return taken;
      // Only the last write to a position survives.
      const ids = reshape(arange(0, u!.size, int32), u!.shape);
      const writer = S.scatterAxis(full(a!.shape, -1, int32), idx!, ids, p.axis, "none");
      return ew.where(ew.equal(S.gatherAxis(writer, idx!, p.axis), ids), taken, zerosLike(taken));
    });
  },
  jvp([a, idx, u], tangents, argnums, _o, p) {
    if (argnums.includes(1)) throw noIndexGradient("put_along_axis", "JVP");
    const ta = tangentOf(0, tangents, argnums) ?? zerosLike(a!);
    const tu = tangentOf(2, tangents, argnums) ?? zerosLike(u!);
    return [S.scatterAxis(ta, idx!, tu, p.axis, p.mode)];
  },
  vmap(inputs, vaxes, p) {
    const B = batchSize(inputs, vaxes);
    const [a, idx, u] = inputs.map((x, i) => moveBatchAxis(x, vaxes[i]!, 0, B));
    return [[S.scatterAxis(a!, idx!, u!, p.axis + 1, p.mode)], [0]];
  },
});

defineRules(SliceUpdate, {
  vjp([a, u], [g], argnums, [y], p) {
    const region = (x: MgArray) => sliceStatic(x, p.start, p.stop, p.strides);
    const update = (x: MgArray, v: MgArray, mode: UpdateMode) => S.sliceUpdateStatic(x, v, p.start, p.stop, p.strides, mode);
    return argnums.map((i) => {
      if (i === 0) {
        switch (p.mode) {
          case "none": return update(g!, zerosLike(u!), "none"); // the region was overwritten
          case "sum": return g!;
          case "prod": return update(g!, u!, "prod"); // y = a · u on the region
          default: return ew.where(ew.equal(y!, a!), g!, zerosLike(g!));
        }
      }
      switch (p.mode) {
        case "none":
        case "sum": return region(g!);
        case "prod": return ew.multiply(region(g!), region(a!));
        default: return ew.where(ew.equal(region(y!), u!), region(g!), zerosLike(u!));
      }
    });
  },
  jvp([a, u], tangents, argnums, [y], p) {
    const ta = tangentOf(0, tangents, argnums) ?? zerosLike(a!);
    const tu = tangentOf(1, tangents, argnums) ?? zerosLike(u!);
    const region = (x: MgArray) => sliceStatic(x, p.start, p.stop, p.strides);
    const update = (x: MgArray, v: MgArray, mode: UpdateMode) => S.sliceUpdateStatic(x, v, p.start, p.stop, p.strides, mode);
    switch (p.mode) {
      case "none":
      case "sum":
        return [update(ta, tu, p.mode)];
      case "prod":
        // d(a·u) = da·u + a·du on the region, da elsewhere.
        return [ew.add(update(ta, u!, "prod"), update(zerosLike(a!), ew.multiply(region(a!), tu), "none"))];
      default: {
        const fromA = ew.where(ew.equal(y!, a!), ta, zerosLike(ta));
        const fromU = ew.where(ew.equal(region(y!), u!), tu, zerosLike(tu));
        return [ew.add(fromA, update(zerosLike(a!), fromU, "none"))];
      }
    }
  },
  // Batch first on both; the region spans the whole batch axis.
  vmap(inputs, vaxes, p) {
    const B = batchSize(inputs, vaxes);
    const [a, u] = inputs.map((x, i) => moveBatchAxis(x, vaxes[i]!, 0, B));
    return [[S.sliceUpdateStatic(a!, u!, [0, ...p.start], [B, ...p.stop], [1, ...p.strides], p.mode)], [0]];
  },
});

defineRules(DynamicSlice, {
  vjp([a, start], [g], argnums, _o, p) {
    return argnums.map((i) => {
      if (i !== 0) throw noIndexGradient("slice", "VJP");
      return S.dynamicSliceUpdateRaw(zerosLike(a!), g!, start!, p.axes);
    });
  },
  jvp([, start], tangents, argnums, _o, p) {
    if (argnums.length !== 1 || argnums[0] !== 0) throw noIndexGradient("slice", "JVP");
    return [S.dynamicSliceRaw(tangents[0]!, start!, p.axes, p.sliceSize)];
  },
  vmap([a, start], vaxes, p) {
    if (vaxes[1]! >= 0) throw new Error("[slice] vmap over the start indices is not supported (as in MLX).");
    const B = a!.shape[vaxes[0]!]!;
    const x = moveBatchAxis(a!, vaxes[0]!, 0, B);
    return [[S.dynamicSliceRaw(x, start!, p.axes.map((ax) => ax + 1), [B, ...p.sliceSize])], [0]];
  },
});

defineRules(DynamicSliceUpdate, {
  vjp([, u, start], [g], argnums, _o, p) {
    return argnums.map((i) => {
      if (i === 0) return S.dynamicSliceUpdateRaw(g!, zerosLike(u!), start!, p.axes); // overwritten region
      if (i === 1) return S.dynamicSliceRaw(g!, start!, p.axes, [...u!.shape]);
      throw noIndexGradient("slice_update", "VJP");
    });
  },
  jvp([a, u, start], tangents, argnums, _o, p) {
    if (argnums.includes(2)) throw noIndexGradient("slice_update", "JVP");
    const ta = tangentOf(0, tangents, argnums) ?? zerosLike(a!);
    const tu = tangentOf(1, tangents, argnums) ?? zerosLike(u!);
    return [S.dynamicSliceUpdateRaw(ta, tu, start!, p.axes)];
  },
  vmap(inputs, vaxes, p) {
    if (vaxes[2]! >= 0) throw new Error("[slice_update] vmap over the start indices is not supported (as in MLX).");
    const B = batchSize(inputs, vaxes);
    const [a, u] = inputs.slice(0, 2).map((x, i) => moveBatchAxis(x, vaxes[i]!, 0, B));
    return [[S.dynamicSliceUpdateRaw(a!, u!, inputs[2]!, p.axes.map((ax) => ax + 1))], [0]];
  },
});
