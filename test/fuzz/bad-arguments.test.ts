// The bad-argument fuzzer in CI (test/fuzz/bad-arguments.ts): a fixed seed and budget; every public
// function and array method called with random bad and edge-case arguments returns or throws a
// tagged error. `bun run scripts/fuzz.ts --bad --runs N` runs more.
import { expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import { fuzzBadArguments, isTagged, publicFunctions, tryCall } from "./bad-arguments.ts";

const RUNS = Number(process.env.FUZZ_BAD_RUNS ?? 20000);

test(`random bad arguments to the public API give tagged errors, never anything else (${RUNS} calls)`, () => {
  const t0 = performance.now();
  expect(fuzzBadArguments({ runs: RUNS, seed: Number(process.env.FUZZ_SEED ?? 20261129), path: process.env.FUZZ_PATH })).toBe(RUNS);
  // each call returns or fails at once: nothing hangs
  expect(performance.now() - t0).toBeLessThan(60_000);
});

test("the fuzzer covers the public surface and can fail", () => {
  const fns = publicFunctions();
  expect(fns.size).toBeGreaterThan(250);
  expect(fns.has("random.normal") && fns.has("utils.treeMap") && fns.has("MgArray.sum")).toBe(true);
  expect(isTagged(new Error("[sum] bad axis"))).toBe(true);
  expect(isTagged(new TypeError("null is not an object"))).toBe(false);
  // the regressions it found: untagged JS errors from bad arguments, a cyclic tree overflowing the stack
  const cases: [string, number[]][] = [["sqrt", [4, 1]], ["utils.treeFlatten", [40]], ["grad", [18]], ["broadcastTo", [13, 34]], ["tidy", [26]]];
  for (const [name, args] of cases) expect(tryCall(fns, { name, args })).toBeNull();
  // found after main's one-wrapper public functions: errors leaving them lost their op's tag
  // (mg.tile([]) raised a bare TypeError), and withPrecision ran a missing callback
  const loose = mg as unknown as Record<string, (...a: unknown[]) => unknown>;
  expect(() => loose.tile!([])).toThrow("[tile] reps must be an integer or a list of integers, got undefined.");
  expect(() => loose.withPrecision!({})).toThrow("[with_precision] fn must be a function, got undefined.");
});
