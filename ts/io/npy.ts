// The .npy format (numpy's NEP 1): a magic string, a version, a header that is a Python dict
// literal ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }), then the raw elements.
// Both byte orders and both memory orders load; bfloat16 travels as '<V2', as MLX writes it.
import {
  bfloat16, bool_, complex64, type Dtype, float16, float32, float64, int16, int32, int64, int8, uint16, uint32, uint64,
  uint8,
} from "../core/dtype.ts";
import type { MgArray } from "../core/array.ts";
import type { Stream } from "../core/device.ts";
import { formatShape } from "../core/shape.ts";
import { byteSize, MAX_DIMENSION, newArray, traceIo } from "./arrays.ts";
import type { ByteSource } from "./file.ts";

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY
/** numpy itself refuses headers over 10 kB by default; this only bounds what a corrupt length asks for. */
const MAX_HEADER_BYTES = 1 << 20;

/** numpy's type code (after the byte-order character) for each dtype. */
const TYPE_CODES: ReadonlyMap<Dtype, string> = new Map([
  [bool_, "b1"], [uint8, "u1"], [uint16, "u2"], [uint32, "u4"], [uint64, "u8"],
  [int8, "i1"], [int16, "i2"], [int32, "i4"], [int64, "i8"],
  [float16, "f2"], [float32, "f4"], [float64, "f8"], [complex64, "c8"], [bfloat16, "V2"],
]);
const DTYPES_BY_CODE: ReadonlyMap<string, Dtype> = new Map([...TYPE_CODES].map(([d, c]) => [c, d]));

export interface NpyHeader {
  dtype: Dtype;
  /** The descr string as written ('<f4'). */
  descr: string;
  shape: number[];
  fortran: boolean;
  /** Multi-byte elements stored most significant byte first. */
  bigEndian: boolean;
  /** Where the elements start. */
  dataOffset: number;
  /** Bytes of element data. */
  dataBytes: number;
}

// ---------------------------------------------------------------------------------------------
// Reading

/** Parses and validates the header; the elements must fit in the source. */
export function readNpyHeader(src: ByteSource, what = "the .npy header"): NpyHeader {
  if (src.size < 10) src.fail(`${what} is truncated: the file has ${src.size} bytes, fewer than the 10 of a .npy preamble`);
  const pre = src.read(0, Math.min(src.size, 12), what);
  for (let i = 0; i < MAGIC.length; i++) {
    if (pre[i] !== MAGIC[i]) src.fail(`${what}: not a .npy file (the magic string \\x93NUMPY is missing)`);
  }
  const major = pre[6]!;
  let headerLength: number;
  let start: number;
  if (major === 1) {
    headerLength = pre[8]! | (pre[9]! << 8);
    start = 10;
  } else if (major === 2 || major === 3) {
    if (pre.length < 12) src.fail(`${what} is truncated (version ${major} needs a 12-byte preamble)`);
    headerLength = (pre[8]! | (pre[9]! << 8) | (pre[10]! << 16)) + pre[11]! * 2 ** 24;
    start = 12;
  } else {
    src.fail(`${what}: unsupported .npy format version ${major}.${pre[7]} (1.0, 2.0 and 3.0 are supported)`);
  }
  if (headerLength > MAX_HEADER_BYTES) src.fail(`${what} claims ${headerLength} bytes, more than the ${MAX_HEADER_BYTES} allowed`);
  const raw = src.read(start, headerLength, what);
  const text = major === 3 ? new TextDecoder("utf-8", { fatal: false }).decode(raw) : latin1(raw);
  const dict = parseHeaderDict(text, (m) => src.fail(`${what}: ${m}`));
  const descr = dict.get("descr");
  const fortran = dict.get("fortran_order");
  const shape = dict.get("shape");
  const keys = [...dict.keys()].sort().join(", ");
  if (keys !== "descr, fortran_order, shape") {
    src.fail(`${what}: expected the keys descr, fortran_order and shape, found ${keys || "none"}`);
  }
  if (typeof descr !== "string") src.fail(`${what}: descr ${describeValue(descr)} is not supported (structured dtypes cannot be loaded)`);
  if (typeof fortran !== "boolean") src.fail(`${what}: fortran_order must be True or False, got ${describeValue(fortran)}`);
  if (!Array.isArray(shape) || !shape.every((d) => typeof d === "number")) {
    src.fail(`${what}: shape must be a tuple of integers, got ${describeValue(shape)}`);
  }
  const dims = shape as number[];
  for (const d of dims) {
    if (d < 0 || d > MAX_DIMENSION) src.fail(`${what}: dimension ${d} of shape ${formatShape(dims)} is outside [0, 2^31 - 1]`);
  }
  const { dtype, bigEndian } = parseDescr(descr, (m) => src.fail(`${what}: ${m}`));
  const dataOffset = start + headerLength;
  const dataBytes = byteSize(dims, dtype.size);
  if (dataBytes === null || dataOffset + dataBytes > src.size) {
    src.fail(`shape ${formatShape(dims)} of ${descr} needs ${dataBytes ?? "over 2^53"} bytes after the ${dataOffset}-byte header, ` +
      `but only ${Math.max(0, src.size - dataOffset)} follow; the file is truncated or its header is corrupt`);
  }
  return { dtype, descr, shape: dims, fortran, bigEndian, dataOffset, dataBytes };
}

function parseDescr(descr: string, fail: (m: string) => never): { dtype: Dtype; bigEndian: boolean } {
  const order = descr[0];
  const code = "<>|=".includes(order ?? "") ? descr.slice(1) : descr;
  const dtype = DTYPES_BY_CODE.get(code);
  if (!dtype) fail(`dtype '${descr}' is not supported (bool, [u]int8..64, float16/32/64, complex64, and '<V2' for bfloat16)`);
  // '|' (not applicable) and '=' (native: little on every platform metalgrad runs on) read as-is.
  return { dtype, bigEndian: order === ">" && dtype.size > 1 };
}

/**
 * Loads one .npy from `src` into a new array. `check` sees the element bytes as the file holds
 * them (before any byte swap): an archive verifies its checksum there.
 */
export function loadNpy(
  src: ByteSource, stream: Stream, kernel = "load:npy", header = readNpyHeader(src), check?: (bytes: Uint8Array) => void,
): MgArray {
  const { array, bytes } = newArray(header.shape, header.dtype, stream, header.fortran ? "F" : "C");
  try {
    src.readRegions([{ dst: bytes, position: header.dataOffset, what: `the ${header.descr} data of shape ${formatShape(header.shape)}` }]);
    check?.(bytes);
  } catch (e) {
    array.dispose();
    throw e;
  }
  if (header.bigEndian) swapBytes(bytes, header.dtype === complex64 ? 4 : header.dtype.size);
  traceIo(kernel, header.descr, header.dtype, header.fortran ? "column-major (Fortran order): a view, not a copy" : "contiguous", () => [
    `read ${header.dataBytes} bytes from offset ${header.dataOffset} into a native buffer (one copy)`,
    ...(header.bigEndian ? [`byte-swapped from big-endian ${header.descr}`] : []),
  ]);
  return array;
}

/** Reverses the bytes of each `width`-byte word in place. */
export function swapBytes(bytes: Uint8Array, width: number): void {
  if (width === 1) return;
  const aligned = bytes.byteOffset % width === 0 && bytes.byteLength % width === 0;
  if (aligned && width === 2) {
    const w = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
    for (let i = 0; i < w.length; i++) {
      const v = w[i]!;
      w[i] = ((v & 0xff) << 8) | (v >>> 8);
    }
    return;
  }
  if (aligned && (width === 4 || width === 8)) {
    const w = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    for (let i = 0; i < w.length; i++) {
      const v = w[i]!;
      w[i] = ((v & 0xff) << 24) | ((v & 0xff00) << 8) | ((v >>> 8) & 0xff00) | (v >>> 24);
    }
    if (width === 8) {
      for (let i = 0; i < w.length; i += 2) {
        const t = w[i]!;
        w[i] = w[i + 1]!;
        w[i + 1] = t;
      }
    }
    return;
  }
  for (let i = 0; i + width <= bytes.length; i += width) bytes.subarray(i, i + width).reverse();
}

function latin1(raw: Uint8Array): string {
  let s = "";
  for (let i = 0; i < raw.length; i += 8192) s += String.fromCharCode(...raw.subarray(i, i + 8192));
  return s;
}

// ---------------------------------------------------------------------------------------------
// The header dict: a Python literal of strings, booleans, integers, None, tuples, lists and dicts.

type PyValue = string | number | boolean | null | PyValue[] | Map<string, PyValue>;

function describeValue(v: unknown): string {
  if (v instanceof Map) return "a dict";
  if (Array.isArray(v)) return `[${v.map(describeValue).join(", ")}]`;
  return typeof v === "string" ? `'${v}'` : String(v);
}

/** Parses the header's dict literal (what numpy's safe_eval accepts, minus what no .npy uses). */
export function parseHeaderDict(text: string, fail: (m: string) => never): Map<string, PyValue> {
  let i = 0;
  const skip = () => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++;
  };
  const expect = (c: string) => {
    skip();
    if (text[i] !== c) fail(`malformed header: expected '${c}' at character ${i} of ${JSON.stringify(text.slice(0, 200))}`);
    i++;
  };
  let depth = 0;
  const value = (): PyValue => {
    skip();
    const c = text[i];
    if (c === undefined) fail("malformed header: it ends inside a value");
    if (c === "'" || c === '"') return str();
    if (c === "{" || c === "(" || c === "[") {
      if (++depth > 32) fail("malformed header: nested too deeply");
      const v = c === "{" ? dict() : list(c === "(" ? ")" : "]");
      depth--;
      return v;
    }
    const m = /^(-?\d+|True|False|None)/.exec(text.slice(i, i + 40));
    if (!m) fail(`malformed header: unexpected ${JSON.stringify(text.slice(i, i + 20))} at character ${i}`);
    i += m[0].length;
    if (m[0] === "True") return true;
    if (m[0] === "False") return false;
    if (m[0] === "None") return null;
    const n = Number(m[0]);
    if (!Number.isSafeInteger(n)) fail(`integer ${m[0]} is too large`);
    return n;
  };
  const str = (): string => {
    const q = text[i++];
    let out = "";
    while (i < text.length && text[i] !== q) {
      if (text[i] === "\\") i++;
      out += text[i++] ?? "";
    }
    if (text[i] !== q) fail("malformed header: unterminated string");
    i++;
    return out;
  };
  const list = (close: string): PyValue[] => {
    i++;
    const out: PyValue[] = [];
    for (;;) {
      skip();
      if (text[i] === close) {
        i++;
        return out;
      }
      out.push(value());
      skip();
      if (text[i] === ",") i++;
      else if (text[i] !== close) fail(`malformed header: expected ',' or '${close}' at character ${i}`);
    }
  };
  const dict = (): Map<string, PyValue> => {
    i++;
    const out = new Map<string, PyValue>();
    for (;;) {
      skip();
      if (text[i] === "}") {
        i++;
        return out;
      }
      const k = value();
      if (typeof k !== "string") fail(`malformed header: dict key ${describeValue(k)} is not a string`);
      expect(":");
      if (out.has(k)) fail(`malformed header: key '${k}' appears twice`);
      out.set(k, value());
      skip();
      if (text[i] === ",") i++;
      else if (text[i] !== "}") fail(`malformed header: expected ',' or '}' at character ${i}`);
    }
  };
  skip();
  if (text[i] !== "{") fail(`malformed header: it must be a dict literal, got ${JSON.stringify(text.slice(0, 60))}`);
  const d = value() as Map<string, PyValue>;
  skip();
  if (i !== text.length) fail(`malformed header: unexpected ${JSON.stringify(text.slice(i, i + 20))} after the dict`);
  return d;
}

// ---------------------------------------------------------------------------------------------
// Writing

/** The .npy header for `dtype`/`shape` (version 1.0, or 2.0 when it needs more than 64 KiB),
 *  padded with spaces so the data starts on a 64-byte boundary, as numpy writes it. */
export function npyHeader(dtype: Dtype, shape: readonly number[], fortran: boolean): Uint8Array {
  const code = TYPE_CODES.get(dtype);
  if (code === undefined) throw new Error(`[save] dtype ${dtype.name} has no .npy encoding`);
  const descr = `${dtype.size === 1 && dtype !== bfloat16 ? "|" : "<"}${code}`;
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
  const dict = `{'descr': '${descr}', 'fortran_order': ${fortran ? "True" : "False"}, 'shape': ${shapeText}, }`;
  let version = 1;
  let pre = 10;
  let total = Math.ceil((pre + dict.length + 1) / 64) * 64;
  if (total - pre > 0xffff) {
    version = 2;
    pre = 12;
    total = Math.ceil((pre + dict.length + 1) / 64) * 64;
  }
  const headerLength = total - pre;
  const out = new Uint8Array(total);
  out.set(MAGIC);
  out[6] = version;
  out[7] = 0;
  const view = new DataView(out.buffer);
  if (version === 1) view.setUint16(8, headerLength, true);
  else view.setUint32(8, headerLength, true);
  out.set(new TextEncoder().encode(dict.padEnd(headerLength - 1, " ") + "\n"), pre);
  return out;
}
