"""Evaluates the MLX side of test/fixtures/mlx-parity/cases.txt with a real MLX and writes
test/fixtures/mlx-parity/expected.json, which test/core/mlx-parity.test.ts compares metalgrad with.

    python3 -m venv /tmp/mlxenv && /tmp/mlxenv/bin/pip install "mlx[cpu]"
    /tmp/mlxenv/bin/python scripts/mlx-parity.py

MLX's CPU backend on Linux is enough: these cases pin semantics (dtypes, NaN rules, edge cases,
derivative conventions, random bits), not GPU rounding.
"""
import json
import math
import pathlib
import platform

import mlx.core as mx

HERE = pathlib.Path(__file__).resolve().parent.parent / "test" / "fixtures" / "mlx-parity"


def plain(v):
    """tolist() output as JSON: non-finite floats as strings, integers beyond 2^53 as {"int": "…"},
    nested lists kept (-0.0 stays -0.0: the test checks the sign of zero)."""
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53:
        return {"int": str(v)}  # beyond a double's exact integers: compared as a bigint
    if isinstance(v, complex):
        return {"re": plain(v.real), "im": plain(v.imag)}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def evaluate(name, expr):
    try:
        r = eval(expr, {"mx": mx})
        # Evaluate inside the try: MLX raises some errors (a singular matrix) only at eval time.
        if isinstance(r, mx.array) or (isinstance(r, (tuple, list)) and all(isinstance(x, mx.array) for x in r)):
            mx.eval(r)
    except Exception as e:  # the case expects an error; its text is informative only
        return {"error": f"{type(e).__name__}: {e}"}
    if name.startswith("repr_"):  # the printed form, character for character
        return {"repr": repr(r)}
    if isinstance(r, mx.array):
        return {"value": plain(r.tolist()), "dtype": str(r.dtype).replace("mlx.core.", ""), "shape": list(r.shape)}
    if isinstance(r, (tuple, list)):  # several gradients, a split, ...
        return {"value": [plain(x.tolist()) if isinstance(x, mx.array) else plain(x) for x in r]}
    return {"value": plain(r)}


def main():
    cases = {}
    for line in (HERE / "cases.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, python, _ = line.split("|")
        if name in cases:
            raise SystemExit(f"duplicate case {name}")
        cases[name] = evaluate(name, python)
    out = {"mlx": mx.__version__, "platform": f"{platform.system()} {platform.machine()}", "cases": cases}
    (HERE / "expected.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"{len(cases)} cases, MLX {mx.__version__}")


if __name__ == "__main__":
    main()
