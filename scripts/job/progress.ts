// The live progress line of a training run: step, loss, tokens/s, elapsed, ETA. On a terminal it
// rewrites one line in place (at most ~8 times a second); elsewhere (CI logs, pipes) it prints a
// plain line every `plainEvery` steps and at the end, so logs stay readable.

/** "0.8s", "12.3s", "1m05s", "1h02m". */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "?";
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  const s = Math.round(seconds);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

/** "850", "12.3k", "1.20M". */
export function formatRate(n: number): string {
  if (!Number.isFinite(n)) return "?";
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  return n.toFixed(0);
}

export interface ProgressOptions {
  /** Rewrite one line in place (a terminal) or print plain lines. */
  tty: boolean;
  write: (text: string) => void;
  /** Milliseconds, monotonic. */
  now?: () => number;
  /** Plain mode: a line every this many steps (default: about 10 lines per run). */
  plainEvery?: number;
  /** Tokens processed per step (for tokens/s). */
  tokensPerStep: number;
}

export class Progress {
  private readonly o: Required<ProgressOptions>;
  private readonly start: number;
  private lastDraw = -Infinity;
  /** (time, step) of recent steps, for a rate that forgets the first, slower steps. */
  private readonly window: [number, number][] = [];
  private lastLine = "";

  constructor(readonly total: number, o: ProgressOptions) {
    this.o = { now: () => performance.now(), plainEvery: Math.max(1, Math.round(total / 10)), ...o };
    this.start = this.o.now();
    this.window.push([this.start, 0]);
  }

  /** The line for `step` (1-based) with `loss` (the step's training loss). */
  line(step: number, loss: number, now: number): string {
    const elapsed = (now - this.start) / 1000;
    const [t0, s0] = this.window[0]!;
    const secondsPerStep = step > s0 ? (now - t0) / 1000 / (step - s0) : NaN;
    const tokensPerSecond = this.o.tokensPerStep / secondsPerStep;
    const eta = secondsPerStep * (this.total - step);
    const width = String(this.total).length;
    return `step ${String(step).padStart(width)}/${this.total}  loss ${loss.toFixed(4)}  ${formatRate(tokensPerSecond).padStart(6)} tok/s  elapsed ${formatDuration(elapsed)}  ETA ${step >= this.total ? "0.0s" : formatDuration(eta)}`;
  }

  update(step: number, loss: number): void {
    const now = this.o.now();
    this.window.push([now, step]);
    // The rate over the last 20 steps, or since the start while there are fewer.
    while (this.window.length > 21) this.window.shift();
    const last = step >= this.total;
    if (this.o.tty) {
      if (!last && now - this.lastDraw < 125) return;
      this.lastDraw = now;
      const text = this.line(step, loss, now);
      this.o.write(`\r${text}${" ".repeat(Math.max(0, this.lastLine.length - text.length))}`);
      this.lastLine = text;
      if (last) this.o.write("\n");
    } else if (last || step % this.o.plainEvery === 0 || step === 1) {
      this.o.write(`${this.line(step, loss, now)}\n`);
    }
  }

  /** Prints a message on its own line without garbling the live line. */
  note(text: string): void {
    if (this.o.tty && this.lastLine) {
      this.o.write(`\r${" ".repeat(this.lastLine.length)}\r${text}\n`);
      this.lastDraw = -Infinity;
    } else this.o.write(`${text}\n`);
  }
}
