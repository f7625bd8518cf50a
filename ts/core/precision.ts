// The precision policy: which internal precision kernels may use (guide §0, question 3). Unlike
// MLX's MLX_ENABLE_TF32 (an environment variable latched at first use, §3.5) it is an ordinary
// value, set and scoped at run time: `setPrecision` changes it, `withPrecision(policy, fn)` scopes
// it (async-safe, through AsyncLocalStorage, as `stream` scopes streams). Ops read it when they
// are called — as they read the default stream — and record it in the nodes they build, so a lazy
// graph evaluated later, anywhere, runs with the policy it was written under; kernel selection
// reads it from there and the trace records it.
import { AsyncLocalStorage } from "node:async_hooks";

/** The precision policy: matmul "highest" (IEEE float32) or "high" (TF32/NAX where present), and how 16-bit inputs accumulate. */
export interface PrecisionPolicy {
  /**
   * float32 matrix products: "highest" (the default) computes IEEE float32; "high" allows
   * TF32-class or NAX (TensorOps) kernels where the hardware has them. metalgrad has no such
   * kernel yet, so "high" currently selects the same IEEE kernels (the trace says so).
   */
  matmul: "highest" | "high";
  /**
   * float16/bfloat16 inputs of the fused ops (mg.fast): accumulate in "float32" (the default, as
   * MLX's fast kernels) or "native" (in the input type: less accurate, cheaper on hardware with
   * fast 16-bit arithmetic). Softmax statistics stay float32 either way.
   */
  accumulate16: "float32" | "native";
}

/** How float16/bfloat16 inputs of the fused ops accumulate. */
export type Accumulate16 = PrecisionPolicy["accumulate16"];

export const DEFAULT_PRECISION: Readonly<PrecisionPolicy> = Object.freeze({ matmul: "highest", accumulate16: "float32" });

let globalPolicy: Readonly<PrecisionPolicy> = DEFAULT_PRECISION;
/** A scope's policy lives in a holder, so setPrecision inside a scope changes that scope only. */
const scope = new AsyncLocalStorage<{ policy: Readonly<PrecisionPolicy> }>();

function validated(p: unknown, base: Readonly<PrecisionPolicy>, op: string): Readonly<PrecisionPolicy> {
  if (typeof p !== "object" || p === null || Array.isArray(p)) throw new TypeError(`[${op}] expected a policy object such as { matmul: "highest" }.`);
  const out: PrecisionPolicy = { ...base };
  for (const [key, value] of Object.entries(p)) {
    if (key === "matmul") {
      if (value !== "highest" && value !== "high") throw new Error(`[${op}] matmul must be "highest" or "high", got ${JSON.stringify(value)}.`);
      out.matmul = value;
    } else if (key === "accumulate16") {
      if (value !== "float32" && value !== "native") throw new Error(`[${op}] accumulate16 must be "float32" or "native", got ${JSON.stringify(value)}.`);
      out.accumulate16 = value;
    } else {
      throw new Error(`[${op}] unknown policy field '${key}' (known: matmul, accumulate16).`);
    }
  }
  return Object.freeze(out);
}

/** The policy in effect here: the innermost withPrecision scope's, else the global one.  * @example
 * mg.getPrecision()
 */
export function getPrecision(): Readonly<PrecisionPolicy> {
  return scope.getStore()?.policy ?? globalPolicy;
}

/**
 * Changes the policy (fields not given keep their value) and returns the previous one, so
 * `setPrecision(previous)` restores it. Inside a withPrecision scope it changes that scope only.
  * @example
 * const previous = mg.setPrecision({ matmul: "high" });
 * mg.setPrecision(previous)
 */
export function setPrecision(policy: Partial<PrecisionPolicy>): Readonly<PrecisionPolicy> {
  const holder = scope.getStore();
  const previous = holder?.policy ?? globalPolicy;
  const next = validated(policy, previous, "set_precision");
  if (holder) holder.policy = next;
  else globalPolicy = next;
  return previous;
}

/**
 * Runs `fn` with `policy` (merged over the current one) in effect, as `stream` scopes streams:
 * ops called inside, also after an `await`, use it; code outside never sees it.
 * @example
 * mg.withPrecision({ accumulate16: "native" }, () => mg.getPrecision().accumulate16)
 */
export function withPrecision<T>(policy: Partial<PrecisionPolicy>, fn: () => T): T {
  const next = validated(policy, getPrecision(), "with_precision");
  if (typeof fn !== "function") throw new TypeError(`[with_precision] fn must be a function, got ${fn === null ? "null" : typeof fn}.`);
  return scope.run({ policy: next }, fn);
}
