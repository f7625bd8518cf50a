// CPU device throughput of the product, ordering and softmax ops (the oracles GPU kernels are
// tested against). Prints the median time per evaluation and the rate.
//
//   bun run bench/cpu-linalg.bench.ts        (ROUNDS=n to change the repetitions)
import * as mg from "../ts/index.ts";
import type { MgArray } from "../ts/core/array.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 7);

function random(shape: number[], dtype = mg.float32): MgArray {
  const n = shape.reduce((a, b) => a * b, 1);
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = Math.random() * 2 - 1;
  return mg.astype(mg.array(v, null, { shape }), dtype);
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function bench(name: string, build: () => MgArray, work: number, unit: string): void {
  const times: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const y = build();
    const t0 = performance.now();
    mg.eval(y);
    times.push(performance.now() - t0);
  }
  const ms = median(times);
  console.log(`${name.padEnd(44)} ${ms.toFixed(2).padStart(9)} ms   ${(work / ms / (unit === "GFLOP/s" ? 1e6 : 1e3)).toFixed(3).padStart(8)} ${unit}`);
}

const cpu = { stream: mg.cpu };
for (const [m, k, n] of [[128, 512, 64], [256, 256, 256], [512, 512, 512]] as const) {
  const a = random([m, k]), b = random([k, n]);
  mg.eval(a, b);
  bench(`matmul float32 ${m}x${k} @ ${k}x${n}`, () => mg.matmul(a, b, cpu), 2 * m * k * n, "GFLOP/s");
}
{
  const a = random([4, 3, 64, 48]), b = random([48, 80]);
  mg.eval(a, b);
  bench("matmul float32 4x3x64x48 @ 48x80", () => mg.matmul(a, b, cpu), 2 * 12 * 64 * 48 * 80, "GFLOP/s");
  const c = random([4, 1, 48, 80]);
  mg.eval(c);
  bench("matmul float32 4x3x64x48 @ 4x1x48x80", () => mg.matmul(a, c, cpu), 2 * 12 * 64 * 48 * 80, "GFLOP/s");
  const h = random([256, 256], mg.float16);
  mg.eval(h);
  bench("matmul float16 256x256 @ 256x256", () => mg.matmul(h, h, cpu), 2 * 256 ** 3, "GFLOP/s");
  const t = mg.transpose(random([256, 256]));
  mg.eval(t);
  bench("matmul float32 256x256ᵀ @ 256x256", () => mg.matmul(t, t, cpu), 2 * 256 ** 3, "GFLOP/s");
}
{
  const x = random([512, 1024]);
  mg.eval(x);
  bench("sort float32 512x1024 (axis -1)", () => mg.sort(x, -1, cpu), 512 * 1024, "Melem/s");
  bench("argsort float32 512x1024 (axis 0)", () => mg.argsort(x, 0, cpu), 512 * 1024, "Melem/s");
  bench("topk k=8 float32 512x1024", () => mg.topk(x, 8, -1, cpu), 512 * 1024, "Melem/s");
  bench("argmax float32 512x1024 (axis -1)", () => mg.argmax(x, -1, false, cpu), 512 * 1024, "Melem/s");
  bench("softmax float32 512x1024 (axis -1)", () => mg.softmax(x, -1, cpu), 512 * 1024, "Melem/s");
  bench("logsumexp float32 512x1024 (axis -1)", () => mg.logsumexp(x, -1, false, cpu), 512 * 1024, "Melem/s");
  const q = random([8, 64, 32]), k = random([8, 64, 32]);
  mg.eval(q, k);
  bench("einsum bqd,bkd->bqk 8x64x32", () => mg.einsum("bqd,bkd->bqk", q, k, cpu), 2 * 8 * 64 * 64 * 32, "GFLOP/s");
}
