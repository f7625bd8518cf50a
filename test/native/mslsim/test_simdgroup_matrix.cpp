// A 64×64 matmul built from 8×8 simdgroup matrices (one output tile per simdgroup), plain and
// transposed loads, in plain and checked mode; small-integer inputs make the result exact.
#include "harness.h"

static const char *kSrc = R"(
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;
kernel void mm(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]],
               device const float* Bt [[buffer(2)]], device float* C [[buffer(3)]], device float* Ct [[buffer(4)]],
               uint sg [[simdgroup_index_in_threadgroup]], uint tg [[threadgroup_position_in_grid]]) {
  uint tile = tg * 4 + sg;
  uint ti = tile / 8, tj = tile % 8;
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  simdgroup_float8x8 acc_t = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < 64; k += 8) {
    simdgroup_float8x8 a, b, bt;
    simdgroup_load(a, A + ti * 8 * 64 + k, 64);
    simdgroup_load(b, B + k * 64 + tj * 8, 64);
    simdgroup_load(bt, Bt + tj * 8 * 64 + k, 64, ulong2(0, 0), true);
    simdgroup_multiply_accumulate(acc, a, b, acc);
    simdgroup_multiply_accumulate(acc_t, a, bt, acc_t);
  }
  simdgroup_store(acc, C + ti * 8 * 64 + tj * 8, 64);
  simdgroup_store(acc_t, Ct + ti * 8 * 64 + tj * 8, 64);
}
)";

int main() {
  std::vector<float> A(64 * 64), B(64 * 64), Bt(64 * 64);
  for (int i = 0; i < 64 * 64; ++i) {
    A[size_t(i)] = float((i * 7) % 11 - 5);
    B[size_t(i)] = float((i * 5) % 13 - 6);
  }
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) Bt[size_t(c * 64 + r)] = B[size_t(r * 64 + c)];
  for (int checked = 0; checked <= 1; ++checked) {
    Lib lib(kSrc, checked);
    CHECK(lib.lib, "simdgroup matrix kernel compiles%s %s", checked ? " (checked)" : "", lib.error.c_str());
    if (!lib.lib) continue;
    auto *f = lib.fn("mm");
    std::vector<float> C(64 * 64, -1), Ct(64 * 64, -1);
    Dispatch d(f);
    d.buf(0, A).buf(1, B).buf(2, Bt).buf(3, C).buf(4, Ct).groups(16, 1, 1, 128, 1, 1);
    d.d.must_write_mask = (1u << 3) | (1u << 4);
    std::string e = d.run();
    size_t bad = 0, bad_t = 0;
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 64; ++c) {
        double want = 0;
        for (int k = 0; k < 64; ++k) want += double(A[size_t(r * 64 + k)]) * B[size_t(k * 64 + c)];
        bad += C[size_t(r * 64 + c)] != float(want);
        bad_t += Ct[size_t(r * 64 + c)] != float(want);
      }
    CHECK(e.empty() && bad == 0 && bad_t == 0, "64x64 matmul from 8x8 simdgroup matrices%s: %zu / %zu mismatches %s",
          checked ? " (checked, all outputs written)" : "", bad, bad_t, e.c_str());
    mgsim_function_release(f);
  }
  return finish();
}
