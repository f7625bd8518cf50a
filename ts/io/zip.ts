// The ZIP container of .npz files: reading the central directory (with ZIP64, as numpy writes large
// entries), and writing stored or deflated entries. Only what .npz needs: no encryption, no
// multi-disk archives, methods 0 (stored) and 8 (deflate).
import zlib from "node:zlib";
import type { ByteSource, FileSink } from "./file.ts";

const EOCD = 0x06054b50;
const EOCD64 = 0x06064b50;
const EOCD64_LOCATOR = 0x07064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const U32_MAX = 0xffffffff;
/** Deflate expands at most ~1032:1; a larger claimed size is a corrupt (or hostile) entry. */
const MAX_DEFLATE_RATIO = 1032;
/** A central directory larger than this is not an .npz (each entry costs ~50 bytes). */
const MAX_CENTRAL_DIRECTORY = 1 << 30;

export interface ZipEntry {
  name: string;
  method: number;
  crc32: number;
  compressedSize: number;
  size: number;
  /** Where the entry's data (after its local header) starts. */
  dataOffset: number;
}

function u16(b: Uint8Array, at: number): number {
  return b[at]! | (b[at + 1]! << 8);
}
function u32(b: Uint8Array, at: number): number {
  return (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16)) + b[at + 3]! * 0x1000000;
}
function u64(b: Uint8Array, at: number, fail: (m: string) => never, what: string): number {
  const hi = u32(b, at + 4);
  if (hi >= 0x200000) fail(`${what} ${hi} * 2^32 is beyond any file`);
  return u32(b, at) + hi * 2 ** 32;
}

/** The archive's entries, validated against the file: every entry's data lies inside it. */
export function readZipDirectory(src: ByteSource): ZipEntry[] {
  const fail = (m: string): never => src.fail(m);
  if (src.size < 22) fail(`not a zip archive (${src.size} bytes, fewer than an end-of-central-directory record)`);
  // The end record is the last thing in the file, followed by a comment of up to 64 KiB.
  const tailLength = Math.min(src.size, 22 + 0xffff);
  const tailStart = src.size - tailLength;
  const tail = src.read(tailStart, tailLength, "the end of the zip archive");
  let at = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (u32(tail, i) === EOCD && i + 22 + u16(tail, i + 20) === tail.length) {
      at = i;
      break;
    }
  }
  if (at < 0) fail("not a zip archive (no end-of-central-directory record)");
  let count = u16(tail, at + 10);
  let cdSize = u32(tail, at + 12);
  let cdOffset = u32(tail, at + 16);
  if (u16(tail, at + 4) !== 0 || u16(tail, at + 6) !== 0) fail("multi-disk zip archives are not supported");
  let cdEnd = tailStart + at;
  if (count === 0xffff || cdSize === U32_MAX || cdOffset === U32_MAX) {
    // ZIP64: a locator right before the end record points at the 64-bit end record.
    const locAt = tailStart + at - 20;
    if (locAt < 0) fail("the ZIP64 end-of-central-directory locator is missing");
    const loc = src.read(locAt, 20, "the ZIP64 locator");
    if (u32(loc, 0) !== EOCD64_LOCATOR) fail("the ZIP64 end-of-central-directory locator is missing");
    const recAt = u64(loc, 8, fail, "the ZIP64 record offset");
    const rec = src.read(recAt, 56, "the ZIP64 end-of-central-directory record");
    if (u32(rec, 0) !== EOCD64) fail("the ZIP64 end-of-central-directory record is corrupt");
    count = u64(rec, 32, fail, "the entry count");
    cdSize = u64(rec, 40, fail, "the central directory size");
    cdOffset = u64(rec, 48, fail, "the central directory offset");
    cdEnd = recAt;
  }
  if (cdSize > MAX_CENTRAL_DIRECTORY || cdOffset + cdSize > cdEnd) {
    fail(`the central directory (${cdSize} bytes at ${cdOffset}) does not fit before its end record at ${cdEnd}`);
  }
  if (count * 46 > cdSize) fail(`${count} entries cannot fit in a ${cdSize}-byte central directory`);
  const cd = src.read(cdOffset, cdSize, "the zip central directory");
  const entries: ZipEntry[] = [];
  const decoder = new TextDecoder("utf-8", { fatal: false });
  let p = 0;
  for (let k = 0; k < count; k++) {
    if (p + 46 > cd.length || u32(cd, p) !== CENTRAL) fail(`central directory entry ${k} is corrupt`);
    const flags = u16(cd, p + 8);
    const method = u16(cd, p + 10);
    const crc32 = u32(cd, p + 16);
    let compressedSize = u32(cd, p + 20);
    let size = u32(cd, p + 24);
    const nameLength = u16(cd, p + 28);
    const extraLength = u16(cd, p + 30);
    const commentLength = u16(cd, p + 32);
    let localOffset = u32(cd, p + 42);
    const next = p + 46 + nameLength + extraLength + commentLength;
    if (next > cd.length) fail(`central directory entry ${k} runs past the directory`);
    const name = decoder.decode(cd.subarray(p + 46, p + 46 + nameLength));
    const what = `entry '${name}'`;
    // ZIP64 extra field: the 64-bit values of exactly the fields set to 0xFFFFFFFF, in this order.
    let e = p + 46 + nameLength;
    const extraEnd = e + extraLength;
    while (e + 4 <= extraEnd) {
      const id = u16(cd, e);
      const len = u16(cd, e + 2);
      if (e + 4 + len > extraEnd) fail(`${what}: its extra field is corrupt`);
      if (id === 1) {
        let q = e + 4;
        const take = (field: string): number => {
          if (q + 8 > e + 4 + len) fail(`${what}: the ZIP64 extra field lacks the ${field}`);
          const v = u64(cd, q, fail, `${what}: ${field}`);
          q += 8;
          return v;
        };
        if (size === U32_MAX) size = take("size");
        if (compressedSize === U32_MAX) compressedSize = take("compressed size");
        if (localOffset === U32_MAX) localOffset = take("local header offset");
      }
      e += 4 + len;
    }
    if (flags & 1) fail(`${what} is encrypted`);
    if (method !== 0 && method !== 8) fail(`${what} uses compression method ${method} (only stored and deflate are supported)`);
    if (method === 0 && size !== compressedSize) fail(`${what} is stored but its sizes differ (${compressedSize} vs ${size})`);
    if (method === 8 && size > compressedSize * MAX_DEFLATE_RATIO + 1024) {
      fail(`${what} claims to inflate ${compressedSize} bytes to ${size}, beyond what deflate can`);
    }
    const local = src.read(localOffset, 30, `${what}: its local header`);
    if (u32(local, 0) !== LOCAL) fail(`${what}: no local header at offset ${localOffset}`);
    const dataOffset = localOffset + 30 + u16(local, 26) + u16(local, 28);
    if (dataOffset + compressedSize > cdOffset) {
      fail(`${what}: its ${compressedSize} bytes at ${dataOffset} run into the central directory at ${cdOffset}`);
    }
    entries.push({ name, method, crc32, compressedSize, size, dataOffset });
    p = next;
  }
  return entries;
}

/** CRC-32 (zip's), continuing from `crc`. */
export function crc32(bytes: Uint8Array, crc = 0): number {
  return zlib.crc32(bytes, crc) >>> 0;
}

/** An entry's bytes, inflated when compressed; the CRC and size are checked. */
export function readZipEntry(src: ByteSource, entry: ZipEntry): Uint8Array {
  const what = `entry '${entry.name}'`;
  const raw = src.read(entry.dataOffset, entry.compressedSize, `${what}: its data`);
  let data: Uint8Array = raw;
  if (entry.method === 8) {
    try {
      data = zlib.inflateRawSync(raw, { maxOutputLength: Math.max(1, entry.size) });
    } catch (e) {
      src.fail(`${what}: the deflate stream is corrupt or longer than the ${entry.size} bytes the directory says ` +
        `(${(e as Error).message})`);
    }
  }
  if (data.byteLength !== entry.size) src.fail(`${what}: inflated to ${data.byteLength} bytes, the directory says ${entry.size}`);
  if (crc32(data) !== entry.crc32) src.fail(`${what}: CRC-32 mismatch (the data is corrupt)`);
  return data;
}

// ---------------------------------------------------------------------------------------------
// Writing

interface WrittenEntry {
  name: Uint8Array;
  method: number;
  crc32: number;
  compressedSize: number;
  size: number;
  localOffset: number;
}

/** DOS date and time of now (zip's timestamp format). */
function dosDateTime(): [number, number] {
  const d = new Date();
  const time = (d.getHours() << 11) | (d.getMinutes() << 5) | (d.getSeconds() >> 1);
  const date = (Math.max(0, d.getFullYear() - 1980) << 9) | ((d.getMonth() + 1) << 5) | d.getDate();
  return [time, date];
}

/**
 * Writes a zip archive entry by entry. ZIP64 records are used for what does not fit 32 bits
 * (`zip64Above` lowers the threshold so tests can exercise them on small files).
 */
export class ZipWriter {
  private readonly entries: WrittenEntry[] = [];
  private readonly time: number;
  private readonly date: number;

  constructor(private readonly sink: FileSink, private readonly zip64Above = U32_MAX - 1) {
    [this.time, this.date] = dosDateTime();
  }

  private big(n: number): boolean {
    return n > this.zip64Above;
  }

  /** Adds an entry whose uncompressed content is `parts` in order (written from where they lie). */
  add(name: string, parts: readonly Uint8Array[], compress: boolean): void {
    const nameBytes = new TextEncoder().encode(name);
    let size = 0;
    let crc = 0;
    for (const p of parts) {
      size += p.byteLength;
      crc = crc32(p, crc);
    }
    let payload: readonly Uint8Array[] = parts;
    let compressedSize = size;
    if (compress) {
      const joined = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
      const deflated = zlib.deflateRawSync(joined);
      payload = [deflated];
      compressedSize = deflated.byteLength;
    }
    const localOffset = this.sink.position;
    const zip64 = this.big(size) || this.big(compressedSize);
    const header = new Uint8Array(30 + nameBytes.length + (zip64 ? 20 : 0));
    const v = new DataView(header.buffer);
    v.setUint32(0, LOCAL, true);
    v.setUint16(4, zip64 ? 45 : 20, true);
    v.setUint16(6, 0x800, true); // names are UTF-8
    v.setUint16(8, compress ? 8 : 0, true);
    v.setUint16(10, this.time, true);
    v.setUint16(12, this.date, true);
    v.setUint32(14, crc, true);
    v.setUint32(18, zip64 ? U32_MAX : compressedSize, true);
    v.setUint32(22, zip64 ? U32_MAX : size, true);
    v.setUint16(26, nameBytes.length, true);
    v.setUint16(28, zip64 ? 20 : 0, true);
    header.set(nameBytes, 30);
    if (zip64) {
      const x = 30 + nameBytes.length;
      v.setUint16(x, 1, true);
      v.setUint16(x + 2, 16, true);
      v.setBigUint64(x + 4, BigInt(size), true);
      v.setBigUint64(x + 12, BigInt(compressedSize), true);
    }
    this.sink.write(header);
    for (const p of payload) this.sink.write(p);
    this.entries.push({ name: nameBytes, method: compress ? 8 : 0, crc32: crc, compressedSize, size, localOffset });
  }

  /** Writes the central directory and end records. */
  finish(): void {
    const cdOffset = this.sink.position;
    for (const e of this.entries) {
      const sizes = this.big(e.size) || this.big(e.compressedSize);
      const offset64 = this.big(e.localOffset);
      const extra = (sizes ? 16 : 0) + (offset64 ? 8 : 0);
      const rec = new Uint8Array(46 + e.name.length + (extra ? 4 + extra : 0));
      const v = new DataView(rec.buffer);
      v.setUint32(0, CENTRAL, true);
      v.setUint16(4, (3 << 8) | 45, true); // made by Unix, zip 4.5
      v.setUint16(6, extra ? 45 : 20, true);
      v.setUint16(8, 0x800, true);
      v.setUint16(10, e.method, true);
      v.setUint16(12, this.time, true);
      v.setUint16(14, this.date, true);
      v.setUint32(16, e.crc32, true);
      v.setUint32(20, sizes ? U32_MAX : e.compressedSize, true);
      v.setUint32(24, sizes ? U32_MAX : e.size, true);
      v.setUint16(28, e.name.length, true);
      v.setUint16(30, extra ? 4 + extra : 0, true);
      v.setUint32(38, 0o100644 * 0x10000, true); // a regular file, rw-r--r--
      v.setUint32(42, offset64 ? U32_MAX : e.localOffset, true);
      rec.set(e.name, 46);
      if (extra) {
        let x = 46 + e.name.length;
        v.setUint16(x, 1, true);
        v.setUint16(x + 2, extra, true);
        x += 4;
        if (sizes) {
          v.setBigUint64(x, BigInt(e.size), true);
          v.setBigUint64(x + 8, BigInt(e.compressedSize), true);
          x += 16;
        }
        if (offset64) v.setBigUint64(x, BigInt(e.localOffset), true);
      }
      this.sink.write(rec);
    }
    const cdSize = this.sink.position - cdOffset;
    const n = this.entries.length;
    const zip64 = n >= 0xffff || this.big(cdOffset) || this.big(cdSize);
    if (zip64) {
      const recAt = this.sink.position;
      const rec = new Uint8Array(56 + 20);
      const v = new DataView(rec.buffer);
      v.setUint32(0, EOCD64, true);
      v.setBigUint64(4, 44n, true);
      v.setUint16(12, (3 << 8) | 45, true);
      v.setUint16(14, 45, true);
      v.setBigUint64(24, BigInt(n), true);
      v.setBigUint64(32, BigInt(n), true);
      v.setBigUint64(40, BigInt(cdSize), true);
      v.setBigUint64(48, BigInt(cdOffset), true);
      v.setUint32(56, EOCD64_LOCATOR, true);
      v.setBigUint64(64, BigInt(recAt), true);
      v.setUint32(72, 1, true);
      this.sink.write(rec);
    }
    const end = new Uint8Array(22);
    const v = new DataView(end.buffer);
    v.setUint32(0, EOCD, true);
    v.setUint16(8, zip64 ? 0xffff : n, true);
    v.setUint16(10, zip64 ? 0xffff : n, true);
    v.setUint32(12, zip64 ? U32_MAX : cdSize, true);
    v.setUint32(16, zip64 ? U32_MAX : cdOffset, true);
    this.sink.write(end);
  }
}
