// mg.linalg: MLX 0.32.4's 19 functions. The factorizations (LU, QR, SVD, inverses, Cholesky,
// eigh, eig) are primitives that run on the CPU only, as in MLX; everything else is composed from
// them and ordinary ops exactly as MLX composes it (mlx/linalg.cpp), so results, dtypes and edge
// cases follow MLX. norm (but its 2/-2/'nuc' matrix norms) and cross also run on the GPU.
import type { MgArray } from "../array.ts";
import { resolveStream, type StreamOrDevice } from "../device.ts";
import { atLeastFloat, type Dtype, float32, float64, finfo, int32, isComplex, promoteTypes, uint32 } from "../dtype.ts";
import { makeNode } from "../graph.ts";
import { Cholesky, Eig, Eigh, Inverse, LUF, QRF, SVD } from "../primitives/linalg.ts";
import { broadcastShapes, formatShape } from "../shape.ts";
import { type ArrayInput, type StreamOptions, toArray } from "./convert.ts";
import { arange, eye, tril, triu, zeros } from "./creation.ts";
import { abs, add, astype, exp, log, multiply, negative, notEqual, power, reciprocal, remainder, sign, sqrt, square, subtract, where, greater, less, equal } from "./elementwise.ts";
import { takeAlongAxis } from "./indexing.ts";
import { concatenate, split } from "./join.ts";
import { matmul } from "./linalg-core.ts";
import { diagonal } from "./movement.ts";
import { any, max, min, sum } from "./reduce.ts";
import { broadcastTo, expandDims, flatten, moveaxis, reshape, squeeze, swapaxes } from "./shape.ts";
import { bindArgs } from "../options.ts";
import { sliceStatic } from "./slicing.ts";
import { argsort } from "./sort.ts";

type Options = StreamOptions;

/** MLX runs the factorizations on the CPU only: a GPU stream is a clear error. */
function checkCpuStream(op: string, stream: StreamOrDevice | null | undefined): void {
  if (resolveStream(stream).device.type === "gpu") {
    throw new Error(`[linalg.${op}] This op is only supported on the CPU; use { stream: mg.cpu }.`);
  }
}

function checkFloat(op: string, dtype: Dtype): void {
  if (dtype !== float32 && dtype !== float64) {
    throw new TypeError(`[linalg.${op}] Arrays must have type float32 or float64. Received array with type ${dtype.name}.`);
  }
}

function checkMatrix(op: string, a: MgArray, square: boolean, what = "Arrays"): void {
  if (a.ndim < 2) throw new Error(`[linalg.${op}] ${what} must have >= 2 dimensions. Received array with ${a.ndim} dimensions.`);
  if (square && a.shape[a.ndim - 1] !== a.shape[a.ndim - 2]) {
    throw new Error(`[linalg.${op}] Only defined for square matrices; received shape ${formatShape(a.shape)}.`);
  }
}

/** The common checks of the CPU-only factorizations. */
function factorInput(op: string, x: ArrayInput, stream: StreamOrDevice | null | undefined, square: boolean): MgArray {
  const a = toArray(x, `linalg.${op}`);
  checkCpuStream(op, stream);
  checkFloat(op, a.dtype);
  checkMatrix(op, a, square);
  return a;
}

// ---------------------------------------------------------------------------------------------
// norm

type Ord = number | string | null | undefined;
type AxisArg = number | readonly number[] | null | undefined;

function l2Norm(a: MgArray, axis: number[], keepdims: boolean, o: Options): MgArray {
  if (isComplex(a.dtype)) {
    const m = abs(a, o);
    return sqrt(sum(multiply(m, m, o), axis, keepdims, o), o);
  }
  return sqrt(sum(square(a, o), axis, keepdims, o), o);
}

function vectorNorm(a: MgArray, ord: number, axis: number[], keepdims: boolean, o: Options): MgArray {
  const dtype = atLeastFloat(a.dtype);
  if (ord === 0) return astype(sum(notEqual(a, 0, o), axis, keepdims, o), dtype, o);
  if (ord === 1) return astype(sum(abs(a, o), axis, keepdims, o), dtype, o);
  if (ord === 2) return l2Norm(a, axis, keepdims, o);
  if (ord === Infinity) return astype(max(abs(a, o), axis, keepdims, o), dtype, o);
  if (ord === -Infinity) return astype(min(abs(a, o), axis, keepdims, o), dtype, o);
  const p = toArray(ord, "linalg.norm");
  return power(sum(power(abs(a, o), astype(p, dtype, o), o), axis, keepdims, o), astype(toArray(1 / ord, "linalg.norm"), dtype, o), o);
}

function asMatrix(a: MgArray, row: number, col: number, o: Options): MgArray {
  return row > col ? moveaxis(moveaxis(a, row, -1, o), col, -1, o) : moveaxis(moveaxis(a, col, -1, o), row, -2, o);
}

function matrixNorm(a: MgArray, ord: number | string, axis: number[], keepdims: boolean, o: Options): MgArray {
  const dtype = atLeastFloat(a.dtype);
  let row = axis[0]! < 0 ? axis[0]! + a.ndim : axis[0]!;
  let col = axis[1]! < 0 ? axis[1]! + a.ndim : axis[1]!;
  const sorted = row < col ? [row, col] : [col, row];
  if (typeof ord === "string") {
    if (ord === "f" || ord === "fro") return l2Norm(a, axis, keepdims, o);
    if (ord === "nuc") {
      let s = sum(svd(asMatrix(a, row, col, o), false, o) as MgArray, -1, false, o);
      if (keepdims) s = expandDims(s, sorted, o);
      return s;
    }
    throw new Error(`[linalg.norm] Invalid ord value '${ord}' for matrix norm.`);
  }
  if (ord === -1 || ord === 1) {
    col -= !keepdims && col > row && col > 0 ? 1 : 0;
    const s = sum(abs(a, o), row, keepdims, o);
    return astype(ord === 1 ? max(s, col, keepdims, o) : min(s, col, keepdims, o), dtype, o);
  }
  if (ord === Infinity || ord === -Infinity) {
    row -= !keepdims && row > col && row > 0 ? 1 : 0;
    const s = sum(abs(a, o), col, keepdims, o);
    return astype(ord === Infinity ? max(s, row, keepdims, o) : min(s, row, keepdims, o), dtype, o);
  }
  if (ord === 2 || ord === -2) {
    const s = svd(asMatrix(a, row, col, o), false, o) as MgArray;
    let r = ord === 2 ? max(s, -1, false, o) : min(s, -1, false, o);
    if (keepdims) r = expandDims(r, sorted, o);
    return astype(r, dtype, o);
  }
  throw new Error(`[linalg.norm] Invalid ord ${ord} for matrix norm.`);
}

/**
 * Matrix or vector norm, as mx.linalg.norm(a, ord=None, axis=None, keepdims=False). With ord
 * null: the 2-norm of the flattened array (axis null) or over `axis` (Frobenius over two axes).
 * Vector ords: any number (0, ±Infinity …); matrix ords: ±1, ±2, ±Infinity, 'fro', 'nuc'.
 * @example
 * mg.linalg.norm(mg.array([3, 4], mg.float32))
 */
export function norm(a: ArrayInput, ...rest: unknown[]): MgArray {
  const x = toArray(a, "linalg.norm");
  const p = bindArgs("linalg.norm", rest, [{ name: "ord" }, { name: "axis" }, { name: "keepdims" }]);
  const ord = p.ord as Ord;
  const axisArg = p.axis as AxisArg;
  const keepdims = (p.keepdims as boolean | undefined) ?? false;
  const o: Options = { stream: p.stream };
  const axis = axisArg === null || axisArg === undefined ? null : typeof axisArg === "number" ? [axisArg] : [...axisArg];
  if (ord === null || ord === undefined) {
    if (axis === null) {
      const out = l2Norm(flatten(x, 0, -1, o), [0], keepdims, o);
      return keepdims ? reshape(out, x.shape.map(() => 1), o) : out;
    }
    if (axis.length > 2) throw new Error("[linalg.norm] Received too many axes for norm.");
    return l2Norm(x, axis, keepdims, o);
  }
  const ax = axis ?? x.shape.map((_, i) => i);
  if (typeof ord === "string") {
    if (ax.length !== 2) throw new Error(`[linalg.norm] Norm '${ord}' only supported for matrices, but received ${ax.length} axis/axes.`);
    return matrixNorm(x, ord, ax, keepdims, o);
  }
  if (ax.length === 1) return vectorNorm(x, ord, ax, keepdims, o);
  if (ax.length === 2) return matrixNorm(x, ord, ax, keepdims, o);
  throw new Error("[linalg.norm] Received too many axes for norm.");
}

// ---------------------------------------------------------------------------------------------
// Factorizations

/**
 * QR factorization (reduced): [Q (…, m, k), R (…, k, n)], as mx.linalg.qr (LAPACK's signs).
 * @example
 * mg.linalg.qr(mg.array([[4, 1], [1, 3]], mg.float32))[1]
 */
export function qr(a: ArrayInput, opts: Options = {}): [MgArray, MgArray] {
  bindArgs("linalg.qr", [opts], []);
  const x = factorInput("qr", a, opts.stream, false);
  const [q, r] = makeNode(QRF, [x], {}, resolveStream(opts.stream));
  return [q!, r!];
}

/**
 * Singular value decomposition, as mx.linalg.svd(a, compute_uv=True): [U (…, m, m), S (…, k),
 * Vt (…, n, n)], or S alone when computeUv is false.
 * @example
 * mg.linalg.svd(mg.array([[4, 1], [1, 3]], mg.float32), false)
 */
export function svd(a: ArrayInput, ...rest: unknown[]): [MgArray, MgArray, MgArray] | MgArray {
  const p = bindArgs("linalg.svd", rest, [{ name: "computeUv" }]);
  const computeUv = (p.computeUv as boolean | undefined) ?? true;
  const x = toArray(a, "linalg.svd");
  checkCpuStream("svd", p.stream);
  if (x.dtype !== float32 && x.dtype !== float64 && !isComplex(x.dtype)) {
    throw new TypeError(`[linalg.svd] Arrays must have type float32, float64 or complex64. Received array with type ${x.dtype.name}.`);
  }
  if (x.ndim < 2) throw new Error(`[linalg.svd] Input array must have >= 2 dimensions. Received array with ${x.ndim} dimensions.`);
  const outs = makeNode(SVD, [x], { computeUv }, resolveStream(p.stream));
  return computeUv ? [outs[0]!, outs[1]!, outs[2]!] : outs[0]!;
}

function invImpl(op: string, a: ArrayInput, tri: boolean, upper: boolean, stream: StreamOrDevice | null | undefined): MgArray {
  const x = toArray(a, `linalg.${op}`);
  checkCpuStream(op, stream);
  checkFloat(op, x.dtype);
  if (x.ndim < 2) throw new Error(`[linalg.${op}] Arrays must have >= 2 dimensions. Received array with ${x.ndim} dimensions.`);
  if (x.shape[x.ndim - 1] !== x.shape[x.ndim - 2]) throw new Error(`[linalg.${op}] Inverses are only defined for square matrices.`);
  return makeNode(Inverse, [x], { tri, upper }, resolveStream(stream))[0]!;
}

/**
 * Inverse of square matrices, as mx.linalg.inv (a singular matrix is an error).
 * @example
 * mg.linalg.inv(mg.array([[4, 1], [1, 3]], mg.float32))
 */
export function inv(a: ArrayInput, opts: Options = {}): MgArray {
  bindArgs("linalg.inv", [opts], []);
  return invImpl("inv", a, false, false, opts.stream);
}

/**
 * Inverse of the lower (or upper) triangle, as mx.linalg.tri_inv(a, upper=False).
 * @example
 * mg.linalg.triInv(mg.array([[2, 0], [1, 1]], mg.float32), false)
 */
export function triInv(a: ArrayInput, ...rest: unknown[]): MgArray {
  const p = bindArgs("linalg.tri_inv", rest, [{ name: "upper" }]);
  return invImpl("tri_inv", a, true, (p.upper as boolean | undefined) ?? false, p.stream);
}

/**
 * Moore–Penrose pseudo-inverse through the SVD, as mx.linalg.pinv (rcond = 10·max(m, n)·eps).
 * @example
 * mg.linalg.pinv(mg.array([[1, 2]], mg.float32))
 */
export function pinv(a: ArrayInput, opts: Options = {}): MgArray {
  bindArgs("linalg.pinv", [opts], []);
  const x = factorInput("pinv", a, opts.stream, false);
  const o: Options = { stream: opts.stream };
  const m = x.shape[x.ndim - 2]!, n = x.shape[x.ndim - 1]!;
  if (x.size === 0) return zeros([...x.shape.slice(0, -2), n, m], x.dtype, o);
  const k = Math.min(m, n);
  const [U, S, Vt] = svd(x, true, o) as [MgArray, MgArray, MgArray];
  const lead = x.shape.slice(0, -2).map(() => 0);
  const u = swapaxes(sliceStatic(U, [...lead, 0, 0], [...x.shape.slice(0, -2), m, k], undefined, o), -1, -2, o);
  const v = swapaxes(sliceStatic(Vt, [...lead, 0, 0], [...x.shape.slice(0, -2), k, n], undefined, o), -1, -2, o);
  const s = expandDims(S, -2, o);
  const rcond = 10 * Math.max(m, n) * finfo(x.dtype).eps;
  const cutoff = multiply(astype(rcond, x.dtype, o), max(s, -1, true, o), o);
  const rs = where(greater(s, cutoff, o), reciprocal(s, o), astype(0, x.dtype, o), o);
  return matmul(multiply(v, rs, o), u, o);
}

/**
 * Cholesky factor from the lower (or upper) triangle, as mx.linalg.cholesky(a, upper=False).
 *  As in MLX (LAPACK's potrf, info unchecked), a matrix that is not positive definite gives a
 *  partial factor, not an error.
 * @example
 * mg.linalg.cholesky(mg.array([[4, 1], [1, 3]], mg.float32))
 */
export function cholesky(a: ArrayInput, ...rest: unknown[]): MgArray {
  const p = bindArgs("linalg.cholesky", rest, [{ name: "upper" }]);
  const x = toArray(a, "linalg.cholesky");
  checkCpuStream("cholesky", p.stream);
  checkFloat("cholesky", x.dtype);
  if (x.ndim < 2) throw new Error(`[linalg.cholesky] Arrays must have >= 2 dimensions. Received array with ${x.ndim} dimensions.`);
  if (x.shape[x.ndim - 1] !== x.shape[x.ndim - 2]) throw new Error("[linalg.cholesky] Cholesky decomposition is only defined for square matrices.");
  return makeNode(Cholesky, [x], { upper: (p.upper as boolean | undefined) ?? false }, resolveStream(p.stream))[0]!;
}

/**
 * The inverse of A from its Cholesky factor L, as mx.linalg.cholesky_inv(L, upper=False).
 * @example
 * mg.linalg.choleskyInv(mg.linalg.cholesky(mg.array([[4, 1], [1, 3]], mg.float32)))
 */
export function choleskyInv(a: ArrayInput, ...rest: unknown[]): MgArray {
  const p = bindArgs("linalg.cholesky_inv", rest, [{ name: "upper" }]);
  const upper = (p.upper as boolean | undefined) ?? false;
  const x = toArray(a, "linalg.cholesky_inv");
  checkCpuStream("cholesky_inv", p.stream);
  checkFloat("cholesky_inv", x.dtype);
  if (x.ndim < 2) throw new Error(`[linalg.cholesky_inv] Arrays must have >= 2 dimensions. Received array with ${x.ndim} dimensions.`);
  if (x.shape[x.ndim - 1] !== x.shape[x.ndim - 2]) throw new Error("[linalg.cholesky_inv] Cholesky inverse is only defined for square matrices.");
  const o: Options = { stream: p.stream };
  const li = triInv(x, upper, o);
  return upper ? matmul(li, swapaxes(li, -1, -2, o), o) : matmul(swapaxes(li, -1, -2, o), li, o);
}

/**
 * Cross product of 2- or 3-vectors along `axis`, as mx.linalg.cross(a, b, axis=-1).
 * @example
 * mg.linalg.cross(mg.array([1, 0, 0], mg.float32), mg.array([0, 1, 0], mg.float32))
 */
export function cross(a: ArrayInput, b: ArrayInput, ...rest: unknown[]): MgArray {
  const p = bindArgs("linalg.cross", rest, [{ name: "axis" }]);
  let axis = (p.axis as number | undefined) ?? -1;
  const o: Options = { stream: p.stream };
  const x = toArray(a, "linalg.cross"), y = toArray(b, "linalg.cross");
  for (const arr of [x, y]) {
    const ax = axis < 0 ? axis + arr.ndim : axis;
    if (ax < 0 || ax >= arr.ndim) throw new RangeError(`[linalg.cross] Axis ${axis} is out of bounds for array with ${arr.ndim} dimensions.`);
    const size = arr.shape[ax]!;
    if (size < 2 || size > 3) throw new Error("[linalg.cross] The specified axis must have size 2 or 3.");
  }
  const a2 = x.shape[axis < 0 ? axis + x.ndim : axis] === 2;
  const b2 = y.shape[axis < 0 ? axis + y.ndim : axis] === 2;
  const outType = promoteTypes(x.dtype, y.dtype);
  const ashape = [...x.shape], bshape = [...y.shape];
  ashape[axis < 0 ? axis + x.ndim : axis] = 3;
  bshape[axis < 0 ? axis + y.ndim : axis] = 3;
  const outShape = broadcastShapes([ashape, bshape], "linalg.cross");
  if (axis < 0) axis += outShape.length;
  outShape[axis] = a2 ? 2 : 3;
  const xa = broadcastTo(astype(x, outType, o), outShape, o);
  outShape[axis] = b2 ? 2 : 3;
  const yb = broadcastTo(astype(y, outType, o), outShape, o);
  const as = split(xa, a2 ? 2 : 3, axis, o), bs = split(yb, b2 ? 2 : 3, axis, o);
  const out: MgArray[] = [];
  if (a2 && b2) {
    const z = zeros(as[0]!.shape, outType, o);
    out.push(z, z);
  } else if (b2) {
    out.push(negative(multiply(as[2]!, bs[1]!, o), o), multiply(as[2]!, bs[0]!, o));
  } else if (a2) {
    out.push(multiply(as[1]!, bs[2]!, o), negative(multiply(as[0]!, bs[2]!, o), o));
  } else {
    out.push(subtract(multiply(as[1]!, bs[2]!, o), multiply(as[2]!, bs[1]!, o), o));
    out.push(subtract(multiply(as[2]!, bs[0]!, o), multiply(as[0]!, bs[2]!, o), o));
  }
  out.push(subtract(multiply(as[0]!, bs[1]!, o), multiply(as[1]!, bs[0]!, o), o));
  return concatenate(out, axis, o);
}

// ---------------------------------------------------------------------------------------------
// Eigenproblems

function eigInput(op: string, a: ArrayInput, stream: StreamOrDevice | null | undefined): MgArray {
  const x = toArray(a, `linalg.${op}`);
  checkCpuStream(op, stream);
  if (x.dtype !== float32 && x.dtype !== float64 && !isComplex(x.dtype)) {
    throw new TypeError(`[linalg.${op}] Arrays must have type float32, float64 or complex64. Received array with type ${x.dtype.name}.`);
  }
  if (x.ndim < 2) throw new Error(`[linalg.${op}] Arrays must have >= 2 dimensions. Received array with ${x.ndim} dimensions.`);
  if (x.shape[x.ndim - 1] !== x.shape[x.ndim - 2]) throw new Error(`[linalg.${op}] Only defined for square matrices.`);
  return x;
}

function uploArg(op: string, v: unknown): "L" | "U" {
  const u = v ?? "L";
  if (u !== "L" && u !== "U") throw new Error(`[linalg.${op}] UPLO must be 'L' or 'U' but got '${String(u)}'.`);
  return u;
}

/**
 * Eigenvalues (ascending) and eigenvectors of symmetric matrices from one triangle, as
 *  mx.linalg.eigh(a, UPLO='L').
 * @example
 * mg.linalg.eigh(mg.array([[4, 1], [1, 3]], mg.float32))[0]
 */
export function eigh(a: ArrayInput, ...rest: unknown[]): [MgArray, MgArray] {
  const p = bindArgs("linalg.eigh", rest, [{ name: "UPLO" }]);
  const x = eigInput("eigh", a, p.stream);
  const [w, v] = makeNode(Eigh, [x], { uplo: uploArg("eigh", p.UPLO), computeEigenvectors: true }, resolveStream(p.stream));
  return [w!, v!];
}

/**
 * Eigenvalues (ascending) of symmetric matrices, as mx.linalg.eigvalsh(a, UPLO='L').
 * @example
 * mg.linalg.eigvalsh(mg.array([[4, 1], [1, 3]], mg.float32))
 */
export function eigvalsh(a: ArrayInput, ...rest: unknown[]): MgArray {
  const p = bindArgs("linalg.eigvalsh", rest, [{ name: "UPLO" }]);
  const x = eigInput("eigvalsh", a, p.stream);
  return makeNode(Eigh, [x], { uplo: uploArg("eigvalsh", p.UPLO), computeEigenvectors: false }, resolveStream(p.stream))[0]!;
}

/**
 * Eigenvalues and eigenvectors of general real matrices (complex64, unit-norm vectors with
 *  their largest component real), as mx.linalg.eig.
 * @example
 * mg.linalg.eig(mg.array([[2, 0], [0, 3]], mg.float32))[0]
 */
export function eig(a: ArrayInput, opts: Options = {}): [MgArray, MgArray] {
  bindArgs("linalg.eig", [opts], []);
  const x = eigInput("eig", a, opts.stream);
  const [w, v] = makeNode(Eig, [x], { computeEigenvectors: true }, resolveStream(opts.stream));
  return [w!, v!];
}

/**
 * Eigenvalues of general real matrices (complex64), as mx.linalg.eigvals.
 * @example
 * mg.linalg.eigvals(mg.array([[2, 0], [0, 3]], mg.float32))
 */
export function eigvals(a: ArrayInput, opts: Options = {}): MgArray {
  bindArgs("linalg.eigvals", [opts], []);
  const x = eigInput("eigvals", a, opts.stream);
  return makeNode(Eig, [x], { computeEigenvectors: false }, resolveStream(opts.stream))[0]!;
}

// ---------------------------------------------------------------------------------------------
// LU and solves

function luHelper(op: string, a: ArrayInput, stream: StreamOrDevice | null | undefined): MgArray[] {
  const x = factorInput(op, a, stream, false);
  return makeNode(LUF, [x], {}, resolveStream(stream));
}

/**
 * LU factorization with partial pivoting, as mx.linalg.lu: [p (…, m) uint32, L, U] with
 *  A = L[p] @ U.
 * @example
 * mg.linalg.lu(mg.array([[4, 1], [1, 3]], mg.float32)).map((a) => a.shape)
 */
export function lu(a: ArrayInput, opts: Options = {}): [MgArray, MgArray, MgArray] {
  bindArgs("linalg.lu", [opts], []);
  const [LU, , rows] = luHelper("lu", a, opts.stream);
  const o: Options = { stream: opts.stream };
  let L = tril(LU!, -1, o);
  let U = triu(LU!, 0, o);
  const M = LU!.shape[LU!.ndim - 2]!, N = LU!.shape[LU!.ndim - 1]!;
  const K = Math.min(M, N);
  const zerosLead = LU!.shape.slice(0, -2).map(() => 0);
  if (N !== K) L = sliceStatic(L, [...zerosLead, 0, 0], [...L.shape.slice(0, -1), K], undefined, o);
  else if (M !== K) U = sliceStatic(U, [...zerosLead, 0, 0], [...U.shape.slice(0, -2), K, N], undefined, o);
  L = add(L, eye(M, K, 0, LU!.dtype, o), o);
  return [rows!, L, U];
}

/**
 * Packed LU factor and getrf's pivots, as mx.linalg.lu_factor.
 * @example
 * mg.linalg.luFactor(mg.array([[4, 1], [1, 3]], mg.float32))[1]
 */
export function luFactor(a: ArrayInput, opts: Options = {}): [MgArray, MgArray] {
  bindArgs("linalg.lu_factor", [opts], []);
  const [LU, pivots] = luHelper("lu_factor", a, opts.stream);
  return [LU!, pivots!];
}

function validateSolve(op: string, x: MgArray, y: MgArray, stream: StreamOrDevice | null | undefined): void {
  checkCpuStream(op, stream);
  if (x.ndim < 2) throw new Error(`[linalg.${op}] First input must have >= 2 dimensions. Received array with ${x.ndim} dimensions.`);
  if (y.ndim < 1) throw new Error(`[linalg.${op}] Second input must have >= 1 dimensions. Received array with ${y.ndim} dimensions.`);
  if (x.shape[x.ndim - 1] !== x.shape[x.ndim - 2]) {
    throw new Error(`[linalg.${op}] First input must be a square matrix. Received array with shape ${formatShape(x.shape)}.`);
  }
  const last = y.ndim > 1 ? y.shape[y.ndim - 2] : y.shape[y.ndim - 1];
  if (x.shape[x.ndim - 1] !== last) {
    throw new Error(`[linalg.${op}] Last dimension of first input with shape ${formatShape(x.shape)} must match second to last dimension of second input with shape ${formatShape(y.shape)}.`);
  }
  const out = promoteTypes(x.dtype, y.dtype);
  if (out !== float32 && out !== float64) {
    throw new TypeError(`[linalg.${op}] Input arrays must promote to float32 or float64. Received arrays with type ${x.dtype.name} and ${y.dtype.name}.`);
  }
}

/**
 * Solves A·X = B through LU (A square; B (…, n) or (…, n, k)), as mx.linalg.solve.
 * @example
 * mg.linalg.solve(mg.array([[4, 1], [1, 3]], mg.float32), mg.array([1, 2], mg.float32))
 */
export function solve(a: ArrayInput, b: ArrayInput, opts: Options = {}): MgArray {
  bindArgs("linalg.solve", [opts], []);
  const x = toArray(a, "linalg.solve"), y = toArray(b, "linalg.solve");
  validateSolve("solve", x, y, opts.stream);
  const o: Options = { stream: opts.stream };
  const [rows, L, U] = lu(x, o);
  let perm = argsort(rows, -1, o);
  let axis = -1;
  if (y.ndim >= 2) {
    perm = expandDims(perm, -1, o);
    axis = -2;
  }
  const pb = takeAlongAxis(y, perm, axis, o);
  const z = solveTriangular(L, pb, { upper: false, stream: opts.stream });
  return solveTriangular(U, z, { upper: true, stream: opts.stream });
}

/**
 * Solves a triangular system, as mx.linalg.solve_triangular(a, b, *, upper=False).
 * @example
 * mg.linalg.solveTriangular(mg.array([[2, 0], [1, 1]], mg.float32), mg.array([2, 3], mg.float32), { upper: false })
 */
export function solveTriangular(a: ArrayInput, b: ArrayInput, opts: Options & { upper?: boolean } = {}): MgArray {
  const p = bindArgs("linalg.solve_triangular", [opts], [{ name: "upper", keywordOnly: true }]);
  const x = toArray(a, "linalg.solve_triangular"), y = toArray(b, "linalg.solve_triangular");
  validateSolve("solve_triangular", x, y, p.stream);
  const o: Options = { stream: p.stream };
  return matmul(triInv(x, (p.upper as boolean | undefined) ?? false, o), y, o);
}

// ---------------------------------------------------------------------------------------------
// Determinants

function validateDet(op: string, x: MgArray, stream: StreamOrDevice | null | undefined): void {
  checkCpuStream(op, stream);
  if (isComplex(x.dtype)) throw new TypeError(`[linalg.${op}] Complex inputs are not supported.`);
  if (x.ndim < 2) throw new Error(`[linalg.${op}] Arrays must have >= 2 dimensions. Received array with ${x.ndim} dimensions.`);
  if (x.shape[x.ndim - 1] !== x.shape[x.ndim - 2]) throw new Error(`[linalg.${op}] Only defined for square matrices.`);
}

/** det of n ≤ 3 matrices by cofactors (MLX's small-matrix path: no LU, differentiable). */
function detSmall(a: MgArray, o: Options): MgArray {
  const n = a.shape[a.ndim - 1]!;
  const lead = a.shape.slice(0, -2);
  if (n === 0) return broadcastTo(astype(1, a.dtype, o), lead, o);
  const el = (i: number, j: number) =>
    squeeze(sliceStatic(a, [...lead.map(() => 0), i, j], [...lead, i + 1, j + 1], undefined, o), [-2, -1], o);
  if (n === 1) return el(0, 0);
  if (n === 2) return subtract(multiply(el(0, 0), el(1, 1), o), multiply(el(0, 1), el(1, 0), o), o);
  const [a00, a01, a02, a10, a11, a12, a20, a21, a22] = [el(0, 0), el(0, 1), el(0, 2), el(1, 0), el(1, 1), el(1, 2), el(2, 0), el(2, 1), el(2, 2)];
  return add(
    subtract(
      multiply(a00, subtract(multiply(a11, a22, o), multiply(a12, a21, o), o), o),
      multiply(a01, subtract(multiply(a10, a22, o), multiply(a12, a20, o), o), o),
      o,
    ),
    multiply(a02, subtract(multiply(a10, a21, o), multiply(a11, a20, o), o), o),
    o,
  );
}

function slogdetImpl(x: MgArray, o: Options): [MgArray, MgArray] {
  const n = x.shape[x.ndim - 1]!;
  const dtype = x.dtype;
  if (n <= 3) {
    const raw = detSmall(x, o);
    return [sign(raw, o), log(abs(raw, o), o)];
  }
  const [LU, pivots] = luFactor(x, o);
  const diag = diagonal(LU, 0, -2, -1, o);
  const k = Math.min(x.shape[x.ndim - 2]!, n);
  const parity = astype(sum(notEqual(pivots, arange(0, k, 1, uint32, o), o), -1, false, o), int32, o);
  const numNeg = astype(sum(less(diag, astype(0, dtype, o), o), -1, false, o), int32, o);
  const total = add(parity, numNeg, o);
  let signVal = astype(subtract(1, multiply(2, remainder(total, 2, o), o), o), dtype, o);
  let logabsdet = sum(log(abs(diag, o), o), -1, false, o);
  const isZero = any(equal(diag, astype(0, dtype, o), o), -1, false, o);
  signVal = where(isZero, astype(0, dtype, o), signVal, o);
  logabsdet = where(isZero, astype(-Infinity, dtype, o), logabsdet, o);
  return [signVal, logabsdet];
}

/**
 * [sign, log|det|] of square matrices, as mx.linalg.slogdet.
 * @example
 * mg.linalg.slogdet(mg.array([[4, 1], [1, 3]], mg.float32))
 */
export function slogdet(a: ArrayInput, opts: Options = {}): [MgArray, MgArray] {
  bindArgs("linalg.slogdet", [opts], []);
  const x = toArray(a, "linalg.slogdet");
  validateDet("slogdet", x, opts.stream);
  const o: Options = { stream: opts.stream };
  return slogdetImpl(astype(x, atLeastFloat(x.dtype), o), o);
}

/**
 * Determinant of square matrices, as mx.linalg.det (cofactors up to 3×3, LU beyond).
 * @example
 * mg.linalg.det(mg.array([[4, 1], [1, 3]], mg.float32))
 */
export function det(a: ArrayInput, opts: Options = {}): MgArray {
  bindArgs("linalg.det", [opts], []);
  const x = toArray(a, "linalg.det");
  validateDet("det", x, opts.stream);
  const o: Options = { stream: opts.stream };
  const input = astype(x, atLeastFloat(x.dtype), o);
  if (input.shape[input.ndim - 1]! <= 3) return detSmall(input, o);
  const [s, l] = slogdetImpl(input, o);
  return multiply(s, exp(l, o), o);
}
