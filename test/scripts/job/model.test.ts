// The main job's transformer: parameter names, shapes, causality, and the fused causal attention
// it calls against a float64 reference on both devices.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import { Decoder, parameterCount } from "../../../scripts/job/model.ts";

/** |a − b| ≤ atol + rtol·|b| everywhere (the largest difference in the failure message). */
function expectClose(a: mg.MgArray, b: mg.MgArray, rtol = 1e-5, atol = 1e-6): void {
  expect(a.shape).toEqual(b.shape);
  const x = (a.astype(mg.float32).flatten().tolist() as number[]);
  const y = (b.astype(mg.float32).flatten().tolist() as number[]);
  const worst = Math.max(0, ...x.map((v, i) => Math.abs(v - y[i]!) - (atol + rtol * Math.abs(y[i]!))));
  expect(worst).toBe(0);
}

const config = { vocabSize: 12, dims: 16, layers: 2, heads: 2, mlpRatio: 2, ropeBase: 100 };

describe("Decoder", () => {
  mg.random.seed(3);
  const model = new Decoder(config);
  test("parameter names follow mlx-lm's Llama; the count is the sum of their sizes", () => {
    const names = model.namedParameters().map(([n, a]) => `${n} ${a.shape.join("x")}`);
    expect(names).toEqual([
      "embed_tokens.weight 12x16",
      ...[0, 1].flatMap((i) => [
        `layers.${i}.input_layernorm.weight 16`,
        `layers.${i}.self_attn.qkv_proj.weight 48x16`,
        `layers.${i}.self_attn.o_proj.weight 16x16`,
        `layers.${i}.post_attention_layernorm.weight 16`,
        `layers.${i}.mlp.up_proj.weight 32x16`,
        `layers.${i}.mlp.down_proj.weight 16x32`,
      ]),
      "norm.weight 16",
      "lm_head.weight 12x16",
    ]);
    expect(parameterCount(model)).toBe(12 * 16 + 2 * (16 + 48 * 16 + 16 * 16 + 16 + 32 * 16 + 16 * 32) + 16 + 12 * 16);
  });
  test("logits for all positions or the last n", () => {
    const tokens = mg.array([[1, 2, 3, 4, 5], [5, 4, 3, 2, 1]], mg.int32);
    const all = model.forward(tokens);
    expect(all.shape).toEqual([2, 5, 12]);
    const last2 = model.forward(tokens, 2);
    expect(last2.shape).toEqual([2, 2, 12]);
    expectClose(last2, all.index(":", "3:"));
  });
  test("causal: a later token does not change earlier logits", () => {
    const a = model.forward(mg.array([[1, 2, 3, 4, 5]], mg.int32));
    const b = model.forward(mg.array([[1, 2, 3, 9, 0]], mg.int32));
    expectClose(a.index(":", ":3"), b.index(":", ":3"));
    expect(mg.allclose(a.index(":", "3:"), b.index(":", "3:")).item()).toBe(false);
  });
  test("heads must split dims into even sizes", () => {
    expect(() => new Decoder({ ...config, heads: 3 })).toThrow("[model]");
    expect(() => new Decoder({ ...config, dims: 6, heads: 2 })).toThrow("[model]");
  });
});

/** softmax(q·kᵀ·scale, causal)·v in float64, one (batch, head) at a time. */
function attentionReference(q: number[][][][], k: number[][][][], v: number[][][][], scale: number): number[][][][] {
  return q.map((qb, b) => qb.map((qh, h) => qh.map((qi, i) => {
    const scores = k[b]![h]!.slice(0, i + 1).map((kj) => scale * kj.reduce((s, x, d) => s + x * qi[d]!, 0));
    const m = Math.max(...scores);
    const w = scores.map((s) => Math.exp(s - m));
    const z = w.reduce((a, c) => a + c, 0);
    return qi.map((_, d) => w.reduce((s, wj, j) => s + (wj / z) * v[b]![h]![j]![d]!, 0));
  })));
}

describe("attention", () => {
  mg.random.seed(5);
  const [q, k, v] = [0, 1, 2].map(() => mg.random.normal([2, 2, 5, 4]));
  const expected = attentionReference(q!.tolist() as number[][][][], k!.tolist() as number[][][][], v!.tolist() as number[][][][], 0.5);
  for (const device of [mg.cpu, mg.gpu]) {
    test(`mg.fast's causal attention matches a float64 reference (${device.type})`, () => {
      const got = mg.fast.scaledDotProductAttention(q!, k!, v!, { scale: 0.5, mask: "causal", stream: device });
      expectClose(got, mg.array(expected, mg.float32));
    });
  }
});
