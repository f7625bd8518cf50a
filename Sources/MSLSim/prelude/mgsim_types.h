// mgsim_types.h — Metal Shading Language scalar and vector types for the CPU simulator's prelude.
//
// Plain C++17 (g++ 12, clang). Provides what MSL provides, where MSL provides it:
//   global    half, bfloat, uchar/ushort/uint/ulong, {float,half,bfloat,int,uint,short,ushort,char,
//             uchar,bool,long,ulong}{2,3,4} with MSL's sizes and alignments, packed_* vectors
//   metal::   vec<T, N>, as_type, numeric_limits, type traits, array, uniform
// Implementation types live in mgsim::lang: argument-dependent lookup for their operators then never
// looks into the execution layer's namespace (mgsim), and the execution layer's names never leak
// into overload sets of MSL code. Internal member names start with mg_ (MSL code cannot use them).
// A class declaring `using mgsim_value_type = T;` (checked-mode element references) is treated as a
// value of T by every operator and library function.
//
// Not provided, and rejected at compile time: matrix types (floatNxM), textures and samplers (a
// static_assert names them), vectors other than 2, 3 and 4 components, chained swizzles (v.xy.x),
// float16_t/bfloat16_t (not MSL names; MLX's headers typedef them).
//
// Conversions (bit-exact, round to nearest even; what the TypeScript references must match):
//   float/double -> half, bfloat: correctly rounded from the source value (one rounding, also from
//     double), overflow to ±inf, subnormals kept. NaN -> quiet NaN, sign and high payload bits kept
//     (half: 0x7e00 | payload>>13 for float, >>42 for double; bfloat: 0x7fc0 | payload bits).
//   half -> float: exact; a NaN keeps sign and payload and is quieted (as F16C and ARM FCVT do).
//   bfloat -> float: exact bit widening (bits << 16), NaN payloads untouched (as MLX does).
//   integers -> half/bfloat: one rounding from the exact integer value.
#ifndef MGSIM_TYPES_H
#define MGSIM_TYPES_H

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

// ---------------------------------------------------------------------------------------------
// Hooks shared with the execution layer (mgsim_exec.h).
namespace mgsim {
// Every memory access made by the atomics and simdgroup_load/store goes through an unqualified
// mgsim_resolve(p, count, write) call: identity for raw pointers; the execution layer's checked pointer
// brings its own overload (found by ADL) that bounds-checks `count` elements and records writes.
template <class T>
inline T *mgsim_resolve(T *p, size_t /*count*/, bool /*write*/, bool /*simdgroup*/ = false) {
  return p;
}
// The calling lane's index in its simdgroup (defined by mgsim_exec.h).
unsigned simd_lane_id();

// The MSL version a translated program is compiled for (__METAL_VERSION__, 320 for 3.2): the
// translator explicitly specialises language_version_of<program> before any user code. Prelude
// templates read it through language_version<T>, which depends on their own parameter so that it
// is looked up where they are instantiated. 0: the headers are used without a translated program.
struct program;
template <class Tag>
struct language_version_of {
  static constexpr unsigned value = 0;
};
template <class T>
constexpr unsigned language_version = language_version_of<std::conditional_t<sizeof(T) != 0, program, void>>::value;
template <class T>
constexpr bool version_at_least(unsigned v) {
  return language_version<T> == 0 || language_version<T> >= v;
}
}  // namespace mgsim

// MSL's unsigned scalar names (identical to glibc's <sys/types.h> typedefs where those exist).
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;

namespace mgsim {
namespace lang {

// Helper functions live in lang::impl: argument-dependent lookup for an MSL value (half, bfloat, a
// vector) searches lang but ignores its using-directives, so a user function template named like a
// helper (convert, component, ...) is never ambiguous with it. Only operators stay in lang.
namespace impl {}
using namespace impl;

struct half;
struct bfloat;
template <class T, int N>
struct vec;
template <class T, int N>
struct packed_vec;
template <class T, int N, int M, unsigned C>
struct swizzle;

template <class T>
using remove_cvref_t = std::remove_cv_t<std::remove_reference_t<T>>;
template <class T>
struct dependent_false : std::false_type {};

// Value proxies: a class that declares `using mgsim_value_type = T;` (the execution layer's
// checked-mode element references) is treated everywhere as a value of type T, so that
// exp(p[i]) or p[i] * 2.0f compile the same with and without checked pointers.
template <class X, class = void>
struct unwrap_s {
  using type = X;
};
template <class X>
struct unwrap_s<X, std::void_t<typename X::mgsim_value_type>> {
  using type = typename X::mgsim_value_type;
};
template <class X>
using value_t = typename unwrap_s<remove_cvref_t<X>>::type;
template <class X>
constexpr bool is_proxy_v = !std::is_same<remove_cvref_t<X>, value_t<X>>::value;
namespace impl {
template <class X>
constexpr decltype(auto) unwrap(const X &x) {
  if constexpr (is_proxy_v<X>) return static_cast<value_t<X>>(x);
  else return (x);
}
}  // namespace impl

// ---------------------------------------------------------------------------------------------
// Bit-exact conversions between float/double/integers and the 16-bit floating formats.
namespace detail {

template <class To, class From>
constexpr To bits_as(const From &f) {
  return __builtin_bit_cast(To, f);
}

constexpr uint16_t f32_to_f16(float f) {
  const uint32_t x = bits_as<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));  // NaN
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 (max + half ulp): inf
  if (ax >= 0x38800000u) {  // normal half: drop 13 mantissa bits, ties to even, rebias 127 -> 15
    const uint32_t r = ax + 0x0fffu + ((ax >> 13) & 1u) - 0x38000000u;
    return uint16_t(sign | (r >> 13));
  }
  if (ax <= 0x33000000u) return uint16_t(sign);  // <= 2^-25: zero (2^-25 itself ties to even 0)
  const uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;  // subnormal: value * 2^24 = m * 2^(e - 126)
  uint32_t r = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
  return uint16_t(sign | r);
}

constexpr uint16_t f64_to_f16(double d) {
  const uint64_t x = bits_as<uint64_t>(d);
  const uint32_t sign = uint32_t(x >> 48) & 0x8000u;
  const uint64_t ax = x & 0x7fffffffffffffffull;
  if (ax > 0x7ff0000000000000ull) return uint16_t(sign | 0x7e00u | uint32_t((ax >> 42) & 0x3ffu));
  if (ax >= 0x40effe0000000000ull) return uint16_t(sign | 0x7c00u);  // >= 65520
  if (ax >= 0x3f10000000000000ull) {  // >= 2^-14: normal
    const uint64_t r = ax + ((1ull << 41) - 1u) + ((ax >> 42) & 1u) - (uint64_t(1023 - 15) << 52);
    return uint16_t(sign | uint32_t(r >> 42));
  }
  if (ax <= 0x3e60000000000000ull) return uint16_t(sign);  // <= 2^-25
  const uint64_t e = ax >> 52, m = (ax & 0xfffffffffffffull) | (1ull << 52);
  const uint64_t shift = 1051u - e;  // value * 2^24 = m * 2^(e - 1051)
  uint64_t r = m >> shift;
  const uint64_t rem = m & ((1ull << shift) - 1u), halfway = 1ull << (shift - 1u);
  if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
  return uint16_t(sign | uint32_t(r));
}

constexpr float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return bits_as<float>(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
  if (e == 0) {
    const float v = float(m) * 0x1p-24f;  // exact: m < 2^10
    return sign ? -v : v;
  }
  return bits_as<float>(sign | ((e + 112u) << 23) | (m << 13));
}

constexpr uint16_t f32_to_bf16(float f) {
  const uint32_t x = bits_as<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // NaN: quiet
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);  // monotone bits: RNE incl. inf/subnormal
}

constexpr uint16_t f64_to_bf16(double d) {
  const uint64_t x = bits_as<uint64_t>(d);
  const uint32_t sign = uint32_t(x >> 48) & 0x8000u;
  const uint64_t ax = x & 0x7fffffffffffffffull;
  if (ax > 0x7ff0000000000000ull) return uint16_t(sign | 0x7fc0u | uint32_t((ax >> 45) & 0x7fu));
  if (ax >= 0x47eff00000000000ull) return uint16_t(sign | 0x7f80u);  // >= 0x1.ffp127: inf
  if (ax >= 0x3810000000000000ull) {  // >= 2^-126: normal
    const uint64_t r = ax + ((1ull << 44) - 1u) + ((ax >> 45) & 1u) - (uint64_t(1023 - 127) << 52);
    return uint16_t(sign | uint32_t(r >> 45));
  }
  if (ax <= 0x3790000000000000ull) return uint16_t(sign);  // <= 2^-134
  const uint64_t e = ax >> 52, m = (ax & 0xfffffffffffffull) | (1ull << 52);
  const uint64_t shift = 942u - e;  // value * 2^133 = m * 2^(e - 942)
  uint64_t r = m >> shift;
  const uint64_t rem = m & ((1ull << shift) - 1u), halfway = 1ull << (shift - 1u);
  if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
  return uint16_t(sign | uint32_t(r));
}

constexpr float bf16_to_f32(uint16_t b) {
  return bits_as<float>(uint32_t(b) << 16);
}

// An integer as a double that rounds like the integer: exact up to 53 bits, otherwise rounded to
// odd, so the second rounding (to 11 or 8 bits) is still correct.
template <class I>
constexpr double int_to_double(I v) {
  if constexpr (sizeof(I) <= 4) {
    return double(v);
  } else {
    const bool neg = std::is_signed<I>::value && v < I(0);
    uint64_t u = neg ? uint64_t(0) - uint64_t(v) : uint64_t(v);
    int shift = 0;
    while ((u >> shift) >= (1ull << 53)) ++shift;
    if (shift) u = (u >> shift) | uint64_t((u & ((1ull << shift) - 1u)) != 0);
    double r = double(u);
    for (int i = 0; i < shift; ++i) r *= 2.0;
    return neg ? -r : r;
  }
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// half: IEEE binary16. Converts implicitly from and to float, double and integers (MSL's usual
// arithmetic conversions); arithmetic rounds to half after every operation. One C++ limit: because
// the conversions go both ways, `c ? h : 0` (half with another arithmetic type) does not compile
// ("operands to ?: have different types"); MSL would pick half. Write `c ? h : half(0)`.
struct half {
  uint16_t mg_bits;

  half() = default;  // trivial: threadgroup memory is uninitialised
  constexpr half(float f) : mg_bits(detail::f32_to_f16(f)) {}
  constexpr half(double d) : mg_bits(detail::f64_to_f16(d)) {}
  template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>
  constexpr half(I i) : mg_bits(detail::f64_to_f16(detail::int_to_double(i))) {}
  constexpr explicit half(bfloat b);
  constexpr operator float() const { return detail::f16_to_f32(mg_bits); }

  static constexpr half mg_from_bits(uint16_t b) {
    half h{};
    h.mg_bits = b;
    return h;
  }
  // Compound assignment converts the result back, as MSL does (h += 1.5f is h = half(h + 1.5f)).
  template <class U>
  constexpr half &operator+=(const U &u) { return *this = half(*this + u); }
  template <class U>
  constexpr half &operator-=(const U &u) { return *this = half(*this - u); }
  template <class U>
  constexpr half &operator*=(const U &u) { return *this = half(*this * u); }
  template <class U>
  constexpr half &operator/=(const U &u) { return *this = half(*this / u); }
  constexpr half &operator++() { return *this = half(float(*this) + 1.0f); }
  constexpr half &operator--() { return *this = half(float(*this) - 1.0f); }
  constexpr half operator++(int) {
    const half t = *this;
    ++*this;
    return t;
  }
  constexpr half operator--(int) {
    const half t = *this;
    --*this;
    return t;
  }
};

// bfloat: the upper 16 bits of a binary32. As in MSL it converts implicitly only to float (the
// wider type); float, half and integers convert to it only explicitly.
struct bfloat {
  uint16_t mg_bits;

  bfloat() = default;
  constexpr explicit bfloat(float f) : mg_bits(detail::f32_to_bf16(f)) {}
  constexpr explicit bfloat(double d) : mg_bits(detail::f64_to_bf16(d)) {}
  template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>
  constexpr explicit bfloat(I i) : mg_bits(detail::f64_to_bf16(detail::int_to_double(i))) {}
  constexpr explicit bfloat(half h) : mg_bits(detail::f32_to_bf16(float(h))) {}
  constexpr operator float() const { return detail::bf16_to_f32(mg_bits); }

  static constexpr bfloat mg_from_bits(uint16_t b) {
    bfloat h{};
    h.mg_bits = b;
    return h;
  }
  template <class U>
  constexpr bfloat &operator+=(const U &u) { return *this = bfloat(*this + u); }
  template <class U>
  constexpr bfloat &operator-=(const U &u) { return *this = bfloat(*this - u); }
  template <class U>
  constexpr bfloat &operator*=(const U &u) { return *this = bfloat(*this * u); }
  template <class U>
  constexpr bfloat &operator/=(const U &u) { return *this = bfloat(*this / u); }
  constexpr bfloat &operator++() { return *this = bfloat(float(*this) + 1.0f); }
  constexpr bfloat &operator--() { return *this = bfloat(float(*this) - 1.0f); }
  constexpr bfloat operator++(int) {
    const bfloat t = *this;
    ++*this;
    return t;
  }
  constexpr bfloat operator--(int) {
    const bfloat t = *this;
    --*this;
    return t;
  }
};

constexpr half::half(bfloat b) : mg_bits(detail::f32_to_f16(float(b))) {}

// ---------------------------------------------------------------------------------------------
// Scalar and vector classification used by every operator and library function.
//   kind: 0 not an MSL scalar, 1 bool, 2 integer, 3 float (double stands for an MSL float
//   literal), 4 half, 5 bfloat.
template <class T>
struct scalar_kind : std::integral_constant<int, 0> {};
#define MGSIM_KIND(T, K) \
  template <>            \
  struct scalar_kind<T> : std::integral_constant<int, K> {};
MGSIM_KIND(bool, 1)
MGSIM_KIND(char, 2)
MGSIM_KIND(signed char, 2)
MGSIM_KIND(unsigned char, 2)
MGSIM_KIND(short, 2)
MGSIM_KIND(unsigned short, 2)
MGSIM_KIND(int, 2)
MGSIM_KIND(unsigned int, 2)
MGSIM_KIND(long, 2)
MGSIM_KIND(unsigned long, 2)
MGSIM_KIND(long long, 2)
MGSIM_KIND(unsigned long long, 2)
MGSIM_KIND(float, 3)
MGSIM_KIND(double, 3)
MGSIM_KIND(half, 4)
MGSIM_KIND(bfloat, 5)
#undef MGSIM_KIND
template <class T>
constexpr int kind_v = scalar_kind<value_t<T>>::value;

// Vector-likes: vec, packed_vec and swizzle proxies (an lvalue view of some components).
template <class V>
struct vec_traits {
  static constexpr int size = 0;
  static constexpr bool is_vec = false, is_swizzle = false;
  using elem = void;
};
template <class T, int N>
struct vec_traits<vec<T, N>> {
  static constexpr int size = N;
  static constexpr bool is_vec = true, is_swizzle = false;
  using elem = T;
};
template <class T, int N>
struct vec_traits<packed_vec<T, N>> {
  static constexpr int size = N;
  static constexpr bool is_vec = false, is_swizzle = false;
  using elem = T;
};
template <class T, int N, int M, unsigned C>
struct vec_traits<swizzle<T, N, M, C>> {
  static constexpr int size = M;
  static constexpr bool is_vec = false, is_swizzle = true;
  static constexpr unsigned code = C;
  using elem = T;
};
template <class V>
constexpr int vsize_v = vec_traits<value_t<V>>::size;
template <class V>
using velem_t = typename vec_traits<value_t<V>>::elem;
// Number of components an argument contributes to a vector constructor (negative: not allowed).
template <class X>
constexpr int ncomp_v = vsize_v<X> ? vsize_v<X> : kind_v<X> ? 1 : -1000;

// May a scalar of kind ks be combined with (converted to) vector elements of kind ke?
// Integer vectors take only integer/bool scalars; half and bfloat never mix with each other.
namespace impl {
constexpr bool scalar_fits(int ks, int ke) {
  return ks != 0 && ke != 0 && (ke <= 2 ? ks <= 2 : !((ks == 4 && ke == 5) || (ks == 5 && ke == 4)));
}
}  // namespace impl

template <class T, class = void>
struct has_type : std::false_type {};
template <class T>
struct has_type<T, std::void_t<typename T::type>> : std::true_type {};

// MSL's usual arithmetic conversions between two scalars: integers as in C++; a float (or a
// double literal) makes float; half or bfloat with integers stays half/bfloat; half with bfloat is
// an error.
namespace impl {
constexpr int pair_case(int ka, int kb) {
  return (ka == 0 || kb == 0)                                 ? 0
         : (ka <= 2 && kb <= 2)                               ? 1
         : (ka == 3 || kb == 3)                               ? 2
         : ((ka == 4 && kb == 5) || (ka == 5 && kb == 4))     ? 0
         : (ka == 4 || kb == 4)                               ? 3
                                                              : 4;
}
}  // namespace impl
template <class A, class B, int Case = pair_case(kind_v<A>, kind_v<B>)>
struct scalar_common {};
template <class A, class B>
struct scalar_common<A, B, 1> {
  using type = std::common_type_t<value_t<A>, value_t<B>>;
};
template <class A, class B>
struct scalar_common<A, B, 2> {
  using type = float;
};
template <class A, class B>
struct scalar_common<A, B, 3> {
  using type = half;
};
template <class A, class B>
struct scalar_common<A, B, 4> {
  using type = bfloat;
};

// Value conversion to an element type. Floating -> integer saturates and maps NaN to 0 (defined
// behaviour instead of C++'s undefined one); everything else is static_cast.
namespace impl {
template <class T>
constexpr T saturate_to_int(double d) {
  if (d != d) return T(0);
  if (d <= double(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (d >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return T(d);
}
}  // namespace impl
namespace impl {
template <class T, class S>
constexpr T convert(const S &s) {
  if constexpr (is_proxy_v<S>) {
    return convert<T>(unwrap(s));
  } else if constexpr (std::is_same<T, S>::value) {
    return s;
  } else if constexpr (std::is_same<T, bool>::value) {
    if constexpr (kind_v<S> >= 3) return float(s) != 0.0f;
    else return s != S(0);
  } else if constexpr (kind_v<T> == 2 && kind_v<S> >= 3) {
    return saturate_to_int<T>(double(s));
  } else {
    return static_cast<T>(s);
  }
}
}  // namespace impl

// ---------------------------------------------------------------------------------------------
// Swizzle proxies: a union member of a vector that reads/writes components C, one hex digit each
// (lowest digit first; the macros below paste 0x##i3##i2##i1##i0, which parses much faster than
// shift expressions). Kept to five members: ~1000 of these classes exist per element type.
namespace impl {
constexpr int swz_at(unsigned c, int i) {
  return int((c >> (4 * i)) & 15u);
}
}  // namespace impl
namespace impl {
constexpr bool swz_distinct(unsigned c, int m) {
  for (int i = 0; i < m; ++i)
    for (int j = i + 1; j < m; ++j)
      if (swz_at(c, i) == swz_at(c, j)) return false;
  return true;
}
}  // namespace impl
template <class T, int N, int M, unsigned C>
struct swizzle {
  T mg_e[N];

  swizzle() = default;
  swizzle(const swizzle &) = default;
  constexpr operator vec<T, M>() const {
    vec<T, M> r{};
    for (int i = 0; i < M; ++i) r.mg_e[i] = mg_e[swz_at(C, i)];
    return r;
  }
  // Assignment writes the selected components only (a.xy = b.xy must not copy a whole vector).
  constexpr swizzle &operator=(const swizzle &o) { return *this = vec<T, M>(o); }
  constexpr swizzle &operator=(const vec<T, M> &v) {
    static_assert(swz_distinct(C, M), "MSL: a swizzle that repeats a component cannot be assigned to");
    for (int i = 0; i < M; ++i) mg_e[swz_at(C, i)] = v.mg_e[i];
    return *this;
  }
};

namespace impl {
template <class V>
constexpr auto to_vec(const V &v) {
  using T = velem_t<V>;
  constexpr int N = vsize_v<V>;
  if constexpr (is_proxy_v<V>) {
    return to_vec(unwrap(v));
  } else if constexpr (vec_traits<remove_cvref_t<V>>::is_vec) {
    return v;
  } else if constexpr (vec_traits<remove_cvref_t<V>>::is_swizzle) {
    return vec<T, N>(v);
  } else {
    vec<T, N> r{};
    for (int i = 0; i < N; ++i) r.mg_e[i] = v.mg_e[i];
    return r;
  }
}
}  // namespace impl

// Component-name sets, one copy per nesting level (a macro cannot expand itself recursively).
#define MGSIM_XY_1(F, ...) F(x, 0, __VA_ARGS__) F(y, 1, __VA_ARGS__)
#define MGSIM_XY_2(F, ...) F(x, 0, __VA_ARGS__) F(y, 1, __VA_ARGS__)
#define MGSIM_XY_3(F, ...) F(x, 0, __VA_ARGS__) F(y, 1, __VA_ARGS__)
#define MGSIM_XY_4(F, ...) F(x, 0, __VA_ARGS__) F(y, 1, __VA_ARGS__)
#define MGSIM_XYZ_1(F, ...) MGSIM_XY_1(F, __VA_ARGS__) F(z, 2, __VA_ARGS__)
#define MGSIM_XYZ_2(F, ...) MGSIM_XY_2(F, __VA_ARGS__) F(z, 2, __VA_ARGS__)
#define MGSIM_XYZ_3(F, ...) MGSIM_XY_3(F, __VA_ARGS__) F(z, 2, __VA_ARGS__)
#define MGSIM_XYZ_4(F, ...) MGSIM_XY_4(F, __VA_ARGS__) F(z, 2, __VA_ARGS__)
#define MGSIM_XYZW_1(F, ...) MGSIM_XYZ_1(F, __VA_ARGS__) F(w, 3, __VA_ARGS__)
#define MGSIM_XYZW_2(F, ...) MGSIM_XYZ_2(F, __VA_ARGS__) F(w, 3, __VA_ARGS__)
#define MGSIM_XYZW_3(F, ...) MGSIM_XYZ_3(F, __VA_ARGS__) F(w, 3, __VA_ARGS__)
#define MGSIM_XYZW_4(F, ...) MGSIM_XYZ_4(F, __VA_ARGS__) F(w, 3, __VA_ARGS__)
#define MGSIM_RG_1(F, ...) F(r, 0, __VA_ARGS__) F(g, 1, __VA_ARGS__)
#define MGSIM_RG_2(F, ...) F(r, 0, __VA_ARGS__) F(g, 1, __VA_ARGS__)
#define MGSIM_RG_3(F, ...) F(r, 0, __VA_ARGS__) F(g, 1, __VA_ARGS__)
#define MGSIM_RG_4(F, ...) F(r, 0, __VA_ARGS__) F(g, 1, __VA_ARGS__)
#define MGSIM_RGB_1(F, ...) MGSIM_RG_1(F, __VA_ARGS__) F(b, 2, __VA_ARGS__)
#define MGSIM_RGB_2(F, ...) MGSIM_RG_2(F, __VA_ARGS__) F(b, 2, __VA_ARGS__)
#define MGSIM_RGB_3(F, ...) MGSIM_RG_3(F, __VA_ARGS__) F(b, 2, __VA_ARGS__)
#define MGSIM_RGB_4(F, ...) MGSIM_RG_4(F, __VA_ARGS__) F(b, 2, __VA_ARGS__)
#define MGSIM_RGBA_1(F, ...) MGSIM_RGB_1(F, __VA_ARGS__) F(a, 3, __VA_ARGS__)
#define MGSIM_RGBA_2(F, ...) MGSIM_RGB_2(F, __VA_ARGS__) F(a, 3, __VA_ARGS__)
#define MGSIM_RGBA_3(F, ...) MGSIM_RGB_3(F, __VA_ARGS__) F(a, 3, __VA_ARGS__)
#define MGSIM_RGBA_4(F, ...) MGSIM_RGB_4(F, __VA_ARGS__) F(a, 3, __VA_ARGS__)
// Every 2-, 3- and 4-component selection from set S of an N-vector (names pasted: x##y##z).
#define MGSIM_SWZ_ALL(S, N) S##_1(MGSIM_SWZ_A, S, N)
#define MGSIM_SWZ_A(c0, i0, S, N) S##_2(MGSIM_SWZ_B, S, N, c0, i0)
#define MGSIM_SWZ_B(c1, i1, S, N, c0, i0)                                 \
  ::mgsim::lang::swizzle<T, N, 2, 0x##i1##i0> c0##c1; \
  S##_3(MGSIM_SWZ_C, S, N, c0, i0, c1, i1)
#define MGSIM_SWZ_C(c2, i2, S, N, c0, i0, c1, i1)                                         \
  ::mgsim::lang::swizzle<T, N, 3, 0x##i2##i1##i0> c0##c1##c2; \
  S##_4(MGSIM_SWZ_D, N, c0, i0, c1, i1, c2, i2)
#define MGSIM_SWZ_D(c3, i3, N, c0, i0, c1, i1, c2, i2) \
  ::mgsim::lang::swizzle<T, N, 4, 0x##i3##i2##i1##i0> c0##c1##c2##c3;

#define MGSIM_VEC_UNION_2 \
  union {                 \
    T mg_e[2];            \
    struct {              \
      T x, y;             \
    };                    \
    struct {              \
      T r, g;             \
    };                    \
    MGSIM_SWZ_ALL(MGSIM_XY, 2) MGSIM_SWZ_ALL(MGSIM_RG, 2) \
  };
#define MGSIM_VEC_UNION_3 \
  union {                 \
    T mg_e[3];            \
    struct {              \
      T x, y, z;          \
    };                    \
    struct {              \
      T r, g, b;          \
    };                    \
    MGSIM_SWZ_ALL(MGSIM_XYZ, 3) MGSIM_SWZ_ALL(MGSIM_RGB, 3) \
  };
#define MGSIM_VEC_UNION_4 \
  union {                 \
    T mg_e[4];            \
    struct {              \
      T x, y, z, w;       \
    };                    \
    struct {              \
      T r, g, b, a;       \
    };                    \
    MGSIM_SWZ_ALL(MGSIM_XYZW, 4) MGSIM_SWZ_ALL(MGSIM_RGBA, 4) \
  };

// Members common to vec<T, N> and packed_vec<T, N> (NAME is the class).
#define MGSIM_VEC_COMMON(NAME, N)                                                                  \
  NAME() = default;                                                                                \
  NAME(const NAME &) = default;                                                                    \
  constexpr NAME &operator=(const NAME &o) {                                                       \
    for (int i = 0; i < N; ++i) mg_e[i] = o.mg_e[i];                                               \
    return *this;                                                                                  \
  }                                                                                                \
  /* A scalar replicates into every component: implicitly when it converts implicitly to T. */    \
  template <class S, std::enable_if_t<splat_implicit<S, T>, int> = 0>                            \
  constexpr NAME(const S &s) : mg_e{} {                                                            \
    const T t = convert<T>(s);                                                                     \
    for (int i = 0; i < N; ++i) mg_e[i] = t;                                                       \
  }                                                                                                \
  template <class S, std::enable_if_t<splat_explicit<S, T>, int> = 0>                            \
  constexpr explicit NAME(const S &s) : mg_e{} {                                                   \
    const T t = convert<T>(s);                                                                     \
    for (int i = 0; i < N; ++i) mg_e[i] = t;                                                       \
  }                                                                                                \
  /* Vectors of another element type convert only explicitly: float4(int4(...)). */               \
  template <class V, std::enable_if_t<vsize_v<V> == N && !std::is_same<velem_t<V>, T>::value, int> = 0> \
  constexpr explicit NAME(const V &v) : mg_e{} {                                                   \
    const auto w = to_vec(v);                                                                      \
    for (int i = 0; i < N; ++i) mg_e[i] = convert<T>(w.mg_e[i]);                                   \
  }                                                                                                \
  /* Concatenation of scalars and vectors with N components in total: float4(f2, f3.xy). */       \
  template <class A0, class A1, class... As,                                                       \
            std::enable_if_t<(ncomp_v<A0> + ncomp_v<A1> + (0 + ... + ncomp_v<As>)) == N, int> = 0> \
  constexpr NAME(const A0 &a0, const A1 &a1, const As &...as) : mg_e{} {                          \
    int k = 0;                                                                                     \
    mg_put(k, a0);                                                                                 \
    mg_put(k, a1);                                                                                 \
    (mg_put(k, as), ...);                                                                          \
  }                                                                                                \
  template <class X>                                                                               \
  constexpr void mg_put(int &k, const X &x) {                                                      \
    if constexpr (vsize_v<X> == 0) {                                                               \
      mg_e[k++] = convert<T>(x);                                                                   \
    } else {                                                                                       \
      const auto w = to_vec(x);                                                                    \
      for (int i = 0; i < vsize_v<X>; ++i) mg_e[k++] = convert<T>(w.mg_e[i]);                      \
    }                                                                                              \
  }                                                                                                \
  constexpr T &operator[](size_t i) { return mg_e[i]; }                                            \
  constexpr const T &operator[](size_t i) const { return mg_e[i]; }

// Scalar -> vector constructors. std::conjunction stops at the cheap test, so vector-likes (which
// meet these constructors in every conversion) never instantiate is_convertible.
template <class S, class T>
constexpr bool splat_implicit =
    std::conjunction<std::bool_constant<(kind_v<S> != 0)>, std::is_convertible<S, T>>::value;
template <class S, class T>
constexpr bool splat_explicit =
    std::conjunction<std::bool_constant<(kind_v<S> != 0)>, std::negation<std::is_convertible<S, T>>>::value;

// MSL alignment of a vector: its size, with 3-component vectors padded to 4.
template <class T, int N>
constexpr size_t vec_align = sizeof(T) * (N == 3 ? 4 : N);

template <class T, int N>
struct vec {
  static_assert(N >= 2 && N <= 4, "metalgrad MSL simulator: only vectors of 2, 3 or 4 components are supported");
};

// Same-element-type conversions between a vector and its packed form: packed -> vec implicitly,
// vec -> packed explicitly or by assignment (both directions implicit would make `c ? p : v`
// ambiguous).
#define MGSIM_VEC_SPECIALIZATION(N)                                                                \
  template <class T>                                                                               \
  struct alignas(vec_align<T, N>) vec<T, N> {                                                      \
    static_assert(kind_v<T> != 0 && std::is_same<T, remove_cvref_t<T>>::value,                   \
                  "MSL vectors hold bool, integer, float, half or bfloat components");             \
    MGSIM_VEC_UNION_##N                                                                            \
    MGSIM_VEC_COMMON(vec, N)                                                                       \
    constexpr vec(const packed_vec<T, N> &p) : mg_e{} {                                            \
      for (int i = 0; i < N; ++i) mg_e[i] = p.mg_e[i];                                             \
    }                                                                                              \
    template <class W, std::enable_if_t<is_proxy_v<W> && std::is_same<value_t<W>, packed_vec<T, N>>::value, int> = 0> \
    constexpr vec(const W &w) : vec(value_t<W>(w)) {}                                              \
  };                                                                                               \
  template <class T>                                                                               \
  struct packed_vec<T, N> {                                                                        \
    static_assert(kind_v<T> != 0 && std::is_same<T, remove_cvref_t<T>>::value,                   \
                  "MSL packed vectors hold integer, float, half or bfloat components");            \
    MGSIM_VEC_UNION_##N                                                                            \
    MGSIM_VEC_COMMON(packed_vec, N)                                                                \
    constexpr explicit packed_vec(const vec<T, N> &v) : mg_e{} {                                   \
      for (int i = 0; i < N; ++i) mg_e[i] = v.mg_e[i];                                             \
    }                                                                                              \
    constexpr packed_vec &operator=(const vec<T, N> &v) {                                          \
      for (int i = 0; i < N; ++i) mg_e[i] = v.mg_e[i];                                             \
      return *this;                                                                                \
    }                                                                                              \
  };

MGSIM_VEC_SPECIALIZATION(2)
MGSIM_VEC_SPECIALIZATION(3)
MGSIM_VEC_SPECIALIZATION(4)

// ---------------------------------------------------------------------------------------------
// Operators. One template per operator covers half/bfloat scalars and every vector form; the
// traits below reject anything MSL rejects (SFINAE), so built-in operators are unaffected.
enum op_cat { c_arith, c_mod, c_bit, c_shift, c_cmp, c_logic };
namespace impl {
constexpr bool elem_ok(int cat, int k) {
  return cat == c_arith                     ? k >= 2
         : (cat == c_mod || cat == c_shift) ? k == 2
         : cat == c_bit                     ? (k == 1 || k == 2)
         : cat == c_cmp                     ? k != 0
                                            : k == 1;
}
}  // namespace impl
namespace impl {
constexpr bool is_bool_result(int cat) {
  return cat == c_cmp || cat == c_logic;
}
}  // namespace impl

// An operand as the element loop sees it: vectors as vec<T, N>, scalars converted to T once (a
// shift count keeps its own type).
namespace impl {
template <class T, bool Keep, class X>
constexpr auto operand(const X &x) {
  if constexpr (vsize_v<X> != 0) return to_vec(x);
  else if constexpr (Keep) return value_t<X>(unwrap(x));
  else return convert<T>(x);
}
}  // namespace impl
namespace impl {
template <class X>
constexpr auto component(const X &x, int i) {
  if constexpr (vsize_v<X> != 0) return x.mg_e[i];
  else return x;
}
}  // namespace impl

template <int Cat, class A, class B, int NA = vsize_v<A>, int NB = vsize_v<B>, class = void>
struct binop {};

// Scalar with scalar, at least one of them half or bfloat: convert both to the common type, compute
// in float, round back.
template <int Cat, class A, class B>
struct binop<Cat, A, B, 0, 0,
             std::enable_if_t<std::conjunction<std::bool_constant<(kind_v<A> >= 4 || kind_v<B> >= 4) &&
                                                                   (Cat == c_arith || Cat == c_cmp)>,
                                               has_type<scalar_common<A, B>>>::value>> {
  using C = typename scalar_common<A, B>::type;
  using type = std::conditional_t<Cat == c_cmp, bool, C>;
  template <class Op>
  static constexpr type apply(const A &a, const B &b) {
    const float x = float(static_cast<C>(unwrap(a))), y = float(static_cast<C>(unwrap(b)));
    if constexpr (Cat == c_cmp) return Op::f(x, y);
    else return static_cast<C>(Op::f(x, y));
  }
};

template <int Cat, class T, int N, class A, class B>
struct vec_binop {
  using type = vec<std::conditional_t<is_bool_result(Cat), bool, T>, N>;
  using R = velem_t<type>;
  template <class Op>
  static constexpr type apply(const A &a, const B &b) {
    const auto na = operand<T, false>(a);
    const auto nb = operand<T, Cat == c_shift>(b);
    type r{};
    for (int i = 0; i < N; ++i) r.mg_e[i] = static_cast<R>(Op::f(component(na, i), component(nb, i)));
    return r;
  }
};

// Vector with vector: same length and element type (shifts: any integer element types).
template <int Cat, class A, class B, int N>
struct binop<Cat, A, B, N, N,
             std::enable_if_t<(N > 0) && elem_ok(Cat, kind_v<velem_t<A>>) &&
                              (std::is_same<velem_t<A>, velem_t<B>>::value ||
                               (Cat == c_shift && kind_v<velem_t<B>> == 2))>>
    : vec_binop<Cat, velem_t<A>, N, A, B> {};
// Vector with scalar (either side): the scalar converts to the element type.
template <int Cat, class A, class B, int N>
struct binop<Cat, A, B, N, 0,
             std::enable_if_t<(N > 0) && elem_ok(Cat, kind_v<velem_t<A>>) &&
                              scalar_fits(kind_v<B>, kind_v<velem_t<A>>)>>
    : vec_binop<Cat, velem_t<A>, N, A, B> {};
template <int Cat, class A, class B, int N>
struct binop<Cat, A, B, 0, N,
             std::enable_if_t<(N > 0) && Cat != c_shift && elem_ok(Cat, kind_v<velem_t<B>>) &&
                              scalar_fits(kind_v<A>, kind_v<velem_t<B>>)>>
    : vec_binop<Cat, velem_t<B>, N, A, B> {};

// Element operations. Shift counts use only the low log2(bits) bits (no undefined behaviour), and
// left shifts operate on the unsigned representation.
template <class X>
constexpr int bit_width_of = int(sizeof(X) * 8);
// Integer +, - and * wrap (as GPUs do) instead of overflowing into undefined behaviour: they compute
// on the unsigned form of the promoted type (ushort * ushort would otherwise overflow int).
template <class X, class Y>
using wrap_t = std::make_unsigned_t<decltype(std::declval<X>() + std::declval<Y>())>;
struct op_add {
  template <class X, class Y>
  static constexpr auto f(const X &x, const Y &y) {
    if constexpr (std::is_integral<X>::value && std::is_integral<Y>::value) return wrap_t<X, Y>(x) + wrap_t<X, Y>(y);
    else return x + y;
  }
};
struct op_sub {
  template <class X, class Y>
  static constexpr auto f(const X &x, const Y &y) {
    if constexpr (std::is_integral<X>::value && std::is_integral<Y>::value) return wrap_t<X, Y>(x) - wrap_t<X, Y>(y);
    else return x - y;
  }
};
struct op_mul {
  template <class X, class Y>
  static constexpr auto f(const X &x, const Y &y) {
    if constexpr (std::is_integral<X>::value && std::is_integral<Y>::value) return wrap_t<X, Y>(x) * wrap_t<X, Y>(y);
    else return x * y;
  }
};
struct op_div { template <class X, class Y> static constexpr auto f(const X &x, const Y &y) { return x / y; } };
struct op_mod { template <class X, class Y> static constexpr auto f(const X &x, const Y &y) { return x % y; } };
struct op_and { template <class X, class Y> static constexpr auto f(const X &x, const Y &y) { return x & y; } };
struct op_or { template <class X, class Y> static constexpr auto f(const X &x, const Y &y) { return x | y; } };
struct op_xor { template <class X, class Y> static constexpr auto f(const X &x, const Y &y) { return x ^ y; } };
struct op_shl {
  template <class X, class Y>
  static constexpr X f(const X &x, const Y &y) {
    return X(std::make_unsigned_t<X>(x) << (int(y) & (bit_width_of<X> - 1)));
  }
};
struct op_shr {
  template <class X, class Y>
  static constexpr X f(const X &x, const Y &y) {
    return X(x >> (int(y) & (bit_width_of<X> - 1)));
  }
};
struct op_eq { template <class X, class Y> static constexpr bool f(const X &x, const Y &y) { return x == y; } };
struct op_ne { template <class X, class Y> static constexpr bool f(const X &x, const Y &y) { return x != y; } };
struct op_lt { template <class X, class Y> static constexpr bool f(const X &x, const Y &y) { return x < y; } };
struct op_gt { template <class X, class Y> static constexpr bool f(const X &x, const Y &y) { return x > y; } };
struct op_le { template <class X, class Y> static constexpr bool f(const X &x, const Y &y) { return x <= y; } };
struct op_ge { template <class X, class Y> static constexpr bool f(const X &x, const Y &y) { return x >= y; } };
struct op_land { template <class X, class Y> static constexpr bool f(const X &x, const Y &y) { return x && y; } };
struct op_lor { template <class X, class Y> static constexpr bool f(const X &x, const Y &y) { return x || y; } };

#define MGSIM_BINARY(OP, FN, CAT)                                                                  \
  template <class A, class B, class BO = binop<CAT, remove_cvref_t<A>, remove_cvref_t<B>>,         \
            class R = typename BO::type>                                                           \
  constexpr R operator OP(const A &a, const B &b) {                                                \
    return BO::template apply<FN>(a, b);                                                           \
  }
// half with bfloat is an error in MSL; without these, both would convert to float and the built-in
// operator would accept them.
template <class A, class B>
constexpr bool mixes_half_bfloat =
    (kind_v<A> == 4 && kind_v<B> == 5) || (kind_v<A> == 5 && kind_v<B> == 4);
#define MGSIM_NO_HALF_BFLOAT(OP)                                                                   \
  template <class A, class B, std::enable_if_t<mixes_half_bfloat<A, B>, int> = 0>                  \
  void operator OP(const A &, const B &) = delete;
MGSIM_BINARY(+, op_add, c_arith)
MGSIM_BINARY(-, op_sub, c_arith)
MGSIM_BINARY(*, op_mul, c_arith)
MGSIM_BINARY(/, op_div, c_arith)
MGSIM_BINARY(%, op_mod, c_mod)
MGSIM_BINARY(&, op_and, c_bit)
MGSIM_BINARY(|, op_or, c_bit)
MGSIM_BINARY(^, op_xor, c_bit)
MGSIM_BINARY(<<, op_shl, c_shift)
MGSIM_BINARY(>>, op_shr, c_shift)
MGSIM_BINARY(==, op_eq, c_cmp)
MGSIM_BINARY(!=, op_ne, c_cmp)
MGSIM_BINARY(<, op_lt, c_cmp)
MGSIM_BINARY(>, op_gt, c_cmp)
MGSIM_BINARY(<=, op_le, c_cmp)
MGSIM_BINARY(>=, op_ge, c_cmp)
MGSIM_BINARY(&&, op_land, c_logic)
MGSIM_BINARY(||, op_lor, c_logic)
MGSIM_NO_HALF_BFLOAT(+)
MGSIM_NO_HALF_BFLOAT(-)
MGSIM_NO_HALF_BFLOAT(*)
MGSIM_NO_HALF_BFLOAT(/)
MGSIM_NO_HALF_BFLOAT(==)
MGSIM_NO_HALF_BFLOAT(!=)
MGSIM_NO_HALF_BFLOAT(<)
MGSIM_NO_HALF_BFLOAT(>)
MGSIM_NO_HALF_BFLOAT(<=)
MGSIM_NO_HALF_BFLOAT(>=)
#undef MGSIM_BINARY
#undef MGSIM_NO_HALF_BFLOAT

// Compound assignment on vector lvalues (vec, packed_vec, swizzle): a = a op b.
#define MGSIM_COMPOUND(OP, FN, CAT)                                                                \
  template <class A, class B, class BO = binop<CAT, A, remove_cvref_t<B>>,                         \
            std::enable_if_t<(vsize_v<A> > 0) && !std::is_const<A>::value && !is_proxy_v<A> &&     \
                                 std::is_same<typename BO::type, vec<velem_t<A>, vsize_v<A>>>::value, \
                             int> = 0>                                                             \
  constexpr A &operator OP##=(A &a, const B &b) {                                                  \
    a = BO::template apply<FN>(a, b);                                                              \
    return a;                                                                                      \
  }
MGSIM_COMPOUND(+, op_add, c_arith)
MGSIM_COMPOUND(-, op_sub, c_arith)
MGSIM_COMPOUND(*, op_mul, c_arith)
MGSIM_COMPOUND(/, op_div, c_arith)
MGSIM_COMPOUND(%, op_mod, c_mod)
MGSIM_COMPOUND(&, op_and, c_bit)
MGSIM_COMPOUND(|, op_or, c_bit)
MGSIM_COMPOUND(^, op_xor, c_bit)
MGSIM_COMPOUND(<<, op_shl, c_shift)
MGSIM_COMPOUND(>>, op_shr, c_shift)
#undef MGSIM_COMPOUND

// Unary operators.
enum unop_cat { u_neg, u_plus, u_not, u_lnot };
template <int Cat, class A, int N = vsize_v<A>, class = void>
struct unop {};
template <int Cat, class A>
struct unop<Cat, A, 0, std::enable_if_t<(kind_v<A> >= 4) && (Cat == u_neg || Cat == u_plus)>> {
  using type = value_t<A>;
  static constexpr type apply(const A &a) {
    const type v = unwrap(a);
    return Cat == u_neg ? type::mg_from_bits(uint16_t(v.mg_bits ^ 0x8000u)) : v;  // exact, also NaN
  }
};
template <int Cat, class A, int N>
struct unop<Cat, A, N,
            std::enable_if_t<(N > 0) && (Cat == u_lnot || (Cat == u_not ? kind_v<velem_t<A>> == 2
                                                                         : kind_v<velem_t<A>> >= 2))>> {
  using T = velem_t<A>;
  using type = vec<std::conditional_t<Cat == u_lnot, bool, T>, N>;
  static constexpr type apply(const A &a) {
    const auto v = to_vec(a);
    type r{};
    for (int i = 0; i < N; ++i) {
      if constexpr (Cat == u_neg && std::is_integral<T>::value) r.mg_e[i] = T(wrap_t<T, T>(0) - wrap_t<T, T>(v.mg_e[i]));
      else if constexpr (Cat == u_neg) r.mg_e[i] = T(-v.mg_e[i]);
      else if constexpr (Cat == u_plus) r.mg_e[i] = v.mg_e[i];
      else if constexpr (Cat == u_not) r.mg_e[i] = T(~v.mg_e[i]);
      else r.mg_e[i] = !convert<bool>(v.mg_e[i]);
    }
    return r;
  }
};
template <class A, class U = unop<u_neg, remove_cvref_t<A>>, class R = typename U::type>
constexpr R operator-(const A &a) {
  return U::apply(a);
}
template <class A, class U = unop<u_plus, remove_cvref_t<A>>, class R = typename U::type>
constexpr R operator+(const A &a) {
  return U::apply(a);
}
template <class A, class U = unop<u_not, remove_cvref_t<A>>, class R = typename U::type>
constexpr R operator~(const A &a) {
  return U::apply(a);
}
template <class A, class U = unop<u_lnot, remove_cvref_t<A>>, class R = typename U::type>
constexpr R operator!(const A &a) {
  return U::apply(a);
}

template <class A, std::enable_if_t<(vsize_v<A> > 0) && !std::is_const<A>::value && (kind_v<velem_t<A>> >= 2), int> = 0>
constexpr A &operator++(A &a) {
  return a += 1;
}
template <class A, std::enable_if_t<(vsize_v<A> > 0) && !std::is_const<A>::value && (kind_v<velem_t<A>> >= 2), int> = 0>
constexpr A &operator--(A &a) {
  return a -= 1;
}
template <class A, std::enable_if_t<(vsize_v<A> > 0) && !std::is_const<A>::value && (kind_v<velem_t<A>> >= 2), int> = 0>
constexpr auto operator++(A &a, int) {
  const auto old = to_vec(a);
  a += 1;
  return old;
}
template <class A, std::enable_if_t<(vsize_v<A> > 0) && !std::is_const<A>::value && (kind_v<velem_t<A>> >= 2), int> = 0>
constexpr auto operator--(A &a, int) {
  const auto old = to_vec(a);
  a -= 1;
  return old;
}

// ---------------------------------------------------------------------------------------------
// Constructs MSL has that the simulator does not: using one fails to compile with this message.
template <class T, int C, int R>
struct matrix {
  static_assert(dependent_false<T>::value,
                "metalgrad MSL simulator: matrix types (floatCxR, halfCxR, matrix<T, C, R>) are not supported");
};
enum class access { sample, read, write, read_write };
#define MGSIM_UNSUPPORTED_TEXTURE(NAME)                                                            \
  template <class T, access A = access::sample>                                                    \
  struct NAME {                                                                                    \
    static_assert(dependent_false<T>::value,                                                       \
                  "metalgrad MSL simulator: textures (" #NAME ") are not supported; use buffers"); \
  };
MGSIM_UNSUPPORTED_TEXTURE(texture1d)
MGSIM_UNSUPPORTED_TEXTURE(texture1d_array)
MGSIM_UNSUPPORTED_TEXTURE(texture2d)
MGSIM_UNSUPPORTED_TEXTURE(texture2d_array)
MGSIM_UNSUPPORTED_TEXTURE(texture3d)
MGSIM_UNSUPPORTED_TEXTURE(texturecube)
MGSIM_UNSUPPORTED_TEXTURE(depth2d)
#undef MGSIM_UNSUPPORTED_TEXTURE
struct sampler_is_not_supported_by_the_metalgrad_simulator;

}  // namespace lang
}  // namespace mgsim

// ---------------------------------------------------------------------------------------------
// Global MSL type names.
using half = ::mgsim::lang::half;
using bfloat = ::mgsim::lang::bfloat;
#define MGSIM_VECTOR_NAMES(E)                           \
  typedef ::mgsim::lang::vec<E, 2> E##2;                \
  typedef ::mgsim::lang::vec<E, 3> E##3;                \
  typedef ::mgsim::lang::vec<E, 4> E##4;
#define MGSIM_PACKED_NAMES(E)                                  \
  typedef ::mgsim::lang::packed_vec<E, 2> packed_##E##2;       \
  typedef ::mgsim::lang::packed_vec<E, 3> packed_##E##3;       \
  typedef ::mgsim::lang::packed_vec<E, 4> packed_##E##4;
MGSIM_VECTOR_NAMES(float)
MGSIM_VECTOR_NAMES(half)
MGSIM_VECTOR_NAMES(bfloat)
MGSIM_VECTOR_NAMES(int)
MGSIM_VECTOR_NAMES(uint)
MGSIM_VECTOR_NAMES(short)
MGSIM_VECTOR_NAMES(ushort)
MGSIM_VECTOR_NAMES(char)
MGSIM_VECTOR_NAMES(uchar)
MGSIM_VECTOR_NAMES(bool)
MGSIM_VECTOR_NAMES(long)
MGSIM_VECTOR_NAMES(ulong)
MGSIM_PACKED_NAMES(float)
MGSIM_PACKED_NAMES(half)
MGSIM_PACKED_NAMES(bfloat)
MGSIM_PACKED_NAMES(int)
MGSIM_PACKED_NAMES(uint)
MGSIM_PACKED_NAMES(short)
MGSIM_PACKED_NAMES(ushort)
MGSIM_PACKED_NAMES(char)
MGSIM_PACKED_NAMES(uchar)
MGSIM_PACKED_NAMES(long)
MGSIM_PACKED_NAMES(ulong)
#undef MGSIM_VECTOR_NAMES
#undef MGSIM_PACKED_NAMES
#define MGSIM_MATRIX_NAMES(E)                                                                      \
  typedef ::mgsim::lang::matrix<E, 2, 2> E##2x2;                                                   \
  typedef ::mgsim::lang::matrix<E, 2, 3> E##2x3;                                                   \
  typedef ::mgsim::lang::matrix<E, 2, 4> E##2x4;                                                   \
  typedef ::mgsim::lang::matrix<E, 3, 2> E##3x2;                                                   \
  typedef ::mgsim::lang::matrix<E, 3, 3> E##3x3;                                                   \
  typedef ::mgsim::lang::matrix<E, 3, 4> E##3x4;                                                   \
  typedef ::mgsim::lang::matrix<E, 4, 2> E##4x2;                                                   \
  typedef ::mgsim::lang::matrix<E, 4, 3> E##4x3;                                                   \
  typedef ::mgsim::lang::matrix<E, 4, 4> E##4x4;
MGSIM_MATRIX_NAMES(float)
MGSIM_MATRIX_NAMES(half)
#undef MGSIM_MATRIX_NAMES

// A precompiled prelude can carry the instantiations of the vectors most kernels use (about 30 ms of
// compile time per 4-component type otherwise): define MGSIM_PCH_INSTANTIATE when building the
// precompiled header (and, for clang, when using it). Without a precompiled header, leave it off.
#ifdef MGSIM_PCH_INSTANTIATE
static_assert(sizeof(float2) + sizeof(float3) + sizeof(float4) + sizeof(uint2) + sizeof(uint3) + sizeof(uint4) +
                      sizeof(int2) + sizeof(int3) + sizeof(int4) + sizeof(half2) + sizeof(half3) + sizeof(half4) +
                      sizeof(bool2) + sizeof(bool3) + sizeof(bool4) + sizeof(ushort2) + sizeof(ushort3) >
                  0,
              "instantiates the common vector types");
#endif

// ---------------------------------------------------------------------------------------------
// metal:: library types: vec, as_type, numeric_limits, type traits, array, uniform.
namespace metal {

template <class T, int N>
using vec = ::mgsim::lang::vec<T, N>;
template <class T, int C, int R>
using matrix = ::mgsim::lang::matrix<T, C, R>;
using ::mgsim::lang::access;
using ::mgsim::lang::depth2d;
using ::mgsim::lang::texture1d;
using ::mgsim::lang::texture1d_array;
using ::mgsim::lang::texture2d;
using ::mgsim::lang::texture2d_array;
using ::mgsim::lang::texture3d;
using ::mgsim::lang::texturecube;
using sampler = ::mgsim::lang::sampler_is_not_supported_by_the_metalgrad_simulator;

// as_type<T>(x): reinterpret the bits of x; both types must have the same size.
template <class To, class From>
constexpr To as_type(const From &x) {
  static_assert(sizeof(To) == sizeof(From), "as_type<T>(x): T and the type of x must have the same size");
  if constexpr (std::is_trivially_copyable<To>::value && std::is_trivially_copyable<From>::value) {
    return __builtin_bit_cast(To, x);
  } else {
    To r{};  // vectors: trivially copy-constructible, but their assignment is user-provided
    __builtin_memcpy(static_cast<void *>(&r), static_cast<const void *>(&x), sizeof(To));
    return r;
  }
}

// Type traits (metal_type_traits). half and bfloat are floating-point, arithmetic and signed.
using std::add_const;
using std::add_const_t;
using std::add_cv;
using std::add_lvalue_reference;
using std::add_pointer;
using std::add_pointer_t;
using std::add_rvalue_reference;
using std::add_volatile;
using std::alignment_of;
using std::bool_constant;
using std::common_type;
using std::common_type_t;
using std::conditional;
using std::conditional_t;
using std::conjunction;
using std::decay;
using std::decay_t;
using std::declval;
using std::disjunction;
using std::enable_if;
using std::enable_if_t;
using std::extent;
using std::false_type;
using std::integral_constant;
using std::is_array;
using std::is_base_of;
using std::is_class;
using std::is_const;
using std::is_constructible;
using std::is_convertible;
using std::is_convertible_v;
using std::is_empty;
using std::is_enum;
using std::is_integral;
using std::is_integral_v;
using std::is_pointer;
using std::is_pointer_v;
using std::is_reference;
using std::is_same;
using std::is_same_v;
using std::is_trivially_copyable;
using std::is_unsigned;
using std::is_unsigned_v;
using std::is_void;
using std::is_volatile;
using std::make_signed;
using std::make_signed_t;
using std::make_unsigned;
using std::make_unsigned_t;
using std::negation;
using std::remove_all_extents;
using std::remove_const;
using std::remove_const_t;
using std::remove_cv;
using std::remove_cv_t;
using std::remove_extent;
using std::remove_pointer;
using std::remove_pointer_t;
using std::remove_reference;
using std::remove_reference_t;
using std::remove_volatile;
using std::true_type;
using std::underlying_type;
using std::void_t;

template <class T>
constexpr int mgsim_kind = ::mgsim::lang::scalar_kind<std::remove_cv_t<T>>::value;
template <class T>
struct is_floating_point : bool_constant<std::is_floating_point<T>::value || mgsim_kind<T> >= 4> {};
template <class T>
constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T>
struct is_arithmetic : bool_constant<std::is_arithmetic<T>::value || mgsim_kind<T> >= 4> {};
template <class T>
constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T>
struct is_scalar : bool_constant<std::is_scalar<T>::value || mgsim_kind<T> >= 4> {};
template <class T>
constexpr bool is_scalar_v = is_scalar<T>::value;
template <class T>
struct is_signed : bool_constant<std::is_signed<T>::value || mgsim_kind<T> >= 4> {};
template <class T>
constexpr bool is_signed_v = is_signed<T>::value;
template <class T>
struct is_vector : bool_constant<(::mgsim::lang::vec_traits<std::remove_cv_t<T>>::size > 0) &&
                                 !::mgsim::lang::vec_traits<std::remove_cv_t<T>>::is_swizzle> {};
template <class T>
constexpr bool is_vector_v = is_vector<T>::value;
// The simulator has no address-space qualifiers to remove.
template <class T>
struct remove_addrspace {
  using type = T;
};
template <class T>
using remove_addrspace_t = T;

// numeric_limits: the standard library's for built-in types, IEEE binary16 and bfloat16 here.
template <class T>
struct numeric_limits : std::numeric_limits<T> {};
template <class T>
struct numeric_limits<const T> : numeric_limits<T> {};
template <class T>
struct numeric_limits<volatile T> : numeric_limits<T> {};
template <class T>
struct numeric_limits<const volatile T> : numeric_limits<T> {};

#define MGSIM_FP16_LIMITS(T, DIG, DIG10, MAXDIG10, MINEXP, MINEXP10, MAXEXP, MAXEXP10, MIN, MAX,    \
                          EPS, INF, QNAN, SNAN)                                                    \
  template <>                                                                                      \
  struct numeric_limits<T> {                                                                       \
    static constexpr bool is_specialized = true;                                                   \
    static constexpr T min() noexcept { return T::mg_from_bits(MIN); }                             \
    static constexpr T max() noexcept { return T::mg_from_bits(MAX); }                             \
    static constexpr T lowest() noexcept { return T::mg_from_bits(uint16_t(MAX | 0x8000u)); }      \
    static constexpr int digits = DIG, digits10 = DIG10, max_digits10 = MAXDIG10;                  \
    static constexpr bool is_signed = true, is_integer = false, is_exact = false;                  \
    static constexpr int radix = 2;                                                                \
    static constexpr T epsilon() noexcept { return T::mg_from_bits(EPS); }                         \
    static constexpr T round_error() noexcept { return T(0.5f); }                                  \
    static constexpr int min_exponent = MINEXP, min_exponent10 = MINEXP10;                         \
    static constexpr int max_exponent = MAXEXP, max_exponent10 = MAXEXP10;                         \
    static constexpr bool has_infinity = true, has_quiet_NaN = true, has_signaling_NaN = true;     \
    static constexpr std::float_denorm_style has_denorm = std::denorm_present;                     \
    static constexpr bool has_denorm_loss = false;                                                 \
    static constexpr T infinity() noexcept { return T::mg_from_bits(INF); }                        \
    static constexpr T quiet_NaN() noexcept { return T::mg_from_bits(QNAN); }                      \
    static constexpr T signaling_NaN() noexcept { return T::mg_from_bits(SNAN); }                  \
    static constexpr T denorm_min() noexcept { return T::mg_from_bits(1); }                        \
    static constexpr bool is_iec559 = true, is_bounded = true, is_modulo = false;                  \
    static constexpr bool traps = false, tinyness_before = false;                                  \
    static constexpr std::float_round_style round_style = std::round_to_nearest;                   \
  };
MGSIM_FP16_LIMITS(half, 11, 3, 5, -13, -4, 16, 4, 0x0400u, 0x7bffu, 0x1400u, 0x7c00u, 0x7e00u, 0x7d00u)
MGSIM_FP16_LIMITS(bfloat, 8, 2, 4, -125, -37, 128, 38, 0x0080u, 0x7f7fu, 0x3c00u, 0x7f80u, 0x7fc0u, 0x7fa0u)
#undef MGSIM_FP16_LIMITS

// metal::array<T, N>: a fixed-size aggregate like std::array.
template <class T, size_t N>
struct array {
  T mg_elems[N > 0 ? N : 1];
  constexpr size_t size() const { return N; }
  constexpr bool empty() const { return N == 0; }
  constexpr T &operator[](size_t i) { return mg_elems[i]; }
  constexpr const T &operator[](size_t i) const { return mg_elems[i]; }
  constexpr T *data() { return mg_elems; }
  constexpr const T *data() const { return mg_elems; }
  constexpr T *begin() { return mg_elems; }
  constexpr T *end() { return mg_elems + N; }
  constexpr const T *begin() const { return mg_elems; }
  constexpr const T *end() const { return mg_elems + N; }
  constexpr T &front() { return mg_elems[0]; }
  constexpr T &back() { return mg_elems[N - 1]; }
};

// metal::uniform<T>: a value the same in every thread; here a transparent wrapper.
template <class T>
struct uniform {
  T mg_v;
  uniform() = default;
  constexpr uniform(const T &v) : mg_v(v) {}
  constexpr operator T() const { return mg_v; }
};
template <class T>
constexpr uniform<T> make_uniform(const T &v) {
  return uniform<T>(v);
}

}  // namespace metal

#endif  // MGSIM_TYPES_H
