# The Python side of bench.ts: MLX and numpy run the same cases as metalgrad, on the same inputs
# (read from the safetensors file metalgrad wrote for the case), one request per line on stdin,
# one JSON answer per line on stdout. Requests:
#   {"cmd": "hello"}                                   -> which systems and devices exist
#   {"cmd": "prepare", "key", "system", "device", "op", "file", "params"} -> {"ok": true} or {"na": reason}
#   {"cmd": "run", "key"}                              -> {"ms": one timed run}
#   {"cmd": "check", "key"}                            -> {"value": the outputs' sum of |x| (a training step: its loss)}
#   {"cmd": "drop", "key"}
# A run is the op's computation and evaluation, and the device waited for (mx.eval then
# mx.synchronize), as bench.ts does for metalgrad with mg.eval and mg.synchronize.
import json
import math
import sys
import time
import traceback

try:
    import numpy as np
except ImportError:
    np = None
try:
    import mlx.core as mx
    import mlx.nn as mnn
    import mlx.optimizers as optim
except ImportError:
    mx = None


def mlx_devices():
    if mx is None:
        return []
    devices = ["cpu"]
    try:
        if mx.metal.is_available():
            devices.append("gpu")
    except Exception:
        pass
    return devices


# MLX ---------------------------------------------------------------------------------------------

def mlx_vjp(f, primals, cotangents):
    def run():
        _, grads = mx.vjp(f, primals, cotangents)
        return grads
    return run


class MLP(mnn.Module if mx else object):
    def __init__(self, sizes):
        super().__init__()
        self.layers = [mnn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = mnn.relu(layer(x))
        return self.layers[-1](x)


class Transformer(mnn.Module if mx else object):
    def __init__(self, vocab, dims, layers, heads, mlp):
        super().__init__()
        self.embedding = mnn.Embedding(vocab, dims)
        self.encoder = mnn.TransformerEncoder(layers, dims, heads, mlp_dims=mlp)
        self.out = mnn.Linear(dims, vocab)

    def __call__(self, tokens):
        mask = mnn.MultiHeadAttention.create_additive_causal_mask(tokens.shape[1])
        return self.out(self.encoder(self.embedding(tokens), mask))


def mlx_train_step(model, optimizer, x, y, weights):
    model.load_weights(list(weights.items()))
    mx.eval(model.parameters())
    loss_and_grad = mnn.value_and_grad(model, lambda m, xb, yb: mnn.losses.cross_entropy(m(xb), yb, reduction="mean"))

    def run():
        loss, grads = loss_and_grad(model, x, y)
        optimizer.update(model, grads)
        return [loss, model.parameters(), optimizer.state]
    return run


def mlx_builder(op, a, p):
    """The function computing the op's outputs from the loaded arrays `a` and params `p`."""
    if op == "add":
        return lambda: [a["a"] + a["b"]]
    if op == "exp":
        return lambda: [mx.exp(a["a"])]
    if op == "sum_all":
        return lambda: [mx.sum(a["a"])]
    if op == "sum_rows":
        return lambda: [mx.sum(a["a"], axis=-1)]
    if op == "softmax":
        return lambda: [mx.softmax(a["a"], axis=-1)]
    if op == "matmul":
        return lambda: [a["a"] @ a["b"]]
    if op == "conv2d":
        return lambda: [mx.conv2d(a["x"], a["w"], stride=1, padding=p["padding"])]
    if op == "rms_norm":
        f = lambda x, w: mx.fast.rms_norm(x, w, p["eps"])
        if p["backward"]:
            return mlx_vjp(lambda x, w: f(x, w), [a["x"], a["w"]], [a["g"]])
        return lambda: [f(a["x"], a["w"])]
    if op == "layer_norm":
        f = lambda x, w, b: mx.fast.layer_norm(x, w, b, p["eps"])
        if p["backward"]:
            return mlx_vjp(f, [a["x"], a["w"], a["b"]], [a["g"]])
        return lambda: [f(a["x"], a["w"], a["b"])]
    if op == "rope":
        f = lambda x: mx.fast.rope(x, p["dims"], traditional=p["traditional"], base=p["base"], scale=1.0, offset=0)
        if p["backward"]:
            return mlx_vjp(f, [a["x"]], [a["g"]])
        return lambda: [f(a["x"])]
    if op == "sdpa":
        f = lambda q, k, v: mx.fast.scaled_dot_product_attention(q, k, v, scale=p["scale"], mask=p["mask"])
        if p["backward"]:
            return mlx_vjp(f, [a["q"], a["k"], a["v"]], [a["g"]])
        return lambda: [f(a["q"], a["k"], a["v"])]
    if op == "quantized_matmul":
        return lambda: [mx.quantized_matmul(a["x"], a["wq"], a["scales"], a["biases"], transpose=True, group_size=p["groupSize"], bits=p["bits"])]
    if op == "mlp_step":
        weights = {k[len("param."):]: v for k, v in a.items() if k.startswith("param.")}
        return mlx_train_step(MLP(p["sizes"]), optim.Adam(learning_rate=p["lr"]), a["x"], a["y"], weights)
    if op == "transformer_step":
        weights = {k[len("param."):]: v for k, v in a.items() if k.startswith("param.")}
        model = Transformer(p["vocab"], p["dims"], p["layers"], p["heads"], p["mlp"])
        return mlx_train_step(model, optim.AdamW(learning_rate=p["lr"]), a["x"], a["y"], weights)
    if op == "load":
        return lambda: [mx.load(p["target"])]
    return None


# numpy -------------------------------------------------------------------------------------------

def numpy_builder(op, a, p):
    if op == "add":
        return lambda: [np.add(a["a"], a["b"])]
    if op == "exp":
        return lambda: [np.exp(a["a"])]
    if op == "sum_all":
        return lambda: [np.sum(a["a"])]
    if op == "sum_rows":
        return lambda: [np.sum(a["a"], axis=-1)]
    if op == "matmul":
        return lambda: [a["a"] @ a["b"]]
    return None


# The loop ----------------------------------------------------------------------------------------

prepared = {}


def flatten(tree, out):
    if isinstance(tree, dict):
        for v in tree.values():
            flatten(v, out)
    elif isinstance(tree, (list, tuple)):
        for v in tree:
            flatten(v, out)
    else:
        out.append(tree)
    return out


def checksum(outputs, system):
    total = 0.0
    for x in flatten(outputs, []):
        if system == "mlx" and np is None:
            total += float(mx.sum(mx.abs(x.astype(mx.float32))).item())
        elif system == "mlx":
            # In float64: MLX's float32 sum of millions of values drifts by ~0.3% on the CPU.
            total += float(np.sum(np.abs(np.array(x.astype(mx.float32), dtype=np.float64))))
        else:
            total += float(np.sum(np.abs(np.asarray(x, dtype=np.float64))))
    return total


def prepare(req):
    system, device, op, params = req["system"], req["device"], req["op"], req.get("params", {})
    if system == "mlx":
        if mx is None:
            return {"na": "mlx is not importable"}
        if device not in mlx_devices():
            return {"na": f"MLX has no {device} device here"}
        dev = mx.gpu if device == "gpu" else mx.cpu
        with mx.stream(dev):
            arrays = mx.load(req["file"]) if req.get("file") else {}
            mx.eval(arrays)
            fn = mlx_builder(op, arrays, params)
        if fn is None:
            return {"na": f"no MLX op for {op}"}

        def run():
            with mx.stream(dev):
                out = fn()
                mx.eval(out)
            mx.synchronize()
            return out
    elif system == "numpy":
        if np is None:
            return {"na": "numpy is not importable"}
        if device != "cpu":
            return {"na": "numpy runs on the CPU only"}
        if mx is None:
            return {"na": "numpy reads the case's safetensors file through mlx here"}
        loaded = mx.load(req["file"]) if req.get("file") else {}
        arrays = {}
        for k, v in loaded.items():
            if v.dtype == mx.bfloat16:
                return {"na": "numpy has no bfloat16"}
            arrays[k] = np.array(v)
        fn = numpy_builder(op, arrays, params)
        if fn is None:
            return {"na": f"numpy has no {op}"}
        run = fn
    else:
        return {"na": f"unknown system {system}"}
    prepared[req["key"]] = (system, op, run)
    return {"ok": True}


def answer(req):
    cmd = req["cmd"]
    if cmd == "hello":
        return {
            "mlx": mx.__version__ if mx is not None else None, "mlxDevices": mlx_devices(),
            "numpy": np.__version__ if np is not None else None, "python": sys.version.split()[0],
        }
    if cmd == "prepare":
        return prepare(req)
    if cmd == "run":
        _, _, run = prepared[req["key"]]
        t0 = time.perf_counter()
        run()
        return {"ms": (time.perf_counter() - t0) * 1e3}
    if cmd == "check":
        system, op, run = prepared[req["key"]]
        out = run()
        # A training step is checked by its loss (its updated weights follow from it).
        v = checksum(out[0] if op.endswith("_step") else out, system)
        return {"value": v if math.isfinite(v) else None}
    if cmd == "drop":
        prepared.pop(req["key"], None)
        return {"ok": True}
    return {"error": f"unknown command {cmd}"}


for line in sys.stdin:
    try:
        reply = answer(json.loads(line))
    except Exception as e:  # a failing case reports itself instead of stopping the worker
        reply = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc(limit=3)}
    print(json.dumps(reply), flush=True)
