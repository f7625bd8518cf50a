// argmax / argmin along one axis: the uint32 position of the first extreme element, with the CPU
// device's rule — walking the lane, an element replaces the best so far only if it compares
// strictly better, where a NaN beats every number and no other NaN. The answer is the first NaN
// when there is one, so argmax/argmin agree with max/min (MLX since ml-explore/mlx#4292).
// Variants:
//   arg_reduce_row  one threadgroup per lane (cooperative). The walk above equals a maximum
//                   under the total order "NaN first, then by value, then by lower index".
//   arg_reduce_col  one thread per lane walking it in order; used for strided lanes (adjacent
//                   threads read adjacent lanes) and for complex64, whose lexicographic order
//                   with NaN parts is only partial.
//
// Arguments: shape/strides [2],[3] the other dimensions (output order) and their input strides,
// ndim [4], sizes [5] {input base element, lane length, lane count, axis stride}.
#include "reduction.h"

#define MG_NO_INDEX 0xFFFFFFFFu

template <typename T> struct IndexedValue {
  T val;
  uint idx;
};

// b strictly precedes a in the total order used by the cooperative variant.
template <typename T, bool IsMax> MG_FUNC bool precedes(IndexedValue<T> b, IndexedValue<T> a) {
  if (b.idx == MG_NO_INDEX) return false;
  if (a.idx == MG_NO_INDEX) return true;
  const bool bn = is_nan(b.val);
  const bool an = is_nan(a.val);
  if (bn != an) return bn;
  if (!bn && b.val != a.val) return IsMax ? b.val > a.val : b.val < a.val;
  return b.idx < a.idx;
}

template <typename T, bool IsMax> MG_FUNC IndexedValue<T> better_of(IndexedValue<T> a, IndexedValue<T> b) {
  return precedes<T, IsMax>(b, a) ? b : a;
}

template <typename T, bool IsMax, typename IdxT>
[[kernel]] void arg_reduce_row(
    device const T* in [[buffer(0)]],
    device uint32_t* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* strides [[buffer(3)]],
    constant const int& ndim [[buffer(4)]],
    constant const int64_t* sizes [[buffer(5)]],
    uint2 tgid [[threadgroup_position_in_grid]],
    uint2 ngroups [[threadgroups_per_grid]],
    uint lid [[thread_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]]) {
  threadgroup T shared_val[MG_SIMD_SIZE];
  threadgroup uint shared_idx[MG_SIMD_SIZE];
  const IdxT row = IdxT(tgid.y) * IdxT(ngroups.x) + IdxT(tgid.x);
  if (int64_t(row) >= sizes[2]) return;  // whole threadgroups only
  const uint n = uint(sizes[1]);
  const IdxT axis_stride = IdxT(sizes[3]);
  // Offsets are summed in IdxT before indexing: with uint, a negative stride wraps back in range.
  const IdxT lane = IdxT(sizes[0]) + elem_to_loc<IdxT>(row, shape, strides, ndim);

  IndexedValue<T> best = {n > 0 ? in[lane] : T(), MG_NO_INDEX};
  for (uint k = lid; k < n; k += tg_size) {
    IndexedValue<T> e = {in[lane + IdxT(k) * axis_stride], k};
    best = better_of<T, IsMax>(best, e);
  }
  // Within the simdgroup, then across simdgroups through threadgroup memory.
  for (ushort d = MG_SIMD_SIZE / 2; d > 0; d >>= 1) {
    IndexedValue<T> other = {shuffle_down(best.val, d), simd_shuffle_down(best.idx, d)};
    best = better_of<T, IsMax>(best, other);
  }
  const uint n_simd = tg_size / MG_SIMD_SIZE;
  if (n_simd > 1) {
    if (simd_lane == 0) {
      shared_val[simd_group] = best.val;
      shared_idx[simd_group] = best.idx;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (simd_group == 0) {
      best.val = shared_val[simd_lane < n_simd ? simd_lane : 0];
      best.idx = simd_lane < n_simd ? shared_idx[simd_lane] : MG_NO_INDEX;
      for (ushort d = MG_SIMD_SIZE / 2; d > 0; d >>= 1) {
        IndexedValue<T> other = {shuffle_down(best.val, d), simd_shuffle_down(best.idx, d)};
        best = better_of<T, IsMax>(best, other);
      }
    }
  }
  if (lid == 0) out[row] = (n == 0 || best.idx == MG_NO_INDEX) ? 0u : best.idx;
}

template <typename T, bool IsMax, typename IdxT>
[[kernel]] void arg_reduce_col(
    device const T* in [[buffer(0)]],
    device uint32_t* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* strides [[buffer(3)]],
    constant const int& ndim [[buffer(4)]],
    constant const int64_t* sizes [[buffer(5)]],
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  const IdxT row = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(row) >= sizes[2]) return;
  const uint n = uint(sizes[1]);
  const IdxT axis_stride = IdxT(sizes[3]);
  const IdxT lane = IdxT(sizes[0]) + elem_to_loc<IdxT>(row, shape, strides, ndim);
  uint best = 0;
  T best_val = n > 0 ? in[lane] : T();
  for (uint k = 1; k < n; ++k) {
    const T v = in[lane + IdxT(k) * axis_stride];
    if ((IsMax ? greater(v, best_val) : greater(best_val, v)) || (is_nan(v) && !is_nan(best_val))) {
      best = k;
      best_val = v;
    }
  }
  out[row] = best;
}
