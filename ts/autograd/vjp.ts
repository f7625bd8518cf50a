// Reverse mode: trace the function on tracer copies of the primals, then walk the traced graph
// backwards calling each primitive's vjp rule (written in ops, so the backward pass is itself a
// lazy graph that can be differentiated again, runs on the primitives' devices and fuses).
import { MgArray } from "../core/array.ts";
import { float32 } from "../core/dtype.ts";
import { withRetainedGraph } from "../core/graph.ts";
import { missingRule } from "../core/primitive.ts";
import { StopGradient } from "../core/primitives/elementwise.ts";
import { formatShape, shapesEqual } from "../core/shape.ts";
import { fromValues } from "../core/ops/convert.ts";
import { userCall } from "../core/ownership.ts";
import { add, astype } from "../core/ops/elementwise.ts";
import { zeros, zerosLike } from "../core/ops/creation.ts";
import { buildTape, checkRuleResult, isDifferentiable, makeTracer, onStream, streamOf } from "./trace.ts";
// The rules every transform reads (attached to the records as this module loads).
import "../core/rules/index.ts";
import { type Transformable, treeFlatten, treeUnflatten } from "./tree.ts";

type AnyFn = (...args: unknown[]) => unknown;

export interface VjpCoreOptions {
  /** Error tag: "vjp", "grad", "value_and_grad". */
  tag: string;
  /**
   * Outputs produced by stop_gradient take no cotangent (MLX's pairing, which is what lets
   * value_and_grad return auxiliary values). Internal callers pair every output.
   */
  skipStopGradientOutputs: boolean;
}

export interface VjpResult {
  outputs: MgArray[];
  /** Cotangents of the primals listed in argnums, in the primals' dtypes. */
  vjps: MgArray[];
}

/**
 * The core of vjp/grad: `fn` maps a flat list of arrays to a flat list of arrays. `cotangents`
 * may be a function of the outputs (grad builds its seed from the output).
 */
export function vjpFlat(
  fn: (primals: MgArray[]) => MgArray[],
  primals: readonly MgArray[],
  cotangents: readonly MgArray[] | ((outputs: readonly MgArray[]) => MgArray[]),
  argnums: readonly number[],
  opts: VjpCoreOptions,
): VjpResult {
  return withRetainedGraph(() => {
    const tracers = primals.map(makeTracer);
    const outputs = fn(tracers);
    const cots = typeof cotangents === "function" ? cotangents(outputs) : cotangents;

    // Pair outputs with cotangents.
    const pairs: [MgArray, MgArray][] = [];
    let k = 0;
    for (const out of outputs) {
      if (opts.skipStopGradientOutputs && out.node?.primitive === StopGradient) continue;
      if (k >= cots.length) {
        throw new Error(
          `[${opts.tag}] Number of outputs to compute gradients for (${outputs.length}) does not match number of cotangents (${cots.length}).`,
        );
      }
      const c = cots[k++]!;
      if (!shapesEqual(out.shape, c.shape)) {
        throw new Error(
          `[${opts.tag}] Output shape ${formatShape(out.shape)} does not match cotangent shape ${formatShape(c.shape)}.` +
            (opts.tag === "grad" || opts.tag === "value_and_grad" ? " If you are using grad your function must return a scalar." : ""),
        );
      }
      pairs.push([out, c]);
    }
    if (k !== cots.length) {
      throw new Error(
        `[${opts.tag}] Number of outputs to compute gradients for (${k}) does not match number of cotangents (${cots.length}).`,
      );
    }

    const stop = new Set(tracers);
    const active = new Set<MgArray>();
    for (const i of argnums) if (isDifferentiable(tracers[i]!)) active.add(tracers[i]!);
    const tape = buildTape(outputs, { stop, active, differentiate: true });

    // Cotangents accumulate per array; an array's entry is consumed when its producer runs.
    const cot = new Map<MgArray, MgArray>();
    const accumulate = (a: MgArray, g: MgArray): void => {
      const prev = cot.get(a);
      cot.set(a, prev ? add(prev, g) : g);
    };
    for (const [out, c] of pairs) {
      if (!active.has(out)) continue;
      onStream(streamOf(out), () => accumulate(out, astype(c, out.dtype)));
    }

    for (let t = tape.length - 1; t >= 0; t--) {
      const node = tape[t]!;
      const outs = node.outputs;
      if (!outs.some((o) => cot.has(o))) continue;
      const rule = node.primitive.vjp;
      if (!rule) throw missingRule(node.primitive, "vjp");
      const argnumsOfNode: number[] = [];
      node.inputs.forEach((x, i) => {
        if (active.has(x)) argnumsOfNode.push(i);
      });
      onStream(node.stream, () => {
        const cotsOfNode = outs.map((o) => {
          const c = cot.get(o);
          cot.delete(o);
          // zeros(shape, dtype), not zerosLike(o): an output nobody used may already be released
          // (a library call dropped it), and only its shape and dtype are needed.
          return c ?? zeros(o.shape, o.dtype);
        });
        const result = rule.call(node.primitive, node.inputs, cotsOfNode, argnumsOfNode, outs, node.params);
        const targets = argnumsOfNode.map((i) => node.inputs[i]!);
        checkRuleResult("vjp", node, result, targets, "cotangents");
        result.forEach((g, j) => {
          const x = targets[j]!;
          accumulate(x, g.dtype === x.dtype ? g : astype(g, x.dtype));
        });
      });
    }

    const vjps = argnums.map((i) => {
      const p = primals[i]!;
      const g = cot.get(tracers[i]!);
      if (!g) return zerosLike(p, null, { stream: streamOf(p) });
      return g.dtype === p.dtype ? g : astype(g, p.dtype, { stream: streamOf(p) });
    });
    return { outputs, vjps };
  });
}

/** Flattens the output of a user function: an array or a tree of arrays. */
export function flattenOutputs(out: unknown, tag: string): MgArray[] {
  if (out instanceof MgArray) return [out];
  try {
    return treeFlatten(out, true, tag);
  } catch {
    throw new TypeError(`[${tag}] The function must return an array or a tree (arrays, objects) of arrays.`);
  }
}

/**
 * Computes the vector-Jacobian product, as mx.vjp: `fn(...primals)` returns an array or a list
 * (tree) of arrays; `cotangents` match its outputs. Returns `[outputs, vjps]`: the outputs as a
 * flat list and one cotangent per primal (each shaped like its primal, trees allowed).
 * @example
 * mg.vjp((x: mg.MgArray) => mg.square(x), [mg.array(3, mg.float32)], [mg.array(1, mg.float32)])[1]
 */
export function vjp<P extends unknown[]>(
  fun: (...args: P) => unknown,
  primals: NoInfer<P>,
  cotangents: readonly unknown[],
): [MgArray[], P] {
  if (typeof fun !== "function") throw new TypeError("[vjp] fun must be a function.");
  if (!Array.isArray(primals)) throw new TypeError("[vjp] primals must be a list of arrays.");
  if (!Array.isArray(cotangents)) throw new TypeError("[vjp] cotangents must be a list of arrays.");
  const flatPrimals = treeFlatten(primals, true, "vjp");
  const flatCots = treeFlatten(cotangents, true, "vjp");
  const { outputs, vjps } = vjpFlat(
    (tracers) => flattenOutputs(userCall(() => (fun as unknown as AnyFn)(...(treeUnflatten(primals, tracers) as unknown[]))), "vjp"),
    flatPrimals,
    flatCots,
    flatPrimals.map((_, i) => i),
    { tag: "vjp", skipStopGradientOutputs: true },
  );
  return [outputs, treeUnflatten(primals, vjps) as P];
}

/** The scalar seed of grad: 1 (float32, cast to the output's dtype as MLX does). */
export function gradSeed(): MgArray {
  return fromValues([1], [], float32);
}
