// QuantizedLinear, QuantizedEmbedding and nn.quantize, as mlx.nn: weights in MLX's packed formats
// (mg.quantize), frozen, multiplied with mg.quantizedMatmul. Linear and Embedding gain
// toQuantized() here, the method nn.quantize looks for (MLX's to_quantized).
import type { MgArray } from "../../core/array.ts";
import type { ArrayInput } from "../../core/ops/convert.ts";
import { zeros } from "../../core/ops/creation.ts";
import { add } from "../../core/ops/elementwise.ts";
import { take } from "../../core/ops/indexing.ts";
import { dequantize, quantize, quantizedMatmul } from "../../core/ops/quantized.ts";
import { defaultQuantizationParams, QUANTIZATION_MODES, type QuantizationMode } from "../../core/primitives/quantized.ts";
import { normal, uniform } from "../../random/distributions.ts";
import { resolveOptions, type Trailing } from "../../core/options.ts";
import { retain } from "../../core/ownership.ts";
import { libraryForward, Module } from "../module.ts";
import { Embedding } from "./embedding.ts";
import { Linear } from "./linear.ts";

/** MLX's _defaults_for_mode: the mode's group size and bits where not given. */
function modeDefaults(op: string, mode: unknown, groupSize: unknown, bits: unknown): { mode: QuantizationMode; groupSize: number; bits: number } {
  if (!QUANTIZATION_MODES.includes(mode as QuantizationMode)) {
    throw new Error(`[${op}] Invalid quantization mode '${String(mode)}'. Valid modes are: ${QUANTIZATION_MODES.join(", ")}.`);
  }
  const d = defaultQuantizationParams(mode as QuantizationMode);
  return { mode: mode as QuantizationMode, groupSize: (groupSize as number | null | undefined) || d.groupSize, bits: (bits as number | null | undefined) || d.bits };
}

type QuantOptions = { groupSize?: number | null; bits?: number | null; mode?: QuantizationMode };

/** The packed weight (and scales, biases) of `weight`. */
function packed(weight: MgArray, q: { mode: QuantizationMode; groupSize: number; bits: number }): { weight: MgArray; scales: MgArray; biases?: MgArray } {
  const [w, scales, biases] = quantize(weight, q.groupSize, q.bits, q.mode);
  return biases ? { weight: w!, scales: scales!, biases } : { weight: w!, scales: scales! };
}

/**
 * x·Wᵀ (+ bias) with W quantized: weight (outputDims, inputDims·bits/32) uint32, scales (and, for
 * affine, biases) per group; frozen, as MLX's (no gradient to the packed weights). The weight is
 * initialised from U(−k, k), k = 1/√inputDims, then quantized; the bias starts at zero.
 * @example
 * new mg.nn.QuantizedLinear(64, 8).forward(mg.ones([2, 64])).shape
 */
export class QuantizedLinear extends Module {
  declare weight: MgArray;
  declare scales: MgArray;
  declare biases?: MgArray;
  declare bias?: MgArray;
  groupSize: number;
  bits: number;
  mode: QuantizationMode;

  constructor(
    inputDims: number,
    outputDims: number,
    ...rest: Trailing<[bias: boolean, groupSize: number | null, bits: number | null, mode: QuantizationMode], { bias?: boolean } & QuantOptions>
  ) {
    super();
    const o = resolveOptions("QuantizedLinear", rest, { bias: true, groupSize: null as number | null, bits: null as number | null, mode: "affine" as QuantizationMode });
    const q = modeDefaults("QuantizedLinear", o.mode, o.groupSize, o.bits);
    this.groupSize = q.groupSize;
    this.bits = q.bits;
    this.mode = q.mode;
    const scale = Math.sqrt(1 / inputDims);
    Object.assign(this, packed(uniform(-scale, scale, [outputDims, inputDims]), q));
    if (o.bias) this.bias = zeros([outputDims]);
    this.freeze();
  }

  protected override _extraRepr(): string {
    const [outDims, words] = this.weight.shape as [number, number];
    return `input_dims=${(words * 32) / this.bits}, output_dims=${outDims}, bias=${this.has("bias")}, group_size=${this.groupSize}, bits=${this.bits}, mode=${this.mode}`;
  }

  override forward(x: ArrayInput): MgArray {
    const y = quantizedMatmul(x, this.weight, this.scales, this.has("biases") ? this.biases! : null, true, this.groupSize, this.bits, this.mode);
    return this.has("bias") ? add(y, this.bias!) : y;
  }

  /** A QuantizedLinear holding `linear`'s weight quantized (and its bias), as MLX's from_linear. */
  static fromLinear(linear: Linear, ...rest: Trailing<[groupSize: number | null, bits: number | null, mode: QuantizationMode], QuantOptions>): QuantizedLinear {
    const o = resolveOptions("QuantizedLinear.fromLinear", rest, { groupSize: null as number | null, bits: null as number | null, mode: "affine" as QuantizationMode });
    const [outputDims, inputDims] = linear.weight.shape as [number, number];
    const ql = new QuantizedLinear(inputDims, outputDims, false, o.groupSize, o.bits, o.mode);
    delete ql.biases;
    Object.assign(ql, packed(linear.weight, ql));
    if (linear.has("bias")) ql.bias = linear.bias!;
    ql.freeze();
    return ql;
  }
}

/**
 * Embedding with a quantized (numEmbeddings, dims) table: forward dequantizes the selected rows;
 * asLinear multiplies by the table (tied output projection). Frozen, as MLX's.
 * @example
 * new mg.nn.QuantizedEmbedding(10, 64).forward(mg.array([3])).shape
 */
export class QuantizedEmbedding extends Module {
  declare weight: MgArray;
  declare scales: MgArray;
  declare biases?: MgArray;
  groupSize: number;
  bits: number;
  mode: QuantizationMode;
  numEmbeddings: number;
  dims: number;

  constructor(numEmbeddings: number, dims: number, ...rest: Trailing<[groupSize: number | null, bits: number | null, mode: QuantizationMode], QuantOptions>) {
    super();
    const o = resolveOptions("QuantizedEmbedding", rest, { groupSize: null as number | null, bits: null as number | null, mode: "affine" as QuantizationMode });
    const q = modeDefaults("QuantizedEmbedding", o.mode, o.groupSize, o.bits);
    this.groupSize = q.groupSize;
    this.bits = q.bits;
    this.mode = q.mode;
    this.numEmbeddings = numEmbeddings;
    this.dims = dims;
    Object.assign(this, packed(normal([numEmbeddings, dims], null, null, Math.sqrt(1 / dims)), q));
    this.freeze();
  }

  protected override _extraRepr(): string {
    return `${this.numEmbeddings}, ${this.dims}, group_size=${this.groupSize}, bits=${this.bits}, mode=${this.mode}`;
  }

  /** The dequantized rows of the table at the integer indices `x`. */
  override forward(x: ArrayInput): MgArray {
    const biases = this.has("biases") ? take(this.biases!, x, 0) : null;
    return dequantize(take(this.weight, x, 0), take(this.scales, x, 0), biases, this.groupSize, this.bits, this.mode);
  }

  /** x·tableᵀ: the quantized table used as an output projection (tied weights). */
  asLinear(x: ArrayInput): MgArray {
    return quantizedMatmul(x, this.weight, this.scales, this.has("biases") ? this.biases! : null, true, this.groupSize, this.bits, this.mode);
  }

  /** A QuantizedEmbedding holding `embedding`'s table quantized, as MLX's from_embedding. */
  static fromEmbedding(embedding: Embedding, ...rest: Trailing<[groupSize: number | null, bits: number | null, mode: QuantizationMode], QuantOptions>): QuantizedEmbedding {
    const o = resolveOptions("QuantizedEmbedding.fromEmbedding", rest, { groupSize: null as number | null, bits: null as number | null, mode: "affine" as QuantizationMode });
    const [n, dims] = embedding.weight.shape as [number, number];
    const qe = new QuantizedEmbedding(n, dims, o.groupSize, o.bits, o.mode);
    delete qe.biases;
    Object.assign(qe, packed(embedding.weight, qe));
    qe.freeze();
    return qe;
  }
}

libraryForward(QuantizedLinear, QuantizedEmbedding);

// Linear and Embedding know how to quantize themselves (MLX's to_quantized).
declare module "./linear.ts" {
  interface Linear {
    /** The quantized approximation of this layer (a QuantizedLinear), as MLX's to_quantized. */
    toQuantized(...rest: Trailing<[groupSize: number | null, bits: number | null, mode: QuantizationMode, quantizeInput: boolean], QuantOptions & { quantizeInput?: boolean }>): QuantizedLinear;
  }
}
declare module "./embedding.ts" {
  interface Embedding {
    /** The quantized approximation of this layer (a QuantizedEmbedding), as MLX's to_quantized. */
    toQuantized(...rest: Trailing<[groupSize: number | null, bits: number | null, mode: QuantizationMode], QuantOptions>): QuantizedEmbedding;
  }
}

Linear.prototype.toQuantized = function (this: Linear, ...rest) {
  const o = resolveOptions("Linear.toQuantized", rest, { groupSize: null as number | null, bits: null as number | null, mode: "affine" as QuantizationMode, quantizeInput: false });
  if (o.quantizeInput) throw new Error("[Linear.toQuantized] quantizeInput (MLX's QQLinear, activations quantized too) is not supported.");
  return QuantizedLinear.fromLinear(this, o.groupSize, o.bits, o.mode);
};
Embedding.prototype.toQuantized = function (this: Embedding, ...rest) {
  const o = resolveOptions("Embedding.toQuantized", rest, { groupSize: null as number | null, bits: null as number | null, mode: "affine" as QuantizationMode });
  return QuantizedEmbedding.fromEmbedding(this, o.groupSize, o.bits, o.mode);
};

type ClassPredicate = (path: string, module: Module) => boolean | Record<string, unknown>;

/**
 * Quantizes a model's leaf modules in place, as mlx.nn.quantize(model, group_size=None,
 * bits=None, *, mode='affine', quantize_input=False, class_predicate=None): every leaf with a
 * toQuantized() method (Linear, Embedding), or those `classPredicate(path, module)` accepts —
 * `true`, or an object of toQuantized options for that module.
 * @example
 * const model = new mg.nn.Sequential(new mg.nn.Linear(64, 8));
 * mg.nn.quantize(model, 64, 4);
 * model.layers[0]!.constructor.name
 */
export function quantizeModel(
  model: Module,
  ...rest: Trailing<[groupSize: number | null, bits: number | null], QuantOptions & { quantizeInput?: boolean; classPredicate?: ClassPredicate | null }>
): void {
  const o = resolveOptions("nn.quantize", rest, { groupSize: null as number | null, bits: null as number | null }, ["mode", "quantizeInput", "classPredicate"]);
  const mode = (o.mode as QuantizationMode | undefined) ?? "affine";
  const quantizeInput = (o.quantizeInput as boolean | undefined) ?? false;
  const predicate = (o.classPredicate as ClassPredicate | null | undefined) ?? ((_p: string, m: Module) => typeof (m as { toQuantized?: unknown }).toQuantized === "function");
  // The replacement layers' arrays live in the model beyond this call: retained.
  const maybe = (path: string, m: Module): Module => {
    const q = quantizeLeaf(path, m);
    if (q !== m) retain(q.parameters());
    return q;
  };
  const quantizeLeaf = (path: string, m: Module): Module => {
    const verdict = predicate(path, m);
    if (!verdict) return m;
    const to = (m as { toQuantized?: (...a: unknown[]) => Module }).toQuantized;
    if (typeof to !== "function") throw new Error(`[nn.quantize] Unable to quantize model of type ${m.constructor.name}`);
    if (verdict === true) {
      const opts: Record<string, unknown> = { groupSize: o.groupSize, bits: o.bits, mode };
      if (quantizeInput) opts.quantizeInput = true;
      return to.call(m, opts);
    }
    if (typeof verdict === "object") {
      const opts = { ...verdict };
      if ("quantizeInput" in opts && !opts.quantizeInput) delete opts.quantizeInput;
      return to.call(m, opts);
    }
    throw new Error("[nn.quantize] classPredicate must return a boolean or an object of toQuantized options");
  };
  const walk = (tree: unknown, path: string): unknown => {
    if (tree instanceof Module) return maybe(path, tree);
    if (Array.isArray(tree)) return tree.map((v, i) => walk(v, path ? `${path}.${i}` : `${i}`));
    if (tree !== null && typeof tree === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(tree)) out[k] = walk(v, path ? `${path}.${k}` : k);
      return out;
    }
    return tree;
  };
  model.updateModules(walk(model.leafModules(), "") as Record<string, unknown>);
}
