// Expected types of the public API, checked by the compiler: `bun run typecheck` (tsc over test/,
// in CI) fails if any assertion below stops holding. `Expect<Equal<A, B>>` pins a type exactly;
// `@ts-expect-error` pins a call that must not compile. Nothing here runs (test/types/api.test.ts
// imports it so that a typo in an export name also fails the test run).
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/index.ts";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;

declare const x: MgArray;
declare const w: MgArray;

export function transforms(): void {
  // grad: the gradient of an argument has that argument's type; several give a tuple in index order.
  const loss = (p: MgArray, b: MgArray) => mg.sum(mg.multiply(p, b));
  const g0 = mg.grad(loss)(x, w);
  type _g0 = Expect<Equal<typeof g0, MgArray>>;
  const g10 = mg.grad(loss, [1, 0])(x, w);
  type _g10 = Expect<Equal<typeof g10, [MgArray, MgArray]>>;
  const g1 = mg.grad(loss, { argnums: 1 })(x, w);
  type _g1 = Expect<Equal<typeof g1, MgArray>>;
  // Trees: the gradient of { w, b } is a { w, b }.
  const treeLoss = (params: { w: MgArray; b: MgArray[] }, input: MgArray) => mg.sum(mg.add(mg.matmul(input, params.w), params.b[0]!));
  const gt = mg.grad(treeLoss)({ w, b: [x] }, x);
  type _gt = Expect<Equal<typeof gt, { w: MgArray; b: MgArray[] }>>;
  // valueAndGrad: the function's value type and the gradient's.
  const [value, grads] = mg.valueAndGrad((a: MgArray) => [mg.sum(a), a] as [MgArray, MgArray])(x);
  type _v = Expect<Equal<typeof value, [MgArray, MgArray]>>;
  type _vg = Expect<Equal<typeof grads, MgArray>>;
  // The transformed function takes the function's parameters.
  // @ts-expect-error: loss takes two arrays
  mg.grad(loss)(x);
  // vjp/jvp take the parameter tuple; vjp's cotangents come back in it.
  const [outs, cots] = mg.vjp(loss, [x, w], [x]);
  type _vo = Expect<Equal<typeof outs, MgArray[]>>;
  type _vc = Expect<Equal<typeof cots, [p: MgArray, b: MgArray]>>;
  const [, tangents] = mg.jvp(loss, [x, w], [x, w]);
  type _jt = Expect<Equal<typeof tangents, MgArray[]>>;
  // @ts-expect-error: primals must match the parameters
  mg.vjp(loss, [x], [x]);
  // vmap, checkpoint, compile keep the function's type; transforms compose.
  const vm = mg.vmap(loss, { inAxes: [0, null] });
  type _vm = Expect<Equal<typeof vm, typeof loss>>;
  type _ck = Expect<Equal<ReturnType<typeof mg.checkpoint<typeof loss>>, typeof loss>>;
  const compiled = mg.compile(loss, { shapeless: true });
  type _cp = Expect<Equal<typeof compiled, typeof loss>>;
  const hvp = mg.jvp(mg.grad((a: MgArray) => mg.sum(mg.exp(a))), [x], [x]);
  type _hvp = Expect<Equal<typeof hvp, [MgArray[], MgArray[]]>>;
  // customFunction: the call keeps the function's type; rules see its primals.
  const f = mg.customFunction((a: MgArray) => mg.exp(a));
  type _cf = Expect<Equal<ReturnType<typeof f>, MgArray>>;
  f.vjp((primal, cotangent) => mg.multiply(cotangent, mg.exp(primal)));
}

export function options(): void {
  // MLX's defaulted parameters by name in the trailing options object.
  const a: MgArray = mg.sum(x, { axis: 1 });
  const b: MgArray = mg.mean(x, { keepdims: true });
  const c: MgArray = mg.sum(x, 0, { keepdims: true, stream: mg.cpu });
  const d: MgArray = mg.random.normal([2], { dtype: mg.float16 });
  const e: MgArray = mg.cumsum(x, { axis: 0, reverse: true });
  const f: MgArray = mg.linspace(0, 1, { num: 5 });
  const g: MgArray = x.sum({ axis: 0 });
  const h: MgArray = x.variance(0, { correction: 1 });
  void [a, b, c, d, e, f, g, h];
  // @ts-expect-error: an unknown option
  mg.exp(x, { stram: mg.cpu });
  // @ts-expect-error: an unknown option
  mg.sum(x, { axs: 1 });
  // @ts-expect-error: keepdims is a boolean
  mg.sum(x, 0, { keepdims: 1 });
  // @ts-expect-error: the options object comes last
  mg.sum(x, { axis: 0 }, true);
  // @ts-expect-error: an unknown option of a method
  x.sum({ axs: 1 });
}

export function ops(): void {
  // Precise results: lists of arrays, pairs, numbers, dtypes.
  const parts = mg.split(x, 2);
  type _split = Expect<Equal<typeof parts, MgArray[]>>;
  const mm = mg.minmax(x);
  type _mm = Expect<Equal<typeof mm, [MgArray, MgArray]>>;
  const shape = mg.broadcastShapes([1, 2], [3, 1]);
  type _bs = Expect<Equal<typeof shape, number[]>>;
  const dt = mg.resultType(x, mg.float16);
  type _rt = Expect<Equal<typeof dt, mg.Dtype>>;
  const records = mg.trace(() => mg.exp(x));
  type _tr = Expect<Equal<typeof records, mg.TraceRecord[]>>;
  const diagonalSum = mg.trace(x, 1);
  type _td = Expect<Equal<typeof diagonalSum, MgArray>>;
  // @ts-expect-error: a string is not an array operand
  mg.add(x, "1");
}

export function arrayMethods(): void {
  // MLX's array methods and properties, typed.
  const t: MgArray = x.T;
  const mt: MgArray = x.mT;
  const r: MgArray = x.reshape(2, 3).transpose(1, 0).astype(mg.float32).flatten().squeeze();
  const s: MgArray = x.add(1).multiply(w).greater(0).logicalNot();
  const item = x.item();
  type _item = Expect<Equal<typeof item, mg.ElementValue>>;
  const list = x.tolist();
  type _list = Expect<Equal<typeof list, mg.Nested>>;
  const at: MgArray = x.at(0).add(1);
  const split: MgArray[] = x.split(2, 0);
  const shape: readonly number[] = x.shape;
  const n: number = +x; // a size-1 array where JS asks for a number
  void [t, mt, r, s, at, split, shape, n];
  for (const row of x) {
    type _row = Expect<Equal<typeof row, MgArray>>;
  }
}

export function nn(): void {
  class Mlp extends mg.nn.Module {
    l1 = new mg.nn.Linear(4, 8);
    l2 = new mg.nn.Linear(8, 1);
    scale = 2;
    override forward(input: MgArray): MgArray {
      return this.l2.forward(mg.nn.relu(this.l1.forward(input)));
    }
  }
  const model = new Mlp();
  // Parameters and nn.valueAndGrad's gradients are typed after the model.
  const params = model.trainableParameters();
  type _p = Expect<Equal<typeof params.l1.weight, MgArray>>;
  const [lossValue, grads] = mg.nn.valueAndGrad(model, (input: MgArray) => mg.sum(model.forward(input)))(x);
  type _l = Expect<Equal<typeof lossValue, MgArray>>;
  type _g = Expect<Equal<typeof grads.l2.weight, MgArray>>;
  type _gb = Expect<Equal<typeof grads.l2.bias, MgArray | undefined>>; // Linear's bias is optional (bias: false)
  // @ts-expect-error: configuration is not a parameter
  void grads.scale;
  const opt = new mg.optimizers.Adam(1e-3);
  const next = opt.applyGradients(grads, model);
  type _n = Expect<Equal<typeof next, typeof grads>>;
  opt.update(model, grads);
  // Trees keep their types.
  const doubled = mg.utils.treeMap((a: MgArray) => mg.multiply(a, 2), params);
  type _d = Expect<Equal<typeof doubled.l1.weight, MgArray>>;
  const flat = mg.utils.treeFlatten(params);
  type _f = Expect<Equal<typeof flat, [string, MgArray][]>>;
  const [clipped] = mg.optimizers.clipGradNorm(grads, 1);
  type _c = Expect<Equal<typeof clipped, typeof grads>>;
}
