// FileSource.readRegions (one native call reading many regions over I/O threads) against the
// bytes as written, its range checks, and a file that shrinks between opening and reading.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, truncateSync, writeFileSync } from "node:fs";
import * as mg from "../../ts/index.ts";
import { FileSource, LoadError, MemorySource, type ReadRegion, SliceSource } from "../../ts/io/file.ts";
import { newArray } from "../../ts/io/arrays.ts";
import { tempDir } from "./helpers.ts";

const tmp = tempDir("mg-io-file-");
afterAll(() => tmp.remove());

/** Deterministic bytes (xorshift), so a region read from the wrong offset cannot match by chance. */
function noise(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let s = seed | 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = s & 0xff;
  }
  return out;
}

const FILE_BYTES = 9 * 2 ** 20 + 13; // > 2 pieces of 4 MiB, odd length
const file = tmp.path("noise.bin");
const content = noise(FILE_BYTES, 7);
writeFileSync(file, content);

/** Regions of odd sizes at odd offsets, out of file order, one of them spanning several pieces. */
function layout(): { position: number; length: number }[] {
  const regions = [
    { position: 1, length: 5 * 2 ** 20 + 3 }, // split into pieces
    { position: FILE_BYTES - 17, length: 17 }, // the very end
    { position: 0, length: 0 },
  ];
  for (let i = 0; i < 300; i++) regions.push({ position: 5 * 2 ** 20 + 7 + i * 1009, length: 1 + ((i * 37) % 1000) });
  return regions;
}

describe("readRegions", () => {
  test("many regions into native buffers and JS memory come back as the file holds them", () => {
    const stream = mg.defaultStream(mg.cpu);
    const made: mg.MgArray[] = [];
    const regions: ReadRegion[] = layout().map((r, i) => {
      let dst: Uint8Array;
      if (i % 2 === 0) {
        const { array, bytes } = newArray([r.length], mg.uint8, stream);
        made.push(array);
        dst = bytes;
      } else {
        dst = new Uint8Array(r.length + 8).subarray(3, 3 + r.length); // a view at an unaligned offset
      }
      return { dst, position: r.position, what: `region ${i}` };
    });
    const src = FileSource.open(file);
    try {
      src.readRegions(regions);
    } finally {
      src.close();
    }
    for (const r of regions) {
      expect(Buffer.from(r.dst).equals(Buffer.from(content.subarray(r.position, r.position + r.dst.byteLength)))).toBe(true);
    }
    // The arrays see the bytes too (the read went into their buffers, not a copy).
    const first = made[0]!;
    expect(Buffer.from(first.dataSync() as Uint8Array).equals(Buffer.from(content.subarray(1, 1 + first.size)))).toBe(true);
    for (const a of made) a.dispose();
  });

  test("a region past the end is an error naming it, raised before anything is read", () => {
    const a = new Uint8Array(2 ** 20).fill(0xee);
    const b = new Uint8Array(10);
    const src = FileSource.open(file);
    try {
      expect(() => src.readRegions([
        { dst: a, position: 0, what: "the first" },
        { dst: b, position: FILE_BYTES - 5, what: "tensor 'late'" },
      ])).toThrow(/\[load\] .*noise\.bin: tensor 'late' \(bytes \d+\.\.\d+\) lies past the end of the file/);
    } finally {
      src.close();
    }
    expect(a.every((x) => x === 0xee)).toBe(true);
  });

  test("a file that shrinks after opening: the region it cuts is named, native and single reads alike", () => {
    const shrinking = tmp.path("shrinking.bin");
    for (const regionsOf of [
      // several regions: the native call
      () => [{ dst: new Uint8Array(4096), position: 0, what: "tensor 'a'" }, { dst: new Uint8Array(3 * 2 ** 20), position: 2 ** 20, what: "tensor 'b'" }],
      // one small region: readSync
      () => [{ dst: new Uint8Array(4096), position: 2 ** 20, what: "tensor 'b'" }],
    ]) {
      writeFileSync(shrinking, content);
      const src = FileSource.open(shrinking);
      try {
        truncateSync(shrinking, 2 ** 20 + 100);
        let error: unknown;
        try {
          src.readRegions(regionsOf());
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(LoadError);
        expect((error as Error).message).toMatch(/^\[load\] .*shrinking\.bin: tensor 'b' ends early: the file shrank while it was read$/);
      } finally {
        src.close();
      }
    }
  });

  test("slices and memory sources read regions relative to their start, errors name the part", () => {
    const src = FileSource.open(file);
    try {
      const slice = new SliceSource(src, 1000, 2 ** 21, "entry 'x.npy'");
      const dsts = [new Uint8Array(2 ** 20), new Uint8Array(77)];
      slice.readRegions([{ dst: dsts[0]!, position: 5, what: "a" }, { dst: dsts[1]!, position: 2 ** 21 - 77, what: "b" }]);
      expect(Buffer.from(dsts[0]!).equals(Buffer.from(content.subarray(1005, 1005 + 2 ** 20)))).toBe(true);
      expect(Buffer.from(dsts[1]!).equals(Buffer.from(content.subarray(1000 + 2 ** 21 - 77, 1000 + 2 ** 21)))).toBe(true);
      expect(() => slice.readRegions([{ dst: new Uint8Array(10), position: 2 ** 21 - 5, what: "c" }]))
        .toThrow(/entry 'x\.npy': c \(bytes \d+\.\.\d+\) lies past the end/);
    } finally {
      src.close();
    }
    const memory = new MemorySource("m.npz", content.subarray(0, 100), "entry 'y.npy'");
    const dst = new Uint8Array(10);
    memory.readRegions([{ dst, position: 90, what: "d" }]);
    expect([...dst]).toEqual([...content.subarray(90, 100)]);
    expect(() => memory.readRegions([{ dst, position: 95, what: "d" }])).toThrow(/\[load\] m\.npz: entry 'y\.npy': d/);
  });
});

describe("loaders read through readRegions", () => {
  test("a safetensors file of many small tensors and one split into pieces loads byte for byte", () => {
    // Written by hand (not by saveSafetensors): a header with unpadded, unaligned offsets.
    const sizes = [5 * 2 ** 20 + 1, ...Array.from({ length: 200 }, (_, i) => 1 + ((i * 53) % 700))];
    const header: Record<string, unknown> = {};
    let offset = 3; // a hole before the first tensor
    sizes.forEach((n, i) => {
      header[`t${i}`] = { dtype: "U8", shape: [n], data_offsets: [offset, offset + n] };
      offset += n + (i % 3);
    });
    const json = new TextEncoder().encode(JSON.stringify(header));
    const data = noise(offset, 11);
    const bytes = new Uint8Array(8 + json.length + data.length);
    new DataView(bytes.buffer).setBigUint64(0, BigInt(json.length), true);
    bytes.set(json, 8);
    bytes.set(data, 8 + json.length);
    const path = tmp.path("many.safetensors");
    writeFileSync(path, bytes);
    const loaded = mg.load(path) as Record<string, mg.MgArray>;
    const onDisk = readFileSync(path);
    for (const [name, info] of Object.entries(header)) {
      const [begin, end] = (info as { data_offsets: [number, number] }).data_offsets;
      const got = loaded[name]!.dataSync() as Uint8Array;
      expect(Buffer.from(got).equals(onDisk.subarray(8 + json.length + begin, 8 + json.length + end))).toBe(true);
      loaded[name]!.dispose();
    }
  });
});
