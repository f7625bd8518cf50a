// Dense factorizations of batches of real matrices (LUF, Inverse — general and triangular —,
// Cholesky, QRF, SVD, Eigh) in float64: the reference's algorithms (ts/backend/cpu/linalg/factor.ts, LAPACK's
// conventions: getrf's pivots, trtri, potrf stopping at the first non-positive pivot, geqrf/orgqr's
// reflector signs; one-sided Jacobi SVD and cyclic Jacobi eigh from spectral.ts) with every
// element's sums in the reference's order, so results equal it (QR up to the last bit of hypot). The loops are arranged so the inner ones run over contiguous memory
// (several right-hand sides at once, columns stored transposed) without reordering any element's
// arithmetic. Threads take whole matrices. A singular matrix (LU's zero pivot, a zero diagonal of
// a triangular inverse) is declined: the reference then raises the op's error.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "MGCpu.h"
#include "mgcpu.h"

namespace mgcpu {

namespace {

enum LinOp { OpLU = 0, OpInv = 1, OpTriInv = 2, OpChol = 3, OpQR = 4, OpSVD = 5, OpEigh = 6 };

// getrf as the reference's luFactor; returns info (1-based index of the first zero pivot, or 0).
int64_t lu_factor(double *lu, int64_t m, int64_t n, int64_t *piv) {
  const int64_t k = std::min(m, n);
  int64_t info = 0;
  for (int64_t j = 0; j < k; j++) {
    int64_t p = j;
    double best = std::fabs(lu[j * n + j]);
    for (int64_t i = j + 1; i < m; i++) {
      const double v = std::fabs(lu[i * n + j]);
      if (v > best || (best != best && v == v)) best = v, p = i;
    }
    piv[j] = p;
    const double pivot = lu[p * n + j];
    if (pivot == 0) {
      if (info == 0) info = j + 1;
      continue;
    }
    if (p != j)
      for (int64_t c = 0; c < n; c++) std::swap(lu[j * n + c], lu[p * n + c]);
    const double inv = 1 / pivot;
    const double *rj = lu + j * n;
    for (int64_t i = j + 1; i < m; i++) {
      double *ri = lu + i * n;
      const double l = (ri[j] *= inv);
      if (l == 0) continue;
      for (int64_t c = j + 1; c < n; c++) ri[c] -= l * rj[c];
    }
  }
  return info;
}

void perm_from_pivots(const int64_t *piv, int64_t k, int64_t m, int64_t *perm) {
  for (int64_t i = 0; i < m; i++) perm[i] = i;
  for (int64_t i = 0; i < k; i++) std::swap(perm[i], perm[piv[i]]);
}

// The inverse through the LU factors: the reference solves column by column; all columns advance
// together here, each still subtracting its terms in the reference's order.
void lu_inverse(const double *lu, const int64_t *perm, int64_t n, double *x) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) x[i * n + j] = perm[i] == j ? 1.0 : 0.0;
  for (int64_t i = 0; i < n; i++) {
    double *xi = x + i * n;
    for (int64_t k = 0; k < i; k++) {
      const double l = lu[i * n + k];
      const double *xk = x + k * n;
      for (int64_t j = 0; j < n; j++) xi[j] -= l * xk[j];
    }
  }
  for (int64_t i = n - 1; i >= 0; i--) {
    double *xi = x + i * n;
    for (int64_t k = i + 1; k < n; k++) {
      const double u = lu[i * n + k];
      const double *xk = x + k * n;
      for (int64_t j = 0; j < n; j++) xi[j] -= u * xk[j];
    }
    const double d = lu[i * n + i];
    for (int64_t j = 0; j < n; j++) xi[j] = xi[j] / d;
  }
}

// trtri as the reference's triInverse (the other triangle of x is zero); false on a zero diagonal.
bool tri_inverse(const double *a, int64_t n, bool upper, double *x, double *s) {
  for (int64_t i = 0; i < n; i++)
    if (a[i * n + i] == 0) return false;
  std::fill(x, x + n * n, 0.0);
  if (!upper) {
    // row i: s_j = Σ_{k=j}^{i−1} a[i,k]·x[k,j] (k ascending), x[i,j] = −s_j / a[i,i]
    for (int64_t i = 0; i < n; i++) {
      std::fill(s, s + i, 0.0);
      for (int64_t k = 0; k < i; k++) {
        const double aik = a[i * n + k];
        const double *xk = x + k * n;
        for (int64_t j = 0; j <= k; j++) s[j] += aik * xk[j];
      }
      for (int64_t j = 0; j < i; j++) x[i * n + j] = -s[j] / a[i * n + i];
      x[i * n + i] = 1 / a[i * n + i];
    }
  } else {
    // row i (bottom up): s_j = Σ_{k=i+1}^{j} a[i,k]·x[k,j] (k ascending), x[i,j] = −s_j / a[i,i]
    for (int64_t i = n - 1; i >= 0; i--) {
      std::fill(s, s + n, 0.0);
      for (int64_t k = i + 1; k < n; k++) {
        const double aik = a[i * n + k];
        const double *xk = x + k * n;
        for (int64_t j = k; j < n; j++) s[j] += aik * xk[j];
      }
      for (int64_t j = i + 1; j < n; j++) x[i * n + j] = -s[j] / a[i * n + i];
      x[i * n + i] = 1 / a[i * n + i];
    }
  }
  return true;
}

// potrf as the reference's cholesky (a non-positive pivot stops it, no error).
void cholesky(const double *a, int64_t n, bool upper, double *l, double *out) {
  std::fill(l, l + n * n, 0.0);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j <= i; j++) l[i * n + j] = upper ? a[j * n + i] : a[i * n + j];
  for (int64_t j = 0; j < n; j++) {
    const double *lj = l + j * n;
    double d = l[j * n + j];
    for (int64_t k = 0; k < j; k++) d -= lj[k] * lj[k];
    if (!(d > 0)) {
      l[j * n + j] = d;
      break;
    }
    d = std::sqrt(d);
    l[j * n + j] = d;
    for (int64_t i = j + 1; i < n; i++) {
      const double *li = l + i * n;
      double s = li[j];
      for (int64_t k = 0; k < j; k++) s -= li[k] * lj[k];
      l[i * n + j] = s / d;
    }
  }
  if (!upper) {
    std::memcpy(out, l, size_t(n * n) * sizeof(double));
    return;
  }
  std::fill(out, out + n * n, 0.0);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = i; j < n; j++) out[i * n + j] = l[j * n + i];
}

// geqrf + orgqr as the reference's householderQr; the working matrix and Q are stored by columns.
void householder_qr(const double *a, int64_t m, int64_t n, double *wt, double *qt, double *taus, double *q, double *r) {
  const int64_t k = std::min(m, n);
  for (int64_t i = 0; i < m; i++)
    for (int64_t c = 0; c < n; c++) wt[c * m + i] = a[i * n + c];
  for (int64_t j = 0; j < k; j++) {
    double *wj = wt + j * m;
    const double alpha = wj[j];
    double scale = 0, ssq = 1;
    for (int64_t i = j + 1; i < m; i++) {
      const double v = std::fabs(wj[i]);
      if (v == 0) continue;
      if (scale < v) {
        const double t = scale / v;
        ssq = 1 + ssq * (t * t);
        scale = v;
      } else {
        const double t = v / scale;
        ssq += t * t;
      }
    }
    const double xnorm = scale * std::sqrt(ssq);
    if (xnorm == 0) {
      taus[j] = 0;
      continue;
    }
    const double a1 = alpha != 0 && alpha == alpha ? alpha : 1;  // alpha || 1
    const double sign = a1 > 0 ? 1 : a1 < 0 ? -1 : a1;
    const double beta = -sign * std::hypot(alpha, xnorm);
    taus[j] = (beta - alpha) / beta;
    const double scal = 1 / (alpha - beta);
    for (int64_t i = j + 1; i < m; i++) wj[i] *= scal;
    wj[j] = beta;
    const double tau = taus[j];
    for (int64_t c = j + 1; c < n; c++) {
      double *wc = wt + c * m;
      double s = wc[j];
      for (int64_t i = j + 1; i < m; i++) s += wj[i] * wc[i];
      s *= tau;
      wc[j] -= s;
      for (int64_t i = j + 1; i < m; i++) wc[i] -= s * wj[i];
    }
  }
  for (int64_t i = 0; i < k; i++)
    for (int64_t c = 0; c < n; c++) r[i * n + c] = c >= i ? wt[c * m + i] : 0.0;
  std::fill(qt, qt + k * m, 0.0);
  for (int64_t i = 0; i < k; i++) qt[i * m + i] = 1;
  for (int64_t j = k - 1; j >= 0; j--) {
    const double tau = taus[j];
    if (tau == 0) continue;
    const double *wj = wt + j * m;
    for (int64_t c = j; c < k; c++) {
      double *qc = qt + c * m;
      double s = qc[j];
      for (int64_t i = j + 1; i < m; i++) s += wj[i] * qc[i];
      s *= tau;
      qc[j] -= s;
      for (int64_t i = j + 1; i < m; i++) qc[i] -= s * wj[i];
    }
  }
  for (int64_t i = 0; i < m; i++)
    for (int64_t c = 0; c < k; c++) q[i * k + c] = qt[c * m + i];
}

// ---- spectral decompositions (ts/backend/cpu/linalg/spectral.ts: one-sided and cyclic Jacobi) ----------

constexpr double EPS = 0x1p-52;

double dotv(const double *x, const double *y, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += x[i] * y[i];
  return s;
}

void rotate(double *x, double *y, double c, double s, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    const double xi = x[i], yi = y[i];
    x[i] = c * xi - s * yi;
    y[i] = s * xi + c * yi;
  }
}

// The reference's completeBasis: empty columns (filled[j] false) become unit vectors orthogonal
// to the filled ones (Gram-Schmidt twice of e_0, e_1, …, the first of norm > 0.7 or the largest).
void complete_basis(double *cols, std::vector<char> &filled, int64_t dim, double *v, double *best) {
  for (int64_t slot = 0; slot < dim; slot++) {
    if (filled[size_t(slot)]) continue;
    double best_norm = -1;
    for (int64_t e = 0; e < dim; e++) {
      std::fill(v, v + dim, 0.0);
      v[e] = 1;
      for (int pass = 0; pass < 2; pass++)
        for (int64_t b = 0; b < dim; b++) {
          if (!filled[size_t(b)]) continue;
          const double *bc = cols + b * dim;
          const double d = dotv(v, bc, dim);
          for (int64_t i = 0; i < dim; i++) v[i] -= d * bc[i];
        }
      const double nv = std::sqrt(dotv(v, v, dim));
      if (nv > best_norm) {
        best_norm = nv;
        std::copy(v, v + dim, best);
      }
      if (nv > 0.7) break;
    }
    for (int64_t i = 0; i < dim; i++) cols[slot * dim + i] = best[i] / best_norm;
    filled[size_t(slot)] = 1;
  }
}

// One-sided Jacobi SVD of a tall matrix (m ≥ n) given by columns; u (m×m), vt (n×n) row-major.
void svd_tall(double *cols, int64_t m, int64_t n, bool uv, double *s_out, double *u, double *vt, double *work) {
  double *vcols = work, *norms = vcols + n * n, *sv = norms + n, *ucols = sv + n, *v = ucols + m * m, *best = v + m;
  std::fill(vcols, vcols + n * n, 0.0);
  for (int64_t j = 0; j < n; j++) vcols[j * n + j] = 1;
  for (int64_t j = 0; j < n; j++) norms[j] = dotv(cols + j * m, cols + j * m, m);
  const double tol = EPS * double(m);
  for (int sweep = 0; sweep < 80; sweep++) {
    bool rotated = false;
    for (int64_t p = 0; p < n - 1; p++)
      for (int64_t q = p + 1; q < n; q++) {
        double *cp = cols + p * m, *cq = cols + q * m;
        const double alpha = norms[p], beta = norms[q];
        const double gamma = dotv(cp, cq, m);
        if (gamma == 0 || std::fabs(gamma) <= tol * std::sqrt(alpha * beta)) continue;
        rotated = true;
        const double zeta = (beta - alpha) / (2 * gamma);
        const double t = (zeta >= 0 ? 1 : -1) / (std::fabs(zeta) + std::sqrt(1 + zeta * zeta));
        const double c = 1 / std::sqrt(1 + t * t);
        const double sn = c * t;
        rotate(cp, cq, c, sn, m);
        rotate(vcols + p * n, vcols + q * n, c, sn, n);
        // both norms in one loop: two independent sums, each in order
        double np_ = 0, nq = 0;
        for (int64_t i = 0; i < m; i++) {
          np_ += cp[i] * cp[i];
          nq += cq[i] * cq[i];
        }
        norms[p] = np_;
        norms[q] = nq;
      }
    if (!rotated) break;
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; j++) {
    sv[j] = std::sqrt(norms[j]);
    order[size_t(j)] = j;
  }
  // descending, ties in index order (the values are finite)
  std::sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return sv[i] > sv[j] || (sv[i] == sv[j] && i < j); });
  for (int64_t r = 0; r < n; r++) s_out[r] = sv[order[size_t(r)]];
  if (!uv) return;
  std::vector<char> filled(static_cast<size_t>(m), 0);
  std::fill(ucols, ucols + m * m, 0.0);
  for (int64_t r = 0; r < n; r++) {
    const int64_t j = order[size_t(r)];
    if (sv[j] > 0 && sv[j] > s_out[0] * EPS * 1e-3) {
      const double inv = 1 / sv[j];
      for (int64_t i = 0; i < m; i++) ucols[r * m + i] = cols[j * m + i] * inv;
      filled[size_t(r)] = 1;
    }
  }
  complete_basis(ucols, filled, m, v, best);
  for (int64_t j = 0; j < m; j++)
    for (int64_t i = 0; i < m; i++) u[i * m + j] = ucols[j * m + i];
  for (int64_t r = 0; r < n; r++)
    for (int64_t i = 0; i < n; i++) vt[r * n + i] = vcols[order[size_t(r)] * n + i];
}

// The reference's svd (gesdd, jobz 'A'): false on a non-finite input.
bool svd(const double *a, int64_t m, int64_t n, bool uv, double *s, double *u, double *vt, double *work) {
  for (int64_t i = 0; i < m * n; i++)
    if (!std::isfinite(a[i])) return false;
  double *cols = work;  // columns of the tall matrix
  double *rest = cols + m * n;
  if (m < n) {
    // Aᵀ = U'·S·V'ᵀ ⇒ A = V'·S·U'ᵀ; Aᵀ's columns are A's rows
    for (int64_t j = 0; j < m; j++)
      for (int64_t i = 0; i < n; i++) cols[j * n + i] = a[j * n + i];
    double *ut = rest, *vtt = ut + n * n, *w2 = vtt + m * m;
    svd_tall(cols, n, m, uv, s, ut, vtt, w2);
    if (!uv) return true;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < m; j++) u[i * m + j] = vtt[j * m + i];
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) vt[i * n + j] = ut[j * n + i];
    return true;
  }
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) cols[j * m + i] = a[i * n + j];
  svd_tall(cols, m, n, uv, s, u, vt, rest);
  return true;
}

// The reference's eighJacobi (cyclic Jacobi): false on a non-finite input.
bool eigh(const double *a, int64_t n, bool upper, bool vectors, double *w, double *vs, double *work) {
  double *s = work, *v = s + n * n;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j <= i; j++) {
      const double x = upper ? a[j * n + i] : a[i * n + j];
      s[i * n + j] = x;
      s[j * n + i] = x;
    }
  for (int64_t i = 0; i < n * n; i++)
    if (!std::isfinite(s[i])) return false;
  std::fill(v, v + n * n, 0.0);
  for (int64_t i = 0; i < n; i++) v[i * n + i] = 1;
  for (int sweep = 0; sweep < 100; sweep++) {
    double off = 0, diag = 0;
    for (int64_t i = 0; i < n; i++) {
      diag += s[i * n + i] * s[i * n + i];
      for (int64_t j = i + 1; j < n; j++) off += s[i * n + j] * s[i * n + j];
    }
    if (off == 0 || off <= EPS * EPS * 1e-2 * diag) break;
    for (int64_t p = 0; p < n - 1; p++)
      for (int64_t q = p + 1; q < n; q++) {
        const double apq = s[p * n + q];
        if (apq == 0) continue;
        const double app = s[p * n + p], aqq = s[q * n + q];
        if (std::fabs(apq) <= EPS * 1e-3 * std::sqrt(std::fabs(app * aqq))) {
          s[p * n + q] = s[q * n + p] = 0;
          continue;
        }
        const double theta = (aqq - app) / (2 * apq);
        const double t = (theta >= 0 ? 1 : -1) / (std::fabs(theta) + std::sqrt(1 + theta * theta));
        const double c = 1 / std::sqrt(1 + t * t);
        const double sn = t * c;
        for (int64_t k = 0; k < n; k++) {
          const double akp = s[k * n + p], akq = s[k * n + q];
          s[k * n + p] = c * akp - sn * akq;
          s[k * n + q] = sn * akp + c * akq;
        }
        double *sp = s + p * n, *sq = s + q * n;
        for (int64_t k = 0; k < n; k++) {
          const double apk = sp[k], aqk = sq[k];
          sp[k] = c * apk - sn * aqk;
          sq[k] = sn * apk + c * aqk;
        }
        s[p * n + q] = s[q * n + p] = 0;
        if (vectors) {
          // V is stored transposed (row p holds column p): the rotation runs over contiguous memory
          double *vp = v + p * n, *vq = v + q * n;
          for (int64_t k = 0; k < n; k++) {
            const double vkp = vp[k], vkq = vq[k];
            vp[k] = c * vkp - sn * vkq;
            vq[k] = sn * vkp + c * vkq;
          }
        }
      }
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) order[size_t(i)] = i;
  // ascending, ties in index order (the values are finite)
  std::sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
    const double x = s[i * n + i], y = s[j * n + j];
    return x < y || (x == y && i < j);
  });
  for (int64_t i = 0; i < n; i++) w[i] = s[order[size_t(i)] * n + order[size_t(i)]];
  if (vectors)
    for (int64_t dst = 0; dst < n; dst++)
      for (int64_t k = 0; k < n; k++) vs[k * n + dst] = v[order[size_t(dst)] * n + k];
  return true;
}

inline double load_d(const char *p, int dtype, int64_t i) {
  return dtype == F32 ? double(reinterpret_cast<const float *>(p)[i]) : reinterpret_cast<const double *>(p)[i];
}
inline void store_d(char *p, int dtype, int64_t i, double v) {
  if (dtype == F32) reinterpret_cast<float *>(p)[i] = float(v);
  else reinterpret_cast<double *>(p)[i] = v;
}

struct Job {
  int op, dtype, nd;
  bool upper;    // triangular/Cholesky: the upper triangle; eigh: UPLO "U"
  bool vectors;  // SVD: U and Vᵀ too; eigh: the eigenvectors too
  int64_t shape[MAX_DIMS], strides[MAX_DIMS];
  int64_t count, m, n;
  const char *src;
  char *out[3];
  size_t scratch_bytes;
  std::atomic<int64_t> failed_at{-1};  // the first matrix that declined
  std::atomic<bool> oom{false};
};

void matrix_task(void *ctx, int64_t b, int thread) {
  Job &j = *static_cast<Job *>(ctx);
  const int64_t m = j.m, n = j.n, k = std::min(m, n);
  auto *sc = static_cast<double *>(thread_scratch(thread, j.scratch_bytes));
  if (!sc) {
    j.oom.store(true);
    return;
  }
  // the matrix, row-major
  double *a = sc;
  int64_t base = 0, rest = b;
  for (int d = j.nd - 3; d >= 0; d--) {
    base += (rest % j.shape[d]) * j.strides[d];
    rest /= j.shape[d];
  }
  const int64_t rs = j.strides[j.nd - 2], cs = j.strides[j.nd - 1];
  for (int64_t i = 0; i < m; i++)
    for (int64_t c = 0; c < n; c++) a[i * n + c] = load_d(j.src, j.dtype, base + i * rs + c * cs);
  double *w = a + m * n;
  switch (j.op) {
    case OpLU: {
      auto *piv = reinterpret_cast<int64_t *>(w);
      int64_t *perm = piv + k;
      lu_factor(a, m, n, piv);
      perm_from_pivots(piv, k, m, perm);
      for (int64_t i = 0; i < m * n; i++) store_d(j.out[0], j.dtype, b * m * n + i, a[i]);
      auto *po = reinterpret_cast<uint32_t *>(j.out[1]) + b * k;
      for (int64_t i = 0; i < k; i++) po[i] = uint32_t(piv[i]);
      auto *ro = reinterpret_cast<uint32_t *>(j.out[2]) + b * m;
      for (int64_t i = 0; i < m; i++) ro[perm[i]] = uint32_t(i);
      return;
    }
    case OpInv: {
      auto *piv = reinterpret_cast<int64_t *>(w);
      int64_t *perm = piv + n;
      double *x = reinterpret_cast<double *>(perm + n);
      if (lu_factor(a, n, n, piv) != 0) {
        int64_t none = -1;
        j.failed_at.compare_exchange_strong(none, b);
        return;
      }
      perm_from_pivots(piv, n, n, perm);
      lu_inverse(a, perm, n, x);
      for (int64_t i = 0; i < n * n; i++) store_d(j.out[0], j.dtype, b * n * n + i, x[i]);
      return;
    }
    case OpTriInv: {
      double *x = w, *s = w + n * n;
      if (!tri_inverse(a, n, j.upper, x, s)) {
        int64_t none = -1;
        j.failed_at.compare_exchange_strong(none, b);
        return;
      }
      for (int64_t i = 0; i < n * n; i++) store_d(j.out[0], j.dtype, b * n * n + i, x[i]);
      return;
    }
    case OpChol: {
      double *l = w, *o = w + n * n;
      cholesky(a, n, j.upper, l, o);
      for (int64_t i = 0; i < n * n; i++) store_d(j.out[0], j.dtype, b * n * n + i, o[i]);
      return;
    }
    case OpSVD: {
      double *s = w, *u = s + k, *vt = u + m * m, *work = vt + n * n;
      if (!svd(a, m, n, j.vectors, s, u, vt, work)) {
        int64_t none = -1;
        j.failed_at.compare_exchange_strong(none, b);
        return;
      }
      if (!j.vectors) {
        for (int64_t i = 0; i < k; i++) store_d(j.out[0], j.dtype, b * k + i, s[i]);
        return;
      }
      for (int64_t i = 0; i < m * m; i++) store_d(j.out[0], j.dtype, b * m * m + i, u[i]);
      for (int64_t i = 0; i < k; i++) store_d(j.out[1], j.dtype, b * k + i, s[i]);
      for (int64_t i = 0; i < n * n; i++) store_d(j.out[2], j.dtype, b * n * n + i, vt[i]);
      return;
    }
    case OpEigh: {
      double *ev = w, *vs = ev + n, *work = vs + n * n;
      if (!eigh(a, n, j.upper, j.vectors, ev, vs, work)) {
        int64_t none = -1;
        j.failed_at.compare_exchange_strong(none, b);
        return;
      }
      for (int64_t i = 0; i < n; i++) store_d(j.out[0], j.dtype, b * n + i, ev[i]);
      if (j.vectors)
        for (int64_t i = 0; i < n * n; i++) store_d(j.out[1], j.dtype, b * n * n + i, vs[i]);
      return;
    }
    default: {
      double *wt = w, *qt = wt + m * n, *taus = qt + k * m, *q = taus + k, *r = q + m * k;
      householder_qr(a, m, n, wt, qt, taus, q, r);
      for (int64_t i = 0; i < m * k; i++) store_d(j.out[0], j.dtype, b * m * k + i, q[i]);
      for (int64_t i = 0; i < k * n; i++) store_d(j.out[1], j.dtype, b * k * n + i, r[i]);
      return;
    }
  }
}

}  // namespace

// [op (0 LU, 1 inverse, 2 triangular inverse, 3 Cholesky, 4 QR, 5 SVD, 6 eigh), upper, vectors,
//  dtype, ndim (≥ 2), shape…, src, src strides…, outputs (LU: lu, pivots, rows; QR: q, r; SVD: u,
//  s, vt or s; eigh: w (, v); else one)]
int linalg(const double *desc, int32_t words) {
  const char *fn = "mg_cpu_linalg";
  Reader r(desc, words, fn);
  Job j;
  j.op = int(r.integer(0, 6, "op"));
  j.upper = r.integer(0, 1, "upper") == 1;
  j.vectors = r.integer(0, 1, "vectors") == 1;
  j.dtype = r.dtype("dtype");
  j.nd = int(r.integer(2, MAX_DIMS, "ndim"));
  if (!read_shape(r, j.nd, j.shape)) return fail(fn, r.error);
  j.src = r.pointer("source");
  if (!read_strides(r, j.nd, j.strides)) return fail(fn, r.error);
  const int outs = j.op == OpLU ? 3 : j.op == OpQR ? 2 : j.op == OpSVD ? (j.vectors ? 3 : 1) : j.op == OpEigh ? (j.vectors ? 2 : 1) : 1;
  for (int i = 0; i < outs; i++) j.out[i] = r.pointer("output");
  if (!r.ok) return fail(fn, r.error);
  if (r.pos != words) return fail(fn, "descriptor has extra words");
  if (j.dtype != F32 && j.dtype != F64) return unsupported(fn, std::string("factorizations of ") + dtype_name(j.dtype));
  j.m = j.shape[j.nd - 2];
  j.n = j.shape[j.nd - 1];
  if (j.op != OpLU && j.op != OpQR && j.op != OpSVD && j.m != j.n) return fail(fn, "the matrix is not square");
  j.count = j.m * j.n == 0 ? 0 : size_of(j.nd, j.shape) / (j.m * j.n);
  if (j.count == 0) return MGCPU_OK;
  if (!j.src) return fail(fn, "null operand");
  for (int i = 0; i < outs; i++)
    if (!j.out[i]) return fail(fn, "null output");
  const int64_t m = j.m, n = j.n, k = std::min(m, n);
  // a, then per op: pivots and permutation (int64) and X; X and s; L and out; QR's buffers
  const int64_t big = std::max(m, n);
  j.scratch_bytes = size_t(m * n + 3 * m * n + 2 * k * m + 2 * (m + n) + k + n * n + 64 + 6 * big * big + 4 * big) * sizeof(double);
  const double work = double(j.count) * double(m) * double(n) * double(std::max(m, n)) * 0.7;
  const int threads = threads_for(work);
  note_threads(threads);
  parallel_for(j.count, threads, matrix_task, &j);
  if (j.oom.load()) return fail(fn, "out of memory for factorization scratch");
  if (j.failed_at.load() >= 0)
    return unsupported(fn, j.op == OpInv ? "a singular matrix" : j.op == OpTriInv ? "a zero on the diagonal" : "a non-finite input");
  return MGCPU_OK;
}

}  // namespace mgcpu

MG_EXPORT int32_t mg_cpu_linalg(const double *desc, int32_t words) { return mgcpu::linalg(desc, words); }
