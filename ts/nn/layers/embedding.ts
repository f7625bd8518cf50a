// Embedding, as mlx.nn.Embedding.
import type { MgArray } from "../../core/array.ts";
import type { ArrayInput } from "../../core/ops/convert.ts";
import { take } from "../../core/ops/indexing.ts";
import { matmul } from "../../core/ops/linalg-core.ts";
import { normal } from "../../random/distributions.ts";
import { libraryFunction } from "../../core/ownership.ts";
import { libraryForward, Module } from "../module.ts";

/**
 * A (numEmbeddings, dims) lookup table initialised from N(0, 1/dims).
 * @example
 * new mg.nn.Embedding(10, 4).forward(mg.array([1, 7])).shape
 */
export class Embedding extends Module {
  declare weight: MgArray;
  constructor(numEmbeddings: number, dims: number) {
    super();
    const scale = Math.sqrt(1 / dims);
    this.weight = normal([numEmbeddings, dims], null, null, scale);
  }
  protected override _extraRepr(): string {
    return `${this.weight.shape[0]}, ${this.weight.shape[1]}`;
  }
  /** The rows of the table at the integer indices `x`. */
  override forward(x: ArrayInput): MgArray {
    return take(this.weight, x, 0);
  }
  /** x·weightᵀ: the embedding used as an output projection (tied weights). */
  asLinear(x: ArrayInput): MgArray {
    return matmulT(x, this.weight);
  }
}

libraryForward(Embedding);
const matmulT = libraryFunction((x: ArrayInput, w: MgArray) => matmul(x, w.T));
