// Binding MLX-style arguments: MLX's positional parameters in order, then an optional trailing
// options object holding keyword-only parameters (and `stream`) and, by camelCase name, any
// parameter that has a default. A name given twice or an unknown option is an error naming the op.
import type { StreamOrDevice } from "../device.ts";
import { isOptionsObject } from "./convert.ts";

export interface ParamSpec {
  /** camelCase name (also its key in the options object). */
  name: string;
  /** Required (no default): may only be given positionally. */
  required?: boolean;
  /** Keyword-only in MLX: only in the options object. */
  keywordOnly?: boolean;
}

/**
 * Binds `args` (everything after the op's leading required arrays) to `params`. Returns the
 * values by name (undefined where not given: the op applies MLX's default) and the stream.
 */
export function bindArgs(op: string, args: readonly unknown[], params: readonly ParamSpec[]): Record<string, unknown> & { stream?: StreamOrDevice | null } {
  let positional = args;
  let options: Record<string, unknown> = {};
  // A trailing plain object is the options object, unless a positional parameter accepts one
  // (none of MLX's ops do).
  if (args.length > 0 && isOptionsObject(args[args.length - 1])) {
    positional = args.slice(0, -1);
    options = args[args.length - 1] as Record<string, unknown>;
  }
  // Trailing undefineds are "not given".
  let end = positional.length;
  while (end > 0 && positional[end - 1] === undefined) end--;
  positional = positional.slice(0, end);
  const byPosition = params.filter((p) => !p.keywordOnly);
  if (positional.length > byPosition.length) {
    throw new TypeError(`[${op}] takes at most ${byPosition.length} positional argument(s) after the array(s) but ${positional.length} were given.`);
  }
  const out: Record<string, unknown> & { stream?: StreamOrDevice | null } = {};
  positional.forEach((v, i) => {
    out[byPosition[i]!.name] = v;
  });
  for (const [key, value] of Object.entries(options)) {
    if (key === "stream") {
      out.stream = value as StreamOrDevice | null;
      continue;
    }
    const spec = params.find((p) => p.name === key);
    if (!spec) {
      const known = [...params.filter((p) => !p.required).map((p) => p.name), "stream"].join(", ");
      throw new TypeError(`[${op}] Unknown option '${key}' (options: ${known}).`);
    }
    if (spec.required) throw new TypeError(`[${op}] '${key}' is positional and cannot be given as an option.`);
    if (out[key] !== undefined && value !== undefined) throw new TypeError(`[${op}] '${key}' was given both positionally and as an option.`);
    if (value !== undefined) out[key] = value;
  }
  for (const p of params) {
    if (p.required && out[p.name] === undefined) throw new TypeError(`[${op}] missing required argument '${p.name}'.`);
  }
  return out;
}
