// Dense factorizations in float64 on one row-major matrix (the CPU backend loops over batches):
// LU with partial pivoting, triangular and general inverses, Cholesky, Householder QR. The
// conventions are LAPACK's (getrf pivots, potrf's stop at the first non-positive pivot, geqrf's
// reflector signs), so results match MLX's, which calls LAPACK, up to rounding.

/** A failure LAPACK reports through `info` (a zero pivot …): the op turns it into its error. */
export class LinalgError extends Error {}

export interface LuResult {
  /** L (unit lower, below the diagonal) and U (upper) packed in an m×n matrix. */
  lu: Float64Array;
  /** getrf's 0-based pivots: row i was swapped with row pivots[i], in order (min(m, n)). */
  pivots: Int32Array;
  /** 1-based index of the first exactly zero pivot (0 when none), as getrf's info. */
  info: number;
}

/** LU with partial pivoting (getrf): P·A = L·U. */
export function luFactor(a: ArrayLike<number>, m: number, n: number): LuResult {
  const lu = Float64Array.from(a as ArrayLike<number>);
  const k = Math.min(m, n);
  const pivots = new Int32Array(k);
  let info = 0;
  for (let j = 0; j < k; j++) {
    // The first row of largest magnitude (idamax), NaN never wins.
    let p = j;
    let best = Math.abs(lu[j * n + j]!);
    for (let i = j + 1; i < m; i++) {
      const v = Math.abs(lu[i * n + j]!);
      if (v > best || (Number.isNaN(best) && !Number.isNaN(v))) (best = v), (p = i);
    }
    pivots[j] = p;
    const pivot = lu[p * n + j]!;
    if (pivot === 0) {
      if (info === 0) info = j + 1;
      continue;
    }
    if (p !== j) {
      for (let c = 0; c < n; c++) {
        const t = lu[j * n + c]!;
        lu[j * n + c] = lu[p * n + c]!;
        lu[p * n + c] = t;
      }
    }
    const inv = 1 / pivot;
    for (let i = j + 1; i < m; i++) {
      const l = (lu[i * n + j]! *= inv);
      if (l === 0) continue;
      const ri = i * n, rj = j * n;
      for (let c = j + 1; c < n; c++) lu[ri + c]! -= l * lu[rj + c]!;
    }
  }
  return { lu, pivots, info };
}

/** The row order of P·A (perm[i] = the row of A at position i) from getrf pivots. */
export function permutationFromPivots(pivots: Int32Array, m: number): Int32Array {
  const perm = new Int32Array(m);
  for (let i = 0; i < m; i++) perm[i] = i;
  for (let i = 0; i < pivots.length; i++) {
    const p = pivots[i]!;
    const t = perm[i]!;
    perm[i] = perm[p]!;
    perm[p] = t;
  }
  return perm;
}

/**
 * Inverse of the lower (or upper) triangle of an n×n matrix (trtri); the other triangle of the
 * result is zero. Throws LinalgError naming the first zero diagonal entry (1-based, as info).
 */
export function triInverse(a: ArrayLike<number>, n: number, upper: boolean): Float64Array {
  for (let i = 0; i < n; i++) if (a[i * n + i] === 0) throw new LinalgError(`triangular inversion failed: the diagonal entry ${i + 1} is zero`);
  const x = new Float64Array(n * n);
  if (!upper) {
    // Column j of X solves L·x = e_j (forward substitution, rows j..n-1).
    for (let j = 0; j < n; j++) {
      x[j * n + j] = 1 / a[j * n + j]!;
      for (let i = j + 1; i < n; i++) {
        let s = 0;
        for (let k = j; k < i; k++) s += a[i * n + k]! * x[k * n + j]!;
        x[i * n + j] = -s / a[i * n + i]!;
      }
    }
  } else {
    for (let j = n - 1; j >= 0; j--) {
      x[j * n + j] = 1 / a[j * n + j]!;
      for (let i = j - 1; i >= 0; i--) {
        let s = 0;
        for (let k = i + 1; k <= j; k++) s += a[i * n + k]! * x[k * n + j]!;
        x[i * n + j] = -s / a[i * n + i]!;
      }
    }
  }
  return x;
}

/** General inverse through getrf (+ solves with the factors). Throws LinalgError when singular. */
export function inverse(a: ArrayLike<number>, n: number): Float64Array {
  const { lu, pivots, info } = luFactor(a, n, n);
  if (info !== 0) throw new LinalgError(`LU factorization failed: the matrix is singular (U[${info - 1},${info - 1}] is zero)`);
  const perm = permutationFromPivots(pivots, n);
  const x = new Float64Array(n * n);
  const col = new Float64Array(n);
  for (let j = 0; j < n; j++) {
    // Solve L·U·x = P·e_j: (P·e_j)[i] = 1 where perm[i] = j.
    col.fill(0);
    for (let i = 0; i < n; i++) if (perm[i] === j) col[i] = 1;
    for (let i = 0; i < n; i++) {
      let s = col[i]!;
      for (let k = 0; k < i; k++) s -= lu[i * n + k]! * col[k]!;
      col[i] = s;
    }
    for (let i = n - 1; i >= 0; i--) {
      let s = col[i]!;
      for (let k = i + 1; k < n; k++) s -= lu[i * n + k]! * col[k]!;
      col[i] = s / lu[i * n + i]!;
    }
    for (let i = 0; i < n; i++) x[i * n + j] = col[i]!;
  }
  return x;
}

/**
 * Cholesky factor of the lower (upper = false: A = L·Lᵀ, reading A's lower triangle) or upper
 * (A = Uᵀ·U, reading the upper triangle) part. As LAPACK's potrf — and MLX, which does not
 * check its info — a non-positive pivot stops the factorization: that diagonal entry keeps the
 * non-positive value, the columns after it keep A's entries, and no error is raised.
 */
export function cholesky(a: ArrayLike<number>, n: number, upper: boolean): Float64Array {
  // Work on the lower triangle L (for upper, on Aᵀ's lower triangle and transpose at the end).
  const l = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let j = 0; j <= i; j++) l[i * n + j] = upper ? a[j * n + i]! : a[i * n + j]!;
  for (let j = 0; j < n; j++) {
    let d = l[j * n + j]!;
    for (let k = 0; k < j; k++) d -= l[j * n + k]! * l[j * n + k]!;
    if (!(d > 0)) {
      l[j * n + j] = d;
      break;
    }
    d = Math.sqrt(d);
    l[j * n + j] = d;
    for (let i = j + 1; i < n; i++) {
      let s = l[i * n + j]!;
      for (let k = 0; k < j; k++) s -= l[i * n + k]! * l[j * n + k]!;
      l[i * n + j] = s / d;
    }
  }
  if (!upper) return l;
  const u = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let j = i; j < n; j++) u[i * n + j] = l[j * n + i]!;
  return u;
}

export interface QrResult {
  /** m×k, orthonormal columns (k = min(m, n)). */
  q: Float64Array;
  /** k×n upper triangular. */
  r: Float64Array;
}

/**
 * Householder QR (geqrf + orgqr): reflector j maps column j below the diagonal onto
 * β·e_j with β = −sign(α)·‖(α, x)‖ (dlarfg), so R's diagonal has the sign opposite to the
 * pivot column's leading entry, as in LAPACK.
 */
export function householderQr(a: ArrayLike<number>, m: number, n: number): QrResult {
  const k = Math.min(m, n);
  const w = Float64Array.from(a as ArrayLike<number>);
  const taus = new Float64Array(k);
  // Reflector j: v = (1, w[j+1..m-1, j]) stored below the diagonal.
  for (let j = 0; j < k; j++) {
    const alpha = w[j * n + j]!;
    let xnorm = 0;
    {
      let scale = 0, ssq = 1; // dnrm2: scaled sum of squares, no overflow
      for (let i = j + 1; i < m; i++) {
        const v = Math.abs(w[i * n + j]!);
        if (v === 0) continue;
        if (scale < v) (ssq = 1 + ssq * (scale / v) ** 2), (scale = v);
        else ssq += (v / scale) ** 2;
      }
      xnorm = scale * Math.sqrt(ssq);
    }
    if (xnorm === 0) {
      taus[j] = 0;
      continue;
    }
    const beta = -Math.sign(alpha || 1) * Math.hypot(alpha, xnorm);
    taus[j] = (beta - alpha) / beta;
    const scal = 1 / (alpha - beta);
    for (let i = j + 1; i < m; i++) w[i * n + j]! *= scal;
    w[j * n + j] = beta;
    // Apply H = I − τ v vᵀ to the trailing columns.
    const tau = taus[j]!;
    for (let c = j + 1; c < n; c++) {
      let s = w[j * n + c]!;
      for (let i = j + 1; i < m; i++) s += w[i * n + j]! * w[i * n + c]!;
      s *= tau;
      w[j * n + c]! -= s;
      for (let i = j + 1; i < m; i++) w[i * n + c]! -= s * w[i * n + j]!;
    }
  }
  const r = new Float64Array(k * n);
  for (let i = 0; i < k; i++) for (let c = i; c < n; c++) r[i * n + c] = w[i * n + c]!;
  // Q = H_0 H_1 … H_{k-1} applied to the first k columns of the identity (backwards, orgqr).
  const q = new Float64Array(m * k);
  for (let i = 0; i < k; i++) q[i * k + i] = 1;
  for (let j = k - 1; j >= 0; j--) {
    const tau = taus[j]!;
    if (tau === 0) continue;
    for (let c = j; c < k; c++) {
      let s = q[j * k + c]!;
      for (let i = j + 1; i < m; i++) s += w[i * n + j]! * q[i * k + c]!;
      s *= tau;
      q[j * k + c]! -= s;
      for (let i = j + 1; i < m; i++) q[i * k + c]! -= s * w[i * n + j]!;
    }
  }
  return { q, r };
}
