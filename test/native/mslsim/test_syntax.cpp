// MSL syntax the translator must handle: MLX-style instantiation macros, templates with non-type
// parameters, helper templates calling collectives (fiber detection through the call graph and
// through macros), program-scope constants, structs with device pointers, pragmas, both plain and
// checked mode.
#include "harness.h"

static const char *kSrc = R"(
#include <metal_stdlib>
#include <metal_simdgroup>
using namespace metal;

#define METAL_FUNC inline __attribute__((always_inline))
#define MY_SYNC threadgroup_barrier(mem_flags::mem_threadgroup)
static constant constexpr const int kScale = 3;
constexpr constant int kBlock = 64;
constant float kTable[4] = {1.0f, 2.0f, 4.0f, 8.0f};
constant int kOffset = 2;

struct Span {
  device float* p;
  int n;
  METAL_FUNC float get(int i) const { return i < n ? p[i] : 0.0f; }
};

template <typename T, int N = 4>
METAL_FUNC void load_n(const device T* in, thread T (&vals)[N], uint base) {
#pragma clang loop unroll(full)
  for (int i = 0; i < N; ++i) vals[i] = in[base + i];
}

template <typename T>
METAL_FUNC T group_total(T v, threadgroup T* scratch, uint lane, uint sg, uint nsg) {
  v = simd_sum(v);
  if (lane == 0) scratch[sg] = v;
  MY_SYNC;
  T t = lane < nsg ? scratch[lane] : T(0);
  return simd_sum(t);
}

// Sums N consecutive values per thread, reduces over the threadgroup, scales by kScale * kTable.
template <typename T, int N>
[[kernel]] void block_sum(const device T* in [[buffer(0)]], device T* out [[buffer(1)]],
                          uint gid [[thread_position_in_grid]], uint tg [[threadgroup_position_in_grid]],
                          ushort lane [[thread_index_in_simdgroup]], ushort sg [[simdgroup_index_in_threadgroup]],
                          ushort nsg [[simdgroups_per_threadgroup]]) {
  threadgroup T scratch[kBlock / 2];
  threadgroup T unused_pad[N * 2];
  T vals[N];
  load_n<T, N>(in, vals, gid * N);
  T acc = T(0);
  for (int i = 0; i < N; ++i) acc += vals[i];
  T total = group_total<T>(acc, scratch, lane, sg, nsg);
  if (gid % 64 == 0) out[tg] = total * T(kScale) * T(kTable[kOffset]);
  (void)unused_pad;
}

#define instantiate_kernel(name, func, ...) \
  template [[host_name(name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
#define instantiate_block_sum(tname, type, n) \
  instantiate_kernel("block_sum_" #tname "_" #n, block_sum, type, n)

instantiate_block_sum(float32, float, 4)
instantiate_block_sum(int32, int, 8)

// Functors with operator() whose bodies hold threadgroup memory and collectives.
struct SumOp {
  template <typename T>
  METAL_FUNC T operator()(T v) const { return simd_sum(v); }
  float operator[](int i) const { return float(i); }
};
[[kernel]] void functor_sum(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                            uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]]) {
  threadgroup float stage[64];
  stage[lid] = in[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  SumOp op;
  out[gid] = op(stage[63 - lid]) + op[1];
}

// A plain kernel using a struct holding a device pointer, and a lambda.
[[kernel]] void span_copy(device float* src [[buffer(0)]], device float* dst [[buffer(1)]],
                          constant int& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  Span s{src, n};
  auto twice = [](float x) { return 2.0f * x; };
  dst[i] = twice(s.get(int(i)));
}
)";

static void run(int checked) {
  Lib lib(kSrc, checked);
  CHECK(lib.lib, "%s: tricky MSL compiles %s", checked ? "checked" : "plain", lib.error.c_str());
  if (!lib.lib) return;
  int count = mgsim_library_function_count(lib.lib);
  std::string names;
  for (int i = 0; i < count; ++i) names += std::string(mgsim_library_function_name(lib.lib, i)) + " ";
  CHECK(count == 4 && names.find("block_sum_float32_4 ") != std::string::npos && names.find("block_sum_int32_8 ") != std::string::npos &&
            names.find("span_copy ") != std::string::npos,
        "instantiation macros produce host names: %s", names.c_str());
  auto *f = lib.fn("block_sum_float32_4");
  auto *g = lib.fn("block_sum_int32_8");
  auto *h = lib.fn("span_copy");
  if (!f || !g || !h) return;
  CHECK(mgsim_function_static_threadgroup_memory_length(f) == 32 * 4 + 8 * 4 &&
            mgsim_function_static_threadgroup_memory_length(g) == 32 * 4 + 16 * 4,
        "template-dependent threadgroup sizes: %d, %d", mgsim_function_static_threadgroup_memory_length(f),
        mgsim_function_static_threadgroup_memory_length(g));
  const uint32_t groups = 5, tg = 64;
  std::vector<float> inf(groups * tg * 4);
  for (size_t i = 0; i < inf.size(); ++i) inf[i] = float(int(i % 13) - 6);
  std::vector<float> outf(groups, 0);
  std::string e = Dispatch(f).buf(0, inf).buf(1, outf).threads(groups * tg, 1, 1, tg, 1, 1).run();
  bool ok = e.empty();
  for (uint32_t b = 0; b < groups; ++b) {
    double want = 0;
    for (uint32_t i = b * tg * 4; i < (b + 1) * tg * 4; ++i) want += inf[i];
    ok = ok && outf[b] == float(want * 3 * 4);
  }
  CHECK(ok, "block_sum<float, 4> through helper templates, a barrier macro and simd_sum %s", e.c_str());
  std::vector<int> ini(groups * tg * 8), outi(groups, 0);
  for (size_t i = 0; i < ini.size(); ++i) ini[i] = int(i % 29) - 14;
  e = Dispatch(g).buf(0, ini).buf(1, outi).threads(groups * tg, 1, 1, tg, 1, 1).run();
  ok = e.empty();
  for (uint32_t b = 0; b < groups; ++b) {
    long want = 0;
    for (uint32_t i = b * tg * 8; i < (b + 1) * tg * 8; ++i) want += ini[i];
    ok = ok && outi[b] == int(want * 12);
  }
  CHECK(ok, "block_sum<int, 8> %s", e.c_str());
  std::vector<float> src = randf(50, 3), dst(50, 0);
  int n = 40;
  e = Dispatch(h).buf(0, src).buf(1, dst).bytes(2, n).threads(50, 1, 1, 16, 1, 1).run();
  ok = e.empty();
  for (int i = 0; i < 50; ++i) ok = ok && dst[i] == (i < 40 ? 2 * src[i] : 0.0f);
  CHECK(ok, "struct with a device pointer member and a lambda %s", e.c_str());
  auto *k = lib.fn("functor_sum");
  std::vector<float> fin(128), fout(128, 0);
  for (int i = 0; i < 128; ++i) fin[size_t(i)] = float(i % 9);
  e = Dispatch(k).buf(0, fin).buf(1, fout).threads(128, 1, 1, 64, 1, 1).run();
  ok = e.empty();
  for (int i = 0; i < 128; ++i) {
    // lanes 0..31 of a group hold stage[63..32], lanes 32..63 hold stage[31..0]
    int g = i / 64, l = i % 64;
    float want = 1.0f;
    for (int j = 0; j < 32; ++j) want += fin[size_t(g * 64 + (l < 32 ? 63 - j : 31 - j))];
    ok = ok && fout[size_t(i)] == want;
  }
  CHECK(ok, "functor operator() with simd_sum over threadgroup memory %s", e.c_str());
  mgsim_function_release(k);
  mgsim_stats st;
  mgsim_get_stats(&st);
  mgsim_function_release(f);
  mgsim_function_release(g);
  mgsim_function_release(h);
}

int main() {
  mgsim_stats s0, s1;
  mgsim_get_stats(&s0);
  run(0);
  mgsim_get_stats(&s1);
  CHECK(s1.fiber_dispatches - s0.fiber_dispatches == 3 && s1.dispatches - s0.dispatches == 4,
        "collectives reached through helpers and macros run as fibers; the plain kernel does not (%llu of %llu)",
        (unsigned long long)(s1.fiber_dispatches - s0.fiber_dispatches), (unsigned long long)(s1.dispatches - s0.dispatches));
  run(1);
  return finish();
}
