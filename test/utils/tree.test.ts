// ts/utils/tree.ts: MLX's tree utilities; the expected values are what mlx.utils returns.
import { expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";

const { treeFlatten, treeUnflatten, treeMap, treeMapWithPath, treeReduce, treeMerge } = mg.utils;

test("treeFlatten: dotted keys, prefix (first character dropped), isLeaf, destination", () => {
  expect(treeFlatten([[[0]]])).toEqual([["0.0.0", 0]]);
  expect(treeFlatten([[[0]]], ".hello")).toEqual([["hello.0.0.0", 0]]);
  expect(treeFlatten({ a: { b: 1 } }, "", null, {})).toEqual({ "a.b": 1 });
  expect(treeFlatten({ a: { b: 1 } }, { destination: {} }) as unknown).toEqual({ "a.b": 1 });
  expect(treeFlatten({ a: [1, [2]] }, { isLeaf: (x: unknown) => Array.isArray(x) && x.length === 1 }) as unknown).toEqual([["a.0", 1], ["a.1", [2]]]);
  expect(treeFlatten({ a: null })).toEqual([["a", null]]);
  expect(() => treeFlatten({}, { prefx: "" } as never)).toThrow("[tree_flatten] unknown option 'prefx'");
});

test("treeUnflatten: lists for integer keys (gaps filled with {}), objects otherwise", () => {
  expect(treeUnflatten([["hello.world", 42]])).toEqual({ hello: { world: 42 } });
  expect(treeUnflatten({ "a.0": 1, "a.2": 3 })).toEqual({ a: [1, {}, 3] });
  expect(treeUnflatten([["01", 1], ["1", 2]])).toEqual({ "01": 1, "1": 2 });
  expect(treeUnflatten([["", 5]])).toBe(5);
  const tree = { layers: [{ weight: 1, bias: 2 }, { weight: 3 }], head: { w: 4 } };
  expect(treeUnflatten(treeFlatten(tree)) as unknown).toEqual(tree);
});

test("treeMap, treeMapWithPath, treeReduce, treeMerge", () => {
  expect(treeMap((x: number, y: number) => x + y, { a: 1, b: [2, 3] }, { a: 10, b: [20, 30], c: 5 })).toEqual({ a: 11, b: [22, 33] });
  expect(treeMap((x: unknown) => (Array.isArray(x) ? x.length : -1), { a: [1, 2], b: 3 } as unknown, { isLeaf: Array.isArray })).toEqual({ a: 2, b: -1 });
  expect(treeMapWithPath((p: string) => p, { model: [{ w: 0, b: 1 }] })).toEqual({ model: [{ w: "model.0.w", b: "model.0.b" }] });
  expect(treeMapWithPath((p: string) => p, [1], { path: "root" })).toEqual(["root.0"]);
  expect(treeReduce((acc: number, x: number) => acc + x, { a: [1, 2, 3], b: [4, 5] }, 0)).toBe(15);
  expect(treeReduce((acc: number, x: number) => acc * x, [2, 3, 4])).toBe(24);
  expect(treeMerge({ a: [1, {}], b: 2 }, { a: [{}, 3], c: 4 })).toEqual({ a: [1, 3], b: 2, c: 4 });
  expect(() => treeMerge({ a: 1 }, { a: 2 })).toThrow("[tree_merge] Trees contain elements at the same locations but no merge function was provided");
  expect(treeMerge({ a: 1 }, { a: 2 }, (x: number, y: number) => x + y)).toEqual({ a: 3 });
});

test("trees walk into modules as dicts (MLX's Module is a dict)", () => {
  const lin = new mg.nn.Linear(2, 3);
  expect(treeFlatten(lin).map(([k]) => k)).toEqual(["weight", "bias"]);
  const shapes = treeMap((a: mg.MgArray) => a.shape, { net: lin });
  expect(shapes as unknown).toEqual({ net: { weight: [3, 2], bias: [3] } });
});
