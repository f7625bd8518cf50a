// ts/core/calls.ts: errors raised while an op builds its graph name the public op the user called
// (the innermost one under way), not the primitive or the helper op that failed.
import { expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { currentOp, withOp } from "../../ts/core/calls.ts";

const FIX = "float64 is not supported on the GPU; run it on the CPU with { stream: mg.cpu } or cast with astype(mg.float32).";

test("a composite op's float64 error names the op called, with the way out", () => {
  const x = mg.array([1, 2, 3], mg.float64);
  const gpu = { stream: mg.gpu };
  expect(() => mg.variance(x, gpu)).toThrow(`[var] ${FIX}`); // built from mean, subtract, square, sum
  expect(() => mg.softmax(x, gpu)).toThrow(`[softmax] ${FIX}`);
  expect(() => mg.logsumexp(x, gpu)).toThrow(`[logsumexp] ${FIX}`);
  expect(() => mg.floorDivide(x, 2, gpu)).toThrow(`[floor_divide] ${FIX}`);
  expect(() => x.mean(gpu)).toThrow(`[mean] ${FIX}`);
  // User code inside a public function names its own ops.
  expect(() => mg.stream(mg.gpu, () => mg.cumsum(x))).toThrow(`[cumsum] ${FIX}`);
});

test("the innermost public call is current, and restored after a throw", () => {
  expect(currentOp()).toBe(null);
  expect(withOp("outer", () => withOp("inner", () => currentOp()))).toBe("inner");
  expect(() => withOp("outer", () => { throw new Error("x"); })).toThrow("x");
  expect(currentOp()).toBe(null);
  let seen: string | null = null;
  mg.vmap((a: mg.MgArray) => { seen = currentOp(); return a; })(mg.ones([2, 2]));
  expect(seen).toBe(null); // vmap's returned function runs user code outside any public op
});
