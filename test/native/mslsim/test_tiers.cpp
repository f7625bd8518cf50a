// Tiered compilation (MG_SIM_OPT): the same kernels compiled at tier 0 (-O0) and optimised compute
// the same bits — transcendentals, FMA (fma() and the simdgroup-matrix multiply-accumulate),
// half/bfloat rounding, reductions across a barrier — in work-item, fiber, checked and
// simdgroup-matrix units, on inputs with zeros, denormals, infinities and NaNs. A tier-0 library
// is compiled optimised once its dispatches have run MG_SIM_TIER_UP_MS, and the compile log names
// both tiers.
#include <unistd.h>

#include "harness.h"

// A row reduction over a threadgroup (barriers, simd collectives: work-item form) of
// transcendental, FMA-heavy terms, plus per-element outputs in float, half and bfloat.
static const char *kMath = R"(
#include <metal_stdlib>
using namespace metal;
kernel void mathy(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],
                  device float* out [[buffer(2)]], device half* outh [[buffer(3)]],
                  device bfloat* outb [[buffer(4)]], device float* sums [[buffer(5)]],
                  threadgroup float* part [[threadgroup(0)]],
                  uint i [[thread_position_in_grid]], uint t [[thread_index_in_threadgroup]],
                  uint g [[threadgroup_position_in_grid]], uint n [[threads_per_threadgroup]],
                  uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
  float a = x[i], b = y[i];
  float v = exp(a) * 0.25f + log(abs(b) + 1e-30f) - sin(a * 3.0f) * cos(b) + tanh(a - b);
  v += pow(abs(a), b) + sqrt(abs(a * b)) + rsqrt(abs(b) + 1.0f) + fma(a, b, v) + atan2(a, b);
  v += exp2(b) - log2(abs(a) + 0.5f) + sinh(a * 0.1f) * cosh(b * 0.1f) + fast::exp(a * 0.5f);
  v += precise::sin(b) + erf_like(a);
  out[i] = v;
  outh[i] = half(v) * half(a) + half(b);
  outb[i] = bfloat(v) * bfloat(b);
  float s = simd_sum(v * a);
  if (lane == 0) part[sg] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (t == 0) {
    float total = 0.0f;
    for (uint k = 0; k < (n + 31) / 32; ++k) total = fma(total, 1.0009765625f, part[k]);
    sums[g] = total;
  }
}
)";

// 8x8 simdgroup matrices (the prelude's FMA multiply-accumulate) on non-integer data.
static const char *kMatrix = R"(
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;
kernel void mm(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]],
               device float* C [[buffer(2)]], uint sg [[simdgroup_index_in_threadgroup]],
               uint tg [[threadgroup_position_in_grid]]) {
  uint tile = tg * 4 + sg;
  uint ti = tile / 4, tj = tile % 4;
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.5f);
  for (uint k = 0; k < 32; k += 8) {
    simdgroup_float8x8 a, b;
    simdgroup_load(a, A + ti * 8 * 32 + k, 32);
    simdgroup_load(b, B + k * 32 + tj * 8, 32);
    simdgroup_multiply_accumulate(acc, a, b, acc);
  }
  simdgroup_store(acc, C + ti * 8 * 32 + tj * 8, 32);
}
)";

static std::string math_source() {
  // erf_like: a helper function (a call the optimiser inlines and folds, tier 0 does not).
  return std::string(kMath).replace(std::string(kMath).find("kernel void"), 0,
                                    "inline float erf_like(float z) { float t = 1.0f / (1.0f + 0.3275911f * abs(z));\n"
                                    "  return sign(z) * (1.0f - t * exp(-z * z) * (0.254829592f + t * -0.284496736f)); }\n");
}

static std::vector<float> inputs(size_t n, uint32_t seed) {
  std::vector<float> v = randf(n, seed);
  for (size_t i = 0; i < n; ++i) v[i] *= float(1 + (i % 7) * 13);
  const float special[] = {0.0f, -0.0f, 1e-40f, -3e-39f, INFINITY, -INFINITY, NAN, 88.7f, -103.0f, 1e30f};
  for (size_t k = 0; k < sizeof special / sizeof *special; ++k) v[(k * 37 + seed) % n] = special[k];
  return v;
}

struct MathOut {
  std::vector<float> out, sums;
  std::vector<uint16_t> outh, outb;
  std::string error;
};

static MathOut run_math(int checked) {
  const uint32_t n = 512, tg = 128;
  MathOut r;
  r.out.assign(n, 0);
  r.outh.assign(n, 0);
  r.outb.assign(n, 0);
  r.sums.assign(n / tg, 0);
  Lib lib(math_source(), checked);
  if (!lib.lib) {
    r.error = lib.error;
    return r;
  }
  mgsim_function *f = lib.fn("mathy");
  std::vector<float> x = inputs(n, 3), y = inputs(n, 11);
  r.error = Dispatch(f).buf(0, x).buf(1, y).buf(2, r.out).buf(3, r.outh).buf(4, r.outb).buf(5, r.sums)
                .tgmem(0, 4 * sizeof(float)).threads(n, 1, 1, tg, 1, 1).run();
  mgsim_function_release(f);
  return r;
}

static std::vector<float> run_matrix(int checked, std::string &error) {
  std::vector<float> A = randf(32 * 32, 5), B = randf(32 * 32, 6), C(32 * 32, 0.0f);
  for (size_t i = 0; i < A.size(); ++i) A[i] *= 1.0f + float(i % 5) / 3.0f;
  Lib lib(kMatrix, checked);
  if (!lib.lib) {
    error = lib.error;
    return C;
  }
  mgsim_function *f = lib.fn("mm");
  error = Dispatch(f).buf(0, A).buf(1, B).buf(2, C).groups(4, 1, 1, 128, 1, 1).run();
  mgsim_function_release(f);
  return C;
}

template <class T>
static bool same_bits(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

static std::string read_text(const std::string &path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

int main() {
  // The compile log (CI's, when it sets one; else a file of this test's own).
  const char *ci_log = getenv("MG_SIM_COMPILE_LOG");
  const std::string log_path = ci_log && *ci_log ? std::string(ci_log)
                                                 : std::string(mgsim_cache_directory()) + "/tiers-log-" +
                                                       std::to_string(getpid()) + ".tsv";
  setenv("MG_SIM_COMPILE_LOG", log_path.c_str(), 1);
  struct Mode {
    const char *name;
    const char *fibers;  // MG_SIM_WORKITEM
    int checked;
  } modes[] = {{"work-item", "1", 0}, {"fibers", "0", 0}, {"checked", "1", 1}};
  for (const Mode &m : modes) {
    setenv("MG_SIM_WORKITEM", m.fibers, 1);
    mgsim_stats s0, s1, s2;
    mgsim_get_stats(&s0);
    setenv("MG_SIM_OPT", "0", 1);
    MathOut t0 = run_math(m.checked);
    std::string e0;
    std::vector<float> c0 = run_matrix(m.checked, e0);
    mgsim_get_stats(&s1);
    setenv("MG_SIM_OPT", "full", 1);
    MathOut t1 = run_math(m.checked);
    std::string e1;
    std::vector<float> c1 = run_matrix(m.checked, e1);
    mgsim_get_stats(&s2);
    CHECK(t0.error.empty() && t1.error.empty() && e0.empty() && e1.empty(), "%s: both tiers compile and run %s%s%s%s",
          m.name, t0.error.c_str(), t1.error.c_str(), e0.c_str(), e1.c_str());
    // Both units have a tier 0 (as fibers, the barrier-free matrix kernel is a plain unit).
    const uint64_t expect = 2;
    CHECK(s1.tier0_compiles - s0.tier0_compiles == expect && s2.tier0_compiles == s1.tier0_compiles &&
              s1.tier0_dispatches - s0.tier0_dispatches == expect && s2.tier0_dispatches == s1.tier0_dispatches,
          "%s: MG_SIM_OPT=0 compiles and runs tier 0 (%llu compiles), MG_SIM_OPT=full does not", m.name,
          (unsigned long long)(s1.tier0_compiles - s0.tier0_compiles));
    CHECK(same_bits(t0.out, t1.out) && same_bits(t0.sums, t1.sums), "%s: float results bit-identical across tiers", m.name);
    CHECK(same_bits(t0.outh, t1.outh) && same_bits(t0.outb, t1.outb), "%s: half and bfloat results bit-identical", m.name);
    CHECK(same_bits(c0, c1), "%s: simdgroup-matrix product bit-identical across tiers", m.name);
    CHECK(t1.out[100] != 0.0f && t1.sums[1] != 0.0f, "%s: the kernel computed something (out[100] = %g)", m.name, double(t1.out[100]));
  }
  unsetenv("MG_SIM_WORKITEM");

  // Promotion: tiered (the default), promoted after the first dispatch (MG_SIM_TIER_UP_MS=0).
  unsetenv("MG_SIM_OPT");
  setenv("MG_SIM_TIER_UP_MS", "0", 1);
  {
    const std::string src = math_source() + "// promotion\n";
    Lib lib(src);
    mgsim_function *f = lib.fn("mathy");
    const uint32_t n = 512, tg = 128;
    std::vector<float> x = inputs(n, 3), y = inputs(n, 11);
    std::vector<std::vector<float>> outs;
    mgsim_stats a, b, c;
    mgsim_get_stats(&a);
    std::string err;
    for (int rep = 0; rep < 3; ++rep) {
      std::vector<float> out(n, 0), sums(n / tg, 0);
      std::vector<uint16_t> oh(n), ob(n);
      err += Dispatch(f).buf(0, x).buf(1, y).buf(2, out).buf(3, oh).buf(4, ob).buf(5, sums)
                 .tgmem(0, 4 * sizeof(float)).threads(n, 1, 1, tg, 1, 1).run();
      outs.push_back(out);
      if (rep == 0) mgsim_get_stats(&b);
    }
    mgsim_get_stats(&c);
    CHECK(err.empty() && lib.lib, "tiered: dispatches run %s", (lib.error + err).c_str());
    CHECK(b.tier0_dispatches - a.tier0_dispatches == 1 && b.tier_promotions - a.tier_promotions == 1 &&
              c.tier0_dispatches == b.tier0_dispatches && c.compiler_invocations == b.compiler_invocations,
          "tiered: the first dispatch runs tier 0, then the library is compiled optimised once and later "
          "dispatches run that (promotions %llu)", (unsigned long long)(c.tier_promotions - a.tier_promotions));
    CHECK(same_bits(outs[0], outs[1]) && same_bits(outs[1], outs[2]), "tiered: results before and after promotion agree");
    // What ran is counted: the tier-0 dispatch ran the work-item kernel's fiber stand-in, the
    // optimised ones its work-item form; all three are work-item dispatches.
    CHECK(b.tier0_fiber_dispatches - a.tier0_fiber_dispatches == 1 && c.tier0_fiber_dispatches == b.tier0_fiber_dispatches &&
              c.workitem_dispatches - a.workitem_dispatches == 3 &&
              c.fiber_fallback_dispatches == a.fiber_fallback_dispatches,
          "tiered: the tier-0 fiber stand-in's dispatch is counted apart (%llu of %llu work-item dispatches, "
          "%llu fiber fallbacks)",
          (unsigned long long)(c.tier0_fiber_dispatches - a.tier0_fiber_dispatches),
          (unsigned long long)(c.workitem_dispatches - a.workitem_dispatches),
          (unsigned long long)(c.fiber_fallback_dispatches - a.fiber_fallback_dispatches));
    mgsim_function_release(f);
    // A new library of the same source finds the optimised object at once.
    mgsim_stats d;
    Lib again(src);
    mgsim_get_stats(&d);
    mgsim_function *g = again.fn("mathy");
    std::vector<float> out(n, 0), sums(n / tg, 0);
    std::vector<uint16_t> oh(n), ob(n);
    std::string e2 = Dispatch(g).buf(0, x).buf(1, y).buf(2, out).buf(3, oh).buf(4, ob).buf(5, sums)
                         .tgmem(0, 4 * sizeof(float)).threads(n, 1, 1, tg, 1, 1).run();
    mgsim_stats e;
    mgsim_get_stats(&e);
    CHECK(e2.empty() && e.tier0_dispatches == d.tier0_dispatches && e.compiler_invocations == c.compiler_invocations &&
              same_bits(out, outs[0]),
          "tiered: the same source again uses the optimised object, no compile");
    mgsim_function_release(g);
  }
  unsetenv("MG_SIM_TIER_UP_MS");

  // Promotion of part of a unit: the kernel that ran long compiles optimised alone (an object of its
  // own); its sibling, which did not run, stays at tier 0 until it too has run long.
  setenv("MG_SIM_TIER_UP_MS", "1", 1);
  {
    const std::string src = R"(
#include <metal_stdlib>
using namespace metal;
template <typename T>
kernel void spin(device T* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  T v = x[i];
  for (int k = 0; k < 4000; ++k) v = v * T(3) + T(1);
  x[i] = v;
}
template [[host_name("spin_f")]] [[kernel]] decltype(spin<float>) spin<float>;
template [[host_name("spin_u")]] [[kernel]] decltype(spin<uint>) spin<uint>;
)";
    Lib lib(src, /*checked=*/1);
    mgsim_function *f = lib.fn("spin_f"), *u = lib.fn("spin_u");
    const uint32_t n = 4096;
    std::vector<float> x0(n, 0.5f), x1(n, 0.5f);
    std::vector<uint32_t> y0(n, 7u), y1(n, 7u);
    mgsim_stats a, b, c;
    mgsim_get_stats(&a);
    std::string err = Dispatch(f).buf(0, x0).threads(n, 1, 1, 64, 1, 1).run();  // tier 0, then promoted
    mgsim_get_stats(&b);
    err += Dispatch(f).buf(0, x1).threads(n, 1, 1, 64, 1, 1).run();  // the optimised object
    err += Dispatch(u).buf(0, y0).threads(n, 1, 1, 64, 1, 1).run();  // tier 0 still
    mgsim_get_stats(&c);
    CHECK(err.empty() && lib.lib && b.tier_promotions - a.tier_promotions == 1 && b.tier0_dispatches - a.tier0_dispatches == 1 &&
              c.tier0_dispatches - b.tier0_dispatches == 1,
          "part of a unit: the kernel that ran long is promoted, its sibling keeps running tier 0 %s",
          (lib.error + err).c_str());
    err = Dispatch(u).buf(0, y1).threads(n, 1, 1, 64, 1, 1).run();  // its own promotion, then the same bits
    CHECK(err.empty() && same_bits(x0, x1) && same_bits(y0, y1) && x0[5] != 0.5f && y0[5] != 7u,
          "part of a unit: each kernel computes the same bits before and after its promotion %s", err.c_str());
    mgsim_function_release(f);
    mgsim_function_release(u);
  }
  unsetenv("MG_SIM_TIER_UP_MS");

  // Plain unchecked units (elementwise, fused kernels) compile at tier 0 first too (~20% less CPU).
  {
    mgsim_stats a, b;
    mgsim_get_stats(&a);
    Lib lib("#include <metal_stdlib>\nusing namespace metal;\nkernel void k(device float* x [[buffer(0)]], uint i "
            "[[thread_position_in_grid]]) { x[i] = exp(x[i]); }\n");
    mgsim_get_stats(&b);
    CHECK(lib.lib && b.tier0_compiles == a.tier0_compiles + 1, "a plain unchecked unit compiles at tier 0 first");
  }

  const std::string log = read_text(log_path);
  CHECK(log.find("\tcompile-tierup\tspin_f\n") != std::string::npos &&
            log.find("\tcompile-tierup\tspin_u\n") != std::string::npos,
        "the compile log names a partial promotion's kernels (spin_f, then spin_u, each alone)");
  CHECK(log.find("\tcompile-workitem-O0\tmathy") != std::string::npos &&
            log.find("\tcompile-workitem-tierup\tmathy") != std::string::npos &&
            log.find("\tcompile-O0\tmathy") != std::string::npos,
        "the compile log names tier-0 compiles (-O0) and promotions (-tierup)");
  if (!(ci_log && *ci_log)) unlink(log_path.c_str());
  return g_failures ? 1 : 0;
}
