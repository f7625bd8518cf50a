"""Writes ts/core/mlx-signatures.ts: the parameter list of every public function, class and array
method of MLX (mlx.core and its random/linalg/fft/fast namespaces, mlx.nn, mlx.optimizers,
mlx.utils), read from MLX itself by introspection.

    /work/mlxenv/bin/python scripts/mlx-signatures.py

metalgrad's options helper (ts/core/options.ts) validates every public call against this table
(positional order, which parameters have defaults and so may be given by name, keyword-only ones),
and the tests walk it so that no op is forgotten. Keys are metalgrad's names (camelCase, with the
namespace: "sum", "random.normal", "nn.Linear", "MgArray.sum"); each entry keeps MLX's own name and
its parameters in Python's notation ("a", "/", "axis=None", "*", "stream=None", "*arrays").
"""
import ast
import inspect
import json
import pathlib
import re

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import mlx.utils as mlx_utils

OUT = pathlib.Path(__file__).resolve().parent.parent / "ts" / "core" / "mlx-signatures.ts"


def camel(name):
    """MLX's snake_case name in camelCase (floor_divide -> floorDivide, atleast_1d -> atleast1d)."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest if p)


def from_nanobind(fn):
    """The parameter lists (one per overload) of a nanobind function, from __nb_signature__."""
    out = []
    for text, _doc, defaults in fn.__nb_signature__:
        # nanobind writes some defaults as \0, \1 ... with their values in the third element.
        text = re.sub(r"\\(\d+)", lambda m: f"__default{m.group(1)}", text)
        text = re.sub(r"\[\w+=\w+\]", "", text)  # ndarray[writable=False] is not Python syntax
        tree = ast.parse(text + ": pass").body[0]
        out.append(params_of(tree.args, lambda node: default_text(node, defaults)))
    return out


def default_text(node, defaults):
    src = ast.unparse(node)
    m = re.fullmatch(r"__default(\d+)", src)
    if m and defaults is not None:
        value = defaults[int(m.group(1))]
        return type(value).__name__ if hasattr(value, "__module__") and type(value).__module__.startswith("mlx") else repr(value)
    return src


def params_of(args, show):
    """Python's notation for an ast.arguments: names, '/', '*', defaults."""
    out = []
    positional = args.posonlyargs + args.args
    n_default = len(args.defaults)
    for i, a in enumerate(positional):
        if a.arg == "self":
            continue
        d = i - (len(positional) - n_default)
        out.append(a.arg if d < 0 else f"{a.arg}={show(args.defaults[d])}")
        if args.posonlyargs and a is args.posonlyargs[-1]:
            out.append("/")
    if args.vararg:
        out.append("*" + args.vararg.arg)
    elif args.kwonlyargs:
        out.append("*")
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        out.append(a.arg if d is None else f"{a.arg}={show(d)}")
    if args.kwarg:
        out.append("**" + args.kwarg.arg)
    return out


def from_inspect(fn, drop_self=False):
    sig = inspect.signature(fn)
    out = []
    seen_kw = False
    params = list(sig.parameters.values())
    if drop_self and params and params[0].name == "self":
        params = params[1:]
    for i, p in enumerate(params):
        text = p.name
        if p.kind == p.VAR_POSITIONAL:
            text, seen_kw = "*" + p.name, True
        elif p.kind == p.VAR_KEYWORD:
            text = "**" + p.name
        elif p.kind == p.KEYWORD_ONLY and not seen_kw:
            out.append("*")
            seen_kw = True
        if p.default is not p.empty:
            text += "=" + short_repr(p.default)
        out.append(text)
        if p.kind == p.POSITIONAL_ONLY and (i + 1 == len(params) or params[i + 1].kind != p.POSITIONAL_ONLY):
            out.append("/")
    return [out]


def short_repr(value):
    if inspect.isfunction(value) or inspect.isbuiltin(value) or inspect.isclass(value):
        return getattr(value, "__qualname__", getattr(value, "__name__", "?"))
    if callable(value) and hasattr(value, "__nb_signature__"):
        return value.__name__
    r = repr(value)
    return r if len(r) <= 60 else type(value).__name__


def add(table, key, mlx_name, sigs, doc):
    entry = {"mlx": mlx_name, "sig": sigs[0]}
    if len(sigs) > 1:
        entry["overloads"] = sigs[1:]
    table[key] = entry


def main():
    table = {}
    namespaces = [("", mx, "mlx.core"), ("random.", mx.random, "mlx.core.random"), ("linalg.", mx.linalg, "mlx.core.linalg"),
                  ("fft.", mx.fft, "mlx.core.fft"), ("fast.", mx.fast, "mlx.core.fast")]
    for prefix, mod, modname in namespaces:
        for name in dir(mod):
            fn = getattr(mod, name)
            if name.startswith("_") or not hasattr(fn, "__nb_signature__"):
                continue
            doc = fn.__nb_signature__[0][1]
            add(table, prefix + camel(name), f"{modname}.{name}", from_nanobind(fn), doc)
    # mx.array's constructor and methods (metalgrad's MgArray).
    add(table, "array", "mlx.core.array", [["val", "dtype=None"]], mx.array.__doc__)
    for name in dir(mx.array):
        fn = getattr(mx.array, name)
        if name.startswith("_") or not hasattr(fn, "__nb_signature__"):
            continue
        add(table, "MgArray." + camel(name), f"mlx.core.array.{name}", from_nanobind(fn), fn.__nb_signature__[0][1])
    # Python-level namespaces: functions and classes (their constructors, and public methods of the
    # base classes users call: Module, Optimizer).
    for prefix, mod, modname in [("nn.", nn, "mlx.nn"), ("nn.init.", nn.init, "mlx.nn.init"),
                                 ("nn.losses.", nn.losses, "mlx.nn.losses"), ("optimizers.", optim, "mlx.optimizers"),
                                 ("utils.", mlx_utils, "mlx.utils")]:
        for name in dir(mod):
            obj = getattr(mod, name)
            if name.startswith("_") or inspect.ismodule(obj):
                continue
            if inspect.isclass(obj):
                if not (obj.__module__ or "").startswith(modname.split(".")[0]) or not obj.__module__.startswith(modname):
                    continue
                add(table, prefix + name, f"{modname}.{name}", from_inspect(obj.__init__, drop_self=True), obj.__doc__)
            elif inspect.isfunction(obj) and (obj.__module__ or "").startswith(modname):
                key = prefix + (name if name[:1].isupper() else camel(name))
                add(table, key, f"{modname}.{name}", from_inspect(obj), obj.__doc__)
    # Functions metalgrad exports in mg.nn that MLX keeps in submodules.
    import mlx.nn.layers.upsample as upsample
    import mlx.nn.utils as nn_utils
    for mod, modname, names in [(upsample, "mlx.nn.layers.upsample", ["upsample_nearest", "upsample_linear", "upsample_cubic"]),
                                (nn_utils, "mlx.nn.utils", ["checkpoint"])]:
        for name in names:
            fn = getattr(mod, name)
            add(table, "nn." + camel(name), f"{modname}.{name}", from_inspect(fn), fn.__doc__)
    for cls, prefix, modname in [(nn.Module, "nn.Module.", "mlx.nn.Module"), (optim.Optimizer, "optimizers.Optimizer.", "mlx.optimizers.Optimizer")]:
        for name, fn in inspect.getmembers(cls, inspect.isfunction):
            if not name.startswith("_"):
                add(table, prefix + camel(name), f"{modname}.{name}", from_inspect(fn, drop_self=True), fn.__doc__)
    lines = [
        f"// Generated by scripts/mlx-signatures.py from MLX {mx.__version__}: do not edit by hand.",
        "// Every public function, class and array method of MLX with its parameters in Python's notation",
        "// (\"/\" ends positional-only, \"*\" starts keyword-only, \"name=default\"); keyed by metalgrad's name.",
        f"export const MLX_VERSION = {json.dumps(mx.__version__)};",
        "export const MLX_SIGNATURES = {",
    ]
    for key, entry in sorted(table.items()):
        lines.append(f"  {json.dumps(key)}: {json.dumps(entry, separators=(', ', ': '))},")
    lines.append("} as const;")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{len(table)} signatures, MLX {mx.__version__} -> {OUT}")


if __name__ == "__main__":
    main()
