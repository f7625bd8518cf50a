// The native runtime through its TypeScript binding: device facts, buffers and views, libraries and
// pipelines, command batches (validation, barriers, one FFI call per batch), queues, errors.
import { describe, expect, test } from "bun:test";
import { ptr, type Pointer } from "bun:ffi";
import {
  loadNative,
  Pipeline,
  Runtime,
  runtime,
  type NativeBuffer,
  type NativeLibrary,
  type NativeSymbols,
} from "../../ts/backend/runtime.ts";
import { synchronize } from "../../ts/backend/gpu/index.ts";

const rt = runtime();

/** Counters hold still: earlier files' GPU batches (which hold buffers until done) finished and
 *  their garbage freed. A collected buffer's deallocator runs on a later turn of the event loop,
 *  not inside Bun.gc, so this waits until the live count stops moving (with --no-isolate, earlier
 *  files' garbage was otherwise freed in the middle of a later test, one buffer off). */
async function quiet(): Promise<void> {
  synchronize();
  let last = -1;
  for (let i = 0; i < 50; i++) {
    Bun.gc(true);
    await Bun.sleep(1);
    const live = rt.memoryStats().liveBuffers;
    if (live === last) return;
    last = live;
  }
}

const KERNELS = `
#include <metal_stdlib>
using namespace metal;

[[kernel]] void fill(device float* out [[buffer(0)]],
                     constant float& value [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
  out[i] = value;
}

[[kernel]] void increment(device float* x [[buffer(0)]],
                          uint i [[thread_position_in_grid]]) {
  x[i] += 1.0f;
}

[[kernel]] void add_one(device const float* a [[buffer(0)]],
                        device float* b [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
  b[i] = a[i] + 1.0f;
}

[[kernel]] void write_past_end(device float* out [[buffer(0)]],
                               uint i [[thread_position_in_grid]]) {
  out[i + 1] = 1.0f;
}
`;

const lib = rt.library(KERNELS);
const fill = lib.pipeline("fill");
const increment = lib.pipeline("increment");
const addOne = lib.pipeline("add_one");

function floats(buffer: NativeBuffer): Float32Array {
  return buffer.as(Float32Array);
}

/** Fills `count` floats of `out` with `value` on the GPU and waits. */
function gpuFill(out: NativeBuffer, value: number, count = out.byteLength / 4): void {
  rt.newBatch()
    .dispatch({
      pipeline: fill,
      buffers: [{ index: 0, buffer: out, access: "write" }],
      bytes: [{ index: 1, data: new Float32Array([value]) }],
      grid: count,
      threadgroup: Math.min(count, 256),
    })
    .submit()
    .wait();
}

describe("device", () => {
  test("facts are consistent with the architecture string", () => {
    const d = rt.device;
    expect(d.name.length).toBeGreaterThan(0);
    const match = /(\d\d)(.)$/.exec(d.architecture);
    if (match) {
      expect(d.generation).toBe(Number(match[1]));
      expect(d.sizeClass).toBe(match[2]!);
    } else {
      // No generation in the string: hosted macOS runners' "Apple Paravirtual device" (air64_v27).
      expect(d.architecture).toMatch(/^air64/);
      expect([d.generation, d.sizeClass]).toEqual([0, ""]);
    }
    expect(d.appleFamily).toBeGreaterThanOrEqual(1);
    expect(d.supportsSimdgroupMatrix).toBe(d.appleFamily >= 7);
    const table: Record<string, [number, number]> = { p: [20, 40], g: [40, 40], s: [50, 50], d: [50, 50] };
    const [ops, mb] = table[d.sizeClass] ?? [40, 40];
    if (!process.env.MG_MAX_OPS_PER_BUFFER) expect(d.maxOpsPerCommandBuffer).toBe(ops);
    if (!process.env.MG_MAX_MB_PER_BUFFER) expect(d.maxMBPerCommandBuffer).toBe(mb);
    expect(d.maxThreadsPerThreadgroup).toHaveLength(3);
    expect(d.maxThreadsPerThreadgroup[0]).toBeGreaterThanOrEqual(256);
    expect(d.recommendedMaxWorkingSetSize).toBeGreaterThan(0);
    expect(d.maxBufferLength).toBeGreaterThan(0);
    expect(d.hasUnifiedMemory).toBe(true);
  });

  test.if(rt.device.isSimulator)("the simulator presents itself honestly", () => {
    expect(rt.device.name).toBe("metalgrad Metal simulator");
    if (!process.env.MG_GPU_ARCH) expect(rt.device.architecture).toBe("applegpu_g15s");
    const stats = rt.simulatorStats();
    expect(stats.simulator).toBe(true);
    expect(typeof stats.compilerInvocations).toBe("number");
    expect(typeof stats.dispatches).toBe("number");
  });

  test.if(rt.device.isSimulator)("a paravirtual device (as hosted macOS runners expose) is accepted and reports what it lacks", () => {
    const code = `import { runtime } from ${JSON.stringify(`${import.meta.dir}/../../ts/backend/runtime.ts`)};
      console.log(JSON.stringify(runtime().device));`;
    const r = Bun.spawnSync([process.execPath, "-e", code], { env: { ...process.env, MG_GPU_ARCH: "air64_v27", MG_TRACE: undefined }, stdout: "pipe", stderr: "pipe" });
    expect(r.stderr.toString()).toBe("");
    const d = JSON.parse(r.stdout.toString());
    expect(d).toMatchObject({ architecture: "air64_v27", generation: 0, sizeClass: "", appleFamily: 5, supportsSimdgroupMatrix: false, supportsAtomicFloat: false });
    expect([d.maxOpsPerCommandBuffer, d.maxMBPerCommandBuffer]).toEqual([40, 40]);
  });

  test("the library path was found", () => {
    expect(rt.libraryPath).toMatch(/libMetalGradRuntime\.(so|dylib)$/);
  });
});

describe("buffers", () => {
  test("a buffer's view is its memory, stable and zero-copy", () => {
    const b = rt.newBuffer(64);
    const a1 = b.arrayBuffer;
    expect(b.arrayBuffer).toBe(a1); // created once
    expect(a1.byteLength).toBe(64);
    floats(b).set([1, 2, 3]);
    expect(Array.from(new Float32Array(b.arrayBuffer, 0, 3))).toEqual([1, 2, 3]);
    expect(rt.native.mg_buffer_length(b.handle)).toBe(64);
    b.release();
    b.release(); // idempotent
    expect(b.released).toBe(true);
    expect(() => b.arrayBuffer).toThrow(/was released/);
  });

  test("zero-byte buffers are valid handles without memory", async () => {
    await quiet();
    const before = rt.memoryStats();
    const b = rt.newBuffer(0);
    expect(b.byteLength).toBe(0);
    expect(b.arrayBuffer.byteLength).toBe(0);
    expect(rt.memoryStats().liveBuffers).toBe(before.liveBuffers + 1);
    expect(rt.memoryStats().active).toBe(before.active);
    b.release();
    expect(rt.memoryStats().liveBuffers).toBe(before.liveBuffers);
  });

  test("bad sizes and bad handles are errors, not crashes", () => {
    expect(() => rt.newBuffer(-1)).toThrow(/\[mg_buffer_new\].*non-negative integer/);
    expect(() => rt.newBuffer(1.5)).toThrow(/\[mg_buffer_new\]/);
    expect(() => rt.newBuffer(Number.NaN)).toThrow(/\[mg_buffer_new\]/);
    expect(() => rt.newBuffer(rt.device.maxBufferLength + 1)).toThrow(/maximum buffer length/);
    // A buffer-kind handle whose serial was never issued (serials are handle >> 3, counting up from 1).
    expect(rt.native.mg_buffer_release((2 ** 50 * 8 + 1) as Pointer)).toBe(1);
    expect(String(rt.native.mg_last_error())).toMatch(/\[mg_buffer_release\] unknown buffer handle/);
    expect(rt.native.mg_buffer_length(null)).toBe(-1);
    expect(String(rt.native.mg_last_error())).toMatch(/\[mg_buffer_length\] null buffer handle/);
  });

  test("the handle table keeps every live handle and forgets released ones through random churn", () => {
    // HandleTable.swift deletes by backward shift: random orders of creation and release (with the
    // view deallocator called directly, which is what removes a record) exercise every case.
    let seed = 12345;
    const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const live: { handle: Pointer; size: number }[] = [];
    const gone: Pointer[] = [];
    for (let step = 0; step < 6000; step++) {
      if (live.length === 0 || random() < 0.55) {
        const size = 1 + Math.floor(random() * 64);
        const handle = rt.native.mg_buffer_new(size) as Pointer;
        live.push({ handle, size });
      } else {
        const [b] = live.splice(Math.floor(random() * live.length), 1);
        expect(rt.native.mg_buffer_release(b!.handle)).toBe(0);
        rt.native.mg_buffer_view_release(null, b!.handle); // drops the view pin: the record goes
        gone.push(b!.handle);
      }
      if (step % 500 === 499) {
        for (const b of live) expect(rt.native.mg_buffer_length(b.handle)).toBe(b.size);
        for (const h of gone.slice(-50)) expect(rt.native.mg_buffer_length(h)).toBe(-1);
      }
    }
    for (const b of live) {
      expect(rt.native.mg_buffer_length(b.handle)).toBe(b.size);
      rt.native.mg_buffer_release(b.handle);
      rt.native.mg_buffer_view_release(null, b.handle);
    }
    expect(String((() => { rt.native.mg_buffer_length(gone[0]!); return rt.native.mg_last_error(); })())).toMatch(/was released/);
  });

  test("dropping a buffer without release() frees it through the view's deallocator (GC)", async () => {
    await quiet();
    const before = rt.memoryStats().liveBuffers;
    // Only the handles: the buffers themselves become garbage as soon as this function returns.
    const handles = (() => {
      const h: Pointer[] = [];
      for (let i = 0; i < 8; i++) h.push(rt.newBuffer(4096).handle);
      return h;
    })();
    expect(rt.memoryStats().liveBuffers).toBe(before + 8);
    const freed = () => handles.filter((h) => rt.native.mg_buffer_length(h) === -1).length;
    for (let i = 0; i < 40 && freed() < 8; i++) {
      Bun.gc(true);
      await Bun.sleep(5);
    }
    // Each of the eight handles is gone (a released handle's length is -1), whatever else was freed.
    expect(freed()).toBe(8);
    expect(rt.memoryStats().liveBuffers).toBeLessThanOrEqual(before);
  });

  test("the deallocator also works when called directly, and only once", () => {
    const stats0 = rt.memoryStats();
    const b = rt.newBuffer(256);
    // Simulates the GC: the view deallocator drops the owner since release() was never called.
    rt.native.mg_buffer_view_release(null, b.handle);
    expect(rt.memoryStats().liveBuffers).toBe(stats0.liveBuffers);
    rt.native.mg_buffer_view_release(null, b.handle); // a second call is harmless
    expect(rt.memoryStats().liveBuffers).toBe(stats0.liveBuffers);
  });
});

describe("libraries and pipelines", () => {
  test("libraries are cached by source and options; pipelines by name", () => {
    const compiled = rt.counters().librariesCompiled;
    const again = rt.library(KERNELS);
    expect(again.handle).toBe(lib.handle);
    expect(rt.counters().librariesCompiled).toBe(compiled);
    const relaxed = rt.library(KERNELS, { mathMode: "relaxed" });
    expect(relaxed.handle).not.toBe(lib.handle);
    expect(lib.pipeline("fill")).toBe(fill);
    expect(lib.functionNames).toEqual(["add_one", "fill", "increment", "write_past_end"]);
  });

  test("a pipeline reports its limits", () => {
    expect(fill.name).toBe("fill");
    expect(fill.maxTotalThreadsPerThreadgroup).toBeGreaterThanOrEqual(256);
    expect(fill.maxTotalThreadsPerThreadgroup).toBeLessThanOrEqual(1024);
    expect(fill.threadExecutionWidth).toBe(32);
    expect(fill.staticThreadgroupMemoryLength).toBe(0);
  });

  test("an unknown function name is an error naming it", () => {
    expect(() => lib.pipeline("no_such_kernel")).toThrow(
      /\[mg_pipeline_new\] the library has no function named 'no_such_kernel' \(it has: add_one, fill/,
    );
  });

  test("a compile failure carries the compiler's message", () => {
    const broken = `
#include <metal_stdlib>
using namespace metal;
[[kernel]] void broken(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = not_declared_anywhere;
}`;
    expect(() => rt.library(broken)).toThrow(/\[mg_library_new\] the library failed to compile: .*not_declared_anywhere/s);
    // …and the runtime keeps working.
    const b = rt.newBuffer(16);
    gpuFill(b, 3);
    expect(Array.from(floats(b))).toEqual([3, 3, 3, 3]);
    b.release();
  });

  test("bad options are errors", () => {
    expect(() => rt.library(KERNELS, { languageVersion: 0x12345 })).toThrow(/unknown Metal language version 0x12345/);
    expect(() => rt.library(KERNELS, { mathMode: "turbo" as "fast" })).toThrow(/mathMode/);
    expect(() => rt.library(KERNELS, { macros: { "bad name": 1 } })).toThrow(/bad macro name/);
  });

  test("raw values Metal's open enums would accept are checked by the runtime itself", () => {
    // MTLDataType(rawValue:) never fails on macOS (nor in the shim): the runtime must refuse 9999.
    const lib = rt.library("constant int K [[function_constant(0)]];\n[[kernel]] void k(device int* o [[buffer(0)]]) { o[0] = K; }");
    const words = new Uint32Array([0, 9999, 1, 0]);
    const handle = rt.native.mg_pipeline_new(lib.handle, new TextEncoder().encode("k\0"), words, 1);
    expect(handle).toBeNull();
    expect(String(rt.native.mg_last_error())).toMatch(/function constant 0 has unsupported MTLDataType 9999/);
    expect(() => rt.library(KERNELS, { languageVersion: 0x30003 })).toThrow(/unknown Metal language version 0x30003/);
  });

  test("function constants specialise a pipeline, cached per value", () => {
    const source = `
#include <metal_stdlib>
using namespace metal;
constant int K [[function_constant(0)]];
[[kernel]] void times_k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = float(K) * float(i);
}`;
    const l = rt.library(source);
    const p3 = l.pipeline("times_k", [{ index: 0, type: "int", value: 3 }]);
    const p5 = l.pipeline("times_k", [{ index: 0, type: "int", value: 5 }]);
    expect(p5.handle).not.toBe(p3.handle);
    expect(l.pipeline("times_k", [{ index: 0, type: "int", value: 3 }])).toBe(p3);
    const out = rt.newBuffer(4 * 8);
    const batch = rt.newBatch();
    batch.dispatch({ pipeline: p3, buffers: [{ index: 0, buffer: out, offset: 0, length: 16, access: "write" }], grid: 4, threadgroup: 4 });
    batch.dispatch({ pipeline: p5, buffers: [{ index: 0, buffer: out, offset: 16, length: 16, access: "write" }], grid: 4, threadgroup: 4 });
    batch.submit().wait();
    expect(Array.from(floats(out))).toEqual([0, 3, 6, 9, 0, 5, 10, 15]);
    out.release();
  });
});

describe("command batches", () => {
  test("dispatches run in order with barriers where one reads another's output", () => {
    const x = rt.newBuffer(4 * 100);
    const y = rt.newBuffer(4 * 100);
    const before = rt.counters();
    const batch = rt.newBatch();
    batch.dispatch({
      pipeline: fill,
      buffers: [{ index: 0, buffer: x, access: "write" }],
      bytes: [{ index: 1, data: new Float32Array([41]) }],
      grid: 100,
      threadgroup: 32,
    });
    batch.dispatch({
      pipeline: addOne,
      buffers: [
        { index: 0, buffer: x, access: "read" },
        { index: 1, buffer: y, access: "write" },
      ],
      grid: 100,
      threadgroup: 32,
    });
    batch.dispatch({ pipeline: increment, buffers: [{ index: 0, buffer: y, access: "readwrite" }], grid: 100, threadgroup: 64 });
    const submitted = batch.submit();
    submitted.wait();
    expect(Array.from(floats(y))).toEqual(new Array(100).fill(43));
    const after = rt.counters();
    expect(after.batchesSubmitted - before.batchesSubmitted).toBe(1);
    expect(after.dispatchesEncoded - before.dispatchesEncoded).toBe(3);
    expect(after.memoryBarriers - before.memoryBarriers).toBe(2);
    expect(after.commandBuffersCommitted - before.commandBuffersCommitted).toBe(1);
    const times = submitted.gpuTimes();
    expect(times.end).toBeGreaterThanOrEqual(times.start);
    expect(times.start).toBeGreaterThan(0);
    x.release();
    y.release();
  });

  test("independent dispatches get no barrier; a write after a read does", () => {
    const [a, b, c, d] = [0, 1, 2, 3].map(() => rt.newBuffer(4 * 32)) as [NativeBuffer, NativeBuffer, NativeBuffer, NativeBuffer];
    gpuFill(b, 7);
    const before = rt.counters().memoryBarriers;
    const batch = rt.newBatch();
    const f = (out: NativeBuffer, v: number) =>
      batch.dispatch({ pipeline: fill, buffers: [{ index: 0, buffer: out, access: "write" }], bytes: [{ index: 1, data: new Float32Array([v]) }], grid: 32, threadgroup: 32 });
    const add = (from: NativeBuffer, to: NativeBuffer) =>
      batch.dispatch({ pipeline: addOne, buffers: [{ index: 0, buffer: from, access: "read" }, { index: 1, buffer: to, access: "write" }], grid: 32, threadgroup: 32 });
    f(a, 1); // writes a
    add(b, c); // independent of a: no barrier
    add(a, d); // reads a: barrier
    f(a, 5); // writes a, which the previous dispatch read: barrier
    batch.submit().wait();
    expect(rt.counters().memoryBarriers - before).toBe(2);
    expect(floats(c)[0]).toBe(8);
    expect(floats(d)[31]).toBe(2);
    expect(floats(a)[0]).toBe(5);
    for (const buffer of [a, b, c, d]) buffer.release();
  });

  test("10,000 dispatches go through one FFI call and run in order", () => {
    // Count every native call made through this Runtime instance.
    const base = loadNative();
    const calls = new Map<string, number>();
    const counting = Object.fromEntries(
      Object.entries(base.symbols).map(([name, fn]) => [
        name,
        (...args: unknown[]) => {
          calls.set(name, (calls.get(name) ?? 0) + 1);
          return (fn as (...a: unknown[]) => unknown)(...args);
        },
      ]),
    ) as unknown as NativeSymbols;
    const counted = new Runtime({ path: base.path, symbols: counting } satisfies NativeLibrary);
    const x = counted.newBuffer(4);
    floats(x)[0] = 0;
    const batch = counted.newBatch();
    const pipeline = increment;
    for (let i = 0; i < 10_000; i++) {
      batch.dispatch({ pipeline, buffers: [{ index: 0, buffer: x, access: "readwrite" }], grid: 1, threadgroup: 1 });
    }
    expect(batch.dispatchCount).toBe(10_000);
    const before = counted.counters();
    calls.clear();
    const submitted = batch.submit(counted.defaultQueue);
    expect(calls.get("mg_batch_submit")).toBe(1);
    // One FFI call to submit (plus creating the default queue the first time).
    expect([...calls.keys()].filter((k) => k !== "mg_queue_new")).toEqual(["mg_batch_submit"]);
    submitted.wait(120);
    const after = counted.counters();
    expect(after.batchesSubmitted - before.batchesSubmitted).toBe(1);
    expect(after.dispatchesEncoded - before.dispatchesEncoded).toBe(10_000);
    const perBuffer = counted.device.maxOpsPerCommandBuffer;
    const buffers = Math.ceil(10_000 / perBuffer);
    expect(after.commandBuffersCommitted - before.commandBuffersCommitted).toBe(buffers);
    // Every dispatch but the first of each encoder reads what the previous one wrote.
    expect(after.memoryBarriers - before.memoryBarriers).toBe(10_000 - buffers);
    expect(floats(x)[0]).toBe(10_000);
    x.release();
  });

  test("batches on separate queues both complete; poll() and done() work", async () => {
    const q1 = rt.newQueue();
    const q2 = rt.newQueue();
    expect(q1.handle).not.toBe(q2.handle);
    const a = rt.newBuffer(4 * 64);
    const b = rt.newBuffer(4 * 64);
    const mk = (out: NativeBuffer, v: number) =>
      rt.newBatch().dispatch({ pipeline: fill, buffers: [{ index: 0, buffer: out, access: "write" }], bytes: [{ index: 1, data: new Float32Array([v]) }], grid: 64, threadgroup: 64 });
    const s1 = mk(a, 1).submit(q1);
    const s2 = mk(b, 2).submit(q2);
    await s1.done();
    while (!s2.poll()) await Bun.sleep(1);
    expect(s1.completed && s2.completed).toBe(true);
    expect(floats(a)[63]).toBe(1);
    expect(floats(b)[63]).toBe(2);
    a.release();
    b.release();
  });

  test("buffers dropped to the GC while their batches are in flight are freed safely", async () => {
    Bun.gc(true);
    const before = rt.memoryStats().liveBuffers;
    const pending = [];
    for (let i = 0; i < 200; i++) {
      // Never released: only the GC (through the view deallocator) and batch completion free these.
      const scratch = rt.newBuffer(4 * 64);
      pending.push(
        rt
          .newBatch()
          .dispatch({ pipeline: fill, buffers: [{ index: 0, buffer: scratch, access: "write" }], bytes: [{ index: 1, data: new Float32Array([i]) }], grid: 64, threadgroup: 64 })
          .submit(),
      );
      if (i % 50 === 49) Bun.gc(true);
    }
    for (const p of pending) p.wait();
    for (let i = 0; i < 20 && rt.memoryStats().liveBuffers > before; i++) {
      Bun.gc(true);
      await Bun.sleep(5);
    }
    expect(rt.memoryStats().liveBuffers).toBe(before);
  });

  test("buffers stay alive while in flight even if released right after submit", () => {
    const x = rt.newBuffer(4 * 1024);
    const out = rt.newBuffer(4 * 1024);
    gpuFill(x, 9);
    const live = rt.memoryStats().liveBuffers;
    const s = rt
      .newBatch()
      .dispatch({ pipeline: addOne, buffers: [{ index: 0, buffer: x, access: "read" }, { index: 1, buffer: out, access: "write" }], grid: 1024, threadgroup: 256 })
      .submit();
    x.release();
    expect(rt.memoryStats().liveBuffers).toBe(live - 1);
    s.wait();
    expect(floats(out)[1023]).toBe(10);
    out.release();
  });
});

describe("validation: every error is thrown, and the next good batch works", () => {
  const out = rt.newBuffer(4 * 256);
  const good = () => {
    gpuFill(out, 0);
    gpuFill(out, 2.5);
    expect(floats(out)[255]).toBe(2.5);
  };
  const attempt = (d: Parameters<ReturnType<typeof rt.newBatch>["dispatch"]>[0]) => () => rt.newBatch().dispatch(d).submit();

  test("a threadgroup larger than the pipeline's maximum", () => {
    const max = fill.maxTotalThreadsPerThreadgroup;
    expect(
      attempt({ pipeline: fill, buffers: [{ index: 0, buffer: out, access: "write" }], bytes: [{ index: 1, data: new Float32Array([1]) }], grid: 256, threadgroup: [32, Math.floor(max / 32) + 1, 1] }),
    ).toThrow(new RegExp(`\\[mg_batch_submit\\] dispatch 0 \\(kernel 'fill'\\): threadgroup .* more than the pipeline's maxTotalThreadsPerThreadgroup of ${max}`));
    good();
  });

  test("a binding past the buffer's end", () => {
    expect(attempt({ pipeline: fill, buffers: [{ index: 0, buffer: out, offset: 512, length: 1024, access: "write" }], bytes: [{ index: 1, data: new Float32Array([1]) }], grid: 1, threadgroup: 1 })).toThrow(
      /buffer\(0\) binding \[512, 512 \+ 1024\) runs past the end of the 1024-byte buffer/,
    );
    expect(attempt({ pipeline: fill, buffers: [{ index: 0, buffer: out, offset: 2048, access: "write" }], grid: 1, threadgroup: 1 })).toThrow(/runs past the end/);
    good();
  });

  test("inline bytes of 4 KiB or more", () => {
    expect(attempt({ pipeline: fill, buffers: [{ index: 0, buffer: out, access: "write" }], bytes: [{ index: 1, data: new Uint8Array(4096) }], grid: 1, threadgroup: 1 })).toThrow(
      /inline bytes at index 1 are 4096 bytes; setBytes takes under 4096 bytes/,
    );
    good();
  });

  test("a released buffer, an unknown pipeline, a zero grid, a duplicate index", () => {
    const gone = rt.newBuffer(64);
    gone.release();
    expect(attempt({ pipeline: fill, buffers: [{ index: 0, buffer: gone, access: "write" }], grid: 1, threadgroup: 1 })).toThrow(/buffer\(0\): buffer 0x[0-9a-f]+ was released/);
    const fake = new Pipeline(0x7fff_fff8 as Pointer, "fake", 1024, 32, 0);
    expect(attempt({ pipeline: fake, grid: 1, threadgroup: 1 })).toThrow(/dispatch 0: unknown pipeline handle 0x7ffffff8/);
    expect(attempt({ pipeline: fill, buffers: [{ index: 0, buffer: out, access: "write" }], grid: [0, 1, 1], threadgroup: 1 })).toThrow(/grid \(0, 1, 1\) has a zero dimension/);
    expect(
      attempt({ pipeline: fill, buffers: [{ index: 1, buffer: out, access: "write" }], bytes: [{ index: 1, data: new Float32Array([1]) }], grid: 1, threadgroup: 1 }),
    ).toThrow(/buffer index 1 is bound twice/);
    expect(attempt({ pipeline: fill, threadgroupMemory: [{ index: 0, length: 10 }], grid: 1, threadgroup: 1 })).toThrow(/multiple of 16/);
    expect(attempt({ pipeline: fill, threadgroupMemory: [{ index: 0, length: 65536 }], grid: 1, threadgroup: 1 })).toThrow(/exceed the 32768-byte limit/);
    good();
  });

  test("a bad batch encodes nothing: an earlier good dispatch in it does not run", () => {
    gpuFill(out, 1);
    const batch = rt.newBatch();
    batch.dispatch({ pipeline: fill, buffers: [{ index: 0, buffer: out, access: "write" }], bytes: [{ index: 1, data: new Float32Array([99]) }], grid: 256, threadgroup: 256 });
    batch.dispatch({ pipeline: fill, buffers: [{ index: 0, buffer: out, offset: 4, access: "write", length: 1024 }], grid: 1, threadgroup: 1 });
    const before = rt.counters().dispatchesEncoded;
    expect(() => batch.submit()).toThrow(/dispatch 1 \(kernel 'fill'\)/);
    expect(rt.counters().dispatchesEncoded).toBe(before);
    expect(floats(out)[0]).toBe(1);
    good();
  });

  test("malformed words are rejected", () => {
    const queue = rt.defaultQueue.handle;
    const call = (words: Uint32Array) => {
      const h = rt.native.mg_batch_submit(queue, words, words.length);
      return h === null ? String(rt.native.mg_last_error()) : "accepted";
    };
    expect(call(new Uint32Array([1, 0]))).toMatch(/\[mg_batch_submit\] the batch does not start with the magic word/);
    expect(call(new Uint32Array([0x3142474d, 1, 1, 0]))).toMatch(/dispatch 0: the batch ends inside its header/);
    expect(call(new Uint32Array([0x3142474d, 1, 7]))).toMatch(/command 0 has unknown opcode 7/);
    expect(call(new Uint32Array([0x3142474d, 0, 5]))).toMatch(/1 words after its 0 commands/);
    expect(rt.native.mg_batch_submit(null, new Uint32Array([0x3142474d, 0]), 2)).toBeNull();
    expect(String(rt.native.mg_last_error())).toMatch(/\[mg_batch_submit\] null queue handle/);
    good();
  });

  test("a command-buffer error comes back at wait(), and the runtime keeps working", () => {
    // Checked mode makes the simulator fail the command buffer on an out-of-bounds write; a GPU
    // does not check, so this is a simulator-only test.
    if (!rt.device.isSimulator) return;
    const checked = rt.library(KERNELS, { checked: true });
    const bad = checked.pipeline("write_past_end");
    const small = rt.newBuffer(4 * 8);
    const s = rt.newBatch().dispatch({ pipeline: bad, buffers: [{ index: 0, buffer: small, access: "write" }], grid: 8, threadgroup: 8 }).submit();
    expect(() => s.wait()).toThrow(/\[mg_batch_wait\] the batch failed: .*write_past_end/s);
    expect(() => s.wait()).toThrow(/the batch failed/); // sticky
    small.release();
    good();
  });

  test("capture is refused clearly where it cannot work", () => {
    if (rt.device.isSimulator) {
      expect(() => rt.startCapture("/tmp/metalgrad-test.gputrace")).toThrow(/\[mg_capture_start\] GPU capture is not supported on the Metal simulator/);
      expect(() => rt.stopCapture()).toThrow(/\[mg_capture_stop\] GPU capture is not supported on the Metal simulator/);
    } else {
      expect(() => rt.startCapture("/tmp/not-a-trace.txt")).toThrow(/must end in \.gputrace/);
    }
    good();
  });

  test("pointer helper sanity: views are where contents() says", () => {
    const contents = rt.native.mg_buffer_contents(out.handle);
    expect(Number(contents)).toBe(ptr(out.arrayBuffer));
  });
});
