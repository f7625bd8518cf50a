// Checked mode's race and initialisation detection: each planted race is reported with its kind,
// the kernel, the memory and element, both threads and their source lines; the same kernels
// written correctly (barriers, atomics, one writer, benign same-value writes) report nothing.
// Every case runs in work-item form and as fibers (MG_SIM_WORKITEM=0), the two execution models.
#include <cstdlib>

#include "harness.h"

// Line numbers below are program_source lines of this text (line 1 is the #include).
static const char *kSrc = R"(#include <metal_stdlib>
using namespace metal;
kernel void tg_raw(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]],
                   uint gid [[thread_position_in_grid]]) {
  threadgroup float t[64];
  t[lid] = float(lid);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  t[lid] = 2.0f * float(lid);
  out[gid] = t[lid ^ 32u];
}
kernel void tg_waw(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]],
                   uint gid [[thread_position_in_grid]]) {
  threadgroup float t[32];
  t[lid / 2u] = float(lid);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = t[lid / 2u];
}
kernel void tg_uninit(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]],
                      uint gid [[thread_position_in_grid]]) {
  threadgroup float t[64];
  if (lid < 60u) t[lid] = 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = t[lid];
}
kernel void tg_war(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]],
                   uint gid [[thread_position_in_grid]]) {
  threadgroup float t[64];
  t[lid] = float(lid);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float v = t[(lid + 1u) % 64u];
  t[lid] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = t[lid];
}
kernel void dev_cross(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]],
                      uint gid [[thread_position_in_grid]]) {
  out[lid] = float(gid);
}
kernel void dev_raw(device float* out [[buffer(0)]], device float* res [[buffer(1)]],
                    uint lid [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]]) {
  out[lid] = float(lid);
  res[gid] = out[(lid + 32u) % 64u] + simd_sum(1.0f);
}
// As dev_raw, through a buffer declared const (written through a cast): its reads are compared again
// once it is written. (A write through a cast carries no source line.)
kernel void dev_raw_const(device const float* out [[buffer(0)]], device float* res [[buffer(1)]],
                          uint lid [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]]) {
  ((device float*)out)[lid] = float(lid);
  res[gid] = out[(lid + 32u) % 64u] + simd_sum(1.0f);
}
// Correct: a tree reduction with barriers, atomics, one writer per output, a benign same-value write.
kernel void clean(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                  device atomic_uint* count [[buffer(2)]], device uint* flag [[buffer(3)]],
                  uint lid [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]],
                  uint tg [[threadgroup_position_in_grid]]) {
  threadgroup float t[64];
  t[lid] = in[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 32u; s > 0u; s >>= 1u) {
    if (lid < s) t[lid] += t[lid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0u) out[tg] = t[0];
  atomic_fetch_add_explicit(count, 1u, memory_order_relaxed);
  flag[0] = 1u;
}
)";

static std::string run1(Lib &lib, const char *name, uint32_t threads, uint32_t tg) {
  auto *f = lib.fn(name);
  if (!f) return "no function";
  std::vector<float> out(threads, 0.0f), res(threads, 0.0f);
  Dispatch d(f);
  d.buf(0, out).buf(1, res).threads(threads, 1, 1, tg, 1, 1);
  std::string e = d.run();
  mgsim_function_release(f);
  return e;
}

static bool has(const std::string &e, const char *a, const char *b = nullptr, const char *c = nullptr,
                const char *d = nullptr) {
  for (const char *x : {a, b, c, d})
    if (x && e.find(x) == std::string::npos) return false;
  return true;
}

static void run_all(const char *mode) {
  Lib lib(kSrc, /*checked=*/1);
  CHECK(lib.lib, "%s: race kernels compile %s", mode, lib.error.c_str());
  if (!lib.lib) return;
  std::string e = run1(lib, "tg_raw", 64, 64);
  CHECK(has(e, "race in kernel 'tg_raw': threadgroup variable 't' element", "read-after-write", "at line 9",
            "at line 8"),
        "%s: a read of another thread's threadgroup write with no barrier between: %s", mode, e.c_str());
  e = run1(lib, "tg_waw", 64, 64);
  CHECK(has(e, "race in kernel 'tg_waw': threadgroup variable 't' element", "write-after-write", "at line 14"),
        "%s: two threads writing one threadgroup element: %s", mode, e.c_str());
  e = run1(lib, "tg_uninit", 64, 64);
  CHECK(has(e, "uninitialised read in kernel 'tg_uninit': threadgroup variable 't' element 6", "at line 23",
            "before any thread of its threadgroup wrote it"),
        "%s: a read of threadgroup memory no thread wrote: %s", mode, e.c_str());
  e = run1(lib, "tg_war", 64, 64);
  CHECK(has(e, "race in kernel 'tg_war'", "write-after-read", "at line 31", "at line 30"),
        "%s: a write over a neighbour's read with no barrier between: %s", mode, e.c_str());
  e = run1(lib, "dev_cross", 128, 32);
  CHECK(has(e, "race in kernel 'dev_cross': buffer(0) element", "of another threadgroup both write it in one dispatch",
            "at line 37"),
        "%s: two threadgroups writing one device element: %s", mode, e.c_str());
  e = run1(lib, "dev_raw", 64, 64);
  CHECK(has(e, "race in kernel 'dev_raw': buffer(0) element", "read-after-write", "at line 42", "at line 41"),
        "%s: a device read of another simdgroup's write with no barrier between: %s", mode, e.c_str());
  e = run1(lib, "dev_raw_const", 64, 64);
  CHECK(has(e, "race in kernel 'dev_raw_const': buffer(0) element", "read-after-write", "at line 49"),
        "%s: a device read of another simdgroup's write through a const buffer written by a cast: %s", mode, e.c_str());
  {
    auto *f = lib.fn("clean");
    std::vector<float> in = randf(256, 5), out(4, 0.0f);
    std::vector<uint32_t> count(1, 0), flag(1, 0);
    e = Dispatch(f).buf(0, in).buf(1, out).buf(2, count).buf(3, flag).threads(256, 1, 1, 64, 1, 1).run();
    bool ok = e.empty() && count[0] == 256 && flag[0] == 1;
    for (int g = 0; g < 4; ++g) {
      float want = 0;
      for (int i = 0; i < 64; ++i) want += in[size_t(g * 64 + i)];
      ok = ok && std::fabs(out[size_t(g)] - want) < 1e-4f;
    }
    CHECK(ok, "%s: barriers, atomics, one writer per output and a same-value write report nothing: %s", mode, e.c_str());
    mgsim_function_release(f);
  }
  // The partial barrier of test_execution, in checked mode: the same error.
  Lib partial(R"(
#include <metal_stdlib>
using namespace metal;
kernel void partial_barrier(device int* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]],
                            uint gid [[thread_position_in_grid]]) {
  if (lid >= 10) return;
  threadgroup_barrier(mem_flags::mem_device);
  out[gid] = 1;
}
)", 1);
  auto *f = partial.fn("partial_barrier");
  std::vector<int> o(64, 0);
  e = Dispatch(f).buf(0, o).threads(64, 1, 1, 64, 1, 1).run();
  CHECK(has(e, "threadgroup_barrier reached by 10 of 64 threads in kernel 'partial_barrier'"),
        "%s: a barrier some threads do not reach: %s", mode, e.c_str());
  mgsim_function_release(f);
}

// Checked mode keeps race records and must-write shadows across dispatches without clearing them
// (dispatch.cpp CheckMemory): a record names its threadgroup by an id of the dispatch that wrote
// it, a shadow byte holds its dispatch's mark. Nothing of an earlier dispatch may count in a later
// one, also when the ids or marks wrap around (MG_SIM_RACE_GROUP_IDS / MG_SIM_SHADOW_MARKS make
// that happen every dispatch or two), and a real race is still found after many dispatches.
static const char *kGenSrc = R"(#include <metal_stdlib>
using namespace metal;
kernel void own(device float* out [[buffer(0)]], device float* res [[buffer(1)]], uint gid [[thread_position_in_grid]]) {
  out[gid] = float(gid);
  res[gid] = 1.0f;
}
kernel void swap(device float* out [[buffer(0)]], device float* res [[buffer(1)]], uint gid [[thread_position_in_grid]]) {
  out[gid ^ 32u] = float(gid);
  res[gid] = 2.0f;
}
kernel void peek(device float* out [[buffer(0)]], device float* res [[buffer(1)]], uint gid [[thread_position_in_grid]]) {
  res[gid] = out[gid ^ 32u];
}
kernel void peek_wi(device float* out [[buffer(0)]], device float* res [[buffer(1)]], uint gid [[thread_position_in_grid]],
                    uint lid [[thread_index_in_threadgroup]]) {
  threadgroup float t[32];
  t[lid] = out[gid ^ 32u];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  res[gid] = t[31u - lid];
}
kernel void cross(device float* out [[buffer(0)]], device float* res [[buffer(1)]], uint gid [[thread_position_in_grid]],
                  uint lid [[thread_index_in_threadgroup]]) {
  out[lid] = float(gid);
  res[gid] = 0.0f;
}
kernel void part(device float* out [[buffer(0)]], constant int& plant [[buffer(1)]], uint gid [[thread_position_in_grid]]) {
  device uchar* bytes = reinterpret_cast<device uchar*>(out);
  if (plant == 3 && gid == 8) return;    // element 8 never written
  out[gid] = float(gid) + 0.5f;
  // Thread 9 rewrites byte 0 of element 8 with what thread 8 wrote: element 8 is then covered by
  // the shadow only (its record no longer says who wrote which bytes).
  if (plant == 2 && gid == 9) bytes[32] = as_type<uchar4>(8.5f).x;
}
)";

static void run_generations(const char *mode, int rounds) {
  Lib lib(kGenSrc, /*checked=*/1);
  CHECK(lib.lib, "%s: generation kernels compile %s", mode, lib.error.c_str());
  if (!lib.lib) return;
  mgsim_function *f[6] = {lib.fn("own"), lib.fn("swap"), lib.fn("peek"), lib.fn("peek_wi"), lib.fn("cross"), lib.fn("part")};
  mgsim_stats before{}, after{};
  mgsim_get_stats(&before);
  std::vector<float> out(64, 0.0f), res(64, 0.0f), part(64, 0.0f);
  int false_reports = 0, races = 0, race_rounds = 0, unwritten = 0, unwritten_rounds = 0;
  std::string first_bad;
  auto run = [&](int k) {
    Dispatch d(f[k]);
    d.buf(0, out).buf(1, res).threads(64, 1, 1, 32, 1, 1);
    d.d.must_write_mask = k == 2 || k == 3 ? 2u : 3u;
    return d.run();
  };
  for (int r = 0; r < rounds; ++r) {
    // Each element written by one threadgroup, then by the other one, then read by the other one:
    // within each dispatch no conflict.
    for (int k : {0, 1, 2, 0, 3, 1, 3}) {
      const std::string e = run(k);
      if (!e.empty()) {
        if (first_bad.empty()) first_bad = e;
        ++false_reports;
      }
    }
    if (r % 4 == 3) {
      ++race_rounds;
      if (has(run(4), "race in kernel 'cross': buffer(0) element", "of another threadgroup both write it in one dispatch")) ++races;
      // A whole output, then one covered partly through the shadow, then one that misses element 8.
      for (int plant : {0, 2, 3}) {
        Dispatch d(f[5]);
        d.buf(0, part).bytes(1, plant).threads(64, 1, 1, 32, 1, 1);
        d.d.must_write_mask = 1u;
        const std::string e = d.run();
        if (plant == 3) {
          ++unwritten_rounds;
          if (has(e, "unwritten output in kernel 'part': buffer(0) has 4 byte(s) never written", "first at element 8 ")) ++unwritten;
          else if (first_bad.empty()) first_bad = "plant 3: " + e;
        } else if (!e.empty()) {
          if (first_bad.empty()) first_bad = e;
          ++false_reports;
        }
      }
    }
  }
  mgsim_get_stats(&after);
  CHECK(false_reports == 0, "%s: %d rounds of dispatches writing/reading each element from another threadgroup than the last: no report from an earlier dispatch's records or shadow marks (%d reports; first: %s)",
        mode, rounds, false_reports, first_bad.c_str());
  CHECK(races == race_rounds && unwritten == unwritten_rounds,
        "%s: a cross-threadgroup race (%d of %d) and an unwritten element (%d of %d) are still reported between them %s", mode, races,
        race_rounds, unwritten, unwritten_rounds, first_bad.c_str());
  const bool wraps = getenv("MG_SIM_RACE_GROUP_IDS") || getenv("MG_SIM_SHADOW_MARKS");
  CHECK(!wraps || after.check_memory_wraps > before.check_memory_wraps + uint64_t(rounds),
        "%s: the ids / marks wrapped around (%llu times)", mode, (unsigned long long)(after.check_memory_wraps - before.check_memory_wraps));
  CHECK(after.check_memory_reuses > before.check_memory_reuses + uint64_t(rounds),
        "%s: record memory was reused across dispatches (%llu reuses, %llu maps)", mode,
        (unsigned long long)(after.check_memory_reuses - before.check_memory_reuses),
        (unsigned long long)(after.check_memory_maps - before.check_memory_maps));
  for (auto *x : f) mgsim_function_release(x);
}

// Vector accesses of a float buffer (a packed_float4 covers 4 race records: checked mode's
// multi-granule path in optimised code, check_access at tier 0): races, bounds and unwritten
// elements are found through them as through scalar accesses, and correct use reports nothing.
static const char *kVecSrc = R"(#include <metal_stdlib>
using namespace metal;
kernel void vec_cross(device float* out [[buffer(0)]], device float* res [[buffer(1)]],
                      uint lid [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]]) {
  device packed_float4* o = reinterpret_cast<device packed_float4*>(out);
  o[lid] = packed_float4(float4(float(gid)));
  res[gid] = 0.0f;
}
kernel void vec_raw(device float* out [[buffer(0)]], device float* res [[buffer(1)]],
                    uint lid [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]]) {
  device packed_float4* o = reinterpret_cast<device packed_float4*>(out);
  o[gid] = packed_float4(float4(float(gid)));
  const float4 v = o[(gid + 32u) % 64u];
  res[gid] = v.x + simd_sum(1.0f);
}
kernel void vec_oob(device float* out [[buffer(0)]], device float* res [[buffer(1)]], uint gid [[thread_position_in_grid]]) {
  device packed_float4* o = reinterpret_cast<device packed_float4*>(out + 2);
  o[gid] = packed_float4(float4(1.0f));
  res[gid] = 0.0f;
}
kernel void vec_clean(device float* out [[buffer(0)]], device float* res [[buffer(1)]], constant int& skip [[buffer(2)]],
                      uint gid [[thread_position_in_grid]]) {
  device packed_float4* o = reinterpret_cast<device packed_float4*>(out + 1);
  if (gid == 0u) out[0] = 0.0f;
  if (int(gid) == skip) return;
  o[gid] = packed_float4(float4(float(gid), 1.0f, 2.0f, 3.0f));
  const float4 v = o[gid];
  o[gid] = packed_float4(v * 2.0f);
  res[gid] = 0.0f;
}
)";

static void run_vectors(const char *mode) {
  Lib lib(kVecSrc, /*checked=*/1);
  CHECK(lib.lib, "%s: vector kernels compile %s", mode, lib.error.c_str());
  if (!lib.lib) return;
  auto go = [&](const char *name, uint32_t threads, uint32_t tg, size_t floats, int skip, std::vector<float> *keep) {
    auto *f = lib.fn(name);
    if (!f) return std::string("no function");
    std::vector<float> out(floats, 0.0f), res(threads, 0.0f);
    std::vector<int> sk(1, skip);
    Dispatch d(f);
    d.d.must_write_mask = 1u << 0;  // buffer(0) is an output: every byte must be written
    std::string e = d.buf(0, out).buf(1, res).buf(2, sk).threads(threads, 1, 1, tg, 1, 1).run();
    mgsim_function_release(f);
    if (keep) *keep = out;
    return e;
  };
  std::string e = go("vec_cross", 128, 32, 128, -1, nullptr);
  CHECK(has(e, "race in kernel 'vec_cross': buffer(0) element", "of another threadgroup both write it in one dispatch",
            "at line 6"),
        "%s: two threadgroups writing one packed_float4: %s", mode, e.c_str());
  e = go("vec_raw", 64, 64, 256, -1, nullptr);
  CHECK(has(e, "race in kernel 'vec_raw': buffer(0) element", "read-after-write", "at line 13", "at line 12"),
        "%s: a packed_float4 read of another simdgroup's write with no barrier between: %s", mode, e.c_str());
  e = go("vec_oob", 64, 64, 256, -1, nullptr);
  CHECK(has(e, "out-of-bounds write in kernel 'vec_oob': buffer(0)", "thread (63, 0, 0)"),
        "%s: a packed_float4 write past the end: %s", mode, e.c_str());
  std::vector<float> out;
  e = go("vec_clean", 64, 32, 4 * 64 + 1, -1, &out);
  bool ok = e.empty() && out[0] == 0.0f;
  for (uint32_t g = 0; g < 64; ++g)
    for (uint32_t k = 0; k < 4; ++k) ok = ok && out[1 + 4 * g + k] == 2.0f * (k ? float(k - 1) + 1.0f : float(g));
  CHECK(ok, "%s: packed_float4 writes, read back and rewritten by their own threads (row at an odd offset), report "
            "nothing: %s", mode, e.c_str());
  e = go("vec_clean", 64, 32, 4 * 64 + 1, 5, nullptr);
  CHECK(has(e, "unwritten output in kernel 'vec_clean': buffer(0)", "first at element 21"),
        "%s: a packed_float4 no thread wrote: %s", mode, e.c_str());
}

int main() {
  run_generations("ids and marks as configured", 80);
  setenv("MG_SIM_RACE_GROUP_IDS", "2", 1);   // 2 threadgroups per dispatch: every dispatch wraps
  setenv("MG_SIM_SHADOW_MARKS", "1", 1);
  run_generations("ids and marks wrapping every dispatch", 40);
  setenv("MG_SIM_RACE_GROUP_IDS", "3", 1);   // every other dispatch, ids not aligned
  setenv("MG_SIM_SHADOW_MARKS", "2", 1);
  run_generations("ids and marks wrapping every other dispatch", 40);
  unsetenv("MG_SIM_RACE_GROUP_IDS");
  unsetenv("MG_SIM_SHADOW_MARKS");
  run_all("work-item form");
  run_vectors("work-item form, tier 0");
  setenv("MG_SIM_OPT", "full", 1);  // the optimised code's fast paths at once
  run_vectors("work-item form, optimised");
  unsetenv("MG_SIM_OPT");
  setenv("MG_SIM_WORKITEM", "0", 1);
  run_all("fibers");
  unsetenv("MG_SIM_WORKITEM");
  return finish();
}
