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

let threadClock: (() => number) | null = null;

/**
 * CPU time of the calling thread in milliseconds (CLOCK_THREAD_CPUTIME_ID): what host work costs
 * whatever else a shared machine runs — wall time there includes waiting for a core. GC helper
 * threads and the simulator's workers are not counted. Falls back to the process's CPU time where
 * the clock cannot be reached.
 */
export function threadCpuMs(): number {
  if (threadClock === null) threadClock = makeThreadClock();
  return threadClock();
}

function makeThreadClock(): () => number {
  try {
    const { dlopen, FFIType } = require("bun:ffi") as typeof import("bun:ffi");
    const mac = process.platform === "darwin";
    const libc = dlopen(mac ? "libSystem.B.dylib" : "libc.so.6", { clock_gettime: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 } });
    const id = mac ? 16 : 3; // CLOCK_THREAD_CPUTIME_ID
    const ts = new BigInt64Array(2);
    if (libc.symbols.clock_gettime(id, ts) !== 0) throw new Error("clock_gettime failed");
    return () => {
      libc.symbols.clock_gettime(id, ts);
      return Number(ts[0]!) * 1e3 + Number(ts[1]!) / 1e6;
    };
  } catch {
    return () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    };
  }
}

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
