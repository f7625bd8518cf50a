// Tiny harness for the simulator tests: compile MSL through the C API, bind buffers, dispatch.
// run.sh compiles every test_X.cpp into one executable, each inside namespace test_X (its main is
// test_X::main, `int main()` or `int main(int, char **)`), and runs each as a process of its own.
// So a program includes every header it needs in the #include block at its top (those are included
// once, outside the namespaces), and has no namespace-scope initialiser with effects (it would run
// in every program).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "MSLSim.h"

static int g_failures = 0;


#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (cond) {                                          \
      printf("PASS ");                                   \
    } else {                                             \
      printf("FAIL ");                                   \
      ++g_failures;                                      \
    }                                                    \
    printf(__VA_ARGS__);                                 \
    printf("\n");                                        \
    fflush(stdout);                                      \
  } while (0)

struct Lib {
  mgsim_library *lib = nullptr;
  std::string error;
  explicit Lib(const std::string &src, int checked = 0, int math = MGSIM_MATH_SAFE) {
    mgsim_compile_options o{};
    o.math_mode = math;
    o.checked = checked;
    char *err = nullptr;
    lib = mgsim_library_create(src.c_str(), &o, &err);
    if (err) {
      error = err;
      mgsim_string_free(err);
    }
  }
  ~Lib() {
    if (lib) mgsim_library_release(lib);
  }
  mgsim_function *fn(const char *name, std::string *err_out = nullptr) {
    char *err = nullptr;
    mgsim_function *f = mgsim_function_create(lib, name, nullptr, 0, &err);
    if (err) {
      if (err_out) *err_out = err;
      else fprintf(stderr, "%s\n", err);
      mgsim_string_free(err);
    }
    return f;
  }
};

// The kernel `name` of `lib` (null after a failed CHECK naming the compile error), and a CHECK that
// the simulator runs it in execution model `want` (MGSIM_EXEC_*), with its reason when it is not.
inline mgsim_function *fn_in_model(Lib &lib, const char *name, int checked, int want) {
  mgsim_function *f = lib.fn(name);
  if (!f) {
    CHECK(false, "%s (checked %d): compiles (%s)", name, checked, lib.error.c_str());
    return nullptr;
  }
  const char *reason = nullptr;
  const int model = mgsim_function_execution_model(f, &reason);
  const char *form = want == MGSIM_EXEC_WORKITEM ? "in work-item form" : want == MGSIM_EXEC_FIBERS ? "as fibers" : "as a plain loop";
  CHECK(model == want, "%s (checked %d): runs %s (model %d%s%s)", name, checked, form, model, reason ? ": " : "",
        reason ? reason : "");
  return f;
}

struct Dispatch {
  mgsim_dispatch d{};
  explicit Dispatch(mgsim_function *f) { d.function = f; }
  template <class T>
  Dispatch &buf(int i, std::vector<T> &v) {
    d.buffers[i].data = v.data();
    d.buffers[i].length = v.size() * sizeof(T);
    return *this;
  }
  template <class T>
  Dispatch &bytes(int i, T &v) {
    d.buffers[i].data = &v;
    d.buffers[i].length = sizeof(T);
    return *this;
  }
  Dispatch &tgmem(int i, uint64_t n) {
    d.threadgroup_memory_length[i] = n;
    return *this;
  }
  Dispatch &threads(uint32_t gx, uint32_t gy, uint32_t gz, uint32_t tx, uint32_t ty, uint32_t tz) {
    d.grid[0] = gx; d.grid[1] = gy; d.grid[2] = gz;
    d.threads_per_threadgroup[0] = tx; d.threads_per_threadgroup[1] = ty; d.threads_per_threadgroup[2] = tz;
    d.dispatch_threads = 1;
    return *this;
  }
  Dispatch &groups(uint32_t gx, uint32_t gy, uint32_t gz, uint32_t tx, uint32_t ty, uint32_t tz) {
    threads(gx, gy, gz, tx, ty, tz);
    d.dispatch_threads = 0;
    return *this;
  }
  // Returns "" on success, else the error text.
  std::string run() {
    char *err = nullptr;
    int rc = mgsim_dispatch_run(&d, &err);
    std::string e = err ? err : "";
    if (err) mgsim_string_free(err);
    if (rc && e.empty()) e = "nonzero status without message";
    return e;
  }
};

// Deterministic pseudo-random floats in [-1, 1).
inline std::vector<float> randf(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (auto &x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = float(int32_t(s >> 33) % 100000) / 100000.0f;
  }
  return v;
}

// The repository's test/fixtures directory: run.sh exports MSLSIM_FIXTURES for the checkout it runs
// from; run directly, the one beside this header as it was compiled (test/native/mslsim/../../fixtures).
inline std::string fixtures_dir() {
  if (const char *d = getenv("MSLSIM_FIXTURES"); d && *d) return d;
  std::string here = __FILE__;
  return here.substr(0, here.rfind('/') + 1) + "../../fixtures";
}

// A fixture file's text, e.g. fixture("bench-kernels/block_sum.metal"). One that cannot be read
// fails the program (a FAIL line run.sh counts).
inline std::string fixture(const std::string &relative) {
  std::string path = fixtures_dir() + "/" + relative;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    printf("FAIL cannot read fixture %s (set MSLSIM_FIXTURES to the repository's test/fixtures)\n", path.c_str());
    fflush(stdout);
    exit(1);
  }
  std::ostringstream text;
  text << f.rdbuf();
  return text.str();
}

// One of the reference guide's kernel bodies (test/fixtures/guide-kernels/<name>.metal), verbatim:
// the statements mx.fast.metal_kernel takes as `source`.
inline std::string guide_kernel(const std::string &name) { return fixture("guide-kernels/" + name + ".metal"); }

// The source mx.fast.metal_kernel generates around a body (guide §7.3): the header, then
// `template <typename T>`, the signature from `params`, the body, and the host_name instantiation
// at T = `t`.
inline std::string metal_kernel_source(const std::string &name, const std::vector<std::string> &params,
                                       const std::string &body, const std::string &header = "",
                                       const std::string &t = "float") {
  std::string s = "#include <metal_stdlib>\nusing namespace metal;\n" + header + "\ntemplate <typename T>\n";
  s += "[[kernel]] void " + name + "(\n";
  for (size_t i = 0; i < params.size(); ++i) s += (i ? ",\n    " : "    ") + params[i];
  s += ") {\n" + body + "\n}\n";
  std::string inst = name + "<" + t + ">";
  s += "template [[host_name(\"" + name + "\")]] [[kernel]]\ndecltype(" + inst + ") " + inst + ";\n";
  return s;
}

inline int finish() {
  printf("%s\n", g_failures ? "some checks failed" : "all checks passed");
  return g_failures ? 1 : 0;
}
