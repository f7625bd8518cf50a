// The kernels built for the baseline instruction set every machine of the architecture has: SSE2
// on x86-64, NEON (with fused multiply-add) on arm64.
#include <algorithm>
#include <type_traits>

#include "fft.h"
#include "quant.h"
#include "mgcpu.h"

namespace mgcpu {
namespace baseline {
#if defined(__aarch64__)
#define MG_FMA 1
#else
#define MG_FMA 0
#endif
#define MG_F16C 0
// the other dtypes' elementwise kernels compile in isa_baseline_int.cpp, in parallel with this unit
#define MG_KERNEL_DTYPES(X) X(F16) X(F32) X(F64) X(BF16)
// (bool_kernel and complex_kernel are isa_baseline_int.cpp's, unused here)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunused-function"
#include "kernels_impl.h"
#pragma clang diagnostic pop
#include "fft_impl.h"
#include "quant_impl.h"
#undef MG_FMA
#undef MG_F16C
#undef MG_KERNEL_DTYPES

#if defined(__aarch64__)
constexpr int MR32 = 6, NV32 = 2, MR64 = 6, NV64 = 2;  // 32 NEON registers hold a 6×16 tile
#else
constexpr int MR32 = 6, NV32 = 1, MR64 = 6, NV64 = 1;  // 16 SSE registers hold a 6×8 tile
#endif
}  // namespace baseline

KernelFn kernel_baseline_int(int op, int dtype, int out);  // isa_baseline_int.cpp

namespace {
KernelFn kernel_baseline(int op, int dtype, int out) {
  return baseline::kFloat(dtype) ? baseline::kernel_impl(op, dtype, out) : kernel_baseline_int(op, dtype, out);
}
}  // namespace

const Isa &isa_baseline() {
  using namespace baseline;
  static const Isa table = {
#if defined(__aarch64__)
      "neon",
#else
      "sse2",
#endif
      kernel_baseline, load_impl, store_impl, round_grid_impl, reduce_run_impl, reduce_rows_impl,
      softmax_row_impl, exp_row_f32_impl, gemm_ukernel_f32<MR32, NV32>, gemm_ukernel_f64<MR64, NV64>,
      MR32, NV32 * VF, MR64, NV64 * VD, random_bits_impl, fft_lines_impl, qdequant_f32_impl, qdot_f32_impl, qaxpy_f32_impl, qdot_fused_f32_impl,
  };
  return table;
}

}  // namespace mgcpu
