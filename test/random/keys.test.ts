import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { RandomBits } from "../../ts/core/primitives/random.ts";
import { makeArray } from "../../ts/core/graph.ts";
import { resolveStream } from "../../ts/core/device.ts";

const R = mg.random;

describe("key and seed", () => {
  test("key(seed) is uint32 [seed >> 32, seed & 0xffffffff] (MLX's pinned keys)", () => {
    const k = R.key(0);
    expect(k.dtype).toBe(mg.uint32);
    expect(k.shape).toEqual([2]);
    expect(k.tolist()).toEqual([0, 0]);
    expect(R.key(1).tolist()).toEqual([0, 1]);
    expect(R.key(2 ** 32).tolist()).toEqual([1, 0]);
    expect(R.key(2 ** 32 + 1).tolist()).toEqual([1, 1]);
    expect(R.key(2n ** 64n - 1n).tolist()).toEqual([4294967295, 4294967295]);
    expect(R.key(0x123456789abcn).tolist()).toEqual([0x1234, 0x56789abc]);
  });

  test("invalid seeds are tagged errors", () => {
    expect(() => R.key(-1)).toThrow("[key] seed must be in [0, 2**64), got -1.");
    expect(() => R.key(1.5)).toThrow("[key] seed must be a non-negative integer");
    expect(() => R.key(2n ** 64n)).toThrow("[key] seed must be in [0, 2**64)");
    expect(() => R.seed(-3)).toThrow("[seed] seed must be in [0, 2**64), got -3.");
    expect(() => R.seed("1" as unknown as number)).toThrow("[seed] seed must be a non-negative integer");
  });
});

describe("split", () => {
  test("MLX's pinned split of key(0)", () => {
    const keys = R.split(R.key(0));
    expect(keys.shape).toEqual([2, 2]);
    expect(keys.dtype).toBe(mg.uint32);
    expect(keys.tolist()).toEqual([[4146024105, 967050713], [2718843009, 1272950319]]);
    expect(R.split(R.key(0), 3).tolist()).toEqual([
      [2467461003, 428148500], [3186719485, 3840466878], [2562233961, 1946702221],
    ]);
  });

  test("deterministic, distinct sub keys, any count", () => {
    const key = R.key(0);
    const pair = R.split(key).tolist() as number[][];
    expect(pair[0]).not.toEqual(pair[1]);
    expect(R.split(key).tolist()).toEqual(pair);
    expect(R.split(key, 10).shape).toEqual([10, 2]);
    expect(R.split(key, 0).shape).toEqual([0, 2]);
    // The sub keys of a split are rows of the bits of shape (num, 2).
    expect(R.split(key, 5).reshape(-1).tolist()).toEqual(R.bits([5, 2], 4, key).reshape(-1).tolist());
  });

  test("a split key can be split again (lazy keys)", () => {
    const sub = mg.reshape(mg.split(R.split(R.key(0)), 2, 0)[1]!, [2]);
    // MLX: split(key(0))[1] = (2718843009, 1272950319); its split equals the split of that constant key.
    const constant = mg.array([2718843009, 1272950319], mg.uint32);
    expect(R.split(sub, 3).tolist()).toEqual(R.split(constant, 3).tolist());
  });

  test("errors", () => {
    expect(() => R.split(R.key(0), -1)).toThrow("[split] num must be non-negative, got -1.");
    expect(() => R.split(R.key(0), 1.5)).toThrow("[split] num must be an integer");
    expect(() => R.split(mg.array([0, 0]))).toThrow("[split] Expected key type uint32 but received int32.");
    expect(() => (R.split as (...a: unknown[]) => mg.MgArray)()).toThrow("[split] missing the key to split.");
  });
});

describe("bits", () => {
  test("MLX's pinned bits (mlx/tests/random_tests.cpp)", () => {
    const k0 = R.key(0);
    const x = R.bits([], 4, k0);
    expect(x.dtype).toBe(mg.uint32);
    expect(x.shape).toEqual([]);
    expect(x.item()).toBe(1797259609);
    expect(R.bits([], 4, k0).item()).toBe(1797259609);
    const x2 = R.bits([], 2, k0);
    expect(x2.dtype).toBe(mg.uint16);
    expect(x2.item()).toBe(345);
    const x1 = R.bits([], 1, k0);
    expect(x1.dtype).toBe(mg.uint8);
    expect(x1.item()).toBe(89);

    const k1 = R.key(1);
    expect(R.bits([], 4, k1).item()).toBe(507451445);
    expect(R.bits([], 2, k1).item()).toBe(6197);
    expect(R.bits([], 1, k1).item()).toBe(53);

    expect(R.bits([3, 1], 4, k0).tolist()).toEqual([[4146024105], [1351547692], [2718843009]]);
    expect(R.bits([5], 2, k0).tolist()).toEqual([20137, 63263, 64300, 20622, 16513]);
    expect(R.bits([6], 2, k0).tolist()).toEqual([20137, 63263, 64300, 20622, 16513, 41486]);
    expect(R.bits([7], 2, k0).tolist()).toEqual([20137, 63263, 1497, 14756, 16513, 41486, 44591]);
    expect(R.bits([8], 2, k0).tolist()).toEqual([20137, 63263, 1497, 14756, 16513, 41486, 44591, 19423]);
  });

  test("width-1 bits are the little-endian bytes of the same stream", () => {
    const k = R.key(5);
    const words = R.bits([3], 4, k).tolist() as number[];
    const bytes = R.bits([12], 1, k).tolist() as number[];
    expect(bytes).toEqual(words.flatMap((w) => [w & 255, (w >>> 8) & 255, (w >>> 16) & 255, w >>> 24]));
    // 11 bytes: 3 words, the last one truncated, same counters as 12 bytes
    expect(R.bits([11], 1, k).tolist()).toEqual(bytes.slice(0, 11));
  });

  test("defaults, empty shapes, options object", () => {
    const k = R.key(3);
    expect(R.bits([0], 4, k).tolist()).toEqual([]);
    expect(R.bits([2, 0, 3], 1, k).shape).toEqual([2, 0, 3]);
    expect(R.bits([4], { key: k }).tolist()).toEqual(R.bits([4], 4, k).tolist());
    expect(R.bits([4], k).tolist()).toEqual(R.bits([4], 4, k).tolist());
    expect(R.bits(4, 4, k).tolist()).toEqual(R.bits([4], 4, k).tolist());
    expect(R.bits().shape).toEqual([]);
  });

  test("errors", () => {
    const k = R.key(1);
    expect(() => R.bits([], 0, k)).toThrow("[bits] Bit width must be in {1, 2, 4} but got 0.");
    expect(() => R.bits([], 5, k)).toThrow("[bits] Bit width must be in {1, 2, 4} but got 5.");
    expect(() => R.bits([], -1, k)).toThrow("[bits] Bit width must be in {1, 2, 4} but got -1.");
    expect(() => R.bits([2, -3], 4, k)).toThrow("[bits] Negative dimensions not allowed: (2,-3).");
    expect(() => R.bits([2.5], 4, k)).toThrow("[bits] shape must contain integers");
  });
});

describe("key validation (every op)", () => {
  const ops: [string, (key: mg.MgArray) => mg.MgArray][] = [
    ["bits", (key) => R.bits([], 4, key)],
    ["uniform", (key) => R.uniform(0, 1, [], null, key)],
    ["normal", (key) => R.normal([], null, null, null, key)],
    ["laplace", (key) => R.laplace([], null, 0, 1, key)],
    ["randint", (key) => R.randint(0, 3, [], null, key)],
    ["bernoulli", (key) => R.bernoulli(0.5, null, key)],
    ["truncated_normal", (key) => R.truncatedNormal(-1, 1, null, null, key)],
    ["gumbel", (key) => R.gumbel([], null, key)],
  ];
  for (const [name, fn] of ops) {
    test(name, () => {
      expect(() => fn(mg.array([0, 0]))).toThrow(`[${name}] Expected key type uint32 but received int32.`);
      expect(() => fn(mg.array([[0, 0]], mg.uint32))).toThrow(`[${name}] Expected key shape (2,) but received (1,2).`);
      expect(() => fn(mg.array([0, 0, 0], mg.uint32).reshape(3, 1))).toThrow(`[${name}] Expected key shape (2,) but received (3,1).`);
      expect(() => fn(mg.array([0, 0], mg.uint32).reshape(2, 1))).toThrow(`[${name}] Expected key shape (2,) but received (2,1).`);
      expect(() => fn([0, 0] as unknown as mg.MgArray)).toThrow(`[${name}] key must be an array from mg.random.key or mg.random.split`);
      const disposed = R.key(0);
      disposed.dispose();
      expect(() => fn(disposed)).toThrow("was disposed and cannot be used");
    });
  }
});

describe("arguments", () => {
  test("key positionally or in the options object, not both", () => {
    const k = R.key(9);
    expect(R.uniform(0, 1, [3], null, k).tolist()).toEqual(R.uniform(0, 1, [3], { key: k }).tolist());
    expect(R.uniform(0, 1, [3], null, k).tolist()).toEqual(R.uniform(0, 1, [3], null, null, { key: k }).tolist());
    expect(() => R.uniform(0, 1, [3], null, k, { key: k })).toThrow("[uniform] 'key' was given both positionally and in the options object.");
  });

  test("the options object is last and takes MLX's parameters by name", () => {
    const call = R.uniform as (...a: unknown[]) => mg.MgArray;
    expect(() => call(0, 1, { key: R.key(0) }, [3])).toThrow("[uniform] the options object must be the last argument.");
    expect(call({ shape: [2], key: R.key(3) }).tolist()).toEqual(R.uniform(0, 1, [2], null, R.key(3)).tolist());
    expect(() => call({ shap: [2] })).toThrow("[uniform] unknown option 'shap' (did you mean 'shape'?). Accepted options: 'low', 'high', 'shape', 'dtype', 'key', 'stream'.");
    expect(() => call(0, 1, [2], null, null, null)).toThrow("[uniform] takes at most 5 positional arguments (low, high, shape, dtype, key) and an options object, got 6.");
    expect(() => call(0, 1, [2], "float32")).toThrow('[uniform] Expected a dtype such as mg.float32 or mg.int32, got the string "float32".');
  });

  test("stream option places the draw on that stream", () => {
    const k = R.key(0);
    const s = mg.newStream(mg.cpu);
    const a = R.uniform(0, 1, [2], null, k, { stream: s });
    expect(a.stream).toBe(s);
    expect(a.tolist()).toEqual(R.uniform(0, 1, [2], null, k).tolist());
    expect(R.bits([2], { key: k, stream: mg.gpu }).stream.device).toBe(mg.gpu);
    expect(mg.stream(s, () => R.normal([2], { key: k }).stream)).toBe(s);
  });
});

describe("global key", () => {
  test("seed makes calls without a key reproducible (MLX's pinned test_global_rng)", () => {
    R.seed(3);
    const a = R.uniform().item();
    const b = R.uniform().item();
    R.seed(3);
    expect(R.uniform().item()).toBe(a);
    expect(R.uniform().item()).toBe(b);
    // Values from MLX 0.32.4 after mx.random.seed(3).
    expect([a, b]).toEqual([0.47652584314346313, 0.8435909748077393]);
    expect(R.uniform().item()).toBe(0.19682888686656952);
  });

  test("each call without a key uses the second half of a split of the global key", () => {
    R.seed(4);
    const x = R.bits([]).item();
    const y = R.bits([]).item();
    // key(4) → split → (state, k1); state → split → (state', k2)
    const [s1, k1] = R.split(R.key(4)).tolist() as number[][];
    const k2 = (R.split(mg.array(s1!, mg.uint32)).tolist() as number[][])[1]!;
    expect(x).toBe(R.bits([], 4, mg.array(k1!, mg.uint32)).item());
    expect(y).toBe(R.bits([], 4, mg.array(k2, mg.uint32)).item());
    expect(x).not.toBe(y);
  });

  test("64-bit seeds", () => {
    R.seed(2n ** 40n + 5n);
    const a = R.uniform(0, 1, [3]).tolist();
    R.seed(2 ** 40 + 5);
    expect(R.uniform(0, 1, [3]).tolist()).toEqual(a);
  });
});

describe("RandomBits with batched keys", () => {
  const stream = resolveStream();
  const bitsOf = (keys: mg.MgArray, shape: number[], width: 1 | 2 | 4 = 4) => makeArray(RandomBits, [keys], { shape, width }, stream);

  test("one stream per key, keys in row-major order (MLX's vmap expectations)", () => {
    const keys = mg.array([0, 0, 1, 1], mg.uint32).reshape(2, 2);
    expect(bitsOf(keys, [2, 3]).tolist()).toEqual([
      [4146024105, 1351547692, 2718843009],
      [3725146706, 1802982961, 1349634643],
    ]);
    // Strided (transposed) keys: the columns (0, 1) and (0, 1).
    expect(bitsOf(keys.T, [2, 3]).tolist()).toEqual([
      [2441914641, 1110694964, 3819641963],
      [2441914641, 1110694964, 3819641963],
    ]);
  });

  test("nested batches", () => {
    const keys = mg.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5], mg.uint32).reshape(3, 2, 2);
    expect(bitsOf(keys, [3, 2, 2]).tolist()).toEqual([
      [[928981903, 3453687069], [3606183818, 460005496]],
      [[2799733733, 856293553], [4081856343, 3445925136]],
      [[2775548010, 1430281703], [305173070, 2615843348]],
    ]);
    expect(bitsOf(mg.transpose(keys, [0, 2, 1]), [3, 2, 2]).tolist()).toEqual([
      [[1948878966, 4237131848], [1948878966, 4237131848]],
      [[2531170506, 1858648356], [2531170506, 1858648356]],
      [[740561898, 4234094099], [740561898, 4234094099]],
    ]);
  });

  test("narrow widths per key equal the single-key draws", () => {
    const keys = mg.array([0, 0, 1, 1], mg.uint32).reshape(2, 2);
    const out = bitsOf(keys, [2, 5], 2).tolist() as number[][];
    expect(out[0]).toEqual(R.bits([5], 2, mg.array([0, 0], mg.uint32)).tolist() as number[]);
    expect(out[1]).toEqual(R.bits([5], 2, mg.array([1, 1], mg.uint32)).tolist() as number[]);
  });

  test("vmap rule: a batch axis on the keys becomes an output axis", () => {
    const keys = mg.array([0, 0, 1, 1], mg.uint32).reshape(2, 2);
    const [[out0], [ax0]] = RandomBits.vmap!([keys], [0], { shape: [3], width: 4 });
    expect(ax0).toBe(0);
    expect(out0!.tolist()).toEqual([
      [4146024105, 1351547692, 2718843009],
      [3725146706, 1802982961, 1349634643],
    ]);
    // Batched along the last axis: the pair axis is swapped back into place.
    const [[out1], [ax1]] = RandomBits.vmap!([keys], [1], { shape: [3], width: 4 });
    expect(ax1).toBe(0);
    expect(out1!.tolist()).toEqual([
      [2441914641, 1110694964, 3819641963],
      [2441914641, 1110694964, 3819641963],
    ]);
  });

  test("no derivative with respect to keys", () => {
    const keys = R.key(0);
    const out = R.bits([3], 4, keys);
    const [gk] = RandomBits.vjp!([keys], [mg.onesLike(out)], [0], [out], { shape: [3], width: 4 });
    expect(gk!.tolist()).toEqual([0, 0]);
    const [t] = RandomBits.jvp!([keys], [mg.zerosLike(keys)], [0], [out], { shape: [3], width: 4 });
    expect(t!.shape).toEqual([3]);
    expect(t!.tolist()).toEqual([0, 0, 0]);
  });
});

describe("transforms over keys (mg.vmap, mg.grad)", () => {
  const keys = mg.array([0, 0, 1, 1], mg.uint32).reshape(2, 2);
  const draw3 = (k: mg.MgArray) => R.bits([3], 4, k);

  test("vmap over keys gives MLX's pinned batched bits (mlx/tests/random_tests.cpp)", () => {
    expect(mg.vmap(draw3)(keys).tolist()).toEqual([
      [4146024105, 1351547692, 2718843009],
      [3725146706, 1802982961, 1349634643],
    ]);
    expect(mg.vmap(draw3, 1)(keys).tolist()).toEqual([
      [2441914641, 1110694964, 3819641963],
      [2441914641, 1110694964, 3819641963],
    ]);
    const cube = mg.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5], mg.uint32).reshape(3, 2, 2);
    const draw2 = (k: mg.MgArray) => R.bits([2], 4, k);
    expect(mg.vmap(mg.vmap(draw2))(cube).tolist()).toEqual([
      [[928981903, 3453687069], [3606183818, 460005496]],
      [[2799733733, 856293553], [4081856343, 3445925136]],
      [[2775548010, 1430281703], [305173070, 2615843348]],
    ]);
    expect(mg.vmap(mg.vmap(draw2, 1), 0)(cube).tolist()).toEqual([
      [[1948878966, 4237131848], [1948878966, 4237131848]],
      [[2531170506, 1858648356], [2531170506, 1858648356]],
      [[740561898, 4234094099], [740561898, 4234094099]],
    ]);
  });

  test("vmap of uniform with batched keys and bounds equals per-key draws", () => {
    const fn = (k: mg.MgArray, low: mg.MgArray) => R.uniform(low, 1, [3], mg.float32, k);
    const low = mg.array([[0, 0.25, 0.5], [0.5, 0.25, 0]], mg.float32);
    const out = mg.vmap(fn)(keys, low).tolist() as number[][];
    expect(out[0]).toEqual(R.uniform(mg.array([0, 0.25, 0.5], mg.float32), 1, [3], null, mg.array([0, 0], mg.uint32)).tolist() as number[]);
    expect(out[1]).toEqual(R.uniform(mg.array([0.5, 0.25, 0], mg.float32), 1, [3], null, mg.array([1, 1], mg.uint32)).tolist() as number[]);
  });

  test("grad through a draw reaches the parameters, not the key", () => {
    const key = R.key(0);
    const u = R.uniform(0, 1, [4], null, key).tolist() as number[];
    const g = mg.grad((lo: mg.MgArray) => mg.sum(R.uniform(lo, 2, [4], null, key)))(mg.array(0.5, mg.float32));
    expect(Math.abs((g.item() as number) - u.reduce((s, x) => s + (1 - x), 0))).toBeLessThan(1e-6);
  });
});
