// ts/nn/init.ts and the layers' default initialisations: after the same mg.random.seed as
// mx.random.seed, uniform values are MLX's bit for bit (mg.random draws MLX's bits). Normal values
// go through erfinv, whose float32 implementations differ in the last bits (a few ulps here on the
// CPU, up to ~6e-6 relative in the simulated GPU's tails); orthogonal's QR runs in float64 here and
// in float32 LAPACK in MLX.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { DEVICES, type Enc, evalTs, expectPairsClose, loadFixture } from "./fixtures.ts";

interface InitCase {
  name: string;
  ts: string;
  seed: number;
  value: [string, Enc][];
}

const fixture = loadFixture<InitCase>("init");

describe(`MLX ${fixture.mlx} initialisations`, () => {
  for (const device of DEVICES) {
    test.each(fixture.cases.map((c) => [c.name, c] as const))(`%s on ${device.type}`, (_n, c) => {
      mg.stream(device, () => {
        mg.random.seed(c.seed);
        const v = evalTs(c.ts);
        const pairs: [string, unknown][] = v instanceof mg.nn.Module ? v.namedParameters() : [["", v]];
        const normal = /normal|Embedding|sparse|orthogonal/i.test(c.ts);
        const tol = normal ? { rtol: 1e-5, atol: 1e-6 } : { rtol: 0, atol: 0 };
        expectPairsClose(pairs, c.value, c.name, tol);
      });
    });
  }
});

test("all 10 of MLX's initializers exist and check their input", () => {
  expect(Object.keys(mg.nn.init).sort()).toEqual(
    ["constant", "glorotNormal", "glorotUniform", "heNormal", "heUniform", "identity", "normal", "orthogonal", "sparse", "uniform"].sort(),
  );
  expect(() => mg.nn.init.identity()(mg.zeros([2, 3]))).toThrow("[init.identity] The input array must be a square matrix but got shape (2,3).");
  expect(() => mg.nn.init.glorotUniform()(mg.zeros([3]))).toThrow("[init.glorot_uniform] Glorot / He initialization requires at least 2 dimensional input");
  expect(() => mg.nn.init.heNormal()(mg.zeros([3, 3]), "fan_avg" as never)).toThrow("[init.he_normal] Invalid mode: fan_avg.");
  expect(() => mg.nn.init.orthogonal()(mg.zeros([3, 3, 3]))).toThrow("[init.orthogonal] Orthogonal initialization requires a 2D array but got a 3D array.");
  expect(() => mg.nn.init.normal({ stdev: 1 } as never)).toThrow("[init.normal] unknown option 'stdev' (did you mean 'std'?). Accepted options: 'mean', 'std', 'dtype'.");
});

test("orthogonal gives orthonormal rows or columns", () => {
  const q = mg.nn.init.orthogonal()(mg.zeros([6, 4]));
  const g = mg.matmul(q.T, q);
  expect(mg.allclose(g, mg.eye(4), 1e-5, 1e-5).item()).toBe(true);
});
