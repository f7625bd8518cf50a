// Generates the API reference, docs/api/*.md, from the TSDoc of the exports of ts/index.ts:
//
//   bun run scripts/api-docs.ts          # rewrites docs/api/
//
// It reads the program with the TypeScript compiler API (the `typescript` package: TypeScript 7,
// whose JavaScript API is `typescript/unstable/async`, a client of the native compiler — the
// synchronous client needs Node's pipe internals and does not run under Bun), and the signature
// tables through the options helper at run time (ts/core/options.ts): every exported name with its
// signature, its MLX name, the first sentence of its TSDoc, the options it takes and its examples.
// Each `@example` is run (on the CPU device, for outputs that do not depend on the machine) and its
// result printed under it. test/docs/api-docs.test.ts fails when an export lacks documentation or
// an example, when an exported declaration's type contains `any`, or when docs/api/ is stale.
import { API, SignatureKind, SymbolFlags, type Symbol as TsSymbol, type Type } from "typescript/unstable/async";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as mg from "../ts/index.ts";
import { type CallSpec, callSpec, signatureOf } from "../ts/core/options.ts";

const ROOT = join(import.meta.dir, "..");
const OUT = join(ROOT, "docs", "api");
const NO_TRUNCATION = 1; // TypeFormatFlags.NoTruncation

type Project = Awaited<ReturnType<API["updateSnapshot"]>>["getProjects"] extends () => readonly (infer P)[] ? P : never;
type Checker = Project["checker"];

/** One documented name. */
export interface Entry {
  /** "sum", "random.normal", "MgArray.sum", "nn.Linear". */
  key: string;
  /** Where it is rendered: "mg", "random", "nn" … (top-level namespaces), "MgArray". */
  page: string;
  kind: "function" | "class" | "value" | "type" | "method" | "property";
  /** Declarations as TypeScript prints them (functions: one line per overload). */
  signatures: string[];
  /** The TSDoc text (first sentence = the description). */
  doc: string;
  examples: string[];
  /** The call spec (MLX's name, options), for functions and methods. */
  spec?: CallSpec;
  /** Types of the options by name (positional parameters and the options object's properties). */
  optionTypes: Record<string, string>;
  /** Every type text of the declaration, without truncation (the `any` check reads these). */
  typeTexts: string[];
  /** TSDoc tags other than @example (e.g. @internal). */
  tags: string[];
  /** Where the documentation is written: file (relative to the root) and 1-based line. */
  source?: { file: string; line: number };
  /** The run-time function (aliases are the same function: mg.acos === mg.arccos). */
  value?: unknown;
  /** For an alias without its own documentation: the documented name of the same function. */
  aliasOf?: string;
}

// ---------------------------------------------------------------------------------------------
// Walking the exports

interface Walker {
  project: Project;
  checker: Checker;
  entries: Entry[];
}

const isFlag = (s: TsSymbol, f: number) => (s.flags & f) !== 0;

async function resolveAlias(w: Walker, s: TsSymbol): Promise<TsSymbol> {
  return isFlag(s, SymbolFlags.Alias) ? await w.checker.getAliasedSymbol(s) : s;
}

/** The symbol whose declaration holds a public function's implementation and TSDoc. */
async function implementationSymbol(w: Walker, exported: TsSymbol): Promise<TsSymbol> {
  const decl = await exported.valueDeclaration?.resolve(w.project);
  // `export const { sum, … } = publicFunctions("", reduceOps)`: the property of the initializer's
  // type, whose declaration is the implementation's.
  type NodeLike = { kind: number; parent?: NodeLike; initializer?: unknown; name?: { elements?: unknown } };
  let n = decl as unknown as NodeLike | undefined;
  while (n && !(n.initializer && n.name?.elements)) n = n.parent;
  if (n?.initializer) {
    const t = await w.checker.getTypeAtLocation(n.initializer as never);
    const prop = t && (await w.checker.getPropertyOfType(t, exported.name));
    const original = prop && (await prop.declarations[0]?.resolve(w.project));
    // `{ array: arrayOp }`: the property's value names the implementation.
    const init = (original as { initializer?: unknown } | undefined)?.initializer;
    if (init) {
      const s = await w.checker.getSymbolAtLocation(init as never);
      if (s) return await resolveAlias(w, s);
    }
    const name = (original as { name?: unknown } | undefined)?.name;
    if (name) {
      const s = await w.checker.getSymbolAtLocation(name as never);
      if (s) return await resolveAlias(w, s);
    }
  }
  // `export const grad = publicFunction("grad", gradImpl)`: the type is the implementation's.
  const t = await w.checker.getTypeOfSymbol(exported);
  const fnSymbol = t ? await t.getSymbol() : undefined;
  if (fnSymbol && isFlag(fnSymbol, SymbolFlags.Function)) return fnSymbol;
  return exported;
}

async function sourceOf(w: Walker, s: TsSymbol): Promise<{ file: string; line: number } | undefined> {
  const node = await (s.valueDeclaration ?? s.declarations[0])?.resolve(w.project);
  if (!node) return undefined;
  const sf = node.getSourceFile();
  const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
  return { file: sf.fileName.slice(ROOT.length + 1), line };
}

async function docOf(w: Walker, s: TsSymbol): Promise<{ doc: string; examples: string[]; tags: string[] }> {
  const doc = (await s.getDocumentationComment(w.checker)).trim();
  const tags = await s.getJsDocTags(w.checker);
  return {
    doc,
    examples: tags.filter((t) => t.name === "example").map((t) => (t.text ?? "").trim()).filter((t) => t !== ""),
    tags: tags.filter((t) => t.name !== "example").map((t) => t.name),
  };
}

/** `(a: X, b?: Y) => R` → `name(a: X, b?: Y): R`; overloads `{ (…): A; (…): B; }` → one each. */
function callSignatures(name: string, typeText: string): string[] {
  const text = typeText.trim();
  const parts = text.startsWith("{") && text.endsWith("}") ? splitTopLevel(text.slice(1, -1), ";") : [text];
  return parts.map((p) => p.trim()).filter((p) => p.startsWith("(") || p.startsWith("<")).map((p) => {
    const arrow = findTopLevelArrow(p);
    return arrow >= 0 ? `${name}${p.slice(0, arrow).trimEnd()}: ${p.slice(arrow + 2).trim()}` : `${name}${p}`;
  });
}

function splitTopLevel(s: string, sep: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if ("([{<".includes(ch)) depth++;
    else if (")]}>".includes(ch) && !(ch === ">" && s[i - 1] === "=")) depth--;
    else if (ch === sep && depth === 0) {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out;
}

/** The `=>` after a parameter list (generic parameters and nested arrows skipped). */
function findTopLevelArrow(s: string): number {
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch === "=" && s[i + 1] === ">") {
      if (depth === 0) return i;
      i++;
      continue;
    }
    if ("([{<".includes(ch)) depth++;
    else if (")]}>".includes(ch)) depth--;
  }
  return -1;
}

async function typeText(w: Walker, t: Type | undefined): Promise<string> {
  return t ? stableTypeText(await w.checker.typeToString(t, undefined, NO_TRUNCATION)) : "unknown";
}

/**
 * The checker's text without what differs between checkouts and runs: `import("/abs/path/ts/x").`
 * qualifiers (the names are exported anyway) and the numeric ids of unique symbols
 * (`__@TREE_NODE@2950` is `[TREE_NODE]`).
 */
export function stableTypeText(text: string): string {
  return text.replace(/import\("[^"]*"\)\./g, "").replace(/__@([A-Za-z_$][\w$]*)@\d+/g, "[$1]");
}

/** Option types: the implementation's positional parameter types and its options object's properties. */
async function optionTypes(w: Walker, impl: TsSymbol, spec: CallSpec | undefined): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  if (!spec) return out;
  const t = await w.checker.getTypeOfSymbol(impl);
  const sigs = t ? await w.checker.getSignaturesOfType(t, SignatureKind.Call) : [];
  const sig = sigs[sigs.length - 1];
  if (!sig) return out;
  const params = await sig.getParameters();
  for (let i = 0; i < params.length; i++) {
    const p = params[i]!;
    const pt = await w.checker.getTypeOfSymbol(p);
    const name = spec.positional[i]?.name;
    if (name && i >= spec.required) out[name] = (await typeText(w, pt)).replace(/ \| undefined$/, "");
    if (i === spec.positional.length && pt) {
      // The options object: its properties (keyword-only parameters, stream).
      for (const prop of await w.checker.getPropertiesOfType((await w.checker.getNonNullableType(pt)) ?? pt)) {
        if (!(prop.name in out)) out[prop.name] = (await typeText(w, await w.checker.getTypeOfSymbol(prop))).replace(/ \| undefined$/, "");
      }
    }
  }
  return out;
}

async function addFunction(w: Walker, page: string, key: string, name: string, exported: TsSymbol, value: unknown): Promise<void> {
  const impl = await implementationSymbol(w, exported);
  const implType = await w.checker.getTypeOfSymbol(impl);
  const shownType = await typeText(w, implType);
  const exportedType = await typeText(w, await w.checker.getTypeOfSymbol(exported));
  const spec = signatureOf(value);
  let { doc, examples, tags } = await docOf(w, impl);
  if (!doc) ({ doc, examples, tags } = await docOf(w, exported));
  w.entries.push({
    key, page, kind: "function", signatures: callSignatures(name, shownType), doc, examples, tags, spec,
    optionTypes: await optionTypes(w, impl, spec), typeTexts: [shownType, exportedType], source: await sourceOf(w, impl), value,
  });
}

async function addClass(w: Walker, page: string, key: string, name: string, cls: TsSymbol): Promise<void> {
  const { doc, examples, tags } = await docOf(w, cls);
  const staticType = await w.checker.getTypeOfSymbol(cls);
  const ctors = staticType ? await w.checker.getSignaturesOfType(staticType, SignatureKind.Construct) : [];
  const signatures: string[] = [];
  const typeTexts: string[] = [];
  for (const c of ctors) {
    const params = await c.getParameters();
    const parts: string[] = [];
    for (const p of params) {
      const pt = await typeText(w, await w.checker.getTypeOfSymbol(p));
      parts.push(`${p.name}: ${pt}`);
      typeTexts.push(pt);
    }
    signatures.push(`new ${name}(${parts.join(", ")})`);
  }
  w.entries.push({ key, page, kind: "class", signatures, doc, examples, tags, spec: signatureOf(undefined), optionTypes: {}, typeTexts, source: await sourceOf(w, cls) });
  // Public instance members (documented on the class's page).
  const instance = await w.checker.getDeclaredTypeOfSymbol(cls);
  for (const m of await w.checker.getPropertiesOfType(instance)) {
    if (m.name.startsWith("_") || m.name.startsWith("__@")) continue;
    const decl = await m.valueDeclaration?.resolve(w.project);
    // Own members only (inherited ones are documented on their class): declared in this class or
    // in an augmentation of it (MgArray's methods are declared in `declare module` blocks).
    const container = (decl?.parent as { name?: { getText(): string } } | undefined)?.name?.getText();
    if (container !== name) continue;
    const text = decl?.getText() ?? "";
    if (/^\s*(private|protected)\b/.test(text) || /^\s*#/.test(text)) continue;
    const md = await docOf(w, m);
    if (md.tags.includes("internal")) continue;
    const mt = await typeText(w, await w.checker.getTypeOfSymbol(m));
    const isMethod = isFlag(m, SymbolFlags.Method) || (isFlag(m, SymbolFlags.Property) && mt.includes("=>") && !isFlag(m, SymbolFlags.GetAccessor));
    const proto = name === "MgArray" ? Object.getOwnPropertyDescriptor(mg.MgArray.prototype, m.name)?.value : undefined;
    const spec = typeof proto === "function" ? signatureOf(proto) : undefined;
    w.entries.push({
      key: `${key}.${m.name}`, page: name === "MgArray" ? "MgArray" : page, kind: isMethod ? "method" : "property",
      signatures: isMethod ? callSignatures(`${name === "MgArray" ? "a" : name.toLowerCase()}.${m.name}`, mt) : [`${m.name}: ${mt}`],
      doc: md.doc, examples: md.examples, tags: md.tags, spec, optionTypes: {}, typeTexts: [mt], source: await sourceOf(w, m),
    });
  }
}

/** A class made by a function (`export const ReLU = activationModule(…)`): its constructors. */
async function addClassValue(w: Walker, page: string, key: string, name: string, s: TsSymbol): Promise<void> {
  const { doc, examples, tags } = await docOf(w, s);
  const t = await w.checker.getTypeOfSymbol(s);
  const signatures: string[] = [];
  const typeTexts: string[] = [];
  for (const c of t ? await w.checker.getSignaturesOfType(t, SignatureKind.Construct) : []) {
    const parts: string[] = [];
    for (const p of await c.getParameters()) {
      const pt = await typeText(w, await w.checker.getTypeOfSymbol(p));
      parts.push(`${p.name}: ${pt}`);
      typeTexts.push(pt);
    }
    signatures.push(`new ${name}(${parts.join(", ")})`);
  }
  w.entries.push({ key, page, kind: "class", signatures, doc, examples, tags, optionTypes: {}, typeTexts, source: await sourceOf(w, s) });
}

async function addType(w: Walker, page: string, key: string, s: TsSymbol): Promise<void> {
  const { doc, examples, tags } = await docOf(w, s);
  const t = await w.checker.getDeclaredTypeOfSymbol(s);
  const typeTexts: string[] = [];
  let shown = await typeText(w, t);
  if (isFlag(s, SymbolFlags.Interface)) {
    const members: string[] = [];
    for (const p of await w.checker.getPropertiesOfType(t)) {
      const pt = await typeText(w, await w.checker.getTypeOfSymbol(p));
      members.push(`${p.name}${isFlag(p, SymbolFlags.Optional) ? "?" : ""}: ${pt}`);
      typeTexts.push(pt);
    }
    shown = `interface ${s.name} { ${members.join("; ")} }`;
  } else {
    const decl = await s.declarations[0]?.resolve(w.project);
    shown = (decl?.getText() ?? shown).replace(/^export\s+/, "").replace(/\s+/g, " ");
    typeTexts.push(await typeText(w, t));
  }
  w.entries.push({ key, page, kind: "type", signatures: [shown], doc, examples, tags, optionTypes: {}, typeTexts, source: await sourceOf(w, s) });
}

async function walkModule(w: Walker, mod: TsSymbol, prefix: string, page: string, runtime: Record<string, unknown>): Promise<void> {
  for (const exported of await w.checker.getExportsOfModule(mod)) {
    const s = await resolveAlias(w, exported);
    const name = exported.name;
    const key = prefix + name;
    const value = runtime[name];
    if (isFlag(s, SymbolFlags.ValueModule)) {
      await walkModule(w, s, `${key}.`, prefix === "" ? name : page, value as Record<string, unknown>);
    } else if (isFlag(s, SymbolFlags.Class)) {
      await addClass(w, page, key, name, s);
    } else if ((isFlag(s, SymbolFlags.Function) || isFlag(s, SymbolFlags.Variable)) && value === undefined && prefix !== "MgArray.") {
      continue; // a value re-exported with `export type *`: a type-only name, not part of the API
    } else if (isFlag(s, SymbolFlags.Variable) && typeof value === "function" && /^class[\s{]/.test(Function.prototype.toString.call(value))) {
      await addClassValue(w, page, key, name, s);
    } else if (isFlag(s, SymbolFlags.Function) || (isFlag(s, SymbolFlags.Variable) && typeof value === "function")) {
      await addFunction(w, page, key, name, exported, value);
    } else if (isFlag(s, SymbolFlags.Variable) && isFunctionNamespace(value)) {
      // A namespace object (mg.nn.losses): its functions, documented under the same page.
      const t = await w.checker.getTypeOfSymbol(exported);
      const { doc } = await docOf(w, exported);
      w.entries.push({ key, page, kind: "value", signatures: [`${key}`], doc, examples: [], tags: [], optionTypes: {}, typeTexts: [] });
      for (const prop of t ? await w.checker.getPropertiesOfType(t) : []) {
        await addFunction(w, page, `${key}.${prop.name}`, prop.name, prop, (value as Record<string, unknown>)[prop.name]);
      }
    } else if (isFlag(s, SymbolFlags.Variable)) {
      const { doc, examples, tags } = await docOf(w, s);
      const t = await typeText(w, await w.checker.getTypeOfSymbol(s));
      w.entries.push({ key, page, kind: "value", signatures: [`${name}: ${t}`], doc, examples, tags, optionTypes: {}, typeTexts: [t], source: await sourceOf(w, s) });
    } else if (isFlag(s, SymbolFlags.TypeAlias) || isFlag(s, SymbolFlags.Interface)) {
      await addType(w, page, key, s);
    }
  }
}

function isFunctionNamespace(v: unknown): boolean {
  if (!v || typeof v !== "object" || Object.getPrototypeOf(v) !== Object.prototype) return false;
  const values = Object.values(v);
  return values.length > 0 && values.every((f) => typeof f === "function");
}

/** Every documented name of the public API, from the TypeScript program and the runtime. */
export async function collect(): Promise<Entry[]> {
  const api = new API({ cwd: ROOT });
  try {
    const snap = await api.updateSnapshot({ openProject: join(ROOT, "tsconfig.json") });
    const project = snap.getProjects()[0]!;
    const checker = project.checker;
    const sf = await project.program.getSourceFile(join(ROOT, "ts", "index.ts"));
    const mod = sf && (await checker.getSymbolAtLocation(sf as never));
    if (!mod) throw new Error("[api-docs] ts/index.ts has no module symbol");
    const w: Walker = { project, checker, entries: [] };
    await walkModule(w, mod, "", "mg", mg as unknown as Record<string, unknown>);
    // Aliases (MLX's too: mx.acos is mx.arccos) point to the documented name of the same function.
    for (const e of w.entries) {
      if (e.kind !== "function" || e.doc !== "" || e.value === undefined) continue;
      const documented = w.entries.find((o) => o !== e && o.value === e.value && o.doc !== "");
      if (documented) e.aliasOf = documented.key;
    }
    return w.entries.sort((a, b) => a.key.localeCompare(b.key));
  } finally {
    await api.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Examples

const transpiler = new Bun.Transpiler({ loader: "ts" });

/**
 * Runs an example (TypeScript; `mg` in scope; its last line an expression) with the CPU as the
 * default device after seeding the global PRNG, and returns what it prints. Throws, naming the
 * entry, when it fails.
 */
export function runExample(key: string, code: string): string {
  const lines = code.split("\n");
  const last = lines.pop()!.trim().replace(/;$/, "");
  const body = `${lines.join("\n")}\nreturn (${last});`;
  const js = transpiler.transformSync(body);
  const fn = new Function("mg", js) as (m: typeof mg) => unknown;
  mg.random.seed(0);
  // The CPU device by default; what an example changes globally (the default device, compile's
  // switch) is put back, so examples neither depend on nor affect what runs around them.
  const device = mg.defaultDevice();
  mg.setDefaultDevice(mg.cpu);
  let value: unknown;
  try {
    value = fn(mg);
  } catch (e) {
    throw new Error(`[api-docs] the example of ${key} failed: ${(e as Error).message}\n${code}`, { cause: e });
  } finally {
    mg.setDefaultDevice(device);
    mg.enableCompile();
  }
  return show(value);
}

function show(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (value instanceof mg.MgArray) return value.toString();
  if (Array.isArray(value) && value.some((v) => v instanceof mg.MgArray)) return `[${value.map(show).join(",\n ")}]`;
  return Bun.inspect(value, { depth: 4 });
}

// ---------------------------------------------------------------------------------------------
// Rendering

/** Python's default as JavaScript writes it (None → null, True → true, 'x' → "x"). */
function jsDefault(d: string): string {
  if (d === "None") return "null";
  if (d === "True") return "true";
  if (d === "False") return "false";
  const q = d.match(/^'(.*)'$/);
  if (q) return JSON.stringify(q[1]);
  return d.replace(/\bmlx\.core\./g, "mg.").replace(/^float32$|^int32$|^bfloat16$/, (m) => `mg.${m}`);
}

const pageTitle = (page: string) => (page === "mg" ? "mg" : page === "MgArray" ? "MgArray (array methods)" : `mg.${page}`);
/** GitHub's heading anchor: lower case, punctuation dropped, spaces as hyphens. */
const anchor = (heading: string) => heading.toLowerCase().replace(/[^a-z0-9 _-]/g, "").replace(/ /g, "-");
const SECTION: Record<Entry["kind"], string> = {
  function: "Functions", class: "Classes", method: "Methods", property: "Properties", value: "Values", type: "Types",
};

/** A function's signature as shown: its TypeScript declaration, or (for `...rest` forms) one built from its spec. */
function shownSignatures(e: Entry, qualified: string): string[] {
  const readable = e.signatures.filter((sig) => !/Forms<|\.\.\.rest:/.test(sig));
  if (readable.length > 0 && readable.length === e.signatures.length) return readable.map((sig) => qualified + sig.slice(sig.indexOf("(")));
  if (!e.spec) return e.signatures;
  const first = e.signatures[0] ?? "";
  const declared = new Map(splitTopLevel(first.slice(first.indexOf("(") + 1, first.lastIndexOf("):")), ",").map((p) => {
    const m = p.trim().match(/^([\w$]+)(\??):\s*([^]*)$/);
    return m ? [m[1]!, m[3]!.trim()] as const : ["", ""] as const;
  }));
  const ret = first.slice(first.lastIndexOf("):") + 2).trim();
  const fromRest = restOptionTypes(first);
  const usable = (t: string | undefined) => (t && !t.startsWith("[") && t !== "unknown[]" ? t : undefined);
  const params = e.spec.positional.map((p, i) => {
    const t = usable(declared.get(p.name)) ?? fromRest[p.name] ?? usable(e.optionTypes[p.name]) ?? "unknown";
    return i < e.spec!.required ? `${p.name}: ${t}` : `${p.name}?: ${t}`;
  });
  if (e.spec.variadic) params.push(`...${e.spec.variadic}: unknown[]`);
  if (e.spec.accepted.length > 0) params.push("options?: { … }");
  return [`${qualified}(${params.join(", ")})${ret ? `: ${ret}` : ""}`];
}

/** The option types a `...rest: Trailing<…, { a?: A; b?: B }>` parameter spells: its first object type. */
function restOptionTypes(signature: string): Record<string, string> {
  const at = signature.search(/\brest\??: \[/);
  if (at < 0) return {};
  const open = signature.indexOf("{", at);
  if (open < 0) return {};
  let depth = 0;
  let close = open;
  for (; close < signature.length; close++) {
    if (signature[close] === "{") depth++;
    else if (signature[close] === "}" && --depth === 0) break;
  }
  const out: Record<string, string> = {};
  for (const member of splitTopLevel(signature.slice(open + 1, close), ";")) {
    const m = member.trim().match(/^([\w$]+)\??:\s*([^]*)$/);
    if (m) out[m[1]!] = m[2]!.trim().replace(/ \| undefined$/, "");
  }
  return out;
}

/** A constructor's signature: as declared, or (for `...rest` forms) built from MLX's signature. */
function shownConstructor(e: Entry, qualified: string): string[] {
  const spec = callSpec(e.key);
  if (!spec || !e.signatures.some((sig) => /\brest\??: /.test(sig))) return e.signatures.map((sig) => sig.replace(/^new [\w$]+/, `new ${qualified}`));
  const first = e.signatures[0]!;
  const types = { ...restOptionTypes(first) };
  for (const p of splitTopLevel(first.slice(first.indexOf("(") + 1, first.lastIndexOf(")")), ",")) {
    const m = p.trim().match(/^([\w$]+)\??:\s*([^]*)$/);
    if (m && m[1] !== "rest") types[m[1]!] = m[2]!.trim();
  }
  const params = spec.positional.map((p, i) => `${p.name}${i < spec.required ? "" : "?"}: ${types[p.name] ?? "unknown"}`);
  if (spec.accepted.length > 0) params.push("options?: { … }");
  return [`new ${qualified}(${params.join(", ")})`];
}

function optionsTable(e: Entry): string[] {
  const spec = e.spec ?? (e.kind === "class" ? callSpec(e.key) : undefined);
  if (spec && e.kind === "class" && Object.keys(e.optionTypes).length === 0) Object.assign(e.optionTypes, restOptionTypes(e.signatures[0] ?? ""));
  if (!spec || spec.accepted.length === 0) return [];
  const restTypes = restOptionTypes(e.signatures[0] ?? "");
  for (const [k, v] of Object.entries(restTypes)) if (!e.optionTypes[k] || e.optionTypes[k]!.includes("[")) e.optionTypes[k] = v;
  const rows = spec.accepted.map((name) => {
    const at = spec.positional.findIndex((p) => p.name === name);
    const param = at >= 0 ? spec.positional[at]! : spec.keywords.find((p) => p.name === name)!;
    const where = at >= 0 ? `positional ${at + 1} or by name` : "by name";
    const known = e.optionTypes[name] && e.optionTypes[name] !== "unknown[]" ? e.optionTypes[name] : name === "stream" ? "StreamOrDevice | null" : undefined;
    const type = known ? `\`${known.replace(/\|/g, "\\|")}\`` : "";
    const dflt = param.default === undefined ? "required" : `\`${jsDefault(param.default).replace(/\|/g, "\\|")}\``;
    return `| \`${name}\` | ${type} | ${dflt} | ${where} |`;
  });
  return ["", "| option | type | default (MLX's) | given |", "|---|---|---|---|", ...rows];
}

function renderEntry(e: Entry, outputs: Map<string, string[]>): string[] {
  const name = e.key.startsWith("MgArray.") ? `a.${e.key.slice("MgArray.".length)}` : `mg.${e.key}`;
  const out = [`### ${name}`, ""];
  const sigs = e.kind === "function" || e.kind === "method" ? shownSignatures(e, name) : e.kind === "class" ? shownConstructor(e, name) : e.signatures;
  out.push("```ts", ...sigs, "```", "");
  const classSpec = e.kind === "class" ? callSpec(e.key) : undefined;
  if (classSpec?.mlx) out.push(`MLX: \`${classSpec.mlx}\``, "");
  if (e.spec?.mlx) out.push(`MLX: \`${e.spec.mlx.replace(/^mlx\.core\.array\./, "mlx.core.array.")}\`${e.spec.note ? ` — ${e.spec.note}` : ""}`, "");
  else if (e.spec?.note) out.push(`metalgrad: ${e.spec.note}`, "");
  if (e.aliasOf) out.push(`The same function as [mg.${e.aliasOf}](#${anchor(`mg.${e.aliasOf}`)}).`, "");
  if (e.doc) out.push(e.doc.split("\n").map((l) => l.trim()).join("\n"), "");
  const table = optionsTable(e);
  if (table.length > 0) out.push(...table.slice(1), "");
  e.examples.forEach((code, i) => {
    const printed = outputs.get(e.key)![i]!;
    out.push("```ts", code, ...printed.split("\n").map((l) => `// ${l}`.trimEnd()), "```", "");
  });
  return out;
}

/** The reference: one markdown file per page, keyed by file name. */
export function render(entries: Entry[]): Map<string, string> {
  const outputs = new Map<string, string[]>();
  for (const e of entries) outputs.set(e.key, e.examples.map((code) => runExample(e.key, code)));
  const pages = [...new Set(entries.map((e) => e.page))].sort((a, b) => (a === "mg" ? -1 : b === "mg" ? 1 : a.localeCompare(b)));
  const files = new Map<string, string>();
  const index = [
    "# metalgrad API reference",
    "",
    "Generated from the TSDoc of the exports by `bun run scripts/api-docs.ts` (do not edit by hand;",
    "test/docs/api-docs.test.ts fails when it is stale). Every example ran on the CPU device (after",
    "`mg.random.seed(0)`); the lines under it are what it printed.",
    "",
    "Conventions (MLX's, in camelCase): positional parameters in MLX's order; keyword-only parameters",
    "and `stream` in a trailing options object, which also takes any parameter that has a default by",
    "name (`mg.sum(x, { axis: 1 })`); an unknown option is an error naming the op and the accepted",
    "names. JS literals: integral numbers are int32 (int64 beyond int32, up to ±2^53; float32 beyond),",
    "other numbers float32, booleans bool_, bigints int64.",
    "",
    "| page | names |",
    "|---|---|",
  ];
  for (const page of pages) {
    const list = entries.filter((e) => e.page === page);
    index.push(`| [${pageTitle(page)}](${page}.md) | ${list.length} |`);
    const body = [`# ${pageTitle(page)}`, "", "[API reference](README.md)", ""];
    for (const kind of ["function", "class", "method", "property", "value", "type"] as const) {
      const group = list.filter((e) => e.kind === kind);
      if (group.length === 0) continue;
      body.push(`## ${SECTION[kind]}`, "", group.map((e) => `[${e.key}](#${anchor(e.key.startsWith("MgArray.") ? `a.${e.key.slice(8)}` : `mg.${e.key}`)})`).join(" · "), "");
      for (const e of group) body.push(...renderEntry(e, outputs));
    }
    files.set(`${page}.md`, stableTypeText(`${body.join("\n").trimEnd()}\n`));
  }
  files.set("README.md", `${index.join("\n")}\n`);
  return files;
}

/** What the docs test checks: undocumented names, missing examples, `any` in exported types. */
export function problems(entries: Entry[]): { undocumented: string[]; noExample: string[]; any: string[] } {
  const needsDoc = (e: Entry) => e.kind !== "property" || e.page === "MgArray";
  return {
    undocumented: entries.filter((e) => needsDoc(e) && e.doc === "" && !e.aliasOf).map((e) => e.key),
    noExample: entries.filter((e) => (e.kind === "function" || e.kind === "class") && e.examples.length === 0 && !e.aliasOf).map((e) => e.key),
    any: entries.filter((e) => e.typeTexts.some((t) => /(^|[^\w.'"$])any(?![\w'"$])/.test(t))).map((e) => e.key),
  };
}

if (import.meta.main && process.argv.includes("--todo")) {
  // What still needs writing, as JSON (for editors and scripts): key, kind, where, current doc.
  const entries = await collect();
  const p = problems(entries);
  const todo = entries.filter((e) => p.undocumented.includes(e.key) || p.noExample.includes(e.key));
  console.log(JSON.stringify(todo.map((e) => ({ key: e.key, kind: e.kind, source: e.source, doc: e.doc, sig: e.signatures[0], mlx: e.spec?.mlx ?? null }))));
  process.exit(0);
}

if (import.meta.main) {
  const entries = await collect();
  const files = render(entries);
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  for (const [name, text] of files) writeFileSync(join(OUT, name), text);
  const p = problems(entries);
  console.log(`${entries.length} names in ${files.size} files under docs/api/`);
  for (const [what, keys] of Object.entries(p)) if (keys.length > 0) console.log(`${what} (${keys.length}): ${keys.join(" ")}`);
}
