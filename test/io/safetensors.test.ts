// safetensors: round trips of every dtype with metadata, the header writer's layout, and hostile
// headers (lengths, offsets, shapes, dtypes, metadata) as tagged errors naming the tensor —
// byte-level and header-level fuzzing on top.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import fc from "fast-check";
import * as mg from "../../ts/index.ts";
import { concat, corruptions, FUZZ_RUNS, type FuzzTally, loadOutcome, rowMajorHex, tempDir } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.remove());

function stFile(header: unknown, data: Uint8Array | number = 0, rawHeader?: string | Uint8Array): Uint8Array {
  const text = rawHeader instanceof Uint8Array ? rawHeader : new TextEncoder().encode(rawHeader ?? JSON.stringify(header));
  const pre = new Uint8Array(8);
  new DataView(pre.buffer).setBigUint64(0, BigInt(text.length), true);
  return concat(pre, text, typeof data === "number" ? new Uint8Array(data) : data);
}

function loadBytes(bytes: Uint8Array, file = tmp.path("x.safetensors")): [Record<string, mg.MgArray>, mg.Metadata] {
  writeFileSync(file, bytes);
  return mg.load(file, null, true);
}

describe("round trips", () => {
  test("every dtype, scalars, empty tensors and non-contiguous inputs; metadata comes back", () => {
    const key = mg.random.key(3);
    const arrays: Record<string, mg.MgArray> = {};
    for (const d of mg.ALL_DTYPES) {
      const v = d === mg.bool_ ? mg.greater(mg.random.normal([3, 4], mg.float32, 0, 1, key), 0) : mg.multiply(mg.random.normal([3, 4], mg.float32, 0, 1, key), 100).astype(d);
      arrays[d.name] = v;
    }
    arrays.scalar = mg.array(2.5);
    arrays.empty = mg.zeros([0, 3], mg.int16);
    arrays.transposed = mg.transpose(mg.arange(6, undefined, undefined, mg.float64).reshape([2, 3]));
    const file = tmp.path("all.safetensors");
    mg.saveSafetensors(file, arrays, { author: "metalgrad", "ünïcode": "✓" });
    const [got, meta] = mg.load(file, null, true);
    expect(meta).toEqual({ author: "metalgrad", "ünïcode": "✓" });
    expect(Object.keys(got)).toEqual(Object.keys(arrays));
    for (const [k, a] of Object.entries(arrays)) {
      expect({ k, dtype: got[k]!.dtype, shape: got[k]!.shape }).toEqual({ k, dtype: a.dtype, shape: a.shape });
      expect({ k, hex: rowMajorHex(got[k]!) }).toEqual({ k, hex: rowMajorHex(a) });
    }
  });
  test("the header: 8-byte aligned, no __metadata__ when there is none, MLX's type names, offsets in key order", () => {
    const file = tmp.path("layout.safetensors");
    mg.saveSafetensors(file, { b: mg.array([1, 2], mg.bfloat16), a: mg.array([true]) });
    const bytes = readFileSync(file);
    const n = Number(bytes.readBigUInt64LE(0));
    expect(n % 8).toBe(0);
    const header = JSON.parse(bytes.subarray(8, 8 + n).toString());
    expect(header).toEqual({ b: { dtype: "BF16", shape: [2], data_offsets: [0, 4] }, a: { dtype: "BOOL", shape: [1], data_offsets: [4, 5] } });
    expect(bytes.length).toBe(8 + n + 5);
  });
  test("argument errors: reserved name, non-string metadata, non-arrays", () => {
    expect(() => mg.saveSafetensors(tmp.path("r"), { __metadata__: mg.array(1) })).toThrow("'__metadata__' is reserved");
    expect(() => mg.saveSafetensors(tmp.path("r"), { a: mg.array(1) }, { k: 1 as unknown as string })).toThrow("[save_safetensors] metadata 'k' must be a string, got number.");
    expect(() => mg.saveSafetensors(tmp.path("r"), { a: [1] as unknown as mg.MgArray })).toThrow("[save_safetensors] 'a' must be an array");
    expect(() => mg.saveSafetensors(tmp.path("r"), [] as unknown as Record<string, mg.MgArray>)).toThrow("arrays must be an object");
  });
  test("a tensor named __proto__ is an ordinary key, not the result's prototype", () => {
    const [got] = loadBytes(stFile(null, new Uint8Array([42]), '{"__proto__":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'));
    expect(Object.hasOwn(got, "__proto__")).toBe(true);
    expect(Object.getPrototypeOf(got)).toBe(Object.prototype);
    const proto = Object.getOwnPropertyDescriptor(got, "__proto__")!.value as mg.MgArray;
    expect(proto.tolist()).toEqual([42]);
    // …and saving it writes it back under that name.
    const file = tmp.path("proto.safetensors");
    mg.saveSafetensors(file, got);
    const [again] = mg.load(file, null, true);
    expect((Object.getOwnPropertyDescriptor(again, "__proto__")!.value as mg.MgArray).tolist()).toEqual([42]);
  });
});

describe("hostile headers are tagged errors naming the tensor", () => {
  const t = (over: Record<string, unknown> = {}) => ({ dtype: "F32", shape: [2], data_offsets: [0, 8], ...over });
  const cases: [string, Uint8Array, string][] = [
    ["fewer than 8 bytes", new Uint8Array(5), "fewer than the 8-byte header length"],
    ["header length past the end", (() => { const b = stFile({ a: t() }, 8); new DataView(b.buffer).setUint32(0, 5000, true); return b; })(), "the header claims 5000 bytes but the file has"],
    ["absurd header length", (() => { const b = stFile({ a: t() }, 8); new DataView(b.buffer).setBigUint64(0, 2n ** 60n, true); return b; })(), "over 2^53"],
    ["header length over the 100 MB limit", (() => { const b = stFile({ a: t() }, 8); new DataView(b.buffer).setBigUint64(0, 200_000_000n, true); return b; })(), "more than the 100000000 allowed"],
    ["not JSON", stFile(null, 0, "{not json}"), "not valid UTF-8 JSON"],
    ["not an object", stFile(null, 0, "[1, 2]"), "does not start with '{'"],
    ["invalid UTF-8", stFile(null, 0, new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])), "not valid UTF-8 JSON"],
    ["entry not an object", stFile({ a: 3 }), "tensor 'a': its entry is not an object"],
    ["unknown dtype", stFile({ a: t({ dtype: "F4" }) }, 8), "tensor 'a': dtype F4 is not supported"],
    ["missing dtype", stFile({ a: t({ dtype: undefined }) }, 8), "tensor 'a': dtype is missing"],
    ["negative dimension", stFile({ a: t({ shape: [-2] }) }, 8), "tensor 'a': shape [-2] is not a list of integers"],
    ["fractional dimension", stFile({ a: t({ shape: [1.5] }) }, 8), "tensor 'a': shape [1.5]"],
    ["dimension over int32", stFile({ a: t({ shape: [2 ** 31] }) }, 8), "in [0, 2^31 - 1]"],
    ["offsets not a pair", stFile({ a: t({ data_offsets: [0] }) }, 8), "tensor 'a': data_offsets [0] is not a pair"],
    ["negative offset", stFile({ a: t({ data_offsets: [-8, 0] }) }, 8), "is not a pair of non-negative integers"],
    ["offsets reversed", stFile({ a: t({ data_offsets: [8, 0] }) }, 8), "tensor 'a': data_offsets [8, 0] lie outside"],
    ["offsets past the data", stFile({ a: t({ data_offsets: [0, 8] }) }, 4), "tensor 'a': data_offsets [0, 8] lie outside the 4 bytes of tensor data"],
    ["huge offsets", stFile({ a: t({ data_offsets: [2 ** 52, 2 ** 52 + 8] }) }, 8), "lie outside"],
    ["shape × dtype ≠ byte length", stFile({ a: t({ shape: [3] }) }, 8), "tensor 'a' (3,) F32 needs 12 bytes but data_offsets [0, 8] hold 8"],
    ["shape far larger than the file", stFile({ a: t({ shape: [2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1] }) }, 8), "needs over 2^53 bytes"],
    ["overlapping tensors", stFile({ a: t(), b: t({ data_offsets: [4, 12] }) }, 12), "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]"],
    ["metadata not an object", stFile({ __metadata__: [1] }), "__metadata__ must be an object of strings"],
    ["metadata value not a string", stFile({ __metadata__: { k: 1 } }), "__metadata__ entry 'k' is 1, not a string"],
  ];
  for (const [what, bytes, message] of cases) {
    test(what, () => {
      const file = tmp.path("bad.safetensors");
      expect(() => loadBytes(bytes, file)).toThrow(`[load] ${file}: `);
      expect(() => loadBytes(bytes, file)).toThrow(message);
    });
  }
  test("holes between tensors and zero-size tensors anywhere are fine (as MLX)", () => {
    const [got] = loadBytes(stFile({ a: { dtype: "U8", shape: [2], data_offsets: [4, 6] }, e: { dtype: "F32", shape: [0], data_offsets: [5, 5] } }, new Uint8Array([9, 9, 9, 9, 1, 2])));
    expect(got.a!.tolist()).toEqual([1, 2]);
    expect(got.e!.shape).toEqual([0]);
  });
  test("every truncation of a valid file is an error", () => {
    const file = tmp.path("full.safetensors");
    mg.saveSafetensors(file, { a: mg.array([1, 2, 3]), b: mg.array([[1.5]]) }, { m: "x" });
    const full = readFileSync(file);
    const cut = tmp.path("cut.safetensors");
    for (let n = 0; n < full.length; n++) {
      writeFileSync(cut, full.subarray(0, n));
      expect(() => mg.load(cut)).toThrow(`[load] ${cut}: `);
    }
  });
});

describe("fuzz", () => {
  test(`${FUZZ_RUNS} byte-level corruptions load or fail with a tagged error`, () => {
    const file = tmp.path("seed.safetensors");
    mg.saveSafetensors(file, { a: mg.array([[1, 2], [3, 4]], mg.float16), b: mg.array([7n]), c: mg.array([true, false, true]) }, { k: "v" });
    const seeds = [new Uint8Array(readFileSync(file))];
    const tally: FuzzTally = { runs: 0, loaded: 0, rejected: 0 };
    const out = tmp.path("fuzz.safetensors");
    fc.assert(fc.property(corruptions(seeds), (bytes) => loadOutcome(out, bytes, "safetensors", tally)), { numRuns: FUZZ_RUNS });
    console.log(`safetensors byte fuzz: ${tally.runs} inputs, ${tally.loaded} loaded, ${tally.rejected} rejected`);
    expect(tally.runs).toBe(FUZZ_RUNS);
  });
  test(`${FUZZ_RUNS} random headers (dtypes, shapes, offsets, metadata) load or fail with a tagged error`, () => {
    const dim = fc.oneof(fc.integer({ min: 0, max: 6 }), fc.constantFrom(-1, 2 ** 31, 2 ** 53, 1.5, 2 ** 31 - 1), fc.constant("2"));
    const entry = fc.record({
      dtype: fc.oneof(fc.constantFrom("F32", "F16", "BF16", "F64", "I8", "U8", "I64", "U64", "BOOL", "C64", "F8_E4M3", "F8_E5M2", "X"), fc.integer()),
      shape: fc.oneof(fc.array(dim, { maxLength: 4 }), fc.constant(null), fc.integer()),
      data_offsets: fc.oneof(fc.tuple(fc.integer({ min: 0, max: 80 }), fc.integer({ min: 0, max: 80 })), fc.array(fc.oneof(fc.integer(), fc.double()), { maxLength: 3 })),
    }, { requiredKeys: [] });
    const header = fc.dictionary(fc.oneof(fc.constantFrom("a", "b", "__metadata__", "__proto__", "constructor"), fc.string({ maxLength: 4 })),
      fc.oneof(entry, fc.dictionary(fc.string({ maxLength: 3 }), fc.oneof(fc.string(), fc.integer())), fc.constant(null)), { maxKeys: 4 });
    const tally: FuzzTally = { runs: 0, loaded: 0, rejected: 0 };
    const out = tmp.path("hfuzz.safetensors");
    fc.assert(fc.property(header, fc.integer({ min: 0, max: 80 }), (h, n) => loadOutcome(out, stFile(h, n), "safetensors", tally)), { numRuns: FUZZ_RUNS });
    console.log(`safetensors header fuzz: ${tally.runs} inputs, ${tally.loaded} loaded, ${tally.rejected} rejected`);
    expect(tally.loaded).toBeGreaterThan(0);
    expect(tally.rejected).toBeGreaterThan(0);
  });
});
