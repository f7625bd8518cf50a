// FFI + encoding cost per dispatch: 10,000 trivial dispatches submitted as one batch (one FFI call)
// versus one batch (one FFI call) per dispatch. Prints medians in ns per dispatch.
//
//   bun run bench/runtime-dispatch.bench.ts            (MG_RUNTIME_LIB or .build/ as usual)
//
// "submit" times the FFI call alone (validation + Metal encoding + commit); "encode + submit" adds
// packing the dispatches in TypeScript. The queue is drained between measurements, outside the
// timed region; "+ wait" includes running them on the GPU (or the simulator).
import { runtime } from "../ts/backend/runtime.ts";

const N = 10_000;
const ROUNDS = Number(process.env.ROUNDS ?? 7);

const rt = runtime();
const pipeline = rt.library(`
#include <metal_stdlib>
using namespace metal;
[[kernel]] void touch(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  if (i == 0xffffffffu) x[0] = 0.0f;  // never true: the dispatch does no work
}`).pipeline("touch");
const x = rt.newBuffer(256);
const queue = rt.newQueue();
const dispatch = { pipeline, buffers: [{ index: 0, buffer: x, access: "read" as const }], grid: 1, threadgroup: 1 };

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function drain(): void {
  rt.newBatch().dispatch(dispatch).submit(queue).wait();
}

const encodeOnly: number[] = [];
const batchEncodeSubmit: number[] = [];
const batchSubmit: number[] = [];
const batchEndToEnd: number[] = [];
const eachEncodeSubmit: number[] = [];
const eachEndToEnd: number[] = [];

for (let round = 0; round < ROUNDS; round++) {
  // One batch of N.
  drain();
  const batch = rt.newBatch();
  let t0 = Bun.nanoseconds();
  for (let i = 0; i < N; i++) batch.dispatch(dispatch);
  const t1 = Bun.nanoseconds();
  const submitted = batch.submit(queue);
  const t2 = Bun.nanoseconds();
  submitted.wait();
  const t3 = Bun.nanoseconds();
  encodeOnly.push((t1 - t0) / N);
  batchSubmit.push((t2 - t1) / N);
  batchEncodeSubmit.push((t2 - t0) / N);
  batchEndToEnd.push((t3 - t0) / N);

  // N batches of one, each its own FFI call and command buffer; waiting only at the end.
  drain();
  const pending = [];
  t0 = Bun.nanoseconds();
  for (let i = 0; i < N; i++) pending.push(rt.newBatch().dispatch(dispatch).submit(queue));
  const t4 = Bun.nanoseconds();
  for (const p of pending) p.wait();
  const t5 = Bun.nanoseconds();
  eachEncodeSubmit.push((t4 - t0) / N);
  eachEndToEnd.push((t5 - t0) / N);
}

const fmt = (v: number) => v.toFixed(0).padStart(8);
console.log(`runtime dispatch cost: ${N} trivial dispatches, median of ${ROUNDS} rounds, ns per dispatch`);
console.log(
  `device: ${rt.device.name} (${rt.device.architecture}), ${rt.device.maxOpsPerCommandBuffer} dispatches per command buffer`,
);
console.log(`  one batch     JS encode only           ${fmt(median(encodeOnly))}`);
console.log(`  one batch     submit (1 FFI call)      ${fmt(median(batchSubmit))}`);
console.log(`  one batch     encode + submit          ${fmt(median(batchEncodeSubmit))}`);
console.log(`  one batch     encode + submit + wait   ${fmt(median(batchEndToEnd))}`);
console.log(`  one per call  encode + submit          ${fmt(median(eachEncodeSubmit))}`);
console.log(`  one per call  encode + submit + wait   ${fmt(median(eachEndToEnd))}`);
console.log(
  `  ratio, encode + submit (one per call / one batch): ${(median(eachEncodeSubmit) / median(batchEncodeSubmit)).toFixed(1)}x`,
);
x.release();
