// Elementwise float kernels on 64-byte vectors (AVX-512: 16 floats / 8 doubles a register, 32
// registers), chosen at run time when the CPU has AVX-512 F/DQ/BW/VL; every other entry of the ISA
// table (reductions, softmax, GEMM, FFT, quantized products, casts, integer ops) is the AVX2 one.
// Why only these: they are lane-wise, so an element's bits are the AVX2 kernels' bits (same FMA
// polynomials from vec_impl.h, same IEEE operations) — fused chains, tests and results stay the
// same across the two ISAs — while the float32 math runs ~2.4× faster (the AVX2 tanh spills its 16
// registers; here it has 32 and twice the lanes). Reductions keep the AVX2 lane order (their sums
// would change with the width).
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "mgcpu.h"

#pragma clang attribute push(__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,f16c"))), apply_to = function)
namespace mgcpu {
namespace avx512 {
#define MG_FMA 1
#define MG_VBYTES 64
#include "vec_impl.h"
#undef MG_VBYTES
#undef MG_FMA

template <class V> static inline V vload(const void *p) {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
template <class V> static inline void vstore(void *p, V v) { __builtin_memcpy(p, &v, sizeof v); }

// Unary kernels: vec_impl.h's k_vunary, on these 64-byte vectors.

// dst[i] = f(x[i], y[i]) for exact IEEE operations (one rounding per element: any width gives the
// same bits), two vectors per step; a scalar operand (mask bit) is broadcast.
template <class T, class F>
static void k_vbinary(void *dst, const void *a, const void *b, const void *, int64_t n, int mask) {
  using V = typename vec_of<T>::type;
  constexpr int L = int(sizeof(V) / sizeof(T));
  F f{};
  T *d = static_cast<T *>(dst);
  const T *x = static_cast<const T *>(a);
  const T *y = static_cast<const T *>(b);
  int64_t i = 0;
  // after the two-vector steps: one vector, then the last < L elements padded
  auto rest = [&](V xs, V ys, bool sx, bool sy) {
    for (; i + L <= n; i += L) vstore(d + i, f(sx ? xs : vload<V>(x + i), sy ? ys : vload<V>(y + i)));
    if (i >= n) return;
    alignas(64) T tx[L] = {}, ty[L] = {};
    for (int64_t j = i; j < n; j++) {
      tx[j - i] = sx ? xs[0] : x[j];
      ty[j - i] = sy ? ys[0] : y[j];
    }
    const V r = f(vload<V>(tx), vload<V>(ty));
    for (int64_t j = i; j < n; j++) d[j] = r[j - i];
  };
  switch (mask & 3) {
    case 0:
      for (; i + 2 * L <= n; i += 2 * L) {
        const V r0 = f(vload<V>(x + i), vload<V>(y + i)), r1 = f(vload<V>(x + i + L), vload<V>(y + i + L));
        vstore(d + i, r0);
        vstore(d + i + L, r1);
      }
      rest(V{}, V{}, false, false);
      break;
    case 1: {
      const V xv = splat_of<V>(x[0]);
      for (; i + 2 * L <= n; i += 2 * L) {
        const V r0 = f(xv, vload<V>(y + i)), r1 = f(xv, vload<V>(y + i + L));
        vstore(d + i, r0);
        vstore(d + i + L, r1);
      }
      rest(xv, V{}, true, false);
      break;
    }
    case 2: {
      const V yv = splat_of<V>(y[0]);
      for (; i + 2 * L <= n; i += 2 * L) {
        const V r0 = f(vload<V>(x + i), yv), r1 = f(vload<V>(x + i + L), yv);
        vstore(d + i, r0);
        vstore(d + i + L, r1);
      }
      rest(V{}, yv, false, true);
      break;
    }
    default: {
      const T v = f(splat_of<V>(x[0]), splat_of<V>(y[0]))[0];
      for (; i < n; i++) d[i] = v;
    }
  }
}

// The float semantics of kernels_impl.h's scalar lambdas, lane-wise: maximum/minimum return x when
// x is NaN, else the larger/smaller (a NaN y compares false and is returned).
struct Add { template <class V> V operator()(V x, V y) const { return x + y; } };
struct Sub { template <class V> V operator()(V x, V y) const { return x - y; } };
struct Mul { template <class V> V operator()(V x, V y) const { return x * y; } };
struct Div { template <class V> V operator()(V x, V y) const { return x / y; } };
struct Max {
  template <class V> V operator()(V x, V y) const {
    const auto keep_x = (x != x) | (x > y);
    return keep_x ? x : y;
  }
};
struct Min {
  template <class V> V operator()(V x, V y) const {
    const auto keep_x = (x != x) | (x < y);
    return keep_x ? x : y;
  }
};
struct Neg { template <class V> V operator()(V x) const { return -x; } };
struct Square { template <class V> V operator()(V x) const { return x * x; } };
struct Sqrt { template <class V> V operator()(V x) const { return __builtin_elementwise_sqrt(x); } };
struct Abs { template <class V> V operator()(V x) const { return __builtin_elementwise_abs(x); } };
struct Exp { vf operator()(vf x) const { return vexp(x); } };
struct Log { vf operator()(vf x) const { return vlog(x); } };
struct Tanh { vf operator()(vf x) const { return vtanh(x); } };
struct Sigmoid { vf operator()(vf x) const { return vsigmoid(x); } };
struct Erf { vf operator()(vf x) const { return verf(x); } };

template <class T> static KernelFn exact_kernel(int op) {
  switch (op) {
    case OpAdd: return &k_vbinary<T, Add>;
    case OpSubtract: return &k_vbinary<T, Sub>;
    case OpMultiply: return &k_vbinary<T, Mul>;
    case OpDivide: return &k_vbinary<T, Div>;
    case OpMaximum: return &k_vbinary<T, Max>;
    case OpMinimum: return &k_vbinary<T, Min>;
    case OpNegative: return &k_vunary<T, Neg>;
    case OpSquare: return &k_vunary<T, Square>;
    case OpSqrt: return &k_vunary<T, Sqrt>;
    case OpAbs: return &k_vunary<T, Abs>;
    default: return nullptr;
  }
}

// The kernels this file has for (op, dtype → out); nullptr: take the AVX2 table's.
static KernelFn kernel(int op, int dtype, int out) {
  if (out != dtype) return nullptr;
  if (dtype == F64) return exact_kernel<double>(op);
  // float16/bfloat16 run on float32 values and are rounded to their grid after every instruction
  // (the interpreter's round_grid), as on AVX2: the same float32 kernels serve them
  if (dtype != F32 && dtype != F16 && dtype != BF16) return nullptr;
  switch (op) {
    case OpExp: return &k_vunary<float, Exp>;
    case OpLog: return &k_vunary<float, Log>;
    case OpTanh: return &k_vunary<float, Tanh>;
    case OpSigmoid: return &k_vunary<float, Sigmoid>;
    case OpErf: return &k_vunary<float, Erf>;
    default: return exact_kernel<float>(op);
  }
}

}  // namespace avx512
}  // namespace mgcpu
#pragma clang attribute pop

namespace mgcpu {

namespace {
KernelFn kernel_avx512(int op, int dtype, int out) {
  if (KernelFn f = avx512::kernel(op, dtype, out)) return f;
  return isa_avx2().kernel(op, dtype, out);
}
}  // namespace

const Isa &isa_avx512() {
  static const Isa table = [] {
    Isa t = isa_avx2();
    t.name = "avx512";
    t.kernel = kernel_avx512;
    return t;
  }();
  return table;
}

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return cpu_has_avx2_fma() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

}  // namespace mgcpu
#endif
