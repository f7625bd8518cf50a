// The zip container: what the writer produces is a valid archive (our reader and Python's zipfile
// agree, CRCs included), ZIP64 records on both sides, and a corrupt directory is a tagged error.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import zlib from "node:zlib";
import { FileSink, FileSource, withSource } from "../../ts/io/file.ts";
import { crc32, readZipDirectory, readZipEntry, ZipWriter } from "../../ts/io/zip.ts";
import { tempDir } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.remove());

function writeZip(name: string, entries: [string, Uint8Array[], boolean][], zip64Above?: number): string {
  const file = tmp.path(name);
  const sink = new FileSink(file, "test");
  const zip = new ZipWriter(sink, zip64Above);
  for (const [n, parts, compress] of entries) zip.add(n, parts, compress);
  zip.finish();
  sink.finish();
  return file;
}

const hasPython = Bun.spawnSync(["python3", "-c", "import zipfile"], { stdout: "ignore", stderr: "ignore" }).exitCode === 0;

/** Python's zipfile view of an archive: names, sizes and contents (testzip checks every CRC). */
function pythonZip(file: string): { bad: string | null; entries: [string, number, string][] } {
  const r = Bun.spawnSync(["python3", "-c", `
import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(json.dumps({"bad": z.testzip(), "entries": [[i.filename, i.compress_type, z.read(i).hex()] for i in z.infolist()]}))
`, file], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(r.stderr.toString());
  return JSON.parse(r.stdout.toString());
}

const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed * 7) & 0xff);

describe("writer and reader agree", () => {
  for (const [label, zip64Above] of [["32-bit records", undefined], ["ZIP64 records for everything", 0]] as const) {
    test(label, () => {
      const a = bytes(1000, 1);
      const b1 = bytes(10, 2);
      const b2 = bytes(3000, 3);
      const file = writeZip(`agree-${zip64Above ?? "32"}.zip`, [["a.npy", [a], false], ["b.npy", [b1, b2], true], ["empty.npy", [], false]], zip64Above);
      withSource(file, (src) => {
        const entries = readZipDirectory(src);
        expect(entries.map((e) => [e.name, e.method, e.size])).toEqual([["a.npy", 0, 1000], ["b.npy", 8, 3010], ["empty.npy", 0, 0]]);
        expect(entries[1]!.compressedSize).toBeLessThan(3010);
        expect([...readZipEntry(src, entries[0]!)]).toEqual([...a]);
        expect(Buffer.from(readZipEntry(src, entries[1]!))).toEqual(Buffer.concat([b1, b2]));
        expect(entries[0]!.crc32).toBe(crc32(a));
      });
      if (hasPython) {
        const py = pythonZip(file);
        expect(py.bad).toBeNull();
        expect(py.entries.map(([n, m, hex]) => [n, m, hex.length / 2])).toEqual([["a.npy", 0, 1000], ["b.npy", 8, 3010], ["empty.npy", 0, 0]]);
        expect(py.entries[1]![2]).toBe(Buffer.concat([b1, b2]).toString("hex"));
      }
    });
  }
  test.skipIf(!hasPython)("Python's ZIP64 archives (forced for every entry) read back", () => {
    const file = tmp.path("py64.zip");
    const r = Bun.spawnSync(["python3", "-c", `
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for name, method in [("x.npy", zipfile.ZIP_STORED), ("y.npy", zipfile.ZIP_DEFLATED)]:
        with z.open(zipfile.ZipInfo(name), "w", force_zip64=True) as f:
            f.write(bytes(range(256)) * 3)
`, file]);
    expect(r.exitCode).toBe(0);
    withSource(file, (src) => {
      const entries = readZipDirectory(src);
      expect(entries.map((e) => e.name)).toEqual(["x.npy", "y.npy"]);
      for (const e of entries) expect(readZipEntry(src, e).length).toBe(768);
    });
  });
});

describe("corrupt archives", () => {
  const good = () => readFileSync(writeZip("good.zip", [["a.npy", [bytes(100, 5)], false], ["b.npy", [bytes(500, 6)], true]]));
  const check = (data: Uint8Array, message: string, read = false) => {
    const file = tmp.path("bad.zip");
    writeFileSync(file, data);
    const run = () => withSource(file, (src) => {
      const entries = readZipDirectory(src);
      if (read) for (const e of entries) readZipEntry(src, e);
    });
    expect(run).toThrow(`[load] ${file}: `);
    expect(run).toThrow(message);
  };
  const endRecord = (z: Uint8Array) => z.length - 22;
  test("no end record", () => check(new Uint8Array(100), "no end-of-central-directory record"));
  test("too short", () => check(new Uint8Array(5), "fewer than an end-of-central-directory record"));
  test("central directory offset past its end", () => {
    const z = good();
    new DataView(z.buffer).setUint32(endRecord(z) + 16, 0x7ffffff0, true);
    check(z, "does not fit before its end record");
  });
  test("entry count larger than the directory", () => {
    const z = good();
    new DataView(z.buffer).setUint16(endRecord(z) + 10, 5000, true);
    check(z, "5000 entries cannot fit");
  });
  test("ZIP64 markers without a locator", () => {
    const z = good();
    new DataView(z.buffer).setUint16(endRecord(z) + 10, 0xffff, true);
    check(z, "ZIP64 end-of-central-directory locator is missing");
  });
  const central = (z: Uint8Array) => new DataView(z.buffer).getUint32(endRecord(z) + 16, true);
  test("encrypted entry", () => {
    const z = good();
    z[central(z) + 8]! |= 1;
    check(z, "entry 'a.npy' is encrypted");
  });
  test("unsupported method", () => {
    const z = good();
    new DataView(z.buffer).setUint16(central(z) + 10, 12, true);
    check(z, "uses compression method 12");
  });
  test("stored sizes that differ", () => {
    const z = good();
    new DataView(z.buffer).setUint32(central(z) + 24, 99, true);
    check(z, "is stored but its sizes differ");
  });
  test("a size deflate cannot produce (zip bomb claim)", () => {
    const z = good();
    const at = central(z);
    const next = at + 46 + 5; // past a.npy's record
    new DataView(z.buffer).setUint32(next + 24, 0x7fffffff, true);
    check(z, "beyond what deflate can");
  });
  test("local header offset pointing at garbage", () => {
    const z = good();
    new DataView(z.buffer).setUint32(central(z) + 42, 3, true);
    check(z, "no local header at offset 3");
  });
  test("deflate stream corrupted, and CRC mismatch", () => {
    const z = good();
    const entries = withSource(writeZip("g2.zip", [["b.npy", [bytes(500, 6)], true]]), (src) => readZipDirectory(src));
    const raw = readFileSync(tmp.path("g2.zip"));
    raw.fill(0xff, entries[0]!.dataOffset, entries[0]!.dataOffset + 8);
    check(raw, "deflate stream is corrupt", true);
    const data = z.slice();
    const first = withSource(tmp.path("good.zip"), (src) => readZipDirectory(src))[0]!;
    data[first.dataOffset + 10]! ^= 1;
    check(data, "CRC-32 mismatch", true);
  });
  test("an inflated size different from the directory's", () => {
    const payload = zlib.deflateRawSync(bytes(50, 1));
    const file = writeZip("lie.zip", [["a.npy", [bytes(50, 1)], true]]);
    const z = readFileSync(file);
    expect(payload.length).toBeGreaterThan(0);
    new DataView(z.buffer).setUint32(central(z) + 24, 40, true);
    check(z, "deflate stream is corrupt or longer than the 40 bytes", true);
  });
  test("FileSource reads are range-checked", () => {
    const file = writeZip("r.zip", [["a.npy", [bytes(10, 1)], false]]);
    withSource(file, (src: FileSource) => {
      expect(() => src.read(src.size - 2, 4, "the thing")).toThrow("the thing (bytes");
      expect(() => src.read(-1, 1, "x")).toThrow("past the end");
      expect(() => src.read(0, 2 ** 60, "x")).toThrow("past the end");
    });
  });
});
