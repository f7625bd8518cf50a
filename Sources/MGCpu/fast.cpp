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
#include <vector>

#include "MGCpu.h"
#include "mgcpu.h"

namespace mgcpu {

namespace {

inline double load_d(const char *p, int dtype, int64_t i) {
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
};

// The reference's normStats: μ (0 for rms) and 1/σ, sums in order.
void norm_stats(const Norm &m, int64_t r, double *mean_out, double *inv_out) {
  const int64_t base = m.x.row(r), st = m.x.inner();
  double mean = 0;
  if (m.layer) {
    for (int64_t j = 0; j < m.n; j++) mean += load_d(m.x.p, m.x.dtype, base + j * st);
    mean /= double(m.n);
  }
  double ss = 0;
  for (int64_t j = 0; j < m.n; j++) {
    const double d = load_d(m.x.p, m.x.dtype, base + j * st) - mean;
    ss += d * d;
  }
  *mean_out = mean;
  *inv_out = 1 / std::sqrt(ss / double(m.n) + m.eps);
}

void norm_task(void *ctx, int64_t task, int) {
  Norm &m = *static_cast<Norm *>(ctx);
  const int64_t r0 = task * m.rows_per_task, r1 = std::min(m.rows, r0 + m.rows_per_task);
  const int64_t st = m.x.inner();
  for (int64_t r = r0; r < r1; r++) {
    double mean, inv;
    norm_stats(m, r, &mean, &inv);
    const int64_t base = m.x.row(r);
    if (!m.vjp) {
      for (int64_t j = 0; j < m.n; j++) {
        double y = (load_d(m.x.p, m.x.dtype, base + j * st) - mean) * inv;
        if (m.w) y *= load_d(m.w, m.wdt, j * m.ws);
        if (m.b && m.layer) y += load_d(m.b, m.bdt, j * m.bs);
        store_d(m.out, m.odt, r * m.n + j, y);
      }
      continue;
    }
    m.stats[size_t(2 * r)] = mean;
    m.stats[size_t(2 * r + 1)] = inv;
    const int64_t gb = m.g.row(r), gst = m.g.inner();
    double su = 0, suy = 0;
    for (int64_t j = 0; j < m.n; j++) {
      const double gv = load_d(m.g.p, m.g.dtype, gb + j * gst);
      const double u = (m.w ? load_d(m.w, m.wdt, j * m.ws) : 1) * gv;
      const double yhat = (load_d(m.x.p, m.x.dtype, base + j * st) - mean) * inv;
      su += u;
      suy += u * yhat;
    }
    const double mean_u = m.layer ? su / double(m.n) : 0;
    for (int64_t j = 0; j < m.n; j++) {
      const double gv = load_d(m.g.p, m.g.dtype, gb + j * gst);
      const double u = (m.w ? load_d(m.w, m.wdt, j * m.ws) : 1) * gv;
      const double yhat = (load_d(m.x.p, m.x.dtype, base + j * st) - mean) * inv;
      store_d(m.out, m.odt, r * m.n + j, (u - mean_u - yhat * (suy / double(m.n))) * inv);
    }
  }
}

// dw[j] = Σ_rows g·ŷ and db[j] = Σ_rows g, rows in order (columns split over tasks).
void norm_columns_task(void *ctx, int64_t task, int) {
  Norm &m = *static_cast<Norm *>(ctx);
  constexpr int64_t COLS = 64;
  const int64_t j0 = task * COLS, j1 = std::min(m.n, j0 + COLS);
  double dw[COLS] = {0}, db[COLS] = {0};
  const int64_t st = m.x.inner(), gst = m.g.inner();
  for (int64_t r = 0; r < m.rows; r++) {
    const double mean = m.stats[size_t(2 * r)], inv = m.stats[size_t(2 * r + 1)];
    const int64_t base = m.x.row(r), gb = m.g.row(r);
    for (int64_t j = j0; j < j1; j++) {
      const double gv = load_d(m.g.p, m.g.dtype, gb + j * gst);
      const double yhat = (load_d(m.x.p, m.x.dtype, base + j * st) - mean) * inv;
      dw[j - j0] = dw[j - j0] + gv * yhat;
      db[j - j0] = db[j - j0] + gv;
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
};

void rope_task(void *ctx, int64_t task, int) {
  const Rope &o = *static_cast<const Rope *>(ctx);
  const int64_t half = o.dims / 2, st = o.x.inner();
  const int64_t r0 = task * o.rows_per_task, r1 = std::min(o.rows, r0 + o.rows_per_task);
  for (int64_t r = r0; r < r1; r++) {
    const int64_t t = r % o.T, b = r / o.per_batch;
    const double off = load_d(o.offsets, o.off_dtype, (o.n_offsets == 1 ? 0 : b) * o.off_stride);
    const double position = o.scale * (double(t) + off);
    const int64_t base = o.x.row(r);
    // elements past `dims` are copied
    for (int64_t j = 2 * half; j < o.D; j++) store_d(o.out, o.odt, r * o.D + j, load_d(o.x.p, o.x.dtype, base + j * st));
    for (int64_t i = 0; i < half; i++) {
      const double inv_freq = o.freqs ? 1 / load_d(o.freqs, o.freq_dtype, i * o.freq_stride) : std::pow(o.base, -double(i) / double(half));
      const double theta = position * inv_freq;
      const double c = std::cos(theta);
      const double s = o.forward ? std::sin(theta) : -std::sin(theta);
      const int64_t j1 = o.traditional ? 2 * i : i, j2 = o.traditional ? 2 * i + 1 : i + half;
      const double x1 = load_d(o.x.p, o.x.dtype, base + j1 * st), x2 = load_d(o.x.p, o.x.dtype, base + j2 * st);
      store_d(o.out, o.odt, r * o.D + j1, x1 * c - x2 * s);
      store_d(o.out, o.odt, r * o.D + j2, x1 * s + x2 * c);
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
  double *q, *kt, *k, *v, *vt, *s, *p, *dp;
  uint8_t *hidden;
};

void load_head(const Attn &a, int64_t b, int64_t h, int64_t hk, Head &hd, bool vjp) {
  for (int64_t i = 0; i < a.qL; i++)
    for (int64_t c = 0; c < a.Dk; c++) hd.q[i * a.Dk + c] = load_d(a.q.p, a.q.dtype, off4(a.q, b, h, i, c));
  for (int64_t j = 0; j < a.kL; j++)
    for (int64_t c = 0; c < a.Dk; c++) {
      const double x = load_d(a.k.p, a.k.dtype, off4(a.k, b, hk, j, c));
      hd.kt[c * a.kL + j] = x;
      if (vjp) hd.k[j * a.Dk + c] = x;
    }
  for (int64_t j = 0; j < a.kL; j++)
    for (int64_t c = 0; c < a.Dv; c++) {
      const double x = load_d(a.v.p, a.v.dtype, off4(a.v, b, hk, j, c));
      hd.v[j * a.Dv + c] = x;
      if (vjp) hd.vt[c * a.kL + j] = x;
    }
}

// Dot products of row `x` (length D) with columns [j0, j1) of `mt` ([D][ld]), each summed over c in
// order (four at a time, side by side).
void dots(const double *x, const double *mt, int64_t ld, int64_t D, int64_t j0, int64_t j1, double *out) {
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
RowResult softmax_row(const Attn &a, Head &hd, int64_t b, int64_t h, int64_t i) {
  double *s = hd.s, *p = hd.p;
  uint8_t *hidden = hd.hidden;
  const int64_t limit = i + a.kL - a.qL;
  int64_t end = a.mask == MaskCausal && limit >= 0 ? std::min(a.kL, limit + 1) : a.kL;
  dots(hd.q + i * a.Dk, hd.kt, a.kL, a.Dk, 0, end, s);
  int64_t visible = 0;
  for (int64_t j = 0; j < end; j++) {
    const bool hid = (a.mask == MaskCausal && j > limit) || (a.mask == MaskBool && load_d(a.m.p, a.m.dtype, off4(a.m, b, h, i, j)) == 0);
    hidden[j] = hid ? 1 : 0;
    if (hid) {
      s[j] = HIDDEN;
      continue;
    }
    visible++;
    s[j] = a.mask == MaskAdditive ? s[j] * a.scale + load_d(a.m.p, a.m.dtype, off4(a.m, b, h, i, j)) : s[j] * a.scale;
  }
  if (visible == 0) {
    end = a.kL;
    for (int64_t j = 0; j < end; j++) {
      hidden[j] = 1;
      s[j] = HIDDEN;
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
  for (int64_t j = 0; j < end; j++) total += p[j] = std::exp(s[j] - mx);
  for (int64_t j = 0; j < end; j++) p[j] = p[j] / total;
  const double m2 = visible == 0 && (!has_sink || sink * M_LOG2E < HIDDEN_LOG2) ? HIDDEN_LOG2 : mx * M_LOG2E;
  return {end, m2, total};
}

size_t head_doubles(const Attn &a) {
  return size_t(a.qL * a.Dk + 2 * a.kL * a.Dk + 2 * a.kL * a.Dv + 3 * a.kL + a.qL * a.Dk + a.kL * (a.Dk + a.Dv) + a.Dv + 64);
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
  hd.hidden = reinterpret_cast<uint8_t *>(hd.dp + a.kL);
  return hd;
}

void sdpa_task(void *ctx, int64_t task, int thread) {
  Attn &a = *static_cast<Attn *>(ctx);
  auto *sc = static_cast<double *>(thread_scratch(thread, a.scratch_bytes));
  if (!sc) {
    a.failed.store(true, std::memory_order_relaxed);
    return;
  }
  Head hd = carve(a, sc);
  double *acc = reinterpret_cast<double *>(hd.hidden + ((a.kL + 7) / 8) * 8);
  const int64_t b = task / a.Hq, h = task % a.Hq, hk = h / (a.Hq / a.Hkv);
  load_head(a, b, h, hk, hd, false);
  for (int64_t i = 0; i < a.qL; i++) {
    const RowResult rr = softmax_row(a, hd, b, h, i);
    std::fill(acc, acc + a.Dv, 0.0);
    for (int64_t j = 0; j < rr.end; j++) {
      const double pj = hd.p[j];
      if (pj == 0) continue;
      const double *vj = hd.v + j * a.Dv;
      for (int64_t c = 0; c < a.Dv; c++) acc[c] = acc[c] + pj * vj[c];
    }
    const int64_t r = (b * a.Hq + h) * a.qL + i;
    for (int64_t c = 0; c < a.Dv; c++) store_d(a.o, a.q.dtype, r * a.Dv + c, acc[c]);
    if (a.stats) {
      reinterpret_cast<float *>(a.stats)[2 * r] = float(rr.m2);
      reinterpret_cast<float *>(a.stats)[2 * r + 1] = float(rr.l);
    }
  }
}

// Gradients of one key/value head: its query heads (in order) accumulate dK and dV.
void sdpa_vjp_task(void *ctx, int64_t task, int thread) {
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
    for (int64_t i = 0; i < a.qL; i++) {
      const RowResult rr = softmax_row(a, hd, b, h, i);
      for (int64_t c = 0; c < a.Dv; c++) go[c] = load_d(a.g.p, a.g.dtype, off4(a.g, b, h, i, c));
      // dp[j] = Σ_c dO·v (in order); dV += p·dO; D = Σ_j p·dp
      dots(go, hd.vt, a.kL, a.Dv, 0, rr.end, hd.dp);
      double D = 0;
      for (int64_t j = 0; j < rr.end; j++) {
        const double pj = hd.p[j];
        double *dvj = dv + j * a.Dv;
        for (int64_t c = 0; c < a.Dv; c++) dvj[c] = dvj[c] + pj * go[c];
        D += pj * hd.dp[j];
      }
      const double *qi = hd.q + i * a.Dk;
      double *dqi = dq + i * a.Dk;
      for (int64_t j = 0; j < rr.end; j++) {
        if (hd.hidden[j]) continue;
        const double ds = hd.p[j] * (hd.dp[j] - D) * a.scale;
        if (ds == 0) continue;
        const double *kj = hd.k + j * a.Dk;
        double *dkj = dk + j * a.Dk;
        for (int64_t c = 0; c < a.Dk; c++) {
          dqi[c] = dqi[c] + ds * kj[c];
          dkj[c] = dkj[c] + ds * qi[c];
        }
      }
    }
    for (int64_t i = 0; i < a.qL; i++)
      for (int64_t c = 0; c < a.Dk; c++) store_d(a.dq, a.q.dtype, ((b * a.Hq + h) * a.qL + i) * a.Dk + c, dq[i * a.Dk + c]);
  }
  for (int64_t j = 0; j < a.kL; j++) {
    for (int64_t c = 0; c < a.Dk; c++) store_d(a.dk, a.k.dtype, ((b * a.Hkv + hk) * a.kL + j) * a.Dk + c, dk[j * a.Dk + c]);
    for (int64_t c = 0; c < a.Dv; c++) store_d(a.dv, a.v.dtype, ((b * a.Hkv + hk) * a.kL + j) * a.Dv + c, dv[j * a.Dv + c]);
  }
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

void xent_task(void *ctx, int64_t task, int) {
  const Xent &e = *static_cast<const Xent *>(ctx);
  const int64_t r0 = task * e.rows_per_task, r1 = std::min(e.rows, r0 + e.rows_per_task);
  const int64_t st = e.x.inner();
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
  const int threads = threads_for(double(total) * 25.0);
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
  const double work = double(a.B) * double(a.Hq) * double(a.qL) * double(a.kL) * double(a.Dk + a.Dv) * (vjp ? 2.5 : 1.2);
  const int threads = threads_for(work);
  note_threads(threads);
  if (!vjp) {
    if (a.B * a.Hq * a.qL == 0) return MGCPU_OK;
    if (!a.o || !a.q.p || (a.kL > 0 && (!a.k.p || !a.v.p))) return fail(fn, "null operand");
    parallel_for(a.B * a.Hq, threads, sdpa_task, &a);
  } else {
    if (a.B * a.Hkv == 0) return MGCPU_OK;
    if (!a.dq || !a.dk || !a.dv) return fail(fn, "null operand");
    parallel_for(a.B * a.Hkv, threads, sdpa_vjp_task, &a);
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
  const int threads = threads_for(double(e.rows) * double(std::max<int64_t>(e.n, 1)) * 20.0);
  note_threads(threads);
  parallel_for((e.rows + e.rows_per_task - 1) / e.rows_per_task, threads, xent_task, &e);
  return MGCPU_OK;
}

}  // namespace mgcpu

MG_EXPORT int32_t mg_cpu_norm(const double *desc, int32_t words) { return mgcpu::norm(desc, words); }
MG_EXPORT int32_t mg_cpu_cross_entropy(const double *desc, int32_t words) { return mgcpu::cross_entropy(desc, words); }
MG_EXPORT int32_t mg_cpu_rope(const double *desc, int32_t words) { return mgcpu::rope(desc, words); }
MG_EXPORT int32_t mg_cpu_sdpa(const double *desc, int32_t words) { return mgcpu::sdpa(desc, words); }
