// CPU matrix multiplication: every product is accumulated in float64 and rounded once into the
// output dtype. It is also the oracle for the GPU kernels, so it has to be reasonably fast: each
// operand matrix is read once into a dense Float64Array (broadcast batch entries share one
// read), then multiplied with a blocked i-k-j loop that streams rows of B and C.
import type { MgArray } from "../../core/array.ts";
import { bfloat16, complex64, numberFromBfloat16Bits } from "../../core/dtype.ts";
import { AddMM, Matmul } from "../../core/primitives/matmul.ts";
import { registerCpu } from "./registry.ts";
import { readNumbers, storageView, writeComplex, writeNumbers } from "./values.ts";

/** The dense row-major (rows × cols) matrices of a (batch…, rows, cols) array, one per batch
 *  entry; entries that address the same storage (broadcast) share one Float64Array. For complex64
 *  the real and imaginary parts come as two matrices. */
export function readMatrices(x: MgArray): { re: Float64Array[]; im: Float64Array[] | null } {
  const l = x.layout!;
  const nd = x.ndim;
  const rows = x.shape[nd - 2]!;
  const cols = x.shape[nd - 1]!;
  const rs = l.strides[nd - 2]!;
  const cs = l.strides[nd - 1]!;
  const batchShape = x.shape.slice(0, nd - 2);
  const batchStrides = l.strides.slice(0, nd - 2);
  const count = batchShape.reduce((a, b) => a * b, 1);
  const view = storageView(x);
  const cplx = x.dtype === complex64;
  const bf16 = x.dtype === bfloat16;
  const cache = new Map<number, [Float64Array, Float64Array | null]>();
  const re: Float64Array[] = [];
  const im: Float64Array[] | null = cplx ? [] : null;
  const idx = new Array<number>(batchShape.length).fill(0);
  for (let b = 0; b < count; b++) {
    let base = l.offset;
    for (let i = 0; i < idx.length; i++) base += idx[i]! * batchStrides[i]!;
    let m = cache.get(base);
    if (!m) {
      const r = new Float64Array(rows * cols);
      const c = cplx ? new Float64Array(rows * cols) : null;
      for (let i = 0; i < rows; i++) {
        let o = base + i * rs;
        const row = i * cols;
        if (cplx) {
          for (let j = 0; j < cols; j++, o += cs) {
            r[row + j] = view[2 * o] as number;
            c![row + j] = view[2 * o + 1] as number;
          }
        } else if (bf16) {
          for (let j = 0; j < cols; j++, o += cs) r[row + j] = numberFromBfloat16Bits(view[o] as number);
        } else {
          for (let j = 0; j < cols; j++, o += cs) r[row + j] = view[o] as number;
        }
      }
      m = [r, c];
      cache.set(base, m);
    }
    re.push(m[0]);
    im?.push(m[1]!);
    // advance the batch index (odometer)
    for (let k = idx.length - 1; k >= 0; k--) {
      if (++idx[k]! < batchShape[k]!) break;
      idx[k] = 0;
    }
  }
  return { re, im };
}

// Block sizes keep a (BK × BJ) panel of B (256 KiB of float64) hot while rows of A stream past;
// four rows of A share each load of B. Every C element still sums its products in k order.
const BK = 128;
const BJ = 256;

/** C[cOff + i·N + j] += Σₖ A[i·K + k] · B[k·N + j]  (A: M×K, B: K×N, dense row-major). */
export function gemmAccumulate(A: Float64Array, B: Float64Array, C: Float64Array, cOff: number, M: number, K: number, N: number): void {
  // No shortcut for a zero a_ik anywhere: 0 · ∞ must still give NaN.
  for (let j0 = 0; j0 < N; j0 += BJ) {
    const j1 = Math.min(j0 + BJ, N);
    for (let k0 = 0; k0 < K; k0 += BK) {
      const k1 = Math.min(k0 + BK, K);
      let i = 0;
      for (; i + 4 <= M; i += 4) {
        const c0 = cOff + i * N, c1 = c0 + N, c2 = c1 + N, c3 = c2 + N;
        const a0 = i * K, a1 = a0 + K, a2 = a1 + K, a3 = a2 + K;
        for (let k = k0; k < k1; k++) {
          const x0 = A[a0 + k]!, x1 = A[a1 + k]!, x2 = A[a2 + k]!, x3 = A[a3 + k]!;
          const bk = k * N;
          for (let j = j0; j < j1; j++) {
            const b = B[bk + j]!;
            C[c0 + j]! += x0 * b;
            C[c1 + j]! += x1 * b;
            C[c2 + j]! += x2 * b;
            C[c3 + j]! += x3 * b;
          }
        }
      }
      for (; i < M; i++) {
        const ci = cOff + i * N, ai = i * K;
        for (let k = k0; k < k1; k++) {
          const x = A[ai + k]!, bk = k * N;
          for (let j = j0; j < j1; j++) C[ci + j]! += x * B[bk + j]!;
        }
      }
    }
  }
}

/**
 * The batched product of a (batch…, M, K) and b (batch…, K, N) with equal batch shapes, as dense
 * row-major float64 values of the (batch…, M, N) result: [re] for real dtypes, [re, im] for
 * complex64.
 */
export function matmulValues(a: MgArray, b: MgArray): { re: Float64Array; im: Float64Array | null } {
  const nd = a.ndim;
  const M = a.shape[nd - 2]!;
  const K = a.shape[nd - 1]!;
  const N = b.shape[nd - 1]!;
  const count = a.shape.slice(0, nd - 2).reduce((x, y) => x * y, 1);
  const re = new Float64Array(count * M * N);
  if (count * M * N === 0 || K === 0) return { re, im: a.dtype === complex64 ? new Float64Array(re.length) : null };
  const A = readMatrices(a);
  const B = readMatrices(b);
  if (!A.im) {
    for (let t = 0; t < count; t++) gemmAccumulate(A.re[t]!, B.re[t]!, re, t * M * N, M, K, N);
    return { re, im: null };
  }
  // (Ar + iAi)(Br + iBi) = (ArBr − AiBi) + i(ArBi + AiBr), each real product accumulated in float64.
  const im = new Float64Array(re.length);
  const neg = new Map<Float64Array, Float64Array>();
  const negated = (m: Float64Array) => {
    let n = neg.get(m);
    if (!n) neg.set(m, (n = m.map((v) => -v)));
    return n;
  };
  for (let t = 0; t < count; t++) {
    const o = t * M * N;
    gemmAccumulate(A.re[t]!, B.re[t]!, re, o, M, K, N);
    gemmAccumulate(A.im![t]!, negated(B.im![t]!), re, o, M, K, N);
    gemmAccumulate(A.re[t]!, B.im![t]!, im, o, M, K, N);
    gemmAccumulate(A.im![t]!, B.re[t]!, im, o, M, K, N);
  }
  return { re, im };
}

/** Interleaves real and imaginary parts (the complex64 storage order). */
export function interleave(re: Float64Array, im: Float64Array): Float64Array {
  const out = new Float64Array(2 * re.length);
  for (let i = 0; i < re.length; i++) {
    out[2 * i] = re[i]!;
    out[2 * i + 1] = im[i]!;
  }
  return out;
}

registerCpu(Matmul, ([a, b], [out]) => {
  const { re, im } = matmulValues(a!, b!);
  if (im) writeComplex(out!, interleave(re, im));
  else writeNumbers(out!, re);
});

registerCpu(AddMM, ([a, b, c], [out], p) => {
  if (a!.dtype === complex64) throw new Error("[addmm] complex64 is computed as matmul + add (internal error).");
  const { re } = matmulValues(a!, b!);
  if (p.beta === 0) {
    for (let i = 0; i < re.length; i++) re[i] = p.alpha * re[i]!;
  } else {
    const cv = readNumbers(c!);
    for (let i = 0; i < re.length; i++) re[i] = p.alpha * re[i]! + p.beta * cv[i]!;
  }
  writeNumbers(out!, re);
});
