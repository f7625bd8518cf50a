// Gathers (MLX's Gather and GatherAxis). Elements are moved as raw bits, so T is an unsigned
// type of the element's size (uint8_t … uint64_t; complex64 moves as uint64_t) and one instance
// serves every dtype of that size. Index arrays of any integer dtype are read through IndexKind.
// IdxT is the address arithmetic: uint, or int64_t when an array spans 2^31 elements or more.
// An element whose source position is out of range reads as 0 (never memory outside the array).
#include "indexing.h"

// out[i, j] = src[start(i) + j]: i runs over the broadcast index shape, j over the slice shape;
// start(i) is index array k at i on axis k's axis, 0 on the other axes.
template <typename T, typename IdxT>
[[kernel]] void gather(
    device const T* src [[buffer(0)]],
    device T* out [[buffer(1)]],
    device const uchar* slot0 [[buffer(2)]],
    device const uchar* slot1 [[buffer(3)]],
    device const uchar* slot2 [[buffer(4)]],
    device const uchar* slot3 [[buffer(5)]],
    constant const int* src_shape [[buffer(6)]],
    constant const int64_t* src_strides [[buffer(7)]],
    constant const int* slice_shape [[buffer(8)]],
    constant const int* idx_shape [[buffer(9)]],
    constant const int64_t* idx_strides [[buffer(10)]],
    constant const int64_t* idx_bases [[buffer(11)]],
    constant const int* idx_info [[buffer(12)]],
    constant const int* dims [[buffer(13)]],       // ndim, idx_ndim, nidx, index kind, contiguous bits
    constant const int64_t* sizes [[buffer(14)]],  // src base, slice size, total
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT o = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(o) >= sizes[2]) return;
  IndexArrays ix = {slot0, slot1, slot2, slot3, idx_shape, idx_strides, idx_bases, idx_info,
                    dims[1], dims[2], dims[3], dims[4]};
  IdxT slice_size = IdxT(sizes[1]);
  IdxT loc;
  bool inside = slice_element_loc<IdxT>(ix, o / slice_size, o % slice_size, src_shape, src_strides, slice_shape, dims[0], loc);
  out[o] = inside ? src[IdxT(sizes[0]) + loc] : T(0);
}

// out[..., j, ...] = src[..., idx[..., j, ...], ...] along one axis: the index array has the
// output's shape; the source agrees with it on every other axis.
template <typename T, typename IdxT>
[[kernel]] void gather_axis(
    device const T* src [[buffer(0)]],
    device T* out [[buffer(1)]],
    device const uchar* idx [[buffer(2)]],
    constant const int* shape [[buffer(3)]],              // the output's (and index array's) shape
    constant const int64_t* idx_strides [[buffer(4)]],
    constant const int64_t* src_strides [[buffer(5)]],    // the source's, 0 on the gathered axis
    constant const int* dims [[buffer(6)]],               // ndim, index kind, index contiguous
    constant const int64_t* sizes [[buffer(7)]],          // src base, idx base, total, axis size, axis stride
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT o = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(o) >= sizes[2]) return;
  int ndim = dims[0];
  int64_t v = wrap_index(load_index<IdxT>(idx, IdxT(sizes[1]) + loc_of<IdxT>(o, dims[2] != 0, shape, idx_strides, ndim), dims[1]), sizes[3]);
  if (v < 0 || v >= sizes[3]) {
    out[o] = T(0);
    return;
  }
  out[o] = src[IdxT(sizes[0]) + elem_to_loc<IdxT>(o, shape, src_strides, ndim) + IdxT(v) * IdxT(sizes[4])];
}
