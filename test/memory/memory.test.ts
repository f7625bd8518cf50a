// Deterministic lifetime, GC-visible native memory, the memory API and asyncEval (issue 7).
import { describe, expect, test } from "bun:test";
import { heapStats } from "bun:jsc";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";

/** The allocator's rounding: <16 KiB to 256 B, else to 16 KiB (Allocator.swift). */
const rounded = (n: number) => (n === 0 ? 0 : n < 16384 ? Math.ceil(n / 256) * 256 : Math.ceil(n / 16384) * 16384);

/**
 * Runs full collections until active memory stops changing (earlier tests' garbage is freed), then
 * empties the cache: a request may reuse a cached block up to twice its size (Allocator.swift), so
 * what earlier test files left cached would change what an allocation counts.
 */
async function settle(): Promise<void> {
  mg.synchronize();
  let last = -1;
  for (let i = 0; i < 20; i++) {
    Bun.gc(true);
    await Bun.sleep(2);
    const now = mg.getActiveMemory();
    if (now === last) break;
    last = now;
  }
  mg.clearCache();
}

async function collectUntil(pred: () => boolean, rounds = 50): Promise<boolean> {
  for (let i = 0; i < rounds; i++) {
    if (pred()) return true;
    Bun.gc(true);
    await Bun.sleep(1);
  }
  return pred();
}

describe("dispose and tidy", () => {
  test("dispose frees the storage immediately and is idempotent; using a disposed array throws naming it", async () => {
    // Earlier files' garbage first: a collection during the test would free it mid-measurement.
    await settle();
    const before = mg.getActiveMemory();
    const a = mg.array(new Float32Array(10000));
    expect(mg.getActiveMemory() - before).toBe(rounded(40000));
    a.dispose();
    a.dispose();
    expect(mg.getActiveMemory()).toBe(before);
    expect(() => mg.exp(a)).toThrow(new RegExp(`\\[exp\\] array #${a.id} \\(10000,\\) float32 was disposed`));
  });

  test("using-declarations dispose at scope end", async () => {
    await settle();
    const before = mg.getActiveMemory();
    {
      using a = mg.array(new Float32Array(5000));
      expect(mg.getActiveMemory()).toBeGreaterThan(before);
      void a;
    }
    expect(mg.getActiveMemory()).toBe(before);
  });

  test("tidy frees everything created inside except what it returns (trees included) and what is kept", async () => {
    // Weak scalars (3, 1) become shared cached constants on first use: create them before measuring.
    mg.eval(mg.multiply(mg.array([1], mg.float32), 3), mg.add(mg.array([1], mg.float32), 1));
    await settle();
    const before = mg.getActiveMemory();
    let kept: MgArray | undefined;
    let inner: MgArray | undefined;
    const out = mg.tidy(() => {
      inner = mg.array(new Float32Array(3000).fill(2));
      const b = mg.multiply(inner, 3);
      kept = mg.keep(mg.add(inner, 1));
      mg.eval(b, kept);
      return { b, list: [mg.sum(b)] };
    });
    expect(inner!.disposed).toBe(true);
    expect(out.b.disposed).toBe(false);
    expect(out.list[0]!.item()).toBe(18000);
    expect(kept!.disposed).toBe(false);
    out.b.dispose();
    out.list[0]!.dispose();
    kept!.dispose();
    expect(mg.getActiveMemory()).toBe(before);
  });

  test("disposing an intermediate that a returned, unevaluated array needs is safe", async () => {
    mg.eval(mg.multiply(mg.array([1], mg.float32), 2)); // the shared constant 2 exists before measuring
    await settle();
    const before = mg.getActiveMemory();
    const y = mg.tidy(() => {
      const x = mg.array([1, 2, 3], mg.float32);
      return mg.multiply(mg.exp(x), 2); // x and exp(x) are disposed; y is not evaluated yet
    });
    expect(y.tolist()).toEqual([1, 2, 3].map((v) => Math.fround(Math.fround(Math.exp(v)) * 2)));
    y.dispose();
    expect(mg.getActiveMemory()).toBe(before);
  });

  test("two interleaved async tidies each free exactly their own arrays", async () => {
    const made: Record<string, MgArray[]> = { a: [], b: [] };
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const run = (name: "a" | "b", wait: Promise<void> | null) =>
      mg.tidy(async () => {
        made[name]!.push(mg.array([1, 2, 3]));
        if (wait) await wait;
        else await Bun.sleep(5);
        made[name]!.push(mg.array([4, 5, 6]));
        return mg.array([7]);
      });
    const pa = run("a", gate); // suspended until released
    const rb = await run("b", null); // runs and finishes in between a's two halves
    expect(made.b!.every((x) => x.disposed)).toBe(true);
    expect(made.a!.every((x) => !x.disposed)).toBe(true);
    release();
    const ra = await pa;
    expect(made.a!.every((x) => x.disposed)).toBe(true);
    expect(ra.disposed || rb.disposed).toBe(false);
  });
});

describe("memory API", () => {
  test("counters follow a scripted sequence exactly; the peak resets; clearCache empties the cache", () => {
    mg.synchronize();
    mg.clearCache();
    const base = mg.getActiveMemory();
    mg.resetPeakMemory();
    const a = mg.array(new Float32Array(1000)); // 4000 B → 4096
    const b = mg.array(new Float32Array(10000)); // 40000 B → 49152
    expect(mg.getActiveMemory() - base).toBe(4096 + 49152);
    expect(mg.getPeakMemory() - base).toBe(4096 + 49152);
    b.dispose();
    expect(mg.getActiveMemory() - base).toBe(4096);
    expect(mg.getCacheMemory()).toBe(49152);
    const c = mg.array(new Float32Array(12000)); // 48000 B → 49152: reuses b's block
    expect(mg.getCacheMemory()).toBe(0);
    expect(mg.getPeakMemory() - base).toBe(4096 + 49152);
    c.dispose();
    a.dispose();
    mg.resetPeakMemory();
    expect(mg.getPeakMemory()).toBe(mg.getActiveMemory());
    expect(mg.getCacheMemory()).toBe(4096 + 49152);
    mg.clearCache();
    expect(mg.getCacheMemory()).toBe(0);
  });

  test("a memory limit turns an oversized allocation into a clear error; setters return the previous value", () => {
    const limit = mg.getActiveMemory() + 1024 * 1024;
    const previous = mg.setMemoryLimit(limit);
    // Default: 1.5 × the recommended working set, as MLX.
    expect(previous).toBe(Math.floor(1.5 * Number(mg.deviceInfo().memory_size)));
    expect(mg.getMemoryLimit()).toBe(limit);
    try {
      expect(() => mg.array(new Float32Array(1024 * 1024))).toThrow(/memory limit/);
      const small = mg.array(new Float32Array(16)); // still fine under the limit
      expect(small.size).toBe(16);
      small.dispose();
    } finally {
      expect(mg.setMemoryLimit(previous)).toBe(limit);
    }
    const prevCache = mg.setCacheLimit(1234);
    expect(mg.setCacheLimit(prevCache)).toBe(1234);
    const prevWired = mg.setWiredLimit(4096);
    expect(mg.setWiredLimit(prevWired)).toBe(4096);
  });

  test("the live count covers every array and counts a disposed one once (issue 19)", async () => {
    const before = mg.liveArrayCount();
    const xs = Array.from({ length: 50 }, (_, i) => mg.array(i));
    expect(mg.liveArrayCount()).toBe(before + 50);
    for (const x of xs) x.dispose();
    for (const x of xs) x.dispose();
    expect(mg.liveArrayCount()).toBe(before);
    xs.length = 0;
    // their finalizers run later and must not subtract them again
    await collectUntil(() => false, 3);
    expect(mg.liveArrayCount()).toBeLessThanOrEqual(before);
    expect(mg.liveArrayCount()).toBeGreaterThanOrEqual(0);
  });

  test("disposed arrays across many 4096-id chunks are not subtracted again when collected", async () => {
    await collectUntil(() => false, 5);
    const baseline = mg.liveArrayCount();
    // every other array disposed; ids span several chunks of the disposed-id bitmap
    for (let i = 0; i < 20_000; i++) {
      const a = mg.array(i);
      if (i % 2 === 0) a.dispose();
    }
    expect(mg.liveArrayCount()).toBe(baseline + 10_000);
    expect(await collectUntil(() => mg.liveArrayCount() <= baseline)).toBe(true);
    await collectUntil(() => false, 3);
    // a double subtraction would leave it 10,000 below; older garbage collected meanwhile a little
    expect(mg.liveArrayCount()).toBeGreaterThan(baseline - 100);
  });

  test("counting leaves nothing behind per array while a loop never yields (issue 20: it made collection quadratic)", () => {
    mg.liveArrayCount();
    const x = mg.array([1, 2, 3]);
    Bun.gc(true);
    const before = heapStats().objectCount;
    for (let i = 0; i < 100_000; i++) mg.add(x, 1);
    Bun.gc(true);
    // Dead arrays are collected without waiting for their finalizers; no per-array token survives
    // them (the registration with an unregister token kept one object per array until the loop yielded).
    expect(heapStats().objectCount - before).toBeLessThan(10_000);
  });

  test("100,000 small arrays created and dropped leave the live count at its baseline after a collection", async () => {
    await collectUntil(() => false, 3);
    const baseline = mg.liveArrayCount();
    for (let i = 0; i < 100_000; i++) mg.array(i);
    expect(mg.liveArrayCount()).toBeGreaterThanOrEqual(baseline + 100_000);
    expect(await collectUntil(() => mg.liveArrayCount() <= baseline)).toBe(true);
  });
});

describe("soak (short; bench/memory-soak.bench.ts runs the long version)", () => {
  const N = 1 << 20;
  test("a naive SGD loop (no tidy, no dispose) stays within a fixed bound of active memory", () => {
    const g = mg.array(new Float32Array(N).fill(0.5));
    let p: MgArray = mg.array(new Float32Array(N).fill(1));
    const gpu = { stream: mg.gpu };
    mg.eval(p);
    let warm = 0;
    let worst = 0;
    for (let step = 0; step < 400; step++) {
      p = mg.subtract(p, mg.multiply(g, 0.001, gpu), gpu);
      mg.eval(p);
      if (step === 50) {
        mg.synchronize();
        warm = mg.getActiveMemory();
      }
      if (step > 50) worst = Math.max(worst, mg.getActiveMemory());
    }
    mg.synchronize();
    // Bounded, whatever the step count: the GC sees each step's 4 MiB (GC-visible ArrayBuffers),
    // and memory pressure forces a full collection past 256 MiB of growth (checked every 64 MiB).
    expect(worst - warm).toBeLessThan(512 * 1024 * 1024);
    expect((p.dataSync() as Float32Array)[0]).toBeCloseTo(1 - 400 * 0.0005, 3);
  });

  test("the same loop under tidy returns to the starting active memory exactly after each step", async () => {
    const g = mg.array(new Float32Array(N).fill(0.5));
    let p: MgArray = mg.array(new Float32Array(N).fill(1));
    mg.eval(p, mg.multiply(g, 0.001, { stream: mg.gpu })); // creates the shared constant 0.001
    await settle();
    const start = mg.getActiveMemory();
    for (let step = 0; step < 100; step++) {
      const next = mg.tidy(() => {
        const q = mg.subtract(p, mg.multiply(g, 0.001, { stream: mg.gpu }), { stream: mg.gpu });
        mg.eval(q);
        return q;
      });
      p.dispose();
      p = next;
      mg.synchronize();
      expect(mg.getActiveMemory()).toBe(start);
    }
  });
});

describe("asyncEval and async reads", () => {
  test("asyncEval of a long GPU graph lets a timer on the event loop fire while it runs", async () => {
    // 64K elements: 100 dependent steps still run for tens of milliseconds (many 1 ms ticks) on the
    // simulator, at a sixteenth of the CPU that 1M elements cost.
    const x = mg.array(new Float32Array(1 << 16).fill(0.25));
    let y: MgArray = x;
    for (let i = 0; i < 100; i++) y = mg.sin(mg.add(y, 0.001, { stream: mg.gpu }), { stream: mg.gpu });
    let fired = 0;
    const timer = setInterval(() => fired++, 1);
    const t0 = performance.now();
    await mg.asyncEval(y);
    const elapsed = performance.now() - t0;
    clearInterval(timer);
    expect(elapsed).toBeGreaterThan(0);
    expect(fired).toBeGreaterThan(0);
    const data = await y.data();
    expect(data.length).toBe(1 << 16);
    expect(await mg.array([1, 2]).tolistAsync()).toEqual([1, 2]);
  });
});
