// Derivative and batching rules of Scan (ts/core/primitives/scan.ts).
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { complex64, finfo, int32 } from "../dtype.ts";
import { makeArray } from "../graph.ts";
import { defineRules } from "../primitive.ts";
import { Scan, type ScanParams, type ScanType } from "../primitives/scan.ts";
import { arange, fullLike, zerosLike } from "../ops/creation.ts";
import * as ew from "../ops/elementwise.ts";
import { concatenate } from "../ops/join.ts";
import { gatherAxis, scatterAxis } from "../ops/scatter.ts";
import { reshape } from "../ops/shape.ts";
import { sliceStatic } from "../ops/slicing.ts";

defineRules(Scan, {
  vjp([x], [g], _argnums, [y], p) {
    switch (p.type) {
      case "sum":
        // Element j feeds every later (earlier, if reversed) output: scan g the other way.
        return [scanLike("sum", g!, p, true)];
      case "prod":
        // Complex: the conjugate Jacobian (the formula is holomorphic and linear in g).
        return [x!.dtype === complex64 ? ew.conjugate(cumprodVjp(x!, ew.conjugate(g!), y!, p)) : cumprodVjp(x!, g!, y!, p)];
      case "logaddexp":
        return [logcumsumexpVjp(x!, g!, y!, p)];
      default:
        return [cumExtremeVjp(x!, g!, p)];
    }
  },
  jvp([x], [t], _argnums, [y], p) {
    switch (p.type) {
      case "sum":
        return [scanLike("sum", t!, p, false)];
      case "prod":
        return [cumprodJvp(x!, t!, y!, p)];
      case "logaddexp":
        return [logcumsumexpJvp(x!, t!, y!, p)];
      default:
        return [cumExtremeJvp(x!, t!, p)];
    }
  },
  // The batch axis shifts the scanned axis when it comes before it.
  vmap([x], [ax], p) {
    const axis = p.axis + (ax! <= p.axis ? 1 : 0);
    return [[makeArray(Scan, [x!], { ...p, axis }, resolveStream())], [ax!]];
  },
});

// ---------------------------------------------------------------------------------------------
// Helpers of the rules above

/** The same scan type and inclusiveness over `a`, forwards or (`flipped`) in the other direction. */
function scanLike(type: ScanType, a: MgArray, p: ScanParams, flipped: boolean, inclusive = p.inclusive): MgArray {
  return makeArray(Scan, [a], { type, axis: p.axis, reverse: flipped ? !p.reverse : p.reverse, inclusive }, resolveStream());
}

/**
 * Moves `a` `by` steps along the scan (against it if `backwards`): the first `by` elements in
 * scan order become `fill`, the last drop out. The exclusive scan's output is the inclusive one
 * shifted one step this way.
 */
function shiftAlongScan(a: MgArray, p: ScanParams, fill: number, backwards = false, by = 1): MgArray {
  const n = a.shape[p.axis]!;
  const k = Math.min(by, n);
  if (k === 0) return a;
  const edge = ew.astype(axisWindow(fullLike(a, fill), p.axis, 0, k), a.dtype);
  // A forward scan runs in index order, so moving along it moves toward higher indices.
  const towardsEnd = p.reverse === backwards;
  return towardsEnd
    ? concatenate([edge, axisWindow(a, p.axis, 0, n - k)], p.axis)
    : concatenate([axisWindow(a, p.axis, k, n), edge], p.axis);
}

/**
 * D_i = a_i + b_i·D_{i−1} along the scan (D before the first element is 0), by doubling
 * (Hillis–Steele over affine maps): log₂n rounds of shifts, products and sums. Only products and
 * sums, so the result differentiates exactly to any order — even where b is zero.
 */
function affineScan(a: MgArray, b: MgArray, p: ScanParams): MgArray {
  const n = a.shape[p.axis]!;
  for (let d = 1; d < n; d *= 2) {
    const aPrev = shiftAlongScan(a, p, 0, false, d);
    const bPrev = shiftAlongScan(b, p, 1, false, d);
    a = ew.add(a, ew.multiply(b, aPrev));
    b = ew.multiply(b, bPrev);
  }
  return a;
}

/** The scan direction reversed (a suffix recurrence is a prefix one the other way). */
const against = (p: ScanParams): ScanParams => ({ ...p, reverse: !p.reverse });

// Cumulative products. With E the exclusive product (∏ before i), y_i = E_i·x_i (inclusive) and
// ∂y_i/∂x_k = ∏_{j≤i, j≠k} x_j. Both derivatives are affine recurrences, never dividing by x:
//   jvp:  D_i = x_i·D_{i−1} + t_i·E_i
//   vjp:  grad_k = E_k·Z_k,  Z_k = g_k + x_{k+1}·Z_{k+1}
// The exclusive scan is the inclusive one shifted by one place.
function cumprodJvp(x: MgArray, t: MgArray, _y: MgArray, p: ScanParams): MgArray {
  const exclusive = scanLike("prod", x, p, false, false);
  const d = affineScan(ew.multiply(t, exclusive), x, p);
  return p.inclusive ? d : shiftAlongScan(d, p, 0);
}

function cumprodVjp(x: MgArray, g: MgArray, _y: MgArray, p: ScanParams): MgArray {
  const exclusive = scanLike("prod", x, p, false, false);
  const cot = p.inclusive ? g : shiftAlongScan(g, p, 0, true);
  const z = affineScan(cot, shiftAlongScan(x, against(p), 1), against(p));
  return ew.multiply(exclusive, z);
}

/** log|v| split by sign, with a finite floor where v has the other sign or is zero. */
function logParts(v: MgArray): [MgArray, MgArray] {
  const floor = finfo(v.dtype).min;
  const logAbs = ew.log(ew.where(ew.equal(v, 0), 1, ew.abs(v)));
  return [ew.where(ew.greater(v, 0), logAbs, floor), ew.where(ew.less(v, 0), logAbs, floor)];
}

function logcumsumexpVjp(x: MgArray, g: MgArray, y: MgArray, p: ScanParams): MgArray {
  // ∂y_i/∂x_k = exp(x_k − y_i): ∑_i g_i exp(x_k − y_i), summed in log space per sign of g.
  const [pos, neg] = logParts(g);
  const part = (lg: MgArray) => ew.exp(ew.add(scanLike("logaddexp", ew.subtract(lg, y), p, true), x));
  return ew.subtract(part(pos), part(neg));
}

function logcumsumexpJvp(x: MgArray, t: MgArray, y: MgArray, p: ScanParams): MgArray {
  // dy_i = ∑_k exp(x_k − y_i) t_k; an empty (exclusive) prefix has y = −∞ and tangent 0.
  const [pos, neg] = logParts(t);
  const part = (lt: MgArray) => ew.exp(ew.subtract(scanLike("logaddexp", ew.add(lt, x), p, false), y));
  return ew.where(ew.equal(y, -Infinity), 0, ew.subtract(part(pos), part(neg)));
}

/**
 * For cummax/cummin: which input element holds the running extreme each output reports (ties go
 * to the latest element in scan order, as MLX). Returns the owners (int32 positions on the axis)
 * for the outputs that have one — all of them when inclusive, all but the first in scan order
 * when exclusive — and where those outputs sit on the axis.
 */
function extremeOwners(x: MgArray, p: ScanParams): { owner: MgArray; start: number; stop: number } | null {
  const n = x.shape[p.axis]!;
  const m = p.inclusive ? n : n - 1;
  if (m <= 0) return null;
  const window = (a: MgArray, from: number) => axisWindow(a, p.axis, from, from + m);
  // Inclusive running extreme at every position; x_k is a record when it equals it there.
  const running = scanLike(p.type, x, p, false, true);
  const first = p.inclusive || !p.reverse ? 0 : 1;
  const isRecord = ew.equal(window(x, first), window(running, first));
  const shape = x.shape.map(() => 1);
  shape[p.axis] = m;
  const iota = reshape(arange(first, first + m, int32), shape);
  const masked = ew.where(isRecord, iota, p.reverse ? n : -1);
  // The latest record so far (in scan order) owns the output; owners are locally constant in x,
  // so they carry no gradient (keeps higher-order derivatives exact).
  const ownerScan: ScanParams = { type: p.reverse ? "min" : "max", axis: p.axis, reverse: p.reverse, inclusive: true };
  const owner = ew.stopGradient(makeArray(Scan, [masked], ownerScan, resolveStream()));
  // Outputs with an owner: inclusive all; exclusive forward 1…n−1, reverse 0…n−2.
  const outStart = p.inclusive ? 0 : p.reverse ? 0 : 1;
  return { owner, start: outStart, stop: outStart + m };
}

function axisWindow(a: MgArray, axis: number, from: number, to: number): MgArray {
  const start = a.shape.map(() => 0);
  const stop = [...a.shape];
  start[axis] = from;
  stop[axis] = to;
  return sliceStatic(a, start, stop);
}

function cumExtremeVjp(x: MgArray, g: MgArray, p: ScanParams): MgArray {
  // Each output's cotangent goes to the element that owns it (scatter-add along the axis).
  const o = extremeOwners(x, p);
  if (!o) return zerosLike(x);
  return scatterAxis(zerosLike(x), o.owner, axisWindow(g, p.axis, o.start, o.stop), p.axis, "sum");
}

function cumExtremeJvp(x: MgArray, t: MgArray, p: ScanParams): MgArray {
  // Each output moves with the tangent of the element that owns it; an empty prefix is constant.
  const o = extremeOwners(x, p);
  if (!o) return zerosLike(x);
  const moved = gatherAxis(t, o.owner, p.axis);
  if (p.inclusive) return moved;
  const edge = axisWindow(zerosLike(t), p.axis, 0, 1);
  return concatenate(p.reverse ? [moved, edge] : [edge, moved], p.axis);
}
