// MultiHeadAttention and the Transformer encoder/decoder stacks, as mlx.nn. Attention goes
// through ../fast-ops.ts (mx.fast.scaled_dot_product_attention semantics).
import type { MgArray } from "../../core/array.ts";
import { type Dtype, finfo, float32 } from "../../core/dtype.ts";
import { arange } from "../../core/ops/creation.ts";
import { add, astype, less, multiply } from "../../core/ops/elementwise.ts";
import { expandDims, flatten, transpose, unflatten } from "../../core/ops/shape.ts";
import { libraryFunction } from "../../core/ownership.ts";
import { resolveOptions, type Trailing } from "../../core/options.ts";
import { relu } from "../activations.ts";
import { type AttentionMask, scaledDotProductAttention } from "../fast-ops.ts";
import { callUser, libraryForward, Module } from "../module.ts";
import { checkpoint } from "../transforms.ts";
import { Dropout } from "./dropout.ts";
import { Linear } from "./linear.ts";
import { LayerNorm } from "./normalization.ts";

/** An activation: a function or a module. */
export type Activation = ((x: MgArray) => MgArray) | Module;

function activate(f: Activation, x: MgArray): MgArray {
  return callUser(f, x);
}

interface AttentionOptions {
  queryInputDims?: number | null;
  keyInputDims?: number | null;
  valueInputDims?: number | null;
  valueDims?: number | null;
  valueOutputDims?: number | null;
  bias?: boolean;
}

/**
 * Multi-head attention: projections query_proj, key_proj, value_proj, out_proj (MLX's names),
 * `numHeads` heads of dims/numHeads features, scores scaled by 1/√headDims.
 * @example
 * const attention = new mg.nn.MultiHeadAttention(8, 2);
 * attention.forward(mg.ones([1, 3, 8]), mg.ones([1, 3, 8]), mg.ones([1, 3, 8])).shape
 */
export class MultiHeadAttention extends Module {
  readonly numHeads: number;
  declare query_proj: Linear;
  declare key_proj: Linear;
  declare value_proj: Linear;
  declare out_proj: Linear;
  constructor(
    dims: number,
    numHeads: number,
    ...rest: Trailing<
      [queryInputDims: number | null, keyInputDims: number | null, valueInputDims: number | null, valueDims: number | null, valueOutputDims: number | null, bias: boolean],
      AttentionOptions
    >
  ) {
    super();
    const o = resolveOptions("MultiHeadAttention", rest, {
      queryInputDims: null as number | null,
      keyInputDims: null as number | null,
      valueInputDims: null as number | null,
      valueDims: null as number | null,
      valueOutputDims: null as number | null,
      bias: false,
    });
    if (dims % numHeads !== 0) {
      throw new RangeError(`[MultiHeadAttention] The input feature dimensions should be divisible by the number of heads (${dims} % ${numHeads}) != 0`);
    }
    // MLX's `x or default`: 0 and null both take the default.
    const queryInputDims = o.queryInputDims || dims;
    const keyInputDims = o.keyInputDims || dims;
    const valueInputDims = o.valueInputDims || keyInputDims;
    const valueDims = o.valueDims || dims;
    const valueOutputDims = o.valueOutputDims || dims;
    this.numHeads = numHeads;
    this.query_proj = new Linear(queryInputDims, dims, o.bias);
    this.key_proj = new Linear(keyInputDims, dims, o.bias);
    this.value_proj = new Linear(valueInputDims, valueDims, o.bias);
    this.out_proj = new Linear(valueDims, valueOutputDims, o.bias);
  }

  override forward(queries: MgArray, keys: MgArray, values: MgArray, mask: AttentionMask = null): MgArray {
    const h = this.numHeads;
    const split = (x: MgArray) => transpose(unflatten(x, -1, [h, -1]), [0, 2, 1, 3]);
    const q = split(this.query_proj.forward(queries));
    const k = split(this.key_proj.forward(keys));
    const v = split(this.value_proj.forward(values));
    const scale = Math.sqrt(1 / q.shape[q.ndim - 1]!);
    const out = scaledDotProductAttention(q, k, v, scale, mask ?? null);
    return this.out_proj.forward(flatten(transpose(out, [0, 2, 1, 3]), -2, -1));
  }

  /** An (N, N) additive mask: 0 on and below the diagonal, the dtype's lowest value above. */
  static createAdditiveCausalMask(N: number, ...rest: Trailing<[dtype: Dtype], { dtype?: Dtype }>): MgArray {
    return causalMask(N, rest);
  }
}

const causalMask = libraryFunction((N: number, rest: unknown[]): MgArray => {
  const { dtype } = resolveOptions("create_additive_causal_mask", rest, { dtype: float32 as Dtype });
  const indices = arange(N);
  const mask = less(expandDims(indices, 1), expandDims(indices, 0));
  return multiply(astype(mask, dtype), finfo(dtype).min);
});

type LayerArgs = [mlpDims: number | null, dropout: number, activation: Activation, normFirst: boolean];
interface LayerOptions {
  mlpDims?: number | null;
  dropout?: number;
  activation?: Activation;
  normFirst?: boolean;
}
const layerDefaults = () => ({ mlpDims: null as number | null, dropout: 0.0, activation: relu as Activation, normFirst: true });

/**
 * Self-attention and an MLP, each with a residual and a LayerNorm, as nn.TransformerEncoderLayer.
 * @example
 * new mg.nn.TransformerEncoderLayer(8, 2).forward(mg.ones([1, 3, 8]), null).shape
 */
export class TransformerEncoderLayer extends Module {
  declare attention: MultiHeadAttention;
  declare ln1: LayerNorm;
  declare ln2: LayerNorm;
  declare linear1: Linear;
  declare linear2: Linear;
  declare dropout1: Dropout;
  declare dropout2: Dropout;
  declare activation: Activation;
  readonly normFirst: boolean;
  constructor(dims: number, numHeads: number, ...rest: Trailing<LayerArgs, LayerOptions>) {
    super();
    const o = resolveOptions("TransformerEncoderLayer", rest, layerDefaults());
    const mlpDims = o.mlpDims || dims * 4;
    this.attention = new MultiHeadAttention(dims, numHeads);
    this.ln1 = new LayerNorm(dims);
    this.ln2 = new LayerNorm(dims);
    this.linear1 = new Linear(dims, mlpDims);
    this.linear2 = new Linear(mlpDims, dims);
    this.dropout1 = new Dropout(o.dropout);
    this.dropout2 = new Dropout(o.dropout);
    this.activation = o.activation;
    this.normFirst = o.normFirst;
  }
  override forward(x: MgArray, mask: AttentionMask): MgArray {
    let y: MgArray;
    if (this.normFirst) {
      y = this.ln1.forward(x);
      y = this.attention.forward(y, y, y, mask);
      y = this.dropout1.forward(y);
      x = add(x, y);
      y = this.ln2.forward(x);
      y = this.linear1.forward(y);
      y = activate(this.activation, y);
      y = this.dropout2.forward(y);
      y = this.linear2.forward(y);
      return add(x, y);
    }
    y = this.attention.forward(x, x, x, mask);
    y = this.dropout1.forward(y);
    x = this.ln1.forward(add(x, y));
    y = this.linear1.forward(x);
    y = activate(this.activation, y);
    y = this.dropout2.forward(y);
    y = this.linear2.forward(y);
    return this.ln2.forward(add(x, y));
  }
}

type StackArgs = [...LayerArgs, checkpoint: boolean];
interface StackOptions extends LayerOptions {
  checkpoint?: boolean;
}
const stackDefaults = () => ({ ...layerDefaults(), checkpoint: false });

/**
 * A stack of numLayers encoder layers with a final LayerNorm, as nn.TransformerEncoder.
 * @example
 * new mg.nn.TransformerEncoder(1, 8, 2).forward(mg.ones([1, 3, 8]), null).shape
 */
export class TransformerEncoder extends Module {
  declare layers: TransformerEncoderLayer[];
  declare ln: LayerNorm;
  readonly checkpoint: boolean;
  constructor(numLayers: number, dims: number, numHeads: number, ...rest: Trailing<StackArgs, StackOptions>) {
    super();
    const o = resolveOptions("TransformerEncoder", rest, stackDefaults());
    this.layers = Array.from({ length: numLayers }, () => new TransformerEncoderLayer(dims, numHeads, o.mlpDims, o.dropout, o.activation, o.normFirst));
    this.ln = new LayerNorm(dims);
    this.checkpoint = o.checkpoint;
  }
  override forward(x: MgArray, mask: AttentionMask): MgArray {
    for (const layer of this.layers) {
      x = this.checkpoint ? checkpoint(layer)(x, mask) : layer.forward(x, mask);
    }
    return this.ln.forward(x);
  }
}

/**
 * Self-attention, cross-attention over the memory and an MLP, each with a residual and a LayerNorm, as nn.TransformerDecoderLayer.
 * @example
 * new mg.nn.TransformerDecoderLayer(8, 2).forward(mg.ones([1, 2, 8]), mg.ones([1, 3, 8]), null, null).shape
 */
export class TransformerDecoderLayer extends Module {
  declare self_attention: MultiHeadAttention;
  declare cross_attention: MultiHeadAttention;
  declare ln1: LayerNorm;
  declare ln2: LayerNorm;
  declare ln3: LayerNorm;
  declare linear1: Linear;
  declare linear2: Linear;
  declare dropout1: Dropout;
  declare dropout2: Dropout;
  declare dropout3: Dropout;
  declare activation: Activation;
  readonly normFirst: boolean;
  constructor(dims: number, numHeads: number, ...rest: Trailing<LayerArgs, LayerOptions>) {
    super();
    const o = resolveOptions("TransformerDecoderLayer", rest, layerDefaults());
    const mlpDims = o.mlpDims || dims * 4;
    this.self_attention = new MultiHeadAttention(dims, numHeads);
    this.cross_attention = new MultiHeadAttention(dims, numHeads);
    this.ln1 = new LayerNorm(dims);
    this.ln2 = new LayerNorm(dims);
    this.ln3 = new LayerNorm(dims);
    this.linear1 = new Linear(dims, mlpDims);
    this.linear2 = new Linear(mlpDims, dims);
    this.dropout1 = new Dropout(o.dropout);
    this.dropout2 = new Dropout(o.dropout);
    this.dropout3 = new Dropout(o.dropout);
    this.activation = o.activation;
    this.normFirst = o.normFirst;
  }
  override forward(x: MgArray, memory: MgArray, xMask: AttentionMask, memoryMask: AttentionMask): MgArray {
    let y: MgArray;
    if (this.normFirst) {
      y = this.ln1.forward(x);
      y = this.self_attention.forward(y, y, y, xMask);
      y = this.dropout1.forward(y);
      x = add(x, y);
      y = this.ln2.forward(x);
      y = this.cross_attention.forward(y, memory, memory, memoryMask);
      y = this.dropout2.forward(y);
      x = add(x, y);
      y = this.ln3.forward(x);
      y = this.linear1.forward(y);
      y = activate(this.activation, y);
      y = this.dropout3.forward(y);
      y = this.linear2.forward(y);
      return add(x, y);
    }
    y = this.self_attention.forward(x, x, x, xMask);
    y = this.dropout1.forward(y);
    x = this.ln1.forward(add(x, y));
    y = this.cross_attention.forward(x, memory, memory, memoryMask);
    y = this.dropout2.forward(y);
    x = this.ln2.forward(add(x, y));
    y = this.linear1.forward(x);
    y = activate(this.activation, y);
    y = this.dropout3.forward(y);
    y = this.linear2.forward(y);
    return this.ln3.forward(add(x, y));
  }
}

/**
 * A stack of numLayers decoder layers with a final LayerNorm, as nn.TransformerDecoder.
 * @example
 * new mg.nn.TransformerDecoder(1, 8, 2).forward(mg.ones([1, 2, 8]), mg.ones([1, 3, 8]), null, null).shape
 */
export class TransformerDecoder extends Module {
  declare layers: TransformerDecoderLayer[];
  declare ln: LayerNorm;
  readonly checkpoint: boolean;
  constructor(numLayers: number, dims: number, numHeads: number, ...rest: Trailing<StackArgs, StackOptions>) {
    super();
    const o = resolveOptions("TransformerDecoder", rest, stackDefaults());
    this.layers = Array.from({ length: numLayers }, () => new TransformerDecoderLayer(dims, numHeads, o.mlpDims, o.dropout, o.activation, o.normFirst));
    this.ln = new LayerNorm(dims);
    this.checkpoint = o.checkpoint;
  }
  override forward(x: MgArray, memory: MgArray, xMask: AttentionMask, memoryMask: AttentionMask): MgArray {
    for (const layer of this.layers) {
      x = this.checkpoint ? checkpoint(layer)(x, memory, xMask, memoryMask) : layer.forward(x, memory, xMask, memoryMask);
    }
    return this.ln.forward(x);
  }
}

interface TransformerOptions extends StackOptions {
  dims?: number;
  numHeads?: number;
  numEncoderLayers?: number;
  numDecoderLayers?: number;
  customEncoder?: Module | null;
  customDecoder?: Module | null;
}

/**
 * An encoder-decoder Transformer (MLX's defaults: 512 dims, 8 heads, 6 + 6 layers).
 * @example
 * new mg.nn.Transformer({ dims: 8, numHeads: 2, numEncoderLayers: 1, numDecoderLayers: 1, mlpDims: 16 }).forward(mg.ones([1, 3, 8]), mg.ones([1, 2, 8]), null, null, null).shape
 */
export class Transformer extends Module {
  declare encoder: Module;
  declare decoder: Module;
  constructor(
    ...rest: Trailing<
      [
        dims: number, numHeads: number, numEncoderLayers: number, numDecoderLayers: number, mlpDims: number | null, dropout: number,
        activation: Activation, customEncoder: Module | null, customDecoder: Module | null, normFirst: boolean, checkpoint: boolean,
      ],
      TransformerOptions
    >
  ) {
    super();
    const o = resolveOptions("Transformer", rest, {
      dims: 512,
      numHeads: 8,
      numEncoderLayers: 6,
      numDecoderLayers: 6,
      mlpDims: null as number | null,
      dropout: 0.0,
      activation: relu as Activation,
      customEncoder: null as Module | null,
      customDecoder: null as Module | null,
      normFirst: true,
      checkpoint: false,
    });
    this.encoder = o.customEncoder ??
      new TransformerEncoder(o.numEncoderLayers, o.dims, o.numHeads, o.mlpDims, o.dropout, o.activation, o.normFirst, o.checkpoint);
    this.decoder = o.customDecoder ??
      new TransformerDecoder(o.numDecoderLayers, o.dims, o.numHeads, o.mlpDims, o.dropout, o.activation, o.normFirst, o.checkpoint);
  }
  override forward(src: MgArray, tgt: MgArray, srcMask: AttentionMask, tgtMask: AttentionMask, memoryMask: AttentionMask): MgArray {
    const memory = this.encoder.forward(src, srcMask) as MgArray;
    return this.decoder.forward(tgt, memory, tgtMask, memoryMask) as MgArray;
  }
}

libraryForward(MultiHeadAttention, TransformerEncoderLayer, TransformerDecoderLayer);
