// Records the simulated-GPU dispatches of one op on a 1024×1024 float32 input (512×512 operands
// for matmul) as a replay plan for test/native/mslsim/replay.cpp, which runs them through the
// MSLSim C API alone: under callgrind that gives the simulator's instruction counts per op without
// Bun, the JIT or the rest of the runtime in the profile.
//
//   bun run scripts/sim-record.ts <op> <out.plan>     op: add softmax sumrows sumcols sumall cumsum sort matmul
//
// The plan is text, one line per item: `S name file` (a kernel library's source, written next to
// the plan), `D name groups gx gy gz tx ty tz` (a dispatch; groups 1: the grid counts
// threadgroups), `B index id size offset length` (buffer `id`, shared between dispatches),
// `Y index hex` (inline bytes), `T index length` (threadgroup memory), `W mask` (must-write), `E`.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import * as mg from "../ts/index.ts";
import { GpuEncoder } from "../ts/backend/gpu/encoder.ts";
import { kernelSource } from "../ts/backend/gpu/kernels.ts";
import { CommandBatch, type Dispatch, type NativeBuffer, type Size3 } from "../ts/backend/runtime.ts";

const [op, out] = [process.argv[2], process.argv[3]];
const OPS: Record<string, (x: mg.MgArray, a: mg.MgArray, b: mg.MgArray) => mg.MgArray> = {
  add: (x) => mg.add(x, 1, { stream: mg.gpu }),
  softmax: (x) => mg.softmax(x, -1, { stream: mg.gpu }),
  sumrows: (x) => mg.sum(x, -1, { stream: mg.gpu }),
  sumcols: (x) => mg.sum(x, 0, { stream: mg.gpu }),
  sumall: (x) => mg.sum(x, undefined, { stream: mg.gpu }),
  cumsum: (x) => mg.cumsum(x, -1, { stream: mg.gpu }),
  sort: (x) => mg.sort(x, -1, { stream: mg.gpu }),
  matmul: (_x, a, b) => mg.matmul(a, b, { stream: mg.gpu }),
};
const run = op === undefined ? undefined : OPS[op];
if (run === undefined || out === undefined) {
  console.error(`usage: bun run scripts/sim-record.ts <${Object.keys(OPS).join("|")}> <out.plan>`);
  process.exit(2);
}
// Which source file and instantiation each kernel came from (the kernel catalog's lines).
const catalog = `${out}.catalog.jsonl`;
rmSync(catalog, { force: true });
process.env.MG_KERNEL_CATALOG = catalog;

const x = mg.add(mg.random.uniform(0, 1, [1024, 1024]), 0, { stream: mg.gpu });
const a = mg.add(mg.random.uniform(0, 1, [512, 512]), 0, { stream: mg.gpu });
const b = mg.add(mg.random.uniform(0, 1, [512, 512]), 0, { stream: mg.gpu });
mg.eval(x, a, b);

const ids = new Map<NativeBuffer, number>();
const idOf = (buf: NativeBuffer): number => {
  let id = ids.get(buf);
  if (id === undefined) ids.set(buf, (id = ids.size));
  return id;
};
const size3 = (s: Size3): number[] => (typeof s === "number" ? [s, 1, 1] : [s[0], s[1] ?? 1, s[2] ?? 1]);
const lines: string[] = [];
const used = new Set<string>();
let open: string[] | null = null;

// Dispatches go through the encoder (`dispatch`) or are written directly into the batch (begin,
// bind, inlineInts, end: elementwise ops); both are recorded.
const encoderDispatch = GpuEncoder.prototype.dispatch;
GpuEncoder.prototype.dispatch = function (d: Dispatch, trace) {
  used.add(d.pipeline.name);
  lines.push(`D ${d.pipeline.name} ${d.mode === "threadgroups" ? 1 : 0} ${size3(d.grid).join(" ")} ${size3(d.threadgroup).join(" ")}`);
  for (const bb of d.buffers ?? []) {
    const offset = bb.offset ?? 0;
    lines.push(`B ${bb.index} ${idOf(bb.buffer)} ${bb.buffer.byteLength} ${offset} ${bb.length ?? bb.buffer.byteLength - offset}`);
  }
  for (const y of d.bytes ?? []) lines.push(`Y ${y.index} ${Buffer.from(y.data.buffer, y.data.byteOffset, y.data.byteLength).toString("hex")}`);
  for (const m of d.threadgroupMemory ?? []) lines.push(`T ${m.index} ${m.length}`);
  lines.push(`W ${(d.mustWrite ?? []).reduce((mask, i) => mask | (1 << i), 0) >>> 0}`, "E");
  return encoderDispatch.call(this, d, trace);
};
const { begin, bind, inlineInts, end } = CommandBatch.prototype;
CommandBatch.prototype.begin = function (pipeline, grid, threadgroup, buffers, bytes, mustWrite) {
  used.add(pipeline.name);
  open = [`D ${pipeline.name} 0 ${grid} 1 1 ${threadgroup} 1 1`];
  open.push(`W ${mustWrite >>> 0}`);
  return begin.call(this, pipeline, grid, threadgroup, buffers, bytes, mustWrite);
};
CommandBatch.prototype.bind = function (index, buffer, offset, length, access) {
  open?.push(`B ${index} ${idOf(buffer)} ${buffer.byteLength} ${offset} ${length}`);
  return bind.call(this, index, buffer, offset, length, access);
};
CommandBatch.prototype.inlineInts = function (index, values, wide) {
  const data = wide ? BigInt64Array.from((values.length ? values : [0]).map((v) => BigInt(v))) : Int32Array.from(values.length ? values : [0]);
  open?.push(`Y ${index} ${Buffer.from(data.buffer).toString("hex")}`);
  return inlineInts.call(this, index, values, wide);
};
CommandBatch.prototype.end = function () {
  if (open) lines.push(...open, "E");
  open = null;
  return end.call(this);
};

mg.eval(run(x, a, b));

let plan = "";
const entries = readFileSync(catalog, "utf8").trim().split("\n").filter((l) => l.length > 0);
for (const entry of entries.map((l) => JSON.parse(l) as { file: string; name: string; instantiation: string })) {
  if (!used.has(entry.name)) continue;
  used.delete(entry.name);
  const path = `${out}.${entry.name}.metal`;
  const inst = `template [[host_name("${entry.name}")]] [[kernel]] decltype(${entry.instantiation}) ${entry.instantiation};`;
  writeFileSync(path, `${kernelSource(entry.file)}\n\n// instances\n${inst}\n`);
  plan += `S ${entry.name} ${path}\n`;
}
for (const name of used) console.error(`sim-record: no source recorded for ${name} (a generated kernel?); the replay skips its dispatches`);
writeFileSync(out, `${plan}${lines.join("\n")}\n`);
rmSync(catalog, { force: true });
console.log(`sim-record: ${lines.filter((l) => l === "E").length} dispatch(es) of ${op} -> ${out}`);
