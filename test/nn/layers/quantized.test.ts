// ts/nn/layers/quantized.ts against MLX (test/fixtures/quantize/nn.json from
// scripts/quantized-nn-fixtures.py): QuantizedLinear.fromLinear and QuantizedEmbedding
// .fromEmbedding outputs, printed forms and parameter names for every mode, nn.quantize with
// boolean and option-object predicates, frozen parameters, both devices.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";

interface Enc {
  shape: number[];
  dtype: string;
  data: number[];
}
interface Case {
  mode: mg.QuantizationMode;
  groupSize: number | null;
  bits: number | null;
  linear: { x: Enc; y: Enc; repr: string; keys: string[] };
  embedding: { idx: Enc; y: Enc; xe: Enc; asLinear: Enc; repr: string; keys: string[] };
}
const fixture = JSON.parse(readFileSync(new URL("../../fixtures/quantize/nn.json", import.meta.url).pathname, "utf8")) as {
  mlx: string;
  cases: Case[];
  predicateRepr: string;
  dictPredicateRepr: string;
};

/** metalgrad prints JavaScript booleans where MLX prints Python's (as mg.nn's other layers). */
const js = (repr: string) => repr.replaceAll("True", "true").replaceAll("False", "false");

const dec = (e: Enc) => mg.array(e.data, (mg as unknown as Record<string, mg.Dtype>)[e.dtype]!, { shape: e.shape } as never).reshape(e.shape);
const grid = (shape: number[], mod: number, scale: number, shift: number) =>
  mg.subtract(mg.multiply(mg.remainder(mg.arange(shape.reduce((a, b) => a * b, 1), mg.float32), mod), scale), shift).reshape(shape);

function close(got: MgArray, want: Enc, what: string): void {
  expect(got.shape, what).toEqual(want.shape);
  const g = mg.astype(got, mg.float32).tolist() as unknown as number[];
  const flat = (g as unknown[]).flat(Infinity) as number[];
  const scale = Math.max(1, ...want.data.map(Math.abs));
  const worst = flat.reduce((m, v, i) => Math.max(m, Math.abs(v - want.data[i]!)), 0);
  expect({ what, ok: worst <= 1e-5 * scale }).toEqual({ what, ok: true });
}

describe(`quantized layers against MLX ${fixture.mlx}`, () => {
  for (const device of [mg.cpu, mg.gpu]) {
    for (const c of fixture.cases) {
      test(`${c.mode} ${c.groupSize ?? "-"}/${c.bits ?? "-"} on ${device.type}`, () => {
        mg.stream(device, () => {
          const lin = new mg.nn.Linear(128, 24);
          lin.weight = grid([24, 128], 29, 0.0625, 0.875);
          lin.bias = grid([24], 7, 0.5, 1.5);
          const q = mg.nn.QuantizedLinear.fromLinear(lin, c.groupSize, c.bits, c.mode);
          close(q.forward(dec(c.linear.x)), c.linear.y, "QuantizedLinear");
          expect(String(q)).toBe(js(c.linear.repr));
          expect(Object.keys(q.parameters()).sort()).toEqual(c.linear.keys);
          expect(Object.keys(q.trainableParameters())).toEqual([]);
          const emb = new mg.nn.Embedding(12, 64);
          emb.weight = grid([12, 64], 23, 0.125, 1.25);
          const qe = mg.nn.QuantizedEmbedding.fromEmbedding(emb, c.groupSize === 128 ? 64 : c.groupSize, c.bits, c.mode);
          close(qe.forward(dec(c.embedding.idx)), c.embedding.y, "QuantizedEmbedding");
          close(qe.asLinear(dec(c.embedding.xe)), c.embedding.asLinear, "QuantizedEmbedding.asLinear");
          expect(String(qe)).toBe(js(c.embedding.repr));
          expect(Object.keys(qe.parameters()).sort()).toEqual(c.embedding.keys);
        });
      }, 300_000);
    }
  }

  test("nn.quantize: default (every quantizable leaf), boolean and option predicates", () => {
    const m = new mg.nn.Sequential(new mg.nn.Embedding(10, 64), new mg.nn.Linear(64, 32), new mg.nn.ReLU(), new mg.nn.Linear(32, 8));
    mg.nn.quantize(m, 32, 4, { classPredicate: (_p: string, mod: mg.nn.Module) => mod instanceof mg.nn.Linear && mod.weight.shape[0]! > 10 });
    expect(String(m)).toBe(js(fixture.predicateRepr));
    const m2 = new mg.nn.Sequential(new mg.nn.Embedding(10, 64), new mg.nn.Linear(64, 32));
    mg.nn.quantize(m2, { classPredicate: (p: string) => (p === "layers.1" ? { groupSize: 32, bits: 8 } : false) });
    expect(String(m2)).toBe(js(fixture.dictPredicateRepr));
    const m3 = new mg.nn.Sequential(new mg.nn.Embedding(10, 64), new mg.nn.Linear(64, 32), new mg.nn.ReLU());
    mg.nn.quantize(m3);
    const kinds = m3.modules().map((x) => x.constructor.name);
    expect(kinds).toContain("QuantizedEmbedding");
    expect(kinds).toContain("QuantizedLinear");
    // the quantized model runs, and its packed weights survived the library call that made them
    const y = mg.nn.quantize === undefined ? null : (m3 as unknown as { forward(x: MgArray): MgArray }).forward(mg.array([[1, 2]]));
    expect(y!.shape).toEqual([1, 2, 32]);
    expect(() => mg.nn.quantize(new mg.nn.Sequential(new mg.nn.ReLU()), { classPredicate: () => true })).toThrow("[nn.quantize] Unable to quantize model of type ReLU");
    expect(() => new mg.nn.Linear(64, 32).toQuantized({ quantizeInput: true })).toThrow("quantizeInput");
  });

  test("a quantized model trains its float parameters; the packed ones stay frozen", () => {
    const m = new mg.nn.Sequential(new mg.nn.Linear(64, 32), new mg.nn.Linear(32, 4));
    mg.nn.quantize(m, { classPredicate: (p: string) => p === "layers.0" });
    const x = grid([3, 64], 5, 0.25, 0.5);
    const loss = (model: mg.nn.Module, xx: MgArray) => mg.sum(mg.square((model as unknown as { forward(v: MgArray): MgArray }).forward(xx)));
    const [, grads] = mg.nn.valueAndGrad(m, loss)(m, x) as [MgArray, Record<string, any>];
    expect(Object.keys(grads.layers[0])).toEqual([]);
    expect(Object.keys(grads.layers[1]).sort()).toEqual(["bias", "weight"]);
  });
});
