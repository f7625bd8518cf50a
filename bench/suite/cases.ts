// The cases of bench.ts: each names its inputs (generated once from a fixed seed and written to a
// safetensors file, which MLX and numpy read, so every system computes on the same values), the
// metalgrad computation, the op the Python worker runs for MLX and numpy, and the work it does
// (for GFLOP/s or GB/s). A case whose metalgrad op this build lacks (mg.fast's fused ops until
// they land) reports why and is picked up automatically once the op exists.
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/index.ts";

export interface Work {
  /** Floating-point operations of one run (a multiply-add counts two). */
  flops?: number;
  /** Bytes one run must read and write at least. */
  bytes?: number;
}

/** metalgrad's side of a case on one device. */
export interface Runner {
  /** Computes, evaluates, waits for the device, and frees what it made. */
  run(): void;
  /** One run's outputs as Σ|x| in float64 (a training step: its loss), to check that systems agree. */
  check(): number;
}

export interface BenchCase {
  id: string;
  group: string;
  /** The op the Python worker runs (bench/suite/worker.py), with its parameters. */
  op: string;
  params: Record<string, unknown>;
  work: Work;
  /** Arrays written to the case's file (names are the worker's). */
  inputs(): Record<string, MgArray>;
  /** Why metalgrad cannot run this case on this build, or null. */
  unavailable(): string | null;
  prepare(inputs: Record<string, MgArray>, device: mg.Device): Runner;
  /** A file the case reads (the load case), written once before the case and removed after. */
  target?: { file: string; write(): void };
}

/**
 * Whether two systems' checks agree: Σ|output| within 2e-3 relative (2e-2 for half-precision
 * cases, whose outputs round differently in each system).
 */
export function agrees(caseId: string, mine: number, theirs: number): boolean {
  const rel = Math.abs(mine - theirs) / Math.max(Math.abs(theirs), 1e-30);
  return rel <= (/\b(f16|bf16)\b/.test(caseId) ? 2e-2 : 2e-3);
}

type Fast = Record<string, ((...args: any[]) => MgArray) | undefined>;
/** mg.fast's fused ops, where this build has them. */
const fast = mg.fast as unknown as Fast;
const needsFast = (name: string) => () => (typeof fast[name] === "function" ? null : `mg.fast.${name} is not in this build yet (fused ops: branch wave2/fast)`);

function sumOf(outputs: MgArray[]): number {
  let total = 0;
  for (const o of outputs) {
    const data = o.astype(mg.float32).dataSync() as Float32Array;
    for (let i = 0; i < data.length; i++) total += Math.abs(data[i]!);
  }
  return total;
}

function disposeAll(outputs: MgArray[]): void {
  for (const o of outputs) o.dispose();
}

/** A runner for a pure computation: build it in a tidy scope, evaluate, wait, free. */
function opRunner(device: mg.Device, compute: () => MgArray[]): Runner {
  const outputs = () => mg.stream(device, () => mg.tidy(compute));
  return {
    run() {
      const out = outputs();
      mg.eval(out);
      mg.synchronize();
      disposeAll(out);
    },
    check() {
      const out = outputs();
      mg.eval(out);
      const v = sumOf(out);
      disposeAll(out);
      return v;
    },
  };
}

const dtypes = { f32: mg.float32, f16: mg.float16, bf16: mg.bfloat16 } as const;
type DtypeName = keyof typeof dtypes;

function normal(shape: number[], dtype: mg.Dtype = mg.float32, scale = 1): MgArray {
  const x = mg.multiply(mg.random.normal(shape), scale).astype(dtype);
  mg.eval(x);
  return x;
}

const prod = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);
const fmt = (s: readonly number[]) => s.join("×");

// Training steps: the same models as bench/train.bench.ts, weights written to the case file so
// MLX starts from the same parameters.

class MLP extends mg.nn.Module {
  declare layers: mg.nn.Linear[];
  constructor(sizes: number[]) {
    super();
    this.layers = sizes.slice(1).map((n, i) => new mg.nn.Linear(sizes[i]!, n));
  }
  override forward(x: MgArray): MgArray {
    for (const l of this.layers.slice(0, -1)) x = mg.nn.relu(l.forward(x));
    return this.layers.at(-1)!.forward(x);
  }
}

class Transformer extends mg.nn.Module {
  declare embedding: mg.nn.Embedding;
  declare encoder: mg.nn.TransformerEncoder;
  declare out: mg.nn.Linear;
  constructor(p: { vocab: number; dims: number; layers: number; heads: number; mlp: number }) {
    super();
    this.embedding = new mg.nn.Embedding(p.vocab, p.dims);
    this.encoder = new mg.nn.TransformerEncoder(p.layers, p.dims, p.heads, { mlpDims: p.mlp });
    this.out = new mg.nn.Linear(p.dims, p.vocab);
  }
  override forward(tokens: MgArray): MgArray {
    const mask = mg.nn.MultiHeadAttention.createAdditiveCausalMask(tokens.shape[1]!);
    return this.out.forward(this.encoder.forward(this.embedding.forward(tokens), mask));
  }
}

function trainRunner(device: mg.Device, model: mg.nn.Module, optimizer: mg.optimizers.Optimizer, a: Record<string, MgArray>): Runner {
  const weights = Object.entries(a).filter(([k]) => k.startsWith("param.")).map(([k, v]) => [k.slice(6), v] as [string, MgArray]);
  model.loadWeights(weights);
  mg.eval(model.parameters());
  const lossAndGrad = mg.nn.valueAndGrad(model, (m: mg.nn.Module, x: MgArray, y: MgArray) =>
    mg.nn.losses.crossEntropy(m.forward(x) as MgArray, y, { reduction: "mean" }));
  const step = () => mg.stream(device, () => {
    const loss = mg.tidy(() => {
      const [l, grads] = lossAndGrad(model, a.x!, a.y!);
      optimizer.update(model, grads);
      return l;
    });
    mg.eval(loss, model.parameters(), optimizer.state);
    mg.synchronize();
    return loss;
  });
  return {
    run: () => step().dispose(),
    check() {
      const loss = step();
      const v = loss.item() as number;
      loss.dispose();
      return v;
    },
  };
}

/** The cases at full size, or small ones for --quick (seconds in all). */
export function benchCases(quick: boolean, tmpDir: string): BenchCase[] {
  const cases: BenchCase[] = [];
  const q = <T>(full: T, small: T) => (quick ? small : full);

  // Elementwise and reductions: memory-bound, reported in GB/s.
  const n = q(1 << 22, 1 << 16);
  cases.push({
    id: `add f32 [${n}]`, group: "elementwise", op: "add", params: {}, work: { bytes: 12 * n },
    inputs: () => ({ a: normal([n]), b: normal([n]) }), unavailable: () => null,
    prepare: (a, d) => opRunner(d, () => [mg.add(a.a!, a.b!)]),
  });
  cases.push({
    id: `exp f32 [${n}]`, group: "elementwise", op: "exp", params: {}, work: { bytes: 8 * n },
    inputs: () => ({ a: normal([n]) }), unavailable: () => null,
    prepare: (a, d) => opRunner(d, () => [mg.exp(a.a!)]),
  });
  cases.push({
    id: `sum f32 [${n}] → scalar`, group: "reduction", op: "sum_all", params: {}, work: { bytes: 4 * n },
    inputs: () => ({ a: normal([n]) }), unavailable: () => null,
    prepare: (a, d) => opRunner(d, () => [mg.sum(a.a!)]),
  });
  const rows = q([4096, 1024], [256, 256]);
  cases.push({
    id: `sum f32 ${fmt(rows)} over the last axis`, group: "reduction", op: "sum_rows", params: {}, work: { bytes: 4 * prod(rows) },
    inputs: () => ({ a: normal(rows) }), unavailable: () => null,
    prepare: (a, d) => opRunner(d, () => [mg.sum(a.a!, -1)]),
  });
  cases.push({
    id: `softmax f32 ${fmt(rows)} over the last axis`, group: "softmax", op: "softmax", params: {}, work: { bytes: 8 * prod(rows) },
    inputs: () => ({ a: normal(rows) }), unavailable: () => null,
    prepare: (a, d) => opRunner(d, () => [mg.softmax(a.a!, -1)]),
  });

  // Matmul in three dtypes (float32 accumulation everywhere).
  const m = q(1024, 128);
  for (const dt of ["f32", "f16", "bf16"] as DtypeName[]) {
    cases.push({
      id: `matmul ${dt} ${m}×${m}×${m}`, group: "matmul", op: "matmul", params: {}, work: { flops: 2 * m ** 3 },
      inputs: () => ({ a: normal([m, m], dtypes[dt]), b: normal([m, m], dtypes[dt]) }), unavailable: () => null,
      prepare: (a, d) => opRunner(d, () => [mg.matmul(a.a!, a.b!)]),
    });
  }

  // conv2d, NHWC as MLX: 3×3, padding 1.
  const [cn, ch, cc, co] = q([8, 32, 64, 64], [2, 8, 16, 16]);
  cases.push({
    id: `conv2d f32 ${cn}×${ch}×${ch}×${cc} * ${co}×3×3×${cc}, padding 1`, group: "conv2d", op: "conv2d", params: { padding: 1 },
    work: { flops: 2 * cn * ch * ch * co * 9 * cc },
    inputs: () => ({ x: normal([cn, ch, ch, cc]), w: normal([co, 3, 3, cc], mg.float32, 0.1) }), unavailable: () => null,
    prepare: (a, d) => opRunner(d, () => [mg.conv2d(a.x!, a.w!, 1, 1)]),
  });

  // mg.fast's fused ops, forward and backward (vjp: includes the forward, as MLX's mx.vjp).
  const nx = q([16, 256, 1024], [2, 32, 128]);
  const hd = nx.at(-1)!;
  for (const backward of [false, true]) {
    const pass = backward ? "backward" : "forward";
    cases.push({
      id: `rmsNorm f32 ${fmt(nx)} ${pass}`, group: "fast ops", op: "rms_norm", params: { eps: 1e-5, backward }, work: { bytes: (backward ? 16 : 8) * prod(nx) },
      inputs: () => ({ x: normal(nx), w: normal([hd]), g: normal(nx) }), unavailable: needsFast("rmsNorm"),
      prepare: (a, d) => opRunner(d, () => {
        const f = (x: MgArray, w: MgArray) => fast.rmsNorm!(x, w, 1e-5);
        return backward ? mg.vjp(f, [a.x!, a.w!], [a.g!])[1] : [f(a.x!, a.w!)];
      }),
    });
    cases.push({
      id: `layerNorm f32 ${fmt(nx)} ${pass}`, group: "fast ops", op: "layer_norm", params: { eps: 1e-5, backward }, work: { bytes: (backward ? 16 : 8) * prod(nx) },
      inputs: () => ({ x: normal(nx), w: normal([hd]), b: normal([hd]), g: normal(nx) }), unavailable: needsFast("layerNorm"),
      prepare: (a, d) => opRunner(d, () => {
        const f = (x: MgArray, w: MgArray, b: MgArray) => fast.layerNorm!(x, w, b, 1e-5);
        return backward ? mg.vjp(f, [a.x!, a.w!, a.b!], [a.g!])[1] : [f(a.x!, a.w!, a.b!)];
      }),
    });
  }
  const rs = q([4, 8, 256, 64], [1, 2, 32, 16]);
  const ropeParams = { dims: rs[3]!, traditional: false, base: 10000 };
  for (const backward of [false, true]) {
    cases.push({
      id: `rope f32 ${fmt(rs)} ${backward ? "backward" : "forward"}`, group: "fast ops", op: "rope", params: { ...ropeParams, backward },
      work: { bytes: (backward ? 16 : 8) * prod(rs) },
      inputs: () => ({ x: normal(rs), g: normal(rs) }), unavailable: needsFast("rope"),
      prepare: (a, d) => opRunner(d, () => {
        const f = (x: MgArray) => fast.rope!(x, ropeParams.dims, { traditional: false, base: ropeParams.base, scale: 1, offset: 0 });
        return backward ? mg.vjp(f, [a.x!], [a.g!])[1] : [f(a.x!)];
      }),
    });
  }
  const [sb, sh, sl, sd] = q([2, 8, 256, 64], [1, 2, 32, 16]);
  const scale = 1 / Math.sqrt(sd);
  for (const backward of [false, true]) {
    // Causal: about half of the L×L scores are computed; counted as all of them.
    const flops = 4 * sb * sh * sl * sl * sd * (backward ? 3.5 : 1);
    cases.push({
      id: `SDPA f32 causal q,k,v ${fmt([sb, sh, sl, sd])} ${backward ? "backward" : "forward"}`, group: "fast ops", op: "sdpa",
      params: { scale, mask: "causal", backward }, work: { flops },
      inputs: () => ({ q: normal([sb, sh, sl, sd]), k: normal([sb, sh, sl, sd]), v: normal([sb, sh, sl, sd]), g: normal([sb, sh, sl, sd]) }),
      unavailable: needsFast("scaledDotProductAttention"),
      prepare: (a, d) => opRunner(d, () => {
        const f = (qq: MgArray, kk: MgArray, vv: MgArray) => fast.scaledDotProductAttention!(qq, kk, vv, { scale, mask: "causal" });
        return backward ? mg.vjp(f, [a.q!, a.k!, a.v!], [a.g!])[1] : [f(a.q!, a.k!, a.v!)];
      }),
    });
  }

  // Quantized matmul: 4-bit affine weights in groups of 64 (quantized once by metalgrad; MLX's
  // quantize gives the same bits), float32 activations.
  const [qm, qk, qn] = q([16, 2048, 2048], [4, 256, 256]);
  cases.push({
    id: `quantizedMatmul 4-bit g64 x ${qm}×${qk} · W ${qn}×${qk}ᵀ`, group: "quantized", op: "quantized_matmul", params: { groupSize: 64, bits: 4 },
    work: { flops: 2 * qm * qk * qn },
    inputs: () => {
      const [wq, scales, biases] = mg.quantize(normal([qn, qk], mg.float32, 0.05), 64, 4);
      mg.eval(wq, scales, biases);
      return { x: normal([qm, qk]), wq: wq!, scales: scales!, biases: biases! };
    },
    unavailable: () => null,
    prepare: (a, d) => opRunner(d, () => [mg.quantizedMatmul(a.x!, a.wq!, a.scales!, a.biases!, true, 64, 4)]),
  });

  // Training steps: loss and gradients, the optimizer's update, eval of loss, parameters and state.
  const mlpSizes = q([784, 512, 512, 10], [64, 32, 10]);
  const mlpBatch = q(64, 16);
  const mlpFlops = 6 * mlpBatch * mlpSizes.slice(1).reduce((s, k, i) => s + k * mlpSizes[i]!, 0);
  cases.push({
    id: `MLP training step ${mlpSizes.join("→")}, batch ${mlpBatch}, Adam`, group: "training", op: "mlp_step", params: { sizes: mlpSizes, lr: 1e-3 },
    work: { flops: mlpFlops },
    inputs: () => {
      mg.random.seed(1);
      const model = new MLP(mlpSizes);
      mg.eval(model.parameters());
      return {
        ...Object.fromEntries(model.namedParameters().map(([k, v]) => [`param.${k}`, v])),
        x: normal([mlpBatch, mlpSizes[0]!]), y: mg.random.randint(0, mlpSizes.at(-1)!, [mlpBatch]),
      };
    },
    unavailable: () => null,
    prepare: (a, d) => trainRunner(d, new MLP(mlpSizes), new mg.optimizers.Adam(1e-3), a),
  });
  const tp = q({ vocab: 256, dims: 128, layers: 2, heads: 4, mlp: 512, batch: 8, length: 64 }, { vocab: 64, dims: 32, layers: 1, heads: 2, mlp: 64, batch: 2, length: 16 });
  const tokens = tp.batch * tp.length;
  const perToken = tp.layers * (4 * tp.dims * tp.dims + 2 * tp.dims * tp.mlp) + tp.dims * tp.vocab;
  cases.push({
    id: `transformer training step (${tp.layers} layers, d ${tp.dims}, ${tp.heads} heads, batch ${tp.batch}×${tp.length}), AdamW`, group: "training",
    op: "transformer_step", params: { ...tp, lr: 1e-3 },
    work: { flops: 6 * tokens * perToken + tp.layers * 12 * tp.batch * tp.length * tp.length * tp.dims },
    inputs: () => {
      mg.random.seed(2);
      const model = new Transformer(tp);
      mg.eval(model.parameters());
      return {
        ...Object.fromEntries(model.namedParameters().map(([k, v]) => [`param.${k}`, v])),
        x: mg.random.randint(0, tp.vocab, [tp.batch, tp.length]), y: mg.random.randint(0, tp.vocab, [tp.batch, tp.length]),
      };
    },
    unavailable: () => null,
    prepare: (a, d) => trainRunner(d, new Transformer(tp), new mg.optimizers.AdamW(1e-3), a),
  });

  // Loading a safetensors file (page cache warm): every array materialized.
  const tensors = q(16, 4);
  const tensorShape = q([1024, 1024], [256, 256]);
  const file = `${tmpDir}/load-${tensors}x${fmt(tensorShape)}.safetensors`;
  const loadBytes = tensors * 4 * prod(tensorShape);
  cases.push({
    id: `load safetensors ${tensors} × ${fmt(tensorShape)} f32 (${(loadBytes / 2 ** 20).toFixed(0)} MiB)`, group: "io", op: "load", params: { target: file },
    work: { bytes: loadBytes },
    inputs: () => ({}),
    unavailable: () => null,
    target: {
      file,
      write: () => mg.saveSafetensors(file, Object.fromEntries(Array.from({ length: tensors }, (_, i) => [`layers.${i}.weight`, normal(tensorShape)]))),
    },
    prepare: (_a, d) => ({
      run() {
        const arrays = mg.load(file, { stream: d }) as Record<string, MgArray>;
        mg.eval(arrays);
        mg.synchronize();
        disposeAll(Object.values(arrays));
      },
      check() {
        const arrays = mg.load(file, { stream: d }) as Record<string, MgArray>;
        const v = sumOf(Object.values(arrays));
        disposeAll(Object.values(arrays));
        return v;
      },
    }),
  });
  return cases;
}
