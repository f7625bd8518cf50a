// The native kernels of each primitive family, registered against the records. Every kernel tries
// Sources/MGCpu first and runs the TypeScript kernel when the native side declines the case.
import type { MgArray } from "../../../core/array.ts";
import { bfloat16, complex64, type Dtype, float16, float64 } from "../../../core/dtype.ts";
import { isDense, setView } from "../../../core/layout.ts";
import type { Primitive } from "../../../core/primitive.ts";
import { ArgReduce } from "../../../core/primitives/argreduce.ts";
import { AddMM, Matmul } from "../../../core/primitives/matmul.ts";
import { Contiguous } from "../../../core/primitives/movement.ts";
import { Reduce } from "../../../core/primitives/reduce.ts";
import { Scan } from "../../../core/primitives/scan.ts";
import { LogSumExp, Softmax } from "../../../core/primitives/softmax.ts";
import { Reshape } from "../../../core/primitives/views.ts";
import { noKernel } from "../../../core/registry.ts";
import { Precision, tracing } from "../../../core/trace.ts";
import { type CpuKernel, cpuKernels } from "../registry.ts";
import { lastError, lastNativeRun, nativeInfo } from "./ffi.ts";
import {
  runArange, runArgReduce, runConcatenate, runCopy, runElementwise, runGather, runGatherAxis, runMatmul, runPad,
  runRandomBits, runReduce, runScan, runSoftmax,
} from "./kernels.ts";
import { Gather, GatherAxis } from "../../../core/primitives/indexing.ts";
import { RandomBits } from "../../../core/primitives/random.ts";
import { Arange } from "../../../core/primitives/creation.ts";
import { Concatenate } from "../../../core/primitives/join.ts";
import { lowPads, Pad } from "../../../core/primitives/movement.ts";
import { DivModPrimitive, elementwiseRecords } from "./opcodes.ts";
import { FFT } from "../../../core/primitives/fft.ts";
import { runFft } from "./fft.ts";
import { Convolution } from "../../../core/primitives/convolution.ts";
import { runConvolution } from "./convolution.ts";
import { Dequantize, GatherQMM, QuantizedMatmul, Quantize } from "../../../core/primitives/quantized.ts";
import { qmmKernel, runDequantize, runGatherQmm, runQuantize, runQuantizedMatmul } from "./quantized.ts";
import { ArgPartition, ArgSort, Partition, Sort } from "../../../core/primitives/sort.ts";
import { DynamicSlice, DynamicSliceUpdate, Scatter, ScatterAxis, SliceUpdate } from "../../../core/primitives/indexing.ts";
import { runDynamicSlice, runDynamicSliceUpdate, runScatter, runScatterAxis, runSliceUpdate, runSort } from "./indexing.ts";
import {
  CrossEntropy, CrossEntropyVJP, LayerNorm, LayerNormVJP, RMSNorm, RMSNormVJP, RoPE, ScaledDotProductAttention, ScaledDotProductAttentionVJP,
} from "../../../fast/primitives.ts";
import { runCrossEntropy, runNorm, runRope, runSdpa } from "./fast.ts";
import { Cholesky, Eigh, Inverse, LUF, QRF, SVD } from "../../../core/primitives/linalg.ts";
import { LinalgOp, runLinalg } from "./linalg.ts";
import { nativeEnabled, noteKernel, registerNative } from "./registry.ts";

export function inexact(d: Dtype): boolean {
  return d.kind === "f" || d.kind === "V" || d.kind === "c";
}

/** The arithmetic precision of a native kernel computing `d` (16-bit floats compute in float32). */
export function precisionOf(d: Dtype, accumulate: string | null): string {
  if (!inexact(d)) return Precision.exact;
  if (accumulate) return Precision.accumulate(accumulate, d.name);
  if (d === float16 || d === bfloat16) return `IEEE float32, rounded to ${d.name}`;
  if (d === complex64) return "float64, rounded to complex64";
  return Precision.ieee(d.name);
}

type Describe<P> = (inputs: readonly MgArray[], outputs: readonly MgArray[], params: P) => { kernel: string; precision: string; notes?: string[] };

/** A kernel that runs `native` and, when it declines, the record's TypeScript kernel. */
function nativeOr<P>(record: Primitive<P>, native: (i: readonly MgArray[], o: readonly MgArray[], p: P) => boolean, describe: Describe<P>): CpuKernel<P> {
  return (inputs, outputs, params) => {
    if (nativeEnabled() && native(inputs, outputs, params)) {
      if (tracing()) {
        const d = describe(inputs, outputs, params);
        noteKernel({ kernel: `cpu-native:${d.kernel}`, precision: d.precision, notes: d.notes ?? [] });
      }
      return;
    }
    const why = nativeEnabled() ? lastError() : "";
    const reference = cpuKernels.lookup(record as Primitive);
    if (!reference) throw noKernel({ primitive: record, params } as never, "cpu");
    reference(inputs, outputs, params);
    if (tracing()) {
      const inexactOut = outputs.some((o) => inexact(o.dtype));
      noteKernel({
        kernel: `cpu:${record.name}`,
        precision: inexactOut ? Precision.cpuReference : Precision.exact,
        notes: nativeEnabled()
          ? [`fallback: no native kernel for ${record.name} on ${inputs.map((i) => i.dtype.name).join(", ")}${why ? ` (${why})` : ""}; the TypeScript reference ran`]
          : [],
      });
    }
  };
}

// ---- elementwise ------------------------------------------------------------------------------------

for (const record of [...elementwiseRecords(), DivModPrimitive]) {
  registerNative(
    record,
    nativeOr(record, (i, o) => runElementwise(record, i, o), (_i, o) => ({ kernel: record.name, precision: precisionOf(o[0]!.dtype, null) })),
  );
}

// ---- reductions, softmax, scans -----------------------------------------------------------------------

const accumulated = (d: Dtype) => precisionOf(d, inexact(d) && d !== complex64 ? "float64" : null);

registerNative(Reduce, nativeOr(Reduce, runReduce, ([a]) => ({ kernel: "Reduce", precision: accumulated(a!.dtype) })));
registerNative(ArgReduce, nativeOr(ArgReduce, runArgReduce, () => ({ kernel: "ArgReduce", precision: Precision.exact })));
registerNative(Scan, nativeOr(Scan, runScan, ([a]) => ({ kernel: "Scan", precision: accumulated(a!.dtype) })));
registerNative(
  Softmax,
  nativeOr(Softmax, (i, o) => runSoftmax(i, o, false), ([a]) => ({ kernel: "Softmax", precision: precisionOf(a!.dtype, a!.dtype === float64 ? null : "float32") })),
);
registerNative(
  LogSumExp,
  nativeOr(LogSumExp, (i, o) => runSoftmax(i, o, true), ([a]) => ({ kernel: "LogSumExp", precision: precisionOf(a!.dtype, a!.dtype === float64 ? null : "float32") })),
);

// ---- matrix products -------------------------------------------------------------------------------------

function gemmKernel(d: Dtype): string {
  const info = nativeInfo();
  if (lastNativeRun().gemm === 1) return `(gemm: blas ${info.blas})`;
  return `(gemm: metalgrad ${info.isa} ${d === float64 ? "f64" : "f32"})`;
}
const gemmPrecision = (d: Dtype) => precisionOf(d, d === float64 ? null : "float32");

registerNative(Matmul, nativeOr(Matmul, (i, o) => runMatmul(i, o, null), ([a]) => ({ kernel: `Matmul${gemmKernel(a!.dtype)}`, precision: gemmPrecision(a!.dtype) })));
registerNative(AddMM, nativeOr(AddMM, (i, o, p) => runMatmul(i, o, p), ([a]) => ({ kernel: `AddMM${gemmKernel(a!.dtype)}`, precision: gemmPrecision(a!.dtype) })));

// ---- copies ------------------------------------------------------------------------------------------------

const copyNote = (p: string, a: MgArray) => [`copy: ${p} of ${a.describe()} cannot be a view of its layout; its elements are copied row-contiguously`];

// Reshape's kernel runs only when its layout rule cannot express the view: a row-major copy.
registerNative(Reshape, nativeOr(Reshape, ([a], [o]) => runCopy(a!, o!), ([a]) => ({ kernel: "Reshape", precision: Precision.none, notes: copyNote("Reshape", a!) })));

registerNative(Contiguous, (inputs, outputs, p) => {
  const a = inputs[0]!;
  const l = a.layout!;
  if (isDense(l, p.allowColMajor)) {
    setView(outputs[0]!, a, l.offset, l.strides);
    if (tracing()) noteKernel({ kernel: "cpu:Contiguous", precision: Precision.none, notes: [] });
    return;
  }
  nativeOr(Contiguous, ([x], [o]) => runCopy(x!, o!), ([x]) => ({ kernel: "Contiguous", precision: Precision.none, notes: copyNote("Contiguous", x!) }))(inputs, outputs, p);
});

// ---- joins, pads, ranges -------------------------------------------------------------------------------------

registerNative(Concatenate, nativeOr(Concatenate, (i, o, p) => runConcatenate(i, o, p.axis), () => ({ kernel: "Concatenate", precision: Precision.none })));
registerNative(Pad, nativeOr(Pad, (i, o, p) => runPad(i, o, lowPads(i[0]!.ndim, p)), () => ({ kernel: "Pad", precision: Precision.none })));
registerNative(Arange, nativeOr(Arange, (_i, o, p) => runArange(o, p.start, p.step, p.size), ([], [o]) => ({ kernel: "Arange", precision: precisionOf(o!.dtype, "float64") })));
registerNative(RandomBits, nativeOr(RandomBits, (i, o, p) => runRandomBits(i, o, p.width), () => ({ kernel: "RandomBits", precision: Precision.exact })));
registerNative(Gather, nativeOr(Gather, (i, o, p) => runGather(i, o, p.axes, p.sliceSizes), () => ({ kernel: "Gather", precision: Precision.none })));
registerNative(GatherAxis, nativeOr(GatherAxis, (i, o, p) => runGatherAxis(i, o, p.axis), () => ({ kernel: "GatherAxis", precision: Precision.none })));

// ---- transforms ------------------------------------------------------------------------------------------------

registerNative(FFT, nativeOr(FFT, runFft, () => ({ kernel: "FFT", precision: "float64, rounded to complex64" })));

// ---- convolution ------------------------------------------------------------------------------------------------

registerNative(
  Convolution,
  nativeOr(Convolution, runConvolution, ([x, w], _o, p) => ({
    kernel: p.groups > 1 && w!.shape[0] === p.groups && w!.shape[w!.ndim - 1] === 1 ? "Convolution(depthwise)" : "Convolution(implicit gemm)",
    precision: precisionOf(x!.dtype, x!.dtype === float64 ? null : "float32"),
  })),
);

// ---- quantized products ---------------------------------------------------------------------------------------

const qmmPrecision = (d: Dtype) => precisionOf(d, d === float64 ? null : "float32");
registerNative(
  QuantizedMatmul,
  nativeOr(QuantizedMatmul, runQuantizedMatmul, ([x], _o, p) => ({ kernel: `QuantizedMatmul(${qmmKernel(x!, p)})`, precision: qmmPrecision(x!.dtype) })),
);
registerNative(GatherQMM, nativeOr(GatherQMM, runGatherQmm, ([x], _o, p) => ({ kernel: `GatherQMM(${qmmKernel(x!, p)})`, precision: qmmPrecision(x!.dtype) })));
registerNative(Quantize, nativeOr(Quantize, runQuantize, ([w]) => ({ kernel: "Quantize", precision: `MLX's float32 arithmetic, rounded to ${w!.dtype.name}` })));
registerNative(Dequantize, nativeOr(Dequantize, runDequantize, (_i, [o]) => ({ kernel: "Dequantize", precision: precisionOf(o!.dtype, null) })));

// ---- sorting and updates ------------------------------------------------------------------------------------------

const exactly = (kernel: string) => () => ({ kernel, precision: Precision.exact });
registerNative(Sort, nativeOr(Sort, (i, o, p) => runSort(i, o, p.axis, false), exactly("Sort")));
registerNative(ArgSort, nativeOr(ArgSort, (i, o, p) => runSort(i, o, p.axis, true), exactly("ArgSort")));
// a partition is the fully sorted lane, as the reference's (one valid arrangement, deterministic)
registerNative(Partition, nativeOr(Partition, (i, o, p) => runSort(i, o, p.axis, false), exactly("Partition(sort)")));
registerNative(ArgPartition, nativeOr(ArgPartition, (i, o, p) => runSort(i, o, p.axis, true), exactly("ArgPartition(sort)")));
const updatePrecision = (d: Dtype, mode: string) => (mode === "none" ? Precision.none : precisionOf(d, null));
registerNative(Scatter, nativeOr(Scatter, (i, o, p) => runScatter(i, o, p.axes, p.mode), ([a], _o, p) => ({ kernel: "Scatter", precision: updatePrecision(a!.dtype, p.mode) })));
registerNative(ScatterAxis, nativeOr(ScatterAxis, (i, o, p) => runScatterAxis(i, o, p.axis, p.mode), ([a], _o, p) => ({ kernel: "ScatterAxis", precision: updatePrecision(a!.dtype, p.mode) })));
registerNative(SliceUpdate, nativeOr(SliceUpdate, (i, o, p) => runSliceUpdate(i, o, p.start, p.strides, p.mode), ([a], _o, p) => ({ kernel: "SliceUpdate", precision: updatePrecision(a!.dtype, p.mode) })));
registerNative(DynamicSliceUpdate, nativeOr(DynamicSliceUpdate, (i, o, p) => runDynamicSliceUpdate(i, o, p.axes), () => ({ kernel: "DynamicSliceUpdate", precision: Precision.none })));
registerNative(DynamicSlice, nativeOr(DynamicSlice, (i, o, p) => runDynamicSlice(i, o, p.axes), () => ({ kernel: "DynamicSlice", precision: Precision.none })));

// ---- mg.fast ---------------------------------------------------------------------------------------------------------

const reference64 = (kernel: string) => ([x]: readonly MgArray[]) => ({ kernel, precision: precisionOf(x!.dtype, "float64") });
registerNative(RMSNorm, nativeOr(RMSNorm, (i, o, p) => runNorm(i, o, p, false, false), reference64("RMSNorm")));
registerNative(RMSNormVJP, nativeOr(RMSNormVJP, (i, o, p) => runNorm(i, o, p, false, true), reference64("RMSNormVJP")));
registerNative(LayerNorm, nativeOr(LayerNorm, (i, o, p) => runNorm(i, o, p, true, false), reference64("LayerNorm")));
registerNative(LayerNormVJP, nativeOr(LayerNormVJP, (i, o, p) => runNorm(i, o, p, true, true), reference64("LayerNormVJP")));
registerNative(RoPE, nativeOr(RoPE, runRope, reference64("RoPE")));
// Attention runs in float32 (MLX's precision: float32 products and softmax) unless an operand is float64.
const attention = (kernel: string) => (inputs: readonly MgArray[], outputs: readonly MgArray[]) => {
  const f64 = inputs.slice(0, 3).some((a) => a.dtype === float64);
  return f64 ? { kernel, precision: precisionOf(float64, "float64") } : { kernel, precision: `${precisionOf(outputs[0]!.dtype, "float32")} (blocked products, softmax in float32)` };
};
registerNative(ScaledDotProductAttention, nativeOr(ScaledDotProductAttention, (i, o, p) => runSdpa(i, o, p, false), attention("ScaledDotProductAttention")));
registerNative(ScaledDotProductAttentionVJP, nativeOr(ScaledDotProductAttentionVJP, (i, o, p) => runSdpa(i, o, p, true), attention("ScaledDotProductAttentionVJP")));
// Cross entropy: float32 max, exp and sum (MLX's) unless the logits are float64.
const crossEntropy = (kernel: string) => ([x]: readonly MgArray[]) =>
  x!.dtype === float64 ? { kernel, precision: precisionOf(float64, "float64") } : { kernel, precision: precisionOf(x!.dtype, "float32") };
registerNative(CrossEntropy, nativeOr(CrossEntropy, (i, o) => runCrossEntropy(i, o, false), crossEntropy("CrossEntropy")));
registerNative(CrossEntropyVJP, nativeOr(CrossEntropyVJP, (i, o) => runCrossEntropy(i, o, true), crossEntropy("CrossEntropyVJP")));

// ---- linalg --------------------------------------------------------------------------------------------------------

const factorPrecision = ([a]: readonly MgArray[]) => ({ precision: precisionOf(a!.dtype, "float64") });
registerNative(LUF, nativeOr(LUF, (i, o) => runLinalg(i, o, LinalgOp.lu, false), (i) => ({ kernel: "LUF", ...factorPrecision(i) })));
registerNative(QRF, nativeOr(QRF, (i, o) => runLinalg(i, o, LinalgOp.qr, false), (i) => ({ kernel: "QRF", ...factorPrecision(i) })));
registerNative(
  Inverse,
  nativeOr(Inverse, (i, o, p) => runLinalg(i, o, p.tri ? LinalgOp.triInverse : LinalgOp.inverse, p.upper), (i, _o, p) => ({ kernel: p.tri ? "Inverse(triangular)" : "Inverse", ...factorPrecision(i) })),
);
registerNative(Cholesky, nativeOr(Cholesky, (i, o, p) => runLinalg(i, o, LinalgOp.cholesky, p.upper), (i) => ({ kernel: "Cholesky", ...factorPrecision(i) })));
registerNative(SVD, nativeOr(SVD, (i, o, p) => runLinalg(i, o, LinalgOp.svd, false, p.computeUv), (i) => ({ kernel: "SVD(one-sided jacobi)", ...factorPrecision(i) })));
registerNative(
  Eigh,
  nativeOr(Eigh, (i, o, p) => runLinalg(i, o, LinalgOp.eigh, p.uplo === "U", p.computeEigenvectors), (i) => ({ kernel: "Eigh(jacobi)", ...factorPrecision(i) })),
);
