// The GPU backend's eval (ts/backend/gpu/index.ts) with the runtime's failure isolation: a kernel
// that fails makes exactly the arrays computed from it fail — in the same batch and in later
// ones — while everything else the eval computed reads correctly.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";

const gpu = <T>(fn: () => T): T => mg.stream(mg.gpu, fn);

function message(fn: () => unknown): string {
  try {
    fn();
    return "";
  } catch (e) {
    return (e as Error).message;
  }
}

// Writes past the end of its output: checked mode fails the dispatch.
const outOfBounds = mg.fast.metalKernel({
  name: "isolation_oob",
  inputNames: ["a"],
  outputNames: ["out"],
  checked: true,
  source: "uint i = thread_position_in_grid.x;\nout[i + 1000] = a[i];",
});

function failing(a: mg.MgArray): mg.MgArray {
  return outOfBounds({ inputs: [a], outputShapes: [[a.size]], outputDtypes: [mg.float32], grid: [a.size, 1, 1], threadgroup: [a.size, 1, 1] })[0]!;
}

describe("failure isolation on the gpu", () => {
  test("an empty gather gives zeros and fails nothing (it bound a zero-byte buffer)", () => {
    const [r, ok] = gpu(() => [mg.takeAlongAxis(mg.exp(mg.zeros([0, 1])), mg.array([0])), mg.add(mg.array([1, 2]), 1)]);
    mg.eval(r!, ok!);
    expect(r!.tolist()).toEqual([0]);
    expect(ok!.tolist()).toEqual([2, 3]);
    // the other gathers from empty sources, as MLX
    expect(gpu(() => mg.takeAlongAxis(mg.zeros([0]), mg.array([0, 3]), 0)).tolist()).toEqual([0, 0]);
  });

  test("a failed kernel fails exactly its dependents in the same eval; the rest reads correctly", () => {
    const a = gpu(() => mg.array([1, 2, 3], mg.float32));
    const bad = gpu(() => failing(a));
    const [dep, depSum, ok, okSum] = gpu(() => [mg.add(bad, 1), mg.sum(mg.multiply(bad, 2)), mg.multiply(a, 2), mg.sum(mg.exp(a))]);
    mg.eval(bad, dep!, depSum!, ok!, okSum!);
    expect(message(() => bad.tolist())).toContain("out-of-bounds write in kernel 'custom_kernel_isolation_oob");
    for (const d of [dep!, depSum!]) {
      const m = message(() => d.tolist());
      expect(m).toStartWith("[gpu] computed from an array whose kernel failed: ");
      expect(m).toContain("isolation_oob");
    }
    expect(ok!.tolist()).toEqual([2, 4, 6]);
    expect(okSum!.item()).toBeCloseTo(Math.E + Math.E ** 2 + Math.E ** 3, 4);
  });

  test("the failure reaches later evals through the arrays computed from it, and only them", () => {
    const a = gpu(() => mg.array([1, 2, 3], mg.float32));
    const bad = gpu(() => failing(a));
    mg.eval(bad);
    const later = gpu(() => mg.add(bad, a));
    const clean = gpu(() => mg.add(a, a));
    mg.eval(later, clean);
    expect(message(() => later.tolist())).toStartWith("[gpu] computed from an array whose kernel failed: ");
    expect(clean.tolist()).toEqual([2, 4, 6]);
    // a CPU op reading the failed array fails; reading it again fails again
    expect(message(() => mg.stream(mg.cpu, () => mg.add(bad, 1)).tolist())).toContain("isolation_oob");
    expect(message(() => bad.tolist())).toContain("isolation_oob");
  });
});

describe("a host-side index check that fails fails its arrays, and only them (MG_CHECK_INDICES)", () => {
  for (const device of [mg.cpu, mg.gpu]) {
    test(`on ${device.type}`, () => {
      const saved = process.env.MG_CHECK_INDICES;
      process.env.MG_CHECK_INDICES = "1";
      try {
        const x = mg.stream(device, () => mg.array([1, 2, 3], mg.float32));
        const bad = mg.stream(device, () => mg.take(x, mg.array([7])));
        const dep = mg.stream(device, () => mg.add(bad, 1));
        const good = mg.stream(device, () => mg.multiply(x, 2));
        expect(message(() => mg.eval(good, bad, dep))).toContain("[gather] Index 7 is out of bounds for axis 0 with size 3");
        expect(good.tolist()).toEqual([2, 4, 6]);
        // reading the failed arrays fails (again), never shows the zeros the kernel wrote
        expect(message(() => bad.tolist())).toContain("Index 7 is out of bounds");
        expect(message(() => dep.tolist())).toContain("Index 7 is out of bounds");
        expect(message(() => bad.tolist())).toContain("Index 7 is out of bounds");
      } finally {
        if (saved === undefined) delete process.env.MG_CHECK_INDICES;
        else process.env.MG_CHECK_INDICES = saved;
      }
    });
  }
});
