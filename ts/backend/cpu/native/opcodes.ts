// Opcodes of the native elementwise interpreter (enum Op in Sources/MGCpu/mgcpu.h, same order),
// keyed by primitive record.
import type { Primitive } from "../../../core/primitive.ts";
import * as P from "../../../core/primitives/elementwise.ts";

export const Op = {
  Abs: 0, Negative: 1, Sign: 2, Square: 3, Sqrt: 4, Rsqrt: 5, Exp: 6, Expm1: 7, Log: 8, Log2: 9,
  Log10: 10, Log1p: 11, Sin: 12, Cos: 13, Tan: 14, ArcSin: 15, ArcCos: 16, ArcTan: 17, Sinh: 18,
  Cosh: 19, Tanh: 20, ArcSinh: 21, ArcCosh: 22, ArcTanh: 23, Floor: 24, Ceil: 25, Round: 26,
  Sigmoid: 27, Erf: 28, ErfInv: 29, LogicalNot: 30, BitwiseInvert: 31, Conjugate: 32, Real: 33,
  Imag: 34, Cast: 35,
  Add: 36, Subtract: 37, Multiply: 38, Divide: 39, FloorDivide: 40, Remainder: 41, Power: 42,
  Maximum: 43, Minimum: 44, LogAddExp: 45, ArcTan2: 46, Equal: 47, EqualNan: 48, NotEqual: 49,
  Greater: 50, GreaterEqual: 51, Less: 52, LessEqual: 53, LogicalAnd: 54, LogicalOr: 55,
  BitwiseAnd: 56, BitwiseOr: 57, BitwiseXor: 58, LeftShift: 59, RightShift: 60,
  DivModQuotient: 61, DivModRemainder: 62,
  Select: 63,
} as const;

const records: [Primitive<any>, number][] = [
  [P.Abs, Op.Abs], [P.Negative, Op.Negative], [P.Sign, Op.Sign], [P.Square, Op.Square],
  [P.Sqrt, Op.Sqrt], [P.Rsqrt, Op.Rsqrt], [P.Exp, Op.Exp], [P.Expm1, Op.Expm1], [P.Log, Op.Log],
  [P.Log2, Op.Log2], [P.Log10, Op.Log10], [P.Log1p, Op.Log1p], [P.Sin, Op.Sin], [P.Cos, Op.Cos],
  [P.Tan, Op.Tan], [P.ArcSin, Op.ArcSin], [P.ArcCos, Op.ArcCos], [P.ArcTan, Op.ArcTan],
  [P.Sinh, Op.Sinh], [P.Cosh, Op.Cosh], [P.Tanh, Op.Tanh], [P.ArcSinh, Op.ArcSinh],
  [P.ArcCosh, Op.ArcCosh], [P.ArcTanh, Op.ArcTanh], [P.Floor, Op.Floor], [P.Ceil, Op.Ceil],
  [P.Round, Op.Round], [P.Sigmoid, Op.Sigmoid], [P.Erf, Op.Erf], [P.ErfInv, Op.ErfInv],
  [P.LogicalNot, Op.LogicalNot], [P.BitwiseInvert, Op.BitwiseInvert], [P.Conjugate, Op.Conjugate],
  [P.Real, Op.Real], [P.Imag, Op.Imag], [P.AsType, Op.Cast],
  [P.Add, Op.Add], [P.Subtract, Op.Subtract], [P.Multiply, Op.Multiply], [P.Divide, Op.Divide],
  [P.FloorDivide, Op.FloorDivide], [P.Remainder, Op.Remainder], [P.Power, Op.Power],
  [P.Maximum, Op.Maximum], [P.Minimum, Op.Minimum], [P.LogAddExp, Op.LogAddExp],
  [P.ArcTan2, Op.ArcTan2], [P.Equal, Op.Equal], [P.EqualNan, Op.EqualNan],
  [P.NotEqual, Op.NotEqual], [P.Greater, Op.Greater], [P.GreaterEqual, Op.GreaterEqual],
  [P.Less, Op.Less], [P.LessEqual, Op.LessEqual], [P.LogicalAnd, Op.LogicalAnd],
  [P.LogicalOr, Op.LogicalOr], [P.BitwiseAnd, Op.BitwiseAnd], [P.BitwiseOr, Op.BitwiseOr],
  [P.BitwiseXor, Op.BitwiseXor], [P.LeftShift, Op.LeftShift], [P.RightShift, Op.RightShift],
  [P.Select, Op.Select],
];

const opcodes = new Map<Primitive<any>, number>(records);

/** The opcode of a single-output elementwise primitive, or -1. */
export function opcodeOf(p: Primitive<unknown>): number {
  return opcodes.get(p as Primitive<any>) ?? -1;
}

/** DivMod's two outputs are two instructions over the same inputs. */
export const DivModPrimitive: Primitive<unknown> = P.DivMod as Primitive<unknown>;

/** The single-output elementwise records the native interpreter computes. */
export function elementwiseRecords(): Primitive<unknown>[] {
  return records.map(([p]) => p as Primitive<unknown>);
}
