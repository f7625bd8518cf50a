// metalgrad's side of the signature table (MLX's side is mlx-signatures.ts, generated): functions
// MLX does not have, and the places where metalgrad's call differs from MLX's, each with the reason.
// Same notation as MLX's table; `mlx` is MLX's qualified name, or null for metalgrad's own.
// Every public function has an entry in one of the two tables (test/core/options.test.ts).

type Entry = { readonly mlx: string | null; readonly sig: readonly string[]; readonly note: string };

const STREAM = "stream=None";
const JS_OPERATOR = "JavaScript has no operator overloading: the method spells the operator";

export const METALGRAD_SIGNATURES = {
  // --- Where metalgrad's call differs from MLX's ---------------------------------------------
  arange: {
    mlx: "mlx.core.arange",
    sig: ["start", "stop=None", "step=None", "dtype=None", "*", STREAM],
    note: "MLX's two overloads in one: arange(stop) and arange(start, stop, step), a dtype after the numbers.",
  },
  variance: {
    mlx: "mlx.core.var",
    sig: ["a", "/", "axis=None", "keepdims=False", "ddof=0", "*", STREAM],
    note: "`var` is a reserved word in JavaScript.",
  },
  array: {
    mlx: "mlx.core.array",
    sig: ["val", "dtype=None", "*", "shape=None"],
    note: "`shape` shapes a flat typed array (JavaScript has no buffer protocol).",
  },
  asarray: {
    mlx: "mlx.core.asarray",
    sig: ["a", "dtype=None", "*", "copy=None", "shape=None"],
    note: "`shape` shapes a flat typed array, as in mg.array.",
  },
  evaluate: {
    mlx: "mlx.core.eval",
    sig: ["*args"],
    note: "`eval` is also exported; `evaluate` is its name where `eval` cannot be imported.",
  },
  grad: {
    mlx: "mlx.core.grad",
    sig: ["fun", "argnums=None"],
    note: "No `argnames`: JavaScript functions take no keyword arguments.",
  },
  valueAndGrad: {
    mlx: "mlx.core.value_and_grad",
    sig: ["fun", "argnums=None"],
    note: "No `argnames`: JavaScript functions take no keyword arguments.",
  },
  compile: {
    mlx: "mlx.core.compile",
    sig: ["fun", "*", "shapeless=False"],
    note: "No implicit state (`inputs`/`outputs`): pass state as arguments.",
  },
  deviceInfo: {
    mlx: "mlx.core.device_info",
    sig: [],
    note: "No device argument: metalgrad has one GPU device (Metal, or the simulator) and describes it.",
  },
  stream: {
    mlx: "mlx.core.stream",
    sig: ["s", "fn"],
    note: "A scope over a callback (MLX's is a `with` context manager).",
  },
  customFunction: {
    mlx: "mlx.core.custom_function",
    sig: ["fun"],
    note: "A function (MLX's is a decorator class); the result's .vjp/.jvp/.vmap set the rules.",
  },
  "fast.metalKernel": {
    mlx: "mlx.core.fast.metal_kernel",
    sig: [
      "*", "name", "input_names", "output_names", "source", "header=''", "ensure_row_contiguous=True", "atomic_outputs=False",
      "compile_options=None", "math_mode='safe'", "checked=None",
    ],
    note: "One options object (MLX's callers pass every argument by keyword); `mathMode` (compileOptions' key, also top-level) and `checked` (the simulator's checked mode) are metalgrad's.",
  },

  // --- metalgrad's own functions -------------------------------------------------------------
  keep: { mlx: null, sig: ["value"], note: "Keeps arrays out of the enclosing tidy scope." },
  tidy: { mlx: null, sig: ["fn"], note: "Frees every array fn creates and does not return." },
  liveArrayCount: { mlx: null, sig: [], note: "Live arrays, for leak hunting." },
  pressureCollectionCount: { mlx: null, sig: [], note: "How often memory pressure triggered a garbage collection." },
  setFusion: { mlx: null, sig: ["enabled"], note: "Turns GPU fusion of elementwise chains on or off (MG_FUSION)." },
  setKernelCacheLimits: {
    mlx: null,
    sig: ["*", "pipelines=None", "libraries=None", "simulator_objects=None", "simulator_bytes=None"],
    note: "Bounds how many compiled kernels stay loaded (MG_KERNEL_CACHE_*, MG_SIM_LIBRARY_CACHE*).",
  },
  isComplex: { mlx: null, sig: ["dtype"], note: "Dtype predicate." },
  isFloating: { mlx: null, sig: ["dtype"], note: "Dtype predicate." },
  isInexact: { mlx: null, sig: ["dtype"], note: "Dtype predicate." },
  isInteger: { mlx: null, sig: ["dtype"], note: "Dtype predicate." },
  promoteTypes: { mlx: null, sig: ["a", "b"], note: "The promoted dtype of two dtypes (numpy's promote_types)." },
  finfo: { mlx: "mlx.core.finfo", sig: ["dtype"], note: "A function returning an Finfo (MLX's is a class)." },
  iinfo: { mlx: "mlx.core.iinfo", sig: ["dtype"], note: "A function returning an Iinfo (MLX's is a class)." },
  "random.bits": {
    mlx: null,
    sig: ["shape=[]", "width=4", "key=None", "*", STREAM],
    note: "Raw random bits (MLX's C++ random::bits).",
  },
  "fast.kernelCompileCount": { mlx: null, sig: [], note: "How many custom-kernel variants have compiled." },
  "fast.sdpaPlan": {
    mlx: null,
    sig: ["q", "k", "v", "*", "scale", "mask=None", "sinks=None", "force_fused=False", STREAM],
    note: "What scaled_dot_product_attention will run for these inputs (kernel, tiles, precision, scratch), before running it.",
  },
  getPrecision: { mlx: null, sig: [], note: "The current precision policy (matmul, accumulate16)." },
  setPrecision: { mlx: null, sig: ["policy"], note: "Sets the precision policy, returning the previous one; read at dispatch, never latched." },
  withPrecision: { mlx: null, sig: ["policy", "fn"], note: "Runs fn under a precision policy (scoped like streams, async-safe)." },
  "testing.gradcheck": {
    mlx: null,
    sig: ["fn", "inputs", "*", "eps=1e-6", "atol=None", "rtol=None", "order=1", "directions=2", "seed=0", "raise_exception=True", STREAM],
    note: "Checks vjp and jvp against float64 finite differences.",
  },
  "testing.toleranceFor": { mlx: null, sig: ["dtype"], note: "Test tolerances for a dtype." },
  "testing.accumulationTolerance": { mlx: null, sig: ["dtype", "n"], note: "Test tolerances for a sum of n terms." },

  // --- metalgrad's array methods MLX's array does not have ---------------------------------
  "MgArray.add": { mlx: "mlx.core.array.__add__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.subtract": { mlx: "mlx.core.array.__sub__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.multiply": { mlx: "mlx.core.array.__mul__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.divide": { mlx: "mlx.core.array.__truediv__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.floorDivide": { mlx: "mlx.core.array.__floordiv__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.remainder": { mlx: "mlx.core.array.__mod__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.power": { mlx: "mlx.core.array.__pow__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.matmul": { mlx: "mlx.core.array.__matmul__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.equal": { mlx: "mlx.core.array.__eq__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.notEqual": { mlx: "mlx.core.array.__ne__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.less": { mlx: "mlx.core.array.__lt__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.lessEqual": { mlx: "mlx.core.array.__le__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.greater": { mlx: "mlx.core.array.__gt__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.greaterEqual": { mlx: "mlx.core.array.__ge__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.negative": { mlx: "mlx.core.array.__neg__", sig: ["*", STREAM], note: JS_OPERATOR },
  "MgArray.bitwiseAnd": { mlx: "mlx.core.array.__and__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.bitwiseOr": { mlx: "mlx.core.array.__or__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.bitwiseXor": { mlx: "mlx.core.array.__xor__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.bitwiseInvert": { mlx: "mlx.core.array.__invert__", sig: ["*", STREAM], note: JS_OPERATOR },
  "MgArray.leftShift": { mlx: "mlx.core.array.__lshift__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.rightShift": { mlx: "mlx.core.array.__rshift__", sig: ["other", "*", STREAM], note: JS_OPERATOR },
  "MgArray.logicalNot": { mlx: null, sig: ["*", STREAM], note: "mg.logicalNot as a method." },
  "MgArray.logicalAnd": { mlx: null, sig: ["other", "*", STREAM], note: "mg.logicalAnd as a method." },
  "MgArray.logicalOr": { mlx: null, sig: ["other", "*", STREAM], note: "mg.logicalOr as a method." },
  "MgArray.maximum": { mlx: null, sig: ["other", "*", STREAM], note: "mg.maximum as a method." },
  "MgArray.minimum": { mlx: null, sig: ["other", "*", STREAM], note: "mg.minimum as a method." },
  "MgArray.variance": {
    mlx: "mlx.core.array.var",
    sig: ["axis=None", "keepdims=False", "ddof=0", "*", "correction=None", STREAM],
    note: "`var` is a reserved word in JavaScript.",
  },
  "MgArray.index": { mlx: "mlx.core.array.__getitem__", sig: ["*indices"], note: "Python's a[...] (JavaScript has no indexing operator for arrays)." },
  "MgArray.at": { mlx: "mlx.core.array.at", sig: ["*indices"], note: "Python's a.at[...]: a.at(i).add(v)." },
  "MgArray.dataSync": { mlx: null, sig: [], note: "A row-major typed-array copy of the values." },
  "MgArray.data": { mlx: null, sig: [], note: "dataSync without blocking the event loop." },
  "MgArray.tolistAsync": { mlx: null, sig: [], note: "tolist without blocking the event loop." },
} as const satisfies Record<string, Entry>;

/**
 * Functions whose optional positional parameters (or `*args`) take plain objects themselves — trees
 * such as vmap's in_axes, a metadata dict. For them a trailing plain object is the options object
 * only when every key is an option name; otherwise it is a positional value.
 */
export const TREE_ARGUMENTS: ReadonlySet<string> = new Set([
  "vmap", "saveSafetensors", "saveGguf", "utils.treeMap", "utils.treeMapWithPath", "utils.treeReduce",
]);
