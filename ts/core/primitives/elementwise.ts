// Elementwise primitives (MLX's unary, binary and ternary families). Ops have already cast and
// broadcast the inputs, so inputs share one shape and (except Select's condition) one dtype.
// Rules: ts/core/rules/elementwise.ts; each backend's elementwise module registers the kernels.
import { bool_, complex64, type Dtype, float32 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";
import { sameView } from "../layout.ts";

interface ElementwiseDef {
  /** The user-facing op when it is not the name lower-cased (error tags). */
  op?: string;
  /** Output dtype from the input dtype (default: unchanged). */
  outDtype?: (d: Dtype) => Dtype;
}

/** Elementwise primitive of one input. */
function unary(name: string, def: ElementwiseDef = {}): Primitive<null> {
  const op = def.op;
  return {
    name,
    ...(op ? { opName: () => op } : {}),
    fusion: "unary",
    shapeless: "elementwise",
    outputSpecs: ([x]) => [{ shape: [...x!.shape], dtype: def.outDtype ? def.outDtype(x!.dtype) : x!.dtype }],
  };
}

/** Elementwise primitive of two same-shaped, same-dtype inputs; `complex`: it computes complex64. */
function binary(name: string, def: ElementwiseDef & { complex?: boolean } = {}): Primitive<null> {
  const op = def.op;
  return {
    name,
    ...(op ? { opName: () => op } : {}),
    fusion: "binary",
    shapeless: "elementwise",
    complex: def.complex ?? false,
    outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: def.outDtype ? def.outDtype(a!.dtype) : a!.dtype }],
  };
}

/** Whether a binary primitive computes complex64 (its op rejects complex inputs otherwise). */
export const supportsComplex = (p: Primitive<null>): boolean => p.complex === true;

// ---------------------------------------------------------------------------------------------
// Unary

export const Abs = unary("Abs");
export const Negative = unary("Negative");
export const Sign = unary("Sign");
export const Square = unary("Square");
export const Sqrt = unary("Sqrt");
export const Rsqrt = unary("Rsqrt");
export const Exp = unary("Exp");
export const Expm1 = unary("Expm1");
export const Log = unary("Log");
export const Log2 = unary("Log2");
export const Log10 = unary("Log10");
export const Log1p = unary("Log1p");
export const Sin = unary("Sin");
export const Cos = unary("Cos");
export const Tan = unary("Tan");
export const ArcSin = unary("ArcSin");
export const ArcCos = unary("ArcCos");
export const ArcTan = unary("ArcTan");
export const Sinh = unary("Sinh");
export const Cosh = unary("Cosh");
export const Tanh = unary("Tanh");
export const ArcSinh = unary("ArcSinh");
export const ArcCosh = unary("ArcCosh");
export const ArcTanh = unary("ArcTanh");
// Rounding: integers pass through unchanged (the ops skip them).
export const Floor = unary("Floor");
export const Ceil = unary("Ceil");
export const Round = unary("Round");
export const Sigmoid = unary("Sigmoid");
export const Erf = unary("Erf");
export const ErfInv = unary("ErfInv");
export const LogicalNot = unary("LogicalNot", { op: "logical_not", outDtype: () => bool_ });
export const BitwiseInvert = unary("BitwiseInvert", { op: "bitwise_invert" });
export const Conjugate = unary("Conjugate");
export const Real = unary("Real", { outDtype: (d) => (d === complex64 ? float32 : d) });
export const Imag = unary("Imag", { outDtype: (d) => (d === complex64 ? float32 : d) });

/** Identity in value, zero gradient: cuts the graph for transforms. A view of its input. */
export const StopGradient: Primitive<null> = {
  name: "StopGradient",
  opName: () => "stop_gradient",
  shapeless: "elementwise",
  outputSpecs: ([x]) => [{ shape: [...x!.shape], dtype: x!.dtype }],
  layout: (_i, [p]) => [sameView(0, p!)],
};

export interface AsTypeParams {
  dtype: Dtype;
}

/** Value conversion between any two dtypes (C-cast semantics; complex → real keeps the real part). */
export const AsType: Primitive<AsTypeParams> = {
  name: "AsType",
  fusion: "unary",
  shapeless: "elementwise",
  outputSpecs: ([x], p) => [{ shape: [...x!.shape], dtype: p.dtype }],
  paramsKey: (p) => p.dtype.name,
};

// ---------------------------------------------------------------------------------------------
// Binary

export const Add = binary("Add", { complex: true });
export const Subtract = binary("Subtract", { complex: true });
export const Multiply = binary("Multiply", { complex: true });
export const Divide = binary("Divide", { complex: true });
/** Floored integer division (floor_divide on integer dtypes). */
export const FloorDivide = binary("FloorDivide", { op: "floor_divide" });
export const Remainder = binary("Remainder");

/** Floored quotient and remainder as two sibling outputs (never fused: two outputs). */
export const DivMod: Primitive<null> = {
  name: "DivMod",
  shapeless: "elementwise",
  outputSpecs: ([a]) => [
    { shape: [...a!.shape], dtype: a!.dtype },
    { shape: [...a!.shape], dtype: a!.dtype },
  ],
};

export const Power = binary("Power", { complex: true });
export const Maximum = binary("Maximum", { complex: true });
export const Minimum = binary("Minimum", { complex: true });
export const LogAddExp = binary("LogAddExp", { complex: true });
export const ArcTan2 = binary("ArcTan2");

const toBool = () => bool_;
export const Equal = binary("Equal", { outDtype: toBool, complex: true });
/** Equal with NaN == NaN (array_equal(equal_nan=True), isclose(equal_nan=True)); traced as Equal. */
export const EqualNan = binary("Equal", { outDtype: toBool, complex: true });
export const NotEqual = binary("NotEqual", { op: "not_equal", outDtype: toBool, complex: true });
export const Greater = binary("Greater", { outDtype: toBool, complex: true });
export const GreaterEqual = binary("GreaterEqual", { op: "greater_equal", outDtype: toBool, complex: true });
export const Less = binary("Less", { outDtype: toBool, complex: true });
export const LessEqual = binary("LessEqual", { op: "less_equal", outDtype: toBool, complex: true });

export const LogicalAnd = binary("LogicalAnd", { op: "logical_and", outDtype: toBool });
export const LogicalOr = binary("LogicalOr", { op: "logical_or", outDtype: toBool });

export const BitwiseAnd = binary("BitwiseAnd", { op: "bitwise_and" });
export const BitwiseOr = binary("BitwiseOr", { op: "bitwise_or" });
export const BitwiseXor = binary("BitwiseXor", { op: "bitwise_xor" });
export const LeftShift = binary("LeftShift", { op: "left_shift" });
export const RightShift = binary("RightShift", { op: "right_shift" });

// ---------------------------------------------------------------------------------------------
// Ternary

/** where(cond, a, b): cond is bool; a and b share the output dtype; all one shape. */
export const Select: Primitive<null> = {
  name: "Select",
  opName: () => "where",
  fusion: "ternary",
  shapeless: "elementwise",
  outputSpecs: ([, a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
};
