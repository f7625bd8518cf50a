// The bad-argument fuzzer (issue 20): public functions called with random bad and edge-case
// arguments — wrong types, NaN, huge and negative numbers, ragged and cyclic lists, empty, 0-d,
// disposed and oddly typed arrays, functions, symbols, bigints — must return or throw an Error
// whose message is tagged with the op (`[op] …`), never crash, hang or throw anything else. Results
// are evaluated and read, so errors raised at eval count too.
import fc from "fast-check";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { isLibraryFunction } from "../../ts/core/ownership.ts";

const READERS = new Set(["tolist", "item", "dataSync", "toString", "index", "astype", "at"]);

/** Functions with effects beyond their result (global state, files, queues) or no arguments to check. */
const EXCLUDED = new Set([
  "setDefaultDevice", "setDefaultStream", "setMemoryLimit", "setCacheLimit", "setWiredLimit", "clearCache", "resetPeakMemory",
  "setFusion", "disableCompile", "enableCompile", "save", "saveGguf", "saveSafetensors", "savez", "savezCompressed",
  "newStream", "asyncEval", "seed", "deviceInfo", "liveArrayCount", "pressureCollectionCount", "getActiveMemory",
  "getCacheMemory", "getMemoryLimit", "getPeakMemory", "metalKernel", "kernelCompileCount",
]);

const isClass = (f: unknown) => typeof f === "function" && /^class[\s{]/.test(Function.prototype.toString.call(f));

/** The public functions under test: name → function (namespaced ones as "random.normal"). */
export function publicFunctions(): Map<string, (...a: unknown[]) => unknown> {
  const out = new Map<string, (...a: unknown[]) => unknown>();
  const add = (prefix: string, ns: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(ns)) {
      if (typeof v !== "function" || isClass(v) || EXCLUDED.has(k)) continue;
      out.set(prefix + k, v as (...a: unknown[]) => unknown);
    }
  };
  add("", mg as unknown as Record<string, unknown>);
  add("random.", mg.random as unknown as Record<string, unknown>);
  add("utils.", mg.utils as unknown as Record<string, unknown>);
  // Array methods, called on a 2x3 float32 array (the first argument is the receiver's stand-in).
  const proto = mg.MgArray.prototype as unknown as Record<string, unknown>;
  for (const k of Object.getOwnPropertyNames(proto)) {
    const d = Object.getOwnPropertyDescriptor(proto, k)!;
    // the public methods: library calls (array-building) and the readers
    if (typeof d.value !== "function" || !(isLibraryFunction(d.value) || READERS.has(k))) continue;
    const method = d.value as (...a: unknown[]) => unknown;
    out.set(`MgArray.${k}`, (...a: unknown[]) => method.apply(mg.reshape(mg.arange(6, mg.float32), [2, 3]), a));
  }
  return out;
}

interface Arg {
  make: () => unknown;
  code: string;
}

const cyclic = () => {
  const l: unknown[] = [1];
  l.push(l);
  return l;
};
const disposed = () => {
  const a = mg.array([1, 2]);
  a.dispose();
  return a;
};

/** The argument pool: each entry builds a fresh value (ops may take ownership) and prints itself. */
export const ARGS: Arg[] = [
  { make: () => undefined, code: "undefined" },
  { make: () => null, code: "null" },
  { make: () => NaN, code: "NaN" },
  { make: () => Infinity, code: "Infinity" },
  { make: () => -Infinity, code: "-Infinity" },
  { make: () => -1, code: "-1" },
  { make: () => 0, code: "0" },
  { make: () => 1, code: "1" },
  { make: () => 2, code: "2" },
  { make: () => 3, code: "3" },
  { make: () => -0, code: "-0" },
  { make: () => 1.5, code: "1.5" },
  { make: () => 2 ** 31, code: "2 ** 31" },
  { make: () => 2 ** 53, code: "2 ** 53" },
  { make: () => -(2 ** 53), code: "-(2 ** 53)" },
  { make: () => true, code: "true" },
  { make: () => false, code: "false" },
  { make: () => 7n, code: "7n" },
  { make: () => 2n ** 70n, code: "2n ** 70n" },
  { make: () => "", code: '""' },
  { make: () => "abc", code: '"abc"' },
  { make: () => "float32", code: '"float32"' },
  { make: () => ":", code: '":"' },
  { make: () => Symbol("s"), code: 'Symbol("s")' },
  { make: () => () => mg.array(1), code: "() => mg.array(1)" },
  { make: () => (x: unknown) => x, code: "(x) => x" },
  { make: () => ({}), code: "{}" },
  { make: () => ({ stream: mg.cpu }), code: "{ stream: mg.cpu }" },
  { make: () => ({ stream: "gpu" }), code: '{ stream: "gpu" }' },
  { make: () => ({ axis: 5 }), code: "{ axis: 5 }" },
  { make: () => ({ bogus: 1 }), code: "{ bogus: 1 }" },
  { make: () => [], code: "[]" },
  { make: () => [[]], code: "[[]]" },
  { make: () => [0, 1], code: "[0, 1]" },
  { make: () => [-1], code: "[-1]" },
  { make: () => [2, 3], code: "[2, 3]" },
  { make: () => [[1, 2], [3]], code: "[[1, 2], [3]]" },
  { make: () => [1, "a"], code: '[1, "a"]' },
  { make: () => [NaN, Infinity], code: "[NaN, Infinity]" },
  { make: () => [2 ** 31, 2], code: "[2 ** 31, 2]" },
  { make: cyclic, code: "cyclic /* a list that contains itself */" },
  { make: () => new Float32Array([1, 2]), code: "new Float32Array([1, 2])" },
  { make: () => mg.float32, code: "mg.float32" },
  { make: () => mg.int8, code: "mg.int8" },
  { make: () => mg.bool_, code: "mg.bool_" },
  { make: () => mg.complex64, code: "mg.complex64" },
  { make: () => mg.float64, code: "mg.float64" },
  { make: () => mg.cpu, code: "mg.cpu" },
  { make: () => mg.gpu, code: "mg.gpu" },
  { make: () => mg.array(2.5), code: "mg.array(2.5)" },
  { make: () => mg.array([1, 2, 3]), code: "mg.array([1, 2, 3])" },
  { make: () => mg.array([[1, 2], [3, 4]], mg.float32), code: "mg.array([[1, 2], [3, 4]], mg.float32)" },
  { make: () => mg.zeros([0]), code: "mg.zeros([0])" },
  { make: () => mg.zeros([2, 0, 3]), code: "mg.zeros([2, 0, 3])" },
  { make: () => mg.array([true, false]), code: "mg.array([true, false])" },
  { make: () => mg.array([NaN, -Infinity], mg.float16), code: "mg.array([NaN, -Infinity], mg.float16)" },
  { make: () => mg.array([255], mg.uint8), code: "mg.array([255], mg.uint8)" },
  { make: () => mg.array([1n, -2n], mg.int64), code: "mg.array([1n, -2n], mg.int64)" },
  { make: () => mg.array([{ re: 1, im: 2 }]), code: "mg.array([{ re: 1, im: 2 }])" },
  { make: () => mg.reshape(mg.arange(24, mg.float32), [2, 3, 4]), code: "mg.reshape(mg.arange(24, mg.float32), [2, 3, 4])" },
  { make: () => mg.transpose(mg.reshape(mg.arange(6), [2, 3])), code: "mg.transpose(mg.reshape(mg.arange(6), [2, 3]))" },
  { make: () => mg.random.key(1), code: "mg.random.key(1)" },
  { make: disposed, code: "disposed /* an array after dispose() */" },
];

/** An Error whose message starts with a tag: "[op] …" (ops, namespaces and methods alike). */
export function isTagged(e: unknown): boolean {
  return e instanceof Error && /^\[[^\]\s][^\]]*\] \S/.test(e.message);
}

function arraysIn(v: unknown, out: MgArray[], seen = new Set<unknown>()): MgArray[] {
  if (v instanceof mg.MgArray) out.push(v);
  else if (v !== null && typeof v === "object" && !seen.has(v)) {
    seen.add(v);
    for (const x of Array.isArray(v) ? v : v instanceof Map ? [...v.values()] : Object.values(v)) arraysIn(x, out, seen);
  }
  return out;
}

export interface Call {
  name: string;
  args: number[];
}

export function callCode(c: Call): string {
  const args = c.args.map((i) => ARGS[i]!.code).join(", ");
  if (c.name.startsWith("MgArray.")) return `mg.reshape(mg.arange(6, mg.float32), [2, 3]).${c.name.slice(8)}(${args})`;
  return `mg.${c.name}(${args})`;
}

/** Makes a call; returns null when it returned or threw a tagged error, else what went wrong. */
export function tryCall(fns: Map<string, (...a: unknown[]) => unknown>, c: Call): string | null {
  const fn = fns.get(c.name)!;
  const run = () => {
    const args = c.args.map((i) => ARGS[i]!.make());
    let result = fn(...args);
    // Returned functions (grad, vmap, compile …) are called with the same arguments.
    if (typeof result === "function" && !isClass(result)) result = (result as (...a: unknown[]) => unknown)(...args);
    const arrays = arraysIn(result, []);
    if (arrays.length > 0) {
      mg.eval(arrays);
      for (const a of arrays) if (!a.disposed && a.size <= 1 << 16) a.tolist();
    }
  };
  try {
    run();
    return null;
  } catch (e) {
    if (isTagged(e)) return null;
    return e instanceof Error ? `${e.constructor.name}: ${e.message.split("\n")[0]}` : `threw a non-Error: ${String(e)}`;
  }
}

export function callArbitrary(names: readonly string[]): fc.Arbitrary<Call> {
  return fc.record({
    name: fc.constantFrom(...names),
    args: fc.array(fc.nat({ max: ARGS.length - 1 }), { minLength: 0, maxLength: 4 }),
  });
}

/** Runs `runs` random calls from `seed`; throws the shrunk failure (the call as code). */
export function fuzzBadArguments(o: { runs: number; seed: number; path?: string }): number {
  const fns = publicFunctions();
  const names = [...fns.keys()].sort();
  let calls = 0;
  const out = fc.check(
    fc.property(callArbitrary(names), (c) => {
      calls++;
      const problem = tryCall(fns, c);
      if (problem !== null) throw new Error(problem);
    }),
    { numRuns: o.runs, seed: o.seed, ...(o.path ? { path: o.path } : {}) },
  );
  if (out.failed) {
    const c = out.counterexample![0];
    throw new Error(
      `[fuzz] a bad argument escaped without a tagged error (seed ${out.seed}, path "${out.counterexamplePath}"):\n` +
        `${callCode(c)}\n  → ${tryCall(fns, c)}`,
    );
  }
  return calls;
}
