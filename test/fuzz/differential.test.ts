// The differential fuzzer in CI: a fixed seed and a small budget (test/fuzz/engine.ts explains the
// four comparisons; scripts/fuzz.ts runs larger budgets and other seeds). A failure prints the
// shrunk program as metalgrad code.
import { expect, test } from "bun:test";
import { fuzzDifferential, NATIVE_FAMILIES } from "./engine.ts";

const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
const SEED = Number(process.env.FUZZ_SEED ?? 20261129);

test(`random programs give one answer on both devices (${RUNS} programs)`, () => {
  const { steps } = fuzzDifferential({ runs: RUNS, seed: SEED, path: process.env.FUZZ_PATH });
  expect(steps).toBeGreaterThan(RUNS); // most programs have steps that apply
});

// The kernels beyond elementwise ones (scatter, FFT, convolution, quantized products, mg.fast,
// factorizations, sorts) are a few of the many op families: a second budget draws only them.
const NATIVE_RUNS = Math.max(1, Math.round(RUNS / 2));
test(`programs of the native kernels' families give one answer on both devices and on the reference (${NATIVE_RUNS} programs)`, () => {
  const { steps, coverage } = fuzzDifferential({ runs: NATIVE_RUNS, seed: SEED + 1, path: process.env.FUZZ_PATH, families: NATIVE_FAMILIES });
  expect(steps).toBeGreaterThan(NATIVE_RUNS);
  expect(coverage.size).toBeGreaterThanOrEqual(6); // most families drew a step that applies
});
