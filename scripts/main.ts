// The main job: train a small decoder-only transformer from scratch on multi-digit addition
// ("123+45=168", generated in code) and report its exact-match accuracy on held-out problems.
// Shows what a training run with metalgrad looks like: a live progress line, the loss curve (in
// the terminal and as out/loss.svg), which kernels ran (fused or not, at which precision), the
// checkpoint saved as safetensors and loaded back into a fresh model, and sample completions.
//
//   bun run scripts/main.ts [--device cpu|gpu] [--steps N] [--seed N] [--quick] [--out DIR]
//
// Exits nonzero when the checkpoint does not reproduce the trained model's accuracy, when the
// device preamble's custom kernel is wrong, or when a run of the full preset misses the accuracy goal.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as mg from "../ts/index.ts";
import { ArgsError, parseArgs, USAGE } from "./job/args.ts";
import { loadCheckpoint, saveCheckpoint } from "./job/checkpoint.ts";
import { ACCURACY_GOAL, presetFor } from "./job/config.ts";
import { formatSummary, summarize } from "./job/kernels.ts";
import { FUSED_OPS, parameterCount } from "./job/model.ts";
import { smooth, svgPlot, terminalPlot } from "./job/plot.ts";
import { formatDuration, formatRate, Progress } from "./job/progress.ts";
import { AdditionTask } from "./job/task.ts";
import { accuracy, complete, train } from "./job/train.ts";

const t0 = performance.now();
const cpuSeconds = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1e6;
let args;
try {
  args = parseArgs(process.argv.slice(2));
} catch (e) {
  if (!(e instanceof ArgsError)) throw e;
  console.error(e.message);
  process.exit(2);
}
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}

const device = args.device === "gpu" ? mg.gpu : args.device === "cpu" ? mg.cpu : mg.defaultDevice();
mg.setDefaultDevice(device);
const info = mg.deviceInfo();
const simulated = info.is_simulator === true;
const deviceLabel = device.type === "gpu" ? (simulated ? "gpu (the Metal simulator: correct, not fast)" : `gpu (${info.device_name})`) : "cpu";
let failed = false;

// Preamble: the machine, and one custom Metal kernel (exp) checked against Math.exp.
console.log(`metalgrad: Metal device '${info.device_name}' (${info.architecture}${simulated ? ", kernels simulated on the CPU" : ""}); default device ${mg.defaultDevice().type}`);
{
  const myexp = mg.fast.metalKernel({
    name: "myexp", inputNames: ["inp"], outputNames: ["out"],
    source: "uint i = thread_position_in_grid.x;\nout[i] = metal::exp(inp[i]);",
  });
  const x = mg.divide(mg.subtract(mg.arange(0, 1000, mg.float32), 500), 100);
  const [y] = myexp({ inputs: [x], grid: [1000, 1, 1], threadgroup: [256, 1, 1], outputShapes: [[1000]], outputDtypes: [mg.float32], stream: mg.gpu });
  const got = y!.tolist() as number[];
  const xs = x.tolist() as number[];
  const worst = Math.max(...got.map((v, i) => Math.abs(v - Math.exp(xs[i]!)) / Math.exp(xs[i]!)));
  console.log(`custom Metal kernel exp over 1000 floats: max relative error ${worst.toExponential(2)}`);
  if (!(worst < 1e-6)) {
    console.error("  the custom kernel's result does not match Math.exp");
    failed = true;
  }
}

const config = presetFor(args.quick, args.steps, args.seed);
console.log(`\ntask: ${config.digits}-digit addition, "123+45=168" (numbers written least significant digit first to the model)`);
console.log(`model: decoder-only transformer, ${config.model.layers} layers, dims ${config.model.dims}, ${config.model.heads} heads, RMSNorm, RoPE (base ${config.model.ropeBase}), causal attention, GELU MLP`);
console.log(`  fused ops: ${FUSED_OPS.join(", ")}`);
console.log(`training on ${deviceLabel}: ${config.steps} steps of ${config.batch} problems, AdamW (lr ${config.learningRate}, betas ${config.betas.join("/")}, warm-up ${config.warmupSteps}, cosine decay), seed ${config.seed}${args.quick ? ", --quick" : ""}`);

const traceStep = Math.min(2, config.steps);
let progress: Progress | null = null;
const result = train(config, {
  traceStep,
  onStart: () => {
    progress = new Progress(config.steps, { tty: !!process.stdout.isTTY, write: (s) => process.stdout.write(s), tokensPerStep: config.batch * (new AdditionTask(config.digits).sequenceLength - 1) });
  },
  onStep: ({ step, loss }) => progress?.update(step, loss),
  onEval: ({ step, accuracy: acc }) => progress?.note(`  step ${step}: held-out accuracy ${(acc * 100).toFixed(1)}% (${config.evalSize} problems)`),
});
const { model, data, losses } = result;
const task = data.task;
console.log(`model: ${parameterCount(model).toLocaleString("en-US")} parameters`);

// Held-out accuracy: greedy decoding of every held-out problem, exact match of the whole answer.
const evalStart = performance.now();
const heldOutAccuracy = accuracy(model, task, data.heldOut);
const evalSeconds = (performance.now() - evalStart) / 1000;
const tokensPerSecond = (result.tokensPerStep * config.steps) / result.trainSeconds;

// The loss curve: in the terminal, and as an SVG with the held-out accuracy on the right axis.
console.log(`\ntraining loss (log scale; mean per column), steps 1–${config.steps}:`);
for (const line of terminalPlot(losses, { width: 64, height: 10, logY: true, xStart: 1 })) console.log(`  ${line}`);
mkdirSync(args.out, { recursive: true });
const svgFile = join(args.out, "loss.svg");
const steps = losses.map((_, i) => i + 1);
writeFileSync(svgFile, svgPlot([
  { name: "loss", points: losses.map((l, i) => [steps[i]!, l]), color: "#9ec5e8", width: 1 },
  { name: "loss (smoothed)", points: smooth(losses).map((l, i) => [steps[i]!, l]), color: "#1f5fa8", width: 2 },
  ...(result.evals.length ? [{ name: "held-out accuracy", points: result.evals.map((e) => [e.step, e.accuracy] as const), color: "#d9480f", dots: true, rightAxis: true }] : []),
], {
  title: `metalgrad: a ${config.model.layers}-layer transformer learns ${config.digits}-digit addition`,
  caption: [
    `${deviceLabel}; ${config.steps} steps × ${config.batch} problems in ${formatDuration(result.trainSeconds)}; held-out exact match ${(heldOutAccuracy * 100).toFixed(1)}% of ${data.heldOut.length}`,
  ],
  xLabel: "step", yLabel: "training loss (cross entropy, log scale)", rightLabel: result.evals.length ? "held-out accuracy" : undefined, logY: true,
}));
console.log(`  written to ${svgFile}`);

// Which kernels ran in one training step (forward, backward and AdamW update), from mg.trace.
console.log(`\nkernels of training step ${traceStep} on ${device.type} (from mg.trace):`);
for (const line of formatSummary(summarize(result.trace))) console.log(`  ${line}`);

// The checkpoint: safetensors, loaded into a fresh model that must score the same.
const ckpt = saveCheckpoint(model, join(args.out, "addition.safetensors"), { task: `addition-${config.digits}`, steps: String(config.steps) });
const { model: reloaded } = loadCheckpoint(ckpt.file);
const reloadedAccuracy = accuracy(reloaded, task, data.heldOut);
const same = reloadedAccuracy === heldOutAccuracy;
console.log(`\ncheckpoint: ${ckpt.file} (${ckpt.tensors} tensors, ${(ckpt.bytes / 1024).toFixed(0)} KiB); a fresh model loaded from it scores ${(reloadedAccuracy * 100).toFixed(1)}% — ${same ? "the same" : "DIFFERENT"}`);
if (!same) failed = true;

// A few held-out completions.
console.log("\nsample completions (held-out problems, greedy decoding):");
const samples = data.heldOut.slice(0, 6);
complete(model, task, samples).forEach((answer, i) => {
  const p = samples[i]!;
  const got = task.decodeAnswer(answer);
  const mark = got === p.a + p.b ? "ok" : `wrong, ${p.a + p.b}`;
  console.log(`  ${task.format(p, got).padEnd(16)} model wrote ${task.show(answer)}  (${mark})`);
});

const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
console.log(`\nheld-out exact-match accuracy: ${(heldOutAccuracy * 100).toFixed(1)}% of ${data.heldOut.length} problems never seen in training`);
console.log(
  `training: ${formatDuration(result.trainSeconds)} wall, ${formatDuration(result.trainCpuSeconds)} CPU, ${formatRate(tokensPerSecond)} tokens/s; ` +
    `evaluation ${formatDuration(evalSeconds)}; peak array memory ${mib(result.peakBytes)} (parameters ${mib(result.parameterBytes)}, AdamW state, one step's intermediates); whole job ${formatDuration((performance.now() - t0) / 1000)} wall, ${formatDuration(cpuSeconds(process.cpuUsage()))} CPU`,
);
if (args.quick) console.log("(--quick proves the whole path; it trains too briefly to learn the task — run without --quick for that)");
const fullRun = !args.quick && args.steps === null;
if (fullRun && heldOutAccuracy < ACCURACY_GOAL) {
  console.error(`the full preset should reach ${ACCURACY_GOAL * 100}% held-out accuracy; it reached ${(heldOutAccuracy * 100).toFixed(1)}%`);
  failed = true;
}
process.exit(failed ? 1 : 0);
