// Shape ops, joins and creation on the CPU device.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";

const ar = (n: number, shape: number[]) => mg.reshape(mg.arange(n), shape);

describe("reshape, flatten, squeeze, expandDims", () => {
  test("reshape with -1, flatten ranges, unflatten", () => {
    expect(mg.reshape(mg.arange(6), [2, -1]).shape).toEqual([2, 3]);
    expect(mg.reshape(mg.arange(6), [3, 2]).tolist()).toEqual([[0, 1], [2, 3], [4, 5]]);
    expect(() => mg.reshape(mg.arange(6), [4, -1])).toThrow("[reshape] Cannot infer the shape");
    expect(() => mg.reshape(mg.arange(6), [-1, -1])).toThrow("[reshape] Can only infer one dimension.");
    expect(mg.flatten(ar(24, [2, 3, 4]), 1).shape).toEqual([2, 12]);
    expect(mg.flatten(ar(24, [2, 3, 4]), 0, 1).shape).toEqual([6, 4]);
    expect(mg.unflatten(mg.arange(12), 0, [3, -1]).shape).toEqual([3, 4]);
    expect(ar(6, [2, 3]).reshape(3, 2).shape).toEqual([3, 2]);
  });
  test("reshape of a transposed view copies in row-major order, and the trace says so", () => {
    expect(mg.reshape(mg.transpose(ar(6, [2, 3])), [6]).tolist()).toEqual([0, 3, 1, 4, 2, 5]);
    const t = mg.transpose(ar(6, [2, 3]), null, { stream: mg.cpu });
    mg.eval(t);
    const [copy] = mg.trace(() => mg.reshape(t, [6], { stream: mg.cpu }));
    expect(copy!.kernel).toMatch(/^cpu(-native)?:Reshape$/);
    expect([copy!.notes]).toEqual([[`copy: Reshape of ${t.describe()} cannot be a view of its layout; its elements are copied row-contiguously`]]);
    const [view] = mg.trace(() => mg.reshape(t, [3, 1, 2], { stream: mg.cpu }));
    expect([view!.kernel, view!.notes]).toEqual(["cpu:Reshape", []]);
  });
  test("squeeze and expandDims", () => {
    expect(mg.squeeze(mg.zeros([1, 3, 1])).shape).toEqual([3]);
    expect(mg.squeeze(mg.zeros([1, 3, 1]), 2).shape).toEqual([1, 3]);
    expect(() => mg.squeeze(mg.zeros([2, 3]), 0)).toThrow("[squeeze] Cannot squeeze axis 0");
    expect(mg.expandDims(mg.zeros([3]), [0, -1]).shape).toEqual([1, 3, 1]);
  });
});

describe("transposes and broadcasting", () => {
  test("transpose, swapaxes, moveaxis", () => {
    expect(mg.transpose(ar(6, [2, 3])).tolist()).toEqual([[0, 3], [1, 4], [2, 5]]);
    expect(mg.transpose(mg.zeros([2, 3, 4]), [1, 0, 2]).shape).toEqual([3, 2, 4]);
    expect(() => mg.transpose(mg.zeros([2, 3]), [0, 0])).toThrow("[transpose] Repeat axes not allowed.");
    expect(mg.swapaxes(mg.zeros([2, 3, 4]), 0, 2).shape).toEqual([4, 3, 2]);
    expect(mg.moveaxis(mg.zeros([2, 3, 4]), 0, -1).shape).toEqual([3, 4, 2]);
  });
  test("broadcastTo and broadcastArrays", () => {
    expect(mg.broadcastTo(mg.array([1, 2]), [2, 2]).tolist()).toEqual([[1, 2], [1, 2]]);
    expect(() => mg.broadcastTo(mg.zeros([3]), [2, 4])).toThrow("[broadcast_to]");
    // MLX's broadcast_arrays(*arrays): arrays are positional, the options object trails.
    const [a, b] = mg.broadcastArrays(mg.zeros([3, 1]), mg.zeros([4]));
    expect([a!.shape, b!.shape]).toEqual([[3, 4], [3, 4]]);
    const [c, d, e] = mg.broadcastArrays(mg.zeros([2, 1]), 5, mg.zeros([3]), { stream: mg.cpu });
    expect([c!.shape, d!.shape, e!.shape, c!.stream.device]).toEqual([[2, 3], [2, 3], [2, 3], mg.cpu]);
    expect(() => mg.broadcastArrays(mg.zeros([2]), mg.zeros([3]))).toThrow("[broadcast_arrays] Shapes (2,) and (3,) cannot be broadcast.");
    // Ops that broadcast internally name themselves in the error.
    expect(() => mg.full([2, 3], mg.zeros([4]))).toThrow("[full] Shapes (4,) and (2,3) cannot be broadcast.");
  });
  test("flip is a reversed view", () => {
    expect(mg.flip(ar(6, [2, 3]), 1).tolist()).toEqual([[2, 1, 0], [5, 4, 3]]);
    expect(mg.flip(ar(6, [2, 3])).tolist()).toEqual([[5, 4, 3], [2, 1, 0]]);
  });
});

describe("joins", () => {
  test("concatenate promotes dtypes and validates shapes", () => {
    expect(mg.concatenate([mg.array([1, 2]), mg.array([3.5])]).tolist()).toEqual([1, 2, 3.5]);
    expect(mg.concatenate([ar(4, [2, 2]), ar(2, [2, 1])], 1).tolist()).toEqual([[0, 1, 0], [2, 3, 1]]);
    expect(mg.concatenate([ar(4, [2, 2]), ar(2, [1, 2])], null).shape).toEqual([6]);
    expect(() => mg.concatenate([mg.zeros([2, 2]), mg.zeros([3, 3])], 0)).toThrow("[concatenate] All the input array dimensions except for the concatenation axis must match exactly");
    expect(() => mg.concatenate([])).toThrow("[concatenate] No arrays provided");
  });
  test("stack and split", () => {
    expect(mg.stack([mg.array([1, 2]), mg.array([3, 4])], 1).tolist()).toEqual([[1, 3], [2, 4]]);
    const parts = mg.split(mg.arange(6), 3);
    expect(parts.map((p) => p.tolist())).toEqual([[0, 1], [2, 3], [4, 5]]);
    expect(mg.split(mg.arange(6), [1, 4]).map((p) => p.tolist())).toEqual([[0], [1, 2, 3], [4, 5]]);
    expect(() => mg.split(mg.arange(5), 2)).toThrow("[split]");
  });
  test("split returns distinct arrays, also of an empty axis: disposing one leaves the others (issue 20)", () => {
    const x = mg.zeros([0]);
    const parts = mg.split(x, 3);
    expect(parts.map((p) => p.shape)).toEqual([[0], [0], [0]]);
    expect(new Set([x, ...parts]).size).toBe(4);
    parts[0]!.dispose();
    expect(parts[1]!.tolist()).toEqual([]);
    expect(x.tolist()).toEqual([]);
    const y = mg.arange(4);
    const [whole] = mg.split(y, 1);
    expect(whole).not.toBe(y);
    whole!.dispose();
    expect(y.tolist()).toEqual([0, 1, 2, 3]);
  });
});

describe("creation", () => {
  test("zeros, ones, full, *Like", () => {
    expect(mg.zeros([2, 2]).tolist()).toEqual([[0, 0], [0, 0]]);
    expect(mg.ones([2], mg.int8).dtype).toBe(mg.int8);
    expect(mg.full([2], 7).tolist()).toEqual([7, 7]);
    expect(mg.full([2], 7, mg.float16).dtype).toBe(mg.float16);
    expect(mg.full([2, 2], mg.array([1, 2])).tolist()).toEqual([[1, 2], [1, 2]]);
    expect(mg.onesLike(mg.zeros([3], mg.uint8)).tolist()).toEqual([1, 1, 1]);
    expect(mg.fullLike(mg.zeros([2]), 3, mg.int32).tolist()).toEqual([3, 3]);
    expect(() => mg.zeros([-1])).toThrow("[full]");
  });
  test("arange in its forms; linspace", () => {
    expect(mg.arange(5).tolist()).toEqual([0, 1, 2, 3, 4]);
    expect(mg.arange(5).dtype).toBe(mg.int32);
    expect(mg.arange(1, 4).tolist()).toEqual([1, 2, 3]);
    expect(mg.arange(0, 1, 0.25).tolist()).toEqual([0, 0.25, 0.5, 0.75]);
    expect(mg.arange(0, 1, 0.25).dtype).toBe(mg.float32);
    expect(mg.arange(5, 0, -2).tolist()).toEqual([5, 3, 1]);
    expect(mg.arange(3, mg.float16).dtype).toBe(mg.float16);
    expect(mg.arange(3, 1).tolist()).toEqual([]);
    expect(() => mg.arange(0, 1, 0)).toThrow("[arange] step must be nonzero.");
    expect(mg.linspace(0, 1, 5).tolist()).toEqual([0, 0.25, 0.5, 0.75, 1]);
    expect(mg.linspace(0, 1, 4, false).tolist()).toEqual([0, 0.25, 0.5, 0.75]);
    expect(mg.linspace(2, 3, 1).tolist()).toEqual([2]);
    // MLX's order: linspace(start, stop, num, endpoint, dtype).
    const ints = mg.linspace(0, 10, 3, true, mg.int32);
    expect([ints.dtype, ints.tolist()]).toEqual([mg.int32, [0, 5, 10]]);
    expect(mg.linspace(0, 1, 2, true, null).dtype).toBe(mg.float32);
  });
  test("eye, identity, tri, tril, triu, meshgrid", () => {
    expect(mg.eye(2, 3, 1).tolist()).toEqual([[0, 1, 0], [0, 0, 1]]);
    expect(mg.identity(2, mg.int32).tolist()).toEqual([[1, 0], [0, 1]]);
    expect(mg.tri(3, 3, 0, mg.int32).tolist()).toEqual([[1, 0, 0], [1, 1, 0], [1, 1, 1]]);
    expect(mg.tri(2, 3, -1).tolist()).toEqual([[0, 0, 0], [1, 0, 0]]);
    expect(mg.eye(0).shape).toEqual([0, 0]);
    expect(() => mg.eye(-1)).toThrow("[eye] N and M must be non-negative integers, got -1 and -1.");
    expect(() => mg.identity(2.5)).toThrow("[eye] N and M must be non-negative integers");
    expect(() => mg.tri(2, 1.5)).toThrow("[tri] N and M must be non-negative integers, got 2 and 1.5.");
    expect(() => mg.eye(2, 2, 0.5)).toThrow("[eye] k must be an integer, got 0.5.");
    const a = ar(9, [3, 3]);
    expect(mg.tril(a).tolist()).toEqual([[0, 0, 0], [3, 4, 0], [6, 7, 8]]);
    expect(mg.triu(a, 1).tolist()).toEqual([[0, 1, 2], [0, 0, 5], [0, 0, 0]]);
    const [x, y] = mg.meshgrid(mg.array([1, 2, 3]), mg.array([4, 5]));
    expect(x!.tolist()).toEqual([[1, 2, 3], [1, 2, 3]]);
    expect(y!.tolist()).toEqual([[4, 4, 4], [5, 5, 5]]);
    const [i] = mg.meshgrid(mg.array([1, 2, 3]), mg.array([4, 5]), { indexing: "ij" });
    expect(i!.shape).toEqual([3, 2]);
  });
});

describe("array-API shape functions", () => {
  test("permuteDims is transpose; matrixTranspose swaps the last two axes", () => {
    expect(mg.permuteDims).toBe(mg.transpose);
    expect(mg.permuteDims(mg.zeros([2, 3, 4]), [2, 0, 1]).shape).toEqual([4, 2, 3]);
    expect(mg.matrixTranspose(ar(6, [2, 3])).tolist()).toEqual([[0, 3], [1, 4], [2, 5]]);
    const b = mg.matrixTranspose(ar(24, [2, 3, 4]));
    expect(b.shape).toEqual([2, 4, 3]);
    expect((b.tolist() as number[][][])[1]![3]).toEqual([15, 19, 23]);
    expect(() => mg.matrixTranspose(mg.array([1, 2]))).toThrow("[matrix_transpose] Input array must have at least 2 dimensions, got 1.");
    expect(() => mg.matrixTranspose(mg.array(1))).toThrow("[matrix_transpose] Input array must have at least 2 dimensions, got 0.");
  });
  test("broadcastShapes returns a plain list and rejects what cannot broadcast", () => {
    expect(mg.broadcastShapes([1], [3, 1])).toEqual([3, 1]);
    expect(mg.broadcastShapes([6, 7], [5, 6, 1], [7])).toEqual([5, 6, 7]);
    expect(mg.broadcastShapes([5, 1, 4], [1, 3, 1])).toEqual([5, 3, 4]);
    expect(mg.broadcastShapes([2, 0], [1])).toEqual([2, 0]);
    expect(mg.broadcastShapes([], [2])).toEqual([2]);
    expect(() => mg.broadcastShapes()).toThrow("[broadcast_shapes] Must provide at least one shape.");
    expect(() => mg.broadcastShapes([2, 3], [4])).toThrow("[broadcast_shapes] Shapes (2,3) and (4,) cannot be broadcast.");
    expect(() => mg.broadcastShapes([-1], [3])).toThrow("[broadcast_shapes] Each dimension must be a non-negative integer, got -1");
    expect(() => mg.broadcastShapes([2.5], [3])).toThrow("[broadcast_shapes] Each dimension must be a non-negative integer, got 2.5");
    expect(() => (mg.broadcastShapes as (...s: unknown[]) => number[])(3, [3])).toThrow("[broadcast_shapes] Each shape must be a list of integers, got number.");
  });
});

describe("asarray, empty, emptyLike", () => {
  test("empty and emptyLike are zeros and zerosLike, as in MLX", () => {
    expect(mg.empty).toBe(mg.zeros);
    expect(mg.emptyLike).toBe(mg.zerosLike);
    expect(mg.empty([2], mg.int32).tolist()).toEqual([0, 0]);
    expect(mg.emptyLike(mg.array([1.5, 2]), mg.int8).dtype).toBe(mg.int8);
  });
  test("asarray converts JS values and casts, like array", () => {
    expect(mg.asarray([1, 2.5]).dtype).toBe(mg.float32);
    expect(mg.asarray(3).dtype).toBe(mg.int32);
    expect(mg.asarray([1, 2], mg.int8).tolist()).toEqual([1, 2]);
    expect(mg.asarray(new Float32Array([1, 2, 3, 4]), null, { shape: [2, 2] }).tolist()).toEqual([[1, 2], [3, 4]]);
    const a = mg.array([1, 2]);
    const f = mg.asarray(a, mg.float32);
    expect(f.dtype).toBe(mg.float32);
    expect(f.tolist()).toEqual([1, 2]);
  });
  test("copy: absent or null shares an array, true gives a new handle, false refuses to copy", () => {
    const a = mg.array([1, 2]);
    expect(mg.asarray(a)).toBe(a);
    expect(mg.asarray(a, mg.int32, { copy: false })).toBe(a);
    const c = mg.asarray(a, null, { copy: true });
    expect(c).not.toBe(a);
    c.dispose();
    expect(a.tolist()).toEqual([1, 2]); // the copy has its own lifetime
    const d = mg.asarray(a, null, { copy: true });
    a.dispose();
    expect(d.tolist()).toEqual([1, 2]);
    expect(() => mg.asarray([1, 2], null, { copy: false })).toThrow("[asarray] Unable to avoid copy");
    expect(() => mg.asarray(mg.array([1]), mg.float32, { copy: false })).toThrow("[asarray] Unable to avoid copy");
    expect(() => mg.asarray(mg.array([1]), null, { copy: 1 as unknown as boolean })).toThrow("[asarray] copy must be a boolean or null, got number.");
    expect(() => mg.asarray("1" as unknown as number)).toThrow("[asarray] Expected an array or a number");
  });
});
