// MSL → C++17 translator.
//
// A lexer keeps every token's leading whitespace and comments, so the output has the same line
// structure as the input and one `#line 1 "program_source"` makes compiler diagnostics point at the
// user's lines. Rewrites replace token text in place; nothing is reformatted.
#include "translate.h"

#include "lex.h"
#include "workitem.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace mgsim {
namespace {

const std::unordered_set<std::string> &collective_names() {
  static const std::unordered_set<std::string> s = {
      "threadgroup_barrier",       "simdgroup_barrier",
      "simd_sum",                  "simd_product",
      "simd_max",                  "simd_min",
      "simd_and",                  "simd_or",
      "simd_xor",                  "simd_prefix_inclusive_sum",
      "simd_prefix_exclusive_sum", "simd_prefix_inclusive_product",
      "simd_prefix_exclusive_product", "simd_shuffle",
      "simd_shuffle_xor",          "simd_shuffle_up",
      "simd_shuffle_down",         "simd_shuffle_rotate_up",
      "simd_shuffle_rotate_down",  "simd_broadcast",
      "simd_broadcast_first",      "simd_all",
      "simd_any",                  "simd_ballot",
      "simd_is_first",             "simd_active_threads_mask"};
  return s;
}

// Names that make a kernel run its lanes as fibers. thread_elements(): a simdgroup matrix whose
// lanes wrote their fragments gathers them with a collective (mgsim::simdgroup_allgather).
bool is_sync_name(const std::string &s) {
  return collective_names().count(s) || s.rfind("quad_", 0) == 0 ||
         s.rfind("simd_shuffle", 0) == 0 || s == "thread_elements";
}

const std::unordered_set<std::string> &thread_attribute_names() {
  static const std::unordered_set<std::string> s = {
      "thread_position_in_grid",         "thread_position_in_threadgroup",
      "threadgroup_position_in_grid",    "threads_per_threadgroup",
      "dispatch_threads_per_threadgroup", "threads_per_grid",
      "threadgroups_per_grid",           "thread_index_in_threadgroup",
      "thread_index_in_simdgroup",       "simdgroup_index_in_threadgroup",
      "threads_per_simdgroup",           "simdgroups_per_threadgroup",
      "dispatch_simdgroups_per_threadgroup", "thread_execution_width",
      "thread_index_in_quadgroup",       "quadgroup_index_in_threadgroup",
      "quadgroups_per_threadgroup",      "dispatch_quadgroups_per_threadgroup",
      "grid_origin",                     "grid_size"};
  return s;
}

// Identifiers naming things the simulator does not model; using one is a compile-time error.
const char *unsupported_reason(const std::string &id) {
  if (id.rfind("texture", 0) == 0 && id.size() > 7 && (std::isdigit(static_cast<unsigned char>(id[7])) || id.compare(7, 6, "cube") == 0 || id.compare(7, 6, "_buffer") == 0))
    return "textures are not simulated";
  if (id.rfind("depth2d", 0) == 0 || id.rfind("depthcube", 0) == 0) return "depth textures are not simulated";
  if (id == "sampler") return "samplers are not simulated";
  if (id == "imageblock") return "imageblocks are not simulated";
  if (id == "acceleration_structure" || id == "intersection_function_table" ||
      id == "visible_function_table" || id == "intersector" || id == "ray_data")
    return "ray tracing and function tables are not simulated";
  if (id == "object_data" || id == "mesh_grid_properties") return "mesh shading is not simulated";
  return nullptr;
}

uint32_t mtl_type_of(const std::string &t) {
  static const std::map<std::string, uint32_t> m = {
      {"float", 3},   {"half", 16},   {"int", 29},    {"uint", 33},   {"unsigned", 33},
      {"short", 37},  {"ushort", 41}, {"char", 45},   {"uchar", 49},  {"bool", 53},
      {"long", 81},   {"ulong", 85},  {"bfloat", 121}, {"int32_t", 29}, {"uint32_t", 33},
      {"int16_t", 37}, {"uint16_t", 41}, {"int8_t", 45}, {"uint8_t", 49}, {"int64_t", 81},
      {"uint64_t", 85}, {"float2", 4}, {"float3", 5},  {"float4", 6},  {"int2", 30},
      {"int3", 31},   {"int4", 32},   {"uint2", 34},  {"uint3", 35},  {"uint4", 36}};
  auto it = m.find(t);
  return it == m.end() ? 0 : it->second;
}

// Byte sizes of MSL scalar and vector types (3-vectors are padded to 4 elements).
int64_t type_size(const std::string &t) {
  static const std::map<std::string, int64_t> scalars = {
      {"float", 4}, {"half", 2},   {"bfloat", 2}, {"int", 4},   {"uint", 4},   {"short", 2},
      {"ushort", 2}, {"char", 1},  {"uchar", 1},  {"bool", 1},  {"long", 8},   {"ulong", 8},
      {"int32_t", 4}, {"uint32_t", 4}, {"int16_t", 2}, {"uint16_t", 2}, {"int8_t", 1},
      {"uint8_t", 1}, {"int64_t", 8}, {"uint64_t", 8}, {"float16_t", 2}, {"bfloat16_t", 2},
      {"atomic_int", 4}, {"atomic_uint", 4}, {"size_t", 8}, {"double", 8}};
  auto it = scalars.find(t);
  if (it != scalars.end()) return it->second;
  if (!t.empty() && std::isdigit(static_cast<unsigned char>(t.back()))) {
    size_t k = t.size();
    while (k > 0 && std::isdigit(static_cast<unsigned char>(t[k - 1]))) --k;
    std::string base = t.substr(0, k);
    int dims = std::atoi(t.c_str() + k);
    auto b = scalars.find(base);
    if (b != scalars.end() && dims >= 2 && dims <= 4) return b->second * (dims == 3 ? 4 : dims);
  }
  return -1;
}

struct Attr {
  std::string name;
  std::vector<std::string> args;  // raw text of each argument
  int line = 0;
};

struct FunctionBody {
  std::string name;
  size_t open = 0, close = 0;  // brace token indices
  size_t decl = 0;             // first token of the declaration (template header, specifiers)
  bool in_class = false;       // defined inside a class body (a member function)
};

struct KernelDecl {
  std::string name;            // plain function name
  std::string qualified;       // with enclosing namespaces
  std::string host_name;       // from [[host_name]] on a non-template kernel
  bool is_template = false;
  std::vector<std::string> template_params;  // names, in order
  std::vector<KernelParam> params;
  int max_threads = 1024;
  size_t body_open = 0, body_close = 0;
  int line = 0;
};

struct Instantiation {
  std::string host_name;
  std::string func_name;
  std::string call_expr;
  std::vector<std::string> template_args;
  int line = 0;
};

class Translator {
 public:
  Translator(const std::string &src, const TranslateOptions &opt) : opt_(opt) {
    t_ = lex(src);
    repl_.assign(t_.size(), std::string());
    replaced_.assign(t_.size(), false);
    match_.assign(t_.size(), SIZE_MAX);
    attr_end_.assign(t_.size(), SIZE_MAX);
    in_function_.assign(t_.size(), false);
    prefix_.assign(t_.size(), std::string());
    suffix_.assign(t_.size(), std::string());
    for (const Token &tk : t_) {
      int n = 0;
      std::string file;
      if (tk.kind == Tok::PP && parse_marker(tk.text, n, file)) markers_.push_back(Marker{tk.line, n, file});
    }
  }

  bool run(TranslateResult &out) {
    if (!match_brackets()) return fail(out);
    find_attributes();
    if (!analyze_structure()) return fail(out);
    if (!rewrite_tokens()) return fail(out);
    if (opt_.checked) wrap_element_accesses();
    build_workitem();
    if (!build_kernels(out)) return fail(out);
    emit(out);
    return true;
  }

 private:
  const TranslateOptions &opt_;
  std::vector<Token> t_;
  std::vector<std::string> repl_;
  std::vector<bool> replaced_;
  std::vector<size_t> match_;     // matching bracket for ( [ { and back
  std::vector<size_t> attr_end_;  // for the first '[' of an [[attribute]]: index of the last ']'
  std::vector<bool> in_function_;
  std::vector<FunctionBody> functions_;
  std::vector<KernelDecl> kernels_;
  std::vector<Instantiation> insts_;
  std::vector<FunctionConstant> fconsts_;
  std::vector<std::pair<std::string, std::string>> derived_consts_;  // name, initializer
  std::map<std::string, std::vector<Token>> global_consts_;  // constexpr/constant ints at program scope
  // Line markers of the preprocessed source: (line of the marker, user line of the next line, file).
  struct Marker {
    int line;
    int user_line;
    std::string file;
  };
  std::vector<Marker> markers_;
  // Checked mode: names declared as checked pointers (device/constant T*) with their scopes, and
  // struct members of that type; text inserted around tokens (element-access wrappers).
  struct CheckedName {
    std::string name;
    size_t decl;
    size_t scope_end;
    bool array;  // an array of pointers: its elements are two subscripts away
    bool scalar = false;  // a threadgroup scalar: its name designates the element (*name)
  };
  std::vector<CheckedName> checked_names_;
  std::unordered_set<std::string> checked_members_;
  std::vector<std::string> prefix_, suffix_;
  std::string err_;
  int err_line_ = 0;
  uint32_t next_site_ = 1;

  bool fail(TranslateResult &out) {
    std::ostringstream m;
    std::string file = "program_source";
    int line = err_line_;
    for (const Marker &mk : markers_) {  // the last marker before the line places it
      if (mk.line >= err_line_) break;
      file = mk.file;
      line = mk.user_line + (err_line_ - mk.line - 1);
    }
    m << file << ":" << line << ": " << err_;
    out.error = m.str();
    return false;
  }

  // `# N "file" flags` (what the preprocessor writes) → N and file; false for other directives.
  static bool parse_marker(const std::string &pp, int &n, std::string &file) {
    size_t k = pp.find_first_not_of(" \t", 1);
    if (k == std::string::npos || !std::isdigit(static_cast<unsigned char>(pp[k]))) return false;
    n = std::atoi(pp.c_str() + k);
    size_t q = pp.find('"', k);
    size_t q2 = q == std::string::npos ? q : pp.find('"', q + 1);
    if (q2 == std::string::npos) return false;
    file = pp.substr(q + 1, q2 - q - 1);
    return true;
  }
  bool error(int line, const std::string &msg) {
    if (err_.empty()) {
      err_ = msg;
      err_line_ = line;
    }
    return false;
  }

  const std::string &text(size_t i) const { return t_[i].text; }
  bool is(size_t i, const char *s) const { return i < t_.size() && t_[i].kind != Tok::End && t_[i].kind != Tok::PP && t_[i].text == s; }
  bool ident(size_t i) const { return i < t_.size() && t_[i].kind == Tok::Ident; }
  void set(size_t i, const std::string &s) {
    repl_[i] = s;
    replaced_[i] = true;
  }
  void erase_range(size_t b, size_t e) {  // inclusive
    for (size_t k = b; k <= e && k < t_.size(); ++k) set(k, "");
  }

  bool match_brackets() {
    std::vector<size_t> st;
    for (size_t i = 0; i < t_.size(); ++i) {
      if (t_[i].kind != Tok::Punct) continue;
      const std::string &s = t_[i].text;
      if (s == "(" || s == "[" || s == "{") {
        st.push_back(i);
      } else if (s == ")" || s == "]" || s == "}") {
        char want = s == ")" ? '(' : s == "]" ? '[' : '{';
        if (st.empty() || t_[st.back()].text[0] != want)
          return error(t_[i].line, "unbalanced '" + s + "'");
        match_[st.back()] = i;
        match_[i] = st.back();
        st.pop_back();
      }
    }
    if (!st.empty()) return error(t_[st.back()].line, "unbalanced '" + t_[st.back()].text + "'");
    return true;
  }

  void find_attributes() {
    for (size_t i = 0; i + 1 < t_.size(); ++i) {
      if (is(i, "[") && is(i + 1, "[") && match_[i + 1] != SIZE_MAX && match_[i] == match_[i + 1] + 1)
        attr_end_[i] = match_[i];
    }
  }

  // Parses the attributes of the [[...]] starting at token i.
  std::vector<Attr> parse_attr(size_t i) const {
    std::vector<Attr> out;
    size_t e = attr_end_[i] - 1;  // the inner ']'
    size_t k = i + 2;
    while (k < e) {
      Attr a;
      a.line = t_[k].line;
      while (k < e && !is(k, "(") && !is(k, ",")) a.name += t_[k++].text;
      if (is(k, "(")) {
        size_t close = match_[k];
        std::string cur;
        int depth = 0;
        for (size_t j = k + 1; j < close; ++j) {
          if (is(j, "(") || is(j, "[") || is(j, "{")) ++depth;
          if (is(j, ")") || is(j, "]") || is(j, "}")) --depth;
          if (depth == 0 && is(j, ",")) {
            a.args.push_back(cur);
            cur.clear();
            continue;
          }
          if (!cur.empty()) cur += ' ';
          cur += t_[j].text;
        }
        a.args.push_back(cur);
        k = close + 1;
      }
      out.push_back(a);
      if (is(k, ",")) ++k;
    }
    return out;
  }

  // Skips a balanced <...> starting at i (which is '<'); returns the index of the closing '>'.
  size_t skip_angles(size_t i) const {
    int depth = 0;
    for (size_t k = i; k < t_.size(); ++k) {
      if (t_[k].kind == Tok::End) return k;
      if (is(k, "(") || is(k, "[") || is(k, "{")) {
        k = match_[k];
        continue;
      }
      if (is(k, "<")) ++depth;
      else if (is(k, ">")) --depth;
      else if (is(k, ";") || is(k, "{") || is(k, "}")) return k;
      if (depth <= 0) return k;
    }
    return t_.size() - 1;
  }

  static bool is_keyword_before_paren(const std::string &s) {
    static const std::unordered_set<std::string> k = {
        "if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof",
        "alignas", "static_assert", "noexcept", "throw", "new", "delete", "defined", "__attribute__"};
    return k.count(s) > 0;
  }

  // If the '{' at index i opens a function body, returns the function's name (else empty).
  std::string function_name_for_brace(size_t i) const {
    size_t k = i;
    int guard = 0;
    while (k > 0 && guard++ < 64) {
      --k;
      if (is(k, "]") && match_[k] != SIZE_MAX && k > 0 && is(k - 1, "]") && match_[k] + 1 == match_[k - 1]) {
        k = match_[k];  // skip an attribute backwards (to its first '[')
        continue;
      }
      if (t_[k].kind == Tok::Ident) continue;  // const, noexcept, override, trailing return type
      if (is(k, "::") || is(k, "<") || is(k, ">") || is(k, "->") || is(k, "*") || is(k, "&") || is(k, ",")) continue;
      if (is(k, ")")) {
        size_t open = match_[k];
        if (open == SIZE_MAX || open == 0) return "";
        size_t nk = open - 1;
        if (is(nk, ">")) {  // f<T>(...) specialization: find the name before '<'
          int depth = 0;
          size_t j = nk;
          while (j > 0) {
            if (is(j, ">")) ++depth;
            if (is(j, "<")) --depth;
            if (depth == 0) break;
            --j;
          }
          if (j == 0) return "";
          nk = j - 1;
        }
        // operator() and operator[]: the declarator is `operator ( )` / `operator [ ]`
        if ((is(nk, ")") || is(nk, "]")) && match_[nk] != SIZE_MAX && match_[nk] > 0 && is(match_[nk] - 1, "operator"))
          return "operator";
        if (ident(nk) && !is_keyword_before_paren(t_[nk].text)) {
          // A constructor's member-initializer `: a(1) {` also lands here; harmless.
          if (nk > 0 && is(nk - 1, "operator")) return "operator";
          return t_[nk].text;
        }
        if (nk > 0 && is(nk - 1, "operator")) return "operator";
        return "";
      }
      return "";
    }
    return "";
  }

  // The '(' of the parameter list of the function whose body opens at `brace` (SIZE_MAX if none):
  // walks back over attributes, qualifiers and a trailing return type to the list's ')'.
  size_t declarator_paren(size_t brace) const {
    size_t k = brace;
    while (k > 0) {
      --k;
      if (is(k, "]") && match_[k] != SIZE_MAX && k > 0 && is(k - 1, "]") && match_[k] + 1 == match_[k - 1]) {
        k = match_[k];  // an attribute, to its first '['
        continue;
      }
      if (t_[k].kind == Tok::Ident || is(k, "::") || is(k, "<") || is(k, ">") || is(k, "->") || is(k, "*") ||
          is(k, "&") || is(k, ","))
        continue;
      if (is(k, ")") && match_[k] != SIZE_MAX && match_[k] > 0) return match_[k];
      return SIZE_MAX;
    }
    return SIZE_MAX;
  }

  // Parses a parameter list between '(' at open and its ')' into per-parameter token ranges.
  std::vector<std::pair<size_t, size_t>> split_params(size_t open) const {
    std::vector<std::pair<size_t, size_t>> out;
    size_t close = match_[open];
    size_t start = open + 1;
    int angle = 0;
    for (size_t k = open + 1; k < close; ++k) {
      if (attr_end_[k] != SIZE_MAX) {
        k = attr_end_[k];
        continue;
      }
      if (is(k, "(") || is(k, "[") || is(k, "{")) {
        k = match_[k];
        continue;
      }
      if (is(k, "<")) ++angle;
      if (is(k, ">")) --angle;
      if (is(k, ",") && angle <= 0) {
        out.emplace_back(start, k);
        start = k + 1;
      }
    }
    if (start < close) out.emplace_back(start, close);
    return out;
  }

  bool parse_int(const std::string &s, int &v) const {
    char *end = nullptr;
    long x = std::strtol(s.c_str(), &end, 0);
    while (end && (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L')) ++end;
    if (!end || *end != '\0' || s.empty()) return false;
    v = int(x);
    return true;
  }

  // Walks the translation unit once: scopes, functions, kernels, instantiations, constants.
  bool analyze_structure() {
    struct Scope {
      bool function;
      std::string ns;  // namespace name for namespace scopes
      bool cls = false;  // a class body
    };
    std::vector<Scope> scopes;
    std::vector<size_t> function_stack;  // indices into functions_
    size_t stmt_start = 0;
    auto in_fn = [&]() { return !scopes.empty() && scopes.back().function; };
    auto ns_prefix = [&]() {
      std::string p;
      for (auto &s : scopes)
        if (!s.ns.empty()) p += s.ns + "::";
      return p;
    };
    bool any_function = false;
    for (size_t i = 0; i < t_.size(); ++i) {
      in_function_[i] = any_function;
      const Token &tk = t_[i];
      if (tk.kind == Tok::End) break;
      if (tk.kind == Tok::PP) {
        if (!handle_pp(i)) return false;
        if (!in_fn()) stmt_start = i + 1;
        continue;
      }
      if (tk.kind == Tok::Ident) {
        if (const char *why = unsupported_reason(tk.text))
          return error(tk.line, "unsupported construct '" + tk.text + "' (" + why + ")");
        if (!in_fn() && (tk.text == "vertex" || tk.text == "fragment") && i == stmt_start)
          return error(tk.line, "unsupported construct '" + tk.text + "' function (only compute kernels are simulated)");
      }
      if (attr_end_[i] != SIZE_MAX) {
        for (const Attr &a : parse_attr(i)) {
          if (a.name == "stage_in" || a.name == "texture" || a.name == "sampler" || a.name == "color" ||
              a.name == "vertex_id" || a.name == "instance_id" || a.name == "position")
            return error(a.line, "unsupported construct '[[" + a.name + "]]' (only compute kernels over buffers are simulated)");
          if (a.name == "function_constant" && !in_fn() && !inside_parens(i)) {
            if (!handle_function_constant(stmt_start, i, a)) return false;
          }
        }
        i = attr_end_[i];
        in_function_[i] = any_function;
        continue;
      }
      if (is(i, "{")) {
        bool fn = false;
        std::string name;
        if (!in_fn()) {
          name = function_name_for_brace(i);
          fn = !name.empty();
        }
        if (fn) {
          const bool in_class = !scopes.empty() && scopes.back().cls;
          functions_.push_back(FunctionBody{name, i, match_[i], stmt_start, in_class});
          function_stack.push_back(functions_.size() - 1);
          if (!note_kernel_definition(stmt_start, i, ns_prefix())) return false;
          scopes.push_back(Scope{true, ""});
          any_function = true;
        } else if (in_fn()) {
          scopes.push_back(Scope{true, ""});
        } else {
          std::string ns;
          if (i >= 2 && ident(i - 1) && is(i - 2, "namespace")) ns = text(i - 1);
          bool cls = false;
          for (size_t k = stmt_start; k < i; ++k)
            if (is(k, "struct") || is(k, "class") || is(k, "union")) cls = true;
          if (i >= 1 && is(i - 1, "namespace")) cls = false;
          scopes.push_back(Scope{false, ns, cls});
          stmt_start = i + 1;
        }
        continue;
      }
      if (is(i, "}")) {
        if (scopes.empty()) return error(tk.line, "unbalanced '}'");
        bool was_fn = scopes.back().function;
        scopes.pop_back();
        if (was_fn && !in_fn()) {
          function_stack.pop_back();
          any_function = false;
          stmt_start = i + 1;
        } else if (!in_fn()) {
          stmt_start = i + 1;
        }
        continue;
      }
      if (is(i, ";") && !in_fn()) {
        if (!note_statement(stmt_start, i, ns_prefix())) return false;
        stmt_start = i + 1;
        continue;
      }
    }
    return err_.empty();
  }

  bool inside_parens(size_t i) const {
    // True when token i lies inside (...) — e.g. a kernel parameter's attribute.
    int depth = 0;
    for (size_t k = i; k > 0; --k) {
      size_t j = k - 1;
      if (is(j, ")")) {
        j = match_[j];
        k = j + 1;
        continue;
      }
      if (is(j, "(")) return true;
      if (is(j, ";") || is(j, "{") || is(j, "}")) return false;
      (void)depth;
    }
    return false;
  }

  // Directives left after preprocessing: line markers become #line (diagnostics name the user's
  // lines), Metal's pragmas are dropped, other pragmas stay.
  bool handle_pp(size_t i) {
    const std::string &s = t_[i].text;
    auto lines_of = [&](const std::string &x) { return std::string(size_t(std::count(x.begin(), x.end(), '\n')), '\n'); };
    int n = 0;
    std::string file;
    if (parse_marker(s, n, file)) {
      // Line 0 (the preprocessor's <built-in> entries) is not a valid #line.
      set(i, n > 0 ? "#line " + std::to_string(n) + " \"" + file + "\"" : std::string());
      return true;
    }
    size_t p = s.find_first_not_of(" \t", 1);
    std::string rest = p == std::string::npos ? "" : s.substr(p);
    if (rest.rfind("pragma", 0) == 0 && rest.find("METAL") != std::string::npos) set(i, lines_of(s));
    return true;
  }

  static bool is_half_literal(const std::string &s) {
    if (s.size() < 2) return false;
    char c = s.back();
    if (c != 'h' && c != 'H') return false;
    if (s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) return false;
    return true;
  }
  static std::string half_literal(const std::string &s) {
    std::string v = s.substr(0, s.size() - 1);
    if (v.find_first_of(".eE") == std::string::npos) v += ".0";
    return "half(" + v + ")";
  }

  // `constant T name [[function_constant(i)]];` → a thread-local specialised at dispatch.
  bool handle_function_constant(size_t stmt_start, size_t attr_at, const Attr &a) {
    int index = 0;
    if (a.args.size() != 1 || !parse_int(a.args[0], index))
      return error(a.line, "[[function_constant]] needs an integer index");
    size_t name_at = attr_at - 1;
    if (!ident(name_at)) return error(a.line, "cannot parse the function constant declaration");
    std::string type;
    for (size_t k = stmt_start; k < name_at; ++k) {
      if (is(k, "constant") || is(k, "const") || is(k, "static")) continue;
      if (!type.empty()) type += ' ';
      type += text(k);
    }
    if (type.empty()) return error(a.line, "cannot parse the function constant's type");
    size_t semi = attr_end_[attr_at] + 1;
    if (!is(semi, ";")) return error(a.line, "expected ';' after a function constant declaration");
    FunctionConstant fc;
    fc.name = text(name_at);
    fc.index = index;
    fc.type = type;
    fc.mtl_type = mtl_type_of(type);
    fconsts_.push_back(fc);
    erase_range(stmt_start, semi);
    set(stmt_start, "thread_local " + type + " " + fc.name + "{}; thread_local bool mgsim_fcdef_" + fc.name + " = false;");
    return true;
  }

  // A '{' at `brace` opens a function body; if the declaration carries `kernel` / [[kernel]],
  // record the kernel.
  bool note_kernel_definition(size_t stmt_start, size_t brace, const std::string &ns) {
    bool is_kernel = false;
    KernelDecl kd;
    std::vector<Attr> fattrs;
    size_t open_paren = SIZE_MAX;
    size_t k = stmt_start;
    if (is(k, "template") && is(k + 1, "<")) {
      size_t close = skip_angles(k + 1);
      kd.is_template = true;
      // template parameter names: last identifier of each comma-separated part
      std::string last;
      int depth = 0;
      for (size_t j = k + 2; j < close; ++j) {
        if (is(j, "<")) ++depth;
        if (is(j, ">")) --depth;
        if (depth == 0 && is(j, ",")) {
          kd.template_params.push_back(last);
          last.clear();
          continue;
        }
        if (is(j, "=")) {  // default argument: skip to the next top-level comma
          int d2 = 0;
          while (j + 1 < close && !(d2 == 0 && is(j + 1, ","))) {
            ++j;
            if (is(j, "<") || is(j, "(")) ++d2;
            if (is(j, ">") || is(j, ")")) --d2;
          }
          continue;
        }
        if (ident(j)) last = text(j);
      }
      if (!last.empty()) kd.template_params.push_back(last);
      k = close + 1;
    }
    // The declarator is found from the body backwards: whatever precedes the declaration in the
    // same statement (a macro that expanded to nothing, say) cannot be mistaken for its name.
    open_paren = declarator_paren(brace);
    for (; k < brace; ++k) {
      if (attr_end_[k] != SIZE_MAX) {
        for (const Attr &a : parse_attr(k)) {
          if (a.name == "kernel") is_kernel = true;
          fattrs.push_back(a);
        }
        k = attr_end_[k];
        continue;
      }
      if (is(k, "kernel") && (open_paren == SIZE_MAX || k < open_paren)) {
        is_kernel = true;
        set(k, "");
        continue;
      }
      if (k == open_paren) k = match_[k];
    }
    if (!is_kernel) return true;
    if (open_paren == SIZE_MAX || !ident(open_paren - 1))
      return error(t_[brace].line, "cannot find the kernel's parameter list");
    kd.name = text(open_paren - 1);
    kd.line = t_[open_paren - 1].line;
    for (size_t j = open_paren + 1; j < match_[open_paren]; ++j)
      if (attr_end_[j] != SIZE_MAX) j = attr_end_[j];
    kd.qualified = ns + kd.name;
    for (const Attr &a : fattrs) {
      if (a.name == "host_name" && !a.args.empty()) kd.host_name = unquote(a.args[0]);
      if (a.name == "max_total_threads_per_threadgroup") {
        int v = 0;
        if (a.args.size() != 1 || !parse_int(a.args[0], v) || v <= 0 || v > 1024)
          return error(a.line, "[[max_total_threads_per_threadgroup]] needs an integer in 1...1024");
        kd.max_threads = v;
      }
    }
    int pi = 0;
    for (auto [b, e] : split_params(open_paren)) {
      KernelParam p;
      bool found = false;
      for (size_t j = b; j < e; ++j) {
        if (attr_end_[j] == SIZE_MAX) continue;
        for (const Attr &a : parse_attr(j)) {
          if (a.name == "buffer" || a.name == "threadgroup") {
            int idx = 0;
            if (a.args.size() != 1 || !parse_int(a.args[0], idx) || idx < 0 || idx >= 31)
              return error(a.line, "[[" + a.name + "(n)]] needs an integer index in 0...30");
            p.kind = a.name == "buffer" ? ParamKind::Buffer : ParamKind::Threadgroup;
            p.index = idx;
            found = true;
          } else if (thread_attribute_names().count(a.name)) {
            p.kind = ParamKind::Attribute;
            p.attribute = a.name;
            found = true;
          } else if (a.name == "function_constant") {
            // optional buffer: bound or not, the kernel reads it only when the constant says so
          } else {
            return error(a.line, "unsupported construct '[[" + a.name + "]]' on kernel parameter " + std::to_string(pi));
          }
        }
        j = attr_end_[j];
      }
      if (!found) return error(t_[b].line, "kernel parameter " + std::to_string(pi) + " of '" + kd.name + "' has no [[buffer]], [[threadgroup]] or thread attribute");
      kd.params.push_back(p);
      ++pi;
    }
    kd.body_open = brace;
    kd.body_close = match_[brace];
    kernels_.push_back(kd);
    return true;
  }

  // The text of a string-literal argument; adjacent literals ("copy" "float", from macro
  // stringification) are concatenated.
  static std::string unquote(const std::string &s) {
    std::vector<Token> v = lex(s);
    std::string out;
    bool all_strings = v.size() > 1;
    for (size_t i = 0; i + 1 < v.size(); ++i) {
      if (v[i].kind != Tok::String || v[i].text.size() < 2 || v[i].text[0] != '"') {
        all_strings = false;
        break;
      }
      out += v[i].text.substr(1, v[i].text.size() - 2);
    }
    if (all_strings) return out;
    std::string x = s;
    while (!x.empty() && x.front() == ' ') x.erase(0, 1);
    while (!x.empty() && x.back() == ' ') x.pop_back();
    return x;
  }

  // A ';'-terminated statement at namespace scope: explicit instantiations and constants.
  bool note_statement(size_t b, size_t semi, const std::string &ns) {
    if (b >= semi) return true;
    if (is(b, "template") && !is(b + 1, "<")) {
      Instantiation in;
      in.line = t_[b].line;
      bool kernel = false;
      for (size_t k = b + 1; k < semi; ++k) {
        if (attr_end_[k] != SIZE_MAX) {
          for (const Attr &a : parse_attr(k)) {
            if (a.name == "host_name" && !a.args.empty()) in.host_name = unquote(a.args[0]);
            if (a.name == "kernel") kernel = true;
          }
          k = attr_end_[k];
          continue;
        }
        if (is(k, "kernel")) kernel = true;
        if (is(k, "decltype") && is(k + 1, "(")) {
          k = match_[k + 1];
          continue;
        }
        // The declarator: name<args> followed by ';' or '('
        if (ident(k) && is(k + 1, "<")) {
          size_t close = skip_angles(k + 1);
          if (is(close + 1, ";") || is(close + 1, "(")) {
            size_t qb = k;
            while (qb >= 2 && is(qb - 1, "::") && ident(qb - 2)) qb -= 2;
            in.func_name = text(k);
            for (size_t j = qb; j <= close; ++j) in.call_expr += (j > qb && t_[j].kind == Tok::Ident && t_[j - 1].kind == Tok::Ident ? " " : "") + text(j);
            std::string cur;
            int depth = 0;
            for (size_t j = k + 2; j < close; ++j) {
              if (is(j, "<") || is(j, "(")) ++depth;
              if (is(j, ">") || is(j, ")")) --depth;
              if (depth == 0 && is(j, ",")) {
                in.template_args.push_back(cur);
                cur.clear();
                continue;
              }
              if (!cur.empty()) cur += ' ';
              cur += text(j);
            }
            in.template_args.push_back(cur);
            k = close;  // names inside the argument list (S<float>) are not declarators
          }
        }
      }
      bool known_kernel = false;
      for (auto &kd : kernels_)
        if (kd.name == in.func_name && kd.is_template) known_kernel = true;
      if (kernel || known_kernel) {
        if (in.func_name.empty()) return error(in.line, "cannot parse the kernel instantiation");
        if (in.host_name.empty()) return error(in.line, "instantiation of kernel '" + in.func_name + "' has no [[host_name(\"...\")]]");
        if (in.call_expr.find("::") != 0 && !ns.empty()) in.call_expr = ns + in.call_expr;
        insts_.push_back(in);
        // The instantiation happens through the generated entry points instead.
        erase_range(b, semi);
      }
      return true;
    }
    // Program-scope integer constants, for threadgroup-memory sizes: [constant] [constexpr] T N = expr;
    for (size_t k = b; k < semi; ++k) {
      if (is(k, "=") && k > b && ident(k - 1)) {
        bool constish = false;
        for (size_t j = b; j < k; ++j)
          if (is(j, "constexpr") || is(j, "const") || is(j, "constant")) constish = true;
        if (constish) global_consts_[text(k - 1)] = std::vector<Token>(t_.begin() + long(k + 1), t_.begin() + long(semi));
        // A constant derived from function constants is recomputed per dispatch.
        bool uses_fc = false;
        for (size_t j = k + 1; j < semi; ++j)
          for (auto &fc : fconsts_)
            if (ident(j) && text(j) == fc.name) uses_fc = true;
        if (uses_fc) {
          std::string type, init;
          for (size_t j = b; j + 1 < k; ++j) {
            if (is(j, "constant") || is(j, "constexpr") || is(j, "const") || is(j, "static")) continue;
            type += (type.empty() ? "" : " ") + text(j);
          }
          for (size_t j = k + 1; j < semi; ++j) init += " " + (is(j, "is_function_constant_defined") ? std::string("mgsim_fcdef_") + text(j + 2) : text(j));
          // is_function_constant_defined(x) → mgsim_fcdef_x: drop the parentheses around x
          std::string cleaned;
          {
            std::vector<Token> it = lex(init);
            for (size_t j = 0; j < it.size(); ++j) {
              if (it[j].kind == Tok::Ident && it[j].text.rfind("mgsim_fcdef_", 0) == 0 && j + 3 < it.size() && it[j + 1].text == "(" && it[j + 3].text == ")") {
                cleaned += " " + it[j].text;
                j += 3;
                continue;
              }
              cleaned += " " + it[j].text;
            }
          }
          derived_consts_.emplace_back(text(k - 1), cleaned);
          erase_range(b, semi);
          set(b, "thread_local " + type + " " + text(k - 1) + "{};");
        }
        break;
      }
      if (is(k, "(") || is(k, "{")) break;
    }
    return true;
  }

  // Token rewrites: address spaces, threadgroup declarations, collectives' call sites, h literals,
  // attribute removal, is_function_constant_defined.
  bool rewrite_tokens() {
    for (size_t i = 0; i < t_.size(); ++i) {
      const Token &tk = t_[i];
      if (tk.kind == Tok::End) break;
      if (replaced_[i] && tk.kind == Tok::PP) continue;
      if (attr_end_[i] != SIZE_MAX) {
        erase_range(i, attr_end_[i]);
        i = attr_end_[i];
        continue;
      }
      if (replaced_[i]) continue;
      if (tk.kind == Tok::Number && is_half_literal(tk.text)) {
        set(i, half_literal(tk.text));
        continue;
      }
      if (tk.kind != Tok::Ident) continue;
      const std::string &s = tk.text;
      if (s == "thread") {
        set(i, "");
      } else if (s == "device" || s == "constant") {
        rewrite_address_space(i);
      } else if (s == "threadgroup") {
        rewrite_threadgroup(i);
      } else if (s == "is_function_constant_defined" && is(i + 1, "(") && ident(i + 2) && is(i + 3, ")")) {
        set(i, "mgsim_fcdef_" + text(i + 2));
        erase_range(i + 1, i + 3);
        i += 3;
      } else if ((s == "reinterpret_cast" || s == "static_cast") && opt_.checked && is(i + 1, "<")) {
        size_t close = skip_angles(i + 1);
        for (size_t k = i + 2; k < close; ++k)
          if (is(k, "device") || is(k, "constant")) {
            set(i, "mgsim::impl::ptr_cast");
            break;
          }
      } else if (in_function_[i] && collective_names().count(s) && is(i + 1, "(") &&
                 !(i > 0 && (is(i - 1, ".") || is(i - 1, "->")))) {
        std::string site = "mgsim::site{" + std::to_string(next_site_++) + "u}";
        set(i + 1, is(i + 2, ")") ? "(" + site : "(" + site + ", ");
      }
    }
    return err_.empty();
  }

  // Finds the extent of a declaration's type that follows an address-space keyword at `as`:
  // returns the index of the first token after the type (a '*', '&', or the declarator).
  size_t type_end_after(size_t as) const {
    static const std::unordered_set<std::string> builtin_words = {"unsigned", "signed", "long", "short", "int", "char"};
    size_t k = as + 1;
    while (is(k, "const") || is(k, "volatile") || is(k, "typename") || is(k, "struct")) ++k;
    if (is(k, "::")) ++k;
    if (!ident(k)) return k;
    if (builtin_words.count(text(k))) {
      while (ident(k) && builtin_words.count(text(k))) ++k;
    } else {
      for (;;) {
        ++k;  // past a name part
        if (is(k, "<")) k = skip_angles(k) + 1;
        if (is(k, "::") && ident(k + 1)) {
          ++k;
          continue;
        }
        break;
      }
    }
    while (is(k, "const") || is(k, "volatile")) ++k;
    return k;
  }

  void rewrite_address_space(size_t i) {
    bool is_constant = is(i, "constant");
    size_t e = type_end_after(i);
    while (is(e, "const") || is(e, "volatile")) ++e;
    bool pointer = is(e, "*");
    // Does the declaration already say const/constexpr?
    size_t b = i;
    while (b > 0 && (is(b - 1, "const") || is(b - 1, "volatile") || is(b - 1, "static") || is(b - 1, "constexpr") || is(b - 1, "inline"))) --b;
    bool has_const = false;
    for (size_t k = b; k < e; ++k)
      if (is(k, "const") || is(k, "constexpr")) has_const = true;
    if (opt_.checked && pointer && !is(e + 1, "*")) {
      checked_pointer(i, b, e, is_constant);
      return;
    }
    if (is_constant && !has_const) set(i, "const");
    else set(i, "");
  }

  // device/constant/threadgroup T* (the address-space word at i, the declaration's first token at b,
  // the '*' at e) → mgsim::dptr<T>, keeping every qualifier on the pointee.
  void checked_pointer(size_t i, size_t b, size_t e, bool add_const) {
    std::string inner;
    bool any_const = false;
    for (size_t k = b; k < e; ++k) {
      if (k == i || is(k, "static") || is(k, "constexpr") || is(k, "inline")) continue;
      if (is(k, "const")) any_const = true;
      inner += (inner.empty() ? "" : " ") + (replaced_[k] ? repl_[k] : text(k));
    }
    if (add_const && !any_const) inner = "const " + inner;
    for (size_t k = b; k <= e; ++k)
      if (!is(k, "static") && !is(k, "constexpr") && !is(k, "inline")) set(k, "");
    set(i, "mgsim::dptr<" + inner + ">");
    size_t d = e + 1;
    while (is(d, "const") || is(d, "volatile") || is(d, "__restrict")) ++d;
    if (ident(d) && !is(d + 1, "(")) note_checked_name(d);
  }

  // --- checked mode: element accesses -----------------------------------------------------------

  // Records the checked pointer declared at token d and the extent of its scope.
  void note_checked_name(size_t d, bool scalar = false, bool view = false) {
    size_t k = d, open = SIZE_MAX;
    while (k > 0) {  // the innermost enclosing '(' or '{'
      --k;
      if ((is(k, ")") || is(k, "]") || is(k, "}")) && match_[k] != SIZE_MAX) {
        k = match_[k];
        continue;
      }
      if (is(k, "(") || is(k, "{")) {
        open = k;
        break;
      }
    }
    CheckedName c{text(d), d, t_.size() - 1, is(d + 1, "[") && attr_end_[d + 1] == SIZE_MAX, scalar};
    if (view) c.array = false;  // a threadgroup variable's view: one subscript (rows of rows included)
    if (open != SIZE_MAX && is(open, "{")) {
      const bool ns = open >= 1 && (is(open - 1, "namespace") || (open >= 2 && is(open - 2, "namespace")));
      if (!in_function_[d] && !ns) {  // a data member of a struct
        checked_members_.insert(c.name);
        return;
      }
      c.scope_end = match_[open];
    } else if (open != SIZE_MAX) {
      // A parameter (or a for-init declaration): in scope through the body or statement after ')'.
      for (size_t j = match_[open] + 1; j < t_.size(); ++j) {
        if (is(j, "{")) {
          c.scope_end = match_[j];
          break;
        }
        if (is(j, ";")) {
          c.scope_end = j;
          break;
        }
        if ((is(j, "(") || is(j, "[")) && match_[j] != SIZE_MAX) j = match_[j];
      }
    }
    checked_names_.push_back(c);
  }

  const CheckedName *checked_name_at(size_t i) const {
    const CheckedName *best = nullptr;
    for (const CheckedName &c : checked_names_)
      if (c.name == text(i) && c.decl <= i && i <= c.scope_end && (!best || c.decl > best->decl)) best = &c;
    return best;
  }

  static bool is_assign_op(const std::string &s) {
    return s == "=" || s == "+=" || s == "-=" || s == "*=" || s == "/=" || s == "%=" || s == "&=" || s == "|=" ||
           s == "^=" || s == "<<=" || s == ">>=";
  }

  // Where the postfix expression whose last name is token k begins (a.b.p → a, f(x).p → f,
  // q[j].p → q, (e).p → '(').
  size_t postfix_start(size_t k) const {
    static const std::unordered_set<std::string> not_callee = {"return", "case",    "throw",    "else",   "do",
                                                               "if",     "while",   "for",      "switch", "sizeof",
                                                               "alignof", "decltype", "co_return", "co_yield"};
    for (;;) {
      while (k >= 2 && is(k - 1, "::") && ident(k - 2)) k -= 2;
      if (k < 2 || !(is(k - 1, ".") || is(k - 1, "->"))) return k;
      size_t e = k - 2;  // the last token of the object expression
      for (;;) {
        if (ident(e)) {
          k = e;
          break;
        }
        if ((is(e, ")") || is(e, "]")) && match_[e] != SIZE_MAX) {
          const size_t o = match_[e];
          // A call or a subscript: continue with what it applies to.
          if (o >= 1 && ((ident(o - 1) && !not_callee.count(text(o - 1))) || is(o - 1, ")") || is(o - 1, "]"))) {
            e = o - 1;
            continue;
          }
          return o;  // a parenthesized primary
        }
        return k;
      }
    }
  }

  // Checked mode: an element reached through a checked pointer (p[i], s.p[i], *p) is a reference
  // proxy; where its value is used it is wrapped in mgsim::impl::rd (a value of T, so template
  // deduction, auto and generic lambdas see T as in Metal), where it is used as an object (p[i].x,
  // p[i][k], p[i].f(), T& r = p[i]) in mgsim::impl::wr (T&). Assignments to it (p[i] = v, p[i] += v,
  // ++p[i]) and &p[i] keep the proxy, which checks and records writes precisely. Names are known
  // from their declarations; a checked pointer reached otherwise ((p + 1)[i], through auto) keeps
  // the proxy, which converts to T where T is expected.
  void wrap_element_accesses() {
    static const std::unordered_set<std::string> expr_keywords = {"return", "case", "throw", "else", "do",
                                                                  "sizeof", "co_return", "co_yield"};
    for (size_t i = 1; i < t_.size(); ++i) {
      if (!in_function_[i] || !ident(i)) continue;
      const bool via_member = is(i - 1, ".") || is(i - 1, "->");
      const CheckedName *cn = nullptr;
      if (!via_member) {
        if (is(i - 1, "::")) continue;
        cn = checked_name_at(i);
        if (cn && cn->decl == i) continue;
        if (!cn && !checked_members_.count(text(i))) continue;
        // A name right after a type is being declared (float p[4]), not used.
        if (ident(i - 1) && !expr_keywords.count(text(i - 1))) continue;
      } else if (!checked_members_.count(text(i))) {
        continue;
      }
      const size_t start = via_member ? postfix_start(i) : i;
      // Every access carries its source line (race reports): p[i] → p.mg_line(N)[i].
      const std::string at_line = ".mg_line(" + std::to_string(user_line(t_[i].line).line) + "u)";
      if (cn && cn->scalar) {
        // A threadgroup scalar: its name is the element, *view.
        const size_t n = i + 1;
        const bool object_use = is(n, ".") || is(n, "[") || is(n, "(") || is(n, "->");
        const bool assigned = (t_[n].kind == Tok::Punct && is_assign_op(text(n))) || is(n, "++") || is(n, "--") ||
                              is(i - 1, "++") || is(i - 1, "--");
        const bool address = is(i - 1, "&") && (t_[i - 2].kind == Tok::Punct || expr_keywords.count(text(i - 2)));
        const std::string wrap = object_use ? "mgsim::impl::wr(" : (assigned || address) ? "" : "mgsim::impl::rd(";
        prefix_[i] += wrap + "(*";
        suffix_[i] = at_line + ")" + (wrap.empty() ? "" : ")") + suffix_[i];
        continue;
      }
      if (is(i + 1, "[") && attr_end_[i + 1] == SIZE_MAX) {
        // The element: one subscript, two for an array of pointers.
        size_t j = i + 1;
        const int subs = cn && cn->array ? 2 : 1;
        bool ok = true;
        for (int n = 0; n < subs; ++n) {
          if (!is(j, "[") || match_[j] == SIZE_MAX) {
            ok = false;
            break;
          }
          j = match_[j] + 1;
        }
        if (!ok) continue;
        const size_t last = j - 1;
        if (subs == 1) suffix_[i] += at_line;
        else suffix_[match_[i + 1]] += at_line;  // ptrs[k].mg_line(N)[i]
        bool object_use = false, call = false;
        size_t c = j;
        for (;;) {  // member access, subscript or call on the element
          if (is(c, "[") && match_[c] != SIZE_MAX) {
            object_use = true;
            c = match_[c] + 1;
          } else if ((is(c, ".") || is(c, "->")) && ident(c + 1)) {
            object_use = true;
            c += 2;
          } else if (is(c, "(") && match_[c] != SIZE_MAX) {
            object_use = call = true;
            c = match_[c] + 1;
          } else {
            break;
          }
        }
        const bool assigned = (c < t_.size() && t_[c].kind == Tok::Punct && is_assign_op(text(c))) || is(c, "++") ||
                              is(c, "--") || (start > 0 && (is(start - 1, "++") || is(start - 1, "--")));
        const bool address = start > 0 && is(start - 1, "&");
        const bool ref_init = start >= 3 && is(start - 1, "=") && ident(start - 2) && is(start - 3, "&");
        if (!object_use && (assigned || address)) continue;  // the proxy itself
        const bool as_object = object_use ? (assigned || address || call || ref_init) : ref_init;
        prefix_[start] += as_object ? "mgsim::impl::wr(" : "mgsim::impl::rd(";
        suffix_[last] = ")" + suffix_[last];
      } else if (!via_member && is(i - 1, "*") && i >= 2) {
        // *p: a unary '*' follows an operator or an opening bracket, not an operand.
        const size_t b = i - 2;
        const bool unary = t_[b].kind == Tok::Punct ? !(is(b, ")") || is(b, "]")) : expr_keywords.count(text(b)) > 0;
        if (!unary) continue;
        const size_t n = i + 1;
        if (is(n, "[") || is(n, ".") || is(n, "->") || is(n, "(") || is(n, "++") || is(n, "--")) continue;
        if ((t_[n].kind == Tok::Punct && is_assign_op(text(n))) || is(b, "&") || is(b, "++") || is(b, "--")) {
          if (!is(b, "++") && !is(b, "--")) suffix_[i] = at_line + suffix_[i];  // *p = v
          continue;
        }
        const bool ref_init = i >= 4 && is(b, "=") && ident(b - 1) && is(b - 2, "&");
        prefix_[i - 1] += ref_init ? "mgsim::impl::wr(" : "mgsim::impl::rd(";
        suffix_[i] = at_line + ")" + suffix_[i];
      }
    }
  }

  void rewrite_threadgroup(size_t i) {
    size_t e = type_end_after(i);
    // atomic_float and atomic_ulong exist in device memory only (MSL §6.15.4).
    size_t atomic_at = SIZE_MAX;
    for (size_t k = i + 1; k < e; ++k) {
      const bool device_only = is(k, "atomic_float") || is(k, "atomic_ulong") ||
                               (is(k, "atomic") && is(k + 1, "<") &&
                                (is(k + 2, "float") || is(k + 2, "ulong") || is(k + 2, "uint64_t") ||
                                 (is(k + 2, "unsigned") && is(k + 3, "long"))));
      if (device_only) {
        error(t_[k].line, "MSL: atomic_float and atomic_ulong exist in device memory only; threadgroup memory "
                          "has atomic_int, atomic_uint and atomic_bool (MSL 6.15.4)");
        return;
      }
      if (is(k, "atomic") && is(k + 1, "<")) atomic_at = k;
    }
    while (is(e, "const") || is(e, "volatile")) ++e;
    if (opt_.checked && is(e, "*") && !is(e + 1, "*")) {
      // threadgroup T* → a checked pointer (race detection, bounds).
      size_t b = i;
      while (b > 0 && (is(b - 1, "const") || is(b - 1, "volatile"))) --b;
      checked_pointer(i, b, e, false);
      return;
    }
    if (is(e, "*") || is(e, "&") || !in_function_[i] || !ident(e)) {
      set(i, "");
      return;
    }
    // A threadgroup atomic<T> whose T the translator cannot see (a template parameter) is checked
    // when the kernel is instantiated.
    if (atomic_at != SIZE_MAX && !replaced_[atomic_at])
      set(atomic_at, is(atomic_at - 1, "::") ? "mgsim_threadgroup_atomic" : "::metal::mgsim_threadgroup_atomic");
    // An object declaration: one instance per threadgroup. A worker runs one threadgroup at a
    // time and its lanes never migrate, so thread-local storage is exactly per-threadgroup.
    set(i, "static thread_local");
    // `threadgroup T name[N]...;` with one declarator: the storage gets another name and `name`
    // becomes a reference to it, so the thread-local address is computed once per call instead
    // of at every access (a TLS descriptor call each in a dlopen'ed object).
    size_t k = e + 1;
    while (is(k, "[") && match_[k] != SIZE_MAX) k = match_[k] + 1;
    if (is(k, ";") && !replaced_[e] && !replaced_[k]) {
      const std::string name = text(e);
      set(e, "mgsim_tg_" + name);
      if (opt_.checked) {
        // A checked pointer to the storage: every access is bounds-checked and race-detected.
        set(k, "; static thread_local mgsim::abi::check_binding mgsim_tgb_" + name + "; auto " + name +
                   " = mgsim::impl::tg_view(mgsim_tg_" + name + ", mgsim_tgb_" + name + ", \"" + name + "\");");
        note_checked_name(e, /*scalar=*/!is(e + 1, "["), /*view=*/true);
      } else {
        set(k, "; auto &" + name + " = mgsim_tg_" + name + ";");
      }
    }
  }


  // --- work-item form ---------------------------------------------------------------------------

  std::set<std::string> wi_sync_;                 // user functions with syncs, by name
  std::map<std::string, std::string> wi_fail_;    // names with no work-item form, and why
  std::string wi_global_;                         // a reason no kernel may use the work-item form
  bool wi_written_ = false;
  bool tier0_fibers_ = false;  // opt_.tier0_fibers, for this unit (build_workitem)

  // The rewritten text of tokens [b, e), whitespace and comments included (line structure kept).
  std::string rtext(size_t b, size_t e) const {
    std::string o;
    for (size_t k = b; k < e && k < t_.size(); ++k) {
      o += t_[k].pre;
      o += prefix_[k];
      o += replaced_[k] ? repl_[k] : t_[k].text;
      o += suffix_[k];
    }
    return o;
  }
  // The same on one line, comments dropped.
  std::string ctext(size_t b, size_t e) const {
    std::string o;
    for (size_t k = b; k < e && k < t_.size(); ++k) {
      std::string x = prefix_[k] + (replaced_[k] ? repl_[k] : t_[k].text) + suffix_[k];
      if (x.empty()) continue;
      if (!o.empty() && (!t_[k].pre.empty() || (is_ident_char(o.back()) && is_ident_char(x.front())))) o += ' ';
      o += x;
    }
    return o;
  }

  WiLine user_line(int pp_line) const {
    WiLine w{"program_source", pp_line};
    for (const Marker &mk : markers_) {
      if (mk.line >= pp_line) break;
      w.file = mk.file;
      w.line = mk.user_line + (pp_line - mk.line - 1);
    }
    return w;
  }

  // Is the token at k erased by a rewrite (an attribute, an address space)?
  bool erased(size_t k) const { return replaced_[k] && repl_[k].empty(); }

  // The declaration of function fb as the work-item generator needs it; false (with why) when it
  // has a shape the generator does not handle.
  bool extract_wi(const FunctionBody &fb, unsigned id, WiFunction &wf, std::string &why, bool &implicit) {
    static const std::unordered_set<std::string> builtin = {"unsigned", "signed", "short", "long", "int",
                                                            "char", "float", "double", "bool", "void"};
    wf.id = id;
    if (fb.name == "operator") return implicit = true, why = "a sync in an operator", false;
    size_t k = fb.decl;
    while (ident(k) && is(k + 1, ":") && !is(k + 2, ":")) k += 2;  // public: / private:
    if (is(k, "template")) {
      if (!is(k + 1, "<")) return why = "a template declaration it cannot read", false;
      const size_t close = skip_angles(k + 1);
      if (close == k + 2) return why = "an explicit specialization", false;
      wf.templated = true;
      wf.template_header = ctext(k, close + 1);
      // Parameters: split at top-level commas.
      size_t pb = k + 2;
      int depth = 0;
      for (size_t j = k + 2; j <= close; ++j) {
        if (j < close && (is(j, "(") || is(j, "[") || is(j, "{")) && match_[j] != SIZE_MAX) {
          j = match_[j];
          continue;
        }
        if (j < close && is(j, "<")) ++depth;
        if (j < close && is(j, ">")) --depth;
        if (j == close || (depth == 0 && is(j, ","))) {
          size_t pe = j;
          for (size_t q = pb; q < j; ++q)
            if (is(q, "=")) {
              pe = q;
              break;
            }
          WiTemplateParam tp;
          size_t last = SIZE_MAX;
          for (size_t q = pb; q < pe; ++q) {
            if (is(q, "...") || is(q, "template")) return why = "a variadic or template-template parameter", false;
            if (ident(q)) last = q;
          }
          if (last == SIZE_MAX) return why = "an unnamed template parameter", false;
          tp.name = text(last);
          tp.decl = ctext(pb, pe);
          tp.type = (is(pb, "typename") || is(pb, "class")) && last == pb + 1;
          if (!tp.type) tp.nttp_type = ctext(pb, last);
          wf.tparams.push_back(tp);
          pb = j + 1;
        }
      }
      k = close + 1;
      if (is(k, "template")) return why = "a member template defined outside its class", false;
    }
    const size_t open = declarator_paren(fb.open);
    if (open == SIZE_MAX || open == 0 || !ident(open - 1)) return why = "a declaration it cannot read", false;
    const size_t name_at = open - 1;
    if (is(name_at - 1, "::")) return why = "a member function defined outside its class", false;
    if (is(name_at - 1, "~") || is(name_at - 1, "operator") || text(name_at) == "operator")
      return implicit = true, why = "a sync in an operator or destructor", false;
    wf.name = text(name_at);
    bool has_type = false;
    for (size_t j = k; j < name_at; ++j) {
      if (is(j, "static")) wf.is_static = true;
      if (ident(j) && text(j) == "always_inline") wf.always_inline = true;
      if (is(j, "__attribute__") && is(j + 1, "(") && match_[j + 1] != SIZE_MAX) {
        for (size_t q = j; q <= match_[j + 1]; ++q)
          if (ident(q) && text(q) == "always_inline") wf.always_inline = true;
        j = match_[j + 1];
        continue;
      }
      if (erased(j)) continue;
      if (ident(j) && !is(j, "static") && !is(j, "inline") && !is(j, "constexpr") && !is(j, "explicit") &&
          !is(j, "friend") && !is(j, "extern"))
        has_type = true;
      if (is(j, "friend")) return why = "a friend function", false;
    }
    if (!has_type) return implicit = true, why = "a sync in a constructor", false;
    if (fb.in_class && !wf.is_static) return implicit = true, why = "a sync in a non-static member function", false;
    for (const KernelDecl &kd : kernels_)
      if (kd.body_open == fb.open) {
        wf.kernel = true;
        // As the entry passes them (one value: uarg): buffers and threadgroup-wide attributes.
        // (Threadgroup memory is left out: its contents change under the lanes.)
        wf.uniform_params.clear();
        for (const KernelParam &kp : kd.params)
          wf.uniform_params.push_back(kp.kind == ParamKind::Buffer ||
                                      (kp.kind == ParamKind::Attribute && attr_args(kp.attribute).find("a.") == std::string::npos));
      }
    wf.hoist_uniform = !opt_.checked;
    wf.params_text = ctext(open + 1, match_[open]);
    for (auto [pb, pe] : split_params(open)) {
      size_t eq = pe;
      for (size_t q = pb; q < pe; ++q) {
        if ((is(q, "(") || is(q, "[") || is(q, "{")) && match_[q] != SIZE_MAX) {
          q = match_[q];
          continue;
        }
        if (attr_end_[q] != SIZE_MAX) {
          q = attr_end_[q];
          continue;
        }
        if (is(q, "=")) {
          eq = q;
          break;
        }
      }
      // The name: the last identifier (not erased, not a builtin type word) before any array bounds.
      size_t name = SIZE_MAX, dims = eq, sig = 0;
      for (size_t q = pb; q < eq; ++q) {
        if (attr_end_[q] != SIZE_MAX) {
          q = attr_end_[q];
          continue;
        }
        if (erased(q)) continue;
        if (is(q, "[")) {
          dims = q;
          break;
        }
        if (is(q, "<") ) {
          const size_t a = skip_angles(q);
          q = a;
          ++sig;
          continue;
        }
        ++sig;
        if (ident(q)) name = q;
      }
      if (sig == 1 && name != SIZE_MAX && text(name) == "void" && split_params(open).size() == 1) break;
      WiParam p;
      const bool named = name != SIZE_MAX && sig > 1 && !builtin.count(text(name)) && !is(name, "const") &&
                         !is(name, "volatile") && !(name > pb && is(name - 1, "::"));
      const size_t type_end = named ? name : dims;
      for (size_t q = pb; q < type_end; ++q)
        if (is(q, "&") || is(q, "&&")) p.ref = true;
      p.type = ctext(pb, type_end);
      if (dims < eq) p.type += " *";
      if (named) p.name = text(name);
      if (eq < pe) p.def = ctext(eq + 1, pe);
      wf.params.push_back(p);
    }
    wf.body = rtext(fb.open + 1, fb.close);
    wf.first_line = t_[fb.open].line;
    return true;
  }

  // Finds the user functions with syncs, writes a work-item variant next to each (when every
  // function it calls has one too) and records why not otherwise.
  void build_workitem() {
    if (!opt_.workitem) return;
    // Tier-0 fibers (TranslateOptions::tier0_fibers), except for a unit that instantiates a
    // matrix-product kernel (simdgroup-matrix operations, no simd collective: gemm, conv, qmm, SDPA
    // backward): its inner loops are matrix operations, each a rendezvous of the simdgroup's
    // fibers, and as fibers it outran the tier-up budget (compiled twice, costing more than the
    // cheaper tier-0 compile saved). Measured again unchecked (fibers' -O0 compile is a third of the
    // work-item form's): the GPU suite took 6 CPU s less, but test/fast, mlx-parity and the matmul,
    // conv and quantized tests 5 CPU s more (every GEMM used a lot tiered up, 2.3 -> 10.1 s).
    tier0_fibers_ = opt_.tier0_fibers;
    for (const KernelDecl &kd : kernels_) {
      if (!tier0_fibers_) break;
      bool instantiated = !kd.is_template;
      for (const Instantiation &in : insts_) instantiated = instantiated || in.func_name == kd.name;
      if (!instantiated) continue;
      bool matrix = false, collective = false;
      reach_names(kd.body_open, kd.body_close, [&](const std::string &id) {
        if (wi_is_matrix_op(id)) matrix = true;
        if (wi_is_collective(id)) collective = true;
      });
      if (matrix && !collective) tier0_fibers_ = false;
    }
    auto calls_sync = [&](const FunctionBody &fb) {
      for (size_t k = fb.open + 1; k < fb.close; ++k) {
        if (!ident(k)) continue;
        const std::string &n = text(k);
        if (!wi_is_prelude_sync(n) && !wi_sync_.count(n)) continue;
        if (is(k - 1, ".") || is(k - 1, "->")) continue;
        if (is(k + 1, "(") || is(k + 1, "<")) return true;
      }
      return false;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (const FunctionBody &fb : functions_)
        if (!wi_sync_.count(fb.name) && calls_sync(fb)) {
          wi_sync_.insert(fb.name);
          changed = true;
        }
    }
    if (wi_sync_.empty()) return;
    // A function with syncs reached other than by a call (its address taken, say) would run its
    // scalar form inside per-lane code.
    for (const FunctionBody &fb : functions_)
      for (size_t k = fb.open + 1; k < fb.close && wi_global_.empty(); ++k)
        if (ident(k) && wi_sync_.count(text(k)) && !wi_is_prelude_sync(text(k)) && !is(k + 1, "(") &&
            !is(k + 1, "<") && !is(k - 1, ".") && !is(k - 1, "->")) {
          WiLine w = user_line(t_[k].line);
          wi_global_ = "'" + text(k) + "' (which has syncs) is used other than by a call (" + w.file + ":" +
                       std::to_string(w.line) + ")";
        }
    std::map<size_t, WiOutput> outs;
    for (size_t fi = 0; fi < functions_.size(); ++fi) {
      const FunctionBody &fb = functions_[fi];
      if (!wi_sync_.count(fb.name)) continue;
      WiFunction wf;
      std::string why;
      bool implicit = false;  // a function a kernel may call without naming it (operator, constructor, method)
      if (!extract_wi(fb, unsigned(fi + 1), wf, why, implicit)) {
        if (implicit && wi_global_.empty()) {
          WiLine w = user_line(t_[fb.open].line);
          wi_global_ = why + " (" + w.file + ":" + std::to_string(w.line) + ")";
        }
        WiLine w = user_line(t_[fb.open].line);
        if (!wi_fail_.count(fb.name))
          wi_fail_[fb.name] = why + " (" + w.file + ":" + std::to_string(w.line) + ", in '" + fb.name + "')";
        continue;
      }
      WiOutput o;
      if (!wi_transform(wf, [&](const std::string &n) { return wi_sync_.count(n) > 0; },
                        [&](int l) { return user_line(l); }, o)) {
        if (!wi_fail_.count(fb.name)) wi_fail_[fb.name] = o.reason;
        continue;
      }
      outs[fi] = std::move(o);
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (auto &[fi, o] : outs) {
        const std::string &n = functions_[fi].name;
        if (wi_fail_.count(n)) continue;
        for (const std::string &c : o.calls)
          if (wi_fail_.count(c)) {
            wi_fail_[n] = wi_fail_[c];
            changed = true;
            break;
          }
      }
    }
    if (!wi_global_.empty()) return;
    // Variants are written only for the functions the unit's kernels reach (by name, so a superset):
    // a library's other kernels' variants are code the compiler would parse and instantiate for
    // nothing (an SDPA backward unit's source was 271 KB, 51 KB as fibers). The decisions above
    // (which functions have a work-item form, wi_written_) stay the library's, as before.
    const std::set<std::string> reached = names_reached_by_kernels();
    for (auto &[fi, o] : outs) {
      const FunctionBody &fb = functions_[fi];
      if (wi_fail_.count(fb.name)) continue;
      const WiLine back = user_line(t_[fb.close].line);
      if (!tier0_fibers_ && reached.count(fb.name))
        suffix_[fb.close] += o.code + "\n#line " + std::to_string(back.line) + " \"" + back.file + "\"\n";
      wi_written_ = true;
    }
  }

  // The names of the kernels this unit emits (instantiated, and among only_kernels when given) and
  // every name their bodies reach through functions of that name.
  std::set<std::string> names_reached_by_kernels() {
    auto wanted = [&](const std::string &host_name) {
      return opt_.only_kernels.empty() ||
             std::find(opt_.only_kernels.begin(), opt_.only_kernels.end(), host_name) != opt_.only_kernels.end();
    };
    std::set<std::string> names;
    for (const KernelDecl &kd : kernels_) {
      bool emitted = !kd.is_template && wanted(kd.host_name.empty() ? kd.name : kd.host_name);
      for (const Instantiation &in : insts_) emitted = emitted || (in.func_name == kd.name && wanted(in.host_name));
      if (!emitted) continue;
      names.insert(kd.name);
      reach_names(kd.body_open, kd.body_close, [&](const std::string &id) { names.insert(id); });
    }
    return names;
  }

  // The work-item decision for a kernel named `name` that needs cooperation (reason when fibers).
  bool kernel_workitem(const std::string &name, std::string &reason) const {
    if (!opt_.workitem) {
      reason = opt_.fiber_note.empty() ? "the work-item form is disabled (MG_SIM_WORKITEM=0)" : opt_.fiber_note;
      return false;
    }
    if (!wi_global_.empty()) {
      reason = wi_global_;
      return false;
    }
    if (!wi_sync_.count(name)) {
      reason = "it reaches a barrier, collective or thread_elements() other than by direct calls";
      return false;
    }
    auto it = wi_fail_.find(name);
    if (it != wi_fail_.end()) {
      reason = it->second;
      return false;
    }
    return true;
  }

  // --- kernels: call graph, threadgroup sizes, entries -----------------------------------------

  // Calls f once with each identifier reachable from the body [open, close] through the bodies of
  // functions of that name.
  template <class F>
  void reach_names(size_t open, size_t close, F &&f) {
    std::multimap<std::string, const FunctionBody *> by_name;
    for (auto &fb : functions_) by_name.emplace(fb.name, &fb);
    std::set<std::string> seen;
    std::vector<std::string> work;
    auto scan_tokens = [&](size_t b, size_t e) {
      for (size_t k = b; k < e && k < t_.size(); ++k)
        if (t_[k].kind == Tok::Ident && seen.insert(t_[k].text).second) work.push_back(t_[k].text);
    };
    scan_tokens(open, close);
    while (!work.empty()) {
      std::string id = work.back();
      work.pop_back();
      f(id);
      auto range = by_name.equal_range(id);
      for (auto it = range.first; it != range.second; ++it) scan_tokens(it->second->open, it->second->close);
    }
  }

  // What the body [open, close] reaches: a sync, thread_elements() / simd_lane_id(), a sync other
  // than thread_elements().
  void reach(size_t open, size_t close, bool &sync, bool &lane_id, bool &sync_other) {
    reach_names(open, close, [&](const std::string &id) {
      if (is_sync_name(id)) sync = true;
      if (is_sync_name(id) && id != "thread_elements") sync_other = true;
      if (id == "thread_elements" || id == "simd_lane_id") lane_id = true;
    });
  }

  // Evaluates an integer constant expression for threadgroup-array sizes; false if unknown.
  bool eval(const std::vector<Token> &v, size_t &k, int64_t &out, const std::map<std::string, std::string> &tparams,
            const std::map<std::string, std::vector<Token>> &locals, int depth, int prec = 0) {
    if (depth > 32) return false;
    int64_t lhs = 0;
    if (k >= v.size()) return false;
    const Token &x = v[k];
    if (x.text == "(") {
      ++k;
      if (!eval(v, k, lhs, tparams, locals, depth + 1)) return false;
      if (k >= v.size() || v[k].text != ")") return false;
      ++k;
    } else if (x.text == "-") {
      ++k;
      if (!eval(v, k, lhs, tparams, locals, depth + 1, 10)) return false;
      lhs = -lhs;
    } else if (x.kind == Tok::Number) {
      int iv = 0;
      if (!parse_int(x.text, iv)) return false;
      lhs = iv;
      ++k;
    } else if (x.kind == Tok::Ident) {
      if (x.text == "sizeof" && k + 1 < v.size() && v[k + 1].text == "(") {
        std::string t = k + 2 < v.size() ? v[k + 2].text : "";
        auto tp = tparams.find(t);
        if (tp != tparams.end()) t = tp->second;
        int64_t sz = type_size(t);
        if (sz < 0 || k + 3 >= v.size() || v[k + 3].text != ")") return false;
        lhs = sz;
        k += 4;
      } else {
        std::vector<Token> def;
        auto tp = tparams.find(x.text);
        auto lc = locals.find(x.text);
        auto gc = global_consts_.find(x.text);
        if (tp != tparams.end()) def = lex(tp->second), def.pop_back();
        else if (lc != locals.end()) def = lc->second;
        else if (gc != global_consts_.end()) def = gc->second;
        else return false;
        size_t z = 0;
        if (!eval(def, z, lhs, tparams, locals, depth + 1)) return false;
        ++k;
      }
    } else {
      return false;
    }
    for (;;) {
      if (k >= v.size()) break;
      const bool shr = v[k].text == ">" && k + 1 < v.size() && v[k + 1].text == ">" && v[k + 1].pre.empty();
      const std::string op = shr ? ">>" : v[k].text;
      int p = (op == "*" || op == "/" || op == "%") ? 3 : (op == "+" || op == "-") ? 2 : (op == "<<" || op == ">>") ? 1 : 0;
      if (p == 0 || p <= prec) break;
      k += shr ? 2 : 1;
      int64_t rhs = 0;
      if (!eval(v, k, rhs, tparams, locals, depth + 1, p)) return false;
      if (op == "*") lhs *= rhs;
      else if (op == "/") { if (!rhs) return false; lhs /= rhs; }
      else if (op == "%") { if (!rhs) return false; lhs %= rhs; }
      else if (op == "+") lhs += rhs;
      else if (op == "-") lhs -= rhs;
      else if (op == "<<") lhs <<= rhs;
      else if (op == ">>") lhs >>= rhs;
    }
    out = lhs;
    return true;
  }

  // Sums the sizes of the threadgroup object declarations lexically inside [open, close].
  uint32_t static_tg_size(size_t open, size_t close, const std::map<std::string, std::string> &tparams) {
    std::map<std::string, std::vector<Token>> locals;
    int64_t total = 0;
    for (size_t k = open; k < close; ++k) {
      if ((is(k, "constexpr") || is(k, "const")) && !is(k + 1, "(")) {
        // constexpr int NAME = expr;
        size_t j = k + 1;
        while (j < close && !is(j, "=") && !is(j, ";")) ++j;
        if (is(j, "=") && ident(j - 1)) {
          size_t s = j + 1;
          while (s < close && !is(s, ";")) ++s;
          locals[text(j - 1)] = std::vector<Token>(t_.begin() + long(j + 1), t_.begin() + long(s));
        }
      }
      if (!is(k, "threadgroup") || repl_[k] != "static thread_local") continue;
      size_t e = type_end_after(k);
      std::string type;
      for (size_t j = k + 1; j < e; ++j)
        if (ident(j) && !is(j, "const") && !is(j, "volatile")) type = text(j);
      auto tp = tparams.find(type);
      if (tp != tparams.end()) type = tp->second;
      int64_t elem = type_size(type);
      if (is(e - 1, ">") && e >= 4) {  // atomic<T>
        std::string inner = text(e - 2);
        auto tp2 = tparams.find(inner);
        if (tp2 != tparams.end()) inner = tp2->second;
        elem = type_size(inner);
      }
      if (elem < 0) continue;  // unknown type: not counted
      int64_t count = 1;
      size_t j = e + 1;
      bool ok = true;
      while (is(j, "[")) {
        std::vector<Token> dim(t_.begin() + long(j + 1), t_.begin() + long(match_[j]));
        size_t z = 0;
        int64_t d = 0;
        if (!eval(dim, z, d, tparams, locals, 0) || z != dim.size()) {
          ok = false;
          break;
        }
        count *= d;
        j = match_[j] + 1;
      }
      if (ok) total += elem * count;
    }
    return uint32_t(std::min<int64_t>(total, INT32_MAX));
  }

  bool build_kernels(TranslateResult &out) {
    for (const KernelDecl &kd : kernels_) {
      bool sync = false, lane_id = false, sync_other = false;
      reach(kd.body_open, kd.body_close, sync, lane_id, sync_other);
      auto add = [&](const std::string &host_name, const std::string &call, const std::map<std::string, std::string> &tparams, int line) -> bool {
        for (auto &k : out.kernels)
          if (k.host_name == host_name) return error(line, "two kernels are named '" + host_name + "'");
        if (!opt_.only_kernels.empty() &&
            std::find(opt_.only_kernels.begin(), opt_.only_kernels.end(), host_name) == opt_.only_kernels.end())
          return true;
        KernelInfo ki;
        ki.host_name = host_name;
        // Fully qualified: a kernel named like a metal:: function (divide, select, ...) is not
        // ambiguous with it (qualified lookup ignores the prelude's using-directive).
        ki.call_expr = call.rfind("::", 0) == 0 ? call : "::" + call;
        ki.params = kd.params;
        ki.needs_fibers = sync;
        // In work-item form a kernel that only takes thread_elements() (no matrix operation, so
        // nothing to gather) runs as a plain loop.
        if (opt_.workitem && !wi_sync_.count(kd.name) && !sync_other) ki.needs_fibers = false;
        if (ki.needs_fibers) ki.workitem = kernel_workitem(kd.name, ki.fiber_reason);
        ki.track_attrs = lane_id || opt_.checked;
        ki.max_threads = kd.max_threads;
        ki.static_tg_bytes = static_tg_size(kd.body_open, kd.body_close, tparams);
        out.kernels.push_back(ki);
        return true;
      };
      if (!kd.is_template) {
        if (!add(kd.host_name.empty() ? kd.name : kd.host_name, kd.qualified, {}, kd.line)) return false;
        continue;
      }
      for (const Instantiation &in : insts_) {
        if (in.func_name != kd.name) continue;
        std::map<std::string, std::string> tparams;
        for (size_t a = 0; a < kd.template_params.size() && a < in.template_args.size(); ++a)
          tparams[kd.template_params[a]] = in.template_args[a];
        std::string call = in.call_expr;
        if (call.find("::") == std::string::npos && kd.qualified != kd.name)
          call = kd.qualified.substr(0, kd.qualified.size() - kd.name.size()) + call;
        if (!add(in.host_name, call, tparams, in.line)) return false;
      }
    }
    for (const Instantiation &in : insts_) {
      bool found = false;
      for (auto &kd : kernels_)
        if (kd.name == in.func_name) found = true;
      if (!found) return error(in.line, "instantiation names '" + in.func_name + "', which is not a kernel template in this source");
    }
    out.constants = fconsts_;
    return true;
  }

  static std::string attr_args(const std::string &a) {
    auto v3 = [](const std::string &p) { return p + "[0], " + p + "[1], " + p + "[2]"; };
    if (a == "thread_position_in_grid") return v3("a.grid");
    if (a == "thread_position_in_threadgroup") return v3("a.local");
    if (a == "threadgroup_position_in_grid") return v3("G->id");
    if (a == "threads_per_threadgroup") return v3("G->size");
    if (a == "dispatch_threads_per_threadgroup") return v3("L->threads_per_threadgroup");
    if (a == "threads_per_grid") return v3("L->threads_per_grid");
    // The stage-in region (MSL table 5.8): the API subset has no setStageInRegion, so it is the
    // dispatched grid, from the origin.
    if (a == "grid_size") return v3("L->threads_per_grid");
    if (a == "grid_origin") return "0u, 0u, 0u";
    if (a == "threadgroups_per_grid") return v3("L->threadgroups_per_grid");
    if (a == "thread_index_in_threadgroup") return "a.index, 0u, 0u";
    if (a == "thread_index_in_simdgroup") return "a.lane_id, 0u, 0u";
    if (a == "simdgroup_index_in_threadgroup") return "a.simd_id, 0u, 0u";
    if (a == "threads_per_simdgroup" || a == "thread_execution_width") return "32u, 0u, 0u";
    if (a == "simdgroups_per_threadgroup") return "(G->nthreads + 31u) / 32u, 0u, 0u";
    if (a == "dispatch_simdgroups_per_threadgroup")
      return "(L->threads_per_threadgroup[0] * L->threads_per_threadgroup[1] * L->threads_per_threadgroup[2] + 31u) / 32u, 0u, 0u";
    if (a == "thread_index_in_quadgroup") return "a.index & 3u, 0u, 0u";
    if (a == "quadgroup_index_in_threadgroup") return "a.index >> 2, 0u, 0u";
    if (a == "quadgroups_per_threadgroup") return "(G->nthreads + 3u) / 4u, 0u, 0u";
    return "(L->threads_per_threadgroup[0] * L->threads_per_threadgroup[1] * L->threads_per_threadgroup[2] + 3u) / 4u, 0u, 0u";
  }

  void emit(TranslateResult &out) {
    std::string s;
    // The language version the prelude's checks read (mgsim_types.h: language_version).
    s += "namespace mgsim { template <> struct language_version_of<program> { static constexpr unsigned value = " +
         std::to_string(opt_.language_version) + "; }; }\n";
    // Checked work-item units call one out-of-line check per access once optimised (mgsim_exec.h).
    if (opt_.checked && wi_written_)
      s += "namespace mgsim { template <> struct check_outline_of<program> { static constexpr bool value = true; }; }\n";
    // Work-item regions publish each lane's attributes only when something reads them (checked-mode
    // reports, thread_elements() and simd_lane_id()).
    bool track = opt_.checked;
    for (const KernelDecl &kd : kernels_) {
      bool sync = false, lane_id = false, other = false;
      reach(kd.body_open, kd.body_close, sync, lane_id, other);
      track = track || lane_id;
    }
    s += std::string("#define MGWI_TRACK ") + (track ? "true" : "false") + "\n";
    s += "#line 1 \"program_source\"\n";
    for (size_t i = 0; i < t_.size(); ++i) {
      s += t_[i].pre;
      s += prefix_[i];
      s += replaced_[i] ? repl_[i] : t_[i].text;
      s += suffix_[i];
    }
    s += "\n#line 1 \"mgsim_generated\"\n";
    // Function constants: loaded from the dispatch into this thread's copies.
    s += "static inline void mgsim_fc_load(const mgsim::abi::launch *L) {\n  (void)L;\n";
    if (!fconsts_.empty()) {
      s += "  if (!L->fc_values) return;\n";
      for (size_t i = 0; i < fconsts_.size(); ++i) {
        const auto &fc = fconsts_[i];
        s += "  memcpy((void *)&" + fc.name + ", L->fc_values + " + std::to_string(16 * i) + ", sizeof(" + fc.name + "));\n";
        s += "  mgsim_fcdef_" + fc.name + " = L->fc_defined[" + std::to_string(i) + "] != 0;\n";
      }
      for (auto &[name, init] : derived_consts_) s += "  " + name + " = " + init + ";\n";
    }
    s += "}\n";
    std::string table;
    for (size_t k = 0; k < out.kernels.size(); ++k) {
      const KernelInfo &ki = out.kernels[k];
      std::string ns = "mgsim_k" + std::to_string(k);
      s += "namespace " + ns + " {\n";
      s += "using F = std::remove_reference_t<decltype(" + ki.call_expr + ")>;\n";
      s += "template <unsigned I> using P = typename mgsim::fn_params<F>::template at<I>;\n}\n";
      std::string binds, args;
      uint32_t bmask = 0, tmask = 0;
      std::string elem[31], ref[31], tgelem[31], ro = "0u";
      for (int b = 0; b < 31; ++b) elem[b] = ref[b] = tgelem[b] = "0";
      for (size_t p = 0; p < ki.params.size(); ++p) {
        const KernelParam &kp = ki.params[p];
        std::string P = ns + "::P<" + std::to_string(p) + ">";
        std::string bn = "b" + std::to_string(p);
        if (kp.kind == ParamKind::Buffer) {
          binds += "  " + P + " " + bn + " = mgsim::bind_buffer<" + P + ">(L, G, " + std::to_string(kp.index) + "u);\n";
          bmask |= 1u << kp.index;
          elem[kp.index] = "mgsim::elem_size<" + P + ">::value";
          ref[kp.index] = "mgsim::elem_size<" + P + ">::ref";
          ro += " | (mgsim::elem_size<" + P + ">::ro << " + std::to_string(kp.index) + ")";
          args += (args.empty() ? "" : ", ") + bn;
        } else if (kp.kind == ParamKind::Threadgroup) {
          binds += "  " + P + " " + bn + " = mgsim::bind_threadgroup<" + P + ">(G, " + std::to_string(kp.index) + "u);\n";
          tmask |= 1u << kp.index;
          tgelem[kp.index] = "mgsim::elem_size<" + P + ">::value";
          args += (args.empty() ? "" : ", ") + bn;
        } else {
          args += std::string(args.empty() ? "" : ", ") + "mgsim::attr<" + P + ">(" + attr_args(kp.attribute) + ")";
        }
      }
      std::string plain = "nullptr", lanef = "nullptr", wif = "nullptr";
      if (ki.workitem && !tier0_fibers_) {
        wif = "&" + ns + "_wi";
        s += wi_entry(ki, ns, binds);
      } else if (!ki.needs_fibers) {
        plain = "&" + ns + "_plain";
        // Checked mode: MGSIM_CHECKED_PLAIN flattens the kernel into the loop when optimising
        // (mgsim_exec.h), so its checked pointers are not passed by value per thread.
        s += std::string("extern \"C\" MGSIM_EXPORT ") + (opt_.checked ? "MGSIM_CHECKED_PLAIN " : "") + "void " + ns +
             "_plain(const mgsim::abi::launch *L, const mgsim::abi::group *G) {\n";
        s += "  mgsim_fc_load(L);\n" + binds;
        s += std::string("  mgsim::run_group_plain(L, G, ") + (ki.track_attrs ? "true" : "false") +
             ", [&](const mgsim::abi::thread_attrs &a) __attribute__((always_inline)) {\n";
        s += "    (void)a;\n    " + ki.call_expr + "(" + args + ");\n  });\n}\n";
      } else {
        lanef = "&" + ns + "_lane";
        s += "extern \"C\" MGSIM_EXPORT void " + ns + "_lane(mgsim::abi::lane *self) {\n";
        s += "  const mgsim::abi::launch *L = self->L;\n  const mgsim::abi::group *G = self->G;\n  (void)G;\n";
        s += "  mgsim_fc_load(L);\n  mgsim::enter_lane(self);\n  const mgsim::abi::thread_attrs &a = self->a;\n  (void)a;\n" + binds;
        s += "  " + ki.call_expr + "(" + args + ");\n}\n";
      }
      std::string reason = "nullptr";  // also for a tier-0 stand-in (fibers for a work-item kernel)
      if (ki.needs_fibers && !ki.workitem) {
        reason = "\"";
        for (char ch : ki.fiber_reason) {
          if (ch == '"' || ch == '\\') reason += '\\';
          if (ch == '\n') reason += "\\n";
          else reason += ch;
        }
        reason += "\"";
      }
      table += "  {\"" + ki.host_name + "\", " + plain + ", " + lanef + ", " + wif + ", " + reason + ", " +
               (ki.needs_fibers ? "1u" : "0u") + ", " +
               std::to_string(ki.max_threads) + "u, " + std::to_string(ki.static_tg_bytes) + "u, " +
               std::to_string(bmask) + "u, " + std::to_string(tmask) + "u,\n   {";
      for (int b = 0; b < 31; ++b) table += (b ? ", " : "") + elem[b];
      table += "},\n   {";
      for (int b = 0; b < 31; ++b) table += (b ? ", " : "") + ref[b];
      table += "},\n   {";
      for (int b = 0; b < 31; ++b) table += (b ? ", " : "") + tgelem[b];
      table += "}, " + ro + "},\n";
    }
    s += "static const mgsim::abi::kernel_desc mgsim_kernel_table[] = {\n" + table;
    if (out.kernels.empty()) s += "  {\"\", nullptr, nullptr, nullptr, nullptr, 0u, 0u, 0u, 0u, 0u, {}, {}, {}, 0u},\n";
    s += "};\n";
    s += "static const mgsim::abi::fconst_desc mgsim_fconst_table[] = {\n";
    for (auto &fc : fconsts_)
      s += "  {\"" + fc.name + "\", " + std::to_string(fc.index) + ", " + std::to_string(fc.mtl_type) + "u, sizeof(" + fc.name + ")},\n";
    if (fconsts_.empty()) s += "  {\"\", -1, 0u, 0u},\n";
    s += "};\n";
    s += "extern \"C\" MGSIM_EXPORT const mgsim::abi::module_desc *mgsim_module(void) {\n";
    s += "  static const mgsim::abi::module_desc d = {mgsim::abi::kVersion, " + std::to_string(out.kernels.size()) +
         "u, mgsim_kernel_table, " + std::to_string(fconsts_.size()) + "u, mgsim_fconst_table};\n  return &d;\n}\n";
    out.cpp = std::move(s);
    out.workitem = wi_written_;
    out.tier0_fibers = wi_written_ && tier0_fibers_;
  }

  // The work-item entry of kernel ki: binds its parameters (buffers and threadgroup memory are the
  // same in every lane, attributes per lane) and runs its work-item form over the threadgroup.
  std::string wi_entry(const KernelInfo &ki, const std::string &ns, const std::string &binds) {
    (void)0;
    // call_expr = qualification, name, template arguments.
    const std::string &ce = ki.call_expr;
    size_t lt = ce.find('<');
    const std::string head = lt == std::string::npos ? ce : ce.substr(0, lt);
    const std::string targs = lt == std::string::npos ? "" : ce.substr(lt);
    const size_t cut = head.rfind("::");
    const std::string qual = cut == std::string::npos ? "" : head.substr(0, cut + 2);
    const std::string name = cut == std::string::npos ? head : head.substr(cut + 2);
    std::string s = "extern \"C\" MGSIM_EXPORT void " + ns +
                    "_wi(const mgsim::abi::launch *L, const mgsim::abi::group *G, mgsim::abi::wi_ctx *mgwi_cp) {\n";
    s += "  (void)G;\n  mgsim_fc_load(L);\n  mgsim::wi::ctx &mgwi_c = *mgwi_cp;\n";
    s += "  mgsim::tls.lane = nullptr;\n  mgsim::tls.launch = L;\n  mgsim::tls.group = G;\n  mgwi_c.tls_attrs = &mgsim::tls.attrs;\n";
    s += "  mgsim::publish_attrs(G);\n";
    s += "  mgwi_c.track = MGWI_TRACK ? 1u : 0u;\n" + binds;
    // Buffers, threadgroup memory and the attributes every thread of the group shares are one value
    // for a parameter the kernel only reads (mgsim_wi.h uarg); the others are filled per lane.
    std::string fills, dv, args, lanes, uni, all_uniform;
    for (size_t p = 0; p < ki.params.size(); ++p) {
      const KernelParam &kp = ki.params[p];
      const std::string P = ns + "::P<" + std::to_string(p) + ">", id = std::to_string(p);
      dv += std::string(p ? ", " : "") + "::std::declval<" + P + ">()";
      std::string value = "b" + id;
      if (kp.kind == ParamKind::Attribute) value = "mgsim::attr<" + P + ">(" + attr_args(kp.attribute) + ")";
      const bool uniform = kp.kind != ParamKind::Attribute || attr_args(kp.attribute).find("a.") == std::string::npos;
      lanes += "  MGWI_LANES(mgwi_a" + id + ", ::mgsim::wi::param_t<mgwi_o, " + id + ">);\n";
      const std::string fill = "mgwi_a" + id + "[mgwi_l] = ::mgsim::wi::pass<mgwi_o, " + id + ">(" + value + "); ";
      if (uniform) {
        const std::string skip = "::mgsim::wi::by_ro<mgwi_o, " + id + ">";
        uni += "  auto mgwi_u" + id + " = [&]() MGWI_INL -> decltype(auto) { return (" + value + "); };\n";
        fills += "if constexpr (!" + skip + ") { " + fill + "} ";
        all_uniform += (all_uniform.empty() ? "" : " && ") + skip;
        args += ", ::mgsim::wi::uarg<mgwi_o, " + id + ">(mgwi_u" + id + ", mgwi_a" + id + ")";
      } else {
        fills += fill;
        all_uniform += std::string(all_uniform.empty() ? "" : " && ") + "false";
        args += ", mgwi_a" + id;
      }
    }
    s += "  using mgwi_o = decltype(" + qual + "mgwi_probe_" + name + targs + "(" + dv + "));\n" + lanes + uni;
    if (!fills.empty())
      s += "  if constexpr (!(" + all_uniform + ")) {\n  MGWI_EACH { const mgsim::abi::thread_attrs &a = mgwi_c.attrs[mgwi_l]; (void)a; " +
           fills + "} MGWI_EACH_END\n  }\n";
    s += "  MGWI_RESULT(mgwi_r, void);\n";
    s += "  " + qual + "mgwi_" + name + "(mgwi_o{}, mgwi_c, mgwi_r" + args + ");\n";
    s += "  if (mgwi_c.track) mgsim::tls.attrs = nullptr;\n}\n";
    return s;
  }
};

}  // namespace

bool translate_msl(const std::string &source, const TranslateOptions &options, TranslateResult &out) {
  Translator t(source, options);
  return t.run(out);
}

}  // namespace mgsim
