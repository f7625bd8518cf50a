// FFT line kernels, compiled once per instruction set (included by isa_*.cpp inside the ISA's
// namespace, after kernels_impl.h). Every routine is written once over a lane type T: `double`
// transforms one line, `vd` transforms VD lines at once (lane l of every vector belongs to line l),
// so each pass is fully vectorised whatever its radix and stride. The operations are the
// reference's (ts/backend/cpu/fft.ts) in the same order, without contraction, so a line's result
// does not depend on the lane it ran in, the thread, or the instruction set.

namespace fftk {

template <class T> inline T bc(double x);
template <> inline double bc<double>(double x) { return x; }
template <> inline vd bc<vd>(double x) { return vd_splat(x); }

static const double SIN60 = std::sqrt(3.0) / 2;
static const double C5_1 = std::cos((2 * M_PI) / 5), C5_2 = std::cos((4 * M_PI) / 5);
static const double S5_1 = std::sin((2 * M_PI) / 5), S5_2 = std::sin((4 * M_PI) / 5);
static const double C7_1 = std::cos((2 * M_PI) / 7), C7_2 = std::cos((4 * M_PI) / 7), C7_3 = std::cos((6 * M_PI) / 7);
static const double S7_1 = std::sin((2 * M_PI) / 7), S7_2 = std::sin((4 * M_PI) / 7), S7_3 = std::sin((6 * M_PI) / 7);
static const double SQ1_2 = M_SQRT1_2;

// u·w for a twiddle w = (wr, wi)
#define MG_TWIST(xr_, xi_, ur_, ui_, wr_, wi_) \
  const T xr_ = (ur_) * (wr_) - (ui_) * (wi_), xi_ = (ur_) * (wi_) + (ui_) * (wr_)

// x_r = x[j + r·stride] twisted by twiddle t + r − 1 (r ≥ 1)
#define MG_INPUT(r_, vr_, vi_)                                        \
  const T vr_##_u = xr[j + (r_) * stride], vi_##_u = xi[j + (r_) * stride]; \
  const T vr_##_w = bc<T>(tr[t + (r_) - 1]), vi_##_w = bc<T>(ti[t + (r_) - 1]); \
  MG_TWIST(vr_, vi_, vr_##_u, vi_##_u, vr_##_w, vi_##_w)

template <class T, int S>
__attribute__((always_inline)) inline void bf2(const T *xr, const T *xi, T *yr, T *yi, int64_t j, int64_t stride, int64_t d, int64_t ns, const double *tr, const double *ti, int64_t t) {
  MG_INPUT(1, x1r, x1i);
  const T x0r = xr[j], x0i = xi[j];
  yr[d] = x0r + x1r; yi[d] = x0i + x1i;
  yr[d + ns] = x0r - x1r; yi[d + ns] = x0i - x1i;
}

template <class T, int S>
__attribute__((always_inline)) inline void bf3(const T *xr, const T *xi, T *yr, T *yi, int64_t j, int64_t stride, int64_t d, int64_t ns, const double *tr, const double *ti, int64_t t) {
  const double s60 = S * SIN60;
  const T x0r = xr[j], x0i = xi[j];
  MG_INPUT(1, x1r, x1i);
  MG_INPUT(2, x2r, x2i);
  const T sr = x1r + x2r, si = x1i + x2i;
  const T mr = x0r - 0.5 * sr, mi = x0i - 0.5 * si;
  const T dr = -s60 * (x1i - x2i), di = s60 * (x1r - x2r);
  yr[d] = x0r + sr; yi[d] = x0i + si;
  yr[d + ns] = mr + dr; yi[d + ns] = mi + di;
  yr[d + 2 * ns] = mr - dr; yi[d + 2 * ns] = mi - di;
}

template <class T, int S>
__attribute__((always_inline)) inline void bf4(const T *xr, const T *xi, T *yr, T *yi, int64_t j, int64_t stride, int64_t d, int64_t ns, const double *tr, const double *ti, int64_t t) {
  const double sign = S;
  const T x0r = xr[j], x0i = xi[j];
  MG_INPUT(1, x1r, x1i);
  MG_INPUT(2, x2r, x2i);
  MG_INPUT(3, x3r, x3i);
  const T s02r = x0r + x2r, s02i = x0i + x2i, d02r = x0r - x2r, d02i = x0i - x2i;
  const T s13r = x1r + x3r, s13i = x1i + x3i, d13r = x1r - x3r, d13i = x1i - x3i;
  const T rr = -sign * d13i, ri = sign * d13r;
  yr[d] = s02r + s13r; yi[d] = s02i + s13i;
  yr[d + ns] = d02r + rr; yi[d + ns] = d02i + ri;
  yr[d + 2 * ns] = s02r - s13r; yi[d + 2 * ns] = s02i - s13i;
  yr[d + 3 * ns] = d02r - rr; yi[d + 3 * ns] = d02i - ri;
}

template <class T, int S>
__attribute__((always_inline)) inline void bf8(const T *xr, const T *xi, T *yr, T *yi, int64_t j, int64_t stride, int64_t d, int64_t ns, const double *tr, const double *ti, int64_t t) {
  const double sign = S;
  const T x0r = xr[j], x0i = xi[j];
  MG_INPUT(1, x1r, x1i);
  MG_INPUT(2, x2r, x2i);
  MG_INPUT(3, x3r, x3i);
  MG_INPUT(4, x4r, x4i);
  MG_INPUT(5, x5r, x5i);
  MG_INPUT(6, x6r, x6i);
  MG_INPUT(7, x7r, x7i);
  const T a0r = x0r + x4r, a0i = x0i + x4i, a1r = x0r - x4r, a1i = x0i - x4i;
  const T a2r = x2r + x6r, a2i = x2i + x6i, a3r = x2r - x6r, a3i = x2i - x6i;
  const T ra3r = -sign * a3i, ra3i = sign * a3r;
  const T e0r = a0r + a2r, e0i = a0i + a2i, e2r = a0r - a2r, e2i = a0i - a2i;
  const T e1r = a1r + ra3r, e1i = a1i + ra3i, e3r = a1r - ra3r, e3i = a1i - ra3i;
  const T b0r = x1r + x5r, b0i = x1i + x5i, b1r = x1r - x5r, b1i = x1i - x5i;
  const T b2r = x3r + x7r, b2i = x3i + x7i, b3r = x3r - x7r, b3i = x3i - x7i;
  const T rb3r = -sign * b3i, rb3i = sign * b3r;
  const T o0r = b0r + b2r, o0i = b0i + b2i, o2r = b0r - b2r, o2i = b0i - b2i;
  const T o1r = b1r + rb3r, o1i = b1i + rb3i, o3r = b1r - rb3r, o3i = b1i - rb3i;
  const T t1r = SQ1_2 * (o1r - sign * o1i), t1i = SQ1_2 * (o1i + sign * o1r);
  const T t2r = -sign * o2i, t2i = sign * o2r;
  const T t3r = SQ1_2 * (-o3r - sign * o3i), t3i = SQ1_2 * (-o3i + sign * o3r);
  yr[d] = e0r + o0r; yi[d] = e0i + o0i;
  yr[d + ns] = e1r + t1r; yi[d + ns] = e1i + t1i;
  yr[d + 2 * ns] = e2r + t2r; yi[d + 2 * ns] = e2i + t2i;
  yr[d + 3 * ns] = e3r + t3r; yi[d + 3 * ns] = e3i + t3i;
  yr[d + 4 * ns] = e0r - o0r; yi[d + 4 * ns] = e0i - o0i;
  yr[d + 5 * ns] = e1r - t1r; yi[d + 5 * ns] = e1i - t1i;
  yr[d + 6 * ns] = e2r - t2r; yi[d + 6 * ns] = e2i - t2i;
  yr[d + 7 * ns] = e3r - t3r; yi[d + 7 * ns] = e3i - t3i;
}

template <class T, int S>
__attribute__((always_inline)) inline void bf5(const T *xr, const T *xi, T *yr, T *yi, int64_t j, int64_t stride, int64_t d, int64_t ns, const double *tr, const double *ti, int64_t t) {
  const double s1 = S * S5_1, s2 = S * S5_2;
  const T x0r = xr[j], x0i = xi[j];
  MG_INPUT(1, v1r, v1i);
  MG_INPUT(2, v2r, v2i);
  MG_INPUT(3, v3r, v3i);
  MG_INPUT(4, v4r, v4i);
  const T a1r = v1r + v4r, a1i = v1i + v4i, b1r = v1r - v4r, b1i = v1i - v4i;
  const T a2r = v2r + v3r, a2i = v2i + v3i, b2r = v2r - v3r, b2i = v2i - v3i;
  const T c1r = x0r + C5_1 * a1r + C5_2 * a2r, c1i = x0i + C5_1 * a1i + C5_2 * a2i;
  const T c2r = x0r + C5_2 * a1r + C5_1 * a2r, c2i = x0i + C5_2 * a1i + C5_1 * a2i;
  const T e1r = -(s1 * b1i + s2 * b2i), e1i = s1 * b1r + s2 * b2r;
  const T e2r = -(s2 * b1i - s1 * b2i), e2i = s2 * b1r - s1 * b2r;
  yr[d] = x0r + a1r + a2r; yi[d] = x0i + a1i + a2i;
  yr[d + ns] = c1r + e1r; yi[d + ns] = c1i + e1i;
  yr[d + 2 * ns] = c2r + e2r; yi[d + 2 * ns] = c2i + e2i;
  yr[d + 3 * ns] = c2r - e2r; yi[d + 3 * ns] = c2i - e2i;
  yr[d + 4 * ns] = c1r - e1r; yi[d + 4 * ns] = c1i - e1i;
}

template <class T, int S>
__attribute__((always_inline)) inline void bf7(const T *xr, const T *xi, T *yr, T *yi, int64_t j, int64_t stride, int64_t d, int64_t ns, const double *tr, const double *ti, int64_t t) {
  const double s1 = S * S7_1, s2 = S * S7_2, s3 = S * S7_3;
  const T x0r = xr[j], x0i = xi[j];
  MG_INPUT(1, v1r, v1i);
  MG_INPUT(2, v2r, v2i);
  MG_INPUT(3, v3r, v3i);
  MG_INPUT(4, v4r, v4i);
  MG_INPUT(5, v5r, v5i);
  MG_INPUT(6, v6r, v6i);
  const T a1r = v1r + v6r, a1i = v1i + v6i, b1r = v1r - v6r, b1i = v1i - v6i;
  const T a2r = v2r + v5r, a2i = v2i + v5i, b2r = v2r - v5r, b2i = v2i - v5i;
  const T a3r = v3r + v4r, a3i = v3i + v4i, b3r = v3r - v4r, b3i = v3i - v4i;
  yr[d] = x0r + a1r + a2r + a3r; yi[d] = x0i + a1i + a2i + a3i;
  const T c1r = x0r + C7_1 * a1r + C7_2 * a2r + C7_3 * a3r, c1i = x0i + C7_1 * a1i + C7_2 * a2i + C7_3 * a3i;
  const T c2r = x0r + C7_2 * a1r + C7_3 * a2r + C7_1 * a3r, c2i = x0i + C7_2 * a1i + C7_3 * a2i + C7_1 * a3i;
  const T c3r = x0r + C7_3 * a1r + C7_1 * a2r + C7_2 * a3r, c3i = x0i + C7_3 * a1i + C7_1 * a2i + C7_2 * a3i;
  const T e1r = -(s1 * b1i + s2 * b2i + s3 * b3i), e1i = s1 * b1r + s2 * b2r + s3 * b3r;
  const T e2r = -(s2 * b1i - s3 * b2i - s1 * b3i), e2i = s2 * b1r - s3 * b2r - s1 * b3r;
  const T e3r = -(s3 * b1i - s1 * b2i + s2 * b3i), e3i = s3 * b1r - s1 * b2r + s2 * b3r;
  yr[d + ns] = c1r + e1r; yi[d + ns] = c1i + e1i;
  yr[d + 2 * ns] = c2r + e2r; yi[d + 2 * ns] = c2i + e2i;
  yr[d + 3 * ns] = c3r + e3r; yi[d + 3 * ns] = c3i + e3i;
  yr[d + 4 * ns] = c3r - e3r; yi[d + 4 * ns] = c3i - e3i;
  yr[d + 5 * ns] = c2r - e2r; yi[d + 5 * ns] = c2i - e2i;
  yr[d + 6 * ns] = c1r - e1r; yi[d + 6 * ns] = c1i - e1i;
}

#undef MG_INPUT
#undef MG_TWIST

// One Stockham pass with a written-out butterfly: y[(j div ns)·ns·R + (j mod ns) + r·ns] from
// x[j + r·n/R]. Early passes (small ns) run b outermost so one twiddle set serves a long run.
template <class T, void (*BF)(const T *, const T *, T *, T *, int64_t, int64_t, int64_t, int64_t, const double *, const double *, int64_t)>
void pass_with(const FftPass &p, int64_t n, const T *xr, const T *xi, T *yr, T *yi) {
  const int64_t R = p.radix, ns = p.ns, stride = n / R, groups = stride / ns, R1 = R - 1;
  const double *tr = p.twr.data(), *ti = p.twi.data();
  if (ns < 8) {
    for (int64_t b = 0; b < ns; b++)
      for (int64_t a = 0; a < groups; a++) BF(xr, xi, yr, yi, a * ns + b, stride, a * ns * R + b, ns, tr, ti, b * R1);
  } else {
    for (int64_t a = 0; a < groups; a++)
      for (int64_t b = 0; b < ns; b++) BF(xr, xi, yr, yi, a * ns + b, stride, a * ns * R + b, ns, tr, ti, b * R1);
  }
}

// A direct DFT butterfly for another prime radix (≤ FFT_MAX_DIRECT_RADIX).
template <class T>
void pass_direct(const FftPass &p, int64_t n, const T *xr, const T *xi, T *yr, T *yi) {
  const int64_t R = p.radix, ns = p.ns, stride = n / R, groups = stride / ns, R1 = R - 1;
  const double *tr = p.twr.data(), *ti = p.twi.data(), *rr = p.rootr.data(), *ri = p.rooti.data();
  T vr[FFT_MAX_DIRECT_RADIX], vi[FFT_MAX_DIRECT_RADIX];
  for (int64_t b = 0; b < ns; b++) {
    const int64_t t = b * R1;
    for (int64_t a = 0; a < groups; a++) {
      const int64_t j = a * ns + b;
      vr[0] = xr[j];
      vi[0] = xi[j];
      for (int64_t r = 1; r < R; r++) {
        const T ur = xr[j + r * stride], ui = xi[j + r * stride];
        const T wr = bc<T>(tr[t + r - 1]), wi = bc<T>(ti[t + r - 1]);
        vr[r] = ur * wr - ui * wi;
        vi[r] = ur * wi + ui * wr;
      }
      const int64_t d = a * ns * R + b;
      for (int64_t k = 0; k < R; k++) {
        T sr = bc<T>(0), si = bc<T>(0);
        int64_t idx = 0;
        for (int64_t r = 0; r < R; r++) {
          const T cr = bc<T>(rr[idx]), ci = bc<T>(ri[idx]);
          sr += vr[r] * cr - vi[r] * ci;
          si += vr[r] * ci + vi[r] * cr;
          idx += k;
          if (idx >= R) idx -= R;
        }
        yr[d + k * ns] = sr;
        yi[d + k * ns] = si;
      }
    }
  }
}

template <class T, int S>
void run_pass(const FftPass &p, int64_t n, const T *xr, const T *xi, T *yr, T *yi) {
  switch (p.radix) {
    case 2: return pass_with<T, bf2<T, S>>(p, n, xr, xi, yr, yi);
    case 3: return pass_with<T, bf3<T, S>>(p, n, xr, xi, yr, yi);
    case 4: return pass_with<T, bf4<T, S>>(p, n, xr, xi, yr, yi);
    case 5: return pass_with<T, bf5<T, S>>(p, n, xr, xi, yr, yi);
    case 7: return pass_with<T, bf7<T, S>>(p, n, xr, xi, yr, yi);
    case 8: return pass_with<T, bf8<T, S>>(p, n, xr, xi, yr, yi);
    default: return pass_direct<T>(p, n, xr, xi, yr, yi);
  }
}

// Stockham passes ping-ponging between (re, im) and (sr, si); returns the pair holding the result.
template <class T>
void run_stockham(const FftPlan &p, T *re, T *im, T *sr, T *si, T **outr, T **outi) {
  T *xr = re, *xi = im, *yr = sr, *yi = si;
  for (const FftPass &pass : p.passes) {
    if (p.sign < 0) run_pass<T, -1>(pass, p.n, xr, xi, yr, yi);
    else run_pass<T, 1>(pass, p.n, xr, xi, yr, yi);
    std::swap(xr, yr);
    std::swap(xi, yi);
  }
  *outr = xr;
  *outi = xi;
}

// The transform of (re, im) (length plan.n); the result is left in (*outr, *outi), which is either
// (re, im) or (sr, si). `blue` holds 4·m lane values for Bluestein plans.
template <class T>
void run_plan(const FftPlan &p, T *re, T *im, T *sr, T *si, T *blue, T **outr, T **outi) {
  *outr = re;
  *outi = im;
  if (!p.bluestein) {
    if (p.n > 1) run_stockham(p, re, im, sr, si, outr, outi);
    return;
  }
  const int64_t n = p.n, m = p.m;
  T *ar = blue, *ai = blue + m + FFT_SKEW, *tr = ai + m + FFT_SKEW, *ti = tr + m + FFT_SKEW;
  for (int64_t k = n; k < m; k++) ar[k] = ai[k] = bc<T>(0);
  for (int64_t k = 0; k < n; k++) {
    const T xr = re[k], xi = im[k];
    const T cr = bc<T>(p.chr[size_t(k)]), ci = bc<T>(p.chi[size_t(k)]);
    ar[k] = xr * cr - xi * ci;
    ai[k] = xr * ci + xi * cr;
  }
  T *fr, *fi;
  run_stockham(*p.fwd, ar, ai, tr, ti, &fr, &fi);
  for (int64_t k = 0; k < m; k++) {
    const T xr = fr[k], xi = fi[k];
    const T br = bc<T>(p.br[size_t(k)]), bi = bc<T>(p.bi[size_t(k)]);
    fr[k] = xr * br - xi * bi;
    fi[k] = xr * bi + xi * br;
  }
  T *gr, *gi;
  if (fr == ar) run_stockham(*p.inv, ar, ai, tr, ti, &gr, &gi);
  else run_stockham(*p.inv, tr, ti, ar, ai, &gr, &gi);
  const double inv = 1.0 / double(m);
  for (int64_t k = 0; k < n; k++) {
    const T xr = gr[k] * inv, xi = gi[k] * inv;
    const T cr = bc<T>(p.chr[size_t(k)]), ci = bc<T>(p.chi[size_t(k)]);
    re[k] = xr * cr - xi * ci;
    im[k] = xr * ci + xi * cr;
  }
}

// ---- lines: gather, transform, scatter --------------------------------------------------------------

inline void line_offsets(const FftStep &s, int64_t line, int64_t *src, int64_t *dst) {
  int64_t so = 0, dof = 0, rest = line;
  for (int d = s.ndims - 1; d >= 0; d--) {
    const int64_t c = rest % s.dims[d];
    rest /= s.dims[d];
    so += c * s.sdims[d];
    dof += c * s.ddims[d];
  }
  *src = so;
  *dst = dof;
}

inline void write_elem(char *base, int storage, int64_t off, double re, double im) {
  switch (storage) {
    case FftC64: {
      float *p = reinterpret_cast<float *>(base) + 2 * off;
      p[0] = float(re);
      p[1] = float(im);
      break;
    }
    case FftF32: reinterpret_cast<float *>(base)[off] = float(re); break;
    default: {
      double *p = reinterpret_cast<double *>(base) + 2 * off;
      p[0] = re;
      p[1] = im;
      break;
    }
  }
}

// ---- vectorised moves between storage and lane buffers (VD lanes) -----------------------------------
// Two layouts cover the strided moves of batched and four-step transforms: the lanes' elements side
// by side (neighbouring lines, e.g. columns, or the four-step's interleaved lines), read or written
// as one vector per element; and each lane's elements adjacent (rows), moved in 4×4 blocks through
// a transpose. Values are only converted (float ↔ double) and scaled as the scalar loops do, so
// the bits are the same.

typedef float vf4 __attribute__((vector_size(16)));

inline void transpose4(vd &a0, vd &a1, vd &a2, vd &a3) {
  const vd t0 = __builtin_shufflevector(a0, a1, 0, 4, 2, 6), t1 = __builtin_shufflevector(a0, a1, 1, 5, 3, 7);
  const vd t2 = __builtin_shufflevector(a2, a3, 0, 4, 2, 6), t3 = __builtin_shufflevector(a2, a3, 1, 5, 3, 7);
  a0 = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
  a1 = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
  a2 = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
  a3 = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
}

// four complex values stored as (re, im) pairs → their parts as doubles
template <class P>
inline void load_pairs(const P *q, vd *re, vd *im) {
  if constexpr (std::is_same_v<P, float>) {
    const vf v = vf_load(q);
    *re = __builtin_convertvector(__builtin_shufflevector(v, v, 0, 2, 4, 6), vd);
    *im = __builtin_convertvector(__builtin_shufflevector(v, v, 1, 3, 5, 7), vd);
  } else {
    const vd a = vd_load(q), b = vd_load(q + 4);
    *re = __builtin_shufflevector(a, b, 0, 2, 4, 6);
    *im = __builtin_shufflevector(a, b, 1, 3, 5, 7);
  }
}

// SCALE: 0 as is, 1 times `f`, 2 divided by `f` (the scalar writers' operations)
template <int SCALE>
inline vd scaled(vd x, double f) {
  if constexpr (SCALE == 1) return x * f;
  else if constexpr (SCALE == 2) return x / f;
  else return x;
}

template <class P, int SCALE>
inline void store_pairs(P *q, vd re, vd im, double f) {
  re = scaled<SCALE>(re, f);
  im = scaled<SCALE>(im, f);
  if constexpr (std::is_same_v<P, float>) {
    const vf4 r = __builtin_convertvector(re, vf4), i = __builtin_convertvector(im, vf4);
    vf_store(q, __builtin_shufflevector(r, i, 0, 4, 1, 5, 2, 6, 3, 7));
  } else {
    vd_store(q, __builtin_shufflevector(re, im, 0, 4, 1, 5));
    vd_store(q + 4, __builtin_shufflevector(re, im, 2, 6, 3, 7));
  }
}

// Element i of lane l is the pair at p + off[l] + i·step (scalars); reads elements [0, count) into
// the lane buffers. Returns how many it moved (0 when neither layout applies; a multiple of 4 for
// the transposed one).
template <class P>
int64_t gather_pairs(const P *p, const int64_t *off, int64_t step, int64_t count, double *re, double *im) {
  if (off[1] == off[0] + 2 && off[2] == off[0] + 4 && off[3] == off[0] + 6) {
    const P *q = p + off[0];
    for (int64_t i = 0; i < count; i++) {
      vd r, m;
      load_pairs(q + i * step, &r, &m);
      vd_store(re + 4 * i, r);
      vd_store(im + 4 * i, m);
    }
    return count;
  }
  if (step != 2) return 0;
  const int64_t blocks = count & ~int64_t(3);
  for (int64_t i = 0; i < blocks; i += 4) {
    vd r0, r1, r2, r3, m0, m1, m2, m3;
    load_pairs(p + off[0] + 2 * i, &r0, &m0);
    load_pairs(p + off[1] + 2 * i, &r1, &m1);
    load_pairs(p + off[2] + 2 * i, &r2, &m2);
    load_pairs(p + off[3] + 2 * i, &r3, &m3);
    transpose4(r0, r1, r2, r3);
    transpose4(m0, m1, m2, m3);
    vd_store(re + 4 * i, r0), vd_store(re + 4 * i + 4, r1), vd_store(re + 4 * i + 8, r2), vd_store(re + 4 * i + 12, r3);
    vd_store(im + 4 * i, m0), vd_store(im + 4 * i + 4, m1), vd_store(im + 4 * i + 8, m2), vd_store(im + 4 * i + 12, m3);
  }
  return blocks;
}

// The converse of gather_pairs: lane buffers' elements [0, count) to the pairs at p + off[l] + k·step.
template <class P, int SCALE>
int64_t scatter_pairs(P *p, const int64_t *off, int64_t step, int64_t count, const double *re, const double *im, double f) {
  if (off[1] == off[0] + 2 && off[2] == off[0] + 4 && off[3] == off[0] + 6) {
    P *q = p + off[0];
    for (int64_t k = 0; k < count; k++) store_pairs<P, SCALE>(q + k * step, vd_load(re + 4 * k), vd_load(im + 4 * k), f);
    return count;
  }
  if (step != 2) return 0;
  const int64_t blocks = count & ~int64_t(3);
  for (int64_t k = 0; k < blocks; k += 4) {
    vd r0 = vd_load(re + 4 * k), r1 = vd_load(re + 4 * k + 4), r2 = vd_load(re + 4 * k + 8), r3 = vd_load(re + 4 * k + 12);
    vd m0 = vd_load(im + 4 * k), m1 = vd_load(im + 4 * k + 4), m2 = vd_load(im + 4 * k + 8), m3 = vd_load(im + 4 * k + 12);
    transpose4(r0, r1, r2, r3);
    transpose4(m0, m1, m2, m3);
    store_pairs<P, SCALE>(p + off[0] + 2 * k, r0, m0, f);
    store_pairs<P, SCALE>(p + off[1] + 2 * k, r1, m1, f);
    store_pairs<P, SCALE>(p + off[2] + 2 * k, r2, m2, f);
    store_pairs<P, SCALE>(p + off[3] + 2 * k, r3, m3, f);
  }
  return blocks;
}

// Elements k0 + i·step (i < count) of every lane into lane buffers (element i of lane l at
// [i·L + l]); elements at or beyond `limit` read as 0. Element-major, so lanes that are
// neighbouring columns share cache lines and pages; one loop per storage.
template <int L>
void gather_lanes(const FftStep &s, const int64_t *sb, int64_t k0, int64_t step, int64_t count, int64_t limit, double *re, double *im) {
  const int64_t have = std::max<int64_t>(0, std::min(count, k0 >= limit ? 0 : (limit - k0 + step - 1) / step));
  const int64_t st = step * s.src_stride;
  int64_t base[L];
  for (int l = 0; l < L; l++) base[l] = sb[l] + k0 * s.src_stride;
  int64_t i0 = 0;  // elements moved by a vectorised layout
  if constexpr (L == VD) {
    int64_t off[L];
    if (s.src_storage == FftC64 || s.src_storage == FftC128) {
      for (int l = 0; l < L; l++) off[l] = 2 * base[l];
      i0 = s.src_storage == FftC64 ? gather_pairs(reinterpret_cast<const float *>(s.src), off, 2 * st, have, re, im)
                                   : gather_pairs(reinterpret_cast<const double *>(s.src), off, 2 * st, have, re, im);
    } else if (s.src_storage == FftF32Pair && s.src_pair == 1) {
      i0 = gather_pairs(reinterpret_cast<const float *>(s.src), base, st, have, re, im);
    }
  }
  switch (s.src_storage) {
    case FftC64: {
      const float *p = reinterpret_cast<const float *>(s.src);
      for (int64_t i = i0; i < have; i++)
        for (int l = 0; l < L; l++) {
          const float *q = p + 2 * (base[l] + i * st);
          re[i * L + l] = q[0];
          im[i * L + l] = q[1];
        }
      break;
    }
    case FftC128: {
      const double *p = reinterpret_cast<const double *>(s.src);
      for (int64_t i = i0; i < have; i++)
        for (int l = 0; l < L; l++) {
          const double *q = p + 2 * (base[l] + i * st);
          re[i * L + l] = q[0];
          im[i * L + l] = q[1];
        }
      break;
    }
    case FftF32: {
      const float *p = reinterpret_cast<const float *>(s.src);
      for (int64_t i = i0; i < have; i++)
        for (int l = 0; l < L; l++) {
          re[i * L + l] = p[base[l] + i * st];
          im[i * L + l] = 0;
        }
      break;
    }
    default: {
      const float *p = reinterpret_cast<const float *>(s.src);
      for (int64_t i = i0; i < have; i++)
        for (int l = 0; l < L; l++) {
          const float *q = p + base[l] + i * st;
          re[i * L + l] = q[0];
          im[i * L + l] = q[s.src_pair];
        }
      break;
    }
  }
  for (int64_t i = have * L; i < count * L; i++) re[i] = im[i] = 0;
}

// Lane buffers → every lane's line (count elements from 0), times `scale` unless it is 1.
template <int L>
void scatter_lanes(const FftStep &s, const int64_t *db, int64_t count, const double *re, const double *im, double scale) {
  const int64_t st = s.dst_stride;
  int64_t k0 = 0;  // elements moved by a vectorised layout
  if constexpr (L == VD) {
    if (s.dst_storage == FftC64 || s.dst_storage == FftC128) {
      int64_t off[L];
      for (int l = 0; l < L; l++) off[l] = 2 * db[l];
      if (s.dst_storage == FftC64) {
        float *p = reinterpret_cast<float *>(s.dst);
        k0 = scale != 1.0 ? scatter_pairs<float, 1>(p, off, 2 * st, count, re, im, scale) : scatter_pairs<float, 0>(p, off, 2 * st, count, re, im, 1.0);
      } else {
        double *p = reinterpret_cast<double *>(s.dst);
        k0 = scale != 1.0 ? scatter_pairs<double, 1>(p, off, 2 * st, count, re, im, scale) : scatter_pairs<double, 0>(p, off, 2 * st, count, re, im, 1.0);
      }
    }
  }
  if (scale != 1.0) {
    // scaled copies in the lane buffers' own layout would need scratch: scale on the way out
    switch (s.dst_storage) {
      case FftC64: {
        float *p = reinterpret_cast<float *>(s.dst);
        for (int64_t k = k0; k < count; k++)
          for (int l = 0; l < L; l++) {
            float *q = p + 2 * (db[l] + k * st);
            q[0] = float(re[k * L + l] * scale);
            q[1] = float(im[k * L + l] * scale);
          }
        return;
      }
      case FftC128: {
        double *p = reinterpret_cast<double *>(s.dst);
        for (int64_t k = k0; k < count; k++)
          for (int l = 0; l < L; l++) {
            double *q = p + 2 * (db[l] + k * st);
            q[0] = re[k * L + l] * scale;
            q[1] = im[k * L + l] * scale;
          }
        return;
      }
      default: {
        float *p = reinterpret_cast<float *>(s.dst);
        for (int64_t k = k0; k < count; k++)
          for (int l = 0; l < L; l++) p[db[l] + k * st] = float(re[k * L + l] * scale);
        return;
      }
    }
  }
  switch (s.dst_storage) {
    case FftC64: {
      float *p = reinterpret_cast<float *>(s.dst);
      for (int64_t k = k0; k < count; k++)
        for (int l = 0; l < L; l++) {
          float *q = p + 2 * (db[l] + k * st);
          q[0] = float(re[k * L + l]);
          q[1] = float(im[k * L + l]);
        }
      return;
    }
    case FftC128: {
      double *p = reinterpret_cast<double *>(s.dst);
      for (int64_t k = k0; k < count; k++)
        for (int l = 0; l < L; l++) {
          double *q = p + 2 * (db[l] + k * st);
          q[0] = re[k * L + l];
          q[1] = im[k * L + l];
        }
      return;
    }
    default: {
      float *p = reinterpret_cast<float *>(s.dst);
      for (int64_t k = k0; k < count; k++)
        for (int l = 0; l < L; l++) p[db[l] + k * st] = float(re[k * L + l]);
      return;
    }
  }
}

// L lines starting at `first` (L = 1 with T = double, L = VD with T = vd): lane buffers hold
// element k of lane l at [k·L + l].
template <class T, int L>
void run_group(const FftStep &s, int64_t first, double *scratch) {
  int64_t sb[L], db[L];
  for (int l = 0; l < L; l++) line_offsets(s, first + l, &sb[l], &db[l]);
  const int64_t n = s.n;
  char *dst = s.dst;
  auto gather = [&](double *re, double *im, int64_t k0, int64_t step, int64_t count, int64_t limit) {
    gather_lanes<L>(s, sb, k0, step, count, limit, re, im);
  };
  T *buf = reinterpret_cast<T *>(scratch);
  if (s.kind == FftC2C) {
    const FftPlan &p = *s.plan;
    const int64_t e = n + FFT_SKEW;
    T *re = buf, *im = buf + e, *sr = buf + 2 * e, *si = buf + 3 * e, *blue = buf + 4 * e;
    gather(reinterpret_cast<double *>(re), reinterpret_cast<double *>(im), 0, 1, n, s.src_len);
    T *outr, *outi;
    run_plan(p, re, im, sr, si, blue, &outr, &outi);
    double *orr = reinterpret_cast<double *>(outr), *oi = reinterpret_cast<double *>(outi);
    if (s.tw_n && L == VD) {
      // four-step: element k of line i times ω^(i·k), the lanes' twiddles gathered into vectors
      const uint64_t tn = uint64_t(s.tw_n);
      uint64_t idx[VD] = {0, 0, 0, 0}, step[VD];
      for (int l = 0; l < VD; l++) step[l] = uint64_t(first + l) % tn;
      for (int64_t k = 0; k < n; k++) {
        const vd wr = {s.twr[idx[0]], s.twr[idx[1]], s.twr[idx[2]], s.twr[idx[3]]};
        const vd wi = {s.twi[idx[0]], s.twi[idx[1]], s.twi[idx[2]], s.twi[idx[3]]};
        const vd xr = vd_load(orr + k * VD), xi = vd_load(oi + k * VD);
        vd_store(orr + k * VD, xr * wr - xi * wi);
        vd_store(oi + k * VD, xr * wi + xi * wr);
        for (int l = 0; l < VD; l++) {
          idx[l] += step[l];
          if (idx[l] >= tn) idx[l] -= tn;
        }
      }
    } else if (s.tw_n) {
      // four-step: element k of line i times ω^(i·k)
      for (int l = 0; l < L; l++) {
        const uint64_t line = uint64_t(first + l), tn = uint64_t(s.tw_n);
        uint64_t idx = 0;
        const uint64_t step = line % tn;
        for (int64_t k = 0; k < n; k++) {
          const double xr = orr[k * L + l], xi = oi[k * L + l];
          const double wr = s.twr[idx], wi = s.twi[idx];
          orr[k * L + l] = xr * wr - xi * wi;
          oi[k * L + l] = xr * wi + xi * wr;
          idx += step;
          if (idx >= tn) idx -= tn;
        }
      }
    }
    scatter_lanes<L>(s, db, n, orr, oi, s.scale);
    return;
  }
  const int64_t h = n >> 1;
  const bool packed = n % 2 == 0 && n >= 4;
  if (s.kind == FftR2C) {
    if (!packed) {
      const FftPlan &p = *s.plan;
      const int64_t e = n + FFT_SKEW;
      T *re = buf, *im = buf + e, *sr = buf + 2 * e, *si = buf + 3 * e, *blue = buf + 4 * e;
      gather(reinterpret_cast<double *>(re), reinterpret_cast<double *>(im), 0, 1, n, s.src_len);
      T *outr, *outi;
      run_plan(p, re, im, sr, si, blue, &outr, &outi);
      scatter_lanes<L>(s, db, h + 1, reinterpret_cast<const double *>(outr), reinterpret_cast<const double *>(outi), 1.0);
      return;
    }
    const FftPlan &p = *s.half;
    const int64_t e = h + FFT_SKEW;
    T *zr = buf, *zi = buf + e, *sr = buf + 2 * e, *si = buf + 3 * e, *blue = buf + 4 * e;
    // z_k = x[2k] + i·x[2k+1]: the real line read as pairs
    FftStep pairs = s;
    pairs.src_storage = FftF32Pair;
    pairs.src_pair = s.src_stride;
    gather_lanes<L>(pairs, sb, 0, 2, h, n, reinterpret_cast<double *>(zr), reinterpret_cast<double *>(zi));
    T *outr, *outi;
    run_plan(p, zr, zi, sr, si, blue, &outr, &outi);
    // X_k = (Z_k + conj Z_{h−k})/2 − i·e^(−2πik/n)·(Z_k − conj Z_{h−k})/2, all lanes at once into
    // lane buffers past the transform's (Bluestein's scratch is free again), then one scatter
    T *xr = blue, *xi = xr + h + 1 + FFT_SKEW;
    for (int64_t k = 0; k <= h; k++) {
      const int64_t a = k == h ? 0 : k, b = k == 0 ? 0 : h - k;  // k mod h, (h − k) mod h
      const T pr = outr[a], pi = outi[a], qr = outr[b], qi = -outi[b];
      const T er = 0.5 * (pr + qr), ei = 0.5 * (pi + qi);
      const T or_ = 0.5 * (pr - qr), oi_ = 0.5 * (pi - qi);
      const T wr = bc<T>(s.half_twr[k]), wi = bc<T>(s.half_twi[k]);
      const T tr = wr * or_ - wi * oi_, ti = wr * oi_ + wi * or_;
      xr[k] = er + ti;
      xi[k] = ei - tr;
    }
    scatter_lanes<L>(s, db, h + 1, reinterpret_cast<const double *>(xr), reinterpret_cast<const double *>(xi), 1.0);
    return;
  }
  // C2R: bins 0..n/2 (those present), n reals divided by n
  const double dn = double(n);
  const int64_t nb = h + 1;
  if (!packed) {
    const FftPlan &p = *s.plan;
    const int64_t e = n + FFT_SKEW;
    T *re = buf, *im = buf + e, *sr = buf + 2 * e, *si = buf + 3 * e, *blue = buf + 4 * e;
    double *red = reinterpret_cast<double *>(re), *imd = reinterpret_cast<double *>(im);
    gather(red, imd, 0, 1, nb, s.src_len);
    for (int l = 0; l < L; l++) {
      imd[l] = 0;
      if (n % 2 == 0) imd[h * L + l] = 0;
      for (int64_t k = h + 1; k < n; k++) {
        red[k * L + l] = red[(n - k) * L + l];
        imd[k * L + l] = -imd[(n - k) * L + l];
      }
    }
    T *outr, *outi;
    run_plan(p, re, im, sr, si, blue, &outr, &outi);
    const double *orr = reinterpret_cast<const double *>(outr);
    float *o = reinterpret_cast<float *>(dst);
    for (int64_t k = 0; k < n; k++)
      for (int l = 0; l < L; l++) o[db[l] + k * s.dst_stride] = float(orr[k * L + l] / dn);
    return;
  }
  const FftPlan &p = *s.half;
  // bins (h + 1, rounded to keep the lane buffers aligned), then z, scratch and Bluestein's
  const int64_t nbr = (nb + 3) & ~int64_t(3);
  const int64_t e = h + FFT_SKEW;
  T *binr = buf, *bini = buf + nbr + FFT_SKEW, *zr = bini + nbr + FFT_SKEW, *zi = zr + e, *sr = zi + e, *si = sr + e, *blue = si + e;
  double *br = reinterpret_cast<double *>(binr), *bi = reinterpret_cast<double *>(bini);
  gather(br, bi, 0, 1, nb, s.src_len);
  // Z_k = E_k + i·e^(+2πik/n)·O_k, E_k = X_k + conj X_{h−k}, O_k = X_k − conj X_{h−k}
  for (int64_t k = 0; k < h; k++) {
    const T xr = binr[k], xi = k == 0 ? bc<T>(0) : bini[k];
    const T yr = binr[h - k], yi = k == 0 ? bc<T>(0) : -bini[h - k];
    const T er = xr + yr, ei = xi + yi;
    const T or_ = xr - yr, oi_ = xi - yi;
    const T wr = bc<T>(s.half_twr[k]), wi = bc<T>(-s.half_twi[k]);
    const T tr = wr * or_ - wi * oi_, ti = wr * oi_ + wi * or_;
    zr[k] = er - ti;
    zi[k] = ei + tr;
  }
  T *outr, *outi;
  run_plan(p, zr, zi, sr, si, blue, &outr, &outi);
  const double *orr = reinterpret_cast<const double *>(outr), *oi = reinterpret_cast<const double *>(outi);
  float *o = reinterpret_cast<float *>(dst);
  int64_t k0 = 0;
  if constexpr (L == VD) {
    // reals 2k and 2k + 1 side by side (unit stride): written as pairs
    if (s.dst_stride == 1) k0 = scatter_pairs<float, 2>(o, db, 2, h, orr, oi, dn);
  }
  for (int64_t k = k0; k < h; k++)
    for (int l = 0; l < L; l++) {
      o[db[l] + (2 * k) * s.dst_stride] = float(orr[k * L + l] / dn);
      o[db[l] + (2 * k + 1) * s.dst_stride] = float(oi[k * L + l] / dn);
    }
}

}  // namespace fftk

// Lines [first, first + count) of a step: groups of VD lines run vectorised, the rest one by one.
static void fft_lines_impl(const FftStep &s, int64_t first, int64_t count, double *scratch) {
  int64_t i = 0;
  for (; i + VD <= count; i += VD) fftk::run_group<vd, VD>(s, first + i, scratch);
  for (; i < count; i++) fftk::run_group<double, 1>(s, first + i, scratch);
}
static_assert(VD == FFT_LANES, "the FFT driver groups FFT_LANES lines per vector");
