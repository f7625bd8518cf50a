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
import { resolveOptions, type Trailing } from "../utils/options.ts";
import { libraryForward, Module } from "./module.ts";

export function sigmoid(x: ArrayInput): MgArray {
  return mgSigmoid(x);
}

export function relu(x: ArrayInput): MgArray {
  return maximum(x, 0);
}

/** relu(x)². */
export function relu2(x: ArrayInput): MgArray {
  return square(maximum(x, 0));
}

export function relu6(x: ArrayInput): MgArray {
  return minimum(maximum(x, 0), 6.0);
}

export function leakyRelu(x: ArrayInput, ...rest: Trailing<[negativeSlope: number], { negativeSlope?: number }>): MgArray {
  const { negativeSlope } = resolveOptions("leaky_relu", rest, { negativeSlope: 0.01 });
  return maximum(multiply(negativeSlope, x), x);
}

export function logSoftmax(x: ArrayInput, ...rest: Trailing<[axis: number], { axis?: number }>): MgArray {
  const { axis } = resolveOptions("log_softmax", rest, { axis: -1 });
  // Shift by the max first (MLX does the same): the logsumexp of a large x would round away the
  // normalizer before the subtraction.
  const shifted = subtract(x, stopGradient(max(x, axis, true)));
  return subtract(shifted, logsumexp(shifted, axis, true));
}

export function elu(x: ArrayInput, ...rest: Trailing<[alpha: number], { alpha?: number }>): MgArray {
  const { alpha } = resolveOptions("elu", rest, { alpha: 1.0 });
  return where(greater(x, 0), x, multiply(alpha, subtract(exp(x), 1)));
}

export function softmax(x: ArrayInput, ...rest: Trailing<[axis: number], { axis?: number }>): MgArray {
  const { axis } = resolveOptions("softmax", rest, { axis: -1 });
  return mgSoftmax(x, axis);
}

/** log(1 + eˣ). */
export function softplus(x: ArrayInput): MgArray {
  return logaddexp(x, 0);
}

export function softsign(x: ArrayInput): MgArray {
  return divide(x, add(1, abs(x)));
}

export function softshrink(x: ArrayInput, ...rest: Trailing<[lambd: number], { lambd?: number }>): MgArray {
  const { lambd } = resolveOptions("softshrink", rest, { lambd: 0.5 });
  return where(greater(abs(x), lambd), subtract(x, multiply(sign(x), lambd)), 0);
}

export function celu(x: ArrayInput, ...rest: Trailing<[alpha: number], { alpha?: number }>): MgArray {
  const { alpha } = resolveOptions("celu", rest, { alpha: 1.0 });
  return add(maximum(x, 0.0), multiply(alpha, subtract(exp(divide(minimum(x, 0.0), alpha)), 1)));
}

export function silu(x: ArrayInput): MgArray {
  return multiply(x, mgSigmoid(x));
}

export function logSigmoid(x: ArrayInput): MgArray {
  return negative(softplus(negative(x)));
}

/** x·Φ(x) with the exact Gaussian CDF. */
export function gelu(x: ArrayInput): MgArray {
  return divide(multiply(x, add(1, erf(divide(x, Math.sqrt(2))))), 2);
}

/** The tanh approximation of gelu. */
export function geluApprox(x: ArrayInput): MgArray {
  const inner = multiply(Math.sqrt(2 / Math.PI), add(x, multiply(0.044715, power(x, 3))));
  return multiply(multiply(0.5, x), add(1, mgTanh(inner)));
}

/** x·σ(1.702x). */
export function geluFastApprox(x: ArrayInput): MgArray {
  return multiply(x, mgSigmoid(multiply(1.702, x)));
}

/** a·σ(b) for the two halves a, b of x along `axis`. */
export function glu(x: ArrayInput, ...rest: Trailing<[axis: number], { axis?: number }>): MgArray {
  const { axis } = resolveOptions("glu", rest, { axis: -1 });
  const [a, b] = split(x, 2, axis) as [MgArray, MgArray];
  return multiply(a, mgSigmoid(b));
}

/** 1 where x ≥ threshold, else 0 (int32, as MLX). */
export function step(x: ArrayInput, ...rest: Trailing<[threshold: number], { threshold?: number }>): MgArray {
  const { threshold } = resolveOptions("step", rest, { threshold: 0.0 });
  return where(greaterEqual(x, threshold), 1, 0);
}

export function selu(x: ArrayInput): MgArray {
  return multiply(elu(x, 1.67326), 1.0507);
}

export function prelu(x: ArrayInput, alpha: ArrayInput): MgArray {
  return add(maximum(0, x), multiply(alpha, minimum(0, x)));
}

export function mish(x: ArrayInput): MgArray {
  return multiply(x, mgTanh(softplus(x)));
}

export function hardswish(x: ArrayInput): MgArray {
  const maxX3 = maximum(add(x, 3), 0);
  return divide(multiply(x, minimum(maxX3, 6)), 6);
}

export function hardTanh(x: ArrayInput, ...rest: Trailing<[minVal: number, maxVal: number], { minVal?: number; maxVal?: number }>): MgArray {
  const { minVal, maxVal } = resolveOptions("hard_tanh", rest, { minVal: -1.0, maxVal: 1.0 });
  return minimum(maximum(x, minVal), maxVal);
}

export function hardShrink(x: ArrayInput, ...rest: Trailing<[lambd: number], { lambd?: number }>): MgArray {
  const { lambd } = resolveOptions("hard_shrink", rest, { lambd: 0.5 });
  return where(greater(abs(x), lambd), x, 0);
}

export function softmin(x: ArrayInput, ...rest: Trailing<[axis: number], { axis?: number }>): MgArray {
  const { axis } = resolveOptions("softmin", rest, { axis: -1 });
  return mgSoftmax(negative(x), axis);
}

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

export const Sigmoid = activationModule("Sigmoid", sigmoid);
export const Mish = activationModule("Mish", mish);
export const ReLU = activationModule("ReLU", relu);
export const ReLU2 = activationModule("ReLU2", relu2);
export const ReLU6 = activationModule("ReLU6", relu6);
export const Softmax = activationModule("Softmax", (x) => softmax(x));
export const Softplus = activationModule("Softplus", softplus);
export const Softsign = activationModule("Softsign", softsign);
export const SiLU = activationModule("SiLU", silu);
export const LogSoftmax = activationModule("LogSoftmax", (x) => logSoftmax(x));
export const LogSigmoid = activationModule("LogSigmoid", logSigmoid);
export const Tanh = activationModule("Tanh", tanh);
export const Hardswish = activationModule("Hardswish", hardswish);
export const SELU = activationModule("SELU", selu);
export const HardTanh = activationModule("HardTanh", (x) => hardTanh(x));
export const Softmin = activationModule("Softmin", (x) => softmin(x));

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

/** prelu with a learned slope `weight` of shape (numParameters,), initialised to `init`. */
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

export type GeluApprox = "none" | "precise" | "tanh" | "fast";

/** gelu; `approx` "precise"/"tanh" selects geluApprox, "fast" geluFastApprox. */
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
