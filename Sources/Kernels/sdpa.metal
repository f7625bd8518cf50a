// Scaled dot-product attention (mg.fast.scaledDotProductAttention): O = softmax(scale·Q·Kᵀ + mask)·V
// with grouped-query heads, every mask kind and attention sinks, for every head dimension up to
// 256, forward and backward, never forming the qL×kL score matrix in device memory.
//
//   sdpa_prefill        tiled flash attention: a threadgroup owns BQ = 8·NSG query rows of one
//                       (batch, head); each simdgroup owns 8 of them. Key blocks of BK keys (and
//                       their values) are staged in threadgroup memory; S = Q·Kᵀ and O += P·V run on
//                       8×8 simdgroup matrices; the softmax is online (running max m and sum l per
//                       row, O rescaled when m grows).
//   sdpa_decode         short queries (qL ≤ 8): the keys are split into `blocks` chunks, one
//                       threadgroup each; a thread scores one key for every query row, then the
//                       threads share the value rows. Each chunk writes unnormalised partial
//   sdpa_decode_combine (o, m, l) to scratch; the combine pass merges the chunks per row.
//   sdpa_backward_dq    flash-attention-2 backward, query side: recomputes P from the saved row
//                       statistics, D_i = Σ dO∘O, dS = P∘(dP − D), dQ = scale·dS·K; writes D.
//   sdpa_backward_dkdv  key side: a threadgroup owns 8·NSG keys of one kv head and loops over the
//                       query heads of its group and every query block: dV = Pᵀ·dO, dK = scale·dSᵀ·Q.
//
// Scores live in the log2 domain (s = scale·log2(e)·q·k + log2(e)·mask) so the exponentials are
// exp2. Saved statistics per row are {m, l}: P = exp2(s − m)/l.
//
// Masks, as MLX's composition defines them (mlx/fast.cpp): a boolean mask (and "causal", lower-
// right aligned: key j is visible to query i iff j ≤ i + kL − qL) replaces hidden scores by a
// finite minimum, so a row that hides every key attends uniformly to all of them (and, with a
// sink, to the sink only); an additive mask adds; -inf scores give NaN rows as softmax does. Here
// the finite minimum is SDPA_HIDDEN (below any real score, exactly equal across a row, so
// exp2(hidden − hidden) = 1). Keys past kL in a partial block are -inf: they weigh exactly zero.
// Sinks: one logit per query head, joining every row's softmax with a zero value row.
//
// Precision: the forward's products run on simdgroup matrices of AccT — float (the default: 16-bit
// inputs are converted exactly, products accumulate in float32) or the input type (policy
// accumulate16 = "native"); scores, softmax statistics and the decode path are float either way.
// The backward is float throughout.
#include "reduction.h"

#define SDPA_HIDDEN (-3.0e38f)
#define SDPA_LOG2E 1.4426950408889634f

struct SdpaParams {
  int64_t q_base;  // element offsets of the views' first elements in their bindings
  int64_t k_base;
  int64_t v_base;
  int64_t mask_base;
  int64_t o_base;
  int64_t do_base;
  int64_t sink_base;
  int64_t sink_step;
  int64_t qs[4];   // strides of q, k, v over (batch, head, position, feature)
  int64_t ks[4];
  int64_t vs[4];
  int64_t ms[4];   // the mask's strides over (batch, q head, query, key); 0 where broadcast
  int64_t os[4];   // backward: the forward output and its cotangent
  int64_t dos[4];
  int B;
  int Hq;
  int Hkv;
  int qL;
  int kL;
  int Dk;
  int Dv;
  int gqa;         // Hq / Hkv
  int causal;
  int mask_kind;   // 0 none, 1 boolean, 2 additive
  int has_sinks;
  int blocks;      // decode: key chunks
  int chunk;       // decode: keys per chunk
  float scale_log2;  // scale·log2(e)
};

// The lane's two elements of an 8×8 simdgroup matrix: row fm, columns fn and fn + 1 (Apple's
// layout, as MLX's steel kernels address it).
MG_FUNC int frag_row(uint lane) { return int(((lane >> 2) & 4u) + ((lane >> 1) & 3u)); }
MG_FUNC int frag_col(uint lane) { return int(((lane >> 2) & 2u) * 2u + (lane & 1u) * 2u); }

// Reductions over the 4 lanes holding one fragment row (lane bits 0 and 3).
MG_FUNC float frag_row_max(float v) {
  v = metal::max(v, simd_shuffle_xor(v, ushort(1)));
  return metal::max(v, simd_shuffle_xor(v, ushort(8)));
}
MG_FUNC float frag_row_sum(float v) {
  v += simd_shuffle_xor(v, ushort(1));
  return v + simd_shuffle_xor(v, ushort(8));
}

// exp2(s − m) with exp2(−∞ − (−∞)) read as 0 (a row with no finite score yet).
MG_FUNC float sdpa_exp(float s, float m) { return m == -INFINITY ? 0.0f : metal::exp2(s - m); }
// The factor that moves a sum from maximum `from` to maximum `to` (1 when unchanged, also at −∞).
MG_FUNC float sdpa_rescale(float from, float to) { return from == to ? 1.0f : metal::exp2(from - to); }

// Score of query i against key j (log2 domain) from the raw product qk; `hidden` tells whether a
// boolean or causal mask hid it (its gradient is then zero).
template <typename T>
MG_FUNC float sdpa_score(float qk, int b, int h, int i, int j, constant const SdpaParams& p, device const bool* mask_bool,
                         device const T* mask_add, thread bool& hidden) {
  hidden = false;
  if (j >= p.kL || i >= p.qL) return -INFINITY;
  float s = qk * p.scale_log2;
  if (p.causal && j > i + p.kL - p.qL) {
    hidden = true;
    return SDPA_HIDDEN;
  }
  if (p.mask_kind != 0) {
    const int64_t at = p.mask_base + int64_t(b) * p.ms[0] + int64_t(h) * p.ms[1] + int64_t(i) * p.ms[2] + int64_t(j) * p.ms[3];
    if (p.mask_kind == 1) {
      if (!mask_bool[at]) {
        hidden = true;
        return SDPA_HIDDEN;
      }
    } else {
      s += float(mask_add[at]) * SDPA_LOG2E;
    }
  }
  return s;
}

// The key range [0, end) a block of query rows [i0, i1) must visit: with a causal mask the keys
// after the last row's limit are hidden from every row, so they are skipped — unless some row
// hides every key (qL > kL), which attends uniformly to all of them.
MG_FUNC int sdpa_key_end(constant const SdpaParams& p, int i0, int i1) {
  if (!p.causal || i0 + p.kL - p.qL < 0) return p.kL;
  return metal::min(p.kL, i1 - 1 + p.kL - p.qL + 1);
}

// Rewrites a fragment whose lanes changed their own elements (thread_elements) through this
// simdgroup's 64-element stage, so that it is one plain matrix again before it feeds several
// products. On hardware this is two cheap threadgroup-memory passes; on the simulator it replaces
// a gather of the lanes' elements before every product with one.
template <typename F>
MG_FUNC void resync(thread simdgroup_matrix<F, 8, 8>& m, threadgroup F* stage) {
  simdgroup_store(m, stage, 8);
  simdgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_load(m, stage, 8);
  simdgroup_barrier(mem_flags::mem_threadgroup);
}

// Loads 8 rows × D (zero-padded to DP) of a strided matrix into fragments, through this
// simdgroup's 64-element stage. Rows at or past `rows_left` read as zero.
template <typename F, int DP, typename T>
MG_FUNC void load_row_fragments(thread simdgroup_matrix<F, 8, 8>* frags, device const T* src, int64_t row_stride,
                                int64_t col_stride, int rows_left, int D, threadgroup F* stage, uint lane) {
  for (int f = 0; f < DP / 8; ++f) {
    for (int e = int(lane); e < 64; e += 32) {
      const int r = e / 8;
      const int c = f * 8 + e % 8;
      stage[e] = (r < rows_left && c < D) ? F(src[int64_t(r) * row_stride + int64_t(c) * col_stride]) : F(0.0f);
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_load(frags[f], stage, 8);
    simdgroup_barrier(mem_flags::mem_threadgroup);
  }
}

// Copies ROWS × D of a strided matrix into a threadgroup tile of pitch PITCH (zero past the
// matrix), every thread of the threadgroup helping.
template <int ROWS, int DP, int PITCH, int NTHREADS, typename F, typename T>
MG_FUNC void load_tile_rows(threadgroup F* dst, device const T* src, int64_t row_stride, int64_t col_stride, int rows_left,
                            int D, uint tid) {
  for (int e = int(tid); e < ROWS * DP; e += NTHREADS) {
    const int r = e / DP;
    const int c = e % DP;
    dst[r * PITCH + c] = (r < rows_left && c < D) ? F(src[int64_t(r) * row_stride + int64_t(c) * col_stride]) : F(0.0f);
  }
}

// ---------------------------------------------------------------------------------------------
// Forward, prefill. grid: (⌈qL/BQ⌉, Hq, B) threadgroups of 32·NSG threads.

template <typename T, typename AccT, int DK, int DV, int BK, int NSG>
[[kernel]] void sdpa_prefill(
    device const T* q [[buffer(0)]],
    device const T* k [[buffer(1)]],
    device const T* v [[buffer(2)]],
    device const bool* mask_bool [[buffer(3)]],
    device const T* mask_add [[buffer(4)]],
    device const T* sinks [[buffer(5)]],
    device T* o [[buffer(6)]],
    device float2* stats [[buffer(7)]],
    constant const SdpaParams& p [[buffer(8)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint sg [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  // Every fragment and staged tile holds AccT: float products of converted 16-bit inputs are
  // exact, and one element type per product is what every Metal GPU accepts.
  constexpr int BQ = 8 * NSG;
  constexpr int NT = 32 * NSG;
  constexpr int PAD = 16 / sizeof(AccT);
  constexpr int KP = DK + PAD;
  constexpr int VP = DV + PAD;
  threadgroup AccT Kt[BK * KP];
  threadgroup AccT Vt[BK * VP];
  threadgroup AccT stage[NSG * 64];

  const int b = int(tgid.z);
  const int h = int(tgid.y);
  const int hk = h / p.gqa;
  const int i0 = int(tgid.x) * BQ;            // the tile's first query row
  const int r0 = i0 + int(sg) * 8;            // this simdgroup's first row
  const int fm = frag_row(lane);
  const int fn = frag_col(lane);
  const int i = r0 + fm;                      // the row this lane's elements belong to

  device const T* qh = q + p.q_base + int64_t(b) * p.qs[0] + int64_t(h) * p.qs[1];
  device const T* kh = k + p.k_base + int64_t(b) * p.ks[0] + int64_t(hk) * p.ks[1];
  device const T* vh = v + p.v_base + int64_t(b) * p.vs[0] + int64_t(hk) * p.vs[1];

  simdgroup_matrix<AccT, 8, 8> Qf[DK / 8];
  load_row_fragments<AccT, DK>(Qf, qh + int64_t(r0) * p.qs[2], p.qs[2], p.qs[3], p.qL - r0, p.Dk, stage + sg * 64, lane);

  simdgroup_matrix<AccT, 8, 8> O[DV / 8];
  for (int f = 0; f < DV / 8; ++f) O[f] = make_filled_simdgroup_matrix<AccT, 8, 8>(AccT(0));
  float m = -INFINITY;
  float l = 0.0f;
  if (p.has_sinks) {  // the sink joins the row as one more logit with a zero value
    m = float(sinks[p.sink_base + int64_t(h) * p.sink_step]) * SDPA_LOG2E;
    l = 1.0f;
  }

  const int j_end = sdpa_key_end(p, i0, i0 + BQ);
  for (int j0 = 0; j0 < j_end; j0 += BK) {
    threadgroup_barrier(mem_flags::mem_threadgroup);  // the previous block is no longer read
    load_tile_rows<BK, DK, KP, NT>(Kt, kh + int64_t(j0) * p.ks[2], p.ks[2], p.ks[3], p.kL - j0, p.Dk, tid);
    load_tile_rows<BK, DV, VP, NT>(Vt, vh + int64_t(j0) * p.vs[2], p.vs[2], p.vs[3], p.kL - j0, p.Dv, tid);
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // S = Q·Kᵀ for this simdgroup's 8 rows and the block's BK keys.
    simdgroup_matrix<AccT, 8, 8> S[BK / 8];
    for (int kf = 0; kf < BK / 8; ++kf) {
      S[kf] = make_filled_simdgroup_matrix<AccT, 8, 8>(AccT(0));
      for (int d = 0; d < DK / 8; ++d) {
        simdgroup_matrix<AccT, 8, 8> Kf;
        simdgroup_load(Kf, Kt + kf * 8 * KP + d * 8, KP, ulong2(0, 0), true);
        simdgroup_multiply_accumulate(S[kf], Qf[d], Kf, S[kf]);
      }
    }

    // Online softmax on the lane's elements of row i (scores in float: the hidden minimum
    // does not fit a 16-bit accumulator).
    float sc[BK / 8][2];
    float block_max = -INFINITY;
    for (int kf = 0; kf < BK / 8; ++kf) {
      for (int c = 0; c < 2; ++c) {
        bool hidden;
        sc[kf][c] = sdpa_score<T>(float(S[kf].thread_elements()[c]), b, h, i, j0 + kf * 8 + fn + c, p, mask_bool, mask_add, hidden);
        block_max = metal::max(block_max, sc[kf][c]);
      }
    }
    const float m_new = metal::max(m, frag_row_max(block_max));
    const float alpha = sdpa_rescale(m, m_new);
    float block_sum = 0.0f;
    for (int kf = 0; kf < BK / 8; ++kf) {
      for (int c = 0; c < 2; ++c) {
        const float pr = sdpa_exp(sc[kf][c], m_new);
        S[kf].thread_elements()[c] = AccT(pr);
        block_sum += pr;
      }
    }
    l = l * alpha + frag_row_sum(block_sum);
    m = m_new;
    for (int kf = 0; kf < BK / 8; ++kf) resync(S[kf], stage + sg * 64);

    // O = α·O + P·V
    for (int f = 0; f < DV / 8; ++f) {
      O[f].thread_elements()[0] *= AccT(alpha);
      O[f].thread_elements()[1] *= AccT(alpha);
      for (int kf = 0; kf < BK / 8; ++kf) {
        simdgroup_matrix<AccT, 8, 8> Vf;
        simdgroup_load(Vf, Vt + kf * 8 * VP + f * 8, VP);
        simdgroup_multiply_accumulate(O[f], S[kf], Vf, O[f]);
      }
    }
  }

  if (i < p.qL) {
    device T* orow = o + ((int64_t(b) * p.Hq + h) * p.qL + i) * p.Dv;
    const float inv_l = 1.0f / l;
    for (int f = 0; f < DV / 8; ++f) {
      for (int c = 0; c < 2; ++c) {
        const int d = f * 8 + fn + c;
        if (d < p.Dv) orow[d] = T(float(O[f].thread_elements()[c]) * inv_l);
      }
    }
    if ((lane & 9u) == 0) stats[(int64_t(b) * p.Hq + h) * p.qL + i] = float2(m, l);
  }
}

// ---------------------------------------------------------------------------------------------
// Forward, decode (qL ≤ 8). grid: (blocks, Hq, B) threadgroups of NT threads; chunk c covers keys
// [c·chunk, min(kL, (c+1)·chunk)). partial_o: [B, Hq, blocks, qL, Dv] float, partial_ml:
// [B, Hq, blocks, qL] {m, l}.

#define SDPA_DECODE_ROWS 8

template <typename T, int DK, int DV, int NT>
[[kernel]] void sdpa_decode(
    device const T* q [[buffer(0)]],
    device const T* k [[buffer(1)]],
    device const T* v [[buffer(2)]],
    device const bool* mask_bool [[buffer(3)]],
    device const T* mask_add [[buffer(4)]],
    device float* partial_o [[buffer(5)]],
    device float2* partial_ml [[buffer(6)]],
    constant const SdpaParams& p [[buffer(7)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint sg [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  constexpr int NSG = NT / 32;
  constexpr int OPT = (DV + NT - 1) / NT;  // output features per thread
  threadgroup float qs[SDPA_DECODE_ROWS * DK];
  threadgroup float P[SDPA_DECODE_ROWS * NT];
  threadgroup float row_m[SDPA_DECODE_ROWS];
  threadgroup float row_alpha[SDPA_DECODE_ROWS];

  const int b = int(tgid.z);
  const int h = int(tgid.y);
  const int chunk_id = int(tgid.x);
  const int hk = h / p.gqa;
  const int R = p.qL;
  device const T* qh = q + p.q_base + int64_t(b) * p.qs[0] + int64_t(h) * p.qs[1];
  device const T* kh = k + p.k_base + int64_t(b) * p.ks[0] + int64_t(hk) * p.ks[1];
  device const T* vh = v + p.v_base + int64_t(b) * p.vs[0] + int64_t(hk) * p.vs[1];

  for (int e = int(tid); e < R * DK; e += NT) {
    const int r = e / DK;
    const int d = e % DK;
    qs[e] = d < p.Dk ? float(qh[int64_t(r) * p.qs[2] + int64_t(d) * p.qs[3]]) : 0.0f;
  }
  if (tid < SDPA_DECODE_ROWS) row_m[tid] = -INFINITY;

  float acc[SDPA_DECODE_ROWS][OPT];
  float l[SDPA_DECODE_ROWS];
  for (int r = 0; r < SDPA_DECODE_ROWS; ++r) {
    l[r] = 0.0f;
    for (int u = 0; u < OPT; ++u) acc[r][u] = 0.0f;
  }

  const int c0 = chunk_id * p.chunk;
  const int c1 = metal::min(p.kL, metal::min(c0 + p.chunk, sdpa_key_end(p, 0, R)));
  for (int j0 = c0; j0 < c1; j0 += NT) {
    threadgroup_barrier(mem_flags::mem_threadgroup);  // qs written / the previous P consumed
    // 1. Thread tid scores key j0 + tid against every row.
    const int j = j0 + int(tid);
    float s[SDPA_DECODE_ROWS];
    for (int r = 0; r < SDPA_DECODE_ROWS; ++r) s[r] = 0.0f;
    if (j < c1) {
      device const T* krow = kh + int64_t(j) * p.ks[2];
      for (int d = 0; d < p.Dk; ++d) {
        const float kd = float(krow[int64_t(d) * p.ks[3]]);
        for (int r = 0; r < R; ++r) s[r] += qs[r * DK + d] * kd;
      }
    }
    for (int r = 0; r < R; ++r) {
      bool hidden;
      P[r * NT + tid] = j < c1 ? sdpa_score<T>(s[r], b, h, r, j, p, mask_bool, mask_add, hidden) : -INFINITY;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // 2. Simdgroup r % NSG turns row r's scores into probabilities and its running statistics.
    for (int r = int(sg); r < R; r += NSG) {
      float mx = -INFINITY;
      for (int t = int(lane); t < NT; t += 32) mx = metal::max(mx, P[r * NT + t]);
      mx = simd_max(mx);
      const float m_old = row_m[r];
      const float m_new = metal::max(m_old, mx);
      for (int t = int(lane); t < NT; t += 32) P[r * NT + t] = sdpa_exp(P[r * NT + t], m_new);
      simdgroup_barrier(mem_flags::mem_threadgroup);  // every lane has read row_m[r]
      if (lane == 0) {
        row_m[r] = m_new;
        row_alpha[r] = sdpa_rescale(m_old, m_new);
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // 3. Thread tid accumulates output features tid, tid + NT, … over the block's values.
    for (int r = 0; r < R; ++r) {
      const float a = row_alpha[r];
      l[r] *= a;
      for (int u = 0; u < OPT; ++u) acc[r][u] *= a;
    }
    const int n = metal::min(NT, c1 - j0);
    for (int t = 0; t < n; ++t) {
      device const T* vrow = vh + int64_t(j0 + t) * p.vs[2];
      for (int u = 0; u < OPT; ++u) {
        const int d = int(tid) + u * NT;
        const float vd = d < p.Dv ? float(vrow[int64_t(d) * p.vs[3]]) : 0.0f;
        for (int r = 0; r < R; ++r) acc[r][u] += P[r * NT + t] * vd;
      }
      for (int r = 0; r < R; ++r) l[r] += P[r * NT + t];
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);

  const int64_t part = (int64_t(b) * p.Hq + h) * p.blocks + chunk_id;
  for (int r = 0; r < R; ++r) {
    for (int u = 0; u < OPT; ++u) {
      const int d = int(tid) + u * NT;
      if (d < p.Dv) partial_o[(part * R + r) * p.Dv + d] = acc[r][u];
    }
    if (tid == 0) partial_ml[part * R + r] = float2(row_m[r], l[r]);
  }
}

// Merges the chunks of one query row. grid: (qL, Hq, B) threadgroups of NT threads.
template <typename T, int NT>
[[kernel]] void sdpa_decode_combine(
    device const float* partial_o [[buffer(0)]],
    device const float2* partial_ml [[buffer(1)]],
    device const T* sinks [[buffer(2)]],
    device T* o [[buffer(3)]],
    device float2* stats [[buffer(4)]],
    constant const SdpaParams& p [[buffer(5)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  const int r = int(tgid.x);
  const int h = int(tgid.y);
  const int b = int(tgid.z);
  const int R = p.qL;
  const int64_t bh = int64_t(b) * p.Hq + h;
  const float sink = p.has_sinks ? float(sinks[p.sink_base + int64_t(h) * p.sink_step]) * SDPA_LOG2E : -INFINITY;
  float M = sink;
  for (int c = 0; c < p.blocks; ++c) M = metal::max(M, partial_ml[(bh * p.blocks + c) * R + r].x);
  float L = p.has_sinks ? sdpa_rescale(sink, M) : 0.0f;
  for (int c = 0; c < p.blocks; ++c) {
    const float2 ml = partial_ml[(bh * p.blocks + c) * R + r];
    L += ml.y * sdpa_rescale(ml.x, M);
  }
  for (int d = int(tid); d < p.Dv; d += NT) {
    float acc = 0.0f;
    for (int c = 0; c < p.blocks; ++c) {
      const int64_t part = bh * p.blocks + c;
      acc += partial_o[(part * R + r) * p.Dv + d] * sdpa_rescale(partial_ml[part * R + r].x, M);
    }
    o[(bh * R + r) * p.Dv + d] = T(acc / L);
  }
  if (tid == 0) stats[bh * R + r] = float2(M, L);
}

// ---------------------------------------------------------------------------------------------
// Backward, query side. grid: (⌈qL/BQ⌉, Hq, B) threadgroups of 32·NSG threads. Inputs: q, k, v,
// the mask, the forward output o and its statistics, the cotangent dO. Writes dQ ([B, Hq, qL,
// Dk]) and D ([B, Hq, qL] float) for the key side.

template <typename T, int DK, int DV, int BK, int NSG>
[[kernel]] void sdpa_backward_dq(
    device const T* q [[buffer(0)]],
    device const T* k [[buffer(1)]],
    device const T* v [[buffer(2)]],
    device const bool* mask_bool [[buffer(3)]],
    device const T* mask_add [[buffer(4)]],
    device const T* o [[buffer(5)]],
    device const float2* stats [[buffer(6)]],
    device const T* dout [[buffer(7)]],
    device T* dq [[buffer(8)]],
    device float* Dsum [[buffer(9)]],
    constant const SdpaParams& p [[buffer(10)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint sg [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  constexpr int BQ = 8 * NSG;
  constexpr int NT = 32 * NSG;
  constexpr int PAD = 4;  // float tiles
  constexpr int KP = DK + PAD;
  constexpr int VP = DV + PAD;
  threadgroup float Kt[BK * KP];
  threadgroup float Vt[BK * VP];
  threadgroup float stage[NSG * 64];
  threadgroup float rowD[NSG * 8];

  const int b = int(tgid.z);
  const int h = int(tgid.y);
  const int hk = h / p.gqa;
  const int i0 = int(tgid.x) * BQ;
  const int r0 = i0 + int(sg) * 8;
  const int fm = frag_row(lane);
  const int fn = frag_col(lane);
  const int i = r0 + fm;
  const int64_t bh = int64_t(b) * p.Hq + h;

  device const T* qh = q + p.q_base + int64_t(b) * p.qs[0] + int64_t(h) * p.qs[1];
  device const T* kh = k + p.k_base + int64_t(b) * p.ks[0] + int64_t(hk) * p.ks[1];
  device const T* vh = v + p.v_base + int64_t(b) * p.vs[0] + int64_t(hk) * p.vs[1];
  device const T* oh = o + p.o_base + int64_t(b) * p.os[0] + int64_t(h) * p.os[1];
  device const T* doh = dout + p.do_base + int64_t(b) * p.dos[0] + int64_t(h) * p.dos[1];

  // D for the simdgroup's 8 rows: 4 lanes per row.
  {
    const int rr = int(lane) / 4;
    const int part = int(lane) % 4;
    float acc = 0.0f;
    if (r0 + rr < p.qL) {
      for (int d = part; d < p.Dv; d += 4) {
        acc += float(doh[int64_t(r0 + rr) * p.dos[2] + int64_t(d) * p.dos[3]]) * float(oh[int64_t(r0 + rr) * p.os[2] + int64_t(d) * p.os[3]]);
      }
    }
    acc += simd_shuffle_xor(acc, ushort(1));
    acc += simd_shuffle_xor(acc, ushort(2));
    if (part == 0) {
      rowD[sg * 8 + rr] = acc;
      if (r0 + rr < p.qL) Dsum[bh * p.qL + r0 + rr] = acc;
    }
  }
  simdgroup_barrier(mem_flags::mem_threadgroup);
  const float Di = rowD[sg * 8 + fm];
  const float2 ml = i < p.qL ? stats[bh * p.qL + i] : float2(0.0f, 1.0f);
  const float inv_l = 1.0f / ml.y;

  simdgroup_matrix<float, 8, 8> Qf[DK / 8];
  simdgroup_matrix<float, 8, 8> dOf[DV / 8];
  load_row_fragments<float, DK>(Qf, qh + int64_t(r0) * p.qs[2], p.qs[2], p.qs[3], p.qL - r0, p.Dk, stage + sg * 64, lane);
  load_row_fragments<float, DV>(dOf, doh + int64_t(r0) * p.dos[2], p.dos[2], p.dos[3], p.qL - r0, p.Dv, stage + sg * 64, lane);
  simdgroup_matrix<float, 8, 8> dQ[DK / 8];
  for (int f = 0; f < DK / 8; ++f) dQ[f] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);

  const int j_end = sdpa_key_end(p, i0, i0 + BQ);
  // This simdgroup's own causal end: key fragments past it are hidden from all of its 8 rows
  // (dS = 0), so their three products are skipped — the block's diagonal tiles cost half.
  const int sg_end = sdpa_key_end(p, r0, r0 + 8);
  for (int j0 = 0; j0 < j_end; j0 += BK) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    load_tile_rows<BK, DK, KP, NT>(Kt, kh + int64_t(j0) * p.ks[2], p.ks[2], p.ks[3], p.kL - j0, p.Dk, tid);
    load_tile_rows<BK, DV, VP, NT>(Vt, vh + int64_t(j0) * p.vs[2], p.vs[2], p.vs[3], p.kL - j0, p.Dv, tid);
    threadgroup_barrier(mem_flags::mem_threadgroup);

    const int kfs = metal::clamp((sg_end - j0 + 7) / 8, 0, BK / 8);  // fragments this simdgroup sees
    simdgroup_matrix<float, 8, 8> S[BK / 8];
    simdgroup_matrix<float, 8, 8> dP[BK / 8];
    for (int kf = 0; kf < kfs; ++kf) {
      S[kf] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      dP[kf] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      for (int d = 0; d < DK / 8; ++d) {
        simdgroup_matrix<float, 8, 8> Kf;
        simdgroup_load(Kf, Kt + kf * 8 * KP + d * 8, KP, ulong2(0, 0), true);
        simdgroup_multiply_accumulate(S[kf], Qf[d], Kf, S[kf]);
      }
      for (int d = 0; d < DV / 8; ++d) {
        simdgroup_matrix<float, 8, 8> Vf;
        simdgroup_load(Vf, Vt + kf * 8 * VP + d * 8, VP, ulong2(0, 0), true);
        simdgroup_multiply_accumulate(dP[kf], dOf[d], Vf, dP[kf]);
      }
      // dS = P∘(dP − D); zero where a boolean or causal mask hid the score.
      for (int c = 0; c < 2; ++c) {
        bool hidden;
        const float s = sdpa_score<T>(S[kf].thread_elements()[c], b, h, i, j0 + kf * 8 + fn + c, p, mask_bool, mask_add, hidden);
        const float pr = sdpa_exp(s, ml.x) * inv_l;
        S[kf].thread_elements()[c] = hidden ? 0.0f : pr * (dP[kf].thread_elements()[c] - Di);
      }
      resync(S[kf], stage + sg * 64);
    }
    for (int f = 0; f < DK / 8; ++f) {
      for (int kf = 0; kf < kfs; ++kf) {
        simdgroup_matrix<float, 8, 8> Kf;
        simdgroup_load(Kf, Kt + kf * 8 * KP + f * 8, KP);
        simdgroup_multiply_accumulate(dQ[f], S[kf], Kf, dQ[f]);
      }
    }
  }

  if (i < p.qL) {
    const float scale = p.scale_log2 / SDPA_LOG2E;
    device T* row = dq + (bh * p.qL + i) * p.Dk;
    for (int f = 0; f < DK / 8; ++f) {
      for (int c = 0; c < 2; ++c) {
        const int d = f * 8 + fn + c;
        if (d < p.Dk) row[d] = T(dQ[f].thread_elements()[c] * scale);
      }
    }
  }
}

// Backward, key side. grid: (⌈kL/(8·NSG)⌉, Hkv, B) threadgroups of 32·NSG threads; BQ query rows
// are staged per step. Reads D from sdpa_backward_dq. Writes dK, dV ([B, Hkv, kL, Dk|Dv]).

template <typename T, int DK, int DV, int BQ, int NSG>
[[kernel]] void sdpa_backward_dkdv(
    device const T* q [[buffer(0)]],
    device const T* k [[buffer(1)]],
    device const T* v [[buffer(2)]],
    device const bool* mask_bool [[buffer(3)]],
    device const T* mask_add [[buffer(4)]],
    device const float2* stats [[buffer(5)]],
    device const float* Dsum [[buffer(6)]],
    device const T* dout [[buffer(7)]],
    device T* dk [[buffer(8)]],
    device T* dv [[buffer(9)]],
    constant const SdpaParams& p [[buffer(10)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint sg [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  constexpr int BKV = 8 * NSG;
  constexpr int NT = 32 * NSG;
  constexpr int PAD = 4;  // float tiles
  constexpr int QP = DK + PAD;
  constexpr int OP = DV + PAD;
  threadgroup float Qt[BQ * QP];
  threadgroup float dOt[BQ * OP];
  threadgroup float stage[NSG * 64];
  threadgroup float row_m[BQ];
  threadgroup float row_inv_l[BQ];
  threadgroup float row_D[BQ];

  const int b = int(tgid.z);
  const int hk = int(tgid.y);
  const int j0 = int(tgid.x) * BKV;
  const int c0 = j0 + int(sg) * 8;  // this simdgroup's first key
  const int fm = frag_row(lane);
  const int fn = frag_col(lane);
  const int j = c0 + fm;            // the key this lane's elements belong to

  device const T* kh = k + p.k_base + int64_t(b) * p.ks[0] + int64_t(hk) * p.ks[1];
  device const T* vh = v + p.v_base + int64_t(b) * p.vs[0] + int64_t(hk) * p.vs[1];
  simdgroup_matrix<float, 8, 8> Kf[DK / 8];
  simdgroup_matrix<float, 8, 8> Vf[DV / 8];
  load_row_fragments<float, DK>(Kf, kh + int64_t(c0) * p.ks[2], p.ks[2], p.ks[3], p.kL - c0, p.Dk, stage + sg * 64, lane);
  load_row_fragments<float, DV>(Vf, vh + int64_t(c0) * p.vs[2], p.vs[2], p.vs[3], p.kL - c0, p.Dv, stage + sg * 64, lane);
  simdgroup_matrix<float, 8, 8> dK[DK / 8];
  simdgroup_matrix<float, 8, 8> dV[DV / 8];
  for (int f = 0; f < DK / 8; ++f) dK[f] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (int f = 0; f < DV / 8; ++f) dV[f] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);

  const int off = p.kL - p.qL;
  for (int hr = 0; hr < p.gqa; ++hr) {
    const int h = hk * p.gqa + hr;
    const int64_t bh = int64_t(b) * p.Hq + h;
    device const T* qh = q + p.q_base + int64_t(b) * p.qs[0] + int64_t(h) * p.qs[1];
    device const T* doh = dout + p.do_base + int64_t(b) * p.dos[0] + int64_t(h) * p.dos[1];
    for (int i0 = 0; i0 < p.qL; i0 += BQ) {
      // Causal: rows whose last visible key precedes this tile never see it (unless they hide
      // every key and attend uniformly).
      if (p.causal && i0 + off >= 0 && i0 + BQ - 1 + off < j0) continue;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      load_tile_rows<BQ, DK, QP, NT>(Qt, qh + int64_t(i0) * p.qs[2], p.qs[2], p.qs[3], p.qL - i0, p.Dk, tid);
      load_tile_rows<BQ, DV, OP, NT>(dOt, doh + int64_t(i0) * p.dos[2], p.dos[2], p.dos[3], p.qL - i0, p.Dv, tid);
      for (int r = int(tid); r < BQ; r += NT) {
        const bool in = i0 + r < p.qL;
        const float2 ml = in ? stats[bh * p.qL + i0 + r] : float2(0.0f, 1.0f);
        row_m[r] = ml.x;
        row_inv_l[r] = 1.0f / ml.y;
        row_D[r] = in ? Dsum[bh * p.qL + i0 + r] : 0.0f;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);

      for (int qf = 0; qf < BQ / 8; ++qf) {
        // Causal: 8 query rows whose last visible key precedes this simdgroup's first key
        // contribute nothing to its dK or dV (P = dS = 0): skip their four products.
        if (p.causal && i0 + qf * 8 + off >= 0 && i0 + qf * 8 + 7 + off < c0) continue;
        // Sᵀ (keys × queries) = K·Qᵀ and dPᵀ = V·dOᵀ.
        simdgroup_matrix<float, 8, 8> St = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        simdgroup_matrix<float, 8, 8> dPt = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        for (int d = 0; d < DK / 8; ++d) {
          simdgroup_matrix<float, 8, 8> Qf;
          simdgroup_load(Qf, Qt + qf * 8 * QP + d * 8, QP, ulong2(0, 0), true);
          simdgroup_multiply_accumulate(St, Kf[d], Qf, St);
        }
        for (int d = 0; d < DV / 8; ++d) {
          simdgroup_matrix<float, 8, 8> dOf;
          simdgroup_load(dOf, dOt + qf * 8 * OP + d * 8, OP, ulong2(0, 0), true);
          simdgroup_multiply_accumulate(dPt, Vf[d], dOf, dPt);
        }
        simdgroup_matrix<float, 8, 8> dSt;
        for (int c = 0; c < 2; ++c) {
          const int r = qf * 8 + fn + c;  // the query (column) within the staged block
          bool hidden;
          const float s = sdpa_score<T>(St.thread_elements()[c], b, h, i0 + r, j, p, mask_bool, mask_add, hidden);
          const float pr = j < p.kL ? sdpa_exp(s, row_m[r]) * row_inv_l[r] : 0.0f;
          dSt.thread_elements()[c] = hidden ? 0.0f : pr * (dPt.thread_elements()[c] - row_D[r]);
          St.thread_elements()[c] = pr;
        }
        resync(St, stage + sg * 64);
        resync(dSt, stage + sg * 64);
        for (int f = 0; f < DV / 8; ++f) {
          simdgroup_matrix<float, 8, 8> dOf;
          simdgroup_load(dOf, dOt + qf * 8 * OP + f * 8, OP);
          simdgroup_multiply_accumulate(dV[f], St, dOf, dV[f]);
        }
        for (int f = 0; f < DK / 8; ++f) {
          simdgroup_matrix<float, 8, 8> Qf;
          simdgroup_load(Qf, Qt + qf * 8 * QP + f * 8, QP);
          simdgroup_multiply_accumulate(dK[f], dSt, Qf, dK[f]);
        }
      }
    }
  }

  if (j < p.kL) {
    const float scale = p.scale_log2 / SDPA_LOG2E;
    const int64_t row = (int64_t(b) * p.Hkv + hk) * p.kL + j;
    for (int f = 0; f < DK / 8; ++f) {
      for (int c = 0; c < 2; ++c) {
        const int d = f * 8 + fn + c;
        if (d < p.Dk) dk[row * p.Dk + d] = T(dK[f].thread_elements()[c] * scale);
      }
    }
    for (int f = 0; f < DV / 8; ++f) {
      for (int c = 0; c < 2; ++c) {
        const int d = f * 8 + fn + c;
        if (d < p.Dv) dv[row * p.Dv + d] = T(dV[f].thread_elements()[c]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Backward in one pass, for short key sequences (the host takes it when kL ≤ 256). grid: (1, Hkv,
// B) threadgroups of 32·NSG threads: one threadgroup owns a key/value head and walks its keys in
// blocks of 8·NSG (one 8-key fragment per simdgroup, K and V in registers, as the key-side pass)
// and, per block, its query heads' rows in blocks of BQ. P and dS are computed once per 8×8 tile
// and feed dV, dK and dQ: five products per tile where the two passes take seven (they recompute S
// and dP on the query side). dQ accumulates in a float scratch ([B, Hq, qL8, DK], qL8 = qL rounded
// up to 8) that only this threadgroup touches, its simdgroups adding their keys' parts in a fixed
// order — deterministic, no atomics; the last step scales it into dq.

template <typename T, int DK, int DV, int BQ, int NSG>
[[kernel]] void sdpa_backward_onepass(
    device const T* q [[buffer(0)]],
    device const T* k [[buffer(1)]],
    device const T* v [[buffer(2)]],
    device const bool* mask_bool [[buffer(3)]],
    device const T* mask_add [[buffer(4)]],
    device const T* o [[buffer(5)]],
    device const float2* stats [[buffer(6)]],
    device const T* dout [[buffer(7)]],
    device T* dq [[buffer(8)]],
    device T* dk [[buffer(9)]],
    device T* dv [[buffer(10)]],
    device float* dq_acc [[buffer(11)]],
    constant const SdpaParams& p [[buffer(12)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint sg [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  constexpr int BKV = 8 * NSG;
  constexpr int NT = 32 * NSG;
  constexpr int PAD = 4;  // float tiles
  constexpr int QP = DK + PAD;
  constexpr int OP = DV + PAD;
  threadgroup float Qt[BQ * QP];
  threadgroup float dOt[BQ * OP];
  threadgroup float stage[NSG * 64];
  threadgroup float row_m[BQ];
  threadgroup float row_inv_l[BQ];
  threadgroup float row_D[BQ];

  const int b = int(tgid.z);
  const int hk = int(tgid.y);
  const int fm = frag_row(lane);
  const int fn = frag_col(lane);
  const int qL8 = (p.qL + 7) / 8 * 8;
  const int off = p.kL - p.qL;
  const float scale = p.scale_log2 / SDPA_LOG2E;

  device const T* kh = k + p.k_base + int64_t(b) * p.ks[0] + int64_t(hk) * p.ks[1];
  device const T* vh = v + p.v_base + int64_t(b) * p.vs[0] + int64_t(hk) * p.vs[1];

  for (int hr = 0; hr < p.gqa; ++hr) {
    device float* acc = dq_acc + (int64_t(b) * p.Hq + hk * p.gqa + hr) * qL8 * DK;
    for (int x = int(tid); x < qL8 * DK; x += NT) acc[x] = 0.0f;
  }
  threadgroup_barrier(mem_flags::mem_device);

  for (int j0 = 0; j0 < p.kL; j0 += BKV) {
    const int c0 = j0 + int(sg) * 8;  // this simdgroup's first key
    const int j = c0 + fm;            // the key this lane's elements belong to
    simdgroup_matrix<float, 8, 8> Kf[DK / 8];
    simdgroup_matrix<float, 8, 8> Vf[DV / 8];
    load_row_fragments<float, DK>(Kf, kh + int64_t(c0) * p.ks[2], p.ks[2], p.ks[3], p.kL - c0, p.Dk, stage + sg * 64, lane);
    load_row_fragments<float, DV>(Vf, vh + int64_t(c0) * p.vs[2], p.vs[2], p.vs[3], p.kL - c0, p.Dv, stage + sg * 64, lane);
    simdgroup_matrix<float, 8, 8> dK[DK / 8];
    simdgroup_matrix<float, 8, 8> dV[DV / 8];
    for (int f = 0; f < DK / 8; ++f) dK[f] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (int f = 0; f < DV / 8; ++f) dV[f] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);

    for (int hr = 0; hr < p.gqa; ++hr) {
      const int h = hk * p.gqa + hr;
      const int64_t bh = int64_t(b) * p.Hq + h;
      device const T* qh = q + p.q_base + int64_t(b) * p.qs[0] + int64_t(h) * p.qs[1];
      device const T* oh = o + p.o_base + int64_t(b) * p.os[0] + int64_t(h) * p.os[1];
      device const T* doh = dout + p.do_base + int64_t(b) * p.dos[0] + int64_t(h) * p.dos[1];
      device float* acc = dq_acc + bh * qL8 * DK;
      for (int i0 = 0; i0 < p.qL; i0 += BQ) {
        // Causal: rows whose last visible key precedes this key block never see it.
        if (p.causal && i0 + off >= 0 && i0 + BQ - 1 + off < j0) continue;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        load_tile_rows<BQ, DK, QP, NT>(Qt, qh + int64_t(i0) * p.qs[2], p.qs[2], p.qs[3], p.qL - i0, p.Dk, tid);
        load_tile_rows<BQ, DV, OP, NT>(dOt, doh + int64_t(i0) * p.dos[2], p.dos[2], p.dos[3], p.qL - i0, p.Dv, tid);
        for (int r = int(tid); r < BQ; r += NT) {
          const bool in = i0 + r < p.qL;
          const float2 ml = in ? stats[bh * p.qL + i0 + r] : float2(0.0f, 1.0f);
          row_m[r] = ml.x;
          row_inv_l[r] = 1.0f / ml.y;
          float D = 0.0f;  // rowsum(dO∘O)
          if (in) {
            for (int d = 0; d < p.Dv; ++d) {
              D += float(doh[int64_t(i0 + r) * p.dos[2] + int64_t(d) * p.dos[3]]) * float(oh[int64_t(i0 + r) * p.os[2] + int64_t(d) * p.os[3]]);
            }
          }
          row_D[r] = D;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);

        for (int qf = 0; qf < BQ / 8; ++qf) {
          // This simdgroup's 8 keys against 8 query rows: nothing when the rows are past qL or
          // (causal) end before its first key. Uniform over the simdgroup.
          const bool live = i0 + qf * 8 < p.qL && c0 < p.kL && !(p.causal && i0 + qf * 8 + off >= 0 && i0 + qf * 8 + 7 + off < c0);
          simdgroup_matrix<float, 8, 8> dS;
          if (live) {
            simdgroup_matrix<float, 8, 8> St = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
            simdgroup_matrix<float, 8, 8> dPt = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
            for (int d = 0; d < DK / 8; ++d) {
              simdgroup_matrix<float, 8, 8> Qf;
              simdgroup_load(Qf, Qt + qf * 8 * QP + d * 8, QP, ulong2(0, 0), true);
              simdgroup_multiply_accumulate(St, Kf[d], Qf, St);
            }
            for (int d = 0; d < DV / 8; ++d) {
              simdgroup_matrix<float, 8, 8> dOf;
              simdgroup_load(dOf, dOt + qf * 8 * OP + d * 8, OP, ulong2(0, 0), true);
              simdgroup_multiply_accumulate(dPt, Vf[d], dOf, dPt);
            }
            simdgroup_matrix<float, 8, 8> dSt;
            for (int c = 0; c < 2; ++c) {
              const int r = qf * 8 + fn + c;
              bool hidden;
              const float s = sdpa_score<T>(St.thread_elements()[c], b, h, i0 + r, j, p, mask_bool, mask_add, hidden);
              const float pr = j < p.kL ? sdpa_exp(s, row_m[r]) * row_inv_l[r] : 0.0f;
              dSt.thread_elements()[c] = hidden ? 0.0f : pr * (dPt.thread_elements()[c] - row_D[r]);
              St.thread_elements()[c] = pr;
            }
            resync(St, stage + sg * 64);
            // dSᵀ through the stage: stored transposed, it reads back as dS (queries × keys)
            simdgroup_store(dSt, stage + sg * 64, 8, ulong2(0, 0), true);
            simdgroup_barrier(mem_flags::mem_threadgroup);
            simdgroup_load(dS, stage + sg * 64, 8);
            simdgroup_barrier(mem_flags::mem_threadgroup);
            simdgroup_load(dSt, stage + sg * 64, 8, ulong2(0, 0), true);
            simdgroup_barrier(mem_flags::mem_threadgroup);
            for (int f = 0; f < DV / 8; ++f) {
              simdgroup_matrix<float, 8, 8> dOf;
              simdgroup_load(dOf, dOt + qf * 8 * OP + f * 8, OP);
              simdgroup_multiply_accumulate(dV[f], St, dOf, dV[f]);
            }
            for (int f = 0; f < DK / 8; ++f) {
              simdgroup_matrix<float, 8, 8> Qf;
              simdgroup_load(Qf, Qt + qf * 8 * QP + f * 8, QP);
              simdgroup_multiply_accumulate(dK[f], dSt, Qf, dK[f]);
            }
          }
          // dQ rows += dS·K, the simdgroups in turn (a fixed order of sums)
          for (int s = 0; s < NSG; ++s) {
            threadgroup_barrier(mem_flags::mem_device);
            if (int(sg) == s && live) {
              device float* rows = acc + int64_t(i0 + qf * 8) * DK;
              for (int f = 0; f < DK / 8; ++f) {
                simdgroup_matrix<float, 8, 8> a;
                simdgroup_load(a, rows + f * 8, DK);
                // every lane has read before any writes (the simulator runs lanes one by one)
                simdgroup_barrier(mem_flags::mem_device);
                simdgroup_multiply_accumulate(a, dS, Kf[f], a);
                simdgroup_store(a, rows + f * 8, DK);
              }
            }
          }
        }
      }
    }

    if (j < p.kL) {
      const int64_t row = (int64_t(b) * p.Hkv + hk) * p.kL + j;
      for (int f = 0; f < DK / 8; ++f) {
        for (int c = 0; c < 2; ++c) {
          const int d = f * 8 + fn + c;
          if (d < p.Dk) dk[row * p.Dk + d] = T(dK[f].thread_elements()[c] * scale);
        }
      }
      for (int f = 0; f < DV / 8; ++f) {
        for (int c = 0; c < 2; ++c) {
          const int d = f * 8 + fn + c;
          if (d < p.Dv) dv[row * p.Dv + d] = T(dV[f].thread_elements()[c]);
        }
      }
    }
  }

  threadgroup_barrier(mem_flags::mem_device);
  for (int hr = 0; hr < p.gqa; ++hr) {
    const int64_t bh = int64_t(b) * p.Hq + hk * p.gqa + hr;
    device const float* acc = dq_acc + bh * qL8 * DK;
    for (int x = int(tid); x < p.qL * p.Dk; x += NT) {
      const int r = x / p.Dk;
      const int d = x % p.Dk;
      dq[(bh * p.qL + r) * p.Dk + d] = T(acc[int64_t(r) * DK + d] * scale);
    }
  }
}
