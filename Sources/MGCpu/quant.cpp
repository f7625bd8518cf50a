// Quantized matrix products in MLX's packed formats (QuantizedMatmul and GatherQMM): x (…, M, K)
// times the dequantised W ((N, K) with transpose, else (K, N)), never materialising W.
//
//   M ≤ 8 (decode): each task dequantises chunks of its W rows (or columns) into L1 and runs dot
//   products (transpose) or axpys over the M rows of x;
//   M > 8 (prefill): the packed GEMM's loop nest, whose B panels are packed by dequantising W.
//
// Dequantised weights equal the reference's (ts/backend/cpu/quantized.ts) exactly; products
// accumulate in float32 (float64 for float64 x) where the reference accumulates in float64. Each
// output element's sum runs in a fixed order (dot products in VF lanes combined pairwise), so the
// thread count never changes a bit.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "MGCpu.h"
#include "mgcpu.h"
#include "quant.h"

namespace mgcpu {

namespace {

constexpr int QMV_MAX_M = QMV_ROWS;
constexpr int64_t KC = 256;  // a multiple of every group size
constexpr int64_t MC = 144;
constexpr int64_t NC = 512;  // a multiple of every group size

struct Qmm {
  QuantSpec q;
  bool transpose;
  int sdtype;
  int64_t M, N, K;
  int nb;
  int64_t bshape[MAX_DIMS];
  const char *x, *w, *s, *b;
  int64_t xbs[MAX_DIMS], wbs[MAX_DIMS], sbs[MAX_DIMS], bbs[MAX_DIMS];
  int64_t xrs, wrs, srs, brs;  // row strides (elements; W in words)
  char *out;
  // GatherQMM: batch i uses x matrix lhs[i] and W matrix rhs[i]
  bool gather;
  const uint32_t *lhs, *rhs;
  int64_t batch;
  int64_t wrows, rowlen, gpr, wpr;  // W rows, codes per row, groups per row, words per row
};

int64_t batch_off(const Qmm &m, const int64_t *strides, int64_t b) {
  int64_t off = 0;
  for (int d = m.nb - 1; d >= 0; d--) {
    off += (b % m.bshape[d]) * strides[d];
    b /= m.bshape[d];
  }
  return off;
}

struct Operands {
  const char *x;
  const uint32_t *w;
  const char *s, *b;
  char *out;
};

Operands operands(const Qmm &m, int64_t bi) {
  Operands o;
  const int64_t xi = m.gather ? int64_t(m.lhs[bi]) : bi, wi = m.gather ? int64_t(m.rhs[bi]) : bi;
  const int xsz = dtype_size(m.q.dtype), ssz = dtype_size(m.sdtype);
  o.x = m.x + (m.gather ? xi * m.xbs[0] : batch_off(m, m.xbs, xi)) * xsz;
  o.w = reinterpret_cast<const uint32_t *>(m.w) + (m.gather ? wi * m.wbs[0] : batch_off(m, m.wbs, wi));
  o.s = m.s + (m.gather ? wi * m.sbs[0] : batch_off(m, m.sbs, wi)) * ssz;
  o.b = m.b ? m.b + (m.gather ? wi * m.bbs[0] : batch_off(m, m.bbs, wi)) * ssz : nullptr;
  o.out = m.out + bi * m.M * m.N * xsz;
  return o;
}

template <class T> T load_as(const char *p, int dtype, int64_t i) {
  switch (dtype) {
    case F32: return T(reinterpret_cast<const float *>(p)[i]);
    case F64: return T(reinterpret_cast<const double *>(p)[i]);
    case F16: return T(f16_to_f32(reinterpret_cast<const uint16_t *>(p)[i]));
    case BF16: return T(bf16_to_f32(reinterpret_cast<const uint16_t *>(p)[i]));
    default: return T(reinterpret_cast<const uint8_t *>(p)[i]);
  }
}

template <class T> void store_as(char *p, int dtype, int64_t i, T v) {
  switch (dtype) {
    case F32: reinterpret_cast<float *>(p)[i] = float(v); break;
    case F64: reinterpret_cast<double *>(p)[i] = double(v); break;
    case F16: reinterpret_cast<uint16_t *>(p)[i] = f64_to_f16(double(v)); break;
    default: reinterpret_cast<uint16_t *>(p)[i] = f32_to_bf16(float(v)); break;
  }
}

// The decoded scale of a group (the floating-point modes' byte codes as values).
template <class T> T decode_scale(const Qmm &m, const char *s, int64_t i) {
  if (m.q.mode == QAffine) return load_as<T>(s, m.sdtype, i);
  const uint8_t code = reinterpret_cast<const uint8_t *>(s)[i];
  if (m.q.mode == QNvfp4) {
    const double v = double(f16_to_f32(uint16_t((code & 127) << 7))) * 256.0;
    return T(code & 128 ? -v : v);
  }
  return T(std::ldexp(1.0, int(code) - 127));
}

// Groups [g0, g0 + count) of W row r, dequantised into out (T = double: the float64 path, scalar;
// T = float: the ISA's kernel). `sc`, `bi`: scratch of `count` values.
template <class T>
void dequant(const Qmm &m, const Operands &o, int64_t r, int64_t g0, int64_t count, T *sc, T *bi, T *out) {
  for (int64_t g = 0; g < count; g++) {
    sc[g] = decode_scale<T>(m, o.s, r * m.srs + g0 + g);
    bi[g] = o.b ? load_as<T>(o.b, m.sdtype, r * m.brs + g0 + g) : T(0);
  }
  const uint32_t *words = o.w + r * m.wrs + g0 * (m.q.group * m.q.bits / 32);
  if constexpr (sizeof(T) == 4) {
    isa().qdequant_f32(m.q, words, count, sc, bi, out);
  } else {
    // float64: codes exact, w = c·s + b in double (the reference's rounding for float64)
    static const double fp4[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
    const int bits = m.q.bits;
    const uint64_t mask = (uint64_t(1) << bits) - 1;
    for (int64_t i = 0; i < count * m.q.group; i++) {
      const int64_t pos = i * bits, word = pos >> 5;
      const int shift = int(pos & 31);
      uint64_t v = words[word] >> shift;
      if (shift + bits > 32) v |= uint64_t(words[word + 1]) << (32 - shift);
      const uint32_t c = uint32_t(v & mask);
      const int64_t g = i / m.q.group;
      double value;
      if (m.q.mode == QAffine) {
        value = double(c) * sc[g] + bi[g];
      } else if (bits == 4) {
        value = fp4[c & 15] * sc[g];
      } else {
        const double e = double(f16_to_f32(uint16_t((c & 127) << 7))) * 256.0;
        value = (c & 128 ? -e : e) * sc[g];
      }
      out[i] = T(value);
    }
  }
}

// ---- small M: dot products / axpys over dequantised chunks ------------------------------------------

struct QmvJob {
  const Qmm *m;
  const float *xf;  // float32 copies of x (batch, M, K) when x is not float32; else null
  int64_t per_batch, chunk;  // tasks per batch; W rows (transpose) or columns per task
  size_t scratch_bytes;
  std::atomic<bool> failed{false};
};

void qmv_task(void *ctx, int64_t task, int thread) {
  QmvJob &j = *static_cast<QmvJob *>(ctx);
  const Qmm &m = *j.m;
  const Isa &is = isa();
  const int64_t bi = task / j.per_batch, t = task % j.per_batch;
  const Operands o = operands(m, bi);
  float *scratch = static_cast<float *>(thread_scratch(thread, j.scratch_bytes));
  if (!scratch) {
    j.failed.store(true, std::memory_order_relaxed);
    return;
  }
  const int M = int(m.M);
  const float *xrow[QMV_MAX_M];
  for (int r = 0; r < M; r++)
    xrow[r] = j.xf ? j.xf + (bi * m.M + r) * m.K : reinterpret_cast<const float *>(o.x) + r * m.xrs;
  const int64_t gs = m.q.group;
  if (m.transpose) {
    // rows [n0, n1) of W: out[r, n] = Σ_k x[r, k]·W[n, k], K in chunks of whole groups
    const int64_t chunk_groups = std::max<int64_t>(1, 512 / gs);
    float *buf = scratch, *sc = buf + chunk_groups * gs, *bb = sc + chunk_groups, *acc = bb + chunk_groups;
    const int64_t n0 = t * j.chunk, n1 = std::min(m.N, n0 + j.chunk);
    for (int64_t n = n0; n < n1; n++) {
      std::fill(acc, acc + M * 8, 0.0f);
      for (int64_t g0 = 0; g0 < m.gpr; g0 += chunk_groups) {
        const int64_t count = std::min(chunk_groups, m.gpr - g0);
        const float *xs[QMV_MAX_M];
        for (int r = 0; r < M; r++) xs[r] = xrow[r] + g0 * gs;
        if (m.q.mode == QAffine && m.q.dtype == F32) {
          for (int64_t g = 0; g < count; g++) {
            sc[g] = reinterpret_cast<const float *>(o.s)[n * m.srs + g0 + g];
            bb[g] = reinterpret_cast<const float *>(o.b)[n * m.brs + g0 + g];
          }
          const uint32_t *words = o.w + n * m.wrs + g0 * (gs * m.q.bits / 32);
          if (is.qdot_fused_f32(m.q, words, count, sc, bb, xs, M, acc)) continue;
        }
        dequant<float>(m, o, n, g0, count, sc, bb, buf);
        is.qdot_f32(xs, M, buf, count * gs, acc);
      }
      for (int r = 0; r < M; r++) {
        const float *a = acc + r * 8;
        const float v = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
        store_as<float>(o.out, m.q.dtype, r * m.N + n, v);
      }
    }
    return;
  }
  // columns [c0, c1) (whole groups): out[r, c] = Σ_k x[r, k]·W[k, c], k in order
  const int64_t c0 = t * j.chunk, c1 = std::min(m.N, c0 + j.chunk), width = c1 - c0, groups = width / gs;
  float *buf = scratch, *sc = buf + width, *bb = sc + groups, *acc = bb + groups;
  std::fill(acc, acc + M * width, 0.0f);
  float *ys[QMV_MAX_M];
  for (int r = 0; r < M; r++) ys[r] = acc + r * width;
  for (int64_t k = 0; k < m.K; k++) {
    dequant<float>(m, o, k, c0 / gs, groups, sc, bb, buf);
    float a[QMV_MAX_M];
    for (int r = 0; r < M; r++) a[r] = xrow[r][k];
    is.qaxpy_f32(ys, a, M, buf, width);
  }
  for (int r = 0; r < M; r++)
    for (int64_t c = 0; c < width; c++) store_as<float>(o.out, m.q.dtype, r * m.N + c0 + c, ys[r][c]);
}

// ---- large M: the packed GEMM with dequantising B panels ----------------------------------------------

struct GemmJob {
  const Qmm *m;
  int mr, nr;
  int64_t mt, nt, mtasks, ntasks;
  size_t scratch_bytes;
  std::atomic<bool> failed{false};
};

template <class T> size_t gemm_scratch(const GemmJob &j) {
  const int64_t nc = std::min<int64_t>(NC, (j.nt + j.nr - 1) / j.nr * j.nr);
  const int64_t mc = (std::min<int64_t>(MC, j.mt) + j.mr - 1) / j.mr * j.mr;
  const int64_t deq = std::max<int64_t>(KC, NC);  // one dequantised row piece
  return size_t(KC * nc + KC * mc + j.mr * j.nr + j.mt * j.nt + deq + 2 * (deq / 16 + 1)) * sizeof(T) + 256;
}

// B[k, n] for k in [pc, pc + kc), n in [jc, jc + nc) into packed panels (nr wide, p-major).
template <class T>
void pack_b(const Qmm &m, const Operands &o, int64_t pc, int64_t kc, int64_t jc, int64_t nc, int nr, T *dst, T *deq, T *sc, T *bi) {
  const int64_t gs = m.q.group;
  if (m.transpose) {
    // column n of B is row n of W: codes [pc, pc + kc) (KC is a multiple of the group size)
    for (int64_t j = 0; j < nc; j++) {
      const int64_t g0 = pc / gs, g1 = (pc + kc + gs - 1) / gs;
      dequant<T>(m, o, jc + j, g0, g1 - g0, sc, bi, deq);
      T *d = dst + (j / nr) * kc * nr + (j % nr);
      const T *s = deq + (pc - g0 * gs);
      for (int64_t p = 0; p < kc; p++) d[p * nr] = s[p];
    }
  } else {
    // row k of B is row k of W: codes [jc, jc + nc) (jc is a multiple of the group size)
    const int64_t g0 = jc / gs, g1 = (jc + nc + gs - 1) / gs;
    for (int64_t p = 0; p < kc; p++) {
      dequant<T>(m, o, pc + p, g0, g1 - g0, sc, bi, deq);
      const T *s = deq + (jc - g0 * gs);
      for (int64_t j = 0; j < nc; j++) dst[(j / nr) * kc * nr + p * nr + (j % nr)] = s[j];
    }
  }
  // zero the last panel's padding columns
  const int64_t padded = (nc + nr - 1) / nr * nr;
  for (int64_t j = nc; j < padded; j++) {
    T *d = dst + (j / nr) * kc * nr + (j % nr);
    for (int64_t p = 0; p < kc; p++) d[p * nr] = T(0);
  }
}

template <class T>
void pack_a(const Qmm &m, const Operands &o, int64_t m0, int64_t mc, int64_t pc, int64_t kc, int mr, T *dst) {
  for (int64_t i0 = 0; i0 < mc; i0 += mr) {
    T *d = dst + i0 * kc;
    for (int64_t i = 0; i < mr; i++) {
      if (i0 + i >= mc) {
        for (int64_t p = 0; p < kc; p++) d[p * mr + i] = T(0);
        continue;
      }
      const int64_t row = (m0 + i0 + i) * m.xrs + pc;
      if ((m.q.dtype == F32 && sizeof(T) == 4) || (m.q.dtype == F64 && sizeof(T) == 8)) {
        const T *s = reinterpret_cast<const T *>(o.x) + row;
        for (int64_t p = 0; p < kc; p++) d[p * mr + i] = s[p];
      } else {
        for (int64_t p = 0; p < kc; p++) d[p * mr + i] = load_as<T>(o.x, m.q.dtype, row + p);
      }
    }
  }
}

template <class T> void gemm_task(void *ctx, int64_t task, int thread) {
  GemmJob &j = *static_cast<GemmJob *>(ctx);
  const Qmm &m = *j.m;
  const Isa &is = isa();
  const int mr = j.mr, nr = j.nr;
  const int64_t per_batch = j.mtasks * j.ntasks;
  const int64_t bi = task / per_batch, t = task % per_batch;
  const int64_t m0 = (t / j.ntasks) * j.mt, n0 = (t % j.ntasks) * j.nt;
  const int64_t rows = std::min(j.mt, m.M - m0), cols = std::min(j.nt, m.N - n0);
  const Operands o = operands(m, bi);
  char *scratch = static_cast<char *>(thread_scratch(thread, j.scratch_bytes));
  if (!scratch) {
    j.failed.store(true, std::memory_order_relaxed);
    return;
  }
  const int64_t nc_max = std::min<int64_t>(NC, (j.nt + nr - 1) / nr * nr);
  const int64_t mc_max = (std::min<int64_t>(MC, j.mt) + mr - 1) / mr * mr;
  const int64_t deqn = std::max<int64_t>(KC, NC);
  T *bp = reinterpret_cast<T *>(scratch);
  T *ap = bp + KC * nc_max;
  T *edge = ap + KC * mc_max;
  T *acc = edge + mr * nr;
  T *deq = acc + j.mt * j.nt;
  T *sc = deq + deqn, *bb = sc + (deqn / 16 + 1);
  const int64_t ldc = cols;
  if (m.K == 0) std::fill(acc, acc + rows * cols, T(0));
  for (int64_t jc = 0; jc < cols; jc += NC) {
    const int64_t nc = std::min(NC, cols - jc);
    for (int64_t pc = 0; pc < m.K; pc += KC) {
      const int64_t kc = std::min(KC, m.K - pc);
      pack_b<T>(m, o, pc, kc, n0 + jc, nc, nr, bp, deq, sc, bb);
      for (int64_t ic = 0; ic < rows; ic += MC) {
        const int64_t mc = std::min(MC, rows - ic);
        pack_a<T>(m, o, m0 + ic, mc, pc, kc, mr, ap);
        micro_tiles<T>(is, kc, ap, bp, mc, nc, mr, nr, acc + ic * ldc + jc, ldc, pc > 0, edge);
      }
    }
  }
  for (int64_t i = 0; i < rows; i++)
    for (int64_t q = 0; q < cols; q++) store_as<T>(o.out, m.q.dtype, (m0 + i) * m.N + n0 + q, acc[i * ldc + q]);
}

template <class T> int run_gemm(Qmm &m, const char *fn) {
  const Isa &is = isa();
  GemmJob j;
  j.m = &m;
  const bool f64 = sizeof(T) == 8;
  j.mr = f64 ? is.gemm_mr_f64 : is.gemm_mr_f32;
  j.nr = f64 ? is.gemm_nr_f64 : is.gemm_nr_f32;
  const int64_t row_blocks = (m.M + MC - 1) / MC;
  j.mt = ((m.M + row_blocks - 1) / row_blocks + j.mr - 1) / j.mr * j.mr;
  j.nt = std::min<int64_t>(m.N, NC);
  const double flops = 2.0 * double(m.batch) * double(m.M) * double(m.N) * double(std::max<int64_t>(m.K, 1));
  const int threads = threads_for(flops / 40 + double(m.batch) * double(m.N) * double(m.K) * double(row_blocks));
  auto count = [&] {
    j.mtasks = (m.M + j.mt - 1) / j.mt;
    j.ntasks = (m.N + j.nt - 1) / j.nt;
    return m.batch * j.mtasks * j.ntasks;
  };
  // split columns (in whole groups and panels) while there are fewer than 3 tasks per thread
  const int64_t unit = std::max<int64_t>(m.q.group, j.nr);  // both powers of two: their lcm
  while (threads > 1 && count() < 3 * threads && j.nt >= 2 * unit) j.nt = ((j.nt / 2 + unit - 1) / unit) * unit;
  const int64_t tasks = count();
  j.scratch_bytes = gemm_scratch<T>(j);
  note_threads(threads);
  parallel_for(tasks, threads, gemm_task<T>, &j);
  if (j.failed.load()) return fail(fn, "out of memory for quantized matmul packing buffers");
  return MGCPU_OK;
}

int run_qmv(Qmm &m, const char *fn) {
  QmvJob j;
  j.m = &m;
  std::vector<float> xf;
  if (m.q.dtype != F32) {
    // widen x once (16-bit floats)
    xf.resize(size_t(m.batch * m.M * m.K));
    for (int64_t bi = 0; bi < m.batch; bi++) {
      const Operands o = operands(m, bi);
      for (int64_t r = 0; r < m.M; r++)
        for (int64_t k = 0; k < m.K; k++) xf[size_t((bi * m.M + r) * m.K + k)] = load_as<float>(o.x, m.q.dtype, r * m.xrs + k);
    }
    j.xf = xf.data();
  } else {
    j.xf = nullptr;
  }
  const int64_t gs = m.q.group;
  const double work = double(m.batch) * double(m.N) * double(m.K) * (0.3 + 0.1 * double(m.M));
  const int threads = threads_for(work);
  if (m.transpose) {
    j.chunk = std::max<int64_t>(1, std::min<int64_t>(64, m.N / std::max(1, 4 * threads)));
    j.per_batch = (m.N + j.chunk - 1) / j.chunk;
    const int64_t cg = std::max<int64_t>(1, 512 / gs);
    j.scratch_bytes = size_t(cg * gs + 2 * cg + QMV_MAX_M * 8 + 64) * sizeof(float);
  } else {
    // column chunks of whole groups
    int64_t groups = std::max<int64_t>(1, std::min<int64_t>(2048 / gs, (m.N / gs) / std::max(1, 4 * threads)));
    j.chunk = groups * gs;
    j.per_batch = (m.N + j.chunk - 1) / j.chunk;
    j.scratch_bytes = size_t(j.chunk + 2 * groups + QMV_MAX_M * j.chunk + 64) * sizeof(float);
  }
  note_threads(threads);
  parallel_for(m.batch * j.per_batch, threads, qmv_task, &j);
  if (j.failed.load()) return fail(fn, "out of memory for quantized matmul scratch");
  return MGCPU_OK;
}

}  // namespace

// [mode, group size, bits, transpose, dtype (x and output), scales dtype, M, N, K, batch ndim,
//  batch shape…, x, x batch strides…, x row stride, w, w batch strides…, w row stride (words),
//  scales, scales batch strides…, scales row stride, biases (0: none), biases batch strides…,
//  biases row stride, output (row-major), gather (0/1), lhs, rhs, x matrices, W matrices]
// GatherQMM: batch ndim 1, batch shape [pairs]; the batch strides are per matrix, indexed by
// lhs[i] (x) and rhs[i] (W, scales, biases).
int quantized_matmul(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_quantized_matmul";
  Reader r(desc, words, fn);
  Qmm m;
  m.q.mode = int(r.integer(0, 3, "mode"));
  m.q.group = int(r.integer(1, 1024, "group size"));
  m.q.bits = int(r.integer(1, 8, "bits"));
  m.transpose = r.integer(0, 1, "transpose") == 1;
  m.q.dtype = r.dtype("dtype");
  m.sdtype = r.dtype("scales dtype");
  const int64_t big = int64_t(1) << 40, bigs = int64_t(1) << 52;
  m.M = r.integer(0, big, "M");
  m.N = r.integer(0, big, "N");
  m.K = r.integer(0, big, "K");
  m.nb = int(r.integer(0, MAX_DIMS, "batch ndim"));
  for (int d = 0; d < m.nb; d++) m.bshape[d] = r.integer(0, big, "batch dimension");
  auto operand = [&](const char **p, int64_t *bs, int64_t *rs, const char *what) {
    *p = r.pointer(what);
    for (int d = 0; d < m.nb; d++) bs[d] = r.integer(-bigs, bigs, "batch stride");
    *rs = r.integer(-bigs, bigs, "row stride");
  };
  operand(&m.x, m.xbs, &m.xrs, "x");
  operand(&m.w, m.wbs, &m.wrs, "w");
  operand(&m.s, m.sbs, &m.srs, "scales");
  operand(&m.b, m.bbs, &m.brs, "biases");
  m.out = r.pointer("output");
  m.gather = r.integer(0, 1, "gather") == 1;
  const char *lhs = r.pointer("lhs");
  const char *rhs = r.pointer("rhs");
  const int64_t xcount = r.integer(0, big, "x matrices");
  const int64_t wcount = r.integer(0, big, "W matrices");
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  const QuantSpec &q = m.q;
  const bool fp = q.mode != QAffine;
  const bool known = q.mode == QAffine ? ((q.group == 32 || q.group == 64 || q.group == 128) && q.bits >= 2 && q.bits <= 8 && q.bits != 7)
                                       : (q.mode == QNvfp4 ? q.group == 16 && q.bits == 4 : q.group == 32 && q.bits == (q.mode == QMxfp8 ? 8 : 4));
  if (!known) return fail(fn, "unsupported group size or bits for the mode");
  if (!is_float(q.dtype)) return unsupported(fn, std::string("quantized products of ") + dtype_name(q.dtype));
  if (fp ? m.sdtype != U8 : m.sdtype != q.dtype) return fail(fn, "scales dtype does not match the mode");
  if (fp && m.b) return fail(fn, "biases are given for a floating-point mode");
  if (m.gather && m.nb != 1) return fail(fn, "gather takes one batch axis (the index pairs)");
  m.lhs = reinterpret_cast<const uint32_t *>(lhs);
  m.rhs = reinterpret_cast<const uint32_t *>(rhs);
  m.batch = 1;
  for (int d = 0; d < m.nb; d++) m.batch *= m.bshape[d];
  m.wrows = m.transpose ? m.N : m.K;
  m.rowlen = m.transpose ? m.K : m.N;
  if (m.rowlen % q.group != 0) return fail(fn, "rows are not whole groups");
  m.gpr = m.rowlen / q.group;
  m.wpr = m.rowlen * q.bits / 32;
  if (m.batch == 0 || m.M == 0 || m.N == 0) return MGCPU_OK;
  if (!m.out || (m.K > 0 && (!m.x || !m.w || !m.s || (!fp && !m.b))) || (m.gather && (!lhs || !rhs))) return fail(fn, "null operand");
  if (m.gather) {
    for (int64_t i = 0; i < m.batch; i++)
      if (int64_t(m.lhs[i]) >= xcount || int64_t(m.rhs[i]) >= wcount) return unsupported(fn, "an index pair out of range");
  }
  if (q.mode == QMxfp4 || q.mode == QMxfp8) {
    // a scale byte of 255 is 2^128, beyond float32: the reference's float64 products then differ
    for (int64_t bi = 0; bi < m.batch && q.dtype != F64; bi++) {
      const Operands o = operands(m, bi);
      for (int64_t row = 0; row < m.wrows; row++)
        for (int64_t g = 0; g < m.gpr; g++)
          if (reinterpret_cast<const uint8_t *>(o.s)[row * m.srs + g] == 255) return unsupported(fn, "a scale of 2^128");
    }
  }
  if (q.dtype == F64) return run_gemm<double>(m, fn);
  if (m.M <= QMV_MAX_M) return run_qmv(m, fn);
  return run_gemm<float>(m, fn);
}

// ---- quantize / dequantize ---------------------------------------------------------------------------------

namespace {

// A double rounded to a float dtype's grid as the reference's roundToDtype (bfloat16: through float32).
double round_to(int dtype, double x) {
  switch (dtype) {
    case F32: return double(float(x));
    case F16: return double(f16_to_f32(f64_to_f16(x)));
    case BF16: return double(bf16_to_f32(f32_to_bf16(float(x))));
    default: return x;
  }
}

struct QdqJob {
  QuantSpec q;
  int64_t rows, rowlen, rows_per_task;
  const char *w;                 // quantize: the values; dequantize: the packed words
  const char *scales, *biases;   // dequantize's inputs
  char *wq, *sout, *bout;        // quantize's outputs
  char *out;                     // dequantize's output
  int out_dtype;
  bool has_global;
  double global;
};

// Affine quantization of whole rows as the reference (ts/backend/cpu/quantize.ts, MLX's CPU
// kernel): float32 arithmetic (each op in double, then rounded to float32, as the reference),
// round half to even, codes as a little-endian bit stream; scale and bias rounded to the input's
// dtype when stored.
void quantize_task(void *ctx, int64_t task, int) {
  const QdqJob &j = *static_cast<const QdqJob *>(ctx);
  const int64_t gs = j.q.group, bits = j.q.bits, gpr = j.rowlen / gs, wpr = j.rowlen * bits / 32;
  const double n_bins = double((1 << bits) - 1);
  const double eps = double(float(1e-7));
  auto fr = [](double v) { return double(float(v)); };
  const int64_t r0 = task * j.rows_per_task, r1 = std::min(j.rows, r0 + j.rows_per_task);
  for (int64_t row = r0; row < r1; row++) {
    uint32_t *rw = reinterpret_cast<uint32_t *>(j.wq) + row * wpr;
    std::fill(rw, rw + wpr, 0u);
    for (int64_t g = 0; g < gpr; g++) {
      const int64_t base = row * j.rowlen + g * gs;
      double w_min = INFINITY, w_max = -INFINITY;
      for (int64_t i = 0; i < gs; i++) {
        const double v = load_as<double>(j.w, j.q.dtype, base + i);
        if (w_max < v) w_max = v;  // std::max/min keep the first argument against a NaN
        if (v < w_min) w_min = v;
      }
      const bool mask = std::fabs(w_min) > std::fabs(w_max);
      const double range = fr(fr(w_max - w_min) / n_bins);
      double scale = range < eps ? eps : range;
      scale = mask ? scale : -scale;
      const double edge = mask ? w_min : w_max;
      const double q0 = std::nearbyint(fr(edge / scale));
      double bias = 0;
      if (q0 != 0) {
        scale = fr(edge / q0);
        bias = edge;
      }
      int64_t bit = g * gs * bits;
      for (int64_t i = 0; i < gs; i++, bit += bits) {
        double q = std::nearbyint(fr(fr(load_as<double>(j.w, j.q.dtype, base + i) - bias) / scale));
        q = std::min(std::max(q, 0.0), n_bins);
        if (q != q) q = 0;
        const uint32_t c = uint32_t(q);
        const int64_t word = bit >> 5;
        const int shift = int(bit & 31);
        rw[word] |= c << shift;
        if (shift + bits > 32) rw[word + 1] |= c >> (32 - shift);
      }
      // a NaN is stored as JavaScript stores it: the positive quiet NaN (x86 arithmetic makes it negative)
      const double qnan = std::numeric_limits<double>::quiet_NaN();
      store_as<double>(j.sout, j.q.dtype, row * gpr + g, scale != scale ? qnan : round_to(j.q.dtype, scale));
      store_as<double>(j.bout, j.q.dtype, row * gpr + g, bias != bias ? qnan : round_to(j.q.dtype, bias));
    }
  }
}

// Dequantisation of whole rows: affine as qdequant (in the scales' dtype), the floating-point
// modes as the reference's fpDequantize (values and scales rounded to the output dtype, float32
// with a global scale).
void dequantize_task(void *ctx, int64_t task, int thread) {
  const QdqJob &j = *static_cast<const QdqJob *>(ctx);
  const QuantSpec &q = j.q;
  const int64_t gs = q.group, gpr = j.rowlen / gs, wpr = j.rowlen * q.bits / 32;
  const int64_t r0 = task * j.rows_per_task, r1 = std::min(j.rows, r0 + j.rows_per_task);
  const uint32_t *words = reinterpret_cast<const uint32_t *>(j.w);
  const int od = j.out_dtype;
  if (q.mode == QAffine && od != F64) {
    float *buf = static_cast<float *>(thread_scratch(thread, size_t(j.rowlen + 2 * gpr) * sizeof(float)));
    if (!buf) return;
    float *sc = buf + j.rowlen, *bi = sc + gpr;
    for (int64_t row = r0; row < r1; row++) {
      for (int64_t g = 0; g < gpr; g++) {
        sc[g] = load_as<float>(j.scales, od, row * gpr + g);
        bi[g] = load_as<float>(j.biases, od, row * gpr + g);
      }
      isa().qdequant_f32(q, words + row * wpr, gpr, sc, bi, buf);
      for (int64_t i = 0; i < j.rowlen; i++) {
        const float v = buf[i];
        store_as<float>(j.out, od, row * j.rowlen + i, v != v ? std::numeric_limits<float>::quiet_NaN() : v);  // JS's NaN
      }
    }
    return;
  }
  static const double fp4[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  auto e4m3_value = [](uint32_t c) {
    const double v = double(f16_to_f32(uint16_t((c & 127) << 7))) * 256.0;
    return c & 128 ? -v : v;
  };
  const int64_t bits = q.bits;
  const uint64_t mask = (uint64_t(1) << bits) - 1;
  for (int64_t row = r0; row < r1; row++) {
    const uint32_t *rw = words + row * wpr;
    for (int64_t g = 0; g < gpr; g++) {
      double scale = 0, bias = 0;
      int round_dtype = od;  // the dtype each value is rounded to at the end
      if (q.mode == QAffine) {
        scale = load_as<double>(j.scales, od, row * gpr + g);
        bias = load_as<double>(j.biases, od, row * gpr + g);
      } else {
        const uint32_t sb = reinterpret_cast<const uint8_t *>(j.scales)[row * gpr + g];
        if (q.mode == QNvfp4) {
          scale = round_to(od, e4m3_value(sb));
          if (j.has_global) {
            scale = double(float(scale * double(float(j.global / round_to(od, 448.0 * 6)))));
            round_dtype = F32;
          }
        } else {
          scale = round_to(od, std::ldexp(1.0, int(round_to(od, double(sb) - 127))));
        }
      }
      for (int64_t i = 0; i < gs; i++) {
        const int64_t k = g * gs + i, pos = k * bits, word = pos >> 5;
        const int shift = int(pos & 31);
        uint64_t v = rw[word] >> shift;
        if (shift + bits > 32) v |= uint64_t(rw[word + 1]) << (32 - shift);
        const uint32_t c = uint32_t(v & mask);
        double value;
        if (q.mode == QAffine) value = round_to(od, round_to(od, double(c) * scale) + bias);
        else value = round_to(round_dtype, round_to(od, bits == 4 ? fp4[c & 15] : e4m3_value(c)) * scale);
        store_as<double>(j.out, od, row * j.rowlen + k, value != value ? std::numeric_limits<double>::quiet_NaN() : value);
      }
    }
  }
}

bool known_format(const QuantSpec &q) {
  if (q.mode == QAffine) return (q.group == 32 || q.group == 64 || q.group == 128) && q.bits >= 2 && q.bits <= 8 && q.bits != 7;
  if (q.mode == QNvfp4) return q.group == 16 && q.bits == 4;
  return q.group == 32 && q.bits == (q.mode == QMxfp8 ? 8 : 4);
}

}  // namespace

// [mode, group size, bits, dtype, rows, row length, w, wq, scales, biases] (affine only; every
// operand row-major)
int quantize(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_quantize";
  Reader r(desc, words, fn);
  QdqJob j{};
  j.q.mode = int(r.integer(0, 3, "mode"));
  j.q.group = int(r.integer(1, 1024, "group size"));
  j.q.bits = int(r.integer(1, 8, "bits"));
  j.q.dtype = r.dtype("dtype");
  j.rows = r.integer(0, int64_t(1) << 40, "rows");
  j.rowlen = r.integer(0, int64_t(1) << 40, "row length");
  j.w = r.pointer("w");
  j.wq = r.pointer("wq");
  j.sout = r.pointer("scales");
  j.bout = r.pointer("biases");
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  if (!known_format(j.q) || j.rowlen % j.q.group != 0) return fail(fn, "unsupported group size or bits for the mode");
  if (j.q.mode != QAffine) return unsupported(fn, "floating-point quantization modes run the reference");
  if (!(j.q.dtype == F32 || j.q.dtype == F16 || j.q.dtype == BF16)) return unsupported(fn, std::string("quantize ") + dtype_name(j.q.dtype));
  if (j.rows == 0 || j.rowlen == 0) return MGCPU_OK;
  if (!j.w || !j.wq || !j.sout || !j.bout) return fail(fn, "null operand");
  j.rows_per_task = std::max<int64_t>(1, 65536 / j.rowlen);
  const int64_t tasks = (j.rows + j.rows_per_task - 1) / j.rows_per_task;
  const int threads = threads_for(6.0 * double(j.rows) * double(j.rowlen));
  note_threads(threads);
  parallel_for(tasks, threads, quantize_task, &j);
  return MGCPU_OK;
}

// [mode, group size, bits, output dtype, rows, row length, wq, scales, biases (0: none),
//  global scale (float32 pointer, 0: none), output]
int dequantize(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_dequantize";
  Reader r(desc, words, fn);
  QdqJob j{};
  j.q.mode = int(r.integer(0, 3, "mode"));
  j.q.group = int(r.integer(1, 1024, "group size"));
  j.q.bits = int(r.integer(1, 8, "bits"));
  j.out_dtype = r.dtype("output dtype");
  j.q.dtype = j.out_dtype;
  j.rows = r.integer(0, int64_t(1) << 40, "rows");
  j.rowlen = r.integer(0, int64_t(1) << 40, "row length");
  j.w = r.pointer("wq");
  j.scales = r.pointer("scales");
  j.biases = r.pointer("biases");
  const char *global = r.pointer("global scale");
  j.out = r.pointer("output");
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  if (!known_format(j.q) || j.rowlen % j.q.group != 0) return fail(fn, "unsupported group size or bits for the mode");
  if (!is_float(j.out_dtype)) return unsupported(fn, std::string("dequantize to ") + dtype_name(j.out_dtype));
  if (j.rows == 0 || j.rowlen == 0) return MGCPU_OK;
  if (!j.w || !j.scales || !j.out || (j.q.mode == QAffine && !j.biases)) return fail(fn, "null operand");
  j.has_global = global != nullptr;
  if (j.has_global) j.global = double(*reinterpret_cast<const float *>(global));
  j.rows_per_task = std::max<int64_t>(1, 65536 / j.rowlen);
  const int64_t tasks = (j.rows + j.rows_per_task - 1) / j.rows_per_task;
  const int threads = threads_for(2.0 * double(j.rows) * double(j.rowlen));
  note_threads(threads);
  parallel_for(tasks, threads, dequantize_task, &j);
  return MGCPU_OK;
}

}  // namespace mgcpu

MG_EXPORT int32_t mg_cpu_quantized_matmul(const double *desc, int32_t words) { return mgcpu::quantized_matmul(desc, words); }
MG_EXPORT int32_t mg_cpu_quantize(const double *desc, int32_t words) { return mgcpu::quantize(desc, words); }
MG_EXPORT int32_t mg_cpu_dequantize(const double *desc, int32_t words) { return mgcpu::dequantize(desc, words); }
