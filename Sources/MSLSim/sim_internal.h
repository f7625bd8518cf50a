// Private declarations shared by the simulator's host-side sources.
#ifndef MGSIM_SIM_INTERNAL_H
#define MGSIM_SIM_INTERNAL_H

#define MGSIM_ABI_ONLY
#include "prelude/mgsim_exec.h"
#undef MGSIM_ABI_ONLY

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
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
  // Tiered compilation (MG_SIM_OPT): a unit that is much cheaper to compile unoptimised (work-item,
  // fiber and checked units) first runs compiled at -O0 (tier 0). Once a kernel's dispatches have
  // run for MG_SIM_TIER_UP_MS in all, it is compiled again at the optimisation level its unit would
  // otherwise have had — with the unit's other kernels that ran at least half that long, not every
  // sibling (checked sort.test.ts: the 13-dtype sort_block unit's tier-up took 6.2 CPU s, its 4
  // long-running dtypes 2.8 s) — and later dispatches of it run that object (this module owns it).
  struct KernelTier {
    std::atomic<uint64_t> ns{0};                          // dispatch CPU time at tier 0
    std::atomic<const abi::kernel_desc *> kernel{nullptr};  // set once: the optimised kernel
    Module *module = nullptr;                             // its object (written before `kernel`)
  };
  int tier = 1;
  std::string source;                 // tier 0: what to compile again, and how
  mgsim_compile_options options{};    // (macro pointers into `macro_text`)
  std::vector<std::string> macro_text;
  std::vector<const char *> macro_names, macro_values;
  std::unique_ptr<KernelTier[]> kernel_tiers;  // tier 0: one per kernel of desc
  std::vector<std::shared_ptr<Module>> promoted_owners;  // guarded by promote_mu
  std::mutex promote_mu;
  bool promote_failed = false;  // the optimised compile failed: stays at tier 0 (logged)
  // Tier-0 stand-ins (work-item kernels run as fibers): whether their work-item form compiles,
  // known once checked or promoted (standin_failure).
  std::mutex wi_check_mu;
  bool wi_checked = false;
  std::string wi_failure;
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
  std::atomic<uint64_t> pool_steers{0};
  std::atomic<uint64_t> pool_steer_backoffs{0};
  std::atomic<uint64_t> tier0_compiles{0};
  std::atomic<uint64_t> tier0_dispatches{0};
  std::atomic<uint64_t> tier_promotions{0};
  std::atomic<uint64_t> tier0_fiber_dispatches{0};
  std::atomic<uint64_t> check_memory_maps{0};
  std::atomic<uint64_t> check_memory_reuses{0};
  std::atomic<uint64_t> check_memory_wraps{0};
};
Stats &stats();
// Unmaps checked mode's idle record memory (dispatch.cpp CheckMemory).
void release_check_memory();

// Compiles (or loads from cache) the module for a source and options. Returns null and sets
// `error` (without the "[mgsim compile] " prefix) on failure. `promoting`: the optimised tier is
// wanted (a tier-0 module's dispatches ran long enough), never tier 0.
// `check_workitem`: compile nothing; say in it why the work-item form does not compile (empty when
// it does).
std::shared_ptr<Module> load_module(const std::string &source, const mgsim_compile_options *options,
                                    std::string &error, bool promoting = false,
                                    const std::vector<std::string> *only_kernels = nullptr,
                                    std::string *check_workitem = nullptr);
// Why the work-item kernels of tier-0 module `m`, run as fibers there (stand-ins), run as fibers
// once optimised too: their work-item form does not compile (a translator mistake). Empty when it
// compiles; null when not known yet and `check` is false. Known from a promoted kernel's table
// entry, or (`check`) a syntax check, once per module.
const std::string *standin_failure(Module &m, bool check);
// After a dispatch of kernel `index` of tier-0 module `m`, adds its CPU time (all the threads that
// ran it) and promotes the kernel
// (with the module's other long-running ones) when its total reaches the limit, or at once when the
// dispatch ran over large buffers (`bytes` bound). The kernel's later dispatches then run the
// optimised object (m->kernel_tiers[index]).
void tier0_ran(Module *m, uint32_t index, uint64_t ns, uint64_t bytes);
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
