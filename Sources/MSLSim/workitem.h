// Work-item form (private to MSLSim): the translator's second output for functions that contain
// barriers, simd collectives or simdgroup-matrix operations ("syncs"), run by prelude/mgsim_wi.h.
//
// For a function f the generator writes, next to f:
//   - a probe: a declaration with f's template header and parameters whose return type names the
//     variant, ov<ID, targs<f's template arguments>>, so a call resolves overloads exactly as the
//     call of f would (decltype of the probe call);
//   - the variant mgwi_f(tag, ctx, result lanes, argument lanes...): f's body split at its syncs.
//     Code between syncs becomes a loop over the active lanes; variables that live across a sync
//     get per-lane storage; control flow around syncs runs under active masks; syncs run once over
//     all lanes (collectives, matrix operations) or the whole group (barriers); calls of other
//     functions with syncs call their variants.
// What the generator cannot split (a sync in a lambda, in a switch, after `?:` / `&&` / `||`, in
// a non-static member function, ...) is reported as a reason; such a kernel runs as fibers.
#ifndef MGSIM_WORKITEM_H
#define MGSIM_WORKITEM_H

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace mgsim {

// Prelude operations that split code in work-item form.
bool wi_is_collective(const std::string &name);  // simd_* (and votes): metal::mgwi_<name>
bool wi_is_matrix_op(const std::string &name);   // simdgroup_load / store / multiply[_accumulate]
bool wi_is_barrier(const std::string &name);     // threadgroup_barrier, simdgroup_barrier
inline bool wi_is_prelude_sync(const std::string &name) {
  return wi_is_collective(name) || wi_is_matrix_op(name) || wi_is_barrier(name);
}

struct WiTemplateParam {
  std::string name;
  bool type = true;        // typename/class T; else a non-type parameter of type `nttp_type`
  std::string nttp_type;
  std::string decl;        // the parameter's declaration without its default argument
};

struct WiParam {
  std::string type;  // declared type without the name (array parameters as pointers)
  std::string name;  // may be empty (an unnamed parameter)
  std::string def;   // default argument text, or empty
  bool ref = false;  // a reference parameter
};

struct WiFunction {
  unsigned id = 0;
  bool kernel = false;
  bool is_static = false;      // a static member function: probe and variant are static members
  bool templated = false;
  std::string template_header;  // "template <...>" as written (the probe's)
  std::vector<WiTemplateParam> tparams;
  bool always_inline = false;
  std::string name;
  std::string params_text;     // the parameter list as written, without parentheses (the probe's)
  std::vector<WiParam> params;
  std::string body;            // the body between its braces (rewritten text)
  int first_line = 1;          // preprocessed-source line on which `body` starts
  // A kernel's parameters every thread of a threadgroup shares (buffers, threadgroup-wide
  // attributes), by index; empty for other functions.
  std::vector<bool> uniform_params;
  // Declarations every lane computes alike may be computed once per group (not in checked mode,
  // whose race records need each lane's reads).
  bool hoist_uniform = false;
};

struct WiLine {
  std::string file;
  int line = 0;
};

struct WiOutput {
  std::string code;             // probe declaration and variant definition
  std::string reason;           // why no variant could be written (empty on success)
  std::set<std::string> calls;  // functions with syncs the variant calls (their variants must exist)
};

// `user_sync` says whether a name is a user function with syncs (whose variant the output calls).
// `line_of` maps a preprocessed-source line to the user's file and line (#line in the output).
bool wi_transform(const WiFunction &f, const std::function<bool(const std::string &)> &user_sync,
                  const std::function<WiLine(int)> &line_of, WiOutput &out);

}  // namespace mgsim

#endif
