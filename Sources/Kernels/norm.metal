// RMS and layer normalisation over the last axis (mg.fast.rmsNorm / mg.fast.layerNorm), forward
// and backward, one threadgroup per row.
//
//   norm_rows     short rows (≤ 1024): one simdgroup per row, 8 rows per threadgroup, reduced with
//                 simd_sum alone (no threadgroup barriers); the row is re-read from cache.
//   norm_single   the row fits in registers (N_READS elements per thread, ≤ 1024 threads): one read
//                 of x, the statistics reduced in AccT, one write.
//   norm_looped   longer rows: the threads stride over the row, reading it once per statistic
//                 (rms: 2 reads; layer: 3, the variance taken around the mean for accuracy).
//   norm_vjp      dx for one row per threadgroup (long rows), plus the row's statistics {μ, 1/σ}
//                 in float for the weight gradient; norm_vjp_rows the same with one simdgroup per row;
//   norm_param_grad  dw[j] = Σ_rows g·ŷ and (layer) db[j] = Σ_rows g: 32 columns per threadgroup,
//                 8 slices of rows each, summed in float.
//
// LAYER selects layer norm (ŷ = (x − μ)/σ, σ² = mean((x − μ)²) + ε) over RMS norm (ŷ = x/σ,
// σ² = mean(x²) + ε). Outputs round as MLX's kernels do: out = w·T(ŷ) (+ b), each operation in T.
// AccT is float (the default: float32 accumulation for every input type) or the input type itself
// (policy accumulate16 = "native"); 1/σ is always computed in float.
//
// x is read in place from any view: rows are found through the leading dimensions' shape and
// strides (shape [4], strides [5]: x's then g's for the vjp), elements along the row `x_step`
// apart. Every offset is 64-bit, so one variant serves every size.
#include "reduction.h"

struct NormParams {
  int64_t x_base;  // element offset of x's (and, in the vjp, g's) first element in its binding
  int64_t g_base;
  int64_t x_step;  // stride along the row
  int64_t g_step;
  int64_t w_base;
  int64_t w_step;
  int64_t b_base;
  int64_t b_step;
  int n;      // row length
  int rows;
  int ndim;   // leading dimensions described by shape/strides
  int has_w;
  int has_b;
  float eps;
};

MG_FUNC uint norm_row(uint2 tgid, uint2 ngroups) { return tgid.y * ngroups.x + tgid.x; }

// Sum of one value per thread over the threadgroup, returned to every thread. `shared` holds 32
// slots; the trailing barrier lets the caller reuse it at once.
template <typename A>
MG_FUNC A norm_sum(A v, threadgroup A* shared, uint tg_size, uint simd_lane, uint simd_group) {
  v = simd_sum(v);
  const uint n_simd = (tg_size + MG_SIMD_SIZE - 1) / MG_SIMD_SIZE;
  if (n_simd == 1) return v;
  if (simd_lane == 0) shared[simd_group] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  A total = A(0);
  for (uint i = 0; i < n_simd; ++i) total += shared[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return total;
}

// 1/σ from the accumulated statistic (Σx² for rms, Σ(x − μ)² for layer).
template <typename A> MG_FUNC float norm_inv_sigma(A sum_sq, int n, float eps) {
  return metal::precise::rsqrt(float(sum_sq) / float(n) + eps);
}

// out = w·T(ŷ) (+ b), as MLX rounds it: each operation in T.
template <typename T, bool LAYER>
MG_FUNC T norm_affine(float yhat, device const T* w, device const T* b, constant const NormParams& p, int j) {
  T y = T(yhat);
  if (p.has_w) y = T(float(w[p.w_base + int64_t(j) * p.w_step]) * float(y));
  if (LAYER && p.has_b) y = T(float(y) + float(b[p.b_base + int64_t(j) * p.b_step]));
  return y;
}

template <typename T, typename AccT, int N_READS, bool LAYER>
[[kernel]] void norm_single(
    device const T* x [[buffer(0)]],
    device const T* w [[buffer(1)]],
    device const T* b [[buffer(2)]],
    device T* out [[buffer(3)]],
    constant const NormParams& p [[buffer(4)]],
    constant const int* shape [[buffer(5)]],
    constant const int64_t* strides [[buffer(6)]],
    uint2 tgid [[threadgroup_position_in_grid]],
    uint2 ngroups [[threadgroups_per_grid]],
    uint lid [[thread_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]]) {
  threadgroup AccT shared[MG_SIMD_SIZE];
  const uint row = norm_row(tgid, ngroups);
  if (int(row) >= p.rows) return;  // whole threadgroups only
  const int64_t src = p.x_base + elem_to_loc<int64_t>(int64_t(row), shape, strides, p.ndim);
  device T* dst = out + int64_t(row) * p.n;
  const int j0 = int(lid) * N_READS;

  AccT v[N_READS];
  for (int i = 0; i < N_READS; ++i) v[i] = j0 + i < p.n ? AccT(x[src + int64_t(j0 + i) * p.x_step]) : AccT(0);
  AccT mean = AccT(0);
  if (LAYER) {
    AccT s = AccT(0);
    for (int i = 0; i < N_READS; ++i) s += v[i];
    mean = AccT(float(norm_sum(s, shared, tg_size, simd_lane, simd_group)) / float(p.n));
  }
  AccT ss = AccT(0);
  for (int i = 0; i < N_READS; ++i) {
    const AccT d = j0 + i < p.n ? AccT(v[i] - mean) : AccT(0);
    ss += d * d;
  }
  const float inv = norm_inv_sigma(norm_sum(ss, shared, tg_size, simd_lane, simd_group), p.n, p.eps);
  for (int i = 0; i < N_READS; ++i) {
    const int j = j0 + i;
    if (j < p.n) dst[j] = norm_affine<T, LAYER>(float(v[i] - mean) * inv, w, b, p, j);
  }
}

template <typename T, typename AccT, bool LAYER>
[[kernel]] void norm_looped(
    device const T* x [[buffer(0)]],
    device const T* w [[buffer(1)]],
    device const T* b [[buffer(2)]],
    device T* out [[buffer(3)]],
    constant const NormParams& p [[buffer(4)]],
    constant const int* shape [[buffer(5)]],
    constant const int64_t* strides [[buffer(6)]],
    uint2 tgid [[threadgroup_position_in_grid]],
    uint2 ngroups [[threadgroups_per_grid]],
    uint lid [[thread_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]]) {
  threadgroup AccT shared[MG_SIMD_SIZE];
  const uint row = norm_row(tgid, ngroups);
  if (int(row) >= p.rows) return;
  const int64_t src = p.x_base + elem_to_loc<int64_t>(int64_t(row), shape, strides, p.ndim);
  device T* dst = out + int64_t(row) * p.n;

  AccT mean = AccT(0);
  if (LAYER) {
    AccT s = AccT(0);
    for (int j = int(lid); j < p.n; j += int(tg_size)) s += AccT(x[src + int64_t(j) * p.x_step]);
    mean = AccT(float(norm_sum(s, shared, tg_size, simd_lane, simd_group)) / float(p.n));
  }
  AccT ss = AccT(0);
  for (int j = int(lid); j < p.n; j += int(tg_size)) {
    const AccT d = AccT(AccT(x[src + int64_t(j) * p.x_step]) - mean);
    ss += d * d;
  }
  const float inv = norm_inv_sigma(norm_sum(ss, shared, tg_size, simd_lane, simd_group), p.n, p.eps);
  for (int j = int(lid); j < p.n; j += int(tg_size)) {
    dst[j] = norm_affine<T, LAYER>(float(AccT(AccT(x[src + int64_t(j) * p.x_step]) - mean)) * inv, w, b, p, j);
  }
}

// One simdgroup per row: lanes stride over the row (coalesced), statistics by simd_sum only.
// grid: ⌈rows/8⌉ threadgroups of 256 threads.
template <typename T, typename AccT, bool LAYER>
[[kernel]] void norm_rows(
    device const T* x [[buffer(0)]],
    device const T* w [[buffer(1)]],
    device const T* b [[buffer(2)]],
    device T* out [[buffer(3)]],
    constant const NormParams& p [[buffer(4)]],
    constant const int* shape [[buffer(5)]],
    constant const int64_t* strides [[buffer(6)]],
    uint tgid [[threadgroup_position_in_grid]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simds [[simdgroups_per_threadgroup]]) {
  const int row = int(tgid * simds + simd_group);
  if (row >= p.rows) return;  // whole simdgroups only
  const int64_t src = p.x_base + elem_to_loc<int64_t>(int64_t(row), shape, strides, p.ndim);
  device T* dst = out + int64_t(row) * p.n;
  AccT mean = AccT(0);
  if (LAYER) {
    AccT s = AccT(0);
    for (int j = int(simd_lane); j < p.n; j += MG_SIMD_SIZE) s += AccT(x[src + int64_t(j) * p.x_step]);
    mean = AccT(float(simd_sum(s)) / float(p.n));
  }
  AccT ss = AccT(0);
  for (int j = int(simd_lane); j < p.n; j += MG_SIMD_SIZE) {
    const AccT d = AccT(AccT(x[src + int64_t(j) * p.x_step]) - mean);
    ss += d * d;
  }
  const float inv = norm_inv_sigma(simd_sum(ss), p.n, p.eps);
  for (int j = int(simd_lane); j < p.n; j += MG_SIMD_SIZE) {
    dst[j] = norm_affine<T, LAYER>(float(AccT(AccT(x[src + int64_t(j) * p.x_step]) - mean)) * inv, w, b, p, j);
  }
}

// The backward of norm_rows' layout (one simdgroup per row): as norm_vjp, reduced by simd_sum.
template <typename T, typename AccT, bool LAYER>
[[kernel]] void norm_vjp_rows(
    device const T* x [[buffer(0)]],
    device const T* w [[buffer(1)]],
    device const T* g [[buffer(2)]],
    device T* dx [[buffer(3)]],
    device float2* stats [[buffer(4)]],
    constant const NormParams& p [[buffer(5)]],
    constant const int* shape [[buffer(6)]],
    constant const int64_t* strides [[buffer(7)]],
    uint tgid [[threadgroup_position_in_grid]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint simds [[simdgroups_per_threadgroup]]) {
  const int row = int(tgid * simds + simd_group);
  if (row >= p.rows) return;
  const int64_t xs = p.x_base + elem_to_loc<int64_t>(int64_t(row), shape, strides, p.ndim);
  const int64_t gs = p.g_base + elem_to_loc<int64_t>(int64_t(row), shape, strides + p.ndim, p.ndim);
  device T* dst = dx + int64_t(row) * p.n;
  AccT mean = AccT(0);
  if (LAYER) {
    AccT s = AccT(0);
    for (int j = int(simd_lane); j < p.n; j += MG_SIMD_SIZE) s += AccT(x[xs + int64_t(j) * p.x_step]);
    mean = AccT(float(simd_sum(s)) / float(p.n));
  }
  AccT ss = AccT(0);
  for (int j = int(simd_lane); j < p.n; j += MG_SIMD_SIZE) {
    const AccT d = AccT(AccT(x[xs + int64_t(j) * p.x_step]) - mean);
    ss += d * d;
  }
  const float inv = norm_inv_sigma(simd_sum(ss), p.n, p.eps);
  AccT su = AccT(0);
  AccT suy = AccT(0);
  for (int j = int(simd_lane); j < p.n; j += MG_SIMD_SIZE) {
    const float wj = p.has_w ? float(w[p.w_base + int64_t(j) * p.w_step]) : 1.0f;
    const float u = wj * float(g[gs + int64_t(j) * p.g_step]);
    su += AccT(u);
    suy += AccT(u * float(AccT(AccT(x[xs + int64_t(j) * p.x_step]) - mean)) * inv);
  }
  const float mean_u = LAYER ? float(simd_sum(su)) / float(p.n) : 0.0f;
  const float mean_uy = float(simd_sum(suy)) / float(p.n);
  for (int j = int(simd_lane); j < p.n; j += MG_SIMD_SIZE) {
    const float wj = p.has_w ? float(w[p.w_base + int64_t(j) * p.w_step]) : 1.0f;
    const float u = wj * float(g[gs + int64_t(j) * p.g_step]);
    const float yhat = float(AccT(AccT(x[xs + int64_t(j) * p.x_step]) - mean)) * inv;
    dst[j] = T((u - mean_u - yhat * mean_uy) * inv);
  }
  if (simd_lane == 0) stats[row] = float2(float(mean), inv);
}

// Backward of one row. With ŷ = (x − μ)/σ (μ = 0 for rms) and u = w·g:
//   rms:   dx = (u − ŷ·mean(u·ŷ)) / σ
//   layer: dx = (u − mean(u) − ŷ·mean(u·ŷ)) / σ
// Reads the row twice (statistics, then the gradient sums) and a third time to write dx: the
// looped form serves every length (the row is not kept in registers). stats[row] = {μ, 1/σ}.
template <typename T, typename AccT, bool LAYER>
[[kernel]] void norm_vjp(
    device const T* x [[buffer(0)]],
    device const T* w [[buffer(1)]],
    device const T* g [[buffer(2)]],
    device T* dx [[buffer(3)]],
    device float2* stats [[buffer(4)]],
    constant const NormParams& p [[buffer(5)]],
    constant const int* shape [[buffer(6)]],
    constant const int64_t* strides [[buffer(7)]],
    uint2 tgid [[threadgroup_position_in_grid]],
    uint2 ngroups [[threadgroups_per_grid]],
    uint lid [[thread_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]]) {
  threadgroup AccT shared[MG_SIMD_SIZE];
  const uint row = norm_row(tgid, ngroups);
  if (int(row) >= p.rows) return;
  const int64_t xs = p.x_base + elem_to_loc<int64_t>(int64_t(row), shape, strides, p.ndim);
  const int64_t gs = p.g_base + elem_to_loc<int64_t>(int64_t(row), shape, strides + p.ndim, p.ndim);
  device T* dst = dx + int64_t(row) * p.n;

  AccT mean = AccT(0);
  if (LAYER) {
    AccT s = AccT(0);
    for (int j = int(lid); j < p.n; j += int(tg_size)) s += AccT(x[xs + int64_t(j) * p.x_step]);
    mean = AccT(float(norm_sum(s, shared, tg_size, simd_lane, simd_group)) / float(p.n));
  }
  AccT ss = AccT(0);
  for (int j = int(lid); j < p.n; j += int(tg_size)) {
    const AccT d = AccT(AccT(x[xs + int64_t(j) * p.x_step]) - mean);
    ss += d * d;
  }
  const float inv = norm_inv_sigma(norm_sum(ss, shared, tg_size, simd_lane, simd_group), p.n, p.eps);

  // Σu and Σu·ŷ
  AccT su = AccT(0);
  AccT suy = AccT(0);
  for (int j = int(lid); j < p.n; j += int(tg_size)) {
    const float wj = p.has_w ? float(w[p.w_base + int64_t(j) * p.w_step]) : 1.0f;
    const float u = wj * float(g[gs + int64_t(j) * p.g_step]);
    const float yhat = float(AccT(AccT(x[xs + int64_t(j) * p.x_step]) - mean)) * inv;
    su += AccT(u);
    suy += AccT(u * yhat);
  }
  const float mean_u = LAYER ? float(norm_sum(su, shared, tg_size, simd_lane, simd_group)) / float(p.n) : 0.0f;
  const float mean_uy = float(norm_sum(suy, shared, tg_size, simd_lane, simd_group)) / float(p.n);
  for (int j = int(lid); j < p.n; j += int(tg_size)) {
    const float wj = p.has_w ? float(w[p.w_base + int64_t(j) * p.w_step]) : 1.0f;
    const float u = wj * float(g[gs + int64_t(j) * p.g_step]);
    const float yhat = float(AccT(AccT(x[xs + int64_t(j) * p.x_step]) - mean)) * inv;
    dst[j] = T((u - mean_u - yhat * mean_uy) * inv);
  }
  if (lid == 0) stats[row] = float2(float(mean), inv);
}

// dw[j] = Σ_rows g·ŷ, db[j] = Σ_rows g (LAYER and has_b). threadgroup: 32 columns × 8 slices;
// grid: ⌈n/32⌉ threadgroups. Rows are summed per slice in order, the slices in order: the result
// does not depend on scheduling.
template <typename T, bool LAYER>
[[kernel]] void norm_param_grad(
    device const T* x [[buffer(0)]],
    device const T* g [[buffer(1)]],
    device const float2* stats [[buffer(2)]],
    device T* dw [[buffer(3)]],
    device T* db [[buffer(4)]],
    constant const NormParams& p [[buffer(5)]],
    constant const int* shape [[buffer(6)]],
    constant const int64_t* strides [[buffer(7)]],
    uint tgid [[threadgroup_position_in_grid]],
    uint lid [[thread_index_in_threadgroup]]) {
  threadgroup float part_w[8][32];
  threadgroup float part_b[8][32];
  const int c = int(lid % 32);
  const int slice = int(lid / 32);
  const int j = int(tgid) * 32 + c;
  float sw = 0.0f;
  float sb = 0.0f;
  if (j < p.n) {
    for (int r = slice; r < p.rows; r += 8) {
      const int64_t xs = p.x_base + elem_to_loc<int64_t>(int64_t(r), shape, strides, p.ndim);
      const int64_t gs = p.g_base + elem_to_loc<int64_t>(int64_t(r), shape, strides + p.ndim, p.ndim);
      const float2 st = stats[r];
      const float gj = float(g[gs + int64_t(j) * p.g_step]);
      sw += gj * ((float(x[xs + int64_t(j) * p.x_step]) - st.x) * st.y);
      sb += gj;
    }
  }
  part_w[slice][c] = sw;
  part_b[slice][c] = sb;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (slice == 0 && j < p.n) {
    float tw = 0.0f;
    float tb = 0.0f;
    for (int s = 0; s < 8; ++s) {
      tw += part_w[s][c];
      tb += part_b[s][c];
    }
    if (p.has_w) dw[j] = T(tw);
    if (LAYER && p.has_b) db[j] = T(tb);
  }
}
