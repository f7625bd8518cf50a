// The fused-region interpreter (ts/backend/gpu/fused-program.ts): small float32/int32/bool regions
// run as programs of one kernel, with the bits of each region's generated kernel.
import { afterEach, expect, test } from "bun:test";
import * as mg from "../../../ts/index.ts";
import type { MgArray } from "../../../ts/core/array.ts";
import { PROGRAM_NAME } from "../../../ts/backend/gpu/fused-program.ts";

const previous = process.env.MG_FUSED_PROGRAM;
afterEach(() => {
  if (previous === undefined) delete process.env.MG_FUSED_PROGRAM;
  else process.env.MG_FUSED_PROGRAM = previous;
});

const F = [0, -0, 1, -1, 0.5, -2.5, 3.75, 1e-40, 1e30, -1e30, Infinity, -Infinity, NaN, 88.5, -90, 0.3];
const I = [0, 1, -1, 7, -7, 2147483647, -2147483648, 31, 32, 33, -5, 100, 3, 2, -3, 12];
const J = [3, 2, -2, 5, 0, 1, 31, 33, -1, 7, 2, 40, -3, 1, 4, 9];

/** Regions over every kind of operation the interpreter runs (each output a chain of two or more
 *  ops, so it fuses), on zeros, signs, denormals, infinities, NaN and int32's extremes. */
function regions(): MgArray[] {
  const x = mg.array(F, mg.float32);
  const y = mg.array([...F].reverse(), mg.float32);
  const i = mg.array(I, mg.int32);
  const j = mg.array(J, mg.int32);
  const small = mg.array(F.map((v) => (Number.isFinite(v) ? v / 1e30 + v * 1e-3 : v)), mg.float32); // inside (-1, 1) mostly
  const f2 = (z: MgArray) => mg.negative(mg.negative(z));
  const i2 = (z: MgArray) => mg.bitwiseInvert(mg.bitwiseInvert(z));
  const b2 = (z: MgArray) => mg.logicalNot(mg.logicalNot(z));
  const m = mg.greater(x, y);
  const floatUnary = [mg.abs, mg.arccos, mg.arccosh, mg.arcsin, mg.arcsinh, mg.arctan, mg.arctanh, mg.ceil, mg.cos, mg.cosh, mg.erf,
    mg.erfinv, mg.exp, mg.expm1, mg.floor, mg.log, mg.log10, mg.log1p, mg.log2, mg.negative, mg.round, mg.rsqrt, mg.sigmoid, mg.sign,
    mg.sin, mg.sinh, mg.sqrt, mg.square, mg.tan, mg.tanh];
  const floatBinary = [mg.add, mg.arctan2, mg.divide, mg.logaddexp, mg.maximum, mg.minimum, mg.multiply, mg.power, mg.remainder, mg.subtract];
  const intBinary = [mg.add, mg.bitwiseAnd, mg.bitwiseOr, mg.bitwiseXor, mg.floorDivide, mg.leftShift, mg.maximum, mg.minimum, mg.multiply,
    mg.power, mg.remainder, mg.rightShift, mg.subtract];
  const compare = [mg.equal, mg.notEqual, mg.greater, mg.greaterEqual, mg.less, mg.lessEqual];
  return [
    ...floatUnary.flatMap((f) => [f2(f(x)), f2(f(small))]),
    ...[mg.abs, mg.bitwiseInvert, mg.negative, mg.sign, mg.square].map((f) => i2(f(i))),
    ...floatBinary.map((f) => f2(f(x, y))),
    ...intBinary.map((f) => i2(f(i, j))),
    ...compare.flatMap((f) => [b2(f(x, y)), b2(f(i, j))]),
    ...[mg.logicalAnd, mg.logicalOr, mg.equal, mg.notEqual].map((f) => b2(f(m, mg.less(i, j)))),
    b2(mg.logicalNot(mg.less(i, 0))),
    f2(mg.where(m, x, y)), i2(mg.where(m, i, j)), b2(mg.where(m, mg.less(i, 0), mg.less(j, 0))),
    f2(mg.astype(mg.multiply(i, j), mg.float32)), i2(mg.astype(f2(x), mg.int32)), i2(mg.astype(mg.less(x, 1), mg.int32)),
    f2(mg.astype(mg.greater(i, j), mg.float32)), b2(mg.astype(f2(x), mg.bool_)), b2(mg.astype(i2(i), mg.bool_)),
  ];
}

const bytes = (a: MgArray) => {
  const d = a.dataSync() as unknown as ArrayBufferView;
  return Array.from(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
};

test("every kind of operation gives the generated kernels' bits, in one interpreted kernel", () => {
  let interpreted: MgArray[] = [];
  const records = mg.trace(() => {
    interpreted = mg.stream(mg.gpu, regions);
    mg.eval(...interpreted);
  }).filter((r) => r.device === "gpu");
  expect(records.length).toBeGreaterThan(0);
  expect(records.filter((r) => !(r.kernel === PROGRAM_NAME && r.layout === "fused general")).map((r) => [r.kernel, r.layout, r.primitives.join(" ")])).toEqual([]);
  process.env.MG_FUSED_PROGRAM = "0";
  let generated: MgArray[] = [];
  const compiled = mg.trace(() => {
    generated = mg.stream(mg.gpu, regions);
    mg.eval(...generated);
  }).filter((r) => r.device === "gpu");
  expect(compiled.every((r) => r.kernel.startsWith("mg_fused_") && r.kernel !== PROGRAM_NAME)).toBe(true);
  expect(compiled.map((r) => r.primitives)).toEqual(records.map((r) => r.primitives));
  interpreted.forEach((a, k) => expect(bytes(a), `region ${k}`).toEqual(bytes(generated[k]!)));
});

test("regions it does not hold run their generated kernel: large outputs, other dtypes", () => {
  const big = mg.reshape(mg.arange(0, 5000, 1, mg.float32), [50, 100]);
  const half = mg.array([0.5, 1.5, -2], mg.float16);
  const records = mg.trace(() => mg.eval(mg.stream(mg.gpu, () => [mg.exp(mg.multiply(big, 1e-3)), mg.exp(mg.multiply(half, 2))]))).filter((r) => r.device === "gpu");
  expect(records.map((r) => r.layout)).toEqual(["fused contiguous", "fused general"]);
  expect(records.every((r) => r.kernel.startsWith("mg_fused_") && r.kernel !== PROGRAM_NAME)).toBe(true);
});
