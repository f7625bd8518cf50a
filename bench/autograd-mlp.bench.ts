// Forward + backward of a 2-layer MLP (batch 64, input and hidden width 256, 10 outputs, float32):
// the time of valueAndGrad(loss)(params) with the loss and all gradients evaluated, against the
// forward pass alone. Median of ROUNDS runs after WARMUP runs, per device.
//
//   bun run bench/autograd-mlp.bench.ts            (ROUNDS=20 WARMUP=3 by default)
//
// Each device in DEVICES is one more row; a device whose backend cannot run the graph yet prints
// the reason instead of a time.
import * as mg from "../ts/index.ts";
import type { MgArray } from "../ts/core/array.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 20);
const WARMUP = Number(process.env.WARMUP ?? 3);
const BATCH = 64;
const WIDTH = 256;
const CLASSES = 10;
const DEVICES: mg.Device[] = [mg.cpu, mg.gpu];

type Params = { w1: MgArray; b1: MgArray; w2: MgArray; b2: MgArray };

/** Deterministic float32 values in [−scale, scale) (no dependency on mg.random). */
function values(shape: number[], scale: number, seed: number): MgArray {
  const n = shape.reduce((a, b) => a * b, 1);
  const v = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    v[i] = (s / 4294967296 - 0.5) * 2 * scale;
  }
  return mg.array(v, mg.float32, { shape });
}

function loss(p: Params, x: MgArray, y: MgArray): MgArray {
  const h = mg.maximum(mg.add(mg.matmul(x, p.w1), p.b1), 0);
  const logits = mg.add(mg.matmul(h, p.w2), p.b2);
  // Cross-entropy against one-hot targets.
  return mg.mean(mg.subtract(mg.logsumexp(logits, -1), mg.sum(mg.multiply(logits, y), -1)));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function time(run: () => void): number {
  for (let i = 0; i < WARMUP; i++) run();
  const ms: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = Bun.nanoseconds();
    run();
    ms.push((Bun.nanoseconds() - t0) / 1e6);
  }
  return median(ms);
}

const params: Params = {
  w1: values([WIDTH, WIDTH], 1 / Math.sqrt(WIDTH), 1),
  b1: values([WIDTH], 0.01, 2),
  w2: values([WIDTH, CLASSES], 1 / Math.sqrt(WIDTH), 3),
  b2: values([CLASSES], 0.01, 4),
};
const x = values([BATCH, WIDTH], 1, 5);
const labels = Array.from({ length: BATCH }, (_, i) => (i * 7) % CLASSES);
const y = mg.array(labels.map((c) => Array.from({ length: CLASSES }, (_, k) => (k === c ? 1 : 0))), mg.float32);
mg.eval(params, x, y);

console.log(`autograd MLP: batch ${BATCH}, ${WIDTH} → ${WIDTH} (relu) → ${CLASSES}, float32, median of ${ROUNDS} runs (ms)`);
console.log("  device   forward   forward+backward   backward/forward");
for (const device of DEVICES) {
  const name = device.type.padEnd(6);
  try {
    // Each run waits for the device: eval returns once GPU work is submitted, so timing eval alone
    // would measure only the host's share.
    const forward = () =>
      mg.stream(device, () => {
        mg.eval(loss(params, x, y));
        mg.synchronize();
      });
    const step = () =>
      mg.stream(device, () => {
        const [value, grads] = mg.valueAndGrad(loss)(params, x, y);
        mg.eval(value, grads);
        mg.synchronize();
      });
    // Same loss on every device (a wrong device would make the timing meaningless).
    const [v] = mg.stream(device, () => mg.valueAndGrad(loss)(params, x, y));
    const ref = mg.stream(mg.cpu, () => loss(params, x, y)).item() as number;
    if (Math.abs((v.item() as number) - ref) > 1e-4 * Math.max(1, Math.abs(ref))) {
      throw new Error(`loss ${v.item()} differs from the CPU's ${ref}`);
    }
    const f = time(forward);
    const fb = time(step);
    console.log(`  ${name} ${f.toFixed(2).padStart(8)}   ${fb.toFixed(2).padStart(16)}   ${(fb / f - 1).toFixed(2).padStart(16)}`);
  } catch (e) {
    console.log(`  ${name} not run: ${(e as Error).message}`);
  }
}
