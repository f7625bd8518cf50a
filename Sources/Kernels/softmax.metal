// Softmax and log-sum-exp over the last axis, one threadgroup per row.
// Softmax (MLX's shape): the row's maximum M (simd_max, then across simdgroups), its sum
// S = Σ exp(x − M) (simd_sum likewise), then exp(x − M) / S — one exp per element: when the output
// type holds the accumulator exactly, the second pass keeps exp(x − M) in the output and the last
// pass divides it in place; otherwise the last pass computes it again.
// Logsumexp: each thread keeps a running maximum m and a sum s of exp(x − m) over its share of the
// row (rescaling s when m grows — one read of the row instead of two); the threads' (m, s) pairs
// are merged by lane shuffles and threadgroup memory.
//
// AccT is the accumulator: float for float32 and for `precise` 16-bit inputs, the input type
// otherwise (MLX's default; the trace says which). logsumexp always accumulates in float.
// Special values follow the CPU reference exp(x − M) / Σ exp(x − M): a NaN anywhere, a +∞ entry
// (∞ − ∞) or an all −∞ row give NaN; logsumexp returns an infinite or NaN maximum as it is.
//
// Arguments: shape/strides [2],[3] the leading dimensions (row order) and their input strides,
// ndim [4], sizes [5] {input base element, row length, row count, stride along the row}.
#include "reduction.h"

template <typename A> MG_FUNC A exp_acc(A d) { return A(metal::precise::exp(float(d))); }
// Four at once: the same function per component (the simulator computes them side by side).
template <typename A> MG_FUNC vec<A, 4> exp_acc(vec<A, 4> d) { return vec<A, 4>(metal::precise::exp(float4(d))); }

template <typename A> struct MaxSum {
  A m;  // running maximum (−∞ while empty)
  A s;  // Σ exp(x − m)
};

// Adds x to a running (m, s). −∞ contributes nothing; NaN makes both NaN for good.
template <typename A> MG_FUNC MaxSum<A> max_sum_add(MaxSum<A> r, A x) {
  if (is_nan(r.m)) return r;
  if (is_nan(x)) return MaxSum<A>{x, x};
  if (x == Limits<A>::lowest()) return r;
  if (x > r.m) return MaxSum<A>{x, A(r.s * exp_acc(A(r.m - x)) + A(1))};
  return MaxSum<A>{r.m, A(r.s + exp_acc(A(x - r.m)))};
}

template <typename A> MG_FUNC A max_sum_scale(A m, A to) { return m == to ? A(1) : exp_acc(A(m - to)); }

template <typename A> MG_FUNC MaxSum<A> max_sum_merge(MaxSum<A> a, MaxSum<A> b) {
  if (is_nan(a.m) || is_nan(b.m)) return MaxSum<A>{A(NAN), A(NAN)};
  const A m = a.m > b.m ? a.m : b.m;
  return MaxSum<A>{m, A(a.s * max_sum_scale(a.m, m) + b.s * max_sum_scale(b.m, m))};
}

// The row's (M, S), in every thread of the threadgroup.
template <typename A>
MG_FUNC MaxSum<A> threadgroup_max_sum(MaxSum<A> r, threadgroup A* shared_m, threadgroup A* shared_s, uint lid,
                                      uint tg_size, uint simd_lane, uint simd_group) {
  for (ushort d = MG_SIMD_SIZE / 2; d > 0; d >>= 1) {
    r = max_sum_merge(r, MaxSum<A>{shuffle_down(r.m, d), shuffle_down(r.s, d)});
  }
  const uint n_simd = tg_size / MG_SIMD_SIZE;
  if (simd_lane == 0) {
    shared_m[simd_group] = r.m;
    shared_s[simd_group] = r.s;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (simd_group == 0) {
    r = simd_lane < n_simd ? MaxSum<A>{shared_m[simd_lane], shared_s[simd_lane]} : MaxSum<A>{Limits<A>::lowest(), A(0)};
    for (ushort d = MG_SIMD_SIZE / 2; d > 0; d >>= 1) {
      r = max_sum_merge(r, MaxSum<A>{shuffle_down(r.m, d), shuffle_down(r.s, d)});
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);  // every lane has read its pair
    if (lid == 0) {
      shared_m[0] = r.m;
      shared_s[0] = r.s;
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return MaxSum<A>{shared_m[0], shared_s[0]};
}

// AccT(x[k']) − m for the four elements k' = k, k + d, k + 2d, k + 3d (row offsets; element k' at
// x[base + k' · stride]), each rounded to AccT as the scalar expression rounds it.
template <typename A, typename T, typename IdxT>
MG_FUNC vec<A, 4> load4_minus(const device T* x, IdxT base, IdxT k, IdxT d, IdxT stride, A m) {
  return vec<A, 4>(A(A(x[base + k * stride]) - m), A(A(x[base + (k + d) * stride]) - m),
                   A(A(x[base + (k + 2 * d) * stride]) - m), A(A(x[base + (k + 3 * d) * stride]) - m));
}
template <typename A, typename T, typename IdxT>
MG_FUNC vec<A, 4> load4(const device T* x, IdxT base, IdxT k, IdxT d, IdxT stride) {
  return vec<A, 4>(A(x[base + k * stride]), A(x[base + (k + d) * stride]), A(x[base + (k + 2 * d) * stride]),
                   A(x[base + (k + 3 * d) * stride]));
}
template <typename T, typename A, typename IdxT> MG_FUNC void store4(device T* y, IdxT k, IdxT d, vec<A, 4> v) {
  y[k] = T(v.x);
  y[k + d] = T(v.y);
  y[k + 2 * d] = T(v.z);
  y[k + 3 * d] = T(v.w);
}

template <typename T, typename AccT, typename IdxT>
[[kernel]] void softmax_rows(
    device const T* in [[buffer(0)]],
    device T* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* strides [[buffer(3)]],
    constant const int& ndim [[buffer(4)]],
    constant const int64_t* sizes [[buffer(5)]],
    uint2 tgid [[threadgroup_position_in_grid]],
    uint2 ngroups [[threadgroups_per_grid]],
    uint lid [[thread_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]]) {
  threadgroup float shared[MG_SIMD_SIZE];
  const IdxT row = IdxT(tgid.y) * IdxT(ngroups.x) + IdxT(tgid.x);
  if (int64_t(row) >= sizes[2]) return;  // whole threadgroups only
  const IdxT n = IdxT(sizes[1]);
  const IdxT stride = IdxT(sizes[3]);
  // Offsets are summed in IdxT before indexing: with uint, a negative stride wraps back in range.
  const IdxT src = IdxT(sizes[0]) + elem_to_loc<IdxT>(row, shape, strides, ndim);
  device T* dst = out + row * n;
  // The output keeps exp(x − M) exactly when its type is at least the accumulator's. (Each thread
  // reads and writes only its own elements, so an output in place over the input is fine.)
  const bool keep = sizeof(T) >= sizeof(AccT);

  // A NaN never wins the maximum, but its exp(NaN − M) makes S NaN; a +∞ or an all −∞ row gives
  // ∞ − ∞ = NaN there too: NaN everywhere, as the reference exp(x − M) / Σ exp(x − M).
  AccT m = Limits<AccT>::lowest();
  for (IdxT k = lid; k < n; k += tg_size) {
    const AccT x = AccT(in[src + k * stride]);
    m = x > m ? x : m;
  }
  // The row's maximum M in every thread: simd_max, then across the simdgroups through `shared`
  // (written out here rather than in a helper: the simulator's work-item form of a helper that
  // syncs copies its arguments per lane).
  float v = simd_max(float(m));
  if (simd_lane == 0) shared[simd_group] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  v = simd_lane < tg_size / MG_SIMD_SIZE ? shared[simd_lane] : Limits<float>::lowest();
  v = simd_max(v);
  threadgroup_barrier(mem_flags::mem_threadgroup);  // all have read `shared`: it takes the sums next
  const AccT row_max = AccT(v);
  // exp(x − M) four at a time (one vector exp), then the rest one at a time; S sums them over the
  // same elements per thread in the same order as one by one. When the output keeps them, S is a
  // loop of its own over what was stored (the exps have no chain through S to wait on).
  const IdxT tg = IdxT(tg_size), step4 = 4 * tg;
  IdxT k;
  AccT s = AccT(0);
  if (keep) {
    for (k = lid; k + 3 * tg < n; k += step4) store4(dst, k, tg, exp_acc(load4_minus<AccT>(in, src, k, tg, stride, row_max)));
    for (; k < n; k += tg) dst[k] = T(exp_acc(AccT(AccT(in[src + k * stride]) - row_max)));
    for (k = lid; k < n; k += tg) s = s + AccT(dst[k]);
  } else {
    for (k = lid; k + 3 * tg < n; k += step4) {
      const vec<AccT, 4> e = exp_acc(load4_minus<AccT>(in, src, k, tg, stride, row_max));
      s = s + e.x;
      s = s + e.y;
      s = s + e.z;
      s = s + e.w;
    }
    for (; k < n; k += tg) s = s + exp_acc(AccT(AccT(in[src + k * stride]) - row_max));
  }
  // S in every thread, the same way (combined in float).
  v = simd_sum(float(s));
  if (simd_lane == 0) shared[simd_group] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  v = simd_lane < tg_size / MG_SIMD_SIZE ? shared[simd_lane] : 0.0f;
  const AccT total = AccT(simd_sum(v));
  k = lid;
  if (keep) {
    for (; k + 3 * tg < n; k += step4) store4(dst, k, tg, load4<AccT>(dst, IdxT(0), k, tg, IdxT(1)) / total);
    for (; k < n; k += tg) dst[k] = T(AccT(dst[k]) / total);
  } else {
    for (; k + 3 * tg < n; k += step4) store4(dst, k, tg, exp_acc(load4_minus<AccT>(in, src, k, tg, stride, row_max)) / total);
    for (; k < n; k += tg) dst[k] = T(exp_acc(AccT(AccT(in[src + k * stride]) - row_max)) / total);
  }
}

template <typename T, typename IdxT>
[[kernel]] void logsumexp_rows(
    device const T* in [[buffer(0)]],
    device T* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* strides [[buffer(3)]],
    constant const int& ndim [[buffer(4)]],
    constant const int64_t* sizes [[buffer(5)]],
    uint2 tgid [[threadgroup_position_in_grid]],
    uint2 ngroups [[threadgroups_per_grid]],
    uint lid [[thread_index_in_threadgroup]],
    uint tg_size [[threads_per_threadgroup]],
    uint simd_lane [[thread_index_in_simdgroup]],
    uint simd_group [[simdgroup_index_in_threadgroup]]) {
  threadgroup float shared_m[MG_SIMD_SIZE];
  threadgroup float shared_s[MG_SIMD_SIZE];
  const IdxT row = IdxT(tgid.y) * IdxT(ngroups.x) + IdxT(tgid.x);
  if (int64_t(row) >= sizes[2]) return;  // whole threadgroups only
  const IdxT n = IdxT(sizes[1]);
  const IdxT stride = IdxT(sizes[3]);
  // Offsets are summed in IdxT before indexing: with uint, a negative stride wraps back in range.
  const IdxT src = IdxT(sizes[0]) + elem_to_loc<IdxT>(row, shape, strides, ndim);

  MaxSum<float> r = {Limits<float>::lowest(), 0.0f};
  for (IdxT k = lid; k < n; k += tg_size) r = max_sum_add(r, float(in[src + k * stride]));
  r = threadgroup_max_sum(r, shared_m, shared_s, lid, tg_size, simd_lane, simd_group);
  if (lid == 0) {
    // An infinite or NaN maximum is the answer itself (all −∞ → −∞, any +∞ → +∞).
    out[row] = T(metal::isinf(r.m) || is_nan(r.m) ? r.m : r.m + metal::precise::log(r.s));
  }
}
