// Preloaded before the test files (bunfig.toml). A cold run compiles each kernel variant once on
// the Metal simulator (tens to hundreds of milliseconds each), so tests get more than bun's 5 s.
// Bun applies this to the first test file only; `bun run test` passes --timeout for all of them.
import { setDefaultTimeout } from "bun:test";

setDefaultTimeout(180_000);

// Property tests (fast-check) are deterministic by default so CI is reproducible: FC_SEED=<n>
// replays a reported seed, FC_SEED=random explores new cases.
import fc from "fast-check";

const seed = process.env.FC_SEED;
if (seed !== "random") fc.configureGlobal({ seed: seed ? Number(seed) : 20261129 });

// CI records which primitives the GPU differential files ran (test/backend/gpu/coverage.ts) instead
// of running those files a second time.
if (process.env.MG_GPU_COVERAGE_DIR) {
  const { recordGpuCoverage } = await import("./backend/gpu/coverage.ts");
  recordGpuCoverage(process.env.MG_GPU_COVERAGE_DIR);
}
