// Updates into a copy of an array (Scatter, ScatterAxis, SliceUpdate — and DynamicSliceUpdate,
// which the binding turns into a SliceUpdate once its start is read): out = src, then every update
// element is combined into its destination in order, so duplicate indices all apply, one after the
// other (MLX's CPU order). Combining follows the reference (ts/backend/cpu/indexing.ts) dtype by
// dtype: assignment moves raw items; + and × are the dtype's own (floats exact-then-rounded,
// bfloat16 through float32, integers wrapping, bool or/and); max/min are MLX's scatter comparisons
// (y > x ? y : x: a NaN update wins, a NaN already present loses) or, for slice updates, the
// NaN-propagating elementwise maximum; complex values as the reference's float64 formulas. An index
// outside the array (after one wrap of a negative one) makes the call unsupported before anything
// is written: the reference then drops the update or reports it, as configured.
#include <algorithm>
#include <cstring>
#include <initializer_list>

#include "MGCpu.h"
#include "mgcpu.h"

namespace mgcpu {

namespace {

enum Mode { MNone = 0, MSum = 1, MProd = 2, MMax = 3, MMin = 4 };

using CombineFn = void (*)(char *d, const char *s);

template <class T> inline T rd(const char *p) { T v; std::memcpy(&v, p, sizeof v); return v; }
template <class T> inline void wr(char *p, T v) { std::memcpy(p, &v, sizeof v); }

// Numbers held exactly in a double (floats, and integers below 2^53 in magnitude).
template <class T, int M, bool NANMAX> void comb_num(char *d, const char *s) {
  const T y = rd<T>(d), x = rd<T>(s);
  T r;
  if constexpr (M == MSum) r = T(y + x);
  else if constexpr (M == MProd) r = T(y * x);
  else if constexpr (M == MMax) r = NANMAX ? (y != y ? y : y > x ? y : x) : (y > x ? y : x);
  else r = NANMAX ? (y != y ? y : y < x ? y : x) : (y < x ? y : x);
  wr<T>(d, r);
}

// Integers: wrapping + and × (unsigned arithmetic of the storage width).
template <class T, class U, int M> void comb_int(char *d, const char *s) {
  const T y = rd<T>(d), x = rd<T>(s);
  T r;
  if constexpr (M == MSum) r = T(U(y) + U(x));
  else if constexpr (M == MProd) r = T(U(y) * U(x));
  else if constexpr (M == MMax) r = y > x ? y : x;
  else r = y < x ? y : x;
  wr<T>(d, r);
}

template <int M> void comb_bool(char *d, const char *s) {
  const uint8_t y = uint8_t(*d), x = uint8_t(*s);
  *d = char(M == MSum || M == MMax ? (y || x) : (y && x));
}

// 16-bit floats: the double result rounded once to the dtype (bfloat16 through float32).
template <bool BF, int M, bool NANMAX> void comb_half(char *d, const char *s) {
  const uint16_t yb = rd<uint16_t>(d), xb = rd<uint16_t>(s);
  const double y = BF ? bf16_to_f32(yb) : f16_to_f32(yb), x = BF ? bf16_to_f32(xb) : f16_to_f32(xb);
  double r;
  if constexpr (M == MSum) r = y + x;
  else if constexpr (M == MProd) r = y * x;
  else if constexpr (M == MMax) r = NANMAX ? (y != y ? y : y > x ? y : x) : (y > x ? y : x);
  else r = NANMAX ? (y != y ? y : y < x ? y : x) : (y < x ? y : x);
  wr<uint16_t>(d, BF ? f32_to_bf16(float(r)) : f64_to_f16(r));
}

template <int M> void comb_complex(char *d, const char *s) {
  float *y = reinterpret_cast<float *>(d);
  const float *x = reinterpret_cast<const float *>(s);
  const double a = y[0], b = y[1], c = x[0], e = x[1];
  if constexpr (M == MSum) {
    y[0] = float(a + c);
    y[1] = float(b + e);
  } else if constexpr (M == MProd) {
    y[0] = float(a * c - b * e);
    y[1] = float(a * e + b * c);
  } else {
    const double sign = M == MMax ? 1 : -1;
    const bool y_wins = sign * (a - c) > 0 || (a == c && sign * (b - e) > 0);
    if (!y_wins) {
      y[0] = x[0];
      y[1] = x[1];
    }
  }
}

template <int M, bool NANMAX> CombineFn pick(int dtype) {
  switch (dtype) {
    case Bool: return comb_bool<M>;
    case U8: return comb_int<uint8_t, uint32_t, M>;
    case U16: return comb_int<uint16_t, uint32_t, M>;
    case U32: return comb_int<uint32_t, uint32_t, M>;
    case U64: return comb_int<uint64_t, uint64_t, M>;
    case I8: return comb_int<int8_t, uint32_t, M>;
    case I16: return comb_int<int16_t, uint32_t, M>;
    case I32: return comb_int<int32_t, uint32_t, M>;
    case I64: return comb_int<int64_t, uint64_t, M>;
    case F16: return comb_half<false, M, NANMAX>;
    case BF16: return comb_half<true, M, NANMAX>;
    case F32: return comb_num<float, M, NANMAX>;
    case F64: return comb_num<double, M, NANMAX>;
    default: return comb_complex<M>;
  }
}

CombineFn combiner(int dtype, int mode, bool nanmax) {
  switch (mode) {
    case MSum: return pick<MSum, false>(dtype);
    case MProd: return pick<MProd, false>(dtype);
    case MMax: return nanmax ? pick<MMax, true>(dtype) : pick<MMax, false>(dtype);
    default: return nanmax ? pick<MMin, true>(dtype) : pick<MMin, false>(dtype);
  }
}

// An index value as an int64 (integer and bool dtypes); false otherwise.
bool index_at(const char *base, int dtype, int64_t off, int64_t *v) {
  switch (dtype) {
    case Bool: case U8: *v = reinterpret_cast<const uint8_t *>(base)[off]; return true;
    case U16: *v = reinterpret_cast<const uint16_t *>(base)[off]; return true;
    case U32: *v = reinterpret_cast<const uint32_t *>(base)[off]; return true;
    case U64: {
      const uint64_t u = reinterpret_cast<const uint64_t *>(base)[off];
      *v = u > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(u);
      return true;
    }
    case I8: *v = reinterpret_cast<const int8_t *>(base)[off]; return true;
    case I16: *v = reinterpret_cast<const int16_t *>(base)[off]; return true;
    case I32: *v = reinterpret_cast<const int32_t *>(base)[off]; return true;
    case I64: *v = reinterpret_cast<const int64_t *>(base)[off]; return true;
    default: return false;
  }
}

// Offset of row-major element i of `shape` under `strides`.
inline int64_t offset_of(int nd, const int64_t *shape, const int64_t *strides, int64_t i) {
  int64_t off = 0;
  for (int d = nd - 1; d >= 0; d--) {
    off += (i % shape[d]) * strides[d];
    i /= shape[d];
  }
  return off;
}

// Row-major positions of a shape walked in order, carrying up to three operands' offsets.
struct Walk {
  int nd;
  const int64_t *shape;
  int n;
  const int64_t *st[3];
  int64_t c[MAX_DIMS] = {0};
  int64_t off[3] = {0, 0, 0};
  Walk(int nd_, const int64_t *shape_, std::initializer_list<const int64_t *> strides) : nd(nd_), shape(shape_), n(0) {
    for (const int64_t *p : strides) st[n++] = p;
  }
  void next() {
    for (int d = nd - 1; d >= 0; d--) {
      c[d]++;
      for (int k = 0; k < n; k++) off[k] += st[k][d];
      if (c[d] < shape[d]) return;
      for (int k = 0; k < n; k++) off[k] -= shape[d] * st[k][d];
      c[d] = 0;
    }
  }
};

// n raw items from src (item stride ss) to dst (item stride ds): typed moves for the common item
// sizes (a memcpy call per item otherwise dominates a copy).
template <class U> void move_items(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n) {
  U *d = reinterpret_cast<U *>(dst);
  const U *s = reinterpret_cast<const U *>(src);
  if (ds == 1 && ss == 1) {
    std::memcpy(d, s, size_t(n) * sizeof(U));
  } else if (ss == 0) {
    const U v = s[0];
    for (int64_t k = 0; k < n; k++) d[k * ds] = v;
  } else {
    for (int64_t k = 0; k < n; k++) d[k * ds] = s[k * ss];
  }
}

void copy_items(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n, int esize) {
  switch (esize) {
    case 1: move_items<uint8_t>(dst, ds, src, ss, n); break;
    case 2: move_items<uint16_t>(dst, ds, src, ss, n); break;
    case 4: move_items<uint32_t>(dst, ds, src, ss, n); break;
    case 8: move_items<uint64_t>(dst, ds, src, ss, n); break;
    default:
      for (int64_t k = 0; k < n; k++) std::memcpy(dst + k * ds * esize, src + k * ss * esize, size_t(esize));
  }
}

// out (row-major) ← src (strided), raw items.
void copy_in(int nd, const int64_t *shape, const char *src, const int64_t *sst, char *out, int esize) {
  const int64_t total = size_of(nd, shape);
  bool dense = true;
  int64_t acc = 1;
  for (int d = nd - 1; d >= 0; d--) {
    if (shape[d] != 1 && sst[d] != acc) dense = false;
    acc *= shape[d];
  }
  if (dense || nd == 0) {
    std::memcpy(out, src, size_t(total) * size_t(esize));
    return;
  }
  const int last = nd - 1;
  const int64_t rows = total / shape[last];
  for (int64_t r = 0; r < rows; r++) {
    int64_t off = 0, rest = r;
    for (int d = last - 1; d >= 0; d--) {
      off += (rest % shape[d]) * sst[d];
      rest /= shape[d];
    }
    copy_items(out + r * shape[last] * esize, 1, src + off * esize, sst[last], shape[last], esize);
  }
}

}  // namespace

// [dtype, mode (0 assign, 1 sum, 2 prod, 3 max, 4 min), NaN-propagating max/min, ndim, shape…,
//  src, src strides…, output (row-major), kind, update ndim, update shape…, update, update
//  strides…, then by kind:
//    0 slice:   base offset, region strides (update ndim)…          (output elements)
//    1 axis:    axis, indices, index dtype, index strides (update ndim)…  (index shape = update's)
//    2 scatter: index count, (indices, index dtype, index strides (index ndim)…)×count, axes…
//               (index ndim = update ndim − ndim; the update's leading dims are the index shape)]
int scatter(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_scatter";
  Reader r(desc, words, fn);
  const int dtype = r.dtype("dtype");
  const int mode = int(r.integer(0, 4, "mode"));
  const bool nanmax = r.integer(0, 1, "NaN max") == 1;
  const int nd = int(r.integer(0, MAX_DIMS, "ndim"));
  int64_t shape[MAX_DIMS], sst[MAX_DIMS], ost[MAX_DIMS];
  if (!read_shape(r, nd, shape)) return fail(fn, r.error);
  const char *src = r.pointer("source");
  if (!read_strides(r, nd, sst)) return fail(fn, r.error);
  char *out = r.pointer("output");
  const int kind = int(r.integer(0, 2, "kind"));
  const int und = int(r.integer(0, MAX_DIMS, "update ndim"));
  int64_t ushape[MAX_DIMS], ust[MAX_DIMS];
  if (!read_shape(r, und, ushape)) return fail(fn, r.error);
  const char *upd = r.pointer("updates");
  if (!read_strides(r, und, ust)) return fail(fn, r.error);
  const int64_t bigs = int64_t(1) << 52;
  int64_t base = 0, rst[MAX_DIMS];
  int axis = 0, nidx = 0, ind = 0;
  const char *iptr[MAX_DIMS];
  int idt[MAX_DIMS];
  int64_t ist[MAX_DIMS][MAX_DIMS];
  int axes[MAX_DIMS];
  if (kind == 0) {
    base = r.integer(0, bigs, "base offset");
    if (!read_strides(r, und, rst)) return fail(fn, r.error);
  } else if (kind == 1) {
    axis = int(r.integer(0, std::max(0, nd - 1), "axis"));
    iptr[0] = r.pointer("indices");
    idt[0] = r.dtype("index dtype");
    if (!read_strides(r, und, ist[0])) return fail(fn, r.error);
  } else {
    nidx = int(r.integer(0, nd, "index count"));
    ind = und - nd;
    if (ind < 0) return fail(fn, "updates have fewer dimensions than the array");
    for (int k = 0; k < nidx; k++) {
      iptr[k] = r.pointer("indices");
      idt[k] = r.dtype("index dtype");
      if (!read_strides(r, ind, ist[k])) return fail(fn, r.error);
    }
    for (int k = 0; k < nidx; k++) axes[k] = int(r.integer(0, std::max(0, nd - 1), "axis"));
  }
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  const int esize = dtype_size(dtype);
  const int64_t total = size_of(nd, shape);
  if (total == 0) return MGCPU_OK;
  if (!src || !out) return fail(fn, "null operand");
  int64_t acc = 1;
  for (int d = nd - 1; d >= 0; d--) {
    ost[d] = acc;
    acc *= shape[d];
  }
  const int64_t ucount = size_of(und, ushape);
  if (ucount > 0 && !upd) return fail(fn, "null updates");
  // check every index before anything is written
  if (kind == 1 && ucount > 0) {
    if (und != nd) return fail(fn, "indices and array ranks differ");
    if (!is_int(idt[0]) && idt[0] != Bool) return unsupported(fn, std::string("indices of ") + dtype_name(idt[0]));
    Walk w(und, ushape, {ist[0]});
    for (int64_t i = 0; i < ucount; i++, w.next()) {
      int64_t v;
      index_at(iptr[0], idt[0], w.off[0], &v);
      if (v < 0) v += shape[axis];
      if (v < 0 || v >= shape[axis]) return unsupported(fn, "an index out of range");
    }
  }
  int64_t nI = 1, sliceN = 1;
  if (kind == 2) {
    for (int d = 0; d < ind; d++) nI *= ushape[d];
    for (int d = ind; d < und; d++) sliceN *= ushape[d];
    for (int k = 0; k < nidx; k++)
      if (!is_int(idt[k]) && idt[k] != Bool) return unsupported(fn, std::string("indices of ") + dtype_name(idt[k]));
    if (nidx == 0) nI = std::min<int64_t>(nI, 1);
    for (int64_t i = 0; i < nI && sliceN > 0; i++)
      for (int k = 0; k < nidx; k++) {
        int64_t v;
        index_at(iptr[k], idt[k], offset_of(ind, ushape, ist[k], i), &v);
        const int ax = axes[k];
        if (v < 0) v += shape[ax];
        if (v < 0 || v + ushape[ind + ax] > shape[ax]) return unsupported(fn, "an index out of range");
      }
  }
  copy_in(nd, shape, src, sst, out, esize);
  if (ucount == 0) return MGCPU_OK;
  const CombineFn comb = mode == MNone ? nullptr : combiner(dtype, mode, nanmax);
  auto apply = [&](int64_t d, int64_t s) {
    char *dp = out + d * esize;
    const char *sp = upd + s * esize;
    if (comb) comb(dp, sp);
    else std::memcpy(dp, sp, size_t(esize));
  };
  if (kind == 0 && !comb && und > 0) {
    // an assignment: row by row over the update's last dim (rows never overlap, so order is moot)
    const int last = und - 1;
    const int64_t n = ushape[last], rows = ucount / n;
    Walk w(last, ushape, {rst, ust});
    for (int64_t i = 0; i < rows; i++, w.next()) copy_items(out + (base + w.off[0]) * esize, rst[last], upd + w.off[1] * esize, ust[last], n, esize);
  } else if (kind == 0) {
    // the region in order (row-major over the update)
    Walk w(und, ushape, {rst, ust});
    for (int64_t i = 0; i < ucount; i++, w.next()) apply(base + w.off[0], w.off[1]);
  } else if (kind == 1) {
    int64_t ost_axis0[MAX_DIMS];
    for (int d = 0; d < nd; d++) ost_axis0[d] = d == axis ? 0 : ost[d];
    Walk w(und, ushape, {ist[0], ost_axis0, ust});
    for (int64_t i = 0; i < ucount; i++, w.next()) {
      int64_t v;
      index_at(iptr[0], idt[0], w.off[0], &v);
      if (v < 0) v += shape[axis];
      apply(w.off[1] + v * ost[axis], w.off[2]);
    }
  } else {
    // slice offsets relative to the start, in the output's row-major strides
    const int64_t *sshape = ushape + ind;
    for (int64_t i = 0; i < nI; i++) {
      int64_t start = 0;
      for (int k = 0; k < nidx; k++) {
        int64_t v;
        index_at(iptr[k], idt[k], offset_of(ind, ushape, ist[k], i), &v);
        if (v < 0) v += shape[axes[k]];
        start += v * ost[axes[k]];
      }
      if (nd == 0) {
        for (int64_t jj = 0; jj < sliceN; jj++) apply(start, offset_of(ind, ushape, ust, i));
        continue;
      }
      // the slice row by row over its last dim (the same element order as before)
      const int last = nd - 1;
      const int64_t n = sshape[last], ul = ust[ind + last], rows = n == 0 ? 0 : sliceN / n;
      const int64_t ubase = offset_of(ind, ushape, ust, i);
      Walk w(last, sshape, {ost, ust + ind});
      for (int64_t rr = 0; rr < rows; rr++, w.next()) {
        const int64_t d0 = start + w.off[0], u0 = ubase + w.off[1];
        if (dtype == F32 && mode == MSum) {
          float *dp = reinterpret_cast<float *>(out) + d0;  // comb_num<float, MSum>: a float add
          const float *up = reinterpret_cast<const float *>(upd) + u0;
          for (int64_t k = 0; k < n; k++) dp[k] = dp[k] + up[k * ul];
        } else {
          for (int64_t k = 0; k < n; k++) apply(d0 + k, u0 + k * ul);
        }
      }
    }
  }
  return MGCPU_OK;
}

}  // namespace mgcpu

MG_EXPORT int32_t mg_cpu_scatter(const double *desc, int32_t words) { return mgcpu::scatter(desc, words); }
