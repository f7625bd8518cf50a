// GGUF (llama.cpp's format): "GGUF", version, tensor and key-value counts, typed key-values,
// tensor infos (name, dims innermost first, ggml type, offset), then aligned tensor data. Counts,
// lengths and offsets are all checked against the file before anything is allocated.
import {
  bfloat16, bool_, type Dtype, float16, float32, float64, int16, int32, int64, int8, uint16, uint32, uint64, uint8,
} from "../core/dtype.ts";
import { MgArray } from "../core/array.ts";
import type { Stream } from "../core/device.ts";
import { formatShape } from "../core/shape.ts";
import { Precision } from "../core/trace.ts";
import { arrayBytes, describeTensor, disposeAll, MAX_DIMENSION, newArray, newArrays, setEntry, traceIo } from "./arrays.ts";
import type { ByteSource, FileSink, ReadRegion } from "./file.ts";
import { dequantizeBlocks, Q2_K, Q4_0, Q4_1, Q4_K, Q6_K, Q8_0, type QuantType, repackBlocks } from "./gguf-quants.ts";

const MAGIC = 0x46554747; // "GGUF" little-endian
const DEFAULT_ALIGNMENT = 32;
const MAX_DIMS = 32;
/** Header bytes read ahead at a time while parsing key-values and tensor infos. */
const READ_AHEAD = 1 << 20;

/** Plain element types: the ggml type id, its name and the dtype it loads as. */
const PLAIN: ReadonlyMap<number, { name: string; dtype: Dtype }> = new Map([
  [0, { name: "F32", dtype: float32 }],
  [1, { name: "F16", dtype: float16 }],
  [24, { name: "I8", dtype: int8 }],
  [25, { name: "I16", dtype: int16 }],
  [26, { name: "I32", dtype: int32 }],
  [27, { name: "I64", dtype: int64 }],
  [28, { name: "F64", dtype: float64 }],
  [30, { name: "BF16", dtype: bfloat16 }],
]);
const QUANT: ReadonlyMap<number, QuantType> = new Map([[2, Q4_0], [3, Q4_1], [8, Q8_0], [10, Q2_K], [12, Q4_K], [14, Q6_K]]);
/** ggml types neither MLX nor metalgrad loads, named for the error message. */
const UNSUPPORTED: ReadonlyMap<number, string> = new Map([
  [6, "Q5_0"], [7, "Q5_1"], [9, "Q8_1"], [11, "Q3_K"], [13, "Q5_K"], [15, "Q8_K"], [16, "IQ2_XXS"], [17, "IQ2_XS"],
  [18, "IQ3_XXS"], [19, "IQ1_S"], [20, "IQ4_NL"], [21, "IQ3_S"], [22, "IQ2_S"], [23, "IQ4_XS"], [29, "IQ1_M"],
  [34, "TQ1_0"], [35, "TQ2_0"], [39, "MXFP4"],
]);
const SAVE_TYPES: ReadonlyMap<Dtype, number> = new Map([...PLAIN].map(([id, t]) => [t.dtype, id]));

/** Key-value types: numbers (as their dtype), bool, string and one level of arrays. */
const KV_NUMERIC: ReadonlyMap<number, Dtype> = new Map([
  [0, uint8], [1, int8], [2, uint16], [3, int16], [4, uint32], [5, int32], [6, float32], [7, bool_],
  [10, uint64], [11, int64], [12, float64],
]);
const KV_STRING = 8;
const KV_ARRAY = 9;
const KV_TYPE_OF: ReadonlyMap<Dtype, number> = new Map([...KV_NUMERIC].map(([id, d]) => [d, id]));

/** A GGUF metadata value as mx.load returns it: an array (0-d for scalars), a string or strings. */
export type GgufMetadataValue = MgArray | string | string[];

/** A metadata value before it becomes an array (built only when the caller asks for metadata). */
type RawValue = { dtype: Dtype; bytes: Uint8Array; scalar: boolean } | string | string[];

interface TensorInfo {
  name: string;
  /** MLX order: outermost first (GGUF lists innermost first). */
  shape: number[];
  typeName: string;
  plain?: Dtype;
  quant?: QuantType;
  /** Absolute file offset and byte length. */
  offset: number;
  bytes: number;
}

/** Reads the header progressively: metadata can be many megabytes (tokenizer vocabularies). */
class Cursor {
  private buf: Uint8Array = new Uint8Array(0);
  private bufStart = 0;
  pos = 0;
  private readonly decoder = new TextDecoder("utf-8", { fatal: false });
  constructor(private readonly src: ByteSource) {}

  private need(n: number, what: string): number {
    const end = this.pos + n;
    if (end > this.src.size) {
      this.src.fail(`${what} (bytes ${this.pos}..${end}) lies past the end of the file (${this.src.size} bytes); the file is truncated or corrupt`);
    }
    if (this.pos < this.bufStart || end > this.bufStart + this.buf.length) {
      const length = Math.min(Math.max(n, READ_AHEAD), this.src.size - this.pos);
      this.buf = this.src.read(this.pos, length, what);
      this.bufStart = this.pos;
    }
    const at = this.pos - this.bufStart;
    this.pos = end;
    return at;
  }

  bytes(n: number, what: string): Uint8Array {
    const at = this.need(n, what);
    return this.buf.slice(at, at + n);
  }
  u8(what: string): number {
    return this.buf[this.need(1, what)]!;
  }
  u32(what: string): number {
    const at = this.need(4, what);
    const b = this.buf;
    return (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16)) + b[at + 3]! * 0x1000000;
  }
  /** A u64 that must be below 2^53 (counts, lengths, offsets and dims all are in a real file). */
  u64(what: string): number {
    const lo = this.u32(what);
    const hi = this.u32(what);
    if (hi >= 0x200000) this.src.fail(`${what} is ${BigInt(hi) * 2n ** 32n + BigInt(lo)}, beyond any file`);
    return lo + hi * 2 ** 32;
  }
  string(what: string): string {
    const n = this.u64(`the length of ${what}`);
    const at = this.need(n, what);
    return this.decoder.decode(this.buf.subarray(at, at + n));
  }
  remaining(): number {
    return this.src.size - this.pos;
  }
}

export interface GgufContents {
  metadata: Map<string, RawValue>;
  tensors: TensorInfo[];
}

function readValue(c: Cursor, src: ByteSource, type: number, key: string, depth: number): RawValue {
  const what = `metadata '${key}'`;
  const dtype = KV_NUMERIC.get(type);
  if (dtype) return { dtype, bytes: c.bytes(dtype.size, what), scalar: true };
  if (type === KV_STRING) return c.string(what);
  if (type === KV_ARRAY) {
    if (depth > 0) src.fail(`${what}: arrays of arrays are not supported (MLX loads one level of nesting)`);
    const elementType = c.u32(`${what}: the array's element type`);
    const count = c.u64(`${what}: the array's length`);
    const elementDtype = KV_NUMERIC.get(elementType);
    if (elementDtype) {
      if (count * elementDtype.size > c.remaining()) src.fail(`${what}: ${count} elements do not fit in the rest of the file`);
      return { dtype: elementDtype, bytes: c.bytes(count * elementDtype.size, what), scalar: false };
    }
    if (elementType === KV_STRING) {
      // Each string takes at least its 8-byte length.
      if (count * 8 > c.remaining()) src.fail(`${what}: ${count} strings do not fit in the rest of the file`);
      const out: string[] = [];
      for (let i = 0; i < count; i++) out.push(c.string(`${what}[${i}]`));
      return out;
    }
    if (elementType === KV_ARRAY) src.fail(`${what}: arrays of arrays are not supported (MLX loads one level of nesting)`);
    src.fail(`${what}: unknown array element type ${elementType}`);
  }
  src.fail(`${what}: unknown value type ${type}`);
}

/** Parses and validates the whole header; no tensor data is read. */
export function readGgufHeader(src: ByteSource): GgufContents {
  const c = new Cursor(src);
  if (src.size < 4) src.fail("not a GGUF file (shorter than its magic)");
  const magic = c.u32("the magic");
  if (magic !== MAGIC) src.fail("not a GGUF file (the magic 'GGUF' is missing)");
  const version = c.u32("the version");
  if (version === 0x03000000 || version === 0x02000000) src.fail("big-endian GGUF files are not supported");
  if (version !== 2 && version !== 3) src.fail(`GGUF version ${version} is not supported (2 and 3 are)`);
  const tensorCount = c.u64("the tensor count");
  const kvCount = c.u64("the metadata count");
  // Each key-value takes at least 12 bytes, each tensor info at least 24.
  if (kvCount * 12 + tensorCount * 24 > c.remaining()) {
    src.fail(`${tensorCount} tensors and ${kvCount} metadata entries cannot fit in a ${src.size}-byte file`);
  }
  const metadata = new Map<string, RawValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = c.string(`metadata key ${i}`);
    const type = c.u32(`metadata '${key}': its type`);
    if (metadata.has(key)) src.fail(`metadata '${key}' appears twice`);
    metadata.set(key, readValue(c, src, type, key, 0));
  }
  let alignment = DEFAULT_ALIGNMENT;
  const align = metadata.get("general.alignment");
  if (align !== undefined) {
    if (typeof align === "string" || Array.isArray(align) || !align.scalar || align.dtype !== uint32) {
      src.fail("metadata 'general.alignment' must be a uint32");
    }
    alignment = new DataView(align.bytes.buffer).getUint32(0, true);
    if (alignment === 0 || (alignment & (alignment - 1)) !== 0) src.fail(`general.alignment ${alignment} is not a power of two`);
  }
  const infos: { name: string; ne: number[]; type: number; offset: number }[] = [];
  const names = new Set<string>();
  for (let i = 0; i < tensorCount; i++) {
    const name = c.string(`tensor ${i}'s name`);
    const what = `tensor '${name}'`;
    if (names.has(name)) src.fail(`${what} appears twice`);
    names.add(name);
    const nDims = c.u32(`${what}: its dimension count`);
    if (nDims > MAX_DIMS) src.fail(`${what} has ${nDims} dimensions (at most ${MAX_DIMS})`);
    const ne: number[] = [];
    for (let d = 0; d < nDims; d++) {
      const n = c.u64(`${what}: dimension ${d}`);
      if (n > MAX_DIMENSION) src.fail(`${what}: dimension ${n} exceeds 2^31 - 1`);
      ne.push(n);
    }
    const type = c.u32(`${what}: its type`);
    const offset = c.u64(`${what}: its offset`);
    infos.push({ name, ne, type, offset });
  }
  const dataStart = Math.ceil(c.pos / alignment) * alignment;
  const tensors: TensorInfo[] = [];
  for (const { name, ne, type, offset } of infos) {
    const shape = [...ne].reverse();
    const plain = PLAIN.get(type);
    const quant = QUANT.get(type);
    const typeName = plain?.name ?? quant?.name ?? UNSUPPORTED.get(type) ?? `type ${type}`;
    const what = describeTensor(name, shape, typeName);
    if (!plain && !quant) {
      src.fail(`${what}: ${typeName} is not supported (F32, F16, BF16, F64, I8-I64, Q4_0, Q4_1, Q8_0, Q2_K, Q4_K, Q6_K` +
        " load; MLX 0.32.4 reads no others)");
    }
    let elements = 1;
    for (const n of ne) {
      elements *= n;
      if (elements > src.size * 8) src.fail(`${what} has more elements than the file could hold`);
    }
    if (ne.includes(0)) elements = 0;
    let bytes: number;
    if (plain) bytes = elements * plain.dtype.size;
    else {
      const q = quant!;
      if ((ne[0] ?? 1) % q.blockElements !== 0) {
        src.fail(`${what}: its innermost dimension ${ne[0] ?? 1} is not a multiple of the ${q.name} block (${q.blockElements})`);
      }
      bytes = (elements / q.blockElements) * q.blockBytes;
    }
    const at = dataStart + offset;
    if (at + bytes > src.size) {
      src.fail(`${what}: its ${bytes} bytes at offset ${at} extend past the end of the file (${src.size} bytes); ` +
        "the file is truncated or corrupt");
    }
    tensors.push({ name, shape, typeName, plain: plain?.dtype, quant, offset: at, bytes });
  }
  const byStart = tensors.filter((t) => t.bytes > 0).sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < byStart.length; i++) {
    const a = byStart[i - 1]!;
    const b = byStart[i]!;
    if (b.offset < a.offset + a.bytes) src.fail(`tensor '${b.name}' at offset ${b.offset} overlaps tensor '${a.name}'`);
  }
  return { metadata, tensors };
}

/** Bytes of whole blocks converted per step, so a large quantized tensor never needs a full-size copy. */
const QUANT_CHUNK_BYTES = 16 << 20;

function loadQuantized(src: ByteSource, t: TensorInfo, stream: Stream, out: Record<string, MgArray>, made: MgArray[]): void {
  const q = t.quant!;
  const what = describeTensor(t.name, t.shape, q.name);
  const blocks = t.bytes / q.blockBytes;
  const chunkBlocks = Math.max(1, Math.floor(QUANT_CHUNK_BYTES / q.blockBytes));
  const raw = new Uint8Array(Math.min(blocks, chunkBlocks) * q.blockBytes);
  const lead = t.shape.slice(0, -1);
  const last = t.shape[t.shape.length - 1] ?? 1;
  if (q.bits === 0) {
    const { array, bytes } = newArray(t.shape, float16, stream);
    made.push(array);
    const values = new Float16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
    for (let b = 0; b < blocks; b += chunkBlocks) {
      const n = Math.min(chunkBlocks, blocks - b);
      const part = raw.subarray(0, n * q.blockBytes);
      src.readInto(part, t.offset + b * q.blockBytes, what);
      dequantizeBlocks(q, part, n, values.subarray(b * q.blockElements, (b + n) * q.blockElements));
    }
    setEntry(out, t.name, array);
    traceIo("load:gguf", q.name, float16, "contiguous", () => [
      `tensor '${t.name}': ${q.name} dequantized to float16 (values computed in float32), as MLX loads quantization ` +
        "types it has no kernels for",
    ], "float32 dequantization, rounded to float16");
    return;
  }
  // MLX's names: a "<base>.weight" tensor gives <base>.weight, <base>.scales and <base>.biases.
  const base = t.name.endsWith(".weight") ? t.name.slice(0, -".weight".length) : t.name;
  const names = [t.name, `${base}.scales`, `${base}.biases`];
  for (const n of names.slice(1)) {
    if (Object.hasOwn(out, n)) src.fail(`${what}: its ${n} would replace the tensor of that name`);
  }
  const wordsPerBlock = q.bits === 4 ? 4 : 8;
  const w = newArray([...lead, (last * q.bits) / 32], uint32, stream);
  made.push(w.array);
  const s = newArray([...lead, last / 32], float16, stream);
  made.push(s.array);
  const bias = newArray([...lead, last / 32], float16, stream);
  made.push(bias.array);
  const words = new Uint32Array(w.bytes.buffer, w.bytes.byteOffset, w.bytes.byteLength / 4);
  const scales = new Uint16Array(s.bytes.buffer, s.bytes.byteOffset, s.bytes.byteLength / 2);
  const biases = new Uint16Array(bias.bytes.buffer, bias.bytes.byteOffset, bias.bytes.byteLength / 2);
  for (let b = 0; b < blocks; b += chunkBlocks) {
    const n = Math.min(chunkBlocks, blocks - b);
    const part = raw.subarray(0, n * q.blockBytes);
    src.readInto(part, t.offset + b * q.blockBytes, what);
    repackBlocks(q, part, n, words.subarray(b * wordsPerBlock, (b + n) * wordsPerBlock), scales.subarray(b, b + n),
      biases.subarray(b, b + n));
  }
  setEntry(out, names[0]!, w.array);
  setEntry(out, names[1]!, s.array);
  setEntry(out, names[2]!, bias.array);
  traceIo("load:gguf", q.name, uint32, "contiguous", () => [
    `tensor '${t.name}': ${q.name} repacked into MLX's ${q.bits}-bit affine quantization (group size 32): ` +
      `${names.join(", ")}`,
  ], Precision.exact);
}

function materialize(value: RawValue, stream: Stream): GgufMetadataValue {
  if (typeof value === "string" || Array.isArray(value)) return value;
  const n = value.bytes.byteLength / value.dtype.size;
  const { array, bytes } = newArray(value.scalar ? [] : [n], value.dtype, stream);
  bytes.set(value.bytes);
  // GGUF booleans are bytes; any nonzero byte is true.
  if (value.dtype === bool_) for (let i = 0; i < bytes.length; i++) bytes[i] = bytes[i] ? 1 : 0;
  return array;
}

export function loadGguf(
  src: ByteSource, stream: Stream, withMetadata: boolean,
): [Record<string, MgArray>, Record<string, GgufMetadataValue>] {
  const { metadata, tensors } = readGgufHeader(src);
  const out: Record<string, MgArray> = {};
  const made: MgArray[] = [];
  const meta: Record<string, GgufMetadataValue> = {};
  try {
    // Plain tensors: allocated together (small ones share buffers) and read together at the end, in
    // one native call over I/O threads.
    const plain = tensors.filter((t) => !t.quant);
    const arrays = newArrays(plain.map((t) => ({ name: t.name, shape: t.shape, dtype: t.plain! })), stream, "load:gguf");
    for (const a of arrays) made.push(a.array);
    let next = 0;
    const regions: ReadRegion[] = [];
    for (const t of tensors) {
      if (Object.hasOwn(out, t.name)) src.fail(`tensor '${t.name}' collides with a quantized tensor's scales or biases`);
      if (t.quant) {
        loadQuantized(src, t, stream, out, made);
        continue;
      }
      const dtype = t.plain!;
      const { array, bytes } = arrays[next++]!;
      regions.push({ dst: bytes, position: t.offset, what: describeTensor(t.name, t.shape, t.typeName) });
      setEntry(out, t.name, array);
      traceIo("load:gguf", t.typeName, dtype, "contiguous", () => [
        `tensor '${t.name}': read ${t.bytes} bytes from offset ${t.offset} into a native buffer (one copy)`,
      ]);
    }
    src.readRegions(regions);
    if (withMetadata) {
      for (const [k, v] of metadata) {
        const value = materialize(v, stream);
        if (value instanceof MgArray) made.push(value);
        setEntry(meta, k, value);
      }
    }
  } catch (e) {
    disposeAll(made);
    throw e;
  }
  return [out, meta];
}

// ---------------------------------------------------------------------------------------------
// Writing

class Bytes {
  private parts: Uint8Array[] = [];
  length = 0;
  private readonly encoder = new TextEncoder();
  push(b: Uint8Array): void {
    this.parts.push(b);
    this.length += b.length;
  }
  u32(v: number): void {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, v, true);
    this.push(b);
  }
  u64(v: number | bigint): void {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, BigInt(v), true);
    this.push(b);
  }
  string(s: string): void {
    const b = this.encoder.encode(s);
    this.u64(b.length);
    this.push(b);
  }
  join(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

/** What saveGguf accepts as a metadata value (JS numbers follow the literal rule: int32 or float32). */
export type GgufMetadataInput = MgArray | string | readonly string[] | number | boolean | bigint;

function encodeValue(out: Bytes, key: string, v: GgufMetadataInput, op: string): void {
  if (typeof v === "string") {
    out.u32(KV_STRING);
    out.string(v);
    return;
  }
  if (Array.isArray(v)) {
    if (!v.every((s) => typeof s === "string")) throw new TypeError(`[${op}] metadata '${key}': a list must hold only strings.`);
    out.u32(KV_ARRAY);
    out.u32(KV_STRING);
    out.u64(v.length);
    for (const s of v as string[]) out.string(s);
    return;
  }
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") {
    const b = new Uint8Array(8);
    const view = new DataView(b.buffer);
    if (typeof v === "boolean") {
      out.u32(7);
      out.push(new Uint8Array([v ? 1 : 0]));
    } else if (typeof v === "bigint") {
      out.u32(11);
      view.setBigInt64(0, v, true);
      out.push(b);
    } else if (Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31) {
      out.u32(5);
      view.setInt32(0, v, true);
      out.push(b.subarray(0, 4));
    } else {
      out.u32(6);
      view.setFloat32(0, v, true);
      out.push(b.subarray(0, 4));
    }
    return;
  }
  if (!(v instanceof MgArray)) {
    throw new TypeError(`[${op}] metadata '${key}' must be an array, a string, a list of strings, a number, a boolean or a bigint.`);
  }
  const type = KV_TYPE_OF.get(v.dtype);
  if (type === undefined) throw new TypeError(`[${op}] metadata '${key}': dtype ${v.dtype.name} cannot be stored in GGUF metadata.`);
  if (v.ndim > 1) throw new TypeError(`[${op}] metadata '${key}': arrays with more than one dimension cannot be saved.`);
  const data = arrayBytes(v, op, false);
  try {
    if (v.ndim === 0) out.u32(type);
    else {
      out.u32(KV_ARRAY);
      out.u32(type);
      out.u64(v.size);
    }
    out.push(data.bytes.slice());
  } finally {
    data.done();
  }
}

export function writeGguf(
  sink: FileSink, arrays: Record<string, MgArray>, metadata: Record<string, GgufMetadataInput>, op: string,
): void {
  const entries = Object.entries(arrays);
  for (const [name, a] of entries) {
    if (!(a instanceof MgArray)) throw new TypeError(`[${op}] '${name}' is not an array.`);
    if (!SAVE_TYPES.has(a.dtype)) {
      throw new TypeError(`[${op}] dtype ${a.dtype.name} of '${name}' is not supported (float32, float16, bfloat16, float64, int8-int64).`);
    }
  }
  const head = new Bytes();
  head.u32(MAGIC);
  head.u32(3);
  head.u64(entries.length);
  head.u64(Object.keys(metadata).length);
  for (const [key, v] of Object.entries(metadata)) {
    head.string(key);
    encodeValue(head, key, v, op);
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const [name, a] of entries) {
    head.string(name);
    head.u32(a.ndim);
    for (let d = a.ndim - 1; d >= 0; d--) head.u64(a.shape[d]!);
    head.u32(SAVE_TYPES.get(a.dtype)!);
    head.u64(offset);
    offsets.push(offset);
    offset += Math.ceil(a.nbytes / DEFAULT_ALIGNMENT) * DEFAULT_ALIGNMENT;
  }
  const pad = (n: number) => new Uint8Array((DEFAULT_ALIGNMENT - (n % DEFAULT_ALIGNMENT)) % DEFAULT_ALIGNMENT);
  head.push(pad(head.length));
  sink.write(head.join());
  for (const [name, a] of entries) {
    const data = arrayBytes(a, op, false);
    try {
      sink.write(data.bytes);
      sink.write(pad(a.nbytes));
    } finally {
      data.done();
    }
    traceIo("save:gguf", a.dtype.name, a.dtype, "contiguous", () => [`tensor '${name}' ${formatShape(a.shape)}: wrote ${a.nbytes} bytes`]);
  }
}
