// mg.compile: MLX's mx.compile as a traced, shape-keyed cache of a function's graph.
//
// The first call with a given argument structure, dtypes and shapes (and default stream) runs `fn`
// once on placeholder arrays and records the graph it builds: every node that depends on an
// input (primitive, params, stream, which inputs), the arrays it captured (constants), and which
// arrays it returned, in the returned tree. Every call then replays that record on the real
// inputs — new lazy nodes with the same primitives and params — without running fn's JavaScript.
// Evaluation fuses the replayed elementwise chains exactly as any other graph (the GPU backend
// fuses at every eval), so compile buys no extra fusion here; it saves re-running fn's JS.
//
// As in MLX:
// - arrays fn captures (rather than takes as arguments) are constants of the compiled graph: a
//   later change of the variable is not seen, and random numbers drawn inside fn are fixed;
// - evaluating anything that depends on an input inside fn (item, tolist, eval) is an error;
// - a non-array argument (number, string, boolean, dtype …) is part of the cache key;
// - `shapeless: true` keys on ndim instead of shapes and replays new shapes without re-tracing.
//   Supported where every recorded node infers its output shape from its inputs (elementwise ops
//   with broadcasting, reductions with or without keepdims, scans, softmax, sort, matmul,
//   transpose, custom functions):
//   a node whose parameters fix a shape (reshape, slice, pad, creation …) or a constant created
//   while tracing (mean's 1/N is one) could silently keep the traced shape, so those throw at the
//   first trace instead. JS values fn computes from shapes and passes as weak scalars are frozen,
//   as MLX warns.
import { MgArray, type Node } from "./array.ts";
import { libraryFunction, retain, userCall } from "./ownership.ts";
import { resolveStream, type Stream } from "./device.ts";
import { Dtype, float32, float64 } from "./dtype.ts";
import { makeNode } from "./graph.ts";
import type { Primitive } from "./primitive.ts";
import { broadcastShapes, formatShape, shapesEqual } from "./shape.ts";
import { warnOnce } from "./trace.ts";
import { isPlainObject, type Transformable, treeFlatten, treeUnflatten } from "../autograd/tree.ts";
import { keep } from "../memory/scope.ts";

const TAG = "[compile]";

type AnyFn = (...args: unknown[]) => unknown;

/** compile's options: `shapeless` (replay new shapes without tracing again). */
export interface CompileOptions {
  /** Key the cache on ndim and dtypes only and replay new shapes without re-tracing (MLX's shapeless). */
  shapeless?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Placeholders

interface PlaceholderParams {
  shape: number[];
  dtype: Dtype;
}

function evalDuringTrace(): Error {
  return new Error(
    `${TAG} Attempting to eval an array during function transformations like compile or vmap is not allowed ` +
      "(the value depends on an input of the compiled function: item, tolist, eval and data are not available inside mg.compile).",
  );
}

/** A traced input: it has no data, so evaluating anything that depends on it fails clearly (on
 *  every device, before anything of the eval runs). */
const CompileInput: Primitive<PlaceholderParams> = {
  name: "CompileInput",
  outputSpecs: (_i, p) => [{ shape: [...p.shape], dtype: p.dtype }],
  placeholder: () => evalDuringTrace(),
};

// ---------------------------------------------------------------------------------------------
// The record

/** Where a recorded node's input comes from. */
type Ref =
  | { kind: "input"; index: number }
  | { kind: "step"; step: number; output: number }
  | { kind: "constant"; array: MgArray };

interface Step {
  primitive: Primitive<unknown>;
  params: unknown;
  stream: Stream;
  inputs: Ref[];
  shapes: number[][];
  dtypes: Dtype[];
  /** shapeless Broadcast: the arrays whose broadcast shape is its target (null: keep params.shape). */
  partners?: Ref[] | null;
  /** shapeless Reshape that drops a reduction's kept axes: those axes (it replays as a squeeze). */
  squeeze?: number[];
}

interface Entry {
  steps: Step[];
  outputs: Ref[];
  /** fn's return value with traced arrays at the leaves (only its structure is used). */
  outTree: unknown;
  /** The traced shapes of the inputs (shapeless replays compare against them). */
  inputShapes: number[][];
}

/** Inputs share the output's shape (the op broadcast them first): replays check they still do. */
function isElementwise(p: Primitive<unknown>): boolean {
  return p.shapeless === "elementwise";
}

let enabled = process.env.MG_DISABLE_COMPILE !== "1";

/**
 * Turns compilation off globally (compiled functions then call fn directly), as mx.disable_compile.
 * @example
 * mg.disableCompile()
 */
export function disableCompile(): void {
  enabled = false;
}

/**
 * Turns compilation back on, as mx.enable_compile.
 * @example
 * mg.enableCompile()
 */
export function enableCompile(): void {
  enabled = true;
}

// ---------------------------------------------------------------------------------------------
// Cache keys

/** Each compiled function's number (its warnings are logged once per function). */
let nextCompiledId = 1;

const objectIds = new WeakMap<object, number>();
let nextObjectId = 1;

function streamKey(s: Stream): string {
  return `${s.device.type}${s.device.index}/${s.index}`;
}

/** The argument tree's structure, array dtypes and shapes (ndim when shapeless) and constant leaves. */
function keyOf(args: readonly unknown[], shapeless: boolean): string {
  const parts: string[] = [];
  const walk = (x: unknown): void => {
    if (x instanceof MgArray) {
      parts.push(`A${x.dtype.name}${shapeless ? `/${x.ndim}` : `(${x.shape.join(",")})`}`);
    } else if (Array.isArray(x)) {
      parts.push("[");
      x.forEach(walk);
      parts.push("]");
    } else if (isPlainObject(x)) {
      parts.push("{");
      for (const [k, v] of Object.entries(x)) {
        parts.push(`${JSON.stringify(k)}:`);
        walk(v);
      }
      parts.push("}");
    } else if (x instanceof Dtype) {
      parts.push(`D${x.name}`);
    } else if (typeof x === "number") {
      parts.push(`n${Object.is(x, -0) ? "-0" : String(x)}`);
    } else if (typeof x === "string" || typeof x === "boolean" || typeof x === "bigint" || x === null || x === undefined) {
      parts.push(`${typeof x}:${String(x)}`);
    } else {
      // Functions, streams, class instances: constants by identity.
      const o = x as object;
      let id = objectIds.get(o);
      if (id === undefined) objectIds.set(o, (id = nextObjectId++));
      parts.push(`o${id}`);
    }
    parts.push(",");
  };
  args.forEach(walk);
  return parts.join("");
}

// ---------------------------------------------------------------------------------------------
// Tracing

/**
 * Records what `outputs` compute from `placeholders`: the nodes that depend on a placeholder, in
 * creation order (a topological order: a node's inputs exist before it), and the constants they
 * read. Lazy arrays that do not depend on an input are constants too (computed once, on the first
 * call's eval), unless `replayCreatedNodes` asks to replay the nodes created from that id on.
 */
function record(
  placeholders: readonly MgArray[],
  outputs: readonly MgArray[],
  realInputs: readonly MgArray[],
  replayCreatedNodes: number | null,
): { steps: Step[]; outputs: Ref[]; traced: Node[] } {
  const placeholderIndex = new Map<MgArray, number>();
  placeholders.forEach((p, i) => placeholderIndex.set(p, i));
  const realSet = new Set(realInputs);

  // Iterative post-order walk; `dependent` marks nodes that read a placeholder (transitively).
  const dependent = new Map<Node, boolean>();
  const stack: { node: Node; next: number }[] = [];
  const isDependent = (a: MgArray): boolean => placeholderIndex.has(a) || (a.node !== null && dependent.get(a.node) === true);
  const visit = (a: MgArray): void => {
    if (realSet.has(a) && !placeholderIndex.has(a)) {
      throw new Error(
        `${TAG} Attempting to compile a function with uncaptured inputs is not allowed (${a.describe()} is an argument of ` +
          "this call, but fn reads it from its closure instead of its parameters).",
      );
    }
    if (placeholderIndex.has(a) || a.node === null || dependent.has(a.node)) return;
    dependent.set(a.node, false);
    stack.push({ node: a.node, next: 0 });
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (top.next < top.node.inputs.length) {
        const i = top.node.inputs[top.next++]!;
        if (realSet.has(i) && !placeholderIndex.has(i)) {
          throw new Error(
            `${TAG} Attempting to compile a function with uncaptured inputs is not allowed (${i.describe()} is an argument ` +
              "of this call, but fn reads it from its closure instead of its parameters).",
          );
        }
        if (!placeholderIndex.has(i) && i.node !== null && !dependent.has(i.node)) {
          dependent.set(i.node, false);
          stack.push({ node: i.node, next: 0 });
        }
        continue;
      }
      stack.pop();
      // Shapeless: nodes fn created (a scalar broadcast to the traced shape …) are replayed too.
      const created = replayCreatedNodes !== null && top.node.outputs[0]!.id >= replayCreatedNodes;
      dependent.set(top.node, created || top.node.inputs.some(isDependent));
    }
  };
  for (const o of outputs) visit(o);

  const traced = [...dependent.entries()].filter(([, d]) => d).map(([n]) => n);
  traced.sort((a, b) => a.outputs[0]!.id - b.outputs[0]!.id);
  const stepOf = new Map<Node, number>();
  traced.forEach((n, i) => stepOf.set(n, i));
  const refOf = (a: MgArray): Ref => {
    const p = placeholderIndex.get(a);
    if (p !== undefined) return { kind: "input", index: p };
    const s = a.node ? stepOf.get(a.node) : undefined;
    if (s !== undefined) return { kind: "step", step: s, output: a.node!.outputs.indexOf(a) };
    return { kind: "constant", array: a };
  };
  const steps: Step[] = traced.map((n) => ({
    primitive: n.primitive,
    params: n.params,
    stream: n.stream,
    inputs: n.inputs.map(refOf),
    shapes: n.outputs.map((o) => [...o.shape]),
    dtypes: n.outputs.map((o) => o.dtype),
  }));
  return { steps, outputs: outputs.map(refOf), traced };
}

/** The traced graph is garbage once recorded: cut its edges and free its arrays. */
function releaseTrace(traced: readonly Node[], placeholders: readonly MgArray[]): void {
  for (const node of traced) {
    const inputs = node.inputs;
    node.inputs = [];
    for (const i of inputs) i.dropGraphRef();
  }
  for (const node of traced) for (const o of node.outputs) o.dispose();
  for (const p of placeholders) p.dispose();
}

/** True when a captured lazy constant is computed from random bits (fixed at trace time). */
function drawsRandomNumbers(constants: readonly MgArray[]): boolean {
  const seen = new Set<Node>();
  const stack = constants.flatMap((c) => (c.node ? [c.node] : []));
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (seen.has(n)) continue;
    seen.add(n);
    if (n.primitive.random) return true;
    for (const i of n.inputs) if (i.node) stack.push(i.node);
  }
  return false;
}

/** The axes a reduction step keeps as size 1 (its record's keptAxes), or null. */
function reducedAxes(s: Step): number[] | null {
  return s.primitive.keptAxes ? s.primitive.keptAxes(s.params, s.shapes[0]!.length) : null;
}

/** A Reshape that drops exactly the size-1 axes a reduction kept (sum without keepdims) is a squeeze. */
function squeezeAxes(steps: readonly Step[], s: Step): number[] | null {
  const from = s.inputs[0]!;
  if (from.kind !== "step") return null;
  const producer = steps[from.step]!;
  const axes = reducedAxes(producer);
  if (!axes) return null;
  const squeezed = producer.shapes[from.output]!.filter((_, i) => !axes.includes(i));
  return shapesEqual(squeezed, s.shapes[0]!) ? axes : null;
}

function checkShapeless(steps: readonly Step[], traceStart: number, fnName: string): void {
  for (const s of steps) {
    const rule = s.primitive.shapeless;
    const resize = typeof rule === "object" ? rule.resize : null;
    if (resize === "squeeze") {
      const axes = squeezeAxes(steps, s);
      if (axes) {
        s.squeeze = axes;
        continue;
      }
    }
    if (rule === undefined || resize === "squeeze") {
      throw new Error(
        `${TAG} shapeless compilation of ${fnName} is not supported: its graph has a ${s.primitive.name} node, whose parameters fix ` +
          "an output shape traced from this call's inputs (it would be replayed unchanged for new shapes). " +
          "Compile without { shapeless: true } (each new shape is then traced once).",
      );
    }
    for (const r of s.inputs) {
      if (r.kind === "constant" && !r.array.shared && r.array.id >= traceStart) {
        throw new Error(
          `${TAG} shapeless compilation of ${fnName} is not supported: it creates the constant ${r.array.describe()} while ` +
            "tracing (as mean's 1/N or a gradient's seed), whose value may depend on the traced shapes and would be reused " +
            "for new ones. Compile without { shapeless: true }, or pass the value as an argument.",
        );
      }
    }
  }
}

/** A step whose params' shape a shapeless replay recomputes by broadcasting. */
function isBroadcast(s: Step): boolean {
  const rule = s.primitive.shapeless;
  return typeof rule === "object" && rule.resize === "broadcast";
}

/** For each shapeless Broadcast: the arrays its (elementwise) consumer broadcasts together. */
function linkBroadcasts(steps: Step[]): void {
  steps.forEach((s, k) => {
    if (!isBroadcast(s)) return;
    const consumer = steps.find((c) => isElementwise(c.primitive) && c.inputs.some((r) => r.kind === "step" && r.step === k));
    if (!consumer) {
      s.partners = null;
      return;
    }
    const partners = consumer.inputs.map((r) => {
      const producer = r.kind === "step" ? steps[r.step]! : null;
      return producer && isBroadcast(producer) ? producer.inputs[0]! : r;
    });
    // Only arrays computed before this Broadcast can size it (broadcast_arrays' operands always are).
    s.partners = partners.every((r) => r.kind !== "step" || r.step < k) ? partners : null;
  });
}

// ---------------------------------------------------------------------------------------------
// Replay

function replay(entry: Entry, inputs: readonly MgArray[], shapeless: boolean, fnName: string): MgArray[] {
  const results: MgArray[][] = [];
  const resolve = (r: Ref): MgArray => {
    if (r.kind === "input") return inputs[r.index]!;
    if (r.kind === "step") return results[r.step]![r.output]!;
    if (r.array.disposed) {
      throw new Error(
        `${TAG} ${fnName} captured ${r.array.describe()}, which was disposed since it was traced: captured arrays are ` +
          "constants of the compiled graph; keep them alive (mg.keep) or pass them as arguments.",
      );
    }
    return r.array;
  };
  const sameShapes = !shapeless || inputs.every((x, i) => shapesEqual(x.shape, entry.inputShapes[i]!));
  for (const s of entry.steps) {
    const ins = s.inputs.map(resolve);
    let params = s.params;
    const rule = s.primitive.shapeless;
    if (!sameShapes && typeof rule === "object" && rule.resize === "broadcast") {
      const traced = s.shapes[0]!;
      const source = ins[0]!;
      const target = s.partners ? broadcastShapes(s.partners.map((r) => resolve(r).shape), "compile") : traced;
      if (!shapesEqual(broadcastShapes([source.shape, target], "compile"), target)) {
        throw new Error(`${TAG} shapeless replay of ${fnName}: cannot broadcast ${formatShape(source.shape)} to the traced shape ${formatShape(target)}.`);
      }
      params = rule.withShape(s.params, [...target]);
    }
    if (!sameShapes && s.squeeze && typeof rule === "object") params = rule.withShape(s.params, ins[0]!.shape.filter((_, i) => !s.squeeze!.includes(i)));
    if (!sameShapes && isElementwise(s.primitive)) {
      const shapes = ins.map((x) => x.shape);
      if (shapes.some((sh) => !shapesEqual(sh, shapes[0]!))) {
        throw new Error(
          `${TAG} shapeless replay of ${fnName}: ${s.primitive.name} gets inputs of shapes ${shapes.map(formatShape).join(", ")}, ` +
            "which the traced graph cannot broadcast together.",
        );
      }
    }
    const outs = makeNode(s.primitive, ins, params, s.stream);
    if (sameShapes) {
      outs.forEach((o, j) => {
        if (!shapesEqual(o.shape, s.shapes[j]!) || o.dtype !== s.dtypes[j]) {
          throw new Error(`${TAG} internal: replaying ${s.primitive.name} gave ${formatShape(o.shape)} ${o.dtype.name}, traced ${formatShape(s.shapes[j]!)} ${s.dtypes[j]!.name}.`);
        }
      });
    }
    results.push(outs);
  }
  return entry.outputs.map(resolve);
}

// ---------------------------------------------------------------------------------------------
// compile

/**
 * Returns a compiled version of `fn`, as mx.compile: the first call per (argument structure,
 * dtypes, shapes, default stream) traces fn on placeholders and records its graph; later calls
 * replay the record on the new inputs without running fn. Arguments and results are trees of
 * arrays (JS arrays, plain objects); other argument values are part of the cache key. See the
 * notes at the top of ts/core/compile.ts for what is constant and what `shapeless` supports.
 * @example
 * mg.compile((x: mg.MgArray) => mg.multiply(mg.exp(x), 2))(mg.array([0, 1], mg.float32))
 */
export function compile<F extends Transformable>(fun: F, options: CompileOptions = {}): F {
  const fn = fun as unknown as AnyFn;
  if (typeof fn !== "function") throw new TypeError(`${TAG} fun must be a function.`);
  if (options === null || typeof options !== "object") throw new TypeError(`${TAG} options must be an object such as { shapeless: true }.`);
  const shapeless = options.shapeless ?? false;
  if (typeof shapeless !== "boolean") throw new TypeError(`${TAG} shapeless must be a boolean.`);
  const fnName = fn.name ? `'${fn.name}'` : "the function";
  const id = nextCompiledId++;
  const cache = new Map<string, Entry>();

  const compiled = (...args: unknown[]): unknown => {
    if (!enabled) return userCall(() => fn(...args));
    const inputs = treeFlatten(args);
    for (const x of inputs) x.checkUsable("compile");
    const key = `${streamKey(resolveStream())}|${keyOf(args, shapeless)}`;
    let entry = cache.get(key);
    if (!entry) {
      entry = trace(fn, args, inputs, shapeless, fnName, id);
      cache.set(key, entry);
    }
    const outputs = replay(entry, inputs, shapeless, fnName);
    return treeUnflatten(entry.outTree, outputs);
  };
  return libraryFunction(compiled) as unknown as F;
}

/** Where a placeholder lives: its input's producer stream, else the default (as a transform's
 *  tracer); float64 data stays on its own (CPU) stream, since the GPU has no float64. */
function placeholderStream(x: MgArray): Stream {
  if (x.node) return x.stream;
  const s = resolveStream();
  return x.dtype === float64 && s.device.type === "gpu" ? x.stream : s;
}

function trace(fn: AnyFn, args: readonly unknown[], inputs: readonly MgArray[], shapeless: boolean, fnName: string, id: number): Entry {
  // Array ids grow monotonically: everything fn creates while tracing has an id above this probe's.
  const traceStart = new MgArray([], float32, resolveStream(), null, true).id;
  const placeholders = inputs.map((x) => makeNode(CompileInput, [], { shape: [...x.shape], dtype: x.dtype }, placeholderStream(x))[0]!);
  let out: unknown;
  try {
    out = userCall(() => fn(...(treeUnflatten(args, placeholders) as unknown[])));
  } catch (e) {
    for (const p of placeholders) p.dispose();
    throw e;
  }
  const outArrays = treeFlatten(out);
  const { steps, outputs, traced } = record(placeholders, outArrays, inputs, shapeless ? traceStart : null);
  const constants = [...new Set([...steps.flatMap((s) => s.inputs), ...outputs].flatMap((r) => (r.kind === "constant" ? [r.array] : [])))];
  try {
    if (shapeless) {
      checkShapeless(steps, traceStart, fnName);
      linkBroadcasts(steps);
    }
  } catch (e) {
    releaseTrace(traced, placeholders);
    throw e;
  }
  // Constants fn created while tracing belong to the compiled function now, not to a tidy scope.
  retain(keep(constants.filter((c) => c.id >= traceStart)));
  if (drawsRandomNumbers(constants)) {
    warnOnce(
      `compile-random-${id}`,
      `${TAG} ${fnName} draws random numbers from a key fixed when it was traced: every call returns the same ` +
        "numbers, as with MLX's mx.compile (which must be given mx.random.state as inputs and outputs to change " +
        "that). To draw new numbers on each call, take a key as an argument (mg.random.key(seed), or " +
        "mg.random.split for a fresh one per call) and pass it to the draws ({ key }).",
    );
  }
  releaseTrace(traced, placeholders);
  return { steps, outputs, outTree: out, inputShapes: inputs.map((x) => [...x.shape]) };
}
