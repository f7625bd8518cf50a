# Fits the polynomials of the native float32 erf (Sources/MGCpu/vec_impl.h, verf):
#   |x| < 0.921875:        erf(x) = x · P(x²)             P of degree 5
#   0.921875 ≤ |x| < 3.92: erf(x) = 1 − exp(−x²) · Q(1/|x|)  Q of degree 10, fitted to exp(x²)·erfc(x)
# by weighted least squares on Chebyshev-distributed nodes, reweighted toward minimax (Lawson), with
# relative-error weights. Prints the coefficients (highest degree first, as Horner's rule uses them)
# and the worst error of the whole algorithm evaluated in float32, in ulp.
#
#   /work/mlxenv/bin/python scripts/fit-erf.py      (needs numpy)
import math

import numpy as np

erf = np.vectorize(math.erf)
erfc = np.vectorize(math.erfc)


def fit(f, a, b, degree, variable, iterations=60, nodes=4000):
    k = np.arange(nodes)
    xs = (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / nodes)
    v, y = variable(xs), f(xs)
    w = np.ones_like(xs)
    for _ in range(iterations):
        A = np.vander(v, degree + 1) * (w / np.abs(y))[:, None]
        c, *_ = np.linalg.lstsq(A, y * w / np.abs(y), rcond=None)
        err = np.abs(np.polyval(c, v) - y) / np.abs(y)
        w = w * (err / err.max()) ** 0.3 + 1e-12
        w /= w.max()
    return c, err.max()


P, p_err = fit(lambda x: erf(x) / x, 1e-6, 0.921875, 5, lambda x: x * x)
Q, q_err = fit(lambda x: np.exp(x * x) * erfc(x), 0.921875, 3.92, 10, lambda x: 1 / x)
print(f"P (relative error {p_err:.2e}):", ", ".join(f"{c:.9e}f" for c in P))
print(f"Q (relative error {q_err:.2e}):", ", ".join(f"{c:.9e}f" for c in Q))

# the algorithm in float32 arithmetic (exp in float64, rounded), against float64 erf
f32 = np.float32


def horner(coeffs, v):
    r = np.full_like(v, f32(coeffs[0]))
    for c in coeffs[1:]:
        r = (r * v + f32(c)).astype(np.float32)
    return r


xs = np.linspace(1e-3, 3.92, 2_000_001).astype(np.float32)
small = horner(P, xs * xs) * xs
big = (f32(1) - np.exp(-(xs.astype(np.float64) ** 2)).astype(np.float32) * horner(Q, (f32(1) / xs).astype(np.float32))).astype(np.float32)
got = np.where(xs < 0.921875, small, big).astype(np.float64)
want = erf(xs.astype(np.float64))
ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
print("worst error in float32:", round(float(np.max(np.abs(got - want) / ulp)), 2), "ulp")
