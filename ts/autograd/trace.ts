// What every transform shares: tracer arrays, the walk that finds the part of a traced graph a
// transform must rewrite (the tape), and running a primitive's rule on the primitive's stream.
import { MgArray, type Node } from "../core/array.ts";
import { resolveStream, type Stream, stream as withStream } from "../core/device.ts";
import { isInexact } from "../core/dtype.ts";
import { makeArray } from "../core/graph.ts";
import { Broadcast } from "../core/primitives/views.ts";
import { StopGradient } from "../core/primitives/elementwise.ts";
import { formatShape, shapesEqual } from "../core/shape.ts";

/**
 * A fresh array equal to `p` that a transform differentiates with respect to. It must be a new
 * array (a value captured by the function and also passed as an argument, or one array passed
 * twice, get separate cotangents, as in MLX) yet stay linked to `p` so that an enclosing
 * transform sees through it. A broadcast to its own shape is exactly that: a view sharing `p`'s
 * storage on every device, whose vjp and jvp are the identity.
 */
export function makeTracer(p: MgArray): MgArray {
  p.checkUsable("transform");
  return makeArray(Broadcast, [p], { shape: [...p.shape] }, streamOf(p));
}

/** Where work about `a` goes: its producer's stream, or the current default for data (as MLX). */
export function streamOf(a: MgArray): Stream {
  return a.node ? a.stream : resolveStream();
}

/** Arrays of integer or bool dtype carry no derivative (their tangent/cotangent is zero). */
export const isDifferentiable = (a: MgArray): boolean => isInexact(a.dtype);

export interface TapeOptions {
  /** Arrays the walk never goes behind (a transform's own tracers or placeholders). */
  stop: ReadonlySet<MgArray>;
  /** Arrays that start active (they carry a tangent, a cotangent or a batch axis). */
  active: Set<MgArray>;
  /** Differentiation: cut at StopGradient and at integer/bool outputs. vmap rewrites all. */
  differentiate: boolean;
}

/**
 * The nodes between `outputs` and the active arrays, in topological order (inputs first). A node
 * is on the tape when one of its inputs is active; its outputs then become active. Iterative, so
 * long chains do not overflow the stack.
 */
export function buildTape(outputs: readonly MgArray[], opts: TapeOptions): Node[] {
  const tape: Node[] = [];
  const visited = new Set<Node>();
  const stack: { node: Node; next: number }[] = [];
  const enter = (a: MgArray): void => {
    if (opts.stop.has(a)) return;
    const node = a.node;
    if (!node || visited.has(node)) return;
    visited.add(node);
    if (opts.differentiate && node.primitive === StopGradient) return;
    stack.push({ node, next: 0 });
  };
  for (const out of outputs) {
    enter(out);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (top.next < top.node.inputs.length) {
        enter(top.node.inputs[top.next++]!);
        continue;
      }
      stack.pop();
      const node = top.node;
      if (!node.inputs.some((i) => opts.active.has(i))) continue;
      const outs = opts.differentiate ? node.outputs.filter(isDifferentiable) : node.outputs;
      if (outs.length === 0) continue;
      tape.push(node);
      for (const o of outs) opts.active.add(o);
    }
  }
  return tape;
}

/** Runs a primitive's rule with the node's stream as the default, so its ops land on that device. */
export function onStream<T>(s: Stream, fn: () => T): T {
  return withStream(s, fn);
}

/** Checks what a rule returned against what it must return (catches rule bugs early, by name). */
export function checkRuleResult(
  rule: "vjp" | "jvp",
  node: Node,
  result: readonly MgArray[] | undefined,
  expected: readonly MgArray[],
  what: string,
): void {
  const name = node.primitive.name;
  if (!Array.isArray(result) || result.length !== expected.length) {
    throw new Error(
      `[${rule}] ${name} returned ${Array.isArray(result) ? result.length : "no"} ${what} for ${expected.length} ` +
        `(internal error in its ${rule} rule).`,
    );
  }
  result.forEach((r, i) => {
    if (!(r instanceof MgArray)) {
      throw new Error(`[${rule}] ${name} returned a non-array ${what.replace(/s$/, "")} (internal error in its ${rule} rule).`);
    }
    const e = expected[i]!;
    if (!shapesEqual(r.shape, e.shape)) {
      throw new Error(
        `[${rule}] ${name} returned a ${what.replace(/s$/, "")} of shape ${formatShape(r.shape)} for an array of shape ` +
          `${formatShape(e.shape)} (internal error in its ${rule} rule).`,
      );
    }
  });
}
