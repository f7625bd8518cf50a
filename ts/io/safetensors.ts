// safetensors: an 8-byte little-endian header length N, N bytes of JSON
// ({"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, "__metadata__": {...}}),
// then the tensors' bytes, offsets relative to the end of the header. Every tensor is checked
// against the file before anything is allocated; each is then read once into its array's buffer.
import {
  bfloat16, bool_, complex64, type Dtype, float16, float32, float64, int16, int32, int64, int8, uint16, uint32, uint64,
  uint8,
} from "../core/dtype.ts";
import type { MgArray } from "../core/array.ts";
import type { Stream } from "../core/device.ts";
import { formatShape } from "../core/shape.ts";
import { arrayBytes, byteSize, describeTensor, disposeAll, MAX_DIMENSION, newArrays, setEntry, traceIo } from "./arrays.ts";
import type { ByteSource, FileSink, ReadRegion } from "./file.ts";

/** The reference implementation's limit on the JSON header. */
const MAX_HEADER_BYTES = 100_000_000;

const DTYPES: ReadonlyMap<string, Dtype> = new Map([
  ["BOOL", bool_], ["U8", uint8], ["U16", uint16], ["U32", uint32], ["U64", uint64],
  ["I8", int8], ["I16", int16], ["I32", int32], ["I64", int64],
  ["F16", float16], ["BF16", bfloat16], ["F32", float32], ["F64", float64], ["C64", complex64],
  // MLX loads 8-bit floats as their raw bytes (uint8); so does metalgrad.
  ["F8_E4M3", uint8],
]);
const NAMES: ReadonlyMap<Dtype, string> = new Map(
  [...DTYPES].filter(([name]) => name !== "F8_E4M3").map(([name, d]) => [d, name]),
);

interface TensorEntry {
  name: string;
  type: string;
  dtype: Dtype;
  shape: number[];
  begin: number;
  end: number;
}

export interface SafetensorsHeader {
  tensors: TensorEntry[];
  metadata: Record<string, string>;
  /** Where the tensor data starts in the file. */
  dataStart: number;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Reads and validates the header: dtypes, shapes, offsets inside the data and not overlapping. */
export function readSafetensorsHeader(src: ByteSource): SafetensorsHeader {
  if (src.size < 8) src.fail(`the file has ${src.size} bytes, fewer than the 8-byte header length`);
  const pre = new DataView(src.read(0, 8, "the header length").buffer);
  const lo = pre.getUint32(0, true);
  const hi = pre.getUint32(4, true);
  const headerLength = lo + hi * 2 ** 32;
  if (hi >= 0x200000 || headerLength > MAX_HEADER_BYTES) {
    src.fail(`the header claims ${hi >= 0x200000 ? "over 2^53" : headerLength} bytes, more than the ${MAX_HEADER_BYTES} allowed; ` +
      "this is not a safetensors file or it is corrupt");
  }
  if (headerLength < 2 || 8 + headerLength > src.size) {
    src.fail(`the header claims ${headerLength} bytes but the file has ${src.size - 8} after the length; ` +
      "the file is truncated or not a safetensors file");
  }
  const raw = src.read(8, headerLength, "the JSON header");
  if (raw[0] !== 0x7b) src.fail("the header does not start with '{': not a safetensors file");
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(raw));
  } catch (e) {
    src.fail(`the header is not valid UTF-8 JSON (${(e as Error).message})`);
  }
  if (!isObject(json)) src.fail("the header is not a JSON object");
  const dataStart = 8 + headerLength;
  const dataSize = src.size - dataStart;
  const metadata: Record<string, string> = {};
  const tensors: TensorEntry[] = [];
  for (const [name, info] of Object.entries(json)) {
    if (name === "__metadata__") {
      if (info === null) continue;
      if (!isObject(info)) src.fail("__metadata__ must be an object of strings");
      for (const [k, v] of Object.entries(info)) {
        if (typeof v !== "string") src.fail(`__metadata__ entry '${k}' is ${JSON.stringify(v)}, not a string`);
        setEntry(metadata, k, v);
      }
      continue;
    }
    const what = `tensor '${name}'`;
    if (!isObject(info)) src.fail(`${what}: its entry is not an object`);
    const type = info.dtype;
    const shape = info.shape;
    const offsets = info.data_offsets;
    if (typeof type !== "string") src.fail(`${what}: dtype is missing or not a string`);
    const dtype = DTYPES.get(type);
    if (!dtype) src.fail(`${what}: dtype ${type} is not supported (${[...DTYPES.keys()].join(", ")})`);
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0 && d <= MAX_DIMENSION)) {
      src.fail(`${what}: shape ${JSON.stringify(shape)} is not a list of integers in [0, 2^31 - 1]`);
    }
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && o >= 0)) {
      src.fail(`${what}: data_offsets ${JSON.stringify(offsets)} is not a pair of non-negative integers`);
    }
    const [begin, end] = offsets as [number, number];
    const dims = shape as number[];
    if (begin > end || end > dataSize) {
      src.fail(`${what}: data_offsets [${begin}, ${end}] lie outside the ${dataSize} bytes of tensor data; ` +
        "the file is truncated or corrupt");
    }
    const need = byteSize(dims, dtype.size);
    if (need !== end - begin) {
      src.fail(`${describeTensor(name, dims, type)} needs ${need ?? "over 2^53"} bytes but data_offsets ` +
        `[${begin}, ${end}] hold ${end - begin}`);
    }
    tensors.push({ name, type, dtype, shape: dims, begin, end });
  }
  // Non-empty tensors may not share bytes.
  const byStart = tensors.filter((t) => t.end > t.begin).sort((a, b) => a.begin - b.begin);
  for (let i = 1; i < byStart.length; i++) {
    const a = byStart[i - 1]!;
    const b = byStart[i]!;
    if (b.begin < a.end) {
      src.fail(`tensor '${b.name}': data_offsets [${b.begin}, ${b.end}] overlap tensor '${a.name}' [${a.begin}, ${a.end}]`);
    }
  }
  return { tensors, metadata, dataStart };
}

export function loadSafetensors(src: ByteSource, stream: Stream): [Record<string, MgArray>, Record<string, string>] {
  const header = readSafetensorsHeader(src);
  const out: Record<string, MgArray> = {};
  const made: MgArray[] = [];
  try {
    const arrays = newArrays(header.tensors, stream, "load:safetensors");
    const regions: ReadRegion[] = [];
    for (let i = 0; i < arrays.length; i++) {
      const t = header.tensors[i]!;
      made.push(arrays[i]!.array);
      regions.push({ dst: arrays[i]!.bytes, position: header.dataStart + t.begin, what: describeTensor(t.name, t.shape, t.type) });
    }
    src.readRegions(regions);
    for (let i = 0; i < made.length; i++) {
      const t = header.tensors[i]!;
      setEntry(out, t.name, made[i]!);
      traceIo("load:safetensors", t.type, t.dtype, "contiguous", () => [
        `tensor '${t.name}': read ${t.end - t.begin} bytes from offset ${header.dataStart + t.begin} into a native buffer (one copy)`,
        ...(t.type === "F8_E4M3" ? ["F8_E4M3 loaded as its raw bytes (uint8), as MLX does"] : []),
      ]);
    }
  } catch (e) {
    disposeAll(made);
    throw e;
  }
  return [out, header.metadata];
}

/** Writes `arrays` (in their key order) and `metadata` as safetensors. */
export function writeSafetensors(
  sink: FileSink, arrays: Record<string, MgArray>, metadata: Record<string, string>, op: string,
): void {
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) setEntry(header, "__metadata__", metadata);
  let offset = 0;
  const entries = Object.entries(arrays);
  for (const [name, a] of entries) {
    if (name === "__metadata__") throw new Error(`[${op}] '__metadata__' is reserved and cannot name a tensor.`);
    const type = NAMES.get(a.dtype);
    if (type === undefined) throw new Error(`[${op}] dtype ${a.dtype.name} of '${name}' has no safetensors type.`);
    setEntry(header, name, { dtype: type, shape: [...a.shape], data_offsets: [offset, offset + a.nbytes] });
    offset += a.nbytes;
  }
  // Pad with spaces so the data starts 8-byte aligned (as the reference writer does).
  let text = JSON.stringify(header);
  const encoded = new TextEncoder().encode(text);
  const padded = Math.ceil(encoded.length / 8) * 8;
  text += " ".repeat(padded - encoded.length);
  const head = new Uint8Array(8 + padded);
  new DataView(head.buffer).setBigUint64(0, BigInt(padded), true);
  head.set(new TextEncoder().encode(text), 8);
  sink.write(head);
  for (const [name, a] of entries) {
    const data = arrayBytes(a, op, false);
    try {
      sink.write(data.bytes);
    } finally {
      data.done();
    }
    traceIo(`save:safetensors`, a.dtype.name, a.dtype, "contiguous", () => [`tensor '${name}': wrote ${a.nbytes} bytes ${formatShape(a.shape)}`]);
  }
}
