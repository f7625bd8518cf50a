// Attention kernels (Sources/Kernels/sdpa.metal) against the float64 reference, run directly
// through the runtime: the tiled prefill kernel and the split-key decode kernel over head dims up
// to 256, every mask kind (none, causal bottom-right aligned, broadcast boolean with fully hidden
// rows, additive with -inf), grouped-query heads, sinks, strided inputs, every float dtype; and
// the fused backward (dQ, dK, dV recomputed from the saved row statistics).
import { afterAll, describe, expect, test } from "bun:test";
import { bfloat16, bool_, type Dtype, float16, float32 } from "../../../../ts/core/dtype.ts";
import type { KernelView } from "../../../../ts/backend/gpu/fast/common.ts";
import { encodeSdpa, encodeSdpaVjp, planSdpaKernels, type SdpaMaskKind, type SdpaProblem } from "../../../../ts/backend/gpu/fast/sdpa.ts";
import { prepareKernels } from "../../../../ts/backend/gpu/kernels.ts";
import { sdpaRef, type SdpaRefMask, sdpaStatsRef, sdpaVjpRef } from "../../../../ts/backend/cpu/fast.ts";
import { runtime } from "../../../../ts/backend/runtime.ts";
import { broadcast, dense, expectNear, normals, output, permuted, read, relTolerance, releaseAll, rounded, run } from "./harness.ts";

afterAll(releaseAll);
const TGMEM = runtime().device.maxThreadgroupMemoryLength;

interface Case {
  B?: number;
  Hq?: number;
  Hkv?: number;
  qL: number;
  kL: number;
  D: number;
  Dv?: number;
  dtype?: Dtype;
  mask?: SdpaMaskKind;
  /** Boolean/additive mask given as this shape (broadcast to [B, Hq, qL, kL]). */
  maskShape?: number[];
  sinks?: boolean;
  /** Store q as (B, qL, Hq, D) and read it transposed. */
  stridedQ?: boolean;
  backward?: boolean;
  /** The backward's kernels: the one-pass kernel (what kL ≤ 256 takes) or the two passes. */
  twoPass?: boolean;
  accumulate16?: "float32" | "native";
  seed?: number;
}

function expand(values: Float64Array, small: readonly number[], shape: readonly number[]): Float64Array {
  const out = new Float64Array(shape.reduce((p, s) => p * s, 1));
  const idx = new Array(shape.length).fill(0);
  for (let i = 0; i < out.length; i++) {
    let rem = i;
    for (let a = shape.length - 1; a >= 0; a--) {
      idx[a] = rem % shape[a]!;
      rem = Math.floor(rem / shape[a]!);
    }
    let off = 0;
    for (let a = 0; a < small.length; a++) off = off * small[a]! + (small[a] === 1 ? 0 : idx[a]!);
    out[i] = values[off]!;
  }
  return out;
}

function runCase(c: Case): { kernels: string[]; precision: string } {
  const d = c.dtype ?? float32;
  const B = c.B ?? 1;
  const Hq = c.Hq ?? 2;
  const Hkv = c.Hkv ?? Hq;
  const Dv = c.Dv ?? c.D;
  const mask = c.mask ?? "none";
  const seed = c.seed ?? c.qL * 1000 + c.kL + c.D;
  const p: SdpaProblem = { B, Hq, Hkv, qL: c.qL, kL: c.kL, Dk: c.D, Dv, dtype: d, mask, sinks: !!c.sinks };
  const plan = planSdpaKernels(p, c.accumulate16 ?? "float32", TGMEM, c.twoPass ? 0 : undefined);
  prepareKernels([...plan.steps.map((s) => s.kernel), ...(c.backward ? plan.backward.steps.map((s) => s.kernel) : [])]);

  const qs = [B, Hq, c.qL, c.D];
  const ks = [B, Hkv, c.kL, c.D];
  const vs = [B, Hkv, c.kL, Dv];
  const qr = rounded(normals(B * Hq * c.qL * c.D, seed, 1), d);
  const kr = rounded(normals(B * Hkv * c.kL * c.D, seed + 1, 1), d);
  const vr = rounded(normals(B * Hkv * c.kL * Dv, seed + 2, 1), d);
  const q: KernelView = c.stridedQ ? permuted(qr, qs, [0, 2, 1, 3], d) : dense(qr, qs, d);
  const k = dense(kr, ks, d);
  const v = dense(vr, vs, d);
  const full = [B, Hq, c.qL, c.kL];
  let maskView: KernelView | null = null;
  let refMask: SdpaRefMask = { kind: mask === "causal" ? "causal" : "none" };
  if (mask === "bool" || mask === "additive") {
    const small = c.maskShape ?? full;
    const count = small.reduce((a, s) => a * s, 1);
    const u = normals(count, seed + 3);
    let values: Float64Array;
    if (mask === "bool") {
      values = Float64Array.from(u, (x) => (x > -0.3 ? 1 : 0));
      // Hide every key of the first query row (where the row exists in the mask): uniform attention.
      const rowLen = small[3]!;
      if (small[2]! > 1 || c.qL === 1) for (let j = 0; j < rowLen; j++) values[j] = 0;
      maskView = broadcast(values, small, full, bool_);
    } else {
      values = rounded(
        Float64Array.from(u, (x, i) => (i % 7 === 3 ? -Infinity : x)),
        d,
      );
      maskView = broadcast(values, small, full, d);
    }
    refMask = { kind: mask, values: expand(values, small, full) };
  }
  const sinkValues = rounded(normals(Hq, seed + 4, 2), d);
  const sinks = c.sinks ? dense(sinkValues, [Hq], d) : null;
  const scale = 1 / Math.sqrt(c.D);

  const o = output([B, Hq, c.qL, Dv], d);
  const stats = output([B, Hq, c.qL, 2], float32);
  const rec = run((sink) => encodeSdpa(sink, p, plan, scale, { q, k, v, mask: maskView, sinks }, o, stats));
  const refOpts = { scale, mask: refMask, sinks: c.sinks ? sinkValues : null };
  const ref = sdpaRef(qr, kr, vr, { B, Hq, Hkv, qL: c.qL, kL: c.kL, Dk: c.D, Dv }, refOpts);
  const native = c.accumulate16 === "native" && d !== float32;
  const tol = d === float32 ? 1e-4 : (native ? 8 : 2) * relTolerance(d);
  expectNear(read(o), ref, tol, 1, `output (${plan.kind})`);
  // The saved statistics {log2-domain max, sum} equal the CPU primitive's (which a backward on the
  // other device would read).
  expectNear(read(stats), sdpaStatsRef(qr, kr, { B, Hq, Hkv, qL: c.qL, kL: c.kL, Dk: c.D, Dv }, refOpts), d === float32 ? 1e-4 : 1e-2, 1, "statistics");
  const kernels = rec.map((r) => r.kernel);

  if (c.backward) {
    const gr = rounded(normals(B * Hq * c.qL * Dv, seed + 5), d);
    const dO = dense(gr, [B, Hq, c.qL, Dv], d);
    const dq = output(qs, d);
    const dk = output(ks, d);
    const dv = output(vs, d);
    const oView = dense(read(o), [B, Hq, c.qL, Dv], d);
    const statsView = dense(read(stats), [B, Hq, c.qL, 2], float32);
    const brec = run((sink) => encodeSdpaVjp(sink, p, plan, scale, { q, k, v, mask: maskView, sinks, o: oView, stats: statsView, dO }, dq, dk, dv));
    kernels.push(...brec.map((r) => r.kernel));
    const g = sdpaVjpRef(qr, kr, vr, { B, Hq, Hkv, qL: c.qL, kL: c.kL, Dk: c.D, Dv }, refOpts, gr);
    const gtol = d === float32 ? 2e-4 : 4 * relTolerance(d);
    expectNear(read(dq), g.dq, gtol, 1, "dq");
    expectNear(read(dk), g.dk, gtol, 1, "dk");
    expectNear(read(dv), g.dv, gtol, 1, "dv");
  }
  return { kernels, precision: rec[0]!.precision };
}

describe("prefill (tiled)", () => {
  test("float32, no mask, GQA 2:1, partial tiles (qL 20, kL 37, D 20)", () => {
    const r = runCase({ Hq: 4, Hkv: 2, qL: 20, kL: 37, D: 20 });
    expect(r.kernels).toEqual(["mg_sdpa_prefill_f32_dk24_dv24_bk32"]);
    expect(r.precision).toContain("IEEE fp32 products");
  });
  test("causal, qL < kL (bottom-right aligned)", () => void runCase({ qL: 12, kL: 40, D: 16, mask: "causal" }));
  test("causal, qL > kL (rows that see no key attend uniformly)", () => void runCase({ qL: 40, kL: 11, D: 16, mask: "causal" }));
  test("boolean mask broadcast over batch and heads, a fully hidden row", () => void runCase({ B: 2, qL: 17, kL: 23, D: 16, mask: "bool", maskShape: [1, 1, 17, 23] }));
  test("boolean mask per head, with sinks", () => void runCase({ Hq: 2, qL: 9, kL: 30, D: 8, mask: "bool", maskShape: [1, 2, 9, 30], sinks: true }));
  test("additive mask with -inf entries, broadcast over queries", () => void runCase({ qL: 10, kL: 26, D: 32, mask: "additive", maskShape: [1, 2, 1, 26] }));
  test("sinks and causal", () => void runCase({ qL: 16, kL: 16, D: 24, mask: "causal", sinks: true }));
  test("strided q: (B, L, H, D) storage read as (B, H, L, D)", () => void runCase({ B: 2, qL: 11, kL: 19, D: 16, stridedQ: true }));
  test("different key and value head dims (Dk 40, Dv 24)", () => void runCase({ qL: 12, kL: 20, D: 40, Dv: 24 }));
  for (const d of [float16, bfloat16]) {
    test(`${d.name}, causal, GQA`, () => {
      const r = runCase({ Hq: 4, Hkv: 1, qL: 24, kL: 24, D: 32, dtype: d, mask: "causal" });
      expect(r.precision).toContain(`fp32 accumulate over ${d === float16 ? "fp16" : "bf16"} operands`);
    });
  }
  test("float16 with accumulate16 native: half simdgroup matrices, the trace says so", () => {
    const r = runCase({ qL: 16, kL: 24, D: 16, dtype: float16, accumulate16: "native" });
    expect(r.kernels[0]).toBe("mg_sdpa_prefill_f16_acc_f16_dk16_dv16_bk32");
    expect(r.precision).toContain("fp16 accumulate over fp16 operands");
    expect(r.precision).toContain("policy accumulate16: native");
  });
});

// (72: a head dim that is no power of two, at 32 keys a block; 128 and 256 take smaller key blocks)
describe("head dims up to 256 (prefill and decode)", () => {
  for (const D of [72, 128, 256]) {
    test(`D=${D}`, () => {
      const r = runCase({ Hq: 1, qL: 9, kL: 18, D, mask: "causal" });
      expect(r.kernels[0]).toMatch(/^mg_sdpa_prefill_f32_dk\d+_dv\d+_bk\d+$/);
      runCase({ Hq: 1, qL: 2, kL: 20, D });
    });
  }
});

describe("decode (split keys, qL ≤ 8)", () => {
  test("qL 1, kL 300: several key chunks merged", () => {
    const r = runCase({ Hq: 2, qL: 1, kL: 300, D: 32 });
    expect(r.kernels).toEqual(["mg_sdpa_decode_f32", "mg_sdpa_decode_combine_f32"]);
  });
  test("qL 8, causal, GQA 4:1, sinks", () => void runCase({ Hq: 4, Hkv: 1, qL: 8, kL: 200, D: 16, mask: "causal", sinks: true }));
  test("qL 3 > kL 2 causal: fully hidden rows", () => void runCase({ qL: 3, kL: 2, D: 8, mask: "causal" }));
  test("boolean mask with a fully hidden row, additive with -inf", () => {
    runCase({ qL: 4, kL: 150, D: 24, mask: "bool", maskShape: [1, 2, 4, 150] });
    runCase({ qL: 5, kL: 140, D: 24, mask: "additive" });
  });
  for (const d of [float16, bfloat16]) test(`${d.name}, kL 257`, () => void runCase({ qL: 2, kL: 257, D: 40, dtype: d }));
});

// Every case runs both backward kernels: the two passes (dQ, then dK/dV) and the one pass. Head
// dims: 8 (one 8-wide tile), 16 (two) and 256 with Dv 200 (many, Dk ≠ Dv, an odd tile count):
// each further float32 head dim is one more kernel pair, ~1.5 s of simulator compile in checked mode.
for (const twoPass of [true, false]) {
  describe(`fused backward (flash-attention-2), ${twoPass ? "two passes" : "one pass"}`, () => {
    const runB = (c: Case) => runCase({ ...c, backward: true, twoPass });
    test("float32, GQA 2:1, partial tiles", () => {
      const r = runB({ Hq: 4, Hkv: 2, qL: 19, kL: 27, D: 16 });
      expect(r.kernels.slice(1)).toEqual(twoPass ? ["mg_sdpa_backward_dq_f32_dk16_dv16_bk32", "mg_sdpa_backward_dkdv_f32_dk16_dv16_bq32"] : ["mg_sdpa_backward_onepass_f32_dk16_dv16_bq32"]);
    });
    test("causal qL < kL and qL > kL, several key blocks", () => {
      runB({ qL: 10, kL: 30, D: 8, mask: "causal" });
      runB({ qL: 35, kL: 12, D: 8, mask: "causal" });
      runB({ Hq: 4, Hkv: 1, qL: 70, kL: 75, D: 16, mask: "causal" });
    });
    test("boolean mask with a hidden row, sinks", () => void runB({ qL: 12, kL: 20, D: 16, mask: "bool", maskShape: [1, 1, 12, 20], sinks: true }));
    test("additive mask", () => void runB({ qL: 9, kL: 14, D: 16, mask: "additive", maskShape: [1, 2, 9, 14] }));
    test("decode forward then backward (qL 3)", () => void runB({ Hq: 2, Hkv: 1, qL: 3, kL: 40, D: 16, mask: "causal" }));
    test("D=256, Dv 200", () => void runB({ Hq: 1, qL: 9, kL: 10, D: 256, Dv: 200 }));
    for (const d of [float16, bfloat16]) test(`${d.name}`, () => void runB({ qL: 16, kL: 16, D: 16, dtype: d, mask: "causal" }));
    test("strided q", () => void runB({ B: 2, qL: 9, kL: 9, D: 8, stridedQ: true }));
  });
}

test("the backward takes one pass up to 256 keys, two passes beyond", () => {
  const p = (kL: number): SdpaProblem => ({ B: 1, Hq: 2, Hkv: 2, qL: 64, kL, Dk: 64, Dv: 64, dtype: float32, mask: "causal", sinks: false });
  expect(planSdpaKernels(p(256), "float32", TGMEM).backward.steps.map((s) => s.kernel.name)).toEqual(["mg_sdpa_backward_onepass_f32_dk64_dv64_bq32"]);
  expect(planSdpaKernels(p(256), "float32", TGMEM).backward.precision).toContain("one pass");
  expect(planSdpaKernels(p(257), "float32", TGMEM).backward.steps.map((s) => s.kernel.name)).toEqual(["mg_sdpa_backward_dq_f32_dk64_dv64_bk32", "mg_sdpa_backward_dkdv_f32_dk64_dv64_bq32"]);
});
