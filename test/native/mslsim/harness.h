// Tiny harness for the simulator tests: compile MSL through the C API, bind buffers, dispatch.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

inline int finish() {
  printf("%s\n", g_failures ? "some checks failed" : "all checks passed");
  return g_failures ? 1 : 0;
}
