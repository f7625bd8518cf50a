"""Writes test/fixtures/mlx-fast/fixtures.json: values and gradients of MLX's mx.fast ops
(rms_norm, layer_norm, rope, scaled_dot_product_attention, cross_entropy) on small deterministic
inputs, which test/fast/*.test.ts compares mg.fast with on both devices. CI has no MLX, so the
file is committed; regenerate with

    /work/mlxenv/bin/python scripts/mlx-fast-fixtures.py

Inputs are written into the file (as float64 lists of the values after rounding to the case's
dtype), so the TypeScript side needs no generator. MLX's CPU backend runs the ops' reference
compositions (mlx/fast.cpp): these fixtures pin semantics and values, not Metal rounding.
"""
import json
import math
import pathlib
import platform

import mlx.core as mx
import numpy as np

OUT = pathlib.Path(__file__).resolve().parent.parent / "test" / "fixtures" / "mlx-fast" / "fixtures.json"
DT = {"float32": mx.float32, "float16": mx.float16, "bfloat16": mx.bfloat16}


def plain(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return float(str(np.float32(v)))  # every value is a float32: its shortest decimal
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def values(shape, seed, dtype="float32", scale=1.0):
    """Deterministic pseudo-random values (a sine sequence), rounded to dtype."""
    n = 1
    for s in shape:
        n *= s
    flat = [scale * math.sin(1.7 * i + 0.31 * seed + 0.1 * seed * seed) * (1 + 0.5 * math.cos(0.37 * i * seed)) for i in range(n)]
    return mx.array(flat, dtype=mx.float32).reshape(shape).astype(DT[dtype])


def arr(a):
    a32 = a.astype(mx.float32) if a.dtype != mx.bool_ else a
    return {"shape": list(a.shape), "dtype": str(a.dtype).replace("mlx.core.", ""), "values": plain(a32.reshape(-1).tolist())}


def case(name, op, inputs, grad_args, extra, cot_seed=99):
    """op(*inputs) → out; gradients of sum(out * cotangent) w.r.t. inputs[i] for i in grad_args."""
    out = op(*inputs)
    cot = values(out.shape, cot_seed, "float32").astype(out.dtype)
    entry = {"inputs": [arr(x) if isinstance(x, mx.array) else x for x in inputs], "out": arr(out), "cotangent": arr(cot)}
    if grad_args:
        _, grads = mx.vjp(lambda *xs: op(*[xs[grad_args.index(i)] if i in grad_args else inputs[i] for i in range(len(inputs))]), [inputs[i] for i in grad_args], [cot])
        entry["grads"] = {str(i): arr(g) for i, g in zip(grad_args, grads)}
    entry.update(extra)
    return name, entry


def main():
    cases = {}

    def add(c):
        cases[c[0]] = c[1]

    for dt in ["float32", "float16", "bfloat16"]:
        x = values((2, 3, 16), 1, dt, 2.0)
        w = values((16,), 2, dt)
        b = values((16,), 3, dt)
        add(case(f"rms_norm_{dt}", lambda x, w: mx.fast.rms_norm(x, w, 1e-5), [x, w], [0, 1], {"eps": 1e-5}))
        add(case(f"rms_norm_noweight_{dt}", lambda x: mx.fast.rms_norm(x, None, 1e-5), [x], [0], {"eps": 1e-5}))
        add(case(f"layer_norm_{dt}", lambda x, w, b: mx.fast.layer_norm(x, w, b, 1e-5), [x + 1, w, b], [0, 1, 2], {"eps": 1e-5}))
        add(case(f"layer_norm_none_{dt}", lambda x: mx.fast.layer_norm(x, None, None, 1e-5), [x], [0], {"eps": 1e-5}))
    # a long row: the looped kernel
    x = values((1, 4200), 4, "float32")
    add(case("rms_norm_long_float32", lambda x: mx.fast.rms_norm(x, None, 1e-6), [x], [0], {"eps": 1e-6}))

    for dt in ["float32", "float16", "bfloat16"]:
        x = values((2, 2, 5, 8), 5, dt)
        for trad in [False, True]:
            add(case(f"rope_{'trad' if trad else 'split'}_{dt}", lambda x: mx.fast.rope(x, 8, traditional=trad, base=10000.0, scale=1.0, offset=3), [x], [0],
                     {"dims": 8, "traditional": trad, "base": 10000.0, "scale": 1.0, "offset": 3}))
    x = values((2, 2, 5, 8), 6, "float32")
    add(case("rope_partial_scale", lambda x: mx.fast.rope(x, 4, traditional=False, base=500.0, scale=0.5, offset=7), [x], [0],
             {"dims": 4, "traditional": False, "base": 500.0, "scale": 0.5, "offset": 7}))
    off = mx.array([1, 4], dtype=mx.int32)
    add(case("rope_offset_array", lambda x: mx.fast.rope(x, 8, traditional=False, base=10000.0, scale=1.0, offset=off), [x], [0],
             {"dims": 8, "traditional": False, "base": 10000.0, "scale": 1.0, "offset": [1, 4]}))
    freqs = mx.array([1.0, 3.0, 10.0, 200.0])
    add(case("rope_freqs", lambda x: mx.fast.rope(x, 8, traditional=True, base=None, scale=1.0, offset=2, freqs=freqs), [x], [0],
             {"dims": 8, "traditional": True, "base": None, "scale": 1.0, "offset": 2, "freqs": [1.0, 3.0, 10.0, 200.0]}))
    x3 = values((3, 6, 8), 7, "float32")
    add(case("rope_3d", lambda x: mx.fast.rope(x, 8, traditional=False, base=10000.0, scale=1.0, offset=0), [x3], [0],
             {"dims": 8, "traditional": False, "base": 10000.0, "scale": 1.0, "offset": 0}))

    def sdpa_case(name, qs, ks, dt="float32", mask=None, mask_kind=None, sinks=None, Dv=None, seed=10):
        B, Hq, qL, D = qs
        _, Hkv, kL, _ = ks
        Dv = Dv or D
        q = values(qs, seed, dt)
        k = values(ks, seed + 1, dt)
        v = values((B, Hkv, kL, Dv), seed + 2, dt)
        scale = 1 / math.sqrt(D)
        inputs = [q, k, v]
        extra = {"scale": scale, "mask": mask_kind or ("causal" if mask == "causal" else None)}
        if isinstance(mask, mx.array):
            inputs.append(mask)
        if sinks is not None:
            inputs.append(sinks)
            extra["sinks"] = True

        def op(q, k, v, *rest):
            m = mask if not isinstance(mask, mx.array) else rest[0]
            s = rest[-1] if sinks is not None else None
            return mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask=m, sinks=s)

        add(case(name, op, inputs, [0, 1, 2], extra))

    sdpa_case("sdpa_plain", (1, 2, 6, 8), (1, 2, 9, 8))
    sdpa_case("sdpa_gqa_causal", (2, 4, 6, 8), (2, 2, 9, 8), mask="causal")
    sdpa_case("sdpa_causal_qlong", (1, 2, 7, 8), (1, 2, 4, 8), mask="causal")
    bm = mx.array([[(i * 7 + j * 3) % 5 != 0 and not (i == 0) for j in range(9)] for i in range(6)]).reshape(1, 1, 6, 9)
    sdpa_case("sdpa_bool_mask", (2, 2, 6, 8), (2, 2, 9, 8), mask=bm, mask_kind="bool")
    am = values((1, 2, 1, 9), 30, "float32")
    am = mx.where(mx.arange(9).reshape(1, 1, 1, 9) == 4, -float("inf"), am)
    sdpa_case("sdpa_additive_mask", (1, 2, 6, 8), (1, 2, 9, 8), mask=am, mask_kind="additive")
    sdpa_case("sdpa_sinks_causal", (1, 4, 5, 8), (1, 2, 5, 8), mask="causal", sinks=values((4,), 31, "float32"))
    sdpa_case("sdpa_decode", (1, 4, 1, 16), (1, 1, 20, 16))
    sdpa_case("sdpa_head72", (1, 1, 10, 72), (1, 1, 12, 72), mask="causal")
    sdpa_case("sdpa_dv_differs", (1, 2, 6, 16), (1, 2, 7, 16), Dv=8)
    sdpa_case("sdpa_float16", (1, 2, 9, 16), (1, 2, 9, 16), dt="float16", mask="causal")
    sdpa_case("sdpa_bfloat16", (1, 2, 9, 16), (1, 2, 9, 16), dt="bfloat16")

    for dt in ["float32", "bfloat16"]:
        logits = values((3, 4, 11), 40, dt, 3.0)
        targets = mx.array([[(i * 5 + j * 3) % 11 for j in range(4)] for i in range(3)], dtype=mx.int32)
        add(case(f"cross_entropy_{dt}", lambda l, t: mx.fast.cross_entropy(l, t), [logits, targets], [0], {}))

    OUT.write_text(json.dumps({"mlx": mx.__version__, "platform": f"{platform.system()} {platform.machine()}", "cases": cases}) + "\n")
    print(f"{len(cases)} cases, MLX {mx.__version__}, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
