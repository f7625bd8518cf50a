// Internal declarations shared by the ISA-independent driver (api.cpp, pool.cpp, gemm.cpp) and the
// kernels compiled once per instruction set (isa_*.cpp including kernels.inc).
#ifndef MGCPU_INTERNAL_H
#define MGCPU_INTERNAL_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#define MG_EXPORT extern "C" __attribute__((visibility("default")))

namespace mgcpu {

// metalgrad's dtype indices (ts/core/dtype.ts).
enum Dtype : int32_t {
  Bool = 0, U8 = 1, U16 = 2, U32 = 3, U64 = 4, I8 = 5, I16 = 6, I32 = 7, I64 = 8,
  F16 = 9, F32 = 10, F64 = 11, BF16 = 12, C64 = 13, DtypeCount = 14
};

// X(D) for every dtype, in index order: one switch over a runtime dtype that instantiates a
// template per dtype is `switch (d) { MG_EACH_DTYPE(CASE) default: ... }`.
#define MG_EACH_DTYPE(X) X(Bool) X(U8) X(U16) X(U32) X(U64) X(I8) X(I16) X(I32) X(I64) X(F16) X(F32) X(F64) X(BF16) X(C64)

inline int dtype_size(int d) {
  static const int sizes[DtypeCount] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2, 8};
  return sizes[d];
}
inline bool is_int(int d) { return (d >= U8 && d <= I64); }
inline bool is_16bit_float(int d) { return d == F16 || d == BF16; }
inline bool is_float(int d) { return d == F16 || d == F32 || d == F64 || d == BF16; }

// The representation a dtype's values take inside kernels: 16-bit floats are held as float32
// values that lie on the 16-bit grid; everything else is its storage type.
inline int repr_of(int d) { return is_16bit_float(d) ? F32 : d; }
inline int repr_size(int d) { return dtype_size(repr_of(d)); }

// ---- 16-bit floats (round to nearest even; NaN stays NaN, quieted) --------------------------

inline float f32_from_bits(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
inline uint32_t bits_from_f32(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }
inline double f64_from_bits(uint64_t b) { double f; std::memcpy(&f, &b, 8); return f; }
inline uint64_t bits_from_f64(double f) { uint64_t b; std::memcpy(&b, &f, 8); return b; }

inline float bf16_to_f32(uint16_t h) { return f32_from_bits(uint32_t(h) << 16); }
// As metalgrad's bfloat16BitsFromNumber (ts/core/dtype.ts): NaN keeps its sign and is quieted.
inline uint16_t f32_to_bf16(float f) {
  uint32_t b = bits_from_f32(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return uint16_t((b >> 16) | 0x0040u);
  return uint16_t((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    // subnormal (or zero): man · 2^-24, exact in float32
    float v = float(man) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

// Rounds a double straight to the nearest float16 (one rounding, as a JS Float16Array store).
inline uint16_t f64_to_f16(double x) {
  uint64_t b = bits_from_f64(x);
  uint16_t sign = uint16_t((b >> 48) & 0x8000u);
  uint64_t abits = b & 0x7fffffffffffffffull;
  if (abits > 0x7ff0000000000000ull) return uint16_t(sign | 0x7e00u);  // NaN
  double a = f64_from_bits(abits);
  if (a >= 65520.0) return uint16_t(sign | 0x7c00u);                  // rounds to infinity
  if (a < 6.103515625e-05) {
    // subnormal range: multiples of 2^-24; nearbyint rounds half to even in the default mode
    double q = std::nearbyint(a * 16777216.0);
    return uint16_t(sign | uint16_t(q));
  }
  int e;
  double m = std::frexp(a, &e);                 // a = m·2^e, m in [0.5, 1)
  double q = std::nearbyint(m * 2048.0);        // 11 significant bits
  if (q == 2048.0) { q = 1024.0; e += 1; }
  uint16_t exp = uint16_t(e - 1 + 15);
  if (exp >= 31) return uint16_t(sign | 0x7c00u);
  return uint16_t(sign | (exp << 10) | (uint16_t(q) - 1024u));
}

inline uint16_t f32_to_f16(float f) {
  uint32_t b = bits_from_f32(f);
  uint32_t sign = (b >> 16) & 0x8000u;
  uint32_t a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // ≥ 65520: infinity
  if (a < 0x38800000u) {
    // below 2^-14: subnormal half; add 0.5 (as float) to align the bits, then round (RNE)
    float v = f32_from_bits(a) + 0.5f;
    return uint16_t(sign | (bits_from_f32(v) - 0x3f000000u));
  }
  uint32_t mant_odd = (a >> 13) & 1u;
  a += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return uint16_t(sign | (a >> 13));
}

// ---- conversions with the TypeScript reference's semantics -----------------------------------

// A double stored into an integer type as metalgrad's CPU reference does: truncate toward zero,
// then wrap modulo 2^64 (and so modulo the type's width); NaN and ±inf give 0.
inline uint64_t wrap_u64_from_double(double v) {
  if (!(v - v == 0.0)) return 0;  // NaN or infinite
  double t = std::trunc(v);
  double a = std::fabs(t);
  uint64_t r;
  if (a < 9223372036854775808.0) {
    r = uint64_t(int64_t(a));
  } else {
    int e;
    double m = std::frexp(a, &e);  // a = m·2^e, e ≥ 64
    uint64_t mant = uint64_t(std::ldexp(m, 53));
    int shift = e - 53;
    r = shift >= 64 ? 0 : mant << shift;
  }
  return t < 0 ? uint64_t(0) - r : r;
}

// A float value converted to an integer dtype as every metalgrad device does (docs/corner-cases.md):
// x86-64's conversion, spelled out because C leaves NaN, ±inf and out-of-range values undefined.
// int32/int64: trunc(x), or the minimum when it does not fit; narrower integers wrap the int32
// result; uint32 wraps the int64 result; uint64 takes trunc(x) on [2^63, 2^64), 0 from 2^64, else
// the int64 result wrapped. Returns the two's-complement bits (the caller keeps the low ones).
inline int64_t float_to_int32_bits(double x) {
  return (x > -2147483649.0 && x < 2147483648.0) ? int64_t(int32_t(x)) : int64_t(INT32_MIN);
}
inline int64_t float_to_int64_bits(double x) {
  return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? int64_t(x) : INT64_MIN;
}
inline uint64_t float_to_integer(double x, int dtype) {
  switch (dtype) {
    case U64:
      if (x >= 9223372036854775808.0) return x < 18446744073709551616.0 ? uint64_t(x) : 0;
      return uint64_t(float_to_int64_bits(x));
    case I64: return uint64_t(float_to_int64_bits(x));
    case U32: return uint64_t(float_to_int64_bits(x));  // the low 32 bits
    default: return uint64_t(float_to_int32_bits(x));  // int32 and narrower: the low bits
  }
}

// ---- errors ------------------------------------------------------------------------------------

void set_error(const char *fn, const std::string &message);
int fail(const char *fn, const std::string &message);         // MGCPU_ERROR
int unsupported(const char *fn, const std::string &message);  // MGCPU_UNSUPPORTED

// ---- thread pool -------------------------------------------------------------------------------

using TaskFn = void (*)(void *ctx, int64_t task, int thread);
// Runs fn(ctx, t, thread) for t in [0, tasks) on up to `threads` threads (the caller is thread 0).
// Tasks are handed out in order; each task's work must not depend on which thread runs it.
void parallel_for(int64_t tasks, int threads, TaskFn fn, void *ctx);
int thread_count();
int set_thread_count(int n);  // 0 = the default; returns the previous count
// Threads worth using for `work` units of roughly a nanosecond each (1 below the threshold).
int threads_for(double work);
// Scratch memory of the calling OS thread (64-byte aligned), valid until it asks again; null when
// the allocation fails.
void *thread_scratch(int thread, size_t bytes);

// ---- blocked products for kernels that multiply blocks of their own (gemm.cpp) ----------------

// C[m×n] (row stride ldc) = A[m×k]·B[k×n] (+= when accumulate), float32 accumulation on the calling
// thread with the matmul micro-kernels. A and B are strided views of any float dtype (element
// strides: rows, columns); scratch holds local_gemm_scratch_bytes(n) bytes, 64-byte aligned.
size_t local_gemm_scratch_bytes(int64_t n);
void local_gemm_f32(int64_t m, int64_t n, int64_t k, const char *a, int adt, int64_t ars, int64_t acs, const char *b, int bdt,
                    int64_t brs, int64_t bcs, float *c, int64_t ldc, bool accumulate, void *scratch);

// ---- descriptors -------------------------------------------------------------------------------

constexpr int MAX_DIMS = 32;

// A strided operand: base pointer (at its first element), dtype, strides in elements.
struct Operand {
  char *ptr;
  int32_t dtype;
  int64_t strides[MAX_DIMS];
};

// A descriptor reader that checks every word it hands out.
struct Reader {
  const double *d;
  int32_t n;
  int32_t pos = 0;
  const char *fn;
  bool ok = true;
  std::string error;
  Reader(const double *desc, int32_t words, const char *name) : d(desc), n(words), fn(name) {
    if (!desc || words < 0) { ok = false; error = "null descriptor"; }
  }
  // The checks are inline and the messages out of line: a tiny op's descriptor has ~20 words, and
  // a call per word with a std::string in reach was ~40 instructions each (callgrind).
  [[gnu::noinline, gnu::cold]] void too_short() {
    ok = false;
    error = "descriptor too short";
  }
  [[gnu::noinline, gnu::cold]] void out_of_range(const char *what, double v) {
    ok = false;
    error = std::string(what) + " out of range (" + std::to_string(v) + ")";
  }
  [[gnu::noinline, gnu::cold]] void not_pointer(const char *what) {
    ok = false;
    error = std::string(what) + " is not a pointer";
  }
  double next() {
    if (__builtin_expect(!ok, 0)) return 0;
    if (__builtin_expect(pos >= n, 0)) {
      too_short();
      return 0;
    }
    return d[pos++];
  }
  int64_t integer(int64_t lo, int64_t hi, const char *what) {
    double v = next();
    if (__builtin_expect(!ok, 0)) return 0;
    // in range first (then the int64 conversion is defined), then integral
    if (__builtin_expect(!(v >= double(lo) && v <= double(hi)) || double(int64_t(v)) != v, 0)) {
      out_of_range(what, v);
      return lo;
    }
    return int64_t(v);
  }
  char *pointer(const char *what) {
    double v = next();
    if (__builtin_expect(!ok, 0)) return nullptr;
    if (__builtin_expect(!(v >= 0 && v < 9007199254740992.0) || double(int64_t(v)) != v, 0)) {
      not_pointer(what);
      return nullptr;
    }
    return reinterpret_cast<char *>(uintptr_t(v));
  }
  int dtype(const char *what) { return int(integer(0, DtypeCount - 1, what)); }
};

inline int64_t size_of(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  return n;
}

inline bool read_shape(Reader &r, int ndim, int64_t *shape) {
  for (int d = 0; d < ndim; d++) shape[d] = r.integer(0, int64_t(1) << 52, "dimension");
  return r.ok;
}

inline bool read_strides(Reader &r, int ndim, int64_t *strides) {
  for (int d = 0; d < ndim; d++) strides[d] = r.integer(-(int64_t(1) << 52), int64_t(1) << 52, "stride");
  return r.ok;
}

const char *dtype_name(int d);
// Records the thread count of the last kernel (mg_cpu_last_run).
void note_threads(int n);

// ---- elementwise programs ----------------------------------------------------------------------

// Opcodes (ts/backend/cpu/native/opcodes.ts mirrors this list).
enum Op : int32_t {
  // unary
  OpAbs, OpNegative, OpSign, OpSquare, OpSqrt, OpRsqrt, OpExp, OpExpm1, OpLog, OpLog2, OpLog10,
  OpLog1p, OpSin, OpCos, OpTan, OpArcSin, OpArcCos, OpArcTan, OpSinh, OpCosh, OpTanh, OpArcSinh,
  OpArcCosh, OpArcTanh, OpFloor, OpCeil, OpRound, OpSigmoid, OpErf, OpErfInv, OpLogicalNot,
  OpBitwiseInvert, OpConjugate, OpReal, OpImag, OpCast,
  // binary
  OpAdd, OpSubtract, OpMultiply, OpDivide, OpFloorDivide, OpRemainder, OpPower, OpMaximum,
  OpMinimum, OpLogAddExp, OpArcTan2, OpEqual, OpEqualNan, OpNotEqual, OpGreater, OpGreaterEqual,
  OpLess, OpLessEqual, OpLogicalAnd, OpLogicalOr, OpBitwiseAnd, OpBitwiseOr, OpBitwiseXor,
  OpLeftShift, OpRightShift, OpDivModQuotient, OpDivModRemainder,
  // ternary
  OpSelect,
  OpCount
};
constexpr int FirstBinary = OpAdd;
constexpr int FirstTernary = OpSelect;
inline int op_arity(int op) { return op >= FirstTernary ? 3 : op >= FirstBinary ? 2 : 1; }

struct Instr {
  int32_t op, dtype, out_dtype, dst, a, b, c;
};

constexpr int MAX_OPERANDS = 512;
constexpr int ACC_DOUBLES = 4;  // room per reduction accumulator (complex max/min uses 3)
constexpr int64_t TILE = 1024;  // elements per tile: a register of 8-byte values is 8 KiB

// A program after parsing: shapes collapsed, operands resolved.
struct Program {
  int ndim;
  int64_t shape[MAX_DIMS];
  int64_t size;
  int n_in, n_out, n_temp, n_instr;
  Operand in[MAX_OPERANDS];
  char *out_ptr[MAX_OPERANDS];
  int32_t out_dtype[MAX_OPERANDS];
  int32_t temp_dtype[MAX_OPERANDS];
  Instr *instr;
};

// A unary/binary/ternary kernel over repr values: dst[i] = f(a[i], b[i], c[i]); an operand with
// its scalar flag set is one value broadcast over n.
using KernelFn = void (*)(void *dst, const void *a, const void *b, const void *c, int64_t n,
                          int scalar_mask);

// ---- per-ISA entry points ---------------------------------------------------------------------

struct FftStep;    // fft.h
struct QuantSpec;  // quant.h
constexpr int FFT_LANES = 4;  // lines an ISA's FFT kernel transforms at once (VD)

struct Isa {
  const char *name;
  // kernel for (op, dtype of the op's inputs, output dtype); nullptr when unsupported
  KernelFn (*kernel)(int op, int dtype, int out_dtype);
  // storage → repr, strided source (16-bit floats widen to float32)
  void (*load)(void *dst, const void *src, int dtype, int64_t stride, int64_t n);
  // repr → storage, contiguous
  void (*store)(void *dst, const void *src, int dtype, int64_t n);
  // rounds n float32 values in place to the grid of a 16-bit float dtype
  void (*round_grid)(float *x, int dtype, int64_t n);
  // *acc op= the strided run (acc: ACC_DOUBLES doubles, initialised by the driver)
  void (*reduce_run)(int type, int dtype, const void *src, int64_t stride, int64_t n, void *acc);
  // acc[j] op= row[j] over a contiguous row (column reductions); accumulators ACC_DOUBLES apart
  void (*reduce_rows)(int type, int dtype, void *acc, const void *src, int64_t n);
  // softmax (or log-sum-exp into dst[0]) of one contiguous row of float32 or float64 values
  void (*softmax_row)(int dtype, const void *src, void *dst, int64_t n, int log_sum_exp);
  // y = exp(x − shift) over a contiguous float32 row (y may be x); returns Σ y, summed in double
  double (*exp_row_f32)(const float *x, float *y, int64_t n, float shift);
  // GEMM micro-kernels: C[MR×NR] (+)= packedA[k×MR] · packedB[k×NR]
  void (*gemm_f32)(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int accumulate);
  void (*gemm_f64)(int64_t k, const double *a, const double *b, double *c, int64_t ldc, int accumulate);
  int gemm_mr_f32, gemm_nr_f32, gemm_mr_f64, gemm_nr_f64;
  // bytes [0, bytes) of key (k0, k1)'s Threefry stream, counter pairs [i0, i1) (MLX's layout)
  void (*random_bits)(uint32_t k0, uint32_t k1, int64_t bytes, int64_t i0, int64_t i1, uint8_t *out);
  // FFT: lines [first, first + count) of a step (groups of FFT_LANES vectorised); scratch holds
  // fft_scratch_doubles(step, FFT_LANES) doubles, 64-byte aligned
  void (*fft_lines)(const FftStep &s, int64_t first, int64_t count, double *scratch);
  // quantized products (quant.cpp): `groups` whole groups of a packed row → float32 (decoded
  // scales and biases per group); acc[m·8 + l] += lane l of Σ x_m·w; y_m += a_m·w
  void (*qdequant_f32)(const QuantSpec &q, const uint32_t *words, int64_t groups, const float *scale, const float *bias, float *out);
  void (*qdot_f32)(const float *const *x, int rows, const float *w, int64_t n, float *acc);
  void (*qaxpy_f32)(float *const *y, const float *a, int rows, const float *w, int64_t n);
  // qdequant + qdot in one pass where a fused kernel exists (affine float32, 2/4/8 bits); false
  // otherwise
  bool (*qdot_fused_f32)(const QuantSpec &q, const uint32_t *words, int64_t groups, const float *scale, const float *bias,
                         const float *const *x, int rows, float *acc);
};

// The GEMM micro-kernel for T (float or double): C[MR×NR] (+)= packedA[k×MR] · packedB[k×NR].
template <class T>
inline void micro_kernel(const Isa &is, int64_t k, const T *a, const T *b, T *c, int64_t ldc, bool acc) {
  if constexpr (std::is_same_v<T, float>) is.gemm_f32(k, a, b, c, ldc, acc);
  else is.gemm_f64(k, a, b, c, ldc, acc);
}

// BLIS's two inner loops over one packed block: C[mc×nc] (ldc) (+)= Ã·B̃ over kc, A packed in mr-row
// panels (ap), B in nr-column panels (bp). Edge tiles go through `edge` (mr·nr elements), so the
// micro-kernel always writes a whole tile (GEMM, convolution and quantized products share this).
template <class T>
inline void micro_tiles(const Isa &is, int64_t kc, const T *ap, const T *bp, int64_t mc, int64_t nc, int mr, int nr, T *c,
                        int64_t ldc, bool acc, T *edge) {
  for (int64_t jr = 0; jr < nc; jr += nr) {
    const int64_t nn = nc - jr < nr ? nc - jr : nr;
    for (int64_t ir = 0; ir < mc; ir += mr) {
      const int64_t mm = mc - ir < mr ? mc - ir : mr;
      T *ct = c + ir * ldc + jr;
      const T *apanel = ap + ir * kc, *bpanel = bp + jr * kc;
      if (mm == mr && nn == nr) {
        micro_kernel<T>(is, kc, apanel, bpanel, ct, ldc, acc);
        continue;
      }
      if (acc)
        for (int64_t i = 0; i < mm; i++)
          for (int64_t j = 0; j < nn; j++) edge[i * nr + j] = ct[i * ldc + j];
      micro_kernel<T>(is, kc, apanel, bpanel, edge, nr, acc);
      for (int64_t i = 0; i < mm; i++)
        for (int64_t j = 0; j < nn; j++) ct[i * ldc + j] = edge[i * nr + j];
    }
  }
}

const Isa &isa();
const Isa &isa_baseline();
#if defined(__x86_64__)
const Isa &isa_avx2();
bool cpu_has_avx2_fma();
// The AVX2 table with 64-byte elementwise float kernels (isa_avx512.cpp)
const Isa &isa_avx512();
bool cpu_has_avx512();
#endif

}  // namespace mgcpu

#endif
