// Minimal test harness for the prelude tests: counts checks, prints the first failures, and
// finish() prints "<name>: N passed, M failed" and returns the process exit status.
#ifndef MGSIM_TEST_CHECK_H
#define MGSIM_TEST_CHECK_H

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace check {
inline long passed = 0, failed = 0;
inline void record(bool ok, const char *file, int line, const char *what) {
  if (ok) {
    ++passed;
    return;
  }
  if (++failed <= 25) std::printf("FAIL %s:%d: %s\n", file, line, what);
}
// A float's bits and back (the tests compare results bit for bit).
inline uint32_t f2u(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float u2f(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
inline int finish(const char *name) {
  std::printf("%s: %ld passed, %ld failed\n", name, passed, failed);
  return failed ? 1 : 0;
}
}  // namespace check

#define CHECK(cond) ::check::record(bool(cond), __FILE__, __LINE__, #cond)
// Records a failure with a formatted explanation (the condition text is not enough in loops).
#define CHECK_F(cond, ...)                                    \
  do {                                                        \
    if (cond) {                                               \
      ++::check::passed;                                      \
    } else {                                                  \
      char buf_[512];                                         \
      std::snprintf(buf_, sizeof buf_, __VA_ARGS__);          \
      ::check::record(false, __FILE__, __LINE__, buf_);       \
    }                                                         \
  } while (0)

#endif
