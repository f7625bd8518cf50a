// Reading array values into JS: item(), tolist(), typed-array copies, and MLX-style printing.
import type { Layout, MgArray } from "./array.ts";
import { bfloat16, type Dtype, uint16, uint32, uint8 } from "./dtype.ts";
import { collectValues, type ElementValue, forEachOffset, lanesOf, storageCtor, valueAt } from "./elements.ts";
import type { TypedArray, TypedArrayConstructor } from "../memory/storage.ts";

/** JS arrays hold at most 2^32 - 1 elements. */
const MAX_JS_ARRAY_LENGTH = 2 ** 32 - 1;

/** All elements in row-major order as JS values (evaluates and waits). */
export function values(a: MgArray, op = "tolist"): ElementValue[] {
  if (a.size > MAX_JS_ARRAY_LENGTH) {
    // Checked before evaluating: a broadcast of this size is cheap to compute, impossible to list.
    throw new RangeError(`[${op}] ${a.describe()} has ${a.size} elements, more than a JS array can hold (2^32 - 1); read it in slices.`);
  }
  const l = a.ensureEvaluated(op);
  const view = l.storage.view(a.dtype, storageCtor(a.dtype));
  return collectValues(view, a.dtype, a.shape, l.strides, l.offset);
}

/** tolist()'s result: nested JS arrays of element values. */
export type Nested = ElementValue | Nested[];

/** Nested JS arrays of numbers (bigints for 64-bit ints, booleans for bool, {re, im} for complex). */
export function tolist(a: MgArray): Nested {
  const flat = values(a);
  if (a.ndim === 0) return flat[0]!;
  let i = 0;
  const build = (d: number): Nested[] => {
    const n = a.shape[d]!;
    const out: Nested[] = new Array(n);
    for (let k = 0; k < n; k++) out[k] = d === a.ndim - 1 ? flat[i++]! : build(d + 1);
    return out;
  };
  return build(0);
}

/** The single value of a size-1 array, as mx.array.item(). */
export function item(a: MgArray): ElementValue {
  if (a.size !== 1) throw new Error(`[item] ${a.describe()} has ${a.size} elements; item() needs exactly one.`);
  return values(a, "item")[0]!;
}

/**
 * A fresh row-major typed array of the values: Float32Array for float32 and bfloat16 (decoded),
 * Float16Array, Float64Array, Int32Array …, BigInt64Array for int64, Uint8Array for bool,
 * interleaved Float32Array (re, im) for complex64. A copy: safe after dispose.
 */
export function dataSync(a: MgArray): TypedArray {
  const l = a.ensureEvaluated("data");
  try {
    return copyOut(a, l);
  } catch (e) {
    // The engine's own message ("Out of memory") names neither the op nor the size.
    if (!(e instanceof RangeError)) throw e;
    throw new RangeError(`[data] A copy of ${a.describe()} (${a.nbytes} bytes) could not be allocated in JS: ${e.message}.`, { cause: e });
  }
}

// The copy moves bits, never values: a float read into a JS number and stored back may lose its
// NaN's sign and payload, and whether it does depends on JavaScriptCore's tier at that moment (its
// interpreter canonicalises a NaN when it boxes the number, JIT code keeps the bits), so the same
// array read twice gave different bytes (bfloat16 -NaN came back +NaN from a cold function).
// Strided copies go through unsigned words (at most 4 bytes: no BigInt per element); bfloat16
// widens to float32 by a shift.
function copyOut(a: MgArray, l: Layout): TypedArray {
  const n = a.size;
  const dt = a.dtype;
  // Straight from storage into the result: no intermediate list of JS values.
  let i = 0;
  if (dt === bfloat16) {
    const src = l.storage.view(uint16, Uint16Array) as Uint16Array;
    const out = new Float32Array(n);
    const bits = new Uint32Array(out.buffer);
    forEachOffset(a.shape, l.strides, l.offset, (o) => (bits[i++] = src[o]! << 16)); // bfloat16 → float32 is exact
    return out;
  }
  const Ctor = storageCtor(dt);
  const lanes = lanesOf(dt);
  if (l.rowContiguous) {
    // slice() of the same type copies bytes (the spec preserves the bit-level encoding).
    return (l.storage.view(dt, Ctor) as Uint8Array).slice(lanes * l.offset, lanes * (l.offset + n));
  }
  const wordBytes = Math.min(Ctor.BYTES_PER_ELEMENT, 4);
  const words = (lanes * Ctor.BYTES_PER_ELEMENT) / wordBytes; // per element
  const [wordDtype, Word]: [Dtype, TypedArrayConstructor] = wordBytes === 1 ? [uint8, Uint8Array] : wordBytes === 2 ? [uint16, Uint16Array] : [uint32, Uint32Array];
  const src = l.storage.view(wordDtype, Word) as Uint32Array;
  const buffer = new ArrayBuffer(n * words * wordBytes);
  const dst = new Word(buffer, 0, n * words) as Uint32Array;
  if (words === 1) {
    forEachOffset(a.shape, l.strides, l.offset, (o) => (dst[i++] = src[o]!));
  } else {
    forEachOffset(a.shape, l.strides, l.offset, (o) => {
      for (let k = o * words, end = k + words; k < end; k++) dst[i++] = src[k]!;
    });
  }
  return new Ctor(buffer, 0, lanes * n);
}

// ---------------------------------------------------------------------------------------------
// Printing, in the style of MLX's repr: array([[1, 2],\n       [3, 4]], dtype=int32)

/** A float as C++'s default ostream prints it (MLX's repr): 6 significant digits, no trailing
 *  zeros, exponents with at least two digits. */
function formatFloat(v: number): string {
  if (Number.isNaN(v)) return "nan";
  if (v === Infinity) return "inf";
  if (v === -Infinity) return "-inf";
  if (v === 0) return Object.is(v, -0) ? "-0" : "0";
  const exp = Math.floor(Math.log10(Math.abs(v)));
  if (exp < -5 || exp >= 6) {
    const [mant, e] = v.toExponential(5).split("e");
    const m = mant!.includes(".") ? mant!.replace(/0+$/, "").replace(/\.$/, "") : mant!;
    const n = Number(e);
    return `${m}e${n < 0 ? "-" : "+"}${String(Math.abs(n)).padStart(2, "0")}`;
  }
  const fixed = v.toPrecision(6);
  return fixed.includes(".") ? fixed.replace(/0+$/, "").replace(/\.$/, "") : fixed;
}

function formatValue(v: ElementValue, dtName: string): string {
  if (typeof v === "boolean") return v ? "True" : "False";
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "object") {
    const sign = v.im < 0 || Object.is(v.im, -0) ? "-" : "+";
    return `${formatFloat(v.re)}${sign}${formatFloat(Math.abs(v.im))}j`;
  }
  if (dtName.startsWith("float") || dtName === "bfloat16") return formatFloat(v);
  return String(v);
}

const EDGE = 3;
const SUMMARIZE = 1000;
/** Most items a printout shows. MLX elides only axes longer than 2 × EDGE, so a rank-40 array of
 *  2s would print 2^40 items; beyond this many, outer axes show their first item and "..." too. */
const PRINT_LIMIT = 2 ** 16;

export function formatArray(a: MgArray): string {
  if (a.disposed) return `array(<disposed>, shape=(${a.shape.join(", ")}), dtype=${a.dtype.name})`;
  const l = a.ensureEvaluated("print");
  // Only the printed items are read: a summarised array of any size shows its edges.
  const view = l.storage.view(a.dtype, storageCtor(a.dtype));
  const text = (offset: number) => formatValue(valueAt(view, a.dtype, offset), a.dtype.name);
  const summarize = a.size > SUMMARIZE;
  const indent = "array(".length;
  // Items shown per axis; over PRINT_LIMIT in total, the outermost axes keep only their first.
  const shown = a.shape.map((n) => (summarize && n > 2 * EDGE ? 2 * EDGE : n));
  const firstOnly = a.shape.map(() => false);
  let total = shown.reduce((x, y) => x * y, 1);
  for (let d = 0; d < a.ndim && total > PRINT_LIMIT; d++) {
    if (shown[d]! <= 1) continue;
    total /= shown[d]!;
    firstOnly[d] = true;
  }
  const fmt = (d: number, offset: number): string => {
    if (d === a.ndim) return text(offset);
    const n = a.shape[d]!;
    const parts: string[] = [];
    const idx = firstOnly[d] ? [0, -1]
      : summarize && n > 2 * EDGE ? [...Array(EDGE).keys(), -1, ...Array.from({ length: EDGE }, (_, i) => n - EDGE + i)] : [...Array(n).keys()];
    for (const k of idx) parts.push(k < 0 ? "..." : fmt(d + 1, offset + k * l.strides[d]!));
    // One newline between rows at every depth (MLX; NumPy adds a blank line per extra dimension).
    const sep = d === a.ndim - 1 ? ", " : ",\n" + " ".repeat(indent + d + 1);
    return `[${parts.join(sep)}]`;
  };
  return `array(${fmt(0, l.offset)}, dtype=${a.dtype.name})`;
}

