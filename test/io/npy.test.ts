// .npy: header writing as numpy does it, parsing (versions, byte orders, Fortran order), and every
// kind of malformed or truncated file as a tagged error — including a fuzzed stream of them.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import fc from "fast-check";
import * as mg from "../../ts/index.ts";
import { npyHeader, parseHeaderDict, swapBytes } from "../../ts/io/npy.ts";
import { corruptions, FUZZ_RUNS, type FuzzTally, loadOutcome, tempDir } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.remove());

/** A .npy file from a header dict text and data bytes (version 1.0, padded as numpy pads). */
function npyFile(dict: string, data: Uint8Array | number[] = [], version = 1): Uint8Array {
  const pre = version === 1 ? 10 : 12;
  const total = Math.ceil((pre + dict.length + 1) / 64) * 64;
  const out = new Uint8Array(total + data.length);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, version, 0]);
  const view = new DataView(out.buffer);
  if (version === 1) view.setUint16(8, total - pre, true);
  else view.setUint32(8, total - pre, true);
  out.set(new TextEncoder().encode(dict.padEnd(total - pre - 1, " ") + "\n"), pre);
  out.set(data, total);
  return out;
}

function loadBytes(bytes: Uint8Array, name = "x.npy"): mg.MgArray {
  const file = tmp.path(name);
  writeFileSync(file, bytes);
  return mg.load(file) as mg.MgArray;
}

describe("writing", () => {
  test("headers are numpy's: descr, fortran_order, shape tuple, 64-byte aligned, newline-terminated", () => {
    const text = (h: Uint8Array) => new TextDecoder().decode(h.subarray(10));
    const h = npyHeader(mg.float32, [2, 3], false);
    expect(h.length % 64).toBe(0);
    expect(text(h)).toStartWith("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    expect(text(h)).toEndWith(" \n");
    expect(text(npyHeader(mg.bool_, [3], false))).toStartWith("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }");
    expect(text(npyHeader(mg.bfloat16, [], true))).toStartWith("{'descr': '<V2', 'fortran_order': True, 'shape': (), }");
    expect(text(npyHeader(mg.int8, [0, 4], false))).toContain("'|i1'");
    expect(text(npyHeader(mg.complex64, [1], false))).toContain("'<c8'");
  });
  test("a header over 64 KiB switches to version 2.0", () => {
    const shape = new Array(25000).fill(1);
    const h = npyHeader(mg.float32, shape, false);
    expect(h[6]).toBe(2);
    expect(new DataView(h.buffer).getUint32(8, true)).toBe(h.length - 12);
    expect((loadBytes(new Uint8Array([...h, 0, 0, 128, 63])).reshape([1]).tolist())).toEqual([1]);
  });
});

describe("reading", () => {
  test("big-endian data is byte-swapped for every width (2, 4, 8 and complex as two floats)", () => {
    const be = (descr: string, bytes: number[]) => loadBytes(npyFile(`{'descr': '${descr}', 'fortran_order': False, 'shape': (1,), }`, bytes));
    expect(be(">i2", [0x01, 0x02]).tolist()).toEqual([0x0102]);
    expect(be(">u4", [0x01, 0x02, 0x03, 0x04]).tolist()).toEqual([0x01020304]);
    expect(be(">f4", [0x3f, 0xc0, 0, 0]).tolist()).toEqual([1.5]);
    expect(be(">i8", [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]).tolist()).toEqual([-2n]);
    expect(be(">f8", [0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18]).tolist()).toEqual([Math.PI]);
    expect(be(">c8", [0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0]).tolist()).toEqual([{ re: 1, im: -2 }]);
    expect(be(">f2", [0x3c, 0x00]).tolist()).toEqual([1]);
    expect(be("=f4", [0, 0, 0xc0, 0x3f]).tolist()).toEqual([1.5]);
    expect(be("|u1", [7]).tolist()).toEqual([7]);
  });
  test("swapBytes on unaligned views swaps byte by byte", () => {
    const b = new Uint8Array([9, 1, 2, 3, 4, 5, 6, 7, 8]);
    swapBytes(b.subarray(1), 4);
    expect([...b]).toEqual([9, 4, 3, 2, 1, 8, 7, 6, 5]);
  });
  test("Fortran order gives a column-major view of the data, not a copy", () => {
    const data = new Float32Array([1, 2, 3, 4, 5, 6]); // column-major (2, 3): [[1, 3, 5], [2, 4, 6]]
    const a = loadBytes(npyFile("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", new Uint8Array(data.buffer)));
    expect(a.tolist()).toEqual([[1, 3, 5], [2, 4, 6]]);
    expect(a.layout!.strides).toEqual([1, 2]);
    expect(mg.add(a, 1).tolist()).toEqual([[2, 4, 6], [3, 5, 7]]);
  });
  test("key order and spacing do not matter; trailing bytes after the data are ignored (as numpy)", () => {
    const a = loadBytes(npyFile("{ 'shape':(2,),'fortran_order':False ,'descr':\"<i2\"}", [1, 0, 2, 0, 99, 99]));
    expect(a.tolist()).toEqual([1, 2]);
  });
  test("version 2.0 and 3.0 headers", () => {
    expect(loadBytes(npyFile("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", [5, 0], 2)).tolist()).toEqual([5]);
    expect(loadBytes(npyFile("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", [6, 0], 3)).tolist()).toEqual([6]);
  });
  test("the header dict parser", () => {
    const fail = (m: string): never => {
      throw new Error(m);
    };
    const d = parseHeaderDict("{'a': (1, 2,), 'b': [True, None], 'c': {'d': -3}, 'e': 'x\\'y'}", fail);
    expect(d.get("a")).toEqual([1, 2]);
    expect(d.get("b")).toEqual([true, null]);
    expect((d.get("c") as Map<string, unknown>).get("d")).toBe(-3);
    expect(d.get("e")).toBe("x'y");
    expect(() => parseHeaderDict("{'a': 1", fail)).toThrow("malformed header");
    expect(() => parseHeaderDict("{'a': 1, 'a': 2}", fail)).toThrow("appears twice");
    expect(() => parseHeaderDict("{1: 2}", fail)).toThrow("not a string");
    expect(() => parseHeaderDict("{'a': 99999999999999999999}", fail)).toThrow("too large");
    expect(() => parseHeaderDict("{'a': " + "(".repeat(100), fail)).toThrow("nested too deeply");
    expect(() => parseHeaderDict("{'a': 1} x", fail)).toThrow("after the dict");
    expect(() => parseHeaderDict("[1]", fail)).toThrow("dict literal");
    expect(() => parseHeaderDict("{'a': 1.5}", fail)).toThrow("malformed header");
  });
});

describe("malformed files are tagged errors naming the file", () => {
  const cases: [string, Uint8Array, string][] = [
    ["empty file", new Uint8Array(0), "fewer than the 10 of a .npy preamble"],
    ["wrong magic", new TextEncoder().encode("\x93NUMPX\x01\x00\x10\x00{}              "), "magic string"],
    ["version 4", (() => { const b = npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", [0, 0, 0, 0]); b[6] = 4; return b; })(), "unsupported .npy format version 4.0"],
    ["header length past the end", (() => { const b = npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (), }"); new DataView(b.buffer).setUint16(8, 60000, true); return b; })(), "past the end of the file"],
    ["absurd v2 header length", (() => { const b = npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", [], 2); new DataView(b.buffer).setUint32(8, 0xfffffff0, true); return b; })(), "more than the 1048576 allowed"],
    ["missing key", npyFile("{'descr': '<f4', 'shape': (1,), }", [0, 0, 0, 0]), "expected the keys descr, fortran_order and shape, found descr, shape"],
    ["extra key", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", [0, 0, 0, 0]), "found descr, fortran_order, shape, x"],
    ["structured descr", npyFile("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }", [0, 0, 0, 0]), "structured dtypes cannot be loaded"],
    ["fortran_order not a bool", npyFile("{'descr': '<f4', 'fortran_order': 1, 'shape': (1,), }", [0, 0, 0, 0]), "fortran_order must be True or False"],
    ["shape not a tuple", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': 3, }", [0, 0, 0, 0]), "shape must be a tuple of integers"],
    ["negative dimension", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"), "outside [0, 2^31 - 1]"],
    ["dimension over int32", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2147483648,), }"), "outside [0, 2^31 - 1]"],
    ["shape far beyond the file", npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (2000000000, 2000000000, 2000000000), }"), "needs over 2^53 bytes after"],
    ["data one byte short", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", [0, 0, 0, 0, 0, 0, 0]), "needs 8 bytes after the 128-byte header, but only 7 follow"],
    ["unknown dtype", npyFile("{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }"), "dtype '<f16' is not supported"],
    ["object dtype", npyFile("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"), "dtype '|O' is not supported"],
    ["garbage header", npyFile("not a dict at all"), "malformed header"],
  ];
  for (const [what, bytes, message] of cases) {
    test(what, () => {
      const file = tmp.path("bad.npy");
      writeFileSync(file, bytes);
      expect(() => mg.load(file)).toThrow(`[load] ${file}: `);
      expect(() => mg.load(file)).toThrow(message);
    });
  }
  test("every truncation of a valid file is an error, and only the full file loads", () => {
    const file = tmp.path("full.npy");
    mg.save(file, mg.arange(10, undefined, undefined, mg.float32).reshape([2, 5]));
    const full = readFileSync(file);
    for (let n = 0; n < full.length; n++) {
      const cut = tmp.path("cut.npy");
      writeFileSync(cut, full.subarray(0, n));
      expect(() => mg.load(cut)).toThrow(`[load] ${cut}: `);
    }
    expect((mg.load(file) as mg.MgArray).tolist()).toEqual([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]);
  });
  test("a file that is missing or a directory", () => {
    expect(() => mg.load(tmp.path("nope.npy"))).toThrow(`[load] ${tmp.path("nope.npy")}: cannot open the file (ENOENT)`);
    expect(() => mg.load(tmp.dir, "npy")).toThrow("is not a regular file");
  });
});

test(`fuzz: ${FUZZ_RUNS} corrupted .npy files load or fail with a tagged error`, () => {
  const seeds = [
    npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", new Uint8Array(24).fill(7)),
    npyFile("{'descr': '>i8', 'fortran_order': True, 'shape': (2, 2), }", new Uint8Array(32).fill(1)),
    npyFile("{'descr': '<V2', 'fortran_order': False, 'shape': (), }", [0x80, 0x3f]),
    npyFile("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", new Uint8Array(8), 2),
  ];
  const tally: FuzzTally = { runs: 0, loaded: 0, rejected: 0 };
  const file = tmp.path("fuzz.npy");
  fc.assert(fc.property(corruptions(seeds), (bytes) => loadOutcome(file, bytes, "npy", tally)), { numRuns: FUZZ_RUNS });
  console.log(`npy fuzz: ${tally.runs} inputs, ${tally.loaded} loaded, ${tally.rejected} rejected with [load] errors`);
  expect(tally.runs).toBe(FUZZ_RUNS);
  expect(tally.rejected).toBeGreaterThan(0);
});
