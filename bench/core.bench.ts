// The array core on the CPU device (issue 4): framework overhead of building and evaluating graphs
// of small arrays, and elementwise / reduction / matmul throughput.
//
//   bun run bench/core.bench.ts           (ROUNDS=n for more repetitions)
import * as mg from "../ts/index.ts";
import type { MgArray } from "../ts/core/array.ts";
import { ROUNDS, row, timeMs } from "./util.ts";

const cpu = { stream: mg.cpu };
console.log("core (CPU device), medians of", ROUNDS, "rounds");

// Framework overhead: 10,000 ops on 4-element arrays, built then evaluated.
{
  const OPS = 10_000;
  const x = mg.array([1, 2, 3, 4], mg.float32);
  let built: MgArray = x;
  const buildMs = timeMs(() => {
    built = x;
    for (let i = 0; i < OPS; i++) built = mg.add(built, 1, cpu);
  }, ROUNDS);
  row(`build ${OPS} ops on (4,) float32`, `${(OPS / buildMs).toFixed(0)} ops/ms (${((buildMs * 1e3) / OPS).toFixed(2)} µs/op)`);
  const totalMs = timeMs(() => {
    let y: MgArray = x;
    for (let i = 0; i < OPS; i++) y = mg.add(y, 1, cpu);
    mg.eval(y);
  }, ROUNDS);
  row(`build + eval ${OPS} ops on (4,) float32`, `${(OPS / totalMs).toFixed(0)} ops/ms (${((totalMs * 1e3) / OPS).toFixed(2)} µs/op)`);
}

function throughput(name: string, make: () => MgArray, bytes: number, flops = 0): void {
  const ms = timeMs(() => mg.eval(make()), ROUNDS);
  const gbs = bytes / ms / 1e6;
  row(name, `${ms.toFixed(2)} ms  ${gbs.toFixed(2)} GB/s${flops ? `  ${(flops / ms / 1e6).toFixed(2)} GFLOP/s` : ""}`);
}

const N = 1 << 20;
const a = mg.array(Float32Array.from({ length: N }, (_, i) => Math.sin(i)));
const b = mg.array(Float32Array.from({ length: N }, (_, i) => Math.cos(i)));
mg.eval(a, b);
throughput("add, 1M float32", () => mg.add(a, b, cpu), 3 * 4 * N);
throughput("exp, 1M float32", () => mg.exp(a, cpu), 2 * 4 * N);
throughput("sum over 1M float32", () => mg.sum(a, null, false, cpu), 4 * N);
const m2 = mg.reshape(a, [1024, 1024]);
throughput("sum over rows of 1024x1024 float32", () => mg.sum(m2, 1, false, cpu), 4 * N);
throughput("sum over columns of 1024x1024 float32", () => mg.sum(m2, 0, false, cpu), 4 * N);
const s = 256;
const A = mg.array(Float32Array.from({ length: s * s }, (_, i) => Math.sin(i)), null, { shape: [s, s] });
const B = mg.array(Float32Array.from({ length: s * s }, (_, i) => Math.cos(i)), null, { shape: [s, s] });
throughput(`matmul ${s}x${s}x${s} float32`, () => mg.matmul(A, B, cpu), 3 * 4 * s * s, 2 * s * s * s);
