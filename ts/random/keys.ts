// PRNG keys and raw bits: seed, key, split, bits, and the global key that calls without a key
// draw from (MLX's KeySequence).
import { MgArray } from "../core/array.ts";
import { uint32 } from "../core/dtype.ts";
import { resolveStream, type Stream } from "../core/device.ts";
import { makeArray } from "../core/graph.ts";
import { fromValues, type StreamOptions } from "../core/ops/convert.ts";
import { type BitWidth, RandomBits } from "../core/primitives/random.ts";
import { checkInt, checkKey, checkRandomShape, describe, type ShapeArg } from "./args.ts";
import { keyWords, splitWords } from "./threefry.ts";

const UINT64_MAX = (1n << 64n) - 1n;

/** A seed as MLX takes it (uint64): a non-negative integer number or bigint below 2**64. */
function toSeed(s: unknown, op: string): bigint {
  if (typeof s === "bigint") {
    if (s < 0n || s > UINT64_MAX) throw new RangeError(`[${op}] seed must be in [0, 2**64), got ${s}n.`);
    return s;
  }
  if (typeof s !== "number" || !Number.isInteger(s)) {
    throw new TypeError(`[${op}] seed must be a non-negative integer (number or bigint), got ${describe(s)}.`);
  }
  if (s < 0 || s >= 2 ** 64) throw new RangeError(`[${op}] seed must be in [0, 2**64), got ${s}.`);
  return BigInt(s);
}

// The global key lives as two plain uint32 words rather than an array: advancing it is one
// threefry split computed here (exactly the words MLX's lazy split produces), so the state never
// grows a graph and no scope (tidy, dispose) can free it. As in MLX, the initial seed is the
// time in milliseconds when it is first needed.
let globalKey: [number, number] | null = null;

/**
 * Seeds the global PRNG, as mx.random.seed.
 * @example
 * mg.random.seed(42)
 */
export function seed(seed: number | bigint): void {
  globalKey = keyWords(toSeed(seed, "seed"));
}

/**
 * The next key from the global PRNG (MLX's KeySequence::next): splits the global key in two,
 * keeps the first half as the new global key and returns the second.
 */
export function nextKey(stream?: Stream): MgArray {
  globalKey ??= keyWords(BigInt(Date.now()));
  const w = splitWords(globalKey[0], globalKey[1], 2);
  globalKey = [w[0]!, w[1]!];
  return fromValues([w[2]!, w[3]!], [2], uint32, stream);
}

/** The given key (validated) or the next key from the global PRNG. */
export function resolveKey(key: unknown, op: string, stream: Stream): MgArray {
  if (key === undefined || key === null) return nextKey(stream);
  return checkKey(key, op);
}

/**
 * A PRNG key from a seed, as mx.random.key: uint32 [seed >> 32, seed & 0xffffffff].
 * @example
 * mg.random.key(0)
 */
export function key(seed: number | bigint): MgArray {
  const [k0, k1] = keyWords(toSeed(seed, "key"));
  return fromValues([k0, k1], [2], uint32);
}

/** Random bits of `shape` from a validated key (the RandomBits primitive). */
export function bitsFromKey(shape: readonly number[], width: BitWidth, key: MgArray, stream: Stream): MgArray {
  return makeArray(RandomBits, [key], { shape: [...shape], width }, stream);
}

/**
 * Splits a key into `num` sub keys, as mx.random.split(key, num=2): an array of shape (num, 2).
 * @example
 * mg.random.split(mg.random.key(0))
 */
export function split(key: MgArray, num = 2, opts: StreamOptions = {}): MgArray {
  const stream = resolveStream(opts.stream);
  const n = num === undefined ? 2 : checkInt(num, "num", "split");
  if (key === undefined || key === null) throw new TypeError("[split] missing the key to split.");
  const validKey = checkKey(key, "split");
  if (n < 0) throw new RangeError(`[split] num must be non-negative, got ${n}.`);
  return bitsFromKey([n, 2], 4, validKey, stream);
}

/**
 * Raw random bits, as MLX's bits(shape=[], width=4, key=None): uint32, uint16 or uint8 for a
 * width of 4, 2 or 1 bytes. As in MLX's C++ API, `bits(shape, key)` means width 4.
 * @example
 * mg.random.bits([2], mg.random.key(0))
 */
export function bits(shape: ShapeArg = [], width: number | MgArray = 4, key: MgArray | null = null, opts: StreamOptions = {}): MgArray {
  const stream = resolveStream(opts.stream);
  if (width instanceof MgArray && (key === undefined || key === null)) [width, key] = [4, width];
  const outShape = checkRandomShape(shape ?? [], "bits");
  const w = width === undefined || width === null ? 4 : checkInt(width, "width", "bits");
  const validKey = resolveKey(key, "bits", stream);
  if (w !== 1 && w !== 2 && w !== 4) {
    throw new RangeError(`[bits] Bit width must be in {1, 2, 4} but got ${w}.`);
  }
  return bitsFromKey(outShape, w, validKey, stream);
}
