// Upsample, as mlx.nn.Upsample: nearest, (multi)linear and cubic interpolation of channels-last
// inputs (N, ...spatial, C), with align_corners and antialiasing as MLX computes them.
import type { MgArray } from "../../core/array.ts";
import { float32, uint32 } from "../../core/dtype.ts";
import { arange } from "../../core/ops/creation.ts";
import {
  abs, add, astype, ceil, divide, floor, greaterEqual, less, lessEqual, logicalAnd, maximum, multiply, round, subtract, where, clip,
} from "../../core/ops/elementwise.ts";
import { getItem, type IndexItem } from "../../core/ops/index-expr.ts";
import { take } from "../../core/ops/indexing.ts";
import { broadcastTo, expandDims, reshape } from "../../core/ops/shape.ts";
import { resolveOptions, type Trailing } from "../../core/options.ts";
import { libraryForward, Module } from "../module.ts";

type Taps = [MgArray, MgArray][];

function axisShape(dim: number, ndims: number): number[] {
  const shape = Array.from({ length: ndims }, () => 1);
  shape[dim] = -1;
  return shape;
}

function scaledIndices(N: number, scale: number, alignCorners: boolean, dim: number, ndims: number): MgArray {
  const M = Math.trunc(scale * N);
  let indices: MgArray;
  if (alignCorners) indices = multiply(arange(0, M, float32), (N - 1) / Math.max(M - 1, 1));
  else {
    const step = 1 / scale;
    const start = ((M - 1) * step - N + 1) / 2;
    indices = subtract(multiply(arange(0, M, float32), step), start);
  }
  return reshape(indices, axisShape(dim, ndims));
}

function nearestIndices(N: number, scale: number, dim: number, ndims: number): MgArray {
  const M = Math.trunc(scale * N);
  let indices = arange(0, M, float32);
  if (M > N) indices = round(subtract(multiply(add(indices, 0.5), N / M), 0.5));
  else indices = multiply(indices, N / M);
  return reshape(astype(indices, uint32), axisShape(dim, ndims));
}

function linearIndices(N: number, scale: number, alignCorners: boolean, dim: number, ndims: number): Taps {
  let indices = scaledIndices(N, scale, alignCorners, dim, ndims);
  indices = clip(indices, 0, N - 1);
  const l = floor(indices);
  const r = ceil(indices);
  const w = expandDims(subtract(indices, l), -1);
  return [
    [astype(l, uint32), subtract(1, w)],
    [astype(r, uint32), w],
  ];
}

function aaIndices(N: number, scale: number, alignCorners: boolean, dim: number, ndims: number, kernel: (d: MgArray) => MgArray, radius: number): Taps {
  const indices = scaledIndices(N, scale, alignCorners, dim, ndims);
  const invScale = scale < 1 ? 1.0 / scale : 1.0;
  const support = radius * invScale;
  const numTaps = Math.ceil(support) + 1;
  const idxs: MgArray[] = [];
  const ws: MgArray[] = [];
  for (let k = -numTaps + 1; k < numTaps; k++) {
    const idx = add(floor(indices), k);
    const dist = divide(abs(subtract(indices, idx)), invScale);
    const w = where(logicalAnd(greaterEqual(idx, 0), less(idx, N)), kernel(dist), 0.0);
    idxs.push(idx);
    ws.push(w);
  }
  // Python's sum() starts from 0.
  let wSum: MgArray = ws.reduce<MgArray | null>((acc, w) => (acc === null ? add(0, w) : add(acc, w)), null)!;
  wSum = where(greater0(wSum), wSum, 1.0);
  return idxs.map((idx, i) => [astype(clip(idx, 0, N - 1), uint32), expandDims(divide(ws[i]!, wSum), -1)]);
}

function greater0(x: MgArray): MgArray {
  return less(0, x);
}

function triangleKernel(x: MgArray): MgArray {
  return maximum(subtract(1.0, x), 0.0);
}

function cubicKernel(x: MgArray): MgArray {
  const a = -0.5;
  const inner = add(multiply(multiply(subtract(multiply(a + 2.0, x), a + 3.0), x), x), 1);
  const outer = multiply(subtract(multiply(add(multiply(subtract(x, 5), x), 8), x), 4), a);
  return where(lessEqual(x, 1.0), inner, where(lessEqual(x, 2.0), outer, 0.0));
}

function cubicWeight(ind: MgArray, grid: MgArray, dist: 1 | 2): MgArray {
  const a = -0.75;
  const x = abs(subtract(ind, grid));
  if (dist === 1) return add(multiply(multiply(subtract(multiply(a + 2.0, x), a + 3.0), x), x), 1);
  return multiply(subtract(multiply(add(multiply(subtract(x, 5), x), 8), x), 4), a);
}

function cubicIndices(N: number, scale: number, alignCorners: boolean, dim: number, ndims: number): Taps {
  const indices = scaledIndices(N, scale, alignCorners, dim, ndims);
  const l1 = floor(indices);
  const r1 = floor(add(indices, 1));
  const l2 = subtract(l1, 1);
  const r2 = add(r1, 1);
  const tap = (grid: MgArray, dist: 1 | 2): [MgArray, MgArray] => [
    astype(clip(grid, 0, N - 1), uint32),
    expandDims(cubicWeight(indices, grid, dist), -1),
  ];
  return [tap(l1, 1), tap(r1, 1), tap(l2, 2), tap(r2, 2)];
}

function checkScales(x: MgArray, scaleFactor: readonly number[]): void {
  if (x.ndim - 2 !== scaleFactor.length) throw new Error("[Upsample] A scale needs to be provided for each spatial dimension");
}

/**
 * Nearest-neighbour upsampling (a broadcast for integer scales).
 * @example
 * mg.nn.upsampleNearest(mg.array([[[1], [2]]], mg.float32), [2])
 */
export function upsampleNearest(x: MgArray, scaleFactor: readonly number[]): MgArray {
  checkScales(x, scaleFactor);
  const dims = x.ndim - 2;
  if (scaleFactor.every((s) => Number.isInteger(s))) {
    const shape = [...x.shape];
    for (let d = 0; d < dims; d++) shape.splice(2 + 2 * d, 0, 1);
    let y = reshape(x, shape);
    for (let d = 0; d < dims; d++) shape[2 + 2 * d] = scaleFactor[d]!;
    y = broadcastTo(y, shape);
    for (let d = 0; d < dims; d++) {
      shape[d + 1]! *= shape[d + 2]!;
      shape.splice(d + 2, 1);
    }
    return reshape(y, shape);
  }
  const N = x.shape.slice(1, -1);
  const index: IndexItem[] = [":"];
  N.forEach((n, i) => index.push(nearestIndices(n, scaleFactor[i]!, i, dims)));
  return getItem(x, index);
}

type TapsFn = (N: number, scale: number, alignCorners: boolean, dim: number, ndims: number) => Taps;

function* product<T>(lists: T[][]): Generator<T[]> {
  if (lists.length === 0) {
    yield [];
    return;
  }
  for (const head of lists[0]!) for (const tail of product(lists.slice(1))) yield [head, ...tail];
}

function interpolate(x: MgArray, scaleFactor: readonly number[], tapsFn: TapsFn, alignCorners: boolean): MgArray {
  checkScales(x, scaleFactor);
  const dims = x.ndim - 2;
  const N = x.shape.slice(1, -1);
  const perDim = N.map((n, i) => tapsFn(n, scaleFactor[i]!, alignCorners, i, dims));
  let out: MgArray | null = null;
  for (const combo of product(perDim)) {
    const sample = getItem(x, [":", ...combo.map(([idx]) => idx)]);
    const weight = combo.map(([, w]) => w).reduce((a, b) => multiply(a, b));
    const term = multiply(weight, sample);
    out = out === null ? add(0, term) : add(out, term);
  }
  return out!;
}

function interpolateSeparable(x: MgArray, scaleFactor: readonly number[], tapsFn: TapsFn, alignCorners: boolean): MgArray {
  checkScales(x, scaleFactor);
  const dims = x.ndim - 2;
  const N = x.shape.slice(1, -1);
  let out = x;
  N.forEach((n, i) => {
    let acc: MgArray | null = null;
    for (const [idx, weight] of tapsFn(n, scaleFactor[i]!, alignCorners, i, dims)) {
      const term = multiply(take(out, reshape(idx, [-1]), i + 1), weight);
      acc = acc === null ? add(0, term) : add(acc, term);
    }
    out = acc!;
  });
  return out;
}

function checkAntialias(alignCorners: boolean, antialias: boolean): void {
  if (antialias && alignCorners) {
    throw new Error("[Upsample] antialias=True with align_corners=True is not supported. Use align_corners=False for antialiased interpolation.");
  }
}

/**
 * (Multi)linear interpolation.
 * @example
 * mg.nn.upsampleLinear(mg.ones([1, 2, 2, 1]), [2, 2]).shape
 */
export function upsampleLinear(x: MgArray, scaleFactor: readonly number[], alignCorners = false, antialias = false): MgArray {
  checkAntialias(alignCorners, antialias);
  if (antialias) {
    return interpolateSeparable(x, scaleFactor, (n, s, a, d, nd) => aaIndices(n, s, a, d, nd, triangleKernel, 1.0), alignCorners);
  }
  if (!alignCorners) return interpolateSeparable(x, scaleFactor, linearIndices, alignCorners);
  return interpolate(x, scaleFactor, linearIndices, alignCorners);
}

/**
 * Bicubic (Keys, a = −0.75; a = −0.5 when antialiased) interpolation.
 * @example
 * mg.nn.upsampleCubic(mg.ones([1, 2, 2, 1]), [2, 2]).shape
 */
export function upsampleCubic(x: MgArray, scaleFactor: readonly number[], alignCorners = false, antialias = false): MgArray {
  checkAntialias(alignCorners, antialias);
  if (antialias) {
    return interpolateSeparable(x, scaleFactor, (n, s, a, d, nd) => aaIndices(n, s, a, d, nd, cubicKernel, 2.0), alignCorners);
  }
  return interpolate(x, scaleFactor, cubicIndices, alignCorners);
}

/**
 * Upsample's interpolation: nearest, linear or cubic.
 */
export type UpsampleMode = "nearest" | "linear" | "cubic";

/**
 * Upsamples the spatial axes by `scaleFactor` (one number, or one per spatial axis).
 * @example
 * new mg.nn.Upsample(2).forward(mg.ones([1, 2, 2, 1])).shape
 */
export class Upsample extends Module {
  readonly scaleFactor: number | number[];
  readonly mode: UpsampleMode;
  readonly alignCorners: boolean;
  readonly antialias: boolean;
  constructor(
    scaleFactor: number | readonly number[],
    ...rest: Trailing<[mode: UpsampleMode, alignCorners: boolean, antialias: boolean], { mode?: UpsampleMode; alignCorners?: boolean; antialias?: boolean }>
  ) {
    super();
    const o = resolveOptions("Upsample", rest, { mode: "nearest" as UpsampleMode, alignCorners: false, antialias: false });
    if (!["nearest", "linear", "cubic"].includes(o.mode)) throw new Error(`[Upsample] Got unsupported upsampling algorithm: ${o.mode}`);
    if (o.antialias && o.mode === "nearest") throw new Error("[Upsample] Antialiasing is not supported for nearest neighbor upsampling");
    checkAntialias(o.alignCorners, o.antialias);
    this.scaleFactor = typeof scaleFactor === "number" ? scaleFactor : [...scaleFactor];
    this.mode = o.mode;
    this.alignCorners = o.alignCorners;
    this.antialias = o.antialias;
  }
  protected override _extraRepr(): string {
    const sf = Array.isArray(this.scaleFactor) ? `(${this.scaleFactor.join(", ")})` : String(this.scaleFactor);
    return `scale_factor=${sf}, mode='${this.mode}', align_corners=${this.alignCorners}${this.antialias ? ", antialias=True" : ""}`;
  }
  override forward(x: MgArray): MgArray {
    const dims = x.ndim - 2;
    if (dims <= 0) {
      throw new Error(`[Upsample] The input should have at least 1 spatial dimension which means it should be at least 3D but ${x.ndim}D was provided`);
    }
    let scale: number[];
    if (Array.isArray(this.scaleFactor)) {
      if (this.scaleFactor.length !== dims) {
        throw new Error(`[Upsample] One scale per spatial dimension is required but scale_factor=(${this.scaleFactor.join(", ")}) and the number of spatial dimensions were ${dims}`);
      }
      scale = this.scaleFactor;
    } else scale = Array.from({ length: dims }, () => this.scaleFactor as number);
    if (this.mode === "nearest") return upsampleNearest(x, scale);
    if (this.mode === "linear") return upsampleLinear(x, scale, this.alignCorners, this.antialias);
    return upsampleCubic(x, scale, this.alignCorners, this.antialias);
  }
}

libraryForward(Upsample);
