// Derivative and batching rules of the FFT primitive (ts/core/primitives/fft.ts), as MLX's FFT::vjp/jvp: the
// transforms are linear, so the jvp transforms the tangent and the vjp applies the adjoint — the
// opposite transform rescaled; real transforms weight the bins that stand for two (a conjugate
// pair) by ½ or 2. Rules call the primitive directly.
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { complex64, float32 } from "../dtype.ts";
import { makeNode } from "../graph.ts";
import { arange } from "../ops/creation.ts";
import { defineRules } from "../primitive.ts";
import { astype, greater, less, logicalAnd, multiply, where } from "../ops/elementwise.ts";
import { moveaxis, reshape } from "../ops/shape.ts";
import { FFT, type FftParams } from "../primitives/fft.ts";

const fftNode = (x: MgArray, p: FftParams): MgArray => makeNode(FFT, [x], p, resolveStream())[0]!;

/** `inner` on the bins 0 < k < end (the doubled ones), `edge` at DC and the last bin. */
function binWeights(length: number, ndim: number, axis: number, end: number, inner: number, edge: number, dtype = complex64): MgArray {
  const shape = new Array<number>(ndim).fill(1);
  shape[axis] = length;
  const k = reshape(arange(length), shape);
  const mask = logicalAnd(greater(k, 0), less(k, end));
  return where(mask, astype(inner, dtype), astype(edge, dtype));
}

function count(shape: readonly number[], axes: readonly number[]): number {
  return axes.reduce((acc, ax) => acc * shape[ax]!, 1);
}

defineRules(FFT, {
  vjp([x], [g], _a, _o, p) {
    const last = p.axes[p.axes.length - 1]!;
    if (p.real && p.inverse) {
      // y = irfft(X): X̄ = rfft(ȳ) with interior bins ×2/N, DC and Nyquist ×1/N.
      const N = count(g!.shape, p.axes);
      const h = x!.shape[last]!;
      const odd = g!.shape[last]! % 2;
      const w = binWeights(h, x!.ndim, last, h - 1 + odd, 2 / N, 1 / N, complex64);
      return [multiply(fftNode(astype(g!, float32), { axes: p.axes, inverse: false, real: true, n: 0 }), w)];
    }
    if (p.real) {
      // Y = rfft(x): x̄ = N·irfft(Ȳ ∘ w), interior bins halved (they stand for a pair).
      const N = count(x!.shape, p.axes);
      const h = g!.shape[last]!;
      const odd = x!.shape[last]! % 2;
      const w = binWeights(h, x!.ndim, last, h - 1 + odd, 0.5, 1, complex64);
      const back = fftNode(multiply(g!, w), { axes: p.axes, inverse: true, real: true, n: x!.shape[last]! });
      return [multiply(back, astype(N, float32))];
    }
    const N = count(x!.shape, p.axes);
    const t = fftNode(g!, { ...p, inverse: !p.inverse });
    return [multiply(t, astype(p.inverse ? 1 / N : N, complex64))];
  },
  jvp(_x, [t], _a, _o, p) {
    const input = p.real && !p.inverse ? astype(t!, float32) : astype(t!, complex64);
    return [fftNode(input, p)];
  },
  vmap([x], [ax], p) {
    const moved = moveaxis(x!, ax!, 0);
    return [[fftNode(moved, { ...p, axes: p.axes.map((a) => a + 1) })], [0]];
  },
});
