// Single-op binary kernels over Op, input type T and output type U. Layout variants:
//   _vv  both contiguous        _sv / _vs  one side a single broadcast value, the other contiguous
//   _v2  the _vv case with a 64-bit index over a 2-D grid
//   _g   general strided inputs (each with its own strides and base), IdxT = uint or int64_t
#include "elementwise_ops.h"

template <typename Op, typename T, typename U>
[[kernel]] void binary_vv(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device U* out [[buffer(2)]],
    uint i [[thread_position_in_grid]]) {
  out[i] = Op()(a[i], b[i]);
}

template <typename Op, typename T, typename U>
[[kernel]] void binary_sv(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device U* out [[buffer(2)]],
    uint i [[thread_position_in_grid]]) {
  out[i] = Op()(a[0], b[i]);
}

template <typename Op, typename T, typename U>
[[kernel]] void binary_vs(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device U* out [[buffer(2)]],
    uint i [[thread_position_in_grid]]) {
  out[i] = Op()(a[i], b[0]);
}

template <typename Op, typename T, typename U>
[[kernel]] void binary_v2(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device U* out [[buffer(2)]],
    constant const int64_t& size [[buffer(3)]],
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  int64_t i = int64_t(gid.y) * int64_t(grid.x) + int64_t(gid.x);
  if (i < size) out[i] = Op()(a[i], b[i]);
}

template <typename Op, typename T, typename U, typename IdxT>
[[kernel]] void binary_g(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device U* out [[buffer(2)]],
    constant const int* shape [[buffer(3)]],
    constant const int64_t* strides [[buffer(4)]],  // a's ndim strides, then b's
    constant const int& ndim [[buffer(5)]],
    constant const int64_t* bases [[buffer(6)]],    // a's base, b's base
    constant const int64_t& size [[buffer(7)]],
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT i = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(i) >= size) return;
  IdxT la = IdxT(bases[0]) + elem_to_loc<IdxT>(i, shape, strides, ndim);
  IdxT lb = IdxT(bases[1]) + elem_to_loc<IdxT>(i, shape, strides + ndim, ndim);
  out[i] = Op()(a[la], b[lb]);
}

// divmod: floored quotient and remainder, two outputs.
template <typename T, typename IdxT>
[[kernel]] void divmod_g(
    device const T* a [[buffer(0)]],
    device const T* b [[buffer(1)]],
    device T* q [[buffer(2)]],
    device T* r [[buffer(3)]],
    constant const int* shape [[buffer(4)]],
    constant const int64_t* strides [[buffer(5)]],
    constant const int& ndim [[buffer(6)]],
    constant const int64_t* bases [[buffer(7)]],
    constant const int64_t& size [[buffer(8)]],
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT i = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(i) >= size) return;
  T x = a[IdxT(bases[0]) + elem_to_loc<IdxT>(i, shape, strides, ndim)];
  T y = b[IdxT(bases[1]) + elem_to_loc<IdxT>(i, shape, strides + ndim, ndim)];
  q[i] = DivModQuotient()(x, y);
  r[i] = Remainder()(x, y);
}
