// The bun:ffi binding of the native CPU kernels (Sources/MGCpu, C ABI in include/MGCpu.h), loaded
// from the same runtime library as ts/backend/runtime.ts.
//
// Every kernel takes one descriptor — a Float64Array the caller fills (addresses, dtype indices,
// shapes and strides in elements, all exact in a double) — and returns a status: 0 ok,
// 1 unsupported (the caller runs the TypeScript reference instead), 2 a bad descriptor (an error).
// One scratch descriptor is reused for every call: filling it costs nanoseconds, and passing a
// TypedArray straight to FFI is the cheapest way across (../shared/reference/bun-ffi-notes.md).
import { dlopen, FFIType } from "bun:ffi";
import { runtime } from "../../runtime.ts";

const { ptr: P, i32, cstring } = FFIType;

const SYMBOLS = {
  mg_cpu_last_error: { args: [], returns: cstring },
  mg_cpu_info_json: { args: [], returns: cstring },
  mg_cpu_set_threads: { args: [i32], returns: i32 },
  mg_cpu_set_isa: { args: [i32], returns: i32 },
  mg_cpu_set_gemm: { args: [i32], returns: i32 },
  mg_cpu_last_run: { args: [P, i32], returns: i32 },
  mg_cpu_elementwise: { args: [P, i32], returns: i32 },
  mg_cpu_reduce: { args: [P, i32], returns: i32 },
  mg_cpu_argreduce: { args: [P, i32], returns: i32 },
  mg_cpu_softmax: { args: [P, i32], returns: i32 },
  mg_cpu_matmul: { args: [P, i32], returns: i32 },
  mg_cpu_scan: { args: [P, i32], returns: i32 },
  mg_cpu_copy: { args: [P, i32], returns: i32 },
  mg_cpu_arange: { args: [P, i32], returns: i32 },
  mg_cpu_random_bits: { args: [P, i32], returns: i32 },
  mg_cpu_gather: { args: [P, i32], returns: i32 },
  mg_cpu_gather_axis: { args: [P, i32], returns: i32 },
  mg_cpu_fft: { args: [P, i32], returns: i32 },
  mg_cpu_convolution: { args: [P, i32], returns: i32 },
  mg_cpu_quantized_matmul: { args: [P, i32], returns: i32 },
  mg_cpu_quantize: { args: [P, i32], returns: i32 },
  mg_cpu_dequantize: { args: [P, i32], returns: i32 },
  mg_cpu_sort: { args: [P, i32], returns: i32 },
  mg_cpu_scatter: { args: [P, i32], returns: i32 },
  mg_cpu_norm: { args: [P, i32], returns: i32 },
  mg_cpu_rope: { args: [P, i32], returns: i32 },
  mg_cpu_sdpa: { args: [P, i32], returns: i32 },
  mg_cpu_cross_entropy: { args: [P, i32], returns: i32 },
  mg_cpu_linalg: { args: [P, i32], returns: i32 },
} as const;

function open(path: string) {
  return dlopen(path, SYMBOLS);
}
type CpuSymbols = ReturnType<typeof open>["symbols"];
export type KernelEntry = (desc: Float64Array, words: number) => number;

let symbols: CpuSymbols | null = null;

/** The native CPU functions (the runtime library is opened on first use). */
export function native(): CpuSymbols {
  symbols ??= open(runtime().libraryPath).symbols;
  return symbols;
}

export const OK = 0;
export const UNSUPPORTED = 1;

/** A growable descriptor: `d[n++] = word`, then `call(entry)`. */
export class Descriptor {
  d = new Float64Array(256);
  n = 0;

  /** Makes room for `words` more words. */
  reserve(words: number): void {
    if (this.n + words <= this.d.length) return;
    let size = this.d.length * 2;
    while (size < this.n + words) size *= 2;
    const grown = new Float64Array(size);
    grown.set(this.d.subarray(0, this.n));
    this.d = grown;
  }

  push(v: number): void {
    if (this.n === this.d.length) this.reserve(1);
    this.d[this.n++] = v;
  }

  /** Runs a kernel on the descriptor: true when it ran, false when it is unsupported. */
  call(entry: KernelEntry): boolean {
    const status = entry(this.d, this.n);
    if (status === OK) return true;
    if (status === UNSUPPORTED) return false;
    throw new Error(String(native().mg_cpu_last_error()));
  }
}

/** The message of the last unsupported or failed call ("" when none). */
export function lastError(): string {
  return String(native().mg_cpu_last_error());
}

export interface NativeCpuInfo {
  /** The instruction set the kernels run on: "avx512" (AVX2 with AVX-512 elementwise float kernels), "avx2", "sse2" or "neon". */
  isa: string;
  threads: number;
  /** The GEMM in use: "metalgrad" (the packed GEMM) or "blas". */
  gemm: "metalgrad" | "blas";
  /** The BLAS library found ("Accelerate", an MG_BLAS path, or "none"). */
  blas: string;
  tile: number;
}

export function nativeInfo(): NativeCpuInfo {
  return JSON.parse(String(native().mg_cpu_info_json())) as NativeCpuInfo;
}

/** Threads kernels may use (0 = MG_CPU_THREADS or the hardware concurrency); returns the previous. */
export function setNativeThreads(n: number): number {
  return native().mg_cpu_set_threads(n);
}

/**
 * Forces an instruction set: "best", "baseline", "avx2" or "avx512" (a set the CPU lacks is
 * ignored); returns the one in use.
 */
export function setNativeIsa(which: "best" | "baseline" | "avx2" | "avx512"): string {
  native().mg_cpu_set_isa(which === "best" ? 0 : which === "baseline" ? 1 : which === "avx2" ? 2 : 3);
  return nativeInfo().isa;
}

/** Selects the GEMM ("metalgrad" or "blas" when one was found); returns the one in use. */
export function setGemmProvider(which: "metalgrad" | "blas"): "metalgrad" | "blas" {
  return native().mg_cpu_set_gemm(which === "blas" ? 1 : 0) === 1 ? "blas" : "metalgrad";
}

const lastRun = new Float64Array(2);
/** What the last native kernel did: the GEMM that ran (0 own, 1 BLAS) and its thread count. */
export function lastNativeRun(): { gemm: number; threads: number } {
  native().mg_cpu_last_run(lastRun, 2);
  return { gemm: lastRun[0]!, threads: lastRun[1]! };
}
