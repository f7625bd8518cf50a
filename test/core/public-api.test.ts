// Every public function that builds arrays is a library call (ts/core/ownership.ts), so what it
// creates and does not return is freed after its last use. A new export must be wrapped
// (libraryFunction / libraryFunctions) or listed here with the reason it builds no arrays itself.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { isLibraryFunction } from "../../ts/core/ownership.ts";

// Functions that build no arrays: dtypes, devices and streams, memory API, evaluation, scopes.
const BUILDS_NO_ARRAYS = new Set([
  "asyncEval", "canCast", "clearCache", "defaultDevice", "defaultStream", "deviceCount", "deviceInfo", "disableCompile",
  "enableCompile", "eval", "evaluate", "finfo", "getActiveMemory", "getCacheMemory", "getMemoryLimit", "getPeakMemory",
  "iinfo", "isAvailable", "isComplex", "isFloating", "isInexact", "isInteger", "isdtype", "issubdtype", "keep",
  "liveArrayCount", "newStream", "pressureCollectionCount", "promoteTypes", "resetPeakMemory", "resultType",
  "setCacheLimit", "setDefaultDevice", "setDefaultStream", "setFusion", "setKernelCacheLimits", "setMemoryLimit", "setWiredLimit",
  "synchronize", "getPrecision", "setPrecision",
  // Run user code (user code's arrays are the user's); mg.trace(a, …) calls the wrapped diagonal trace.
  "stream", "tidy", "trace", "withPrecision",
  // Return functions that are library functions (checked below).
  "grad", "valueAndGrad", "vmap", "compile", "checkpoint", "customFunction", "metalKernel",
  // mg.utils trees: they build no arrays; treeMap and treeReduce run the user's function as user code.
  "treeFlatten", "treeMap", "treeMapWithPath", "treeMerge", "treeReduce", "treeUnflatten",
  // mg.testing (test utilities) and mg.fast's compile counter.
  "gradcheck", "toleranceFor", "accumulationTolerance", "kernelCompileCount",
]);

function isClass(v: unknown): boolean {
  return typeof v === "function" && /^class[\s{]/.test(Function.prototype.toString.call(v));
}

describe("the public API's functions are library calls", () => {
  const namespaces: [string, Record<string, unknown>][] = [["mg", mg as unknown as Record<string, unknown>]];
  for (const [k, v] of Object.entries(mg)) {
    if (v && typeof v === "object" && !Array.isArray(v) && Object.getPrototypeOf(v) === null) namespaces.push([`mg.${k}`, v as Record<string, unknown>]);
    else if (v && typeof v === "object" && Object.values(v).some((f) => typeof f === "function") && k !== "cpu" && k !== "gpu") {
      namespaces.push([`mg.${k}`, v as Record<string, unknown>]);
    }
  }
  for (const [name, ns] of namespaces) {
    test(`${name}: every function is wrapped or builds no arrays`, () => {
      const unwrapped = Object.entries(ns)
        .filter(([k, v]) => typeof v === "function" && !isClass(v) && !isLibraryFunction(v) && !BUILDS_NO_ARRAYS.has(k))
        .map(([k]) => k);
      expect(unwrapped).toEqual([]);
    });
  }

  test("transforms return library functions", () => {
    const f = (x: mg.MgArray) => mg.sum(mg.exp(x));
    for (const made of [mg.grad(f), mg.valueAndGrad(f), mg.vmap(f), mg.compile(f), mg.checkpoint(f), mg.customFunction(f)]) {
      expect(isLibraryFunction(made)).toBe(true);
    }
    const k = mg.fast.metalKernel({ name: "api_probe", inputNames: ["a"], outputNames: ["o"], source: "o[0] = a[0];" });
    expect(isLibraryFunction(k)).toBe(true);
  });

  test("array methods that build arrays are library calls", () => {
    const proto = mg.MgArray.prototype as unknown as Record<string, unknown>;
    for (const name of ["add", "exp", "sum", "reshape", "astype", "index", "split", "matmul", "argmax", "transpose"]) {
      expect(isLibraryFunction(proto[name])).toBe(true);
    }
  });
});
