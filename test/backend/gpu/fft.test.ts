// Sources/Kernels/fft.metal through ts/backend/gpu/fft.ts: the kernels run directly on the runtime
// against the float64 CPU library, then the FFT ops on the GPU against the CPU device.
import { describe, expect, test } from "bun:test";
import { encodeFft, type FftJob, type FftKind } from "../../../ts/backend/gpu/fft.ts";
import { fftPlan, runFft } from "../../../ts/backend/cpu/fft.ts";
import { runtime, type NativeBuffer, type Dispatch } from "../../../ts/backend/runtime.ts";
import { Xorshift32 } from "../../fixtures/quantize/inputs.ts";
import * as mg from "../../../ts/index.ts";
import { expectClose, runOn } from "./harness.ts";

const rt = runtime();

function runJob(job: Omit<FftJob, "input" | "output">, input: Float32Array, outFloats: number): Float32Array {
  const inBuf = rt.newBuffer(Math.max(input.byteLength, 8));
  inBuf.as(Float32Array).set(input);
  const outBuf = rt.newBuffer(Math.max(outFloats * 4, 8));
  const temps: NativeBuffer[] = [];
  const batch = rt.newBatch();
  encodeFft(
    {
      dispatch: (d: Dispatch) => void batch.dispatch(d),
      temporary: (bytes: number) => {
        const b = rt.newBuffer(bytes);
        temps.push(b);
        return b;
      },
    },
    { ...job, input: { buffer: inBuf, offset: 0 }, output: { buffer: outBuf, offset: 0 } },
  );
  batch.submit().wait();
  const out = outBuf.as(Float32Array).slice(0, outFloats);
  for (const b of [inBuf, outBuf, ...temps]) b.release();
  return out;
}

/** Reference: line-wise complex DFT (float64) of `n` points taken from complex input lines. */
function referenceLine(re: Float64Array, im: Float64Array, sign: 1 | -1): [Float64Array, Float64Array] {
  const r = re.slice(), i = im.slice();
  runFft(fftPlan(re.length, sign), r, i);
  return [r, i];
}

function random(n: number, seed: number): Float32Array {
  const r = new Xorshift32(seed);
  return Float32Array.from({ length: n }, () => r.next() / 2 ** 31 - 1);
}

interface Case {
  kind: FftKind;
  n: number;
  nIn: number;
  lines: number;
  sign: 1 | -1;
}

function check(c: Case, seed: number): void {
  const { kind, n, nIn, lines, sign } = c;
  const nOut = kind === "r2c" ? (n >> 1) + 1 : n;
  // Contiguous lines: input line l at l·nIn (complex or real elements).
  const inLen = kind === "r2c" ? nIn : nIn; // elements per line
  const lanes = kind === "r2c" ? 1 : 2;
  const input = random(lines * inLen * lanes, seed);
  const scale = sign > 0 ? 1 / n : 1;
  const got = runJob(
    {
      kind, n, nIn, nOut, lines, lineShape: [lines], inLineStrides: [inLen], outLineStrides: [nOut],
      inBase: 0, outBase: 0, inStride: 1, outStride: 1, sign, scale,
    },
    input,
    lines * nOut * (kind === "c2r" ? 1 : 2),
  );
  let err = 0, mag = 0;
  for (let l = 0; l < lines; l++) {
    const re = new Float64Array(n), im = new Float64Array(n);
    if (kind === "c2r") {
      // Hermitian extension of bins 0..n/2 (those present), edge imaginary parts dropped.
      const h = n >> 1;
      for (let k = 0; k < n; k++) {
        const src = k > h ? n - k : k;
        if (src >= nIn) continue;
        re[k] = input[(l * inLen + src) * 2]!;
        let v = input[(l * inLen + src) * 2 + 1]!;
        if (src === 0 || (n % 2 === 0 && src === h)) v = 0;
        im[k] = k > h ? -v : v;
      }
    } else {
      for (let k = 0; k < Math.min(n, nIn); k++) {
        re[k] = input[(l * inLen + k) * lanes]!;
        im[k] = lanes === 2 ? input[(l * inLen + k) * 2 + 1]! : 0;
      }
    }
    const [wr, wi] = referenceLine(re, im, sign);
    for (let k = 0; k < nOut; k++) {
      const er = wr[k]! * scale, ei = wi[k]! * scale;
      const gr = kind === "c2r" ? got[l * nOut + k]! : got[(l * nOut + k) * 2]!;
      const gi = kind === "c2r" ? 0 : got[(l * nOut + k) * 2 + 1]!;
      err = Math.max(err, Math.hypot(gr - er, kind === "c2r" ? 0 : gi - ei));
      mag = Math.max(mag, Math.hypot(er, ei));
    }
  }
  expect({ c, rel: err / Math.max(mag, 1e-30) < 2e-5 * Math.max(1, Math.log2(n)) }).toEqual({ c, rel: true });
}

describe("GPU FFT kernels against the float64 library", () => {
  test("complex, one threadgroup per line", () => {
    let seed = 1;
    for (const n of [1, 2, 3, 8, 12, 30, 49, 60, 64, 121, 243, 1000, 1024, 2048]) {
      for (const sign of [-1, 1] as const) check({ kind: "c2c", n, nIn: n, lines: 3, sign }, seed++);
    }
  }, 300_000);

  test("complex, multi-pass and Bluestein (primes above 61)", () => {
    let seed = 100;
    for (const n of [4096, 3 * 1024 + 0, 67, 97, 2 * 127, 4099]) {
      for (const sign of [-1, 1] as const) check({ kind: "c2c", n, nIn: n, lines: 2, sign }, seed++);
    }
  }, 300_000);

  test("padding and truncation along the axis", () => {
    check({ kind: "c2c", n: 16, nIn: 10, lines: 4, sign: -1 }, 7);
    check({ kind: "c2c", n: 16, nIn: 20, lines: 4, sign: -1 }, 8);
    check({ kind: "c2c", n: 4100, nIn: 5000, lines: 1, sign: 1 }, 9);
  }, 300_000);

  test("real → complex and Hermitian → real", () => {
    let seed = 200;
    for (const n of [1, 2, 7, 8, 15, 100, 127, 2048, 4096, 131]) {
      check({ kind: "r2c", n, nIn: n, lines: 2, sign: -1 }, seed++);
      check({ kind: "c2r", n, nIn: (n >> 1) + 1, lines: 2, sign: 1 }, seed++);
    }
    check({ kind: "c2r", n: 10, nIn: 3, lines: 2, sign: 1 }, seed++);
  }, 300_000);

  test("strided lines: axis 0 of a 5×6 complex matrix into a transposed layout", () => {
    const rows = 5, cols = 6;
    const input = random(rows * cols * 2, 77);
    const got = runJob(
      {
        kind: "c2c", n: rows, nIn: rows, nOut: rows, lines: cols, lineShape: [cols], inLineStrides: [1], outLineStrides: [rows],
        inBase: 0, outBase: 0, inStride: cols, outStride: 1, sign: -1, scale: 1,
      },
      input,
      rows * cols * 2,
    );
    for (let c = 0; c < cols; c++) {
      const re = new Float64Array(rows), im = new Float64Array(rows);
      for (let r = 0; r < rows; r++) (re[r] = input[(r * cols + c) * 2]!), (im[r] = input[(r * cols + c) * 2 + 1]!);
      const [wr, wi] = referenceLine(re, im, -1);
      for (let k = 0; k < rows; k++) {
        expect(got[(c * rows + k) * 2]!).toBeCloseTo(wr[k]!, 5);
        expect(got[(c * rows + k) * 2 + 1]!).toBeCloseTo(wi[k]!, 5);
      }
    }
  }, 300_000);
});

// The FFT primitive through the ops, GPU against the CPU device (the differential suite).
describe("FFT ops: GPU against the CPU device", () => {
  test("fft, ifft, rfft, irfft, fftn, rfftn on strided and padded inputs", () => {
    const base = mg.reshape(mg.array(random(2 * 6 * 10, 401)), [2, 6, 10]);
    const x = mg.transpose(base, [0, 2, 1]); // (2, 10, 6), strided
    const z = mg.add(x, mg.multiply(mg.flip(x, 1), { re: 0, im: 0.5 }));
    const cases: [string, () => mg.MgArray][] = [
      ["fft", () => mg.fft.fft(z)],
      ["ifft n=9", () => mg.fft.ifft(z, 9, 1)],
      ["rfft", () => mg.fft.rfft(x, null, 1)],
      ["irfft", () => mg.fft.irfft(z, 10)],
      ["fftn", () => mg.fft.fftn(z, null, [0, 2])],
      ["rfftn", () => mg.fft.rfftn(x, [2, 12, 5], [0, 1, 2], "ortho")],
      ["irfftn", () => mg.fft.irfftn(z, [4, 7], [1, 2])],
    ];
    for (const [what, fn] of cases) {
      const [g] = runOn(mg.gpu, fn), [c] = runOn(mg.cpu, fn);
      // float32 FFT errors scale with the spectrum's norm: compare relative to its largest value
      const scale = mg.max(mg.abs(c!)).item() as number;
      expectClose(g!, c!, { rtol: 0, atol: 2e-5 * scale + 1e-6 }, what);
    }
  }, 300_000);
});
