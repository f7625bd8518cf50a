// Single-op ternary kernels (select): Op over condition type bool and value type T.
//   _v  all contiguous      _g  general strided, IdxT = uint or int64_t
#include "elementwise_ops.h"

template <typename Op, typename T>
[[kernel]] void ternary_v(
    device const bool* c [[buffer(0)]],
    device const T* a [[buffer(1)]],
    device const T* b [[buffer(2)]],
    device T* out [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  out[i] = Op()(c[i], a[i], b[i]);
}

template <typename Op, typename T, typename IdxT>
[[kernel]] void ternary_g(
    device const bool* c [[buffer(0)]],
    device const T* a [[buffer(1)]],
    device const T* b [[buffer(2)]],
    device T* out [[buffer(3)]],
    constant const int* shape [[buffer(4)]],
    constant const int64_t* strides [[buffer(5)]],  // c's, a's, b's strides, ndim each
    constant const int& ndim [[buffer(6)]],
    constant const int64_t* bases [[buffer(7)]],
    constant const int64_t& size [[buffer(8)]],
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  IdxT i = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(i) >= size) return;
  IdxT lc = IdxT(bases[0]) + elem_to_loc<IdxT>(i, shape, strides, ndim);
  IdxT la = IdxT(bases[1]) + elem_to_loc<IdxT>(i, shape, strides + ndim, ndim);
  IdxT lb = IdxT(bases[2]) + elem_to_loc<IdxT>(i, shape, strides + 2 * ndim, ndim);
  out[i] = Op()(c[lc], a[la], b[lb]);
}
