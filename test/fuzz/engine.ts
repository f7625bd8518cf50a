// The differential fuzzer's engine (issue 20): random programs — op sequences over random shapes,
// dtypes, special values and layouts (transposes, slices with negative steps, broadcasts,
// reshapes) — run on the cpu and the gpu device and compared three ways:
//
//  1. each gpu step against the cpu op applied to the gpu's own inputs of that step (so rounding
//     differences never compound; the tolerance is the dtype's, ts/testing/tolerances.ts, widened
//     for accumulations by the magnitudes summed);
//  2. the gpu run that writes every step against one that writes only the final arrays (fusion
//     then keeps intermediates in registers): bit for bit;
//  3. each cpu step against the cpu op applied to contiguous copies of its inputs (the cpu's view
//     handling): bit for bit;
//  4. each native cpu step against the TypeScript reference kernels (setNativeCpu(false)) on the
//     same inputs, with the tolerance of 1.
//
// Failures are answers too: a step that fails (a singular matrix) must fail on both devices with
// the same error, and fail only what depends on it. Beyond elementwise ops, reductions, scans,
// sorts and views, the ops include scatter updates, sliceUpdate, FFTs, convolutions, quantized
// products, mg.fast's fused ops and the factorizations (cpu only: there 4 is the comparison).
// Where the devices have no single answer (an intermediate leaves float32's range on the gpu but
// not in the cpu's float64; the non-finite cases docs/corner-cases.md lists as known differences)
// a step says so (`unstable`) and skips 1 and 4.
//
// A program is plain integers (shapes, picks, parameters), so fast-check shrinks it; a failure
// prints the shrunk program as metalgrad code. test/fuzz/differential.test.ts runs a fixed seed and
// budget in CI; scripts/fuzz.ts runs larger budgets.
import fc from "fast-check";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { toleranceFor } from "../../ts/testing/tolerances.ts";
import { setNativeCpu } from "../../ts/backend/cpu/native/index.ts";

type Dtype = mg.Dtype;

// ---------------------------------------------------------------------------------------------
// Programs

export interface InputSpec {
  shape: number[];
  dtype: number;
  seed: number;
  /** How often a special value (NaN, ±inf, ±0, extremes) replaces an ordinary one: 0 never … 3 often. */
  special: number;
}
export interface Step {
  op: number;
  picks: number[];
  params: number[];
}
export interface Program {
  inputs: InputSpec[];
  steps: Step[];
}

export const DTYPES: Dtype[] = [
  mg.float32, mg.float32, mg.float32, mg.float16, mg.bfloat16, mg.int32, mg.int32, mg.int8, mg.uint8, mg.int16, mg.uint16,
  mg.uint32, mg.int64, mg.uint64, mg.bool_,
];

export interface ProgramSizes {
  maxInputs: number;
  maxSteps: number;
  maxRank: number;
  maxDim: number;
}
export const CI_SIZES: ProgramSizes = { maxInputs: 3, maxSteps: 6, maxRank: 3, maxDim: 5 };

/** The OPS indices of the named families (all when `families` is absent). */
export function opIndices(families?: readonly string[]): number[] {
  const all = OPS.map((_, i) => i);
  if (!families) return all;
  const picked = all.filter((i) => families.includes(OPS[i]!.name));
  if (picked.length === 0) throw new Error(`[fuzz] no op family among ${families.join(", ")}`);
  return picked;
}

/** The op families with native cpu kernels beyond elementwise ones (a CI test fuzzes them alone). */
export const NATIVE_FAMILIES = ["scatter", "sliceUpdate", "fft", "conv", "quantized", "fast", "linalg", "sort", "softmax", "matmul", "scan"] as const;

export function programArbitrary(sizes: ProgramSizes = CI_SIZES, families?: readonly string[]): fc.Arbitrary<Program> {
  const ops = opIndices(families);
  const dim = fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 12, arbitrary: fc.integer({ min: 1, max: sizes.maxDim }) });
  const input = fc.record({
    shape: fc.array(dim, { minLength: 0, maxLength: sizes.maxRank }),
    dtype: fc.nat({ max: DTYPES.length - 1 }),
    seed: fc.nat({ max: 2 ** 31 - 1 }),
    special: fc.nat({ max: 3 }),
  });
  const step = fc.record({
    op: fc.constantFrom(...ops),
    picks: fc.array(fc.nat({ max: 63 }), { minLength: 3, maxLength: 3 }),
    params: fc.array(fc.nat({ max: 1023 }), { minLength: 6, maxLength: 6 }),
  });
  return fc.record({
    inputs: fc.array(input, { minLength: 1, maxLength: sizes.maxInputs }),
    steps: fc.array(step, { minLength: 1, maxLength: sizes.maxSteps }),
  });
}

// ---------------------------------------------------------------------------------------------
// Input values

const FLOAT_SPECIALS = [NaN, Infinity, -Infinity, 0, -0, 3.4e38, -3.4e38, 1e-40, 1, -1];
const HALF_SPECIALS = [NaN, Infinity, -Infinity, 0, -0, 65504, -65504, 6e-8, 1, -1];
const INT_EXTREMES: Record<string, [bigint, bigint]> = {
  int8: [-128n, 127n], uint8: [0n, 255n], int16: [-32768n, 32767n], uint16: [0n, 65535n],
  int32: [-(2n ** 31n), 2n ** 31n - 1n], uint32: [0n, 2n ** 32n - 1n], int64: [-(2n ** 63n), 2n ** 63n - 1n], uint64: [0n, 2n ** 64n - 1n],
};

function lcg(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** The leaf values of an input (numbers, bigints for 64-bit ints, booleans). */
export function inputValues(spec: InputSpec): (number | bigint | boolean)[] {
  const dtype = DTYPES[spec.dtype]!;
  const n = spec.shape.reduce((x, y) => x * y, 1);
  const rand = lcg(spec.seed);
  const specialRate = [0, 0.05, 0.2, 0.5][spec.special]!;
  const out: (number | bigint | boolean)[] = [];
  for (let i = 0; i < n; i++) {
    const special = rand() < specialRate;
    const r = rand();
    if (dtype === mg.bool_) out.push(r < 0.5);
    else if (dtype.kind === "f" || dtype === mg.bfloat16) {
      const specials = dtype === mg.float16 ? HALF_SPECIALS : FLOAT_SPECIALS;
      // quarters in [-8, 8): exact in every float dtype
      out.push(special ? specials[Math.floor(r * specials.length)]! : Math.round((r * 16 - 8) * 4) / 4);
    } else {
      const [lo, hi] = INT_EXTREMES[dtype.name]!;
      let v: bigint;
      if (special) v = [lo, hi, lo + 1n, hi - 1n, 0n, 31n, 32n, 63n, 64n][Math.floor(r * 9)]!;
      else v = BigInt(Math.floor(r * 41) - 20);
      if (v < lo) v = lo + (v - lo) * -1n; // unsigned: small positives
      if (v > hi) v = hi;
      out.push(dtype.size === 8 ? v : Number(v));
    }
  }
  return out;
}

function makeInput(spec: InputSpec): MgArray {
  const dtype = DTYPES[spec.dtype]!;
  return mg.reshape(mg.array(inputValues(spec) as number[], dtype), spec.shape);
}

function literal(v: number | bigint | boolean): string {
  if (typeof v === "bigint") return `${v}n`;
  if (typeof v === "boolean") return String(v);
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "-Infinity";
  if (Object.is(v, -0)) return "-0";
  return String(v);
}

function inputCode(spec: InputSpec, name: string): string {
  const dtype = DTYPES[spec.dtype]!;
  return `const ${name} = mg.reshape(mg.array([${inputValues(spec).map(literal).join(", ")}], mg.${dtype === mg.bool_ ? "bool_" : dtype.name}), [${spec.shape.join(", ")}]);`;
}

// ---------------------------------------------------------------------------------------------
// Ops

/** How a step's gpu result is compared with the cpu's. */
export type Kind =
  | { kind: "elementwise" }
  | { kind: "exact" }
  /**
   * sums: tolerance grows with n and the magnitude reference (the op on |finite inputs| in float64);
   * `partial` (default 1) scales the magnitude to the largest partial sum (a mean's is n times it)
   */
  | { kind: "sum"; n: number; magnitude: (xs: MgArray[]) => MgArray; partial?: number; termError?: number }
  /** products: relative tolerance grows with n; elements whose partial products may over/underflow are skipped */
  | { kind: "product"; n: number; magnitude: (xs: MgArray[]) => [MgArray, MgArray] }
  | { kind: "normalized"; n: number };

interface Planned {
  fn: (xs: MgArray[]) => MgArray;
  code: (names: string[]) => string;
  kind: Kind;
  /**
   * Inputs (on the cpu) for which the devices have no one answer to compare: an intermediate
   * leaves float32's range where the cpu's float64 arithmetic does not (|x|² of a norm, q·k of
   * attention), as docs/corner-cases.md says. Such steps skip the tolerance comparisons only.
   */
  unstable?: (xs: MgArray[]) => boolean;
}

interface Meta {
  shape: number[];
  dtype: Dtype;
}

interface OpDef {
  name: string;
  arity: number;
  plan: (ins: Meta[], p: number[]) => Planned | null;
}

const isFloat = (d: Dtype) => d.kind === "f" || d === mg.bfloat16;
const isInt = (d: Dtype) => d.kind === "i" || d.kind === "u";
const dtName = (d: Dtype) => `mg.${d === mg.bool_ ? "bool_" : d.name}`;
const size = (s: readonly number[]) => s.reduce((x, y) => x * y, 1);
const js = (v: unknown) => JSON.stringify(v);

/** |x| where finite, else 0, in float64 on the cpu: the magnitudes a sum adds. */
function finiteAbs64(x: MgArray): MgArray {
  const f = mg.astype(x, mg.float64);
  return mg.where(mg.isfinite(f), mg.abs(f), 0);
}

const UNARY_FLOAT = ["abs", "negative", "sign", "square", "sqrt", "rsqrt", "exp", "expm1", "log", "log2", "log10", "log1p",
  "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "floor",
  "ceil", "round", "sigmoid", "erf", "erfinv", "reciprocal", "isnan", "isinf", "isfinite", "logicalNot"] as const;
const UNARY_INT = ["abs", "negative", "sign", "square", "bitwiseInvert", "logicalNot"] as const;
const BINARY = ["add", "subtract", "multiply", "divide", "floorDivide", "remainder", "power", "maximum", "minimum",
  "logaddexp", "arctan2", "equal", "notEqual", "greater", "greaterEqual", "less", "lessEqual", "logicalAnd", "logicalOr",
  "bitwiseAnd", "bitwiseOr", "bitwiseXor", "leftShift", "rightShift"] as const;
const SCALARS = [0, 1, -1, 2, 0.5, -2.5, NaN, Infinity, -Infinity, -0, 3, 31, 32, 64, 1e30];

type Fn = (...a: unknown[]) => MgArray;
const op = (name: string): Fn => (mg as unknown as Record<string, Fn>)[name]!;

function unaryOp(names: readonly string[], accepts: (d: Dtype) => boolean): OpDef {
  return {
    name: `unary(${names.length})`,
    arity: 1,
    plan: ([a], p) => {
      if (!accepts(a!.dtype)) return null;
      const name = names[p[0]! % names.length]!;
      return { fn: ([x]) => op(name)(x), code: ([x]) => `mg.${name}(${x})`, kind: { kind: "elementwise" } };
    },
  };
}

/** Axis parameter: one axis of `ndim`, maybe negative. */
const axisOf = (ndim: number, p: number) => (ndim === 0 ? 0 : (p % ndim) - (p % 2 === 0 ? 0 : ndim));

function reduction(names: readonly string[]): OpDef {
  return {
    name: "reduce",
    arity: 1,
    plan: ([a], p) => {
      const name = names[p[0]! % names.length]!;
      const keep = p[2]! % 2 === 1;
      const whole = a!.shape.length === 0 || p[1]! % 4 === 0;
      const ax = whole ? undefined : axisOf(a!.shape.length, p[1]!);
      const n = whole ? size(a!.shape) : a!.shape[(ax! + a!.shape.length) % a!.shape.length]!;
      if ((name === "max" || name === "min") && n === 0) return null; // an error on both devices, tested elsewhere
      const fn = ([x]: MgArray[]) => op(name)(x, ax, keep);
      const code = ([x]: string[]) => `mg.${name}(${x}, ${js(ax)}, ${keep})`;
      if ((name === "sum" || name === "mean") && isFloat(a!.dtype)) {
        return { fn, code, kind: { kind: "sum", n, magnitude: ([x]) => op(name)(finiteAbs64(x!), ax, keep), partial: name === "mean" ? n : 1 } };
      }
      if (name === "prod" && isFloat(a!.dtype)) {
        return {
          fn, code,
          kind: { kind: "product", n, magnitude: ([x]) => {
            const m = finiteAbs64(x!);
            return [mg.prod(mg.maximum(m, 1), ax, keep), mg.prod(mg.where(mg.equal(m, 0), 1, mg.minimum(m, 1)), ax, keep)];
          } },
        };
      }
      return { fn, code, kind: { kind: "exact" } };
    },
  };
}

function scan(): OpDef {
  const names = ["cumsum", "cumprod", "cummax", "cummin"];
  return {
    name: "scan",
    arity: 1,
    plan: ([a], p) => {
      if (a!.shape.length === 0) return null;
      const name = names[p[0]! % names.length]!;
      const ax = axisOf(a!.shape.length, p[1]!);
      const reverse = p[2]! % 2 === 1;
      const inclusive = p[3]! % 3 !== 0;
      const o = name === "cumsum" || name === "cumprod" ? { reverse, inclusive } : { reverse };
      const fn = ([x]: MgArray[]) => op(name)(x, ax, o);
      const code = ([x]: string[]) => `mg.${name}(${x}, ${ax}, ${js(o)})`;
      const n = a!.shape[(ax + a!.shape.length) % a!.shape.length]!;
      if (name === "cumsum" && isFloat(a!.dtype)) return { fn, code, kind: { kind: "sum", n, magnitude: ([x]) => op(name)(finiteAbs64(x!), ax, o) } };
      if (name === "cumprod" && isFloat(a!.dtype)) {
        return {
          fn, code,
          kind: { kind: "product", n, magnitude: ([x]) => {
            const m = finiteAbs64(x!);
            return [mg.cumprod(mg.maximum(m, 1), ax, o), mg.cumprod(mg.where(mg.equal(m, 0), 1, mg.minimum(m, 1)), ax, o)];
          } },
        };
      }
      return { fn, code, kind: { kind: "exact" } };
    },
  };
}

/**
 * `x`'s values repeated cyclically into `shape` as `dtype` (x must not be empty): how the ops that need
 * particular shapes (convolution weights, packed quantization groups, attention heads) take an input.
 */
function cyclic(x: MgArray, shape: number[], dtype: Dtype): MgArray {
  const n = size(shape);
  return mg.reshape(mg.astype(mg.take(mg.flatten(x), mg.remainder(mg.arange(n), size(x.shape))), dtype), shape);
}
function cyclicCode(x: string, shape: number[], dtype: Dtype): string {
  return `mg.reshape(mg.astype(mg.take(mg.flatten(${x}), mg.remainder(mg.arange(${size(shape)}), ${x}.size)), ${dtName(dtype)}), ${js(shape)})`;
}

// Elementwise ops appear several times: that is where most corner semantics live.
export const OPS: OpDef[] = [
  unaryOp(UNARY_FLOAT, (d) => isFloat(d) || d === mg.int32),
  unaryOp(UNARY_FLOAT, isFloat),
  unaryOp(UNARY_FLOAT, isFloat),
  unaryOp(UNARY_INT, (d) => isInt(d) || d === mg.bool_),
  unaryOp(UNARY_INT, (d) => isInt(d) || d === mg.bool_),
  // binary with a second array that broadcasts, or a weak JS scalar
  ...[0, 1, 2, 3].map((): OpDef => ({
    name: "binary",
    arity: 2,
    plan: ([a, b], p) => {
      const name = BINARY[p[0]! % BINARY.length]!;
      if (p[1]! % 4 === 0) {
        const s = SCALARS[p[2]! % SCALARS.length]!;
        const left = p[3]! % 2 === 0;
        return {
          fn: ([x]) => (left ? op(name)(s, x) : op(name)(x, s)),
          code: ([x]) => (left ? `mg.${name}(${literal(s)}, ${x})` : `mg.${name}(${x}, ${literal(s)})`),
          kind: { kind: "elementwise" },
        };
      }
      try {
        mg.broadcastShapes(a!.shape, b!.shape);
      } catch {
        return null;
      }
      return { fn: ([x, y]) => op(name)(x, y), code: ([x, y]) => `mg.${name}(${x}, ${y})`, kind: { kind: "elementwise" } };
    },
  })),
  {
    name: "astype",
    arity: 1,
    plan: (_ins, p) => {
      const to = DTYPES[p[0]! % DTYPES.length]!;
      return { fn: ([x]) => mg.astype(x!, to), code: ([x]) => `mg.astype(${x}, ${dtName(to)})`, kind: { kind: "elementwise" } };
    },
  },
  {
    name: "where",
    arity: 3,
    plan: ([c, a, b]) => {
      try {
        mg.broadcastShapes(c!.shape, a!.shape, b!.shape);
      } catch {
        return null;
      }
      return {
        fn: ([x, y, z]) => mg.where(mg.astype(x!, mg.bool_), y!, z!),
        code: ([x, y, z]) => `mg.where(mg.astype(${x}, mg.bool_), ${y}, ${z})`,
        kind: { kind: "elementwise" },
      };
    },
  },
  // views
  {
    name: "transpose",
    arity: 1,
    plan: ([a], p) => {
      const perm = a!.shape.map((_, i) => i);
      for (let i = perm.length - 1; i > 0; i--) {
        const j = p[i % p.length]! % (i + 1);
        [perm[i], perm[j]] = [perm[j]!, perm[i]!];
      }
      return { fn: ([x]) => mg.transpose(x!, perm), code: ([x]) => `mg.transpose(${x}, ${js(perm)})`, kind: { kind: "exact" } };
    },
  },
  {
    name: "slice",
    arity: 1,
    plan: ([a], p) => {
      if (a!.shape.length === 0) return null;
      const specs = a!.shape.map((d, i) => {
        const q = p[i % p.length]! + i * 7;
        const step = [1, 1, 2, -1, -2, 3][q % 6]!;
        const lo = q % (d + 1);
        const hi = (q >> 3) % (d + 1);
        if (step > 0) return { start: Math.min(lo, hi), stop: Math.max(lo, hi), step };
        // backwards from max - 1 down to min (to the front when min is 0)
        const from = Math.max(lo, hi) - 1;
        const to = Math.min(lo, hi) - 1;
        return { start: from < 0 ? null : from, stop: to < 0 ? null : to, step };
      });
      return {
        fn: ([x]) => x!.index(...specs),
        code: ([x]) => `${x}.index(${specs.map((s) => js(s)).join(", ")})`,
        kind: { kind: "exact" },
      };
    },
  },
  {
    name: "broadcast",
    arity: 1,
    plan: ([a], p) => {
      // grow size-1 axes and prepend one axis
      const shape = a!.shape.map((d, i) => (d === 1 ? 1 + (p[i % p.length]! % 3) : d));
      if (p[5]! % 2 === 0) shape.unshift(1 + (p[4]! % 3));
      return { fn: ([x]) => mg.broadcastTo(x!, shape), code: ([x]) => `mg.broadcastTo(${x}, ${js(shape)})`, kind: { kind: "exact" } };
    },
  },
  {
    name: "reshape",
    arity: 1,
    plan: ([a], p) => {
      const n = size(a!.shape);
      let shape: number[];
      if (p[0]! % 3 === 0) shape = [n];
      else {
        const divisors = Array.from({ length: n }, (_, i) => i + 1).filter((k) => n % k === 0);
        const k = n === 0 ? 0 : divisors[p[1]! % divisors.length]!;
        shape = n === 0 ? [0, 1 + (p[1]! % 3)] : [k, n / k];
        if (p[2]! % 2 === 0) shape = [...shape, 1];
      }
      return { fn: ([x]) => mg.reshape(x!, shape), code: ([x]) => `mg.reshape(${x}, ${js(shape)})`, kind: { kind: "exact" } };
    },
  },
  {
    name: "expand_squeeze",
    arity: 1,
    plan: ([a], p) => {
      if (p[0]! % 2 === 0 && a!.shape.includes(1)) {
        return { fn: ([x]) => mg.squeeze(x!), code: ([x]) => `mg.squeeze(${x})`, kind: { kind: "exact" } };
      }
      const ax = p[1]! % (a!.shape.length + 1);
      return { fn: ([x]) => mg.expandDims(x!, ax), code: ([x]) => `mg.expandDims(${x}, ${ax})`, kind: { kind: "exact" } };
    },
  },
  reduction(["sum", "prod", "max", "min", "mean", "argmax", "argmin", "all", "any"]),
  scan(),
  {
    name: "sort",
    arity: 1,
    plan: ([a], p) => {
      if (a!.shape.length === 0) return null;
      const ax = axisOf(a!.shape.length, p[1]!);
      const name = p[0]! % 2 === 0 ? "sort" : "argsort";
      return { fn: ([x]) => op(name)(x, ax), code: ([x]) => `mg.${name}(${x}, ${ax})`, kind: { kind: "exact" } };
    },
  },
  {
    name: "softmax",
    arity: 1,
    plan: ([a], p) => {
      if (a!.shape.length === 0 || !isFloat(a!.dtype)) return null;
      const ax = axisOf(a!.shape.length, p[1]!);
      const n = a!.shape[(ax + a!.shape.length) % a!.shape.length]!;
      if (p[0]! % 2 === 0) return { fn: ([x]) => mg.softmax(x!, ax), code: ([x]) => `mg.softmax(${x}, ${ax})`, kind: { kind: "normalized", n } };
      return { fn: ([x]) => mg.logsumexp(x!, ax), code: ([x]) => `mg.logsumexp(${x}, ${ax})`, kind: { kind: "normalized", n } };
    },
  },
  {
    name: "matmul",
    arity: 2,
    plan: ([a, b]) => {
      if (a!.shape.length !== 2 || !isFloat(a!.dtype) || a!.shape[1]! === 0) return null;
      // b's first k elements as a (k, m) matrix, whatever b is
      const [, k] = a!.shape as [number, number];
      const m = Math.floor(size(b!.shape) / k);
      if (m === 0) return null;
      return {
        fn: ([x, y]) => mg.matmul(x!, mg.reshape(mg.astype(mg.flatten(y!).index({ stop: k * m }), a!.dtype), [k, m])),
        code: ([x, y]) => `mg.matmul(${x}, mg.reshape(mg.astype(mg.flatten(${y}).index({ stop: ${k * m} }), ${dtName(a!.dtype)}), [${k}, ${m}]))`,
        kind: {
          kind: "sum", n: k,
          magnitude: ([x, y]) => mg.matmul(finiteAbs64(x!), mg.reshape(finiteAbs64(mg.astype(mg.flatten(y!).index({ stop: k * m }), a!.dtype)), [k, m])),
        },
      };
    },
  },
  {
    name: "concatenate",
    arity: 2,
    plan: ([a, b], p) => {
      if (a!.shape.length === 0 || a!.shape.length !== b!.shape.length) return null;
      const ax = p[0]! % a!.shape.length;
      if (!a!.shape.every((d, i) => i === ax || d === b!.shape[i])) return null;
      return { fn: ([x, y]) => mg.concatenate([x!, y!], ax), code: ([x, y]) => `mg.concatenate([${x}, ${y}], ${ax})`, kind: { kind: "exact" } };
    },
  },
  {
    name: "take",
    arity: 1,
    plan: ([a], p) => {
      if (a!.shape.length === 0) return null;
      const ax = p[0]! % a!.shape.length;
      const d = a!.shape[ax]!;
      if (d === 0) return null;
      const idx = [p[1]!, p[2]!, p[3]!].slice(0, 1 + (p[4]! % 3)).map((v) => (v % (2 * d)) - d); // in [-d, d)
      return {
        fn: ([x]) => mg.take(x!, mg.array(idx), ax),
        code: ([x]) => `mg.take(${x}, mg.array(${js(idx)}), ${ax})`,
        kind: { kind: "exact" },
      };
    },
  },
  // ---- kernels with native CPU implementations beyond elementwise (issue 16's second wave) ----
  {
    name: "scatter",
    arity: 2,
    plan: ([a, b], p) => {
      // x.at(idx).op(updates): repeated indices combine in update order (add/multiply/maximum/minimum)
      if (a!.shape.length === 0 || a!.shape[0] === 0 || size(b!.shape) === 0) return null;
      const d = a!.shape[0]!;
      const idx = [p[1]!, p[2]!, p[3]!, p[4]!].slice(0, 1 + (p[5]! % 4)).map((v) => (v % (2 * d)) - d);
      const method = ["add", "subtract", "multiply", "maximum", "minimum"][p[0]! % 5]!;
      const ushape = [idx.length, ...a!.shape.slice(1)];
      type At = Record<string, (v: MgArray) => MgArray>;
      const fn = ([x, y]: MgArray[]) => (x!.at(mg.array(idx)) as unknown as At)[method]!(cyclic(y!, ushape, a!.dtype));
      const code = ([x, y]: string[]) => `${x}.at(mg.array(${js(idx)})).${method}(${cyclicCode(y!, ushape, a!.dtype)})`;
      const repeats = idx.length - new Set(idx.map((i) => (i + d) % d)).size;
      if (!isFloat(a!.dtype) || repeats === 0 || method === "maximum" || method === "minimum") return { fn, code, kind: { kind: "exact" } };
      if (method === "multiply") return { fn, code, kind: { kind: "normalized", n: idx.length + 1 } };
      // repeated float additions: the order of a device's combining may differ
      return {
        fn, code,
        kind: { kind: "sum", n: idx.length + 1, magnitude: ([x, y]) => finiteAbs64(x!).at(mg.array(idx)).add(finiteAbs64(cyclic(y!, ushape, a!.dtype))) },
      };
    },
  },
  {
    name: "sliceUpdate",
    arity: 2,
    plan: ([a, b], p) => {
      if (a!.shape.length === 0 || size(b!.shape) === 0) return null;
      const ax = p[0]! % a!.shape.length;
      const d = a!.shape[ax]!;
      const len = d === 0 ? 0 : p[1]! % (d + 1);
      const start = d - len === 0 ? 0 : p[2]! % (d - len + 1);
      const ushape = a!.shape.map((s, i) => (i === ax ? len : s));
      if (size(ushape) === 0) return null;
      return {
        fn: ([x, y]) => mg.sliceUpdate(x!, cyclic(y!, ushape, a!.dtype), mg.array([start]), [ax]),
        code: ([x, y]) => `mg.sliceUpdate(${x}, ${cyclicCode(y!, ushape, a!.dtype)}, mg.array([${start}]), [${ax}])`,
        kind: { kind: "exact" },
      };
    },
  },
  {
    name: "fft",
    arity: 1,
    plan: ([a], p) => {
      if (a!.shape.length === 0 || !(isFloat(a!.dtype) || a!.dtype === mg.int32) || size(a!.shape) === 0) return null;
      const ax = axisOf(a!.shape.length, p[1]!);
      const d = a!.shape[(ax + a!.shape.length) % a!.shape.length]!;
      const n = Math.max(1, d + (p[2]! % 4) - 1); // truncated, as is, or zero-padded
      const variant = ["fft", "ifft", "rfft", "irfft"][p[0]! % 4]!;
      const part = p[3]! % 2 === 0 ? "real" : "imag";
      if (variant === "irfft" && part === "imag") return null; // irfft is real
      const call = (x: string) => `mg.fft.${variant}(${x}, ${n}, ${ax})`;
      type Fft = Record<string, (x: MgArray, n: number, axis: number) => MgArray>;
      const transform = (x: MgArray) => (mg.fft as unknown as Fft)[variant]!(x, n, ax);
      return {
        fn: ([x]) => (variant === "irfft" ? transform(x!) : (op(part)(transform(x!)))),
        code: ([x]) => (variant === "irfft" ? call(x!) : `mg.${part}(${call(x!)})`),
        // every output is a sum over the line: its magnitude is the line's sum of |x| (irfft: twice, its bins count twice)
        kind: { kind: "sum", n, magnitude: ([x]) => mg.multiply(mg.sum(finiteAbs64(x!), ax, true), variant === "irfft" ? 2 : 1) },
        // a NaN's or an infinity's products with twiddles: which parts of the line turn non-finite depends on
        // the algorithm (docs/corner-cases.md, "Known differences")
        unstable: ([x]) => !(mg.all(mg.isfinite(x!)).item() as boolean),
      };
    },
  },
  {
    name: "conv",
    arity: 2,
    plan: ([a, b], p) => {
      // the image is a's own values when a has rank 3 or 4, else a's values repeated into a small one
      if (size(a!.shape) === 0 || size(b!.shape) === 0) return null;
      const dt = isFloat(a!.dtype) ? a!.dtype : mg.float32;
      const own = (a!.shape.length === 3 || a!.shape.length === 4) && isFloat(a!.dtype);
      const xshape = own ? a!.shape : [1 + (p[0]! % 2), ...(p[3]! % 2 === 0 ? [2 + (p[1]! % 5)] : [1 + (p[1]! % 4), 1 + (p[2]! % 4)]), 1 + (p[4]! % 3)];
      const image = (x: MgArray) => (own ? x : cyclic(x, xshape, dt));
      const imageCode = (x: string) => (own ? x : cyclicCode(x, xshape, dt));
      const rank = xshape.length;
      const c = xshape[rank - 1]!;
      const spatial = xshape.slice(1, rank - 1);
      const stride = 1 + (p[1]! % 2);
      const padding = p[2]! % 2;
      const dilation = 1 + (p[3]! % 2);
      const depthwise = p[4]! % 4 === 0;
      const groups = depthwise ? c : 1;
      const o = depthwise ? c : 1 + (p[0]! % 3);
      const k = spatial.map((s, i) => 1 + ((p[5]! >> (2 * i)) % Math.min(3, s + 2 * padding)));
      if (k.some((kk, i) => (kk - 1) * dilation + 1 > spatial[i]! + 2 * padding)) return null;
      const wshape = [o, ...k, depthwise ? 1 : c];
      const name = rank === 3 ? "conv1d" : "conv2d";
      const conv = (x: MgArray, w: MgArray) => op(name)(x, w, stride, padding, dilation, groups);
      return {
        fn: ([x, y]) => conv(image(x!), cyclic(y!, wshape, dt)),
        code: ([x, y]) => `mg.${name}(${imageCode(x!)}, ${cyclicCode(y!, wshape, dt)}, ${stride}, ${padding}, ${dilation}, ${groups})`,
        kind: { kind: "sum", n: size(k) * (depthwise ? 1 : c), magnitude: ([x, y]) => conv(finiteAbs64(image(x!)), finiteAbs64(cyclic(y!, wshape, dt))) },
      };
    },
  },
  {
    name: "quantized",
    arity: 2,
    plan: ([a, b], p) => {
      // weights and activations built cyclically from the inputs' values (the packed formats need 32+ columns)
      if (size(a!.shape) === 0 || size(b!.shape) === 0) return null;
      const dtype = [mg.float32, mg.float16, mg.bfloat16][p[0]! % 3]!;
      const bits = [2, 3, 4, 5, 6, 8][p[1]! % 6]!;
      const group = p[2]! % 2 === 0 ? 32 : 64;
      const rows = 1 + (p[3]! % 3);
      const m = 1 + (p[4]! % 3);
      const variant = p[5]! % 5; // 0-2: quantize's outputs, 3: dequantize, 4: quantized_matmul
      const wshape = [rows, group];
      const quant = (y: MgArray) => mg.quantize(cyclic(y, wshape, dtype), group, bits);
      const qcode = (y: string) => `mg.quantize(${cyclicCode(y, wshape, dtype)}, ${group}, ${bits})`;
      if (variant < 3) return { fn: ([, y]) => quant(y!)[variant]!, code: ([, y]) => `${qcode(y!)}[${variant}]`, kind: variant === 0 ? { kind: "exact" } : { kind: "elementwise" } };
      const deq = (y: MgArray) => {
        const [w, s, z] = quant(y);
        return mg.dequantize(w!, s!, z!, group, bits);
      };
      if (variant === 3) {
        return {
          fn: ([, y]) => deq(y!),
          code: ([, y]) => `((q) => mg.dequantize(q[0], q[1], q[2], ${group}, ${bits}))(${qcode(y!)})`,
          kind: { kind: "elementwise" },
        };
      }
      const xshape = [m, group];
      return {
        fn: ([x, y]) => {
          const [w, s, z] = quant(y!);
          return mg.quantizedMatmul(cyclic(x!, xshape, dtype), w!, s!, z!, true, group, bits);
        },
        code: ([x, y]) => `((q) => mg.quantizedMatmul(${cyclicCode(x!, xshape, dtype)}, q[0], q[1], q[2], true, ${group}, ${bits}))(${qcode(y!)})`,
        // the gpu sums scale·Σx·q + bias·Σx (as MLX's Metal kernels): the magnitudes are |x|·(|scale|·q + |bias|)
        kind: {
          kind: "sum", n: group,
          // the cpu dequantizes into the input's type first (each weight rounded there, as MLX's cpu)
          termError: dtype === mg.float32 ? 0 : 2 * (dtype === mg.float16 ? 2 ** -11 : 2 ** -8),
          magnitude: ([x, y]) => {
            const [w, sc, z] = quant(y!);
            const bound = mg.dequantize(w!, mg.abs(mg.astype(sc!, mg.float32)), mg.abs(mg.astype(z!, mg.float32)), group, bits, { dtype: mg.float32 });
            return mg.matmul(finiteAbs64(cyclic(x!, xshape, dtype)), mg.transpose(finiteAbs64(bound)));
          },
        },
        // an infinite activation times a zero scale: NaN in that factored sum, ±inf in a dequantized product
        unstable: ([x]) => mg.any(mg.isinf(cyclic(x!, xshape, dtype))).item() as boolean,
      };
    },
  },
  {
    name: "fast",
    arity: 2,
    plan: ([a, b], p) => {
      const r = a!.shape.length;
      if (r === 0 || size(a!.shape) === 0 || size(b!.shape) === 0) return null;
      const dd = a!.shape[r - 1]!;
      const eps = [1e-5, 0, 1e-2][p[1]! % 3]!;
      const variant = p[0]! % 5;
      if (variant < 4 && !isFloat(a!.dtype)) return null; // the fused ops take floats (attention casts below)
      const dt = isFloat(a!.dtype) ? a!.dtype : mg.float32;
      // a row's Σx² (of x − mean for layerNorm) beyond float32's range, or below its normal range with eps 0
      const squares = (x: MgArray, centred: boolean): MgArray => {
        const f = mg.astype(x, mg.float64);
        return mg.sum(mg.square(centred ? mg.subtract(f, mg.mean(f, -1, true)) : f), -1);
      };
      const outOfRange = (x: MgArray, centred: boolean) => {
        const q = squares(x, centred);
        const big = mg.any(mg.greaterEqual(q, 2 ** 126)).item() as boolean;
        return big || (eps === 0 && (mg.any(mg.logicalAnd(mg.greater(q, 0), mg.less(q, 2 ** -100))).item() as boolean));
      };
      // |ŷ| ≤ √n, so an output's magnitude is at most |w|·√n + |b|: ŷ's rounding (float32 on the gpu,
      // float64 on the cpu) scaled by a large weight is what survives a cancelling bias
      // (layerNorm: the mean's rounding, u·max|x|, is divided by σ = √(var + eps), which may be tiny)
      const normKind = (w: ((y: MgArray) => MgArray) | null, b: ((y: MgArray) => MgArray) | null, layer: boolean): Kind => ({
        kind: "sum", n: dd,
        magnitude: ([x, y]) => {
          const x64 = mg.astype(x!, mg.float64);
          const spread = layer
            ? mg.add(mg.divide(mg.max(finiteAbs64(x!), -1, true), mg.sqrt(mg.add(mg.variance(x64, -1, true), eps))), Math.sqrt(dd))
            : mg.array(Math.sqrt(dd), mg.float64);
          const scaled = w ? mg.multiply(finiteAbs64(w(y!)), spread) : spread;
          return mg.broadcastTo(b ? mg.add(scaled, finiteAbs64(b(y!))) : scaled, x!.shape);
        },
      });
      const weightOf = (y: MgArray) => cyclic(y, [dd], dt);
      const biasOf = (y: MgArray) => cyclic(mg.negative(y), [dd], dt);
      if (variant === 0) {
        const weighted = p[2]! % 2 === 0;
        return {
          fn: ([x, y]) => mg.fast.rmsNorm(x!, weighted ? cyclic(y!, [dd], dt) : null, eps),
          code: ([x, y]) => `mg.fast.rmsNorm(${x}, ${weighted ? cyclicCode(y!, [dd], dt) : "null"}, ${eps})`,
          kind: normKind(weighted ? weightOf : null, null, false),
          unstable: ([x]) => outOfRange(x!, false),
        };
      }
      if (variant === 1) {
        const weighted = p[2]! % 2 === 0;
        const biased = p[3]! % 2 === 0;
        return {
          fn: ([x, y]) => mg.fast.layerNorm(x!, weighted ? cyclic(y!, [dd], dt) : null, biased ? cyclic(mg.negative(y!), [dd], dt) : null, eps),
          code: ([x, y]) =>
            `mg.fast.layerNorm(${x}, ${weighted ? cyclicCode(y!, [dd], dt) : "null"}, ${biased ? cyclicCode(`mg.negative(${y})`, [dd], dt) : "null"}, ${eps})`,
          kind: normKind(weighted ? weightOf : null, biased ? biasOf : null, true),
          unstable: ([x]) => outOfRange(x!, true),
        };
      }
      if (variant === 2) {
        if (r < 2 || dd < 2) return null;
        const dims = 2 * (1 + (p[2]! % Math.floor(dd / 2)));
        const o = { traditional: p[3]! % 2 === 0, base: [10000, 10, 1][p[4]! % 3]!, scale: [1, 0.5][p[5]! % 2]!, offset: p[5]! % 7 };
        return { fn: ([x]) => mg.fast.rope(x!, dims, o), code: ([x]) => `mg.fast.rope(${x}, ${dims}, ${js(o)})`, kind: { kind: "normalized", n: dd } };
      }
      if (variant === 3) {
        // logits a (…, classes), targets in range built from the parameters
        const rows = a!.shape.slice(0, -1);
        const t = Array.from({ length: size(rows) }, (_, i) => (p[2]! + i * p[3]!) % dd);
        return {
          fn: ([x]) => mg.fast.crossEntropy(x!, mg.reshape(mg.array(t), rows)),
          code: ([x]) => `mg.fast.crossEntropy(${x}, mg.reshape(mg.array(${js(t)}), ${js(rows)}))`,
          // logsumexp − logit: the rounding of the row's largest logit (float32 on the gpu) stays in the difference
          kind: { kind: "sum", n: dd, magnitude: ([x]) => mg.max(finiteAbs64(x!), -1) },
        };
      }
      // attention: q from a, k and v from b, heads grouped, an optional causal mask
      const hk = 1 + (p[1]! % 2);
      const hq = hk * (1 + (p[2]! % 2));
      const ql = 1 + (p[3]! % 3);
      const kl = 1 + (p[4]! % 4);
      const hd = [1, 2, 4, 8][p[5]! % 4]!;
      // mask: none, causal, boolean or additive (−inf included), one per query row and key
      const maskKind = Math.floor(p[0]! / 5) % 4;
      const bits = (i: number) => (p[3]! >> (i % 10)) & 1;
      const cells = Array.from({ length: ql * kl }, (_, i) => i);
      const qs = [1, hq, ql, hd];
      const ks = [1, hk, kl, hd];
      const scale = 1 / Math.sqrt(hd);
      const maskValues = maskKind === 2 ? cells.map((i) => bits(i) === 1) : cells.map((i) => [0, -1.5, -Infinity][(bits(i) + bits(i + 3)) % 3]!);
      const maskOf = () => (maskKind === 1 ? "causal" as const : maskKind >= 2 ? mg.reshape(mg.array(maskValues as number[], maskKind === 2 ? mg.bool_ : mg.float32), [1, 1, ql, kl]) : null);
      const maskCode = maskKind === 1 ? `"causal"` : maskKind >= 2 ? `mg.reshape(mg.array(${js(maskValues)}, ${maskKind === 2 ? "mg.bool_" : "mg.float32"}), [1, 1, ${ql}, ${kl}])` : "null";
      return {
        fn: ([x, y]) => mg.fast.scaledDotProductAttention(cyclic(x!, qs, dt), cyclic(y!, ks, dt), cyclic(mg.negative(y!), ks, dt), { scale, mask: maskOf() }),
        code: ([x, y]) =>
          `mg.fast.scaledDotProductAttention(${cyclicCode(x!, qs, dt)}, ${cyclicCode(y!, ks, dt)}, ${cyclicCode(`mg.negative(${y})`, ks, dt)}, { scale: ${scale}, mask: ${maskCode} })`,
        // A score's rounding error (≤ hd·u·B with B = max|q|·max|k|·hd·scale) moves the output by up to
        // 2·max|v| times it (the softmax's derivative), the weighted sum adds kl·u·max|v|: large scores make
        // attention ill-conditioned, and the bound says how much.
        kind: {
          kind: "sum", n: hd + kl,
          magnitude: ([x, y]) => {
            const big = (z: MgArray) => mg.max(finiteAbs64(z)).item() as number;
            const b = big(cyclic(x!, qs, dt)) * big(cyclic(y!, ks, dt)) * hd * scale;
            return mg.full([1, hq, ql, hd], big(cyclic(mg.negative(y!), ks, dt)) * (2 * b + 1), mg.float64);
          },
        },
        // scale·q·k beyond float32's range: the gpu's (and MLX's) scores overflow, the cpu's float64 ones do
        // not; and an infinite value behind a weight that is 0 in float32 but not in float64 (inf vs NaN)
        unstable: ([x, y]) => {
          const big = (z: MgArray) => mg.max(finiteAbs64(z)).item() as number;
          if (mg.any(mg.isinf(cyclic(mg.negative(y!), ks, dt))).item() as boolean) return true;
          return big(cyclic(x!, qs, dt)) * big(cyclic(y!, ks, dt)) * hd * Math.max(scale, 1) >= 2 ** 126;
        },
      };
    },
  },
  {
    name: "linalg",
    arity: 1,
    plan: ([a], p) => {
      // the factorizations run on the cpu only (as in MLX): this compares the native kernels with the reference
      if (size(a!.shape) === 0 || !(isFloat(a!.dtype) || a!.dtype === mg.int32)) return null;
      const n = 1 + (p[1]! % 4);
      const variant = ["inv", "triInv", "cholesky", "qr", "svd", "eigvalsh", "lu"][p[0]! % 7]!;
      const upper = p[2]! % 2 === 0;
      const k = p[3]!;
      const cpu = { stream: mg.cpu };
      const square = (x: MgArray) => cyclic(x, [n, n], mg.float32);
      // symmetric positive definite for cholesky and eigvalsh: A + Aᵀ + (2n·max|A| + 1)·I (diagonally
      // dominant), built without sums whose rounding could differ between kernels
      const spd = (x: MgArray) => {
        const m = square(x);
        return mg.add(mg.add(m, mg.transpose(m)), mg.multiply(mg.eye(n), mg.add(mg.multiply(mg.max(mg.abs(m)), 2 * n), 1)));
      };
      type La = Record<string, (...args: unknown[]) => MgArray | MgArray[]>;
      const la = mg.linalg as unknown as La;
      const pick = (r: MgArray | MgArray[]) => (Array.isArray(r) ? r[k % r.length]! : r);
      const calls: Record<string, [(x: MgArray) => MgArray, (x: string) => string]> = {
        inv: [(x) => pick(la.inv!(square(x), cpu)), (x) => `mg.linalg.inv(${x}, { stream: mg.cpu })`],
        triInv: [(x) => pick(la.triInv!(square(x), upper, cpu)), (x) => `mg.linalg.triInv(${x}, ${upper}, { stream: mg.cpu })`],
        cholesky: [(x) => pick(la.cholesky!(spd(x), upper, cpu)), (x) => `mg.linalg.cholesky(SPD(${x}), ${upper}, { stream: mg.cpu })`],
        qr: [(x) => pick(la.qr!(square(x), cpu)), (x) => `mg.linalg.qr(${x}, { stream: mg.cpu })[${k % 2}]`],
        svd: [(x) => pick(la.svd!(square(x), false, cpu)), (x) => `mg.linalg.svd(${x}, false, { stream: mg.cpu })`],
        eigvalsh: [(x) => pick(la.eigvalsh!(spd(x), "L", cpu)), (x) => `mg.linalg.eigvalsh(SPD(${x}), "L", { stream: mg.cpu })`],
        lu: [(x) => pick(la.luFactor!(square(x), cpu)), (x) => `mg.linalg.luFactor(${x}, { stream: mg.cpu })[${k % 2}]`],
      };
      const [f, c] = calls[variant]!;
      return {
        fn: ([x]) => f(x!),
        code: ([x]) =>
          c(cyclicCode(x!, [n, n], mg.float32)).replace(
            /SPD\((.*)\)(?=, )/,
            (_m, sq: string) => `mg.add(mg.add(${sq}, mg.transpose(${sq})), mg.multiply(mg.eye(${n}), mg.add(mg.multiply(mg.max(mg.abs(${sq})), ${2 * n}), 1)))`,
          ),
        kind: { kind: "exact" },
      };
    },
  },
];

// ---------------------------------------------------------------------------------------------
// Running

interface Built {
  /** Per step: its plan and operand indices into the pool, or null when skipped. */
  plans: ({ plan: Planned; operands: number[]; out: number; op: string } | null)[];
  /** metalgrad code of the whole program. */
  code: string;
}

/** Plans a program from shapes and dtypes alone (no evaluation): which steps apply, with what. */
export function planProgram(prog: Program): Built {
  const pool: Meta[] = [];
  const names: string[] = [];
  const lines: string[] = [];
  prog.inputs.forEach((spec, i) => {
    pool.push({ shape: spec.shape, dtype: DTYPES[spec.dtype]! });
    names.push(`x${i}`);
    lines.push(inputCode(spec, `x${i}`));
  });
  const plans: Built["plans"] = [];
  mg.stream(mg.cpu, () => {
    for (const step of prog.steps) {
      const def = OPS[step.op % OPS.length]!;
      const operands = step.picks.slice(0, def.arity).map((k) => k % pool.length);
      const plan = def.plan(operands.map((k) => pool[k]!), step.params);
      if (!plan) {
        plans.push(null);
        continue;
      }
      // Shapes and dtypes of the result, from placeholders built lazily on the cpu (never evaluated).
      let out: MgArray;
      try {
        out = plan.fn(operands.map((k) => mg.zeros(pool[k]!.shape, pool[k]!.dtype)));
      } catch {
        plans.push(null); // an op error: both devices raise it when building, before any kernel
        continue;
      }
      pool.push({ shape: [...out.shape], dtype: out.dtype });
      const name = `v${pool.length - 1}`;
      names.push(name);
      lines.push(`const ${name} = ${plan.code(operands.map((k) => names[k]!))};`);
      plans.push({ plan, operands, out: pool.length - 1, op: def.name });
    }
  });
  return { plans, code: lines.join("\n") };
}

/** Runs the program on a device; returns every pool array (inputs, then step results). */
function run(prog: Program, built: Built, device: typeof mg.cpu): MgArray[] {
  return mg.stream(device, () => {
    const pool = prog.inputs.map(makeInput);
    for (const p of built.plans) if (p) pool.push(p.plan.fn(p.operands.map((k) => pool[k]!)));
    return pool;
  });
}

/** Runs `f` with the cpu device on its TypeScript reference kernels (the native ones switched off). */
function withReferenceCpu<T>(f: () => T): T {
  const before = setNativeCpu(false);
  try {
    return f();
  } finally {
    setNativeCpu(before);
  }
}

/** An evaluated copy of `a` on a device, row-contiguous, with the same bits. */
function copyTo(a: MgArray, device: typeof mg.cpu): MgArray {
  const values = a.dtype === mg.complex64 ? (a.tolist() as unknown) : a.dataSync();
  return mg.stream(device, () => mg.array(values as number[], a.dtype, { shape: a.shape }));
}

type Values = ArrayLike<number | bigint>;
function valuesOf(a: MgArray): Values {
  const d = a.dataSync() as unknown as Values;
  return d;
}

const same = (x: number | bigint, y: number | bigint) => x === y || (typeof x === "number" && typeof y === "number" && Number.isNaN(x) && Number.isNaN(y)) ;

export class Mismatch extends Error {}

/** The values of `a`, or the error its evaluation failed with (a singular matrix, say). */
function outcome(a: MgArray): Values | Error {
  try {
    return valuesOf(a);
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}

function compare(what: string, got: MgArray, want: MgArray, check: (i: number, g: number | bigint, w: number | bigint) => boolean): void {
  if (got.dtype !== want.dtype || got.shape.join() !== want.shape.join()) {
    throw new Mismatch(`${what}: ${got.dtype.name}(${got.shape}) vs ${want.dtype.name}(${want.shape})`);
  }
  const g = outcome(got);
  const w = outcome(want);
  // a failure is an answer too: both sides must fail, with the same tagged error
  if (g instanceof Error || w instanceof Error) {
    if (g instanceof Error && w instanceof Error && g.message === w.message) return;
    const say = (o: Values | Error) => (o instanceof Error ? `fails (${o.message})` : "gives values");
    throw new Mismatch(`${what}: ${say(g)} vs ${say(w)}`);
  }
  for (let i = 0; i < w.length; i++) {
    if (!check(i, g[i]!, w[i]!)) throw new Mismatch(`${what}: element ${i} (flat) is ${String(g[i])}, expected ${String(w[i])}`);
  }
}

const bitwise = (_i: number, g: number | bigint, w: number | bigint) => same(g, w) && (typeof g !== "number" || Object.is(g, w) || Number.isNaN(g));

const OVERFLOW: Record<string, number> = { float32: 3.4e38, float16: 65504, bfloat16: 3.39e38, float64: 1.7e308, complex64: 3.4e38 };
const TINY: Record<string, number> = { float32: 1.2e-38, float16: 6.1e-5, bfloat16: 1.2e-38, float64: 2.2e-308, complex64: 1.2e-38 };

/** Compares one gpu step with the cpu op on the gpu's inputs. */
function checkStep(what: string, kind: Kind, gpuOut: MgArray, cpuOut: MgArray, cpuInputs: MgArray[]): void {
  const t = toleranceFor(cpuOut.dtype);
  const within = (g: number | bigint, w: number | bigint, atol: number, rtol: number) => {
    if (typeof g !== "number" || typeof w !== "number") return g === w;
    if (Number.isNaN(w) || Number.isNaN(g)) return Number.isNaN(w) && Number.isNaN(g);
    if (!Number.isFinite(w) || !Number.isFinite(g)) return g === w;
    return Math.abs(g - w) <= atol + rtol * Math.abs(w);
  };
  if (kind.kind === "exact" || t.rtol === 0) {
    // integers, bool and layout are exact; floats of "exact" ops too, but within the dtype's tolerance
    compare(what, gpuOut, cpuOut, (_i, g, w) => within(g, w, t.atol, t.rtol) && (typeof w !== "number" || w !== 0 || g !== 0 || Object.is(g, w) || t.rtol > 0));
    return;
  }
  if (kind.kind === "elementwise") {
    compare(what, gpuOut, cpuOut, (_i, g, w) => within(g, w, t.atol, t.rtol));
    return;
  }
  if (kind.kind === "normalized") {
    const n = Math.max(kind.n, 1);
    compare(what, gpuOut, cpuOut, (_i, g, w) => within(g, w, t.atol * n, t.rtol * Math.sqrt(n) * 4));
    return;
  }
  const limit = OVERFLOW[cpuOut.dtype.name] ?? Infinity;
  const u = 2 ** -23;
  if (kind.kind === "sum") {
    const mag = valuesOf(mg.stream(mg.cpu, () => kind.magnitude(cpuInputs)));
    compare(what, gpuOut, cpuOut, (i, g, w) => {
      const m = Number(mag[i]!);
      if (!(m * (kind.partial ?? 1) < limit / 4)) return true; // partial sums may overflow in either order: no answer to compare
      return within(g, w, t.atol + (kind.n * u + (kind.termError ?? 0)) * m, t.rtol);
    });
    return;
  }
  const [hiRef, loRef] = mg.stream(mg.cpu, () => kind.magnitude(cpuInputs));
  const hi = valuesOf(hiRef);
  const lo = valuesOf(loRef);
  const tiny = TINY[cpuOut.dtype.name] ?? 0;
  compare(what, gpuOut, cpuOut, (i, g, w) => {
    if (!(Number(hi[i]!) < limit / 4) || !(Number(lo[i]!) > tiny * 1e6)) return true; // partial products may over/underflow
    return within(g, w, t.atol, t.rtol + kind.n * u);
  });
}

/**
 * Runs the three comparisons; throws a Mismatch naming the step, with the program as code.
 * Returns how many steps ran.
 */
export function checkProgram(prog: Program, coverage?: Map<string, number>): number {
  const built = planProgram(prog);
  for (const p of built.plans) if (p && coverage) coverage.set(p.op, (coverage.get(p.op) ?? 0) + 1);
  const fail = (e: unknown): never => {
    const msg = e instanceof Error ? e.message : String(e);
    throw new Mismatch(`${msg}\n--- reproducer (metalgrad) ---\nimport * as mg from "metalgrad";\nmg.setDefaultDevice(mg.gpu); // and mg.cpu\n${built.code}\n---`);
  };
  const active = built.plans.filter((p) => p !== null);
  if (active.length === 0) return 0;
  // A step whose evaluation fails (a singular matrix) fails exactly its dependents (failure isolation):
  // evals may throw, and a step with a failed operand is compared only by failing too.
  const evalAll = (xs: MgArray[]) => {
    try {
      mg.eval(xs);
    } catch {
      // read per array below
    }
  };
  // Whether a step fails is compared on identical inputs (comparison 1 runs the cpu op on the gpu
  // run's operands; compare() requires the same error), not across the two runs: there a matrix
  // can be exactly singular in one run and not in the other after upstream rounding.
  const inputsOf = (pool: MgArray[], p: NonNullable<Built["plans"][number]>): MgArray[] | null => {
    try {
      return p.operands.map((k) => copyTo(pool[k]!, mg.cpu));
    } catch {
      return null; // a failed operand (whether the step depends on it is the step's business)
    }
  };
  try {
    // 1 + 2: the gpu writing everything, and writing only the sinks
    const gpuAll = run(prog, built, mg.gpu);
    evalAll(gpuAll);
    const read = new Set<number>();
    for (const p of active) for (const k of p.operands) read.add(k);
    const sinks = active.map((p) => p.out).filter((k) => !read.has(k));
    const gpuSinksOnly = run(prog, built, mg.gpu);
    evalAll(sinks.map((k) => gpuSinksOnly[k]!));
    for (const k of sinks) compare(`v${k}: gpu writing only the final arrays vs writing every step`, gpuSinksOnly[k]!, gpuAll[k]!, bitwise);
    // 3: the cpu with views vs contiguous copies
    const cpuAll = run(prog, built, mg.cpu);
    evalAll(cpuAll);
    for (const p of active) {
      const ins = inputsOf(cpuAll, p);
      if (!ins) continue;
      const again = mg.stream(mg.cpu, () => p.plan.fn(ins));
      compare(`v${p.out}: cpu on views vs on contiguous copies`, cpuAll[p.out]!, again, bitwise);
    }
    // 1: each gpu step against the cpu op on the gpu's own inputs
    for (const p of active) {
      const ins = inputsOf(gpuAll, p);
      if (!ins) continue;
      if (p.plan.unstable?.(ins)) continue;
      const want = mg.stream(mg.cpu, () => p.plan.fn(ins));
      checkStep(`v${p.out}: gpu vs cpu on the same inputs`, p.plan.kind, gpuAll[p.out]!, want, ins);
    }
    // 4: each native cpu step against the TypeScript reference kernels on the same inputs
    for (const p of active) {
      const ins = inputsOf(cpuAll, p);
      if (!ins || p.plan.unstable?.(ins)) continue;
      const reference = withReferenceCpu(() => {
        const r = mg.stream(mg.cpu, () => p.plan.fn(ins));
        evalAll([r]);
        return r;
      });
      checkStep(`v${p.out}: native cpu vs the TypeScript reference on the same inputs`, p.plan.kind, cpuAll[p.out]!, reference, ins);
    }
  } catch (e) {
    fail(e);
  }
  return active.length;
}

/**
 * Checks `runs` random programs from `seed`; throws the shrunk failure's report (its seed and
 * path to replay, and the program as metalgrad code).
 */
export function fuzzDifferential(o: { runs: number; seed: number; sizes?: ProgramSizes; path?: string; families?: readonly string[] }): {
  steps: number;
  programs: number;
  /** Steps run per op family (the OPS entries' names). */
  coverage: Map<string, number>;
} {
  let steps = 0;
  let programs = 0;
  const coverage = new Map<string, number>();
  const out = fc.check(
    fc.property(programArbitrary(o.sizes, o.families), (prog) => {
      steps += checkProgram(prog, coverage);
      programs++;
    }),
    { numRuns: o.runs, seed: o.seed, ...(o.path ? { path: o.path } : {}) },
  );
  if (out.failed) {
    let report = out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance);
    try {
      checkProgram(out.counterexample![0]);
    } catch (e) {
      report = (e as Error).message;
    }
    throw new Error(
      `[fuzz] a program gives different answers (seed ${out.seed}, path "${out.counterexamplePath}", shrunk ${out.numShrinks} times; ` +
        `replay with FUZZ_SEED=${out.seed} FUZZ_PATH=${out.counterexamplePath}):\n${report}\nprogram: ${JSON.stringify(out.counterexample![0])}`,
    );
  }
  return { steps, programs, coverage };
}
