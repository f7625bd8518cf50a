// Work-item form: splits a function at its syncs into per-lane regions (see workitem.h and
// prelude/mgsim_wi.h).
//
// The function's rewritten body is lexed again and parsed into statements. A statement without a
// sync is per-lane code: consecutive ones form a region, emitted as one lambda that each() runs for
// every active lane, with the function's per-lane variables renamed to their storage
// (`x` → `mgwi_v3_x[mgwi_l]`). A statement with a sync is emitted at work-item level: the syncs in
// its expressions are hoisted (arguments captured per lane, the operation run over all lanes, the
// call replaced by its per-lane result), and if / for / while / do around syncs become mask
// operations (prelude branch / loop_scope). A declaration whose variable is used after a later sync
// of its block gets per-lane storage (`lanes<T>`); others stay local to their region.
#include "workitem.h"

#include <map>
#include <unordered_set>

#include "lex.h"

namespace mgsim {

bool wi_is_collective(const std::string &s) {
  static const std::unordered_set<std::string> names = {
      "simd_sum", "simd_product", "simd_max", "simd_min", "simd_and", "simd_or", "simd_xor",
      "simd_prefix_inclusive_sum", "simd_prefix_exclusive_sum", "simd_prefix_inclusive_product",
      "simd_prefix_exclusive_product", "simd_shuffle", "simd_shuffle_xor", "simd_shuffle_up",
      "simd_shuffle_down", "simd_shuffle_rotate_up", "simd_shuffle_rotate_down", "simd_broadcast",
      "simd_broadcast_first", "simd_all", "simd_any", "simd_ballot", "simd_is_first",
      "simd_active_threads_mask"};
  return names.count(s) > 0;
}
bool wi_is_matrix_op(const std::string &s) {
  return s == "simdgroup_load" || s == "simdgroup_store" || s == "simdgroup_multiply" ||
         s == "simdgroup_multiply_accumulate";
}
bool wi_is_barrier(const std::string &s) { return s == "threadgroup_barrier" || s == "simdgroup_barrier"; }

namespace {

bool is_keyword(const std::string &s) {
  static const std::unordered_set<std::string> k = {
      "return", "if", "else", "for", "while", "do", "switch", "case", "default", "break", "continue",
      "goto", "sizeof", "new", "delete", "throw", "this", "true", "false", "nullptr", "operator",
      "try", "catch", "typedef", "using", "static_assert", "asm", "__asm__", "alignof", "decltype",
      "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "co_return", "co_await"};
  return k.count(s) > 0;
}

bool is_assign_op(const std::string &s) {
  return s == "=" || s == "+=" || s == "-=" || s == "*=" || s == "/=" || s == "%=" || s == "&=" || s == "|=" ||
         s == "^=" || s == "<<=" || s == ">>=";
}

struct Declarator {
  std::string name;
  size_t name_at = 0;
  bool ref = false;
  std::string ptr;   // pointer operators between the type and the name (the reference's & excluded)
  std::string dims;  // array dimensions
  size_t init_b = 0, init_e = 0;  // the initializer: `= ...`, `(...)` or `{...}`; empty if none
};

struct Stmt {
  enum Kind { Compound, If, For, RangeFor, While, Do, Switch, Return, Break, Continue, Decl, Uniform, Expr, Empty, Other };
  Kind kind = Empty;
  size_t b = 0, e = 0;            // tokens [b, e)
  size_t c0 = 0, c1 = 0;          // condition (if / for / while / do / switch), range-for header
  size_t s0 = 0, s1 = 0;          // for: step
  bool constexpr_if = false;
  std::vector<Stmt> kids;         // compound: children; if: then [, else]; for: init, body; loops: body
  // Decl
  std::string type;               // the declared type as written, without storage-class specifiers
  bool is_auto = false;
  bool has_const = false;
  std::vector<Declarator> decls;
  bool sync = false;
};

struct Call {
  size_t qs = 0;        // first token of the qualified name
  size_t name = 0;      // the function name
  size_t targs_b = 0, targs_e = 0;  // <...> (exclusive of nothing: [targs_b, targs_e) is the text), empty if none
  size_t open = 0, close = 0;
  std::vector<std::pair<size_t, size_t>> args;
};

class Gen {
 public:
  Gen(const WiFunction &f, const std::function<bool(const std::string &)> &user_sync,
      const std::function<WiLine(int)> &line_of)
      : f_(f), user_sync_(user_sync), line_of_(line_of) {}

  bool run(WiOutput &out) {
    std::vector<Token> all = lex(f_.body);
    for (Token &tk : all)
      if (tk.kind != Tok::PP) t_.push_back(tk);
    if (t_.empty() || t_.back().kind != Tok::End) t_.push_back(Token{Tok::End, "", "", 0});
    if (!match_brackets()) return fail(out, "unbalanced brackets");
    std::vector<Stmt> body;
    if (!parse_block(0, t_.size() - 1, body)) return fail(out, why_);
    for (Stmt &s : body) mark_sync(s);
    if (!why_.empty()) return fail(out, why_);
    for (auto &tp : f_.tparams) {
      uniform_.insert(tp.name);
      constants_.insert(tp.name);
    }
    // Names whose address may outlive a region: after a unary &, or bound by a reference declaration.
    for (size_t k = 0; k + 1 < t_.size(); ++k) {
      if (is(k, "&") && ident(k + 1) && (k == 0 || t_[k - 1].kind == Tok::Punct || is_keyword(text(k - 1))) &&
          !is(k - 1, ")") && !is(k - 1, "]"))
        exposed_.insert(text(k + 1));
      if (is(k, "&") && ident(k + 1) && is(k + 2, "=") && ident(k + 3)) exposed_.insert(text(k + 3));
    }

    std::string pro;
    scopes_.emplace_back();
    // Parameters: the caller's per-lane argument storage (one lanes<P> per parameter, converted
    // by the caller); a parameter with a default that was not passed gets its own. A by-value
    // parameter the body never modifies is read-only: read through a const view (so a write the
    // analysis missed does not compile), which lets the caller pass its own variable's storage or
    // one value for a uniform argument (ov's RO mask; mgsim_wi.h darg / uarg).
    std::string ptypes, pdecls, vparams;
    unsigned long long ro = 0;
    for (size_t i = 0; i < f_.params.size(); ++i) {
      const WiParam &p = f_.params[i];
      const std::string n = std::to_string(i);
      const std::string ty = strip_top_const(p.ref ? strip_refs(p.type) : p.type, p.ref);
      const std::string st = p.ref ? ty + "*" : ty;
      ptypes += (i ? ", " : "") + (p.ref ? "::mgsim::wi::ref_param<" + ty + ">" : ty);
      const bool read_only = !p.ref && p.def.empty() && i < 64 && param_read_only(p);
      if (read_only) ro |= 1ull << i;
      if (p.def.empty()) {
        vparams += ", class MGV" + n;
        pdecls += ", MGV" + n + " mgwi_a" + n;
      } else {
        pdecls += ", ::mgsim::wi::view<" + st + "> mgwi_a" + n + " = {}";
      }
      // A kernel's parameter every thread of the group shares, and no lane modifies: one value
      // (uarg), or for a const reference the same address in every lane.
      if (f_.hoist_uniform && i < f_.uniform_params.size() && f_.uniform_params[i] && p.def.empty() &&
          (p.ref ? const_pointee(strip_refs(p.type), false) : read_only))
        uniform_params_["mgwi_p" + n] = !p.ref && !const_pointee(p.type, true);
      if (read_only) {
        pro += "const auto mgwi_p" + n + " = ::mgsim::wi::ro_view(mgwi_a" + n + ");\n";
        ro_storage_.insert("mgwi_p" + n);
      } else if (p.def.empty()) {
        pro += "const auto mgwi_p" + n + " = mgwi_a" + n + ";\n";
      } else {
        pro += "MGWI_LANES(mgwi_d" + n + ", " + st + ");\n";
        pro += "if (!mgwi_a" + n + ".p) MGWI_EACH { mgwi_d" + n + "[mgwi_l] = " +
               (p.ref ? "&(" + p.def + ")" : "::mgsim::wi::conv<" + ty + ">(" + p.def + ")") + "; } MGWI_EACH_END\n";
        pro += "const auto mgwi_p" + n + " = mgwi_a" + n + ".p ? mgwi_a" + n + " : mgwi_d" + n + ";\n";
      }
      if (!p.name.empty()) scopes_.back()[p.name] = Var{p.ref ? Var::LaneRef : Var::Lane, "mgwi_p" + n};
    }

    o_.clear();
    gen_block(body);
    if (!why_.empty()) return fail(out, why_);

    // The probe: f's template header and parameters; its return type names the variant.
    std::string targs;
    for (size_t i = 0; i < f_.tparams.size(); ++i) {
      const auto &tp = f_.tparams[i];
      targs += (i ? ", " : "") + (tp.type ? tp.name : "std::integral_constant<" + tp.nttp_type + ", " + tp.name + ">");
    }
    const std::string tag = "::mgsim::wi::ov<" + std::to_string(f_.id) + "u, ::mgsim::wi::targs<" + targs +
                            ">, ::mgsim::wi::params<" + ptypes + ">, " + std::to_string(ro) + "ull>";
    std::string code;
    code += "\n#line 1 \"mgsim_workitem\"\n";
    if (f_.templated) code += f_.template_header + " ";
    code += std::string(f_.is_static ? "static " : "") + tag + " mgwi_probe_" + f_.name + "(" + f_.params_text + ");\n";
    std::string th = "template <";
    for (const auto &tp : f_.tparams) th += tp.decl + ", ";
    th += "class MGR" + vparams + ">";
    // Not forced inline (the original may be): a variant is a loop nest, and inlining every one into
    // its callers multiplies the code the compiler optimises.
    code += th + "\n" + std::string(f_.is_static ? "static " : "") + "inline void mgwi_" + f_.name + "(" + tag +
            ", ::mgsim::wi::ctx &mgwi_c, MGR &mgwi_ret" + pdecls + ") {\n(void)mgwi_ret;\nconstexpr uint32_t mgwi_l = 0;\n(void)mgwi_l;\n";
    code += std::string("::mgsim::wi::fn_scope mgwi_fn(mgwi_c, ") + (f_.kernel ? "true" : "false") + ");\n";
    code += pro + o_ + "\n}\n";
    out.code = code;
    out.calls = calls_;
    return true;
  }

 private:
  struct Var {
    // Lane: per-lane storage; LaneRef: per-lane pointer (a reference variable); Local: a name
    // that shadows per-lane ones (region-local or shared); Uniform: the control variable of a loop
    // every lane runs alike, or a uniform declaration, one scalar at work-item level.
    enum K { Lane, LaneRef, Local, Uniform } k;
    std::string storage;
    // A uniform declaration's: a const object (passed to calls as it is); a pointer to memory the
    // kernel may write (no call with it is uniform).
    bool is_const = false, writable = false;
  };
  // Breakable constructs between a region statement and its region: 'L' loop, 'S' switch.
  struct Region {
    std::vector<char> local;
    bool in_lambda = false;
  };

  const WiFunction &f_;
  const std::function<bool(const std::string &)> &user_sync_;
  const std::function<WiLine(int)> &line_of_;
  std::vector<Token> t_;
  std::vector<size_t> m_;
  std::string why_;
  std::set<std::string> calls_;
  std::string o_;
  int tmp_ = 0;
  std::string last_line_;
  std::vector<std::map<std::string, Var>> scopes_;
  std::vector<int> wi_loops_;
  std::set<std::string> uniform_;
  // Hoisted calls: first token → (one past the last token, replacement text).
  std::map<size_t, std::pair<size_t, std::string>> subst_;
  // Inside a region: the per-lane variables it uses, cached in locals (storage → local name).
  std::map<std::string, std::string> *cache_ = nullptr;
  std::set<std::string> *written_ = nullptr;
  std::string region_end_;  // the label ending the current region's per-lane code
  // Names whose address may outlive a region (unary &, reference initialisers): never cached.
  std::set<std::string> exposed_;
  // Threadgroup arrays (the translator's `static thread_local T mgsim_tg_x[N]`) and their aliases.
  std::set<std::string> tg_arrays_, tg_array_aliases_;
  // Storage of read-only parameters (const views: cached const, never stored back).
  std::set<std::string> ro_storage_;
  // Names every lane shares whose value is a constant: template parameters, constexpr and const
  // declarations initialised from constants.
  std::set<std::string> constants_;
  // Uniform kernel parameters: storage name → a pointer to memory the kernel may write.
  std::map<std::string, bool> uniform_params_;
  // Is the type (a pointer's, or with `pointer` false the object's own) const-qualified? For a
  // pointer: a `const` at the top level between the last '*' but one and the last '*'.
  static bool const_pointee(const std::string &type, bool pointer) {
    // The '*' and `const` tokens at the top level (not in template arguments or parentheses).
    std::vector<Token> v = lex(type);
    std::vector<bool> star;  // per top-level '*' or const: whether it is a '*'
    int depth = 0;
    for (size_t i = 0; i + 1 < v.size(); ++i) {
      if (v[i].text == "<" || v[i].text == "(") ++depth;
      if (v[i].text == ">" || v[i].text == ")") --depth;
      if (depth == 0 && (v[i].text == "*" || v[i].text == "const")) star.push_back(v[i].text == "*");
    }
    size_t last = SIZE_MAX, prev = SIZE_MAX;  // positions in `star` of the last two '*'
    for (size_t i = 0; i < star.size(); ++i)
      if (star[i]) prev = last, last = i;
    // The object's own const: after any '*'. A pointee's: between the last '*' but one and the last.
    const size_t lo = pointer ? prev : last, hi = pointer ? last : star.size();
    if (pointer && last == SIZE_MAX) return true;  // not a pointer: nothing to write through
    for (size_t i = lo == SIZE_MAX ? 0 : lo + 1; i < hi; ++i)
      if (!star[i]) return true;
    return false;
  }

  // Does the body modify parameter p (by value)? Assigned, incremented, its address taken, a member
  // assigned or a member function called; for a non-pointer, an element assigned too. Passing it
  // to a function is not counted: the variant reads it through a const view, so a non-const
  // reference binding it does not compile (and the library falls back to fibers, exactly).
  bool param_read_only(const WiParam &p) const {
    if (p.name.empty()) return true;
    if (exposed_.count(p.name)) return false;
    const bool pointer = p.type.find('*') != std::string::npos;
    for (size_t k = 0; k + 1 < t_.size(); ++k) {
      if (!ident(k) || text(k) != p.name) continue;
      if (k > 0 && (is(k - 1, ".") || is(k - 1, "->") || is(k - 1, "::"))) continue;
      if (k > 0 && (is(k - 1, "++") || is(k - 1, "--") || is(k - 1, "&"))) return false;
      size_t j = k + 1;
      for (;;) {
        if (is(j, ".") && ident(j + 1)) {
          j += 2;
        } else if (!pointer && is(j, "[") && m_[j] != SIZE_MAX) {
          j = m_[j] + 1;
        } else {
          break;
        }
      }
      if (t_[j].kind == Tok::Punct && (is_assign_op(text(j)) || is(j, "++") || is(j, "--"))) return false;
      if (is(j, "(")) return false;  // a (member) function call
    }
    return true;
  }

  bool fail(WiOutput &out, const std::string &why) {
    out.reason = why.empty() ? "unsupported construct" : why;
    return false;
  }
  void unsupported(size_t at, const std::string &what) {
    if (!why_.empty()) return;
    WiLine w = line_of_(f_.first_line + (at < t_.size() ? t_[at].line : 1) - 1);
    why_ = what + " (" + w.file + ":" + std::to_string(w.line) + ", in '" + f_.name + "')";
  }

  bool is(size_t i, const char *s) const {
    return i < t_.size() && t_[i].kind != Tok::End && t_[i].kind != Tok::String && t_[i].text == s;
  }
  bool ident(size_t i) const { return i < t_.size() && t_[i].kind == Tok::Ident; }
  const std::string &text(size_t i) const { return t_[i].text; }

  bool match_brackets() {
    m_.assign(t_.size(), SIZE_MAX);
    std::vector<size_t> st;
    for (size_t i = 0; i < t_.size(); ++i) {
      if (t_[i].kind != Tok::Punct) continue;
      const std::string &s = t_[i].text;
      if (s == "(" || s == "[" || s == "{") {
        st.push_back(i);
      } else if (s == ")" || s == "]" || s == "}") {
        const char want = s == ")" ? '(' : s == "]" ? '[' : '{';
        if (st.empty() || t_[st.back()].text[0] != want) return false;
        m_[st.back()] = i;
        m_[i] = st.back();
        st.pop_back();
      }
    }
    return st.empty();
  }

  // --- parsing ------------------------------------------------------------------------------------

  // The end (one past ';') of a simple statement starting at i.
  size_t simple_end(size_t i, size_t limit) const {
    for (size_t k = i; k < limit; ++k) {
      if ((is(k, "(") || is(k, "[") || is(k, "{")) && m_[k] != SIZE_MAX) {
        k = m_[k];
        continue;
      }
      if (is(k, ";")) return k + 1;
    }
    return limit;
  }

  bool parse_block(size_t b, size_t e, std::vector<Stmt> &out) {
    size_t i = b;
    while (i < e) {
      Stmt s;
      size_t n = parse_stmt(i, e, s);
      if (n <= i) {
        unsupported(i, "cannot parse the statement");
        return false;
      }
      out.push_back(std::move(s));
      i = n;
    }
    return why_.empty();
  }

  size_t parse_sub(size_t i, size_t limit, Stmt &parent) {
    Stmt s;
    size_t n = parse_stmt(i, limit, s);
    parent.kids.push_back(std::move(s));
    return n;
  }

  size_t parse_stmt(size_t i, size_t limit, Stmt &s) {
    s.b = i;
    if (i >= limit) return limit;
    if (is(i, "{")) {
      s.kind = Stmt::Compound;
      const size_t close = m_[i];
      if (close == SIZE_MAX || close >= limit) return limit;
      parse_block(i + 1, close, s.kids);
      s.e = close + 1;
      return s.e;
    }
    if (is(i, "if")) {
      s.kind = Stmt::If;
      size_t k = i + 1;
      if (is(k, "constexpr")) {
        s.constexpr_if = true;
        ++k;
      }
      if (!is(k, "(") || m_[k] == SIZE_MAX) return i;
      s.c0 = k + 1;
      s.c1 = m_[k];
      size_t n = parse_sub(s.c1 + 1, limit, s);
      if (is(n, "else")) n = parse_sub(n + 1, limit, s);
      s.e = n;
      return n;
    }
    if (is(i, "for")) {
      if (!is(i + 1, "(") || m_[i + 1] == SIZE_MAX) return i;
      const size_t open = i + 1, close = m_[i + 1];
      // The two ';' of the header at its own depth (none: a range-based for).
      std::vector<size_t> semis;
      size_t colon = SIZE_MAX;
      for (size_t k = open + 1; k < close; ++k) {
        if ((is(k, "(") || is(k, "[") || is(k, "{")) && m_[k] != SIZE_MAX) {
          k = m_[k];
          continue;
        }
        if (is(k, ";")) semis.push_back(k);
        if (is(k, ":") && colon == SIZE_MAX) colon = k;
      }
      if (semis.size() != 2) {
        s.kind = Stmt::RangeFor;
        s.c0 = open + 1;
        s.c1 = close;
        s.s0 = colon;
        s.e = parse_sub(close + 1, limit, s);
        return s.e;
      }
      s.kind = Stmt::For;
      Stmt init;
      if (semis[0] == open + 1) {
        init.kind = Stmt::Empty;
        init.b = open + 1;
        init.e = semis[0] + 1;
      } else {
        classify_simple(open + 1, semis[0] + 1, init);
      }
      s.kids.push_back(std::move(init));
      s.c0 = semis[0] + 1;
      s.c1 = semis[1];
      s.s0 = semis[1] + 1;
      s.s1 = close;
      s.e = parse_sub(close + 1, limit, s);
      return s.e;
    }
    if (is(i, "while")) {
      if (!is(i + 1, "(") || m_[i + 1] == SIZE_MAX) return i;
      s.kind = Stmt::While;
      s.c0 = i + 2;
      s.c1 = m_[i + 1];
      s.e = parse_sub(s.c1 + 1, limit, s);
      return s.e;
    }
    if (is(i, "do")) {
      s.kind = Stmt::Do;
      size_t n = parse_sub(i + 1, limit, s);
      if (!is(n, "while") || !is(n + 1, "(") || m_[n + 1] == SIZE_MAX) return i;
      s.c0 = n + 2;
      s.c1 = m_[n + 1];
      s.e = s.c1 + 1;
      if (is(s.e, ";")) ++s.e;
      return s.e;
    }
    if (is(i, "switch")) {
      if (!is(i + 1, "(") || m_[i + 1] == SIZE_MAX) return i;
      s.kind = Stmt::Switch;
      s.c0 = i + 2;
      s.c1 = m_[i + 1];
      s.e = parse_sub(s.c1 + 1, limit, s);
      return s.e;
    }
    if (is(i, "return")) {
      s.kind = Stmt::Return;
      s.e = simple_end(i, limit);
      return s.e;
    }
    if ((is(i, "break") || is(i, "continue")) && is(i + 1, ";")) {
      s.kind = is(i, "break") ? Stmt::Break : Stmt::Continue;
      s.e = i + 2;
      return s.e;
    }
    if (is(i, ";")) {
      s.kind = Stmt::Empty;
      s.e = i + 1;
      return s.e;
    }
    // Labels (`case X:`, `default:`, `name:`) stand alone; the statement after them is separate.
    if (is(i, "case") || is(i, "default") || (ident(i) && is(i + 1, ":") && !is(i + 2, ":"))) {
      size_t k = i;
      while (k < limit && !(is(k, ":") && !is(k + 1, ":") && !is(k - 1, ":"))) {
        if ((is(k, "(") || is(k, "[") || is(k, "{")) && m_[k] != SIZE_MAX) k = m_[k];
        ++k;
      }
      s.kind = Stmt::Other;
      s.e = k + 1;
      return s.e;
    }
    if (is(i, "goto") || is(i, "try") || is(i, "asm") || is(i, "__asm__")) {
      s.kind = Stmt::Other;
      s.e = is(i, "try") ? limit : simple_end(i, limit);
      return s.e;
    }
    classify_simple(i, simple_end(i, limit), s);
    return s.e;
  }

  // A statement [b, e) that ends with ';': a declaration, a uniform declaration or an expression.
  void classify_simple(size_t b, size_t e, Stmt &s) {
    s.b = b;
    s.e = e;
    s.kind = Stmt::Expr;
    if (is(b, "typedef") || is(b, "using") || is(b, "static_assert") || is(b, "struct") || is(b, "class") ||
        is(b, "enum") || is(b, "union")) {
      s.kind = Stmt::Uniform;
      return;
    }
    parse_decl(b, e - 1, s);
  }

  // Skips a balanced <...> from '<' at i; returns one past the closing '>' (or SIZE_MAX).
  size_t skip_angles(size_t i, size_t e) const {
    int depth = 0;
    for (size_t k = i; k < e; ++k) {
      if ((is(k, "(") || is(k, "[")) && m_[k] != SIZE_MAX) {
        k = m_[k];
        continue;
      }
      if (is(k, ";") || is(k, "{") || is(k, "}")) return SIZE_MAX;
      if (is(k, "<")) ++depth;
      if (is(k, ">")) {
        if (--depth == 0) return k + 1;
      }
    }
    return SIZE_MAX;
  }

  // In an initialiser, a '<' at i after a name opens a template argument list when a balanced '>'
  // closes it with no top-level '=' between and a call, braced list or '::' follows; then one past
  // the '>' (else SIZE_MAX). `int x = a < b, y = c > (d);` has an '=' inside: two declarators.
  size_t template_args_end(size_t i, size_t e) const {
    const size_t a = skip_angles(i, e);
    if (a == SIZE_MAX || !(is(a, "(") || is(a, "{") || is(a, "::"))) return SIZE_MAX;
    for (size_t k = i + 1; k + 1 < a; ++k) {
      if ((is(k, "(") || is(k, "[")) && m_[k] != SIZE_MAX) {
        k = m_[k];
        continue;
      }
      if (t_[k].kind == Tok::Punct && is_assign_op(text(k))) return SIZE_MAX;
    }
    return a;
  }

  // Parses [b, e) (e is the ';') as `specifiers type declarator [= init], ...`. Leaves s.kind as
  // Expr when it is not a declaration.
  void parse_decl(size_t b, size_t e, Stmt &s) {
    static const std::unordered_set<std::string> builtin = {"unsigned", "signed", "short", "long", "int",
                                                            "char", "float", "double", "bool", "void"};
    size_t k = b;
    bool st = false, cx = false, tl = false, cst = false;
    std::string type;
    auto add = [&](const std::string &x) { type += (type.empty() ? "" : " ") + x; };
    for (;;) {
      if (is(k, "static") || is(k, "extern")) { st = true; ++k; continue; }
      if (is(k, "constexpr")) { cx = true; ++k; continue; }
      if (is(k, "thread_local")) { tl = true; ++k; continue; }
      if (is(k, "const") || is(k, "volatile")) { cst = cst || is(k, "const"); add(text(k)); ++k; continue; }
      if (is(k, "register") || is(k, "inline") || is(k, "mutable")) { ++k; continue; }
      if ((is(k, "__attribute__") || is(k, "alignas")) && is(k + 1, "(") && m_[k + 1] != SIZE_MAX) {
        for (size_t j = k; j <= m_[k + 1]; ++j) add(text(j));
        k = m_[k + 1] + 1;
        continue;
      }
      break;
    }
    size_t tb = k;
    if (is(k, "auto")) {
      s.is_auto = true;
      ++k;
    } else if (is(k, "decltype") && is(k + 1, "(") && m_[k + 1] != SIZE_MAX) {
      k = m_[k + 1] + 1;
    } else if (ident(k) && builtin.count(text(k))) {
      while (ident(k) && builtin.count(text(k))) ++k;
    } else {
      if (is(k, "typename")) ++k;
      if (is(k, "::")) ++k;
      for (;;) {
        if (!ident(k) || is_keyword(text(k))) return;
        ++k;
        if (is(k, "<")) {
          size_t a = skip_angles(k, e);
          if (a == SIZE_MAX) return;
          k = a;
        }
        if (is(k, "::") && (ident(k + 1) || (is(k + 1, "template") && ident(k + 2)))) {
          k += is(k + 1, "template") ? 2 : 1;
          continue;
        }
        break;
      }
    }
    if (k == tb) return;
    for (size_t j = tb; j < k; ++j) add(text(j));
    while (is(k, "const") || is(k, "volatile")) {
      cst = cst || is(k, "const");
      add(text(k));
      ++k;
    }
    std::vector<Declarator> ds;
    while (k < e) {
      Declarator d;
      while (is(k, "*") || is(k, "&") || is(k, "&&") || is(k, "const") || is(k, "volatile") || is(k, "__restrict")) {
        if (is(k, "&") || is(k, "&&")) d.ref = true;
        else d.ptr += (d.ptr.empty() ? "" : " ") + text(k);
        ++k;
      }
      if (!ident(k) || is_keyword(text(k))) return;
      d.name = text(k);
      d.name_at = k;
      ++k;
      while (is(k, "[") && m_[k] != SIZE_MAX && m_[k] < e) {
        for (size_t j = k; j <= m_[k]; ++j) d.dims += text(j);
        k = m_[k] + 1;
      }
      if (is(k, "=")) {
        d.init_b = k;
        size_t j = k + 1;
        for (; j < e; ++j) {
          if ((is(j, "(") || is(j, "[") || is(j, "{")) && m_[j] != SIZE_MAX) {
            j = m_[j];
            continue;
          }
          // `f<T, U>(...)`: the commas of a template argument list do not end the initialiser.
          if (is(j, "<") && ident(j - 1)) {
            const size_t a = template_args_end(j, e);
            if (a != SIZE_MAX) {
              j = a - 1;
              continue;
            }
          }
          if (is(j, ",")) break;
        }
        d.init_e = j;
        k = j;
      } else if ((is(k, "(") || is(k, "{")) && m_[k] != SIZE_MAX && m_[k] < e) {
        d.init_b = k;
        d.init_e = m_[k] + 1;
        k = d.init_e;
      }
      ds.push_back(d);
      if (is(k, ",")) {
        ++k;
        continue;
      }
      if (k != e) return;
    }
    if (ds.empty()) return;
    s.kind = Stmt::Decl;
    s.type = type;
    s.has_const = cst;
    s.decls = ds;
    // Values every lane shares: static and thread_local objects (threadgroup memory), constants,
    // and the translator's alias of a threadgroup array (`auto &x = mgsim_tg_x;`).
    if (st || cx || tl) s.kind = Stmt::Uniform;
    if (ds.size() == 1 && ds[0].ref && ds[0].init_b && ds[0].init_e == ds[0].init_b + 2 &&
        text(ds[0].init_b + 1).rfind("mgsim_tg_", 0) == 0) {
      s.kind = Stmt::Uniform;
      // The alias of a threadgroup array: as an argument, its address (no memory is read).
      if (tg_arrays_.count(text(ds[0].init_b + 1))) tg_array_aliases_.insert(ds[0].name);
    }
    if ((st || tl) && ds.size() == 1 && !ds[0].dims.empty() && ds[0].name.rfind("mgsim_tg_", 0) == 0)
      tg_arrays_.insert(ds[0].name);
    // Checked mode's view of a threadgroup variable (`auto x = mgsim::impl::tg_view(...)`).
    if (ds.size() == 1 && !ds[0].ref && ds[0].init_b && is(ds[0].init_b + 1, "mgsim") && is(ds[0].init_b + 5, "tg_view"))
      s.kind = Stmt::Uniform;
    if (cst && s.kind == Stmt::Decl) {
      // A const integer initialised from constants only (an array bound, say) is uniform too.
      bool constant = true;
      for (const Declarator &d : ds) {
        if (!d.init_b || !d.ptr.empty() || d.ref) constant = false;
        for (size_t j = d.init_b; constant && j < d.init_e; ++j)
          if (ident(j) && !uniform_.count(text(j)) && text(j) != "sizeof") constant = false;
      }
      if (constant) {
        s.kind = Stmt::Uniform;
        for (const Declarator &d : ds) constants_.insert(d.name);
      }
    }
    if (cx)
      for (const Declarator &d : ds) constants_.insert(d.name);
    if (s.kind == Stmt::Uniform)
      for (const Declarator &d : ds) uniform_.insert(d.name);
  }

  // --- syncs --------------------------------------------------------------------------------------

  // Is there a call of a sync (prelude operation or user function with syncs) at token i?
  bool sync_call_at(size_t i) const {
    if (!ident(i)) return false;
    const std::string &n = text(i);
    if (!wi_is_prelude_sync(n) && !user_sync_(n)) return false;
    if (i > 0 && (is(i - 1, ".") || is(i - 1, "->"))) return false;
    return is(i + 1, "(") || is(i + 1, "<");
  }

  bool parse_call(size_t i, size_t e, Call &c) const {
    c.name = i;
    c.qs = i;
    while (c.qs >= 1 && is(c.qs - 1, "::")) {
      if (c.qs >= 2 && (ident(c.qs - 2) || is(c.qs - 2, ">"))) {
        if (is(c.qs - 2, ">")) {
          // Qualifier with template arguments: S<T>::f — walk back to the name before '<'.
          int depth = 0;
          size_t j = c.qs - 2;
          for (;; --j) {
            if (is(j, ">")) ++depth;
            if (is(j, "<") && --depth == 0) break;
            if (j == 0) return false;
          }
          if (j == 0 || !ident(j - 1)) return false;
          c.qs = j - 1;
        } else {
          c.qs -= 2;
        }
      } else {
        c.qs -= 1;
        break;
      }
    }
    size_t k = i + 1;
    if (is(k, "<")) {
      size_t a = skip_angles(k, e);
      if (a == SIZE_MAX) return false;
      c.targs_b = k;
      c.targs_e = a;
      k = a;
    }
    if (!is(k, "(") || m_[k] == SIZE_MAX) return false;
    c.open = k;
    c.close = m_[k];
    size_t start = k + 1;
    int angle = 0;
    for (size_t j = k + 1; j < c.close; ++j) {
      if ((is(j, "(") || is(j, "[") || is(j, "{")) && m_[j] != SIZE_MAX) {
        j = m_[j];
        continue;
      }
      (void)angle;
      if (is(j, ",")) {
        c.args.emplace_back(start, j);
        start = j + 1;
      }
    }
    if (start < c.close) c.args.emplace_back(start, c.close);
    return true;
  }

  // A '[' that opens a lambda (not a subscript or an attribute).
  bool lambda_at(size_t k) const {
    if (!is(k, "[") || m_[k] == SIZE_MAX || is(k + 1, "[")) return false;
    if (k > 0) {
      const Token &p = t_[k - 1];
      if (p.kind == Tok::Ident && !is_keyword(p.text)) return false;
      if (p.kind == Tok::Number || p.kind == Tok::String) return false;
      if (p.text == ")" || p.text == "]") return false;
    }
    size_t a = m_[k] + 1;
    return is(a, "(") || is(a, "{") || is(a, "mutable") || is(a, "->");
  }
  // The body '{' of the lambda whose '[' is at k.
  size_t lambda_body(size_t k) const {
    size_t a = m_[k] + 1;
    while (a < t_.size() && !is(a, "{")) {
      if ((is(a, "(") || is(a, "[")) && m_[a] != SIZE_MAX) a = m_[a];
      ++a;
    }
    return a;
  }

  // Marks statements that contain syncs; a sync inside a lambda cannot be split.
  void mark_sync(Stmt &s) {
    for (Stmt &k : s.kids) {
      mark_sync(k);
      if (k.sync) s.sync = true;
    }
    auto scan = [&](size_t b, size_t e) {
      std::vector<size_t> lambda_end;
      for (size_t k = b; k < e; ++k) {
        while (!lambda_end.empty() && k > lambda_end.back()) lambda_end.pop_back();
        if (lambda_at(k)) {
          size_t body = lambda_body(k);
          if (body < t_.size() && m_[body] != SIZE_MAX) lambda_end.push_back(m_[body]);
        }
        if (sync_call_at(k)) {
          if (!lambda_end.empty()) unsupported(k, "a sync inside a lambda");
          s.sync = true;
        }
      }
    };
    switch (s.kind) {
      case Stmt::Compound:
        break;
      case Stmt::If:
      case Stmt::While:
      case Stmt::Do:
      case Stmt::Switch:
        scan(s.c0, s.c1);
        break;
      case Stmt::For:
        scan(s.c0, s.c1);
        scan(s.s0, s.s1);
        break;
      case Stmt::RangeFor:
        scan(s.c0, s.c1);
        break;
      default:
        scan(s.b, s.e);
    }
  }

  // --- emission -----------------------------------------------------------------------------------

  std::string storage_name(const std::string &n) { return "mgwi_v" + std::to_string(++tmp_) + "_" + n; }

  const Var *lookup(const std::string &n) const {
    for (size_t i = scopes_.size(); i-- > 0;) {
      auto it = scopes_[i].find(n);
      if (it != scopes_[i].end()) return &it->second;
    }
    return nullptr;
  }

  void line(size_t k, std::string &o) {
    if (k >= t_.size()) return;
    WiLine w = line_of_(f_.first_line + t_[k].line - 1);
    std::string l = "#line " + std::to_string(w.line) + " \"" + w.file + "\"";
    if (l == last_line_) return;
    last_line_ = l;
    o += "\n" + l + "\n";
  }
  void at_line(std::string &o) {  // after generated text on its own lines: the next #line must be written
    last_line_.clear();
    (void)o;
  }

  static void append(std::string &o, const std::string &x, bool space) {
    if (x.empty()) return;
    if (!o.empty()) {
      const char a = o.back(), b = x.front();
      if (space || (is_ident_char(a) && is_ident_char(b))) o += ' ';
    }
    o += x;
  }

  // The per-lane text of tokens [b, e): per-lane variables renamed, hoisted calls replaced, lambdas'
  // bodies emitted as region code of their own.
  std::string expr(size_t b, size_t e) {
    std::string o;
    for (size_t k = b; k < e; ++k) {
      auto sub = subst_.find(k);
      if (sub != subst_.end()) {
        append(o, sub->second.second, !t_[k].pre.empty());
        k = sub->second.first - 1;
        continue;
      }
      if (lambda_at(k)) {
        k = lambda(k, o);
        continue;
      }
      const Token &tk = t_[k];
      if (tk.kind == Tok::Ident && !(k > 0 && (is(k - 1, ".") || is(k - 1, "->") || is(k - 1, "::"))) &&
          !is(k + 1, "::")) {
        const Var *v = lookup(tk.text);
        if (v && v->k == Var::Uniform) {
          // A bare call argument cannot bind a non-const reference (which would modify it once per lane).
          const bool bare = k > 0 && (is(k - 1, "(") || is(k - 1, ",")) && (is(k + 1, ")") || is(k + 1, ",")) &&
                            !v->is_const;
          append(o, bare ? "::mgsim::wi::rv(" + tk.text + ")" : tk.text, !tk.pre.empty());
          continue;
        }
        if (v && v->k == Var::Lane) {
          if (written_ && may_write(k)) written_->insert(v->storage);
          append(o, lane_access(tk.text, v->storage), !tk.pre.empty());
          continue;
        }
        if (v && v->k != Var::Local) {
          append(o, v->k == Var::LaneRef ? "(*" + v->storage + "[mgwi_l])" : v->storage + "[mgwi_l]",
                 !tk.pre.empty());
          continue;
        }
      }
      append(o, tk.text, !tk.pre.empty());
    }
    return o;
  }

  // A lambda at k: captures as written, parameters as locals, the body as region code. Returns the
  // index of its last token.
  size_t lambda(size_t k, std::string &o) {
    const size_t cap_end = m_[k];
    for (size_t j = k + 1; j < cap_end; ++j) {
      if (ident(j)) {
        const Var *v = lookup(text(j));
        if (v && v->k != Var::Local) unsupported(j, "a lambda capturing a per-lane variable by name");
      }
    }
    for (size_t j = k; j <= cap_end; ++j) append(o, text(j), !t_[j].pre.empty() && j > k);
    scopes_.emplace_back();
    size_t a = cap_end + 1;
    if (is(a, "(") && m_[a] != SIZE_MAX) {
      // Parameter names: the last identifier before each top-level ',' or ')' (or '=').
      const size_t close = m_[a];
      size_t last = SIZE_MAX;
      bool in_default = false;
      for (size_t j = a + 1; j <= close; ++j) {
        if ((is(j, "(") || is(j, "[") || is(j, "{")) && j < close && m_[j] != SIZE_MAX) {
          j = m_[j];
          continue;
        }
        if (is(j, "=")) in_default = true;
        if (ident(j) && !in_default) last = j;
        if (is(j, ",") || j == close) {
          if (last != SIZE_MAX) scopes_.back()[text(last)] = Var{Var::Local, ""};
          last = SIZE_MAX;
          in_default = false;
        }
      }
    }
    const size_t body = lambda_body(k);
    if (body >= t_.size() || m_[body] == SIZE_MAX) {
      unsupported(k, "cannot parse a lambda");
      scopes_.pop_back();
      return cap_end;
    }
    append(o, expr(cap_end + 1, body), true);
    std::vector<Stmt> stmts;
    parse_block(body + 1, m_[body], stmts);
    Region rc;
    rc.in_lambda = true;
    append(o, "{", true);
    for (const Stmt &s : stmts) o += region_stmt(s, rc);
    o += "}";
    scopes_.pop_back();
    return m_[body];
  }

  // Registers the names a region-local declaration introduces.
  void declare_local(const Stmt &s) {
    for (const Declarator &d : s.decls) scopes_.back()[d.name] = Var{Var::Local, ""};
    if (s.kind == Stmt::Uniform && s.decls.empty()) {
      // typedef / using: the declared name is the last identifier before ';' or '='.
      size_t last = SIZE_MAX;
      for (size_t k = s.b; k < s.e; ++k) {
        if (is(k, "=")) break;
        if (ident(k)) last = k;
      }
      if (last != SIZE_MAX && (is(s.b, "typedef") || is(s.b, "using")))
        scopes_.back()[text(last)] = Var{Var::Local, ""};
    }
  }

  std::string loop_ref() const { return "mgwi_lp" + std::to_string(wi_loops_.back()); }

  // A statement inside a region: per-lane code for one lane (`mgwi_l`).
  std::string region_stmt(const Stmt &s, Region &rc) {
    std::string o;
    line(s.b, o);
    switch (s.kind) {
      case Stmt::Compound: {
        o += "{";
        scopes_.emplace_back();
        for (const Stmt &k : s.kids) o += region_stmt(k, rc);
        scopes_.pop_back();
        o += "}";
        break;
      }
      case Stmt::If: {
        o += s.constexpr_if ? "if constexpr (" : "if (";
        o += expr(s.c0, s.c1) + ") ";
        o += region_stmt(s.kids[0], rc);
        if (s.kids.size() > 1) o += " else " + region_stmt(s.kids[1], rc);
        break;
      }
      case Stmt::For: {
        scopes_.emplace_back();
        const Stmt &init = s.kids[0];
        o += "for (";
        if (init.kind == Stmt::Empty) o += ";";
        else o += expr(init.b, init.e);
        declare_local(init);
        o += " " + expr(s.c0, s.c1) + "; " + expr(s.s0, s.s1) + ") ";
        rc.local.push_back('L');
        o += region_stmt(s.kids[1], rc);
        rc.local.pop_back();
        scopes_.pop_back();
        break;
      }
      case Stmt::RangeFor: {
        scopes_.emplace_back();
        o += "for (" + expr(s.c0, s.c1) + ") ";
        // The loop variable: the last identifier before the ':'.
        for (size_t k = s.s0; k > s.c0; --k)
          if (ident(k - 1)) {
            scopes_.back()[text(k - 1)] = Var{Var::Local, ""};
            break;
          }
        rc.local.push_back('L');
        o += region_stmt(s.kids[0], rc);
        rc.local.pop_back();
        scopes_.pop_back();
        break;
      }
      case Stmt::While: {
        o += "while (" + expr(s.c0, s.c1) + ") ";
        rc.local.push_back('L');
        o += region_stmt(s.kids[0], rc);
        rc.local.pop_back();
        break;
      }
      case Stmt::Do: {
        o += "do ";
        rc.local.push_back('L');
        o += region_stmt(s.kids[0], rc);
        rc.local.pop_back();
        o += " while (" + expr(s.c0, s.c1) + ");";
        break;
      }
      case Stmt::Switch: {
        o += "switch (" + expr(s.c0, s.c1) + ") ";
        rc.local.push_back('S');
        o += region_stmt(s.kids[0], rc);
        rc.local.pop_back();
        break;
      }
      case Stmt::Return: {
        if (rc.in_lambda) {
          o += expr(s.b, s.e);
          break;
        }
        o += "{ ";
        if (s.e - s.b > 2) o += "::mgsim::wi::set_ret(mgwi_ret, mgwi_l, " + expr(s.b + 1, s.e - 1) + "); ";
        o += "mgwi_fn.retire(mgwi_l); goto " + region_end_ + "; }";
        break;
      }
      case Stmt::Break:
      case Stmt::Continue: {
        bool local = false;
        for (char c : rc.local) local = local || c == 'L' || (c == 'S' && s.kind == Stmt::Break);
        if (local || rc.in_lambda) {
          o += expr(s.b, s.e);
        } else if (!wi_loops_.empty()) {
          o += "{ " + loop_ref() + (s.kind == Stmt::Break ? ".brk" : ".skip") + "(mgwi_l); goto " + region_end_ + "; }";
        } else {
          unsupported(s.b, "break or continue outside a loop");
        }
        break;
      }
      case Stmt::Decl:
      case Stmt::Uniform:
        o += expr(s.b, s.e);
        declare_local(s);
        break;
      default:
        o += expr(s.b, s.e);
        break;
    }
    o += "\n";
    return o;
  }

  // --- work-item level ----------------------------------------------------------------------------

  // A region item: a whole statement, or the initialisation of one per-lane declarator.
  struct Item {
    const Stmt *s = nullptr;
    const Stmt *decl = nullptr;
    const Declarator *d = nullptr;
    std::string storage;
  };

  // Per-lane code of one region: its per-lane variables are read into locals first and written
  // back after (so the compiler keeps them in registers across the region's loops).
  struct RegionCache {
    Gen &g;
    std::map<std::string, std::string> used;
    std::set<std::string> written;  // cached variables the region may modify (written back)
    std::map<std::string, std::string> *outer;
    std::set<std::string> *outer_written;
    std::string label;  // the end of a lane's code (return / break / continue jump there)
    std::string outer_label;
    explicit RegionCache(Gen &g_)
        : g(g_), outer(g_.cache_), outer_written(g_.written_), label("mgwi_next" + std::to_string(++g_.tmp_)),
          outer_label(g_.region_end_) {
      g.cache_ = &used;
      g.written_ = &written;
      g.region_end_ = label;
    }
    ~RegionCache() {
      g.cache_ = outer;
      g.written_ = outer_written;
      g.region_end_ = outer_label;
    }
  };
  void emit_region(RegionCache &rc, const std::string &body) {
    g_cache_off();
    std::string pre, post;
    for (auto &[st, local] : rc.used) {
      const bool ro = ro_storage_.count(st) > 0;
      pre += std::string(ro ? "::mgsim::wi::ro_cache_t" : "::mgsim::wi::cache_t") + "<typename std::remove_reference_t<decltype(" +
             st + ")>::value_type> " + local + " = " + st + "[mgwi_l]; ";
      if (rc.written.count(st) && !ro) post += "::mgsim::wi::store(" + st + "[mgwi_l], " + local + "); ";
    }
    // A plain loop over the active lanes (MGWI_EACH); leaving a lane's code early jumps to the end.
    o_ += "\nMGWI_EACH { " + pre + "{" + body + "} " + rc.label + ":; " + post + "} MGWI_EACH_END\n";
    at_line(o_);
  }
  void g_cache_off() {}

  // May the use of a variable at token k modify it (assigned, incremented, a member or element
  // assigned, its address taken, or passed where a reference parameter may bind it)?
  bool may_write(size_t k) const {
    if (k > 0 && (is(k - 1, "++") || is(k - 1, "--") || is(k - 1, "&"))) return true;
    // -> writes through the variable (a pointer): the cached value is unchanged.
    if (is(k + 1, "->")) return false;
    // Past member accesses and subscripts: an element assigned may be one of a vector or a member
    // array held by value (for a pointer, storing it back is merely redundant).
    size_t j = k + 1;
    for (;;) {
      if (is(j, ".") && ident(j + 1)) j += 2;
      else if (is(j, "[") && m_[j] != SIZE_MAX) j = m_[j] + 1;
      else break;
    }
    if (t_[j].kind == Tok::Punct && (is_assign_op(text(j)) || is(j, "++") || is(j, "--"))) return true;
    if (is(j, "(")) return true;  // a member function call
    // A call argument (directly, or as the object of a member access).
    size_t b = k;
    if (k > 0 && (is(k - 1, "(") || is(k - 1, ",")) && (is(j, ")") || is(j, ","))) return true;
    (void)b;
    return false;
  }

  // Lane mgwi_l's element of per-lane variable `name` (storage `st`): its region-local copy when
  // a region is being written and the variable's address never escapes one.
  std::string lane_access(const std::string &name, const std::string &st, bool write = false) {
    if (!cache_ || exposed_.count(name)) return st + "[mgwi_l]";
    if (write && written_) written_->insert(st);
    auto it = cache_->find(st);
    if (it == cache_->end()) it = cache_->emplace(st, "mgwi_k" + std::to_string(++tmp_)).first;
    return it->second;
  }

  // One region of per-lane code at work-item level; `code` writes its text (after the syncs it
  // follows were hoisted).
  template <class F>
  void region(F code) {
    RegionCache rc(*this);
    const std::string t = code();
    if (!t.empty()) emit_region(rc, t);
  }

  void flush(std::vector<Item> &pending) {
    if (pending.empty()) return;
    bool any = false;
    for (const Item &it : pending) any = any || !it.s || it.s->kind != Stmt::Empty;
    if (!any) {
      pending.clear();
      return;
    }
    std::string body;
    Region rc;
    scopes_.emplace_back();
    {
      RegionCache cache(*this);
      for (const Item &it : pending) body += it.s ? region_stmt(*it.s, rc) : init_code(it);
      emit_region(cache, body);
    }
    scopes_.pop_back();
    pending.clear();
  }

  // A reference parameter's type without its & (its storage is a pointer).
  static std::string strip_refs(const std::string &type) {
    std::vector<Token> v = lex(type);
    std::string o;
    for (size_t i = 0; i + 1 < v.size(); ++i)
      if (v[i].text != "&" && v[i].text != "&&") append(o, v[i].text, !v[i].pre.empty());
    return o;
  }

  std::string strip_top_const(const std::string &type, bool keep) const {
    if (keep) return type;
    // Drop `const`/`volatile` words that apply to the object itself: those of a non-pointer type,
    // or those after the last '*'.
    // (Words inside template arguments or parentheses belong to other types.)
    std::vector<Token> v = lex(type);
    std::vector<int> depth(v.size(), 0);
    int d = 0;
    size_t star = SIZE_MAX;
    for (size_t i = 0; i + 1 < v.size(); ++i) {
      if (v[i].text == ">" || v[i].text == ")") --d;
      depth[i] = d;
      if (v[i].text == "<" || v[i].text == "(") ++d;
      if (v[i].text == "*" && depth[i] == 0) star = i;
    }
    std::string o;
    for (size_t i = 0; i + 1 < v.size(); ++i) {
      const bool cv = v[i].kind == Tok::Ident && (v[i].text == "const" || v[i].text == "volatile") && depth[i] == 0;
      if (cv && (star == SIZE_MAX || i > star)) continue;
      append(o, v[i].text, !v[i].pre.empty());
    }
    return o;
  }

  // The per-lane storage of declarator d of declaration s, declared now at work-item level.
  std::string declare_lane(const Stmt &s, const Declarator &d) {
    const std::string st = storage_name(d.name);
    std::string ty;
    if (s.is_auto) {
      std::string init = d.init_b ? expr(t_[d.init_b].text == "=" ? d.init_b + 1 : d.init_b, d.init_e) : "";
      if (init.empty()) {
        unsupported(d.name_at, "an auto declaration without an initialiser");
        return st;
      }
      ty = d.ref ? "std::remove_reference_t<decltype((" + init + "))>*" : "std::decay_t<decltype(" + init + ")>";
    } else {
      const std::string base = strip_top_const(s.type + (d.ptr.empty() ? "" : " " + d.ptr), d.ref || false);
      ty = d.ref ? s.type + (d.ptr.empty() ? "" : " " + d.ptr) + "*" : base + d.dims;
    }
    o_ += "MGWI_LANES(" + st + ", " + ty + ");\n";
    return st;
  }

  std::string init_code(const Item &it) {
    const Declarator &d = *it.d;
    const Stmt &s = *it.decl;
    std::string o;
    line(d.name_at, o);
    if (!d.init_b) return o;
    if (d.ref) {
      const size_t b = t_[d.init_b].text == "=" ? d.init_b + 1 : d.init_b;
      o += it.storage + "[mgwi_l] = ::mgsim::wi::addr(" + expr(b, d.init_e) + ");\n";  // (never cached)
      return o;
    }
    o += "{ " + (s.is_auto ? std::string("auto") : s.type) + (d.ptr.empty() ? "" : " " + d.ptr) + " mgwi_tmp" + d.dims +
         (t_[d.init_b].text == "=" ? " " : "") + expr(d.init_b, d.init_e) + "; ::mgsim::wi::assign(" + lane_access(d.name, it.storage, true) +
         ", mgwi_tmp); }\n";
    return o;
  }

  bool later_sync(const std::vector<Stmt> &kids, size_t i) const {
    for (size_t j = i + 1; j < kids.size(); ++j)
      if (kids[j].sync) return true;
    return false;
  }

  void gen_block(const std::vector<Stmt> &kids) {
    std::vector<Item> pending;
    for (size_t i = 0; i < kids.size() && why_.empty(); ++i) {
      const Stmt &s = kids[i];
      if (s.kind == Stmt::Uniform) {
        // Shared by every lane: declared once, at work-item level (earlier than the per-lane
        // statements before it, which cannot use it).
        line(s.b, o_);
        o_ += expr(s.b, s.e) + "\n";
        declare_local(s);
        continue;
      }
      if (!s.sync) {
        if (s.kind == Stmt::Decl && later_sync(kids, i) && uniform_decl(s, kids.back().e)) {
          // The same value in every lane: computed once, at work-item level (after the per-lane
          // statements before it), instead of per-lane storage every later region reads.
          flush(pending);
          emit_uniform_decl(s);
          continue;
        }
        if (pending.empty() && uniform_return(s)) {
          // `if (c) return;` with c the same in every lane: every active lane returns, or none.
          line(s.b, o_);
          o_ += "if (::mgsim::wi::uniform_value(mgwi_c, [&](uint32_t mgwi_l) MGWI_INL -> bool { (void)mgwi_l; return (" +
                expr(s.c0, s.c1) + "); })) mgwi_fn.retire_all();\n";
          continue;
        }
        if (s.kind == Stmt::Decl && later_sync(kids, i)) {
          for (const Declarator &d : s.decls) {
            Item it;
            it.decl = &s;
            it.d = &d;
            it.storage = declare_lane(s, d);
            pending.push_back(it);
            scopes_.back()[d.name] = Var{d.ref ? Var::LaneRef : Var::Lane, it.storage};
          }
        } else {
          Item it;
          it.s = &s;
          pending.push_back(it);
        }
        continue;
      }
      flush(pending);
      gen_sync(s);
    }
    flush(pending);
  }

  // --- uniform declarations -----------------------------------------------------------------------

  // Is [b, e) the same in every active lane, computed once as well as per lane: literals,
  // operators, casts, constants, uniform declarations and parameters, memory read through them,
  // and calls of functions (no sync, no atomic) — when a call has no pointer to writable memory
  // among its operands, so it cannot write anything. No assignment, per-lane name or threadgroup
  // array. (Memory another lane writes between the group's start of this statement and its own
  // read would be a race: Metal gives no value for it.)
  bool uniform_init(size_t b, size_t e) const {
    bool call = false, writable = false;
    for (size_t k = b; k < e; ++k) {
      const Token &tk = t_[k];
      if (tk.kind == Tok::String || is(k, "{") || is(k, "}")) return false;
      if (tk.kind == Tok::Punct && (is_assign_op(tk.text) || is(k, "++") || is(k, "--"))) return false;
      if (is(k, "(") && k > b && (ident(k - 1) || is(k - 1, ">"))) call = true;
      if (!ident(k)) continue;
      const std::string &n = tk.text;
      if (n.rfind("atomic", 0) == 0 || wi_is_prelude_sync(n) || user_sync_(n)) return false;
      if (n == "this" || n == "mgwi_l" || n == "mgwi_c") return false;
      if (k > 0 && (is(k - 1, ".") || is(k - 1, "->") || is(k - 1, "::"))) continue;  // a member, or qualified
      if (tg_arrays_.count(n) || tg_array_aliases_.count(n)) return false;
      const Var *v = lookup(n);
      if (!v) continue;  // a constant, function, type or program-scope name
      if (v->k == Var::Uniform) {  // a uniform declaration, or a uniform loop's (integer) variable
        writable = writable || v->writable;
        continue;
      }
      if (v->k == Var::Local) {
        if (!constants_.count(n)) return false;
        continue;
      }
      auto it = uniform_params_.find(v->storage);
      if (it == uniform_params_.end()) return false;
      writable = writable || it->second;
    }
    return !(call && writable);
  }

  // A declaration of one variable, `T x = init;`, with a uniform initialiser, that nothing modifies
  // later in its block (ending at token `end`) nor takes the address of: a uniform declaration.
  bool uniform_decl(const Stmt &s, size_t end) const {
    if (!f_.hoist_uniform || s.decls.size() != 1) return false;
    const Declarator &d = s.decls[0];
    if (d.ref || !d.dims.empty() || !d.init_b || !is(d.init_b, "=") || exposed_.count(d.name)) return false;
    if (s.type.find("alignas") != std::string::npos || s.type.find("__attribute__") != std::string::npos) return false;
    if (!uniform_init(d.init_b + 1, d.init_e)) return false;
    // Never modified: const, or never assigned, incremented, a member or element assigned, a member
    // function called, its address taken or passed bare to a call.
    if (own_const(s)) return true;
    for (size_t k = s.e; k < end; ++k) {
      if (!ident(k) || text(k) != d.name) continue;
      if (k > 0 && (is(k - 1, ".") || is(k - 1, "->") || is(k - 1, "::"))) continue;
      if (k > 0 && (is(k - 1, "++") || is(k - 1, "--") || is(k - 1, "&"))) return false;
      size_t j = k + 1;
      for (;;) {
        if (is(j, ".") && ident(j + 1)) j += 2;
        else if (is(j, "[") && m_[j] != SIZE_MAX) j = m_[j] + 1;
        else break;
      }
      if (j > k + 1 && d.ptr.find('*') != std::string::npos && is(k + 1, "[")) continue;  // an element of a pointer
      if (t_[j].kind == Tok::Punct && (is_assign_op(text(j)) || is(j, "++") || is(j, "--"))) return false;
      if (is(j, "(")) return false;
      // A bare call argument may bind a non-const reference (that would not compile on one value);
      // the operand of a conversion to a scalar or vector type or a template type parameter cannot.
      if (k > 0 && (is(k - 1, "(") || is(k - 1, ",")) && (is(j, ")") || is(j, ",")) &&
          !(is(k - 1, "(") && is(j, ")") && k >= 2 && ident(k - 2) && conversion_to(text(k - 2))))
        return false;
    }
    return true;
  }

  // Is `name(x)` a conversion: a scalar or vector type of MSL, or a template type parameter?
  bool conversion_to(const std::string &name) const {
    static const std::unordered_set<std::string> scalars = {
        "bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "bfloat", "float",
        "double", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "size_t"};
    if (scalars.count(name)) return true;
    for (const WiTemplateParam &tp : f_.tparams)
      if (tp.type && tp.name == name) return true;
    // Vector types: a scalar name followed by 2, 3 or 4.
    const char last = name.empty() ? 0 : name.back();
    return (last == '2' || last == '3' || last == '4') && scalars.count(name.substr(0, name.size() - 1)) > 0;
  }

  // Is the declared object itself const (`const T x`, `T *const p`)?
  static bool own_const(const Stmt &s) {
    const Declarator &d = s.decls[0];
    return d.ptr.empty() ? s.has_const : d.ptr.size() >= 5 && d.ptr.compare(d.ptr.size() - 5, 5, "const") == 0;
  }

  void emit_uniform_decl(const Stmt &s) {
    const Declarator &d = s.decls[0];
    line(s.b, o_);
    const std::string decl = s.type + (d.ptr.empty() ? "" : " " + d.ptr);
    const std::string ret = s.is_auto ? "" : " -> " + strip_top_const(decl, false);
    o_ += decl + " " + d.name + " = ::mgsim::wi::uniform_value(mgwi_c, [&](uint32_t mgwi_l) MGWI_INL" + ret +
          " { (void)mgwi_l; return " + expr(d.init_b + 1, d.init_e) + "; });\n";
    // Whether it points to writable memory (auto: unknown, so yes).
    const bool pointer = s.is_auto || d.ptr.find('*') != std::string::npos || s.type.find('*') != std::string::npos;
    const bool writable = pointer && (s.is_auto || !const_pointee(decl, true));
    scopes_.back()[d.name] = Var{Var::Uniform, d.name, own_const(s), writable};
  }

  // `if (c) return;` (or `{ return; }`) in a function returning nothing, c uniform.
  bool uniform_return(const Stmt &s) const {
    if (!f_.hoist_uniform || s.kind != Stmt::If || s.constexpr_if || s.kids.size() != 1) return false;
    const Stmt *r = &s.kids[0];
    if (r->kind == Stmt::Compound && r->kids.size() == 1) r = &r->kids[0];
    if (r->kind != Stmt::Return || r->e != r->b + 2) return false;
    return uniform_init(s.c0, s.c1);
  }

  void gen_sub(const Stmt &s) {
    if (s.kind == Stmt::Compound) {
      scopes_.emplace_back();
      gen_block(s.kids);
      scopes_.pop_back();
    } else {
      scopes_.emplace_back();
      std::vector<Stmt> one{s};
      gen_block(one);
      scopes_.pop_back();
    }
  }



  // Is the expression [b, e) the same in every lane: literals, operators, shared names (constants,
  // template parameters, uniform loop variables, functions and types), never a per-lane variable,
  // memory, an atomic or a sync? `loop_var` counts as uniform too.
  bool uniform_expr(size_t b, size_t e, const std::string &loop_var) const {
    for (size_t k = b; k < e; ++k) {
      if (t_[k].kind == Tok::String) return false;
      if (is(k, "[") || is(k, "->") || is(k, "{")) return false;  // memory, lambdas, braced lists
      if (is(k, "*") && (k == b || t_[k - 1].kind == Tok::Punct) && !is(k - 1, ")") && !is(k - 1, "]")) return false;
      if (!ident(k)) continue;
      const std::string &n = text(k);
      if (n == loop_var) continue;
      if (n.rfind("atomic", 0) == 0 || wi_is_prelude_sync(n) || user_sync_(n)) return false;
      if (k > 0 && (is(k - 1, ".") || is(k - 1, "::"))) continue;  // a member of something checked
      const Var *v = lookup(n);
      if (v && v->k != Var::Uniform && !uniform_.count(n)) return false;
    }
    return true;
  }

  // Is the expression [b, e) a constant every lane shares: literals, operators, parentheses,
  // uniform loop variables, template parameters and constants — no call, no memory, no per-lane
  // or threadgroup variable? (It can be evaluated once, at work-item level.)
  bool constant_expr(size_t b, size_t e) const {
    if (b >= e) return false;
    if (e == b + 1 && ident(b) && tg_array_aliases_.count(text(b))) {
      const Var *v = lookup(text(b));
      return v && v->k == Var::Local;  // the work-item-level alias, not a shadowing name
    }
    for (size_t k = b; k < e; ++k) {
      const Token &tk = t_[k];
      if (tk.kind == Tok::String) return false;
      if (tk.kind == Tok::Number) continue;
      if (tk.kind == Tok::Punct) {
        if (is(k, "(") && k > b && (ident(k - 1) || is(k - 1, ">"))) return false;  // a call
        if (is(k, "[") || is(k, "{") || is(k, "->") || is(k, ".") || is(k, "::") || is(k, "=") || is(k, "++") ||
            is(k, "--") || is_assign_op(tk.text) || is(k, "<") || is(k, ">"))
          return false;
        if ((is(k, "*") || is(k, "&")) && (k == b || t_[k - 1].kind == Tok::Punct) && !is(k - 1, ")")) return false;
        continue;
      }
      if (!ident(k)) return false;
      if (tk.text == "true" || tk.text == "false") continue;
      const Var *v = lookup(tk.text);
      if (v && v->k == Var::Uniform) continue;
      if (!v && constants_.count(tk.text)) continue;
      return false;
    }
    return true;
  }

  // Is `v` only read in [b, e) (never assigned, incremented or its address taken)?
  bool read_only(size_t b, size_t e, const std::string &v) const {
    for (size_t k = b; k < e; ++k) {
      if (!ident(k) || text(k) != v) continue;
      if (k > 0 && (is(k - 1, ".") || is(k - 1, "->") || is(k - 1, "::"))) continue;
      if (t_[k + 1].kind == Tok::Punct && (is_assign_op(text(k + 1)) || is(k + 1, "++") || is(k + 1, "--"))) return false;
      if (k > 0 && (is(k - 1, "++") || is(k - 1, "--"))) return false;
      if (k > 0 && is(k - 1, "&") && (k < 2 || t_[k - 2].kind == Tok::Punct || is_keyword(text(k - 2)))) return false;
      if (is(k + 1, "[")) return false;  // (an array: its elements may be written)
    }
    return true;
  }

  // A for loop every lane runs alike: one declared scalar control variable with a uniform start,
  // condition and step, only read in the body. It runs as a plain loop; the mask still tracks lanes
  // that break, continue or return.
  bool uniform_loop(const Stmt &s) const {
    if (s.kind != Stmt::For || s.kids[0].kind != Stmt::Decl) return false;
    const Stmt &init = s.kids[0];
    if (init.decls.size() != 1 || init.is_auto) return false;
    const Declarator &d = init.decls[0];
    if (d.ref || !d.ptr.empty() || !d.dims.empty() || !d.init_b || lookup(d.name)) return false;
    if (!uniform_expr(d.init_b, d.init_e, "") || !uniform_expr(s.c0, s.c1, d.name) || !uniform_expr(s.s0, s.s1, d.name))
      return false;
    return read_only(s.kids[1].b, s.kids[1].e, d.name);
  }

  void gen_sync(const Stmt &s) {
    line(s.b, o_);
    switch (s.kind) {
      case Stmt::Compound:
        o_ += "{\n";
        scopes_.emplace_back();
        gen_block(s.kids);
        scopes_.pop_back();
        o_ += "}\n";
        return;
      case Stmt::Expr: {
        const bool whole = hoist(s.b, s.e - 1, true);
        if (!whole) region([&] { return expr(s.b, s.e); });
        return;
      }
      case Stmt::Decl: {
        for (const Declarator &d : s.decls) {
          if (d.init_b) hoist(d.init_b, d.init_e, false);
          Item it;
          it.decl = &s;
          it.d = &d;
          // `T x = f(...);` with a sync call as the whole initialiser: x's lanes are the call's
          // result lanes when their type is T (no copy; mgsim_wi.h adopt).
          std::string from;
          if (!d.ref && d.dims.empty() && d.init_b && is(d.init_b, "=")) {
            auto sub = subst_.find(d.init_b + 1);
            const std::string tail = "[mgwi_l]";
            if (sub != subst_.end() && sub->second.first == d.init_e && sub->second.second.size() > tail.size() &&
                sub->second.second.compare(sub->second.second.size() - tail.size(), tail.size(), tail) == 0)
              from = sub->second.second.substr(0, sub->second.second.size() - tail.size());
          }
          if (from.empty()) {
            it.storage = declare_lane(s, d);
            region([&] { return init_code(it); });
          } else {
            const std::string own = declare_lane(s, d);
            it.storage = own + "_x";
            o_ += "const auto " + it.storage + " = ::mgsim::wi::adopt(" + own + ", " + from + ");\n";
            o_ += "if constexpr (!::mgsim::wi::adopts<decltype(" + own + "), decltype(" + from + ")>) {\n";
            region([&] { return init_code(it); });
            o_ += "}\n";
          }
          scopes_.back()[d.name] = Var{d.ref ? Var::LaneRef : Var::Lane, it.storage};
        }
        return;
      }
      case Stmt::Return: {
        if (s.e - s.b > 2) {
          // `return <collective>(...);`: the collective writes the results straight into the return
          // lanes (one conversion, as the return's copy-initialisation does).
          if (direct_return(s.b + 1, s.e - 1)) {
            o_ += "mgwi_fn.retire_all();\n";
            return;
          }
          hoist(s.b + 1, s.e - 1, false);
          region([&] {
            return "::mgsim::wi::set_ret(mgwi_ret, mgwi_l, " + expr(s.b + 1, s.e - 1) + "); mgwi_fn.retire(mgwi_l);";
          });
        } else {
          o_ += "mgwi_fn.retire_all();\n";
        }
        return;
      }
      case Stmt::If: {
        if (s.constexpr_if) {
          o_ += "if constexpr (" + expr(s.c0, s.c1) + ") {\n";
          gen_sub(s.kids[0]);
          o_ += "}\n";
          if (s.kids.size() > 1) {
            o_ += "else {\n";
            gen_sub(s.kids[1]);
            o_ += "}\n";
          }
          return;
        }
        hoist(s.c0, s.c1, false);
        const std::string b = "mgwi_b" + std::to_string(++tmp_);
        o_ += "{\n::mgsim::wi::branch " + b + "(mgwi_c);\n";
        if (uniform_expr(s.c0, s.c1, "")) {
          // The same in every lane: all take one branch.
          o_ += "if (" + expr(s.c0, s.c1) + ") " + b + ".take_all();\n";
        } else if (uniform_init(s.c0, s.c1) && f_.hoist_uniform) {
          // The same in every lane, computed once (uniform parameters and declarations).
          o_ += "if (::mgsim::wi::uniform_value(mgwi_c, [&](uint32_t mgwi_l) MGWI_INL -> bool { (void)mgwi_l; return (" +
                expr(s.c0, s.c1) + "); })) " + b + ".take_all();\n";
        } else {
          region([&] { return "if (" + expr(s.c0, s.c1) + ") " + b + ".take(mgwi_l);"; });
        }
        o_ += "if (" + b + ".then_()) {\n";
        gen_sub(s.kids[0]);
        o_ += "}\n" + b + ".then_done();\nif (" + b + ".else_()) {\n";
        if (s.kids.size() > 1) gen_sub(s.kids[1]);
        o_ += "}\n" + b + ".done();\n}\n";
        return;
      }
      case Stmt::For:
      case Stmt::While:
      case Stmt::Do: {
        o_ += "{\n";
        scopes_.emplace_back();
        const int id = ++tmp_;
        const std::string lp = "mgwi_lp" + std::to_string(id);
        if (uniform_loop(s)) {
          const Stmt &init = s.kids[0];
          const Declarator &d = init.decls[0];
          o_ += "::mgsim::wi::loop_scope " + lp + "(mgwi_c);\nfor (" + strip_top_const(init.type, false) + " " + d.name +
                expr(d.init_b, d.init_e) + "; " + expr(s.c0, s.c1) + "; " + expr(s.s0, s.s1) + ") {\n";
          scopes_.back()[d.name] = Var{Var::Uniform, d.name};
          o_ += "if (!" + lp + ".any()) break;\n";
          wi_loops_.push_back(id);
          gen_sub(s.kids[1]);
          wi_loops_.pop_back();
          o_ += lp + ".next();\n}\n" + lp + ".finish();\n";
          scopes_.pop_back();
          o_ += "}\n";
          return;
        }
        if (s.kind == Stmt::For) {
          const Stmt &init = s.kids[0];
          if (init.kind == Stmt::Decl) {
            // The loop variable lives across the body's syncs: per-lane storage.
            for (const Declarator &d : init.decls) {
              if (d.init_b) hoist(d.init_b, d.init_e, false);
              Item it;
              it.decl = &init;
              it.d = &d;
              it.storage = declare_lane(init, d);
              region([&] { return init_code(it); });
              scopes_.back()[d.name] = Var{d.ref ? Var::LaneRef : Var::Lane, it.storage};
            }
          } else if (init.kind == Stmt::Expr) {
            const bool whole = hoist(init.b, init.e - 1, true);
            if (!whole) region([&] { return expr(init.b, init.e); });
          } else if (init.kind != Stmt::Empty) {
            unsupported(init.b, "a for-loop initialiser of this kind around a sync");
          }
        }
        o_ += "::mgsim::wi::loop_scope " + lp + "(mgwi_c);\n";
        const bool has_cond = s.c1 > s.c0;
        const bool cond_sync = has_cond && has_sync_call(s.c0, s.c1);
        const bool step_sync = s.kind == Stmt::For && s.s1 > s.s0 && has_sync_call(s.s0, s.s1);
        // The step and the next test share one region when neither has a sync.
        auto test_code = [&]() { return has_cond ? "if (!(" + expr(s.c0, s.c1) + ")) " + lp + ".exit(mgwi_l);" : std::string(); };
        if (s.kind != Stmt::Do) {
          if (cond_sync) hoist(s.c0, s.c1, false);
          region(test_code);
        }
        o_ += "for (;;) {\n";
        if (s.kind != Stmt::Do) o_ += "if (!" + lp + ".any()) break;\n";
        wi_loops_.push_back(id);
        gen_sub(s.kind == Stmt::For ? s.kids[1] : s.kids[0]);
        wi_loops_.pop_back();
        o_ += lp + ".next();\n";
        const bool step = s.kind == Stmt::For && s.s1 > s.s0;
        if (step_sync || cond_sync) {
          if (step) {
            const bool whole = hoist(s.s0, s.s1, true);
            if (!whole) region([&] { return expr(s.s0, s.s1) + ";"; });
          }
          if (cond_sync) hoist(s.c0, s.c1, false);
          region(test_code);
        } else {
          region([&] { return (step ? expr(s.s0, s.s1) + "; " : std::string()) + test_code(); });
        }
        if (s.kind == Stmt::Do) o_ += "if (!" + lp + ".any()) break;\n";
        else o_ += "if (!" + lp + ".any()) break;\n";
        o_ += "}\n";
        scopes_.pop_back();
        o_ += "}\n";
        return;
      }
      case Stmt::Switch:
        unsupported(s.b, "a sync inside a switch");
        return;
      case Stmt::RangeFor:
        unsupported(s.b, "a sync inside a range-based for");
        return;
      default:
        unsupported(s.b, "a sync in this kind of statement");
        return;
    }
  }

  bool has_sync_call(size_t b, size_t e) const {
    for (size_t k = b; k < e; ++k)
      if (sync_call_at(k)) return true;
    return false;
  }

  // `return <collective>(...)` whose call is the whole expression: the collective's results go into
  // the return lanes directly. False (nothing emitted) otherwise.
  bool direct_return(size_t b, size_t e) {
    if (!sync_call_at(b) && !(ident(b) && is(b + 1, "::"))) return false;
    size_t k = b;
    while (ident(k) && is(k + 1, "::")) k += 2;
    if (!sync_call_at(k) || !wi_is_collective(text(k))) return false;
    Call c;
    if (!parse_call(k, e, c) || c.qs != b || c.close + 1 != e || c.targs_e) return false;
    if (c.args.empty() || !is(c.args[0].first, "mgsim")) return false;
    for (auto [ab, ae] : c.args) hoist(ab, ae, false);
    const std::string site = range_text(c.args[0].first, c.args[0].second);
    std::vector<std::pair<size_t, size_t>> rest(c.args.begin() + 1, c.args.end());
    std::vector<std::string> names = capture(rest);
    o_ += "::metal::mgwi_" + text(c.name) + "(mgwi_c, mgwi_ret, " + site;
    for (const std::string &n : names) o_ += ", " + n;
    o_ += ");\n";
    return true;
  }

  // Is the call starting at `at` evaluated only conditionally in [b, at) (after ?, && or ||)?
  bool conditional(size_t b, size_t at) const {
    std::vector<int> marks;  // depths with an open conditional operand
    int depth = 0;
    for (size_t k = b; k < at; ++k) {
      if (is(k, "(") || is(k, "[") || is(k, "{")) ++depth;
      if (is(k, ")") || is(k, "]") || is(k, "}")) {
        --depth;
        while (!marks.empty() && marks.back() > depth) marks.pop_back();
      }
      if (is(k, "?") || is(k, "&&") || is(k, "||")) marks.push_back(depth);
      if (is(k, ",")) {
        while (!marks.empty() && marks.back() >= depth) marks.pop_back();
      }
    }
    return !marks.empty();
  }

  static bool side_effects(const std::vector<Token> &t, size_t b, size_t e) {
    for (size_t k = b; k < e; ++k)
      if (t[k].kind == Tok::Punct && (t[k].text == "++" || t[k].text == "--" || is_assign_op(t[k].text))) return true;
    return false;
  }

  // Captures each argument per lane; returns the names of the argument lanes. A per-lane variable
  // passed as it is needs no copy: its storage is the argument.
  std::vector<std::string> capture(const std::vector<std::pair<size_t, size_t>> &args) {
    std::vector<std::string> names;
    std::string fills;
    for (auto [b, e] : args) {
      if (e == b + 1 && ident(b) && !subst_.count(b)) {
        const Var *v = lookup(text(b));
        if (v && v->k == Var::Lane) {
          names.push_back(v->storage);
          continue;
        }
      }
      const std::string id = std::to_string(++tmp_);
      o_ += "auto mgwi_f" + id + " = [&](uint32_t mgwi_l) MGWI_INL -> decltype(auto) { return (" + expr(b, e) + "); };\n";
      o_ += "MGWI_LANES(mgwi_t" + id + ", ::mgsim::wi::slot_t<decltype(mgwi_f" + id + "(0u))>);\n";
      fills += "mgwi_t" + id + "[mgwi_l].set(mgwi_f" + id + "(mgwi_l)); ";
      names.push_back("mgwi_t" + id);
    }
    if (!fills.empty()) region([&] { return fills; });
    return names;
  }

  std::string firsts(const std::vector<std::string> &names, size_t from = 0) const {
    std::string o;
    for (size_t i = from; i < names.size(); ++i) o += (i > from ? ", " : "") + ("::mgsim::wi::first(" + names[i] + ")");
    return o;
  }

  std::string range_text(size_t b, size_t e) const {
    std::string o;
    for (size_t k = b; k < e; ++k) append(o, text(k), !t_[k].pre.empty() && k > b);
    return o;
  }

  // Hoists the syncs of expression [b, e) in evaluation order: their work-item code is emitted now
  // and each call is replaced by its per-lane result. Returns true when `whole` and the expression
  // is one call whose value is discarded (nothing is left to run per lane).
  bool hoist(size_t b, size_t e, bool whole) {
    bool all = false;
    for (size_t k = b; k < e && why_.empty(); ++k) {
      if (subst_.count(k)) {
        k = subst_[k].first - 1;
        continue;
      }
      if (lambda_at(k)) {
        k = m_[lambda_body(k)];
        continue;
      }
      if (!sync_call_at(k)) continue;
      Call c;
      if (!parse_call(k, e, c)) {
        unsupported(k, "cannot parse the call of '" + text(k) + "'");
        return false;
      }
      if (conditional(b, c.qs)) {
        unsupported(k, "'" + text(k) + "' evaluated conditionally (after ?, && or ||)");
        return false;
      }
      for (auto [ab, ae] : c.args) hoist(ab, ae, false);
      const bool is_whole = whole && c.qs == b && c.close + 1 == e;
      const std::string name = text(c.name);
      std::string rep;
      const std::string qual = range_text(c.qs, c.name);
      const std::string targs = c.targs_e ? range_text(c.targs_b, c.targs_e) : "";
      if (wi_is_barrier(name)) {
        for (auto [ab, ae] : c.args)
          if (side_effects(t_, ab, ae)) unsupported(k, "a barrier argument with side effects");
        if (!is_whole) unsupported(k, "'" + name + "' used as a value");
        o_ += "::metal::mgwi_" + name + "(mgwi_c);\n";
      } else if (wi_is_matrix_op(name)) {
        if (!is_whole) unsupported(k, "'" + name + "' used as a value");
        if (c.targs_e) unsupported(k, "explicit template arguments to '" + name + "'");
        bool effects = false;
        for (auto [ab, ae] : c.args) effects = effects || side_effects(t_, ab, ae);
        std::vector<std::string> evals;
        if (effects) {
          // Arguments with side effects are evaluated once per lane, as written.
          for (const std::string &n : capture(c.args)) {
            const std::string id = std::to_string(++tmp_);
            o_ += "auto mgwi_e" + id + " = [&](uint32_t mgwi_l) MGWI_INL -> decltype(auto) { return (::mgsim::wi::ref(" +
                  n + "[mgwi_l])); };\n";
            evals.push_back("mgwi_e" + id);
          }
        } else {
          // Matrix operations are uniform over the simdgroup: their arguments are evaluated only for
          // the lanes the operation needs (its first active lane; destinations for every lane).
          for (auto [ab, ae] : c.args) {
            const std::string id = std::to_string(++tmp_);
            o_ += "auto mgwi_e" + id + " = [&](uint32_t mgwi_l) MGWI_INL -> decltype(auto) { return (" + expr(ab, ae) +
                  "); };\n";
            evals.push_back("mgwi_e" + id);
          }
        }
        o_ += "::mgsim::wi::" + name + "(mgwi_c";
        for (const std::string &ev : evals) o_ += ", " + ev;
        o_ += ");\n";
      } else if (wi_is_collective(name)) {
        if (c.targs_e) unsupported(k, "explicit template arguments to '" + name + "'");
        if (c.args.empty() || !is(c.args[0].first, "mgsim")) {
          unsupported(k, "'" + name + "' without its call-site token");
          return false;
        }
        const std::string site = range_text(c.args[0].first, c.args[0].second);
        std::vector<std::pair<size_t, size_t>> rest(c.args.begin() + 1, c.args.end());
        std::vector<std::string> names = capture(rest);
        const std::string r = "mgwi_r" + std::to_string(++tmp_);
        o_ += "MGWI_LANES(" + r + ", ::mgsim::wi::result_t<decltype(" + qual + name + "(" + site +
              (names.empty() ? "" : ", ") + firsts(names) + "))>);\n";
        o_ += "::metal::mgwi_" + name + "(mgwi_c, " + r + ", " + site;
        for (const std::string &n : names) o_ += ", " + n;
        o_ += ");\n";
        rep = r + "[mgwi_l]";
      } else {
        // The overload the call picks (the probe's type), its parameters' lanes filled per lane
        // with the arguments converted as the call would, then its variant.
        calls_.insert(name);
        const std::string id = std::to_string(++tmp_);
        const std::string o = "mgwi_o" + id, r = "mgwi_r" + id;
        std::string dv, args, uni;
        bool effects = false;
        for (auto [ab, ae] : c.args) effects = effects || side_effects(t_, ab, ae);
        // Each argument: the caller's own per-lane variable (no copy if the callee only reads it),
        // a uniform expression (one value if the callee only reads it), or a copy per lane.
        // `skip` says when the copy is not needed (a constant expression over the overload O).
        std::vector<std::string> fill(c.args.size()), skip(c.args.size());
        for (size_t i = 0; i < c.args.size(); ++i) {
          const auto [ab, ae] = c.args[i];
          const std::string a = expr(ab, ae), n = std::to_string(i), lanes = "mgwi_a" + id + "_" + n;
          dv += (i ? ", " : "") + ("::std::declval<decltype((" + a + "))>()");
          const Var *v = ae == ab + 1 && ident(ab) && !subst_.count(ab) ? lookup(text(ab)) : nullptr;
          // The variable itself only when nothing else in the call can change it meanwhile: no
          // argument with side effects, and it is not named in another (a reference parameter).
          bool alone = v && v->k == Var::Lane && !effects && !exposed_.count(text(ab));
          for (size_t j = 0; alone && j < c.args.size(); ++j)
            for (size_t k = c.args[j].first; alone && j != i && k < c.args[j].second; ++k)
              if (ident(k) && text(k) == text(ab)) alone = false;
          if (alone) {
            skip[i] = "::mgsim::wi::direct_arg<" + o + ", " + n + ", std::remove_cv_t<decltype(" + v->storage + ")>>";
            args += ", ::mgsim::wi::darg<" + o + ", " + n + ">(" + v->storage + ", " + lanes + ")";
          } else if (!effects && constant_expr(ab, ae)) {
            const std::string u = "mgwi_u" + id + "_" + n;
            uni += "auto " + u + " = [&]() MGWI_INL -> decltype(auto) { return (" + a + "); };\n";
            skip[i] = "::mgsim::wi::by_ro<" + o + ", " + n + ">";
            args += ", ::mgsim::wi::uarg<" + o + ", " + n + ">(" + u + ", " + lanes + ")";
          } else {
            args += ", " + lanes;
          }
          // (The argument's text from outside any region: storage, never a region's cached copy,
          // whose address a reference parameter would keep past the region.)
          fill[i] = lanes + "[mgwi_l] = ::mgsim::wi::pass<" + o + ", " + n + ">(" + a + "); ";
        }
        o_ += "using " + o + " = decltype(" + qual + "mgwi_probe_" + name + targs + "(" + dv + "));\n" + uni;
        for (size_t i = 0; i < c.args.size(); ++i)
          o_ += "MGWI_LANES(mgwi_a" + id + "_" + std::to_string(i) + ", ::mgsim::wi::param_t<" + o + ", " +
                std::to_string(i) + ">);\n";
        if (!c.args.empty()) {
          std::string all_skipped;
          for (size_t i = 0; i < c.args.size(); ++i) all_skipped += (i ? " && " : "") + (skip[i].empty() ? "false" : skip[i]);
          o_ += "if constexpr (!(" + all_skipped + ")) {\n";
          region([&] {
            std::string fills;
            for (size_t i = 0; i < c.args.size(); ++i) {
              fills += skip[i].empty() ? fill[i] : "if constexpr (!" + skip[i] + ") { " + fill[i] + "} ";
            }
            return fills;
          });
          o_ += "}\n";
        }
        o_ += "MGWI_RESULT(" + r + ", decltype(" + qual + name + targs + "(" + dv + ")));\n";
        o_ += qual + "mgwi_" + name + "(" + o + "{}, mgwi_c, " + r + args + ");\n";
        rep = is_whole ? "" : r + "[mgwi_l]";
      }
      subst_[c.qs] = {c.close + 1, rep};
      if (is_whole) all = true;
      k = c.close;
    }
    return all;
  }
};

}  // namespace

bool wi_transform(const WiFunction &f, const std::function<bool(const std::string &)> &user_sync,
                  const std::function<WiLine(int)> &line_of, WiOutput &out) {
  Gen g(f, user_sync, line_of);
  return g.run(out);
}

}  // namespace mgsim
