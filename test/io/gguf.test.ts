// GGUF: round trips of tensors and every metadata kind, the layout the writer produces, and
// hostile files (counts, lengths, types, offsets, dims) as tagged errors — fuzzed at the byte level
// and structurally.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import fc from "fast-check";
import * as mg from "../../ts/index.ts";
import { concat, corruptions, FUZZ_RUNS, type FuzzTally, loadOutcome, rowMajorHex, tempDir } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.remove());

// A little GGUF writer for hostile files (the format is simple enough to spell out here).
const enc = new TextEncoder();
const u32 = (v: number) => new Uint8Array(new Uint32Array([v]).buffer);
const u64 = (v: number | bigint) => new Uint8Array(new BigUint64Array([BigInt(v)]).buffer);
const str = (s: string) => concat(u64(enc.encode(s).length), enc.encode(s));
interface TensorSpec { name: string; ne: (number | bigint)[]; type: number; offset?: number | bigint; data?: Uint8Array }
function ggufFile(tensors: TensorSpec[], kv: Uint8Array[] = [], opts: { version?: number; align?: number; tensorCount?: bigint; kvCount?: bigint } = {}): Uint8Array {
  const align = opts.align ?? 32;
  const parts: Uint8Array[] = [enc.encode("GGUF"), u32(opts.version ?? 3), u64(opts.tensorCount ?? BigInt(tensors.length)), u64(opts.kvCount ?? BigInt(kv.length)), ...kv];
  let offset = 0;
  const datas: Uint8Array[] = [];
  for (const t of tensors) {
    const data = t.data ?? new Uint8Array(0);
    parts.push(str(t.name), u32(t.ne.length), ...t.ne.map(u64), u32(t.type), u64(t.offset ?? offset));
    const padded = Math.ceil(data.length / align) * align;
    datas.push(concat(data, new Uint8Array(padded - data.length)));
    offset += padded;
  }
  const head = concat(...parts);
  return concat(head, new Uint8Array((align - (head.length % align)) % align), ...datas);
}
const kv = (key: string, type: number, value: Uint8Array) => concat(str(key), u32(type), value);
const f32bytes = (...v: number[]) => new Uint8Array(new Float32Array(v).buffer);

function loadBytes(bytes: Uint8Array, file = tmp.path("x.gguf")): [Record<string, mg.MgArray>, mg.Metadata] {
  writeFileSync(file, bytes);
  return mg.load(file, null, true);
}

describe("round trips", () => {
  test("tensors of every GGUF dtype (shape order reversed on disk), scalars, empty and non-contiguous", () => {
    const key = mg.random.key(5);
    const arrays: Record<string, mg.MgArray> = {};
    for (const d of [mg.float32, mg.float16, mg.bfloat16, mg.float64, mg.int8, mg.int16, mg.int32, mg.int64]) {
      arrays[d.name] = mg.multiply(mg.random.normal([2, 3, 5], mg.float32, 0, 1, key), 50).astype(d);
    }
    arrays.scalar = mg.array(1.25);
    arrays.empty = mg.zeros([3, 0]);
    arrays.t = mg.transpose(mg.arange(6, undefined, undefined, mg.float32).reshape([2, 3]));
    const file = tmp.path("rt.gguf");
    mg.saveGguf(file, arrays);
    const [got] = mg.load(file, null, true);
    expect(Object.keys(got)).toEqual(Object.keys(arrays));
    for (const [k, a] of Object.entries(arrays)) {
      expect({ k, dtype: got[k]!.dtype, shape: got[k]!.shape, hex: rowMajorHex(got[k]!) }).toEqual({ k, dtype: a.dtype, shape: a.shape, hex: rowMajorHex(a) });
    }
    // Data is 32-byte aligned and dims are written innermost first.
    const bytes = readFileSync(file);
    const nameAt = bytes.indexOf("float32");
    expect([...bytes.subarray(nameAt + 7, nameAt + 7 + 4 + 24)].filter((_, i) => i % 8 === 4 || i === 0)).toEqual([3, 5, 3, 2]);
  });
  test("metadata of every kind round trips (JS literals by the literal rule)", () => {
    const file = tmp.path("meta.gguf");
    const meta: Record<string, mg.GgufMetadataInput> = {
      name: "model", tokens: ["a", "", "ü"], empty: [], i: 7, f: 0.5, big: 2 ** 40, b: true, n: -3n,
      u8: mg.array([1, 255], mg.uint8), i64: mg.array(-5n), f64: mg.array([0.1], mg.float64), flags: mg.array([true, false]),
      u16s: mg.array(60000, mg.uint16), u64: mg.array([2n ** 63n], mg.uint64), f32: mg.array(1.5),
    };
    mg.saveGguf(file, { w: mg.ones([2]) }, meta);
    const [, got] = mg.load(file, null, true);
    expect(got.name).toBe("model");
    expect(got.tokens).toEqual(["a", "", "ü"]);
    expect(got.empty).toEqual([]);
    const arr = (k: string) => got[k] as mg.MgArray;
    expect([arr("i").dtype, arr("i").shape, arr("i").item()]).toEqual([mg.int32, [], 7]);
    expect([arr("f").dtype, arr("f").item()]).toEqual([mg.float32, 0.5]);
    expect([arr("big").dtype, arr("big").item()]).toEqual([mg.float32, 2 ** 40]);
    expect([arr("b").dtype, arr("b").item()]).toEqual([mg.bool_, true]);
    expect([arr("n").dtype, arr("n").item()]).toEqual([mg.int64, -3n]);
    for (const k of ["u8", "i64", "f64", "flags", "u16s", "u64", "f32"]) {
      const want = meta[k] as mg.MgArray;
      expect({ k, dtype: arr(k).dtype, shape: arr(k).shape, v: arr(k).tolist() }).toEqual({ k, dtype: want.dtype, shape: want.shape, v: want.tolist() });
    }
  });
  test("save errors match MLX's rules and write nothing", () => {
    const file = tmp.path("no.gguf");
    expect(() => mg.saveGguf(file, { a: mg.array([1], mg.uint8) })).toThrow("[save_gguf] dtype uint8 of 'a' is not supported");
    expect(() => mg.saveGguf(file, { a: mg.array([1]) }, { m: mg.ones([2, 2]) })).toThrow("more than one dimension cannot be saved");
    expect(() => mg.saveGguf(file, { a: mg.array([1]) }, { m: mg.array([1], mg.float16) })).toThrow("dtype float16 cannot be stored in GGUF metadata");
    expect(() => mg.saveGguf(file, { a: mg.array([1]) }, { m: ["a", 1] as unknown as string[] })).toThrow("a list must hold only strings");
    expect(() => mg.saveGguf(file, { a: mg.array([1]) }, { m: {} as unknown as string })).toThrow("metadata 'm' must be an array, a string");
    expect(Bun.file(file).size).toBe(0);
  });
  test("quantized tensors: MLX's names (.weight → .scales/.biases) and shapes; a clash is an error", () => {
    const block = concat(new Uint8Array(new Float16Array([0.5]).buffer), new Uint8Array(16).fill(0x21)); // Q4_0: d = 0.5, nibbles 1 (low) and 2 (high)
    const [got] = loadBytes(ggufFile([{ name: "l.weight", ne: [32, 2], type: 2, data: concat(block, block) }]));
    expect(Object.keys(got).sort()).toEqual(["l.biases", "l.scales", "l.weight"]);
    expect(got["l.weight"]!.shape).toEqual([2, 4]);
    expect(got["l.weight"]!.index(0).tolist()).toEqual([0x11111111, 0x11111111, 0x22222222, 0x22222222]);
    expect(got["l.scales"]!.tolist()).toEqual([[0.5], [0.5]]);
    expect(got["l.biases"]!.tolist()).toEqual([[-4], [-4]]);
    expect(() => loadBytes(ggufFile([{ name: "l.weight", ne: [32], type: 2, data: block }, { name: "l.scales", ne: [1], type: 0, data: f32bytes(1) }])))
      .toThrow("tensor 'l.scales' collides with a quantized tensor's scales or biases");
    expect(() => loadBytes(ggufFile([{ name: "l.scales", ne: [1], type: 0, data: f32bytes(1) }, { name: "l.weight", ne: [32], type: 2, data: block }])))
      .toThrow("its l.scales would replace the tensor of that name");
  });
});

describe("hostile files are tagged errors naming the tensor or key", () => {
  const ok = { name: "t", ne: [2], type: 0, data: f32bytes(1, 2) };
  const cases: [string, Uint8Array, string][] = [
    ["too short", enc.encode("GG"), "not a GGUF file"],
    ["wrong magic", concat(enc.encode("GGUX"), new Uint8Array(20)), "the magic 'GGUF' is missing"],
    ["big-endian", ggufFile([ok], [], { version: 0x03000000 }), "big-endian GGUF files are not supported"],
    ["version 1", ggufFile([ok], [], { version: 1 }), "GGUF version 1 is not supported"],
    ["absurd tensor count", ggufFile([ok], [], { tensorCount: 2n ** 40n }), "cannot fit in a"],
    ["u64 count beyond 2^53", ggufFile([ok], [], { kvCount: 2n ** 63n }), "beyond any file"],
    ["string length past the end", ggufFile([ok], [concat(u64(1 << 30), enc.encode("k"))], {}), "past the end of the file"],
    ["unknown value type", ggufFile([ok], [kv("k", 13, u32(0))]), "metadata 'k': unknown value type 13"],
    ["nested arrays", ggufFile([ok], [kv("k", 9, concat(u32(9), u64(1), u32(5), u64(1), u32(1)))]), "arrays of arrays are not supported"],
    ["array count past the end", ggufFile([ok], [kv("k", 9, concat(u32(5), u64(1 << 30)))]), "1073741824 elements do not fit"],
    ["string array count past the end", ggufFile([ok], [kv("k", 9, concat(u32(8), u64(1 << 30)))]), "strings do not fit"],
    ["unknown array element type", ggufFile([ok], [kv("k", 9, concat(u32(77), u64(1)))]), "unknown array element type 77"],
    ["duplicate key", ggufFile([ok], [kv("k", 5, u32(1)), kv("k", 5, u32(2))]), "metadata 'k' appears twice"],
    ["alignment not a power of two", ggufFile([ok], [kv("general.alignment", 4, u32(24))]), "general.alignment 24 is not a power of two"],
    ["alignment of the wrong type", ggufFile([ok], [kv("general.alignment", 5, u32(32))]), "must be a uint32"],
    ["duplicate tensor", ggufFile([ok, { ...ok, offset: 32 }]), "tensor 't' appears twice"],
    ["too many dims", ggufFile([{ name: "t", ne: new Array(40).fill(1), type: 0 }]), "has 40 dimensions"],
    ["dim over int32", ggufFile([{ name: "t", ne: [2 ** 31], type: 0 }]), "dimension 2147483648 exceeds 2^31 - 1"],
    ["unsupported quantization", ggufFile([{ name: "t", ne: [256], type: 13, data: new Uint8Array(176) }]), "tensor 't' (256,) Q5_K: Q5_K is not supported"],
    ["unknown type", ggufFile([{ name: "t", ne: [1], type: 99, data: new Uint8Array(4) }]), "type 99 is not supported"],
    ["data past the end", ggufFile([{ name: "t", ne: [16], type: 0, data: f32bytes(1, 2) }]), "tensor 't' (16,) F32: its 64 bytes at offset"],
    ["offset past the end", ggufFile([{ ...ok, offset: 2n ** 40n }]), "extend past the end of the file"],
    ["block not dividing the row", ggufFile([{ name: "q", ne: [48], type: 8, data: new Uint8Array(34 * 2) }]), "innermost dimension 48 is not a multiple of the Q8_0 block (32)"],
    ["overlapping tensors", ggufFile([{ name: "a", ne: [8], type: 0, data: new Uint8Array(32) }, { name: "b", ne: [4], type: 0, offset: 16 }]), "tensor 'b' at offset"],
    ["shape far beyond the file", ggufFile([{ name: "t", ne: [2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1], type: 0 }]), "more elements than the file could hold"],
  ];
  for (const [what, bytes, message] of cases) {
    test(what, () => {
      const file = tmp.path("bad.gguf");
      expect(() => loadBytes(bytes, file)).toThrow(`[load] ${file}: `);
      expect(() => loadBytes(bytes, file)).toThrow(message);
    });
  }
  test("every truncation of a valid file is an error", () => {
    const file = tmp.path("full.gguf");
    mg.saveGguf(file, { a: mg.array([1, 2, 3]), b: mg.array([[0.5]], mg.float16) }, { s: "x", v: mg.array([1, 2]) });
    const full = readFileSync(file);
    const cut = tmp.path("cut.gguf");
    for (let n = 0; n < full.length; n++) {
      // The padding after the last tensor is not data: cuts inside it still load.
      writeFileSync(cut, full.subarray(0, n));
      let failed = false;
      try {
        mg.load(cut);
      } catch (e) {
        expect((e as Error).message).toStartWith(`[load] ${cut}: `);
        failed = true;
      }
      expect({ n, failed }).toEqual({ n, failed: n < full.length - 30 });
    }
  });
});

describe("fuzz", () => {
  test(`${FUZZ_RUNS} byte-level corruptions load or fail with a tagged error`, () => {
    const file = tmp.path("seed.gguf");
    mg.saveGguf(file, { a: mg.array([[1, 2], [3, 4]], mg.float16), b: mg.array([7], mg.int32) }, { s: "v", arr: ["x", "yz"], n: mg.array([1, 2, 3]) });
    const q = ggufFile([{ name: "w.weight", ne: [32, 2], type: 2, data: new Uint8Array(36).fill(0x35) }, { name: "k", ne: [256], type: 12, data: new Uint8Array(144).fill(0x11) }]);
    const seeds = [new Uint8Array(readFileSync(file)), q];
    const tally: FuzzTally = { runs: 0, loaded: 0, rejected: 0 };
    const out = tmp.path("fuzz.gguf");
    // A K-quant dequantized to float16 is 256·2/144 ≈ 3.6× its bytes; Q2_K 256·2/84 ≈ 6.1×.
    fc.assert(fc.property(corruptions(seeds), (bytes) => loadOutcome(out, bytes, "gguf", tally, 7)), { numRuns: FUZZ_RUNS });
    console.log(`gguf byte fuzz: ${tally.runs} inputs, ${tally.loaded} loaded, ${tally.rejected} rejected`);
    expect(tally.runs).toBe(FUZZ_RUNS);
  });
  test(`${FUZZ_RUNS} random structures (types, dims, offsets, key-values) load or fail with a tagged error`, () => {
    const tensor = fc.record({
      name: fc.constantFrom("a", "b", "a.weight", "a.scales", "__proto__"),
      ne: fc.array(fc.oneof(fc.integer({ min: 0, max: 300 }), fc.constantFrom(32, 256, 2 ** 31, 2 ** 40)), { maxLength: 3 }),
      type: fc.oneof(fc.constantFrom(0, 1, 2, 3, 8, 10, 12, 14, 24, 25, 26, 27, 28, 30, 13), fc.integer({ min: 0, max: 64 })),
      offset: fc.oneof(fc.constant(undefined), fc.integer({ min: 0, max: 600 })),
      data: fc.uint8Array({ maxLength: 600 }),
    });
    const value = fc.oneof(
      fc.tuple(fc.integer({ min: 0, max: 12 }), fc.uint8Array({ maxLength: 16 })).map(([t, b]) => concat(u32(t), b)),
      fc.tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 5 }), fc.uint8Array({ maxLength: 40 })).map(([t, n, b]) => concat(u32(9), u32(t), u64(n), b)),
    );
    const kvs = fc.array(fc.tuple(fc.constantFrom("k", "general.alignment", "x"), value).map(([k, v]) => concat(str(k), v)), { maxLength: 3 });
    const tally: FuzzTally = { runs: 0, loaded: 0, rejected: 0 };
    const out = tmp.path("sfuzz.gguf");
    fc.assert(fc.property(fc.array(tensor, { maxLength: 3 }), kvs, (ts, k) => loadOutcome(out, ggufFile(ts, k), "gguf", tally, 7)), { numRuns: FUZZ_RUNS });
    console.log(`gguf structure fuzz: ${tally.runs} inputs, ${tally.loaded} loaded, ${tally.rejected} rejected`);
    expect(tally.loaded).toBeGreaterThan(0);
    expect(tally.rejected).toBeGreaterThan(0);
  });
});
