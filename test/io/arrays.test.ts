// newArrays: small tensors packed into shared buffers (placement, the 16 MiB bound, the trace note,
// memory that returns with the last array), and loaded views computing correctly on both devices.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import * as mg from "../../ts/index.ts";
import { newArrays, setEntry, SHARED_BUFFER_BYTES, SHARED_TENSOR_BYTES } from "../../ts/io/arrays.ts";
import { tempDir } from "./helpers.ts";

const tmp = tempDir("mg-io-arrays-");
afterAll(() => tmp.remove());

const cpuStream = () => mg.defaultStream(mg.cpu);

function layoutOf(a: mg.MgArray) {
  return a.ensureEvaluated("test");
}

describe("newArrays", () => {
  test("runs of small tensors share a buffer at 64-byte aligned offsets; large, empty and lone ones own theirs", () => {
    const specs = [
      { name: "a", shape: [250], dtype: mg.float32 }, // 1000 bytes at 0
      { name: "b", shape: [3], dtype: mg.float16 }, // 6 bytes at 1024 → element offset 512
      { name: "c", shape: [2, 3], dtype: mg.float64 }, // 48 bytes at 1088 → element offset 136
      { name: "big", shape: [SHARED_TENSOR_BYTES / 4], dtype: mg.float32 }, // exactly the threshold: own buffer
      { name: "empty", shape: [0, 5], dtype: mg.int32 }, // no bytes: own (empty) buffer
      { name: "lone", shape: [7], dtype: mg.uint8 }, // a run of one: own buffer
      { name: "big2", shape: [SHARED_TENSOR_BYTES], dtype: mg.uint8 },
    ];
    const made = newArrays(specs, cpuStream(), "load:test");
    const l = made.map((m) => layoutOf(m.array));
    expect(l[0]!.storage).toBe(l[1]!.storage);
    expect(l[1]!.storage).toBe(l[2]!.storage);
    expect([l[0]!.offset, l[1]!.offset, l[2]!.offset]).toEqual([0, 512, 136]);
    expect(l[0]!.storage.holders).toBe(3);
    expect(l[0]!.storage.byteLength).toBe(1088 + 48);
    for (const k of [3, 4, 5, 6]) {
      expect(l[k]!.offset).toBe(0);
      expect(l[k]!.storage.holders).toBe(1);
      expect(l[k]!.storage).not.toBe(l[0]!.storage);
    }
    // The bytes handed out are exactly each array's data.
    made.forEach((m, i) => expect(m.bytes.byteLength).toBe(made[i]!.array.nbytes));
    made[1]!.bytes.set([0x00, 0x3c, 0x00, 0x40, 0x00, 0xc2]); // float16 1, 2, -3
    expect(made[1]!.array.tolist()).toEqual([1, 2, -3]);
    for (const m of made) m.array.dispose();
  });

  test(`a shared buffer holds at most ${SHARED_BUFFER_BYTES} bytes`, () => {
    const n = SHARED_BUFFER_BYTES / (256 * 1024) + 6; // 64 tensors of 256 KiB fit, 6 more start the next
    const made = newArrays(Array.from({ length: n }, (_, i) => ({ name: `t${i}`, shape: [65536], dtype: mg.float32 })), cpuStream(), "load:test");
    const storages = made.map((m) => layoutOf(m.array).storage);
    expect(new Set(storages.slice(0, 64)).size).toBe(1);
    expect(new Set(storages.slice(64)).size).toBe(1);
    expect(storages[0]).not.toBe(storages[64]);
    expect(storages[0]!.byteLength).toBe(SHARED_BUFFER_BYTES);
    expect(made[63]!.bytes.byteOffset).toBe(63 * 256 * 1024);
    for (const m of made) m.array.dispose();
  });
});

/** A safetensors file of int32 tensors whose values are known: tensor i holds i·1000 + j. */
function writeInts(path: string, count: number, length: number): void {
  const tensors: Record<string, mg.MgArray> = {};
  for (let i = 0; i < count; i++) tensors[`t${i}`] = mg.add(mg.arange(length), i * 1000);
  mg.saveSafetensors(path, tensors);
  for (const t of Object.values(tensors)) t.dispose();
}

describe("setEntry", () => {
  test("every name becomes an own enumerable data property, inherited names and __proto__ included", () => {
    const obj: Record<string, number> = {};
    const names = ["a", "constructor", "toString", "hasOwnProperty", "__proto__", "valueOf", "b"];
    names.forEach((k, i) => setEntry(obj, k, i));
    expect(Object.getPrototypeOf(obj)).toBe(Object.prototype);
    expect(Object.keys(obj)).toEqual(names);
    names.forEach((k, i) => {
      expect(Object.getOwnPropertyDescriptor(obj, k)).toEqual({ value: i, enumerable: true, writable: true, configurable: true });
    });
  });
});

describe("loading into shared buffers", () => {
  test("the trace names each shared buffer; the memory returns when the last of its arrays is freed", () => {
    const path = tmp.path("ints.safetensors");
    writeInts(path, 10, 25_000); // 100 kB each, one shared buffer of ~1 MB
    // Arrays an earlier test dropped are collected now, not while this one counts.
    Bun.gc(true);
    mg.clearCache();
    const before = mg.getActiveMemory();
    let loaded: Record<string, mg.MgArray> = {};
    const records = mg.trace(() => {
      loaded = mg.load(path) as Record<string, mg.MgArray>;
    });
    const shared = records.filter((r) => r.layout === "views of one shared buffer");
    expect(shared.length).toBe(1);
    expect(shared[0]!.notes[0]).toMatch(/^10 tensors \('t0' … 't9'\), each under 1048576 bytes, share one buffer of \d+ bytes: its memory returns when the last of them is freed$/);
    const held = mg.getActiveMemory() - before;
    expect(held).toBeGreaterThanOrEqual(10 * 100_000);
    for (let i = 0; i < 9; i++) loaded[`t${i}`]!.dispose();
    expect(mg.getActiveMemory() - before).toBe(held);
    // The survivor still reads its own values.
    const total = mg.sum(loaded.t9!);
    expect(total.item()).toBe(9000 * 25_000 + (25_000 * 24_999) / 2);
    total.dispose();
    expect(mg.getActiveMemory() - before).toBe(held);
    loaded.t9!.dispose();
    expect(mg.getActiveMemory() - before).toBe(0);
  });

  for (const device of ["cpu", "gpu"] as const) {
    test(`views into a shared buffer compute as independent arrays on the ${device}`, () => {
      const path = tmp.path(`ops-${device}.safetensors`);
      writeInts(path, 5, 1000);
      const raw = readFileSync(path);
      const headerLength = Number(raw.readBigUInt64LE(0));
      const header = JSON.parse(raw.subarray(8, 8 + headerLength).toString()) as Record<string, { data_offsets: [number, number] }>;
      const loaded = mg.load(path, { stream: mg[device] }) as Record<string, mg.MgArray>;
      for (let i = 0; i < 5; i++) {
        const [begin, end] = header[`t${i}`]!.data_offsets;
        // The expected values come from the file's bytes, not from metalgrad.
        const onDisk = new Int32Array(raw.buffer.slice(raw.byteOffset + 8 + headerLength + begin, raw.byteOffset + 8 + headerLength + end));
        const x = loaded[`t${i}`]!;
        expect(x.stream.device.type).toBe(device);
        expect(mg.add(x, 1).tolist()).toEqual([...onDisk].map((v) => v + 1));
        expect(mg.sum(x).item()).toBe(onDisk.reduce((s, v) => s + v, 0));
        // An in-place style update of one view leaves its neighbours alone.
        loaded[`t${i}`] = mg.multiply(x, 0);
        x.dispose();
      }
      for (const x of Object.values(loaded)) expect(mg.sum(x).item()).toBe(0);
    });
  }
});
