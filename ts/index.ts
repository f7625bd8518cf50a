// metalgrad: an MLX-class array and autograd framework for Bun.
//   import * as mg from "metalgrad";
import "./memory/allocator.ts";
// Registration side effects: the derivative rules of every record, then each backend's kernels.
import "./core/rules/index.ts";
import "./backend/cpu/index.ts";
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
import { trace as diagonalTrace } from "./core/ops/index.ts";
import type { Dtype } from "./core/dtype.ts";
import type { ArrayInput, StreamOptions } from "./core/ops/convert.ts";

setConvertHooks((arrays) => stackHook(arrays), (a, d) => astypeHook(a, d));
// With a native runtime the GPU backend has its device: Metal, or the simulator where there is no
// Metal. Without one (none installed for this platform, none built) importing still works: the CPU
// device runs on JS-owned memory, and asking for the GPU says why it is missing.
const rt = tryRuntime();
setDeviceCount("gpu", rt ? 1 : 0, rt ? undefined : `no native runtime (${runtimeLoadError()})`);
setDefaultDeviceInternal(chooseDefaultDevice(rt !== null && !rt.device.isSimulator));

export { MgArray } from "./core/array.ts";
// dtype.ts also holds conversion helpers for the backends (bfloat16 bits, weak-scalar rules): only
// the dtype API is public.
export {
  ALL_DTYPES, bfloat16, bool_, canCast, complex64, complexfloating, Dtype, DtypeCategory, Finfo, finfo, float16,
  float32, float64, floating, generic, Iinfo, iinfo, inexact, int16, int32, int64, int8, integer, isComplex,
  isdtype, isFloating, isInexact, isInteger, issubdtype, number, promoteTypes, resultType, signedinteger, uint16,
  uint32, uint64, uint8, unsignedinteger,
} from "./core/dtype.ts";
export type { DtypeKind, DtypeKindName, DtypeName, Scalar } from "./core/dtype.ts";
export {
  cpu, gpu, Device, Stream, defaultDevice, setDefaultDevice, defaultStream, newStream, setDefaultStream, stream, deviceCount,
  isAvailable,
} from "./core/device.ts";
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
export { compile, disableCompile, enableCompile } from "./core/compile.ts";
export { load, LoadError, save, savez, savezCompressed, saveGguf, saveSafetensors } from "./io/index.ts";
export type { FileArg, GgufMetadataInput, GgufMetadataValue, LoadFormat, LoadOptions, LoadResult, Metadata } from "./io/index.ts";
export type { CompileOptions } from "./core/compile.ts";

/**
 * Two things share MLX-derived names here. `mg.trace(fn)` returns the kernel trace of everything
 * `fn` evaluates (its returned arrays are evaluated too). `mg.trace(a, offset, axis1, axis2, dtype)`
 * is mx.trace, the sum along a diagonal. A function argument selects the first.
 */
export function trace(fn: () => unknown): TraceRecord[];
export function trace(a: ArrayInput, offset?: number, axis1?: number, axis2?: number, dtype?: Dtype | null, opts?: StreamOptions): MgArray;
export function trace(...args: unknown[]): TraceRecord[] | MgArray {
  if (typeof args[0] === "function") {
    const fn = args[0] as () => unknown;
    return collectTrace(fn, (value) => evaluate(value));
  }
  return (diagonalTrace as (...a: unknown[]) => MgArray)(...args);
}
export type { TraceRecord } from "./core/trace.ts";
export { setFusion } from "./backend/gpu/index.ts";
import { synchronize as synchronizeGpu } from "./backend/gpu/index.ts";
import { resolveStream, type StreamOrDevice } from "./core/device.ts";

/** Waits for all work submitted so far — on `stream` (or a device's default stream), or everywhere
 *  — as mx.synchronize. CPU work is synchronous, so only GPU batches are waited for. */
export function synchronize(stream?: StreamOrDevice): void {
  synchronizeGpu(stream === undefined ? undefined : resolveStream(stream));
}

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

/** Evaluates arrays (any nested arrays/objects of arrays), as mx.eval. */
export function evaluate(...args: unknown[]): void {
  evalArrays(arraysIn(args));
}
export { evaluate as eval };

/**
 * Starts evaluating arrays and returns a promise that resolves when they are ready, without
 * blocking the event loop while GPU work runs (mx.async_eval, awaitable).
 */
export function asyncEval(...args: unknown[]): Promise<void> {
  return evalAsync(arraysIn(args));
}

export * from "./memory/index.ts";
export { pressureCollectionCount } from "./memory/allocator.ts";

/**
 * Facts about the device, as mx.device_info (MLX's keys, plus metalgrad's): which GPU (or the
 * Metal simulator), its architecture string and generation, memory sizes, and the default device.
 */
export function deviceInfo(): Record<string, string | number | boolean | number[]> {
  if (!rt) {
    return {
      device_name: "none: no native runtime (the CPU device works; the GPU device is unavailable)",
      gpu_available: false,
      runtime_error: runtimeLoadError() ?? "unknown",
      how_to_get_the_runtime: RUNTIME_HINT,
      default_device: currentDefaultDevice().type,
    };
  }
  const d = rt.device;
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
  };
}
export * as nn from "./nn/index.ts";
export * as optimizers from "./optimizers/index.ts";
export * as utils from "./utils/index.ts";
