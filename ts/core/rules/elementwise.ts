// Derivative and batching rules of the elementwise primitives (ts/core/primitives/elementwise.ts),
// written in ops: each backward rule reads as its derivation.
import type { MgArray } from "../array.ts";
import { complex64 } from "../dtype.ts";
import { defineRules, type Primitive } from "../primitive.ts";
import * as P from "../primitives/elementwise.ts";
import { zerosLike } from "../ops/creation.ts";
import * as ew from "../ops/elementwise.ts";
import { vmapElementwise } from "../../autograd/batching.ts";

type Rule1 = (x: MgArray, y: MgArray, g: MgArray) => MgArray;

interface UnaryRules {
  /** dL/dx given x, y = f(x) and the cotangent g. */
  vjp?: Rule1;
  /** The tangent of y given x, y and the tangent t (default: vjp's linear map, which is
   *  the same for elementwise functions of one real variable). */
  jvp?: Rule1;
  /** Complex-differentiable: for complex inputs the vjp multiplies by the conjugate derivative
   *  (MLX's convention: the vjp conjugates the jvp's multiplier). */
  holomorphic?: boolean;
}

/** Rules of an elementwise primitive of one input (every one is batched elementwise). */
function unary(prim: Primitive<null>, def: UnaryRules = {}): void {
  const vjp = def.vjp;
  const jvp = def.jvp ?? def.vjp;
  defineRules(prim, {
    vjp: vjp
      ? ([x], [g], _a, [y]) => [
          def.holomorphic && x!.dtype === complex64 ? ew.conjugate(vjp(x!, y!, ew.conjugate(g!))) : vjp(x!, y!, g!),
        ]
      : undefined,
    jvp: jvp ? ([x], [t], _a, [y]) => [jvp(x!, y!, t!)] : undefined,
    vmap: (inputs, axes) => vmapElementwise(prim, inputs, axes, null),
  });
}

// ---------------------------------------------------------------------------------------------
// Unary

// d|x| = sign(x) dx
unary(P.Abs, { vjp: (x, _y, g) => ew.multiply(g, ew.sign(x)) });
unary(P.Negative, { holomorphic: true, vjp: (_x, _y, g) => ew.negative(g) });
// piecewise constant: zero derivative
unary(P.Sign, { vjp: (x) => zerosLike(x) });
// d x² = 2x dx
unary(P.Square, { holomorphic: true, vjp: (x, _y, g) => ew.multiply(g, ew.multiply(x, 2)) });
// d √x = dx / (2√x)
unary(P.Sqrt, { holomorphic: true, vjp: (_x, y, g) => ew.divide(g, ew.multiply(y, 2)) });
// d x^{-1/2} = -½ x^{-3/2} dx = -½ y³ dx
unary(P.Rsqrt, { holomorphic: true, vjp: (_x, y, g) => ew.multiply(g, ew.multiply(ew.multiply(ew.multiply(y, y), y), -0.5)) });
unary(P.Exp, { holomorphic: true, vjp: (_x, y, g) => ew.multiply(g, y) });
// d(eˣ − 1) = eˣ dx = (y + 1) dx
unary(P.Expm1, { vjp: (_x, y, g) => ew.multiply(g, ew.add(y, 1)) });
unary(P.Log, { holomorphic: true, vjp: (x, _y, g) => ew.divide(g, x) });
unary(P.Log2, { holomorphic: true, vjp: (x, _y, g) => ew.divide(g, ew.multiply(x, Math.LN2)) });
unary(P.Log10, { holomorphic: true, vjp: (x, _y, g) => ew.divide(g, ew.multiply(x, Math.LN10)) });
unary(P.Log1p, { vjp: (x, _y, g) => ew.divide(g, ew.add(x, 1)) });
unary(P.Sin, { holomorphic: true, vjp: (x, _y, g) => ew.multiply(g, ew.cos(x)) });
unary(P.Cos, { holomorphic: true, vjp: (x, _y, g) => ew.negative(ew.multiply(g, ew.sin(x))) });
// d tan x = (1 + tan²x) dx
unary(P.Tan, { holomorphic: true, vjp: (_x, y, g) => ew.multiply(g, ew.add(ew.square(y), 1)) });
unary(P.ArcSin, { vjp: (x, _y, g) => ew.multiply(g, ew.rsqrt(ew.subtract(1, ew.square(x)))) });
unary(P.ArcCos, { vjp: (x, _y, g) => ew.negative(ew.multiply(g, ew.rsqrt(ew.subtract(1, ew.square(x))))) });
unary(P.ArcTan, { vjp: (x, _y, g) => ew.divide(g, ew.add(ew.square(x), 1)) });
unary(P.Sinh, { holomorphic: true, vjp: (x, _y, g) => ew.multiply(g, ew.cosh(x)) });
unary(P.Cosh, { holomorphic: true, vjp: (x, _y, g) => ew.multiply(g, ew.sinh(x)) });
// d tanh x = (1 − tanh²x) dx
unary(P.Tanh, { holomorphic: true, vjp: (_x, y, g) => ew.multiply(g, ew.subtract(1, ew.square(y))) });
unary(P.ArcSinh, { vjp: (x, _y, g) => ew.multiply(g, ew.rsqrt(ew.add(ew.square(x), 1))) });
unary(P.ArcCosh, { vjp: (x, _y, g) => ew.multiply(g, ew.rsqrt(ew.subtract(ew.square(x), 1))) });
unary(P.ArcTanh, { vjp: (x, _y, g) => ew.divide(g, ew.subtract(1, ew.square(x))) });
// Rounding: derivative zero almost everywhere.
unary(P.Floor, { vjp: (x) => zerosLike(x) });
unary(P.Ceil, { vjp: (x) => zerosLike(x) });
unary(P.Round, { vjp: (x) => zerosLike(x) });
// dσ = σ(1 − σ) dx
unary(P.Sigmoid, { vjp: (_x, y, g) => ew.multiply(g, ew.multiply(y, ew.subtract(1, y))) });
// d erf x = 2/√π e^{−x²} dx
unary(P.Erf, { vjp: (x, _y, g) => ew.multiply(g, ew.multiply(ew.exp(ew.negative(ew.square(x))), 2 / Math.sqrt(Math.PI))) });
// d erf⁻¹ y = √π/2 e^{(erf⁻¹ y)²} dy
unary(P.ErfInv, { vjp: (_x, y, g) => ew.multiply(g, ew.multiply(ew.exp(ew.square(y)), Math.sqrt(Math.PI) / 2)) });
unary(P.LogicalNot);
unary(P.BitwiseInvert);
unary(P.Conjugate, { vjp: (_x, _y, g) => ew.conjugate(g) });
unary(P.Real, { vjp: (_x, _y, g) => ew.astype(g, complex64), jvp: (_x, _y, t) => ew.real(t) });
// d imag(z) / dz applied to g: the cotangent enters the imaginary part, g·i
unary(P.Imag, { vjp: (_x, _y, g) => ew.multiply(ew.astype(g, complex64), { re: 0, im: 1 }), jvp: (_x, _y, t) => ew.imag(t) });

defineRules(P.StopGradient, {
  vjp: ([x]) => [zerosLike(x!)],
  jvp: ([x]) => [zerosLike(x!)],
  vmap: (inputs, axes) => vmapElementwise(P.StopGradient, inputs, axes, null),
});

defineRules(P.AsType, {
  // The cotangent is cast back to the primal's dtype.
  vjp: ([x], [g]) => [ew.astype(g!, x!.dtype)],
  jvp: (_p, [t], _a, [y]) => [ew.astype(t!, y!.dtype)],
  vmap: (inputs, axes, p) => vmapElementwise(P.AsType, inputs, axes, p),
});

// ---------------------------------------------------------------------------------------------
// Binary

type Rule2 = (a: MgArray, b: MgArray, y: MgArray, g: MgArray) => [MgArray | null, MgArray | null];

interface BinaryRules {
  /** Cotangents for (a, b) given the output y and its cotangent g. */
  vjp?: Rule2;
  /** Tangent of y given the tangents of a and b (null = zero tangent). Default: the vjp's
   *  multipliers applied to the tangents (the Jacobian of an elementwise map is diagonal). */
  jvp?: (a: MgArray, b: MgArray, y: MgArray, ta: MgArray | null, tb: MgArray | null) => MgArray;
  /** Complex-differentiable in each argument: complex vjps use the conjugate multipliers. */
  holomorphic?: boolean;
}

const sumTangents = (x: MgArray | null, y: MgArray | null, like: MgArray): MgArray =>
  x && y ? ew.add(x, y) : x ?? y ?? zerosLike(like);

/** Rules of an elementwise primitive of two same-shaped, same-dtype inputs. */
function binary(prim: Primitive<null>, def: BinaryRules = {}): void {
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
  defineRules(prim, {
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
  });
}

binary(P.Add, {
  vjp: (_a, _b, _y, g) => [g, g],
  jvp: (_a, _b, y, ta, tb) => sumTangents(ta, tb, y),
});
binary(P.Subtract, {
  vjp: (_a, _b, _y, g) => [g, ew.negative(g)],
  jvp: (_a, _b, y, ta, tb) => sumTangents(ta, tb ? ew.negative(tb) : null, y),
});
// d(ab) = b da + a db
binary(P.Multiply, {
  holomorphic: true,
  vjp: (a, b, _y, g) => [ew.multiply(g, b), ew.multiply(g, a)],
  jvp: (a, b, y, ta, tb) => sumTangents(ta ? ew.multiply(ta, b) : null, tb ? ew.multiply(a, tb) : null, y),
});
// d(a/b) = da/b − a/b² db
binary(P.Divide, {
  holomorphic: true,
  vjp: (_a, b, y, g) => [ew.divide(g, b), ew.negative(ew.divide(ew.multiply(g, y), b))],
  jvp: (_a, b, y, ta, tb) =>
    sumTangents(ta ? ew.divide(ta, b) : null, tb ? ew.negative(ew.divide(ew.multiply(tb, y), b)) : null, y),
});
binary(P.FloorDivide);
// a mod b = a − b⌊a/b⌋: d/da = 1, d/db = −⌊a/b⌋
binary(P.Remainder, { vjp: (a, b, _y, g) => [g, ew.negative(ew.multiply(g, ew.floor(ew.divide(a, b))))] });

defineRules(P.DivMod, {
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
  vmap: (inputs, axes) => vmapElementwise(P.DivMod, inputs, axes, null),
});

// d aᵇ = b aᵇ⁻¹ da + aᵇ log a db. The a-rule is written as b·a^(b−1) so that it is 0 at
// a = 0 for b > 1 (grad of x**1.5 at 0 is 0); the b-rule is 0 where aᵇ is 0 (MLX's "0 · log 0
// → 0"), so at a = 0 it is 0 for b > 0 but −inf for b = 0, as in MLX.
binary(P.Power, {
  holomorphic: true,
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
// MLX's masks: a gets g where a > b, b where a <= b, so a tie sends all of g to b (and a NaN
// pair sends it to neither).
binary(P.Maximum, { vjp: (a, b, _y, g) => [ew.multiply(g, ew.greater(a, b)), ew.multiply(g, ew.lessEqual(a, b))] });
// As Maximum, mirrored: a where a < b, b where a >= b.
binary(P.Minimum, { vjp: (a, b, _y, g) => [ew.multiply(g, ew.less(a, b)), ew.multiply(g, ew.greaterEqual(a, b))] });
// ∂/∂a log(eᵃ + eᵇ) = eᵃ⁻ʸ
binary(P.LogAddExp, {
  holomorphic: true,
  vjp: (a, b, y, g) => [ew.multiply(g, ew.exp(ew.subtract(a, y))), ew.multiply(g, ew.exp(ew.subtract(b, y)))],
  jvp: (a, b, y, ta, tb) =>
    sumTangents(
      ta ? ew.multiply(ta, ew.exp(ew.subtract(a, y))) : null,
      tb ? ew.multiply(tb, ew.exp(ew.subtract(b, y))) : null,
      y,
    ),
});
// atan2(a, b): ∂/∂a = b/(a²+b²), ∂/∂b = −a/(a²+b²)
binary(P.ArcTan2, {
  vjp: (a, b, _y, g) => {
    const den = ew.add(ew.square(a), ew.square(b));
    return [ew.divide(ew.multiply(g, b), den), ew.negative(ew.divide(ew.multiply(g, a), den))];
  },
});
// Comparisons, logical and bitwise ops: integer or bool results, no derivative.
for (const p of [
  P.Equal, P.EqualNan, P.NotEqual, P.Greater, P.GreaterEqual, P.Less, P.LessEqual, P.LogicalAnd, P.LogicalOr,
  P.BitwiseAnd, P.BitwiseOr, P.BitwiseXor, P.LeftShift, P.RightShift,
]) binary(p);

// ---------------------------------------------------------------------------------------------
// Ternary

defineRules(P.Select, {
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
  vmap: (inputs, axes) => vmapElementwise(P.Select, inputs, axes, null),
});
