// Sorting along one axis (Sort, ArgSort; Partition and ArgPartition too, whose reference output is
// the fully sorted lane): stable, ascending, NaN after every number (NaNs equal to each other), −0
// equal to 0, complex values by real part then imaginary part (a NaN in either part last), 64-bit
// integers exactly. Each element gets an unsigned key whose order is that order; lanes are sorted
// by an LSD radix sort of (key, position) pairs (stable by construction), short lanes by insertion.
// Values move as raw items, so NaN payloads, −0 and 16-bit float bits are kept.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "MGCpu.h"
#include "mgcpu.h"

namespace mgcpu {

namespace {

// Ordered keys: unsigned integers whose order is the sort order.
inline uint32_t float_key(float f) {
  if (f != f) return 0xffffffffu;  // NaN: last, all equal
  if (f == 0) f = 0;               // −0 = 0
  const uint32_t b = bits_from_f32(f);
  return b & 0x80000000u ? ~b : b | 0x80000000u;
}
inline uint64_t double_key(double f) {
  if (f != f) return ~uint64_t(0);
  if (f == 0) f = 0;
  const uint64_t b = bits_from_f64(f);
  return b & (uint64_t(1) << 63) ? ~b : b | (uint64_t(1) << 63);
}

template <class K> struct Pair {
  K key;
  uint32_t pos;
};

// The key of element i of a lane (base pointer at the lane's first element, stride in elements).
template <class K> K key_of(int dtype, const char *p, int64_t off) {
  switch (dtype) {
    case Bool: case U8: return K(reinterpret_cast<const uint8_t *>(p)[off]);
    case U16: return K(reinterpret_cast<const uint16_t *>(p)[off]);
    case U32: return K(reinterpret_cast<const uint32_t *>(p)[off]);
    case I8: return K(uint8_t(reinterpret_cast<const int8_t *>(p)[off]) ^ 0x80u);
    case I16: return K(uint16_t(reinterpret_cast<const int16_t *>(p)[off]) ^ 0x8000u);
    case I32: return K(uint32_t(reinterpret_cast<const int32_t *>(p)[off]) ^ 0x80000000u);
    case F16: return K(float_key(f16_to_f32(reinterpret_cast<const uint16_t *>(p)[off])));
    case BF16: return K(float_key(bf16_to_f32(reinterpret_cast<const uint16_t *>(p)[off])));
    case F32: return K(float_key(reinterpret_cast<const float *>(p)[off]));
    case U64: return K(reinterpret_cast<const uint64_t *>(p)[off]);
    case I64: return K(uint64_t(reinterpret_cast<const int64_t *>(p)[off]) ^ (uint64_t(1) << 63));
    case F64: return K(double_key(reinterpret_cast<const double *>(p)[off]));
    default: {  // complex64: (real, imaginary), a NaN anywhere last
      const float *c = reinterpret_cast<const float *>(p) + 2 * off;
      if (c[0] != c[0] || c[1] != c[1]) return K(~uint64_t(0));
      return K((uint64_t(float_key(c[0])) << 32) | float_key(c[1]));
    }
  }
}

inline bool wide_key(int dtype) { return dtype == U64 || dtype == I64 || dtype == F64 || dtype == C64; }

// Stable ascending sort of pairs by key; `tmp` holds n pairs. Returns the array holding the result.
template <class K> Pair<K> *stable_sort(Pair<K> *a, Pair<K> *tmp, int64_t n) {
  if (n <= 48) {
    for (int64_t i = 1; i < n; i++) {
      const Pair<K> cur = a[i];
      int64_t j = i - 1;
      while (j >= 0 && a[j].key > cur.key) {
        a[j + 1] = a[j];
        j--;
      }
      a[j + 1] = cur;
    }
    return a;
  }
  constexpr int BYTES = sizeof(K);
  int64_t count[BYTES][256];
  std::memset(count, 0, sizeof count);
  for (int64_t i = 0; i < n; i++)
    for (int b = 0; b < BYTES; b++) count[b][(a[i].key >> (8 * b)) & 255]++;
  Pair<K> *src = a, *dst = tmp;
  for (int b = 0; b < BYTES; b++) {
    int64_t *c = count[b];
    // a digit every key shares moves nothing
    bool trivial = false;
    for (int d = 0; d < 256; d++)
      if (c[d] == n) trivial = true;
    if (trivial) continue;
    int64_t sum = 0;
    for (int d = 0; d < 256; d++) {
      const int64_t t = c[d];
      c[d] = sum;
      sum += t;
    }
    for (int64_t i = 0; i < n; i++) dst[c[(src[i].key >> (8 * b)) & 255]++] = src[i];
    std::swap(src, dst);
  }
  return src;
}

struct SortJob {
  int dtype, nd, axis;
  int64_t shape[MAX_DIMS], strides[MAX_DIMS];
  const char *src;
  char *out;
  bool indices;
  int64_t lanes, n, inner;  // lane count; lane length; row-major distance along the axis in the output
  int64_t lanes_per_task;
  size_t scratch_bytes;
  std::atomic<bool> failed{false};
};

template <class K> void sort_task(void *ctx, int64_t task, int thread) {
  SortJob &j = *static_cast<SortJob *>(ctx);
  auto *pairs = static_cast<Pair<K> *>(thread_scratch(thread, j.scratch_bytes));
  if (!pairs) {
    j.failed.store(true, std::memory_order_relaxed);
    return;
  }
  Pair<K> *tmp = pairs + j.n;
  const int esize = dtype_size(j.dtype);
  const int64_t l0 = task * j.lanes_per_task, l1 = std::min(j.lanes, l0 + j.lanes_per_task);
  const int64_t sstride = j.strides[j.axis];
  for (int64_t lane = l0; lane < l1; lane++) {
    // lane → (outer, inner) → source offset of its first element, output offset
    const int64_t outer = lane / j.inner, in = lane % j.inner;
    int64_t soff = 0, rest = in;
    for (int d = j.nd - 1; d > j.axis; d--) {
      soff += (rest % j.shape[d]) * j.strides[d];
      rest /= j.shape[d];
    }
    rest = outer;
    for (int d = j.axis - 1; d >= 0; d--) {
      soff += (rest % j.shape[d]) * j.strides[d];
      rest /= j.shape[d];
    }
    const int64_t ooff = outer * j.n * j.inner + in;
    for (int64_t k = 0; k < j.n; k++) pairs[k] = {key_of<K>(j.dtype, j.src, soff + k * sstride), uint32_t(k)};
    const Pair<K> *sorted = stable_sort<K>(pairs, tmp, j.n);
    if (j.indices) {
      uint32_t *o = reinterpret_cast<uint32_t *>(j.out);
      for (int64_t k = 0; k < j.n; k++) o[ooff + k * j.inner] = sorted[k].pos;
    } else {
      for (int64_t k = 0; k < j.n; k++)
        std::memcpy(j.out + (ooff + k * j.inner) * esize, j.src + (soff + int64_t(sorted[k].pos) * sstride) * esize, size_t(esize));
    }
  }
}

}  // namespace

// [ndim, dtype, shape…, src, src strides…, axis, output (row-major), indices (0 values, 1 uint32)]
int sort(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_sort";
  Reader r(desc, words, fn);
  SortJob j;
  j.nd = int(r.integer(1, MAX_DIMS, "ndim"));
  j.dtype = r.dtype("dtype");
  if (!read_shape(r, j.nd, j.shape)) return fail(fn, r.error);
  j.src = r.pointer("source");
  if (!read_strides(r, j.nd, j.strides)) return fail(fn, r.error);
  j.axis = int(r.integer(0, j.nd - 1, "axis"));
  j.out = r.pointer("output");
  j.indices = r.integer(0, 1, "indices") == 1;
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  const int64_t total = size_of(j.nd, j.shape);
  if (total == 0) return MGCPU_OK;
  if (!j.src || !j.out) return fail(fn, "null operand");
  j.n = j.shape[j.axis];
  if (j.n > int64_t(UINT32_MAX)) return unsupported(fn, "a lane longer than 2^32");
  j.inner = 1;
  for (int d = j.axis + 1; d < j.nd; d++) j.inner *= j.shape[d];
  j.lanes = total / j.n;
  const bool wide = wide_key(j.dtype);
  j.scratch_bytes = size_t(2 * j.n) * (wide ? sizeof(Pair<uint64_t>) : sizeof(Pair<uint32_t>)) + 64;
  j.lanes_per_task = std::max<int64_t>(1, 16384 / j.n);
  const int64_t tasks = (j.lanes + j.lanes_per_task - 1) / j.lanes_per_task;
  const int threads = threads_for(double(total) * (wide ? 12.0 : 7.0));
  note_threads(threads);
  parallel_for(tasks, threads, wide ? sort_task<uint64_t> : sort_task<uint32_t>, &j);
  if (j.failed.load()) return fail(fn, "out of memory for sort buffers");
  return MGCPU_OK;
}

}  // namespace mgcpu

MG_EXPORT int32_t mg_cpu_sort(const double *desc, int32_t words) { return mgcpu::sort(desc, words); }
