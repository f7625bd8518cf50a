// Load and save throughput (GB/s, medians) for safetensors (1 GiB as a few large tensors and as
// many small ones), npy and gguf, next to MLX's mx.load / mx.save_* and numpy's np.load / np.save
// on the same files in the same run. Loads count as done when every array holds its data
// (MLX: mx.eval after mx.load). Files are read from the page cache (each is read once before
// timing); they live in MG_IO_BENCH_DIR (default /tmp/mg-io-bench), never in the repository.
//   load         repeated loads in one process (freed buffers are reused: the steady state)
//   (CPU)        the same loads in CPU time (user + system, all threads): bytes per CPU-second, which
//                the machine's load does not skew as it skews wall time
//   first load   one load in a fresh process (every page faulted in: what opening a model costs)
//   save         into MG_IO_BENCH_SAVE_DIR (default /dev/shm when it exists: tmpfs, so the number
//                is the save path's own cost, not the disk's writeback, which swings 0.3–3 GB/s here)
//
//   bun run bench/io.bench.ts            (ROUNDS=5; MG_MLX_PYTHON=/path/to/python with mlx+numpy)
//   MG_IO_BENCH_ONLY=small bun run bench/io.bench.ts    (only the cases whose name matches the regex)
//   MG_IO_BENCH_OPS=load,first bun run bench/io.bench.ts (only these of load, first, save)
//   MG_IO_BENCH_DEVICE=gpu bun run bench/io.bench.ts      (metalgrad loads onto the GPU)
//
// Rounds alternate between metalgrad and a Python worker (MLX, numpy) holding the same files, so
// both see the same machine load: on a shared machine, timing one after the other skews ratios.
//
// Goal (issue 14): metalgrad's load at least as fast as MLX's.
import { existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import * as mg from "../ts/index.ts";
import { newArray } from "../ts/io/arrays.ts";
import { median } from "./util.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 5);
// The device loads go to (MG_IO_BENCH_DEVICE=gpu: the simulated GPU here; MLX's column stays its CPU
// build's load, the only one it has on Linux).
const DEVICE = process.env.MG_IO_BENCH_DEVICE === "gpu" ? "gpu" : "cpu";
mg.setDefaultDevice(mg[DEVICE]);
const DIR = process.env.MG_IO_BENCH_DIR ?? "/tmp/mg-io-bench";
const PYTHON = process.env.MG_MLX_PYTHON ?? "/work/mlxenv/bin/python";
const SAVE_DIR = process.env.MG_IO_BENCH_SAVE_DIR ?? (existsSync("/dev/shm") ? "/dev/shm/mg-io-bench-save" : DIR);
const MiB = 2 ** 20;
mkdirSync(DIR, { recursive: true });
mkdirSync(SAVE_DIR, { recursive: true });

/** An evaluated array of pseudo-random bits, filled in place (no per-element conversion). */
function filled(shape: number[], dtype: mg.Dtype, seed: number): mg.MgArray {
  const { array, bytes } = newArray(shape, dtype, mg.defaultStream(mg.cpu));
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >>> 2);
  let s = seed | 1;
  for (let i = 0; i < words.length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    // Keep float exponents tame (no NaN/inf patterns): clear the top exponent bit of each half.
    words[i] = s & 0x3fff3fff;
  }
  return array;
}

interface Case {
  name: string;
  file: string;
  format: "safetensors" | "npy" | "gguf";
  make: () => Record<string, mg.MgArray>;
}

const allCases: Case[] = [
  {
    name: "safetensors, 16 × 64 MiB float32",
    file: join(DIR, "large.safetensors"),
    format: "safetensors",
    make: () => Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`layers.${i}.weight`, filled([4096, 4096], mg.float32, i + 1)])),
  },
  {
    name: "safetensors, 4096 × 256 KiB (f32 and f16)",
    file: join(DIR, "small.safetensors"),
    format: "safetensors",
    make: () => Object.fromEntries(Array.from({ length: 4096 }, (_, i) =>
      [`blocks.${i >> 2}.p${i & 3}`, i % 2 ? filled([256, 256], mg.float32, i + 1) : filled([256, 512], mg.float16, i + 1)])),
  },
  { name: "npy, 512 MiB float32", file: join(DIR, "big.npy"), format: "npy", make: () => ({ x: filled([8192, 16384], mg.float32, 7) }) },
  {
    name: "gguf, 16 × 64 MiB float16",
    file: join(DIR, "large.gguf"),
    format: "gguf",
    make: () => Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`blk.${i}.weight`, filled([8192, 4096], mg.float16, i + 3)])),
  },
];

const ONLY = process.env.MG_IO_BENCH_ONLY ? new RegExp(process.env.MG_IO_BENCH_ONLY) : null;
const OPS = new Set((process.env.MG_IO_BENCH_OPS ?? "load,first,save").split(","));
const cases = allCases.filter((c) => ONLY === null || ONLY.test(c.name) || ONLY.test(c.file));

function save(c: Case, arrays: Record<string, mg.MgArray>, file = c.file): void {
  if (c.format === "safetensors") mg.saveSafetensors(file, arrays);
  else if (c.format === "gguf") mg.saveGguf(file, arrays);
  else mg.save(file, arrays.x!);
}

function disposeResult(r: unknown): void {
  if (r instanceof mg.MgArray) r.dispose();
  else if (r && typeof r === "object") for (const v of Object.values(r)) disposeResult(v);
}

function gbs(bytes: number, ms: number): number {
  return bytes / 1e9 / (ms / 1e3);
}

/** Milliseconds (wall, CPU) of one load in a fresh `bun` process (the import is not timed). */
function firstLoadMs(file: string): [number, number] {
  const code = `import * as mg from ${JSON.stringify(join(import.meta.dir, "../ts/index.ts"))};
const c0 = process.cpuUsage(); const t0 = performance.now(); mg.load(${JSON.stringify(file)}, { stream: mg.${DEVICE} });
const t1 = performance.now(); const c1 = process.cpuUsage(c0); console.log(t1 - t0, (c1.user + c1.system) / 1e3);`;
  const r = Bun.spawnSync([process.execPath, "-e", code], { stdout: "pipe", stderr: "inherit" });
  const [wall, cpu] = r.stdout.toString().trim().split("\n").pop()!.split(" ").map(Number);
  return [wall!, cpu!];
}

// The Python side: one worker answering one timed operation per line ("<op> <format> <file>").
const WORKER = `
import json, os, subprocess, sys, time
try:
    import mlx.core as mx
except ImportError:
    mx = None
import numpy as np
held = {}
cpu = None
def timed(f):
    global cpu
    t = time.perf_counter(); c = time.process_time(); f()
    cpu = (time.process_time() - c) * 1e3
    return (time.perf_counter() - t) * 1e3
for line in sys.stdin:
    op, fmt, f = line.split(" ", 2); f = f.strip()
    ms = None
    cpu = None
    if op == "mlx_load" and mx is not None:
        def go():
            d = mx.load(f); mx.eval(d); held[f] = d
        held.pop(f, None); ms = timed(go)
    elif op == "mlx_first" and mx is not None:
        code = ("import time, mlx.core as mx; t = time.perf_counter(); c = time.process_time(); mx.eval(mx.load(%r)); "
                "print((time.perf_counter() - t) * 1e3, (time.process_time() - c) * 1e3)") % f
        ms, cpu = map(float, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    elif op == "mlx_save" and mx is not None:
        arrays = held.get(f)
        if arrays is None:
            arrays = mx.load(f); mx.eval(arrays); held[f] = arrays
        out = os.path.join(${JSON.stringify(SAVE_DIR)}, "mlx-save." + fmt)
        save = {"safetensors": mx.save_safetensors, "gguf": mx.save_gguf, "npy": mx.save}[fmt]
        ms = timed(lambda: save(out, arrays)); os.remove(out)
    elif op == "numpy_load" and fmt == "npy":
        held.pop(f, None); ms = timed(lambda: held.__setitem__(f, np.load(f)))
    elif op == "numpy_save" and fmt == "npy":
        a = np.load(f); out = os.path.join(${JSON.stringify(SAVE_DIR)}, "np-save.npy")
        ms = timed(lambda: np.save(out, a)); os.remove(out)
    elif op == "drop":
        held.clear(); ms = 0
    print(json.dumps([ms, cpu]), flush=True)
`;
let pyNote = "";
let worker: ReturnType<typeof Bun.spawn> | null = null;
let lines: AsyncIterator<string> | null = null;
try {
  worker = Bun.spawn([PYTHON, "-c", WORKER], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
  const decoder = new TextDecoder();
  lines = (async function* () {
    let buf = "";
    for await (const chunk of worker!.stdout as ReadableStream<Uint8Array>) {
      buf += decoder.decode(chunk);
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        yield buf.slice(0, nl);
        buf = buf.slice(nl + 1);
      }
    }
  })();
} catch (e) {
  pyNote = `${PYTHON} not runnable (${(e as Error).message}): the MLX and numpy columns are empty`;
}

/** CPU milliseconds (all threads) of the Python worker's last timed operation. */
let pyCpu: number | undefined;

/** One timed operation in the Python worker (milliseconds), or undefined where it has none. */
async function py(op: string, c: Case): Promise<number | undefined> {
  pyCpu = undefined;
  if (!worker || !lines) return undefined;
  (worker.stdin as import("bun").FileSink).write(`${op} ${c.format} ${c.file}\n`);
  (worker.stdin as import("bun").FileSink).flush();
  const next = await lines.next();
  if (next.done) {
    pyNote ||= "the Python worker stopped (is mlx installed for MG_MLX_PYTHON?)";
    worker = null;
    return undefined;
  }
  const [v, cpu] = JSON.parse(next.value) as [number | null, number | null];
  pyCpu = cpu ?? undefined;
  return v ?? undefined;
}

type Row = Record<string, number[]>;
const results = new Map<Case, { bytes: number; row: Row }>();
const push = (row: Row, k: string, v: number | undefined) => {
  if (v !== undefined) (row[k] ??= []).push(v);
};
for (const c of cases) {
  const arrays = c.make();
  const bytes = Object.values(arrays).reduce((n, a) => n + a.nbytes, 0);
  const row: Row = {};
  if (!existsSync(c.file) || statSync(c.file).size < bytes) save(c, arrays, c.file);
  // Saves, alternating.
  const saveFile = join(SAVE_DIR, c.file.slice(c.file.lastIndexOf("/") + 1));
  for (let r = 0; r < (OPS.has("save") ? Math.min(ROUNDS, 3) : 0); r++) {
    const t0 = performance.now();
    save(c, arrays, saveFile);
    push(row, "save", performance.now() - t0);
    rmSync(saveFile, { force: true });
    push(row, "mlx_save", await py("mlx_save", c));
    push(row, "numpy_save", await py("numpy_save", c));
  }
  disposeResult(arrays);
  await py("drop", c);
  // Repeated loads, alternating (each side keeps only its latest result, freeing the one before).
  disposeResult(mg.load(c.file));
  await py("mlx_load", c);
  let kept: unknown = null;
  for (let r = 0; r < (OPS.has("load") ? ROUNDS : 0); r++) {
    disposeResult(kept);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    kept = mg.load(c.file);
    push(row, "load", performance.now() - t0);
    const c1 = process.cpuUsage(c0);
    push(row, "load_cpu", (c1.user + c1.system) / 1e3);
    push(row, "mlx_load", await py("mlx_load", c));
    push(row, "mlx_load_cpu", pyCpu);
    push(row, "numpy_load", await py("numpy_load", c));
  }
  disposeResult(kept);
  await py("drop", c);
  Bun.gc(true);
  mg.clearCache();
  // First loads in fresh processes, alternating.
  for (let r = 0; r < (OPS.has("first") ? ROUNDS : 0); r++) {
    const [wall, cpu] = firstLoadMs(c.file);
    push(row, "first", wall);
    push(row, "first_cpu", cpu);
    push(row, "mlx_first", await py("mlx_first", c));
    push(row, "mlx_first_cpu", pyCpu);
  }
  results.set(c, { bytes, row });
}
(worker?.stdin as import("bun").FileSink | undefined)?.end();

const fmt = (v: number | undefined) => (v === undefined ? "—" : v.toFixed(2));
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? "—" : `${(a / b).toFixed(2)}×`);
console.log(`io: GB/s (10^9 bytes/s), medians of ${ROUNDS} alternating rounds; metalgrad loads onto the ${DEVICE}; files in ${DIR} ` +
  `(page cache warm), saves into ${SAVE_DIR}`);
if (pyNote) console.log(`  (${pyNote})`);
console.log(`  ${"case".padEnd(50)} ${"op".padEnd(16)} ${"metalgrad".padStart(9)} ${"MLX".padStart(7)} ${"numpy".padStart(7)}  mg/MLX`);
for (const c of cases) {
  const { bytes, row } = results.get(c)!;
  const g = (k: string) => (row[k] ? gbs(bytes, median(row[k]!)) : undefined);
  const size = `${(statSync(c.file).size / MiB).toFixed(0)} MiB`;
  const label = `${c.name} (${size})`;
  for (const [op, mine, mlx, np] of [["load", "load", "mlx_load", "numpy_load"], ["first load", "first", "mlx_first", ""], ["save", "save", "mlx_save", "numpy_save"]] as const) {
    console.log(`  ${(op === "load" ? label : "").padEnd(50)} ${op.padEnd(16)} ${fmt(g(mine)).padStart(9)} ${fmt(g(mlx)).padStart(7)} ${fmt(np ? g(np) : undefined).padStart(7)}  ${ratio(g(mine), g(mlx))}`);
    // Wall time on a busy machine depends on the scheduler; CPU time (all threads) does not.
    const cpuKey = op === "load" ? "load_cpu" : op === "first load" ? "first_cpu" : "";
    if (cpuKey && row[cpuKey]) {
      const ms = (k: string) => (row[k] ? median(row[k]!) : undefined);
      const name = `${op} (CPU)`;
      console.log(`  ${"".padEnd(50)} ${name.padEnd(16)} ${fmt(g(cpuKey)).padStart(9)} ${fmt(g(`mlx_${cpuKey}`)).padStart(7)} ${"".padStart(7)}  ${ratio(g(cpuKey), g(`mlx_${cpuKey}`))}` +
        `   (CPU ms, all threads: ${ms(cpuKey)?.toFixed(0)} vs ${ms(`mlx_${cpuKey}`)?.toFixed(0) ?? "—"})`);
    }
  }
}
rmSync(SAVE_DIR, { recursive: true, force: true });
