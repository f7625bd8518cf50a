// MSL → C++17 translator (private to MSLSim).
#ifndef MGSIM_TRANSLATE_H
#define MGSIM_TRANSLATE_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mgsim {

// The translator reads preprocessed source (compile.cpp runs the C preprocessor first): macros are
// expanded, and line markers (`# N "file"`) say which user line each line came from.
struct TranslateOptions {
  bool checked = false;
  uint32_t language_version = 320;  // __METAL_VERSION__
  // Write work-item forms (workitem.h) for kernels with barriers, collectives or simdgroup
  // matrices; when false they run as fibers, and `fiber_note` (if any) says why.
  bool workitem = true;
  std::string fiber_note;
  // Tier 0 (compile.cpp): decide work-item form as usual, but write a kernel that would run in it
  // as fibers (same results; no work-item variants to compile, about a third of the -O0 compile
  // CPU). Its table entry has no fiber_reason, which marks it a stand-in: the execution model and
  // the statistics count it as work-item, the form the optimised tier runs. Not for a unit with a
  // matrix-product kernel (translate.cpp, build_workitem): TranslateResult::tier0_fibers says.
  bool tier0_fibers = false;
  // Non-empty: only these kernels (host names) get entry points, so only their templates are
  // instantiated (a tier-up compiles the kernels that ran long, not all their siblings).
  std::vector<std::string> only_kernels;
};

enum class ParamKind { Buffer, Threadgroup, Attribute };

struct KernelParam {
  ParamKind kind = ParamKind::Attribute;
  int index = 0;          // buffer / threadgroup index
  std::string attribute;  // thread attribute name
};

struct KernelInfo {
  std::string host_name;   // the name the API looks kernels up by
  std::string call_expr;   // C++ expression naming the function (f or f<float>)
  std::vector<KernelParam> params;
  bool needs_fibers = false;  // cooperative: work-item form or fibers
  bool workitem = false;      // runs in work-item form
  std::string fiber_reason;   // needs_fibers && !workitem: why not in work-item form
  bool track_attrs = false;  // needs the current thread's attributes outside fibers
  int max_threads = 1024;
  uint32_t static_tg_bytes = 0;
};

struct FunctionConstant {
  std::string name;
  int index = 0;
  std::string type;
  uint32_t mtl_type = 0;
};

struct TranslateResult {
  std::string cpp;  // the full translation unit (without the prelude include)
  std::vector<KernelInfo> kernels;
  std::vector<FunctionConstant> constants;
  std::string error;  // set on failure: "program_source:LINE: message"
  // Work-item code was written (a compile failure may retry without it), or as tier-0 stand-ins
  // would have been.
  bool workitem = false;
  bool tier0_fibers = false;  // the work-item kernels were written as fibers (tier-0 stand-ins)
};

bool translate_msl(const std::string &source, const TranslateOptions &options, TranslateResult &out);

}  // namespace mgsim

#endif
