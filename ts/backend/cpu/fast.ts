// float64 references of the mg.fast ops, on dense row-major values: the CPU device's kernels for
// the fused primitives and the oracle the GPU kernels are tested against. Each computes the exact
// formula in float64 (the caller rounds once to the output dtype). Semantics follow MLX's own
// composition (mlx/fast.cpp): eps is a float32 constant, a boolean or causal mask hides a score
// behind a finite minimum (a row hiding every key attends uniformly), an additive mask adds.

// ---------------------------------------------------------------------------------------------
// rms_norm / layer_norm over rows of length n

export interface NormRefOptions {
  layer: boolean;
  eps: number;
  /**
   * Rounds to the output dtype: the affine part rounds as MLX's kernels (and the GPU's) do,
   * out = T(w·T(ŷ)) (+ b, rounded again), so a product that overflows a 16-bit type overflows
   * here too. Absent: no rounding (float64).
   */
  round?: (v: number) => number;
}

/** Per row: μ (0 for rms) and 1/σ. */
function normStats(x: Float64Array, n: number, r: number, o: NormRefOptions): [number, number] {
  const eps = Math.fround(o.eps);
  let mean = 0;
  if (o.layer) {
    for (let j = 0; j < n; j++) mean += x[r * n + j]!;
    mean /= n;
  }
  let ss = 0;
  for (let j = 0; j < n; j++) {
    const d = x[r * n + j]! - mean;
    ss += d * d;
  }
  return [mean, 1 / Math.sqrt(ss / n + eps)];
}

/** y = ŷ·w + b with ŷ = (x − μ)/σ (layer) or x/σ (rms). w, b: length n or null. */
export function normRows(x: Float64Array, n: number, w: Float64Array | null, b: Float64Array | null, o: NormRefOptions): Float64Array {
  const rows = n === 0 ? 0 : x.length / n;
  const out = new Float64Array(x.length);
  for (let r = 0; r < rows; r++) {
    const [mean, inv] = normStats(x, n, r, o);
    const round = o.round ?? ((v: number) => v);
    for (let j = 0; j < n; j++) {
      let y = round((x[r * n + j]! - mean) * inv);
      if (w) y = round(y * w[j]!);
      if (b && o.layer) y = round(y + b[j]!);
      out[r * n + j] = y;
    }
  }
  return out;
}

/**
 * Backward of normRows for cotangent g. With u = w·g:
 *   dx = (u − [layer] mean(u) − ŷ·mean(u·ŷ)) / σ,  dw = Σ_rows g·ŷ,  db = Σ_rows g.
 */
export function normRowsVjp(
  x: Float64Array,
  n: number,
  w: Float64Array | null,
  g: Float64Array,
  o: NormRefOptions,
): { dx: Float64Array; dw: Float64Array; db: Float64Array } {
  const rows = n === 0 ? 0 : x.length / n;
  const dx = new Float64Array(x.length);
  const dw = new Float64Array(n);
  const db = new Float64Array(n);
  for (let r = 0; r < rows; r++) {
    const [mean, inv] = normStats(x, n, r, o);
    let su = 0;
    let suy = 0;
    for (let j = 0; j < n; j++) {
      const u = (w ? w[j]! : 1) * g[r * n + j]!;
      const yhat = (x[r * n + j]! - mean) * inv;
      su += u;
      suy += u * yhat;
      dw[j] = dw[j]! + g[r * n + j]! * yhat;
      db[j] = db[j]! + g[r * n + j]!;
    }
    const meanU = o.layer ? su / n : 0;
    for (let j = 0; j < n; j++) {
      const u = (w ? w[j]! : 1) * g[r * n + j]!;
      const yhat = (x[r * n + j]! - mean) * inv;
      dx[r * n + j] = (u - meanU - yhat * (suy / n)) * inv;
    }
  }
  return { dx, dw, db };
}

// ---------------------------------------------------------------------------------------------
// rope

export interface RopeRefOptions {
  dims: number;
  traditional: boolean;
  /** The frequency base, or null when freqs is given. */
  base: number | null;
  scale: number;
  /** One offset, or one per batch entry (shape[0]). */
  offsets: readonly number[];
  freqs: Float64Array | null;
  /** false: the inverse rotation (the backward pass). */
  forward: boolean;
}

/** Rotary embedding of x with `shape` (B, …, T, D). */
export function ropeRef(x: Float64Array, shape: readonly number[], o: RopeRefOptions): Float64Array {
  const D = shape[shape.length - 1]!;
  const T = shape[shape.length - 2]!;
  const rows = D === 0 ? 0 : x.length / D;
  const perBatch = shape[0] === 0 ? 1 : rows / shape[0]!;
  const half = o.dims / 2;
  const out = Float64Array.from(x);
  const scale = Math.fround(o.scale);
  for (let r = 0; r < rows; r++) {
    const t = r % T;
    const b = Math.floor(r / perBatch);
    const position = scale * (t + o.offsets[o.offsets.length === 1 ? 0 : b]!);
    for (let i = 0; i < half; i++) {
      const invFreq = o.freqs ? 1 / o.freqs[i]! : Math.pow(Math.fround(o.base!), -i / half);
      const theta = position * invFreq;
      const c = Math.cos(theta);
      const s = o.forward ? Math.sin(theta) : -Math.sin(theta);
      const j1 = o.traditional ? 2 * i : i;
      const j2 = o.traditional ? 2 * i + 1 : i + half;
      const x1 = x[r * D + j1]!;
      const x2 = x[r * D + j2]!;
      out[r * D + j1] = x1 * c - x2 * s;
      out[r * D + j2] = x1 * s + x2 * c;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// cross entropy with class-index targets

function rowLogsumexp(x: Float64Array, n: number, r: number): number {
  let m = -Infinity;
  for (let j = 0; j < n; j++) {
    const v = x[r * n + j]!;
    if (v !== v) return NaN;
    if (v > m) m = v;
  }
  if (!Number.isFinite(m)) return m;
  let s = 0;
  for (let j = 0; j < n; j++) s += Math.exp(x[r * n + j]! - m);
  return m + Math.log(s);
}

/** loss[r] = logsumexp(x[r]) − x[r, t_r]; NaN for a target outside [0, n). */
export function crossEntropyRef(x: Float64Array, n: number, targets: ArrayLike<number>): Float64Array {
  const out = new Float64Array(targets.length);
  for (let r = 0; r < targets.length; r++) {
    const t = targets[r]!;
    out[r] = t >= 0 && t < n && Number.isInteger(t) ? rowLogsumexp(x, n, r) - x[r * n + t]! : NaN;
  }
  return out;
}

/** dx[r, j] = g[r]·(softmax(x[r])_j − [j = t_r]). */
export function crossEntropyVjpRef(x: Float64Array, n: number, targets: ArrayLike<number>, g: ArrayLike<number>): Float64Array {
  const dx = new Float64Array(x.length);
  for (let r = 0; r < targets.length; r++) {
    const t = targets[r]!;
    const valid = t >= 0 && t < n && Number.isInteger(t);
    const lse = rowLogsumexp(x, n, r);
    for (let j = 0; j < n; j++) {
      dx[r * n + j] = valid ? g[r]! * (Math.exp(x[r * n + j]! - lse) - (j === t ? 1 : 0)) : NaN;
    }
  }
  return dx;
}

// ---------------------------------------------------------------------------------------------
// scaled dot-product attention

export interface SdpaDims {
  B: number;
  Hq: number;
  Hkv: number;
  qL: number;
  kL: number;
  Dk: number;
  Dv: number;
}

export type SdpaRefMask =
  | { kind: "none" }
  | { kind: "causal" }
  /** Dense [B, Hq, qL, kL] values: nonzero = visible (boolean) or the added value (additive). */
  | { kind: "bool" | "additive"; values: ArrayLike<number> };

export interface SdpaRefOptions {
  scale: number;
  mask: SdpaRefMask;
  /** One logit per query head, or null. */
  sinks: ArrayLike<number> | null;
}

/** A hidden score: finite, below every real one, equal across a row (so an all-hidden row is uniform). */
const HIDDEN = -1e300;
/** The kernels' hidden score in the log2 domain (their statistics use it). */
const HIDDEN_LOG2 = -3.0e38;

/**
 * One query row's softmax, reusing the caller's buffers: s[j] the score (HIDDEN where a mask hid
 * it), p[j] the probability, hidden[j] = 1 where hidden. Returns the end of the keys that can carry
 * weight: hidden keys past the last visible one are skipped (their probability is exactly zero)
 * unless every key is hidden, when the row attends uniformly. Also returns the row's statistics
 * as the fused kernels save them (log2-domain maximum with the sink, and the sum).
 */
class SdpaRows {
  readonly s: Float64Array;
  readonly p: Float64Array;
  readonly hidden: Uint8Array;
  m2 = 0;
  l = 0;
  constructor(
    readonly q: Float64Array,
    readonly k: Float64Array,
    readonly d: SdpaDims,
    readonly o: SdpaRefOptions,
  ) {
    this.s = new Float64Array(d.kL);
    this.p = new Float64Array(d.kL);
    this.hidden = new Uint8Array(d.kL);
  }

  row(b: number, h: number, i: number): number {
    const { q, k, d, o, s, p, hidden } = this;
    const hk = Math.floor(h / (d.Hq / d.Hkv));
    const qo = ((b * d.Hq + h) * d.qL + i) * d.Dk;
    const kBase = (b * d.Hkv + hk) * d.kL * d.Dk;
    const mBase = ((b * d.Hq + h) * d.qL + i) * d.kL;
    const m = o.mask;
    const limit = i + d.kL - d.qL; // causal: the last visible key
    let end = m.kind === "causal" && limit >= 0 ? Math.min(d.kL, limit + 1) : d.kL;
    let visible = 0;
    for (let j = 0; j < end; j++) {
      const hid = (m.kind === "causal" && j > limit) || (m.kind === "bool" && !m.values[mBase + j]);
      hidden[j] = hid ? 1 : 0;
      if (hid) {
        s[j] = HIDDEN;
        continue;
      }
      visible++;
      const ko = kBase + j * d.Dk;
      let dot = 0;
      for (let c = 0; c < d.Dk; c++) dot += q[qo + c]! * k[ko + c]!;
      s[j] = m.kind === "additive" ? dot * o.scale + m.values[mBase + j]! : dot * o.scale;
    }
    if (visible === 0) {
      // Every key hidden: all scores equal the finite minimum, so the row is uniform over all keys.
      end = d.kL;
      for (let j = 0; j < end; j++) {
        hidden[j] = 1;
        s[j] = HIDDEN;
      }
    } else if (end < d.kL) {
      // Every visible score −inf under a causal mask: the keys it hides (finite minimum scores, as
      // MLX's mask) win the softmax, as on the GPU and in MLX.
      let allNegInf = true;
      for (let j = 0; j < end && allNegInf; j++) allNegInf = s[j] === -Infinity;
      if (allNegInf) {
        for (let j = end; j < d.kL; j++) {
          hidden[j] = 1;
          s[j] = HIDDEN;
        }
        end = d.kL;
      }
    }
    // softmax over [sink, s_0 … s_end−1], as MLX's composition (hidden keys past `end` weigh 0)
    const sink = o.sinks ? o.sinks[h]! : null;
    let mx = sink ?? -Infinity;
    let nan = false;
    for (let j = 0; j < end; j++) {
      const v = s[j]!;
      if (v !== v) nan = true;
      if (v > mx) mx = v;
    }
    if (nan || mx === -Infinity || mx === Infinity) {
      p.fill(NaN, 0, end);
      this.m2 = nan ? NaN : mx * Math.LOG2E;
      this.l = mx === -Infinity ? 0 : NaN;
      return end;
    }
    let total = sink === null ? 0 : Math.exp(sink - mx);
    for (let j = 0; j < end; j++) total += p[j] = Math.exp(s[j]! - mx);
    for (let j = 0; j < end; j++) p[j] = p[j]! / total;
    // The kernels' statistics: maximum in the log2 domain (hidden = HIDDEN_LOG2), sum of exp2.
    this.m2 = (visible === 0 || mx === HIDDEN) && (sink === null || sink * Math.LOG2E < HIDDEN_LOG2) ? HIDDEN_LOG2 : mx * Math.LOG2E;
    this.l = total;
    return end;
  }
}

/** O [B, Hq, qL, Dv] from dense q [B, Hq, qL, Dk], k [B, Hkv, kL, Dk], v [B, Hkv, kL, Dv]. */
export function sdpaRef(q: Float64Array, k: Float64Array, v: Float64Array, d: SdpaDims, o: SdpaRefOptions): Float64Array {
  return sdpaForward(q, k, v, d, o).out;
}

/**
 * The forward and the per-row statistics the fused kernels save for the backward, computed as
 * they compute them: m = max over the row's log2-domain scores (score·log2 e; a hidden score is
 * −3e38, the kernels' finite minimum; the sink counts), l = Σ exp2(s − m). [B, Hq, qL, 2].
 */
export function sdpaForward(q: Float64Array, k: Float64Array, v: Float64Array, d: SdpaDims, o: SdpaRefOptions): { out: Float64Array; stats: Float64Array } {
  const out = new Float64Array(d.B * d.Hq * d.qL * d.Dv);
  const stats = new Float64Array(d.B * d.Hq * d.qL * 2);
  const rows = new SdpaRows(q, k, d, o);
  const vNonFinite = new Uint8Array(d.kL);
  const gqa = d.Hq / d.Hkv;
  for (let b = 0; b < d.B; b++) {
    for (let h = 0; h < d.Hq; h++) {
      const vBase = (b * d.Hkv + Math.floor(h / gqa)) * d.kL * d.Dv;
      // Every key enters the weighted sum, as on the GPU and in MLX: a zero weight times an infinite
      // or NaN value is NaN. Zero weights are skipped only for keys whose values are all finite.
      for (let j = 0; j < d.kL; j++) {
        let bad = 0;
        for (let c = 0; c < d.Dv; c++) if (!Number.isFinite(v[vBase + j * d.Dv + c]!)) bad = 1;
        vNonFinite[j] = bad;
      }
      for (let i = 0; i < d.qL; i++) {
        const end = rows.row(b, h, i);
        const p = rows.p;
        const r = (b * d.Hq + h) * d.qL + i;
        const oo = r * d.Dv;
        for (let j = 0; j < d.kL; j++) {
          const pj = j < end ? p[j]! : 0;
          if (pj === 0 && !vNonFinite[j]) continue;
          const vo = vBase + j * d.Dv;
          for (let c = 0; c < d.Dv; c++) out[oo + c] = out[oo + c]! + pj * v[vo + c]!;
        }
        stats[2 * r] = rows.m2;
        stats[2 * r + 1] = rows.l;
      }
    }
  }
  return { out, stats };
}

/**
 * Gradients of sdpaRef for cotangent dO: with P the probabilities, dP = dO·Vᵀ, D = rowsum(P∘dP),
 * dS = P∘(dP − D) (zero where a mask hid the score), dQ = scale·dS·K, dK = scale·dSᵀ·Q, dV = Pᵀ·dO.
 */
export function sdpaVjpRef(
  q: Float64Array,
  k: Float64Array,
  v: Float64Array,
  d: SdpaDims,
  o: SdpaRefOptions,
  dO: Float64Array,
): { dq: Float64Array; dk: Float64Array; dv: Float64Array } {
  const dq = new Float64Array(q.length);
  const dk = new Float64Array(k.length);
  const dv = new Float64Array(v.length);
  const rows = new SdpaRows(q, k, d, o);
  const dp = new Float64Array(d.kL);
  const gqa = d.Hq / d.Hkv;
  for (let b = 0; b < d.B; b++) {
    for (let h = 0; h < d.Hq; h++) {
      const hk = Math.floor(h / gqa);
      const vBase = (b * d.Hkv + hk) * d.kL * d.Dv;
      const kBase = (b * d.Hkv + hk) * d.kL * d.Dk;
      for (let i = 0; i < d.qL; i++) {
        const end = rows.row(b, h, i);
        const { p, hidden } = rows;
        const go = ((b * d.Hq + h) * d.qL + i) * d.Dv;
        const qo = ((b * d.Hq + h) * d.qL + i) * d.Dk;
        // Keys past `end` weigh 0; like hidden keys they matter only through non-finite values
        // (0·inf = NaN, as MLX's composition and the GPU): a finite term adds ±0 and changes no bit.
        let D = 0;
        for (let j = 0; j < d.kL; j++) {
          const pj = j < end ? p[j]! : 0;
          const vo = vBase + j * d.Dv;
          let acc = 0;
          for (let c = 0; c < d.Dv; c++) {
            const g = dO[go + c]!;
            acc += g * v[vo + c]!;
            dv[vo + c] = dv[vo + c]! + pj * g;
          }
          dp[j] = acc;
          D += pj * acc;
        }
        for (let j = 0; j < d.kL; j++) {
          let ds: number;
          if (j >= end || hidden[j]) {
            if (Number.isFinite(dp[j]!) && Number.isFinite(D)) continue;
            ds = NaN; // 0 · (dp − D) with a non-finite factor
          } else ds = p[j]! * (dp[j]! - D) * o.scale;
          if (ds === 0) continue;
          const ko = kBase + j * d.Dk;
          for (let c = 0; c < d.Dk; c++) {
            dq[qo + c] = dq[qo + c]! + ds * k[ko + c]!;
            dk[ko + c] = dk[ko + c]! + ds * q[qo + c]!;
          }
        }
      }
    }
  }
  return { dq, dk, dv };
}

/** The per-row statistics alone (see sdpaForward). */
export function sdpaStatsRef(q: Float64Array, k: Float64Array, d: SdpaDims, o: SdpaRefOptions): Float64Array {
  return sdpaForward(q, k, new Float64Array(d.B * d.Hkv * d.kL * d.Dv), d, o).stats;
}
