// The shape of ts/'s import graph (docs/ARCHITECTURE.md, "Primitives, rules and backends"):
// - no import cycle: runtime imports (static, side-effect, re-exports, dynamic import()) form no
//   circle at all; with type-only imports (`import type`, `{ type X }`, `export type`, inline
//   `import("…").T`) counted too, the only circles are the allow-listed ones below;
// - the core never imports a backend (nor mentions one in a comment);
// - every module imports alone, in a fresh process (no hidden dependence on load order).
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(import.meta.dir, "../..");
const tsDir = join(root, "ts");

/**
 * Cycles allowed when type-only imports count, each the exact set of files of one strongly
 * connected component. They never hold a runtime import (checked separately): types are erased,
 * so they cannot change what runs first.
 */
const ALLOWED_TYPE_CYCLES: { files: string[]; reason: string }[] = [
  {
    files: ["ts/core/array.ts", "ts/core/primitive.ts"],
    reason:
      "MgArray → Node → Primitive → MgArray are mutually recursive types: an array's node points at its " +
      "primitive's record, whose rules take and return arrays. Type-only in both directions.",
  },
];

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith(".ts") ? [p] : [];
  });
}

const files = tsFiles(tsDir).sort();
const rel = (p: string) => relative(root, p);
const transpiler = new Bun.Transpiler({ loader: "ts" });

interface Edges {
  /** Imports that run (kept in the emitted JavaScript under verbatimModuleSyntax). */
  runtime: Set<string>;
  /** Every import, type-only ones included. */
  all: Set<string>;
}

/** Source without comments that start a line (their text may mention imports). */
function withoutComments(src: string): string {
  return src.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

function importsOf(file: string): Edges {
  const src = readFileSync(file, "utf8");
  const target = (spec: string) => (spec.startsWith(".") ? rel(resolve(dirname(file), spec)) : null);
  const runtime = new Set<string>();
  for (const imp of transpiler.scanImports(src)) {
    const t = target(imp.path);
    if (t) runtime.add(t);
  }
  const all = new Set(runtime);
  const code = withoutComments(src);
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*["']([^"']+)["']/g,
    /\bimport\s*["']([^"']+)["']/g,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const re of patterns) {
    for (const m of code.matchAll(re)) {
      const t = target(m[1]!);
      if (t) all.add(t);
    }
  }
  return { runtime, all };
}

const graph = new Map<string, Edges>(files.map((f) => [rel(f), importsOf(f)]));

/** Strongly connected components with more than one file (or a file importing itself). */
function cycles(edges: (file: string) => Iterable<string>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges(v)) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || [...edges(v)].includes(v)) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

/** One circle through a component, for the failure message: a.ts → b.ts → … → a.ts. */
function circleIn(scc: readonly string[], edges: (file: string) => Iterable<string>): string {
  const inside = new Set(scc);
  const start = scc[0]!;
  const parent = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of edges(v)) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let u = v; u !== start; u = parent.get(u)!) path.splice(1, 0, u);
        return [...path, start].join(" → ");
      }
      if (!parent.has(w)) {
        parent.set(w, v);
        queue.push(w);
      }
    }
  }
  return scc.join(", ");
}

describe("the import graph of ts/", () => {
  test("finds every module and its imports", () => {
    expect(files.length).toBeGreaterThan(90);
    expect(graph.get("ts/index.ts")!.runtime.has("ts/backend/gpu/index.ts")).toBe(true);
    // Type-only imports are told apart from runtime ones.
    expect(graph.get("ts/core/array.ts")!.runtime.has("ts/core/primitive.ts")).toBe(false);
    expect(graph.get("ts/core/array.ts")!.all.has("ts/core/primitive.ts")).toBe(true);
  });

  test("runtime imports form no cycle", () => {
    const found = cycles((f) => graph.get(f)!.runtime).map((scc) => circleIn(scc, (f) => graph.get(f)!.runtime));
    expect(found).toEqual([]);
  });

  test("with type-only imports, the only cycles are the allow-listed ones", () => {
    const allowed = new Set(ALLOWED_TYPE_CYCLES.map((c) => [...c.files].sort().join(" ")));
    const found = cycles((f) => graph.get(f)!.all);
    const unexpected = found.filter((scc) => !allowed.has(scc.join(" "))).map((scc) => circleIn(scc, (f) => graph.get(f)!.all));
    expect(unexpected).toEqual([]);
    // An entry that no longer matches a cycle is stale: remove it.
    const present = new Set(found.map((scc) => scc.join(" ")));
    expect([...allowed].filter((a) => !present.has(a))).toEqual([]);
  });

  test("the core never imports a backend, nor points into one in a comment", () => {
    const offending: string[] = [];
    for (const f of files.filter((f) => rel(f).startsWith("ts/core/"))) {
      readFileSync(f, "utf8").split("\n").forEach((line, i) => {
        if (line.includes("backend/")) offending.push(`${rel(f)}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offending).toEqual([]);
  });
});

describe("every module of ts/ imports alone in a fresh process", () => {
  test("no import throws", async () => {
    // Two at a time: the machine is shared.
    const failures: string[] = [];
    const queue = [...files];
    const worker = async () => {
      for (let f = queue.shift(); f !== undefined; f = queue.shift()) {
        const child = Bun.spawn([process.execPath, "-e", `await import(${JSON.stringify(f)})`], {
          cwd: root,
          env: { ...process.env, MG_TRACE: "0" },
          stdout: "pipe",
          stderr: "pipe",
        });
        const [code, err] = await Promise.all([child.exited, new Response(child.stderr).text()]);
        if (code !== 0) failures.push(`${rel(f)} (exit ${code}): ${err.trim().split("\n").slice(-6).join(" | ")}`);
      }
    };
    await Promise.all([worker(), worker()]);
    expect(failures).toEqual([]);
  }, 600_000);
});
