// Scatters (MLX's Scatter and ScatterAxis). The output already holds a copy of the source; every
// update is combined into it, duplicates included:
//
//   scatter_atomic      sum / prod / max / min with atomics (indexing.h: AtomicUpdate), so
//                       repeated positions all take effect. Integer results are exact; float
//                       results depend on the order the hardware applies them in (rounding only).
//   scatter_ordered     64-bit prod / max / min, which have no atomic form: updates are applied
//                       in row-major order, one thread per slice position (positions of different
//                       slice elements never collide when every indexed axis has slice size 1),
//                       or one thread for everything otherwise. Exact and deterministic.
//   scatter_winner +    "none" (plain assignment): the CPU lets the last update in row-major
//   scatter_pick        order win. The winner pass records, per output element, the largest
//                       update number aimed at it (atomic max); the pick pass then writes each
//                       element from its winning update, or from the source. Deterministic and
//                       equal to the CPU for every dtype.
//
// Updates aimed outside the array are dropped. IdxT as in gather.metal.
#include "indexing.h"

// Scatter kernels share buffers 2…16 (the index arrays and the shapes); the Metal simulator reads
// kernel signatures before preprocessing, so they are spelled out in each kernel.

template <typename T, typename Op, typename IdxT>
[[kernel]] void scatter_atomic(
    device T* out [[buffer(0)]],
    device const T* upd [[buffer(1)]],
    device const uchar* slot0 [[buffer(2)]],
    device const uchar* slot1 [[buffer(3)]],
    device const uchar* slot2 [[buffer(4)]],
    device const uchar* slot3 [[buffer(5)]],
    constant const int* out_shape [[buffer(6)]],
    constant const int64_t* out_strides [[buffer(7)]],   // row-major
    constant const int* slice_shape [[buffer(8)]],       // the updates' trailing dims
    constant const int* idx_shape [[buffer(9)]],
    constant const int64_t* idx_strides [[buffer(10)]],
    constant const int64_t* idx_bases [[buffer(11)]],
    constant const int* idx_info [[buffer(12)]],
    constant const int* dims [[buffer(13)]],             // ndim, idx ndim, nidx, kind, contiguous bits, updates contiguous
    constant const int* upd_shape [[buffer(14)]],
    constant const int64_t* upd_strides [[buffer(15)]],
    constant const int64_t* sizes [[buffer(16)]],        // updates base, slice size, total, serial
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT e = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(e) >= sizes[2]) return;
  IndexArrays ix = {slot0, slot1, slot2, slot3, idx_shape, idx_strides, idx_bases, idx_info,
                    dims[1], dims[2], dims[3], dims[4]};
  const IdxT slice_size = IdxT(sizes[1]);
  const int upd_ndim = dims[1] + dims[0];
  IdxT loc;
  if (!slice_element_loc<IdxT>(ix, e / slice_size, e % slice_size, out_shape, out_strides, slice_shape, dims[0], loc)) return;
  T x = upd[IdxT(sizes[0]) + loc_of<IdxT>(e, dims[5] != 0, upd_shape, upd_strides, upd_ndim)];
  AtomicUpdate<Op, T>::apply(out, loc, x);
}

template <typename T, typename Op, typename IdxT>
[[kernel]] void scatter_ordered(
    device T* out [[buffer(0)]],
    device const T* upd [[buffer(1)]],
    device const uchar* slot0 [[buffer(2)]],
    device const uchar* slot1 [[buffer(3)]],
    device const uchar* slot2 [[buffer(4)]],
    device const uchar* slot3 [[buffer(5)]],
    constant const int* out_shape [[buffer(6)]],
    constant const int64_t* out_strides [[buffer(7)]],   // row-major
    constant const int* slice_shape [[buffer(8)]],       // the updates' trailing dims
    constant const int* idx_shape [[buffer(9)]],
    constant const int64_t* idx_strides [[buffer(10)]],
    constant const int64_t* idx_bases [[buffer(11)]],
    constant const int* idx_info [[buffer(12)]],
    constant const int* dims [[buffer(13)]],             // ndim, idx ndim, nidx, kind, contiguous bits, updates contiguous
    constant const int* upd_shape [[buffer(14)]],
    constant const int64_t* upd_strides [[buffer(15)]],
    constant const int64_t* sizes [[buffer(16)]],        // updates base, slice size, total, serial
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT t = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  const bool serial = sizes[3] != 0;
  if (serial ? t != 0 : t >= IdxT(sizes[1])) return;
  IndexArrays ix = {slot0, slot1, slot2, slot3, idx_shape, idx_strides, idx_bases, idx_info,
                    dims[1], dims[2], dims[3], dims[4]};
  const IdxT slice_size = IdxT(sizes[1]);
  const int upd_ndim = dims[1] + dims[0];
  const IdxT step = serial ? IdxT(1) : slice_size;
  for (IdxT e = t; int64_t(e) < sizes[2]; e += step) {
    IdxT loc;
    if (!slice_element_loc<IdxT>(ix, e / slice_size, e % slice_size, out_shape, out_strides, slice_shape, dims[0], loc)) continue;
    T x = upd[IdxT(sizes[0]) + loc_of<IdxT>(e, dims[5] != 0, upd_shape, upd_strides, upd_ndim)];
    T y = out[loc];
    out[loc] = Op()(y, x);
  }
}

// winners[p] = 1 + the largest update number aimed at p (0: none). winners starts zeroed.
template <typename IdxT>
[[kernel]] void scatter_winner(
    device atomic_uint* winners [[buffer(0)]],
    device const uchar* slot0 [[buffer(2)]],
    device const uchar* slot1 [[buffer(3)]],
    device const uchar* slot2 [[buffer(4)]],
    device const uchar* slot3 [[buffer(5)]],
    constant const int* out_shape [[buffer(6)]],
    constant const int64_t* out_strides [[buffer(7)]],   // row-major
    constant const int* slice_shape [[buffer(8)]],       // the updates' trailing dims
    constant const int* idx_shape [[buffer(9)]],
    constant const int64_t* idx_strides [[buffer(10)]],
    constant const int64_t* idx_bases [[buffer(11)]],
    constant const int* idx_info [[buffer(12)]],
    constant const int* dims [[buffer(13)]],             // ndim, idx ndim, nidx, kind, contiguous bits, updates contiguous
    constant const int* upd_shape [[buffer(14)]],
    constant const int64_t* upd_strides [[buffer(15)]],
    constant const int64_t* sizes [[buffer(16)]],        // updates base, slice size, total, serial
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT e = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(e) >= sizes[2]) return;
  IndexArrays ix = {slot0, slot1, slot2, slot3, idx_shape, idx_strides, idx_bases, idx_info,
                    dims[1], dims[2], dims[3], dims[4]};
  const IdxT slice_size = IdxT(sizes[1]);
  IdxT loc;
  if (!slice_element_loc<IdxT>(ix, e / slice_size, e % slice_size, out_shape, out_strides, slice_shape, dims[0], loc)) return;
  atomic_fetch_max_explicit(winners + loc, uint(e) + 1u, memory_order_relaxed);
}

// ScatterAxis: update e goes to the output position of index element e, with the indexed
// axis's coordinate replaced by the index. Indices and updates share one shape.
template <typename IdxT>
MG_FUNC bool scatter_axis_loc(IdxT e, const device uchar* idx, constant const int* shape, constant const int64_t* idx_strides,
                              constant const int64_t* out_strides, constant const int* dims, constant const int64_t* sizes,
                              thread IdxT& loc) {
  int64_t v = wrap_index(load_index<IdxT>(idx, IdxT(sizes[0]) + loc_of<IdxT>(e, dims[2] != 0, shape, idx_strides, dims[0]), dims[1]), sizes[3]);
  if (v < 0 || v >= sizes[3]) return false;
  loc = elem_to_loc<IdxT>(e, shape, out_strides, dims[0]) + IdxT(v) * IdxT(sizes[4]);
  return true;
}

template <typename T, typename Op, typename IdxT>
[[kernel]] void scatter_axis_atomic(
    device T* out [[buffer(0)]],
    device const T* upd [[buffer(1)]],
    device const uchar* idx [[buffer(2)]],
    constant const int* shape [[buffer(3)]],              // the indices' (and updates') shape
    constant const int64_t* idx_strides [[buffer(4)]],
    constant const int64_t* upd_strides [[buffer(5)]],
    constant const int64_t* out_strides [[buffer(6)]],    // row-major, 0 on the axis
    constant const int* dims [[buffer(7)]],               // ndim, kind, idx contiguous, updates contiguous
    constant const int64_t* sizes [[buffer(8)]],          // idx base, updates base, total, axis size, axis stride
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT e = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(e) >= sizes[2]) return;
  IdxT loc;
  if (!scatter_axis_loc<IdxT>(e, idx, shape, idx_strides, out_strides, dims, sizes, loc)) return;
  AtomicUpdate<Op, T>::apply(out, loc, upd[IdxT(sizes[1]) + loc_of<IdxT>(e, dims[3] != 0, shape, upd_strides, dims[0])]);
}

template <typename IdxT>
[[kernel]] void scatter_axis_winner(
    device atomic_uint* winners [[buffer(0)]],
    device const uchar* idx [[buffer(2)]],
    constant const int* shape [[buffer(3)]],              // the indices' (and updates') shape
    constant const int64_t* idx_strides [[buffer(4)]],
    constant const int64_t* upd_strides [[buffer(5)]],
    constant const int64_t* out_strides [[buffer(6)]],    // row-major, 0 on the axis
    constant const int* dims [[buffer(7)]],               // ndim, kind, idx contiguous, updates contiguous
    constant const int64_t* sizes [[buffer(8)]],          // idx base, updates base, total, axis size, axis stride
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT e = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(e) >= sizes[2]) return;
  IdxT loc;
  if (!scatter_axis_loc<IdxT>(e, idx, shape, idx_strides, out_strides, dims, sizes, loc)) return;
  atomic_fetch_max_explicit(winners + loc, uint(e) + 1u, memory_order_relaxed);
}

// out[p] = winners[p] != 0 ? updates[winners[p] - 1] : src[p] (elements moved as raw bits).
template <typename T, typename IdxT>
[[kernel]] void scatter_pick(
    device T* out [[buffer(0)]],
    device const T* src [[buffer(1)]],
    device const T* upd [[buffer(2)]],
    device const uint* winners [[buffer(3)]],
    constant const int* shape [[buffer(4)]],            // the output's
    constant const int64_t* src_strides [[buffer(5)]],
    constant const int* upd_shape [[buffer(6)]],
    constant const int64_t* upd_strides [[buffer(7)]],
    constant const int* dims [[buffer(8)]],             // ndim, updates ndim, src contiguous, updates contiguous
    constant const int64_t* sizes [[buffer(9)]],        // src base, updates base, total
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT p = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(p) >= sizes[2]) return;
  uint w = winners[p];
  if (w != 0u) {
    out[p] = upd[IdxT(sizes[1]) + loc_of<IdxT>(IdxT(w - 1u), dims[3] != 0, upd_shape, upd_strides, dims[1])];
  } else {
    out[p] = src[IdxT(sizes[0]) + loc_of<IdxT>(p, dims[2] != 0, shape, src_strides, dims[0])];
  }
}

// Zeroes a buffer (the winners of a "none" scatter: T = uint).
template <typename T>
[[kernel]] void scatter_clear(device T* words [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  words[i] = T(0);
}
