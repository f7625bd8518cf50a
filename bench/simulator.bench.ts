// The MSL CPU simulator (issues 3 and 17).
//
// Part 1, through the ops: elementwise, reductions (all / rows / columns), softmax, scan, sort and
// GEMM on the simulated GPU, unchecked and in checked mode (MG_SIM_CHECK=1 is process-wide, so the
// checked column compares child processes: unchecked and checked children alternate, pairs of
// them, SIM_BENCH_CHECKED_PAIRS, default 2, and both sides' rounds are pooled), next
// to the same ops on the TypeScript CPU device, numpy and MLX's CPU device (a Python child process,
// /work/mlxenv/bin/python or $MG_BENCH_PYTHON) in the same run. Throughput is input elements per
// second as GB/s of float32 input (GEMM: GFLOP/s); "vs ew" is the op's throughput over the
// simulator's own elementwise throughput on the same bytes (add over an array of the input's size).
// Goals (issue 17): reductions, softmax and scans >= 25% of elementwise, simdgroup-matrix GEMM >= 5
// GFLOP/s, checked mode <= 10x unchecked.
//
// Part 2, through the runtime: raw kernels (a barrier-free elementwise kernel and block_sum, a
// reduction with barriers and simd_sum on 4 floats per thread) and compile times.
//
//   bun run bench/simulator.bench.ts          (ROUNDS=n, default 7; SIM_BENCH_ONLY=ops|raw; SIM_BENCH_WARMUP_MS=500;
//                                              SIM_BENCH_CASES=text: only the op cases whose name contains it)
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as mg from "../ts/index.ts";
import type { MgArray } from "../ts/core/array.ts";
import { runtime } from "../ts/backend/runtime.ts";
import { median, ROUNDS, row } from "./util.ts";

const rt = runtime();
const PYTHON = process.env.MG_BENCH_PYTHON ?? "/work/mlxenv/bin/python";

if (process.argv[2] === "--compile") {
  // Child process: time one library build of the source in argv[3] (a disk-cache hit).
  const t0 = performance.now();
  rt.library(await Bun.file(process.argv[3]!).text());
  console.log((performance.now() - t0).toFixed(3));
  process.exit(0);
}

// --- part 1: ops ---------------------------------------------------------------------------------

interface OpCase {
  name: string;
  /** float32 inputs, by shape */
  inputs: number[][];
  /** what it runs on its inputs */
  run: (xs: MgArray[], dev: mg.Device) => MgArray;
  /** the elementwise baseline it is compared with (same input bytes), or none */
  ew?: string;
  /** floating-point operations (GEMM): reported as GFLOP/s instead of GB/s */
  flops?: number;
  /** the numpy / MLX spelling, over inputs x0, x1 (Python) */
  py: string;
}

const M = 1024;
const BIG = 16 * 1024 * 1024;
const G = 512;
const ALL_CASES: OpCase[] = [
  { name: "add 16M (x + 1)", inputs: [[BIG]], run: ([x], d) => mg.add(x!, 1, { stream: d }), py: "x0 + 1" },
  { name: "add 1024x1024 (x + 1)", inputs: [[M, M]], run: ([x], d) => mg.add(x!, 1, { stream: d }), py: "x0 + 1" },
  { name: "sum all 16M", inputs: [[BIG]], run: ([x], d) => mg.sum(x!, undefined, { stream: d }), ew: "add 16M (x + 1)", py: "S(x0)" },
  { name: "sum rows 1024x1024 (axis -1)", inputs: [[M, M]], run: ([x], d) => mg.sum(x!, -1, { stream: d }), ew: "add 1024x1024 (x + 1)", py: "S(x0, axis=-1)" },
  { name: "sum columns 1024x1024 (axis 0)", inputs: [[M, M]], run: ([x], d) => mg.sum(x!, 0, { stream: d }), ew: "add 1024x1024 (x + 1)", py: "S(x0, axis=0)" },
  { name: "softmax rows 1024x1024", inputs: [[M, M]], run: ([x], d) => mg.softmax(x!, -1, { stream: d }), ew: "add 1024x1024 (x + 1)", py: "SOFTMAX(x0)" },
  { name: "cumsum rows 1024x1024", inputs: [[M, M]], run: ([x], d) => mg.cumsum(x!, -1, { stream: d }), ew: "add 1024x1024 (x + 1)", py: "CUMSUM(x0)" },
  { name: "sort rows 1024x1024", inputs: [[M, M]], run: ([x], d) => mg.sort(x!, -1, { stream: d }), ew: "add 1024x1024 (x + 1)", py: "SORT(x0)" },
  { name: "matmul 512x512 @ 512x512", inputs: [[G, G], [G, G]], run: ([a, b], d) => mg.matmul(a!, b!, { stream: d }), flops: 2 * G ** 3, py: "x0 @ x1" },
];
/** SIM_BENCH_CASES=text: the cases whose name contains it, and their elementwise baselines. */
const CASES = ALL_CASES.filter((c) => {
  const only = process.env.SIM_BENCH_CASES;
  return !only || c.name.includes(only) || ALL_CASES.some((d) => d.ew === c.name && d.name.includes(only));
});

/** Deterministic float32 values in [0, 1) (no dependency on mg.random). */
function values(shape: number[], seed: number): Float32Array {
  const n = shape.reduce((a, b) => a * b, 1);
  const v = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    v[i] = s / 4294967296;
  }
  return v;
}

function inputElements(c: OpCase): number {
  return c.inputs[0]!.reduce((a, b) => a * b, 1);
}

/** Warm-up per case and device before the timed rounds (SIM_BENCH_WARMUP_MS, default 500). */
const WARMUP_MS = Number(process.env.SIM_BENCH_WARMUP_MS ?? 500);

/** Milliseconds of each round of each case on `dev` (inputs evaluated first; the result waited for). */
function timeCases(dev: mg.Device, rounds: number): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const c of CASES) {
    const xs = c.inputs.map((shape, i) => mg.array(values(shape, 7 + i), mg.float32, { shape }));
    const moved = xs.map((x) => mg.add(x, 0, { stream: dev }));
    mg.eval(moved);
    mg.synchronize();
    const once = () => {
      const r = c.run(moved, dev);
      mg.eval(r);
      mg.synchronize();
    };
    // Compiles kernels, lets them tier up and the buffer pool and page mappings settle: the same
    // warm-up on both sides (one call left checked add 16M at 10-14x, 1.5 s of calls 6-7x).
    once();
    for (const start = performance.now(); performance.now() - start < WARMUP_MS; ) once();
    const times: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const t0 = performance.now();
      once();
      times.push(performance.now() - t0);
    }
    out[c.name] = times;
  }
  return out;
}

function medians(times: Record<string, number[]>): Record<string, number> {
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
}

if (process.argv[2] === "--ops-child") {
  // Child process (MG_SIM_CHECK=1 or not, set by the parent): the simulated GPU's round times, as JSON.
  console.log(JSON.stringify(timeCases(mg.gpu, Number(process.argv[3] ?? ROUNDS))));
  process.exit(0);
}

const PY_BENCH = `
import json, sys, time
import numpy as np
rounds = int(sys.argv[1])
cases = json.loads(sys.argv[2])
def vals(shape, seed):
    # uniform floats in [0, 1), as the TypeScript side uses (not the same values: same work)
    return np.random.default_rng(seed).random(int(np.prod(shape)), dtype=np.float32).reshape(shape)
def med(f):
    f(); ts = []
    for _ in range(rounds):
        t0 = time.perf_counter(); f(); ts.append((time.perf_counter() - t0) * 1e3)
    ts.sort(); return ts[len(ts) // 2]
res = {"numpy": {}, "mlx": {}}
npfn = {"S": np.sum, "SOFTMAX": lambda x: (lambda e: e / e.sum(-1, keepdims=True))(np.exp(x - x.max(-1, keepdims=True))),
        "CUMSUM": lambda x: np.cumsum(x, -1), "SORT": lambda x: np.sort(x, -1)}
for c in cases:
    xs = [vals(s, 7 + i) for i, s in enumerate(c["inputs"])]
    env = dict(npfn); env.update({f"x{i}": x for i, x in enumerate(xs)})
    res["numpy"][c["name"]] = med(lambda: eval(c["py"], env))
try:
    import mlx.core as mx
    mx.set_default_device(mx.cpu)
    mxfn = {"S": mx.sum, "SOFTMAX": lambda x: mx.softmax(x, -1), "CUMSUM": lambda x: mx.cumsum(x, -1), "SORT": lambda x: mx.sort(x, -1)}
    for c in cases:
        xs = [mx.array(vals(s, 7 + i)) for i, s in enumerate(c["inputs"])]
        mx.eval(xs)
        env = dict(mxfn); env.update({f"x{i}": x for i, x in enumerate(xs)})
        res["mlx"][c["name"]] = med(lambda: mx.eval(eval(c["py"], env)))
    res["mlx_version"] = mx.__version__
except Exception as e:
    res["mlx_error"] = str(e)
print(json.dumps(res))
`;

function pythonTimes(): { numpy: Record<string, number>; mlx: Record<string, number>; note?: string } {
  const cases = CASES.map((c) => ({ name: c.name, inputs: c.inputs, py: c.py }));
  try {
    const r = Bun.spawnSync([PYTHON, "-c", PY_BENCH, String(ROUNDS), JSON.stringify(cases)], { stderr: "pipe" });
    if (r.exitCode !== 0) return { numpy: {}, mlx: {}, note: `python failed: ${r.stderr.toString().trim().split("\n").pop()}` };
    const j = JSON.parse(r.stdout.toString());
    return { numpy: j.numpy, mlx: j.mlx, note: j.mlx_error ? `MLX: ${j.mlx_error}` : `MLX ${j.mlx_version} (CPU)` };
  } catch (e) {
    return { numpy: {}, mlx: {}, note: `no python at ${PYTHON}: ${(e as Error).message}` };
  }
}

function rate(c: OpCase, ms: number | undefined): string {
  if (ms === undefined) return "-";
  if (c.flops) return `${(c.flops / ms / 1e6).toFixed(2)} GFLOP/s`;
  return `${((4 * inputElements(c)) / ms / 1e6).toFixed(2)} GB/s`;
}

function fmt(ms: number | undefined): string {
  return ms === undefined ? "-" : ms < 10 ? ms.toFixed(2) : ms.toFixed(1);
}

async function opsBench(): Promise<void> {
  console.log(`ops on the simulated GPU (${rt.device.name}) and the CPU device, medians of ${ROUNDS} rounds (ms)`);
  const gpu = medians(timeCases(mg.gpu, ROUNDS));
  // Checked mode is process-wide (MG_SIM_CHECK=1): unchecked and checked child processes alternate,
  // so both sides see the same machine state; their rounds are pooled per side.
  const pairs = Math.max(1, Number(process.env.SIM_BENCH_CHECKED_PAIRS ?? 2));
  const sides: [Record<string, number[]>, Record<string, number[]>] = [{}, {}];
  const pairRatios: Record<string, number[]> = {};
  let checkedNote = "";
  for (let p = 0; p < pairs && !checkedNote; p++) {
    const got: Record<string, number[]>[] = [];
    for (const check of ["0", "1"]) {
      const child = Bun.spawnSync(["bun", import.meta.path, "--ops-child", String(ROUNDS)], {
        env: { ...process.env, MG_SIM_CHECK: check },
        stderr: "pipe",
      });
      try {
        got.push(JSON.parse(child.stdout.toString().trim().split("\n").pop() ?? "{}"));
      } catch {
        checkedNote = `${check === "1" ? "checked" : "unchecked"} child failed: ${child.stderr.toString().trim().split("\n").slice(-3).join(" | ")}`;
        break;
      }
    }
    if (checkedNote) break;
    for (const c of CASES) {
      const [u, k] = [got[0]![c.name], got[1]![c.name]];
      if (!u || !k) continue;
      (sides[0][c.name] ??= []).push(...u);
      (sides[1][c.name] ??= []).push(...k);
      (pairRatios[c.name] ??= []).push(median(k) / median(u));
    }
  }
  const cpu = medians(timeCases(mg.cpu, ROUNDS));
  const py = pythonTimes();
  const header = ["op", "sim ms", "sim rate", "vs ew", "checked ms (min-max)", "x unchecked (pairs)", "cpu ms", "numpy ms", "mlx ms"];
  const rows: string[][] = [];
  for (const c of CASES) {
    const ms = gpu[c.name]!;
    let vsEw = "";
    if (c.ew) {
      // Element throughput relative to the same-size elementwise op (both over the input elements).
      const ewMs = gpu[c.ew]!;
      vsEw = `${((100 * ewMs) / ms).toFixed(0)}%`;
    }
    const [u, k] = [sides[0][c.name], sides[1][c.name]];
    const ckCell = k ? `${fmt(median(k))} (${fmt(Math.min(...k))}-${fmt(Math.max(...k))})` : "-";
    const r = pairRatios[c.name] ?? [];
    const ratioCell = u && k ? `${(median(k) / median(u)).toFixed(1)}x (${r.map((x) => x.toFixed(1)).join(", ")})` : "-";
    rows.push([c.name, fmt(ms), rate(c, ms), vsEw, ckCell, ratioCell, fmt(cpu[c.name]), fmt(py.numpy[c.name]), fmt(py.mlx[c.name])]);
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => "  " + r.map((x, i) => (i === 0 ? x.padEnd(widths[i]!) : x.padStart(widths[i]!))).join("  ");
  console.log(line(header));
  for (const r of rows) console.log(line(r));
  console.log(`  checked: ${pairs} alternating pair(s) of unchecked / checked child processes, ${ROUNDS} rounds each; checked median (min-max of its rounds) and checked median / unchecked children's median (each pair's ratio in parentheses)`);
  if (checkedNote) console.log(`  ${checkedNote}`);
  if (py.note) console.log(`  python: ${py.note}`);
  const stats = rt.simulatorStats();
  console.log(`  simulator: ${JSON.stringify(stats)}`);
}

// --- part 2: raw kernels through the runtime ----------------------------------------------------

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

async function rawBench(): Promise<void> {
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

  console.log(`raw kernels through the runtime (${rt.device.name}), medians of ${ROUNDS} rounds`);
  const ew = runMs(ELEMENTWISE, "axpb", N, 256, y);
  row("elementwise y = 2x + 1, 16M floats (barrier-free: plain loops)", `${ew.toFixed(1)} ms  ${((8 * N) / ew / 1e6).toFixed(2)} GB/s`);
  checkedCost(x, y, N);
  const partials = rt.newBuffer((4 * N) / 1024);
  const red = runMs(REDUCTION, "block_sum", N / 4, 256, partials);
  row("block_sum: simd_sum + barriers, 4 floats per thread, 16M floats", `${red.toFixed(1)} ms  ${((4 * N) / red / 1e6).toFixed(2)} GB/s`);

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
}

// What checked mode costs on a barrier-free elementwise kernel (issue 17: <= 10x unchecked; this
// path's own target <= 5x): the same kernel compiled unchecked and checked in this process, y
// declared must-write, rounds alternating so both see the same machine load (the ops table's
// checked column runs in a child process at another moment). Both warm up for >= 1 s first,
// which also lets the checked library tier up (a large dispatch promotes at once).
function checkedCost(x: ReturnType<typeof rt.newBuffer>, y: ReturnType<typeof rt.newBuffer>, n: number): void {
  const kernels = [rt.library(ELEMENTWISE).pipeline("axpb"), rt.library(ELEMENTWISE, { checked: true }).pipeline("axpb")];
  const once = (k: number): number => {
    const t0 = performance.now();
    rt.newBatch()
      .dispatch({
        pipeline: kernels[k]!,
        buffers: [{ index: 0, buffer: x, access: "read" }, { index: 1, buffer: y, access: "write" }],
        grid: [n, 1, 1],
        threadgroup: [256, 1, 1],
        mustWrite: [1],
      })
      .submit()
      .wait();
    return performance.now() - t0;
  };
  for (const start = performance.now(); performance.now() - start < 1000; ) {
    once(0);
    once(1);
  }
  const times: [number[], number[]] = [[], []];
  for (let r = 0; r < Math.max(ROUNDS, 5); r++) {
    times[0].push(once(0));
    times[1].push(once(1));
  }
  const [plain, checked] = [median(times[0]), median(times[1])];
  const span = (t: number[]) => `${Math.min(...t).toFixed(1)}-${Math.max(...t).toFixed(1)}`;
  row(
    "the same, checked mode (bounds, must-write, races), alternating rounds",
    `${checked.toFixed(1)} ms (${span(times[1])}) = ${(checked / plain).toFixed(1)}x unchecked (${plain.toFixed(1)} ms, ${span(times[0])}; goal <= 5x)`,
  );
}

const only = process.env.SIM_BENCH_ONLY;
if (!only || only === "ops") await opsBench();
if (!only || only === "raw") await rawBench();
