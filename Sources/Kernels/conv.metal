// Convolution (channels-last, 1–3 spatial axes) on the GPU.
//
//   conv_gemm    implicit GEMM on simdgroup matrices, one GEMM per group (grid z):
//                D[m, c] = Σ_k A[m, k] · B[k, c] with m an output position (n, o…), c an output
//                channel of the group and k = (tap, ci) a kernel tap and input channel. A is never
//                built: its BM×BK tiles are gathered from the input straight into threadgroup
//                memory (stride, dilations, padding and groups resolved per element; padding and
//                dilation holes read as zero), B's BK×BN tiles from the weight (C_out, taps, Cig).
//   conv_gemm_splitk + conv_splitk_reduce  the same tiles over partitions of K (few output tiles
//                and a long K: the weight gradient, whose K is batch · output positions) into
//                float32 partial sums, then summed in order.
//   conv_direct  one thread per output element, a float sum over taps and input channels: for
//                depthwise and narrow groups (few output channels per group) and small problems,
//                where GEMM tiles would be mostly padding.
//
// Inputs are row-contiguous (x: (N, in…, C_in) from x_base, w: (C_out, taps, Cig) from w_base);
// the output is (N, out…, C_out) row-contiguous. Offsets are 64-bit throughout.
// Precision: operands of type T are multiplied on simdgroup matrices of T and accumulated in
// float32 (as gemm.metal); conv_direct accumulates in float32 too; one final rounding to T.
#include "utils.h"

struct ConvParams {
  int64_t x_base;
  int64_t w_base;
  int nd;          // spatial axes, 1..3 (the arrays below use the first nd entries)
  int batch;
  int in_shape[3];
  int out_shape[3];
  int k_shape[3];
  int stride[3];
  int pad_lo[3];
  int kdil[3];
  int idil[3];
  int cin;
  int cout;
  int cig;         // input / output channels per group
  int cog;
  int flip;        // 1: the kernel is read reversed (a true convolution)
  int M;           // batch · output positions
  int K;           // taps · cig
  int taps;
  int out_positions;
  int in_positions;
};

// The input offset (from the binding's base, channel 0 of the group) of output position o's tap,
// or -1 when the tap reads padding or a dilation hole.
MG_FUNC int64_t conv_input_position(constant const ConvParams& p, int o, int tap) {
  int64_t pos = 0;
  int64_t mult = 1;
  for (int a = p.nd - 1; a >= 0; --a) {
    const int oa = o % p.out_shape[a];
    o /= p.out_shape[a];
    const int ka = tap % p.k_shape[a];
    tap /= p.k_shape[a];
    const int j = oa * p.stride[a] + ka * p.kdil[a] - p.pad_lo[a];
    if (j < 0) return -1;
    const int q = j / p.idil[a];
    if (q * p.idil[a] != j || q >= p.in_shape[a]) return -1;
    pos += int64_t(q) * mult;
    mult *= p.in_shape[a];
  }
  return pos;
}

// A[m, k] for group g (zero outside the matrix, in padding and in dilation holes).
template <typename T>
MG_FUNC T conv_a(device const T* x, constant const ConvParams& p, int m, int k, int g) {
  if (m >= p.M || k >= p.K) return T(0.0f);
  const int n = m / p.out_positions;
  const int o = m - n * p.out_positions;
  const int tap = k / p.cig;
  const int ci = k - tap * p.cig;
  const int64_t pos = conv_input_position(p, o, tap);
  if (pos < 0) return T(0.0f);
  return x[(int64_t(n) * p.in_positions + pos) * p.cin + int64_t(g) * p.cig + ci];
}

// B[k, c] for group g: weight (g·cog + c, tap (reversed when flipping), ci).
template <typename T>
MG_FUNC T conv_b(device const T* w, constant const ConvParams& p, int k, int c, int g) {
  if (k >= p.K || c >= p.cog) return T(0.0f);
  const int tap = k / p.cig;
  const int ci = k - tap * p.cig;
  const int t = p.flip ? p.taps - 1 - tap : tap;
  return w[(int64_t(g * p.cog + c) * p.taps + t) * p.cig + ci];
}

// The tile product over K range [k_begin, k_end) for output tile (m0, n0) of group g, left in
// this simdgroup's accumulators acc[TM·TN] (8×8 float matrices, row-major over its block).
template <typename T, int BM, int BN, int BK, int WM, int WN>
struct ConvTile {
  static constant constexpr int PAD = 16 / sizeof(T);  // skews threadgroup rows across banks
  static constant constexpr int TM = BM / (8 * WM);
  static constant constexpr int TN = BN / (8 * WN);
  static constant constexpr int NTHREADS = WM * WN * 32;
  static constant constexpr int A_PITCH = BK + PAD;
  static constant constexpr int B_PITCH = BN + PAD;

  static MG_FUNC void run(
      thread simdgroup_matrix<float, 8, 8>* acc,
      threadgroup T* As,
      threadgroup T* Bs,
      device const T* X,
      device const T* W,
      constant const ConvParams& p,
      int g,
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
      threadgroup_barrier(mem_flags::mem_threadgroup);
      // Consecutive threads take consecutive k: consecutive input channels of one tap. Columns
      // past k_end (a split-K partition's end) read as zero.
      for (int i = int(tid); i < BM * BK; i += NTHREADS) {
        const int r = i / BK;
        const int kk = i % BK;
        As[r * A_PITCH + kk] = k0 + kk < k_end ? conv_a(X, p, m0 + r, k0 + kk, g) : T(0.0f);
      }
      for (int i = int(tid); i < BK * BN; i += NTHREADS) {
        const int c = i / BK;
        const int kk = i % BK;
        Bs[kk * B_PITCH + c] = k0 + kk < k_end ? conv_b(W, p, k0 + kk, n0 + c, g) : T(0.0f);
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (int kk = 0; kk < BK; kk += 8) {
        simdgroup_matrix<T, 8, 8> a[TM];
        simdgroup_matrix<T, 8, 8> b[TN];
        for (int i = 0; i < TM; ++i) simdgroup_load(a[i], As + (sm + 8 * i) * A_PITCH + kk, A_PITCH);
        for (int j = 0; j < TN; ++j) simdgroup_load(b[j], Bs + kk * B_PITCH + sn + 8 * j, B_PITCH);
        for (int i = 0; i < TM; ++i)
          for (int j = 0; j < TN; ++j) simdgroup_multiply_accumulate(acc[i * TN + j], a[i], b[j], acc[i * TN + j]);
      }
    }
  }

  // Each fragment goes through an 8×8 staging matrix; a lane writes two of its elements to
  // D[m·ld + col0 + c] (the output, or a split-K partition's float partial sums).
  template <typename U>
  static MG_FUNC void store(
      thread simdgroup_matrix<float, 8, 8>* acc,
      threadgroup float* st,
      device U* D,
      int64_t ld,
      int64_t col0,
      int M,
      int ncols,
      int m0,
      int n0,
      uint sgid,
      uint lane) {
    const int sm = int(sgid) / WN * (BM / WM);
    const int sn = int(sgid) % WN * (BN / WN);
    for (int i = 0; i < TM; ++i) {
      for (int j = 0; j < TN; ++j) {
        simdgroup_store(acc[i * TN + j], st, 8);
        simdgroup_barrier(mem_flags::mem_threadgroup);
        for (int e = int(lane); e < 64; e += 32) {
          const int m = m0 + sm + 8 * i + e / 8;
          const int c = n0 + sn + 8 * j + e % 8;
          if (m < M && c < ncols) D[int64_t(m) * ld + col0 + c] = U(st[e]);
        }
        simdgroup_barrier(mem_flags::mem_threadgroup);
      }
    }
  }
};

// grid: (tiles across cog, tiles down M, groups) threadgroups of WM·WN·32 threads.
template <typename T, int BM, int BN, int BK, int WM, int WN>
[[kernel]] void conv_gemm(
    device const T* x [[buffer(0)]],
    device const T* w [[buffer(1)]],
    device T* out [[buffer(2)]],
    constant const ConvParams& p [[buffer(3)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint sgid [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  typedef ConvTile<T, BM, BN, BK, WM, WN> Tile;
  constexpr int PAD = 16 / sizeof(T);  // as Tile::PAD; spelled out so the sizes read plainly
  threadgroup T As[BM * (BK + PAD)];
  threadgroup T Bs[BK * (BN + PAD)];
  threadgroup float stage[WM * WN * 64];
  const int g = int(tgid.z);
  const int m0 = int(tgid.y) * BM;
  const int n0 = int(tgid.x) * BN;
  simdgroup_matrix<float, 8, 8> acc[Tile::TM * Tile::TN];
  Tile::run(acc, As, Bs, x + p.x_base, w + p.w_base, p, g, m0, n0, 0, p.K, tid, sgid);
  Tile::store(acc, stage + sgid * 64, out, int64_t(p.cout), int64_t(g) * p.cog, p.M, p.cog, m0, n0, sgid, lane);
}

// Split-K, pass 1 (few output tiles, long K — the weight gradient's convolutions): grid z covers
// groups × partitions; partition z_part sums K range [z_part·k_split, …) into float partials
// P[z_part][m][co] (co over all groups).
template <typename T, int BM, int BN, int BK, int WM, int WN>
[[kernel]] void conv_gemm_splitk(
    device const T* x [[buffer(0)]],
    device const T* w [[buffer(1)]],
    device float* P [[buffer(2)]],
    constant const ConvParams& p [[buffer(3)]],
    constant const int& k_split [[buffer(4)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint sgid [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  typedef ConvTile<T, BM, BN, BK, WM, WN> Tile;
  constexpr int PAD = 16 / sizeof(T);
  threadgroup T As[BM * (BK + PAD)];
  threadgroup T Bs[BK * (BN + PAD)];
  threadgroup float stage[WM * WN * 64];
  const int groups = p.cout / p.cog;
  const int g = int(tgid.z) % groups;
  const int part = int(tgid.z) / groups;
  const int m0 = int(tgid.y) * BM;
  const int n0 = int(tgid.x) * BN;
  const int k_begin = part * k_split;
  const int k_end = min(p.K, k_begin + k_split);
  simdgroup_matrix<float, 8, 8> acc[Tile::TM * Tile::TN];
  Tile::run(acc, As, Bs, x + p.x_base, w + p.w_base, p, g, m0, n0, k_begin, k_end, tid, sgid);
  device float* Pz = P + int64_t(part) * p.M * p.cout;
  Tile::store(acc, stage + sgid * 64, Pz, int64_t(p.cout), int64_t(g) * p.cog, p.M, p.cog, m0, n0, sgid, lane);
}

// Split-K, pass 2: out[i] = Σ_part P[part][i], the partitions summed in order in float32, one
// rounding. grid: M·C_out threads.
template <typename T>
[[kernel]] void conv_splitk_reduce(
    device const float* P [[buffer(0)]],
    device T* out [[buffer(1)]],
    constant const int64_t& n [[buffer(2)]],
    constant const int& parts [[buffer(3)]],
    uint gid [[thread_position_in_grid]]) {
  if (int64_t(gid) >= n) return;
  float s = 0.0f;
  for (int z = 0; z < parts; ++z) s += P[int64_t(z) * n + gid];
  out[gid] = T(s);
}

// grid: (C_out, M) threads; thread (co, m) writes out[m, co].
template <typename T>
[[kernel]] void conv_direct(
    device const T* x [[buffer(0)]],
    device const T* w [[buffer(1)]],
    device T* out [[buffer(2)]],
    constant const ConvParams& p [[buffer(3)]],
    uint2 gid [[thread_position_in_grid]]) {
  const int co = int(gid.x);
  const int m = int(gid.y);
  if (co >= p.cout || m >= p.M) return;
  device const T* X = x + p.x_base;
  device const T* W = w + p.w_base;
  const int g = co / p.cog;
  const int n = m / p.out_positions;
  const int o = m - n * p.out_positions;
  device const T* xg = X + int64_t(n) * p.in_positions * p.cin + int64_t(g) * p.cig;
  float acc = 0.0f;
  for (int tap = 0; tap < p.taps; ++tap) {
    const int64_t pos = conv_input_position(p, o, tap);
    if (pos < 0) continue;
    device const T* xs = xg + pos * p.cin;
    device const T* ws = W + (int64_t(co) * p.taps + (p.flip ? p.taps - 1 - tap : tap)) * p.cig;
    for (int ci = 0; ci < p.cig; ++ci) acc += float(xs[ci]) * float(ws[ci]);
  }
  out[int64_t(m) * p.cout + co] = T(acc);
}
