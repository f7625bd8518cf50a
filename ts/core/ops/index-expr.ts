// Index expressions: `a.index(...)` (Python's a[...]) and `a.at(...)` (Python's a.at[...]).
//
// Index expressions (the arguments of a.index(...) / a.at(...), one per axis, as in Python):
//   3, -1                 an integer: picks one position and drops the axis
//   ":"  "1:3"  "::-1"    a slice, written as in Python (any part may be empty)
//   { start, stop, step } the same slice as an object (any key may be omitted or null)
//   null  (mg.newaxis)    inserts a new axis of size 1
//   "..." (mg.Ellipsis)   as many ":" as needed to cover the remaining axes
//   an integer array      advanced indexing (an MgArray, a JS list or a typed array)
// Integers, slices, null and "..." only make views of `a` (no copy). Integer arrays gather with
// NumPy's rules: index arrays (and integers next to them) broadcast together, and their dimensions
// replace the indexed axes in place when those are adjacent, or come first when slices or newaxis
// separate them. Boolean masks are not supported (MLX rejects them too).
//
// Bounds: integers and slice bounds are static, so an out-of-range integer is always an error
// (slices clip, as in Python). Integer *arrays* are not checked, as in MLX: an out-of-range
// element reads 0 (and an out-of-range update is dropped) on the CPU here, where MLX reads or
// writes unrelated memory. Set MG_CHECK_INDICES=1 to make evaluation throw a tagged error
// instead (`[gather] Index 7 is out of bounds for axis 0 with size 3 ...`).
import { MgArray } from "../array.ts";
import { bool_, int32, isInexact, isInteger } from "../dtype.ts";
import { sliceLength } from "../layout.ts";
import { broadcastShapes, shapeSize } from "../shape.ts";
import { type ArrayInput, fromValues, type NestedArray, type StreamOptions, toArray, weakScalar } from "./convert.ts";
import { arange } from "./creation.ts";
import * as ew from "./elementwise.ts";
import { gather, scatter, sliceUpdateStatic, type UpdateMode } from "./scatter.ts";
import { broadcastToShape } from "./broadcast.ts";
import { reshape, transpose } from "./shape.ts";
import { sliceStatic } from "./slicing.ts";
import type { TypedArray } from "../../memory/storage.ts";

/** Inserts a new axis of size 1 in an index expression (Python's None / np.newaxis). */
export const newaxis = null;
/** Stands for as many full slices as needed in an index expression (Python's `...`). */
export const Ellipsis = "...";

/** A slice as an object: `{ start: 1, stop: -1 }`, `{ step: -1 }` (omitted or null = default). */
export interface SliceSpec {
  start?: number | null;
  stop?: number | null;
  step?: number | null;
}

/** One entry of an index expression. */
export type IndexItem = number | bigint | string | SliceSpec | null | MgArray | NestedArray | TypedArray;

/** Converts an index argument to an array; an empty JS list becomes an empty int32 array. */
export function indexArray(x: ArrayInput, op: string): MgArray {
  if (Array.isArray(x) && x.length === 0) return fromValues([], [0], int32);
  return toArray(x, op);
}

/** A static integer index, wrapped once if negative; out of range is an error. */
export function staticIndex(value: number | bigint, size: number, axis: number, op: string): number {
  const v = typeof value === "bigint" ? Number(value) : value;
  if (!Number.isInteger(v)) throw new TypeError(`[${op}] Indices must be integers, got ${String(value)}.`);
  const i = v < 0 ? v + size : v;
  if (i < 0 || i >= size) throw new RangeError(`[${op}] Index ${String(value)} is out of bounds for axis ${axis} with size ${size}.`);
  return i;
}

type Entry =
  | { kind: "slice"; axis: number; start: number; stop: number; step: number; length: number }
  | { kind: "int"; axis: number; value: number }
  | { kind: "array"; axis: number; array: MgArray }
  | { kind: "none" };

type Raw =
  | { kind: "slice"; start: number | null; stop: number | null; step: number | null }
  | { kind: "int"; value: number | bigint }
  | { kind: "array"; array: MgArray }
  | { kind: "none" }
  | { kind: "ellipsis" };

const SLICE_RE = /^\s*([+-]?\d+)?\s*:\s*([+-]?\d+)?\s*(?::\s*([+-]?\d+)?\s*)?$/;

function sliceBound(v: unknown, op: string): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v === "bigint") return Number(v);
  if (typeof v !== "number" || !Number.isInteger(v)) throw new TypeError(`[${op}] Slice indices must be integers or null, got ${String(v)}.`);
  return v;
}

function classify(item: IndexItem, op: string): Raw {
  if (item === null) return { kind: "none" };
  if (typeof item === "number" || typeof item === "bigint") {
    if (typeof item === "number" && !Number.isInteger(item)) throw new TypeError(`[${op}] Indices must be integers, got ${item}.`);
    return { kind: "int", value: item };
  }
  if (typeof item === "string") {
    if (item.trim() === "...") return { kind: "ellipsis" };
    const m = SLICE_RE.exec(item);
    if (!m) throw new SyntaxError(`[${op}] Invalid slice '${item}': write 'start:stop:step' (each part optional), e.g. ':', '1:3', '::-1'.`);
    const num = (s: string | undefined) => (s === undefined ? null : Number(s));
    return { kind: "slice", start: num(m[1]), stop: num(m[2]), step: num(m[3]) };
  }
  if (typeof item === "boolean") {
    throw new TypeError(`[${op}] Booleans cannot be used as indices (MLX does not support boolean indexing).`);
  }
  if (item instanceof MgArray || Array.isArray(item) || ArrayBuffer.isView(item)) {
    const arr = indexArray(item as ArrayInput, op);
    if (arr.dtype === bool_) throw new TypeError(`[${op}] Boolean array indices are not supported (MLX does not support boolean masks in indexing).`);
    if (!isInteger(arr.dtype)) throw new TypeError(`[${op}] Index arrays must have an integer dtype, got ${arr.dtype.name}.`);
    return { kind: "array", array: arr };
  }
  if (typeof item === "object") {
    const keys = Object.keys(item);
    if (keys.every((k) => k === "start" || k === "stop" || k === "step")) {
      const s = item as SliceSpec;
      return { kind: "slice", start: sliceBound(s.start, op), stop: sliceBound(s.stop, op), step: sliceBound(s.step, op) };
    }
  }
  throw new TypeError(`[${op}] Cannot index an array with ${typeof item === "object" ? "this object" : `a ${typeof item}`}; use integers, slices (':' strings or { start, stop, step }), null, '...' or integer arrays.`);
}

/** Python's slice.indices(n): normalised start/stop/step, clipped to the axis. */
function resolveSlice(start: number | null, stop: number | null, step: number | null, n: number, op: string): [number, number, number] {
  const st = step ?? 1;
  if (st === 0) throw new RangeError(`[${op}] Slice step cannot be zero.`);
  let s: number, e: number;
  if (st > 0) {
    s = start === null ? 0 : start < 0 ? Math.max(start + n, 0) : Math.min(start, n);
    e = stop === null ? n : stop < 0 ? Math.max(stop + n, 0) : Math.min(stop, n);
  } else {
    s = start === null ? n - 1 : start < 0 ? Math.max(start + n, -1) : Math.min(start, n - 1);
    e = stop === null ? -1 : stop < 0 ? Math.max(stop + n, -1) : Math.min(stop, n - 1);
  }
  return [s, e, st];
}

/** Expands "...", converts items and assigns each non-newaxis entry its source axis. */
function parseIndex(a: MgArray, items: readonly IndexItem[], op: string): Entry[] {
  const raw = items.map((it) => classify(it, op));
  const nEllipsis = raw.filter((r) => r.kind === "ellipsis").length;
  if (nEllipsis > 1) throw new SyntaxError(`[${op}] An index can only have a single ellipsis ("...").`);
  const consumed = raw.filter((r) => r.kind !== "none" && r.kind !== "ellipsis").length;
  if (consumed > a.ndim) throw new RangeError(`[${op}] Too many indices for array with ${a.ndim} dimensions.`);
  const expanded: Raw[] = [];
  for (const r of raw) {
    if (r.kind !== "ellipsis") expanded.push(r);
    else for (let i = 0; i < a.ndim - consumed; i++) expanded.push({ kind: "slice", start: null, stop: null, step: null });
  }
  let axis = 0;
  return expanded.map((r): Entry => {
    if (r.kind === "none" || r.kind === "ellipsis") return { kind: "none" };
    const ax = axis++;
    const n = a.shape[ax]!;
    if (r.kind === "int") return { kind: "int", axis: ax, value: staticIndex(r.value, n, ax, op) };
    if (r.kind === "array") return { kind: "array", axis: ax, array: r.array };
    const [start, stop, step] = resolveSlice(r.start, r.stop, r.step, n, op);
    return { kind: "slice", axis: ax, start, stop, step, length: sliceLength(start, stop, step) };
  });
}

/** The static slice covering every int/slice entry (full extent elsewhere). */
function basicBounds(a: MgArray, entries: readonly Entry[]): [number[], number[], number[]] {
  const start = a.shape.map(() => 0);
  const stop = [...a.shape];
  const step = a.shape.map(() => 1);
  for (const e of entries) {
    if (e.kind === "slice") {
      start[e.axis] = e.start;
      stop[e.axis] = e.stop;
      step[e.axis] = e.step;
    } else if (e.kind === "int") {
      start[e.axis] = e.value;
      stop[e.axis] = e.value + 1;
    }
  }
  return [start, stop, step];
}

/** Number of source axes the entries consume (the rest are implicit full slices). */
function consumedAxes(entries: readonly Entry[]): number {
  return entries.filter((e) => e.kind !== "none").length;
}

/** Result shape of a basic (no array) index expression. */
function basicShape(a: MgArray, entries: readonly Entry[]): number[] {
  const shape: number[] = [];
  for (const e of entries) {
    if (e.kind === "slice") shape.push(e.length);
    else if (e.kind === "none") shape.push(1);
  }
  shape.push(...a.shape.slice(consumedAxes(entries)));
  return shape;
}

/**
 * Where the result dimensions of an advanced index expression come from, in output order: "B"
 * for the broadcast index dimensions, an entry index for a slice or newaxis, then the implicit
 * trailing axes. Index dims go first when slices or newaxis separate the indexed axes (NumPy).
 */
interface AdvancedPlan {
  broadcast: number[];
  order: ("B" | number)[];
}

function advancedPlan(entries: readonly Entry[], op: string): AdvancedPlan {
  const adv = entries.flatMap((e, i) => (e.kind === "array" || e.kind === "int" ? [i] : []));
  const shapes = adv.map((i) => {
    const e = entries[i]!;
    return e.kind === "array" ? e.array.shape : [];
  });
  const broadcast = broadcastShapes(shapes, op);
  const first = adv[0]!;
  const last = adv[adv.length - 1]!;
  const adjacent = adv.length === last - first + 1;
  const order: ("B" | number)[] = adjacent ? [] : ["B"];
  entries.forEach((e, i) => {
    if (e.kind === "slice" || e.kind === "none") order.push(i);
    else if (adjacent && i === first) order.push("B");
  });
  return { broadcast, order };
}

/** a[...]: the value of an index expression (views for basic indices, a gather otherwise). */
export function getItem(a: MgArray, items: readonly IndexItem[], op = "index"): MgArray {
  a.checkUsable(op);
  const entries = parseIndex(a, items, op);
  const [start, stop, step] = basicBounds(a, entries);
  if (!entries.some((e) => e.kind === "array")) {
    return reshape(sliceStatic(a, start, stop, step), basicShape(a, entries));
  }
  // Slices apply first as a view; the integer and array entries then gather from that view.
  for (const e of entries) {
    if (e.kind === "int" || e.kind === "array") {
      start[e.axis] = 0;
      stop[e.axis] = a.shape[e.axis]!;
    }
  }
  const v = sliceStatic(a, start, stop, step);
  const advEntries = entries.filter((e) => e.kind === "int" || e.kind === "array");
  const axes = advEntries.map((e) => e.axis);
  const indices = advEntries.map((e) =>
    e.kind === "array" ? e.array : fromValues([(e as { value: number }).value], [], int32),
  );
  const plan = advancedPlan(entries, op);
  if (v.size === 0 && shapeSize(plan.broadcast) !== 0) {
    const ax = axes.find((x) => v.shape[x] === 0);
    if (ax !== undefined) throw new RangeError(`[${op}] Cannot index axis ${ax} of size 0 with a non-empty index array.`);
  }
  const sizes = [...v.shape];
  for (const ax of axes) sizes[ax] = 1;
  let g = gather(v, indices, axes, sizes, { op });
  // g: broadcast dims ++ v's dims (size 1 on the indexed axes) → drop those, then order.
  const rest = v.shape.map((d, i) => (axes.includes(i) ? -1 : d)).filter((d) => d >= 0);
  const nb = plan.broadcast.length;
  g = reshape(g, [...plan.broadcast, ...rest]);
  const perm: number[] = [];
  const finalShape: number[] = [];
  let r = nb;
  for (const o of plan.order) {
    if (o === "B") {
      for (let i = 0; i < nb; i++) perm.push(i);
      finalShape.push(...plan.broadcast);
    } else if (entries[o]!.kind === "none") finalShape.push(1);
    else {
      perm.push(r);
      finalShape.push(g.shape[r++]!);
    }
  }
  while (r < g.ndim) {
    perm.push(r);
    finalShape.push(g.shape[r++]!);
  }
  return reshape(transpose(g, perm), finalShape);
}

/** Removes all leading size-1 dims (MLX squeezes them off updates before broadcasting). */
function dropLeadingOnes(x: MgArray): MgArray {
  let s = 0;
  while (s < x.ndim && x.shape[s] === 1) s++;
  return s === 0 ? x : reshape(x, x.shape.slice(s));
}

export type AtOp = "add" | "subtract" | "multiply" | "divide" | "maximum" | "minimum";

const MODE: Record<AtOp, UpdateMode> = { add: "sum", subtract: "sum", multiply: "prod", divide: "prod", maximum: "max", minimum: "min" };

/** a.at[items].op(v): a copy of `a` where every position the expression selects is updated. */
export function updateItem(a: MgArray, items: readonly IndexItem[], kind: AtOp, v: ArrayInput, opts: StreamOptions = {}): MgArray {
  const op = "at";
  a.checkUsable(op);
  const entries = parseIndex(a, items, op);
  const vals = weakScalar(v, a.dtype, op);
  if (consumedAxes(entries) === 0) {
    // Only newaxis / "...": the whole array, an ordinary (promoting) binary op.
    const u = broadcastToShape(dropLeadingOnes(vals), a.shape, op, opts.stream);
    return (ew[kind] as (x: ArrayInput, y: ArrayInput, o?: StreamOptions) => MgArray)(a, u, opts);
  }
  let upd = vals;
  if (kind === "subtract") upd = ew.negative(upd, opts);
  if (kind === "divide") {
    if (!isInexact(a.dtype)) {
      throw new TypeError(`[${op}] divide on a ${a.dtype.name} array would scatter a truncated reciprocal; cast the array to a floating dtype first.`);
    }
    upd = ew.reciprocal(upd, opts);
  }
  const mode = MODE[kind];
  upd = dropLeadingOnes(upd);
  if (!entries.some((e) => e.kind === "array")) {
    const [start, stop, step] = basicBounds(a, entries);
    const region = start.map((s, i) => sliceLength(s, stop[i]!, step[i]!));
    const u = broadcastToShape(upd, basicShape(a, entries), op, opts.stream);
    return sliceUpdateStatic(a, reshape(u, region, opts), start, stop, step, mode, { ...opts, op });
  }
  // Advanced: one index array per consumed axis, all broadcasting to the leading result dims;
  // implicit trailing axes are whole slices of each update.
  const plan = advancedPlan(entries, op);
  const k = consumedAxes(entries);
  const trailing = a.shape.slice(k);
  const leadShape: number[] = [];
  const placeOf = new Map<number, number>(); // entry index → its output dim
  let bAt = 0;
  for (const o of plan.order) {
    if (o === "B") {
      bAt = leadShape.length;
      leadShape.push(...plan.broadcast);
    } else {
      placeOf.set(o, leadShape.length);
      const e = entries[o]!;
      leadShape.push(e.kind === "slice" ? e.length : 1);
    }
  }
  const nb = plan.broadcast.length;
  const indices: MgArray[] = [];
  entries.forEach((e, i) => {
    if (e.kind === "none") return;
    const shape = leadShape.map(() => 1);
    let idx: MgArray;
    if (e.kind === "slice") {
      shape[placeOf.get(i)!] = e.length;
      idx = ew.add(ew.multiply(arange(0, e.length, 1, int32, opts), e.step, opts), e.start, opts);
    } else {
      idx = e.kind === "array" ? e.array : fromValues([e.value], [], int32);
      const s = idx.shape;
      for (let j = 0; j < s.length; j++) shape[bAt + nb - s.length + j] = s[j]!;
    }
    indices.push(broadcastToShape(reshape(idx, shape, opts), leadShape, op, opts.stream));
  });
  const outShape = [...leadShape, ...trailing];
  const u = broadcastToShape(upd, outShape, op, opts.stream);
  const updates = reshape(u, [...leadShape, ...new Array<number>(k).fill(1), ...trailing], opts);
  return scatter(a, indices, updates, Array.from({ length: k }, (_, i) => i), mode, { ...opts, op });
}

/**
 * The helper returned by `a.at(...)`: each method returns a new array (as mx's a.at[...]).
 * @example
 * mg.array([1, 2, 3]).at(mg.array([0, 0, 2])).add(10)
 */
export class ArrayAt {
  constructor(
    private readonly array: MgArray,
    private readonly items: readonly IndexItem[],
  ) {}
  /** Adds `value` at every selected position; repeated positions add every time. */
  add(value: ArrayInput, opts?: StreamOptions): MgArray {
    return updateItem(this.array, this.items, "add", value, opts);
  }
  /**
   * Subtracts `value` at the selected places (duplicates subtract repeatedly).
   */
  subtract(value: ArrayInput, opts?: StreamOptions): MgArray {
    return updateItem(this.array, this.items, "subtract", value, opts);
  }
  /**
   * Multiplies by `value` at the selected places.
   */
  multiply(value: ArrayInput, opts?: StreamOptions): MgArray {
    return updateItem(this.array, this.items, "multiply", value, opts);
  }
  /** Multiplies by the reciprocal of `value` (floating arrays only), as MLX. */
  divide(value: ArrayInput, opts?: StreamOptions): MgArray {
    return updateItem(this.array, this.items, "divide", value, opts);
  }
  /**
   * The maximum with `value` at the selected places.
   */
  maximum(value: ArrayInput, opts?: StreamOptions): MgArray {
    return updateItem(this.array, this.items, "maximum", value, opts);
  }
  /**
   * The minimum with `value` at the selected places.
   */
  minimum(value: ArrayInput, opts?: StreamOptions): MgArray {
    return updateItem(this.array, this.items, "minimum", value, opts);
  }
}

