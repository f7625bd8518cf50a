// CPU kernels of the elementwise primitives (ts/core/primitives/elementwise.ts): read inputs as
// flat values in their JS domain, apply a scalar function, store with the output dtype's rounding.
import type { MgArray } from "../../core/array.ts";
import { bool_, complex64, type Dtype, float64, floatToInteger, is64BitInteger, roundToDtype } from "../../core/dtype.ts";
import type { Primitive } from "../../core/primitive.ts";
import * as P from "../../core/primitives/elementwise.ts";
import {
  cdiv, cexp, clog, cmul, csqrt, erf, erfinv, floorDivBig, floorDivInt, floorMod, floorModBig, floorModInt, logaddexp,
  powBig, powC, roundHalfEven, sigmoid,
} from "./math.ts";
import { registerCpu } from "./registry.ts";
import {
  readBigints, readComplex, readNumbers, writeBigints, writeComplex, writeNumbers,
} from "./values.ts";

export type NumFn1 = (x: number) => number;
export type BigFn1 = (x: bigint) => bigint;
export type CplxFn1 = (re: number, im: number) => [number, number];
export type NumFn2 = (x: number, y: number) => number;
export type BigFn2 = (x: bigint, y: bigint) => bigint;
export type CplxFn2 = (ar: number, ai: number, br: number, bi: number) => [number, number];

export interface ScalarFns1 {
  num?: NumFn1;
  big?: BigFn1;
  cplx?: CplxFn1;
  /** Integer-domain variant for 32-bit-and-narrower ints when `num` is not exact (e.g. multiply). */
  int?: (x: number, dtype: Dtype) => number;
}

export interface ScalarFns2 {
  num?: NumFn2;
  big?: BigFn2;
  cplx?: CplxFn2;
  /** For 32-bit-and-narrower integer dtypes when float64 arithmetic is not exact. */
  int?: (x: number, y: number, dtype: Dtype) => number;
  /** Comparisons on complex values produce a number (0/1), not a complex. */
  cplxToNum?: (ar: number, ai: number, br: number, bi: number) => number;
}

function unsupported(op: string, d: Dtype): Error {
  return new Error(`[${op}] not supported for ${d.name}.`);
}

export function cpuUnary(op: string, fns: ScalarFns1, x: MgArray, out: MgArray): void {
  const d = x.dtype;
  if (d === complex64) {
    if (!fns.cplx) throw unsupported(op, d);
    const v = readComplex(x);
    const n = x.size;
    if (out.dtype === complex64) {
      const r = new Float64Array(2 * n);
      for (let i = 0; i < n; i++) {
        const [re, im] = fns.cplx(v[2 * i]!, v[2 * i + 1]!);
        r[2 * i] = re;
        r[2 * i + 1] = im;
      }
      writeComplex(out, r);
    } else {
      const r = new Float64Array(n);
      for (let i = 0; i < n; i++) r[i] = fns.cplx(v[2 * i]!, v[2 * i + 1]!)[0];
      writeNumbers(out, r);
    }
    return;
  }
  if (is64BitInteger(d) && fns.big) {
    const v = readBigints(x);
    const fn = fns.big;
    writeBigints(out, v.map((e) => fn(e)));
    return;
  }
  const v = readNumbers(x);
  const n = v.length;
  const r = new Float64Array(n);
  if ((d.kind === "i" || d.kind === "u" || d.kind === "b") && fns.int) {
    const fn = fns.int;
    for (let i = 0; i < n; i++) r[i] = fn(v[i]!, d);
  } else {
    if (!fns.num) throw unsupported(op, d);
    const fn = fns.num;
    for (let i = 0; i < n; i++) r[i] = fn(v[i]!);
  }
  writeNumbers(out, r);
}

/** Inputs have equal shapes (ops broadcast them first) and equal dtypes. */
export function cpuBinary(op: string, fns: ScalarFns2, a: MgArray, b: MgArray, out: MgArray): void {
  const d = a.dtype;
  const n = out.size;
  if (d === complex64) {
    const va = readComplex(a);
    const vb = readComplex(b);
    if (out.dtype === complex64) {
      if (!fns.cplx) throw unsupported(op, d);
      const r = new Float64Array(2 * n);
      for (let i = 0; i < n; i++) {
        const [re, im] = fns.cplx(va[2 * i]!, va[2 * i + 1]!, vb[2 * i]!, vb[2 * i + 1]!);
        r[2 * i] = re;
        r[2 * i + 1] = im;
      }
      writeComplex(out, r);
    } else {
      if (!fns.cplxToNum) throw unsupported(op, d);
      const r = new Float64Array(n);
      for (let i = 0; i < n; i++) r[i] = fns.cplxToNum(va[2 * i]!, va[2 * i + 1]!, vb[2 * i]!, vb[2 * i + 1]!);
      writeNumbers(out, r);
    }
    return;
  }
  if (is64BitInteger(d)) {
    if (!fns.big) throw unsupported(op, d);
    const va = readBigints(a);
    const vb = readBigints(b);
    const fn = fns.big;
    const r = new Array<bigint>(n);
    for (let i = 0; i < n; i++) r[i] = fn(va[i]!, vb[i]!);
    writeBigints(out, r);
    return;
  }
  const va = readNumbers(a);
  const vb = readNumbers(b);
  const r = new Float64Array(n);
  // bool is an integer type here (0 and 1), as in C: remainder(True, False) is True (x % 0 = x)
  if ((d.kind === "i" || d.kind === "u" || d.kind === "b") && fns.int) {
    const fn = fns.int;
    for (let i = 0; i < n; i++) r[i] = fn(va[i]!, vb[i]!, d);
  } else {
    if (!fns.num) throw unsupported(op, d);
    const fn = fns.num;
    for (let i = 0; i < n; i++) r[i] = fn(va[i]!, vb[i]!);
  }
  writeNumbers(out, r);
}

// ---------------------------------------------------------------------------------------------
// Registrations

const unary = (prim: Primitive<null>, fns: ScalarFns1) => registerCpu(prim, ([x], [out]) => cpuUnary(prim.name, fns, x!, out!));
const binary = (prim: Primitive<null>, fns: ScalarFns2) => registerCpu(prim, ([a, b], [out]) => cpuBinary(prim.name, fns, a!, b!, out!));
const isInt = (d: Dtype) => d.kind === "i" || d.kind === "u";

unary(P.Abs, { num: Math.abs, big: (x) => (x < 0n ? -x : x), cplx: (re, im) => [Math.hypot(re, im), 0] });
unary(P.Negative, { num: (x) => -x, big: (x) => -x, cplx: (re, im) => [-re, -im] });
unary(P.Sign, {
  // MLX's (x > 0) - (x < 0): NaN and -0 give +0.
  num: (x) => (x > 0 ? 1 : x < 0 ? -1 : 0),
  big: (x) => (x > 0n ? 1n : x < 0n ? -1n : 0n),
  cplx: (re, im) => {
    const m = Math.hypot(re, im);
    return m === 0 ? [0, 0] : [re / m, im / m];
  },
});
unary(P.Square, { num: (x) => x * x, int: (x, d) => (d.size === 4 ? Math.imul(x, x) : x * x), big: (x) => x * x, cplx: (re, im) => cmul(re, im, re, im) });
unary(P.Sqrt, { num: Math.sqrt, cplx: csqrt });
unary(P.Rsqrt, {
  num: (x) => 1 / Math.sqrt(x),
  cplx: (re, im) => {
    const [r, i] = csqrt(re, im);
    return cdiv(1, 0, r, i);
  },
});
unary(P.Exp, { num: Math.exp, cplx: cexp });
unary(P.Expm1, { num: Math.expm1 });
unary(P.Log, { num: Math.log, cplx: clog });
unary(P.Log2, {
  num: Math.log2,
  cplx: (re, im) => {
    const [r, i] = clog(re, im);
    return [r / Math.LN2, i / Math.LN2];
  },
});
unary(P.Log10, {
  num: Math.log10,
  cplx: (re, im) => {
    const [r, i] = clog(re, im);
    return [r / Math.LN10, i / Math.LN10];
  },
});
unary(P.Log1p, { num: Math.log1p });
unary(P.Sin, { num: Math.sin, cplx: (re, im) => [Math.sin(re) * Math.cosh(im), Math.cos(re) * Math.sinh(im)] });
unary(P.Cos, { num: Math.cos, cplx: (re, im) => [Math.cos(re) * Math.cosh(im), -Math.sin(re) * Math.sinh(im)] });
unary(P.Tan, {
  num: Math.tan,
  cplx: (re, im) => {
    // tan z = sin z / cos z
    const s: [number, number] = [Math.sin(re) * Math.cosh(im), Math.cos(re) * Math.sinh(im)];
    const c: [number, number] = [Math.cos(re) * Math.cosh(im), -Math.sin(re) * Math.sinh(im)];
    return cdiv(s[0], s[1], c[0], c[1]);
  },
});
unary(P.ArcSin, { num: Math.asin });
unary(P.ArcCos, { num: Math.acos });
unary(P.ArcTan, { num: Math.atan });
unary(P.Sinh, { num: Math.sinh, cplx: (re, im) => [Math.sinh(re) * Math.cos(im), Math.cosh(re) * Math.sin(im)] });
unary(P.Cosh, { num: Math.cosh, cplx: (re, im) => [Math.cosh(re) * Math.cos(im), Math.sinh(re) * Math.sin(im)] });
unary(P.Tanh, {
  num: Math.tanh,
  cplx: (re, im) => {
    const s: [number, number] = [Math.sinh(re) * Math.cos(im), Math.cosh(re) * Math.sin(im)];
    const c: [number, number] = [Math.cosh(re) * Math.cos(im), Math.sinh(re) * Math.sin(im)];
    return cdiv(s[0], s[1], c[0], c[1]);
  },
});
unary(P.ArcSinh, { num: Math.asinh });
unary(P.ArcCosh, { num: Math.acosh });
unary(P.ArcTanh, { num: Math.atanh });
// Rounding: integers pass through unchanged.
unary(P.Floor, { num: Math.floor, big: (x) => x });
unary(P.Ceil, { num: Math.ceil, big: (x) => x });
unary(P.Round, { num: roundHalfEven, big: (x) => x, cplx: (re, im) => [roundHalfEven(re), roundHalfEven(im)] });
unary(P.Sigmoid, { num: sigmoid });
unary(P.Erf, { num: erf });
unary(P.ErfInv, { num: erfinv });
unary(P.LogicalNot, { num: (x) => (x === 0 ? 1 : 0) });
unary(P.BitwiseInvert, { int: (x) => ~x, num: (x) => ~x, big: (x) => ~x });
unary(P.Conjugate, { num: (x) => x, cplx: (re, im) => [re, -im] });
unary(P.Real, { num: (x) => x, cplx: (re) => [re, 0] });
unary(P.Imag, { num: () => 0, cplx: (_re, im) => [im, 0] });

const oddScratch = new Float64Array(1);
const oddBits = new BigUint64Array(oddScratch.buffer);

/** The double nearest to `b` when exact, else the neighbouring double (of the two around `b`)
 *  whose last bit is odd: rounding that to float32/16 rounds `b` correctly (round-to-odd). */
function roundToOddDouble(b: bigint): number {
  const d = Number(b);
  const back = BigInt(d);
  if (back === b) return d;
  oddScratch[0] = d;
  if ((oddBits[0]! & 1n) === 0n) {
    // move one ulp toward b: down in magnitude when d overshoots b's magnitude
    const shrink = back > b === d > 0;
    oddBits[0] = shrink ? oddBits[0]! - 1n : oddBits[0]! + 1n;
  }
  return oddScratch[0]!;
}

function nonzeroComplex(x: MgArray): Float64Array {
  const v = readComplex(x);
  const r = new Float64Array(x.size);
  for (let i = 0; i < r.length; i++) r[i] = v[2 * i] !== 0 || v[2 * i + 1] !== 0 ? 1 : 0;
  return r;
}

registerCpu(P.AsType, ([x], [out]) => {
  const from = x!.dtype;
  const to = out!.dtype;
  if (to === complex64) writeComplex(out!, readComplex(x!));
  else if (to === bool_) writeNumbers(out!, from === complex64 ? nonzeroComplex(x!) : readNumbers(x!).map((v) => (v !== 0 ? 1 : 0)));
  else if (isInt(from) && isInt(to)) writeBigints(out!, readBigints(x!));
  else if (isInt(to)) {
    // float (or complex's real part) → integer: one rule on every device (floatToInteger)
    const v = readNumbers(x!);
    if (to.size === 8) writeBigints(out!, Array.from(v, (e) => floatToInteger(e, to) as bigint));
    else writeNumbers(out!, v.map((e) => floatToInteger(e, to) as number));
  } else if (is64BitInteger(from) && to !== float64) {
    // Rounded once to the target, as a C cast does: via a round-to-odd double, since rounding
    // to the nearest double first could land on a tie of the narrower type.
    writeNumbers(out!, Float64Array.from(readBigints(x!), roundToOddDouble));
  } else writeNumbers(out!, readNumbers(x!));
});

binary(P.Add, { num: (x, y) => x + y, big: (x, y) => x + y, cplx: (ar, ai, br, bi) => [ar + br, ai + bi] });
binary(P.Subtract, { num: (x, y) => x - y, big: (x, y) => x - y, cplx: (ar, ai, br, bi) => [ar - br, ai - bi] });
binary(P.Multiply, { num: (x, y) => x * y, int: (x, y, d) => (d.size === 4 ? Math.imul(x, y) : x * y), big: (x, y) => x * y, cplx: cmul });
binary(P.Divide, { num: (x, y) => x / y, cplx: cdiv });
binary(P.FloorDivide, { int: floorDivInt, num: floorDivInt, big: floorDivBig });
binary(P.Remainder, { num: floorMod, int: floorModInt, big: floorModBig });

registerCpu(P.DivMod, ([a, b], [q, r]) => {
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
  const integer = isInt(d) || d === bool_;
  for (let i = 0; i < va.length; i++) {
    if (integer) {
      qv[i] = floorDivInt(va[i]!, vb[i]!);
      rv[i] = floorModInt(va[i]!, vb[i]!);
    } else {
      // floor of the quotient as the dtype holds it (a quotient that underflows is ±0, not ±tiny)
      qv[i] = Math.floor(roundToDtype(va[i]! / vb[i]!, d));
      rv[i] = floorMod(va[i]!, vb[i]!);
    }
  }
  writeNumbers(q!, qv);
  writeNumbers(r!, rv);
});

binary(P.Power, {
  num: powC,
  int: (x, y, d) => Number(BigInt.asIntN(d.size * 8, powBig(BigInt(x), BigInt(y)))),
  big: powBig,
  cplx: (ar, ai, br, bi) => {
    if (ar === 0 && ai === 0) return br === 0 && bi === 0 ? [1, 0] : [0, 0];
    const [lr, li] = clog(ar, ai);
    const [er, ei] = cmul(lr, li, br, bi);
    return cexp(er, ei);
  },
});

// NaN propagates from either side (maximum(nan, 0) is nan).
// complex64 is ordered lexicographically, real part first (MLX's complex64_t operators).
const cgt = (ar: number, ai: number, br: number, bi: number) => ar > br || (ar === br && ai > bi);
const cge = (ar: number, ai: number, br: number, bi: number) => ar > br || (ar === br && ai >= bi);
const cnan = (re: number, im: number) => re !== re || im !== im;
const maxNum = (x: number, y: number) => (x !== x ? x : x > y ? x : y);
const minNum = (x: number, y: number) => (x !== x ? x : x < y ? x : y);

binary(P.Maximum, {
  num: maxNum,
  big: (x, y) => (x > y ? x : y),
  // As for floats, a NaN first operand wins (MLX's Metal rule).
  cplx: (ar, ai, br, bi) => (cnan(ar, ai) || cgt(ar, ai, br, bi) ? [ar, ai] : [br, bi]),
});
binary(P.Minimum, {
  num: minNum,
  big: (x, y) => (x < y ? x : y),
  cplx: (ar, ai, br, bi) => (cnan(ar, ai) || cgt(br, bi, ar, ai) ? [ar, ai] : [br, bi]),
});
binary(P.LogAddExp, {
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
});
binary(P.ArcTan2, { num: Math.atan2 });

const cmp = (
  prim: Primitive<null>,
  f: (x: number, y: number) => boolean,
  fb: (x: bigint, y: bigint) => boolean,
  cplx: (ar: number, ai: number, br: number, bi: number) => boolean,
) =>
  binary(prim, {
    num: (x, y) => (f(x, y) ? 1 : 0),
    big: (x, y) => (fb(x, y) ? 1n : 0n),
    cplxToNum: (ar, ai, br, bi) => (cplx(ar, ai, br, bi) ? 1 : 0),
  });

cmp(P.Equal, (x, y) => x === y, (x, y) => x === y, (ar, ai, br, bi) => ar === br && ai === bi);
cmp(P.EqualNan, (x, y) => x === y || (x !== x && y !== y), (x, y) => x === y,
  (ar, ai, br, bi) => (ar === br || (ar !== ar && br !== br)) && (ai === bi || (ai !== ai && bi !== bi)));
cmp(P.NotEqual, (x, y) => x !== y, (x, y) => x !== y, (ar, ai, br, bi) => ar !== br || ai !== bi);
cmp(P.Greater, (x, y) => x > y, (x, y) => x > y, cgt);
cmp(P.GreaterEqual, (x, y) => x >= y, (x, y) => x >= y, cge);
cmp(P.Less, (x, y) => x < y, (x, y) => x < y, (ar, ai, br, bi) => cgt(br, bi, ar, ai));
cmp(P.LessEqual, (x, y) => x <= y, (x, y) => x <= y, (ar, ai, br, bi) => cge(br, bi, ar, ai));

binary(P.LogicalAnd, { num: (x, y) => (x !== 0 && y !== 0 ? 1 : 0) });
binary(P.LogicalOr, { num: (x, y) => (x !== 0 || y !== 0 ? 1 : 0) });

// Bitwise ops on ≤32-bit integers use JS's 32-bit operators; the dtype store truncates/wraps
// exactly as C does. 64-bit integers use BigInt.
binary(P.BitwiseAnd, { num: (x, y) => x & y, big: (x, y) => x & y });
binary(P.BitwiseOr, { num: (x, y) => x | y, big: (x, y) => x | y });
binary(P.BitwiseXor, { num: (x, y) => x ^ y, big: (x, y) => x ^ y });
// Shift counts are taken modulo the width the operand is promoted to (32 bits for ≤32-bit types,
// 64 for 64-bit ones), as x86-64 and arm64 shifters do; JS's 32-bit shifts already mask by 31.
// C leaves counts ≥ the width or negative undefined (docs/corner-cases.md).
binary(P.LeftShift, { num: (x, y) => x << y, big: (x, y) => x << (y & 63n) });
binary(P.RightShift, {
  int: (x, y, d) => (d.kind === "u" ? x >>> y : x >> y),
  num: (x, y) => x >> y,
  big: (x, y) => x >> (y & 63n),
});

registerCpu(P.Select, ([c, a, b], [out]) => {
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
});
