// Compiler driver and caches: MSL source → translated C++ → shared object, cached on disk (atomic
// temp + rename, so concurrent processes are safe) and in memory; the prelude is precompiled once
// per compiler and flag set.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "embed.h"
#include "sim_internal.h"
#include "translate.h"

extern char **environ;

namespace mgsim {

Stats &stats() {
  static Stats s;
  return s;
}

namespace {

// 128-bit non-cryptographic hash (two independently seeded 64-bit streams).
struct Hasher {
  uint64_t a = 0x9E3779B97F4A7C15ull, b = 0xC2B2AE3D27D4EB4Full;
  static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
  }
  void add(const void *p, size_t n) {
    const unsigned char *c = static_cast<const unsigned char *>(p);
    for (size_t i = 0; i < n; ++i) {
      a = (a ^ c[i]) * 0x100000001b3ull;
      b = (b + c[i]) * 0x9E3779B97F4A7C15ull ^ (b >> 29);
    }
    uint64_t len = n;
    a = mix(a ^ len);
    b = mix(b + len);
  }
  void add(const std::string &s) { add(s.data(), s.size()); }
  std::string hex() const {
    char buf[40];
    snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(mix(a ^ b)),
             static_cast<unsigned long long>(mix(b + 0x632BE59BD9B4E019ull) ^ a));
    return buf;
  }
};

bool mkdir_p(const std::string &path) {
  std::string cur;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (!cur.empty() && mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
    if (i < path.size()) cur += path[i];
  }
  return true;
}

bool file_exists(const std::string &p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool read_file(const std::string &p, std::string &out) {
  FILE *f = fopen(p.c_str(), "rb");
  if (!f) return false;
  char buf[65536];
  size_t n;
  out.clear();
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  fclose(f);
  return true;
}

std::atomic<uint64_t> g_temp_counter{0};

std::string temp_name(const std::string &dir, const std::string &stem, const std::string &ext) {
  std::ostringstream s;
  s << dir << "/" << stem << ".tmp." << getpid() << "." << g_temp_counter.fetch_add(1) << ext;
  return s.str();
}

// Writes `data` to `path` atomically (temp file + rename).
bool write_atomic(const std::string &path, const std::string &data) {
  std::string dir = path.substr(0, path.rfind('/'));
  std::string tmp = temp_name(dir, path.substr(path.rfind('/') + 1), "");
  FILE *f = fopen(tmp.c_str(), "wb");
  if (!f) return false;
  bool ok = fwrite(data.data(), 1, data.size(), f) == data.size();
  ok = (fclose(f) == 0) && ok;
  if (ok) ok = rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) unlink(tmp.c_str());
  return ok;
}

// An exclusive lock on a file in the cache (flock: released when the holder exits, however it exits).
// Processes sharing a cache compile an object once: the CI's test workers start together and need
// the same precompiled prelude and many of the same kernels, and a second compile of the same unit
// cost as much CPU as the first. The others wait for the first and load its result.
struct FileLock {
  int fd = -1;
  explicit FileLock(const std::string &path) {
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
      while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
      }
  }
  ~FileLock() {
    if (fd >= 0) close(fd);
  }
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;
};

struct CompilerConfig {
  std::string cxx;       // as configured (MG_SIM_CXX)
  std::string resolved;  // absolute path of the binary, empty when not found
  std::string identity;  // path + size + mtime: changes when the compiler changes
  bool clang = false;
};

std::string resolve_in_path(const std::string &name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char *path = getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t b = 0;
  while (b <= p.size()) {
    size_t e = p.find(':', b);
    if (e == std::string::npos) e = p.size();
    std::string dir = p.substr(b, e - b);
    if (dir.empty()) dir = ".";
    std::string cand = dir + "/" + name;
    if (access(cand.c_str(), X_OK) == 0) return cand;
    b = e + 1;
  }
  return "";
}

const CompilerConfig &compiler() {
  static CompilerConfig c = [] {
    CompilerConfig cfg;
    const char *env = getenv("MG_SIM_CXX");
    cfg.cxx = (env && *env) ? env : "g++";
    std::string found = resolve_in_path(cfg.cxx);
    if (!found.empty()) {
      char real[PATH_MAX];
      cfg.resolved = realpath(found.c_str(), real) ? std::string(real) : found;
      struct stat st;
      std::ostringstream id;
      id << cfg.resolved;
      if (stat(cfg.resolved.c_str(), &st) == 0) id << ":" << st.st_size << ":" << st.st_mtime;
      cfg.identity = id.str();
      std::string base = cfg.resolved.substr(cfg.resolved.rfind('/') + 1);
      cfg.clang = base.find("clang") != std::string::npos ||
                  cfg.cxx.find("clang") != std::string::npos;
    }
    return cfg;
  }();
  return c;
}

std::string prelude_hash() {
  static std::string h = [] {
    Hasher hs;
    for (size_t i = 0; i < mgsim_prelude_file_count; ++i) {
      hs.add(mgsim_prelude_files[i].name, strlen(mgsim_prelude_files[i].name));
      hs.add(mgsim_prelude_files[i].data, mgsim_prelude_files[i].size);
    }
    uint32_t v = abi::kVersion;
    hs.add(&v, sizeof v);
    return hs.hex();
  }();
  return h;
}

// Changes with the translator's source: objects it generated differently are not reused.
std::string translator_hash() {
  static std::string h = [] {
    Hasher hs;
    for (size_t i = 0; i < mgsim_translator_file_count; ++i)
      hs.add(mgsim_translator_files[i].data, mgsim_translator_files[i].size);
    for (size_t i = 0; i < mgsim_translator_part_file_count; ++i)
      hs.add(mgsim_translator_part_files[i].data, mgsim_translator_part_files[i].size);
    return hs.hex();
  }();
  return h;
}

// MG_SIM_COMPILE_LOG=<file>: one line per compiler run is appended to it — "<CPU ms>\t<wall ms>\t
// <kind>\t<what>" — so a test suite or CI can say where compile time goes (.ci/run sums it up).
// One write(2) per line with O_APPEND, so concurrent processes do not interleave lines.
void log_compiler_run(const char *kind, double cpu_ms, double wall_ms, const std::string &what) {
  static const char *path = getenv("MG_SIM_COMPILE_LOG");
  if (!path || !*path) return;
  char head[64];
  snprintf(head, sizeof head, "%.1f\t%.1f\t%s\t", cpu_ms, wall_ms, kind);
  std::string line = head + (what.size() > 300 ? what.substr(0, 300) + "..." : what) + "\n";
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t w = write(fd, line.data(), line.size());
  (void)w;
  close(fd);
}

double monotonic_ms() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

// Runs the compiler with argv, stderr captured. Returns the exit status (-1 if it could not start).
// `kind` and `what` name the run in the compile log.
// A link run (`counted` false) is part of its compile, not a compiler run of its own in the statistics.
int run_compiler(const std::vector<std::string> &args, const std::string &log_path, std::string &log,
                 bool preprocessor = false, const char *kind = "compile", const std::string &what = "",
                 bool counted = true) {
  if (counted) (preprocessor ? stats().preprocessor_invocations : stats().compiler_invocations).fetch_add(1);
  const double started = monotonic_ms();
  std::vector<char *> argv;
  for (auto &a : args) argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    log = std::string("cannot start ") + args[0] + ": " + strerror(rc);
    return -1;
  }
  int status = 0;
  struct rusage usage;
  memset(&usage, 0, sizeof usage);
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  const double cpu_ms = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 +
                        double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3;
  log_compiler_run(preprocessor ? "preprocess" : kind, cpu_ms, monotonic_ms() - started, what);
  read_file(log_path, log);
  unlink(log_path.c_str());
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::vector<std::string> base_flags(int math_mode) {
  std::vector<std::string> f = {"-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden", "-w", "-pipe",
                                "-g0", "-fno-math-errno",
                                // Fused and unfused kernels must agree bit for bit.
                                "-ffp-contract=off", "-fno-semantic-interposition",
                                // A frame larger than a page probes each page, so a lane's stack
                                // overflow faults in its guard region (dispatch reports it).
                                "-fstack-clash-protection",
                                // A short loop (an elementwise kernel's whole body) that straddles a
                                // 64-byte fetch block ran 40% slower: 32-byte alignment avoids it.
                                "-falign-loops=32",
                                // Signed overflow wraps, as GPU integer units do, instead of being
                                // undefined behaviour the optimiser may exploit (no measurable cost
                                // on the bench kernels or int-indexed loops).
                                "-fwrapv",
                                // MSL has no exceptions: no landing pads to compile (-24% compile
                                // CPU at -O1 on work-item units), and no reference to libstdc++'s
                                // personality routine, which the directly linked objects lack.
                                "-fno-exceptions"};
#if defined(__x86_64__)
  // The prelude's 8x8 multiply-accumulate uses hardware fused multiply-add where this CPU has it
  // (otherwise fmaf is a libm call, 512 per lane and product): same results, one rounding either
  // way. Only that function is compiled for FMA — -mfma for the whole kernel made barrier-free
  // elementwise kernels ~25% slower. The macro is part of every cache key.
  if (__builtin_cpu_supports("fma")) f.push_back("-DMGSIM_HAVE_FMA=1");
  // Likewise the prelude's exp of a float4 (four components side by side in 256-bit vectors, the
  // same bits as the scalar exp; softmax's float32 passes use it), only that function: out of line.
  if (__builtin_cpu_supports("avx2")) f.push_back("-DMGSIM_HAVE_AVX2=1");
#endif
  // Not -mtls-dialect=gnu2 (cheaper thread_local access): glibc before 2.40 clobbers vector
  // registers when _dl_tlsdesc_dynamic allocates a dlopen'ed object's TLS (BZ #31372), which
  // corrupted kernels that keep pointers in xmm registers.


  // clang assumes a C++ loop without side effects ends and deletes an endless one: a spinning
  // kernel returned at once instead of being stopped by the dispatch watchdog (mslsim test_faults
  // with MG_SIM_CXX=clang++). g++ keeps such loops.
  if (compiler().clang) f.push_back("-fno-finite-loops");
  // relaxed/fast: flags that only change behaviour for special values (never reassociation).
  if (math_mode >= MGSIM_MATH_RELAXED) f.push_back("-fno-trapping-math");
  if (math_mode >= MGSIM_MATH_FAST) f.push_back("-ffinite-math-only");
  return f;
}

// -z defs: a function declared but never defined is a link error naming it (demangled), not a
// dlopen failure; -lm: the math functions the prelude calls resolve against libm explicitly.
const std::vector<std::string> &link_flags() {
  static const std::vector<std::string> f = {"-Wl,-z,defs", "-lm"};
  return f;
}

// With g++, an object is compiled (-c) and linked by running ld directly with the files g++ would
// give it, named by path: 6 ms of CPU per link instead of 21 (the driver, collect2 and the search
// of libc's and libm's linker scripts). Without -z defs (resolving libc's symbols costs as much
// again): check_kernel_symbols reports a symbol nothing defines as the undefined reference it is.
// The paths come from the compiler once per cache and compiler (a file in the cache).
struct DirectLink {
  bool ok = false;
  std::string ld;
  std::vector<std::string> before, after;  // around the object: crt files; libgcc, libm, libgcc_s, crt files
};

// What a program (args[0] and its arguments) writes to `fd` (1 or 2) when it exits 0, else "";
// the other output and stdin are /dev/null.
std::string captured_output(const std::vector<std::string> &args, int fd, const std::string &tmpdir) {
  const std::string out = temp_name(tmpdir, "print", ".txt");
  std::vector<char *> argv;
  for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, fd, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 3 - fd, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  std::string text;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) == 0) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) read_file(out, text);
  }
  posix_spawn_file_actions_destroy(&fa);
  unlink(out.c_str());
  return text;
}

std::string first_line_of_output(const std::string &bin, const std::string &arg, const std::string &tmpdir) {
  const std::string text = captured_output({bin, arg}, 1, tmpdir);
  return text.substr(0, text.find('\n'));
}

const DirectLink &direct_link() {
  static const DirectLink link = [] {
    DirectLink dl;
    const CompilerConfig &cc = compiler();
    const char *env = getenv("MG_SIM_DIRECT_LINK");
    if (cc.clang || cc.resolved.empty() || (env && strcmp(env, "0") == 0)) return dl;
    const char *kFiles[] = {"ld", "crti.o", "crtbeginS.o", "libgcc.a", "libm.so.6", "libgcc_s.so.1", "crtendS.o", "crtn.o"};
    std::vector<std::string> paths;
    Hasher h;
    h.add(cc.identity);
    const std::string record = cache_directory() + "/link-" + h.hex() + ".txt";
    std::string text;
    if (read_file(record, text)) {
      std::istringstream in(text);
      for (std::string line; std::getline(in, line);) paths.push_back(line);
    }
    if (paths.size() != sizeof kFiles / sizeof *kFiles) {
      paths.clear();
      const std::string tmpdir = cache_directory() + "/tmp";
      mkdir_p(tmpdir);
      for (const char *f : kFiles) {
        std::string p = first_line_of_output(cc.resolved, strcmp(f, "ld") == 0 ? "-print-prog-name=ld" : std::string("-print-file-name=") + f, tmpdir);
        if (strcmp(f, "ld") == 0) p = resolve_in_path(p);
        char real[PATH_MAX];
        if (!p.empty() && realpath(p.c_str(), real)) p = real;
        paths.push_back(p);
      }
      std::string all;
      for (const std::string &p : paths) all += p + "\n";
      write_atomic(record, all);
    }
    for (size_t i = 0; i < paths.size(); ++i)
      if (paths[i].empty() || access(paths[i].c_str(), i == 0 ? X_OK : R_OK) != 0) return dl;  // the driver links
    dl.ld = paths[0];
    dl.before = {paths[1], paths[2]};
    dl.after = {paths[3], "--as-needed", paths[4], paths[5], "--no-as-needed", paths[6], paths[7]};
    dl.ok = true;
    return dl;
  }();
  return link;
}

std::string join(const std::vector<std::string> &v) {
  std::string s;
  for (auto &x : v) s += x + " ";
  return s;
}

// The prelude files, written once per prelude version into the cache (or into `root`).
bool ensure_prelude_dir(std::string &dir, std::string &error, const std::string &root = cache_directory()) {
  dir = root + "/prelude-" + prelude_hash();
  std::string marker = dir + "/.complete";
  if (file_exists(marker)) return true;
  if (!mkdir_p(dir)) {
    error = "cannot create " + dir + ": " + strerror(errno);
    return false;
  }
  for (size_t i = 0; i < mgsim_prelude_file_count; ++i) {
    const auto &f = mgsim_prelude_files[i];
    if (!write_atomic(dir + "/" + f.name, std::string(reinterpret_cast<const char *>(f.data), f.size))) {
      error = "cannot write the prelude into " + dir;
      return false;
    }
  }
  write_atomic(marker, "");
  return true;
}

std::mutex g_pch_mu;

// Where the precompiled preludes are kept: MG_SIM_PCH_CACHE when set, else the kernel cache. Kernel
// caches may share one (a precompiled prelude depends only on the compiler, its flags and the
// prelude, all in its directory's name): CI's mslsim harness, which starts from a fresh kernel cache
// to test cold compiles, uses the main job's instead of building the same ones again.
const std::string &pch_cache_directory() {
  static const std::string dir = [] {
    const char *env = getenv("MG_SIM_PCH_CACHE");
    if (!env || !*env) return cache_directory();
    std::string d = env;
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    mkdir_p(d);
    return d;
  }();
  return dir;
}

// Builds (once per compiler, flags and prelude) the precompiled prelude; returns the flags that
// include it, or plain `-include` flags when precompiling fails.
//
// Not built with MGSIM_PCH_INSTANTIATE (mgsim_types.h's pre-instantiated common vectors): measured
// with g++ 12 on 16 translated GPU kernels of 22-40 KB, 2426 ms of compiler CPU time without it and
// 2433 ms with it, while the PCH grows from 27 MB to 61 MB and takes 1.3 s longer to build.
//
// Tier 0 (-O0) has a header of its own: g++ does not use one precompiled with optimisation
// (__OPTIMIZE__ differs) and would parse the whole prelude for every unit instead.
std::vector<std::string> prelude_include_flags(const std::string &own_prelude_dir, int math_mode, bool tier0) {
  const CompilerConfig &cc = compiler();
  std::vector<std::string> plain = {"-I" + own_prelude_dir, "-include", own_prelude_dir + "/mgsim_prelude.h"};
  const char *nopch = getenv("MG_SIM_NO_PCH");
  if (nopch && *nopch && strcmp(nopch, "0") != 0) return plain;
  // A shared precompiled prelude names the prelude files beside it (diagnostics, clang's checks).
  std::string prelude_dir = own_prelude_dir, error;
  if (pch_cache_directory() != cache_directory() && !ensure_prelude_dir(prelude_dir, error, pch_cache_directory()))
    return plain;
  std::vector<std::string> flags = base_flags(math_mode);
  if (tier0) flags.push_back("-O0");
  Hasher h;
  h.add(prelude_hash());
  h.add(cc.identity);
  h.add(join(flags));
  std::string dir = pch_cache_directory() + "/pch-" + h.hex();
  std::string header = dir + "/mgsim_prelude.h";
  std::string out = cc.clang ? dir + "/mgsim_prelude.pch" : header + ".gch";
  std::vector<std::string> use;
  if (cc.clang) use = {"-I" + prelude_dir, "-include-pch", out};
  else use = {"-I" + prelude_dir, "-include", header};
  std::lock_guard<std::mutex> lock(g_pch_mu);
  if (file_exists(out) && file_exists(header)) return use;
  std::string failed_marker = dir + "/.failed";
  if (file_exists(failed_marker)) return plain;
  if (!mkdir_p(dir)) return plain;
  FileLock other_processes(dir + "/.lock");
  if (file_exists(out) && file_exists(header)) return use;
  if (file_exists(failed_marker)) return plain;
  std::string root;
  for (size_t i = 0; i < mgsim_prelude_file_count; ++i)
    if (strcmp(mgsim_prelude_files[i].name, "mgsim_prelude.h") == 0)
      root.assign(reinterpret_cast<const char *>(mgsim_prelude_files[i].data), mgsim_prelude_files[i].size);
  if (!write_atomic(header, root)) return plain;
  std::string tmp = temp_name(dir, "prelude", cc.clang ? ".pch" : ".gch");
  std::vector<std::string> args = {cc.resolved};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<std::string> rest = {"-I" + prelude_dir, "-x", "c++-header", header, "-o", tmp};
  args.insert(args.end(), rest.begin(), rest.end());
  std::string log;
  int rc = run_compiler(args, temp_name(dir, "pch", ".log"), log, false, tier0 ? "prelude-pch-O0" : "prelude-pch",
                        cc.resolved);
  if (rc != 0 || rename(tmp.c_str(), out.c_str()) != 0) {
    unlink(tmp.c_str());
    write_atomic(failed_marker, log);
    return plain;
  }
  return use;
}

// Keeps compiler diagnostics readable: temp paths become names the user can place.
std::string clean_log(const std::string &log, const std::string &src_path) {
  std::string s = log;
  size_t p;
  while ((p = s.find(src_path)) != std::string::npos) s.replace(p, src_path.size(), "program_source.cpp");
  // The linker names the source by its file name only.
  const std::string base = src_path.substr(src_path.rfind('/') + 1);
  while ((p = s.find(base)) != std::string::npos) s.replace(p, base.size(), "program_source.cpp");
  // The prelude's copies in the cache (and its precompiled header, and their copies in a shared
  // MG_SIM_PCH_CACHE) are "prelude/<file>".
  for (const std::string &dir : {cache_directory() + "/prelude-", cache_directory() + "/pch-",
                                 pch_cache_directory() + "/prelude-", pch_cache_directory() + "/pch-"}) {
    while ((p = s.find(dir)) != std::string::npos) {
      const size_t slash = s.find('/', p + dir.size());
      if (slash == std::string::npos) break;
      s.replace(p, slash + 1 - p, "prelude/");
    }
  }
  if (s.size() > 8000) s = s.substr(0, 8000) + "\n... (truncated)";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Why work-item kernels run as fibers when their work-item form did not compile: the compiler's
// first error.
std::string workitem_failure(const std::string &log, const std::string &src_path) {
  std::string first = clean_log(log, src_path);
  size_t at = first.find("error:");
  first = at == std::string::npos ? first.substr(0, 200) : first.substr(at, first.find('\n', at) - at);
  return "the work-item form did not compile: " + first;
}

// A macro for the preprocessor: the library's (MTLCompileOptions.preprocessorMacros) or Metal's own.
struct PPMacro {
  std::string name;
  std::string value;
  bool has_value = false;  // false: defined with an empty value
};

bool valid_macro(const PPMacro &m) {
  const std::string &n = m.name;
  size_t i = 0;
  if (n.empty() || !(isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) return false;
  while (i < n.size() && (isalnum(static_cast<unsigned char>(n[i])) || n[i] == '_')) ++i;
  if (i < n.size() && (n[i] != '(' || n.back() != ')')) return false;
  return n.find_first_of("\r\n") == std::string::npos && m.value.find_first_of("\r\n") == std::string::npos;
}

// What Metal's compiler predefines (MSL §1.6.2), plus what clang defines for its math mode, since
// Metal's fast math is clang's -ffast-math (MSL §1.6.3): __FAST_MATH__ in fast mode only (relaxed
// keeps INF/NaN, so it is not -ffast-math), and __FINITE_MATH_ONLY__ as 1 in fast mode, else 0.
std::vector<PPMacro> predefined_macros(uint32_t version, int math_mode) {
  std::vector<PPMacro> m;
  auto def = [&](const char *name, const std::string &value) {
    PPMacro x;
    x.name = name;
    x.value = value;
    x.has_value = true;
    m.push_back(x);
  };
  def("__METAL_VERSION__", std::to_string(version));
  def("__METAL_MACOS__", "1");
  if (version >= 300) def("__METAL__", "1");  // "set with -std=metal3.0 or above"
  // Feature macros Metal's compiler defines for Apple silicon that the simulator implements
  // (MLX's headers select native bfloat with __HAVE_BFLOAT__).
  if (version >= 310) def("__HAVE_BFLOAT__", "1");
  if (version >= 230) def("__HAVE_SIMDGROUP_MATRIX__", "1");
  if (math_mode == MGSIM_MATH_FAST) def("__FAST_MATH__", "1");
  def("__FINITE_MATH_ONLY__", math_mode == MGSIM_MATH_FAST ? "1" : "0");
  return m;
}

// MSL is C++14-based before Metal 4 and C++17-based from Metal 4 (MSL §1.5): __cplusplus follows.
// -undef: none of the host compiler's own macros (__GNUC__, __x86_64__, __linux__ ...) are
// visible; -nostdinc: a C or C++ standard header is not found, as on Metal.
std::vector<std::string> preprocess_flags(uint32_t version) {
  return {"-E", "-x", "c++", version >= 400 ? "-std=c++17" : "-std=c++14", "-undef", "-nostdinc", "-nostdinc++", "-w"};
}

// g++ -E runs cc1plus -E: running that directly skips the driver, 1.4 of the 6.7 ms of CPU a small
// library's preprocessor run took (a CI run has ~1700 of them). Its arguments are the driver's own,
// read once per process and language version from `g++ -###`, with the input and output in place
// of placeholders. Empty (the driver runs) for clang, with MG_SIM_DIRECT_CPP=0, or when the plan is
// not the single cc1plus run expected.
const std::string kPPIn = "@mgsim-pp-in@", kPPOut = "@mgsim-pp-out@";

std::vector<std::string> direct_preprocessor(uint32_t version) {
  static std::mutex mu;
  static std::map<std::string, std::vector<std::string>> plans;
  const CompilerConfig &cc = compiler();
  const char *env = getenv("MG_SIM_DIRECT_CPP");
  if (cc.clang || cc.resolved.empty() || (env && strcmp(env, "0") == 0)) return {};
  const std::vector<std::string> flags = preprocess_flags(version);
  const std::string std_flag = flags[3];
  std::lock_guard<std::mutex> g(mu);
  auto it = plans.find(std_flag);
  if (it != plans.end()) return it->second;
  std::vector<std::string> &plan = plans[std_flag];
  const std::string tmpdir = cache_directory() + "/tmp";
  mkdir_p(tmpdir);
  std::vector<std::string> args = {cc.resolved, "-###"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {kPPIn, "-o", kPPOut});
  const std::string text = captured_output(args, 2, tmpdir);  // -### prints its plan on stderr
  // The commands are the lines that start with a space: exactly one, cc1plus -E.
  std::vector<std::string> cmd;
  int commands = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != ' ') continue;
    ++commands;
    cmd.clear();
    // Words, some in double quotes with backslash escapes.
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && line[i] == ' ') ++i;
      if (i >= line.size()) break;
      std::string w;
      if (line[i] == '"') {
        for (++i; i < line.size() && line[i] != '"'; ++i) {
          if (line[i] == '\\' && i + 1 < line.size()) ++i;
          w += line[i];
        }
        ++i;
      } else {
        while (i < line.size() && line[i] != ' ') w += line[i++];
      }
      cmd.push_back(w);
    }
  }
  if (commands != 1 || cmd.size() < 4 || cmd[0].size() < 8 || cmd[0].compare(cmd[0].size() - 8, 8, "/cc1plus") != 0 ||
      access(cmd[0].c_str(), X_OK) != 0 || cmd[1] != "-E")
    return plan;
  std::vector<std::string> out;
  int placeholders = 0;
  for (size_t i = 0; i < cmd.size(); ++i) {
    // Auxiliary output names derived from the file names: nothing -E writes.
    if ((cmd[i] == "-dumpdir" || cmd[i] == "-dumpbase" || cmd[i] == "-dumpbase-ext") && i + 1 < cmd.size()) {
      ++i;
      continue;
    }
    if (cmd[i] == kPPIn || cmd[i] == kPPOut) ++placeholders;
    out.push_back(cmd[i]);
  }
  if (placeholders == 2) plan = out;
  return plan;
}

// The Metal standard headers are the prelude, included by every translation unit: their include
// directives become empty lines (line numbers stay).
std::string drop_metal_includes(const std::string &src) {
  std::string out;
  out.reserve(src.size());
  size_t b = 0;
  while (b < src.size()) {
    size_t e = src.find('\n', b);
    if (e == std::string::npos) e = src.size();
    size_t k = src.find_first_not_of(" \t", b);
    bool metal_header = false;
    if (k < e && src[k] == '#') {
      k = src.find_first_not_of(" \t", k + 1);
      if (k < e && src.compare(k, 7, "include") == 0) {
        k = src.find_first_not_of(" \t", k + 7);
        if (k < e && (src[k] == '<' || src[k] == '"')) {
          const char close = src[k] == '<' ? '>' : '"';
          size_t end = src.find(close, k + 1);
          if (end < e) {
            const std::string name = src.substr(k + 1, end - k - 1);
            metal_header = name.rfind("metal_", 0) == 0 || name == "simd/simd.h";
          }
        }
      }
    }
    if (!metal_header) out.append(src, b, e - b);
    if (e < src.size()) out += '\n';
    b = e + 1;
  }
  return out;
}

// Runs the preprocessor over `text` (the macro definitions, then the source).
bool run_preprocessor(const std::string &text, uint32_t version, const std::string &tmpdir, const std::string &key,
                      std::string &out, std::string &error) {
  const CompilerConfig &cc = compiler();
  // A directory of its own: #include "x" searches the including file's directory, which must hold
  // nothing else (Metal has no files to include for a library built from source).
  const std::string dir = temp_name(tmpdir, key, ".pp");
  if (mkdir(dir.c_str(), 0700) != 0) {
    error = "cannot create " + dir + ": " + strerror(errno);
    return false;
  }
  const std::string in = dir + "/options_and_source", result = dir + "/preprocessed";
  bool ok = write_atomic(in, text);
  if (!ok) {
    error = "cannot write " + in;
  } else {
    std::vector<std::string> args = direct_preprocessor(version);
    for (std::string &a : args) {
      if (a == kPPIn) a = in;
      else if (a == kPPOut) a = result;
    }
    if (args.empty()) {
      args = {cc.resolved};
      const std::vector<std::string> f = preprocess_flags(version);
      args.insert(args.end(), f.begin(), f.end());
      args.insert(args.end(), {in, "-o", result});
    }
    std::string log;
    const int rc = run_compiler(args, dir + "/log", log, /*preprocessor=*/true, "preprocess", key);
    if (rc != 0) {
      ok = false;
      // Lines before `#line 1 "program_source"` are the macro definitions.
      error = log;
      size_t p;
      while ((p = error.find(in)) != std::string::npos) error.replace(p, in.size(), "<compile options>");
      while (!error.empty() && (error.back() == '\n' || error.back() == ' ')) error.pop_back();
      if (error.size() > 8000) error = error.substr(0, 8000) + "\n... (truncated)";
      if (error.empty()) error = "the preprocessor failed with status " + std::to_string(rc);
    } else if (!read_file(result, out)) {
      ok = false;
      error = "cannot read the preprocessed source " + result;
    }
  }
  unlink(in.c_str());
  unlink(result.c_str());
  unlink((dir + "/log").c_str());
  rmdir(dir.c_str());
  return ok;
}

bool ident_start(char c) { return isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A library compiled for its kernels (ts/backend/gpu/kernels.ts) is the same text every time,
// followed by instantiation lines that differ: the text up to the tail (the head) is preprocessed
// once per cache and the tail appended as it is, when the preprocessor provably leaves the tail
// unchanged. Returns the offset of the tail in `text` (0: no such split), and its first line's
// number in program_source. The tail: the lines after the last one with '#', '/' or '\\' (no
// directive, comment or line splice), without "??" (C++14 trigraphs), and with no identifier that
// is or may be a macro (one the text or the options define, or any "__" name, the compiler's own);
// the head's last code line ends with ';' or '}' (no macro call can continue into the tail).
size_t tail_of(const std::string &text, const std::vector<PPMacro> &macros, size_t source_at, int &tail_line) {
  // The user's own line markers would renumber the tail.
  for (size_t p = text.find('#', source_at); p != std::string::npos; p = text.find('#', p + 1)) {
    size_t k = text.find_first_not_of(" \t", p + 1);
    if (k != std::string::npos && (isdigit(static_cast<unsigned char>(text[k])) || text.compare(k, 4, "line") == 0)) return 0;
  }
  size_t cut = text.find_last_of("#/\\");
  if (cut == std::string::npos || cut < source_at) return 0;
  const size_t at = text.find('\n', cut);
  if (at == std::string::npos || at + 1 >= text.size()) return 0;
  if (text[at - 1] == '\\' || (text[at - 1] == '\r' && text[at - 2] == '\\')) return 0;  // a line splice
  const std::string tail = text.substr(at + 1);
  if (tail.find("??") != std::string::npos || tail.find_first_not_of(" \t\r\n") == std::string::npos) return 0;
  // The head's last line that is not blank or a // comment.
  for (size_t e = at;;) {
    const size_t b = e == 0 ? 0 : text.rfind('\n', e - 1);
    const size_t lb = b == std::string::npos ? 0 : b + 1;
    std::string line = text.substr(lb, e - lb);
    while (!line.empty() && isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    const size_t f = line.find_first_not_of(" \t");
    if (f != std::string::npos && line.compare(f, 2, "//") != 0) {
      if (line[f] != '#' && line.back() != ';' && line.back() != '}') return 0;
      break;
    }
    if (lb <= source_at) return 0;
    e = lb - 1;
  }
  std::set<std::string> defined;
  for (const PPMacro &m : macros) defined.insert(m.name.substr(0, m.name.find('(')));
  for (size_t p = text.find('#'); p != std::string::npos && p < at; p = text.find('#', p + 1)) {
    size_t k = text.find_first_not_of(" \t", p + 1);
    if (k == std::string::npos || text.compare(k, 6, "define") != 0) continue;
    k = text.find_first_not_of(" \t", k + 6);
    size_t e = k;
    while (e < text.size() && ident_char(text[e])) ++e;
    if (k != std::string::npos && e > k) defined.insert(text.substr(k, e - k));
  }
  for (size_t i = 0; i < tail.size();) {
    if (!ident_start(tail[i])) {
      // A number's letters (1e5f, 0x1p3) are not names; a string's words are not either.
      if (isdigit(static_cast<unsigned char>(tail[i]))) {
        while (i < tail.size() && (ident_char(tail[i]) || tail[i] == '.' || tail[i] == '\'')) ++i;
      } else if (tail[i] == '"') {
        const size_t q = tail.find_first_of("\"\n", i + 1);
        if (q == std::string::npos || tail[q] != '"') return 0;
        i = q + 1;
      } else {
        ++i;
      }
      continue;
    }
    size_t e = i;
    while (e < tail.size() && ident_char(tail[e])) ++e;
    const std::string id = tail.substr(i, e - i);
    if (id.compare(0, 2, "__") == 0 || id == "_Pragma" || defined.count(id)) return 0;
    // A string literal's encoding prefix (u8"...", R"(...)"): the string follows.
    i = e;
  }
  // The tail's line in program_source: the line after `#line 1 "program_source"` is line 1.
  tail_line = 1 + int(std::count(text.begin() + long(source_at), text.begin() + long(at + 1), '\n'));
  return at + 1;
}

std::mutex g_pp_mu;
std::map<std::string, std::string> g_pp_heads;  // preprocessed heads by key (this process)

// Runs the C preprocessor over the user's source with Metal's predefined macros and the library's
// macros (Metal preprocesses first too, MSL §1.5.3), so the translator sees what Metal's compiler
// parses: kernel signatures and instantiations built by macros, address spaces inside macro
// bodies. Line markers are kept: the translator turns them into #line directives, and its own and
// the compiler's diagnostics name the user's lines.
bool preprocess(const std::string &source, const std::vector<PPMacro> &macros, uint32_t version,
                const std::string &tmpdir, const std::string &key, std::string &out, std::string &error) {
  std::string text;
  for (const PPMacro &m : macros) text += "#define " + m.name + (m.has_value ? " " + m.value : std::string()) + "\n";
  text += "#line 1 \"program_source\"\n";
  const size_t source_at = text.size();
  text += drop_metal_includes(source);
  const char *env = getenv("MG_SIM_PP_CACHE");
  int tail_line = 0;
  const size_t at = env && strcmp(env, "0") == 0 ? 0 : tail_of(text, macros, source_at, tail_line);
  if (at == 0) return run_preprocessor(text, version, tmpdir, key, out, error);
  const std::string head = text.substr(0, at);
  Hasher h;
  h.add(head);
  h.add(join(preprocess_flags(version)));
  h.add(compiler().identity);
  const std::string hk = h.hex();
  const std::string path = cache_directory() + "/pp/" + hk + ".i";
  std::string pre;
  bool found = false;
  {
    std::lock_guard<std::mutex> g(g_pp_mu);
    auto it = g_pp_heads.find(hk);
    if (it != g_pp_heads.end()) {
      pre = it->second;
      found = true;
    }
  }
  if (!found && read_file(path, pre) && !pre.empty() && pre.back() == '\n') found = true;
  if (!found) {
    std::string e2;
    // The head alone fails (an unterminated #if, say): the whole text says why.
    if (!run_preprocessor(head, version, tmpdir, key, pre, e2) || pre.empty())
      return run_preprocessor(text, version, tmpdir, key, out, error);
    if (pre.back() != '\n') pre += '\n';
    mkdir_p(cache_directory() + "/pp");
    write_atomic(path, pre);
  }
  {
    std::lock_guard<std::mutex> g(g_pp_mu);
    g_pp_heads.emplace(hk, pre);
  }
  out = pre + "# " + std::to_string(tail_line) + " \"program_source\"\n" + text.substr(at);
  return true;
}

std::mutex g_modules_mu;  // guards g_key_locks (the loaded modules are module_cache.cpp's)
std::map<std::string, std::shared_ptr<std::mutex>> g_key_locks;

std::shared_ptr<Module> open_module(const std::string &path, const std::string &key, std::string &error) {
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    error = std::string("cannot load ") + path + ": " + (e ? e : "unknown error");
    return nullptr;
  }
  using ModuleFn = const abi::module_desc *(*)();
  ModuleFn fn = reinterpret_cast<ModuleFn>(dlsym(h, "mgsim_module"));
  const abi::module_desc *d = fn ? fn() : nullptr;
  if (!d || d->version != abi::kVersion) {
    dlclose(h);
    error = path + " is not a kernel object of this simulator version";
    return nullptr;
  }
  auto m = std::make_shared<Module>();
  m->handle = h;
  m->desc = d;
  m->key = key;
  m->path = path;
  struct stat st;
  if (stat(path.c_str(), &st) == 0) m->bytes = uint64_t(st.st_size);
  return m;
}

}  // namespace

const std::string &cache_directory() {
  static std::string dir = [] {
    std::string d;
    const char *env = getenv("MG_SIM_CACHE");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (env && *env) d = env;
    else if (xdg && *xdg) d = std::string(xdg) + "/metalgrad/sim";
    else if (home && *home) d = std::string(home) + "/.cache/metalgrad/sim";
    else d = "/tmp/metalgrad-sim-" + std::to_string(getuid());
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    mkdir_p(d);
    return d;
  }();
  return dir;
}

namespace {

// MG_SIM_OPT: "tiered" (default), "full" (no tier 0) or "0" (tier 0, never promoted).
enum TierPolicy { kTiered, kFull, kTier0Only };

TierPolicy tier_policy() {
  const char *v = getenv("MG_SIM_OPT");
  if (!v || !*v || strcmp(v, "tiered") == 0) return kTiered;
  if (strcmp(v, "0") == 0 || strcmp(v, "O0") == 0) return kTier0Only;
  return kFull;  // "full", "1", "2": compile at the optimisation level of each unit's kind at once
}

// Dispatch CPU time (ns) a tier-0 kernel runs before it is compiled optimised (MG_SIM_TIER_UP_MS,
// default 200 ms: about what an optimised compile of a work-item unit costs, so a kernel never
// spends much more running slowly than the compile would have cost). A dispatch over at least 1 MiB
// of buffers that ran 1 ms or more promotes at once: the kernel works on large data (tier 0 ran the
// bench's 1024x1024 reductions, softmax and scans 2.5-8x slower), which tests' small inputs do not.
uint64_t tier_up_ns() {
  const char *v = getenv("MG_SIM_TIER_UP_MS");
  char *end = nullptr;
  const double ms = v && *v ? strtod(v, &end) : 200.0;
  return uint64_t((end && *end) || !(ms >= 0) ? 200e6 : ms * 1e6);
}

void keep_request(Module &m, const std::string &source, const mgsim_compile_options *options, bool checked);

// A disk-cache hit or nothing (`t0`: a tier-0 object, which keeps what it needs to be promoted).
std::shared_ptr<Module> from_disk(const std::string &key, const std::string &source,
                                  const mgsim_compile_options *options, bool checked, bool t0, std::string &error,
                                  bool &refused) {
  refused = false;
  const std::string so_path = cache_directory() + "/" + key.substr(0, 2) + "/" + key + ".so";
  if (!file_exists(so_path)) return nullptr;
  if (!check_kernel_symbols(so_path, source, error)) {
    refused = true;
    return nullptr;
  }
  std::string e2;
  auto m = open_module(so_path, key, e2);
  if (!m) return nullptr;  // a damaged cache entry: rebuilt by the caller
  m->checked = checked;
  if (t0) keep_request(*m, source, options, checked);
  stats().disk_cache_hits.fetch_add(1);
  cache_module(m);
  return m;
}

// What a tier-0 module needs to compile itself again, optimised.
void keep_request(Module &m, const std::string &source, const mgsim_compile_options *options, bool checked) {
  m.tier = 0;
  m.source = source;
  if (options) m.options = *options;
  m.options.checked = checked ? 1 : 0;
  const int n = options ? options->macro_count : 0;
  m.macro_text.reserve(size_t(2 * n));
  for (int i = 0; i < n; ++i) {
    m.macro_text.push_back(options->macro_names[i]);
    const char *v = options->macro_values ? options->macro_values[i] : nullptr;
    m.macro_text.push_back(v ? v : "");
  }
  for (int i = 0; i < n; ++i) {
    m.macro_names.push_back(m.macro_text[size_t(2 * i)].c_str());
    const char *v = options->macro_values ? options->macro_values[i] : nullptr;
    m.macro_values.push_back(v ? m.macro_text[size_t(2 * i + 1)].c_str() : nullptr);
  }
  m.options.macro_count = n;
  m.options.macro_names = n ? m.macro_names.data() : nullptr;
  m.options.macro_values = n && options->macro_values ? m.macro_values.data() : nullptr;
  m.kernel_tiers.reset(new Module::KernelTier[m.desc->n_kernels]);
}

}  // namespace

std::shared_ptr<Module> load_module(const std::string &source, const mgsim_compile_options *options,
                                    std::string &error, bool promoting,
                                    const std::vector<std::string> *only_kernels, std::string *check_workitem) {
  const CompilerConfig &cc = compiler();
  int math_mode = options ? options->math_mode : MGSIM_MATH_SAFE;
  if (math_mode < MGSIM_MATH_SAFE || math_mode > MGSIM_MATH_FAST) {
    error = "math_mode must be MGSIM_MATH_SAFE, MGSIM_MATH_RELAXED or MGSIM_MATH_FAST (got " + std::to_string(math_mode) + ")";
    return nullptr;
  }
  const char *env_check = getenv("MG_SIM_CHECK");
  bool checked = (options && options->checked) || (env_check && strcmp(env_check, "1") == 0);
  TranslateOptions topt;
  topt.checked = checked;
  const char *env_wi = getenv("MG_SIM_WORKITEM");
  topt.workitem = !(env_wi && strcmp(env_wi, "0") == 0);
  // __METAL_VERSION__ from the requested language version (MTLLanguageVersion raw value
  // 0xMMmmm: 3.1 → 310); Metal's default is the newest, 3.2 here.
  const uint32_t lv = options && options->language_version ? options->language_version : 0x30002u;
  const uint32_t version = (lv >> 16) * 100 + (lv & 0xffffu) * 10;
  topt.language_version = version;
  if (only_kernels) topt.only_kernels = *only_kernels;
  std::vector<PPMacro> macros = predefined_macros(version, math_mode);
  if (options) {
    if (options->macro_count < 0 || (options->macro_count > 0 && !options->macro_names)) {
      error = "invalid macro list";
      return nullptr;
    }
    for (int32_t i = 0; i < options->macro_count; ++i) {
      const char *name = options->macro_names[i];
      if (!name || !*name) {
        error = "macro " + std::to_string(i) + " has no name";
        return nullptr;
      }
      PPMacro m;
      m.name = name;
      const char *v = options->macro_values ? options->macro_values[i] : nullptr;
      if (v) {
        m.value = v;
        m.has_value = true;
      }
      if (!valid_macro(m)) {
        error = "macro " + std::to_string(i) + " ('" + m.name +
                "') is not a macro name, or its value spans lines (a name is an identifier, optionally "
                "with a parameter list)";
        return nullptr;
      }
      macros.push_back(m);
    }
  }
  std::vector<std::string> flags = base_flags(math_mode);
  Hasher h;
  h.add(prelude_hash());
  h.add(translator_hash());
  h.add(cc.identity);
  h.add(join(flags));
  h.add(join(link_flags()));
  h.add(join(preprocess_flags(version)));
  h.add(checked ? "checked" : "unchecked");
  h.add(topt.workitem ? "workitem" : "fibers");
  h.add("-O1: work-item and unchecked plain units; work-item: -fcaller-saves -ftree-vectorize");  // the optimisation level (below)
  for (auto &m : macros) {
    h.add(m.name);
    h.add(m.has_value ? "=" + m.value : std::string("(none)"));
  }
  h.add(source);
  // The tier-0 object of the same unit (when its kind has one): compiled at -O0.
  Hasher h0 = h;
  h0.add("tier 0: -O0");
  // MG_SIM_TIER0_FIBERS=0 keeps the work-item form at tier 0 too (below).
  const char *env_t0f = getenv("MG_SIM_TIER0_FIBERS");
  const bool tier0_fibers = !(env_t0f && strcmp(env_t0f, "0") == 0);
  if (!tier0_fibers) h0.add("work-item form at tier 0");
  const std::string key0 = h0.hex();
  // A tier-up of some of the unit's kernels: an object of its own.
  if (only_kernels) h.add("only the kernels: " + join(*only_kernels));
  const std::string key = h.hex();
  const TierPolicy policy = promoting ? kFull : tier_policy();

  // Memory first, then disk; the optimised object before the tier-0 one (unless MG_SIM_OPT=0).
  auto find = [&](bool disk, std::shared_ptr<Module> &out) -> bool {  // false: a refused object (error set)
    for (int pass = 0; pass < 2; ++pass) {
      const bool t0 = policy == kTier0Only ? pass == 0 : pass == 1;
      if (t0 && policy == kFull) continue;
      if (!t0 && policy == kTier0Only) continue;
      const std::string &k = t0 ? key0 : key;
      if (!disk) {
        if ((out = cached_module(k))) {
          stats().memory_cache_hits.fetch_add(1);
          return true;
        }
      } else {
        bool refused = false;
        if ((out = from_disk(k, source, options, checked, t0, error, refused))) return true;
        if (refused) return false;
      }
    }
    return true;
  };
  std::shared_ptr<Module> found;
  if (!check_workitem) find(false, found);
  if (found) return found;
  std::shared_ptr<std::mutex> key_lock;
  {
    std::lock_guard<std::mutex> g(g_modules_mu);
    auto &l = g_key_locks[key];
    if (!l) l = std::make_shared<std::mutex>();
    key_lock = l;
  }
  // One thread compiles a given key; others wait for it and then hit the memory cache.
  std::lock_guard<std::mutex> kg(*key_lock);
  if (!check_workitem) {
    find(false, found);
    if (found) return found;
    if (!find(true, found)) return nullptr;
    if (found) return found;
  }
  // Another process compiling this unit now: wait for it, then load what it wrote (a work-item
  // check compiles nothing: no lock).
  mkdir_p(cache_directory() + "/locks");
  FileLock other_processes(check_workitem ? std::string() : cache_directory() + "/locks/" + key + ".lock");
  if (!check_workitem) {
    if (!find(true, found)) return nullptr;
    if (found) return found;
  }
  if (cc.resolved.empty()) {
    error = "C++ compiler '" + cc.cxx + "' not found (set MG_SIM_CXX to a C++17 compiler)";
    return nullptr;
  }
  const std::string &cache = cache_directory();
  std::string tmpdir = cache + "/tmp";
  if (!mkdir_p(tmpdir)) {
    error = "cannot create the cache directory " + cache + ": " + strerror(errno);
    return nullptr;
  }
  std::string expanded;
  if (!preprocess(source, macros, version, tmpdir, key, expanded, error)) return nullptr;
  if (!check_inline_assembly(expanded, error)) return nullptr;
  // A unit with work-item kernels compiles at tier 0 (below): there its kernels run as fibers,
  // whose -O0 compile costs about a third of the work-item form's (no per-lane variants to
  // instantiate); the optimised tier compiles the work-item form.
  topt.tier0_fibers = policy != kFull && tier0_fibers && !check_workitem;
  TranslateResult tr;
  if (!translate_msl(expanded, topt, tr)) {
    error = tr.error;
    return nullptr;
  }
  std::string what;  // the compile log names the unit by its kernels
  for (const KernelInfo &k : tr.kernels) what += (what.empty() ? "" : " ") + k.host_name;
  if (check_workitem) {
    // Does the work-item form of a tier-0 stand-in compile (mgsim_function_execution_model)? A
    // syntax check at -O0: the instantiations are where a translator mistake fails.
    std::string prelude_dir;
    if (!ensure_prelude_dir(prelude_dir, error)) return nullptr;
    std::vector<std::string> args = {cc.resolved};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("-O0");
    const std::vector<std::string> inc = prelude_include_flags(prelude_dir, math_mode, true);
    args.insert(args.end(), inc.begin(), inc.end());
    const std::string src_path = temp_name(tmpdir, key, ".cpp");
    if (!write_atomic(src_path, tr.cpp)) {
      error = "cannot write " + src_path;
      return nullptr;
    }
    args.insert(args.end(), {"-fsyntax-only", "-x", "c++", src_path});
    std::string log;
    const int rc = run_compiler(args, temp_name(tmpdir, key, ".log"), log, false, "check-workitem-O0", what);
    unlink(src_path.c_str());
    *check_workitem = rc != 0 && tr.workitem ? workitem_failure(log, src_path) : "";
    return nullptr;
  }
  // Work-item code is loop nests over lanes: -O1 compiles it in about half the time of -O2 at about
  // the same speed (the 8x8 multiply-accumulate has its own target attributes; the precompiled
  // prelude stays valid). A unit of unchecked plain kernels (no syncs: elementwise, gathers,
  // copies) too: ~14% less compile CPU, same elementwise throughput. Checked kernels stay at -O2
  // (checked elementwise ran ~1.6x slower at -O1), and so does fiber code.
  bool plain = !checked;
  for (const KernelInfo &k : tr.kernels) plain = plain && !k.needs_fibers;
  // Tier 0: every unit compiles at -O0 first: 40-65% less compile CPU for work-item units, ~20%
  // for unchecked plain ones (fused elementwise kernels, single-op families: 53.7 -> 42.1 CPU s
  // over test/core/mlx-parity, autograd/rules, nn/losses, nn/activations, optimizers), whose
  // small test dispatches never earn the optimised compile; large data promotes at once.
  const bool tier0 = policy != kFull;
  const std::string &unit_key = tier0 ? key0 : key;
  std::string objdir = cache + "/" + unit_key.substr(0, 2);
  std::string so_path = objdir + "/" + unit_key + ".so";
  if (!mkdir_p(objdir)) {
    error = "cannot create the cache directory " + objdir + ": " + strerror(errno);
    return nullptr;
  }
  std::string prelude_dir;
  if (!ensure_prelude_dir(prelude_dir, error)) return nullptr;
  std::vector<std::string> inc = prelude_include_flags(prelude_dir, math_mode, tier0);
  std::string src_path = temp_name(tmpdir, unit_key, ".cpp");
  if (!write_atomic(src_path, tr.cpp)) {
    error = "cannot write " + src_path;
    return nullptr;
  }
  std::string tmp_so = temp_name(objdir, unit_key, ".so");
  std::vector<std::string> args = {cc.resolved};
  args.insert(args.end(), flags.begin(), flags.end());
  const size_t opt_at = args.size();
  if (tier0) args.push_back("-O0");
  else if (tr.workitem || plain) args.push_back("-O1");
  // Two -O2 passes pay off in work-item code at no measured compile cost: -fcaller-saves keeps a
  // loop's float accumulator in a register across a cold call (softmax's sum went through the
  // stack because exp's rare libm fallback is a call: ~4%), and the vectoriser with -O2's
  // very-cheap cost model (same bits: no reassociation) took cumsum rows 3.1 -> 2.5 ms and
  // matmul 33 -> 30 ms single-threaded.
  if (!tier0 && tr.workitem) {
    args.push_back("-fcaller-saves");
    args.push_back("-ftree-vectorize");
    // (g++'s own: clang rejects it, and every optimised work-item unit failed with MG_SIM_CXX=clang++.)
    if (!cc.clang) args.push_back("-fvect-cost-model=very-cheap");
  }
  args.insert(args.end(), inc.begin(), inc.end());
  const DirectLink &dl = direct_link();
  const std::string tmp_o = dl.ok ? temp_name(tmpdir, unit_key, ".o") : std::string();
  std::vector<std::string> rest = {dl.ok ? "-c" : "-shared", "-x", "c++", src_path, "-o", dl.ok ? tmp_o : tmp_so};
  if (!dl.ok) rest.insert(rest.end(), link_flags().begin(), link_flags().end());
  args.insert(args.end(), rest.begin(), rest.end());
  // The log's kind says the tier: "-O0" for tier 0, "-tierup" for the optimised compile of a unit
  // that ran at tier 0 long enough.
  // (A work-item unit's tier-0 object, its kernels run as fibers or not, is "compile-workitem-O0".)
  const std::string tier_tag = tier0 ? "-O0" : promoting ? "-tierup" : "";
  std::string log;
  int rc = run_compiler(args, temp_name(tmpdir, unit_key, ".log"), log, false,
                        ((tr.workitem ? "compile-workitem" : "compile") + tier_tag).c_str(), what);
  const char *keep = getenv("MG_SIM_KEEP_SOURCES");
  bool keep_src = keep && *keep && strcmp(keep, "0") != 0;
  // (A tier-0 stand-in is fiber code already: a failure is the source's own.)
  if (rc != 0 && tr.workitem && !tr.tier0_fibers) {
    // The work-item forms did not compile (a construct the translator took for something else):
    // the kernels run as fibers instead, and say why. A genuine error fails again below.
    TranslateOptions retry = topt;
    retry.workitem = false;
    retry.fiber_note = workitem_failure(log, src_path);
    if (keep_src) rename(src_path.c_str(), (src_path + ".workitem.cpp").c_str());
    TranslateResult tr2;
    if (!translate_msl(expanded, retry, tr2)) {
      error = tr2.error;
      return nullptr;
    }
    if (!write_atomic(src_path, tr2.cpp)) {
      error = "cannot write " + src_path;
      return nullptr;
    }
    log.clear();
    if (!tier0) args.erase(args.begin() + long(opt_at));  // back to -O2 for the fibers' code
    rc = run_compiler(args, temp_name(tmpdir, unit_key, ".log"), log, false, ("compile-fibers-retry" + tier_tag).c_str(),
                      what);
  }
  if (rc == 0 && dl.ok) {
    std::vector<std::string> link = {dl.ld, "-shared", "--eh-frame-hdr", "--hash-style=gnu", "-o", tmp_so};
    link.insert(link.end(), dl.before.begin(), dl.before.end());
    link.push_back(tmp_o);
    link.insert(link.end(), dl.after.begin(), dl.after.end());
    rc = run_compiler(link, temp_name(tmpdir, unit_key, ".log"), log, false, "link", what, /*counted=*/false);
    size_t p;
    while ((p = log.find(tmp_o)) != std::string::npos) log.replace(p, tmp_o.size(), "program_source.o");
  }
  if (dl.ok) unlink(tmp_o.c_str());
  if (rc != 0) {
    error = clean_log(log, src_path);
    if (keep_src) error += "\n(translated source kept at " + src_path + ")";
    else unlink(src_path.c_str());
    unlink(tmp_so.c_str());
    if (error.empty()) error = "the compiler failed with status " + std::to_string(rc);
    return nullptr;
  }
  if (!keep_src) unlink(src_path.c_str());
  if (!check_kernel_symbols(tmp_so, source, error)) {
    unlink(tmp_so.c_str());
    return nullptr;
  }
  if (rename(tmp_so.c_str(), so_path.c_str()) != 0) {
    error = "cannot move the compiled object into " + so_path + ": " + strerror(errno);
    unlink(tmp_so.c_str());
    return nullptr;
  }
  auto m = open_module(so_path, unit_key, error);
  if (!m) return nullptr;
  m->checked = checked;
  if (tier0) {
    keep_request(*m, source, options, checked);
    stats().tier0_compiles.fetch_add(1);
  }
  cache_module(m);
  return m;
}

const std::string *standin_failure(Module &m, bool check) {
  std::lock_guard<std::mutex> lock(m.wi_check_mu);
  if (m.wi_checked) return &m.wi_failure;
  bool promoted = false;
  for (uint32_t i = 0; m.kernel_tiers && i < m.desc->n_kernels; ++i) {
    const abi::kernel_desc *k = m.kernel_tiers[i].kernel.load(std::memory_order_acquire);
    if (!k) continue;
    promoted = true;
    if (k->needs_fibers && !k->wi && k->fiber_reason && m.wi_failure.empty()) m.wi_failure = k->fiber_reason;
  }
  if (!promoted) {
    if (!check) return nullptr;
    std::string error;
    load_module(m.source, &m.options, error, false, nullptr, &m.wi_failure);  // (a check that cannot run: work-item)
  }
  m.wi_checked = true;
  return &m.wi_failure;
}

void tier0_ran(Module *m, uint32_t index, uint64_t ns, uint64_t bytes) {
  stats().tier0_dispatches.fetch_add(1);
  const uint64_t limit = tier_up_ns();
  const uint64_t total = m->kernel_tiers[index].ns.fetch_add(ns) + ns;
  const bool large = bytes >= (uint64_t(1) << 20) && ns >= 1000000;
  if ((total < limit && !large) || tier_policy() == kTier0Only) return;
  // One thread compiles; dispatches on other threads keep running the tier-0 object meanwhile.
  std::unique_lock<std::mutex> lock(m->promote_mu, std::try_to_lock);
  if (!lock.owns_lock() || m->promote_failed || m->kernel_tiers[index].kernel.load()) return;
  // This kernel, and those of the unit's others that ran half as long (they are on their way).
  const uint32_t n = m->desc->n_kernels;
  std::vector<uint32_t> chosen;
  std::vector<std::string> names;
  uint32_t unpromoted = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const Module::KernelTier &kt = m->kernel_tiers[i];
    if (kt.kernel.load()) continue;
    ++unpromoted;
    if (i == index || kt.ns.load() >= limit / 2) {
      chosen.push_back(i);
      names.push_back(m->desc->kernels[i].name);
    }
  }
  std::string error;
  std::shared_ptr<Module> full;
  try {
    // All of them (the usual case for a unit of one kernel): the unit's own optimised object.
    full = load_module(m->source, &m->options, error, /*promoting=*/true,
                       chosen.size() == unpromoted && unpromoted == n ? nullptr : &names);
  } catch (const std::exception &e) {
    error = e.what();
  }
  if (!full || full->desc->n_fconsts != m->desc->n_fconsts) {
    // Not expected (the same source compiled at tier 0): say so, keep running tier 0.
    m->promote_failed = true;
    log_compiler_run("tierup-failed", 0, 0, m->key + ": " + (error.empty() ? "kernel tables differ" : error));
    return;
  }
  std::vector<const abi::kernel_desc *> found;
  for (uint32_t i : chosen) {
    const abi::kernel_desc *k = nullptr;
    for (uint32_t j = 0; j < full->desc->n_kernels && !k; ++j)
      if (strcmp(full->desc->kernels[j].name, m->desc->kernels[i].name) == 0) k = &full->desc->kernels[j];
    if (!k) {
      m->promote_failed = true;
      log_compiler_run("tierup-failed", 0, 0, m->key + ": kernel tables differ");
      return;
    }
    found.push_back(k);
  }
  m->promoted_owners.push_back(full);
  for (size_t c = 0; c < chosen.size(); ++c) {
    Module::KernelTier &kt = m->kernel_tiers[chosen[c]];
    kt.module = full.get();
    kt.kernel.store(found[c], std::memory_order_release);
  }
  stats().tier_promotions.fetch_add(1);
}

char *dup_message(const std::string &s) {
  char *p = static_cast<char *>(malloc(s.size() + 1));
  if (p) memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

}  // namespace mgsim
