// The FFT library against a direct DFT in float64 (exact-reduced twiddles), for lengths that
// exercise every butterfly, the direct-prime radix and Bluestein, and the real transforms.
import { describe, expect, test } from "bun:test";
import { fftLines, fftPlan, irfftLine, rfftLine, runFft, twiddle } from "../../../ts/backend/cpu/fft.ts";
import { Xorshift32 } from "../../fixtures/quantize/inputs.ts";

function randomLine(n: number, seed: number): [Float64Array, Float64Array] {
  const r = new Xorshift32(seed);
  const re = new Float64Array(n), im = new Float64Array(n);
  for (let i = 0; i < n; i++) (re[i] = r.next() / 2 ** 31 - 1, (im[i] = r.next() / 2 ** 31 - 1));
  return [re, im];
}

function dft(re: Float64Array, im: Float64Array, sign: 1 | -1): [Float64Array, Float64Array] {
  const n = re.length;
  const orr = new Float64Array(n), oi = new Float64Array(n);
  // The n distinct twiddles once (the same exactly reduced values), not one call per (j, k) pair.
  const cos = new Float64Array(n), sin = new Float64Array(n);
  for (let m = 0; m < n; m++) [cos[m], sin[m]] = twiddle(m, n, sign);
  for (let k = 0; k < n; k++) {
    let sr = 0, si = 0;
    for (let j = 0; j < n; j++) {
      const m = (j * k) % n, c = cos[m]!, s = sin[m]!;
      sr += re[j]! * c - im[j]! * s;
      si += re[j]! * s + im[j]! * c;
    }
    orr[k] = sr;
    oi[k] = si;
  }
  return [orr, oi];
}

function maxRelErr(ar: Float64Array, ai: Float64Array, br: Float64Array, bi: Float64Array): number {
  let err = 0, norm = 0;
  for (let i = 0; i < ar.length; i++) {
    err = Math.max(err, Math.hypot(ar[i]! - br[i]!, ai[i]! - bi[i]!));
    norm = Math.max(norm, Math.hypot(br[i]!, bi[i]!));
  }
  return err / Math.max(norm, 1e-300);
}

const LENGTHS = [
  1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 20, 21, 25, 27, 28, 30, 32, 35, 36, 45,
  48, 49, 60, 64, 77, 96, 100, 121, 125, 128, 143, 169, 210, 243, 256, 343, 360, 512, 61, 122,
  67, 127, 134, 211, 254, 509, 1000, 1024, 2 * 3 * 5 * 7 * 11, 4 * 59, 3 * 67, 997,
];

describe("complex FFT against a direct DFT", () => {
  for (const sign of [-1, 1] as const) {
    test(`sign ${sign}: ${LENGTHS.length} lengths`, () => {
      const bad: string[] = [];
      for (const n of LENGTHS) {
        const [re, im] = randomLine(n, n * 7 + (sign > 0 ? 1 : 0));
        const [wr, wi] = dft(re, im, sign);
        const xr = re.slice(), xi = im.slice();
        runFft(fftPlan(n, sign), xr, xi);
        const e = maxRelErr(xr, xi, wr, wi);
        if (!(e < 1e-13)) bad.push(`n=${n} (${fftPlan(n, sign).kind}) rel err ${e}`);
      }
      expect(bad).toEqual([]);
    });
  }

  test("round trip of a large mixed length and a large prime", () => {
    for (const n of [2 ** 14, 3 * 5 * 7 * 64, 8191, 2 * 4099]) {
      const [re, im] = randomLine(n, n);
      const xr = re.slice(), xi = im.slice();
      runFft(fftPlan(n, -1), xr, xi);
      runFft(fftPlan(n, 1), xr, xi);
      let err = 0;
      for (let i = 0; i < n; i++) err = Math.max(err, Math.abs(xr[i]! / n - re[i]!), Math.abs(xi[i]! / n - im[i]!));
      expect(err).toBeLessThan(1e-12);
    }
  });

  test("twiddles are exact at multiples of π/4 and symmetric", () => {
    const tw = (k: number, n: number, s: 1 | -1) => twiddle(k, n, s).map((v) => v + 0); // -0 → 0
    expect(tw(0, 8, -1)).toEqual([1, 0]);
    expect(tw(2, 8, -1)).toEqual([0, -1]);
    expect(tw(4, 8, 1)).toEqual([-1, 0]);
    expect(tw(6, 8, 1)).toEqual([0, -1]);
    const [c1, s1] = twiddle(1, 8, 1);
    expect(c1).toBe(s1);
    for (let k = 1; k < 50; k++) {
      const [a, b] = twiddle(k, 100, 1);
      const [c, d] = twiddle(100 - k, 100, 1);
      expect([a + 0, b + 0]).toEqual([c + 0, -d + 0]);
    }
  });

  test("fftLines: strided lines with scaling", () => {
    // 3 lines of length 6 stored as columns of a 6x3 complex matrix
    const n = 6, count = 3;
    const data = new Float64Array(2 * n * count);
    const r = new Xorshift32(5);
    for (let i = 0; i < data.length; i++) data[i] = r.next() / 2 ** 31 - 1;
    const out = new Float64Array(data.length);
    fftLines(data, out, n, count, (i) => i, count, -1, 0.5);
    for (let c = 0; c < count; c++) {
      const re = new Float64Array(n), im = new Float64Array(n);
      for (let k = 0; k < n; k++) (re[k] = data[2 * (k * count + c)]!, (im[k] = data[2 * (k * count + c) + 1]!));
      const [wr, wi] = dft(re, im, -1);
      for (let k = 0; k < n; k++) {
        expect(out[2 * (k * count + c)]!).toBeCloseTo(0.5 * wr[k]!, 12);
        expect(out[2 * (k * count + c) + 1]!).toBeCloseTo(0.5 * wi[k]!, 12);
      }
    }
  });
});

describe("real transforms", () => {
  test("rfftLine equals the first n/2+1 bins of the complex DFT", () => {
    for (const n of [1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 16, 30, 64, 100, 127, 254, 1000]) {
      const [re] = randomLine(n, 3 * n);
      const [wr, wi] = dft(re, new Float64Array(n), -1);
      const h = (n >> 1) + 1;
      const orr = new Float64Array(h), oi = new Float64Array(h);
      rfftLine(re, n, orr, oi);
      expect(maxRelErr(orr, oi, wr.subarray(0, h), wi.subarray(0, h))).toBeLessThan(1e-13);
    }
  });

  test("irfftLine inverts rfftLine (times n) and ignores the edge bins' imaginary parts", () => {
    for (const n of [1, 2, 3, 4, 5, 6, 8, 9, 10, 16, 30, 64, 99, 100, 254]) {
      const [x] = randomLine(n, 11 * n);
      const h = (n >> 1) + 1;
      const br = new Float64Array(h), bi = new Float64Array(h);
      rfftLine(x, n, br, bi);
      bi[0] = 123; // ignored
      if (n % 2 === 0) bi[h - 1] = -7; // ignored
      const y = new Float64Array(n);
      irfftLine(br, bi, n, y);
      for (let i = 0; i < n; i++) expect(y[i]! / n).toBeCloseTo(x[i]!, 12);
    }
  });
});
