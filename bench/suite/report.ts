// bench.ts's output: a text table per case, a Markdown summary, the JSON rows
// (bench/results/latest.json) and a self-contained HTML report with bar charts (inline SVG and
// CSS; no script, no external reference).
import type { Summary } from "./stats.ts";
import type { Work } from "./cases.ts";

export type System = "metalgrad" | "MLX" | "numpy";
export const SYSTEMS: readonly System[] = ["metalgrad", "MLX", "numpy"];

export interface Measurement {
  system: System;
  /** "cpu", "gpu", or "gpu-sim" (metalgrad's GPU on the Metal simulator). */
  device: string;
  summary?: Summary;
  /** Why there is no number. */
  na?: string;
}

export interface CaseResult {
  id: string;
  group: string;
  work: Work;
  measurements: Measurement[];
}

export interface Row {
  case: string;
  group: string;
  system: System;
  device: string;
  /** Median milliseconds per run; null when not available. */
  value: number | null;
  unit: "ms";
  n: number;
  /** Interquartile range of the runs, in ms. */
  spread: number | null;
  note?: string;
}

export function rows(results: readonly CaseResult[]): Row[] {
  return results.flatMap((r) => r.measurements.map((m): Row => ({
    case: r.id, group: r.group, system: m.system, device: m.device,
    value: m.summary ? round(m.summary.median) : null, unit: "ms", n: m.summary?.n ?? 0,
    spread: m.summary ? round(m.summary.spread) : null, ...(m.na ? { note: m.na } : {}),
  })));
}

function round(v: number): number {
  return Number(v.toPrecision(5));
}

/** "0.0123 ms", "12.3 ms", "1.23 s". */
export function formatMs(ms: number): string {
  if (ms >= 1000) return `${(ms / 1000).toPrecision(3)} s`;
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 1) return `${ms.toPrecision(3)} ms`;
  return `${ms.toPrecision(2)} ms`;
}

/** Throughput of one run of `work` taking `ms`: GFLOP/s for compute, GB/s for memory-bound cases. */
export function rate(work: Work, ms: number): string {
  if (work.flops) return `${(work.flops / ms / 1e6).toPrecision(3)} GFLOP/s`;
  if (work.bytes) return `${(work.bytes / ms / 1e6).toPrecision(3)} GB/s`;
  return "";
}

/** The device's MLX measurement (the GPU-simulator compares with nothing). */
function mlxOn(r: CaseResult, device: string): Measurement | undefined {
  return r.measurements.find((m) => m.system === "MLX" && m.device === device && m.summary);
}

/** metalgrad's time over MLX's on the same device (> 1: metalgrad is slower). */
export function ratio(r: CaseResult, m: Measurement): number | null {
  if (m.system !== "metalgrad" || !m.summary) return null;
  const ref = mlxOn(r, m.device);
  return ref ? m.summary.median / ref.summary!.median : null;
}

export function formatRatio(x: number | null): string {
  if (x === null) return "";
  return x >= 10 ? `${x.toFixed(0)}×` : `${x.toPrecision(2)}×`;
}

/** The text table of one case. */
export function caseTable(r: CaseResult): string[] {
  const work = r.work.flops ? ` (${(r.work.flops / 1e9).toPrecision(3)} GFLOP)` : r.work.bytes ? ` (${(r.work.bytes / 2 ** 20).toPrecision(3)} MiB moved)` : "";
  const lines = [`${r.id}${work}`];
  lines.push(`  ${"system".padEnd(10)} ${"device".padEnd(8)} ${"median".padStart(9)} ${"IQR".padStart(10)} ${"n".padStart(3)}  ${"rate".padEnd(15)} mg/MLX`);
  for (const m of r.measurements) {
    if (!m.summary) {
      lines.push(`  ${m.system.padEnd(10)} ${m.device.padEnd(8)} not available: ${m.na ?? "?"}`);
      continue;
    }
    const s = m.summary;
    lines.push(
      `  ${m.system.padEnd(10)} ${m.device.padEnd(8)} ${formatMs(s.median).padStart(9)} ${formatMs(s.spread).padStart(10)} ${String(s.n).padStart(3)}  ${rate(r.work, s.median).padEnd(15)} ${formatRatio(ratio(r, m))}`,
    );
  }
  return lines;
}

/** Columns of the summary: every (system, device) that measured something, metalgrad's first. */
function columns(results: readonly CaseResult[]): { system: System; device: string }[] {
  const seen = new Map<string, { system: System; device: string }>();
  for (const r of results) for (const m of r.measurements) if (m.summary) seen.set(`${m.system}/${m.device}`, { system: m.system, device: m.device });
  return [...seen.values()].sort((a, b) => SYSTEMS.indexOf(a.system) - SYSTEMS.indexOf(b.system) || a.device.localeCompare(b.device));
}

/** A Markdown table of every case: median per system and device, and metalgrad/MLX per device. */
export function markdownSummary(results: readonly CaseResult[]): string[] {
  const cols = columns(results);
  const ratioDevices = [...new Set(cols.filter((c) => c.system === "metalgrad").map((c) => c.device))].filter((d) =>
    cols.some((c) => c.system === "MLX" && c.device === d));
  const head = ["case", ...cols.map((c) => `${c.system} ${c.device}`), ...ratioDevices.map((d) => `metalgrad/MLX ${d}`)];
  const lines = [`| ${head.join(" | ")} |`, `|${head.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`];
  for (const r of results) {
    const cells = cols.map((c) => {
      const m = r.measurements.find((x) => x.system === c.system && x.device === c.device);
      return m?.summary ? formatMs(m.summary.median) : "n/a";
    });
    const ratios = ratioDevices.map((d) => {
      const m = r.measurements.find((x) => x.system === "metalgrad" && x.device === d);
      return m ? formatRatio(ratio(r, m)) || "—" : "—";
    });
    lines.push(`| ${[r.id, ...cells, ...ratios].join(" | ")} |`);
  }
  return lines;
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

const COLORS: Record<System, string> = { metalgrad: "#1f5fa8", MLX: "#d9480f", numpy: "#2b8a3e" };

/** Horizontal bars of median times (log scale) for the cases of one group. */
export function groupChart(results: readonly CaseResult[]): string {
  const bars = results.flatMap((r) => r.measurements.filter((m) => m.summary).map((m) => ({ r, m })));
  if (bars.length === 0) return "";
  const values = bars.map((b) => b.m.summary!.median);
  const lo = Math.floor(Math.log10(Math.min(...values)));
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(...values))));
  const labelW = 170;
  const plotW = 520;
  const barH = 14;
  const x = (v: number) => labelW + ((Math.log10(v) - lo) / (hi - lo)) * plotW;
  const out: string[] = [];
  let y = 24;
  const body: string[] = [];
  for (const r of results) {
    const ms = r.measurements.filter((m) => m.summary);
    if (ms.length === 0) continue;
    body.push(`<text x="0" y="${y + 10}" font-weight="600">${escapeHtml(r.id.length > 60 ? `${r.id.slice(0, 59)}…` : r.id)}</text>`);
    y += 16;
    for (const m of ms) {
      const v = m.summary!.median;
      const q1 = Math.max(v - m.summary!.spread / 2, 10 ** lo);
      body.push(`<text x="${labelW - 6}" y="${y + barH - 3}" text-anchor="end">${m.system} ${m.device}</text>`);
      body.push(`<rect x="${labelW}" y="${y}" width="${(x(v) - labelW).toFixed(1)}" height="${barH}" fill="${COLORS[m.system]}"/>`);
      body.push(`<line x1="${x(q1).toFixed(1)}" x2="${x(v + m.summary!.spread / 2).toFixed(1)}" y1="${y + barH / 2}" y2="${y + barH / 2}" stroke="#000" stroke-width="1"/>`);
      body.push(`<text x="${(x(v + m.summary!.spread / 2) + 4).toFixed(1)}" y="${y + barH - 3}">${escapeHtml(formatMs(v))}</text>`);
      y += barH + 3;
    }
    y += 8;
  }
  for (let d = lo; d <= hi; d++) {
    out.push(`<line x1="${x(10 ** d).toFixed(1)}" x2="${x(10 ** d).toFixed(1)}" y1="18" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${x(10 ** d).toFixed(1)}" y="12" text-anchor="middle" fill="#555">${escapeHtml(formatMs(10 ** d))}</text>`);
  }
  const width = labelW + plotW + 80;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" viewBox="0 0 ${width} ${y}" font-family="system-ui, sans-serif" font-size="11">\n${[...out, ...body].join("\n")}\n</svg>`;
}

export interface ReportInfo {
  title: string;
  /** Lines describing the machine, versions and methodology. */
  facts: string[];
}

/** The whole report as one HTML page. */
export function html(results: readonly CaseResult[], info: ReportInfo): string {
  const groups = [...new Set(results.map((r) => r.group))];
  const parts = [
    "<!doctype html>",
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${escapeHtml(info.title)}</title>`,
    "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}table{border-collapse:collapse;margin:0.5em 0 1.5em}" +
      "td,th{border-bottom:1px solid #ddd;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}" +
      ".na{color:#888;text-align:left}.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}</style>",
    "</head><body>",
    `<h1>${escapeHtml(info.title)}</h1>`,
    `<ul>${info.facts.map((f) => `<li>${escapeHtml(f)}</li>`).join("")}</ul>`,
    `<p class="legend">${SYSTEMS.map((s) => `<span style="background:${COLORS[s]}"></span>${s}`).join("")} — bars: median time per run (log scale), whiskers: interquartile range</p>`,
  ];
  for (const g of groups) {
    const rs = results.filter((r) => r.group === g);
    parts.push(`<h2>${escapeHtml(g)}</h2>`, groupChart(rs));
    parts.push("<table><tr><th>case</th><th>system</th><th>device</th><th>median</th><th>IQR</th><th>n</th><th>rate</th><th>metalgrad/MLX</th></tr>");
    for (const r of rs) {
      for (const m of r.measurements) {
        if (!m.summary) {
          parts.push(`<tr><td>${escapeHtml(r.id)}</td><td>${m.system}</td><td>${escapeHtml(m.device)}</td><td colspan="5" class="na">not available: ${escapeHtml(m.na ?? "")}</td></tr>`);
          continue;
        }
        const s = m.summary;
        parts.push(
          `<tr><td>${escapeHtml(r.id)}</td><td>${m.system}</td><td>${escapeHtml(m.device)}</td><td>${escapeHtml(formatMs(s.median))}</td><td>${escapeHtml(formatMs(s.spread))}</td><td>${s.n}</td><td>${escapeHtml(rate(r.work, s.median))}</td><td>${escapeHtml(formatRatio(ratio(r, m)))}</td></tr>`,
        );
      }
    }
    parts.push("</table>");
  }
  parts.push("</body></html>");
  return parts.join("\n") + "\n";
}
