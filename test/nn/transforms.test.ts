// ts/nn/transforms.ts: nn.valueAndGrad and nn.checkpoint, and end-to-end training runs whose loss
// curves match MLX's step for step from the same initial weights (training.json).
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { decode, decodePairs, DEVICES, type Enc, evalTs, expectPairsClose, loadFixture } from "./fixtures.ts";

class MLP extends mg.nn.Module {
  declare layers: mg.nn.Linear[];
  constructor() {
    super();
    this.layers = [new mg.nn.Linear(6, 16), new mg.nn.Linear(16, 16), new mg.nn.Linear(16, 3)];
  }
  override forward(x: mg.MgArray): mg.MgArray {
    for (const l of this.layers.slice(0, -1)) x = mg.nn.relu(l.forward(x));
    return this.layers[this.layers.length - 1]!.forward(x);
  }
}

class TinyTransformer extends mg.nn.Module {
  declare embedding: mg.nn.Embedding;
  declare encoder: mg.nn.TransformerEncoder;
  declare out: mg.nn.Linear;
  constructor() {
    super();
    this.embedding = new mg.nn.Embedding(11, 16);
    this.encoder = new mg.nn.TransformerEncoder(2, 16, 4, { mlpDims: 32 });
    this.out = new mg.nn.Linear(16, 11);
  }
  override forward(tokens: mg.MgArray): mg.MgArray {
    const mask = mg.nn.MultiHeadAttention.createAdditiveCausalMask(tokens.shape[1]!);
    return this.out.forward(this.encoder.forward(this.embedding.forward(tokens), mask));
  }
}

class SmallCNN extends mg.nn.Module {
  declare conv1: mg.nn.Conv2d;
  declare conv2: mg.nn.Conv2d;
  declare pool: mg.nn.MaxPool2d;
  declare fc: mg.nn.Linear;
  constructor() {
    super();
    this.conv1 = new mg.nn.Conv2d(1, 8, 3, { padding: 1 });
    this.conv2 = new mg.nn.Conv2d(8, 16, 3, { padding: 1 });
    this.pool = new mg.nn.MaxPool2d(2);
    this.fc = new mg.nn.Linear(16 * 2 * 2, 4);
  }
  override forward(x: mg.MgArray): mg.MgArray {
    x = this.pool.forward(mg.nn.relu(this.conv1.forward(x)));
    x = this.pool.forward(mg.nn.relu(this.conv2.forward(x)));
    return this.fc.forward(mg.reshape(x, [x.shape[0]!, -1]));
  }
}

interface TrainingCase {
  name: string;
  opt_ts: string;
  loss_ts: string;
  weights: [string, Enc][];
  x: Enc;
  y: Enc;
  losses: number[];
  final: [string, Enc][];
}

const fixture = loadFixture<TrainingCase>("training");

describe(`training matches MLX ${fixture.mlx}`, () => {
  for (const device of DEVICES) {
    test.each(fixture.cases.map((c) => [c.name, c] as const))(`%s on ${device.type}`, (_n, c) => {
      mg.stream(device, () => {
        const model = c.name.startsWith("transformer") ? new TinyTransformer() : c.name.startsWith("cnn") ? new SmallCNN() : new MLP();
        model.loadWeights(decodePairs(c.weights));
        const opt = evalTs(c.opt_ts) as mg.optimizers.Optimizer;
        const x = decode(c.x) as mg.MgArray;
        const y = decode(c.y) as mg.MgArray;
        const lossFn = (xb: mg.MgArray, yb: mg.MgArray) => evalTs(c.loss_ts, { model, x: xb, y: yb }) as mg.MgArray;
        const step = mg.nn.valueAndGrad(model, lossFn);
        const losses: number[] = [];
        for (let i = 0; i < c.losses.length; i++) {
          const [loss, grads] = step(x, y);
          opt.update(model, grads);
          mg.eval(model.parameters(), opt.state);
          losses.push(loss.item() as number);
        }
        // The curves agree to float32 rounding, compounded over the steps.
        losses.forEach((l, i) => expect(Math.abs(l - c.losses[i]!), `${c.name} loss ${i}: ${l} vs MLX ${c.losses[i]}`).toBeLessThan(1e-4 * Math.max(1, Math.abs(c.losses[i]!))));
        expect(losses[losses.length - 1]!).toBeLessThan(losses[0]!);
        expectPairsClose(model.namedParameters(), c.final, `${c.name} final weights`, { rtol: 1e-3, atol: 1e-4 });
      });
    });
  }
});

describe("nn.valueAndGrad", () => {
  test("gradients w.r.t. the trainable parameters only, shaped like them; the module keeps its own arrays", () => {
    const first = new mg.nn.Linear(2, 3);
    const model = new mg.nn.Sequential(first, new mg.nn.Linear(3, 1));
    first.freeze({ keys: "bias" });
    const before = model.namedParameters();
    const x = mg.array([[1, -2]], mg.float32);
    const f = mg.nn.valueAndGrad(model, (xb: mg.MgArray) => mg.sum(model.forward(xb)));
    const [value, grads] = f(x);
    expect(mg.utils.treeFlatten(grads).map(([k]) => k)).toEqual(["layers.0.weight", "layers.1.weight", "layers.1.bias"]);
    // d/dW1 of sum(W1·(W0·x + b0) + b1) = (W0·x + b0)ᵀ
    const h = first.forward(x);
    // Sequential's layers are typed as modules in general: the tree's shape is known, a layer's entries are not.
    expect(mg.allclose((grads.layers[1] as { weight: mg.MgArray }).weight, h, 1e-6, 1e-6).item()).toBe(true);
    expect(mg.allclose(value, mg.sum(model.forward(x)), 1e-6, 1e-6).item()).toBe(true);
    model.namedParameters().forEach(([k, a], i) => {
      expect(k).toBe(before[i]![0]);
      expect(a).toBe(before[i]![1]);
    });
  });

  test("returns [loss, aux] values and the loss's gradient", () => {
    const model = new mg.nn.Linear(2, 2);
    const f = mg.nn.valueAndGrad(model, (x: mg.MgArray) => {
      const y = model.forward(x);
      return [mg.sum(y), y];
    });
    const [[loss, y], g] = f(mg.ones([1, 2])) as unknown as [[mg.MgArray, mg.MgArray], any];
    expect(y.shape).toEqual([1, 2]);
    expect(mg.allclose(loss, mg.sum(y)).item()).toBe(true);
    expect(g.weight.tolist()).toEqual([[1, 1], [1, 1]]);
  });

  test("BatchNorm's running statistics update inside it and stay usable", () => {
    const bn = new mg.nn.BatchNorm(2);
    const x = mg.array([[1, 2], [3, 6]], mg.float32);
    const f = mg.nn.valueAndGrad(bn, (xb: mg.MgArray) => mg.sum(mg.square(bn.forward(xb))));
    f(x);
    expect(bn.running_mean!.tolist()).toEqual([Math.fround(0.2), Math.fround(0.4)]);
    expect(Object.keys(bn.trainableParameters())).toEqual(["weight", "bias"]);
  });

  test("the first argument must be a module", () => {
    expect(() => mg.nn.valueAndGrad({} as never, () => mg.array(0))).toThrow("[value_and_grad] the first argument must be an mg.nn.Module.");
  });
});

describe("nn.checkpoint", () => {
  for (const device of DEVICES) {
    test(`recomputes the module's forward in the backward pass, same gradients (${device.type})`, () => {
      mg.stream(device, () => {
        mg.random.seed(3);
        const layer = new mg.nn.TransformerEncoderLayer(8, 2, 16);
        const x = mg.random.normal([2, 3, 8]);
        const plain = mg.nn.valueAndGrad(layer, (xb: mg.MgArray) => mg.sum(layer.forward(xb, null)));
        const ck = mg.nn.checkpoint(layer);
        const viaCheckpoint = mg.nn.valueAndGrad(layer, (xb: mg.MgArray) => mg.sum(ck(xb, null)));
        const [v1, g1] = plain(x);
        const [v2, g2] = viaCheckpoint(x);
        expect(mg.allclose(v1, v2, 1e-5, 1e-5).item()).toBe(true);
        const a = mg.utils.treeFlatten(g1) as [string, mg.MgArray][];
        const b = mg.utils.treeFlatten(g2) as [string, mg.MgArray][];
        expect(b.map(([k]) => k)).toEqual(a.map(([k]) => k));
        a.forEach(([k, ga], i) => expect(mg.allclose(ga, b[i]![1], 1e-5, 1e-5).item(), k).toBe(true));
      });
    });
  }
});
