// Ownership of intermediates (ts/core/ownership.ts): what a library call creates and does not return
// is freed after its last use, on both devices; what the user holds keeps today's semantics.
import { describe, expect, test } from "bun:test";
import * as mg from "../../ts/index.ts";
import type { MgArray } from "../../ts/core/array.ts";
import { libraryCall, retain } from "../../ts/core/ownership.ts";
import { setCpuFusion, setNativeCpu } from "../../ts/backend/cpu/native/index.ts";

const MiB = 2 ** 20;

/**
 * Waits for GPU work and collects earlier garbage until active memory stops changing. The cache is
 * emptied too: a request may reuse a cached block up to twice its size, which active memory counts.
 */
async function settle(): Promise<number> {
  mg.synchronize();
  mg.clearCache();
  let last = -1;
  for (let i = 0; i < 20; i++) {
    Bun.gc(true);
    await Bun.sleep(2);
    mg.clearCache();
    const now = mg.getActiveMemory();
    if (now === last) return now;
    last = now;
  }
  return last;
}

/** Runs `program` and returns [peak above `before`, active above `before`] after waiting for the GPU. */
function measure(before: number, program: () => void): [number, number] {
  mg.resetPeakMemory();
  program();
  mg.synchronize();
  return [mg.getPeakMemory() - before, mg.getActiveMemory() - before];
}

for (const device of [mg.cpu, mg.gpu]) {
  const s = { stream: device };
  describe(`ownership on the ${device.type}`, () => {
    test("uniform + softmax holds only the two results: the key, bits, scaled draws and casts are freed", async () => {
      mg.eval(mg.multiply(mg.array([1], mg.float32), 3)); // the shared constant 3 exists before measuring
      const key = mg.random.key(7);
      const before = await settle();
      let u: MgArray | undefined;
      let sm: MgArray | undefined;
      const [, after] = measure(before, () => {
        u = mg.random.uniform(0, 1, [1 << 18], mg.float32, key, s);
        sm = mg.tidy(() => mg.softmax(mg.multiply(u!, 3, s), -1, s));
        mg.eval(u, sm);
      });
      // MLX 0.32.4 (cpu) holds 2.00 MiB after the same program: u and softmax(3u).
      // (At most: a collection of earlier garbage during the program can only lower the count.)
      expect(after).toBeLessThanOrEqual(2 * MiB);
      u!.dispose();
      sm!.dispose();
      expect(mg.getActiveMemory()).toBe(before);
    });

    test("after dispose of a result, active memory returns to what it was before it was built", async () => {
      const x = mg.random.normal([256, 512], mg.float32, 0, 1, mg.random.key(1), s);
      mg.eval(x);
      const before = await settle();
      // A composite op (variance: mean, subtract, square, mean) and a reduction chain. The
      // user-level temporaries (exp(x), softmax(x)) are the user's: tidy disposes them (a GC that
      // scans the stack conservatively may keep an unreachable one alive for a while).
      const [v, w] = mg.tidy(() => [
        mg.variance(mg.exp(x, s), -1, false, 0, s),
        mg.logsumexp(mg.softmax(x, -1, s), -1, false, s),
      ]);
      mg.eval(v, w);
      mg.synchronize();
      v!.dispose();
      w!.dispose();
      // At most what it was: a late collection of earlier tests' garbage may lower it further.
      expect(await settle()).toBeLessThanOrEqual(before);
    });

    test("buffers are donated: a chain of four same-sized ops peaks at one extra buffer on the cpu", async () => {
      const x = mg.array(new Float32Array(1 << 18).fill(0.5));
      mg.eval(x);
      const before = await settle();
      let y: MgArray | undefined;
      const [peak] = measure(before, () => {
        y = mg.tidy(() => mg.exp(mg.sin(mg.negative(mg.sqrt(x, s), s), s), s));
        mg.eval(y);
      });
      if (device.type === "cpu") expect(peak).toBe(MiB);
      else expect(peak).toBeLessThanOrEqual(4 * MiB); // a fused chain: one kernel, one buffer
      expect((y!.dataSync() as Float32Array)[0]!).toBeCloseTo(Math.exp(Math.sin(-Math.sqrt(0.5))), 6);
      y!.dispose();
    });

    test("a chain of matmuls reuses the buffer of an intermediate once its reader ran (or is encoded)", async () => {
      const x = mg.random.normal([128, 128], mg.float32, 0, 0.05, mg.random.key(4), s);
      mg.eval(x);
      const before = await settle();
      let y: MgArray | undefined;
      const [peak] = measure(before, () => {
        y = mg.tidy(() => mg.matmul(mg.matmul(mg.matmul(mg.matmul(x, x, s), x, s), x, s), x, s));
        mg.eval(y);
      });
      // Four products of 64 KiB each (128×128: a quarter of the simulator's GEMM work of 256×256;
      // still whole 16 KiB allocator blocks, so the count is exact). The GPU and the native CPU GEMM hold at most two at once (the
      // one read and the one written, whose buffer the next product takes); the TypeScript reference
      // computes each product before storing it, so it stores into the buffer of the product it read.
      const native = device.type === "cpu" && setNativeCpu(true);
      expect(peak).toBe((device.type === "gpu" || native ? 2 : 1) * 64 * 1024);
      y!.dispose();
    });

    test("checkpoint frees what it recomputes: six checkpointed layers peak lower, same gradient", async () => {
      const x = mg.random.normal([1 << 16], mg.float32, 0, 1, mg.random.key(5), s);
      mg.eval(x);
      const layer = (h: MgArray) => {
        for (let i = 0; i < 4; i++) h = i % 2 ? mg.sin(h, s) : mg.tanh(mg.multiply(h, 1.5, s), s);
        return h;
      };
      const run = async (l: (h: MgArray) => MgArray): Promise<[number, number[]]> => {
        const f = (x: MgArray) => {
          let h = x;
          for (let k = 0; k < 6; k++) h = l(h);
          return mg.sum(h, null, false, s);
        };
        const before = await settle();
        let g: MgArray | undefined;
        const [peak] = measure(before, () => {
          g = mg.stream(device, () => mg.tidy(() => mg.grad(f)(x)));
          mg.eval(g);
        });
        const values = Array.from(g!.dataSync() as Float32Array).slice(0, 64);
        g!.dispose();
        return [peak, values];
      };
      // CPU fusion would keep the plain backward's activations in tile registers too: compare the
      // two programs unfused, as the GPU's separate kernels hold them
      const fused = setCpuFusion(false);
      const [plainPeak, plainGrad] = await run(layer);
      const [ckptPeak, ckptGrad] = await run(mg.checkpoint(layer));
      setCpuFusion(fused);
      // The plain backward keeps every layer's activations from the forward pass; checkpoint keeps
      // the six layer inputs and recomputes one layer's activations at a time.
      expect(ckptPeak).toBeLessThan(0.7 * plainPeak);
      for (let i = 0; i < plainGrad.length; i++) expect(ckptGrad[i]!).toBeCloseTo(plainGrad[i]!, 5);
    });

    test("a value and gradient under tidy hold only the loss and gradients after eval", async () => {
      const w = mg.random.normal([128, 64], mg.float32, 0, 0.1, mg.random.key(2), s);
      const x = mg.random.normal([32, 128], mg.float32, 0, 1, mg.random.key(3), s);
      mg.eval(w, x);
      const loss = (w: MgArray) => mg.mean(mg.square(mg.tanh(mg.matmul(x, w, s), s), s), null, false, s);
      const step = () => mg.stream(device, () => mg.tidy(() => mg.valueAndGrad(loss)(w)));
      // A first step creates the shared scalar constants the backward pass uses (a bounded cache).
      mg.eval(step());
      const before = await settle();
      const [value, grad] = step();
      mg.eval(value, grad);
      mg.synchronize();
      // The gradient equals the float64 derivation: d/dw mean(tanh(xw)^2) = xᵀ (2 tanh(xw)(1 − tanh²(xw)) / N).
      const xs = x.tolist() as number[][];
      const ws = w.tolist() as number[][];
      const h = xs.map((row) => ws[0]!.map((_, j) => Math.tanh(row.reduce((acc, xv, k) => acc + xv * ws[k]![j]!, 0))));
      const n = 32 * 64;
      const g00 = xs.reduce((acc, row, i) => acc + row[0]! * ((2 * h[i]![0]! * (1 - h[i]![0]! ** 2)) / n), 0);
      expect(((grad as MgArray).tolist() as number[][])[0]![0]!).toBeCloseTo(g00, 5);
      const held = (await settle()) - before;
      // The loss (one float) and the gradient (128×64 float32 = 32 KiB) and nothing else.
      expect(held).toBeLessThanOrEqual(32 * 1024 + 256);
      value.dispose();
      (grad as MgArray).dispose();
      // At most what it was: a late collection of earlier tests' garbage may lower it further.
      expect(await settle()).toBeLessThanOrEqual(before);
    });
  });
}

describe("ownership rules", () => {
  test("an array a library call did not return is released after its last use; reading it is a clear error", () => {
    let leaked: MgArray | undefined;
    const y = libraryCall(() => {
      leaked = mg.exp(mg.array([1, 2, 3], mg.float32));
      return mg.sum(leaked);
    });
    expect(leaked!.internal).toBe(true);
    expect(y.item()).toBeCloseTo(Math.E + Math.E ** 2 + Math.E ** 3, 4);
    expect(() => leaked!.tolist()).toThrow(/created, did not return, and released after its last use/);
  });

  test("retain keeps an array a library call stores; what it returns (trees included) stays the caller's", () => {
    let stored: MgArray | undefined;
    const out = libraryCall(() => {
      stored = retain(mg.exp(mg.array([1], mg.float32)));
      const t = mg.add(stored, 1);
      return { list: [t], kept: mg.multiply(t, 2) };
    });
    mg.eval(out);
    expect(stored!.internal).toBe(false);
    expect(stored!.item()).toBeCloseTo(Math.E, 5);
    expect(out.list[0]!.internal).toBe(false);
    expect(out.kept.item()).toBeCloseTo(2 * (Math.E + 1), 5);
  });

  test("user code inside a transform keeps its arrays (MLX's test_update_state)", () => {
    let state = mg.zeros([2]);
    mg.grad((y: MgArray) => {
      const z = mg.multiply(y, mg.ones([2]));
      state = mg.add(state, z);
      return mg.sum(z);
    })(mg.array([1], mg.float32));
    expect(state.internal).toBe(false);
    expect(state.tolist()).toEqual([1, 1]);
  });

  test("public ops are library functions and aliases stay identical", () => {
    expect(mg.acos).toBe(mg.arccos);
    // A composite op's pieces are internal: mean's sum is freed once the division ran.
    const x = mg.array([1, 2, 3, 4], mg.float32);
    const m = mg.mean(x);
    const sumNode = m.node!.inputs.find((i) => i.node !== null && i !== x);
    expect(sumNode?.internal).toBe(true);
    expect(m.item()).toBe(2.5);
  });
});
