// mg.fast.metalKernel: MLX's mx.fast.metal_kernel (guide §7–§9). The user writes the body of a
// Metal kernel; we generate its signature from the inputs, outputs, template arguments and the
// attributes the source mentions, compile it once per distinct generated source, and insert it in
// the lazy graph as a CustomKernel node that the GPU backend encodes like any other kernel.
//
// Where it runs: only on a GPU stream. On a Mac that is the GPU; on Linux mg.gpu is the MSL CPU
// simulator, which runs the same Metal source. The CPU device cannot run a Metal kernel, so a CPU
// stream is refused at the call (as MLX's "[metal_kernel] Only supports the GPU."), and the record
// has no CPU kernel. Its GPU rule is registered here: a custom kernel is GPU code by nature.
import { MgArray, type Node } from "../core/array.ts";
import { libraryFunction } from "../core/ownership.ts";
import { defaultStream, gpu, resolveStream, type Stream, type StreamOrDevice } from "../core/device.ts";
import { bfloat16, bool_, Dtype, float16, float32, float64, int32, isScalar, type Scalar, scalarDtype, uint32, uint64 } from "../core/dtype.ts";
import { float64OnGpuError, makeNode } from "../core/graph.ts";
import { defineRules, type Primitive } from "../core/primitive.ts";
import { formatShape, rowMajorStrides } from "../core/shape.ts";
import { constantScalar } from "../core/ops/convert.ts";
import { Precision } from "../core/trace.ts";
import { copyKernel, encodeCopyInto } from "../backend/gpu/copy.ts";
import { dtypeTag, mslType } from "../backend/gpu/dtypes.ts";
import { type BoundArray, type GpuEncoder, float32Bytes, int32Bytes, int64Bytes } from "../backend/gpu/encoder.ts";
import { type KernelInstance, kernelCompileCount, kernelPipeline, kernelSource, sourcePipeline } from "../backend/gpu/kernels.ts";
import { elementwiseGrid, linearThreadgroup } from "../backend/gpu/launch.ts";
import { registerGpu } from "../backend/gpu/registry.ts";
import { type BufferBinding, type InlineBytes, type MathMode, type Pipeline, runtime } from "../backend/runtime.ts";

const TAG = "[metal_kernel]";

// ---------------------------------------------------------------------------------------------
// Public types

/** A template argument as MLX takes it: `[name, value]` with a dtype, an integer or a boolean. */
export type TemplateArg = readonly [string, Dtype | number | boolean];

/** metalKernel's options: name, input and output names, source, header, ensureRowContiguous, atomicOutputs. */
export interface MetalKernelOptions {
  /** Part of the generated function name (`custom_kernel_<name>_…`). */
  name: string;
  /** Parameter names of the inputs in the generated signature (used in `source`). */
  inputNames: readonly string[];
  /** Parameter names of the outputs in the generated signature. */
  outputNames: readonly string[];
  /** The body of the kernel: statements only; the signature is generated (guide §7.3). */
  source: string;
  /** Emitted before the kernel: helper functions, `using` declarations, includes (guide §9.3). */
  header?: string;
  /** Copy non-row-contiguous inputs before the launch (default true, guide §9.1). */
  ensureRowContiguous?: boolean;
  /** Declare outputs as `device atomic<T>*` (guide §9.4). */
  atomicOutputs?: boolean;
  /** "safe" (default: IEEE special values), "relaxed" or "fast" (guide §7.5). */
  mathMode?: string;
  /** MLX's spelling: `{ mathMode }` (or `{ math_mode }`); no other key is accepted. */
  compileOptions?: Record<string, unknown>;
  /**
   * The simulator's checked mode for this kernel. By default (no value) an out-of-bounds write
   * fails the batch — a custom kernel must not be able to corrupt the host — while an
   * out-of-bounds read gives 0 (a GPU returns some value, and MLX's own examples read past the
   * border and mask the result). `true` (or MG_SIM_CHECK=1): out-of-bounds reads fail too, and
   * without `initValue` every output element must be written. `false`: no checks, about 5-7x
   * faster for simple kernels on the simulator (bench/metal-kernel-checked.bench.ts), at the risk
   * of the process. A real GPU compiles the same source unchecked.
   */
  checked?: boolean;
}

/** A custom kernel's input: an array or a scalar. */
export type MetalKernelInput = MgArray | Scalar;

/**
 * A custom kernel's call: inputs, output shapes and dtypes, grid, threadgroup, template arguments, initValue, verbose, stream.
 */
export interface MetalKernelCall {
  /** One per input name: arrays, or JS scalars (they become `constant T&` arguments). */
  inputs: readonly MetalKernelInput[];
  outputShapes: readonly (readonly number[])[];
  outputDtypes: readonly Dtype[];
  /** Threads in x, y, z (dispatchThreads: not threadgroups, guide §7.4). */
  grid: readonly [number, number, number];
  /** Threads per threadgroup in x, y, z. */
  threadgroup: readonly [number, number, number];
  template?: readonly TemplateArg[];
  /** Fills every output with this value before the kernel runs (guide §9.4). */
  initValue?: number | null;
  /** Prints the generated source (guide §9.5). */
  verbose?: boolean;
  /** A GPU stream or device (default: the current stream if it is a GPU one, else the GPU's default). */
  stream?: StreamOrDevice | null;
}

/** The callable metalKernel returns: runs the kernel lazily and returns one array per output. */
export type MetalKernel = (call: MetalKernelCall) => MgArray[];

// ---------------------------------------------------------------------------------------------
// Signature generation (guide §7.3)

/** MLX's type strings (get_type_string), which the generated signatures and names spell: the MSL
 *  types, except that the 16-bit floats are float16_t and bfloat16_t. */
function typeString(d: Dtype, what: string): string {
  if (d === float64) throw float64OnGpuError("metal_kernel", ` (${what})`);
  return d === float16 ? "float16_t" : d === bfloat16 ? "bfloat16_t" : mslType(d, "metal_kernel");
}

/** MSL Table 5.8 attributes, with the type MLX declares each with, in MLX's order. */
const METAL_ATTRIBUTES: readonly (readonly [string, string])[] = [
  ["dispatch_quadgroups_per_threadgroup", "uint"],
  ["dispatch_simdgroups_per_threadgroup", "uint"],
  ["dispatch_threads_per_threadgroup", "uint3"],
  ["grid_origin", "uint3"],
  ["grid_size", "uint3"],
  ["quadgroup_index_in_threadgroup", "uint"],
  ["quadgroups_per_threadgroup", "uint"],
  ["simdgroup_index_in_threadgroup", "uint"],
  ["simdgroups_per_threadgroup", "uint"],
  ["thread_execution_width", "uint"],
  ["thread_index_in_quadgroup", "uint"],
  ["thread_index_in_simdgroup", "uint"],
  ["thread_index_in_threadgroup", "uint"],
  ["thread_position_in_grid", "uint3"],
  ["thread_position_in_threadgroup", "uint3"],
  ["threadgroup_position_in_grid", "uint3"],
  ["threadgroups_per_grid", "uint3"],
  ["threads_per_grid", "uint3"],
  ["threads_per_simdgroup", "uint"],
  ["threads_per_threadgroup", "uint3"],
];

/** Inputs with fewer elements than this go in the constant address space (as MLX). */
const MAX_CONSTANT_ARRAY_SIZE = 8;

/** Atomic types Metal has (MSL §6.15): what `atomicOutputs` can declare. */
const ATOMIC_DTYPES: readonly Dtype[] = [int32, uint32, float32, bool_, uint64];

/** Which of `<input>_shape`, `_strides`, `_ndim` the source mentions (a textual trigger). */
type ShapeInfo = readonly [shape: boolean, strides: boolean, ndim: boolean];

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

interface TemplateValue {
  name: string;
  kind: "typename" | "int" | "bool";
  /** As written in the instantiation (`float`, `4`, `1`). */
  text: string;
}

function parseTemplate(template: readonly TemplateArg[] | undefined): TemplateValue[] {
  if (template === undefined || template === null) return [];
  if (!Array.isArray(template)) {
    throw new TypeError(`${TAG} template must be a list of [name, value] pairs, got ${describe(template)}.`);
  }
  const seen = new Set<string>();
  return template.map((entry: unknown) => {
    if (!Array.isArray(entry) || entry.length !== 2 || typeof entry[0] !== "string") {
      throw new TypeError(`${TAG} each template argument must be a [name, value] pair, got ${describe(entry)}.`);
    }
    const [name, value] = entry as [string, unknown];
    if (!IDENTIFIER.test(name)) throw new Error(`${TAG} template argument name '${name}' is not a valid identifier.`);
    if (seen.has(name)) throw new Error(`${TAG} template argument '${name}' is given twice.`);
    seen.add(name);
    if (value instanceof Dtype) return { name, kind: "typename", text: typeString(value, `template argument '${name}'`) };
    // Booleans first: MLX renders them as 1/0 in the instantiation.
    if (typeof value === "boolean") return { name, kind: "bool", text: value ? "1" : "0" };
    if (typeof value === "number" && Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31) {
      return { name, kind: "int", text: String(value) };
    }
    throw new TypeError(
      `${TAG} Invalid template argument '${name}' (${describe(value)}). Must be \`Dtype\`, \`int\` or \`bool\` ` +
        "(a float value can be passed as a 1-element input array instead).",
    );
  });
}

function describe(x: unknown): string {
  if (x instanceof MgArray) return x.describe();
  if (typeof x === "string") return `string '${x}'`;
  if (x === null || x === undefined) return String(x);
  if (typeof x === "object") return Array.isArray(x) ? `[${x.map(describe).join(", ")}]` : (x.constructor?.name ?? "object");
  return `${typeof x} ${String(x)}`;
}

interface Signature {
  /** custom_kernel_<name>_<template args>_<input dtypes>_<output dtypes> */
  kernelName: string;
  /** What `verbose` prints: header, signature, body and the explicit instantiation. */
  generated: string;
  /** The same with `#line` markers, so compiler diagnostics point at the user's own lines. */
  compiled: string;
}

/** Generates the kernel as MLX's write_signature does (guide §7.3). */
function writeSignature(
  spec: KernelSpec,
  inputs: readonly MgArray[],
  outputDtypes: readonly Dtype[],
  template: readonly TemplateValue[],
): Signature {
  let kernelName = `custom_kernel_${spec.name}`;
  if (template.length > 0) kernelName += `_${template.map((t) => t.text).join("_")}`;
  // The name also says how each input is passed (s: a scalar reference, c: a small constant
  // array), so one name always maps to one source.
  for (const a of inputs) {
    kernelName += `_${typeString(a.dtype, "input")}${a.ndim === 0 ? "s" : a.size < MAX_CONSTANT_ARRAY_SIZE ? "c" : ""}`;
  }
  for (const d of outputDtypes) kernelName += `_${typeString(d, "output")}`;

  const params: string[] = [];
  let index = 0;
  inputs.forEach((a, i) => {
    const name = spec.inputNames[i]!;
    const space = a.size < MAX_CONSTANT_ARRAY_SIZE ? "constant" : "device";
    const ref = a.ndim === 0 ? "&" : "*";
    params.push(`  const ${space} ${typeString(a.dtype, `input '${name}'`)}${ref} ${name} [[buffer(${index++})]]`);
    if (a.ndim > 0) {
      const [shape, strides, ndim] = spec.shapeInfos[i]!;
      if (shape) params.push(`  const constant int* ${name}_shape [[buffer(${index++})]]`);
      if (strides) params.push(`  const constant int64_t* ${name}_strides [[buffer(${index++})]]`);
      if (ndim) params.push(`  const constant int& ${name}_ndim [[buffer(${index++})]]`);
    }
  });
  outputDtypes.forEach((d, i) => {
    const t = typeString(d, `output '${spec.outputNames[i]}'`);
    params.push(`  device ${spec.atomicOutputs ? `atomic<${t}>` : t}* ${spec.outputNames[i]} [[buffer(${index++})]]`);
  });
  for (const attr of spec.attributes) params.push(`  ${attr}`);

  const header = spec.header ? `${spec.header}\n` : "";
  let signature = template.length > 0 ? `template <${template.map((t) => `${t.kind} ${t.name}`).join(", ")}>\n` : "";
  signature += `[[kernel]] void ${kernelName}(\n${params.join(",\n")}) {\n`;
  let tail = "}\n";
  if (template.length > 0) {
    const inst = `${kernelName}<${template.map((t) => t.text).join(", ")}>`;
    tail += `\ntemplate [[host_name("${kernelName}")]] [[kernel]] decltype(${inst}) ${inst};\n`;
  }
  const line = (part: string) => `#line 1 "metal_kernel ${spec.name} ${part}"\n`;
  return {
    kernelName,
    generated: `${header}${signature}${spec.source}\n${tail}`,
    compiled: `${line("header")}${header}${line("signature")}${signature}${line("source")}${spec.source}\n${line("instantiation")}${tail}`,
  };
}

// ---------------------------------------------------------------------------------------------
// The primitive

export interface CustomKernelParams {
  /** The user's kernel name and the generated function name. */
  name: string;
  kernelName: string;
  pipeline: Pipeline;
  inputNames: readonly string[];
  outputNames: readonly string[];
  shapeInfos: readonly ShapeInfo[];
  outputShapes: readonly number[][];
  outputDtypes: readonly Dtype[];
  grid: readonly [number, number, number];
  threadgroup: readonly [number, number, number];
  ensureRowContiguous: boolean;
  initValue: number | null;
  mathMode: MathMode;
  checked: boolean | "writes";
}

function opaque(rule: "vjp" | "jvp" | "vmap", p: CustomKernelParams): Error {
  return new Error(
    `[${rule}] CustomKernel '${p.name}' has no ${rule} rule: a custom Metal kernel is opaque to transforms. ` +
      `Wrap the call in mg.customFunction and attach .${rule}(...) (guide §9.4).`,
  );
}

/** The primitive record of custom Metal kernels (kernel traces name it). */
export const CustomKernel: Primitive<CustomKernelParams> = {
  name: "CustomKernel",
  opName: () => "metal_kernel",
  outputSpecs: (_inputs, p) => p.outputShapes.map((shape, i) => ({ shape: [...shape], dtype: p.outputDtypes[i]! })),
  paramsKey: (p) =>
    `${p.pipeline.name}#${p.pipeline.handle}|${p.grid.join(",")}|${p.threadgroup.join(",")}|${p.ensureRowContiguous}|${p.initValue}|` +
    p.outputShapes.map((s) => s.join("x")).join(";"),
};

defineRules(CustomKernel, {
  vjp(_p, _c, _a, _o, p) {
    throw opaque("vjp", p);
  },
  jvp(_p, _t, _a, _o, p) {
    throw opaque("jvp", p);
  },
  vmap(_i, _a, p) {
    throw opaque("vmap", p);
  },
});

registerGpu(CustomKernel, { kind: "kernel", kernels: kernelsOf, encode: encodeCustomKernel });

type CustomKernelNode = Node<CustomKernelParams>;

function initInstance(d: Dtype): KernelInstance {
  return { file: "custom_kernel_init.metal", name: `mg_custom_init_${dtypeTag(d)}`, instantiation: `custom_kernel_init<${mslType(d, "metal_kernel")}>` };
}

/** Why an input must be copied before the launch, or null when it is bound as it is. */
function copyReason(a: MgArray, p: CustomKernelParams, name: string): string | null {
  const l = a.layout!;
  if (p.ensureRowContiguous && !l.rowContiguous) {
    return `copy: metal_kernel '${p.name}' input '${name}' (${a.describe()}, strides ${formatShape(l.strides)}) is not row-contiguous and ensureRowContiguous is true`;
  }
  // Inputs are bound at their first element (MLX's convention, which `elem_to_loc` indexing
  // assumes); a view with negative strides reaches below it, so it is packed first.
  if (l.strides.some((s, i) => s < 0 && a.shape[i]! > 1)) {
    return `copy: metal_kernel '${p.name}' input '${name}' (${a.describe()}, strides ${formatShape(l.strides)}) has negative strides; inputs are bound at their first element`;
  }
  return null;
}

function kernelsOf(node: CustomKernelNode): KernelInstance[] {
  const p = node.params;
  const out: KernelInstance[] = [];
  const launches = p.grid.every((g) => g > 0);
  node.inputs.forEach((a, i) => {
    if (launches && a.layout && copyReason(a, p, p.inputNames[i]!)) out.push(...copyKernel(a));
  });
  if (p.initValue !== null) for (const d of new Set(p.outputDtypes)) out.push(initInstance(d));
  return out;
}

/** Copies a strided input into scratch memory this batch owns; returns its row-contiguous binding. */
function encodeInputCopy(enc: GpuEncoder, a: MgArray, index: number, note: string): BoundArray {
  const scratch = enc.temporary(a.nbytes);
  enc.note(note);
  encodeCopyInto(enc, a, { index: 1, buffer: scratch, offset: 0, length: a.nbytes, access: "write" }, { primitive: "CustomKernel", outputs: [a] });
  return {
    binding: { index, buffer: scratch, offset: 0, length: a.nbytes, access: "read" },
    base: 0,
    strides: rowMajorStrides(a.shape),
    rowContiguous: true,
  };
}

function encodeCustomKernel(enc: GpuEncoder, node: CustomKernelNode): void {
  const p = node.params;
  const buffers: BufferBinding[] = [];
  const bytes: InlineBytes[] = [];
  let index = 0;
  const [gx, gy, gz] = p.grid;
  const launches = gx * gy * gz > 0;
  node.inputs.forEach((a, i) => {
    const name = p.inputNames[i]!;
    const reason = launches ? copyReason(a, p, name) : null;
    const bound = reason ? encodeInputCopy(enc, a, index, reason) : enc.input(a, index);
    buffers.push({ ...bound.binding, index });
    index++;
    if (a.ndim > 0) {
      const [shape, strides, ndim] = p.shapeInfos[i]!;
      if (shape) bytes.push(int32Bytes(index++, a.shape));
      if (strides) bytes.push(int64Bytes(index++, [...bound.strides]));
      if (ndim) bytes.push(int32Bytes(index++, [a.ndim]));
    }
  });

  const outputs = node.outputs;
  if (p.initValue !== null) {
    for (const o of outputs) {
      if (o.size === 0) continue;
      const k = initInstance(o.dtype);
      const pipeline = kernelPipeline(k);
      const grid = elementwiseGrid(o.size);
      const bound = enc.output(o, 0);
      enc.dispatch(
        {
          pipeline,
          buffers: [bound.binding],
          bytes: [float32Bytes(1, [p.initValue]), int64Bytes(2, [o.size])],
          grid,
          threadgroup: linearThreadgroup(pipeline, grid[0]),
          mustWrite: [0],
        },
        {
          primitives: ["CustomKernel"],
          inputs: [],
          outputs: [o],
          layout: "contiguous",
          precision: Precision.none,
          notes: [`initValue ${p.initValue}: fills '${p.outputNames[outputs.indexOf(o)]}' before metal_kernel '${p.name}' runs`],
        },
      );
    }
  }
  const mustWrite: number[] = [];
  for (const o of outputs) {
    const bound = enc.output(o, index);
    buffers.push(bound.binding);
    // Without initValue every element must be written: full checked mode reports any that is not.
    if (p.checked === true && p.initValue === null && o.size > 0) mustWrite.push(index);
    index++;
  }

  if (!launches) return; // nothing to launch; outputs keep their initValue (if any)
  const [tx, ty, tz] = p.threadgroup;
  // As MLX: a threadgroup never exceeds the grid in any dimension.
  const threadgroup: [number, number, number] = [Math.min(tx, gx), Math.min(ty, gy), Math.min(tz, gz)];
  const clamped = threadgroup.some((t, k) => t !== p.threadgroup[k]);
  enc.dispatch(
    { pipeline: p.pipeline, buffers, bytes, grid: [gx, gy, gz], threadgroup, mustWrite },
    {
      primitives: ["CustomKernel"],
      inputs: node.inputs,
      outputs,
      layout: p.ensureRowContiguous ? "row-contiguous inputs" : "strided inputs",
      precision: `as written in metal_kernel '${p.name}' (math mode ${p.mathMode})`,
      notes: clamped ? [`threadgroup (${p.threadgroup.join(",")}) clamped to the grid (${p.grid.join(",")})`] : [],
    },
  );
}

// ---------------------------------------------------------------------------------------------
// The constructor

interface KernelSpec {
  name: string;
  inputNames: readonly string[];
  outputNames: readonly string[];
  source: string;
  header: string;
  ensureRowContiguous: boolean;
  atomicOutputs: boolean;
  mathMode: MathMode;
  checked: boolean | "writes";
  shapeInfos: ShapeInfo[];
  /** The attribute arguments the source mentions (`uint3 thread_position_in_grid [[…]]`). */
  attributes: string[];
}

function parseMathMode(value: unknown): MathMode {
  if (value === "safe" || value === "relaxed" || value === "fast") return value;
  throw new Error(`${TAG} Expected math_mode to be 'safe', 'relaxed', or 'fast'.`);
}

function mathModeOf(o: MetalKernelOptions): MathMode {
  let mode: MathMode | undefined = o.mathMode === undefined ? undefined : parseMathMode(o.mathMode);
  const co = o.compileOptions;
  if (co !== undefined && co !== null) {
    if (typeof co !== "object" || Array.isArray(co)) throw new TypeError(`${TAG} Expected \`compile_options\` to be a dict.`);
    for (const [key, value] of Object.entries(co)) {
      if (key !== "mathMode" && key !== "math_mode") throw new Error(`${TAG} Unknown compile option \`${key}\`.`);
      const m = parseMathMode(value);
      if (mode !== undefined && mode !== m) throw new Error(`${TAG} mathMode '${mode}' and compileOptions math mode '${m}' disagree.`);
      mode = m;
    }
  }
  return mode ?? "safe";
}

function checkNames(names: unknown, what: string): string[] {
  if (!Array.isArray(names)) throw new TypeError(`${TAG} ${what} must be a list of strings, got ${describe(names)}.`);
  return names.map((n: unknown) => {
    if (typeof n !== "string" || !IDENTIFIER.test(n)) {
      throw new Error(`${TAG} ${what} entries must be valid identifiers (they become parameter names), got ${describe(n)}.`);
    }
    return n;
  });
}

function checkTriple(v: unknown, what: string, min: number): [number, number, number] {
  if (!Array.isArray(v) || v.length !== 3 || !v.every((d) => Number.isInteger(d) && d >= min && d < 2 ** 32)) {
    throw new Error(`${TAG} ${what} must be three integers ≥ ${min} (threads in x, y, z), got ${describe(v)}.`);
  }
  return [v[0], v[1], v[2]];
}

function checkSize(actual: number, expected: number, name: string): void {
  if (actual !== expected) throw new Error(`${TAG} Expected \`${name}\` to have size ${expected} but got size ${actual}.`);
}

/** Resolves the launch stream: a GPU stream, as MLX (which defaults to the GPU, not the default device). */
function kernelStream(s: StreamOrDevice | null | undefined): Stream {
  if (s === undefined || s === null) {
    const current = resolveStream();
    return current.device.type === "gpu" ? current : defaultStream(gpu);
  }
  const stream = resolveStream(s);
  if (stream.device.type !== "gpu") {
    throw new Error(`${TAG} Only supports the GPU: a Metal kernel cannot run on the ${stream.device.type} device (on Linux mg.gpu is the MSL simulator).`);
  }
  return stream;
}

const PREAMBLE_FILE = "custom_kernel.h";

/**
 * Builds a custom Metal kernel from the body of its function, as mx.fast.metal_kernel. Build it
 * once (at module scope) and call it many times: each distinct generated source compiles once.
 * See the guide §7–§9; differences from MLX are in docs/ARCHITECTURE.md ("fast").
 * @example
 * mg.fast.metalKernel({ name: "double", inputNames: ["a"], outputNames: ["out"], source: "uint i = thread_position_in_grid.x; out[i] = 2 * a[i];" })({ inputs: [mg.array([1, 2], mg.float32)], outputShapes: [[2]], outputDtypes: [mg.float32], grid: [2, 1, 1], threadgroup: [2, 1, 1], stream: mg.gpu })[0]
 */
export function metalKernel(options: MetalKernelOptions): MetalKernel {
  if (options === null || typeof options !== "object") throw new TypeError(`${TAG} expected an options object.`);
  const o = options;
  if (typeof o.name !== "string" || !/^[A-Za-z0-9_]+$/.test(o.name)) {
    throw new Error(`${TAG} name must be a non-empty string of letters, digits and underscores (it is part of the function name), got ${describe(o.name)}.`);
  }
  const inputNames = checkNames(o.inputNames, "inputNames");
  const outputNames = checkNames(o.outputNames, "outputNames");
  if (outputNames.length === 0) throw new Error(`${TAG} Must specify at least one output.`);
  const all = [...inputNames, ...outputNames];
  const dup = all.find((n, i) => all.indexOf(n) !== i);
  if (dup !== undefined) throw new Error(`${TAG} the name '${dup}' is used for two parameters.`);
  if (typeof o.source !== "string") throw new TypeError(`${TAG} source must be a string.`);
  const header = o.header ?? "";
  if (typeof header !== "string") throw new TypeError(`${TAG} header must be a string.`);
  const mathMode = mathModeOf(o);
  // Names mentioned in the header count too: a header macro may expand to them inside the body.
  const text = `${header}\n${o.source}`;
  const spec: KernelSpec = {
    name: o.name,
    inputNames,
    outputNames,
    source: o.source,
    header,
    ensureRowContiguous: o.ensureRowContiguous ?? true,
    atomicOutputs: o.atomicOutputs ?? false,
    mathMode,
    checked: process.env.MG_SIM_CHECK === "1" ? true : (o.checked ?? "writes"),
    shapeInfos: inputNames.map((n) => [text.includes(`${n}_shape`), text.includes(`${n}_strides`), text.includes(`${n}_ndim`)] as const),
    attributes: METAL_ATTRIBUTES.filter(([attr]) => text.includes(attr)).map(([attr, type]) => `${type} ${attr} [[${attr}]]`),
  };

  const variants = new Map<string, { sig: Signature; pipeline: Pipeline }>();

  // A library call: casts and copies of its inputs are freed after the kernel has read them.
  return libraryFunction((call: MetalKernelCall): MgArray[] => {
    if (call === null || typeof call !== "object") throw new TypeError(`${TAG} expected { inputs, outputShapes, outputDtypes, grid, threadgroup, … }.`);
    if (!Array.isArray(call.inputs)) throw new TypeError(`${TAG} inputs must be a list of arrays and scalars.`);
    if (!Array.isArray(call.outputShapes)) throw new TypeError(`${TAG} outputShapes must be a list of shapes.`);
    if (!Array.isArray(call.outputDtypes)) throw new TypeError(`${TAG} outputDtypes must be a list of dtypes.`);
    checkSize(call.inputs.length, inputNames.length, "inputs");
    checkSize(call.outputShapes.length, outputNames.length, "output_shapes");
    checkSize(call.outputDtypes.length, outputNames.length, "output_dtypes");
    const stream = kernelStream(call.stream);
    const grid = checkTriple(call.grid, "grid", 0);
    const threadgroup = checkTriple(call.threadgroup, "threadgroup", 1);

    const inputs = call.inputs.map((x, i) => {
      if (x instanceof MgArray) {
        x.checkUsable("metal_kernel");
        return x;
      }
      // A JS scalar is a 0-d array: a `constant T&` argument (MLX converts Python scalars the same way).
      if (isScalar(x)) return constantScalar(x, scalarDtype(x));
      throw new TypeError(`${TAG} input '${inputNames[i]}' must be an array or a scalar, got ${describe(x)}.`);
    });
    const outputShapes = call.outputShapes.map((s, i) => {
      if (!Array.isArray(s) || !s.every((d) => Number.isInteger(d) && d >= 0)) {
        throw new Error(`${TAG} output shape of '${outputNames[i]}' must be a list of non-negative integers, got ${describe(s)}.`);
      }
      return [...s] as number[];
    });
    const outputDtypes = call.outputDtypes.map((d, i) => {
      if (!(d instanceof Dtype)) throw new TypeError(`${TAG} output dtype of '${outputNames[i]}' must be a Dtype, got ${describe(d)}.`);
      typeString(d, `output '${outputNames[i]}'`);
      if (spec.atomicOutputs && !ATOMIC_DTYPES.includes(d)) {
        throw new Error(
          `${TAG} atomicOutputs: Metal has atomics for int32, uint32, float32, bool and uint64 only, ` +
            `but output '${outputNames[i]}' is ${d.name}.`,
        );
      }
      return d;
    });
    const template = parseTemplate(call.template);
    const initValue = call.initValue ?? null;
    if (initValue !== null && typeof initValue !== "number") throw new TypeError(`${TAG} initValue must be a number, got ${describe(initValue)}.`);

    // The generated source depends only on these: calls that agree reuse it and its pipeline.
    const variant = [
      template.map((t) => `${t.kind} ${t.name}=${t.text}`).join(","),
      inputs.map((a) => `${a.dtype.name}${a.ndim === 0 ? "s" : a.size < MAX_CONSTANT_ARRAY_SIZE ? "c" : ""}`).join(","),
      outputDtypes.map((d) => d.name).join(","),
    ].join("|");
    const cached = variants.get(variant);
    const sig = cached?.sig ?? writeSignature(spec, inputs, outputDtypes, template);
    // Printed before compiling, so that a kernel that fails to compile can be read too.
    if (call.verbose) {
      process.stdout.write(`Generated source code for \`${spec.name}\`:\n\`\`\`\n${sig.generated}\n\`\`\`\n`);
    }
    const pipeline = cached?.pipeline ?? compile(spec, sig);
    if (!cached) variants.set(variant, { sig, pipeline });
    const limit = pipeline.maxTotalThreadsPerThreadgroup;
    const total = threadgroup[0] * threadgroup[1] * threadgroup[2];
    if (total > limit) {
      throw new Error(`${TAG} Thread group size (${total}) is greater than the maximum allowed threads per threadgroup (${limit}) of kernel ${sig.kernelName}.`);
    }
    const perDim = runtime().device.maxThreadsPerThreadgroup;
    threadgroup.forEach((t, k) => {
      if (t > perDim[k]!) {
        throw new Error(`${TAG} threadgroup ${"xyz"[k]} size ${t} exceeds the device's maximum of ${perDim[k]} in that dimension.`);
      }
    });

    const params: CustomKernelParams = {
      name: spec.name,
      kernelName: sig.kernelName,
      pipeline,
      inputNames,
      outputNames,
      shapeInfos: spec.shapeInfos,
      outputShapes,
      outputDtypes,
      grid,
      threadgroup,
      ensureRowContiguous: spec.ensureRowContiguous,
      initValue,
      mathMode: spec.mathMode,
      checked: spec.checked,
    };
    return makeNode(CustomKernel, inputs, params, stream);
  });
}

/** Compiles (once per distinct source and options) the generated kernel behind the preamble. */
function compile(spec: KernelSpec, sig: Signature): Pipeline {
  const source = `${kernelSource(PREAMBLE_FILE)}\n\n// metal_kernel '${spec.name}'\n${sig.compiled}`;
  const key = `${sig.kernelName}|${spec.mathMode}|${spec.checked === "writes" ? "writes-checked" : spec.checked ? "checked" : "unchecked"}|${Bun.hash(source).toString(16)}`;
  try {
    return sourcePipeline(key, source, sig.kernelName, { mathMode: spec.mathMode, checked: spec.checked });
  } catch (e) {
    throw new Error(`${TAG} kernel '${spec.name}' (${sig.kernelName}) failed to compile: ${(e as Error).message}`);
  }
}

/** Compiler runs so far (metalKernel compiles once per distinct generated source). */
export { kernelCompileCount };
