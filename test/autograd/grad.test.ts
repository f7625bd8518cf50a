// grad and valueAndGrad: MLX's own facts (python/tests/test_autograd.py), trees, argnums, auxiliary
// values, errors and nesting.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { close } from "./helpers.ts";

const f32 = (v: number | number[]) => mg.array(v, mg.float32);

describe("MLX's autograd facts", () => {
  test("valueAndGrad of x·x at 0.5 is (0.25, 1.0); second derivative 2, third 0", () => {
    const fun = (x: MgArray) => mg.multiply(x, x);
    const [value, dfdx] = mg.valueAndGrad(fun)(f32(0.5));
    expect(value.item()).toBe(0.25);
    expect(dfdx.item()).toBe(1.0);
    expect(mg.grad(fun)(f32(0.5)).item()).toBe(1.0);
    expect(mg.grad(mg.grad(fun))(f32(0.5)).item()).toBe(2.0);
    expect(mg.grad(mg.grad(mg.grad(fun)))(f32(0.5)).item()).toBe(0.0);
  });

  test("grad of x**1.5 and x**2 at 0 is 0; of x**2 at 2 is 4; of (x−y)**x at (1, 1) is 1", () => {
    expect(mg.grad((x: MgArray) => mg.power(x, 2))(f32(0)).item()).toBe(0);
    expect(mg.grad((x: MgArray) => mg.power(x, 1.5))(f32(0)).item()).toBe(0);
    expect(mg.grad((x: MgArray) => mg.power(x, 2))(f32(2)).item()).toBeCloseTo(4, 6);
    const fun = (x: MgArray, y: MgArray) => mg.power(mg.subtract(x, y), x);
    expect(mg.grad(fun)(f32(1), f32(1)).item()).toBe(1);
  });

  test("test_eval_in_grad: [1.0] broadcast against y = [2, 2], evaluated mid-trace, vjp of x**2 is 12 (and 8)", () => {
    const arr = f32([1]);
    const cotan = f32([1, 1]);
    const y = f32([2, 2]);
    const func = (x: MgArray) => {
      x = mg.add(x, y);
      const cond = mg.less(x, 1);
      cond.tolist();
      return mg.power(x, 2);
    };
    const [, vjps] = mg.vjp(func, [arr], [cotan]);
    expect((vjps[0] as MgArray).item()).toBe(12.0);
    const func2 = (x: MgArray) => {
      x = mg.add(x, f32([1, 1]));
      mg.eval(x);
      return mg.power(x, 2);
    };
    const [, vjps2] = mg.vjp(func2, [arr], [cotan]);
    expect((vjps2[0] as MgArray).item()).toBe(8.0);
  });

  test("grad of a function returning a non-scalar throws MLX's message", () => {
    const fun = (x: MgArray) => mg.sum(x, null, true);
    expect(() => mg.grad(fun)(mg.ones([2, 2]))).toThrow(
      "[grad] Output shape (1,1) does not match cotangent shape (). If you are using grad your function must return a scalar.",
    );
    expect(() => mg.grad((x: MgArray) => mg.multiply(x, 2))(mg.ones([3]))).toThrow("does not match cotangent shape ()");
    expect(() => mg.valueAndGrad((x: MgArray) => mg.multiply(x, 2))(mg.ones([3]))).toThrow("[value_and_grad] Output shape (3,) does not match cotangent shape ().");
  });

  test("argnums pick the differentiated arguments; several give a list in sorted order", () => {
    const fun = (x: MgArray, y: MgArray) => mg.multiply(x, y);
    expect(mg.grad(fun, 0)(f32(2), f32(3)).item()).toBe(3);
    expect(mg.grad(fun, 1)(f32(2), f32(3)).item()).toBe(2);
    expect(mg.grad(fun, [1])(f32(2), f32(3)).item()).toBe(2);
    const [value, grads] = mg.valueAndGrad(fun, [1, 0])(f32(0.5), f32(2));
    expect(value.item()).toBe(1);
    expect(grads.map((g: MgArray) => g.item())).toEqual([2, 0.5]);
  });

  test("non-array arguments pass through when not differentiated", () => {
    const fun = (x: MgArray, _s: string) => x;
    const [value, dfdx] = mg.valueAndGrad(fun)(f32(2), "hello");
    expect(value.item()).toBe(2);
    expect(dfdx.item()).toBe(1);
  });

  test("captured arrays are constants, also when the same array is passed (test_captured)", () => {
    const a = f32(5);
    const f = (x: MgArray) => mg.add(a, x);
    const g = (_x: MgArray) => mg.add(a, a);
    const h = (x: MgArray) => mg.add(x, x);
    expect(mg.grad(f)(a).item()).toBe(1);
    expect(mg.grad(g)(a).item()).toBe(0);
    expect(mg.grad(h)(a).item()).toBe(2);
    expect(mg.grad(mg.grad(f))(a).item()).toBe(0);
    expect(mg.grad(mg.grad(g))(a).item()).toBe(0);
    expect(mg.grad(mg.grad(h))(a).item()).toBe(0);
    // One array passed twice: each argument gets its own gradient.
    expect(mg.grad((x: MgArray, y: MgArray) => mg.multiply(x, y), [0, 1])(a, a).map((t: MgArray) => t.item())).toEqual([5, 5]);
  });

  test("gradients come back in the primal's dtype", () => {
    for (const t of [mg.float16, mg.bfloat16, mg.float32, mg.float64]) {
      expect(mg.grad((x: MgArray) => x)(mg.array(1, t)).dtype).toBe(t);
      expect(mg.grad((x: MgArray) => mg.sum(x))(mg.array(1, t)).dtype).toBe(t);
      expect(mg.grad((x: MgArray, y: MgArray) => mg.sum(mg.add(x, y)))(mg.array(1, t), mg.array(1, t)).dtype).toBe(t);
    }
    // A float32 loss of a float16 input: the cotangent is cast back to float16.
    const g = mg.grad((x: MgArray) => mg.sum(mg.astype(mg.square(x), mg.float32)))(mg.array([1.5, -2], mg.float16));
    expect(g.dtype).toBe(mg.float16);
    expect(g.tolist()).toEqual([3, -4]);
  });

  test("integer and bool values carry no gradient", () => {
    // Through a cast to int and back, and through a comparison.
    const g = mg.grad((x: MgArray) => mg.sum(mg.add(mg.astype(mg.astype(x, mg.int32), mg.float32), mg.astype(mg.greater(x, 0), mg.float32))))(
      f32([1.5, -2]),
    );
    expect(g.tolist()).toEqual([0, 0]);
    // An integer argument would only ever get zeros: grad says so.
    expect(() => mg.grad((x: MgArray) => mg.sum(mg.multiply(x, x)))(mg.array([2, 3]))).toThrow(
      "[grad] Can't compute the gradient with respect to argument 0 of dtype int32",
    );
  });

  test("stop_gradient cuts the graph (test_stop_gradient)", () => {
    const w = mg.ones([4, 4]);
    const x = mg.ones([4, 4]);
    const cotan = mg.ones([4, 4]);
    const h = (w_: MgArray, x_: MgArray) => mg.matmul(w_, mg.multiply(3, mg.stopGradient(mg.multiply(2, x_))));
    const [, vjps] = mg.vjp(h, [w, x], [cotan]);
    close(vjps[0] as MgArray, new Array(16).fill(24));
    close(vjps[1] as MgArray, new Array(16).fill(0));
    const [, vjps2] = mg.vjp((x_: MgArray) => h(w, x_), [x], [cotan]);
    close(vjps2[0] as MgArray, new Array(16).fill(0));
  });

  test("side effects on captured state survive the trace (test_update_state)", () => {
    let state = mg.zeros([2]);
    const fn = (y: MgArray, x: MgArray) => {
      const z = mg.multiply(y, x);
      state = mg.add(state, z);
      return mg.sum(z);
    };
    mg.grad(fn)(f32([1]), mg.ones([2]));
    mg.eval(state);
    expect(state.tolist()).toEqual([1, 1]);
  });

  test("complex gradients follow MLX: d/dz of 2·real(z) is 2, of 2·imag(z) is 2i", () => {
    const z = mg.array([{ re: 0, im: 1 }, { re: 1, im: 0 }, { re: 0.5, im: 0.5 }], mg.complex64);
    const g1 = mg.grad((x: MgArray) => mg.sum(mg.multiply(2, mg.real(x))))(z);
    expect(g1.tolist()).toEqual([{ re: 2, im: 0 }, { re: 2, im: 0 }, { re: 2, im: 0 }]);
    const g2 = mg.grad((x: MgArray) => mg.sum(mg.multiply(2, mg.imag(x))))(z);
    expect(g2.tolist()).toEqual([{ re: 0, im: 2 }, { re: 0, im: 2 }, { re: 0, im: 2 }]);
  });
  test("maximum/minimum send a tie's gradient to the second operand (MLX's masks a > b, a <= b)", () => {
    // Values from MLX 0.32.4: grad(lambda x: sum(maximum(x, 1.0)))([1, 2, 0]) is [0, 1, 0].
    const x = mg.array([1, 2, 0, NaN], mg.float32);
    const y = mg.array([1, 1, 1, 1], mg.float32);
    const [gMaxX, gMaxY] = mg.grad((a: MgArray, b: MgArray) => mg.sum(mg.maximum(a, b)), [0, 1])(x, y) as MgArray[];
    expect(gMaxX!.tolist()).toEqual([0, 1, 0, 0]);
    expect(gMaxY!.tolist()).toEqual([1, 0, 1, 0]);
    const [gMinX, gMinY] = mg.grad((a: MgArray, b: MgArray) => mg.sum(mg.minimum(a, b)), [0, 1])(x, y) as MgArray[];
    expect(gMinX!.tolist()).toEqual([0, 0, 1, 0]);
    expect(gMinY!.tolist()).toEqual([1, 1, 0, 0]);
    // clip is maximum then minimum: at a bound the gradient goes to the bound, not to x.
    expect(mg.grad((a: MgArray) => mg.sum(mg.clip(a, 0, 1)))(mg.array([0, 0.5, 1, 2], mg.float32)).tolist()).toEqual([0, 1, 0, 0]);
    const [, tangent] = mg.jvp((a: MgArray) => mg.maximum(a, 1), [x], [mg.onesLike(x)]);
    expect(tangent[0]!.tolist()).toEqual([0, 1, 0, 0]);
  });
});

describe("devices", () => {
  test("the backward pass runs on the streams of the forward pass", () => {
    const s = mg.newStream(mg.cpu);
    const f = (x: MgArray) => mg.sum(mg.exp(mg.multiply(x, x, { stream: s }), { stream: s }), null, false, { stream: s });
    const g = mg.grad(f)(mg.array([0.5, -1], mg.float32));
    // Every node the transform built for the gradient is on `s` (the tracer, a view of the
    // argument, is on the default stream as MLX's are).
    const streams = new Set<unknown>();
    const stack = [g];
    const seen = new Set<unknown>();
    while (stack.length > 0) {
      const a = stack.pop()!;
      if (!a.node || seen.has(a.node)) continue;
      seen.add(a.node);
      const isTracer = a.node.primitive.name === "Broadcast" && a.node.inputs[0]!.node === null;
      if (!isTracer) streams.add(a.node.stream);
      stack.push(...a.node.inputs);
    }
    expect([...streams]).toEqual([s]);
    close(g, [2 * 0.5 * Math.exp(0.25), -2 * Math.exp(1)], 1e-6, 1e-6);
  });
});

describe("trees", () => {
  test("a dict argument gets a dict gradient; nested lists keep their structure", () => {
    const fun = (p: { x: MgArray; y: MgArray }) => mg.multiply(p.x, p.y);
    const [value, dfdx] = mg.valueAndGrad(fun)({ x: f32(0.5), y: f32(2) });
    expect(value.item()).toBe(1);
    expect(dfdx.x.item()).toBe(2);
    expect(dfdx.y.item()).toBe(0.5);

    const fun2 = (p: { foo: unknown[] }[], b: MgArray) => mg.multiply(mg.square(p[0]!.foo[2] as MgArray), b);
    const [v2, g2] = mg.valueAndGrad(fun2)([{ foo: [[], [], f32(2)] }], f32(0.5));
    expect(v2.item()).toBe(2);
    expect((g2[0]!.foo[2] as MgArray).item()).toBe(2);
    expect(g2[0]!.foo[0]).toEqual([]);
  });

  test("differentiated trees must hold only arrays", () => {
    const fun = (p: { x: unknown; y: MgArray }) => mg.multiply(p.x as MgArray, p.y);
    expect(() => mg.valueAndGrad(fun)({ x: 0.5, y: f32(2) })).toThrow("[value_and_grad] The argument should contain only arrays");
    expect(() => mg.grad((x: MgArray) => x)("hello" as unknown as MgArray)).toThrow("[grad] The argument should contain only arrays");
  });

  test("auxiliary values: a list [loss, aux…] for valueAndGrad; grad rejects it", () => {
    const fun = (x: MgArray, y: MgArray) => {
      const l = mg.sum(mg.multiply(x, y));
      return [l, { loss: l, foo: mg.add(mg.square(y), mg.square(x)), bar: [1, 2, 3, y, x] }] as const;
    };
    const [[loss, aux], g] = mg.valueAndGrad(fun)(mg.ones([2, 2]), mg.ones([2, 2]));
    expect(loss.item()).toBe(4);
    expect(aux.loss.item()).toBe(4);
    expect(g.tolist()).toEqual([[1, 1], [1, 1]]);
    expect(aux.foo.tolist()).toEqual([[2, 2], [2, 2]]);
    expect(aux.bar.slice(0, 3)).toEqual([1, 2, 3]);
    expect(aux.bar[3].tolist()).toEqual([[1, 1], [1, 1]]);
    expect(() => mg.grad(fun)(mg.ones([2, 2]), mg.ones([2, 2]))).toThrow("[grad] The return value of the function whose gradient we want to compute should be a scalar array");
  });
});

describe("errors", () => {
  test("argnums are validated as MLX does", () => {
    const fun = (x: MgArray) => x;
    expect(() => mg.grad(fun, 2)(f32(2))).toThrow("[grad] Can't compute the gradient of argument index 2 because the function is called with only 1 positional arguments.");
    expect(() => mg.grad(fun, -2)).toThrow("[grad] Can't compute the gradient of negative argument index -2.");
    expect(() => mg.grad(fun, [0, 0])).toThrow("[grad] Duplicate argument index 0 is not allowed.");
    expect(() => mg.valueAndGrad(fun, [])).toThrow("[value_and_grad] Gradient wrt no argument requested.");
    expect(() => mg.grad((_x: MgArray) => "hello")(f32(2))).toThrow("[grad] The return value of the function whose gradient we want to compute should be a scalar array; but string \"hello\" was returned.");
  });
});

describe("nesting", () => {
  test("grad of grad of grad of a polynomial", () => {
    const f = (x: MgArray) => mg.add(mg.power(x, 4), mg.multiply(mg.power(x, 3), 2));
    const x = mg.array(1.5, mg.float64);
    expect(mg.grad(f)(x).item()).toBeCloseTo(4 * 1.5 ** 3 + 6 * 1.5 ** 2, 10);
    expect(mg.grad(mg.grad(f))(x).item()).toBeCloseTo(12 * 1.5 ** 2 + 12 * 1.5, 10);
    expect(mg.grad(mg.grad(mg.grad(f)))(x).item()).toBeCloseTo(24 * 1.5 + 12, 10);
    expect(mg.grad(mg.grad(mg.grad(mg.grad(f))))(x).item()).toBeCloseTo(24, 10);
  });

  test("Hessian-vector product as jvp of grad, against the analytic Hessian", () => {
    // f(x) = Σ sin(x_i)·x_j² over i < j pairs… kept simple: f = sum(sin(x)) · sum(x²)
    const f = (x: MgArray) => mg.multiply(mg.sum(mg.sin(x)), mg.sum(mg.square(x)));
    const xv = [0.3, -1.2, 0.7];
    const vv = [1, 0.5, -2];
    const x = mg.array(xv, mg.float64);
    const v = mg.array(vv, mg.float64);
    const [, [hv]] = mg.jvp(mg.grad(f), [x], [v]);
    const S = xv.reduce((a, b) => a + Math.sin(b), 0);
    const Q = xv.reduce((a, b) => a + b * b, 0);
    // H_ij = −δ_ij sin(x_i)·Q + 2x_j cos(x_i) + 2x_i cos(x_j) + 2δ_ij S
    const H = xv.map((xi, i) => xv.map((xj, j) => (i === j ? -Math.sin(xi) * Q + 2 * S : 0) + 2 * xj * Math.cos(xi) + 2 * xi * Math.cos(xj)));
    close(hv!, H.map((row) => row.reduce((a, h, j) => a + h * vv[j]!, 0)), 1e-12, 1e-12);
  });

  test("vjp of jvp and jvp of vjp agree (both are the Hessian applied to directions)", () => {
    const f = (x: MgArray) => mg.sum(mg.multiply(mg.exp(x), mg.cos(x)));
    const x = mg.array([0.1, -0.4, 0.9], mg.float64);
    const u = mg.array([1, 2, -1], mg.float64);
    // Hessian of f is symmetric: (∇²f)·u by forward-over-reverse and reverse-over-forward.
    const [, [fwdOverRev]] = mg.jvp((y: MgArray) => mg.grad(f)(y), [x], [u]);
    const [, [revOverFwd]] = mg.vjp((y: MgArray) => mg.jvp(f, [y], [u])[1][0]!, [x], [mg.array(1, mg.float64)]);
    close(revOverFwd as MgArray, fwdOverRev!, 1e-12, 1e-12);
  });
});
