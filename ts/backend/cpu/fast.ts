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
    for (let j = 0; j < n; j++) {
      let y = (x[r * n + j]! - mean) * inv;
      if (w) y *= w[j]!;
      if (b && o.layer) y += b[j]!;
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

/** Scores of query row (b, h, i) against every key: [score, hidden] pairs. */
function sdpaRow(q: Float64Array, k: Float64Array, d: SdpaDims, o: SdpaRefOptions, b: number, h: number, i: number): { s: Float64Array; hidden: Uint8Array } {
  const hk = Math.floor(h / (d.Hq / d.Hkv));
  const s = new Float64Array(d.kL);
  const hidden = new Uint8Array(d.kL);
  const qo = ((b * d.Hq + h) * d.qL + i) * d.Dk;
  for (let j = 0; j < d.kL; j++) {
    const ko = ((b * d.Hkv + hk) * d.kL + j) * d.Dk;
    let dot = 0;
    for (let c = 0; c < d.Dk; c++) dot += q[qo + c]! * k[ko + c]!;
    let v = dot * o.scale;
    const m = o.mask;
    if (m.kind === "causal" && j > i + d.kL - d.qL) hidden[j] = 1;
    else if (m.kind === "bool" && !m.values[((b * d.Hq + h) * d.qL + i) * d.kL + j]) hidden[j] = 1;
    else if (m.kind === "additive") v += m.values[((b * d.Hq + h) * d.qL + i) * d.kL + j]!;
    s[j] = hidden[j] ? HIDDEN : v;
  }
  return { s, hidden };
}

/** Softmax probabilities of a row's scores (and the sink's share), as MLX's softmax over [sink, s…]. */
function sdpaProbs(s: Float64Array, sink: number | null): Float64Array {
  let m = sink ?? -Infinity;
  let nan = false;
  for (const v of s) {
    if (v !== v) nan = true;
    if (v > m) m = v;
  }
  const p = new Float64Array(s.length);
  if (nan || m === -Infinity || m === Infinity) return p.fill(NaN);
  let total = sink === null ? 0 : Math.exp(sink - m);
  for (let j = 0; j < s.length; j++) total += p[j] = Math.exp(s[j]! - m);
  for (let j = 0; j < s.length; j++) p[j] = p[j]! / total;
  return p;
}

/** O [B, Hq, qL, Dv] from dense q [B, Hq, qL, Dk], k [B, Hkv, kL, Dk], v [B, Hkv, kL, Dv]. */
export function sdpaRef(q: Float64Array, k: Float64Array, v: Float64Array, d: SdpaDims, o: SdpaRefOptions): Float64Array {
  const out = new Float64Array(d.B * d.Hq * d.qL * d.Dv);
  const gqa = d.Hq / d.Hkv;
  for (let b = 0; b < d.B; b++) {
    for (let h = 0; h < d.Hq; h++) {
      const hk = Math.floor(h / gqa);
      for (let i = 0; i < d.qL; i++) {
        const p = sdpaProbs(sdpaRow(q, k, d, o, b, h, i).s, o.sinks ? o.sinks[h]! : null);
        const oo = ((b * d.Hq + h) * d.qL + i) * d.Dv;
        for (let j = 0; j < d.kL; j++) {
          const vo = ((b * d.Hkv + hk) * d.kL + j) * d.Dv;
          for (let c = 0; c < d.Dv; c++) out[oo + c] = out[oo + c]! + p[j]! * v[vo + c]!;
        }
      }
    }
  }
  return out;
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
  const gqa = d.Hq / d.Hkv;
  for (let b = 0; b < d.B; b++) {
    for (let h = 0; h < d.Hq; h++) {
      const hk = Math.floor(h / gqa);
      for (let i = 0; i < d.qL; i++) {
        const row = sdpaRow(q, k, d, o, b, h, i);
        const p = sdpaProbs(row.s, o.sinks ? o.sinks[h]! : null);
        const go = ((b * d.Hq + h) * d.qL + i) * d.Dv;
        const qo = ((b * d.Hq + h) * d.qL + i) * d.Dk;
        const dp = new Float64Array(d.kL);
        let D = 0;
        for (let j = 0; j < d.kL; j++) {
          const vo = ((b * d.Hkv + hk) * d.kL + j) * d.Dv;
          let acc = 0;
          for (let c = 0; c < d.Dv; c++) {
            acc += dO[go + c]! * v[vo + c]!;
            dv[vo + c] = dv[vo + c]! + p[j]! * dO[go + c]!;
          }
          dp[j] = acc;
          D += p[j]! * acc;
        }
        for (let j = 0; j < d.kL; j++) {
          if (row.hidden[j]) continue;
          const ds = p[j]! * (dp[j]! - D) * o.scale;
          const ko = ((b * d.Hkv + hk) * d.kL + j) * d.Dk;
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

/**
 * The per-row statistics the fused kernels save for the backward, computed as they compute them:
 * m = max over the row's log2-domain scores (score·log2 e; a hidden score is −3e38, the kernels'
 * finite minimum; the sink counts), l = Σ exp2(s − m). Two floats per row, [B, Hq, qL, 2].
 */
export function sdpaStatsRef(q: Float64Array, k: Float64Array, d: SdpaDims, o: SdpaRefOptions): Float64Array {
  const stats = new Float64Array(d.B * d.Hq * d.qL * 2);
  const hidden2 = -3.0e38;
  for (let b = 0; b < d.B; b++) {
    for (let h = 0; h < d.Hq; h++) {
      for (let i = 0; i < d.qL; i++) {
        const row = sdpaRow(q, k, d, o, b, h, i);
        const s2 = Float64Array.from(row.s, (v, j) => (row.hidden[j] ? hidden2 : v * Math.LOG2E));
        let m = o.sinks ? o.sinks[h]! * Math.LOG2E : -Infinity;
        for (const v of s2) if (v > m) m = v;
        let l = o.sinks ? (m === -Infinity ? 0 : Math.pow(2, o.sinks[h]! * Math.LOG2E - m)) : 0;
        if (m !== -Infinity) for (const v of s2) l += Math.pow(2, v - m);
        const at = ((b * d.Hq + h) * d.qL + i) * 2;
        stats[at] = m;
        stats[at + 1] = l;
      }
    }
  }
  return stats;
}
