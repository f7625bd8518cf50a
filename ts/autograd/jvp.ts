// Forward mode: trace the function on tracer copies of the primals, then walk the traced graph
// forwards calling each primitive's jvp rule with the tangents of its inputs.
import { MgArray } from "../core/array.ts";
import { userCall } from "../core/ownership.ts";
import { type Dtype, isInexact } from "../core/dtype.ts";
import { withRetainedGraph } from "../core/graph.ts";
import { missingRule } from "../core/primitive.ts";
import { formatShape, shapesEqual } from "../core/shape.ts";
import { astype } from "../core/ops/elementwise.ts";
import { zeros } from "../core/ops/creation.ts";
import { buildTape, checkRuleResult, isDifferentiable, makeTracer, onStream, streamOf } from "./trace.ts";
// The rules every transform reads (attached to the records as this module loads).
import "../core/rules/index.ts";
import { type Transformable, treeFlatten, treeUnflatten } from "./tree.ts";
import { flattenOutputs } from "./vjp.ts";

type AnyFn = (...args: unknown[]) => unknown;

export interface JvpResult {
  outputs: MgArray[];
  /** One tangent per output. */
  jvps: MgArray[];
}

/**
 * The core of jvp: `fn` maps a flat list of arrays to a flat list of arrays; `tangents[i]` is the
 * tangent of `primals[i]`, or null for a primal held constant.
 */
export function jvpFlat(
  fn: (primals: MgArray[]) => MgArray[],
  primals: readonly MgArray[],
  tangents: readonly (MgArray | null)[],
  tag = "jvp",
): JvpResult {
  if (primals.length !== tangents.length) {
    throw new Error(`[${tag}] Number of inputs (${primals.length}) does not match number of tangents (${tangents.length}).`);
  }
  primals.forEach((p, i) => {
    const t = tangents[i];
    if (t && !shapesEqual(p.shape, t.shape)) {
      throw new Error(
        `[${tag}] Input shape ${formatShape(p.shape)} does not match shape of tangent ${formatShape(t.shape)} (input ${i}).`,
      );
    }
  });
  return withRetainedGraph(() => {
    const tracers = primals.map(makeTracer);
    const outputs = fn(tracers);

    const tan = new Map<MgArray, MgArray>();
    const active = new Set<MgArray>();
    tracers.forEach((x, i) => {
      const t = tangents[i];
      if (!t || !isDifferentiable(x)) return;
      tan.set(x, t.dtype === x.dtype ? t : astype(t, x.dtype, { stream: streamOf(x) }));
      active.add(x);
    });
    const tape = buildTape(outputs, { stop: new Set(tracers), active, differentiate: true });

    for (const node of tape) {
      const rule = node.primitive.jvp;
      if (!rule) throw missingRule(node.primitive, "jvp");
      const argnums: number[] = [];
      const ts: MgArray[] = [];
      node.inputs.forEach((x, i) => {
        const t = tan.get(x);
        if (t) {
          argnums.push(i);
          ts.push(t);
        }
      });
      onStream(node.stream, () => {
        const result = rule.call(node.primitive, node.inputs, ts, argnums, node.outputs, node.params);
        checkRuleResult("jvp", node, result, node.outputs, "tangents");
        result.forEach((t, j) => {
          const o = node.outputs[j]!;
          if (isDifferentiable(o)) tan.set(o, t.dtype === o.dtype ? t : astype(t, o.dtype));
        });
      });
    }

    // Integer and bool outputs have zero tangents, in the tangents' dtype (as MLX's comparisons).
    const zeroDtype: Dtype | undefined = tangents.find((t) => t && isInexact(t.dtype))?.dtype ?? undefined;
    const jvps = outputs.map((o) => {
      const t = tan.get(o);
      if (t) return t;
      const d = isDifferentiable(o) ? o.dtype : zeroDtype ?? o.dtype;
      return zeros(o.shape, d, { stream: streamOf(o) });
    });
    return { outputs, jvps };
  });
}

/**
 * Computes the Jacobian-vector product, as mx.jvp: `fn(...primals)` returns an array or a list
 * (tree) of arrays; `tangents` match the primals. Returns `[outputs, jvps]`, both flat lists.
 * @example
 * mg.jvp((x: mg.MgArray) => mg.square(x), [mg.array(3, mg.float32)], [mg.array(1, mg.float32)])[1]
 */
export function jvp<P extends unknown[]>(
  fun: (...args: P) => unknown,
  primals: NoInfer<P>,
  tangents: readonly unknown[],
): [MgArray[], MgArray[]] {
  if (typeof fun !== "function") throw new TypeError("[jvp] fun must be a function.");
  if (!Array.isArray(primals)) throw new TypeError("[jvp] primals must be a list of arrays.");
  if (!Array.isArray(tangents)) throw new TypeError("[jvp] tangents must be a list of arrays.");
  const flatPrimals = treeFlatten(primals, true, "jvp");
  const flatTangents = treeFlatten(tangents, true, "jvp");
  if (flatPrimals.length !== flatTangents.length) {
    throw new Error("[jvp] Number of inputs does not match number of tangents.");
  }
  const { outputs, jvps } = jvpFlat(
    (tracers) => flattenOutputs(userCall(() => (fun as unknown as AnyFn)(...(treeUnflatten(primals, tracers) as unknown[]))), "jvp"),
    flatPrimals,
    flatTangents,
  );
  return [outputs, jvps];
}
