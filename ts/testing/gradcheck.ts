// gradcheck: compares a function's analytic derivatives (its primitives' vjp and jvp rules, on
// the device under test and in the inputs' dtype) with central finite differences computed in
// float64 on the CPU device. Users run it from their own tests to prove custom rules.
import { MgArray } from "../core/array.ts";
import { cpu, resolveStream, stream as withStream, type StreamOrDevice } from "../core/device.ts";
import { bfloat16, type Dtype, float16, float32, float64, isComplex, isFloating } from "../core/dtype.ts";
import { evalArrays } from "../core/graph.ts";
import { fromValues } from "../core/ops/convert.ts";
import { astype } from "../core/ops/elementwise.ts";
import { treeFlatten, treeUnflatten } from "../autograd/tree.ts";
import { flattenOutputs, vjpFlat } from "../autograd/vjp.ts";
import { jvpFlat } from "../autograd/jvp.ts";
import { mulberry32 } from "./rng.ts";

/** gradcheck's options: eps, atol, rtol, order, stream, directions, seed, raiseException. */
export interface GradcheckOptions {
  /** Finite-difference step (the numerical side is always float64). Default 1e-6. */
  eps?: number;
  /** Absolute tolerance; default by the inputs' dtype (float64 1e-6, float32 1e-4, half 1e-2). */
  atol?: number;
  /** Relative tolerance; default by the inputs' dtype (float64 1e-5, float32 1e-3, half 1e-2). */
  rtol?: number;
  /** Highest derivative order checked: 2 also checks the derivative of the vjp, and so on. Default 1. */
  order?: number;
  /** Where the analytic derivatives run (e.g. mg.gpu). Default: the current default stream. */
  stream?: StreamOrDevice | null;
  /** Random (u, v) pairs for the ⟨u, J·v⟩ = ⟨Jᵀ·u, v⟩ check. Default 2. */
  directions?: number;
  /** Seed of the random directions. Default 0. */
  seed?: number;
  /** Throw an Error describing the worst mismatch (default), or only return the report. */
  raiseException?: boolean;
}

/** The worst disagreement gradcheck found: which check, order, input and output, both values. */
export interface GradcheckMismatch {
  /** "vjp" (a Jacobian entry from the vjp vs finite differences) or "jvp" (the identity). */
  check: "vjp" | "jvp";
  /** Derivative order being checked (1 = first derivatives). */
  order: number;
  /** Which differentiable input and output (their positions among the flattened arrays). */
  input: number;
  output: number;
  /** Element indices within that input and output (empty for the jvp identity). */
  inputIndex: number[];
  outputIndex: number[];
  analytic: number;
  numeric: number;
  /** |analytic − numeric| and the tolerance it was held to. */
  error: number;
  tolerance: number;
}

/** gradcheck's report: ok, how many values it compared, the worst mismatch, a message. */
export interface GradcheckReport {
  ok: boolean;
  /** Number of compared values (Jacobian entries and identity checks, all orders). */
  compared: number;
  /** The comparison closest to (or furthest past) its tolerance, with both values. */
  worst: GradcheckMismatch | null;
  message: string;
}

type AnyFn = (...args: unknown[]) => unknown;

function normals(n: number, next: () => number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const u = 1 - next();
    out[i] = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * next());
  }
  return out;
}

function defaults(dtypes: readonly Dtype[]): { atol: number; rtol: number } {
  if (dtypes.some((d) => d === bfloat16)) return { atol: 5e-2, rtol: 5e-2 };
  if (dtypes.some((d) => d === float16)) return { atol: 1e-2, rtol: 1e-2 };
  if (dtypes.some((d) => d === float32)) return { atol: 1e-4, rtol: 1e-3 };
  return { atol: 1e-6, rtol: 1e-5 };
}

function unravel(flat: number, shape: readonly number[]): number[] {
  const idx = new Array<number>(shape.length).fill(0);
  for (let i = shape.length - 1; i >= 0; i--) {
    const d = shape[i]!;
    idx[i] = d === 0 ? 0 : flat % d;
    flat = d === 0 ? 0 : Math.floor(flat / d);
  }
  return idx;
}

/** Values of an array as float64 (evaluated on the CPU device). */
function read64(a: MgArray): Float64Array {
  const x = a.dtype === float64 ? a : astype(a, float64, { stream: cpu });
  return Float64Array.from(x.dataSync() as Float64Array);
}

interface Problem {
  fn: AnyFn;
  args: readonly unknown[];
  /** Flattened input arrays and which of them are differentiated (floating dtype). */
  inputs: MgArray[];
  diff: number[];
}

/** Runs fn on the flat inputs (a list, trees allowed) and flattens its differentiable outputs. */
function call(p: Problem, flat: readonly MgArray[]): MgArray[] {
  const out = (p.fn as AnyFn)(...(treeUnflatten(p.args, flat) as unknown[]));
  return flattenOutputs(out, "gradcheck").filter((o) => isFloating(o.dtype));
}

/**
 * Checks the derivatives of `fn` at `inputs` (a list of arrays or trees; fn is called as
 * fn(...inputs)). Floating inputs are differentiated, others held fixed; floating outputs are
 * compared. Order 1 compares every Jacobian entry of the analytic vjp with central finite
 * differences (float64, CPU device) and checks ⟨u, J·v⟩ = ⟨Jᵀ·u, v⟩ between the analytic jvp and
 * vjp on random directions; order k also checks the derivative of the order-(k−1) vjp.
 * Throws (by default) with the worst element: its indices and both values.
 * @example
 * mg.testing.gradcheck((x: mg.MgArray) => mg.sin(x), [mg.array([0.5, 1], mg.float64)]).ok
 */
export function gradcheck<P extends unknown[]>(fn: (...args: P) => unknown, inputs: NoInfer<P>, opts: GradcheckOptions = {}): GradcheckReport {
  if (typeof fn !== "function") throw new TypeError("[gradcheck] fn must be a function.");
  if (!Array.isArray(inputs)) throw new TypeError("[gradcheck] inputs must be a list of arrays (or trees of arrays).");
  const flat = treeFlatten(inputs, true, "gradcheck");
  for (const x of flat) {
    if (isComplex(x.dtype)) {
      throw new TypeError("[gradcheck] complex inputs are not supported: pass the real and imaginary parts as separate inputs.");
    }
  }
  const diff = flat.flatMap((x, i) => (isFloating(x.dtype) ? [i] : []));
  if (diff.length === 0) throw new Error("[gradcheck] no floating-point input to differentiate.");
  const order = opts.order ?? 1;
  if (!Number.isInteger(order) || order < 1) throw new RangeError(`[gradcheck] order must be a positive integer, got ${order}.`);
  const eps = opts.eps ?? 1e-6;
  if (!(eps > 0)) throw new RangeError(`[gradcheck] eps must be positive, got ${eps}.`);
  const tol = { ...defaults(diff.map((i) => flat[i]!.dtype)), ...pick(opts) };
  const analyticStream = resolveStream(opts.stream ?? null);
  const next = mulberry32(opts.seed ?? 0);

  let compared = 0;
  let worst: GradcheckMismatch | null = null;
  const consider = (m: GradcheckMismatch): void => {
    compared++;
    if (!worst || m.error / m.tolerance > worst.error / worst.tolerance || Number.isNaN(m.error)) {
      if (!worst || !Number.isNaN(worst.error)) worst = m;
    }
  };

  let problem: Problem = { fn: fn as unknown as AnyFn, args: inputs, inputs: flat, diff };
  for (let k = 1; k <= order; k++) {
    checkOrder(problem, k, eps, tol, analyticStream, next, opts.directions ?? 2, consider);
    if (k < order) problem = differentiated(problem, next);
  }

  const w = worst as GradcheckMismatch | null;
  const ok = w === null || w.error <= w.tolerance;
  const message = w === null ? "[gradcheck] nothing to compare (no floating-point output)." : describe(w, ok, compared);
  if (!ok && opts.raiseException !== false) throw new Error(message);
  return { ok, compared, worst: w, message };
}

function pick(o: GradcheckOptions): { atol?: number; rtol?: number } {
  const r: { atol?: number; rtol?: number } = {};
  if (o.atol !== undefined) r.atol = o.atol;
  if (o.rtol !== undefined) r.rtol = o.rtol;
  return r;
}

function describe(w: GradcheckMismatch, ok: boolean, compared: number): string {
  const fmt = (idx: number[]) => `[${idx.join(",")}]`;
  const what =
    w.check === "vjp"
      ? `d output ${w.output}${fmt(w.outputIndex)} / d input ${w.input}${fmt(w.inputIndex)}`
      : `⟨u, J·v⟩ (analytic jvp) vs ⟨Jᵀ·u, v⟩ (analytic vjp), direction ${w.output}`;
  const head = ok ? `[gradcheck] ok (${compared} values); closest to tolerance:` : `[gradcheck] derivative mismatch (order ${w.order}, ${w.check}):`;
  const rhs = w.check === "vjp" ? "numeric" : "vjp side";
  return `${head} ${what}: analytic ${w.analytic} vs ${rhs} ${w.numeric} (|diff| ${w.error.toExponential(3)}, tolerance ${w.tolerance.toExponential(3)}).`;
}

/** The first-order checks of `p` (order `k` is only a label for reports). */
function checkOrder(
  p: Problem,
  k: number,
  eps: number,
  tol: { atol: number; rtol: number },
  analyticStream: ReturnType<typeof resolveStream>,
  next: () => number,
  directions: number,
  consider: (m: GradcheckMismatch) => void,
): void {
  // Numerical Jacobian: float64 copies of the inputs on the CPU device, perturbed one at a time.
  const base = p.inputs.map((x) => (isFloating(x.dtype) ? read64(x) : null));
  const make = (vals: (Float64Array | null)[]) =>
    p.inputs.map((x, i) => (vals[i] ? fromValues(vals[i]!, x.shape, float64, resolveStream(cpu)) : x));
  const evalNumeric = (vals: (Float64Array | null)[]): Float64Array[] =>
    withStream(cpu, () => {
      const outs = call(p, make(vals));
      evalArrays(outs);
      return outs.map(read64);
    });
  const center = withStream(cpu, () => call(p, make(base)));
  const outShapes = center.map((o) => [...o.shape]);
  const outSizes = outShapes.map((s) => s.reduce((a, b) => a * b, 1));
  if (outShapes.length === 0) return;

  // numeric[input][element] = per-output column of ∂out/∂x_element.
  const numeric: Float64Array[][][] = p.diff.map((i) => {
    const x = base[i]!;
    const cols: Float64Array[][] = [];
    for (let e = 0; e < x.length; e++) {
      const saved = x[e]!;
      x[e] = saved + eps;
      const plus = evalNumeric(base);
      x[e] = saved - eps;
      const minus = evalNumeric(base);
      x[e] = saved;
      // A value that does not move (even an infinite one, like an empty log-sum) has derivative 0.
      cols.push(plus.map((pl, o) => pl.map((v, j) => (v === minus[o]![j]! ? 0 : (v - minus[o]![j]!) / (2 * eps)))));
    }
    return cols;
  });

  // Analytic Jacobian rows: one vjp per output element, on the device under test.
  withStream(analyticStream, () => {
    outShapes.forEach((shape, o) => {
      for (let j = 0; j < outSizes[o]!; j++) {
        const { vjps } = vjpFlat(
          (xs) => call(p, xs),
          p.inputs,
          (outs) =>
            outs.map((out, q) => {
              const v = new Float64Array(outSizes[q]!);
              if (q === o) v[j] = 1;
              return fromValues(v, out.shape, out.dtype);
            }),
          p.diff,
          { tag: "gradcheck", skipStopGradientOutputs: false },
        );
        evalArrays(vjps);
        vjps.forEach((g, d) => {
          const a = read64(g);
          const col = numeric[d]!;
          for (let e = 0; e < a.length; e++) {
            const n = col[e]![o]![j]!;
            consider({
              check: "vjp",
              order: k,
              input: p.diff[d]!,
              output: o,
              inputIndex: unravel(e, p.inputs[p.diff[d]!]!.shape),
              outputIndex: unravel(j, shape),
              analytic: a[e]!,
              numeric: n,
              // Equal infinities match; a NaN on either side never does.
              error: a[e]! === n ? 0 : Math.abs(a[e]! - n),
              tolerance: tol.atol + tol.rtol * Math.abs(n),
            });
          }
        });
      }
    });

    // ⟨u, J·v⟩ from the jvp against ⟨Jᵀ·u, v⟩ from the vjp, on random directions.
    for (let r = 0; r < directions; r++) {
      const vs = p.diff.map((i) => normals(p.inputs[i]!.size, next));
      const us = outSizes.map((n) => normals(n, next));
      const tangents = p.inputs.map((x, i) => {
        const d = p.diff.indexOf(i);
        return d >= 0 ? fromValues(vs[d]!, x.shape, x.dtype) : null;
      });
      const { jvps } = jvpFlat((xs) => call(p, xs), p.inputs, tangents, "gradcheck");
      const { vjps } = vjpFlat(
        (xs) => call(p, xs),
        p.inputs,
        (outs) => outs.map((out, q) => fromValues(us[q]!, out.shape, out.dtype)),
        p.diff,
        { tag: "gradcheck", skipStopGradientOutputs: false },
      );
      evalArrays([...jvps, ...vjps]);
      let lhs = 0;
      let scale = 0;
      jvps.forEach((t, q) => {
        const jv = read64(t);
        const u = us[q]!;
        for (let j = 0; j < jv.length; j++) {
          lhs += u[j]! * jv[j]!;
          scale += Math.abs(u[j]! * jv[j]!);
        }
      });
      let rhs = 0;
      vjps.forEach((g, d) => {
        const jtu = read64(g);
        const v = vs[d]!;
        for (let e = 0; e < jtu.length; e++) {
          rhs += jtu[e]! * v[e]!;
          scale += Math.abs(jtu[e]! * v[e]!);
        }
      });
      consider({
        check: "jvp",
        order: k,
        input: -1,
        output: r,
        inputIndex: [],
        outputIndex: [],
        analytic: lhs,
        numeric: rhs,
        error: Math.abs(lhs - rhs),
        tolerance: tol.atol + tol.rtol * scale,
      });
    }
  });
}

/**
 * The problem one order up: x ↦ vjp(fn, x, w) for a fixed random cotangent w, so that checking
 * its first derivatives checks fn's second derivatives (vjp of vjp, jvp of vjp).
 */
function differentiated(p: Problem, next: () => number): Problem {
  const probe = withStream(cpu, () => call(p, p.inputs));
  const ws = probe.map((o) => normals(o.size, next));
  const fn = (...args: unknown[]) => {
    const xs = treeFlatten(args, true, "gradcheck");
    const { vjps } = vjpFlat(
      (ys) => call(p, ys),
      xs,
      (outs) => outs.map((out, q) => fromValues(ws[q]!, out.shape, out.dtype)),
      p.diff,
      { tag: "gradcheck", skipStopGradientOutputs: false },
    );
    return vjps;
  };
  return { fn, args: p.inputs, inputs: p.inputs, diff: p.diff };
}
