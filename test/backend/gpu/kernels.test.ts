// Kernel instances compiled on demand (ts/backend/gpu/kernels.ts): speculative sibling instances
// share a needed kernel's compiler run, and one the compiler rejects never fails the needed kernel.
import { expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import { type KernelInstance, kernelCompileCount, kernelPipeline, prepareKernels } from "../../../ts/backend/gpu/kernels.ts";

const tag = `${process.pid}_${Date.now()}`;

test("a speculative instance the compiler rejects is dropped; the needed kernel still compiles", () => {
  const needed: KernelInstance = { file: "unary.metal", name: `t_needed_${tag}`, instantiation: "unary_v<Exp, float, float>" };
  const bad: KernelInstance = { file: "unary.metal", name: `t_bad_${tag}`, instantiation: "unary_v<NoSuchFunctor, float, float>", speculative: true };
  const c0 = kernelCompileCount();
  const p = kernelPipeline(needed, [bad]);
  expect(p).toBeDefined();
  // nothing silent: the needed kernel's origin (the trace's pipelineFrom) says it was compiled again
  expect(p.origin).toMatch(/compiled again without 1 speculative sibling\(s\) the compiler rejected/);
  expect(kernelCompileCount()).toBe(c0 + 2); // the run with the sibling failed, the one without it did not
  kernelPipeline(needed);
  expect(kernelCompileCount()).toBe(c0 + 2);
  // Asked for as a needed kernel, the bad instance fails with the compiler's error.
  expect(() => kernelPipeline({ ...bad, speculative: false })).toThrow(/compiling Sources\/Kernels\/unary.metal failed/);
});

test("a needed kernel that does not compile still fails", () => {
  const bad: KernelInstance = { file: "unary.metal", name: `t_bad_needed_${tag}`, instantiation: "unary_v<NoSuchFunctor, half, half>" };
  const ok: KernelInstance = { file: "unary.metal", name: `t_ok_${tag}`, instantiation: "unary_v<Exp, half, half>", speculative: true };
  expect(() => prepareKernels([bad, ok])).toThrow(/compiling Sources\/Kernels\/unary.metal failed/);
});

test("siblings compile with the first op of a family: later ops of that dtype compile nothing", () => {
  const x = mg.array([0.25, 0.5, -0.75], mg.bfloat16);
  const exp = mg.exp(x, { stream: mg.gpu });
  mg.eval(exp);
  const c0 = kernelCompileCount();
  const rest = [mg.sin(x, { stream: mg.gpu }), mg.tanh(x, { stream: mg.gpu }), mg.sqrt(mg.abs(x), { stream: mg.gpu })];
  for (const r of rest) mg.eval(r);
  expect(kernelCompileCount()).toBe(c0);
  // and they compute what the CPU device does
  const cpu = [mg.sin(x, { stream: mg.cpu }), mg.tanh(x, { stream: mg.cpu }), mg.sqrt(mg.abs(x), { stream: mg.cpu })];
  rest.forEach((r, k) => expect(r.tolist()).toEqual(cpu[k]!.tolist()));
});
