// The precision policy: set/get, validation, scoping (nested, async-safe, setPrecision inside a
// scope changes only that scope).
import { afterEach, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";

afterEach(() => {
  mg.setPrecision({ matmul: "highest", accumulate16: "float32" });
});

test("defaults, setPrecision returns the previous policy", () => {
  expect(mg.getPrecision()).toEqual({ matmul: "highest", accumulate16: "float32" });
  const prev = mg.setPrecision({ matmul: "high" });
  expect(prev).toEqual({ matmul: "highest", accumulate16: "float32" });
  expect(mg.getPrecision()).toEqual({ matmul: "high", accumulate16: "float32" });
  expect(mg.setPrecision(prev)).toEqual({ matmul: "high", accumulate16: "float32" });
  expect(mg.getPrecision()).toEqual(prev);
});

test("bad policies are tagged errors", () => {
  expect(() => mg.setPrecision({ matmul: "tf32" as "high" })).toThrow('[set_precision] matmul must be "highest" or "high", got "tf32".');
  expect(() => mg.setPrecision({ accumulate16: "half" as "native" })).toThrow("[set_precision] accumulate16 must be");
  expect(() => mg.withPrecision({ fast: true } as never, () => 0)).toThrow("[with_precision] unknown policy field 'fast'");
  expect(mg.getPrecision()).toEqual({ matmul: "highest", accumulate16: "float32" });
});

test("withPrecision scopes, nests, and restores", () => {
  const inner = mg.withPrecision({ accumulate16: "native" }, () => {
    expect(mg.getPrecision()).toEqual({ matmul: "highest", accumulate16: "native" });
    return mg.withPrecision({ matmul: "high" }, () => mg.getPrecision());
  });
  expect(inner).toEqual({ matmul: "high", accumulate16: "native" });
  expect(mg.getPrecision()).toEqual({ matmul: "highest", accumulate16: "float32" });
});

test("setPrecision inside a scope changes that scope only", () => {
  mg.withPrecision({ matmul: "high" }, () => {
    const prev = mg.setPrecision({ accumulate16: "native" });
    expect(prev).toEqual({ matmul: "high", accumulate16: "float32" });
    expect(mg.getPrecision()).toEqual({ matmul: "high", accumulate16: "native" });
  });
  expect(mg.getPrecision()).toEqual({ matmul: "highest", accumulate16: "float32" });
});

test("async scopes do not leak into each other", async () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const seen: string[] = [];
  await Promise.all([
    mg.withPrecision({ accumulate16: "native" }, async () => {
      await sleep(5);
      seen.push(`a:${mg.getPrecision().accumulate16}`);
      await sleep(10);
      seen.push(`a:${mg.getPrecision().accumulate16}`);
    }),
    mg.withPrecision({ accumulate16: "float32" }, async () => {
      await sleep(8);
      seen.push(`b:${mg.getPrecision().accumulate16}`);
    }),
  ]);
  expect(seen.sort()).toEqual(["a:native", "a:native", "b:float32"]);
  expect(mg.getPrecision().accumulate16).toBe("float32");
});

test("deviceInfo reports the policy in effect", () => {
  mg.withPrecision({ matmul: "high" }, () => {
    expect(mg.deviceInfo().precision).toEqual({ matmul: "high", accumulate16: "float32" });
  });
});

test('matmul "high" is recorded in the GEMM trace: no TF32/NAX kernel exists, the product is IEEE fp32', () => {
  const a = mg.random.normal([16, 16]);
  const b = mg.random.normal([16, 16]);
  mg.eval(a, b);
  const high = mg.withPrecision({ matmul: "high" }, () => mg.matmul(a, b, { stream: mg.gpu }));
  const dflt = mg.matmul(a, b, { stream: mg.gpu });
  const recHigh = mg.trace(() => high).find((r) => r.primitives.includes("Matmul"))!;
  const recDefault = mg.trace(() => dflt).find((r) => r.primitives.includes("Matmul"))!;
  expect(recHigh.precision).toBe("IEEE fp32");
  expect(recHigh.notes.join(" ")).toContain('matmul="high" allows TF32-class/NAX kernels; metalgrad has none');
  expect(recDefault.notes.join(" ")).not.toContain("TF32");
  // identical numbers: the same kernel ran
  expect(mg.arrayEqual(high, dflt).item()).toBe(true);
});
