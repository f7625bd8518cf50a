// A small decoder-only transformer, written as a metalgrad user writes one: mg.nn modules, RMSNorm
// before attention and MLP, rotary positions (RoPE) on queries and keys, causal attention, a GELU
// MLP, residual connections, a final RMSNorm and a linear head; the norms, RoPE and attention run
// mg.fast's fused ops (nn.RMSNorm and nn.RoPE call them, as MLX's do). Parameter names follow mlx-lm's
// Llama (embed_tokens, layers.N.self_attn, input_layernorm, mlp, norm, lm_head).
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/index.ts";

/**
 * The fused ops the model runs: one kernel each for RMSNorm (nn.RMSNorm), RoPE (nn.RoPE) and causal
 * attention, forward and backward, instead of a dozen elementwise ops, reductions and matmuls.
 */
export const FUSED_OPS = ["mg.fast.rmsNorm", "mg.fast.rope", "mg.fast.scaledDotProductAttention"] as const;

export interface ModelConfig {
  vocabSize: number;
  dims: number;
  layers: number;
  heads: number;
  /** Hidden width of the MLP, as a multiple of dims. */
  mlpRatio: number;
  /**
   * RoPE's frequency base. Sequences here are a dozen tokens long: a small base (10 rather than
   * LLMs' 10000) gives every head frequencies that tell nearby positions apart, and the model
   * finds its attention pattern in about half the steps (MLX sweeps: ~425 steps with 10000, ~250
   * with 100, ~150 with 10 before the loss leaves its plateau).
   */
  ropeBase: number;
}

export class Attention extends mg.nn.Module {
  declare qkv_proj: mg.nn.Linear;
  declare o_proj: mg.nn.Linear;
  declare rope: mg.nn.RoPE;
  readonly heads: number;
  constructor(dims: number, heads: number, ropeBase: number) {
    super();
    this.heads = heads;
    this.rope = new mg.nn.RoPE(dims / heads, { base: ropeBase });
    // One projection for queries, keys and values: one matmul instead of three.
    this.qkv_proj = new mg.nn.Linear(dims, 3 * dims, false);
    this.o_proj = new mg.nn.Linear(dims, dims, false);
  }
  override forward(x: MgArray): MgArray {
    const [B, L, D] = x.shape as [number, number, number];
    const h = this.heads;
    // (B, L, 3·D) → three (B, heads, L, D/heads)
    const qkv = mg.transpose(mg.reshape(this.qkv_proj.forward(x), [B, L, 3, h, D / h]), [2, 0, 3, 1, 4]);
    const [q, k, v] = [0, 1, 2].map((i) => qkv.index(i));
    const o = mg.fast.scaledDotProductAttention(this.rope.forward(q!), this.rope.forward(k!), v!, { scale: 1 / Math.sqrt(D / h), mask: "causal" });
    return this.o_proj.forward(mg.reshape(mg.transpose(o, [0, 2, 1, 3]), [B, L, D]));
  }
}

export class MLP extends mg.nn.Module {
  declare up_proj: mg.nn.Linear;
  declare down_proj: mg.nn.Linear;
  constructor(dims: number, hidden: number) {
    super();
    this.up_proj = new mg.nn.Linear(dims, hidden, false);
    this.down_proj = new mg.nn.Linear(hidden, dims, false);
  }
  override forward(x: MgArray): MgArray {
    return this.down_proj.forward(mg.nn.gelu(this.up_proj.forward(x)));
  }
}

export class Block extends mg.nn.Module {
  declare input_layernorm: mg.nn.RMSNorm;
  declare self_attn: Attention;
  declare post_attention_layernorm: mg.nn.RMSNorm;
  declare mlp: MLP;
  constructor(c: ModelConfig) {
    super();
    this.input_layernorm = new mg.nn.RMSNorm(c.dims);
    this.self_attn = new Attention(c.dims, c.heads, c.ropeBase);
    this.post_attention_layernorm = new mg.nn.RMSNorm(c.dims);
    this.mlp = new MLP(c.dims, c.mlpRatio * c.dims);
  }
  override forward(x: MgArray): MgArray {
    const h = mg.add(x, this.self_attn.forward(this.input_layernorm.forward(x)));
    return mg.add(h, this.mlp.forward(this.post_attention_layernorm.forward(h)));
  }
}

export class Decoder extends mg.nn.Module {
  declare embed_tokens: mg.nn.Embedding;
  declare layers: Block[];
  declare norm: mg.nn.RMSNorm;
  declare lm_head: mg.nn.Linear;
  readonly config: ModelConfig;
  constructor(c: ModelConfig) {
    super();
    if (c.dims % c.heads !== 0 || (c.dims / c.heads) % 2 !== 0) throw new RangeError(`[model] dims ${c.dims} must split into ${c.heads} heads of even size`);
    this.config = c;
    this.embed_tokens = new mg.nn.Embedding(c.vocabSize, c.dims);
    this.layers = Array.from({ length: c.layers }, () => new Block(c));
    this.norm = new mg.nn.RMSNorm(c.dims);
    this.lm_head = new mg.nn.Linear(c.dims, c.vocabSize, false);
  }
  /**
   * Logits (B, n, vocab) for the last `n` positions of `tokens` (B, L) (all when n is omitted):
   * training scores only the answer's positions, and generation only the last one, so the head
   * runs on those alone.
   */
  override forward(tokens: MgArray, n?: number): MgArray {
    let x = this.embed_tokens.forward(tokens);
    for (const layer of this.layers) x = layer.forward(x);
    const L = tokens.shape[1]!;
    if (n !== undefined && n < L) x = x.index(":", { start: L - n });
    return this.lm_head.forward(this.norm.forward(x));
  }
}

/** The number of parameters of a model (all its arrays). */
export function parameterCount(model: mg.nn.Module): number {
  return model.namedParameters().reduce((s, [, a]) => s + a.size, 0);
}
