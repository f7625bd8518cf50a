"""Writes test/fixtures/mlx-nn/*.json: MLX's own numbers for mg.nn, mg.optimizers and mg.utils.

    /work/mlxenv/bin/python scripts/mlx-nn-fixtures.py      # MLX 0.32.4, CPU

Each case pairs an MLX Python expression with its metalgrad TypeScript spelling, and stores the
inputs (so both sides compute on the same values) and MLX's results:
  layers.json      a layer with given weights: forward output, and the gradients of
                   sum(output * cotangent) w.r.t. the trainable parameters and float inputs
                   (and the module's state after the call, for BatchNorm's running statistics)
  functions.json   activations, losses, clip_grad_norm: output and input gradients
  init.json        default initialisations and nn.init functions after mx.random.seed(s): exact
  optimizers.json  parameter trees after each of several steps, and the final state
  schedules.json   schedule values at several steps
  training.json    an end-to-end training run: the loss at every step from given initial weights
The tests (test/nn, test/optimizers, test/utils) evaluate the TypeScript side on both devices.
"""
import json
import math
import pathlib

import numpy as np

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map, tree_unflatten

OUT = pathlib.Path(__file__).resolve().parent.parent / "test" / "fixtures" / "mlx-nn"


def num(v, dtype=None):
    if isinstance(v, float) and dtype in (mx.float32, mx.float16, mx.bfloat16) and math.isfinite(v):
        # The shortest decimal that reads back as the same float32: half the bytes of repr(v).
        return float(str(np.float32(v)))
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


def enc(a):
    """An array as {shape, dtype, data (flat)}; other values as they are."""
    if isinstance(a, mx.array):
        return {"shape": list(a.shape), "dtype": str(a.dtype).replace("mlx.core.", ""),
                "data": [num(x, a.dtype) for x in np.array(a.astype(mx.float32) if a.dtype == mx.bfloat16 else a).reshape(-1).tolist()]}
    if isinstance(a, (list, tuple)):
        return [enc(x) for x in a]
    if isinstance(a, dict):
        return {k: enc(v) for k, v in a.items()}
    return a


def flat(tree):
    return [[k, enc(v)] for k, v in tree_flatten(tree)]


rng = np.random.default_rng(20260613)


def randn(*shape, scale=1.0, dtype=mx.float32):
    return mx.array((rng.standard_normal(shape) * scale).astype(np.float32)).astype(dtype)


def randint(lo, hi, *shape):
    return mx.array(rng.integers(lo, hi, shape).astype(np.int32))


def positive(*shape):
    return mx.array(rng.uniform(0.1, 2.0, shape).astype(np.float32))


# ---------------------------------------------------------------- layers

layer_cases = []


def is_float(a):
    return isinstance(a, mx.array) and mx.issubdtype(a.dtype, mx.floating)


def layer(name, py, ts, args, *, train=True, seed=None, weight_scale=0.5, grads=True, tol=None):
    """args: the forward's positional arguments (arrays or plain values)."""
    model = eval(py, {"nn": nn, "mx": mx})
    model.train(train)
    params = tree_flatten(model.parameters())
    weights = [(k, randn(*v.shape, scale=weight_scale) if mx.issubdtype(v.dtype, mx.floating) else v) for k, v in params]
    if "running_var" in "".join(k for k, _ in weights):
        weights = [(k, mx.abs(v) + 0.5 if k.endswith("running_var") else v) for k, v in weights]
    model.load_weights(weights)
    if seed is not None:
        mx.random.seed(seed)
    out = model(*args)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    cots = [randn(*o.shape) for o in outs]
    case = {"name": name, "py": py, "ts": ts, "train": train, "seed": seed, "args": enc(list(args)),
            "weights": [[k, enc(v)] for k, v in weights], "output": enc(outs), "cotangents": enc(cots)}
    state_after = tree_flatten(model.parameters())
    case["state_after"] = [[k, enc(v)] for k, v in state_after]
    if tol is not None:
        case["tol"] = tol
    if grads:
        model.load_weights(weights)
        float_args = [i for i, a in enumerate(args) if is_float(a)]

        def loss(params, *inputs):
            model.update(params)
            full = list(args)
            for i, x in zip(float_args, inputs):
                full[i] = x
            if seed is not None:
                mx.random.seed(seed)
            o = model(*full)
            os_ = list(o) if isinstance(o, (tuple, list)) else [o]
            return sum((oi * ci).sum() for oi, ci in zip(os_, cots))

        argnums = list(range(1 + len(float_args)))
        g = mx.grad(loss, argnums=argnums)(model.trainable_parameters(), *[args[i] for i in float_args])
        g = g if len(argnums) > 1 else (g,)
        case["grad_params"] = flat(g[0])
        case["grad_inputs"] = {str(i): enc(gi) for i, gi in zip(float_args, g[1:])}
    layer_cases.append(case)


x24 = randn(2, 4)
layer("linear", "nn.Linear(4, 3)", "new mg.nn.Linear(4, 3)", [randn(2, 4)])
layer("linear_nobias", "nn.Linear(4, 3, bias=False)", "new mg.nn.Linear(4, 3, { bias: false })", [randn(5, 2, 4)])
layer("bilinear", "nn.Bilinear(3, 4, 2)", "new mg.nn.Bilinear(3, 4, 2)", [randn(5, 3), randn(5, 4)])
layer("bilinear_nobias", "nn.Bilinear(3, 4, 2, bias=False)", "new mg.nn.Bilinear(3, 4, 2, false)", [randn(2, 3, 3), randn(2, 3, 4)])
layer("identity", "nn.Identity(3, foo=2)", "new mg.nn.Identity(3, { foo: 2 })", [randn(2, 3)])
layer("embedding", "nn.Embedding(10, 4)", "new mg.nn.Embedding(10, 4)", [randint(0, 10, 2, 3)])
layer("sequential", "nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))",
      "new mg.nn.Sequential(new mg.nn.Linear(3, 4), new mg.nn.ReLU(), new mg.nn.Linear(4, 2))", [randn(5, 3)])
layer("sequential_fn", "nn.Sequential(nn.Linear(3, 4), nn.gelu, nn.Linear(4, 2))",
      "new mg.nn.Sequential(new mg.nn.Linear(3, 4), mg.nn.gelu, new mg.nn.Linear(4, 2))", [randn(5, 3)])
layer("dropout_eval", "nn.Dropout(0.5)", "new mg.nn.Dropout(0.5)", [randn(3, 4)], train=False)
layer("dropout_train", "nn.Dropout(0.25)", "new mg.nn.Dropout({ p: 0.25 })", [randn(4, 8)], seed=7)
layer("dropout2d_train", "nn.Dropout2d(0.5)", "new mg.nn.Dropout2d(0.5)", [randn(2, 3, 3, 4)], seed=8)
layer("dropout3d_train", "nn.Dropout3d(0.5)", "new mg.nn.Dropout3d()", [randn(2, 2, 2, 2, 3)], seed=9)
layer("layernorm", "nn.LayerNorm(6)", "new mg.nn.LayerNorm(6)", [randn(2, 3, 6)])
layer("layernorm_noaffine", "nn.LayerNorm(6, affine=False)", "new mg.nn.LayerNorm(6, { affine: false })", [randn(4, 6)])
layer("layernorm_nobias", "nn.LayerNorm(6, eps=1e-3, bias=False)", "new mg.nn.LayerNorm(6, 1e-3, true, false)", [randn(4, 6)])
layer("rmsnorm", "nn.RMSNorm(6)", "new mg.nn.RMSNorm(6)", [randn(2, 3, 6)])
layer("rmsnorm_eps", "nn.RMSNorm(6, eps=0.1)", "new mg.nn.RMSNorm(6, { eps: 0.1 })", [randn(4, 6)])
layer("groupnorm", "nn.GroupNorm(2, 6)", "new mg.nn.GroupNorm(2, 6)", [randn(2, 3, 4, 6)])
layer("groupnorm_torch", "nn.GroupNorm(3, 6, pytorch_compatible=True)", "new mg.nn.GroupNorm(3, 6, { pytorchCompatible: true })", [randn(2, 5, 6)])
layer("groupnorm_noaffine", "nn.GroupNorm(2, 4, affine=False)", "new mg.nn.GroupNorm(2, 4, 1e-5, false)", [randn(2, 5, 4)])
layer("instancenorm", "nn.InstanceNorm(4)", "new mg.nn.InstanceNorm(4)", [randn(2, 3, 5, 4)])
layer("instancenorm_affine", "nn.InstanceNorm(4, affine=True)", "new mg.nn.InstanceNorm(4, { affine: true })", [randn(2, 6, 4)])
layer("batchnorm_train", "nn.BatchNorm(4)", "new mg.nn.BatchNorm(4)", [randn(5, 3, 4)])
layer("batchnorm_eval", "nn.BatchNorm(4)", "new mg.nn.BatchNorm(4)", [randn(5, 4)], train=False)
layer("batchnorm_momentum", "nn.BatchNorm(3, momentum=0.3, affine=False)", "new mg.nn.BatchNorm(3, { momentum: 0.3, affine: false })", [randn(2, 4, 4, 3)])
layer("batchnorm_nostats", "nn.BatchNorm(3, track_running_stats=False)", "new mg.nn.BatchNorm(3, { trackRunningStats: false })", [randn(6, 3)], train=False)
layer("rope", "nn.RoPE(8)", "new mg.nn.RoPE(8)", [randn(2, 3, 5, 8)])
layer("rope_traditional", "nn.RoPE(8, traditional=True)", "new mg.nn.RoPE(8, { traditional: true })", [randn(2, 5, 8)])
layer("rope_partial_offset", "nn.RoPE(6, base=500, scale=0.5)", "new mg.nn.RoPE(6, false, 500, 0.5)", [randn(1, 2, 4, 10), 3])
layer("rope_traditional_partial", "nn.RoPE(4, traditional=True)", "new mg.nn.RoPE(4, true)", [randn(1, 3, 6), 2])
layer("sinusoidal", "nn.SinusoidalPositionalEncoding(8)", "new mg.nn.SinusoidalPositionalEncoding(8)", [randn(2, 3, scale=3.0)])
layer("sinusoidal_opts", "nn.SinusoidalPositionalEncoding(6, min_freq=0.01, max_freq=2.0, scale=1.0, cos_first=True, full_turns=True)",
      "new mg.nn.SinusoidalPositionalEncoding(6, { minFreq: 0.01, maxFreq: 2.0, scale: 1.0, cosFirst: true, fullTurns: true })", [randn(4)])
layer("alibi", "nn.ALiBi()", "new mg.nn.ALiBi()", [randn(2, 4, 3, 5)])
layer("alibi_mask", "nn.ALiBi()", "new mg.nn.ALiBi()", [randn(1, 3, 4, 4), 0, randn(4, 4)])
layer("mha", "nn.MultiHeadAttention(8, 2)", "new mg.nn.MultiHeadAttention(8, 2)", [randn(2, 3, 8), randn(2, 5, 8), randn(2, 5, 8)])
layer("mha_causal", "nn.MultiHeadAttention(8, 4, bias=True)", "new mg.nn.MultiHeadAttention(8, 4, { bias: true })",
      [randn(2, 4, 8), randn(2, 4, 8), randn(2, 4, 8), nn.MultiHeadAttention.create_additive_causal_mask(4)])
layer("mha_boolmask", "nn.MultiHeadAttention(8, 2)", "new mg.nn.MultiHeadAttention(8, 2)",
      [randn(1, 3, 8), randn(1, 4, 8), randn(1, 4, 8), mx.array(rng.uniform(size=(3, 4)) > 0.3)])
layer("mha_dims", "nn.MultiHeadAttention(8, 2, query_input_dims=6, key_input_dims=5, value_input_dims=4, value_dims=12, value_output_dims=7, bias=True)",
      "new mg.nn.MultiHeadAttention(8, 2, 6, 5, 4, 12, 7, true)", [randn(2, 3, 6), randn(2, 4, 5), randn(2, 4, 4)])
layer("encoder_layer", "nn.TransformerEncoderLayer(8, 2, mlp_dims=16)", "new mg.nn.TransformerEncoderLayer(8, 2, { mlpDims: 16 })",
      [randn(2, 3, 8), nn.MultiHeadAttention.create_additive_causal_mask(3)], weight_scale=0.3)
layer("encoder_layer_post", "nn.TransformerEncoderLayer(8, 2, 16, 0.0, nn.gelu, False)", "new mg.nn.TransformerEncoderLayer(8, 2, 16, 0.0, mg.nn.gelu, false)",
      [randn(2, 3, 8), None], weight_scale=0.3)
layer("encoder", "nn.TransformerEncoder(2, 8, 2, mlp_dims=12)", "new mg.nn.TransformerEncoder(2, 8, 2, { mlpDims: 12 })",
      [randn(2, 3, 8), None], weight_scale=0.3)
layer("encoder_checkpoint", "nn.TransformerEncoder(1, 8, 2, checkpoint=True)", "new mg.nn.TransformerEncoder(1, 8, 2, { checkpoint: true })",
      [randn(1, 3, 8), None], weight_scale=0.3)
layer("decoder_layer", "nn.TransformerDecoderLayer(8, 2, mlp_dims=16)", "new mg.nn.TransformerDecoderLayer(8, 2, 16)",
      [randn(2, 3, 8), randn(2, 4, 8), nn.MultiHeadAttention.create_additive_causal_mask(3), None], weight_scale=0.3)
layer("decoder_layer_post", "nn.TransformerDecoderLayer(8, 2, norm_first=False, activation=nn.GELU())",
      "new mg.nn.TransformerDecoderLayer(8, 2, { normFirst: false, activation: new mg.nn.GELU() })",
      [randn(2, 3, 8), randn(2, 4, 8), None, None], weight_scale=0.3)
layer("decoder", "nn.TransformerDecoder(2, 8, 2, mlp_dims=12)", "new mg.nn.TransformerDecoder(2, 8, 2, 12)",
      [randn(1, 3, 8), randn(1, 2, 8), None, None], weight_scale=0.3)
layer("transformer", "nn.Transformer(dims=8, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, mlp_dims=16)",
      "new mg.nn.Transformer({ dims: 8, numHeads: 2, numEncoderLayers: 1, numDecoderLayers: 1, mlpDims: 16 })",
      [randn(2, 4, 8), randn(2, 3, 8), None, nn.MultiHeadAttention.create_additive_causal_mask(3), None], weight_scale=0.3)
layer("rnn", "nn.RNN(3, 4)", "new mg.nn.RNN(3, 4)", [randn(2, 5, 3)])
layer("rnn_hidden_relu", "nn.RNN(3, 4, bias=False, nonlinearity=nn.relu)", "new mg.nn.RNN(3, 4, { bias: false, nonlinearity: mg.nn.relu })",
      [randn(2, 5, 3), randn(2, 4)])
layer("gru", "nn.GRU(3, 4)", "new mg.nn.GRU(3, 4)", [randn(2, 5, 3)])
layer("gru_hidden", "nn.GRU(3, 4)", "new mg.nn.GRU(3, 4)", [randn(5, 3), randn(4)])
layer("gru_nobias", "nn.GRU(3, 4, bias=False)", "new mg.nn.GRU(3, 4, false)", [randn(2, 4, 3), randn(2, 4)])
layer("lstm", "nn.LSTM(3, 4)", "new mg.nn.LSTM(3, 4)", [randn(2, 5, 3)])
layer("lstm_state", "nn.LSTM(3, 4, bias=False)", "new mg.nn.LSTM(3, 4, { bias: false })", [randn(2, 4, 3), randn(2, 4), randn(2, 4)])
layer("conv1d", "nn.Conv1d(3, 4, 3)", "new mg.nn.Conv1d(3, 4, 3)", [randn(2, 7, 3)])
layer("conv1d_opts", "nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2, bias=False)",
      "new mg.nn.Conv1d(4, 6, 3, { stride: 2, padding: 1, dilation: 2, groups: 2, bias: false })", [randn(2, 9, 4)])
layer("conv2d", "nn.Conv2d(3, 5, 3, stride=2, padding=1)", "new mg.nn.Conv2d(3, 5, 3, { stride: 2, padding: 1 })", [randn(2, 6, 5, 3)])
layer("conv2d_tuple", "nn.Conv2d(4, 8, (2, 3), (1, 2), (0, 1), 1, 2)", "new mg.nn.Conv2d(4, 8, [2, 3], [1, 2], [0, 1], 1, 2)", [randn(1, 5, 6, 4)])
layer("conv3d", "nn.Conv3d(2, 3, 2, padding=1)", "new mg.nn.Conv3d(2, 3, 2, { padding: 1 })", [randn(1, 3, 3, 4, 2)])
layer("conv_transpose1d", "nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1)",
      "new mg.nn.ConvTranspose1d(3, 4, 3, { stride: 2, padding: 1, outputPadding: 1 })", [randn(2, 5, 3)])
layer("conv_transpose2d", "nn.ConvTranspose2d(3, 2, (3, 2), stride=2, bias=False)", "new mg.nn.ConvTranspose2d(3, 2, [3, 2], 2, 0, 1, 0, false)", [randn(1, 3, 4, 3)])
layer("conv_transpose3d", "nn.ConvTranspose3d(2, 3, 2, stride=(1, 2, 1))", "new mg.nn.ConvTranspose3d(2, 3, 2, { stride: [1, 2, 1] })", [randn(1, 2, 3, 2, 2)])
layer("maxpool1d", "nn.MaxPool1d(2)", "new mg.nn.MaxPool1d(2)", [randn(2, 8, 3)])
layer("maxpool1d_pad", "nn.MaxPool1d(3, stride=2, padding=1)", "new mg.nn.MaxPool1d(3, { stride: 2, padding: 1 })", [randn(2, 7, 3)])
layer("avgpool1d", "nn.AvgPool1d(3, 1)", "new mg.nn.AvgPool1d(3, 1)", [randn(1, 6, 2)])
layer("maxpool2d", "nn.MaxPool2d(2)", "new mg.nn.MaxPool2d(2)", [randn(2, 4, 6, 3)])
layer("maxpool2d_overlap", "nn.MaxPool2d(3, 2, 1)", "new mg.nn.MaxPool2d(3, 2, 1)", [randn(1, 5, 6, 2)])
layer("avgpool2d", "nn.AvgPool2d((2, 3), stride=(1, 2), padding=(1, 1))", "new mg.nn.AvgPool2d([2, 3], { stride: [1, 2], padding: [1, 1] })", [randn(2, 4, 5, 2)])
layer("maxpool3d", "nn.MaxPool3d(2)", "new mg.nn.MaxPool3d(2)", [randn(1, 4, 4, 4, 2)])
layer("avgpool3d", "nn.AvgPool3d(2, stride=1)", "new mg.nn.AvgPool3d(2, { stride: 1 })", [randn(1, 3, 3, 4, 2)])
layer("upsample_nearest", "nn.Upsample(2)", "new mg.nn.Upsample(2)", [randn(1, 3, 4, 2)])
layer("upsample_nearest_frac", "nn.Upsample(1.5)", "new mg.nn.Upsample(1.5)", [randn(1, 4, 3, 2)])
layer("upsample_nearest_down", "nn.Upsample((0.5, 2))", "new mg.nn.Upsample([0.5, 2])", [randn(1, 4, 3, 2)])
layer("upsample_linear", "nn.Upsample(2, mode='linear')", "new mg.nn.Upsample(2, 'linear')", [randn(2, 3, 4, 2)])
layer("upsample_linear_1d", "nn.Upsample(2.5, mode='linear')", "new mg.nn.Upsample(2.5, { mode: 'linear' })", [randn(2, 4, 3)])
layer("upsample_linear_ac", "nn.Upsample(2, mode='linear', align_corners=True)", "new mg.nn.Upsample(2, 'linear', true)", [randn(1, 3, 3, 2)])
layer("upsample_cubic", "nn.Upsample((2, 1.5), mode='cubic')", "new mg.nn.Upsample([2, 1.5], 'cubic')", [randn(1, 4, 4, 2)])
layer("upsample_cubic_ac", "nn.Upsample(2, mode='cubic', align_corners=True)", "new mg.nn.Upsample(2, { mode: 'cubic', alignCorners: true })", [randn(1, 3, 4, 1)])
layer("upsample_linear_aa", "nn.Upsample(0.5, mode='linear', antialias=True)", "new mg.nn.Upsample(0.5, 'linear', false, true)", [randn(1, 8, 6, 2)])
layer("upsample_cubic_aa", "nn.Upsample(0.5, mode='cubic', antialias=True)", "new mg.nn.Upsample(0.5, { mode: 'cubic', antialias: true })", [randn(1, 8, 8, 1)])
layer("prelu", "nn.PReLU(3)", "new mg.nn.PReLU(3)", [randn(4, 3)])
layer("prelu_init", "nn.PReLU(1, 0.1)", "new mg.nn.PReLU({ init: 0.1 })", [randn(2, 5)])
for cls, args_py, args_ts in [("ReLU", "", ""), ("ReLU2", "", ""), ("ReLU6", "", ""), ("Sigmoid", "", ""), ("Mish", "", ""),
                              ("Softmax", "", ""), ("Softplus", "", ""), ("Softsign", "", ""), ("SiLU", "", ""), ("LogSoftmax", "", ""),
                              ("LogSigmoid", "", ""), ("Tanh", "", ""), ("Hardswish", "", ""), ("SELU", "", ""), ("HardTanh", "", ""),
                              ("Softmin", "", ""), ("GLU", "", ""), ("GLU", "0", "0"), ("LeakyReLU", "0.2", "0.2"),
                              ("ELU", "alpha=0.5", "{ alpha: 0.5 }"), ("CELU", "1.5", "1.5"), ("Softshrink", "0.3", "{ lambd: 0.3 }"),
                              ("HardShrink", "", ""), ("Step", "threshold=0.5", "0.5"), ("GELU", "", ""), ("GELU", "approx='precise'", "'precise'"),
                              ("GELU", "approx='tanh'", "{ approx: 'tanh' }"), ("GELU", "'fast'", "'fast'")]:
    x = randn(4, 6, scale=3.0)
    layer(f"act_{cls}_{args_py}", f"nn.{cls}({args_py})", f"new mg.nn.{cls}({args_ts})", [x], grads=cls != "Step")


# ---------------------------------------------------------------- functions (activations, losses, clip)

function_cases = []
conv_cases = []


def function(name, py, ts, inputs, grad=(), tol=None, into=None):
    """inputs: {name: array}; grad: the input names to differentiate sum(out * cot) by."""
    scope = {"nn": nn, "mx": mx, "optim": optim, **inputs}
    out = eval(py, scope)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    case = {"name": name, "py": py, "ts": ts, "inputs": enc(inputs), "output": enc(outs)}
    if tol is not None:
        case["tol"] = tol
    if grad:
        cots = [randn(*o.shape) for o in outs]

        def f(*xs):
            s = dict(scope)
            s.update(dict(zip(grad, xs)))
            o = eval(py, s)
            os_ = list(o) if isinstance(o, (tuple, list)) else [o]
            return sum((oi * ci).sum() for oi, ci in zip(os_, cots) if mx.issubdtype(oi.dtype, mx.floating))

        gs = mx.grad(f, argnums=list(range(len(grad))))(*[inputs[k] for k in grad])
        gs = gs if len(grad) > 1 else (gs,)
        case["cotangents"] = enc(cots)
        case["grads"] = {k: enc(g) for k, g in zip(grad, gs)}
    (function_cases if into is None else into).append(case)


xa = randn(3, 5, scale=3.0)
for py, ts in [("nn.leaky_relu(x, negative_slope=0.2)", "mg.nn.leakyRelu(x, { negativeSlope: 0.2 })"),
               ("nn.leaky_relu(x)", "mg.nn.leakyRelu(x)"), ("nn.elu(x, 2.0)", "mg.nn.elu(x, 2.0)"),
               ("nn.softmax(x, axis=0)", "mg.nn.softmax(x, { axis: 0 })"), ("nn.log_softmax(x, 0)", "mg.nn.logSoftmax(x, 0)"),
               ("nn.softmin(x, axis=1)", "mg.nn.softmin(x, 1)"), ("nn.celu(x, alpha=0.7)", "mg.nn.celu(x, 0.7)"),
               ("nn.softshrink(x, 1.0)", "mg.nn.softshrink(x, { lambd: 1.0 })"), ("nn.hard_shrink(x, lambd=1.0)", "mg.nn.hardShrink(x, 1.0)"),
               ("nn.hard_tanh(x, min_val=-0.5, max_val=2.0)", "mg.nn.hardTanh(x, { minVal: -0.5, maxVal: 2.0 })"),
               ("nn.hard_tanh(x, -2.0)", "mg.nn.hardTanh(x, -2.0)"), ("nn.glu(x, axis=0)", "mg.nn.glu(mg.concatenate([x, x], 0), 0)"),
               ("nn.step(x, 1.0)", "mg.nn.step(x, 1.0)"), ("nn.prelu(x, mx.array([0.1, 0.2, 0.3, 0.4, 0.5]))", "mg.nn.prelu(x, mg.array([0.1, 0.2, 0.3, 0.4, 0.5]))"),
               ("nn.gelu_approx(x)", "mg.nn.geluApprox(x)"), ("nn.gelu_fast_approx(x)", "mg.nn.geluFastApprox(x)"),
               ("nn.relu2(x)", "mg.nn.relu2(x)"), ("nn.mish(x)", "mg.nn.mish(x)"), ("nn.selu(x)", "mg.nn.selu(x)")]:
    if py.startswith("nn.glu(x, axis=0)"):
        py = "nn.glu(mx.concatenate([x, x], 0), axis=0)"
    function("fn_" + py, py, ts, {"x": xa}, grad=() if "step" in py else ("x",))
function("fn_log_softmax_big", "nn.log_softmax(x * 1000)", "mg.nn.logSoftmax(mg.multiply(x, 1000))", {"x": xa}, grad=("x",))

# losses
logits = randn(4, 5, scale=2.0)
idx = randint(0, 5, 4)
probs = mx.softmax(randn(4, 5), axis=-1)
w4 = positive(4)
loss_cases = [
    ("cross_entropy", "nn.losses.cross_entropy(logits, idx)", "mg.nn.losses.crossEntropy(logits, idx)", {"logits": logits, "idx": idx}, ("logits",)),
    ("cross_entropy_mean", "nn.losses.cross_entropy(logits, idx, reduction='mean')", "mg.nn.losses.crossEntropy(logits, idx, { reduction: 'mean' })", {"logits": logits, "idx": idx}, ("logits",)),
    ("cross_entropy_probs", "nn.losses.cross_entropy(logits, probs, reduction='sum')", "mg.nn.losses.crossEntropy(logits, probs, null, -1, 0.0, 'sum')", {"logits": logits, "probs": probs}, ("logits", "probs")),
    ("cross_entropy_smooth", "nn.losses.cross_entropy(logits, idx, label_smoothing=0.1, reduction='mean')", "mg.nn.losses.crossEntropy(logits, idx, { labelSmoothing: 0.1, reduction: 'mean' })", {"logits": logits, "idx": idx}, ("logits",)),
    ("cross_entropy_weights", "nn.losses.cross_entropy(logits, idx, weights=w4)", "mg.nn.losses.crossEntropy(logits, idx, w4)", {"logits": logits, "idx": idx, "w4": w4}, ("logits",)),
    ("cross_entropy_axis0", "nn.losses.cross_entropy(logits.T, idx, axis=0, label_smoothing=0.2)", "mg.nn.losses.crossEntropy(logits.T, idx, { axis: 0, labelSmoothing: 0.2 })", {"logits": logits, "idx": idx}, ("logits",)),
    ("bce_logits", "nn.losses.binary_cross_entropy(a, t)", "mg.nn.losses.binaryCrossEntropy(a, t)", {"a": randn(3, 4), "t": mx.array(rng.uniform(size=(3, 4)).astype(np.float32))}, ("a", "t")),
    ("bce_probs", "nn.losses.binary_cross_entropy(p, t, with_logits=False, reduction='none')", "mg.nn.losses.binaryCrossEntropy(p, t, { withLogits: false, reduction: 'none' })", {"p": mx.array(rng.uniform(0.01, 0.99, (3, 4)).astype(np.float32)), "t": mx.array((rng.uniform(size=(3, 4)) > 0.5).astype(np.float32))}, ("p",)),
    ("bce_clip", "nn.losses.binary_cross_entropy(p, t, with_logits=False)", "mg.nn.losses.binaryCrossEntropy(p, t, null, false)", {"p": mx.array([0.0, 1.0, 0.5]), "t": mx.array([1.0, 0.0, 1.0])}, ()),
    ("bce_weights", "nn.losses.binary_cross_entropy(a, t, weights=w, reduction='sum')", "mg.nn.losses.binaryCrossEntropy(a, t, { weights: w, reduction: 'sum' })", {"a": randn(4), "t": mx.array([0.0, 1.0, 1.0, 0.0]), "w": positive(4)}, ("a",)),
    ("l1", "nn.losses.l1_loss(a, b)", "mg.nn.losses.l1Loss(a, b)", {"a": randn(3, 4), "b": randn(3, 4)}, ("a", "b")),
    ("l1_none", "nn.losses.l1_loss(a, b, 'none')", "mg.nn.losses.l1Loss(a, b, 'none')", {"a": randn(3, 4), "b": randn(3, 4)}, ("a",)),
    ("mse", "nn.losses.mse_loss(a, b)", "mg.nn.losses.mseLoss(a, b)", {"a": randn(3, 4), "b": randn(3, 4)}, ("a", "b")),
    ("mse_sum", "nn.losses.mse_loss(a, b, reduction='sum')", "mg.nn.losses.mseLoss(a, b, { reduction: 'sum' })", {"a": randn(6), "b": randn(6)}, ("a",)),
    ("nll", "nn.losses.nll_loss(nn.log_softmax(logits), idx)", "mg.nn.losses.nllLoss(mg.nn.logSoftmax(logits), idx)", {"logits": logits, "idx": idx}, ("logits",)),
    ("nll_mean_axis0", "nn.losses.nll_loss(logits.T, idx, axis=0, reduction='mean')", "mg.nn.losses.nllLoss(logits.T, idx, 0, 'mean')", {"logits": logits, "idx": idx}, ("logits",)),
    ("gaussian_nll", "nn.losses.gaussian_nll_loss(a, b, v)", "mg.nn.losses.gaussianNllLoss(a, b, v)", {"a": randn(3, 4), "b": randn(3, 4), "v": positive(3, 4)}, ("a", "b", "v")),
    ("gaussian_nll_full", "nn.losses.gaussian_nll_loss(a, b, v, full=True, eps=0.5, reduction='sum')", "mg.nn.losses.gaussianNllLoss(a, b, v, { full: true, eps: 0.5, reduction: 'sum' })", {"a": randn(5), "b": randn(5), "v": positive(5)}, ("a", "v")),
    ("kl_div", "nn.losses.kl_div_loss(nn.log_softmax(a), nn.log_softmax(b))", "mg.nn.losses.klDivLoss(mg.nn.logSoftmax(a), mg.nn.logSoftmax(b))", {"a": randn(3, 5), "b": randn(3, 5)}, ("a", "b")),
    ("kl_div_axis0_mean", "nn.losses.kl_div_loss(a, b, axis=0, reduction='mean')", "mg.nn.losses.klDivLoss(a, b, { axis: 0, reduction: 'mean' })", {"a": randn(3, 5), "b": randn(3, 5)}, ("a", "b")),
    ("smooth_l1", "nn.losses.smooth_l1_loss(a, b)", "mg.nn.losses.smoothL1Loss(a, b)", {"a": randn(4, 4), "b": randn(4, 4)}, ("a",)),
    ("smooth_l1_beta", "nn.losses.smooth_l1_loss(a, b, beta=0.5, reduction='none')", "mg.nn.losses.smoothL1Loss(a, b, 0.5, 'none')", {"a": randn(4, 4), "b": randn(4, 4)}, ("a", "b")),
    ("triplet", "nn.losses.triplet_loss(a, p, n)", "mg.nn.losses.tripletLoss(a, p, n)", {"a": randn(3, 4), "p": randn(3, 4), "n": randn(3, 4)}, ("a", "p", "n")),
    ("triplet_p1", "nn.losses.triplet_loss(a, p, n, axis=0, p=1, margin=0.5, reduction='mean')", "mg.nn.losses.tripletLoss(a, p, n, { axis: 0, p: 1, margin: 0.5, reduction: 'mean' })", {"a": randn(3, 4), "p": randn(3, 4), "n": randn(3, 4)}, ("a", "p")),
    ("hinge", "nn.losses.hinge_loss(a, t)", "mg.nn.losses.hingeLoss(a, t)", {"a": randn(6), "t": mx.array([1.0, -1.0, 1.0, -1.0, 1.0, 1.0])}, ("a",)),
    ("hinge_mean", "nn.losses.hinge_loss(a, t, 'mean')", "mg.nn.losses.hingeLoss(a, t, { reduction: 'mean' })", {"a": randn(6), "t": mx.array([1.0, -1.0, 1.0, -1.0, 1.0, 1.0])}, ("a",)),
    ("huber", "nn.losses.huber_loss(a, b)", "mg.nn.losses.huberLoss(a, b)", {"a": randn(3, 4, scale=2.0), "b": randn(3, 4)}, ("a", "b")),
    ("huber_delta", "nn.losses.huber_loss(a, b, delta=0.5, reduction='sum')", "mg.nn.losses.huberLoss(a, b, { delta: 0.5, reduction: 'sum' })", {"a": randn(3, 4, scale=2.0), "b": randn(3, 4)}, ("a",)),
    ("log_cosh", "nn.losses.log_cosh_loss(a, b)", "mg.nn.losses.logCoshLoss(a, b)", {"a": randn(3, 4, scale=3.0), "b": randn(3, 4)}, ("a", "b")),
    ("log_cosh_mean", "nn.losses.log_cosh_loss(a, b, reduction='mean')", "mg.nn.losses.logCoshLoss(a, b, 'mean')", {"a": randn(3, 4, scale=3.0), "b": randn(3, 4)}, ("a",)),
    ("cosine", "nn.losses.cosine_similarity_loss(a, b)", "mg.nn.losses.cosineSimilarityLoss(a, b)", {"a": randn(3, 4), "b": randn(3, 4)}, ("a", "b")),
    ("cosine_axis", "nn.losses.cosine_similarity_loss(a, b, axis=-1, eps=0.1, reduction='sum')", "mg.nn.losses.cosineSimilarityLoss(a, b, { axis: -1, eps: 0.1, reduction: 'sum' })", {"a": randn(2, 3, 4), "b": randn(2, 3, 4)}, ("a",)),
    ("margin_ranking", "nn.losses.margin_ranking_loss(a, b, t)", "mg.nn.losses.marginRankingLoss(a, b, t)", {"a": randn(5), "b": randn(5), "t": mx.array([1.0, -1.0, 1.0, 1.0, -1.0])}, ("a", "b")),
    ("margin_ranking_margin", "nn.losses.margin_ranking_loss(a, b, t, margin=0.5, reduction='mean')", "mg.nn.losses.marginRankingLoss(a, b, t, 0.5, 'mean')", {"a": randn(5), "b": randn(5), "t": mx.array([1.0, -1.0, 1.0, 1.0, -1.0])}, ("a",)),
]
for name, py, ts, inputs, g in loss_cases:
    function("loss_" + name, py, ts, inputs, grad=g)

function("clip_grad_norm", "optim.clip_grad_norm({'a': a, 'b': [b]}, 1.0)", "mg.optimizers.clipGradNorm({ a, b: [b] }, 1.0)",
         {"a": randn(3, 4), "b": randn(5)})
function("clip_grad_norm_noclip", "optim.clip_grad_norm([a, b], 100.0)", "mg.optimizers.clipGradNorm([a, b], 100.0)",
         {"a": randn(3, 4), "b": randn(5)})


# ---------------------------------------------------------------- convolutions (core ops)

for name, py, ts, xs, ws in [
    ("conv1d", "mx.conv1d(x, w)", "mg.conv1d(x, w)", (2, 9, 3), (4, 3, 3)),
    ("conv1d_args", "mx.conv1d(x, w, 2, 1, 2)", "mg.conv1d(x, w, 2, 1, 2)", (2, 9, 3), (4, 3, 3)),
    ("conv1d_groups", "mx.conv1d(x, w, stride=1, padding=2, groups=2)", "mg.conv1d(x, w, { padding: 2, groups: 2 })", (1, 6, 4), (6, 3, 2)),
    ("conv1d_depthwise", "mx.conv1d(x, w, groups=4)", "mg.conv1d(x, w, 1, 0, 1, 4)", (2, 7, 4), (4, 3, 1)),
    ("conv1d_pointwise", "mx.conv1d(x, w)", "mg.conv1d(x, w)", (2, 5, 3), (6, 1, 3)),
    ("conv2d", "mx.conv2d(x, w)", "mg.conv2d(x, w)", (2, 6, 5, 3), (4, 3, 3, 3)),
    ("conv2d_args", "mx.conv2d(x, w, stride=(2, 1), padding=(1, 2), dilation=(1, 2))", "mg.conv2d(x, w, [2, 1], [1, 2], [1, 2])", (2, 7, 6, 2), (3, 3, 2, 2)),
    ("conv2d_groups", "mx.conv2d(x, w, padding=1, groups=3)", "mg.conv2d(x, w, { padding: 1, groups: 3 })", (2, 4, 4, 6), (9, 3, 3, 2)),
    ("conv2d_depthwise", "mx.conv2d(x, w, stride=2, padding=1, groups=5)", "mg.conv2d(x, w, 2, 1, 1, 5)", (1, 7, 7, 5), (5, 3, 3, 1)),
    ("conv2d_pointwise_stride", "mx.conv2d(x, w, stride=2)", "mg.conv2d(x, w, 2)", (1, 5, 5, 4), (3, 1, 1, 4)),
    ("conv2d_wide", "mx.conv2d(x, w, padding=1)", "mg.conv2d(x, w, 1, 1)", (2, 8, 8, 16), (32, 3, 3, 16)),
    ("conv3d", "mx.conv3d(x, w, stride=(1, 2, 1), padding=(0, 1, 1))", "mg.conv3d(x, w, [1, 2, 1], [0, 1, 1])", (1, 4, 5, 4, 2), (3, 2, 3, 2, 2)),
    ("conv_transpose1d", "mx.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1)", "mg.convTranspose1d(x, w, 2, 1, 1, 1)", (2, 5, 3), (4, 3, 3)),
    ("conv_transpose2d", "mx.conv_transpose2d(x, w, stride=2)", "mg.convTranspose2d(x, w, { stride: 2 })", (1, 3, 4, 2), (3, 3, 3, 2)),
    ("conv_transpose2d_groups", "mx.conv_transpose2d(x, w, stride=(1, 2), padding=1, dilation=2, groups=2)", "mg.convTranspose2d(x, w, [1, 2], 1, 2, 0, 2)", (1, 4, 3, 4), (4, 2, 2, 2)),
    ("conv_transpose3d", "mx.conv_transpose3d(x, w, stride=2, padding=1)", "mg.convTranspose3d(x, w, 2, 1)", (1, 2, 3, 2, 2), (2, 3, 2, 2, 2)),
    ("conv_general", "mx.conv_general(x, w, stride=2, padding=([1, 0], [2, 1]), kernel_dilation=(2, 1), input_dilation=(1, 3), flip=True)",
     "mg.convGeneral(x, w, 2, [[1, 0], [2, 1]], [2, 1], [1, 3], 1, true)", (2, 6, 4, 3), (4, 2, 3, 3)),
    ("conv_general_negpad", "mx.conv_general(x, w, padding=-1, groups=2)", "mg.convGeneral(x, w, { padding: -1, groups: 2 })", (1, 8, 4), (2, 3, 2)),
]:
    function("conv_" + name, py, ts, {"x": randn(*xs), "w": randn(*ws, scale=0.5)}, grad=("x", "w"), into=conv_cases)
function("conv_f16", "mx.conv2d(x.astype(mx.float16), w.astype(mx.float16), padding=1)", "mg.conv2d(mg.astype(x, mg.float16), mg.astype(w, mg.float16), 1, 1)",
         {"x": randn(1, 5, 5, 4), "w": randn(3, 3, 3, 4, scale=0.5)}, into=conv_cases, tol={"rtol": 4e-3, "atol": 4e-3})
function("conv_bf16", "mx.conv1d(x.astype(mx.bfloat16), w.astype(mx.bfloat16), padding=1)", "mg.conv1d(mg.astype(x, mg.bfloat16), mg.astype(w, mg.bfloat16), 1, 1)",
         {"x": randn(2, 6, 8), "w": randn(5, 3, 8, scale=0.5)}, into=conv_cases, tol={"rtol": 3e-2, "atol": 3e-2})
function("conv_mixed", "mx.conv1d(x.astype(mx.bfloat16), w.astype(mx.float16))", "mg.conv1d(mg.astype(x, mg.bfloat16), mg.astype(w, mg.float16))",
         {"x": randn(1, 5, 2), "w": randn(3, 2, 2)}, into=conv_cases, tol={"rtol": 1e-2, "atol": 1e-2})
for i, (py, ts, a, v) in enumerate([
    ("mx.convolve(a, v)", "mg.convolve(a, v)", 7, 3), ("mx.convolve(a, v, 'same')", "mg.convolve(a, v, 'same')", 6, 4),
    ("mx.convolve(a, v, mode='valid')", "mg.convolve(a, v, { mode: 'valid' })", 6, 3), ("mx.convolve(a, v, 'same')", "mg.convolve(a, v, 'same')", 2, 5),
]):
    function(f"conv_convolve_{i}", py, ts, {"a": randn(a), "v": randn(v)}, grad=("a", "v"), into=conv_cases)


# ---------------------------------------------------------------- init (exact, from the same seeds)

init_cases = []


def init(name, py, ts, seed):
    mx.random.seed(seed)
    v = eval(py, {"nn": nn, "mx": mx})
    if isinstance(v, nn.Module):
        v = v.parameters()
    init_cases.append({"name": name, "py": py, "ts": ts, "seed": seed, "value": flat(v) if not isinstance(v, mx.array) else [["", enc(v)]]})


for i, (py, ts) in enumerate([
    ("nn.Linear(5, 3)", "new mg.nn.Linear(5, 3)"), ("nn.Bilinear(2, 3, 4)", "new mg.nn.Bilinear(2, 3, 4)"),
    ("nn.Embedding(7, 3)", "new mg.nn.Embedding(7, 3)"), ("nn.MultiHeadAttention(8, 2, bias=True)", "new mg.nn.MultiHeadAttention(8, 2, { bias: true })"),
    ("nn.RNN(3, 4)", "new mg.nn.RNN(3, 4)"), ("nn.GRU(3, 4)", "new mg.nn.GRU(3, 4)"), ("nn.LSTM(2, 3)", "new mg.nn.LSTM(2, 3)"),
    ("nn.LayerNorm(4)", "new mg.nn.LayerNorm(4)"), ("nn.BatchNorm(3)", "new mg.nn.BatchNorm(3)"), ("nn.PReLU(2)", "new mg.nn.PReLU(2)"),
    ("nn.TransformerEncoderLayer(8, 2)", "new mg.nn.TransformerEncoderLayer(8, 2)"),
    ("nn.Conv2d(3, 4, 3, groups=1)", "new mg.nn.Conv2d(3, 4, 3)"), ("nn.Conv1d(4, 6, 2, groups=2)", "new mg.nn.Conv1d(4, 6, 2, { groups: 2 })"),
    ("nn.ConvTranspose2d(3, 2, 2)", "new mg.nn.ConvTranspose2d(3, 2, 2)"), ("nn.Conv3d(2, 2, 2)", "new mg.nn.Conv3d(2, 2, 2)"),
    ("nn.init.constant(0.5)(mx.zeros((2, 3)))", "mg.nn.init.constant(0.5)(mg.zeros([2, 3]))"),
    ("nn.init.constant(3, mx.int32)(mx.zeros((2,)))", "mg.nn.init.constant(3, mg.int32)(mg.zeros([2]))"),
    ("nn.init.normal()(mx.zeros((3, 4)))", "mg.nn.init.normal()(mg.zeros([3, 4]))"),
    ("nn.init.normal(mean=1.0, std=0.5)(mx.zeros((3, 4)))", "mg.nn.init.normal({ mean: 1.0, std: 0.5 })(mg.zeros([3, 4]))"),
    ("nn.init.uniform(-2.0, 3.0)(mx.zeros((4, 2)))", "mg.nn.init.uniform(-2.0, 3.0)(mg.zeros([4, 2]))"),
    ("nn.init.identity()(mx.zeros((3, 3)))", "mg.nn.init.identity()(mg.zeros([3, 3]))"),
    ("nn.init.glorot_normal()(mx.zeros((4, 6)))", "mg.nn.init.glorotNormal()(mg.zeros([4, 6]))"),
    ("nn.init.glorot_uniform()(mx.zeros((3, 2, 5)), gain=2.0)", "mg.nn.init.glorotUniform()(mg.zeros([3, 2, 5]), 2.0)"),
    ("nn.init.he_normal()(mx.zeros((4, 6)), mode='fan_out')", "mg.nn.init.heNormal()(mg.zeros([4, 6]), 'fan_out')"),
    ("nn.init.he_uniform()(mx.zeros((6, 3, 3, 2)), gain=0.5)", "mg.nn.init.heUniform()(mg.zeros([6, 3, 3, 2]), 'fan_in', 0.5)"),
    ("nn.init.sparse(0.5)(mx.zeros((4, 5)))", "mg.nn.init.sparse(0.5)(mg.zeros([4, 5]))"),
    ("nn.init.sparse(0.3, 1.0, 0.1)(mx.zeros((3, 6)))", "mg.nn.init.sparse(0.3, { mean: 1.0, std: 0.1 })(mg.zeros([3, 6]))"),
    ("nn.init.orthogonal()(mx.zeros((4, 4)))", "mg.nn.init.orthogonal()(mg.zeros([4, 4]))"),
    ("nn.init.orthogonal(gain=2.0)(mx.zeros((3, 5)))", "mg.nn.init.orthogonal({ gain: 2.0 })(mg.zeros([3, 5]))"),
    ("nn.init.orthogonal()(mx.zeros((5, 2)))", "mg.nn.init.orthogonal()(mg.zeros([5, 2]))"),
]):
    init(f"init_{i}_{py}", py, ts, seed=100 + i)


# ---------------------------------------------------------------- optimizers

opt_cases = []
param_shapes = {"a": (3, 4), "b": [(4,), {"c": (2, 2, 3)}]}


def make_tree(shapes, fn):
    if isinstance(shapes, tuple):
        return fn(shapes)
    if isinstance(shapes, list):
        return [make_tree(s, fn) for s in shapes]
    return {k: make_tree(v, fn) for k, v in shapes.items()}


def optimizer(name, py, ts, steps=4):
    opt = eval(py, {"optim": optim, "mx": mx})
    params = make_tree(param_shapes, lambda s: randn(*s))
    initial = flat(params)
    grads_seq, after = [], []
    for _ in range(steps):
        grads = make_tree(param_shapes, lambda s: randn(*s))
        grads_seq.append(flat(grads))
        params = opt.apply_gradients(grads, params)
        mx.eval(params, opt.state)
        after.append(flat(params))
    opt_cases.append({"name": name, "py": py, "ts": ts, "params": initial, "grads": grads_seq, "after": after,
                      "state": flat(opt.state) if not isinstance(opt, optim.MultiOptimizer) else flat(opt.state["states"])})


for py, ts in [
    ("optim.SGD(0.1)", "new mg.optimizers.SGD(0.1)"),
    ("optim.SGD(0.1, momentum=0.9)", "new mg.optimizers.SGD(0.1, { momentum: 0.9 })"),
    ("optim.SGD(0.05, momentum=0.9, weight_decay=0.01, dampening=0.1)", "new mg.optimizers.SGD(0.05, 0.9, 0.01, 0.1)"),
    ("optim.SGD(0.05, momentum=0.8, nesterov=True)", "new mg.optimizers.SGD(0.05, { momentum: 0.8, nesterov: true })"),
    ("optim.RMSprop(0.01)", "new mg.optimizers.RMSprop(0.01)"),
    ("optim.RMSprop(0.01, alpha=0.9, eps=1e-4)", "new mg.optimizers.RMSprop(0.01, { alpha: 0.9, eps: 1e-4 })"),
    ("optim.Adagrad(0.1)", "new mg.optimizers.Adagrad(0.1)"),
    ("optim.AdaDelta(1.0)", "new mg.optimizers.AdaDelta(1.0)"),
    ("optim.AdaDelta(0.5, rho=0.8, eps=1e-3)", "new mg.optimizers.AdaDelta(0.5, 0.8, 1e-3)"),
    ("optim.Adam(0.01)", "new mg.optimizers.Adam(0.01)"),
    ("optim.Adam(0.01, betas=[0.8, 0.99], eps=1e-6, bias_correction=True)", "new mg.optimizers.Adam(0.01, { betas: [0.8, 0.99], eps: 1e-6, biasCorrection: true })"),
    ("optim.AdamW(0.01)", "new mg.optimizers.AdamW(0.01)"),
    ("optim.AdamW(0.01, weight_decay=0.1, bias_correction=True)", "new mg.optimizers.AdamW(0.01, { weightDecay: 0.1, biasCorrection: true })"),
    ("optim.Adamax(0.01)", "new mg.optimizers.Adamax(0.01)"),
    ("optim.Adamax(0.02, betas=[0.5, 0.9], eps=1e-3)", "new mg.optimizers.Adamax(0.02, [0.5, 0.9], 1e-3)"),
    ("optim.Lion(0.01)", "new mg.optimizers.Lion(0.01)"),
    ("optim.Lion(0.01, betas=[0.8, 0.95], weight_decay=0.1)", "new mg.optimizers.Lion(0.01, { betas: [0.8, 0.95], weightDecay: 0.1 })"),
    ("optim.Adafactor()", "new mg.optimizers.Adafactor()"),
    ("optim.Adafactor(learning_rate=0.01, relative_step=False, beta_1=0.9, weight_decay=0.1)",
     "new mg.optimizers.Adafactor({ learningRate: 0.01, relativeStep: false, beta1: 0.9, weightDecay: 0.1 })"),
    ("optim.Adafactor(warmup_init=True, scale_parameter=False, clip_threshold=0.5)",
     "new mg.optimizers.Adafactor({ warmupInit: true, scaleParameter: false, clipThreshold: 0.5 })"),
    ("optim.Muon(0.02)", "new mg.optimizers.Muon(0.02)"),
    ("optim.Muon(0.02, momentum=0.9, weight_decay=0.0, nesterov=False, ns_steps=3)", "new mg.optimizers.Muon(0.02, 0.9, 0.0, false, 3)"),
    ("optim.SGD(optim.cosine_decay(0.1, 3), momentum=0.5)", "new mg.optimizers.SGD(mg.optimizers.cosineDecay(0.1, 3), { momentum: 0.5 })"),
    ("optim.Adam(optim.join_schedules([optim.linear_schedule(0.0, 0.01, 2), optim.exponential_decay(0.01, 0.5)], [2]))",
     "new mg.optimizers.Adam(mg.optimizers.joinSchedules([mg.optimizers.linearSchedule(0.0, 0.01, 2), mg.optimizers.exponentialDecay(0.01, 0.5)], [2]))"),
    ("optim.MultiOptimizer([optim.Adam(0.01), optim.SGD(0.1)], [lambda name, g: name.startswith('b')])",
     "new mg.optimizers.MultiOptimizer([new mg.optimizers.Adam(0.01), new mg.optimizers.SGD(0.1)], [(name, g) => name.startsWith('b')])"),
]:
    optimizer(py, py, ts)


# ---------------------------------------------------------------- schedules

schedule_cases = []
steps = [0, 1, 2, 3, 5, 8, 10, 13, 20]
for py, ts in [
    ("optim.exponential_decay(0.1, 0.9)", "mg.optimizers.exponentialDecay(0.1, 0.9)"),
    ("optim.step_decay(0.1, 0.5, 3)", "mg.optimizers.stepDecay(0.1, 0.5, 3)"),
    ("optim.cosine_decay(0.1, 10)", "mg.optimizers.cosineDecay(0.1, 10)"),
    ("optim.cosine_decay(0.1, 10, end=0.01)", "mg.optimizers.cosineDecay(0.1, 10, { end: 0.01 })"),
    ("optim.linear_schedule(0.0, 0.1, 5)", "mg.optimizers.linearSchedule(0.0, 0.1, 5)"),
    ("optim.linear_schedule(1.0, 0.0, 1)", "mg.optimizers.linearSchedule(1.0, 0.0, 1)"),
    ("optim.join_schedules([optim.linear_schedule(0.0, 0.1, 5), optim.cosine_decay(0.1, 10)], [5])",
     "mg.optimizers.joinSchedules([mg.optimizers.linearSchedule(0.0, 0.1, 5), mg.optimizers.cosineDecay(0.1, 10)], [5])"),
    ("optim.join_schedules([optim.exponential_decay(1.0, 0.5), optim.step_decay(0.2, 0.5, 2), optim.linear_schedule(0.1, 0.0, 4)], [3, 8])",
     "mg.optimizers.joinSchedules([mg.optimizers.exponentialDecay(1.0, 0.5), mg.optimizers.stepDecay(0.2, 0.5, 2), mg.optimizers.linearSchedule(0.1, 0.0, 4)], [3, 8])"),
]:
    s = eval(py, {"optim": optim})
    vals = [s(mx.array(k, mx.uint64)) for k in steps]
    schedule_cases.append({"name": py, "py": py, "ts": ts, "steps": steps, "values": enc(vals)})


# ---------------------------------------------------------------- training

training_cases = []


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(6, 16), nn.Linear(16, 16), nn.Linear(16, 3)]

    def __call__(self, x):
        for l in self.layers[:-1]:
            x = nn.relu(l(x))
        return self.layers[-1](x)


class TinyTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(11, 16)
        self.encoder = nn.TransformerEncoder(2, 16, 4, mlp_dims=32)
        self.out = nn.Linear(16, 11)

    def __call__(self, tokens):
        x = self.embedding(tokens)
        mask = nn.MultiHeadAttention.create_additive_causal_mask(tokens.shape[1])
        return self.out(self.encoder(x, mask))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * 2 * 2, 4)

    def __call__(self, x):
        x = self.pool(nn.relu(self.conv1(x)))
        x = self.pool(nn.relu(self.conv2(x)))
        return self.fc(x.reshape(x.shape[0], -1))


def train(name, model, opt_py, opt_ts, x, y, loss_py, loss_ts, steps):
    mx.random.seed(0)
    init = tree_flatten(model.parameters())
    opt = eval(opt_py, {"optim": optim})

    def loss_fn(xb, yb):
        return eval(loss_py, {"nn": nn, "model": model, "x": xb, "y": yb})

    step_fn = nn.value_and_grad(model, loss_fn)
    losses = []
    for _ in range(steps):
        loss, grads = step_fn(x, y)
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state)
        losses.append(loss.item())
    training_cases.append({"name": name, "opt_py": opt_py, "opt_ts": opt_ts, "loss_py": loss_py, "loss_ts": loss_ts,
                           "weights": flat(dict(init)) if False else [[k, enc(v)] for k, v in init],
                           "x": enc(x), "y": enc(y), "losses": losses,
                           "final": [[k, enc(v)] for k, v in tree_flatten(model.parameters())]})


mx.random.seed(1)
xs = randn(32, 6)
ys = mx.array(rng.integers(0, 3, (32,)).astype(np.int32))
train("mlp_sgd", MLP(), "optim.SGD(0.1, momentum=0.9)", "new mg.optimizers.SGD(0.1, { momentum: 0.9 })", xs, ys,
      "nn.losses.cross_entropy(model(x), y, reduction='mean')", "mg.nn.losses.crossEntropy(model.forward(x), y, { reduction: 'mean' })", 25)
mx.random.seed(2)
train("mlp_adamw", MLP(), "optim.AdamW(0.01)", "new mg.optimizers.AdamW(0.01)", xs, ys,
      "nn.losses.cross_entropy(model(x), y, reduction='mean')", "mg.nn.losses.crossEntropy(model.forward(x), y, { reduction: 'mean' })", 25)
mx.random.seed(3)
tokens = mx.array(rng.integers(0, 11, (4, 6)).astype(np.int32))
targets = mx.array(rng.integers(0, 11, (4, 6)).astype(np.int32))
train("transformer_adam", TinyTransformer(), "optim.Adam(0.003)", "new mg.optimizers.Adam(0.003)", tokens, targets,
      "nn.losses.cross_entropy(model(x), y, reduction='mean')", "mg.nn.losses.crossEntropy(model.forward(x), y, { reduction: 'mean' })", 12)

mx.random.seed(4)
images = randn(8, 8, 8, 1)
labels = mx.array(rng.integers(0, 4, (8,)).astype(np.int32))
train("cnn_sgd", SmallCNN(), "optim.SGD(0.05, momentum=0.9)", "new mg.optimizers.SGD(0.05, { momentum: 0.9 })", images, labels,
      "nn.losses.cross_entropy(model(x), y, reduction='mean')", "mg.nn.losses.crossEntropy(model.forward(x), y, { reduction: 'mean' })", 15)

# ---------------------------------------------------------------- pooling windows that leave a remainder
# (stride = kernel, sizes not multiples of it); last, so every case above keeps its inputs
layer("maxpool2d_remainder", "nn.MaxPool2d(2)", "new mg.nn.MaxPool2d(2)", [randn(2, 5, 7, 3)])
layer("avgpool2d_remainder", "nn.AvgPool2d(2)", "new mg.nn.AvgPool2d(2)", [randn(2, 7, 5, 2)])
layer("maxpool1d_remainder", "nn.MaxPool1d(3)", "new mg.nn.MaxPool1d(3)", [randn(2, 8, 3)])
layer("maxpool3d_remainder", "nn.MaxPool3d(2)", "new mg.nn.MaxPool3d(2)", [randn(1, 3, 5, 4, 2)])


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    meta = {"mlx": mx.__version__}
    for fname, cases in [("layers", layer_cases), ("functions", function_cases), ("conv", conv_cases), ("init", init_cases),
                         ("optimizers", opt_cases), ("schedules", schedule_cases), ("training", training_cases)]:
        (OUT / f"{fname}.json").write_text(json.dumps({**meta, "cases": cases}, separators=(",", ":")) + "\n")
        print(f"{fname}: {len(cases)} cases")
    print(f"MLX {mx.__version__}")


if __name__ == "__main__":
    main()
