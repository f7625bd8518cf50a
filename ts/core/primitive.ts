// A primitive is one record of what holds for an operation on every device: its shape/dtype rule,
// the flags planners and transforms read (fusion kind, layout rule, compile's shapeless rule …)
// and, attached by the rules layer (ts/core/rules), its derivative and batching rules. Ops
// (ts/core/ops) build nodes that point at records; each backend registers its own
// implementation against a record (registerCpu / registerGpu); the core never sees a kernel.
// docs/ARCHITECTURE.md ("Primitives and backends") has the full pattern.
import type { MgArray, Node } from "./array.ts";
import type { Dtype } from "./dtype.ts";

export interface OutputSpec {
  shape: number[];
  dtype: Dtype;
}

/** Classification used by automatic fusion (MLX's compile fuses exactly these kinds). */
export type FusionKind = "unary" | "binary" | "ternary" | "broadcast";

/** Where an array's elements are, relative to its storage: what a layout rule reads (items). */
export interface Placement {
  readonly offset: number;
  readonly strides: readonly number[];
  /** Row-major dense from `offset` (size-1 dims ignored). */
  readonly rowContiguous: boolean;
  /** Column-major dense from `offset` (size-1 dims ignored). */
  readonly colContiguous: boolean;
}

/** An output that is a view of input `input`'s storage: its offset and strides, in its own items. */
export interface ViewOf {
  readonly input: number;
  readonly offset: number;
  readonly strides: readonly number[];
}

/**
 * How mg.compile's shapeless replay treats a primitive:
 * - "elementwise": its inputs share the output's shape (the op broadcast them first);
 * - "infer": its output shapes follow from its inputs' shapes, whatever the params;
 * - `resize`: its params hold an output shape that the replay recomputes — "broadcast" from the
 *   operands its elementwise consumer broadcasts together, "squeeze" only where it drops the axes a
 *   reduction kept (any other use refuses shapeless compilation).
 * Absent: the params fix an output shape traced from the first call, so shapeless compile refuses it.
 */
export type ShapelessRule<P> =
  | "elementwise"
  | "infer"
  | { readonly resize: "broadcast" | "squeeze"; withShape(params: P, shape: number[]): P };

/** Derivative and batching rules, written in ops (ts/core/rules) so they run on any device. */
export interface Rules<P> {
  /**
   * Reverse mode: cotangents of the inputs listed in `argnums`, given the cotangents of every
   * output (zeros where an output is unused). Written in ordinary ops so it runs on any device,
   * fuses, and can be differentiated again.
   */
  vjp?(
    primals: readonly MgArray[],
    cotangents: readonly MgArray[],
    argnums: readonly number[],
    outputs: readonly MgArray[],
    params: P,
  ): MgArray[];
  /** Forward mode: tangents of every output, given the tangents of the inputs in `argnums`. */
  jvp?(
    primals: readonly MgArray[],
    tangents: readonly MgArray[],
    argnums: readonly number[],
    outputs: readonly MgArray[],
    params: P,
  ): MgArray[];
  /**
   * Batching: inputs carry a batch axis (`axes[i]`, or -1 when unbatched); returns the outputs
   * and the batch axis of each.
   */
  vmap?(inputs: readonly MgArray[], axes: readonly number[], params: P): [MgArray[], number[]];
}

// Every member that takes P is a method, so a Primitive<P> is usable where a Primitive<unknown>
// is expected (nodes and registries hold records of any params).
export interface Primitive<P = unknown> extends Rules<P> {
  /** MLX's primitive name ("Add", "Exp", "Reduce" …): shown in traces and errors. */
  readonly name: string;
  /** The user-facing op for error tags (MLX's snake_case name). Default: the name lower-cased. */
  opName?(params: P): string;
  /** The shape/dtype rule: output specs from the (validated) inputs and params. */
  outputSpecs(inputs: readonly MgArray[], params: P): OutputSpec[];
  /** Elementwise kinds automatic fusion may merge (where the device has an elementwise kernel). */
  readonly fusion?: FusionKind;
  /**
   * Present on layout-only primitives (broadcast, reshape, transpose, slice …): where each output
   * lives as a view of an input, computed from the inputs' placements alone (evaluated inputs, or
   * predicted ones), or null when the layout cannot express it. Backends apply the views without a
   * kernel; on null they run the kernel registered for the record (a copy, noted in the trace).
   */
  layout?(
    inputs: readonly MgArray[],
    placements: readonly Placement[],
    outputs: readonly MgArray[],
    params: P,
  ): readonly ViewOf[] | null;
  /** mg.compile's shapeless replay (see ShapelessRule). */
  readonly shapeless?: ShapelessRule<P>;
  /** Reductions: the axes the output keeps as size 1 (compile replays a reshape dropping them as a squeeze). */
  keptAxes?(params: P, ndim: number): number[];
  /** Draws random bits: a compiled function reading a constant computed from it is warned about. */
  readonly random?: boolean;
  /** Binary elementwise: whether complex64 operands are supported (the op rejects them otherwise). */
  readonly complex?: boolean;
  /**
   * A data-less placeholder (the traced inputs of compile and vmap): evaluating it throws this
   * error on every device, before anything of the eval runs.
   */
  placeholder?(params: P): Error;
  /** A stable string of the params, for graph caches (compile) and fused-kernel keys. */
  paramsKey?(params: P): string;
}

/** The user-facing op a node computes, for error tags. */
export function opName(node: Node): string {
  const p = node.primitive;
  return p.opName ? p.opName(node.params) : p.name.toLowerCase();
}

/**
 * Attaches derivative and batching rules to a record: the one place rules are given (from the
 * rules layer, which may use every op). A rule given twice is an error.
 */
export function defineRules<P>(record: Primitive<P>, rules: Rules<P>): void {
  for (const key of ["vjp", "jvp", "vmap"] as const) {
    if (rules[key] === undefined) continue;
    if (record[key] !== undefined) throw new Error(`[defineRules] ${record.name} already has a ${key} rule.`);
  }
  if (rules.vjp) record.vjp = rules.vjp;
  if (rules.jvp) record.jvp = rules.jvp;
  if (rules.vmap) record.vmap = rules.vmap;
}

/** Raised by transforms when a primitive lacks the rule they need. */
export function missingRule(p: Primitive, rule: "vjp" | "jvp" | "vmap"): Error {
  return new Error(`[${rule}] ${p.name} has no ${rule} rule.`);
}
