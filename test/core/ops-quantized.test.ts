// Quantization ops beyond the parity cases: the GPU quantizes bit for bit like the CPU (itself
// MLX's, test/backend/cpu/quantize.test.ts), products on both devices against a float64
// product of the dequantised weights at decode and prefill shapes, derivatives by gradcheck on
// both devices, the trace's kernels and notes, errors.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { readFileSync } from "node:fs";
import { Xorshift32 } from "../fixtures/quantize/inputs.ts";

function rnd(shape: number[], seed: number, dtype = mg.float32): MgArray {
  const r = new Xorshift32(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  return mg.astype(mg.array(Float32Array.from({ length: n }, () => r.next() / 2 ** 31 - 1), mg.float32, { shape }), dtype);
}

const MODES: [string, number | null, number | null][] = [
  ["affine", 64, 4], ["affine", 32, 3], ["affine", 128, 8], ["affine", 64, 5], ["affine", 32, 2], ["affine", 64, 6],
  ["mxfp4", null, null], ["mxfp8", null, null], ["nvfp4", null, null],
];

describe("quantize on the GPU equals the CPU bit for bit", () => {
  for (const dtype of [mg.float32, mg.float16, mg.bfloat16]) {
    test(dtype.name, () => {
      const w = rnd([6, 256], 3, dtype);
      for (const [mode, gs, bits] of MODES) {
        const c = mg.quantize(w, gs, bits, mode, { stream: mg.cpu });
        const g = mg.quantize(w, gs, bits, mode, { stream: mg.gpu });
        c.forEach((a, i) => expect({ mode, i, v: g[i]!.tolist() }).toEqual({ mode, i, v: a.tolist() }));
      }
    });
  }
});

describe("quantized products on both devices", () => {
  // Decode (1 and 5 rows) and prefill (33 rows) against float64 products of the dequantised
  // weights; the GPU accumulates in float32.
  for (const device of [mg.cpu, mg.gpu]) {
    test(`decode and prefill, ${device.type}`, () => {
      const s = { stream: device };
      for (const [mode, gs, bits] of MODES) {
        for (const transpose of [true, false]) {
          const N = 128, K = 256;
          const w = rnd(transpose ? [N, K] : [K, N], 7);
          const q = mg.quantize(w, gs, bits, mode, { stream: mg.cpu });
          const args = mode === "affine" ? q : [q[0]!, q[1]!, null];
          const deq = mg.astype(mg.dequantize(args[0]!, args[1]!, args[2], gs, bits, mode, { dtype: mg.float32, stream: mg.cpu }), mg.float64, { stream: mg.cpu });
          for (const M of [1, 5, 33]) {
            const x = rnd([M, K], 11 + M);
            const y = mg.quantizedMatmul(x, args[0]!, args[1]!, args[2], transpose, gs, bits, mode, s);
            const ref = mg.matmul(mg.astype(x, mg.float64, { stream: mg.cpu }), transpose ? mg.transpose(deq) : deq, { stream: mg.cpu });
            const err = mg.max(mg.abs(mg.subtract(mg.astype(y, mg.float64, { stream: mg.cpu }), ref, { stream: mg.cpu }), { stream: mg.cpu }), null, false, { stream: mg.cpu }).item() as number;
            expect({ mode, bits, transpose, M, ok: err < 1e-4 }).toEqual({ mode, bits, transpose, M, ok: true });
          }
        }
      }
    }, 300_000);
  }

  test("the trace names qmv for decode and qmm for prefill, reading packed weights", () => {
    const [wq, sc, b] = mg.quantize(rnd([64, 128], 5), { stream: mg.cpu });
    const dec = mg.trace(() => mg.quantizedMatmul(rnd([2, 128], 6), wq!, sc!, b, { stream: mg.gpu }));
    expect(dec.some((r) => r.kernel.startsWith("mg_qmv_") && r.notes.some((n) => n.includes("packed weights")))).toBe(true);
    const pre = mg.trace(() => mg.quantizedMatmul(rnd([40, 128], 6), wq!, sc!, b, { stream: mg.gpu }));
    expect(pre.some((r) => r.kernel.startsWith("mg_qmm_"))).toBe(true);
  });
});

describe("quantizedMatmul derivatives", () => {
  for (const device of [mg.cpu, mg.gpu]) {
    test(`gradcheck w.r.t. x (both transposes, affine and mxfp4), ${device.type}`, () => {
      const [wq, sc, b] = mg.quantize(rnd([16, 64], 21), { stream: mg.cpu });
      const [fq, fs] = mg.quantize(rnd([16, 64], 22), null, null, "mxfp4", { stream: mg.cpu });
      const checks: [(x: MgArray) => MgArray, MgArray][] = [
        [(x) => mg.quantizedMatmul(x, wq!, sc!, b), rnd([3, 64], 23)],
        [(x) => mg.quantizedMatmul(x, wq!, sc!, b, false), rnd([2, 16], 24)],
        [(x) => mg.quantizedMatmul(x, fq!, fs!, null, true, null, null, "mxfp4"), rnd([2, 64], 25)],
      ];
      for (const [fn, x] of checks) {
        // Linear in x: large steps keep the float32 rounding of the finite differences small.
        const report = mg.testing.gradcheck(fn, [x], { stream: device, eps: 1e-2, atol: 2e-3, rtol: 2e-3, raiseException: false });
        expect({ ok: report.ok, message: report.message }).toEqual({ ok: true, message: report.message });
      }
    }, 300_000);

    test(`gradcheck w.r.t. affine scales and biases, ${device.type}`, () => {
      const [wq, sc, b] = mg.quantize(rnd([8, 64], 26), { stream: mg.cpu });
      const x = rnd([3, 64], 27);
      const report = mg.testing.gradcheck((s: MgArray, bb: MgArray) => mg.quantizedMatmul(x, wq!, s, bb), [sc!, b!], {
        stream: device, eps: 1e-2, atol: 2e-3, rtol: 2e-3, raiseException: false,
      });
      expect({ ok: report.ok, message: report.message }).toEqual({ ok: true, message: report.message });
    }, 300_000);
  }

  for (const device of [mg.cpu, mg.gpu]) {
    test(`gatherQmm: gradcheck w.r.t. x, scales and biases; no copy of the experts, ${device.type}`, () => {
      const [wq, sc, b] = mg.quantize(rnd([3, 8, 64], 40), { stream: mg.cpu });
      const lhs = mg.array([1, 0, 1, 1]), rhs = mg.array([2, 2, 0, 1]);
      const x = rnd([2, 2, 64], 41);
      const fn = (xx: MgArray, s: MgArray, bb: MgArray) => mg.gatherQmm(xx, wq!, s, bb, { lhsIndices: lhs, rhsIndices: rhs });
      const report = mg.testing.gradcheck(fn, [x, sc!, b!], { stream: device, eps: 1e-2, atol: 2e-3, rtol: 2e-3, raiseException: false });
      expect({ ok: report.ok, message: report.message }).toEqual({ ok: true, message: report.message });
      const records = mg.trace(() => mg.gatherQmm(x, wq!, sc!, b, { lhsIndices: lhs, rhsIndices: rhs, stream: device }));
      expect(records.some((r) => r.primitives.includes("Gather"))).toBe(false);
      expect(records.some((r) => r.primitives.includes("GatherQMM"))).toBe(true);
    }, 300_000);
  }

  test("the trace says the packed weights carry no gradient", () => {
    const [wq, sc, b] = mg.quantize(rnd([8, 64], 28), { stream: mg.cpu });
    const records = mg.trace(() => mg.grad((x: MgArray) => mg.sum(mg.quantizedMatmul(x, wq!, sc!, b)))(rnd([2, 64], 29)));
    expect(records.some((r) => r.kernel === "vjp:QuantizedMatmul" && r.notes.some((n) => n.includes("carry no gradient")))).toBe(true);
  });
});

describe("quantization errors", () => {
  test("tagged, and options by name", () => {
    const w = rnd([4, 64], 30);
    expect(() => mg.quantize(w, { groupSize: 64, bogus: 1 } as never)).toThrow("[quantize] unknown option 'bogus'. Accepted options: 'groupSize', 'bits', 'mode', 'globalScale', 'stream'.");
    expect(() => mg.quantize(w, 64, 4, "mxfp4")).toThrow("[quantize] mxfp4 quantization requires group size 32 but got 64.");
    const [wq, sc, b] = mg.quantize(w);
    expect(() => mg.quantizedMatmul(rnd([2, 32], 31), wq!, sc!, b)).toThrow("[quantized_matmul] Last dimension of first input");
    expect(() => mg.quantizedMatmul(rnd([2, 64], 31), wq!, sc!, null)).toThrow("[quantized_matmul] Biases must be provided");
    expect(() => mg.quantizedMatmul(rnd([2, 64], 31), mg.stack([wq!, wq!]), mg.stack([sc!, sc!]), mg.stack([b!, b!]))).toThrow("[quantized_matmul] The weights have batch axes");
  });
});

// A checkpoint quantized by MLX (test/fixtures/quantize/mlx-quantized.safetensors, from
// scripts/quantize-safetensors-fixture.py), read with a minimal safetensors parser here.
function readSafetensors(path: string): Map<string, MgArray> {
  const buf = readFileSync(path);
  const headerLen = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + headerLen).toString("utf8")) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const base = 8 + headerLen;
  const out = new Map<string, MgArray>();
  for (const [name, t] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const bytes = buf.subarray(base + t.data_offsets[0], base + t.data_offsets[1]);
    const copy = new Uint8Array(bytes).buffer;
    const data = t.dtype === "F16" ? new Float16Array(copy) : t.dtype === "U32" ? new Uint32Array(copy) : t.dtype === "U8" ? new Uint8Array(copy) : null;
    if (!data) throw new Error(`unexpected dtype ${t.dtype}`);
    out.set(name, mg.array(data, null, { shape: t.shape }));
  }
  return out;
}

describe("tensors quantized by MLX and saved as safetensors", () => {
  const t = readSafetensors(new URL("../fixtures/quantize/mlx-quantized.safetensors", import.meta.url).pathname);
  const configs = [["q4", "affine", 64, 4], ["q3", "affine", 32, 3], ["q8", "affine", 128, 8], ["mxfp4", "mxfp4", null, null], ["mxfp8", "mxfp8", null, null], ["nvfp4", "nvfp4", null, null]] as const;
  for (const device of [mg.cpu, mg.gpu]) {
    test(`quantize reproduces MLX's tensors bit for bit and the products agree, ${device.type}`, () => {
      const s = { stream: device };
      for (const [name, mode, gs, bits] of configs) {
        const mine = mg.quantize(t.get("w")!, gs, bits, mode, s);
        const theirs = [t.get(`${name}.weight`)!, t.get(`${name}.scales`)!, ...(t.has(`${name}.biases`) ? [t.get(`${name}.biases`)!] : [])];
        expect(mine.length).toBe(theirs.length);
        mine.forEach((a, i) => expect({ name, i, same: mg.arrayEqual(a, theirs[i]!).item() }).toEqual({ name, i, same: true }));
        const y = mg.quantizedMatmul(t.get("x")!, theirs[0]!, theirs[1]!, theirs[2] ?? null, true, gs, bits, mode, s);
        const want = t.get(`${name}.y`)!;
        // MLX's CPU accumulates float16 products in float16; metalgrad in float32/float64.
        const scale = mg.max(mg.abs(mg.astype(want, mg.float32))).item() as number;
        const err = mg.max(mg.abs(mg.subtract(mg.astype(y, mg.float32), mg.astype(want, mg.float32)))).item() as number;
        expect({ name, ok: err <= 2e-2 * scale }).toEqual({ name, ok: true });
      }
    }, 300_000);
  }
});
