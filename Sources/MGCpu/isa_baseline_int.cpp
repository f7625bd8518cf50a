// The baseline table's elementwise kernels for bool, the integer dtypes and complex64
// (isa_baseline.cpp has the rest): the same source and flags as there, in a unit of its own so that
// the two compile in parallel (isa_baseline.cpp whole was the build's longest unit).
#include <algorithm>
#include <type_traits>

#include "mgcpu.h"

namespace mgcpu {
namespace baseline {
#if defined(__aarch64__)
#define MG_FMA 1
#else
#define MG_FMA 0
#endif
#define MG_F16C 0
#define MG_KERNEL_DTYPES(X) X(Bool) X(U8) X(U16) X(U32) X(U64) X(I8) X(I16) X(I32) X(I64) X(C64)
// the header's other functions (reductions, softmax, …) are isa_baseline.cpp's, unused here
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunused-function"
#include "kernels_impl.h"
#pragma clang diagnostic pop
#undef MG_FMA
#undef MG_F16C
#undef MG_KERNEL_DTYPES
}  // namespace baseline

KernelFn kernel_baseline_int(int op, int dtype, int out) { return baseline::kernel_impl(op, dtype, out); }
}  // namespace mgcpu
