// Simulator throughput (not part of the test run): a barrier-free elementwise kernel and a
// reduction with barriers and simd_sum over 16M floats. Prints medians of 5 runs.
// Run: test/native/mslsim/run.sh bench_sim
#include <algorithm>
#include <chrono>

#include "harness.h"

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  // block_sum (the fixture, with the metal_stdlib include) is bench/simulator.bench.ts's kernel.
  const std::string src = fixture("bench-kernels/block_sum.metal") + R"(
kernel void scale_shift(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                        uint gid [[thread_position_in_grid]]) {
  out[gid] = in[gid] * 2.0f + 1.0f;
}
// Each thread sums a strided run, then simd_sum, threadgroup memory and a barrier finish the group.
kernel void reduce_sum(device const float* in [[buffer(0)]], device float* partial [[buffer(1)]],
                       constant uint& n [[buffer(2)]],
                       uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                       uint tg [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint grid [[threads_per_grid]]) {
  threadgroup float sums[32];
  float acc = 0.0f;
  for (uint i = gid; i < n; i += grid) acc += in[i];
  acc = simd_sum(acc);
  if (lane == 0) sums[sg] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float v = simd_sum(sums[lane]);
    if (lane == 0) partial[tg] = v;
  }
}
)";
  for (int checked = 0; checked <= 1; ++checked) {
    Lib lib(src, checked);
    if (!lib.lib) {
      printf("FAIL compile %s\n", lib.error.c_str());
      return 1;
    }
    const uint32_t n = 16u << 20;
    std::vector<float> in = randf(n, 1), out(n, 0);
    auto *f = lib.fn("scale_shift");
    std::vector<double> ts;
    for (int r = 0; r < 5; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      std::string e = Dispatch(f).buf(0, in).buf(1, out).threads(n, 1, 1, 256, 1, 1).run();
      ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!e.empty()) printf("FAIL %s\n", e.c_str());
    }
    double t = median(ts);
    printf("%s elementwise (16M floats, read+write 128 MiB): %.1f ms, %.2f GB/s\n", checked ? "checked" : "plain  ", t * 1e3,
           2.0 * n * 4 / t / 1e9);
    auto *g = lib.fn("reduce_sum");
    const uint32_t groups = 1024, tgs = 256;
    std::vector<float> partial(groups, 0);
    ts.clear();
    uint32_t nn = n;
    for (int r = 0; r < 5; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      std::string e = Dispatch(g).buf(0, in).buf(1, partial).bytes(2, nn).threads(groups * tgs, 1, 1, tgs, 1, 1).run();
      ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!e.empty()) printf("FAIL %s\n", e.c_str());
    }
    t = median(ts);
    double got = 0, want = 0;
    for (float p : partial) got += p;
    for (float v : in) want += v;
    printf("%s reduction with barriers + simd_sum (16M floats, 1024x256 threads, fibers): %.1f ms, %.2f GB/s (sum %.3f vs %.3f)\n",
           checked ? "checked" : "plain  ", t * 1e3, double(n) * 4 / t / 1e9, got, want);
    auto *h = lib.fn("block_sum");
    std::vector<float> blocks(n / 1024, 0);
    ts.clear();
    for (int r = 0; r < 5; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      std::string e = Dispatch(h).buf(0, in).buf(1, blocks).threads(n / 4, 1, 1, 256, 1, 1).run();
      ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!e.empty()) printf("FAIL %s\n", e.c_str());
    }
    t = median(ts);
    got = 0;
    for (float p : blocks) got += p;
    printf("%s block reduction, 4 floats per thread (16M floats, 16384x256 threads, fibers): %.1f ms, %.2f GB/s (sum %.3f vs %.3f)\n",
           checked ? "checked" : "plain  ", t * 1e3, double(n) * 4 / t / 1e9, got, want);
    mgsim_function_release(f);
    mgsim_function_release(g);
    mgsim_function_release(h);
  }
  printf("threads: MG_SIM_THREADS=%s\n", getenv("MG_SIM_THREADS") ? getenv("MG_SIM_THREADS") : "(default: hardware concurrency)");
  return 0;
}
