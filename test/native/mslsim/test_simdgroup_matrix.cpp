// A 64×64 matmul built from 8×8 simdgroup matrices (one output tile per simdgroup), plain and
// transposed loads, in plain and checked mode; small-integer inputs make the result exact. And a
// transposed load/store with a non-zero matrix_origin.
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

// matrix_origin with transpose_matrix. MSL's Table 6.9 does not spell out how they combine. The
// lane-level reimplementation of these functions in metal-flash-attention
// (metal_simdgroup_matrix_storage, written to match what the hardware loads) addresses the
// transposed element (row r, column c) at (origin.x + c) * elements_per_row + origin.y + r: the
// origin is (column, row) in the loaded matrix, i.e. in the transpose of memory. So a transposed
// load from A at origin (x, y) must equal a plain load at the same origin from Aᵀ stored as such,
// and a transposed store must put the tile back where the transposed load took it from.
static const char *kOriginSrc = R"(
#include <metal_stdlib>
using namespace metal;
kernel void origin_tiles(device const float* A [[buffer(0)]], device const float* At [[buffer(1)]],
                         device float* from_a [[buffer(2)]], device float* from_at [[buffer(3)]],
                         device float* back [[buffer(4)]], uint lane [[thread_index_in_simdgroup]]) {
  simdgroup_float8x8 t, p;
  simdgroup_load(t, A, 16, ulong2(2, 5), true);    // A: 10 rows of 16
  simdgroup_load(p, At, 10, ulong2(2, 5), false);  // At: 16 rows of 10
  simdgroup_store(t, from_a, 8);
  simdgroup_store(p, from_at, 8);
  simdgroup_store(t, back, 16, ulong2(2, 5), true);
  (void)lane;
}
)";

static void test_transposed_origin() {
  std::vector<float> A(10 * 16), At(16 * 10);
  for (int r = 0; r < 10; ++r)
    for (int c = 0; c < 16; ++c) {
      A[size_t(r * 16 + c)] = float(r * 100 + c);
      At[size_t(c * 10 + r)] = float(r * 100 + c);
    }
  for (int checked = 0; checked <= 1; ++checked) {
    Lib lib(kOriginSrc, checked);
    CHECK(lib.lib, "transposed-origin kernel compiles%s %s", checked ? " (checked)" : "", lib.error.c_str());
    if (!lib.lib) continue;
    auto *f = lib.fn("origin_tiles");
    std::vector<float> from_a(64, -1), from_at(64, -1), back(10 * 16, 0);
    std::string e = Dispatch(f).buf(0, A).buf(1, At).buf(2, from_a).buf(3, from_at).buf(4, back).groups(1, 1, 1, 32, 1, 1).run();
    bool tile = e.empty(), round_trip = e.empty();
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) {
        // Row r, column c of the tile of Aᵀ whose top-left element is At[5][2] = A[2][5].
        const float want = At[size_t((5 + r) * 10 + 2 + c)];
        tile = tile && from_a[size_t(r * 8 + c)] == want && from_at[size_t(r * 8 + c)] == want;
      }
    for (int r = 0; r < 10; ++r)
      for (int c = 0; c < 16; ++c) {
        const bool in_tile = r >= 2 && r < 10 && c >= 5 && c < 13;
        round_trip = round_trip && back[size_t(r * 16 + c)] == (in_tile ? A[size_t(r * 16 + c)] : 0.0f);
      }
    CHECK(tile, "transposed load at origin (2, 5) reads the tile of the transpose at (2, 5)%s %s",
          checked ? " (checked)" : "", e.c_str());
    CHECK(round_trip, "transposed store at the same origin writes exactly that tile back%s", checked ? " (checked)" : "");
    mgsim_function_release(f);
  }
}

int main() {
  test_transposed_origin();
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
