// Activations, as mlx.nn: each a function (MLX's formula, op for op, so float32 results round the
// same way) and a module calling it.
import type { MgArray } from "../core/array.ts";
import { float32 } from "../core/dtype.ts";
import { full } from "../core/ops/creation.ts";
import {
  abs, add, divide, erf, exp, greater, greaterEqual, logaddexp, maximum, minimum, multiply, negative, power, sigmoid as mgSigmoid,
  sign, square, stopGradient, subtract, tanh as mgTanh, where,
} from "../core/ops/elementwise.ts";
import type { ArrayInput } from "../core/ops/convert.ts";
import { max } from "../core/ops/reduce.ts";
import { logsumexp, softmax as mgSoftmax } from "../core/ops/softmax.ts";
import { split } from "../core/ops/join.ts";
import { resolveOptions, type Trailing } from "../core/options.ts";
import { libraryForward, Module } from "./module.ts";

/**
 * 1/(1 + e⁻ˣ), as nn.sigmoid.
 * @example
 * mg.nn.sigmoid(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function sigmoid(x: ArrayInput): MgArray {
  return mgSigmoid(x);
}

/**
 * Max(x, 0), as nn.relu.
 * @example
 * mg.nn.relu(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function relu(x: ArrayInput): MgArray {
  return maximum(x, 0);
}

/**
 * relu(x)².
 * @example
 * mg.nn.relu2(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function relu2(x: ArrayInput): MgArray {
  return square(maximum(x, 0));
}

/**
 * Min(max(x, 0), 6), as nn.relu6.
 * @example
 * mg.nn.relu6(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function relu6(x: ArrayInput): MgArray {
  return minimum(maximum(x, 0), 6.0);
}

/**
 * X for x > 0, negativeSlope·x otherwise, as nn.leaky_relu.
 * @example
 * mg.nn.leakyRelu(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function leakyRelu(x: ArrayInput, ...rest: Trailing<[negativeSlope: number], { negativeSlope?: number }>): MgArray {
  const { negativeSlope } = resolveOptions("leaky_relu", rest, { negativeSlope: 0.01 });
  return maximum(multiply(negativeSlope, x), x);
}

/**
 * X − logsumexp(x) along `axis`, as nn.log_softmax.
 * @example
 * mg.nn.logSoftmax(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function logSoftmax(x: ArrayInput, ...rest: Trailing<[axis: number], { axis?: number }>): MgArray {
  const { axis } = resolveOptions("log_softmax", rest, { axis: -1 });
  // Shift by the max first (MLX does the same): the logsumexp of a large x would round away the
  // normalizer before the subtraction.
  const shifted = subtract(x, stopGradient(max(x, axis, true)));
  return subtract(shifted, logsumexp(shifted, axis, true));
}

/**
 * X for x > 0, α·(eˣ − 1) otherwise, as nn.elu.
 * @example
 * mg.nn.elu(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function elu(x: ArrayInput, ...rest: Trailing<[alpha: number], { alpha?: number }>): MgArray {
  const { alpha } = resolveOptions("elu", rest, { alpha: 1.0 });
  return where(greater(x, 0), x, multiply(alpha, subtract(exp(x), 1)));
}

/**
 * The softmax along `axis`, as nn.softmax.
 * @example
 * mg.nn.softmax(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function softmax(x: ArrayInput, ...rest: Trailing<[axis: number], { axis?: number }>): MgArray {
  const { axis } = resolveOptions("softmax", rest, { axis: -1 });
  return mgSoftmax(x, axis);
}

/**
 * log(1 + eˣ).
 * @example
 * mg.nn.softplus(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function softplus(x: ArrayInput): MgArray {
  return logaddexp(x, 0);
}

/**
 * X/(1 + |x|), as nn.softsign.
 * @example
 * mg.nn.softsign(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function softsign(x: ArrayInput): MgArray {
  return divide(x, add(1, abs(x)));
}

/**
 * X − λ·sign(x) where |x| > λ, else 0, as nn.softshrink.
 * @example
 * mg.nn.softshrink(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function softshrink(x: ArrayInput, ...rest: Trailing<[lambd: number], { lambd?: number }>): MgArray {
  const { lambd } = resolveOptions("softshrink", rest, { lambd: 0.5 });
  return where(greater(abs(x), lambd), subtract(x, multiply(sign(x), lambd)), 0);
}

/**
 * Max(x, 0) + min(0, α·(exp(x/α) − 1)), as nn.celu.
 * @example
 * mg.nn.celu(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function celu(x: ArrayInput, ...rest: Trailing<[alpha: number], { alpha?: number }>): MgArray {
  const { alpha } = resolveOptions("celu", rest, { alpha: 1.0 });
  return add(maximum(x, 0.0), multiply(alpha, subtract(exp(divide(minimum(x, 0.0), alpha)), 1)));
}

/**
 * X·sigmoid(x), as nn.silu.
 * @example
 * mg.nn.silu(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function silu(x: ArrayInput): MgArray {
  return multiply(x, mgSigmoid(x));
}

/**
 * Log(sigmoid(x)), computed without overflow, as nn.log_sigmoid.
 * @example
 * mg.nn.logSigmoid(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function logSigmoid(x: ArrayInput): MgArray {
  return negative(softplus(negative(x)));
}

/**
 * x·Φ(x) with the exact Gaussian CDF.
 * @example
 * mg.nn.gelu(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function gelu(x: ArrayInput): MgArray {
  return divide(multiply(x, add(1, erf(divide(x, Math.sqrt(2))))), 2);
}

/**
 * The tanh approximation of gelu.
 * @example
 * mg.nn.geluApprox(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function geluApprox(x: ArrayInput): MgArray {
  const inner = multiply(Math.sqrt(2 / Math.PI), add(x, multiply(0.044715, power(x, 3))));
  return multiply(multiply(0.5, x), add(1, mgTanh(inner)));
}

/**
 * x·σ(1.702x).
 * @example
 * mg.nn.geluFastApprox(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function geluFastApprox(x: ArrayInput): MgArray {
  return multiply(x, mgSigmoid(multiply(1.702, x)));
}

/**
 * a·σ(b) for the two halves a, b of x along `axis`.
 * @example
 * mg.nn.glu(mg.array([1, 2, 0, 0], mg.float32))
 */
export function glu(x: ArrayInput, ...rest: Trailing<[axis: number], { axis?: number }>): MgArray {
  const { axis } = resolveOptions("glu", rest, { axis: -1 });
  const [a, b] = split(x, 2, axis) as [MgArray, MgArray];
  return multiply(a, mgSigmoid(b));
}

/**
 * 1 where x ≥ threshold, else 0 (int32, as MLX).
 * @example
 * mg.nn.step(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function step(x: ArrayInput, ...rest: Trailing<[threshold: number], { threshold?: number }>): MgArray {
  const { threshold } = resolveOptions("step", rest, { threshold: 0.0 });
  return where(greaterEqual(x, threshold), 1, 0);
}

/**
 * The scaled ELU with MLX's constants, as nn.selu.
 * @example
 * mg.nn.selu(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function selu(x: ArrayInput): MgArray {
  return multiply(elu(x, 1.67326), 1.0507);
}

/**
 * x for x > 0, α·x otherwise, with a learned α, as nn.prelu.
 * @example
 * mg.nn.prelu(mg.array([-2, -0.5, 0, 1.5], mg.float32), mg.array([0.25], mg.float32))
 */
export function prelu(x: ArrayInput, alpha: ArrayInput): MgArray {
  return add(maximum(0, x), multiply(alpha, minimum(0, x)));
}

/**
 * X·tanh(softplus(x)), as nn.mish.
 * @example
 * mg.nn.mish(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function mish(x: ArrayInput): MgArray {
  return multiply(x, mgTanh(softplus(x)));
}

/**
 * X·relu6(x + 3)/6, as nn.hardswish.
 * @example
 * mg.nn.hardswish(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function hardswish(x: ArrayInput): MgArray {
  const maxX3 = maximum(add(x, 3), 0);
  return divide(multiply(x, minimum(maxX3, 6)), 6);
}

/**
 * X clipped to [minVal, maxVal], as nn.hard_tanh.
 * @example
 * mg.nn.hardTanh(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function hardTanh(x: ArrayInput, ...rest: Trailing<[minVal: number, maxVal: number], { minVal?: number; maxVal?: number }>): MgArray {
  const { minVal, maxVal } = resolveOptions("hard_tanh", rest, { minVal: -1.0, maxVal: 1.0 });
  return minimum(maximum(x, minVal), maxVal);
}

/**
 * X where |x| > λ, else 0, as nn.hard_shrink.
 * @example
 * mg.nn.hardShrink(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function hardShrink(x: ArrayInput, ...rest: Trailing<[lambd: number], { lambd?: number }>): MgArray {
  const { lambd } = resolveOptions("hard_shrink", rest, { lambd: 0.5 });
  return where(greater(abs(x), lambd), x, 0);
}

/**
 * Softmax(−x) along `axis`, as nn.softmin.
 * @example
 * mg.nn.softmin(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function softmin(x: ArrayInput, ...rest: Trailing<[axis: number], { axis?: number }>): MgArray {
  const { axis } = resolveOptions("softmin", rest, { axis: -1 });
  return mgSoftmax(negative(x), axis);
}

/**
 * The hyperbolic tangent, as nn.tanh.
 * @example
 * mg.nn.tanh(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export function tanh(x: ArrayInput): MgArray {
  return mgTanh(x);
}

// ---- modules ----

/** A module applying a parameterless activation. */
function activationModule(name: string, f: (x: ArrayInput) => MgArray) {
  const cls = class extends Module {
    override forward(x: ArrayInput): MgArray {
      return f(x);
    }
  };
  Object.defineProperty(cls, "name", { value: name });
  return cls;
}

/**
 * 1/(1 + e⁻ˣ), as a module.
 * @example
 * new mg.nn.Sigmoid().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const Sigmoid = activationModule("Sigmoid", sigmoid);
/**
 * X·tanh(softplus(x)), as a module.
 * @example
 * new mg.nn.Mish().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const Mish = activationModule("Mish", mish);
/**
 * Max(x, as a module.
 * @example
 * new mg.nn.ReLU().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const ReLU = activationModule("ReLU", relu);
/**
 * relu(x)², as a module.
 * @example
 * new mg.nn.ReLU2().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const ReLU2 = activationModule("ReLU2", relu2);
/**
 * Min(max(x, as a module.
 * @example
 * new mg.nn.ReLU6().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const ReLU6 = activationModule("ReLU6", relu6);
/**
 * The softmax along `axis`, as a module.
 * @example
 * new mg.nn.Softmax().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const Softmax = activationModule("Softmax", (x) => softmax(x));
/**
 * log(1 + eˣ), as a module.
 * @example
 * new mg.nn.Softplus().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const Softplus = activationModule("Softplus", softplus);
/**
 * X/(1 + |x|), as a module.
 * @example
 * new mg.nn.Softsign().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const Softsign = activationModule("Softsign", softsign);
/**
 * X·sigmoid(x), as a module.
 * @example
 * new mg.nn.SiLU().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const SiLU = activationModule("SiLU", silu);
/**
 * X − logsumexp(x) along `axis`, as a module.
 * @example
 * new mg.nn.LogSoftmax().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const LogSoftmax = activationModule("LogSoftmax", (x) => logSoftmax(x));
/**
 * Log(sigmoid(x)), as a module.
 * @example
 * new mg.nn.LogSigmoid().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const LogSigmoid = activationModule("LogSigmoid", logSigmoid);
/**
 * The hyperbolic tangent, as a module.
 * @example
 * new mg.nn.Tanh().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const Tanh = activationModule("Tanh", tanh);
/**
 * X·relu6(x + 3)/6, as a module.
 * @example
 * new mg.nn.Hardswish().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const Hardswish = activationModule("Hardswish", hardswish);
/**
 * The scaled ELU with MLX's constants, as a module.
 * @example
 * new mg.nn.SELU().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const SELU = activationModule("SELU", selu);
/**
 * X clipped to [minVal, as a module.
 * @example
 * new mg.nn.HardTanh().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const HardTanh = activationModule("HardTanh", (x) => hardTanh(x));
/**
 * Softmax(−x) along `axis`, as a module.
 * @example
 * new mg.nn.Softmin().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export const Softmin = activationModule("Softmin", (x) => softmin(x));

/**
 * The gated linear unit a·sigmoid(b) over halves of `axis`, as a module.
 * @example
 * new mg.nn.GLU().forward(mg.array([1, 2, 0, 0], mg.float32))
 */
export class GLU extends Module {
  readonly axis: number;
  constructor(...rest: Trailing<[axis: number], { axis?: number }>) {
    super();
    this.axis = resolveOptions("GLU", rest, { axis: -1 }).axis;
  }
  override forward(x: ArrayInput): MgArray {
    return glu(x, this.axis);
  }
}

/**
 * X for x > 0, as a module.
 * @example
 * new mg.nn.LeakyReLU().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export class LeakyReLU extends Module {
  readonly negativeSlope: number;
  constructor(...rest: Trailing<[negativeSlope: number], { negativeSlope?: number }>) {
    super();
    this.negativeSlope = resolveOptions("LeakyReLU", rest, { negativeSlope: 1e-2 }).negativeSlope;
  }
  override forward(x: ArrayInput): MgArray {
    return leakyRelu(x, this.negativeSlope);
  }
}

/**
 * X for x > 0, as a module.
 * @example
 * new mg.nn.ELU().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export class ELU extends Module {
  readonly alpha: number;
  constructor(...rest: Trailing<[alpha: number], { alpha?: number }>) {
    super();
    this.alpha = resolveOptions("ELU", rest, { alpha: 1.0 }).alpha;
  }
  override forward(x: ArrayInput): MgArray {
    return elu(x, this.alpha);
  }
}

/**
 * Max(x, as a module.
 * @example
 * new mg.nn.CELU().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export class CELU extends Module {
  readonly alpha: number;
  constructor(...rest: Trailing<[alpha: number], { alpha?: number }>) {
    super();
    this.alpha = resolveOptions("CELU", rest, { alpha: 1.0 }).alpha;
  }
  override forward(x: ArrayInput): MgArray {
    return celu(x, this.alpha);
  }
}

/**
 * x − λ·sign(x) where |x| > λ, else 0, as a module.
 * @example
 * new mg.nn.Softshrink().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export class Softshrink extends Module {
  readonly lambd: number;
  constructor(...rest: Trailing<[lambd: number], { lambd?: number }>) {
    super();
    this.lambd = resolveOptions("Softshrink", rest, { lambd: 0.5 }).lambd;
  }
  override forward(x: ArrayInput): MgArray {
    return softshrink(x, this.lambd);
  }
}

/**
 * X where |x| > λ, as a module.
 * @example
 * new mg.nn.HardShrink().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export class HardShrink extends Module {
  readonly lambd: number;
  constructor(...rest: Trailing<[lambd: number], { lambd?: number }>) {
    super();
    this.lambd = resolveOptions("HardShrink", rest, { lambd: 0.5 }).lambd;
  }
  override forward(x: ArrayInput): MgArray {
    return hardShrink(x, this.lambd);
  }
}

/**
 * 1 where x > threshold, else 0, as a module.
 * @example
 * new mg.nn.Step().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export class Step extends Module {
  readonly threshold: number;
  constructor(...rest: Trailing<[threshold: number], { threshold?: number }>) {
    super();
    this.threshold = resolveOptions("Step", rest, { threshold: 0.0 }).threshold;
  }
  override forward(x: ArrayInput): MgArray {
    return step(x, this.threshold);
  }
}

/**
 * prelu with a learned slope `weight` of shape (numParameters,), initialised to `init`.
 * @example
 * new mg.nn.PReLU().forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export class PReLU extends Module {
  declare weight: MgArray;
  constructor(...rest: Trailing<[numParameters: number, init: number], { numParameters?: number; init?: number }>) {
    super();
    const { numParameters, init } = resolveOptions("PReLU", rest, { numParameters: 1, init: 0.25 });
    // float32 even for an integral init (JS cannot tell 1.0 from 1; MLX users write 0.25).
    this.weight = full([numParameters], init, float32);
  }
  override forward(x: ArrayInput): MgArray {
    return prelu(x, this.weight);
  }
}

/**
 * GELU's approximations: none (erf), precise/tanh, fast (sigmoid).
 */
export type GeluApprox = "none" | "precise" | "tanh" | "fast";

/**
 * gelu; `approx` "precise"/"tanh" selects geluApprox, "fast" geluFastApprox.
 * @example
 * new mg.nn.GELU({ approx: "tanh" }).forward(mg.array([-2, -0.5, 0, 1.5], mg.float32))
 */
export class GELU extends Module {
  readonly approx: GeluApprox;
  constructor(...rest: Trailing<[approx: GeluApprox], { approx?: GeluApprox }>) {
    super();
    const { approx } = resolveOptions("GELU", rest, { approx: "none" as GeluApprox });
    const allowed = ["none", "precise", "tanh", "fast"];
    if (!allowed.includes(approx)) {
      throw new Error(`[GELU] The approximation should be in ${JSON.stringify(allowed)} but '${approx}' was given`);
    }
    this.approx = approx;
  }
  override forward(x: ArrayInput): MgArray {
    if (this.approx === "none") return gelu(x);
    if (this.approx === "fast") return geluFastApprox(x);
    return geluApprox(x);
  }
}

libraryForward(
  Sigmoid, Mish, ReLU, ReLU2, ReLU6, Softmax, Softplus, Softsign, SiLU, LogSoftmax, LogSigmoid, Tanh, Hardswish, SELU, HardTanh, Softmin,
  GLU, LeakyReLU, ELU, CELU, Softshrink, HardShrink, Step, PReLU, GELU,
);
