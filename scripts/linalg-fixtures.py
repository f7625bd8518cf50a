"""MLX's linalg results (float64, CPU stream) for fixed matrices, written to
test/fixtures/linalg/cases.json for test/backend/cpu/linalg.test.ts (CI has no MLX).

    /work/mlxenv/bin/python scripts/linalg-fixtures.py

Sign-free quantities are compared directly (LU, QR — LAPACK's reflector convention fixes the
signs —, Cholesky, inverses, eigen/singular values); eigen/singular vectors are checked by their
defining identities in the test instead.
"""
import json
import pathlib

import numpy as np
import mlx.core as mx

OUT = pathlib.Path(__file__).resolve().parent.parent / "test" / "fixtures" / "linalg" / "cases.json"
S = mx.cpu


def L(a):
    return np.array(a).tolist()


def main():
    rng = np.random.default_rng(15)
    cases = []
    shapes = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (7, 7), (8, 8), (3, 5), (5, 3), (6, 2), (2, 6), (16, 16)]
    for m, n in shapes:
        for variant in range(2):
            a = rng.standard_normal((m, n))
            if variant == 1 and m == n and m > 1:
                a[:, 1] = a[:, 0] * 2 + a[:, 1] * 1e-3  # nearly dependent columns
            A = mx.array(a, dtype=mx.float64)
            c = {"m": m, "n": n, "a": a.ravel().tolist()}
            lu, piv = mx.linalg.lu_factor(A, stream=S)
            c["lu"] = L(lu)
            c["pivots"] = L(piv)
            q, r = mx.linalg.qr(A, stream=S)
            c["q"], c["r"] = L(q), L(r)
            c["sv"] = L(mx.linalg.svd(A, compute_uv=False, stream=S))
            if m == n:
                spd = a @ a.T + m * np.eye(m)
                c["spd"] = spd.ravel().tolist()
                P = mx.array(spd, dtype=mx.float64)
                c["chol_l"] = L(mx.linalg.cholesky(P, stream=S))
                c["chol_u"] = L(mx.linalg.cholesky(P, upper=True, stream=S))
                c["inv"] = L(mx.linalg.inv(A, stream=S))
                c["tri_inv_l"] = L(mx.linalg.tri_inv(A, stream=S))
                c["tri_inv_u"] = L(mx.linalg.tri_inv(A, upper=True, stream=S))
                c["eigvalsh_l"] = L(mx.linalg.eigvalsh(A, stream=S))
                c["eigvalsh_u"] = L(mx.linalg.eigvalsh(A, UPLO="U", stream=S))
                ev = np.array(mx.linalg.eigvals(A, stream=S))
                c["eigvals"] = [[float(v.real), float(v.imag)] for v in ev]
                c["det"] = float(np.array(mx.linalg.det(A, stream=S)))
                sgn, ld = mx.linalg.slogdet(A, stream=S)
                c["slogdet"] = [float(np.array(sgn)), float(np.array(ld))]
            cases.append(c)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"mlx": mx.__version__, "cases": cases}))
    print(f"{len(cases)} cases → {OUT} (MLX {mx.__version__})")


if __name__ == "__main__":
    main()
