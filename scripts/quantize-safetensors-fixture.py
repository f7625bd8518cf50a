"""A checkpoint quantized by MLX, saved with mx.save_safetensors: test/fixtures/quantize/mlx-quantized.safetensors.
test/core/ops-quantized.test.ts reads it (metalgrad must run MLX's packed tensors unchanged).

    /work/mlxenv/bin/python scripts/quantize-safetensors-fixture.py
"""
import pathlib

import numpy as np
import mlx.core as mx

OUT = pathlib.Path(__file__).resolve().parent.parent / "test" / "fixtures" / "quantize" / "mlx-quantized.safetensors"


def main():
    rng = np.random.default_rng(1515)
    w = mx.array(rng.standard_normal((32, 256)).astype(np.float16))
    x = mx.array(rng.standard_normal((3, 256)).astype(np.float16))
    t = {"w": w, "x": x}
    for name, mode, gs, bits in (("q4", "affine", 64, 4), ("q3", "affine", 32, 3), ("q8", "affine", 128, 8),
                                 ("mxfp4", "mxfp4", None, None), ("mxfp8", "mxfp8", None, None), ("nvfp4", "nvfp4", None, None)):
        q = mx.quantize(w, gs, bits, mode=mode)
        t[f"{name}.weight"] = q[0]
        t[f"{name}.scales"] = q[1]
        if len(q) > 2:
            t[f"{name}.biases"] = q[2]
        t[f"{name}.y"] = mx.quantized_matmul(x, *q, True, gs, bits, mode=mode) if mode == "affine" else \
            mx.quantized_matmul(x, q[0], q[1], None, True, gs, bits, mode=mode)
    mx.save_safetensors(str(OUT), t, metadata={"mlx": mx.__version__})
    print(f"{len(t)} tensors → {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
