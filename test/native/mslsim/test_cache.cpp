// Compile caches: a second process loads the compiled object from the disk cache without running
// the compiler; concurrent creation of one library compiles once; a cache may use another cache's
// precompiled preludes (MG_SIM_PCH_CACHE). Also prints compile times (cold without PCH, cold with
// PCH, disk-cached, in-memory).
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness.h"

static double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static std::string small_kernel(const std::string &tag) {
  return "#include <metal_stdlib>\nusing namespace metal;\n// " + tag +
         "\nkernel void axpy(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],\n"
         "                 constant float& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {\n"
         "  y[i] = a * x[i] + y[i];\n}\n";
}

static bool run_axpy(mgsim_library *lib) {
  char *err = nullptr;
  mgsim_function *f = mgsim_function_create(lib, "axpy", nullptr, 0, &err);
  if (!f) return false;
  std::vector<float> x = randf(300, 4), y = randf(300, 5), y0 = y;
  float a = 1.5f;
  std::string e = Dispatch(f).buf(0, x).buf(1, y).bytes(2, a).threads(300, 1, 1, 64, 1, 1).run();
  mgsim_function_release(f);
  bool ok = e.empty();
  for (int i = 0; i < 300; ++i) ok = ok && y[i] == a * x[i] + y0[i];
  return ok;
}

// Child mode: create the library from a file and print the statistics.
static int child(const char *path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  double t0 = now_ms();
  Lib lib(ss.str());
  double t1 = now_ms();
  mgsim_stats s;
  mgsim_get_stats(&s);
  bool ok = lib.lib && run_axpy(lib.lib);
  printf("child compiler_invocations=%llu disk_cache_hits=%llu ok=%d ms=%.1f\n",
         (unsigned long long)s.compiler_invocations, (unsigned long long)s.disk_cache_hits, ok ? 1 : 0, t1 - t0);
  if (!lib.lib) printf("child error: %s\n", lib.error.c_str());
  return 0;
}

// Whether `dir` has an entry whose name starts with `prefix`.
static bool has_entry(const std::string &dir, const char *prefix) {
  DIR *d = opendir(dir.c_str());
  bool found = false;
  while (d && !found)
    if (dirent *e = readdir(d)) found = strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    else break;
  if (d) closedir(d);
  return found;
}

static std::string run_child(const std::string &exe, const std::string &src_path, const std::string &env = "") {
  std::string cmd = env + " '" + exe + "' child '" + src_path + "'";
  FILE *p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  if (p) pclose(p);
  return out;
}

int main(int argc, char **argv) {
  if (argc == 3 && std::string(argv[1]) == "child") return child(argv[2]);
  // The precompiled prelude is built in this test's own cache, as on a first compile, even when the
  // other harness programs share another cache's (MG_SIM_PCH_CACHE, run.sh).
  unsetenv("MG_SIM_PCH_CACHE");
  std::string exe = getenv("MSLSIM_TEST_EXE") ? getenv("MSLSIM_TEST_EXE") : argv[0];
  std::string tag = std::to_string(getpid()) + "-" + std::to_string(long(now_ms()));
  printf("cache directory: %s\n", mgsim_cache_directory());

  // Cold, with the precompiled prelude being built on first use.
  mgsim_stats s0, s1, s2;
  mgsim_get_stats(&s0);
  double t0 = now_ms();
  Lib first(small_kernel("first " + tag));
  double t_first = now_ms() - t0;
  mgsim_get_stats(&s1);
  CHECK(first.lib && run_axpy(first.lib), "cold compile of a small kernel works %s", first.error.c_str());

  // Cold with the PCH already built.
  t0 = now_ms();
  Lib second(small_kernel("second " + tag));
  double t_pch = now_ms() - t0;
  mgsim_get_stats(&s2);
  CHECK(second.lib && s2.compiler_invocations - s1.compiler_invocations == 1,
        "a second source compiles with one compiler run (precompiled prelude reused)");

  // Cold without the PCH.
  setenv("MG_SIM_NO_PCH", "1", 1);
  t0 = now_ms();
  Lib nopch(small_kernel("nopch " + tag));
  double t_nopch = now_ms() - t0;
  unsetenv("MG_SIM_NO_PCH");
  CHECK(nopch.lib && run_axpy(nopch.lib), "compiling without the precompiled prelude works %s", nopch.error.c_str());

  // Same source again in this process: memory cache.
  mgsim_stats m0, m1;
  mgsim_get_stats(&m0);
  t0 = now_ms();
  Lib again(small_kernel("first " + tag));
  double t_mem = now_ms() - t0;
  mgsim_get_stats(&m1);
  CHECK(again.lib && m1.memory_cache_hits == m0.memory_cache_hits + 1 && m1.compiler_invocations == m0.compiler_invocations,
        "the same source in the same process is a memory-cache hit");

  // A second process: the disk cache, no compiler.
  std::string path = std::string(mgsim_cache_directory()) + "/test-src-" + tag + ".metal";
  {
    std::ofstream o(path);
    o << small_kernel("first " + tag);
  }
  std::string out = run_child(exe, path);
  double t_disk = -1;
  const char *ms = strstr(out.c_str(), "ms=");
  if (ms) t_disk = atof(ms + 3);
  CHECK(out.find("compiler_invocations=0 disk_cache_hits=1 ok=1") != std::string::npos,
        "a second process reuses the disk cache and runs no compiler: %s", out.c_str());
  unlink(path.c_str());

  // Many threads creating one new library at once: one compile, the rest wait and share it.
  mgsim_stats c0, c1;
  mgsim_get_stats(&c0);
  std::string shared = small_kernel("threads " + tag);
  std::vector<std::thread> ts;
  std::atomic<int> good{0};
  for (int i = 0; i < 4; ++i)
    ts.emplace_back([&] {
      Lib l(shared);
      if (l.lib && run_axpy(l.lib)) good.fetch_add(1);
    });
  for (auto &t : ts) t.join();
  mgsim_get_stats(&c1);
  CHECK(good.load() == 4 && c1.compiler_invocations - c0.compiler_invocations == 1,
        "4 threads creating the same library: %d ok, %llu compiler run(s)", good.load(),
        (unsigned long long)(c1.compiler_invocations - c0.compiler_invocations));

  // Two processes compiling one new source concurrently: both succeed (atomic rename).
  std::string path2 = std::string(mgsim_cache_directory()) + "/test-src2-" + tag + ".metal";
  {
    std::ofstream o(path2);
    o << small_kernel("race " + tag);
  }
  std::string r1, r2;
  std::thread a([&] { r1 = run_child(exe, path2); }), b([&] { r2 = run_child(exe, path2); });
  a.join();
  b.join();
  CHECK(r1.find("ok=1") != std::string::npos && r2.find("ok=1") != std::string::npos,
        "two processes compiling the same new source both succeed: %s / %s", r1.c_str(), r2.c_str());
  unlink(path2.c_str());

  // A fresh kernel cache whose precompiled preludes are another cache's (MG_SIM_PCH_CACHE, as CI's
  // harness uses the main job's): a cold compile there builds none, and a compile error inside the
  // prelude still names it "prelude/<file>", not the other cache's copy.
  const std::string cache = mgsim_cache_directory(), fresh = cache + "/fresh-" + tag;
  const std::string env = "MG_SIM_CACHE='" + fresh + "' MG_SIM_PCH_CACHE='" + cache + "'";
  std::string path3 = cache + "/test-src3-" + tag + ".metal";
  {
    std::ofstream o(path3);
    o << small_kernel("shared pch " + tag);
  }
  std::string r3 = run_child(exe, path3, env);
  CHECK(r3.find("compiler_invocations=1 disk_cache_hits=0 ok=1") != std::string::npos && !has_entry(fresh, "pch-"),
        "a fresh cache with MG_SIM_PCH_CACHE compiles with one compiler run, building no precompiled prelude: %s",
        r3.c_str());
  {
    std::ofstream o(path3);
    o << "#include <metal_stdlib>\nusing namespace metal;\n// " << tag
      << "\nkernel void axpy(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) { y[i] = "
         "simd_and(float(i)); }\n";
  }
  r3 = run_child(exe, path3, env);
  CHECK(r3.find("prelude/mgsim_exec.h") != std::string::npos && r3.find(cache + "/") == std::string::npos,
        "an error inside the shared precompiled prelude names prelude/<file>: %.300s", r3.c_str());
  unlink(path3.c_str());
  std::error_code ignored;
  std::filesystem::remove_all(fresh, ignored);

  // A library's head is preprocessed once and its instantiation lines appended as written only
  // when the preprocessor provably leaves them alone (compile.cpp, tail_of): a macro the head
  // defines must still expand in the tail.
  {
    const std::string head = "#include <metal_stdlib>\nusing namespace metal;\n#define FACTOR 3.0f\n#define TYPE float\n"
                             "template <typename T> kernel void scale(device T* y [[buffer(0)]],\n"
                             "    uint i [[thread_position_in_grid]]) { y[i] = y[i] * FACTOR; }\n// instances " + tag + "\n";
    auto scaled = [](Lib &l, const char *name) {
      mgsim_function *f = l.lib ? l.fn(name) : nullptr;
      if (!f) return false;
      std::vector<float> y = randf(64, 6), y0 = y;
      const std::string e = Dispatch(f).buf(0, y).threads(64, 1, 1, 32, 1, 1).run();
      mgsim_function_release(f);
      bool ok = e.empty();
      for (int i = 0; i < 64; ++i) ok = ok && y[i] == y0[i] * 3.0f;
      return ok;
    };
    Lib with_macro(head + "template [[host_name(\"scale_m\")]] [[kernel]] decltype(scale<TYPE>) scale<TYPE>;\n");
    CHECK(scaled(with_macro, "scale_m"), "an instantiation line naming a macro of the library expands it %s",
          with_macro.error.c_str());
    Lib plain(head + "template [[host_name(\"scale_p\")]] [[kernel]] decltype(scale<float>) scale<float>;\n");
    CHECK(scaled(plain, "scale_p"), "a plain instantiation line after a shared head compiles and runs %s", plain.error.c_str());
  }

  printf("compile times (small kernel): cold incl. PCH build %.0f ms (%llu compiler runs), cold with PCH %.0f ms, "
         "cold without PCH %.0f ms, disk-cached (second process) %.1f ms, in-memory %.3f ms\n",
         t_first, (unsigned long long)(s1.compiler_invocations - s0.compiler_invocations), t_pch, t_nopch, t_disk, t_mem);
  return finish();
}
