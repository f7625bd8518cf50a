// Quantized products in MLX's packed formats: what the driver (quant.cpp) and the per-ISA kernels
// (quant_impl.h) share.
#ifndef MGCPU_QUANT_H
#define MGCPU_QUANT_H

#include <cstdint>

namespace mgcpu {

// Rows of x the decode kernels (dot products over dequantised chunks) take at once.
constexpr int QMV_ROWS = 8;

enum QuantMode : int32_t { QAffine = 0, QMxfp4 = 1, QMxfp8 = 2, QNvfp4 = 3 };

// A packed layout: codes of `bits` bits as a little-endian bit stream per row, groups of `group`
// codes sharing a scale (and, affine, a bias). Every group starts on a word boundary
// (group·bits is a multiple of 32 for every supported combination).
struct QuantSpec {
  int mode, bits, group;
  int dtype;  // the values' dtype (affine: codes·scale + bias rounded to it after each op)
};

}  // namespace mgcpu

#endif
