// Smallest end-to-end check: compile, dispatch a barrier-free kernel and a barrier kernel.
#include "harness.h"

int main() {
  const char *src = R"(
#include <metal_stdlib>
using namespace metal;
kernel void add_one(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                    uint gid [[thread_position_in_grid]]) {
  out[gid] = in[gid] + 1.0f;
}
kernel void tg_sum(device const int* in [[buffer(0)]], device int* out [[buffer(1)]],
                   uint lid [[thread_position_in_threadgroup]], uint gid [[threadgroup_position_in_grid]],
                   uint n [[threads_per_threadgroup]]) {
  threadgroup int tmp[256];
  tmp[lid] = in[gid * n + lid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lid == 0) { int s = 0; for (uint i = 0; i < n; ++i) s += tmp[i]; out[gid] = s; }
}
)";
  Lib lib(src);
  CHECK(lib.lib, "compile: %s", lib.error.c_str());
  if (!lib.lib) return finish();
  auto *f = lib.fn("add_one");
  std::vector<float> in = randf(1000, 1), out(1000, 0);
  std::string e = Dispatch(f).buf(0, in).buf(1, out).threads(1000, 1, 1, 64, 1, 1).run();
  bool ok = e.empty();
  for (int i = 0; i < 1000; ++i) ok = ok && out[i] == in[i] + 1.0f;
  CHECK(ok, "add_one over 1000 threads %s", e.c_str());
  auto *g = lib.fn("tg_sum");
  std::vector<int> a(4 * 128), s(4, 0);
  for (size_t i = 0; i < a.size(); ++i) a[i] = int(i % 17) - 3;
  e = Dispatch(g).buf(0, a).buf(1, s).groups(4, 1, 1, 128, 1, 1).run();
  ok = e.empty();
  for (int gi = 0; gi < 4; ++gi) {
    int want = 0;
    for (int i = 0; i < 128; ++i) want += a[gi * 128 + i];
    ok = ok && s[gi] == want;
  }
  CHECK(ok, "tg_sum with a barrier %s", e.c_str());
  mgsim_function_release(f);
  mgsim_function_release(g);
  return finish();
}
