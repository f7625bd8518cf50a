// Replays a plan recorded by scripts/sim-record.ts (one op's dispatches) through the MSLSim C API:
// the simulator alone, for timing and for callgrind's instruction counts (rounds after the first
// are instrumented, so compiles and first-touch faults stay out of the count).
//
//   test/native/mslsim/run.sh test_smoke        # builds $out/libmslsim.a (out: run.sh's build dir)
//   g++ -std=c++20 -O2 -ISources/MSLSim/include -Itest/native/mslsim test/native/mslsim/replay.cpp
//       $out/libmslsim.a -ldl -lpthread -o /tmp/replay
//   MG_SIM_THREADS=1 valgrind --tool=callgrind --instr-atstart=no /tmp/replay op.plan [checked] [rounds]
//
// Buffers start as pseudo-random floats in [-1, 1); buffers shared between dispatches stay shared.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "harness.h"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

static std::vector<uint8_t> from_hex(const std::string &hex) {
  std::vector<uint8_t> v;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) v.push_back(uint8_t(strtoul(hex.substr(i, 2).c_str(), nullptr, 16)));
  return v;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    printf("usage: replay plan [checked 0|1] [rounds]\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    printf("replay: cannot read %s\n", argv[1]);
    return 2;
  }
  const int checked = argc > 2 ? atoi(argv[2]) : 0;
  const int rounds = std::max(1, argc > 3 ? atoi(argv[3]) : 5);
  std::map<std::string, std::unique_ptr<Lib>> libs;
  std::map<std::string, mgsim_function *> fns;
  std::map<int, std::vector<float>> bufs;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> inline_bytes;
  std::vector<mgsim_dispatch> ds;
  mgsim_dispatch cur{};
  bool skip = false;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string k;
    ls >> k;
    if (k == "S") {
      std::string name, path;
      ls >> name >> path;
      std::ifstream f(path);
      std::stringstream ss;
      ss << f.rdbuf();
      const auto t0 = std::chrono::steady_clock::now();
      auto lib = std::make_unique<Lib>(ss.str(), checked);
      if (!lib->lib) {
        printf("replay: compiling %s failed: %s\n", name.c_str(), lib->error.c_str());
        return 1;
      }
      fns[name] = lib->fn(name.c_str());
      libs[name] = std::move(lib);
      printf("library %s: %.0f ms\n", name.c_str(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3);
    } else if (k == "D") {
      std::string name;
      int groups = 0;
      cur = mgsim_dispatch{};
      ls >> name >> groups >> cur.grid[0] >> cur.grid[1] >> cur.grid[2] >> cur.threads_per_threadgroup[0] >>
          cur.threads_per_threadgroup[1] >> cur.threads_per_threadgroup[2];
      cur.dispatch_threads = groups ? 0 : 1;
      skip = !fns.count(name);
      if (skip) printf("replay: no source for %s, its dispatch is skipped\n", name.c_str());
      else cur.function = fns[name];
    } else if (k == "B") {
      int idx = 0, id = 0;
      size_t size = 0, off = 0, len = 0;
      ls >> idx >> id >> size >> off >> len;
      auto &b = bufs[id];
      if (b.empty()) b = randf((size + 3) / 4, uint32_t(id + 1));
      cur.buffers[idx].data = reinterpret_cast<char *>(b.data()) + off;
      cur.buffers[idx].length = len;
    } else if (k == "Y") {
      int idx = 0;
      std::string hex;
      ls >> idx >> hex;
      inline_bytes.push_back(std::make_unique<std::vector<uint8_t>>(from_hex(hex)));
      cur.buffers[idx].data = inline_bytes.back()->data();
      cur.buffers[idx].length = inline_bytes.back()->size();
    } else if (k == "T") {
      int idx = 0;
      uint64_t len = 0;
      ls >> idx >> len;
      cur.threadgroup_memory_length[idx] = len;
    } else if (k == "W") {
      ls >> cur.must_write_mask;
    } else if (k == "E") {
      if (!skip) ds.push_back(cur);
    }
  }
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    if (r == 1) CALLGRIND_START_INSTRUMENTATION;
    const auto t0 = std::chrono::steady_clock::now();
    for (auto &d : ds) {
      char *err = nullptr;
      if (mgsim_dispatch_run(&d, &err)) {
        printf("replay: dispatch failed: %s\n", err ? err : "?");
        return 1;
      }
    }
    ms.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3);
  }
  CALLGRIND_STOP_INSTRUMENTATION;
  std::sort(ms.begin(), ms.end());
  printf("%s%s: %zu dispatch(es), median %.2f ms, min %.2f ms over %d round(s)\n", argv[1], checked ? " (checked)" : "",
         ds.size(), ms[ms.size() / 2], ms[0], rounds);
  return 0;
}
