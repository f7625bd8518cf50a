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
