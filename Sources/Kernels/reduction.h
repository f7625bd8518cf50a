// Building blocks of the reduction family (reduce, arg_reduce, scan, softmax): accumulator
// operations with their identities, conversions, simd lane exchanges valid for every accumulator
// type, and simdgroup / threadgroup reductions and prefix scans.
//
// Conventions: an Op names its accumulator type `acc`, has `init()` (its identity), `apply(a, b)`
// (associative and commutative) and `load(x)` (an input element into the accumulator). Threadgroup
// helpers assume threadgroups whose size is a multiple of 32 (whole simdgroups), which the host
// guarantees.
#pragma once
#include "utils.h"

#define MG_SIMD_SIZE 32

// ---------------------------------------------------------------------------------------------
// Scalar traits

template <typename T> MG_FUNC bool is_nan(T) { return false; }
MG_FUNC bool is_nan(float x) { return x != x; }
MG_FUNC bool is_nan(half x) { return x != x; }
MG_FUNC bool is_nan(bfloat x) { return float(x) != float(x); }
MG_FUNC bool is_nan(complex64_t z) { return z.real != z.real || z.imag != z.imag; }

// Conversions between element and accumulator types (complex64 has no C++ conversions).
template <typename To> struct CastValue {
  template <typename From> static MG_FUNC To from(From x) { return static_cast<To>(x); }
  static MG_FUNC To from(complex64_t z) { return ComplexCast<To>::from(z); }
};
template <> struct CastValue<complex64_t> {
  template <typename From> static MG_FUNC complex64_t from(From x) { return ComplexCast<From>::to(x); }
  static MG_FUNC complex64_t from(complex64_t z) { return z; }
};
template <typename To, typename From> MG_FUNC To cast_value(From x) { return CastValue<To>::from(x); }

// A value as a truth value (all / any): nonzero, and for complex a nonzero real or imaginary part.
template <typename T> MG_FUNC bool truthy(T x) { return x != T(0); }
MG_FUNC bool truthy(bool x) { return x; }
MG_FUNC bool truthy(complex64_t z) { return z.real != 0.0f || z.imag != 0.0f; }

// Smallest and largest values, with infinities for floats: the identities of max and min.
template <typename T> struct Limits {
  static MG_FUNC T lowest() { return metal::numeric_limits<T>::lowest(); }
  static MG_FUNC T highest() { return metal::numeric_limits<T>::max(); }
};
template <> struct Limits<bool> {
  static MG_FUNC bool lowest() { return false; }
  static MG_FUNC bool highest() { return true; }
};
template <> struct Limits<float> {
  static MG_FUNC float lowest() { return -metal::numeric_limits<float>::infinity(); }
  static MG_FUNC float highest() { return metal::numeric_limits<float>::infinity(); }
};
template <> struct Limits<half> {
  static MG_FUNC half lowest() { return -metal::numeric_limits<half>::infinity(); }
  static MG_FUNC half highest() { return metal::numeric_limits<half>::infinity(); }
};
template <> struct Limits<bfloat> {
  static MG_FUNC bfloat lowest() { return bfloat(-metal::numeric_limits<float>::infinity()); }
  static MG_FUNC bfloat highest() { return bfloat(metal::numeric_limits<float>::infinity()); }
};
template <> struct Limits<complex64_t> {
  static MG_FUNC complex64_t lowest() { return make_complex(Limits<float>::lowest(), Limits<float>::lowest()); }
  static MG_FUNC complex64_t highest() { return make_complex(Limits<float>::highest(), Limits<float>::highest()); }
};

// complex64 orders lexicographically (real part, then imaginary part), as MLX.
template <typename T> MG_FUNC bool greater(T a, T b) { return a > b; }
MG_FUNC bool greater(complex64_t a, complex64_t b) { return a.real > b.real || (a.real == b.real && a.imag > b.imag); }

// ---------------------------------------------------------------------------------------------
// Accumulator operations

template <typename A> struct Sum {
  typedef A acc;
  static MG_FUNC A init() { return cast_value<A>(0); }
  static MG_FUNC A apply(A a, A b) { return a + b; }
  template <typename T> static MG_FUNC A load(T x) { return cast_value<A>(x); }
};

template <typename A> struct Prod {
  typedef A acc;
  static MG_FUNC A init() { return cast_value<A>(1); }
  static MG_FUNC A apply(A a, A b) { return a * b; }
  template <typename T> static MG_FUNC A load(T x) { return cast_value<A>(x); }
};

// max / min propagate NaN: a NaN operand wins (for complex, a value with a NaN part).
template <typename A> struct Max {
  typedef A acc;
  static MG_FUNC A init() { return Limits<A>::lowest(); }
  static MG_FUNC A apply(A a, A b) { return (is_nan(a) || (!is_nan(b) && !greater(b, a))) ? a : b; }
  template <typename T> static MG_FUNC A load(T x) { return cast_value<A>(x); }
};

template <typename A> struct Min {
  typedef A acc;
  static MG_FUNC A init() { return Limits<A>::highest(); }
  static MG_FUNC A apply(A a, A b) { return (is_nan(a) || (!is_nan(b) && !greater(a, b))) ? a : b; }
  template <typename T> static MG_FUNC A load(T x) { return cast_value<A>(x); }
};

struct And {
  typedef bool acc;
  static MG_FUNC bool init() { return true; }
  static MG_FUNC bool apply(bool a, bool b) { return a && b; }
  template <typename T> static MG_FUNC bool load(T x) { return truthy(x); }
};

struct Or {
  typedef bool acc;
  static MG_FUNC bool init() { return false; }
  static MG_FUNC bool apply(bool a, bool b) { return a || b; }
  template <typename T> static MG_FUNC bool load(T x) { return truthy(x); }
};

// log(exp(a) + exp(b)) without overflow; NaN propagates, an infinite maximum is the answer.
template <typename A> struct LogAddExpOp {
  typedef A acc;
  static MG_FUNC A init() { return Limits<A>::lowest(); }
  static MG_FUNC A apply(A a, A b) {
    if (is_nan(a) || is_nan(b)) return a + b;
    A m = a > b ? a : b;
    A lo = a > b ? b : a;
    if (metal::isinf(m)) return m;
    float d = float(lo) - float(m);
    float e = metal::precise::exp(d);
    // log1p(e) accurate for small e (Goldberg's form; e ≤ 1 here)
    float u = 1.0f + e;
    float l = u == 1.0f ? e : metal::precise::log(u) * e / (u - 1.0f);
    return A(float(m) + l);
  }
  template <typename T> static MG_FUNC A load(T x) { return cast_value<A>(x); }
};

// ---------------------------------------------------------------------------------------------
// Lane exchange. MSL's simd_shuffle_* and simd_broadcast take scalars and vectors of 32 bits or
// less, so 64-bit integers travel as uint2, bool as uint, bfloat as its bits and complex64 one part
// at a time.

// One family per MSL function F, named NAME, with its lane argument of type ushort.
#define MG_LANE_EXCHANGE(NAME, F)                                                                                        \
  template <typename T> MG_FUNC T NAME(T x, ushort l) { return F(x, l); }                                               \
  MG_FUNC int64_t NAME(int64_t x, ushort l) { return as_type<int64_t>(F(as_type<uint2>(x), l)); }                     \
  MG_FUNC uint64_t NAME(uint64_t x, ushort l) { return as_type<uint64_t>(F(as_type<uint2>(x), l)); }                  \
  MG_FUNC bool NAME(bool x, ushort l) { return F(uint(x), l) != 0u; }                                                  \
  MG_FUNC bfloat NAME(bfloat x, ushort l) { return as_type<bfloat>(F(as_type<ushort>(x), l)); }                        \
  MG_FUNC complex64_t NAME(complex64_t z, ushort l) { return make_complex(F(z.real, l), F(z.imag, l)); }
MG_LANE_EXCHANGE(shuffle_down, simd_shuffle_down)  // x of lane + l
MG_LANE_EXCHANGE(shuffle_up, simd_shuffle_up)      // x of lane − l
MG_LANE_EXCHANGE(broadcast_lane, simd_broadcast)   // x of lane l
#undef MG_LANE_EXCHANGE

// ---------------------------------------------------------------------------------------------
// Simdgroup and threadgroup reductions

// Tree over the simdgroup's 32 lanes; the result is valid in lane 0. (The Op argument only picks
// the overload.)
template <typename Op, typename A> MG_FUNC A simd_fold(A v, Op tag) {
  for (ushort d = MG_SIMD_SIZE / 2; d > 0; d >>= 1) v = Op::apply(v, shuffle_down(v, d));
  return v;
}
// Sums of the types simd_sum takes: the simdgroup reduction itself (valid in every lane).
MG_FUNC float simd_fold(float v, Sum<float> tag) { return simd_sum(v); }
MG_FUNC half simd_fold(half v, Sum<half> tag) { return simd_sum(v); }
MG_FUNC int simd_fold(int v, Sum<int> tag) { return simd_sum(v); }
MG_FUNC uint simd_fold(uint v, Sum<uint> tag) { return simd_sum(v); }

template <typename Op> MG_FUNC typename Op::acc simd_reduce(typename Op::acc v) { return simd_fold(v, Op()); }

// Reduces one value per thread over the threadgroup; the result is valid in thread 0. `shared`
// holds 32 accumulators. Ends with a barrier, so `shared` may be reused right after.
template <typename Op>
MG_FUNC typename Op::acc threadgroup_reduce(typename Op::acc v, threadgroup typename Op::acc* shared, uint tg_size,
                                            uint simd_lane, uint simd_group) {
  typedef typename Op::acc A;
  v = simd_reduce<Op>(v);
  const uint n_simd = tg_size / MG_SIMD_SIZE;
  if (n_simd == 1) return v;
  if (simd_lane == 0) shared[simd_group] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (simd_group == 0) {
    A w = simd_lane < n_simd ? shared[simd_lane] : Op::init();
    v = simd_reduce<Op>(w);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return v;
}

// Inclusive prefix over the simdgroup's lanes (Hillis–Steele): lane i gets v_0 ∘ … ∘ v_i.
template <typename Op, typename A> MG_FUNC A simd_scan_incl(A v, uint simd_lane, Op tag) {
  for (ushort d = 1; d < MG_SIMD_SIZE; d <<= 1) {
    A other = shuffle_up(v, d);
    if (simd_lane >= d) v = Op::apply(other, v);
  }
  return v;
}
// Sums of the types simd_prefix_inclusive_sum takes: the simdgroup scan itself.
MG_FUNC float simd_scan_incl(float v, uint simd_lane, Sum<float> tag) { return simd_prefix_inclusive_sum(v); }
MG_FUNC half simd_scan_incl(half v, uint simd_lane, Sum<half> tag) { return simd_prefix_inclusive_sum(v); }
MG_FUNC int simd_scan_incl(int v, uint simd_lane, Sum<int> tag) { return simd_prefix_inclusive_sum(v); }
MG_FUNC uint simd_scan_incl(uint v, uint simd_lane, Sum<uint> tag) { return simd_prefix_inclusive_sum(v); }

template <typename Op> MG_FUNC typename Op::acc simd_inclusive_scan(typename Op::acc v, uint simd_lane) {
  return simd_scan_incl(v, simd_lane, Op());
}

// Exclusive prefix over the simdgroup's lanes: lane i gets v_0 ∘ … ∘ v_(i−1), lane 0 the identity.
template <typename Op, typename A> MG_FUNC A simd_scan_excl(A v, uint simd_lane, Op tag) {
  const A incl = simd_scan_incl(v, simd_lane, tag);
  const A before = shuffle_up(incl, 1);
  return simd_lane == 0 ? Op::init() : before;
}
MG_FUNC float simd_scan_excl(float v, uint simd_lane, Sum<float> tag) { return simd_prefix_exclusive_sum(v); }
MG_FUNC half simd_scan_excl(half v, uint simd_lane, Sum<half> tag) { return simd_prefix_exclusive_sum(v); }
MG_FUNC int simd_scan_excl(int v, uint simd_lane, Sum<int> tag) { return simd_prefix_exclusive_sum(v); }
MG_FUNC uint simd_scan_excl(uint v, uint simd_lane, Sum<uint> tag) { return simd_prefix_exclusive_sum(v); }

template <typename Op> MG_FUNC typename Op::acc simd_exclusive_scan(typename Op::acc v, uint simd_lane) {
  return simd_scan_excl(v, simd_lane, Op());
}
