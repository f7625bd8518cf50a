// Quantized products against dense products (a 4096-wide layer: decode, 1 row, and prefill, 64
// rows; bits 4 and 8, affine, group 64) on both devices, with MLX's CPU figures measured in the
// same run; then linalg and FFT against numpy. Medians of ROUNDS runs (spread = max/min), ratios
// as metalgrad / reference (below 1 is faster).
//
//   MG_PYTHON=/work/mlxenv/bin/python bun run bench/quant.bench.ts
//   ROUNDS=n  QUANT_K=4096 (a smaller K for a quick look)  QUANT_SIM_PREFILL_K=1024  DEVICES=cpu,gpu
//   QUANT_SECTIONS=quant,linalg,fft (the default: all three)
//
// Goals (issue 15): quantized decode ≥ 2× faster than dense float16 on the GPU (memory-bound on
// Apple GPUs; on Linux the GPU is the MSL simulator, whose cost is arithmetic, so its ratio says
// little about Metal); FFT within 2× of numpy on the CPU (the TypeScript kernels are the
// reference; a native CPU backend is where that goal can be met for large transforms).
import * as mg from "../ts/index.ts";
import type { MgArray } from "../ts/core/array.ts";
import { median } from "./util.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const K = Number(process.env.QUANT_K ?? 4096);
const N = K;
const PYTHON = process.env.MG_PYTHON ?? "python3";
const SECTIONS = new Set((process.env.QUANT_SECTIONS ?? "quant,linalg,fft").split(","));
const DEVICES = [mg.cpu, mg.gpu].filter((d) => (process.env.DEVICES ?? "cpu,gpu").split(",").includes(d.type));

function random(shape: number[], seed: number, dtype = mg.float32): MgArray {
  const a = mg.random.normal(shape, mg.float32, 0, 1, mg.random.key(seed), { stream: mg.cpu });
  return mg.astype(a, dtype, { stream: mg.cpu });
}

interface Timing {
  ms: number;
  spread: number;
  cpu?: number;  // median CPU time of a round (all threads), ms: what a loaded machine does not distort
}

/** Median wall time of evaluating `build()` and waiting for the device (the result stays in the
 * device's memory, as numpy's and MLX's: no copy into a JS array). */
function time(build: () => MgArray, rounds = ROUNDS): Timing {
  const cpus: number[] = [];
  const once = () => {
    const y = build();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    mg.eval(y);
    mg.synchronize();
    const t = performance.now() - t0;
    const c = process.cpuUsage(c0);
    cpus.push((c.user + c.system) / 1000);
    // freed now, as Python's reference count frees numpy's and MLX's results (left to the GC, every
    // round's output would be fresh memory paying page faults)
    y.dispose();
    return t;
  };
  // warm-up: kernels compile, caches fill, and (for fast ops) Bun's JIT has compiled the eval path
  // and its compiler threads have stopped competing for the cores: at least 1 round and 50 ms
  const w0 = performance.now();
  do once(); while (performance.now() - w0 < 50);
  cpus.length = 0;
  const ts: number[] = [];
  for (let r = 0; r < rounds; r++) ts.push(once());
  return { ms: median(ts), spread: Math.max(...ts) / Math.min(...ts), cpu: median(cpus) };
}

const fmt = (t: Timing | null) => (t ? `${t.ms.toFixed(2).padStart(10)} ms (×${t.spread.toFixed(2)})` : "         -");
const ratio = (a: Timing | null, b: Timing | null) => (a && b ? `${(a.ms / b.ms).toFixed(2)}×` : "-");

function line(name: string, ours: Timing | null, ref: Timing | null, refName: string, withCpu = false): void {
  const cpu = withCpu && ours?.cpu !== undefined && ref?.cpu !== undefined
    ? `   CPU ${ours.cpu.toFixed(2)} vs ${ref.cpu.toFixed(2)} ms, ratio ${(ours.cpu / ref.cpu).toFixed(2)}×`
    : "";
  console.log(`  ${name.padEnd(46)} ${fmt(ours)}   ${refName.padEnd(12)} ${fmt(ref)}   ratio ${ratio(ours, ref)}${cpu}`);
}

/** Runs a Python timing script; returns name → median ms (or an empty map without Python). */
function python(script: string): Map<string, Timing> {
  // One BLAS/OpenMP thread: the reference runs on the same shared cores as metalgrad's CPU side.
  const env = { ...process.env, ROUNDS: String(ROUNDS), QUANT_K: String(K), OPENBLAS_NUM_THREADS: "1", OMP_NUM_THREADS: "1", MKL_NUM_THREADS: "1" };
  const r = Bun.spawnSync([PYTHON, "-c", script], { stdout: "pipe", stderr: "pipe", env });
  const out = new Map<string, Timing>();
  if (r.exitCode !== 0) {
    console.log(`  (reference timings unavailable: ${PYTHON} failed: ${r.stderr.toString().trim().split("\n").pop()})`);
    return out;
  }
  for (const l of r.stdout.toString().trim().split("\n")) {
    const [name, ms, spread, cpu] = l.split("\t");
    if (name && ms) out.set(name, { ms: Number(ms), spread: Number(spread ?? 1), ...(cpu ? { cpu: Number(cpu) } : {}) });
  }
  return out;
}

const PY_TIMER = `
import os, time, statistics
R = int(os.environ.get("ROUNDS", "5"))
def bench(name, fn):
    fn()
    ts, cs = [], []
    for _ in range(R):
        c0 = time.process_time(); t0 = time.perf_counter(); fn()
        ts.append((time.perf_counter() - t0) * 1000); cs.append((time.process_time() - c0) * 1000)
    print(f"{name}\\t{statistics.median(ts)}\\t{max(ts)/min(ts)}\\t{statistics.median(cs)}")
`;

// ---------------------------------------------------------------------------------------------
if (SECTIONS.has("quant")) console.log(`# quantizedMatmul vs dense matmul, ${N}x${K} weights (ROUNDS=${ROUNDS})`);
const mlx = !SECTIONS.has("quant") ? new Map<string, Timing>() : python(`${PY_TIMER}
import mlx.core as mx
K = int(os.environ["QUANT_K"]); N = K
w = mx.random.normal((N, K)); mx.eval(w)
for M in (1, 64):
    x = mx.random.normal((M, K)); mx.eval(x)
    for bits in (4, 8):
        wq, s, b = mx.quantize(w, 64, bits); mx.eval(wq, s, b)
        bench(f"q{bits} M={M}", lambda: mx.eval(mx.quantized_matmul(x, wq, s, b, True, 64, bits, stream=mx.cpu)))
    for dt in (mx.float32, mx.float16):
        wd = w.astype(dt); xd = x.astype(dt); mx.eval(wd, xd)
        bench(f"dense {dt} M={M}".replace("mlx.core.", ""), lambda: mx.eval(mx.matmul(xd, wd.T, stream=mx.cpu)))
`);
// The simulated GPU computes ~10⁷–10⁸ flop/s: prefill there uses a K/4-wide layer (SIM_K), said
// in the row's name; decode and every CPU row use the full width.
const SIM_K = Number(process.env.QUANT_SIM_PREFILL_K ?? Math.min(K, 1024));
function layerRows(M: number, device: mg.Device, width: number): void {
  const w = random([width, width], 1);
  const x = random([M, width], 2 + M);
  const s = { stream: device };
  const dense16 = mg.astype(w, mg.float16, s);
  const x16 = mg.astype(x, mg.float16, s);
  mg.eval(dense16, x16);
  const tag = `M=${M} ${device.type}${width !== K ? ` (${width}x${width})` : ""}`;
  const sameShape = width === K;
  const d16 = time(() => mg.matmul(x16, mg.transpose(dense16), s));
  const d32 = time(() => mg.matmul(x, mg.transpose(w), s));
  line(`dense float16 ${tag}`, d16, sameShape ? mlx.get(`dense float16 M=${M}`) ?? null : null, "MLX cpu");
  line(`dense float32 ${tag}`, d32, sameShape ? mlx.get(`dense float32 M=${M}`) ?? null : null, "MLX cpu");
  for (const bits of [4, 8]) {
    const [wq, sc, b] = mg.quantize(w, 64, bits, { stream: mg.cpu });
    mg.eval(wq!, sc!, b!);
    const xs = device === mg.gpu ? x16 : x;
    const q = time(() => mg.quantizedMatmul(xs, wq!, sc!, b, true, 64, bits, s));
    line(`quantized ${bits}-bit ${tag} (${xs.dtype.name} x)`, q, sameShape ? mlx.get(`q${bits} M=${M}`) ?? null : null, "MLX cpu");
    console.log(`    → vs dense float16 on the same device: ${ratio(q, d16)}${device === mg.gpu && M === 1 ? " (goal for decode on a Metal GPU: ≤ 0.5×)" : ""}`);
  }
}
if (SECTIONS.has("quant")) {
  for (const device of DEVICES) layerRows(1, device, K);
  for (const device of DEVICES) layerRows(64, device, device === mg.gpu ? SIM_K : K);
}

// ---------------------------------------------------------------------------------------------
if (SECTIONS.has("linalg")) console.log("\n# linalg (CPU) vs numpy (float64, n=128)");
const np = python(`${PY_TIMER}
import numpy as np
rng = np.random.default_rng(0)
a = rng.standard_normal((128, 128)); spd = a @ a.T + 128 * np.eye(128); b = rng.standard_normal((128, 4))
bench("inv", lambda: np.linalg.inv(a))
bench("qr", lambda: np.linalg.qr(a))
bench("svd", lambda: np.linalg.svd(a))
bench("eigh", lambda: np.linalg.eigh(spd))
bench("eig", lambda: np.linalg.eig(a))
bench("cholesky", lambda: np.linalg.cholesky(spd))
bench("solve", lambda: np.linalg.solve(a, b))
bench("det", lambda: np.linalg.det(a))
x1 = rng.standard_normal((64, 1024)) + 1j * rng.standard_normal((64, 1024))
x2 = rng.standard_normal(65536) + 1j * rng.standard_normal(65536)
r2 = rng.standard_normal(65536); p = rng.standard_normal((16, 997)) + 0j
img = rng.standard_normal((256, 256)) + 0j
bench("fft 64x1024", lambda: np.fft.fft(x1))
bench("fft 65536", lambda: np.fft.fft(x2))
bench("rfft 65536", lambda: np.fft.rfft(r2))
R2 = np.fft.rfft(r2)
bench("irfft 65536", lambda: np.fft.irfft(R2))
r64 = rng.standard_normal((64, 1024))
bench("rfft 64x1024", lambda: np.fft.rfft(r64))
bench("fft 16x997 (prime)", lambda: np.fft.fft(p))
bench("fft2 256x256", lambda: np.fft.fft2(img))
`);
if (SECTIONS.has("linalg")) {
  const cpu = { stream: mg.cpu };
  const a = random([128, 128], 10, mg.float64);
  const spd = mg.add(mg.matmul(a, mg.transpose(a), cpu), mg.multiply(mg.eye(128, null, 0, mg.float64, cpu), 128, cpu), cpu);
  const b = random([128, 4], 11, mg.float64);
  mg.eval(a, spd, b);
  const cases: [string, () => MgArray][] = [
    ["inv", () => mg.linalg.inv(a, cpu)],
    ["qr", () => mg.linalg.qr(a, cpu)[1]],
    ["svd", () => (mg.linalg.svd(a, cpu) as MgArray[])[1]!],
    ["eigh", () => mg.linalg.eigh(spd, cpu)[0]],
    ["eig", () => mg.linalg.eig(a, cpu)[0]],
    ["cholesky", () => mg.linalg.cholesky(spd, cpu)],
    ["solve", () => mg.linalg.solve(a, b, cpu)],
    ["det", () => mg.linalg.det(a, cpu)],
  ];
  for (const [name, fn] of cases) line(`${name} 128x128 float64 cpu`, time(fn, Math.min(ROUNDS, 3)), np.get(name) ?? null, "numpy");
}

if (SECTIONS.has("fft")) {
  console.log("\n# fft (complex64) vs numpy (complex128)");
  const c = (shape: number[], seed: number) => mg.add(random(shape, seed), mg.multiply(random(shape, seed + 1), { re: 0, im: 1 }));
  const x1 = c([64, 1024], 20), x2 = c([65536], 22), r2 = random([65536], 24), p = c([16, 997], 25), img = c([256, 256], 27);
  const bins2 = mg.fft.rfft(r2, { stream: mg.cpu }), r64 = random([64, 1024], 29);
  mg.eval(x1, x2, r2, p, img, bins2, r64);
  for (const device of DEVICES) {
    const s = { stream: device };
    line(`fft 64x1024 ${device.type}`, time(() => mg.fft.fft(x1, s)), np.get("fft 64x1024") ?? null, "numpy", true);
    line(`fft 65536 ${device.type}`, time(() => mg.fft.fft(x2, s)), np.get("fft 65536") ?? null, "numpy", true);
    line(`rfft 65536 ${device.type}`, time(() => mg.fft.rfft(r2, s)), np.get("rfft 65536") ?? null, "numpy", true);
    line(`irfft 65536 ${device.type}`, time(() => mg.fft.irfft(bins2, null, -1, s)), np.get("irfft 65536") ?? null, "numpy", true);
    line(`rfft 64x1024 ${device.type}`, time(() => mg.fft.rfft(r64, s)), np.get("rfft 64x1024") ?? null, "numpy", true);
    line(`fft 16x997 (prime: Bluestein) ${device.type}`, time(() => mg.fft.fft(p, s)), np.get("fft 16x997 (prime)") ?? null, "numpy", true);
    line(`fft2 256x256 ${device.type}`, time(() => mg.fft.fft2(img, s)), np.get("fft2 256x256") ?? null, "numpy", true);
  }
}
