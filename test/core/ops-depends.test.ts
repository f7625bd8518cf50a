// mg.depends: outputs equal to the inputs, evaluated after the dependencies, on both devices.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";

const f32 = (v: number[]) => mg.array(v, mg.float32);

describe("depends", () => {
  for (const device of [mg.cpu, mg.gpu]) {
    test(`evaluating an output evaluates the dependencies first (${device.type})`, () => {
      mg.stream(device, () => {
        const a = mg.sin(f32([1, 2]));
        const dep = mg.exp(f32([3]));
        const unrelated = mg.exp(f32([4]));
        const z = mg.multiply(mg.depends(a, dep), 2);
        const kernels = mg.trace(() => z).map((r) => r.primitives.join("+"));
        const exp = kernels.indexOf("Exp");
        expect(exp).toBeGreaterThanOrEqual(0);
        expect(exp).toBeLessThan(kernels.findIndex((k) => k.includes("Multiply")));
        expect(kernels.filter((k) => k === "Exp")).toHaveLength(1); // the unrelated exp did not run
        expect(dep.evaluated).toBe(true);
        expect(unrelated.evaluated).toBe(false);
        (z.tolist() as number[]).forEach((v, i) => expect(v).toBeCloseTo(2 * Math.sin(i + 1), 6));
      });
    });
  }
  test("an array in gives an array out, a list a list; values, shapes and dtypes are the inputs'", () => {
    const a = mg.array([1, 2]);
    const b = mg.array([[true, false]]);
    const dep = mg.zeros([3]);
    const one = mg.depends(a, dep);
    expect(one).toBeInstanceOf(mg.MgArray);
    expect(one).not.toBe(a);
    expect(one.dtype).toBe(mg.int32);
    expect(one.tolist()).toEqual([1, 2]);
    const [x, y] = mg.depends([a, b], [dep, mg.ones([1])]);
    expect(x!.tolist()).toEqual([1, 2]);
    expect(y!.tolist()).toEqual([[true, false]]);
    expect(y!.dtype).toBe(mg.bool_);
    expect(mg.depends([a], dep)).toHaveLength(1);
    expect(mg.depends(a, []).tolist()).toEqual([1, 2]);
    expect(mg.depends(a, a).tolist()).toEqual([1, 2]);
  });
  test("the gradient passes to the inputs; the dependencies get zeros (as MLX)", () => {
    const dx = mg.grad((x: mg.MgArray) => mg.sum(mg.depends(mg.multiply(x, 2), mg.multiply(x, 5))))(f32([1, 2]));
    expect(dx.tolist()).toEqual([2, 2]);
    const dz = mg.grad((x: mg.MgArray, z: mg.MgArray) => mg.sum(mg.depends(mg.multiply(x, 2), mg.multiply(z, 5))), [1])(f32([1, 2]), f32([1]));
    expect(dz.tolist()).toEqual([0]);
    const [v, g] = mg.valueAndGrad((x: mg.MgArray) => mg.sum(mg.square(mg.depends(x, mg.exp(x)))))(f32([3]));
    expect(v.item()).toBe(9);
    expect(g.tolist()).toEqual([6]);
  });
  test("jvp, vmap and compile pass through (MLX has no jvp or vmap rule for depends)", () => {
    const [, [t]] = mg.jvp((x: mg.MgArray) => mg.depends(mg.multiply(x, 2), mg.multiply(x, 5)), [f32([1, 2])], [f32([1, 3])]);
    expect(t!.tolist()).toEqual([2, 6]);
    const vm = mg.vmap((x: mg.MgArray) => mg.depends(mg.multiply(x, 2), mg.sum(x)))(mg.reshape(mg.arange(6, mg.float32), [2, 3]));
    expect(vm.tolist()).toEqual([[0, 2, 4], [6, 8, 10]]);
    const c = mg.compile((x: mg.MgArray) => mg.depends(mg.multiply(x, 2), mg.add(x, 1)));
    expect(c(f32([1, 4])).tolist()).toEqual([2, 8]);
    expect(c(f32([5])).tolist()).toEqual([10]);
  });
  test("bad arguments are tagged errors", () => {
    const a = mg.array([1]);
    expect(() => mg.depends(1 as unknown as mg.MgArray, a)).toThrow("[depends] inputs must be arrays, got number.");
    expect(() => mg.depends([a, 1] as unknown as mg.MgArray[], a)).toThrow("[depends] inputs must be arrays, got number at position 1.");
    expect(() => mg.depends(a, [a, null] as unknown as mg.MgArray[])).toThrow("[depends] dependencies must be arrays, got null at position 1.");
    expect(() => mg.depends([], a)).toThrow("[depends] Expected at least one input.");
    const gone = mg.array([2]);
    gone.dispose();
    expect(() => mg.depends(a, gone)).toThrow("[depends]");
  });
});
