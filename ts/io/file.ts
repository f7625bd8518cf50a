// File access for the loaders and writers: names given as strings or Bun files, positioned reads
// straight into the destination (never a whole-file JS buffer), and errors tagged with the file.
import { dlopen, FFIType, ptr } from "bun:ffi";
import { closeSync, fstatSync, openSync, readSync, renameSync, rmSync, writeSync } from "node:fs";
import { tryRuntime } from "../backend/runtime.ts";

/** mg_cpu_read_file (Sources/MGCpu/io.cpp), bound on its own: binding all the CPU kernels costs a first load ~40 ms. */
function openReader() {
  const rt = tryRuntime();
  if (rt === null) return null;
  return dlopen(rt.libraryPath, {
    mg_cpu_read_file: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
    mg_cpu_last_error: { args: [], returns: FFIType.cstring },
  }).symbols;
}
let reader: ReturnType<typeof openReader> | undefined;

/** A file name, or a Bun file (`Bun.file(path)`) naming one. */
export type FileArg = string | { readonly name?: string };

/** The path a file argument names; `op` tags the error. */
export function filePath(file: unknown, op: string): string {
  if (typeof file === "string") {
    if (file.length === 0) throw new TypeError(`[${op}] the file name is empty.`);
    return file;
  }
  if (file instanceof Blob) {
    const name = (file as { name?: unknown }).name;
    if (typeof name === "string" && name.length > 0) return name;
    throw new TypeError(`[${op}] this Bun file has no path (only files made with Bun.file(path) can be used).`);
  }
  throw new TypeError(`[${op}] expected a file name or a Bun file, got ${file === null ? "null" : typeof file}.`);
}

/**
 * The error every loader throws: `[load] <file>: <what went wrong>`.
 * @example
 * (() => { try { mg.load("/tmp/mg-doc-missing.npy"); } catch (e) { return (e as Error).name; } })()
 */
export class LoadError extends Error {
  constructor(readonly file: string, detail: string) {
    super(`[load] ${file}: ${detail}`);
    this.name = "LoadError";
  }
}

/**
 * Positioned, range-checked bytes: a file, a region of one (an npz entry stored uncompressed) or
 * memory (an inflated npz entry). Errors name the file and, inside an archive, the entry.
 */
export interface ByteSource {
  readonly size: number;
  fail(detail: string): never;
  checkRange(position: number, length: number, what: string): void;
  readInto(dst: Uint8Array, position: number, what: string): void;
  /** Fills every region's `dst` from its `position`: one call for all of a file's tensors. */
  readRegions(regions: readonly ReadRegion[]): void;
  read(position: number, length: number, what: string): Uint8Array;
}

/** A destination and where its bytes are in a source; `what` names it in errors. */
export interface ReadRegion {
  dst: Uint8Array;
  position: number;
  what: string;
}

/** Reads each region in turn (sources without a file descriptor). */
function readEach(src: ByteSource, regions: readonly ReadRegion[]): void {
  for (const r of regions) src.readInto(r.dst, r.position, r.what);
}

/** Reads below this size in one call; larger reads are split so no single call asks for > 1 GiB. */
const MAX_READ = 1 << 30;
/** A single region smaller than this is read by readSync (no descriptor to build, no threads to start). */
const NATIVE_READ_MIN = 1 << 20;

/**
 * An open file for reading. Every read is positioned and range-checked against the size the file
 * had when opened, so a corrupt offset is an error naming what was being read, never a short read
 * silently padded.
 */
export class FileSource implements ByteSource {
  private fd: number;
  readonly size: number;

  private constructor(readonly name: string, fd: number, size: number) {
    this.fd = fd;
    this.size = size;
  }

  static open(name: string): FileSource {
    let fd: number;
    try {
      fd = openSync(name, "r");
    } catch (e) {
      throw new LoadError(name, `cannot open the file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    const stat = fstatSync(fd);
    if (!stat.isFile()) {
      closeSync(fd);
      throw new LoadError(name, "is not a regular file");
    }
    return new FileSource(name, fd, stat.size);
  }

  fail(detail: string): never {
    throw new LoadError(this.name, detail);
  }

  /** Checks that [position, position + length) lies inside the file. */
  checkRange(position: number, length: number, what: string): void {
    if (!Number.isSafeInteger(position) || !Number.isSafeInteger(length) || position < 0 || length < 0 ||
      position + length > this.size) {
      this.fail(`${what} (bytes ${position}..${position + length}) lies past the end of the file (${this.size} bytes); ` +
        "the file is truncated or corrupt");
    }
  }

  /** Fills `dst` from `position`. */
  readInto(dst: Uint8Array, position: number, what: string): void {
    this.checkRange(position, dst.byteLength, what);
    let done = 0;
    while (done < dst.byteLength) {
      const n = Math.min(dst.byteLength - done, MAX_READ);
      let got: number;
      try {
        got = readSync(this.fd, dst, done, n, position + done);
      } catch (e) {
        this.fail(`reading ${what}: ${(e as Error).message}`);
      }
      if (got === 0) this.fail(`${what} ends early: the file shrank while it was read`);
      done += got;
    }
  }

  /**
   * Fills every region in one native call that splits the reads over I/O threads (a read from the
   * page cache is a copy; one thread leaves the other cores idle). Every range is checked first;
   * without the native runtime the regions are read in turn.
   */
  readRegions(regions: readonly ReadRegion[]): void {
    let bytes = 0;
    for (const r of regions) {
      this.checkRange(r.position, r.dst.byteLength, r.what);
      bytes += r.dst.byteLength;
    }
    if (regions.length === 0 || bytes === 0) return;
    if (regions.length === 1 && bytes < NATIVE_READ_MIN) return readEach(this, regions);
    if (reader === undefined) reader = openReader();
    const lib = reader;
    if (lib === null) return readEach(this, regions);
    const desc = new Float64Array(2 + 3 * regions.length);
    desc[0] = this.fd;
    desc[1] = regions.length;
    let w = 2;
    for (const r of regions) {
      // ptr() of a live view, used at once (never cached: bun-ffi-notes).
      desc[w++] = r.dst.byteLength > 0 ? ptr(r.dst) : 0;
      desc[w++] = r.position;
      desc[w++] = r.dst.byteLength;
    }
    if (lib.mg_cpu_read_file(desc, desc.length) === 0) return;
    const failed = regions[desc[0]!];
    if (failed === undefined) throw new Error(String(lib.mg_cpu_last_error()));
    if (desc[1] === 0) this.fail(`${failed.what} ends early: the file shrank while it was read`);
    this.fail(`reading ${failed.what}: ${String(lib.mg_cpu_last_error()).replace(/^\[mg_cpu_read_file\] region \d+: /, "")}`);
  }

  /** A fresh buffer with `length` bytes from `position` (headers and small records only). */
  read(position: number, length: number, what: string): Uint8Array {
    this.checkRange(position, length, what);
    const out = new Uint8Array(length);
    this.readInto(out, position, what);
    return out;
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

/** `length` bytes of `outer` from `base`, addressed from 0; errors say which part (`label`). */
export class SliceSource implements ByteSource {
  constructor(private readonly outer: ByteSource, private readonly base: number, readonly size: number, private readonly label: string) {}

  fail(detail: string): never {
    return this.outer.fail(`${this.label}: ${detail}`);
  }

  checkRange(position: number, length: number, what: string): void {
    if (!Number.isSafeInteger(position) || !Number.isSafeInteger(length) || position < 0 || length < 0 ||
      position + length > this.size) {
      this.fail(`${what} (bytes ${position}..${position + length}) lies past the end (${this.size} bytes); ` +
        "the data is truncated or corrupt");
    }
  }

  readInto(dst: Uint8Array, position: number, what: string): void {
    this.checkRange(position, dst.byteLength, what);
    this.outer.readInto(dst, this.base + position, `${this.label}: ${what}`);
  }

  readRegions(regions: readonly ReadRegion[]): void {
    for (const r of regions) this.checkRange(r.position, r.dst.byteLength, r.what);
    this.outer.readRegions(regions.map((r) => ({ dst: r.dst, position: this.base + r.position, what: `${this.label}: ${r.what}` })));
  }

  read(position: number, length: number, what: string): Uint8Array {
    this.checkRange(position, length, what);
    return this.outer.read(this.base + position, length, `${this.label}: ${what}`);
  }
}

/** Bytes in memory (an inflated archive entry) as a source. */
export class MemorySource implements ByteSource {
  constructor(private readonly file: string, private readonly data: Uint8Array, private readonly label: string) {}

  get size(): number {
    return this.data.byteLength;
  }

  fail(detail: string): never {
    throw new LoadError(this.file, `${this.label}: ${detail}`);
  }

  checkRange(position: number, length: number, what: string): void {
    if (!Number.isSafeInteger(position) || !Number.isSafeInteger(length) || position < 0 || length < 0 ||
      position + length > this.size) {
      this.fail(`${what} (bytes ${position}..${position + length}) lies past the end (${this.size} bytes); ` +
        "the data is truncated or corrupt");
    }
  }

  readInto(dst: Uint8Array, position: number, what: string): void {
    this.checkRange(position, dst.byteLength, what);
    dst.set(this.data.subarray(position, position + dst.byteLength));
  }

  readRegions(regions: readonly ReadRegion[]): void {
    readEach(this, regions);
  }

  read(position: number, length: number, what: string): Uint8Array {
    this.checkRange(position, length, what);
    return this.data.slice(position, position + length);
  }
}

/** Opens `name`, runs `fn`, and closes the file whatever happens. */
export function withSource<T>(name: string, fn: (src: FileSource) => T): T {
  const src = FileSource.open(name);
  try {
    return fn(src);
  } finally {
    src.close();
  }
}

/**
 * A file being written: bytes go to a temporary file beside the target, renamed over it once
 * everything is written, so a failed save never leaves a truncated file under the real name.
 */
export class FileSink {
  private fd: number;
  private readonly temp: string;
  /** Bytes written so far (the next write's position). */
  position = 0;

  constructor(readonly name: string, readonly op: string) {
    this.temp = `${name}.partial-${process.pid}`;
    try {
      this.fd = openSync(this.temp, "w");
    } catch (e) {
      throw new Error(`[${op}] ${name}: cannot create the file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  }

  /** Appends `bytes` (read straight from wherever they live: no copy). */
  write(bytes: Uint8Array): void {
    let done = 0;
    while (done < bytes.byteLength) {
      const n = Math.min(bytes.byteLength - done, MAX_READ);
      done += writeSync(this.fd, bytes, done, n, this.position + done);
    }
    this.position += bytes.byteLength;
  }

  /** Overwrites bytes already written (a header patched once sizes are known). */
  writeAt(bytes: Uint8Array, position: number): void {
    let done = 0;
    while (done < bytes.byteLength) done += writeSync(this.fd, bytes, done, bytes.byteLength - done, position + done);
  }

  finish(): void {
    closeSync(this.fd);
    this.fd = -1;
    renameSync(this.temp, this.name);
  }

  abandon(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
    rmSync(this.temp, { force: true });
  }
}

/** Writes a file through a FileSink: finished on success, removed on failure. */
export function withSink(name: string, op: string, fn: (sink: FileSink) => void): void {
  const sink = new FileSink(name, op);
  try {
    fn(sink);
    sink.finish();
  } catch (e) {
    sink.abandon();
    throw e;
  }
}

/** Appends `ext` unless `name` already ends with it (MLX's rule for save, savez, …). */
export function withExtension(name: string, ext: string): string {
  return name.endsWith(ext) ? name : `${name}${ext}`;
}
