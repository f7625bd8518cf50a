// Checked mode: out-of-bounds accesses and unwritten outputs are reported with the kernel name,
// buffer index, element index and thread position; the same kernels without the plant report
// nothing.
#include <cstdlib>

#include "harness.h"

static const char *kSrc = R"(
#include <metal_stdlib>
using namespace metal;
// Helpers taking device pointers, pointer arithmetic and casts must all work on checked pointers.
inline float load_at(const device float* p, int i) { return p[i]; }
inline void add_to(device float* row, uint i, float v) { row[i] += v; }
kernel void copy_plus(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                      constant uint& n [[buffer(2)]], constant int& plant [[buffer(3)]],
                      uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  uint dst = gid;
  if (plant == 1 && gid == n - 1) dst = n;   // one element past the end
  if (plant == 2 && gid == 37) return;       // element 37 never written
  device float* o = out + 0;
  o[dst] = load_at(in, int(gid)) + 1.0f;
  add_to(out, dst, 0.5f);
  const device int* bits = reinterpret_cast<const device int*>(in);
  if (bits[gid] == 0x7fffffff) *o = 0.0f;
}
kernel void scale_in_place(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                           uint gid [[thread_position_in_grid]]) {
  out[gid] = in[gid] * 2.0f;
}
kernel void read_past(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                      uint gid [[thread_position_in_grid]]) {
  out[gid] = in[gid + 1];   // the last thread reads past the end: checked mode returns 0
}
)";

static void run_case(Lib &lib, int plant, const char *what, bool expect_clean, const char *must_contain1,
                     const char *must_contain2, const char *must_contain3) {
  auto *f = lib.fn("copy_plus");
  uint32_t n = 100;
  std::vector<float> in = randf(n, 1), out(n, 0);
  Dispatch d(f);
  d.buf(0, in).buf(1, out).bytes(2, n).bytes(3, plant).threads(n, 1, 1, 32, 1, 1);
  d.d.must_write_mask = 1u << 1;
  std::string e = d.run();
  if (expect_clean) {
    bool ok = e.empty();
    for (uint32_t i = 0; i < n; ++i) ok = ok && out[i] == in[i] + 1.5f;
    CHECK(ok, "%s: no report, correct output %s", what, e.c_str());
  } else {
    bool ok = !e.empty() && e.find("copy_plus") != std::string::npos && e.find(must_contain1) != std::string::npos &&
              e.find(must_contain2) != std::string::npos && e.find(must_contain3) != std::string::npos;
    CHECK(ok, "%s is reported: %s", what, e.c_str());
  }
  mgsim_function_release(f);
}

// The atomics header reaches memory through mgsim_resolve(), which checks checked pointers.
static void test_atomic_bounds() {
  Lib lib(R"(
#include <metal_stdlib>
#include <metal_atomic>
using namespace metal;
kernel void count(device atomic_uint* c [[buffer(0)]], constant uint& n [[buffer(1)]], uint gid [[thread_position_in_grid]]) {
  atomic_fetch_add_explicit(&c[gid % n], 1u, memory_order_relaxed);
}
)", 1);
  CHECK(lib.lib, "checked atomics compile %s", lib.error.c_str());
  if (!lib.lib) return;
  auto *f = lib.fn("count");
  std::vector<uint32_t> c(8, 0);
  uint32_t n = 8;
  std::string e = Dispatch(f).buf(0, c).bytes(1, n).threads(64, 1, 1, 32, 1, 1).run();
  bool ok = e.empty();
  for (auto v : c) ok = ok && v == 8;
  CHECK(ok, "in-bounds atomics through checked pointers: no report %s", e.c_str());
  n = 9;  // thread 8 (and 17, ...) hits element 8, one past the end
  std::fill(c.begin(), c.end(), 0u);
  e = Dispatch(f).buf(0, c).bytes(1, n).threads(64, 1, 1, 32, 1, 1).run();
  CHECK(e.find("out-of-bounds write") != std::string::npos && e.find("buffer(0) element 8") != std::string::npos &&
            e.find("thread (8, 0, 0)") != std::string::npos,
        "an out-of-bounds atomic is reported: %.160s", e.c_str());
  mgsim_function_release(f);
}

// Whole-element writes mark the must-write check in their race record only (mgsim_exec.h
// check_elem), partial ones in the written-bytes shadow: the check must read both, and keep a whole
// write's bytes when a later partial write changes the record.
static void test_must_write_records() {
  Lib lib(R"(
#include <metal_stdlib>
using namespace metal;
kernel void mixed(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                  constant int& plant [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  device uchar* bytes = reinterpret_cast<device uchar*>(out);
  const float v = in[gid] + 1.0f;
  if (plant == 1 && gid == 5) return;   // element 5 never written
  if (plant == 1 && gid == 6) {         // element 6: only its first two bytes
    bytes[24] = as_type<uchar4>(v).x;
    bytes[25] = as_type<uchar4>(v).y;
    return;
  }
  out[gid] = v;
  // Thread 9 rewrites byte 0 of element 8 with the value thread 8 wrote there: no race, but
  // element 8's record no longer says which thread wrote which bytes.
  if (plant == 2 && gid == 9) bytes[32] = as_type<uchar4>(in[8] + 1.0f).x;
}
)", 1);
  CHECK(lib.lib, "checked mixed-width writes compile %s", lib.error.c_str());
  if (!lib.lib) return;
  auto *f = lib.fn("mixed");
  for (int plant = 0; plant < 3; ++plant) {
    std::vector<float> in = randf(64, 4), out(64, 0);
    Dispatch d(f);
    d.buf(0, in).buf(1, out).bytes(2, plant).threads(64, 1, 1, 32, 1, 1);
    d.d.must_write_mask = 1u << 1;
    const std::string e = d.run();
    if (plant == 1)
      CHECK(e.find("unwritten output") != std::string::npos && e.find("has 6 byte(s) never written") != std::string::npos &&
                e.find("first at element 5 ") != std::string::npos,
            "4 + 2 unwritten bytes among whole-element writes are reported: %s", e.c_str());
    else
      CHECK(e.empty(), "whole-element writes%s cover the output: no report %s",
            plant == 2 ? " and a same-value partial rewrite by another thread" : "", e.c_str());
  }
  mgsim_function_release(f);
}

int main() {
  test_atomic_bounds();
  test_must_write_records();
  {
    Lib lib(kSrc, /*checked=*/1);
    CHECK(lib.lib, "checked-mode library compiles %s", lib.error.c_str());
    if (!lib.lib) return finish();
    run_case(lib, 0, "checked mode, correct kernel", true, "", "", "");
    run_case(lib, 1, "planted out-of-bounds write", false, "out-of-bounds write", "buffer(1) element 100",
             "thread (99, 0, 0)");
    run_case(lib, 2, "planted unwritten output element", false, "unwritten output", "buffer(1)", "first at element 37");
    {
      // An output computed in place over its input (one buffer bound twice, the output must-write):
      // the unwritten-element poison must not destroy the input the kernel reads.
      auto *h = lib.fn("scale_in_place");
      std::vector<float> data = randf(256, 3), want = data;
      for (float &v : want) v *= 2.0f;
      Dispatch d(h);
      d.buf(0, data).buf(1, data).threads(256, 1, 1, 64, 1, 1);
      d.d.must_write_mask = 1u << 1;
      std::string e = d.run();
      CHECK(e.empty() && data == want, "an in-place output reads its input intact, no report %s", e.c_str());
      mgsim_function_release(h);
    }
    auto *g = lib.fn("read_past");
    std::vector<float> in = randf(64, 2), out(64, -1);
    std::string e = Dispatch(g).buf(0, in).buf(1, out).threads(64, 1, 1, 64, 1, 1).run();
    bool vals = true;
    for (int i = 0; i < 63; ++i) vals = vals && out[i] == in[i + 1];
    CHECK(vals && out[63] == 0.0f && e.find("out-of-bounds read") != std::string::npos &&
              e.find("buffer(0) element 64") != std::string::npos && e.find("thread (63, 0, 0)") != std::string::npos,
          "an out-of-bounds read returns 0 and is reported: %s", e.c_str());
    mgsim_function_release(g);
  }
  {
    // Without checked mode the unwritten element is not tracked, so nothing is reported.
    Lib lib(kSrc, 0);
    auto *f = lib.fn("copy_plus");
    uint32_t n = 100;
    int plant = 2;
    std::vector<float> in = randf(n, 1), out(n, 0);
    Dispatch d(f);
    d.buf(0, in).buf(1, out).bytes(2, n).bytes(3, plant).threads(n, 1, 1, 32, 1, 1);
    d.d.must_write_mask = 1u << 1;
    CHECK(d.run().empty(), "unchecked libraries do not track writes");
    mgsim_function_release(f);
  }
  {
    // MG_SIM_CHECK=1 turns checked mode on for every library.
    setenv("MG_SIM_CHECK", "1", 1);
    Lib lib(kSrc, 0);
    unsetenv("MG_SIM_CHECK");
    auto *g = lib.fn("read_past");
    std::vector<float> in = randf(64, 2), out(64, -1);
    std::string e = Dispatch(g).buf(0, in).buf(1, out).threads(64, 1, 1, 64, 1, 1).run();
    CHECK(e.find("out-of-bounds read") != std::string::npos, "MG_SIM_CHECK=1 forces checked mode: %s", e.c_str());
    mgsim_function_release(g);
  }
  {
    // Annotation channel: thread-local, taken once.
    mgsim_annotation a{};
    a.view_length[3] = 128;
    a.must_write_mask = 0x5;
    mgsim_annotate_next_dispatch(&a);
    mgsim_annotation b{};
    int first = mgsim_take_annotation(&b);
    int second = mgsim_take_annotation(&b);
    CHECK(first == 1 && second == 0 && b.view_length[3] == 128 && b.must_write_mask == 0x5,
          "annotations are delivered once to the next dispatch on the same thread");
  }
  return finish();
}
