// exp of a float4 (the prelude's exp_float4 where the compile driver found AVX2: four components
// side by side, another polynomial, a rounding check that hands doubtful components to the scalar
// exp) against the scalar exp of each component, bit for bit: every 509th float bit pattern (all
// exponents, signs, NaN payloads and subnormals), specials, the ends of the fast range and inputs
// whose results lie next to a float halfway point, each also beside ordinary values in one float4.
// (MSL code cannot see which exp the prelude has; on a CPU without AVX2 both sides are the scalar
// one.) `test_exp4 --exhaustive` compares all 2^32 patterns (a few CPU minutes; not in the run).
#include <cstring>

#include "harness.h"

static const char *kSrc = R"(
#include <metal_stdlib>
using namespace metal;
// Thread i compares the patterns first + (i * per + j) * step, j < per, four at a time; it writes
// its mismatch count and the first mismatching pattern.
kernel void sweep(constant uint4& args [[buffer(0)]], device uint2* out [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
  const uint first = args.x, step = args.y, per = args.z;
  uint bad = 0, which = 0;
  for (uint j = 0; j < per; j += 4) {
    const uint u = first + (i * per + j) * step;
    const float4 x = float4(as_type<float>(u), as_type<float>(u + step), as_type<float>(u + 2 * step),
                            as_type<float>(u + 3 * step));
    const float4 v = exp(x);
    for (int c = 0; c < 4; ++c) {
      if (as_type<uint>(v[c]) != as_type<uint>(exp(x[c]))) {
        if (bad++ == 0) which = as_type<uint>(x[c]);
      }
    }
  }
  out[i] = uint2(bad, which);
}
// Each listed input in every position of a float4 whose other components are ordinary values.
kernel void listed(device const float* x [[buffer(0)]], device uint* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
  uint bad = 0;
  for (int pos = 0; pos < 4; ++pos) {
    float4 v = float4(-0.5f, -3.25f, 0.125f, -1.0f);
    v[pos] = x[i];
    const float4 e = exp(v);
    for (int c = 0; c < 4; ++c) bad += as_type<uint>(e[c]) != as_type<uint>(exp(v[c]));
  }
  out[i] = bad;
}
)";

static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int main(int argc, char **argv) {
  const bool exhaustive = argc > 1 && strcmp(argv[1], "--exhaustive") == 0;
  Lib lib(kSrc, 0);
  CHECK(lib.lib, "exp(float4) kernels compile %s", lib.error.c_str());
  if (!lib.lib) return 1;

  std::string e;
  // 2^32 / step patterns: threads × per of them from `first`, in chunks that fit a uint grid.
  const uint32_t step = exhaustive ? 1 : 509, per = 256, threads = 1u << 16;
  const uint64_t total = ((1ull << 32) + step - 1) / step;
  auto *sweep = lib.fn("sweep");
  uint64_t bad = 0, checked = 0;
  uint32_t first_bad = 0;
  std::vector<uint32_t> out(2 * threads);
  for (uint64_t done = 0; done < total; done += uint64_t(threads) * per) {
    struct {
      uint32_t first, step, per, pad;
    } args = {uint32_t(done * step), step, per, 0};
    const uint64_t left = total - done;
    const uint32_t n = uint32_t(std::min<uint64_t>(threads, (left + per - 1) / per));
    e = Dispatch(sweep).bytes(0, args).buf(1, out).threads(n, 1, 1, 256, 1, 1).run();
    if (!e.empty()) break;
    for (uint32_t i = 0; i < n; ++i) {
      if (out[2 * i] && !bad) first_bad = out[2 * i + 1];
      bad += out[2 * i];
    }
    checked += uint64_t(n) * per;
  }
  CHECK(e.empty() && bad == 0, "exp(float4) == exp per component on %llu float bit patterns (every %u-th): %llu differ "
        "(first %a) %s", (unsigned long long)checked, step, (unsigned long long)bad, double(u2f(first_bad)), e.c_str());

  // Specials, the fast range's ends, and inputs whose double result is next to a float halfway
  // point (there the scalar's own libm fallback decides).
  std::vector<float> x = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, u2f(0x7fc01234u), u2f(0x7f801234u),
                          u2f(1), u2f(0x807fffffu), 1e-30f, -87.0f, -86.99999f, 88.0f, 87.99999f, -87.5f, 88.5f,
                          -103.9f, -149.0f, 0x1.ffffep-25f, 0x1.ffffe2p-25f, 0x1.fffffep-25f, 0x1p-24f,
                          0x1.000002p-24f, 0x1.71546p-24f, 0x1.715466p-24f, 1.0f, -1.0f, 0.5f, -0.5f, 80.0f, -80.0f};
  std::vector<uint32_t> lbad(x.size(), 9);
  e = Dispatch(lib.fn("listed")).buf(0, x).buf(1, lbad).threads(uint32_t(x.size()), 1, 1, 32, 1, 1).run();
  uint32_t nbad = 0;
  for (uint32_t b : lbad) nbad += b;
  CHECK(e.empty() && nbad == 0, "exp(float4) == exp per component for %zu special and boundary inputs in every "
        "position: %u differ %s", x.size(), nbad, e.c_str());
  return g_failures ? 1 : 0;
}
