// GPU execution overhead (issue 5): per-op cost from TypeScript of building, scheduling and
// encoding 10,000 small ops into one batch (one FFI call), and a fused versus unfused elementwise
// chain (kernels launched and time). On the Metal simulator the kernel time is CPU time; the
// per-op host overhead (TypeScript, the runtime's submit, the shim's encoding) is what this measures.
//
//   bun run bench/gpu-dispatch.bench.ts       (ROUNDS=n)
import * as mg from "../ts/index.ts";
import type { MgArray } from "../ts/core/array.ts";
import { median, ROUNDS, row, threadCpuMs } from "./util.ts";

const g = { stream: mg.gpu };
console.log(`GPU dispatch (${mg.deviceInfo().device_name}), medians of ${ROUNDS} rounds`);

// 10,000 independent small ops (no fusion possible between them): one kernel each. Each round's
// outputs are disposed after it (outside the timed part), as MLX frees them when the list goes:
// the next round's small buffers then come from the pool of released ones (BufferPool). Wall time
// includes waiting for a core on a shared machine; the eval thread's CPU time does not. The last
// row leaves the outputs to the garbage collector instead (new buffers each round, and the GC's
// work of freeing the old ones).
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
    for (let r = 0; r <= ROUNDS; r++) {
      const t0 = performance.now();
      const outs: MgArray[] = [];
      for (let i = 0; i < OPS; i++) outs.push(mg.multiply(xs[i % 100]!, 2, g));
      const t1 = performance.now();
      const c1 = threadCpuMs();
      mg.eval(outs); // schedule + encode + one submit
      const c2 = threadCpuMs();
      const t2 = performance.now();
      mg.synchronize();
      const t3 = performance.now();
      if (dispose) for (const o of outs) o.dispose();
      if (r > 0) {
        build.push(t1 - t0);
        encode.push(t2 - t1);
        encodeCpu.push(c2 - c1);
        total.push(t3 - t0);
      }
    }
    return { build: median(build), encode: median(encode), encodeCpu: median(encodeCpu), total: median(total) };
  };
  const us = (ms: number) => `${((ms * 1000) / OPS).toFixed(2)} µs/op`;
  const freed = run(true);
  const collected = run(false);
  mg.setFusion(previous);
  row(`${OPS} small ops: graph build`, us(freed.build));
  row(`${OPS} small ops: schedule + encode + submit (one FFI call)`, us(freed.encode));
  row(`  the same, CPU time of the eval thread`, us(freed.encodeCpu));
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
