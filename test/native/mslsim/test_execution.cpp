// Execution semantics: barriers, threadgroup memory, simd collectives (including divergence and
// lanes that exited), edge threadgroups of dispatchThreads, function constants, limits and errors.
// Every expected value is computed here, independently of the simulator.
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "harness.h"

static void test_tree_reduction() {
  const char *src = R"(
#include <metal_stdlib>
using namespace metal;
// Classic tree reduction in dynamic threadgroup memory, one partial sum per threadgroup.
kernel void tree_sum(device const int* in [[buffer(0)]], device int* out [[buffer(1)]],
                     threadgroup int* tmp [[threadgroup(0)]],
                     uint lid [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]],
                     uint tg [[threadgroup_position_in_grid]], uint n [[threads_per_threadgroup]]) {
  tmp[lid] = in[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = n / 2; s > 0; s >>= 1) {
    if (lid < s) tmp[lid] += tmp[lid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) out[tg] = tmp[0];
}
// The same with a static threadgroup array and a simd_sum finish.
kernel void tree_simd_sum(device const int* in [[buffer(0)]], device int* out [[buffer(1)]],
                          uint lid [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]],
                          uint tg [[threadgroup_position_in_grid]], uint n [[threads_per_threadgroup]]) {
  threadgroup int tmp[256];
  tmp[lid] = in[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = n / 2; s >= 32; s >>= 1) {
    if (lid < s) tmp[lid] += tmp[lid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid < 32) {
    int v = simd_sum(tmp[lid]);
    if (lid == 0) out[tg] = v;
  }
}
)";
  Lib lib(src);
  CHECK(lib.lib, "tree reduction compiles %s", lib.error.c_str());
  if (!lib.lib) return;
  const uint32_t groups = 37, tgs = 256;
  std::vector<int> in(size_t(groups) * tgs), out(groups, -1), out2(groups, -1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = int((i * 7919) % 1001) - 500;
  auto *f = lib.fn("tree_sum");
  std::string e = Dispatch(f).buf(0, in).buf(1, out).tgmem(0, tgs * sizeof(int)).groups(groups, 1, 1, tgs, 1, 1).run();
  auto *g = lib.fn("tree_simd_sum");
  std::string e2 = Dispatch(g).buf(0, in).buf(1, out2).groups(groups, 1, 1, tgs, 1, 1).run();
  bool ok = true, ok2 = true;
  for (uint32_t t = 0; t < groups; ++t) {
    int want = 0;
    for (uint32_t i = 0; i < tgs; ++i) want += in[t * tgs + i];
    ok = ok && out[t] == want;
    ok2 = ok2 && out2[t] == want;
  }
  CHECK(e.empty() && ok, "tree reduction with barriers in [[threadgroup(0)]] memory, %u groups %s", groups, e.c_str());
  // The same function dispatched from several threads at once (each with its own output).
  std::vector<std::thread> ts;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int rep = 0; rep < 5; ++rep) {
        std::vector<int> o(groups, -1);
        std::string err = Dispatch(f).buf(0, in).buf(1, o).tgmem(0, tgs * sizeof(int)).groups(groups, 1, 1, tgs, 1, 1).run();
        if (err.empty() && o == out) good.fetch_add(1);
      }
    });
  for (auto &t : ts) t.join();
  CHECK(good.load() == 20, "concurrent dispatches of one fiber kernel from 4 threads: %d of 20 correct", good.load());
  CHECK(e2.empty() && ok2, "tree reduction in a static threadgroup array + simd_sum %s", e2.c_str());
  CHECK(mgsim_function_static_threadgroup_memory_length(g) == 1024 && mgsim_function_static_threadgroup_memory_length(f) == 0,
        "static threadgroup memory length: %d and %d", mgsim_function_static_threadgroup_memory_length(g),
        mgsim_function_static_threadgroup_memory_length(f));
  mgsim_function_release(f);
  mgsim_function_release(g);
}

static void test_scan_and_edges() {
  const char *src = R"(
#include <metal_stdlib>
using namespace metal;
// Exclusive scan across a threadgroup: simd prefix sums plus a scan of the simdgroup totals.
kernel void block_scan(device const int* in [[buffer(0)]], device int* out [[buffer(1)]],
                       uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup int totals[32];
  int v = in[gid];
  int pre = simd_prefix_exclusive_sum(v);
  int tot = simd_sum(v);
  if (lane == 0) totals[sg] = tot;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    int t = lane < nsg ? totals[lane] : 0;
    int tp = simd_prefix_exclusive_sum(t);
    if (lane < nsg) totals[lane] = tp;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = pre + totals[sg];
}
// Edge threadgroups: what each live thread sees, and a simd_sum over the live lanes only.
kernel void edges(device uint* out [[buffer(0)]], device uint* tpt [[buffer(1)]], device uint* dtpt [[buffer(2)]],
                  device uint* nsg [[buffer(3)]], device uint* sums [[buffer(4)]],
                  uint gid [[thread_position_in_grid]], uint n [[threads_per_threadgroup]],
                  uint dn [[dispatch_threads_per_threadgroup]], uint sgs [[simdgroups_per_threadgroup]],
                  ushort lane [[thread_index_in_simdgroup]], uint grid [[threads_per_grid]]) {
  out[gid] = gid * 3u + 1u;
  tpt[gid] = n;
  dtpt[gid] = dn;
  nsg[gid] = sgs + grid * 0u;
  uint s = simd_sum(gid);
  if (lane == 0) sums[gid / 32u] = s;
}
)";
  Lib lib(src);
  CHECK(lib.lib, "scan/edge kernels compile %s", lib.error.c_str());
  if (!lib.lib) return;
  const uint32_t n = 1000, tg = 256;
  std::vector<int> in(n), out(n, -1);
  for (uint32_t i = 0; i < n; ++i) in[i] = int((i * 37) % 23) - 11;
  auto *f = lib.fn("block_scan");
  std::string e = Dispatch(f).buf(0, in).buf(1, out).threads(n, 1, 1, tg, 1, 1).run();
  bool ok = e.empty();
  for (uint32_t b = 0; b < n; b += tg) {
    int acc = 0;
    for (uint32_t i = b; i < std::min(n, b + tg); ++i) {
      ok = ok && out[i] == acc;
      acc += in[i];
    }
  }
  CHECK(ok, "threadgroup exclusive scan (simd_prefix_exclusive_sum) over 1000 with 256-thread groups %s", e.c_str());

  auto *g = lib.fn("edges");
  std::vector<uint32_t> o(1024, 0xdeadbeef), tpt(1024, 0), dtpt(1024, 0), nsg(1024, 0), sums(32, 0xdeadbeef);
  e = Dispatch(g).buf(0, o).buf(1, tpt).buf(2, dtpt).buf(3, nsg).buf(4, sums).threads(n, 1, 1, tg, 1, 1).run();
  bool exact = e.empty();
  for (uint32_t i = 0; i < 1024; ++i) exact = exact && o[i] == (i < n ? i * 3 + 1 : 0xdeadbeefu);
  CHECK(exact, "1000-thread grid with 256-thread groups writes exactly 1000 results %s", e.c_str());
  bool attrs = true;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t want = i >= 768 ? 232 : 256;
    attrs = attrs && tpt[i] == want && dtpt[i] == 256 && nsg[i] == (want + 31) / 32;
  }
  CHECK(attrs, "edge threadgroup reports threads_per_threadgroup 232 (dispatch_threads_per_threadgroup 256, 8 simdgroups)");
  bool sums_ok = true;
  for (uint32_t s = 0; s < 32; ++s) {
    uint64_t want = 0;
    for (uint32_t i = s * 32; i < std::min(n, s * 32 + 32); ++i) want += i;
    sums_ok = sums_ok && sums[s] == uint32_t(want);
  }
  CHECK(sums_ok, "simd_sum in the last partial simdgroup (lanes 992..999) sums only its 8 live lanes: %u (want %u)",
        sums[31], 992u + 993 + 994 + 995 + 996 + 997 + 998 + 999);
  mgsim_function_release(f);
  mgsim_function_release(g);
}

static void test_collectives() {
  const char *src = R"(
#include <metal_stdlib>
using namespace metal;
kernel void butterfly(device const int* in [[buffer(0)]], device int* out [[buffer(1)]],
                      uint gid [[thread_position_in_grid]]) {
  int v = in[gid];
  for (ushort m = 16; m > 0; m >>= 1) v += simd_shuffle_xor(v, m);
  out[gid] = v;
}
// One output row of 16 values per lane, each from a different collective.
kernel void many(device const int* in [[buffer(0)]], device int* out [[buffer(1)]],
                 uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  int v = in[gid];
  device int* o = out + gid * 16;
  o[0] = simd_max(v);
  o[1] = simd_min(v);
  o[2] = simd_product(v % 3 == 0 ? 2 : 1);
  o[3] = simd_and(v | 0x100);
  o[4] = simd_or(v & 0xF);
  o[5] = simd_xor(v);
  o[6] = simd_prefix_inclusive_sum(v);
  o[7] = simd_prefix_exclusive_product(v % 3 == 0 ? 2 : 1);
  o[8] = simd_shuffle(v, ushort((lane * 7u) % 32u));
  o[9] = simd_shuffle_up(v, ushort(3));
  o[10] = simd_shuffle_down(v, ushort(5));
  o[11] = simd_broadcast(v, ushort(9));
  o[12] = int(uint64_t(simd_ballot(v > 0)) & 0xffffffffu);
  o[13] = (simd_all(v > -1000) ? 1 : 0) + (simd_any(v == in[gid - lane + 17]) ? 2 : 0) + (simd_is_first() ? 4 : 0);
  o[14] = simd_broadcast_first(v);
  // Divergence: even and odd lanes reach different call sites and reduce separately.
  if (lane % 2 == 0) o[15] = simd_sum(v);
  else o[15] = simd_sum(v * 10);
}
// Lanes that returned early are not part of a later collective.
kernel void early_exit(device const int* in [[buffer(0)]], device int* out [[buffer(1)]],
                       uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  if (lane >= 20) return;
  out[gid] = simd_sum(in[gid]) + (simd_is_first() ? 1000000 : 0);
}
)";
  Lib lib(src);
  CHECK(lib.lib, "collective kernels compile %s", lib.error.c_str());
  if (!lib.lib) return;
  const uint32_t n = 512;
  std::vector<int> in(n), out(n, 0);
  for (uint32_t i = 0; i < n; ++i) in[i] = int((i * 2654435761u) % 201) - 100;
  auto *f = lib.fn("butterfly");
  std::string e = Dispatch(f).buf(0, in).buf(1, out).threads(n, 1, 1, 128, 1, 1).run();
  bool ok = e.empty();
  for (uint32_t s = 0; s < n; s += 32) {
    int want = 0;
    for (uint32_t i = s; i < s + 32; ++i) want += in[i];
    for (uint32_t i = s; i < s + 32; ++i) ok = ok && out[i] == want;
  }
  CHECK(ok, "simd_shuffle_xor butterfly all-reduce %s", e.c_str());

  auto *g = lib.fn("many");
  std::vector<int> o(n * 16, 0);
  e = Dispatch(g).buf(0, in).buf(1, o).threads(n, 1, 1, 64, 1, 1).run();
  const char *names[16] = {"simd_max", "simd_min", "simd_product", "simd_and", "simd_or", "simd_xor",
                           "simd_prefix_inclusive_sum", "simd_prefix_exclusive_product", "simd_shuffle",
                           "simd_shuffle_up", "simd_shuffle_down", "simd_broadcast", "simd_ballot",
                           "simd_all/any/is_first", "simd_broadcast_first", "divergent simd_sum"};
  int bad[16] = {0};
  for (uint32_t s = 0; s < n; s += 32) {
    const int *v = &in[s];
    int mx = v[0], mn = v[0], prod = 1, a = -1, orr = 0, x = 0, even = 0, odd = 0;
    uint32_t ballot = 0;
    for (int l = 0; l < 32; ++l) {
      mx = std::max(mx, v[l]); mn = std::min(mn, v[l]);
      prod *= v[l] % 3 == 0 ? 2 : 1; a &= v[l] | 0x100; orr |= v[l] & 0xF; x ^= v[l];
      if (v[l] > 0) ballot |= 1u << l;
      if (l % 2 == 0) even += v[l]; else odd += v[l] * 10;
    }
    int incl = 0, exprod = 1;
    for (int l = 0; l < 32; ++l) {
      const int *r = &o[(s + l) * 16];
      incl += v[l];
      int want[16] = {mx, mn, prod, a, orr, x, incl, exprod, v[(l * 7) % 32], l >= 3 ? v[l - 3] : v[l],
                      l + 5 < 32 ? v[l + 5] : v[l], v[9], int(ballot), 1 + 2 + (l == 0 ? 4 : 0), v[0], l % 2 == 0 ? even : odd};
      exprod *= v[l] % 3 == 0 ? 2 : 1;
      for (int k = 0; k < 16; ++k) bad[k] += r[k] != want[k];
    }
  }
  CHECK(e.empty(), "many collectives dispatch %s", e.c_str());
  for (int k = 0; k < 16; ++k) CHECK(bad[k] == 0, "%s matches the lane-order reference (%d mismatches)", names[k], bad[k]);

  auto *h = lib.fn("early_exit");
  std::vector<int> o2(n, -1);
  e = Dispatch(h).buf(0, in).buf(1, o2).threads(n, 1, 1, 96, 1, 1).run();
  ok = e.empty();
  for (uint32_t s = 0; s < n; s += 32) {
    int want = 0;
    for (uint32_t i = s; i < s + 20; ++i) want += in[i];
    for (uint32_t l = 0; l < 32; ++l) ok = ok && o2[s + l] == (l < 20 ? want + (l == 0 ? 1000000 : 0) : -1);
  }
  CHECK(ok, "lanes that returned early drop out of simd_sum / simd_is_first %s", e.c_str());
  mgsim_function_release(f);
  mgsim_function_release(g);
  mgsim_function_release(h);
}

static void test_barrier_errors() {
  const char *src = R"(
#include <metal_stdlib>
using namespace metal;
kernel void partial_barrier(device int* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]],
                            uint gid [[thread_position_in_grid]]) {
  if (lid >= 10) return;
  threadgroup_barrier(mem_flags::mem_device);
  out[gid] = 1;
}
)";
  Lib lib(src);
  CHECK(lib.lib, "partial-barrier kernel compiles %s", lib.error.c_str());
  if (!lib.lib) return;
  auto *f = lib.fn("partial_barrier");
  std::vector<int> out(256, 0);
  auto t0 = std::chrono::steady_clock::now();
  std::string e = Dispatch(f).buf(0, out).threads(256, 1, 1, 64, 1, 1).run();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(e.find("threadgroup_barrier reached by 10 of 64 threads") != std::string::npos &&
            e.find("partial_barrier") != std::string::npos && e.find("threadgroup (") != std::string::npos && ms < 5000,
        "a barrier reached by only some threads is an error, not a hang (%.1f ms): %s", ms, e.c_str());
  mgsim_function_release(f);
}

static void test_constants_and_limits() {
  const char *src = R"(
#include <metal_stdlib>
using namespace metal;
constant bool use_scale [[function_constant(0)]];
constant float scale_value [[function_constant(1)]];
constant bool has_bias = is_function_constant_defined(scale_value) && use_scale;
[[max_total_threads_per_threadgroup(64)]]
kernel void scaled(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                   uint gid [[thread_position_in_grid]]) {
  float v = in[gid];
  if (use_scale) v *= scale_value;
  out[gid] = v + (has_bias ? 0.5f : 0.0f);
}
kernel void big_static(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  threadgroup float t[4096];
  t[lid] = 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[lid] = t[lid];
}
)";
  Lib lib(src);
  CHECK(lib.lib, "function-constant kernel compiles %s", lib.error.c_str());
  if (!lib.lib) return;
  mgsim_constant_value cv[2] = {};
  cv[0].index = 0;
  cv[0].type = 53;
  cv[0].bytes[0] = 1;
  cv[1].index = -1;
  cv[1].name = "scale_value";
  cv[1].type = 3;
  float sc = 2.5f;
  memcpy(cv[1].bytes, &sc, 4);
  char *err = nullptr;
  mgsim_function *f = mgsim_function_create(lib.lib, "scaled", cv, 2, &err);
  mgsim_function *f0 = mgsim_function_create(lib.lib, "scaled", nullptr, 0, &err);
  std::vector<float> in = randf(100, 3), o1(100, 0), o0(100, 0);
  std::string e = Dispatch(f).buf(0, in).buf(1, o1).threads(100, 1, 1, 64, 1, 1).run();
  std::string e0 = Dispatch(f0).buf(0, in).buf(1, o0).threads(100, 1, 1, 64, 1, 1).run();
  bool ok = e.empty() && e0.empty();
  for (int i = 0; i < 100; ++i) ok = ok && o1[i] == in[i] * 2.5f + 0.5f && o0[i] == in[i];
  CHECK(ok, "function constants by index and by name specialise the kernel %s %s", e.c_str(), e0.c_str());
  cv[1].type = 29;  // int, but the constant is a float
  mgsim_function *bad = mgsim_function_create(lib.lib, "scaled", cv, 2, &err);
  CHECK(!bad && err && strstr(err, "scale_value"), "a function constant of the wrong type is rejected: %s", err ? err : "");
  if (err) mgsim_string_free(err);
  err = nullptr;
  CHECK(mgsim_function_max_total_threads_per_threadgroup(f) == 64, "[[max_total_threads_per_threadgroup(64)]] is reported");
  e = Dispatch(f).buf(0, in).buf(1, o1).threads(100, 1, 1, 128, 1, 1).run();
  CHECK(e.find("exceeds the function's maximum of 64") != std::string::npos, "an oversized threadgroup is an error: %s", e.c_str());

  auto *g = lib.fn("big_static");
  std::vector<float> out(64, 0);
  CHECK(mgsim_function_static_threadgroup_memory_length(g) == 16384, "static threadgroup array of 4096 floats is 16384 bytes");
  e = Dispatch(g).buf(0, out).tgmem(0, 16400).groups(1, 1, 1, 64, 1, 1).run();
  CHECK(e.find("exceeds the limit of 32768") != std::string::npos, "static + dynamic threadgroup memory over 32 KiB is an error: %s", e.c_str());
  e = Dispatch(g).buf(0, out).groups(1, 1, 1, 64, 1, 1).run();
  CHECK(e.empty() && out[63] == 1.0f, "the same kernel within the limit runs %s", e.c_str());
  std::string ferr;
  mgsim_function *none = lib.fn("nope", &ferr);
  CHECK(!none && ferr.find("no kernel named 'nope'") != std::string::npos, "unknown function name: %s", ferr.c_str());
  e = Dispatch(g).groups(1, 1, 1, 64, 1, 1).run();
  CHECK(e.find("buffer(0) is not bound") != std::string::npos, "an unbound buffer is an error: %s", e.c_str());
  mgsim_function_release(f);
  mgsim_function_release(f0);
  mgsim_function_release(g);
}

static void test_compile_errors() {
  Lib a("#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n  float x = 1.0f;\n  o[i] = x + undefined_name;\n}\n");
  CHECK(!a.lib && a.error.find("[mgsim compile]") == 0 && a.error.find("program_source:5:") != std::string::npos &&
            a.error.find("undefined_name") != std::string::npos,
        "compiler errors carry the user's line numbers: %.200s", a.error.c_str());
  Lib b("kernel void k(texture2d<float> t [[texture(0)]], uint i [[thread_position_in_grid]]) {}\n");
  CHECK(!b.lib && b.error.find("texture2d") != std::string::npos && b.error.find("program_source:1") != std::string::npos,
        "unsupported constructs are named: %s", b.error.c_str());
  Lib c("kernel void k(device float* o, uint i [[thread_position_in_grid]]) { o[i] = 0; }\n");
  CHECK(!c.lib && c.error.find("has no [[buffer]]") != std::string::npos, "a parameter without an attribute is an error: %s", c.error.c_str());
  // h literals and address spaces in a helper; two kernels; a comment mentioning kernel void x(
  Lib d(R"(
#include <metal_stdlib>
using namespace metal;
/* kernel void fake(device float* p [[buffer(0)]]) {} */
static float twice(thread const float& v) { return v * 2.0f; }
inline void store(device float* p, uint i, float v) { p[i] = v; }
kernel void k1(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { store(o, i, twice(float(i))); }
kernel void k2(device float* o [[buffer(0)]], constant float& add [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  o[i] = o[i] + add;
}
)");
  CHECK(d.lib && mgsim_library_function_count(d.lib) == 2, "two kernels, helpers with address spaces, a commented-out kernel %s", d.error.c_str());
  if (d.lib) {
    auto *k1 = d.fn("k1");
    auto *k2 = d.fn("k2");
    std::vector<float> o(40, 0);
    float add = 0.25f;
    std::string e = Dispatch(k1).buf(0, o).threads(40, 1, 1, 8, 1, 1).run();
    e += Dispatch(k2).buf(0, o).bytes(1, add).threads(40, 1, 1, 8, 1, 1).run();
    bool ok = e.empty();
    for (int i = 0; i < 40; ++i) ok = ok && o[i] == float(i) * 2 + 0.25f;
    CHECK(ok, "constant float& bound by reference %s", e.c_str());
    mgsim_function_release(k1);
    mgsim_function_release(k2);
  }
}

// 3-D geometry with vector attribute forms, in dispatchThreads (edge groups) and
// dispatchThreadgroups; and collectives over vector types.
static void test_vector_attributes() {
  const char *src = R"(
#include <metal_stdlib>
using namespace metal;
kernel void where3(device uint* out [[buffer(0)]],
                   uint3 pos [[thread_position_in_grid]], ushort3 local [[thread_position_in_threadgroup]],
                   uint3 group [[threadgroup_position_in_grid]], uint3 size [[threads_per_threadgroup]],
                   uint3 grid [[threads_per_grid]], uint3 groups [[threadgroups_per_grid]],
                   uint index [[thread_index_in_threadgroup]], uint2 pos2 [[thread_position_in_grid]]) {
  uint linear = (pos.z * grid.y + pos.y) * grid.x + pos.x;
  device uint* o = out + linear * 12;
  o[0] = pos.x; o[1] = pos.y; o[2] = pos.z;
  o[3] = uint(local.x) + 100u * uint(local.y) + 10000u * uint(local.z);
  o[4] = group.x + 100u * group.y + 10000u * group.z;
  o[5] = size.x + 100u * size.y + 10000u * size.z;
  o[6] = grid.x + 100u * grid.y + 10000u * grid.z;
  o[7] = groups.x + 100u * groups.y + 10000u * groups.z;
  o[8] = index;
  o[9] = pos2.x + 1000u * pos2.y;
  o[10] = 7u;
  o[11] = 7u;
}
kernel void half_literals(device ushort* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  half a = 0.1h;
  half b = 1.5h * 2.0h;
  out[i * 3 + 0] = as_type<ushort>(a);
  out[i * 3 + 1] = as_type<ushort>(b);
  out[i * 3 + 2] = as_type<ushort>(half(65504.0h));
}
kernel void vec_sum(device const float4* in [[buffer(0)]], device float4* out [[buffer(1)]],
                    uint gid [[thread_position_in_grid]]) {
  out[gid] = simd_sum(in[gid]) + simd_shuffle_down(in[gid], ushort(1));
}
)";
  Lib lib(src);
  CHECK(lib.lib, "vector-attribute kernels compile %s", lib.error.c_str());
  if (!lib.lib) return;
  auto *f = lib.fn("where3");
  const uint32_t G[3] = {5, 7, 3}, T[3] = {4, 2, 2};
  std::vector<uint32_t> out(5 * 7 * 3 * 12, 0);
  std::string e = Dispatch(f).buf(0, out).threads(G[0], G[1], G[2], T[0], T[1], T[2]).run();
  size_t bad = 0;
  for (uint32_t z = 0; z < G[2]; ++z)
    for (uint32_t y = 0; y < G[1]; ++y)
      for (uint32_t x = 0; x < G[0]; ++x) {
        const uint32_t *o = &out[((z * G[1] + y) * G[0] + x) * 12];
        uint32_t p[3] = {x, y, z}, lc[3], gr[3], sz[3], ng[3];
        for (int k = 0; k < 3; ++k) {
          lc[k] = p[k] % T[k];
          gr[k] = p[k] / T[k];
          ng[k] = (G[k] + T[k] - 1) / T[k];
          sz[k] = std::min(T[k], G[k] - gr[k] * T[k]);  // edge groups are smaller
        }
        uint32_t want[12] = {x, y, z, lc[0] + 100 * lc[1] + 10000 * lc[2], gr[0] + 100 * gr[1] + 10000 * gr[2],
                             sz[0] + 100 * sz[1] + 10000 * sz[2], G[0] + 100 * G[1] + 10000 * G[2],
                             ng[0] + 100 * ng[1] + 10000 * ng[2], lc[0] + sz[0] * (lc[1] + sz[1] * lc[2]),
                             x + 1000 * y, 7, 7};
        for (int k = 0; k < 12; ++k) bad += o[k] != want[k];
      }
  CHECK(e.empty() && bad == 0, "3-D dispatchThreads (5,7,3)/(4,2,2): uint3/ushort3/uint2 attributes and edge sizes (%zu mismatches) %s", bad, e.c_str());
  auto *g = lib.fn("vec_sum");
  std::vector<float> in = randf(64 * 4, 8), o2(64 * 4, 0);
  e = Dispatch(g).buf(0, in).buf(1, o2).threads(64, 1, 1, 64, 1, 1).run();
  bad = 0;
  for (int s = 0; s < 64; s += 32)
    for (int l = 0; l < 32; ++l)
      for (int c = 0; c < 4; ++c) {
        float sum = in[size_t(s * 4 + c)];
        for (int j = 1; j < 32; ++j) sum += in[size_t((s + j) * 4 + c)];
        float down = l + 1 < 32 ? in[size_t((s + l + 1) * 4 + c)] : in[size_t((s + l) * 4 + c)];
        bad += o2[size_t((s + l) * 4 + c)] != sum + down;
      }
  CHECK(e.empty() && bad == 0, "simd_sum / simd_shuffle_down over float4 (%zu mismatches) %s", bad, e.c_str());
  auto *h = lib.fn("half_literals");
  std::vector<uint16_t> hb(6, 0);
  e = Dispatch(h).buf(0, hb).threads(2, 1, 1, 2, 1, 1).run();
  // 0.1 → 0x2E66 (0.0999755859375), 3.0 → 0x4200, 65504 → 0x7BFF: binary16 encodings by hand
  CHECK(e.empty() && hb[0] == 0x2E66 && hb[1] == 0x4200 && hb[2] == 0x7BFF && hb[3] == 0x2E66,
        "h literals are half: 0.1h=%04x 1.5h*2.0h=%04x 65504.0h=%04x %s", hb[0], hb[1], hb[2], e.c_str());
  mgsim_function_release(h);
  mgsim_function_release(f);
  mgsim_function_release(g);
}

// The pool keeps its workers off the dispatching thread's CPU (dispatch.cpp's Pool): the first
// dispatch it runs, with two or more CPUs allowed and the defaults, moves them (pool_steers), and
// every thread group still runs exactly once.
static void test_pool_placement() {
  cpu_set_t allowed;
  const bool steering = sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) >= 2 &&
                        !getenv("MG_SIM_STEER") && !getenv("MG_SIM_THREADS");
  Lib lib(R"(
kernel void twice(device const float* in [[buffer(0)]], device float* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  out[i] = in[i] * 2.0f;
}
)");
  CHECK(lib.lib, "pool kernel compiles %s", lib.error.c_str());
  if (!lib.lib) return;
  const uint32_t n = 1 << 16;  // 256 groups of 256: run on the pool
  std::vector<float> in(n), out(n, -1.0f);
  for (uint32_t i = 0; i < n; ++i) in[i] = float(i % 1000);
  const std::string e = Dispatch(lib.fn("twice")).buf(0, in).buf(1, out).threads(n, 1, 1, 256, 1, 1).run();
  bool ok = e.empty();
  for (uint32_t i = 0; i < n; ++i) ok = ok && out[i] == float(i % 1000) * 2.0f;
  CHECK(ok, "a pool dispatch writes every element once %s", e.c_str());
  mgsim_stats s{};
  mgsim_get_stats(&s);
  if (steering) CHECK(s.pool_steers >= 1, "the pool moved its workers off the dispatching CPU (pool_steers %llu)", (unsigned long long)s.pool_steers);
  else printf("SKIP pool placement: one CPU allowed, or MG_SIM_STEER / MG_SIM_THREADS set\n");
}

int main() {
  test_vector_attributes();
  test_tree_reduction();
  test_scan_and_edges();
  test_collectives();
  test_barrier_errors();
  test_constants_and_limits();
  test_compile_errors();
  test_pool_placement();
  return finish();
}
