// Elementwise ops on the CPU device: values against float64 references computed here, MLX's
// subtle cases, dtype rules and errors.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";

const f32 = Math.fround;
const vals = (a: MgArray) => a.tolist() as number[];

describe("unary float ops", () => {
  const x = [-2.5, -1, -0.25, 0, 0.3, 1, 2.75];
  const cases: [string, (a: MgArray) => MgArray, (v: number) => number, number[]?][] = [
    ["exp", mg.exp, Math.exp],
    ["expm1", mg.expm1, Math.expm1],
    ["sin", mg.sin, Math.sin],
    ["cos", mg.cos, Math.cos],
    ["tan", mg.tan, Math.tan],
    ["tanh", mg.tanh, Math.tanh],
    ["sinh", mg.sinh, Math.sinh],
    ["cosh", mg.cosh, Math.cosh],
    ["arctan", mg.arctan, Math.atan],
    ["arcsinh", mg.arcsinh, Math.asinh],
    ["sigmoid", mg.sigmoid, (v) => 1 / (1 + Math.exp(-v))],
    ["abs", mg.abs, Math.abs],
    ["square", mg.square, (v) => v * v],
    ["floor", mg.floor, Math.floor],
    ["ceil", mg.ceil, Math.ceil],
    ["log", mg.log, Math.log, [0.1, 0.5, 1, 2, 10]],
    ["log2", mg.log2, Math.log2, [0.1, 0.5, 1, 2, 10]],
    ["log10", mg.log10, Math.log10, [0.1, 0.5, 1, 2, 10]],
    ["log1p", mg.log1p, Math.log1p, [-0.5, 0, 1e-8, 2]],
    ["sqrt", mg.sqrt, Math.sqrt, [0, 0.25, 2, 9]],
    ["rsqrt", mg.rsqrt, (v) => 1 / Math.sqrt(v), [0.25, 2, 9]],
    ["arcsin", mg.arcsin, Math.asin, [-0.9, 0, 0.5]],
    ["arccos", mg.arccos, Math.acos, [-0.9, 0, 0.5]],
    ["arctanh", mg.arctanh, Math.atanh, [-0.9, 0, 0.5]],
    ["arccosh", mg.arccosh, Math.acosh, [1, 1.5, 10]],
  ];
  for (const [name, op, ref, input] of cases) {
    test(`${name} in float32 and float64`, () => {
      const xs = input ?? x;
      // float32: the input is rounded to float32 first, then the float64 result rounded once
      // (a reference formula may differ from ours in the last float64 bit, hence the tolerance)
      vals(op(mg.array(xs, mg.float32))).forEach((v, i) => expect(v).toBeCloseTo(f32(ref(f32(xs[i]!))), 6));
      vals(op(mg.array(xs, mg.float64))).forEach((v, i) => {
        const want = ref(xs[i]!);
        expect(Math.abs(v - want)).toBeLessThanOrEqual(2e-16 * Math.max(1, Math.abs(want)));
      });
    });
  }
  test("erf and erfinv against tabulated values", () => {
    const e = vals(mg.erf(mg.array([0, 0.5, 1, 2, 3.5], mg.float64)));
    const expected = [0, 0.5204998778130465, 0.8427007929497149, 0.9953222650189527, 0.9999992569016276];
    e.forEach((v, i) => expect(v).toBeCloseTo(expected[i]!, 14));
    const back = vals(mg.erf(mg.erfinv(mg.array([-0.99, -0.3, 0, 0.6, 0.999], mg.float64))));
    back.forEach((v, i) => expect(v).toBeCloseTo([-0.99, -0.3, 0, 0.6, 0.999][i]!, 12));
  });
  test("integer and bool inputs of float functions compute in float32", () => {
    expect(mg.exp(mg.array([1, 2])).dtype).toBe(mg.float32);
    expect(mg.sqrt(mg.array([true])).dtype).toBe(mg.float32);
    expect(mg.exp(mg.array([1], mg.float16)).dtype).toBe(mg.float16);
  });
  test("float16 and bfloat16 results are rounded once to the dtype", () => {
    expect(vals(mg.exp(mg.array([1.5], mg.float16)))).toEqual([Math.f16round(Math.exp(1.5))]);
    expect(mg.exp(mg.array([1.5], mg.bfloat16)).item()).toBe(mg.array([Math.exp(1.5)], mg.bfloat16).item());
  });
  test("round: half to even, with decimals", () => {
    expect(vals(mg.round(mg.array([0.5, -0.5, 1.5, -1.5, -21.03, 19.98])))).toEqual([0, -0, 2, -2, -21, 20]);
    expect(Object.is(vals(mg.round(mg.array([-0.5])))[0], -0)).toBe(true);
    // x·100 then rint then /100 (NumPy's way back; MLX multiplies by a float32 0.01, an ulp off):
    // -2.675·100 is exactly -267.5 in float64
    expect(vals(mg.round(mg.array([1.2345, -2.675], mg.float64), 2))).toEqual([1.23, -2.68]);
    expect(mg.round(mg.array([3, 4], mg.int32)).tolist()).toEqual([3, 4]);
    // Integers round too when decimals < 0 (MLX 0.32.4: [0, 20, 20, 0]; 25·0.1 is 2.5 in float32).
    expect(mg.round(mg.array([5, 15, 25, -5], mg.int32), -1).tolist()).toEqual([0, 20, 20, 0]);
    expect(mg.round(mg.array([5, 15], mg.uint8), -1).dtype).toBe(mg.uint8);
    expect(mg.round(mg.array([7]), 1).tolist()).toEqual([7]);
  });
  test("sign, negative and abs on integers keep the dtype; negative of bool throws", () => {
    expect(mg.sign(mg.array([-3, 0, 5], mg.int8)).tolist()).toEqual([-1, 0, 1]);
    expect(mg.negative(mg.array([-128], mg.int8)).tolist()).toEqual([-128]); // wraps as C
    expect(mg.abs(mg.array([-7n, 3n], mg.int64)).tolist()).toEqual([7n, 3n]);
    expect(() => mg.negative(mg.array([true]))).toThrow("[negative] Not supported for bool");
  });
  test("sign of NaN and -0 is +0, as MLX's (x > 0) - (x < 0), on both devices", () => {
    for (const device of [mg.cpu, mg.gpu]) {
      for (const dtype of [mg.float32, mg.float16, mg.bfloat16]) {
        const s = mg.sign(mg.array([NaN, -0.5, -0.0, Infinity, -Infinity], dtype), { stream: device }).tolist() as number[];
        expect(s).toEqual([0, -1, 0, 1, -1]);
        expect(Object.is(s[2], 0) && Object.is(s[0], 0)).toBe(true);
      }
    }
  });
  test("complex unary ops", () => {
    const z = mg.array([{ re: 1, im: 1 }]);
    const e = mg.exp(z).tolist() as { re: number; im: number }[];
    expect(e[0]!.re).toBeCloseTo(Math.E * Math.cos(1), 6);
    expect(e[0]!.im).toBeCloseTo(Math.E * Math.sin(1), 6);
    expect(mg.abs(z).dtype).toBe(mg.float32);
    expect(mg.abs(z).item()).toBe(f32(Math.SQRT2));
    expect((mg.conjugate(z).item() as { im: number }).im).toBe(-1);
    expect(mg.real(z).item()).toBe(1);
    expect(mg.imag(z).item()).toBe(1);
  });
});

describe("binary ops", () => {
  test("arithmetic with broadcasting", () => {
    const a = mg.array([[1, 2, 3], [4, 5, 6]]);
    const b = mg.array([10, 20, 30]);
    expect(mg.add(a, b).tolist()).toEqual([[11, 22, 33], [14, 25, 36]]);
    expect(mg.subtract(b, a).tolist()).toEqual([[9, 18, 27], [6, 15, 24]]);
    expect(mg.multiply(a, mg.array([[2], [3]])).tolist()).toEqual([[2, 4, 6], [12, 15, 18]]);
    expect(mg.divide(a, 2).tolist()).toEqual([[0.5, 1, 1.5], [2, 2.5, 3]]);
    expect(mg.divide(a, 2).dtype).toBe(mg.float32);
    expect(() => mg.add(mg.zeros([2, 3]), mg.zeros([4]))).toThrow("[add] Shapes (2,3) and (4,) cannot be broadcast.");
  });
  test("floored divmod on MLX's mixed-sign case, and floor_divide / remainder agree", () => {
    const av = [-7, 7, -7, 7, -1, 1, -5, 5, 6, -6];
    const bv = [2, 2, -2, -2, 3, -3, 3, -3, 3, 3];
    const [q, r] = mg.divmod(mg.array(av), mg.array(bv));
    expect(q.tolist()).toEqual([-4, 3, 3, -4, -1, -1, -2, -2, 2, -2]);
    expect(r.tolist()).toEqual([1, 1, -1, -1, 2, -2, 1, -1, 0, 0]);
    expect(mg.floorDivide(mg.array(av), mg.array(bv)).tolist()).toEqual(q.tolist());
    expect(mg.remainder(mg.array(av), mg.array(bv)).tolist()).toEqual(r.tolist());
    expect(mg.arrayEqual(mg.add(mg.multiply(q, mg.array(bv)), r), mg.array(av)).item()).toBe(true);
    // floats: floor of the true quotient, remainder with the divisor's sign
    expect(mg.remainder(mg.array([-5.5, 5.5], mg.float64), 2).tolist()).toEqual([0.5, 1.5]);
    expect(mg.floorDivide(mg.array([-5.5], mg.float64), 2).tolist()).toEqual([-3]);
    // 64-bit integers stay exact beyond 2^53
    const big = 2n ** 62n + 3n;
    expect(mg.floorDivide(mg.array([big], mg.int64), mg.array([-2n], mg.int64)).tolist()).toEqual([-(2n ** 61n) - 2n]);
  });
  test("integer arithmetic wraps like C; int32 multiply is exact", () => {
    expect(mg.add(mg.array([250], mg.uint8), mg.array([10], mg.uint8)).tolist()).toEqual([4]);
    expect(mg.multiply(mg.array([123456789], mg.int32), mg.array([987654321], mg.int32)).tolist()).toEqual([Number(BigInt.asIntN(32, 123456789n * 987654321n))]);
    expect(mg.multiply(mg.array([2n ** 62n], mg.int64), mg.array([4n], mg.int64)).tolist()).toEqual([0n]);
  });
  test("power: integer exponents, negative exponents of integers give 0, floats via pow", () => {
    expect(mg.power(mg.array([2, 3, -2]), mg.array([10, 0, 3])).tolist()).toEqual([1024, 1, -8]);
    expect(mg.power(mg.array([2]), mg.array([-1])).tolist()).toEqual([0]);
    expect(mg.power(mg.array([2.5], mg.float64), 1.5).tolist()).toEqual([2.5 ** 1.5]);
  });
  test("maximum/minimum propagate NaN from either side", () => {
    expect(Number.isNaN(mg.maximum(NaN, 0).item() as number)).toBe(true);
    expect(Number.isNaN(mg.maximum(0, NaN).item() as number)).toBe(true);
    expect(Number.isNaN(mg.minimum(mg.array([NaN]), 1).item() as number)).toBe(true);
    expect(mg.maximum(mg.array([1, 5]), mg.array([3, 2])).tolist()).toEqual([3, 5]);
  });
  test("logaddexp is stable and handles infinities", () => {
    expect(mg.logaddexp(mg.array([1000], mg.float64), 1000).item()).toBe(1000 + Math.log(2));
    expect(mg.logaddexp(-Infinity, mg.array([-Infinity])).item()).toBe(-Infinity);
    expect(mg.logaddexp(mg.array([2], mg.float64), 3).item()).toBeCloseTo(Math.log(Math.exp(2) + Math.exp(3)), 14);
  });
  test("comparisons, logical and bitwise ops", () => {
    const a = mg.array([1, 2, 3]);
    expect(mg.less(a, 2).tolist()).toEqual([true, false, false]);
    expect(mg.greaterEqual(a, 2).dtype).toBe(mg.bool_);
    expect(mg.logicalAnd(mg.array([true, false]), mg.array([true, true])).tolist()).toEqual([true, false]);
    expect(mg.logicalXor(mg.array([1, 0]), mg.array([1, 1])).tolist()).toEqual([false, true]);
    expect(mg.bitwiseXor(mg.array([5], mg.uint8), mg.array([3], mg.uint8)).tolist()).toEqual([6]);
    expect(mg.leftShift(mg.array([1], mg.int8), mg.array([7], mg.int8)).tolist()).toEqual([-128]);
    expect(mg.rightShift(mg.array([-8], mg.int32), 1).tolist()).toEqual([-4]);
    expect(mg.rightShift(mg.array([0xf0000000], mg.uint32), 4).tolist()).toEqual([0x0f000000]);
    expect(mg.leftShift(mg.array([true]), mg.array([true])).dtype).toBe(mg.uint8);
    expect(mg.bitwiseInvert(mg.array([0], mg.uint8)).tolist()).toEqual([255]);
    expect(() => mg.bitwiseAnd(mg.array([1.5]), mg.array([1]))).toThrow("[bitwise_and] Only allowed on integer or boolean types");
  });
});

describe("ternary, predicates and comparisons of whole arrays", () => {
  test("where and clip", () => {
    expect(mg.where(mg.array([true, false, true]), mg.array([1, 2, 3]), 0).tolist()).toEqual([1, 0, 3]);
    expect(mg.where(mg.array([1, 0]), 1.5, mg.array([2, 3], mg.float16)).dtype).toBe(mg.float16);
    expect(mg.clip(mg.array([-2, 0, 5]), -1, 3).tolist()).toEqual([-1, 0, 3]);
    expect(mg.clip(mg.array([-2, 5]), null, 1).tolist()).toEqual([-2, 1]);
    expect(() => mg.clip(mg.array([1]), null, null)).toThrow("[clip]");
  });
  test("isnan, isinf, isfinite, isposinf, isneginf, nanToNum", () => {
    const x = mg.array([NaN, Infinity, -Infinity, 1]);
    expect(mg.isnan(x).tolist()).toEqual([true, false, false, false]);
    expect(mg.isinf(x).tolist()).toEqual([false, true, true, false]);
    expect(mg.isfinite(x).tolist()).toEqual([false, false, false, true]);
    expect(mg.isposinf(x).tolist()).toEqual([false, true, false, false]);
    expect(mg.isneginf(x).tolist()).toEqual([false, false, true, false]);
    expect(mg.isnan(mg.array([1, 2])).tolist()).toEqual([false, false]);
    expect(mg.nanToNum(x).tolist()).toEqual([0, f32(3.4028234663852886e38), -f32(3.4028234663852886e38), 1]);
    expect(mg.nanToNum(x, 5, 100, -100).tolist()).toEqual([5, 100, -100, 1]);
    expect(mg.nanToNum(mg.array([Infinity], mg.float16)).tolist()).toEqual([65504]);
  });
  test("isclose, allclose and arrayEqual", () => {
    expect(mg.isclose(mg.array([1, 1.00001, Infinity, -Infinity, NaN]), mg.array([1.000001, 1.1, Infinity, Infinity, NaN])).tolist()).toEqual([true, false, true, false, false]);
    expect(mg.isclose(mg.array([NaN]), mg.array([NaN]), 1e-5, 1e-8, { equalNan: true }).tolist()).toEqual([true]);
    expect(mg.allclose(mg.array([1, 2]), mg.array([1, 2.00001])).item()).toBe(true);
    expect(mg.allclose(mg.array([1, 2]), mg.array([1, 2.1])).item()).toBe(false);
    expect(mg.arrayEqual(mg.array([1, 2]), mg.array([1, 2], mg.float32)).item()).toBe(true);
    expect(mg.arrayEqual(mg.array([1, 2]), mg.array([[1, 2]])).item()).toBe(false);
    expect(mg.arrayEqual(mg.array([NaN]), mg.array([NaN])).item()).toBe(false);
    expect(mg.arrayEqual(mg.array([NaN]), mg.array([NaN]), true).item()).toBe(true);
  });
  test("astype converts values; view reinterprets bits", () => {
    expect(mg.astype(mg.array([1.7, -1.7, 300.2]), mg.int32).tolist()).toEqual([1, -1, 300]);
    expect(mg.astype(mg.array([300]), mg.uint8).tolist()).toEqual([44]);
    expect(mg.astype(mg.array([0, 2, NaN]), mg.bool_).tolist()).toEqual([false, true, true]);
    expect(mg.astype(mg.array([{ re: 3, im: 4 }]), mg.float32).tolist()).toEqual([3]);
    expect(mg.astype(mg.array([70000]), mg.float16).tolist()).toEqual([Infinity]);
  });
});

describe("array-API spellings", () => {
  test("acos … atan2, pow and the bitwise shifts are MLX's functions under their other names", () => {
    const pairs: [unknown, unknown][] = [
      [mg.acos, mg.arccos], [mg.acosh, mg.arccosh], [mg.asin, mg.arcsin], [mg.asinh, mg.arcsinh],
      [mg.atan, mg.arctan], [mg.atanh, mg.arctanh], [mg.atan2, mg.arctan2], [mg.pow, mg.power],
      [mg.bitwiseLeftShift, mg.leftShift], [mg.bitwiseRightShift, mg.rightShift],
    ];
    for (const [alias, fn] of pairs) expect(alias).toBe(fn);
  });
  test("their values against float64 references", () => {
    const x = [-0.75, 0, 0.5];
    const close = (a: MgArray, ref: number[]) => (a.tolist() as number[]).forEach((v, i) => expect(v).toBeCloseTo(ref[i]!, 6));
    close(mg.acos(mg.array(x)), x.map(Math.acos));
    close(mg.asin(mg.array(x)), x.map(Math.asin));
    close(mg.atan(mg.array(x)), x.map(Math.atan));
    close(mg.atanh(mg.array(x)), x.map(Math.atanh));
    close(mg.asinh(mg.array(x)), x.map(Math.asinh));
    close(mg.acosh(mg.array([1, 2.5])), [0, Math.acosh(2.5)]);
    close(mg.atan2(mg.array([1, -1]), mg.array([-2, -2])), [Math.atan2(1, -2), Math.atan2(-1, -2)]);
    expect(mg.pow(mg.array([2, 3]), 3).tolist()).toEqual([8, 27]);
    expect(mg.bitwiseLeftShift(mg.array([1], mg.uint8), 7).tolist()).toEqual([128]);
    expect(mg.bitwiseRightShift(mg.array([-8]), 2).tolist()).toEqual([-2]);
    expect(() => mg.acos(mg.array([{ re: 1, im: 1 }]))).toThrow("[arccos] Not supported for complex64.");
  });
});

// A weak scalar next to an evaluated array becomes a cached, shared stride-0 view of the scalar's
// constant (one node per op instead of a Broadcast node and the op); next to a lazy or traced
// operand it stays a Broadcast node, which transforms and shapeless compilation rely on.
describe("scalar operands", () => {
  for (const device of [mg.cpu, mg.gpu]) {
    test(`next to an evaluated array: no Broadcast node, right values, donation-safe (${device.type})`, () => {
      const s = { stream: device };
      const x = mg.array([[1.5, -2], [3, 4.25], [0, -0.5]]);
      const i = mg.array([1, 2, 3], mg.int32);
      const one = mg.array([7]);
      mg.eval(x, i, one);
      let outs: MgArray[] = [];
      const recs = mg.trace(() => {
        outs = [mg.add(x, 1, s), mg.subtract(1, x, s), mg.multiply(i, 3, s), mg.maximum(x, 0, s), mg.add(one, 2, s)];
        mg.eval(outs);
      });
      expect(recs.map((r) => r.primitives.join("+")).filter((p) => p.includes("Broadcast"))).toEqual([]);
      expect(outs[0]!.tolist()).toEqual([[2.5, -1], [4, 5.25], [1, 0.5]]);
      expect(outs[1]!.tolist()).toEqual([[-0.5, 3], [-2, -3.25], [1, 1.5]]);
      expect(outs[2]!.tolist()).toEqual([3, 6, 9]);
      expect(outs[3]!.tolist()).toEqual([[1.5, 0], [3, 4.25], [0, 0]]);
      expect(outs[4]!.tolist()).toEqual([9]);
      // the constant's view is shared and reused; the next op with it still reads 2, not 9
      expect(mg.add(one, 2, s).tolist()).toEqual([9]);
      expect(mg.add(mg.array([0.5]), 2, s).tolist()).toEqual([2.5]);
      expect(outs[0]!.node === null || outs[0]!.node.inputs[1] === mg.add(x, 1, s).node?.inputs[1]).toBe(true);
    });
  }

  test("next to a lazy operand, under grad and in shapeless compile: a Broadcast node, right values", () => {
    const x = mg.array([1, 2, 3], mg.float32);
    const lazy = mg.exp(x);
    const recs = mg.trace(() => mg.eval(mg.add(lazy, 1)));
    expect(recs.some((r) => r.primitives.includes("Broadcast"))).toBe(true);
    const g = mg.grad((a: MgArray) => mg.sum(mg.multiply(a, 3)))(x);
    expect(g.tolist()).toEqual([3, 3, 3]);
    const f = mg.compile((a: MgArray) => mg.multiply(mg.add(a, 1), 2), { shapeless: true });
    expect(f(mg.array([1, 2])).tolist()).toEqual([4, 6]);
    expect(f(mg.array([1, 2, 3, 4])).tolist()).toEqual([4, 6, 8, 10]);
  });
});
