// A second, straightforward implementation of NumPy's indexing rules on flat row-major JS data,
// used to check a.index(...) and a.at(...): every output element's source position is computed
// coordinate by coordinate (no views, no gathers).
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";

export interface Ref {
  shape: number[];
  data: unknown[];
}

function flatten(x: unknown): unknown[] {
  return Array.isArray(x) ? x.flatMap(flatten) : [x];
}

export function refOf(a: MgArray): Ref {
  return { shape: [...a.shape], data: flatten(a.tolist()) };
}

function size(shape: readonly number[]): number {
  return shape.reduce((p, d) => p * d, 1);
}

/** Row-major coordinates of every element of `shape`. */
export function allCoords(shape: readonly number[]): number[][] {
  const out: number[][] = [];
  const n = size(shape);
  const c = shape.map(() => 0);
  for (let i = 0; i < n; i++) {
    out.push([...c]);
    for (let k = shape.length - 1; k >= 0; k--) {
      if (++c[k]! < shape[k]!) break;
      c[k] = 0;
    }
  }
  return out;
}

function flatIndex(coord: readonly number[], shape: readonly number[]): number {
  let f = 0;
  for (let i = 0; i < shape.length; i++) f = f * shape[i]! + coord[i]!;
  return f;
}

/** CPython's slice.indices(n), enumerated. */
export function pySlice(start: number | null, stop: number | null, step: number | null, n: number): number[] {
  const st = step ?? 1;
  const lower = st > 0 ? 0 : -1;
  const upper = st > 0 ? n : n - 1;
  const s = start === null ? (st > 0 ? lower : upper) : start < 0 ? Math.max(start + n, lower) : Math.min(start, upper);
  const e = stop === null ? (st > 0 ? upper : lower) : stop < 0 ? Math.max(stop + n, lower) : Math.min(stop, upper);
  const out: number[] = [];
  for (let i = s; st > 0 ? i < e : i > e; i += st) out.push(i);
  return out;
}

type Item = number | string | null | { start?: number | null; stop?: number | null; step?: number | null } | MgArray | number[] | number[][] | Int32Array | Uint8Array;

type Kind =
  | { k: "int"; v: number; axis: number }
  | { k: "slice"; pos: number[]; axis: number }
  | { k: "arr"; ref: Ref; axis: number }
  | { k: "new" };

function broadcastShapes(shapes: number[][]): number[] {
  const nd = Math.max(0, ...shapes.map((s) => s.length));
  const out = new Array<number>(nd).fill(1);
  for (const s of shapes) {
    s.forEach((d, i) => {
      const j = nd - s.length + i;
      if (d !== 1) {
        if (out[j] !== 1 && out[j] !== d) throw new Error("ref: shapes do not broadcast");
        out[j] = d;
      }
    });
  }
  return out;
}

/** Element of a broadcast operand at an output coordinate of the broadcast shape. */
function broadcastAt(r: Ref, coord: readonly number[]): unknown {
  const off = coord.length - r.shape.length;
  const c = r.shape.map((d, i) => (d === 1 ? 0 : coord[off + i]!));
  return r.data[flatIndex(c, r.shape)];
}

/** For x[items]: the result shape and, per result element, the flat source position. */
export function refPlan(xShape: readonly number[], items: readonly Item[]): { shape: number[]; src: number[] } {
  const nd = xShape.length;
  const consumed = items.filter((it) => it !== null && it !== "...").length;
  const expanded: Item[] = [];
  for (const it of items) {
    if (it === "...") for (let i = 0; i < nd - consumed; i++) expanded.push(":");
    else expanded.push(it);
  }
  let axis = 0;
  const kinds: Kind[] = expanded.map((it) => {
    if (it === null) return { k: "new" };
    const ax = axis++;
    const n = xShape[ax]!;
    if (typeof it === "number") return { k: "int", v: it < 0 ? it + n : it, axis: ax };
    if (typeof it === "string") {
      const [a, b, c] = it.split(":").map((p) => (p.trim() === "" ? null : Number(p)));
      return { k: "slice", pos: pySlice(a ?? null, b ?? null, c ?? null, n), axis: ax };
    }
    if (Array.isArray(it) || it instanceof mg.MgArray || ArrayBuffer.isView(it)) return { k: "arr", ref: refOf(mg.array(it as number[])), axis: ax };
    const s = it as { start?: number | null; stop?: number | null; step?: number | null };
    return { k: "slice", pos: pySlice(s.start ?? null, s.stop ?? null, s.step ?? null, n), axis: ax };
  });
  for (let ax = axis; ax < nd; ax++) kinds.push({ k: "slice", pos: Array.from({ length: xShape[ax]! }, (_, i) => i), axis: ax });
  const hasArr = kinds.some((k) => k.k === "arr");
  const advPos = kinds.flatMap((k, i) => ((k.k === "arr" || (hasArr && k.k === "int")) ? [i] : []));
  const B = hasArr ? broadcastShapes(advPos.map((i) => { const k = kinds[i]!; return k.k === "arr" ? k.ref.shape : []; })) : [];
  const adjacent = advPos.length > 0 && advPos[advPos.length - 1]! - advPos[0]! + 1 === advPos.length;
  // Result dimensions in order: "B", or the index of a slice / newaxis kind.
  const dims: ("B" | number)[] = [];
  if (hasArr && !adjacent) dims.push("B");
  kinds.forEach((k, i) => {
    if (k.k === "slice" || k.k === "new") dims.push(i);
    else if (hasArr && adjacent && i === advPos[0]) dims.push("B");
  });
  const shape = dims.flatMap((d) => (d === "B" ? B : kinds[d]!.k === "new" ? [1] : [(kinds[d] as { pos: number[] }).pos.length]));
  const stridesX = xShape.map((_, i) => size(xShape.slice(i + 1)));
  const src = allCoords(shape).map((c) => {
    const s = new Array<number>(nd).fill(0);
    let cur = 0;
    for (const d of dims) {
      if (d === "B") {
        const bc = c.slice(cur, cur + B.length);
        cur += B.length;
        for (const i of advPos) {
          const k = kinds[i]!;
          if (k.k === "int") s[k.axis] = k.v;
          else if (k.k === "arr") {
            const v = Number(broadcastAt(k.ref, bc));
            s[k.axis] = v < 0 ? v + xShape[k.axis]! : v;
          }
        }
      } else {
        const k = kinds[d]!;
        if (k.k === "slice") s[k.axis] = k.pos[c[cur]!]!;
        cur++;
      }
    }
    if (!hasArr) for (const k of kinds) if (k.k === "int") s[k.axis] = k.v;
    return s.reduce((acc, v, i) => acc + v * stridesX[i]!, 0);
  });
  return { shape, src };
}

/** x[items] as NumPy computes it. */
export function refGetItem(x: Ref, items: readonly Item[]): Ref {
  const { shape, src } = refPlan(x.shape, items);
  return { shape, data: src.map((i) => x.data[i]) };
}

/** Broadcasts `u` to `shape` after dropping its leading 1s (MLX's update rule). */
export function refBroadcast(u: Ref, shape: readonly number[]): unknown[] {
  let s = 0;
  while (s < u.shape.length && u.shape[s] === 1) s++;
  const r = { shape: u.shape.slice(s), data: u.data };
  return allCoords(shape).map((c) => broadcastAt(r, c));
}

/** x.at[items].op(u) applied one update at a time, in row-major order of the result. */
export function refAt(x: Ref, items: readonly Item[], u: Ref, op: (old: number, upd: number) => number): Ref {
  const { shape, src } = refPlan(x.shape, items);
  const upd = refBroadcast(u, shape);
  const data = x.data.map(Number);
  src.forEach((p, i) => (data[p] = op(data[p]!, Number(upd[i]))));
  return { shape: [...x.shape], data };
}
