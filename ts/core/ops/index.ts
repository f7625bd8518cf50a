// The public ops: every op of ts/core/ops as a library call (ownership.ts), so the arrays an op
// creates and does not return (broadcasts, casts, the pieces of a composite op) are internal and
// freed after their last use. The op modules call each other directly; only this boundary wraps.
import { publicFunctions, publicNamespace } from "../options.ts";
import * as elementwiseOps from "./elementwise.ts";
import * as creationOps from "./creation.ts";
import * as shapeOps from "./shape.ts";
import * as reduceOps from "./reduce.ts";
import * as joinOps from "./join.ts";
import * as indexingOps from "./indexing.ts";
import * as movementOps from "./movement.ts";
import * as sortOps from "./sort.ts";
import * as softmaxOps from "./softmax.ts";
import * as linalgCoreOps from "./linalg-core.ts";
import * as einsumOps from "./einsum.ts";
import * as windowsOps from "./windows.ts";
import * as quantizedOps from "./quantized.ts";
import * as convolutionOps from "./convolution.ts";
import { array as arrayOp } from "./convert.ts";
import { depends as dependsOp } from "./depends.ts";

export const {
  abs, acos, acosh, add, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, asin, asinh,
  astype, atan, atan2, atanh, bitwiseAnd, bitwiseInvert, bitwiseLeftShift, bitwiseOr,
  bitwiseRightShift, bitwiseXor, ceil, clip, conj, conjugate, cos, cosh, degrees, divide, divmod,
  equal, erf, erfinv, exp, expm1, floor, floorDivide, greater, greaterEqual, imag, isclose,
  isfinite, isinf, isnan, isneginf, isposinf, leftShift, less, lessEqual, log, log10, log1p, log2,
  logaddexp, logicalAnd, logicalNot, logicalOr, logicalXor, maximum, minimum, multiply, nanToNum,
  negative, notEqual, positive, pow, power, radians, real, reciprocal, remainder, rightShift, round,
  rsqrt, sigmoid, sign, sin, sinh, sqrt, square, stopGradient, subtract, tan, tanh, trunc, where,
} = publicFunctions("", elementwiseOps);
export const {
  arange, asarray, empty, emptyLike, eye, full, fullLike, identity, linspace, meshgrid, ones,
  onesLike, tri, tril, triu, zeros, zerosLike,
} = publicFunctions("", creationOps);
export const {
  broadcastArrays, broadcastShapes, broadcastTo, expandDims, flatten, flip, matrixTranspose,
  moveaxis, permuteDims, reshape, squeeze, swapaxes, transpose, unflatten,
} = publicFunctions("", shapeOps);
export const {
  all, allclose, any, arrayEqual, countNonzero, cummax, cummin, cumprod, cumsum, cumulativeProd,
  cumulativeSum, logcumsumexp, max, mean, median, min, minmax, prod, std, sum, variance,
} = publicFunctions("", reduceOps);
export const {
  concat, concatenate, split, stack,
} = publicFunctions("", joinOps);
export const {
  putAlongAxis, slice, sliceUpdate, take, takeAlongAxis,
} = publicFunctions("", indexingOps);
export const {
  asStrided, atleast1d, atleast2d, atleast3d, contiguous, diag, diagonal, diff, kron, pad, repeat,
  roll, tile, trace, unstack, view,
} = publicFunctions("", movementOps);
export const {
  argmax, argmin, argpartition, argsort, partition, searchsorted, sort, topk,
} = publicFunctions("", sortOps);
export const {
  logsumexp, softmax,
} = publicFunctions("", softmaxOps);
export const {
  addmm, inner, matmul, outer, tensordot, vecdot,
} = publicFunctions("", linalgCoreOps);
export const {
  einsum, einsumPath,
} = publicFunctions("", einsumOps);
export const {
  bartlett, blackman, hamming, hanning,
} = publicFunctions("", windowsOps);
export const {
  conv1d, conv2d, conv3d, convGeneral, convolve, convTranspose1d, convTranspose2d, convTranspose3d,
} = publicFunctions("", convolutionOps);
export { Ellipsis, newaxis } from "./indexing.ts";
export const { array, depends } = publicFunctions("", { array: arrayOp, depends: dependsOp });
export type * from "./elementwise.ts";
export type * from "./creation.ts";
export type * from "./shape.ts";
export type * from "./reduce.ts";
export type * from "./join.ts";
export type * from "./indexing.ts";
export type * from "./movement.ts";
export type * from "./sort.ts";
export type * from "./softmax.ts";
export type * from "./linalg-core.ts";
export type * from "./einsum.ts";
export type * from "./windows.ts";
export const {
  dequantize, gatherQmm, quantize, quantizedMatmul,
} = publicNamespace("", quantizedOps);
export type { QuantizationMode } from "./quantized.ts";
export type { ConvolveMode, GeneralPadding, PerAxis } from "./convolution.ts";
