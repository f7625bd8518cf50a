// mgsim_simdgroup_matrix.h — metal_simdgroup_matrix: simdgroup_matrix<T, 8, 8> for float, half and
// bfloat, simdgroup_load/store/multiply/multiply_accumulate, make_filled_simdgroup_matrix.
//
// Representation: every lane holds the whole 8x8 matrix (row-major), so load, store, fill and
// multiply need no cooperation between lanes; each lane computes the same product. thread_elements()
// exposes the lane's two elements in Apple's layout (lane l holds row (q & 4) + (l / 2) % 4,
// columns (q & 2) * 2 + (l % 2) * 2 and that + 1, q = l / 4). Lanes that write those elements (as
// MLX's GEMM does) leave their copies of the other 62 stale, so the matrix remembers it: the next
// multiply or store first gathers every lane's two elements through the execution layer's
// simdgroup_allgather collective. Kernels that never take thread_elements() never reference it.
//
// Arithmetic: D = A * B + C accumulates in float, fused multiply-add over k = 0..7 starting from
// C's element, and rounds once to D's element type (also for half and bfloat matrices; mixed element
// types per operand are allowed, as in MSL).
//
// Addressing (elements_per_row = stride in elements, matrix_origin = (column, row) of the tile):
//   element (r, c) is src[(origin.y + r) * stride + origin.x + c], or with transpose_matrix
//   src[(origin.x + c) * stride + origin.y + r]: the origin is in the loaded matrix's coordinates
//   (MSL's Table 6.9 leaves this implicit; lane-level reimplementations written to match the
//   hardware, such as metal-flash-attention's, address it so; test_simdgroup_matrix pins it).
//   Memory is reached only through
//   mgsim_resolve(row pointer, 8, write), one call per memory row.
#ifndef MGSIM_SIMDGROUP_MATRIX_H
#define MGSIM_SIMDGROUP_MATRIX_H

#include "mgsim_atomic.h"

namespace mgsim {
// Collective over the calling lane's simdgroup, defined by the execution layer: every live lane
// passes `bytes` bytes at `mine`; every lane receives at `all + lane * bytes` what each live lane
// passed (slots of lanes that are not running are left untouched).
void simdgroup_allgather(const void *mine, void *all, unsigned bytes);
}  // namespace mgsim

namespace metal {

template <class T, int Cols, int Rows>
struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "metalgrad MSL simulator: simdgroup_matrix is 8x8 only");
  static_assert(std::is_same<T, float>::value || std::is_same<T, half>::value || std::is_same<T, bfloat>::value,
                "MSL: simdgroup_matrix holds float, half or bfloat");

  // Row-major pairs: element (r, c) is mg_p[r * 4 + c / 2][c % 2]. Real vec<T, 2> objects, so the
  // reference thread_elements() returns (and MLX reinterpret_casts) aliases nothing else.
  vec<T, 2> mg_p[32];
  // Non-null after thread_elements() was taken for writing: gathers the lanes' elements.
  void (*mg_sync)(simdgroup_matrix &) = nullptr;

  simdgroup_matrix() = default;
  // A diagonal matrix with dval on the diagonal.
  simdgroup_matrix(T dval) {
    for (int i = 0; i < 64; ++i) mg_at(i) = (i % 9 == 0) ? dval : T(0);
  }

  constexpr T &mg_at(int i) { return mg_p[i >> 1].mg_e[i & 1]; }
  constexpr const T &mg_at(int i) const { return mg_p[i >> 1].mg_e[i & 1]; }
  // The 64 elements, row-major and contiguous (the pairs hold nothing else).
  T *mg_data() { return &mg_p[0].mg_e[0]; }
  const T *mg_data() const { return &mg_p[0].mg_e[0]; }
  // The lane's pair: row (q & 4) + (lane / 2) % 4, columns (q & 2) * 2 + (lane % 2) * 2 (+1).
  static constexpr int mg_pair(unsigned lane) {
    const unsigned q = lane / 4;
    const unsigned row = (q & 4u) + (lane / 2) % 4, col = (q & 2u) * 2 + (lane % 2) * 2;
    return int(row * 4 + col / 2);
  }
  vec<T, 2> &thread_elements() {
    mg_sync = &mg_gather;
    return mg_p[mg_pair(::mgsim::simd_lane_id())];
  }
  const vec<T, 2> &thread_elements() const { return mg_p[mg_pair(::mgsim::simd_lane_id())]; }
  static void mg_gather(simdgroup_matrix &m) {
    vec<T, 2> pairs[32];
    for (unsigned l = 0; l < 32; ++l) pairs[l] = m.mg_p[mg_pair(l)];
    const vec<T, 2> own = m.mg_p[mg_pair(::mgsim::simd_lane_id())];
    ::mgsim::simdgroup_allgather(&own, pairs, unsigned(sizeof(own)));
    for (unsigned l = 0; l < 32; ++l) m.mg_p[mg_pair(l)] = pairs[l];
    m.mg_sync = nullptr;
  }
};
static_assert(sizeof(vec<float, 2>) == 2 * sizeof(float) && sizeof(vec<half, 2>) == 2 * sizeof(half),
              "[mgsim] simdgroup_matrix elements must be contiguous");
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <class T, int Cols, int Rows>
inline simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(const T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  T *e = m.mg_data();
  for (int i = 0; i < 64; ++i) e[i] = value;
  return m;
}

}  // namespace metal

namespace mgsim {
// A simdgroup-wide access (simdgroup_load / store): the execution layer's checked pointer brings
// its own overload (found by ADL); anything else resolves as an ordinary access.
template <class P>
auto mgsim_resolve_sg(const P &p, size_t count, bool write) -> decltype(mgsim_resolve(p, count, write)) {
  return mgsim_resolve(p, count, write);
}
namespace lang {
namespace sgm {

template <class T>
inline ::metal::simdgroup_matrix<T, 8, 8> synced(const ::metal::simdgroup_matrix<T, 8, 8> &m) {
  ::metal::simdgroup_matrix<T, 8, 8> r = m;
  if (r.mg_sync) r.mg_sync(r);
  return r;
}
// The matrix itself when no lane's thread_elements() write is pending, else a gathered copy in tmp.
template <class T>
inline const ::metal::simdgroup_matrix<T, 8, 8> &synced_ref(const ::metal::simdgroup_matrix<T, 8, 8> &m,
                                                          ::metal::simdgroup_matrix<T, 8, 8> &tmp) {
  if (!m.mg_sync) return m;
  tmp = m;
  tmp.mg_sync(tmp);
  return tmp;
}
template <class P>
auto row_ptr(const P &p, size_t offset, bool write) -> decltype(mgsim_resolve_sg(p + offset, size_t(8), write)) {
  // A simdgroup-wide access: every lane of the simdgroup makes it together (race detection).
  return mgsim_resolve_sg(p + offset, size_t(8), write);
}
template <class P>
using elem_t = std::remove_cv_t<std::remove_pointer_t<decltype(row_ptr(std::declval<const P &>(), 0, false))>>;

// d = a * b + c on row-major 8x8 float tiles. Every element accumulates k = 0..7 in order from c's
// element with one rounding per step. Built for the CPU's FMA unit when the compile driver found
// one (MGSIM_HAVE_FMA): the eight rows' accumulators stay in vector registers, each k a broadcast
// of a's column and one fused multiply-add per row. Kept out of line so only this function carries
// that instruction set. d may be any of a, b, c (it is written last).
#if defined(MGSIM_HAVE_FMA) && defined(__x86_64__)
typedef float mma_v8 __attribute__((vector_size(32), aligned(4)));
__attribute__((target("avx,fma"), noinline)) inline void mma8(float *d, const float *a, const float *b,
                                                               const float *c) {
  mma_v8 acc[8];
  for (int i = 0; i < 8; ++i) acc[i] = *reinterpret_cast<const mma_v8 *>(c + i * 8);
  for (int k = 0; k < 8; ++k) {
    const mma_v8 bk = *reinterpret_cast<const mma_v8 *>(b + k * 8);
    for (int i = 0; i < 8; ++i) acc[i] = __builtin_ia32_vfmaddps256(mma_v8{} + a[i * 8 + k], bk, acc[i]);
  }
  for (int i = 0; i < 8; ++i) *reinterpret_cast<mma_v8 *>(d + i * 8) = acc[i];
}
#else
inline void mma8(float *d, const float *a, const float *b, const float *c) {
  float out[64];
  for (int i = 0; i < 8; ++i) {
    float s[8];
    for (int j = 0; j < 8; ++j) s[j] = c[i * 8 + j];
    for (int k = 0; k < 8; ++k) {
      const float a_ik = a[i * 8 + k];
      for (int j = 0; j < 8; ++j) s[j] = __builtin_fmaf(a_ik, b[k * 8 + j], s[j]);
    }
    for (int j = 0; j < 8; ++j) out[i * 8 + j] = s[j];
  }
  for (int i = 0; i < 64; ++i) d[i] = out[i];
}
#endif

}  // namespace sgm
}  // namespace lang
}  // namespace mgsim

namespace metal {

template <class T, class P>
inline void simdgroup_load(simdgroup_matrix<T, 8, 8> &d, P src, ulong elements_per_row = 8,
                           ulong2 matrix_origin = ulong2(0), bool transpose_matrix = false) {
  static_assert(std::is_same<mgsim::lang::sgm::elem_t<P>, T>::value,
                "simdgroup_load: the source's element type must be the matrix's element type");
  const ulong ox = matrix_origin.x, oy = matrix_origin.y;
  T *out = d.mg_data();
  for (int i = 0; i < 8; ++i) {
    if (!transpose_matrix) {  // memory row oy + i holds matrix row i
      const auto *row = mgsim::lang::sgm::row_ptr(src, (oy + ulong(i)) * elements_per_row + ox, false);
      __builtin_memcpy(static_cast<void *>(out + i * 8), static_cast<const void *>(row), 8 * sizeof(T));
    } else {  // memory row ox + i holds matrix column i
      const auto *row = mgsim::lang::sgm::row_ptr(src, (ox + ulong(i)) * elements_per_row + oy, false);
      for (int r = 0; r < 8; ++r) out[r * 8 + i] = row[r];
    }
  }
  d.mg_sync = nullptr;
}

template <class T, class P>
inline void simdgroup_store(const simdgroup_matrix<T, 8, 8> &a, P dst, ulong elements_per_row = 8,
                            ulong2 matrix_origin = ulong2(0), bool transpose_matrix = false) {
  static_assert(std::is_same<mgsim::lang::sgm::elem_t<P>, T>::value,
                "simdgroup_store: the destination's element type must be the matrix's element type");
  simdgroup_matrix<T, 8, 8> tmp;
  const simdgroup_matrix<T, 8, 8> &m = mgsim::lang::sgm::synced_ref(a, tmp);
  const ulong ox = matrix_origin.x, oy = matrix_origin.y;
  for (int i = 0; i < 8; ++i) {
    if (!transpose_matrix) {
      auto *row = mgsim::lang::sgm::row_ptr(dst, (oy + ulong(i)) * elements_per_row + ox, true);
      __builtin_memcpy(static_cast<void *>(row), static_cast<const void *>(m.mg_data() + i * 8), 8 * sizeof(T));
    } else {
      auto *row = mgsim::lang::sgm::row_ptr(dst, (ox + ulong(i)) * elements_per_row + oy, true);
      for (int r = 0; r < 8; ++r) row[r] = m.mg_at(r * 8 + i);
    }
  }
}

// d = a * b + c
template <class TD, class TA, class TB, class TC>
inline void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8> &d, const simdgroup_matrix<TA, 8, 8> &a,
                                          const simdgroup_matrix<TB, 8, 8> &b,
                                          const simdgroup_matrix<TC, 8, 8> &c) {
  simdgroup_matrix<TA, 8, 8> ta;
  simdgroup_matrix<TB, 8, 8> tb;
  simdgroup_matrix<TC, 8, 8> tc;
  const auto &A = mgsim::lang::sgm::synced_ref(a, ta);
  const auto &B = mgsim::lang::sgm::synced_ref(b, tb);
  const auto &C = mgsim::lang::sgm::synced_ref(c, tc);
  if constexpr (std::is_same<TA, float>::value && std::is_same<TB, float>::value && std::is_same<TC, float>::value &&
                std::is_same<TD, float>::value) {
    // All float: straight on the elements (mma8 writes d last, so d may be a, b or c).
    mgsim::lang::sgm::mma8(d.mg_data(), A.mg_data(), B.mg_data(), C.mg_data());
  } else {
    float fa[64], fb[64], fc[64], fd[64];
    for (int i = 0; i < 64; ++i) {
      fa[i] = float(A.mg_at(i));
      fb[i] = float(B.mg_at(i));
      fc[i] = float(C.mg_at(i));
    }
    mgsim::lang::sgm::mma8(fd, fa, fb, fc);
    for (int i = 0; i < 64; ++i) d.mg_at(i) = static_cast<TD>(fd[i]);
  }
  d.mg_sync = nullptr;
}

// d = a * b
template <class TD, class TA, class TB>
inline void simdgroup_multiply(simdgroup_matrix<TD, 8, 8> &d, const simdgroup_matrix<TA, 8, 8> &a,
                               const simdgroup_matrix<TB, 8, 8> &b) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<TD, 8, 8>(TD(0)));
}

}  // namespace metal

#endif  // MGSIM_SIMDGROUP_MATRIX_H
