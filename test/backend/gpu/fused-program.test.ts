// The fused-region interpreter (ts/backend/gpu/fused-program.ts): small regions of every real
// dtype run as programs of one kernel, with the bits of each region's generated kernel.
import { afterEach, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray, Node } from "../../../ts/core/array.ts";
import type { Dtype } from "../../../ts/core/dtype.ts";
import { functorOf } from "../../../ts/backend/gpu/elementwise.ts";
import { PROGRAM_DTYPES, PROGRAM_NAME, PROGRAM_REGISTERS, programOperations } from "../../../ts/backend/gpu/fused-program.ts";

const previous = process.env.MG_FUSED_PROGRAM;
afterEach(() => {
  if (previous === undefined) delete process.env.MG_FUSED_PROGRAM;
  else process.env.MG_FUSED_PROGRAM = previous;
});

// Floats: zeros, signs, values that round, denormals (of float32; of float16 6e-8, of bfloat16
// 1e-40), values past float16's range (1e30: inf there), infinities, NaN.
const F = [0, -0, 1, -1, 0.5, -2.5, 3.75, 1e-40, 1e30, -1e30, Infinity, -Infinity, NaN, 88.5, -90, 0.3, 6e-8, 65504, -65520, 1e-5];
// Integers (wrapped to each type's width by its typed array): each width's extremes, shift counts
// at and past the width, zero and -1 divisors.
const I = [0, 1, -1, 7, -7, 2147483647, -2147483648, 31, 32, 33, -5, 100, 3, 2, -3, 12, 127, -128, 255, 65535];
const J = [3, 2, -2, 5, 0, 1, 31, 33, -1, 7, 2, 40, -3, 1, 4, 9, 8, 16, -1, 64];
const I64 = [0n, 1n, -1n, 7n, -7n, 9223372036854775807n, -9223372036854775808n, 63n, 64n, 65n, -5n, 100n, 3n, 2n, -3n, 2147483648n, 4294967296n, -4294967297n, 255n, 12n];
const J64 = [3n, 2n, -2n, 5n, 0n, 1n, 63n, 65n, -1n, 7n, 2n, 40n, -3n, 1n, 4n, 9n, 32n, 16n, -1n, 64n];
const BOOLS = [true, false, true, false, true, true, false, false, true, false, true, false, false, true, true, false, true, false, true, false];

const FLOATS = [mg.float32, mg.float16, mg.bfloat16];
const INTS = [mg.int8, mg.int16, mg.int32, mg.int64, mg.uint8, mg.uint16, mg.uint32, mg.uint64];
const complex = (re: readonly number[], im: readonly number[]) => mg.array(re.map((r, k) => ({ re: r, im: im[k]! })));

function intArray(d: Dtype, values: readonly number[], wide: readonly bigint[]): MgArray {
  switch (d) {
    case mg.int8: return mg.array(Int8Array.from(values));
    case mg.int16: return mg.array(Int16Array.from(values));
    case mg.int32: return mg.array(Int32Array.from(values));
    case mg.uint8: return mg.array(Uint8Array.from(values));
    case mg.uint16: return mg.array(Uint16Array.from(values));
    case mg.uint32: return mg.array(Uint32Array.from(values.map((v) => v >>> 0)));
    case mg.int64: return mg.array(BigInt64Array.from(wide));
    default: return mg.array(BigUint64Array.from(wide.map((v) => BigInt.asUintN(64, v))));
  }
}

/** Two operands (and one in (-1, 1) mostly, for the inverse trigonometric functions) of dtype d. */
function operands(d: Dtype): [MgArray, MgArray, MgArray] {
  if (d === mg.bool_) return [mg.array(BOOLS), mg.array([...BOOLS].reverse()), mg.array(BOOLS.map((b, k) => b !== k % 3 > 0))];
  if (d === mg.complex64) {
    // parts from F paired with F reversed and rotated: NaN, infinities and zeros meet every kind
    const rot = [...F.slice(7), ...F.slice(0, 7)];
    const small = F.map((v) => (Number.isFinite(v) ? v * 1e-3 : v));
    return [complex(F, [...F].reverse()), complex([...F].reverse(), rot), complex(small, rot)];
  }
  if (FLOATS.includes(d)) {
    const small = F.map((v) => (Number.isFinite(v) ? v / 1e30 + v * 1e-3 : v));
    return [mg.array(F, d), mg.array([...F].reverse(), d), mg.array(small, d)];
  }
  return [intArray(d, I, I64), intArray(d, J, J64), intArray(d, [...I].reverse(), [...I64].reverse())];
}

/** Two ops that give back their operand, in dtype d: a chain to fuse with. */
function twice(z: MgArray): MgArray {
  if (z.dtype === mg.bool_) return mg.logicalNot(mg.logicalNot(z));
  if (FLOATS.includes(z.dtype) || z.dtype === mg.complex64) return mg.negative(mg.negative(z));
  return mg.bitwiseInvert(mg.bitwiseInvert(z));
}

const floatUnary = [mg.abs, mg.arccos, mg.arccosh, mg.arcsin, mg.arcsinh, mg.arctan, mg.arctanh, mg.ceil, mg.cos, mg.cosh, mg.erf,
  mg.erfinv, mg.exp, mg.expm1, mg.floor, mg.log, mg.log10, mg.log1p, mg.log2, mg.negative, mg.round, mg.rsqrt, mg.sigmoid, mg.sign,
  mg.sin, mg.sinh, mg.sqrt, mg.square, mg.tan, mg.tanh];
const floatBinary = [mg.add, mg.arctan2, mg.divide, mg.logaddexp, mg.maximum, mg.minimum, mg.multiply, mg.power, mg.remainder, mg.subtract];
const intUnary = [mg.abs, mg.bitwiseInvert, mg.negative, mg.sign, mg.square];
const intBinary = [mg.add, mg.bitwiseAnd, mg.bitwiseOr, mg.bitwiseXor, mg.floorDivide, mg.leftShift, mg.maximum, mg.minimum, mg.multiply,
  mg.power, mg.remainder, mg.rightShift, mg.subtract];
const boolUnary = [mg.square];
const boolBinary = [mg.add, mg.bitwiseAnd, mg.bitwiseOr, mg.bitwiseXor, mg.equal, mg.floorDivide, mg.greater, mg.greaterEqual, mg.less,
  mg.lessEqual, mg.logicalAnd, mg.logicalOr, mg.maximum, mg.minimum, mg.multiply, mg.notEqual, mg.power, mg.remainder, mg.subtract];
const complexUnary = [mg.abs, mg.conjugate, mg.cos, mg.cosh, mg.exp, mg.log, mg.log10, mg.log2, mg.negative, mg.round, mg.rsqrt, mg.sign,
  mg.sin, mg.sinh, mg.sqrt, mg.square, mg.tan, mg.tanh, mg.real, mg.imag];
const complexBinary = [mg.add, mg.divide, mg.logaddexp, mg.maximum, mg.minimum, mg.multiply, mg.power, mg.subtract];
const compare = [mg.equal, mg.notEqual, mg.greater, mg.greaterEqual, mg.less, mg.lessEqual];

/** Regions over every operation the interpreter runs, each output a chain of two or more ops (so
 *  it fuses), per dtype: its functions, comparisons, where, and astype to every other dtype. */
function regions(dtypes: readonly Dtype[]): MgArray[] {
  const out: MgArray[] = [];
  const [m] = operands(mg.bool_);
  for (const d of dtypes) {
    const [x, y, s] = operands(d);
    if (d === mg.bool_) {
      out.push(...boolUnary.map((f) => twice(f(twice(x)))), ...boolBinary.map((f) => twice(f(twice(x), y))));
    } else if (d === mg.complex64) {
      out.push(...complexUnary.map((f) => twice(f(twice(x)))), ...complexBinary.map((f) => twice(f(x, y))));
    } else if (FLOATS.includes(d)) {
      out.push(...floatUnary.flatMap((f) => [twice(f(x)), twice(f(s))]), ...floatBinary.map((f) => twice(f(x, y))));
    } else {
      out.push(...intUnary.map((f) => twice(f(x))), ...intBinary.map((f) => twice(f(x, y))));
    }
    if (d !== mg.bool_) {
      out.push(...compare.map((f) => twice(f(twice(x), y))));
      // EqualNan: isclose's equal_nan test next to its tolerance test (integers too: isclose keeps them)
      out.push(twice(mg.isclose(x, s, 1e-5, 1e-8, { equalNan: true })));
    }
    out.push(twice(mg.where(m, twice(x), y)));
    for (const to of PROGRAM_DTYPES) if (to !== d) out.push(twice(mg.astype(twice(x), to)));
  }
  return out;
}

const bytes = (a: MgArray) => {
  const d = a.dataSync() as unknown as ArrayBufferView;
  return Array.from(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
};

/** Every "Functor(argument dtypes)->result dtype" the pending graph of `outputs` runs. */
function operations(outputs: readonly MgArray[]): Set<string> {
  const seen = new Set<Node>();
  const ops = new Set<string>();
  const visit = (a: MgArray) => {
    const node = a.node;
    if (!node || seen.has(node)) return;
    seen.add(node);
    node.inputs.forEach(visit);
    let functor: string;
    try {
      functor = functorOf(node);
    } catch {
      return; // not elementwise
    }
    ops.add(`${functor}(${node.inputs.map((i) => i.dtype.name).join(",")})->${node.outputs[0]!.dtype.name}`);
  };
  outputs.forEach(visit);
  return ops;
}

/** Runs the regions of `dtypes` on the interpreter and on their generated kernels
 *  (MG_FUSED_PROGRAM=0) and compares every output byte for byte. */
function compareWithGenerated(dtypes: readonly Dtype[]): Set<string> {
  let interpreted: MgArray[] = [];
  let ops = new Set<string>();
  const records = mg.trace(() => {
    interpreted = mg.stream(mg.gpu, () => regions(dtypes));
    ops = operations(interpreted);
    mg.eval(...interpreted);
  }).filter((r) => r.device === "gpu");
  expect(records.length).toBeGreaterThan(0);
  expect(records.filter((r) => !(r.kernel === PROGRAM_NAME && r.layout === "fused general")).map((r) => [r.kernel, r.layout, r.primitives.join(" ")])).toEqual([]);
  process.env.MG_FUSED_PROGRAM = "0";
  let generated: MgArray[] = [];
  const compiled = mg.trace(() => {
    generated = mg.stream(mg.gpu, () => regions(dtypes));
    mg.eval(...generated);
  }).filter((r) => r.device === "gpu");
  delete process.env.MG_FUSED_PROGRAM;
  expect(compiled.every((r) => r.kernel.startsWith("mg_fused_") && r.kernel !== PROGRAM_NAME)).toBe(true);
  expect(compiled.map((r) => r.primitives)).toEqual(records.map((r) => r.primitives));
  interpreted.forEach((a, k) => expect(bytes(a), `region ${k} (${a.dtype.name})`).toEqual(bytes(generated[k]!)));
  return ops;
}

const exercised = new Set<string>();

test("float32, int32 and bool regions give the generated kernels' bits, in one interpreted kernel", () => {
  for (const op of compareWithGenerated([mg.float32, mg.int32, mg.bool_])) exercised.add(op);
});

test("float16 and bfloat16 regions give the generated kernels' bits", () => {
  for (const op of compareWithGenerated([mg.float16, mg.bfloat16])) exercised.add(op);
});

test("8-, 16- and 64-bit and unsigned integer regions give the generated kernels' bits", () => {
  for (const op of compareWithGenerated([mg.int8, mg.int16, mg.int64, mg.uint8, mg.uint16, mg.uint32, mg.uint64])) exercised.add(op);
});

test("complex64 regions give the generated kernels' bits", () => {
  for (const op of compareWithGenerated([mg.complex64])) exercised.add(op);
});

test("the tests above run every operation the interpreter holds", () => {
  expect(programOperations().filter((op) => !exercised.has(op))).toEqual([]);
});

test("regions it does not hold run their generated kernel: large outputs, more values than its registers", () => {
  const big = mg.reshape(mg.arange(0, 5000, 1, mg.float32), [50, 100]);
  const long = (z: MgArray) => {
    for (let k = 0; k < PROGRAM_REGISTERS; k++) z = mg.negative(z);
    return z;
  };
  const records = mg.trace(() => mg.eval(mg.stream(mg.gpu, () => [mg.exp(mg.multiply(big, 1e-3)), long(mg.array([0.5, -2]))]))).filter((r) => r.device === "gpu");
  expect(records.map((r) => r.layout)).toEqual(["fused contiguous", "fused general"]);
  expect(records.every((r) => r.kernel.startsWith("mg_fused_") && r.kernel !== PROGRAM_NAME)).toBe(true);
});
