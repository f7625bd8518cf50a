// Small fused regions without a compile of their own: one kernel interprets a
// region as a program (a list of functor calls over registers), so the thousands of distinct
// small chains a test suite fuses stop costing a simulator compile (~60 ms of CPU) each. It calls
// the same functors of elementwise_ops.h on values of the same types, so its results equal the
// generated kernel's bit for bit; the trace names it (kernel mg_fused_program, layout "fused
// general": every input read through its strides). It holds every GPU dtype (bool, the integers,
// half, float, bfloat, complex64); regions it does not cover (functors it lacks, large outputs or
// indices, more buffers or values than it holds) use their generated kernel, as every region does
// with MG_FUSED_PROGRAM=0.
import { bfloat16, bool_, complex64, type Dtype, float16, float32, int16, int32, int64, int8, uint16, uint32, uint64, uint8 } from "../../core/dtype.ts";
import type { MgArray, Node } from "../../core/array.ts";
import { mslType } from "./dtypes.ts";
import { BOOL_BINARY, COMPARISONS, FLOAT_BINARY, FLOAT_UNARY, INT_BINARY, INT_UNARY } from "./functors.ts";
import { kernelSource } from "./kernels.ts";

/** Registers and buffers of the interpreter: inputs come first, then outputs (as in a generated
 *  kernel); with shapes, strides, sizes and the program, Metal's 31 buffer slots. */
export const PROGRAM_REGISTERS = 128;
export const PROGRAM_BUFFERS = 26;
export const PROGRAM_NAME = "mg_fused_program";

/** The value types it holds, by type code (registers hold their bits in a ulong). */
export const PROGRAM_DTYPES: readonly Dtype[] = [float32, int32, bool_, float16, bfloat16, uint8, uint16, uint32, uint64, int8, int16, int64, complex64];
const CODE = new Map<Dtype, number>(PROGRAM_DTYPES.map((d, k) => [d, k]));
const MSL = PROGRAM_DTYPES.map((d) => mslType(d));
const FLOATS = [float32, float16, bfloat16].map((d) => CODE.get(d)!);
const INTEGERS = [int32, uint8, uint16, uint32, uint64, int8, int16, int64].map((d) => CODE.get(d)!);
const BOOL = CODE.get(bool_)!;
const BITS16 = new Set([CODE.get(float16)!, CODE.get(bfloat16)!]);
const COMPLEX = CODE.get(complex64)!;

/** A register's bits as a value of type code t: floats bit for bit (complex: real part in the low
 *  half), integers truncated to their width (they were stored widened), bool as nonzero. */
function load(t: number, r: string): string {
  if (t === BOOL) return `(${r} != 0ul)`;
  if (t === COMPLEX) return `bits_complex(${r})`;
  if (t === CODE.get(float32)) return `as_type<float>(uint(${r}))`;
  if (BITS16.has(t)) return `as_type<${MSL[t]}>(ushort(${r}))`;
  return `${MSL[t]}(${r})`;
}
/** A value of type code t as register bits. */
function store(t: number, v: string): string {
  if (t === BOOL) return `(bool(${v}) ? 1ul : 0ul)`;
  if (t === COMPLEX) return `complex_bits(${v})`;
  if (t === CODE.get(float32)) return `ulong(as_type<uint>(float(${v})))`;
  if (BITS16.has(t)) return `ulong(as_type<ushort>(${MSL[t]}(${v})))`;
  return `ulong(${MSL[t]}(${v}))`;
}

interface Op {
  functor: string;
  args: number[];
  out: number;
}

// Functors no op applies to a type are left out (mg.abs of unsigned integers is the identity;
// of bool only mg.square keeps a node).
const UNSIGNED = new Set([uint8, uint16, uint32, uint64].map((d) => CODE.get(d)!));
const BOOL_UNARY = ["Square"];
// The functors with a complex64 form (elementwise_ops.h)
const COMPLEX_UNARY = ["Abs", "Conjugate", "Cos", "Cosh", "Exp", "Log", "Log10", "Log2", "Negative", "Round", "Rsqrt", "Sign", "Sin", "Sinh",
  "Sqrt", "Square", "Tan", "Tanh"];
const COMPLEX_BINARY = ["Add", "Divide", "LogAddExp", "Maximum", "Minimum", "Multiply", "Power", "Subtract"];

/** Every (functor, argument types, result type) the interpreter runs, in opcode order: per type,
 *  what its single-op families hold (functors.ts), the comparisons, where and astype. The result
 *  type is each functor's own, so a value is stored without conversion. */
const OPS: Op[] = [
  ...FLOATS.flatMap((t) => [
    ...FLOAT_UNARY.map((f) => ({ functor: f, args: [t], out: t })),
    ...FLOAT_BINARY.map((f) => ({ functor: f, args: [t, t], out: t })),
  ]),
  ...INTEGERS.flatMap((t) => [
    ...INT_UNARY.filter((f) => !(f === "Abs" && UNSIGNED.has(t))).map((f) => ({ functor: f, args: [t], out: t })),
    ...INT_BINARY.map((f) => ({ functor: f, args: [t, t], out: t })),
  ]),
  ...COMPLEX_UNARY.map((f) => ({ functor: f, args: [COMPLEX], out: COMPLEX })),
  ...["Real", "Imag"].map((f) => ({ functor: f, args: [COMPLEX], out: CODE.get(float32)! })),
  ...COMPLEX_BINARY.map((f) => ({ functor: f, args: [COMPLEX, COMPLEX], out: COMPLEX })),
  ...BOOL_UNARY.map((f) => ({ functor: f, args: [BOOL], out: BOOL })),
  ...BOOL_BINARY.map((f) => ({ functor: f, args: [BOOL, BOOL], out: BOOL })),
  ...[...FLOATS, ...INTEGERS, COMPLEX].flatMap((t) => [...COMPARISONS, "EqualNan"].map((f) => ({ functor: f, args: [t, t], out: BOOL }))),
  { functor: "LogicalNot", args: [BOOL], out: BOOL }, // (logicalNot casts its operand to bool first)
  ...PROGRAM_DTYPES.map((_, t) => ({ functor: "Select", args: [BOOL, t, t], out: t })),
  ...PROGRAM_DTYPES.flatMap((_, from) => PROGRAM_DTYPES.flatMap((_, to) => (from === to ? [] : [{ functor: `Cast<${MSL[to]}>`, args: [from], out: to }]))),
];
const opcode = new Map(OPS.map((o, k) => [`${o.functor}|${o.args.join(",")}|${o.out}`, k]));

/** What the interpreter runs, one "Functor(argument dtypes)->result dtype" per opcode (tests check
 *  that each is exercised). */
export function programOperations(): string[] {
  return OPS.map((o) => `${o.functor}(${o.args.map((t) => PROGRAM_DTYPES[t]!.name).join(",")})->${PROGRAM_DTYPES[o.out]!.name}`);
}

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
  // Reads and writes by type code: one branch per type
  const loads = PROGRAM_DTYPES.map((_, t) => `      case ${t}: r[k] = ${store(t, `((device const ${MSL[t]}*)p)[loc]`)}; break;`);
  const stores = PROGRAM_DTYPES.map((_, t) => `      case ${t}: ((device ${MSL[t]}*)p)[i] = ${load(t, "v")}; break;`);
  const pick = (prefix: string, n: number) => slots(n - 1, (k) => `k == ${k} ? ${prefix}${k} : `).join("") + `${prefix}${n - 1}`;
  source = `${kernelSource("elementwise_ops.h")}

// A complex64 register: the real part's bits in the low half, the imaginary part's in the high.
MG_FUNC ulong complex_bits(complex64_t z) { return ulong(as_type<uint>(z.real)) | (ulong(as_type<uint>(z.imag)) << 32); }
MG_FUNC complex64_t bits_complex(ulong r) { return make_complex(as_type<float>(uint(r)), as_type<float>(uint(r >> 32))); }

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
    switch (prog[4 + k]) {
${loads.join("\n")}
      default: break;
    }
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
    const uint s = nin + k;
    device uchar* p = ${pick("io", PROGRAM_BUFFERS).replace(/k ==/g, "s ==")};
    switch (prog[5 + nin + 2 * k]) {
${stores.join("\n")}
      default: break;
    }
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
