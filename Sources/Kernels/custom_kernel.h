// What mg.fast.metalKernel puts in front of every user kernel, so that kernels written for MLX's
// mx.fast.metal_kernel port verbatim: MLX's utils.h conveniences (elem_to_loc, ceildiv) and its
// type names (float16_t, bfloat16_t), which the generated signatures use (guide §7.3).
#pragma once
#include "utils.h"

#ifndef METAL_FUNC
#define METAL_FUNC inline __attribute__((always_inline))
#endif

// MLX's spellings of the 16-bit float types.
typedef half float16_t;
typedef bfloat bfloat16_t;

// ceildiv over mixed operand types, as MLX's: the guide's §9.4 calls
// ceildiv(int C, uint threads_per_simdgroup). Same-type calls pick utils.h's overload.
template <typename T, typename U>
METAL_FUNC T ceildiv(T N, U M) {
  return (N + M - 1) / M;
}

// elem_to_loc over a 3-D thread position (x, y: the last two dims; z: the rest), as MLX's.
template <typename IdxT = int64_t>
METAL_FUNC IdxT elem_to_loc(uint3 elem, constant const int* shape, constant const int64_t* strides, int ndim) {
  IdxT loc = IdxT(elem.x) * IdxT(strides[ndim - 1]) + IdxT(elem.y) * IdxT(strides[ndim - 2]);
  for (int d = ndim - 3; d >= 0; --d) {
    loc += IdxT(elem.z % uint(shape[d])) * IdxT(strides[d]);
    elem.z /= uint(shape[d]);
  }
  return loc;
}
