// MLX's constants are plain numbers, so next to an array they are weak scalars.
import { expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";

test("e, pi, inf, nan and eulerGamma are MLX's values", () => {
  expect(mg.e).toBe(2.718281828459045);
  expect(mg.pi).toBe(3.141592653589793);
  expect(mg.inf).toBe(Infinity);
  expect(mg.nan).toBeNaN();
  // γ = lim (H_n − ln n); H_n − ln n − 1/(2n) converges fast enough to check 10 digits.
  const n = 1e6;
  let h = 0;
  for (let k = 1; k <= n; k++) h += 1 / k;
  expect(Math.abs(mg.eulerGamma - (h - Math.log(n) - 1 / (2 * n)))).toBeLessThan(1e-10);
});

test("they are weak scalars next to arrays", () => {
  const y = mg.multiply(mg.array([1, 2], mg.float16), mg.pi);
  expect(y.dtype).toBe(mg.float16);
  expect(mg.isinf(mg.array([mg.inf, 1])).tolist()).toEqual([true, false]);
});
