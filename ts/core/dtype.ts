// The 14 dtypes, MLX's category lattice, type promotion and machine limits (guide §1.1–§1.2).

/** numpy's one-letter dtype kind (b, u, i, f, V for bfloat16, c). */
export type DtypeKind = "b" | "u" | "i" | "f" | "V" | "c";
/** The names of the dtypes. */
export type DtypeName =
  | "bool"
  | "uint8"
  | "uint16"
  | "uint32"
  | "uint64"
  | "int8"
  | "int16"
  | "int32"
  | "int64"
  | "float16"
  | "float32"
  | "float64"
  | "bfloat16"
  | "complex64";

/**
 * A set of dtypes (mg.floating, mg.integer …), as mx.DtypeCategory, for issubdtype.
 * @example
 * mg.issubdtype(mg.float16, mg.floating)
 */
export class DtypeCategory {
  constructor(
    readonly name: string,
    /** Index into the subcategory table (MLX's Dtype::Category order). */
    readonly index: number,
  ) {}
  /** The category's name. */
  toString(): string {
    return this.name;
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return `metalgrad.${this.name}`;
  }
}

/** The category of complex dtypes. */
export const complexfloating = new DtypeCategory("complexfloating", 0);
/** The category of real floating dtypes. */
export const floating = new DtypeCategory("floating", 1);
/** The category of floating and complex dtypes. */
export const inexact = new DtypeCategory("inexact", 2);
/** The category of signed integer dtypes. */
export const signedinteger = new DtypeCategory("signedinteger", 3);
/** The category of unsigned integer dtypes. */
export const unsignedinteger = new DtypeCategory("unsignedinteger", 4);
/** The category of integer dtypes. */
export const integer = new DtypeCategory("integer", 5);
/** The category of numeric dtypes (all but bool). */
export const number = new DtypeCategory("number", 6);
/** The category of every dtype. */
export const generic = new DtypeCategory("generic", 7);

/**
 * An array's element type, as mx.Dtype: `name`, `size` in bytes; compare with ===.
 * @example
 * [mg.float16.name, mg.float16.size]
 */
export class Dtype {
  constructor(
    readonly name: DtypeName,
    /** Bytes per element. */
    readonly size: number,
    /** Row/column of the promotion table. */
    readonly index: number,
    readonly kind: DtypeKind,
    readonly category: DtypeCategory,
  ) {}
  /** The dtype's name, as MLX prints it ("float32"). */
  toString(): string {
    return this.name;
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return `metalgrad.${this.name}`;
  }
}

// Index order follows MLX's Dtype::Val so the promotion table reads like MLX's.
/** The boolean dtype (MLX's `bool_`). */
export const bool_ = new Dtype("bool", 1, 0, "b", generic);
/** 8-bit unsigned integers. */
export const uint8 = new Dtype("uint8", 1, 1, "u", unsignedinteger);
/** 16-bit unsigned integers. */
export const uint16 = new Dtype("uint16", 2, 2, "u", unsignedinteger);
/** 32-bit unsigned integers. */
export const uint32 = new Dtype("uint32", 4, 3, "u", unsignedinteger);
/** 64-bit unsigned integers (values come back as bigints). */
export const uint64 = new Dtype("uint64", 8, 4, "u", unsignedinteger);
/** 8-bit signed integers. */
export const int8 = new Dtype("int8", 1, 5, "i", signedinteger);
/** 16-bit signed integers. */
export const int16 = new Dtype("int16", 2, 6, "i", signedinteger);
/** 32-bit signed integers: the dtype of JS integer literals. */
export const int32 = new Dtype("int32", 4, 7, "i", signedinteger);
/** 64-bit signed integers (values come back as bigints; bigint literals are int64). */
export const int64 = new Dtype("int64", 8, 8, "i", signedinteger);
/** IEEE half precision. */
export const float16 = new Dtype("float16", 2, 9, "f", floating);
/** IEEE single precision: the dtype of JS fractional literals. */
export const float32 = new Dtype("float32", 4, 10, "f", floating);
/** IEEE double precision (CPU only, as in MLX). */
export const float64 = new Dtype("float64", 8, 11, "f", floating);
/** bfloat16: float32's exponent with an 8-bit significand. */
export const bfloat16 = new Dtype("bfloat16", 2, 12, "V", floating);
/** Complex numbers of two float32 parts; values are {re, im} objects. */
export const complex64 = new Dtype("complex64", 8, 13, "c", complexfloating);

/** Every dtype, in MLX's order. */
export const ALL_DTYPES: readonly Dtype[] = [
  bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64,
  float16, float32, float64, bfloat16, complex64,
];

// Jax-style promotion, as MLX's mlx/dtype.cpp. Row/column order: the dtype index above.
// prettier-ignore
const PROMOTION: readonly (readonly Dtype[])[] = (() => {
  const [b, u8, u16, u32, u64, i8, i16, i32, i64, f16, f32, f64, bf, c] = ALL_DTYPES as Dtype[] as [
    Dtype, Dtype, Dtype, Dtype, Dtype, Dtype, Dtype, Dtype, Dtype, Dtype, Dtype, Dtype, Dtype, Dtype];
  return [
    //  bool  u8   u16  u32  u64  i8   i16  i32  i64  f16  f32  f64  bf16 c64
    [b,   u8,  u16, u32, u64, i8,  i16, i32, i64, f16, f32, f64, bf, c], // bool
    [u8,  u8,  u16, u32, u64, i16, i16, i32, i64, f16, f32, f64, bf, c], // uint8
    [u16, u16, u16, u32, u64, i32, i32, i32, i64, f16, f32, f64, bf, c], // uint16
    [u32, u32, u32, u32, u64, i64, i64, i64, i64, f16, f32, f64, bf, c], // uint32
    [u64, u64, u64, u64, u64, f32, f32, f32, f32, f16, f32, f64, bf, c], // uint64
    [i8,  i16, i32, i64, f32, i8,  i16, i32, i64, f16, f32, f64, bf, c], // int8
    [i16, i16, i32, i64, f32, i16, i16, i32, i64, f16, f32, f64, bf, c], // int16
    [i32, i32, i32, i64, f32, i32, i32, i32, i64, f16, f32, f64, bf, c], // int32
    [i64, i64, i64, i64, f32, i64, i64, i64, i64, f16, f32, f64, bf, c], // int64
    [f16, f16, f16, f16, f16, f16, f16, f16, f16, f16, f32, f64, f32, c], // float16
    [f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f64, f32, c], // float32
    [f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, c], // float64
    [bf,  bf,  bf,  bf,  bf,  bf,  bf,  bf,  bf,  f32, f32, f64, bf, c], // bfloat16
    [c,   c,   c,   c,   c,   c,   c,   c,   c,   c,   c,   c,   c,  c], // complex64
  ];
})();

/**
 * The dtype two dtypes promote to, by MLX's table.
 * @example
 * mg.promoteTypes(mg.int32, mg.float16)
 */
export function promoteTypes(a: Dtype, b: Dtype): Dtype {
  const t = PROMOTION[a?.index]?.[b?.index];
  if (t === undefined) {
    // Hot path (every binary op): the arguments are checked only when the lookup misses.
    dtypeArgument("promote_types", a);
    dtypeArgument("promote_types", b);
  }
  return t!;
}

// Which category contains which (MLX's subcategory_to_category). Order: DtypeCategory.index.
// prettier-ignore
const SUBCATEGORY: readonly (readonly boolean[])[] = [
  // complexfloating floating inexact signed unsigned integer number generic
  [true,  false, true,  false, false, false, true,  true], // complexfloating
  [false, true,  true,  false, false, false, true,  true], // floating
  [false, false, true,  false, false, false, true,  true], // inexact
  [false, false, false, true,  false, true,  true,  true], // signedinteger
  [false, false, false, false, true,  true,  true,  true], // unsignedinteger
  [false, false, false, false, false, true,  true,  true], // integer
  [false, false, false, false, false, false, true,  true], // number
  [false, false, false, false, false, false, false, true], // generic
];

/** A dtype argument from user code (JS callers can pass anything): the Dtype, or a tagged error. */
export function dtypeArgument(op: string, d: unknown): Dtype {
  if (d instanceof Dtype) return d;
  const got = typeof d === "string" ? `the string "${d}"` : d === null || typeof d !== "object" ? String(d) : "an object";
  throw new TypeError(`[${op}] Expected a dtype such as mg.float32 or mg.int32, got ${got}.`);
}

/**
 * MLX's issubdtype: dtype ⊆ dtype only when equal; a category never sits under a dtype.
 * @example
 * mg.issubdtype(mg.int32, mg.integer)
 */
export function issubdtype(a: Dtype | DtypeCategory, b: Dtype | DtypeCategory): boolean {
  for (const x of [a, b]) {
    if (!(x instanceof Dtype) && !(x instanceof DtypeCategory)) {
      throw new TypeError(`[issubdtype] Expected a dtype or a dtype category (mg.floating, ...), got ${typeof x === "string" ? `the string "${x}"` : String(x)}.`);
    }
  }
  if (a instanceof Dtype) {
    if (b instanceof Dtype) return a === b;
    return SUBCATEGORY[a.category.index]![b.index]!;
  }
  if (b instanceof Dtype) return false;
  return SUBCATEGORY[a.index]![b.index]!;
}

/** The array API's kind names that isdtype accepts. */
export type DtypeKindName =
  | "bool"
  | "signed integer"
  | "unsigned integer"
  | "integral"
  | "real floating"
  | "complex floating"
  | "numeric";

/**
 * Array-API style predicate, as mx.isdtype.
 * @example
 * mg.isdtype(mg.int8, "signed integer")
 */
export function isdtype(
  dtype: Dtype,
  kind: Dtype | DtypeKindName | readonly (Dtype | DtypeKindName)[],
): boolean {
  const one = (k: Dtype | DtypeKindName): boolean => {
    if (k instanceof Dtype) return dtype === k;
    switch (k) {
      case "bool":
        return dtype === bool_;
      case "signed integer":
        return issubdtype(dtype, signedinteger);
      case "unsigned integer":
        return issubdtype(dtype, unsignedinteger);
      case "integral":
        return issubdtype(dtype, integer);
      case "real floating":
        return issubdtype(dtype, floating);
      case "complex floating":
        return issubdtype(dtype, complexfloating);
      case "numeric":
        return issubdtype(dtype, number);
      default:
        throw new TypeError(`[isdtype] Unknown data type kind: '${String(k)}'.`);
    }
  };
  if (Array.isArray(kind)) return (kind as readonly (Dtype | DtypeKindName)[]).some(one);
  return one(kind as Dtype | DtypeKindName);
}

/**
 * `from` can be cast to `to` when promoting the two gives back `to` (MLX's can_cast).
 * @example
 * mg.canCast(mg.int32, mg.float32)
 */
export function canCast(from: Dtype | { dtype: Dtype }, to: Dtype): boolean {
  const f = from instanceof Dtype ? from : dtypeArgument("can_cast", (from as { dtype?: unknown } | null)?.dtype);
  return promoteTypes(f, dtypeArgument("can_cast", to)) === to;
}

/**
 * The promoted dtype of arrays and dtypes, as mx.result_type.
 * @example
 * mg.resultType(mg.array([1]), mg.float16)
 */
export function resultType(...arraysAndDtypes: (Dtype | { dtype: Dtype })[]): Dtype {
  if (arraysAndDtypes.length === 0) {
    throw new TypeError("[result_type] At least one array or dtype is required.");
  }
  let t: Dtype | undefined;
  for (const x of arraysAndDtypes) {
    const d = x instanceof Dtype ? x : x?.dtype;
    if (!(d instanceof Dtype)) throw new TypeError("[result_type] Inputs must be arrays or dtypes.");
    t = t ? promoteTypes(t, d) : d;
  }
  return t!;
}

/**
 * Whether a dtype is a real floating type.
 * @example
 * mg.isFloating(mg.bfloat16)
 */
export const isFloating = (dtype: Dtype): boolean => checked(dtype, "is_floating").category === floating;
/**
 * Whether a dtype is complex.
 * @example
 * mg.isComplex(mg.complex64)
 */
export const isComplex = (dtype: Dtype): boolean => checked(dtype, "is_complex") === complex64;
/**
 * Whether a dtype is floating or complex.
 * @example
 * mg.isInexact(mg.int32)
 */
export const isInexact = (dtype: Dtype): boolean => checked(dtype, "is_inexact").category === floating || dtype === complex64;
/**
 * Whether a dtype is an integer type.
 * @example
 * mg.isInteger(mg.uint8)
 */
export const isInteger = (dtype: Dtype): boolean => checked(dtype, "is_integer").kind === "i" || dtype.kind === "u";
// The predicates are public: anything but a dtype is a tagged error (one instanceof per call).
const checked = (d: Dtype, op: string): Dtype => (d instanceof Dtype ? d : dtypeArgument(op, d));
export const is64BitInteger = (d: Dtype): boolean => d === int64 || d === uint64;

/** MLX's at_least_float: integers and bool become float32, inexact types stay. */
export function atLeastFloat(d: Dtype): Dtype {
  return isInexact(d) ? d : float32;
}

// ---------------------------------------------------------------------------------------------
// Machine limits

/**
 * Facts about a floating dtype (min, max, eps, tiny …), as mx.finfo.
 * @example
 * mg.finfo(mg.bfloat16).max
 */
export class Finfo {
  readonly min: number;
  readonly max: number;
  readonly eps: number;
  readonly smallestNormal: number;
  readonly tiny: number;
  readonly resolution: number;
  readonly bits: number;
  constructor(readonly dtype: Dtype, max: number, eps: number, smallestNormal: number) {
    this.max = max;
    this.min = -max;
    this.eps = eps;
    this.smallestNormal = smallestNormal;
    this.tiny = smallestNormal;
    this.bits = dtype.size * 8;
    // numpy's definition: 10 ** -precision with precision = floor(-log10(eps)).
    this.resolution = 10 ** -Math.floor(-Math.log10(eps));
  }
  /** A one-line summary, as MLX prints finfo. */
  toString(): string {
    return `finfo(min=${this.min}, max=${this.max}, dtype=${this.dtype.name})`;
  }
}

/**
 * Machine limits of a floating (or complex, reported as float32) dtype, as mx.finfo.
 * @example
 * mg.finfo(mg.float16).eps
 */
export function finfo(dtype: Dtype): Finfo {
  dtypeArgument("finfo", dtype);
  switch (dtype) {
    case float16:
      return new Finfo(float16, 65504, 2 ** -10, 2 ** -14);
    case bfloat16:
      return new Finfo(bfloat16, 3.3895313892515355e38, 2 ** -7, 2 ** -126);
    case float32:
    case complex64:
      return new Finfo(float32, 3.4028234663852886e38, 2 ** -23, 2 ** -126);
    case float64:
      return new Finfo(float64, Number.MAX_VALUE, Number.EPSILON, 2 ** -1022);
    default:
      throw new TypeError(`[finfo] dtype ${dtype.name} is not inexact.`);
  }
}

/**
 * The range of an integer dtype, as mx.iinfo.
 * @example
 * mg.iinfo(mg.uint16).max
 */
export class Iinfo {
  readonly bits: number;
  constructor(readonly dtype: Dtype, readonly min: number | bigint, readonly max: number | bigint) {
    this.bits = dtype.size * 8;
  }
  /** A one-line summary, as MLX prints iinfo. */
  toString(): string {
    return `iinfo(min=${this.min}, max=${this.max}, dtype=${this.dtype.name})`;
  }
}

/**
 * Limits of an integer dtype, as mx.iinfo. 64-bit limits are bigints (they do not fit a double).
 * @example
 * mg.iinfo(mg.int8).min
 */
export function iinfo(dtype: Dtype): Iinfo {
  dtypeArgument("iinfo", dtype);
  switch (dtype) {
    case int8: return new Iinfo(dtype, -128, 127);
    case int16: return new Iinfo(dtype, -32768, 32767);
    case int32: return new Iinfo(dtype, -2147483648, 2147483647);
    case int64: return new Iinfo(dtype, -(2n ** 63n), 2n ** 63n - 1n);
    case uint8: return new Iinfo(dtype, 0, 255);
    case uint16: return new Iinfo(dtype, 0, 65535);
    case uint32: return new Iinfo(dtype, 0, 4294967295);
    case uint64: return new Iinfo(dtype, 0, 2n ** 64n - 1n);
    default:
      throw new TypeError(`[iinfo] dtype ${dtype.name} is not an integer type.`);
  }
}

// ---------------------------------------------------------------------------------------------
// JS scalars

/** A JS value an op takes as an array: number, boolean or bigint. */
export type Scalar = number | boolean | bigint;

export function isScalar(x: unknown): x is Scalar {
  return typeof x === "number" || typeof x === "boolean" || typeof x === "bigint";
}

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

/**
 * An integral JS number is an integer literal only while a double holds it exactly (|x| ≤ 2^53):
 * JavaScript cannot tell 1e20 from an integer, and a float is what was meant (MLX turns a Python
 * int that large into an overflow error; 1e20 as a float is float32 there too).
 */
export function isIntegerLiteral(x: number): boolean {
  return Number.isInteger(x) && Math.abs(x) <= 2 ** 53;
}

/**
 * The dtype of a JS scalar on its own, MLX's Python-scalar rule where JavaScript can follow it:
 * integral numbers int32 within int32's range and int64 up to ±2^53 (as MLX gives 2**40), other
 * numbers — fractions and integral values beyond 2^53 — float32; booleans bool_, bigints int64.
 */
export function scalarDtype(x: Scalar): Dtype {
  if (typeof x === "boolean") return bool_;
  if (typeof x === "bigint") return int64;
  if (isIntegerLiteral(x)) return x < INT32_MIN || x > INT32_MAX ? int64 : int32;
  return float32;
}

/**
 * The dtype a *weak* JS scalar takes next to an array of dtype `other` (MLX's to_array with the
 * other operand's dtype): it keeps the array's dtype when it fits the array's kind, so
 * `int8 * 0` stays int8 and `float16 * 1.5` stays float16, while `int32 * 1.5` is float32 and
 * `bool * 0` is int32. An integer that does not fit the array's integer dtype is an error, as in MLX.
 */
export function weakScalarDtype(x: Scalar, other: Dtype, op = "array"): Dtype {
  if (typeof x === "boolean") return other;
  if (typeof x === "bigint" || isIntegerLiteral(x)) {
    if (other === bool_) return scalarDtype(x);
    if (isInteger(other)) {
      if (!is64BitInteger(other)) {
        const info = iinfo(other);
        const v = Number(x);
        if (v < (info.min as number) || v > (info.max as number)) {
          throw new RangeError(
            `[${op}] Converting ${String(x)} to ${other.name} would result in overflow.`,
          );
        }
      }
      return other;
    }
    return other; // floating or complex: the integer takes the array's inexact type
  }
  if (isInexact(other)) return other;
  return float32;
}

// ---------------------------------------------------------------------------------------------
// Bit-exact 16-bit float conversions

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** float → bfloat16 bits, round to nearest even; NaN stays NaN (quieted). */
export function bfloat16BitsFromNumber(x: number): number {
  f32Scratch[0] = x; // first to float32 (RNE), as every bfloat16 conversion goes through float
  const bits = u32Scratch[0]!;
  if ((bits & 0x7fffffff) > 0x7f800000) return ((bits >>> 16) | 0x0040) & 0xffff;
  const rounded = bits + 0x7fff + ((bits >>> 16) & 1);
  return (rounded >>> 16) & 0xffff;
}

export function numberFromBfloat16Bits(b: number): number {
  u32Scratch[0] = (b & 0xffff) << 16;
  return f32Scratch[0]!;
}

/** Rounds a double to the nearest bfloat16 value (as a number). */
export function roundBfloat16(x: number): number {
  return numberFromBfloat16Bits(bfloat16BitsFromNumber(x));
}

const TWO31 = 2 ** 31;
const TWO63 = 2 ** 63;
const TWO64 = 2 ** 64;

/** trunc(x) as int32, or INT32_MIN when NaN, infinite or out of range (x86-64's cvttss2si). */
function floatToInt32(x: number): number {
  const t = Math.trunc(x);
  return t >= -TWO31 && t < TWO31 ? t : -TWO31;
}

/** trunc(x) as int64, or INT64_MIN when NaN, infinite or out of range. */
function floatToInt64(x: number): bigint {
  const t = Math.trunc(x);
  return t >= -TWO63 && t < TWO63 ? BigInt(t) : -(2n ** 63n);
}

/**
 * A float value converted to an integer dtype, identically on every device (docs/corner-cases.md):
 * x86-64's conversion, which is what MLX gives there — C leaves NaN, ±inf and out-of-range values
 * undefined, and Apple silicon saturates instead. int32/int64: trunc(x), or the type's minimum
 * when that does not fit; narrower integers: the int32 result wrapped; uint32: the int64 result
 * wrapped; uint64: trunc(x) for 2^63 ≤ x < 2^64, 0 from 2^64 (and +inf), else the int64 result
 * wrapped. 64-bit dtypes give a bigint.
 */
export function floatToInteger(x: number, dtype: Dtype): number | bigint {
  switch (dtype) {
    case int8: return (floatToInt32(x) << 24) >> 24;
    case int16: return (floatToInt32(x) << 16) >> 16;
    case int32: return floatToInt32(x);
    case uint8: return floatToInt32(x) & 0xff;
    case uint16: return floatToInt32(x) & 0xffff;
    case uint32: {
      const t = Math.trunc(x);
      return t >= -TWO63 && t < TWO63 ? t >>> 0 : 0; // ToUint32 is exact modular arithmetic
    }
    case int64: return floatToInt64(x);
    case uint64:
      if (x >= TWO63) return x < TWO64 ? BigInt(Math.trunc(x)) : 0n;
      return BigInt.asUintN(64, floatToInt64(x));
    default:
      throw new TypeError(`[astype] ${dtype.name} is not an integer dtype.`);
  }
}

/** Rounds a JS number to the value a real dtype can hold: integral numbers within int64's range
 *  wrap into an integer dtype like a C integer cast; other numbers convert as floatToInteger (NaN → int32 gives
 *  INT32_MIN). 64-bit integer dtypes are exact only below 2^53. */
export function roundToDtype(x: number, dtype: Dtype): number {
  if ((dtype.kind === "i" || dtype.kind === "u") && !(Number.isInteger(x) && Math.abs(x) < TWO63)) return Number(floatToInteger(x, dtype));
  switch (dtype) {
    case float32:
    case complex64:
      return Math.fround(x);
    case float16:
      return Math.f16round(x);
    case bfloat16:
      return roundBfloat16(x);
    case float64:
      return x;
    case bool_:
      return x !== 0 ? 1 : 0;
    case int8: return (Math.trunc(x) << 24) >> 24;
    case int16: return (Math.trunc(x) << 16) >> 16;
    case int32: return Math.trunc(x) | 0;
    case uint8: return Math.trunc(x) & 0xff;
    case uint16: return Math.trunc(x) & 0xffff;
    case uint32: return Math.trunc(x) >>> 0;
    default:
      return Math.trunc(x);
  }
}
