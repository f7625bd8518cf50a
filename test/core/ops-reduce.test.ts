// Reductions and scans on the CPU device: values, MLX's output dtypes, NaN and empty-axis rules.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";

const m = () => mg.array([[1, 2, 3], [4, 5, 6]]);

describe("reductions", () => {
  test("sum/prod/max/min/mean over axes, keepdims", () => {
    expect(mg.sum(m()).item()).toBe(21);
    expect(mg.sum(m(), 0).tolist()).toEqual([5, 7, 9]);
    expect(mg.sum(m(), 1, true).tolist()).toEqual([[6], [15]]);
    expect(mg.sum(m(), [0, 1]).item()).toBe(21);
    expect(mg.sum(m(), -1).tolist()).toEqual([6, 15]);
    expect(mg.prod(m(), 1).tolist()).toEqual([6, 120]);
    expect(mg.max(m(), 0).tolist()).toEqual([4, 5, 6]);
    expect(mg.min(m()).item()).toBe(1);
    expect(mg.mean(m(), 1).tolist()).toEqual([2, 5]);
    expect(m().sum(0, true).shape).toEqual([1, 3]);
  });
  test("MLX's output dtypes: small ints widen to int32/uint32, floats keep theirs", () => {
    expect(mg.sum(mg.array([1, 2], mg.int8)).dtype).toBe(mg.int32);
    expect(mg.sum(mg.array([1, 2], mg.int16)).dtype).toBe(mg.int32);
    expect(mg.sum(mg.array([true, true])).dtype).toBe(mg.int32);
    expect(mg.sum(mg.array([true, true])).item()).toBe(2);
    expect(mg.sum(mg.array([1, 2], mg.uint8)).dtype).toBe(mg.uint32);
    expect(mg.sum(mg.array([1n], mg.int64)).dtype).toBe(mg.int64);
    expect(mg.sum(mg.array([1], mg.float16)).dtype).toBe(mg.float16);
    expect(mg.prod(mg.array([2], mg.int16)).dtype).toBe(mg.int32);
    expect(mg.max(mg.array([1, 2], mg.int8)).dtype).toBe(mg.int8);
    expect(mg.mean(mg.array([1, 2])).dtype).toBe(mg.float32);
    expect(mg.all(mg.array([1, 2])).dtype).toBe(mg.bool_);
  });
  test("exact 64-bit sums beyond 2^53", () => {
    const big = 2n ** 60n;
    expect(mg.sum(mg.array([big, big, 1n], mg.int64)).item()).toBe(2n ** 61n + 1n);
  });
  test("int8 sums do not overflow: the accumulator is int32", () => {
    expect(mg.sum(mg.array(new Array(100).fill(100), mg.int8)).item()).toBe(10000);
  });
  test("NaN propagates through max/min; any([0.0, -0.0]) is false", () => {
    expect(Number.isNaN(mg.max(mg.array([1, NaN, 3])).item() as number)).toBe(true);
    expect(Number.isNaN(mg.min(mg.array([NaN, 1])).item() as number)).toBe(true);
    expect(mg.any(mg.array([0.0, -0.0])).item()).toBe(false);
    expect(mg.all(mg.array([1, NaN])).item()).toBe(true);
  });
  test("empty axes: sum is 0, prod is 1, max/min throw", () => {
    expect(mg.sum(mg.zeros([0])).item()).toBe(0);
    expect(mg.prod(mg.zeros([0])).item()).toBe(1);
    expect(mg.sum(mg.zeros([2, 0]), 1).tolist()).toEqual([0, 0]);
    expect(() => mg.max(mg.zeros([0]))).toThrow("[max] Cannot max reduce over axis 0 with size 0.");
    expect(() => mg.min(mg.zeros([3, 0]), 1)).toThrow("[min] Cannot min reduce over axis 1 with size 0.");
    expect(mg.max(mg.zeros([0, 3]), 1).shape).toEqual([0]);
  });
  test("axis errors are tagged", () => {
    expect(() => mg.sum(m(), 2)).toThrow("[sum] Invalid axis 2 for array with 2 dimensions.");
    expect(() => mg.sum(m(), [0, -2])).toThrow("[sum] Duplicate axes detected in reduction.");
  });
  test("variance and std with ddof (MLX: var([1,2], ddof=2) is inf)", () => {
    expect(mg.variance(mg.array([1, 2, 3, 4])).item()).toBe(1.25);
    expect(mg.variance(mg.array([1, 2, 3, 4]), null, false, 1).item()).toBeCloseTo(5 / 3, 6);
    expect(mg.variance(mg.array([1, 2]), null, false, 2).item()).toBe(Infinity);
    expect(mg.std(mg.array([[1, 3], [5, 9]], mg.float64), 1).tolist()).toEqual([1, 2]);
    expect(mg.variance(mg.array([{ re: 1, im: 1 }, { re: -1, im: -1 }])).item()).toBe(2);
  });
  test("countNonzero", () => {
    expect(mg.countNonzero(mg.array([[0, 1], [2, 0]])).item()).toBe(2);
    expect(mg.countNonzero(mg.array([[0, 1], [2, 3]]), { axis: 1 }).tolist()).toEqual([1, 2]);
  });
  test("reductions of strided views", () => {
    const t = mg.transpose(mg.reshape(mg.arange(12), [3, 4]));
    expect(mg.sum(t, 1).tolist()).toEqual([12, 15, 18, 21]);
    const b = mg.broadcastTo(mg.array([1, 2]), [3, 2]);
    expect(mg.sum(b, 0).tolist()).toEqual([3, 6]);
  });
});

describe("scans", () => {
  test("cumsum/cumprod/cummax/cummin, reverse and exclusive", () => {
    const x = mg.array([3, 1, 4, 1, 5]);
    expect(mg.cumsum(x).tolist()).toEqual([3, 4, 8, 9, 14]);
    expect(mg.cumsum(x, 0, { reverse: true }).tolist()).toEqual([14, 11, 10, 6, 5]);
    expect(mg.cumsum(x, 0, { inclusive: false }).tolist()).toEqual([0, 3, 4, 8, 9]);
    expect(mg.cumsum(x, 0, { reverse: true, inclusive: false }).tolist()).toEqual([11, 10, 6, 5, 0]);
    expect(mg.cumprod(x).tolist()).toEqual([3, 3, 12, 12, 60]);
    expect(mg.cummax(x).tolist()).toEqual([3, 3, 4, 4, 5]);
    expect(mg.cummin(x, 0, { reverse: true }).tolist()).toEqual([1, 1, 1, 1, 5]);
    expect(mg.cumsum(mg.array([[1, 2], [3, 4]]), 1).tolist()).toEqual([[1, 3], [3, 7]]);
    expect(mg.cumsum(mg.array([[1, 2], [3, 4]])).tolist()).toEqual([1, 3, 6, 10]); // axis null flattens
    // surplus positional arguments are an error, as MLX's TypeError (issue 20: they were ignored)
    expect(() => (mg.cumsum as unknown as (...a: unknown[]) => unknown)(x, 0, true, true)).toThrow("[cumsum] takes at most 2 positional arguments (a, axis) and an options object, got 4.");
  });
  test("logcumsumexp is stable", () => {
    const r = mg.logcumsumexp(mg.array([1000, 1000, 1000], mg.float64)).tolist() as number[];
    expect(r[0]).toBe(1000);
    expect(r[1]).toBeCloseTo(1000 + Math.log(2), 12);
    expect(r[2]).toBeCloseTo(1000 + Math.log(3), 12);
  });
  test("scan dtypes: bool cumsum is int32; cumsum dtype option", () => {
    expect(mg.cumsum(mg.array([true, true])).tolist()).toEqual([1, 2]);
    expect(mg.cumsum(mg.array([true, true])).dtype).toBe(mg.int32);
    expect(mg.cumsum(mg.array([1, 2]), 0, { dtype: mg.float32 }).dtype).toBe(mg.float32);
  });
  test("the dtype option casts first, as MLX: a bool sum counts in int32, a bool product stays bool", () => {
    for (const stream of [mg.cpu, mg.gpu]) {
      const sumBool = mg.cumsum(mg.array([0, 2, 3]), null, { dtype: mg.bool_, stream });
      expect(sumBool.dtype).toBe(mg.int32);
      expect(sumBool.tolist()).toEqual([0, 1, 2]);
      const prodBool = mg.cumprod(mg.array([true, true, false, true]), null, { stream });
      expect(prodBool.dtype).toBe(mg.bool_);
      expect(prodBool.tolist()).toEqual([true, true, false, false]);
      expect(mg.cumprod(mg.array([true, true, false, true]), null, { inclusive: false, stream }).tolist()).toEqual([true, true, true, false]);
      expect(mg.cumprod(mg.array([1, 2, 0, 3]), null, { dtype: mg.bool_, reverse: true, stream }).tolist()).toEqual([false, false, false, true]);
      // Cast before summing: 1.5 + 2.5 + 3.5 in int32 is 1 + 2 + 3.
      expect(mg.cumsum(mg.array([1.5, 2.5, 3.5]), null, { dtype: mg.int32, stream }).tolist()).toEqual([1, 3, 6]);
      expect(mg.cumsum(mg.array([-1, 2]), null, { dtype: mg.uint8, stream }).tolist()).toEqual([255, 1]);
    }
    expect(() => mg.cumsum(mg.array([1]), null, { dtype: "float32" as unknown as mg.Dtype })).toThrow("[cumsum]");
    expect(() => mg.cummax(mg.array([1]), null, { dtype: mg.float32 } as mg.ScanOptions)).toThrow("[cummax] unknown option 'dtype'. Accepted options: 'axis', 'reverse', 'inclusive', 'stream'.");
  });
  test("cumulativeSum and cumulativeProd are cumsum and cumprod, as in MLX", () => {
    expect(mg.cumulativeSum).toBe(mg.cumsum);
    expect(mg.cumulativeProd).toBe(mg.cumprod);
    expect(mg.cumulativeSum(mg.array([[1, 2], [3, 4]]), 1, { reverse: true, dtype: mg.float32 }).tolist()).toEqual([[3, 2], [7, 4]]);
    expect(mg.cumulativeProd(mg.array([[1, 2], [3, 4]]), 0, { inclusive: false }).tolist()).toEqual([[1, 1], [1, 2]]);
  });
});

describe("minmax and median", () => {
  test("minmax is [min, max] with axis and keepdims", () => {
    const [lo, hi] = mg.minmax(mg.array([[3, 1], [0, 5]]), 1, true);
    expect(lo.tolist()).toEqual([[1], [0]]);
    expect(hi.tolist()).toEqual([[3], [5]]);
    const [a, b] = mg.minmax(mg.array([4, -2, 7]));
    expect([a.item(), b.item()]).toEqual([-2, 7]);
    expect(() => mg.minmax(mg.zeros([0]))).toThrow("[min] Cannot min reduce over axis 0 with size 0.");
    expect(() => mg.minmax(undefined as unknown as number)).toThrow("[minmax] Expected an array or a number");
  });

  /** The median of each row of a float64 matrix: sorted middle, or the mean of the two middles. */
  const medianRef = (row: number[]) => {
    if (row.some(Number.isNaN)) return NaN;
    const s = [...row].sort((p, q) => p - q);
    const n = s.length;
    return n % 2 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
  };
  test("median over axes against a sorted reference, odd and even counts, on both devices", () => {
    // Deterministic values with repeats: (7i mod 11) − 5.
    const vals = Array.from({ length: 60 }, (_, i) => ((7 * i) % 11) - 5 + (i % 3) * 0.25);
    for (const stream of [mg.cpu, mg.gpu]) {
      const x = mg.reshape(mg.array(vals, mg.float32), [3, 4, 5]);
      // axes (0, 2): 15 values per output; axis 1: 4 per output.
      const m02 = mg.median(x, [2, 0], false, { stream }).tolist() as number[];
      m02.forEach((v, j) => {
        const row: number[] = [];
        for (let i = 0; i < 3; i++) for (let k = 0; k < 5; k++) row.push(vals[i * 20 + j * 5 + k]!);
        expect(v).toBeCloseTo(medianRef(row), 6);
      });
      const m1 = mg.median(x, 1, true, { stream });
      expect(m1.shape).toEqual([3, 1, 5]);
      (m1.tolist() as number[][][]).forEach((plane, i) => plane[0]!.forEach((v, k) => {
        expect(v).toBeCloseTo(medianRef([0, 1, 2, 3].map((j) => vals[i * 20 + j * 5 + k]!)), 6);
      }));
      expect(mg.median(x, null, false, { stream }).item()).toBeCloseTo(medianRef(vals), 6);
    }
  });
  test("median dtypes: integers and bool give float32, floats keep theirs; a NaN makes the output NaN", () => {
    expect(mg.median(mg.array([100, 101], mg.int8)).tolist()).toBe(100.5);
    expect(mg.median(mg.array([true, false])).dtype).toBe(mg.float32);
    expect(mg.median(mg.array([1, 2], mg.float16)).dtype).toBe(mg.float16);
    expect(mg.median(mg.array([1, 2], mg.float64)).dtype).toBe(mg.float64);
    expect(mg.median(mg.array(5)).tolist()).toBe(5);
    // Odd count: the middle of [2, 3, NaN] after sorting would be 3; MLX gives NaN.
    expect(mg.median(mg.array([3, NaN, 2])).item()).toBeNaN();
    const rows = mg.median(mg.array([[NaN, 1, 2, 3], [1, 2, 3, 4]]), 1).tolist() as number[];
    expect(rows[0]).toBeNaN();
    expect(rows[1]).toBe(2.5);
    // (lo + hi) · 0.5 in float16 overflows, as in MLX.
    expect(mg.median(mg.array([65504, 65000], mg.float16)).item()).toBe(Infinity);
  });
  test("median's gradient goes to the middle element(s), the later one among ties (a stable sort)", () => {
    const g = (v: number[]) => mg.grad((x: mg.MgArray) => mg.median(x))(mg.array(v, mg.float32)).tolist();
    expect(g([3, 1, 2, 4])).toEqual([0.5, 0, 0.5, 0]);
    expect(g([3, 1, 1])).toEqual([0, 0, 1]);
  });
  test("median errors are tagged", () => {
    const x = mg.reshape(mg.arange(12), [3, 4]);
    expect(() => mg.median(mg.zeros([0]))).toThrow("[median] Cannot take median along empty axis.");
    expect(() => mg.median(mg.zeros([2, 0]), 1)).toThrow("[median] Cannot take median along empty axis.");
    expect(mg.median(mg.zeros([2, 0]), 0).shape).toEqual([0]);
    expect(() => mg.median(x, [1, -1])).toThrow("[median] Received duplicate axis.");
    expect(() => mg.median(x, 2)).toThrow("[median]");
    expect(() => mg.median(x, [])).toThrow("[median] axis must name at least one axis, got an empty list.");
    expect(() => mg.median(x, "1" as unknown as number)).toThrow("[median] axis must be an integer or a list of integers");
    expect(() => mg.median(null as unknown as number)).toThrow("[median] Expected an array or a number");
  });
});

describe("integer wraparound and complex ordering (exact references)", () => {
  test("int32 sums and products wrap like C even past 2^53", () => {
    const n = 1 << 23;
    const big = 2 ** 31 - 1;
    expect(mg.sum(mg.array(new Int32Array(n).fill(big))).item()).toBe(Number(BigInt.asIntN(32, BigInt(big) * BigInt(n))));
    expect(mg.prod(mg.array([65536, 65536, 3], mg.int32)).item()).toBe(0);
  });
  test("cumsum/cumprod on narrow integers wrap at their width on every step", () => {
    expect(mg.cumprod(mg.array([100, 100, 100, 100], mg.int16)).tolist()).toEqual([100n, 10000n, 1000000n, 100000000n].map((v) => Number(BigInt.asIntN(16, v))));
    expect(mg.cumsum(mg.array([200, 100], mg.uint8)).tolist()).toEqual([200, 44]);
  });
  test("exclusive cummax/cummin start from the dtype's extremes", () => {
    expect(mg.cummax(mg.array([-5, -7, 3], mg.int8), 0, { inclusive: false }).tolist()).toEqual([-128, -5, -5]);
    expect(mg.cummin(mg.array([5, 7], mg.uint16), 0, { inclusive: false }).tolist()).toEqual([65535, 5]);
    expect(mg.cummax(mg.array([false, true]), 0, { inclusive: false }).tolist()).toEqual([false, false]);
  });
  test("complex max/min order by real then imaginary part; any/all test both parts", () => {
    const z = mg.array([{ re: 1, im: 5 }, { re: 2, im: -1 }, { re: 2, im: 3 }]);
    expect(mg.max(z).item()).toEqual({ re: 2, im: 3 });
    expect(mg.min(z).item()).toEqual({ re: 1, im: 5 });
    expect(mg.any(mg.array([{ re: 0, im: 1 }])).item()).toBe(true);
    expect(mg.all(mg.array([{ re: 0, im: 1 }, { re: 0, im: 0 }])).item()).toBe(false);
  });
});

describe("arguments from untyped callers", () => {
  // JS callers often pass an options object where MLX has a positional argument: the options helper
  // (ts/core/options.ts) takes any defaulted parameter by name from it; what it cannot place is an error.
  const x = mg.array([[1.5, 2], [3, 4]]);
  test("an options object after the required arguments carries defaulted parameters by name", () => {
    expect(mg.sum(x, { keepdims: true }).tolist()).toEqual([[10.5]]);
    expect(mg.mean(x, { keepdims: true }).tolist()).toEqual([[2.625]]);
    expect(mg.sum(x, 0, { keepdims: true }).shape).toEqual([1, 2]);
    expect(mg.variance(x, 0, { ddof: 1 }).tolist()).toEqual([1.125, 2]);
    expect(mg.isclose(mg.array([NaN, 1]), mg.array([NaN, 1]), { equalNan: true }).tolist()).toEqual([true, true]);
    expect(() => mg.softmax(x, { precise: true, axes: 0 } as object)).toThrow("[softmax] unknown option 'axes' (did you mean 'axis'?). Accepted options: 'axis', 'precise', 'stream'.");
  });
  test("an axis that is neither an integer nor a list", () => {
    expect(() => mg.squeeze(x, "0" as unknown as number)).toThrow('[squeeze] axis must be an integer or a list of integers, got string 0.');
    expect(() => mg.sum(x, true as unknown as number)).toThrow("[sum] axis must be an integer or a list of integers");
  });
  test("var/std: keepdims a boolean, ddof an integer", () => {
    expect(() => mg.variance(x, 0, 1 as unknown as boolean)).toThrow("[var] keepdims must be a boolean, got number; the signature is var(a, axis, keepdims, ddof, options).");
    expect(() => mg.sum(x, 0, 1 as unknown as boolean)).toThrow("[sum] keepdims must be a boolean, got 1.");
    expect(() => mg.std(x, null, false, "1" as unknown as number)).toThrow("[std] ddof must be an integer, got string.");
    expect(mg.variance(x, null, false, 1).item()).toBeCloseTo(((1.5 - 2.625) ** 2 + (2 - 2.625) ** 2 + (3 - 2.625) ** 2 + (4 - 2.625) ** 2) / 3, 6);
  });
  test("isclose/allclose tolerances are numbers", () => {
    expect(() => mg.isclose(x, x, "1" as unknown as number)).toThrow("[isclose] rtol must be a number, got string");
    expect(() => mg.allclose(x, x, 1e-5, "0" as unknown as number)).toThrow("[allclose] atol must be a number, got string");
    expect(mg.isclose(mg.array([NaN, 1]), mg.array([NaN, 1]), 1e-5, 1e-8, { equalNan: true }).tolist()).toEqual([true, true]);
  });
  test("a missing or string operand names the op", () => {
    expect(() => mg.add(x, undefined as unknown as number)).toThrow("[add] Expected an array or a number, got undefined.");
    expect(() => mg.matmul(x, null as unknown as number)).toThrow("[matmul] Expected an array or a number, got null.");
    expect(() => mg.clip(x, "a" as unknown as number, 3)).toThrow('[clip] Expected an array or a number, got the string "a".');
    expect(mg.clip(mg.array([1, 5, 9]), undefined as unknown as null, 4).tolist()).toEqual([1, 4, 4]);
  });
});

describe("arguments of the wrong kind name the op", () => {
  const z = mg.array([1, 2]);
  test("lists, shapes and dtypes", () => {
    expect(() => mg.concatenate(z as unknown as mg.MgArray[])).toThrow("[concatenate] Expected a list of arrays, got object.");
    expect(() => mg.stack(z as unknown as mg.MgArray[])).toThrow("[stack] Expected a list of arrays, got object.");
    expect(() => mg.reshape(z, z as unknown as number[])).toThrow("[reshape] shape must be an integer or a list of integers, got object.");
    expect(mg.reshape(z, 2 as unknown as number[]).shape).toEqual([2]);
    expect(() => mg.promoteTypes(z as unknown as mg.Dtype, mg.int32)).toThrow("[promote_types] Expected a dtype such as mg.float32 or mg.int32, got an object.");
    expect(() => mg.canCast(mg.int8, "int16" as unknown as mg.Dtype)).toThrow('[can_cast] Expected a dtype such as mg.float32 or mg.int32, got the string "int16".');
    expect(() => mg.finfo(z as unknown as mg.Dtype)).toThrow("[finfo] Expected a dtype");
    expect(() => mg.iinfo(undefined as unknown as mg.Dtype)).toThrow("[iinfo] Expected a dtype such as mg.float32 or mg.int32, got undefined.");
    expect(mg.promoteTypes(mg.uint8, mg.int8)).toBe(mg.int16);
  });
  test("binary ops without a complex64 form reject it when the op is built, on both devices", () => {
    const c = mg.array([{ re: 0, im: 1 }]);
    for (const stream of [mg.cpu, mg.gpu]) {
      expect(() => mg.arctan2(c, c, { stream })).toThrow("[arctan2] Not supported for complex64.");
    }
  });
});
