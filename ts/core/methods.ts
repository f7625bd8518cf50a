// MgArray's methods, as MLX's array methods (plus node-mlx style operator methods, since
// JavaScript has no operator overloading). Each is a thin call into an op.
import { MgArray } from "./array.ts";
import type { Dtype } from "./dtype.ts";
import type { ElementValue } from "./elements.ts";
import type { TypedArray } from "../memory/storage.ts";
import { dataSync, formatArray, item, type Nested, tolist } from "./read.ts";
import { evalAsync } from "./graph.ts";
import { libraryFunction } from "./ownership.ts";
import type { ArrayInput, StreamOptions } from "./ops/convert.ts";
import * as ew from "./ops/elementwise.ts";
import * as rd from "./ops/reduce.ts";
import * as sh from "./ops/shape.ts";

type Axes = rd.Axes;

declare module "./array.ts" {
  interface MgArray {
    /** The single value of a size-1 array. */
    item(): ElementValue;
    /** Nested JS arrays of the values. */
    tolist(): Nested;
    /** A row-major typed-array copy of the values (blocks until computed). */
    dataSync(): TypedArray;
    /** The same, without blocking the event loop while GPU work finishes. */
    data(): Promise<TypedArray>;
    /** tolist() without blocking the event loop while GPU work finishes. */
    tolistAsync(): Promise<Nested>;
    toString(): string;
    /** Transpose of all axes. */
    readonly T: MgArray;
    readonly real: MgArray;
    readonly imag: MgArray;

    astype(dtype: Dtype, opts?: StreamOptions): MgArray;
    reshape(...shape: (number | readonly number[])[]): MgArray;
    flatten(startAxis?: number, endAxis?: number, opts?: StreamOptions): MgArray;
    squeeze(axis?: number | readonly number[] | null, opts?: StreamOptions): MgArray;
    transpose(...axes: (number | readonly number[])[]): MgArray;
    swapaxes(axis1: number, axis2: number, opts?: StreamOptions): MgArray;
    moveaxis(source: number, destination: number, opts?: StreamOptions): MgArray;

    abs(opts?: StreamOptions): MgArray;
    conj(opts?: StreamOptions): MgArray;
    cos(opts?: StreamOptions): MgArray;
    sin(opts?: StreamOptions): MgArray;
    exp(opts?: StreamOptions): MgArray;
    log(opts?: StreamOptions): MgArray;
    log2(opts?: StreamOptions): MgArray;
    log10(opts?: StreamOptions): MgArray;
    log1p(opts?: StreamOptions): MgArray;
    sqrt(opts?: StreamOptions): MgArray;
    rsqrt(opts?: StreamOptions): MgArray;
    square(opts?: StreamOptions): MgArray;
    reciprocal(opts?: StreamOptions): MgArray;
    round(decimals?: number, opts?: StreamOptions): MgArray;

    sum(axis?: Axes, keepdims?: boolean, opts?: StreamOptions): MgArray;
    prod(axis?: Axes, keepdims?: boolean, opts?: StreamOptions): MgArray;
    max(axis?: Axes, keepdims?: boolean, opts?: StreamOptions): MgArray;
    min(axis?: Axes, keepdims?: boolean, opts?: StreamOptions): MgArray;
    mean(axis?: Axes, keepdims?: boolean, opts?: StreamOptions): MgArray;
    all(axis?: Axes, keepdims?: boolean, opts?: StreamOptions): MgArray;
    any(axis?: Axes, keepdims?: boolean, opts?: StreamOptions): MgArray;
    variance(axis?: Axes, keepdims?: boolean, ddof?: number, opts?: StreamOptions): MgArray;
    std(axis?: Axes, keepdims?: boolean, ddof?: number, opts?: StreamOptions): MgArray;
    cumsum(axis?: number | null, opts?: rd.CumOptions): MgArray;
    cumprod(axis?: number | null, opts?: rd.CumOptions): MgArray;
    cummax(axis?: number | null, opts?: rd.ScanOptions): MgArray;
    cummin(axis?: number | null, opts?: rd.ScanOptions): MgArray;
    logcumsumexp(axis?: number | null, opts?: rd.ScanOptions): MgArray;

    add(other: ArrayInput, opts?: StreamOptions): MgArray;
    subtract(other: ArrayInput, opts?: StreamOptions): MgArray;
    multiply(other: ArrayInput, opts?: StreamOptions): MgArray;
    divide(other: ArrayInput, opts?: StreamOptions): MgArray;
    floorDivide(other: ArrayInput, opts?: StreamOptions): MgArray;
    remainder(other: ArrayInput, opts?: StreamOptions): MgArray;
    power(other: ArrayInput, opts?: StreamOptions): MgArray;
    maximum(other: ArrayInput, opts?: StreamOptions): MgArray;
    minimum(other: ArrayInput, opts?: StreamOptions): MgArray;
    equal(other: ArrayInput, opts?: StreamOptions): MgArray;
    notEqual(other: ArrayInput, opts?: StreamOptions): MgArray;
    less(other: ArrayInput, opts?: StreamOptions): MgArray;
    lessEqual(other: ArrayInput, opts?: StreamOptions): MgArray;
    greater(other: ArrayInput, opts?: StreamOptions): MgArray;
    greaterEqual(other: ArrayInput, opts?: StreamOptions): MgArray;
    negative(opts?: StreamOptions): MgArray;
    logicalNot(opts?: StreamOptions): MgArray;
    logicalAnd(other: ArrayInput, opts?: StreamOptions): MgArray;
    logicalOr(other: ArrayInput, opts?: StreamOptions): MgArray;
    bitwiseAnd(other: ArrayInput, opts?: StreamOptions): MgArray;
    bitwiseOr(other: ArrayInput, opts?: StreamOptions): MgArray;
    bitwiseXor(other: ArrayInput, opts?: StreamOptions): MgArray;
    bitwiseInvert(opts?: StreamOptions): MgArray;
    leftShift(other: ArrayInput, opts?: StreamOptions): MgArray;
    rightShift(other: ArrayInput, opts?: StreamOptions): MgArray;
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
  variance(axis?: Axes, keepdims?: boolean, ddof?: number, o?: StreamOptions) { return rd.variance(this, axis, keepdims, ddof, o); },
  std(axis?: Axes, keepdims?: boolean, ddof?: number, o?: StreamOptions) { return rd.std(this, axis, keepdims, ddof, o); },
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
// Methods that build arrays are library calls (ownership.ts), as the ops they call are.
const readers = new Set(["item", "tolist", "dataSync", "data", "tolistAsync", "toString"]);
for (const [name, fn] of Object.entries(methods)) {
  const value = readers.has(name) ? fn : libraryFunction(fn);
  Object.defineProperty(proto, name, { value, writable: true, configurable: true });
}
Object.defineProperty(proto, "T", { get(this: MgArray) { return sh.transpose(this); }, configurable: true });
Object.defineProperty(proto, "real", { get(this: MgArray) { return ew.real(this); }, configurable: true });
Object.defineProperty(proto, "imag", { get(this: MgArray) { return ew.imag(this); }, configurable: true });
Object.defineProperty(proto, Symbol.for("nodejs.util.inspect.custom"), {
  value(this: MgArray) { return formatArray(this); },
  configurable: true,
});
