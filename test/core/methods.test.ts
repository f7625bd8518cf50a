// MgArray's JS integration (ts/core/methods.ts): console.log and Bun's inspector print MLX's repr,
// `${a}` too; JSON.stringify gives the nested list; a size-1 array converts to a number where JS
// asks for one, anything else is a TypeError; iteration walks the first axis, as MLX's.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";

describe("printing", () => {
  test("console.log, Bun.inspect and template strings show MLX's printed form", () => {
    const a = mg.array([[1, 2], [3, 4]], mg.float32);
    const repr = "array([[1, 2],\n       [3, 4]], dtype=float32)";
    expect(a.toString()).toBe(repr);
    expect(Bun.inspect(a)).toBe(repr);
    expect(`${a}`).toBe(repr);
    expect(Bun.inspect({ x: mg.array(1.5) })).toContain("x: array(1.5, dtype=float32)");
    const logged: unknown[] = [];
    const log = console.log;
    console.log = (...args: unknown[]) => void logged.push(args.map((v) => Bun.inspect(v)).join(" "));
    try {
      console.log(mg.array([true, false]));
    } finally {
      console.log = log;
    }
    expect(logged).toEqual(["array([True, False], dtype=bool)"]);
  });
});

describe("JSON", () => {
  test("toJSON is the nested list; 64-bit integers beyond 2^53 become decimal strings", () => {
    expect(JSON.stringify(mg.array([[1, 2], [3, 4]]))).toBe("[[1,2],[3,4]]");
    expect(JSON.stringify({ w: mg.array([0.5, -1], mg.float32), ok: mg.array(true) })).toBe('{"w":[0.5,-1],"ok":true}');
    expect(JSON.stringify(mg.array([2n ** 60n, 3n]))).toBe('["1152921504606846976",3]');
    expect(JSON.stringify(mg.array([-(2n ** 53n)]))).toBe(`[${-(2 ** 53)}]`);
    expect(JSON.stringify(mg.array([{ re: 1, im: -2 }]))).toBe('[{"re":1,"im":-2}]');
  });
});

describe("conversion to a JS number", () => {
  test("a size-1 array converts where JS asks for a number", () => {
    expect(+mg.array(2.5)).toBe(2.5);
    expect(mg.array([[3]]) as unknown as number * 2).toBe(6);
    expect(Number(mg.array(7n))).toBe(7);
    expect(Math.max(mg.array(4) as unknown as number, 1)).toBe(4);
    expect((mg.array(true) as unknown as number) + 1).toBe(2);
  });
  test("anything else is a TypeError, never string concatenation", () => {
    const a = mg.array([1, 2]);
    expect(() => +a).toThrow("[array] Only size-1 arrays convert to a JS number; this one is");
    expect(() => (a as unknown as string) + "!").toThrow("Use the ops or methods for arithmetic");
    expect(() => +mg.array({ re: 1, im: 1 })).toThrow("[array] A complex64 value has no JS number; use a.item() for {re, im}.");
    expect(() => +mg.zeros([0])).toThrow(TypeError);
  });
});

describe("iteration", () => {
  test("over the first axis, as MLX's", () => {
    const rows = [...mg.array([[1, 2], [3, 4], [5, 6]])].map((r) => r.tolist());
    expect(rows).toEqual([[1, 2], [3, 4], [5, 6]]);
    expect([...mg.array([7, 8])].map((r) => r.item())).toEqual([7, 8]);
    expect([...mg.zeros([0, 3])]).toEqual([]);
    expect(() => [...mg.array(1)]).toThrow("[iter] iteration over a 0-d array.");
  });
});
