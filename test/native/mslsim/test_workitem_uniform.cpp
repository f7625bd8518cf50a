// Uniform values in the work-item form (workitem.cpp, mgsim_wi.h uniform_value): in a kernel, a
// declaration every lane computes alike (from constants, buffers and threadgroup-wide attributes)
// that nothing modifies is computed once per group instead of per lane; `if (c) return;` and an if
// with syncs whose condition is uniform that way take every active lane at once. The translation
// is checked for each form (and for the look-alikes that must stay per lane: a variable modified
// later, an index by the lane's id), and every kernel runs unchecked and checked (which keeps the
// per-lane forms) against values derived by hand from Metal's semantics: a group that returns
// early, a uniform division by zero after every lane has returned (never evaluated, as in Metal),
// and both branches of uniform conditions around collectives and barriers.
#include "harness.h"
#include "translate.h"

static const char *kSrc = R"(#include <metal_stdlib>
using namespace metal;
void bump(thread uint& x) { x += 100u; }
uint twice(const thread uint& x) { return 2u * x; }
uint first_of(constant uint* p) { return p[0]; }
float first_out(device float* p) { return p[0]; }
kernel void uniform_decls(device float* out [[buffer(0)]], constant uint* cfg [[buffer(1)]],
                          uint lid [[thread_index_in_threadgroup]], uint tg [[threads_per_threadgroup]],
                          uint2 group [[threadgroup_position_in_grid]]) {
  const uint base = group.x * tg + cfg[0];
  if (group.x >= cfg[1]) return;
  const uint scale = 1000u / cfg[2];
  uint shift = cfg[3];
  uint moved = cfg[3];
  const uint pick = cfg[lid % 4u];
  uint bumped = cfg[3];
  bump(bumped);
  const uint first = first_of(cfg);
  const float read_out = first_out(out);
  float v = simd_sum(float(lid));
  moved += lid;
  out[base + lid] = v + float(twice(scale)) + float(shift) + float(moved) + 1000.0f * float(pick) + float(bumped) +
                    float(first) + read_out;
}
kernel void uniform_guard(device float* out [[buffer(0)]], constant uint* cfg [[buffer(1)]],
                          uint lid [[thread_index_in_threadgroup]]) {
  if (lid < cfg[4]) return;
  const uint q = 1000u / cfg[5];
  float v = simd_sum(float(lid));
  out[lid] = v + float(q);
}
kernel void uniform_branch(device float* out [[buffer(0)]], constant uint* cfg [[buffer(1)]],
                           uint lid [[thread_index_in_threadgroup]], uint tg [[threads_per_threadgroup]]) {
  float v = float(lid);
  if (cfg[6] > 0u) {
    v = simd_sum(v);
  } else {
    v = simd_max(v);
  }
  if (tg > 32u) {
    threadgroup_barrier(mem_flags::mem_device);
    v += 1.0f;
  }
  out[lid] = v;
}
)";

static size_t count(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

static void translation(bool checked) {
  mgsim::TranslateOptions o;
  o.checked = checked;
  mgsim::TranslateResult r;
  std::string src = kSrc;
  src = src.substr(src.find("using namespace"));  // (no preprocessor here: the translator alone)
  const bool ok = mgsim::translate_msl(src, o, r);
  CHECK(ok && r.workitem, "translates in work-item form (checked %d)%s%s", int(checked), ok ? "" : ": ",
        r.error.c_str());
  const std::string &c = r.cpp;
  const char *u = " = ::mgsim::wi::uniform_value(mgwi_c, ";
  if (!checked) {
    for (const char *d : {"const uint base", "const uint scale", "uint shift", "const uint q", "const uint first"})
      CHECK(c.find(std::string(d) + u) != std::string::npos, "'%s' is computed once per group", d);
    // (uniform_decls: moved, pick, bumped, read_out, v; uniform_guard: v; uniform_branch: v.)
    CHECK(count(c, "MGWI_LANES(mgwi_v") == 7 && c.find("_moved, uint)") != std::string::npos &&
              c.find("_pick, uint)") != std::string::npos && c.find("_bumped, uint)") != std::string::npos &&
              c.find("_read_out, float)") != std::string::npos && count(c, "_v, float)") == 3,
          "a variable modified later (also through a reference parameter), one indexed by the lane, a call "
          "given a pointer to writable memory and a per-lane value keep per-lane storage");
    CHECK(c.find("return (mgwi_p4[mgwi_l].x >= mgwi_p1[mgwi_l][1]); })) mgwi_fn.retire_all();") != std::string::npos,
          "a uniform `if (c) return;` retires every active lane at once");
    CHECK(count(c, "-> bool { (void)mgwi_l; return (") == 3 && count(c, ".take_all();") == 2,
          "uniform conditions around syncs take one branch in every lane (computed once)");
  } else {
    CHECK(count(c, "uniform_value") == 0 && count(c, "take_all") == 0,
          "checked mode keeps per-lane forms (its race records need each lane's reads)");
  }
}

constexpr uint32_t kTg = 64;

// The work-item form runs optimised (MG_SIM_OPT=full) and at tier 0 (MG_SIM_OPT=0 with
// MG_SIM_TIER0_FIBERS=0; by default tier 0 runs such kernels as fibers).
static const char *g_tier = "";

static void run(const char *kernel, int checked, uint32_t groups, uint32_t tg, std::vector<uint32_t> cfg,
                const std::vector<float> &want, const char *what_) {
  const std::string what_s = std::string(what_) + ", " + g_tier;
  const char *what = what_s.c_str();
  Lib lib(kSrc, checked);
  mgsim_function *f = fn_in_model(lib, kernel, checked, MGSIM_EXEC_WORKITEM);
  if (!f) return;
  std::vector<float> out(want.size(), -1.0f);
  Dispatch d(f);
  d.buf(0, out).buf(1, cfg);
  d.groups(groups, 1, 1, tg, 1, 1);
  const std::string err = d.run();
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] != want[i] && !bad++) first = i;
  CHECK(err.empty() && bad == 0, "%s (checked %d), %s: %zu of %zu values as Metal computes them%s%s (first wrong: [%zu] %g, want %g)",
        kernel, checked, what, out.size() - bad, out.size(), err.empty() ? "" : "; ", err.c_str(), first,
        double(out[first]), double(want[first]));
  mgsim_function_release(f);
}

// Σ of the lane ids of lane l's simdgroup that are at least `from`.
static float simd_sum_ids(uint32_t l, uint32_t from) {
  float s = 0;
  for (uint32_t j = l & ~31u; j < (l & ~31u) + 32; ++j)
    if (j >= from) s += float(j);
  return s;
}

int main() {
  translation(false);
  translation(true);
  setenv("MG_SIM_TIER0_FIBERS", "0", 1);
  for (const char *tier : {"full", "0"})
  for (int checked = 0; checked <= 1; ++checked) {
    setenv("MG_SIM_OPT", tier, 1);
    g_tier = tier[0] == 'f' ? "optimised" : "tier 0";
    {
      // Groups 0 and 1 write at base = group * 64 + 5; group 2 returns at once.
      const std::vector<uint32_t> cfg = {5, 2, 8, 7, 0, 0, 0};
      std::vector<float> want(3 * kTg + 5, -1.0f);
      for (uint32_t g = 0; g < 2; ++g)
        for (uint32_t l = 0; l < kTg; ++l)
          want[g * kTg + 5 + l] =
              simd_sum_ids(l, 0) + 250.0f + 7.0f + float(7 + l) + 1000.0f * float(cfg[l % 4]) + 107.0f + 5.0f - 1.0f;
      run("uniform_decls", checked, 3, kTg, cfg, want, "two groups write, one returns");
    }
    {
      // Every lane returns before 1000 / 0: nothing runs it, nothing is written.
      run("uniform_guard", checked, 1, kTg, {0, 0, 0, 0, 64, 0, 0}, std::vector<float>(kTg, -1.0f),
          "every lane returned before a division by zero");
      std::vector<float> want(kTg, -1.0f);
      for (uint32_t l = 16; l < kTg; ++l) want[l] = simd_sum_ids(l, 16) + 250.0f;
      run("uniform_guard", checked, 1, kTg, {0, 0, 0, 0, 16, 4, 0}, want, "lanes 16 and up go on");
    }
    for (uint32_t sum = 0; sum <= 1; ++sum)
      for (uint32_t tg : {32u, kTg}) {
        std::vector<float> want(kTg, -1.0f);
        for (uint32_t l = 0; l < tg; ++l)
          want[l] = (sum ? simd_sum_ids(l, 0) : float(l | 31u)) + (tg > 32 ? 1.0f : 0.0f);
        char what[64];
        snprintf(what, sizeof what, "%s, %u threads", sum ? "sum" : "max", tg);
        run("uniform_branch", checked, 1, tg, {0, 0, 0, 0, 0, 0, sum}, want, what);
      }
  }
  unsetenv("MG_SIM_OPT");
  unsetenv("MG_SIM_TIER0_FIBERS");
  return finish();
}
