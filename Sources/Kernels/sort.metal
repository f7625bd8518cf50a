// Sorting along one axis (Sort, ArgSort, Partition, ArgPartition) and SearchSorted.
//
// Every element is compared as a pair (key, index): the key is an unsigned integer whose order is
// the CPU device's order (NaN after every number and equal to other NaNs, -0 equal to 0, complex
// numbers lexicographic by real then imaginary part), the index is the element's position in its
// row. Pairs are distinct, so their order is strict and total: any correct sorting network yields
// the one arrangement a stable sort yields, and the results equal the CPU device's exactly. Sorted
// values are raw copies of the input elements chosen by index, so NaN payloads and signed zeros
// move bit for bit.
//
// A row of up to `block` elements sorts in one threadgroup (a bitonic network in threadgroup
// memory). Longer rows sort in blocks first, then runs are merged pairwise, doubling the run
// length per pass (merge path: each thread binary-searches where its few outputs start, then
// merges them sequentially). Every pass but the last writes (key, index) pairs to scratch; the
// last writes the output.
#include "utils.h"

// ---------------------------------------------------------------------------------------------
// Keys

// Orders floats as the CPU does: -0 → +0, every NaN → the largest key (after +inf).
MG_FUNC uint float_key(float x) {
  if (isnan(x)) return 0xFFFFFFFFu;
  uint u = as_type<uint>(x == 0.0f ? 0.0f : x);
  // Negative floats order reversed as integers: flip all their bits; positives just move up.
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// SortKey<T>::of(x): an unsigned integer (uint, or ulong for 64-bit and complex types) that
// orders as x does. Only the types below have one: any other type fails to compile.
template <typename T> struct SortKey;
// bool and unsigned integers up to 32 bits: the value itself.
template <typename T> struct UnsignedKey {
  typedef uint type;
  static MG_FUNC uint of(T x) { return uint(x); }
};
template <> struct SortKey<bool> : UnsignedKey<bool> {};
template <> struct SortKey<uint8_t> : UnsignedKey<uint8_t> {};
template <> struct SortKey<uint16_t> : UnsignedKey<uint16_t> {};
template <> struct SortKey<uint32_t> : UnsignedKey<uint32_t> {};
// Signed integers: flipping the sign bit of the two's complement turns signed order into unsigned.
template <> struct SortKey<int8_t> {
  typedef uint type;
  static MG_FUNC uint of(int8_t x) { return uint(int(x)) ^ 0x80000000u; }
};
template <> struct SortKey<int16_t> {
  typedef uint type;
  static MG_FUNC uint of(int16_t x) { return uint(int(x)) ^ 0x80000000u; }
};
template <> struct SortKey<int32_t> {
  typedef uint type;
  static MG_FUNC uint of(int32_t x) { return uint(x) ^ 0x80000000u; }
};
template <> struct SortKey<int64_t> {
  typedef ulong type;
  static MG_FUNC ulong of(int64_t x) { return ulong(x) ^ 0x8000000000000000ul; }
};
template <> struct SortKey<uint64_t> {
  typedef ulong type;
  static MG_FUNC ulong of(uint64_t x) { return ulong(x); }
};
// half and bfloat widen to float exactly.
template <> struct SortKey<half> {
  typedef uint type;
  static MG_FUNC uint of(half x) { return float_key(float(x)); }
};
template <> struct SortKey<bfloat> {
  typedef uint type;
  static MG_FUNC uint of(bfloat x) { return float_key(float(x)); }
};
template <> struct SortKey<float> {
  typedef uint type;
  static MG_FUNC uint of(float x) { return float_key(x); }
};
// Real part in the high word, imaginary in the low one; a NaN in either part sorts last.
template <> struct SortKey<complex64_t> {
  typedef ulong type;
  static MG_FUNC ulong of(complex64_t z) {
    if (isnan(z.real) || isnan(z.imag)) return ~0ul;
    return (ulong(float_key(z.real)) << 32) | ulong(float_key(z.imag));
  }
};

// (key, index) order: the index breaks ties, which makes the sort stable.
template <typename K>
MG_FUNC bool pair_less(K ka, uint ia, K kb, uint ib) {
  return ka < kb || (ka == kb && ia < ib);
}

// Unsigned integers of a type's size: values are copied as raw bits.
template <int N> struct raw_bits;
template <> struct raw_bits<1> { typedef uchar type; };
template <> struct raw_bits<2> { typedef ushort type; };
template <> struct raw_bits<4> { typedef uint type; };
template <> struct raw_bits<8> { typedef ulong type; };

// ---------------------------------------------------------------------------------------------
// Geometry shared by the sort kernels

// What a pass writes.
enum SortOutput : int {
  kSortIndices = 0,  // final: each position's index, at the output's strides
  kSortValues = 1,   // final: the input element at that index (raw bits), at the output's strides
  kSortRuns = 2,     // intermediate: (key, index) pairs, row-contiguous in scratch
};

struct SortRows {
  int64_t in_base;     // element offset of the input view's first element
  int64_t in_stride;   // input stride along the sorted axis
  int64_t out_stride;  // output stride along the sorted axis
  uint n;              // length of the sorted axis (< 2^32)
  uint rows;           // number of rows
  uint block;          // positions one threadgroup sorts: a power of two
  uint segment;        // positions per row in a block: a power of two ≥ n, or `block`
  uint width;          // merge passes: length of the sorted runs being merged
  int mode;            // a SortOutput
  int ndim;            // number of dimensions besides the sorted axis
};

// Rows are the positions of every dimension but the sorted one, in row-major order; `shape` and
// the strides below omit the sorted axis.
MG_FUNC int64_t row_offset(uint row, constant const int* shape, constant const int64_t* strides, int ndim) {
  return elem_to_loc<int64_t>(int64_t(row), shape, strides, ndim);
}

// Writes the element of sorted position `pos` (key `key`, input index `j`) of row `row`.
template <typename T, typename K>
MG_FUNC void emit_sorted(
    constant const SortRows& s,
    uint row,
    uint pos,
    K key,
    uint j,
    device const T* in,
    device T* out_vals,
    device uint* out_idx,
    device K* out_keys,
    int64_t in_row,
    int64_t out_row) {
  typedef typename raw_bits<sizeof(T)>::type R;
  if (s.mode == kSortRuns) {
    ulong at = ulong(row) * ulong(s.n) + pos;
    out_keys[at] = key;
    out_idx[at] = j;
  } else if (s.mode == kSortIndices) {
    out_idx[out_row + int64_t(pos) * s.out_stride] = j;
  } else {
    device const R* src = reinterpret_cast<device const R*>(in);
    device R* dst = reinterpret_cast<device R*>(out_vals);
    dst[out_row + int64_t(pos) * s.out_stride] = src[in_row + int64_t(j) * s.in_stride];
  }
}

// Compare-exchange of positions lo and lo + j (lo has bit j clear): ascending where the direction
// bit `dir` of lo is clear, descending where it is set — the bitonic network's pattern.
template <typename K>
MG_FUNC void compare_exchange(threadgroup K* keys, threadgroup uint* idx, uint lo, uint j, uint dir) {
  const uint hi = lo + j;
  const bool ascending = (lo & dir) == 0;
  const K klo = keys[lo];
  const K khi = keys[hi];
  const uint ilo = idx[lo];
  const uint ihi = idx[hi];
  if (pair_less(khi, ihi, klo, ilo) == ascending) {
    keys[lo] = khi;
    keys[hi] = klo;
    idx[lo] = ihi;
    idx[hi] = ilo;
  }
}

// The t-th position with bit j clear (j a power of two).
MG_FUNC uint lower_of_pair(uint t, uint j) {
  return 2 * t - (t & (j - 1));
}

// Compare-exchange of a thread's chunk held in registers: local positions lo and lo + j, the
// direction taken from the position `at` of lo in threadgroup memory.
template <typename K>
MG_FUNC void compare_exchange_regs(thread K* keys, thread uint* idx, uint lo, uint j, uint at, uint dir) {
  const uint hi = lo + j;
  const bool ascending = (at & dir) == 0;
  const K klo = keys[lo];
  const K khi = keys[hi];
  const uint ilo = idx[lo];
  const uint ihi = idx[hi];
  if (pair_less(khi, ihi, klo, ilo) == ascending) {
    keys[lo] = khi;
    keys[hi] = klo;
    idx[lo] = ihi;
    idx[hi] = ilo;
  }
}

// Positions a thread's chunk may hold in registers (the block sort's 2048 / 128 threads).
constant constexpr uint kSortChunkRegs = 16;

// Sorts each aligned segment of `segment` pairs among `count` (powers of two) in threadgroup
// memory ascending with a bitonic network; the stages stop at the segment size, and the last one
// runs ascending in every segment. `threads` (a power of two, at most count / 2) each own
// `count / threads` consecutive positions: steps whose partners lie in other threads' chunks are
// spread over all threads with a barrier after each; the steps that follow them within a stage
// stay inside each thread's own chunk and run back to back, with one barrier at the end. A chunk
// of up to kSortChunkRegs positions runs those steps in registers (one load and one store of
// threadgroup memory per run of in-chunk steps, instead of four loads and up to four stores per
// compare-exchange), continuing into the next stages while they stay inside the chunk.
template <typename K>
MG_FUNC void bitonic_sort(threadgroup K* keys, threadgroup uint* idx, uint count, uint segment, uint lid, uint threads) {
  const uint chunk = count / threads;
  const uint mine = lid * chunk;
  const bool regs = chunk <= kSortChunkRegs;
  for (uint k = 2; k <= segment; k <<= 1) {
    // Direction bit: none in the final stage (all ascending), else bit k of the position.
    const uint dir = k == segment ? 0 : k;
    uint j = k >> 1;
    for (; j >= chunk; j >>= 1) {
      for (uint t = lid; t < count / 2; t += threads) compare_exchange(keys, idx, lower_of_pair(t, j), j, dir);
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (j == 0) continue;
    if (regs) {
      K rk[kSortChunkRegs];
      uint ri[kSortChunkRegs];
      // Local copies of the loop state: kept in the region, not re-read from per-lane storage.
      const uint n = chunk, at = mine, last = segment;
      threadgroup K* const kp = keys + at;
      threadgroup uint* const ip = idx + at;
      for (uint i = 0; i < n; ++i) {
        rk[i] = kp[i];
        ri[i] = ip[i];
      }
      uint s = k, d = dir;
      for (uint h = j;;) {
        for (; h > 0; h >>= 1) {
          for (uint t = 0; t < n / 2; ++t) {
            const uint lo = lower_of_pair(t, h);
            compare_exchange_regs(rk, ri, lo, h, at + lo, d);
          }
        }
        // The next stage starts with a step of j = k: still inside the chunk while k < chunk.
        if (s >= n || 2 * s > last) break;
        s <<= 1;
        d = s == last ? 0 : s;
        h = s >> 1;
      }
      for (uint i = 0; i < n; ++i) {
        kp[i] = rk[i];
        ip[i] = ri[i];
      }
      k = s;
    } else {
      for (; j > 0; j >>= 1) {
        for (uint t = 0; t < chunk / 2; ++t) compare_exchange(keys, idx, mine + lower_of_pair(t, j), j, dir);
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}

// ---------------------------------------------------------------------------------------------
// Kernels

// Threadgroup (x, y) sorts `block` positions: block x of row y when rows are long (segment ==
// block), or rows [y·r, y·r + r) with r = block / segment when they are short, each row in its own
// segment. Positions past a row's end are padded with the largest pair, which sorts last.
template <typename T, typename K>
[[kernel]] void sort_block(
    device const T* in [[buffer(0)]],
    device T* out_vals [[buffer(1)]],
    device uint* out_idx [[buffer(2)]],
    device K* out_keys [[buffer(3)]],
    constant const SortRows& s [[buffer(4)]],
    constant const int* shape [[buffer(5)]],
    constant const int64_t* in_strides [[buffer(6)]],
    constant const int64_t* out_strides [[buffer(7)]],
    threadgroup K* keys [[threadgroup(0)]],
    threadgroup uint* idx [[threadgroup(1)]],
    uint3 group [[threadgroup_position_in_grid]],
    uint3 lid [[thread_position_in_threadgroup]],
    uint3 threads [[threads_per_threadgroup]]) {
  const uint first_row = group.y * (s.block / s.segment);
  const uint first = group.x * s.segment;  // the block's first position in its row(s)

  for (uint l = lid.x; l < s.block; l += threads.x) {
    const uint row = first_row + l / s.segment;
    const uint j = first + l % s.segment;
    const bool real = row < s.rows && j < s.n;
    if (real) {
      const int64_t in_row = s.in_base + row_offset(row, shape, in_strides, s.ndim);
      keys[l] = SortKey<T>::of(in[in_row + int64_t(j) * s.in_stride]);
      idx[l] = j;
    } else {
      keys[l] = K(~K(0));
      idx[l] = 0xFFFFFFFFu;
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);

  bitonic_sort(keys, idx, s.block, s.segment, lid.x, threads.x);

  for (uint l = lid.x; l < s.block; l += threads.x) {
    const uint row = first_row + l / s.segment;
    const uint pos = first + l % s.segment;
    if (row >= s.rows || pos >= s.n) continue;
    const int64_t in_row = s.in_base + row_offset(row, shape, in_strides, s.ndim);
    const int64_t out_row = row_offset(row, shape, out_strides, s.ndim);
    emit_sorted<T, K>(s, row, pos, keys[l], idx[l], in, out_vals, out_idx, out_keys, in_row, out_row);
  }
}

// How many sorted positions one merge thread produces.
constant constexpr uint kMergePerThread = 8;

// One merge pass: the row's sorted runs of `width` pairs (in `run_keys`/`run_idx`,
// row-contiguous) are merged pairwise into runs of 2·width. Thread (x, y) writes sorted positions
// [8x, 8x + 8) of row y: the merge path tells how many of the first positions come from the left
// run, then a sequential merge produces the thread's outputs.
template <typename T, typename K>
[[kernel]] void sort_merge(
    device const T* in [[buffer(0)]],
    device T* out_vals [[buffer(1)]],
    device uint* out_idx [[buffer(2)]],
    device K* out_keys [[buffer(3)]],
    constant const SortRows& s [[buffer(4)]],
    constant const int* shape [[buffer(5)]],
    constant const int64_t* in_strides [[buffer(6)]],
    constant const int64_t* out_strides [[buffer(7)]],
    device const K* run_keys [[buffer(8)]],
    device const uint* run_idx [[buffer(9)]],
    uint2 gid [[thread_position_in_grid]]) {
  const uint row = gid.y;
  const ulong start = ulong(gid.x) * kMergePerThread;
  if (start >= s.n) return;
  const ulong pair = ulong(s.width) * 2;
  const ulong left = start / pair * pair;  // where this thread's pair of runs begins
  const uint na = uint(min(ulong(s.width), s.n - left));
  const uint nb = uint(min(ulong(s.width), s.n - left - na));
  const ulong row_at = ulong(row) * ulong(s.n) + left;
  device const K* ak = run_keys + row_at;
  device const uint* ai = run_idx + row_at;
  device const K* bk = ak + na;
  device const uint* bi = ai + na;

  // Merge path: a = how many of the first d merged pairs come from the left run.
  const uint d = uint(start - left);
  uint lo = d > nb ? d - nb : 0;
  uint hi = min(d, na);
  while (lo < hi) {
    uint mid = (lo + hi) / 2;
    if (pair_less(ak[mid], ai[mid], bk[d - 1 - mid], bi[d - 1 - mid])) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  uint a = lo;
  uint b = d - lo;

  const int64_t in_row = s.in_base + row_offset(row, shape, in_strides, s.ndim);
  const int64_t out_row = row_offset(row, shape, out_strides, s.ndim);
  const uint end = min(d + kMergePerThread, na + nb);
  for (uint pos = d; pos < end; ++pos) {
    bool take_left = b >= nb || (a < na && pair_less(ak[a], ai[a], bk[b], bi[b]));
    K key = take_left ? ak[a] : bk[b];
    uint j = take_left ? ai[a] : bi[b];
    a += take_left ? 1 : 0;
    b += take_left ? 0 : 1;
    emit_sorted<T, K>(s, row, uint(left) + pos, key, j, in, out_vals, out_idx, out_keys, in_row, out_row);
  }
}

// SearchSorted: for each value, the number of sequence elements ordered before it (left) or not
// after it (right), by the same keys as the sort. The sequence is 1-D with any stride; values
// have any layout.
struct SearchParams {
  int64_t seq_base;     // element offset of the sequence's first element
  int64_t seq_stride;
  int64_t values_base;  // element offset of the values view's first element
  int64_t size;         // number of values
  uint seq_n;           // sequence length
  int right;            // 1: side="right"
  int ndim;             // values' dimensions
  int contiguous;       // 1: values are row-contiguous (no stride walk)
};

template <typename T>
[[kernel]] void search_sorted(
    device const T* seq [[buffer(0)]],
    device const T* values [[buffer(1)]],
    device uint* out [[buffer(2)]],
    constant const SearchParams& p [[buffer(3)]],
    constant const int* shape [[buffer(4)]],
    constant const int64_t* strides [[buffer(5)]],
    uint2 gid [[thread_position_in_grid]],
    uint2 grid [[threads_per_grid]]) {
  typedef typename SortKey<T>::type K;
  const int64_t i = int64_t(gid.y) * int64_t(grid.x) + int64_t(gid.x);
  if (i >= p.size) return;
  const int64_t at = p.values_base + (p.contiguous ? i : elem_to_loc<int64_t>(i, shape, strides, p.ndim));
  const K v = SortKey<T>::of(values[at]);
  uint lo = 0;
  uint hi = p.seq_n;
  while (lo < hi) {
    uint mid = lo + (hi - lo) / 2;
    K m = SortKey<T>::of(seq[p.seq_base + int64_t(mid) * p.seq_stride]);
    // left: move past elements less than v; right: past elements not greater than v.
    if (p.right ? !(v < m) : (m < v)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  out[i] = lo;
}
