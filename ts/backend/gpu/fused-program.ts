// Small fused regions without a compile of their own: one kernel interprets a
// region as a program (a list of functor calls over registers), so the thousands of distinct
// small chains a test suite fuses stop costing a simulator compile (~60 ms of CPU) each. It calls
// the same functors of elementwise_ops.h on values of the same types, so its results equal the
// generated kernel's bit for bit; the trace names it (kernel mg_fused_program, layout "fused
// general": every input read through its strides). Regions it does not cover (other dtypes or
// functors, large outputs or indices, more buffers or values than it holds) use their generated
// kernel, as every region does with MG_FUSED_PROGRAM=0.
import { bool_, type Dtype, float32, int32 } from "../../core/dtype.ts";
import type { MgArray, Node } from "../../core/array.ts";
import { COMPARISONS, FLOAT_BINARY, FLOAT_UNARY, INT_BINARY, INT_UNARY } from "./functors.ts";
import { kernelSource } from "./kernels.ts";

/** Registers and buffers of the interpreter: inputs come first, then outputs (as in a generated
 *  kernel); with shapes, strides, sizes and the program, Metal's 31 buffer slots. */
export const PROGRAM_REGISTERS = 128;
export const PROGRAM_BUFFERS = 26;
export const PROGRAM_NAME = "mg_fused_program";

// Value types: float32, int32, bool (registers hold their bits in a ulong).
const F = 0, I = 1, B = 2;
const CODE = new Map<Dtype, number>([[float32, F], [int32, I], [bool_, B]]);
const MSL = ["float", "int32_t", "bool"];
const load = (t: number, r: string) => (t === F ? `as_type<float>(uint(${r}))` : t === I ? `int32_t(uint(${r}))` : `(${r} != 0ul)`);
const store = (t: number, v: string) => (t === F ? `ulong(as_type<uint>(float(${v})))` : t === I ? `ulong(uint(int32_t(${v})))` : `(bool(${v}) ? 1ul : 0ul)`);

interface Op {
  functor: string;
  args: number[];
  out: number;
}

// bool op bool giving bool (a subset of the bool single-op family in elementwise.ts)
const BOOL_BINARY = ["BitwiseAnd", "BitwiseOr", "BitwiseXor", "Equal", "LogicalAnd", "LogicalOr", "NotEqual"];

/** Every (functor, argument types, result type) the interpreter runs, in opcode order. */
const OPS: Op[] = [
  ...FLOAT_UNARY.map((f) => ({ functor: f, args: [F], out: F })),
  ...INT_UNARY.map((f) => ({ functor: f, args: [I], out: I })),
  ...[F, I, B].map((t) => ({ functor: "LogicalNot", args: [t], out: B })),
  ...FLOAT_BINARY.map((f) => ({ functor: f, args: [F, F], out: F })),
  ...INT_BINARY.map((f) => ({ functor: f, args: [I, I], out: I })),
  ...BOOL_BINARY.map((f) => ({ functor: f, args: [B, B], out: B })),
  ...[...COMPARISONS, "EqualNan"].flatMap((f) => [F, I].map((t) => ({ functor: f, args: [t, t], out: B }))),
  ...[F, I, B].map((t) => ({ functor: "Select", args: [B, t, t], out: t })),
  ...[F, I, B].flatMap((from) => [F, I, B].map((to) => ({ functor: `Cast<${MSL[to]}>`, args: [from], out: to }))),
];
const opcode = new Map(OPS.map((o, k) => [`${o.functor}|${o.args.join(",")}|${o.out}`, k]));

let source: string | undefined;

/** The interpreter's library source (elementwise_ops.h and one kernel). */
export function programSource(): string {
  if (source !== undefined) return source;
  const slots = (n: number, f: (k: number) => string) => Array.from({ length: n }, (_, k) => f(k));
  const params = slots(PROGRAM_BUFFERS, (k) => `    device uchar* io${k} [[buffer(${k})]]`);
  let b = PROGRAM_BUFFERS;
  params.push(`    constant const int* shape [[buffer(${b++})]]`, `    constant const int64_t* strides [[buffer(${b++})]]`,
    `    constant const int& ndim [[buffer(${b++})]]`, `    constant const int64_t* bases [[buffer(${b++})]]`,
    `    constant const uint* prog [[buffer(${b++})]]`,
    "    uint2 gid [[thread_position_in_grid]]", "    uint2 grid [[threads_per_grid]]");
  const cases = OPS.map((o, k) => {
    const regs = ["a", "b", "c"];
    const args = o.args.map((t, j) => load(t, `r[${regs[j]}]`)).join(", ");
    return `      case ${k}: r[d] = ${store(o.out, `${o.functor}()(${args})`)}; break;  // ${o.functor}(${o.args.map((t) => MSL[t]).join(", ")})`;
  });
  const loadInput = (t: number) => (t === F ? "ulong(as_type<uint>(((device const float*)p)[loc]))" : t === I ? "ulong(uint(((device const int32_t*)p)[loc]))" : "(((device const bool*)p)[loc] ? 1ul : 0ul)");
  const pick = (prefix: string, n: number) => slots(n - 1, (k) => `k == ${k} ? ${prefix}${k} : `).join("") + `${prefix}${n - 1}`;
  source = `${kernelSource("elementwise_ops.h")}

// prog: inputs, outputs, instructions, elements; each input's type; each output's register and
// type; then per instruction its opcode and (destination | a << 8 | b << 16 | c << 24) registers.
[[kernel]] void ${PROGRAM_NAME}(
${params.join(",\n")}) {
  typedef uint IdxT;
  IdxT i = IdxT(gid.y) * IdxT(grid.x) + IdxT(gid.x);
  if (i >= prog[3]) return;
  ulong r[${PROGRAM_REGISTERS}];
  const uint nin = prog[0], nout = prog[1], nops = prog[2];
  for (uint k = 0; k < nin; ++k) {
    const IdxT loc = IdxT(bases[k]) + elem_to_loc<IdxT>(i, shape, strides + k * ndim, ndim);
    device const uchar* p = ${pick("io", PROGRAM_BUFFERS)};
    const uint t = prog[4 + k];
    r[k] = t == ${F} ? ${loadInput(F)} : t == ${I} ? ${loadInput(I)} : ${loadInput(B)};
  }
  uint pc = 4 + nin + 2 * nout;
  for (uint j = 0; j < nops; ++j, pc += 2) {
    const uint w = prog[pc + 1];
    const uint d = w & 255u, a = (w >> 8) & 255u, b = (w >> 16) & 255u, c = w >> 24;
    (void)b;
    (void)c;
    switch (prog[pc]) {
${cases.join("\n")}
      default: break;
    }
  }
  for (uint k = 0; k < nout; ++k) {
    const ulong v = r[prog[4 + nin + 2 * k]];
    const uint t = prog[5 + nin + 2 * k];
    const uint s = nin + k;
    device uchar* p = ${pick("io", PROGRAM_BUFFERS).replace(/k ==/g, "s ==")};
    if (t == ${F}) ((device float*)p)[i] = ${load(F, "v")};
    else if (t == ${I}) ((device int32_t*)p)[i] = ${load(I, "v")};
    else ((device bool*)p)[i] = ${load(B, "v")};
  }
}
`;
  return source;
}

/** A region (nodes in dependency order reading `inputs`, writing `outputs`; `functors[k]` is node
 *  k's) as the interpreter's program words, or null when the interpreter does not cover it. */
export function programWords(nodes: readonly Node[], inputs: readonly MgArray[], outputs: readonly MgArray[], functors: readonly string[], size: number): number[] | null {
  if (process.env.MG_FUSED_PROGRAM === "0") return null;
  if (inputs.length === 0 || inputs.length + outputs.length > PROGRAM_BUFFERS) return null;
  if (inputs.length + nodes.length > PROGRAM_REGISTERS) return null;
  const reg = new Map<MgArray, number>();
  const words: number[] = [inputs.length, outputs.length, nodes.length, size];
  for (const a of inputs) {
    const t = CODE.get(a.dtype);
    if (t === undefined) return null;
    reg.set(a, reg.size);
    words.push(t);
  }
  const code: number[] = [];
  for (let k = 0; k < nodes.length; k++) {
    const node = nodes[k]!;
    const out = node.outputs[0]!;
    const t = CODE.get(out.dtype);
    const args = node.inputs.map((a) => CODE.get(a.dtype));
    if (t === undefined || args.some((x) => x === undefined)) return null;
    const op = opcode.get(`${functors[k]}|${args.join(",")}|${t}`);
    const r = node.inputs.map((a) => reg.get(a));
    if (op === undefined || r.some((x) => x === undefined)) return null;
    code.push(op, reg.size | ((r[0] ?? 0) << 8) | ((r[1] ?? 0) << 16) | ((r[2] ?? 0) << 24));
    reg.set(out, reg.size);
  }
  for (const o of outputs) {
    const r = reg.get(o);
    if (r === undefined) return null;
    words.push(r, CODE.get(o.dtype)!);
  }
  return [...words, ...code];
}
