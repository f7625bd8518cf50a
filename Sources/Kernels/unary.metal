// Single-op unary kernels (and the copy/cast family), templated over the functor Op, the input
// type T and the output type U. Layout variants:
//   _v   contiguous input and output, 32-bit index
//   _v2  contiguous, 64-bit index over a 2-D grid (arrays of 2^32 elements and more)
//   _g   general strided input (element offset base + elem_to_loc), IdxT = uint or int64_t
#include "elementwise_ops.h"

template <typename Op, typename T, typename U>
[[kernel]] void unary_v(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    uint i [[thread_position_in_grid]]) {
  out[i] = Op()(in[i]);
}

template <typename Op, typename T, typename U>
[[kernel]] void unary_v2(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const int64_t& size [[buffer(2)]],
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  int64_t i = int64_t(gid.y) * int64_t(grid.x) + int64_t(gid.x);
  if (i < size) out[i] = Op()(in[i]);
}

template <typename Op, typename T, typename U, typename IdxT>
[[kernel]] void unary_g(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* strides [[buffer(3)]],
    constant const int& ndim [[buffer(4)]],
    constant const int64_t& base [[buffer(5)]],
    constant const int64_t& size [[buffer(6)]],
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT i = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(i) >= size) return;
  out[i] = Op()(in[IdxT(base) + elem_to_loc<IdxT>(i, shape, strides, ndim)]);
}
