// metalgrad side by side with MLX and numpy: elementwise ops, reductions, softmax, matmul in three
// dtypes, conv2d, mg.fast's fused ops forward and backward, quantized matmul, an MLP and a
// transformer training step, and loading a safetensors file.
//
//   bun run bench.ts [--quick] [--filter TEXT] [--device cpu|gpu|all] [--no-python] [--out DIR]
//
// Methodology: every system computes on the same inputs (generated once from a fixed seed and
// written to a safetensors file that MLX and numpy read); each run builds the computation,
// evaluates it and waits for the device (mg.eval + mg.synchronize; mx.eval + mx.synchronize);
// warm-up runs come first (kernels compile, buffers allocate, the JIT tiers up: at least 1–2 runs and
// 50 ms of runs, the same rule for every system), then timed runs, as many as fit a
// time budget (5–50; --quick: 3–10); the runs of the systems alternate, so all see the same
// machine load. Reported: the median and the interquartile range; metalgrad/MLX is the ratio of
// median times on the same device (> 1: metalgrad slower). Before timing, one run of each system
// is checked against MLX's (Σ|output|, or the loss of a training step).
//
// MLX and numpy run in a Python subprocess (bench/suite/worker.py): the interpreter is $MG_PYTHON,
// else python3, when it imports mlx.core (else one that has numpy). On a Mac that is MLX on Metal
// and on the CPU; on Linux, MLX's CPU build. metalgrad's GPU on the Linux Metal simulator is not a
// performance device and is only run when asked (--device gpu or all).
//
// Writes bench/results/latest.json ([{case, group, system, device, value, unit, n, spread, note?}],
// value = median ms, spread = interquartile range in ms) and bench/results/latest.html.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as mg from "./ts/index.ts";
import type { MgArray } from "./ts/index.ts";
import { pythonWith } from "./bench/util.ts";
import { agrees, type BenchCase, benchCases, type Runner } from "./bench/suite/cases.ts";
import { type PythonInfo, PythonWorker } from "./bench/suite/python.ts";
import { type CaseResult, caseTable, html, markdownSummary, type Measurement, rows, type System } from "./bench/suite/report.ts";
import { FULL_POLICY, QUICK_POLICY, roundsFor, summarize } from "./bench/suite/stats.ts";

interface Args {
  quick: boolean;
  filter: string | null;
  device: "cpu" | "gpu" | "all" | null;
  python: boolean;
  out: string;
}

const USAGE = "usage: bun run bench.ts [--quick] [--filter TEXT] [--device cpu|gpu|all] [--no-python] [--out DIR]";

function parse(argv: string[]): Args {
  const a: Args = { quick: false, filter: null, device: null, python: true, out: join(import.meta.dir, "bench/results") };
  for (let i = 0; i < argv.length; i++) {
    const f = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined || v.startsWith("--")) throw new Error(`[bench] ${f} needs a value\n${USAGE}`);
      return v;
    };
    if (f === "--quick") a.quick = true;
    else if (f === "--filter") a.filter = value().toLowerCase();
    else if (f === "--device") {
      const d = value();
      if (d !== "cpu" && d !== "gpu" && d !== "all") throw new Error(`[bench] --device must be cpu, gpu or all, got '${d}'`);
      a.device = d;
    } else if (f === "--no-python") a.python = false;
    else if (f === "--out") a.out = value();
    else if (f === "--help" || f === "-h") {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`[bench] unknown argument '${f}'\n${USAGE}`);
  }
  return a;
}

let args: Args;
try {
  args = parse(process.argv.slice(2));
} catch (e) {
  console.error((e as Error).message);
  process.exit(2);
}

const info = mg.deviceInfo();
const simulated = info.is_simulator === true;
const gpuLabel = simulated ? "gpu-sim" : "gpu";
// metalgrad's devices: the CPU, and the GPU where it is a real one (the simulator only when asked).
const devices: { device: mg.Device; label: string; skip?: string }[] = [];
if (args.device !== "gpu") devices.push({ device: mg.cpu, label: "cpu" });
if (args.device === "gpu" || args.device === "all") devices.push({ device: mg.gpu, label: gpuLabel });
else if (args.device === null) {
  devices.push(simulated
    ? { device: mg.gpu, label: gpuLabel, skip: "the Metal simulator is not a performance device (--device gpu runs it)" }
    : { device: mg.gpu, label: gpuLabel });
}
const policy = args.quick ? QUICK_POLICY : FULL_POLICY;

// The Python side.
let worker: PythonWorker | null = null;
let pyInfo: PythonInfo | null = null;
let pyNote = args.python ? "" : "--no-python";
if (args.python) {
  const python = pythonWith(["mlx.core", "numpy"]) ?? pythonWith(["mlx.core"]) ?? pythonWith(["numpy"]);
  if (python) {
    const started = await PythonWorker.start(python);
    if ("worker" in started) ({ worker, info: pyInfo } = started);
    else pyNote = started.reason;
  } else pyNote = "no Python with mlx or numpy (set MG_PYTHON)";
}
const pythonSystems: { system: System; device: string }[] = [];
if (pyInfo?.mlx) for (const d of pyInfo.mlxDevices) pythonSystems.push({ system: "MLX", device: d });
if (pyInfo?.numpy) pythonSystems.push({ system: "numpy", device: "cpu" });

const facts = [
  `metalgrad on ${info.device_name} (${info.architecture}); devices: ${devices.map((d) => d.label + (d.skip ? " (skipped)" : "")).join(", ")}`,
  pyInfo
    ? `Python ${pyInfo.python}: MLX ${pyInfo.mlx ?? "not installed"}${pyInfo.mlx ? ` (${pyInfo.mlxDevices.join(", ")})` : ""}, numpy ${pyInfo.numpy ?? "not installed"}`
    : `MLX and numpy: not run (${pyNote})`,
  `${args.quick ? "--quick: small shapes, " : ""}warm-up: at least ${policy.warmup} run(s) and ${policy.warmupMs} ms of runs, then ${policy.minRounds}–${policy.maxRounds} timed runs (about ${policy.budgetMs} ms each system), alternating between systems; medians and interquartile ranges`,
  `${process.platform} ${process.arch}, ${navigator.hardwareConcurrency} hardware threads, Bun ${Bun.version}`,
];
console.log(`bench.ts — ${facts.join("\n  ")}\n`);

const tmp = mkdtempSync(join(tmpdir(), "mg-bench-"));
const results: CaseResult[] = [];
let failures = 0;
const cases = benchCases(args.quick, tmp).filter((c) => !args.filter || `${c.group} ${c.id}`.toLowerCase().includes(args.filter));
if (cases.length === 0) console.log(`no case matches --filter '${args.filter}'`);

/** A system measured in this case: how to run it once and time it. */
interface Contender {
  m: Measurement;
  once: () => Promise<number>;
  check: () => Promise<number | null>;
  times: number[];
  rounds: number;
}

function timeSync(f: () => void): number {
  const t0 = performance.now();
  f();
  return performance.now() - t0;
}

async function runCase(c: BenchCase, index: number): Promise<CaseResult> {
  mg.random.seed(index + 1);
  const inputs = c.inputs();
  const hasInputs = Object.keys(inputs).length > 0;
  const file = join(tmp, `case-${index}.safetensors`);
  if (hasInputs) mg.saveSafetensors(file, inputs);
  c.target?.write();
  const contenders: Contender[] = [];
  const measurements: Measurement[] = [];
  const unavailable = c.unavailable();
  for (const d of devices) {
    const m: Measurement = { system: "metalgrad", device: d.label };
    measurements.push(m);
    if (d.skip) m.na = d.skip;
    else if (unavailable) m.na = unavailable;
    else {
      try {
        const runner: Runner = c.prepare(inputs, d.device);
        contenders.push({ m, once: async () => timeSync(() => runner.run()), check: async () => runner.check(), times: [], rounds: 0 });
      } catch (e) {
        m.na = `error: ${(e as Error).message}`;
        failures++;
      }
    }
  }
  for (const p of pythonSystems) {
    const m: Measurement = { system: p.system, device: p.device };
    measurements.push(m);
    const key = `${index}/${p.system}/${p.device}`;
    const r = await worker!.ask({
      cmd: "prepare", key, system: p.system === "MLX" ? "mlx" : "numpy", device: p.device, op: c.op, params: c.params,
      ...(hasInputs ? { file } : {}),
    });
    if (r.na || r.error) {
      m.na = r.na ?? `error: ${r.error}`;
      continue;
    }
    const ask = async (cmd: string) => {
      const reply = await worker!.ask({ cmd, key });
      if (reply.error) throw new Error(`${p.system} ${p.device}: ${reply.error}`);
      return reply;
    };
    contenders.push({
      m, once: async () => (await ask("run")).ms as number, check: async () => (await ask("check")).value as number | null, times: [], rounds: 0,
    });
  }

  // One checked run each: every system must compute what MLX computes on that device.
  const checks = new Map<Contender, number | null>();
  for (const k of contenders) {
    try {
      checks.set(k, await k.check());
    } catch (e) {
      k.m.na = `error: ${(e as Error).message}`;
      if (k.m.system === "metalgrad") failures++;
    }
  }
  const notes: string[] = [];
  for (const k of contenders) {
    const mine = checks.get(k);
    const ref = contenders.find((o) => o.m.system === "MLX" && (o.m.device === k.m.device || (k.m.device === "gpu-sim" && o.m.device === "cpu")));
    const theirs = ref ? checks.get(ref) : undefined;
    if (k === ref || mine == null || theirs == null) continue;
    if (!agrees(c.id, mine, theirs)) {
      const rel = Math.abs(mine - theirs) / Math.abs(theirs);
      notes.push(`CHECK FAILED: ${k.m.system} ${k.m.device} gives ${mine.toPrecision(7)}, MLX ${theirs.toPrecision(7)} (relative difference ${rel.toExponential(1)})`);
      if (k.m.system === "metalgrad") failures++;
    }
  }

  // Warm-up, then interleaved timed rounds.
  const live = contenders.filter((k) => !k.m.na);
  for (const k of live) {
    try {
      let last = 0;
      const start = performance.now();
      for (let i = 0; i < policy.warmup || performance.now() - start < policy.warmupMs; i++) last = await k.once();
      k.rounds = roundsFor(last, policy);
    } catch (e) {
      k.m.na = `error: ${(e as Error).message}`;
      if (k.m.system === "metalgrad") failures++;
    }
  }
  const timed = live.filter((k) => !k.m.na);
  const maxRounds = Math.max(0, ...timed.map((k) => k.rounds));
  for (let r = 0; r < maxRounds; r++) {
    for (const k of timed) if (r < k.rounds && !k.m.na) {
      try {
        k.times.push(await k.once());
      } catch (e) {
        k.m.na = `error: ${(e as Error).message}`;
        if (k.m.system === "metalgrad") failures++;
      }
    }
  }
  for (const k of timed) if (!k.m.na) k.m.summary = summarize(k.times);

  for (const p of pythonSystems) await worker!.ask({ cmd: "drop", key: `${index}/${p.system}/${p.device}` });
  for (const a of Object.values(inputs) as MgArray[]) a.dispose();
  rmSync(file, { force: true });
  if (c.target) rmSync(c.target.file, { force: true });
  const result: CaseResult = { id: c.id, group: c.group, work: c.work, measurements };
  for (const line of [...caseTable(result), ...notes.map((n) => `  ${n}`)]) console.log(line);
  console.log("");
  return result;
}

try {
  for (const [i, c] of cases.entries()) results.push(await runCase(c, i));
} finally {
  worker?.stop();
  rmSync(tmp, { recursive: true, force: true });
}

console.log("summary (median time per run; metalgrad/MLX > 1: metalgrad slower):\n");
for (const line of markdownSummary(results)) console.log(line);
mkdirSync(args.out, { recursive: true });
const jsonFile = join(args.out, "latest.json");
const htmlFile = join(args.out, "latest.html");
writeFileSync(jsonFile, JSON.stringify(rows(results), null, 1) + "\n");
writeFileSync(htmlFile, html(results, { title: `metalgrad bench${args.quick ? " (--quick)" : ""}: metalgrad, MLX and numpy side by side`, facts }));
console.log(`\nwritten: ${jsonFile}, ${htmlFile}`);
if (failures > 0) {
  console.error(`${failures} metalgrad case(s) failed or disagreed with MLX`);
  process.exit(1);
}
