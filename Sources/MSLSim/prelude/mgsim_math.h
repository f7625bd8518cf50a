// mgsim_math.h — the metal:: math library (metal_math, metal_common, metal_integer,
// metal_relational, metal_geometric) over scalars and vectors, plus metal::precise:: and
// metal::fast::, which here are the same precise functions.
//
// Every function is a template: unqualified calls in MSL code (after `using namespace metal;`) then
// never become ambiguous with the C library's double functions (a non-template ::floor(double)
// only wins for a double argument, and computes the same value). Do not include the C++ wrapper
// headers <math.h>/<stdlib.h> before the prelude: they inject std:: templates for integer and mixed
// arguments into the global namespace, and pow(x, 2) or floor(i) then become ambiguous. <cmath>
// and <cstdlib> are fine.
//
// Precision: float, half and bfloat functions compute in double and round once to the argument
// type, so results are correctly rounded except in rare double-rounding cases; special values follow
// IEEE 754 (exp(-inf) == 0, log(0) == -inf, sqrt(-1) is NaN, ...). Argument types follow MSL's
// usual conversions: a float with an integer literal computes in float, half with an integer in
// half, a vector with a scalar broadcasts the scalar; integer scalars given to float functions
// compute in float.
//
// Not in MSL, so not here: erf/erfinv, expm1, log1p, lgamma, a floating-point mad (MLX defines its own
// erf/expm1/log1p; these names stay free for kernel code). metal::fast:: and metal::precise:: are the
// same precise functions. half/bfloat versions of the math functions are templates, so a kernel
// header that defines its own (as MLX's bf16_math.h does for bfloat) takes precedence instead of
// clashing.
#ifndef MGSIM_MATH_H
#define MGSIM_MATH_H

#include <cfloat>
#include <climits>

#include "mgsim_types.h"

// Inlined even at -O1 (work-item units): a call would cost as much as the function.
#define MGSIM_MATH_INL inline __attribute__((always_inline))

namespace mgsim {
namespace lang {
namespace math {

// --- argument shapes: elem E and N components (0 = scalar); combined pairwise like operators ---
template <class E, int N>
struct shp {
  using elem = E;
  static constexpr int n = N;
};
template <class X>
using shape_of = shp<std::conditional_t<(vsize_v<X> > 0), velem_t<X>, value_t<X>>, vsize_v<X>>;

template <class S1, class S2, class = void>
struct combine {};
template <class E, int N>
struct combine<shp<E, N>, shp<E, N>, std::enable_if_t<(N > 0)>> {
  using type = shp<E, N>;
};
template <class E, int N, class S>
struct combine<shp<E, N>, shp<S, 0>, std::enable_if_t<(N > 0) && scalar_fits(kind_v<S>, kind_v<E>)>> {
  using type = shp<E, N>;
};
template <class S, class E, int N>
struct combine<shp<S, 0>, shp<E, N>, std::enable_if_t<(N > 0) && scalar_fits(kind_v<S>, kind_v<E>)>> {
  using type = shp<E, N>;
};
template <class A, class B>
struct combine<shp<A, 0>, shp<B, 0>, std::enable_if_t<has_type<scalar_common<A, B>>::value>> {
  using type = shp<typename scalar_common<A, B>::type, 0>;
};

template <class Enable, class... S>
struct fold {};
template <class S>
struct fold<void, S> {
  using type = S;
};
template <class S1, class S2, class... R>
struct fold<std::void_t<typename combine<S1, S2>::type>, S1, S2, R...>
    : fold<void, typename combine<S1, S2>::type, R...> {};

// Function families: which element kinds they take, and what an integer scalar becomes.
enum fam {
  f_float,  // float/half/bfloat (integer or double scalars compute in float)
  f_any,    // any numeric element (abs, min, max, clamp, ...)
  f_int,    // integer elements only
  f_sel,    // anything incl. bool (select)
  f_geo     // float/half/bfloat vectors only (geometric functions)
};
constexpr bool fam_ok(int fam, int k, int n) {
  return k != 0 && (fam == f_float   ? (k >= 3 || n == 0)
                    : fam == f_any   ? k >= 2
                    : fam == f_int   ? k == 2
                    : fam == f_sel   ? true
                                     : (k >= 3 && n > 0));
}
template <int Fam, class E>
using compute_elem =
    std::conditional_t<std::is_same<E, double>::value || (Fam == f_float && kind_v<E> <= 2), float, E>;

template <int Fam, class Sh, class = void>
struct finish {};
template <int Fam, class E, int N>
struct finish<Fam, shp<E, N>, std::enable_if_t<fam_ok(Fam, kind_v<E>, N)>> {
  using elem = compute_elem<Fam, E>;
  static constexpr int n = N;
  using type = std::conditional_t<(N > 0), vec<elem, N>, elem>;
  using bools = std::conditional_t<(N > 0), vec<bool, N>, bool>;
  using ints = std::conditional_t<(N > 0), vec<int, N>, int>;
};
template <int Fam, class Enable, class... X>
struct mres_impl {};
template <int Fam, class... X>
struct mres_impl<Fam, std::void_t<typename fold<void, shape_of<X>...>::type>, X...>
    : finish<Fam, typename fold<void, shape_of<X>...>::type> {};
template <int Fam, class... X>
using mres = mres_impl<Fam, void, X...>;

// Applies Fn::call<E> element-wise (or once for scalars). RE is the result's element type.
template <class E, int N, class RE, class Fn, class... X>
constexpr auto map_normalized(const X &...x) {
  vec<RE, N> r{};
  for (int i = 0; i < N; ++i) r.mg_e[i] = Fn::template call<E>(component(x, i)...);
  return r;
}
template <class M, class RE, class Fn, class... X>
constexpr auto map(const X &...x) {
  using E = typename M::elem;
  if constexpr (M::n == 0) return RE(Fn::template call<E>(convert<E>(x)...));
  else return map_normalized<E, M::n, RE, Fn>(operand<E, false>(x)...);
}

// --- helpers on element types ---
template <class E>
constexpr E from_double(double d) {
  return static_cast<E>(d);
}
template <class E>
constexpr bool is_nan_e(E x) {
  if constexpr (std::is_same<E, float>::value) return (detail::bits_as<uint32_t>(x) & 0x7fffffffu) > 0x7f800000u;
  else if constexpr (std::is_same<E, half>::value) return (x.mg_bits & 0x7fffu) > 0x7c00u;
  else return (x.mg_bits & 0x7fffu) > 0x7f80u;
}
template <class E>
constexpr bool is_inf_e(E x) {
  if constexpr (std::is_same<E, float>::value) return (detail::bits_as<uint32_t>(x) & 0x7fffffffu) == 0x7f800000u;
  else if constexpr (std::is_same<E, half>::value) return (x.mg_bits & 0x7fffu) == 0x7c00u;
  else return (x.mg_bits & 0x7fffu) == 0x7f80u;
}
template <class E>
constexpr bool sign_bit_e(E x) {
  if constexpr (std::is_same<E, float>::value) return (detail::bits_as<uint32_t>(x) >> 31) != 0;
  else return (x.mg_bits >> 15) != 0;
}
// The largest value below 1 (fract's upper bound).
template <class E>
constexpr E below_one() {
  if constexpr (std::is_same<E, float>::value) return 0x1.fffffep-1f;
  else if constexpr (std::is_same<E, half>::value) return half::mg_from_bits(0x3bffu);
  else return bfloat::mg_from_bits(0x3f7fu);
}

// sin(pi x) and cos(pi x) with exact zeros and ones: reduce x exactly (in double) to [-1/2, 1/2].
inline double sinpi_d(double x) {
  if (x != x || __builtin_isinf(x)) return __builtin_nan("");
  double r = __builtin_fmod(x, 2.0);  // exact, sign of x
  if (r == 0) return 0.0 * x;          // ±0 with the sign of x
  if (r > 1.5) r -= 2.0;
  else if (r < -1.5) r += 2.0;
  else if (r > 0.5) r = 1.0 - r;
  else if (r < -0.5) r = -1.0 - r;
  if (r == 0) return x > 0 ? 0.0 : -0.0;
  return __builtin_sin(3.141592653589793 * r);
}
inline double cospi_d(double x) {
  if (x != x || __builtin_isinf(x)) return __builtin_nan("");
  double r = __builtin_fabs(__builtin_fmod(x, 2.0));  // cos is even
  if (r > 1.0) r = 2.0 - r;                           // [0, 1]
  if (r == 0.5) return 0.0;                           // +0 (IEEE cosPi(n + 1/2))
  if (r < 0.5) return __builtin_cos(3.141592653589793 * r);
  return -__builtin_cos(3.141592653589793 * (1.0 - r));
}
inline double tanpi_d(double x) {
  if (x != x || __builtin_isinf(x)) return __builtin_nan("");
  if (x == 0) return x;
  double r = __builtin_fmod(x, 1.0);  // tan has period pi; sign of x
  if (r == 0) {
    // IEEE tanPi(n): +0 for positive even and negative odd n, -0 otherwise.
    const bool odd = __builtin_fmod(__builtin_fabs(x), 2.0) == 1.0;
    return (x > 0) != odd ? 0.0 : -0.0;
  }
  if (r == 0.5 || r == -0.5) {
    // IEEE tanPi(n + 1/2): +inf for even n, -inf for odd n.
    const double n = x - r;
    const bool odd = __builtin_fmod(__builtin_fabs(n), 2.0) == 1.0;
    return (r > 0) != odd ? __builtin_inf() : -__builtin_inf();
  }
  if (r > 0.5) r -= 1.0;
  else if (r < -0.5) r += 1.0;
  return __builtin_tan(3.141592653589793 * r);
}

// --- exp and exp2 of float without a libm call, bit for bit as float(exp(double(x))) ---
// A libm call per element was half of a softmax's time. For a result in the normal float range,
// exp_tail computes 2^(k/64) · e^r in double (k = round(64·x/ln2), |r| ≤ ln2/128; a table of
// 2^(j/64) and a degree-5 polynomial: within 2 double ulps of the true value, and libm's exp within
// 1) and rounds it to float. Where that double lies within 256 double ulps of a halfway point
// between two floats (about 1 input in 4 million), the libm expression decides instead, so both
// round alike and the result is the one the libm path gives. test/native/prelude/run.sh
// --exhaustive compares all 2^32 floats.
alignas(64) inline constexpr double exp2_64th[64] = {
    0x1.0000000000000p+0, 0x1.02c9a3e778061p+0, 0x1.059b0d3158574p+0, 0x1.0874518759bc8p+0,
    0x1.0b5586cf9890fp+0, 0x1.0e3ec32d3d1a2p+0, 0x1.11301d0125b51p+0, 0x1.1429aaea92de0p+0,
    0x1.172b83c7d517bp+0, 0x1.1a35beb6fcb75p+0, 0x1.1d4873168b9aap+0, 0x1.2063b88628cd6p+0,
    0x1.2387a6e756238p+0, 0x1.26b4565e27cddp+0, 0x1.29e9df51fdee1p+0, 0x1.2d285a6e4030bp+0,
    0x1.306fe0a31b715p+0, 0x1.33c08b26416ffp+0, 0x1.371a7373aa9cbp+0, 0x1.3a7db34e59ff7p+0,
    0x1.3dea64c123422p+0, 0x1.4160a21f72e2ap+0, 0x1.44e086061892dp+0, 0x1.486a2b5c13cd0p+0,
    0x1.4bfdad5362a27p+0, 0x1.4f9b2769d2ca7p+0, 0x1.5342b569d4f82p+0, 0x1.56f4736b527dap+0,
    0x1.5ab07dd485429p+0, 0x1.5e76f15ad2148p+0, 0x1.6247eb03a5585p+0, 0x1.6623882552225p+0,
    0x1.6a09e667f3bcdp+0, 0x1.6dfb23c651a2fp+0, 0x1.71f75e8ec5f74p+0, 0x1.75feb564267c9p+0,
    0x1.7a11473eb0187p+0, 0x1.7e2f336cf4e62p+0, 0x1.82589994cce13p+0, 0x1.868d99b4492edp+0,
    0x1.8ace5422aa0dbp+0, 0x1.8f1ae99157736p+0, 0x1.93737b0cdc5e5p+0, 0x1.97d829fde4e50p+0,
    0x1.9c49182a3f090p+0, 0x1.a0c667b5de565p+0, 0x1.a5503b23e255dp+0, 0x1.a9e6b5579fdbfp+0,
    0x1.ae89f995ad3adp+0, 0x1.b33a2b84f15fbp+0, 0x1.b7f76f2fb5e47p+0, 0x1.bcc1e904bc1d2p+0,
    0x1.c199bdd85529cp+0, 0x1.c67f12e57d14bp+0, 0x1.cb720dcef9069p+0, 0x1.d072d4a07897cp+0,
    0x1.d5818dcfba487p+0, 0x1.da9e603db3285p+0, 0x1.dfc97337b9b5fp+0, 0x1.e502ee78b3ff6p+0,
    0x1.ea4afa2a490dap+0, 0x1.efa1bee615a27p+0, 0x1.f50765b6e4540p+0, 0x1.fa7c1819e90d8p+0,
};
MGSIM_MATH_INL double exp_tail(double kd0, double r) {
  // kd0 = k + 1.5·2^52: k sits in the low mantissa bits (two's complement for k < 0).
  const int64_t k = int64_t(detail::bits_as<uint64_t>(kd0) << 13) >> 13;
  const double r2 = r * r;
  const double p = r + r2 * ((0.5 + r * (1.0 / 6)) + r2 * ((1.0 / 24) + r * (1.0 / 120)));
  const double s = detail::bits_as<double>(detail::bits_as<uint64_t>(exp2_64th[k & 63]) + (uint64_t(k >> 6) << 52));
  return s + s * p;
}
// True when y (a normal double in the normal float range) rounds to float the same way from
// anywhere within 256 of its ulps.
MGSIM_MATH_INL bool rounds_clearly(double y) {
  return uint32_t((uint32_t(detail::bits_as<uint64_t>(y)) & 0x1fffffffu) - (0x10000000u - 256u)) >= 512u;
}
__attribute__((noinline)) inline float exp_libm(float x) { return float(__builtin_exp(double(x))); }
__attribute__((noinline)) inline float exp2_libm(float x) { return float(__builtin_exp2(double(x))); }
MGSIM_MATH_INL float exp_float(float x) {
  if (__builtin_expect(!(x > -87.0f && x < 88.0f), 0)) return exp_libm(x);  // also NaN
  constexpr double shift = 0x1.8p52;
  const double kd0 = double(x) * 0x1.71547652b82fep+6 + shift;  // 64/ln2
  const double kd = kd0 - shift;
  // ln2/64 = L1 + L2, L1 with 33 significant bits: kd·L1 (|k| < 2^13) is exact.
  const double r = (double(x) - kd * 0x1.62e42fefp-7) - kd * 0x1.473de6af278edp-40;
  const double y = exp_tail(kd0, r);
  return __builtin_expect(rounds_clearly(y), 1) ? float(y) : exp_libm(x);
}
MGSIM_MATH_INL float exp2_float(float x) {
  if (__builtin_expect(!(x > -126.0f && x < 128.0f), 0)) return exp2_libm(x);  // also NaN
  constexpr double shift = 0x1.8p52;
  const double kd0 = double(x) * 64.0 + shift;
  const double kd = kd0 - shift;
  // x − k/64 is exact in double; r·ln2 is within an ulp of r's.
  const double y = exp_tail(kd0, (double(x) - kd * 0.015625) * 0x1.62e42fefa39efp-1);
  return __builtin_expect(rounds_clearly(y), 1) ? float(y) : exp2_libm(x);
}
// exp_float of four floats side by side in 256-bit vectors of doubles, where the compile driver
// found AVX2 (MGSIM_HAVE_AVX2; softmax's exp of a float4), without a table lookup: k = round(x/ln2),
// r = x − k·ln2 (|r| ≤ ln2/2; ln2 = L1 + L2, L1 with 41 significant bits, so x − k·L1 is exact), e^r
// by its degree-10 Taylor polynomial (relative error < 4.4e-13 < 2^-41; the rounding errors are far
// below that, with or without fused multiply-adds), times 2^k. That is within 2^12 double ulps of
// e^x, so where the double lies more than 2^13 ulps from a halfway point between two floats (all
// but about 1 input in 30000) it rounds to the same float as e^x itself and as libm's double does:
// exp_float's result, bit for bit. When a component is outside exp_float's fast range (also NaN) or
// near a halfway point, all four take exp_float. test/native/mslsim/test_exp4.cpp compares the two
// on every 509th float bit pattern and specials (`test_exp4 --exhaustive`: all 2^32; without FMA
// it computes what the version before FMA did, operation for operation). Out of line so only this
// function carries the instruction set (as mma8 does FMA), taking and returning the float4 in a
// vector register, and with an explicit vzeroupper, which GCC leaves out at -O1 (the caller's SSE
// code then ran at half speed or worse). Multiply-adds are fused where the CPU has FMA
// (MGSIM_HAVE_FMA).
#if defined(MGSIM_HAVE_AVX2) && defined(__x86_64__)
typedef float exp4_vf __attribute__((vector_size(16)));
typedef double exp4_vd __attribute__((vector_size(32)));
typedef uint64_t exp4_vu __attribute__((vector_size(32)));
// The constants, read as memory operands: a splat constant GCC writes in the code costs one
// broadcast instruction per use (20 of exp_float4's 72). Not const, so it cannot fold them back.
struct exp4_constants {
  exp4_vd log2e, shift, ln2_hi, ln2_lo, one, c2, c3, c4, c5, c6, c7, c8, c9, c10, mid, radius;
  exp4_vu low_mask, halfway, abs_mask;
};
#define MGSIM_EXP4_SPLAT(v) {v, v, v, v}
alignas(32) inline exp4_constants exp4_k = {
    MGSIM_EXP4_SPLAT(0x1.71547652b82fep+0), MGSIM_EXP4_SPLAT(0x1.8p52),
    MGSIM_EXP4_SPLAT(-0x1.62e42fefa4000p-1), MGSIM_EXP4_SPLAT(0x1.8432a1b0e2634p-43),
    MGSIM_EXP4_SPLAT(1.0), MGSIM_EXP4_SPLAT(0.5), MGSIM_EXP4_SPLAT(1.0 / 6),
    MGSIM_EXP4_SPLAT(1.0 / 24), MGSIM_EXP4_SPLAT(1.0 / 120), MGSIM_EXP4_SPLAT(1.0 / 720),
    MGSIM_EXP4_SPLAT(1.0 / 5040), MGSIM_EXP4_SPLAT(1.0 / 40320), MGSIM_EXP4_SPLAT(1.0 / 362880),
    MGSIM_EXP4_SPLAT(1.0 / 3628800), MGSIM_EXP4_SPLAT(0.5), MGSIM_EXP4_SPLAT(87.5),
    MGSIM_EXP4_SPLAT(uint64_t(0x1fffffffu)), MGSIM_EXP4_SPLAT(uint64_t(0x10000000u - 0x2000u)),
    MGSIM_EXP4_SPLAT(~(uint64_t(1) << 63))};
#undef MGSIM_EXP4_SPLAT
// The doubtful case: each component by exp_float (out of line: the fast path saves no registers).
__attribute__((noinline)) inline void exp_float4_each(const float *x, float *y) {
  const float f[4] = {exp_float(x[0]), exp_float(x[1]), exp_float(x[2]), exp_float(x[3])};
  __builtin_memcpy(y, f, sizeof f);
}
#if defined(MGSIM_HAVE_FMA)
#define MGSIM_EXP4_TARGET "avx2,fma"
#define MGSIM_EXP4_MADD(a, b, c) __builtin_ia32_vfmaddpd256(a, b, c)
#else
#define MGSIM_EXP4_TARGET "avx2"
#define MGSIM_EXP4_MADD(a, b, c) ((a) * (b) + (c))
#endif
__attribute__((target(MGSIM_EXP4_TARGET), noinline)) inline exp4_vf exp_float4(exp4_vf xf) {
  const exp4_constants &K = exp4_k;
  const exp4_vd xd = __builtin_convertvector(xf, exp4_vd);  // (clang has no cvtps2pd256 builtin)
  const exp4_vd kd0 = MGSIM_EXP4_MADD(xd, K.log2e, K.shift);  // k + 1.5·2^52 (rounded to nearest)
  const exp4_vd kd = kd0 - K.shift;
  const exp4_vd r = MGSIM_EXP4_MADD(kd, K.ln2_lo, MGSIM_EXP4_MADD(kd, K.ln2_hi, xd));
  // Estrin's scheme: a short dependency chain (Horner's made this code latency-bound).
  const exp4_vd r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  const exp4_vd a0 = r + K.one, a1 = MGSIM_EXP4_MADD(r, K.c3, K.c2), a2 = MGSIM_EXP4_MADD(r, K.c5, K.c4);
  const exp4_vd a3 = MGSIM_EXP4_MADD(r, K.c7, K.c6), a4 = MGSIM_EXP4_MADD(r, K.c9, K.c8);
  const exp4_vd b0 = MGSIM_EXP4_MADD(r2, a1, a0), b1 = MGSIM_EXP4_MADD(r2, a3, a2);
  const exp4_vd b2 = MGSIM_EXP4_MADD(r2, K.c10, a4);
  const exp4_vd p = MGSIM_EXP4_MADD(r8, b2, MGSIM_EXP4_MADD(r4, b1, b0));
  // × 2^k: k's low bits are kd0's, added to the exponent field (|k| ≤ 127: the result is normal).
  const exp4_vd d = (exp4_vd)((exp4_vu)p + ((exp4_vu)kd0 << 52));
  const exp4_vu low = (exp4_vu)d & K.low_mask;  // the bits the rounding to float drops
  const exp4_vu near_halfway = ((low - K.halfway) >> 14) == 0;
  // −87 < x < 88 as |x − 0.5| < 87.5 (exact in double; false for NaN).
  const exp4_vu in_range = (exp4_vd)((exp4_vu)(xd - K.mid) & K.abs_mask) < K.radius;
  const exp4_vu ok = in_range & ~near_halfway;
  exp4_vf f;
  if (__builtin_expect(__builtin_ia32_movmskpd256((exp4_vd)ok) == 15, 1)) {
    f = __builtin_ia32_cvtpd2ps256(d);
  } else {
    float x[4], y[4];
    __builtin_memcpy(x, &xf, sizeof x);
    exp_float4_each(x, y);
    __builtin_memcpy(&f, y, sizeof f);
  }
  __builtin_ia32_vzeroupper();
  return f;
}
#undef MGSIM_EXP4_TARGET
#undef MGSIM_EXP4_MADD
#define MGSIM_HAVE_EXP_FLOAT4 1
#endif
struct fn_exp {
  template <class E>
  static E call(E a) {
    if constexpr (std::is_same<E, float>::value) return exp_float(a);
    else return from_double<E>(__builtin_exp(double(a)));
  }
};
struct fn_exp2 {
  template <class E>
  static E call(E a) {
    if constexpr (std::is_same<E, float>::value) return exp2_float(a);
    else return from_double<E>(__builtin_exp2(double(a)));
  }
};

// --- element functions ---
#define MGSIM_FN1(NAME, EXPR)                                                                      \
  struct fn_##NAME {                                                                               \
    template <class E>                                                                             \
    static E call(E a) {                                                                           \
      const double x = double(a);                                                                  \
      return from_double<E>(EXPR);                                                                 \
    }                                                                                              \
  };
#define MGSIM_FN2(NAME, EXPR)                                                                      \
  struct fn_##NAME {                                                                               \
    template <class E>                                                                             \
    static E call(E a, E b) {                                                                      \
      const double x = double(a), y = double(b);                                                   \
      return from_double<E>(EXPR);                                                                 \
    }                                                                                              \
  };
MGSIM_FN1(acos, __builtin_acos(x))
MGSIM_FN1(acosh, __builtin_acosh(x))
MGSIM_FN1(asin, __builtin_asin(x))
MGSIM_FN1(asinh, __builtin_asinh(x))
MGSIM_FN1(atan, __builtin_atan(x))
MGSIM_FN1(atanh, __builtin_atanh(x))
MGSIM_FN1(ceil, __builtin_ceil(x))
MGSIM_FN1(cos, __builtin_cos(x))
MGSIM_FN1(cosh, __builtin_cosh(x))
MGSIM_FN1(cospi, cospi_d(x))
MGSIM_FN1(exp10, __builtin_pow(10.0, x))
MGSIM_FN1(fabs, __builtin_fabs(x))
MGSIM_FN1(floor, __builtin_floor(x))
MGSIM_FN1(log, __builtin_log(x))
MGSIM_FN1(log2, __builtin_log2(x))
MGSIM_FN1(log10, __builtin_log10(x))
MGSIM_FN1(rint, __builtin_rint(x))
MGSIM_FN1(round, __builtin_round(x))
MGSIM_FN1(rsqrt, 1.0 / __builtin_sqrt(x))
MGSIM_FN1(sin, __builtin_sin(x))
MGSIM_FN1(sinh, __builtin_sinh(x))
MGSIM_FN1(sinpi, sinpi_d(x))
MGSIM_FN1(sqrt, __builtin_sqrt(x))
MGSIM_FN1(tan, __builtin_tan(x))
MGSIM_FN1(tanh, __builtin_tanh(x))
MGSIM_FN1(tanpi, tanpi_d(x))
MGSIM_FN1(trunc, __builtin_trunc(x))
// fract(x) = min(x - floor(x), largest value below 1); NaN stays NaN, fract(±inf) = +0.
MGSIM_FN1(fract, x != x ? x : __builtin_isinf(x) ? 0.0 : __builtin_fmin(x - __builtin_floor(x), double(below_one<E>())))
// sign: ±1 for nonzero, ±0 kept, NaN -> 0.
MGSIM_FN1(sign, x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? x : 0.0)
// saturate: clamp to [0, 1]; NaN -> 0.
MGSIM_FN1(saturate, x > 0 ? (x < 1 ? x : 1.0) : 0.0 * (x == x))
MGSIM_FN2(atan2, __builtin_atan2(x, y))
MGSIM_FN2(copysign, __builtin_copysign(x, y))
MGSIM_FN2(fdim, x != x || y != y ? x + y : x > y ? x - y : 0.0)
MGSIM_FN2(fmod, __builtin_fmod(x, y))
MGSIM_FN2(pow, __builtin_pow(x, y))
// powr(x, y) = exp2(y * log2(x)) for x >= 0 (IEEE powr: negative x, 0^0, inf^0, 1^inf are NaN).
MGSIM_FN2(powr, (x < 0 || x != x || y != y || (x == 0 && y == 0) || (__builtin_isinf(x) && y == 0) ||
                 (x == 1 && __builtin_isinf(y)))
                    ? __builtin_nan("")
                    : __builtin_pow(x, y))
MGSIM_FN2(divide, x / y)
MGSIM_FN2(step, y < x ? 0.0 : 1.0)
#undef MGSIM_FN1
#undef MGSIM_FN2

// max/min: fmax/fmin semantics for floating types (a NaN argument yields the other one).
struct fn_max {
  template <class E>
  static constexpr E call(E a, E b) {
    if constexpr (kind_v<E> >= 3) {
      if (is_nan_e(a)) return b;
      if (is_nan_e(b)) return a;
    }
    return a < b ? b : a;
  }
};
struct fn_min {
  template <class E>
  static constexpr E call(E a, E b) {
    if constexpr (kind_v<E> >= 3) {
      if (is_nan_e(a)) return b;
      if (is_nan_e(b)) return a;
    }
    return b < a ? b : a;
  }
};
struct fn_clamp {
  template <class E>
  static constexpr E call(E x, E lo, E hi) {
    return fn_min::call(fn_max::call(x, lo), hi);
  }
};
struct fn_max3 {
  template <class E>
  static constexpr E call(E a, E b, E c) {
    return fn_max::call(fn_max::call(a, b), c);
  }
};
struct fn_min3 {
  template <class E>
  static constexpr E call(E a, E b, E c) {
    return fn_min::call(fn_min::call(a, b), c);
  }
};
struct fn_median3 {
  template <class E>
  static constexpr E call(E a, E b, E c) {
    return fn_max::call(fn_min::call(a, b), fn_min::call(fn_max::call(a, b), c));
  }
};
struct fn_abs {
  template <class E>
  static constexpr E call(E a) {
    if constexpr (kind_v<E> >= 3) {
      if constexpr (std::is_same<E, float>::value) return __builtin_fabsf(a);
      else return E::mg_from_bits(uint16_t(a.mg_bits & 0x7fffu));
    } else if constexpr (std::is_signed<E>::value) {
      using U = std::make_unsigned_t<E>;
      return a < 0 ? E(U(0) - U(a)) : a;  // abs(INT_MIN) == INT_MIN, no overflow
    } else {
      return a;
    }
  }
};
struct fn_fma {
  template <class E>
  static E call(E a, E b, E c) {
    if constexpr (std::is_same<E, float>::value) return __builtin_fmaf(a, b, c);  // one rounding
    else return from_double<E>(__builtin_fma(double(a), double(b), double(c)));
  }
};
struct fn_mix {
  template <class E>
  static E call(E x, E y, E a) {
    const double dx = double(x);
    return from_double<E>(dx + (double(y) - dx) * double(a));
  }
};
struct fn_smoothstep {
  template <class E>
  static E call(E e0, E e1, E x) {
    double t = (double(x) - double(e0)) / (double(e1) - double(e0));
    t = t < 0 ? 0.0 : t > 1 ? 1.0 : t;
    return from_double<E>(t * t * (3.0 - 2.0 * t));
  }
};
struct fn_nextafter {
  template <class E>
  static E call(E x, E y) {
    if constexpr (std::is_same<E, float>::value) {
      return __builtin_nextafterf(x, y);
    } else {  // step one unit in the last place of the 16-bit format
      if (is_nan_e(x) || is_nan_e(y)) return E(float(x) + float(y));
      if (float(x) == float(y)) return y;
      uint16_t b = x.mg_bits;
      if ((b & 0x7fffu) == 0) return E::mg_from_bits(uint16_t((y.mg_bits & 0x8000u) | 1u));
      if ((float(x) < float(y)) == !(b & 0x8000u)) ++b;
      else --b;
      return E::mg_from_bits(b);
    }
  }
};

// Predicates (results are bool / vec<bool, N>).
struct fn_isnan { template <class E> static constexpr bool call(E a) { return is_nan_e(a); } };
struct fn_isinf { template <class E> static constexpr bool call(E a) { return is_inf_e(a); } };
struct fn_isfinite { template <class E> static constexpr bool call(E a) { return !is_nan_e(a) && !is_inf_e(a); } };
struct fn_signbit { template <class E> static constexpr bool call(E a) { return sign_bit_e(a); } };
struct fn_isnormal {
  template <class E>
  static constexpr bool call(E a) {
    return !is_nan_e(a) && !is_inf_e(a) && fn_abs::call(a) >= metal_min_normal<E>();
  }
  template <class E>
  static constexpr E metal_min_normal() {
    if constexpr (std::is_same<E, float>::value) return 0x1p-126f;
    else if constexpr (std::is_same<E, half>::value) return half::mg_from_bits(0x0400u);
    else return bfloat::mg_from_bits(0x0080u);
  }
};
struct fn_isordered { template <class E> static constexpr bool call(E a, E b) { return !is_nan_e(a) && !is_nan_e(b); } };
struct fn_isunordered { template <class E> static constexpr bool call(E a, E b) { return is_nan_e(a) || is_nan_e(b); } };
struct fn_ilogb { template <class E> static int call(E a) { return __builtin_ilogb(double(a)); } };

// Integer functions, on the unsigned representation of the element's width.
template <class E>
using uns = std::make_unsigned_t<E>;
template <class E>
constexpr int width = int(sizeof(E) * 8);
struct fn_clz {
  template <class E>
  static constexpr E call(E a) {
    const uint64_t u = uint64_t(uns<E>(a));
    return E(u == 0 ? width<E> : __builtin_clzll(u) - (64 - width<E>));
  }
};
struct fn_ctz {
  template <class E>
  static constexpr E call(E a) {
    const uint64_t u = uint64_t(uns<E>(a));
    return E(u == 0 ? width<E> : __builtin_ctzll(u));
  }
};
struct fn_popcount {
  template <class E>
  static constexpr E call(E a) { return E(__builtin_popcountll(uint64_t(uns<E>(a)))); }
};
struct fn_reverse_bits {
  template <class E>
  static constexpr E call(E a) {
    const uns<E> u = uns<E>(a);
    uns<E> r = 0;
    for (int i = 0; i < width<E>; ++i) r = uns<E>(r | (((u >> i) & 1u) << (width<E> - 1 - i)));
    return E(r);
  }
};
struct fn_rotate {  // rotate left by b mod width
  template <class E>
  static constexpr E call(E a, E b) {
    const uns<E> u = uns<E>(a);
    const int s = int(uns<E>(b) & uns<E>(width<E> - 1));
    return E(uns<E>((u << s) | (u >> ((width<E> - s) & (width<E> - 1)))));
  }
};
struct fn_hadd {  // (x + y) >> 1 without overflow
  template <class E>
  static constexpr E call(E x, E y) { return E((x >> 1) + (y >> 1) + (x & y & 1)); }
};
struct fn_rhadd {  // (x + y + 1) >> 1 without overflow
  template <class E>
  static constexpr E call(E x, E y) { return E((x >> 1) + (y >> 1) + ((x | y) & 1)); }
};
// wide<E>: holds any product of two E (and a third E added); swide<E>: any E +/- E, signed.
template <class E>
using wide = std::conditional_t<(sizeof(E) < 8), std::conditional_t<std::is_signed<E>::value, int64_t, uint64_t>,
                                std::conditional_t<std::is_signed<E>::value, __int128, unsigned __int128>>;
template <class E>
using swide = std::conditional_t<(sizeof(E) < 8), int64_t, __int128>;
template <class E, class V>
constexpr E saturate_wide(V v) {
  if constexpr (V(-1) < V(0))  // (std::is_signed<__int128> is false in strict C++17 mode)
    if (v < V(std::numeric_limits<E>::min())) return std::numeric_limits<E>::min();
  if (v > V(std::numeric_limits<E>::max())) return std::numeric_limits<E>::max();
  return E(v);
}
struct fn_mulhi {
  template <class E>
  static constexpr E call(E x, E y) { return E((wide<E>(x) * wide<E>(y)) >> width<E>); }
};
struct fn_madhi {
  template <class E>
  static constexpr E call(E x, E y, E z) { return E(uns<E>(fn_mulhi::call(x, y)) + uns<E>(z)); }
};
struct fn_madsat {  // x * y + z is exact in the wide type (also 64 x 64 + 64 in 128 bits)
  template <class E>
  static constexpr E call(E x, E y, E z) { return saturate_wide<E>(wide<E>(x) * wide<E>(y) + wide<E>(z)); }
};
struct fn_addsat {
  template <class E>
  static constexpr E call(E x, E y) { return saturate_wide<E>(swide<E>(x) + swide<E>(y)); }
};
struct fn_subsat {
  template <class E>
  static constexpr E call(E x, E y) { return saturate_wide<E>(swide<E>(x) - swide<E>(y)); }
};
struct fn_absdiff {
  template <class E>
  static constexpr E call(E x, E y) { return E(x > y ? uns<E>(uns<E>(x) - uns<E>(y)) : uns<E>(uns<E>(y) - uns<E>(x))); }
};
struct fn_mul24 {  // wraps; in uint64_t so that narrow types do not overflow int
  template <class E>
  static constexpr E call(E x, E y) { return E(uns<E>(uint64_t(uns<E>(x)) * uint64_t(uns<E>(y)))); }
};
struct fn_mad24 {
  template <class E>
  static constexpr E call(E x, E y, E z) {
    return E(uns<E>(uint64_t(uns<E>(x)) * uint64_t(uns<E>(y)) + uint64_t(uns<E>(z))));
  }
};

// fmax/fmin/fmax3/fmin3/fmedian3 are max/min on floating elements.
struct fn_fmax : fn_max {};
struct fn_fmin : fn_min {};
struct fn_fmax3 : fn_max3 {};
struct fn_fmin3 : fn_min3 {};
struct fn_fmedian3 : fn_median3 {};

// select(a, b, c): c ? b : a, per component for a vector condition.
template <class RT, class C>
constexpr bool cond_at(const C &c, int i) {
  if constexpr (vsize_v<C> == 0) return bool(unwrap(c));
  else return to_vec(c).mg_e[i];
}

}  // namespace math
}  // namespace lang
}  // namespace mgsim

namespace metal {

namespace mgm = ::mgsim::lang::math;

#define MGSIM_M1(NAME, FAM)                                                                        \
  template <class X, class M = mgm::mres<mgm::FAM, X>, class R = typename M::type>                  \
  inline R NAME(const X &x) {                                                                      \
    return mgm::map<M, typename M::elem, mgm::fn_##NAME>(x);                                        \
  }
#define MGSIM_M2(NAME, FAM)                                                                        \
  template <class X, class Y, class M = mgm::mres<mgm::FAM, X, Y>, class R = typename M::type>      \
  inline R NAME(const X &x, const Y &y) {                                                          \
    return mgm::map<M, typename M::elem, mgm::fn_##NAME>(x, y);                                     \
  }
#define MGSIM_M3(NAME, FAM)                                                                        \
  template <class X, class Y, class Z, class M = mgm::mres<mgm::FAM, X, Y, Z>,                     \
            class R = typename M::type>                                                            \
  inline R NAME(const X &x, const Y &y, const Z &z) {                                              \
    return mgm::map<M, typename M::elem, mgm::fn_##NAME>(x, y, z);                                  \
  }
// Same, constexpr (pure C++ bodies; usable in constant expressions).
#define MGSIM_C1(NAME, FAM)                                                                        \
  template <class X, class M = mgm::mres<mgm::FAM, X>, class R = typename M::type>                  \
  constexpr R NAME(const X &x) {                                                                   \
    return mgm::map<M, typename M::elem, mgm::fn_##NAME>(x);                                        \
  }
#define MGSIM_C2(NAME, FAM)                                                                        \
  template <class X, class Y, class M = mgm::mres<mgm::FAM, X, Y>, class R = typename M::type>      \
  constexpr R NAME(const X &x, const Y &y) {                                                       \
    return mgm::map<M, typename M::elem, mgm::fn_##NAME>(x, y);                                     \
  }
#define MGSIM_C3(NAME, FAM)                                                                        \
  template <class X, class Y, class Z, class M = mgm::mres<mgm::FAM, X, Y, Z>,                     \
            class R = typename M::type>                                                            \
  constexpr R NAME(const X &x, const Y &y, const Z &z) {                                           \
    return mgm::map<M, typename M::elem, mgm::fn_##NAME>(x, y, z);                                  \
  }
// Predicates: bool / vec<bool, N> results.
#define MGSIM_P1(NAME)                                                                             \
  template <class X, class M = mgm::mres<mgm::f_float, X>, class R = typename M::bools>             \
  constexpr R NAME(const X &x) {                                                                   \
    return mgm::map<M, bool, mgm::fn_##NAME>(x);                                                    \
  }
#define MGSIM_P2(NAME)                                                                             \
  template <class X, class Y, class M = mgm::mres<mgm::f_float, X, Y>, class R = typename M::bools> \
  constexpr R NAME(const X &x, const Y &y) {                                                       \
    return mgm::map<M, bool, mgm::fn_##NAME>(x, y);                                                 \
  }

// metal_math
MGSIM_M1(acos, f_float)
MGSIM_M1(acosh, f_float)
MGSIM_M1(asin, f_float)
MGSIM_M1(asinh, f_float)
MGSIM_M1(atan, f_float)
MGSIM_M1(atanh, f_float)
MGSIM_M1(ceil, f_float)
MGSIM_M1(cos, f_float)
MGSIM_M1(cosh, f_float)
MGSIM_M1(cospi, f_float)
MGSIM_M1(exp, f_float)
#ifdef MGSIM_HAVE_EXP_FLOAT4
// A float4's exp: its components side by side (mgm::exp_float4, in a vector register both ways),
// the same bits as one by one.
MGSIM_MATH_INL float4 exp(const float4 &x) {
  mgm::exp4_vf v;
  __builtin_memcpy(&v, x.mg_e, sizeof v);
  v = mgm::exp_float4(v);
  float4 r;
  __builtin_memcpy(r.mg_e, &v, sizeof v);
  return r;
}
#endif
MGSIM_M1(exp2, f_float)
MGSIM_M1(exp10, f_float)
MGSIM_M1(fabs, f_float)
MGSIM_M1(floor, f_float)
MGSIM_M1(fract, f_float)
MGSIM_M1(log, f_float)
MGSIM_M1(log2, f_float)
MGSIM_M1(log10, f_float)
MGSIM_M1(rint, f_float)
MGSIM_M1(round, f_float)
MGSIM_M1(rsqrt, f_float)
MGSIM_M1(sin, f_float)
MGSIM_M1(sinh, f_float)
MGSIM_M1(sinpi, f_float)
MGSIM_M1(sqrt, f_float)
MGSIM_M1(tan, f_float)
MGSIM_M1(tanh, f_float)
MGSIM_M1(tanpi, f_float)
MGSIM_M1(trunc, f_float)
MGSIM_M2(atan2, f_float)
MGSIM_M2(copysign, f_float)
MGSIM_M2(divide, f_float)
MGSIM_M2(fdim, f_float)
MGSIM_M2(fmod, f_float)
MGSIM_M2(nextafter, f_float)
MGSIM_M2(pow, f_float)
MGSIM_M2(powr, f_float)
MGSIM_M3(fma, f_float)
MGSIM_C2(fmax, f_float)
MGSIM_C2(fmin, f_float)
MGSIM_C3(fmax3, f_float)
MGSIM_C3(fmin3, f_float)
MGSIM_C3(fmedian3, f_float)
// metal_common
MGSIM_M3(mix, f_float)
MGSIM_M1(saturate, f_float)
MGSIM_M1(sign, f_float)
MGSIM_M3(smoothstep, f_float)
MGSIM_M2(step, f_float)
// metal_common / metal_integer, any numeric element
MGSIM_C1(abs, f_any)
MGSIM_C2(max, f_any)
MGSIM_C2(min, f_any)
MGSIM_C3(clamp, f_any)
MGSIM_C3(max3, f_any)
MGSIM_C3(min3, f_any)
MGSIM_C3(median3, f_any)
// metal_integer
MGSIM_C2(absdiff, f_int)
MGSIM_C2(addsat, f_int)
MGSIM_C2(subsat, f_int)
MGSIM_C1(clz, f_int)
MGSIM_C1(ctz, f_int)
MGSIM_C1(popcount, f_int)
MGSIM_C1(reverse_bits, f_int)
MGSIM_C2(rotate, f_int)
MGSIM_C2(hadd, f_int)
MGSIM_C2(rhadd, f_int)
MGSIM_C2(mulhi, f_int)
MGSIM_C3(madhi, f_int)
MGSIM_C3(madsat, f_int)
MGSIM_C2(mul24, f_int)
MGSIM_C3(mad24, f_int)
// metal_relational
MGSIM_P1(isfinite)
MGSIM_P1(isinf)
MGSIM_P1(isnan)
MGSIM_P1(isnormal)
MGSIM_P1(signbit)
MGSIM_P2(isordered)
MGSIM_P2(isunordered)
#undef MGSIM_M1
#undef MGSIM_M2
#undef MGSIM_M3
#undef MGSIM_C1
#undef MGSIM_C2
#undef MGSIM_C3
#undef MGSIM_P1
#undef MGSIM_P2

// ilogb(x) -> int / intN.
template <class X, class M = mgm::mres<mgm::f_float, X>, class R = typename M::ints>
inline R ilogb(const X &x) {
  return mgm::map<M, int, mgm::fn_ilogb>(x);
}

// frexp(x, exponent&) -> mantissa in [0.5, 1); ldexp(x, k) = x * 2^k.
template <class X, class I, class M = mgm::mres<mgm::f_float, X>, std::enable_if_t<std::is_same<I, typename M::ints>::value, int> = 0>
inline typename M::type frexp(const X &x, I &exponent) {
  using E = typename M::elem;
  if constexpr (M::n == 0) {
    return mgm::from_double<E>(__builtin_frexp(double(mgsim::lang::convert<E>(x)), &exponent));
  } else {
    const auto v = mgsim::lang::to_vec(x);
    typename M::type r{};
    for (int i = 0; i < M::n; ++i) r.mg_e[i] = mgm::from_double<E>(__builtin_frexp(double(v.mg_e[i]), &exponent.mg_e[i]));
    return r;
  }
}
template <class X, class K, class M = mgm::mres<mgm::f_float, X>,
          std::enable_if_t<(mgsim::lang::vsize_v<K> == M::n || mgsim::lang::vsize_v<K> == 0) &&
                               mgsim::lang::kind_v<std::conditional_t<(mgsim::lang::vsize_v<K> > 0), mgsim::lang::velem_t<K>, K>> == 2,
                           int> = 0>
inline typename M::type ldexp(const X &x, const K &k) {
  using E = typename M::elem;
  if constexpr (M::n == 0) {
    return mgm::from_double<E>(__builtin_ldexp(double(mgsim::lang::convert<E>(x)), mgsim::lang::convert<int>(k)));
  } else {
    const auto v = mgsim::lang::to_vec(x);
    const auto kk = mgsim::lang::operand<int, false>(k);
    typename M::type r{};
    for (int i = 0; i < M::n; ++i)
      r.mg_e[i] = mgm::from_double<E>(__builtin_ldexp(double(v.mg_e[i]), int(mgsim::lang::component(kk, i))));
    return r;
  }
}
// modf(x, integral&) -> fractional part (sign of x); sincos(x, cos&) -> sine.
template <class X, class M = mgm::mres<mgm::f_float, X>>
inline typename M::type modf(const X &x, typename M::type &integral) {
  using E = typename M::elem;
  if constexpr (M::n == 0) {
    double ip = 0;
    const double f = __builtin_modf(double(mgsim::lang::convert<E>(x)), &ip);
    integral = mgm::from_double<E>(ip);
    return mgm::from_double<E>(f);
  } else {
    const auto v = mgsim::lang::to_vec(x);
    typename M::type r{};
    for (int i = 0; i < M::n; ++i) {
      double ip = 0;
      r.mg_e[i] = mgm::from_double<E>(__builtin_modf(double(v.mg_e[i]), &ip));
      integral.mg_e[i] = mgm::from_double<E>(ip);
    }
    return r;
  }
}
template <class X, class M = mgm::mres<mgm::f_float, X>>
inline typename M::type sincos(const X &x, typename M::type &cosval) {
  cosval = metal::cos(x);
  return metal::sin(x);
}

// extract_bits(x, offset, bits): bits [offset, offset + bits) of x, sign-extended for signed x.
// insert_bits(base, insert, offset, bits): base with those bits replaced by insert's low bits.
namespace mgsim_bits {
template <class E>
constexpr E extract(E x, uint offset, uint bits) {
  using U = mgm::uns<E>;
  constexpr uint w = uint(mgm::width<E>);
  if (bits == 0 || offset >= w) return E(0);
  const U u = U(U(x) >> offset);
  const U mask = bits >= w ? U(~U(0)) : U((U(1) << bits) - 1u);
  U r = U(u & mask);
  if (std::is_signed<E>::value && bits < w && ((r >> (bits - 1)) & 1u)) r = U(r | U(~mask));
  return E(r);
}
template <class E>
constexpr E insert(E base, E ins, uint offset, uint bits) {
  using U = mgm::uns<E>;
  constexpr uint w = uint(mgm::width<E>);
  if (bits == 0 || offset >= w) return base;
  const U ones = bits >= w ? U(~U(0)) : U((U(1) << bits) - 1u);
  const U mask = U(ones << offset);
  return E(U((U(base) & U(~mask)) | (U(U(ins) << offset) & mask)));
}
}  // namespace mgsim_bits
template <class X, class M = mgm::mres<mgm::f_int, X>>
constexpr typename M::type extract_bits(const X &x, uint offset, uint bits) {
  using E = typename M::elem;
  if constexpr (M::n == 0) {
    return mgsim_bits::extract<E>(mgsim::lang::convert<E>(x), offset, bits);
  } else {
    const auto v = mgsim::lang::to_vec(x);
    typename M::type r{};
    for (int i = 0; i < M::n; ++i) r.mg_e[i] = mgsim_bits::extract<E>(v.mg_e[i], offset, bits);
    return r;
  }
}
template <class X, class Y, class M = mgm::mres<mgm::f_int, X, Y>>
constexpr typename M::type insert_bits(const X &base, const Y &ins, uint offset, uint bits) {
  using E = typename M::elem;
  if constexpr (M::n == 0) {
    return mgsim_bits::insert<E>(mgsim::lang::convert<E>(base), mgsim::lang::convert<E>(ins), offset, bits);
  } else {
    const auto b = mgsim::lang::operand<E, false>(base);
    const auto n = mgsim::lang::operand<E, false>(ins);
    typename M::type r{};
    for (int i = 0; i < M::n; ++i)
      r.mg_e[i] = mgsim_bits::insert<E>(mgsim::lang::component(b, i), mgsim::lang::component(n, i), offset, bits);
    return r;
  }
}

// select(a, b, c): c ? b : a (per component when c is a bool vector).
template <class A, class B, class C, class M = mgm::mres<mgm::f_sel, A, B>,
          std::enable_if_t<(mgsim::lang::vsize_v<C> == 0 && mgsim::lang::kind_v<C> == 1) ||
                               (mgsim::lang::vsize_v<C> == M::n && std::is_same<mgsim::lang::velem_t<C>, bool>::value),
                           int> = 0>
constexpr typename M::type select(const A &a, const B &b, const C &c) {
  using E = typename M::elem;
  if constexpr (M::n == 0) {
    return mgsim::lang::unwrap(c) ? mgsim::lang::convert<E>(b) : mgsim::lang::convert<E>(a);
  } else {
    const auto va = mgsim::lang::operand<E, false>(a);
    const auto vb = mgsim::lang::operand<E, false>(b);
    typename M::type r{};
    for (int i = 0; i < M::n; ++i)
      r.mg_e[i] = mgm::cond_at<E>(c, i) ? mgsim::lang::component(vb, i) : mgsim::lang::component(va, i);
    return r;
  }
}

// all / any over bool vectors (a bool scalar is itself).
template <class X, std::enable_if_t<std::is_same<std::conditional_t<(mgsim::lang::vsize_v<X> > 0), mgsim::lang::velem_t<X>,
                                                                    mgsim::lang::value_t<X>>,
                                                 bool>::value,
                                    int> = 0>
constexpr bool all(const X &x) {
  if constexpr (mgsim::lang::vsize_v<X> == 0) {
    return bool(mgsim::lang::unwrap(x));
  } else {
    const auto v = mgsim::lang::to_vec(x);
    for (int i = 0; i < mgsim::lang::vsize_v<X>; ++i)
      if (!v.mg_e[i]) return false;
    return true;
  }
}
template <class X, std::enable_if_t<std::is_same<std::conditional_t<(mgsim::lang::vsize_v<X> > 0), mgsim::lang::velem_t<X>,
                                                                    mgsim::lang::value_t<X>>,
                                                 bool>::value,
                                    int> = 0>
constexpr bool any(const X &x) {
  if constexpr (mgsim::lang::vsize_v<X> == 0) {
    return bool(mgsim::lang::unwrap(x));
  } else {
    const auto v = mgsim::lang::to_vec(x);
    for (int i = 0; i < mgsim::lang::vsize_v<X>; ++i)
      if (v.mg_e[i]) return true;
    return false;
  }
}

// metal_geometric: floating vectors; sums and square roots in double, one rounding at the end.
namespace mgsim_geo {
template <class V>
inline double dot_d(const V &a, const V &b) {
  double s = 0;
  for (int i = 0; i < mgsim::lang::vsize_v<V>; ++i) s += double(a.mg_e[i]) * double(b.mg_e[i]);
  return s;
}
}  // namespace mgsim_geo
template <class X, class Y, class M = mgm::mres<mgm::f_geo, X, Y>, std::enable_if_t<(mgsim::lang::vsize_v<X> > 0) && (mgsim::lang::vsize_v<Y> > 0), int> = 0>
inline typename M::elem dot(const X &x, const Y &y) {
  return mgm::from_double<typename M::elem>(mgsim_geo::dot_d(mgsim::lang::to_vec(x), mgsim::lang::to_vec(y)));
}
template <class X, class M = mgm::mres<mgm::f_geo, X>>
inline typename M::elem length_squared(const X &x) {
  const auto v = mgsim::lang::to_vec(x);
  return mgm::from_double<typename M::elem>(mgsim_geo::dot_d(v, v));
}
template <class X, class M = mgm::mres<mgm::f_geo, X>>
inline typename M::elem length(const X &x) {
  const auto v = mgsim::lang::to_vec(x);
  return mgm::from_double<typename M::elem>(__builtin_sqrt(mgsim_geo::dot_d(v, v)));
}
template <class X, class Y, class M = mgm::mres<mgm::f_geo, X, Y>, std::enable_if_t<(mgsim::lang::vsize_v<X> > 0) && (mgsim::lang::vsize_v<Y> > 0), int> = 0>
inline typename M::elem distance_squared(const X &x, const Y &y) {
  const auto a = mgsim::lang::to_vec(x), b = mgsim::lang::to_vec(y);
  double s = 0;
  for (int i = 0; i < M::n; ++i) {
    const double d = double(a.mg_e[i]) - double(b.mg_e[i]);
    s += d * d;
  }
  return mgm::from_double<typename M::elem>(s);
}
template <class X, class Y, class M = mgm::mres<mgm::f_geo, X, Y>, std::enable_if_t<(mgsim::lang::vsize_v<X> > 0) && (mgsim::lang::vsize_v<Y> > 0), int> = 0>
inline typename M::elem distance(const X &x, const Y &y) {
  return mgm::from_double<typename M::elem>(__builtin_sqrt(double(metal::distance_squared(x, y))));
}
template <class X, class M = mgm::mres<mgm::f_geo, X>>
inline typename M::type normalize(const X &x) {
  const auto v = mgsim::lang::to_vec(x);
  const double len = __builtin_sqrt(mgsim_geo::dot_d(v, v));
  typename M::type r{};
  for (int i = 0; i < M::n; ++i) r.mg_e[i] = mgm::from_double<typename M::elem>(double(v.mg_e[i]) / len);
  return r;
}
template <class X, class Y, class M = mgm::mres<mgm::f_geo, X, Y>, std::enable_if_t<M::n == 3 && mgsim::lang::vsize_v<X> == 3 && mgsim::lang::vsize_v<Y> == 3, int> = 0>
inline typename M::type cross(const X &x, const Y &y) {
  const auto a = mgsim::lang::to_vec(x), b = mgsim::lang::to_vec(y);
  using E = typename M::elem;
  const double a0 = double(a.mg_e[0]), a1 = double(a.mg_e[1]), a2 = double(a.mg_e[2]);
  const double b0 = double(b.mg_e[0]), b1 = double(b.mg_e[1]), b2 = double(b.mg_e[2]);
  return typename M::type(mgm::from_double<E>(a1 * b2 - a2 * b1), mgm::from_double<E>(a2 * b0 - a0 * b2),
                          mgm::from_double<E>(a0 * b1 - a1 * b0));
}
// faceforward(n, i, nref) = dot(nref, i) < 0 ? n : -n
template <class X, class Y, class Z, class M = mgm::mres<mgm::f_geo, X, Y, Z>, std::enable_if_t<(mgsim::lang::vsize_v<X> > 0) && (mgsim::lang::vsize_v<Y> > 0) && (mgsim::lang::vsize_v<Z> > 0), int> = 0>
inline typename M::type faceforward(const X &n, const Y &i, const Z &nref) {
  const typename M::type v = mgsim::lang::to_vec(n);
  return mgsim_geo::dot_d(mgsim::lang::to_vec(nref), mgsim::lang::to_vec(i)) < 0 ? v : typename M::type(-v);
}
// reflect(i, n) = i - 2 dot(n, i) n
template <class X, class Y, class M = mgm::mres<mgm::f_geo, X, Y>, std::enable_if_t<(mgsim::lang::vsize_v<X> > 0) && (mgsim::lang::vsize_v<Y> > 0), int> = 0>
inline typename M::type reflect(const X &i, const Y &n) {
  const auto vi = mgsim::lang::to_vec(i), vn = mgsim::lang::to_vec(n);
  const double d = mgsim_geo::dot_d(vn, vi);
  typename M::type r{};
  for (int k = 0; k < M::n; ++k)
    r.mg_e[k] = mgm::from_double<typename M::elem>(double(vi.mg_e[k]) - 2.0 * d * double(vn.mg_e[k]));
  return r;
}
// refract(i, n, eta): k = 1 - eta^2 (1 - dot(n, i)^2); k < 0 ? 0 : eta i - (eta dot(n, i) + sqrt(k)) n
template <class X, class Y, class S, class M = mgm::mres<mgm::f_geo, X, Y>, std::enable_if_t<(mgsim::lang::vsize_v<X> > 0) && (mgsim::lang::vsize_v<Y> > 0) && mgsim::lang::vsize_v<S> == 0 && (mgsim::lang::kind_v<S> >= 2), int> = 0>
inline typename M::type refract(const X &i, const Y &n, const S &eta) {
  const auto vi = mgsim::lang::to_vec(i), vn = mgsim::lang::to_vec(n);
  const double e = double(mgsim::lang::convert<typename M::elem>(eta)), d = mgsim_geo::dot_d(vn, vi);
  const double k = 1.0 - e * e * (1.0 - d * d);
  typename M::type r{};
  if (k < 0) return r;
  for (int q = 0; q < M::n; ++q)
    r.mg_e[q] = mgm::from_double<typename M::elem>(e * double(vi.mg_e[q]) - (e * d + __builtin_sqrt(k)) * double(vn.mg_e[q]));
  return r;
}

// precise:: and fast:: name the same functions (the simulator is always precise).
#define MGSIM_MATH_NAMES(X)                                                                        \
  X(acos) X(acosh) X(asin) X(asinh) X(atan) X(atan2) X(atanh) X(ceil) X(copysign) X(cos) X(cosh)   \
  X(cospi) X(divide) X(exp) X(exp10) X(exp2) X(fabs) X(abs) X(fdim) X(floor) X(fma) X(fmax)        \
  X(fmax3) X(fmedian3) X(fmin) X(fmin3) X(fmod) X(fract) X(frexp) X(ilogb) X(ldexp) X(log) X(log10) \
  X(log2) X(max) X(max3) X(median3) X(min) X(min3) X(modf) X(nextafter) X(pow) X(powr) X(rint)     \
  X(round) X(rsqrt) X(sin) X(sincos) X(sinh) X(sinpi) X(sqrt) X(tan) X(tanh) X(tanpi) X(trunc)     \
  X(clamp) X(mix) X(saturate) X(sign) X(smoothstep) X(step) X(distance) X(distance_squared)         \
  X(length) X(length_squared) X(normalize) X(dot) X(cross) X(faceforward) X(reflect) X(refract)
#define MGSIM_USING(NAME) using ::metal::NAME;
namespace precise {
MGSIM_MATH_NAMES(MGSIM_USING)
}
namespace fast {
MGSIM_MATH_NAMES(MGSIM_USING)
}
#undef MGSIM_USING
#undef MGSIM_MATH_NAMES

}  // namespace metal

// MSL's math constants (metal_math) and limits of half; glibc's spellings where glibc has them, so
// that either header may come first.
#ifndef INFINITY
#define INFINITY (__builtin_inff ())
#endif
#ifndef NAN
#define NAN (__builtin_nanf (""))
#endif
#ifndef HUGE_VALF
#define HUGE_VALF (__builtin_huge_valf ())
#endif
#ifndef MAXFLOAT
#define MAXFLOAT 3.40282347e+38F
#endif
#define M_E_F 2.71828182845904523536028747135266250f
#define M_LOG2E_F 1.44269504088896340735992468100189214f
#define M_LOG10E_F 0.434294481903251827651128918916605082f
#define M_LN2_F 0.693147180559945309417232121458176568f
#define M_LN10_F 2.30258509299404568401799145468436421f
#define M_PI_F 3.14159265358979323846264338327950288f
#define M_PI_2_F 1.57079632679489661923132169163975144f
#define M_PI_4_F 0.785398163397448309615660845819875721f
#define M_1_PI_F 0.318309886183790671537767526745028724f
#define M_2_PI_F 0.636619772367581343075535053490057448f
#define M_2_SQRTPI_F 1.12837916709551257389615890312154517f
#define M_SQRT2_F 1.41421356237309504880168872420969808f
#define M_SQRT1_2_F 0.707106781186547524400844362104849039f
#define M_E_H half(2.71828182845904523536028747135266250)
#define M_LOG2E_H half(1.44269504088896340735992468100189214)
#define M_LOG10E_H half(0.434294481903251827651128918916605082)
#define M_LN2_H half(0.693147180559945309417232121458176568)
#define M_LN10_H half(2.30258509299404568401799145468436421)
#define M_PI_H half(3.14159265358979323846264338327950288)
#define M_PI_2_H half(1.57079632679489661923132169163975144)
#define M_PI_4_H half(0.785398163397448309615660845819875721)
#define M_1_PI_H half(0.318309886183790671537767526745028724)
#define M_2_PI_H half(0.636619772367581343075535053490057448)
#define M_2_SQRTPI_H half(1.12837916709551257389615890312154517)
#define M_SQRT2_H half(1.41421356237309504880168872420969808)
#define M_SQRT1_2_H half(0.707106781186547524400844362104849039)
#define MAXHALF half::mg_from_bits(0x7bffu)
#define HALF_MAX half::mg_from_bits(0x7bffu)
#define HALF_MIN half::mg_from_bits(0x0400u)
#define HALF_EPSILON half::mg_from_bits(0x1400u)
#define HALF_DIG 3
#define HALF_MANT_DIG 11
#define HALF_MAX_10_EXP 4
#define HALF_MAX_EXP 16
#define HALF_MIN_10_EXP -4
#define HALF_MIN_EXP -13
#define HALF_RADIX 2

#endif  // MGSIM_MATH_H
