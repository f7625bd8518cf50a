// mg.fast's fused primitives on the CPU: RMSNorm/LayerNorm (and their VJPs), RoPE, scaled
// dot-product attention (and its VJP). Each is the float64 reference of ts/backend/cpu/fast.ts
// carried over operation for operation (the same sums in the same order, the same masking and
// softmax corner cases), over strided operands, each output rounded once to its dtype; only the
// work is split over threads (rows; attention heads — the key/value gradients by key/value head,
// whose query heads then accumulate in the reference's order), so thread counts never change a bit.
// Several dot products run side by side (four keys at a time), each still summed in order.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <new>
#include <vector>

#include "MGCpu.h"
#include "mgcpu.h"

// The attention loops also get an AVX2 clone on x86-64 ELF targets, chosen once at load time (the
// helpers they call are inlined into each clone). Lanes only ever hold independent sums, and
// contraction stays off, so both clones give the same bits.
#if defined(__x86_64__) && defined(__ELF__) && defined(__clang__)
#define MG_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MG_CLONES
#endif
#define MG_INLINE inline __attribute__((always_inline))

namespace mgcpu {

namespace {

MG_INLINE double load_d(const char *p, int dtype, int64_t i) {
  switch (dtype) {
    case F32: return reinterpret_cast<const float *>(p)[i];
    case F64: return reinterpret_cast<const double *>(p)[i];
    case F16: return f16_to_f32(reinterpret_cast<const uint16_t *>(p)[i]);
    case BF16: return bf16_to_f32(reinterpret_cast<const uint16_t *>(p)[i]);
    case Bool: case U8: return reinterpret_cast<const uint8_t *>(p)[i];
    case I32: return reinterpret_cast<const int32_t *>(p)[i];
    default: return 0;
  }
}

// A double stored with the reference's single rounding (writeNumbers).
inline void store_d(char *p, int dtype, int64_t i, double v) {
  switch (dtype) {
    case F32: reinterpret_cast<float *>(p)[i] = float(v); break;
    case F64: reinterpret_cast<double *>(p)[i] = v; break;
    case F16: reinterpret_cast<uint16_t *>(p)[i] = f64_to_f16(v); break;
    default: reinterpret_cast<uint16_t *>(p)[i] = f32_to_bf16(float(v)); break;
  }
}

bool float_dtype(int d) { return d == F32 || d == F64 || d == F16 || d == BF16; }

// An operand of `nd` dims: element offsets of row r (all dims but the last) and of the last dim.
struct Rows {
  const char *p = nullptr;
  int dtype = F32;
  int nd = 0;
  int64_t shape[MAX_DIMS], strides[MAX_DIMS];
  int64_t row(int64_t r) const {
    int64_t off = 0;
    for (int d = nd - 2; d >= 0; d--) {
      off += (r % shape[d]) * strides[d];
      r /= shape[d];
    }
    return off;
  }
  int64_t inner() const { return nd > 0 ? strides[nd - 1] : 0; }
};

bool read_rows(Reader &r, Rows &a, int nd, const int64_t *shape, const char *what) {
  a.nd = nd;
  for (int d = 0; d < nd; d++) a.shape[d] = shape[d];
  a.p = r.pointer(what);
  a.dtype = r.dtype("dtype");
  return read_strides(r, nd, a.strides);
}

// n elements of `p` from element `base` at stride `st`, as doubles (the dtype switch once per run,
// the same conversions as load_d).
MG_INLINE void load_run(const char *p, int dtype, int64_t base, int64_t st, int64_t n, double *out) {
  if (dtype == F32) {
    const float *x = reinterpret_cast<const float *>(p) + base;
    if (st == 1)
      for (int64_t i = 0; i < n; i++) out[i] = x[i];
    else
      for (int64_t i = 0; i < n; i++) out[i] = x[i * st];
  } else if (dtype == F64) {
    const double *x = reinterpret_cast<const double *>(p) + base;
    for (int64_t i = 0; i < n; i++) out[i] = x[i * st];
  } else {
    for (int64_t i = 0; i < n; i++) out[i] = load_d(p, dtype, base + i * st);
  }
}

// n doubles stored row-contiguously from element `base`, each rounded once as store_d does.
MG_INLINE void store_run(char *p, int dtype, int64_t base, const double *v, int64_t n) {
  if (dtype == F32) {
    float *y = reinterpret_cast<float *>(p) + base;
    for (int64_t i = 0; i < n; i++) y[i] = float(v[i]);
  } else if (dtype == F64) {
    std::memcpy(reinterpret_cast<double *>(p) + base, v, size_t(n) * sizeof(double));
  } else {
    for (int64_t i = 0; i < n; i++) store_d(p, dtype, base + i, v[i]);
  }
}

// ---- norms -------------------------------------------------------------------------------------------------

struct Norm {
  bool layer, vjp;
  int64_t rows, n;
  double eps;
  Rows x, g;
  const char *w = nullptr, *b = nullptr;
  int wdt = F32, bdt = F32;
  int64_t ws = 0, bs = 0;
  char *out = nullptr, *dw = nullptr, *db = nullptr;
  int odt = F32;
  std::vector<double> stats;  // vjp: per row (mean, inv)
  int64_t rows_per_task;
  std::atomic<bool> failed{false};
};

// Rows normalised side by side: each row's sums still run over j in order, one row per lane, so
// the latency-bound in-order sums of four rows overlap (the same bits as one row at a time).
constexpr int NR = 4;

// Rows as doubles in the thread's scratch, NR rows interleaved (x and g: element j of row q at
// j·NR + q), w and b once per task; the reference's normStats and formulas, sums in order.
MG_CLONES void norm_task(void *ctx, int64_t task, int thread) {
  Norm &m = *static_cast<Norm *>(ctx);
  const int64_t n = m.n;
  const int64_t r0 = task * m.rows_per_task, r1 = std::min(m.rows, r0 + m.rows_per_task);
  auto *sc = static_cast<double *>(thread_scratch(thread, size_t((2 * NR + 4) * n) * sizeof(double) + 64));
  if (!sc) {
    m.failed.store(true, std::memory_order_relaxed);
    return;
  }
  double *__restrict x = sc, *__restrict g = sc + NR * n, *__restrict y = sc + 2 * NR * n;
  double *__restrict w = y + n, *__restrict b = w + n, *__restrict row = b + n;
  if (m.w) load_run(m.w, m.wdt, 0, m.ws, n, w);
  const bool bias = m.b && m.layer;
  if (bias) load_run(m.b, m.bdt, 0, m.bs, n, b);
  const bool has_w = m.w != nullptr;
  const double dn = double(n);
  for (int64_t r = r0; r < r1; r += NR) {
    const int k = int(std::min<int64_t>(NR, r1 - r));
    auto interleave = [&](const Rows &src, double *__restrict dst) {
      for (int q = 0; q < NR; q++) {
        if (q < k) load_run(src.p, src.dtype, src.row(r + q), src.inner(), n, row);
        for (int64_t j = 0; j < n; j++) dst[j * NR + q] = q < k ? row[j] : 0.0;  // missing rows: unused zeros
      }
    };
    interleave(m.x, x);
    double mean[NR] = {0, 0, 0, 0}, ss[NR] = {0, 0, 0, 0}, inv[NR];
    if (m.layer) {
      for (int64_t j = 0; j < n; j++)
        for (int q = 0; q < NR; q++) mean[q] += x[j * NR + q];
      for (int q = 0; q < NR; q++) mean[q] /= dn;
    }
    for (int64_t j = 0; j < n; j++)
      for (int q = 0; q < NR; q++) {
        const double d = x[j * NR + q] - mean[q];
        ss[q] += d * d;
      }
    for (int q = 0; q < NR; q++) inv[q] = 1 / std::sqrt(ss[q] / dn + m.eps);
    if (!m.vjp) {
      // out = T(w·T(ŷ)) (+ b, rounded again): MLX's (and the GPU's) rounding, so a product that
      // overflows a 16-bit type overflows here too. One loop per output dtype (no switch per element).
      auto affine = [&](auto round) {
        for (int q = 0; q < k; q++) {
          for (int64_t j = 0; j < n; j++) {
            double v = round((x[j * NR + q] - mean[q]) * inv[q]);
            if (has_w) v = round(v * w[j]);
            if (bias) v = round(v + b[j]);
            y[j] = v;
          }
          store_run(m.out, m.odt, (r + q) * n, y, n);
        }
      };
      switch (m.odt) {
        case F32: affine([](double v) { return double(float(v)); }); break;
        case F64: affine([](double v) { return v; }); break;
        case F16: affine([](double v) { return double(f16_to_f32(f64_to_f16(v))); }); break;
        default: affine([](double v) { return double(bf16_to_f32(f32_to_bf16(float(v)))); }); break;
      }
      continue;
    }
    for (int q = 0; q < k; q++) {
      m.stats[size_t(2 * (r + q))] = mean[q];
      m.stats[size_t(2 * (r + q) + 1)] = inv[q];
    }
    interleave(m.g, g);
    double su[NR] = {0, 0, 0, 0}, suy[NR] = {0, 0, 0, 0};
    for (int64_t j = 0; j < n; j++) {
      const double wj = has_w ? w[j] : 1;
      for (int q = 0; q < NR; q++) {
        const double u = wj * g[j * NR + q];
        const double yhat = (x[j * NR + q] - mean[q]) * inv[q];
        su[q] += u;
        suy[q] += u * yhat;
      }
    }
    for (int q = 0; q < k; q++) {
      const double mean_u = m.layer ? su[q] / dn : 0;
      const double kq = suy[q] / dn;
      for (int64_t j = 0; j < n; j++) {
        const double u = (has_w ? w[j] : 1) * g[j * NR + q];
        const double yhat = (x[j * NR + q] - mean[q]) * inv[q];
        y[j] = (u - mean_u - yhat * kq) * inv[q];
      }
      store_run(m.out, m.odt, (r + q) * n, y, n);
    }
  }
}

// dw[j] = Σ_rows g·ŷ and db[j] = Σ_rows g, rows in order (columns split over tasks).
void norm_columns_task(void *ctx, int64_t task, int) {
  Norm &m = *static_cast<Norm *>(ctx);
  constexpr int64_t COLS = 64;
  const int64_t j0 = task * COLS, j1 = std::min(m.n, j0 + COLS), nc = j1 - j0;
  double dw[COLS] = {0}, db[COLS] = {0}, x[COLS], g[COLS];
  const int64_t st = m.x.inner(), gst = m.g.inner();
  for (int64_t r = 0; r < m.rows; r++) {
    const double mean = m.stats[size_t(2 * r)], inv = m.stats[size_t(2 * r + 1)];
    load_run(m.x.p, m.x.dtype, m.x.row(r) + j0 * st, st, nc, x);
    load_run(m.g.p, m.g.dtype, m.g.row(r) + j0 * gst, gst, nc, g);
    for (int64_t j = 0; j < nc; j++) {
      const double yhat = (x[j] - mean) * inv;
      dw[j] = dw[j] + g[j] * yhat;
      db[j] = db[j] + g[j];
    }
  }
  for (int64_t j = j0; j < j1; j++) {
    if (m.dw) store_d(m.dw, m.wdt, j, dw[j - j0]);
    if (m.db) store_d(m.db, m.bdt, j, db[j - j0]);
  }
}

// ---- rope ----------------------------------------------------------------------------------------------------

struct Rope {
  Rows x;
  int64_t rows, D, T, per_batch, dims;
  bool traditional, forward;
  double base, scale;  // base is the float32-rounded base (unused with freqs)
  const char *offsets, *freqs;
  int off_dtype, freq_dtype;
  int64_t n_offsets, off_stride, freq_stride;
  char *out;
  int odt;
  int64_t rows_per_task;
  std::vector<double> inv_freq;
  double *table = nullptr;  // [offset entries][T][dims/2] of (cos, ±sin)
};

// cos θ and ±sin θ of every (offset entry, position, frequency), computed once: the same values
// the reference computes per row (heads share them), so the rotation stays bit for bit.
void rope_table_task(void *ctx, int64_t task, int) {
  const Rope &o = *static_cast<const Rope *>(ctx);
  const int64_t half = o.dims / 2;
  const int64_t bo = task / o.T, t = task % o.T;
  const double off = load_d(o.offsets, o.off_dtype, bo * o.off_stride);
  const double position = o.scale * (double(t) + off);
  double *cs = o.table + task * half * 2;
  for (int64_t i = 0; i < half; i++) {
    const double theta = position * o.inv_freq[size_t(i)];
    cs[2 * i] = std::cos(theta);
    cs[2 * i + 1] = o.forward ? std::sin(theta) : -std::sin(theta);
  }
}

void rope_task(void *ctx, int64_t task, int) {
  const Rope &o = *static_cast<const Rope *>(ctx);
  const int64_t half = o.dims / 2, st = o.x.inner();
  const int64_t r0 = task * o.rows_per_task, r1 = std::min(o.rows, r0 + o.rows_per_task);
  const bool f32 = o.x.dtype == F32 && o.odt == F32;
  for (int64_t r = r0; r < r1; r++) {
    const int64_t t = r % o.T, b = r / o.per_batch;
    const double *cs = o.table + ((o.n_offsets == 1 ? 0 : b) * o.T + t) * half * 2;
    const int64_t base = o.x.row(r);
    // elements past `dims` are copied
    for (int64_t j = 2 * half; j < o.D; j++) store_d(o.out, o.odt, r * o.D + j, load_d(o.x.p, o.x.dtype, base + j * st));
    if (f32) {
      const float *x = reinterpret_cast<const float *>(o.x.p) + base;
      float *y = reinterpret_cast<float *>(o.out) + r * o.D;
      for (int64_t i = 0; i < half; i++) {
        const int64_t j1 = o.traditional ? 2 * i : i, j2 = o.traditional ? 2 * i + 1 : i + half;
        const double c = cs[2 * i], sn = cs[2 * i + 1], x1 = x[j1 * st], x2 = x[j2 * st];
        y[j1] = float(x1 * c - x2 * sn);
        y[j2] = float(x1 * sn + x2 * c);
      }
      continue;
    }
    for (int64_t i = 0; i < half; i++) {
      const double c = cs[2 * i], sn = cs[2 * i + 1];
      const int64_t j1 = o.traditional ? 2 * i : i, j2 = o.traditional ? 2 * i + 1 : i + half;
      const double x1 = load_d(o.x.p, o.x.dtype, base + j1 * st), x2 = load_d(o.x.p, o.x.dtype, base + j2 * st);
      store_d(o.out, o.odt, r * o.D + j1, x1 * c - x2 * sn);
      store_d(o.out, o.odt, r * o.D + j2, x1 * sn + x2 * c);
    }
  }
}

// ---- attention -----------------------------------------------------------------------------------------------

constexpr double HIDDEN = -1e300;
constexpr double HIDDEN_LOG2 = -3.0e38;

enum MaskKind { MaskNone = 0, MaskCausal = 1, MaskBool = 2, MaskAdditive = 3 };

struct Attn {
  int64_t B, Hq, Hkv, qL, kL, Dk, Dv;
  double scale;
  int mask;
  Rows q, k, v, m, g;  // m: the mask (B, Hq, qL, kL); g: dO (vjp)
  const char *sinks = nullptr;
  int sinks_dtype = F32;
  int64_t sinks_stride = 0;
  char *o = nullptr, *stats = nullptr;      // forward outputs
  char *dq = nullptr, *dk = nullptr, *dv = nullptr;  // vjp outputs
  size_t scratch_bytes;
  std::atomic<bool> failed{false};
};

inline int64_t off4(const Rows &a, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return i0 * a.strides[0] + i1 * a.strides[1] + i2 * a.strides[2] + i3 * a.strides[3];
}

// One head's operands as dense doubles: Q [qL][Dk], Kᵀ [Dk][kL], V [kL][Dv] (and Vᵀ for the vjp).
struct Head {
  double *q, *kt, *k, *v, *vt, *s, *p, *dp, *mrow;
  uint8_t *hidden;
};

MG_INLINE void load_head(const Attn &a, int64_t b, int64_t h, int64_t hk, Head &hd, bool vjp) {
  for (int64_t i = 0; i < a.qL; i++) load_run(a.q.p, a.q.dtype, off4(a.q, b, h, i, 0), a.q.strides[3], a.Dk, hd.q + i * a.Dk);
  for (int64_t j = 0; j < a.kL; j++) {
    double *kj = hd.k + j * a.Dk;  // the vjp's K; the forward only needs it here as a row buffer
    load_run(a.k.p, a.k.dtype, off4(a.k, b, hk, j, 0), a.k.strides[3], a.Dk, kj);
    for (int64_t c = 0; c < a.Dk; c++) hd.kt[c * a.kL + j] = kj[c];
  }
  for (int64_t j = 0; j < a.kL; j++) {
    double *vj = hd.v + j * a.Dv;
    load_run(a.v.p, a.v.dtype, off4(a.v, b, hk, j, 0), a.v.strides[3], a.Dv, vj);
    if (vjp)
      for (int64_t c = 0; c < a.Dv; c++) hd.vt[c * a.kL + j] = vj[c];
  }
}

// y[c] = y[c] + s·x[c], c < n: each element its own sum, so vectorising changes no bit. (Buffers are
// dtype-erased memory here, -fno-strict-aliasing: without __restrict every store could alias.)
MG_INLINE void axpy(double *__restrict y, double s, const double *__restrict x, int64_t n) {
  for (int64_t c = 0; c < n; c++) y[c] = y[c] + s * x[c];
}

// Dot products of row `x` (length D) with columns [j0, j1) of `mt` ([D][ld]), each summed over c in
// order (four at a time, side by side).
MG_INLINE void dots(const double *__restrict x, const double *__restrict mt, int64_t ld, int64_t D, int64_t j0, int64_t j1, double *__restrict out) {
  int64_t j = j0;
  for (; j + 4 <= j1; j += 4) {
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int64_t c = 0; c < D; c++) {
      const double xc = x[c];
      const double *m = mt + c * ld + j;
      a0 += xc * m[0];
      a1 += xc * m[1];
      a2 += xc * m[2];
      a3 += xc * m[3];
    }
    out[j] = a0;
    out[j + 1] = a1;
    out[j + 2] = a2;
    out[j + 3] = a3;
  }
  for (; j < j1; j++) {
    double acc = 0;
    for (int64_t c = 0; c < D; c++) acc += x[c] * mt[c * ld + j];
    out[j] = acc;
  }
}

struct RowResult {
  int64_t end;
  double m2, l;
};

// The reference's SdpaRows.row: scores, masking, softmax with the sink; p[j] for j < end.
MG_INLINE RowResult softmax_row(const Attn &a, Head &hd, int64_t b, int64_t h, int64_t i) {
  double *__restrict s = hd.s, *__restrict p = hd.p;
  uint8_t *__restrict hidden = hd.hidden;
  const int mask = a.mask;
  const double scale = a.scale;
  const int64_t limit = i + a.kL - a.qL;
  int64_t end = mask == MaskCausal && limit >= 0 ? std::min(a.kL, limit + 1) : a.kL;
  dots(hd.q + i * a.Dk, hd.kt, a.kL, a.Dk, 0, end, s);
  int64_t visible = 0;
  const double *__restrict mrow = hd.mrow;
  if (mask == MaskBool || mask == MaskAdditive) load_run(a.m.p, a.m.dtype, off4(a.m, b, h, i, 0), a.m.strides[3], end, hd.mrow);
  if (mask == MaskAdditive || mask == MaskNone) {
    // nothing hidden: one pass the compiler can vectorise
    std::memset(hidden, 0, size_t(end));
    if (mask == MaskAdditive)
      for (int64_t j = 0; j < end; j++) s[j] = s[j] * scale + mrow[j];
    else
      for (int64_t j = 0; j < end; j++) s[j] = s[j] * scale;
    visible = end;
  } else {
    for (int64_t j = 0; j < end; j++) {
      const bool hid = (mask == MaskCausal && j > limit) || (mask == MaskBool && mrow[j] == 0);
      hidden[j] = hid ? 1 : 0;
      if (hid) {
        s[j] = HIDDEN;
        continue;
      }
      visible++;
      s[j] = s[j] * scale;
    }
  }
  if (visible == 0) {
    end = a.kL;
    for (int64_t j = 0; j < end; j++) {
      hidden[j] = 1;
      s[j] = HIDDEN;
    }
  } else if (end < a.kL) {
    // Every visible score −inf under a causal mask: the keys it hides (finite minimum scores, as
    // MLX's mask) win the softmax, as on the GPU and in MLX.
    bool all_ninf = true;
    for (int64_t j = 0; j < end && all_ninf; j++) all_ninf = s[j] == -INFINITY;
    if (all_ninf) {
      for (int64_t j = end; j < a.kL; j++) {
        hidden[j] = 1;
        s[j] = HIDDEN;
      }
      end = a.kL;
    }
  }
  const bool has_sink = a.sinks != nullptr;
  const double sink = has_sink ? load_d(a.sinks, a.sinks_dtype, h * a.sinks_stride) : 0;
  double mx = has_sink ? sink : -INFINITY;
  bool nan = false;
  for (int64_t j = 0; j < end; j++) {
    const double x = s[j];
    if (x != x) nan = true;
    if (x > mx) mx = x;
  }
  if (nan || mx == -INFINITY || mx == INFINITY) {
    for (int64_t j = 0; j < end; j++) p[j] = NAN;
    return {end, nan ? NAN : mx * M_LOG2E, mx == -INFINITY ? 0.0 : NAN};
  }
  double total = has_sink ? std::exp(sink - mx) : 0;
  // exp(x) rounds to +0 below -745.2: skipping the call there gives the same bits (a masked score
  // minus the maximum is far below, and libm's underflow path is slow).
  for (int64_t j = 0; j < end; j++) {
    const double x = s[j] - mx;
    total += p[j] = x < -746.0 ? 0.0 : std::exp(x);
  }
  for (int64_t j = 0; j < end; j++) p[j] = p[j] / total;
  const double m2 = (visible == 0 || mx == HIDDEN) && (!has_sink || sink * M_LOG2E < HIDDEN_LOG2) ? HIDDEN_LOG2 : mx * M_LOG2E;
  return {end, m2, total};
}

size_t head_doubles(const Attn &a) {
  return size_t(a.qL * a.Dk + 2 * a.kL * a.Dk + 2 * a.kL * a.Dv + 4 * a.kL + a.qL * a.Dk + a.kL * (a.Dk + a.Dv) + a.Dv + 64);
}

Head carve(const Attn &a, double *sc) {
  Head hd;
  hd.q = sc;
  hd.kt = hd.q + a.qL * a.Dk;
  hd.k = hd.kt + a.kL * a.Dk;
  hd.v = hd.k + a.kL * a.Dk;
  hd.vt = hd.v + a.kL * a.Dv;
  hd.s = hd.vt + a.kL * a.Dv;
  hd.p = hd.s + a.kL;
  hd.dp = hd.p + a.kL;
  hd.mrow = hd.dp + a.kL;
  hd.hidden = reinterpret_cast<uint8_t *>(hd.mrow + a.kL);
  return hd;
}

MG_CLONES void sdpa_task(void *ctx, int64_t task, int thread) {
  Attn &a = *static_cast<Attn *>(ctx);
  auto *sc = static_cast<double *>(thread_scratch(thread, a.scratch_bytes));
  if (!sc) {
    a.failed.store(true, std::memory_order_relaxed);
    return;
  }
  Head hd = carve(a, sc);
  double *acc = reinterpret_cast<double *>(hd.hidden + ((a.kL + 7) / 8) * 8);
  uint8_t *v_nonfinite = reinterpret_cast<uint8_t *>(acc + a.Dv);
  const int64_t b = task / a.Hq, h = task % a.Hq, hk = h / (a.Hq / a.Hkv);
  load_head(a, b, h, hk, hd, false);
  // Every key enters the weighted sum, as on the GPU and in MLX: a zero weight times an infinite
  // or NaN value is NaN. Zero weights are skipped only for keys whose values are all finite.
  for (int64_t j = 0; j < a.kL; j++) {
    bool bad = false;
    for (int64_t c = 0; c < a.Dv; c++) bad |= !std::isfinite(hd.v[j * a.Dv + c]);
    v_nonfinite[j] = bad ? 1 : 0;
  }
  for (int64_t i = 0; i < a.qL; i++) {
    const RowResult rr = softmax_row(a, hd, b, h, i);
    std::fill(acc, acc + a.Dv, 0.0);
    for (int64_t j = 0; j < a.kL; j++) {
      const double pj = j < rr.end ? hd.p[j] : 0.0;
      if (pj == 0 && !v_nonfinite[j]) continue;
      const double *vj = hd.v + j * a.Dv;
      axpy(acc, pj, vj, a.Dv);
    }
    const int64_t r = (b * a.Hq + h) * a.qL + i;
    store_run(a.o, a.q.dtype, r * a.Dv, acc, a.Dv);
    if (a.stats) {
      reinterpret_cast<float *>(a.stats)[2 * r] = float(rr.m2);
      reinterpret_cast<float *>(a.stats)[2 * r + 1] = float(rr.l);
    }
  }
}

// Gradients of one key/value head: its query heads (in order) accumulate dK and dV.
MG_CLONES void sdpa_vjp_task(void *ctx, int64_t task, int thread) {
  Attn &a = *static_cast<Attn *>(ctx);
  auto *sc = static_cast<double *>(thread_scratch(thread, a.scratch_bytes));
  if (!sc) {
    a.failed.store(true, std::memory_order_relaxed);
    return;
  }
  Head hd = carve(a, sc);
  double *dk = reinterpret_cast<double *>(hd.hidden + ((a.kL + 7) / 8) * 8);
  double *dv = dk + a.kL * a.Dk;
  double *dq = dv + a.kL * a.Dv;
  double *go = dq + a.qL * a.Dk;
  const int64_t b = task / a.Hkv, hk = task % a.Hkv, gqa = a.Hq / a.Hkv;
  std::fill(dk, dk + a.kL * a.Dk, 0.0);
  std::fill(dv, dv + a.kL * a.Dv, 0.0);
  for (int64_t h = hk * gqa; h < (hk + 1) * gqa; h++) {
    load_head(a, b, h, hk, hd, true);
    std::fill(dq, dq + a.qL * a.Dk, 0.0);
    bool v_finite = true;
    for (int64_t e = 0; e < a.kL * a.Dv; e++) v_finite = v_finite && std::isfinite(hd.v[e]);
    for (int64_t i = 0; i < a.qL; i++) {
      const RowResult rr = softmax_row(a, hd, b, h, i);
      load_run(a.g.p, a.g.dtype, off4(a.g, b, h, i, 0), a.g.strides[3], a.Dv, go);
      // dV and D start at +0 and, summed in round-to-nearest, never become −0: a term p·x with p = 0
      // and x finite adds ±0 and changes no bit, so masked keys are skipped when dO's row is finite.
      // Keys past rr.end weigh 0 too: they matter only through non-finite values (0·inf = NaN, as
      // MLX's composition and the GPU), so they are visited only when some value or dO is not finite.
      bool go_finite = true;
      for (int64_t c = 0; c < a.Dv; c++) go_finite = go_finite && std::isfinite(go[c]);
      const int64_t jend = go_finite && v_finite ? rr.end : a.kL;
      // dp[j] = Σ_c dO·v (in order); dV += p·dO; D = Σ_j p·dp
      dots(go, hd.vt, a.kL, a.Dv, 0, jend, hd.dp);
      double D = 0;
      for (int64_t j = 0; j < jend; j++) {
        const double pj = j < rr.end ? hd.p[j] : 0.0;
        if (pj == 0 && go_finite && std::isfinite(hd.dp[j])) continue;
        double *dvj = dv + j * a.Dv;
        axpy(dvj, pj, go, a.Dv);
        D += pj * hd.dp[j];
      }
      // a non-finite D reaches every key, the ones past rr.end included (0·(dp − D) = NaN)
      int64_t send = jend;
      if (!std::isfinite(D) && send < a.kL) {
        dots(go, hd.vt, a.kL, a.Dv, send, a.kL, hd.dp);
        send = a.kL;
      }
      const double *qi = hd.q + i * a.Dk;
      double *dqi = dq + i * a.Dk;
      for (int64_t j = 0; j < send; j++) {
        double ds;
        if (j >= rr.end || hd.hidden[j]) {
          if (std::isfinite(hd.dp[j]) && std::isfinite(D)) continue;
          ds = NAN;  // 0 · (dp − D) with a non-finite factor
        } else {
          ds = hd.p[j] * (hd.dp[j] - D) * a.scale;
        }
        if (ds == 0) continue;
        const double *kj = hd.k + j * a.Dk;
        double *dkj = dk + j * a.Dk;
        axpy(dqi, ds, kj, a.Dk);  // dq and dk are separate buffers: two passes keep every sum's order
        axpy(dkj, ds, qi, a.Dk);
      }
    }
    store_run(a.dq, a.q.dtype, (b * a.Hq + h) * a.qL * a.Dk, dq, a.qL * a.Dk);
  }
  store_run(a.dk, a.k.dtype, (b * a.Hkv + hk) * a.kL * a.Dk, dk, a.kL * a.Dk);
  store_run(a.dv, a.v.dtype, (b * a.Hkv + hk) * a.kL * a.Dv, dv, a.kL * a.Dv);
}

// ---- attention in float32 (float32, float16 and bfloat16 operands) -------------------------------------------
// MLX's precision (products accumulated in float32, softmax in float32) at GEMM speed: blocks of BQ
// query rows multiply against the keys they can see (causal rows stop at the diagonal) with the
// matmul micro-kernels. Scratch per thread is O(BQ·kL + kL·D): linear in the sequence length.
// The backward recomputes P from Q and K (flash-attention 2's dS = P ∘ (dP − rowsum(P ∘ dP))),
// one task per key/value head accumulating dK and dV over its query heads and blocks in order, so
// the result never depends on the thread count.

// Query rows per block: few enough that causal blocks stop near the diagonal, enough that the
// backward's dK/dV products (summed over the block's rows) keep the micro-kernel busy at large
// head dims.
int64_t block_rows(const Attn &a, bool vjp) { return (vjp && a.Dk + a.Dv >= 256) || a.qL > 256 ? 48 : 24; }

// Keys [0, end) that row i of the reference reads (all of them when a causal row sees none).
inline int64_t row_end(const Attn &a, int64_t i) {
  const int64_t limit = i + a.kL - a.qL;
  return a.mask == MaskCausal && limit >= 0 ? std::min(a.kL, limit + 1) : a.kL;
}

struct RowF {
  float m2, l;
};

// Row i of scores s[0, end) → probabilities p (in place), zero over [end, width); hidden[j] marks
// masked keys. The reference's corner cases: a row that sees no key is uniform over all of them
// (zero with a finite sink), NaN scores or an infinite maximum give NaN.
RowF softmax_row_f32(const Attn &a, float *s, uint8_t *hidden, int64_t width, int64_t b, int64_t h, int64_t i) {
  const int64_t limit = i + a.kL - a.qL;
  const int64_t end = row_end(a, i);
  const float scale = float(a.scale);
  int64_t visible = 0;
  for (int64_t j = 0; j < end; j++) {
    const bool hid = (a.mask == MaskCausal && j > limit) || (a.mask == MaskBool && load_d(a.m.p, a.m.dtype, off4(a.m, b, h, i, j)) == 0);
    hidden[j] = hid ? 1 : 0;
    if (hid) {
      s[j] = -INFINITY;
      continue;
    }
    visible++;
    s[j] = a.mask == MaskAdditive ? s[j] * scale + float(load_d(a.m.p, a.m.dtype, off4(a.m, b, h, i, j))) : s[j] * scale;
  }
  for (int64_t j = end; j < width; j++) s[j] = 0;
  const bool has_sink = a.sinks != nullptr;
  const float sink = has_sink ? float(load_d(a.sinks, a.sinks_dtype, h * a.sinks_stride)) : 0.0f;
  if (visible == 0) {
    // every key hidden (end = kL here): the reference's −1e300 scores
    std::fill(hidden, hidden + end, uint8_t(1));
    if (has_sink && sink == INFINITY) {
      std::fill(s, s + end, NAN);
      return {INFINITY, NAN};
    }
    if (has_sink && sink != -INFINITY) {
      const float p = sink != sink ? NAN : 0.0f;
      std::fill(s, s + end, p);
      return {sink != sink ? NAN : float(double(sink) * M_LOG2E), sink != sink ? NAN : 1.0f};
    }
    std::fill(s, s + end, float(1.0 / double(a.kL)));
    return {float(HIDDEN_LOG2), float(a.kL)};
  }
  float mx = has_sink ? sink : -INFINITY;
  bool nan = false;
  for (int64_t j = 0; j < end; j++) {
    const float x = s[j];
    if (x != x) nan = true;
    if (x > mx) mx = x;
  }
  if (nan || mx == -INFINITY || mx == INFINITY) {
    std::fill(s, s + end, NAN);
    return {nan ? NAN : float(double(mx) * M_LOG2E), mx == -INFINITY ? 0.0f : NAN};
  }
  double total = isa().exp_row_f32(s, s, end, mx);
  if (has_sink) total += std::exp(double(sink) - double(mx));
  const float inv = float(1.0 / total);
  for (int64_t j = 0; j < end; j++) s[j] *= inv;
  return {float(double(mx) * M_LOG2E), float(total)};
}

inline const char *at4(const Rows &a, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return a.p + off4(a, i0, i1, i2, i3) * dtype_size(a.dtype);
}

// Forward tasks: (batch, head, block of BQ query rows).
struct AttnF32 {
  Attn *a;
  int64_t bq, blocks;
  size_t scratch_bytes;
};

size_t fwd_scratch_bytes(const Attn &a, int64_t bq) {
  const int64_t n = std::max(a.kL, a.Dv);
  return size_t(bq * a.kL + bq * a.Dv) * 4 + size_t(bq * a.kL) + local_gemm_scratch_bytes(n) + 512;
}

void sdpa_f32_task(void *ctx, int64_t task, int thread) {
  AttnF32 &t = *static_cast<AttnF32 *>(ctx);
  Attn &a = *t.a;
  char *sc = static_cast<char *>(thread_scratch(thread, t.scratch_bytes));
  if (!sc) {
    a.failed.store(true, std::memory_order_relaxed);
    return;
  }
  void *gs = sc;
  sc += (local_gemm_scratch_bytes(std::max(a.kL, a.Dv)) + 63) & ~size_t(63);
  float *s = reinterpret_cast<float *>(sc);
  float *o = s + t.bq * a.kL;
  uint8_t *hidden = reinterpret_cast<uint8_t *>(o + t.bq * a.Dv);
  const int64_t bh = task / t.blocks, blk = task % t.blocks;
  const int64_t b = bh / a.Hq, h = bh % a.Hq, hk = h / (a.Hq / a.Hkv);
  const int64_t i0 = blk * t.bq, rows = std::min(t.bq, a.qL - i0);
  int64_t width = 0;
  for (int64_t i = i0; i < i0 + rows; i++) width = std::max(width, row_end(a, i));
  // S = Q·Kᵀ over the keys the block sees
  local_gemm_f32(rows, width, a.Dk, at4(a.q, b, h, i0, 0), a.q.dtype, a.q.strides[2], a.q.strides[3], at4(a.k, b, hk, 0, 0), a.k.dtype,
                 a.k.strides[3], a.k.strides[2], s, width, false, gs);
  for (int64_t r = 0; r < rows; r++) {
    const RowF st = softmax_row_f32(a, s + r * width, hidden, width, b, h, i0 + r);
    if (a.stats) {
      const int64_t row = (b * a.Hq + h) * a.qL + i0 + r;
      reinterpret_cast<float *>(a.stats)[2 * row] = st.m2;
      reinterpret_cast<float *>(a.stats)[2 * row + 1] = st.l;
    }
  }
  // O = P·V, written straight into a float32 output
  const int64_t row0 = (b * a.Hq + h) * a.qL + i0;
  const bool direct = a.q.dtype == F32;
  float *dst = direct ? reinterpret_cast<float *>(a.o) + row0 * a.Dv : o;
  local_gemm_f32(rows, a.Dv, width, reinterpret_cast<const char *>(s), F32, width, 1, at4(a.v, b, hk, 0, 0), a.v.dtype, a.v.strides[2],
                 a.v.strides[3], dst, a.Dv, false, gs);
  if (!direct)
    for (int64_t r = 0; r < rows * a.Dv; r++) store_d(a.o, a.q.dtype, row0 * a.Dv + r, o[r]);
}

size_t vjp_scratch_bytes(const Attn &a, int64_t bq) {
  const int64_t n = std::max({a.kL, a.Dv, a.Dk});
  return size_t(2 * bq * a.kL + bq * a.Dk + a.kL * (a.Dk + a.Dv)) * 4 + size_t(bq * a.kL) + local_gemm_scratch_bytes(n) + 1024;
}

// Gradients of one key/value head (task = batch · Hkv + head): its query heads, block by block.
void sdpa_f32_vjp_task(void *ctx, int64_t task, int thread) {
  AttnF32 &t = *static_cast<AttnF32 *>(ctx);
  Attn &a = *t.a;
  char *sc = static_cast<char *>(thread_scratch(thread, t.scratch_bytes));
  if (!sc) {
    a.failed.store(true, std::memory_order_relaxed);
    return;
  }
  void *gs = sc;
  sc += (local_gemm_scratch_bytes(std::max({a.kL, a.Dv, a.Dk})) + 63) & ~size_t(63);
  float *p = reinterpret_cast<float *>(sc);
  float *dp = p + t.bq * a.kL;
  float *dq = dp + t.bq * a.kL;
  float *dk = dq + t.bq * a.Dk;
  float *dv = dk + a.kL * a.Dk;
  uint8_t *hidden = reinterpret_cast<uint8_t *>(dv + a.kL * a.Dv);
  const int64_t b = task / a.Hkv, hk = task % a.Hkv, gqa = a.Hq / a.Hkv;
  std::fill(dk, dk + a.kL * a.Dk, 0.0f);
  std::fill(dv, dv + a.kL * a.Dv, 0.0f);
  const float scale = float(a.scale);
  const char *kp = at4(a.k, b, hk, 0, 0), *vp = at4(a.v, b, hk, 0, 0);
  for (int64_t h = hk * gqa; h < (hk + 1) * gqa; h++) {
    for (int64_t i0 = 0; i0 < a.qL; i0 += t.bq) {
      const int64_t rows = std::min(t.bq, a.qL - i0);
      int64_t width = 0;
      for (int64_t i = i0; i < i0 + rows; i++) width = std::max(width, row_end(a, i));
      const char *qp = at4(a.q, b, h, i0, 0), *gp = at4(a.g, b, h, i0, 0);
      local_gemm_f32(rows, width, a.Dk, qp, a.q.dtype, a.q.strides[2], a.q.strides[3], kp, a.k.dtype, a.k.strides[3], a.k.strides[2], p,
                     width, false, gs);
      // dP = dO·Vᵀ
      local_gemm_f32(rows, width, a.Dv, gp, a.g.dtype, a.g.strides[2], a.g.strides[3], vp, a.v.dtype, a.v.strides[3], a.v.strides[2], dp,
                     width, false, gs);
      for (int64_t r = 0; r < rows; r++) {
        float *pr = p + r * width, *dpr = dp + r * width;
        softmax_row_f32(a, pr, hidden + r * width, width, b, h, i0 + r);
        const int64_t end = row_end(a, i0 + r);
        double D = 0;
        for (int64_t j = 0; j < end; j++) D += double(pr[j]) * double(dpr[j]);
        const float Df = float(D);
        const uint8_t *hr = hidden + r * width;
        // dS (in dP's place); hidden keys get none, as in the reference
        for (int64_t j = 0; j < end; j++) dpr[j] = hr[j] ? 0.0f : pr[j] * (dpr[j] - Df) * scale;
        for (int64_t j = end; j < width; j++) dpr[j] = 0;
      }
      // dV += Pᵀ·dO, dK += dSᵀ·Q, dQ = dS·K
      local_gemm_f32(width, a.Dv, rows, reinterpret_cast<const char *>(p), F32, 1, width, gp, a.g.dtype, a.g.strides[2], a.g.strides[3], dv,
                     a.Dv, true, gs);
      local_gemm_f32(width, a.Dk, rows, reinterpret_cast<const char *>(dp), F32, 1, width, qp, a.q.dtype, a.q.strides[2], a.q.strides[3],
                     dk, a.Dk, true, gs);
      const int64_t row0 = (b * a.Hq + h) * a.qL + i0;
      const bool direct = a.q.dtype == F32;
      float *dst = direct ? reinterpret_cast<float *>(a.dq) + row0 * a.Dk : dq;
      local_gemm_f32(rows, a.Dk, width, reinterpret_cast<const char *>(dp), F32, width, 1, kp, a.k.dtype, a.k.strides[2], a.k.strides[3],
                     dst, a.Dk, false, gs);
      if (!direct)
        for (int64_t r = 0; r < rows * a.Dk; r++) store_d(a.dq, a.q.dtype, row0 * a.Dk + r, dq[r]);
    }
  }
  const int64_t k0 = (b * a.Hkv + hk) * a.kL;
  for (int64_t r = 0; r < a.kL * a.Dk; r++) store_d(a.dk, a.k.dtype, k0 * a.Dk + r, dk[r]);
  for (int64_t r = 0; r < a.kL * a.Dv; r++) store_d(a.dv, a.v.dtype, k0 * a.Dv + r, dv[r]);
}

// ---- cross entropy -------------------------------------------------------------------------------------------

struct Xent {
  bool vjp;
  Rows x;  // logits (…, n)
  int64_t rows, n;
  const char *t, *g;
  int tdt, gdt;
  int64_t tstride, gstride;  // the targets' and g's row strides (1-D views of the leading shape)
  Rows tr, gr;              // targets and g over the leading dims
  char *out;
  int odt;
  int64_t rows_per_task;
};

// The reference's rowLogsumexp (NaN stops it; an infinite maximum is the answer).
double row_lse(const Xent &e, int64_t base, int64_t st) {
  double m = -INFINITY;
  for (int64_t j = 0; j < e.n; j++) {
    const double v = load_d(e.x.p, e.x.dtype, base + j * st);
    if (v != v) return NAN;
    if (v > m) m = v;
  }
  if (!std::isfinite(m)) return m;
  double s = 0;
  for (int64_t j = 0; j < e.n; j++) s += std::exp(load_d(e.x.p, e.x.dtype, base + j * st) - m);
  return m + std::log(s);
}

// Float32 logits (and float16/bfloat16, widened): the row's log-sum-exp and exp(x − lse) on the
// vectorised float32 kernels (MLX's precision: float32 max, exp and sum, the sum in double lanes).
void xent_f32_row(const Xent &e, int64_t r, int64_t base, int64_t st, int64_t t, bool valid, double gv, float *buf) {
  const float *x;
  if (e.x.dtype == F32 && st == 1) {
    x = reinterpret_cast<const float *>(e.x.p) + base;
  } else {
    isa().load(buf, e.x.p + base * dtype_size(e.x.dtype), e.x.dtype, st, e.n);
    x = buf;
  }
  float lse;
  isa().softmax_row(F32, x, &lse, e.n, 1);
  if (!e.vjp) {
    store_d(e.out, e.odt, r, valid ? double(lse - x[t]) : NAN);
    return;
  }
  float *y = e.odt == F32 ? reinterpret_cast<float *>(e.out) + r * e.n : buf + e.n;
  if (!valid) {
    std::fill(y, y + e.n, NAN);
  } else {
    isa().exp_row_f32(x, y, e.n, lse);
    const float g = float(gv), et = y[t];
    for (int64_t j = 0; j < e.n; j++) y[j] *= g;
    y[t] = g * (et - 1.0f);
  }
  if (e.odt != F32)
    for (int64_t j = 0; j < e.n; j++) store_d(e.out, e.odt, r * e.n + j, y[j]);
}

void xent_task(void *ctx, int64_t task, int thread) {
  const Xent &e = *static_cast<const Xent *>(ctx);
  const int64_t r0 = task * e.rows_per_task, r1 = std::min(e.rows, r0 + e.rows_per_task);
  const int64_t st = e.x.inner();
  const bool f32 = e.x.dtype != F64 && e.odt != F64;
  float *buf = f32 ? static_cast<float *>(thread_scratch(thread, size_t(2 * e.n + 16) * sizeof(float))) : nullptr;
  for (int64_t r = r0; r < r1; r++) {
    const int64_t base = e.x.row(r);
    // targets are int32 class indices over the leading dims (a row-major row index)
    int64_t toff = 0, rest = r;
    for (int d = e.tr.nd - 1; d >= 0; d--) {
      toff += (rest % e.tr.shape[d]) * e.tr.strides[d];
      rest /= e.tr.shape[d];
    }
    const double t = load_d(e.t, e.tdt, toff);
    const bool valid = t >= 0 && t < double(e.n) && t == std::floor(t);
    if (buf) {
      double gv = 0;
      if (e.vjp) {
        int64_t goff = 0;
        rest = r;
        for (int d = e.gr.nd - 1; d >= 0; d--) {
          goff += (rest % e.gr.shape[d]) * e.gr.strides[d];
          rest /= e.gr.shape[d];
        }
        gv = load_d(e.g, e.gdt, goff);
      }
      xent_f32_row(e, r, base, st, valid ? int64_t(t) : 0, valid, gv, buf);
      continue;
    }
    if (!e.vjp) {
      store_d(e.out, e.odt, r, valid ? row_lse(e, base, st) - load_d(e.x.p, e.x.dtype, base + int64_t(t) * st) : NAN);
      continue;
    }
    int64_t goff = 0;
    rest = r;
    for (int d = e.gr.nd - 1; d >= 0; d--) {
      goff += (rest % e.gr.shape[d]) * e.gr.strides[d];
      rest /= e.gr.shape[d];
    }
    const double gv = load_d(e.g, e.gdt, goff);
    const double lse = row_lse(e, base, st);
    for (int64_t j = 0; j < e.n; j++) {
      const double v = valid ? gv * (std::exp(load_d(e.x.p, e.x.dtype, base + j * st) - lse) - (j == int64_t(t) ? 1 : 0)) : NAN;
      store_d(e.out, e.odt, r * e.n + j, v);
    }
  }
}

}  // namespace

// [layer, vjp, ndim, shape…, x, x dtype, x strides…, w (0: none), w dtype, w stride, b (0: none),
//  b dtype, b stride, eps (float32-rounded by the caller's rule), output dtype, output (dx for the
//  vjp), then for the vjp: g, g dtype, g strides…, dw (0: none), db (0: none)]
int norm(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_norm";
  Reader r(desc, words, fn);
  Norm m;
  m.layer = r.integer(0, 1, "layer") == 1;
  m.vjp = r.integer(0, 1, "vjp") == 1;
  const int nd = int(r.integer(1, MAX_DIMS, "ndim"));
  int64_t shape[MAX_DIMS];
  if (!read_shape(r, nd, shape)) return fail(fn, r.error);
  if (!read_rows(r, m.x, nd, shape, "x")) return fail(fn, r.error);
  m.w = r.pointer("w");
  m.wdt = r.dtype("w dtype");
  m.ws = r.integer(-(int64_t(1) << 52), int64_t(1) << 52, "w stride");
  m.b = r.pointer("b");
  m.bdt = r.dtype("b dtype");
  m.bs = r.integer(-(int64_t(1) << 52), int64_t(1) << 52, "b stride");
  m.eps = r.next();
  m.odt = r.dtype("output dtype");
  m.out = r.pointer("output");
  if (m.vjp) {
    if (!read_rows(r, m.g, nd, shape, "g")) return fail(fn, r.error);
    m.dw = r.pointer("dw");
    m.db = r.pointer("db");
  }
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  if (!float_dtype(m.x.dtype) || !float_dtype(m.odt) || (m.w && !float_dtype(m.wdt)) || (m.b && !float_dtype(m.bdt)) ||
      (m.vjp && !float_dtype(m.g.dtype)))
    return unsupported(fn, "a non-float operand");
  m.n = shape[nd - 1];
  const int64_t total = size_of(nd, shape);
  m.rows = m.n == 0 ? 0 : total / m.n;
  if (m.vjp && m.dw) {
    // dw/db over zero rows are zeros
    for (int64_t j = 0; j < m.n; j++) store_d(m.dw, m.wdt, j, 0);
  }
  if (m.vjp && m.db)
    for (int64_t j = 0; j < m.n; j++) store_d(m.db, m.bdt, j, 0);
  if (m.rows == 0) return MGCPU_OK;
  if (!m.x.p || !m.out || (m.vjp && !m.g.p)) return fail(fn, "null operand");
  if (m.vjp) m.stats.resize(size_t(2 * m.rows));
  m.rows_per_task = std::max<int64_t>(1, 8192 / std::max<int64_t>(m.n, 1));
  const int threads = threads_for(double(total) * (m.vjp ? 12.0 : 6.0));
  note_threads(threads);
  parallel_for((m.rows + m.rows_per_task - 1) / m.rows_per_task, threads, norm_task, &m);
  if (m.failed.load()) return fail(fn, "out of memory for normalization scratch");
  if (m.vjp && (m.dw || m.db)) parallel_for((m.n + 63) / 64, threads, norm_columns_task, &m);
  return MGCPU_OK;
}

// [ndim, shape…, x, x dtype, x strides…, dims, traditional, forward, base (float32-rounded), scale
//  (float32-rounded), offsets, offsets dtype, offset count, offsets stride, freqs (0: none), freqs
//  dtype, freqs stride, output dtype, output]
int rope(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_rope";
  Reader r(desc, words, fn);
  Rope o;
  const int nd = int(r.integer(2, MAX_DIMS, "ndim"));
  int64_t shape[MAX_DIMS];
  if (!read_shape(r, nd, shape)) return fail(fn, r.error);
  if (!read_rows(r, o.x, nd, shape, "x")) return fail(fn, r.error);
  o.dims = r.integer(0, shape[nd - 1], "dims");
  o.traditional = r.integer(0, 1, "traditional") == 1;
  o.forward = r.integer(0, 1, "forward") == 1;
  o.base = r.next();
  o.scale = r.next();
  o.offsets = r.pointer("offsets");
  o.off_dtype = r.dtype("offsets dtype");
  o.n_offsets = r.integer(1, int64_t(1) << 40, "offset count");
  o.off_stride = r.integer(-(int64_t(1) << 52), int64_t(1) << 52, "offsets stride");
  o.freqs = r.pointer("freqs");
  o.freq_dtype = r.dtype("freqs dtype");
  o.freq_stride = r.integer(-(int64_t(1) << 52), int64_t(1) << 52, "freqs stride");
  o.odt = r.dtype("output dtype");
  o.out = r.pointer("output");
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  if (!float_dtype(o.x.dtype) || !float_dtype(o.odt) || (o.freqs && !float_dtype(o.freq_dtype)) || o.off_dtype != I32)
    return unsupported(fn, "operand dtypes");
  o.D = shape[nd - 1];
  o.T = shape[nd - 2];
  const int64_t total = size_of(nd, shape);
  o.rows = o.D == 0 ? 0 : total / o.D;
  if (o.rows == 0) return MGCPU_OK;
  if (!o.x.p || !o.out || !o.offsets) return fail(fn, "null operand");
  if (o.n_offsets != 1 && o.n_offsets != shape[0]) return fail(fn, "offsets: one, or one per batch entry");
  o.per_batch = o.rows / shape[0];
  o.rows_per_task = std::max<int64_t>(1, 4096 / std::max<int64_t>(o.D, 1));
  const int64_t half = o.dims / 2, positions = o.n_offsets * o.T;
  o.inv_freq.resize(size_t(half));
  for (int64_t i = 0; i < half; i++)
    o.inv_freq[size_t(i)] = o.freqs ? 1 / load_d(o.freqs, o.freq_dtype, i * o.freq_stride) : std::pow(o.base, -double(i) / double(half));
  std::vector<double> table;
  try {
    table.resize(size_t(positions * half * 2));
  } catch (const std::bad_alloc &) {
    return fail(fn, "out of memory for the rotation table");
  }
  o.table = table.data();
  const int table_threads = threads_for(double(positions * half) * 40.0);
  parallel_for(positions, table_threads, rope_table_task, &o);
  const int threads = std::max(table_threads, threads_for(double(total) * 3.0));
  note_threads(threads);
  parallel_for((o.rows + o.rows_per_task - 1) / o.rows_per_task, threads, rope_task, &o);
  return MGCPU_OK;
}

// [vjp, B, Hq, Hkv, qL, kL, Dk, Dv, scale, mask kind, q, q dtype, q strides (4)…, k…, v…,
//  mask (0: none), mask dtype, mask strides (4)…, sinks (0: none), sinks dtype, sinks stride,
//  forward: o, stats (0: none) | vjp: g, g dtype, g strides (4)…, dq, dk, dv]
// Outputs are row-major in their operand's dtype (stats float32).
int sdpa(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_sdpa";
  Reader r(desc, words, fn);
  Attn a;
  const bool vjp = r.integer(0, 1, "vjp") == 1;
  const int64_t big = int64_t(1) << 31;
  a.B = r.integer(0, big, "B");
  a.Hq = r.integer(0, big, "Hq");
  a.Hkv = r.integer(1, big, "Hkv");
  a.qL = r.integer(0, big, "qL");
  a.kL = r.integer(0, big, "kL");
  a.Dk = r.integer(0, big, "Dk");
  a.Dv = r.integer(0, big, "Dv");
  a.scale = r.next();
  a.mask = int(r.integer(0, 3, "mask kind"));
  const int64_t qs[4] = {a.B, a.Hq, a.qL, a.Dk}, ks[4] = {a.B, a.Hkv, a.kL, a.Dk}, vs[4] = {a.B, a.Hkv, a.kL, a.Dv};
  const int64_t ms[4] = {a.B, a.Hq, a.qL, a.kL}, gs[4] = {a.B, a.Hq, a.qL, a.Dv};
  if (!read_rows(r, a.q, 4, qs, "q") || !read_rows(r, a.k, 4, ks, "k") || !read_rows(r, a.v, 4, vs, "v") ||
      !read_rows(r, a.m, 4, ms, "mask"))
    return fail(fn, r.error);
  a.sinks = r.pointer("sinks");
  a.sinks_dtype = r.dtype("sinks dtype");
  a.sinks_stride = r.integer(-(int64_t(1) << 52), int64_t(1) << 52, "sinks stride");
  if (!vjp) {
    a.o = r.pointer("output");
    a.stats = r.pointer("stats");
  } else {
    if (!read_rows(r, a.g, 4, gs, "dO")) return fail(fn, r.error);
    a.dq = r.pointer("dq");
    a.dk = r.pointer("dk");
    a.dv = r.pointer("dv");
  }
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  if (a.Hq % a.Hkv != 0) return fail(fn, "query heads are not a multiple of the key/value heads");
  if (!float_dtype(a.q.dtype) || !float_dtype(a.k.dtype) || !float_dtype(a.v.dtype) || (a.sinks && !float_dtype(a.sinks_dtype)) ||
      (vjp && !float_dtype(a.g.dtype)) || ((a.mask == MaskAdditive) && !float_dtype(a.m.dtype)))
    return unsupported(fn, "operand dtypes");
  if ((a.mask == MaskBool || a.mask == MaskAdditive) != (a.m.p != nullptr) && a.B * a.Hq * a.qL * a.kL > 0)
    return fail(fn, "mask kind and mask operand disagree");
  const size_t head = head_doubles(a);
  a.scratch_bytes = (head + size_t(a.kL * (a.Dk + a.Dv) + a.qL * a.Dk + a.Dv)) * sizeof(double) + size_t(a.kL) + 256;
  // float32 path: ~0.1 ns per multiply-add on the micro-kernels and ~2 ns per score for the softmax.
  // Operands with an infinity or NaN take the float64 path, which gives MLX's answers there (every
  // key in the weighted sum, 0·inf = NaN; a causal row whose visible scores are all −inf attends to
  // the hidden keys; docs/corner-cases.md): one scan of the operands, small beside the products.
  const auto finite4 = [](const Rows &x, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    for (int64_t i0 = 0; i0 < n0; i0++)
      for (int64_t i1 = 0; i1 < n1; i1++)
        for (int64_t i2 = 0; i2 < n2; i2++)
          for (int64_t i3 = 0; i3 < n3; i3++)
            if (!std::isfinite(load_d(x.p, x.dtype, off4(x, i0, i1, i2, i3)))) return false;
    return true;
  };
  const bool finite = a.kL == 0 || (finite4(a.q, a.B, a.Hq, a.qL, a.Dk) && finite4(a.k, a.B, a.Hkv, a.kL, a.Dk) &&
                                    finite4(a.v, a.B, a.Hkv, a.kL, a.Dv) && (!vjp || finite4(a.g, a.B, a.Hq, a.qL, a.Dv)));
  const bool f32 = a.q.dtype != F64 && a.k.dtype != F64 && a.v.dtype != F64 && (!vjp || a.g.dtype != F64) && a.kL > 0 && finite;
  const double scores = double(a.B) * double(a.Hq) * double(a.qL) * double(a.kL) * (a.mask == MaskCausal ? 0.5 : 1.0);
  const double work = f32 ? scores * (0.1 * double(a.Dk + a.Dv) + 2.0) * (vjp ? 2.5 : 1.0)
                          : double(a.B) * double(a.Hq) * double(a.qL) * double(a.kL) * double(a.Dk + a.Dv) * (vjp ? 2.5 : 1.2);
  const int threads = threads_for(work);
  note_threads(threads);
  // float64 operands keep the float64 reference (gradient checks); the rest run in float32 (MLX's)
  AttnF32 t{&a, block_rows(a, vjp), 0, 0};
  if (!vjp) {
    if (a.B * a.Hq * a.qL == 0) return MGCPU_OK;
    if (!a.o || !a.q.p || (a.kL > 0 && (!a.k.p || !a.v.p))) return fail(fn, "null operand");
    if (f32) {
      t.blocks = (a.qL + t.bq - 1) / t.bq;
      t.scratch_bytes = fwd_scratch_bytes(a, t.bq);
      parallel_for(a.B * a.Hq * t.blocks, threads, sdpa_f32_task, &t);
    } else {
      parallel_for(a.B * a.Hq, threads, sdpa_task, &a);
    }
  } else {
    if (a.B * a.Hkv == 0) return MGCPU_OK;
    if (!a.dq || !a.dk || !a.dv) return fail(fn, "null operand");
    if (f32 && a.qL > 0) {
      t.scratch_bytes = vjp_scratch_bytes(a, t.bq);
      parallel_for(a.B * a.Hkv, threads, sdpa_f32_vjp_task, &t);
    } else {
      parallel_for(a.B * a.Hkv, threads, sdpa_vjp_task, &a);
    }
  }
  if (a.failed.load()) return fail(fn, "out of memory for attention scratch");
  return MGCPU_OK;
}

// [vjp, ndim, shape…, logits, logits dtype, logits strides…, targets, targets dtype, targets
//  strides (ndim − 1)…, (vjp: g, g dtype, g strides (ndim − 1)…), output dtype, output]
int cross_entropy(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_cross_entropy";
  Reader r(desc, words, fn);
  Xent e;
  e.vjp = r.integer(0, 1, "vjp") == 1;
  const int nd = int(r.integer(1, MAX_DIMS, "ndim"));
  int64_t shape[MAX_DIMS];
  if (!read_shape(r, nd, shape)) return fail(fn, r.error);
  if (!read_rows(r, e.x, nd, shape, "logits")) return fail(fn, r.error);
  if (!read_rows(r, e.tr, nd - 1, shape, "targets")) return fail(fn, r.error);
  e.t = e.tr.p;
  e.tdt = e.tr.dtype;
  if (e.vjp) {
    if (!read_rows(r, e.gr, nd - 1, shape, "g")) return fail(fn, r.error);
    e.g = e.gr.p;
    e.gdt = e.gr.dtype;
  } else {
    e.g = nullptr;
    e.gdt = F32;
  }
  e.odt = r.dtype("output dtype");
  e.out = r.pointer("output");
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  if (!float_dtype(e.x.dtype) || !float_dtype(e.odt) || e.tdt != I32 || (e.vjp && !float_dtype(e.gdt))) return unsupported(fn, "operand dtypes");
  e.n = shape[nd - 1];
  e.rows = size_of(nd - 1, shape);
  if (e.rows == 0 || (e.vjp && e.n == 0)) return MGCPU_OK;
  if (!e.out || !e.t || (e.n > 0 && !e.x.p) || (e.vjp && !e.g)) return fail(fn, "null operand");
  e.rows_per_task = std::max<int64_t>(1, 4096 / std::max<int64_t>(e.n, 1));
  const bool f32 = e.x.dtype != F64 && e.odt != F64;
  const int threads = threads_for(double(e.rows) * double(std::max<int64_t>(e.n, 1)) * (f32 ? 1.5 : 20.0));
  if (f32 && !thread_scratch(0, size_t(2 * e.n + 16) * sizeof(float))) return fail(fn, "out of memory for a row");
  note_threads(threads);
  parallel_for((e.rows + e.rows_per_task - 1) / e.rows_per_task, threads, xent_task, &e);
  return MGCPU_OK;
}

}  // namespace mgcpu

MG_EXPORT int32_t mg_cpu_norm(const double *desc, int32_t words) { return mgcpu::norm(desc, words); }
MG_EXPORT int32_t mg_cpu_cross_entropy(const double *desc, int32_t words) { return mgcpu::cross_entropy(desc, words); }
MG_EXPORT int32_t mg_cpu_rope(const double *desc, int32_t words) { return mgcpu::rope(desc, words); }
MG_EXPORT int32_t mg_cpu_sdpa(const double *desc, int32_t words) { return mgcpu::sdpa(desc, words); }
