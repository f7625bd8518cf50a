// MSLSim — the Metal Shading Language CPU simulator.
//
// The simulator translates MSL source to C++17 against a prelude that emulates MSL, builds it with
// the machine's C++ compiler into a shared object (cached on disk), and runs dispatches with Metal's
// semantics: threadgroups, 32-lane simdgroups, barriers, collectives and atomics. The Linux
// Metal-API shim (Sources/MetalShim) is its only production caller; the runtime talks to it
// directly only for simulator-specific features (dispatch annotations, statistics).
//
// Conventions: functions that can fail return NULL or a nonzero status and store a malloc'd,
// NUL-terminated message in *error (when error is non-NULL); free it with mgsim_string_free.
// Every message names the operation, e.g. "[mgsim compile] ..." or "[mgsim dispatch] ...".
// All functions are thread-safe.
//
// Environment: MG_SIM_CXX (C++ compiler, default g++), MG_SIM_CACHE (compiled-object cache
// directory), MG_SIM_THREADS (worker threads, default the hardware concurrency), MG_SIM_CHECK=1
// (checked mode for every library), MG_SIM_NO_PCH=1 (do not precompile the prelude),
// MG_SIM_KEEP_SOURCES=1 (keep the translated C++ in the cache's tmp/ directory), MG_SIM_STACK_KB
// (stack of each cooperative lane, default 256), MG_SIM_TIMEOUT_MS (a dispatch running longer
// fails and is stopped; default 60000, 0 disables), MG_SIM_WORKITEM=0 (run every kernel with
// barriers, collectives or simdgroup matrices as fibers instead of in work-item form),
// MG_SIM_OPT (tiered compilation: "tiered", the default, compiles a work-item, fiber or checked
// library at -O0 first, and a kernel of it again optimised once its dispatches have run
// MG_SIM_TIER_UP_MS milliseconds of CPU time in all, default 200, or one dispatch over at least 1 MiB of
// buffers ran 1 ms (with the library's kernels that ran half as long, not all of them);
// "full" compiles optimised at once; "0" never optimises those
// libraries; at tier 0 work-item kernels run as fibers unless MG_SIM_TIER0_FIBERS=0). Both tiers compute the same bits; the compile log (MG_SIM_COMPILE_LOG) names them.
#ifndef MSLSIM_H
#define MSLSIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mgsim_library mgsim_library;
typedef struct mgsim_function mgsim_function;

enum { MGSIM_MATH_SAFE = 0, MGSIM_MATH_RELAXED = 1, MGSIM_MATH_FAST = 2 };

typedef struct mgsim_compile_options {
  int32_t math_mode;                // MGSIM_MATH_*
  uint32_t language_version;        // MTLLanguageVersion raw value (0x30001 …); 0 means the default
  const char *const *macro_names;   // preprocessor macros, macro_count entries each
  const char *const *macro_values;  // value text ("1", "float", …); NULL means defined with no value
  int32_t macro_count;
  int32_t checked;                  // nonzero: checked mode. The environment variable MG_SIM_CHECK=1
                                    // forces it on for every library.
  int32_t tolerate_oob_reads;       // checked mode: an out-of-bounds read gives 0 instead of failing
                                    // the dispatch (as a GPU gives some value); writes still fail.
} mgsim_compile_options;

// Compiles MSL source into a library. Compiler diagnostics come back in *error with line numbers
// that refer to `source`. The compiled object is cached on disk (MG_SIM_CACHE overrides the
// directory), keyed by source, options and prelude version.
mgsim_library *mgsim_library_create(const char *source, const mgsim_compile_options *options,
                                    char **error);
void mgsim_library_retain(mgsim_library *library);
void mgsim_library_release(mgsim_library *library);
// Kernel entry points: plain kernels by their name, template instantiations by their host_name.
int32_t mgsim_library_function_count(const mgsim_library *library);
const char *mgsim_library_function_name(const mgsim_library *library, int32_t index);

// A function-constant value, given by index (name == NULL) or by name (index < 0).
typedef struct mgsim_constant_value {
  int32_t index;
  const char *name;
  uint32_t type;       // MTLDataType raw value (float 3, half 16, int 29, uint 33, bool 53, …)
  uint8_t bytes[16];   // the value, little-endian, in the type's size
} mgsim_constant_value;

// Looks up a kernel and specialises its function constants. Unknown names are an error.
mgsim_function *mgsim_function_create(mgsim_library *library, const char *name,
                                      const mgsim_constant_value *constants, int32_t count,
                                      char **error);
void mgsim_function_retain(mgsim_function *function);
void mgsim_function_release(mgsim_function *function);
const char *mgsim_function_name(const mgsim_function *function);
int32_t mgsim_function_max_total_threads_per_threadgroup(const mgsim_function *function);
int32_t mgsim_function_thread_execution_width(const mgsim_function *function);
int32_t mgsim_function_static_threadgroup_memory_length(const mgsim_function *function);

// How the simulator runs a kernel's threadgroups:
//   MGSIM_EXEC_PLAIN     no barriers, collectives or simdgroup matrices: a plain loop over threads;
//   MGSIM_EXEC_WORKITEM  work-item form: the kernel split at its barriers, collectives and matrix
//                        operations, code between them a loop over the lanes, those operations run
//                        once over all lanes (no context switch per lane); at tier 0 (MG_SIM_OPT)
//                        such a kernel runs as fibers until it is compiled optimised (same results,
//                        a third of the unoptimised compile);
//   MGSIM_EXEC_FIBERS    the fallback for what the work-item form cannot split: every thread a
//                        cooperative fiber. *reason (when non-NULL) says why, e.g. "a sync inside a
//                        lambda (program_source:12, in 'f')"; it lives as long as the function.
enum { MGSIM_EXEC_PLAIN = 0, MGSIM_EXEC_WORKITEM = 1, MGSIM_EXEC_FIBERS = 2 };
int32_t mgsim_function_execution_model(const mgsim_function *function, const char **reason);
// The same without compiling anything: a work-item kernel at tier 0 reports MGSIM_EXEC_WORKITEM
// unless its library was already compiled optimised (or checked) and found to need fibers. (The
// exact answer costs a syntax check of the work-item form, once per library: traces ask this.)
int32_t mgsim_function_execution_model_known(const mgsim_function *function, const char **reason);

#define MGSIM_MAX_BINDINGS 31

typedef struct mgsim_binding {
  void *data;        // NULL when nothing is bound at this index
  uint64_t length;   // bytes addressable from data: the checked-mode bound
} mgsim_binding;

typedef struct mgsim_dispatch {
  const mgsim_function *function;
  mgsim_binding buffers[MGSIM_MAX_BINDINGS];                 // setBuffer / setBytes, by index
  uint64_t threadgroup_memory_length[MGSIM_MAX_BINDINGS];    // setThreadgroupMemoryLength
  uint32_t grid[3];                     // threads (dispatch_threads) or threadgroups
  uint32_t threads_per_threadgroup[3];
  int32_t dispatch_threads;             // 1: dispatchThreads (edge threadgroups shrink);
                                        // 0: dispatchThreadgroups
  uint64_t must_write_mask;             // checked mode: bit n => every byte of buffer(n) must be
                                        // written by the dispatch, else it is reported
} mgsim_dispatch;

// Runs one dispatch to completion on the simulator's worker threads. Returns 0, or nonzero with a
// message: a barrier not reached by every live thread, a checked-mode out-of-bounds access or
// unwritten output (kernel name, buffer index, element index, thread position), an oversized
// threadgroup, or too much threadgroup memory. A fault in kernel code (invalid memory access, a
// lane's stack overflow, integer division by zero, illegal instruction) fails the dispatch with the
// kernel's name and the thread's position instead of killing the process: the simulator installs
// SIGSEGV/SIGBUS/SIGFPE/SIGILL handlers that recover only while one of its threads runs kernel code
// and pass every other fault to the handler installed before them (or the default action).
// A dispatch that runs longer than MG_SIM_TIMEOUT_MS fails naming its kernel: a watchdog thread
// stops the threads running it with a real-time signal no one else in the process handles (their
// kernel code is left by siglongjmp, as after a fault), and the simulator keeps working.
int32_t mgsim_dispatch_run(const mgsim_dispatch *dispatch, char **error);

// Simulator-specific per-dispatch hints. The runtime calls this right before encoding a dispatch;
// the shim's encoder consumes it (mgsim_take_annotation) at the next dispatch on the same thread.
typedef struct mgsim_annotation {
  uint64_t view_length[MGSIM_MAX_BINDINGS];   // 0: bound = buffer length - offset
  uint64_t must_write_mask;
} mgsim_annotation;
void mgsim_annotate_next_dispatch(const mgsim_annotation *annotation);
int32_t mgsim_take_annotation(mgsim_annotation *out);   // 1 if one was pending (and clears it)

typedef struct mgsim_stats {
  uint64_t compiler_invocations;   // C++ compiler processes started by this process
  uint64_t disk_cache_hits;        // libraries loaded from the on-disk cache without compiling
  uint64_t memory_cache_hits;      // libraries reused from this process's in-memory cache
  uint64_t dispatches;             // dispatches run
  uint64_t fiber_dispatches;       // dispatches that needed cooperative lanes (barriers, collectives or
                                   // simdgroup matrices): work-item form or fibers
  uint64_t preprocessor_invocations;  // C preprocessor runs (one per compiled source, before translation)
  uint64_t workitem_dispatches;    // of those, dispatches of work-item kernels (at tier 0 run as fibers)
  uint64_t fiber_fallback_dispatches;  // and those run as fibers, the fallback (why: see
                                       // mgsim_function_execution_model)
  uint64_t tier0_compiles;         // libraries compiled unoptimised first (tiered compilation, MG_SIM_OPT)
  uint64_t tier0_dispatches;       // dispatches run by such an unoptimised object
  uint64_t tier_promotions;        // tier-0 libraries switched to their optimised object
  uint64_t tier0_fiber_dispatches; // of workitem_dispatches, those a tier-0 object ran as fibers (its
                                   // stand-in: MG_SIM_TIER0_FIBERS); the optimised tier runs work-item
  uint64_t check_memory_maps;      // checked mode: record / shadow mappings created (mmap)
  uint64_t check_memory_reuses;    // checked mode: record / shadow mappings reused from an earlier dispatch
  uint64_t check_memory_wraps;     // checked mode: wrap-arounds of the threadgroup ids / shadow marks
  uint64_t pool_steers;            // times the worker pool's threads were moved off the dispatching
                                   // thread's CPU (it changed CPU; MG_SIM_STEER=0: never)
  uint64_t pool_steer_backoffs;    // times steering stopped for a second after stalled jobs (a
                                   // saturated machine: see dispatch.cpp's Pool)
} mgsim_stats;
void mgsim_get_stats(mgsim_stats *out);
// Unmaps checked mode's idle record memory (kept across dispatches, up to MG_SIM_CHECK_CACHE_MB).
void mgsim_release_check_memory(void);

// Loaded kernel objects. The simulator keeps the most recently used ones loaded beyond the
// libraries that use them, up to a count and a total size (MG_SIM_LIBRARY_CACHE, default 128;
// MG_SIM_LIBRARY_CACHE_MB, default 64), and unloads the rest (dlclose) as soon as no library uses
// them. Sets the limits (a value below 1 keeps the current one) and reports the previous limits
// and what is loaded now (cached or in use).
typedef struct mgsim_library_cache_state {
  int64_t previous_count, previous_bytes;  // limits before this call
  int64_t loaded_objects, loaded_bytes;    // kernel objects loaded now
  int64_t cached_objects;                  // of which held by the cache
  int64_t unloaded_objects;                // unloaded since the process started
} mgsim_library_cache_state;
void mgsim_library_cache_limits(int64_t count, int64_t bytes, mgsim_library_cache_state *out);

// The directory holding compiled objects (after MG_SIM_CACHE / defaults are applied).
const char *mgsim_cache_directory(void);

void mgsim_string_free(char *s);

#ifdef __cplusplus
}
#endif

#endif  // MSLSIM_H
