// Loss curves two ways: drawn in the terminal with braille dots (2×4 dots per character cell),
// and as a self-contained SVG file (no script, no external reference). Both put the y axis on a
// log scale when asked, since a training loss spans decades.

export interface Series {
  name: string;
  /** [x, y] points in x order; non-finite y values are skipped. */
  points: readonly (readonly [number, number])[];
  color?: string;
  /** Line width in the SVG (default 1.5). */
  width?: number;
  /** Draw dots instead of a line (SVG). */
  dots?: boolean;
  /** Plot against the right axis, which spans [0, 1] (an accuracy). */
  rightAxis?: boolean;
}

/** Exponential moving average with the bias correction (Adam's): the first values are not pulled to 0. */
export function smooth(values: readonly number[], beta = 0.9): number[] {
  let m = 0;
  return values.map((v, i) => {
    m = beta * m + (1 - beta) * v;
    return m / (1 - beta ** (i + 1));
  });
}

interface Range {
  lo: number;
  hi: number;
}

function rangeOf(values: readonly number[], log: boolean): Range {
  const vs = values.filter((v) => Number.isFinite(v) && (!log || v > 0)).map((v) => (log ? Math.log10(v) : v));
  if (vs.length === 0) return { lo: 0, hi: 1 };
  let lo = Math.min(...vs);
  let hi = Math.max(...vs);
  if (hi - lo < 1e-12) {
    lo -= 0.5;
    hi += 0.5;
  }
  return { lo, hi };
}

/** A short label for an axis value. */
export function formatTick(v: number): string {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e4 || a < 1e-3) return v.toExponential(0).replace("e+", "e");
  if (a >= 100) return v.toFixed(0);
  if (a >= 1) return String(Number(v.toPrecision(3)));
  return String(Number(v.toPrecision(2)));
}

export interface TerminalPlotOptions {
  /** Plot width in character cells (the y labels come on top of this). */
  width?: number;
  /** The x value of the first point (default 0); the axis shows the first and last x. */
  xStart?: number;
  height?: number;
  logY?: boolean;
}

/**
 * y values (at x = 0, 1, 2 …) as lines of braille characters with a y axis on the left and the x
 * range underneath. Each column of dots takes the mean of the values falling in it.
 */
export function terminalPlot(values: readonly number[], o: TerminalPlotOptions = {}): string[] {
  const width = o.width ?? 60;
  const height = o.height ?? 12;
  const log = o.logY ?? false;
  const cols = width * 2;
  const rows = height * 4;
  const ys: (number | null)[] = [];
  for (let c = 0; c < cols; c++) {
    const from = Math.floor((c * values.length) / cols);
    const to = Math.max(from + 1, Math.floor(((c + 1) * values.length) / cols));
    const slice = values.slice(from, to).filter((v) => Number.isFinite(v) && (!log || v > 0));
    ys.push(slice.length && from < values.length ? slice.reduce((s, v) => s + v, 0) / slice.length : null);
  }
  const range = rangeOf(ys.filter((v): v is number => v !== null), log);
  const toRow = (v: number) => {
    const t = ((log ? Math.log10(v) : v) - range.lo) / (range.hi - range.lo);
    return Math.min(rows - 1, Math.max(0, Math.round((1 - t) * (rows - 1))));
  };
  // Braille dot bits by (dx, dy) within a cell: columns 0/1, rows 0..3.
  const bit = [[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]];
  const cells = Array.from({ length: height }, () => new Array<number>(width).fill(0));
  let prev: number | null = null;
  ys.forEach((v, c) => {
    if (v === null) return;
    const r = toRow(v);
    // A vertical run from the previous column's row, so steep drops read as a line.
    const from = prev === null || prev === r ? r : prev + Math.sign(r - prev);
    for (let y = Math.min(from, r); y <= Math.max(from, r); y++) cells[Math.floor(y / 4)]![Math.floor(c / 2)]! |= bit[c % 2]![y % 4]!;
    prev = r;
  });
  const label = (row: number) => {
    const t = 1 - row / (height - 1);
    const v = range.lo + t * (range.hi - range.lo);
    return formatTick(log ? 10 ** v : v);
  };
  const labelWidth = Math.max(...[0, height - 1].map((r) => label(r).length), label(Math.floor((height - 1) / 2)).length);
  const lines = cells.map((row, i) => {
    const show = i === 0 || i === height - 1 || i === Math.floor((height - 1) / 2);
    return `${(show ? label(i) : "").padStart(labelWidth)} ┤${row.map((b) => String.fromCharCode(0x2800 + b)).join("")}`;
  });
  const x0 = o.xStart ?? 0;
  const first = String(x0);
  const last = String(x0 + Math.max(0, values.length - 1));
  lines.push(`${"".padStart(labelWidth)} └${"─".repeat(width)}`);
  lines.push(`${"".padStart(labelWidth)}  ${first}${last.padStart(width - first.length)}`);
  return lines;
}

function escapeXml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** About `count` round tick values covering [lo, hi]. */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  const span = hi - lo || 1;
  const raw = span / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const ticks: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

export interface SvgPlotOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  rightLabel?: string;
  logY?: boolean;
  width?: number;
  height?: number;
  /** Lines of text under the title (run facts). */
  caption?: string[];
}

/** A complete SVG document plotting `series` (left axis, log when asked; right axis 0–100%). */
export function svgPlot(series: readonly Series[], o: SvgPlotOptions): string {
  const W = o.width ?? 800;
  const H = o.height ?? 460;
  const caption = o.caption ?? [];
  const m = { left: 70, right: o.rightLabel ? 60 : 20, top: 44 + 16 * caption.length, bottom: 50 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const log = o.logY ?? false;
  const left = series.filter((s) => !s.rightAxis);
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const xr = xs.length ? { lo: Math.min(...xs), hi: Math.max(...xs) } : { lo: 0, hi: 1 };
  if (xr.hi === xr.lo) xr.hi = xr.lo + 1;
  const yr = rangeOf(left.flatMap((s) => s.points.map((p) => p[1])), log);
  if (log) {
    yr.lo = Math.floor(yr.lo);
    yr.hi = Math.ceil(yr.hi);
  }
  const X = (x: number) => m.left + ((x - xr.lo) / (xr.hi - xr.lo)) * pw;
  const Y = (y: number) => m.top + (1 - ((log ? Math.log10(y) : y) - yr.lo) / (yr.hi - yr.lo)) * ph;
  const YR = (y: number) => m.top + (1 - y) * ph;
  const f = (v: number) => v.toFixed(1);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  out.push(`<text x="${m.left}" y="22" font-size="15" font-weight="600">${escapeXml(o.title)}</text>`);
  caption.forEach((c, i) => out.push(`<text x="${m.left}" y="${40 + 16 * i}" fill="#555">${escapeXml(c)}</text>`));
  // Grid and y ticks: decades on a log axis.
  // A log axis labels each decade, and 2× and 5× within it when it spans few decades.
  const steps = yr.hi - yr.lo <= 2 ? [1, 2, 5] : [1];
  const yTicks = log
    ? Array.from({ length: yr.hi - yr.lo + 1 }, (_, i) => steps.map((m) => Number((m * 10 ** (yr.lo + i)).toPrecision(3)))).flat().filter((t) => Math.log10(t) <= yr.hi + 1e-9)
    : niceTicks(yr.lo, yr.hi);
  for (const t of yTicks) {
    const y = Y(t);
    out.push(`<line x1="${m.left}" x2="${m.left + pw}" y1="${f(y)}" y2="${f(y)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${m.left - 6}" y="${f(y + 4)}" text-anchor="end" fill="#333">${escapeXml(formatTick(t))}</text>`);
  }
  for (const t of niceTicks(xr.lo, xr.hi, 8)) {
    const x = X(t);
    out.push(`<line x1="${f(x)}" x2="${f(x)}" y1="${m.top}" y2="${m.top + ph}" stroke="#f0f0f0"/>`);
    out.push(`<text x="${f(x)}" y="${m.top + ph + 16}" text-anchor="middle" fill="#333">${escapeXml(formatTick(t))}</text>`);
  }
  if (o.rightLabel) {
    for (const t of [0, 0.25, 0.5, 0.75, 1]) {
      out.push(`<text x="${m.left + pw + 6}" y="${f(YR(t) + 4)}" fill="#333">${t * 100}%</text>`);
    }
    out.push(`<text transform="translate(${W - 12} ${m.top + ph / 2}) rotate(90)" text-anchor="middle" fill="#333">${escapeXml(o.rightLabel)}</text>`);
  }
  out.push(`<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  out.push(`<text x="${m.left + pw / 2}" y="${H - 12}" text-anchor="middle" fill="#333">${escapeXml(o.xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle" fill="#333">${escapeXml(o.yLabel)}</text>`);
  const palette = ["#9ec5e8", "#1f5fa8", "#d9480f", "#2b8a3e"];
  series.forEach((s, i) => {
    const color = s.color ?? palette[i % palette.length]!;
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y) && (s.rightAxis || !log || y > 0));
    const py = (y: number) => (s.rightAxis ? YR(Math.min(1, Math.max(0, y))) : Y(y));
    if (s.dots) {
      for (const [x, y] of pts) out.push(`<circle cx="${f(X(x))}" cy="${f(py(y))}" r="3" fill="${color}"/>`);
    } else if (pts.length) {
      const d = pts.map(([x, y], j) => `${j ? "L" : "M"}${f(X(x))} ${f(py(y))}`).join(" ");
      out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="${s.width ?? 1.5}" stroke-linejoin="round"/>`);
    }
    // The legend sits low on the left: a falling loss curve leaves that corner empty, and
    // accuracy dots crowd the top right.
    const ly = m.top + ph * 0.6 + 16 * i;
    const lx = m.left + 16;
    out.push(`<line x1="${lx}" x2="${lx + 18}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="3"/>`);
    out.push(`<text x="${lx + 24}" y="${ly}" fill="#222">${escapeXml(s.name)}</text>`);
  });
  out.push("</svg>");
  return out.join("\n") + "\n";
}
