// Derivative and batching rules of the linalg primitives (ts/core/primitives/linalg.ts). MLX 0.32.4 has none for
// these (mx.grad through inv or eigh raises); these are the standard ones, gradchecked in float64
// (test/core/ops-linalg.test.ts). Rules call the primitives directly and run on the node's
// stream, the CPU.
//
// A triangle-reading primitive (Cholesky, Eigh, tri Inverse) sees only one triangle of A as the
// symmetric (or triangular) matrix it factors; a gradient Ĝ with respect to that matrix becomes,
// for the lower triangle, tril(Ĝ + Ĝᵀ, −1) + diag(Ĝ): each stored off-diagonal entry stands for
// two entries of the symmetric matrix.
import type { MgArray } from "../array.ts";
import { resolveStream } from "../device.ts";
import { complex64 } from "../dtype.ts";
import { makeNode } from "../graph.ts";
import { defineRules } from "../primitive.ts";
import { eye, tril, triu, zeros } from "../ops/creation.ts";
import { add, divide, multiply, negative, subtract, where, equal } from "../ops/elementwise.ts";
import { takeAlongAxis } from "../ops/indexing.ts";
import { concatenate } from "../ops/join.ts";
import { matmul } from "../ops/linalg-core.ts";
import { diagonal } from "../ops/movement.ts";
import { expandDims, moveaxis, swapaxes } from "../ops/shape.ts";
import { sliceStatic } from "../ops/slicing.ts";
import { argsort } from "../ops/sort.ts";
import { Cholesky, type CholeskyParams, Eig, Eigh, type EighParams, Inverse, type InverseParams, LUF, QRF, SVD, type SvdParams } from "../primitives/linalg.ts";

const T = (x: MgArray) => swapaxes(x, -1, -2);
const mm = (...xs: MgArray[]) => xs.reduce((a, b) => matmul(a, b));
// Rules run with the node's stream as the default stream.
const stream = (_x: MgArray) => resolveStream();

function triInvOf(x: MgArray, upper: boolean): MgArray {
  return makeNode(Inverse, [x], { tri: true, upper }, stream(x))[0]!;
}

/** An output still usable by a rule: a library call may have released a sibling output that
 *  nothing consumed (a dropped pivots array, an unused U), keeping neither node nor data. */
const usable = (a: MgArray | undefined): boolean => !!a && !a.disposed && (a.layout !== null || a.node !== null);

/** The node's outputs, or those of a fresh node on the same input when one was released. */
function outputsOf<P>(record: Parameters<typeof makeNode<P>>[0], a: MgArray, outputs: readonly MgArray[], p: P): MgArray[] {
  return outputs.every(usable) ? [...outputs] : makeNode(record, [a], p, stream(a));
}

/** The rules below are real derivations (MLX has none): complex inputs are refused. */
function realOnly(op: string, a: MgArray): void {
  if (a.dtype === complex64) throw new Error(`[${op}] Derivatives of complex64 factorizations are not implemented.`);
}

/** A matrix with the last axis's entries of v on the diagonal. */
function diagEmbed(v: MgArray): MgArray {
  const n = v.shape[v.ndim - 1]!;
  return multiply(expandDims(v, -2), eye(n, n, 0, v.dtype));
}

/** Ĝ (a gradient on the symmetric matrix) onto the stored triangle. */
function ontoTriangle(g: MgArray, upper: boolean): MgArray {
  const both = add(g, T(g));
  const n = g.shape[g.ndim - 1]!;
  const diag = multiply(g, eye(n, n, 0, g.dtype));
  return add(upper ? triu(both, 1) : tril(both, -1), diag);
}

/** The symmetric matrix a triangle-reading primitive sees, from a tangent's stored triangle. */
function symmetricFrom(t: MgArray, upper: boolean): MgArray {
  return upper ? add(triu(t, 0), T(triu(t, 1))) : add(tril(t, 0), T(tril(t, -1)));
}

/** Φ: the lower triangle with the diagonal halved. */
function phi(x: MgArray): MgArray {
  const n = x.shape[x.ndim - 1]!;
  return subtract(tril(x, 0), multiply(x, multiply(eye(n, n, 0, x.dtype), 0.5)));
}

/** F_ij = 1/(d_j − d_i) off the diagonal, 0 on it (and where d_j = d_i: degenerate). */
function gapMatrix(d: MgArray): MgArray {
  const diff = subtract(expandDims(d, -2), expandDims(d, -1)); // [i, j] = d_j − d_i
  const zero = equal(diff, 0);
  return where(zero, zeros([], d.dtype), divide(1, where(zero, 1, diff)));
}

/** Moves each batch axis to the front (unbatched inputs stay), applies `f`, batch axis 0. */
function vmapLeading(inputs: readonly MgArray[], axes: readonly number[], f: (xs: MgArray[]) => MgArray[]): [MgArray[], number[]] {
  const xs = inputs.map((x, i) => (axes[i]! >= 0 ? moveaxis(x, axes[i]!, 0) : x));
  const outs = f(xs);
  return [outs, outs.map(() => 0)];
}

// ---------------------------------------------------------------------------------------------

defineRules(Inverse, {
  // Y = A⁻¹: dY = −Y·dA·Y, so Ā = −Yᵀ·Ȳ·Yᵀ (for tri, only the read triangle).
  vjp(_p, [g], _a, [y], p) {
    const ga = negative(mm(T(y!), g!, T(y!)));
    return [p.tri ? (p.upper ? triu(ga, 0) : tril(ga, 0)) : ga];
  },
  jvp(_p, [t], _a, [y], p) {
    const dt = p.tri ? (p.upper ? triu(t!, 0) : tril(t!, 0)) : t!;
    return [negative(mm(y!, dt, y!))];
  },
  vmap: (inputs, axes, p) => vmapLeading(inputs, axes, ([x]) => makeNode(Inverse, [x!], p, stream(x!))),
});

defineRules(Cholesky, {
  // A = L·Lᵀ: L⁻¹·dA·L⁻ᵀ = X + Xᵀ with X = L⁻¹·dL lower, so dL = L·Φ(L⁻¹·dA·L⁻ᵀ) and
  // Ĝ = L⁻ᵀ·Φ(Lᵀ·L̄)·L⁻¹. Upper: U = Lᵀ of the same factorization.
  vjp(_p, [g], _a, [out], p) {
    const L = p.upper ? T(out!) : out!;
    const Lbar = p.upper ? T(g!) : g!;
    const Li = triInvOf(L, false);
    const G = mm(T(Li), phi(mm(T(L), Lbar)), Li);
    return [ontoTriangle(G, p.upper)];
  },
  jvp([_a], [t], _n, [out], p) {
    const L = p.upper ? T(out!) : out!;
    const Li = triInvOf(L, false);
    const dL = mm(L, phi(mm(Li, symmetricFrom(t!, p.upper), T(Li))));
    return [p.upper ? T(dL) : dL];
  },
  vmap: (inputs, axes, p) => vmapLeading(inputs, axes, ([x]) => makeNode(Cholesky, [x!], p, stream(x!))),
});

defineRules(Eigh, {
  // A = V·diag(w)·Vᵀ: Ĝ = V·(diag(w̄) + F∘(Vᵀ·V̄))·Vᵀ with F_ij = 1/(w_j − w_i).
  vjp([a], cotangents, _a, outputs, p) {
    realOnly("linalg.eigh", a!);
    const [w, V] = p.computeEigenvectors ? outputsOf(Eigh, a!, outputs, p) : makeNode(Eigh, [a!], { uplo: p.uplo, computeEigenvectors: true }, stream(a!));
    let inner = diagEmbed(cotangents[0]!);
    if (p.computeEigenvectors) inner = add(inner, multiply(gapMatrix(w!), mm(T(V!), cotangents[1]!)));
    return [ontoTriangle(mm(V!, inner, T(V!)), p.uplo === "U")];
  },
  // dw = diag(Vᵀ·dA·V), dV = V·(F∘(Vᵀ·dA·V))
  jvp([a], [t], _n, outputs, p) {
    realOnly("linalg.eigh", a!);
    const [w, V] = p.computeEigenvectors ? outputsOf(Eigh, a!, outputs, p) : makeNode(Eigh, [a!], { uplo: p.uplo, computeEigenvectors: true }, stream(a!));
    const m = mm(T(V!), symmetricFrom(t!, p.uplo === "U"), V!);
    const dw = diagonal(m, 0, -2, -1);
    return p.computeEigenvectors ? [dw, mm(V!, multiply(gapMatrix(w!), m))] : [dw];
  },
  vmap: (inputs, axes, p) => vmapLeading(inputs, axes, ([x]) => makeNode(Eigh, [x!], p, stream(x!))),
});

/** QR's vjp for m ≥ n (square R): Ā = (Q̄ + Q·copyltu(M))·R⁻ᵀ, M = R·R̄ᵀ − Q̄ᵀ·Q. */
function qrVjpTall(Q: MgArray, R: MgArray, Qbar: MgArray, Rbar: MgArray): MgArray {
  const M = subtract(mm(R, T(Rbar)), mm(T(Qbar), Q));
  const copyltu = add(tril(M, 0), T(tril(M, -1)));
  const B = add(Qbar, mm(Q, copyltu));
  return mm(B, T(triInvOf(R, true)));
}

defineRules(QRF, {
  vjp([a], [gq, gr], _n, outputs) {
    const [Q, R] = outputsOf(QRF, a!, outputs, {});
    const m = a!.shape[a!.ndim - 2]!, n = a!.shape[a!.ndim - 1]!;
    if (m >= n) return [qrVjpTall(Q!, R!, gq!, gr!)];
    // Wide: A = [X | Y] with X = Q·U square, Y = Q·V (R = [U | V]).
    const lead = R!.shape.slice(0, -2);
    const z = lead.map(() => 0);
    const U = sliceStatic(R!, [...z, 0, 0], [...lead, m, m]);
    const Vr = sliceStatic(R!, [...z, 0, m], [...lead, m, n]);
    const Ubar = sliceStatic(gr!, [...z, 0, 0], [...lead, m, m]);
    const Vbar = sliceStatic(gr!, [...z, 0, m], [...lead, m, n]);
    const Y = sliceStatic(a!, [...z, 0, m], [...lead, m, n]);
    const Xbar = qrVjpTall(Q!, U, add(gq!, mm(Y, T(Vbar))), Ubar);
    const Ybar = mm(Q!, Vbar);
    return [concatenate([Xbar, Ybar], -1)];
  },
  // m ≥ n: C = Qᵀ·dA·R⁻¹ = Qᵀ·dQ + dR·R⁻¹ with Qᵀ·dQ antisymmetric (Ω, from C's strict lower
  // part) and dR·R⁻¹ upper: dR = (C − Ω)·R, dQ = dA·R⁻¹ − Q·(C − Ω). Wide: the square part
  // X = Q·U as above, then Y = Q·V gives dV = Qᵀ·(dY − dQ·V).
  jvp([a], [t], _n, outputs) {
    const [Q, R] = outputsOf(QRF, a!, outputs, {});
    const m = a!.shape[a!.ndim - 2]!, n = a!.shape[a!.ndim - 1]!;
    const tall = (q: MgArray, r: MgArray, da: MgArray): [MgArray, MgArray] => {
      const Ri = triInvOf(r, true);
      const daRi = mm(da, Ri);
      const C = mm(T(q), daRi);
      const lower = tril(C, -1);
      const CmO = subtract(C, subtract(lower, T(lower)));
      return [subtract(daRi, mm(q, CmO)), mm(CmO, r)];
    };
    if (m >= n) return tall(Q!, R!, t!);
    const lead = R!.shape.slice(0, -2);
    const z = lead.map(() => 0);
    const U = sliceStatic(R!, [...z, 0, 0], [...lead, m, m]);
    const Vr = sliceStatic(R!, [...z, 0, m], [...lead, m, n]);
    const dX = sliceStatic(t!, [...z, 0, 0], [...lead, m, m]);
    const dY = sliceStatic(t!, [...z, 0, m], [...lead, m, n]);
    const [dQ, dU] = tall(Q!, U, dX);
    const dV = mm(T(Q!), subtract(dY, mm(dQ, Vr)));
    return [dQ, concatenate([dU, dV], -1)];
  },
  vmap: (inputs, axes) => vmapLeading(inputs, axes, ([x]) => makeNode(QRF, [x!], {}, stream(x!))),
});

defineRules(SVD, {
  // Reduced parts (k = min(m, n)); the completing columns of a full U or V carry no gradient.
  // Ā = U[(F∘(UᵀŪ − ŪᵀU))·S + diag(S̄) + S·(F∘(VᵀV̄ − V̄ᵀV))]Vᵀ
  //     + (I − UUᵀ)·Ū·S⁻¹·Vᵀ + U·S⁻¹·V̄ᵀ·(I − VVᵀ),   F_ij = 1/(s_j² − s_i²)
  vjp([a], cotangents, _n, outputs, p) {
    realOnly("linalg.svd", a!);
    const m = a!.shape[a!.ndim - 2]!, n = a!.shape[a!.ndim - 1]!;
    const k = Math.min(m, n);
    const full = p.computeUv ? outputsOf(SVD, a!, outputs, p) : makeNode(SVD, [a!], { computeUv: true }, stream(a!));
    const [Uf, S, Vtf] = full as [MgArray, MgArray, MgArray];
    const lead = a!.shape.slice(0, -2);
    const z = lead.map(() => 0);
    const U = sliceStatic(Uf, [...z, 0, 0], [...lead, m, k]);
    const V = T(sliceStatic(Vtf, [...z, 0, 0], [...lead, k, n]));
    const Sbar = p.computeUv ? cotangents[1]! : cotangents[0]!;
    let inner = diagEmbed(Sbar);
    if (!p.computeUv) return [mm(U, inner, T(V))];
    const Ubar = sliceStatic(cotangents[0]!, [...z, 0, 0], [...lead, m, k]);
    const Vbar = T(sliceStatic(cotangents[2]!, [...z, 0, 0], [...lead, k, n]));
    const F = gapMatrix(multiply(S, S));
    const Smat = diagEmbed(S);
    const utu = mm(T(U), Ubar), vtv = mm(T(V), Vbar);
    inner = add(inner, mm(multiply(F, subtract(utu, T(utu))), Smat));
    inner = add(inner, mm(Smat, multiply(F, subtract(vtv, T(vtv)))));
    let ga = mm(U, inner, T(V));
    const Sinv = diagEmbed(divide(1, S));
    if (m > k) ga = add(ga, mm(subtract(eye(m, m, 0, a!.dtype), mm(U, T(U))), Ubar, Sinv, T(V)));
    if (n > k) ga = add(ga, mm(U, Sinv, T(Vbar), subtract(eye(n, n, 0, a!.dtype), mm(V, T(V)))));
    return [ga];
  },
  // dP = Uᵀ·dA·V: dS = diag(dP), dU = U·(F∘(dP·S + S·dPᵀ)) + (I − UUᵀ)·dA·V·S⁻¹,
  // dV = V·(F∘(S·dP + dPᵀ·S)) + (I − VVᵀ)·dAᵀ·U·S⁻¹; the completing columns get zero tangents.
  jvp([a], [t], _n, outputs, p) {
    realOnly("linalg.svd", a!);
    const m = a!.shape[a!.ndim - 2]!, n = a!.shape[a!.ndim - 1]!;
    const k = Math.min(m, n);
    const full = p.computeUv ? outputsOf(SVD, a!, outputs, p) : makeNode(SVD, [a!], { computeUv: true }, stream(a!));
    const [Uf, S, Vtf] = full as [MgArray, MgArray, MgArray];
    const lead = a!.shape.slice(0, -2);
    const z = lead.map(() => 0);
    const U = sliceStatic(Uf, [...z, 0, 0], [...lead, m, k]);
    const V = T(sliceStatic(Vtf, [...z, 0, 0], [...lead, k, n]));
    const dP = mm(T(U), t!, V);
    const dS = diagonal(dP, 0, -2, -1);
    if (!p.computeUv) return [dS];
    const F = gapMatrix(multiply(S, S));
    const Smat = diagEmbed(S);
    const Sinv = diagEmbed(divide(1, S));
    let dU = mm(U, multiply(F, add(mm(dP, Smat), mm(Smat, T(dP)))));
    let dV = mm(V, multiply(F, add(mm(Smat, dP), mm(T(dP), Smat))));
    if (m > k) dU = add(dU, mm(subtract(eye(m, m, 0, a!.dtype), mm(U, T(U))), t!, V, Sinv));
    if (n > k) dV = add(dV, mm(subtract(eye(n, n, 0, a!.dtype), mm(V, T(V))), T(t!), U, Sinv));
    const dUf = m > k ? concatenate([dU, zeros([...lead, m, m - k], a!.dtype)], -1) : dU;
    const dVt = n > k ? concatenate([T(dV), zeros([...lead, n - k, n], a!.dtype)], -2) : T(dV);
    return [dUf, dS, dVt];
  },
  vmap: (inputs, axes, p) => vmapLeading(inputs, axes, ([x]) => makeNode(SVD, [x!], p, stream(x!))),
});

defineRules(LUF, {
  // P·A = L·U (square): with X = L⁻¹·P·dA·U⁻¹, dL = L·tril(X, −1), dU = triu(X)·U, so
  // Ā = Pᵀ·L⁻ᵀ·(tril(Lᵀ·L̄, −1) + triu(Ū·Uᵀ))·U⁻ᵀ; the packed cotangent splits into L̄ and Ū,
  // and Pᵀ is the row gather by MLX's third output (A = (L·U)[rows]).
  vjp([a], [g], _n, outputs) {
    const [LU, , rows] = outputsOf(LUF, a!, outputs, {});
    const m = a!.shape[a!.ndim - 2]!, n = a!.shape[a!.ndim - 1]!;
    if (m !== n) throw new Error("[linalg.lu] The derivative of LU is implemented for square matrices only.");
    const L = add(tril(LU!, -1), eye(n, n, 0, LU!.dtype));
    const U = triu(LU!, 0);
    const M = add(tril(mm(T(L), tril(g!, -1)), -1), triu(mm(triu(g!, 0), T(U)), 0));
    const Y = mm(T(triInvOf(L, false)), M, T(triInvOf(U, true)));
    return [takeAlongAxis(Y, expandDims(rows!, -1), -2)];
  },
  jvp([a], [t], _n, outputs) {
    const [LU, , rows] = outputsOf(LUF, a!, outputs, {});
    const n = a!.shape[a!.ndim - 1]!;
    const L = add(tril(LU!, -1), eye(n, n, 0, LU!.dtype));
    const U = triu(LU!, 0);
    const pdA = takeAlongAxis(t!, expandDims(argsort(rows!, -1), -1), -2);
    const X = mm(triInvOf(L, false), pdA, triInvOf(U, true));
    return [add(mm(L, tril(X, -1)), mm(triu(X, 0), U)), zeros(rows!.shape.slice(0, -1).concat([Math.min(n, a!.shape[a!.ndim - 2]!)]), rows!.dtype), zeros(rows!.shape, rows!.dtype)];
  },
  vmap: (inputs, axes) => vmapLeading(inputs, axes, ([x]) => makeNode(LUF, [x!], {}, stream(x!))),
});

defineRules(Eig, {
  vmap: (inputs, axes, p) => vmapLeading(inputs, axes, ([x]) => makeNode(Eig, [x!], p, stream(x!))),
});

