// .npz: savez / savezCompressed round trips (names, dtypes, layouts, ZIP64), and archives whose
// entries are wrong in any way fail with a tagged error naming the entry.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import fc from "fast-check";
import * as mg from "../../ts/index.ts";
import { FileSink } from "../../ts/io/file.ts";
import { npyHeader } from "../../ts/io/npy.ts";
import { writeNpz } from "../../ts/io/npz.ts";
import { ZipWriter } from "../../ts/io/zip.ts";
import { corruptions, FUZZ_RUNS, type FuzzTally, loadOutcome, rowMajorHex, tempDir } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.remove());

const load = (file: string) => mg.load(file) as Record<string, mg.MgArray>;

describe("round trips", () => {
  test("positional arrays are arr_0, arr_1…; a trailing object names more; layouts and dtypes survive", () => {
    const a = mg.arange(12, undefined, undefined, mg.float32).reshape([3, 4]);
    const t = mg.transpose(mg.arange(6, undefined, undefined, mg.int64).reshape([2, 3]));
    const strided = mg.arange(20, undefined, undefined, mg.uint16).index("::3");
    for (const [save, method] of [[mg.savez, 0], [mg.savezCompressed, 8]] as const) {
      const file = tmp.path(`rt${method}.npz`);
      save(file, a, t, { strided, flag: mg.array([true, false]), bf: mg.array([1.5, -2], mg.bfloat16) });
      const got = load(file);
      expect(Object.keys(got)).toEqual(["arr_0", "arr_1", "strided", "flag", "bf"]);
      expect(rowMajorHex(got.arr_0!)).toBe(rowMajorHex(a));
      expect(got.arr_1!.tolist()).toEqual(t.tolist());
      expect(got.arr_1!.layout!.colContiguous && !got.arr_1!.layout!.rowContiguous).toBe(true);
      expect(got.strided!.tolist()).toEqual([0, 3, 6, 9, 12, 15, 18]);
      expect(got.flag!.tolist()).toEqual([true, false]);
      expect(got.bf!.dtype).toBe(mg.bfloat16);
      expect(got.bf!.tolist()).toEqual([1.5, -2]);
    }
  });
  test("compressed archives are smaller for compressible data; the extension is appended as MLX does", () => {
    const z = mg.zeros([256, 256]);
    mg.savez(tmp.path("plain"), { z });
    mg.savezCompressed(tmp.path("small.zip"), { z });
    expect(readFileSync(tmp.path("small.zip.npz")).length * 50).toBeLessThan(readFileSync(tmp.path("plain.npz")).length);
    expect(load(tmp.path("small.zip.npz")).z!.shape).toEqual([256, 256]);
  });
  test("ZIP64 records (forced on a small archive) round trip", () => {
    const file = tmp.path("z64.npz");
    const sink = new FileSink(file, "test");
    writeNpz(sink, { a: mg.array([1, 2, 3], mg.int8), b: mg.array([[0.5]]) }, false, "savez", 0);
    sink.finish();
    const got = load(file);
    expect(got.a!.tolist()).toEqual([1, 2, 3]);
    expect(got.b!.tolist()).toEqual([[0.5]]);
  });
  test("a name used positionally and by keyword is an error (MLX's message), and nothing is written", () => {
    expect(() => mg.savez(tmp.path("dup"), mg.array(1), { arr_0: mg.array(2) })).toThrow("[savez] Cannot use un-named variables and keyword arr_0.");
    expect(() => mg.savez(tmp.path("bad"), 3 as unknown as mg.MgArray)).toThrow("[savez] argument 1 must be an array, got number.");
    expect(Bun.file(tmp.path("bad.npz")).size).toBe(0);
  });
});

function archive(name: string, entries: [string, Uint8Array[], boolean][]): string {
  const file = tmp.path(name);
  const sink = new FileSink(file, "test");
  const zip = new ZipWriter(sink);
  for (const [n, parts, c] of entries) zip.add(n, parts, c);
  zip.finish();
  sink.finish();
  return file;
}
const f32 = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);

describe("bad entries name the entry", () => {
  test("an entry that is not an .npy file", () => {
    const file = archive("notnpy.npz", [["readme.txt", [new Uint8Array([1])], false]]);
    expect(() => mg.load(file)).toThrow(`[load] ${file}: entry 'readme.txt' is not an .npy array`);
  });
  test("a duplicate entry", () => {
    const part = [npyHeader(mg.float32, [1], false), f32([1])];
    const file = archive("dup.npz", [["a.npy", part, false], ["a.npy", part, false]]);
    expect(() => mg.load(file)).toThrow("entry 'a.npy' appears twice");
  });
  test("an entry whose .npy is truncated or malformed", () => {
    const file = archive("short.npz", [["a.npy", [npyHeader(mg.float32, [4], false), f32([1, 2])], false]]);
    expect(() => mg.load(file)).toThrow(`[load] ${file}: entry 'a.npy': shape (4,) of <f4 needs 16 bytes`);
    const file2 = archive("short2.npz", [["b.npy", [npyHeader(mg.float32, [4], false), f32([1, 2])], true]]);
    expect(() => mg.load(file2)).toThrow(`[load] ${file2}: entry 'b.npy': shape (4,) of <f4 needs 16 bytes`);
  });
  test("a flipped data byte in a stored entry fails its CRC (checked on the bytes as read, big-endian too)", () => {
    for (const big of [false, true]) {
      const header = npyHeader(mg.float32, [2], false);
      if (big) header[header.indexOf(0x3c)] = 0x3e; // '<f4' → '>f4'
      const file = archive(`crc${big}.npz`, [["a.npy", [header, f32([1, 2])], false]]);
      expect((load(file).a!).dtype).toBe(mg.float32);
      const z = readFileSync(file);
      z[30 + 5 + header.length + 2]! ^= 0x10;
      writeFileSync(file, z);
      expect(() => mg.load(file)).toThrow(`[load] ${file}: entry 'a.npy': CRC-32 mismatch`);
    }
  });
  test("every truncation of a valid archive is an error", () => {
    const file = tmp.path("full.npz");
    mg.savez(file, { a: mg.array([1, 2, 3]) });
    const full = readFileSync(file);
    const cut = tmp.path("cut.npz");
    for (let n = 0; n < full.length; n++) {
      writeFileSync(cut, full.subarray(0, n));
      expect(() => mg.load(cut)).toThrow(`[load] ${cut}: `);
    }
  });
  test("a failed load leaves no arrays behind (the first entry's buffer is released)", () => {
    const good = [npyHeader(mg.float32, [1024], false), new Uint8Array(4096)];
    const file = archive("half.npz", [["a.npy", good, false], ["b.npy", [npyHeader(mg.float32, [4], false)], false]]);
    const before = mg.getActiveMemory();
    expect(() => mg.load(file)).toThrow("entry 'b.npy'");
    expect(mg.getActiveMemory()).toBe(before);
  });
});

test(`fuzz: ${FUZZ_RUNS} corrupted .npz files load or fail with a tagged error`, () => {
  const seeds: Uint8Array[] = [];
  for (const compress of [false, true]) {
    const file = tmp.path(`seed${compress}.npz`);
    (compress ? mg.savezCompressed : mg.savez)(file, mg.array([[1, 2], [3, 4]], mg.int16), { b: mg.array([0.5, 1.5]) });
    seeds.push(new Uint8Array(readFileSync(file)));
  }
  const tally: FuzzTally = { runs: 0, loaded: 0, rejected: 0 };
  const file = tmp.path("fuzz.npz");
  fc.assert(fc.property(corruptions(seeds), (bytes) => loadOutcome(file, bytes, "npz", tally, 1032)), { numRuns: FUZZ_RUNS });
  console.log(`npz fuzz: ${tally.runs} inputs, ${tally.loaded} loaded, ${tally.rejected} rejected with [load] errors`);
  expect(tally.runs).toBe(FUZZ_RUNS);
});
