// metal:: math: overload resolution of unqualified calls in a translation unit that already has the
// C and C++ libraries' math declarations, result types, IEEE special values, accuracy against long
// double (float: every function within 1 ulp and nearly always exact; half and bfloat: every one of
// the 65,536 inputs exact), vector and mixed scalar/vector forms, integer functions against 128-bit
// references, geometric and relational functions, constants; exp and exp2 of float bit for bit as
// the C library's double functions rounded to float (`math_functions --exhaustive`: all 2^32 floats).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include "../../../Sources/MSLSim/prelude/mgsim_math.h"
#include "check.h"

namespace mgsim {
unsigned simd_lane_id() { return 0; }
}

using namespace metal;

// --- unqualified calls as MSL code writes them (after `using namespace metal;`) ---
#define SAME(E, T) static_assert(std::is_same<decltype(E), T>::value, #E " has type " #T)
inline float fx() { return 1.5f; }
inline half hx() { return half(1.5f); }
inline int ix() { return 7; }
inline uint ux() { return 7u; }
SAME(exp(1.0f), float);
SAME(exp(hx()), half);
SAME(exp(bfloat(1.0f)), bfloat);
SAME(exp(2), float);  // an integer argument computes in float
SAME(metal::exp(1.0f), float);
SAME(precise::exp(fx()), float);
SAME(fast::exp(fx()), float);
SAME(floor(ix()), float);
SAME(pow(fx(), 2), float);
SAME(pow(hx(), 2), half);
SAME(pow(fx(), 0.5), float);
SAME(sqrt(2), float);
SAME(atan2(fx(), 1), float);
SAME(fmax(fx(), 0), float);
SAME(max(fx(), fx()), float);
SAME(max(fx(), 0), float);
SAME(max(ux(), 1), uint);
SAME(max(1, ux()), uint);
SAME(min(ix(), 0), int);
SAME(max(hx(), 0), half);
SAME(max(hx(), 1.0f), float);
SAME(min(short(1), short(2)), short);
SAME(clamp(fx(), 0, 1), float);
SAME(clamp(fx(), 0.0, 1.0), float);
SAME(clamp(ix(), 0, 10), int);
SAME(clamp(float4(), 0.0f, 1.0f), float4);
SAME(clamp(int3(), 0, 5), int3);
SAME(abs(-1.5f), float);
SAME(abs(hx()), half);
SAME(abs(int4()), int4);
SAME(abs(ix()), int);
SAME(mix(float3(), float3(), 0.5f), float3);
SAME(pow(float4(), 2.0f), float4);
SAME(exp(half4()), half4);
SAME(isnan(fx()), bool);
SAME(isnan(float4()), bool4);
SAME(signbit(half2()), bool2);
SAME(select(fx(), 2.0f, true), float);
SAME(select(int4(), int4(), bool4()), int4);
SAME(dot(float4(), float4()), float);
SAME(dot(half3(), half3()), half);
SAME(length(float2()), float);
SAME(normalize(float3()), float3);
SAME(cross(float3(), float3()), float3);
SAME(ilogb(float2()), int2);
SAME(clz(ux()), uint);
SAME(popcount(ushort4()), ushort4);
SAME(rotate(uint2(), 3u), uint2);
SAME(extract_bits(ix(), 1, 2), int);
SAME(fma(hx(), hx(), hx()), half);
SAME(all(bool3()), bool);
template <class A>
struct callable_exp {
  template <class X>
  static auto t(int) -> decltype(metal::exp(std::declval<X>()), std::true_type());
  template <class>
  static std::false_type t(...);
  static constexpr bool value = decltype(t<A>(0))::value;
};
static_assert(!callable_exp<int4>::value && !callable_exp<std::string>::value && callable_exp<packed_float3>::value,
              "float functions take floating vectors, not integer vectors or foreign types");

// Kernel headers may define their own bfloat overloads in metal:: (MLX's bf16_math.h does): no
// redefinition error, and theirs win over the prelude's templates.
namespace metal {
inline bfloat fmin3(bfloat a, bfloat, bfloat) { return a; }
}  // namespace metal

namespace {

float ulp_diff(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  if (a == b) return 0;
  if (std::isinf(a) || std::isinf(b) || std::isnan(a) || std::isnan(b)) return 1e9f;
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = int32_t(0x80000000u) - ia;
  if (ib < 0) ib = int32_t(0x80000000u) - ib;
  return float(std::llabs(int64_t(ia) - int64_t(ib)));
}
bool same_bits(half a, half b) { return a.mg_bits == b.mg_bits || (std::isnan(float(a)) && std::isnan(float(b))); }
bool same_bits(bfloat a, bfloat b) { return a.mg_bits == b.mg_bits || (std::isnan(float(a)) && std::isnan(float(b))); }

void test_unqualified_calls() {
  const float x = 2.0f;
  const half h = half(0.5f);
  const int i = -7;
  const uint u = 5;
  const int fl = floor(i);  // floor(ix) assigned to int
  CHECK(fl == -7);
  CHECK(exp(1.0f) == float(std::exp(1.0)));
  CHECK(float(exp(h)) == float(half(std::exp(0.5))));
  CHECK(pow(x, 2) == 4.0f && max(u, 1) == 5u && min(i, 0) == -7 && max(x, 0) == 2.0f);
  CHECK(abs(i) == 7 && abs(-2.5f) == 2.5f && float(abs(-h)) == 0.5f && sqrt(4) == 2.0f);
  CHECK(std::exp(1.0) == exp(1.0));  // a double argument still reaches the C library
  CHECK(float(fmin3(bfloat(1.0f), bfloat(0.0f), bfloat(0.0f))) == 1.0f && float(metal::fmin3(half(1), half(0), half(0))) == 0.0f);
}

// --- IEEE special values ---
void test_special_values() {
  const float inf = INFINITY, nan = NAN;
  CHECK(exp(-inf) == 0.0f && exp(inf) == inf && std::isnan(exp(nan)) && exp(0.0f) == 1.0f);
  CHECK(exp2(-inf) == 0.0f && exp10(-inf) == 0.0f && exp2(-1.0f) == 0.5f && exp10(2.0f) == 100.0f && exp10(-1.0f) == 0.1f);
  CHECK(log(0.0f) == -inf && log(-0.0f) == -inf && std::isnan(log(-1.0f)) && log(inf) == inf && log(1.0f) == 0.0f);
  CHECK(log2(8.0f) == 3.0f && log10(1000.0f) == 3.0f && log2(0.0f) == -inf);
  CHECK(sqrt(-0.0f) == 0.0f && std::signbit(sqrt(-0.0f)) && std::isnan(sqrt(-1.0f)) && sqrt(inf) == inf);
  CHECK(rsqrt(0.0f) == inf && rsqrt(inf) == 0.0f && rsqrt(4.0f) == 0.5f && std::isnan(rsqrt(-1.0f)));
  CHECK(pow(0.0f, -1.0f) == inf && std::isnan(pow(-8.0f, 1.0f / 3.0f)) && pow(nan, 0.0f) == 1.0f && pow(1.0f, nan) == 1.0f);
  CHECK(pow(-2.0f, 3.0f) == -8.0f && pow(2.0f, -inf) == 0.0f);
  CHECK(std::isnan(powr(-1.0f, 2.0f)) && std::isnan(powr(0.0f, 0.0f)) && std::isnan(powr(inf, 0.0f)) && std::isnan(powr(1.0f, inf)));
  CHECK(powr(2.0f, 10.0f) == 1024.0f && powr(0.0f, 1.0f) == 0.0f);
  CHECK(atan2(0.0f, -0.0f) == float(M_PI) && atan2(-0.0f, -0.0f) == -float(M_PI) && atan2(1.0f, 0.0f) == float(M_PI_2));
  CHECK(tanh(inf) == 1.0f && tanh(-inf) == -1.0f && sinh(-inf) == -inf && cosh(-inf) == inf && atan(inf) == float(M_PI_2));
  CHECK(std::isnan(asin(2.0f)) && std::isnan(acos(-1.5f)) && acosh(1.0f) == 0.0f && atanh(1.0f) == inf && asinh(-0.0f) == 0.0f);
  CHECK(std::isnan(sin(inf)) && std::isnan(cos(-inf)) && std::isnan(tan(nan)));
  // sinpi/cospi/tanpi are exact at multiples of 1/2 (IEEE 754 signs)
  CHECK(sinpi(1.0f) == 0.0f && !std::signbit(sinpi(1.0f)) && std::signbit(sinpi(-2.0f)) && sinpi(0.5f) == 1.0f && sinpi(-1.5f) == 1.0f);
  CHECK(sinpi(1e20f) == 0.0f && cospi(1e20f) == 1.0f && cospi(0.5f) == 0.0f && !std::signbit(cospi(1.5f)) && cospi(1.0f) == -1.0f);
  CHECK(sinpi(0.25f) == float(std::sqrt(0.5)) && cospi(0.25f) == float(std::sqrt(0.5)) && cospi(-3.0f) == -1.0f);
  CHECK(tanpi(0.25f) == 1.0f && tanpi(0.5f) == inf && tanpi(1.5f) == -inf && tanpi(-0.5f) == -inf && tanpi(2.5f) == inf);
  CHECK(tanpi(1.0f) == 0.0f && std::signbit(tanpi(1.0f)) && !std::signbit(tanpi(-1.0f)) && !std::signbit(tanpi(2.0f)));
  CHECK(std::signbit(tanpi(-2.0f)) && std::signbit(tanpi(-0.0f)) && std::isnan(sinpi(inf)) && std::isnan(cospi(nan)));
  // rounding
  CHECK(round(2.5f) == 3.0f && round(-2.5f) == -3.0f && rint(2.5f) == 2.0f && rint(3.5f) == 4.0f && rint(-0.5f) == 0.0f);
  CHECK(std::signbit(rint(-0.5f)) && trunc(-1.7f) == -1.0f && floor(-1.5f) == -2.0f && ceil(-1.5f) == -1.0f && std::signbit(ceil(-0.5f)));
  CHECK(fract(-0.25f) == 0.75f && fract(2.5f) == 0.5f && fract(inf) == 0.0f && std::isnan(fract(nan)));
  CHECK(fract(-1e-10f) == 0x1.fffffep-1f && float(fract(half(-0.0001f))) == float(half::mg_from_bits(0x3bff)));
  CHECK(std::isnan(fmod(1.0f, 0.0f)) && fmod(5.5f, 2.0f) == 1.5f && fmod(-5.5f, 2.0f) == -1.5f);
  CHECK(fmin(nan, 1.0f) == 1.0f && fmax(1.0f, nan) == 1.0f && max(nan, 2.0f) == 2.0f && min(3.0f, nan) == 3.0f);
  CHECK(std::isnan(fmax(nan, nan)) && fmax3(1.0f, 5.0f, 3.0f) == 5.0f && fmin3(4.0f, 2.0f, 3.0f) == 2.0f && fmedian3(9.0f, 1.0f, 4.0f) == 4.0f);
  CHECK(clamp(5.0f, 0.0f, 1.0f) == 1.0f && clamp(-5, 0, 3) == 0 && clamp(nan, 0.0f, 1.0f) == 0.0f);
  CHECK(sign(-3.0f) == -1.0f && sign(2.0f) == 1.0f && std::signbit(sign(-0.0f)) && sign(0.0f) == 0.0f && sign(nan) == 0.0f);
  CHECK(saturate(nan) == 0.0f && saturate(2.0f) == 1.0f && saturate(-1.0f) == 0.0f && saturate(0.25f) == 0.25f);
  CHECK(step(1.0f, 0.5f) == 0.0f && step(1.0f, 1.0f) == 1.0f && smoothstep(0.0f, 1.0f, 0.5f) == 0.5f && smoothstep(0.0f, 1.0f, 2.0f) == 1.0f);
  CHECK(mix(2.0f, 4.0f, 0.25f) == 2.5f && copysign(3.0f, -0.0f) == -3.0f && divide(1.0f, 4.0f) == 0.25f);
  CHECK(fdim(5.0f, 3.0f) == 2.0f && fdim(3.0f, 5.0f) == 0.0f && std::isnan(fdim(nan, 1.0f)));
  CHECK(nextafter(1.0f, 2.0f) == 1.0f + FLT_EPSILON && nextafter(0.0f, -1.0f) == -0x1p-149f && nextafter(2.0f, 2.0f) == 2.0f);
  CHECK(nextafter(half(1), half(2)).mg_bits == 0x3c01 && nextafter(half(0.0f), half(-1)).mg_bits == 0x8001);
  CHECK(nextafter(half(65504), half(INFINITY)).mg_bits == 0x7c00 && nextafter(half(-0x1p-24f), half(1)).mg_bits == 0x8000);
  CHECK(nextafter(bfloat(1.0f), bfloat(0.0f)).mg_bits == 0x3f7f && std::isnan(float(nextafter(half(NAN), half(1)))));
  CHECK(ldexp(1.0f, -149) == 0x1p-149f && ldexp(1.0f, 128) == inf && ldexp(3.0f, 2) == 12.0f && float(ldexp(half(1), -24)) == 0x1p-24f);
  int e = 99;
  CHECK(frexp(8.0f, e) == 0.5f && e == 4);
  CHECK(frexp(0.0f, e) == 0.0f && e == 0);
  CHECK(frexp(-0x1p-149f, e) == -0.5f && e == -148);
  CHECK(ilogb(8.0f) == 3 && ilogb(0x1p-149f) == -149 && ilogb(half(0x1p-24f)) == -24);
  float ip = 0;
  CHECK(modf(-3.5f, ip) == -0.5f && ip == -3.0f);
  CHECK(modf(inf, ip) == 0.0f && ip == inf);
  float cv = 0;
  CHECK(sincos(0.0f, cv) == 0.0f && cv == 1.0f);
  CHECK(!isnormal(0x1p-127f) && isnormal(0x1p-126f) && !isnormal(0.0f) && !isnormal(inf) && isnormal(-1.0f));
  CHECK(isfinite(1.0f) && !isfinite(inf) && !isfinite(nan) && isinf(-inf) && !isinf(nan) && isnan(nan) && signbit(-0.0f));
  CHECK(isordered(1.0f, 2.0f) && !isordered(nan, 2.0f) && isunordered(1.0f, nan));
  CHECK(!isnormal(half::mg_from_bits(0x03ff)) && isnormal(half::mg_from_bits(0x0400)) && isnan(bfloat::mg_from_bits(0x7f81)));
  // half and bfloat overflow and underflow in their own range
  CHECK(exp(half(-INFINITY)).mg_bits == 0 && isinf(exp(half(12))) && float(exp(half(11))) == float(half(std::exp(11.0))));
  CHECK(isinf(log(half(0.0f))) && isnan(sqrt(half(-1))) && isinf(half(1) / half(0.0f)) && exp(bfloat(-INFINITY)).mg_bits == 0);
  CHECK(float(exp(bfloat(80))) == float(bfloat(std::exp(80.0))) && !isinf(exp(bfloat(80))));
}

// --- accuracy ---
struct Unary {
  const char *name;
  float (*f)(float);
  half (*h)(half);
  bfloat (*b)(bfloat);
  long double (*ref)(long double);
  float lo, hi;  // float test domain
};
long double pi_l() { return 3.141592653589793238462643383279502884L; }
// sin(pi x) with exact reduction, in long double.
long double sinpi_l(long double x) {
  if (std::isinf(x) || std::isnan(x)) return NAN;
  long double r = std::fmod(x, 2.0L);
  if (r == 0) return 0.0L * x;
  if (r > 1.5L) r -= 2;
  else if (r < -1.5L) r += 2;
  else if (r > 0.5L) r = 1 - r;
  else if (r < -0.5L) r = -1 - r;
  if (r == 0) return x > 0 ? 0.0L : -0.0L;
  return std::sin(pi_l() * r);
}
long double cospi_l(long double x) {
  if (std::isinf(x) || std::isnan(x)) return NAN;
  long double r = std::fabs(std::fmod(x, 2.0L));
  if (r > 1) r = 2 - r;
  if (r == 0.5L) return 0.0L;
  return r < 0.5L ? std::cos(pi_l() * r) : -std::cos(pi_l() * (1 - r));
}
long double tanpi_l(long double x) {
  const long double c = cospi_l(x);
  if (c == 0) {
    const long double n = std::floor(x);  // x = n + 1/2
    return std::fmod(std::fabs(n), 2.0L) == 0 ? INFINITY : -INFINITY;
  }
  return sinpi_l(x) / c;
}
long double rsqrt_l(long double x) { return 1.0L / std::sqrt(x); }
long double exp10_l(long double x) { return std::pow(10.0L, x); }

#define UN(NAME, REF, LO, HI)                                                                          \
  Unary {                                                                                              \
    #NAME, [](float x) { return metal::NAME(x); }, [](half x) { return metal::NAME(x); },               \
        [](bfloat x) { return metal::NAME(x); }, [](long double x) -> long double { return REF(x); }, LO, HI \
  }

void test_accuracy() {
  const Unary fns[] = {
      UN(exp, std::exp, -90, 90),       UN(exp2, std::exp2, -130, 130),    UN(exp10, exp10_l, -40, 40),
      UN(log, std::log, 0, 1e30f),      UN(log2, std::log2, 0, 1e30f),     UN(log10, std::log10, 0, 1e30f),
      UN(sin, std::sin, -100, 100),     UN(cos, std::cos, -100, 100),      UN(tan, std::tan, -100, 100),
      UN(asin, std::asin, -1, 1),       UN(acos, std::acos, -1, 1),        UN(atan, std::atan, -1e5f, 1e5f),
      UN(sinh, std::sinh, -90, 90),     UN(cosh, std::cosh, -90, 90),      UN(tanh, std::tanh, -20, 20),
      UN(asinh, std::asinh, -1e5f, 1e5f), UN(acosh, std::acosh, 1, 1e5f),  UN(atanh, std::atanh, -1, 1),
      UN(sqrt, std::sqrt, 0, 1e30f),    UN(rsqrt, rsqrt_l, 0, 1e30f),      UN(sinpi, sinpi_l, -1000, 1000),
      UN(cospi, cospi_l, -1000, 1000),  UN(tanpi, tanpi_l, -1000, 1000),   UN(floor, std::floor, -1e6f, 1e6f),
      UN(ceil, std::ceil, -1e6f, 1e6f), UN(trunc, std::trunc, -1e6f, 1e6f), UN(round, std::round, -1e6f, 1e6f),
      UN(rint, std::rint, -1e6f, 1e6f), UN(fabs, std::fabs, -1e6f, 1e6f),
  };
  std::mt19937 rng(2024);
  for (const Unary &u : fns) {
    // float: random inputs in the domain, plus random bit patterns; within 1 ulp of the
    // long double result rounded to float, and exact in all but a tiny fraction.
    long exact = 0, total = 0;
    float worst = 0;
    std::uniform_real_distribution<float> dom(u.lo, u.hi);
    for (int i = 0; i < 40000; ++i) {
      float x;
      if (i % 2) {
        x = dom(rng);
      } else {
        const uint32_t bits = uint32_t(rng());
        std::memcpy(&x, &bits, 4);
      }
      const float got = u.f(x), want = float(u.ref(x));
      const float d = ulp_diff(got, want);
      worst = std::max(worst, d);
      exact += d == 0;
      ++total;
    }
    CHECK_F(worst <= 1, "%s(float): worst error %g ulp", u.name, double(worst));
    CHECK_F(exact >= total - total / 1000, "%s(float): only %ld of %ld exact", u.name, exact, total);
    // half and bfloat: all 65,536 inputs, exact (the reference rounds the long double result once).
    long hbad = 0, bbad = 0;
    for (uint32_t b = 0; b < 65536; ++b) {
      const half hx = half::mg_from_bits(uint16_t(b));
      const half hw = half(double(u.ref(float(hx))));
      if (!same_bits(u.h(hx), hw)) {
        if (++hbad <= 3) std::printf("  %s(half 0x%04x) = 0x%04x, want 0x%04x\n", u.name, b, u.h(hx).mg_bits, hw.mg_bits);
      }
      const bfloat bx = bfloat::mg_from_bits(uint16_t(b));
      const bfloat bw = bfloat(double(u.ref(float(bx))));
      if (!same_bits(u.b(bx), bw)) {
        if (++bbad <= 3) std::printf("  %s(bfloat 0x%04x) = 0x%04x, want 0x%04x\n", u.name, b, u.b(bx).mg_bits, bw.mg_bits);
      }
    }
    CHECK_F(hbad == 0, "%s(half): %ld of 65536 inputs differ", u.name, hbad);
    CHECK_F(bbad == 0, "%s(bfloat): %ld of 65536 inputs differ", u.name, bbad);
  }
  // Binary functions on floats.
  std::uniform_real_distribution<float> d(-50, 50);
  float worst_pow = 0, worst_atan2 = 0;
  for (int i = 0; i < 100000; ++i) {
    const float x = std::fabs(d(rng)) / 10, y = d(rng) / 5, z = d(rng);
    worst_pow = std::max(worst_pow, ulp_diff(pow(x, y), float(std::pow((long double)x, (long double)y))));
    worst_atan2 = std::max(worst_atan2, ulp_diff(atan2(y, z), float(std::atan2((long double)y, (long double)z))));
    CHECK_F(fma(x, y, z) == std::fma(x, y, z), "fma(%g, %g, %g)", double(x), double(y), double(z));
    CHECK_F(fmod(z, y) == std::fmod(z, y), "fmod");
  }
  CHECK_F(worst_pow <= 1 && worst_atan2 <= 1, "pow worst %g ulp, atan2 worst %g ulp", double(worst_pow), double(worst_atan2));
  // half arithmetic functions round once
  for (uint32_t a = 0; a < 65536; a += 7) {
    const half x = half::mg_from_bits(uint16_t(a)), y = half::mg_from_bits(uint16_t(a * 40503u));
    CHECK_F(same_bits(fma(x, y, half(1)), half(std::fma(double(x), double(y), 1.0))), "fma(half)");
    CHECK_F(same_bits(pow(x, y), half(double(std::pow((long double)float(x), (long double)float(y))))), "pow(half 0x%04x, 0x%04x)",
            a, y.mg_bits);
  }
}

// --- exp/exp2 of float: the same bits as float(exp(double(x))) (the prelude computes them in double
// without libm and asks libm only near a rounding boundary) ---
using check::f2u;
using check::u2f;
// How many floats with bits b = first, first + step, ... (below 2^32) differ from libm's rounding.
long exp_mismatches(uint64_t first, uint64_t step, bool two) {
  long bad = 0;
  for (uint64_t b = first; b < (1ull << 32); b += step) {
    const float x = u2f(uint32_t(b));
    const float got = two ? metal::exp2(x) : metal::exp(x);
    const float want = two ? float(std::exp2(double(x))) : float(std::exp(double(x)));
    if (f2u(got) != f2u(want) && ++bad <= 3)
      std::printf("  %s(%a) = %a, libm %a\n", two ? "exp2" : "exp", double(x), double(got), double(want));
  }
  return bad;
}
void test_exp_as_libm(bool exhaustive) {
  // Inputs whose double result lies next to a float halfway point (1 + x near 1 + 2^-24): the
  // libm path decides them; then the ends of the fast range, specials and a spread of bit patterns.
  const float edge[] = {0x1.ffffep-25f, 0x1.ffffe2p-25f, 0x1.fffffep-25f, 0x1p-24f, 0x1.000002p-24f, 0x1.71546p-24f,
                        0x1.715466p-24f, -87.0f, -86.99999f, 88.0f, 87.99999f, -126.0f, -125.99999f, 128.0f, 127.99999f,
                        -87.5f, 88.5f, -103.9f, -149.0f, -150.0f, 0.0f, -0.0f, 1.0f, -1.0f, 0x1p-149f, 1e-30f,
                        INFINITY, -INFINITY, NAN, -NAN, u2f(0x7fc01234u), u2f(0x7f801234u)};
  long bad = 0;
  for (float x : edge) {
    for (int two = 0; two < 2; ++two) {
      const float got = two ? metal::exp2(x) : metal::exp(x);
      const float want = two ? float(std::exp2(double(x))) : float(std::exp(double(x)));
      if (f2u(got) != f2u(want) && ++bad <= 3) std::printf("  %s(%a) = %a, libm %a\n", two ? "exp2" : "exp", double(x), double(got), double(want));
    }
  }
  CHECK_F(bad == 0, "exp/exp2 at %ld edge inputs differ from libm's rounding", bad);
  const uint64_t step = exhaustive ? 1 : 1021;
  // Two threads split the range (the exhaustive sweep is about a CPU minute per function).
  for (int two = 0; two < 2; ++two) {
    std::atomic<long> total{0};
    std::thread t([&] { total += exp_mismatches(0, 2 * step, two); });
    total += exp_mismatches(step, 2 * step, two);
    t.join();
    CHECK_F(total == 0, "%s(float): %ld inputs differ from libm's rounding", two ? "exp2" : "exp", total.load());
  }
  // Vectors are the scalar function per component.
  const float4 v(0x1.ffffe2p-25f, -3.5f, 87.5f, -INFINITY);
  const float4 e = exp(v), e2 = exp2(v);
  bool ok = true;
  for (int i = 0; i < 4; ++i) ok = ok && f2u(e[i]) == f2u(float(std::exp(double(v[i])))) && f2u(e2[i]) == f2u(float(std::exp2(double(v[i]))));
  CHECK(ok);
}

// --- vectors and mixed arguments are the scalar functions per component ---
void test_vectors() {
  const float4 v(0.5f, -1.25f, 3.0f, 100.0f);
  const float4 e = exp(v), p = pow(v, 2.0f), c = clamp(v, 0, 1), m = mix(v, float4(1), 0.5f), f = fma(v, v, 1.0f);
  const half3 hv(half(0.5f), half(2), half(-3));
  const half3 hs = sqrt(hv);
  const int4 iv(-5, 0, 7, INT_MIN);
  const int4 ia = abs(iv), mx = max(iv, 0), cl = clamp(iv, -1, 1);
  bool ok = true;
  for (int i = 0; i < 4; ++i) {
    ok = ok && e[i] == exp(v[i]) && p[i] == pow(v[i], 2.0f) && c[i] == clamp(v[i], 0.0f, 1.0f);
    ok = ok && m[i] == mix(v[i], 1.0f, 0.5f) && f[i] == fma(v[i], v[i], 1.0f);
    // metal::abs: with <cstdlib> included, unqualified abs(int) is the C library's (INT_MIN: undefined).
    ok = ok && ia[i] == metal::abs(iv[i]) && mx[i] == max(iv[i], 0) && cl[i] == clamp(iv[i], -1, 1);
  }
  for (int i = 0; i < 3; ++i) ok = ok && same_bits(hs[i], sqrt(hv[i]));
  CHECK(ok);
  CHECK(ia.w == INT_MIN);  // abs(INT_MIN) wraps, no undefined behaviour
  CHECK(all(isnan(float2(NAN, 1)) == bool2(true, false)) && all(sign(float3(-2, 0, 5)) == float3(-1, 0, 1)));
  int2 ex;
  const float2 mant = frexp(float2(8, 3), ex);
  CHECK(mant.x == 0.5f && ex.x == 4 && mant.y == 0.75f && ex.y == 2);
  CHECK(all(ldexp(float2(1, 3), int2(3, -1)) == float2(8, 1.5f)) && all(ldexp(float3(1), 2) == float3(4)));
  float3 ip;
  CHECK(all(modf(float3(1.25f, -2.5f, 3), ip) == float3(0.25f, -0.5f, 0)) && all(ip == float3(1, -2, 3)));
  float2 cs;
  const float2 sn = sincos(float2(0, M_PI_F / 2), cs);
  CHECK(sn.x == 0 && sn.y == 1 && cs.x == 1 && std::fabs(cs.y) < 1e-7f);
  CHECK(all(select(int4(1, 2, 3, 4), int4(5, 6, 7, 8), bool4(true, false, true, false)) == int4(5, 2, 7, 4)));
  CHECK(all(select(float2(1, 2), float2(3, 4), true) == float2(3, 4)) && select(1, 2, false) == 1);
  CHECK(all(bool3(true)) && !all(bool2(true, false)) && any(bool4(false, false, true, false)) && !any(bool2(false)));
  CHECK(all(max3(int3(1, 9, 3), int3(4, 2, 6), 5) == int3(5, 9, 6)) && all(median3(float2(1, 8), float2(5, 2), float2(3, 4)) == float2(3, 4)));
  CHECK(all(step(float4(0.5f), float4(0, 0.5f, 1, -1)) == float4(0, 1, 1, 0)));
  CHECK(all(abs(v.xy) == float2(0.5f, 1.25f)) && length(v.zw) == float(std::sqrt(9.0 + 10000.0)));
}

// --- integer functions against 128-bit references ---
// The bit-loop references, on the low W bits of a uint64_t: one function for all eight types (as a
// template they were inlined and optimised eight times, most of this file's build).
struct BitRefs {
  int lead, trail, pop;
  uint64_t rev, rot, ext, ins;
};
__attribute__((noinline)) BitRefs bit_refs(uint64_t ux, int W, bool is_signed, int s, uint off, uint nb, uint64_t z) {
  BitRefs r{0, 0, 0, 0, 0, 0, 0};
  const uint64_t mask = W == 64 ? ~0ull : (1ull << W) - 1;
  for (int b = W - 1; b >= 0 && !((ux >> b) & 1u); --b) ++r.lead;
  for (int b = 0; b < W && !((ux >> b) & 1u); ++b) ++r.trail;
  for (int b = 0; b < W; ++b) {
    r.pop += (ux >> b) & 1u;
    if ((ux >> b) & 1u) r.rev |= 1ull << (W - 1 - b);
  }
  r.rot = (s == 0 ? ux : (ux << s) | (ux >> (W - s))) & mask;
  for (uint b = 0; b < nb; ++b) r.ext |= ((ux >> (off + b)) & 1u) << b;
  if (is_signed && nb > 0 && nb < uint(W) && ((r.ext >> (nb - 1)) & 1u)) r.ext = (r.ext | (~0ull << nb)) & mask;
  r.ins = ux;
  for (uint b = 0; b < nb; ++b) r.ins = (r.ins & ~(1ull << (off + b))) | (((z >> b) & 1u) << (off + b));
  return r;
}
template <class T>
void test_integer_type(std::mt19937_64 &rng) {
  using U = std::make_unsigned_t<T>;
  constexpr int W = int(sizeof(T) * 8);
  constexpr __int128 lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  auto sat = [&](__int128 v) { return T(v < lo ? lo : v > hi ? hi : v); };
  const T edge[] = {T(0), T(1), T(-1), T(lo), T(hi), T(lo + 1), T(hi - 1), T(2), T(W)};
  for (int iter = 0; iter < 3000; ++iter) {
    const T x = iter < 81 ? edge[iter % 9] : T(rng()), y = iter < 81 ? edge[iter / 9] : T(rng() >> (rng() % W)), z = T(rng());
    const U ux = U(x);
    const int s = int(U(y) % U(W));
    // (off and nb drawn here, before the references, in the order the checks below used to)
    const uint off = uint(rng() % W), nb = uint(rng() % (W - off + 1));
    const BitRefs ref = bit_refs(uint64_t(ux), W, std::is_signed<T>::value, s, off, nb, uint64_t(U(z)));
    const __int128 X = x, Y = y, Z = z;
    const __int128 floor_half = (X + Y) >= 0 ? (X + Y) / 2 : -((-(X + Y) + 1) / 2);
    const __int128 ceil_half = (X + Y + 1) >= 0 ? (X + Y + 1) / 2 : -((-(X + Y + 1) + 1) / 2);
    // Products in 128 bits: signed for signed T, unsigned for unsigned T (2^64-1 squared needs it).
    T high, want_ms;
    if constexpr (std::is_signed<T>::value) {
      const __int128 prod = X * Y;
      high = T(prod >> W);  // floor division by 2^W
      want_ms = sat(prod + Z);
    } else {
      const unsigned __int128 prod = (unsigned __int128)ux * (unsigned __int128)U(y), e = prod + U(z);
      high = T(prod >> W);
      want_ms = e > (unsigned __int128)hi ? T(hi) : T(e);
    }
    bool ok = clz(x) == T(ref.lead) && ctz(x) == T(ref.trail) && popcount(x) == T(ref.pop) && reverse_bits(x) == T(U(ref.rev));
    ok = ok && rotate(x, y) == T(U(ref.rot)) && hadd(x, y) == T(floor_half) && rhadd(x, y) == T(ceil_half);
    ok = ok && mulhi(x, y) == high && addsat(x, y) == sat(X + Y) && subsat(x, y) == sat(X - Y);
    ok = ok && absdiff(x, y) == T(U(X > Y ? X - Y : Y - X)) && madhi(x, y, z) == T(U(uint64_t(U(high)) + uint64_t(U(z))));
    ok = ok && mul24(x, y) == T(U(uint64_t(ux) * uint64_t(U(y)))) && mad24(x, y, z) == T(U(uint64_t(ux) * uint64_t(U(y)) + uint64_t(U(z))));
    ok = ok && madsat(x, y, z) == want_ms;
    ok = ok && max(x, y) == T(X > Y ? X : Y) && min(x, y) == T(X < Y ? X : Y) && metal::abs(x) == T(X < 0 ? U(-X) : U(X));
    ok = ok && median3(x, y, z) == T(std::max(std::min(X, Y), std::min(std::max(X, Y), Z)));
    // extract/insert against bit loops
    ok = ok && extract_bits(x, off, nb) == T(U(ref.ext)) && insert_bits(x, z, off, nb) == T(U(ref.ins));
    CHECK_F(ok, "integer functions on %d-bit %s values %lld, %lld, %lld", W, std::is_signed<T>::value ? "signed" : "unsigned",
            (long long)x, (long long)y, (long long)z);
  }
  const vec<T, 4> v(T(1), T(0), T(-1), T(8));
  const vec<T, 4> cz = clz(v), pc = popcount(v);
  CHECK(cz[0] == T(W - 1) && cz[1] == T(W) && cz[2] == T(0) && pc[2] == T(W) && pc[3] == T(1));
  CHECK(all(extract_bits(v, 0, 1) == vec<T, 4>(T(std::is_signed<T>::value ? -1 : 1), T(0), T(std::is_signed<T>::value ? -1 : 1), T(0))));
}

// --- geometric functions against double arithmetic ---
void test_geometric() {
  const float3 a(1, 2, 3), b(-4, 5, 0.5f);
  CHECK(dot(a, b) == 7.5f && length_squared(a) == 14.0f && length(a) == float(std::sqrt(14.0)));
  CHECK(distance(a, b) == float(std::sqrt(25.0 + 9.0 + 6.25)) && distance_squared(a, b) == 40.25f);
  CHECK(all(cross(a, b) == float3(2 * 0.5f - 3 * 5, 3 * -4 - 1 * 0.5f, 1 * 5 - 2 * -4)));
  const float3 n = normalize(a);
  CHECK(n.x == float(1 / std::sqrt(14.0)) && n.z == float(3 / std::sqrt(14.0)));
  CHECK(all(reflect(float2(1, -1), float2(0, 1)) == float2(1, 1)));
  CHECK(all(faceforward(float2(0, 1), float2(0, -1), float2(0, 1)) == float2(0, 1)));
  CHECK(all(faceforward(float2(0, 1), float2(0, 1), float2(0, 1)) == float2(0, -1)));
  CHECK(all(refract(float2(0, -1), float2(0, 1), 1.0f) == float2(0, -1)));
  CHECK(all(refract(float2(1, -0.1f), normalize(float2(0, 1)), 10.0f) == float2(0)));  // total internal reflection
  CHECK(float(dot(half2(half(1.5f), half(2)), half2(half(2), half(0.25f)))) == 3.5f);
  CHECK(length(float2(3e30f, 4e30f)) == 5e30f);  // no overflow in the squares
}

void test_constants() {
  CHECK(M_PI_F == float(M_PI) && M_E_F == float(M_E) && M_SQRT2_F == float(M_SQRT2) && M_LN2_F == float(M_LN2));
  CHECK(M_PI_2_F == float(M_PI_2) && M_1_PI_F == float(M_1_PI) && M_LOG2E_F == float(M_LOG2E) && M_2_SQRTPI_F == float(M_2_SQRTPI));
  CHECK(M_PI_H.mg_bits == half(M_PI).mg_bits && float(HALF_MAX) == 65504.0f && float(HALF_EPSILON) == 0x1p-10f && float(HALF_MIN) == 0x1p-14f);
  CHECK(MAXFLOAT == FLT_MAX && isinf(INFINITY) && isnan(NAN) && isinf(HUGE_VALF));
}

}  // namespace

int main(int argc, char **argv) {
  test_unqualified_calls();
  test_special_values();
  test_accuracy();
  test_exp_as_libm(argc > 1 && std::strcmp(argv[1], "--exhaustive") == 0);
  test_vectors();
  std::mt19937_64 rng(5);
  test_integer_type<char>(rng);
  test_integer_type<uchar>(rng);
  test_integer_type<short>(rng);
  test_integer_type<ushort>(rng);
  test_integer_type<int>(rng);
  test_integer_type<uint>(rng);
  test_integer_type<long>(rng);
  test_integer_type<ulong>(rng);
  test_geometric();
  test_constants();
  return check::finish("math_functions");
}
