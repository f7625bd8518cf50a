// Memory that behaves (issue 7), the long soak: 20,000 SGD-style steps on a 1M-element float32
// parameter, written naively (no tidy, no dispose) and under tidy. Prints steps per second and an
// active-memory trace (MiB) every STEPS/10 steps.
//
//   bun run bench/memory-soak.bench.ts        (STEPS=n, DEVICE=cpu|gpu; default 20000 on gpu)
import * as mg from "../ts/index.ts";
import type { MgArray } from "../ts/core/array.ts";

const STEPS = Number(process.env.STEPS ?? 20_000);
const device = process.env.DEVICE === "cpu" ? mg.cpu : mg.gpu;
const N = 1 << 20;
const s = { stream: device };
const mib = (b: number) => (b / 2 ** 20).toFixed(0);

function loop(name: string, step: (p: MgArray, g: MgArray) => MgArray): void {
  const g = mg.array(new Float32Array(N).fill(0.5));
  let p: MgArray = mg.array(new Float32Array(N).fill(1));
  mg.eval(g, p);
  mg.synchronize();
  const trace: string[] = [];
  let peak = 0;
  const collectionsBefore = mg.pressureCollectionCount(); // the counter is process-wide
  const t0 = performance.now();
  for (let i = 1; i <= STEPS; i++) {
    p = step(p, g);
    if (i % Math.max(1, Math.floor(STEPS / 10)) === 0) {
      mg.synchronize();
      const active = mg.getActiveMemory();
      peak = Math.max(peak, active);
      trace.push(mib(active));
    }
  }
  mg.synchronize();
  const seconds = (performance.now() - t0) / 1000;
  console.log(`  ${name.padEnd(8)} ${(STEPS / seconds).toFixed(0).padStart(6)} steps/s   active MiB: ${trace.join(" ")}   max ${mib(peak)} MiB   forced GCs ${mg.pressureCollectionCount() - collectionsBefore}`);
}

console.log(`memory soak: ${STEPS} steps, 1M float32 parameter, ${device.type} device`);
loop("naive", (p, g) => {
  const next = mg.subtract(p, mg.multiply(g, 0.001, s), s);
  mg.eval(next);
  return next;
});
loop("tidy", (p, g) => {
  const next = mg.tidy(() => {
    const q = mg.subtract(p, mg.multiply(g, 0.001, s), s);
    mg.eval(q);
    return q;
  });
  p.dispose();
  return next;
});
