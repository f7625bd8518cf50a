// Elementwise work on the GPU: single ops run the static kernels in unary/binary/ternary.metal;
// chains of them fuse into one generated kernel. Both call the functors of elementwise_ops.h, and
// every intermediate is held in its own dtype, so fused results equal unfused results bit for bit.
import type { MgArray, Node } from "../../core/array.ts";
import { bfloat16, bool_, complex64, type Dtype, float16, float32, int64 } from "../../core/dtype.ts";
import * as P from "../../core/primitives/elementwise.ts";
import { Precision, tracing } from "../../core/trace.ts";
import type { BufferBinding, InlineBytes, Pipeline, Size3 } from "../runtime.ts";
import { dtypeTag, GPU_DTYPES, mslType } from "./dtypes.ts";
import { type BoundArray, type GpuEncoder, idxTag, idxType, int32Bytes, int64Bytes, needsLargeIndex } from "./encoder.ts";
import { fusedHeader } from "./fused-header.ts";
import { PROGRAM_BUFFERS, PROGRAM_NAME, programSource, programWords } from "./fused-program.ts";
import { BOOL_BINARY, COMPARISONS, FLOAT_BINARY, FLOAT_UNARY, INT_BINARY, INT_UNARY } from "./functors.ts";
import { type KernelInstance, kernelPipeline, prepareSources, sourcePipeline } from "./kernels.ts";
import { dispatchLinear, elementwiseGrid, linearThreadgroup } from "./launch.ts";
import { elementwise, type ElementwiseRule, gpuRules, registerGpu } from "./registry.ts";

/** A node's elementwise rule (planned as elementwise, so it has one). */
function ruleOf(node: Node): ElementwiseRule<unknown> {
  const rule = gpuRules.require(node);
  if (rule.kind !== "elementwise") throw new Error(`[gpu] ${node.primitive.name} is not an elementwise primitive.`);
  return rule;
}

/** The MSL functor a node applies. */
export function functorOf(node: Node): string {
  return ruleOf(node).functor(node);
}

const ident = (s: string) => s.replace(/[<>]/g, "_").replace(/[^A-Za-z0-9_]/g, "");

/** How an input is addressed relative to the output index. */
export type Access = "contiguous" | "scalar" | "strided";

export function accessOf(a: MgArray, outSize: number): Access {
  const l = a.layout!;
  if (a.size === 1 || isBroadcastScalar(a.shape, l.strides)) return "scalar";
  if (l.rowContiguous && a.size === outSize) return "contiguous";
  return "strided";
}

/** Every dimension either has stride 0 or length 1: one value seen everywhere. */
function isBroadcastScalar(shape: readonly number[], strides: readonly number[]): boolean {
  for (let i = 0; i < strides.length; i++) if (strides[i] !== 0 && shape[i] !== 1) return false;
  return true;
}


/** Precision label of an elementwise computation in dtype d. */
export function elementwisePrecision(d: Dtype): string {
  if (d === bfloat16) return "fp32 arithmetic rounded to bfloat16";
  if (d === float16) return Precision.ieee("half");
  if (d.kind === "f") return Precision.ieee("fp32");
  if (d === complex64) return "IEEE fp32 complex";
  return Precision.exact;
}

// ---------------------------------------------------------------------------------------------
// Single ops

export interface SingleChoice {
  kernel: KernelInstance;
  /** Instances of the same template and dtypes for the kernel's sibling ops, compiled with it in
   *  one compiler run when it is first needed (see familyOf); empty for rarer variants. */
  family: KernelInstance[];
  variant: string;
  /** Extra arguments after the buffers: none, the size (`_v2`), or shapes/strides (`_g`). */
  args: "none" | "size" | "strided";
  /** The trace's precision label (it depends only on the compute dtype, part of the choice). */
  precision: string;
  /** The compiled pipeline, once encodeSingle has looked it up (pipelines live for the process). */
  pipeline: Pipeline | null;
}

/** How each input will be addressed: from its layout, or predicted (null when unknown yet). */
export type AccessFn = (a: MgArray, outSize: number) => Access | null;

/** Inputs not yet materialised are predicted: a kernel's fresh output is row-contiguous. */
export const predictedAccess: AccessFn = (a, n) => (a.layout ? accessOf(a, n) : a.size === 1 ? "scalar" : a.size === n ? "contiguous" : null);

// Kernel choices repeat constantly (every `x * 2` on a float32 vector picks the same kernel):
// memoise them per primitive record by a small integer of what else decides them — dtypes,
// each input's access, index width — so encoding a node builds no strings.
const choices = new Map<unknown, Map<number, SingleChoice>>();
const ACCESS_CODE: Record<Access, number> = { contiguous: 0, scalar: 1, strided: 2 };

function chooseSingle(node: Node, accessFn: AccessFn = accessOf): SingleChoice | null {
  const out = node.outputs[0]!;
  const ins = node.inputs;
  const n = out.size;
  // out dtype (4 bits) | compute dtype (4 bits) | huge grid | large index | 2 bits per input
  let code = out.dtype.index | (ins[ins.length === 3 ? 1 : 0]!.dtype.index << 4) | (n >= 2 ** 32 ? 256 : 0);
  for (let k = 0; k < ins.length; k++) {
    const acc = accessFn(ins[k]!, n);
    if (acc === null) return null;
    code |= ACCESS_CODE[acc] << (10 + 2 * k);
  }
  const large = needsLargeIndex(n, ins);
  if (large) code |= 512;
  let perPrimitive = choices.get(node.primitive);
  if (!perPrimitive) choices.set(node.primitive, (perPrimitive = new Map()));
  let c = perPrimitive.get(code);
  if (!c) {
    const { kernel, variant } = buildChoice(node, ins.map((a) => accessFn(a, n)!), large);
    const args = kernel.instantiation.includes("_g<") ? "strided" : kernel.instantiation.includes("_v2<") ? "size" : "none";
    const inDtype = ins[ins.length === 3 ? 1 : 0]!.dtype;
    c = { kernel, family: familyOf(kernel, functorOf(node), inDtype, out.dtype), variant, args, precision: elementwisePrecision(ins[ins.length === 3 ? 1 : 0]!.dtype), pipeline: null };
    perPrimitive.set(code, c);
  }
  return c;
}

function buildChoice(node: Node, access: Access[], large: boolean): { kernel: KernelInstance; variant: string } {
  const out = node.outputs[0]!;
  const ins = node.inputs;
  const f = functorOf(node);
  const n = out.size;
  const idx = idxType(large);
  const T = mslType(ins.length === 3 ? ins[1]!.dtype : ins[0]!.dtype, node.primitive.name);
  const U = mslType(out.dtype, node.primitive.name);
  const tag = `${ident(f)}_${dtypeTag(ins.length === 3 ? ins[1]!.dtype : ins[0]!.dtype)}_${dtypeTag(out.dtype)}`;
  const own = ruleOf(node).stridedKernel;
  if (own) return { kernel: own({ T, U, idx, tag, large }), variant: large ? "strided, large-index" : "strided" };
  if (ins.length === 1) {
    if (access[0] === "contiguous" && n < 2 ** 32 && !large) return { kernel: { file: "unary.metal", name: `mg_unary_v_${tag}`, instantiation: `unary_v<${f}, ${T}, ${U}>` }, variant: "contiguous" };
    if (access[0] === "contiguous") return { kernel: { file: "unary.metal", name: `mg_unary_v2_${tag}`, instantiation: `unary_v2<${f}, ${T}, ${U}>` }, variant: "contiguous, large-index" };
    return { kernel: { file: "unary.metal", name: `mg_unary_g_${tag}_${idxTag(large)}`, instantiation: `unary_g<${f}, ${T}, ${U}, ${idx}>` }, variant: large ? "strided, large-index" : "strided" };
  }
  if (ins.length === 2) {
    const [a, b] = access;
    if (!large && n < 2 ** 32) {
      if (a === "contiguous" && b === "contiguous") return { kernel: { file: "binary.metal", name: `mg_binary_vv_${tag}`, instantiation: `binary_vv<${f}, ${T}, ${U}>` }, variant: "contiguous" };
      if (a === "scalar" && b === "contiguous") return { kernel: { file: "binary.metal", name: `mg_binary_sv_${tag}`, instantiation: `binary_sv<${f}, ${T}, ${U}>` }, variant: "scalar-vector" };
      if (a === "contiguous" && b === "scalar") return { kernel: { file: "binary.metal", name: `mg_binary_vs_${tag}`, instantiation: `binary_vs<${f}, ${T}, ${U}>` }, variant: "vector-scalar" };
    } else if (a === "contiguous" && b === "contiguous") {
      return { kernel: { file: "binary.metal", name: `mg_binary_v2_${tag}`, instantiation: `binary_v2<${f}, ${T}, ${U}>` }, variant: "contiguous, large-index" };
    }
    return { kernel: { file: "binary.metal", name: `mg_binary_g_${tag}_${idxTag(large)}`, instantiation: `binary_g<${f}, ${T}, ${U}, ${idx}>` }, variant: large ? "strided, large-index" : "strided" };
  }
  if (access.every((x) => x === "contiguous") && !large && n < 2 ** 32) {
    return { kernel: { file: "ternary.metal", name: `mg_ternary_v_${tag}`, instantiation: `ternary_v<${f}, ${T}>` }, variant: "contiguous" };
  }
  return { kernel: { file: "ternary.metal", name: `mg_ternary_g_${tag}_${idxTag(large)}`, instantiation: `ternary_g<${f}, ${T}, ${idx}>` }, variant: large ? "strided, large-index" : "strided" };
}

// Sibling ops: a single-op kernel is a one-line template instance, and on the simulator a
// compiler run costs ~90 ms before its first instance and ~10 ms per instance after it, so the
// first time one op of a family is needed for a dtype, the family's other ops of that template and
// dtype compile in the same run (a test sweeping 30 float functions over a dtype compiles once,
// not 30 times). The families are the ops each dtype class supports; an instance a family adds
// is speculative: if the library fails to compile, the kernel compiles alone.
/** The kernel's siblings (same template, types and host-name pattern; other functors). Only the
 *  contiguous single-op templates, for real (not complex) dtypes. */
function familyOf(kernel: KernelInstance, functor: string, input: Dtype, output: Dtype): KernelInstance[] {
  if (functor.startsWith("Cast<")) return castFamily(kernel, input, output);
  if (functor === "DivMod") return divModFamily(kernel, input);
  const m = /^(unary_v|binary_vv|binary_vs|binary_sv)<([A-Za-z0-9]+), (.*)>$/.exec(kernel.instantiation);
  if (!m || m[2] !== functor || input === complex64 || output === complex64) return [];
  const [, template, , types] = m;
  const unary = template === "unary_v";
  const real = input.kind === "f" || input === bfloat16;
  const integer = input.kind === "i" || input.kind === "u";
  let functors: string[];
  if (unary) functors = input !== output ? [] : real ? FLOAT_UNARY : integer ? INT_UNARY : [];
  else if (input === bool_ && output === bool_) functors = BOOL_BINARY;
  else if (output === bool_) functors = COMPARISONS;
  else if (input !== output) functors = [];
  else functors = real ? FLOAT_BINARY : integer ? INT_BINARY : [];
  if (!functors.includes(functor)) return [];
  const prefix = kernel.name.slice(0, kernel.name.indexOf(`_${functor}_`) + 1);
  const suffix = kernel.name.slice(prefix.length + functor.length);
  return functors.filter((f) => f !== functor).map((f) => ({
    file: kernel.file,
    name: `${prefix}${f}${suffix}`,
    instantiation: `${template}<${f}, ${types}>`,
    speculative: true,
  }));
}

/** A contiguous cast's siblings: casts from the same dtype to every other GPU dtype. */
function castFamily(kernel: KernelInstance, input: Dtype, output: Dtype): KernelInstance[] {
  if (!kernel.instantiation.startsWith("unary_v<Cast<")) return [];
  const T = mslType(input, "astype");
  return GPU_DTYPES.filter((d) => d !== input && d !== output).map((d) => {
    const f = `Cast<${mslType(d, "astype")}>`;
    return { file: kernel.file, name: `mg_unary_v_${ident(f)}_${dtypeTag(input)}_${dtypeTag(d)}`, instantiation: `unary_v<${f}, ${T}, ${mslType(d, "astype")}>`, speculative: true };
  });
}

/** divmod's siblings: its kernel for every other real dtype (one template, no other functor; a
 *  test of divmod sweeps the dtypes). */
function divModFamily(kernel: KernelInstance, input: Dtype): KernelInstance[] {
  const m = /^divmod_g<[A-Za-z0-9_]+, (.*)>$/.exec(kernel.instantiation);
  const tag = `_${dtypeTag(input)}_${dtypeTag(input)}_`;
  if (!m || m[1] !== "uint" || !kernel.name.includes(tag)) return []; // (large-index: rare, alone)
  return GPU_DTYPES.filter((d) => d !== input && d !== complex64).map((d) => ({
    file: kernel.file,
    name: kernel.name.replace(tag, `_${dtypeTag(d)}_${dtypeTag(d)}_`),
    instantiation: `divmod_g<${mslType(d, "divmod")}, ${m[1]}>`,
    speculative: true,
  }));
}

/** The static kernel choice for a node, its inputs' layouts predicted where they have no data yet
 *  (null when they cannot be). With every input evaluated, it is the choice encodeSingle makes. */
export function plannedSingle(node: Node): SingleChoice | null {
  return chooseSingle(node, predictedAccess);
}

const NO_NUMBERS: number[] = [];

/** Encodes one elementwise node with its static kernel (`choice`: planned from its inputs' real
 *  layouts, or null to choose now). The common contiguous case is a hot path (thousands of small
 *  ops per eval): it builds no intermediate arrays and, unless tracing, no trace record. */
export function encodeSingle(enc: GpuEncoder, node: Node, choice: SingleChoice | null = null): void {
  const c = choice ?? chooseSingle(node)!;
  const pipeline = (c.pipeline ??= kernelPipeline(c.kernel, c.family));
  const inputs = node.inputs;
  const outputs = node.outputs;
  const n = outputs[0]!.size;
  if (n < 2 ** 32) {
    // The hot path: bindings and arguments straight into the batch, no binding, byte or dispatch
    // objects (outputs are allocated first: begin() opens the dispatch).
    let mustWrite = 0;
    for (let i = 0; i < outputs.length; i++) {
      const o = outputs[i]!;
      if (o.layout === null) o.allocateInPlace(false);
      mustWrite |= 1 << (inputs.length + i);
    }
    const threadgroup = Math.max(1, Math.min(256, pipeline.maxTotalThreadsPerThreadgroup, n));
    const strided = c.args === "strided";
    const next = inputs.length + outputs.length;
    enc.begin(pipeline, n, threadgroup, next, strided ? 5 : c.args === "size" ? 1 : 0, mustWrite);
    const bases: number[] = strided ? [] : NO_NUMBERS;
    for (let i = 0; i < inputs.length; i++) {
      const base = enc.bindInput(inputs[i]!, i);
      if (strided) bases.push(base);
    }
    for (let i = 0; i < outputs.length; i++) enc.bindOutput(outputs[i]!, inputs.length + i);
    if (strided) {
      // shape, every input's strides (int64; [0] for a 0-d input), ndim, bases (int64), size
      const strides: number[] = [];
      for (const a of inputs) {
        const s = a.layout!.strides;
        if (s.length === 0) strides.push(0);
        else for (let k = 0; k < s.length; k++) strides.push(s[k]!);
      }
      const b = enc.batch;
      b.inlineInts(next, outputs[0]!.shape, false);
      b.inlineInts(next + 1, strides, true);
      b.inlineInts(next + 2, [outputs[0]!.ndim], false);
      b.inlineInts(next + 3, bases, true);
      b.inlineInts(next + 4, [n], true);
    } else if (c.args === "size") enc.batch.inlineInts(next, [n], true);
    enc.end(pipeline, n, threadgroup, tracing() ? { primitives: [node.primitive.name], inputs, outputs, layout: c.variant, precision: c.precision } : null);
    return;
  }
  const buffers: BufferBinding[] = [];
  const mustWrite: number[] = [];
  let bytes: InlineBytes[] | undefined; // contiguous kernels take none
  let next = inputs.length + outputs.length;
  if (c.args === "strided") {
    bytes = [];
    const ins: BoundArray[] = [];
    for (let i = 0; i < inputs.length; i++) {
      const b = enc.input(inputs[i]!, i);
      ins.push(b);
      buffers.push(b.binding);
    }
    bytes.push(int32Bytes(next++, outputs[0]!.shape));
    bytes.push(int64Bytes(next++, ins.flatMap((b) => (b.strides.length ? [...b.strides] : [0]))));
    bytes.push(int32Bytes(next++, [outputs[0]!.ndim]));
    bytes.push(int64Bytes(next++, ins.length === 1 ? [ins[0]!.base] : ins.map((b) => b.base)));
    bytes.push(int64Bytes(next++, [n]));
  } else {
    for (let i = 0; i < inputs.length; i++) buffers.push(enc.inputBinding(inputs[i]!, i));
    if (c.args === "size") bytes = [int64Bytes(next++, [n])];
  }
  for (let i = 0; i < outputs.length; i++) {
    buffers.push(enc.outputBindingInPlace(outputs[i]!, inputs.length + i));
    mustWrite.push(inputs.length + i);
  }
  // A 1-D grid (the usual case) is passed as plain numbers: no [x, 1, 1] triples to allocate.
  let grid: Size3 = n;
  let threadgroup: Size3;
  if (n < 2 ** 32) threadgroup = Math.max(1, Math.min(256, pipeline.maxTotalThreadsPerThreadgroup, n));
  else {
    grid = elementwiseGrid(n);
    threadgroup = linearThreadgroup(pipeline, grid[0]);
  }
  enc.dispatch(
    { pipeline, buffers, bytes, grid, threadgroup, mustWrite },
    tracing() ? { primitives: [node.primitive.name], inputs, outputs, layout: c.variant, precision: c.precision } : null,
  );
}

// ---------------------------------------------------------------------------------------------
// Fusion

export interface Region {
  /** Nodes in dependency order; all single-output elementwise, all of one output shape. */
  nodes: Node[];
  /** Arrays computed by region nodes that must be written (needed outside the region). */
  outputs: MgArray[];
}

/** Buffers a fused kernel may take: Metal allows 31; 5 carry shapes, strides and sizes. */
export const FUSED_MAX_BUFFERS = 26;

/** The generated kernel for a region, plus how its inputs and outputs map to buffers. */
export interface FusedKernel {
  name: string;
  /** The kernel function alone (several regions compile together after one shared header). */
  kernel: string;
  /** Header + kernel: a complete library source. */
  source: string;
  /** The functors it calls (its header holds what they need: fusedHeader). */
  functors: string[];
  inputs: MgArray[];
  inputAccess: Access[];
  outputs: MgArray[];
  strided: boolean;
  /** Every input is read through its strides, whatever its access (see FUSED_GENERAL_MAX). */
  general: boolean;
  large: boolean;
}

/**
 * Outputs of at most this many elements run a region's *general* kernel: every input read through
 * its strides (contiguous ones row-major, scalars 0), so regions that differ only in which inputs
 * are contiguous, scalar or strided (x * 2 against x * y, a transposed operand) share one kernel,
 * one compile and one pipeline. Small dispatches cost their launch, not their indexing; larger
 * outputs get kernels specialised to each input's access. Small regions run on the interpreter of
 * fused-program.ts instead (any GPU dtype), which compiles once in all.
 */
export const FUSED_GENERAL_MAX = 4096;

/** The region's inputs: arrays read by region nodes but not produced inside it. */
export function regionInputs(region: Region): MgArray[] {
  const produced = new Set<MgArray>(region.nodes.flatMap((n) => n.outputs));
  const seen = new Set<MgArray>();
  const inputs: MgArray[] = [];
  for (const n of region.nodes) {
    for (const i of n.inputs) {
      if (!produced.has(i) && !seen.has(i)) {
        seen.add(i);
        inputs.push(i);
      }
    }
  }
  return inputs;
}

/** Generates (readable) MSL for a region. Names hash the body, so equal structure shares a pipeline. */
export function generateFused(region: Region, accessFn: AccessFn = accessOf): FusedKernel | null {
  const inputs = regionInputs(region);
  const outShape = region.nodes[0]!.outputs[0]!.shape;
  const n = region.nodes[0]!.outputs[0]!.size;
  const access: Access[] = [];
  for (const a of inputs) {
    const acc = accessFn(a, n);
    if (acc === null) return null;
    access.push(acc);
  }
  const general = n <= FUSED_GENERAL_MAX;
  const strided = general || access.includes("strided");
  const large = needsLargeIndex(n, inputs);
  const idx = idxType(large);
  const names = new Map<MgArray, string>();
  const params: string[] = [];
  const lines: string[] = [];
  inputs.forEach((a, k) => {
    const t = mslType(a.dtype, "fused");
    params.push(`    device const ${t}* in${k} [[buffer(${k})]]`);
    const how = general ? "strided" : access[k]!;
    const at = how === "scalar" ? "0" : how === "contiguous" ? "i" : `IdxT(bases[${k}]) + elem_to_loc<IdxT>(i, shape, strides + ${k} * ndim, ndim)`;
    lines.push(`  const ${t} x${k} = in${k}[${at}];  // ${a.dtype.name} ${general ? "general" : how}`);
    names.set(a, `x${k}`);
  });
  region.outputs.forEach((o, k) => {
    params.push(`    device ${mslType(o.dtype, "fused")}* out${k} [[buffer(${inputs.length + k})]]`);
  });
  let b = inputs.length + region.outputs.length;
  if (strided) {
    params.push(`    constant const int* shape [[buffer(${b++})]]`);
    params.push(`    constant const int64_t* strides [[buffer(${b++})]]`);
    params.push(`    constant const int& ndim [[buffer(${b++})]]`);
    params.push(`    constant const int64_t* bases [[buffer(${b++})]]`);
  }
  params.push(`    constant const int64_t& size [[buffer(${b++})]]`);
  params.push("    uint2 gid [[thread_position_in_grid]]");
  params.push("    uint2 grid [[threads_per_grid]]");
  const functors: string[] = [];
  region.nodes.forEach((node, k) => {
    const out = node.outputs[0]!;
    const t = mslType(out.dtype, node.primitive.name);
    const args = node.inputs.map((i) => names.get(i)!);
    const f = functorOf(node);
    functors.push(f);
    lines.push(`  const ${t} t${k} = ${f}()(${args.join(", ")});  // ${node.primitive.name} -> ${out.dtype.name}`);
    names.set(out, `t${k}`);
  });
  region.outputs.forEach((o, k) => lines.push(`  out${k}[i] = ${names.get(o)!};`));
  const body = [
    `  typedef ${idx} IdxT;`,
    "  IdxT i = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);",
    "  if (int64_t(i) >= size) return;",
    ...lines,
  ].join("\n");
  const signature = params.join(",\n");
  const hash = Bun.hash(`${signature}\n${body}`).toString(16);
  const name = `mg_fused_${hash}`;
  const kernel = `// ${region.nodes.map((x) => x.primitive.name).join(" -> ")} over shape (${outShape.join(",")})\n[[kernel]] void ${name}(\n${signature}) {\n${body}\n}\n`;
  return { name, kernel, source: `${fusedHeader(functors)}\n\n${kernel}`, functors, inputs, inputAccess: access, outputs: region.outputs, strided, general, large };
}

/** Compiles the kernels of regions whose input layouts can be predicted, all in one library. */
export function prepareFused(regions: readonly Region[]): void {
  const kernels: FusedKernel[] = [];
  let program = false;
  for (const r of regions) {
    if (regionProgram(r)) {
      program = true;
      continue;
    }
    const k = generateFused(r, predictedAccess);
    if (k) kernels.push(k);
  }
  if (program) sourcePipeline(PROGRAM_NAME, programSource(), PROGRAM_NAME);
  prepareSources(fusedHeader(kernels.flatMap((k) => k.functors)), kernels.map((k) => ({ name: k.name, kernel: k.kernel })));
}

/** A small region as a program of the fused-region interpreter (fused-program.ts): no compile of
 *  its own. Null when the region needs its generated kernel. */
function regionProgram(region: Region): { inputs: MgArray[]; words: number[] } | null {
  const n = region.nodes[0]!.outputs[0]!.size;
  if (n > FUSED_GENERAL_MAX) return null;
  const inputs = regionInputs(region);
  if (needsLargeIndex(n, inputs)) return null;
  const words = programWords(region.nodes, inputs, region.outputs, region.nodes.map(functorOf), n);
  return words ? { inputs, words } : null;
}

/** Which inputs each output of a fused kernel is computed from (bit k: input binding k), so a
 *  failed input fails only the outputs of its own chain. Null when every output reads them all. */
function outputDependencies(region: Region, inputs: readonly MgArray[], outs: readonly BoundArray[]): { index: number; readMask: number }[] | undefined {
  const all = 2 ** inputs.length - 1;
  const inputBit = new Map(inputs.map((a, i) => [a, 1 << i]));
  const reads = new Map<MgArray, number>();
  for (const n of region.nodes) {
    let m = 0;
    for (const i of n.inputs) m |= reads.get(i) ?? inputBit.get(i) ?? 0;
    reads.set(n.outputs[0]!, m);
  }
  const entries = region.outputs.map((o, j) => ({ index: outs[j]!.binding.index, readMask: reads.get(o) ?? all }));
  return entries.every((e) => e.readMask === all) ? undefined : entries;
}

/** The strides a general kernel reads an input through: its own when strided, row-major at the
 *  output's shape when contiguous, zeros for a scalar (inputs of lower rank are broadcast views). */
function generalStrides(shape: readonly number[], bnd: BoundArray, acc: Access, general: boolean): number[] {
  if (acc === "strided") return [...bnd.strides];
  if (general && acc === "contiguous") return shape.map((_, d) => shape.slice(d + 1).reduce((p, x) => p * x, 1));
  return shape.map(() => 0);
}

/** Dispatches a region's kernel (generated, or the interpreter) over its n outputs, traced as the
 *  region's primitives at their dtypes' precisions. */
function dispatchRegion(enc: GpuEncoder, region: Region, pipeline: Pipeline, buffers: BufferBinding[], bytes: InlineBytes[], n: number,
  inputs: readonly MgArray[], outs: readonly BoundArray[], layout: string): void {
  const dtypes = new Set(region.nodes.map((x) => x.outputs[0]!.dtype));
  dispatchLinear(
    enc, pipeline, n, buffers, bytes,
    { mustWrite: outs.map((o) => o.binding.index), dependencies: outputDependencies(region, inputs, outs) },
    {
      primitives: region.nodes.map((x) => x.primitive.name),
      inputs,
      outputs: region.outputs,
      layout,
      precision: [...dtypes].map(elementwisePrecision).filter((v, i, all) => all.indexOf(v) === i).join("; "),
    },
  );
}

/** Runs a region on the fused-region interpreter (same bindings as its general kernel, plus the
 *  program; unused buffer slots get a scratch buffer nothing reads or writes). */
function encodeProgram(enc: GpuEncoder, region: Region, inputs: readonly MgArray[], words: readonly number[]): void {
  if (process.env.MG_VERBOSE_FUSION === "1") process.stderr.write(`// ${PROGRAM_NAME}: ${region.nodes.map((x) => x.primitive.name).join(" -> ")}: [${words.join(", ")}]\n`);
  const pipeline = sourcePipeline(PROGRAM_NAME, programSource(), PROGRAM_NAME);
  const out = region.nodes[0]!.outputs[0]!;
  const n = out.size;
  const shape = out.shape;
  const ins: BoundArray[] = inputs.map((a, i) => enc.input(a, i));
  const outs = region.outputs.map((o, i) => enc.outputInPlace(o, inputs.length + i));
  const buffers: BufferBinding[] = [...ins, ...outs].map((x) => x.binding);
  const spare = buffers.length < PROGRAM_BUFFERS ? enc.temporary(16) : null;
  for (let k = buffers.length; k < PROGRAM_BUFFERS; k++) buffers.push({ index: k, buffer: spare!, access: "read" });
  let next = PROGRAM_BUFFERS;
  const bytes = [
    int32Bytes(next++, shape),
    int64Bytes(next++, ins.flatMap((bnd, i) => generalStrides(shape, bnd, accessOf(inputs[i]!, n), true))),
    int32Bytes(next++, [shape.length]),
    int64Bytes(next++, ins.map((bnd) => bnd.base)),
    int32Bytes(next++, words),
  ];
  dispatchRegion(enc, region, pipeline, buffers, bytes, n, inputs, outs, "fused general");
}

export function encodeFused(enc: GpuEncoder, region: Region): void {
  const program = regionProgram(region);
  if (program) return encodeProgram(enc, region, program.inputs, program.words);
  const k = generateFused(region)!;
  if (process.env.MG_VERBOSE_FUSION === "1") process.stderr.write(`${k.source}\n`);
  const pipeline = sourcePipeline(k.name, k.source, k.name);
  const n = region.nodes[0]!.outputs[0]!.size;
  const shape = region.nodes[0]!.outputs[0]!.shape;
  const ins: BoundArray[] = k.inputs.map((a, i) => enc.input(a, i));
  const outs = k.outputs.map((o, i) => enc.outputInPlace(o, k.inputs.length + i));
  let next = k.inputs.length + k.outputs.length;
  const bytes = [];
  if (k.strided) {
    bytes.push(int32Bytes(next++, shape));
    // Inputs of lower rank than the output are broadcast views already, so every input has ndim strides.
    // (A general kernel reads contiguous inputs through their strides too, row-major at this shape.)
    bytes.push(int64Bytes(next++, ins.flatMap((bnd, i) => generalStrides(shape, bnd, k.inputAccess[i]!, k.general))));
    bytes.push(int32Bytes(next++, [shape.length]));
    bytes.push(int64Bytes(next++, ins.map((bnd) => bnd.base)));
  }
  bytes.push(int64Bytes(next++, [n]));
  // "general": a small output's kernel, every input read through its strides (FUSED_GENERAL_MAX)
  const variant = `${k.general ? "general" : k.strided ? "strided" : "contiguous"}${k.large ? ", large-index" : ""}`;
  dispatchRegion(enc, region, pipeline, [...ins, ...outs].map((x) => x.binding), bytes, n, k.inputs, outs, `fused ${variant}`);
}

// ---------------------------------------------------------------------------------------------
// Registrations: the functors of Sources/Kernels/elementwise_ops.h, named as the primitives

for (const p of [
  P.Abs, P.Negative, P.Sign, P.Square, P.Sqrt, P.Rsqrt, P.Exp, P.Expm1, P.Log, P.Log2, P.Log10, P.Log1p, P.Sin, P.Cos,
  P.Tan, P.ArcSin, P.ArcCos, P.ArcTan, P.Sinh, P.Cosh, P.Tanh, P.ArcSinh, P.ArcCosh, P.ArcTanh, P.Floor, P.Ceil, P.Round,
  P.Sigmoid, P.Erf, P.ErfInv, P.LogicalNot, P.BitwiseInvert, P.Conjugate, P.Real, P.Imag,
  P.Add, P.Subtract, P.Multiply, P.Divide, P.FloorDivide, P.Remainder, P.Power, P.Maximum, P.Minimum, P.LogAddExp,
  P.ArcTan2, P.Equal, P.NotEqual, P.Greater, P.GreaterEqual, P.Less, P.LessEqual, P.LogicalAnd, P.LogicalOr,
  P.BitwiseAnd, P.BitwiseOr, P.BitwiseXor, P.LeftShift, P.RightShift, P.Select,
]) registerGpu(p, elementwise(p.name));
registerGpu(P.EqualNan, elementwise("EqualNan"));
// Cast<output type>: the functor depends on the node.
registerGpu(P.AsType, { kind: "elementwise", functor: (node) => `Cast<${mslType(node.outputs[0]!.dtype, "astype")}>` });
// Two outputs: binary.metal's divmod_g (strided arguments), never fused.
registerGpu(P.DivMod, {
  kind: "elementwise",
  functor: () => "DivMod",
  stridedKernel: ({ T, idx, tag, large }) => ({ file: "binary.metal", name: `mg_divmod_g_${tag}_${idxTag(large)}`, instantiation: `divmod_g<${T}, ${idx}>` }),
});
