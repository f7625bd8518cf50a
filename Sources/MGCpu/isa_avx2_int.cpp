// The AVX2 table's elementwise kernels for bool and the integer dtypes (isa_avx2.cpp has the rest):
// the same source and target as there, in a unit of its own so that the two compile in parallel
// (isa_avx2.cpp whole was the build's longest unit and ended it alone).
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "mgcpu.h"

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
namespace mgcpu {
namespace avx2 {
#define MG_FMA 1
#define MG_F16C 1
#define MG_VECTOR_ONLY 1
#define MG_KERNEL_DTYPES(X) X(Bool) X(U8) X(U16) X(U32) X(U64) X(I8) X(I16) X(I32) X(I64) X(C64)
// the header's other functions (reductions, softmax, …) are isa_avx2.cpp's, unused here
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunused-function"
#include "kernels_impl.h"
#pragma clang diagnostic pop
#undef MG_FMA
#undef MG_F16C
#undef MG_VECTOR_ONLY
#undef MG_KERNEL_DTYPES
}  // namespace avx2
}  // namespace mgcpu
#pragma clang attribute pop

namespace mgcpu {
KernelFn kernel_avx2_int(int op, int dtype, int out) { return avx2::kernel_impl(op, dtype, out); }
}  // namespace mgcpu
#endif
