// Reductions (sum, prod, max, min, and, or) over the input type T into the output type U, with the
// accumulator of Op (float for 16-bit floats, 64-bit integers for 64-bit inputs). Layout variants:
//   reduce_all      every element into one value; each threadgroup reduces a grid-strided share
//                   and writes one partial (a second dispatch over the partials finishes it)
//   reduce_row      one threadgroup per output; its elements are contiguous (stride 1)
//   reduce_col      one thread per output column; the output's innermost kept axis runs across
//                   the threadgroup (coalesced reads), the reduced elements are strided and split
//                   over the threadgroup's rows
//   reduce_general  one threadgroup per output; reduced elements anywhere (elem_to_loc)
//   reduce_init     outputs of an empty reduction: the identity
// The host collapses dimensions first, so "row" and "column" cover every layout whose reduced
// (resp. kept) elements sit contiguously in memory, whatever the logical axis order.
//
// Shared arguments of the strided variants:
//   shape/strides [2],[3]  kept dimensions (output order) and their input strides
//   rshape/rstrides [4],[5] reduced dimensions and their input strides
//   ndims [6]              {kept ndim, reduced ndim}
//   sizes [7]              {input base element, reduced count, output count}
#include "reduction.h"

template <typename T, typename U, typename Op, typename IdxT>
[[kernel]] void reduce_all(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* strides [[buffer(3)]],
    constant const int& ndim [[buffer(4)]],
    constant const int64_t* sizes [[buffer(5)]],  // {base, element count, contiguous?}
    uint2 tgid [[threadgroup_position_in_grid]],
    uint2 ngroups [[threadgroups_per_grid]],
    uint lid [[thread_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]]) {
  typedef typename Op::acc A;
  threadgroup A shared[MG_SIMD_SIZE];
  const IdxT base = IdxT(sizes[0]);
  const IdxT n = IdxT(sizes[1]);
  const bool contiguous = sizes[2] != 0;
  const IdxT group = IdxT(tgid.y) * IdxT(ngroups.x) + IdxT(tgid.x);
  const IdxT step = IdxT(ngroups.x) * IdxT(ngroups.y) * IdxT(tg_size);
  A acc = Op::init();
  for (IdxT i = group * IdxT(tg_size) + IdxT(lid); i < n; i += step) {
    const IdxT loc = contiguous ? i : elem_to_loc<IdxT>(i, shape, strides, ndim);
    acc = Op::apply(acc, Op::load(in[base + loc]));
  }
  acc = threadgroup_reduce<Op>(acc, shared, tg_size, simd_lane, simd_group);
  if (lid == 0) out[group] = cast_value<U>(acc);
}

template <typename T, typename U, typename Op, typename IdxT>
[[kernel]] void reduce_row(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* strides [[buffer(3)]],
    constant const int* rshape [[buffer(4)]],
    constant const int64_t* rstrides [[buffer(5)]],
    constant const int* ndims [[buffer(6)]],
    constant const int64_t* sizes [[buffer(7)]],
    uint2 tgid [[threadgroup_position_in_grid]],
    uint2 ngroups [[threadgroups_per_grid]],
    uint lid [[thread_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]]) {
  typedef typename Op::acc A;
  threadgroup A shared[MG_SIMD_SIZE];
  const IdxT row = IdxT(tgid.y) * IdxT(ngroups.x) + IdxT(tgid.x);
  if (int64_t(row) >= sizes[2]) return;  // whole threadgroups only: no barrier is skipped by part of one
  const IdxT n = IdxT(sizes[1]);
  device const T* lane = in + (IdxT(sizes[0]) + elem_to_loc<IdxT>(row, shape, strides, ndims[0]));
  A acc = Op::init();
  for (IdxT k = lid; k < n; k += tg_size) acc = Op::apply(acc, Op::load(lane[k]));
  acc = threadgroup_reduce<Op>(acc, shared, tg_size, simd_lane, simd_group);
  if (lid == 0) out[row] = cast_value<U>(acc);
}

template <typename T, typename U, typename Op, typename IdxT>
[[kernel]] void reduce_general(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* strides [[buffer(3)]],
    constant const int* rshape [[buffer(4)]],
    constant const int64_t* rstrides [[buffer(5)]],
    constant const int* ndims [[buffer(6)]],
    constant const int64_t* sizes [[buffer(7)]],
    uint2 tgid [[threadgroup_position_in_grid]],
    uint2 ngroups [[threadgroups_per_grid]],
    uint lid [[thread_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]]) {
  typedef typename Op::acc A;
  threadgroup A shared[MG_SIMD_SIZE];
  const IdxT row = IdxT(tgid.y) * IdxT(ngroups.x) + IdxT(tgid.x);
  if (int64_t(row) >= sizes[2]) return;
  const IdxT n = IdxT(sizes[1]);
  device const T* lane = in + (IdxT(sizes[0]) + elem_to_loc<IdxT>(row, shape, strides, ndims[0]));
  A acc = Op::init();
  for (IdxT k = lid; k < n; k += tg_size) {
    acc = Op::apply(acc, Op::load(lane[elem_to_loc<IdxT>(k, rshape, rstrides, ndims[1])]));
  }
  acc = threadgroup_reduce<Op>(acc, shared, tg_size, simd_lane, simd_group);
  if (lid == 0) out[row] = cast_value<U>(acc);
}

// The kept dimensions' last one is the column axis: threadgroup x runs along it, threadgroup y
// splits the reduction; the rows of partials are combined through threadgroup memory.
template <typename T, typename U, typename Op, typename IdxT>
[[kernel]] void reduce_col(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* strides [[buffer(3)]],
    constant const int* rshape [[buffer(4)]],
    constant const int64_t* rstrides [[buffer(5)]],
    constant const int* ndims [[buffer(6)]],
    constant const int64_t* sizes [[buffer(7)]],
    uint2 tgid [[threadgroup_position_in_grid]],
    uint2 ngroups [[threadgroups_per_grid]],
    uint2 tid [[thread_position_in_threadgroup]],
    uint2 tg_dims [[threads_per_threadgroup]]) {
  typedef typename Op::acc A;
  threadgroup A shared[1024];
  const int kept = ndims[0];
  const IdxT ncols = IdxT(shape[kept - 1]);
  const IdxT col_stride = IdxT(strides[kept - 1]);
  const IdxT tiles = (ncols + IdxT(tg_dims.x) - 1) / IdxT(tg_dims.x);
  const IdxT group = IdxT(tgid.y) * IdxT(ngroups.x) + IdxT(tgid.x);
  const IdxT outer = group / tiles;
  if (int64_t(outer) * int64_t(ncols) >= sizes[2]) return;  // whole threadgroups only
  const IdxT col = (group % tiles) * IdxT(tg_dims.x) + IdxT(tid.x);
  const IdxT n = IdxT(sizes[1]);
  A acc = Op::init();
  if (col < ncols) {
    device const T* lane = in + (IdxT(sizes[0]) + elem_to_loc<IdxT>(outer, shape, strides, kept - 1) + col * col_stride);
    if (ndims[1] == 1) {
      const IdxT rs = IdxT(rstrides[0]);
      for (IdxT k = tid.y; k < n; k += tg_dims.y) acc = Op::apply(acc, Op::load(lane[k * rs]));
    } else {
      for (IdxT k = tid.y; k < n; k += tg_dims.y) {
        acc = Op::apply(acc, Op::load(lane[elem_to_loc<IdxT>(k, rshape, rstrides, ndims[1])]));
      }
    }
  }
  shared[tid.y * tg_dims.x + tid.x] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid.y == 0 && col < ncols) {
    for (uint j = 1; j < tg_dims.y; ++j) acc = Op::apply(acc, shared[j * tg_dims.x + tid.x]);
    out[outer * ncols + col] = cast_value<U>(acc);
  }
}

template <typename U, typename Op>
[[kernel]] void reduce_init(
    device U* out [[buffer(0)]],
    constant const int64_t& size [[buffer(1)]],
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  const int64_t i = int64_t(gid.y) * int64_t(grid.x) + int64_t(gid.x);
  if (i < size) out[i] = cast_value<U>(Op::init());
}
