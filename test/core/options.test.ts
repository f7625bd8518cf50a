// The options helper (ts/core/options.ts), over the whole public API: every exported function —
// top level and in every namespace (mg.random, mg.linalg, mg.nn …, walked, so namespaces that land
// later are covered) — goes through it, with MLX's signature (mlx-signatures.ts) or metalgrad's own
// (signatures.ts); unknown option names are errors naming the op and the accepted names; every
// defaulted parameter is accepted by name and lands in its positional slot; a parameter given both
// ways is an error; implementations take MLX's parameters in MLX's order.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import {
  callSpec, type CallSpec, camelCase, checkOptionNames, implementationOf, normalizeCall, parseSignature, resolveOptions, signatureOf,
  unknownOptionError,
} from "../../ts/core/options.ts";
import { MLX_SIGNATURES } from "../../ts/core/mlx-signatures.ts";
import { METALGRAD_SIGNATURES } from "../../ts/core/signatures.ts";

type Fn = (...args: unknown[]) => unknown;
const isClass = (v: unknown) => typeof v === "function" && /^class[\s{]/.test(Function.prototype.toString.call(v));

/** Every public function: [key, function], keys as in the signature tables ("sum", "random.normal"). */
function publicFunctionsOf(): [string, Fn][] {
  const out: [string, Fn][] = [];
  const seen = new Set<object>();
  const walk = (prefix: string, ns: Record<string, unknown>) => {
    if (seen.has(ns)) return;
    seen.add(ns);
    for (const [k, v] of Object.entries(ns)) {
      if (typeof v === "function" && !isClass(v)) out.push([prefix + k, v as Fn]);
      else if (v && typeof v === "object" && !(v instanceof mg.MgArray) && !Array.isArray(v) && isNamespace(v)) walk(`${prefix}${k}.`, v as Record<string, unknown>);
    }
  };
  walk("", mg as unknown as Record<string, unknown>);
  return out;
}
/** A module namespace (`export * as random`) or a plain object of functions only (mg.nn.losses), not a
 *  device, a dtype or a record such as fast.CustomKernel. */
function isNamespace(v: object): boolean {
  if ((v as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag] === "Module") return true;
  const values = Object.values(v);
  return Object.getPrototypeOf(v) === Object.prototype && values.length > 0 && values.every((f) => typeof f === "function");
}

/** Parameter names of an implementation, from its source (types are stripped by the transpiler). */
function parameterNames(fn: Function): string[] {
  const src = Function.prototype.toString.call(fn);
  const m = src.match(/^(?:async\s+)?(?:function\s*\*?\s*[\w$]*\s*)?\(([^]*?)\)\s*(?:=>|\{)/);
  if (!m) {
    const single = src.match(/^(?:async\s+)?([\w$]+)\s*=>/);
    return single ? [single[1]!] : [];
  }
  const names: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of m[1]!) {
    if ("([{".includes(ch)) depth++;
    if (")]}".includes(ch)) depth--;
    if (ch === "," && depth === 0) {
      names.push(current);
      current = "";
    } else current += ch;
  }
  if (current.trim()) names.push(current);
  return names.map((p) => p.trim().replace(/\s*=[^]*$/, ""));
}

// Required parameters whose JavaScript name differs from MLX's (defaulted ones, which the options
// object names, must match exactly).
const JS_NAMES: Record<string, Record<string, string>> = {
  array: { val: "value" }, // `val` reads as a typo in JS; MLX documents the parameter as "val: the input".
  canCast: { from_: "from" }, // Python's trailing underscore avoids its keyword.
  issubdtype: { arg1: "a", arg2: "b" },
  repeat: { array: "a" }, // `array` would shadow mg.array in the implementation.
};

// MLX functions metalgrad does not provide, with the reason. Adding a function never fails this
// list; a function MLX has that is neither exported nor listed does.
const NOT_IN_METALGRAD: Record<string, string> = {
  clearStreams: "streams are plain objects here; nothing to clear",
  newThreadLocalStream: "JavaScript has one thread per isolate",
  newThreadUnsafeStream: "JavaScript has one thread per isolate",
  exportFunction: "MLX's .mlxfn export format is not implemented",
  exportToDot: "MLX's graph export is not implemented",
  exporter: "MLX's .mlxfn export format is not implemented",
  importFunction: "MLX's .mlxfn export format is not implemented",
  fromDlpack: "no DLPack in JavaScript",
  getArrayBufferSize: "arrays expose no buffer protocol",
  printoptions: "printing options are not configurable yet",
  getPrintoptions: "printing options are not configurable yet",
  setPrintoptions: "printing options are not configurable yet",
  "fast.cudaKernel": "CUDA kernels: metalgrad targets Metal",
  "fast.precompiledCudaKernel": "CUDA kernels: metalgrad targets Metal",
  "fast.gatedDeltaUpdate": "not implemented",
  blockMaskedMm: "not implemented",
  segmentedMm: "not implemented",
  gatherMm: "not implemented",
  gatherQqmm: "nvfp4 activation quantization is not implemented",
  qqmm: "nvfp4 activation quantization is not implemented",
  toFp8: "fp8 is not implemented",
  fromFp8: "fp8 is not implemented",
  hadamardTransform: "not implemented",
  unique: "not implemented",
  "random.multivariateNormal": "needs linalg's Cholesky/SVD on the CPU",
  "MgArray.var": "a.variance (as mg.variance: `var` reads as the JavaScript keyword)",
  var: "mg.variance (`var` reads as the JavaScript keyword)",
  // Landing in parallel branches (wave 2): convolutions (nn), quantization/linalg/fft, I/O, fused ops.
  conv1d: "wave 2: mg.nn branch", conv2d: "wave 2: mg.nn branch", conv3d: "wave 2: mg.nn branch",
  convGeneral: "wave 2: mg.nn branch", convTranspose1d: "wave 2: mg.nn branch", convTranspose2d: "wave 2: mg.nn branch",
  convTranspose3d: "wave 2: mg.nn branch", convolve: "wave 2: mg.nn branch",
  quantize: "wave 2: linalg branch", dequantize: "wave 2: linalg branch", quantizedMatmul: "wave 2: linalg branch",
  gatherQmm: "wave 2: linalg branch", matrixNorm: "wave 2: linalg branch", "nn.quantize": "wave 2: linalg branch (quantized layers)",
  "nn.averageGradients": "distributed training is not implemented", "nn.fullyShard": "distributed training is not implemented",
  load: "wave 2: io branch", save: "wave 2: io branch", saveGguf: "wave 2: io branch", saveSafetensors: "wave 2: io branch",
  savez: "wave 2: io branch", savezCompressed: "wave 2: io branch",
  "fast.crossEntropy": "wave 2: fast branch", "fast.layerNorm": "wave 2: fast branch", "fast.rmsNorm": "wave 2: fast branch",
  "fast.rope": "wave 2: fast branch", "fast.scaledDotProductAttention": "wave 2: fast branch",
};

const functions = publicFunctionsOf();

describe("every public function goes through the options helper", () => {
  test("the walk finds the API (top level and namespaces)", () => {
    const keys = new Set(functions.map(([k]) => k));
    for (const k of ["sum", "random.normal", "fast.metalKernel", "testing.gradcheck", "grad", "tidy"]) expect(keys.has(k)).toBe(true);
    expect(functions.length).toBeGreaterThan(250);
  });

  test("each has a signature (MLX's, or metalgrad's own in ts/core/signatures.ts)", () => {
    expect(functions.filter(([, f]) => !signatureOf(f)).map(([k]) => k)).toEqual([]);
  });

  test("each takes MLX's positional parameters in MLX's order (the implementation's parameter names)", () => {
    const wrong: string[] = [];
    for (const [key, f] of functions) {
      const spec = signatureOf(f)!;
      const impl = implementationOf(f)!;
      if (spec.variadic) continue;
      const names = parameterNames(impl);
      // Optional parameters taken as `...rest` are resolved by name inside (resolveOptions): not by position.
      const rest = names.findIndex((n) => n.startsWith("..."));
      if (rest === 0) continue; // (...args): the implementation reads every argument itself
      if (rest >= 0 && rest < spec.required) wrong.push(`${key}: a required parameter is inside ...rest`);
      spec.positional.forEach((p, i) => {
        if (rest >= 0 && i >= rest) return;
        const want = i < spec.required ? (JS_NAMES[spec.key]?.[p.mlxName] ?? p.name) : p.name;
        if (names[i] !== want) wrong.push(`${key}: parameter ${i} is '${names[i]}', MLX's is '${want}'`);
      });
      // After the positional ones, at most the options object.
      if (names.length > spec.positional.length + 1) wrong.push(`${key}: extra parameters ${names.slice(spec.positional.length + 1).join(", ")}`);
    }
    expect(wrong).toEqual([]);
  });

  test("an unknown option is an error naming the op, the option and the accepted names; extra arguments too", () => {
    const silent: string[] = [];
    for (const [key, f] of functions) {
      const spec = signatureOf(f)!;
      if (spec.openKeywords) continue;
      const placeholders = spec.positional.slice(0, spec.required).map(() => 0);
      if (spec.accepted.length > 0 && !spec.treeArguments) {
        const list = spec.accepted.map((a) => `'${a}'`).join(", ");
        try {
          f(...placeholders, { __bogus__: 1 });
          silent.push(`${key}: accepted { __bogus__ }`);
        } catch (e) {
          const message = (e as Error).message;
          if (!message.includes(`[${spec.op}] unknown option '__bogus__'. Accepted options: ${list}.`)) silent.push(`${key}: ${message}`);
        }
      } else if (!spec.variadic) {
        expect(() => f(...spec.positional.map(() => 0), 0)).toThrow(`[${spec.op}] takes at most ${spec.positional.length} positional arguments`);
      }
    }
    expect(silent).toEqual([]);
  });

  test("every defaulted parameter is accepted by name, in its slot; given both ways it is an error", () => {
    let checked = 0;
    for (const [key, f] of functions) {
      const spec = signatureOf(f)!;
      if (spec.variadic) continue;
      const required = spec.positional.slice(0, spec.required).map((_, i) => `req${i}`);
      spec.positional.forEach((p, i) => {
        if (i < spec.required) return;
        const marker = { marker: key };
        const call = normalizeCall(spec, [...required, { [p.name]: marker }]);
        expect(call.length).toBe(spec.positional.length + 1);
        expect(call[i]).toBe(marker);
        expect(call.slice(0, spec.required)).toEqual(required);
        const positional = [...required, ...spec.positional.slice(spec.required, i + 1).map(() => 1)];
        expect(() => normalizeCall(spec, [...positional, { [p.name]: 2 }])).toThrow(`[${spec.op}] '${p.name}' was given both positionally and in the options object`);
        checked++;
      });
      for (const k of spec.keywords) {
        const call = normalizeCall(spec, [...required, { [k.name]: 7 }]);
        expect((call[call.length - 1] as Record<string, unknown>)[k.name]).toBe(7);
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  test("MLX's functions are all provided, or listed with the reason they are not", () => {
    const present = new Set(functions.map(([k]) => k));
    const namespaces = new Set(["", ...functions.map(([k]) => k.split(".").slice(0, -1).join("."))]);
    const missing = Object.keys(MLX_SIGNATURES).filter((key) => {
      const ns = key.split(".").slice(0, -1).join(".");
      if (ns === "MgArray" || /^[A-Z]/.test(key.split(".").pop()!)) return false; // methods and classes: below / their own tests
      if (!namespaces.has(ns) || ns.includes("Module") || ns.includes("Optimizer")) return false;
      return !present.has(key) && !(key in NOT_IN_METALGRAD);
    });
    expect(missing).toEqual([]);
  });
});

describe("class constructors (mg.nn layers, mg.optimizers): MLX's parameters, unknown options rejected", () => {
  // Constructors cannot be wrapped: each resolves its options with resolveOptions. Checked here by
  // constructing with placeholder required arguments (1) and a bogus option.
  const EXEMPT: Record<string, string> = {
    "optimizers.Optimizer": "the abstract base class",
    "optimizers.MultiOptimizer": "its required arguments are lists of optimizers and filters",
  };
  const classes: [string, new (...args: unknown[]) => unknown][] = [];
  const walk = (prefix: string, ns: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(ns)) {
      if (isClass(v)) classes.push([prefix + k, v as new (...args: unknown[]) => unknown]);
      else if (v && typeof v === "object" && isNamespace(v) && prefix === "") walk(`${k}.`, v as Record<string, unknown>);
    }
  };
  walk("", mg as unknown as Record<string, unknown>);
  test("each class MLX has takes its options by name and rejects unknown ones", () => {
    const wrong: string[] = [];
    for (const [key, C] of classes) {
      const spec = callSpec(key);
      if (!spec || spec.accepted.length === 0 || key in EXEMPT) continue;
      try {
        new C(...spec.positional.slice(0, spec.required).map(() => 1), { __bogus__: 1 });
        wrong.push(`${key}: accepted { __bogus__ }`);
      } catch (e) {
        if (!(e as Error).message.includes("unknown option '__bogus__'")) wrong.push(`${key}: ${(e as Error).message}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe("array methods", () => {
  const proto = mg.MgArray.prototype as unknown as Record<string, unknown>;
  test("MLX's array methods exist, each through the helper (or listed)", () => {
    const keys = [...Object.keys(MLX_SIGNATURES), ...Object.keys(METALGRAD_SIGNATURES)].filter((k) => k.startsWith("MgArray."));
    const wrong = keys.filter((k) => !(k in NOT_IN_METALGRAD) && !signatureOf(proto[k.slice("MgArray.".length)])).map((k) => k);
    expect(wrong).toEqual([]);
  });
  test("properties: T, mT, real, imag, shape, dtype, size, ndim, itemsize, nbytes", () => {
    const a = mg.array([[1, 2, 3], [4, 5, 6]], mg.float32);
    expect(a.T.tolist()).toEqual([[1, 4], [2, 5], [3, 6]]);
    expect(mg.reshape(mg.arange(8), [2, 2, 2]).mT.tolist()).toEqual([[[0, 2], [1, 3]], [[4, 6], [5, 7]]]);
    expect([a.shape, a.dtype, a.size, a.ndim, a.itemsize, a.nbytes]).toEqual([[2, 3], mg.float32, 6, 2, 4, 24]);
    const z = mg.array([{ re: 1, im: 2 }]);
    expect([z.real.tolist(), z.imag.tolist()]).toEqual([[1], [2]]);
  });
  test("methods take MLX's parameters by name and reject unknown ones", () => {
    const a = mg.array([[1, 2], [3, 4]], mg.float32);
    expect(a.sum({ axis: 1 }).tolist()).toEqual([3, 7]);
    expect(a.mean(0, { keepdims: true }).tolist()).toEqual([[2, 3]]);
    expect(a.variance(0, { correction: 1 }).tolist()).toEqual([2, 2]);
    expect(a.std({ ddof: 1, axis: 0 }).tolist()).toEqual([Math.SQRT2, Math.SQRT2].map(Math.fround));
    expect(a.argmax({ axis: 1, keepdims: true }).tolist()).toEqual([[1], [1]]);
    expect(a.flatten({ startAxis: 0 }).tolist()).toEqual([1, 2, 3, 4]);
    expect(a.cumsum(1, { reverse: true }).tolist()).toEqual([[3, 2], [7, 4]]);
    expect(a.round({ decimals: 0 }).tolist()).toEqual([[1, 2], [3, 4]]);
    expect(() => a.sum({ axs: 1 } as object)).toThrow("[sum] unknown option 'axs' (did you mean 'axis'?). Accepted options: 'axis', 'keepdims', 'stream'.");
    expect(() => a.cumsum(1, { dtype: mg.int32 } as object)).toThrow("[cumsum] unknown option 'dtype'.");
    expect(() => a.variance(0, false, 1, { correction: 1 })).toThrow("[var] give ddof or correction, not both.");
    expect(() => a.exp({ stram: mg.cpu } as object)).toThrow("[exp] unknown option 'stram' (did you mean 'stream'?)");
  });
});

describe("the helper itself", () => {
  test("parses Python's notation: positional-only, defaults, keyword-only, *args, **kwargs, stream", () => {
    const s = parseSignature("f", "mlx.core.f", ["a", "/", "axis=None", "keep_dims=False", "*", "equal_nan=False", "stream=None"]);
    expect(s.op).toBe("f");
    expect(s.positional.map((p) => [p.name, p.default])).toEqual([["a", undefined], ["axis", "None"], ["keepDims", "False"]]);
    expect(s.required).toBe(1);
    expect(s.keywords.map((p) => p.name)).toEqual(["equalNan", "stream"]);
    expect(s.accepted).toEqual(["axis", "keepDims", "equalNan", "stream"]);
    const r = parseSignature("random.normal", "mlx.core.random.normal", ["shape=[]", "dtype=float32", "key=None", "stream=None"]);
    expect(r.op).toBe("normal");
    expect(r.positional.map((p) => p.name)).toEqual(["shape", "dtype", "key"]); // stream never positional…
    expect(parseSignature("synchronize", "mlx.core.synchronize", ["stream=None"]).positional.map((p) => p.name)).toEqual(["stream"]); // …unless it is the subject
    const v = parseSignature("meshgrid", "mlx.core.meshgrid", ["*arrays", "sparse=False", "indexing='xy'", "stream=None"]);
    expect([v.variadic, v.keywords.map((p) => p.name)]).toEqual(["arrays", ["sparse", "indexing", "stream"]]);
    expect(parseSignature("g", "mlx.core.g", ["a", "**kwargs"]).openKeywords).toBe(true);
    expect(camelCase("atleast_1d")).toBe("atleast1d");
    expect(camelCase("bitwise_left_shift")).toBe("bitwiseLeftShift");
  });

  test("normalizes calls: named into slots, keyword-only kept, null in a None slot counts as absent", () => {
    const spec = callSpec("cumsum")!;
    const x = mg.array([1, 2]);
    expect(normalizeCall(spec, [x])).toEqual([x]);
    expect(normalizeCall(spec, [x, { axis: 0, reverse: true }])).toEqual([x, 0, { reverse: true }]);
    expect(() => normalizeCall(spec, [x, 0, 1])).toThrow("[cumsum] takes at most 2 positional arguments (a, axis) and an options object, got 3.");
    expect(() => normalizeCall(spec, [x, { reverse: true }, 0])).toThrow("[cumsum] the options object must be the last argument.");
    const uniform = callSpec("random.uniform")!;
    const k = mg.random.key(1);
    expect(normalizeCall(uniform, [0, 1, [2], null, null, { key: k }])).toEqual([0, 1, [2], null, k, {}]);
    // A tree argument with keys that are not option names stays positional (vmap's in_axes).
    const vmap = callSpec("vmap")!;
    const f = (p: unknown) => p;
    expect(normalizeCall(vmap, [f, { w: 0, b: null }])).toEqual([f, { w: 0, b: null }]);
    expect(normalizeCall(vmap, [f, { inAxes: 1 }])).toEqual([f, 1, undefined, {}]);
  });

  test("unknown-option hints: snake_case spellings and near misses", () => {
    expect(unknownOptionError("isclose", "equal_nan", ["equalNan", "stream"]).message).toBe(
      "[isclose] unknown option 'equal_nan' (did you mean 'equalNan'?). Accepted options: 'equalNan', 'stream'.",
    );
    expect(unknownOptionError("sum", "keepdim", ["axis", "keepdims", "stream"]).message).toContain("(did you mean 'keepdims'?)");
    expect(unknownOptionError("exp", "zzz", ["stream"]).message).toBe("[exp] unknown option 'zzz'. Accepted options: 'stream'.");
  });

  test("resolveOptions (for constructors and methods written by hand)", () => {
    expect(resolveOptions("Linear", [false], { bias: true })).toEqual({ bias: false });
    expect(resolveOptions("Linear", [{ bias: false }], { bias: true })).toEqual({ bias: false });
    expect(() => resolveOptions("Linear", [{ bais: false }], { bias: true })).toThrow("[Linear] unknown option 'bais' (did you mean 'bias'?). Accepted options: 'bias'.");
    expect(() => resolveOptions("Linear", [true, { bias: false }], { bias: true })).toThrow("[Linear] 'bias' was given both positionally and in the options object");
    expect(() => resolveOptions("Linear", [true, 1], { bias: true })).toThrow("[Linear] takes at most 1 optional positional arguments (bias), got 2.");
  });

  test("the tables: metalgrad's entries name a reason; MLX's are keyed by camelCase names", () => {
    for (const [k, e] of Object.entries(METALGRAD_SIGNATURES)) expect(e.note.length, k).toBeGreaterThan(5);
    for (const [k, e] of Object.entries(MLX_SIGNATURES)) {
      const last = e.mlx.split(".").pop()!;
      if (/^[a-z]/.test(last)) expect(k.split(".").pop()).toBe(camelCase(last));
    }
    const spec: CallSpec = callSpec("variance")!;
    expect([spec.op, spec.mlx]).toEqual(["var", "mlx.core.var"]);
  });
});

describe("options by name give the same results as positional arguments (MLX's keywords)", () => {
  const x = mg.array([[1, 5, 3], [4, 2, 6]], mg.float32);
  for (const device of [mg.cpu, mg.gpu]) {
    test(`on the ${device.type}`, () => {
      const stream = device;
      expect(mg.mean(x, { keepdims: true, stream }).tolist()).toEqual([[3.5]]);
      expect(mg.sum(x, { axis: 1, stream }).tolist()).toEqual([9, 12]);
      expect(mg.max(x, { axis: 0, keepdims: true, stream }).tolist()).toEqual([[4, 5, 6]]);
      expect(mg.sort(x, { axis: 0, stream }).tolist()).toEqual([[1, 2, 3], [4, 5, 6]]);
      expect(mg.cumsum(x, { axis: 1, reverse: true, stream }).tolist()).toEqual([[9, 8, 3], [12, 8, 6]]);
      expect(mg.softmax(x, { axis: 1, stream }).tolist()).toEqual(mg.softmax(x, 1, { stream }).tolist());
      expect(mg.linspace(0, 1, { num: 3, stream }).tolist()).toEqual([0, 0.5, 1]);
      expect(mg.arange(10, { step: 4, stream }).tolist()).toEqual([0, 4, 8]); // MLX's arange(stop, step=)
      expect(mg.arange(2, 10, { step: 4, stream }).tolist()).toEqual([2, 6]);
      expect(mg.pad(mg.array([1, 2]), 1, { constantValues: 9, stream }).tolist()).toEqual([9, 1, 2, 9]);
      const n = mg.random.normal([2], { dtype: mg.float16, key: mg.random.key(0), stream });
      expect(n.dtype).toBe(mg.float16);
      expect(n.tolist()).toEqual(mg.random.normal([2], mg.float16, null, null, mg.random.key(0), { stream }).tolist());
      expect(mg.random.uniform({ shape: [3], key: mg.random.key(2), stream }).tolist()).toEqual(mg.random.uniform(0, 1, [3], null, mg.random.key(2)).tolist());
    });
  }
});

describe("resolveOptions: the hand-written form (moved from ts/utils/options.ts, nn's first helper)", () => {
  const defaults = { weights: null as number | null, axis: -1, labelSmoothing: 0, reduction: "none" };

  test("positional values, then the options object, over the defaults", () => {
    expect(resolveOptions("f", [], defaults)).toEqual(defaults);
    expect(resolveOptions("f", [null, 0], defaults)).toEqual({ ...defaults, axis: 0 });
    expect(resolveOptions("f", [{ labelSmoothing: 0.1, reduction: "mean" }], defaults)).toEqual({ ...defaults, labelSmoothing: 0.1, reduction: "mean" });
    expect(resolveOptions("f", [undefined, 1, { reduction: "sum" }], defaults)).toEqual({ ...defaults, axis: 1, reduction: "sum" });
    expect(resolveOptions("f", [{ axis: undefined }], defaults)).toEqual(defaults);
    expect(resolveOptions("f", [{ stream: 1 }], defaults, ["stream"]).stream).toBe(1);
  });

  test("errors name the function, the option and the accepted names", () => {
    expect(() => resolveOptions("cross_entropy", [{ smoothing: 0.1 }], defaults)).toThrow(
      "[cross_entropy] unknown option 'smoothing'. Accepted options: 'weights', 'axis', 'labelSmoothing', 'reduction'.",
    );
    expect(() => resolveOptions("cross_entropy", [{ label_smoothing: 0.1 }], defaults)).toThrow("unknown option 'label_smoothing' (did you mean 'labelSmoothing'?)");
    expect(() => resolveOptions("f", [null, 0, { axis: 1 }], defaults)).toThrow("[f] 'axis' was given both positionally and in the options object.");
    expect(() => resolveOptions("f", [1, 2, 3, 4, 5], defaults)).toThrow("[f] takes at most 4 optional positional arguments (weights, axis, labelSmoothing, reduction), got 5.");
    expect(() => checkOptionNames("g", { a: 1 }, [])).toThrow("[g] unknown option 'a'. Accepted options: none.");
  });
});
