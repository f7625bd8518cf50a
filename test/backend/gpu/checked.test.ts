// The simulator's checked mode over the built-in kernels (issue 17): every kernel family that uses
// threadgroup memory, barriers, simd collectives, simdgroup matrices or atomics runs once in a
// child process with MG_SIM_CHECK=1 (bounds, unwritten outputs, races and uninitialised reads all
// checked) and must agree with the CPU device and report nothing; a planted race in a custom kernel
// must be reported end to end, with its kind, kernel, memory, threads and source lines.
//
// CI runs the whole differential suite (test/backend/gpu/**, this file included) once in checked
// mode (`bun run test:checked`, beside the unchecked run of every other file; .ci/run); this file
// is the share of it that a plain `bun run test` checks too.
import { expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import { accumulationTolerance } from "../../../ts/testing/tolerances.ts";
import { expectClose, input, runOn } from "./harness.ts";

const CHILD = process.argv.includes("--checked-child");

interface Case {
  name: string;
  run: () => MgArray | MgArray[];
  /** terms summed per result (the accumulation tolerance), 1 for exact-ish ops */
  terms?: number;
}

/** One op per kernel family (and layout variant), small but past every tile and simdgroup edge. */
function cases(): Case[] {
  const f = input([37, 300], mg.float32, 1);
  const h = input([19, 260], mg.float16, 2);
  const i32 = input([41, 77], mg.int32, 3);
  const big = input([70000], mg.float32, 4);
  const a = input([70, 90], mg.float32, 5);
  const b = input([90, 50], mg.float32, 6);
  const ah = input([64, 64], mg.float16, 7);
  const kLong = input([16, 2304], mg.float32, 8);
  const kLongB = input([2304, 24], mg.float32, 9);
  const v = input([90], mg.float32, 10);
  const idx = mg.array(Int32Array.from({ length: 300 }, (_, k) => (k * 7) % 11), mg.int32);
  const ups = input([300], mg.float32, 11);
  const sortIn = input([9, 3000], mg.float32, 12);
  return [
    { name: "sum, all (two passes)", run: () => mg.sum(big), terms: 70000 },
    { name: "sum rows, max rows (int32), prod rows (float16)", run: () => [mg.sum(f, -1), mg.max(i32, -1), mg.prod(h, -1)], terms: 300 },
    { name: "sum columns, min columns", run: () => [mg.sum(f, 0), mg.min(i32, 0)], terms: 37 },
    { name: "sum over a strided axis set (general)", run: () => mg.sum(mg.transpose(input([6, 7, 8], mg.float32, 13), [2, 0, 1]), [0, 2]), terms: 48 },
    { name: "argmax rows, argmin columns", run: () => [mg.argmax(f, -1), mg.argmin(i32, 0)] },
    { name: "softmax, logsumexp rows (float32, float16)", run: () => [mg.softmax(f, -1), mg.logsumexp(h, -1)], terms: 300 },
    { name: "cumsum / cummax rows, cumsum columns, reverse exclusive", run: () => [mg.cumsum(f, -1), mg.cummax(i32, -1), mg.cumsum(f, 0), mg.cumsum(f, -1, { reverse: true, inclusive: false })], terms: 300 },
    { name: "sort, argsort (block and merge passes), partition", run: () => [mg.sort(sortIn, -1), mg.argsort(f, -1), mg.partition(f, 100, -1)] },
    { name: "matmul (simdgroup matrices: float32, float16), addmm", run: () => [mg.matmul(a, b), mg.matmul(ah, ah), mg.addmm(input([70, 50], mg.float32, 14), a, b)], terms: 90 },
    { name: "matmul, split-K", run: () => mg.matmul(kLong, kLongB), terms: 2304 },
    { name: "matmul-vector (gemv, gemv transposed)", run: () => [mg.matmul(a, v), mg.matmul(input([70], mg.float32, 15), a)], terms: 90 },
    { name: "scatter-add with repeated indices (atomics)", run: () => mg.zeros([11], mg.float32).at(idx).add(ups), terms: 30 },
    { name: "gather, fused elementwise", run: () => [mg.take(f, idx, 1), mg.tanh(mg.add(mg.multiply(f, 2), 1))] },
  ];
}

const PLANTED = `
  uint i = thread_position_in_grid.x;
  uint l = thread_position_in_threadgroup.x;
  threadgroup float t[64];
  t[l] = inp[i];
  out[i] = t[(l + 1) % 64];
`;

if (CHILD) {
  // The child: MG_SIM_CHECK=1 is set by the parent, so every kernel compiles in checked mode.
  const failures: string[] = [];
  for (const c of cases()) {
    try {
      const cpu = runOn(mg.cpu, c.run);
      const gpu = runOn(mg.gpu, c.run);
      gpu.forEach((g, k) => expectClose(g, cpu[k]!, accumulationTolerance(cpu[k]!.dtype, c.terms ?? 1), `${c.name}[${k}]`));
    } catch (e) {
      failures.push(`${c.name}: ${(e as Error).message}`);
    }
  }
  let planted = "";
  try {
    const k = mg.fast.metalKernel({ name: "planted_race", inputNames: ["inp"], outputNames: ["out"], source: PLANTED });
    const [out] = k({ inputs: [mg.arange(128, mg.float32)], grid: [128, 1, 1], threadgroup: [64, 1, 1], outputShapes: [[128]], outputDtypes: [mg.float32], stream: mg.gpu });
    out!.dataSync();  // waits for the batch, which fails
  } catch (e) {
    planted = (e as Error).message;
  }
  console.log(JSON.stringify({ failures, planted }));
  process.exit(0);
}

test("checked mode: the built-in kernel families run clean (no race, no uninitialised read, no bounds error) and agree with the CPU device; a planted race is reported", () => {
  const child = Bun.spawnSync([process.execPath, import.meta.path, "--checked-child"], {
    env: { ...process.env, MG_SIM_CHECK: "1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = child.stdout.toString();
  expect(child.exitCode, `${out.slice(-1500)}\n${child.stderr.toString().slice(-1500)}`).toBe(0);
  const { failures, planted } = JSON.parse(out.trim().split("\n").pop()!) as { failures: string[]; planted: string };
  expect(failures).toEqual([]);
  // Each lane reads its neighbour's element with no barrier after the writes.
  expect(planted).toContain("race in kernel 'custom_kernel_planted_race");
  expect(planted).toContain("threadgroup variable 't'");
  expect(planted).toMatch(/(read-after-write|write-after-read)/);
  expect(planted).toMatch(/thread \(\d+, 0, 0\) at line \d+ .* thread \(\d+, 0, 0\) at line \d+/);
}, 600_000);
