// Runs the fixture cases of layers.json for some layer classes on both devices: the layer gets
// MLX's weights through loadWeights (strict, so names and shapes must be MLX's), then its forward
// output, its state after the call, and the gradients of sum(output · cotangent) with respect to
// the trainable parameters and the float inputs must match MLX's.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { decode, decodePairs, DEVICES, type Enc, evalTs, expectClose, expectPairsClose, loadFixture, type Tolerance } from "./fixtures.ts";

export interface LayerCase {
  name: string;
  py: string;
  ts: string;
  train: boolean;
  seed: number | null;
  args: unknown[];
  weights: [string, Enc][];
  output: Enc[];
  cotangents: Enc[];
  state_after: [string, Enc][];
  grad_params?: [string, Enc][];
  grad_inputs?: Record<string, Enc>;
  tol?: Tolerance;
}

const fixture = loadFixture<LayerCase>("layers");

/** The class a case constructs (`new mg.nn.Linear(…)` → "Linear"). */
export function caseClass(c: LayerCase): string {
  return /^new mg\.nn\.(\w+)\(/.exec(c.ts)![1]!;
}

export function allLayerCases(): LayerCase[] {
  return fixture.cases;
}

function outputs(o: unknown): mg.MgArray[] {
  return Array.isArray(o) ? (o as mg.MgArray[]) : [o as mg.MgArray];
}

function runCase(c: LayerCase, tol?: Tolerance): void {
  const model = evalTs(c.ts) as mg.nn.Module;
  model.train(c.train);
  const weights = decodePairs(c.weights);
  model.loadWeights(weights);
  const args = decode(c.args) as unknown[];
  if (c.seed !== null) mg.random.seed(c.seed);
  const out = outputs(model.forward(...args));
  expect(out.length, `${c.name}: outputs`).toBe(c.output.length);
  out.forEach((o, i) => expectClose(o, c.output[i]!, `${c.name} output ${i}`, tol));
  expectPairsClose(model.namedParameters(), c.state_after, `${c.name} state after`, tol);
  if (!c.grad_params) return;

  model.loadWeights(weights);
  const cots = decode(c.cotangents) as mg.MgArray[];
  const floatArgs = Object.keys(c.grad_inputs ?? {}).map(Number);
  const loss = (params: Record<string, unknown>, ...xs: mg.MgArray[]) => {
    model.update(params);
    const full = [...args];
    floatArgs.forEach((i, k) => (full[i] = xs[k]));
    if (c.seed !== null) mg.random.seed(c.seed);
    return outputs(model.forward(...full))
      .map((o, i) => mg.sum(mg.multiply(o, cots[i]!)))
      .reduce((a, b) => mg.add(a, b));
  };
  const argnums = [0, ...floatArgs.map((_, k) => k + 1)];
  const g = mg.grad(loss, argnums)(model.trainableParameters(), ...floatArgs.map((i) => args[i] as mg.MgArray));
  const grads = (argnums.length === 1 ? [g] : g) as unknown[];
  const gradTol = tol ? { rtol: tol.rtol * 5, atol: tol.atol * 5 } : { rtol: 1e-4, atol: 1e-4 };
  expectPairsClose(mg.utils.treeFlatten(grads[0]), c.grad_params, `${c.name} d/dparams`, gradTol);
  floatArgs.forEach((i, k) => expectClose(grads[k + 1], c.grad_inputs![String(i)]!, `${c.name} d/dinput ${i}`, gradTol));
}

/** Registers the cases of `classes` on both devices. */
export function layerTests(classes: readonly string[], tol?: Tolerance): void {
  const cases = fixture.cases.filter((c) => classes.includes(caseClass(c)));
  describe(`MLX ${fixture.mlx} layers: ${classes.join(", ")}`, () => {
    test("the fixtures cover every class", () => {
      for (const cls of classes) expect(cases.some((c) => caseClass(c) === cls), cls).toBe(true);
    });
    for (const device of DEVICES) {
      test.each(cases.map((c) => [c.name, c] as const))(`%s on ${device.type}`, (_name, c) => {
        mg.stream(device, () => runCase(c, c.tol ?? tol));
      });
    }
  });
}
