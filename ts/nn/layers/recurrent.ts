// RNN, GRU and LSTM, as mlx.nn: inputs (..., L, D), outputs (..., L, H) with every step's state.
import type { MgArray } from "../../core/array.ts";
import { add, multiply, sigmoid, subtract, tanh as mgTanh } from "../../core/ops/elementwise.ts";
import { split, stack } from "../../core/ops/join.ts";
import { addmm, matmul } from "../../core/ops/linalg-core.ts";
import { squeeze } from "../../core/ops/shape.ts";
import { sliceStatic } from "../../core/ops/slicing.ts";
import { uniform } from "../../random/distributions.ts";
import { resolveOptions, type Trailing } from "../../core/options.ts";
import { tanh } from "../activations.ts";
import { callUser, libraryForward, Module } from "../module.ts";

/** x[..., i, :] (a view). */
function timeStep(x: MgArray, i: number): MgArray {
  const start = x.shape.map((_, a) => (a === x.ndim - 2 ? i : 0));
  const stop = x.shape.map((d, a) => (a === x.ndim - 2 ? i + 1 : d));
  return squeeze(sliceStatic(x, start, stop), x.ndim - 2);
}

/** x[..., a:b] (a view). */
function lastAxis(x: MgArray, a: number, b: number): MgArray {
  const start = x.shape.map((_, k) => (k === x.ndim - 1 ? a : 0));
  const stop = x.shape.map((d, k) => (k === x.ndim - 1 ? b : d));
  return sliceStatic(x, start, stop);
}

type Nonlinearity = ((x: MgArray) => MgArray) | Module;

/**
 * An Elman RNN: hₜ = f(xₜ·Wxhᵀ + hₜ₋₁·Whhᵀ + bias), f = tanh by default.
 * @example
 * new mg.nn.RNN(3, 5).forward(mg.ones([1, 7, 3])).shape
 */
export class RNN extends Module {
  declare nonlinearity: Nonlinearity;
  readonly hiddenSize: number;
  declare Wxh: MgArray;
  declare Whh: MgArray;
  declare bias: MgArray | null;
  constructor(
    inputSize: number,
    hiddenSize: number,
    ...rest: Trailing<[bias: boolean, nonlinearity: Nonlinearity | null], { bias?: boolean; nonlinearity?: Nonlinearity | null }>
  ) {
    super();
    const o = resolveOptions("RNN", rest, { bias: true, nonlinearity: null as Nonlinearity | null });
    this.nonlinearity = o.nonlinearity ?? tanh;
    if (typeof this.nonlinearity !== "function" && !(this.nonlinearity instanceof Module)) {
      throw new TypeError(`[RNN] Nonlinearity must be callable. Current value: ${String(o.nonlinearity)}.`);
    }
    const scale = 1.0 / Math.sqrt(hiddenSize);
    this.hiddenSize = hiddenSize;
    this.Wxh = uniform(-scale, scale, [hiddenSize, inputSize]);
    this.Whh = uniform(-scale, scale, [hiddenSize, hiddenSize]);
    this.bias = o.bias ? uniform(-scale, scale, [hiddenSize]) : null;
  }
  protected override _extraRepr(): string {
    return `input_dims=${this.Wxh.shape[1]}, hidden_size=${this.hiddenSize}, bias=${this.bias !== null}`;
  }
  override forward(x: MgArray, hidden: MgArray | null = null): MgArray {
    const f = this.nonlinearity;
    x = this.bias ? addmm(this.bias, x, this.Wxh.T) : matmul(x, this.Wxh.T);
    const all: MgArray[] = [];
    for (let i = 0; i < x.shape[x.ndim - 2]!; i++) {
      const xi = timeStep(x, i);
      let h = hidden ? addmm(xi, hidden, this.Whh.T) : xi;
      h = callUser(f, h);
      hidden = h;
      all.push(h);
    }
    return stack(all, -2);
  }
}

/**
 * A gated recurrent unit (MLX's layout: Wx, Wh of 3·H rows in r, z, n order; b and bhn).
 * @example
 * new mg.nn.GRU(3, 5).forward(mg.ones([1, 7, 3])).shape
 */
export class GRU extends Module {
  readonly hiddenSize: number;
  declare Wx: MgArray;
  declare Wh: MgArray;
  declare b: MgArray | null;
  declare bhn: MgArray | null;
  constructor(inputSize: number, hiddenSize: number, ...rest: Trailing<[bias: boolean], { bias?: boolean }>) {
    super();
    const { bias } = resolveOptions("GRU", rest, { bias: true });
    this.hiddenSize = hiddenSize;
    const scale = 1.0 / Math.sqrt(hiddenSize);
    this.Wx = uniform(-scale, scale, [3 * hiddenSize, inputSize]);
    this.Wh = uniform(-scale, scale, [3 * hiddenSize, hiddenSize]);
    this.b = bias ? uniform(-scale, scale, [3 * hiddenSize]) : null;
    this.bhn = bias ? uniform(-scale, scale, [hiddenSize]) : null;
  }
  protected override _extraRepr(): string {
    return `input_dims=${this.Wx.shape[1]}, hidden_size=${this.hiddenSize}, bias=${this.b !== null}`;
  }
  override forward(x: MgArray, hidden: MgArray | null = null): MgArray {
    const H = this.hiddenSize;
    x = this.b ? addmm(this.b, x, this.Wx.T) : matmul(x, this.Wx.T);
    const width = x.shape[x.ndim - 1]!;
    const xRz = lastAxis(x, 0, width - H);
    const xN = lastAxis(x, width - H, width);
    const all: MgArray[] = [];
    for (let i = 0; i < x.shape[x.ndim - 2]!; i++) {
      let rz = timeStep(xRz, i);
      let hProjN: MgArray | null = null;
      if (hidden) {
        const hProj = matmul(hidden, this.Wh.T);
        const hw = hProj.shape[hProj.ndim - 1]!;
        hProjN = lastAxis(hProj, hw - H, hw);
        if (this.bhn) hProjN = add(hProjN, this.bhn);
        rz = add(rz, lastAxis(hProj, 0, hw - H));
      }
      rz = sigmoid(rz);
      const [r, z] = split(rz, 2, -1) as [MgArray, MgArray];
      let n = timeStep(xN, i);
      if (hidden) n = add(n, multiply(r, hProjN!));
      else if (this.bhn) n = add(n, multiply(r, this.bhn));
      n = mgTanh(n);
      hidden = hidden ? add(multiply(subtract(1, z), n), multiply(z, hidden)) : multiply(subtract(1, z), n);
      all.push(hidden);
    }
    return stack(all, -2);
  }
}

/**
 * A long short-term memory layer (gates i, f, g, o); forward returns [hidden states, cell states].
 * @example
 * new mg.nn.LSTM(3, 5).forward(mg.ones([1, 7, 3]))[0].shape
 */
export class LSTM extends Module {
  readonly hiddenSize: number;
  declare Wx: MgArray;
  declare Wh: MgArray;
  declare bias: MgArray | null;
  constructor(inputSize: number, hiddenSize: number, ...rest: Trailing<[bias: boolean], { bias?: boolean }>) {
    super();
    const { bias } = resolveOptions("LSTM", rest, { bias: true });
    this.hiddenSize = hiddenSize;
    const scale = 1.0 / Math.sqrt(hiddenSize);
    this.Wx = uniform(-scale, scale, [4 * hiddenSize, inputSize]);
    this.Wh = uniform(-scale, scale, [4 * hiddenSize, hiddenSize]);
    this.bias = bias ? uniform(-scale, scale, [4 * hiddenSize]) : null;
  }
  protected override _extraRepr(): string {
    return `input_dims=${this.Wx.shape[1]}, hidden_size=${this.hiddenSize}, bias=${this.bias !== null}`;
  }
  override forward(x: MgArray, hidden: MgArray | null = null, cell: MgArray | null = null): [MgArray, MgArray] {
    x = this.bias ? addmm(this.bias, x, this.Wx.T) : matmul(x, this.Wx.T);
    const allHidden: MgArray[] = [];
    const allCell: MgArray[] = [];
    for (let t = 0; t < x.shape[x.ndim - 2]!; t++) {
      let ifgo = timeStep(x, t);
      if (hidden) ifgo = addmm(ifgo, hidden, this.Wh.T);
      let [i, f, g, o] = split(ifgo, 4, -1) as [MgArray, MgArray, MgArray, MgArray];
      i = sigmoid(i);
      f = sigmoid(f);
      g = mgTanh(g);
      o = sigmoid(o);
      cell = cell ? add(multiply(f, cell), multiply(i, g)) : multiply(i, g);
      hidden = multiply(o, mgTanh(cell));
      allCell.push(cell);
      allHidden.push(hidden);
    }
    return [stack(allHidden, -2), stack(allCell, -2)];
  }
}

libraryForward(RNN, GRU, LSTM);
