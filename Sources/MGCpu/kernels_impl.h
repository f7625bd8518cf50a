// The kernels, compiled once per instruction set: isa_baseline.cpp and isa_avx2.cpp include this
// file inside their own namespace (so nothing here is shared between the builds) with MG_FMA,
// MG_F16C set for what the TU targets. Semantics follow metalgrad's TypeScript reference
// (ts/backend/cpu, ts/core/primitives): the same rounding for exact operations, the same integer
// wraparound, the same special values; see docs/ARCHITECTURE.md "Native CPU kernels".

#include "vec_impl.h"

// ---- representations ---------------------------------------------------------------------------

struct cf {
  float re, im;
};

template <int D> struct ReprT;
template <> struct ReprT<Bool> { using type = uint8_t; };
template <> struct ReprT<U8> { using type = uint8_t; };
template <> struct ReprT<U16> { using type = uint16_t; };
template <> struct ReprT<U32> { using type = uint32_t; };
template <> struct ReprT<U64> { using type = uint64_t; };
template <> struct ReprT<I8> { using type = int8_t; };
template <> struct ReprT<I16> { using type = int16_t; };
template <> struct ReprT<I32> { using type = int32_t; };
template <> struct ReprT<I64> { using type = int64_t; };
template <> struct ReprT<F16> { using type = float; };
template <> struct ReprT<F32> { using type = float; };
template <> struct ReprT<F64> { using type = double; };
template <> struct ReprT<BF16> { using type = float; };
template <> struct ReprT<C64> { using type = cf; };
template <int D> using R = typename ReprT<D>::type;

constexpr bool kFloat(int d) { return d == F16 || d == F32 || d == F64 || d == BF16; }
constexpr bool kF32R(int d) { return d == F16 || d == F32 || d == BF16; }
constexpr bool kSmallInt(int d) { return d == U8 || d == U16 || d == U32 || d == I8 || d == I16 || d == I32; }
constexpr bool kLong(int d) { return d == U64 || d == I64; }
constexpr bool kInt(int d) { return kSmallInt(d) || kLong(d); }
constexpr bool kSigned(int d) { return d == I8 || d == I16 || d == I32 || d == I64; }

template <int D> static inline double to_d(R<D> x) {
  if constexpr (D == C64) return double(x.re);
  else return double(x);
}

// A double stored into dtype O as the TypeScript reference stores it (writeNumbers): floats round
// to nearest (float16 straight from the double; bfloat16 through float32, as
// bfloat16BitsFromNumber), integers truncate and wrap, bool is "nonzero" (NaN is true).
template <int O> static inline R<O> from_d(double v) {
  if constexpr (O == Bool) return uint8_t(!(v == 0.0));
  else if constexpr (kInt(O)) return R<O>(wrap_u64_from_double(v));
  else if constexpr (O == F32) return float(v);
  else if constexpr (O == F64) return v;
  else if constexpr (O == F16) return f16_to_f32(f64_to_f16(v));
  else if constexpr (O == BF16) return bf16_to_f32(f32_to_bf16(float(v)));
  else return cf{float(v), 0.0f};
}

// ---- 16-bit grids ------------------------------------------------------------------------------

static inline vf vf_round_bf16(vf x) {
  vu b = (vu)x;
  vu rounded = (b + vu{0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff, 0x7fff} + ((b >> 16) & 1u)) &
               0xffff0000u;
  vu quiet = (b | 0x00400000u) & 0xffff0000u;
  vi nan = vf_isnan(x);
  return (vf)(((vu)nan & quiet) | (~(vu)nan & rounded));
}

[[gnu::noinline]] static void round_grid_impl(float *x, int dtype, int64_t n) {
  if (dtype == BF16) {
    int64_t i = 0;
    for (; i + VF <= n; i += VF) vf_store(x + i, vf_round_bf16(vf_load(x + i)));
    for (; i < n; i++) x[i] = bf16_to_f32(f32_to_bf16(x[i]));
    return;
  }
#if MG_F16C
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)));
  }
  for (; i < n; i++) x[i] = f16_to_f32(f32_to_f16(x[i]));
#else
  for (int64_t i = 0; i < n; i++) x[i] = f16_to_f32(f32_to_f16(x[i]));
#endif
}

// ---- JS-number semantics used by the double path -------------------------------------------------

static inline int32_t js_int32(double v) { return int32_t(uint32_t(wrap_u64_from_double(v))); }
// C's pow (docs/corner-cases.md): pow(1, y) = 1 for every y, pow(-1, ±inf) = 1.
static inline double js_pow(double x, double y) { return std::pow(x, y); }
static inline double js_floor_mod(double a, double b) {
  double r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline double js_floor_div_int(double a, double b) {
  if (b == 0) return 0;
  double r = std::fmod(a, b);
  double q = (a - r) / b;
  if (r != 0 && ((r < 0) != (b < 0))) q -= 1;
  return q;
}
static inline double js_sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }
static inline double js_sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}
// MLX's: the larger operand itself when the smaller is -inf or the larger +inf (-0 stays -0).
static inline double js_logaddexp(double a, double b) {
  if (a != a || b != b) return __builtin_nan("");
  double hi = a > b ? a : b, lo = a > b ? b : a;
  if (lo == -__builtin_inf() || hi == __builtin_inf()) return hi;
  return hi + std::log1p(std::exp(lo - hi));
}
static inline double js_max(double x, double y) { return x != x ? x : x > y ? x : y; }
static inline double js_min(double x, double y) { return x != x ? x : x < y ? x : y; }

// erf⁻¹ as the reference computes it: Giles' single-precision approximation, then three Newton
// steps on erf.
static inline double js_erfinv(double y) {
  if (y != y || y < -1 || y > 1) return __builtin_nan("");
  if (y == 1) return __builtin_inf();
  if (y == -1) return -__builtin_inf();
  double w = -std::log((1 - y) * (1 + y));
  double x, p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-8;
    p = 3.43273939e-7 + p * w;
    p = -3.5233877e-6 + p * w;
    p = -4.39150654e-6 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  x = p * y;
  for (int i = 0; i < 3; i++) {
    double err = std::erf(x) - y;
    x -= err / (1.1283791670955126 * std::exp(-x * x));
  }
  return x;
}

// ---- integer semantics (wraparound as C's unsigned arithmetic) -----------------------------------

template <class T> using Wide = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;
template <class T> static inline T wadd(T a, T b) { return T(Wide<T>(a) + Wide<T>(b)); }
template <class T> static inline T wsub(T a, T b) { return T(Wide<T>(a) - Wide<T>(b)); }
template <class T> static inline T wmul(T a, T b) { return T(Wide<T>(a) * Wide<T>(b)); }
template <class T> static inline T wneg(T a) { return T(Wide<T>(0) - Wide<T>(a)); }
template <class T> static inline T iabs(T a) {
  if constexpr (std::is_signed_v<T>) return a < 0 ? wneg(a) : a;
  else return a;
}
// floor division / modulo with x // 0 = 0 and x % 0 = x (MLX's rule; C would trap), and
// INT_MIN // -1 = INT_MIN, INT_MIN % -1 = 0 (docs/corner-cases.md)
template <class T> static inline T ifloordiv(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return wneg(a);
    T q = T(a / b), r = T(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? T(q - 1) : q;
  } else {
    return T(a / b);
  }
}
template <class T> static inline T ifloormod(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
    T r = T(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
  } else {
    return T(a % b);
  }
}
// powBig: squaring with 64-bit wraparound; a negative exponent gives 0
static inline uint64_t ipow64(uint64_t base, int64_t exp_signed, bool exp_negative) {
  if (exp_negative) return 0;
  uint64_t e = uint64_t(exp_signed), r = 1, b = base;
  while (e) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return r;
}
template <class T> static inline T ipow(T a, T b) {
  bool neg = false;
  if constexpr (std::is_signed_v<T>) neg = b < 0;
  return T(ipow64(uint64_t(int64_t(a)), int64_t(b), neg));
}
// ≤ 32-bit shifts as JavaScript's on int32 values (count mod 32); the store wraps
template <class T> static inline T ishl32(T a, T b) {
  return T(uint32_t(int32_t(a)) << (uint32_t(int32_t(b)) & 31u));
}
template <class T> static inline T ishr32(T a, T b) {
  if constexpr (std::is_signed_v<T>) return T(int32_t(a) >> (uint32_t(int32_t(b)) & 31u));
  else return T(uint32_t(a) >> (uint32_t(int32_t(b)) & 31u));
}
// 64-bit shifts: the count modulo 64, as x86-64 and arm64 shift (docs/corner-cases.md)
static inline int64_t sshl64(int64_t a, int64_t b) { return int64_t(uint64_t(a) << (uint64_t(b) & 63u)); }
static inline int64_t sshr64(int64_t a, int64_t b) { return a >> (uint64_t(b) & 63u); }
static inline uint64_t ushl64(uint64_t a, uint64_t b) { return a << (b & 63u); }
static inline uint64_t ushr64(uint64_t a, uint64_t b) { return a >> (b & 63u); }

// ---- complex (computed in double, as the reference's formulas) -----------------------------------

struct cd {
  double re, im;
};
static inline cd cmul(cd a, cd b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
static inline cd cdiv(cd a, cd b) {
  if (std::fabs(b.re) >= std::fabs(b.im)) {
    double r = b.im / b.re, den = b.re + b.im * r;
    return {(a.re + a.im * r) / den, (a.im - a.re * r) / den};
  }
  double r = b.re / b.im, den = b.re * r + b.im;
  return {(a.re * r + a.im) / den, (a.im * r - a.re) / den};
}
static inline cd cexp_(cd z) {
  double e = std::exp(z.re);
  return z.im == 0 ? cd{e, 0} : cd{e * std::cos(z.im), e * std::sin(z.im)};
}
static inline cd clog_(cd z) { return {std::log(std::hypot(z.re, z.im)), std::atan2(z.im, z.re)}; }
static inline cd csqrt_(cd z) {
  double m = std::hypot(z.re, z.im);
  double r = std::sqrt((m + z.re) / 2), i = std::sqrt((m - z.re) / 2);
  return {r, (z.im < 0 || (z.im == 0 && std::signbit(z.im))) ? -i : i};
}
static inline cd csin_(cd z) { return {std::sin(z.re) * std::cosh(z.im), std::cos(z.re) * std::sinh(z.im)}; }
static inline cd ccos_(cd z) { return {std::cos(z.re) * std::cosh(z.im), -std::sin(z.re) * std::sinh(z.im)}; }
static inline cd csinh_(cd z) { return {std::sinh(z.re) * std::cos(z.im), std::cosh(z.re) * std::sin(z.im)}; }
static inline cd ccosh_(cd z) { return {std::cosh(z.re) * std::cos(z.im), std::sinh(z.re) * std::sin(z.im)}; }
static inline bool cnan(cd z) { return z.re != z.re || z.im != z.im; }
static inline bool cgt(cd a, cd b) { return a.re > b.re || (a.re == b.re && a.im > b.im); }
static inline bool cge(cd a, cd b) { return a.re > b.re || (a.re == b.re && a.im >= b.im); }
static inline double round_half_even(double x) { return std::nearbyint(x); }
static inline cd to_cd(cf z) { return {double(z.re), double(z.im)}; }
static inline cf to_cf(cd z) { return {float(z.re), float(z.im)}; }

// ---- kernel loops ----------------------------------------------------------------------------------

// Elementwise loops run in blocks: a block's operands are copied into locals, computed, and the
// results stored. A fused program's instructions often write the register they read (dst == a);
// the compiler's alias check sends such loops to scalar code, the locals let it vectorise every
// block (callgrind: a float32 multiply went from 1.9 to 0.4 instructions an element). Reading a
// block before writing it is what the in-place case needs anyway (same index only).
template <class T> constexpr int64_t block_of() { return sizeof(T) >= 8 ? 8 : 16; }

template <int D, int O, class F>
static void k_unary(void *dst, const void *a, const void *, const void *, int64_t n, int mask) {
  F f{};
  R<O> *d = static_cast<R<O> *>(dst);
  const R<D> *x = static_cast<const R<D> *>(a);
  if (mask & 1) {
    R<O> v = f(x[0]);
    for (int64_t i = 0; i < n; i++) d[i] = v;
    return;
  }
  constexpr int64_t B = block_of<R<D>>();
  int64_t i = 0;
  for (; i + B <= n; i += B) {
    R<D> xb[B];
    R<O> rb[B];
    __builtin_memcpy(xb, x + i, sizeof xb);
    for (int64_t j = 0; j < B; j++) rb[j] = f(xb[j]);
    __builtin_memcpy(d + i, rb, sizeof rb);
  }
  for (; i < n; i++) d[i] = f(x[i]);
}
template <int D, int O, class F> static KernelFn unary(F) { return &k_unary<D, O, F>; }

// float32 lanes through a vector function (vec_impl.h's k_vunary).
template <class F> static KernelFn vunary(F) { return &k_vunary<float, F>; }

template <int D, int O, class F>
static void k_binary(void *dst, const void *a, const void *b, const void *, int64_t n, int mask) {
  F f{};
  R<O> *d = static_cast<R<O> *>(dst);
  const R<D> *x = static_cast<const R<D> *>(a);
  const R<D> *y = static_cast<const R<D> *>(b);
  constexpr int64_t B = block_of<R<D>>();
  int64_t i = 0;
  if constexpr (!(D == F32 || D == F64 || D == I32 || D == I64)) {
    // the less used dtypes: one loop for both scalar-operand layouts (the scalar is a block of its
    // copies, read once as the specialised loops read it) — less code to compile; contiguous
    // operands keep their own loop below
    if ((mask & 3) == 1 || (mask & 3) == 2) {
      constexpr int64_t BS = 4 * B;
      const bool sx = mask & 1;
      R<D> xb[BS], yb[BS];
      for (int64_t j = 0; j < BS; j++) xb[j] = yb[j] = sx ? x[0] : y[0];
      for (; i + BS <= n; i += BS) {
        R<O> rb[BS];
        __builtin_memcpy(sx ? yb : xb, (sx ? y : x) + i, sizeof xb);
        for (int64_t j = 0; j < BS; j++) rb[j] = f(xb[j], yb[j]);
        __builtin_memcpy(d + i, rb, sizeof rb);
      }
      for (; i < n; i++) d[i] = f(sx ? xb[0] : x[i], sx ? y[i] : yb[0]);
      return;
    }
  }
  switch (mask & 3) {
    case 0:
      for (; i + B <= n; i += B) {
        R<D> xb[B], yb[B];
        R<O> rb[B];
        __builtin_memcpy(xb, x + i, sizeof xb);
        __builtin_memcpy(yb, y + i, sizeof yb);
        for (int64_t j = 0; j < B; j++) rb[j] = f(xb[j], yb[j]);
        __builtin_memcpy(d + i, rb, sizeof rb);
      }
      for (; i < n; i++) d[i] = f(x[i], y[i]);
      break;
    case 1: {
      const R<D> xv = x[0];
      for (; i + B <= n; i += B) {
        R<D> yb[B];
        R<O> rb[B];
        __builtin_memcpy(yb, y + i, sizeof yb);
        for (int64_t j = 0; j < B; j++) rb[j] = f(xv, yb[j]);
        __builtin_memcpy(d + i, rb, sizeof rb);
      }
      for (; i < n; i++) d[i] = f(xv, y[i]);
      break;
    }
    case 2: {
      const R<D> yv = y[0];
      for (; i + B <= n; i += B) {
        R<D> xb[B];
        R<O> rb[B];
        __builtin_memcpy(xb, x + i, sizeof xb);
        for (int64_t j = 0; j < B; j++) rb[j] = f(xb[j], yv);
        __builtin_memcpy(d + i, rb, sizeof rb);
      }
      for (; i < n; i++) d[i] = f(x[i], yv);
      break;
    }
    default: {
      R<O> v = f(x[0], y[0]);
      for (; i < n; i++) d[i] = v;
    }
  }
}
template <int D, int O, class F> static KernelFn binary(F) { return &k_binary<D, O, F>; }

template <int D>
static void k_select(void *dst, const void *c, const void *a, const void *b, int64_t n, int mask) {
  R<D> *d = static_cast<R<D> *>(dst);
  const uint8_t *cond = static_cast<const uint8_t *>(c);
  const R<D> *x = static_cast<const R<D> *>(a);
  const R<D> *y = static_cast<const R<D> *>(b);
  const int64_t sc = (mask & 1) ? 0 : 1, sx = (mask & 2) ? 0 : 1, sy = (mask & 4) ? 0 : 1;
  if (sc == 1 && sx == 1 && sy == 1) {
    for (int64_t i = 0; i < n; i++) d[i] = cond[i] ? x[i] : y[i];
    return;
  }
  for (int64_t i = 0; i < n; i++) d[i] = cond[i * sc] ? x[i * sx] : y[i * sy];
}

// ---- casts -----------------------------------------------------------------------------------------

template <int D, int O> static inline R<O> cast1(R<D> x) {
  if constexpr (D == O) return x;
  else if constexpr (D == C64) {
    if constexpr (O == Bool) return uint8_t(x.re != 0 || x.im != 0);
    else return cast1<F32, O>(x.re);
  } else if constexpr (O == C64) return cf{float(to_d<D>(x)), 0.0f};
  else if constexpr (kInt(D) && kInt(O)) return R<O>(x);
  // float → integer: x86-64's conversion, spelled out (float_to_integer, mgcpu.h)
  else if constexpr (kFloat(D) && kInt(O)) return R<O>(float_to_integer(to_d<D>(x), O));
  // 64-bit integer → float32 (and the 16-bit floats, through float32 as MLX): rounded once
  else if constexpr (kLong(D) && kF32R(O)) return cast1<F32, O>(float(x));
  else if constexpr (D == Bool) return from_d<O>(x ? 1.0 : 0.0);
  else if constexpr (O == Bool) return uint8_t(!(x == 0));
  else if constexpr (kF32R(D) && O == F32) return x;  // 16-bit values are float32 values already
  else if constexpr (D == F32 && O == F16) return f16_to_f32(f32_to_f16(x));
  else return from_d<O>(to_d<D>(x));
}
// (noinline: a kernel is called through the table; k_cast_grid calls its float32 instance)
template <int D, int O>
[[gnu::noinline]] static void k_cast(void *dst, const void *a, const void *, const void *, int64_t n, int mask) {
  R<O> *d = static_cast<R<O> *>(dst);
  const R<D> *x = static_cast<const R<D> *>(a);
  if (mask & 1) {
    R<O> v = cast1<D, O>(x[0]);
    for (int64_t i = 0; i < n; i++) d[i] = v;
    return;
  }
  if constexpr ((D == F32 || D == BF16) && O == F16) {
    // float32 → float16 grid: one vector pass where F16C exists
    for (int64_t i = 0; i < n; i++) d[i] = x[i];
    round_grid_impl(d, F16, n);
  } else if constexpr ((D == F32 || D == F16) && O == BF16) {
    for (int64_t i = 0; i < n; i++) d[i] = x[i];
    round_grid_impl(d, BF16, n);
  } else {
    for (int64_t i = 0; i < n; i++) d[i] = cast1<D, O>(x[i]);
  }
}
// A float16/bfloat16 result of an integer or bool source: the float32 cast, rounded to the grid in
// place (one vector pass where F16C exists). The same bits as rounding the integer once: float16
// holds every integer below 65520 exactly and overflows from there, and float32 holds every integer
// below 2^24 exactly; bfloat16's reference rounds through float32 itself.
template <int D, int G>
static void k_cast_grid(void *dst, const void *a, const void *, const void *, int64_t n, int mask) {
  float *d = static_cast<float *>(dst);
  if (mask & 1) {
    float v;
    k_cast<D, F32>(&v, a, nullptr, nullptr, 1, 0);
    round_grid_impl(&v, G, 1);
    for (int64_t i = 0; i < n; i++) d[i] = v;
    return;
  }
  k_cast<D, F32>(dst, a, nullptr, nullptr, n, 0);
  round_grid_impl(d, G, n);
}
// Whether cast_from<D> has its own kernel for the result dtype O (the others are served by another
// instance, below): an integer result's signedness never matters, nor a signed source's when the
// result is no wider or bool; float16/bfloat16 values are float32 values.
template <int D, int O> constexpr bool cast_own() {
  if constexpr (kInt(D) || D == Bool) {
    if constexpr (kSigned(O) || O == F16 || O == BF16) return false;
    else if constexpr (kSigned(D) && (O == Bool || (kInt(O) && sizeof(R<O>) <= sizeof(R<D>)))) return false;
    else return true;
  } else if constexpr (D == F16 || D == BF16) {
    return O == F16 || O == BF16;
  } else {
    return true;
  }
}
template <int D> static KernelFn cast_from(int o) {
  if constexpr (kInt(D) || D == Bool) {
    // An integer result keeps the low bits of the source's integer value: its signedness does not
    // change them (the unsigned instance serves both), nor does the source's when the result is
    // no wider or bool (a signed source takes the unsigned source's instance).
    o = o == I8 ? U8 : o == I16 ? U16 : o == I32 ? U32 : o == I64 ? U64 : o;
    if constexpr (kSigned(D)) {
      constexpr int UD = D == I8 ? U8 : D == I16 ? U16 : D == I32 ? U32 : U64;
      if (o == Bool || (kInt(o) && dtype_size(o) <= dtype_size(D))) return cast_from<UD>(o);
    }
    if (o == F16) return &k_cast_grid<D, F16>;
    if (o == BF16) return &k_cast_grid<D, BF16>;
  }
  if constexpr (D == F16 || D == BF16) {
    // a 16-bit float's value is a float32 value: float32's casts, except to the 16-bit grids
    if (o != F16 && o != BF16) return cast_from<F32>(o);
  }
  switch (o) {
#define MG_CAST_TO(O) \
  case O:              \
    if constexpr (cast_own<D, O>()) return &k_cast<D, O>; \
    break;
    MG_EACH_DTYPE(MG_CAST_TO)
#undef MG_CAST_TO
    default: break;
  }
  return nullptr;
}

// ---- the op table ------------------------------------------------------------------------------------

// Functions the reference computes in float64 (libm and its number rules): a block of 64 elements
// is widened to double (to_d), mapped, and narrowed with the reference's rounding/wrapping (from_d)
// — the same bits as doing it element by element. The three steps are separate non-inlined loops
// so each function's loop is compiled once, not once per dtype: these ops are libm calls, the
// dtype-specialised form cost a third of the kernels' compile time and ran no faster.
template <int OP> static inline double d1(double x) {
  if constexpr (OP == OpRsqrt) return 1.0 / std::sqrt(x);
  else if constexpr (OP == OpSqrt) return std::sqrt(x);
  else if constexpr (OP == OpExp) return std::exp(x);
  else if constexpr (OP == OpExpm1) return std::expm1(x);
  else if constexpr (OP == OpLog) return std::log(x);
  else if constexpr (OP == OpLog2) return std::log2(x);
  else if constexpr (OP == OpLog10) return std::log10(x);
  else if constexpr (OP == OpLog1p) return std::log1p(x);
  else if constexpr (OP == OpSin) return std::sin(x);
  else if constexpr (OP == OpCos) return std::cos(x);
  else if constexpr (OP == OpTan) return std::tan(x);
  else if constexpr (OP == OpArcSin) return std::asin(x);
  else if constexpr (OP == OpArcCos) return std::acos(x);
  else if constexpr (OP == OpArcTan) return std::atan(x);
  else if constexpr (OP == OpSinh) return std::sinh(x);
  else if constexpr (OP == OpCosh) return std::cosh(x);
  else if constexpr (OP == OpTanh) return std::tanh(x);
  else if constexpr (OP == OpArcSinh) return std::asinh(x);
  else if constexpr (OP == OpArcCosh) return std::acosh(x);
  else if constexpr (OP == OpArcTanh) return std::atanh(x);
  else if constexpr (OP == OpSigmoid) return js_sigmoid(x);
  else if constexpr (OP == OpErf) return std::erf(x);
  else if constexpr (OP == OpErfInv) return js_erfinv(x);
  else if constexpr (OP == OpBitwiseInvert) return double(~js_int32(x));
  else return x;  // conjugate, real
}
// the bool shifts read their operands as int32 numbers, as the reference's number rule
template <int OP> static inline double d2(double x, double y) {
  if constexpr (OP == OpDivide) return x / y;
  else if constexpr (OP == OpRemainder) return js_floor_mod(x, y);
  else if constexpr (OP == OpFloorDivide) return js_floor_div_int(x, y);
  else if constexpr (OP == OpPower) return js_pow(x, y);
  else if constexpr (OP == OpLogAddExp) return js_logaddexp(x, y);
  else if constexpr (OP == OpArcTan2) return std::atan2(x, y);
  else if constexpr (OP == OpLeftShift) return double(int32_t(uint32_t(js_int32(x)) << (uint32_t(js_int32(y)) & 31u)));
  else return double(js_int32(x) >> (uint32_t(js_int32(y)) & 31u));  // right shift
}
constexpr int64_t kViaBlock = 64;
// t[0..m) = the elements i.. of src as doubles (all src[0] when scalar)
template <int D> [[gnu::noinline]] static void widen_d(double *t, const void *src, int64_t i, int64_t m, bool scalar) {
  const R<D> *x = static_cast<const R<D> *>(src);
  if (scalar) {
    const double v = to_d<D>(x[0]);
    for (int64_t j = 0; j < m; j++) t[j] = v;
  } else {
    for (int64_t j = 0; j < m; j++) t[j] = to_d<D>(x[i + j]);
  }
}
template <int O> [[gnu::noinline]] static void narrow_d(void *dst, int64_t i, const double *t, int64_t m) {
  R<O> *d = static_cast<R<O> *>(dst);
  for (int64_t j = 0; j < m; j++) d[i + j] = from_d<O>(t[j]);
}
template <int OP> [[gnu::noinline]] static void map_d1(double *t, int64_t m) {
  for (int64_t j = 0; j < m; j++) t[j] = d1<OP>(t[j]);
}
template <int OP> [[gnu::noinline]] static void map_d2(double *t, const double *u, int64_t m) {
  for (int64_t j = 0; j < m; j++) t[j] = d2<OP>(t[j], u[j]);
}
// the result of an all-scalar op, computed once and stored n times
template <int O> static void fill_d(void *dst, double *t, int64_t n) {
  for (int64_t j = 1; j < kViaBlock; j++) t[j] = t[0];
  for (int64_t i = 0; i < n; i += kViaBlock) narrow_d<O>(dst, i, t, std::min(kViaBlock, n - i));
}
template <int D, int O, int OP>
static void k_via_d1(void *dst, const void *a, const void *, const void *, int64_t n, int mask) {
  double t[kViaBlock];
  if (mask & 1) {
    widen_d<D>(t, a, 0, 1, true);
    map_d1<OP>(t, 1);
    return fill_d<O>(dst, t, n);
  }
  for (int64_t i = 0; i < n; i += kViaBlock) {
    const int64_t m = std::min(kViaBlock, n - i);
    widen_d<D>(t, a, i, m, false);
    map_d1<OP>(t, m);
    narrow_d<O>(dst, i, t, m);
  }
}
template <int D, int O, int OP>
static void k_via_d2(void *dst, const void *a, const void *b, const void *, int64_t n, int mask) {
  double t[kViaBlock], u[kViaBlock];
  if ((mask & 3) == 3) {
    widen_d<D>(t, a, 0, 1, true);
    widen_d<D>(u, b, 0, 1, true);
    map_d2<OP>(t, u, 1);
    return fill_d<O>(dst, t, n);
  }
  for (int64_t i = 0; i < n; i += kViaBlock) {
    const int64_t m = std::min(kViaBlock, n - i);
    widen_d<D>(t, a, i, m, mask & 1);
    widen_d<D>(u, b, i, m, mask & 2);
    map_d2<OP>(t, u, m);
    narrow_d<O>(dst, i, t, m);
  }
}
#define VIAD1(OP) (&k_via_d1<D, D, OP>)
#define VIAD2(OP) (&k_via_d2<D, D, OP>)
// an expression of the dtype's own values through double (specialised per dtype)
#define VIAD2_EXPR(expr) \
  binary<D, D>([](R<D> xv, R<D> yv) { double x = to_d<D>(xv), y = to_d<D>(yv); return from_d<D>(expr); })
#define CPLX1(expr) unary<C64, C64>([](cf zv) { cd z = to_cd(zv); return to_cf(expr); })
#define CPLX2(expr) binary<C64, C64>([](cf av, cf bv) { cd a = to_cd(av), b = to_cd(bv); return to_cf(expr); })
#define CPLXCMP(expr) binary<C64, Bool>([](cf av, cf bv) { cd a = to_cd(av), b = to_cd(bv); return uint8_t(expr); })

// The float functions computed through double (the reference's number path), for the float dtypes;
// nullptr for any other op. Only those a float operand reaches: float32 and the 16-bit floats have
// vector kernels for exp, log, tanh, sigmoid and erf (real_kernel), and every float dtype exact
// sqrt and divide kernels. (Left to the baseline table, the AVX2 table's libm functions ran 1-5%
// slower: exp float64, power and arctan2 float32, bench/cpu-kernels.bench.ts.)
template <int D> static KernelFn math_via_double(int op) {
  constexpr bool VEC = kF32R(D);
  switch (op) {
    case OpRsqrt: return VIAD1(OpRsqrt);
    case OpExpm1: return VIAD1(OpExpm1);
    case OpLog2: return VIAD1(OpLog2);
    case OpLog10: return VIAD1(OpLog10);
    case OpLog1p: return VIAD1(OpLog1p);
    case OpSin: return VIAD1(OpSin);
    case OpCos: return VIAD1(OpCos);
    case OpTan: return VIAD1(OpTan);
    case OpArcSin: return VIAD1(OpArcSin);
    case OpArcCos: return VIAD1(OpArcCos);
    case OpArcTan: return VIAD1(OpArcTan);
    case OpSinh: return VIAD1(OpSinh);
    case OpCosh: return VIAD1(OpCosh);
    case OpArcSinh: return VIAD1(OpArcSinh);
    case OpArcCosh: return VIAD1(OpArcCosh);
    case OpArcTanh: return VIAD1(OpArcTanh);
    case OpErfInv: return VIAD1(OpErfInv);
    case OpPower: return VIAD2(OpPower);
    case OpLogAddExp: return VIAD2(OpLogAddExp);
    case OpArcTan2: return VIAD2(OpArcTan2);
    case OpRemainder: return VIAD2(OpRemainder);
    default: break;
  }
  if constexpr (!VEC) {
    switch (op) {
      case OpExp: return VIAD1(OpExp);
      case OpLog: return VIAD1(OpLog);
      case OpTanh: return VIAD1(OpTanh);
      case OpSigmoid: return VIAD1(OpSigmoid);
      case OpErf: return VIAD1(OpErf);
      default: break;
    }
  }
  return nullptr;
}

#if !MG_VECTOR_ONLY
static KernelFn complex_kernel(int op, int out) {
  if (op >= FirstBinary && op < FirstTernary && out == Bool) {
    switch (op) {
      case OpEqual: return CPLXCMP(a.re == b.re && a.im == b.im);
      case OpEqualNan:
        return CPLXCMP((a.re == b.re || (a.re != a.re && b.re != b.re)) && (a.im == b.im || (a.im != a.im && b.im != b.im)));
      case OpNotEqual: return CPLXCMP(a.re != b.re || a.im != b.im);
      case OpGreater: return CPLXCMP(cgt(a, b));
      case OpGreaterEqual: return CPLXCMP(cge(a, b));
      case OpLess: return CPLXCMP(cgt(b, a));
      case OpLessEqual: return CPLXCMP(cge(b, a));
      default: return nullptr;
    }
  }
  if (out == F32) {
    if (op == OpReal) return unary<C64, F32>([](cf z) { return z.re; });
    if (op == OpImag) return unary<C64, F32>([](cf z) { return z.im; });
    return nullptr;
  }
  if (out != C64) return nullptr;
  switch (op) {
    case OpAbs: return CPLX1((cd{std::hypot(z.re, z.im), 0}));
    case OpNegative: return CPLX1((cd{-z.re, -z.im}));
    case OpSign: return CPLX1((std::hypot(z.re, z.im) == 0 ? cd{0, 0} : cd{z.re / std::hypot(z.re, z.im), z.im / std::hypot(z.re, z.im)}));
    case OpSquare: return CPLX1(cmul(z, z));
    case OpSqrt: return CPLX1(csqrt_(z));
    case OpRsqrt: return CPLX1(cdiv(cd{1, 0}, csqrt_(z)));
    case OpExp: return CPLX1(cexp_(z));
    case OpLog: return CPLX1(clog_(z));
    case OpLog2: return CPLX1((cd{clog_(z).re / 0.6931471805599453, clog_(z).im / 0.6931471805599453}));
    case OpLog10: return CPLX1((cd{clog_(z).re / 2.302585092994046, clog_(z).im / 2.302585092994046}));
    case OpSin: return CPLX1(csin_(z));
    case OpCos: return CPLX1(ccos_(z));
    case OpTan: return CPLX1(cdiv(csin_(z), ccos_(z)));
    case OpSinh: return CPLX1(csinh_(z));
    case OpCosh: return CPLX1(ccosh_(z));
    case OpTanh: return CPLX1(cdiv(csinh_(z), ccosh_(z)));
    case OpRound: return CPLX1((cd{round_half_even(z.re), round_half_even(z.im)}));
    case OpConjugate: return CPLX1((cd{z.re, -z.im}));
    case OpAdd: return CPLX2((cd{a.re + b.re, a.im + b.im}));
    case OpSubtract: return CPLX2((cd{a.re - b.re, a.im - b.im}));
    case OpMultiply: return CPLX2(cmul(a, b));
    case OpDivide: return CPLX2(cdiv(a, b));
    case OpPower:
      return CPLX2((a.re == 0 && a.im == 0) ? ((b.re == 0 && b.im == 0) ? cd{1, 0} : cd{0, 0}) : cexp_(cmul(clog_(a), b)));
    case OpMaximum: return CPLX2((cnan(a) || cgt(a, b)) ? a : b);
    case OpMinimum: return CPLX2((cnan(a) || cgt(b, a)) ? a : b);
    case OpLogAddExp:
      return CPLX2(([](cd x, cd y) -> cd {
        if (cnan(x) || cnan(y)) return {__builtin_nan(""), 0};
        cd m = cgt(x, y) ? x : y, s = cgt(x, y) ? y : x;
        if (s.re == -__builtin_inf() || m.re == __builtin_inf()) return m;
        double e = std::exp(s.re - m.re);
        cd l = clog_(cd{1 + e * std::cos(s.im - m.im), e * std::sin(s.im - m.im)});
        return {m.re + l.re, m.im + l.im};
      })(a, b));
    case OpSelect: return &k_select<C64>;
    default: return nullptr;
  }
}

#endif

// Functors shared by several ops of one dtype (a lambda per op would be an instance per op).
struct Same {
  template <class T> T operator()(T x) const { return x; }
};
struct Equal {
  template <class T> uint8_t operator()(T x, T y) const { return uint8_t(x == y); }
};
struct Greater {
  template <class T> uint8_t operator()(T x, T y) const { return uint8_t(x > y); }
};
struct GreaterEqual {
  template <class T> uint8_t operator()(T x, T y) const { return uint8_t(x >= y); }
};
struct FloorDivide {
  template <class T> T operator()(T x, T y) const { return ifloordiv(x, y); }
};
struct FloorMod {
  template <class T> T operator()(T x, T y) const { return ifloormod(x, y); }
};
// x < y is y > x and x <= y is y >= x, for every value (NaN included): the same kernel with the
// operands (and their scalar flags) exchanged — one instance fewer to compile per dtype and op.
template <KernelFn K>
static void k_swapped(void *dst, const void *a, const void *b, const void *c, int64_t n, int mask) {
  K(dst, b, a, c, n, (mask & ~3) | ((mask & 1) << 1) | ((mask >> 1) & 1));
}

// The integer dtype of the same width and the other signedness whose kernel instance serves D for
// sign-free ops (D itself where none does): 8/16-bit signed take the unsigned instances, 32/64-bit
// unsigned take the signed ones (int32/int64 have k_binary's specialised scalar-operand loops).
template <int D> constexpr int sign_twin() {
  return D == I8 ? U8 : D == I16 ? U16 : D == U32 ? I32 : D == U64 ? I64 : D;
}
// Ops whose result bits do not depend on an integer's signedness: wraparound add, subtract,
// multiply, negate and square, the bitwise ops and the left shift (count mod 32/64 from its low bits),
// ==, !=, the logical ops, copies (floor/ceil/round of an integer) and select.
static inline bool sign_free(int op) {
  switch (op) {
    case OpAdd: case OpSubtract: case OpMultiply: case OpNegative: case OpSquare: case OpBitwiseAnd:
    case OpBitwiseOr: case OpBitwiseXor: case OpBitwiseInvert: case OpLeftShift: case OpEqual:
    case OpEqualNan: case OpNotEqual: case OpLogicalNot: case OpLogicalAnd: case OpLogicalOr:
    case OpFloor: case OpCeil: case OpRound: case OpSelect:
      return true;
    default:
      return false;
  }
}

template <int D> static KernelFn real_kernel(int op, int out) {
  using T = R<D>;
  constexpr bool F = kFloat(D), F32R = kF32R(D), I = kSmallInt(D), L = kLong(D), S = kSigned(D);
  constexpr bool INT = I || L;
  constexpr bool A16 = D == F16 || D == BF16;  // f32_kernel_serves_16bit: kernel_for asks real_kernel<F32>
  constexpr int TW = sign_twin<D>();
  // OWN: this dtype has its own instances of the sign-free ops (a twin's are asked instead);
  // the guards below keep the compiler from instantiating what the redirect makes dead
  constexpr bool OWN = TW == D;
  if constexpr (!OWN) {
    if (sign_free(op)) return real_kernel<TW>(op, out == D ? TW : out);
  }
  // comparisons (bool out), for every real dtype
  if constexpr (!A16) {
    if (op >= OpEqual && op <= OpLessEqual) {
      if (out != Bool) return nullptr;
      switch (op) {
        case OpEqual:
          if constexpr (OWN) return binary<D, Bool>(Equal{});
          break;
        case OpEqualNan:
          if constexpr (F) return binary<D, Bool>([](T x, T y) { return uint8_t(x == y || (x != x && y != y)); });
          else if constexpr (OWN) return binary<D, Bool>(Equal{});
          break;
        case OpNotEqual:
          if constexpr (OWN) return binary<D, Bool>([](T x, T y) { return uint8_t(x != y); });
          break;
        case OpGreater: return binary<D, Bool>(Greater{});
        case OpGreaterEqual: return binary<D, Bool>(GreaterEqual{});
        case OpLess: return &k_swapped<&k_binary<D, Bool, Greater>>;
        case OpLessEqual: return &k_swapped<&k_binary<D, Bool, GreaterEqual>>;
        default: break;
      }
      return nullptr;
    }
  }
  // The logical ops reach a kernel with bool operands only (the ops cast to bool first); bool's
  // kernels are uint8's (bool_kernel).
  if constexpr (D == U8) {
    if (op == OpLogicalNot) return out == Bool ? unary<D, Bool>([](T x) { return uint8_t(x == 0); }) : nullptr;
    if (op == OpLogicalAnd) return out == Bool ? binary<D, Bool>([](T x, T y) { return uint8_t(x != 0 && y != 0); }) : nullptr;
    if (op == OpLogicalOr) return out == Bool ? binary<D, Bool>([](T x, T y) { return uint8_t(x != 0 || y != 0); }) : nullptr;
  }
  if constexpr (OWN && !A16) {
    if (op == OpSelect) return out == D ? &k_select<D> : nullptr;
  }
  if (out != D) return nullptr;

  // exact operations in the dtype's own arithmetic (floats: one rounding equals the reference's
  // double computation rounded once; integers: wraparound)
  switch (op) {
    case OpAdd:
      if constexpr (F && !A16) return binary<D, D>([](T x, T y) { return T(x + y); });
      if constexpr (INT && OWN) return binary<D, D>([](T x, T y) { return wadd(x, y); });
      break;
    case OpSubtract:
      if constexpr (F && !A16) return binary<D, D>([](T x, T y) { return T(x - y); });
      if constexpr (INT && OWN) return binary<D, D>([](T x, T y) { return wsub(x, y); });
      break;
    case OpMultiply:
      if constexpr (F && !A16) return binary<D, D>([](T x, T y) { return T(x * y); });
      if constexpr (INT && OWN) return binary<D, D>([](T x, T y) { return wmul(x, y); });
      break;
    case OpDivide:  // (divide computes integers in float32)
      if constexpr (F && !A16) return binary<D, D>([](T x, T y) { return T(x / y); });
      break;
    case OpMaximum:
      if constexpr (F && !A16) return binary<D, D>([](T x, T y) { return x != x ? x : x > y ? x : y; });
      if constexpr (INT) return binary<D, D>([](T x, T y) { return x > y ? x : y; });
      break;
    case OpMinimum:
      if constexpr (F && !A16) return binary<D, D>([](T x, T y) { return x != x ? x : x < y ? x : y; });
      if constexpr (INT) return binary<D, D>([](T x, T y) { return x < y ? x : y; });
      break;
    case OpNegative:
      if constexpr (F && !A16) return unary<D, D>([](T x) { return T(-x); });
      if constexpr (INT && OWN) return unary<D, D>([](T x) { return wneg(x); });
      break;
    case OpAbs:  // (abs returns unsigned arrays as they are)
      if constexpr (F && !A16) return unary<D, D>([](T x) { return T(std::fabs(x)); });
      if constexpr (INT && S) return unary<D, D>([](T x) { return iabs(x); });
      break;
    case OpSquare:
      if constexpr (F && !A16) return unary<D, D>([](T x) { return T(x * x); });
      if constexpr (INT && OWN) return unary<D, D>([](T x) { return wmul(x, x); });
      break;
    case OpSign:
      if constexpr (F && !A16) return unary<D, D>([](T x) { return T(x > 0 ? 1 : x < 0 ? -1 : 0); });
      if constexpr (INT && S) return unary<D, D>([](T x) { return T(x > 0 ? 1 : x < 0 ? -1 : 0); });
      if constexpr (INT && !S) return unary<D, D>([](T x) { return T(x > 0 ? 1 : 0); });
      break;
    case OpSqrt:
      if constexpr (F && !A16) return unary<D, D>([](T x) { return T(std::sqrt(x)); });
      break;
    // (floor, ceil and round return integer arrays as they are)
    case OpFloor:
      if constexpr (F && !A16) return unary<D, D>([](T x) { return T(std::floor(x)); });
      break;
    case OpCeil:
      if constexpr (F && !A16) return unary<D, D>([](T x) { return T(std::ceil(x)); });
      break;
    case OpRound:
      if constexpr (F && !A16) return unary<D, D>([](T x) { return T(std::nearbyint(x)); });
      break;
    case OpFloorDivide:  // (floor_divide of floats is floor(divide))
      if constexpr (INT) return binary<D, D>(FloorDivide{});
      break;
    case OpRemainder:
      if constexpr (INT) return binary<D, D>(FloorMod{});
      break;
    case OpDivModQuotient:
      if constexpr (INT) return binary<D, D>(FloorDivide{});
      // the quotient as the dtype holds it, then floored (one that underflows is ±0, not ±tiny)
      if constexpr (F) return VIAD2_EXPR(std::floor(to_d<D>(from_d<D>(x / y))));
      break;
    case OpDivModRemainder:
      if constexpr (INT) return binary<D, D>(FloorMod{});
      if constexpr (F) return math_via_double<D>(OpRemainder);
      break;
    case OpPower:
      if constexpr (INT) return binary<D, D>([](T x, T y) { return ipow(x, y); });
      break;
    case OpBitwiseAnd:
      if constexpr (INT && OWN) return binary<D, D>([](T x, T y) { return T(x & y); });
      break;
    case OpBitwiseOr:
      if constexpr (INT && OWN) return binary<D, D>([](T x, T y) { return T(x | y); });
      break;
    case OpBitwiseXor:
      if constexpr (INT && OWN) return binary<D, D>([](T x, T y) { return T(x ^ y); });
      break;
    case OpBitwiseInvert:
      if constexpr (INT && OWN) return unary<D, D>([](T x) { return T(~x); });
      break;
    case OpLeftShift:
      if constexpr (I && OWN) return binary<D, D>([](T x, T y) { return ishl32(x, y); });
      if constexpr (D == I64) return binary<D, D>([](T x, T y) { return sshl64(x, y); });
      break;
    case OpRightShift:
      if constexpr (I) return binary<D, D>([](T x, T y) { return ishr32(x, y); });
      if constexpr (D == I64) return binary<D, D>([](T x, T y) { return sshr64(x, y); });
      if constexpr (D == U64) return binary<D, D>([](T x, T y) { return ushr64(x, y); });
      break;
    default:
      break;
  }

  // float32-represented dtypes: vectorised math with documented error
  if constexpr (F32R && !A16) {
    switch (op) {
      case OpExp: return vunary([](vf x) { return vexp(x); });
      case OpLog: return vunary([](vf x) { return vlog(x); });
      case OpTanh: return vunary([](vf x) { return vtanh(x); });
      case OpSigmoid: return vunary([](vf x) { return vsigmoid(x); });
      case OpErf: return vunary([](vf x) { return verf(x); });
      default: break;
    }
  }

  // everything else through double, as the reference computes it. Integer operands never get here:
  // the ops compute the float functions of integers in float32 (at_least_float), and conjugate,
  // real, imag, floor, ceil and round return real or integer arrays without a kernel.
  if constexpr (F) return math_via_double<D>(op);
  return nullptr;
}

#if !MG_VECTOR_ONLY
// bool: the reference reads 0/1 numbers, applies its number rule and stores "nonzero"
static KernelFn bool_kernel(int op, int out) {
  constexpr int D = Bool;
  if (op == OpSelect) return out == Bool ? &k_select<Bool> : nullptr;
  if (op >= OpEqual && op <= OpLessEqual) return real_kernel<U8>(op == OpEqualNan ? OpEqual : op, out);
  if (op == OpLogicalNot || op == OpLogicalAnd || op == OpLogicalOr) return real_kernel<U8>(op, out);
  if (out != Bool) return nullptr;
  // (abs, sign, floor, ceil, round, conjugate, real return bool arrays as they are, imag gives
  // zeros, negative is an error, bitwise_invert is logical_not, shifts and divide compute bool in
  // uint8 and float32: none reaches a bool kernel)
  switch (op) {
    case OpSquare: return unary<Bool, Bool>(Same{});
    case OpAdd: case OpMaximum: case OpBitwiseOr:
      return binary<Bool, Bool>([](uint8_t x, uint8_t y) { return uint8_t(x | y); });
    case OpSubtract: case OpBitwiseXor:
      return binary<Bool, Bool>([](uint8_t x, uint8_t y) { return uint8_t(x ^ y); });
    case OpMultiply: case OpMinimum: case OpBitwiseAnd:
      return binary<Bool, Bool>([](uint8_t x, uint8_t y) { return uint8_t(x & y); });
    default: break;
  }
  switch (op) {
    // bool is an integer type: x // 0 = 0, x % 0 = x
    case OpRemainder: case OpDivModRemainder:
      return binary<Bool, Bool>([](uint8_t x, uint8_t y) { return y ? uint8_t(0) : x; });
    case OpFloorDivide: case OpDivModQuotient:
      return binary<Bool, Bool>([](uint8_t x, uint8_t y) { return y ? x : uint8_t(0); });
    case OpPower: return VIAD2(OpPower);
    default: return nullptr;
  }
}

#endif

// Ops whose kernel for float16/bfloat16 (float32 values; the interpreter rounds to the grid after
// every instruction) is the float32 kernel itself: those dtypes take float32's instance (real_kernel
// leaves them out for A16 dtypes; this list and those guards must agree).
static inline bool f32_kernel_serves_16bit(int op) {
  switch (op) {
    case OpAdd: case OpSubtract: case OpMultiply: case OpDivide: case OpMaximum: case OpMinimum:
    case OpNegative: case OpAbs: case OpSquare: case OpSign: case OpSqrt: case OpFloor: case OpCeil:
    case OpRound: case OpSelect: case OpExp: case OpLog: case OpTanh: case OpSigmoid: case OpErf:
      return true;
    default:
      return op >= OpEqual && op <= OpLessEqual;
  }
}
template <int D> static KernelFn kernel_for(int op, int out) {
  if (op == OpCast) return cast_from<D>(out);
  if constexpr (D == F16 || D == BF16) {
    if (f32_kernel_serves_16bit(op)) return real_kernel<F32>(op, out == D ? F32 : out);
  }
#if MG_VECTOR_ONLY
  // This table leaves bool and complex64 kernels to the baseline one (nullptr: the caller asks it):
  // byte logic and scalar double math that wider vectors do not measurably speed up
  // (bench/cpu-kernels.bench.ts) — the same source, so the same bits.
  if constexpr (D == Bool || D == C64) return nullptr;
  else return real_kernel<D>(op, out);
#else
  if constexpr (D == Bool) return bool_kernel(op, out);
  else if constexpr (D == C64) return complex_kernel(op, out);
  else return real_kernel<D>(op, out);
#endif
}

// MG_KERNEL_DTYPES(X) limits this unit's table to some dtypes (a unit compiling the others in
// parallel serves the rest; isa_avx2.cpp); every dtype by default.
#ifndef MG_KERNEL_DTYPES
#define MG_KERNEL_DTYPES MG_EACH_DTYPE
#endif
static KernelFn kernel_impl(int op, int dtype, int out) {
  switch (dtype) {
#define MG_KERNEL_FOR(D) \
  case D: return kernel_for<D>(op, out);
    MG_KERNEL_DTYPES(MG_KERNEL_FOR)
#undef MG_KERNEL_FOR
    default: return nullptr;
  }
}

// ---- loads and stores -------------------------------------------------------------------------------

template <class T> static void copy_strided(T *dst, const T *src, int64_t stride, int64_t n) {
  if (stride == 1) {
    __builtin_memcpy(dst, src, size_t(n) * sizeof(T));
  } else if (stride == 0) {
    T v = src[0];
    for (int64_t i = 0; i < n; i++) dst[i] = v;
  } else {
    for (int64_t i = 0; i < n; i++) dst[i] = src[i * stride];
  }
}

// storage → repr (16-bit floats widen to float32), strided source
static void load_impl(void *dst, const void *src, int dtype, int64_t stride, int64_t n) {
  if (dtype == F16) {
    const uint16_t *s = static_cast<const uint16_t *>(src);
    float *d = static_cast<float *>(dst);
#if MG_F16C
    if (stride == 1) {
      int64_t i = 0;
      for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i))));
      for (; i < n; i++) d[i] = f16_to_f32(s[i]);
      return;
    }
#endif
    for (int64_t i = 0; i < n; i++) d[i] = f16_to_f32(s[i * stride]);
    return;
  }
  if (dtype == BF16) {
    const uint16_t *s = static_cast<const uint16_t *>(src);
    float *d = static_cast<float *>(dst);
    for (int64_t i = 0; i < n; i++) d[i] = bf16_to_f32(s[i * stride]);
    return;
  }
  switch (dtype_size(dtype)) {
    case 1: copy_strided(static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), stride, n); break;
    case 2: copy_strided(static_cast<uint16_t *>(dst), static_cast<const uint16_t *>(src), stride, n); break;
    case 4: copy_strided(static_cast<uint32_t *>(dst), static_cast<const uint32_t *>(src), stride, n); break;
    default: copy_strided(static_cast<uint64_t *>(dst), static_cast<const uint64_t *>(src), stride, n); break;
  }
}

// repr → storage, contiguous (16-bit values are on their grid already: the conversion is exact)
static void store_impl(void *dst, const void *src, int dtype, int64_t n) {
  if (dtype == F16) {
    const float *s = static_cast<const float *>(src);
    uint16_t *d = static_cast<uint16_t *>(dst);
    int64_t i = 0;
#if MG_F16C
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i *>(d + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
#endif
    for (; i < n; i++) d[i] = f32_to_f16(s[i]);
    return;
  }
  if (dtype == BF16) {
    const float *s = static_cast<const float *>(src);
    uint16_t *d = static_cast<uint16_t *>(dst);
    for (int64_t i = 0; i < n; i++) d[i] = f32_to_bf16(s[i]);
    return;
  }
  __builtin_memcpy(dst, src, size_t(n) * size_t(dtype_size(dtype)));
}

// ---- reductions -------------------------------------------------------------------------------------
// Accumulators (ACC_DOUBLES doubles of room each): float dtypes accumulate sums/products in double, max/min in double (exact);
// integers sum/multiply modulo 2^64 (then wrap to the dtype, as the reference's wraparound),
// max/min in int64/uint64; and/or in a byte; complex64 as two doubles (+ a "seen" flag for max/min).

enum ReduceType { RSum = 0, RProd = 1, RMax = 2, RMin = 3, RAnd = 4, ROr = 5 };

// Sums of float32 runs: 16 double lanes (4 vectors), element i into lane i mod 16; the lanes are
// combined pairwise at the end. Chunks are multiples of 16, so the order is fixed by the run.
struct SumLanes {
  vd a0, a1, a2, a3;
};

static inline void sum_f32_block(SumLanes &s, const float *x, int64_t n16) {
  vd a0 = s.a0, a1 = s.a1, a2 = s.a2, a3 = s.a3;
  for (int64_t i = 0; i < n16; i += 16) {
    vf v0 = vf_load(x + i), v1 = vf_load(x + i + 8);
    a0 += __builtin_convertvector(__builtin_shufflevector(v0, v0, 0, 1, 2, 3), vd);
    a1 += __builtin_convertvector(__builtin_shufflevector(v0, v0, 4, 5, 6, 7), vd);
    a2 += __builtin_convertvector(__builtin_shufflevector(v1, v1, 0, 1, 2, 3), vd);
    a3 += __builtin_convertvector(__builtin_shufflevector(v1, v1, 4, 5, 6, 7), vd);
  }
  s.a0 = a0, s.a1 = a1, s.a2 = a2, s.a3 = a3;
}

static inline double sum_lanes_total(const SumLanes &s) {
  vd t = (s.a0 + s.a1) + (s.a2 + s.a3);
  return (t[0] + t[1]) + (t[2] + t[3]);
}

static inline double fmax_nan(double a, double v) {
  if (a != a) return a;
  return (v != v || v > a) ? v : a;
}
static inline double fmin_nan(double a, double v) {
  if (a != a) return a;
  return (v != v || v < a) ? v : a;
}

// max/min of float32 runs: 8-lane float vectors with NaN propagation
static inline vf vmax_nan(vf a, vf v) {
  vf r = vf_select(v > a, v, a);
  r = vf_select(vf_isnan(v), v, r);
  return vf_select(vf_isnan(a), a, r);
}
static inline vf vmin_nan(vf a, vf v) {
  vf r = vf_select(v < a, v, a);
  r = vf_select(vf_isnan(v), v, r);
  return vf_select(vf_isnan(a), a, r);
}

constexpr int64_t RCHUNK = 1024;  // strided runs are gathered in chunks of this many elements

// (noinline: one function per dtype; inlined, the fourteen made reduce_run_impl one huge function
// that took the optimiser superlinear time)
template <int D>
[[gnu::noinline]] static void reduce_run_t(int type, const char *src, int64_t stride, int64_t n, void *accp) {
  using T = R<D>;
  alignas(64) T buf[RCHUNK];
  if constexpr (kF32R(D)) {
    // gather into float32 (widening 16-bit) and combine
    if (type == RSum) {
      SumLanes s{vd_splat(0), vd_splat(0), vd_splat(0), vd_splat(0)};
      for (int64_t i0 = 0; i0 < n; i0 += RCHUNK) {
        int64_t m = std::min(RCHUNK, n - i0);
        const float *x;
        if (D == F32 && stride == 1) x = reinterpret_cast<const float *>(src) + i0;
        else {
          load_impl(buf, src + i0 * stride * dtype_size(D), D, stride, m);
          x = buf;
        }
        int64_t m16 = m & ~int64_t(15);
        sum_f32_block(s, x, m16);
        if (m16 < m) {  // only the last chunk can have a tail
          SumLanes t{vd_splat(0), vd_splat(0), vd_splat(0), vd_splat(0)};
          alignas(32) float pad[16] = {0};
          for (int64_t j = m16; j < m; j++) pad[j - m16] = x[j];
          sum_f32_block(t, pad, 16);
          s.a0 += t.a0, s.a1 += t.a1, s.a2 += t.a2, s.a3 += t.a3;
        }
      }
      *static_cast<double *>(accp) += sum_lanes_total(s);
      return;
    }
    if (type == RMax || type == RMin) {
      const float init = type == RMax ? -__builtin_inff() : __builtin_inff();
      vf acc = vf_splat(init);
      for (int64_t i0 = 0; i0 < n; i0 += RCHUNK) {
        int64_t m = std::min(RCHUNK, n - i0);
        const float *x;
        if (D == F32 && stride == 1) x = reinterpret_cast<const float *>(src) + i0;
        else {
          load_impl(buf, src + i0 * stride * dtype_size(D), D, stride, m);
          x = buf;
        }
        int64_t j = 0;
        for (; j + VF <= m; j += VF) acc = type == RMax ? vmax_nan(acc, vf_load(x + j)) : vmin_nan(acc, vf_load(x + j));
        for (; j < m; j++) {
          vf v = vf_splat(x[j]);
          acc = type == RMax ? vmax_nan(acc, v) : vmin_nan(acc, v);
        }
      }
      double *a = static_cast<double *>(accp);
      for (int l = 0; l < VF; l++) *a = type == RMax ? fmax_nan(*a, double(acc[l])) : fmin_nan(*a, double(acc[l]));
      return;
    }
  }
  // generic: sequential per chunk
  for (int64_t i0 = 0; i0 < n; i0 += RCHUNK) {
    int64_t m = std::min(RCHUNK, n - i0);
    load_impl(buf, src + i0 * stride * dtype_size(D), D, stride, m);
    if constexpr (D == C64) {
      double *a = static_cast<double *>(accp);
      for (int64_t j = 0; j < m; j++) {
        double re = buf[j].re, im = buf[j].im;
        switch (type) {
          case RSum: a[0] += re; a[1] += im; break;
          case RProd: {
            double r = a[0] * re - a[1] * im;
            a[1] = a[0] * im + a[1] * re;
            a[0] = r;
            break;
          }
          case RAnd: if (re == 0 && im == 0) a[0] = 0; break;
          case ROr: if (re != 0 || im != 0) a[0] = 1; break;
          default: {
            // max/min, lexicographic (real part first); the first NaN wins; a[2] = seen
            if (a[2] != 0) {
              double cr = a[0], ci = a[1];
              if (cr != cr || ci != ci) break;
              bool nan = re != re || im != im;
              bool better = type == RMax ? (re > cr || (re == cr && im > ci)) : (re < cr || (re == cr && im < ci));
              if (!nan && !better) break;
            }
            a[0] = re;
            a[1] = im;
            a[2] = 1;
          }
        }
      }
    } else if constexpr (kFloat(D)) {
      double *a = static_cast<double *>(accp);
      double v = *a;
      switch (type) {
        case RSum: for (int64_t j = 0; j < m; j++) v += double(buf[j]); break;
        case RProd: for (int64_t j = 0; j < m; j++) v *= double(buf[j]); break;
        case RMax: for (int64_t j = 0; j < m; j++) v = fmax_nan(v, double(buf[j])); break;
        case RMin: for (int64_t j = 0; j < m; j++) v = fmin_nan(v, double(buf[j])); break;
        case RAnd: for (int64_t j = 0; j < m; j++) if (buf[j] == 0) v = 0; break;
        case ROr: for (int64_t j = 0; j < m; j++) if (buf[j] != 0) v = 1; break;
        default: break;
      }
      *a = v;
    } else {
      // integers and bool: sums/products modulo 2^64; max/min as signed or unsigned 64-bit
      switch (type) {
        case RSum: {
          uint64_t v;
          __builtin_memcpy(&v, accp, 8);
          for (int64_t j = 0; j < m; j++) v += uint64_t(int64_t(buf[j]));
          __builtin_memcpy(accp, &v, 8);
          break;
        }
        case RProd: {
          uint64_t v;
          __builtin_memcpy(&v, accp, 8);
          for (int64_t j = 0; j < m; j++) v *= uint64_t(int64_t(buf[j]));
          __builtin_memcpy(accp, &v, 8);
          break;
        }
        case RMax:
        case RMin:
          if constexpr (std::is_signed_v<T>) {
            int64_t v;
            __builtin_memcpy(&v, accp, 8);
            if (type == RMax) for (int64_t j = 0; j < m; j++) v = std::max<int64_t>(v, buf[j]);
            else for (int64_t j = 0; j < m; j++) v = std::min<int64_t>(v, buf[j]);
            __builtin_memcpy(accp, &v, 8);
          } else {
            uint64_t v;
            __builtin_memcpy(&v, accp, 8);
            if (type == RMax) for (int64_t j = 0; j < m; j++) v = std::max<uint64_t>(v, buf[j]);
            else for (int64_t j = 0; j < m; j++) v = std::min<uint64_t>(v, buf[j]);
            __builtin_memcpy(accp, &v, 8);
          }
          break;
        case RAnd: {
          uint8_t v;
          __builtin_memcpy(&v, accp, 1);
          for (int64_t j = 0; j < m; j++) v = uint8_t(v & (buf[j] != 0));
          __builtin_memcpy(accp, &v, 1);
          break;
        }
        case ROr: {
          uint8_t v;
          __builtin_memcpy(&v, accp, 1);
          for (int64_t j = 0; j < m; j++) v = uint8_t(v | (buf[j] != 0));
          __builtin_memcpy(accp, &v, 1);
          break;
        }
        default: break;
      }
    }
  }
}

static void reduce_run_impl(int type, int dtype, const void *src, int64_t stride, int64_t n, void *acc) {
  const char *s = static_cast<const char *>(src);
  switch (dtype) {
#define MG_REDUCE_RUN(D) \
  case D: reduce_run_t<D>(type, s, stride, n, acc); break;
    MG_EACH_DTYPE(MG_REDUCE_RUN)
#undef MG_REDUCE_RUN
    default: break;
  }
}

// acc[j] (ACC_DOUBLES apart) op= row[j] for a contiguous row: column reductions. Only the common
// float cases are vectorised; the rest go element by element through reduce_run.
static void reduce_rows_impl(int type, int dtype, void *accp, const void *src, int64_t n) {
  double *acc = static_cast<double *>(accp);
  if (dtype == F32 && (type == RSum || type == RMax || type == RMin)) {
    const float *x = static_cast<const float *>(src);
    if (type == RSum) for (int64_t j = 0; j < n; j++) acc[ACC_DOUBLES * j] += double(x[j]);
    else if (type == RMax) for (int64_t j = 0; j < n; j++) acc[ACC_DOUBLES * j] = fmax_nan(acc[ACC_DOUBLES * j], double(x[j]));
    else for (int64_t j = 0; j < n; j++) acc[ACC_DOUBLES * j] = fmin_nan(acc[ACC_DOUBLES * j], double(x[j]));
    return;
  }
  if (dtype == F64 && type == RSum) {
    const double *x = static_cast<const double *>(src);
    for (int64_t j = 0; j < n; j++) acc[ACC_DOUBLES * j] += x[j];
    return;
  }
  // the dtype chosen once, not per element
  const char *s = static_cast<const char *>(src);
  const int64_t size = dtype_size(dtype);
  switch (dtype) {
#define MG_REDUCE_ROW(D) \
  case D: for (int64_t j = 0; j < n; j++) reduce_run_t<D>(type, s + j * size, 1, 1, acc + ACC_DOUBLES * j); break;
    MG_EACH_DTYPE(MG_REDUCE_ROW)
#undef MG_REDUCE_ROW
    default: break;
  }
}

// ---- softmax -------------------------------------------------------------------------------------------

// One row, float32: max (NaN → NaN), e = exp(x − max), sum in double lanes, e / sum.
static void softmax_row_f32(const float *x, float *y, int64_t n, int log_sum_exp) {
  vf m = vf_splat(-__builtin_inff());
  int64_t i = 0;
  for (; i + VF <= n; i += VF) m = vmax_nan(m, vf_load(x + i));
  for (; i < n; i++) m = vmax_nan(m, vf_splat(x[i]));
  double mx = -__builtin_inf();
  for (int l = 0; l < VF; l++) mx = fmax_nan(mx, double(m[l]));
  if (log_sum_exp && (mx != mx || std::isinf(mx))) {
    y[0] = float(mx);
    return;
  }
  const vf mv = vf_splat(float(mx));
  vf s0 = vf_splat(0), s1 = vf_splat(0);
  i = 0;
  if (log_sum_exp) {
    for (; i + 2 * VF <= n; i += 2 * VF) {
      s0 += vexp(vf_load(x + i) - mv);
      s1 += vexp(vf_load(x + i + VF) - mv);
    }
  } else {
    for (; i + 2 * VF <= n; i += 2 * VF) {
      vf e0 = vexp(vf_load(x + i) - mv), e1 = vexp(vf_load(x + i + VF) - mv);
      vf_store(y + i, e0);
      vf_store(y + i + VF, e1);
      s0 += e0;
      s1 += e1;
    }
  }
  if (i < n) {
    alignas(32) float pad[2 * VF];
    for (int l = 0; l < 2 * VF; l++) pad[l] = i + l < n ? x[i + l] : -__builtin_inff();
    vf e0 = vexp(vf_load(pad) - mv), e1 = vexp(vf_load(pad + VF) - mv);
    if (!log_sum_exp)
      for (int64_t l = 0; i + l < n; l++) y[i + l] = l < VF ? e0[l] : e1[l - VF];
    s0 += e0;
    s1 += e1;
  }
  vf s = s0 + s1;
  double total = ((double(s[0]) + double(s[1])) + (double(s[2]) + double(s[3]))) +
                 ((double(s[4]) + double(s[5])) + (double(s[6]) + double(s[7])));
  if (log_sum_exp) {
    y[0] = float(mx + std::log(total));
    return;
  }
  const vf z = vf_splat(float(total));
  i = 0;
  for (; i + VF <= n; i += VF) vf_store(y + i, vf_load(y + i) / z);
  for (; i < n; i++) y[i] = y[i] / float(total);
}

static void softmax_row_f64(const double *x, double *y, int64_t n, int log_sum_exp) {
  double m = -__builtin_inf();
  for (int64_t i = 0; i < n; i++) m = fmax_nan(m, x[i]);
  if (log_sum_exp) {
    if (m != m || std::isinf(m)) { y[0] = m; return; }
    double z = 0;
    for (int64_t i = 0; i < n; i++) z += std::exp(x[i] - m);
    y[0] = m + std::log(z);
    return;
  }
  double z = 0;
  for (int64_t i = 0; i < n; i++) z += (y[i] = std::exp(x[i] - m));
  for (int64_t i = 0; i < n; i++) y[i] /= z;
}

// y = exp(x − shift), contiguous float32 (in place allowed); the sum as softmax_row_f32 takes it.
static double exp_row_f32_impl(const float *x, float *y, int64_t n, float shift) {
  const vf mv = vf_splat(shift);
  vf s0 = vf_splat(0), s1 = vf_splat(0);
  int64_t i = 0;
  for (; i + 2 * VF <= n; i += 2 * VF) {
    vf e0 = vexp(vf_load(x + i) - mv), e1 = vexp(vf_load(x + i + VF) - mv);
    vf_store(y + i, e0);
    vf_store(y + i + VF, e1);
    s0 += e0;
    s1 += e1;
  }
  if (i < n) {
    alignas(32) float pad[2 * VF];
    for (int l = 0; l < 2 * VF; l++) pad[l] = i + l < n ? x[i + l] : -__builtin_inff();
    vf e0 = vexp(vf_load(pad) - mv), e1 = vexp(vf_load(pad + VF) - mv);
    for (int64_t l = 0; i + l < n; l++) y[i + l] = l < VF ? e0[l] : e1[l - VF];
    s0 += e0;
    s1 += e1;
  }
  vf s = s0 + s1;
  double total = 0;
  for (int l = 0; l < VF; l++) total += double(s[l]);
  return total;
}

static void softmax_row_impl(int dtype, const void *src, void *dst, int64_t n, int lse) {
  if (dtype == F64) softmax_row_f64(static_cast<const double *>(src), static_cast<double *>(dst), n, lse);
  else softmax_row_f32(static_cast<const float *>(src), static_cast<float *>(dst), n, lse);
}

// ---- GEMM micro-kernels ----------------------------------------------------------------------------------
// C[MR×NR] (+)= Σ_p A[p][0..MR) ⊗ B[p][0..NR): packed panels (A column-major in MR, B row-major in
// NR), accumulators held in registers. Each C element sums its k products in order, one rounding
// (or FMA) per step, so the result never depends on how the driver splits M and N.

template <int MR, int NV>
static void gemm_ukernel_f32(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int accumulate) {
  vf acc[MR][NV];
  for (int i = 0; i < MR; i++)
    for (int v = 0; v < NV; v++) acc[i][v] = vf_splat(0);
  for (int64_t p = 0; p < k; p++) {
    vf bv[NV];
    for (int v = 0; v < NV; v++) bv[v] = vf_load(b + p * NV * VF + v * VF);
    for (int i = 0; i < MR; i++) {
      vf av = vf_splat(a[p * MR + i]);
      for (int v = 0; v < NV; v++) acc[i][v] = madd(av, bv[v], acc[i][v]);
    }
  }
  for (int i = 0; i < MR; i++)
    for (int v = 0; v < NV; v++) {
      float *cp = c + i * ldc + v * VF;
      vf_store(cp, accumulate ? vf_load(cp) + acc[i][v] : acc[i][v]);
    }
}

template <int MR, int NV>
static void gemm_ukernel_f64(int64_t k, const double *a, const double *b, double *c, int64_t ldc, int accumulate) {
  vd acc[MR][NV];
  for (int i = 0; i < MR; i++)
    for (int v = 0; v < NV; v++) acc[i][v] = vd_splat(0);
  for (int64_t p = 0; p < k; p++) {
    vd bv[NV];
    for (int v = 0; v < NV; v++) bv[v] = vd_load(b + p * NV * VD + v * VD);
    for (int i = 0; i < MR; i++) {
      vd av = vd_splat(a[p * MR + i]);
      for (int v = 0; v < NV; v++) acc[i][v] = madd(av, bv[v], acc[i][v]);
    }
  }
  for (int i = 0; i < MR; i++)
    for (int v = 0; v < NV; v++) {
      double *cp = c + i * ldc + v * VD;
      vd_store(cp, accumulate ? vd_load(cp) + acc[i][v] : acc[i][v]);
    }
}

// ---- random bits: Threefry-2x32, 20 rounds (ts/random/threefry.ts, MLX's RandomBits layout) -----------

static inline void threefry8(uint32_t k0, uint32_t k1, vu &x, vu &y) {
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1bd11bdau};
  static constexpr int ROT[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  x += ks[0];
  y += ks[1];
  for (int i = 0; i < 5; i++) {
    for (int j = 0; j < 4; j++) {
      const int r = ROT[i % 2][j];
      x += y;
      y = (y << r) | (y >> (32 - r));
      y ^= x;
    }
    x += ks[(i + 1) % 3];
    y += ks[(i + 2) % 3] + uint32_t(i + 1);
  }
}

// Words [i0, i1) and [i0 + shift, i1 + shift) of a key's stream: counter pairs (i, i + shift) for
// i < half (first and second outputs); with an odd word count the middle word `half` is the first
// output of (half, 0). `put(word index, value)` stores each word.
template <class Put>
static void random_words_impl(uint32_t k0, uint32_t k1, int64_t half, bool odd, int64_t i0, int64_t i1, Put put) {
  const uint32_t shift = uint32_t(half + (odd ? 1 : 0));
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8) {
    const uint32_t b = uint32_t(i);
    vu x = vu{b, b + 1, b + 2, b + 3, b + 4, b + 5, b + 6, b + 7};
    vu y = x + shift;
    threefry8(k0, k1, x, y);
    for (int l = 0; l < 8; l++) {
      put(i + l, x[l]);
      put(i + l + shift, y[l]);
    }
  }
  for (; i < i1; i++) {
    vu x = vu{uint32_t(i), 0, 0, 0, 0, 0, 0, 0}, y = vu{uint32_t(i) + shift, 0, 0, 0, 0, 0, 0, 0};
    threefry8(k0, k1, x, y);
    put(i, x[0]);
    put(i + shift, y[0]);
  }
  if (odd && i0 == 0) {
    vu x = vu{uint32_t(half), 0, 0, 0, 0, 0, 0, 0}, y = vu{0, 0, 0, 0, 0, 0, 0, 0};
    threefry8(k0, k1, x, y);
    put(half, x[0]);
  }
}

// Writes bytes [0, bytes) of the stream of key (k0, k1) whose pairs i lie in [i0, i1).
static void random_bits_impl(uint32_t k0, uint32_t k1, int64_t bytes, int64_t i0, int64_t i1, uint8_t *out) {
  const int64_t words = (bytes + 3) / 4;
  const int64_t half = words / 2;
  const bool odd = (words % 2) == 1;
  random_words_impl(k0, k1, half, odd, i0, i1, [&](int64_t w, uint32_t v) {
    const int64_t at = 4 * w;
    if (at + 4 <= bytes) {
      __builtin_memcpy(out + at, &v, 4);
    } else {
      for (int64_t b = at; b < bytes; b++) out[b] = uint8_t(v >> (8 * (b - at)));  // little-endian tail
    }
  });
}
