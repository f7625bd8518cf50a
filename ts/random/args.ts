// Argument handling shared by mg.random: MLX's parameters stay positional in MLX's order, and a
// trailing options object may carry `stream` and (for convenience) `key`. Every function parses
// its call the same way, so `normal([2, 3], { key })` and `normal([2, 3], float32, null, null, key)`
// mean the same thing.
import { MgArray } from "../core/array.ts";
import { type Dtype, dtypeArgument, uint32 } from "../core/dtype.ts";
import { resolveStream, type Stream, type StreamOrDevice } from "../core/device.ts";
import { formatShape } from "../core/shape.ts";
import { isOptionsObject } from "../core/ops/convert.ts";

export interface RandomOptions {
  /** The PRNG key (as the positional `key` parameter); default: split the global key. */
  key?: MgArray | null;
  stream?: StreamOrDevice | null;
}

/** A shape argument: a list of dimensions or a single dimension. */
export type ShapeArg = number | readonly number[];

/**
 * A call of a function whose positional parameters are `P`: any prefix of them, optionally
 * followed by the options object.
 */
export type RandomArgs<P extends readonly unknown[]> = P extends readonly [...infer Init, unknown]
  ? [...Partial<P>, RandomOptions?] | RandomArgs<Init>
  : [RandomOptions?];

const OPTION_NAMES = new Set(["key", "stream"]);

export interface ParsedArgs {
  /** The positional arguments, padded with undefined to the parameter count. */
  positional: unknown[];
  options: RandomOptions;
  stream: Stream;
}

/** Splits `args` into up to `names.length` positional arguments and the options object. */
export function parseArgs(op: string, args: readonly unknown[], names: readonly string[]): ParsedArgs {
  let end = args.length;
  let options: RandomOptions = {};
  const at = args.findIndex(isOptionsObject);
  if (at >= 0) {
    if (at !== args.length - 1) {
      throw new TypeError(`[${op}] the options object must be the last argument.`);
    }
    options = args[at] as RandomOptions;
    end = at;
    for (const k of Object.keys(options)) {
      if (!OPTION_NAMES.has(k)) {
        throw new TypeError(`[${op}] unknown option '${k}' (the options object takes 'key' and 'stream').`);
      }
    }
  }
  if (end > names.length) {
    throw new TypeError(`[${op}] expected at most ${names.length} positional arguments (${names.join(", ")}), got ${end}.`);
  }
  const positional = args.slice(0, end);
  while (positional.length < names.length) positional.push(undefined);
  const keyAt = names.indexOf("key");
  if (keyAt >= 0 && options.key != null) {
    if (positional[keyAt] != null) throw new TypeError(`[${op}] key given both positionally and in the options object.`);
    positional[keyAt] = options.key;
  }
  return { positional, options, stream: resolveStream(options.stream) };
}

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
