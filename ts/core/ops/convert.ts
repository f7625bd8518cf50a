// Turning JS values into arrays: mg.array(...), and the weak-scalar conversion every op uses.
import { MgArray } from "../array.ts";
import {
  bfloat16, bfloat16BitsFromNumber, bool_, complex64, type Dtype, dtypeArgument, float16, float32, float64, floatToInteger, int16,
  int32, int64, int8, isScalar, type Scalar, scalarDtype, uint16, uint32, uint64, uint8,
  weakScalarDtype,
} from "../dtype.ts";
import { resolveStream, type Stream, type StreamOrDevice } from "../device.ts";
import { bigFromNumber, type Complex, storageCtor } from "../elements.ts";
import { rowMajorStrides } from "../shape.ts";
import { allocateBuffer, Storage, type TypedArray } from "../../memory/storage.ts";

/** The options object every op takes: `stream`, a device or a stream to run on. */
export interface StreamOptions {
  stream?: StreamOrDevice | null;
}

/** Anything an op accepts where MLX accepts `array | scalar`. */
export type ArrayInput = MgArray | Scalar | Complex | NestedArray | TypedArray;
export type NestedArray = readonly (Scalar | MgArray | Complex | NestedArray)[];

function typedArrayDtype(x: TypedArray | Uint8ClampedArray): Dtype {
  if (x instanceof Float32Array) return float32;
  if (x instanceof Float64Array) return float64;
  if (x instanceof Float16Array) return float16;
  if (x instanceof Int32Array) return int32;
  if (x instanceof Int16Array) return int16;
  if (x instanceof Int8Array) return int8;
  if (x instanceof Uint32Array) return uint32;
  if (x instanceof Uint16Array) return uint16;
  if (x instanceof Uint8Array || x instanceof Uint8ClampedArray) return uint8;
  if (x instanceof BigInt64Array) return int64;
  if (x instanceof BigUint64Array) return uint64;
  throw new TypeError("[array] unsupported typed array");
}

function isComplexValue(x: unknown): x is Complex {
  return typeof x === "object" && x !== null && !Array.isArray(x) && !(x instanceof MgArray) &&
    typeof (x as Complex).re === "number" && typeof (x as Complex).im === "number";
}

/** A trailing options object (MLX's keyword arguments): a plain `{...}` that is not a {re, im} value. */
export function isOptionsObject(x: unknown): x is Record<string, unknown> {
  if (x === null || typeof x !== "object") return false;
  const proto = Object.getPrototypeOf(x);
  return (proto === Object.prototype || proto === null) && !isComplexValue(x);
}

/** Splits the trailing options object, if any, off a variadic argument list. */
export function splitOptions<O extends object = StreamOptions>(args: readonly unknown[]): [ArrayInput[], O] {
  const last = args[args.length - 1];
  return isOptionsObject(last) ? [args.slice(0, -1) as ArrayInput[], last as O] : [args as ArrayInput[], {} as O];
}

/** Walks nested JS arrays: the shape, flat leaves, and the dtype MLX would infer. */
function flattenNested(value: NestedArray): { shape: number[]; leaves: (Scalar | Complex)[]; dtype: Dtype | null } {
  const shape: number[] = [];
  const leaves: (Scalar | Complex)[] = [];
  let dtype: Dtype | null = null;
  // Determine the shape from the first element at each depth, then check every list against it.
  const probe = firstLeaf(value, shape);
  if (probe instanceof MgArray) {
    throw new Error("[array] internal: arrays inside lists are handled by stacking");
  }
  const walk = (v: unknown, depth: number): void => {
    if (depth < shape.length) {
      if (!Array.isArray(v) || v.length !== shape[depth]) {
        throw new Error("[array] Initialization encountered non-uniform length (ragged nested lists).");
      }
      for (const e of v) walk(e, depth + 1);
      return;
    }
    if (Array.isArray(v)) throw new Error("[array] Initialization encountered non-uniform length (ragged nested lists).");
    let d: Dtype;
    if (isScalar(v)) d = scalarDtype(v);
    else if (isComplexValue(v)) d = complex64;
    else throw new TypeError(`[array] Invalid type ${v === null ? "null" : typeof v} in array initialization.`);
    leaves.push(v as Scalar | Complex);
    dtype = dtype === null ? d : promoteLeaf(dtype, d);
  };
  walk(value, 0);
  return { shape, leaves, dtype };
}

// Leaf promotion in a literal list: bool < int32 < int64 < float32 < complex64 (MLX's rules for
// Python lists: any float makes the list float32; ints that do not fit int32 make it int64).
function promoteLeaf(a: Dtype, b: Dtype): Dtype {
  const rank = (d: Dtype) => (d === bool_ ? 0 : d === int32 ? 1 : d === int64 ? 2 : d === float32 ? 3 : 4);
  return rank(a) >= rank(b) ? a : b;
}

/** Creates an evaluated array holding `values` (row-major) converted to `dtype`. */
export function fromValues(
  values: ArrayLike<Scalar | Complex>,
  shape: readonly number[],
  dtype: Dtype,
  stream = resolveStream(),
  shared = false,
): MgArray {
  const a = new MgArray([...shape], dtype, stream, null, shared);
  const storage = new Storage(allocateBuffer(a.nbytes));
  a.setLayout(storage, 0, rowMajorStrides(shape), false);
  const view = storage.view(dtype, storageCtor(dtype));
  const n = values.length;
  for (let i = 0; i < n; i++) writeLeaf(view, dtype, i, values[i]!);
  return a;
}

/** Integral numbers within int64's range are integers (wrapped into narrower dtypes as C does);
 *  other numbers are floats, converted by floatToInteger (NaN → int32 is INT32_MIN). */
const isIntegerValue = (v: number): boolean => Number.isInteger(v) && v >= -(2 ** 63) && v < 2 ** 63;

function writeLeaf(view: TypedArray, dtype: Dtype, i: number, v: Scalar | Complex): void {
  if (dtype === complex64) {
    if (isComplexValue(v)) {
      view[2 * i] = v.re;
      view[2 * i + 1] = v.im;
    } else {
      view[2 * i] = Number(v);
      view[2 * i + 1] = 0;
    }
    return;
  }
  if (isComplexValue(v)) throw new TypeError(`[array] cannot store a complex value in a ${dtype.name} array.`);
  if (typeof v === "bigint" && (v < -(2n ** 63n) || v >= 2n ** 64n)) {
    // Any 64-bit pattern converts as C does; a wider integer has no 64-bit value to wrap.
    throw new RangeError(`[array] The integer ${v} does not fit in 64 bits.`);
  }
  if (dtype === int64 || dtype === uint64) {
    const big = typeof v === "bigint" ? v : typeof v === "boolean" ? (v ? 1n : 0n)
      : isIntegerValue(v) ? bigFromNumber(v) : (floatToInteger(v, dtype) as bigint);
    view[i] = dtype === int64 ? BigInt.asIntN(64, big) : BigInt.asUintN(64, big);
    return;
  }
  const num = typeof v === "boolean" ? (v ? 1 : 0) : Number(v);
  if (dtype === bfloat16) view[i] = bfloat16BitsFromNumber(num);
  else if (dtype === bool_) view[i] = num !== 0 ? 1 : 0;
  else if (dtype.kind === "i" || dtype.kind === "u") view[i] = isIntegerValue(num) ? num : (floatToInteger(num, dtype) as number);
  else view[i] = num;
}

export interface ArrayOptions {
  /** Shape for a flat typed array (default: 1-D). */
  shape?: readonly number[];
}

/**
 * Creates an array, as mx.array: from a scalar, nested JS arrays (of scalars, {re, im} complex
 * values or arrays), a typed array (optionally with a shape) or another array.
 * @example
 * mg.array([[1, 2], [3, 4]], mg.float16)
 */
export function array(value: ArrayInput, dtype?: Dtype | null, options: ArrayOptions = {}): MgArray {
  if (dtype != null) dtypeArgument("array", dtype);
  if (value instanceof MgArray) {
    value.checkUsable("array");
    return dtype && dtype !== value.dtype ? astypeLazy(value, dtype) : value;
  }
  if (isScalar(value)) return fromValues([value], [], dtype ?? scalarDtype(value));
  if (isComplexValue(value)) return fromValues([value], [], complex64);
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    const ta = value as TypedArray;
    const shape = options.shape ? [...options.shape] : [ta.length];
    const n = shape.reduce((x, y) => x * y, 1);
    if (n !== ta.length) {
      throw new Error(`[array] typed array of length ${ta.length} does not fit shape (${shape.join(",")}).`);
    }
    const own = typedArrayDtype(ta);
    const out = fromValues(ta as ArrayLike<Scalar>, shape, own);
    return dtype && dtype !== own ? astypeLazy(out, dtype) : out;
  }
  if (Array.isArray(value)) {
    if (containsArrays(value)) return stackNested(value, dtype ?? undefined);
    const { shape, leaves, dtype: inferred } = flattenNested(value);
    return fromValues(leaves, shape, dtype ?? inferred ?? float32);
  }
  throw new TypeError(`[array] Invalid type ${typeof value} received in array initialization.`);
}

function containsArrays(value: NestedArray): boolean {
  return firstLeaf(value, []) instanceof MgArray;
}

/** Deepest lists a literal may nest (far beyond any array's rank; bounds the walk's recursion). */
const MAX_NESTING = 1024;

/** Follows first elements down to a non-list, pushing each list's length onto `shape`. A list that
 *  contains itself is an error, not an endless loop. */
function firstLeaf(value: unknown, shape: number[]): unknown {
  let probe = value;
  const seen = new Set<unknown>();
  while (Array.isArray(probe)) {
    if (seen.has(probe)) throw new Error("[array] The nested list contains itself (a cycle); it has no finite shape.");
    if (seen.size >= MAX_NESTING) throw new Error(`[array] Lists nested more than ${MAX_NESTING} deep.`);
    seen.add(probe);
    shape.push(probe.length);
    probe = probe[0];
  }
  return probe;
}

// Lists of arrays (possibly nested) become a stacked array, as MLX does.
let stackHook: ((arrays: MgArray[]) => MgArray) | null = null;
let astypeHook: ((a: MgArray, d: Dtype) => MgArray) | null = null;
export function setConvertHooks(stack: (arrays: MgArray[]) => MgArray, astype: (a: MgArray, d: Dtype) => MgArray): void {
  stackHook = stack;
  astypeHook = astype;
}
function astypeLazy(a: MgArray, d: Dtype): MgArray {
  return astypeHook!(a, d);
}
function stackNested(value: NestedArray, dtype?: Dtype, path: Set<unknown> = new Set()): MgArray {
  if (path.has(value)) throw new Error("[array] The nested list contains itself (a cycle); it has no finite shape.");
  if (path.size >= MAX_NESTING) throw new Error(`[array] Lists nested more than ${MAX_NESTING} deep.`);
  path.add(value);
  const parts = value.map((v) =>
    v instanceof MgArray ? v : Array.isArray(v) && containsArrays(v) ? stackNested(v, undefined, path) : array(v as ArrayInput));
  path.delete(value);
  const out = stackHook!(parts);
  return dtype && dtype !== out.dtype ? astypeLazy(out, dtype) : out;
}

// Weak scalars recur constantly (x + 1, x * 0.5): ops share one immutable constant per
// (dtype, value) instead of allocating a buffer each time. Bounded; eviction is CLOCK (second
// chance), which approximates least-recently-used without reordering anything on a hit — this
// runs on every op with a scalar operand.
const CONSTANT_CACHE_SIZE = 1024;
interface ConstantEntry {
  array: MgArray;
  table: Map<unknown, ConstantEntry>;
  key: unknown;
  recent: boolean;
}
// Per dtype, keyed by the value itself (1, 1n and true are distinct keys; −0 has its own key).
const constantTables = new Map<Dtype, Map<unknown, ConstantEntry>>();
const NEGATIVE_ZERO = Symbol("-0");
/** Every entry, oldest first (a Set keeps insertion order). */
const constantOrder = new Set<ConstantEntry>();

/** A shared, immutable 0-d array holding `value` as `dtype` (for ops' scalar operands). */
export function constantScalar(value: Scalar, dtype: Dtype): MgArray {
  let table = constantTables.get(dtype);
  if (!table) constantTables.set(dtype, (table = new Map()));
  const key = value === 0 && Object.is(value, -0) ? NEGATIVE_ZERO : value;
  const hit = table.get(key);
  if (hit) {
    hit.recent = true;
    return hit.array;
  }
  while (constantOrder.size >= CONSTANT_CACHE_SIZE) {
    const oldest = constantOrder.values().next().value!;
    constantOrder.delete(oldest);
    if (oldest.recent) {
      oldest.recent = false;
      constantOrder.add(oldest); // a second chance: to the back
    } else {
      oldest.table.delete(oldest.key);
    }
  }
  const entry: ConstantEntry = { array: fromValues([value], [], dtype, resolveStream(), true), table, key, recent: false };
  table.set(key, entry);
  constantOrder.add(entry);
  return entry.array;
}

/**
 * A shared constant (constantScalar's 0-d array, evaluated) seen as `shape` on `stream`: an
 * evaluated, shared view with every stride 0, cached per constant, stream and shape. `x + 1` then
 * builds one node instead of two: the Broadcast node of the scalar cost a third of a tiny op (its
 * array, node, registration and view step: 1.23 → 0.93 µs CPU per op without it). Only for
 * concrete operands outside transforms (binaryOp checks): a traced graph keeps the Broadcast node
 * that shapeless compilation re-infers.
 */
export function broadcastConstant(c: MgArray, shape: readonly number[], stream: Stream): MgArray {
  let byStream = broadcastConstants.get(c);
  if (!byStream) broadcastConstants.set(c, (byStream = new Map()));
  let byShape = byStream.get(stream);
  if (!byShape) byStream.set(stream, (byShape = new Map()));
  const key = shape.length === 1 ? shape[0]! : shape.join(",");
  const hit = byShape.get(key);
  if (hit) return hit;
  if (byShape.size >= 16) byShape.clear(); // a constant next to many shapes: keep the cache small
  const l = c.layout!;
  const view = new MgArray([...shape], c.dtype, stream, null, true);
  const strides: number[] = [];
  for (let i = 0; i < shape.length; i++) strides.push(0);
  view.setLayout(l.storage, l.offset, strides, true);
  byShape.set(key, view);
  return view;
}
const broadcastConstants = new WeakMap<MgArray, Map<Stream, Map<number | string, MgArray>>>();

/** Converts an op argument to an array; scalars take their own default dtype. */
/** Rejects what can never be an array operand, naming the op (a missing or mistyped argument). */
export function checkOperand(x: unknown, op: string): void {
  if (x === undefined || x === null || typeof x === "string" || typeof x === "function" || typeof x === "symbol") {
    const got = typeof x === "string" ? `the string "${x}"` : String(x);
    throw new TypeError(`[${op}] Expected an array or a number, got ${got}.`);
  }
}

export function toArray(x: ArrayInput, op: string): MgArray {
  if (x instanceof MgArray) {
    x.checkUsable(op);
    return x;
  }
  checkOperand(x, op);
  return array(x);
}

/**
 * Converts two op arguments, treating a lone scalar as *weak* (MLX's to_arrays): it takes the
 * other array's dtype when it fits its kind.
 */
export function toArrays(a: ArrayInput, b: ArrayInput, op: string): [MgArray, MgArray] {
  const aIs = a instanceof MgArray;
  const bIs = b instanceof MgArray;
  if (aIs && !bIs && isScalar(b)) return [toArray(a, op), constantScalar(b, weakScalarDtype(b, a.dtype, op))];
  if (bIs && !aIs && isScalar(a)) return [constantScalar(a, weakScalarDtype(a, b.dtype, op)), toArray(b, op)];
  return [toArray(a, op), toArray(b, op)];
}

/** `toArrays(a, b, op)[1]` when `a` is an array (already checked): binary ops need no pair. */
export function secondOperand(a: MgArray, b: ArrayInput, op: string): MgArray {
  if (!(b instanceof MgArray) && isScalar(b)) return constantScalar(b, weakScalarDtype(b, a.dtype, op));
  return toArray(b, op);
}

/** A weak scalar next to a known dtype (for ops with one array and a scalar parameter). */
export function weakScalar(x: ArrayInput, like: Dtype, op: string): MgArray {
  if (isScalar(x)) return constantScalar(x, weakScalarDtype(x, like, op));
  return toArray(x, op);
}
