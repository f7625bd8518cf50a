// FFTs on complex64 (float2), the GPU side of ts/backend/gpu/fft.ts. The algorithm is the CPU
// reference's (ts/backend/cpu/fft.ts): mixed-radix Stockham passes, radix 4/2/3/5/7 butterflies
// written out and a direct DFT butterfly for other primes (up to 61), with twiddles computed in
// float64 on the host and read from a table. Pass p with radix R after a product ns of earlier
// radices maps butterfly j (b = j mod ns, a = j div ns):
//     v_r = x[j + r·n/R] · tw[b·(R−1) + r − 1],  v = DFT_R(v),  y[a·ns·R + b + r·ns] = v_r.
//
//   fft_line   one threadgroup per line (n ≤ 2048: both ping-pong buffers in threadgroup
//              memory), reading the line strided from the input (zero-padded or truncated to
//              n) and writing it strided to the output, scaled. KIND 0: complex → complex,
//              1: real → complex (the first n/2+1 bins), 2: Hermitian half → real.
//   fft_load / fft_pass / fft_store   the same in several dispatches through contiguous
//              [lines, n] scratch buffers: one thread per butterfly per pass.
//   fft_chirp_in / fft_pointwise / fft_chirp_out   Bluestein's steps for lengths with a prime
//              factor above 61: a_k = x_k·c_k zero-padded to m, convolution with the chirp's
//              transform, y_k = c_k·(IFFT)_k / m.
#include "utils.h"

struct FftParams {
  int n;          // transform length
  int n_in;       // elements available along the axis in the input (≤ n read, the rest zero)
  int n_out;      // elements written along the axis
  int lines;      // number of lines
  int64_t in_base;    // element offsets of the first line
  int64_t out_base;
  int64_t in_stride;  // element strides along the axis
  int64_t out_stride;
  int line_ndim;  // line axes in line_shape; line_strides holds the input's then the output's
  int sign;       // −1 forward, +1 inverse
  float scale;    // applied to every output
};

// plan: [npasses, then per pass (radix, ns, twiddle offset, root offset)]
MG_FUNC float2 cmul(float2 a, float2 b) { return float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
// (sign·i)·z
MG_FUNC float2 rot_i(float2 z, int sign) { return sign < 0 ? float2(z.y, -z.x) : float2(-z.y, z.x); }

constant constexpr float SIN60 = 0.866025403784438646763723170752936183f;
constant constexpr float C5_1 = 0.309016994374947424102293417182819059f;
constant constexpr float C5_2 = -0.809016994374947424102293417182819059f;
constant constexpr float S5_1 = 0.951056516295153572116439333379382143f;
constant constexpr float S5_2 = 0.587785252292473129168705954639072769f;
constant constexpr float C7_1 = 0.623489801858733530525004884004239810f;
constant constexpr float C7_2 = -0.222520933956314404288902564496794759f;
constant constexpr float C7_3 = -0.900968867902419126236102319507445051f;
constant constexpr float S7_1 = 0.781831482468029808708444526674057750f;
constant constexpr float S7_2 = 0.974927912181823607018131682993931217f;
constant constexpr float S7_3 = 0.433883739117558120475768332848358754f;

constant constexpr int MAX_DIRECT_RADIX = 61;

// One butterfly of one pass (x and y in any address space).
template <typename PX, typename PY, typename PT>
MG_FUNC void fft_butterfly(PX x, PY y, PT tw, int n, int R, int ns, int toff, int roff, int sign, int j) {
  const int stride = n / R;
  const int b = j % ns;
  const int a = j / ns;
  const int d = a * ns * R + b;
  PT t = tw + toff + b * (R - 1);
  const float s = float(sign);
  if (R == 2) {
    const float2 x0 = x[j], x1 = cmul(x[j + stride], t[0]);
    y[d] = x0 + x1;
    y[d + ns] = x0 - x1;
  } else if (R == 4) {
    const float2 x0 = x[j], x1 = cmul(x[j + stride], t[0]), x2 = cmul(x[j + 2 * stride], t[1]), x3 = cmul(x[j + 3 * stride], t[2]);
    const float2 s02 = x0 + x2, d02 = x0 - x2, s13 = x1 + x3, r13 = rot_i(x1 - x3, sign);
    y[d] = s02 + s13;
    y[d + ns] = d02 + r13;
    y[d + 2 * ns] = s02 - s13;
    y[d + 3 * ns] = d02 - r13;
  } else if (R == 3) {
    const float2 x0 = x[j], x1 = cmul(x[j + stride], t[0]), x2 = cmul(x[j + 2 * stride], t[1]);
    const float2 sm = x1 + x2;
    const float2 m = x0 - 0.5f * sm;
    const float2 dd = (s * SIN60) * float2(-(x1.y - x2.y), x1.x - x2.x);
    y[d] = x0 + sm;
    y[d + ns] = m + dd;
    y[d + 2 * ns] = m - dd;
  } else if (R == 5) {
    const float2 x0 = x[j];
    const float2 v1 = cmul(x[j + stride], t[0]), v2 = cmul(x[j + 2 * stride], t[1]);
    const float2 v3 = cmul(x[j + 3 * stride], t[2]), v4 = cmul(x[j + 4 * stride], t[3]);
    const float2 a1 = v1 + v4, b1 = v1 - v4, a2 = v2 + v3, b2 = v2 - v3;
    const float2 c1 = x0 + C5_1 * a1 + C5_2 * a2, c2 = x0 + C5_2 * a1 + C5_1 * a2;
    const float s1 = s * S5_1, s2 = s * S5_2;
    const float2 e1 = float2(-(s1 * b1.y + s2 * b2.y), s1 * b1.x + s2 * b2.x);
    const float2 e2 = float2(-(s2 * b1.y - s1 * b2.y), s2 * b1.x - s1 * b2.x);
    y[d] = x0 + a1 + a2;
    y[d + ns] = c1 + e1;
    y[d + 2 * ns] = c2 + e2;
    y[d + 3 * ns] = c2 - e2;
    y[d + 4 * ns] = c1 - e1;
  } else if (R == 7) {
    const float2 x0 = x[j];
    float2 v[6];
    for (int r = 1; r < 7; ++r) v[r - 1] = cmul(x[j + r * stride], t[r - 1]);
    const float2 a1 = v[0] + v[5], b1 = v[0] - v[5];
    const float2 a2 = v[1] + v[4], b2 = v[1] - v[4];
    const float2 a3 = v[2] + v[3], b3 = v[2] - v[3];
    const float s1 = s * S7_1, s2 = s * S7_2, s3 = s * S7_3;
    const float2 c1 = x0 + C7_1 * a1 + C7_2 * a2 + C7_3 * a3;
    const float2 c2 = x0 + C7_2 * a1 + C7_3 * a2 + C7_1 * a3;
    const float2 c3 = x0 + C7_3 * a1 + C7_1 * a2 + C7_2 * a3;
    const float2 e1 = float2(-(s1 * b1.y + s2 * b2.y + s3 * b3.y), s1 * b1.x + s2 * b2.x + s3 * b3.x);
    const float2 e2 = float2(-(s2 * b1.y - s3 * b2.y - s1 * b3.y), s2 * b1.x - s3 * b2.x - s1 * b3.x);
    const float2 e3 = float2(-(s3 * b1.y - s1 * b2.y + s2 * b3.y), s3 * b1.x - s1 * b2.x + s2 * b3.x);
    y[d] = x0 + a1 + a2 + a3;
    y[d + ns] = c1 + e1;
    y[d + 2 * ns] = c2 + e2;
    y[d + 3 * ns] = c3 + e3;
    y[d + 4 * ns] = c3 - e3;
    y[d + 5 * ns] = c2 - e2;
    y[d + 6 * ns] = c1 - e1;
  } else {
    // Direct DFT of another prime radix: roots[k] = e^(sign·2πik/R).
    PT roots = tw + roff;
    float2 v[MAX_DIRECT_RADIX];
    v[0] = x[j];
    for (int r = 1; r < R; ++r) v[r] = cmul(x[j + r * stride], t[r - 1]);
    for (int k = 0; k < R; ++k) {
      float2 acc = float2(0.0f);
      int idx = 0;
      for (int r = 0; r < R; ++r) {
        acc += cmul(v[r], roots[idx]);
        idx += k;
        if (idx >= R) idx -= R;
      }
      y[d + k * ns] = acc;
    }
  }
}

MG_FUNC int64_t line_offset(int line, constant const int* shape, constant const int64_t* strides, int nd) {
  return nd > 0 ? elem_to_loc<int64_t>(int64_t(line), shape, strides, nd) : 0;
}

// Element k of the n-point line to transform, from the input line (KIND as fft_line).
template <int KIND>
MG_FUNC float2 load_element(device const float* in, int64_t at, int k, constant const FftParams& p) {
  if (KIND == 1) return float2(k < p.n_in ? in[at + int64_t(k) * p.in_stride] : 0.0f, 0.0f);
  device const float2* in2 = (device const float2*)in;
  if (KIND == 0) return k < p.n_in ? in2[at + int64_t(k) * p.in_stride] : float2(0.0f);
  // Hermitian: bins 0..n/2 given (n_in of them), the rest mirrored and conjugated; the
  // imaginary parts of bin 0 and (even n) bin n/2 are ignored.
  const int h = p.n / 2;
  const bool mirrored = k > h;
  const int src = mirrored ? p.n - k : k;
  float2 v = src < p.n_in ? in2[at + int64_t(src) * p.in_stride] : float2(0.0f);
  if (src == 0 || (p.n % 2 == 0 && src == h)) v.y = 0.0f;
  return mirrored ? float2(v.x, -v.y) : v;
}

template <int KIND>
MG_FUNC void store_element(device float* out, int64_t at, int k, float2 v, constant const FftParams& p) {
  if (KIND == 2) {
    out[at + int64_t(k) * p.out_stride] = v.x * p.scale;
  } else {
    device float2* out2 = (device float2*)out;
    out2[at + int64_t(k) * p.out_stride] = v * p.scale;
  }
}

// grid: one threadgroup per line; threadgroup(0) holds 2·n float2.
template <int KIND>
[[kernel]] void fft_line(
    device const float* in [[buffer(0)]],
    device float* out [[buffer(1)]],
    device const float2* tw [[buffer(2)]],
    constant const FftParams& p [[buffer(3)]],
    constant const int* plan [[buffer(4)]],
    constant const int* line_shape [[buffer(5)]],
    constant const int64_t* line_strides [[buffer(6)]],
    threadgroup float2* buf [[threadgroup(0)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint3 tsize [[threads_per_threadgroup]]) {
  const int line = int(tgid.x);
  const int nt = int(tsize.x);
  const int n = p.n;
  const int64_t in_at = p.in_base + line_offset(line, line_shape, line_strides, p.line_ndim);
  const int64_t out_at = p.out_base + line_offset(line, line_shape, line_strides + p.line_ndim, p.line_ndim);
  threadgroup float2* x = buf;
  threadgroup float2* y = buf + n;
  for (int k = int(tid); k < n; k += nt) x[k] = load_element<KIND>(in, in_at, k, p);
  const int npasses = plan[0];
  for (int q = 0; q < npasses; ++q) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const int R = plan[1 + 4 * q], ns = plan[2 + 4 * q], toff = plan[3 + 4 * q], roff = plan[4 + 4 * q];
    for (int j = int(tid); j < n / R; j += nt) fft_butterfly(x, y, tw, n, R, ns, toff, roff, p.sign, j);
    threadgroup float2* t = x;
    x = y;
    y = t;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (int k = int(tid); k < p.n_out; k += nt) store_element<KIND>(out, out_at, k, x[k], p);
}

// Multi-dispatch path. grid: (n, lines) threads.
template <int KIND>
[[kernel]] void fft_load(
    device const float* in [[buffer(0)]],
    device float2* scratch [[buffer(1)]],
    constant const FftParams& p [[buffer(3)]],
    constant const int* line_shape [[buffer(5)]],
    constant const int64_t* line_strides [[buffer(6)]],
    uint2 gid [[thread_position_in_grid]]) {
  const int k = int(gid.x), line = int(gid.y);
  if (k >= p.n || line >= p.lines) return;
  const int64_t in_at = p.in_base + line_offset(line, line_shape, line_strides, p.line_ndim);
  scratch[int64_t(line) * p.n + k] = load_element<KIND>(in, in_at, k, p);
}

// grid: (n/R, lines) threads; pass_info = (radix, ns, twiddle offset, root offset).
template <typename T>  // T = float2: a template only so that it is instantiated like the others
[[kernel]] void fft_pass(
    device const float2* x [[buffer(0)]],
    device float2* y [[buffer(1)]],
    device const float2* tw [[buffer(2)]],
    constant const int& n [[buffer(3)]],
    constant const int4& pass_info [[buffer(4)]],
    constant const int& sign [[buffer(5)]],
    constant const int& lines [[buffer(6)]],
    uint2 gid [[thread_position_in_grid]]) {
  const int R = pass_info.x;
  const int j = int(gid.x), line = int(gid.y);
  if (j >= n / R || line >= lines) return;
  const int64_t at = int64_t(line) * n;
  fft_butterfly(x + at, y + at, tw, n, R, pass_info.y, pass_info.z, pass_info.w, sign, j);
}

// grid: (n_out, lines) threads.
template <int KIND>
[[kernel]] void fft_store(
    device const float2* scratch [[buffer(0)]],
    device float* out [[buffer(1)]],
    constant const FftParams& p [[buffer(3)]],
    constant const int* line_shape [[buffer(5)]],
    constant const int64_t* line_strides [[buffer(6)]],
    uint2 gid [[thread_position_in_grid]]) {
  const int k = int(gid.x), line = int(gid.y);
  if (k >= p.n_out || line >= p.lines) return;
  const int64_t out_at = p.out_base + line_offset(line, line_shape, line_strides + p.line_ndim, p.line_ndim);
  store_element<KIND>(out, out_at, k, scratch[int64_t(line) * p.n + k], p);
}

// Bluestein. grid: (m, lines) threads. a[line, k] = x[line, k]·chirp[k] (k < n), 0 up to m.
template <typename T>  // T = float2: a template only so that it is instantiated like the others
[[kernel]] void fft_chirp_in(
    device const float2* x [[buffer(0)]],
    device float2* a [[buffer(1)]],
    device const float2* chirp [[buffer(2)]],
    constant const int3& nml [[buffer(3)]],  // n, m, lines
    uint2 gid [[thread_position_in_grid]]) {
  const int k = int(gid.x), line = int(gid.y);
  if (k >= nml.y || line >= nml.z) return;
  a[int64_t(line) * nml.y + k] = k < nml.x ? cmul(x[int64_t(line) * nml.x + k], chirp[k]) : float2(0.0f);
}

// a[line, k] *= b[k]. grid: (m, lines) threads.
template <typename T>  // T = float2: a template only so that it is instantiated like the others
[[kernel]] void fft_pointwise(
    device float2* a [[buffer(0)]],
    device const float2* b [[buffer(1)]],
    constant const int2& ml [[buffer(2)]],  // m, lines
    uint2 gid [[thread_position_in_grid]]) {
  const int k = int(gid.x), line = int(gid.y);
  if (k >= ml.x || line >= ml.y) return;
  const int64_t at = int64_t(line) * ml.x + k;
  a[at] = cmul(a[at], b[k]);
}

// y[line, k] = chirp[k]·a[line, k]/m for k < n. grid: (n, lines) threads.
template <typename T>  // T = float2: a template only so that it is instantiated like the others
[[kernel]] void fft_chirp_out(
    device const float2* a [[buffer(0)]],
    device float2* y [[buffer(1)]],
    device const float2* chirp [[buffer(2)]],
    constant const int3& nml [[buffer(3)]],
    uint2 gid [[thread_position_in_grid]]) {
  const int k = int(gid.x), line = int(gid.y);
  if (k >= nml.x || line >= nml.z) return;
  y[int64_t(line) * nml.x + k] = cmul(a[int64_t(line) * nml.y + k], chirp[k]) * (1.0f / float(nml.y));
}
