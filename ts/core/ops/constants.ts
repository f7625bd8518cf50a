// Mathematical constants, as MLX's Python floats (mx.e, mx.pi, mx.inf, mx.nan, mx.euler_gamma):
// plain JS numbers, so next to an array they are weak scalars like any other number.
/**
 * Euler's number e = 2.718…, as mx.e.
 */
export const e = Math.E;
/**
 * π = 3.14159…, as mx.pi.
 */
export const pi = Math.PI;
/**
 * Positive infinity, as mx.inf.
 */
export const inf = Infinity;
/**
 * Not a number, as mx.nan.
 */
export const nan = NaN;
/** The Euler–Mascheroni constant γ. */
export const eulerGamma = 0.5772156649015329;
