// Quantized weights in MLX's packed formats (ts/backend/cpu/quantize.ts describes them):
//
//   qmv              decode products (few rows of x, transpose = true): out = x·Wᵀ reading the
//                    packed words directly. A simdgroup owns 4 outputs; its lanes stride over K in
//                    blocks of 32 codes (exactly BITS words for every bit width); per group the
//                    affine sums are s·Σx·q + b·Σx, the floating-point modes s·Σx·v(q).
//   qmm              prefill products (any M, either transpose): BM×BN output tiles, x's BK-slice
//                    staged in threadgroup memory and W's slice dequantised there (never a full
//                    dequantised copy), multiplied on simdgroup matrices with float accumulators.
//   GATHER (both): batch entry z multiplies x's matrix lhs[z] by W's matrix rhs[z] (gather_qmm,
//                    mixtures of experts) — the experts are read in place, never copied.
//   affine_quantize / fp_quantize      one thread per group, the CPU reference's arithmetic (so
//                    the packed words equal MLX's bit for bit);
//   affine_dequantize / fp_dequantize  one thread per element.
//
// MODE: 0 affine (scales and biases of type T), 1 mxfp4, 2 mxfp8, 3 nvfp4 (uint8 scales).
#include "utils.h"

constant constexpr int MODE_AFFINE = 0;
constant constexpr int MODE_MXFP4 = 1;
constant constexpr int MODE_MXFP8 = 2;
constant constexpr int MODE_NVFP4 = 3;

constant constexpr float FP4_VALUES[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                                           -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// e4m3 → value: the low 7 bits shifted into a half's exponent/mantissa, times 2^8 (MLX's FromFP8).
MG_FUNC float fp8_e4m3_value(uint b) {
  const float v = float(as_type<half>(ushort((b & 127u) << 7))) * 256.0f;
  return (b & 128u) ? -v : v;
}

// e8m0 → 2^(b − 127); 0 decodes to 2^−127 as MLX's bfloat trick does.
MG_FUNC float fp8_e8m0_value(uint b) {
  return b == 0u ? as_type<float>(0x00400000u) : as_type<float>(b << 23);
}

template <int MODE>
MG_FUNC float fp_scale_value(uint b) {
  return MODE == MODE_NVFP4 ? fp8_e4m3_value(b) : fp8_e8m0_value(b);
}

template <int MODE>
MG_FUNC float fp_code_value(uint code) {
  return MODE == MODE_MXFP8 ? fp8_e4m3_value(code) : FP4_VALUES[code & 15u];
}

// Code e of a little-endian BITS-wide bit stream held in words[].
template <int BITS, typename P>
MG_FUNC uint extract_code(P words, int e) {
  const int bit = e * BITS;
  const int wi = bit >> 5;
  const int sh = bit & 31;
  uint v = words[wi] >> sh;
  if (sh + BITS > 32) v |= words[wi + 1] << (32 - sh);
  return v & ((1u << BITS) - 1u);
}

struct QuantParams {
  int M;           // rows of x per batch entry
  int N;           // output columns
  int K;           // reduction length
  int batch_ndim;  // batch axes in batch_shape / batch_strides (x, w, scales)
};

struct QuantOffsets {
  int64_t x;
  int64_t w;
  int64_t s;
};

// GATHER: strides holds the matrix strides of x, W and the scales; lhs/rhs pick the matrices.
template <bool GATHER>
MG_FUNC QuantOffsets quant_offsets(uint z, constant const QuantParams& p, constant const int* shape, constant const int64_t* strides,
                                   device const uint* lhs, device const uint* rhs) {
  QuantOffsets o;
  if (GATHER) {
    o.x = int64_t(lhs[z]) * strides[0];
    o.w = int64_t(rhs[z]) * strides[1];
    o.s = int64_t(rhs[z]) * strides[2];
    return o;
  }
  o.x = 0;
  o.w = 0;
  o.s = 0;
  const int nd = p.batch_ndim;
  if (nd > 0) {
    o.x = elem_to_loc<int64_t>(int64_t(z), shape, strides, nd);
    o.w = elem_to_loc<int64_t>(int64_t(z), shape, strides + nd, nd);
    o.s = elem_to_loc<int64_t>(int64_t(z), shape, strides + 2 * nd, nd);
  }
  return o;
}

// grid: (ceil(N / 8), ceil(M / MR), batch entries) threadgroups of 64 threads (2 simdgroups × 4
// outputs). x is (M, K), w (N, K·BITS/32), scales/biases (N, K/GS), all row-contiguous per entry.
template <typename T, typename S, int BITS, int GS, int MODE, int MR, bool GATHER>
[[kernel]] void qmv(
    device const T* x [[buffer(0)]],
    device const uint* w [[buffer(1)]],
    device const S* scales [[buffer(2)]],
    device const T* biases [[buffer(3)]],
    device T* out [[buffer(4)]],
    constant const QuantParams& p [[buffer(5)]],
    constant const int* batch_shape [[buffer(6)]],
    constant const int64_t* batch_strides [[buffer(7)]],
    device const uint* lhs [[buffer(8)]],
    device const uint* rhs [[buffer(9)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint sgid [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  constexpr int R = 4;
  constexpr int SPAN = GS < 32 ? GS : 32;  // elements of one block sharing a scale
  const int n0 = (int(tgid.x) * 2 + int(sgid)) * R;
  if (n0 >= p.N) return;
  const int m0 = int(tgid.y) * MR;
  const int mr = min(MR, p.M - m0);
  const QuantOffsets o = quant_offsets<GATHER>(tgid.z, p, batch_shape, batch_strides, lhs, rhs);
  const int64_t words_per_row = int64_t(p.K) * BITS / 32;
  const int groups_per_row = p.K / GS;
  device const T* xb = x + o.x + int64_t(m0) * p.K;

  float acc[MR][R];
  for (int m = 0; m < MR; ++m)
    for (int r = 0; r < R; ++r) acc[m][r] = 0.0f;

  const int nblocks = (p.K + 31) / 32;
  for (int b = int(lane); b < nblocks; b += 32) {
    const int k0 = b * 32;
    const int kn = min(32, p.K - k0);
    for (int r = 0; r < R; ++r) {
      const int n = n0 + r;
      if (n >= p.N) break;
      device const uint* row = w + o.w + int64_t(n) * words_per_row + int64_t(b) * BITS;
      uint words[BITS];
      const int nwords = (kn * BITS + 31) / 32;
      for (int i = 0; i < BITS; ++i) words[i] = i < nwords ? row[i] : 0u;
      for (int g0 = 0; g0 < kn; g0 += SPAN) {
        const int64_t gi = o.s + int64_t(n) * groups_per_row + (k0 + g0) / GS;
        float sxq[MR];
        float sx[MR];
        for (int m = 0; m < MR; ++m) sxq[m] = sx[m] = 0.0f;
        for (int e = g0; e < g0 + SPAN; ++e) {
          const uint code = extract_code<BITS>(words, e);
          const float q = MODE == MODE_AFFINE ? float(code) : fp_code_value<MODE>(code);
          for (int m = 0; m < MR; ++m) {
            if (m < mr) {
              const float xv = float(xb[int64_t(m) * p.K + k0 + e]);
              sxq[m] = fma(xv, q, sxq[m]);
              sx[m] += xv;
            }
          }
        }
        if (MODE == MODE_AFFINE) {
          const float s = float(scales[gi]);
          const float bias = float(biases[gi]);
          for (int m = 0; m < MR; ++m) acc[m][r] += s * sxq[m] + bias * sx[m];
        } else {
          const float s = fp_scale_value<MODE>(uint(scales[gi]));
          for (int m = 0; m < MR; ++m) acc[m][r] += s * sxq[m];
        }
      }
    }
  }
  device T* ob = out + int64_t(tgid.z) * p.M * p.N + int64_t(m0) * p.N;
  for (int m = 0; m < MR; ++m) {
    for (int r = 0; r < R; ++r) {
      const float v = simd_sum(acc[m][r]);
      if (lane == 0 && m < mr && n0 + r < p.N) ob[int64_t(m) * p.N + n0 + r] = T(v);
    }
  }
}

// grid: (ceil(N / 32), ceil(M / 32), batch entries) threadgroups of 128 threads (2×2 simdgroups,
// each a 16×16 block of the 32×32 tile).
template <typename T, typename S, int BITS, int GS, int MODE, bool TRANSPOSE, bool GATHER>
[[kernel]] void qmm(
    device const T* x [[buffer(0)]],
    device const uint* w [[buffer(1)]],
    device const S* scales [[buffer(2)]],
    device const T* biases [[buffer(3)]],
    device T* out [[buffer(4)]],
    constant const QuantParams& p [[buffer(5)]],
    constant const int* batch_shape [[buffer(6)]],
    constant const int64_t* batch_strides [[buffer(7)]],
    device const uint* lhs [[buffer(8)]],
    device const uint* rhs [[buffer(9)]],
    uint3 tgid [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint sgid [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]) {
  constexpr int BM = 32, BN = 32, BK = 32, NT = 128;
  constexpr int PAD = 16 / sizeof(T);
  constexpr int XP = BK + PAD;  // Xs: BM rows of BK
  constexpr int WP = BN + PAD;  // Ws: BK rows of BN
  threadgroup T Xs[BM * XP];
  threadgroup T Ws[BK * WP];
  threadgroup float stage[4 * 64];

  const QuantOffsets o = quant_offsets<GATHER>(tgid.z, p, batch_shape, batch_strides, lhs, rhs);
  device const T* xb = x + o.x;
  device const uint* wb = w + o.w;
  device const S* sb = scales + o.s;
  device const T* bb = biases + (MODE == MODE_AFFINE ? o.s : 0);
  const int m0 = int(tgid.y) * BM;
  const int n0 = int(tgid.x) * BN;
  const int sm = int(sgid) / 2 * 16;
  const int sn = int(sgid) % 2 * 16;
  simdgroup_matrix<float, 8, 8> acc[4];
  for (int i = 0; i < 4; ++i) acc[i] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);

  for (int k0 = 0; k0 < p.K; k0 += BK) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int i = int(tid); i < BM * BK; i += NT) {
      const int r = i / BK, c = i % BK;
      const int m = m0 + r, k = k0 + c;
      Xs[r * XP + c] = (m < p.M && k < p.K) ? xb[int64_t(m) * p.K + k] : T(0.0f);
    }
    // W's slice: each thread dequantises 8 consecutive codes of one packed row (one group, one
    // scale and bias read), 32 rows × 4 chunks = the 128 threads.
    {
      const int r = int(tid) / 4, chunk = int(tid) % 4;
      const int row = TRANSPOSE ? n0 + r : k0 + r;       // packed row (n, or k)
      const int col0 = (TRANSPOSE ? k0 : n0) + 8 * chunk; // first code along the packed axis
      const int rows = TRANSPOSE ? p.N : p.K;
      const int cols = TRANSPOSE ? p.K : p.N;
      T vals[8];
      if (row < rows && col0 < cols) {
        device const uint* words = wb + int64_t(row) * (int64_t(cols) * BITS / 32);
        const int64_t gi = int64_t(row) * (cols / GS) + col0 / GS;
        const float sc = MODE == MODE_AFFINE ? float(sb[gi]) : fp_scale_value<MODE>(uint(sb[gi]));
        const float bi = MODE == MODE_AFFINE ? float(bb[gi]) : 0.0f;
        for (int e = 0; e < 8; ++e) {
          const int c = col0 + e;
          if (c < cols) {
            const uint code = extract_code<BITS>(words, c);
            vals[e] = MODE == MODE_AFFINE ? T(sc * float(code) + bi) : T(sc * fp_code_value<MODE>(code));
          } else {
            vals[e] = T(0.0f);
          }
        }
      } else {
        for (int e = 0; e < 8; ++e) vals[e] = T(0.0f);
      }
      for (int e = 0; e < 8; ++e) {
        // Ws[k][n]: the tile's k runs along the packed axis when transposed, n otherwise.
        if (TRANSPOSE) Ws[(8 * chunk + e) * WP + r] = vals[e];
        else Ws[r * WP + 8 * chunk + e] = vals[e];
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int kk = 0; kk < BK; kk += 8) {
      simdgroup_matrix<T, 8, 8> a[2];
      simdgroup_matrix<T, 8, 8> b[2];
      for (int i = 0; i < 2; ++i) simdgroup_load(a[i], Xs + (sm + 8 * i) * XP + kk, XP);
      for (int j = 0; j < 2; ++j) simdgroup_load(b[j], Ws + kk * WP + sn + 8 * j, WP);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i * 2 + j], a[i], b[j], acc[i * 2 + j]);
    }
  }
  device T* ob = out + int64_t(tgid.z) * p.M * p.N;
  threadgroup float* st = stage + sgid * 64;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      simdgroup_store(acc[i * 2 + j], st, 8);
      simdgroup_barrier(mem_flags::mem_threadgroup);
      for (int e = int(lane); e < 64; e += 32) {
        const int m = m0 + sm + 8 * i + e / 8;
        const int n = n0 + sn + 8 * j + e % 8;
        if (m < p.M && n < p.N) ob[int64_t(m) * p.N + n] = T(st[e]);
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Quantize / dequantize

// Round half to even, as std::rint (metal::rint rounds to nearest even too; spelled out so the
// rule is visible).
MG_FUNC float rint_even(float x) { return metal::rint(x); }

// grid: one thread per group (threads = groups). w has groups of GS consecutive elements.
template <typename T, int BITS, int GS>
[[kernel]] void affine_quantize(
    device const T* w [[buffer(0)]],
    device uint* wq [[buffer(1)]],
    device T* scales [[buffer(2)]],
    device T* biases [[buffer(3)]],
    constant const uint& groups [[buffer(4)]],
    uint g [[thread_position_in_grid]]) {
  if (g >= groups) return;
  const float n_bins = float((1 << BITS) - 1);
  const float eps = 1e-7f;
  device const T* wg = w + int64_t(g) * GS;
  float w_min = INFINITY, w_max = -INFINITY;
  for (int j = 0; j < GS; ++j) {
    const float v = float(wg[j]);
    if (w_max < v) w_max = v;  // std::max / std::min: a NaN element is skipped
    if (v < w_min) w_min = v;
  }
  const bool mask = metal::abs(w_min) > metal::abs(w_max);
  const float range = (w_max - w_min) / n_bins;
  float scale = range < eps ? eps : range;
  scale = mask ? scale : -scale;
  const float edge = mask ? w_min : w_max;
  const float q0 = rint_even(edge / scale);
  float bias = 0.0f;
  if (q0 != 0.0f) {
    scale = edge / q0;
    bias = edge;
  }
  device uint* out = wq + int64_t(g) * (GS * BITS / 32);
  for (int i = 0; i < GS * BITS / 32; ++i) out[i] = 0u;
  for (int j = 0; j < GS; ++j) {
    float q = rint_even((float(wg[j]) - bias) / scale);
    q = q < 0.0f ? 0.0f : q;            // std::max(q, 0): NaN stays NaN …
    q = n_bins < q ? n_bins : q;        // std::min(q, n): … and is stored as code 0
    const uint code = metal::isnan(q) ? 0u : uint(q);
    const int bit = j * BITS;
    out[bit >> 5] |= code << (bit & 31);
    if ((bit & 31) + BITS > 32) out[(bit >> 5) + 1] |= code >> (32 - (bit & 31));
  }
  scales[g] = T(scale);
  biases[g] = T(bias);
}

// grid: one thread per output element.
template <typename T, typename U, int BITS, int GS>
[[kernel]] void affine_dequantize(
    device const uint* wq [[buffer(0)]],
    device const T* scales [[buffer(1)]],
    device const T* biases [[buffer(2)]],
    device U* out [[buffer(3)]],
    constant const uint& size [[buffer(4)]],
    uint i [[thread_position_in_grid]]) {
  if (i >= size) return;
  const uint code = extract_code<BITS>(wq, int(i));
  const uint g = i / GS;
  // code·scale and + bias each round to T (MLX's multiply then add in the scales' dtype).
  const T prod = T(float(code) * float(scales[g]));
  out[i] = U(T(float(prod) + float(biases[g])));
}

// e4m3 encoding, MLX's ToFP8 (round to nearest even, saturating at 448; no NaN branch).
MG_FUNC uint fp8_e4m3_encode(float f) {
  uint bits = as_type<uint>(f);
  const uint sign = bits & 0x80000000u;
  bits ^= sign;
  uint result;
  if (bits >= (543u << 21)) {
    result = 0x7Eu;
  } else if (bits < (121u << 23)) {
    const uint denorm = 141u << 23;
    result = (as_type<uint>(as_type<float>(bits) + as_type<float>(denorm)) - denorm) & 0xFFu;
  } else {
    const uint mant_odd = (bits >> 20) & 1u;
    result = ((bits + (uint(7 - 127) << 23) + 0x7FFFFu + mant_odd) >> 20) & 0xFFu;
  }
  return result | (sign >> 24);
}

// ⌈log2 x⌉ for finite x > 0, exactly (frexp: x = f·2^e, f in [0.5, 1)).
MG_FUNC int ceil_log2(float x) {
  int e;
  const float f = metal::frexp(x, e);
  return f == 0.5f ? e - 1 : e;
}

// grid: one thread per group. The arithmetic is MLX's CPU graph for these modes: each step
// rounds to T (the input's dtype) where MLX's op does; nvfp4 picks codes in float32.
template <typename T, int MODE>
[[kernel]] void fp_quantize(
    device const T* w [[buffer(0)]],
    device uint* wq [[buffer(1)]],
    device uchar* scales [[buffer(2)]],
    constant const uint& groups [[buffer(3)]],
    device const float* global_scale [[buffer(4)]],  // nvfp4's global scale (read when has_global)
    constant const uint& has_global [[buffer(5)]],
    uint g [[thread_position_in_grid]]) {
  if (g >= groups) return;
  const float global_encode = has_global ? (448.0f * 6.0f) / global_scale[0] : 1.0f;
  constexpr int GS = MODE == MODE_NVFP4 ? 16 : 32;
  constexpr int BITS = MODE == MODE_MXFP8 ? 8 : 4;
  const float maxval = BITS == 4 ? 6.0f : 448.0f;
  device const T* wg = w + int64_t(g) * GS;
  float amax = -INFINITY;
  for (int j = 0; j < GS; ++j) {
    const float a = metal::abs(float(wg[j]));
    if (metal::isnan(a) || metal::isnan(amax)) amax = NAN;
    else amax = a > amax ? a : amax;
  }
  const float s = float(T(amax / maxval));
  float scaled[GS];
  if (MODE == MODE_NVFP4) {
    const uint code = fp8_e4m3_encode(s * global_encode);
    scales[g] = uchar(code);
    const float sv = float(T(fp8_e4m3_value(code)));
    for (int j = 0; j < GS; ++j) scaled[j] = float(T(float(wg[j]) / sv)) * global_encode;
  } else {
    const int e = s == 0.0f ? 0 : ceil_log2(s);
    const float pw = float(T(metal::ldexp(1.0f, e)));
    for (int j = 0; j < GS; ++j) scaled[j] = float(T(float(wg[j]) / pw));
    scales[g] = uchar((e + 127) & 0xFF);
  }
  device uint* out = wq + int64_t(g) * (GS * BITS / 32);
  if (BITS == 8) {
    for (int j = 0; j < GS / 4; ++j) {
      uint word = 0u;
      for (int t = 0; t < 4; ++t) word |= fp8_e4m3_encode(scaled[4 * j + t]) << (8 * t);
      out[j] = word;
    }
  } else {
    for (int j = 0; j < GS / 8; ++j) {
      uint word = 0u;
      for (int t = 0; t < 8; ++t) {
        // The first nearest table entry (an argmin), the differences rounded as MLX's subtract.
        const float v = scaled[8 * j + t];
        uint best = 0u;
        float best_d = 0.0f;
        for (uint c = 0; c < 16u; ++c) {
          const float diff = MODE == MODE_NVFP4 ? v - FP4_VALUES[c] : float(T(v - FP4_VALUES[c]));
          const float d = metal::abs(diff);
          if (c == 0u) {
            best_d = d;
            if (metal::isnan(d)) break;
          } else if (d < best_d || metal::isnan(d)) {
            best = c;
            best_d = d;
            if (metal::isnan(d)) break;
          }
        }
        word |= best << (4 * t);
      }
      out[j] = word;
    }
  }
}

// grid: one thread per output element. U is the output dtype; nvfp4 with a global scale computes
// in float32 (MLX promotes), which the host reflects by choosing U = float.
template <typename U, int MODE>
[[kernel]] void fp_dequantize(
    device const uint* wq [[buffer(0)]],
    device const uchar* scales [[buffer(1)]],
    device U* out [[buffer(2)]],
    constant const uint& size [[buffer(3)]],
    device const float* global_scale [[buffer(4)]],  // nvfp4's global scale (read when has_global)
    constant const uint& has_global [[buffer(5)]],
    uint i [[thread_position_in_grid]]) {
  if (i >= size) return;
  constexpr int GS = MODE == MODE_NVFP4 ? 16 : 32;
  constexpr int BITS = MODE == MODE_MXFP8 ? 8 : 4;
  const uint code = extract_code<BITS>(wq, int(i));
  const uint sb = uint(scales[i / GS]);
  const float v = fp_code_value<MODE>(code);
  if (MODE == MODE_NVFP4) {
    float s = float(U(fp8_e4m3_value(sb)));
    if (has_global) {
      s = s * (global_scale[0] / (448.0f * 6.0f));
      out[i] = U(v * s);
    } else {
      out[i] = U(float(U(v)) * s);
    }
  } else {
    const float s = float(U(metal::ldexp(1.0f, int(float(U(float(sb) - 127.0f))))));
    out[i] = U(float(U(v)) * s);
  }
}
