// The differential fuzzer with a larger budget than CI's (test/fuzz/engine.ts):
//   bun run scripts/fuzz.ts [--runs 2000] [--seed N | --seed random] [--steps 10] [--rank 4] [--dim 6] [--path P]
//   bun run scripts/fuzz.ts --bad [--runs 200000] [--seed N]     the bad-argument fuzzer
// Exits nonzero with the shrunk program (as metalgrad code) on the first disagreement.
import { fuzzBadArguments } from "../test/fuzz/bad-arguments.ts";
import { CI_SIZES, fuzzDifferential, NATIVE_FAMILIES } from "../test/fuzz/engine.ts";

const args = process.argv.slice(2);
if (args.includes("--help") || args.includes("-h")) {
  console.log(`bun run scripts/fuzz.ts [options]       the differential fuzzer (test/fuzz/engine.ts)
  --runs N        programs to check (default 2000; CI runs 40)
  --seed N|random fast-check seed (default random; CI uses 20261129)
  --steps N       steps per program (default 10)
  --rank N        largest input rank (default 4)
  --dim N         largest input dimension (default 6)
  --path P        replay one shrunk failure (with its --seed)
  --families a,b  draw only these op families (test/fuzz/engine.ts OPS names; "native" for NATIVE_FAMILIES)
bun run scripts/fuzz.ts --bad [--runs N] [--seed N]   the bad-argument fuzzer (default 200000 calls)
Exits nonzero with the shrunk program (as metalgrad code) on the first disagreement.`);
  process.exit(0);
}
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1]! : fallback;
};
const seedArg = arg("seed", "random");
const seed = seedArg === "random" ? Math.floor(Math.random() * 2 ** 31) : Number(seedArg);
const runs = Number(arg("runs", "2000"));
const sizes = { maxInputs: CI_SIZES.maxInputs, maxSteps: Number(arg("steps", "10")), maxRank: Number(arg("rank", "4")), maxDim: Number(arg("dim", "6")) };
const path = args.includes("--path") ? arg("path", "") : undefined;
const familiesArg = args.includes("--families") ? arg("families", "") : undefined;
const families = familiesArg === "native" ? NATIVE_FAMILIES : familiesArg?.split(",");
if (args.includes("--bad")) {
  const calls = Number(arg("runs", "200000"));
  console.log(`bad-argument fuzz: ${calls} calls, seed ${seed}`);
  const t = performance.now();
  try {
    fuzzBadArguments({ runs: calls, seed, path });
    console.log(`bad-argument fuzz: ${calls} calls, all returned or threw tagged errors (${((performance.now() - t) / 1000).toFixed(1)} s)`);
    process.exit(0);
  } catch (e) {
    console.error((e as Error).message);
    process.exit(1);
  }
}
console.log(`fuzz: ${runs} programs, seed ${seed}, sizes ${JSON.stringify(sizes)}${families ? `, families ${families.join(",")}` : ""}`);
const t0 = performance.now();
try {
  const { steps, programs, coverage } = fuzzDifferential({ runs, seed, sizes, path, families });
  console.log(`fuzz: ${programs} programs, ${steps} steps agree on both devices (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  console.log(`steps per op family: ${[...coverage].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(", ")}`);
} catch (e) {
  console.error((e as Error).message);
  process.exit(1);
}
