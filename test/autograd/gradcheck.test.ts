// mg.testing.gradcheck itself: it passes correct rules, catches wrong ones (vjp, jvp, second
// order) with the worst element's indices and both values, compares a float32 analytic side
// against float64 finite differences, and validates its arguments.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { makeRng, uniform } from "./helpers.ts";

const rng = makeRng(21);

describe("mg.testing.gradcheck", () => {
  test("passes a correct function and reports what it compared", () => {
    const x = uniform(rng, [2, 3]);
    const y = uniform(rng, [3]);
    const r = mg.testing.gradcheck((a: MgArray, b: MgArray) => [mg.multiply(mg.sin(a), b), mg.sum(mg.exp(b))], [x, y]);
    expect(r.ok).toBe(true);
    // 7 outputs × 9 inputs Jacobian entries + 2 identity checks.
    expect(r.compared).toBe(7 * 9 + 2);
    expect(r.worst!.error).toBeLessThanOrEqual(r.worst!.tolerance);
    expect(r.message).toStartWith("[gradcheck] ok (65 values)");
  });

  test("a wrong vjp is reported with its element indices and both values", () => {
    const f = mg.customFunction((a: MgArray) => mg.square(a));
    // Wrong only at the second element: 3a instead of 2a there.
    f.vjp((a: MgArray, g: MgArray) => mg.multiply(g, mg.multiply(a, mg.array([2, 3, 2], mg.float64))));
    const x = mg.array([0.5, 1.5, -1], mg.float64);
    const r = mg.testing.gradcheck(f, [x], { raiseException: false });
    expect(r.ok).toBe(false);
    const w = r.worst!;
    expect(w.check).toBe("vjp");
    expect(w.order).toBe(1);
    expect([w.input, w.output]).toEqual([0, 0]);
    expect(w.inputIndex).toEqual([1]);
    expect(w.outputIndex).toEqual([1]);
    expect(w.analytic).toBeCloseTo(4.5, 12);
    expect(w.numeric).toBeCloseTo(3, 6);
    expect(() => mg.testing.gradcheck(f, [x])).toThrow(
      /\[gradcheck\] derivative mismatch \(order 1, vjp\): d output 0\[1\] \/ d input 0\[1\]: analytic 4\.5 vs numeric (3\.0000|2\.9999)/,
    );
  });

  test("a wrong jvp is caught by the ⟨u, J·v⟩ = ⟨Jᵀ·u, v⟩ identity", () => {
    const f = mg.customFunction((a: MgArray) => mg.exp(a));
    f.jvp((a: MgArray, t: MgArray) => mg.multiply(mg.multiply(t, mg.exp(a)), 1.5));
    const r = mg.testing.gradcheck(f, [uniform(rng, [4])], { raiseException: false });
    expect(r.ok).toBe(false);
    expect(r.worst!.check).toBe("jvp");
    expect(r.message).toContain("⟨u, J·v⟩ (analytic jvp) vs ⟨Jᵀ·u, v⟩ (analytic vjp)");
  });

  test("order 2 catches a vjp that is right at first order but does not differentiate again", () => {
    // d(x³) = 3x² dx, with x² frozen by stop_gradient: first derivatives right, second ones 0.
    const f = mg.customFunction((a: MgArray) => mg.power(a, 3));
    f.vjp((a: MgArray, g: MgArray) => mg.multiply(g, mg.multiply(3, mg.stopGradient(mg.square(a)))));
    const x = uniform(rng, [3], 0.5, 1.5);
    expect(mg.testing.gradcheck(f, [x]).ok).toBe(true);
    const r = mg.testing.gradcheck(f, [x], { order: 2, raiseException: false });
    expect(r.ok).toBe(false);
    expect(r.worst!.order).toBe(2);
  });

  test("a float32 analytic side is held to float32 tolerances against float64 differences", () => {
    const x = mg.astype(uniform(rng, [3, 2]), mg.float32);
    const r = mg.testing.gradcheck((a: MgArray) => mg.softmax(mg.multiply(a, 3), -1), [x], { stream: mg.cpu });
    expect(r.ok).toBe(true);
    // The float32 result is not float64-exact, and the float64 tolerance would say so.
    const strict = mg.testing.gradcheck((a: MgArray) => mg.exp(mg.multiply(a, 7)), [mg.astype(uniform(rng, [6], 1, 2), mg.float32)], {
      atol: 1e-12,
      rtol: 1e-12,
      raiseException: false,
    });
    expect(strict.ok).toBe(false);
  });

  test("NaN derivatives never pass, even when both sides are NaN", () => {
    const r = mg.testing.gradcheck(mg.sqrt, [mg.array([-1, 4], mg.float64)], { raiseException: false });
    expect(r.ok).toBe(false);
    expect(Number.isNaN(r.worst!.error)).toBe(true);
    expect(r.worst!.inputIndex).toEqual([0]);
  });

  test("integer inputs are held fixed; non-floating outputs are ignored", () => {
    const idx = mg.array(new Int32Array([2, 0]), mg.int32, { shape: [2] });
    const r = mg.testing.gradcheck((a: MgArray, i: MgArray) => [mg.take(a, i), mg.argmax(a)], [uniform(rng, [3]), idx]);
    expect(r.ok).toBe(true);
    expect(r.compared).toBe(2 * 3 + 2);
  });

  test("argument errors", () => {
    const x = uniform(rng, [2]);
    expect(() => mg.testing.gradcheck(mg.exp, [mg.array([1, 2])])).toThrow("[gradcheck] no floating-point input to differentiate.");
    expect(() => mg.testing.gradcheck(mg.exp, [mg.astype(x, mg.complex64)])).toThrow("[gradcheck] complex inputs are not supported");
    expect(() => mg.testing.gradcheck(mg.exp, [x], { order: 0 })).toThrow("[gradcheck] order must be a positive integer, got 0.");
    expect(() => mg.testing.gradcheck(mg.exp, [x], { eps: 0 })).toThrow("[gradcheck] eps must be positive, got 0.");
    expect(() => mg.testing.gradcheck(mg.exp, x as unknown as [MgArray])).toThrow("[gradcheck] inputs must be a list");
  });
});
