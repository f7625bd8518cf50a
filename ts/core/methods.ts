// MgArray's methods, as MLX's array methods (plus node-mlx style operator methods, since
// JavaScript has no operator overloading). Each is a thin call into an op, through the options helper
// (ts/core/options.ts): MLX's positional parameters, any defaulted one by name in a trailing options
// object. Also the JS integration: console.log/inspect and `${a}` print MLX's repr, JSON.stringify gives
// the nested list, and a size-1 array converts to a number where JS asks for one.
import { MgArray } from "./array.ts";
import { complex64, type Dtype } from "./dtype.ts";
import type { ElementValue } from "./elements.ts";
import type { TypedArray } from "../memory/storage.ts";
import { dataSync, formatArray, item, type Nested, tolist } from "./read.ts";
import { evalAsync } from "./graph.ts";
import { publicMethod, type PublicFn } from "./options.ts";
import type { ArrayInput, StreamOptions } from "./ops/convert.ts";
import * as ew from "./ops/elementwise.ts";
import * as rd from "./ops/reduce.ts";
import * as sh from "./ops/shape.ts";

type Axes = rd.Axes;
/** A method `F` as `MgArray.<K>` takes it: see PublicFn (defaulted parameters also by name). */
type Method<F, K extends string> = PublicFn<F, `MgArray.${K}`>;
type Unary<K extends string> = Method<(opts?: StreamOptions) => MgArray, K>;
type Binary<K extends string> = Method<(other: ArrayInput, opts?: StreamOptions) => MgArray, K>;
type Reduction<K extends string> = Method<(axis?: Axes, keepdims?: boolean, opts?: StreamOptions) => MgArray, K>;
type Scan<K extends string> = Method<(axis?: number | null, opts?: rd.ScanOptions) => MgArray, K>;
/** var/std's options: `correction` is MLX's array-API name for ddof. */
export interface VarianceMethodOptions extends StreamOptions {
  correction?: number | null;
}
type Moment<K extends string> = Method<(axis?: Axes, keepdims?: boolean, ddof?: number, opts?: VarianceMethodOptions) => MgArray, K>;

declare module "./array.ts" {
  interface MgArray {
    /** The single value of a size-1 array (a bigint for 64-bit integers, {re, im} for complex64). */
    item(): ElementValue;
    /** Nested JS arrays of the values. */
    tolist(): Nested;
    /** A row-major typed-array copy of the values (blocks until computed). */
    dataSync(): TypedArray;
    /** The same, without blocking the event loop while GPU work finishes. */
    data(): Promise<TypedArray>;
    /** tolist() without blocking the event loop while GPU work finishes. */
    tolistAsync(): Promise<Nested>;
    /** MLX's printed form, `array([1, 2], dtype=int32)` (also what console.log and `${a}` show). */
    toString(): string;
    /** The nested list, for JSON.stringify (64-bit integers beyond 2^53 as decimal strings, which JSON numbers cannot hold). */
    toJSON(): unknown;
    /** The value of a size-1 array where JS asks for a number (`+a`, `a * 2`); text for `${a}`; a TypeError otherwise. */
    [Symbol.toPrimitive](hint: string): number | string;
    /** Transpose of all axes. */
    readonly T: MgArray;
    /** Transpose of the last two axes (mg.matrixTranspose). */
    readonly mT: MgArray;
    /** The real part, as mg.real. */
    readonly real: MgArray;
    /** The imaginary part, as mg.imag. */
    readonly imag: MgArray;

    /** This array cast to `dtype`, as mg.astype. */
    astype: Method<(dtype: Dtype, opts?: StreamOptions) => MgArray, "astype">;
    /** The same values in another shape: `a.reshape(2, 3)` or `a.reshape([2, 3])`. */
    reshape(...shape: (number | readonly number[] | StreamOptions)[]): MgArray;
    /** The array with axes startAxis…endAxis merged, as mg.flatten. */
    flatten: Method<(startAxis?: number, endAxis?: number, opts?: StreamOptions) => MgArray, "flatten">;
    /** The array without size-1 axes, as mg.squeeze. */
    squeeze: Method<(axis?: number | readonly number[] | null, opts?: StreamOptions) => MgArray, "squeeze">;
    /** The axes permuted: `a.transpose(1, 0)`, `a.transpose([1, 0])`, or reversed with no axes. */
    transpose(...axes: (number | readonly number[] | StreamOptions)[]): MgArray;
    /** The array with two axes exchanged, as mg.swapaxes. */
    swapaxes: Method<(axis1: number, axis2: number, opts?: StreamOptions) => MgArray, "swapaxes">;
    /** The array with an axis moved, as mg.moveaxis. */
    moveaxis: Method<(source: number, destination: number, opts?: StreamOptions) => MgArray, "moveaxis">;

    /** mg.abs of this array (same parameters and options). */
    abs: Unary<"abs">;
    /** mg.conjugate of this array (same parameters and options). */
    conj: Unary<"conj">;
    /** mg.cos of this array (same parameters and options). */
    cos: Unary<"cos">;
    /** mg.sin of this array (same parameters and options). */
    sin: Unary<"sin">;
    /** mg.exp of this array (same parameters and options). */
    exp: Unary<"exp">;
    /** mg.log of this array (same parameters and options). */
    log: Unary<"log">;
    /** mg.log2 of this array (same parameters and options). */
    log2: Unary<"log2">;
    /** mg.log10 of this array (same parameters and options). */
    log10: Unary<"log10">;
    /** mg.log1p of this array (same parameters and options). */
    log1p: Unary<"log1p">;
    /** mg.sqrt of this array (same parameters and options). */
    sqrt: Unary<"sqrt">;
    /** mg.rsqrt of this array (same parameters and options). */
    rsqrt: Unary<"rsqrt">;
    /** mg.square of this array (same parameters and options). */
    square: Unary<"square">;
    /** mg.reciprocal of this array (same parameters and options). */
    reciprocal: Unary<"reciprocal">;
    /** Rounded to `decimals` places, as mg.round. */
    round: Method<(decimals?: number, opts?: StreamOptions) => MgArray, "round">;

    /** mg.sum of this array (same parameters and options). */
    sum: Reduction<"sum">;
    /** mg.prod of this array (same parameters and options). */
    prod: Reduction<"prod">;
    /** mg.max of this array (same parameters and options). */
    max: Reduction<"max">;
    /** mg.min of this array (same parameters and options). */
    min: Reduction<"min">;
    /** mg.mean of this array (same parameters and options). */
    mean: Reduction<"mean">;
    /** mg.all of this array (same parameters and options). */
    all: Reduction<"all">;
    /** mg.any of this array (same parameters and options). */
    any: Reduction<"any">;
    /** Variance (MLX's a.var; `var` is a reserved word in JavaScript). */
    variance: Moment<"variance">;
    /** The standard deviation over `axis`, as mg.std (`correction` is MLX's array-API name for ddof). */
    std: Moment<"std">;
    /** mg.cumsum of this array (same parameters and options). */
    cumsum: Scan<"cumsum">;
    /** mg.cumprod of this array (same parameters and options). */
    cumprod: Scan<"cumprod">;
    /** mg.cummax of this array (same parameters and options). */
    cummax: Scan<"cummax">;
    /** mg.cummin of this array (same parameters and options). */
    cummin: Scan<"cummin">;
    /** mg.logcumsumexp of this array (same parameters and options). */
    logcumsumexp: Scan<"logcumsumexp">;

    /** mg.add of this array (same parameters and options). */
    add: Binary<"add">;
    /** mg.subtract of this array (same parameters and options). */
    subtract: Binary<"subtract">;
    /** mg.multiply of this array (same parameters and options). */
    multiply: Binary<"multiply">;
    /** mg.divide of this array (same parameters and options). */
    divide: Binary<"divide">;
    /** mg.floorDivide of this array (same parameters and options). */
    floorDivide: Binary<"floorDivide">;
    /** mg.remainder of this array (same parameters and options). */
    remainder: Binary<"remainder">;
    /** mg.power of this array (same parameters and options). */
    power: Binary<"power">;
    /** mg.maximum of this array (same parameters and options). */
    maximum: Binary<"maximum">;
    /** mg.minimum of this array (same parameters and options). */
    minimum: Binary<"minimum">;
    /** mg.equal of this array (same parameters and options). */
    equal: Binary<"equal">;
    /** mg.notEqual of this array (same parameters and options). */
    notEqual: Binary<"notEqual">;
    /** mg.less of this array (same parameters and options). */
    less: Binary<"less">;
    /** mg.lessEqual of this array (same parameters and options). */
    lessEqual: Binary<"lessEqual">;
    /** mg.greater of this array (same parameters and options). */
    greater: Binary<"greater">;
    /** mg.greaterEqual of this array (same parameters and options). */
    greaterEqual: Binary<"greaterEqual">;
    /** mg.negative of this array (same parameters and options). */
    negative: Unary<"negative">;
    /** mg.logicalNot of this array (same parameters and options). */
    logicalNot: Unary<"logicalNot">;
    /** mg.logicalAnd of this array (same parameters and options). */
    logicalAnd: Binary<"logicalAnd">;
    /** mg.logicalOr of this array (same parameters and options). */
    logicalOr: Binary<"logicalOr">;
    /** mg.bitwiseAnd of this array (same parameters and options). */
    bitwiseAnd: Binary<"bitwiseAnd">;
    /** mg.bitwiseOr of this array (same parameters and options). */
    bitwiseOr: Binary<"bitwiseOr">;
    /** mg.bitwiseXor of this array (same parameters and options). */
    bitwiseXor: Binary<"bitwiseXor">;
    /** mg.bitwiseInvert of this array (same parameters and options). */
    bitwiseInvert: Unary<"bitwiseInvert">;
    /** mg.leftShift of this array (same parameters and options). */
    leftShift: Binary<"leftShift">;
    /** mg.rightShift of this array (same parameters and options). */
    rightShift: Binary<"rightShift">;
  }
}

/** Accepts `reshape(2, 3)`, `reshape([2, 3])` and a trailing options object. */
function shapeArgs(args: unknown[]): [number[], StreamOptions] {
  let opts: StreamOptions = {};
  if (args.length > 0 && typeof args[args.length - 1] === "object" && !Array.isArray(args[args.length - 1])) {
    opts = args.pop() as StreamOptions;
  }
  const dims = args.length === 1 && Array.isArray(args[0]) ? (args[0] as number[]) : (args as number[]);
  return [[...dims], opts];
}

const proto = MgArray.prototype as unknown as Record<string, unknown>;
const methods: Record<string, (this: MgArray, ...args: never[]) => unknown> & ThisType<MgArray> = {
  item() { return item(this); },
  tolist() { return tolist(this); },
  dataSync() { return dataSync(this); },
  async data() {
    await evalAsync([this]);
    return dataSync(this);
  },
  async tolistAsync() {
    await evalAsync([this]);
    return tolist(this);
  },
  toString() { return formatArray(this); },
  astype(dtype: Dtype, opts?: StreamOptions) { return ew.astype(this, dtype, opts); },
  reshape(...args: never[]) { const [s, o] = shapeArgs(args); return sh.reshape(this, s, o); },
  flatten(s?: number, e?: number, o?: StreamOptions) { return sh.flatten(this, s, e, o); },
  squeeze(axis?: number | readonly number[] | null, o?: StreamOptions) { return sh.squeeze(this, axis, o); },
  transpose(...args: never[]) { const [s, o] = shapeArgs(args); return sh.transpose(this, s.length ? s : null, o); },
  swapaxes(a: number, b: number, o?: StreamOptions) { return sh.swapaxes(this, a, b, o); },
  moveaxis(a: number, b: number, o?: StreamOptions) { return sh.moveaxis(this, a, b, o); },
  round(d?: number, o?: StreamOptions) { return ew.round(this, d, o); },
  variance(axis?: Axes, keepdims?: boolean, ddof?: number, o?: VarianceMethodOptions) {
    return rd.variance(this, axis, keepdims, withCorrection("var", ddof, o), o);
  },
  std(axis?: Axes, keepdims?: boolean, ddof?: number, o?: VarianceMethodOptions) {
    return rd.std(this, axis, keepdims, withCorrection("std", ddof, o), o);
  },
};
for (const name of ["abs", "cos", "sin", "exp", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "square", "reciprocal", "negative", "logicalNot", "bitwiseInvert"] as const) {
  methods[name] = function (this: MgArray, o?: StreamOptions) { return (ew[name] as (a: MgArray, o?: StreamOptions) => MgArray)(this, o); } as never;
}
methods.conj = function (this: MgArray, o?: StreamOptions) { return ew.conjugate(this, o); } as never;
for (const name of ["sum", "prod", "max", "min", "mean", "all", "any"] as const) {
  methods[name] = function (this: MgArray, axis?: Axes, keepdims?: boolean, o?: StreamOptions) { return rd[name](this, axis, keepdims ?? false, o); } as never;
}
for (const name of ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"] as const) {
  methods[name] = function (this: MgArray, axis?: number | null, o?: rd.CumOptions) { return rd[name](this, axis, o); } as never;
}
for (const name of ["add", "subtract", "multiply", "divide", "floorDivide", "remainder", "power", "maximum", "minimum", "equal", "notEqual", "less", "lessEqual", "greater", "greaterEqual", "logicalAnd", "logicalOr", "bitwiseAnd", "bitwiseOr", "bitwiseXor", "leftShift", "rightShift"] as const) {
  methods[name] = function (this: MgArray, other: ArrayInput, o?: StreamOptions) { return (ew[name] as (a: ArrayInput, b: ArrayInput, o?: StreamOptions) => MgArray)(this, other, o); } as never;
}
// Methods that build arrays are library calls (ownership.ts), as the ops they call are; readers are not.
const readers = new Set(["item", "tolist", "dataSync", "data", "tolistAsync", "toString"]);
for (const [name, fn] of Object.entries(methods)) {
  const value = name === "toString" ? fn : publicMethod(`MgArray.${name}`, fn, { library: !readers.has(name) });
  Object.defineProperty(proto, name, { value, writable: true, configurable: true });
}
// Properties build one view each (what they return is the caller's).
Object.defineProperty(proto, "T", { get(this: MgArray) { return sh.transpose(this); }, configurable: true });
Object.defineProperty(proto, "mT", { get(this: MgArray) { return sh.matrixTranspose(this); }, configurable: true });
Object.defineProperty(proto, "real", { get(this: MgArray) { return ew.real(this); }, configurable: true });
Object.defineProperty(proto, "imag", { get(this: MgArray) { return ew.imag(this); }, configurable: true });
Object.defineProperty(proto, Symbol.for("nodejs.util.inspect.custom"), {
  value(this: MgArray) { return formatArray(this); },
  configurable: true,
});
Object.defineProperty(proto, "toJSON", {
  value(this: MgArray) { return jsonValue(tolist(this)); },
  writable: true,
  configurable: true,
});
Object.defineProperty(proto, Symbol.toPrimitive, {
  value(this: MgArray, hint: string): number | string {
    if (hint === "string") return formatArray(this);
    if (this.size !== 1) {
      throw new TypeError(
        `[array] Only size-1 arrays convert to a JS number; this one is ${this.describe()}. ` +
          "Use the ops or methods for arithmetic (a.add(b), mg.multiply(a, 2)), a.tolist() for the values, or `${a}` / a.toString() for text.",
      );
    }
    if (this.dtype === complex64) throw new TypeError("[array] A complex64 value has no JS number; use a.item() for {re, im}.");
    return Number(item(this));
  },
  writable: true,
  configurable: true,
});

/** ddof, or MLX's `correction` (its array-API name); not both. */
function withCorrection(op: string, ddof: number | undefined, o: VarianceMethodOptions | undefined): number | undefined {
  const correction = o?.correction;
  if (correction === undefined || correction === null) return ddof;
  if (ddof !== undefined && ddof !== 0) throw new TypeError(`[${op}] give ddof or correction, not both.`);
  return correction;
}

/** tolist() for JSON: 64-bit integers as numbers where exact, else as decimal strings. */
function jsonValue(x: Nested): unknown {
  if (Array.isArray(x)) return x.map(jsonValue);
  if (typeof x === "bigint") return x >= -(2n ** 53n) && x <= 2n ** 53n ? Number(x) : x.toString();
  return x;
}
