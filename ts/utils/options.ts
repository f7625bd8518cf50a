// MLX's calling convention for functions with defaulted parameters: positional parameters in
// MLX's order, any of which may instead be given by its camelCase name in a trailing options
// object. One parser for mg.nn, mg.optimizers and mg.utils, so every call validates the same way:
// an unknown option name is an error naming the function, the option and the accepted names.
import { isOptionsObject } from "../core/ops/convert.ts";

/**
 * The trailing arguments of a call whose defaulted positional parameters are `P` and whose options
 * object is `O`: any prefix of `P`, optionally followed by `O`.
 */
export type Trailing<P extends readonly unknown[], O> = P extends readonly [...infer Init, unknown]
  ? [...Partial<P>, O?] | Trailing<Init, O>
  : [O?];

/** The options object of a parameter list: every parameter by camelCase name, all optional. */
export type OptionsOf<T> = { [K in keyof T]?: T[K] };

function snakeToCamel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The error for an option name `op` does not take, with a hint for snake_case spellings. */
export function unknownOptionError(op: string, name: string, accepted: readonly string[]): TypeError {
  const camel = snakeToCamel(name);
  const hint = camel !== name && accepted.includes(camel) ? ` (did you mean '${camel}'?)` : "";
  const list = accepted.length > 0 ? accepted.map((a) => `'${a}'`).join(", ") : "none";
  return new TypeError(`[${op}] unknown option '${name}'${hint}. Accepted options: ${list}.`);
}

/** Throws unless every key of `options` is one of `accepted`. */
export function checkOptionNames(op: string, options: object, accepted: readonly string[]): void {
  for (const k of Object.keys(options)) {
    if (!accepted.includes(k)) throw unknownOptionError(op, k, accepted);
  }
}

/**
 * Resolves the trailing arguments `rest` of a call of `op` against the parameters `defaults` (in
 * MLX's positional order, each with its default): positional values first, then the options
 * object (the last argument when it is a plain object). `undefined` means "not given". A name
 * given both ways, too many positional arguments, or an unknown option is an error.
 * `extraOptions` are accepted in the options object only (keyword-only parameters).
 */
export function resolveOptions<T extends Record<string, unknown>>(
  op: string,
  rest: readonly unknown[],
  defaults: T,
  extraOptions: readonly string[] = [],
): T & Record<string, unknown> {
  const names = Object.keys(defaults);
  let positional = rest;
  let options: Record<string, unknown> = {};
  if (rest.length > 0 && isOptionsObject(rest[rest.length - 1])) {
    options = rest[rest.length - 1] as Record<string, unknown>;
    positional = rest.slice(0, -1);
  }
  if (positional.length > names.length) {
    throw new TypeError(
      `[${op}] takes at most ${names.length} optional positional arguments (${names.join(", ")}), got ${positional.length}.`,
    );
  }
  const accepted = [...names, ...extraOptions];
  checkOptionNames(op, options, accepted);
  const out: Record<string, unknown> = { ...defaults };
  positional.forEach((v, i) => {
    if (v !== undefined) out[names[i]!] = v;
  });
  for (const [k, v] of Object.entries(options)) {
    if (v === undefined) continue;
    const at = names.indexOf(k);
    if (at >= 0 && at < positional.length && positional[at] !== undefined) {
      throw new TypeError(`[${op}] '${k}' was given both positionally and in the options object.`);
    }
    out[k] = v;
  }
  return out as T & Record<string, unknown>;
}
