// Matrix-vector products for Matmul/AddMM when M == 1 or N == 1: out[i] = alpha·Σ_k mat(i, k)·vec(k)
// + beta·C(i). For N == 1 the matrix is A and the vector B's column; for M == 1 the matrix is Bᵀ
// and the vector A's row. Every element is read once, so operands are read in place with any
// strides (a copy would only add traffic); the two kernels differ in which way the matrix is
// contiguous, so that neighbouring threads read neighbouring elements:
//
//   gemv    the matrix runs along K (row-major A, or column-major B when M == 1): one simdgroup per
//           output, its lanes striding along K, combined with simd_sum.
//   gemv_t  the matrix runs along the outputs: one thread per output, the threadgroup's
//           simdgroups each summing every SK-th k, combined through threadgroup memory.
//
// Products and sums are float32 (16-bit operands are widened exactly), rounded once to T.
#include "utils.h"

struct GemvParams {
  int64_t mat_base;  // element offsets of the first elements in their bindings
  int64_t vec_base;
  int64_t c_base;
  int64_t mat_si;    // matrix: stride between outputs and along K
  int64_t mat_sk;
  int64_t vec_sk;    // vector: stride along K
  int64_t c_si;      // C (AddMM's addend): stride between outputs
  int rows;          // outputs per batch entry
  int K;
  int batch_ndim;    // batch axes in batch_shape / batch_strides (matrix, vector, C)
  int use_c;         // 1: add beta·C; 0: C is never read
  float alpha;
  float beta;
};

struct GemvOffsets {
  int64_t mat;
  int64_t vec;
  int64_t c;
};

MG_FUNC GemvOffsets gemv_offsets(uint z, constant const GemvParams& p, constant const int* shape, constant const int64_t* strides) {
  GemvOffsets o;
  o.mat = p.mat_base;
  o.vec = p.vec_base;
  o.c = p.c_base;
  const int nd = p.batch_ndim;
  if (nd > 0) {
    o.mat += elem_to_loc<int64_t>(int64_t(z), shape, strides, nd);
    o.vec += elem_to_loc<int64_t>(int64_t(z), shape, strides + nd, nd);
    o.c += elem_to_loc<int64_t>(int64_t(z), shape, strides + 2 * nd, nd);
  }
  return o;
}

template <typename T>
MG_FUNC T gemv_epilogue(float sum, device const T* C, int64_t c_at, constant const GemvParams& p) {
  return p.use_c ? T(p.alpha * sum + p.beta * float(C[c_at])) : T(p.alpha * sum);
}

// grid: (ceil(rows / SG), 1, batch entries) threadgroups of SG·32 threads.
template <typename T, int SG>
[[kernel]] void gemv(
    device const T* mat [[buffer(0)]],
    device const T* vec [[buffer(1)]],
    device const T* C [[buffer(2)]],
    device T* out [[buffer(3)]],
    constant const GemvParams& p [[buffer(4)]],
    constant const int* batch_shape [[buffer(5)]],
    constant const int64_t* batch_strides [[buffer(6)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint sgid [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  const int i = int(tgid.x) * SG + int(sgid);
  if (i >= p.rows) return;  // the whole simdgroup leaves together
  const GemvOffsets o = gemv_offsets(tgid.z, p, batch_shape, batch_strides);
  device const T* row = mat + o.mat + int64_t(i) * p.mat_si;
  device const T* x = vec + o.vec;
  float sum = 0.0f;
  for (int k = int(lane); k < p.K; k += 32) sum = fma(float(row[int64_t(k) * p.mat_sk]), float(x[int64_t(k) * p.vec_sk]), sum);
  sum = simd_sum(sum);
  if (lane == 0) out[int64_t(tgid.z) * p.rows + i] = gemv_epilogue(sum, C, o.c + int64_t(i) * p.c_si, p);
}

// grid: (ceil(rows / 32), 1, batch entries) threadgroups of 32·SK threads.
template <typename T, int SK>
[[kernel]] void gemv_t(
    device const T* mat [[buffer(0)]],
    device const T* vec [[buffer(1)]],
    device const T* C [[buffer(2)]],
    device T* out [[buffer(3)]],
    constant const GemvParams& p [[buffer(4)]],
    constant const int* batch_shape [[buffer(5)]],
    constant const int64_t* batch_strides [[buffer(6)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint sgid [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float partial[SK * 32];
  const int i = int(tgid.x) * 32 + int(lane);
  const GemvOffsets o = gemv_offsets(tgid.z, p, batch_shape, batch_strides);
  float sum = 0.0f;
  if (i < p.rows) {
    device const T* col = mat + o.mat + int64_t(i) * p.mat_si;
    device const T* x = vec + o.vec;
    for (int k = int(sgid); k < p.K; k += SK) sum = fma(float(col[int64_t(k) * p.mat_sk]), float(x[int64_t(k) * p.vec_sk]), sum);
  }
  partial[sgid * 32 + lane] = sum;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sgid == 0 && i < p.rows) {
    float total = 0.0f;
    for (int s = 0; s < SK; ++s) total += partial[s * 32 + lane];
    out[int64_t(tgid.z) * p.rows + i] = gemv_epilogue(total, C, o.c + int64_t(i) * p.c_si, p);
  }
}
