// The C API of MSLSim.h: libraries, functions, dispatch, annotations, statistics.
#include <cstdlib>
#include <cstring>
#include <string>

#include "sim_internal.h"

using namespace mgsim;

namespace {

void set_error(char **error, const std::string &op, const std::string &msg) {
  if (error) *error = dup_message("[mgsim " + op + "] " + msg);
}

thread_local bool t_annotation_pending = false;
thread_local mgsim_annotation t_annotation;

}  // namespace

extern "C" {

mgsim_library *mgsim_library_create(const char *source, const mgsim_compile_options *options, char **error) {
  if (error) *error = nullptr;
  if (!source) {
    set_error(error, "compile", "source is NULL");
    return nullptr;
  }
  std::string msg;
  std::shared_ptr<Module> m;
  try {
    m = load_module(source, options, msg);
  } catch (const std::exception &e) {
    msg = std::string("internal error: ") + e.what();
  }
  if (!m) {
    set_error(error, "compile", msg);
    return nullptr;
  }
  auto *lib = new mgsim_library();
  lib->module = std::move(m);
  const char *env_check = getenv("MG_SIM_CHECK");
  bool forced = env_check && strcmp(env_check, "1") == 0;  // full checks for every library
  lib->tolerate_oob_reads = options && options->tolerate_oob_reads && !forced;
  return lib;
}

void mgsim_library_retain(mgsim_library *library) {
  if (library) library->refs.fetch_add(1);
}

void mgsim_library_release(mgsim_library *library) {
  if (library && library->refs.fetch_sub(1) == 1) delete library;
}

int32_t mgsim_library_function_count(const mgsim_library *library) {
  return library ? int32_t(library->module->desc->n_kernels) : 0;
}

const char *mgsim_library_function_name(const mgsim_library *library, int32_t index) {
  if (!library || index < 0 || uint32_t(index) >= library->module->desc->n_kernels) return nullptr;
  return library->module->desc->kernels[index].name;
}

mgsim_function *mgsim_function_create(mgsim_library *library, const char *name,
                                      const mgsim_constant_value *constants, int32_t count, char **error) {
  if (error) *error = nullptr;
  if (!library || !name) {
    set_error(error, "function", library ? "name is NULL" : "library is NULL");
    return nullptr;
  }
  const abi::module_desc *d = library->module->desc;
  const abi::kernel_desc *kd = nullptr;
  for (uint32_t i = 0; i < d->n_kernels; ++i)
    if (strcmp(d->kernels[i].name, name) == 0) kd = &d->kernels[i];
  if (!kd) {
    std::string known;
    for (uint32_t i = 0; i < d->n_kernels; ++i) known += (i ? ", " : "") + std::string(d->kernels[i].name);
    set_error(error, "function", "no kernel named '" + std::string(name) + "' in the library (kernels: " +
                                     (known.empty() ? "none" : known) + ")");
    return nullptr;
  }
  if (count < 0 || (count > 0 && !constants)) {
    set_error(error, "function", "invalid constant list");
    return nullptr;
  }
  auto *fn = new mgsim_function();
  fn->kernel = kd;
  fn->fc_values.assign(size_t(d->n_fconsts) * 16 + 16, 0);
  fn->fc_defined.assign(size_t(d->n_fconsts) + 1, 0);
  for (int32_t c = 0; c < count; ++c) {
    const mgsim_constant_value &v = constants[c];
    for (uint32_t i = 0; i < d->n_fconsts; ++i) {
      const abi::fconst_desc &fc = d->fconsts[i];
      bool match = v.name ? strcmp(v.name, fc.name) == 0 : (v.index >= 0 && v.index == fc.index);
      if (!match) continue;
      if (fc.mtl_type && v.type && fc.mtl_type != v.type) {
        set_error(error, "function", "function constant '" + std::string(fc.name) + "' has MTLDataType " +
                                         std::to_string(fc.mtl_type) + " but the value has type " +
                                         std::to_string(v.type));
        delete fn;
        return nullptr;
      }
      memcpy(&fn->fc_values[size_t(i) * 16], v.bytes, fc.size <= 16 ? fc.size : 16);
      fn->fc_defined[i] = 1;
    }
  }
  mgsim_library_retain(library);
  fn->library = library;
  return fn;
}

void mgsim_function_retain(mgsim_function *function) {
  if (function) function->refs.fetch_add(1);
}

void mgsim_function_release(mgsim_function *function) {
  if (function && function->refs.fetch_sub(1) == 1) {
    mgsim_library_release(function->library);
    delete function;
  }
}

const char *mgsim_function_name(const mgsim_function *function) {
  return function ? function->kernel->name : nullptr;
}

int32_t mgsim_function_max_total_threads_per_threadgroup(const mgsim_function *function) {
  return function ? int32_t(function->kernel->max_threads) : 0;
}

int32_t mgsim_function_thread_execution_width(const mgsim_function *function) {
  return function ? int32_t(abi::kSimdWidth) : 0;
}

int32_t mgsim_function_static_threadgroup_memory_length(const mgsim_function *function) {
  return function ? int32_t(function->kernel->static_tg_bytes) : 0;
}

namespace {
int32_t execution_model(const mgsim_function *function, const char **reason, bool check) {
  if (reason) *reason = nullptr;
  if (!function) return MGSIM_EXEC_PLAIN;
  const abi::kernel_desc *k = function->kernel;
  if (k->wi) return MGSIM_EXEC_WORKITEM;
  if (!k->needs_fibers) return MGSIM_EXEC_PLAIN;
  // A kernel without a fiber_reason that needs fibers is a work-item kernel's tier-0 stand-in
  // (TranslateOptions::tier0_fibers): the model is that of the optimised tier, work-item unless
  // that form does not compile.
  if (!k->fiber_reason) {
    const std::string *why = mgsim::standin_failure(*function->library->module, check);
    if (!why || why->empty()) return MGSIM_EXEC_WORKITEM;
    if (reason) *reason = why->c_str();
    return MGSIM_EXEC_FIBERS;
  }
  if (reason) *reason = k->fiber_reason;
  return MGSIM_EXEC_FIBERS;
}
}  // namespace

int32_t mgsim_function_execution_model(const mgsim_function *function, const char **reason) {
  return execution_model(function, reason, true);
}

int32_t mgsim_function_execution_model_known(const mgsim_function *function, const char **reason) {
  return execution_model(function, reason, false);
}

int32_t mgsim_dispatch_run(const mgsim_dispatch *dispatch, char **error) {
  if (error) *error = nullptr;
  if (!dispatch || !dispatch->function) {
    set_error(error, "dispatch", dispatch ? "function is NULL" : "dispatch is NULL");
    return 1;
  }
  std::string msg;
  int rc;
  try {
    rc = run_dispatch(*dispatch, msg);
  } catch (const std::exception &e) {
    rc = 1;
    msg = std::string("internal error: ") + e.what();
  }
  if (rc) set_error(error, "dispatch", msg);
  return rc;
}

void mgsim_annotate_next_dispatch(const mgsim_annotation *annotation) {
  if (!annotation) {
    t_annotation_pending = false;
    return;
  }
  t_annotation = *annotation;
  t_annotation_pending = true;
}

int32_t mgsim_take_annotation(mgsim_annotation *out) {
  if (!t_annotation_pending) return 0;
  if (out) *out = t_annotation;
  t_annotation_pending = false;
  return 1;
}

void mgsim_get_stats(mgsim_stats *out) {
  if (!out) return;
  Stats &s = stats();
  out->compiler_invocations = s.compiler_invocations.load();
  out->disk_cache_hits = s.disk_cache_hits.load();
  out->memory_cache_hits = s.memory_cache_hits.load();
  out->dispatches = s.dispatches.load();
  out->fiber_dispatches = s.fiber_dispatches.load();
  out->workitem_dispatches = s.workitem_dispatches.load();
  out->fiber_fallback_dispatches = s.fiber_fallback_dispatches.load();
  out->pool_steers = s.pool_steers.load();
  out->pool_steer_backoffs = s.pool_steer_backoffs.load();
  out->preprocessor_invocations = s.preprocessor_invocations.load();
  out->tier0_compiles = s.tier0_compiles.load();
  out->tier0_dispatches = s.tier0_dispatches.load();
  out->tier_promotions = s.tier_promotions.load();
  out->tier0_fiber_dispatches = s.tier0_fiber_dispatches.load();
  out->check_memory_maps = s.check_memory_maps.load();
  out->check_memory_reuses = s.check_memory_reuses.load();
  out->check_memory_wraps = s.check_memory_wraps.load();
}

void mgsim_release_check_memory(void) { mgsim::release_check_memory(); }

const char *mgsim_cache_directory(void) { return cache_directory().c_str(); }

void mgsim_string_free(char *s) { free(s); }

}  // extern "C"
