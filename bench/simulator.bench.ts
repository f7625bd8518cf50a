// The MSL CPU simulator (issue 3), through the runtime: throughput of a barrier-free elementwise
// kernel on 16M floats and of a reduction that uses barriers and simd_sum, and compile time cold
// (new source), cached in memory (same process) and from the on-disk cache (a second process).
//
//   bun run bench/simulator.bench.ts          (ROUNDS=n)
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { runtime } from "../ts/backend/runtime.ts";
import { median, ROUNDS, row } from "./util.ts";

const rt = runtime();
if (process.argv[2] === "--compile") {
  // Child process: time one library build of the source in argv[3] (a disk-cache hit).
  const t0 = performance.now();
  rt.library(await Bun.file(process.argv[3]!).text());
  console.log((performance.now() - t0).toFixed(3));
  process.exit(0);
}

const ELEMENTWISE = `
#include <metal_stdlib>
using namespace metal;
[[kernel]] void axpb(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
  y[i] = x[i] * 2.0f + 1.0f;
}`;

// One threadgroup sums 1024 inputs: simd_sum per simdgroup, then a tree over threadgroup memory.
// The same kernel as test/native/mslsim/bench_sim.cpp times, from the shared fixture.
const REDUCTION = readFileSync(join(import.meta.dir, "../test/fixtures/bench-kernels/block_sum.metal"), "utf8");

const N = 16 * 1024 * 1024;
const x = rt.newBuffer(4 * N);
const xs = x.as(Float32Array);
for (let i = 0; i < N; i++) xs[i] = (i % 1000) / 1000;
const y = rt.newBuffer(4 * N);

function runMs(kernel: string, name: string, grid: number, tg: number, out: typeof y): number {
  const pipeline = rt.library(kernel).pipeline(name);
  const times: number[] = [];
  for (let r = 0; r <= ROUNDS; r++) {
    const t0 = performance.now();
    rt.newBatch()
      .dispatch({ pipeline, buffers: [{ index: 0, buffer: x, access: "read" }, { index: 1, buffer: out, access: "write" }], grid: [grid, 1, 1], threadgroup: [tg, 1, 1] })
      .submit()
      .wait();
    if (r > 0) times.push(performance.now() - t0); // the first run warms caches
  }
  return median(times);
}

console.log(`MSL simulator (${rt.device.name}), medians of ${ROUNDS} rounds`);
const ew = runMs(ELEMENTWISE, "axpb", N, 256, y);
row("elementwise y = 2x + 1, 16M floats (barrier-free: plain loops)", `${ew.toFixed(1)} ms  ${((8 * N) / ew / 1e6).toFixed(2)} GB/s`);
const partials = rt.newBuffer((4 * N) / 1024);
const red = runMs(REDUCTION, "block_sum", N / 4, 256, partials);
row("reduction with simd_sum + barriers, 16M floats (fibers)", `${red.toFixed(1)} ms  ${((4 * N) / red / 1e6).toFixed(2)} GB/s`);

// Compile times: a fresh source (cold), the same again (in-memory), then a second process (disk).
const fresh = `${ELEMENTWISE}\n// nonce ${Date.now()}-${Math.random()}\n`;
let t0 = performance.now();
rt.library(fresh);
const cold = performance.now() - t0;
t0 = performance.now();
rt.library(fresh);
const memory = performance.now() - t0;
const path = `/tmp/mg-sim-bench-${process.pid}.metal`;
await Bun.write(path, fresh);
const child = Bun.spawnSync(["bun", import.meta.path, "--compile", path], { env: process.env });
const disk = Number(child.stdout.toString().trim());
row("compile a small kernel: cold / in-memory cache / disk cache (2nd process)", `${cold.toFixed(1)} ms / ${memory.toFixed(3)} ms / ${disk.toFixed(2)} ms`);
