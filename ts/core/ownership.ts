// Ownership of intermediates. MLX frees an array's buffer as soon as its last reference goes;
// JavaScript has no reference counts, so metalgrad draws the line at the public API instead:
// a *library call* (a public op, a random draw, a transform's call, a fused layer) owns every array
// it creates and does not return. Those arrays are *internal*: nobody outside can name them, so
// eval releases each one's buffer as soon as its last consumer has run, as MLX does. Arrays a call
// returns belong to its caller — the user (as today: dispose, tidy or the GC frees them) or an
// enclosing library call, which decides in turn.
//
// Library code that keeps an array beyond its call (a cache, a module's state) must `retain` it, and
// a library call that runs the user's code (grad's function, a custom rule, compile's trace) runs it
// through `userCall`: what user code creates stays the user's, wherever it runs (MLX's
// test_update_state stores an array computed inside grad in an outer variable).
import { MgArray, setCreationListener } from "./array.ts";

/** Arrays created by the library calls under way, oldest first; each call owns a suffix. */
const created: MgArray[] = [];
let depth = 0;

setCreationListener((a) => {
  if (depth > 0) created.push(a);
});

/** True while a library call runs (arrays created now are owned by it). */
export function inLibraryCall(): boolean {
  return depth > 0;
}

/**
 * Runs `fn` as a library call: the arrays it creates become internal when it returns, except the
 * ones reachable from its result (arrays, nested arrays and plain objects, Maps). An error makes
 * every array it created internal.
 */
export function libraryCall<R>(fn: () => R): R {
  const start = created.length;
  depth++;
  let result: R;
  try {
    result = fn();
  } catch (e) {
    depth--;
    settle(start, undefined);
    throw e;
  }
  depth--;
  settle(start, result);
  return result;
}

/**
 * Runs user code from inside a library call: the arrays it creates directly are the user's (each
 * op it calls is a library call of its own, as at top level).
 */
export function userCall<R>(fn: () => R): R {
  const saved = depth;
  depth = 0;
  try {
    return fn();
  } catch (e) {
    // The user's own error passes through the library calls around it untouched.
    if (e !== null && typeof e === "object") userErrors.add(e);
    throw e;
  } finally {
    depth = saved;
  }
}

/** Errors thrown by user code (userCall): never retagged. */
const userErrors = new WeakSet<object>();

/**
 * Every error leaving a public function is tagged with its op (`[floor_divide] …`), as the project
 * requires: an error that is not yet tagged (a JS TypeError from an argument of the wrong type, an
 * internal slip) gets the function's MLX name prepended, keeping its class and stack. Errors from
 * user code are left alone.
 */
export function tagged(e: unknown, name: string): unknown {
  if (e instanceof Error) {
    if (userErrors.has(e) || /^\[[^\]\s][^\]]*\] /.test(e.message)) return e;
    e.message = `[${snakeCase(name)}] ${e.message}`;
    return e;
  }
  if (e !== null && typeof e === "object") return e;
  return new TypeError(`[${snakeCase(name)}] ${String(e)}`);
}

/** MLX's snake_case name of a camelCase function name (floorDivide → floor_divide). */
const snakeCase = (name: string): string => name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase() || "metalgrad";

/** Wraps a user function so that each call runs as user code (see userCall). */
export function userFunction<F extends (...args: never[]) => unknown>(fn: F): F {
  return function (this: unknown, ...args: Parameters<F>): ReturnType<F> {
    return userCall(() => fn.apply(this, args) as ReturnType<F>);
  } as unknown as F;
}

// One wrapper per function, so that aliases stay identical (mg.acos === mg.arccos, as in MLX).
const wrappers = new WeakMap<object, unknown>();

/**
 * The parts of a library call, for a wrapper that does more than run `fn` (ts/core/options.ts's
 * public functions, one wrapper rather than two per call): `const start = beginLibraryCall()`,
 * then `endLibraryCall(start, result)` or, when it throws, `endLibraryCall(start, undefined)`.
 */
export function beginLibraryCall(): number {
  depth++;
  return created.length;
}

export function endLibraryCall(start: number, result: unknown): void {
  depth--;
  settle(start, result);
}

/** Marks a function that runs as a library call itself (see beginLibraryCall) as one. */
export function markLibraryFunction<F extends (...args: never[]) => unknown>(fn: F): F {
  wrappers.set(fn, fn);
  return fn;
}

/** Wraps a function so that each call is a library call (see libraryCall). */
export function libraryFunction<F extends (...args: never[]) => unknown>(fn: F): F {
  const known = wrappers.get(fn);
  if (known) return known as F;
  // libraryCall inlined: this runs on every public op, so no closure per call.
  const wrapped = function (this: unknown, ...args: Parameters<F>): ReturnType<F> {
    const start = created.length;
    depth++;
    let result: ReturnType<F>;
    try {
      result = fn.apply(this, args) as ReturnType<F>;
    } catch (e) {
      depth--;
      settle(start, undefined);
      throw tagged(e, fn.name);
    }
    depth--;
    settle(start, result);
    return result;
  };
  Object.defineProperty(wrapped, "name", { value: fn.name });
  wrappers.set(fn, wrapped);
  wrappers.set(wrapped, wrapped);
  return wrapped as unknown as F;
}

/**
 * Keeps arrays that library code stores beyond its call (caches, module state) out of the
 * internal set: they stay the caller's, like a returned array — also an array an inner library
 * call already made internal (compile keeps mean's 1/N constant), as long as its data is there.
 * Returns its argument.
 */
export function retain<T>(value: T): T {
  const keep = new Set<MgArray>();
  collect(value, keep, new Set());
  for (const a of keep) a.retain();
  return value;
}

function settle(start: number, result: unknown): void {
  const end = created.length;
  if (end === start) return;
  // The common case: an op that returns the one array it created.
  if (end === start + 1 && created[start] === result) {
    if (depth === 0) created.length = start;
    return;
  }
  // An op returning one array (its helpers — a broadcast, a cast — become internal): no sets.
  if (result instanceof MgArray) {
    let kept = start;
    for (let i = start; i < end; i++) {
      const a = created[i]!;
      if (a === result || a.retained) {
        if (depth > 0) created[kept++] = a;
      } else {
        a.makeInternal();
      }
    }
    created.length = depth > 0 ? kept : start;
    return;
  }
  const returned = new Set<MgArray>();
  if (result !== undefined) collect(result, returned, new Set());
  let kept = start;
  for (let i = start; i < end; i++) {
    const a = created[i]!;
    if (returned.has(a) || a.retained) {
      // Still owned by the enclosing call (if any), which decides when it returns.
      if (depth > 0) created[kept++] = a;
    } else {
      a.makeInternal();
    }
  }
  created.length = depth > 0 ? kept : start;
}

function collect(value: unknown, into: Set<MgArray>, seen: Set<object>): void {
  if (value instanceof MgArray) {
    into.add(value);
    return;
  }
  if (value === null || typeof value !== "object" || seen.has(value)) return;
  seen.add(value);
  if (Array.isArray(value)) for (const v of value) collect(v, into, seen);
  else if (value instanceof Map) for (const v of value.values()) collect(v, into, seen);
  else if (Object.getPrototypeOf(value) === Object.prototype) for (const v of Object.values(value)) collect(v, into, seen);
}

/** A copy of a namespace whose functions are library functions (for the public API's exports). */
export function libraryFunctions<T extends object>(ns: T): T {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(ns)) {
    out[name] = typeof value === "function" && !isClass(value) ? libraryFunction(value as (...a: never[]) => unknown) : value;
  }
  return out as T;
}

function isClass(fn: unknown): boolean {
  return typeof fn === "function" && /^class[\s{]/.test(Function.prototype.toString.call(fn));
}

/** True for functions wrapped by libraryFunction (the public-API test checks every export). */
export function isLibraryFunction(fn: unknown): boolean {
  return typeof fn === "function" && wrappers.get(fn) === fn;
}
