// Test-only reverse and forward mode over the lazy graph, driving the primitives' own vjp/jvp
// rules, plus float64 finite differences to check them against. Kept minimal on purpose: it
// walks the unevaluated graph that `fn` builds from evaluated (leaf) primals.
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import { schedule } from "../../../ts/core/graph.ts";
import { isInexact } from "../../../ts/core/dtype.ts";
import { sliceStatic as sliceOp } from "../../../ts/core/ops/slicing.ts";

type Fn = (...xs: MgArray[]) => MgArray;

/** Cotangents of `primals` for y = fn(...primals) and the cotangent of y, via each node's vjp. */
export function vjpOf(fn: Fn, primals: MgArray[], cotangent: MgArray): MgArray[] {
  for (const p of primals) mg.eval(p);
  const y = fn(...primals);
  const order = schedule([y]);
  // Which arrays depend (differentiably) on a primal.
  const live = new Set<MgArray>(primals);
  for (const node of order) {
    if (node.inputs.some((i) => live.has(i))) for (const o of node.outputs) if (isInexact(o.dtype)) live.add(o);
  }
  const cot = new Map<MgArray, MgArray>([[y, cotangent]]);
  for (let n = order.length - 1; n >= 0; n--) {
    const node = order[n]!;
    if (!node.outputs.some((o) => cot.has(o))) continue;
    const argnums = node.inputs.flatMap((x, i) => (live.has(x) ? [i] : []));
    if (argnums.length === 0) continue;
    const vjp = node.primitive.vjp;
    if (!vjp) throw new Error(`[test vjp] ${node.primitive.name} has no vjp rule.`);
    const cts = node.outputs.map((o) => cot.get(o) ?? mg.zerosLike(o));
    const grads = vjp(node.inputs, cts, argnums, node.outputs, node.params);
    argnums.forEach((i, k) => {
      const x = node.inputs[i]!;
      const g = grads[k]!;
      const prev = cot.get(x);
      cot.set(x, prev ? mg.add(prev, g) : g);
    });
  }
  return primals.map((p) => cot.get(p) ?? mg.zerosLike(p));
}

/** The tangent of y = fn(...primals) for the given input tangents, via each node's jvp. */
export function jvpOf(fn: Fn, primals: MgArray[], tangents: MgArray[]): MgArray {
  for (const p of primals) mg.eval(p);
  const y = fn(...primals);
  const tan = new Map<MgArray, MgArray>(primals.map((p, i) => [p, tangents[i]!]));
  for (const node of schedule([y])) {
    const argnums = node.inputs.flatMap((x, i) => (tan.has(x) && isInexact(x.dtype) ? [i] : []));
    if (argnums.length === 0) continue;
    const jvp = node.primitive.jvp;
    if (!jvp) throw new Error(`[test jvp] ${node.primitive.name} has no jvp rule.`);
    const outs = jvp(node.inputs, argnums.map((i) => tan.get(node.inputs[i]!)!), argnums, node.outputs, node.params);
    node.outputs.forEach((o, k) => tan.set(o, outs[k]!));
  }
  return tan.get(y) ?? mg.zerosLike(y);
}

/** A deterministic pseudo-random float64 array in [-1, 1). */
export function randomArray(shape: number[], seed: number, dtype = mg.float64): MgArray {
  const n = shape.reduce((a, b) => a * b, 1);
  const v = new Float64Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    // xorshift32
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    v[i] = s / 2 ** 31 - 1;
  }
  const a = mg.array(v, null, { shape });
  return dtype === mg.float64 ? a : mg.astype(a, dtype);
}

export function values(a: MgArray): number[] {
  return Array.from(mg.astype(a, mg.float64).dataSync() as Float64Array);
}

function withElement(x: MgArray, i: number, delta: number): MgArray {
  const v = Float64Array.from(values(x));
  v[i]! += delta;
  return mg.array(v, null, { shape: [...x.shape] });
}

/** Central differences of Σ w ⊙ fn(...) with respect to every element of every primal. */
export function numericVjp(fn: Fn, primals: MgArray[], w: MgArray, h = 1e-6): number[][] {
  const wv = values(w);
  const L = (xs: MgArray[]) => values(fn(...xs)).reduce((acc, v, i) => acc + v * wv[i]!, 0);
  return primals.map((p, pi) => {
    const out: number[] = [];
    for (let i = 0; i < p.size; i++) {
      const plus = primals.map((q, qi) => (qi === pi ? withElement(q, i, h) : q));
      const minus = primals.map((q, qi) => (qi === pi ? withElement(q, i, -h) : q));
      out.push((L(plus) - L(minus)) / (2 * h));
    }
    return out;
  });
}

/** Central difference of fn along the tangent direction. */
export function numericJvp(fn: Fn, primals: MgArray[], tangents: MgArray[], h = 1e-6): number[] {
  const step = (sign: number) =>
    primals.map((p, i) => {
      const pv = values(p);
      const tv = values(tangents[i]!);
      return mg.array(Float64Array.from(pv, (v, k) => v + sign * h * tv[k]!), null, { shape: [...p.shape] });
    });
  const plus = values(fn(...step(1)));
  const minus = values(fn(...step(-1)));
  return plus.map((v, i) => (v - minus[i]!) / (2 * h));
}

/** Asserts |a − b| ≤ atol + rtol·|b| elementwise, with a readable failure. */
export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, rtol = 1e-6, atol = 1e-8): void {
  if (actual.length !== expected.length) throw new Error(`length ${actual.length} != ${expected.length}`);
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i]!;
    const b = expected[i]!;
    if (Number.isNaN(b) ? !Number.isNaN(a) : !(a === b || Math.abs(a - b) <= atol + rtol * Math.abs(b))) {
      throw new Error(`element ${i}: got ${a}, expected ${b} (rtol ${rtol}, atol ${atol})\nactual:   ${Array.from(actual).slice(0, 40).join(", ")}\nexpected: ${Array.from(expected).slice(0, 40).join(", ")}`);
    }
  }
}

/** Checks fn's vjp and jvp (built from the primitives' rules) against finite differences. */
export function gradcheck(fn: Fn, primals: MgArray[], seed = 7, tol = 1e-6): void {
  const y = fn(...primals);
  const w = randomArray([...y.shape], seed);
  const got = vjpOf(fn, primals, w).map(values);
  const want = numericVjp(fn, primals, w);
  got.forEach((g, i) => expectClose(g, want[i]!, tol, tol));
  const ts = primals.map((p, i) => randomArray([...p.shape], seed + 11 * (i + 1)));
  expectClose(values(jvpOf(fn, primals, ts)), numericJvp(fn, primals, ts), tol, tol);
}

/**
 * Checks a primitive's vmap rule: `build` makes one node of the primitive from per-example
 * inputs (its parameters are the node's inputs, in order); its vmap on the batched inputs (batch axis per input, -1 = shared) must equal stacking
 * the per-example results.
 */
export function checkVmap(build: (...xs: MgArray[]) => MgArray, batched: MgArray[], inAxes: number[]): void {
  const k = inAxes.findIndex((b) => b >= 0);
  const size = batched[k]!.shape[inAxes[k]!]!;
  const example = (t: number) =>
    batched.map((x, i) => {
      const b = inAxes[i]!;
      if (b < 0) return x;
      const start = x.shape.map((_, d) => (d === b ? t : 0));
      const stop = x.shape.map((n, d) => (d === b ? t + 1 : n));
      return mg.squeeze(sliceOp(x, start, stop), b);
    });
  const node = build(...example(0)).node!;
  const vmap = node.primitive.vmap;
  if (!vmap) throw new Error(`[test vmap] ${node.primitive.name} has no vmap rule.`);
  const [[out], [outAxis]] = vmap(batched, inAxes, node.params);
  const got = mg.moveaxis(out!, outAxis!, 0);
  const want = mg.stack(Array.from({ length: size }, (_, t) => build(...example(t))));
  if (got.shape.join(",") !== want.shape.join(",")) throw new Error(`vmap shape (${got.shape}) != (${want.shape})`);
  if (got.dtype !== want.dtype) throw new Error(`vmap dtype ${got.dtype.name} != ${want.dtype.name}`);
  expectClose(values(got), values(want), 1e-14, 1e-15);
}
