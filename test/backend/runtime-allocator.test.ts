// The caching allocator through the binding: exact counters over a scripted sequence, reuse, the
// cache limit, clearCache and the memory limit. Expected values follow the documented rule
// (Sources/MetalGradRuntime/Allocator.swift), re-derived here independently.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ptr } from "bun:ffi";
import { BufferPool, runtime, type NativeBuffer } from "../../ts/backend/runtime.ts";
import { synchronize } from "../../ts/backend/gpu/index.ts";

const rt = runtime();
const KiB = 1024;
const MiB = 1024 * KiB;

/** The documented rounding: 256 B granules below 16 KiB, 16 KiB pages from there. */
function allocated(n: number): number {
  if (n === 0) return 0;
  if (n < 16 * KiB) return Math.ceil(n / 256) * 256;
  return Math.ceil(n / (16 * KiB)) * 16 * KiB;
}

/** The documented reuse window for a request of allocated length L. */
function reusable(cached: number, request: number): boolean {
  const L = allocated(request);
  return cached >= L && cached <= Math.min(2 * L, L + MiB);
}

function address(b: NativeBuffer): number {
  return ptr(b.arrayBuffer);
}

let savedLimits: { memory: number; cache: number } = { memory: 0, cache: 0 };

beforeAll(() => {
  const s = rt.memoryStats();
  savedLimits = { memory: s.memoryLimit, cache: s.cacheLimit };
});

afterAll(() => {
  rt.setMemoryLimit(savedLimits.memory);
  rt.setCacheLimit(savedLimits.cache);
});

/** A clean slate: earlier files' GPU work finished (it holds buffers until then), pending GC frees
 *  flushed, the cache emptied, the peak reset. */
function settle(): { active: number } {
  synchronize();
  Bun.gc(true);
  rt.clearCache();
  rt.resetPeakMemory();
  const s = rt.memoryStats();
  expect(s.cache).toBe(0);
  expect(s.peak).toBe(s.active);
  return { active: s.active };
}

describe("allocator", () => {
  test("the rounding rule, by example", () => {
    expect([1, 255, 256, 257, 1000, 16383, 16384, 16385, 20000].map(allocated)).toEqual([
      256, 256, 256, 512, 1024, 16384, 16384, 32768, 32768,
    ]);
    expect(reusable(1024, 700)).toBe(true);
    expect(reusable(1024, 200)).toBe(false);
  });

  test("active, peak and cache follow a scripted sequence exactly; freed memory is reused", () => {
    const { active: base } = settle();
    const expectStats = (active: number, peak: number, cache: number) => {
      const s = rt.memoryStats();
      expect({ active: s.active - base, peak: s.peak - base, cache: s.cache }).toEqual({ active, peak, cache });
    };

    const a = rt.newBuffer(1000); // 1024
    expectStats(1024, 1024, 0);
    const b = rt.newBuffer(20000); // 32768
    expectStats(1024 + 32768, 1024 + 32768, 0);
    const aAddress = address(a);
    a.release();
    expectStats(32768, 33792, 1024);

    // 700 → 768; the cached 1024 fits in [768, 1536]: reused, same memory.
    const c = rt.newBuffer(700);
    expect(address(c)).toBe(aAddress);
    expectStats(33792, 33792, 0);
    c.release();
    expectStats(32768, 33792, 1024);

    // 200 → 256; 1024 > 2 × 256, so the cached block is left alone and new memory is allocated.
    const d = rt.newBuffer(200);
    expect(address(d)).not.toBe(aAddress);
    expectStats(32768 + 256, 33792, 1024);

    b.release();
    expectStats(256, 33792, 1024 + 32768);

    // 40000 → 49152: nothing cached is large enough.
    const e = rt.newBuffer(40000);
    expectStats(256 + 49152, 256 + 49152, 1024 + 32768);

    // 17000 → 32768: takes the cached 32768 block (b's).
    const f = rt.newBuffer(17000);
    expectStats(256 + 49152 + 32768, 256 + 49152 + 32768, 1024);

    rt.resetPeakMemory();
    expectStats(256 + 49152 + 32768, 256 + 49152 + 32768, 1024);
    for (const x of [d, e, f]) x.release();
    expectStats(0, 256 + 49152 + 32768, 1024 + 256 + 49152 + 32768);

    rt.clearCache();
    expectStats(0, 256 + 49152 + 32768, 0);
  });

  test("a request below a page takes the smallest fit, small or page-sized, within the window", () => {
    const { active: base } = settle();
    const page = rt.newBuffer(16 * KiB);
    const small = rt.newBuffer(9000); // 9216
    const [pageAt, smallAt] = [address(page), address(small)];
    page.release();
    small.release();
    // 9000 → 9216: the cached 9216 fits exactly (smallest first); then the page (16384 ≤ 2 × 9216).
    const a = rt.newBuffer(9000);
    const b = rt.newBuffer(9000);
    expect([address(a), address(b)]).toEqual([smallAt, pageAt]);
    expect(rt.memoryStats()).toMatchObject({ active: base + 9216 + 16384, cache: 0 });
    a.release();
    b.release();
    // 6000 → 6144: 16384 > 2 × 6144, so only the 9216 block fits.
    const c = rt.newBuffer(6000);
    expect(address(c)).toBe(smallAt);
    expect(rt.memoryStats().cache).toBe(16384);
    c.release();
  });

  test("the cache limit frees the oldest cached buffers first", () => {
    settle();
    const previous = rt.setCacheLimit(2 * KiB);
    try {
      const bufs = [rt.newBuffer(1024), rt.newBuffer(1024), rt.newBuffer(1024)];
      const addrs = bufs.map(address);
      for (const b of bufs) b.release(); // the third release pushes the cache over 2 KiB
      expect(rt.memoryStats().cache).toBe(2048);
      // The survivors are the two newest; the most recent is reused first.
      const r1 = rt.newBuffer(1024);
      const r2 = rt.newBuffer(1024);
      expect(address(r1)).toBe(addrs[2]!);
      expect(address(r2)).toBe(addrs[1]!);
      expect(rt.memoryStats().cache).toBe(0);
      r1.release();
      r2.release();
    } finally {
      expect(rt.setCacheLimit(previous)).toBe(2 * KiB);
    }
  });

  test("a memory limit turns an oversized allocation into an error, after emptying the cache", () => {
    const { active } = settle();
    const cached = rt.newBuffer(64 * KiB);
    // A live view keeps the block mapped after release, so viewHeld is the same at every step below.
    const pinned = cached.as(Uint8Array);
    cached.release();
    expect(rt.memoryStats().cache).toBe(64 * KiB);
    const limit = active + rt.memoryStats().viewHeld + 512 * KiB;
    const previous = rt.setMemoryLimit(limit);
    try {
      expect(() => rt.newBuffer(1 * MiB)).toThrow(/\[mg_buffer_new\] allocating 1048576 bytes .* would exceed the memory limit/);
      // The failed allocation first emptied the cache (memory a view still maps moves to viewHeld).
      const s = rt.memoryStats();
      expect(s.cache).toBe(0);
      // What is left under the limit can still be allocated; one page more cannot.
      const room = Math.floor((limit - s.active - s.viewHeld) / (16 * KiB)) * 16 * KiB;
      const ok = rt.newBuffer(room);
      expect(ok.byteLength).toBe(room);
      expect(() => rt.newBuffer(16 * KiB)).toThrow(/memory limit/);
      ok.release();
      const again = rt.newBuffer(room); // the same block, served from the cache
      expect(rt.memoryStats().cache).toBe(0);
      again.release();
    } finally {
      expect(rt.setMemoryLimit(previous)).toBe(limit);
    }
    expect(() => rt.setMemoryLimit(-5)).toThrow(/\[mg_memory_set_limit\]/);
    expect(pinned.byteLength).toBe(64 * KiB);
  });

  test("clearCache never unmaps memory a live view points into", () => {
    settle();
    const b = rt.newBuffer(4096);
    const view = new Float32Array(b.arrayBuffer); // a JS reference that outlives release()
    view[0] = 42;
    b.release();
    expect(rt.memoryStats().cache).toBe(4096);
    rt.clearCache();
    const s = rt.memoryStats();
    expect(s.cache).toBe(0);
    expect(s.viewHeld).toBeGreaterThanOrEqual(4096);
    expect(view[0]).toBe(42); // still mapped: reading does not fault
  });

  test("the wired limit is stored and its previous value returned", () => {
    const previous = rt.setWiredLimit(1 * MiB);
    expect(rt.setWiredLimit(previous)).toBe(1 * MiB);
    expect(() => rt.setWiredLimit(rt.device.recommendedMaxWorkingSetSize * 2)).toThrow(/larger than the recommended working set/);
  });
});

describe("buffer pool (parking small buffers for reuse)", () => {
  const pool = rt.pool;
  // A kernel that runs long enough on the simulator (and on a GPU) to be in flight while we look.
  const spin = rt
    .library(`
#include <metal_stdlib>
using namespace metal;
[[kernel]] void spin(device float* out [[buffer(0)]], constant uint& n [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  float x = 0.0f;
  for (uint k = 0; k < n; k++) x = x * 0.999f + 1.0f;
  out[i] = x;
}`)
    .pipeline("spin");

  test("a released pooled buffer counts as cache; the next buffer of its size takes it back (same memory, same counters)", () => {
    const { active: base } = settle();
    const live = rt.memoryStats().liveBuffers;
    const a = pool.allocate(100); // 256 allocated
    const where = address(a);
    expect(rt.memoryStats()).toMatchObject({ active: base + 256, peak: base + 256, cache: 0, liveBuffers: live + 1 });
    a.release();
    expect(pool.parkedBytes).toBe(256);
    // Exactly as a release: active down, cache up, one live buffer fewer.
    expect(rt.memoryStats()).toMatchObject({ active: base, peak: base + 256, cache: 256, liveBuffers: live });
    expect(() => a.arrayBuffer).toThrow(/was released/);
    const b = pool.allocate(100);
    expect(address(b)).toBe(where);
    expect(b.byteLength).toBe(100);
    expect(pool.parkedBytes).toBe(0);
    expect(rt.memoryStats()).toMatchObject({ active: base + 256, peak: base + 256, cache: 0, liveBuffers: live + 1 });
    // Another size is a new allocation (reuse is by exact size), and the peak counts both.
    const c = pool.allocate(200);
    expect(address(c)).not.toBe(where);
    expect(rt.memoryStats()).toMatchObject({ active: base + 512, peak: base + 512 });
    b.release();
    c.release();
    expect(rt.memoryStats()).toMatchObject({ active: base, peak: base + 512, cache: 512, liveBuffers: live });
    // clearCache drains the pool first: nothing is left cached.
    rt.clearCache();
    expect(pool.parkedBytes).toBe(0);
    expect(rt.memoryStats()).toMatchObject({ active: base, cache: 0 });
  });

  test("a pooled buffer that reused a larger cached block parks (and counts) that block's length", () => {
    const { active: base } = settle();
    rt.newBuffer(400).release(); // a cached 512-byte block
    const b = pool.allocate(200); // 256 requested: reuses the cached 512 (within 2 × 256)
    expect(b.allocatedLength).toBe(512);
    expect(rt.memoryStats()).toMatchObject({ active: base + 512, cache: 0 });
    b.release();
    expect(pool.parkedBytes).toBe(512);
    expect(rt.memoryStats()).toMatchObject({ active: base, cache: 512 });
    const again = pool.allocate(200);
    expect(rt.memoryStats()).toMatchObject({ active: base + 512, cache: 0 });
    again.release();
    rt.clearCache();
    expect(rt.memoryStats()).toMatchObject({ active: base, cache: 0 });
  });

  test("empty buffers are never parked; large ones park in their own tier, bounded by LARGE_MAX_BYTES (oldest released first)", () => {
    const { active: base } = settle();
    const empty = pool.allocate(0);
    empty.release();
    expect(pool.parkedBytes).toBe(0);
    // A large buffer parks like a small one: cache, not active; the next request of its exact size
    // takes the same memory (and the same view) back.
    const big = pool.allocate(16 * KiB + 1); // 32 KiB allocated
    const where = address(big);
    const view = big.arrayBuffer;
    big.release();
    expect(pool.parkedBytes).toBe(32 * KiB);
    expect(pool.parkedLargeBytes).toBe(32 * KiB);
    expect(rt.memoryStats()).toMatchObject({ active: base, cache: 32 * KiB });
    const again = pool.allocate(16 * KiB + 1);
    expect(address(again)).toBe(where);
    expect(again.arrayBuffer).toBe(view);
    expect(pool.parkedBytes).toBe(0);
    expect(rt.memoryStats()).toMatchObject({ active: base + 32 * KiB, cache: 0 });
    // A large size with no parked buffer of its own takes a parked block the allocator's fit rule
    // accepts (here 20000 B → 32 KiB): the pool hands it back first, so parking costs no reuse.
    again.release();
    const fit = pool.allocate(20000);
    expect(address(fit)).toBe(where);
    expect(pool.parkedLargeBytes).toBe(0);
    expect(rt.memoryStats()).toMatchObject({ active: base + 32 * KiB, cache: 0 });
    fit.release();
    expect(pool.parkedLargeBytes).toBe(32 * KiB);
    // Another large size whose block the fit rule would not take is a new allocation.
    const other = pool.allocate(64 * KiB + 1); // 80 KiB: a parked 32 KiB block is too small
    expect(address(other)).not.toBe(where);
    expect(pool.parkedLargeBytes).toBe(32 * KiB);
    other.release();
    expect(pool.parkedLargeBytes).toBe(112 * KiB);
    // Past the tier's bound, the oldest parked large buffers go to the allocator (still cache).
    const cap = BufferPool.LARGE_MAX_BYTES;
    const huge = pool.allocate(cap - 32 * KiB);
    huge.release();
    expect(pool.parkedLargeBytes).toBe(cap - 32 * KiB); // both older ones were released, oldest first
    expect(rt.memoryStats()).toMatchObject({ active: base, cache: cap - 32 * KiB + 112 * KiB });
    const reused = pool.allocate(20000);
    expect(address(reused)).toBe(where); // from the allocator's cache now
    reused.release();
    rt.clearCache();
    expect(pool.parkedBytes).toBe(0);
    expect(rt.memoryStats()).toMatchObject({ cache: 0 });
  });

  test("a large buffer that reused a larger cached block is released, not parked (later requests get the tightest fit)", () => {
    const { active: base } = settle();
    rt.newBuffer(48 * KiB).release(); // a cached 48 KiB block
    const b = pool.allocate(30000); // 32 KiB requested: reuses the cached 48 KiB (within 2 × 32 KiB)
    expect(b.allocatedLength).toBe(48 * KiB);
    b.release();
    expect(pool.parkedBytes).toBe(0);
    expect(rt.memoryStats()).toMatchObject({ active: base, cache: 48 * KiB });
    rt.clearCache();
  });

  test("a parked buffer cannot be bound (it was released); a buffer a batch may still use is released instead of parked", () => {
    const { active: base } = settle();
    const a = pool.allocate(64);
    a.release();
    expect(pool.parkedBytes).toBe(256);
    expect(() => rt.newBatch().dispatch({ pipeline: spin, buffers: [{ index: 0, buffer: a, access: "write" }], bytes: [{ index: 1, data: new Uint32Array([1]) }], grid: 1, threadgroup: 1 }).submit()).toThrow(/buffer\(0\): buffer 0x[0-9a-f]+ was released/);
    rt.clearCache();

    // Bound by a batch that was waited for: parked on release.
    const done = pool.allocate(64);
    rt.newBatch().dispatch({ pipeline: spin, buffers: [{ index: 0, buffer: done, access: "write" }], bytes: [{ index: 1, data: new Uint32Array([1]) }], grid: 1, threadgroup: 1 }).submit().wait();
    done.release();
    expect(pool.parkedBytes).toBe(256);
    rt.clearCache();

    const out = pool.allocate(64);
    const batch = rt
      .newBatch()
      .dispatch({ pipeline: spin, buffers: [{ index: 0, buffer: out, access: "write" }], bytes: [{ index: 1, data: new Uint32Array([20_000_000]) }], grid: 1, threadgroup: 1 })
      .submit();
    out.release();
    // 20M dependent steps take milliseconds; the release came microseconds after submit.
    expect(batch.poll()).toBe(false);
    // Still bound: not parked; the allocator keeps it active until the batch completes.
    expect(pool.parkedBytes).toBe(0);
    expect(rt.memoryStats().active).toBe(base + 256);
    batch.wait();
    expect(pool.parkedBytes).toBe(0);
    expect(rt.memoryStats()).toMatchObject({ active: base, cache: 256 });
  });

  test("parking never takes the cache past its limit; setCacheLimit drains the pool", () => {
    settle();
    const previous = rt.setCacheLimit(512);
    try {
      const bufs = [pool.allocate(10), pool.allocate(10), pool.allocate(10)];
      for (const b of bufs) b.release();
      expect(pool.parkedBytes).toBe(512); // the third was released to the allocator, which evicted it
      expect(rt.memoryStats().cache).toBe(512);
      rt.setCacheLimit(256);
      expect(pool.parkedBytes).toBe(0);
      expect(rt.memoryStats().cache).toBe(256);
    } finally {
      rt.setCacheLimit(previous);
    }
  });

  test("an allocation that meets the memory limit drains the pool and succeeds if that makes room", () => {
    const { active } = settle();
    const parked = Array.from({ length: 8 }, () => pool.allocate(1000)); // 8 × 1024
    for (const b of parked) b.release();
    expect(pool.parkedBytes).toBe(8 * KiB);
    const viewHeld = rt.memoryStats().viewHeld;
    // Room for 16 KiB only if the parked 8 KiB go (the limit counts parked memory).
    const previous = rt.setMemoryLimit(active + viewHeld + 8 * KiB + 16 * KiB);
    try {
      expect(() => rt.newBuffer(32 * KiB)).toThrow(/memory limit/);
      const b = rt.newBuffer(16 * KiB);
      expect(pool.parkedBytes).toBe(0);
      b.release();
    } finally {
      rt.setMemoryLimit(previous);
    }
  });

  // `bun test --parallel` implies --isolate: each test file gets a fresh module registry, so a new
  // Runtime object and BufferPool over the same native runtime, and the previous file's pool becomes
  // garbage with its buffers parked. Their views' deallocators then release parked records. When
  // the allocator was told parking by length only, it subtracted those bytes from `active` a second
  // time: `active` went negative and a later park failed ("parking 256 bytes in 1 buffers, but
  // -1536 bytes are active") in whatever test ran next.
  test("a pool that becomes garbage with buffers parked leaves the counters exact", () => {
    const { active: base } = settle();
    const live = rt.memoryStats().liveBuffers;
    const views = parkInAPoolThatIsDropped();
    expect(rt.memoryStats()).toMatchObject({ active: base, cache: 256 + 32 * KiB, liveBuffers: live });
    for (let i = 0; i < 50 && views.some((v) => v.deref() !== undefined); i++) Bun.gc(true);
    expect(views.every((v) => v.deref() === undefined)).toBe(true); // the deallocators ran
    // Released from the parked bytes into the allocator's cache: active as before, and clearCache
    // (which cannot see a dropped pool) empties the cache.
    expect(rt.memoryStats()).toMatchObject({ active: base, cache: 256 + 32 * KiB, liveBuffers: live });
    rt.clearCache();
    expect(rt.memoryStats()).toMatchObject({ active: base, cache: 0 });
    // And parking still works (it failed on the negative count).
    const b = pool.allocate(100);
    b.release();
    expect(rt.memoryStats()).toMatchObject({ active: base, cache: 256 });
  });

  test("parking is by handle: a released, already parked or unparked handle is an error where it happens", () => {
    settle();
    const native = rt.native;
    const a = rt.newBuffer(100); // not from a pool: release() gives it to the allocator
    expect(native.mg_memory_park(a.handle)).toBe(0);
    expect(native.mg_memory_park(a.handle)).toBe(-1);
    expect(String(native.mg_last_error())).toMatch(/already parked/);
    // The runtime refuses a batch that binds parked memory (it counts as free cache).
    const bind = () => rt.newBatch().dispatch({ pipeline: spin, buffers: [{ index: 0, buffer: a, access: "write" }], bytes: [{ index: 1, data: new Uint32Array([1]) }], grid: 1, threadgroup: 1 }).submit();
    expect(bind).toThrow(/buffer\(0\): buffer 0x[0-9a-f]+ was released \(parked for reuse\)/);
    expect(native.mg_memory_unpark(a.handle)).toBe(0);
    expect(native.mg_memory_unpark(a.handle)).toBe(1);
    expect(String(native.mg_last_error())).toMatch(/is not parked/);
    bind().wait(); // taken back: bindable again
    // A buffer a batch still holds is not parked (declined: the caller releases it instead).
    const running = rt.newBatch().dispatch({ pipeline: spin, buffers: [{ index: 0, buffer: a, access: "write" }], bytes: [{ index: 1, data: new Uint32Array([20_000_000]) }], grid: 1, threadgroup: 1 }).submit();
    const status = native.mg_memory_park(a.handle);
    expect(running.poll()).toBe(false); // 20M dependent steps take milliseconds
    expect(status).toBe(1);
    running.wait();
    expect(native.mg_memory_park(a.handle)).toBe(0);
    expect(native.mg_memory_unpark(a.handle)).toBe(0);
    a.release();
    expect(native.mg_memory_park(a.handle)).toBe(-1);
    expect(String(native.mg_last_error())).toMatch(/was released/);
    const empty = rt.newBuffer(0);
    expect(native.mg_memory_park(empty.handle)).toBe(-1);
    expect(String(native.mg_last_error())).toMatch(/no memory to park/);
    empty.release();
  });
});

/** Parks a small and a large buffer in a pool nothing references afterwards (as a dropped module
 *  registry leaves its pool); returns weak references to their views. */
function parkInAPoolThatIsDropped(): WeakRef<ArrayBuffer>[] {
  const dropped = new BufferPool(rt);
  const small = dropped.allocate(100); // 256 allocated
  const large = dropped.allocate(20_000); // 32 KiB allocated
  const views = [new WeakRef(small.arrayBuffer), new WeakRef(large.arrayBuffer)];
  small.release();
  large.release();
  expect(dropped.parkedBytes).toBe(256 + 32 * KiB);
  return views;
}
