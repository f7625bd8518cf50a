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

// Live arrays: created minus released (disposed, or collected by the GC without dispose), for
// every array from the start. Each array is registered with a FinalizationRegistry holding only
// its id, without an unregister token: JSC's registrations with tokens cost ~1 µs each and make
// every collection scan them (a loop that never yields went quadratic), while a token-free one
// costs ~0.1-0.3 µs and nothing per GC; an object as the held value would survive each dead array
// until the loop yields. A disposed array is remembered by id until its finalizer runs, so that it
// is not subtracted twice.
let live = 0;
// Module scope: a registry held by a local can be collected with its registrations (Bun #35213).
const collected = new FinalizationRegistry<number>((id) => {
  if (!disposed.take(id)) live--;
});

/**
 * Ids of disposed arrays whose finalizers have not run, as bits in chunks of 4096 ids (a chunk is
 * dropped when its last bit clears). A Set of ids did this at ~0.3 µs an op: a loop of tiny ops
 * that never yields adds one entry per op (hashing, growth, page faults, GC marking); here it is a
 * bit, and a map lookup per 4096 ids.
 */
class IdBits {
  private readonly chunks = new Map<number, { bits: Int32Array; count: number }>();
  private lastKey = -1;
  private last: { bits: Int32Array; count: number } | null = null;

  add(id: number): void {
    const key = Math.floor(id / 4096);
    let c = key === this.lastKey ? this.last : this.chunks.get(key);
    if (!c) {
      c = { bits: new Int32Array(128), count: 0 };
      this.chunks.set(key, c);
    }
    this.lastKey = key;
    this.last = c;
    const bit = id - key * 4096;
    c.bits[bit >>> 5]! |= 1 << (bit & 31);
    c.count++;
  }

  /** Clears id's bit; false when it was not set. */
  take(id: number): boolean {
    const key = Math.floor(id / 4096);
    const c = key === this.lastKey ? this.last : this.chunks.get(key);
    if (!c) return false;
    const bit = id - key * 4096;
    const mask = 1 << (bit & 31);
    if ((c.bits[bit >>> 5]! & mask) === 0) return false;
    c.bits[bit >>> 5]! &= ~mask;
    if (--c.count === 0) {
      this.chunks.delete(key);
      if (this.lastKey === key) {
        this.lastKey = -1;
        this.last = null;
      }
    }
    return true;
  }
}
const disposed = new IdBits();

setArrayHooks({
  created(a) {
    collected.register(a, a.id);
    live++;
    current.getStore()?.arrays.add(a);
  },
  released(a) {
    live--;
    disposed.add(a.id);
  },
});

/**
 * Arrays alive right now — created, and neither disposed nor garbage collected — for leak hunting.
 * Every array counts, including those created before the first call. An array dropped without
 * dispose() leaves the count when the garbage collector finalizes it (after the event loop yields).
 * @example
 * typeof mg.liveArrayCount()
 */
export function liveArrayCount(): number {
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
  if (typeof fn !== "function") throw new TypeError(`[tidy] Expected a function, got ${typeof fn}.`);
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
