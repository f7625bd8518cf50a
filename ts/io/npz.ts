// .npz: a zip archive of .npy files, one per array, named `<key>.npy`. Stored entries are read
// straight from the file into each array's buffer; deflated ones are inflated first (one entry at
// a time, never the whole archive).
import type { MgArray } from "../core/array.ts";
import type { Stream } from "../core/device.ts";
import { arrayBytes, disposeAll, setEntry } from "./arrays.ts";
import { type ByteSource, type FileSink, MemorySource, SliceSource } from "./file.ts";
import { loadNpy, npyHeader, readNpyHeader } from "./npy.ts";
import { crc32, readZipDirectory, readZipEntry, ZipWriter } from "./zip.ts";

export function loadNpz(src: ByteSource, file: string, stream: Stream): Record<string, MgArray> {
  const entries = readZipDirectory(src);
  const out: Record<string, MgArray> = {};
  const made: MgArray[] = [];
  try {
    for (const entry of entries) {
      if (!entry.name.endsWith(".npy")) src.fail(`entry '${entry.name}' is not an .npy array`);
      const key = entry.name.slice(0, -4);
      if (Object.hasOwn(out, key)) src.fail(`entry '${entry.name}' appears twice`);
      let array: MgArray;
      if (entry.method === 0) {
        const part = new SliceSource(src, entry.dataOffset, entry.size, `entry '${entry.name}'`);
        const header = readNpyHeader(part);
        // The CRC covers header, data and anything after: checked on the bytes as read.
        array = loadNpy(part, stream, "load:npz", header, (data) => {
          let crc = crc32(part.read(0, header.dataOffset, "the .npy header"));
          crc = crc32(data, crc);
          const after = entry.size - header.dataOffset - header.dataBytes;
          if (after > 0) crc = crc32(part.read(header.dataOffset + header.dataBytes, after, "bytes after the data"), crc);
          if (crc !== entry.crc32) part.fail("CRC-32 mismatch (the data is corrupt)");
        });
        made.push(array);
      } else {
        const bytes = readZipEntry(src, entry);
        array = loadNpy(new MemorySource(file, bytes, `entry '${entry.name}'`), stream, "load:npz");
        made.push(array);
      }
      setEntry(out, key, array);
    }
  } catch (e) {
    disposeAll(made);
    throw e;
  }
  return out;
}

/** Writes `arrays` as an .npz (deflated when `compress`). */
export function writeNpz(sink: FileSink, arrays: Record<string, MgArray>, compress: boolean, op: string, zip64Above?: number): void {
  const zip = new ZipWriter(sink, zip64Above);
  for (const [key, a] of Object.entries(arrays)) {
    const data = arrayBytes(a, op, true);
    try {
      zip.add(`${key}.npy`, [npyHeader(a.dtype, a.shape, data.fortran), data.bytes], compress);
    } finally {
      data.done();
    }
  }
  zip.finish();
}
