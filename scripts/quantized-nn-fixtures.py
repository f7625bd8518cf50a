"""MLX's quantized layers on deterministic weights, written to test/fixtures/quantize/nn.json for
test/nn/layers/quantized.test.ts (CI has no MLX).

    /work/mlxenv/bin/python scripts/quantized-nn-fixtures.py
"""
import json
import pathlib

import numpy as np
import mlx.core as mx
import mlx.nn as nn

OUT = pathlib.Path(__file__).resolve().parent.parent / "test" / "fixtures" / "quantize" / "nn.json"


def grid(shape, mod, scale, shift):
    """(arange % mod)·scale − shift as float32: exact on both sides."""
    n = int(np.prod(shape))
    return mx.array(((np.arange(n) % mod) * scale - shift).astype(np.float32).reshape(shape))


def enc(a):
    return {"shape": list(a.shape), "dtype": str(a.dtype).replace("mlx.core.", ""), "data": np.array(a.astype(mx.float32) if a.dtype == mx.bfloat16 else a).ravel().tolist()}


def main():
    cases = []
    for mode, gs, bits in (("affine", 64, 4), ("affine", 32, 3), ("affine", 128, 8), ("mxfp4", None, None), ("mxfp8", None, None), ("nvfp4", None, None)):
        lin = nn.Linear(128, 24)
        lin.weight = grid((24, 128), 29, 0.0625, 0.875)
        lin.bias = grid((24,), 7, 0.5, 1.5)
        q = nn.QuantizedLinear.from_linear(lin, gs, bits, mode=mode)
        x = grid((3, 128), 13, 0.125, 0.75)
        emb = nn.Embedding(12, 64)
        emb.weight = grid((12, 64), 23, 0.125, 1.25)
        qe = nn.QuantizedEmbedding.from_embedding(emb, gs if gs != 128 else 64, bits, mode=mode)
        idx = mx.array([[3, 0], [11, 5]])
        xe = grid((2, 64), 11, 0.25, 1.0)
        cases.append({
            "mode": mode, "groupSize": gs, "bits": bits,
            "linear": {"x": enc(x), "y": enc(q(x)), "repr": repr(q), "keys": sorted(q.parameters().keys())},
            "embedding": {"idx": enc(idx), "y": enc(qe(idx)), "xe": enc(xe), "asLinear": enc(qe.as_linear(xe)), "repr": repr(qe), "keys": sorted(qe.parameters().keys())},
        })
    mx.random.seed(3)
    model = nn.Sequential(nn.Embedding(10, 64), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
    nn.quantize(model, 32, 4, class_predicate=lambda p, m: isinstance(m, nn.Linear) and m.weight.shape[0] > 10)
    pred_repr = repr(model)
    model2 = nn.Sequential(nn.Embedding(10, 64), nn.Linear(64, 32))
    nn.quantize(model2, class_predicate=lambda p, m: {"group_size": 32, "bits": 8} if p == "layers.1" else False)
    out = {"mlx": mx.__version__, "cases": cases, "predicateRepr": pred_repr, "dictPredicateRepr": repr(model2)}
    OUT.write_text(json.dumps(out))
    print(f"{len(cases)} cases → {OUT}")


if __name__ == "__main__":
    main()
