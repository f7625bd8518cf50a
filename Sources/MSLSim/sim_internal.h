// Private declarations shared by the simulator's host-side sources.
#ifndef MGSIM_SIM_INTERNAL_H
#define MGSIM_SIM_INTERNAL_H

#define MGSIM_ABI_ONLY
#include "prelude/mgsim_exec.h"
#undef MGSIM_ABI_ONLY

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "include/MSLSim.h"

namespace mgsim {

// A loaded kernel object (.so). Kept loaded for the life of the process: thread_local storage in it
// may still be referenced by worker threads, and reloading is what the memory cache avoids anyway.
struct Module {
  void *handle = nullptr;
  const abi::module_desc *desc = nullptr;
  std::string key;
  std::string path;
  bool checked = false;  // compiled in checked mode
};

struct Stats {
  std::atomic<uint64_t> compiler_invocations{0};
  std::atomic<uint64_t> preprocessor_invocations{0};
  std::atomic<uint64_t> disk_cache_hits{0};
  std::atomic<uint64_t> memory_cache_hits{0};
  std::atomic<uint64_t> dispatches{0};
  std::atomic<uint64_t> fiber_dispatches{0};
  std::atomic<uint64_t> workitem_dispatches{0};
  std::atomic<uint64_t> fiber_fallback_dispatches{0};
};
Stats &stats();

// Compiles (or loads from cache) the module for a source and options. Returns null and sets
// `error` (without the "[mgsim compile] " prefix) on failure.
std::shared_ptr<Module> load_module(const std::string &source, const mgsim_compile_options *options,
                                    std::string &error);
const std::string &cache_directory();

// Runs one validated dispatch; returns 0 or sets `error` (without prefix).
int run_dispatch(const mgsim_dispatch &d, std::string &error);

char *dup_message(const std::string &s);

}  // namespace mgsim

struct mgsim_library {
  std::atomic<int> refs{1};
  std::shared_ptr<mgsim::Module> module;
};

struct mgsim_function {
  std::atomic<int> refs{1};
  mgsim_library *library = nullptr;  // retained
  const mgsim::abi::kernel_desc *kernel = nullptr;
  std::vector<uint8_t> fc_values;   // 16 bytes per module constant
  std::vector<uint8_t> fc_defined;  // 1 byte per module constant
};

#endif
