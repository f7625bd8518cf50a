// The public I/O API: MLX's call shapes (positional or options), format inference, Bun files,
// streams, the trace, and — where Python with numpy/MLX is installed — files metalgrad writes read
// back by numpy and MLX to the same bytes.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import * as mg from "../../ts/index.ts";
import { python, pythonHas, rowMajorHex, tempDir } from "./helpers.ts";

const tmp = tempDir();
afterAll(() => tmp.remove());

describe("load's arguments", () => {
  const file = tmp.path("a.npy");
  mg.save(file, mg.array([1, 2, 3]));
  const st = tmp.path("m.safetensors");
  mg.saveSafetensors(st, { w: mg.array([1.5]) }, { k: "v" });

  test("format from the extension, or given; returnMetadata positionally or as an option", () => {
    expect((mg.load(file) as mg.MgArray).tolist()).toEqual([1, 2, 3]);
    expect((mg.load(file, "npy") as mg.MgArray).tolist()).toEqual([1, 2, 3]);
    expect((mg.load(file, { format: "npy" }) as mg.MgArray).tolist()).toEqual([1, 2, 3]);
    const [a, m] = mg.load(st, null, true);
    expect([a.w!.tolist(), m]).toEqual([[1.5], { k: "v" }]);
    const [a2, m2] = mg.load(st, { returnMetadata: true });
    expect([a2.w!.tolist(), m2]).toEqual([[1.5], { k: "v" }]);
    expect(Object.keys(mg.load(st) as Record<string, mg.MgArray>)).toEqual(["w"]);
  });
  test("errors: unknown format, no extension, metadata for npy/npz, unknown options, doubled arguments", () => {
    expect(() => mg.load(tmp.path("x.bin"))).toThrow(`[load] ${tmp.path("x.bin")}: unknown file format 'bin' (supported: npy, npz, safetensors, gguf)`);
    expect(() => mg.load(tmp.path("noext"))).toThrow("cannot tell the format from the file name");
    expect(() => mg.load(file, "pt" as "npy")).toThrow("[load] Unknown file format pt");
    expect(() => mg.load(file, null, true)).toThrow(`[load] ${file}: metadata not supported for format npy`);
    expect(() => mg.load(file, { metadata: true } as never)).toThrow("[load] unknown option 'metadata'. Accepted options: 'format', 'returnMetadata', 'stream'.");
    expect(() => mg.load(file, "npy", { format: "npy" })).toThrow("[load] 'format' was given both positionally and in the options object.");
    expect(() => mg.load(file, "npy", false, {}, 1 as never)).toThrow("[load] takes at most 3 positional arguments (file, format, returnMetadata)");
    expect(() => mg.load(file, null, "yes" as never)).toThrow("[load] returnMetadata must be a boolean");
    expect(() => mg.load(3 as never)).toThrow("[load] expected a file name or a Bun file, got number.");
    expect(() => mg.load("")).toThrow("[load] the file name is empty.");
    expect(() => mg.load(file, "safetensors")).toThrow(`[load] ${file}: the header claims`);
  });
  test("Bun files name the file for load and every save", () => {
    const f = Bun.file(tmp.path("bun.safetensors"));
    mg.saveSafetensors(f, { x: mg.array([4]) });
    expect((mg.load(Bun.file(tmp.path("bun.safetensors"))) as Record<string, mg.MgArray>).x!.tolist()).toEqual([4]);
    mg.save(Bun.file(tmp.path("bun.npy")), mg.array([5]));
    mg.savez(Bun.file(tmp.path("bun.npz")), mg.array([6]));
    mg.saveGguf(Bun.file(tmp.path("bun.gguf")), { y: mg.array([7]) });
    expect((mg.load(Bun.file(tmp.path("bun.npy"))) as mg.MgArray).tolist()).toEqual([5]);
    expect((mg.load(Bun.file(tmp.path("bun.npz"))) as Record<string, mg.MgArray>).arr_0!.tolist()).toEqual([6]);
    expect((mg.load(Bun.file(tmp.path("bun.gguf"))) as Record<string, mg.MgArray>).y!.tolist()).toEqual([7]);
    expect(() => mg.load(new Blob([new Uint8Array(3)]) as never)).toThrow("[load] this Bun file has no path");
  });
  test("arrays come back evaluated on the stream asked for", () => {
    const onCpu = mg.load(file, { stream: mg.cpu }) as mg.MgArray;
    expect(onCpu.stream.device.type).toBe("cpu");
    expect(onCpu.evaluated).toBe(true);
    const onGpu = mg.load(file, { stream: mg.gpu }) as mg.MgArray;
    expect(onGpu.stream.device.type).toBe("gpu");
    expect(mg.multiply(onGpu, 2).tolist()).toEqual([2, 4, 6]);
  });
  test("the trace records each tensor read: bytes, offset, one copy; byte swaps and Fortran views are named", () => {
    const records = mg.trace(() => mg.load(st));
    expect(records.length).toBe(1);
    expect(records[0]!.kernel).toBe("load:safetensors");
    expect(records[0]!.notes[0]).toMatch(/tensor 'w': read 4 bytes from offset \d+ into a native buffer \(one copy\)/);
    const t = tmp.path("t.npy");
    mg.save(t, mg.transpose(mg.arange(6).reshape([2, 3])));
    const r2 = mg.trace(() => mg.load(t));
    expect(r2[0]!.layout).toBe("column-major (Fortran order): a view, not a copy");
  });
});

describe("save", () => {
  test("appends the extension as MLX does; a transposed array is written in Fortran order, a strided one copied (traced)", () => {
    mg.save(tmp.path("plain"), mg.array([1]));
    mg.save(tmp.path("name.txt"), mg.array([1]));
    expect(existsSync(tmp.path("plain.npy")) && existsSync(tmp.path("name.txt.npy"))).toBe(true);
    mg.saveSafetensors(tmp.path("s"), { a: mg.array([1]) });
    mg.saveGguf(tmp.path("g"), { a: mg.array([1]) });
    expect(existsSync(tmp.path("s.safetensors")) && existsSync(tmp.path("g.gguf"))).toBe(true);
    const strided = mg.arange(10).index("::2");
    const records = mg.trace(() => mg.save(tmp.path("strided.npy"), strided));
    expect(records.some((r) => r.notes.some((n) => n.includes("is not contiguous: saved from a row-major copy")))).toBe(true);
    expect((mg.load(tmp.path("strided.npy")) as mg.MgArray).tolist()).toEqual([0, 2, 4, 6, 8]);
  });
  test("every dtype round-trips through .npy bit for bit (NaN payloads, -0, infinities)", () => {
    const key = mg.random.key(1);
    for (const d of mg.ALL_DTYPES) {
      const bits = d.size === 8 ? mg.random.bits([4, 10], 4, key) : mg.random.bits([4, 5], d.size, key);
      const a = d === mg.bool_ ? mg.greater(bits, 127) : mg.view(bits, d);
      const file = tmp.path(`dtype-${d.name}.npy`);
      mg.save(file, a);
      const got = mg.load(file) as mg.MgArray;
      expect({ d: d.name, dtype: got.dtype, hex: rowMajorHex(got) }).toEqual({ d: d.name, dtype: d, hex: rowMajorHex(a) });
    }
  });
  test("a failed save leaves neither the file nor a partial one behind", () => {
    const file = tmp.path("fail.gguf");
    expect(() => mg.saveGguf(file, { a: mg.array([1], mg.uint32) })).toThrow("[save_gguf]");
    expect(readdirSync(tmp.dir).filter((n) => n.startsWith("fail.gguf"))).toEqual([]);
    expect(() => mg.save(file, 1 as never)).toThrow("[save] arr must be an array, got number.");
    const d = mg.array([1]);
    d.dispose();
    expect(() => mg.save(file, d)).toThrow("was disposed");
  });
});

const HAS_MLX = pythonHas("numpy", "mlx.core");
describe.skipIf(!HAS_MLX)("numpy and MLX read what metalgrad writes (skipped without them)", () => {
  test("npy, npz, safetensors and gguf", () => {
    const key = mg.random.key(9);
    const x = mg.random.normal([3, 4], mg.float32, 0, 1, key);
    const arrays: Record<string, mg.MgArray> = {
      f32: x, f16: x.astype(mg.float16), bf16: x.astype(mg.bfloat16), i64: mg.arange(-6, 6, 1, mg.int64).reshape([3, 4]),
      u8: mg.arange(12, undefined, undefined, mg.uint8), b: mg.greater(x, 0), t: mg.transpose(x), c64: mg.array([{ re: 1, im: -2 }]),
    };
    const dir = tmp.path("");
    for (const [k, a] of Object.entries(arrays)) mg.save(`${dir}${k}.npy`, a);
    mg.savez(`${dir}all`, arrays);
    mg.savezCompressed(`${dir}allc`, arrays);
    mg.saveSafetensors(`${dir}all`, arrays, { who: "metalgrad" });
    const g = { f32: x, f16: arrays.f16!, i8: mg.array([-1, 2], mg.int8), i32: mg.array([[3]]) };
    mg.saveGguf(`${dir}all`, g, { name: "m", ids: mg.array([1, 2]), toks: ["a", "b"] });
    const out = python(`
import json, mlx.core as mx, numpy as np
d = ${JSON.stringify(dir)}
def hexof(x):
    if x.dtype == mx.bfloat16: x = x.view(mx.uint16)
    return np.ascontiguousarray(np.array(x)).tobytes().hex()
r = {}
for k in ${JSON.stringify(Object.keys(arrays))}:
    r["npy:" + k] = hexof(mx.load(d + k + ".npy"))
    if k != "bf16": r["numpy:" + k] = np.ascontiguousarray(np.load(d + k + ".npy")).tobytes().hex()
for f in ["all.npz", "allc.npz"]:
    for k, v in mx.load(d + f).items(): r[f + ":" + k] = hexof(v)
a, m = mx.load(d + "all.safetensors", return_metadata=True)
for k, v in a.items(): r["st:" + k] = hexof(v)
r["st:meta"] = m
a, m = mx.load(d + "all.gguf", return_metadata=True)
for k, v in a.items(): r["gguf:" + k] = hexof(v)
r["gguf:meta"] = {k: (v if isinstance(v, (str, list)) else np.array(v).tolist()) for k, v in m.items()}
print(json.dumps(r))
`) as Record<string, unknown>;
    for (const [k, a] of Object.entries(arrays)) {
      const hex = rowMajorHex(a);
      expect({ k, npy: out[`npy:${k}`], npz: out[`all.npz:${k}`], npzc: out[`allc.npz:${k}`], st: out[`st:${k}`] })
        .toEqual({ k, npy: hex, npz: hex, npzc: hex, st: hex });
      if (k !== "bf16") expect({ k, numpy: out[`numpy:${k}`] }).toEqual({ k, numpy: hex });
    }
    expect(out["st:meta"]).toEqual({ who: "metalgrad" });
    for (const [k, a] of Object.entries(g)) expect({ k, hex: out[`gguf:${k}`] }).toEqual({ k, hex: rowMajorHex(a) });
    expect(out["gguf:meta"]).toEqual({ name: "m", ids: [1, 2], toks: ["a", "b"] });
  });
});
