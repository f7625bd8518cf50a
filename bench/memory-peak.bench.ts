// Peak active memory of three programs on both devices, next to MLX's mx.get_peak_memory() for the
// same program (issue 11's goal: at most 1.1× MLX's peak):
//   (a) uniform + softmax   (b) a 4-layer MLP training step (fwd + bwd + plain SGD)
//   (c) a transformer block forward + backward
// The metalgrad programs are written as a metalgrad user writes them: temporaries that JavaScript
// cannot free by reference counting are scoped with `mg.tidy` before `eval`, so eval frees each one
// after its last use, as MLX does when Python drops its last reference.
//
//   bun run bench/memory-peak.bench.ts          (MG_PYTHON=/path/to/python with mlx for MLX's column)
import * as mg from "../ts/index.ts";
import type { MgArray } from "../ts/core/array.ts";
import { pythonWith } from "./util.ts";

const MiB = 2 ** 20;
const fmt = (b: number) => (b / MiB).toFixed(2).padStart(8);

/** Active memory before, the peak reached while `program` runs (minus before), after. */
function measure(program: () => void): { peak: number; after: number } {
  mg.synchronize();
  Bun.gc(true);
  const before = mg.getActiveMemory();
  mg.resetPeakMemory();
  program();
  mg.synchronize();
  return { peak: mg.getPeakMemory() - before, after: mg.getActiveMemory() - before };
}

// ---- the programs (sizes shared with the MLX script below) --------------------------------------
const N_A = 1 << 18;
const MLP = { batch: 128, widths: [784, 512, 512, 512, 10], lr: 0.01 };
const BLOCK = { batch: 4, seq: 128, dim: 256, heads: 4 };

function programA(dev: mg.Device): () => void {
  return () => {
    const u = mg.random.uniform(0, 1, [N_A], mg.float32, null, { stream: dev });
    const s = mg.tidy(() => mg.softmax(mg.multiply(u, 3), -1, { stream: dev }));
    mg.eval(u, s);
  };
}

function mlpParams(dev: mg.Device): MgArray[] {
  const ps: MgArray[] = [];
  const w = MLP.widths;
  for (let i = 0; i + 1 < w.length; i++) {
    ps.push(mg.random.normal([w[i]!, w[i + 1]!], mg.float32, 0, 0.05, null, { stream: dev }));
    ps.push(mg.zeros([w[i + 1]!], mg.float32, { stream: dev }));
  }
  mg.eval(ps);
  return ps;
}

function mlpLoss(ps: MgArray[], x: MgArray, t: MgArray): MgArray {
  let h = x;
  for (let i = 0; i < ps.length; i += 2) {
    h = mg.add(mg.matmul(h, ps[i]!), ps[i + 1]!);
    if (i + 2 < ps.length) h = mg.maximum(h, 0);
  }
  return mg.mean(mg.square(mg.subtract(h, t)));
}

function programB(dev: mg.Device): () => void {
  const x = mg.random.normal([MLP.batch, MLP.widths[0]!], mg.float32, 0, 1, null, { stream: dev });
  const t = mg.random.normal([MLP.batch, MLP.widths.at(-1)!], mg.float32, 0, 1, null, { stream: dev });
  mg.eval(x, t);
  let ps = mlpParams(dev);
  const step = mg.valueAndGrad(mlpLoss);
  const once = () => {
    const next = mg.stream(dev, () =>
      mg.tidy(() => {
        const [loss, grads] = step(ps, x, t);
        return { loss, ps: ps.map((p, i) => mg.subtract(p, mg.multiply(grads[i]!, MLP.lr))) };
      }),
    );
    mg.eval(next.loss, next.ps);
    for (const p of ps) p.dispose();
    ps = next.ps;
    next.loss.dispose();
  };
  once(); // warm-up: the first step's memory includes one-time allocations
  return once;
}

interface BlockParams {
  wq: MgArray; wk: MgArray; wv: MgArray; wo: MgArray; w1: MgArray; w2: MgArray;
  g1: MgArray; b1: MgArray; g2: MgArray; b2: MgArray;
}

function layerNorm(x: MgArray, g: MgArray, b: MgArray): MgArray {
  const mu = mg.mean(x, -1, true);
  const xc = mg.subtract(x, mu);
  const v = mg.mean(mg.square(xc), -1, true);
  return mg.add(mg.multiply(mg.multiply(xc, mg.rsqrt(mg.add(v, 1e-5))), g), b);
}

function blockLoss(p: BlockParams, x: MgArray, mask: MgArray): MgArray {
  const { batch: B, seq: L, dim: D, heads: H } = BLOCK;
  const hd = D / H;
  const heads = (a: MgArray) => mg.transpose(mg.reshape(a, [B, L, H, hd]), [0, 2, 1, 3]);
  const h = layerNorm(x, p.g1, p.b1);
  const q = heads(mg.matmul(h, p.wq));
  const k = heads(mg.matmul(h, p.wk));
  const v = heads(mg.matmul(h, p.wv));
  const scores = mg.add(mg.multiply(mg.matmul(q, mg.swapaxes(k, -1, -2)), 1 / Math.sqrt(hd)), mask);
  const att = mg.matmul(mg.softmax(scores, -1), v);
  const merged = mg.reshape(mg.transpose(att, [0, 2, 1, 3]), [B, L, D]);
  const x1 = mg.add(x, mg.matmul(merged, p.wo));
  const h2 = layerNorm(x1, p.g2, p.b2);
  const x2 = mg.add(x1, mg.matmul(mg.maximum(mg.matmul(h2, p.w1), 0), p.w2));
  return mg.mean(mg.square(x2));
}

function programC(dev: mg.Device): () => void {
  const { batch: B, seq: L, dim: D } = BLOCK;
  const s = { stream: dev };
  const n = (shape: number[], scale: number) => mg.random.normal(shape, mg.float32, 0, scale, null, s);
  const p: BlockParams = {
    wq: n([D, D], 0.05), wk: n([D, D], 0.05), wv: n([D, D], 0.05), wo: n([D, D], 0.05),
    w1: n([D, 4 * D], 0.05), w2: n([4 * D, D], 0.05),
    g1: mg.ones([D], mg.float32, s), b1: mg.zeros([D], mg.float32, s),
    g2: mg.ones([D], mg.float32, s), b2: mg.zeros([D], mg.float32, s),
  };
  const x = n([B, L, D], 1);
  const mask = mg.multiply(mg.triu(mg.ones([L, L], mg.float32, s), 1, s), -1e9, s);
  mg.eval(p, x, mask);
  const vg = mg.valueAndGrad(blockLoss);
  const once = () => {
    const out = mg.stream(dev, () => mg.tidy(() => vg(p, x, mask)));
    mg.eval(out);
    out[0].dispose();
    for (const g of Object.values(out[1])) g.dispose();
  };
  once();
  return once;
}

// ---- MLX, the same programs ----------------------------------------------------------------------
const MLX_SCRIPT = String.raw`
import json, math, sys
import mlx.core as mx
N_A, MLP, BLOCK = json.loads(sys.argv[1])
out = {}
def measure(fn):
    mx.synchronize(); before = mx.get_active_memory(); mx.reset_peak_memory()
    fn(); mx.synchronize()
    return {"peak": mx.get_peak_memory() - before, "after": mx.get_active_memory() - before}
def a():
    u = mx.random.uniform(shape=[N_A]); s = mx.softmax(3 * u, axis=-1); mx.eval(u, s)
def mlp_loss(ps, x, t):
    h = x
    for i in range(0, len(ps), 2):
        h = h @ ps[i] + ps[i + 1]
        if i + 2 < len(ps): h = mx.maximum(h, 0)
    return mx.mean(mx.square(h - t))
def make_b():
    w = MLP["widths"]
    x = mx.random.normal([MLP["batch"], w[0]]); t = mx.random.normal([MLP["batch"], w[-1]])
    ps = []
    for i in range(len(w) - 1):
        ps += [mx.random.normal([w[i], w[i + 1]]) * 0.05, mx.zeros([w[i + 1]])]
    mx.eval(x, t, ps)
    vg = mx.value_and_grad(mlp_loss)
    state = {"ps": ps}
    def step():
        loss, grads = vg(state["ps"], x, t)
        state["ps"] = [p - MLP["lr"] * g for p, g in zip(state["ps"], grads)]
        mx.eval(loss, state["ps"])
    step()
    return step
def layer_norm(x, g, b):
    mu = mx.mean(x, -1, keepdims=True); xc = x - mu; v = mx.mean(mx.square(xc), -1, keepdims=True)
    return xc * mx.rsqrt(v + 1e-5) * g + b
def block_loss(p, x, mask):
    B, L, D, H = BLOCK["batch"], BLOCK["seq"], BLOCK["dim"], BLOCK["heads"]; hd = D // H
    heads = lambda a: a.reshape(B, L, H, hd).transpose(0, 2, 1, 3)
    h = layer_norm(x, p["g1"], p["b1"])
    q, k, v = heads(h @ p["wq"]), heads(h @ p["wk"]), heads(h @ p["wv"])
    scores = (q @ k.swapaxes(-1, -2)) * (1 / math.sqrt(hd)) + mask
    att = mx.softmax(scores, axis=-1) @ v
    x1 = x + att.transpose(0, 2, 1, 3).reshape(B, L, D) @ p["wo"]
    h2 = layer_norm(x1, p["g2"], p["b2"])
    x2 = x1 + mx.maximum(h2 @ p["w1"], 0) @ p["w2"]
    return mx.mean(mx.square(x2))
def make_c():
    B, L, D = BLOCK["batch"], BLOCK["seq"], BLOCK["dim"]
    n = lambda s: mx.random.normal(s) * 0.05
    p = {"wq": n([D, D]), "wk": n([D, D]), "wv": n([D, D]), "wo": n([D, D]), "w1": n([D, 4 * D]), "w2": n([4 * D, D]),
         "g1": mx.ones([D]), "b1": mx.zeros([D]), "g2": mx.ones([D]), "b2": mx.zeros([D])}
    x = mx.random.normal([B, L, D]); mask = mx.triu(mx.ones([L, L]), 1) * -1e9
    mx.eval(p, x, mask)
    vg = mx.value_and_grad(block_loss)
    def step():
        out = vg(p, x, mask); mx.eval(out)
    step()
    return step
mx.set_default_device(mx.cpu)
out["a"] = measure(a)
b = make_b(); out["b"] = measure(b)
c = make_c(); out["c"] = measure(c)
out["version"] = mx.__version__
print(json.dumps(out))
`;

function mlxPeaks(): Record<string, { peak: number; after: number }> | string {
  const python = pythonWith(["mlx.core"]);
  if (!python) return "mlx: not installed";
  const r = Bun.spawnSync([python, "-c", MLX_SCRIPT, JSON.stringify([N_A, MLP, BLOCK])]);
  if (r.exitCode !== 0) return `mlx: failed (${r.stderr.toString().trim().split("\n").at(-1)})`;
  return JSON.parse(r.stdout.toString()) as Record<string, { peak: number; after: number }>;
}

const cases: [string, string, (dev: mg.Device) => () => void][] = [
  ["a", "uniform(2^18) + softmax(3u)", programA],
  ["b", `MLP step ${MLP.widths.join("-")}, batch ${MLP.batch}`, programB],
  ["c", `transformer block fwd+bwd B${BLOCK.batch} L${BLOCK.seq} D${BLOCK.dim}`, programC],
];
const mlx = mlxPeaks();
console.log(`peak active memory, MiB (after = still held when the program returns)${typeof mlx === "string" ? `   ${mlx}` : `   MLX ${mlx.version} cpu`}`);
console.log(`  ${"program".padEnd(44)} ${"device".padEnd(6)} ${"peak".padStart(8)} ${"after".padStart(8)} ${"MLX".padStart(8)} ${"ratio".padStart(6)}`);
for (const [key, name, make] of cases) {
  for (const dev of [mg.cpu, mg.gpu]) {
    const program = make(dev);
    const m = measure(program);
    const ref = typeof mlx === "string" ? null : mlx[key]!;
    const ratio = ref ? (m.peak / ref.peak).toFixed(2) : "—";
    console.log(`  ${name.padEnd(44)} ${dev.type.padEnd(6)} ${fmt(m.peak)} ${fmt(m.after)} ${ref ? fmt(ref.peak) : "       —"} ${ratio.padStart(6)}`);
  }
}
