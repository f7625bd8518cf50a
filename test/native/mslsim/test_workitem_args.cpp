// How the work-item form passes arguments to functions with syncs (workitem.cpp, mgsim_wi.h):
// a by-value parameter the callee never modifies reads the caller's own per-lane storage (no copy),
// a uniform argument (literals, uniform loop variables) and a kernel's buffers and threadgroup-wide
// attributes become one value for a parameter that is only read. Each kernel here would compute
// something else if a transformation applied where it must not: a parameter the callee assigns
// (directly, through a member or element, or through a reference it binds), a per-lane argument
// that looks like a uniform one, a kernel parameter the kernel modifies. Every case runs unchecked
// and checked, and the values are derived by hand from Metal's semantics.
#include <functional>
#include <map>
#include <memory>

#include "harness.h"

static const char *kSrc = R"(#include <metal_stdlib>
using namespace metal;
struct Acc { float a; float b; };

float down(float x, ushort d) { return simd_shuffle_down(x, d); }
// x is assigned: the caller's variable must not change.
float bump_down(float x, ushort d) { x += 1000.0f; return simd_shuffle_down(x, d); }
// d is assigned: a literal argument cannot be one shared value.
float far_down(float x, ushort d) { d += 1; return simd_shuffle_down(x, d); }
// An element and a member assigned.
float pick(float2 p, ushort d) { p[0] = p[1] * 3.0f; return simd_shuffle_down(p[0] + p.y, d); }
float acc_down(Acc s, ushort d) { s.a = s.a + s.b; return simd_shuffle_down(s.a, d); }
// A read-only-looking uint the callee doubles (the kernel passes its threadgroup-wide tg_size).
float use_size(float x, uint n) { n = n * 2u; return simd_shuffle_down(x, 1) + float(n); }

// A threadgroup array passed as it is (its address: one value), and a callee that moves its copy.
float tg_store(threadgroup float* p, float v, uint i) {
  p[i] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return p[(i + 1) % 64];
}
float tg_shift(threadgroup float* p, float v, uint i) {
  p += 1;
  p[i] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return p[(i + 1) % 64];
}

kernel void tg_array_arg(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  threadgroup float t[64];
  threadgroup float u[65];
  float r = tg_store(t, float(lid) * 2.0f, lid);
  float q = tg_shift(u, float(lid) * 3.0f, lid);
  out[2 * lid] = r;
  out[2 * lid + 1] = q;
}
// The same variable as a read-only value and as a reference the callee writes: the value is the
// one at the call.
float twice(float a, thread float &b, ushort d) {
  b = 100.0f;
  return simd_shuffle_down(a, d) + b;
}
kernel void value_and_reference(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  float x = float(lid);
  float r = twice(x, x, 1);
  out[2 * lid] = r;
  out[2 * lid + 1] = x;
}
kernel void assigned_param(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  float v = float(lid);
  float r = bump_down(v, 1);
  out[2 * lid] = r;
  out[2 * lid + 1] = v;
}
kernel void read_only_direct(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  float v = float(lid) * 2.0f;
  float r = down(v, 3);
  v = v + 1.0f;
  float r2 = down(v, 3);
  out[2 * lid] = r;
  out[2 * lid + 1] = r2;
}
kernel void lane_args(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]],
                      uint simd_lane [[thread_index_in_simdgroup]]) {
  float v = float(lid);
  float r = down(v, ushort(simd_lane % 3u));
  float t = v;
  for (ushort d = 16; d > 0; d >>= 1) t += down(t, d);
  float f = far_down(v, 1);
  out[3 * lid] = r;
  out[3 * lid + 1] = t;
  out[3 * lid + 2] = f;
}
kernel void member_writes(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  float2 p = float2(float(lid), 1.0f);
  Acc s = {float(lid), 10.0f};
  float r = pick(p, 1);
  float q = acc_down(s, 1);
  out[4 * lid] = r;
  out[4 * lid + 1] = p.x;
  out[4 * lid + 2] = q;
  out[4 * lid + 3] = s.a;
}
kernel void param_writes(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                         uint lid [[thread_index_in_threadgroup]], uint tg_size [[threads_per_threadgroup]],
                         uint2 tgid [[threadgroup_position_in_grid]]) {
  in += lid;
  tg_size -= lid;
  tgid.x += lid;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[3 * lid] = in[0];
  out[3 * lid + 1] = float(tg_size);
  out[3 * lid + 2] = float(tgid.x);
}
kernel void uniform_to_written(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]],
                               uint tg_size [[threads_per_threadgroup]]) {
  float v = float(lid);
  float r = use_size(v, tg_size);
  out[2 * lid] = r;
  out[2 * lid + 1] = float(tg_size);
}
)";

// A callee that binds its parameter to a non-const reference: the read-only analysis does not
// count that as a write, so the const view makes the work-item form fail to compile and the
// library runs as fibers — still exact.
static const char *kRefSrc = R"(#include <metal_stdlib>
using namespace metal;
void add_one(thread float &a) { a += 1.0f; }
float inc_down(float x, ushort d) { add_one(x); return simd_shuffle_down(x, d); }
kernel void ref_binding(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  float v = float(lid);
  float r = inc_down(v, 1);
  out[2 * lid] = r;
  out[2 * lid + 1] = v;
}
)";

// Declarations that live across a sync and whose initialiser calls a template with several
// arguments (`f<T, U>(...)`): the template's commas must not split the declarator (SDPA's
// `simdgroup_matrix<float, 8, 8> St = make_filled_simdgroup_matrix<float, 8, 8>(0.0f)` and
// cross entropy's `row_logsumexp<T, AccT>(...)` fell back to fibers). `lo` / `hi` are two
// declarators whose '<' ... '>' only looks like a template argument list.
static const char *kTemplateInitSrc = R"(#include <metal_stdlib>
using namespace metal;
template <typename T, typename D> T down_t(T x, D d) { return simd_shuffle_down(x, d); }
kernel void template_call_init(device float* out [[buffer(0)]], uint lid [[thread_index_in_threadgroup]]) {
  float v = float(lid);
  const float r = down_t<float, ushort>(v, 1), s = down_t<float, ushort>(v * 2.0f, 2);
  bool lo = lid < 40u, hi = lid > (20u);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[4 * lid] = r;
  out[4 * lid + 1] = s;
  out[4 * lid + 2] = lo ? 1.0f : 0.0f;
  out[4 * lid + 3] = hi ? 1.0f : 0.0f;
}
)";

constexpr uint32_t kThreads = 64;

// simd_shuffle_down of per-lane values x by per-lane distances d (a source past the simdgroup keeps
// the lane's own value).
static std::vector<float> shuffle_down(const std::vector<float> &x, const std::function<uint32_t(uint32_t)> &d) {
  std::vector<float> r(x.size());
  for (uint32_t l = 0; l < x.size(); ++l) {
    const uint32_t j = l % 32, src = j + d(l);
    r[l] = src < 32 ? x[l - j + src] : x[l];
  }
  return r;
}

// One library per source and mode, kept for the program's run as an application keeps it: whether
// its kernels' work-item form compiles is checked once per library (a compile of the whole unit),
// not again for each kernel of a library created anew.
static Lib &library(const char *src, int checked) {
  static std::map<std::pair<const char *, int>, std::unique_ptr<Lib>> libraries;
  std::unique_ptr<Lib> &lib = libraries[{src, checked}];
  if (!lib) lib = std::make_unique<Lib>(src, checked);
  return *lib;
}

static void run_case(const char *src, const char *kernel, int checked, size_t per_lane, bool expect_workitem,
                     const std::function<void(std::vector<float> &)> &expect, bool with_input = false) {
  Lib &lib = library(src, checked);
  mgsim_function *f = fn_in_model(lib, kernel, checked, expect_workitem ? MGSIM_EXEC_WORKITEM : MGSIM_EXEC_FIBERS);
  if (!f) return;
  std::vector<float> in(kThreads), out(kThreads * per_lane, -1.0f), want(kThreads * per_lane);
  for (uint32_t i = 0; i < kThreads; ++i) in[i] = 0.25f * float(i) + 3.0f;
  Dispatch d(f);
  if (with_input) d.buf(0, in).buf(1, out);
  else d.buf(0, out);
  d.groups(1, 1, 1, kThreads, 1, 1);
  const std::string err = d.run();
  expect(want);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] != want[i] && !bad++) first = i;
  CHECK(err.empty() && bad == 0, "%s (checked %d): %zu of %zu values as Metal computes them%s%s (first wrong: [%zu] %g, want %g)",
        kernel, checked, out.size() - bad, out.size(), err.empty() ? "" : "; ", err.c_str(), first, double(out[first]),
        double(want[first]));
  mgsim_function_release(f);
}

int main() {
  std::vector<float> lid(kThreads);
  for (uint32_t i = 0; i < kThreads; ++i) lid[i] = float(i);
  for (int checked = 0; checked <= 1; ++checked) {
    run_case(kSrc, "assigned_param", checked, 2, true, [&](std::vector<float> &w) {
      std::vector<float> x(kThreads);
      for (uint32_t l = 0; l < kThreads; ++l) x[l] = lid[l] + 1000.0f;
      auto r = shuffle_down(x, [](uint32_t) { return 1u; });
      for (uint32_t l = 0; l < kThreads; ++l) w[2 * l] = r[l], w[2 * l + 1] = lid[l];
    });
    run_case(kSrc, "read_only_direct", checked, 2, true, [&](std::vector<float> &w) {
      std::vector<float> v(kThreads), v1(kThreads);
      for (uint32_t l = 0; l < kThreads; ++l) v[l] = 2.0f * lid[l], v1[l] = v[l] + 1.0f;
      auto r = shuffle_down(v, [](uint32_t) { return 3u; });
      auto r2 = shuffle_down(v1, [](uint32_t) { return 3u; });
      for (uint32_t l = 0; l < kThreads; ++l) w[2 * l] = r[l], w[2 * l + 1] = r2[l];
    });
    run_case(kSrc, "lane_args", checked, 3, true, [&](std::vector<float> &w) {
      auto r = shuffle_down(lid, [](uint32_t l) { return (l % 32) % 3u; });
      std::vector<float> t = lid;
      for (uint32_t d = 16; d > 0; d >>= 1) {
        auto s = shuffle_down(t, [d](uint32_t) { return d; });
        for (uint32_t l = 0; l < kThreads; ++l) t[l] += s[l];
      }
      auto f = shuffle_down(lid, [](uint32_t) { return 2u; });
      for (uint32_t l = 0; l < kThreads; ++l) w[3 * l] = r[l], w[3 * l + 1] = t[l], w[3 * l + 2] = f[l];
    });
    run_case(kSrc, "member_writes", checked, 4, true, [&](std::vector<float> &w) {
      std::vector<float> a(kThreads);
      for (uint32_t l = 0; l < kThreads; ++l) a[l] = lid[l] + 10.0f;
      auto q = shuffle_down(a, [](uint32_t) { return 1u; });
      for (uint32_t l = 0; l < kThreads; ++l) w[4 * l] = 4.0f, w[4 * l + 1] = lid[l], w[4 * l + 2] = q[l], w[4 * l + 3] = lid[l];
    });
    run_case(
        kSrc, "param_writes", checked, 3, true,
        [&](std::vector<float> &w) {
          for (uint32_t l = 0; l < kThreads; ++l)
            w[3 * l] = 0.25f * float(l) + 3.0f, w[3 * l + 1] = float(kThreads - l), w[3 * l + 2] = float(l);
        },
        true);
    run_case(kSrc, "uniform_to_written", checked, 2, true, [&](std::vector<float> &w) {
      auto s = shuffle_down(lid, [](uint32_t) { return 1u; });
      for (uint32_t l = 0; l < kThreads; ++l) w[2 * l] = s[l] + float(2 * kThreads), w[2 * l + 1] = float(kThreads);
    });
    run_case(kSrc, "tg_array_arg", checked, 2, true, [&](std::vector<float> &w) {
      for (uint32_t l = 0; l < kThreads; ++l)
        w[2 * l] = 2.0f * float((l + 1) % kThreads), w[2 * l + 1] = 3.0f * float((l + 1) % kThreads);
    });
    run_case(kSrc, "value_and_reference", checked, 2, true, [&](std::vector<float> &w) {
      auto r = shuffle_down(lid, [](uint32_t) { return 1u; });
      for (uint32_t l = 0; l < kThreads; ++l) w[2 * l] = r[l] + 100.0f, w[2 * l + 1] = 100.0f;
    });
    run_case(kTemplateInitSrc, "template_call_init", checked, 4, true, [&](std::vector<float> &w) {
      std::vector<float> v2(kThreads);
      for (uint32_t l = 0; l < kThreads; ++l) v2[l] = 2.0f * lid[l];
      auto r = shuffle_down(lid, [](uint32_t) { return 1u; });
      auto s = shuffle_down(v2, [](uint32_t) { return 2u; });
      for (uint32_t l = 0; l < kThreads; ++l)
        w[4 * l] = r[l], w[4 * l + 1] = s[l], w[4 * l + 2] = l < 40 ? 1.0f : 0.0f, w[4 * l + 3] = l > 20 ? 1.0f : 0.0f;
    });
    run_case(kRefSrc, "ref_binding", checked, 2, false, [&](std::vector<float> &w) {
      std::vector<float> x(kThreads);
      for (uint32_t l = 0; l < kThreads; ++l) x[l] = lid[l] + 1.0f;
      auto r = shuffle_down(x, [](uint32_t) { return 1u; });
      for (uint32_t l = 0; l < kThreads; ++l) w[2 * l] = r[l], w[2 * l + 1] = lid[l];
    });
  }
  return finish();
}
