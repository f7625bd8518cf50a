// mg.fast's fused ops against MLX 0.32.4 itself (test/fixtures/mlx-fast/fixtures.json, written by
// scripts/mlx-fast-fixtures.py): values and gradients on both devices; the fused primitives
// against their unfused compositions; gradcheck on both devices; jvp and vmap; tagged errors;
// the trace (kernel, precision, fallback reasons) and sdpaPlan.
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";

type Plain = number | string;
interface FixtureArray {
  shape: number[];
  dtype: string;
  values: (Plain | boolean)[];
}
interface Fixture {
  inputs: (FixtureArray | number)[];
  out: FixtureArray;
  cotangent: FixtureArray;
  grads?: Record<string, FixtureArray>;
  [extra: string]: unknown;
}

const fixtures = JSON.parse(readFileSync(join(import.meta.dir, "../fixtures/mlx-fast/fixtures.json"), "utf8")) as { mlx: string; cases: Record<string, Fixture> };
const DEVICES = [mg.cpu, mg.gpu] as const;

const DTYPES: Record<string, mg.Dtype> = { float32: mg.float32, float16: mg.float16, bfloat16: mg.bfloat16, bool: mg.bool_, int32: mg.int32 };
const num = (v: Plain | boolean): number => (typeof v === "boolean" ? (v ? 1 : 0) : v === "nan" ? NaN : v === "inf" ? Infinity : v === "-inf" ? -Infinity : v);

function fromFixture(a: FixtureArray): MgArray {
  const d = DTYPES[a.dtype]!;
  const flat = a.values.map(num);
  if (d === mg.bool_) return mg.array(flat.map((v) => v !== 0), mg.bool_).reshape(a.shape);
  return mg.array(flat, d === mg.int32 ? mg.int32 : mg.float32).astype(d).reshape(a.shape);
}

/** The metalgrad call of a fixture case, as a function of its differentiable inputs. */
function callOf(name: string, f: Fixture): (...xs: MgArray[]) => MgArray {
  const e = f as Record<string, unknown>;
  if (name.startsWith("rms_norm")) return (x, w) => mg.fast.rmsNorm(x!, w ?? null, e.eps as number);
  if (name.startsWith("layer_norm")) return (x, w, b) => mg.fast.layerNorm(x!, w ?? null, b ?? null, e.eps as number);
  if (name.startsWith("rope")) {
    return (x) =>
      mg.fast.rope(x!, e.dims as number, {
        traditional: e.traditional as boolean,
        base: e.base as number | null,
        scale: e.scale as number,
        offset: Array.isArray(e.offset) ? mg.array(e.offset as number[], mg.int32) : (e.offset as number),
        freqs: e.freqs ? mg.array(e.freqs as number[], mg.float32) : null,
      });
  }
  if (name.startsWith("sdpa")) {
    return (q, k, v, ...rest) => {
      const maskArray = e.mask === "bool" || e.mask === "additive" ? rest[0]! : null;
      const sinks = e.sinks ? rest[rest.length - 1]! : null;
      return mg.fast.scaledDotProductAttention(q!, k!, v!, { scale: e.scale as number, mask: e.mask === "causal" ? "causal" : maskArray, sinks });
    };
  }
  if (name.startsWith("cross_entropy")) return (l, t) => mg.fast.crossEntropy(l!, t!);
  throw new Error(`unknown fixture ${name}`);
}

function tolerance(dtype: string, kind: "value" | "grad"): { rtol: number; atol: number } {
  if (dtype === "float32") return kind === "value" ? { rtol: 1e-4, atol: 2e-5 } : { rtol: 5e-4, atol: 5e-5 };
  if (dtype === "float16") return { rtol: 1e-2, atol: 1e-2 };
  return { rtol: 5e-2, atol: 5e-2 }; // bfloat16: MLX's composition rounds its scores and products to 8 bits
}

function expectArrayClose(got: MgArray, want: FixtureArray, tol: { rtol: number; atol: number }, what: string): void {
  expect(got.shape, `${what} shape`).toEqual(want.shape);
  expect(got.dtype.name, `${what} dtype`).toBe(want.dtype);
  const g = Array.from(got.astype(mg.float32).dataSync() as Float32Array);
  const w = want.values.map(num);
  let worst = 0;
  let at = -1;
  for (let i = 0; i < w.length; i++) {
    if (Number.isNaN(w[i]!) || !Number.isFinite(w[i]!)) {
      expect(Object.is(g[i], w[i]) || (Number.isNaN(g[i]!) && Number.isNaN(w[i]!)), `${what}[${i}]: ${g[i]} vs MLX ${w[i]}`).toBe(true);
      continue;
    }
    const err = Math.abs(g[i]! - w[i]!) - tol.rtol * Math.abs(w[i]!);
    if (err > worst || Number.isNaN(err)) {
      worst = Number.isNaN(err) ? Infinity : err;
      at = i;
    }
  }
  expect(worst <= tol.atol, `${what}: element ${at} is ${g[at]}, MLX ${w[at]} (excess ${worst})`).toBe(true);
}

describe(`values and gradients equal MLX ${fixtures.mlx}`, () => {
  for (const [name, f] of Object.entries(fixtures.cases)) {
    for (const device of DEVICES) {
      test(`${name} on ${device.type}`, () => {
        const inputs = f.inputs.map((a) => (typeof a === "number" ? a : fromFixture(a))) as MgArray[];
        const fn = callOf(name, f);
        const dtype = f.out.dtype === "float32" ? (f.inputs[0] as FixtureArray).dtype : f.out.dtype;
        mg.stream(device, () => {
          expectArrayClose(fn(...inputs), f.out, tolerance(dtype, "value"), `${name} output`);
          if (!f.grads) return;
          const argnums = Object.keys(f.grads).map(Number);
          const [, vjps] = mg.vjp((...xs: MgArray[]) => fn(...inputs.map((x, i) => (argnums.includes(i) ? xs[argnums.indexOf(i)]! : x))), argnums.map((i) => inputs[i]!), [fromFixture(f.cotangent)]);
          argnums.forEach((i, k) => expectArrayClose(vjps[k] as MgArray, f.grads![String(i)]!, tolerance(dtype, "grad"), `${name} grad ${i}`));
        });
      });
    }
  }
});
