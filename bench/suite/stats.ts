// Statistics of timed rounds: medians (these machines are noisy) and the interquartile range as
// the spread, and how many rounds to time from how long a warm-up run took.

/** The q-quantile (0 ≤ q ≤ 1) by linear interpolation between order statistics (numpy's default). */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

export interface Summary {
  median: number;
  /** Interquartile range (75th − 25th percentile), in the values' unit. */
  spread: number;
  n: number;
  min: number;
  max: number;
}

export function summarize(values: readonly number[]): Summary {
  return {
    median: quantile(values, 0.5), spread: quantile(values, 0.75) - quantile(values, 0.25), n: values.length,
    min: Math.min(...values), max: Math.max(...values),
  };
}

export interface RoundPolicy {
  /** Untimed runs first (compiling kernels, allocating, filling caches): at least `warmup` runs … */
  warmup: number;
  /**
   * … and at least this many milliseconds of runs, the same rule for every system. Bun's JIT tiers
   * a new op's code path up over its first ~10–100 calls (in a fresh process, calls 2–11 of a 64K
   * add took 40–550 µs against ~10 µs once warm), which compiled numpy/MLX loops do not need; a
   * run-count warm-up alone measured that tier-up, not the op.
   */
  warmupMs: number;
  /** Milliseconds of timed runs to aim for per system and case. */
  budgetMs: number;
  minRounds: number;
  maxRounds: number;
}

export const FULL_POLICY: RoundPolicy = { warmup: 2, warmupMs: 50, budgetMs: 2000, minRounds: 5, maxRounds: 50 };
export const QUICK_POLICY: RoundPolicy = { warmup: 1, warmupMs: 50, budgetMs: 150, minRounds: 3, maxRounds: 10 };

/** Timed rounds for a case whose warm-up run took `warmupMs`: the budget's worth, within the bounds. */
export function roundsFor(warmupMs: number, p: RoundPolicy): number {
  const n = warmupMs > 0 ? Math.ceil(p.budgetMs / warmupMs) : p.maxRounds;
  return Math.min(p.maxRounds, Math.max(p.minRounds, n));
}
