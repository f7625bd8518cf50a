// FFTs of any length in float64: mixed-radix Stockham passes (radix 4, 2, 3, 5, 7 butterflies
// written out, a direct DFT butterfly for other primes up to MAX_DIRECT_RADIX) and Bluestein's
// chirp-z for lengths with a larger prime factor; real transforms through a half-length complex
// FFT. Data is split complex (separate re/im arrays); a plan per (length, direction) holds the
// twiddles. The CPU backend's reference (MLX computes complex64: callers round the results).
//
// Stockham pass with radix R after a product Ns of earlier radices (autosort: no bit reversal):
//   for j in [0, n/R):  v_r = x[j + r·n/R] · ω^(r·(j mod Ns)), ω = e^(∓2πi/(Ns·R)),
//                       v = DFT_R(v),  y[(j div Ns)·Ns·R + (j mod Ns) + r·Ns] = v_r.

import { FFT, type FftParams } from "../../core/primitives/fft.ts";
import { readComplex, readNumbers, writeComplex, writeNumbers } from "./values.ts";
import { registerCpu } from "./registry.ts";

export const MAX_DIRECT_RADIX = 61;

/** Twiddle cos/sin(2π k / n) with k reduced to the first octant, so e^(2πik/n) and its
 *  symmetric partners are bit-identical and exact at multiples of π/4. */
function unitRoot(k: number, n: number): [number, number] {
  k %= n;
  if (k < 0) k += n;
  // Work in units of n/8 using integer arithmetic on 8k.
  const k8 = 8 * k;
  let oct = Math.floor(k8 / n);
  let rem = k8 - oct * n; // in [0, n): the angle within the octant is 2π·rem/(8n)
  // Mirror odd octants so the reduced angle lies in [0, π/4].
  let mirrored = false;
  if (oct & 1) {
    rem = n - rem;
    mirrored = true;
  }
  const a = (2 * Math.PI * rem) / (8 * n);
  let c = rem === 0 ? 1 : rem === n ? Math.SQRT1_2 : Math.cos(a);
  let s = rem === 0 ? 0 : rem === n ? Math.SQRT1_2 : Math.sin(a);
  if (mirrored) [c, s] = [s, c];
  // Rotate by oct·π/4 quadrant-wise: octants 0..7 → (c, s) in the right quadrant.
  oct = oct >> 1; // quadrant
  const q = (oct & 3) as 0 | 1 | 2 | 3;
  switch (q) {
    case 0: return [c, s];
    case 1: return [-s, c];
    case 2: return [-c, -s];
    default: return [s, -c];
  }
}

/** e^(sign·2πik/n) as [re, im]. */
export function twiddle(k: number, n: number, sign: 1 | -1): [number, number] {
  const [c, s] = unitRoot(k, n);
  return [c, sign * s];
}

function factorize(n: number): number[] {
  const f: number[] = [];
  while (n % 8 === 0) (f.push(8), (n /= 8));
  while (n % 4 === 0) (f.push(4), (n /= 4));
  while (n % 2 === 0) (f.push(2), (n /= 2));
  for (let p = 3; p * p <= n; p += 2) while (n % p === 0) (f.push(p), (n /= p));
  if (n > 1) f.push(n);
  return f;
}

interface Pass {
  radix: number;
  ns: number;
  /** Twiddles ω^(r·b) for b in [0, ns), r in [1, radix): index b·(radix-1) + r-1. */
  twRe: Float64Array;
  twIm: Float64Array;
  /** Direct-DFT butterflies: the radix's roots of unity. */
  rootRe?: Float64Array;
  rootIm?: Float64Array;
}

interface StockhamPlan {
  kind: "stockham";
  n: number;
  sign: 1 | -1;
  passes: Pass[];
}

interface BluesteinPlan {
  kind: "bluestein";
  n: number;
  sign: 1 | -1;
  m: number;
  /** chirp w_k = e^(sign·πi k²/n) */
  chirpRe: Float64Array;
  chirpIm: Float64Array;
  /** FFT (forward, length m) of the conjugate chirp arranged circularly. */
  bRe: Float64Array;
  bIm: Float64Array;
  fwd: StockhamPlan;
  inv: StockhamPlan;
}

export type FftPlan = StockhamPlan | BluesteinPlan;

const planCache = new Map<string, FftPlan>();

/** The plan for length n; sign −1 is the forward transform (e^(−2πi jk/n)), +1 the inverse
 *  without its 1/n. */
export function fftPlan(n: number, sign: 1 | -1): FftPlan {
  const key = `${n}|${sign}`;
  let plan = planCache.get(key);
  if (!plan) {
    const factors = factorize(n);
    plan = factors.some((p) => p > MAX_DIRECT_RADIX) ? bluesteinPlan(n, sign) : stockhamPlan(n, sign, factors);
    if (planCache.size > 256) planCache.clear();
    planCache.set(key, plan);
  }
  return plan;
}

function stockhamPlan(n: number, sign: 1 | -1, factors: number[]): StockhamPlan {
  const passes: Pass[] = [];
  let ns = 1;
  for (const radix of factors) {
    const twRe = new Float64Array(ns * (radix - 1));
    const twIm = new Float64Array(ns * (radix - 1));
    for (let b = 0; b < ns; b++) {
      for (let r = 1; r < radix; r++) {
        const [c, s] = twiddle(r * b, ns * radix, sign);
        twRe[b * (radix - 1) + r - 1] = c;
        twIm[b * (radix - 1) + r - 1] = s;
      }
    }
    const pass: Pass = { radix, ns, twRe, twIm };
    if (radix !== 2 && radix !== 3 && radix !== 4 && radix !== 5 && radix !== 7 && radix !== 8) {
      pass.rootRe = new Float64Array(radix);
      pass.rootIm = new Float64Array(radix);
      for (let k = 0; k < radix; k++) [pass.rootRe[k], pass.rootIm[k]] = twiddle(k, radix, sign);
    }
    passes.push(pass);
    ns *= radix;
  }
  return { kind: "stockham", n, sign, passes };
}

function bluesteinPlan(n: number, sign: 1 | -1): BluesteinPlan {
  let m = 1;
  while (m < 2 * n - 1) m *= 2;
  const chirpRe = new Float64Array(n);
  const chirpIm = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    // k² mod 2n keeps the angle argument small and exact.
    const k2 = Number((BigInt(k) * BigInt(k)) % BigInt(2 * n));
    [chirpRe[k], chirpIm[k]] = twiddle(k2, 2 * n, sign);
  }
  const bRe = new Float64Array(m);
  const bIm = new Float64Array(m);
  bRe[0] = chirpRe[0]!;
  bIm[0] = -chirpIm[0]!;
  for (let k = 1; k < n; k++) {
    bRe[k] = bRe[m - k] = chirpRe[k]!;
    bIm[k] = bIm[m - k] = -chirpIm[k]!;
  }
  const fwd = stockhamPlan(m, -1, factorize(m));
  const inv = stockhamPlan(m, 1, factorize(m));
  const sRe = new Float64Array(m);
  const sIm = new Float64Array(m);
  runStockham(fwd, bRe, bIm, sRe, sIm);
  return { kind: "bluestein", n, sign, m, chirpRe, chirpIm, bRe, bIm, fwd, inv };
}

/** Transforms (re, im) in place (length plan.n); `sRe/sIm` are scratch of at least that length
 *  (Bluestein allocates its own). */
export function runFft(plan: FftPlan, re: Float64Array, im: Float64Array, sRe?: Float64Array, sIm?: Float64Array): void {
  if (plan.kind === "bluestein") return runBluestein(plan, re, im);
  if (plan.n <= 1) return;
  runStockham(plan, re, im, sRe ?? new Float64Array(plan.n), sIm ?? new Float64Array(plan.n));
}

function runBluestein(p: BluesteinPlan, re: Float64Array, im: Float64Array): void {
  const { n, m, chirpRe, chirpIm } = p;
  const [aRe, aIm, sRe, sIm] = scratch(m, 4, 4) as [Float64Array, Float64Array, Float64Array, Float64Array];
  aRe.fill(0, n);
  aIm.fill(0, n);
  for (let k = 0; k < n; k++) {
    const xr = re[k]!, xi = im[k]!, cr = chirpRe[k]!, ci = chirpIm[k]!;
    aRe[k] = xr * cr - xi * ci;
    aIm[k] = xr * ci + xi * cr;
  }
  runStockham(p.fwd, aRe, aIm, sRe, sIm);
  for (let k = 0; k < m; k++) {
    const ar = aRe[k]!, ai = aIm[k]!, br = p.bRe[k]!, bi = p.bIm[k]!;
    aRe[k] = ar * br - ai * bi;
    aIm[k] = ar * bi + ai * br;
  }
  runStockham(p.inv, aRe, aIm, sRe, sIm);
  const inv = 1 / m;
  for (let k = 0; k < n; k++) {
    const ar = aRe[k]! * inv, ai = aIm[k]! * inv, cr = chirpRe[k]!, ci = chirpIm[k]!;
    re[k] = ar * cr - ai * ci;
    im[k] = ar * ci + ai * cr;
  }
}

/** Reusable float64 scratch arrays of length n (`count` of them, from slot `first`): the
 *  transforms are synchronous, so one set per slot suffices. Slots 0–3 serve the real-transform
 *  helpers, 4–7 Bluestein (which those helpers may call). */
const scratchSlots: Float64Array[] = [];
function scratch(n: number, count: number, first = 0): Float64Array[] {
  const out: Float64Array[] = [];
  for (let i = first; i < first + count; i++) {
    let a = scratchSlots[i];
    if (!a || a.length < n) scratchSlots[i] = a = new Float64Array(Math.max(n, 2 * (a?.length ?? 0)));
    out.push(a.subarray(0, n));
  }
  return out;
}

const SIN60 = Math.sqrt(3) / 2;
const C5_1 = Math.cos((2 * Math.PI) / 5), C5_2 = Math.cos((4 * Math.PI) / 5);
const S5_1 = Math.sin((2 * Math.PI) / 5), S5_2 = Math.sin((4 * Math.PI) / 5);

/** Runs the passes, ping-ponging between (re, im) and the scratch; the result ends in (re, im). */
function runStockham(plan: StockhamPlan, re: Float64Array, im: Float64Array, sRe: Float64Array, sIm: Float64Array): void {
  const n = plan.n;
  let xr = re, xi = im, yr = sRe, yi = sIm;
  for (const pass of plan.passes) {
    stockhamPass(pass, n, plan.sign, xr, xi, yr, yi);
    [xr, yr] = [yr, xr];
    [xi, yi] = [yi, xi];
  }
  if (xr !== re) {
    re.set(xr.subarray(0, n));
    im.set(xi.subarray(0, n));
  }
}

function stockhamPass(
  pass: Pass, n: number, sign: 1 | -1,
  xr: Float64Array, xi: Float64Array, yr: Float64Array, yi: Float64Array,
): void {
  const R = pass.radix;
  const ns = pass.ns;
  const stride = n / R;
  const groups = stride / ns; // j = a·ns + b: the twiddle depends on b only
  const tr = pass.twRe, ti = pass.twIm;
  const R1 = R - 1;
  // Early passes (small ns) keep one twiddle set for a long run over a; later ones walk b
  // innermost, so reads and writes stay contiguous.
  const bOuter = ns < 8;
  const outer = bOuter ? ns : groups;
  const inner = bOuter ? groups : ns;
  const bf = R === 4 ? bf4 : R === 8 ? bf8 : R === 2 ? bf2 : R === 3 ? bf3 : R === 5 ? bf5 : R === 7 ? bf7 : null;
  if (bf) {
    for (let o = 0; o < outer; o++) {
      for (let i = 0; i < inner; i++) {
        const a = bOuter ? i : o, b = bOuter ? o : i;
        bf(xr, xi, yr, yi, a * ns + b, stride, a * ns * R + b, ns, tr, ti, b * R1, sign);
      }
    }
    return;
  }
  // Direct DFT butterfly for another prime radix.
  const rr = pass.rootRe!, ri = pass.rootIm!;
  const vr = new Float64Array(R), vi = new Float64Array(R);
  for (let b = 0; b < ns; b++) {
    const t = b * R1;
    for (let a = 0; a < groups; a++) {
      const j = a * ns + b;
      vr[0] = xr[j]!; vi[0] = xi[j]!;
      for (let r = 1; r < R; r++) {
        const ur = xr[j + r * stride]!, ui = xi[j + r * stride]!;
        const wr = tr[t + r - 1]!, wi = ti[t + r - 1]!;
        vr[r] = ur * wr - ui * wi;
        vi[r] = ur * wi + ui * wr;
      }
      const d = a * ns * R + b;
      for (let k = 0; k < R; k++) {
        let sr = 0, si = 0;
        let idx = 0;
        for (let r = 0; r < R; r++) {
          const cr = rr[idx]!, ci = ri[idx]!;
          sr += vr[r]! * cr - vi[r]! * ci;
          si += vr[r]! * ci + vi[r]! * cr;
          idx += k;
          if (idx >= R) idx -= R;
        }
        yr[d + k * ns] = sr;
        yi[d + k * ns] = si;
      }
    }
  }
}

// Butterflies: read x[j + r·stride] (r = 0..R−1), twist input r by twiddle t + r − 1, apply
// DFT_R and write y[d + k·ns].
type Butterfly = (
  xr: Float64Array, xi: Float64Array, yr: Float64Array, yi: Float64Array,
  j: number, stride: number, d: number, ns: number, tr: Float64Array, ti: Float64Array, t: number, sign: number,
) => void;

const bf2: Butterfly = (xr, xi, yr, yi, j, stride, d, ns, tr, ti, t) => {
  const wr = tr[t]!, wi = ti[t]!;
  const ur = xr[j + stride]!, ui = xi[j + stride]!;
  const x1r = ur * wr - ui * wi, x1i = ur * wi + ui * wr;
  const x0r = xr[j]!, x0i = xi[j]!;
  yr[d] = x0r + x1r; yi[d] = x0i + x1i;
  yr[d + ns] = x0r - x1r; yi[d + ns] = x0i - x1i;
};

const bf4: Butterfly = (xr, xi, yr, yi, j, stride, d, ns, tr, ti, t, sign) => {
  const x0r = xr[j]!, x0i = xi[j]!;
  let ur = xr[j + stride]!, ui = xi[j + stride]!;
  let wr = tr[t]!, wi = ti[t]!;
  const x1r = ur * wr - ui * wi, x1i = ur * wi + ui * wr;
  ur = xr[j + 2 * stride]!; ui = xi[j + 2 * stride]!;
  wr = tr[t + 1]!; wi = ti[t + 1]!;
  const x2r = ur * wr - ui * wi, x2i = ur * wi + ui * wr;
  ur = xr[j + 3 * stride]!; ui = xi[j + 3 * stride]!;
  wr = tr[t + 2]!; wi = ti[t + 2]!;
  const x3r = ur * wr - ui * wi, x3i = ur * wi + ui * wr;
  const s02r = x0r + x2r, s02i = x0i + x2i, d02r = x0r - x2r, d02i = x0i - x2i;
  const s13r = x1r + x3r, s13i = x1i + x3i, d13r = x1r - x3r, d13i = x1i - x3i;
  // (sign·i)·d13: forward (−1) multiplies by −i
  const rr = -sign * d13i, ri = sign * d13r;
  yr[d] = s02r + s13r; yi[d] = s02i + s13i;
  yr[d + ns] = d02r + rr; yi[d + ns] = d02i + ri;
  yr[d + 2 * ns] = s02r - s13r; yi[d + 2 * ns] = s02i - s13i;
  yr[d + 3 * ns] = d02r - rr; yi[d + 3 * ns] = d02i - ri;
};

const SQRT1_2 = Math.SQRT1_2;

// Radix 8: two radix-4 DFTs of the even and odd inputs, joined with ω8^k = e^(sign·iπk/4).
const bf8: Butterfly = (xr, xi, yr, yi, j, stride, d, ns, tr, ti, t, sign) => {
  const x0r = xr[j]!, x0i = xi[j]!;
  let ur = xr[j + stride]!, ui = xi[j + stride]!, wr = tr[t]!, wi = ti[t]!;
  const x1r = ur * wr - ui * wi, x1i = ur * wi + ui * wr;
  ur = xr[j + 2 * stride]!; ui = xi[j + 2 * stride]!; wr = tr[t + 1]!; wi = ti[t + 1]!;
  const x2r = ur * wr - ui * wi, x2i = ur * wi + ui * wr;
  ur = xr[j + 3 * stride]!; ui = xi[j + 3 * stride]!; wr = tr[t + 2]!; wi = ti[t + 2]!;
  const x3r = ur * wr - ui * wi, x3i = ur * wi + ui * wr;
  ur = xr[j + 4 * stride]!; ui = xi[j + 4 * stride]!; wr = tr[t + 3]!; wi = ti[t + 3]!;
  const x4r = ur * wr - ui * wi, x4i = ur * wi + ui * wr;
  ur = xr[j + 5 * stride]!; ui = xi[j + 5 * stride]!; wr = tr[t + 4]!; wi = ti[t + 4]!;
  const x5r = ur * wr - ui * wi, x5i = ur * wi + ui * wr;
  ur = xr[j + 6 * stride]!; ui = xi[j + 6 * stride]!; wr = tr[t + 5]!; wi = ti[t + 5]!;
  const x6r = ur * wr - ui * wi, x6i = ur * wi + ui * wr;
  ur = xr[j + 7 * stride]!; ui = xi[j + 7 * stride]!; wr = tr[t + 6]!; wi = ti[t + 6]!;
  const x7r = ur * wr - ui * wi, x7i = ur * wi + ui * wr;
  // Even part E = DFT4(x0, x2, x4, x6), odd part O = DFT4(x1, x3, x5, x7); (sign·i)·z below.
  const a0r = x0r + x4r, a0i = x0i + x4i, a1r = x0r - x4r, a1i = x0i - x4i;
  const a2r = x2r + x6r, a2i = x2i + x6i, a3r = x2r - x6r, a3i = x2i - x6i;
  const ra3r = -sign * a3i, ra3i = sign * a3r;
  const e0r = a0r + a2r, e0i = a0i + a2i, e2r = a0r - a2r, e2i = a0i - a2i;
  const e1r = a1r + ra3r, e1i = a1i + ra3i, e3r = a1r - ra3r, e3i = a1i - ra3i;
  const b0r = x1r + x5r, b0i = x1i + x5i, b1r = x1r - x5r, b1i = x1i - x5i;
  const b2r = x3r + x7r, b2i = x3i + x7i, b3r = x3r - x7r, b3i = x3i - x7i;
  const rb3r = -sign * b3i, rb3i = sign * b3r;
  const o0r = b0r + b2r, o0i = b0i + b2i, o2r = b0r - b2r, o2i = b0i - b2i;
  const o1r = b1r + rb3r, o1i = b1i + rb3i, o3r = b1r - rb3r, o3i = b1i - rb3i;
  // Twist the odd part by ω8^k: k=1: (1 + sign·i)/√2, k=2: sign·i, k=3: (−1 + sign·i)/√2.
  const t1r = SQRT1_2 * (o1r - sign * o1i), t1i = SQRT1_2 * (o1i + sign * o1r);
  const t2r = -sign * o2i, t2i = sign * o2r;
  const t3r = SQRT1_2 * (-o3r - sign * o3i), t3i = SQRT1_2 * (-o3i + sign * o3r);
  yr[d] = e0r + o0r; yi[d] = e0i + o0i;
  yr[d + ns] = e1r + t1r; yi[d + ns] = e1i + t1i;
  yr[d + 2 * ns] = e2r + t2r; yi[d + 2 * ns] = e2i + t2i;
  yr[d + 3 * ns] = e3r + t3r; yi[d + 3 * ns] = e3i + t3i;
  yr[d + 4 * ns] = e0r - o0r; yi[d + 4 * ns] = e0i - o0i;
  yr[d + 5 * ns] = e1r - t1r; yi[d + 5 * ns] = e1i - t1i;
  yr[d + 6 * ns] = e2r - t2r; yi[d + 6 * ns] = e2i - t2i;
  yr[d + 7 * ns] = e3r - t3r; yi[d + 7 * ns] = e3i - t3i;
};

const bf3: Butterfly = (xr, xi, yr, yi, j, stride, d, ns, tr, ti, t, sign) => {
  const s60 = sign * SIN60;
  const x0r = xr[j]!, x0i = xi[j]!;
  let ur = xr[j + stride]!, ui = xi[j + stride]!;
  let wr = tr[t]!, wi = ti[t]!;
  const x1r = ur * wr - ui * wi, x1i = ur * wi + ui * wr;
  ur = xr[j + 2 * stride]!; ui = xi[j + 2 * stride]!;
  wr = tr[t + 1]!; wi = ti[t + 1]!;
  const x2r = ur * wr - ui * wi, x2i = ur * wi + ui * wr;
  const sr = x1r + x2r, si = x1i + x2i;
  const mr = x0r - 0.5 * sr, mi = x0i - 0.5 * si;
  const dr = -s60 * (x1i - x2i), di = s60 * (x1r - x2r);
  yr[d] = x0r + sr; yi[d] = x0i + si;
  yr[d + ns] = mr + dr; yi[d + ns] = mi + di;
  yr[d + 2 * ns] = mr - dr; yi[d + 2 * ns] = mi - di;
};

const bf5: Butterfly = (xr, xi, yr, yi, j, stride, d, ns, tr, ti, t, sign) => {
  const s1 = sign * S5_1, s2 = sign * S5_2;
  const x0r = xr[j]!, x0i = xi[j]!;
  let ur = xr[j + stride]!, ui = xi[j + stride]!, wr = tr[t]!, wi = ti[t]!;
  const v1r = ur * wr - ui * wi, v1i = ur * wi + ui * wr;
  ur = xr[j + 2 * stride]!; ui = xi[j + 2 * stride]!; wr = tr[t + 1]!; wi = ti[t + 1]!;
  const v2r = ur * wr - ui * wi, v2i = ur * wi + ui * wr;
  ur = xr[j + 3 * stride]!; ui = xi[j + 3 * stride]!; wr = tr[t + 2]!; wi = ti[t + 2]!;
  const v3r = ur * wr - ui * wi, v3i = ur * wi + ui * wr;
  ur = xr[j + 4 * stride]!; ui = xi[j + 4 * stride]!; wr = tr[t + 3]!; wi = ti[t + 3]!;
  const v4r = ur * wr - ui * wi, v4i = ur * wi + ui * wr;
  const a1r = v1r + v4r, a1i = v1i + v4i, b1r = v1r - v4r, b1i = v1i - v4i;
  const a2r = v2r + v3r, a2i = v2i + v3i, b2r = v2r - v3r, b2i = v2i - v3i;
  const c1r = x0r + C5_1 * a1r + C5_2 * a2r, c1i = x0i + C5_1 * a1i + C5_2 * a2i;
  const c2r = x0r + C5_2 * a1r + C5_1 * a2r, c2i = x0i + C5_2 * a1i + C5_1 * a2i;
  // i·(s·b): re = −s·b_im, im = s·b_re
  const e1r = -(s1 * b1i + s2 * b2i), e1i = s1 * b1r + s2 * b2r;
  const e2r = -(s2 * b1i - s1 * b2i), e2i = s2 * b1r - s1 * b2r;
  yr[d] = x0r + a1r + a2r; yi[d] = x0i + a1i + a2i;
  yr[d + ns] = c1r + e1r; yi[d + ns] = c1i + e1i;
  yr[d + 2 * ns] = c2r + e2r; yi[d + 2 * ns] = c2i + e2i;
  yr[d + 3 * ns] = c2r - e2r; yi[d + 3 * ns] = c2i - e2i;
  yr[d + 4 * ns] = c1r - e1r; yi[d + 4 * ns] = c1i - e1i;
};

const C7_1 = Math.cos((2 * Math.PI) / 7), C7_2 = Math.cos((4 * Math.PI) / 7), C7_3 = Math.cos((6 * Math.PI) / 7);
const S7_1 = Math.sin((2 * Math.PI) / 7), S7_2 = Math.sin((4 * Math.PI) / 7), S7_3 = Math.sin((6 * Math.PI) / 7);

const bf7: Butterfly = (xr, xi, yr, yi, j, stride, d, ns, tr, ti, t, sign) => {
  const s1 = sign * S7_1, s2 = sign * S7_2, s3 = sign * S7_3;
  const x0r = xr[j]!, x0i = xi[j]!;
  let ur = xr[j + stride]!, ui = xi[j + stride]!, wr = tr[t]!, wi = ti[t]!;
  const v1r = ur * wr - ui * wi, v1i = ur * wi + ui * wr;
  ur = xr[j + 2 * stride]!; ui = xi[j + 2 * stride]!; wr = tr[t + 1]!; wi = ti[t + 1]!;
  const v2r = ur * wr - ui * wi, v2i = ur * wi + ui * wr;
  ur = xr[j + 3 * stride]!; ui = xi[j + 3 * stride]!; wr = tr[t + 2]!; wi = ti[t + 2]!;
  const v3r = ur * wr - ui * wi, v3i = ur * wi + ui * wr;
  ur = xr[j + 4 * stride]!; ui = xi[j + 4 * stride]!; wr = tr[t + 3]!; wi = ti[t + 3]!;
  const v4r = ur * wr - ui * wi, v4i = ur * wi + ui * wr;
  ur = xr[j + 5 * stride]!; ui = xi[j + 5 * stride]!; wr = tr[t + 4]!; wi = ti[t + 4]!;
  const v5r = ur * wr - ui * wi, v5i = ur * wi + ui * wr;
  ur = xr[j + 6 * stride]!; ui = xi[j + 6 * stride]!; wr = tr[t + 5]!; wi = ti[t + 5]!;
  const v6r = ur * wr - ui * wi, v6i = ur * wi + ui * wr;
  // A_q = v_q + v_{7−q}, B_q = v_q − v_{7−q}
  const a1r = v1r + v6r, a1i = v1i + v6i, b1r = v1r - v6r, b1i = v1i - v6i;
  const a2r = v2r + v5r, a2i = v2i + v5i, b2r = v2r - v5r, b2i = v2i - v5i;
  const a3r = v3r + v4r, a3i = v3i + v4i, b3r = v3r - v4r, b3i = v3i - v4i;
  yr[d] = x0r + a1r + a2r + a3r; yi[d] = x0i + a1i + a2i + a3i;
  // y_k = x0 + Σ_q A_q cos(2πqk/7) + i·Σ_q B_q·sign·sin(2πqk/7); y_{7−k} flips the sine part.
  const c1r = x0r + C7_1 * a1r + C7_2 * a2r + C7_3 * a3r, c1i = x0i + C7_1 * a1i + C7_2 * a2i + C7_3 * a3i;
  const c2r = x0r + C7_2 * a1r + C7_3 * a2r + C7_1 * a3r, c2i = x0i + C7_2 * a1i + C7_3 * a2i + C7_1 * a3i;
  const c3r = x0r + C7_3 * a1r + C7_1 * a2r + C7_2 * a3r, c3i = x0i + C7_3 * a1i + C7_1 * a2i + C7_2 * a3i;
  // sin(2π·qk/7) with qk mod 7: k=1 → (1,2,3); k=2 → (2,4→−3,6→−1); k=3 → (3,6→−1,9→2→... )
  const e1r = -(s1 * b1i + s2 * b2i + s3 * b3i), e1i = s1 * b1r + s2 * b2r + s3 * b3r;
  const e2r = -(s2 * b1i - s3 * b2i - s1 * b3i), e2i = s2 * b1r - s3 * b2r - s1 * b3r;
  const e3r = -(s3 * b1i - s1 * b2i + s2 * b3i), e3i = s3 * b1r - s1 * b2r + s2 * b3r;
  yr[d + ns] = c1r + e1r; yi[d + ns] = c1i + e1i;
  yr[d + 2 * ns] = c2r + e2r; yi[d + 2 * ns] = c2i + e2i;
  yr[d + 3 * ns] = c3r + e3r; yi[d + 3 * ns] = c3i + e3i;
  yr[d + 4 * ns] = c3r - e3r; yi[d + 4 * ns] = c3i - e3i;
  yr[d + 5 * ns] = c2r - e2r; yi[d + 5 * ns] = c2i - e2i;
  yr[d + 6 * ns] = c1r - e1r; yi[d + 6 * ns] = c1i - e1i;
};

// ---------------------------------------------------------------------------------------------
// Batched lines and real transforms

/** Complex FFT of `count` lines of length n, line i at offset base(i) with element stride
 *  `stride` in interleaved (re, im) data `src`, written to `dst` likewise (may alias). The
 *  transform is forward (sign −1) or unscaled inverse (+1); `scale` multiplies every output. */
export function fftLines(
  src: Float64Array, dst: Float64Array, n: number, count: number,
  base: (i: number) => number, stride: number, sign: 1 | -1, scale: number,
  dstBase: (i: number) => number = base, dstStride = stride,
): void {
  const plan = fftPlan(n, sign);
  const re = new Float64Array(n), im = new Float64Array(n);
  const sRe = new Float64Array(n), sIm = new Float64Array(n);
  for (let i = 0; i < count; i++) {
    let o = base(i);
    for (let k = 0; k < n; k++, o += stride) {
      re[k] = src[2 * o]!;
      im[k] = src[2 * o + 1]!;
    }
    runFft(plan, re, im, sRe, sIm);
    o = dstBase(i);
    for (let k = 0; k < n; k++, o += dstStride) {
      dst[2 * o] = re[k]! * scale;
      dst[2 * o + 1] = im[k]! * scale;
    }
  }
}

/**
 * Forward FFT of one real line of length n into n/2 + 1 complex bins (re, im arrays of that
 * length). Even n runs one complex FFT of length n/2 on the packed pairs (x[2k], x[2k+1]).
 */
export function rfftLine(x: Float64Array, n: number, outRe: Float64Array, outIm: Float64Array): void {
  const h = n >> 1;
  if (n % 2 === 1 || n < 4) {
    const re = Float64Array.from(x.subarray(0, n)), im = new Float64Array(n);
    runFft(fftPlan(n, -1), re, im);
    for (let k = 0; k <= h; k++) (outRe[k] = re[k]!, (outIm[k] = im[k]!));
    return;
  }
  const [zr, zi, sr, si] = scratch(h, 4) as [Float64Array, Float64Array, Float64Array, Float64Array];
  for (let k = 0; k < h; k++) (zr[k] = x[2 * k]!, (zi[k] = x[2 * k + 1]!));
  runFft(fftPlan(h, -1), zr, zi, sr, si);
  const tw = halfTwiddles(n);
  // X_k = (Z_k + conj Z_{h−k})/2 − i·e^(−2πik/n)·(Z_k − conj Z_{h−k})/2
  for (let k = 0; k <= h; k++) {
    const a = k % h, b = (h - k) % h;
    const pr = zr[a]!, pi = zi[a]!, qr = zr[b]!, qi = -zi[b]!;
    const er = 0.5 * (pr + qr), ei = 0.5 * (pi + qi);
    const orr = 0.5 * (pr - qr), oi = 0.5 * (pi - qi);
    // w = e^(−2πik/n); −i·w·o
    const wr = tw.re[k]!, wi = tw.im[k]!;
    const tr = wr * orr - wi * oi, ti = wr * oi + wi * orr;
    outRe[k] = er + ti;
    outIm[k] = ei - tr;
  }
}

/**
 * Inverse of rfftLine without the 1/n: n real outputs from bins 0..n/2 (the imaginary parts of
 * bin 0 and, for even n, bin n/2 are ignored, as numpy and MLX do).
 */
export function irfftLine(inRe: Float64Array, inIm: Float64Array, n: number, out: Float64Array): void {
  const h = n >> 1;
  if (n % 2 === 1 || n < 4) {
    const re = new Float64Array(n), im = new Float64Array(n);
    for (let k = 0; k <= h; k++) (re[k] = inRe[k]!, (im[k] = inIm[k]!));
    im[0] = 0;
    if (n % 2 === 0) im[h] = 0;
    for (let k = h + 1; k < n; k++) (re[k] = re[n - k]!, (im[k] = -im[n - k]!));
    runFft(fftPlan(n, 1), re, im);
    out.set(re.subarray(0, n));
    return;
  }
  const tw = halfTwiddles(n);
  const [zr, zi, sr, si] = scratch(h, 4) as [Float64Array, Float64Array, Float64Array, Float64Array];
  // Z_k = E_k + i·e^(+2πik/n)·O_k, E_k = (X_k + conj X_{h−k}), O_k = (X_k − conj X_{h−k})
  for (let k = 0; k < h; k++) {
    const xr = inRe[k]!, xi = k === 0 ? 0 : inIm[k]!;
    const yr = inRe[h - k]!, yi = k === 0 ? 0 : -inIm[h - k]!; // conj X_{h−k}; X_h's imag ignored
    const er = xr + yr, ei = xi + yi;
    const or = xr - yr, oi = xi - yi;
    // e^(+2πik/n) = conj(tw)
    const wr = tw.re[k]!, wi = -tw.im[k]!;
    const tr = wr * or - wi * oi, ti = wr * oi + wi * or;
    zr[k] = er - ti;
    zi[k] = ei + tr;
  }
  runFft(fftPlan(h, 1), zr, zi, sr, si);
  for (let k = 0; k < h; k++) (out[2 * k] = zr[k]!, (out[2 * k + 1] = zi[k]!));
}

const halfTwiddleCache = new Map<number, { re: Float64Array; im: Float64Array }>();
function halfTwiddles(n: number): { re: Float64Array; im: Float64Array } {
  let t = halfTwiddleCache.get(n);
  if (!t) {
    const h = n >> 1;
    t = { re: new Float64Array(h + 1), im: new Float64Array(h + 1) };
    for (let k = 0; k <= h; k++) [t.re[k], t.im[k]] = twiddle(k, n, -1);
    if (halfTwiddleCache.size > 256) halfTwiddleCache.clear();
    halfTwiddleCache.set(n, t);
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// The FFT primitive's CPU kernel


function rowMajor(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) (s[i] = acc), (acc *= shape[i]!);
  return s;
}

/** Element offsets of the first element of every line along `axis` of a row-major `shape`. */
function lineStarts(shape: readonly number[], axis: number): Int32Array {
  const strides = rowMajor(shape);
  const total = shape.reduce((a, b) => a * b, 1);
  const len = shape[axis]!;
  const count = len === 0 ? 0 : total / len;
  const starts = new Int32Array(count);
  const other = shape.map((d, i) => (i === axis ? 1 : d));
  const idx = new Array<number>(shape.length).fill(0);
  for (let l = 0; l < count; l++) {
    let off = 0;
    for (let d = 0; d < shape.length; d++) off += idx[d]! * strides[d]!;
    starts[l] = off;
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++idx[d]! < other[d]!) break;
      idx[d] = 0;
    }
  }
  return starts;
}

/** Complex transforms along `axes` of interleaved row-major data, in place. */
function c2cAxes(data: Float64Array, shape: readonly number[], axes: readonly number[], sign: 1 | -1): void {
  const strides = rowMajor(shape);
  for (const ax of axes) {
    const n = shape[ax]!;
    if (n <= 1) continue;
    const starts = lineStarts(shape, ax);
    fftLines(data, data, n, starts.length, (i) => starts[i]!, strides[ax]!, sign, sign > 0 ? 1 / n : 1);
  }
}

/**
 * MLX's FFT primitive: complex→complex over `axes`; real→complex (rfft on the last axis, then
 * complex over the others); complex→real (complex over all but the last axis, then irfft on it).
 * Inverses include the 1/n of each axis. `input` holds interleaved complex values (or plain real
 * values for rfft); returns the output's values in the same encoding.
 */
export function fftValues(input: Float64Array, inShape: readonly number[], outShape: readonly number[], p: FftParams): Float64Array {
  const last = p.axes[p.axes.length - 1]!;
  const others = p.axes.slice(0, -1);
  if (!p.real) {
    // `input` is the kernel's own copy of the values: transform it in place.
    c2cAxes(input, inShape, p.axes, p.inverse ? 1 : -1);
    return input;
  }
  if (!p.inverse) {
    // rfft along the last axis into the (…, n/2 + 1, …) output, then complex over the others.
    const n = inShape[last]!;
    const h = outShape[last]!;
    const out = new Float64Array(2 * outShape.reduce((a, b) => a * b, 1));
    const inStarts = lineStarts(inShape, last), outStarts = lineStarts(outShape, last);
    const inStride = rowMajor(inShape)[last]!, outStride = rowMajor(outShape)[last]!;
    const line = new Float64Array(n), re = new Float64Array(h), im = new Float64Array(h);
    for (let l = 0; l < inStarts.length; l++) {
      for (let k = 0, o = inStarts[l]!; k < n; k++, o += inStride) line[k] = input[o]!;
      if (n > 0) rfftLine(line, n, re, im);
      for (let k = 0, o = outStarts[l]!; k < h; k++, o += outStride) (out[2 * o] = re[k]!), (out[2 * o + 1] = im[k]!);
    }
    c2cAxes(out, outShape, others, -1);
    return out;
  }
  // irfft: complex inverse over the other axes, then Hermitian → real along the last.
  const data = input;
  c2cAxes(data, inShape, others, 1);
  const n = p.n;
  const h = inShape[last]!;
  const out = new Float64Array(outShape.reduce((a, b) => a * b, 1));
  const inStarts = lineStarts(inShape, last), outStarts = lineStarts(outShape, last);
  const inStride = rowMajor(inShape)[last]!, outStride = rowMajor(outShape)[last]!;
  const re = new Float64Array(Math.max(h, (n >> 1) + 1)), im = new Float64Array(re.length), line = new Float64Array(n);
  for (let l = 0; l < inStarts.length; l++) {
    re.fill(0);
    im.fill(0);
    for (let k = 0, o = inStarts[l]!; k < Math.min(h, (n >> 1) + 1); k++, o += inStride) (re[k] = data[2 * o]!), (im[k] = data[2 * o + 1]!);
    if (n > 0) irfftLine(re, im, n, line);
    for (let k = 0, o = outStarts[l]!; k < n; k++, o += outStride) out[o] = line[k]! / n;
  }
  return out;
}

registerCpu(FFT, ([a], [out], p) => {
  const input = p.real && !p.inverse ? readNumbers(a!) : readComplex(a!);
  const values = fftValues(input, a!.shape, out!.shape, p);
  if (p.real && p.inverse) writeNumbers(out!, values);
  else writeComplex(out!, values);
});
