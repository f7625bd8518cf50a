// Elementwise primitives (MLX's unary, binary and ternary families). Each record holds its CPU
// scalar functions and its derivative rules; ops have already cast and broadcast the inputs, so
// inputs share one shape and (except Select's condition) one dtype.
import type { MgArray } from "../array.ts";
import { bool_, complex64, type Dtype, float32 } from "../dtype.ts";
import type { Primitive } from "../primitive.ts";
import {
  cpuBinary, cpuUnary, type ScalarFns1, type ScalarFns2,
} from "../../backend/cpu/elementwise.ts";
import {
  erf, erfinv, floorDivBig, floorDivInt, floorMod, floorModBig, logaddexp, powBig, roundHalfEven,
  sigmoid,
} from "../../backend/cpu/math.ts";
import { readBigints, readComplex, readNumbers, writeBigints, writeComplex, writeNumbers } from "../../backend/cpu/values.ts";
import { zerosLike } from "../ops/creation.ts";
import * as ew from "../ops/elementwise.ts";
import { vmapElementwise } from "../../autograd/batching.ts";

type Rule1 = (x: MgArray, y: MgArray, g: MgArray) => MgArray;

interface UnaryDef extends ScalarFns1 {
  name: string;
  /** The MSL functor in Sources/Kernels/elementwise_ops.h (default: the primitive's name). */
  functor?: string;
  /** Output dtype from the input dtype (default: unchanged). */
  outDtype?: (d: Dtype) => Dtype;
  /** dL/dx given x, y = f(x) and the cotangent g. */
  vjp?: Rule1;
  /** The tangent of y given x, y and the tangent t (default: vjp's linear map, which is
   *  the same for elementwise functions of one real variable). */
  jvp?: Rule1;
  /** Complex-differentiable: for complex inputs the vjp multiplies by the conjugate derivative
   *  (MLX's convention: the vjp conjugates the jvp's multiplier). */
  holomorphic?: boolean;
}

/** Elementwise primitive of one input. */
export function unary(def: UnaryDef): Primitive<null> {
  const vjp = def.vjp;
  const jvp = def.jvp ?? def.vjp;
  const prim: Primitive<null> = {
    name: def.name,
    fusion: "unary",
    gpu: { kind: "elementwise", functor: def.functor ?? def.name },
    outputSpecs: ([x]) => [{ shape: [...x!.shape], dtype: def.outDtype ? def.outDtype(x!.dtype) : x!.dtype }],
    cpu: ([x], [out]) => cpuUnary(def.name, def, x!, out!),
    vjp: vjp
      ? ([x], [g], _a, [y]) => [
          def.holomorphic && x!.dtype === complex64 ? ew.conjugate(vjp(x!, y!, ew.conjugate(g!))) : vjp(x!, y!, g!),
        ]
      : undefined,
    jvp: jvp ? ([x], [t], _a, [y]) => [jvp(x!, y!, t!)] : undefined,
    vmap: (inputs, axes) => vmapElementwise(prim, inputs, axes, null),
  };
  return prim;
}

const cmul = (ar: number, ai: number, br: number, bi: number): [number, number] => [ar * br - ai * bi, ar * bi + ai * br];
const cdiv = (ar: number, ai: number, br: number, bi: number): [number, number] => {
  // Smith's algorithm avoids overflow in |b|².
  if (Math.abs(br) >= Math.abs(bi)) {
    const r = bi / br;
    const den = br + bi * r;
    return [(ar + ai * r) / den, (ai - ar * r) / den];
  }
  const r = br / bi;
  const den = br * r + bi;
  return [(ar * r + ai) / den, (ai * r - ar) / den];
};
const cexp = (re: number, im: number): [number, number] => {
  const e = Math.exp(re);
  return im === 0 ? [e, 0] : [e * Math.cos(im), e * Math.sin(im)];
};
const clog = (re: number, im: number): [number, number] => [Math.log(Math.hypot(re, im)), Math.atan2(im, re)];
const csqrt = (re: number, im: number): [number, number] => {
  const m = Math.hypot(re, im);
  const r = Math.sqrt((m + re) / 2);
  const i = Math.sqrt((m - re) / 2);
  return [r, im < 0 || Object.is(im, -0) ? -i : i];
};

const isInt = (d: Dtype) => d.kind === "i" || d.kind === "u";

// ---------------------------------------------------------------------------------------------
// Unary

export const Abs = unary({
  name: "Abs",
  num: Math.abs,
  big: (x) => (x < 0n ? -x : x),
  cplx: (re, im) => [Math.hypot(re, im), 0],
  // d|x| = sign(x) dx
  vjp: (x, _y, g) => ew.multiply(g, ew.sign(x)),
});

export const Negative = unary({
  name: "Negative",
  holomorphic: true,
  num: (x) => -x,
  big: (x) => -x,
  cplx: (re, im) => [-re, -im],
  vjp: (_x, _y, g) => ew.negative(g),
});

export const Sign = unary({
  name: "Sign",
  // MLX's (x > 0) - (x < 0): NaN and -0 give +0.
  num: (x) => (x > 0 ? 1 : x < 0 ? -1 : 0),
  big: (x) => (x > 0n ? 1n : x < 0n ? -1n : 0n),
  cplx: (re, im) => {
    const m = Math.hypot(re, im);
    return m === 0 ? [0, 0] : [re / m, im / m];
  },
  // piecewise constant: zero derivative
  vjp: (x) => zerosLike(x),
});

export const Square = unary({
  name: "Square",
  holomorphic: true,
  num: (x) => x * x,
  int: (x, d) => (d.size === 4 ? Math.imul(x, x) : x * x),
  big: (x) => x * x,
  cplx: (re, im) => cmul(re, im, re, im),
  // d x² = 2x dx
  vjp: (x, _y, g) => ew.multiply(g, ew.multiply(x, 2)),
});

export const Sqrt = unary({
  name: "Sqrt",
  holomorphic: true,
  num: Math.sqrt,
  cplx: csqrt,
  // d √x = dx / (2√x)
  vjp: (_x, y, g) => ew.divide(g, ew.multiply(y, 2)),
});

export const Rsqrt = unary({
  name: "Rsqrt",
  holomorphic: true,
  num: (x) => 1 / Math.sqrt(x),
  cplx: (re, im) => {
    const [r, i] = csqrt(re, im);
    return cdiv(1, 0, r, i);
  },
  // d x^{-1/2} = -½ x^{-3/2} dx = -½ y³ dx
  vjp: (_x, y, g) => ew.multiply(g, ew.multiply(ew.multiply(ew.multiply(y, y), y), -0.5)),
});

export const Exp = unary({
  name: "Exp",
  holomorphic: true,
  num: Math.exp,
  cplx: cexp,
  vjp: (_x, y, g) => ew.multiply(g, y),
});

export const Expm1 = unary({
  name: "Expm1",
  num: Math.expm1,
  // d(eˣ − 1) = eˣ dx = (y + 1) dx
  vjp: (_x, y, g) => ew.multiply(g, ew.add(y, 1)),
});

export const Log = unary({
  name: "Log",
  holomorphic: true,
  num: Math.log,
  cplx: clog,
  vjp: (x, _y, g) => ew.divide(g, x),
});

export const Log2 = unary({
  name: "Log2",
  holomorphic: true,
  num: Math.log2,
  cplx: (re, im) => {
    const [r, i] = clog(re, im);
    return [r / Math.LN2, i / Math.LN2];
  },
  vjp: (x, _y, g) => ew.divide(g, ew.multiply(x, Math.LN2)),
});

export const Log10 = unary({
  name: "Log10",
  holomorphic: true,
  num: Math.log10,
  cplx: (re, im) => {
    const [r, i] = clog(re, im);
    return [r / Math.LN10, i / Math.LN10];
  },
  vjp: (x, _y, g) => ew.divide(g, ew.multiply(x, Math.LN10)),
});

export const Log1p = unary({
  name: "Log1p",
  num: Math.log1p,
  vjp: (x, _y, g) => ew.divide(g, ew.add(x, 1)),
});

export const Sin = unary({
  name: "Sin",
  holomorphic: true,
  num: Math.sin,
  cplx: (re, im) => [Math.sin(re) * Math.cosh(im), Math.cos(re) * Math.sinh(im)],
  vjp: (x, _y, g) => ew.multiply(g, ew.cos(x)),
});

export const Cos = unary({
  name: "Cos",
  holomorphic: true,
  num: Math.cos,
  cplx: (re, im) => [Math.cos(re) * Math.cosh(im), -Math.sin(re) * Math.sinh(im)],
  vjp: (x, _y, g) => ew.negative(ew.multiply(g, ew.sin(x))),
});

export const Tan = unary({
  name: "Tan",
  holomorphic: true,
  num: Math.tan,
  cplx: (re, im) => {
    // tan z = sin z / cos z
    const s: [number, number] = [Math.sin(re) * Math.cosh(im), Math.cos(re) * Math.sinh(im)];
    const c: [number, number] = [Math.cos(re) * Math.cosh(im), -Math.sin(re) * Math.sinh(im)];
    return cdiv(s[0], s[1], c[0], c[1]);
  },
  // d tan x = (1 + tan²x) dx
  vjp: (_x, y, g) => ew.multiply(g, ew.add(ew.square(y), 1)),
});

export const ArcSin = unary({
  name: "ArcSin",
  num: Math.asin,
  vjp: (x, _y, g) => ew.multiply(g, ew.rsqrt(ew.subtract(1, ew.square(x)))),
});

export const ArcCos = unary({
  name: "ArcCos",
  num: Math.acos,
  vjp: (x, _y, g) => ew.negative(ew.multiply(g, ew.rsqrt(ew.subtract(1, ew.square(x))))),
});

export const ArcTan = unary({
  name: "ArcTan",
  num: Math.atan,
  vjp: (x, _y, g) => ew.divide(g, ew.add(ew.square(x), 1)),
});

export const Sinh = unary({
  name: "Sinh",
  holomorphic: true,
  num: Math.sinh,
  cplx: (re, im) => [Math.sinh(re) * Math.cos(im), Math.cosh(re) * Math.sin(im)],
  vjp: (x, _y, g) => ew.multiply(g, ew.cosh(x)),
});

export const Cosh = unary({
  name: "Cosh",
  holomorphic: true,
  num: Math.cosh,
  cplx: (re, im) => [Math.cosh(re) * Math.cos(im), Math.sinh(re) * Math.sin(im)],
  vjp: (x, _y, g) => ew.multiply(g, ew.sinh(x)),
});

export const Tanh = unary({
  name: "Tanh",
  holomorphic: true,
  num: Math.tanh,
  cplx: (re, im) => {
    const s: [number, number] = [Math.sinh(re) * Math.cos(im), Math.cosh(re) * Math.sin(im)];
    const c: [number, number] = [Math.cosh(re) * Math.cos(im), Math.sinh(re) * Math.sin(im)];
    return cdiv(s[0], s[1], c[0], c[1]);
  },
  // d tanh x = (1 − tanh²x) dx
  vjp: (_x, y, g) => ew.multiply(g, ew.subtract(1, ew.square(y))),
});

export const ArcSinh = unary({
  name: "ArcSinh",
  num: Math.asinh,
  vjp: (x, _y, g) => ew.multiply(g, ew.rsqrt(ew.add(ew.square(x), 1))),
});

export const ArcCosh = unary({
  name: "ArcCosh",
  num: Math.acosh,
  vjp: (x, _y, g) => ew.multiply(g, ew.rsqrt(ew.subtract(ew.square(x), 1))),
});

export const ArcTanh = unary({
  name: "ArcTanh",
  num: Math.atanh,
  vjp: (x, _y, g) => ew.divide(g, ew.subtract(1, ew.square(x))),
});

// Rounding: integers pass through unchanged; derivative zero almost everywhere.
export const Floor = unary({
  name: "Floor",
  num: Math.floor,
  big: (x) => x,
  vjp: (x) => zerosLike(x),
});

export const Ceil = unary({
  name: "Ceil",
  num: Math.ceil,
  big: (x) => x,
  vjp: (x) => zerosLike(x),
});

export const Round = unary({
  name: "Round",
  num: roundHalfEven,
  big: (x) => x,
  cplx: (re, im) => [roundHalfEven(re), roundHalfEven(im)],
  vjp: (x) => zerosLike(x),
});

export const Sigmoid = unary({
  name: "Sigmoid",
  num: sigmoid,
  // dσ = σ(1 − σ) dx
  vjp: (_x, y, g) => ew.multiply(g, ew.multiply(y, ew.subtract(1, y))),
});

export const Erf = unary({
  name: "Erf",
  num: erf,
  // d erf x = 2/√π e^{−x²} dx
  vjp: (x, _y, g) => ew.multiply(g, ew.multiply(ew.exp(ew.negative(ew.square(x))), 2 / Math.sqrt(Math.PI))),
});

export const ErfInv = unary({
  name: "ErfInv",
  num: erfinv,
  // d erf⁻¹ y = √π/2 e^{(erf⁻¹ y)²} dy
  vjp: (_x, y, g) => ew.multiply(g, ew.multiply(ew.exp(ew.square(y)), Math.sqrt(Math.PI) / 2)),
});

export const LogicalNot = unary({
  name: "LogicalNot",
  num: (x) => (x === 0 ? 1 : 0),
  outDtype: () => bool_,
});

export const BitwiseInvert = unary({
  name: "BitwiseInvert",
  int: (x) => ~x,
  num: (x) => ~x,
  big: (x) => ~x,
});

export const Conjugate = unary({
  name: "Conjugate",
  num: (x) => x,
  cplx: (re, im) => [re, -im],
  vjp: (_x, _y, g) => ew.conjugate(g),
});

export const Real = unary({
  name: "Real",
  num: (x) => x,
  cplx: (re) => [re, 0],
  outDtype: (d) => (d === complex64 ? float32 : d),
  vjp: (_x, _y, g) => ew.astype(g, complex64),
  jvp: (_x, _y, t) => ew.real(t),
});

export const Imag = unary({
  name: "Imag",
  num: () => 0,
  cplx: (_re, im) => [im, 0],
  outDtype: (d) => (d === complex64 ? float32 : d),
  // d imag(z) / dz applied to g: the cotangent enters the imaginary part, g·i
  vjp: (_x, _y, g) => ew.multiply(ew.astype(g, complex64), { re: 0, im: 1 }),
  jvp: (_x, _y, t) => ew.imag(t),
});

/** Identity in value, zero gradient: cuts the graph for transforms. */
export const StopGradient: Primitive<null> = {
  name: "StopGradient",
  view: true,
  gpu: { kind: "view" },
  outputSpecs: ([x]) => [{ shape: [...x!.shape], dtype: x!.dtype }],
  cpu([x], [out]) {
    const l = x!.layout!;
    out!.setLayout(l.storage, l.offset, l.strides, true);
  },
  vjp: ([x]) => [zerosLike(x!)],
  jvp: ([x]) => [zerosLike(x!)],
  vmap: (inputs, axes) => vmapElementwise(StopGradient, inputs, axes, null),
};

export interface AsTypeParams {
  dtype: Dtype;
}

/** Value conversion between any two dtypes (C-cast semantics; complex → real keeps the real part). */
export const AsType: Primitive<AsTypeParams> = {
  name: "AsType",
  fusion: "unary",
  gpu: { kind: "elementwise", functor: "Cast" },  // Cast<output type>, filled in by the GPU backend
  outputSpecs: ([x], p) => [{ shape: [...x!.shape], dtype: p.dtype }],
  cpu([x], [out]) {
    const from = x!.dtype;
    const to = out!.dtype;
    if (to === complex64) writeComplex(out!, readComplex(x!));
    else if (to === bool_) writeNumbers(out!, from === complex64 ? nonzeroComplex(x!) : readNumbers(x!).map((v) => (v !== 0 ? 1 : 0)));
    else if (isInt(from) && isInt(to)) writeBigints(out!, readBigints(x!));
    else if (isInt(to) && (to.size === 8)) writeBigints(out!, readBigints(x!));
    else writeNumbers(out!, readNumbers(x!));
  },
  // The cotangent is cast back to the primal's dtype.
  vjp: ([x], [g]) => [ew.astype(g!, x!.dtype)],
  jvp: (_p, [t], _a, [y]) => [ew.astype(t!, y!.dtype)],
  vmap: (inputs, axes, p) => vmapElementwise(AsType, inputs, axes, p),
  paramsKey: (p) => p.dtype.name,
};

function nonzeroComplex(x: MgArray): Float64Array {
  const v = readComplex(x);
  const r = new Float64Array(x.size);
  for (let i = 0; i < r.length; i++) r[i] = v[2 * i] !== 0 || v[2 * i + 1] !== 0 ? 1 : 0;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Binary

type Rule2 = (a: MgArray, b: MgArray, y: MgArray, g: MgArray) => [MgArray | null, MgArray | null];

interface BinaryDef extends ScalarFns2 {
  name: string;
  /** The MSL functor in Sources/Kernels/elementwise_ops.h (default: the primitive's name). */
  functor?: string;
  outDtype?: (d: Dtype) => Dtype;
  /** Cotangents for (a, b) given the output y and its cotangent g. */
  vjp?: Rule2;
  /** Tangent of y given the tangents of a and b (null = zero tangent). Default: the vjp's
   *  multipliers applied to the tangents (the Jacobian of an elementwise map is diagonal). */
  jvp?: (a: MgArray, b: MgArray, y: MgArray, ta: MgArray | null, tb: MgArray | null) => MgArray;
  /** Complex-differentiable in each argument: complex vjps use the conjugate multipliers. */
  holomorphic?: boolean;
}

const complexCapable = new WeakSet<Primitive<null>>();
/** Whether a binary primitive computes complex64 (its op rejects complex inputs otherwise). */
export const supportsComplex = (p: Primitive<null>): boolean => complexCapable.has(p);

/** Elementwise primitive of two same-shaped, same-dtype inputs. */
export function binary(def: BinaryDef): Primitive<null> {
  const vjp: Rule2 | undefined =
    def.vjp && def.holomorphic
      ? (a, b, y, g) => {
          if (a.dtype !== complex64) return def.vjp!(a, b, y, g);
          const [ga, gb] = def.vjp!(a, b, y, ew.conjugate(g));
          return [ga && ew.conjugate(ga), gb && ew.conjugate(gb)];
        }
      : def.vjp;
  const jvp =
    def.jvp ??
    (def.vjp
      ? (a: MgArray, b: MgArray, y: MgArray, ta: MgArray | null, tb: MgArray | null) =>
          sumTangents(ta ? def.vjp!(a, b, y, ta)[0] : null, tb ? def.vjp!(a, b, y, tb)[1] : null, y)
      : undefined);
  const prim: Primitive<null> = {
    name: def.name,
    fusion: "binary",
    gpu: { kind: "elementwise", functor: def.functor ?? def.name },
    outputSpecs: ([a]) => [{ shape: [...a!.shape], dtype: def.outDtype ? def.outDtype(a!.dtype) : a!.dtype }],
    cpu: ([a, b], [out]) => cpuBinary(def.name, def, a!, b!, out!),
    vjp: vjp
      ? ([a, b], [g], argnums, [y]) => {
          const [ga, gb] = vjp(a!, b!, y!, g!);
          return argnums.map((i) => (i === 0 ? ga ?? zerosLike(a!) : gb ?? zerosLike(b!)));
        }
      : undefined,
    jvp: jvp
      ? ([a, b], tangents, argnums, [y]) => {
          const ta = argnums.indexOf(0) >= 0 ? tangents[argnums.indexOf(0)]! : null;
          const tb = argnums.indexOf(1) >= 0 ? tangents[argnums.indexOf(1)]! : null;
          return [jvp(a!, b!, y!, ta, tb)];
        }
      : undefined,
    vmap: (inputs, axes) => vmapElementwise(prim, inputs, axes, null),
  };
  if (def.cplx || def.cplxToNum) complexCapable.add(prim);
  return prim;
}

const sumTangents = (x: MgArray | null, y: MgArray | null, like: MgArray): MgArray =>
  x && y ? ew.add(x, y) : x ?? y ?? zerosLike(like);

export const Add = binary({
  name: "Add",
  num: (x, y) => x + y,
  big: (x, y) => x + y,
  cplx: (ar, ai, br, bi) => [ar + br, ai + bi],
  vjp: (_a, _b, _y, g) => [g, g],
  jvp: (_a, _b, y, ta, tb) => sumTangents(ta, tb, y),
});

export const Subtract = binary({
  name: "Subtract",
  num: (x, y) => x - y,
  big: (x, y) => x - y,
  cplx: (ar, ai, br, bi) => [ar - br, ai - bi],
  vjp: (_a, _b, _y, g) => [g, ew.negative(g)],
  jvp: (_a, _b, y, ta, tb) => sumTangents(ta, tb ? ew.negative(tb) : null, y),
});

export const Multiply = binary({
  name: "Multiply",
  holomorphic: true,
  num: (x, y) => x * y,
  int: (x, y, d) => (d.size === 4 ? Math.imul(x, y) : x * y),
  big: (x, y) => x * y,
  cplx: cmul,
  // d(ab) = b da + a db
  vjp: (a, b, _y, g) => [ew.multiply(g, b), ew.multiply(g, a)],
  jvp: (a, b, y, ta, tb) => sumTangents(ta ? ew.multiply(ta, b) : null, tb ? ew.multiply(a, tb) : null, y),
});

export const Divide = binary({
  name: "Divide",
  holomorphic: true,
  num: (x, y) => x / y,
  cplx: cdiv,
  // d(a/b) = da/b − a/b² db
  vjp: (_a, b, y, g) => [ew.divide(g, b), ew.negative(ew.divide(ew.multiply(g, y), b))],
  jvp: (_a, b, y, ta, tb) =>
    sumTangents(ta ? ew.divide(ta, b) : null, tb ? ew.negative(ew.divide(ew.multiply(tb, y), b)) : null, y),
});

/** Floored integer division (floor_divide on integer dtypes). */
export const FloorDivide = binary({
  name: "FloorDivide",
  int: floorDivInt,
  num: floorDivInt,
  big: floorDivBig,
});

export const Remainder = binary({
  name: "Remainder",
  num: floorMod,
  int: (x, y) => (y === 0 ? 0 : floorMod(x, y)),
  big: floorModBig,
  // a mod b = a − b⌊a/b⌋: d/da = 1, d/db = −⌊a/b⌋
  vjp: (a, b, _y, g) => [g, ew.negative(ew.multiply(g, ew.floor(ew.divide(a, b))))],
});

/** Floored quotient and remainder as two sibling outputs. */
export const DivMod: Primitive<null> = {
  name: "DivMod",
  gpu: { kind: "elementwise", functor: "DivMod" },  // two outputs: never fused; binary.metal's divmod_g
  outputSpecs: ([a]) => [
    { shape: [...a!.shape], dtype: a!.dtype },
    { shape: [...a!.shape], dtype: a!.dtype },
  ],
  cpu([a, b], [q, r]) {
    const d = a!.dtype;
    if (isInt(d) && d.size === 8) {
      const va = readBigints(a!);
      const vb = readBigints(b!);
      writeBigints(q!, va.map((x, i) => floorDivBig(x, vb[i]!)));
      writeBigints(r!, va.map((x, i) => floorModBig(x, vb[i]!)));
      return;
    }
    const va = readNumbers(a!);
    const vb = readNumbers(b!);
    const qv = new Float64Array(va.length);
    const rv = new Float64Array(va.length);
    for (let i = 0; i < va.length; i++) {
      if (isInt(d)) {
        qv[i] = floorDivInt(va[i]!, vb[i]!);
        rv[i] = vb[i] === 0 ? 0 : floorMod(va[i]!, vb[i]!);
      } else {
        qv[i] = Math.floor(va[i]! / vb[i]!);
        rv[i] = floorMod(va[i]!, vb[i]!);
      }
    }
    writeNumbers(q!, qv);
    writeNumbers(r!, rv);
  },
  // The quotient is piecewise constant; the remainder a − b⌊a/b⌋ moves like Remainder.
  vjp([a, b], [, gr], argnums) {
    return argnums.map((i) => (i === 0 ? gr! : ew.negative(ew.multiply(gr!, ew.floor(ew.divide(a!, b!))))));
  },
  jvp([a, b], tangents, argnums, [q]) {
    const ta = argnums.indexOf(0) >= 0 ? tangents[argnums.indexOf(0)]! : null;
    const tb = argnums.indexOf(1) >= 0 ? tangents[argnums.indexOf(1)]! : null;
    const tr = sumTangents(ta, tb ? ew.negative(ew.multiply(tb, ew.floor(ew.divide(a!, b!)))) : null, q!);
    return [zerosLike(q!), tr];
  },
  vmap: (inputs, axes) => vmapElementwise(DivMod, inputs, axes, null),
};

export const Power = binary({
  name: "Power",
  holomorphic: true,
  num: Math.pow,
  int: (x, y, d) => Number(BigInt.asIntN(d.size * 8, powBig(BigInt(x), BigInt(y)))),
  big: powBig,
  cplx: (ar, ai, br, bi) => {
    if (ar === 0 && ai === 0) return br === 0 && bi === 0 ? [1, 0] : [0, 0];
    const [lr, li] = clog(ar, ai);
    const [er, ei] = cmul(lr, li, br, bi);
    return cexp(er, ei);
  },
  // d aᵇ = b aᵇ⁻¹ da + aᵇ log a db. The a-rule is written as b·a^(b−1) so that it is 0 at
  // a = 0 for b > 1 (grad of x**1.5 at 0 is 0); the b-rule is 0 where aᵇ is 0 (MLX's "0 · log 0
  // → 0"), so at a = 0 it is 0 for b > 0 but −inf for b = 0, as in MLX.
  vjp: (a, b, y, g) => [
    ew.multiply(g, ew.multiply(b, ew.power(a, ew.subtract(b, 1)))),
    ew.multiply(g, ew.where(ew.notEqual(y, 0), ew.multiply(y, ew.log(a)), 0)),
  ],
  jvp: (a, b, y, ta, tb) =>
    sumTangents(
      ta ? ew.multiply(ta, ew.multiply(b, ew.power(a, ew.subtract(b, 1)))) : null,
      tb ? ew.multiply(tb, ew.where(ew.notEqual(y, 0), ew.multiply(y, ew.log(a)), 0)) : null,
      y,
    ),
});

// NaN propagates from either side (maximum(nan, 0) is nan).
// complex64 is ordered lexicographically, real part first (MLX's complex64_t operators).
const cgt = (ar: number, ai: number, br: number, bi: number) => ar > br || (ar === br && ai > bi);
const cge = (ar: number, ai: number, br: number, bi: number) => ar > br || (ar === br && ai >= bi);
const cnan = (re: number, im: number) => re !== re || im !== im;
const maxNum = (x: number, y: number) => (x !== x ? x : x > y ? x : y);
const minNum = (x: number, y: number) => (x !== x ? x : x < y ? x : y);

export const Maximum = binary({
  name: "Maximum",
  num: maxNum,
  big: (x, y) => (x > y ? x : y),
  // As for floats, a NaN first operand wins (MLX's Metal rule).
  cplx: (ar, ai, br, bi) => (cnan(ar, ai) || cgt(ar, ai, br, bi) ? [ar, ai] : [br, bi]),
  // MLX's masks: a gets g where a > b, b where a <= b, so a tie sends all of g to b (and a NaN
  // pair sends it to neither).
  vjp: (a, b, _y, g) => [ew.multiply(g, ew.greater(a, b)), ew.multiply(g, ew.lessEqual(a, b))],
});

export const Minimum = binary({
  name: "Minimum",
  num: minNum,
  big: (x, y) => (x < y ? x : y),
  cplx: (ar, ai, br, bi) => (cnan(ar, ai) || cgt(br, bi, ar, ai) ? [ar, ai] : [br, bi]),
  // As Maximum, mirrored: a where a < b, b where a >= b.
  vjp: (a, b, _y, g) => [ew.multiply(g, ew.less(a, b)), ew.multiply(g, ew.greaterEqual(a, b))],
});

export const LogAddExp = binary({
  name: "LogAddExp",
  holomorphic: true,
  num: logaddexp,
  // MLX's complex form: m + log1p(exp(n − m)) with m, n the larger and smaller operand in the
  // lexicographic order; any NaN part gives NaN.
  cplx: (ar, ai, br, bi) => {
    if (cnan(ar, ai) || cnan(br, bi)) return [NaN, 0];
    const [mr, mi, nr, ni] = cgt(ar, ai, br, bi) ? [ar, ai, br, bi] : [br, bi, ar, ai];
    if (nr === -Infinity || mr === Infinity) return [mr, mi];
    const e = Math.exp(nr - mr);
    const [lr, li] = clog(1 + e * Math.cos(ni - mi), e * Math.sin(ni - mi));
    return [mr + lr, mi + li];
  },
  // ∂/∂a log(eᵃ + eᵇ) = eᵃ⁻ʸ
  vjp: (a, b, y, g) => [ew.multiply(g, ew.exp(ew.subtract(a, y))), ew.multiply(g, ew.exp(ew.subtract(b, y)))],
  jvp: (a, b, y, ta, tb) =>
    sumTangents(
      ta ? ew.multiply(ta, ew.exp(ew.subtract(a, y))) : null,
      tb ? ew.multiply(tb, ew.exp(ew.subtract(b, y))) : null,
      y,
    ),
});

export const ArcTan2 = binary({
  name: "ArcTan2",
  num: Math.atan2,
  // atan2(a, b): ∂/∂a = b/(a²+b²), ∂/∂b = −a/(a²+b²)
  vjp: (a, b, _y, g) => {
    const den = ew.add(ew.square(a), ew.square(b));
    return [ew.divide(ew.multiply(g, b), den), ew.negative(ew.divide(ew.multiply(g, a), den))];
  },
});

const toBool = () => bool_;
const cmp = (name: string, f: (x: number, y: number) => boolean, fb: (x: bigint, y: bigint) => boolean, cplx?: (ar: number, ai: number, br: number, bi: number) => boolean, functor?: string) =>
  binary({
    name,
    functor,
    outDtype: toBool,
    num: (x, y) => (f(x, y) ? 1 : 0),
    big: (x, y) => (fb(x, y) ? 1n : 0n),
    cplxToNum: cplx ? (ar, ai, br, bi) => (cplx(ar, ai, br, bi) ? 1 : 0) : undefined,
  });

export const Equal = cmp("Equal", (x, y) => x === y, (x, y) => x === y, (ar, ai, br, bi) => ar === br && ai === bi);
/** Equal with NaN == NaN (array_equal(equal_nan=True), isclose(equal_nan=True)). */
export const EqualNan = cmp("Equal", (x, y) => x === y || (x !== x && y !== y), (x, y) => x === y,
  (ar, ai, br, bi) => (ar === br || (ar !== ar && br !== br)) && (ai === bi || (ai !== ai && bi !== bi)), "EqualNan");
export const NotEqual = cmp("NotEqual", (x, y) => x !== y, (x, y) => x !== y, (ar, ai, br, bi) => ar !== br || ai !== bi);
export const Greater = cmp("Greater", (x, y) => x > y, (x, y) => x > y, cgt);
export const GreaterEqual = cmp("GreaterEqual", (x, y) => x >= y, (x, y) => x >= y, cge);
export const Less = cmp("Less", (x, y) => x < y, (x, y) => x < y, (ar, ai, br, bi) => cgt(br, bi, ar, ai));
export const LessEqual = cmp("LessEqual", (x, y) => x <= y, (x, y) => x <= y, (ar, ai, br, bi) => cge(br, bi, ar, ai));

export const LogicalAnd = binary({ name: "LogicalAnd", outDtype: toBool, num: (x, y) => (x !== 0 && y !== 0 ? 1 : 0) });
export const LogicalOr = binary({ name: "LogicalOr", outDtype: toBool, num: (x, y) => (x !== 0 || y !== 0 ? 1 : 0) });

// Bitwise ops on ≤32-bit integers use JS's 32-bit operators; the dtype store truncates/wraps
// exactly as C does. 64-bit integers use BigInt.
export const BitwiseAnd = binary({ name: "BitwiseAnd", num: (x, y) => x & y, big: (x, y) => x & y });
export const BitwiseOr = binary({ name: "BitwiseOr", num: (x, y) => x | y, big: (x, y) => x | y });
export const BitwiseXor = binary({ name: "BitwiseXor", num: (x, y) => x ^ y, big: (x, y) => x ^ y });
export const LeftShift = binary({ name: "LeftShift", num: (x, y) => x << y, big: (x, y) => x << y });
export const RightShift = binary({
  name: "RightShift",
  int: (x, y, d) => (d.kind === "u" ? x >>> y : x >> y),
  num: (x, y) => x >> y,
  big: (x, y) => x >> y,
});

// ---------------------------------------------------------------------------------------------
// Ternary

/** where(cond, a, b): cond is bool; a and b share the output dtype; all one shape. */
export const Select: Primitive<null> = {
  name: "Select",
  fusion: "ternary",
  gpu: { kind: "elementwise", functor: "Select" },
  outputSpecs: ([, a]) => [{ shape: [...a!.shape], dtype: a!.dtype }],
  cpu([c, a, b], [out]) {
    const cv = readNumbers(c!);
    const d = a!.dtype;
    if (d === complex64) {
      const av = readComplex(a!);
      const bv = readComplex(b!);
      const r = new Float64Array(2 * cv.length);
      for (let i = 0; i < cv.length; i++) {
        const s = cv[i] !== 0 ? av : bv;
        r[2 * i] = s[2 * i]!;
        r[2 * i + 1] = s[2 * i + 1]!;
      }
      writeComplex(out!, r);
    } else if (isInt(d) && d.size === 8) {
      const av = readBigints(a!);
      const bv = readBigints(b!);
      writeBigints(out!, av.map((x, i) => (cv[i] !== 0 ? x : bv[i]!)));
    } else {
      const av = readNumbers(a!);
      const bv = readNumbers(b!);
      const r = new Float64Array(cv.length);
      for (let i = 0; i < cv.length; i++) r[i] = cv[i] !== 0 ? av[i]! : bv[i]!;
      writeNumbers(out!, r);
    }
  },
  vjp([c], [g], argnums) {
    return argnums.map((i) =>
      i === 0 ? zerosLike(c!) : i === 1 ? ew.where(c!, g!, 0) : ew.where(c!, 0, g!),
    ) as MgArray[];
  },
  jvp([c], tangents, argnums, [y]) {
    let t: MgArray | null = null;
    argnums.forEach((i, k) => {
      if (i === 0) return;
      const part = i === 1 ? ew.where(c!, tangents[k]!, 0) : ew.where(c!, 0, tangents[k]!);
      t = t ? ew.add(t, part) : part;
    });
    return [t ?? zerosLike(y!)];
  },
  vmap: (inputs, axes) => vmapElementwise(Select, inputs, axes, null),
};
