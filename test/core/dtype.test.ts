import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import {
  bfloat16BitsFromNumber, isIntegerLiteral, numberFromBfloat16Bits, promoteTypes, roundToDtype, scalarDtype, weakScalarDtype,
} from "../../ts/core/dtype.ts";

describe("dtypes", () => {
  test("the 14 dtypes and their sizes", () => {
    const sizes = Object.fromEntries(mg.ALL_DTYPES.map((d) => [d.name, d.size]));
    expect(sizes).toEqual({
      bool: 1, uint8: 1, uint16: 2, uint32: 4, uint64: 8, int8: 1, int16: 2, int32: 4, int64: 8,
      float16: 2, float32: 4, float64: 8, bfloat16: 2, complex64: 8,
    });
  });

  test("promotion follows MLX's table", () => {
    expect(promoteTypes(mg.int64, mg.uint64)).toBe(mg.float32);
    expect(promoteTypes(mg.float16, mg.int32)).toBe(mg.float16);
    expect(promoteTypes(mg.bfloat16, mg.float16)).toBe(mg.float32);
    expect(promoteTypes(mg.uint32, mg.int8)).toBe(mg.int64);
    expect(promoteTypes(mg.uint8, mg.int8)).toBe(mg.int16);
    expect(promoteTypes(mg.bool_, mg.bool_)).toBe(mg.bool_);
    expect(promoteTypes(mg.float64, mg.complex64)).toBe(mg.complex64);
    expect(promoteTypes(mg.float64, mg.bfloat16)).toBe(mg.float64);
    // symmetric for every pair
    for (const a of mg.ALL_DTYPES) for (const b of mg.ALL_DTYPES) expect(promoteTypes(a, b)).toBe(promoteTypes(b, a));
  });

  test("weak scalars keep the array's dtype when they fit its kind", () => {
    expect(mg.multiply(mg.array([1, 2], mg.int8), 0).dtype).toBe(mg.int8);
    expect(mg.multiply(mg.array([1, 2], mg.float16), 1.5).dtype).toBe(mg.float16);
    expect(mg.multiply(mg.array([1, 2], mg.int32), 1.5).dtype).toBe(mg.float32);
    expect(mg.multiply(mg.array([true, false]), 0).dtype).toBe(mg.int32);
    expect(mg.add(mg.array([1], mg.bfloat16), true).dtype).toBe(mg.bfloat16);
    expect(mg.add(mg.array([1], mg.uint8), 7n).dtype).toBe(mg.uint8);
    expect(() => weakScalarDtype(300, mg.int8, "add")).toThrow("[add] Converting 300 to int8 would result in overflow.");
  });

  test("literal defaults", () => {
    expect(scalarDtype(1)).toBe(mg.int32);
    expect(scalarDtype(1.5)).toBe(mg.float32);
    expect(scalarDtype(true)).toBe(mg.bool_);
    expect(scalarDtype(5n)).toBe(mg.int64);
    expect(scalarDtype(2 ** 40)).toBe(mg.int64);
    expect(mg.array([1, 2.5]).dtype).toBe(mg.float32);
    expect(mg.array([[true], [false]]).dtype).toBe(mg.bool_);
  });

  test("category lattice", () => {
    expect(mg.issubdtype(mg.int8, mg.integer)).toBe(true);
    expect(mg.issubdtype(mg.int8, mg.signedinteger)).toBe(true);
    expect(mg.issubdtype(mg.uint8, mg.signedinteger)).toBe(false);
    expect(mg.issubdtype(mg.bfloat16, mg.floating)).toBe(true);
    expect(mg.issubdtype(mg.complex64, mg.inexact)).toBe(true);
    expect(mg.issubdtype(mg.complex64, mg.floating)).toBe(false);
    expect(mg.issubdtype(mg.bool_, mg.number)).toBe(false);
    expect(mg.issubdtype(mg.bool_, mg.generic)).toBe(true);
    expect(mg.issubdtype(mg.float64, mg.float32)).toBe(false);
    expect(mg.issubdtype(mg.signedinteger, mg.integer)).toBe(true);
    expect(mg.issubdtype(mg.signedinteger, mg.floating)).toBe(false);
    expect(mg.isdtype(mg.int16, "signed integer")).toBe(true);
    expect(mg.isdtype(mg.float16, ["integral", "real floating"])).toBe(true);
    expect(() => mg.isdtype(mg.int16, "whole" as "bool")).toThrow("[isdtype] Unknown data type kind");
  });

  test("canCast and resultType", () => {
    expect(mg.canCast(mg.int8, mg.int16)).toBe(true);
    expect(mg.canCast(mg.int16, mg.int8)).toBe(false);
    expect(mg.canCast(mg.uint64, mg.int64)).toBe(false);
    expect(mg.resultType(mg.array([1], mg.uint8), mg.int8, mg.float16)).toBe(mg.float16);
  });

  test("finfo and iinfo", () => {
    const f16 = mg.finfo(mg.float16);
    expect([f16.max, f16.min, f16.eps, f16.smallestNormal, f16.bits, f16.resolution]).toEqual([65504, -65504, 2 ** -10, 2 ** -14, 16, 0.001]);
    const bf = mg.finfo(mg.bfloat16);
    expect(bf.eps).toBe(2 ** -7);
    expect(bf.max).toBe(numberFromBfloat16Bits(0x7f7f));
    expect(mg.finfo(mg.float32).max).toBe(Math.fround(3.4028234663852886e38));
    expect(mg.finfo(mg.complex64).dtype).toBe(mg.float32);
    expect(() => mg.finfo(mg.int32)).toThrow("[finfo] dtype int32 is not inexact.");
    expect(mg.iinfo(mg.int8).min).toBe(-128);
    expect(mg.iinfo(mg.uint64).max).toBe(2n ** 64n - 1n);
  });

  test("bfloat16 rounds to nearest even", () => {
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even mantissa (1.0)
    expect(bfloat16BitsFromNumber(1 + 2 ** -8)).toBe(0x3f80);
    // 1 + 3·2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even)
    expect(bfloat16BitsFromNumber(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(bfloat16BitsFromNumber(Infinity)).toBe(0x7f80);
    expect(Number.isNaN(numberFromBfloat16Bits(bfloat16BitsFromNumber(NaN)))).toBe(true);
    expect(roundToDtype(65520, mg.float16)).toBe(Infinity);
    expect(roundToDtype(300, mg.uint8)).toBe(44);
  });
});

describe("dtype arguments from untyped callers", () => {
  // A string where a Dtype belongs used to reach the allocator as a NaN byte count; each entry
  // point now names itself and what it got.
  const bad = "float32" as unknown as mg.Dtype;
  const cases: [string, () => unknown][] = [
    ["zeros", () => mg.zeros([2], bad)],
    ["ones", () => mg.ones([2], bad)],
    ["full", () => mg.full([2], 1, bad)],
    ["zeros_like", () => mg.zerosLike(mg.ones([2]), bad)],
    ["array", () => mg.array([1, 2], bad)],
    ["arange", () => mg.arange(0, 3, 1, bad)],
    ["linspace", () => mg.linspace(0, 1, 3, true, bad)],
    ["eye", () => mg.eye(2, null, 0, bad)],
    ["tri", () => mg.tri(2, 2, 0, bad)],
    ["astype", () => mg.ones([2]).astype(bad)],
    ["view", () => mg.view(mg.ones([2]), bad)],
  ];
  for (const [op, call] of cases) {
    test(op, () => {
      expect(call).toThrow(`[${op}] Expected a dtype such as mg.float32 or mg.int32, got the string "float32".`);
    });
  }

  test("issubdtype takes dtypes and categories only", () => {
    expect(() => mg.issubdtype(bad, mg.floating)).toThrow('[issubdtype] Expected a dtype or a dtype category (mg.floating, ...), got the string "float32".');
    expect(mg.issubdtype(mg.float16, mg.floating)).toBe(true);
  });
});

describe("JS numbers as literals (MLX's Python-scalar rule where JavaScript can follow it)", () => {
  test("integral numbers: int32 within its range, int64 while exact in a double, float32 beyond", () => {
    const cases: [number, mg.Dtype][] = [
      [0, mg.int32], [2147483647, mg.int32], [-2147483648, mg.int32], [2147483648, mg.int64], [-2147483649, mg.int64],
      [2 ** 40, mg.int64], [2 ** 53, mg.int64], [-(2 ** 53), mg.int64], [2 ** 53 + 2, mg.float32], [-(2 ** 54), mg.float32],
      [1e20, mg.float32], [-1e20, mg.float32], [0.5, mg.float32], [Number.MAX_VALUE, mg.float32],
    ];
    for (const [x, d] of cases) {
      expect(scalarDtype(x), String(x)).toBe(d);
      expect(isIntegerLiteral(x), String(x)).toBe(d !== mg.float32);
      expect(mg.array(x).dtype, String(x)).toBe(d);
    }
    expect(scalarDtype(2n ** 60n)).toBe(mg.int64);
    // The value survives: int64 exactly, float32 rounded once.
    expect(mg.array(2 ** 53).item()).toBe(2n ** 53n);
    expect(mg.array(1e20).item()).toBe(Math.fround(1e20));
  });
  test("next to an array, an integral number beyond 2^53 is a weak float", () => {
    expect(weakScalarDtype(1e20, mg.int32)).toBe(mg.float32);
    expect(weakScalarDtype(1e20, mg.float16)).toBe(mg.float16);
    expect(weakScalarDtype(2 ** 40, mg.int64)).toBe(mg.int64);
    expect(() => weakScalarDtype(2 ** 40, mg.int32, "add")).toThrow("[add] Converting 1099511627776 to int32 would result in overflow.");
  });
});
