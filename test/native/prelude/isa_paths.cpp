// The prelude's CPU-specific code paths, which the compile driver switches on with
// -DMGSIM_HAVE_AVX2=1 / -DMGSIM_HAVE_FMA=1 where the CPU has them (Sources/MSLSim/compile.cpp,
// base_flags): exp of a float4 in 256-bit vectors (mgsim_math.h, exp_float4) and the 8x8 float
// multiply-accumulate in FMA registers (mgsim_simdgroup_matrix.h, mma8). run.sh builds this file
// with each compiler for each macro set (the other programs build without them, so a path one
// compiler cannot compile would otherwise go unseen), and runs it where the CPU has the extensions.
// Without the macros it checks the portable paths against the same references.
//
// exp(float4) must give the scalar exp's bits in every component (mixes of fast-path and fallback
// components included); simdgroup_multiply_accumulate on floats must give, per element,
// c + a·b accumulated over k = 0..7 in order with one rounding per step (std::fma chain).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "../../../Sources/MSLSim/prelude/mgsim_simdgroup_matrix.h"
#include "check.h"

#if defined(MGSIM_HAVE_AVX2) && defined(__x86_64__) && !defined(MGSIM_HAVE_EXP_FLOAT4)
#error "MGSIM_HAVE_AVX2 is set but the prelude did not enable exp_float4: this program would test nothing new"
#endif

namespace mgsim {
unsigned simd_lane_id() { return 0; }
}

using namespace metal;

namespace {

using check::f2u;
using check::u2f;
// xorshift64*: no <random> (this program is built four times; keep it light).
struct rng64 {
  uint64_t s;
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545f4914f6cdd1dull;
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * float(next() >> 40) * 0x1p-24f; }
};

long exp4_bad = 0;
void check_exp4(float a, float b, float c, float d) {
  const float4 x(a, b, c, d);
  const float4 y = exp(x);
  for (int i = 0; i < 4; ++i) {
    const float want = exp(x[i]);  // the scalar function
    if (f2u(y[i]) != f2u(want) && !(std::isnan(y[i]) && std::isnan(want)) && ++exp4_bad <= 5)
      std::printf("  exp(float4) component %d of (%a, %a, %a, %a) = %a, scalar exp %a\n", i, double(a), double(b),
                  double(c), double(d), double(y[i]), double(want));
  }
}

void test_exp_float4() {
  // Edges of the vector path's range (-87 < x < 88), of the scalar fast range, near-halfway results
  // (the fallback decides them), specials; each in every lane next to ordinary values.
  const float edge[] = {0x1.ffffep-25f, 0x1.ffffe2p-25f, 0x1.fffffep-25f, 0x1p-24f, 0x1.000002p-24f, 0x1.71546p-24f,
                        0x1.715466p-24f, -87.0f, -86.99999f, -87.00001f, 88.0f, 87.99999f, 88.00001f, -126.0f,
                        128.0f, -87.5f, 88.5f, -103.9f, -149.0f, -150.0f, 0.0f, -0.0f, 1.0f, -1.0f, 0x1p-149f,
                        1e-30f, 0.5f, -0.5f, 10.0f, -10.0f, 0.693147182f, INFINITY, -INFINITY, NAN, -NAN,
                        u2f(0x7fc01234u), u2f(0x7f801234u)};
  const int n = int(sizeof edge / sizeof edge[0]);
  for (int i = 0; i < n; ++i) {
    check_exp4(edge[i], 1.5f, -2.25f, 3.0f);
    check_exp4(0.25f, edge[i], -7.0f, 40.0f);
    check_exp4(-0.125f, 2.0f, edge[i], -60.0f);
    check_exp4(5.5f, -1.0f, 0.75f, edge[i]);
    check_exp4(edge[i], edge[(i + 1) % n], edge[(i + 7) % n], edge[(i + 13) % n]);
  }
  // A spread of bit patterns (every sign and exponent), four per call.
  for (uint64_t b = 0; b < (1ull << 32); b += 4 * 4099)
    check_exp4(u2f(uint32_t(b)), u2f(uint32_t(b + 4099)), u2f(uint32_t(b + 2 * 4099)), u2f(uint32_t(b + 3 * 4099)));
  // Softmax's inputs: values in the vector path's range, many per exponent.
  rng64 r{0x9e3779b97f4a7c15ull};
  for (int i = 0; i < 200000; ++i)
    check_exp4(r.uniform(-87, 88), r.uniform(-20, 0), r.uniform(-1, 1), r.uniform(-87, 88));
  CHECK_F(exp4_bad == 0, "exp(float4): %ld components differ from the scalar exp", exp4_bad);
}

void test_mma8() {
  rng64 r{12345};
  long bad = 0;
  for (int trial = 0; trial < 200; ++trial) {
    simdgroup_matrix<float, 8, 8> a, b, c, d;
    float *pa = a.mg_data(), *pb = b.mg_data(), *pc = c.mg_data();
    for (int i = 0; i < 64; ++i) {
      // Mixed magnitudes and signs, so one rounding per step (fma) differs from two (mul, add).
      pa[i] = r.uniform(-4, 4) * (trial % 3 == 0 ? 1e6f : 1.0f);
      pb[i] = r.uniform(-4, 4);
      pc[i] = r.uniform(-100, 100);
    }
    float want[64];
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j) {
        float s = pc[i * 8 + j];
        for (int k = 0; k < 8; ++k) s = std::fma(pa[i * 8 + k], pb[k * 8 + j], s);
        want[i * 8 + j] = s;
      }
    simdgroup_multiply_accumulate(d, a, b, c);
    const float *pd = d.mg_data();
    for (int i = 0; i < 64; ++i)
      if (f2u(pd[i]) != f2u(want[i]) && ++bad <= 5)
        std::printf("  multiply_accumulate trial %d element %d = %a, want %a\n", trial, i, double(pd[i]), double(want[i]));
    // d may be one of the operands (mma8 writes it last).
    simdgroup_multiply_accumulate(c, a, b, c);
    if (std::memcmp(pc, pd, sizeof want) != 0 && ++bad <= 5) std::printf("  multiply_accumulate into c differs (trial %d)\n", trial);
  }
  CHECK_F(bad == 0, "simdgroup_multiply_accumulate<float>: %ld elements differ from the fma chain", bad);
}

}  // namespace

int main() {
  test_exp_float4();
  test_mma8();
  return check::finish("isa_paths");
}
