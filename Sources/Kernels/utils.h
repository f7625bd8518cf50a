// Shared helpers for metalgrad's kernels: complex64, compute types for 16-bit floats, strided
// indexing. Included (inlined) by every kernel file.
#pragma once
#include <metal_stdlib>
using namespace metal;

#define MG_FUNC inline __attribute__((always_inline))

// complex64: two floats, the layout of MLX's (and C's) complex<float>.
struct complex64_t {
  float real;
  float imag;
};

MG_FUNC complex64_t make_complex(float r, float i) {
  complex64_t z;
  z.real = r;
  z.imag = i;
  return z;
}
MG_FUNC complex64_t operator+(complex64_t a, complex64_t b) { return make_complex(a.real + b.real, a.imag + b.imag); }
MG_FUNC complex64_t operator-(complex64_t a, complex64_t b) { return make_complex(a.real - b.real, a.imag - b.imag); }
MG_FUNC complex64_t operator-(complex64_t a) { return make_complex(-a.real, -a.imag); }
MG_FUNC complex64_t operator*(complex64_t a, complex64_t b) {
  return make_complex(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real);
}
// Smith's algorithm: avoids overflow in |b|².
MG_FUNC complex64_t operator/(complex64_t a, complex64_t b) {
  if (metal::abs(b.real) >= metal::abs(b.imag)) {
    float r = b.imag / b.real;
    float den = b.real + b.imag * r;
    return make_complex((a.real + a.imag * r) / den, (a.imag - a.real * r) / den);
  }
  float r = b.real / b.imag;
  float den = b.real * r + b.imag;
  return make_complex((a.real * r + a.imag) / den, (a.imag * r - a.real) / den);
}
MG_FUNC bool operator==(complex64_t a, complex64_t b) { return a.real == b.real && a.imag == b.imag; }
MG_FUNC bool operator!=(complex64_t a, complex64_t b) { return !(a == b); }
// Lexicographic order, real part first (MLX's complex64_t comparisons; NaN parts compare false).
MG_FUNC bool operator>(complex64_t a, complex64_t b) { return a.real > b.real || (a.real == b.real && a.imag > b.imag); }
MG_FUNC bool operator>=(complex64_t a, complex64_t b) { return a.real > b.real || (a.real == b.real && a.imag >= b.imag); }
MG_FUNC bool operator<(complex64_t a, complex64_t b) { return b > a; }
MG_FUNC bool operator<=(complex64_t a, complex64_t b) { return b >= a; }

// Conversions to and from complex64 (C-cast semantics: complex → real keeps the real part).
template <typename T> struct ComplexCast {
  static MG_FUNC complex64_t to(T x) { return make_complex(float(x), 0.0f); }
  static MG_FUNC T from(complex64_t z) { return T(z.real); }
};
template <> struct ComplexCast<bool> {
  static MG_FUNC complex64_t to(bool x) { return make_complex(x ? 1.0f : 0.0f, 0.0f); }
  static MG_FUNC bool from(complex64_t z) { return z.real != 0.0f || z.imag != 0.0f; }
};

// The type arithmetic on T is carried out in: bfloat computes in float and rounds once.
template <typename T> struct compute_type { typedef T type; };
template <> struct compute_type<bfloat> { typedef float type; };

// Strided indexing: the element offset of row-major index `elem` in a view with `shape`/`strides`.
template <typename IdxT>
MG_FUNC IdxT elem_to_loc(IdxT elem, constant const int* shape, constant const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += IdxT(elem % IdxT(shape[i])) * IdxT(strides[i]);
    elem /= IdxT(shape[i]);
  }
  return loc;
}

// Integer division rounding toward negative infinity (Python's //); x / 0 is 0 (C would trap).
template <typename T>
MG_FUNC T floor_div_int(T a, T b) {
  if (b == 0) return 0;                      // MLX's definition (C would trap)
  // INT_MIN / -1 traps on x86: negate in unsigned arithmetic, so INT_MIN wraps to itself
  if (T(-1) < T(0) && b == T(-1)) return sizeof(T) == 8 ? T(0ul - ulong(a)) : T(0u - uint(a));
  T q = a / b;
  T r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) q -= 1;
  return q;
}

// Python's %: the result takes the divisor's sign; x % 0 is x for integers (MLX), x % -1 is 0.
template <typename T>
MG_FUNC T floor_mod_int(T a, T b) {
  if (b == 0) return a;
  if (T(-1) < T(0) && b == T(-1)) return 0;
  T r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

template <typename T>
MG_FUNC T ceildiv(T a, T b) { return (a + b - 1) / b; }
