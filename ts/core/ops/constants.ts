// Mathematical constants, as MLX's Python floats (mx.e, mx.pi, mx.inf, mx.nan, mx.euler_gamma):
// plain JS numbers, so next to an array they are weak scalars like any other number.
export const e = Math.E;
export const pi = Math.PI;
export const inf = Infinity;
export const nan = NaN;
/** The Euler–Mascheroni constant γ. */
export const eulerGamma = 0.5772156649015329;
