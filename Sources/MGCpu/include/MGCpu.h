// MGCpu — metalgrad's native CPU kernels (the CPU device's compute), linked into the runtime dylib
// and called from TypeScript through bun:ffi (ts/backend/cpu/native).
//
// C ABI conventions (docs/ARCHITECTURE.md, "Native CPU kernels"):
// - every entry point takes a descriptor: an array of doubles the caller fills (pointers, counts,
//   dtypes, shapes and strides in elements are exact in a double below 2^53) plus its length;
//   nothing is passed by value as a struct and nothing is 64-bit integer typed;
// - a call returns a status: 0 ok, MGCPU_UNSUPPORTED when the kernel does not exist for the
//   arguments (the caller falls back to its reference implementation), MGCPU_ERROR on a bad
//   descriptor; the message is read with mg_cpu_last_error() (thread-local, "[mg_cpu_…] …").
// - dtypes are metalgrad's indices (ts/core/dtype.ts): bool 0, uint8 1, uint16 2, uint32 3,
//   uint64 4, int8 5, int16 6, int32 7, int64 8, float16 9, float32 10, float64 11, bfloat16 12,
//   complex64 13.
#ifndef MGCPU_H
#define MGCPU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { MGCPU_OK = 0, MGCPU_UNSUPPORTED = 1, MGCPU_ERROR = 2 };

/// The message of the last failed (or unsupported) call on this thread; "" when none.
const char *mg_cpu_last_error(void);

/// Facts as JSON: instruction set chosen at run time, thread count, GEMM provider, tile size.
const char *mg_cpu_info_json(void);

/// Sets the number of threads kernels use (0 = MG_CPU_THREADS or the hardware concurrency).
/// Returns the previous count.
int32_t mg_cpu_set_threads(int32_t threads);

/// Forces the instruction set: 0 = best available (default), 1 = baseline (SSE2 / NEON),
/// 2 = AVX2+FMA, 3 = AVX-512 elementwise float kernels over the AVX2 set (x86-64 only; a request the
/// CPU cannot run is ignored). Returns the ISA in use after the call (tests run each).
int32_t mg_cpu_set_isa(int32_t isa);

/// Selects the GEMM: 0 = metalgrad's packed GEMM, 1 = the platform BLAS (Accelerate on macOS,
/// an OpenBLAS dlopen'ed from MG_BLAS elsewhere). Returns the provider in use (0 or 1).
int32_t mg_cpu_set_gemm(int32_t provider);

/// Counters: [0] the GEMM provider the last mg_cpu_matmul used (0 own, 1 blas, 2 naive small),
/// [1] threads the last kernel ran on. Fills out[0..n).
int32_t mg_cpu_last_run(double *out, int32_t n);

/// An elementwise program (one fused region, or a single op) over one output shape.
int32_t mg_cpu_elementwise(const double *desc, int32_t words);

/// Reductions (sum, prod, max, min, and, or) over a set of axes.
int32_t mg_cpu_reduce(const double *desc, int32_t words);

/// Index of the maximum / minimum along one axis.
int32_t mg_cpu_argreduce(const double *desc, int32_t words);

/// Softmax / log-sum-exp along the last axis.
int32_t mg_cpu_softmax(const double *desc, int32_t words);

/// Batched matrix products C = alpha·A·B + beta·C0 over strided operands.
int32_t mg_cpu_matmul(const double *desc, int32_t words);

/// Cumulative sums, products, max, min and logaddexp along one axis.
int32_t mg_cpu_scan(const double *desc, int32_t words);

/// A strided copy (or, with zero source strides, a fill) of 1-, 2-, 4- or 8-byte elements.
int32_t mg_cpu_copy(const double *desc, int32_t words);

/// start + i·step in float64, stored in a dtype.
int32_t mg_cpu_arange(const double *desc, int32_t words);

/// Threefry-2x32 random bits, one stream per key (MLX's RandomBits layout).
int32_t mg_cpu_random_bits(const double *desc, int32_t words);

/// Gather (slices at index positions) and take_along_axis; an index out of range is unsupported
/// (the reference zero-fills or throws, as configured).
int32_t mg_cpu_gather(const double *desc, int32_t words);
int32_t mg_cpu_gather_axis(const double *desc, int32_t words);

/// FFT (MLX's primitive: complex→complex, real→complex or complex→real over several axes; inverses
/// include 1/n per axis) of complex64 / float32 data, computed in float64.
int32_t mg_cpu_fft(const double *desc, int32_t words);

/// Convolution (MLX's primitive, channels last, 1–3 spatial axes) as an implicit GEMM per group.
int32_t mg_cpu_convolution(const double *desc, int32_t words);

/// QuantizedMatmul and GatherQMM in MLX's packed formats (affine, mxfp4, mxfp8, nvfp4), without
/// dequantising the weights in memory.
int32_t mg_cpu_quantized_matmul(const double *desc, int32_t words);

/// Affine quantization (MLX's packed layout and roundings) and dequantization of every mode.
int32_t mg_cpu_quantize(const double *desc, int32_t words);
int32_t mg_cpu_dequantize(const double *desc, int32_t words);

/// Stable sort (values or uint32 indices) along one axis: NaN last, −0 = 0, complex by (re, im).
int32_t mg_cpu_sort(const double *desc, int32_t words);

/// Scatter, ScatterAxis and (dynamic) slice updates into a copy of the source, in update order.
int32_t mg_cpu_scatter(const double *desc, int32_t words);

/// mg.fast on the CPU, as the float64 references: RMSNorm/LayerNorm (forward and VJP), RoPE, scaled
/// dot-product attention (forward with statistics, and VJP), cross entropy (forward and VJP).
int32_t mg_cpu_norm(const double *desc, int32_t words);
int32_t mg_cpu_rope(const double *desc, int32_t words);
int32_t mg_cpu_sdpa(const double *desc, int32_t words);
int32_t mg_cpu_cross_entropy(const double *desc, int32_t words);

/// Batched float32/float64 factorizations (LU, inverse, triangular inverse, Cholesky, QR) in
/// float64 with the reference's algorithms; a singular matrix is unsupported (the reference raises).
int32_t mg_cpu_linalg(const double *desc, int32_t words);

/// Reads regions of an open file into memory, split over the worker pool (the loaders' reads).
/// Descriptor: fd, count, count × (destination address, file offset, length). On failure it writes
/// the failing region's index and errno (0: the file ended early) into desc[0] and desc[1].
int32_t mg_cpu_read_file(double *desc, int32_t words);

#ifdef __cplusplus
}
#endif

#endif
