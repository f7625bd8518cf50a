// The cost of the simulator's checked mode for mg.fast.metalKernel, which is the default for custom
// kernels (issue 20: an out-of-bounds write must fail the dispatch, not corrupt the host). Each
// kernel runs checked and unchecked on the same inputs; the ratio is what `checked: false` saves.
//   bun run bench/metal-kernel-checked.bench.ts          (ROUNDS=7 by default)
import * as mg from "../ts/index.ts";
import { ROUNDS, row, timeMs } from "./util.ts";

const N = 1 << 20;
const x = mg.stream(mg.gpu, () => mg.random.uniform(0, 1, [N]));
mg.eval(x);

const kernels: { name: string; source: string; grid: number; tg: number; out: number }[] = [
  { name: "elementwise", source: "uint i = thread_position_in_grid.x;\nout[i] = a[i] * 2.0f + 1.0f;", grid: N, tg: 256, out: N },
  {
    name: "row_sums (64 reads per thread)",
    source: "uint r = thread_position_in_grid.x;\nfloat s = 0.0f;\nfor (uint k = 0; k < 64; ++k) s += a[r * 64 + k];\nout[r] = s;",
    grid: N / 64, tg: 256, out: N / 64,
  },
  {
    name: "threadgroup reduction (barriers)",
    source: [
      "threadgroup float buf[256];",
      "uint t = thread_position_in_threadgroup.x;",
      "buf[t] = a[thread_position_in_grid.x];",
      "threadgroup_barrier(mem_flags::mem_threadgroup);",
      "for (uint s = 128; s > 0; s >>= 1) {",
      "  if (t < s) buf[t] += buf[t + s];",
      "  threadgroup_barrier(mem_flags::mem_threadgroup);",
      "}",
      "if (t == 0) out[threadgroup_position_in_grid.x] = buf[0];",
    ].join("\n"),
    grid: N, tg: 256, out: N / 256,
  },
];

console.log(`metalKernel on the simulated GPU, ${N} float32 inputs, median of ${ROUNDS} (ms): unchecked | checked (default) | ratio`);
for (const k of kernels) {
  const times = [false, true].map((checked) => {
    const kernel = mg.fast.metalKernel({ name: `bench_${k.name.split(" ")[0]}`, inputNames: ["a"], outputNames: ["out"], source: k.source, checked });
    const run = () => {
      const [o] = kernel({ inputs: [x], outputShapes: [[k.out]], outputDtypes: [mg.float32], grid: [k.grid, 1, 1], threadgroup: [k.tg, 1, 1], initValue: 0 });
      mg.eval(o!);
      mg.synchronize();
    };
    return timeMs(run, ROUNDS, 2);
  });
  row(k.name, `${times[0]!.toFixed(2)} | ${times[1]!.toFixed(2)} | ${(times[1]! / times[0]!).toFixed(2)}x`);
}
