// mg.fft beyond the parity cases: long and awkward lengths against the float64 library on both
// devices (errors relative to the spectrum's norm, as float32 FFT errors scale), derivative rules
// by gradcheck on both devices, vmap, errors.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { fftPlan, runFft } from "../../ts/backend/cpu/fft.ts";
import { Xorshift32 } from "../fixtures/quantize/inputs.ts";

function signal(n: number, seed: number): Float64Array {
  const r = new Xorshift32(seed);
  return Float64Array.from({ length: n }, () => Math.fround(r.next() / 2 ** 31 - 1));
}

const devices = [mg.cpu, mg.gpu];

describe("long transforms against float64 (both devices)", () => {
  for (const device of devices) {
    test(`complex and real, ${device.type}`, () => {
      for (const n of [97, 360, 1000, 2048, 4096, 4099, 6000]) {
        const re = signal(n, n), im = signal(n, n + 1);
        const x = mg.add(mg.array(Float32Array.from(re)), mg.multiply(mg.array(Float32Array.from(im)), { re: 0, im: 1 }));
        const got = mg.fft.fft(x, { stream: device }).tolist() as { re: number; im: number }[];
        const wr = re.slice(), wi = im.slice();
        runFft(fftPlan(n, -1), wr, wi);
        let err = 0, mag = 0;
        for (let k = 0; k < n; k++) {
          err = Math.max(err, Math.hypot(got[k]!.re - wr[k]!, got[k]!.im - wi[k]!));
          mag = Math.max(mag, Math.hypot(wr[k]!, wi[k]!));
        }
        expect({ n, ok: err / mag < 1e-5 }).toEqual({ n, ok: true });
        const back = mg.fft.irfft(mg.fft.rfft(mg.array(Float32Array.from(re)), { stream: device }), n, -1, { stream: device }).tolist() as number[];
        let e2 = 0;
        for (let k = 0; k < n; k++) e2 = Math.max(e2, Math.abs(back[k]! - re[k]!));
        expect({ n, ok: e2 < 1e-5 }).toEqual({ n, ok: true });
      }
    }, 300_000);
  }

  test("devices agree on n-d real transforms of strided views", () => {
    const a = mg.transpose(mg.reshape(mg.array(Float32Array.from(signal(4 * 6 * 10, 3))), [4, 6, 10]), [2, 0, 1]);
    const c = mg.fft.rfftn(a, [10, 3, 6], [0, 1, 2], { stream: mg.cpu });
    const g = mg.fft.rfftn(a, [10, 3, 6], [0, 1, 2], { stream: mg.gpu });
    expect(mg.allclose(c, g, 1e-5, 1e-4).item()).toBe(true);
    const ci = mg.fft.irfftn(c, [10, 3, 6], [0, 1, 2], { stream: mg.cpu });
    const gi = mg.fft.irfftn(g, [10, 3, 6], [0, 1, 2], { stream: mg.gpu });
    expect(mg.allclose(ci, gi, 1e-5, 1e-5).item()).toBe(true);
  });
});

const cplx = (re: MgArray, im: MgArray) => mg.add(re, mg.multiply(im, { re: 0, im: 1 }));
const parts = (z: MgArray) => [mg.real(z), mg.imag(z)];

function grad(fn: (...xs: MgArray[]) => unknown, inputs: MgArray[], device: mg.Device): void {
  // The transforms compute in float32: finite differences of a linear map are exact up to
  // rounding, so a large step keeps the rounding small.
  const report = mg.testing.gradcheck(fn, inputs, { stream: device, eps: 1e-2, atol: 2e-3, rtol: 2e-3, raiseException: false });
  expect({ ok: report.ok, message: report.message }).toEqual({ ok: true, message: report.message });
}

const r = (shape: number[], seed: number) => mg.reshape(mg.array(Float32Array.from(signal(shape.reduce((a, b) => a * b, 1), seed))), shape);

// The functions leave the stream to gradcheck: the analytic side runs on `device`, the
// float64 finite differences on the CPU.
describe("fft derivatives (gradcheck, both devices)", () => {
  for (const device of devices) {
    test(`complex transforms, ${device.type}`, () => {
      grad((a, b) => parts(mg.fft.fft(cplx(a, b))), [r([6], 1), r([6], 2)], device);
      grad((a, b) => parts(mg.fft.fft(cplx(a, b), 8, -1, "ortho")), [r([5], 3), r([5], 4)], device);
      grad((a, b) => parts(mg.fft.ifft(cplx(a, b), 4, 0)), [r([6, 2], 5), r([6, 2], 6)], device);
      grad((a, b) => parts(mg.fft.fft2(cplx(a, b), null, [0, 1], "forward")), [r([3, 4], 7), r([3, 4], 8)], device);
    }, 300_000);

    test(`real transforms, ${device.type}`, () => {
      grad((a) => parts(mg.fft.rfft(a)), [r([8], 9)], device);
      grad((a) => parts(mg.fft.rfft(a)), [r([7], 10)], device);
      grad((a, b) => mg.fft.irfft(cplx(a, b)), [r([5], 11), r([5], 12)], device);
      grad((a, b) => mg.fft.irfft(cplx(a, b), 9, -1), [r([5], 13), r([5], 14)], device);
      grad((a) => parts(mg.fft.rfftn(a, null, [0, 1])), [r([3, 4], 15)], device);
      grad((a, b) => mg.fft.irfft2(cplx(a, b), [3, 4], [0, 1]), [r([3, 3], 16), r([3, 3], 17)], device);
    }, 300_000);

    test(`stft and istft, ${device.type}`, () => {
      grad((a) => parts(mg.fft.stft(a, { nFft: 4, hopLength: 2, window: mg.hanning(4) })), [r([12], 18)], device);
      grad((a, b) => mg.fft.istft(cplx(a, b), { nFft: 4, hopLength: 1 }), [r([3, 6], 19), r([3, 6], 20)], device);
    }, 300_000);
  }
});

describe("fft behaviour", () => {
  test("vmap over a batch axis equals the batched transform", () => {
    const x = r([3, 8], 30);
    const mapped = mg.vmap((v: MgArray) => mg.fft.rfft(v), 1)(x) as MgArray;
    expect(mg.allclose(mapped, mg.swapaxes(mg.fft.rfft(x, null, 0), 0, 1), 1e-6, 1e-5).item()).toBe(true);
  });

  test("errors name the op; unknown options are rejected", () => {
    expect(() => mg.fft.fft(mg.ones([4]), { n: 4, bogus: 1 } as never)).toThrow("[fft] unknown option 'bogus'. Accepted options: 'n', 'axis', 'norm', 'stream'.");
    expect(() => mg.fft.fftn(mg.ones([2, 2]), null, [0, 2])).toThrow("[fftn] Invalid axis");
    expect(() => mg.fft.stft(mg.ones([8]), { nFft: 4, winLength: 5 })).toThrow("[stft] win_length");
    expect(() => mg.fft.stft(mg.ones([2]), { nFft: 4 })).toThrow("[stft] reflect padding");
  });
});
