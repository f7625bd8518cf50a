// Vector types and float32 math shared by every instruction set. Included inside the ISA's
// namespace (isa_*.cpp, through kernels_impl.h), after MG_FMA is defined (1 when the TU is built for FMA).
//
// Vectors are 32 bytes (8 floats / 4 doubles) on every ISA: AVX2 runs them as one register, SSE2
// and NEON as two. isa_avx512.cpp includes this file with MG_VBYTES 64 for its elementwise kernels
// only (16 floats a vector; every function here is lane-wise, so an element's bits do not depend on
// the width). Lane-wise arithmetic is then identical everywhere; only fused multiply-adds
// (AVX2+FMA) round differently, so results may differ between ISAs in the last place of the
// polynomial-based math below (never between thread counts or between fused and unfused runs).

#ifndef MG_VBYTES
#define MG_VBYTES 32
#endif
typedef float vf __attribute__((vector_size(MG_VBYTES)));
typedef int32_t vi __attribute__((vector_size(MG_VBYTES)));
typedef uint32_t vu __attribute__((vector_size(MG_VBYTES)));
typedef double vd __attribute__((vector_size(MG_VBYTES)));
typedef int64_t vl __attribute__((vector_size(MG_VBYTES)));

constexpr int VF = MG_VBYTES / 4;  // floats per vf
constexpr int VD = MG_VBYTES / 8;  // doubles per vd

static inline vf vf_load(const float *p) { vf v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline void vf_store(float *p, vf v) { __builtin_memcpy(p, &v, sizeof v); }
static inline vd vd_load(const double *p) { vd v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline void vd_store(double *p, vd v) { __builtin_memcpy(p, &v, sizeof v); }
// Broadcasts by lanes (not `vf{} + x`: 0 + -0 is +0); the compiler emits one broadcast.
template <class V, class T> static inline V splat_of(T x) {
  V v;
  for (int l = 0; l < int(sizeof(V) / sizeof(T)); l++) v[l] = x;
  return v;
}
static inline vf vf_splat(float x) { return splat_of<vf>(x); }
static inline vd vd_splat(double x) { return splat_of<vd>(x); }
static inline vi vi_splat(int32_t x) { return splat_of<vi>(x); }

static inline vf vf_select(vi mask, vf a, vf b) {
  return (vf)(((vi)a & mask) | ((vi)b & ~mask));
}
static inline vd vd_select(vl mask, vd a, vd b) {
  return (vd)(((vl)a & mask) | ((vl)b & ~mask));
}
static inline vi vf_isnan(vf x) { return x != x; }
static inline vf vf_abs(vf x) { return (vf)((vi)x & vi_splat(0x7fffffff)); }
static inline vf vf_copysign(vf mag, vf sign) {
  return (vf)(((vi)mag & vi_splat(0x7fffffff)) | ((vi)sign & vi_splat(int32_t(0x80000000u))));
}

#if MG_FMA
static inline vf madd(vf a, vf b, vf c) { return __builtin_elementwise_fma(a, b, c); }
static inline vd madd(vd a, vd b, vd c) { return __builtin_elementwise_fma(a, b, c); }
#else
static inline vf madd(vf a, vf b, vf c) { return a * b + c; }
static inline vd madd(vd a, vd b, vd c) { return a * b + c; }
#endif

// Round to nearest (ties to even) for |x| < 2^22, by the 1.5·2^23 trick (no SSE4.1 needed).
static inline vf vf_rint_small(vf x) {
  const vf magic = vf_splat(12582912.0f);
  return (x + magic) - magic;
}

// 2^n for integer n in [-126, 127] (as float bits).
static inline vf vf_pow2i(vi n) { return (vf)((n + vi_splat(127)) << 23); }

// exp(x), float32. Cody–Waite reduction x = n·ln2 + r, |r| ≤ ln2/2, and a degree-6 polynomial
// for e^r (Cephes' expf coefficients); 2^n is applied in two halves so results reaching the
// subnormal range round once. Max error ≤ 2 ulp (measured, test/backend/cpu/native-math).
// Where every lane lies in [-87, 88] (the usual case), 2^n is one normal power of two and no lane
// needs the range or NaN handling: the same bits as vexp_slow (one rounding of the same exact
// product p·2^n), ~10 fewer instructions a vector.
static inline vf vexp_slow(vf x);
static inline vf vexp(vf x) {
  vi in_range = (x >= vf_splat(-87.0f)) & (x <= vf_splat(88.0f));
  if (__builtin_expect(__builtin_reduce_and(in_range) == 0, 0)) return vexp_slow(x);
  vf n = vf_rint_small(x * vf_splat(1.44269504088896341f));
  vf r = madd(n, vf_splat(-0.693359375f), x);
  r = madd(n, vf_splat(2.12194440e-4f), r);
  vf z = r * r;
  vf p = vf_splat(1.9875691500E-4f);
  p = madd(p, r, vf_splat(1.3981999507E-3f));
  p = madd(p, r, vf_splat(8.3334519073E-3f));
  p = madd(p, r, vf_splat(4.1665795894E-2f));
  p = madd(p, r, vf_splat(1.6666665459E-1f));
  p = madd(p, r, vf_splat(5.0000001201E-1f));
  p = madd(p, z, r) + vf_splat(1.0f);
  return p * vf_pow2i(__builtin_convertvector(n, vi));
}
static inline vf vexp_slow(vf x) {
  const vf hi = vf_splat(88.72283935546875f), lo = vf_splat(-103.972084045410f);
  vf xc = __builtin_elementwise_min(__builtin_elementwise_max(x, vf_splat(-104.0f)), vf_splat(89.0f));
  vf n = vf_rint_small(xc * vf_splat(1.44269504088896341f));
  vf r = madd(n, vf_splat(-0.693359375f), xc);
  r = madd(n, vf_splat(2.12194440e-4f), r);
  vf z = r * r;
  vf p = vf_splat(1.9875691500E-4f);
  p = madd(p, r, vf_splat(1.3981999507E-3f));
  p = madd(p, r, vf_splat(8.3334519073E-3f));
  p = madd(p, r, vf_splat(4.1665795894E-2f));
  p = madd(p, r, vf_splat(1.6666665459E-1f));
  p = madd(p, r, vf_splat(5.0000001201E-1f));
  p = madd(p, z, r) + vf_splat(1.0f);
  vi ni = __builtin_convertvector(n, vi);
  vi n1 = ni >> 1;
  vf res = p * vf_pow2i(n1) * vf_pow2i(ni - n1);
  res = vf_select(x > hi, vf_splat(__builtin_inff()), res);
  res = vf_select(x < lo, vf_splat(0.0f), res);
  return vf_select(vf_isnan(x), x, res);
}

// log(x), float32: x = m·2^e with m in [√½, √2), log(1+f) by Cephes' logf polynomial, e·ln2
// added in two parts. Max error ≤ 2 ulp. log(0) = -inf, log(x<0) = NaN, log(inf) = inf.
static inline vf vlog(vf x) {
  vi sub = x < vf_splat(1.17549435e-38f);
  vf xs = vf_select(sub, x * vf_splat(8388608.0f), x);
  vi bits = (vi)xs;
  vi e = ((bits >> 23) & vi_splat(0xff)) - vi_splat(126) - (sub & vi_splat(23));
  vf m = (vf)((bits & vi_splat(0x007fffff)) | vi_splat(0x3f000000));  // [0.5, 1)
  vi small = m < vf_splat(0.707106781186547524f);
  e = e + small;  // small is -1 where true
  m = vf_select(small, m + m, m) - vf_splat(1.0f);
  vf fe = __builtin_convertvector(e, vf);
  vf z = m * m;
  vf y = vf_splat(7.0376836292E-2f);
  y = madd(y, m, vf_splat(-1.1514610310E-1f));
  y = madd(y, m, vf_splat(1.1676998740E-1f));
  y = madd(y, m, vf_splat(-1.2420140846E-1f));
  y = madd(y, m, vf_splat(1.4249322787E-1f));
  y = madd(y, m, vf_splat(-1.6668057665E-1f));
  y = madd(y, m, vf_splat(2.0000714765E-1f));
  y = madd(y, m, vf_splat(-2.4999993993E-1f));
  y = madd(y, m, vf_splat(3.3333331174E-1f));
  y = y * m * z;
  y = madd(fe, vf_splat(-2.12194440e-4f), y);
  y = madd(z, vf_splat(-0.5f), y);
  vf res = m + y;
  res = madd(fe, vf_splat(0.693359375f), res);
  res = vf_select(x == vf_splat(__builtin_inff()), x, res);
  res = vf_select(x == vf_splat(0.0f), vf_splat(-__builtin_inff()), res);
  res = vf_select(x < vf_splat(0.0f), vf_splat(__builtin_nanf("")), res);
  return vf_select(vf_isnan(x), x, res);
}

// tanh(x), float32: an odd polynomial below |x| = 0.625 (Cephes' tanhf), 1 − 2/(e^{2|x|} + 1)
// above. Max error ≤ 3 ulp.
static inline vf vtanh(vf x) {
  vf ax = vf_abs(x);
  vf z = x * x;
  vf p = vf_splat(-5.70498872745E-3f);
  p = madd(p, z, vf_splat(2.06390887954E-2f));
  p = madd(p, z, vf_splat(-5.37397155531E-2f));
  p = madd(p, z, vf_splat(1.33314422036E-1f));
  p = madd(p, z, vf_splat(-3.33332819422E-1f));
  vf small = vf_copysign(madd(p * z, x, x), x);  // keeps tanh(-0) = -0 (p·0·x + x is +0 there)
  vf e = vexp(ax + ax);
  vf big = vf_copysign(vf_splat(1.0f) - vf_splat(2.0f) / (e + vf_splat(1.0f)), x);
  return vf_select(ax < vf_splat(0.625f), small, big);
}

// sigmoid(x) = 1/(1 + e^{-x}) for x ≥ 0, e^x/(1 + e^x) below (no overflow). ≤ 3 ulp.
static inline vf vsigmoid(vf x) {
  vf e = vexp(-vf_abs(x));
  vf d = vf_splat(1.0f) + e;
  return vf_select(x >= vf_splat(0.0f), vf_splat(1.0f) / d, e / d);
}

// erf(x), float32. |x| < 0.921875: x·P(x²); up to 3.92: 1 − exp(−x²)·Q(1/|x|) with Q fitted to
// exp(x²)·erfc(x) on that range (both near-minimax, scripts/fit-erf.py); above: ±1. Max error
// ≤ 4 ulp.
static constexpr int ERF_P_N = 6;
static constexpr float ERF_P[ERF_P_N] = {-5.991097701e-04f, 4.993237593e-03f, -2.676666531e-02f,
                                         1.128181801e-01f, -3.761249397e-01f, 1.128379150e+00f};
static constexpr int ERF_Q_N = 11;
static constexpr float ERF_Q[ERF_Q_N] = {-2.558367961e-02f, 1.867537003e-01f, -5.989136528e-01f,
                                         1.090636022e+00f,  -1.187474476e+00f, 6.720742747e-01f,
                                         3.477092820e-02f,  -3.169863378e-01f, 9.227046773e-03f,
                                         5.630192267e-01f,  6.052217861e-05f};
static inline vf verf(vf x) {
  vf ax = vf_abs(x);
  vf z = x * x;
  vf p = vf_splat(ERF_P[0]);
  for (int i = 1; i < ERF_P_N; i++) p = madd(p, z, vf_splat(ERF_P[i]));
  vf small = p * x;
  vf t = vf_splat(1.0f) / ax;
  vf q = vf_splat(ERF_Q[0]);
  for (int i = 1; i < ERF_Q_N; i++) q = madd(q, t, vf_splat(ERF_Q[i]));
  // exp(−x²) with x² split exactly into hi + lo (Dekker) so the large-|x| tail keeps its accuracy
  vf hi = (vf)((vi)ax & vi_splat(int32_t(0xfffff000u)));
  vf lo = ax - hi;
  vf x2hi = hi * hi;
  vf x2lo = lo * (hi + ax);
  vf big = vf_splat(1.0f) - vexp(-x2hi) * vexp(-x2lo) * q;
  big = __builtin_elementwise_min(big, vf_splat(1.0f));
  big = vf_select(ax >= vf_splat(3.92f), vf_splat(1.0f), big);
  big = vf_copysign(big, x);
  vf res = vf_select(ax < vf_splat(0.921875f), small, big);
  return vf_select(vf_isnan(x), x, res);
}

// The vector of T's lanes (float: vf, double: vd).
template <class T> struct vec_of;
template <> struct vec_of<float> { using type = vf; };
template <> struct vec_of<double> { using type = vd; };

// Elementwise kernel dst[i] = f(x[i]) through a vector function of T's lanes; the tail goes through
// the same function padded with zeros, so an element's result never depends on where a tile starts.
// Shared by kernels_impl.h (every ISA) and isa_avx512.cpp (64-byte vectors).
template <class T, class F>
static void k_vunary(void *dst, const void *a, const void *, const void *, int64_t n, int mask) {
  using V = typename vec_of<T>::type;
  constexpr int L = int(sizeof(V) / sizeof(T));
  F f{};
  T *d = static_cast<T *>(dst);
  const T *x = static_cast<const T *>(a);
  if (mask & 1) {
    const T v = f(splat_of<V>(x[0]))[0];
    for (int64_t i = 0; i < n; i++) d[i] = v;
    return;
  }
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V v;
    __builtin_memcpy(&v, x + i, sizeof v);
    const V r = f(v);
    __builtin_memcpy(d + i, &r, sizeof r);
  }
  if (i < n) {
    alignas(sizeof(V)) T tmp[L] = {};
    for (int64_t j = i; j < n; j++) tmp[j - i] = x[j];
    V v;
    __builtin_memcpy(&v, tmp, sizeof v);
    const V r = f(v);
    for (int64_t j = i; j < n; j++) d[j] = r[j - i];
  }
}
