// A summary of the kernel trace of one training step: which kernels ran and how often, which were
// fused (one kernel computing several primitives, or one of mg.fast's fused ops), at which
// internal precision, and every copy or fallback the backends noted.
import type { TraceRecord } from "../../ts/index.ts";

/** Records of mg.fast's fused ops (forward and backward): one kernel for what is otherwise many. */
const FAST_PRIMITIVES = new Set([
  "RMSNorm", "RMSNormVJP", "LayerNorm", "LayerNormVJP", "RoPE", "ScaledDotProductAttention", "ScaledDotProductAttentionVJP",
  "CrossEntropy", "CrossEntropyVJP",
]);

export function isFused(r: TraceRecord): boolean {
  return r.primitives.length > 1 || r.primitives.some((p) => FAST_PRIMITIVES.has(p));
}

/** A kernel's family: generated fused kernels differ only by a hash ("mg_fused_3ca4…" → "mg_fused_*"). */
export function kernelFamily(kernel: string): string {
  return kernel.replace(/_[0-9a-f]{8,}$/, "_*");
}

/** A note without the ids of the arrays it names, so notes of the same kind count together. */
export function noteKind(note: string): string {
  return note.replace(/ ?#\d+/g, "");
}

export interface KernelRow {
  kernel: string;
  runs: number;
  fused: boolean;
  primitives: string[];
  precisions: string[];
}

export interface KernelSummary {
  runs: number;
  fusedRuns: number;
  /** Runs of mg.fast's fused ops. */
  fastRuns: number;
  rows: KernelRow[];
  /** Runs per internal precision. */
  precisions: [string, number][];
  /** Distinct notes (copies, fallbacks) with how often each appeared. */
  notes: [string, number][];
}

export function summarize(records: readonly TraceRecord[]): KernelSummary {
  const rows = new Map<string, KernelRow>();
  const precisions = new Map<string, number>();
  const notes = new Map<string, number>();
  let fusedRuns = 0;
  let fastRuns = 0;
  for (const r of records) {
    const fused = isFused(r);
    if (fused) fusedRuns++;
    if (r.primitives.some((p) => FAST_PRIMITIVES.has(p))) fastRuns++;
    const key = kernelFamily(r.kernel);
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { kernel: key, runs: 0, fused: false, primitives: [], precisions: [] }));
    row.runs++;
    row.fused ||= fused;
    for (const p of r.primitives) if (!row.primitives.includes(p)) row.primitives.push(p);
    if (!row.precisions.includes(r.precision)) row.precisions.push(r.precision);
    precisions.set(r.precision, (precisions.get(r.precision) ?? 0) + 1);
    for (const n of r.notes.map(noteKind)) notes.set(n, (notes.get(n) ?? 0) + 1);
  }
  const byRuns = <T extends [string, number]>(a: T, b: T) => b[1] - a[1] || a[0].localeCompare(b[0]);
  return {
    runs: records.length, fusedRuns, fastRuns,
    rows: [...rows.values()].sort((a, b) => b.runs - a.runs || a.kernel.localeCompare(b.kernel)),
    precisions: [...precisions.entries()].sort(byRuns),
    notes: [...notes.entries()].sort(byRuns),
  };
}

function clip(s: string, n: number): string {
  return s.length <= n ? s : `${s.slice(0, n - 1)}…`;
}

/** The summary as text lines: totals, the `top` most frequent kernels, precisions, notes. */
export function formatSummary(s: KernelSummary, top = 12): string[] {
  const lines = [
    `${s.runs} kernel runs: ${s.fusedRuns} fused (${s.fastRuns} of them mg.fast ops), ${s.runs - s.fusedRuns} single-primitive`,
  ];
  const kw = Math.min(46, Math.max(6, ...s.rows.slice(0, top).map((r) => r.kernel.length)));
  lines.push(`  ${"kernel".padEnd(kw)} ${"runs".padStart(5)}  fused  primitives`);
  for (const r of s.rows.slice(0, top)) {
    lines.push(`  ${clip(r.kernel, kw).padEnd(kw)} ${String(r.runs).padStart(5)}  ${(r.fused ? "yes" : "no").padEnd(5)}  ${clip(r.primitives.join(","), 60)}`);
  }
  if (s.rows.length > top) {
    const rest = s.rows.slice(top);
    lines.push(`  … ${rest.length} more kernels (${rest.reduce((n, r) => n + r.runs, 0)} runs)`);
  }
  lines.push("  precision:");
  for (const [p, n] of s.precisions) lines.push(`    ${String(n).padStart(5)}  ${p}`);
  if (s.notes.length) {
    lines.push("  copies and fallbacks the backends noted:");
    for (const [note, n] of s.notes.slice(0, 8)) lines.push(`    ${String(n).padStart(5)}× ${clip(note, 100)}`);
    if (s.notes.length > 8) lines.push(`    … ${s.notes.length - 8} more distinct notes`);
  } else lines.push("  no copies or fallbacks noted");
  return lines;
}
