// Where the language-types prelude meets the execution layer: <cmath> (not <math.h>) keeps
// pow(x, 2) / floor(i) / sqrt(2) / fmax(x, 0) unambiguous; simdgroup matrices whose lanes write
// their thread_elements() gather them with mgsim::simdgroup_allgather before multiplying; checked
// mode's element references are value proxies (exp(p[i]), half ph[i] + ph[j], vector pv[i] * 2);
// the library embeds every prelude header.
#include <dirent.h>

#include <algorithm>
#include <set>

#include "embed.h"
#include "harness.h"

static const char *kMathSrc = R"(
#include <metal_stdlib>
using namespace metal;
kernel void int_args(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
  int k = int(i) - 3;
  out[4 * i + 0] = pow(x[i], 2);
  out[4 * i + 1] = floor(k) + sqrt(2);
  out[4 * i + 2] = fmax(x[i], 0);
  out[4 * i + 3] = min(x[i], 1) + abs(k);
}
)";

static void test_cmath_overloads() {
  for (int checked = 0; checked <= 1; ++checked) {
    Lib lib(kMathSrc, checked);
    CHECK(lib.lib, "pow(x, 2), floor(int), sqrt(2), fmax(x, 0), min(x, 1) compile%s %s", checked ? " (checked)" : "",
          lib.error.c_str());
    if (!lib.lib) continue;
    auto *f = lib.fn("int_args");
    std::vector<float> x = {-1.5f, 0.25f, 2.0f, 3.5f, -0.0f, 7.0f}, out(24, -1);
    std::string e = Dispatch(f).buf(0, x).buf(1, out).threads(6, 1, 1, 6, 1, 1).run();
    int bad = 0;
    for (int i = 0; i < 6; ++i) {
      int k = i - 3;
      bad += out[4 * i + 0] != x[i] * x[i];
      bad += out[4 * i + 1] != float(k) + sqrtf(2.0f);
      bad += out[4 * i + 2] != fmaxf(x[i], 0.0f);
      bad += out[4 * i + 3] != fminf(x[i], 1.0f) + float(k < 0 ? -k : k);
    }
    CHECK(e.empty() && bad == 0, "integer arguments pick the float overloads%s (%d mismatches) %s",
          checked ? " (checked)" : "", bad, e.c_str());
    mgsim_function_release(f);
  }
}

// MLX's GEMM pattern: each lane loads its two elements of A and B through thread_elements(), the
// simdgroup multiplies, and the product is read back both with simdgroup_store and per lane.
static const char *kFragmentSrc = R"(
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;
kernel void frag_mm(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]],
                    device float* C [[buffer(2)]], device float* Cfrag [[buffer(3)]],
                    constant uint& K [[buffer(4)]],
                    uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                    uint tg [[threadgroup_position_in_grid]]) {
  const uint tile = tg * 2 + sg;            // one 8x8 output tile per simdgroup, 4x4 tiles
  const uint ti = tile / 4, tj = tile % 4;  // C is 32x32
  const uint q = lane / 4;
  const uint fr = (q & 4) + (lane / 2) % 4, fc = (q & 2) * 2 + (lane % 2) * 2;
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k = 0; k < K; k += 8) {
    simdgroup_float8x8 a, b;
    thread float2& af = a.thread_elements();
    af[0] = A[(ti * 8 + fr) * K + k + fc];
    af[1] = A[(ti * 8 + fr) * K + k + fc + 1];
    b.thread_elements() = float2(B[(k + fr) * 32 + tj * 8 + fc], B[(k + fr) * 32 + tj * 8 + fc + 1]);
    simdgroup_multiply_accumulate(acc, a, b, acc);
  }
  simdgroup_store(acc, C + ti * 8 * 32 + tj * 8, 32);
  const float2 mine = acc.thread_elements();
  Cfrag[(ti * 8 + fr) * 32 + tj * 8 + fc] = mine.x;
  Cfrag[(ti * 8 + fr) * 32 + tj * 8 + fc + 1] = mine.y;
}
// Half fragments written, then scaled in place through thread_elements() before the store.
kernel void frag_half(device const half* A [[buffer(0)]], device half* out [[buffer(1)]],
                      uint lane [[thread_index_in_simdgroup]]) {
  const uint q = lane / 4;
  const uint fr = (q & 4) + (lane / 2) % 4, fc = (q & 2) * 2 + (lane % 2) * 2;
  simdgroup_half8x8 m;
  m.thread_elements() = half2(A[fr * 8 + fc], A[fr * 8 + fc + 1]);
  simdgroup_half8x8 id = simdgroup_half8x8(half(1));
  simdgroup_half8x8 r;
  simdgroup_multiply(r, m, id);
  r.thread_elements() *= half(2);
  simdgroup_store(r, out, 8);
}
)";

static void test_fragment_gather() {
  const uint32_t K = 24;
  std::vector<float> A(32 * K), B(K * 32);
  for (size_t i = 0; i < A.size(); ++i) A[i] = float(int((i * 7) % 11) - 5);
  for (size_t i = 0; i < B.size(); ++i) B[i] = float(int((i * 5) % 13) - 6);
  std::vector<float> want(32 * 32, 0);
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 32; ++c) {
      double s = 0;
      for (uint32_t k = 0; k < K; ++k) s += double(A[r * K + k]) * B[k * 32 + c];
      want[size_t(r * 32 + c)] = float(s);
    }
  for (int checked = 0; checked <= 1; ++checked) {
    Lib lib(kFragmentSrc, checked);
    CHECK(lib.lib, "thread_elements() fragment kernels compile%s %s", checked ? " (checked)" : "", lib.error.c_str());
    if (!lib.lib) continue;
    auto *f = lib.fn("frag_mm");
    std::vector<float> C(32 * 32, -1), Cf(32 * 32, -1);
    uint32_t k = K;
    Dispatch d(f);
    d.buf(0, A).buf(1, B).buf(2, C).buf(3, Cf).bytes(4, k).groups(8, 1, 1, 64, 1, 1);
    d.d.must_write_mask = (1u << 2) | (1u << 3);
    std::string e = d.run();
    size_t bad = 0, bad_f = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      bad += C[i] != want[i];
      bad_f += Cf[i] != want[i];
    }
    CHECK(e.empty() && bad == 0 && bad_f == 0,
          "lanes write A/B fragments, the simdgroup multiplies (32x%ux32), store and per-lane fragments agree%s: "
          "%zu / %zu mismatches %s",
          K, checked ? " (checked)" : "", bad, bad_f, e.c_str());
    mgsim_function_release(f);

    auto *g = lib.fn("frag_half");
    std::vector<uint16_t> Ah(64), outh(64, 0xffff);
    // Small integers are exact in half: bits of i - 20 for i in 0..63.
    for (int i = 0; i < 64; ++i) {
      int v = i - 20;
      float fv = float(v);
      uint32_t b;
      memcpy(&b, &fv, 4);
      // float -> half for small integers: exponent rebias, mantissa truncation is exact here
      uint16_t h = v == 0 ? 0 : uint16_t(((b >> 16) & 0x8000u) | ((((b >> 23) & 0xffu) - 112u) << 10) | ((b >> 13) & 0x3ffu));
      Ah[size_t(i)] = h;
    }
    std::string e2 = Dispatch(g).buf(0, Ah).buf(1, outh).groups(1, 1, 1, 32, 1, 1).run();
    int bad_h = 0;
    for (int i = 0; i < 64; ++i) {
      float want_h = 2.0f * float(i - 20);
      uint32_t b;
      memcpy(&b, &want_h, 4);
      uint16_t h = want_h == 0 ? 0 : uint16_t(((b >> 16) & 0x8000u) | ((((b >> 23) & 0xffu) - 112u) << 10) | ((b >> 13) & 0x3ffu));
      bad_h += outh[size_t(i)] != h;
    }
    CHECK(e2.empty() && bad_h == 0, "half fragments: written, multiplied by the identity, scaled in place%s (%d mismatches) %s",
          checked ? " (checked)" : "", bad_h, e2.c_str());
    mgsim_function_release(g);
  }
}

// Non-const device pointers are elem_ref proxies in checked mode.
static const char *kProxySrc = R"(
#include <metal_stdlib>
using namespace metal;
kernel void proxies(device float* p [[buffer(0)]], device half* ph [[buffer(1)]], device float4* pv [[buffer(2)]],
                    device float* out [[buffer(3)]], uint i [[thread_position_in_grid]]) {
  out[8 * i + 0] = exp(p[i]);
  out[8 * i + 1] = float(ph[i] + ph[(i + 1) % 4]);
  float4 v = pv[i] * 2;
  out[8 * i + 2] = v.x;
  out[8 * i + 3] = v.w;
  out[8 * i + 4] = max(p[i], 0.0f) + clamp(p[i], -1.0f, 1.0f);
  half h = ph[i] * ph[i];
  out[8 * i + 5] = float(h);
  out[8 * i + 6] = dot(pv[i], pv[i]);
  out[8 * i + 7] = float(-ph[i]);
}
)";

static void test_checked_proxies() {
  std::vector<std::vector<float>> results;
  for (int checked = 0; checked <= 1; ++checked) {
    Lib lib(kProxySrc, checked);
    CHECK(lib.lib, "exp(p[i]), ph[i] + ph[j], pv[i] * 2 on non-const device pointers compile%s %s",
          checked ? " (checked)" : "", lib.error.c_str());
    if (!lib.lib) {
      results.emplace_back();
      continue;
    }
    auto *f = lib.fn("proxies");
    std::vector<float> p = {0.5f, -2.0f, 1.25f, 3.0f}, out(32, -7);
    std::vector<uint16_t> ph = {0x3E00, 0xC000, 0x3400, 0x4100};  // 1.5, -2, 0.25, 2.5
    std::vector<float> pv = {1, 2, 3, 4, -1, 0.5f, 2, 8, 0, 0, 0, 1, 9, 8, 7, 6};
    Dispatch d(f);
    d.buf(0, p).buf(1, ph).buf(2, pv).buf(3, out).threads(4, 1, 1, 4, 1, 1);
    d.d.must_write_mask = 1u << 3;
    std::string e = d.run();
    const float hv[4] = {1.5f, -2.0f, 0.25f, 2.5f};
    int bad = 0;
    for (int i = 0; i < 4; ++i) {
      bad += out[8 * i + 0] != expf(p[i]);
      bad += out[8 * i + 1] != hv[i] + hv[(i + 1) % 4];
      bad += out[8 * i + 2] != pv[4 * i] * 2 || out[8 * i + 3] != pv[4 * i + 3] * 2;
      bad += out[8 * i + 4] != fmaxf(p[i], 0) + fminf(fmaxf(p[i], -1), 1);
      bad += out[8 * i + 5] != hv[i] * hv[i];
      float dd = 0;
      for (int c = 0; c < 4; ++c) dd += pv[4 * i + c] * pv[4 * i + c];
      bad += out[8 * i + 6] != dd;
      bad += out[8 * i + 7] != -hv[i];
    }
    CHECK(e.empty() && bad == 0, "proxy arithmetic gives the plain values%s (%d mismatches) %s", checked ? " (checked)" : "",
          bad, e.c_str());
    results.push_back(out);
    mgsim_function_release(f);
  }
}

// embed.c lists the prelude headers by name: every header in prelude/ must be embedded.
static void test_embedded_prelude() {
  std::string file = __FILE__;
  std::string dir = file.substr(0, file.rfind('/')) + "/../../../Sources/MSLSim/prelude";
  std::set<std::string> on_disk, embedded;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 2 && n.substr(n.size() - 2) == ".h") on_disk.insert(n);
    }
    closedir(d);
  }
  bool same_bytes = true;
  for (size_t i = 0; i < mgsim_prelude_file_count; ++i) {
    embedded.insert(mgsim_prelude_files[i].name);
    FILE *fp = fopen((dir + "/" + mgsim_prelude_files[i].name).c_str(), "rb");
    std::string text;
    char buf[65536];
    size_t n;
    while (fp && (n = fread(buf, 1, sizeof buf, fp)) > 0) text.append(buf, n);
    if (fp) fclose(fp);
    same_bytes = same_bytes && text.size() == mgsim_prelude_files[i].size &&
                 memcmp(text.data(), mgsim_prelude_files[i].data, text.size()) == 0;
  }
  std::string missing;
  for (auto &n : on_disk)
    if (!embedded.count(n)) missing += " " + n;
  CHECK(!on_disk.empty() && missing.empty() && on_disk.size() == embedded.size(),
        "embed.c embeds every prelude header (%zu on disk, %zu embedded; missing:%s)", on_disk.size(), embedded.size(),
        missing.empty() ? " none" : missing.c_str());
  CHECK(same_bytes, "the embedded prelude headers are byte-identical to the files");
  bool translator_same = mgsim_translator_file_count == 2;
  for (size_t i = 0; i < mgsim_translator_file_count; ++i) {
    FILE *fp = fopen((dir + "/../" + mgsim_translator_files[i].name).c_str(), "rb");
    std::string text;
    char buf[65536];
    size_t n;
    while (fp && (n = fread(buf, 1, sizeof buf, fp)) > 0) text.append(buf, n);
    if (fp) fclose(fp);
    translator_same = translator_same && text.size() == mgsim_translator_files[i].size &&
                      memcmp(text.data(), mgsim_translator_files[i].data, text.size()) == 0;
  }
  CHECK(translator_same, "the translator's embedded source (part of the cache key) is the current translate.cpp/.h");
  // The work-item generator and the lexer are part of the key the same way.
  bool parts_same = mgsim_translator_part_file_count == 4;
  for (size_t i = 0; i < mgsim_translator_part_file_count; ++i) {
    FILE *fp = fopen((dir + "/../" + mgsim_translator_part_files[i].name).c_str(), "rb");
    std::string text;
    char buf[65536];
    size_t n;
    while (fp && (n = fread(buf, 1, sizeof buf, fp)) > 0) text.append(buf, n);
    if (fp) fclose(fp);
    parts_same = parts_same && text.size() == mgsim_translator_part_files[i].size &&
                 memcmp(text.data(), mgsim_translator_part_files[i].data, text.size()) == 0;
  }
  CHECK(parts_same, "the embedded work-item generator and lexer (part of the cache key) are the current files");
}

// Signed integer overflow wraps (compiled with -fwrapv): `x + 1 < x` is true at INT_MAX instead of
// being folded to false, and an LCG in int arithmetic matches the two's-complement reference.
static const char *kWrapSrc = R"(
#include <metal_stdlib>
using namespace metal;
kernel void wraps(device const int* x [[buffer(0)]], device int* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  const int v = x[i];
  out[3 * i] = v + 1 < v ? 1 : 0;
  out[3 * i + 1] = v * 1103515245 + 12345;
  int acc = v;
  for (int k = 0; k < 3; ++k) acc = acc * 69069 + 1;
  out[3 * i + 2] = acc > v ? 1 : 0;
}
)";

static void test_signed_wrap() {
  Lib lib(kWrapSrc);
  CHECK(lib.lib, "signed-overflow kernel compiles %s", lib.error.c_str());
  if (!lib.lib) return;
  auto *f = lib.fn("wraps");
  std::vector<int32_t> x = {2147483647, -2147483647 - 1, 123456789, -5}, out(12, 99);
  std::string e = Dispatch(f).buf(0, x).buf(1, out).threads(4, 1, 1, 4, 1, 1).run();
  int bad = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t v = uint32_t(x[size_t(i)]);
    bad += out[size_t(3 * i)] != (i == 0 ? 1 : 0);
    bad += uint32_t(out[size_t(3 * i + 1)]) != v * 1103515245u + 12345u;
    uint32_t acc = v;
    for (int k = 0; k < 3; ++k) acc = acc * 69069u + 1u;
    bad += out[size_t(3 * i + 2)] != (int32_t(acc) > int32_t(v) ? 1 : 0);
  }
  CHECK(e.empty() && bad == 0, "signed int overflow wraps (INT_MAX + 1 < INT_MAX, LCGs) (%d mismatches) %s", bad, e.c_str());
  mgsim_function_release(f);
}

int main() {
  test_signed_wrap();
  test_cmath_overloads();
  test_fragment_gather();
  test_checked_proxies();
  test_embedded_prelude();
  return finish();
}
