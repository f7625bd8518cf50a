// The differential fuzzer in CI: a fixed seed and a small budget (test/fuzz/engine.ts explains the
// three comparisons; scripts/fuzz.ts runs larger budgets and other seeds). A failure prints the
// shrunk program as metalgrad code.
import { expect, test } from "bun:test";
import { fuzzDifferential } from "./engine.ts";

const RUNS = Number(process.env.FUZZ_RUNS ?? 40);

test(`random programs give one answer on both devices (${RUNS} programs)`, () => {
  const { steps } = fuzzDifferential({ runs: RUNS, seed: Number(process.env.FUZZ_SEED ?? 20261129), path: process.env.FUZZ_PATH });
  expect(steps).toBeGreaterThan(RUNS); // most programs have steps that apply
});
