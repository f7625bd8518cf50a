// Shared bench helpers: medians, not means (these machines are noisy), and aligned output.
export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** Runs `fn` `rounds` times after `warmup` runs; returns the median milliseconds. */
export function timeMs(fn: () => void, rounds = 7, warmup = 1): number {
  for (let i = 0; i < warmup; i++) fn();
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  return median(times);
}

export function row(name: string, value: string): void {
  console.log(`  ${name.padEnd(58)} ${value}`);
}

export const ROUNDS = Number(process.env.ROUNDS ?? 7);

/**
 * A Python interpreter that imports every module in `modules` (for side-by-side numbers from MLX
 * and numpy): $MG_PYTHON if set, else `python3`. Null when none does.
 */
export function pythonWith(modules: readonly string[]): string | null {
  for (const python of [process.env.MG_PYTHON, "python3"]) {
    if (!python) continue;
    try {
      const r = Bun.spawnSync([python, "-c", `import ${modules.join(", ")}`], { stderr: "ignore", stdout: "ignore" });
      if (r.exitCode === 0) return python;
    } catch {
      // Not on PATH: try the next one.
    }
  }
  return null;
}
