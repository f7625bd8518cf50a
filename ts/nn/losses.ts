// mg.nn.losses, as mlx.nn.losses: the 14 losses with MLX's defaults, formulas and reductions.
import type { MgArray } from "../core/array.ts";
import { integer, issubdtype } from "../core/dtype.ts";
import type { ArrayInput } from "../core/ops/convert.ts";
import { toArray } from "../core/ops/convert.ts";
import {
  abs, add, clip, divide, exp, log, logaddexp, maximum, minimum, multiply, negative, power, sqrt, square, stopGradient, subtract, where, less,
} from "../core/ops/elementwise.ts";
import { takeAlongAxis } from "../core/ops/indexing.ts";
import { max, mean, sum } from "../core/ops/reduce.ts";
import { logsumexp } from "../core/ops/softmax.ts";
import { expandDims, squeeze } from "../core/ops/shape.ts";
import { formatShape, normalizeAxis, shapesEqual } from "../core/shape.ts";
import { resolveOptions, type Trailing } from "../core/options.ts";

/**
 * How a loss reduces: none, mean or sum.
 */
export type Reduction = "none" | "mean" | "sum";

function reduce(op: string, loss: MgArray, reduction: Reduction): MgArray {
  if (reduction === "mean") return mean(loss);
  if (reduction === "sum") return sum(loss);
  if (reduction === "none") return loss;
  throw new Error(`[${op}] Invalid reduction '${String(reduction)}'. Must be one of 'none', 'mean', 'sum'.`);
}

function sameShape(op: string, what: [string, MgArray][]): void {
  const [[n0, a0]] = what as [[string, MgArray]];
  for (const [n, a] of what.slice(1)) {
    if (!shapesEqual(a.shape, a0.shape)) {
      throw new Error(`[${op}] ${n0} shape ${formatShape(a0.shape)} does not match ${n} shape ${formatShape(a.shape)}.`);
    }
  }
}

function applyWeights(op: string, loss: MgArray, weights: ArrayInput | null): MgArray {
  if (weights === null) return loss;
  const w = toArray(weights, op);
  if (!shapesEqual(w.shape, loss.shape)) {
    throw new Error(`[${op}] Weights with shape ${formatShape(w.shape)} is not the same as output loss with shape ${formatShape(loss.shape)}.`);
  }
  return multiply(loss, w);
}

/**
 * Cross entropy of `logits` against class indices (targets with one axis fewer) or probabilities
 * (targets shaped like logits), as nn.losses.cross_entropy(logits, targets, weights=None, axis=-1,
 * label_smoothing=0.0, reduction="none").
 * @example
 * mg.nn.losses.crossEntropy(mg.array([[2, 0, 0]], mg.float32), mg.array([0]))
 */
export function crossEntropy(
  logits: ArrayInput,
  targets: ArrayInput,
  ...rest: Trailing<
    [weights: ArrayInput | null, axis: number, labelSmoothing: number, reduction: Reduction],
    { weights?: ArrayInput | null; axis?: number; labelSmoothing?: number; reduction?: Reduction }
  >
): MgArray {
  const op = "cross_entropy";
  const o = resolveOptions(op, rest, { weights: null as ArrayInput | null, axis: -1, labelSmoothing: 0.0, reduction: "none" as Reduction });
  let l = toArray(logits, op);
  const t = toArray(targets, op);
  if (o.labelSmoothing < 0 || o.labelSmoothing >= 1) throw new RangeError(`[${op}] Label smoothing must be in [0, 1), got ${o.labelSmoothing}.`);
  const asProbs = t.ndim === l.ndim;
  const ax = normalizeAxis(o.axis, l.ndim, op);
  const dropped = l.shape.filter((_, i) => i !== ax);
  if ((asProbs && !shapesEqual(t.shape, l.shape)) || (!asProbs && !shapesEqual(t.shape, dropped))) {
    throw new Error(`[${op}] Targets shape ${formatShape(t.shape)} does not match logits shape ${formatShape(l.shape)}.`);
  }
  if (!asProbs && !issubdtype(t.dtype, integer)) {
    throw new TypeError(`[${op}] class-index targets must have an integer dtype, got ${t.dtype.name}.`);
  }
  l = subtract(l, stopGradient(max(l, ax, true)));
  const score = asProbs ? sum(multiply(l, t), ax) : squeeze(takeAlongAxis(l, expandDims(t, ax), ax), ax);
  const lse = logsumexp(l, ax);
  let loss: MgArray;
  if (o.labelSmoothing > 0) {
    const adjusted = multiply(1 - o.labelSmoothing, score);
    const smoothed = multiply(negative(mean(l, ax)), o.labelSmoothing);
    loss = add(subtract(lse, adjusted), smoothed);
  } else loss = subtract(lse, score);
  return reduce(op, applyWeights(op, loss, o.weights), o.reduction);
}

/**
 * Binary cross entropy of logits (withLogits, the default) or probabilities against targets, as
 * nn.losses.binary_cross_entropy(inputs, targets, weights=None, with_logits=True, reduction="mean").
 * @example
 * mg.nn.losses.binaryCrossEntropy(mg.array([0, 2], mg.float32), mg.array([0, 1], mg.float32), { reduction: "mean" })
 */
export function binaryCrossEntropy(
  inputs: ArrayInput,
  targets: ArrayInput,
  ...rest: Trailing<
    [weights: ArrayInput | null, withLogits: boolean, reduction: Reduction],
    { weights?: ArrayInput | null; withLogits?: boolean; reduction?: Reduction }
  >
): MgArray {
  const op = "binary_cross_entropy";
  const o = resolveOptions(op, rest, { weights: null as ArrayInput | null, withLogits: true, reduction: "mean" as Reduction });
  const x = toArray(inputs, op);
  const t = toArray(targets, op);
  sameShape(op, [["Inputs", x], ["targets", t]]);
  let loss: MgArray;
  if (o.withLogits) loss = subtract(logaddexp(0.0, x), multiply(x, t));
  else {
    const logIn = clip(log(x), -100, null);
    const logInv = clip(log(subtract(1, x)), -100, null);
    loss = negative(add(multiply(t, logIn), multiply(subtract(1, t), logInv)));
  }
  return reduce(op, applyWeights(op, loss, o.weights), o.reduction);
}

/**
 * Mean absolute error, as nn.losses.l1_loss(predictions, targets, reduction="mean").
 * @example
 * mg.nn.losses.l1Loss(mg.array([1, 2], mg.float32), mg.array([0, 4], mg.float32))
 */
export function l1Loss(predictions: ArrayInput, targets: ArrayInput, ...rest: Trailing<[reduction: Reduction], { reduction?: Reduction }>): MgArray {
  const op = "l1_loss";
  const { reduction } = resolveOptions(op, rest, { reduction: "mean" as Reduction });
  const p = toArray(predictions, op);
  const t = toArray(targets, op);
  sameShape(op, [["Predictions", p], ["targets", t]]);
  return reduce(op, abs(subtract(p, t)), reduction);
}

/**
 * Mean squared error, as nn.losses.mse_loss(predictions, targets, reduction="mean").
 * @example
 * mg.nn.losses.mseLoss(mg.array([1, 2], mg.float32), mg.array([0, 4], mg.float32))
 */
export function mseLoss(predictions: ArrayInput, targets: ArrayInput, ...rest: Trailing<[reduction: Reduction], { reduction?: Reduction }>): MgArray {
  const op = "mse_loss";
  const { reduction } = resolveOptions(op, rest, { reduction: "mean" as Reduction });
  const p = toArray(predictions, op);
  const t = toArray(targets, op);
  sameShape(op, [["Predictions", p], ["targets", t]]);
  return reduce(op, square(subtract(p, t)), reduction);
}

/**
 * Negative log likelihood of log-probabilities, as nn.losses.nll_loss(inputs, targets, axis=-1, reduction="none").
 * @example
 * mg.nn.losses.nllLoss(mg.log(mg.array([[0.2, 0.8]], mg.float32)), mg.array([1]))
 */
export function nllLoss(
  inputs: ArrayInput,
  targets: ArrayInput,
  ...rest: Trailing<[axis: number, reduction: Reduction], { axis?: number; reduction?: Reduction }>
): MgArray {
  const op = "nll_loss";
  const { axis, reduction } = resolveOptions(op, rest, { axis: -1, reduction: "none" as Reduction });
  const loss = negative(squeeze(takeAlongAxis(inputs, expandDims(targets, axis), axis), axis));
  return reduce(op, loss, reduction);
}

/**
 * Gaussian negative log likelihood with predicted variances, as nn.losses.gaussian_nll_loss(inputs,
 * targets, vars, full=False, eps=1e-6, reduction="mean").
 * @example
 * mg.nn.losses.gaussianNllLoss(mg.array([1], mg.float32), mg.array([1.5], mg.float32), mg.array([1], mg.float32))
 */
export function gaussianNllLoss(
  inputs: ArrayInput,
  targets: ArrayInput,
  vars: ArrayInput,
  ...rest: Trailing<[full: boolean, eps: number, reduction: Reduction], { full?: boolean; eps?: number; reduction?: Reduction }>
): MgArray {
  const op = "gaussian_nll_loss";
  const o = resolveOptions(op, rest, { full: false, eps: 1e-6, reduction: "mean" as Reduction });
  const x = toArray(inputs, op);
  const t = toArray(targets, op);
  let v = toArray(vars, op);
  sameShape(op, [["Inputs", x], ["targets", t]]);
  sameShape(op, [["Inputs", x], ["vars", v]]);
  v = maximum(v, o.eps);
  let loss = multiply(0.5, add(log(v), divide(square(subtract(t, x)), v)));
  if (o.full) loss = add(loss, 0.5 * Math.log(2 * Math.PI));
  return reduce(op, loss, o.reduction);
}

/**
 * Kullback–Leibler divergence of log-probabilities, as nn.losses.kl_div_loss(inputs, targets, axis=-1, reduction="none").
 * @example
 * mg.nn.losses.klDivLoss(mg.log(mg.array([[0.5, 0.5]], mg.float32)), mg.log(mg.array([[0.9, 0.1]], mg.float32)))
 */
export function klDivLoss(
  inputs: ArrayInput,
  targets: ArrayInput,
  ...rest: Trailing<[axis: number, reduction: Reduction], { axis?: number; reduction?: Reduction }>
): MgArray {
  const op = "kl_div_loss";
  const { axis, reduction } = resolveOptions(op, rest, { axis: -1, reduction: "none" as Reduction });
  return reduce(op, sum(multiply(exp(targets), subtract(targets, inputs)), axis), reduction);
}

/**
 * Huber-style smooth L1, as nn.losses.smooth_l1_loss(predictions, targets, beta=1.0, reduction="mean").
 * @example
 * mg.nn.losses.smoothL1Loss(mg.array([0, 3], mg.float32), mg.array([0.5, 0], mg.float32))
 */
export function smoothL1Loss(
  predictions: ArrayInput,
  targets: ArrayInput,
  ...rest: Trailing<[beta: number, reduction: Reduction], { beta?: number; reduction?: Reduction }>
): MgArray {
  const op = "smooth_l1_loss";
  const { beta, reduction } = resolveOptions(op, rest, { beta: 1.0, reduction: "mean" as Reduction });
  const p = toArray(predictions, op);
  const t = toArray(targets, op);
  sameShape(op, [["Predictions", p], ["targets", t]]);
  const diff = abs(subtract(p, t));
  const loss = where(less(diff, beta), divide(multiply(0.5, square(diff)), beta), subtract(abs(diff), 0.5 * beta));
  return reduce(op, loss, reduction);
}

/**
 * Triplet margin loss, as nn.losses.triplet_loss(anchors, positives, negatives, axis=-1, p=2,
 * margin=1.0, eps=1e-6, reduction="none").
 * @example
 * mg.nn.losses.tripletLoss(mg.array([[0, 0]], mg.float32), mg.array([[0, 1]], mg.float32), mg.array([[3, 0]], mg.float32))
 */
export function tripletLoss(
  anchors: ArrayInput,
  positives: ArrayInput,
  negatives: ArrayInput,
  ...rest: Trailing<
    [axis: number, p: number, margin: number, eps: number, reduction: Reduction],
    { axis?: number; p?: number; margin?: number; eps?: number; reduction?: Reduction }
  >
): MgArray {
  const op = "triplet_loss";
  const o = resolveOptions(op, rest, { axis: -1, p: 2, margin: 1.0, eps: 1e-6, reduction: "none" as Reduction });
  const dist = (b: ArrayInput) => power(add(sum(power(abs(subtract(anchors, b)), o.p), o.axis), o.eps), 1.0 / o.p);
  const loss = maximum(add(subtract(dist(positives), dist(negatives)), o.margin), 0);
  return reduce(op, loss, o.reduction);
}

/**
 * Hinge loss max(0, 1 − x·y), as nn.losses.hinge_loss(inputs, targets, reduction="none").
 * @example
 * mg.nn.losses.hingeLoss(mg.array([0.5, -2], mg.float32), mg.array([1, -1], mg.float32))
 */
export function hingeLoss(inputs: ArrayInput, targets: ArrayInput, ...rest: Trailing<[reduction: Reduction], { reduction?: Reduction }>): MgArray {
  const op = "hinge_loss";
  const { reduction } = resolveOptions(op, rest, { reduction: "none" as Reduction });
  return reduce(op, maximum(subtract(1, multiply(inputs, targets)), 0), reduction);
}

/**
 * Huber loss, as nn.losses.huber_loss(inputs, targets, delta=1.0, reduction="none").
 * @example
 * mg.nn.losses.huberLoss(mg.array([0, 3], mg.float32), mg.array([0.5, 0], mg.float32))
 */
export function huberLoss(
  inputs: ArrayInput,
  targets: ArrayInput,
  ...rest: Trailing<[delta: number, reduction: Reduction], { delta?: number; reduction?: Reduction }>
): MgArray {
  const op = "huber_loss";
  const { delta, reduction } = resolveOptions(op, rest, { delta: 1.0, reduction: "none" as Reduction });
  const absErrors = abs(subtract(inputs, targets));
  const quadratic = minimum(absErrors, delta);
  const linear = subtract(absErrors, quadratic);
  return reduce(op, add(multiply(0.5, power(quadratic, 2)), multiply(delta, linear)), reduction);
}

/**
 * log(cosh(x − y)), as nn.losses.log_cosh_loss(inputs, targets, reduction="none").
 * @example
 * mg.nn.losses.logCoshLoss(mg.array([1], mg.float32), mg.array([0], mg.float32))
 */
export function logCoshLoss(inputs: ArrayInput, targets: ArrayInput, ...rest: Trailing<[reduction: Reduction], { reduction?: Reduction }>): MgArray {
  const op = "log_cosh_loss";
  const { reduction } = resolveOptions(op, rest, { reduction: "none" as Reduction });
  const errors = subtract(inputs, targets);
  return reduce(op, subtract(logaddexp(errors, negative(errors)), Math.log(2)), reduction);
}

/**
 * Cosine similarity along `axis`, as nn.losses.cosine_similarity_loss(x1, x2, axis=1, eps=1e-8,
 * reduction="none").
 * @example
 * mg.nn.losses.cosineSimilarityLoss(mg.array([[1, 0]], mg.float32), mg.array([[1, 1]], mg.float32))
 */
export function cosineSimilarityLoss(
  x1: ArrayInput,
  x2: ArrayInput,
  ...rest: Trailing<[axis: number, eps: number, reduction: Reduction], { axis?: number; eps?: number; reduction?: Reduction }>
): MgArray {
  const op = "cosine_similarity_loss";
  const { axis, eps, reduction } = resolveOptions(op, rest, { axis: 1, eps: 1e-8, reduction: "none" as Reduction });
  // The 2-norms (mx.linalg.norm's default for a vector axis).
  const n1 = sqrt(sum(square(abs(x1)), axis));
  const n2 = sqrt(sum(square(abs(x2)), axis));
  const loss = divide(sum(multiply(x1, x2), axis), maximum(multiply(n1, n2), eps));
  return reduce(op, loss, reduction);
}

/**
 * Margin ranking loss max(0, −y·(x₁ − x₂) + margin), as nn.losses.margin_ranking_loss(inputs1,
 * inputs2, targets, margin=0.0, reduction="none").
 * @example
 * mg.nn.losses.marginRankingLoss(mg.array([1, 0], mg.float32), mg.array([0, 1], mg.float32), mg.array([1, 1], mg.float32))
 */
export function marginRankingLoss(
  inputs1: ArrayInput,
  inputs2: ArrayInput,
  targets: ArrayInput,
  ...rest: Trailing<[margin: number, reduction: Reduction], { margin?: number; reduction?: Reduction }>
): MgArray {
  const op = "margin_ranking_loss";
  const { margin, reduction } = resolveOptions(op, rest, { margin: 0.0, reduction: "none" as Reduction });
  const a = toArray(inputs1, op);
  const b = toArray(inputs2, op);
  const t = toArray(targets, op);
  if (!shapesEqual(a.shape, b.shape) || !shapesEqual(a.shape, t.shape)) {
    throw new Error(
      `[${op}] The shapes of the arguments do not match. The provided shapes are inputs1.shape=${formatShape(a.shape)}, inputs2.shape=${formatShape(b.shape)}, and targets.shape=${formatShape(t.shape)}.`,
    );
  }
  return reduce(op, maximum(0, add(multiply(negative(t), subtract(a, b)), margin)), reduction);
}
