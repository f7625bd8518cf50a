// The elementwise functors: one struct per elementwise primitive (named after the primitive).
// The single-op kernels (unary/binary/ternary.metal) and the generated fused kernels call the same
// functors, so a fused chain equals the unfused ops bit for bit.
//
// Conventions: the op has already cast its inputs (ts/core/ops), so inputs share one type T
// (Select's condition is bool). bfloat computes in float and rounds once (compute_type); half
// computes in half, as MLX. Math uses metal::precise:: — IEEE special values, as "safe" mode.
#pragma once
#include "utils.h"

// ---------------------------------------------------------------------------------------------
// Scalar helpers (declared before the functor templates that call them)

// log1p and expm1 accurate near 0 (the compensated forms of Kahan / Goldberg).
MG_FUNC float log1p_impl(float x) {
  float u = 1.0f + x;
  if (u == 1.0f) return x;
  float l = metal::precise::log(u);
  // x / (u - 1) first: l * x overflows for x near FLT_MAX (log1p(3.4e38) is 88.7)
  return metal::isinf(u) ? l : l * (x / (u - 1.0f));
}
MG_FUNC half log1p_impl(half x) { return half(log1p_impl(float(x))); }
MG_FUNC float expm1_impl(float x) {
  float u = metal::precise::exp(x);
  if (u == 1.0f) return x;
  float um1 = u - 1.0f;
  if (um1 == -1.0f) return -1.0f;
  return metal::isinf(u) ? u : um1 * x / metal::precise::log(u);
}
MG_FUNC half expm1_impl(half x) { return half(expm1_impl(float(x))); }

// σ(x) without overflow for large |x|.
template <typename C> MG_FUNC C sigmoid_impl(C x) {
  if (x >= C(0)) return C(1) / (C(1) + metal::precise::exp(-x));
  C e = metal::precise::exp(x);
  return e / (C(1) + e);
}

// erf in float: the Maclaurin series for |x| < 2 (its largest term stays below 3, so little is
// lost to cancellation), Lentz's continued fraction for erfc beyond; ±1 past 4.
MG_FUNC float erf_impl(float x) {
  if (metal::isnan(x) || x == 0.0f) return x;  // erf(±0) = ±0
  float ax = metal::abs(x);
  if (ax >= 4.0f) return metal::copysign(1.0f, x);
  if (ax < 2.0f) {
    float x2 = x * x;
    float term = x;
    float sum = x;
    for (int n = 1; n < 40; ++n) {
      term *= -x2 / float(n);
      float add = term / float(2 * n + 1);
      sum += add;
      if (metal::abs(add) < 1e-9f * metal::abs(sum)) break;
    }
    return 1.1283791670955126f * sum;  // 2/√π
  }
  // erfc(ax) = e^{-ax²}/√π / (ax + (1/2)/(ax + 1/(ax + (3/2)/(ax + …))))
  float f = ax, c = ax, d = 0.0f;
  for (int n = 1; n < 60; ++n) {
    float an = 0.5f * float(n);
    d = ax + an * d;
    d = d == 0.0f ? 1e30f : 1.0f / d;
    c = ax + an / c;
    float delta = c * d;
    f *= delta;
    if (metal::abs(delta - 1.0f) < 1e-7f) break;
  }
  float erfc = metal::precise::exp(-ax * ax) / (1.7724538509055159f * f);
  return metal::copysign(1.0f - erfc, x);
}

// erf⁻¹: Giles' single-precision polynomial (2010) refined by two Newton steps on erf_impl.
MG_FUNC float erfinv_impl(float y) {
  if (metal::isnan(y) || y < -1.0f || y > 1.0f) return NAN;
  if (y == 1.0f) return INFINITY;
  if (y == -1.0f) return -INFINITY;
  float w = -metal::precise::log((1.0f - y) * (1.0f + y));
  float p;
  if (w < 5.0f) {
    w -= 2.5f;
    p = 2.81022636e-08f;
    p = 3.43273939e-07f + p * w;
    p = -3.5233877e-06f + p * w;
    p = -4.39150654e-06f + p * w;
    p = 0.00021858087f + p * w;
    p = -0.00125372503f + p * w;
    p = -0.00417768164f + p * w;
    p = 0.246640727f + p * w;
    p = 1.50140941f + p * w;
  } else {
    w = metal::precise::sqrt(w) - 3.0f;
    p = -0.000200214257f;
    p = 0.000100950558f + p * w;
    p = 0.00134934322f + p * w;
    p = -0.00367342844f + p * w;
    p = 0.00573950773f + p * w;
    p = -0.0076224613f + p * w;
    p = 0.00943887047f + p * w;
    p = 1.00167406f + p * w;
    p = 2.83297682f + p * w;
  }
  float x = p * y;
  for (int i = 0; i < 2; ++i) {
    float e = erf_impl(x) - y;
    x -= e / (1.1283791670955126f * metal::precise::exp(-x * x));
  }
  return x;
}

// ---------------------------------------------------------------------------------------------
// Unary

// Float functions of one variable: v is the value in its compute type C.
#define MG_FLOAT_UNARY(Name, EXPR)                 \
  struct Name {                                    \
    template <typename T> MG_FUNC T operator()(T x) { \
      typedef typename compute_type<T>::type C;    \
      C v = C(x);                                  \
      return T(EXPR);                              \
    }                                              \
    MG_FUNC complex64_t operator()(complex64_t z); \
  };

MG_FLOAT_UNARY(Exp, metal::precise::exp(v))
MG_FLOAT_UNARY(Expm1, expm1_impl(v))
MG_FLOAT_UNARY(Log, metal::precise::log(v))
MG_FLOAT_UNARY(Log2, metal::precise::log2(v))
MG_FLOAT_UNARY(Log10, metal::precise::log10(v))
MG_FLOAT_UNARY(Log1p, log1p_impl(v))
MG_FLOAT_UNARY(Sin, metal::precise::sin(v))
MG_FLOAT_UNARY(Cos, metal::precise::cos(v))
MG_FLOAT_UNARY(Tan, metal::precise::tan(v))
MG_FLOAT_UNARY(ArcSin, metal::precise::asin(v))
MG_FLOAT_UNARY(ArcCos, metal::precise::acos(v))
MG_FLOAT_UNARY(ArcTan, metal::precise::atan(v))
MG_FLOAT_UNARY(Sinh, metal::precise::sinh(v))
MG_FLOAT_UNARY(Cosh, metal::precise::cosh(v))
MG_FLOAT_UNARY(Tanh, metal::precise::tanh(v))
MG_FLOAT_UNARY(ArcSinh, metal::precise::asinh(v))
MG_FLOAT_UNARY(ArcCosh, metal::precise::acosh(v))
MG_FLOAT_UNARY(ArcTanh, metal::precise::atanh(v))
MG_FLOAT_UNARY(Sqrt, metal::precise::sqrt(v))
MG_FLOAT_UNARY(Rsqrt, C(1) / metal::precise::sqrt(v))
MG_FLOAT_UNARY(Sigmoid, sigmoid_impl(v))
MG_FLOAT_UNARY(Erf, C(erf_impl(float(v))))
MG_FLOAT_UNARY(ErfInv, C(erfinv_impl(float(v))))

// Rounding: integers are whole already; half to even.
MG_FLOAT_UNARY(Floor, metal::floor(v))
MG_FLOAT_UNARY(Ceil, metal::ceil(v))
MG_FLOAT_UNARY(Round, metal::rint(v))

struct Abs {
  // Integers wrap (abs(INT_MIN) = INT_MIN). Negated in unsigned arithmetic: GCC 12 folds
  // `x < 0 ? -x : x` into an abs it assumes non-negative even with -fwrapv, so a fused
  // sign(abs(INT_MIN)) gave 1 (found by the differential fuzzer).
  template <typename T> MG_FUNC T operator()(T x) {
    if (!(x < T(0))) return x;
    return sizeof(T) == 8 ? T(0ul - ulong(x)) : T(0u - uint(x));
  }
  MG_FUNC bool operator()(bool x) { return x; }
  MG_FUNC float operator()(float x) { return metal::abs(x); }
  MG_FUNC half operator()(half x) { return metal::abs(x); }
  MG_FUNC bfloat operator()(bfloat x) { return bfloat(metal::abs(float(x))); }
  MG_FUNC complex64_t operator()(complex64_t z) { return make_complex(metal::precise::sqrt(z.real * z.real + z.imag * z.imag), 0.0f); }
};

struct Negative {
  template <typename T> MG_FUNC T operator()(T x) { return T(-x); }
  MG_FUNC complex64_t operator()(complex64_t z) { return -z; }
};

struct Sign {
  template <typename T> MG_FUNC T operator()(T x) {
    typedef typename compute_type<T>::type C;
    C v = C(x);
    return T(v > C(0) ? C(1) : (v < C(0) ? C(-1) : C(0)));  // MLX: NaN and -0 give +0
  }
  MG_FUNC complex64_t operator()(complex64_t z) {
    float m = metal::precise::sqrt(z.real * z.real + z.imag * z.imag);
    return m == 0.0f ? make_complex(0.0f, 0.0f) : make_complex(z.real / m, z.imag / m);
  }
};

struct Square {
  template <typename T> MG_FUNC T operator()(T x) { return T(x * x); }
  MG_FUNC complex64_t operator()(complex64_t z) { return z * z; }
};

struct LogicalNot {
  template <typename T> MG_FUNC bool operator()(T x) { return !x; }
};

struct BitwiseInvert {
  template <typename T> MG_FUNC T operator()(T x) { return T(~x); }
};

struct Conjugate {
  template <typename T> MG_FUNC T operator()(T x) { return x; }
  MG_FUNC complex64_t operator()(complex64_t z) { return make_complex(z.real, -z.imag); }
};

struct Real {
  MG_FUNC float operator()(complex64_t z) { return z.real; }
};

struct Imag {
  MG_FUNC float operator()(complex64_t z) { return z.imag; }
};

// Float → integer conversion, the same on every device (docs/corner-cases.md): x86-64's, which
// MLX gives there. C leaves NaN, ±inf and out-of-range values undefined (Apple silicon saturates),
// so the rule is spelled out: int/long take trunc(x), or their minimum when it does not fit;
// narrower integers wrap the int result, uint wraps the long result; ulong takes trunc(x) on
// [2^63, 2^64), 0 from 2^64, else the long result wrapped. NaN fails every comparison below.
MG_FUNC int float_to_int32(float x) { return (x >= -2147483648.0f && x < 2147483648.0f) ? int(x) : int(0x80000000u); }
MG_FUNC long float_to_int64(float x) {
  return (x >= -9223372036854775808.0f && x < 9223372036854775808.0f) ? long(x) : long(0x8000000000000000ul);
}
template <typename Out> struct FloatToInt {
  static MG_FUNC Out from(float x) { return Out(float_to_int32(x)); }  // (u)char, (u)short: wrap
};
template <> struct FloatToInt<uint> {
  static MG_FUNC uint from(float x) { return uint(ulong(float_to_int64(x))); }
};
template <> struct FloatToInt<long> {
  static MG_FUNC long from(float x) { return float_to_int64(x); }
};
template <> struct FloatToInt<ulong> {
  static MG_FUNC ulong from(float x) {
    if (x >= 9223372036854775808.0f) return x < 18446744073709551616.0f ? ulong(x) : ulong(0);
    return ulong(float_to_int64(x));
  }
};
// AsType: C-cast semantics between integers and from integers; float → integer as FloatToInt;
// bool is x != 0; complex ↔ real through ComplexCast (its real part, converted likewise); bfloat
// converts through float (its compute type) on either side.
template <typename Out> struct Cast {
  template <typename In> MG_FUNC Out operator()(In x) {
    if (metal::is_floating_point<In>::value && metal::is_integral<Out>::value) return FloatToInt<Out>::from(float(x));
    return static_cast<Out>(static_cast<typename compute_type<In>::type>(x));
  }
  MG_FUNC Out operator()(complex64_t z) {
    if (metal::is_integral<Out>::value) return FloatToInt<Out>::from(z.real);
    return ComplexCast<Out>::from(z);
  }
};
template <> struct Cast<bool> {
  template <typename In> MG_FUNC bool operator()(In x) { return x != In(0); }
  MG_FUNC bool operator()(bool x) { return x; }
  MG_FUNC bool operator()(complex64_t z) { return ComplexCast<bool>::from(z); }
};
template <> struct Cast<bfloat> {
  template <typename In> MG_FUNC bfloat operator()(In x) {
    return static_cast<bfloat>(static_cast<float>(static_cast<typename compute_type<In>::type>(x)));
  }
  MG_FUNC bfloat operator()(complex64_t z) { return static_cast<bfloat>(z.real); }
};
template <> struct Cast<complex64_t> {
  template <typename In> MG_FUNC complex64_t operator()(In x) { return ComplexCast<In>::to(x); }
  MG_FUNC complex64_t operator()(complex64_t z) { return z; }
};

// ---------------------------------------------------------------------------------------------
// Binary

#define MG_ARITH_BINARY(Name, OP)                                              \
  struct Name {                                                                \
    template <typename T> MG_FUNC T operator()(T a, T b) { return T(a OP b); } \
    MG_FUNC complex64_t operator()(complex64_t a, complex64_t b) { return a OP b; } \
  };

MG_ARITH_BINARY(Add, +)
MG_ARITH_BINARY(Subtract, -)
MG_ARITH_BINARY(Multiply, *)
MG_ARITH_BINARY(Divide, /)

struct FloorDivide {
  template <typename T> MG_FUNC T operator()(T a, T b) { return floor_div_int(a, b); }
};

// divmod's quotient: floored for integers, floor(a / b) for floats.
struct DivModQuotient {
  template <typename T> MG_FUNC T operator()(T a, T b) { return floor_div_int(a, b); }
  MG_FUNC float operator()(float a, float b) { return metal::floor(a / b); }
  MG_FUNC half operator()(half a, half b) { return metal::floor(a / b); }
  MG_FUNC bfloat operator()(bfloat a, bfloat b) { return bfloat(metal::floor(float(a) / float(b))); }
};

// Floored remainder: fmod is exact, then move to the divisor's sign.
struct Remainder {
  template <typename T> MG_FUNC T operator()(T a, T b) { return floor_mod_int(a, b); }
  MG_FUNC float operator()(float a, float b) { return rem_float(a, b); }
  MG_FUNC half operator()(half a, half b) { return half(rem_float(float(a), float(b))); }
  MG_FUNC bfloat operator()(bfloat a, bfloat b) { return bfloat(rem_float(float(a), float(b))); }
  static MG_FUNC float rem_float(float a, float b) {
    float r = metal::fmod(a, b);
    if (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) r += b;
    return r;
  }
};

struct Power {
  // Integers: exponentiation by squaring with wraparound; a negative exponent gives 0 (MLX).
  template <typename T> MG_FUNC T operator()(T base, T exp) {
    if (exp < 0) return T(0);
    T result = T(1);
    while (exp) {
      if (exp & 1) result = T(result * base);
      exp >>= 1;
      base = T(base * base);
    }
    return result;
  }
  MG_FUNC float operator()(float a, float b) { return metal::precise::pow(a, b); }
  MG_FUNC half operator()(half a, half b) { return metal::precise::pow(a, b); }
  MG_FUNC bfloat operator()(bfloat a, bfloat b) { return bfloat(metal::precise::pow(float(a), float(b))); }
  MG_FUNC complex64_t operator()(complex64_t a, complex64_t b);
};

// NaN propagates from either side: maximum(nan, 0) is nan.
struct Maximum {
  template <typename T> MG_FUNC T operator()(T a, T b) { return a > b ? a : b; }
  MG_FUNC float operator()(float a, float b) { return metal::isnan(a) ? a : (a > b ? a : b); }
  MG_FUNC half operator()(half a, half b) { return metal::isnan(a) ? a : (a > b ? a : b); }
  MG_FUNC bfloat operator()(bfloat a, bfloat b) { return metal::isnan(float(a)) ? a : (float(a) > float(b) ? a : b); }
  MG_FUNC complex64_t operator()(complex64_t a, complex64_t b) {
    return (metal::isnan(a.real) || metal::isnan(a.imag) || a > b) ? a : b;
  }
};
struct Minimum {
  template <typename T> MG_FUNC T operator()(T a, T b) { return a < b ? a : b; }
  MG_FUNC float operator()(float a, float b) { return metal::isnan(a) ? a : (a < b ? a : b); }
  MG_FUNC half operator()(half a, half b) { return metal::isnan(a) ? a : (a < b ? a : b); }
  MG_FUNC bfloat operator()(bfloat a, bfloat b) { return metal::isnan(float(a)) ? a : (float(a) < float(b) ? a : b); }
  MG_FUNC complex64_t operator()(complex64_t a, complex64_t b) {
    return (metal::isnan(a.real) || metal::isnan(a.imag) || a < b) ? a : b;
  }
};

struct LogAddExp {
  // MLX's: the larger operand itself when the smaller is -inf or the larger +inf (so -0 stays -0).
  template <typename T> MG_FUNC T operator()(T a, T b) {
    typedef typename compute_type<T>::type C;
    C x = C(a), y = C(b);
    if (metal::isnan(x) || metal::isnan(y)) return T(x + y);
    C hi = x > y ? x : y;
    C lo = x > y ? y : x;
    if (lo == C(-INFINITY) || hi == C(INFINITY)) return T(hi);
    return T(hi + C(log1p_impl(float(metal::precise::exp(lo - hi)))));
  }
  // MLX's complex form: the larger operand (lexicographic) plus log(1 + exp(smaller − larger)).
  MG_FUNC complex64_t operator()(complex64_t a, complex64_t b) {
    if (metal::isnan(a.real) || metal::isnan(a.imag) || metal::isnan(b.real) || metal::isnan(b.imag)) {
      return make_complex(NAN, 0.0f);
    }
    complex64_t hi = a > b ? a : b;
    complex64_t lo = a > b ? b : a;
    if (lo.real == -INFINITY || hi.real == INFINITY) return hi;
    float e = metal::precise::exp(lo.real - hi.real);
    float re = 1.0f + e * metal::precise::cos(lo.imag - hi.imag);
    float im = e * metal::precise::sin(lo.imag - hi.imag);
    return make_complex(hi.real + metal::precise::log(metal::precise::sqrt(re * re + im * im)), hi.imag + metal::precise::atan2(im, re));
  }
};

struct ArcTan2 {
  template <typename T> MG_FUNC T operator()(T a, T b) {
    typedef typename compute_type<T>::type C;
    return T(metal::precise::atan2(C(a), C(b)));
  }
};

#define MG_COMPARE(Name, OP)                                                      \
  struct Name {                                                                   \
    template <typename T> MG_FUNC bool operator()(T a, T b) { return a OP b; }    \
    MG_FUNC bool operator()(bfloat a, bfloat b) { return float(a) OP float(b); }  \
  };
MG_COMPARE(Greater, >)
MG_COMPARE(GreaterEqual, >=)
MG_COMPARE(Less, <)
MG_COMPARE(LessEqual, <=)

struct Equal {
  template <typename T> MG_FUNC bool operator()(T a, T b) { return a == b; }
  MG_FUNC bool operator()(bfloat a, bfloat b) { return float(a) == float(b); }
  MG_FUNC bool operator()(complex64_t a, complex64_t b) { return a == b; }
};
struct NotEqual {
  template <typename T> MG_FUNC bool operator()(T a, T b) { return a != b; }
  MG_FUNC bool operator()(bfloat a, bfloat b) { return float(a) != float(b); }
  MG_FUNC bool operator()(complex64_t a, complex64_t b) { return a != b; }
};
// Equal with NaN == NaN (array_equal / isclose with equal_nan).
struct EqualNan {
  template <typename T> MG_FUNC bool operator()(T a, T b) { return a == b; }
  MG_FUNC bool operator()(float a, float b) { return a == b || (metal::isnan(a) && metal::isnan(b)); }
  MG_FUNC bool operator()(half a, half b) { return a == b || (metal::isnan(a) && metal::isnan(b)); }
  MG_FUNC bool operator()(bfloat a, bfloat b) { return (*this)(float(a), float(b)); }
  MG_FUNC bool operator()(complex64_t a, complex64_t b) { return (*this)(a.real, b.real) && (*this)(a.imag, b.imag); }
};

struct LogicalAnd {
  template <typename T> MG_FUNC bool operator()(T a, T b) { return a && b; }
};
struct LogicalOr {
  template <typename T> MG_FUNC bool operator()(T a, T b) { return a || b; }
};
struct BitwiseAnd {
  template <typename T> MG_FUNC T operator()(T a, T b) { return T(a & b); }
};
struct BitwiseOr {
  template <typename T> MG_FUNC T operator()(T a, T b) { return T(a | b); }
};
struct BitwiseXor {
  template <typename T> MG_FUNC T operator()(T a, T b) { return T(a ^ b); }
};
// Shift counts are taken modulo the width the operand is promoted to (32 bits, or 64 for
// (u)long), as x86-64 and arm64 shifters do: MSL and C++ leave counts ≥ the width or negative
// undefined. Left shifts run on the unsigned type so negative operands shift defined too.
struct LeftShift {
  template <typename T> MG_FUNC T operator()(T a, T b) {
    if (sizeof(a << b) == 8) return T(ulong(a) << int(ulong(b) & 63ul));
    return T(uint(a) << int(uint(b) & 31u));
  }
};
struct RightShift {
  template <typename T> MG_FUNC T operator()(T a, T b) {
    if (sizeof(a >> b) == 8) return T(a >> int(ulong(b) & 63ul));
    return T(a >> int(uint(b) & 31u));
  }
};

// ---------------------------------------------------------------------------------------------
// Ternary

struct Select {
  template <typename T> MG_FUNC T operator()(bool c, T a, T b) { return c ? a : b; }
};

// ---------------------------------------------------------------------------------------------
// complex64 definitions of the float functions that support it

MG_FUNC complex64_t Exp::operator()(complex64_t z) {
  float e = metal::precise::exp(z.real);
  return z.imag == 0.0f ? make_complex(e, 0.0f) : make_complex(e * metal::precise::cos(z.imag), e * metal::precise::sin(z.imag));
}
MG_FUNC complex64_t Log::operator()(complex64_t z) {
  return make_complex(metal::precise::log(metal::precise::sqrt(z.real * z.real + z.imag * z.imag)), metal::precise::atan2(z.imag, z.real));
}
MG_FUNC complex64_t Log2::operator()(complex64_t z) {
  complex64_t l = Log()(z);
  return make_complex(l.real / M_LN2_F, l.imag / M_LN2_F);
}
MG_FUNC complex64_t Log10::operator()(complex64_t z) {
  complex64_t l = Log()(z);
  return make_complex(l.real / M_LN10_F, l.imag / M_LN10_F);
}
MG_FUNC complex64_t Sin::operator()(complex64_t z) {
  return make_complex(metal::precise::sin(z.real) * metal::precise::cosh(z.imag), metal::precise::cos(z.real) * metal::precise::sinh(z.imag));
}
MG_FUNC complex64_t Cos::operator()(complex64_t z) {
  return make_complex(metal::precise::cos(z.real) * metal::precise::cosh(z.imag), -metal::precise::sin(z.real) * metal::precise::sinh(z.imag));
}
MG_FUNC complex64_t Tan::operator()(complex64_t z) { return Sin()(z) / Cos()(z); }
MG_FUNC complex64_t Sinh::operator()(complex64_t z) {
  return make_complex(metal::precise::sinh(z.real) * metal::precise::cos(z.imag), metal::precise::cosh(z.real) * metal::precise::sin(z.imag));
}
MG_FUNC complex64_t Cosh::operator()(complex64_t z) {
  return make_complex(metal::precise::cosh(z.real) * metal::precise::cos(z.imag), metal::precise::sinh(z.real) * metal::precise::sin(z.imag));
}
MG_FUNC complex64_t Tanh::operator()(complex64_t z) { return Sinh()(z) / Cosh()(z); }
MG_FUNC complex64_t Sqrt::operator()(complex64_t z) {
  float m = metal::precise::sqrt(z.real * z.real + z.imag * z.imag);
  float r = metal::precise::sqrt((m + z.real) * 0.5f);
  float i = metal::precise::sqrt((m - z.real) * 0.5f);
  return make_complex(r, metal::signbit(z.imag) ? -i : i);
}
MG_FUNC complex64_t Rsqrt::operator()(complex64_t z) { return make_complex(1.0f, 0.0f) / Sqrt()(z); }
MG_FUNC complex64_t Round::operator()(complex64_t z) { return make_complex(metal::rint(z.real), metal::rint(z.imag)); }
MG_FUNC complex64_t Power::operator()(complex64_t a, complex64_t b) {
  if (a.real == 0.0f && a.imag == 0.0f) {
    return (b.real == 0.0f && b.imag == 0.0f) ? make_complex(1.0f, 0.0f) : make_complex(0.0f, 0.0f);
  }
  return Exp()(Log()(a) * b);
}
