// Shapes, strides and axes: the small arithmetic every op shares.

export type Shape = readonly number[];

export function shapeSize(shape: Shape): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function formatShape(shape: Shape): string {
  return shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(",")})`;
}

export function shapesEqual(a: Shape, b: Shape): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Row-major (C) strides in elements. */
export function rowMajorStrides(shape: Shape): number[] {
  const strides = new Array<number>(shape.length);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    strides[i] = s;
    s *= shape[i]!;
  }
  return strides;
}

/** NumPy broadcasting of any number of shapes; throws a tagged error when incompatible. */
export function broadcastShapes(shapes: readonly Shape[], op = "broadcast_shapes"): number[] {
  let ndim = 0;
  for (const s of shapes) ndim = Math.max(ndim, s.length);
  // pushed, not new Array(n).fill: a packed array without the builtin call (this runs per op)
  const out: number[] = [];
  for (let i = 0; i < ndim; i++) out.push(1);
  for (const s of shapes) {
    const off = ndim - s.length;
    for (let i = 0; i < s.length; i++) {
      const d = s[i]!;
      const o = out[off + i]!;
      if (d === o || d === 1) continue;
      if (o === 1) out[off + i] = d;
      else {
        throw new Error(
          `[${op}] Shapes ${shapes.map(formatShape).join(" and ")} cannot be broadcast.`,
        );
      }
    }
  }
  return out;
}

/** Normalises a possibly negative axis for an array of rank `ndim`. */
export function normalizeAxis(axis: number, ndim: number, op: string): number {
  if (!Number.isInteger(axis)) throw new TypeError(`[${op}] axis must be an integer, got ${axis}.`);
  const a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim) {
    throw new RangeError(`[${op}] axis ${axis} is out of bounds for array with ${ndim} dimensions.`);
  }
  return a;
}

/**
 * An axis argument as a list: one integer or a list of integers. JS callers can pass anything in
 * that position — commonly an options object meant for a later one — so the rest is a tagged error.
 */
export function axisList(axis: unknown, op: string): readonly number[] {
  if (typeof axis === "number") return [axis];
  if (Array.isArray(axis)) return axis as number[];
  const got = axis !== null && typeof axis === "object" ? `an object (${Object.keys(axis).join(", ") || "no keys"})` : `${typeof axis} ${String(axis)}`;
  throw new TypeError(`[${op}] axis must be an integer or a list of integers, got ${got}.`);
}

/** Normalises a list of axes (or all axes when undefined); rejects duplicates. Sorted ascending. */
export function normalizeAxes(
  axes: number | readonly number[] | undefined | null,
  ndim: number,
  op: string,
): number[] {
  if (axes === undefined || axes === null) return Array.from({ length: ndim }, (_, i) => i);
  const list = axisList(axes, op);
  const out = list.map((a) => normalizeAxis(a, ndim, op));
  const seen = new Set<number>();
  for (const a of out) {
    if (seen.has(a)) throw new Error(`[${op}] Received duplicate axes.`);
    seen.add(a);
  }
  return out.sort((x, y) => x - y);
}

export function checkShape(shape: unknown, op: string): number[] {
  const list = typeof shape === "number" ? [shape] : shape;
  if (!Array.isArray(list)) throw new TypeError(`[${op}] shape must be an integer or an array of integers.`);
  for (const d of list) {
    if (typeof d !== "number" || !Number.isInteger(d) || d < 0) {
      throw new RangeError(`[${op}] Invalid shape ${JSON.stringify(list)}: dimensions must be non-negative integers.`);
    }
  }
  checkShapeBounds(list as number[], op);
  return [...(list as number[])];
}

/** True when the shape is one an array may have (checkShapeBounds says why not). */
export function shapeFits(shape: Shape): boolean {
  let size = 1;
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i]!;
    if (d > MAX_DIMENSION) return false;
    size *= d;
  }
  return size <= Number.MAX_SAFE_INTEGER;
}

/** The largest dimension: MLX's dimensions are int32. */
export const MAX_DIMENSION = 2 ** 31 - 1;

/**
 * Refuses a shape no array can have: a dimension beyond int32 (MLX refuses those), or more
 * elements than JavaScript counts exactly (2^53 - 1) — e.g. a rank-64 broadcast of 2s — so that
 * nothing downstream (printing, indexing, size arithmetic) loops over or mis-sizes it.
 */
export function checkShapeBounds(shape: Shape, op: string): void {
  if (shapeFits(shape)) return;
  let size = 1;
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i]!;
    if (d > MAX_DIMENSION) {
      throw new RangeError(`[${op}] Dimension ${d} of shape (${shape.join(",")}) is outside the supported range [0, ${MAX_DIMENSION}].`);
    }
    size *= d;
  }
  if (size > Number.MAX_SAFE_INTEGER) {
    throw new RangeError(
      `[${op}] The shape (${shape.join(",")}) has ${size.toExponential(3)} elements, more than the 2^53 - 1 an array can have.`,
    );
  }
}

/** keepdims is a boolean (an options object in its place is a call the options helper did not
 *  resolve, e.g. from internal code). */
export function checkKeepdims(op: string, keepdims: unknown): boolean {
  if (typeof keepdims !== "boolean") {
    throw new TypeError(`[${op}] keepdims must be a boolean, got ${typeof keepdims === "object" ? "an object" : String(keepdims)}.`);
  }
  return keepdims;
}
