// Elementwise ops: validate, promote (MLX's rules), broadcast, build nodes.
import { MgArray } from "../array.ts";
import {
  atLeastFloat, bool_, complex64, type Dtype, dtypeArgument, finfo as finfoOf, float32, float64, isComplex, isFloating, isInexact,
  isInteger, promoteTypes, type Scalar, uint8,
} from "../dtype.ts";
import { resolveStream } from "../device.ts";
import { graphRetained, makeArray, makeNode, rejectFloat64OnGpu } from "../graph.ts";
import * as P from "../primitives/elementwise.ts";
import type { Primitive } from "../primitive.ts";
import { Broadcast } from "../primitives/views.ts";
import { broadcastShapes, shapesEqual } from "../shape.ts";
import { type ArrayInput, broadcastConstant, checkOperand, fromValues, secondOperand, type StreamOptions, toArray, toArrays, weakScalar } from "./convert.ts";
import { broadcastAll, broadcastToShape } from "./broadcast.ts";

export type { ArrayInput, StreamOptions };

/** `value` of `dtype` shaped like `x`, as mx.full_like (a broadcast view). Built here rather than
 *  taken from creation.ts, which builds on this file. */
function fullLike(x: MgArray, value: Scalar, dtype: Dtype, opts: StreamOptions): MgArray {
  return broadcastToShape(fromValues([value], [], dtype), x.shape, "full", opts.stream);
}

/**
 * Casts to `dtype` (a no-op when equal), as mx.astype.
 * @example
 * mg.astype(mg.array([1.7, -1.7]), mg.int32)
 */
export function astype(a: ArrayInput, dtype: Dtype, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "astype");
  dtypeArgument("astype", dtype);
  if (x.dtype === dtype) return x;
  const stream = resolveStream(opts.stream);
  rejectFloat64OnGpu("astype", [x.dtype, dtype], stream);
  return makeArray(P.AsType, [x], { dtype }, stream);
}

function unaryOp(prim: Primitive<null>, x: MgArray, opts: StreamOptions): MgArray {
  return makeArray(prim, [x], null, resolveStream(opts.stream));
}

/** Applies a float function: integer and bool inputs are computed in float32 (MLX's at_least_float). */
function floatUnary(prim: Primitive<null>, op: string, a: ArrayInput, opts: StreamOptions, allowComplex = true): MgArray {
  const x = toArray(a, op);
  if (!allowComplex && isComplex(x.dtype)) throw new TypeError(`[${op}] Not supported for complex64.`);
  return unaryOp(prim, astype(x, atLeastFloat(x.dtype), opts), opts);
}

/**
 * |x| elementwise, in the input's dtype (complex64 gives its float32 magnitude; unsigned and bool are returned as they are).
 * @example
 * mg.abs(mg.array([-2, 0, 3]))
 */
export function abs(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "abs");
  if (x.dtype === bool_ || x.dtype.kind === "u") return x;
  const out = unaryOp(P.Abs, x, opts);
  // |z| is real: MLX computes it in the complex primitive and casts to float32.
  return isComplex(x.dtype) ? astype(out, float32, opts) : out;
}

/**
 * −a elementwise (bool arrays: use logicalNot).
 * @example
 * mg.negative(mg.array([1, -2]))
 */
export function negative(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "negative");
  if (x.dtype === bool_) throw new TypeError("[negative] Not supported for bool, use logicalNot instead.");
  return unaryOp(P.Negative, x, opts);
}

/**
 * +a: the array itself.
 * @example
 * mg.positive(mg.array([-1, 2]))
 */
export function positive(a: ArrayInput, _opts: StreamOptions = {}): MgArray {
  return toArray(a, "positive");
}

/**
 * −1, 0 or 1 by the sign of each element (NaN stays NaN; complex: x/|x|).
 * @example
 * mg.sign(mg.array([-3, 0, 2]))
 */
export function sign(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "sign");
  if (x.dtype === bool_) return x;
  return unaryOp(P.Sign, x, opts);
}

/**
 * x² elementwise, in the input's dtype.
 * @example
 * mg.square(mg.array([-3, 4]))
 */
export function square(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  return unaryOp(P.Square, toArray(a, "square"), opts);
}

/**
 * √x elementwise (NaN below 0); integers compute in float32.
 * @example
 * mg.sqrt(mg.array([4, 2]))
 */
export const sqrt = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Sqrt, "sqrt", a, opts);
/**
 * 1 / √x elementwise.
 * @example
 * mg.rsqrt(mg.array([4, 16]))
 */
export const rsqrt = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Rsqrt, "rsqrt", a, opts);
/**
 * eˣ elementwise; integers compute in float32.
 * @example
 * mg.exp(mg.array([0, 1, 2]))
 */
export const exp = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Exp, "exp", a, opts);
/**
 * eˣ − 1 elementwise, accurate near 0.
 * @example
 * mg.expm1(mg.array([1e-5, 1], mg.float32))
 */
export const expm1 = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Expm1, "expm1", a, opts, false);
/**
 * The natural logarithm elementwise (−inf at 0, NaN below).
 * @example
 * mg.log(mg.array([1, Math.E]))
 */
export const log = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Log, "log", a, opts);
/**
 * The base-2 logarithm elementwise.
 * @example
 * mg.log2(mg.array([1, 8]))
 */
export const log2 = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Log2, "log2", a, opts);
/**
 * The base-10 logarithm elementwise.
 * @example
 * mg.log10(mg.array([1, 100]))
 */
export const log10 = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Log10, "log10", a, opts);
/**
 * log(1 + x) elementwise, accurate near 0.
 * @example
 * mg.log1p(mg.array([1e-5, 1], mg.float32))
 */
export const log1p = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Log1p, "log1p", a, opts, false);
/**
 * The sine elementwise, in radians.
 * @example
 * mg.sin(mg.array([0, Math.PI / 2]))
 */
export const sin = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Sin, "sin", a, opts);
/**
 * The cosine elementwise, in radians; integers compute in float32.
 * @example
 * mg.cos(mg.array([0, Math.PI]))
 */
export const cos = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Cos, "cos", a, opts);
/**
 * The tangent elementwise, in radians.
 * @example
 * mg.tan(mg.array([0, Math.PI / 4]))
 */
export const tan = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Tan, "tan", a, opts);
/**
 * The inverse sine elementwise, in radians. `asin` is the same function.
 * @example
 * mg.arcsin(mg.array([0, 0.5, 1]))
 */
export const arcsin = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.ArcSin, "arcsin", a, opts, false);
/**
 * The inverse cosine elementwise, in radians; integers compute in float32. `acos` is the same function.
 * @example
 * mg.arccos(mg.array([1, 0, -1], mg.float32))
 */
export const arccos = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.ArcCos, "arccos", a, opts, false);
/**
 * The inverse tangent elementwise, in (−π/2, π/2). `atan` is the same function.
 * @example
 * mg.arctan(mg.array([0, 1], mg.float32))
 */
export const arctan = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.ArcTan, "arctan", a, opts, false);
/**
 * The hyperbolic sine elementwise.
 * @example
 * mg.sinh(mg.array([0, 1], mg.float32))
 */
export const sinh = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Sinh, "sinh", a, opts);
/**
 * The hyperbolic cosine elementwise.
 * @example
 * mg.cosh(mg.array([0, 1], mg.float32))
 */
export const cosh = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Cosh, "cosh", a, opts);
/**
 * The hyperbolic tangent elementwise.
 * @example
 * mg.tanh(mg.array([-1, 0, 1], mg.float32))
 */
export const tanh = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Tanh, "tanh", a, opts);
/**
 * The inverse hyperbolic sine elementwise. `asinh` is the same function.
 * @example
 * mg.arcsinh(mg.array([0, 1], mg.float32))
 */
export const arcsinh = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.ArcSinh, "arcsinh", a, opts, false);
/**
 * The inverse hyperbolic cosine elementwise (NaN below 1). `acosh` is the same function.
 * @example
 * mg.arccosh(mg.array([1, 2], mg.float32))
 */
export const arccosh = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.ArcCosh, "arccosh", a, opts, false);
/**
 * The inverse hyperbolic tangent elementwise (±inf at ±1). `atanh` is the same function.
 * @example
 * mg.arctanh(mg.array([0, 0.5]))
 */
export const arctanh = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.ArcTanh, "arctanh", a, opts, false);
// Array-API spellings, the same functions as in MLX (mx.acos is mx.arccos ...).
export const acos = arccos;
export const acosh = arccosh;
export const asin = arcsin;
export const asinh = arcsinh;
export const atan = arctan;
export const atanh = arctanh;
/**
 * 1 / (1 + e⁻ˣ) elementwise.
 * @example
 * mg.sigmoid(mg.array([-1, 0, 1]))
 */
export const sigmoid = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Sigmoid, "sigmoid", a, opts, false);
/**
 * The error function elementwise.
 * @example
 * mg.erf(mg.array([0, 0.5, 2]))
 */
export const erf = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.Erf, "erf", a, opts, false);
/**
 * The inverse error function elementwise (±inf at ±1).
 * @example
 * mg.erfinv(mg.array([0, 0.5, -0.5]))
 */
export const erfinv = (a: ArrayInput, opts: StreamOptions = {}) => floatUnary(P.ErfInv, "erfinv", a, opts, false);

function roundingOp(prim: Primitive<null>, op: string, a: ArrayInput, opts: StreamOptions): MgArray {
  const x = toArray(a, op);
  if (isComplex(x.dtype)) throw new TypeError(`[${op}] Not supported for complex64.`);
  if (!isInexact(x.dtype)) return x; // integers are already whole
  return unaryOp(prim, x, opts);
}
/**
 * The largest integer ≤ x elementwise; integer inputs are returned as they are.
 * @example
 * mg.floor(mg.array([-1.5, 0.2, 2]))
 */
export const floor = (a: ArrayInput, opts: StreamOptions = {}) => roundingOp(P.Floor, "floor", a, opts);
/**
 * The smallest integer ≥ x elementwise; integer inputs are returned as they are.
 * @example
 * mg.ceil(mg.array([-1.5, 0.2, 2]))
 */
export const ceil = (a: ArrayInput, opts: StreamOptions = {}) => roundingOp(P.Ceil, "ceil", a, opts);

/**
 * Rounds toward zero.
 * @example
 * mg.trunc(mg.array([-1.7, 1.7]))
 */
export function trunc(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "trunc");
  if (isComplex(x.dtype)) throw new TypeError("[trunc] Not supported for complex64.");
  if (!isInexact(x.dtype)) return x;
  return where(less(x, 0, opts), ceil(x, opts), floor(x, opts), opts);
}

/**
 * Round half to even, to `decimals` places (MLX: scale, round, unscale for decimals ≠ 0).
 * @example
 * mg.round(mg.array([0.5, 1.5, 2.567]), 1)
 */
export function round(a: ArrayInput, decimals = 0, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "round");
  if (!Number.isInteger(decimals)) throw new TypeError("[round] decimals must be an integer.");
  if (decimals === 0) return isInexact(x.dtype) ? unaryOp(P.Round, x, opts) : x;
  // As MLX: scale in the array's float type (float32 for integers), round half to even, scale
  // back and cast to the input dtype, so round(int32 [5, 15, 25], -1) is [0, 20, 20]. The way back
  // divides by 10^d (NumPy's rule, the nearest float); MLX multiplies by a float32 10^-d, which can
  // land one ulp off.
  const scale = 10 ** decimals;
  const xf = astype(x, atLeastFloat(x.dtype), opts);
  return astype(divide(unaryOp(P.Round, multiply(xf, scale, opts), opts), scale, opts), x.dtype, opts);
}

/**
 * ¬a elementwise (zero is false), as a bool array.
 * @example
 * mg.logicalNot(mg.array([0, 1, 2]))
 */
export function logicalNot(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  return unaryOp(P.LogicalNot, astype(toArray(a, "logical_not"), bool_, opts), opts);
}

/**
 * ~a elementwise on integer and bool arrays (logical not for bool).
 * @example
 * mg.bitwiseInvert(mg.array([0, 5], mg.uint8))
 */
export function bitwiseInvert(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "bitwise_invert");
  if (!isInteger(x.dtype) && x.dtype !== bool_) {
    throw new TypeError("[bitwise_invert] Bitwise operations are only allowed on integer types.");
  }
  if (x.dtype === bool_) return logicalNot(x, opts);
  return unaryOp(P.BitwiseInvert, x, opts);
}

/**
 * The complex conjugate elementwise; real arrays are returned as they are. `conj` is the same function.
 * @example
 * mg.conjugate(mg.array([{ re: 1, im: 2 }]))
 */
export function conjugate(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "conjugate");
  return isComplex(x.dtype) ? unaryOp(P.Conjugate, x, opts) : x;
}
export const conj = conjugate;

/**
 * The real part of a complex array (real arrays are returned as they are), as float32.
 * @example
 * mg.real(mg.array([{ re: 1, im: -2 }]))
 */
export function real(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "real");
  return isComplex(x.dtype) ? unaryOp(P.Real, x, opts) : x;
}

/**
 * The imaginary part of a complex array (zeros for real arrays), as float32.
 * @example
 * mg.imag(mg.array([{ re: 1, im: -2 }]))
 */
export function imag(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "imag");
  return isComplex(x.dtype) ? unaryOp(P.Imag, x, opts) : fullLike(x, 0, x.dtype, opts);
}

/**
 * The array, with no gradient flowing back through it (its derivative is zero).
 * @example
 * mg.grad((x: mg.MgArray) => mg.multiply(mg.stopGradient(x), x))(mg.array(3, mg.float32))
 */
export function stopGradient(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  return unaryOp(P.StopGradient, toArray(a, "stop_gradient"), opts);
}

/**
 * 1 / x elementwise.
 * @example
 * mg.reciprocal(mg.array([2, 4]))
 */
export function reciprocal(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "reciprocal");
  return divide(weakScalar(1.0, atLeastFloat(x.dtype), "reciprocal"), x, opts);
}

/**
 * Radians to degrees elementwise.
 * @example
 * mg.degrees(mg.array([Math.PI, Math.PI / 2]))
 */
export const degrees = (a: ArrayInput, opts: StreamOptions = {}) => multiply(floatOf(a, "degrees", opts), 180 / Math.PI, opts);
/**
 * Degrees to radians elementwise.
 * @example
 * mg.radians(mg.array([180, 90]))
 */
export const radians = (a: ArrayInput, opts: StreamOptions = {}) => multiply(floatOf(a, "radians", opts), Math.PI / 180, opts);
function floatOf(a: ArrayInput, op: string, opts: StreamOptions): MgArray {
  const x = toArray(a, op);
  return astype(x, atLeastFloat(x.dtype), opts);
}

// ---------------------------------------------------------------------------------------------
// Binary

/** Promotes (weak scalars), casts and broadcasts two operands. */
function prepare(a: ArrayInput, b: ArrayInput, op: string, opts: StreamOptions, dtypeRule?: (d: Dtype) => Dtype): [MgArray, MgArray, Dtype] {
  const [x, y] = toArrays(a, b, op);
  let t = promoteTypes(x.dtype, y.dtype);
  if (dtypeRule) t = dtypeRule(t);
  rejectFloat64OnGpu(op, [x.dtype, y.dtype, t], resolveStream(opts.stream));
  const [bx, by] = broadcastAll([astype(x, t, opts), astype(y, t, opts)], op, opts.stream);
  return [bx!, by!, t];
}

/** `prepare`, then the node. Every binary op (and every `x * 2`) runs this, so it builds no
 *  tuples: the operands, the promoted dtype and the broadcast in locals, in prepare's order. */
function binaryOp(prim: Primitive<null>, op: string, a: ArrayInput, b: ArrayInput, opts: StreamOptions, dtypeRule?: (d: Dtype) => Dtype): MgArray {
  let x: MgArray;
  let y: MgArray;
  if (a instanceof MgArray) {
    x = toArray(a, op);
    y = secondOperand(x, b, op);
  } else [x, y] = toArrays(a, b, op);
  let t = promoteTypes(x.dtype, y.dtype);
  if (dtypeRule) t = dtypeRule(t);
  const stream = resolveStream(opts.stream);
  if (stream.device.type === "gpu" && (x.dtype === float64 || y.dtype === float64 || t === float64)) rejectFloat64OnGpu(op, [float64], stream);
  if (x.dtype !== t) x = astype(x, t, opts);
  if (y.dtype !== t) y = astype(y, t, opts);
  if (!shapesEqual(x.shape, y.shape)) {
    const shape = broadcastShapes([x.shape, y.shape], op);
    // a scalar constant next to a concrete array, outside transforms: a cached stride-0 view
    // instead of a Broadcast node (broadcastConstant)
    const concrete = x.layout !== null && y.layout !== null && !graphRetained();
    if (!shapesEqual(x.shape, shape)) {
      x = concrete && x.shared && x.ndim === 0 ? broadcastConstant(x, shape, stream) : makeArray(Broadcast, [x], { shape }, stream);
    }
    if (!shapesEqual(y.shape, shape)) {
      y = concrete && y.shared && y.ndim === 0 ? broadcastConstant(y, shape, stream) : makeArray(Broadcast, [y], { shape }, stream);
    }
  }
  // Checked here, not when the kernel runs: the CPU would fail at eval, the GPU at compile time.
  if (t === complex64 && !P.supportsComplex(prim)) throw new TypeError(`[${op}] Not supported for complex64.`);
  return makeArray(prim, [x, y], null, stream);
}

/**
 * a + b elementwise, with broadcasting and MLX's type promotion (a JS number next to an array is weak: it takes the array's dtype when it fits).
 * @example
 * mg.add(mg.array([1, 2, 3]), 10)
 */
export const add = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.Add, "add", a, b, opts);
/**
 * a − b elementwise, with broadcasting.
 * @example
 * mg.subtract(mg.array([5, 7]), 2)
 */
export const subtract = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.Subtract, "subtract", a, b, opts);
/**
 * a · b elementwise, with broadcasting.
 * @example
 * mg.multiply(mg.array([[1], [2]]), mg.array([1, 10, 100]))
 */
export const multiply = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.Multiply, "multiply", a, b, opts);
/**
 * a / b elementwise, true division: integers divide in float32.
 * @example
 * mg.divide(mg.array([1, 2, 3]), 2)
 */
export const divide = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.Divide, "divide", a, b, opts, atLeastFloat);

/**
 * ⌊a / b⌋ elementwise (integers stay integers, rounding toward −∞).
 * @example
 * mg.floorDivide(mg.array([7, -7]), 2)
 */
export function floorDivide(a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}): MgArray {
  const [x, y] = toArrays(a, b, "floor_divide");
  const t = promoteTypes(x.dtype, y.dtype);
  if (isInexact(t)) return floor(divide(x, y, opts), opts);
  return binaryOp(P.FloorDivide, "floor_divide", x, y, opts);
}

/**
 * a mod b elementwise, with the sign of b (Python's %).
 * @example
 * mg.remainder(mg.array([7, -7]), 3)
 */
export function remainder(a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}): MgArray {
  return binaryOp(P.Remainder, "remainder", a, b, opts, (t) => {
    if (isComplex(t)) throw new TypeError("[remainder] Complex type not supported.");
    return t;
  });
}

/**
 * Floored quotient and remainder, as mx.divmod (two siblings of one node).
 * @example
 * mg.divmod(mg.array([7, -7]), 3)
 */
export function divmod(a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}): [MgArray, MgArray] {
  const [x, y] = prepare(a, b, "divmod", opts, (t) => {
    if (isComplex(t)) throw new TypeError("[divmod] Complex type not supported.");
    return t;
  });
  const [q, r] = makeNode(P.DivMod, [x, y], null, resolveStream(opts.stream));
  return [q!, r!];
}

/**
 * aᵇ elementwise (integer powers of integers stay integers). `pow` is the same function.
 * @example
 * mg.power(mg.array([2, 3]), mg.array([3, 2]))
 */
export const power = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.Power, "power", a, b, opts);
/**
 * The larger of a and b elementwise (NaN propagates).
 * @example
 * mg.maximum(mg.array([1, 5, NaN]), 3)
 */
export const maximum = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.Maximum, "maximum", a, b, opts);
/**
 * The smaller of a and b elementwise (NaN propagates).
 * @example
 * mg.minimum(mg.array([1, 5, NaN]), 3)
 */
export const minimum = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.Minimum, "minimum", a, b, opts);
/**
 * log(eᵃ + eᵇ) elementwise, without overflow.
 * @example
 * mg.logaddexp(mg.array([1000, 0], mg.float32), mg.array([1000, 0], mg.float32))
 */
export const logaddexp = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.LogAddExp, "logaddexp", a, b, opts, atLeastFloat);
/**
 * The angle of the point (b, a) elementwise: arctan(a / b) in the right quadrant, in (−π, π].
 * `atan2` is the same function.
 * @example
 * mg.arctan2(mg.array([1, -1], mg.float32), mg.array([-1, -1], mg.float32))
 */
export const arctan2 = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.ArcTan2, "arctan2", a, b, opts, atLeastFloat);
// Array-API spellings of arctan2 and power (the same functions in MLX).
export const atan2 = arctan2;
export const pow = power;

/**
 * a == b elementwise, as a bool array (NaN equals nothing).
 * @example
 * mg.equal(mg.array([1, 2, NaN]), mg.array([1, 3, NaN]))
 */
export const equal = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.Equal, "equal", a, b, opts);

/** == where NaN equals NaN (array_equal's and isclose's equalNan; not a public op). */
export const equalOrBothNan = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.EqualNan, "equal", a, b, opts);
/**
 * a ≠ b elementwise, as a bool array.
 * @example
 * mg.notEqual(mg.array([1, 2]), 2)
 */
export const notEqual = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.NotEqual, "not_equal", a, b, opts);
/**
 * a > b elementwise, as a bool array.
 * @example
 * mg.greater(mg.array([1, 2, 3]), 2)
 */
export const greater = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.Greater, "greater", a, b, opts);
/**
 * a ≥ b elementwise, as a bool array.
 * @example
 * mg.greaterEqual(mg.array([1, 2, 3]), 2)
 */
export const greaterEqual = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.GreaterEqual, "greater_equal", a, b, opts);
/**
 * a < b elementwise, as a bool array.
 * @example
 * mg.less(mg.array([1, 2, 3]), 2)
 */
export const less = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.Less, "less", a, b, opts);
/**
 * a ≤ b elementwise, as a bool array.
 * @example
 * mg.lessEqual(mg.array([1, 2, 3]), 2)
 */
export const lessEqual = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.LessEqual, "less_equal", a, b, opts);

/**
 * a ∧ b elementwise (nonzero is true), as a bool array.
 * @example
 * mg.logicalAnd(mg.array([true, true, false]), mg.array([true, false, false]))
 */
export const logicalAnd = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.LogicalAnd, "logical_and", a, b, opts, () => bool_);
/**
 * a ∨ b elementwise, as a bool array.
 * @example
 * mg.logicalOr(mg.array([true, false]), mg.array([false, false]))
 */
export const logicalOr = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.LogicalOr, "logical_or", a, b, opts, () => bool_);
/**
 * a ⊕ b elementwise, as a bool array.
 * @example
 * mg.logicalXor(mg.array([true, true]), mg.array([true, false]))
 */
export function logicalXor(a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}): MgArray {
  const [x, y] = toArrays(a, b, "logical_xor");
  return notEqual(astype(x, bool_, opts), astype(y, bool_, opts), opts);
}

function bitwiseRule(op: string) {
  return (t: Dtype) => {
    if (!isInteger(t) && t !== bool_) {
      throw new TypeError(`[${op}] Only allowed on integer or boolean types but got ${t.name}.`);
    }
    return t;
  };
}
/**
 * a & b elementwise on integer and bool arrays.
 * @example
 * mg.bitwiseAnd(mg.array([12, 10]), 6)
 */
export const bitwiseAnd = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.BitwiseAnd, "bitwise_and", a, b, opts, bitwiseRule("bitwise_and"));
/**
 * a | b elementwise on integer and bool arrays.
 * @example
 * mg.bitwiseOr(mg.array([12, 10]), 6)
 */
export const bitwiseOr = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.BitwiseOr, "bitwise_or", a, b, opts, bitwiseRule("bitwise_or"));
/**
 * a ^ b elementwise on integer and bool arrays.
 * @example
 * mg.bitwiseXor(mg.array([12, 10]), 6)
 */
export const bitwiseXor = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.BitwiseXor, "bitwise_xor", a, b, opts, bitwiseRule("bitwise_xor"));
// Shifts of bool promote to uint8 (MLX).
const shiftRule = (op: string) => (t: Dtype) => (t === bool_ ? uint8 : bitwiseRule(op)(t));
/**
 * a << b elementwise. `bitwiseLeftShift` is the same function.
 * @example
 * mg.leftShift(mg.array([1, 2]), 3)
 */
export const leftShift = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.LeftShift, "left_shift", a, b, opts, shiftRule("left_shift"));
/**
 * a >> b elementwise (arithmetic for signed integers). `bitwiseRightShift` is the same function.
 * @example
 * mg.rightShift(mg.array([16, -16]), 2)
 */
export const rightShift = (a: ArrayInput, b: ArrayInput, opts: StreamOptions = {}) => binaryOp(P.RightShift, "right_shift", a, b, opts, shiftRule("right_shift"));
// Array-API spellings of leftShift and rightShift (the same functions in MLX).
export const bitwiseLeftShift = leftShift;
export const bitwiseRightShift = rightShift;

// ---------------------------------------------------------------------------------------------
// Ternary and composites

/**
 * where(condition, x, y), as mx.where: x and y promote together (weak scalars allowed).
 * @example
 * mg.where(mg.array([true, false, true]), mg.array([1, 2, 3]), 0)
 */
export function where(condition: ArrayInput, x: ArrayInput, y: ArrayInput, opts: StreamOptions = {}): MgArray {
  const c = toArray(condition, "where");
  const [a, b] = toArrays(x, y, "where");
  const t = promoteTypes(a.dtype, b.dtype);
  const [bc, ba, bb] = broadcastAll([astype(c, bool_, opts), astype(a, t, opts), astype(b, t, opts)], "where", opts.stream);
  return makeArray(P.Select, [bc!, ba!, bb!], null, resolveStream(opts.stream));
}

/**
 * Clips to [aMin, aMax]; either bound may be null (not both).
 * @example
 * mg.clip(mg.array([-3, 0.5, 7]), 0, 1)
 */
export function clip(a: ArrayInput, aMin: ArrayInput | null, aMax: ArrayInput | null, opts: StreamOptions = {}): MgArray {
  let x = toArray(a, "clip");
  // null (MLX's None) or undefined: no bound on that side.
  if (aMin == null && aMax == null) throw new Error("[clip] At most one of aMin and aMax may be null.");
  if (aMin != null) checkOperand(aMin, "clip");
  if (aMax != null) checkOperand(aMax, "clip");
  if (aMin != null) x = maximum(x, aMin, opts);
  if (aMax != null) x = minimum(x, aMax, opts);
  return x;
}

/**
 * Whether each element is NaN.
 * @example
 * mg.isnan(mg.array([1, NaN]))
 */
export function isnan(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "isnan");
  if (!isInexact(x.dtype)) return fullLike(x, false, bool_, opts);
  return notEqual(x, x, opts);
}

/**
 * Whether each element is ±inf.
 * @example
 * mg.isinf(mg.array([1, -Infinity, NaN]))
 */
export function isinf(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "isinf");
  if (!isInexact(x.dtype)) return fullLike(x, false, bool_, opts);
  if (isComplex(x.dtype)) return logicalOr(isinf(real(x, opts), opts), isinf(imag(x, opts), opts), opts);
  return logicalOr(isposinf(x, opts), isneginf(x, opts), opts);
}

/**
 * Whether each element is finite (not ±inf or NaN).
 * @example
 * mg.isfinite(mg.array([1, Infinity, NaN]))
 */
export function isfinite(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "isfinite");
  if (!isInexact(x.dtype)) return fullLike(x, true, bool_, opts);
  return logicalNot(logicalOr(isinf(x, opts), isnan(x, opts), opts), opts);
}

/**
 * Whether each element is +inf.
 * @example
 * mg.isposinf(mg.array([-Infinity, Infinity]))
 */
export function isposinf(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "isposinf");
  if (!isFloating(x.dtype)) return fullLike(x, false, bool_, opts);
  return equal(x, Infinity, opts);
}

/**
 * Whether each element is −inf.
 * @example
 * mg.isneginf(mg.array([-Infinity, Infinity]))
 */
export function isneginf(a: ArrayInput, opts: StreamOptions = {}): MgArray {
  const x = toArray(a, "isneginf");
  if (!isFloating(x.dtype)) return fullLike(x, false, bool_, opts);
  return equal(x, -Infinity, opts);
}

/**
 * Replaces NaN with `nan` and ±inf with `posinf`/`neginf` (default: the dtype's extremes).
 * @example
 * mg.nanToNum(mg.array([NaN, Infinity, -Infinity, 1], mg.float16))
 */
export function nanToNum(
  a: ArrayInput,
  nan = 0.0,
  posinf: number | null = null,
  neginf: number | null = null,
  opts: StreamOptions = {},
): MgArray {
  const x = toArray(a, "nan_to_num");
  if (!isFloating(x.dtype)) return x;
  const info = finfoOf(x.dtype);
  let r = where(isnan(x, opts), nan, x, opts);
  r = where(isposinf(x, opts), posinf ?? info.max, r, opts);
  r = where(isneginf(x, opts), neginf ?? info.min, r, opts);
  return r;
}

/** isclose's options: `equalNan` (NaN equals NaN) and `stream`. */
export interface IsCloseOptions extends StreamOptions {
  equalNan?: boolean;
}

/** |a − b| ≤ atol + rtol·|b|, as mx.isclose: infinities are close only to the same infinity.
 *  The tolerances are float32 arrays (not weak scalars), as in MLX. */
/** rtol and atol are positional numbers; an options object in their place would compare with NaN. */
export function checkTolerances(op: string, rtol: unknown, atol: unknown): void {
  for (const [name, v] of [["rtol", rtol], ["atol", atol]] as const) {
    if (typeof v !== "number") throw new TypeError(`[${op}] ${name} must be a number, got ${typeof v}; equalNan and stream go in the options object after atol.`);
  }
}

/**
 * |a − b| ≤ atol + rtol·|b| elementwise (NaNs equal with `equalNan`), as numpy.isclose.
 * @example
 * mg.isclose(mg.array([1, 1.001]), 1, 1e-5, 1e-2)
 */
export function isclose(a: ArrayInput, b: ArrayInput, rtol = 1e-5, atol = 1e-8, opts: IsCloseOptions = {}): MgArray {
  const [x, y] = toArrays(a, b, "isclose");
  checkTolerances("isclose", rtol, atol);
  const rhs = add(fromValues([atol], [], float32), multiply(fromValues([rtol], [], float32), abs(y, opts), opts), opts);
  const lhs = abs(subtract(x, y, opts), opts);
  let out = lessEqual(lhs, rhs, opts);
  const anyInf = logicalOr(isinf(x, opts), isinf(y, opts), opts);
  const bothSameInf = logicalOr(
    logicalAnd(isposinf(x, opts), isposinf(y, opts), opts),
    logicalAnd(isneginf(x, opts), isneginf(y, opts), opts),
    opts,
  );
  out = logicalOr(logicalAnd(out, logicalNot(anyInf, opts), opts), bothSameInf, opts);
  if (opts.equalNan) out = logicalOr(out, equalOrBothNan(x, y, opts), opts);
  return out;
}
