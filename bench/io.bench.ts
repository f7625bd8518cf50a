// Load and save throughput (GB/s, medians) for safetensors (1 GiB as a few large tensors and as
// many small ones), npy and gguf, next to MLX's mx.load / mx.save_* and numpy's np.load / np.save
// on the same files in the same run. Loads count as done when every array holds its data
// (MLX: mx.eval after mx.load). Files are read from the page cache (each is read once before
// timing); they live in MG_IO_BENCH_DIR (default /tmp/mg-io-bench), never in the repository.
//   load         repeated loads in one process (freed buffers are reused: the steady state)
//   first load   one load in a fresh process (every page faulted in: what opening a model costs)
//   save         into MG_IO_BENCH_SAVE_DIR (default /dev/shm when it exists: tmpfs, so the number
//                is the save path's own cost, not the disk's writeback, which swings 0.3–3 GB/s here)
//
//   bun run bench/io.bench.ts            (ROUNDS=5; MG_MLX_PYTHON=/path/to/python with mlx+numpy)
//
// Goal (issue 14): metalgrad's load at least as fast as MLX's.
import { existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import * as mg from "../ts/index.ts";
import { newArray } from "../ts/io/arrays.ts";
import { median } from "./util.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 5);
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

const cases: Case[] = [
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

/** Milliseconds of one load in a fresh `bun` process (the import is not timed). */
function firstLoadMs(file: string): number {
  const code = `import * as mg from ${JSON.stringify(join(import.meta.dir, "../ts/index.ts"))};
const t0 = performance.now(); mg.load(${JSON.stringify(file)}); console.log(performance.now() - t0);`;
  const r = Bun.spawnSync([process.execPath, "-e", code], { stdout: "pipe", stderr: "inherit" });
  return Number(r.stdout.toString().trim().split("\n").pop());
}

// metalgrad: write each file (timed as the save), then time loads.
const results: Record<string, { bytes: number; save: number; load: number; first: number }> = {};
for (const c of cases) {
  const arrays = c.make();
  const bytes = Object.values(arrays).reduce((n, a) => n + a.nbytes, 0);
  const saveMs: number[] = [];
  const saveFile = join(SAVE_DIR, c.file.slice(c.file.lastIndexOf("/") + 1));
  for (let r = 0; r < Math.min(ROUNDS, 3); r++) {
    const t0 = performance.now();
    save(c, arrays, saveFile);
    saveMs.push(performance.now() - t0);
    rmSync(saveFile, { force: true });
  }
  if (!existsSync(c.file) || statSync(c.file).size < bytes) save(c, arrays, c.file);
  disposeResult(arrays);
  disposeResult(mg.load(c.file)); // page cache and allocator warm
  const loadMs: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    const out = mg.load(c.file);
    loadMs.push(performance.now() - t0);
    disposeResult(out);
  }
  Bun.gc(true);
  mg.clearCache();
  const first = median(Array.from({ length: ROUNDS }, () => firstLoadMs(c.file)));
  results[c.name] = { bytes, save: gbs(bytes, median(saveMs)), load: gbs(bytes, median(loadMs)), first: gbs(bytes, first) };
}

// MLX and numpy on the same files, in a child process (same machine, same page cache).
const script = `
import json, os, subprocess, sys, time, statistics
rounds = ${ROUNDS}
save_dir = ${JSON.stringify(SAVE_DIR)}
cases = json.loads(sys.argv[1])
out = {}
try:
    import mlx.core as mx
except ImportError:
    mx = None
import numpy as np
def med(f, n):
    ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3
for c in cases:
    r = {}
    f = c["file"]
    if mx is not None:
        def mlx_load():
            d = mx.load(f); mx.eval(d)
            return d
        mlx_load()
        r["mlx_load"] = med(lambda: mlx_load(), rounds)
        first = []
        for _ in range(rounds):
            code = "import time, mlx.core as mx; t = time.perf_counter(); mx.eval(mx.load(%r)); print((time.perf_counter() - t) * 1e3)" % f
            first.append(float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout))
        r["mlx_first"] = statistics.median(first)
        arrays = mlx_load()
        tmp = os.path.join(save_dir, "mlx-save")
        if c["format"] == "safetensors": r["mlx_save"] = med(lambda: mx.save_safetensors(tmp, arrays), min(rounds, 3))
        elif c["format"] == "gguf": r["mlx_save"] = med(lambda: mx.save_gguf(tmp, arrays), min(rounds, 3))
        else: r["mlx_save"] = med(lambda: mx.save(tmp, arrays), min(rounds, 3))
        for p in [tmp, tmp + ".npy", tmp + ".safetensors", tmp + ".gguf"]:
            if os.path.exists(p): os.remove(p)
        del arrays
    if c["format"] == "npy":
        np.load(f)
        r["numpy_load"] = med(lambda: np.load(f), rounds)
        a = np.load(f)
        r["numpy_save"] = med(lambda: np.save(os.path.join(save_dir, "np-save.npy"), a), min(rounds, 3))
        os.remove(os.path.join(save_dir, "np-save.npy"))
    out[c["name"]] = r
print(json.dumps(out))
`;
let py: Record<string, Record<string, number>> = {};
let pyNote = "";
try {
  const r = Bun.spawnSync([PYTHON, "-c", script, JSON.stringify(cases.map(({ name, file, format }) => ({ name, file, format })))], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode === 0) py = JSON.parse(r.stdout.toString());
  else pyNote = `python failed: ${r.stderr.toString().trim().split("\n").pop()}`;
} catch (e) {
  pyNote = `${PYTHON} not runnable (${(e as Error).message}): MLX and numpy columns are empty`;
}

const fmt = (v: number | undefined) => (v === undefined ? "—" : v.toFixed(2));
const ratio = (a: number, b: number | undefined) => (b === undefined ? "—" : `${(a / b).toFixed(2)}×`);
console.log(`io: GB/s (10^9 bytes/s), medians of ${ROUNDS} rounds; files in ${DIR} (page cache warm), saves into ${SAVE_DIR}`);
if (pyNote) console.log(`  (${pyNote})`);
console.log(`  ${"case".padEnd(44)} ${"op".padEnd(11)} ${"metalgrad".padStart(9)} ${"MLX".padStart(7)} ${"numpy".padStart(7)}  mg/MLX`);
for (const c of cases) {
  const m = results[c.name]!;
  const p = py[c.name] ?? {};
  const g = (k: string) => (p[k] === undefined ? undefined : gbs(m.bytes, p[k]!));
  const size = `${(statSync(c.file).size / MiB).toFixed(0)} MiB file`;
  console.log(`  ${`${c.name} (${size})`.padEnd(44)} ${"load".padEnd(11)} ${fmt(m.load).padStart(9)} ${fmt(g("mlx_load")).padStart(7)} ${fmt(g("numpy_load")).padStart(7)}  ${ratio(m.load, g("mlx_load"))}`);
  console.log(`  ${"".padEnd(44)} ${"first load".padEnd(11)} ${fmt(m.first).padStart(9)} ${fmt(g("mlx_first")).padStart(7)} ${"".padStart(7)}  ${ratio(m.first, g("mlx_first"))}`);
  console.log(`  ${"".padEnd(44)} ${"save".padEnd(11)} ${fmt(m.save).padStart(9)} ${fmt(g("mlx_save")).padStart(7)} ${fmt(g("numpy_save")).padStart(7)}  ${ratio(m.save, g("mlx_save"))}`);
}
rmSync(SAVE_DIR, { recursive: true, force: true });
