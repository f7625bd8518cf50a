// metalgrad: an MLX-class array and autograd framework for Bun.
//   import * as mg from "metalgrad";
import "./memory/allocator.ts";
// Registration side effects: the derivative rules of every record, then each backend's kernels.
import "./core/rules/index.ts";
import "./backend/cpu/index.ts";
// The CPU device runs native kernels (Sources/MGCpu), falling back per primitive to the TypeScript
// ones above (MG_CPU_NATIVE=0: TypeScript only).
import "./backend/cpu/native/index.ts";
import "./backend/gpu/index.ts";
import "./core/methods.ts";
import "./core/methods-indexing.ts";
import "./core/methods-linalg.ts";
import { stack as stackHook } from "./core/ops/join.ts";
import { astype as astypeHook } from "./core/ops/elementwise.ts";
import { setConvertHooks } from "./core/ops/convert.ts";
import { evalArrays, evalAsync } from "./core/graph.ts";
import { MgArray } from "./core/array.ts";
import { RUNTIME_HINT, runtimeLoadError, tryRuntime } from "./backend/runtime.ts";
import {
  chooseDefaultDevice, defaultDevice as currentDefaultDevice, setDefaultDevice as setDefaultDeviceInternal, setDeviceCount,
} from "./core/device.ts";
import { collectTrace, type TraceRecord } from "./core/trace.ts";
import { trace as diagonalTrace } from "./core/ops/movement.ts";
import { libraryCall } from "./core/ownership.ts";
import type { Dtype } from "./core/dtype.ts";
import type { ArrayInput, StreamOptions } from "./core/ops/convert.ts";
import { bfloat16Native, metalOsVersion, naxAvailable, simdgroupMatrix, tf32Default } from "./core/hardware.ts";
import * as precisionApi from "./core/precision.ts";
import { getPrecision as currentPrecision } from "./core/precision.ts";
import { publicFunction, publicFunctions } from "./core/options.ts";
import * as dtypeApi from "./core/dtype.ts";
import * as deviceApi from "./core/device.ts";
import * as compileApi from "./core/compile.ts";
import * as memoryApi from "./memory/index.ts";
import { pressureCollectionCount as pressureCollectionCountImpl } from "./memory/allocator.ts";
import { setFusion as setFusionImpl } from "./backend/gpu/index.ts";
import { setKernelCacheLimits as setKernelCacheLimitsImpl } from "./backend/gpu/kernels.ts";

// Functions that build no arrays or run the user's code in the user's name: not library calls.
const NO_ARRAYS = { library: false } as const;

setConvertHooks((arrays) => stackHook(arrays), (a, d) => astypeHook(a, d));
// With a native runtime the GPU backend has its device: Metal, or the simulator where there is no
// Metal. Without one (none installed for this platform, none built) importing still works: the CPU
// device runs on JS-owned memory, and asking for the GPU says why it is missing.
const rt = tryRuntime();
setDeviceCount("gpu", rt ? 1 : 0, rt ? undefined : `no native runtime (${runtimeLoadError()})`);
setDefaultDeviceInternal(chooseDefaultDevice(rt !== null && !rt.device.isSimulator));

export { MgArray } from "./core/array.ts";
// dtype.ts also holds conversion helpers for the backends (bfloat16 bits, weak-scalar rules): only
// the dtype API is public. Every public function goes through the options helper (ts/core/options.ts).
export {
  ALL_DTYPES, bfloat16, bool_, complex64, complexfloating, Dtype, DtypeCategory, Finfo, float16,
  float32, float64, floating, generic, Iinfo, inexact, int16, int32, int64, int8, integer,
  number, signedinteger, uint16, uint32, uint64, uint8, unsignedinteger,
} from "./core/dtype.ts";
export const {
  canCast, finfo, iinfo, isComplex, isdtype, isFloating, isInexact, isInteger, issubdtype, promoteTypes, resultType,
} = publicFunctions("", dtypeApi, NO_ARRAYS);
export type { DtypeKind, DtypeKindName, DtypeName, Scalar } from "./core/dtype.ts";
export type { Complex, ElementValue } from "./core/elements.ts";
export type { Nested } from "./core/read.ts";
export { cpu, gpu, Device, Stream } from "./core/device.ts";
export const {
  defaultDevice, setDefaultDevice, defaultStream, newStream, setDefaultStream, stream, deviceCount, isAvailable,
} = publicFunctions("", deviceApi, NO_ARRAYS);
export type { DeviceType, StreamOrDevice } from "./core/device.ts";
export type { ArrayInput, StreamOptions } from "./core/ops/convert.ts";
// Every op as a library call: the arrays it creates and does not return are freed after their last use.
export * from "./core/ops/index.ts";
export * from "./core/ops/constants.ts";
export * as random from "./random/index.ts";
export * as linalg from "./linalg/index.ts";
export * as fft from "./fft/index.ts";
export * from "./autograd/index.ts";
export * as testing from "./testing/index.ts";
export * as fast from "./fast/index.ts";
export const { disableCompile, enableCompile } = publicFunctions("", compileApi, NO_ARRAYS);
export const compile = publicFunction("compile", compileApi.compile, NO_ARRAYS);
export const { getPrecision, setPrecision, withPrecision } = publicFunctions("", precisionApi, NO_ARRAYS);
export type { PrecisionPolicy } from "./core/precision.ts";
export { load, LoadError, save, savez, savezCompressed, saveGguf, saveSafetensors } from "./io/index.ts";
export type { FileArg, GgufMetadataInput, GgufMetadataValue, LoadFormat, LoadOptions, LoadResult, Metadata } from "./io/index.ts";
export type { CompileOptions } from "./core/compile.ts";

/**
 * Two things share MLX-derived names here. `mg.trace(fn)` returns the kernel trace of everything
 * `fn` evaluates (its returned arrays are evaluated too). `mg.trace(a, offset, axis1, axis2, dtype)`
 * is mx.trace, the sum along a diagonal. A function argument selects the first.
 * @example
 * mg.trace(() => mg.exp(mg.array([1, 2], mg.float32))).map((r) => r.primitives)
 */
function traceImpl(fn: () => unknown): TraceRecord[];
function traceImpl(a: ArrayInput, offset?: number, axis1?: number, axis2?: number, dtype?: Dtype | null, opts?: StreamOptions): MgArray;
function traceImpl(
  a: ArrayInput | (() => unknown), offset?: number, axis1?: number, axis2?: number, dtype?: Dtype | null, opts?: StreamOptions,
): TraceRecord[] | MgArray {
  if (typeof a === "function") return collectTrace(a, (value) => evaluate(value));
  // The diagonal sum builds arrays: a library call (the user's fn above runs in the user's name).
  return libraryCall(() => diagonalTrace(a, offset, axis1, axis2, dtype, opts));
}
export const trace = publicFunction("trace", traceImpl, NO_ARRAYS);
export type { TraceRecord } from "./core/trace.ts";
export const setFusion = publicFunction("setFusion", setFusionImpl, NO_ARRAYS);
export const setKernelCacheLimits = publicFunction("setKernelCacheLimits", setKernelCacheLimitsImpl, NO_ARRAYS);
export type { KernelCacheLimits } from "./backend/runtime.ts";
import { synchronize as synchronizeGpu } from "./backend/gpu/index.ts";
import { resolveStream, type StreamOrDevice } from "./core/device.ts";

/**
 * Waits for all work submitted so far — on `stream` (or a device's default stream), or everywhere
 *  — as mx.synchronize. CPU work is synchronous, so only GPU batches are waited for.
 * @example
 * mg.synchronize()
 */
export const synchronize = publicFunction("synchronize", function synchronize(stream?: StreamOrDevice | null): void {
  synchronizeGpu(stream === undefined || stream === null ? undefined : resolveStream(stream));
}, NO_ARRAYS);

/** The arrays inside `args`: nested lists and objects, each object visited once (objects that
 *  refer back to a parent, as model classes do, must not recurse forever). */
function arraysIn(args: unknown[]): MgArray[] {
  const out: MgArray[] = [];
  const seen = new Set<object>();
  const walk = (x: unknown) => {
    if (x instanceof MgArray) out.push(x);
    else if (x && typeof x === "object" && !seen.has(x)) {
      seen.add(x);
      (Array.isArray(x) ? x : Object.values(x)).forEach(walk);
    }
  };
  args.forEach(walk);
  return out;
}

/**
 * Evaluates arrays (any nested arrays/objects of arrays), as mx.eval.
 * @example
 * mg.evaluate({ a: mg.exp(mg.array([0])) })
 */
function evaluateImpl(...args: unknown[]): void {
  // eval(x): no walk over the arguments
  if (args.length === 1 && args[0] instanceof MgArray) evalArrays(args as MgArray[]);
  else evalArrays(arraysIn(args));
}
export const evaluate = publicFunction("evaluate", evaluateImpl, NO_ARRAYS);
// mx.eval's name (a reserved word as a binding, not as an export name): the same function.
export { evaluate as eval };

/**
 * Starts evaluating arrays and returns a promise that resolves when they are ready, without
 * blocking the event loop while GPU work runs (mx.async_eval, awaitable).
 * @example
 * mg.asyncEval(mg.exp(mg.array([0]))) instanceof Promise
 */
export const asyncEval = publicFunction("asyncEval", function asyncEval(...args: unknown[]): Promise<void> {
  return evalAsync(arraysIn(args));
}, NO_ARRAYS);

export const {
  clearCache, getActiveMemory, getCacheMemory, getMemoryLimit, getPeakMemory, keep, liveArrayCount, resetPeakMemory,
  setCacheLimit, setMemoryLimit, setWiredLimit, tidy,
} = publicFunctions("", memoryApi, NO_ARRAYS);
export const pressureCollectionCount = publicFunction("pressureCollectionCount", pressureCollectionCountImpl, NO_ARRAYS);

/**
 * Facts about the device, as mx.device_info (MLX's keys, plus metalgrad's): which GPU (or the
 * Metal simulator), its architecture string and generation, memory sizes, the default device, the
 * hardware gates kernel selection depends on (guide §4: nax_available is MLX's rule, tf32_default
 * what MLX would do by default here) and the current precision policy.
 * @example
 * mg.deviceInfo().default_device
 */
export const deviceInfo = publicFunction("deviceInfo", function deviceInfo(): Record<string, string | number | boolean | number[] | Record<string, string>> {
  if (!rt) {
    return {
      device_name: "none: no native runtime (the CPU device works; the GPU device is unavailable)",
      gpu_available: false,
      runtime_error: runtimeLoadError() ?? "unknown",
      how_to_get_the_runtime: RUNTIME_HINT,
      default_device: currentDefaultDevice().type,
      nax_available: false,
      precision: { ...currentPrecision() },
    };
  }
  const d = rt.device;
  const arch = { architecture: d.architecture, generation: d.generation, sizeClass: d.sizeClass, isSimulator: d.isSimulator };
  const os = metalOsVersion(d.isSimulator);
  return {
    device_name: d.name,
    architecture: d.architecture,
    architecture_generation: d.generation,
    size_class: d.sizeClass,
    memory_size: d.recommendedMaxWorkingSetSize,
    max_recommended_working_set_size: d.recommendedMaxWorkingSetSize,
    max_buffer_length: d.maxBufferLength,
    max_threads_per_threadgroup: d.maxThreadsPerThreadgroup,
    unified_memory: d.hasUnifiedMemory,
    is_simulator: d.isSimulator,
    apple_gpu_family: d.appleFamily,
    supports_simdgroup_matrix: d.supportsSimdgroupMatrix,
    supports_atomic_float: d.supportsAtomicFloat,
    performance: d.isSimulator
      ? "the Metal simulator runs kernels on the CPU with Metal's semantics: correct, not a performance device"
      : "Apple GPU",
    default_device: currentDefaultDevice().type,
    gpu_available: true,
    runtime_library: rt.libraryPath,
    os_version: os ? `${os[0]}.${os[1]}${d.isSimulator ? " (simulated)" : ""}` : "unknown",
    nax_available: naxAvailable(arch),
    tf32_default: tf32Default(arch),
    // The device's own answer (MTLDevice families), else the generation rule (Apple7 / g13 on).
    simdgroup_matrix: d.supportsSimdgroupMatrix ?? simdgroupMatrix(arch),
    bfloat16_native: bfloat16Native(arch),
    // metalgrad has no NAX (TensorOps) or TF32-class kernels: every matmul is IEEE float32 today.
    nax_kernels: false,
    precision: { ...currentPrecision() },
  };
}, NO_ARRAYS);
export * as nn from "./nn/index.ts";
export * as optimizers from "./optimizers/index.ts";
export * as utils from "./utils/index.ts";
