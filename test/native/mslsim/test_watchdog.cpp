// The dispatch watchdog: a kernel that never finishes fails its dispatch after MG_SIM_TIMEOUT_MS
// with a message naming the kernel, whether its threads run as plain loops or fibers, on the
// calling thread or the worker pool, or spend their time in the simulator's own code (checked-mode
// reports); the stopped threads write nothing more, and the process keeps working afterwards.
#include <chrono>
#include <cstdlib>

#include "harness.h"

static const char *kSrc = R"(
#include <metal_stdlib>
using namespace metal;
// Thread 7 of every threadgroup never finishes (the stores keep the loop from being removed).
kernel void spin_plain(device uint* out [[buffer(0)]], uint gid [[thread_position_in_grid]],
                       uint lid [[thread_index_in_threadgroup]]) {
  out[gid] = 1u;
  if (lid == 7) for (uint i = 0;; ++i) out[gid] = i;
}
// Every lane loops through a barrier forever: no barrier error, no end.
kernel void spin_fiber(device uint* out [[buffer(0)]], uint gid [[thread_position_in_grid]],
                       uint lid [[thread_index_in_threadgroup]]) {
  threadgroup uint stage[64];
  for (uint i = 0;; ++i) {
    stage[lid] = i;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid] = stage[63 - lid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}
// In checked mode every iteration reads out of bounds: most of the time goes to the report.
kernel void spin_reporting(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                           uint gid [[thread_position_in_grid]]) {
  for (uint i = 0;; ++i) out[gid] = in[gid + 100000u + (i & 1u)];
}
kernel void fine(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                 uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  out[gid] = simd_sum(in[gid]) + float(lane);
}
kernel void fine_plain(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                       uint gid [[thread_position_in_grid]]) {
  out[gid] = in[gid] * 2.0f + 1.0f;
}
)";

// Short enough that the six stopped dispatches cost little CPU (the pool's threads spin until then),
// long enough that the watchdog's own round is small beside it. A kernel is promoted to its
// optimised tier after half of that (MG_SIM_TIER_UP_MS), so the first stop of each kernel hits its
// tier-0 object and the later ones the optimised one (spin_fiber: fibers, then the work-item form).
constexpr int kTimeoutMs = 100;

static double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Correct fiber and plain kernels over a grid large enough for the worker pool.
static bool still_works(Lib &lib) {
  const uint32_t n = 8192;
  auto *f = lib.fn("fine");
  auto *g = lib.fn("fine_plain");
  std::vector<float> in(n), out(n, -1), out2(n, -1);
  for (uint32_t i = 0; i < n; ++i) in[i] = float(i % 7);
  std::string e = Dispatch(f).buf(0, in).buf(1, out).threads(n, 1, 1, 64, 1, 1).run();
  e += Dispatch(g).buf(0, in).buf(1, out2).threads(n, 1, 1, 64, 1, 1).run();
  bool ok = e.empty();
  for (uint32_t i = 0; i < n && ok; ++i) {
    float s = 0;
    for (uint32_t j = i & ~31u; j < (i & ~31u) + 32; ++j) s += in[j];
    ok = out[i] == s + float(i & 31u) && out2[i] == in[i] * 2.0f + 1.0f;
  }
  mgsim_function_release(f);
  mgsim_function_release(g);
  return ok;
}

static void check_stopped(Lib &lib, const char *name, uint32_t groups, int checked) {
  auto *f = lib.fn(name);
  const uint32_t n = groups * 64;
  std::vector<uint32_t> out(n, 0);
  std::vector<float> in(n, 1.0f), outf(n, 0);
  Dispatch d(f);
  if (checked) d.buf(0, in).buf(1, outf);
  else d.buf(0, out);
  d.threads(n, 1, 1, 64, 1, 1);
  const double t0 = now_ms();
  const std::string e = d.run();
  const double ms = now_ms() - t0;
  // Nothing writes after the dispatch returned: the stopped threads stay stopped.
  std::vector<uint32_t> snapshot = out;
  std::vector<float> snapshotf = outf;
  struct timespec pause = {0, 50 * 1000 * 1000};
  nanosleep(&pause, nullptr);
  const bool quiet = snapshot == out && snapshotf == outf;
  CHECK(e.find(std::string("kernel '") + name + "'") != std::string::npos && e.find("MG_SIM_TIMEOUT_MS") != std::string::npos &&
            e.find(std::to_string(kTimeoutMs) + " ms") != std::string::npos && ms >= 0.8 * kTimeoutMs && ms < 10000 &&
            quiet,
        "%s over %u threadgroup(s)%s is stopped after %.0f ms, its threads write nothing more: %.200s", name, groups,
        checked ? " (checked)" : "", ms, e.c_str());
  mgsim_function_release(f);
}

int main() {
  setenv("MG_SIM_TIMEOUT_MS", std::to_string(kTimeoutMs).c_str(), 1);
  setenv("MG_SIM_TIER_UP_MS", std::to_string(kTimeoutMs / 2).c_str(), 1);
  Lib lib(kSrc);
  CHECK(lib.lib, "watchdog kernels compile %s", lib.error.c_str());
  if (!lib.lib) return finish();
  check_stopped(lib, "spin_plain", 1, 0);    // on the calling thread
  check_stopped(lib, "spin_plain", 64, 0);   // on the worker pool
  CHECK(still_works(lib), "after stopped plain kernels the simulator still works");
  check_stopped(lib, "spin_fiber", 1, 0);
  check_stopped(lib, "spin_fiber", 64, 0);
  CHECK(still_works(lib), "after stopped fiber kernels the simulator still works");
  {
    Lib checked(kSrc, 1);
    CHECK(checked.lib, "checked watchdog kernels compile %s", checked.error.c_str());
    if (checked.lib) check_stopped(checked, "spin_reporting", 40, 1);
  }
  CHECK(still_works(lib), "after a stopped checked kernel the simulator still works");
  // The same stuck kernel again: the stopped workers recovered completely.
  check_stopped(lib, "spin_fiber", 64, 0);
  CHECK(still_works(lib), "and still works after a second stop");
  return finish();
}
