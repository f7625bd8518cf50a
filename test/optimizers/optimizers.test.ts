// ts/optimizers/optimizers.ts (and optimizer.ts's base behaviour) against MLX: the parameters after
// each of 4 steps of every optimizer and option set, and the final state (MLX's keys).
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { decode, DEVICES, type Enc, evalTs, expectClose, expectPairsClose, loadFixture } from "../nn/fixtures.ts";
import { functionTests } from "../nn/function-cases.ts";

interface OptimizerCase {
  name: string;
  ts: string;
  params: [string, Enc][];
  grads: [string, Enc][][];
  after: [string, Enc][][];
  state: [string, Enc][];
}

const fixture = loadFixture<OptimizerCase>("optimizers");
const tol = { rtol: 2e-5, atol: 2e-6 };

function unflatten(pairs: [string, Enc][]): Record<string, mg.MgArray> {
  return mg.utils.treeUnflatten(pairs.map(([k, v]): [string, unknown] => [k, decode(v)])) as Record<string, mg.MgArray>;
}

describe(`MLX ${fixture.mlx} optimizers, step for step`, () => {
  for (const device of DEVICES) {
    test.each(fixture.cases.map((c) => [c.name, c] as const))(`%s on ${device.type}`, (_n, c) => {
      mg.stream(device, () => {
        const opt = evalTs(c.ts) as mg.optimizers.Optimizer;
        let params = unflatten(c.params);
        c.grads.forEach((g, i) => {
          params = opt.applyGradients(unflatten(g), params);
          mg.eval(params, opt.state);
          expectPairsClose(mg.utils.treeFlatten(params), c.after[i]!, `${c.name} step ${i + 1}`, tol);
        });
        const state = opt instanceof mg.optimizers.MultiOptimizer ? opt.state.states : opt.state;
        expectPairsClose(mg.utils.treeFlatten(state), c.state, `${c.name} state`, tol);
      });
    });
  }
});

functionTests("clip_grad_norm");

test("hyperparameters: camelCase options, validation, learningRate settable", () => {
  expect(() => new mg.optimizers.Adam(0.1, { beta: [0.9, 0.99] } as never)).toThrow("[Adam] unknown option 'beta' (did you mean 'betas'?). Accepted options: 'betas', 'eps', 'biasCorrection'.");
  expect(() => new mg.optimizers.Adam(0.1, [1.0, 0.9])).toThrow("[Adam] beta1 should be in [0, 1), 1 was provided instead");
  expect(() => new mg.optimizers.SGD(0.1, { nesterov: true })).toThrow("[SGD] Nesterov momentum requires a momentum and zero dampening.");
  expect(() => new mg.optimizers.RMSprop(0.1, { eps: 0 })).toThrow("[RMSprop] epsilon should be >0, 0 was provided instead");
  expect(() => new mg.optimizers.MultiOptimizer([new mg.optimizers.SGD(0.1)], [() => true])).toThrow("[MultiOptimizer] Given 1 filters but 0 needed.");
  expect(() => mg.optimizers.clipGradNorm({}, -1)).toThrow("[clip_grad_norm] max_norm should be >=0, -1 was provided instead");
  const opt = new mg.optimizers.AdamW(1e-3, { betas: [0.9, 0.99], weightDecay: 0 });
  expect(opt.betas).toEqual([0.9, 0.99]);
  expect(opt.learningRate.dtype).toBe(mg.float32);
  opt.learningRate = 0.5;
  expect(opt.learningRate.item()).toBe(0.5);
  expect(opt.step.dtype).toBe(mg.uint64);
  const p = { w: mg.array([1, 2], mg.float32) };
  const sgd = new mg.optimizers.SGD(1);
  const next = sgd.applyGradients({ w: mg.array([0.5, 0.5], mg.float32) }, p);
  expect(next.w.tolist()).toEqual([0.5, 1.5]);
  expect(sgd.step.item()).toBe(1n);
});

test("a scheduled learning rate is the schedule's value at each step", () => {
  const opt = new mg.optimizers.SGD(mg.optimizers.linearSchedule(0, 1, 4));
  const p = { w: mg.zeros([1]) };
  const g = { w: mg.ones([1]) };
  const lrs: number[] = [];
  let params = p;
  for (let i = 0; i < 5; i++) {
    params = opt.applyGradients(g, params) as typeof p;
    lrs.push(opt.learningRate.item() as number);
  }
  expect(lrs).toEqual([0, 0.25, 0.5, 0.75, 1]);
  expectClose(params.w, { shape: [1], dtype: "float32", data: [-2.5] }, "params");
});

test("Optimizer.update steps a model, and state arrays survive tidy", () => {
  const model = new mg.nn.Linear(2, 1);
  model.loadWeights([["weight", mg.array([[1, 2]], mg.float32)], ["bias", mg.array([0.5], mg.float32)]]);
  const opt = new mg.optimizers.Adam(0.1);
  const lossAndGrad = mg.nn.valueAndGrad(model, (x: mg.MgArray) => mg.sum(model.forward(x)));
  const x = mg.array([[1, 1]], mg.float32);
  for (let i = 0; i < 3; i++) {
    mg.tidy(() => {
      const [, grads] = lossAndGrad(x);
      opt.update(model, grads);
      mg.eval(model.parameters(), opt.state);
    });
  }
  // Adam without bias correction on a constant gradient g: m_t = (1 − 0.9^t) g, v_t = (1 − 0.999^t) g².
  let w = 1;
  for (let t = 1; t <= 3; t++) w -= (0.1 * (1 - 0.9 ** t)) / (Math.sqrt(1 - 0.999 ** t) + 1e-8);
  expect(model.weight.index(0, 0).item()).toBeCloseTo(w, 5);
  expect((opt.state.weight as mg.optimizers.State).m!.disposed).toBe(false);
});

test("on the GPU a whole update is one fused kernel per parameter, plus the step's scalars", () => {
  mg.stream(mg.gpu, () => {
    mg.random.seed(0);
    const model = new mg.nn.Sequential(new mg.nn.Linear(8, 16), new mg.nn.ReLU(), new mg.nn.Linear(16, 4), new mg.nn.LayerNorm(4));
    const K = model.namedParameters().length;
    const x = mg.random.normal([5, 8]);
    const lossAndGrad = mg.nn.valueAndGrad(model, (xb: mg.MgArray) => mg.sum(mg.square(model.forward(xb))));
    const optimizers: [string, mg.optimizers.Optimizer, number][] = [
      ["SGD momentum", new mg.optimizers.SGD(0.1, { momentum: 0.9, weightDecay: 0.01 }), 1],
      ["Adam", new mg.optimizers.Adam(1e-3), 1],
      ["Adam bias-corrected", new mg.optimizers.Adam(1e-3, { biasCorrection: true }), 3],
      ["AdamW", new mg.optimizers.AdamW(1e-3), 2],
      ["Adamax", new mg.optimizers.Adamax(1e-3), 1],
      ["Lion", new mg.optimizers.Lion(1e-3, { weightDecay: 0.1 }), 2],
      ["RMSprop", new mg.optimizers.RMSprop(1e-3), 1],
      ["Adagrad", new mg.optimizers.Adagrad(1e-3), 1],
      ["AdaDelta", new mg.optimizers.AdaDelta(1.0), 1],
    ];
    for (const [name, opt, scalars] of optimizers) {
      const [, first] = lossAndGrad(x);
      opt.update(model, first);
      mg.eval(model.parameters(), opt.state);
      const [, grads] = lossAndGrad(x);
      mg.eval(grads);
      const trace = mg.trace(() => {
        opt.update(model, grads);
        return [model.parameters(), opt.state];
      });
      // At most K parameter updates (each one fused kernel writing the parameter and its state;
      // consecutive parameters of one shape share a kernel), the step counter, and the per-step
      // scalars (bias corrections, weight-decay factors).
      const kernels = trace.map((r) => r.kernel);
      expect(trace.length, `${name}: ${kernels.join(", ")}`).toBeLessThanOrEqual(K + scalars);
      expect(kernels.filter((k) => k.startsWith("mg_fused")).length, `${name}: ${kernels.join(", ")}`).toBeGreaterThanOrEqual(3);
    }
  });
});
