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
const num = (v: Plain | boolean): number =>
  typeof v === "boolean" ? (v ? 1 : 0) : typeof v === "number" ? v : v === "nan" ? NaN : v === "inf" ? Infinity : -Infinity;

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
  expect(got.dtype.name as string, `${what} dtype`).toBe(want.dtype);
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

// ---------------------------------------------------------------------------------------------
// The fused primitives against their unfused compositions (ts/fast/unfused.ts), both devices.

import { layerNormUnfused, rmsNormUnfused, ropeUnfused, sdpaUnfused, crossEntropyUnfused } from "../../ts/fast/unfused.ts";
import { sliceStatic } from "../../ts/core/ops/slicing.ts";

function rand(shape: number[], seed: number, dtype: mg.Dtype = mg.float32, scale = 1): MgArray {
  return mg.multiply(mg.random.normal(shape, mg.float32, 0, 1, { key: mg.random.key(seed) }), scale).astype(dtype);
}

function maxAbsDiff(a: MgArray, b: MgArray): number {
  return mg.max(mg.abs(mg.subtract(a.astype(mg.float32), b.astype(mg.float32)))).item() as number;
}

interface Comparison {
  name: string;
  fused: (...xs: MgArray[]) => MgArray;
  unfused: (...xs: MgArray[]) => MgArray;
  inputs: () => MgArray[];
  /** Differentiable inputs (default: all). */
  argnums?: number[];
  tol?: number;
}

const comparisons: Comparison[] = [
  { name: "rmsNorm", fused: (x, w) => mg.fast.rmsNorm(x!, w!, 1e-5), unfused: (x, w) => rmsNormUnfused(x!, w!, 1e-5, x!.dtype), inputs: () => [rand([3, 5, 40], 1), rand([40], 2)] },
  { name: "rmsNorm long rows (looped kernel)", fused: (x) => mg.fast.rmsNorm(x!, null, 1e-6), unfused: (x) => rmsNormUnfused(x!, null, 1e-6, x!.dtype), inputs: () => [rand([2, 5000], 3)] },
  {
    name: "layerNorm",
    fused: (x, w, b) => mg.fast.layerNorm(x!, w!, b!, 1e-5),
    unfused: (x, w, b) => layerNormUnfused(x!, w!, b!, 1e-5, x!.dtype),
    inputs: () => [mg.add(rand([4, 33], 4), 2), rand([33], 5), rand([33], 6)],
  },
  {
    name: "rope (offset array, partial, traditional)",
    fused: (x) => mg.fast.rope(x!, 6, { traditional: true, base: 1000, scale: 0.7, offset: mg.array([2, 9], mg.int32) }),
    unfused: (x) => ropeUnfused(x!, mg.array([2, 9], mg.int32), null, { dims: 6, traditional: true, base: 1000, scale: 0.7, forward: true }),
    inputs: () => [rand([2, 3, 7, 10], 7)],
  },
  {
    name: "sdpa prefill, GQA, causal, sinks",
    fused: (q, k, v, s) => mg.fast.scaledDotProductAttention(q!, k!, v!, { scale: 0.3, mask: "causal", sinks: s! }),
    unfused: (q, k, v, s) => sdpaUnfused(q!, k!, v!, 0.3, "causal", null, s!),
    inputs: () => [rand([2, 4, 19, 24], 8), rand([2, 2, 23, 24], 9), rand([2, 2, 23, 24], 10), rand([4], 11)],
    argnums: [0, 1, 2],
  },
  {
    name: "sdpa prefill, broadcast boolean mask",
    fused: (q, k, v, m) => mg.fast.scaledDotProductAttention(q!, k!, v!, { scale: 0.2, mask: m! }),
    unfused: (q, k, v, m) => sdpaUnfused(q!, k!, v!, 0.2, "array", mg.broadcastTo(m!, [1, 2, 12, 17]), null),
    // head dim 24, as the case above: the mask is what this case is about, and each head dim is a kernel pair to compile
    inputs: () => [rand([1, 2, 12, 24], 12), rand([1, 2, 17, 24], 13), rand([1, 2, 17, 24], 14), mg.greater(rand([12, 17], 15), -0.5)],
    argnums: [0, 1, 2],
  },
  {
    name: "sdpa decode (qL 3), additive mask, Dv ≠ Dk",
    fused: (q, k, v, m) => mg.fast.scaledDotProductAttention(q!, k!, v!, { scale: 0.2, mask: m! }),
    unfused: (q, k, v, m) => sdpaUnfused(q!, k!, v!, 0.2, "array", mg.broadcastTo(m!, [1, 4, 3, 150]), null),
    inputs: () => [rand([1, 4, 3, 16], 16), rand([1, 1, 150, 16], 17), rand([1, 1, 150, 8], 18), rand([1, 1, 3, 150], 19)],
    argnums: [0, 1, 2],
  },
  {
    name: "sdpa head dim 256",
    fused: (q, k, v) => mg.fast.scaledDotProductAttention(q!, k!, v!, { scale: 1 / 16 }),
    unfused: (q, k, v) => sdpaUnfused(q!, k!, v!, 1 / 16, "none", null, null),
    inputs: () => [rand([1, 1, 10, 256], 20), rand([1, 1, 9, 256], 21), rand([1, 1, 9, 256], 22)],
  },
  {
    name: "crossEntropy",
    fused: (l, t) => mg.fast.crossEntropy(l!, t!),
    unfused: (l, t) => crossEntropyUnfused(l!, t!),
    inputs: () => [rand([3, 4, 50], 23, mg.float32, 3), mg.array(Array.from({ length: 12 }, (_, i) => (i * 7) % 50), mg.int32).reshape([3, 4])],
    argnums: [0],
  },
];

describe("fused equals the unfused composition (values and gradients)", () => {
  for (const c of comparisons) {
    for (const device of DEVICES) {
      test(`${c.name} on ${device.type}`, () => {
        const xs = c.inputs();
        const argnums = c.argnums ?? xs.map((_, i) => i);
        mg.stream(device, () => {
          const a = c.fused(...xs);
          const b = c.unfused(...xs);
          expect(maxAbsDiff(a, b)).toBeLessThan(c.tol ?? 2e-5);
          const cot = rand([...a.shape], 99);
          const wrap = (f: (...ys: MgArray[]) => MgArray) => (...ys: MgArray[]) => f(...xs.map((x, i) => (argnums.includes(i) ? ys[argnums.indexOf(i)]! : x)));
          const [, ga] = mg.vjp(wrap(c.fused), argnums.map((i) => xs[i]!), [cot]);
          const [, gb] = mg.vjp(wrap(c.unfused), argnums.map((i) => xs[i]!), [cot]);
          (ga as MgArray[]).forEach((g, k) => expect(maxAbsDiff(g, (gb as MgArray[])[k]!), `grad ${argnums[k]}`).toBeLessThan(c.tol ?? 1e-4));
        });
      });
    }
  }
});

// ---------------------------------------------------------------------------------------------
// gradcheck on both devices (CPU in float64; GPU: float32 analytic side, float64 differences)

const GRADCHECK_DEVICES = [
  { device: mg.cpu, dtype: mg.float64 },
  { device: mg.gpu, dtype: mg.float32 },
] as const;

interface GradCase {
  name: string;
  fn: (...xs: MgArray[]) => MgArray;
  inputs: () => MgArray[];
  order?: number;
}

const gradCases: GradCase[] = [
  { name: "rmsNorm (x, weight), to order 2", fn: (x, w) => mg.fast.rmsNorm(x!, w!, 1e-5), inputs: () => [rand([2, 6], 31), rand([6], 32)], order: 2 },
  { name: "layerNorm (x, weight, bias), to order 2", fn: (x, w, b) => mg.fast.layerNorm(x!, w!, b!, 1e-5), inputs: () => [rand([3, 5], 33), rand([5], 34), rand([5], 35)], order: 2 },
  { name: "rope", fn: (x) => mg.fast.rope(x!, 4, { traditional: false, base: 10000, scale: 1, offset: 3 }), inputs: () => [rand([1, 2, 3, 6], 36)] },
  {
    name: "sdpa prefill (GQA, causal, sinks)",
    fn: (q, k, v) => mg.fast.scaledDotProductAttention(q!, k!, v!, { scale: 0.5, mask: "causal", sinks: mg.array([0.5, -1], mg.float32) }),
    inputs: () => [rand([1, 2, 9, 4], 37), rand([1, 1, 10, 4], 38), rand([1, 1, 10, 4], 39)],
  },
  {
    name: "sdpa decode (boolean mask)",
    fn: (q, k, v) => mg.fast.scaledDotProductAttention(q!, k!, v!, { scale: 0.5, mask: mg.array([[true, false, true, true, false, true]]) }),
    inputs: () => [rand([1, 2, 1, 4], 40), rand([1, 2, 6, 4], 41), rand([1, 2, 6, 3], 42)],
  },
  { name: "sdpa, to order 2", fn: (q, k, v) => mg.fast.scaledDotProductAttention(q!, k!, v!, { scale: 0.5 }), inputs: () => [rand([1, 1, 3, 2], 43), rand([1, 1, 3, 2], 44), rand([1, 1, 3, 2], 45)], order: 2 },
  { name: "crossEntropy, to order 2", fn: (l) => mg.fast.crossEntropy(l!, mg.array([1, 0, 3], mg.int32)), inputs: () => [rand([3, 4], 46)], order: 2 },
];

describe.each(GRADCHECK_DEVICES.map((d) => [d.device.type, d] as const))("gradcheck on %s", (_n, { device, dtype }) => {
  for (const c of gradCases) {
    test(c.name, () => {
      const inputs = c.inputs().map((x) => x.astype(dtype));
      const report = mg.testing.gradcheck(c.fn, inputs, { stream: device, order: c.order ?? 1 });
      expect(report.ok).toBe(true);
      expect(report.compared).toBeGreaterThan(0);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// jvp and vmap (by composition)

describe("jvp and vmap", () => {
  for (const device of DEVICES) {
    test(`jvp equals the composition's on ${device.type}`, () => {
      mg.stream(device, () => {
        const x = rand([2, 8], 50);
        const w = rand([8], 51);
        const t = [rand([2, 8], 52), rand([8], 53)];
        const [, a] = mg.jvp((x: MgArray, w: MgArray) => mg.fast.rmsNorm(x, w, 1e-5), [x, w], t);
        const [, b] = mg.jvp((x: MgArray, w: MgArray) => rmsNormUnfused(x, w, 1e-5, mg.float32), [x, w], t);
        expect(maxAbsDiff(a[0]!, b[0]!)).toBeLessThan(1e-5);
        const q = rand([1, 2, 5, 8], 54);
        const k = rand([1, 2, 6, 8], 55);
        const v = rand([1, 2, 6, 8], 56);
        const tq = [rand([1, 2, 5, 8], 57), rand([1, 2, 6, 8], 58), rand([1, 2, 6, 8], 59)];
        const [, sa] = mg.jvp((q: MgArray, k: MgArray, v: MgArray) => mg.fast.scaledDotProductAttention(q, k, v, { scale: 0.3, mask: "causal" }), [q, k, v], tq);
        const [, sb] = mg.jvp((q: MgArray, k: MgArray, v: MgArray) => sdpaUnfused(q, k, v, 0.3, "causal", null, null), [q, k, v], tq);
        expect(maxAbsDiff(sa[0]!, sb[0]!)).toBeLessThan(1e-4);
        const rx = rand([1, 2, 4, 6], 60);
        const [, ra] = mg.jvp((x: MgArray) => mg.fast.rope(x, 6, { traditional: false, base: 100, scale: 1, offset: 1 }), [rx], [rx]);
        expect(maxAbsDiff(ra[0]!, mg.fast.rope(rx, 6, { traditional: false, base: 100, scale: 1, offset: 1 }))).toBeLessThan(1e-6); // linear
        const l = rand([3, 7], 61);
        const tl = rand([3, 7], 62);
        const tg = mg.array([0, 6, 2], mg.int32);
        const [, ca] = mg.jvp((l: MgArray) => mg.fast.crossEntropy(l, tg), [l], [tl]);
        const [, cb] = mg.jvp((l: MgArray) => crossEntropyUnfused(l, tg), [l], [tl]);
        expect(maxAbsDiff(ca[0]!, cb[0]!)).toBeLessThan(1e-5);
      });
    });

    test(`vmap equals a loop on ${device.type}`, () => {
      mg.stream(device, () => {
        const xs = rand([3, 4, 8], 63);
        const ws = rand([3, 8], 64);
        const batched = mg.vmap((x: MgArray, w: MgArray) => mg.fast.layerNorm(x, w, null, 1e-5), [0, 0])(xs, ws) as MgArray;
        for (let i = 0; i < 3; i++) expect(maxAbsDiff(batched.index(i), mg.fast.layerNorm(xs.index(i), ws.index(i), null, 1e-5))).toBeLessThan(1e-5);
        // the mapped axis last: moved off the normalised axis
        const xl = rand([4, 8, 3], 65);
        const bl = mg.vmap((x: MgArray) => mg.fast.rmsNorm(x, null, 1e-5), [2])(xl) as MgArray;
        for (let i = 0; i < 3; i++) expect(maxAbsDiff(bl.index(i), mg.fast.rmsNorm(mg.take(xl, i, 2), null, 1e-5))).toBeLessThan(1e-5);
        // attention over a mapped axis with an unmapped mask
        const q = rand([2, 1, 2, 5, 8], 66);
        const k = rand([2, 1, 2, 7, 8], 67);
        const v = rand([2, 1, 2, 7, 8], 68);
        const m = mg.greater(rand([5, 7], 69), -0.6);
        const sa = mg.vmap((q: MgArray, k: MgArray, v: MgArray) => mg.fast.scaledDotProductAttention(q, k, v, { scale: 0.3, mask: m }))(q, k, v) as MgArray;
        for (let i = 0; i < 2; i++) {
          expect(maxAbsDiff(sa.index(i), mg.fast.scaledDotProductAttention(q.index(i), k.index(i), v.index(i), { scale: 0.3, mask: m }))).toBeLessThan(1e-5);
        }
        const ro = rand([2, 1, 2, 3, 4], 70);
        const rb = mg.vmap((x: MgArray) => mg.fast.rope(x, 4, { traditional: false, base: 10, scale: 1, offset: 2 }))(ro) as MgArray;
        expect(maxAbsDiff(rb.index(1), mg.fast.rope(ro.index(1), 4, { traditional: false, base: 10, scale: 1, offset: 2 }))).toBeLessThan(1e-6);
        const lg = rand([2, 3, 5], 71);
        const tg = mg.array([[1, 2, 3], [4, 0, 1]], mg.int32);
        const cb = mg.vmap((l: MgArray, t: MgArray) => mg.fast.crossEntropy(l, t))(lg, tg) as MgArray;
        expect(maxAbsDiff(cb, mg.fast.crossEntropy(lg, tg))).toBeLessThan(1e-6);
      });
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Bad input: tagged errors naming the op

describe("bad input is a tagged error", () => {
  const x = mg.ones([2, 3, 4]);
  const q = mg.ones([1, 2, 3, 8]);
  const kv = mg.ones([1, 2, 5, 8]);
  const cases: [string, () => unknown, string][] = [
    ["rms_norm 0-d", () => mg.fast.rmsNorm(mg.array(1.5), null, 1e-5), "[rms_norm] Input must have at least 1 dimension"],
    ["rms_norm weight size", () => mg.fast.rmsNorm(x, mg.ones([3]), 1e-5), "[rms_norm] weight must have the same size as the last dimension of x but has 3 elements."],
    ["rms_norm weight rank", () => mg.fast.rmsNorm(x, mg.ones([1, 4]), 1e-5), "[rms_norm] weight must have 1 dimension but has 2 dimensions."],
    ["rms_norm integer", () => mg.fast.rmsNorm(mg.array([1, 2]), null, 1e-5), "[rms_norm] Received unsupported type int32."],
    ["rms_norm eps", () => mg.fast.rmsNorm(x, null, "1e-5" as unknown as number), "[rms_norm] eps must be a number"],
    ["rms_norm unknown option", () => mg.fast.rmsNorm(x, null, 1e-5, { axis: 0 } as never), "[rms_norm] unknown option 'axis'"],
    ["layer_norm bias size", () => mg.fast.layerNorm(x, null, mg.ones([5]), 1e-5), "[layer_norm] bias must have the same size as the last dimension of x but has 5 elements."],
    ["rope rank", () => mg.fast.rope(mg.ones([3, 4]), 4, { traditional: false, base: 10, scale: 1, offset: 0 }), "[rope] Input must have at least 3 dimensions but got input with 2 dimensions."],
    ["rope odd dims", () => mg.fast.rope(x, 3, { traditional: false, base: 10, scale: 1, offset: 0 }), "[rope] dims must be even but got 3."],
    ["rope dims too big", () => mg.fast.rope(x, 6, { traditional: false, base: 10, scale: 1, offset: 0 }), "[rope] dims must not exceed the input's last dimension (4) but got 6."],
    ["rope base and freqs", () => mg.fast.rope(x, 4, { traditional: false, base: 10, scale: 1, offset: 0, freqs: mg.ones([2]) }), "[rope] Only one of base or freqs can have a value."],
    ["rope neither", () => mg.fast.rope(x, 4, { traditional: false, base: null, scale: 1, offset: 0 }), "[rope] Neither base nor freqs has a value."],
    ["rope freqs shape", () => mg.fast.rope(x, 4, { traditional: false, base: null, scale: 1, offset: 0, freqs: mg.ones([3]) }), "[rope] freqs must be one dimensional with size 2 but got shape (3,)."],
    ["rope offset size", () => mg.fast.rope(x, 4, { traditional: false, base: 10, scale: 1, offset: mg.array([1, 2, 3], mg.int32) }), "[rope] offset must be a scalar or vector with 2 elements"],
    ["rope float offset", () => mg.fast.rope(x, 4, { traditional: false, base: 10, scale: 1, offset: mg.array([1.5]) }), "[rope] offset must be an integer but got type float32."],
    ["rope missing keyword", () => mg.fast.rope(x, 4, { traditional: false, base: 10, scale: 1 } as never), "[rope] missing the keyword argument 'offset'"],
    ["sdpa rank", () => mg.fast.scaledDotProductAttention(mg.ones([2, 3, 8]), kv, kv, { scale: 1 }), "[scaled_dot_product_attention] input with shape (2,3,8) expected to be rank 4"],
    ["sdpa head dims", () => mg.fast.scaledDotProductAttention(q, mg.ones([1, 2, 5, 4]), kv, { scale: 1 }), "[scaled_dot_product_attention] query, keys expected to have matching last dimension"],
    ["sdpa heads", () => mg.fast.scaledDotProductAttention(mg.ones([1, 3, 3, 8]), kv, kv, { scale: 1 }), "[scaled_dot_product_attention] n_heads must be a multiple of n_kv_heads, found n_heads 3 for n_kv_heads 2."],
    ["sdpa batch", () => mg.fast.scaledDotProductAttention(q, mg.ones([2, 2, 5, 8]), mg.ones([2, 2, 5, 8]), { scale: 1 }), "[scaled_dot_product_attention] mismatching batch dimension"],
    ["sdpa mask string", () => mg.fast.scaledDotProductAttention(q, kv, kv, { scale: 1, mask: "foo" as "causal" }), "[scaled_dot_product_attention] invalid mask option 'foo'. Must be 'causal', or an array."],
    ["sdpa mask rank", () => mg.fast.scaledDotProductAttention(q, kv, kv, { scale: 1, mask: mg.ones([1, 1, 1, 3, 5]) }), "expected to have at most rank 4"],
    ["sdpa mask shape", () => mg.fast.scaledDotProductAttention(q, kv, kv, { scale: 1, mask: mg.ones([4, 5]) }), "[scaled_dot_product_attention] the mask with shape (4,5) cannot be broadcast to (B, N_q, T_q, T_kv) = (1,2,3,5)."],
    ["sdpa mask dtype", () => mg.fast.scaledDotProductAttention(q.astype(mg.float16), kv.astype(mg.float16), kv.astype(mg.float16), { scale: 1, mask: mg.ones([3, 5]) }), "[scaled_dot_product_attention] Mask type must promote to output type float16."],
    ["sdpa sinks shape", () => mg.fast.scaledDotProductAttention(q, kv, kv, { scale: 1, sinks: mg.ones([3]) }), "[scaled_dot_product_attention] Received invalid shape for sinks (3,)."],
    ["sdpa scale missing", () => mg.fast.scaledDotProductAttention(q, kv, kv, {} as never), "[scaled_dot_product_attention] scale must be given"],
    ["sdpa integer", () => mg.fast.scaledDotProductAttention(mg.ones([1, 1, 2, 2], mg.int32), mg.ones([1, 1, 2, 2], mg.int32), mg.ones([1, 1, 2, 2], mg.int32), { scale: 1 }), "[scaled_dot_product_attention] Received unsupported type int32."],
    ["cross_entropy float targets", () => mg.fast.crossEntropy(mg.ones([2, 3]), mg.array([1.0, 2.5])), "[cross_entropy] targets must be integer class indices but got float32."],
    ["cross_entropy shape", () => mg.fast.crossEntropy(mg.ones([2, 3]), mg.array([1, 2, 0])), "[cross_entropy] targets shape (3,) does not match logits shape (2,3) with the last axis removed."],
    ["cross_entropy integer logits", () => mg.fast.crossEntropy(mg.array([1, 2]), mg.array(1)), "[cross_entropy] Received unsupported logits type int32."],
    ["cross_entropy 0-d", () => mg.fast.crossEntropy(mg.array(1.5), mg.array(1)), "[cross_entropy] logits must have at least 1 dimension"],
  ];
  for (const [name, f, message] of cases) test(name, () => expect(f).toThrow(message));
});

describe("gradients with respect to an additive mask and the sinks (MLX's CPU fallback has them)", () => {
  for (const device of [mg.cpu, mg.gpu]) {
    test(`equal the composition's on the ${device.type}`, () => {
      const s = { stream: device };
      const key = mg.random.key(11);
      const [k1, k2, k3, k4, k5] = mg.random.split(key, 5) as unknown as MgArray[];
      const q = mg.random.normal([1, 2, 3, 8], mg.float32, 0, 1, k1, s);
      const k = mg.random.normal([1, 2, 5, 8], mg.float32, 0, 1, k2, s);
      const v = mg.random.normal([1, 2, 5, 8], mg.float32, 0, 1, k3, s);
      const mask = mg.random.normal([3, 5], mg.float32, 0, 1, k4, s);
      const w = mg.random.normal([1, 2, 3, 8], mg.float32, 0, 1, k5, s);
      const sinks = mg.array([0.5, -1], mg.float32);
      const scale = 0.35;
      const fused = (m: MgArray, sk: MgArray) =>
        mg.sum(mg.multiply(mg.fast.scaledDotProductAttention(q, k, v, { scale, mask: m, sinks: sk, stream: device }), w));
      // softmax over [scores + mask, sink] (the sink is one extra logit per head), then · v.
      const composed = (m: MgArray, sk: MgArray) => {
        const scores = mg.add(mg.multiply(mg.matmul(q, mg.swapaxes(k, -1, -2)), scale), m);
        const sinkCol = mg.broadcastTo(mg.reshape(sk, [1, 2, 1, 1]), [1, 2, 3, 1]);
        const p = mg.softmax(mg.concatenate([scores, sinkCol], -1), -1);
        const probs = mg.slice(p, mg.array([0]), [3], [1, 2, 3, 5]);
        return mg.sum(mg.multiply(mg.matmul(probs, v), w));
      };
      const [gm, gs] = mg.stream(device, () => mg.grad(fused, [0, 1])(mask, sinks)) as MgArray[];
      const [em, es] = mg.stream(device, () => mg.grad(composed, [0, 1])(mask, sinks)) as MgArray[];
      const close = (a: MgArray, b: MgArray) => {
        const x = Array.from(a.dataSync() as Float32Array);
        const y = Array.from(b.dataSync() as Float32Array);
        expect(x.length).toBe(y.length);
        x.forEach((xi, i) => expect(xi).toBeCloseTo(y[i]!, 4));
      };
      close(gm!, em!);
      close(gs!, es!);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Nothing silent: which kernel ran, at what precision, and why not fused

const kernelsOf = (records: mg.TraceRecord[]) => records.map((r) => r.kernel);

describe("the trace says which kernel ran", () => {
  test("every op runs its fused kernel on the GPU, forward and backward", () => {
    mg.stream(mg.gpu, () => {
      const x = rand([2, 16], 80);
      const w = rand([16], 81);
      mg.eval(x, w);
      const fwd = mg.trace(() => [mg.fast.rmsNorm(x, w, 1e-5), mg.fast.layerNorm(x, w, w, 1e-5), mg.fast.crossEntropy(x, mg.array([1, 2], mg.int32))]);
      expect(kernelsOf(fwd).filter((k) => k.startsWith("mg_"))).toEqual(["mg_rms_norm_rows_f32", "mg_layer_norm_rows_f32", "mg_cross_entropy_forward_f32"]);
      const r = mg.trace(() => mg.grad((x: MgArray) => mg.sum(mg.fast.rope(x, 4, { traditional: false, base: 10, scale: 1, offset: 0 })))(rand([1, 1, 3, 4], 82)));
      expect(kernelsOf(r)).toContain("mg_rope_f32");
      const g = mg.trace(() => mg.grad((x: MgArray, w: MgArray) => mg.sum(mg.fast.layerNorm(x, w, null, 1e-5)), [0, 1])(x, w));
      expect(kernelsOf(g)).toEqual(expect.arrayContaining(["mg_layer_norm_vjp_rows_f32", "mg_layer_norm_param_grad_f32"]));
      const ce = mg.trace(() => mg.grad((x: MgArray) => mg.sum(mg.fast.crossEntropy(x, mg.array([1, 2], mg.int32))))(x));
      expect(kernelsOf(ce)).toContain("mg_cross_entropy_backward_f32");
    });
  });

  test("attention forward and backward never materialise the score matrix", () => {
    mg.stream(mg.gpu, () => {
      const q = rand([1, 2, 40, 16], 83);
      const k = rand([1, 2, 40, 16], 84);
      const v = rand([1, 2, 40, 16], 85);
      mg.eval(q, k, v);
      const records = mg.trace(() => mg.grad((q: MgArray, k: MgArray, v: MgArray) => mg.sum(mg.fast.scaledDotProductAttention(q, k, v, { scale: 0.25, mask: "causal" })), [0, 1, 2])(q, k, v));
      const heavy = records.filter((r) => !r.kernel.startsWith("mg_sdpa_"));
      // Besides the attention kernels only elementwise work on (…, 16)-wide arrays may run (40 keys:
      // the one-pass backward).
      expect(kernelsOf(records).filter((n) => n.startsWith("mg_sdpa_"))).toEqual(["mg_sdpa_prefill_f32_dk16_dv16_bk32", "mg_sdpa_backward_onepass_f32_dk16_dv16_bq32"]);
      const onePass = records.find((r) => r.kernel.startsWith("mg_sdpa_backward"))!;
      expect(onePass.layout).toContain("one pass (kL ≤ 256)");
      expect(heavy.filter((r) => /gemm|gemv|softmax/.test(r.kernel))).toEqual([]);
      const main = records.find((r) => r.kernel.startsWith("mg_sdpa_prefill"))!;
      expect(main.primitives).toEqual(["ScaledDotProductAttention"]);
      expect(main.precision).toContain("IEEE fp32 products");
      expect(main.precision).toContain("softmax fp32");
      expect(main.layout).toContain("mask causal");
      // Outside a transform the forward keeps no statistics (MLX's logsumexp only in training).
      const inference = mg.fast.scaledDotProductAttention(q, k, v, { scale: 0.25 });
      expect(inference.node!.outputs.length).toBe(1);
      mg.eval(inference);
      const decode = mg.trace(() => mg.fast.scaledDotProductAttention(sliceStatic(q, [0, 0, 0, 0], [1, 2, 1, 16]), k, v, { scale: 0.25 }));
      expect(kernelsOf(decode)).toEqual(expect.arrayContaining(["mg_sdpa_decode_f32", "mg_sdpa_decode_combine_f32"]));
    });
  });

  test("fused attention's peak memory grows linearly in L; the composition's quadratically", () => {
    const peak = (L: number, fused: boolean) =>
      mg.stream(mg.gpu, () => {
        const q = rand([1, 1, L, 16], 86);
        const k = rand([1, 1, L, 16], 87);
        const v = rand([1, 1, L, 16], 88);
        mg.eval(q, k, v);
        mg.synchronize();
        Bun.gc(true); // garbage of earlier tests freed during the measurement would hide part of it
        mg.clearCache(); // a cached block reused for a request may be up to twice its size
        const before = mg.getActiveMemory();
        mg.resetPeakMemory();
        const f = (q: MgArray, k: MgArray, v: MgArray) =>
          mg.sum(fused ? mg.fast.scaledDotProductAttention(q, k, v, { scale: 0.25 }) : sdpaUnfused(q, k, v, 0.25, "none", null, null));
        const grads = mg.grad(f, [0, 1, 2])(q, k, v) as MgArray[];
        mg.eval(grads);
        mg.synchronize();
        return mg.getPeakMemory() - before;
      });
    // The growth is measured from L/2 to L (not L to 2L): the same check, without an L=512 backward
    // that costs seconds of CPU on the simulator (and a tier-up compile) in CI.
    const L = 256;
    const scores = L * L * 4; // one float32 L×L matrix
    const [half, fused, unfused] = [peak(L / 2, true), peak(L, true), peak(L, false)];
    const what = `peaks: fused L=${L / 2} ${half}, L=${L} ${fused}; unfused ${unfused}; one score matrix ${scores}`;
    expect(fused, what).toBeLessThan(scores / 2);
    expect(unfused, what).toBeGreaterThan(scores);
    // doubling L at most doubles the fused peak (plus allocator rounding)
    expect(fused, what).toBeLessThan(2 * half + 64 * 1024);
  });
});

describe("an unfusable combination runs the composition, says why, and warns once", () => {
  const original = process.stderr.write.bind(process.stderr);
  let captured = "";
  afterEach(() => {
    process.stderr.write = original;
  });
  test("head dim 320 on the GPU", () => {
    process.stderr.write = ((chunk: string | Uint8Array) => {
      captured += String(chunk);
      return true;
    }) as typeof process.stderr.write;
    const previous = process.env.MG_WARN;
    delete process.env.MG_WARN;
    try {
      mg.stream(mg.gpu, () => {
        const q = rand([1, 1, 4, 320], 90);
        const plan = mg.fast.sdpaPlan(q, q, q, { scale: 0.05 });
        expect(plan.fused).toBe(false);
        expect(plan.kernel).toBe("unfused");
        expect(plan.reason).toContain("head dim 320 exceeds 256");
        expect(() => mg.fast.scaledDotProductAttention(q, q, q, { scale: 0.05, forceFused: true })).toThrow("[scaled_dot_product_attention] force_fused: no fused kernel takes these inputs");
        const records = mg.trace(() => mg.fast.scaledDotProductAttention(q, q, q, { scale: 0.05 }));
        expect(records.some((r) => r.kernel.startsWith("mg_sdpa_"))).toBe(false);
        const noted = records.filter((r) => r.notes.some((n) => n.includes("ran unfused") && n.includes("head dim 320 exceeds 256")));
        expect(noted.length).toBe(1);
        mg.eval(mg.fast.scaledDotProductAttention(q, q, q, { scale: 0.05 }));
        const ref = sdpaUnfused(q, q, q, 0.05, "none", null, null);
        expect(maxAbsDiff(mg.fast.scaledDotProductAttention(q, q, q, { scale: 0.05 }), ref)).toBe(0);
      });
    } finally {
      if (previous !== undefined) process.env.MG_WARN = previous;
    }
    const warnings = captured.split("\n").filter((l) => l.includes("ran unfused"));
    expect(warnings.length).toBe(1);
    expect(warnings[0]).toContain("MG_WARN=0 silences");
  });
  test("MG_WARN=0 silences the warning (the trace still says why)", () => {
    captured = "";
    process.stderr.write = ((chunk: string | Uint8Array) => {
      captured += String(chunk);
      return true;
    }) as typeof process.stderr.write;
    const previous = process.env.MG_WARN;
    process.env.MG_WARN = "0";
    try {
      const q = rand([1, 1, 3, 288], 97);
      const records = mg.trace(() => mg.fast.scaledDotProductAttention(q, q, q, { scale: 0.05, stream: mg.gpu }));
      expect(records.some((r) => r.notes.some((n) => n.includes("head dim 288 exceeds 256")))).toBe(true);
    } finally {
      if (previous === undefined) delete process.env.MG_WARN;
      else process.env.MG_WARN = previous;
    }
    expect(captured).not.toContain("ran unfused");
  });
});

describe("sdpaPlan answers before running", () => {
  const shaped = (shape: number[], dtype: mg.Dtype = mg.float16) => ({ shape, dtype });
  test("prefill, decode, backward, CPU", () => {
    const prefill = mg.fast.sdpaPlan(shaped([2, 8, 1024, 72]), shaped([2, 2, 1024, 72]), shaped([2, 2, 1024, 72]), { scale: 0.12, mask: "causal", stream: mg.gpu });
    expect(prefill.kernel).toBe("fused-prefill");
    expect(prefill.fused).toBe(true);
    expect(prefill.reason).toBeNull();
    expect(prefill.steps[0]!.kernel).toBe("mg_sdpa_prefill_f16_dk72_dv72_bk32");
    expect(prefill.steps[0]!.tiles).toEqual({ BQ: 32, BK: 32, DK: 72, DV: 72 });
    expect(prefill.accumulation).toContain("fp32 accumulate over fp16 operands");
    expect(prefill.scratchBytes).toBe(2 * 8 * 1024 * 8); // the saved row statistics
    expect(prefill.backward.kernel).toBe("fused-backward");
    expect(prefill.backward.steps.map((s) => s.kernel)).toEqual(["mg_sdpa_backward_dq_f16_dk72_dv72_bk32", "mg_sdpa_backward_dkdv_f16_dk72_dv72_bq32"]);
    expect(prefill.backward.scratchBytes).toBe(2 * 8 * 1024 * 4);
    const decode = mg.fast.sdpaPlan(shaped([1, 32, 1, 128]), shaped([1, 8, 4096, 128]), shaped([1, 8, 4096, 128]), { scale: 0.08, stream: mg.gpu });
    expect(decode.kernel).toBe("fused-decode");
    expect(decode.steps.map((s) => s.kernel)).toEqual(["mg_sdpa_decode_f16", "mg_sdpa_decode_combine_f16"]);
    expect(decode.steps[0]!.tiles.blocks).toBeGreaterThan(1);
    const big = mg.fast.sdpaPlan(shaped([1, 1, 64, 512], mg.float32), shaped([1, 1, 64, 512], mg.float32), shaped([1, 1, 64, 512], mg.float32), { scale: 0.04, stream: mg.gpu });
    expect(big.fused).toBe(false);
    expect(big.scratchBytes).toBeGreaterThanOrEqual(64 * 64 * 4 * 2);
    const onCpu = mg.fast.sdpaPlan(shaped([1, 1, 64, 512], mg.float32), shaped([1, 1, 64, 512], mg.float32), shaped([1, 1, 64, 512], mg.float32), { scale: 0.04, stream: mg.cpu });
    expect(onCpu.kernel).toBe("cpu-reference");
    expect(onCpu.fused).toBe(true);
  });
  test("the plan is what runs", () => {
    const q = rand([1, 2, 12, 24], 91);
    const plan = mg.fast.sdpaPlan(q, q, q, { scale: 0.1, stream: mg.gpu });
    const ran = mg.trace(() => mg.fast.scaledDotProductAttention(q, q, q, { scale: 0.1, stream: mg.gpu }));
    expect(kernelsOf(ran).filter((k) => k.startsWith("mg_sdpa"))).toEqual(plan.steps.map((s) => s.kernel));
  });
});

describe("the precision policy is read when the op is called", () => {
  test("accumulate16 native selects half-accumulating kernels; the trace says so", () => {
    mg.stream(mg.gpu, () => {
      const x = rand([2, 32], 92, mg.float16);
      const [native, dflt] = [
        mg.withPrecision({ accumulate16: "native" }, () => mg.trace(() => mg.fast.rmsNorm(x, null, 1e-5))),
        mg.trace(() => mg.fast.rmsNorm(x, null, 1e-5)),
      ];
      expect(kernelsOf(native)).toContain("mg_rms_norm_rows_f16_acc_f16");
      expect(native.find((r) => r.kernel.startsWith("mg_rms"))!.precision).toContain("policy accumulate16: native");
      expect(kernelsOf(dflt)).toContain("mg_rms_norm_rows_f16");
      // A lazy array built inside the scope keeps the policy it was built under.
      const lazy = mg.withPrecision({ accumulate16: "native" }, () => mg.fast.rmsNorm(x, null, 1e-5));
      expect(kernelsOf(mg.trace(() => lazy))).toContain("mg_rms_norm_rows_f16_acc_f16");
      const q = rand([1, 1, 16, 16], 93, mg.float16);
      const s = mg.withPrecision({ accumulate16: "native" }, () => mg.trace(() => mg.fast.scaledDotProductAttention(q, q, q, { scale: 0.25 })));
      expect(s[s.length - 1]!.kernel).toBe("mg_sdpa_prefill_f16_acc_f16_dk16_dv16_bk32");
    });
  });
  test('matmul "high" is recorded: no TF32/NAX kernel exists', () => {
    const q = rand([1, 1, 16, 16], 94);
    const records = mg.withPrecision({ matmul: "high" }, () => mg.trace(() => mg.fast.scaledDotProductAttention(q, q, q, { scale: 0.25, stream: mg.gpu })));
    const r = records.find((x) => x.kernel.startsWith("mg_sdpa_prefill"))!;
    expect(r.precision).toContain("IEEE fp32");
    expect(r.notes.join(" ")).toContain('matmul="high" allows TF32-class/NAX attention; metalgrad has no such kernel');
    expect(mg.withPrecision({ matmul: "high" }, () => mg.fast.sdpaPlan(q, q, q, { scale: 0.25, stream: mg.gpu })).notes[0]).toContain("none exists in metalgrad");
  });
});

describe("compile", () => {
  for (const device of DEVICES) {
    test(`compiled functions of fast ops, and their gradients, equal the plain ones on ${device.type}`, () => {
      mg.stream(device, () => {
        const x = rand([2, 8], 95);
        const q = rand([1, 2, 5, 8], 96);
        const fn = (x: MgArray, q: MgArray) =>
          mg.add(mg.sum(mg.fast.rmsNorm(x, null, 1e-5)), mg.sum(mg.fast.scaledDotProductAttention(q, q, q, { scale: 0.5, mask: "causal" })));
        const compiled = mg.compile(fn);
        expect(compiled(x, q).item()).toBeCloseTo(fn(x, q).item() as number, 5);
        // traced outside a transform, then differentiated: the backward recomputes the statistics
        const g1 = mg.grad((q: MgArray) => compiled(x, q))(q) as MgArray;
        const g2 = mg.grad((q: MgArray) => fn(x, q))(q) as MgArray;
        expect(maxAbsDiff(g1, g2)).toBeLessThan(1e-5);
      });
    });
  }
});
