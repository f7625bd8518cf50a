// Quantized-product kernels, compiled once per instruction set (included by isa_*.cpp inside the
// ISA's namespace, after kernels_impl.h): dequantisation of whole groups into float32, and the dot
// and axpy loops of the small-M products. Dequantised values are the reference's exactly
// (ts/backend/cpu/quantized.ts): affine w = (c·s) + b with each op rounded to the dtype (float32
// arithmetic is exact-then-rounded for these operands), the floating-point modes w = lut(c)·s
// (exact in float32).

// e4m3 values (MLX's FromFP8: the bits shifted into a half, times 256), 256 entries.
static const float *e4m3_table() {
  static const struct Table {
    float v[256];
    Table() {
      for (int b = 0; b < 256; b++) {
        const float m = f16_to_f32(uint16_t((b & 127) << 7)) * 256.0f;
        v[b] = b & 128 ? -m : m;
      }
    }
  } table;
  return table.v;
}

static const float FP4_LUT[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// codes [0, n) of a word-aligned packed stream as float32 (exact small integers); BITS divides
// 32, so a vector of VF codes is a fixed pattern of whole words
template <int BITS> static void unpack_pow2(const uint32_t *w, int64_t n, float *out) {
  constexpr int PER = 32 / BITS;  // codes per word
  constexpr uint32_t MASK = (1u << BITS) - 1u;
  vu shifts;
  for (int l = 0; l < VF; l++) shifts[l] = uint32_t((l % PER) * BITS);
  int64_t i = 0;
  if constexpr (PER >= VF) {
    // one word holds PER / VF vectors
    for (; i + PER <= n; i += PER) {
      const uint32_t word = w[i / PER];
      for (int v = 0; v < PER / VF; v++) {
        const vu x = (vu{word, word, word, word, word, word, word, word} >> (shifts + uint32_t(v * VF * BITS))) & MASK;
        vf_store(out + i + v * VF, __builtin_convertvector((vi)x, vf));
      }
    }
  } else {
    // one vector spans VF / PER words
    for (; i + VF <= n; i += VF) {
      vu x;
      for (int l = 0; l < VF; l++) x[l] = w[i / PER + l / PER];
      x = (x >> shifts) & MASK;
      vf_store(out + i, __builtin_convertvector((vi)x, vf));
    }
  }
  for (; i < n; i++) out[i] = float((w[i / PER] >> ((i % PER) * BITS)) & MASK);
}

static void unpack_codes(const uint32_t *w, int bits, int64_t n, float *out) {
  switch (bits) {
    case 2: return unpack_pow2<2>(w, n, out);
    case 4: return unpack_pow2<4>(w, n, out);
    case 8: return unpack_pow2<8>(w, n, out);
    default: break;
  }
  // 3, 5, 6 bits: codes straddle words; read a 64-bit window
  const uint64_t mask = (uint64_t(1) << bits) - 1;
  for (int64_t i = 0; i < n; i++) {
    const int64_t pos = i * bits, word = pos >> 5;
    const int shift = int(pos & 31);
    uint64_t v = w[word] >> shift;
    if (shift + bits > 32) v |= uint64_t(w[word + 1]) << (32 - shift);
    out[i] = float(v & mask);
  }
}

// `groups` whole groups of a packed row (starting at its word 0) → out, with the groups' decoded
// scales (and biases, affine). `codes` is scratch of one group.
static void qdequant_f32_impl(const QuantSpec &q, const uint32_t *words, int64_t groups, const float *scale, const float *bias, float *out) {
  const int64_t gs = q.group;
  const int64_t wpg = gs * q.bits / 32;  // words per group
  const bool grid = q.dtype == F16 || q.dtype == BF16;
  for (int64_t g = 0; g < groups; g++) {
    const uint32_t *w = words + g * wpg;
    float *o = out + g * gs;
    if (q.mode == QAffine) {
      unpack_codes(w, q.bits, gs, o);
      const vf s = vf_splat(scale[g]), b = vf_splat(bias[g]);
      int64_t i = 0;
      if (!grid) {
        for (; i + VF <= gs; i += VF) vf_store(o + i, vf_load(o + i) * s + b);
        for (; i < gs; i++) o[i] = o[i] * scale[g] + bias[g];
      } else {
        for (; i + VF <= gs; i += VF) vf_store(o + i, vf_load(o + i) * s);
        for (; i < gs; i++) o[i] = o[i] * scale[g];
        round_grid_impl(o, q.dtype, gs);
        for (i = 0; i + VF <= gs; i += VF) vf_store(o + i, vf_load(o + i) + b);
        for (; i < gs; i++) o[i] = o[i] + bias[g];
        round_grid_impl(o, q.dtype, gs);
      }
      continue;
    }
    const float s = scale[g];
    if (q.bits == 4) {
      const uint8_t *bytes = reinterpret_cast<const uint8_t *>(w);
      for (int64_t i = 0; i < gs; i++) o[i] = FP4_LUT[(bytes[i >> 1] >> ((i & 1) * 4)) & 15] * s;
    } else {
      const float *t = e4m3_table();
      const uint8_t *bytes = reinterpret_cast<const uint8_t *>(w);
      for (int64_t i = 0; i < gs; i++) o[i] = t[bytes[i]] * s;
    }
  }
}

// acc[m·VF + l] += Σ_{i ≡ l (mod VF)} x_m[i]·w[i] for m < M, i < n (n a multiple of VF).
static void qdot_f32_impl(const float *const *x, int M, const float *w, int64_t n, float *acc) {
  int m = 0;
  for (; m + 4 <= M; m += 4) {
    vf a0 = vf_load(acc + m * VF), a1 = vf_load(acc + (m + 1) * VF), a2 = vf_load(acc + (m + 2) * VF), a3 = vf_load(acc + (m + 3) * VF);
    const float *x0 = x[m], *x1 = x[m + 1], *x2 = x[m + 2], *x3 = x[m + 3];
    for (int64_t i = 0; i < n; i += VF) {
      const vf wv = vf_load(w + i);
      a0 = madd(vf_load(x0 + i), wv, a0);
      a1 = madd(vf_load(x1 + i), wv, a1);
      a2 = madd(vf_load(x2 + i), wv, a2);
      a3 = madd(vf_load(x3 + i), wv, a3);
    }
    vf_store(acc + m * VF, a0);
    vf_store(acc + (m + 1) * VF, a1);
    vf_store(acc + (m + 2) * VF, a2);
    vf_store(acc + (m + 3) * VF, a3);
  }
  for (; m < M; m++) {
    vf a = vf_load(acc + m * VF);
    const float *xm = x[m];
    for (int64_t i = 0; i < n; i += VF) a = madd(vf_load(xm + i), vf_load(w + i), a);
    vf_store(acc + m * VF, a);
  }
}

// y_m[j] += a_m·w[j] for m < M, j < n.
static void qaxpy_f32_impl(float *const *y, const float *a, int M, const float *w, int64_t n) {
  for (int m = 0; m < M; m++) {
    float *ym = y[m];
    const vf av = vf_splat(a[m]);
    int64_t j = 0;
    for (; j + VF <= n; j += VF) vf_store(ym + j, madd(av, vf_load(w + j), vf_load(ym + j)));
    for (; j < n; j++) ym[j] = MG_FMA ? std::fma(a[m], w[j], ym[j]) : ym[j] + a[m] * w[j];
  }
}

// The decode product fused: acc[m·VF + l] += lane l of Σ x_m[k]·(c_k·s_g + b_g) over `groups`
// whole groups of an affine row with float32 values and BITS dividing 32 (the dequantised weight
// is rounded exactly as qdequant_f32_impl's; it only never reaches memory).
template <int BITS, int M>
static void qdot_affine_pow2(const uint32_t *w, int64_t groups, int64_t gs, const float *scale, const float *bias, const float *const *xp, float *acc) {
  constexpr int PER = 32 / BITS;                 // codes per word
  constexpr int WPV = PER >= VF ? 1 : VF / PER;  // words per vector
  constexpr uint32_t MASK = (1u << BITS) - 1u;
  constexpr int A = M <= 2 ? 4 : 2;  // accumulators per row: independent FMA chains
  vu shifts;
  for (int l = 0; l < VF; l++) shifts[l] = uint32_t((l % PER) * BITS);
  const float *x[M];
  vf a[M][A];
  for (int m = 0; m < M; m++) {
    x[m] = xp[m];
    a[m][0] = vf_load(acc + m * VF);
    for (int j = 1; j < A; j++) a[m][j] = vf_splat(0);
  }
  const int64_t vecs = gs / VF;  // vectors per group (a multiple of A for every group size)
  int64_t k = 0;
  for (int64_t g = 0; g < groups; g++) {
    const vf s = vf_splat(scale[g]), b = vf_splat(bias[g]);
    for (int64_t v = 0; v < vecs; v += A) {
      for (int j = 0; j < A; j++, k += VF) {
        vu c;
        if constexpr (PER >= VF) {
          const uint32_t word = w[uint64_t(k) / PER];
          const uint32_t off = uint32_t(uint64_t(k) % PER) * BITS;
          c = (vu{word, word, word, word, word, word, word, word} >> (shifts + off)) & MASK;
        } else {
          const uint32_t *wk = w + uint64_t(k) / PER;
          for (int l = 0; l < VF; l++) c[l] = wk[l / PER];
          c = (c >> shifts) & MASK;
        }
        (void)WPV;
        const vf wv = __builtin_convertvector((vi)c, vf) * s + b;
        for (int m = 0; m < M; m++) a[m][j] = madd(vf_load(x[m] + k), wv, a[m][j]);
      }
    }
  }
  for (int m = 0; m < M; m++) {
    vf t = a[m][0];
    if constexpr (A == 4) t = (t + a[m][1]) + (a[m][2] + a[m][3]);
    else t = t + a[m][1];
    vf_store(acc + m * VF, t);
  }
}

template <int BITS>
static void qdot_affine_rows(const uint32_t *w, int64_t groups, int64_t gs, const float *scale, const float *bias, const float *const *x, int M, float *acc) {
  switch (M) {
    case 1: return qdot_affine_pow2<BITS, 1>(w, groups, gs, scale, bias, x, acc);
    case 2: return qdot_affine_pow2<BITS, 2>(w, groups, gs, scale, bias, x, acc);
    case 3: return qdot_affine_pow2<BITS, 3>(w, groups, gs, scale, bias, x, acc);
    case 4: return qdot_affine_pow2<BITS, 4>(w, groups, gs, scale, bias, x, acc);
    default:
      // more rows: four at a time (each row's lanes accumulate in the same order either way)
      for (int m = 0; m < M; m += 4) {
        const int r = std::min(4, M - m);
        qdot_affine_rows<BITS>(w, groups, gs, scale, bias, x + m, r, acc + m * VF);
      }
  }
}

// False when the case has no fused kernel (the caller dequantises, then qdot_f32_impl).
static bool qdot_fused_f32_impl(const QuantSpec &q, const uint32_t *w, int64_t groups, const float *scale, const float *bias, const float *const *x, int M, float *acc) {
  if (q.mode != QAffine || q.dtype != F32 || M > QMV_ROWS) return false;
  switch (q.bits) {
    case 2: qdot_affine_rows<2>(w, groups, q.group, scale, bias, x, M, acc); return true;
    case 4: qdot_affine_rows<4>(w, groups, q.group, scale, bias, x, M, acc); return true;
    case 8: qdot_affine_rows<8>(w, groups, q.group, scale, bias, x, M, acc); return true;
    default: return false;
  }
}
