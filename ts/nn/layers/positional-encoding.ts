// RoPE, SinusoidalPositionalEncoding and ALiBi, as mlx.nn. RoPE goes through ../fast-ops.ts
// (mx.fast.rope semantics).
import type { MgArray } from "../../core/array.ts";
import { type Dtype, float32 } from "../../core/dtype.ts";
import { array } from "../../core/ops/convert.ts";
import { arange } from "../../core/ops/creation.ts";
import { abs, add, astype, cos, divide, exp, multiply, negative, sin, subtract } from "../../core/ops/elementwise.ts";
import { concatenate } from "../../core/ops/join.ts";
import { expandDims } from "../../core/ops/shape.ts";
import { libraryFunction } from "../../core/ownership.ts";
import { resolveOptions, type Trailing } from "../../core/options.ts";
import { rope } from "../fast-ops.ts";
import { libraryForward, Module } from "../module.ts";

/**
 * Rotary positional encoding of the first `dims` features (positions along the second-to-last
 * axis): `traditional` rotates adjacent pairs, otherwise the two halves; frequencies base^(−2i/dims),
 * positions multiplied by `scale`.
 * @example
 * new mg.nn.RoPE(4).forward(mg.ones([1, 3, 4])).shape
 */
export class RoPE extends Module {
  readonly dims: number;
  readonly traditional: boolean;
  readonly base: number;
  readonly scale: number;
  constructor(dims: number, ...rest: Trailing<[traditional: boolean, base: number, scale: number], { traditional?: boolean; base?: number; scale?: number }>) {
    super();
    const o = resolveOptions("RoPE", rest, { traditional: false, base: 10000, scale: 1.0 });
    this.dims = dims;
    this.traditional = o.traditional;
    this.base = o.base;
    this.scale = o.scale;
  }
  protected override _extraRepr(): string {
    return `${this.dims}, traditional=${this.traditional}`;
  }
  /** `offset` is the position of the first row (a number or a scalar array). */
  override forward(x: MgArray, ...rest: Trailing<[offset: number | MgArray], { offset?: number | MgArray }>): MgArray {
    const { offset } = resolveOptions("RoPE.forward", rest, { offset: 0 as number | MgArray });
    return rope(x, this.dims, { traditional: this.traditional, base: this.base, scale: this.scale, offset });
  }
}

/**
 * Sinusoidal encoding of (real-valued) positions: sin and cos of x·σᵢ, the σᵢ spread
 * geometrically from maxFreq down to minFreq; scaled by `scale` (default √(2/dims)).
 * @example
 * new mg.nn.SinusoidalPositionalEncoding(4).forward(mg.arange(3)).shape
 */
export class SinusoidalPositionalEncoding extends Module {
  declare _sigmas: MgArray;
  readonly scale: number;
  readonly cosFirst: boolean;
  constructor(
    dims: number,
    ...rest: Trailing<
      [minFreq: number, maxFreq: number, scale: number | null, cosFirst: boolean, fullTurns: boolean],
      { minFreq?: number; maxFreq?: number; scale?: number | null; cosFirst?: boolean; fullTurns?: boolean }
    >
  ) {
    super();
    const o = resolveOptions("SinusoidalPositionalEncoding", rest, {
      minFreq: 0.0001, maxFreq: 1, scale: null as number | null, cosFirst: false, fullTurns: false,
    });
    if (!(dims > 0) || dims % 2 !== 0) throw new RangeError(`[SinusoidalPositionalEncoding] dims must be positive and even but got ${dims}.`);
    const half = Math.floor(dims / 2);
    const oneZero = dims === 2 ? array([1.0], float32) : subtract(1, divide(arange(0, half), half - 1));
    const minFreq = Math.log(o.minFreq);
    const maxFreq = Math.log(o.maxFreq);
    this._sigmas = exp(add(multiply(oneZero, maxFreq - minFreq), minFreq));
    if (o.fullTurns) this._sigmas = multiply(this._sigmas, 2 * Math.PI);
    this.scale = o.scale ?? (2 / dims) ** 0.5;
    this.cosFirst = o.cosFirst;
  }
  override forward(x: MgArray): MgArray {
    const y = multiply(expandDims(x, -1), this._sigmas);
    const c = cos(y);
    const s = sin(y);
    const out = concatenate(this.cosFirst ? [c, s] : [s, c], -1);
    return this.scale !== 1 ? multiply(out, this.scale) : out;
  }
}

function alibiSlopes(n: number): number[] {
  if (Number.isInteger(Math.log2(n))) {
    const start = 2 ** -(2 ** -(Math.log2(n) - 3));
    return Array.from({ length: n }, (_, i) => start * start ** i);
  }
  const closest = 2 ** Math.floor(Math.log2(n));
  return [...alibiSlopes(closest), ...alibiSlopes(2 * closest).filter((_, i) => i % 2 === 0).slice(0, n - closest)];
}

const alibiSlope = libraryFunction((numHeads: number, rest: unknown[]): MgArray => {
  const { dtype } = resolveOptions("ALiBi.create_alibi_slope", rest, { dtype: float32 as Dtype });
  return expandDims(array(alibiSlopes(numHeads), dtype), [-1, -2]);
});

const alibiMatrix = libraryFunction((qSequenceLength: number, kSequenceLength: number, numHeads: number, rest: unknown[]): MgArray => {
  const { offset, dtype } = resolveOptions("ALiBi.create_alibi_matrix", rest, { offset: 0, dtype: float32 as Dtype });
  const x1 = arange(offset, qSequenceLength);
  const x2 = arange(0, kSequenceLength);
  const distance = negative(abs(expandDims(subtract(expandDims(x1, 1), expandDims(x2, 0)), [0, 1])));
  return astype(multiply(distance, alibiSlope(numHeads, [dtype])), dtype);
});

/**
 * Attention with linear biases: adds −slope_h·|i − j| to the attention scores of head h.
 * @example
 * mg.nn.ALiBi.createAlibiMatrix(0, 3, 2, 1).shape
 */
export class ALiBi extends Module {
  static createAlibiMatrix(
    qSequenceLength: number,
    kSequenceLength: number,
    numHeads: number,
    ...rest: Trailing<[offset: number, dtype: Dtype], { offset?: number; dtype?: Dtype }>
  ): MgArray {
    return alibiMatrix(qSequenceLength, kSequenceLength, numHeads, rest);
  }

  static createAlibiSlope(numHeads: number, ...rest: Trailing<[dtype: Dtype], { dtype?: Dtype }>): MgArray {
    return alibiSlope(numHeads, rest);
  }

  override forward(
    attentionScores: MgArray,
    ...rest: Trailing<[offset: number, mask: MgArray | null], { offset?: number; mask?: MgArray | null }>
  ): MgArray {
    const { offset, mask } = resolveOptions("ALiBi.forward", rest, { offset: 0, mask: null as MgArray | null });
    let alibi = ALiBi.createAlibiMatrix(
      attentionScores.shape[attentionScores.ndim - 2]! + offset,
      attentionScores.shape[attentionScores.ndim - 1]!,
      attentionScores.shape[1]!,
      offset,
      attentionScores.dtype,
    );
    if (mask) alibi = add(alibi, mask);
    return add(attentionScores, alibi);
  }
}

libraryForward(RoPE, SinusoidalPositionalEncoding, ALiBi);
