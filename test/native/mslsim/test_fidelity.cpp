// Fidelity to Metal's compiler: valid MSL compiles and runs, invalid MSL fails with a message.
//   preprocessing     kernel signatures and instantiations built by macros, a macro invocation
//                     right before a kernel, address spaces inside macro bodies (checked mode),
//                     Metal's predefined macros per language version and math mode, the library's
//                     macros, missing headers, #error, and diagnostics on the user's lines
//   checked mode      elements read through checked pointers are values (template deduction,
//                     auto, generic lambdas), elements used as objects (v[i].x = ..) work, writes
//                     stay precisely tracked
//   language          '>>' closing nested template arguments in an instantiation; user function
//                     templates named like prelude helpers; [[grid_origin]] / [[grid_size]]
//   atomics, simd     what MSL does not define is a compile error naming the rule
//   math modes        fast and relaxed give the same bits as safe on finite inputs
#include <cstring>

#include "harness.h"

// Compiles with explicit options (macros, language version).
struct Options {
  std::vector<const char *> names, values;
  uint32_t version = 0;
  int math = MGSIM_MATH_SAFE;
  int checked = 0;
};
static std::string compile(const std::string &src, const Options &o, mgsim_library **out) {
  mgsim_compile_options c{};
  c.math_mode = o.math;
  c.checked = o.checked;
  c.language_version = o.version;
  c.macro_names = o.names.empty() ? nullptr : o.names.data();
  c.macro_values = o.values.empty() ? nullptr : o.values.data();
  c.macro_count = int32_t(o.names.size());
  char *err = nullptr;
  *out = mgsim_library_create(src.c_str(), &c, &err);
  std::string e = err ? err : "";
  if (err) mgsim_string_free(err);
  return e;
}

static bool has(const std::string &s, const char *what) { return s.find(what) != std::string::npos; }

// --- preprocessing -------------------------------------------------------------------------------

static const char *kMacroSrc = R"(
#include <metal_stdlib>
using namespace metal;
#define ARGS device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]
kernel void from_macro_args(ARGS) { out[i] = float(i) * 2.0f; }

#define STORE(T) inline void store_##T(device T* p, T v) { *p = v; }
STORE(float)
[[kernel]] void after_macro(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  store_float(out + i, float(i) + 0.5f);
}

#define KERNEL(NAME, OP) \
  [[kernel]] void NAME(device const float* in [[buffer(0)]], device float* out [[buffer(1)]], \
                       uint i [[thread_position_in_grid]]) { out[i] = OP(in[i]); }
KERNEL(k_neg, -)
KERNEL(k_sqrt, sqrt)

template <typename T>
[[kernel]] void scaled(device T* out [[buffer(0)]], constant T& s [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  out[i] = T(i) * s;
}
#define INSTANTIATE(tname, T) \
  template [[host_name("scaled_" #tname)]] [[kernel]] decltype(scaled<T>) scaled<T>;
INSTANTIATE(f32, float)
INSTANTIATE(i32, int)
)";

static void test_macros() {
  Lib lib(kMacroSrc);
  CHECK(lib.lib && mgsim_library_function_count(lib.lib) == 6, "macro-built signatures, kernels and instantiations compile: %s",
        lib.error.c_str());
  if (!lib.lib) return;
  const uint32_t n = 40;
  std::vector<float> a(n, -1), b(n, -1), in(n), neg(n, -1), root(n, -1), sf(n, -1);
  std::vector<int> si(n, -1);
  for (uint32_t i = 0; i < n; ++i) in[i] = float(i * i);
  auto *f1 = lib.fn("from_macro_args");
  auto *f2 = lib.fn("after_macro");
  auto *f3 = lib.fn("k_neg");
  auto *f4 = lib.fn("k_sqrt");
  auto *f5 = lib.fn("scaled_f32");
  auto *f6 = lib.fn("scaled_i32");
  float s = 1.5f;
  int si_scale = -3;
  std::string e = Dispatch(f1).buf(0, a).threads(n, 1, 1, 16, 1, 1).run();
  e += Dispatch(f2).buf(0, b).threads(n, 1, 1, 16, 1, 1).run();
  e += Dispatch(f3).buf(0, in).buf(1, neg).threads(n, 1, 1, 16, 1, 1).run();
  e += Dispatch(f4).buf(0, in).buf(1, root).threads(n, 1, 1, 16, 1, 1).run();
  e += Dispatch(f5).buf(0, sf).bytes(1, s).threads(n, 1, 1, 16, 1, 1).run();
  e += Dispatch(f6).buf(0, si).bytes(1, si_scale).threads(n, 1, 1, 16, 1, 1).run();
  bool ok = e.empty();
  for (uint32_t i = 0; i < n; ++i)
    ok = ok && a[i] == float(i) * 2 && b[i] == float(i) + 0.5f && neg[i] == -in[i] && root[i] == float(i) &&
         sf[i] == float(i) * 1.5f && si[i] == -3 * int(i);
  CHECK(ok, "kernels from ARGS, after STORE(float), from KERNEL(...) and INSTANTIATE(...) compute their results %s", e.c_str());
  for (auto *f : {f1, f2, f3, f4, f5, f6}) mgsim_function_release(f);
}

// `device` inside a macro body becomes a checked pointer too: the helper's write is checked.
static void test_checked_macro_body() {
  Lib lib(R"(
#include <metal_stdlib>
using namespace metal;
#define S(T) inline void put(device T* p, uint i, T v) { p[i] = v; }
S(float)
kernel void k(device float* out [[buffer(0)]], constant uint& n [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  put(out, i == 0 ? n : i, 1.0f);
}
)", 1);
  CHECK(lib.lib, "checked mode: a helper whose device pointer comes from a macro compiles: %s", lib.error.c_str());
  if (!lib.lib) return;
  auto *f = lib.fn("k");
  std::vector<float> out(16, 0);
  uint32_t n = 16;
  std::string e = Dispatch(f).buf(0, out).bytes(1, n).threads(16, 1, 1, 16, 1, 1).run();
  CHECK(has(e, "out-of-bounds write") && has(e, "buffer(0) element 16") && has(e, "thread (0, 0, 0)"),
        "and its out-of-bounds write is reported: %s", e.c_str());
  mgsim_function_release(f);
}

static void test_predefined_macros() {
  const char *src = R"(
#include <metal_stdlib>
using namespace metal;
kernel void info(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[0] = __METAL_VERSION__;
#if defined(__METAL_MACOS__)
  out[1] = 1;
#else
  out[1] = 0;
#endif
#ifdef __METAL__
  out[2] = 1;
#else
  out[2] = 0;
#endif
#ifdef __FAST_MATH__
  out[3] = 1;
#else
  out[3] = 0;
#endif
  out[4] = __FINITE_MATH_ONLY__;
#if defined(__GNUC__) || defined(__x86_64__) || defined(__aarch64__) || defined(__linux__)
  out[5] = 1;  // the host compiler's macros must not leak
#else
  out[5] = 0;
#endif
  out[6] = int(__cplusplus / 100);
#ifdef WITH_VALUE
  out[7] = WITH_VALUE;
#else
  out[7] = -1;
#endif
#ifdef EMPTY
  out[8] = 1 EMPTY;
#else
  out[8] = -1;
#endif
  out[9] = __LINE__;
#if defined(__HAVE_BFLOAT__) && defined(__HAVE_SIMDGROUP_MATRIX__)
  bfloat b = bfloat(1.5f);
  out[10] = int(float(b) * 2.0f);
#else
  out[10] = 0;
#endif
  (void)i;
}
)";
  // __LINE__ is the line in the user's source.
  int line = 1;
  for (const char *q = src; *q && strncmp(q, "__LINE__", 8) != 0; ++q) line += *q == '\n';
  struct Case {
    uint32_t version;
    int math;
    int want[11];
  } cases[] = {
      {0, MGSIM_MATH_SAFE, {320, 1, 1, 0, 0, 0, 2014, 7, 1, line, 3}},
      {0x20004u, MGSIM_MATH_RELAXED, {240, 1, 0, 0, 0, 0, 2014, 7, 1, line, 0}},
      {0x30001u, MGSIM_MATH_FAST, {310, 1, 1, 1, 1, 0, 2014, 7, 1, line, 3}},
      {0x40000u, MGSIM_MATH_SAFE, {400, 1, 1, 0, 0, 0, 2017, 7, 1, line, 3}},
  };
  for (const Case &c : cases) {
    Options o;
    o.version = c.version;
    o.math = c.math;
    o.names = {"WITH_VALUE", "EMPTY"};
    o.values = {"7", nullptr};
    mgsim_library *lib = nullptr;
    std::string e = compile(src, o, &lib);
    std::vector<int> out(11, -99);
    if (lib) {
      char *err = nullptr;
      mgsim_function *f = mgsim_function_create(lib, "info", nullptr, 0, &err);
      Dispatch d(f);
      e += d.buf(0, out).threads(1, 1, 1, 1, 1, 1).run();
      mgsim_function_release(f);
      mgsim_library_release(lib);
    }
    bool ok = e.empty();
    for (int k = 0; k < 11; ++k) ok = ok && out[size_t(k)] == c.want[k];
    CHECK(ok, "version 0x%x math %d: __METAL_VERSION__ %d, __METAL_MACOS__ %d, __METAL__ %d, __FAST_MATH__ %d, "
              "__FINITE_MATH_ONLY__ %d, host macros %d, __cplusplus/100 %d, macros %d %d, __LINE__ %d, "
              "__HAVE_BFLOAT__ && __HAVE_SIMDGROUP_MATRIX__ %d %s",
          c.version, c.math, out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], out[8], out[9], out[10],
          e.c_str());
  }
}

static void test_preprocessor_errors() {
  Lib a("#include <metal_stdlib>\n#include <stdio.h>\nkernel void k(device float* o [[buffer(0)]]) {}\n");
  CHECK(!a.lib && has(a.error, "program_source:2") && has(a.error, "stdio.h"), "a C header is not found, as on Metal: %s",
        a.error.c_str());
  Lib b("#include \"helpers.h\"\nkernel void k(device float* o [[buffer(0)]]) {}\n");
  CHECK(!b.lib && has(b.error, "program_source:1") && has(b.error, "helpers.h"), "nor is a local header: %s", b.error.c_str());
  Lib c("#include <metal_stdlib>\n\n#if __METAL_VERSION__ < 400\n#error needs Metal 4\n#endif\n");
  CHECK(!c.lib && has(c.error, "program_source:4") && has(c.error, "needs Metal 4"), "#error is reported at its line: %s",
        c.error.c_str());
  // Diagnostics after a multi-line macro invocation and a block comment still name the user's line.
  Lib d(R"(#include <metal_stdlib>
#define TWICE(x) \
  ((x) * 2)
/* a comment
   over lines */
kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = TWICE(
  1.0f); }
kernel void bad(device float* o, uint i [[thread_position_in_grid]]) { o[i] = 0; }
)");
  CHECK(!d.lib && has(d.error, "program_source:8:") && has(d.error, "'bad' has no [[buffer]]"),
        "a translator error names the user's line: %s", d.error.c_str());
  Lib e(R"(#include <metal_stdlib>
#define ZERO 0
kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  o[i] = float(ZERO) + undefined_thing;
}
)");
  CHECK(!e.lib && has(e.error, "program_source:4:") && has(e.error, "undefined_thing"),
        "a compiler error after macro expansion names the user's line: %s", e.error.c_str());
  Options o;
  o.names = {"BAD NAME"};
  o.values = {"1"};
  mgsim_library *lib = nullptr;
  std::string err = compile("kernel void k(device float* o [[buffer(0)]]) {}", o, &lib);
  CHECK(!lib && has(err, "'BAD NAME'") && has(err, "not a macro name"), "an invalid macro name is refused: %s", err.c_str());
}

// --- checked mode: elements as values --------------------------------------------------------------

static const char *kValuesSrc = R"(
#include <metal_stdlib>
using namespace metal;
template <class T> T pick(T a, T b) { return a > b ? a : b; }
struct P2 { float x, y; float sum() const { return x + y; } void bump() { x += 1.0f; } };
struct Span { device float* p; int n; float get(int i) const { return i < n ? p[i] : 0.0f; } };
kernel void values(device float* out [[buffer(0)]], const device float* in [[buffer(1)]],
                   device float4* v [[buffer(2)]], device P2* ps [[buffer(3)]], uint i [[thread_position_in_grid]]) {
  out[i] = pick(out[i], 2.0f);               // deduction through a read element
  auto copy = out[i];                        // a copy, not a reference
  copy += 100.0f;
  auto twice = [](auto x) { return x * 2; };
  out[i] = twice(out[i]) + pick(in[i], 0.5f) + (copy - out[i]);
  v[i].x = 3.0f;                             // an element used as an object
  v[i][1] += 1.0f;
  ps[i].bump();
  float& r = ps[i].y;
  r = ps[i].sum() + v[i].y;
  Span s{out, int(i) + 1};
  out[i] += s.get(0) * 0.0f + *in * 0.0f;
}
// Element 3 is read (through pick) but never written: checked mode must still report it.
kernel void read_only_three(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  float x = pick(out[i], 1.0f);
  if (i != 3) out[i] = x;
}
)";

static void test_checked_values() {
  const uint32_t n = 32;
  std::vector<float> want_out;
  std::vector<float> want_v;
  std::vector<float> want_p;
  for (int checked = 0; checked <= 1; ++checked) {
    Lib lib(kValuesSrc, checked);
    CHECK(lib.lib, "elements as values compile%s: %s", checked ? " (checked)" : "", lib.error.c_str());
    if (!lib.lib) continue;
    auto *f = lib.fn("values");
    std::vector<float> out(n), in(n), v(4 * n), p(2 * n);
    for (uint32_t i = 0; i < n; ++i) {
      out[i] = float(i % 5);
      in[i] = float(i % 3) * 0.25f;
      for (int k = 0; k < 4; ++k) v[4 * i + k] = float(i + k);
      p[2 * i] = float(i);
      p[2 * i + 1] = -1.0f;
    }
    std::string e = Dispatch(f).buf(0, out).buf(1, in).buf(2, v).buf(3, p).threads(n, 1, 1, 32, 1, 1).run();
    bool ok = e.empty();
    for (uint32_t i = 0; i < n; ++i) {
      const float o0 = float(i % 5), picked = o0 > 2.0f ? o0 : 2.0f;
      const float in_pick = std::max(float(i % 3) * 0.25f, 0.5f);
      ok = ok && out[i] == picked * 2 + in_pick + 100.0f;
      ok = ok && v[4 * i] == 3.0f && v[4 * i + 1] == float(i + 1) + 1.0f && v[4 * i + 2] == float(i + 2);
      ok = ok && p[2 * i] == float(i) + 1.0f && p[2 * i + 1] == float(i) + 1.0f - 1.0f + float(i + 1) + 1.0f;
    }
    CHECK(ok, "deduction, auto copies, generic lambdas, element members and references give Metal's values%s %s",
          checked ? " (checked)" : "", e.c_str());
    mgsim_function_release(f);
    if (checked) {
      auto *g = lib.fn("read_only_three");
      std::vector<float> o(8, 0);
      Dispatch d(g);
      d.buf(0, o).threads(8, 1, 1, 8, 1, 1);
      d.d.must_write_mask = 1u;
      std::string eg = d.run();
      CHECK(has(eg, "unwritten output") && has(eg, "first at element 3"), "an element only read stays unwritten: %s", eg.c_str());
      mgsim_function_release(g);
    }
  }
}

// --- language ------------------------------------------------------------------------------------------

static void test_language() {
  Lib b(R"(
#include <metal_stdlib>
using namespace metal;
template <class T> struct Scale { T v; };
template <class T, class S> [[kernel]] void k(device T* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = T(i) * S{T(3)}.v;
}
template [[host_name("k_float_scale")]] [[kernel]] decltype(k<float, Scale<float>>) k<float, Scale<float>>;
template [[host_name("k_int_scale")]] [[kernel]] decltype(k<int, Scale<int>>) k<int, Scale<int>>;
)");
  CHECK(b.lib && mgsim_library_function_count(b.lib) == 2, "'>>' closing nested template arguments in instantiations: %s",
        b.error.c_str());
  if (b.lib) {
    auto *f = b.fn("k_float_scale");
    auto *g = b.fn("k_int_scale");
    std::vector<float> of(10, 0);
    std::vector<int> oi(10, 0);
    std::string e = Dispatch(f).buf(0, of).threads(10, 1, 1, 10, 1, 1).run() + Dispatch(g).buf(0, oi).threads(10, 1, 1, 10, 1, 1).run();
    bool ok = e.empty();
    for (int i = 0; i < 10; ++i) ok = ok && of[size_t(i)] == 3.0f * float(i) && oi[size_t(i)] == 3 * i;
    CHECK(ok, "and both instantiations run %s", e.c_str());
    mgsim_function_release(f);
    mgsim_function_release(g);
  }
  // User function templates named like the prelude's internal helpers, called with half, vector
  // and (checked) element arguments: no ambiguity.
  const char *adl = R"(
#include <metal_stdlib>
using namespace metal;
template <class T, class U> T convert(U u) { return T(u) + T(1); }
template <class V> auto component(V v, int i) { return v[i]; }
template <class V> V to_vec(V v) { return v; }
template <class T> T unwrap(T v) { return v; }
template <class T> T op_max(T a, T b) { return a > b ? a : b; }
kernel void k(device half* out [[buffer(0)]], device float4* v [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  out[i] = convert<half>(out[i]) + component(half4(1, 2, 3, 4), 2) + to_vec(out[i]) + unwrap(out[i]) + op_max(out[i], out[i]);
  float4 w = v[i];
  v[i] = to_vec(w) + component(w, 1) + unwrap(w) + op_max(w.x, 1.0f);
}
)";
  for (int checked = 0; checked <= 1; ++checked) {
    Lib l(adl, checked);
    CHECK(l.lib, "user templates named convert, component, to_vec, unwrap, op_max are not ambiguous%s: %s",
          checked ? " (checked)" : "", l.error.c_str());
    if (!l.lib) continue;
    auto *f = l.fn("k");
    std::vector<uint16_t> h(4, 0x3c00);  // 1.0h
    std::vector<float> v(16);
    for (int j = 0; j < 16; ++j) v[size_t(j)] = float(j);
    std::string e = Dispatch(f).buf(0, h).buf(1, v).threads(4, 1, 1, 4, 1, 1).run();
    // out: (1+1) + 3 + 1 + 1 + 1 = 8 (0x4800); v: w + w.y + w + max(w.x, 1)
    bool ok = e.empty();
    for (int j = 0; j < 4; ++j) {
      ok = ok && h[size_t(j)] == 0x4800;
      for (int c = 0; c < 4; ++c) {
        const float w = float(4 * j + c), y = float(4 * j + 1), x = std::max(float(4 * j), 1.0f);
        ok = ok && v[size_t(4 * j + c)] == w + y + w + x;
      }
    }
    CHECK(ok, "and they compute with the user's definitions%s %s", checked ? " (checked)" : "", e.c_str());
    mgsim_function_release(f);
  }
  // [[grid_origin]] and [[grid_size]]: no stage-in region, so the origin and the dispatched grid.
  Lib g(R"(
#include <metal_stdlib>
using namespace metal;
kernel void grid(device uint* out [[buffer(0)]], uint3 origin [[grid_origin]], uint2 size [[grid_size]],
                 uint i [[thread_position_in_grid]]) {
  out[i] = origin.x + origin.y + origin.z + 1000u * size.x + 1000000u * size.y;
}
)");
  CHECK(g.lib, "[[grid_origin]] and [[grid_size]] are accepted: %s", g.error.c_str());
  if (g.lib) {
    auto *f = g.fn("grid");
    std::vector<uint32_t> out(77 * 3, 0);
    std::string e = Dispatch(f).buf(0, out).threads(77, 3, 1, 16, 2, 1).run();
    bool ok = e.empty();
    for (size_t k = 0; k < 77; ++k) ok = ok && out[k] == 77u * 1000u + 3u * 1000000u;
    CHECK(ok, "grid_origin is (0, 0, 0) and grid_size the dispatched grid (77, 3): %u %s", out[0], e.c_str());
    mgsim_function_release(f);
  }
}

// --- what Metal rejects --------------------------------------------------------------------------------

static void expect_rejected(const char *what, const std::string &body, const char *message, uint32_t version = 0) {
  Options o;
  o.version = version;
  mgsim_library *lib = nullptr;
  std::string e = compile("#include <metal_stdlib>\nusing namespace metal;\nstruct Pair { float a, b; };\n" + body, o, &lib);
  CHECK(!lib && has(e, message), "%s is rejected: %.300s", what, e.c_str());
  if (lib) mgsim_library_release(lib);
}

static void test_rejected() {
  expect_rejected("atomic_fetch_max_explicit on atomic_float",
                  "kernel void k(device atomic_float* a [[buffer(0)]]) { atomic_fetch_max_explicit(a, 1.0f, memory_order_relaxed); }",
                  "atomic<float> has no fetch_min / fetch_max");
  expect_rejected("atomic_fetch_add_explicit on atomic_ulong",
                  "kernel void k(device atomic_ulong* a [[buffer(0)]]) { atomic_fetch_add_explicit(a, 1ul, memory_order_relaxed); }",
                  "atomic<ulong> has no fetch-and-modify functions");
  expect_rejected("atomic_load_explicit on atomic_ulong",
                  "kernel void k(device atomic_ulong* a [[buffer(0)]], device ulong* o [[buffer(1)]]) { o[0] = atomic_load_explicit(a, memory_order_relaxed); }",
                  "atomic<ulong> supports only atomic_max_explicit and atomic_min_explicit");
  expect_rejected("atomic_fetch_or_explicit on atomic_bool",
                  "kernel void k(device atomic_bool* a [[buffer(0)]]) { atomic_fetch_or_explicit(a, true, memory_order_relaxed); }",
                  "atomic<bool> supports only load, store, exchange and compare_exchange");
  expect_rejected("a threadgroup atomic_float",
                  "kernel void k(device float* o [[buffer(0)]]) { threadgroup atomic_float x; atomic_store_explicit(&x, 1.0f, memory_order_relaxed); }",
                  "exist in device memory only");
  expect_rejected("a threadgroup atomic<T> instantiated with float",
                  "template <class T> kernel void k(device T* o [[buffer(0)]]) { threadgroup atomic<T> x[4]; (void)x; }\n"
                  "template [[host_name(\"kf\")]] kernel decltype(k<float>) k<float>;",
                  "exist in device memory only");
  expect_rejected("atomic_float before Metal 3",
                  "kernel void k(device atomic_float* a [[buffer(0)]]) { atomic_fetch_add_explicit(a, 1.0f, memory_order_relaxed); }",
                  "atomic_float requires Metal 3.0", 0x20004u);
  expect_rejected("simd_sum of a long", "kernel void k(device long* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = simd_sum(long(i)); }",
                  "simd_sum takes a scalar or vector of char, short, int, half, float or bfloat");
  expect_rejected("simd_shuffle of a bool", "kernel void k(device bool* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = simd_shuffle(i > 3, 0); }",
                  "simd_shuffle takes a scalar or vector");
  expect_rejected("simd_broadcast of a structure",
                  "kernel void k(device Pair* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = simd_broadcast(Pair{1.0f, 2.0f}, 0); }",
                  "simd_broadcast takes a scalar or vector");
  expect_rejected("simd_shuffle_down of a ulong2",
                  "kernel void k(device ulong2* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = simd_shuffle_down(ulong2(i), 1); }",
                  "simd_shuffle_down takes a scalar or vector");
  expect_rejected("simd_and of a float", "kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = simd_and(float(i)); }",
                  "simd_and is a bitwise reduction");

  // What Metal has, at the edges of those rules, compiles and computes.
  Lib ok(R"(
#include <metal_stdlib>
using namespace metal;
kernel void edges(device atomic_ulong* m [[buffer(0)]], device atomic_float* f [[buffer(1)]], device half4* h [[buffer(2)]],
                  device uchar* c [[buffer(3)]], device ushort2* u [[buffer(4)]], uint i [[thread_position_in_grid]]) {
  atomic_max_explicit(m, (ulong(i) << 40) | 7ul, memory_order_relaxed);
  atomic_min_explicit(m + 1, ulong(i) + 5ul, memory_order_relaxed);
  atomic_fetch_add_explicit(f, 0.5f, memory_order_relaxed);
  h[i] = simd_sum(half4(half(i), 1.0h, 2.0h, 0.0h));
  c[i] = simd_shuffle(uchar(i), 31 - i);
  u[i] = simd_or(ushort2(ushort(1u << (i % 16)), ushort(i)));
}
)");
  CHECK(ok.lib, "atomic_max/min_explicit on atomic_ulong, atomic_float add, simd on half4/uchar/ushort2 compile: %s", ok.error.c_str());
  if (ok.lib) {
    auto *f = ok.fn("edges");
    std::vector<uint64_t> m = {0, ~0ull};
    std::vector<float> fl(1, 0.0f);
    std::vector<uint16_t> h(32 * 4, 0);
    std::vector<uint8_t> c(32, 0);
    std::vector<uint16_t> u(64, 0);
    std::string e = Dispatch(f).buf(0, m).buf(1, fl).buf(2, h).buf(3, c).buf(4, u).threads(32, 1, 1, 32, 1, 1).run();
    bool good = e.empty() && m[0] == ((31ull << 40) | 7ull) && m[1] == 5 && fl[0] == 16.0f;
    for (int i = 0; i < 32; ++i) {
      // sum of 0..31 = 496 (half 0x5fc0), 32 (0x5000), 64 (0x5400), 0
      good = good && h[size_t(4 * i)] == 0x5fc0 && h[size_t(4 * i + 1)] == 0x5000 && h[size_t(4 * i + 2)] == 0x5400 &&
             h[size_t(4 * i + 3)] == 0 && c[size_t(i)] == uint8_t(31 - i) && u[size_t(2 * i)] == 0xffff && u[size_t(2 * i + 1)] == 31;
    }
    CHECK(good, "and compute Metal's results %s", e.c_str());
    mgsim_function_release(f);
  }
}

// --- math modes --------------------------------------------------------------------------------------------

static void test_math_modes() {
  const char *src = R"(
#include <metal_stdlib>
using namespace metal;
kernel void mix_math(device const float* x [[buffer(0)]], device float* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  float a = x[i], b = x[(i * 7 + 3) % 256] + 0.5f;
  out[i] = exp(a) / b + sqrt(fabs(a) + 1.0f) * log(b * b + 1.0f) - tanh(a) + fma(a, b, 0.25f) + pow(b * b + 1.0f, 0.3f) +
           (a - b) * (a + b) / (b * b + 2.0f) + max(a, b) - min(a, b) + clamp(a, -0.5f, 0.5f) + float(half(a) * half(b));
}
)";
  std::vector<float> x = randf(256, 11);
  std::vector<std::vector<float>> results;
  for (int mode : {MGSIM_MATH_SAFE, MGSIM_MATH_RELAXED, MGSIM_MATH_FAST}) {
    Lib lib(src, 0, mode);
    if (!lib.lib) {
      CHECK(false, "math mode %d compiles: %s", mode, lib.error.c_str());
      return;
    }
    auto *f = lib.fn("mix_math");
    std::vector<float> out(256, 0);
    std::string e = Dispatch(f).buf(0, x).buf(1, out).threads(256, 1, 1, 64, 1, 1).run();
    CHECK(e.empty(), "math mode %d runs %s", mode, e.c_str());
    results.push_back(out);
    mgsim_function_release(f);
  }
  bool same = results.size() == 3 && std::memcmp(results[0].data(), results[1].data(), 256 * 4) == 0 &&
              std::memcmp(results[0].data(), results[2].data(), 256 * 4) == 0;
  CHECK(same, "relaxed and fast give safe's bits on finite inputs");
}

int main() {
  test_macros();
  test_checked_macro_body();
  test_predefined_macros();
  test_preprocessor_errors();
  test_checked_values();
  test_language();
  test_rejected();
  test_math_modes();
  return finish();
}
