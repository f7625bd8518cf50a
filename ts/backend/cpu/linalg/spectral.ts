// Spectral decompositions in float64 on one row-major matrix: the SVD by one-sided Jacobi
// (Hestenes), the symmetric eigenproblem by cyclic Jacobi, and the general real eigenproblem by
// Householder reduction to Hessenberg form and Francis double-shift QR (real Schur form, then
// back substitution for the eigenvectors). Jacobi methods are slower than LAPACK's
// divide-and-conquer but reach full relative accuracy, which a reference wants. Singular and
// eigen-vectors are unique only up to sign (phase); tests compare invariants, not signs.

import { LinalgError } from "./factor.ts";

const EPS = 2 ** -52;

export interface SvdResult {
  /** m×m orthogonal (null without vectors). */
  u: Float64Array | null;
  /** min(m, n) singular values, descending. */
  s: Float64Array;
  /** n×n orthogonal, Vᵀ (null without vectors). */
  vt: Float64Array | null;
}

/** A = U·diag(S)·Vᵀ with full U (m×m) and Vᵀ (n×n), as LAPACK's gesdd with jobz = 'A'. */
export function svd(a: ArrayLike<number>, m: number, n: number, computeUv: boolean): SvdResult {
  for (let i = 0; i < m * n; i++) {
    if (!Number.isFinite(a[i]!)) throw new LinalgError("SVD failed: the input contains NaN or infinity");
  }
  if (m < n) {
    // Aᵀ = U'·S·V'ᵀ  ⇒  A = V'·S·U'ᵀ
    const t = new Float64Array(n * m);
    for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) t[j * m + i] = a[i * n + j]!;
    const r = svdTall(t, n, m, computeUv);
    if (!computeUv) return { u: null, s: r.s, vt: null };
    return { u: transpose(r.vt!, m, m), s: r.s, vt: transpose(r.u!, n, n) };
  }
  return svdTall(a, m, n, computeUv);
}

function transpose(x: Float64Array, r: number, c: number): Float64Array {
  const t = new Float64Array(r * c);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) t[j * r + i] = x[i * c + j]!;
  return t;
}

/** m ≥ n. Columns are orthogonalized by plane rotations applied on the right: A·V = U·S. */
function svdTall(a: ArrayLike<number>, m: number, n: number, computeUv: boolean): SvdResult {
  // Column-major copies: cols[j] is column j of A (length m); vcols[j] column j of V.
  const cols: Float64Array[] = [];
  for (let j = 0; j < n; j++) {
    const c = new Float64Array(m);
    for (let i = 0; i < m; i++) c[i] = a[i * n + j]!;
    cols.push(c);
  }
  const vcols: Float64Array[] = [];
  for (let j = 0; j < n; j++) {
    const c = new Float64Array(n);
    c[j] = 1;
    vcols.push(c);
  }
  const norms = cols.map((c) => dot(c, c, m));
  const tol = EPS * m;
  for (let sweep = 0; sweep < 80; sweep++) {
    let rotated = false;
    for (let p = 0; p < n - 1; p++) {
      for (let q = p + 1; q < n; q++) {
        const cp = cols[p]!, cq = cols[q]!;
        const alpha = norms[p]!, beta = norms[q]!;
        const gamma = dot(cp, cq, m);
        if (gamma === 0 || Math.abs(gamma) <= tol * Math.sqrt(alpha * beta)) continue;
        rotated = true;
        const zeta = (beta - alpha) / (2 * gamma);
        const t = (zeta >= 0 ? 1 : -1) / (Math.abs(zeta) + Math.sqrt(1 + zeta * zeta));
        const c = 1 / Math.sqrt(1 + t * t);
        const s = c * t;
        rotate(cp, cq, c, s, m);
        rotate(vcols[p]!, vcols[q]!, c, s, n);
        // Exact updates of the squared norms would drift; recompute them.
        norms[p] = dot(cp, cp, m);
        norms[q] = dot(cq, cq, m);
      }
    }
    if (!rotated) break;
  }
  const sv = norms.map((x) => Math.sqrt(x));
  const order = Array.from({ length: n }, (_, i) => i).sort((i, j) => sv[j]! - sv[i]! || i - j);
  const s = Float64Array.from(order, (i) => sv[i]!);
  if (!computeUv) return { u: null, s, vt: null };
  // U's first columns: A·v_j / σ_j; the rest completes an orthonormal basis of R^m.
  const ucols: Float64Array[] = [];
  for (const j of order) {
    if (sv[j]! > 0 && sv[j]! > s[0]! * EPS * 1e-3) {
      const c = cols[j]!.slice();
      const inv = 1 / sv[j]!;
      for (let i = 0; i < m; i++) c[i]! *= inv;
      ucols.push(c);
    } else {
      ucols.push(new Float64Array(0)); // placeholder, filled by completion
    }
  }
  completeBasis(ucols, m);
  const u = new Float64Array(m * m);
  for (let j = 0; j < m; j++) for (let i = 0; i < m; i++) u[i * m + j] = ucols[j]![i]!;
  const vt = new Float64Array(n * n);
  order.forEach((j, r) => {
    for (let i = 0; i < n; i++) vt[r * n + i] = vcols[j]![i]!;
  });
  return { u, s, vt };
}

function dot(x: Float64Array, y: Float64Array, n: number): number {
  let s = 0;
  for (let i = 0; i < n; i++) s += x[i]! * y[i]!;
  return s;
}

function rotate(x: Float64Array, y: Float64Array, c: number, s: number, n: number): void {
  for (let i = 0; i < n; i++) {
    const xi = x[i]!, yi = y[i]!;
    x[i] = c * xi - s * yi;
    y[i] = s * xi + c * yi;
  }
}

/** Fills empty entries (and appends up to `dim` columns) with unit vectors orthogonal to the
 *  others: Gram-Schmidt (twice) of the standard basis vectors, the most orthogonal first. */
function completeBasis(cols: Float64Array[], dim: number): void {
  const have = () => cols.filter((c) => c.length === dim);
  while (cols.length < dim) cols.push(new Float64Array(0));
  for (let slot = 0; slot < cols.length; slot++) {
    if (cols[slot]!.length === dim) continue;
    const basis = have();
    let best: Float64Array | null = null;
    let bestNorm = -1;
    for (let e = 0; e < dim; e++) {
      const v = new Float64Array(dim);
      v[e] = 1;
      for (let pass = 0; pass < 2; pass++) {
        for (const b of basis) {
          const d = dot(v, b, dim);
          for (let i = 0; i < dim; i++) v[i]! -= d * b[i]!;
        }
      }
      const nv = Math.sqrt(dot(v, v, dim));
      if (nv > bestNorm) (bestNorm = nv), (best = v);
      if (nv > 0.7) break;
    }
    for (let i = 0; i < dim; i++) best![i]! /= bestNorm;
    cols[slot] = best!;
  }
}

export interface EighResult {
  /** Eigenvalues, ascending. */
  w: Float64Array;
  /** n×n, eigenvector j in column j (null without vectors). */
  v: Float64Array | null;
}

/** Symmetric eigenproblem of the matrix built from the lower (uplo "L") or upper triangle. */
export function eighJacobi(a: ArrayLike<number>, n: number, uplo: "L" | "U", computeVectors: boolean): EighResult {
  const s = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      const v = uplo === "L" ? a[i * n + j]! : a[j * n + i]!;
      s[i * n + j] = v;
      s[j * n + i] = v;
    }
  }
  for (let i = 0; i < n * n; i++) if (!Number.isFinite(s[i]!)) throw new LinalgError("eigendecomposition failed: the input contains NaN or infinity");
  const v = new Float64Array(n * n);
  for (let i = 0; i < n; i++) v[i * n + i] = 1;
  for (let sweep = 0; sweep < 100; sweep++) {
    let off = 0, diag = 0;
    for (let i = 0; i < n; i++) {
      diag += s[i * n + i]! ** 2;
      for (let j = i + 1; j < n; j++) off += s[i * n + j]! ** 2;
    }
    if (off === 0 || off <= EPS * EPS * 1e-2 * diag) break;
    for (let p = 0; p < n - 1; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = s[p * n + q]!;
        if (apq === 0) continue;
        const app = s[p * n + p]!, aqq = s[q * n + q]!;
        // Negligible next to both diagonal entries: drop it instead of rotating.
        if (Math.abs(apq) <= EPS * 1e-3 * Math.sqrt(Math.abs(app * aqq))) {
          s[p * n + q] = s[q * n + p] = 0;
          continue;
        }
        const theta = (aqq - app) / (2 * apq);
        const t = (theta >= 0 ? 1 : -1) / (Math.abs(theta) + Math.sqrt(1 + theta * theta));
        const c = 1 / Math.sqrt(1 + t * t);
        const sn = t * c;
        // A ← Jᵀ A J on rows/columns p, q.
        for (let k = 0; k < n; k++) {
          const akp = s[k * n + p]!, akq = s[k * n + q]!;
          s[k * n + p] = c * akp - sn * akq;
          s[k * n + q] = sn * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = s[p * n + k]!, aqk = s[q * n + k]!;
          s[p * n + k] = c * apk - sn * aqk;
          s[q * n + k] = sn * apk + c * aqk;
        }
        s[p * n + q] = s[q * n + p] = 0;
        if (computeVectors) {
          for (let k = 0; k < n; k++) {
            const vkp = v[k * n + p]!, vkq = v[k * n + q]!;
            v[k * n + p] = c * vkp - sn * vkq;
            v[k * n + q] = sn * vkp + c * vkq;
          }
        }
      }
    }
  }
  const order = Array.from({ length: n }, (_, i) => i).sort((i, j) => s[i * n + i]! - s[j * n + j]! || i - j);
  const w = Float64Array.from(order, (i) => s[i * n + i]!);
  if (!computeVectors) return { w, v: null };
  const vs = new Float64Array(n * n);
  order.forEach((src, dst) => {
    for (let k = 0; k < n; k++) vs[k * n + dst] = v[k * n + src]!;
  });
  return { w, v: vs };
}

export interface EigResult {
  wr: Float64Array;
  wi: Float64Array;
  /** n×n eigenvectors (column j for eigenvalue j), real and imaginary parts, each of unit
   *  2-norm with its largest component real (geev's normalization); null without vectors. */
  vr: Float64Array | null;
  vi: Float64Array | null;
}

/** The general real eigenproblem: Hessenberg reduction, Francis QR to real Schur form T = QᵀAQ,
 *  eigenvectors of T by back substitution, mapped back with Q. */
export function eigGeneral(a: ArrayLike<number>, n: number, computeVectors: boolean): EigResult {
  for (let i = 0; i < n * n; i++) if (!Number.isFinite(a[i]!)) throw new LinalgError("eigendecomposition failed: the input contains NaN or infinity");
  const h: number[][] = [];
  for (let i = 0; i < n; i++) h.push(Array.from({ length: n }, (_, j) => a[i * n + j]!));
  const z: number[][] = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
  hessenberg(h, z, n);
  const wr = new Float64Array(n), wi = new Float64Array(n);
  schur(h, z, n, wr, wi);
  if (!computeVectors) return { wr, wi, vr: null, vi: null };
  schurVectors(h, z, n, wr, wi);
  // z now holds the eigenvectors: a real pair (x, y) at columns (j, j+1) is x ± i·y.
  const vr = new Float64Array(n * n), vi = new Float64Array(n * n);
  for (let j = 0; j < n; j++) {
    if (wi[j] === 0) {
      let nrm = 0;
      for (let i = 0; i < n; i++) nrm += z[i]![j]! ** 2;
      nrm = Math.sqrt(nrm) || 1;
      for (let i = 0; i < n; i++) vr[i * n + j] = z[i]![j]! / nrm;
    } else if (wi[j]! > 0) {
      let nrm = 0;
      for (let i = 0; i < n; i++) nrm += z[i]![j]! ** 2 + z[i]![j + 1]! ** 2;
      nrm = Math.sqrt(nrm) || 1;
      // Rotate so the component of largest modulus is real and positive.
      let k = 0, big = -1;
      for (let i = 0; i < n; i++) {
        const mod = z[i]![j]! ** 2 + z[i]![j + 1]! ** 2;
        if (mod > big) (big = mod), (k = i);
      }
      const pr = z[k]![j]!, pi = z[k]![j + 1]!;
      const pm = Math.hypot(pr, pi) || 1;
      // multiply by conj(p)/|p|
      const cr = pr / pm, ci = -pi / pm;
      for (let i = 0; i < n; i++) {
        const xr = z[i]![j]! / nrm, xi = z[i]![j + 1]! / nrm;
        const rr = xr * cr - xi * ci, ri = xr * ci + xi * cr;
        vr[i * n + j] = rr;
        vi[i * n + j] = ri;
        vr[i * n + j + 1] = rr;
        vi[i * n + j + 1] = -ri;
      }
      vi[k * n + j] = 0;
      vi[k * n + j + 1] = 0;
    }
  }
  return { wr, wi, vr, vi };
}

/** Householder reduction to upper Hessenberg form; z ← the product of the reflections. */
function hessenberg(h: number[][], z: number[][], n: number): void {
  // Reflector m: u (scaled) in vecs[m][m..n-1], applied as I − u·uᵀ/(−u_m·g·scale).
  const vecs: (Float64Array | null)[] = Array.from({ length: n }, () => null);
  const denom = new Float64Array(n);
  const ort = new Float64Array(n);
  for (let m = 1; m < n - 1; m++) {
    let scale = 0;
    for (let i = m; i < n; i++) scale += Math.abs(h[i]![m - 1]!);
    if (scale === 0) continue;
    let hh = 0;
    for (let i = n - 1; i >= m; i--) {
      ort[i] = h[i]![m - 1]! / scale;
      hh += ort[i]! * ort[i]!;
    }
    let g = Math.sqrt(hh);
    if (ort[m]! > 0) g = -g;
    hh -= ort[m]! * g;
    ort[m] = ort[m]! - g;
    // H ← (I − u uᵀ/hh) H (I − u uᵀ/hh)
    for (let j = m; j < n; j++) {
      let f = 0;
      for (let i = n - 1; i >= m; i--) f += ort[i]! * h[i]![j]!;
      f /= hh;
      for (let i = m; i < n; i++) h[i]![j] = h[i]![j]! - f * ort[i]!;
    }
    for (let i = 0; i < n; i++) {
      let f = 0;
      for (let j = n - 1; j >= m; j--) f += ort[j]! * h[i]![j]!;
      f /= hh;
      for (let j = m; j < n; j++) h[i]![j] = h[i]![j]! - f * ort[j]!;
    }
    const u = new Float64Array(n);
    for (let i = m; i < n; i++) u[i] = ort[i]!;
    vecs[m] = u;
    denom[m] = hh;
    h[m]![m - 1] = scale * g;
    for (let i = m + 1; i < n; i++) h[i]![m - 1] = 0;
  }
  // z = P_1·P_2·…: apply the reflectors to the identity from the last one back.
  for (let m = n - 2; m >= 1; m--) {
    const u = vecs[m];
    if (!u) continue;
    const hh = denom[m]!;
    for (let j = m; j < n; j++) {
      let f = 0;
      for (let i = m; i < n; i++) f += u[i]! * z[i]![j]!;
      f /= hh;
      for (let i = m; i < n; i++) z[i]![j] = z[i]![j]! - f * u[i]!;
    }
  }
}

/** Francis double-shift QR on the Hessenberg matrix h (in place → real Schur form), with the
 *  transformations accumulated into z; eigenvalues into (wr, wi). */
function schur(h: number[][], z: number[][], n: number, wr: Float64Array, wi: Float64Array): void {
  let exshift = 0;
  let p = 0, q = 0, r = 0, s = 0, zz = 0, w: number, x = 0, y: number;
  let norm = 0;
  for (let i = 0; i < n; i++) for (let j = Math.max(i - 1, 0); j < n; j++) norm += Math.abs(h[i]![j]!);
  let iter = 0;
  let nn = n - 1;
  while (nn >= 0) {
    // Find a small subdiagonal element.
    let l = nn;
    while (l > 0) {
      s = Math.abs(h[l - 1]![l - 1]!) + Math.abs(h[l]![l]!);
      if (s === 0) s = norm;
      if (Math.abs(h[l]![l - 1]!) < EPS * s) break;
      l--;
    }
    if (l === nn) {
      // One root.
      h[nn]![nn] = h[nn]![nn]! + exshift;
      wr[nn] = h[nn]![nn]!;
      wi[nn] = 0;
      nn--;
      iter = 0;
    } else if (l === nn - 1) {
      // Two roots.
      w = h[nn]![nn - 1]! * h[nn - 1]![nn]!;
      p = (h[nn - 1]![nn - 1]! - h[nn]![nn]!) / 2;
      q = p * p + w;
      zz = Math.sqrt(Math.abs(q));
      h[nn]![nn] = h[nn]![nn]! + exshift;
      h[nn - 1]![nn - 1] = h[nn - 1]![nn - 1]! + exshift;
      x = h[nn]![nn]!;
      if (q >= 0) {
        // A real pair: standardize the 2×2 block to upper triangular.
        zz = p >= 0 ? p + zz : p - zz;
        wr[nn - 1] = x + zz;
        wr[nn] = zz !== 0 ? x - w / zz : x + zz;
        wi[nn - 1] = 0;
        wi[nn] = 0;
        x = h[nn]![nn - 1]!;
        s = Math.abs(x) + Math.abs(zz);
        p = x / s;
        q = zz / s;
        r = Math.sqrt(p * p + q * q);
        p /= r;
        q /= r;
        for (let j = nn - 1; j < n; j++) {
          zz = h[nn - 1]![j]!;
          h[nn - 1]![j] = q * zz + p * h[nn]![j]!;
          h[nn]![j] = q * h[nn]![j]! - p * zz;
        }
        for (let i = 0; i <= nn; i++) {
          zz = h[i]![nn - 1]!;
          h[i]![nn - 1] = q * zz + p * h[i]![nn]!;
          h[i]![nn] = q * h[i]![nn]! - p * zz;
        }
        for (let i = 0; i < n; i++) {
          zz = z[i]![nn - 1]!;
          z[i]![nn - 1] = q * zz + p * z[i]![nn]!;
          z[i]![nn] = q * z[i]![nn]! - p * zz;
        }
      } else {
        // A complex conjugate pair.
        wr[nn - 1] = x + p;
        wr[nn] = x + p;
        wi[nn - 1] = zz;
        wi[nn] = -zz;
      }
      nn -= 2;
      iter = 0;
    } else {
      // No convergence yet: a double-shift step.
      x = h[nn]![nn]!;
      y = 0;
      w = 0;
      if (l < nn) {
        y = h[nn - 1]![nn - 1]!;
        w = h[nn]![nn - 1]! * h[nn - 1]![nn]!;
      }
      if (iter === 10) {
        // Wilkinson's exceptional shift.
        exshift += x;
        for (let i = 0; i <= nn; i++) h[i]![i] = h[i]![i]! - x;
        s = Math.abs(h[nn]![nn - 1]!) + Math.abs(h[nn - 1]![nn - 2]!);
        x = y = 0.75 * s;
        w = -0.4375 * s * s;
      }
      if (iter === 30) {
        // MATLAB's ad hoc shift.
        s = (y - x) / 2;
        s = s * s + w;
        if (s > 0) {
          s = Math.sqrt(s);
          if (y < x) s = -s;
          s = x - w / ((y - x) / 2 + s);
          for (let i = 0; i <= nn; i++) h[i]![i] = h[i]![i]! - s;
          exshift += s;
          x = y = w = 0.964;
        }
      }
      iter++;
      if (iter > 60 * Math.max(n, 1)) throw new LinalgError("eigendecomposition failed: QR iteration did not converge");
      // Look for two consecutive small subdiagonal elements.
      let m = nn - 2;
      while (m >= l) {
        zz = h[m]![m]!;
        r = x - zz;
        s = y - zz;
        p = (r * s - w) / h[m + 1]![m]! + h[m]![m + 1]!;
        q = h[m + 1]![m + 1]! - zz - r - s;
        r = h[m + 2]![m + 1]!;
        s = Math.abs(p) + Math.abs(q) + Math.abs(r);
        p /= s;
        q /= s;
        r /= s;
        if (m === l) break;
        if (Math.abs(h[m]![m - 1]!) * (Math.abs(q) + Math.abs(r)) <
          EPS * (Math.abs(p) * (Math.abs(h[m - 1]![m - 1]!) + Math.abs(zz) + Math.abs(h[m + 1]![m + 1]!)))) break;
        m--;
      }
      for (let i = m + 2; i <= nn; i++) {
        h[i]![i - 2] = 0;
        if (i > m + 2) h[i]![i - 3] = 0;
      }
      // Double QR step on rows l..nn, columns m..nn.
      for (let k = m; k <= nn - 1; k++) {
        const notlast = k !== nn - 1;
        if (k !== m) {
          p = h[k]![k - 1]!;
          q = h[k + 1]![k - 1]!;
          r = notlast ? h[k + 2]![k - 1]! : 0;
          x = Math.abs(p) + Math.abs(q) + Math.abs(r);
          if (x === 0) continue;
          p /= x;
          q /= x;
          r /= x;
        }
        s = Math.sqrt(p * p + q * q + r * r);
        if (p < 0) s = -s;
        if (s !== 0) {
          if (k !== m) h[k]![k - 1] = -s * x;
          else if (l !== m) h[k]![k - 1] = -h[k]![k - 1]!;
          p += s;
          x = p / s;
          y = q / s;
          zz = r / s;
          q /= p;
          r /= p;
          for (let j = k; j < n; j++) {
            p = h[k]![j]! + q * h[k + 1]![j]!;
            if (notlast) {
              p += r * h[k + 2]![j]!;
              h[k + 2]![j] = h[k + 2]![j]! - p * zz;
            }
            h[k]![j] = h[k]![j]! - p * x;
            h[k + 1]![j] = h[k + 1]![j]! - p * y;
          }
          for (let i = 0; i <= Math.min(nn, k + 3); i++) {
            p = x * h[i]![k]! + y * h[i]![k + 1]!;
            if (notlast) {
              p += zz * h[i]![k + 2]!;
              h[i]![k + 2] = h[i]![k + 2]! - p * r;
            }
            h[i]![k] = h[i]![k]! - p;
            h[i]![k + 1] = h[i]![k + 1]! - p * q;
          }
          for (let i = 0; i < n; i++) {
            p = x * z[i]![k]! + y * z[i]![k + 1]!;
            if (notlast) {
              p += zz * z[i]![k + 2]!;
              z[i]![k + 2] = z[i]![k + 2]! - p * r;
            }
            z[i]![k] = z[i]![k]! - p;
            z[i]![k + 1] = z[i]![k + 1]! - p * q;
          }
        }
      }
    }
  }
}

/** Back substitution for the eigenvectors of the real Schur form h, then z ← z·(those). */
function schurVectors(h: number[][], z: number[][], n: number, wr: Float64Array, wi: Float64Array): void {
  let norm = 0;
  for (let i = 0; i < n; i++) for (let j = Math.max(i - 1, 0); j < n; j++) norm += Math.abs(h[i]![j]!);
  if (norm === 0) return;
  let p: number, q: number, r = 0, s = 0, t: number, w: number, x: number, y: number, zz = 0;
  for (let nn = n - 1; nn >= 0; nn--) {
    p = wr[nn]!;
    q = wi[nn]!;
    if (q === 0) {
      // Real vector.
      let l = nn;
      h[nn]![nn] = 1;
      for (let i = nn - 1; i >= 0; i--) {
        w = h[i]![i]! - p;
        r = 0;
        for (let j = l; j <= nn; j++) r += h[i]![j]! * h[j]![nn]!;
        if (wi[i]! < 0) {
          zz = w;
          s = r;
        } else {
          l = i;
          if (wi[i] === 0) {
            h[i]![nn] = w !== 0 ? -r / w : -r / (EPS * norm);
          } else {
            x = h[i]![i + 1]!;
            y = h[i + 1]![i]!;
            q = (wr[i]! - p) * (wr[i]! - p) + wi[i]! * wi[i]!;
            t = (x * s - zz * r) / q;
            h[i]![nn] = t;
            h[i + 1]![nn] = Math.abs(x) > Math.abs(zz) ? (-r - w * t) / x : (-s - y * t) / zz;
          }
          // Overflow control.
          t = Math.abs(h[i]![nn]!);
          if (EPS * t * t > 1) for (let j = i; j <= nn; j++) h[j]![nn] = h[j]![nn]! / t;
        }
      }
    } else if (q < 0) {
      // Complex vector for the pair (nn−1, nn), stored as (re, im) in columns nn−1, nn.
      let l = nn - 1;
      if (Math.abs(h[nn]![nn - 1]!) > Math.abs(h[nn - 1]![nn]!)) {
        h[nn - 1]![nn - 1] = q / h[nn]![nn - 1]!;
        h[nn - 1]![nn] = -(h[nn]![nn]! - p) / h[nn]![nn - 1]!;
      } else {
        const [cr, ci] = cdiv(0, -h[nn - 1]![nn]!, h[nn - 1]![nn - 1]! - p, q);
        h[nn - 1]![nn - 1] = cr;
        h[nn - 1]![nn] = ci;
      }
      h[nn]![nn - 1] = 0;
      h[nn]![nn] = 1;
      for (let i = nn - 2; i >= 0; i--) {
        let ra = 0, sa = 0;
        for (let j = l; j <= nn; j++) {
          ra += h[i]![j]! * h[j]![nn - 1]!;
          sa += h[i]![j]! * h[j]![nn]!;
        }
        w = h[i]![i]! - p;
        if (wi[i]! < 0) {
          zz = w;
          r = ra;
          s = sa;
        } else {
          l = i;
          if (wi[i] === 0) {
            const [cr, ci] = cdiv(-ra, -sa, w, q);
            h[i]![nn - 1] = cr;
            h[i]![nn] = ci;
          } else {
            x = h[i]![i + 1]!;
            y = h[i + 1]![i]!;
            let vr = (wr[i]! - p) * (wr[i]! - p) + wi[i]! * wi[i]! - q * q;
            const vi = (wr[i]! - p) * 2 * q;
            if (vr === 0 && vi === 0) vr = EPS * norm * (Math.abs(w) + Math.abs(q) + Math.abs(x) + Math.abs(y) + Math.abs(zz));
            const [cr, ci] = cdiv(x * r - zz * ra + q * sa, x * s - zz * sa - q * ra, vr, vi);
            h[i]![nn - 1] = cr;
            h[i]![nn] = ci;
            if (Math.abs(x) > Math.abs(zz) + Math.abs(q)) {
              h[i + 1]![nn - 1] = (-ra - w * h[i]![nn - 1]! + q * h[i]![nn]!) / x;
              h[i + 1]![nn] = (-sa - w * h[i]![nn]! - q * h[i]![nn - 1]!) / x;
            } else {
              const [dr, di] = cdiv(-r - y * h[i]![nn - 1]!, -s - y * h[i]![nn]!, zz, q);
              h[i + 1]![nn - 1] = dr;
              h[i + 1]![nn] = di;
            }
          }
          t = Math.max(Math.abs(h[i]![nn - 1]!), Math.abs(h[i]![nn]!));
          if (EPS * t * t > 1) {
            for (let j = i; j <= nn; j++) {
              h[j]![nn - 1] = h[j]![nn - 1]! / t;
              h[j]![nn] = h[j]![nn]! / t;
            }
          }
        }
      }
    }
  }
  // Back transformation: z ← z·(upper triangular eigenvector matrix of T).
  for (let j = n - 1; j >= 0; j--) {
    for (let i = 0; i < n; i++) {
      let acc = 0;
      for (let k = 0; k <= j; k++) acc += z[i]![k]! * h[k]![j]!;
      z[i]![j] = acc;
    }
  }
  // For a complex pair at (j, j+1) with wi[j] > 0, the vector is z[:, j] + i·z[:, j+1]; the
  // substitution above stored it at (nn−1, nn) with wi[nn] < 0, i.e. re in column j and im
  // in column j+1 for wi[j] > 0 — the layout eigGeneral reads.
}

function cdiv(xr: number, xi: number, yr: number, yi: number): [number, number] {
  if (Math.abs(yr) > Math.abs(yi)) {
    const r = yi / yr, d = yr + r * yi;
    return [(xr + r * xi) / d, (xi - r * xr) / d];
  }
  const r = yr / yi, d = yi + r * yr;
  return [(r * xr + xi) / d, (r * xi - xr) / d];
}

// ---------------------------------------------------------------------------------------------
// Complex (Hermitian) variants: the same Jacobi methods, each rotation preceded by a phase that
// makes the pivot entry real. Matrices are split complex (re, im), row-major.

export interface ComplexEighResult {
  w: Float64Array;
  vRe: Float64Array | null;
  vIm: Float64Array | null;
}

/** Hermitian eigenproblem of the matrix built from one triangle (the diagonal's imaginary parts
 *  are ignored, as LAPACK's heevd assumes them zero). */
export function eighJacobiComplex(aRe: ArrayLike<number>, aIm: ArrayLike<number>, n: number, uplo: "L" | "U", computeVectors: boolean): ComplexEighResult {
  const re = new Float64Array(n * n), im = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      // The stored entry (i, j) of the lower triangle, or (j, i) of the upper one conjugated.
      const r = uplo === "L" ? aRe[i * n + j]! : aRe[j * n + i]!;
      const m = i === j ? 0 : uplo === "L" ? aIm[i * n + j]! : -aIm[j * n + i]!;
      re[i * n + j] = r; im[i * n + j] = m;
      re[j * n + i] = r; im[j * n + i] = -m;
    }
  }
  for (let i = 0; i < n * n; i++) if (!Number.isFinite(re[i]!) || !Number.isFinite(im[i]!)) throw new LinalgError("eigendecomposition failed: the input contains NaN or infinity");
  const vr = new Float64Array(n * n), vi = new Float64Array(n * n);
  for (let i = 0; i < n; i++) vr[i * n + i] = 1;
  for (let sweep = 0; sweep < 100; sweep++) {
    let off = 0, diag = 0;
    for (let i = 0; i < n; i++) {
      diag += re[i * n + i]! ** 2;
      for (let j = i + 1; j < n; j++) off += re[i * n + j]! ** 2 + im[i * n + j]! ** 2;
    }
    if (off === 0 || off <= EPS * EPS * 1e-2 * diag) break;
    for (let p = 0; p < n - 1; p++) {
      for (let q = p + 1; q < n; q++) {
        const br = re[p * n + q]!, bi = im[p * n + q]!;
        const r = Math.hypot(br, bi);
        if (r === 0) continue;
        const app = re[p * n + p]!, aqq = re[q * n + q]!;
        if (r <= EPS * 1e-3 * Math.sqrt(Math.abs(app * aqq))) {
          re[p * n + q] = im[p * n + q] = re[q * n + p] = im[q * n + p] = 0;
          continue;
        }
        // Phase: column q times e^(−iφ), row q times e^(iφ) makes a_pq = r real.
        const cr = br / r, ci = -bi / r; // e^(−iφ)
        for (let k = 0; k < n; k++) {
          const xr = re[k * n + q]!, xi = im[k * n + q]!;
          re[k * n + q] = xr * cr - xi * ci;
          im[k * n + q] = xr * ci + xi * cr;
        }
        for (let k = 0; k < n; k++) {
          const xr = re[q * n + k]!, xi = im[q * n + k]!;
          re[q * n + k] = xr * cr + xi * ci;
          im[q * n + k] = xi * cr - xr * ci;
        }
        if (computeVectors) {
          for (let k = 0; k < n; k++) {
            const xr = vr[k * n + q]!, xi = vi[k * n + q]!;
            vr[k * n + q] = xr * cr - xi * ci;
            vi[k * n + q] = xr * ci + xi * cr;
          }
        }
        const theta = (aqq - app) / (2 * r);
        const t = (theta >= 0 ? 1 : -1) / (Math.abs(theta) + Math.sqrt(1 + theta * theta));
        const c = 1 / Math.sqrt(1 + t * t);
        const sn = t * c;
        for (const m of [re, im]) {
          for (let k = 0; k < n; k++) {
            const akp = m[k * n + p]!, akq = m[k * n + q]!;
            m[k * n + p] = c * akp - sn * akq;
            m[k * n + q] = sn * akp + c * akq;
          }
          for (let k = 0; k < n; k++) {
            const apk = m[p * n + k]!, aqk = m[q * n + k]!;
            m[p * n + k] = c * apk - sn * aqk;
            m[q * n + k] = sn * apk + c * aqk;
          }
        }
        re[p * n + q] = im[p * n + q] = re[q * n + p] = im[q * n + p] = 0;
        if (computeVectors) {
          for (const m of [vr, vi]) {
            for (let k = 0; k < n; k++) {
              const xp = m[k * n + p]!, xq = m[k * n + q]!;
              m[k * n + p] = c * xp - sn * xq;
              m[k * n + q] = sn * xp + c * xq;
            }
          }
        }
      }
    }
  }
  const order = Array.from({ length: n }, (_, i) => i).sort((i, j) => re[i * n + i]! - re[j * n + j]! || i - j);
  const w = Float64Array.from(order, (i) => re[i * n + i]!);
  if (!computeVectors) return { w, vRe: null, vIm: null };
  const oRe = new Float64Array(n * n), oIm = new Float64Array(n * n);
  order.forEach((src, dst) => {
    for (let k = 0; k < n; k++) (oRe[k * n + dst] = vr[k * n + src]!), (oIm[k * n + dst] = vi[k * n + src]!);
  });
  return { w, vRe: oRe, vIm: oIm };
}

export interface ComplexSvdResult {
  uRe: Float64Array | null;
  uIm: Float64Array | null;
  s: Float64Array;
  /** Vᴴ (n×n). */
  vtRe: Float64Array | null;
  vtIm: Float64Array | null;
}

/** A = U·diag(S)·Vᴴ for complex A (full U and Vᴴ), one-sided Jacobi with phased rotations. */
export function svdComplex(aRe: ArrayLike<number>, aIm: ArrayLike<number>, m: number, n: number, computeUv: boolean): ComplexSvdResult {
  for (let i = 0; i < m * n; i++) if (!Number.isFinite(aRe[i]!) || !Number.isFinite(aIm[i]!)) throw new LinalgError("SVD failed: the input contains NaN or infinity");
  if (m < n) {
    // Aᴴ = U'·S·V'ᴴ  ⇒  A = V'·S·U'ᴴ
    const tr = new Float64Array(n * m), ti = new Float64Array(n * m);
    for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) (tr[j * m + i] = aRe[i * n + j]!), (ti[j * m + i] = -aIm[i * n + j]!);
    const r = svdComplex(tr, ti, n, m, computeUv);
    if (!computeUv) return r;
    // U = V' = (V'ᴴ)ᴴ, Vᴴ = U'ᴴ
    const [uRe, uIm] = conjTranspose(r.vtRe!, r.vtIm!, m, m);
    const [vtRe, vtIm] = conjTranspose(r.uRe!, r.uIm!, n, n);
    return { uRe, uIm, s: r.s, vtRe, vtIm };
  }
  const cr: Float64Array[] = [], ci: Float64Array[] = [];
  for (let j = 0; j < n; j++) {
    const xr = new Float64Array(m), xi = new Float64Array(m);
    for (let i = 0; i < m; i++) (xr[i] = aRe[i * n + j]!), (xi[i] = aIm[i * n + j]!);
    cr.push(xr);
    ci.push(xi);
  }
  const vr: Float64Array[] = [], vi: Float64Array[] = [];
  for (let j = 0; j < n; j++) {
    const x = new Float64Array(n);
    x[j] = 1;
    vr.push(x);
    vi.push(new Float64Array(n));
  }
  const norm2 = (j: number) => dot(cr[j]!, cr[j]!, m) + dot(ci[j]!, ci[j]!, m);
  const norms = Array.from({ length: n }, (_, j) => norm2(j));
  const tol = EPS * m;
  const phase = (xr: Float64Array, xi: Float64Array, c: number, s: number, len: number) => {
    for (let k = 0; k < len; k++) {
      const a = xr[k]!, b = xi[k]!;
      xr[k] = a * c - b * s;
      xi[k] = a * s + b * c;
    }
  };
  for (let sweep = 0; sweep < 80; sweep++) {
    let rotated = false;
    for (let p = 0; p < n - 1; p++) {
      for (let q = p + 1; q < n; q++) {
        // γ = a_pᴴ·a_q
        let gr = 0, gi = 0;
        const pr = cr[p]!, pi = ci[p]!, qr = cr[q]!, qi = ci[q]!;
        for (let k = 0; k < m; k++) {
          gr += pr[k]! * qr[k]! + pi[k]! * qi[k]!;
          gi += pr[k]! * qi[k]! - pi[k]! * qr[k]!;
        }
        const g = Math.hypot(gr, gi);
        const alpha = norms[p]!, beta = norms[q]!;
        if (g === 0 || g <= tol * Math.sqrt(alpha * beta)) continue;
        rotated = true;
        // a_q ← a_q·e^(−iφ) makes γ real (= g).
        const c0 = gr / g, s0 = -gi / g;
        phase(qr, qi, c0, s0, m);
        phase(vr[q]!, vi[q]!, c0, s0, n);
        const zeta = (beta - alpha) / (2 * g);
        const t = (zeta >= 0 ? 1 : -1) / (Math.abs(zeta) + Math.sqrt(1 + zeta * zeta));
        const c = 1 / Math.sqrt(1 + t * t);
        const s = c * t;
        rotate(pr, qr, c, s, m);
        rotate(pi, qi, c, s, m);
        rotate(vr[p]!, vr[q]!, c, s, n);
        rotate(vi[p]!, vi[q]!, c, s, n);
        norms[p] = norm2(p);
        norms[q] = norm2(q);
      }
    }
    if (!rotated) break;
  }
  const sv = norms.map((x) => Math.sqrt(x));
  const order = Array.from({ length: n }, (_, i) => i).sort((i, j) => sv[j]! - sv[i]! || i - j);
  const s = Float64Array.from(order, (i) => sv[i]!);
  if (!computeUv) return { uRe: null, uIm: null, s, vtRe: null, vtIm: null };
  // U columns: a_j/σ_j, completed to a unitary basis (complex Gram-Schmidt on unit vectors).
  const ur: Float64Array[] = [], ui: Float64Array[] = [];
  for (const j of order) {
    if (sv[j]! > 0 && sv[j]! > s[0]! * EPS * 1e-3) {
      const inv = 1 / sv[j]!;
      ur.push(cr[j]!.map((v) => v * inv));
      ui.push(ci[j]!.map((v) => v * inv));
    } else {
      ur.push(new Float64Array(0));
      ui.push(new Float64Array(0));
    }
  }
  while (ur.length < m) (ur.push(new Float64Array(0)), ui.push(new Float64Array(0)));
  for (let slot = 0; slot < m; slot++) {
    if (ur[slot]!.length === m) continue;
    let best: [Float64Array, Float64Array] | null = null, bestNorm = -1;
    for (let e = 0; e < m; e++) {
      const xr = new Float64Array(m), xi = new Float64Array(m);
      xr[e] = 1;
      for (let pass = 0; pass < 2; pass++) {
        for (let b = 0; b < m; b++) {
          const br = ur[b]!, bi = ui[b]!;
          if (br.length !== m) continue;
          // projection coefficient bᴴ·x
          let pr = 0, pi = 0;
          for (let k = 0; k < m; k++) (pr += br[k]! * xr[k]! + bi[k]! * xi[k]!), (pi += br[k]! * xi[k]! - bi[k]! * xr[k]!);
          for (let k = 0; k < m; k++) (xr[k] = xr[k]! - (pr * br[k]! - pi * bi[k]!)), (xi[k] = xi[k]! - (pr * bi[k]! + pi * br[k]!));
        }
      }
      const nv = Math.sqrt(dot(xr, xr, m) + dot(xi, xi, m));
      if (nv > bestNorm) (bestNorm = nv), (best = [xr, xi]);
      if (nv > 0.7) break;
    }
    ur[slot] = best![0].map((v) => v / bestNorm);
    ui[slot] = best![1].map((v) => v / bestNorm);
  }
  const uRe = new Float64Array(m * m), uIm = new Float64Array(m * m);
  for (let j = 0; j < m; j++) for (let i = 0; i < m; i++) (uRe[i * m + j] = ur[j]![i]!), (uIm[i * m + j] = ui[j]![i]!);
  // Vᴴ: row r is the conjugate of V's column order[r].
  const vtRe = new Float64Array(n * n), vtIm = new Float64Array(n * n);
  order.forEach((j, r) => {
    for (let i = 0; i < n; i++) (vtRe[r * n + i] = vr[j]![i]!), (vtIm[r * n + i] = -vi[j]![i]!);
  });
  return { uRe, uIm, s, vtRe, vtIm };
}

function conjTranspose(re: Float64Array, im: Float64Array, r: number, c: number): [Float64Array, Float64Array] {
  const tr = new Float64Array(r * c), ti = new Float64Array(r * c);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) (tr[j * r + i] = re[i * c + j]!), (ti[j * r + i] = -im[i * c + j]!);
  return [tr, ti];
}

/**
 * The general complex eigenproblem: Householder reduction to Hessenberg form, single-shift
 * complex QR (Wilkinson shifts, Givens rotations) to the Schur form T = QᴴAQ, eigenvectors of
 * the triangular T by back substitution, mapped back with Q and normalized as geev's (unit norm,
 * the largest component real).
 */
export function eigComplex(aRe: ArrayLike<number>, aIm: ArrayLike<number>, n: number, computeVectors: boolean): EigResult {
  for (let i = 0; i < n * n; i++) if (!Number.isFinite(aRe[i]!) || !Number.isFinite(aIm[i]!)) throw new LinalgError("eigendecomposition failed: the input contains NaN or infinity");
  const hr = Float64Array.from(aRe as ArrayLike<number>), hi = Float64Array.from(aIm as ArrayLike<number>);
  const qr = new Float64Array(n * n), qi = new Float64Array(n * n);
  for (let i = 0; i < n; i++) qr[i * n + i] = 1;
  const at = (i: number, j: number) => i * n + j;
  // Hessenberg reduction: for column k, a reflector on rows k+1..n-1.
  const vr = new Float64Array(n), vi = new Float64Array(n);
  for (let k = 0; k < n - 2; k++) {
    let norm = 0;
    for (let i = k + 1; i < n; i++) norm += hr[at(i, k)]! ** 2 + hi[at(i, k)]! ** 2;
    norm = Math.sqrt(norm);
    if (norm === 0) continue;
    const x0r = hr[at(k + 1, k)]!, x0i = hi[at(k + 1, k)]!;
    const x0 = Math.hypot(x0r, x0i);
    // v = x + e^(i·arg x0)·‖x‖·e1, H = I − 2vvᴴ/‖v‖²
    const pr = x0 === 0 ? 1 : x0r / x0, pi = x0 === 0 ? 0 : x0i / x0;
    vr.fill(0); vi.fill(0);
    for (let i = k + 1; i < n; i++) (vr[i] = hr[at(i, k)]!), (vi[i] = hi[at(i, k)]!);
    vr[k + 1] = vr[k + 1]! + pr * norm;
    vi[k + 1] = vi[k + 1]! + pi * norm;
    let vv = 0;
    for (let i = k + 1; i < n; i++) vv += vr[i]! ** 2 + vi[i]! ** 2;
    const f = 2 / vv;
    // H ← P·H: rows k+1.., every column: h_j ← h_j − f·v·(vᴴ·h_j)
    for (let j = 0; j < n; j++) {
      let sr = 0, si = 0;
      for (let i = k + 1; i < n; i++) (sr += vr[i]! * hr[at(i, j)]! + vi[i]! * hi[at(i, j)]!), (si += vr[i]! * hi[at(i, j)]! - vi[i]! * hr[at(i, j)]!);
      sr *= f; si *= f;
      for (let i = k + 1; i < n; i++) (hr[at(i, j)] = hr[at(i, j)]! - (vr[i]! * sr - vi[i]! * si)), (hi[at(i, j)] = hi[at(i, j)]! - (vr[i]! * si + vi[i]! * sr));
    }
    // H ← H·P and Q ← Q·P: columns k+1..: row_i ← row_i − f·(row_i·v)·vᴴ
    for (const [mr, mi] of [[hr, hi], [qr, qi]] as const) {
      for (let i = 0; i < n; i++) {
        let sr = 0, si = 0;
        for (let j = k + 1; j < n; j++) (sr += mr[at(i, j)]! * vr[j]! - mi[at(i, j)]! * vi[j]!), (si += mr[at(i, j)]! * vi[j]! + mi[at(i, j)]! * vr[j]!);
        sr *= f; si *= f;
        for (let j = k + 1; j < n; j++) (mr[at(i, j)] = mr[at(i, j)]! - (sr * vr[j]! + si * vi[j]!)), (mi[at(i, j)] = mi[at(i, j)]! - (si * vr[j]! - sr * vi[j]!));
      }
    }
    for (let i = k + 2; i < n; i++) hr[at(i, k)] = hi[at(i, k)] = 0;
  }
  // Shifted QR on the active window [lo, hi], deflating from the bottom.
  const cabs = (i: number, j: number) => Math.hypot(hr[at(i, j)]!, hi[at(i, j)]!);
  let end = n - 1;
  let iter = 0;
  const cs = new Float64Array(3 * n); // per k: c, s_re, s_im
  while (end > 0) {
    let lo = end;
    while (lo > 0) {
      const s = cabs(lo - 1, lo - 1) + cabs(lo, lo);
      if (cabs(lo, lo - 1) <= EPS * (s === 0 ? 1 : s)) {
        hr[at(lo, lo - 1)] = hi[at(lo, lo - 1)] = 0;
        break;
      }
      lo--;
    }
    if (lo === end) {
      end--;
      iter = 0;
      continue;
    }
    if (++iter > 60 * n) throw new LinalgError("eigendecomposition failed: QR iteration did not converge");
    // Wilkinson shift: the eigenvalue of the trailing 2×2 nearer to its last diagonal entry.
    const ar = hr[at(end - 1, end - 1)]!, ai = hi[at(end - 1, end - 1)]!;
    const br = hr[at(end - 1, end)]!, bi = hi[at(end - 1, end)]!;
    const cr0 = hr[at(end, end - 1)]!, ci0 = hi[at(end, end - 1)]!;
    const dr = hr[at(end, end)]!, di = hi[at(end, end)]!;
    let mur: number, mui: number;
    if (iter % 11 === 0) {
      // Exceptional shift against cycles.
      mur = dr + 0.75 * Math.abs(cr0);
      mui = di;
    } else {
      const tr = (ar - dr) / 2, ti = (ai - di) / 2;
      // disc = sqrt(t² + b·c)
      const bcr = br * cr0 - bi * ci0, bci = br * ci0 + bi * cr0;
      const xr = tr * tr - ti * ti + bcr, xi = 2 * tr * ti + bci;
      const mod = Math.hypot(xr, xi);
      let sr = Math.sqrt((mod + xr) / 2), si = Math.sqrt(Math.max(0, (mod - xr) / 2));
      if (xi < 0) si = -si;
      // choose the root making d + t ± disc nearer to d
      if (tr * sr + ti * si < 0) (sr = -sr), (si = -si);
      // μ = d − b·c/(t + disc)
      const denr = tr + sr, deni = ti + si;
      const den = denr * denr + deni * deni;
      if (den === 0) {
        mur = dr; mui = di;
      } else {
        const qr0 = (bcr * denr + bci * deni) / den, qi0 = (bci * denr - bcr * deni) / den;
        mur = dr - qr0; mui = di - qi0;
      }
    }
    for (let k = lo; k <= end; k++) (hr[at(k, k)] = hr[at(k, k)]! - mur), (hi[at(k, k)] = hi[at(k, k)]! - mui);
    // Row rotations G_k zeroing h[k+1][k], k = lo..end−1, over columns k..n−1.
    for (let k = lo; k < end; k++) {
      const xr = hr[at(k, k)]!, xi = hi[at(k, k)]!, yr = hr[at(k + 1, k)]!, yi = hi[at(k + 1, k)]!;
      const xa = Math.hypot(xr, xi), nrm = Math.hypot(xa, Math.hypot(yr, yi));
      let c: number, sr: number, si: number;
      if (nrm === 0) (c = 1), (sr = 0), (si = 0);
      else if (xa === 0) (c = 0), (sr = yr / nrm), (si = -yi / nrm);
      else {
        c = xa / nrm;
        // s = (x/|x|)·conj(y)/nrm
        const ur = xr / xa, ui = xi / xa;
        sr = (ur * yr + ui * yi) / nrm;
        si = (ui * yr - ur * yi) / nrm;
      }
      cs[3 * k] = c; cs[3 * k + 1] = sr; cs[3 * k + 2] = si;
      // [row k; row k+1] ← [[c, s], [−conj s, c]]·[row k; row k+1]
      for (let j = k; j < n; j++) {
        const pr = hr[at(k, j)]!, pi = hi[at(k, j)]!, qr1 = hr[at(k + 1, j)]!, qi1 = hi[at(k + 1, j)]!;
        hr[at(k, j)] = c * pr + (sr * qr1 - si * qi1);
        hi[at(k, j)] = c * pi + (sr * qi1 + si * qr1);
        hr[at(k + 1, j)] = -(sr * pr + si * pi) + c * qr1;
        hi[at(k + 1, j)] = -(sr * pi - si * pr) + c * qi1;
      }
    }
    // Column rotations Gᴴ on columns k, k+1 (rows 0..min(k+2, end)), and on Q (all rows).
    for (let k = lo; k < end; k++) {
      const c = cs[3 * k]!, sr = cs[3 * k + 1]!, si = cs[3 * k + 2]!;
      const rot = (mr: Float64Array, mi: Float64Array, rows: number) => {
        for (let i = 0; i < rows; i++) {
          const pr = mr[at(i, k)]!, pi = mi[at(i, k)]!, qr1 = mr[at(i, k + 1)]!, qi1 = mi[at(i, k + 1)]!;
          // [col k, col k+1] ← [col k, col k+1]·[[c, −s], [conj s, c]]
          mr[at(i, k)] = c * pr + (sr * qr1 + si * qi1);
          mi[at(i, k)] = c * pi + (sr * qi1 - si * qr1);
          mr[at(i, k + 1)] = -(sr * pr - si * pi) + c * qr1;
          mi[at(i, k + 1)] = -(sr * pi + si * pr) + c * qi1;
        }
      };
      rot(hr, hi, Math.min(k + 2, end) + 1);
      rot(qr, qi, n);
    }
    for (let k = lo; k <= end; k++) (hr[at(k, k)] = hr[at(k, k)]! + mur), (hi[at(k, k)] = hi[at(k, k)]! + mui);
  }
  const wr = new Float64Array(n), wi = new Float64Array(n);
  for (let i = 0; i < n; i++) (wr[i] = hr[at(i, i)]!), (wi[i] = hi[at(i, i)]!);
  if (!computeVectors) return { wr, wi, vr: null, vi: null };
  // Eigenvectors of T (upper triangular): x_k = 1, x_j = 0 for j > k, back substitution above.
  let tnorm = 0;
  for (let i = 0; i < n; i++) for (let j = i; j < n; j++) tnorm = Math.max(tnorm, cabs(i, j));
  const small = EPS * Math.max(tnorm, Number.MIN_VALUE);
  const xr = new Float64Array(n * n), xi = new Float64Array(n * n);
  for (let k = 0; k < n; k++) {
    xr[at(k, k)] = 1;
    for (let i = k - 1; i >= 0; i--) {
      let sr = 0, si = 0;
      for (let j = i + 1; j <= k; j++) {
        const tr = hr[at(i, j)]!, ti = hi[at(i, j)]!, ur = xr[at(j, k)]!, ui = xi[at(j, k)]!;
        sr += tr * ur - ti * ui;
        si += tr * ui + ti * ur;
      }
      // (t_ii − λ_k)·x_i = −s
      let dr = hr[at(i, i)]! - wr[k]!, di = hi[at(i, i)]! - wi[k]!;
      if (Math.hypot(dr, di) < small) dr = small, di = 0;
      const den = dr * dr + di * di;
      xr[at(i, k)] = -(sr * dr + si * di) / den;
      xi[at(i, k)] = -(si * dr - sr * di) / den;
    }
  }
  // V = Q·X, then each column normalized with its largest component real and positive.
  const outR = new Float64Array(n * n), outI = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let k = 0; k < n; k++) {
    let sr = 0, si = 0;
    for (let j = 0; j <= k; j++) (sr += qr[at(i, j)]! * xr[at(j, k)]! - qi[at(i, j)]! * xi[at(j, k)]!), (si += qr[at(i, j)]! * xi[at(j, k)]! + qi[at(i, j)]! * xr[at(j, k)]!);
    outR[at(i, k)] = sr;
    outI[at(i, k)] = si;
  }
  for (let k = 0; k < n; k++) {
    let nrm = 0, big = -1, bi = 0;
    for (let i = 0; i < n; i++) {
      const m = outR[at(i, k)]! ** 2 + outI[at(i, k)]! ** 2;
      nrm += m;
      if (m > big) (big = m), (bi = i);
    }
    nrm = Math.sqrt(nrm) || 1;
    const pr = outR[at(bi, k)]!, pi = outI[at(bi, k)]!, pm = Math.hypot(pr, pi) || 1;
    const cr = pr / pm, ci = -pi / pm;
    for (let i = 0; i < n; i++) {
      const a = outR[at(i, k)]! / nrm, b = outI[at(i, k)]! / nrm;
      outR[at(i, k)] = a * cr - b * ci;
      outI[at(i, k)] = a * ci + b * cr;
    }
    outI[at(bi, k)] = 0;
  }
  return { wr, wi, vr: outR, vi: outI };
}
