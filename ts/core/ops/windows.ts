// Window functions (mx.hanning, hamming, bartlett, blackman): symmetric tapers of M float32 points,
// w(n) for 0 ≤ n ≤ M − 1, built from arange and elementwise ops so they run on either device.
import type { MgArray } from "../array.ts";
import { float32 } from "../dtype.ts";
import type { StreamOptions } from "./convert.ts";
import { arange, ones, zeros } from "./creation.ts";
import { abs, add, cos, multiply, subtract } from "./elementwise.ts";

/**
 * The window for M points from w(n, M − 1), n = 0 … M − 1 as float32. As MLX: M ≤ 0 gives an
 * empty array and M = 1 gives [1]; M must be an integer.
 */
function windowOf(op: string, M: number, opts: StreamOptions, w: (n: MgArray, span: number) => MgArray): MgArray {
  if (typeof M !== "number" || !Number.isInteger(M)) {
    throw new TypeError(`[${op}] M must be an integer number of points, got ${typeof M === "number" ? M : typeof M}.`);
  }
  if (M < 1) return zeros([0], float32, opts);
  if (M === 1) return ones([1], float32, opts);
  return w(arange(0, M, 1, float32, opts), M - 1);
}

/** cos(2πk·n/span) for the cosine-sum windows: one float32 product, so one rounding in the angle. */
const cosTerm = (n: MgArray, span: number, k: number, opts: StreamOptions) => cos(multiply(n, (2 * Math.PI * k) / span, opts), opts);

/**
 * The Hanning window, 0.5 − 0.5·cos(2πn/(M − 1)), as mx.hanning.
 * @example
 * mg.hanning(5)
 */
export function hanning(M: number, opts: StreamOptions = {}): MgArray {
  return windowOf("hanning", M, opts, (n, span) => subtract(0.5, multiply(cosTerm(n, span, 1, opts), 0.5, opts), opts));
}

/**
 * The Hamming window, 0.54 − 0.46·cos(2πn/(M − 1)), as mx.hamming.
 * @example
 * mg.hamming(5)
 */
export function hamming(M: number, opts: StreamOptions = {}): MgArray {
  return windowOf("hamming", M, opts, (n, span) => subtract(0.54, multiply(cosTerm(n, span, 1, opts), 0.46, opts), opts));
}

/**
 * The Bartlett (triangular) window, 1 − |2n/(M − 1) − 1|, as mx.bartlett.
 * @example
 * mg.bartlett(5)
 */
export function bartlett(M: number, opts: StreamOptions = {}): MgArray {
  return windowOf("bartlett", M, opts, (n, span) => subtract(1, abs(subtract(multiply(n, 2 / span, opts), 1, opts), opts), opts));
}

/**
 * The Blackman window, 0.42 − 0.5·cos(2πn/(M − 1)) + 0.08·cos(4πn/(M − 1)), as mx.blackman.
 * @example
 * mg.blackman(5)
 */
export function blackman(M: number, opts: StreamOptions = {}): MgArray {
  return windowOf("blackman", M, opts, (n, span) =>
    add(subtract(0.42, multiply(cosTerm(n, span, 1, opts), 0.5, opts), opts), multiply(cosTerm(n, span, 2, opts), 0.08, opts), opts));
}
