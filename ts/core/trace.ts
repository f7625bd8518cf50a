// The kernel trace: every dispatch (and every CPU primitive evaluation) can be recorded with the
// kernel that ran, the primitives it computed, dtypes, layout variant, launch geometry, the
// internal precision, and every copy or fallback with its reason. This is how a user answers
// "which kernel ran?" and "at what precision?" for any op (guide §0, questions 2 and 3).

/** One kernel run, as mg.trace reports it: device, kernel, primitives, dtypes, precision, notes. */
export interface TraceRecord {
  /** "gpu" or "cpu". */
  device: string;
  /** Kernel (GPU function name) or "cpu:<Primitive>". */
  kernel: string;
  /** Primitives computed by this dispatch (several when fused). */
  primitives: string[];
  inputDtypes: string[];
  outputDtypes: string[];
  /** Layout variant, e.g. "contiguous", "strided", "scalar-vector", "gemv", "split-k". */
  layout: string;
  grid?: [number, number, number];
  threadgroup?: [number, number, number];
  /** Internal precision, e.g. "IEEE fp32", "fp32 accumulate over fp16 operands", "float64". */
  precision: string;
  /** Copies and fallbacks, each with its reason. */
  notes: string[];
  /** GPU: where the kernel's pipeline came from — the precompiled metallib, or source (and why). */
  pipelineFrom?: string;
}

/** Precision labels used across backends, so records are comparable. */
export const Precision = {
  ieee: (dtype: string) => `IEEE ${dtype}`,
  accumulate: (acc: string, operands: string) => `${acc} accumulate over ${operands} operands`,
  exact: "exact",
  cpuReference: "float64 reference, rounded once to the output dtype",
  none: "no arithmetic (data movement)",
} as const;

type Collector = { push(r: TraceRecord): unknown };
const collectors: Collector[] = [];
const printAll = process.env.MG_TRACE === "1";

/** True when anyone is listening; backends skip building records otherwise. */
export function tracing(): boolean {
  return printAll || collectors.length > 0;
}

export function formatRecord(r: TraceRecord): string {
  const geo = r.grid ? ` grid=${r.grid.join("x")} tg=${r.threadgroup?.join("x") ?? "-"}` : "";
  const notes = r.notes.length ? ` notes=[${r.notes.join("; ")}]` : "";
  const from = r.pipelineFrom ? ` from="${r.pipelineFrom}"` : "";
  return `[trace] ${r.device} ${r.kernel} {${r.primitives.join(",")}} (${r.inputDtypes.join(",")}) -> (${r.outputDtypes.join(",")}) layout=${r.layout}${geo} precision="${r.precision}"${notes}${from}`;
}

export function record(r: TraceRecord): void {
  if (printAll) process.stderr.write(formatRecord(r) + "\n");
  for (const c of collectors) c.push(r);
}

/**
 * Runs `fn`, evaluates what it returns (via `evaluate`), and returns the trace records of
 * everything evaluated meanwhile. Nested traces each see their own and inner records.
 */
export function collectTrace(fn: () => unknown, evaluate: (value: unknown) => void): TraceRecord[] {
  const mine: TraceRecord[] = [];
  collectors.push(mine);
  try {
    evaluate(fn());
  } finally {
    collectors.splice(collectors.lastIndexOf(mine), 1);
  }
  return mine;
}

/**
 * Hears every record until the returned function is called (test tooling: the GPU coverage check
 * collects the primitives each differential test file ran without re-running the files).
 */
export function addTraceListener(listener: (r: TraceRecord) => void): () => void {
  const mine: Collector = { push: listener };
  collectors.push(mine);
  return () => {
    const at = collectors.lastIndexOf(mine);
    if (at >= 0) collectors.splice(at, 1);
  };
}

const warned = new Set<string>();
/** Logs a costly event once per process (the trace records every occurrence); MG_WARN=0 silences. */
export function warnOnce(key: string, message: string): void {
  if (process.env.MG_WARN === "0" || warned.has(key)) return;
  warned.add(key);
  process.stderr.write(`[metalgrad] ${message}\n`);
}

// Notes an op attaches to an array it built (a fallback and its reason): the dispatch that
// computes the array carries them in its trace record.
const annotations = new WeakMap<object, string[]>();

/** Attaches `note` to the trace record of whatever computes `array`. */
export function annotate(array: object, note: string): void {
  const list = annotations.get(array);
  if (list) list.push(note);
  else annotations.set(array, [note]);
}

/** The notes attached to any of `arrays`. */
export function annotationsOf(arrays: readonly object[]): string[] {
  const out: string[] = [];
  for (const a of arrays) {
    const list = annotations.get(a);
    if (list) out.push(...list);
  }
  return out;
}
