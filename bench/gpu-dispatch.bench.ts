// GPU execution overhead (issue 5): per-op cost from TypeScript of building, scheduling and
// encoding 10,000 small ops into one batch (one FFI call), and a fused versus unfused elementwise
// chain (kernels launched and time). On the Metal simulator the kernel time is CPU time; the
// per-op host overhead (TypeScript, the runtime's submit, the shim's encoding) is what this measures.
//
//   bun run bench/gpu-dispatch.bench.ts       (ROUNDS=7 WARMUP_ROUNDS=20)
import { readFileSync } from "node:fs";
import * as mg from "../ts/index.ts";
import type { MgArray } from "../ts/core/array.ts";
import { median, ROUNDS, row, threadCpuMs } from "./util.ts";

const g = { stream: mg.gpu };
const load = (() => {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ")[0];
  } catch {
    return "";
  }
})();
console.log(`GPU dispatch (${mg.deviceInfo().device_name}), medians of ${ROUNDS} rounds${load ? `; load average ${load}` : ""}`);

// 10,000 independent small ops (no fusion possible between them): one kernel each. Each round's
// outputs are disposed after it (outside the timed part), as MLX frees them when the list goes:
// the next round's small buffers then come from the pool of released ones (BufferPool). Wall time
// includes waiting for a core on a shared machine; the eval thread's CPU time does not. The last
// row leaves the outputs to the garbage collector instead (new buffers each round, and the GC's
// work of freeing the old ones). The rows measure the steady state: WARMUP_ROUNDS untimed rounds
// (200,000 ops) come first, as for bench/cpu's tiny op, because Bun's JIT tiers the build/eval
// path up over the first ~100–300k ops and its compiler threads meanwhile take the second core
// (JIT threads' CPU during the timed evals: 3.4 µs/op after 1 warm-up round, 0.84 after 10, 0.13
// after 30). The "wall:" row splits the eval's wall time (Linux schedstat of this thread) into time
// on a core and waiting for one; the next row is the CPU this process's other threads used
// meanwhile — mostly the simulator's queue thread running the command buffers the submit has
// already committed (~0.85 µs/op: the simulated GPU's work, which a real GPU does off the CPU).
const WARMUP_ROUNDS = Number(process.env.WARMUP_ROUNDS ?? 20);
const schedstat = (): number[] | null => {
  try {
    return readFileSync("/proc/thread-self/schedstat", "utf8").trim().split(" ").map(Number);
  } catch {
    return null;
  }
};
{
  const OPS = 10_000;
  const xs = Array.from({ length: 100 }, (_, i) => mg.array([i, i + 1, i + 2, i + 3], mg.float32));
  mg.eval(xs);
  const previous = mg.setFusion(false);
  const run = (dispose: boolean) => {
    const build: number[] = [];
    const encode: number[] = [];
    const encodeCpu: number[] = [];
    const total: number[] = [];
    const onCore: number[] = [];
    const waiting: number[] = [];
    const others: number[] = [];
    for (let r = 1 - WARMUP_ROUNDS; r <= ROUNDS; r++) {
      const t0 = performance.now();
      const outs: MgArray[] = [];
      for (let i = 0; i < OPS; i++) outs.push(mg.multiply(xs[i % 100]!, 2, g));
      const t1 = performance.now();
      const p1 = process.cpuUsage();
      const s1 = schedstat();
      const c1 = threadCpuMs();
      mg.eval(outs); // schedule + encode + one submit
      const c2 = threadCpuMs();
      const s2 = schedstat();
      const p2 = process.cpuUsage(p1);
      const t2 = performance.now();
      mg.synchronize();
      const t3 = performance.now();
      if (dispose) for (const o of outs) o.dispose();
      if (r > 0) {
        build.push(t1 - t0);
        encode.push(t2 - t1);
        encodeCpu.push(c2 - c1);
        total.push(t3 - t0);
        if (s1 && s2) {
          onCore.push((s2[0]! - s1[0]!) / 1e6);
          waiting.push((s2[1]! - s1[1]!) / 1e6);
        }
        others.push(Math.max(0, (p2.user + p2.system) / 1000 - (c2 - c1)));
      }
    }
    return {
      build: median(build), encode: median(encode), encodeCpu: median(encodeCpu), total: median(total),
      onCore: onCore.length ? median(onCore) : NaN, waiting: waiting.length ? median(waiting) : NaN, others: median(others),
    };
  };
  const us = (ms: number) => `${((ms * 1000) / OPS).toFixed(2)} µs/op`;
  const freed = run(true);
  const collected = run(false);
  mg.setFusion(previous);
  row(`${OPS} small ops: graph build`, us(freed.build));
  row(`${OPS} small ops: schedule + encode + submit (one FFI call)`, us(freed.encode));
  row(`  the same, CPU time of the eval thread`, us(freed.encodeCpu));
  if (!Number.isNaN(freed.onCore)) {
    row(`  wall: on a core / waiting for a core`, `${us(freed.onCore)} / ${us(freed.waiting)}`);
  }
  row(`  CPU of this process's other threads meanwhile`, us(freed.others));
  row(`${OPS} small ops: end to end incl. simulated kernels`, us(freed.total));
  row(`  schedule + encode + submit, outputs left to the GC`, `${us(collected.encode)} (CPU ${us(collected.encodeCpu)})`);
}

// A 20-op chain of cheap ops over 1M floats (scale, shift, clamp: bandwidth-bound, the case fusion
// exists for): fused into one kernel versus one kernel per op. On the simulator a chain dominated
// by transcendental functions is compute-bound and fusion saves little; on a GPU it saves the
// memory round trips either way.
{
  const x = mg.array(Float32Array.from({ length: 1 << 20 }, (_, i) => Math.sin(i)));
  const y = mg.array(Float32Array.from({ length: 1024 }, (_, i) => Math.cos(i)));
  const yb = mg.reshape(y, [1, 1024]);
  const xm = mg.reshape(x, [1024, 1024]);
  mg.eval(xm, yb);
  const chain = () => {
    let z: MgArray = mg.add(xm, yb, g);
    for (let i = 0; i < 19; i++) z = i % 3 === 0 ? mg.maximum(z, -1, g) : i % 3 === 1 ? mg.multiply(z, 1.01, g) : mg.add(z, yb, g);
    return z;
  };
  for (const fused of [true, false]) {
    const previous = mg.setFusion(fused);
    let kernels = 0;
    const times: number[] = [];
    for (let r = 0; r <= ROUNDS; r++) {
      const t0 = performance.now();
      const records = mg.trace(() => {
        const z = chain();
        mg.eval(z);
        mg.synchronize();
        return z;
      });
      if (r > 0) times.push(performance.now() - t0);
      kernels = records.filter((rec) => rec.device === "gpu").length;
    }
    mg.setFusion(previous);
    row(`20-op chain over 1M float32, ${fused ? "fused" : "unfused"}`, `${kernels} kernel${kernels === 1 ? "" : "s"}, ${median(times).toFixed(1)} ms`);
  }
}
