// arange: out[i] = start + i·step. The CPU device computes start + i·step in float64 and rounds
// once to the dtype (integers truncate, then wrap). Apple GPUs have no float64, so:
//   - integral start and step whose values stay below 2^53 (where float64 is exact): the value
//     is computed exactly in int64 and converted once — the CPU's result, bit for bit, except
//     bfloat16 beyond 2^24, which goes through float as every bfloat conversion here does;
//   - otherwise in float-float (an unevaluated sum hi + lo of two floats, ~48 significant bits,
//     error-free transformations with fma), then rounded (floats) or truncated (integers).
#include "utils.h"

// Error-free transformations: a + b = s + e and a · b = p + e exactly.
MG_FUNC float2 two_sum(float a, float b) {
  float s = a + b;
  float bb = s - a;
  return float2(s, (a - (s - bb)) + (b - bb));
}
MG_FUNC float2 two_prod(float a, float b) {
  float p = a * b;
  return float2(p, metal::fma(a, b, -p));
}
// Renormalises hi + lo so that hi = fl(hi + lo).
MG_FUNC float2 quick_two_sum(float hi, float lo) {
  float s = hi + lo;
  return float2(s, lo - (s - hi));
}

// start + i·step in float-float; start = (start_hi, start_lo), step likewise.
MG_FUNC float2 arange_ff(uint i, float start_hi, float start_lo, float step_hi, float step_lo) {
  float ih = float(i);                        // i < 2^31: rounded …
  float il = float(int64_t(i) - int64_t(ih));  // … and the exact remainder (|il| ≤ 128)
  float2 p = two_prod(ih, step_hi);
  p = quick_two_sum(p.x, p.y + (ih * step_lo + il * step_hi));
  float2 s = two_sum(start_hi, p.x);
  return quick_two_sum(s.x, s.y + (start_lo + p.y));
}

// trunc(hi + lo) for a normalised pair: when hi is not a whole number, |lo| is smaller than the
// distance to the next one, so only an integral hi needs lo's sign.
MG_FUNC int64_t trunc_ff(float2 v) {
  if (metal::abs(v.x) >= 9.2e18f) {  // beyond int64
    return v.x > 0.0f ? metal::numeric_limits<int64_t>::max() : metal::numeric_limits<int64_t>::min();
  }
  float t = metal::trunc(v.x);
  if (t != v.x) return int64_t(t);
  if (v.x > 0.0f && v.y < 0.0f) return int64_t(v.x) - 1;
  if (v.x < 0.0f && v.y > 0.0f) return int64_t(v.x) + 1;
  return int64_t(v.x);
}

// The value in T, from the exact int64 or from float-float.
template <typename T> struct ArangeValue {  // integers: wrap (C's conversion), truncate
  static MG_FUNC T exact(int64_t v) { return T(v); }
  static MG_FUNC T approx(float2 v) { return T(trunc_ff(v)); }
};
template <> struct ArangeValue<float> {
  static MG_FUNC float exact(int64_t v) { return float(v); }
  static MG_FUNC float approx(float2 v) { return v.x; }
};
template <> struct ArangeValue<half> {
  static MG_FUNC half exact(int64_t v) { return half(float(v)); }  // (exact below 2^24; inf beyond 65504)
  static MG_FUNC half approx(float2 v) { return half(v.x); }
};
template <> struct ArangeValue<bfloat> {
  static MG_FUNC bfloat exact(int64_t v) { return bfloat(float(v)); }
  static MG_FUNC bfloat approx(float2 v) { return bfloat(v.x); }
};
template <> struct ArangeValue<complex64_t> {
  static MG_FUNC complex64_t exact(int64_t v) { return make_complex(float(v), 0.0f); }
  static MG_FUNC complex64_t approx(float2 v) { return make_complex(v.x, 0.0f); }
};

template <typename T>
[[kernel]] void arange(
    device T* out [[buffer(0)]],
    constant const int64_t* ints [[buffer(1)]],   // start, step, exact (1: integral path)
    constant const float* ff [[buffer(2)]],       // start hi, start lo, step hi, step lo
    uint i [[thread_position_in_grid]]) {
  if (ints[2] != 0) {
    // Unsigned arithmetic: wraps instead of overflowing (values are below 2^53 anyway).
    out[i] = ArangeValue<T>::exact(int64_t(uint64_t(ints[0]) + uint64_t(i) * uint64_t(ints[1])));
  } else {
    out[i] = ArangeValue<T>::approx(arange_ff(i, ff[0], ff[1], ff[2], ff[3]));
  }
}
