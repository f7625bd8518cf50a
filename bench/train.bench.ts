// Training steps per second and the peak memory of one step, for three models on both devices,
// side by side with MLX on the CPU for the same models (issue 13's goal: on the CPU device at
// least MLX-CPU's steps/s once the native CPU backend lands, peak ≤ 1.1× MLX's):
//   mlp          784 → 512 → 512 → 10 (relu), batch 64, cross entropy, Adam
//   cnn          conv2d(1→16, 3×3) → maxpool 2 → conv2d(16→32, 3×3) → maxpool 2 → linear 10,
//                28×28×1 inputs, batch 32, cross entropy, SGD with momentum
//   transformer  embedding 256 → 2 encoder layers (d = 128, 4 heads, mlp 512, causal) → linear,
//                batch 8 × 64 tokens, cross entropy, AdamW
// A step is what a user writes: loss and gradients by nn.valueAndGrad, optimizer.update, eval of
// the loss, the parameters and the optimizer state (then the device is waited for). Peak memory is
// the high-water mark of active memory during one step minus the active memory before it (model and
// optimizer state excluded), measured the same way in MLX.
//
// Besides wall-clock steps/s, each row gives the process CPU time per step (all threads; on a shared
// machine wall time includes waiting for a core, CPU time much less so).
//
// MLX's Linux wheel (mlx-cpu) links the reference BLAS, which makes its matrix products ~30× slower
// than an optimised BLAS: the "mlx+blas" row runs the same script with an optimised CBLAS preloaded
// (MLX_BLAS=/path/to/libopenblas.so; by default Debian's OpenBLAS when installed, apt
// libopenblas0-pthread; MLX_BLAS=0 skips it). Ratios are given against both rows.
//
//   bun run bench/train.bench.ts            MG_PYTHON=/path/to/python (with mlx) for MLX's column
//   ROUNDS=n (default 7 on the CPU, 2 on the simulated GPU)   WARMUP=n steps first (10 on the CPU, 2 on
//   the GPU)   MODELS=mlp,cnn   DEVICES=cpu,gpu
import * as mg from "../ts/index.ts";
import type { MgArray } from "../ts/core/array.ts";
import { existsSync } from "node:fs";
import { median, pythonWith } from "./util.ts";

const ROUNDS = process.env.ROUNDS ? Number(process.env.ROUNDS) : null;
const WARMUP = process.env.WARMUP ? Number(process.env.WARMUP) : null;
const MODELS = (process.env.MODELS ?? "mlp,cnn,transformer").split(",");
const DEVICES = (process.env.DEVICES ?? "cpu,gpu").split(",");
const MiB = 2 ** 20;

class MLP extends mg.nn.Module {
  declare layers: mg.nn.Linear[];
  constructor() {
    super();
    this.layers = [new mg.nn.Linear(784, 512), new mg.nn.Linear(512, 512), new mg.nn.Linear(512, 10)];
  }
  override forward(x: MgArray): MgArray {
    for (const l of this.layers.slice(0, -1)) x = mg.nn.relu(l.forward(x));
    return this.layers[2]!.forward(x);
  }
}

class CNN extends mg.nn.Module {
  declare conv1: mg.nn.Conv2d;
  declare conv2: mg.nn.Conv2d;
  declare pool: mg.nn.MaxPool2d;
  declare fc: mg.nn.Linear;
  constructor() {
    super();
    this.conv1 = new mg.nn.Conv2d(1, 16, 3);
    this.conv2 = new mg.nn.Conv2d(16, 32, 3);
    this.pool = new mg.nn.MaxPool2d(2);
    this.fc = new mg.nn.Linear(32 * 5 * 5, 10);
  }
  override forward(x: MgArray): MgArray {
    x = this.pool.forward(mg.nn.relu(this.conv1.forward(x)));
    x = this.pool.forward(mg.nn.relu(this.conv2.forward(x)));
    return this.fc.forward(mg.reshape(x, [x.shape[0]!, -1]));
  }
}

class Transformer extends mg.nn.Module {
  declare embedding: mg.nn.Embedding;
  declare encoder: mg.nn.TransformerEncoder;
  declare out: mg.nn.Linear;
  constructor() {
    super();
    this.embedding = new mg.nn.Embedding(256, 128);
    this.encoder = new mg.nn.TransformerEncoder(2, 128, 4, { mlpDims: 512 });
    this.out = new mg.nn.Linear(128, 256);
  }
  override forward(tokens: MgArray): MgArray {
    const mask = mg.nn.MultiHeadAttention.createAdditiveCausalMask(tokens.shape[1]!);
    return this.out.forward(this.encoder.forward(this.embedding.forward(tokens), mask));
  }
}

interface Setup {
  model: mg.nn.Module;
  optimizer: mg.optimizers.Optimizer;
  x: MgArray;
  y: MgArray;
}

function setup(name: string): Setup {
  mg.random.seed(0);
  if (name === "mlp") {
    return { model: new MLP(), optimizer: new mg.optimizers.Adam(1e-3), x: mg.random.normal([64, 784]), y: mg.random.randint(0, 10, [64]) };
  }
  if (name === "cnn") {
    return {
      model: new CNN(), optimizer: new mg.optimizers.SGD(0.01, { momentum: 0.9 }), x: mg.random.normal([32, 28, 28, 1]), y: mg.random.randint(0, 10, [32]),
    };
  }
  return {
    model: new Transformer(), optimizer: new mg.optimizers.AdamW(1e-3), x: mg.random.randint(0, 256, [8, 64]), y: mg.random.randint(0, 256, [8, 64]),
  };
}

interface Result {
  stepsPerSecond: number;
  spread: string;
  /** Median process CPU time of a step (all threads), ms. */
  cpuMs: number;
  peakMiB: number;
  loss: number;
}

function processCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function run(name: string, device: mg.Device): Result {
  return mg.stream(device, () => {
    const { model, optimizer, x, y } = setup(name);
    mg.eval(model.parameters(), x, y);
    const lossFn = (xb: MgArray, yb: MgArray) => mg.nn.losses.crossEntropy(model.forward(xb) as MgArray, yb, { reduction: "mean" });
    const lossAndGrad = mg.nn.valueAndGrad(model, lossFn);
    let last = 0;
    const step = () => {
      const loss = mg.tidy(() => {
        const [l, grads] = lossAndGrad(x, y);
        optimizer.update(model, grads);
        return l;
      });
      mg.eval(loss, model.parameters(), optimizer.state);
      mg.synchronize();
      last = loss.item() as number;
      loss.dispose();
    };
    // warm-up: compiles kernels, creates the optimizer state, and lets the JavaScript JIT settle
    // (its compiler threads would otherwise bill the first CPU steps)
    const warmup = WARMUP ?? (device.type === "gpu" ? 2 : 10);
    for (let i = 0; i < warmup; i++) step();
    Bun.gc(true);
    const before = mg.getActiveMemory();
    mg.resetPeakMemory();
    step();
    const peak = mg.getPeakMemory() - before;
    const rounds = ROUNDS ?? (device.type === "gpu" ? 2 : 7);
    const ms: number[] = [];
    const cpu: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const t0 = performance.now();
      const c0 = processCpuMs();
      step();
      ms.push(performance.now() - t0);
      cpu.push(processCpuMs() - c0);
    }
    const m = median(ms);
    const spread = `${(1000 / Math.max(...ms)).toFixed(2)}–${(1000 / Math.min(...ms)).toFixed(2)}`;
    return { stepsPerSecond: 1000 / m, spread, cpuMs: median(cpu), peakMiB: peak / MiB, loss: last };
  });
}

const MLX_SCRIPT = `
import json, sys, time
import mlx.core as mx, mlx.nn as nn, mlx.optimizers as optim
mx.set_default_device(mx.cpu)
rounds = int(sys.argv[1])
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(784, 512), nn.Linear(512, 512), nn.Linear(512, 10)]
    def __call__(self, x):
        for l in self.layers[:-1]:
            x = nn.relu(l(x))
        return self.layers[-1](x)
class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3); self.conv2 = nn.Conv2d(16, 32, 3)
        self.pool = nn.MaxPool2d(2); self.fc = nn.Linear(32 * 5 * 5, 10)
    def __call__(self, x):
        x = self.pool(nn.relu(self.conv1(x)))
        x = self.pool(nn.relu(self.conv2(x)))
        return self.fc(x.reshape(x.shape[0], -1))
class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(256, 128)
        self.encoder = nn.TransformerEncoder(2, 128, 4, mlp_dims=512)
        self.out = nn.Linear(128, 256)
    def __call__(self, tokens):
        mask = nn.MultiHeadAttention.create_additive_causal_mask(tokens.shape[1])
        return self.out(self.encoder(self.embedding(tokens), mask))
def setup(name):
    mx.random.seed(0)
    if name == "mlp":
        return MLP(), optim.Adam(1e-3), mx.random.normal((64, 784)), mx.random.randint(0, 10, (64,))
    if name == "cnn":
        return CNN(), optim.SGD(0.01, momentum=0.9), mx.random.normal((32, 28, 28, 1)), mx.random.randint(0, 10, (32,))
    return Transformer(), optim.AdamW(1e-3), mx.random.randint(0, 256, (8, 64)), mx.random.randint(0, 256, (8, 64))
out = {}
for name in sys.argv[2].split(","):
    model, opt, x, y = setup(name)
    mx.eval(model.parameters(), x, y)
    step_fn = nn.value_and_grad(model, lambda xb, yb: nn.losses.cross_entropy(model(xb), yb, reduction="mean"))
    def step():
        loss, grads = step_fn(x, y)
        opt.update(model, grads)
        mx.eval(loss, model.parameters(), opt.state)
        return loss.item()
    step(); step()
    before = mx.get_active_memory(); mx.reset_peak_memory(); step()
    peak = mx.get_peak_memory() - before
    times, cpu = [], []
    for _ in range(rounds):
        t0 = time.perf_counter(); c0 = time.process_time(); loss = step()
        times.append(time.perf_counter() - t0); cpu.append(time.process_time() - c0)
    times.sort(); cpu.sort()
    out[name] = {"steps_per_second": 1 / times[len(times) // 2], "cpu_ms": 1000 * cpu[len(cpu) // 2], "peak_mib": peak / 2**20, "loss": loss}
print(json.dumps(out))
`;

interface MlxRow {
  steps_per_second: number;
  cpu_ms: number;
  peak_mib: number;
  loss: number;
}

/** The CBLAS to preload into MLX for the "mlx+blas" row: $MLX_BLAS, else Debian's OpenBLAS. */
function mlxBlas(): string | null {
  const env = process.env.MLX_BLAS;
  if (env === "0") return null;
  if (env) return env;
  const debian = ["/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0", "/usr/lib/aarch64-linux-gnu/openblas-pthread/libopenblas.so.0"];
  return debian.find((p) => existsSync(p)) ?? null;
}

function mlxNumbers(blas: string | null): Record<string, MlxRow> | string {
  const python = pythonWith(["mlx.core", "mlx.nn"]);
  if (!python) return "MLX not importable (set MG_PYTHON)";
  const env = blas ? { ...process.env, LD_PRELOAD: blas } : process.env;
  const r = Bun.spawnSync([python, "-c", MLX_SCRIPT, String(ROUNDS ?? 7), MODELS.join(",")], { stderr: "pipe", env });
  if (r.exitCode !== 0) return `MLX${blas ? " with " + blas : ""} failed: ${r.stderr.toString().trim().split("\n").pop()}`;
  return JSON.parse(r.stdout.toString());
}

const mlx = mlxNumbers(null);
const blas = mlxBlas();
const mlxBlasRows = blas && typeof mlx !== "string" ? mlxNumbers(blas) : null;
console.log("training step (valueAndGrad + optimizer.update + eval): steps/s (median; spread min–max), process CPU ms per step (median), peak MiB over a step");
if (typeof mlx === "string") console.log(`  (${mlx})`);
if (typeof mlxBlasRows === "string") console.log(`  (${mlxBlasRows})`);
if (blas && typeof mlxBlasRows !== "string") console.log(`  mlx+blas: MLX with ${blas} preloaded`);
const vs = "speed    cpu   peak";
console.log(
  `  ${"model".padEnd(12)} ${"device".padEnd(8)} ${"steps/s".padStart(8)} ${"spread".padStart(13)} ${"CPU ms".padStart(7)} ${"peak MiB".padStart(8)}   ${("vs mlx-cpu: " + vs).padStart(32)}   ${mlxBlasRows && typeof mlxBlasRows !== "string" ? "vs mlx+blas: " + vs : ""}`,
);
const ratios = (r: Result, ref: MlxRow | undefined) =>
  ref ? `${(r.stepsPerSecond / ref.steps_per_second).toFixed(2).padStart(6)}x ${(ref.cpu_ms / r.cpuMs).toFixed(2).padStart(5)}x ${(r.peakMiB / ref.peak_mib).toFixed(2).padStart(5)}x` : "";
for (const name of MODELS) {
  const ref = typeof mlx === "string" ? undefined : mlx[name];
  const refBlas = mlxBlasRows && typeof mlxBlasRows !== "string" ? mlxBlasRows[name] : undefined;
  for (const [label, row] of [["mlx-cpu", ref], ["mlx+blas", refBlas]] as const) {
    if (row) {
      console.log(`  ${name.padEnd(12)} ${label.padEnd(8)} ${row.steps_per_second.toFixed(2).padStart(8)} ${"".padStart(13)} ${row.cpu_ms.toFixed(1).padStart(7)} ${row.peak_mib.toFixed(2).padStart(8)}`);
    }
  }
  for (const device of [mg.cpu, mg.gpu].filter((d) => DEVICES.includes(d.type))) {
    const label = device.type === "gpu" && mg.deviceInfo().is_simulator ? "gpu-sim" : device.type;
    try {
      const r = run(name, device);
      console.log(
        `  ${name.padEnd(12)} ${label.padEnd(8)} ${r.stepsPerSecond.toFixed(2).padStart(8)} ${r.spread.padStart(13)} ${r.cpuMs.toFixed(1).padStart(7)} ${r.peakMiB.toFixed(2).padStart(8)}   ${ratios(r, ref).padStart(32)}   ${ratios(r, refBlas).padStart(20)}`,
      );
    } catch (e) {
      console.log(`  ${name.padEnd(12)} ${label.padEnd(8)} not run: ${(e as Error).message}`);
    }
  }
}
