// The public op being called, for error tags: an error raised while an op builds its graph (deep in
// a helper node, a cast, a reshape) names what the user called — `[sum] …`, not `[Reshape] …`.
// The options helper (options.ts) enters each public call; the innermost one is current, so user
// code running inside a public function (mg.stream's callback) names its own ops.

let current: string | null = null;

/** The innermost public op under way, or null outside any. */
export function currentOp(): string | null {
  return current;
}

/** Makes `op` current and returns the previous one (restore it with another enterOp). */
export function enterOp(op: string | null): string | null {
  const saved = current;
  current = op;
  return saved;
}

/** Runs `fn` as the public op `op` (see currentOp). */
export function withOp<R>(op: string, fn: () => R): R {
  const saved = current;
  current = op;
  try {
    return fn();
  } finally {
    current = saved;
  }
}
