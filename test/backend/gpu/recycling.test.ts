// ts/backend/gpu/index.ts: storage recycling within a batch must spare the inputs of region nodes
// that stay unmaterialised (their node is kept and recomputed if read later).
import { expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";

test("a value fused away and read later still finds its (internal) inputs", () => {
  mg.stream(mg.gpu, () => {
    // clipGradNorm's total norm feeds the kernel scaling each gradient and is not materialised by
    // the first eval; the sum of squares under it is internal, read only inside that batch, and
    // must not be recycled while the norm's node may still be recomputed.
    const a = mg.reshape(mg.array([1, 2, 3, 4, 5, 6], mg.float32), [2, 3]);
    const b = mg.array([5, 6, 7], mg.float32);
    const [clipped, norm] = mg.optimizers.clipGradNorm({ a, b: [b] }, 1.0);
    const read = (x: mg.MgArray) => Array.from(mg.astype(x, mg.float32, { stream: mg.cpu }).dataSync() as Float32Array);
    const total = Math.sqrt(91 + 110);
    expect(read(clipped.a)[0]!).toBeCloseTo(1 / total, 6);
    expect(read(clipped.b[0]!)[0]!).toBeCloseTo(5 / total, 6);
    expect(read(norm)[0]!).toBeCloseTo(total, 5);
  });
});
