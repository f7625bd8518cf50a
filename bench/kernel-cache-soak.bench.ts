// Bounded kernel memory (issue 20): random elementwise graphs on the gpu — fusion compiles one
// kernel per distinct chain — evaluated SEQUENCES times, drawing from DISTINCT different chains (more
// than the kernel cache keeps), with the process's RSS sampled every SAMPLE sequences. Before the
// cache was bounded, RSS grew ~16 MB per 1,000 new kernels; now it is flat after warm-up.
//   bun run bench/kernel-cache-soak.bench.ts                 SEQUENCES=20000 DISTINCT=1500 SAMPLE=1000
// The first run compiles DISTINCT kernels (the simulator's disk cache keeps them for later runs).
// MG_KERNEL_CACHE_PIPELINES / _LIBRARIES and MG_SIM_LIBRARY_CACHE set the limits (defaults 1024,
// 256, 128).
import * as mg from "../ts/index.ts";
import { runtime } from "../ts/backend/runtime.ts";

const SEQUENCES = Number(process.env.SEQUENCES ?? 20000);
const DISTINCT = Number(process.env.DISTINCT ?? 1500);
const SAMPLE = Number(process.env.SAMPLE ?? 1000);

const UNARY = ["exp", "sin", "cos", "tanh", "sigmoid", "abs", "square", "negative", "sqrt", "log1p", "floor", "erf"] as const;
const BINARY = ["add", "multiply", "subtract", "maximum", "minimum"] as const;

function lcg(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

// A chain: unary ops, with a binary op against the second input every few steps (so kernels
// differ in their inputs too). Encoded as op indices; DISTINCT different ones.
const rand = lcg(20);
const chains = new Map<string, number[]>();
while (chains.size < DISTINCT) {
  const length = 2 + Math.floor(rand() * 7);
  const ops = Array.from({ length }, () => Math.floor(rand() * (UNARY.length + BINARY.length)));
  chains.set(ops.join(","), ops);
}
const pool = [...chains.values()];

type Fn = (...a: unknown[]) => mg.MgArray;
const op = (name: string) => (mg as unknown as Record<string, Fn>)[name]!;
const x = mg.stream(mg.gpu, () => mg.random.uniform(0.1, 1, [64]));
const w = mg.stream(mg.gpu, () => mg.random.uniform(0.1, 1, [64]));
mg.eval(x, w);

function run(ops: readonly number[]): void {
  mg.tidy(() => {
    const y = mg.stream(mg.gpu, () => {
      let v = x;
      for (const k of ops) v = k < UNARY.length ? op(UNARY[k]!)(v) : op(BINARY[k - UNARY.length]!)(v, w);
      return v;
    });
    mg.eval(y);
  });
}

const rssMB = () => process.memoryUsage().rss / 2 ** 20;
const pick = lcg(7);
console.log(`kernel cache soak: ${SEQUENCES} random elementwise graphs on the gpu from ${DISTINCT} distinct chains`);
console.log("  sequences   rss MB   JS heap MB   pipelines built   sim objects loaded (MB)   compiles so far   seconds");
const t0 = performance.now();
const samples: number[] = [];
for (let i = 1; i <= SEQUENCES; i++) {
  run(pool[Math.floor(pick() * pool.length)]!);
  // A long-running process yields to its event loop now and then; FinalizationRegistry callbacks
  // (liveArrayCount's, the allocator's) run only then, and a loop that never yields keeps ~100 B
  // per array until it does (the JS heap then grows ~4 MB per 20,000 sequences here).
  if (i % 100 === 0) await Bun.sleep(0);
  if (i % SAMPLE === 0) {
    mg.synchronize();
    Bun.gc(true);
    await Bun.sleep(0);
    const rss = rssMB();
    samples.push(rss);
    const { loaded } = mg.setKernelCacheLimits({});
    const sim = JSON.parse(String(runtime().native.mg_sim_stats_json())) as { compilerInvocations?: number };
    const heap = process.memoryUsage().heapUsed / 2 ** 20;
    console.log(
      `  ${String(i).padStart(9)}   ${rss.toFixed(1).padStart(6)}   ${heap.toFixed(1).padStart(10)}   ${String(loaded.pipelines).padStart(15)}   ` +
        `${String(loaded.simulatorObjects).padStart(8)} (${(loaded.simulatorBytes / 2 ** 20).toFixed(1)})`.padEnd(26) +
        `   ${String(sim.compilerInvocations ?? 0).padStart(15)}   ${((performance.now() - t0) / 1000).toFixed(0).padStart(7)}`,
    );
  }
}
const warm = Math.min(samples.length - 1, Math.floor(samples.length / 4));
if (samples.length >= 2) {
  const after = samples.slice(warm);
  console.log(
    `RSS after warm-up (sample ${warm + 1} on): ${after[0]!.toFixed(1)} → ${after[after.length - 1]!.toFixed(1)} MB ` +
      `(min ${Math.min(...after).toFixed(1)}, max ${Math.max(...after).toFixed(1)})`,
  );
}
