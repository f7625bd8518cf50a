// Data movement at static or dynamic positions: strided copies into part of an array
// (Concatenate, stacking index arrays), padding (Pad), slice updates (SliceUpdate) and dynamic
// slices (DynamicSlice, DynamicSliceUpdate). Pure moves use an unsigned T of the element's size;
// slice updates that combine values use the dtype itself. IdxT as in gather.metal.
#include "indexing.h"

// dst[dst_base + loc(i, dst_strides)] = src[src_base + loc(i, src_strides)] over `shape`.
template <typename T, typename IdxT>
[[kernel]] void copy_strided(
    device const T* src [[buffer(0)]],
    device T* dst [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* src_strides [[buffer(3)]],
    constant const int64_t* dst_strides [[buffer(4)]],
    constant const int* dims [[buffer(5)]],          // ndim, src contiguous, dst contiguous
    constant const int64_t* sizes [[buffer(6)]],     // src base, dst base, total
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT i = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(i) >= sizes[2]) return;
  int ndim = dims[0];
  dst[IdxT(sizes[1]) + loc_of<IdxT>(i, dims[2] != 0, shape, dst_strides, ndim)] =
      src[IdxT(sizes[0]) + loc_of<IdxT>(i, dims[1] != 0, shape, src_strides, ndim)];
}

// out = value everywhere, with src in the interior (starting at `low` on each axis).
template <typename T, typename IdxT>
[[kernel]] void pad(
    device const T* src [[buffer(0)]],
    device const T* value [[buffer(1)]],
    device T* out [[buffer(2)]],
    constant const int* out_shape [[buffer(3)]],
    constant const int* src_shape [[buffer(4)]],
    constant const int64_t* src_strides [[buffer(5)]],
    constant const int* low [[buffer(6)]],
    constant const int& ndim [[buffer(7)]],
    constant const int64_t* sizes [[buffer(8)]],     // src base, value offset, total
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT o = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(o) >= sizes[2]) return;
  IdxT rest = o;
  IdxT loc = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    int64_t c = int64_t(rest % IdxT(out_shape[d])) - low[d];
    rest /= IdxT(out_shape[d]);
    if (c < 0 || c >= src_shape[d]) {
      out[o] = value[sizes[1]];
      return;
    }
    loc += IdxT(c) * IdxT(src_strides[d]);
  }
  out[o] = src[IdxT(sizes[0]) + loc];
}

// out[region(i)] = Op(out[region(i)], update[i]) over the update's elements; the output already
// holds a copy of the source, and the region (start, stop, step per axis) never repeats a position.
template <typename T, typename Op, typename IdxT>
[[kernel]] void slice_update(
    device T* out [[buffer(0)]],
    device const T* upd [[buffer(1)]],
    constant const int* shape [[buffer(2)]],            // the update's (the region's) shape
    constant const int64_t* upd_strides [[buffer(3)]],
    constant const int64_t* region_strides [[buffer(4)]],
    constant const int* dims [[buffer(5)]],              // ndim, update contiguous
    constant const int64_t* sizes [[buffer(6)]],         // update base, region base, total
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT i = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(i) >= sizes[2]) return;
  IdxT d = IdxT(sizes[1]) + elem_to_loc<IdxT>(i, shape, region_strides, dims[0]);
  T y = out[d];
  T x = upd[IdxT(sizes[0]) + loc_of<IdxT>(i, dims[1] != 0, shape, upd_strides, dims[0])];
  out[d] = Op()(y, x);
}

// The start of a dynamic slice on axis d: start[k] when axis d is the k-th sliced axis, else 0.
// Starts are taken as given (no wrapping of negatives), as on the CPU.
template <typename IdxT>
MG_FUNC int64_t dynamic_start(int d, const device uchar* start, constant const int* start_of_axis,
                              int kind, constant const int64_t* sizes) {
  int k = start_of_axis[d];
  return k < 0 ? 0 : load_index<IdxT>(start, IdxT(sizes[0] + k * sizes[1]), kind);
}

// out = src[start : start + out.shape] (start from an array); outside positions read 0.
template <typename T, typename IdxT>
[[kernel]] void dynamic_slice(
    device const T* src [[buffer(0)]],
    device T* out [[buffer(1)]],
    device const uchar* start [[buffer(2)]],
    constant const int* src_shape [[buffer(3)]],
    constant const int64_t* src_strides [[buffer(4)]],
    constant const int* out_shape [[buffer(5)]],
    constant const int* start_of_axis [[buffer(6)]],     // per axis: its start's position, or -1
    constant const int* dims [[buffer(7)]],              // ndim, start kind
    constant const int64_t* sizes [[buffer(8)]],         // start base, start stride, src base, total
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT o = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(o) >= sizes[3]) return;
  IdxT rest = o;
  IdxT loc = 0;
  for (int d = dims[0] - 1; d >= 0; --d) {
    int64_t s = dynamic_start<IdxT>(d, start, start_of_axis, dims[1], sizes);
    int64_t c = int64_t(rest % IdxT(out_shape[d]));
    rest /= IdxT(out_shape[d]);
    c = s > src_shape[d] ? int64_t(src_shape[d]) : c + s;  // (a huge start must not overflow)
    if (c < 0 || c >= src_shape[d]) {
      out[o] = T(0);
      return;
    }
    loc += IdxT(c) * IdxT(src_strides[d]);
  }
  out[o] = src[IdxT(sizes[2]) + loc];
}

// out[start : start + update.shape] = update; the output already holds a copy of the source and
// update elements that fall outside it are dropped.
template <typename T, typename IdxT>
[[kernel]] void dynamic_slice_update(
    device T* out [[buffer(0)]],
    device const T* upd [[buffer(1)]],
    device const uchar* start [[buffer(2)]],
    constant const int* out_shape [[buffer(3)]],
    constant const int64_t* out_strides [[buffer(4)]],   // row-major
    constant const int* upd_shape [[buffer(5)]],
    constant const int64_t* upd_strides [[buffer(6)]],
    constant const int* start_of_axis [[buffer(7)]],
    constant const int* dims [[buffer(8)]],              // ndim, start kind, update contiguous
    constant const int64_t* sizes [[buffer(9)]],         // start base, start stride, update base, total
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT i = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(i) >= sizes[3]) return;
  IdxT rest = i;
  IdxT loc = 0;
  for (int d = dims[0] - 1; d >= 0; --d) {
    int64_t s = dynamic_start<IdxT>(d, start, start_of_axis, dims[1], sizes);
    int64_t c = int64_t(rest % IdxT(upd_shape[d]));
    rest /= IdxT(upd_shape[d]);
    c = s > out_shape[d] ? int64_t(out_shape[d]) : c + s;
    if (c < 0 || c >= out_shape[d]) return;
    loc += IdxT(c) * IdxT(out_strides[d]);
  }
  out[loc] = upd[IdxT(sizes[2]) + loc_of<IdxT>(i, dims[2] != 0, upd_shape, upd_strides, dims[0])];
}
