// simdgroup_matrix<T, 8, 8>: load/store with stride, origin and transpose against direct indexing
// (and untouched surroundings), multiply(-accumulate) against naive products (integers: exact;
// random floats: within float accumulation error; half/bfloat/mixed element types), diagonal and
// filled construction, the thread_elements() lane layout against Apple's documented picture, the
// MLX pattern (lanes write their fragments, multiply, read back) run by 32 real threads with an
// all-gather, and mgsim_resolve() use through a mock checked pointer.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "../../../Sources/MSLSim/prelude/mgsim_simdgroup_matrix.h"
#include "check.h"

namespace mgsim {
// Lanes are threads here; each knows its index.
inline thread_local unsigned t_lane = 0;
unsigned simd_lane_id() { return t_lane; }

// A reusable barrier (C++17 has no std::barrier).
struct barrier {
  explicit barrier(int n) : n_(n) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mu_);
    const long gen = gen_;
    if (++count_ == n_) {
      count_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return gen_ != gen; });
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  int n_, count_ = 0;
  long gen_ = 0;
};
// All-gather across 32 threads: write own slot, wait, copy all, wait (so slots can be reused).
inline barrier *g_barrier = nullptr;
inline unsigned char g_slots[32][64];
void simdgroup_allgather(const void *mine, void *all, unsigned bytes) {
  std::memcpy(g_slots[t_lane], mine, bytes);
  g_barrier->arrive_and_wait();
  for (int l = 0; l < 32; ++l) std::memcpy(static_cast<unsigned char *>(all) + l * bytes, g_slots[l], bytes);
  g_barrier->arrive_and_wait();
}

// Checked-pointer stand-in (pointer arithmetic + resolve found by ADL).
struct row_log {
  int calls = 0, writes = 0;
  long elements = 0;
};
inline row_log g_rows;
template <class T>
struct test_ptr {
  T *p;
  test_ptr operator+(size_t i) const { return test_ptr{p + i}; }
};
template <class T>
T *mgsim_resolve(test_ptr<T> q, size_t count, bool write) {
  ++g_rows.calls;
  g_rows.writes += write;
  g_rows.elements += long(count);
  return q.p;
}
}  // namespace mgsim

using namespace metal;

namespace {

// Apple's layout picture (lane owning each element of the 8x8 matrix), transcribed by hand.
const int kLaneOf[8][8] = {
    {0, 0, 1, 1, 8, 8, 9, 9},         {2, 2, 3, 3, 10, 10, 11, 11},     {4, 4, 5, 5, 12, 12, 13, 13},
    {6, 6, 7, 7, 14, 14, 15, 15},     {16, 16, 17, 17, 24, 24, 25, 25}, {18, 18, 19, 19, 26, 26, 27, 27},
    {20, 20, 21, 21, 28, 28, 29, 29}, {22, 22, 23, 23, 30, 30, 31, 31},
};

template <class T>
float at(const simdgroup_matrix<T, 8, 8> &m, int r, int c) {
  return float(m.mg_at(r * 8 + c));
}

void test_load_store() {
  constexpr int R = 20, C = 24;
  float src[R * C];
  for (int i = 0; i < R * C; ++i) src[i] = float(i);
  simdgroup_float8x8 m;
  simdgroup_load(m, src);  // defaults: stride 8, origin 0, no transpose
  bool ok = true;
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) ok = ok && at(m, r, c) == src[r * 8 + c];
  CHECK(ok);
  simdgroup_load(m, src, C, ulong2(3, 5));  // origin (column 3, row 5)
  ok = true;
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) ok = ok && at(m, r, c) == src[(5 + r) * C + 3 + c];
  CHECK(ok);
  simdgroup_load(m, src, C, ulong2(3, 5), true);  // transposed: element (r, c) = src[(3 + c) * C + 5 + r]
  ok = true;
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) ok = ok && at(m, r, c) == src[(3 + c) * C + 5 + r];
  CHECK(ok);
  const float *csrc = src;  // const device T*
  simdgroup_load(m, csrc + 2 * C + 1, C, 0, false);
  CHECK(at(m, 7, 7) == src[(2 + 7) * C + 1 + 7]);

  // store: exactly the tile's 64 elements change
  float dst[R * C];
  for (int transpose = 0; transpose < 2; ++transpose) {
    for (int i = 0; i < R * C; ++i) dst[i] = -1.0f;
    simdgroup_float8x8 v;
    for (int i = 0; i < 64; ++i) v.mg_at(i) = float(1000 + i);
    simdgroup_store(v, dst, C, ulong2(4, 9), transpose != 0);
    ok = true;
    int changed = 0;
    for (int i = 0; i < R * C; ++i) changed += dst[i] != -1.0f;
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) {
        const int idx = transpose ? (4 + c) * C + 9 + r : (9 + r) * C + 4 + c;
        ok = ok && dst[idx] == float(1000 + r * 8 + c);
      }
    CHECK_F(ok && changed == 64, "store transpose=%d: %d elements changed", transpose, changed);
  }
  // round trip through a transposed store and load
  simdgroup_float8x8 a, b;
  simdgroup_load(a, src, C, ulong2(7, 2));
  simdgroup_store(a, dst, 16, 0, true);
  simdgroup_load(b, dst, 16, 0, true);
  CHECK(std::memcmp(a.mg_p, b.mg_p, sizeof a.mg_p) == 0);
  // half and bfloat storage
  half hs[64];
  for (int i = 0; i < 64; ++i) hs[i] = half(i * 0.5f);
  simdgroup_half8x8 hm;
  simdgroup_load(hm, hs, 8, 0, true);
  CHECK(at(hm, 1, 2) == float(hs[2 * 8 + 1]));
  bfloat bs[64];
  simdgroup_bfloat8x8 bm(bfloat(3.0f));
  simdgroup_store(bm, bs);
  CHECK(float(bs[0]) == 3.0f && float(bs[9]) == 3.0f && float(bs[1]) == 0.0f);
}

template <class TD, class TA, class TB, class TC>
void naive(double out[64], const simdgroup_matrix<TA, 8, 8> &a, const simdgroup_matrix<TB, 8, 8> &b,
           const simdgroup_matrix<TC, 8, 8> &c) {
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      double s = double(at(c, i, j));
      for (int k = 0; k < 8; ++k) s += double(at(a, i, k)) * double(at(b, k, j));
      out[i * 8 + j] = s;
    }
}

void test_multiply() {
  std::mt19937 rng(11);
  // small integers: every product and sum exact, so float, half and bfloat results are exact
  for (int iter = 0; iter < 50; ++iter) {
    simdgroup_float8x8 a, b, c, d;
    simdgroup_half8x8 ha, hb, hc, hd;
    simdgroup_bfloat8x8 ba, bb, bc, bd;
    for (int i = 0; i < 64; ++i) {
      const int x = int(rng() % 9) - 4, y = int(rng() % 9) - 4, z = int(rng() % 21) - 10;
      a.mg_at(i) = float(x), b.mg_at(i) = float(y), c.mg_at(i) = float(z);
      ha.mg_at(i) = half(x), hb.mg_at(i) = half(y), hc.mg_at(i) = half(z);
      ba.mg_at(i) = bfloat(x), bb.mg_at(i) = bfloat(y), bc.mg_at(i) = bfloat(z);
    }
    double ref[64];
    naive<float>(ref, a, b, c);
    simdgroup_multiply_accumulate(d, a, b, c);
    simdgroup_multiply_accumulate(hd, ha, hb, hc);
    simdgroup_multiply_accumulate(bd, ba, bb, bc);
    simdgroup_float8x8 mixed;
    simdgroup_multiply_accumulate(mixed, ha, hb, c);  // half inputs, float accumulator (MLX's pattern)
    bool ok = true;
    for (int i = 0; i < 64; ++i)
      ok = ok && d.mg_at(i) == float(ref[i]) && float(hd.mg_at(i)) == float(ref[i]) && float(bd.mg_at(i)) == float(ref[i]) &&
           mixed.mg_at(i) == float(ref[i]);
    CHECK_F(ok, "integer-valued multiply_accumulate, iteration %d", iter);
    simdgroup_multiply(d, a, b);
    naive<float>(ref, a, b, make_filled_simdgroup_matrix<float, 8, 8>(0.0f));
    ok = true;
    for (int i = 0; i < 64; ++i) ok = ok && d.mg_at(i) == float(ref[i]);
    CHECK_F(ok, "integer-valued multiply, iteration %d", iter);
    simdgroup_multiply_accumulate(c, a, b, c);  // d aliases c: must equal a*b + old c (= mixed)
    CHECK(std::memcmp(c.mg_p, mixed.mg_p, sizeof c.mg_p) == 0);
  }
  // random floats: within the error of 8 float fused multiply-adds
  std::uniform_real_distribution<float> dist(-10, 10);
  for (int iter = 0; iter < 200; ++iter) {
    simdgroup_float8x8 a, b, c, d;
    for (int i = 0; i < 64; ++i) a.mg_at(i) = dist(rng), b.mg_at(i) = dist(rng), c.mg_at(i) = dist(rng);
    double ref[64];
    naive<float>(ref, a, b, c);
    simdgroup_multiply_accumulate(d, a, b, c);
    bool ok = true;
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j) {
        double mag = std::fabs(double(at(c, i, j)));
        for (int k = 0; k < 8; ++k) mag += std::fabs(double(at(a, i, k)) * double(at(b, k, j)));
        ok = ok && std::fabs(double(d.mg_at(i * 8 + j)) - ref[i * 8 + j]) <= 9 * 0x1p-24 * mag;
      }
    CHECK_F(ok, "random float multiply_accumulate, iteration %d", iter);
  }
  // half accumulates in float and rounds once: 1 + 8 * 2^-12 is exact then, but would vanish step
  // by step in half
  simdgroup_half8x8 one = make_filled_simdgroup_matrix<half, 8, 8>(half(1.0f));
  simdgroup_half8x8 tiny = make_filled_simdgroup_matrix<half, 8, 8>(half(0x1p-12f));
  simdgroup_half8x8 ones_diag(half(1.0f)), r;
  simdgroup_multiply_accumulate(r, tiny, one, ones_diag);
  CHECK(float(r.mg_at(0)) == 1.0f + 8 * 0x1p-12f && float(r.mg_at(1)) == 8 * 0x1p-12f);
  // constructors
  const simdgroup_float8x8 diag(2.5f);
  bool ok = true;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) ok = ok && at(diag, i, j) == (i == j ? 2.5f : 0.0f);
  CHECK(ok);
  const auto filled = make_filled_simdgroup_matrix<bfloat, 8, 8>(bfloat(-1.0f));
  ok = true;
  for (int i = 0; i < 64; ++i) ok = ok && float(filled.mg_at(i)) == -1.0f;
  CHECK(ok);
}

void test_layout() {
  simdgroup_float8x8 m;
  for (int i = 0; i < 64; ++i) m.mg_at(i) = float(i);
  int owner[64];
  for (int &o : owner) o = -1;
  bool ok = true;
  for (unsigned lane = 0; lane < 32; ++lane) {
    mgsim::t_lane = lane;
    const simdgroup_float8x8 &cm = m;
    const float2 e = cm.thread_elements();
    const int idx = int(e.x);
    ok = ok && e.y == e.x + 1 && owner[idx] == -1 && owner[idx + 1] == -1;
    owner[idx] = owner[idx + 1] = int(lane);
  }
  for (int i = 0; i < 64; ++i) ok = ok && owner[i] == kLaneOf[i / 8][i % 8];
  CHECK(ok);
  mgsim::t_lane = 0;
}

// MLX's GEMM fragment pattern with 32 real lanes: each lane writes only its two elements of A, B and
// C (from memory, at its own coordinates), multiplies, and writes its two elements of D back.
void test_lanes_writing_fragments() {
  float A[64], B[64], C[64], D[64], Dstore[64];
  std::mt19937 rng(8);
  for (int i = 0; i < 64; ++i) {
    A[i] = float(int(rng() % 7) - 3);
    B[i] = float(int(rng() % 7) - 3);
    C[i] = float(int(rng() % 7) - 3);
    D[i] = Dstore[i] = NAN;
  }
  mgsim::barrier bar(32);
  mgsim::g_barrier = &bar;
  std::vector<std::thread> lanes;
  for (unsigned l = 0; l < 32; ++l) {
    lanes.emplace_back([&, l] {
      mgsim::t_lane = l;
      const unsigned q = l / 4;
      const int row = int((q & 4u) + (l / 2) % 4), col = int((q & 2u) * 2 + (l % 2) * 2);  // MLX get_coord
      simdgroup_float8x8 a, b, c, d;  // uninitialised except the lane's own elements
      reinterpret_cast<float2 &>(a.thread_elements()) = float2(A[row * 8 + col], A[row * 8 + col + 1]);
      b.thread_elements()[0] = B[row * 8 + col];
      b.thread_elements()[1] = B[row * 8 + col + 1];
      c.thread_elements() = float2(C[row * 8 + col], C[row * 8 + col + 1]);
      simdgroup_multiply_accumulate(d, a, b, c);
      const float2 out = d.thread_elements();
      D[row * 8 + col] = out.x;
      D[row * 8 + col + 1] = out.y;
      // a matrix written through thread_elements can also be stored directly
      simdgroup_float8x8 e;
      e.thread_elements() = float2(float(row * 8 + col), float(row * 8 + col + 1));
      simdgroup_store(e, Dstore);
    });
  }
  for (auto &t : lanes) t.join();
  mgsim::g_barrier = nullptr;
  bool ok = true, ok_store = true;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      float s = C[i * 8 + j];
      for (int k = 0; k < 8; ++k) s += A[i * 8 + k] * B[k * 8 + j];
      ok = ok && D[i * 8 + j] == s;
      ok_store = ok_store && Dstore[i * 8 + j] == float(i * 8 + j);
    }
  CHECK(ok);
  CHECK(ok_store);
}

void test_resolve_hook() {
  float buf[16 * 16];
  for (int i = 0; i < 256; ++i) buf[i] = float(i);
  mgsim::test_ptr<float> p{buf};
  simdgroup_float8x8 m;
  mgsim::g_rows = {};
  simdgroup_load(m, p, 16, ulong2(8, 8), true);
  CHECK(mgsim::g_rows.calls == 8 && mgsim::g_rows.writes == 0 && mgsim::g_rows.elements == 64);
  CHECK(at(m, 2, 1) == buf[(8 + 1) * 16 + 8 + 2]);
  mgsim::test_ptr<const float> cp{buf};
  simdgroup_load(m, cp, 16);
  CHECK(mgsim::g_rows.calls == 16);
  simdgroup_store(m, p, 16, ulong2(8, 0));
  CHECK(mgsim::g_rows.calls == 24 && mgsim::g_rows.writes == 8 && mgsim::g_rows.elements == 192);
  CHECK(buf[8] == 0.0f && buf[16 + 9] == 17.0f);
}

}  // namespace

int main() {
  test_load_store();
  test_multiply();
  test_layout();
  test_lanes_writing_fragments();
  test_resolve_hook();
  return check::finish("simdgroup_matrix");
}
