// Derivative rules of QuantizedMatmul (ts/core/primitives/quantized.ts), as MLX's: the product is linear in x, so
// x̄ = ȳ·W (the same quantized weights, the other orientation) and the jvp is the product of the
// tangent; affine scales and biases get the per-group sums of the dense weight gradient.
// The packed weights are integers and carry no gradient: the trace records that.
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { makeNode } from "../graph.ts";
import { record, tracing } from "../trace.ts";
import { contiguous } from "../ops/movement.ts";
import { matmul } from "../ops/linalg-core.ts";
import { onesLike, zerosLike } from "../ops/creation.ts";
import { add, multiply } from "../ops/elementwise.ts";
import { repeat } from "../ops/movement.ts";
import { sum } from "../ops/reduce.ts";
import { flatten, reshape, swapaxes } from "../ops/shape.ts";
import { defineRules } from "../primitive.ts";
import { Dequantize, GatherQMM, QuantizedMatmul, type QuantizedMatmulParams } from "../primitives/quantized.ts";
import { arange, zeros } from "../ops/creation.ts";
import { scatter } from "../ops/scatter.ts";
import { take } from "../ops/indexing.ts";
import { expandDims } from "../ops/shape.ts";
import { uint32 } from "../dtype.ts";

function qmm(x: MgArray, inputs: readonly MgArray[], p: QuantizedMatmulParams, transpose: boolean): MgArray {
  return makeNode(QuantizedMatmul, [contiguous(x), ...inputs.slice(1)], { ...p, transpose }, resolveStream())[0]!;
}

defineRules(QuantizedMatmul, {
  vjp(primals, [g], argnums, _o, p) {
    if (tracing()) {
      record({
        device: resolveStream().device.type, kernel: "vjp:QuantizedMatmul", primitives: ["QuantizedMatmul"],
        inputDtypes: primals.map((a) => a.dtype.name), outputDtypes: [], layout: "-", precision: "-",
        notes: ["the packed weights (uint32) carry no gradient: only x" + (p.mode === "affine" ? ", the scales and the biases are" : " is") + " differentiated"],
      });
    }
    let dense: MgArray | null = null;
    const denseGrad = (): MgArray => {
      // dW (as the weights' dense layout) = ȳᵀ·x (transpose) or xᵀ·ȳ, over every leading axis,
      // then grouped along the packed axis.
      const w = primals[1]!;
      const fc = flatten(g!, 0, -w.ndim), fx = flatten(primals[0]!, 0, -w.ndim);
      const dw = p.transpose ? matmul(swapaxes(fc, -1, -2), fx) : matmul(swapaxes(fx, -1, -2), fc);
      return reshape(dw, [...dw.shape.slice(0, -1), dw.shape[dw.ndim - 1]! / p.groupSize, p.groupSize]);
    };
    return argnums.map((i) => {
      if (i === 0) return qmm(g!, primals, p, !p.transpose);
      if (i === 1) throw new Error("[quantized_matmul] The quantized weights carry no gradient.");
      dense ??= denseGrad();
      if (i === 3) return sum(dense, -1);
      // scales: Σ_group dW·q with q the codes (dequantized with scale 1, bias 0)
      const s = primals[2]!;
      const codes = makeNode(Dequantize, [contiguous(primals[1]!), contiguous(onesLike(s)), contiguous(zerosLike(s))], { mode: p.mode, groupSize: p.groupSize, bits: p.bits, dtype: s.dtype }, resolveStream())[0]!;
      const q = reshape(codes, [...codes.shape.slice(0, -1), codes.shape[codes.ndim - 1]! / p.groupSize, p.groupSize]);
      return sum(multiply(dense, q), -1);
    });
  },
  // dy = dx·Wᵀ + x·dWᵀ with dW = codes·ds + db per group (affine scales and biases).
  jvp(primals, tangents, argnums, _o, p) {
    const parts: MgArray[] = [];
    let dW: MgArray | null = null;
    argnums.forEach((i, k) => {
      const t = tangents[k]!;
      if (i === 0) parts.push(qmm(t, primals, p, p.transpose));
      else if (i === 1) throw new Error("[quantized_matmul] The quantized weights carry no derivative.");
      else {
        const perGroup = (v: MgArray) => repeat(v, p.groupSize, -1);
        let term: MgArray;
        if (i === 2) {
          const s = primals[2]!;
          const codes = makeNode(Dequantize, [contiguous(primals[1]!), contiguous(onesLike(s)), contiguous(zerosLike(s))], { mode: p.mode, groupSize: p.groupSize, bits: p.bits, dtype: s.dtype }, resolveStream())[0]!;
          term = multiply(codes, perGroup(t));
        } else {
          term = perGroup(t);
        }
        dW = dW ? add(dW, term) : term;
      }
    });
    if (dW) parts.push(matmul(primals[0]!, p.transpose ? swapaxes(dW, -1, -2) : dW));
    return [parts.reduce((a, b) => add(a, b))];
  },
});

/** The codes of packed weights as their dtype (dequantised with scale 1 and bias 0). */
function codesOf(w: MgArray, s: MgArray, p: QuantizedMatmulParams): MgArray {
  return makeNode(Dequantize, [contiguous(w), contiguous(onesLike(s)), contiguous(zerosLike(s))], { mode: p.mode, groupSize: p.groupSize, bits: p.bits, dtype: s.dtype }, resolveStream())[0]!;
}

// gather_qmm, as MLX's GatherQMM::vjp: x̄ gathers ȳ through the same experts (the other
// orientation) and scatter-adds into the rows lhs picked; affine scales and biases get the
// per-group sums of each expert's dense gradient.
defineRules(GatherQMM, {
  vjp(primals, [g], argnums, _o, p) {
    const n = primals.length;
    const [x, w, s] = primals as MgArray[];
    const lhs = primals[n - 2]!, rhs = primals[n - 1]!;
    const mats = primals.slice(1, n - 2);
    let dense: MgArray | null = null;
    const expertGrad = (): MgArray => {
      // per index pair: ȳᵢᵀ·x[lhsᵢ] (transpose) or x[lhsᵢ]ᵀ·ȳᵢ, summed into each expert
      const xi = take(x!, lhs, 0);
      const dwi = p.transpose ? matmul(swapaxes(g!, -1, -2), xi) : matmul(swapaxes(xi, -1, -2), g!);
      const experts = w!.shape[0]!;
      const acc = scatter(zeros([experts, ...dwi.shape.slice(1)], dwi.dtype), [rhs], expandDims(dwi, 1), [0], "sum");
      return reshape(acc, [...acc.shape.slice(0, -1), acc.shape[acc.ndim - 1]! / p.groupSize, p.groupSize]);
    };
    return argnums.map((i) => {
      if (i === 0) {
        const all = arange(0, g!.shape[0]!, 1, uint32);
        const gx = makeNode(GatherQMM, [contiguous(g!), ...mats, all, rhs], { ...p, transpose: !p.transpose }, resolveStream())[0]!;
        return scatter(zeros(x!.shape, x!.dtype), [lhs], expandDims(gx, 1), [0], "sum");
      }
      if (i === 1) throw new Error("[gather_qmm] The quantized weights carry no gradient.");
      if (i >= n - 2) throw new Error("[gather_qmm] The indices carry no gradient.");
      dense ??= expertGrad();
      if (i === 3) return sum(dense, -1);
      const q = codesOf(w!, s!, p);
      return sum(multiply(dense, reshape(q, [...q.shape.slice(0, -1), q.shape[q.ndim - 1]! / p.groupSize, p.groupSize])), -1);
    });
  },
  // dyᵢ = dx[lhsᵢ]·W[rhsᵢ]ᵀ + x[lhsᵢ]·dW[rhsᵢ]ᵀ with dW = codes·ds + db per group.
  jvp(primals, tangents, argnums, _o, p) {
    const n = primals.length;
    const lhs = primals[n - 2]!, rhs = primals[n - 1]!;
    const parts: MgArray[] = [];
    let dW: MgArray | null = null;
    argnums.forEach((i, k) => {
      const t = tangents[k]!;
      if (i === 0) parts.push(makeNode(GatherQMM, [contiguous(t), ...primals.slice(1)], p, resolveStream())[0]!);
      else if (i === 1 || i >= n - 2) throw new Error("[gather_qmm] The quantized weights and the indices carry no derivative.");
      else {
        const term = i === 2 ? multiply(codesOf(primals[1]!, primals[2]!, p), repeat(t, p.groupSize, -1)) : repeat(t, p.groupSize, -1);
        dW = dW ? add(dW, term) : term;
      }
    });
    if (dW) {
      const wi = take(dW, rhs, 0), xi = take(primals[0]!, lhs, 0);
      parts.push(matmul(xi, p.transpose ? swapaxes(wi, -1, -2) : wi));
    }
    return [parts.reduce((a, b) => add(a, b))];
  },
});
