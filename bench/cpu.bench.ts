// The CPU device side by side with numpy and MLX's CPU backend, in one run: elementwise,
// reductions, softmax, matmul, an MLP training step, a fused 10-op chain and the cost of one tiny op.
// Times are medians of ROUNDS runs after a warm-up, with the quartiles in brackets (the machine
// is often shared: a wide bracket says the median is load, not code); every result is freed before
// the next run (metalgrad: tidy + dispose, as numpy and MLX free theirs by reference count).
// The warm-up is the same rule on every side: at least WARMUP runs and at least WARMUP_MS of runs.
// The rows measure steady-state speed, and Bun's JIT tiers a new op's code path up over its first
// hundreds of calls (on 2 shared cores its compiler threads also take the core from the main
// thread: calls 3–8 of a fresh sum 1M spent 0.3–5 ms outside the 0.1 ms kernel, and after 50 ms
// of add 1M warm-up the JIT threads still ran during the timed rounds; after 200 ms they did not),
// while numpy's and MLX's compiled loops need no tier-up (their medians are the same after 2 or
// 20 warm-up runs). The "(runs 3–11)" rows keep the cold cost in view: they time runs WARMUP+1 …
// WARMUP+ROUNDS (3–11 by default) of the same loop on every side, the measurement this bench made
// before the time-based warm-up.
//
//   MG_PYTHON=/work/mlxenv/bin/python bun run bench/cpu.bench.ts  (ROUNDS=9 WARMUP=2 WARMUP_MS=200)
//
// "mg/numpy" is numpy's time over metalgrad's (above 1: metalgrad is faster). GB/s counts bytes read
// and written once; GFLOP/s counts 2·M·N·K. The "tiny op wall:" rows split metalgrad's wall time per
// op (Linux schedstat of the eval thread) into time on a core, waiting for one, and blocked.
import * as mg from "../ts/index.ts";
import type { MgArray } from "../ts/core/array.ts";
import { nativeInfo } from "../ts/backend/cpu/native/index.ts";
import { readFileSync } from "node:fs";
import { pythonWith } from "./util.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 9);
const WARMUP = Number(process.env.WARMUP ?? 2);
const WARMUP_MS = Number(process.env.WARMUP_MS ?? 200);
const S = { stream: mg.cpu };
const M1 = 1 << 20;
const M16 = 1 << 24;

interface Case {
  name: string;
  /** Bytes moved (GB/s) or flops (GFLOP/s) per run; 0: time only. */
  bytes?: number;
  flops?: number;
  /** Time per op in µs instead of ms. */
  perOp?: number;
}

const CASES: Case[] = [
  { name: "add 1M f32", bytes: 12 * M1 },
  { name: "add 1M f32 (runs 3–11)", bytes: 12 * M1 },
  { name: "add 16M f32", bytes: 12 * M16 },
  { name: "exp 1M f32", bytes: 8 * M1 },
  { name: "exp 16M f32", bytes: 8 * M16 },
  { name: "sum 1M f32", bytes: 4 * M1 },
  { name: "sum 1M f32 (runs 3–11)", bytes: 4 * M1 },
  { name: "sum 16M f32", bytes: 4 * M16 },
  { name: "softmax rows 1M f32 (1024x1024)", bytes: 8 * M1 },
  { name: "softmax rows 16M f32 (16384x1024)", bytes: 8 * M16 },
  { name: "gelu (10 ops) 16M f32", bytes: 8 * M16 },
  ...[256, 512, 1024].flatMap((n) => [
    { name: `matmul ${n} f32`, flops: 2 * n ** 3 },
    { name: `matmul ${n} f64`, flops: 2 * n ** 3 },
  ]),
  { name: "MLP step 64x256x256x10 (fwd+bwd)" },
  { name: "tiny op (4,) f32 add, build+eval", perOp: 10000 },
  { name: "tiny op, CPU time (not wall)", perOp: 10000 },
  { name: "tiny op wall: on a core", perOp: 10000 },
  { name: "tiny op wall: waiting for a core", perOp: 10000 },
  { name: "tiny op wall: blocked", perOp: 10000 },
];

// ---- metalgrad -----------------------------------------------------------------------------------

function filled(n: number, seed: number, dtype: mg.Dtype = mg.float32, shape = [n]): MgArray {
  const v = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    v[i] = (s / 4294967296 - 0.5) * 4;
  }
  const a = mg.astype(mg.array(v, mg.float32, { shape }), dtype, S);
  mg.eval(a);
  return a;
}

/** Median and quartiles of a sample, in ms. */
interface Stat {
  med: number;
  q1: number;
  q3: number;
}
function stat(values: readonly number[]): Stat {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length - 1;
  return { med: s[Math.round(n / 2)]!, q1: s[Math.floor(n / 4)]!, q3: s[Math.ceil((3 * n) / 4)]! };
}

/** Runs of the last time() call's warm-up and rounds, in ms (for the "(runs 3–11)" rows). */
let lastRuns: number[] = [];

function time(run: () => void, warmup = WARMUP): Stat {
  const ms: number[] = [];
  const start = Bun.nanoseconds();
  for (let i = 0; i < warmup || Bun.nanoseconds() - start < WARMUP_MS * 1e6; i++) {
    const t0 = Bun.nanoseconds();
    run();
    ms.push((Bun.nanoseconds() - t0) / 1e6);
  }
  const warm = ms.length;
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = Bun.nanoseconds();
    run();
    ms.push((Bun.nanoseconds() - t0) / 1e6);
  }
  lastRuns = ms;
  return stat(ms.slice(warm));
}

/** Runs WARMUP+1 … WARMUP+ROUNDS of the last time() call: what a 2-run warm-up measures. */
function earlyRuns(): Stat {
  return stat(lastRuns.slice(WARMUP, WARMUP + ROUNDS));
}

/** Times building and evaluating `fn`'s result, freed after each run. */
function timeOp(fn: () => MgArray | MgArray[]): Stat {
  return time(() => {
    const out = mg.tidy(() => fn());
    const list = Array.isArray(out) ? out : [out];
    mg.eval(list);
    for (const a of list) a.dispose();
  });
}

function gelu(x: MgArray): MgArray {
  // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): 10 elementwise ops
  const x3 = mg.multiply(mg.multiply(x, x, S), x, S);
  const inner = mg.multiply(mg.add(x, mg.multiply(x3, 0.044715, S), S), Math.sqrt(2 / Math.PI), S);
  return mg.multiply(mg.multiply(x, 0.5, S), mg.add(mg.tanh(inner, S), 1, S), S);
}

function metalgrad(): Map<string, Stat> {
  const t = new Map<string, Stat>();
  // tiny ops: build + eval one add on a 4-element array, 10,000 times
  const small = mg.array([1, 2, 3, 4], mg.float32);
  mg.eval(small);
  const tiny = () => {
    for (let i = 0; i < 10000; i++) {
      const r = mg.add(small, 1, S);
      mg.eval(r);
      r.dispose();
    }
  };
  // Warm up for ~200k ops: Bun's JIT tiers up the eval path over the first ~100k ops on the same two
  // cores, and the row measures the steady-state cost per op, as numpy's side does after its warm-up.
  t.set("tiny op (4,) f32 add, build+eval", time(tiny, Math.max(WARMUP, 20)));
  // CPU time of this thread's process: what the op costs, whatever else the machine runs
  const cpu: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const u0 = process.cpuUsage();
    tiny();
    const u = process.cpuUsage(u0);
    cpu.push((u.user + u.system) / 1000);
  }
  t.set("tiny op, CPU time (not wall)", stat(cpu));
  // Where wall time goes that CPU time does not show (Linux): the eval thread's time on a core,
  // waiting in the run queue for one (other processes, or this process's JIT and GC threads) and
  // blocked (e.g. a GC handshake), from /proc/thread-self/schedstat.
  const sched = () => {
    try {
      return readFileSync("/proc/thread-self/schedstat", "utf8").trim().split(" ").map(Number);
    } catch {
      return null;
    }
  };
  if (sched()) {
    const on: number[] = [], queued: number[] = [], blocked: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const s0 = sched()!;
      const t0 = Bun.nanoseconds();
      tiny();
      const wall = Bun.nanoseconds() - t0;
      const s1 = sched()!;
      on.push((s1[0]! - s0[0]!) / 1e6);
      queued.push((s1[1]! - s0[1]!) / 1e6);
      blocked.push(Math.max(0, wall - (s1[0]! - s0[0]!) - (s1[1]! - s0[1]!)) / 1e6);
    }
    t.set("tiny op wall: on a core", stat(on));
    t.set("tiny op wall: waiting for a core", stat(queued));
    t.set("tiny op wall: blocked", stat(blocked));
  }

  const a1 = filled(M1, 1), b1 = filled(M1, 2), a16 = filled(M16, 3), b16 = filled(M16, 4);
  // The inputs' JS temporaries (2 × 64 MiB Float32Arrays) are garbage now: collect them before
  // timing, as numpy's and MLX's sides free theirs by reference count at once (gc.collect() there
  // too). Otherwise a full collection of a ~280 MB heap lands in the next rows: its marking threads
  // took the second core and add 1M's rounds ran 0.3–4.6 ms instead of 0.12 (BUN_JSC_logGC=1).
  Bun.gc(true);
  t.set("add 1M f32", timeOp(() => mg.add(a1, b1, S)));
  t.set("add 1M f32 (runs 3–11)", earlyRuns());
  t.set("add 16M f32", timeOp(() => mg.add(a16, b16, S)));
  t.set("exp 1M f32", timeOp(() => mg.exp(a1, S)));
  t.set("exp 16M f32", timeOp(() => mg.exp(a16, S)));
  t.set("sum 1M f32", timeOp(() => mg.sum(a1, undefined, S)));
  t.set("sum 1M f32 (runs 3–11)", earlyRuns());
  t.set("sum 16M f32", timeOp(() => mg.sum(a16, undefined, S)));
  const r1 = mg.reshape(a1, [1024, 1024], S), r16 = mg.reshape(a16, [16384, 1024], S);
  t.set("softmax rows 1M f32 (1024x1024)", timeOp(() => mg.softmax(r1, -1, S)));
  t.set("softmax rows 16M f32 (16384x1024)", timeOp(() => mg.softmax(r16, -1, S)));
  t.set("gelu (10 ops) 16M f32", timeOp(() => gelu(a16)));
  for (const n of [256, 512, 1024]) {
    for (const [dt, tag] of [[mg.float32, "f32"], [mg.float64, "f64"]] as const) {
      const a = filled(n * n, 5, dt, [n, n]), b = filled(n * n, 6, dt, [n, n]);
      t.set(`matmul ${n} ${tag}`, timeOp(() => mg.matmul(a, b, S)));
    }
  }
  // MLP step: valueAndGrad of a 2-layer MLP's cross-entropy, loss and gradients evaluated
  const scale = 1 / 16;
  const p = { w1: mg.multiply(filled(256 * 256, 7, mg.float32, [256, 256]), scale, S), b1: mg.multiply(filled(256, 8), 0.01, S), w2: mg.multiply(filled(2560, 9, mg.float32, [256, 10]), scale, S), b2: mg.multiply(filled(10, 10), 0.01, S) };
  const x = filled(64 * 256, 11, mg.float32, [64, 256]);
  const y = mg.astype(mg.equal(mg.reshape(mg.remainder(mg.arange(640, S), 10, S), [64, 10], S), mg.reshape(mg.remainder(mg.arange(64, S), 10, S), [64, 1], S), S), mg.float32, S);
  mg.eval(p.w1, p.b1, p.w2, p.b2, y);
  const loss = (q: typeof p) => {
    const h = mg.maximum(mg.add(mg.matmul(x, q.w1, S), q.b1, S), 0, S);
    const logits = mg.add(mg.matmul(h, q.w2, S), q.b2, S);
    return mg.mean(mg.subtract(mg.logsumexp(logits, -1, S), mg.sum(mg.multiply(logits, y, S), -1, S), S), undefined, S);
  };
  const step = mg.valueAndGrad(loss);
  t.set("MLP step 64x256x256x10 (fwd+bwd)", time(() => {
    const out = mg.tidy(() => {
      const [l, g] = step(p);
      return [l, g.w1, g.b1, g.w2, g.b2] as MgArray[];
    });
    mg.eval(out);
    for (const o of out) o.dispose();
  }));
  return t;
}

// ---- numpy and MLX ---------------------------------------------------------------------------------

const PY = String.raw`
import gc, json, sys, time, statistics
import numpy as np
ROUNDS, WARMUP, WARMUP_MS, which = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
def quart(ts):
    s = sorted(ts); n = len(s) - 1
    return [s[(n + 1) // 2] if n % 2 else s[n // 2], s[n // 4], s[-(-3 * n // 4)]]
runs = []
def med(run):
    # the same warm-up rule as metalgrad's side: at least WARMUP runs and WARMUP_MS of runs
    global runs
    ts = []
    start = time.perf_counter()
    while len(ts) < WARMUP or (time.perf_counter() - start) * 1e3 < WARMUP_MS:
        t0 = time.perf_counter(); run(); ts.append((time.perf_counter() - t0) * 1e3)
    warm = len(ts)
    for _ in range(ROUNDS):
        t0 = time.perf_counter(); run(); ts.append((time.perf_counter() - t0) * 1e3)
    runs = ts
    return quart(ts[warm:])
def early():
    return quart(runs[WARMUP:WARMUP + ROUNDS])
rng = np.random.default_rng(0)
M1, M16 = 1 << 20, 1 << 24
out = {}
if which == "numpy":
    a1, b1 = rng.uniform(-2, 2, M1).astype(np.float32), rng.uniform(-2, 2, M1).astype(np.float32)
    a16, b16 = rng.uniform(-2, 2, M16).astype(np.float32), rng.uniform(-2, 2, M16).astype(np.float32)
    gc.collect()
    def softmax(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True)); return e / e.sum(axis=-1, keepdims=True)
    def gelu(x):
        x3 = x * x * x
        return (x * 0.5) * (np.tanh((x + x3 * np.float32(0.044715)) * np.float32((2 / np.pi) ** 0.5)) + 1)
    out["add 1M f32"] = med(lambda: a1 + b1)
    out["add 1M f32 (runs 3–11)"] = early()
    out["add 16M f32"] = med(lambda: a16 + b16)
    out["exp 1M f32"] = med(lambda: np.exp(a1))
    out["exp 16M f32"] = med(lambda: np.exp(a16))
    out["sum 1M f32"] = med(lambda: a1.sum())
    out["sum 1M f32 (runs 3–11)"] = early()
    out["sum 16M f32"] = med(lambda: a16.sum())
    out["softmax rows 1M f32 (1024x1024)"] = med(lambda: softmax(a1.reshape(1024, 1024)))
    out["softmax rows 16M f32 (16384x1024)"] = med(lambda: softmax(a16.reshape(16384, 1024)))
    out["gelu (10 ops) 16M f32"] = med(lambda: gelu(a16))
    for n in (256, 512, 1024):
        for dt, tag in ((np.float32, "f32"), (np.float64, "f64")):
            a, b = rng.uniform(-2, 2, (n, n)).astype(dt), rng.uniform(-2, 2, (n, n)).astype(dt)
            out[f"matmul {n} {tag}"] = med(lambda: a @ b)
    small = np.array([1, 2, 3, 4], np.float32)
    def tiny():
        for _ in range(10000): small + 1
    out["tiny op (4,) f32 add, build+eval"] = med(tiny)
    cpu = []
    for _ in range(ROUNDS):
        c0 = time.process_time(); tiny(); cpu.append((time.process_time() - c0) * 1e3)
    out["tiny op, CPU time (not wall)"] = quart(cpu)
else:
    import mlx.core as mx
    mx.set_default_device(mx.cpu)
    def mk(shape, dt=mx.float32):
        x = mx.array(rng.uniform(-2, 2, shape).astype(np.float32)).astype(dt); mx.eval(x); return x
    a1, b1, a16, b16 = mk(M1), mk(M1), mk(M16), mk(M16)
    gc.collect()
    def ev(f): return lambda: mx.eval(f())
    def gelu(x):
        x3 = x * x * x
        return (x * 0.5) * (mx.tanh((x + x3 * 0.044715) * (2 / np.pi) ** 0.5) + 1)
    out["add 1M f32"] = med(ev(lambda: a1 + b1))
    out["add 1M f32 (runs 3–11)"] = early()
    out["add 16M f32"] = med(ev(lambda: a16 + b16))
    out["exp 1M f32"] = med(ev(lambda: mx.exp(a1)))
    out["exp 16M f32"] = med(ev(lambda: mx.exp(a16)))
    out["sum 1M f32"] = med(ev(lambda: a1.sum()))
    out["sum 1M f32 (runs 3–11)"] = early()
    out["sum 16M f32"] = med(ev(lambda: a16.sum()))
    out["softmax rows 1M f32 (1024x1024)"] = med(ev(lambda: mx.softmax(a1.reshape(1024, 1024), axis=-1)))
    out["softmax rows 16M f32 (16384x1024)"] = med(ev(lambda: mx.softmax(a16.reshape(16384, 1024), axis=-1)))
    out["gelu (10 ops) 16M f32"] = med(ev(lambda: gelu(a16)))
    for n in (256, 512, 1024):
        for dt, tag in ((mx.float32, "f32"), (mx.float64, "f64")):
            try:
                a, b = mk((n, n), dt), mk((n, n), dt)
                out[f"matmul {n} {tag}"] = med(ev(lambda: a @ b))
            except Exception:
                pass
    import mlx.nn as nn
    x = mk((64, 256)); y = (mx.arange(640).reshape(64, 10) % 10 == (mx.arange(64) % 10).reshape(64, 1)).astype(mx.float32)
    p = {"w1": mk((256, 256)) / 16, "b1": mk((256,)) * 0.01, "w2": mk((256, 10)) / 16, "b2": mk((10,)) * 0.01}
    def loss(q):
        h = mx.maximum(x @ q["w1"] + q["b1"], 0)
        logits = h @ q["w2"] + q["b2"]
        return mx.mean(mx.logsumexp(logits, axis=-1) - mx.sum(logits * y, axis=-1))
    step = mx.value_and_grad(loss)
    out["MLP step 64x256x256x10 (fwd+bwd)"] = med(lambda: mx.eval(step(p)))
    small = mx.array([1, 2, 3, 4], mx.float32); mx.eval(small)
    def tiny():
        for _ in range(10000): mx.eval(small + 1)
    out["tiny op (4,) f32 add, build+eval"] = med(tiny)
    cpu = []
    for _ in range(ROUNDS):
        c0 = time.process_time(); tiny(); cpu.append((time.process_time() - c0) * 1e3)
    out["tiny op, CPU time (not wall)"] = quart(cpu)
print(json.dumps(out))
`;

function python(which: "numpy" | "mlx"): Map<string, Stat> | string {
  const py = pythonWith(which === "mlx" ? ["mlx.core", "numpy"] : ["numpy"]);
  if (!py) return "not importable";
  const r = Bun.spawnSync([py, "-c", PY, String(ROUNDS), String(WARMUP), String(WARMUP_MS), which], { stderr: "pipe" });
  if (r.exitCode !== 0) return `failed: ${r.stderr.toString().trim().split("\n").pop()}`;
  const parsed = JSON.parse(r.stdout.toString()) as Record<string, [number, number, number]>;
  return new Map(Object.entries(parsed).map(([k, [med, q1, q3]]) => [k, { med, q1, q3 }]));
}

// ---- the table ----------------------------------------------------------------------------------------

function cell(c: Case, t: Stat | undefined): string {
  if (t === undefined) return "—";
  const ms = t.med;
  if (c.perOp) {
    const us = (v: number) => ((v * 1e3) / c.perOp!).toFixed(2);
    return `${us(ms)} µs [${us(t.q1)}–${us(t.q3)}]`;
  }
  const f = (v: number) => (v < 10 ? v.toFixed(3) : v.toFixed(1));
  const rate = c.bytes ? ` ${(c.bytes / ms / 1e6).toFixed(1)} GB/s` : c.flops ? ` ${(c.flops / ms / 1e6).toFixed(1)} GFLOP/s` : "";
  return `${f(ms)} ms [${f(t.q1)}–${f(t.q3)}]${rate}`;
}

const info = nativeInfo();
const load = (await Bun.file("/proc/loadavg").text().catch(() => "")).split(" ")[0];
console.log(`cpu.bench: CPU device (native ${info.isa}, ${info.threads} threads, GEMM ${info.gemm}) vs numpy and MLX cpu; medians [quartiles] of ${ROUNDS} (warm-up: ${WARMUP} runs and ${WARMUP_MS} ms)${load ? `; load average ${load}` : ""}`);
const mine = metalgrad();
const np = python("numpy");
const mlx = python("mlx");
if (typeof np === "string") console.log(`numpy: ${np}`);
if (typeof mlx === "string") console.log(`MLX: ${mlx}`);
const header = ["case", "metalgrad cpu", "numpy", "MLX cpu", "mg/numpy"];
const rows = CASES.map((c) => {
  const m = mine.get(c.name);
  const n = typeof np === "string" ? undefined : np.get(c.name);
  const x = typeof mlx === "string" ? undefined : mlx.get(c.name);
  return [c.name, cell(c, m), cell(c, n), cell(c, x), m && n ? `${(n.med / m.med).toFixed(2)}×` : "—"];
});
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]) => `| ${r.map((v, i) => v.padEnd(widths[i]!)).join(" | ")} |`;
console.log(line(header));
console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
for (const r of rows) console.log(line(r));
