"""Writes test/fixtures/io/: small files written by numpy, MLX, the safetensors reference library and
GGUF's layout (written here byte by byte, as llama.cpp's gguf-py would), plus expected.json — what
each file must load as: dtype, shape and the row-major little-endian bytes in hex.

Expected values come from MLX's mx.load wherever MLX loads the file correctly, else from numpy or
gguf-py. test/io/fixtures.test.ts checks metalgrad against them (CI has no MLX: these committed files
are what it checks).

    /work/mlxenv/bin/python scripts/io-fixtures.py [--extra-path DIR ...]

--extra-path appends a site-packages directory holding `gguf` and `safetensors`
(`pip install gguf safetensors` in any venv of the same Python): with them, the K-quant references
are cross-checked against gguf-py and a file written by the safetensors library is added.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--extra-path", action="append", default=[])
args = ap.parse_args()
sys.path.extend(args.extra_path)

import mlx.core as mx  # noqa: E402

try:
    from gguf.quants import dequantize as gguf_dequantize  # noqa: E402
    from gguf import GGMLQuantizationType  # noqa: E402
except ImportError:
    gguf_dequantize = None
try:
    import safetensors.numpy as st_numpy  # noqa: E402
except ImportError:
    st_numpy = None

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "fixtures", "io")
os.makedirs(ROOT, exist_ok=True)
rng = np.random.default_rng(14)
expected = {"generator": "scripts/io-fixtures.py", "mlx": mx.__version__, "numpy": np.__version__, "files": {}}


def path(name):
    return os.path.join(ROOT, name)


def le_bytes(a):
    """Row-major little-endian bytes of a numpy array."""
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.tobytes()


def from_mlx(x):
    """dtype name, shape and hex bytes of an MLX array (bfloat16 via its bits)."""
    name = str(x.dtype).split(".")[-1]
    if x.dtype == mx.bfloat16:
        raw = np.array(x.view(mx.uint16)).tobytes()
    else:
        raw = le_bytes(np.array(x))
    return {"dtype": "bool" if name == "bool_" else name, "shape": list(x.shape), "hex": raw.hex()}


def from_numpy(a, dtype_name=None):
    return {"dtype": dtype_name or (a.dtype.name if a.dtype.name != "bool" else "bool"), "shape": list(a.shape),
            "hex": le_bytes(a).hex()}


def record(name, fmt, source, tensors=None, metadata=None, error=None, note=None):
    entry = {"format": fmt, "source": source}
    if error is not None:
        entry["error"] = error
    else:
        entry["tensors"] = tensors
        if metadata is not None:
            entry["metadata"] = metadata
    if note:
        entry["note"] = note
    expected["files"][name] = entry


def mlx_load(name, **kw):
    """What MLX loads from a fixture, as expected.json entries."""
    r = mx.load(path(name), **kw)
    if isinstance(r, tuple):
        arrays, meta = r
    else:
        arrays, meta = r, None
    if isinstance(arrays, dict):
        tensors = {k: from_mlx(v) for k, v in arrays.items()}
    else:
        tensors = {"": from_mlx(arrays)}
    return tensors, meta


# ---------------------------------------------------------------------------------------------- npy
NP_TYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
            "float16", "float32", "float64", "complex64"]


def sample(dtype, shape):
    n = int(np.prod(shape))
    if dtype == "bool":
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    if dtype.startswith("complex"):
        return (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dtype).reshape(shape)
    if dtype.startswith("float"):
        v = rng.normal(size=n) * 100
        v[:3] = [np.inf, -0.0, np.nan][: min(3, n)]
        return v.astype(dtype).reshape(shape)
    info = np.iinfo(dtype)
    v = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    v[:2] = [info.min, info.max][: min(2, n)]
    return v.reshape(shape)


for t in NP_TYPES:
    for order in ["<", ">"]:
        if order == ">" and t in ("bool", "uint8", "int8"):
            continue
        a = sample(t, (3, 4))
        stored = a.astype(np.dtype(t).newbyteorder(order)) if np.dtype(t).itemsize > 1 else a
        name = f"numpy_{t}_{'be' if order == '>' else 'le'}.npy"
        np.save(path(name), stored)
        tensors, _ = mlx_load(name)
        if t == "complex64" and order == ">":
            # MLX swaps all 8 bytes of a big-endian complex64 as one word: real and imaginary trade places.
            assert bytes.fromhex(tensors[""]["hex"]) != le_bytes(a), name
            record(name, "npy", "numpy", {"": from_numpy(a)},
                   note="MLX 0.32.4 loads big-endian complex64 with real and imaginary parts swapped")
            continue
        assert bytes.fromhex(tensors[""]["hex"]) == le_bytes(a), name  # MLX agrees with numpy
        record(name, "npy", "numpy", tensors)

for name, a in [
    ("numpy_fortran_2d.npy", np.asfortranarray(sample("float32", (3, 5)))),
    ("numpy_fortran_3d_be.npy", np.asfortranarray(sample("int32", (2, 3, 4))).astype(">i4")),
    ("numpy_scalar.npy", np.float64(-2.5)),
    ("numpy_empty.npy", np.zeros((0, 3), np.float32)),
    ("numpy_1d.npy", np.arange(7, dtype=np.int16)),
]:
    np.save(path(name), a)
    tensors, _ = mlx_load(name)
    assert bytes.fromhex(tensors[""]["hex"]) == le_bytes(np.asarray(a)), name
    record(name, "npy", "numpy", tensors)

# numpy's version 2.0 and 3.0 headers (3.0: UTF-8 header text).
for version in [(2, 0), (3, 0)]:
    a = sample("float32", (2, 2))
    name = f"numpy_v{version[0]}.npy"
    with open(path(name), "wb") as f:
        np.lib.format.write_array(f, a, version=version)
    record(name, "npy", "numpy", {"": from_numpy(a)})

# MLX's writer: bfloat16 as '<V2', a transposed array in Fortran order.
x = mx.array(rng.normal(size=(2, 3)).astype(np.float32)).astype(mx.bfloat16)
mx.save(path("mlx_bfloat16.npy"), x)
record("mlx_bfloat16.npy", "npy", "mlx", mlx_load("mlx_bfloat16.npy")[0])
x = mx.arange(12, dtype=mx.int32).reshape(3, 4).T
mx.save(path("mlx_transposed.npy"), x)
record("mlx_transposed.npy", "npy", "mlx", mlx_load("mlx_transposed.npy")[0])

np.save(path("numpy_unicode.npy"), np.array(["ab", "c"]))
record("numpy_unicode.npy", "npy", "numpy", error="dtype '<U2' is not supported")
np.save(path("numpy_complex128.npy"), np.array([1 + 2j]))
record("numpy_complex128.npy", "npy", "numpy", error="dtype '<c16' is not supported")
np.save(path("numpy_structured.npy"), np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]))
record("numpy_structured.npy", "npy", "numpy", error="structured dtypes cannot be loaded")

# ---------------------------------------------------------------------------------------------- npz
arrs = {"a": sample("float32", (4, 5)), "b": sample("int64", (3,)), "c": np.asfortranarray(sample("float64", (2, 3)))}
np.savez(path("numpy_savez.npz"), **arrs)
record("numpy_savez.npz", "npz", "numpy", mlx_load("numpy_savez.npz")[0])
np.savez_compressed(path("numpy_savez_compressed.npz"), **arrs)
record("numpy_savez_compressed.npz", "npz", "numpy", mlx_load("numpy_savez_compressed.npz")[0])
np.savez(path("numpy_positional.npz"), sample("uint8", (5,)), sample("float16", (2, 2)))
record("numpy_positional.npz", "npz", "numpy", mlx_load("numpy_positional.npz")[0])
mx.savez(path("mlx_savez.npz"), mx.array([1.5, 2.5]), w=mx.arange(6).reshape(2, 3))
record("mlx_savez.npz", "npz", "mlx", mlx_load("mlx_savez.npz")[0])
mx.savez_compressed(path("mlx_savez_compressed.npz"), w=mx.arange(64, dtype=mx.float32).reshape(8, 8))
record("mlx_savez_compressed.npz", "npz", "mlx", mlx_load("mlx_savez_compressed.npz")[0])

# ------------------------------------------------------------------------------------- safetensors
st = {n: mx.array(sample(t, (2, 3))) for n, t in [
    ("b", "bool"), ("u8", "uint8"), ("u16", "uint16"), ("u32", "uint32"), ("u64", "uint64"), ("i8", "int8"),
    ("i16", "int16"), ("i32", "int32"), ("i64", "int64"), ("f16", "float16"), ("f32", "float32"),
    ("c64", "complex64")]}
st["bf16"] = mx.array(sample("float32", (4,))).astype(mx.bfloat16)
st["scalar"] = mx.array(3.25)
st["empty"] = mx.zeros((0, 4))
mx.save_safetensors(path("mlx_all_dtypes.safetensors"), st, metadata={"format": "mlx", "note": "héllo"})
t, m = mlx_load("mlx_all_dtypes.safetensors", return_metadata=True)
record("mlx_all_dtypes.safetensors", "safetensors", "mlx", t, m)


def write_safetensors(name, header, data):
    h = json.dumps(header).encode()
    with open(path(name), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


# F64 (MLX 0.32.4 can neither save nor load it) and F8_E4M3 (MLX loads its raw bytes as uint8).
f64 = sample("float64", (2, 2))
write_safetensors("float64.safetensors", {"x": {"dtype": "F64", "shape": [2, 2], "data_offsets": [0, 32]}}, le_bytes(f64))
record("float64.safetensors", "safetensors", "numpy", {"x": from_numpy(f64)},
       note="MLX 0.32.4: [safetensor] unsupported dtype F64")
write_safetensors("f8.safetensors", {"x": {"dtype": "F8_E4M3", "shape": [3], "data_offsets": [0, 3]}}, bytes([0x38, 0x40, 0xC8]))
record("f8.safetensors", "safetensors", "mlx", mlx_load("f8.safetensors")[0])
write_safetensors("f8_e5m2.safetensors", {"x": {"dtype": "F8_E5M2", "shape": [1], "data_offsets": [0, 1]}}, b"\x3c")
record("f8_e5m2.safetensors", "safetensors", "mlx", error="dtype F8_E5M2 is not supported")
if st_numpy is not None:
    ref = {"w": sample("float32", (3, 2)), "i": sample("int64", (4,)), "h": sample("float16", (2,)),
           "flag": sample("bool", (3,))}
    st_numpy.save_file(ref, path("reference_library.safetensors"), metadata={"k": "v"})
    t, m = mlx_load("reference_library.safetensors", return_metadata=True)
    record("reference_library.safetensors", "safetensors", "safetensors library", t, m)

# -------------------------------------------------------------------------------------------- gguf


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf(name, tensors, kv=(), align=32):
    """tensors: (name, ne innermost first, ggml type, raw bytes); kv: (key, type, encoded value)."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for k, t, v in kv:
        out += gstr(k) + struct.pack("<I", t) + v
    off = 0
    infos = b""
    datas = []
    for tname, ne, ty, raw in tensors:
        infos += gstr(tname) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        infos += struct.pack("<IQ", ty, off)
        pad = (-len(raw)) % align
        datas.append(raw + b"\0" * pad)
        off += len(raw) + pad
    out += infos
    out += b"\0" * ((-len(out)) % align)
    out += b"".join(datas)
    with open(path(name), "wb") as f:
        f.write(out)


mx.save_gguf(path("mlx_save.gguf"), {
    "f32": mx.array(sample("float32", (3, 4))), "f16": mx.array(sample("float16", (5,))),
    "i8": mx.array(sample("int8", (2, 2))), "i16": mx.array(sample("int16", (3,))),
    "i32": mx.array(sample("int32", (2, 1, 3))),
}, {"name": "fixture", "tokens": ["a", "bc", ""], "ctx": mx.array(4096), "ids": mx.array([1, 2, 3]),
    "scale": mx.array(0.5), "flags": mx.array([True, False])})
t, m = mlx_load("mlx_save.gguf", return_metadata=True)
meta = {}
for k, v in m.items():
    meta[k] = from_mlx(v) if isinstance(v, mx.array) else v
record("mlx_save.gguf", "gguf", "mlx", t, meta)

# Every metadata value type GGUF has (MLX crashes on float64 scalars, so that one goes alone below).
kv = [("u8", 0, struct.pack("<B", 200)), ("i8", 1, struct.pack("<b", -3)), ("u16", 2, struct.pack("<H", 60000)),
      ("i16", 3, struct.pack("<h", -300)), ("u32", 4, struct.pack("<I", 4000000000)), ("i32", 5, struct.pack("<i", -7)),
      ("f32", 6, struct.pack("<f", 1.5)), ("b", 7, struct.pack("<B", 1)), ("s", 8, gstr("héllo")),
      ("u64", 10, struct.pack("<Q", 2 ** 40)), ("i64", 11, struct.pack("<q", -2 ** 40)),
      ("ai32", 9, struct.pack("<IQ", 5, 3) + struct.pack("<3i", 1, -2, 3)),
      ("astr", 9, struct.pack("<IQ", 8, 2) + gstr("a") + gstr("bc")),
      ("abool", 9, struct.pack("<IQ", 7, 2) + bytes([1, 0])),
      ("af32", 9, struct.pack("<IQ", 6, 2) + struct.pack("<2f", 1.5, -2.5)),
      ("aempty", 9, struct.pack("<IQ", 5, 0)),
      ("general.alignment", 4, struct.pack("<I", 64))]
write_gguf("metadata_types.gguf", [("t", [2], 0, struct.pack("<2f", 1, 2))], kv, align=64)
t, m = mlx_load("metadata_types.gguf", return_metadata=True)
record("metadata_types.gguf", "gguf", "mlx", t, {k: from_mlx(v) if isinstance(v, mx.array) else v for k, v in m.items()})
write_gguf("metadata_float64.gguf", [("t", [1], 0, struct.pack("<f", 1))], [("pi", 12, struct.pack("<d", 3.141592653589793))])
record("metadata_float64.gguf", "gguf", "numpy", {"t": from_numpy(np.array([1], np.float32))},
       {"pi": from_numpy(np.array(3.141592653589793))}, note="MLX 0.32.4 crashes (SIGSEGV) reading a float64 value")


def half_bytes(v):
    return np.array(v, np.float16).tobytes()


def quant_blocks(kind, nblocks):
    """Random blocks with sane float16 scales (random bytes there would be NaN/inf/huge)."""
    out = bytearray()
    for _ in range(nblocks):
        if kind == "Q4_0":
            out += half_bytes(rng.uniform(-2, 2)) + rng.integers(0, 256, 16, dtype=np.uint8).tobytes()
        elif kind == "Q4_1":
            out += half_bytes(rng.uniform(-2, 2)) + half_bytes(rng.uniform(-3, 3)) + rng.integers(0, 256, 16, dtype=np.uint8).tobytes()
        elif kind == "Q8_0":
            out += half_bytes(rng.uniform(-0.1, 0.1)) + rng.integers(0, 256, 32, dtype=np.uint8).tobytes()
        elif kind == "Q2_K":
            b = bytearray(rng.integers(0, 256, 84, dtype=np.uint8).tobytes())
            b[80:82] = half_bytes(rng.uniform(-0.1, 0.1))
            b[82:84] = half_bytes(rng.uniform(-0.1, 0.1))
            out += b
        elif kind == "Q4_K":
            b = bytearray(rng.integers(0, 256, 144, dtype=np.uint8).tobytes())
            b[0:2] = half_bytes(rng.uniform(-0.1, 0.1))
            b[2:4] = half_bytes(rng.uniform(-0.1, 0.1))
            out += b
        elif kind == "Q6_K":
            b = bytearray(rng.integers(0, 256, 210, dtype=np.uint8).tobytes())
            b[208:210] = half_bytes(rng.uniform(-0.1, 0.1))
            out += b
    return bytes(out)


# ggml's reference dequantization of the K-quants, in float32 as ggml computes (cross-checked
# against gguf-py when it is importable).
f32 = np.float32


def h16(b, o):
    return np.frombuffer(b[o:o + 2], np.float16)[0].astype(f32)


def deq_q4k(b):
    d, dmin, sc, q = h16(b, 0), h16(b, 2), b[4:16], b[16:144]

    def scale_min(j):
        if j < 4:
            return sc[j] & 63, sc[j + 4] & 63
        return (sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4), (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4)
    y = []
    for c in range(4):
        s1, m1 = scale_min(2 * c)
        s2, m2 = scale_min(2 * c + 1)
        d1, mm1, d2, mm2 = f32(d * f32(s1)), f32(dmin * f32(m1)), f32(d * f32(s2)), f32(dmin * f32(m2))
        y += [f32(d1 * f32(q[32 * c + l] & 0xF)) - mm1 for l in range(32)]
        y += [f32(d2 * f32(q[32 * c + l] >> 4)) - mm2 for l in range(32)]
    return np.array(y, f32)


KQ = {"Q2_K": (10, 84), "Q4_K": (12, 144), "Q6_K": (14, 210)}
Q = {"Q4_0": (2, 18), "Q4_1": (3, 20), "Q8_0": (8, 34)}
for kind, (ty, nb) in Q.items():
    ne = [64, 3]  # 2 blocks per row, 3 rows
    raw = quant_blocks(kind, 6)
    name = f"quant_{kind.lower()}.gguf"
    write_gguf(name, [("blk.0.attn_q.weight", ne, ty, raw), ("plain", [64, 3], ty, quant_blocks(kind, 6))])
    tensors, _ = mlx_load(name)
    if gguf_dequantize is not None:
        # MLX's repacking dequantizes (within float16 rounding) to what gguf-py computes.
        for base, rawb in [("blk.0.attn_q", raw)]:
            w, s, bb = (mx.load(path(name))[base + suffix] for suffix in (".weight", ".scales", ".biases"))
            got = np.array(mx.dequantize(w, s, bb, group_size=32, bits=4 if kind != "Q8_0" else 8)).astype(np.float32)
            ref = gguf_dequantize(np.frombuffer(rawb, np.uint8), getattr(GGMLQuantizationType, kind)).reshape(3, 64)
            assert np.allclose(got, ref, rtol=2e-3, atol=2e-3 * np.abs(ref).max()), kind
    record(name, "gguf", "mlx", tensors)

for kind, (ty, nb) in KQ.items():
    raw = quant_blocks(kind, 4)
    name = f"quant_{kind.lower()}.gguf"
    write_gguf(name, [("w", [512, 2], ty, raw)])
    tensors, _ = mlx_load(name)
    if kind == "Q4_K":
        ref = np.concatenate([deq_q4k(raw[i * nb:(i + 1) * nb]) for i in range(4)]).reshape(2, 512)
        if gguf_dequantize is not None:
            assert np.array_equal(ref, gguf_dequantize(np.frombuffer(raw, np.uint8), GGMLQuantizationType.Q4_K).reshape(2, 512))
        mlx_hex = tensors["w"]["hex"]
        tensors = {"w": from_numpy(ref.astype(np.float16))}
        assert tensors["w"]["hex"] != mlx_hex  # the MLX difference the note describes
        record(name, "gguf", "gguf-py (ggml reference)", tensors,
               note="MLX 0.32.4 applies each even sub-block's scale and minimum to the odd sub-block after it; "
                    "expected values are ggml's (gguf-py's dequantize, rounded to float16)")
    else:
        if gguf_dequantize is not None:
            ref = gguf_dequantize(np.frombuffer(raw, np.uint8), getattr(GGMLQuantizationType, kind)).astype(np.float16)
            assert bytes.fromhex(tensors["w"]["hex"]) == le_bytes(ref.reshape(2, 512)), kind
        record(name, "gguf", "mlx", tensors)

bf = sample("float32", (2, 4)).astype(np.float32)
bf_bits = (bf.view(np.uint32) >> 16).astype(np.uint16)
write_gguf("bf16.gguf", [("x", [4, 2], 30, bf_bits.tobytes())])
record("bf16.gguf", "gguf", "numpy", {"x": {"dtype": "bfloat16", "shape": [2, 4], "hex": bf_bits.tobytes().hex()}},
       note="MLX 0.32.4 converts BF16 to float16 (lossy); metalgrad keeps bfloat16")
write_gguf("q5_k.gguf", [("x", [256], 13, bytes(176))])
record("q5_k.gguf", "gguf", "mlx", error="Q5_K is not supported")

with open(path("expected.json"), "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
    f.write("\n")
total = sum(os.path.getsize(path(n)) for n in expected["files"])
print(f"wrote {len(expected['files'])} fixtures ({total} bytes) to {os.path.normpath(ROOT)}; "
      f"gguf-py cross-check: {'yes' if gguf_dequantize else 'no'}; safetensors library: {'yes' if st_numpy else 'no'}")
