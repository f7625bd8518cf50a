// mg.nn.init, as mlx.nn.init: each function returns an initializer that maps an array to a new
// array of its shape (MLX's distributions, drawn from mg.random like MLX draws from mx.random).
import { MgArray } from "../core/array.ts";
import { type Dtype, float32 } from "../core/dtype.ts";
import { fromValues } from "../core/ops/convert.ts";
import { eye, full } from "../core/ops/creation.ts";
import { astype } from "../core/ops/elementwise.ts";
import { putAlongAxis } from "../core/ops/indexing.ts";
import { sliceStatic } from "../core/ops/slicing.ts";
import { argsort } from "../core/ops/sort.ts";
import { formatShape } from "../core/shape.ts";
import { normal as randomNormal, uniform as randomUniform } from "../random/distributions.ts";
import { libraryFunction } from "../core/ownership.ts";
import { resolveOptions, type Trailing } from "../core/options.ts";

/**
 * An initializer: maps an array to a new array of its shape.
 */
export type Initializer = (a: MgArray) => MgArray;
/**
 * Which fan the He initializers scale by.
 */
export type FanMode = "fan_in" | "fan_out";

function target(a: unknown, op: string): MgArray {
  if (!(a instanceof MgArray)) throw new TypeError(`[${op}] the initializer takes an array (its shape is used).`);
  return a;
}

/**
 * Fills with `value`, as nn.init.constant(value, dtype=float32).
 * @example
 * mg.nn.init.constant(0.5)(mg.zeros([2]))
 */
export function constant(value: number, ...rest: Trailing<[dtype: Dtype], { dtype?: Dtype }>): Initializer {
  const { dtype } = resolveOptions("init.constant", rest, { dtype: float32 as Dtype });
  return libraryFunction<Initializer>((a) => full(target(a, "init.constant").shape, value, dtype));
}

/**
 * N(mean, std²) samples, as nn.init.normal(mean=0.0, std=1.0, dtype=float32).
 * @example
 * mg.nn.init.normal(0, 0.1)(mg.zeros([3])).shape
 */
export function normal(...rest: Trailing<[mean: number, std: number, dtype: Dtype], { mean?: number; std?: number; dtype?: Dtype }>): Initializer {
  const o = resolveOptions("init.normal", rest, { mean: 0.0, std: 1.0, dtype: float32 as Dtype });
  return libraryFunction<Initializer>((a) => randomNormal(target(a, "init.normal").shape, o.dtype, o.mean, o.std));
}

/**
 * U(low, high) samples, as nn.init.uniform(low=0.0, high=1.0, dtype=float32).
 * @example
 * mg.nn.init.uniform(-1, 1)(mg.zeros([3])).shape
 */
export function uniform(...rest: Trailing<[low: number, high: number, dtype: Dtype], { low?: number; high?: number; dtype?: Dtype }>): Initializer {
  const o = resolveOptions("init.uniform", rest, { low: 0.0, high: 1.0, dtype: float32 as Dtype });
  return libraryFunction<Initializer>((a) => randomUniform(o.low, o.high, target(a, "init.uniform").shape, o.dtype));
}

/**
 * The identity matrix (square 2-D arrays only), as nn.init.identity(dtype=float32).
 * @example
 * mg.nn.init.identity()(mg.zeros([2, 2]))
 */
export function identity(...rest: Trailing<[dtype: Dtype], { dtype?: Dtype }>): Initializer {
  const { dtype } = resolveOptions("init.identity", rest, { dtype: float32 as Dtype });
  return libraryFunction<Initializer>((arr) => {
    const a = target(arr, "init.identity");
    if (a.ndim !== 2 || a.shape[0] !== a.shape[1]) {
      throw new Error(`[init.identity] The input array must be a square matrix but got shape ${formatShape(a.shape)}.`);
    }
    return eye(a.shape[0]!, null, 0, dtype);
  });
}

/** fan_in = shape[-1]·receptive field, fan_out = shape[0]·receptive field (MLX's rule). */
function fans(a: MgArray, op: string): [number, number] {
  if (a.ndim < 2) {
    throw new Error(`[${op}] Glorot / He initialization requires at least 2 dimensional input but input with ${a.ndim} dimensions.`);
  }
  const receptive = a.shape.slice(1, -1).reduce((m, d) => m * d, 1);
  return [a.shape[a.ndim - 1]! * receptive, a.shape[0]! * receptive];
}

/**
 * N(0, gain²·2/(fan_in + fan_out)), as nn.init.glorot_normal(dtype=float32); the initializer takes (a, gain=1).
 * @example
 * mg.nn.init.glorotNormal()(mg.zeros([2, 3])).shape
 */
export function glorotNormal(...rest: Trailing<[dtype: Dtype], { dtype?: Dtype }>): (a: MgArray, gain?: number) => MgArray {
  const { dtype } = resolveOptions("init.glorot_normal", rest, { dtype: float32 as Dtype });
  return libraryFunction<(a: MgArray, gain?: number) => MgArray>((a, gain = 1.0) => {
    const [fanIn, fanOut] = fans(target(a, "init.glorot_normal"), "init.glorot_normal");
    return randomNormal(a.shape, dtype, null, gain * Math.sqrt(2.0 / (fanIn + fanOut)));
  });
}

/**
 * U(−l, l), l = gain·√(6/(fan_in + fan_out)), as nn.init.glorot_uniform(dtype=float32).
 * @example
 * mg.nn.init.glorotUniform()(mg.zeros([2, 3])).shape
 */
export function glorotUniform(...rest: Trailing<[dtype: Dtype], { dtype?: Dtype }>): (a: MgArray, gain?: number) => MgArray {
  const { dtype } = resolveOptions("init.glorot_uniform", rest, { dtype: float32 as Dtype });
  return libraryFunction<(a: MgArray, gain?: number) => MgArray>((a, gain = 1.0) => {
    const [fanIn, fanOut] = fans(target(a, "init.glorot_uniform"), "init.glorot_uniform");
    const limit = gain * Math.sqrt(6.0 / (fanIn + fanOut));
    return randomUniform(-limit, limit, a.shape, dtype);
  });
}

function pickFan(a: MgArray, mode: FanMode, op: string): number {
  const [fanIn, fanOut] = fans(a, op);
  if (mode === "fan_in") return fanIn;
  if (mode === "fan_out") return fanOut;
  throw new Error(`[${op}] Invalid mode: ${String(mode)}. Valid modes are: fan_in, fan_out`);
}

/**
 * N(0, gain²/fan), as nn.init.he_normal(dtype=float32); the initializer takes (a, mode="fan_in", gain=1).
 * @example
 * mg.nn.init.heNormal()(mg.zeros([2, 3])).shape
 */
export function heNormal(...rest: Trailing<[dtype: Dtype], { dtype?: Dtype }>): (a: MgArray, mode?: FanMode, gain?: number) => MgArray {
  const { dtype } = resolveOptions("init.he_normal", rest, { dtype: float32 as Dtype });
  return libraryFunction<(a: MgArray, mode?: FanMode, gain?: number) => MgArray>((a, mode = "fan_in", gain = 1.0) => {
    const fan = pickFan(target(a, "init.he_normal"), mode, "init.he_normal");
    return randomNormal(a.shape, dtype, null, gain / Math.sqrt(fan));
  });
}

/**
 * U(−l, l), l = gain·√(3/fan), as nn.init.he_uniform(dtype=float32).
 * @example
 * mg.nn.init.heUniform()(mg.zeros([2, 3])).shape
 */
export function heUniform(...rest: Trailing<[dtype: Dtype], { dtype?: Dtype }>): (a: MgArray, mode?: FanMode, gain?: number) => MgArray {
  const { dtype } = resolveOptions("init.he_uniform", rest, { dtype: float32 as Dtype });
  return libraryFunction<(a: MgArray, mode?: FanMode, gain?: number) => MgArray>((a, mode = "fan_in", gain = 1.0) => {
    const fan = pickFan(target(a, "init.he_uniform"), mode, "init.he_uniform");
    const limit = gain * Math.sqrt(3.0 / fan);
    return randomUniform(-limit, limit, a.shape, dtype);
  });
}

/**
 * N(mean, std²) with ⌈sparsity·cols⌉ random entries of each row zeroed (2-D only), as
 * nn.init.sparse(sparsity, mean=0.0, std=1.0, dtype=float32).
 * @example
 * mg.nn.init.sparse(0.5)(mg.zeros([4, 2])).shape
 */
export function sparse(
  sparsity: number,
  ...rest: Trailing<[mean: number, std: number, dtype: Dtype], { mean?: number; std?: number; dtype?: Dtype }>
): Initializer {
  const o = resolveOptions("init.sparse", rest, { mean: 0.0, std: 1.0, dtype: float32 as Dtype });
  return libraryFunction<Initializer>((arr) => {
    const a = target(arr, "init.sparse");
    if (a.ndim !== 2) throw new Error("[init.sparse] Only tensors with 2 dimensions are supported");
    const [rows, cols] = a.shape as [number, number];
    const numZeros = Math.ceil(sparsity * cols);
    const order = argsort(randomUniform(0, 1, a.shape), 1);
    const values = randomNormal(a.shape, o.dtype, o.mean, o.std);
    return putAlongAxis(values, sliceStatic(order, [0, 0], [rows, numZeros]), 0, 1);
  });
}

/**
 * A (semi-)orthogonal matrix: the Q of the QR decomposition of a square normal sample (signs
 * fixed so R's diagonal is positive, which makes Q unique), cut to the array's shape and scaled by
 * `gain`, as nn.init.orthogonal(gain=1.0, dtype=float32).
 * @example
 * mg.nn.init.orthogonal()(mg.zeros([2, 2])).shape
 */
export function orthogonal(...rest: Trailing<[gain: number, dtype: Dtype], { gain?: number; dtype?: Dtype }>): Initializer {
  const o = resolveOptions("init.orthogonal", rest, { gain: 1.0, dtype: float32 as Dtype });
  return libraryFunction<Initializer>((arr) => {
    const a = target(arr, "init.orthogonal");
    if (a.ndim !== 2) throw new Error(`[init.orthogonal] Orthogonal initialization requires a 2D array but got a ${a.ndim}D array.`);
    const [rows, cols] = a.shape as [number, number];
    const n = Math.max(rows, cols);
    const sample = randomNormal([n, n]).dataSync() as Float32Array;
    const q = orthonormalColumns(sample, n);
    const out = new Float64Array(rows * cols);
    for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[i * cols + j] = q[i * n + j]! * o.gain;
    return astype(fromValues(out, [rows, cols], float32), o.dtype);
  });
}

/**
 * Q of A = QR (A row-major n×n) with R's diagonal positive: Gram–Schmidt over the columns in
 * float64, each projection done twice (CGS2) so Q stays orthogonal to rounding.
 * (mg.linalg.qr, issue 15, gives the same sign-fixed Q once it exists.)
 */
function orthonormalColumns(a: ArrayLike<number>, n: number): Float64Array {
  const q = new Float64Array(n * n);
  const v = new Float64Array(n);
  for (let j = 0; j < n; j++) {
    for (let r = 0; r < n; r++) v[r] = a[r * n + j]!;
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < j; i++) {
        let dot = 0;
        for (let r = 0; r < n; r++) dot += q[r * n + i]! * v[r]!;
        for (let r = 0; r < n; r++) v[r]! -= dot * q[r * n + i]!;
      }
    }
    let norm = 0;
    for (let r = 0; r < n; r++) norm += v[r]! * v[r]!;
    norm = Math.sqrt(norm);
    if (norm === 0) throw new Error("[init.orthogonal] the random sample was rank deficient.");
    for (let r = 0; r < n; r++) q[r * n + j] = v[r]! / norm;
  }
  return q;
}
