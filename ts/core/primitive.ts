// A primitive is one record: its shape/dtype rule, CPU reference, GPU kernel choice and its
// derivative and batching rules. Ops (ts/core/ops) build nodes that point at these records;
// backends (ts/backend/*) evaluate them; transforms (ts/autograd) read vjp/jvp/vmap.
import type { MgArray } from "./array.ts";
import type { Dtype } from "./dtype.ts";

export interface OutputSpec {
  shape: number[];
  dtype: Dtype;
}

/** A compiled-on-demand kernel: a template in Sources/Kernels/<file> instantiated under `name`. */
export interface KernelInstance {
  /** File in Sources/Kernels holding the template (its `#include "…"`s are inlined). */
  file: string;
  /** The host_name the instance is compiled under (unique, a valid identifier). */
  name: string;
  /** The C++ template-id to instantiate, e.g. `unary_v<Exp, float, float>`. */
  instantiation: string;
}

/**
 * How the GPU backend runs a primitive (ts/backend/gpu):
 * - "elementwise": an MSL functor in Sources/Kernels/elementwise_ops.h; single ops use the static
 *   unary/binary/ternary kernels and chains fuse into one generated kernel;
 * - "view": layout only (no kernel), except when a copy is unavoidable (recorded in the trace);
 * - "kernel": the primitive chooses and encodes its own kernels.
 */
export type GpuRule =
  | { readonly kind: "elementwise"; readonly functor: string }
  | { readonly kind: "view" }
  | {
      readonly kind: "kernel";
      /** Kernel instances the node will use (compiled together before encoding). */
      kernels?(node: import("./array.ts").Node): KernelInstance[];
      encode(enc: import("../backend/gpu/encoder.ts").GpuEncoder, node: import("./array.ts").Node): void;
    };

/** Classification used by automatic fusion (MLX's compile fuses exactly these kinds). */
export type FusionKind = "unary" | "binary" | "ternary" | "broadcast";

export interface Primitive<P = unknown> {
  /** MLX's primitive name ("Add", "Exp", "Reduce" …): shown in traces and errors. */
  readonly name: string;
  /** The shape/dtype rule: output specs from the (validated) inputs and params. */
  outputSpecs(inputs: readonly MgArray[], params: P): OutputSpec[];
  /**
   * CPU reference. Inputs are evaluated; each output must be given data (allocated by
   * `allocateOutput` or a view by `setView` from ts/backend/cpu/data.ts).
   */
  cpu(inputs: readonly MgArray[], outputs: readonly MgArray[], params: P): void;
  /** GPU kernel choice; absent means the primitive has no GPU kernel yet (a clear error). */
  gpu?: GpuRule;
  /** Elementwise primitives that automatic fusion may merge into one kernel. */
  fusion?: FusionKind;
  /** Layout-only primitives (reshape, transpose, broadcast, slice): no arithmetic, usually no copy. */
  view?: boolean;
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
  /** A stable string of the params, for graph caches (compile) and fused-kernel keys. */
  paramsKey?(params: P): string;
}

/** Raised by transforms when a primitive lacks the rule they need. */
export function missingRule(p: Primitive<never>, rule: "vjp" | "jvp" | "vmap"): Error {
  return new Error(`[${rule}] ${p.name} has no ${rule} rule.`);
}
