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
