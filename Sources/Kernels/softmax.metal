// Softmax and log-sum-exp over the last axis, one threadgroup per row.
// Softmax (MLX's shape): the row's maximum M (simd_max, then across simdgroups), its sum
// S = Σ exp(x − M) (simd_sum likewise), then exp(x − M) · (1/S) (MLX's kernels scale by the
// reciprocal too) — one exp per element: when the output type holds the accumulator exactly, the
// second pass keeps exp(x − M) in the output and the last pass scales it in place; otherwise the
// last pass computes it again. float32 contiguous rows read MLX's 4-element chunks (see below).
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

// The second stage of a threadgroup's maximum (resp. sum) of one value per thread, after each
// simdgroup's own (v, the same in its lanes): across the simdgroups through `shared` (32 floats), in
// every thread, in float. For more than one simdgroup: a lone one has its answer in v already (the
// second stage would give the same bits back: max(v, −∞) is v, v never NaN as softmax_max's NaN
// never wins; v + 0 is v, v never −0 as a sum of exps from +0). Ends with a barrier, so `shared` may
// be reused right after.
MG_FUNC float threadgroup_max_rest(float v, threadgroup float* shared, uint tg_size, uint simd_lane, uint simd_group) {
  if (simd_lane == 0) shared[simd_group] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  v = simd_lane < tg_size / MG_SIMD_SIZE ? shared[simd_lane] : Limits<float>::lowest();
  v = simd_max(v);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return v;
}
MG_FUNC float threadgroup_sum_rest(float v, threadgroup float* shared, uint tg_size, uint simd_lane, uint simd_group) {
  if (simd_lane == 0) shared[simd_group] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  v = simd_lane < tg_size / MG_SIMD_SIZE ? shared[simd_lane] : 0.0f;
  v = simd_sum(v);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return v;
}

// The first pass: the maximum of m and the thread's elements k = lid, lid + tg, ...
template <typename T, typename A, typename IdxT>
MG_FUNC A softmax_max(const device T* in, IdxT src, IdxT stride, IdxT lid, IdxT tg, IdxT n, A m) {
  for (IdxT k = lid; k < n; k += tg) {
    const A x = A(in[src + k * stride]);
    m = x > m ? x : m;
  }
  return m;
}
// The second pass: S = Σ exp(x − M) over the thread's elements k = lid, lid + tg, ... in that
// order, kept in the output when `keep`.
template <typename T, typename A, typename IdxT>
MG_FUNC A softmax_exps(const device T* in, IdxT src, IdxT stride, device T* dst, IdxT lid, IdxT tg, IdxT n, A row_max,
                       bool keep) {
  A s = A(0);
  for (IdxT k = lid; k < n; k += tg) {
    const A e = exp_acc(A(A(in[src + k * stride]) - row_max));
    s = s + e;
    if (keep) dst[k] = T(e);
  }
  return s;
}
// The last pass: exp(x − M) · (1/S), the reciprocal in the accumulator type, as MLX's kernels.
template <typename T, typename A, typename IdxT>
MG_FUNC void softmax_divide(const device T* in, IdxT src, IdxT stride, device T* dst, IdxT lid, IdxT tg, IdxT n,
                            A row_max, A total, bool keep) {
  const A scale = A(A(1) / total);
  if (keep) {
    for (IdxT k = lid; k < n; k += tg) dst[k] = T(A(dst[k]) * scale);
  } else {
    for (IdxT k = lid; k < n; k += tg) dst[k] = T(A(exp_acc(A(A(in[src + k * stride]) - row_max)) * scale));
  }
}

// float32 (T = A = float: the output always keeps the exps). Contiguous rows are read as MLX's
// softmax reads them: 4-element chunks, chunk c at 4c, thread lid taking chunks lid, lid + tg, ...
// (neighbouring threads read neighbouring chunks), the row's n % 4 last elements a chunk of their
// own. Each chunk is one float4 for max, exp, sum and scale (the simulator computes a float4's
// components side by side, the same bits as one by one). A chunk is read and written as one
// packed_float4 (4-byte aligned, as a row may start anywhere): one access, so one check of its
// 16 bytes in the simulator's checked mode instead of four (through a named pointer: its reports
// give a subscript's source line). Strided rows keep the generic loops.
// Overloads of the generic helpers, so only this type pays their compile time.
MG_FUNC float4 softmax_chunk(const device float* p) {
  const device packed_float4* q = reinterpret_cast<const device packed_float4*>(p);
  return float4(q[0]);
}
MG_FUNC void softmax_store(device float* p, float4 v) {
  device packed_float4* q = reinterpret_cast<device packed_float4*>(p);
  q[0] = packed_float4(v);
}
// Whether this thread owns the ragged chunk (elements 4 * (n / 4) .. n − 1).
template <typename IdxT> MG_FUNC bool softmax_owns_tail(IdxT lid, IdxT tg, IdxT n) {
  return n % 4 != 0 && (n / 4) % tg == lid;
}

template <typename IdxT>
MG_FUNC float softmax_max(const device float* in, IdxT src, IdxT stride, IdxT lid, IdxT tg, IdxT n, float init) {
  if (stride != 1) return softmax_max<float, float, IdxT>(in, src, stride, lid, tg, n, init);
  // Per component, x > m ? x : m (a NaN never wins), then across the components.
  float4 m = float4(init);
  for (IdxT c = lid; c < n / 4; c += tg) {
    const float4 x = softmax_chunk(in + src + 4 * c);
    // (As a loop over the components the simulator's compiler makes it one vector max.)
    for (int i = 0; i < 4; i++) m[i] = x[i] > m[i] ? x[i] : m[i];
  }
  float r = m.x;
  r = m.y > r ? m.y : r;
  r = m.z > r ? m.z : r;
  r = m.w > r ? m.w : r;
  if (softmax_owns_tail(lid, tg, n)) {
    for (IdxT k = n - n % 4; k < n; k++) r = in[src + k] > r ? in[src + k] : r;
  }
  return r;
}
template <typename IdxT>
MG_FUNC float softmax_exps(const device float* in, IdxT src, IdxT stride, device float* dst, IdxT lid, IdxT tg,
                           IdxT n, float row_max, bool keep) {
  if (stride != 1) return softmax_exps<float, float, IdxT>(in, src, stride, dst, lid, tg, n, row_max, keep);
  // MLX's order: each chunk's exps summed in turn, then the chunks' sums in turn. (Summed as they are
  // computed, not read back from dst: a sixth of the accesses checked mode checks, for ~2% more
  // unchecked time on the simulator.)
  float s = 0.0f;
  for (IdxT c = lid; c < n / 4; c += tg) {
    const float4 e = metal::precise::exp(softmax_chunk(in + src + 4 * c) - row_max);
    softmax_store(dst + 4 * c, e);
    s = s + (((e.x + e.y) + e.z) + e.w);
  }
  if (softmax_owns_tail(lid, tg, n)) {
    float t = 0.0f;
    for (IdxT k = n - n % 4; k < n; k++) {
      dst[k] = exp_acc(in[src + k] - row_max);
      t = t + dst[k];
    }
    s = s + t;
  }
  return s;
}
template <typename IdxT>
MG_FUNC void softmax_divide(const device float* in, IdxT src, IdxT stride, device float* dst, IdxT lid, IdxT tg,
                            IdxT n, float row_max, float total, bool keep) {
  if (stride != 1) return softmax_divide<float, float, IdxT>(in, src, stride, dst, lid, tg, n, row_max, total, keep);
  const float scale = 1.0f / total;
  for (IdxT c = lid; c < n / 4; c += tg) softmax_store(dst + 4 * c, softmax_chunk(dst + 4 * c) * scale);
  if (softmax_owns_tail(lid, tg, n)) {
    for (IdxT k = n - n % 4; k < n; k++) dst[k] = dst[k] * scale;
  }
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
  device T* const dst = out + row * n;
  // The output keeps exp(x − M) exactly when its type is at least the accumulator's. (Each thread
  // reads and writes only its own elements, so an output in place over the input is fine.)
  const bool keep = sizeof(T) >= sizeof(AccT);

  // A NaN never wins the maximum, but its exp(NaN − M) makes S NaN; a +∞ or an all −∞ row gives
  // ∞ − ∞ = NaN there too: NaN everywhere, as the reference exp(x − M) / Σ exp(x − M).
  // (The simd reductions take float variables: the simulator passes a variable's lanes as they are.)
  const float m = float(softmax_max(in, src, stride, IdxT(lid), IdxT(tg_size), n, Limits<AccT>::lowest()));
  float mx = simd_max(m);
  if (tg_size > MG_SIMD_SIZE) mx = threadgroup_max_rest(mx, shared, tg_size, simd_lane, simd_group);
  const AccT row_max = AccT(mx);
  const float s = float(softmax_exps(in, src, stride, dst, IdxT(lid), IdxT(tg_size), n, row_max, keep));
  float sx = simd_sum(s);
  if (tg_size > MG_SIMD_SIZE) sx = threadgroup_sum_rest(sx, shared, tg_size, simd_lane, simd_group);
  const AccT total = AccT(sx);
  softmax_divide(in, src, stride, dst, IdxT(lid), IdxT(tg_size), n, row_max, total, keep);
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
