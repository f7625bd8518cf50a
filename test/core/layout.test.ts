// ts/core/layout.ts: the view computations both backends apply, and the placement a backend
// predicts through a chain of views before their inputs exist.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { broadcastStrides, dtypeView, placementOf, predictPlacement, reshapeStrides, sliceView } from "../../ts/core/layout.ts";

describe("view computations", () => {
  test("reshape regroups strides where the memory allows, else asks for a copy", () => {
    expect(reshapeStrides([2, 3], [3, 1], [3, 2], true)).toEqual([2, 1]);
    // Every other row of an (8, 3) array, split into pairs of rows.
    expect(reshapeStrides([4, 3], [6, 1], [2, 2, 3], false)).toEqual([12, 6, 1]);
    // A transposed (2, 3) array cannot be flattened in place.
    expect(reshapeStrides([3, 2], [1, 3], [6], false)).toBeNull();
  });

  test("broadcast, slice and dtype views", () => {
    expect(broadcastStrides([3], [1], [2, 3])).toEqual([0, 1]);
    expect(broadcastStrides([2, 1], [5, 1], [2, 4])).toEqual([5, 0]);
    // a[1::2, ::-1] of a (4, 3) row-major array at offset 0: starts at (1, 2).
    expect(sliceView(placementOf([4, 3], 0, [3, 1]), [1, 2], [2, -1], false)).toEqual({ input: 0, offset: 5, strides: [6, -1] });
    // float32 items from item 1 as int8: byte 4; as float64: not aligned to 8 bytes.
    const p = placementOf([2, 2], 1, [2, 1]);
    expect(dtypeView(p, mg.float32, mg.int8, [2, 8])).toEqual({ input: 0, offset: 4, strides: [8, 1] });
    expect(dtypeView(p, mg.float32, mg.float64, [2, 1])).toBeNull();
  });
});

describe("predictPlacement", () => {
  test("an evaluated array's layout, a fresh result row-major, views through their layout rules", () => {
    const x = mg.add(mg.ones([2, 3]), 1);
    expect(predictPlacement(x).strides).toEqual([3, 1]);
    expect(predictPlacement(mg.transpose(x)).strides).toEqual([1, 3]);
    expect(predictPlacement(mg.broadcastTo(mg.reshape(x, [2, 1, 3]), [2, 4, 3])).strides).toEqual([3, 0, 1]);
    const t = mg.transpose(mg.array([[1, 2], [3, 4]], mg.float32));
    mg.eval(t);
    expect(predictPlacement(t)).toBe(t.layout!);
  });
});
