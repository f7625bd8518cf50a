// Kernel tables: how a backend finds its implementation of a primitive. Each backend owns one
// table keyed by record (the CPU's and the GPU's registry modules) and wraps `register` in a
// function typed by the record's params (registerCpu, registerGpu). A table may
// fall back to another one per primitive: a new backend registers what it implements and runs the
// rest with, say, the TypeScript CPU kernels.
import type { Node } from "./array.ts";
import { opName, type Primitive } from "./primitive.ts";

export interface KernelRegistryOptions<K> {
  /** Looked up for primitives this table has no kernel for. */
  fallback?: KernelRegistry<K>;
  /** Appended to the missing-kernel error ("run it on the CPU with …"). */
  hint?: string;
}

export class KernelRegistry<K> {
  private readonly kernels = new Map<Primitive, K>();

  constructor(
    /** The device name used in errors ("cpu", "gpu"). */
    readonly device: string,
    readonly options: KernelRegistryOptions<K> = {},
  ) {}

  /** Registers `kernel` for `record`; a second registration of one record is an error. */
  register(record: Primitive, kernel: K): void {
    if (this.kernels.has(record)) throw new Error(`[register] ${record.name} already has a ${this.device} kernel.`);
    this.kernels.set(record, kernel);
  }

  /** This table's kernel for `record`, else its fallback's, else undefined. */
  lookup(record: Primitive): K | undefined {
    return this.kernels.get(record) ?? this.options.fallback?.lookup(record);
  }

  /** The kernel for a node's primitive, or the error `[op] Primitive has no <device> kernel`. */
  require(node: Node): K {
    const k = this.lookup(node.primitive);
    if (k === undefined) throw noKernel(node, this.device, this.options.hint);
    return k;
  }
}

/** `[op] Primitive has no <device> kernel`: op is the record's user-facing name (opName). */
export function noKernel(node: Node, device: string, hint?: string): Error {
  return new Error(`[${opName(node)}] ${node.primitive.name} has no ${device} kernel${hint ? `; ${hint}` : ""}.`);
}
