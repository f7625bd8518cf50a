// Deterministic release: tidy scopes, keep, and the live-array count.
//
// A tidy scope is one object per call, found through AsyncLocalStorage, so interleaved async
// tidies each see (and free) exactly their own arrays — no global stack (tfjs #4864, #5468).
// Disposing an array whose value a pending graph still needs is safe: its storage is held until
// that node is evaluated (MgArray.graphRefs).
import { AsyncLocalStorage } from "node:async_hooks";
import { MgArray, setArrayHooks } from "../core/array.ts";

class Scope {
  readonly arrays = new Set<MgArray>();
  constructor(readonly parent: Scope | undefined) {}
}

const current = new AsyncLocalStorage<Scope>();

// Live arrays: created minus released (disposed, or collected by the GC without dispose).
// FinalizationRegistry registrations cost about a microsecond each, so counting starts on the
// first liveArrayCount() call and covers the arrays created from then on.
let tracking = false;
let live = 0;
interface Token {
  counted: boolean;
}
const tokens = new WeakMap<MgArray, Token>();
// Module scope: a registry held by a local can be collected with its registrations (Bun #35213).
const collected = new FinalizationRegistry<Token>((token) => {
  if (token.counted) {
    token.counted = false;
    live--;
  }
});

setArrayHooks({
  created(a) {
    if (tracking) {
      const token: Token = { counted: true };
      tokens.set(a, token);
      collected.register(a, token, token);
      live++;
    }
    current.getStore()?.arrays.add(a);
  },
  released(a) {
    if (!tracking) return;
    const token = tokens.get(a);
    if (token?.counted) {
      token.counted = false;
      live--;
      collected.unregister(token);
    }
  },
});

/**
 * Arrays alive right now — created, and neither disposed nor garbage collected — for leak hunting.
 * Counting starts at the first call (it costs about a microsecond per array); that call returns 0.
 * @example
 * typeof mg.liveArrayCount()
 */
export function liveArrayCount(): number {
  tracking = true;
  return live;
}

function collectArrays(value: unknown, into: Set<MgArray>, seen = new Set<unknown>()): void {
  if (value instanceof MgArray) {
    into.add(value);
    return;
  }
  if (value === null || typeof value !== "object" || seen.has(value)) return;
  seen.add(value);
  if (Array.isArray(value)) for (const v of value) collectArrays(v, into, seen);
  else if (value instanceof Map) for (const v of value.values()) collectArrays(v, into, seen);
  else if (Object.getPrototypeOf(value) === Object.prototype) for (const v of Object.values(value)) collectArrays(v, into, seen);
}

function finish(scope: Scope, result: unknown): void {
  const survivors = new Set<MgArray>();
  collectArrays(result, survivors);
  for (const a of scope.arrays) {
    if (!survivors.has(a)) a.dispose();
  }
  // What the scope returns now belongs to the enclosing scope (if any), which may free it later.
  if (scope.parent) for (const a of survivors) if (scope.arrays.has(a)) scope.parent.arrays.add(a);
}

/**
 * Runs `fn` and disposes every array created inside it except those it returns (in arrays, plain
 * objects or Maps, nested) and those passed to `keep`. Works for async `fn`: the arrays of an
 * async scope are freed when its promise settles, and interleaved scopes stay separate.
 * @example
 * mg.tidy(() => mg.sum(mg.exp(mg.ones([3]))))
 */
export function tidy<T>(fn: () => T): T {
  const scope = new Scope(current.getStore());
  let result: T;
  try {
    result = current.run(scope, fn);
  } catch (e) {
    finish(scope, undefined);
    throw e;
  }
  if (result instanceof Promise) {
    return result.then(
      (value) => {
        finish(scope, value);
        return value;
      },
      (error) => {
        finish(scope, undefined);
        throw error;
      },
    ) as T;
  }
  finish(scope, result);
  return result;
}

/**
 * Exempts arrays from every enclosing tidy scope; returns its argument.
 * @example
 * mg.tidy(() => mg.keep(mg.ones([2]))).shape
 */
export function keep<T>(value: T): T {
  const arrays = new Set<MgArray>();
  collectArrays(value, arrays);
  for (let s = current.getStore(); s; s = s.parent) for (const a of arrays) s.arrays.delete(a);
  return value;
}
