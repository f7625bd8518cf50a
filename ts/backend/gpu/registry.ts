// The GPU device's rule table: how each primitive record runs, registered with
// registerGpu(Record, rule), the rule's nodes typed by the record's params:
// - elementwise: an MSL functor of Sources/Kernels/elementwise_ops.h; single ops use the static
//   unary/binary/ternary kernels and chains of one output shape fuse into one generated kernel;
// - kernel: the rule lists the kernel instances a node will need (`kernels`, compiled together
//   before encoding) and encodes its dispatches (`encode`).
// Layout-only records (a `layout` rule) need no GPU rule unless the layout can return null; then
// their kernel rule is the copy. A record with no rule fails with `[op] Name has no gpu kernel`.
import type { Node } from "../../core/array.ts";
import type { Primitive } from "../../core/primitive.ts";
import { KernelRegistry } from "../../core/registry.ts";
import type { GpuEncoder } from "./encoder.ts";
import type { KernelInstance } from "./kernels.ts";

/** The MSL types and tags an elementwise kernel is instantiated with. */
export interface ElementwiseTypes {
  /** Compute (input) type, output type, index type. */
  T: string;
  U: string;
  idx: string;
  /** `<functor>_<input dtype>_<output dtype>`: unique per instance of one family. */
  tag: string;
  large: boolean;
}

export interface ElementwiseRule<P> {
  readonly kind: "elementwise";
  /** The MSL functor (AsType's depends on the node: Cast<its output type>). */
  functor(node: Node<P>): string;
  /** A kernel of its own for every layout instead of the unary/binary/ternary families, taking
   *  the strided arguments (DivMod's two outputs: binary.metal's divmod_g). Never fused. */
  stridedKernel?(types: ElementwiseTypes): KernelInstance;
}

export interface KernelRule<P> {
  readonly kind: "kernel";
  /** Kernel instances the node will use (compiled together before encoding). */
  kernels?(node: Node<P>): KernelInstance[];
  encode(enc: GpuEncoder, node: Node<P>): void;
}

export type GpuRule<P> = ElementwiseRule<P> | KernelRule<P>;

/** The GPU's rules (the registry erases each rule's params type; registerGpu is where it is checked). */
export const gpuRules = new KernelRegistry<GpuRule<any>>("gpu", { hint: "run it on the CPU with { stream: mg.cpu }" });

export function registerGpu<P>(record: Primitive<P>, rule: GpuRule<NoInfer<P>>): void {
  gpuRules.register(record, rule);
}

/** An elementwise rule applying one MSL functor (the record's name unless given). */
export function elementwise<P>(functor: string): ElementwiseRule<P> {
  return { kind: "elementwise", functor: () => functor };
}
