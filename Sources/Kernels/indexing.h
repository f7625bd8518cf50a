// Shared pieces of the indexing and data-movement kernels (gather.metal, scatter.metal,
// slicing.metal): reading index arrays of any integer dtype, the update functors of scatter and
// slice updates, and atomic read-modify-write for every element size.
#pragma once
#include "utils.h"

// ---------------------------------------------------------------------------------------------
// Index arrays

// Index arrays of every integer dtype go through one kernel instance: the dtype is a runtime
// code (uniform across the grid, so the switch costs nothing measurable) instead of a template
// parameter that would multiply the instantiations. ts/backend/gpu/indexing.ts: INDEX_KIND.
enum IndexKind { IK_I8 = 0, IK_I16 = 1, IK_I32 = 2, IK_I64 = 3, IK_U8 = 4, IK_U16 = 5, IK_U32 = 6, IK_U64 = 7 };

// The index at element `e` of a binding, widened to int64. A uint64 beyond int64's range reads
// as the largest int64: out of range for every axis, as it is on the CPU.
template <typename IdxT>
MG_FUNC int64_t load_index(const device uchar* p, IdxT e, int kind) {
  switch (kind) {
    case IK_I8: return int64_t(reinterpret_cast<const device int8_t*>(p)[e]);
    case IK_I16: return int64_t(reinterpret_cast<const device int16_t*>(p)[e]);
    case IK_I32: return int64_t(reinterpret_cast<const device int32_t*>(p)[e]);
    case IK_I64: return reinterpret_cast<const device int64_t*>(p)[e];
    case IK_U8: return int64_t(p[e]);
    case IK_U16: return int64_t(reinterpret_cast<const device uint16_t*>(p)[e]);
    case IK_U32: return int64_t(reinterpret_cast<const device uint32_t*>(p)[e]);
    default: {
      uint64_t u = reinterpret_cast<const device uint64_t*>(p)[e];
      const int64_t most = metal::numeric_limits<int64_t>::max();
      return u > uint64_t(most) ? most : int64_t(u);
    }
  }
}

// A negative index counts from the end, once (MLX's offset_neg_idx); the caller checks the range.
MG_FUNC int64_t wrap_index(int64_t v, int64_t size) { return v < 0 ? v + size : v; }

// Up to four index buffers are bound per dispatch ("slots"); arrays sharing a buffer share a slot.
MG_FUNC const device uchar* slot_ptr(int s, const device uchar* s0, const device uchar* s1,
                                     const device uchar* s2, const device uchar* s3) {
  return s == 0 ? s0 : (s == 1 ? s1 : (s == 2 ? s2 : s3));
}

// Row-major strides of `shape` would make elem_to_loc the identity: contiguous arrays skip it.
template <typename IdxT>
MG_FUNC IdxT loc_of(IdxT e, bool contiguous, constant const int* shape, constant const int64_t* strides, int ndim) {
  return contiguous ? e : elem_to_loc<IdxT>(e, shape, strides, ndim);
}

// The index arrays of a gather or scatter: `count` arrays of one broadcast shape and one dtype,
// array k addressing axis axes[k] of the indexed array. Packed by ts/backend/gpu/indexing.ts.
struct IndexArrays {
  const device uchar* s0;
  const device uchar* s1;
  const device uchar* s2;
  const device uchar* s3;
  constant const int* shape;       // [ndim] the broadcast index shape
  constant const int64_t* strides; // [count][ndim] element strides of each array
  constant const int64_t* bases;   // [count] first element of each array within its slot
  constant const int* info;        // [count][2] slot, axis
  int ndim;
  int count;
  int kind;                        // IndexKind
  int contiguous;                  // bit k: array k is row-contiguous (element i is at base + i)

  // Index array k at broadcast position i, raw (not yet wrapped).
  template <typename IdxT> MG_FUNC int64_t raw(int k, IdxT i) const {
    IdxT e = IdxT(bases[k]) + loc_of<IdxT>(i, k < 31 && ((contiguous >> k) & 1) != 0, shape, strides + k * ndim, ndim);
    return load_index<IdxT>(slot_ptr(info[2 * k], s0, s1, s2, s3), e, kind);
  }
  MG_FUNC int axis(int k) const { return info[2 * k + 1]; }
};

// Where element j of the slice taken at index position i lies in an array of `shape`/`strides`
// (the gather source or the scatter output): false when outside it. Every element whose
// coordinates are in range counts, so a slice that hangs over the edge is partly read (gather)
// or partly written (scatter), as on the CPU.
template <typename IdxT>
MG_FUNC bool slice_element_loc(thread const IndexArrays& ix, IdxT i, IdxT j, constant const int* shape,
                               constant const int64_t* strides, constant const int* slice_shape, int ndim,
                               thread IdxT& loc) {
  IdxT at = 0;
  bool whole = true;
  for (int k = 0; k < ix.count; ++k) {
    int ax = ix.axis(k);
    int64_t v = wrap_index(ix.raw<IdxT>(k, i), shape[ax]);
    if (v < 0 || v > int64_t(shape[ax]) - slice_shape[ax]) {
      whole = false;
      break;
    }
    at += IdxT(v) * IdxT(strides[ax]);
  }
  if (whole) {
    loc = at + elem_to_loc<IdxT>(j, slice_shape, strides, ndim);
    return true;
  }
  // Some index is out of range for its whole slice: check coordinates one by one.
  at = 0;
  IdxT rest = j;
  for (int d = ndim - 1; d >= 0; --d) {
    int64_t c = int64_t(rest % IdxT(slice_shape[d]));
    rest /= IdxT(slice_shape[d]);
    for (int k = 0; k < ix.count; ++k) {
      if (ix.axis(k) != d) continue;
      int64_t v = wrap_index(ix.raw<IdxT>(k, i), shape[d]);
      c = v > shape[d] ? int64_t(shape[d]) : c + v;  // (a huge index must not overflow)
    }
    if (c < 0 || c >= shape[d]) return false;
    at += IdxT(c) * IdxT(strides[d]);
  }
  loc = at;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Update functors: y is the element already in the output, x the update. They compute in the
// dtype's own arithmetic: integers wrap (through unsigned arithmetic, which C++ defines), half
// rounds after each update, bfloat computes in float and rounds once, bool + is "or" and * "and"
// (C++'s bool arithmetic, as the CPU device).

template <typename T> struct wide_unsigned { typedef uint type; };
template <> struct wide_unsigned<int64_t> { typedef uint64_t type; };
template <> struct wide_unsigned<uint64_t> { typedef uint64_t type; };

struct UpdateNone {
  template <typename T> MG_FUNC T operator()(T, T x) { return x; }
};

struct UpdateSum {
  template <typename T> MG_FUNC T operator()(T y, T x) {
    typedef typename wide_unsigned<T>::type W;
    return T(W(y) + W(x));
  }
  MG_FUNC bool operator()(bool y, bool x) { return y || x; }
  MG_FUNC half operator()(half y, half x) { return y + x; }
  MG_FUNC float operator()(float y, float x) { return y + x; }
  MG_FUNC bfloat operator()(bfloat y, bfloat x) { return bfloat(float(y) + float(x)); }
  MG_FUNC complex64_t operator()(complex64_t y, complex64_t x) { return y + x; }
};

struct UpdateProd {
  template <typename T> MG_FUNC T operator()(T y, T x) {
    typedef typename wide_unsigned<T>::type W;
    return T(W(y) * W(x));
  }
  MG_FUNC bool operator()(bool y, bool x) { return y && x; }
  MG_FUNC half operator()(half y, half x) { return y * x; }
  MG_FUNC float operator()(float y, float x) { return y * x; }
  MG_FUNC bfloat operator()(bfloat y, bfloat x) { return bfloat(float(y) * float(x)); }
  MG_FUNC complex64_t operator()(complex64_t y, complex64_t x) { return y * x; }
};

// Scatter's max/min compare as MLX's scatter does, `y > x ? y : x`: a NaN update wins and a NaN
// already present loses. Complex numbers order lexicographically (real part, then imaginary).
struct UpdateMax {
  template <typename T> MG_FUNC T operator()(T y, T x) { return y > x ? y : x; }
  MG_FUNC bfloat operator()(bfloat y, bfloat x) { return float(y) > float(x) ? y : x; }
  MG_FUNC complex64_t operator()(complex64_t y, complex64_t x) {
    return (y.real > x.real || (y.real == x.real && y.imag > x.imag)) ? y : x;
  }
};
struct UpdateMin {
  template <typename T> MG_FUNC T operator()(T y, T x) { return y < x ? y : x; }
  MG_FUNC bfloat operator()(bfloat y, bfloat x) { return float(y) < float(x) ? y : x; }
  MG_FUNC complex64_t operator()(complex64_t y, complex64_t x) {
    return (y.real < x.real || (y.real == x.real && y.imag < x.imag)) ? y : x;
  }
};

// Slice updates use the elementwise maximum/minimum instead: a NaN on either side propagates.
struct UpdateMaxNan {
  template <typename T> MG_FUNC T operator()(T y, T x) { return UpdateMax()(y, x); }
  MG_FUNC half operator()(half y, half x) { return metal::isnan(y) ? y : (y > x ? y : x); }
  MG_FUNC float operator()(float y, float x) { return metal::isnan(y) ? y : (y > x ? y : x); }
  MG_FUNC bfloat operator()(bfloat y, bfloat x) { return metal::isnan(float(y)) ? y : UpdateMax()(y, x); }
};
struct UpdateMinNan {
  template <typename T> MG_FUNC T operator()(T y, T x) { return UpdateMin()(y, x); }
  MG_FUNC half operator()(half y, half x) { return metal::isnan(y) ? y : (y < x ? y : x); }
  MG_FUNC float operator()(float y, float x) { return metal::isnan(y) ? y : (y < x ? y : x); }
  MG_FUNC bfloat operator()(bfloat y, bfloat x) { return metal::isnan(float(y)) ? y : UpdateMin()(y, x); }
};

// ---------------------------------------------------------------------------------------------
// Atomic updates: out[p] = Op(out[p], x), safe against every other thread doing the same.
//
//   int, uint        native atomic_fetch_add / max / min; prod by compare-exchange
//   float            atomic_fetch_add; prod / max / min by compare-exchange on the bits
//   1- and 2-byte    compare-exchange on the 32-bit word that contains the element (the output
//                    buffer starts 4-byte aligned and its binding is rounded up to whole words)
//   int64, uint64    sum only: 32-bit adds on the low word, then the high word plus the carry —
//                    exact, since each add's carry is counted once
//   complex64        sum only: two float adds (real, imaginary)
// 64-bit prod / max / min have no atomic form here (Metal's 64-bit atomics are min/max on Apple9
// only); scatter.metal applies them in order instead (scatter_ordered).

// Bits of a 1-, 2- or 4-byte element as a uint, and back.
template <int N> struct BitsOf;
template <> struct BitsOf<1> { typedef uchar type; };
template <> struct BitsOf<2> { typedef ushort type; };
template <> struct BitsOf<4> { typedef uint type; };
template <typename T> struct ElementBits {
  typedef typename BitsOf<sizeof(T)>::type B;
  static MG_FUNC uint to(T x) { return uint(as_type<B>(x)); }
  static MG_FUNC T from(uint b) { return as_type<T>(B(b)); }
};
template <> struct ElementBits<bool> {
  static MG_FUNC uint to(bool x) { return x ? 1u : 0u; }
  static MG_FUNC bool from(uint b) { return b != 0u; }
};

// out[p] = Op(out[p], x) by compare-exchange on the 32-bit word holding element p.
template <typename Op, typename T, typename IdxT>
MG_FUNC void cas_update(device T* out, IdxT p, T x) {
  static_assert(sizeof(T) <= 4, "cas_update: elements of at most 4 bytes");
  const uint per_word = 4 / sizeof(T);
  const uint bits = 8 * sizeof(T);
  device atomic_uint* word = reinterpret_cast<device atomic_uint*>(out) + p / IdxT(per_word);
  const uint shift = uint(p % IdxT(per_word)) * bits;
  const uint mask = (0xffffffffu >> (32 - bits)) << shift;
  uint expected = atomic_load_explicit(word, memory_order_relaxed);
  for (;;) {
    T y = ElementBits<T>::from((expected & mask) >> shift);
    uint desired = (expected & ~mask) | ((ElementBits<T>::to(Op()(y, x)) << shift) & mask);
    // Unchanged (a max that loses, a sum of 0): the update takes effect at the load above.
    if (desired == expected) return;
    if (atomic_compare_exchange_weak_explicit(word, &expected, desired, memory_order_relaxed, memory_order_relaxed)) return;
  }
}

// A 64-bit add from two 32-bit adds: the low word's wraparound carries into the high word.
MG_FUNC void atomic_add_u64(device atomic_uint* w, uint64_t v) {
  uint lo = uint(v);
  uint hi = uint(v >> 32);
  uint old = atomic_fetch_add_explicit(w, lo, memory_order_relaxed);
  if (old + lo < old) hi += 1u;
  if (hi != 0u) atomic_fetch_add_explicit(w + 1, hi, memory_order_relaxed);
}

// The general case: compare-exchange (1-, 2- and 4-byte types).
template <typename Op, typename T> struct AtomicUpdate {
  template <typename IdxT> static MG_FUNC void apply(device T* out, IdxT p, T x) { cas_update<Op>(out, p, x); }
};

// Native atomics (spelled out: the Metal simulator translates address spaces before macros expand).
template <> struct AtomicUpdate<UpdateSum, float> {
  template <typename IdxT> static MG_FUNC void apply(device float* out, IdxT p, float x) {
    atomic_fetch_add_explicit(reinterpret_cast<device atomic_float*>(out) + p, x, memory_order_relaxed);
  }
};
template <> struct AtomicUpdate<UpdateSum, int32_t> {
  template <typename IdxT> static MG_FUNC void apply(device int32_t* out, IdxT p, int32_t x) {
    atomic_fetch_add_explicit(reinterpret_cast<device atomic_int*>(out) + p, x, memory_order_relaxed);
  }
};
template <> struct AtomicUpdate<UpdateMax, int32_t> {
  template <typename IdxT> static MG_FUNC void apply(device int32_t* out, IdxT p, int32_t x) {
    atomic_fetch_max_explicit(reinterpret_cast<device atomic_int*>(out) + p, x, memory_order_relaxed);
  }
};
template <> struct AtomicUpdate<UpdateMin, int32_t> {
  template <typename IdxT> static MG_FUNC void apply(device int32_t* out, IdxT p, int32_t x) {
    atomic_fetch_min_explicit(reinterpret_cast<device atomic_int*>(out) + p, x, memory_order_relaxed);
  }
};
template <> struct AtomicUpdate<UpdateSum, uint32_t> {
  template <typename IdxT> static MG_FUNC void apply(device uint32_t* out, IdxT p, uint32_t x) {
    atomic_fetch_add_explicit(reinterpret_cast<device atomic_uint*>(out) + p, x, memory_order_relaxed);
  }
};
template <> struct AtomicUpdate<UpdateMax, uint32_t> {
  template <typename IdxT> static MG_FUNC void apply(device uint32_t* out, IdxT p, uint32_t x) {
    atomic_fetch_max_explicit(reinterpret_cast<device atomic_uint*>(out) + p, x, memory_order_relaxed);
  }
};
template <> struct AtomicUpdate<UpdateMin, uint32_t> {
  template <typename IdxT> static MG_FUNC void apply(device uint32_t* out, IdxT p, uint32_t x) {
    atomic_fetch_min_explicit(reinterpret_cast<device atomic_uint*>(out) + p, x, memory_order_relaxed);
  }
};

template <> struct AtomicUpdate<UpdateSum, int64_t> {
  template <typename IdxT> static MG_FUNC void apply(device int64_t* out, IdxT p, int64_t x) {
    atomic_add_u64(reinterpret_cast<device atomic_uint*>(out) + 2 * p, as_type<uint64_t>(x));
  }
};
template <> struct AtomicUpdate<UpdateSum, uint64_t> {
  template <typename IdxT> static MG_FUNC void apply(device uint64_t* out, IdxT p, uint64_t x) {
    atomic_add_u64(reinterpret_cast<device atomic_uint*>(out) + 2 * p, x);
  }
};
template <> struct AtomicUpdate<UpdateSum, complex64_t> {
  template <typename IdxT> static MG_FUNC void apply(device complex64_t* out, IdxT p, complex64_t x) {
    device atomic_float* f = reinterpret_cast<device atomic_float*>(out) + 2 * p;
    atomic_fetch_add_explicit(f, x.real, memory_order_relaxed);
    atomic_fetch_add_explicit(f + 1, x.imag, memory_order_relaxed);
  }
};
