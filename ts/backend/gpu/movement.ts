// Data movement and creation on the GPU: Pad, Concatenate (Sources/Kernels/slicing.metal), the
// copies of views whose layout cannot express them (Reshape, View), Contiguous (the input where
// it is dense, else a copy), and Arange (arange.metal).
import type { MgArray, Node } from "../../core/array.ts";
import { bool_, type Dtype, int64 } from "../../core/dtype.ts";
import { isDense, setView } from "../../core/layout.ts";
import { Arange, type ArangeParams } from "../../core/primitives/creation.ts";
import { Concatenate, type ConcatenateParams } from "../../core/primitives/join.ts";
import { Contiguous, type ContiguousParams, lowPads, Pad, type PadParams, View } from "../../core/primitives/movement.ts";
import { Reshape } from "../../core/primitives/views.ts";
import { rowMajorStrides } from "../../core/shape.ts";
import { bitsTag, bitsType, copyKernel, copyStridedKernel, encodeCopy, encodeCopyStrided } from "./copy.ts";
import { dtypeTag, GPU_DTYPES, mslType } from "./dtypes.ts";
import { type GpuEncoder, float32Bytes, idxTag, idxType, int32Bytes, int64Bytes, needsLargeIndex } from "./encoder.ts";
import { type KernelInstance, kernelPipeline } from "./kernels.ts";
import { launch } from "./launch.ts";
import { registerGpu } from "./registry.ts";

// ---------------------------------------------------------------------------------------------
// Pad

function padKernel(d: Dtype, large: boolean): KernelInstance {
  return { file: "slicing.metal", name: `mg_pad_${bitsTag(d)}_${idxTag(large)}`, instantiation: `pad<${bitsType(d)}, ${idxType(large)}>` };
}

function encodePad(enc: GpuEncoder, node: Node<PadParams>): void {
  const [a, value] = node.inputs as [MgArray, MgArray];
  const out = node.outputs[0]!;
  const low = lowPads(a.ndim, node.params);
  const large = needsLargeIndex(out.size, [a]);
  // An empty interior binds the value in its place (nothing of it is read).
  const s = a.size > 0 ? enc.input(a, 0) : { ...enc.input(value, 0), strides: a.shape.map(() => 0) };
  const v = enc.input(value, 1);
  const o = enc.output(out, 2);
  launch(
    enc,
    kernelPipeline(padKernel(a.dtype, large)),
    out.size,
    [s.binding, v.binding, o.binding],
    [
      int32Bytes(3, out.shape),
      int32Bytes(4, a.shape),
      int64Bytes(5, s.strides),
      int32Bytes(6, low),
      int32Bytes(7, [a.ndim]),
      int64Bytes(8, [s.base, v.base, out.size]),
    ],
    { primitive: "Pad", inputs: node.inputs, outputs: [out], layout: `${a.layout?.rowContiguous ? "contiguous" : "strided"}${large ? ", large-index" : ""}` },
    [2],
  );
}

registerGpu(Pad, {
  kind: "kernel",
  kernels: (node) => [padKernel(node.inputs[0]!.dtype, needsLargeIndex(node.outputs[0]!.size, [node.inputs[0]!]))],
  encode: encodePad,
});

// ---------------------------------------------------------------------------------------------
// Concatenate: one strided copy per input into its region of the output (MLX does the same)

function encodeConcatenate(enc: GpuEncoder, node: Node<ConcatenateParams>): void {
  const { axis } = node.params;
  const out = node.outputs[0]!;
  const o = enc.output(out, 1);
  const strides = rowMajorStrides(out.shape);
  // A region is one contiguous run when every axis before `axis` has size 1.
  const contiguous = out.shape.slice(0, axis).every((d) => d === 1);
  let along = 0;
  for (const x of node.inputs) {
    if (x.size > 0) {
      encodeCopyStrided(enc, x, o.binding, along * strides[axis]!, strides, contiguous, {
        primitive: "Concatenate",
        outputs: [out],
        layout: `${x.layout!.rowContiguous ? "contiguous" : "strided"} input into ${contiguous ? "a contiguous" : "a strided"} region`,
      });
    }
    along += x.shape[axis]!;
  }
}

registerGpu(Concatenate, {
  kind: "kernel",
  kernels: (node) => {
    const large = needsLargeIndex(node.outputs[0]!.size, node.inputs);
    return [copyStridedKernel(node.outputs[0]!.dtype, large)];
  },
  encode: encodeConcatenate,
});

// ---------------------------------------------------------------------------------------------
// Reshape and View: the copies their layout rules ask for when the input's layout cannot be viewed

// A reshape of a view whose strides cannot be regrouped: its elements, row-contiguously.
registerGpu(Reshape, {
  kind: "kernel",
  kernels: (node) => copyKernel(node.inputs[0]!),
  encode(enc, node) {
    const a = node.inputs[0]!;
    enc.note(`copy: reshape of a non-contiguous ${a.describe()} needs row-contiguous data`);
    encodeCopy(enc, a, node.outputs[0]!, "Reshape");
  },
});

// The same bytes as another dtype, from a strided or misaligned input: its bytes row-contiguously.
registerGpu(View, {
  kind: "kernel",
  kernels: (node) => {
    const x = node.inputs[0]!;
    return [copyStridedKernel(x.dtype, needsLargeIndex(x.size, [x]))];
  },
  encode(enc, node) {
    const x = node.inputs[0]!;
    const out = node.outputs[0]!;
    const l = x.layout!;
    enc.note(`copy: viewing a ${l.rowContiguous ? "misaligned" : "strided"} ${x.dtype.name} array as ${out.dtype.name} needs its bytes row-contiguous`);
    const o = enc.output(out, 1);
    encodeCopyStrided(enc, x, o.binding, 0, rowMajorStrides(x.shape), true, { primitive: "View", outputs: [out], layout: "row-contiguous copy" }, true);
  },
});

// ---------------------------------------------------------------------------------------------
// Contiguous: the input itself when its layout is dense, else a row-major copy (what was asked)

function encodeContiguous(enc: GpuEncoder, node: Node<ContiguousParams>): void {
  const a = node.inputs[0]!;
  const l = a.layout!;
  const out = node.outputs[0]!;
  if (isDense(l, node.params.allowColMajor)) {
    setView(out, a, l.offset, l.strides);
    return;
  }
  const o = enc.output(out, 1);
  encodeCopyStrided(enc, a, o.binding, 0, rowMajorStrides(a.shape), true, { primitive: "Contiguous", outputs: [out], layout: "row-contiguous copy" }, true);
}

registerGpu(Contiguous, {
  kind: "kernel",
  kernels: (node) => {
    const a = node.inputs[0]!;
    // A result computed in this eval is row-contiguous: only strided inputs need the copy.
    return !a.layout || a.layout.rowContiguous ? [] : [copyStridedKernel(a.dtype, needsLargeIndex(a.size, [a]))];
  },
  encode: encodeContiguous,
});

// ---------------------------------------------------------------------------------------------
// Arange

function arangeKernel(d: Dtype, speculative = false): KernelInstance {
  return { file: "arange.metal", name: `mg_arange_${dtypeTag(d)}`, instantiation: `arange<${mslType(d, "arange")}>`, ...(speculative ? { speculative } : {}) };
}

// arange of every other dtype compiles in the same run (speculative siblings, as the elementwise
// families): a test's aranges sweep dtypes, one compiler run each otherwise.
const arangeKernels = (d: Dtype): KernelInstance[] => [arangeKernel(d), ...GPU_DTYPES.filter((x) => x !== d && x !== bool_).map((x) => arangeKernel(x, true))];

/** float64's exact range for integers: start + i·step is exact there on the CPU too. */
const EXACT_LIMIT = 2 ** 53;

function encodeArange(enc: GpuEncoder, node: Node<ArangeParams>): void {
  const p = node.params;
  const out = node.outputs[0]!;
  if (p.dtype === bool_) throw new TypeError("[arange] bool not supported for arange.");
  const exact = Number.isInteger(p.start) && Number.isInteger(p.step) && Math.abs(p.start) + p.size * Math.abs(p.step) < EXACT_LIMIT;
  const split = (v: number) => {
    const hi = Math.fround(v);
    return [hi, Math.fround(v - hi)];
  };
  const o = enc.output(out, 0);
  launch(
    enc,
    kernelPipeline(arangeKernel(p.dtype), arangeKernels(p.dtype).slice(1)),
    out.size,
    [o.binding],
    [int64Bytes(1, exact ? [p.start, p.step, 1] : [0, 0, 0]), float32Bytes(2, [...split(p.start), ...split(p.step)])],
    {
      primitive: "Arange",
      inputs: [],
      outputs: [out],
      layout: exact ? "integral start and step" : "float-float",
      precision: exact ? "exact int64, rounded once to the dtype" : "float-float (~48-bit), rounded once to the dtype",
    },
    [0],
  );
}

registerGpu(Arange, {
  kind: "kernel",
  kernels: (node) => (node.params.dtype === bool_ ? [] : arangeKernels(node.params.dtype)),
  encode: encodeArange,
});

