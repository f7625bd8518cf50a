// The functors of Sources/Kernels/elementwise_ops.h each dtype class supports, by arity: the
// single-op kernels' sibling families (elementwise.ts) and the fused-region interpreter's opcodes
// (fused-program.ts) are built from the same lists.
export const FLOAT_UNARY = ["Abs", "ArcCos", "ArcCosh", "ArcSin", "ArcSinh", "ArcTan", "ArcTanh", "Ceil", "Cos", "Cosh", "Erf",
  "ErfInv", "Exp", "Expm1", "Floor", "Log", "Log10", "Log1p", "Log2", "Negative", "Round", "Rsqrt", "Sigmoid", "Sign", "Sin", "Sinh",
  "Sqrt", "Square", "Tan", "Tanh"];
export const INT_UNARY = ["Abs", "BitwiseInvert", "Negative", "Sign", "Square"];
export const FLOAT_BINARY = ["Add", "ArcTan2", "Divide", "LogAddExp", "Maximum", "Minimum", "Multiply", "Power", "Remainder", "Subtract"];
export const INT_BINARY = ["Add", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "FloorDivide", "LeftShift", "Maximum", "Minimum", "Multiply",
  "Power", "Remainder", "RightShift", "Subtract"];
/** Comparisons of two values of one real or integer dtype, giving bool. */
export const COMPARISONS = ["Equal", "Greater", "GreaterEqual", "Less", "LessEqual", "NotEqual"];
/** bool op bool giving bool: the bool single-op family (elementwise.ts) and the interpreter's. */
export const BOOL_BINARY = ["Add", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Equal", "FloorDivide", "Greater", "GreaterEqual", "Less",
  "LessEqual", "LogicalAnd", "LogicalOr", "Maximum", "Minimum", "Multiply", "NotEqual", "Power", "Remainder", "Subtract"];
