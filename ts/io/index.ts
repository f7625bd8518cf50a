// mg.load / mg.save / mg.savez / mg.savezCompressed / mg.saveSafetensors / mg.saveGguf: MLX's
// names and semantics. Loads are eager: every tensor is read once, straight from the file into its
// array's native buffer (all of a file's tensors in one native call over I/O threads), and the
// arrays come back evaluated.
import { MgArray } from "../core/array.ts";
import { resolveStream, type StreamOrDevice } from "../core/device.ts";
import { isOptionsObject } from "../core/ops/convert.ts";
import { callSpec, normalizeCall, publicFunction } from "../core/options.ts";
import { type FileArg, filePath, LoadError, withExtension, withSink, withSource } from "./file.ts";
import { type GgufMetadataInput, type GgufMetadataValue, loadGguf, writeGguf } from "./gguf.ts";
import { loadNpy, npyHeader } from "./npy.ts";
import { loadNpz, writeNpz } from "./npz.ts";
import { loadSafetensors, writeSafetensors } from "./safetensors.ts";
import { arrayBytes, setEntry, traceIo } from "./arrays.ts";

export type { FileArg } from "./file.ts";
export { LoadError } from "./file.ts";
export type { GgufMetadataInput, GgufMetadataValue } from "./gguf.ts";

/** The formats load reads: npy, npz, safetensors, gguf. */
export type LoadFormat = "npy" | "npz" | "safetensors" | "gguf";
const FORMATS: readonly LoadFormat[] = ["npy", "npz", "safetensors", "gguf"];

/** load's options: format, returnMetadata, stream. */
export interface LoadOptions {
  format?: LoadFormat | null;
  returnMetadata?: boolean;
  stream?: StreamOrDevice | null;
}

/** Metadata as mx.load returns it: strings for safetensors; arrays, strings or string lists for GGUF. */
export type Metadata = Record<string, string | GgufMetadataValue>;
/** What load returns: an array (npy), a dict of arrays, or [arrays, metadata]. */
export type LoadResult = MgArray | Record<string, MgArray> | [Record<string, MgArray>, Metadata];

function inferFormat(path: string): LoadFormat {
  const base = path.slice(path.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  if (dot <= 0) {
    throw new LoadError(path, `cannot tell the format from the file name; pass one of ${FORMATS.join(", ")} as format`);
  }
  const ext = base.slice(dot + 1);
  if (!(FORMATS as readonly string[]).includes(ext)) {
    throw new LoadError(path, `unknown file format '${ext}' (supported: ${FORMATS.join(", ")})`);
  }
  return ext as LoadFormat;
}

/**
 * Loads arrays from a file, as mx.load: an array for .npy, a dict for .npz, .safetensors and
 * .gguf, and `[arrays, metadata]` with `returnMetadata` (safetensors and GGUF only). The format
 * comes from the extension unless given. A corrupt, truncated or hostile file is a
 * `[load] <file>: …` error naming what is wrong, checked before anything is allocated. Tensors
 * under 1 MiB share buffers of at most 16 MiB, each freed with the last of its arrays (traced).
 * @example
 * (mg.save("/tmp/mg-doc-example.npy", mg.array([1, 2])), mg.load("/tmp/mg-doc-example.npy"))
 */
function loadImpl(file: FileArg, format: "npy", returnMetadata?: false | null, opts?: LoadOptions): MgArray;
function loadImpl(file: FileArg, format: "npz", returnMetadata?: false | null, opts?: LoadOptions): Record<string, MgArray>;
function loadImpl(file: FileArg, format: LoadFormat | null | undefined, returnMetadata: true, opts?: LoadOptions): [Record<string, MgArray>, Metadata];
function loadImpl(file: FileArg, opts: LoadOptions & { returnMetadata: true }): [Record<string, MgArray>, Metadata];
function loadImpl(file: FileArg, ...rest: unknown[]): LoadResult;
function loadImpl(...args: unknown[]): LoadResult {
  // MLX's load(file, /, format=None, return_metadata=False, *, stream), through the options helper.
  const call = normalizeCall(callSpec("load")!, args);
  const positional = call.slice(0, 3);
  const options = (call.length > 3 ? call[3] : {}) as LoadOptions;
  const path = filePath(positional[0], "load");
  const formatArg = positional[1];
  if (formatArg !== undefined && formatArg !== null && !(FORMATS as readonly unknown[]).includes(formatArg)) {
    throw new TypeError(`[load] Unknown file format ${String(formatArg)} (supported: ${FORMATS.join(", ")}).`);
  }
  const format = (formatArg as LoadFormat | null | undefined) ?? inferFormat(path);
  const returnMetadata = positional[2] ?? false;
  if (typeof returnMetadata !== "boolean") throw new TypeError(`[load] returnMetadata must be a boolean, got ${typeof returnMetadata}.`);
  const stream = resolveStream(options.stream as StreamOrDevice | null | undefined);
  if (returnMetadata && (format === "npy" || format === "npz")) {
    throw new LoadError(path, `metadata not supported for format ${format}`);
  }
  return withSource(path, (src): LoadResult => {
    switch (format) {
      case "npy":
        return loadNpy(src, stream);
      case "npz":
        return loadNpz(src, path, stream);
      case "safetensors": {
        const [arrays, metadata] = loadSafetensors(src, stream);
        return returnMetadata ? [arrays, metadata] : arrays;
      }
      case "gguf": {
        const [arrays, metadata] = loadGguf(src, stream, returnMetadata);
        return returnMetadata ? [arrays, metadata] : arrays;
      }
    }
  });
}

function checkArray(op: string, what: string, a: unknown): MgArray {
  if (!(a instanceof MgArray)) throw new TypeError(`[${op}] ${what} must be an array, got ${a === null ? "null" : typeof a}.`);
  a.checkUsable(op);
  return a;
}

function checkArrays(op: string, arrays: unknown): Record<string, MgArray> {
  if (!isOptionsObject(arrays)) throw new TypeError(`[${op}] arrays must be an object mapping names to arrays.`);
  for (const [k, v] of Object.entries(arrays)) checkArray(op, `'${k}'`, v);
  return arrays as Record<string, MgArray>;
}

/**
 * Saves an array as .npy (".npy" is appended to the name unless present), as mx.save.
 * @example
 * mg.save("/tmp/mg-doc-example.npy", mg.arange(3))
 */
function saveImpl(file: FileArg, arr: MgArray): void {
  const path = withExtension(filePath(file, "save"), ".npy");
  const a = checkArray("save", "arr", arr);
  const data = arrayBytes(a, "save", true);
  try {
    withSink(path, "save", (sink) => {
      sink.write(npyHeader(a.dtype, a.shape, data.fortran));
      sink.write(data.bytes);
    });
  } finally {
    data.done();
  }
  traceIo("save:npy", a.dtype.name, a.dtype, data.fortran ? "column-major (Fortran order)" : "contiguous", () => [
    `wrote ${a.nbytes} bytes from the array's buffer`,
  ]);
}

function savezImpl(op: string, compress: boolean, args: unknown[]): void {
  if (args.length === 0) throw new TypeError(`[${op}] expected a file name.`);
  const path = withExtension(filePath(args[0], op), ".npz");
  const rest = args.slice(1);
  const named = rest.length > 0 && isOptionsObject(rest[rest.length - 1]) ? (rest.pop() as Record<string, unknown>) : {};
  const arrays: Record<string, MgArray> = {};
  rest.forEach((a, i) => {
    setEntry(arrays, `arr_${i}`, checkArray(op, `argument ${i + 1}`, a));
  });
  for (const [k, v] of Object.entries(named)) {
    if (Object.hasOwn(arrays, k)) throw new TypeError(`[${op}] Cannot use un-named variables and keyword ${k}.`);
    setEntry(arrays, k, checkArray(op, `'${k}'`, v));
  }
  withSink(path, op, (sink) => writeNpz(sink, arrays, compress, op));
}

/**
 * Saves arrays as an uncompressed .npz, as mx.savez: positional arrays are named arr_0, arr_1, …;
 * a trailing object adds named ones (MLX's keyword arguments).
 * @example
 * mg.savez("/tmp/mg-doc-example.npz", { w: mg.ones([2]), b: mg.zeros([1]) })
 */
function savezImpl2(file: FileArg, ...args: (MgArray | Record<string, MgArray>)[]): void {
  savezImpl("savez", false, [file, ...args]);
}

/**
 * As savez, with every entry deflate-compressed (mx.savez_compressed).
 * @example
 * mg.savezCompressed("/tmp/mg-doc-example-z.npz", { w: mg.ones([2]) })
 */
function savezCompressedImpl(file: FileArg, ...args: (MgArray | Record<string, MgArray>)[]): void {
  savezImpl("savez_compressed", true, [file, ...args]);
}

/**
 * Saves arrays (and string metadata) as .safetensors, as mx.save_safetensors.
 * @example
 * mg.saveSafetensors("/tmp/mg-doc-example.safetensors", { w: mg.ones([2]) }, { metadata: { author: "me" } })
 */
function saveSafetensorsImpl(file: FileArg, arrays: Record<string, MgArray>, metadata?: Record<string, string> | null): void {
  const path = withExtension(filePath(file, "save_safetensors"), ".safetensors");
  const checked = checkArrays("save_safetensors", arrays);
  const meta = metadata ?? {};
  if (!isOptionsObject(meta)) throw new TypeError("[save_safetensors] metadata must be an object of strings.");
  for (const [k, v] of Object.entries(meta)) {
    if (typeof v !== "string") throw new TypeError(`[save_safetensors] metadata '${k}' must be a string, got ${typeof v}.`);
  }
  withSink(path, "save_safetensors", (sink) => writeSafetensors(sink, checked, meta, "save_safetensors"));
}

/**
 * Saves arrays as .gguf, as mx.save_gguf. Metadata values: arrays (0-d or 1-d), strings, lists of
 * strings, and JS numbers/booleans/bigints (int32 or float32, bool, int64 by the literal rule).
 * @example
 * mg.saveGguf("/tmp/mg-doc-example.gguf", { w: mg.ones([2]) })
 */
function saveGgufImpl(file: FileArg, arrays: Record<string, MgArray>, metadata?: Record<string, GgufMetadataInput> | null): void {
  const path = withExtension(filePath(file, "save_gguf"), ".gguf");
  const checked = checkArrays("save_gguf", arrays);
  const meta = metadata ?? {};
  if (!isOptionsObject(meta)) throw new TypeError("[save_gguf] metadata must be an object.");
  withSink(path, "save_gguf", (sink) => writeGguf(sink, checked, meta, "save_gguf"));
}

// Library calls (ts/core/ownership.ts): a loaded array belongs to the caller; a contiguous copy made
// for saving is internal and freed at once.
export const load = publicFunction("load", loadImpl);
export const save = publicFunction("save", saveImpl);
export const savez = publicFunction("savez", savezImpl2);
export const savezCompressed = publicFunction("savezCompressed", savezCompressedImpl);
export const saveSafetensors = publicFunction("saveSafetensors", saveSafetensorsImpl);
export const saveGguf = publicFunction("saveGguf", saveGgufImpl);
