// The CPU device's elementwise kernels that are not float32 arithmetic: integer, bool, comparison,
// complex and libm ops (the kernels the AVX2 table takes from the baseline one, the libm functions
// that run through double in blocks, the small-integer kernels with one loop for every layout), 1M elements, each op alone (no fusion: eval after
// every op; the last case: 1000 15-element adds, the loop after the blocks). Medians of ROUNDS runs
// after WARMUP runs, with the quartiles in brackets; ms.
//
//   bun run bench/cpu-kernels.bench.ts  (ROUNDS=15 WARMUP=5; MG_CPU_ISA=baseline for the SSE2 table)
import * as mg from "../ts/index.ts";
import type { MgArray } from "../ts/core/array.ts";
import { nativeInfo } from "../ts/backend/cpu/native/index.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 15);
const WARMUP = Number(process.env.WARMUP ?? 5);
const N = 1 << 20;
const S = { stream: mg.cpu };

function time(fn: () => MgArray): [number, number, number] {
  const ts: number[] = [];
  for (let r = 0; r < WARMUP + ROUNDS; r++) {
    const t0 = performance.now();
    const out = mg.tidy(() => fn());
    mg.eval(out);
    const t = performance.now() - t0;
    out.dispose();
    if (r >= WARMUP) ts.push(t);
  }
  ts.sort((a, b) => a - b);
  const q = (p: number) => ts[Math.min(ts.length - 1, Math.floor(p * ts.length))]!;
  return [q(0.5), q(0.25), q(0.75)];
}

const fi = mg.random.uniform(-4, 4, [N], mg.float32, S);
const gi = mg.random.uniform(0.5, 4, [N], mg.float32, S);
const i32 = mg.astype(mg.multiply(fi, 1000, S), mg.int32, S);
const j32 = mg.add(mg.astype(mg.multiply(gi, 7, S), mg.int32, S), 1, S);
const i64 = mg.astype(i32, mg.int64, S);
const u8 = mg.astype(mg.abs(i32, S), mg.uint8, S);
const i16 = mg.astype(i32, mg.int16, S);
const u32 = mg.astype(mg.abs(i32, S), mg.uint32, S);
const b1 = mg.greater(fi, 0, S);
const b2 = mg.less(gi, 2, S);
const f16 = mg.astype(fi, mg.float16, S);
const c64 = mg.add(mg.astype(fi, mg.complex64, S), mg.multiply(mg.astype(gi, mg.complex64, S), mg.array(0, mg.complex64), S), S);
const f64 = mg.astype(fi, mg.float64, S);
const small = mg.astype(mg.arange(15, S), mg.int32, S);
mg.eval([fi, gi, i32, j32, i64, u8, i16, u32, b1, b2, f16, c64, f64, small]);

const cases: [string, () => MgArray][] = [
  ["add int32", () => mg.add(i32, j32, S)],
  ["multiply int64", () => mg.multiply(i64, i64, S)],
  ["add uint8", () => mg.add(u8, u8, S)],
  ["add uint8 + scalar", () => mg.add(u8, mg.array(3, mg.uint8), S)],
  ["multiply int16 scalar", () => mg.multiply(mg.array(3, mg.int16), i16, S)],
  ["add int16", () => mg.add(i16, i16, S)],
  ["maximum uint32 scalar", () => mg.maximum(u32, mg.array(7, mg.uint32), S)],
  ["greater uint32", () => mg.greater(u32, u32, S)],
  ["greater int32", () => mg.greater(i32, j32, S)],
  ["equal float32", () => mg.equal(fi, gi, S)],
  ["floorDivide int32", () => mg.floorDivide(i32, j32, S)],
  ["remainder int32", () => mg.remainder(i32, j32, S)],
  ["power int32", () => mg.power(j32, 3, S)],
  ["logicalAnd bool", () => mg.logicalAnd(b1, b2, S)],
  ["add bool", () => mg.add(b1, b2, S)],
  ["sin float32", () => mg.sin(fi, S)],
  ["sqrt float16", () => mg.sqrt(mg.abs(f16, S), S)],
  ["add float16", () => mg.add(f16, f16, S)],
  ["add complex64", () => mg.add(c64, c64, S)],
  ["remainder float32", () => mg.remainder(fi, gi, S)],
  ["floorDivide int64", () => mg.floorDivide(i64, i64, S)],
  ["divmod int16", () => mg.divmod(i16, mg.add(mg.abs(i16, S), 1, S), S)[0]!],
  ["power float32", () => mg.power(gi, fi, S)],
  ["arctan2 float32", () => mg.arctan2(fi, gi, S)],
  ["expm1 float16", () => mg.expm1(f16, S)],
  ["exp float64", () => mg.exp(f64, S)],
  ["rsqrt float32", () => mg.rsqrt(gi, S)],
  ["astype int32 to float32", () => mg.astype(i32, mg.float32, S)],
  ["astype int32 to float16", () => mg.astype(i32, mg.float16, S)],
  ["astype uint8 to bfloat16", () => mg.astype(u8, mg.bfloat16, S)],
  ["sum int32 axis 0 (columns)", () => mg.sum(mg.reshape(i32, [1024, 1024], S), 0, S)],
  ["max int16 axis 1 (rows)", () => mg.max(mg.reshape(i16, [1024, 1024], S), 1, S)],
  ["abs int32", () => mg.abs(i32, S)],
  ["add int32, 1000 x 15 elements", () => {
    let r = small;
    for (let k = 0; k < 1000; k++) mg.eval((r = mg.add(small, small, S)));  // each alone: the tail loop
    return r;
  }],
];
console.log(`isa ${nativeInfo()?.isa ?? "ts"}, ${N} elements, median [q1, q3] ms`);
for (const [name, fn] of cases) {
  const [m, q1, q3] = time(fn);
  console.log(`${name.padEnd(22)} ${m.toFixed(3)} [${q1.toFixed(3)}, ${q3.toFixed(3)}]`);
}
