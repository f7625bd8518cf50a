// The native FFT (Sources/MGCpu/fft.cpp, bound in ts/backend/cpu/native/fft.ts) against the
// TypeScript reference (ts/backend/cpu/fft.ts): every butterfly, direct primes, Bluestein, the
// four-step split of long lines, real transforms of odd/even/small lengths, several axes, strided,
// broadcast and empty inputs, special values; thread counts and instruction sets.
import { describe, expect, test } from "bun:test";
import * as mg from "../../../../ts/index.ts";
import type { MgArray } from "../../../../ts/core/array.ts";
import { toleranceFor } from "../../../../ts/testing/tolerances.ts";
import { native } from "../../../../ts/backend/cpu/native/ffi.ts";
import {
  acrossIsas, both, compare, complexUniform, expectClose, expectExact, expectSameBits, expectThreadIndependent, kernelsOf,
  onReference, S, uniform,
} from "./harness.ts";

const tol = toleranceFor(mg.complex64);
// Lines transformed as the reference does (same passes, same order of operations) give the
// reference's bits; lines long enough for the four-step split differ below float64's precision,
// which rounds to the same complex64 in all but rare ties: those are checked within the tolerance.
const exact = (got: MgArray, want: MgArray, what: string) => expectExact(got, want, what);
const close = (got: MgArray, want: MgArray, what: string) => expectClose(got, want, got.dtype === mg.float32 ? toleranceFor(mg.float32) : tol, what);

const LENGTHS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 25, 27, 30, 49, 59, 61, 64, 67, 97, 121, 128, 210, 243, 343, 360, 509, 997, 1000, 1024];

describe("native FFT = reference", () => {
  test("complex lengths of every radix, direct primes and Bluestein, batched and single lines", () => {
    for (const n of LENGTHS) {
      const x = complexUniform([6, n], n);
      const line = complexUniform([n], n + 1);
      compare(both(() => [mg.fft.fft(x, undefined, undefined, S), mg.fft.ifft(x, undefined, undefined, S)]), `fft 6x${n}`, exact);
      compare(both(() => [mg.fft.fft(line, undefined, undefined, S)]), `fft ${n}`, n >= 1024 ? close : exact);
    }
  });

  test("real transforms: odd, even and small lengths, fewer bins than n/2 + 1", () => {
    for (const n of LENGTHS) {
      const r = uniform([5, n], 7 * n);
      const bins = complexUniform([5, Math.floor(n / 2) + 1], 7 * n + 1);
      compare(both(() => [mg.fft.rfft(r, undefined, undefined, S)]), `rfft 5x${n}`, exact);
      compare(both(() => [mg.fft.irfft(bins, n, undefined, undefined, S)]), `irfft 5x${n}`, exact);
      // n larger than 2·(bins − 1): the op pads the bins with zeros
      compare(both(() => [mg.fft.irfft(bins, n + 3, undefined, undefined, S)]), `irfft 5x${n} → ${n + 3}`, exact);
    }
  });

  test("long single lines take the four-step split (complex and real, forward and inverse)", () => {
    for (const n of [1024, 4096, 6000, 65536, 2 * 3 * 5 * 7 * 11 * 13]) {
      const x = complexUniform([n], n);
      const r = uniform([2, n], n + 1);
      compare(both(() => [mg.fft.fft(x, undefined, undefined, S), mg.fft.ifft(x, undefined, undefined, S)]), `fft ${n}`, close);
      compare(both(() => [mg.fft.rfft(r, undefined, undefined, S)]), `rfft 2x${n}`, close);
      compare(both(() => [mg.fft.irfft(x, 2 * n, undefined, undefined, S)]), `irfft ${2 * n}`, close);
    }
  });

  test("several axes, strided and broadcast inputs, any axis order", () => {
    const x = complexUniform([6, 10, 12], 3);
    const r = uniform([6, 10, 12], 4);
    const xt = onReference(() => mg.transpose(x, [2, 0, 1], S));
    const xb = onReference(() => mg.broadcastTo(complexUniform([1, 10, 12], 5), [4, 10, 12], S));
    const rs = uniform([6, 20, 12], 6).index(":", "::2");
    const cases: [string, () => MgArray][] = [
      ["fft2", () => mg.fft.fft2(x, undefined, undefined, undefined, S)],
      ["ifftn", () => mg.fft.ifftn(x, undefined, undefined, undefined, S)],
      ["fftn axes (2, 0)", () => mg.fft.fftn(x, undefined, [2, 0], undefined, S)],
      ["fft axis 0 of a transpose", () => mg.fft.fft(xt, undefined, 0, undefined, S)],
      ["fft2 of a transpose", () => mg.fft.fft2(xt, undefined, undefined, undefined, S)],
      ["fft of a broadcast", () => mg.fft.fftn(xb, undefined, undefined, undefined, S)],
      ["rfftn", () => mg.fft.rfftn(r, undefined, undefined, undefined, S)],
      ["rfft2 strided", () => mg.fft.rfft2(rs, undefined, undefined, undefined, S)],
      ["rfft axis 1", () => mg.fft.rfft(r, undefined, 1, undefined, S)],
      ["irfftn", () => mg.fft.irfftn(x, undefined, undefined, undefined, S)],
      ["irfft2 of a transpose", () => mg.fft.irfft2(xt, undefined, undefined, undefined, S)],
      ["length-1 axes", () => mg.fft.fftn(complexUniform([1, 5, 1], 8), undefined, [0, 2], undefined, S)],
      ["norm ortho", () => mg.fft.fft(x, undefined, 1, "ortho", S)],
    ];
    for (const [name, build] of cases) compare(both(() => [build()]), name, exact);
  });

  test("empty batches and special values", () => {
    const empty = onReference(() => mg.zeros([0, 8], mg.complex64, S));
    compare(both(() => [mg.fft.fft(empty, undefined, undefined, S), mg.fft.rfft(mg.zeros([3, 0, 8], mg.float32, S), undefined, undefined, S)]), "empty", exact);
    const specials = mg.array([0, Infinity, 0, 0, NaN, 1, 2, 3, -Infinity, -0, 1e38, -1e38, 1e-45, 5, 6, 7], mg.float32);
    const cspecials = mg.array([{ re: Infinity, im: 0 }, { re: 0, im: -Infinity }, { re: NaN, im: 1 }, { re: 1, im: 2 }, { re: -0, im: -0 }, { re: 3e38, im: 3e38 }], mg.complex64);
    compare(both(() => [mg.fft.fft(specials, undefined, undefined, S), mg.fft.rfft(specials, undefined, undefined, S)]), "special values", exact);
    compare(both(() => [mg.fft.fft(cspecials, undefined, undefined, S), mg.fft.ifft(cspecials, 8, undefined, undefined, S)]), "complex special values", exact);
  });

  test("the trace names the native kernel", () => {
    const x = complexUniform([4, 8], 1);
    expect(kernelsOf(() => mg.fft.fft(x, undefined, undefined, S))).toContain("cpu-native:FFT");
    const rec = mg.trace(() => mg.fft.rfft(uniform([16], 2), undefined, undefined, S)).find((r) => r.kernel === "cpu-native:FFT");
    expect(rec?.precision).toBe("float64, rounded to complex64");
  });
});

describe("native FFT determinism", () => {
  const x = complexUniform([64, 1000], 11);
  const line = complexUniform([65536], 12);
  const r = uniform([8, 4096], 13);
  const build = () => [
    mg.fft.fft(x, undefined, undefined, S), mg.fft.fft(line, undefined, undefined, S), mg.fft.rfft(r, undefined, undefined, S),
    mg.fft.irfft(line, undefined, undefined, undefined, S), mg.fft.fft2(x, undefined, undefined, undefined, S),
  ];
  test("1 thread and 4 threads give the same bits", () => expectThreadIndependent(build, "fft"));
  test("the baseline and AVX2 kernels give the same bits (no contraction)", () => {
    const r2 = acrossIsas(build);
    if (!r2) return;
    r2.baseline.forEach((b, k) => expectSameBits(b, r2.best[k]!, `fft case ${k}`));
  });
});

describe("mg_cpu_fft descriptor", () => {
  test("a bad descriptor is an error with a message, never a crash", () => {
    // [ndim, dtype, shape, input, stride, out dtype, out shape, output, axes, axis, inverse, real, n]
    const nulls = new Float64Array([1, 13, 4, 0, 1, 13, 4, 0, 1, 0, 0, 0, 0]);
    expect(native().mg_cpu_fft(nulls, nulls.length)).toBe(2);
    expect(String(native().mg_cpu_last_error())).toContain("[mg_cpu_fft] null");
    const realInput = new Float64Array([1, 10, 4, 8, 1, 13, 4, 8, 1, 0, 0, 0, 0]); // complex transform of float32
    expect(native().mg_cpu_fft(realInput, realInput.length)).toBe(2);
    expect(String(native().mg_cpu_last_error())).toContain("[mg_cpu_fft] operand dtypes");
    expect(native().mg_cpu_fft(realInput, 5)).toBe(2);
    expect(String(native().mg_cpu_last_error())).toContain("descriptor too short");
  });
});
