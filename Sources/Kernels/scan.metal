// Cumulative reductions along one axis (cumsum, cumprod, cummax, cummin, logcumsumexp), forward
// or reverse, inclusive or exclusive, over the input type T into U with the accumulator of Op.
// Variants:
//   scan_row  one threadgroup per lane (the axis contiguous in memory). The lane is scanned in
//             chunks of tg_size × ScanReads elements: each thread scans its few elements,
//             simdgroups scan the threads' totals with lane shuffles, threadgroup memory scans the
//             simdgroups' totals (a threadgroup of one simdgroup skips that stage), and a carry
//             runs from chunk to chunk.
//   scan_col  one thread per lane walking it in order (a strided axis: adjacent threads read
//             adjacent lanes).
//
// Arguments: shape/strides [2],[3] the other dimensions (row-major lane order) and their input
// strides, ndim [4], sizes [5] {input base element, lane length, lane count, axis stride,
// elements after the axis (the output's axis stride), flags: 1 reverse, 2 inclusive}.
// Position p in scan order is element p of the lane, or n − 1 − p when reversed.
#include "reduction.h"

// Elements each thread of scan_row handles per chunk (the host sizes threadgroups by it:
// ts/backend/gpu/scan.ts): 32, or 16 for 8-byte accumulators (their registers). Fewer, longer
// thread runs also mean fewer lanes for the simulator's per-lane work (1024-element rows: one
// simdgroup of 32 threads instead of 64 threads in two).
template <typename A> struct ScanReads {
  static constant constexpr int value = sizeof(A) > 4 ? 16 : 32;
};

// A thread's whole run of ScanReads positions along a unit-stride lane, forward (step 1) or
// reversed (step −1), for float32: read and written 4 elements at a time as packed_float4 (4-byte
// aligned, as a lane may start anywhere). One access is one check of its 16 bytes in the
// simulator's checked mode instead of four, and a quarter of the loads and stores in its element
// loops; the accumulation is the element loop's, the same Op::apply sequence, so the same bits.
// Other types (and strided lanes) take the element loops: these return false.
template <typename Op, typename T, typename A, typename IdxT>
MG_FUNC bool scan_run_read(const device T*, IdxT, IdxT, thread A*) { return false; }
template <typename Op, typename U, typename A, typename IdxT>
MG_FUNC bool scan_run_write(device U*, IdxT, IdxT, A, thread const A*, bool) { return false; }

// Four more elements x (in scan order) of a run whose scan so far is s: v[0..3] = s ∘ x.x, … .
template <typename Op> MG_FUNC float scan_run4(float s, float4 x, thread float* v) {
  v[0] = s = Op::apply(s, Op::load(x.x));
  v[1] = s = Op::apply(s, Op::load(x.y));
  v[2] = s = Op::apply(s, Op::load(x.z));
  v[3] = s = Op::apply(s, Op::load(x.w));
  return s;
}
// The same for a run's first four: v[0] = x.x (loaded, not combined with the identity), … .
template <typename Op> MG_FUNC float scan_run4(float4 x, thread float* v) {
  float s;
  v[0] = s = Op::load(x.x);
  v[1] = s = Op::apply(s, Op::load(x.y));
  v[2] = s = Op::apply(s, Op::load(x.z));
  v[3] = s = Op::apply(s, Op::load(x.w));
  return s;
}
// v[r] = x_0 ∘ … ∘ x_r over the run's elements x_r.
template <typename Op, typename IdxT>
MG_FUNC bool scan_run_read(const device float* in, IdxT at, IdxT step, thread float* v) {
  constexpr int chunks = ScanReads<float>::value / 4;
  if (step == IdxT(1)) {
    const device packed_float4* q = reinterpret_cast<const device packed_float4*>(in + at);
    float s = scan_run4<Op>(float4(q[0]), v);
    for (int c = 1; c < chunks; ++c) s = scan_run4<Op>(s, float4(q[c]), v + 4 * c);
    return true;
  }
  if (step == IdxT(0) - IdxT(1)) {
    // The run's lowest address holds its last element.
    const device packed_float4* q = reinterpret_cast<const device packed_float4*>(in + (at - IdxT(4 * chunks - 1)));
    float s = scan_run4<Op>(float4(float4(q[chunks - 1]).wzyx), v);
    for (int c = 1; c < chunks; ++c) s = scan_run4<Op>(s, float4(float4(q[chunks - 1 - c]).wzyx), v + 4 * c);
    return true;
  }
  return false;
}
// The run's outputs: prefix ∘ v[r] (inclusive), or prefix then prefix ∘ v[r − 1] (exclusive).
template <typename Op, typename IdxT>
MG_FUNC bool scan_run_write(device float* out, IdxT at, IdxT step, float prefix, thread const float* v, bool inclusive) {
  constexpr int chunks = ScanReads<float>::value / 4;
  const bool forward = step == IdxT(1);
  if (!forward && step != IdxT(0) - IdxT(1)) return false;
  device packed_float4* q = reinterpret_cast<device packed_float4*>(out + (forward ? at : at - IdxT(4 * chunks - 1)));
  float e = prefix;  // exclusive: the output before the chunk's second
  for (int c = 0; c < chunks; ++c) {
    const thread float* w = v + 4 * c;
    float4 o;
    if (inclusive) {
      o = float4(Op::apply(prefix, w[0]), Op::apply(prefix, w[1]), Op::apply(prefix, w[2]), Op::apply(prefix, w[3]));
    } else {
      o = float4(e, Op::apply(prefix, w[0]), Op::apply(prefix, w[1]), Op::apply(prefix, w[2]));
      e = Op::apply(prefix, w[3]);
    }
    if (forward) q[c] = packed_float4(o);
    else q[chunks - 1 - c] = packed_float4(float4(o.wzyx));
  }
  return true;
}

template <typename T, typename U, typename Op, typename IdxT>
[[kernel]] void scan_row(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
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
  typedef typename Op::acc A;
  threadgroup A simd_totals[MG_SIMD_SIZE];
  const IdxT lane_index = IdxT(tgid.y) * IdxT(ngroups.x) + IdxT(tgid.x);
  if (int64_t(lane_index) >= sizes[2]) return;  // whole threadgroups only
  const IdxT n = IdxT(sizes[1]);
  const IdxT axis_stride = IdxT(sizes[3]);
  const IdxT inner = IdxT(sizes[4]);
  const bool reverse = (sizes[5] & 1) != 0;
  const bool inclusive = (sizes[5] & 2) != 0;
  // Offsets are summed in IdxT before indexing: with uint, a negative stride wraps back in range.
  const IdxT src = IdxT(sizes[0]) + elem_to_loc<IdxT>(lane_index, shape, strides, ndim);
  device U* dst = out + ((lane_index / inner) * n * inner + lane_index % inner);
  const uint n_simd = tg_size / MG_SIMD_SIZE;

  // The direction is uniform: a thread's positions are consecutive, so its input and output
  // addresses advance by a fixed step (IdxT arithmetic, as the indices above).
  const IdxT in_step = reverse ? IdxT(0) - axis_stride : axis_stride;
  const IdxT out_step = reverse ? IdxT(0) - inner : inner;

  A carry = Op::init();
  for (IdxT start = 0; start < n; start += IdxT(tg_size) * ScanReads<A>::value) {
    // This thread's positions first .. first + count − 1, scanned locally as they are read;
    // positions past the end hold the identity (combined as such, so a −0 total stays what the
    // elementwise form gives).
    const IdxT first = start + IdxT(lid) * ScanReads<A>::value;
    const int count = first >= n ? 0 : (n - first >= IdxT(ScanReads<A>::value) ? ScanReads<A>::value : int(n - first));
    A v[ScanReads<A>::value];
    IdxT at = src + (reverse ? n - 1 - first : first) * axis_stride;
    int r = 0;
    if (count == ScanReads<A>::value && scan_run_read<Op>(in, at, in_step, v)) {
      r = count;
    } else if (count > 0) {
      v[0] = Op::load(in[at]);
      for (r = 1; r < count; ++r) {
        at += in_step;
        v[r] = Op::apply(v[r - 1], Op::load(in[at]));
      }
    }
    for (; r < ScanReads<A>::value; ++r) v[r] = r == 0 ? Op::init() : Op::apply(v[r - 1], Op::init());

    // What comes before this thread in the chunk: earlier lanes, then earlier simdgroups.
    const A before = simd_exclusive_scan<Op>(v[ScanReads<A>::value - 1], simd_lane);
    A prefix = carry;
    const bool more = start + IdxT(tg_size) * ScanReads<A>::value < n;  // another chunk follows: carry
    if (n_simd == 1) {
      // One simdgroup (uniform): its lanes' scan is the chunk's; the last lane holds the total.
      prefix = Op::apply(prefix, before);
      if (more) carry = Op::apply(carry, broadcast_lane(Op::apply(before, v[ScanReads<A>::value - 1]), MG_SIMD_SIZE - 1));
    } else {
      if (simd_lane == MG_SIMD_SIZE - 1) simd_totals[simd_group] = Op::apply(before, v[ScanReads<A>::value - 1]);
      threadgroup_barrier(mem_flags::mem_threadgroup);
      if (simd_group == 0) {
        const A t = simd_lane < n_simd ? simd_totals[simd_lane] : Op::init();
        const A t_incl = simd_inclusive_scan<Op>(t, simd_lane);
        simdgroup_barrier(mem_flags::mem_threadgroup);  // every lane has read its total
        simd_totals[simd_lane] = t_incl;  // now: inclusive prefix over simdgroups
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
      if (simd_group > 0) prefix = Op::apply(prefix, simd_totals[simd_group - 1]);
      prefix = Op::apply(prefix, before);
      if (more) {
        carry = Op::apply(carry, simd_totals[n_simd - 1]);
        threadgroup_barrier(mem_flags::mem_threadgroup);  // simd_totals is rewritten by the next chunk
      }
    }

    IdxT out_at = (reverse ? n - 1 - first : first) * inner;
    if (count == ScanReads<A>::value && scan_run_write<Op>(dst, out_at, out_step, prefix, v, inclusive)) {
    } else if (inclusive) {
      for (r = 0; r < count; ++r, out_at += out_step) dst[out_at] = cast_value<U>(Op::apply(prefix, v[r]));
    } else if (count > 0) {
      dst[out_at] = cast_value<U>(prefix);
      for (r = 1; r < count; ++r) {
        out_at += out_step;
        dst[out_at] = cast_value<U>(Op::apply(prefix, v[r - 1]));
      }
    }
  }
}

template <typename T, typename U, typename Op, typename IdxT>
[[kernel]] void scan_col(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant const int* shape [[buffer(2)]],
    constant const int64_t* strides [[buffer(3)]],
    constant const int& ndim [[buffer(4)]],
    constant const int64_t* sizes [[buffer(5)]],
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  typedef typename Op::acc A;
  const IdxT lane_index = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (int64_t(lane_index) >= sizes[2]) return;
  const IdxT n = IdxT(sizes[1]);
  const IdxT axis_stride = IdxT(sizes[3]);
  const IdxT inner = IdxT(sizes[4]);
  const bool reverse = (sizes[5] & 1) != 0;
  const bool inclusive = (sizes[5] & 2) != 0;
  // Offsets are summed in IdxT before indexing: with uint, a negative stride wraps back in range.
  const IdxT src = IdxT(sizes[0]) + elem_to_loc<IdxT>(lane_index, shape, strides, ndim);
  device U* dst = out + ((lane_index / inner) * n * inner + lane_index % inner);
  A acc = Op::init();
  for (IdxT p = 0; p < n; ++p) {
    const IdxT k = reverse ? n - 1 - p : p;
    const A x = Op::load(in[src + k * axis_stride]);
    const A next = Op::apply(acc, x);
    dst[k * inner] = cast_value<U>(inclusive ? next : acc);
    acc = next;
  }
}
