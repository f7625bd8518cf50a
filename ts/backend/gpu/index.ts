// The GPU device: plans an eval's GPU nodes into kernels (fusing elementwise chains), encodes them
// into one command batch per stream and submits it with one FFI call. Outputs carry the submitted
// batch as their `pending` work, so a CPU read waits for exactly the batch that produced it.
import type { MgArray, Node } from "../../core/array.ts";
import type { Stream } from "../../core/device.ts";
import { type EvalContext, registerBackend } from "../../core/graph.ts";
import { applyViews } from "../../core/layout.ts";
import type { ViewOf } from "../../core/primitive.ts";
import { shapesEqual } from "../../core/shape.ts";
import type { PendingWork, Storage } from "../../memory/storage.ts";
import { type Queue, runtime, type SubmittedBatch } from "../runtime.ts";
import { encodeFused, encodeSingle, FUSED_MAX_BUFFERS, plannedSingle, prepareFused, type Region, regionInputs, type SingleChoice } from "./elementwise.ts";
import { GpuEncoder } from "./encoder.ts";
import { type KernelInstance, prepareKernels } from "./kernels.ts";
import { gpuRules, type KernelRule } from "./registry.ts";
// The GPU rules of every primitive (each module registers its own).
import "./convolution.ts";
import "./elementwise.ts";
import "./fast/rules.ts";
import "./fft.ts";
import "./indexing.ts";
import "./matmul.ts";
import "./movement.ts";
import "./quantized.ts";
import "./random.ts";
import "./reduce.ts";
import "./scan.ts";
import "./softmax.ts";
import "./sort.ts";

/** Automatic fusion is on unless MG_FUSION=0 (useful to compare fused against unfused). */
let fusionEnabled = process.env.MG_FUSION !== "0";
/**
 * Turns GPU fusion of elementwise chains on or off (as MG_FUSION=0); returns the previous setting.
 * @example
 * mg.setFusion(mg.setFusion(true))
 */
export function setFusion(enabled: boolean): boolean {
  const previous = fusionEnabled;
  fusionEnabled = enabled;
  return previous;
}

/** Longest chain one generated kernel computes: bounds its source size and compile time. */
const MAX_FUSED_OPS = 128;

/** One step of an eval's GPU work. A class with one shape for every kind: this is made per node. */
class Item {
  constructor(
    readonly kind: "region" | "single" | "view" | "applied" | "kernel",
    /** The node (the region's last node for a region). */
    readonly node: Node,
    readonly region: Region | null = null,
    /** A single op's kernel choice, when planning saw every input's real layout. */
    readonly choice: SingleChoice | null = null,
  ) {}
}

const queues = new Map<Stream, Queue>();
function queueFor(stream: Stream): Queue {
  let q = queues.get(stream);
  if (!q) {
    const rt = runtime();
    q = stream.index === 0 || queues.size === 0 ? rt.defaultQueue : rt.newQueue();
    queues.set(stream, q);
  }
  return q;
}

/** Work another batch (maybe another queue) is doing for an input. */
class BatchWork implements PendingWork {
  constructor(
    readonly batch: SubmittedBatch,
    readonly queue: Queue,
  ) {}
  wait(storage?: Storage): void {
    try {
      this.batch.wait();
    } catch (e) {
      storageFailure(storage, e);
    }
  }
  async finished(storage?: Storage): Promise<void> {
    try {
      await this.batch.done();
    } catch (e) {
      storageFailure(storage, e);
    }
  }
}

/** After a failed batch: throws for a storage the failure reached (the runtime marks exactly the
 *  buffers computed from a failed dispatch), or the batch's error when asked for no storage. */
function storageFailure(storage: Storage | undefined, batchError: unknown): void {
  if (!storage) throw batchError;
  const failure = storage.buffer.native?.failure() ?? null;
  if (failure !== null) throw new Error(failure);
}

/** The newest batch submitted per stream (batches on one queue finish in order). */
const lastWork = new Map<Stream, BatchWork>();

/**
 * Batches submitted and maybe still running, oldest first. As MLX's eval (MAX_ACTIVE_TASKS), at
 * most this many run ahead of the host: beyond it the host waits for the oldest, so a loop that
 * evaluates faster than the GPU computes cannot pile up the memory of every in-flight step.
 */
const MAX_ACTIVE_BATCHES = 10;
const inFlight: SubmittedBatch[] = [];

/** Batches that may still be running (for tests: never more than MAX_ACTIVE_BATCHES). */
export function inFlightBatchCount(): number {
  return inFlight.filter((b) => !b.completed).length;
}

function limitInFlight(batch: SubmittedBatch): void {
  inFlight.push(batch);
  if (inFlight.length <= MAX_ACTIVE_BATCHES) return;
  while (inFlight.length > 0 && (inFlight[0]!.completed || pollQuietly(inFlight[0]!))) inFlight.shift();
  if (inFlight.length > MAX_ACTIVE_BATCHES) {
    const oldest = inFlight.shift()!;
    // A failed batch keeps its error for whoever reads its outputs; this wait only paces the host.
    try {
      oldest.wait();
    } catch {}
  }
}

function pollQuietly(batch: SubmittedBatch): boolean {
  try {
    return batch.poll();
  } catch {
    return true; // failed, therefore finished; its readers get the error
  }
}

/** Waits for all GPU work submitted so far (on one stream, or on every stream), as mx.synchronize.
 *  A failed kernel is not an error here: it fails exactly the arrays computed from it, when read. */
export function synchronize(stream?: Stream): void {
  for (const [s, w] of lastWork) {
    if (stream && s !== stream) continue;
    try {
      w.wait();
    } catch {}
    lastWork.delete(s);
  }
}

/** The kernel rule of a node planned as a kernel (or of a view's copy). */
function kernelRuleOf(node: Node): KernelRule<unknown> {
  const rule = gpuRules.require(node);
  if (rule.kind !== "kernel") throw new Error(`[gpu] internal: ${node.primitive.name} planned as a kernel`);
  return rule;
}

/** A view node's views, or null when its layout rule asks for the copy kernel. Inputs are evaluated. */
function viewsOf(node: Node): readonly ViewOf[] | null {
  return node.primitive.layout!(node.inputs, node.inputs.map((i) => i.layout!), node.outputs, node.params);
}

/**
 * Splits nodes into view steps, single kernels and fused regions, in an order that respects
 * every dependency, and lists the static kernels they need (`wanted`). A region is a run of
 * elementwise nodes of one output shape; a node that does not read the open region is planned
 * ahead of it, one that does closes it first. A view of an array that already has data is
 * applied here ("applied": its outputs join `fresh`, to be discarded if the eval fails), so the
 * kernels reading it are chosen from real layouts once, not predicted and chosen again.
 */
function plan(nodes: readonly Node[], ctx: EvalContext, wanted: KernelInstance[], fresh: MgArray[]): { items: Item[]; regions: Region[] } {
  const items: Item[] = [];
  const regions: Region[] = [];
  let open: Node[] = [];
  let inOpen = new Set<MgArray>();

  const single = (node: Node) => {
    const c = plannedSingle(node);
    if (c !== null && c.pipeline === null) wanted.push(c.kernel, ...c.family);
    items.push(new Item("single", node, null, c !== null && inputsHaveData(node) ? c : null));
  };
  const close = () => {
    if (open.length === 0) return;
    if (open.length === 1) single(open[0]!);
    else {
      const region: Region = { nodes: open, outputs: regionOutputs(open, ctx) };
      items.push(new Item("region", open[open.length - 1]!, region));
      regions.push(region);
    }
    open = [];
    inOpen = new Set();
  };

  for (const node of nodes) {
    const p = node.primitive;
    // Placeholders fail here, before anything of the eval is encoded.
    if (p.placeholder) throw p.placeholder(node.params);
    // Views need no rule unless their layout cannot express them (then their kernel copies).
    const rule = p.layout ? null : gpuRules.require(node);
    // Nothing can read an empty region (always the case with fusion off): skip the lookups.
    const readsOpen = open.length > 0 && readsAny(node.inputs, inOpen);
    // Automatic fusion: single-output elementwise primitives of a fusion kind.
    if (fusionEnabled && rule?.kind === "elementwise" && p.fusion !== undefined && node.outputs.length === 1) {
      const shape = node.outputs[0]!.shape;
      const fits = open.length === 0 || shapesEqual(open[0]!.outputs[0]!.shape, shape);
      if (!fits || open.length >= MAX_FUSED_OPS || !withinBufferLimit(open, node, ctx)) close();
      open.push(node);
      inOpen.add(node.outputs[0]!);
      continue;
    }
    if (readsOpen) close();
    if (rule === null) {
      // Inputs computed in this eval are not known yet: the view (or its copy) waits for them.
      const views = inputsHaveData(node) ? viewsOf(node) : undefined;
      if (views) {
        for (const o of node.outputs) if (o.layout === null) fresh.push(o);
        applyViews(node.inputs, node.outputs, views);
        items.push(new Item("applied", node));
      } else {
        // Only a view its input's layout cannot express needs a kernel (a copy).
        if (views === null) addKernels(wanted, node);
        items.push(new Item("view", node));
      }
    } else if (rule.kind === "elementwise") single(node);
    else {
      addKernels(wanted, node);
      items.push(new Item("kernel", node));
    }
  }
  close();
  return { items, regions };
}

function inputsHaveData(node: Node): boolean {
  const inputs = node.inputs;
  for (let i = 0; i < inputs.length; i++) if (inputs[i]!.layout === null) return false;
  return true;
}

function addKernels(wanted: KernelInstance[], node: Node): void {
  const rule = kernelRuleOf(node);
  if (rule.kernels) for (const k of rule.kernels(node)) wanted.push(k);
}

function readsAny(inputs: readonly MgArray[], arrays: ReadonlySet<MgArray>): boolean {
  for (let i = 0; i < inputs.length; i++) if (arrays.has(inputs[i]!)) return true;
  return false;
}

function allEmpty(arrays: readonly MgArray[]): boolean {
  for (let i = 0; i < arrays.length; i++) if (arrays[i]!.size !== 0) return false;
  return true;
}

/** A region node's output must be written if eval asked for it or a node outside the region reads it. */
function regionOutputs(nodes: readonly Node[], ctx: EvalContext): MgArray[] {
  const inside = new Map<MgArray, number>();
  for (const n of nodes) for (const i of n.inputs) inside.set(i, (inside.get(i) ?? 0) + 1);
  return nodes.map((n) => n.outputs[0]!).filter((o) => ctx.targets.has(o) || o.graphRefs > (inside.get(o) ?? 0));
}

function withinBufferLimit(open: readonly Node[], node: Node, ctx: EvalContext): boolean {
  if (open.length === 0) return true;
  const nodes = [...open, node];
  const region: Region = { nodes, outputs: regionOutputs(nodes, ctx) };
  return regionInputs(region).length + region.outputs.length <= FUSED_MAX_BUFFERS;
}

/** A view, or (when its layout cannot express it) the record's copy kernel. */
function encodeView(enc: GpuEncoder, node: Node): void {
  const views = viewsOf(node);
  if (views) applyViews(node.inputs, node.outputs, views);
  else kernelRuleOf(node).encode(enc, node);
}

registerBackend("gpu", {
  run(nodes, ctx) {
    if (nodes.length === 0) return;
    // Outputs given storage before the batch is submitted: if anything fails first, none may keep
    // uncomputed storage. Views applied while planning join here; the rest as they are encoded.
    const fresh: MgArray[] = [];
    // Every static kernel this eval needs, compiled in as few compiler runs as possible.
    const wanted: KernelInstance[] = [];
    let items: Item[];
    let regions: Region[];
    try {
      ({ items, regions } = plan(nodes, ctx, wanted, fresh));
    } catch (e) {
      for (const o of fresh) o.discardData();
      throw e;
    }
    prepareKernels(wanted);
    prepareFused(regions);

    const stream = nodes[0]!.stream;
    const queue = queueFor(stream);
    const enc = new GpuEncoder(runtime().newBatch());
    // Reads per input in this run (MgArray's run fields, marked with this run's number: no map
    // per eval): an internal array read by no one else gives its storage to a later output of this
    // batch once its last reader is encoded.
    const run = ++runSerial;
    const count = (node: Node) => {
      const inputs = node.inputs;
      for (let k = 0; k < inputs.length; k++) {
        const i = inputs[k]!;
        if (i.runMark !== run) {
          i.runMark = run;
          i.runReads = 0;
          i.runLeft = 0;
        }
        i.runReads++;
        i.runLeft++;
      }
    };
    for (const it of items) {
      if (it.region !== null) for (const n of it.region.nodes) count(n);
      else count(it.node);
    }
    const recycleInputs = (node: Node) => {
      const inputs = node.inputs;
      for (let k = 0; k < inputs.length; k++) {
        const i = inputs[k]!;
        // Every pending reader is in this run (graphRefs) and already encoded.
        if (--i.runLeft === 0 && (i.internal || i.disposed) && i.graphRefs === i.runReads) enc.recycle(i);
      }
    };
    // Before a node is encoded, inputs produced on another queue are waited for (same-queue work
    // is ordered) and its outputs without data are listed in `fresh`. This happens per item rather
    // than in a pass of its own, because encoding touches the same nodes right after (cache-hot).
    const admit = (node: Node) => {
      const inputs = node.inputs;
      for (let k = 0; k < inputs.length; k++) {
        const l = inputs[k]!.layout;
        const p = l === null ? null : l.storage.pending;
        if (p !== null && (!(p instanceof BatchWork) || p.queue !== queue)) l!.storage.sync();
      }
      const outputs = node.outputs;
      for (let k = 0; k < outputs.length; k++) if (outputs[k]!.layout === null) fresh.push(outputs[k]!);
    };
    try {
      for (const it of items) {
        const region = it.region;
        if (it.kind === "applied") {
          recycleInputs(it.node);
          continue;
        }
        if (region !== null) for (const n of region.nodes) admit(n);
        else admit(it.node);
        // Nothing to compute for empty outputs: give them (empty) storage and launch nothing.
        const outs = region !== null ? region.outputs : it.node.outputs;
        if (it.kind !== "view" && allEmpty(outs)) {
          for (const o of outs) if (!o.layout) o.allocate();
          continue;
        }
        if (region !== null) encodeFused(enc, region);
        else if (it.kind === "single") encodeSingle(enc, it.node, it.choice);
        else if (it.kind === "view") encodeView(enc, it.node);
        else kernelRuleOf(it.node).encode(enc, it.node);
        // A region node whose output stays unmaterialised keeps its node (recomputed if read
        // later), so it still reads its inputs after this batch: they are not recycled for it.
        if (region !== null) {
          for (const n of region.nodes) if (region.outputs.includes(n.outputs[0]!)) recycleInputs(n);
        } else recycleInputs(it.node);
      }
    } catch (e) {
      for (const o of fresh) o.discardData();
      enc.releaseTemporaries();
      throw e;
    }
    if (enc.dispatches === 0) {
      enc.releaseTemporaries();
      enc.runAfterSubmit(nodes);
      return;
    }
    let submitted: SubmittedBatch;
    try {
      submitted = enc.batch.submit(queue);
    } catch (e) {
      for (const o of fresh) o.discardData();
      enc.releaseTemporaries();
      throw e;
    }
    enc.releaseTemporaries();
    const work = new BatchWork(submitted, queue);
    lastWork.set(stream, work);
    limitInFlight(submitted);
    for (const s of enc.written) s.pending = work;
    enc.runAfterSubmit(nodes);
  },
});

/** Numbers the runs of the backend, for MgArray's run fields. */
let runSerial = 0;
