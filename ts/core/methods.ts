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
    readonly real: MgArray;
    readonly imag: MgArray;

    astype: Method<(dtype: Dtype, opts?: StreamOptions) => MgArray, "astype">;
    /** The same values in another shape: `a.reshape(2, 3)` or `a.reshape([2, 3])`. */
    reshape(...shape: (number | readonly number[] | StreamOptions)[]): MgArray;
    flatten: Method<(startAxis?: number, endAxis?: number, opts?: StreamOptions) => MgArray, "flatten">;
    squeeze: Method<(axis?: number | readonly number[] | null, opts?: StreamOptions) => MgArray, "squeeze">;
    /** The axes permuted: `a.transpose(1, 0)`, `a.transpose([1, 0])`, or reversed with no axes. */
    transpose(...axes: (number | readonly number[] | StreamOptions)[]): MgArray;
    swapaxes: Method<(axis1: number, axis2: number, opts?: StreamOptions) => MgArray, "swapaxes">;
    moveaxis: Method<(source: number, destination: number, opts?: StreamOptions) => MgArray, "moveaxis">;

    abs: Unary<"abs">;
    conj: Unary<"conj">;
    cos: Unary<"cos">;
    sin: Unary<"sin">;
    exp: Unary<"exp">;
    log: Unary<"log">;
    log2: Unary<"log2">;
    log10: Unary<"log10">;
    log1p: Unary<"log1p">;
    sqrt: Unary<"sqrt">;
    rsqrt: Unary<"rsqrt">;
    square: Unary<"square">;
    reciprocal: Unary<"reciprocal">;
    round: Method<(decimals?: number, opts?: StreamOptions) => MgArray, "round">;

    sum: Reduction<"sum">;
    prod: Reduction<"prod">;
    max: Reduction<"max">;
    min: Reduction<"min">;
    mean: Reduction<"mean">;
    all: Reduction<"all">;
    any: Reduction<"any">;
    /** Variance (MLX's a.var; `var` is a reserved word in JavaScript). */
    variance: Moment<"variance">;
    std: Moment<"std">;
    cumsum: Scan<"cumsum">;
    cumprod: Scan<"cumprod">;
    cummax: Scan<"cummax">;
    cummin: Scan<"cummin">;
    logcumsumexp: Scan<"logcumsumexp">;

    add: Binary<"add">;
    subtract: Binary<"subtract">;
    multiply: Binary<"multiply">;
    divide: Binary<"divide">;
    floorDivide: Binary<"floorDivide">;
    remainder: Binary<"remainder">;
    power: Binary<"power">;
    maximum: Binary<"maximum">;
    minimum: Binary<"minimum">;
    equal: Binary<"equal">;
    notEqual: Binary<"notEqual">;
    less: Binary<"less">;
    lessEqual: Binary<"lessEqual">;
    greater: Binary<"greater">;
    greaterEqual: Binary<"greaterEqual">;
    negative: Unary<"negative">;
    logicalNot: Unary<"logicalNot">;
    logicalAnd: Binary<"logicalAnd">;
    logicalOr: Binary<"logicalOr">;
    bitwiseAnd: Binary<"bitwiseAnd">;
    bitwiseOr: Binary<"bitwiseOr">;
    bitwiseXor: Binary<"bitwiseXor">;
    bitwiseInvert: Unary<"bitwiseInvert">;
    leftShift: Binary<"leftShift">;
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
