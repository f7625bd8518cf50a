// Cross entropy with class-index targets over the last axis (mg.fast.crossEntropy), one
// threadgroup per row:
//   forward   loss[r] = logsumexp(x[r, :]) − x[r, t_r], float32 out;
//   backward  dx[r, j] = g[r]·(softmax(x[r, :])_j − [j = t_r]), in x's type.
// The row's maximum and Σ exp(x − max) are reduced in AccT (float unless the policy asks for the
// input type); exp and log are precise. A target outside [0, n) gives NaN (never a wild read).
// An infinite maximum is logsumexp itself (as logsumexp_rows), so NaN/∞ follow the composition.
//
// Leading dimensions: shape [5]; strides [6] hold x's, the targets' and (backward) g's, ndim each.
#include "reduction.h"

struct CrossEntropyParams {
  int64_t x_base;
  int64_t t_base;
  int64_t g_base;
  int64_t x_step;  // stride along the class axis
  int n;           // classes
  int rows;
  int ndim;
};

// The row's logsumexp in float, in every thread. `shared` holds 32 slots.
template <typename T, typename AccT>
MG_FUNC float row_logsumexp(device const T* x, int64_t src, constant const CrossEntropyParams& p, threadgroup AccT* shared,
                            uint lid, uint tg_size, uint simd_lane, uint simd_group) {
  const uint n_simd = (tg_size + MG_SIMD_SIZE - 1) / MG_SIMD_SIZE;
  AccT m = Limits<AccT>::lowest();
  bool nan = false;
  for (int j = int(lid); j < p.n; j += int(tg_size)) {
    const AccT v = AccT(x[src + int64_t(j) * p.x_step]);
    nan = nan || is_nan(v);
    m = metal::max(m, v);
  }
  m = simd_max(m);
  nan = simd_any(nan);
  if (simd_lane == 0) shared[simd_group] = nan ? AccT(NAN) : m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  m = Limits<AccT>::lowest();
  for (uint i = 0; i < n_simd; ++i) {
    nan = nan || is_nan(shared[i]);
    m = metal::max(m, shared[i]);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (nan) return NAN;
  if (metal::isinf(float(m))) return float(m);
  AccT s = AccT(0);
  for (int j = int(lid); j < p.n; j += int(tg_size)) {
    s += AccT(metal::precise::exp(float(x[src + int64_t(j) * p.x_step]) - float(m)));
  }
  s = simd_sum(s);
  if (simd_lane == 0) shared[simd_group] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  s = AccT(0);
  for (uint i = 0; i < n_simd; ++i) s += shared[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return float(m) + metal::precise::log(float(s));
}

template <typename T, typename AccT>
[[kernel]] void cross_entropy_forward(
    device const T* x [[buffer(0)]],
    device const int* targets [[buffer(1)]],
    device float* loss [[buffer(2)]],
    constant const CrossEntropyParams& p [[buffer(3)]],
    constant const int* shape [[buffer(4)]],
    constant const int64_t* strides [[buffer(5)]],
    uint2 tgid [[threadgroup_position_in_grid]],
    uint2 ngroups [[threadgroups_per_grid]],
    uint lid [[thread_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]]) {
  threadgroup AccT shared[MG_SIMD_SIZE];
  const int row = int(tgid.y * ngroups.x + tgid.x);
  if (row >= p.rows) return;  // whole threadgroups only
  const int64_t src = p.x_base + elem_to_loc<int64_t>(int64_t(row), shape, strides, p.ndim);
  const float lse = row_logsumexp<T, AccT>(x, src, p, shared, lid, tg_size, simd_lane, simd_group);
  if (lid == 0) {
    const int t = targets[p.t_base + elem_to_loc<int64_t>(int64_t(row), shape, strides + p.ndim, p.ndim)];
    loss[row] = (t >= 0 && t < p.n) ? lse - float(x[src + int64_t(t) * p.x_step]) : NAN;
  }
}

template <typename T, typename AccT>
[[kernel]] void cross_entropy_backward(
    device const T* x [[buffer(0)]],
    device const int* targets [[buffer(1)]],
    device const float* g [[buffer(2)]],
    device T* dx [[buffer(3)]],
    constant const CrossEntropyParams& p [[buffer(4)]],
    constant const int* shape [[buffer(5)]],
    constant const int64_t* strides [[buffer(6)]],
    uint2 tgid [[threadgroup_position_in_grid]],
    uint2 ngroups [[threadgroups_per_grid]],
    uint lid [[thread_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]]) {
  threadgroup AccT shared[MG_SIMD_SIZE];
  const int row = int(tgid.y * ngroups.x + tgid.x);
  if (row >= p.rows) return;
  const int64_t src = p.x_base + elem_to_loc<int64_t>(int64_t(row), shape, strides, p.ndim);
  const float lse = row_logsumexp<T, AccT>(x, src, p, shared, lid, tg_size, simd_lane, simd_group);
  const int t = targets[p.t_base + elem_to_loc<int64_t>(int64_t(row), shape, strides + p.ndim, p.ndim)];
  const float gr = g[p.g_base + elem_to_loc<int64_t>(int64_t(row), shape, strides + 2 * p.ndim, p.ndim)];
  const bool valid = t >= 0 && t < p.n;
  device T* dst = dx + int64_t(row) * p.n;
  for (int j = int(lid); j < p.n; j += int(tg_size)) {
    const float prob = metal::precise::exp(float(x[src + int64_t(j) * p.x_step]) - lse);
    dst[j] = valid ? T(gr * (prob - (j == t ? 1.0f : 0.0f))) : T(NAN);
  }
}
