// Matrix products D = alpha·(A·B) + beta·C on simdgroup matrices (Matmul and AddMM).
//
//   gemm         one threadgroup per BM×BN output tile (per batch entry): BK-deep slices of A and
//                B are staged in threadgroup memory, WM×WN simdgroups each own a (BM/WM)×(BN/WN)
//                block of 8×8 accumulators, and the epilogue applies alpha/beta and rounds once.
//   gemm_splitk  the same tile loop over one of several K partitions, writing float32 partial sums;
//   gemm_splitk_reduce  sums the partitions in order and applies the epilogue.
//   gemm_complex one thread per output element (complex64; no simdgroup matrices for complex).
//
// Operands are read in place: A is row-major (element (m, k) at m·lda + k) or, with TA, column-
// major (at k·lda + m); B likewise with TB. Batch entries are found through the batch shape and
// each operand's batch strides (zero for a broadcast operand), so nothing is copied.
//
// Precision: operands of type T (float, half, bfloat) are multiplied on simdgroup matrices of T
// and accumulated in float32 (`simdgroup_matrix<float, 8, 8>`); 16-bit products are exact in
// float32, so the only roundings are the float32 sums and the final conversion to T.
#include "utils.h"

struct GemmParams {
  int64_t a_base;  // element offsets of the first element of A, B and C in their bindings
  int64_t b_base;
  int64_t c_base;
  int64_t lda;     // A: stride between rows (columns when TA)
  int64_t ldb;     // B: stride between rows (columns when TB)
  int64_t c_sm;    // C (AddMM's addend): strides between rows and columns (any layout)
  int64_t c_sn;
  int M;
  int N;
  int K;
  int k_split;     // split-K: the K range of one partition (a multiple of BK); K otherwise
  int batch_ndim;  // batch axes described by batch_shape / batch_strides (0: one matrix)
  int use_c;       // 1: add beta·C (AddMM with beta != 0); 0: C is never read
  float alpha;
  float beta;
};

// Element offsets of batch entry z in A, B and C: batch_strides holds A's, B's and C's strides.
struct BatchOffsets {
  int64_t a;
  int64_t b;
  int64_t c;
};

MG_FUNC BatchOffsets batch_offsets(uint z, constant const int* shape, constant const int64_t* strides, int ndim) {
  BatchOffsets o;
  o.a = 0;
  o.b = 0;
  o.c = 0;
  if (ndim > 0) {
    o.a = elem_to_loc<int64_t>(int64_t(z), shape, strides, ndim);
    o.b = elem_to_loc<int64_t>(int64_t(z), shape, strides + ndim, ndim);
    o.c = elem_to_loc<int64_t>(int64_t(z), shape, strides + 2 * ndim, ndim);
  }
  return o;
}

// Copies the ROWS×COLS block of a row-major source (element (r, c) at src[r·ld + c]) into
// threadgroup memory with row pitch PITCH. Rows from rows_left and columns from cols_left on are
// outside the matrix and read as zero, so partial tiles need no special case in the products.
// Consecutive threads read consecutive columns: coalesced device reads.
template <typename T, int ROWS, int COLS, int PITCH, int NTHREADS>
MG_FUNC void load_tile(threadgroup T* dst, device const T* src, int64_t ld, int rows_left, int cols_left, uint tid) {
  for (int i = int(tid); i < ROWS * COLS; i += NTHREADS) {
    const int r = i / COLS;
    const int c = i % COLS;
    dst[r * PITCH + c] = (r < rows_left && c < cols_left) ? src[int64_t(r) * ld + c] : T(0.0f);
  }
}

// The product of one output tile over K range [k_begin, k_end), left in this simdgroup's
// accumulators acc[TM][TN] (8×8 float matrices, row-major over the simdgroup's block).
template <typename T, int BM, int BN, int BK, int WM, int WN, bool TA, bool TB>
struct GemmTile {
  static constant constexpr int PAD = 16 / sizeof(T);  // skews threadgroup rows across banks
  static constant constexpr int TM = BM / (8 * WM);   // 8×8 fragments per simdgroup, down and across
  static constant constexpr int TN = BN / (8 * WN);
  static constant constexpr int NTHREADS = WM * WN * 32;
  // Threadgroup tiles: A as BM×BK (BK×BM when TA), B as BK×BN (BN×BK when TB), padded rows.
  static constant constexpr int A_PITCH = TA ? BM + PAD : BK + PAD;
  static constant constexpr int B_PITCH = TB ? BK + PAD : BN + PAD;

  static MG_FUNC void run(
      thread simdgroup_matrix<float, 8, 8>* acc,  // TM·TN accumulators, row-major
      threadgroup T* As,
      threadgroup T* Bs,
      device const T* A,  // at the tile's batch entry
      device const T* B,
      constant const GemmParams& p,
      int m0,
      int n0,
      int k_begin,
      int k_end,
      uint tid,
      uint sgid) {
    const int sm = int(sgid) / WN * (BM / WM);  // this simdgroup's block inside the tile
    const int sn = int(sgid) % WN * (BN / WN);
    for (int i = 0; i < TM * TN; ++i) acc[i] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);

    for (int k0 = k_begin; k0 < k_end; k0 += BK) {
      const int k_left = k_end - k0;
      // Everyone is done reading the previous slice before it is overwritten.
      threadgroup_barrier(mem_flags::mem_threadgroup);
      if (TA) load_tile<T, BK, BM, A_PITCH, NTHREADS>(As, A + int64_t(k0) * p.lda + m0, p.lda, k_left, p.M - m0, tid);
      else load_tile<T, BM, BK, A_PITCH, NTHREADS>(As, A + int64_t(m0) * p.lda + k0, p.lda, p.M - m0, k_left, tid);
      if (TB) load_tile<T, BN, BK, B_PITCH, NTHREADS>(Bs, B + int64_t(n0) * p.ldb + k0, p.ldb, p.N - n0, k_left, tid);
      else load_tile<T, BK, BN, B_PITCH, NTHREADS>(Bs, B + int64_t(k0) * p.ldb + n0, p.ldb, k_left, p.N - n0, tid);
      threadgroup_barrier(mem_flags::mem_threadgroup);

      for (int kk = 0; kk < BK; kk += 8) {
        simdgroup_matrix<T, 8, 8> a[TM];
        simdgroup_matrix<T, 8, 8> b[TN];
        // A column-major tile is loaded transposed: the fragment's element (r, c) is As[c·pitch + r].
        for (int i = 0; i < TM; ++i) {
          if (TA) simdgroup_load(a[i], As + kk * A_PITCH + sm + 8 * i, A_PITCH, ulong2(0, 0), true);
          else simdgroup_load(a[i], As + (sm + 8 * i) * A_PITCH + kk, A_PITCH);
        }
        for (int j = 0; j < TN; ++j) {
          if (TB) simdgroup_load(b[j], Bs + (sn + 8 * j) * B_PITCH + kk, B_PITCH, ulong2(0, 0), true);
          else simdgroup_load(b[j], Bs + kk * B_PITCH + sn + 8 * j, B_PITCH);
        }
        for (int i = 0; i < TM; ++i)
          for (int j = 0; j < TN; ++j) simdgroup_multiply_accumulate(acc[i * TN + j], a[i], b[j], acc[i * TN + j]);
      }
    }
  }
};

// Writes this simdgroup's accumulators through an 8×8 threadgroup staging matrix (simdgroup_store
// is the documented way to reach a fragment's elements), each lane writing two elements per
// fragment. SPLIT writes raw float partial sums; otherwise the AddMM epilogue and one rounding.
template <typename U, int TM, int TN, bool SPLIT, typename T>
MG_FUNC void store_tile(
    thread simdgroup_matrix<float, 8, 8>* acc,
    threadgroup float* stage,  // this simdgroup's 64 floats
    device U* D,               // the output matrix (row-major, N columns)
    device const T* C,         // AddMM's addend at the batch entry (read only when use_c)
    constant const GemmParams& p,
    int row0,                  // the simdgroup block's first row and column in the matrix
    int col0,
    uint lane) {
  for (int i = 0; i < TM; ++i) {
    for (int j = 0; j < TN; ++j) {
      simdgroup_store(acc[i * TN + j], stage, 8);
      simdgroup_barrier(mem_flags::mem_threadgroup);
      for (int e = int(lane); e < 64; e += 32) {
        const int m = row0 + 8 * i + e / 8;
        const int n = col0 + 8 * j + e % 8;
        if (m < p.M && n < p.N) {
          const float v = stage[e];
          const int64_t at = int64_t(m) * p.N + n;
          if (SPLIT) {
            D[at] = U(v);
          } else if (p.use_c) {
            D[at] = U(p.alpha * v + p.beta * float(C[int64_t(m) * p.c_sm + int64_t(n) * p.c_sn]));
          } else {
            D[at] = U(p.alpha * v);
          }
        }
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
}

// grid: (tiles across N, tiles down M, batch entries) threadgroups of WM·WN·32 threads.
template <typename T, int BM, int BN, int BK, int WM, int WN, bool TA, bool TB>
[[kernel]] void gemm(
    device const T* A [[buffer(0)]],
    device const T* B [[buffer(1)]],
    device const T* C [[buffer(2)]],
    device T* D [[buffer(3)]],
    constant const GemmParams& p [[buffer(4)]],
    constant const int* batch_shape [[buffer(5)]],
    constant const int64_t* batch_strides [[buffer(6)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint sgid [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  typedef GemmTile<T, BM, BN, BK, WM, WN, TA, TB> Tile;
  constexpr int PAD = 16 / sizeof(T);  // as Tile::PAD; spelled out so the sizes read plainly
  threadgroup T As[(BM + PAD) * (BK + PAD)];
  threadgroup T Bs[(BN + PAD) * (BK + PAD)];
  threadgroup float stage[WM * WN * 64];

  const BatchOffsets off = batch_offsets(tgid.z, batch_shape, batch_strides, p.batch_ndim);
  const int m0 = int(tgid.y) * BM;
  const int n0 = int(tgid.x) * BN;
  simdgroup_matrix<float, 8, 8> acc[Tile::TM * Tile::TN];
  Tile::run(acc, As, Bs, A + p.a_base + off.a, B + p.b_base + off.b, p, m0, n0, 0, p.K, tid, sgid);
  store_tile<T, Tile::TM, Tile::TN, false>(
      acc, stage + sgid * 64, D + int64_t(tgid.z) * p.M * p.N, C + p.c_base + off.c, p,
      m0 + int(sgid) / WN * (BM / WM), n0 + int(sgid) % WN * (BN / WN), lane);
}

// Split-K, pass 1. grid: (tiles across N, tiles down M, partitions); one matrix (no batch).
// Partition z covers K range [z·k_split, min(K, (z+1)·k_split)) and writes its float32 partial
// sums to P[z·M·N + m·N + n].
template <typename T, int BM, int BN, int BK, int WM, int WN, bool TA, bool TB>
[[kernel]] void gemm_splitk(
    device const T* A [[buffer(0)]],
    device const T* B [[buffer(1)]],
    device float* P [[buffer(2)]],
    constant const GemmParams& p [[buffer(3)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint sgid [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  typedef GemmTile<T, BM, BN, BK, WM, WN, TA, TB> Tile;
  constexpr int PAD = 16 / sizeof(T);  // as Tile::PAD; spelled out so the sizes read plainly
  threadgroup T As[(BM + PAD) * (BK + PAD)];
  threadgroup T Bs[(BN + PAD) * (BK + PAD)];
  threadgroup float stage[WM * WN * 64];

  const int m0 = int(tgid.y) * BM;
  const int n0 = int(tgid.x) * BN;
  const int k_begin = int(tgid.z) * p.k_split;
  const int k_end = min(p.K, k_begin + p.k_split);
  simdgroup_matrix<float, 8, 8> acc[Tile::TM * Tile::TN];
  Tile::run(acc, As, Bs, A + p.a_base, B + p.b_base, p, m0, n0, k_begin, k_end, tid, sgid);
  store_tile<float, Tile::TM, Tile::TN, true>(
      acc, stage + sgid * 64, P + int64_t(tgid.z) * p.M * p.N, A, p,
      m0 + int(sgid) / WN * (BM / WM), n0 + int(sgid) % WN * (BN / WN), lane);
}

// Split-K, pass 2: D = alpha·Σ_z P[z] + beta·C, the partitions summed in order in float32.
// grid: (N, M) threads.
template <typename T>
[[kernel]] void gemm_splitk_reduce(
    device const float* P [[buffer(0)]],
    device const T* C [[buffer(1)]],
    device T* D [[buffer(2)]],
    constant const GemmParams& p [[buffer(3)]],
    constant const int& partitions [[buffer(4)]],
    uint2 gid [[thread_position_in_grid]]) {
  const int n = int(gid.x);
  const int m = int(gid.y);
  if (m >= p.M || n >= p.N) return;
  const int64_t at = int64_t(m) * p.N + n;
  const int64_t stride = int64_t(p.M) * p.N;
  float sum = 0.0f;
  for (int z = 0; z < partitions; ++z) sum += P[int64_t(z) * stride + at];
  if (p.use_c) {
    D[at] = T(p.alpha * sum + p.beta * float(C[p.c_base + int64_t(m) * p.c_sm + int64_t(n) * p.c_sn]));
  } else {
    D[at] = T(p.alpha * sum);
  }
}

// complex64: one thread per output element, any operand strides (the loop reads A along a row
// and B down a column). Accumulates (re, im) in float32. grid: (N, M, batch entries) threads.
struct ComplexGemmParams {
  int64_t a_base;
  int64_t b_base;
  int64_t a_sm;  // A: strides between rows and columns
  int64_t a_sk;
  int64_t b_sk;  // B: strides between rows and columns
  int64_t b_sn;
  int M;
  int N;
  int K;
  int batch_ndim;
};

template <typename T>  // complex64_t (a template only so that it is instantiated like the others)
[[kernel]] void gemm_complex(
    device const T* A [[buffer(0)]],
    device const T* B [[buffer(1)]],
    device T* D [[buffer(2)]],
    constant const ComplexGemmParams& p [[buffer(3)]],
    constant const int* batch_shape [[buffer(4)]],
    constant const int64_t* batch_strides [[buffer(5)]],
    uint3 gid [[thread_position_in_grid]]) {
  const int n = int(gid.x);
  const int m = int(gid.y);
  if (m >= p.M || n >= p.N) return;
  int64_t a_off = p.a_base + int64_t(m) * p.a_sm;
  int64_t b_off = p.b_base + int64_t(n) * p.b_sn;
  if (p.batch_ndim > 0) {
    a_off += elem_to_loc<int64_t>(int64_t(gid.z), batch_shape, batch_strides, p.batch_ndim);
    b_off += elem_to_loc<int64_t>(int64_t(gid.z), batch_shape, batch_strides + p.batch_ndim, p.batch_ndim);
  }
  float re = 0.0f;
  float im = 0.0f;
  for (int k = 0; k < p.K; ++k) {
    const T x = A[a_off + int64_t(k) * p.a_sk];
    const T y = B[b_off + int64_t(k) * p.b_sk];
    re = fma(x.real, y.real, fma(-x.imag, y.imag, re));
    im = fma(x.real, y.imag, fma(x.imag, y.real, im));
  }
  D[int64_t(gid.z) * p.M * p.N + int64_t(m) * p.N + n] = make_complex(re, im);
}
