"""MLX's quantize/dequantize outputs for deterministic inputs, written to
test/fixtures/quantize/cases.json; test/backend/cpu/quantize.test.ts regenerates the same inputs
(test/fixtures/quantize/inputs.ts implements this file's generator) and compares bit for bit.

    /work/mlxenv/bin/python scripts/quantize-fixtures.py              # the committed fixture
    /work/mlxenv/bin/python scripts/quantize-fixtures.py --repeat 40 --out /tmp/quant-big.json
    MG_QUANT_FIXTURE=/tmp/quant-big.json bun test test/backend/cpu/quantize.test.ts

Inputs are built from a xorshift32 stream with integer arithmetic only, then rounded to the
dtype (float64 → float32/float16 round to nearest even; bfloat16 through float32), so both
languages hold the same bits; each case records a hash of the input bits to prove it.
"""
import argparse
import base64
import json
import pathlib

import numpy as np
import mlx.core as mx

OUT = pathlib.Path(__file__).resolve().parent.parent / "test" / "fixtures" / "quantize" / "cases.json"
M32 = 0xFFFFFFFF


class Rng:
    def __init__(self, seed):
        self.x = (seed * 2654435761 + 1) & M32 or 1

    def next(self):
        x = self.x
        x ^= (x << 13) & M32
        x ^= x >> 17
        x ^= (x << 5) & M32
        self.x = x
        return x

    def int(self, n):  # uniform-ish in [0, n)
        return self.next() % n


MANT = {"float32": 24, "float16": 11, "bfloat16": 8}
# Exponent ranges per dtype for the "extreme" kind (include subnormals, stay below overflow).
EXP_RANGE = {"float32": (-150, 120), "float16": (-26, 14), "bfloat16": (-135, 120)}


def gen_values(kind, dtype, rows, cols, group, seed):
    """float64 values; every op is exact in float64 (|m| < 2^24 times a power of two)."""
    r = Rng(seed)
    mb = MANT[dtype]
    out = [0.0] * (rows * cols)
    for g in range(rows * cols // group):
        base = g * group
        if kind == "normal":
            e = r.int(9) - 4
            for j in range(group):
                m = sum(r.int(1 << (mb - 2)) for _ in range(4)) - (1 << (mb - 1))
                out[base + j] = m * 2.0 ** (e - mb)
        elif kind == "grid":  # multiples of 1/4: exact ties for rint and the fp4 table
            shift = r.int(4)
            for j in range(group):
                out[base + j] = (r.int(33) - 16) * 2.0 ** (-2 - shift)
        elif kind == "groups":
            t = r.int(7)
            c = (r.int(255) - 127) * 2.0 ** (r.int(12) - 8)
            for j in range(group):
                m = r.int(1 << (mb - 1)) * 2.0 ** (r.int(8) - mb)
                if t == 0:
                    v = 0.0
                elif t == 1:
                    v = c
                elif t == 2:
                    v = c if j == r.int(group) else 0.0
                elif t == 3:
                    v = -m
                elif t == 4:
                    v = m
                elif t == 5:  # one large value among small ones
                    v = m * (256.0 if j == 0 else 1.0 / 64)
                else:
                    v = -0.0 if j % 2 else m - 0.5
                out[base + j] = v
        elif kind == "extreme":
            lo, hi = EXP_RANGE[dtype]
            e = lo + r.int(hi - lo + 1)
            for j in range(group):
                m = r.int(1 << mb) - (1 << (mb - 1))
                out[base + j] = m * 2.0 ** (e - mb + r.int(4))
        else:
            raise ValueError(kind)
    return out


def to_dtype(vals, dtype, shape):
    a = np.array(vals, dtype=np.float64).reshape(shape)
    if dtype == "float16":
        return mx.array(a.astype(np.float16))
    x = mx.array(a.astype(np.float32))
    return x.astype(mx.bfloat16) if dtype == "bfloat16" else x


def raw(a):
    """Little-endian element bytes of an evaluated MLX array (bfloat16 via its uint16 view).
    NaNs are written as the positive quiet NaN: their sign and payload (x86's default NaN is
    negative) carry no meaning and JavaScript does not keep them."""
    if mx.issubdtype(a.dtype, mx.floating):
        a = mx.where(mx.isnan(a), mx.array(float("nan"), a.dtype), a)
        mx.eval(a)
    if a.dtype == mx.bfloat16:
        b = np.array(a.view(mx.uint16))
        b[(b & 0x7FFF) > 0x7F80] = 0x7FC0
        return b.tobytes()
    if a.dtype == mx.float16:
        b = np.array(a).view(np.uint16).copy()
        b[(b & 0x7FFF) > 0x7C00] = 0x7E00
        return b.tobytes()
    if a.dtype == mx.float32:
        b = np.array(a).view(np.uint32).copy()
        b[(b & 0x7FFFFFFF) > 0x7F800000] = 0x7FC00000
        return b.tobytes()
    return np.array(a).tobytes()


def fnv1a(b):
    h = 0x811C9DC5
    for byte in b:
        h = ((h ^ byte) * 0x01000193) & M32
    return h


def b64(b):
    return base64.b64encode(b).decode()


CONFIGS = (
    [("affine", gs, bits, None) for gs in (32, 64, 128) for bits in (2, 3, 4, 5, 6, 8)]
    + [("mxfp4", 32, 4, None), ("mxfp8", 32, 8, None), ("nvfp4", 16, 4, None), ("nvfp4", 16, 4, "global")]
)
KINDS = ("normal", "grid", "groups", "extreme")
DTYPES = ("float32", "float16", "bfloat16")
DEQ_DTYPES = {"float32": "float16", "float16": "bfloat16", "bfloat16": "float32"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1, help="seeds per (dtype, config, kind)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    cases = []
    seed = 1
    for rep in range(args.repeat):
        for dtype in DTYPES:
            for mode, gs, bits, glob in CONFIGS:
                for kind in KINDS:
                    seed += 1
                    rows, cols = (3, 128) if rep % 2 == 0 else (2, 256)
                    shape = [rows, cols] if seed % 3 else [1, rows, cols]
                    vals = gen_values(kind, dtype, rows, cols, gs, seed)
                    w = to_dtype(vals, dtype, shape)
                    gscale = None
                    kw = {}
                    if glob:
                        gscale = float(np.float32((1 + Rng(seed).int(4000)) / 256.0))
                        kw["global_scale"] = mx.array(gscale, dtype=mx.float32)
                    res = mx.quantize(w, gs, bits, mode=mode, **kw)
                    mx.eval(res)
                    case = {
                        "dtype": dtype, "mode": mode, "groupSize": gs, "bits": bits, "kind": kind,
                        "seed": seed, "shape": shape, "globalScale": gscale,
                        "input": fnv1a(raw(w)),
                        "wq": b64(raw(res[0])), "scales": b64(raw(res[1])),
                    }
                    if mode == "affine":
                        case["biases"] = b64(raw(res[2]))
                    # Dequantize MLX's own result: the default dtype and one other.
                    deq = {}
                    for dt in (None, DEQ_DTYPES[dtype]):
                        d = mx.dequantize(*res, group_size=gs, bits=bits, mode=mode,
                                          dtype=None if dt is None else getattr(mx, dt), **kw) \
                            if mode != "affine" else \
                            mx.dequantize(res[0], res[1], res[2], gs, bits, mode, dtype=None if dt is None else getattr(mx, dt))
                        mx.eval(d)
                        deq[dt or "default"] = {"dtype": str(d.dtype).replace("mlx.core.", ""), "hash": fnv1a(raw(d))}
                    case["dequantize"] = deq
                    cases.append(case)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"mlx": mx.__version__, "cases": cases}, separators=(",", ":")))
    print(f"{len(cases)} cases → {out} (MLX {mx.__version__})")


if __name__ == "__main__":
    main()
