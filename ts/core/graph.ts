// Building nodes and evaluating graphs. Evaluation walks the graph iteratively (no recursion
// limit on long chains), runs each node once on its stream's backend, and detaches evaluated
// arrays from their inputs so that graphs free as they go.
import { MgArray, Node, setEvaluator } from "./array.ts";
import type { Primitive } from "./primitive.ts";
import type { DeviceType, Stream } from "./device.ts";
import { type Dtype, float64 } from "./dtype.ts";
import { checkShapeBounds, shapeFits } from "./shape.ts";
import { currentOp } from "./calls.ts";

/** What a backend knows about the eval it serves. */
export interface EvalContext {
  /** The arrays eval was asked for: always materialised. */
  targets: ReadonlySet<MgArray>;
  /**
   * A backend calls this once a node's work no longer needs its inputs (the CPU: right after the
   * node ran; the GPU: after the batch is submitted, since the runtime holds bound buffers until
   * the batch completes). Inputs that were the last use of an internal array free it there and then,
   * which keeps an eval's peak memory at what is live, not at everything it computed.
   */
  finished(node: Node): void;
}

export interface Backend {
  /**
   * Evaluates nodes of one stream in the given (topological) order. The backend may batch work and
   * finish it asynchronously, as long as every output's storage carries a `pending` wait until it
   * is ready.
   * A backend may leave an output unmaterialised when no one outside its fused kernel reads it
   * (its `graphRefs` are all inside); that array keeps its node and is recomputed if read later.
   */
  run(nodes: readonly Node[], ctx: EvalContext): void;
}

const backends = new Map<DeviceType, Backend>();
/** Makes `backend` run the nodes of `type`'s streams; returns the one it replaces (to restore it). */
export function registerBackend(type: DeviceType, backend: Backend): Backend | undefined {
  const previous = backends.get(type);
  backends.set(type, backend);
  return previous;
}

/** Arrays under a transform keep their graph after eval (vjp needs it); depth > 0 while tracing. */
let retainGraphDepth = 0;
/** Nodes evaluated while retained: detached when the outermost transform returns (no leak). */
let retainedNodes: Node[] = [];
export function withRetainedGraph<T>(fn: () => T): T {
  retainGraphDepth++;
  try {
    return fn();
  } finally {
    if (--retainGraphDepth === 0) {
      const nodes = retainedNodes;
      retainedNodes = [];
      for (const node of nodes) detach(node);
    }
  }
}

/** True while a transform traces (MLX's in_grad_tracing): ops may build what only a derivative needs. */
export function graphRetained(): boolean {
  return retainGraphDepth > 0;
}

/** Creates the outputs of one primitive application. Inputs must be usable arrays. */
export function makeNode<P>(
  primitive: Primitive<P>,
  inputs: MgArray[],
  params: P,
  stream: Stream,
): MgArray[] {
  const specs = primitive.outputSpecs(inputs, params);
  for (let i = 0; i < specs.length; i++) {
    const shape = specs[i]!.shape;
    if (!shapeFits(shape)) checkShapeBounds(shape, primitive.opName ? primitive.opName(params) : primitive.name.toLowerCase());
  }
  // rejectFloat64OnGpu's test without building a list of dtypes per node (this runs per op).
  if (stream.device.type === "gpu" && (inputs.some(isFloat64) || specs.some(isFloat64))) {
    rejectFloat64OnGpu(currentOp() ?? (primitive.opName ? primitive.opName(params) : primitive.name.toLowerCase()), [float64], stream);
  }
  const node: Node = new Node(primitive, params, inputs, stream);
  for (let k = 0; k < inputs.length; k++) inputs[k]!.graphRefs++;
  const outputs: MgArray[] = [];
  for (let k = 0; k < specs.length; k++) outputs.push(new MgArray(specs[k]!.shape, specs[k]!.dtype, stream, node));
  node.outputs = outputs;
  return outputs;
}

function isFloat64(x: { dtype: Dtype }): boolean {
  return x.dtype === float64;
}

/**
 * Apple GPUs have no double precision and MLX does not emulate it (guide §1.5). Ops that build
 * helper nodes first (a broadcast, a cast) call this with their own name, so that the error names
 * what the user called.
 */
export function rejectFloat64OnGpu(op: string, dtypes: readonly Dtype[], stream: Stream): void {
  if (stream.device.type === "gpu" && dtypes.includes(float64)) throw float64OnGpuError(currentOp() ?? op);
}

/** The error for float64 on the GPU, with the two ways out. */
export function float64OnGpuError(op: string, what = ""): Error {
  return new Error(`[${op}] float64 is not supported on the GPU${what}; run it on the CPU with { stream: mg.cpu } or cast with astype(mg.float32).`);
}

/** Convenience for single-output primitives. */
export function makeArray<P>(primitive: Primitive<P>, inputs: MgArray[], params: P, stream: Stream): MgArray {
  return makeNode(primitive, inputs, params, stream)[0]!;
}

let scheduleEpoch = 0;

/** Nodes needed to evaluate `targets`, in dependency order (iterative post-order DFS). Visited
 *  nodes are marked with this call's epoch, not collected in a Set: scheduling is a hot path. */
export function schedule(targets: readonly MgArray[]): Node[] {
  const epoch = ++scheduleEpoch;
  const order: Node[] = [];
  const nodes: Node[] = [];
  const next: number[] = [];
  for (const t of targets) {
    const root = t.layout ? null : t.node;
    if (!root || root.mark === epoch) continue;
    root.mark = epoch;
    nodes.push(root);
    next.push(0);
    while (nodes.length > 0) {
      const top = nodes.length - 1;
      const node = nodes[top]!;
      const inputs = node.inputs;
      const k = next[top]!;
      if (k < inputs.length) {
        next[top] = k + 1;
        const input = inputs[k]!;
        const child = input.layout ? null : input.node;
        if (child && child.mark !== epoch) {
          child.mark = epoch;
          nodes.push(child);
          next.push(0);
        }
      } else {
        nodes.pop();
        next.pop();
        order.push(node);
      }
    }
  }
  return order;
}

/** An eval's context: a class (not an object literal with a getter), as one is made per eval. */
class Context implements EvalContext {
  #targetSet: Set<MgArray> | null = null;
  constructor(
    readonly targetList: readonly MgArray[],
    readonly finished: (node: Node) => void,
  ) {}
  /** Built on first use: only fused regions ask for it. */
  get targets(): ReadonlySet<MgArray> {
    return (this.#targetSet ??= new Set(this.targetList));
  }
}

/** Evaluates arrays, as mx.eval. Already evaluated arrays cost nothing. */
export function evalArrays(targets: readonly MgArray[]): void {
  for (const t of targets) t.checkUsable("eval");
  const order = schedule(targets);
  if (order.length === 0) return;
  const ctx = new Context(targets, retainGraphDepth > 0 ? ignoreFinished : detach);
  // Consecutive nodes of one stream form a run: the GPU submits each run as one batch on that
  // stream's queue (so mg.synchronize(stream) and cross-queue waits see it).
  let start = 0;
  while (start < order.length) {
    const stream = order[start]!.stream;
    let end = start + 1;
    while (end < order.length && order[end]!.stream === stream) end++;
    const type = stream.device.type;
    const backend = backends.get(type);
    if (!backend) {
      throw new Error(
        `[eval] the ${type} device is not available` +
          (type === "gpu" ? " (the GPU backend did not load)." : "."),
      );
    }
    // One stream (the usual case): hand over the schedule itself rather than a copy.
    backend.run(start === 0 && end === order.length ? order : order.slice(start, end), ctx);
    start = end;
  }
  if (retainGraphDepth > 0) {
    for (const node of order) retainedNodes.push(node);
    return;
  }
  // Nodes a backend already finished are detached (detach is idempotent); the rest go now.
  for (const node of order) detach(node);
}

/** Under a transform every evaluated node is kept until the outermost transform returns. */
function ignoreFinished(_node: Node): void {}

/** Forgets a computed node: outputs keep their data, inputs lose one consumer. A node fused away
 *  (no output materialised) keeps its inputs so that it can be recomputed if read later. */
export function detach(node: Node): void {
  if (node.inputs.length === 0 && node.outputs.every(detached, node)) return;
  if (!anyMaterialised(node.outputs)) return;
  for (const o of node.outputs) {
    if (o.node === node) o.node = null;
    o.releaseIfUnused(); // a sibling the user already disposed: free its new data
  }
  const inputs = node.inputs;
  node.inputs = NO_INPUTS;
  for (let k = 0; k < inputs.length; k++) inputs[k]!.dropGraphRef();
}

/** The inputs of a detached node (shared: nothing adds inputs to a node). */
const NO_INPUTS = Object.freeze([]) as unknown as MgArray[];

function detached(this: Node, o: MgArray): boolean {
  return o.node !== this;
}

/** True when the node ran: an output has data, or had it and gave its storage to a later output. */
function anyMaterialised(arrays: readonly MgArray[]): boolean {
  for (let i = 0; i < arrays.length; i++) if (arrays[i]!.layout !== null || arrays[i]!.surrendered) return true;
  return false;
}

setEvaluator((arrays) => evalArrays(arrays));

/**
 * Evaluates arrays and resolves when their data is ready, without blocking the event loop while
 * GPU work runs (as mx.async_eval, awaited). CPU work still runs synchronously.
 */
export async function evalAsync(targets: readonly MgArray[]): Promise<void> {
  evalArrays(targets);
  for (const t of targets) {
    const s = t.layout?.storage;
    if (s) await s.syncAsync();
  }
}
