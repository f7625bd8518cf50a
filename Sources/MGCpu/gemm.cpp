// Matrix products: metalgrad's own packed GEMM (BLIS's loop structure: NC×KC panels of B and MC×KC
// blocks of A packed into micro-panels, a register-tiled MR×NR micro-kernel per ISA), or the
// platform BLAS when selected (Accelerate on macOS; elsewhere an OpenBLAS dlopen'ed from MG_BLAS).
//
// Operands are strided views (transposes and broadcast batches are read in place by the packing);
// 16-bit floats are widened while packing and accumulated in float32. Each C element sums its K
// products in order over KC blocks, so splitting M and N over threads never changes a bit.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(__APPLE__)
extern "C" {
// Accelerate's CBLAS (enums are ints: CblasRowMajor 101, CblasNoTrans 111, CblasTrans 112).
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc);
void cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
                 const double *b, int ldb, double beta, double *c, int ldc);
}
#else
#include <dlfcn.h>
#endif

#include "MGCpu.h"
#include "mgcpu.h"

namespace mgcpu {

void note_threads(int n);

namespace {

using sgemm_fn = void (*)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
using dgemm_fn = void (*)(int, int, int, int, int, int, double, const double *, int, const double *, int, double, double *, int);

struct Blas {
  sgemm_fn s = nullptr;
  dgemm_fn d = nullptr;
  std::string name = "none";
};

const Blas &blas() {
  static const Blas b = [] {
    Blas r;
#if defined(__APPLE__)
    r.s = cblas_sgemm;
    r.d = cblas_dgemm;
    r.name = "Accelerate";
#else
    if (const char *path = std::getenv("MG_BLAS")) {
      if (void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
        r.s = reinterpret_cast<sgemm_fn>(dlsym(h, "cblas_sgemm"));
        r.d = reinterpret_cast<dgemm_fn>(dlsym(h, "cblas_dgemm"));
        if (r.s && r.d) r.name = path;
        else r.s = nullptr, r.d = nullptr;
      }
    }
#endif
    return r;
  }();
  return b;
}

// Accelerate is the default on macOS (as MLX); elsewhere metalgrad's GEMM unless MG_BLAS is set.
std::atomic<int> provider{-1};
std::atomic<int> last{0};

int provider_now() {
  int p = provider.load(std::memory_order_relaxed);
  if (p < 0) {
    p = blas().s ? 1 : 0;
    provider.store(p, std::memory_order_relaxed);
  }
  return p;
}

constexpr int64_t KC = 256;
constexpr int64_t MC = 144;
constexpr int64_t NC = 1024;

struct Gemm {
  const Isa *isa;
  int dtype;
  int64_t M, N, K;
  int nb;
  int64_t bshape[MAX_DIMS];
  char *A, *B, *C, *C0;
  int64_t abs[MAX_DIMS], bbs[MAX_DIMS], cbs[MAX_DIMS];
  int64_t ars, acs, brs, bcs, crs, ccs;
  double alpha, beta;
  int64_t mt, nt, mtasks, ntasks, batch;
  // B packed once for every row task (null: each task packs its own panels): per batch item,
  // KC-row blocks of npad columns in nr-wide micro-panels, column j of block pc at pc·npad + j·kc.
  char *bpacked = nullptr;
  int64_t npad = 0;
};

template <class T> T load_elem(const char *p, int dtype, int64_t i) {
  switch (dtype) {
    case F32: return T(reinterpret_cast<const float *>(p)[i]);
    case F64: return T(reinterpret_cast<const double *>(p)[i]);
    case F16: return T(f16_to_f32(reinterpret_cast<const uint16_t *>(p)[i]));
    default: return T(bf16_to_f32(reinterpret_cast<const uint16_t *>(p)[i]));
  }
}

template <class T>
void pack_a(T *dst, const char *a, int dtype, int64_t rs, int64_t cs, int64_t mc, int64_t kc, int mr) {
  const bool same = (dtype == F32 && sizeof(T) == 4) || (dtype == F64 && sizeof(T) == 8);
  for (int64_t i0 = 0; i0 < mc; i0 += mr) {
    T *d = dst + i0 * kc;
    const int64_t rows = std::min<int64_t>(mr, mc - i0);
    if (same && rs == 1 && cs != 1 && rows == mr) {
      // A transposed in memory (column-major): each k's mr values are adjacent; copy them
      // together instead of walking each row across columns of stride cs
      const T *src = reinterpret_cast<const T *>(a) + i0;
      for (int64_t p = 0; p < kc; p++)
        for (int64_t q = 0; q < mr; q++) d[p * mr + q] = src[p * cs + q];
      continue;
    }
    for (int64_t i = 0; i < mr; i++) {
      if (i >= rows) {
        for (int64_t p = 0; p < kc; p++) d[p * mr + i] = T(0);
        continue;
      }
      const int64_t row = (i0 + i) * rs;
      if (same) {
        const T *src = reinterpret_cast<const T *>(a) + row;
        for (int64_t p = 0; p < kc; p++) d[p * mr + i] = src[p * cs];
      } else {
        for (int64_t p = 0; p < kc; p++) d[p * mr + i] = load_elem<T>(a, dtype, row + p * cs);
      }
    }
  }
}

template <class T>
void pack_b(T *dst, const char *b, int dtype, int64_t rs, int64_t cs, int64_t kc, int64_t nc, int nr) {
  for (int64_t j0 = 0; j0 < nc; j0 += nr) {
    T *d = dst + j0 * kc;
    const int64_t cols = std::min<int64_t>(nr, nc - j0);
    const bool same = (dtype == F32 && sizeof(T) == 4) || (dtype == F64 && sizeof(T) == 8);
    if (same && rs == 1 && cs != 1) {
      // B transposed in memory: walk each column down k (contiguous), not each k across columns
      for (int64_t j = 0; j < cols; j++) {
        const T *src = reinterpret_cast<const T *>(b) + (j0 + j) * cs;
        for (int64_t p = 0; p < kc; p++) d[p * nr + j] = src[p];
      }
      for (int64_t p = 0; p < kc; p++)
        for (int64_t j = cols; j < nr; j++) d[p * nr + j] = T(0);
      continue;
    }
    for (int64_t p = 0; p < kc; p++) {
      T *dp = d + p * nr;
      const int64_t base = p * rs + j0 * cs;
      if (same && cs == 1) {
        const T *src = reinterpret_cast<const T *>(b) + base;
        for (int64_t j = 0; j < cols; j++) dp[j] = src[j];
      } else if (same) {
        const T *src = reinterpret_cast<const T *>(b) + base;
        for (int64_t j = 0; j < cols; j++) dp[j] = src[j * cs];
      } else {
        for (int64_t j = 0; j < cols; j++) dp[j] = load_elem<T>(b, dtype, base + j * cs);
      }
      for (int64_t j = cols; j < nr; j++) dp[j] = T(0);
    }
  }
}

template <class T> struct Micro;
template <> struct Micro<float> {
  static int mr(const Isa &is) { return is.gemm_mr_f32; }
  static int nr(const Isa &is) { return is.gemm_nr_f32; }
};
template <> struct Micro<double> {
  static int mr(const Isa &is) { return is.gemm_mr_f64; }
  static int nr(const Isa &is) { return is.gemm_nr_f64; }
};

int64_t batch_offset(int nb, const int64_t *shape, const int64_t *strides, int64_t b) {
  int64_t off = 0;
  for (int d = nb - 1; d >= 0; d--) {
    off += (b % shape[d]) * strides[d];
    b /= shape[d];
  }
  return off;
}

// C[m×n] (ldc) = A[m×K] · B[K×n]: the BLIS loops over one task's block.
template <class T>
void gemm_block(const Gemm &g, const char *a, const char *b, T *c, int64_t ldc, int64_t m, int64_t n, char *scratch,
                const T *bpre, int64_t n0) {
  const Isa &is = *g.isa;
  const int mr = Micro<T>::mr(is), nr = Micro<T>::nr(is);
  const int esize = dtype_size(g.dtype);
  const int64_t nc_max = std::min<int64_t>(NC, (n + nr - 1) / nr * nr);
  T *bp = reinterpret_cast<T *>(scratch);
  T *ap = bp + KC * nc_max;
  T *edge = ap + KC * ((MC + mr - 1) / mr * mr);
  if (g.K == 0) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) c[i * ldc + j] = T(0);
    return;
  }
  for (int64_t jc = 0; jc < n; jc += NC) {
    const int64_t nc = std::min(NC, n - jc);
    for (int64_t pc = 0; pc < g.K; pc += KC) {
      const int64_t kc = std::min(KC, g.K - pc);
      const T *bpanels = bp;
      if (bpre) bpanels = bpre + pc * g.npad + (n0 + jc) * kc;
      else pack_b(bp, b + (pc * g.brs + jc * g.bcs) * esize, g.dtype, g.brs, g.bcs, kc, nc, nr);
      for (int64_t ic = 0; ic < m; ic += MC) {
        const int64_t mc = std::min(MC, m - ic);
        pack_a(ap, a + (ic * g.ars + pc * g.acs) * esize, g.dtype, g.ars, g.acs, mc, kc, mr);
        micro_tiles<T>(is, kc, ap, bpanels, mc, nc, mr, nr, c + ic * ldc + jc, ldc, pc > 0, edge);
      }
    }
  }
}

size_t block_scratch_bytes(const Gemm &g, int64_t n, size_t elem) {
  const Isa &is = *g.isa;
  const int mr = elem == 4 ? is.gemm_mr_f32 : is.gemm_mr_f64;
  const int nr = elem == 4 ? is.gemm_nr_f32 : is.gemm_nr_f64;
  const int64_t nc_max = std::min<int64_t>(NC, (n + nr - 1) / nr * nr);
  return size_t(KC * nc_max + KC * ((MC + mr - 1) / mr * mr) + mr * nr) * elem + 256;
}

// out = alpha·acc + beta·C0, in double, stored with the output dtype's rounding
template <class T>
void epilogue(const Gemm &g, const T *acc, int64_t ldacc, char *out, int64_t b, int64_t m0, int64_t n0, int64_t m, int64_t n) {
  const int esize = dtype_size(g.dtype);
  const int64_t c0b = g.C0 ? batch_offset(g.nb, g.bshape, g.cbs, b) : 0;
  if (g.dtype == F32 && (g.beta == 0.0 || g.C0)) {
    // float32 (a Linear layer's bias add): the same double arithmetic without a dtype switch or a
    // branch per element, vectorisable
    const double alpha = g.alpha, beta = g.beta;
    for (int64_t i = 0; i < m; i++) {
      float *__restrict orow = reinterpret_cast<float *>(out) + (b * g.M + m0 + i) * g.N + n0;
      const T *__restrict arow = acc + i * ldacc;
      if (beta == 0.0) {
        if (alpha == 1.0)
          for (int64_t j = 0; j < n; j++) orow[j] = float(double(arow[j]));
        else
          for (int64_t j = 0; j < n; j++) orow[j] = float(alpha * double(arow[j]));
        continue;
      }
      const float *c0 = reinterpret_cast<const float *>(g.C0) + c0b + (m0 + i) * g.crs + n0 * g.ccs;
      const int64_t cs = g.ccs;
      if (alpha == 1.0)
        for (int64_t j = 0; j < n; j++) orow[j] = float(double(arow[j]) + beta * double(c0[j * cs]));
      else
        for (int64_t j = 0; j < n; j++) orow[j] = float(alpha * double(arow[j]) + beta * double(c0[j * cs]));
    }
    return;
  }
  for (int64_t i = 0; i < m; i++) {
    char *orow = out + ((b * g.M + m0 + i) * g.N + n0) * esize;
    for (int64_t j = 0; j < n; j++) {
      double v = double(acc[i * ldacc + j]);
      if (g.alpha != 1.0) v = g.alpha * v;
      if (g.beta != 0.0) v += g.beta * load_elem<double>(g.C0, g.dtype, c0b + (m0 + i) * g.crs + (n0 + j) * g.ccs);
      switch (g.dtype) {
        case F32: reinterpret_cast<float *>(orow)[j] = float(v); break;
        case F64: reinterpret_cast<double *>(orow)[j] = v; break;
        case F16: reinterpret_cast<uint16_t *>(orow)[j] = f64_to_f16(v); break;
        default: reinterpret_cast<uint16_t *>(orow)[j] = f32_to_bf16(float(v)); break;
      }
    }
  }
}

template <class T> void gemm_task(void *ctx, int64_t task, int thread) {
  const Gemm &g = *static_cast<const Gemm *>(ctx);
  const int64_t per_batch = g.mtasks * g.ntasks;
  const int64_t b = task / per_batch, t = task % per_batch;
  const int64_t m0 = (t / g.ntasks) * g.mt, n0 = (t % g.ntasks) * g.nt;
  const int64_t m = std::min(g.mt, g.M - m0), n = std::min(g.nt, g.N - n0);
  const int esize = dtype_size(g.dtype);
  const char *a = g.A + (batch_offset(g.nb, g.bshape, g.abs, b) + m0 * g.ars) * esize;
  const char *bb = g.B + (batch_offset(g.nb, g.bshape, g.bbs, b) + n0 * g.bcs) * esize;
  const bool direct = (g.dtype == (sizeof(T) == 4 ? F32 : F64)) && g.alpha == 1.0 && g.beta == 0.0;
  const T *bpre = g.bpacked ? reinterpret_cast<const T *>(g.bpacked) + b * g.K * g.npad : nullptr;
  const size_t block = block_scratch_bytes(g, n, sizeof(T));
  char *scratch = static_cast<char *>(thread_scratch(thread, block + (direct ? 0 : size_t(m * n) * sizeof(T))));
  if (!scratch) return;
  if (direct) {
    T *c = reinterpret_cast<T *>(g.C) + (b * g.M + m0) * g.N + n0;
    gemm_block<T>(g, a, bb, c, g.N, m, n, scratch, bpre, n0);
  } else {
    T *acc = reinterpret_cast<T *>(scratch + block);
    gemm_block<T>(g, a, bb, acc, n, m, n, scratch, bpre, n0);
    epilogue<T>(g, acc, n, g.C, b, m0, n0, m, n);
  }
}

// Packs B's block (batch item, KC-row block) of every column into g.bpacked.
template <class T> void pack_b_task(void *ctx, int64_t task, int) {
  const Gemm &g = *static_cast<const Gemm *>(ctx);
  const int64_t kblocks = (g.K + KC - 1) / KC;
  const int64_t b = task / kblocks, pc = (task % kblocks) * KC, kc = std::min(KC, g.K - pc);
  const int esize = dtype_size(g.dtype);
  T *dst = reinterpret_cast<T *>(g.bpacked) + b * g.K * g.npad + pc * g.npad;
  const char *src = g.B + (batch_offset(g.nb, g.bshape, g.bbs, b) + pc * g.brs) * esize;
  pack_b(dst, src, g.dtype, g.brs, g.bcs, kc, g.N, Micro<T>::nr(*g.isa));
}

// The caller's buffer for B packed once (helpers read it while the caller waits in parallel_for).
char *shared_pack_buffer(size_t bytes) {
  struct Buffer {
    void *ptr = nullptr;
    size_t bytes = 0;
    ~Buffer() { std::free(ptr); }
  };
  static thread_local Buffer buf;
  if (buf.bytes < bytes) {
    std::free(buf.ptr);
    const size_t rounded = (bytes + 63) & ~size_t(63);
    buf.ptr = std::aligned_alloc(64, rounded);
    buf.bytes = buf.ptr ? rounded : 0;
  }
  return static_cast<char *>(buf.ptr);
}

// Unit-stride operands go to CBLAS as they are (row-major, transposed or not); else null.
bool blas_layout(int64_t rs, int64_t cs, int64_t rows, int64_t cols, int *trans, int *ld) {
  if (cs == 1 && rs >= std::max<int64_t>(1, cols)) { *trans = 111; *ld = int(rs); return true; }
  if (rs == 1 && cs >= std::max<int64_t>(1, rows)) { *trans = 112; *ld = int(cs); return true; }
  if (rows == 1 && cs == 1) { *trans = 111; *ld = int(std::max<int64_t>(1, cols)); return true; }
  if (cols == 1 && rs == 1) { *trans = 112; *ld = int(std::max<int64_t>(1, rows)); return true; }
  return false;
}

bool try_blas(const Gemm &g) {
  const Blas &bl = blas();
  if (!((g.dtype == F32 && bl.s) || (g.dtype == F64 && bl.d))) return false;
  if (g.M > 0x7fffffff || g.N > 0x7fffffff || g.K > 0x7fffffff || g.K == 0) return false;
  int ta, tb, lda, ldb;
  if (!blas_layout(g.ars, g.acs, g.M, g.K, &ta, &lda) || !blas_layout(g.brs, g.bcs, g.K, g.N, &tb, &ldb)) return false;
  if (std::max({g.ars, g.acs, g.brs, g.bcs}) > 0x7fffffff) return false;
  const bool direct = g.alpha == 1.0 && g.beta == 0.0;
  std::vector<char> tmp;
  for (int64_t b = 0; b < g.batch; b++) {
    const int esize = dtype_size(g.dtype);
    const char *a = g.A + batch_offset(g.nb, g.bshape, g.abs, b) * esize;
    const char *bb = g.B + batch_offset(g.nb, g.bshape, g.bbs, b) * esize;
    char *c = g.C + b * g.M * g.N * esize;
    if (!direct) {
      tmp.resize(size_t(g.M * g.N) * esize);
      c = tmp.data();
    }
    if (g.dtype == F32)
      bl.s(101, ta, tb, int(g.M), int(g.N), int(g.K), 1.0f, reinterpret_cast<const float *>(a), lda,
           reinterpret_cast<const float *>(bb), ldb, 0.0f, reinterpret_cast<float *>(c), int(g.N));
    else
      bl.d(101, ta, tb, int(g.M), int(g.N), int(g.K), 1.0, reinterpret_cast<const double *>(a), lda,
           reinterpret_cast<const double *>(bb), ldb, 0.0, reinterpret_cast<double *>(c), int(g.N));
    if (!direct) {
      if (g.dtype == F32) epilogue<float>(g, reinterpret_cast<float *>(c), g.N, g.C, b, 0, 0, g.M, g.N);
      else epilogue<double>(g, reinterpret_cast<double *>(c), g.N, g.C, b, 0, 0, g.M, g.N);
    }
  }
  return true;
}

// C[m×n] (ldc) (+)= A[m×k] · B[k×n] in float32 on the calling thread, for kernels that multiply
// blocks of their own (attention): the same packing and micro-kernel as matmul, operands strided
// views of any float dtype (16-bit widened while packing).
template <class T>
void local_block(const Isa &is, int64_t m, int64_t n, int64_t k, const char *a, int adt, int64_t ars, int64_t acs, const char *b,
                 int bdt, int64_t brs, int64_t bcs, T *c, int64_t ldc, bool accumulate, char *scratch) {
  const int mr = Micro<T>::mr(is), nr = Micro<T>::nr(is);
  const int asz = dtype_size(adt), bsz = dtype_size(bdt);
  const int64_t nc_max = std::min<int64_t>(NC, (n + nr - 1) / nr * nr);
  T *bp = reinterpret_cast<T *>(scratch);
  T *ap = bp + KC * nc_max;
  T *edge = ap + KC * ((MC + mr - 1) / mr * mr);
  if (k == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) c[i * ldc + j] = T(0);
    return;
  }
  for (int64_t jc = 0; jc < n; jc += NC) {
    const int64_t nc = std::min(NC, n - jc);
    for (int64_t pc = 0; pc < k; pc += KC) {
      const int64_t kc = std::min(KC, k - pc);
      const bool acc = accumulate || pc > 0;
      pack_b(bp, b + (pc * brs + jc * bcs) * bsz, bdt, brs, bcs, kc, nc, nr);
      for (int64_t ic = 0; ic < m; ic += MC) {
        const int64_t mc = std::min(MC, m - ic);
        pack_a(ap, a + (ic * ars + pc * acs) * asz, adt, ars, acs, mc, kc, mr);
        micro_tiles<T>(is, kc, ap, bp, mc, nc, mr, nr, c + ic * ldc + jc, ldc, acc, edge);
      }
    }
  }
}

}  // namespace

int gemm_provider() { return provider_now(); }
int set_gemm_provider(int p) {
  if (p == 1 && !blas().s) p = 0;
  provider.store(p == 1 ? 1 : 0, std::memory_order_relaxed);
  return provider_now();
}
int last_gemm() { return last.load(std::memory_order_relaxed); }
const char *blas_name() { return blas().name.c_str(); }

size_t local_gemm_scratch_bytes(int64_t n) {
  const Isa &is = isa();
  const int mr = is.gemm_mr_f32, nr = is.gemm_nr_f32;
  const int64_t nc_max = std::min<int64_t>(NC, (std::max<int64_t>(n, 1) + nr - 1) / nr * nr);
  return size_t(KC * nc_max + KC * ((MC + mr - 1) / mr * mr) + mr * nr) * sizeof(float) + 256;
}

void local_gemm_f32(int64_t m, int64_t n, int64_t k, const char *a, int adt, int64_t ars, int64_t acs, const char *b, int bdt,
                    int64_t brs, int64_t bcs, float *c, int64_t ldc, bool accumulate, void *scratch) {
  if (m <= 0 || n <= 0) return;
  local_block<float>(isa(), m, n, k, a, adt, ars, acs, b, bdt, brs, bcs, c, ldc, accumulate, static_cast<char *>(scratch));
}

int matmul(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_matmul";
  Reader r(desc, words, fn);
  Gemm g;
  g.isa = &isa();
  g.dtype = r.dtype("dtype");
  g.nb = int(r.integer(0, MAX_DIMS, "batch ndim"));
  g.M = r.integer(0, int64_t(1) << 52, "M");
  g.N = r.integer(0, int64_t(1) << 52, "N");
  g.K = r.integer(0, int64_t(1) << 52, "K");
  for (int d = 0; d < g.nb; d++) g.bshape[d] = r.integer(0, int64_t(1) << 52, "batch dimension");
  auto strides = [&](int64_t *bs, int64_t *rs, int64_t *cs) {
    for (int d = 0; d < g.nb; d++) bs[d] = r.integer(-(int64_t(1) << 52), int64_t(1) << 52, "batch stride");
    *rs = r.integer(-(int64_t(1) << 52), int64_t(1) << 52, "row stride");
    *cs = r.integer(-(int64_t(1) << 52), int64_t(1) << 52, "column stride");
  };
  g.A = r.pointer("A");
  strides(g.abs, &g.ars, &g.acs);
  g.B = r.pointer("B");
  strides(g.bbs, &g.brs, &g.bcs);
  g.C = r.pointer("C");
  g.alpha = r.next();
  g.beta = r.next();
  g.C0 = r.pointer("C0");
  strides(g.cbs, &g.crs, &g.ccs);
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  if (!is_float(g.dtype)) return unsupported(fn, std::string("no native GEMM for dtype ") + std::to_string(g.dtype));
  if (g.beta != 0.0 && !g.C0) return fail(fn, "beta is nonzero but C0 is null");
  g.batch = 1;
  for (int d = 0; d < g.nb; d++) g.batch *= g.bshape[d];
  if (g.batch == 0 || g.M == 0 || g.N == 0) return MGCPU_OK;

  if (provider_now() == 1 && try_blas(g)) {
    last.store(1, std::memory_order_relaxed);
    note_threads(0);
    return MGCPU_OK;
  }
  last.store(0, std::memory_order_relaxed);
  const bool f64 = g.dtype == F64;
  const int mr = f64 ? g.isa->gemm_mr_f64 : g.isa->gemm_mr_f32;
  const int nr = f64 ? g.isa->gemm_nr_f64 : g.isa->gemm_nr_f32;
  const double flops = 2.0 * double(g.batch) * double(g.M) * double(g.N) * double(std::max<int64_t>(g.K, 1));
  const int threads = threads_for(flops / 50);  // ~ns at ~100 GFLOP/s per core, plus packing
  // task grid: row blocks of about MC (balanced), column blocks of at most NC; split further while
  // there are fewer than 3 tasks per thread
  const int64_t row_blocks = (g.M + MC - 1) / MC;
  g.mt = ((g.M + row_blocks - 1) / row_blocks + mr - 1) / mr * mr;
  g.nt = std::min<int64_t>(g.N, NC);
  auto count = [&] {
    g.mtasks = (g.M + g.mt - 1) / g.mt;
    g.ntasks = (g.N + g.nt - 1) / g.nt;
    return g.batch * g.mtasks * g.ntasks;
  };
  // rows first: row tasks share B packed once below, column tasks would each pack the same A rows
  while (threads > 1 && count() < 3 * threads) {
    if (g.mt >= 4 * mr) g.mt = ((g.mt + 1) / 2 + mr - 1) / mr * mr;
    else if (g.nt >= 8 * nr) g.nt = ((g.nt + 1) / 2 + nr - 1) / nr * nr;
    else break;
  }
  const int64_t tasks = count();
  // Several row tasks would each pack the same B panels: pack them once (same values, same
  // micro-kernel calls, so the same bits), unless that needs a large buffer (it is kept by the
  // calling thread for the next call, outside the allocator's accounting: at most 8 MiB).
  g.npad = (g.N + nr - 1) / nr * nr;
  const size_t packed_bytes = size_t(g.batch) * size_t(g.K) * size_t(g.npad) * (f64 ? 8 : 4);
  if (g.mtasks > 1 && g.K > 0 && packed_bytes <= (size_t(8) << 20)) {
    g.bpacked = shared_pack_buffer(packed_bytes);
    if (g.bpacked) {
      const int64_t pack_tasks = g.batch * ((g.K + KC - 1) / KC);
      parallel_for(pack_tasks, threads_for(double(packed_bytes) * 0.5), f64 ? pack_b_task<double> : pack_b_task<float>, &g);
    }
  }
  if (!thread_scratch(0, block_scratch_bytes(g, g.nt, f64 ? 8 : 4) + size_t(g.mt * g.nt) * (f64 ? 8 : 4)))
    return fail(fn, "out of memory for GEMM packing buffers");
  note_threads(threads);
  parallel_for(tasks, threads, f64 ? gemm_task<double> : gemm_task<float>, &g);
  return MGCPU_OK;
}

}  // namespace mgcpu
