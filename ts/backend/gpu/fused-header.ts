// The header a fused kernel compiles with: utils.h whole, then only the declarations of
// elementwise_ops.h that the region's functors need (their structs, the helpers, macros and
// out-of-line members they name, transitively). The whole header is ~12 ms of the simulator's
// ~60 ms compile of a typical fused kernel; the functors kept are the same text, so the same bits.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { KERNEL_DIR, kernelSource } from "./kernels.ts";

/** One top-level declaration of elementwise_ops.h. */
interface Decl {
  text: string;
  /** Names it declares (a struct, function, macro, or the functor a macro invocation defines). */
  defines: string[];
  /** An out-of-line member (`Exp::operator()`): kept exactly when its class is. */
  owner: string | null;
  /** Identifiers it mentions. */
  refs: string[];
}

const IDENT = /[A-Za-z_][A-Za-z0-9_]*/g;

/** Splits the header into top-level declarations; null if it has a construct this does not know
 *  (conditional compilation), so callers use the whole header. */
export function splitDeclarations(text: string): Decl[] | null {
  const decls: Decl[] = [];
  const lines = text.split("\n");
  let cur: string[] = [];
  let depth = 0;
  const flush = () => {
    const body = cur.join("\n");
    cur = [];
    const code = body.replace(/\/\/[^\n]*/g, "");
    const head = code.slice(0, code.indexOf("{") < 0 ? code.length : code.indexOf("{"));
    let defines: string[] = [];
    let owner: string | null = null;
    let m: RegExpExecArray | null;
    if ((m = /^\s*#\s*define\s+([A-Za-z_]\w*)/.exec(code))) defines = [m[1]!];
    else if ((m = /\bstruct\s+([A-Za-z_]\w*)/.exec(head))) defines = [m[1]!];
    else if ((m = /\b([A-Za-z_]\w*)::operator\s*\(\)/.exec(head))) owner = m[1]!;
    else if ((m = /^\s*([A-Z][A-Z0-9_]*)\(\s*([A-Za-z_]\w*)\s*,/.exec(code))) defines = [m[2]!];
    else if ((m = /([A-Za-z_]\w*)\s*\($/.exec(head.slice(0, head.indexOf("(") + 1)))) defines = [m[1]!];
    const own = new Set(defines);
    const refs = [...new Set(code.match(IDENT) ?? [])].filter((r) => !own.has(r));
    decls.push({ text: body, defines, owner, refs });
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const code = line.replace(/\/\/.*$/, "");
    if (depth === 0 && cur.length === 0) {
      if (code.trim() === "") continue; // blank and comment-only lines between declarations
      if (/^\s*#/.test(code)) {
        if (/^\s*#\s*pragma\s+once/.test(code)) continue;
        if (!/^\s*#\s*define\b/.test(code)) return null; // #if, #include …: not split
        cur.push(line);
        while (lines[i]!.trimEnd().endsWith("\\") && i + 1 < lines.length) cur.push(lines[++i]!);
        flush();
        continue;
      }
    }
    cur.push(line);
    for (const c of code) depth += c === "{" ? 1 : c === "}" ? -1 : 0;
    if (depth < 0) return null;
    const end = code.trim();
    if (depth === 0 && (end.endsWith(";") || end.endsWith("}") || /^[A-Z][A-Z0-9_]*\(.*\)$/.test(end))) flush();
  }
  return depth === 0 && cur.length === 0 ? decls : null;
}

/** The declarations needed for `names` (and what they need), in header order. */
export function neededDeclarations(decls: readonly Decl[], names: Iterable<string>): Decl[] {
  const definedBy = new Map<string, number[]>();
  const members = new Map<string, number[]>();
  decls.forEach((d, i) => {
    for (const n of d.defines) definedBy.set(n, [...(definedBy.get(n) ?? []), i]);
    if (d.owner !== null) members.set(d.owner, [...(members.get(d.owner) ?? []), i]);
  });
  const keep = new Set<number>();
  // Declarations that declare nothing this can name are kept (never dropped by mistake).
  decls.forEach((d, i) => {
    if (d.defines.length === 0 && d.owner === null) keep.add(i);
  });
  const seen = new Set<string>();
  const work = [...names];
  for (const i of keep) work.push(...decls[i]!.refs);
  while (work.length > 0) {
    const n = work.pop()!;
    if (seen.has(n)) continue;
    seen.add(n);
    for (const i of [...(definedBy.get(n) ?? []), ...(members.get(n) ?? [])]) {
      if (keep.has(i)) continue;
      keep.add(i);
      work.push(...decls[i]!.refs);
    }
  }
  return decls.filter((_, i) => keep.has(i));
}

let split: Decl[] | null | undefined;
const headers = new Map<string, string>();

/** The header for fused kernels calling `functors` (`Exp`, `Cast<float>` …). */
export function fusedHeader(functors: Iterable<string>): string {
  const names = [...new Set([...functors].map((f) => f.replace(/<.*$/, "")))].sort();
  const key = names.join(",");
  let h = headers.get(key);
  if (h !== undefined) return h;
  if (split === undefined) {
    const raw = readFileSync(resolve(KERNEL_DIR, "elementwise_ops.h"), "utf8");
    split = /^[ \t]*#include\s+"utils\.h"[^\n]*$/m.test(raw) ? splitDeclarations(raw.replace(/^[ \t]*#include\s+"utils\.h"[^\n]*$/m, "")) : null;
  }
  h = split === null
    ? kernelSource("elementwise_ops.h")
    : `${kernelSource("utils.h")}\n// elementwise_ops.h: what ${names.join(", ")} need\n${neededDeclarations(split, names).map((d) => d.text).join("\n")}\n`;
  headers.set(key, h);
  return h;
}
