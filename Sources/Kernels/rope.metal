// Rotary position embedding (mg.fast.rope), forward and backward (the inverse rotation), in one
// dispatch. x has shape (B, …, T, D); the first `dims` features are rotated in pairs, the rest are
// copied. Pair i is (2i, 2i+1) when `traditional`, else (i, i + dims/2). Its angle is
// θ = scale·(t + offset[b])·f_i with f_i = base^(−i/(dims/2)) (computed as exp2(−i/(dims/2)·log2 base),
// as MLX's kernel does) or f_i = 1/freqs[i]. Forward: (x1 cos θ − x2 sin θ, x1 sin θ + x2 cos θ);
// backward rotates by −θ. Arithmetic is float32, rounded once to T; cos and sin are precise.
//
// grid: (dims/2 + D − dims, rows) threads, rows = every leading index including T. Row r's first
// element is found through the leading shape/strides (any view); its batch index is r / per_batch.
#include "utils.h"

struct RopeParams {
  int64_t x_base;    // element offset of x's first element in its binding
  int64_t x_step;    // stride along the last axis
  int64_t offset_base;
  int64_t offset_step;  // 0: one offset for every batch entry; else offset[b] at this stride
  int64_t freqs_base;
  int64_t freqs_step;
  int D;             // last axis
  int dims;          // rotated features (even, ≤ D)
  int T;             // sequence length (shape[-2])
  int rows;
  int per_batch;     // rows per batch entry
  int ndim;          // leading dimensions described by shape/strides
  int has_freqs;
  int traditional;
  int forward;
  float scale;
  float log2_base;
};

template <typename T>
[[kernel]] void rope(
    device const T* x [[buffer(0)]],
    device const int* offset [[buffer(1)]],
    device const float* freqs [[buffer(2)]],
    device T* out [[buffer(3)]],
    constant const RopeParams& p [[buffer(4)]],
    constant const int* shape [[buffer(5)]],
    constant const int64_t* strides [[buffer(6)]],
    uint2 gid [[thread_position_in_grid]]) {
  const int half_dims = p.dims / 2;
  const int i = int(gid.x);
  const int row = int(gid.y);
  if (row >= p.rows || i >= half_dims + p.D - p.dims) return;
  const int64_t src = p.x_base + elem_to_loc<int64_t>(int64_t(row), shape, strides, p.ndim);
  device T* dst = out + int64_t(row) * p.D;
  if (i >= half_dims) {  // an unrotated feature: copied
    const int j = p.dims + (i - half_dims);
    dst[j] = x[src + int64_t(j) * p.x_step];
    return;
  }
  const int t = row % p.T;
  const int b = row / p.per_batch;
  const float position = p.scale * float(t + offset[p.offset_base + int64_t(b) * p.offset_step]);
  const float inv_freq = p.has_freqs ? 1.0f / freqs[p.freqs_base + int64_t(i) * p.freqs_step] : metal::exp2(-(float(i) / float(half_dims)) * p.log2_base);
  const float theta = position * inv_freq;
  const float c = metal::precise::cos(theta);
  const float s = p.forward ? metal::precise::sin(theta) : -metal::precise::sin(theta);
  const int j1 = p.traditional ? 2 * i : i;
  const int j2 = p.traditional ? 2 * i + 1 : i + half_dims;
  const float x1 = float(x[src + int64_t(j1) * p.x_step]);
  const float x2 = float(x[src + int64_t(j2) * p.x_step]);
  dst[j1] = T(x1 * c - x2 * s);
  dst[j2] = T(x1 * s + x2 * c);
}
