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

// A loaded kernel object (.so), unloaded (dlclose) when the last reference goes: the libraries
// using it and the module cache (module_cache.cpp), which keeps a bounded number of recently used
// ones. Workers touch an object's thread-local storage only while running its code, which holds a
// reference (function → library → module); glibc frees other threads' blocks of an unloaded
// object lazily.
struct Module {
  void *handle = nullptr;
  const abi::module_desc *desc = nullptr;
  std::string key;
  std::string path;
  bool checked = false;  // compiled in checked mode
  uint64_t bytes = 0;    // the object's file size, what the cache's byte limit counts
  Module();
  ~Module();
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;
};

// module_cache.cpp: the loaded modules by key. find() gives a module still loaded (cached or in
// use elsewhere) and marks it recently used; insert() adds one and drops the least recently used
// beyond the limits (MG_SIM_LIBRARY_CACHE objects, default 128, and MG_SIM_LIBRARY_CACHE_MB,
// default 64; mgsim_library_cache_limits changes them).
std::shared_ptr<Module> cached_module(const std::string &key);
void cache_module(const std::shared_ptr<Module> &m);

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

// symbols.cpp: a kernel object may call only what the prelude and compiler need (no libc: Metal
// has none); inline assembly is refused in the preprocessed source. Return false with a
// Metal-style `program_source:L:C: error: …` message.
bool check_kernel_symbols(const std::string &so_path, const std::string &source, std::string &error);
bool check_inline_assembly(const std::string &source, std::string &error);

}  // namespace mgsim

struct mgsim_library {
  std::atomic<int> refs{1};
  std::shared_ptr<mgsim::Module> module;
  bool tolerate_oob_reads = false;  // mgsim_compile_options::tolerate_oob_reads
};

struct mgsim_function {
  std::atomic<int> refs{1};
  mgsim_library *library = nullptr;  // retained
  const mgsim::abi::kernel_desc *kernel = nullptr;
  std::vector<uint8_t> fc_values;   // 16 bytes per module constant
  std::vector<uint8_t> fc_defined;  // 1 byte per module constant
};

#endif
