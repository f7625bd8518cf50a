// The kernels built for AVX2 + FMA + F16C (x86-64-v3), chosen at run time when the CPU has them.
// Every function defined in the region below carries the target attribute; the headers are
// included first so that library code keeps the baseline target.
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "fft.h"
#include "quant.h"
#include "mgcpu.h"

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
namespace mgcpu {
namespace avx2 {
#define MG_FMA 1
#define MG_F16C 1
#define MG_VECTOR_ONLY 1
// the integer dtypes' elementwise kernels compile in isa_avx2_int.cpp, in parallel with this unit
#define MG_KERNEL_DTYPES(X) X(F16) X(F32) X(F64) X(BF16)
#include "kernels_impl.h"
#include "fft_impl.h"
#include "quant_impl.h"
#undef MG_FMA
#undef MG_F16C
#undef MG_VECTOR_ONLY
#undef MG_KERNEL_DTYPES
constexpr int MR32 = 6, NV32 = 2, MR64 = 6, NV64 = 2;  // 12 ymm accumulators: 6×16 / 6×8
}  // namespace avx2
}  // namespace mgcpu
#pragma clang attribute pop

namespace mgcpu {

KernelFn kernel_avx2_int(int op, int dtype, int out);  // isa_avx2_int.cpp

namespace {
// The elementwise kernels compiled here are those wider vectors speed up (MG_VECTOR_ONLY,
// kernels_impl.h); the baseline table has the rest, from the same source.
KernelFn kernel_avx2(int op, int dtype, int out) {
  if (KernelFn f = avx2::kFloat(dtype) ? avx2::kernel_impl(op, dtype, out) : kernel_avx2_int(op, dtype, out)) return f;
  return isa_baseline().kernel(op, dtype, out);
}
}  // namespace

const Isa &isa_avx2() {
  using namespace avx2;
  static const Isa table = {
      "avx2",
      kernel_avx2, load_impl, store_impl, round_grid_impl, reduce_run_impl, reduce_rows_impl,
      softmax_row_impl, exp_row_f32_impl, gemm_ukernel_f32<MR32, NV32>, gemm_ukernel_f64<MR64, NV64>,
      MR32, NV32 * VF, MR64, NV64 * VD, random_bits_impl, fft_lines_impl, qdequant_f32_impl, qdot_f32_impl, qaxpy_f32_impl, qdot_fused_f32_impl,
  };
  return table;
}

bool cpu_has_avx2_fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

}  // namespace mgcpu
#endif
