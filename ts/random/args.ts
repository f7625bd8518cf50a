// Argument checks shared by mg.random. Calls are resolved by the options helper (ts/core/options.ts):
// MLX's parameters positional in MLX's order, any of them by name in the trailing options object, so
// `normal([2, 3], { key })` and `normal([2, 3], float32, null, null, key)` mean the same thing.
import { MgArray } from "../core/array.ts";
import { type Dtype, dtypeArgument, uint32 } from "../core/dtype.ts";
import { formatShape } from "../core/shape.ts";

/** A shape argument: a list of dimensions or a single dimension. */
export type ShapeArg = number | readonly number[];

/** Validates a shape: integers, none negative (MLX's "[bits] Negative dimensions not allowed."). */
export function checkRandomShape(shape: unknown, op: string): number[] {
  const list = typeof shape === "number" ? [shape] : shape;
  if (!Array.isArray(list)) {
    throw new TypeError(`[${op}] shape must be an integer or a list of integers, got ${describe(shape)}.`);
  }
  for (const d of list) {
    if (typeof d !== "number" || !Number.isInteger(d)) {
      throw new TypeError(`[${op}] shape must contain integers, got ${JSON.stringify(list)}.`);
    }
  }
  const dims = list as number[];
  if (dims.some((d) => d < 0)) throw new RangeError(`[${op}] Negative dimensions not allowed: ${formatShape(dims)}.`);
  return [...dims];
}

/** A dtype argument: a Dtype, or null/undefined for the default (MLX's `dtype=None`). */
export function checkDtype(dtype: unknown, fallback: Dtype, op: string): Dtype {
  if (dtype === undefined || dtype === null) return fallback;
  return dtypeArgument(op, dtype);
}

/** An integer argument. */
export function checkInt(x: unknown, name: string, op: string): number {
  if (typeof x !== "number" || !Number.isInteger(x)) {
    throw new TypeError(`[${op}] ${name} must be an integer, got ${describe(x)}.`);
  }
  return x;
}

/** Checks a key as MLX's bits does: a uint32 array of shape (2,). */
export function checkKey(key: unknown, op: string): MgArray {
  if (!(key instanceof MgArray)) {
    throw new TypeError(`[${op}] key must be an array from mg.random.key or mg.random.split, got ${describe(key)}.`);
  }
  key.checkUsable(op);
  if (key.dtype !== uint32) throw new TypeError(`[${op}] Expected key type uint32 but received ${key.dtype.name}.`);
  if (key.ndim !== 1 || key.shape[0] !== 2) {
    throw new RangeError(`[${op}] Expected key shape (2,) but received ${formatShape(key.shape)}.`);
  }
  return key;
}

export function describe(x: unknown): string {
  if (x instanceof MgArray) return x.describe();
  if (Array.isArray(x)) return JSON.stringify(x);
  if (typeof x === "bigint") return `${x}n`;
  if (typeof x === "object" && x !== null) return "an object";
  return String(x);
}
