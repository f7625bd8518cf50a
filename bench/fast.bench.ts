// mg.fast: each fused op against its unfused composition (ts/fast/unfused.ts, MLX's own fallback
// written in ordinary ops), on both devices: median time (and spread) and peak memory, forward
// and forward+backward; SDPA over head dims 64, 72, 128, 256 and sequence lengths 128…2048, with
// the slope of the fused forward+backward peak memory in L. MLX's CPU figures for the same cases
// print alongside when a Python with MLX is found ($MG_PYTHON, else python3).
//
//   MG_PYTHON=/work/mlxenv/bin/python bun run bench/fast.bench.ts
//   ROUNDS=5  L_MAX=2048  DEVICES=gpu  OPS=sdpa  HEAD_DIMS=64,128   (defaults: 3 rounds, all four
//   head dims; on the simulator L ≤ 256, CPU_L_MAX=256 for the CPU device)
//
// On the Metal simulator (Linux) GPU times measure the simulator, not a GPU: the ratios between
// fused and unfused kernels are what carry over, and only roughly.
import { spawnSync } from "node:child_process";
import * as mg from "../ts/index.ts";
import type { MgArray } from "../ts/core/array.ts";
import { crossEntropyUnfused, layerNormUnfused, rmsNormUnfused, ropeUnfused, sdpaUnfused } from "../ts/fast/unfused.ts";
import { median } from "./util.ts";

const SIM = mg.deviceInfo().is_simulator === true;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const L_MAX = Number(process.env.L_MAX ?? (SIM ? 256 : 2048));
const CPU_L_MAX = Number(process.env.CPU_L_MAX ?? 256);
const DEVICES = (process.env.DEVICES ?? "cpu,gpu").split(",").map((d) => (d === "gpu" ? mg.gpu : mg.cpu));
const OPS = (process.env.OPS ?? "norm,rope,ce,sdpa").split(",");
const HEAD_DIMS = (process.env.HEAD_DIMS ?? "64,72,128,256").split(",").map(Number);

function values(shape: number[], seed: number, scale = 1): MgArray {
  const n = shape.reduce((a, b) => a * b, 1);
  const v = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    v[i] = (s / 4294967296 - 0.5) * 2 * scale;
  }
  return mg.array(v, mg.float32, { shape });
}

interface Measure {
  /** Median wall-clock ms and its spread (max − min). */
  ms: number;
  spread: number;
  /** Median process CPU ms (all threads): on a shared machine the simulator's work, undistorted by load. */
  cpu: number;
  peak: number;
}

/** Medians over ROUNDS (after one warm-up), and the peak memory of one run above what it started with. */
function measure(run: () => MgArray[]): Measure {
  const once = () => {
    const out = run();
    mg.eval(out);
    mg.synchronize();
    for (const o of out) o.dispose();
  };
  once();
  const ms: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    once();
    ms.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  // Garbage of earlier runs released during the measured one would hide part of its peak.
  Bun.gc(true);
  mg.synchronize();
  mg.clearCache(); // a cached block reused for a request may be up to twice its size
  const before = mg.getActiveMemory();
  mg.resetPeakMemory();
  once();
  const peak = mg.getPeakMemory() - before;
  return { ms: median(ms), spread: Math.max(...ms) - Math.min(...ms), cpu: median(cpu), peak };
}

const mib = (b: number) => (Math.abs(b) < 2 ** 20 ? `${(b / 1024).toFixed(1)} KiB` : `${(b / 2 ** 20).toFixed(2)} MiB`);
const fmt = (m: Measure) => `${m.ms.toFixed(1).padStart(8)} ms ±${(m.spread / 2).toFixed(1).padEnd(5)} cpu ${m.cpu.toFixed(0).padStart(6)} ms peak ${mib(m.peak).padStart(10)}`;

interface Row {
  op: string;
  device: string;
  pass: string;
  fused: Measure;
  unfused: Measure;
}
const rows: Row[] = [];
/** What the fused/unfused ratio compares: process CPU time for the CPU device and the simulator
 *  (both run on this machine's cores, which other processes share), wall time on a real GPU. */
const cost = (m: Measure, device: string) => (device === "cpu" || SIM ? m.cpu : m.ms);

function compare(op: string, device: mg.Device, inputs: MgArray[], fused: (...xs: MgArray[]) => MgArray, unfused: (...xs: MgArray[]) => MgArray, argnums: number[]): void {
  mg.eval(inputs);
  for (const pass of ["fwd", "fwd+bwd"] as const) {
    const make = (f: (...xs: MgArray[]) => MgArray) => () =>
      mg.stream(device, () => {
        if (pass === "fwd") return [f(...inputs)];
        const g = mg.grad((...xs: MgArray[]) => mg.sum(f(...inputs.map((x, i) => (argnums.includes(i) ? xs[argnums.indexOf(i)]! : x)))), argnums.map((_, k) => k));
        return g(...argnums.map((i) => inputs[i]!)) as MgArray[];
      });
    const r: Row = { op, device: device.type, pass, fused: measure(make(fused)), unfused: measure(make(unfused)) };
    rows.push(r);
    const ratio = cost(r.fused, r.device) / cost(r.unfused, r.device);
    console.log(
      `  ${op.padEnd(30)} ${device.type} ${pass.padEnd(7)} fused ${fmt(r.fused)} | unfused ${fmt(r.unfused)} | time ×${ratio.toFixed(2)}${ratio > 1.05 ? " SLOWER" : ""}, memory ×${(r.fused.peak / Math.max(r.unfused.peak, 1)).toFixed(2)}`,
    );
  }
}

console.log(`mg.fast: fused vs unfused composition, medians of ${ROUNDS} rounds${SIM ? " (GPU = the Metal simulator)" : ""}`);

const normShape = SIM ? [256, 1024] : [4096, 4096];
const ropeShape = SIM ? [1, 8, 256, 128] : [4, 32, 2048, 128];
const ceShape = SIM ? [256, 4096] : [4096, 32000];
for (const device of DEVICES) {
  if (OPS.includes("norm")) {
    const x = values(normShape, 1);
    const w = values([normShape[1]!], 2);
    const b = values([normShape[1]!], 3);
    compare(`rmsNorm ${normShape.join("×")}`, device, [x, w], (x, w) => mg.fast.rmsNorm(x!, w!, 1e-5), (x, w) => rmsNormUnfused(x!, w!, 1e-5, mg.float32), [0, 1]);
    compare(`layerNorm ${normShape.join("×")}`, device, [x, w, b], (x, w, b) => mg.fast.layerNorm(x!, w!, b!, 1e-5), (x, w, b) => layerNormUnfused(x!, w!, b!, 1e-5, mg.float32), [0, 1, 2]);
  }
  if (OPS.includes("rope")) {
    const x = values(ropeShape, 4);
    const off = mg.array(0, mg.int32);
    compare(
      `rope ${ropeShape.join("×")}`,
      device,
      [x],
      (x) => mg.fast.rope(x!, 128, { traditional: false, base: 10000, scale: 1, offset: 0 }),
      (x) => ropeUnfused(x!, off, null, { dims: 128, traditional: false, base: 10000, scale: 1, forward: true }),
      [0],
    );
  }
  if (OPS.includes("ce")) {
    const logits = values(ceShape, 5, 4);
    const targets = mg.array(Int32Array.from({ length: ceShape[0]! }, (_, i) => (i * 7919) % ceShape[1]!));
    compare(`crossEntropy ${ceShape.join("×")}`, device, [logits, targets], (l, t) => mg.fast.crossEntropy(l!, t!), (l, t) => crossEntropyUnfused(l!, t!), [0]);
  }
}

// SDPA ---------------------------------------------------------------------------------------------
const slopes: string[] = [];
if (OPS.includes("sdpa")) {
  const heads = SIM ? 2 : 16;
  for (const device of DEVICES) {
    for (const D of HEAD_DIMS) {
      const peaks: [number, number][] = [];
      for (let L = 128; L <= (device === mg.cpu ? Math.min(L_MAX, CPU_L_MAX) : L_MAX); L *= 2) {
        const q = values([1, heads, L, D], 10 + D);
        const k = values([1, heads, L, D], 11 + D);
        const v = values([1, heads, L, D], 12 + D);
        const scale = 1 / Math.sqrt(D);
        compare(
          `sdpa causal H=${heads} L=${L} D=${D}`,
          device,
          [q, k, v],
          (q, k, v) => mg.fast.scaledDotProductAttention(q!, k!, v!, { scale, mask: "causal" }),
          (q, k, v) => sdpaUnfused(q!, k!, v!, scale, "causal", null, null),
          [0, 1, 2],
        );
        peaks.push([L, rows[rows.length - 1]!.fused.peak]);
      }
      if (peaks.length >= 2) {
        // Least-squares line through (L, peak) of the fused forward+backward, and the worst
        // deviation from it: a linear law fits within allocator rounding.
        const n = peaks.length;
        const mx = peaks.reduce((a, [l]) => a + l, 0) / n;
        const my = peaks.reduce((a, [, p]) => a + p, 0) / n;
        const slope = peaks.reduce((a, [l, p]) => a + (l - mx) * (p - my), 0) / peaks.reduce((a, [l]) => a + (l - mx) ** 2, 0);
        const dev = Math.max(...peaks.map(([l, p]) => Math.abs(p - (my + slope * (l - mx)))));
        const perToken = heads * D * 4;
        slopes.push(
          `  ${device.type} D=${D}: fused fwd+bwd peak ≈ ${(slope / 1024).toFixed(2)} KiB per token of L (${(slope / perToken).toFixed(1)}× one token's q row over the heads; ` +
            `worst deviation from the line ${mib(dev)}); points ${peaks.map(([l, p]) => `L=${l}: ${mib(p)}`).join(", ")}`,
        );
      }
    }
  }
  console.log("\nfused SDPA fwd+bwd peak memory vs L (linear fit):");
  for (const s of slopes) console.log(s);
}

// MLX on the CPU, same cases ------------------------------------------------------------------------
const slower = rows.filter((r) => cost(r.fused, r.device) > 1.05 * cost(r.unfused, r.device));
console.log(`\nfused slower than the composition (>5%) in ${slower.length} of ${rows.length} rows${slower.length ? ":" : "."}`);
for (const r of slower) console.log(`  ${r.op} ${r.device} ${r.pass}: ×${(cost(r.fused, r.device) / cost(r.unfused, r.device)).toFixed(2)}`);

const python = process.env.MG_PYTHON ?? "python3";
const mlxScript = String.raw`
import json, math, sys, time
import mlx.core as mx
cfg = json.loads(sys.argv[1])
R = cfg["rounds"]
mx.set_default_device(mx.cpu)
def vals(shape, seed, scale=1.0):
    return (mx.random.uniform(-scale, scale, shape, key=mx.random.key(seed))).astype(mx.float32)
def timed(f, args, grad):
    fn = (lambda *a: f(*a)) if not grad else mx.grad(lambda *a: f(*a).sum(), argnums=list(range(len(args))))
    out = fn(*args); mx.eval(out)
    ts = []
    for _ in range(R):
        t0 = time.perf_counter(); out = fn(*args); mx.eval(out); ts.append((time.perf_counter() - t0) * 1e3)
    mx.reset_peak_memory(); base = mx.get_active_memory(); out = fn(*args); mx.eval(out)
    return sorted(ts)[len(ts) // 2], mx.get_peak_memory() - base
def comp_sdpa(q, k, v, scale):
    s = (q * scale) @ k.swapaxes(-1, -2)
    L = q.shape[2]; m = mx.arange(L)[:, None] >= mx.arange(L)[None, :]
    s = mx.where(m, s, mx.finfo(s.dtype).min)
    return mx.softmax(s, axis=-1, precise=True) @ v
out = []
def case(name, fused, unfused, args):
    for grad in (False, True):
        tf, pf = timed(fused, args, grad); tu, pu = timed(unfused, args, grad)
        out.append({"op": name, "pass": "fwd+bwd" if grad else "fwd", "fused_ms": tf, "fused_peak": pf, "unfused_ms": tu, "unfused_peak": pu})
ops = cfg["ops"]
ns = cfg["norm"]; x = vals(ns, 1); w = vals(ns[1:], 2); b = vals(ns[1:], 3)
if "norm" in ops: case("rmsNorm " + "×".join(map(str, ns)), lambda x, w: mx.fast.rms_norm(x, w, 1e-5), lambda x, w: x * mx.rsqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w, [x, w])
if "norm" in ops: case("layerNorm " + "×".join(map(str, ns)), lambda x, w, b: mx.fast.layer_norm(x, w, b, 1e-5), lambda x, w, b: (x - x.mean(-1, keepdims=True)) * mx.rsqrt(x.var(-1, keepdims=True) + 1e-5) * w + b, [x, w, b])
rs = cfg["rope"]; xr = vals(rs, 4)
def rope_comp(x):
    T = x.shape[2]; half = 64
    inv = mx.exp(mx.arange(0, -half, -1).astype(mx.float32) * (math.log(10000.0) / half))
    th = mx.arange(T).astype(mx.float32)[:, None] * inv
    c, s = mx.cos(th), mx.sin(th); x1, x2 = x[..., :half], x[..., half:]
    return mx.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], -1)
if "rope" in ops: case("rope " + "×".join(map(str, rs)), lambda x: mx.fast.rope(x, 128, traditional=False, base=10000.0, scale=1.0, offset=0), rope_comp, [xr])
cs = cfg["ce"]; lg = vals(cs, 5, 4.0); tg = mx.array([(i * 7919) % cs[1] for i in range(cs[0])])
def ce(l): return mx.fast.cross_entropy(l, tg)
def ce_comp(l): return mx.logsumexp(l, -1) - mx.take_along_axis(l, tg[:, None], -1)[:, 0]
if "ce" in ops: case("crossEntropy " + "×".join(map(str, cs)), ce, ce_comp, [lg])
for D in (cfg["dims"] if "sdpa" in ops else ()):
    L = 128
    while L <= cfg["lmax"]:
        q, k, v = vals((1, cfg["heads"], L, D), 10 + D), vals((1, cfg["heads"], L, D), 11 + D), vals((1, cfg["heads"], L, D), 12 + D)
        sc = 1 / math.sqrt(D)
        case("sdpa causal H=%d L=%d D=%d" % (cfg["heads"], L, D), lambda q, k, v: mx.fast.scaled_dot_product_attention(q, k, v, scale=sc, mask="causal"), lambda q, k, v: comp_sdpa(q, k, v, sc), [q, k, v])
        L *= 2
print(json.dumps({"mlx": mx.__version__, "rows": out}))
`;
const mlxCfg = { dims: HEAD_DIMS, ops: OPS, rounds: ROUNDS, norm: normShape, rope: ropeShape, ce: ceShape, heads: SIM ? 2 : 16, lmax: Math.min(L_MAX, CPU_L_MAX) };
const r = spawnSync(python, ["-c", mlxScript, JSON.stringify(mlxCfg)], { encoding: "utf8", maxBuffer: 1 << 24 });
if (r.status !== 0) {
  console.log(`\nMLX: not run (${python}: ${(r.stderr || r.error?.message || "no output").trim().split("\n").pop()})`);
} else {
  const mlx = JSON.parse(r.stdout) as { mlx: string; rows: { op: string; pass: string; fused_ms: number; fused_peak: number; unfused_ms: number; unfused_peak: number }[] };
  console.log(`\nMLX ${mlx.mlx} on the CPU (mx.fast vs the same composition; wall ms), and metalgrad's CPU fused wall time as a ratio of MLX's:`);
  for (const m of mlx.rows) {
    const ours = rows.find((x) => x.op === m.op && x.device === "cpu" && x.pass === m.pass);
    console.log(
      `  ${m.op.padEnd(34)} ${m.pass.padEnd(8)} mx.fast ${m.fused_ms.toFixed(2).padStart(9)} ms peak ${mib(m.fused_peak).padStart(11)} | composition ${m.unfused_ms.toFixed(2).padStart(9)} ms peak ${mib(m.unfused_peak).padStart(11)}` +
        (ours ? ` | metalgrad cpu fused / mx.fast ×${(ours.fused.ms / m.fused_ms).toFixed(1)}` : ""),
    );
  }
}
