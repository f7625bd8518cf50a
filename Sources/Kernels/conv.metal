// Convolution (channels-last, 1–3 spatial axes) on the GPU.
//
//   conv_gemm    implicit GEMM on simdgroup matrices, one GEMM per group (grid z):
//                D[m, c] = Σ_k A[m, k] · B[k, c] with m an output position (n, o…), c an output
//                channel of the group and k = (tap, ci) a kernel tap and input channel. A is never
//                built: its BM×BK tiles are gathered from the input straight into threadgroup
//                memory (stride, dilations, padding and groups resolved per element; padding and
//                dilation holes read as zero), B's BK×BN tiles from the weight (C_out, taps, Cig).
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
  constexpr int PAD = 16 / sizeof(T);  // skews threadgroup rows across banks
  constexpr int TM = BM / (8 * WM);
  constexpr int TN = BN / (8 * WN);
  constexpr int NTHREADS = WM * WN * 32;
  constexpr int A_PITCH = BK + PAD;
  constexpr int B_PITCH = BN + PAD;
  threadgroup T As[BM * A_PITCH];
  threadgroup T Bs[BK * B_PITCH];
  threadgroup float stage[WM * WN * 64];

  device const T* X = x + p.x_base;
  device const T* W = w + p.w_base;
  const int g = int(tgid.z);
  const int m0 = int(tgid.y) * BM;
  const int n0 = int(tgid.x) * BN;
  const int sm = int(sgid) / WN * (BM / WM);  // this simdgroup's block inside the tile
  const int sn = int(sgid) % WN * (BN / WN);

  simdgroup_matrix<float, 8, 8> acc[TM * TN];
  for (int i = 0; i < TM * TN; ++i) acc[i] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);

  for (int k0 = 0; k0 < p.K; k0 += BK) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // Consecutive threads take consecutive k: consecutive input channels of one tap.
    for (int i = int(tid); i < BM * BK; i += NTHREADS) {
      const int r = i / BK;
      const int kk = i % BK;
      As[r * A_PITCH + kk] = conv_a(X, p, m0 + r, k0 + kk, g);
    }
    for (int i = int(tid); i < BK * BN; i += NTHREADS) {
      const int c = i / BK;
      const int kk = i % BK;
      Bs[kk * B_PITCH + c] = conv_b(W, p, k0 + kk, n0 + c, g);
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

  // Each fragment goes through an 8×8 staging matrix; a lane writes two of its elements.
  threadgroup float* st = stage + sgid * 64;
  for (int i = 0; i < TM; ++i) {
    for (int j = 0; j < TN; ++j) {
      simdgroup_store(acc[i * TN + j], st, 8);
      simdgroup_barrier(mem_flags::mem_threadgroup);
      for (int e = int(lane); e < 64; e += 32) {
        const int m = m0 + sm + 8 * i + e / 8;
        const int c = n0 + sn + 8 * j + e % 8;
        if (m < p.M && c < p.cog) out[int64_t(m) * p.cout + int64_t(g) * p.cog + c] = T(st[e]);
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
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
