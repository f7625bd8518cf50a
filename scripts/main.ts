// The main job: print what metalgrad runs on, run one Metal kernel through the runtime, and one
// small computation on the array API. Prints a line per step; exits nonzero on any mismatch.
import { runtime } from "../ts/backend/runtime.ts";
import * as mg from "../ts/index.ts";

const rt = runtime();
const info = rt.device;
console.log(`metalgrad on ${info.name} (${info.architecture}, generation ${info.generation}, class '${info.sizeClass}')`);
console.log(`  unified memory: ${info.hasUnifiedMemory}, max threads/threadgroup: ${info.maxThreadsPerThreadgroup.join("x")}, simulator: ${info.isSimulator}`);

// One kernel: out[i] = exp(in[i]) (the guide's §8.1 body), checked against Math.exp.
const source = `
#include <metal_stdlib>
using namespace metal;
[[kernel]] void myexp(const device float* inp [[buffer(0)]], device float* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
  out[i] = metal::exp(inp[i]);
}`;
const n = 1000;
const input = rt.newBuffer(n * 4);
const output = rt.newBuffer(n * 4);
const x = input.as(Float32Array);
for (let i = 0; i < n; i++) x[i] = (i - 500) / 100;
const pipeline = rt.library(source).pipeline("myexp");
const batch = rt.newBatch().dispatch({
  pipeline,
  buffers: [{ index: 0, buffer: input, access: "read" }, { index: 1, buffer: output, access: "write" }],
  grid: [n, 1, 1],
  threadgroup: [256, 1, 1],
});
const t0 = performance.now();
batch.submit().wait();
const y = output.as(Float32Array);
let worst = 0;
for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(y[i]! - Math.exp(x[i]!)) / Math.exp(x[i]!));
console.log(`kernel myexp over ${n} floats: max relative error ${worst.toExponential(2)} (${(performance.now() - t0).toFixed(1)} ms)`);
input.release();
output.release();

const a = mg.array([[1, 2, 3], [4, 5, 6]], mg.float32);
const s = mg.sum(mg.exp(a), 1);
console.log(`sum(exp([[1,2,3],[4,5,6]]), 1) = ${s.toString()}`);
const m = rt.memoryStats();
console.log(`memory: active ${m.active} B, peak ${m.peak} B, cache ${m.cache} B`);
if (!(worst < 1e-6)) {
  console.error("main job failed: kernel result does not match");
  process.exit(1);
}
