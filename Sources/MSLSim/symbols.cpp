// What a compiled kernel object may call. Kernel code is compiled as C++ against the prelude, and
// the host's C library is in scope there (its headers come with the C++ standard library the prelude
// uses), so `system("…")` or `abort()` would compile — Metal rejects both, since MSL has no such
// functions. Every object's undefined dynamic symbols must therefore be what the prelude and the
// compiler themselves need: math from libm, memcpy/memset, thread-local storage, unwinding glue and
// integer/float helper routines. Anything else is a call the kernel made into the host, reported as
// Metal reports an unknown function. Inline assembly (no symbol) is refused in the source.
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "sim_internal.h"

namespace mgsim {

namespace {

// libm's functions (C99 and the GNU extensions the prelude's math may lower to), as float,
// double and long double variants.
const char *const kMath[] = {
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cos", "cosh", "erf",
    "erfc", "exp", "exp10", "exp2", "expm1", "fabs", "fdim", "floor", "fma", "fmax", "fmin", "fmod", "frexp", "hypot",
    "ilogb", "ldexp", "lgamma", "llrint", "llround", "log", "log10", "log1p", "log2", "logb", "lrint", "lround",
    "modf", "nan", "nearbyint", "nextafter", "nexttoward", "pow", "pow10", "remainder", "remquo", "rint", "round",
    "scalbln", "scalbn", "sin", "sincos", "sinh", "sqrt", "tan", "tanh", "tgamma", "trunc", "significand",
};

// Memory, TLS, unwinding and teardown glue the compiler emits on its own (memcmp and bcmp:
// comparisons in checked-mode kernels since the work-item/race-check prelude).
const char *const kRuntime[] = {
    "memcpy", "memmove", "memset", "memcmp", "bcmp", "__tls_get_addr", "__cxa_finalize", "_Unwind_Resume", "__gxx_personality_v0",
    "__gmon_start__", "_ITM_registerTMCloneTable", "_ITM_deregisterTMCloneTable",
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
// std::isspace in the C locale (what std::regex's \s is)
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// libgcc's integer and soft-float helpers: __popcountdi2, __udivti3, __extendhfsf2, __truncsfbf2 …
// The whole name is "__", lower-case letters that start with one of these stems, digits, at most
// one mode letter (i f h t b d s x q c) and digits (what the regex
// `__(stem|…)[a-z]*[0-9]+(i|f|h|t|b|d|s|x|q|c)?[0-9]*` matched; <regex> was most of this unit's
// compile time).
bool libgcc_helper(const std::string &name) {
  static const char *const kStems[] = {
      "popcount", "clz", "ctz", "ffs", "parity", "bswap", "mul", "div", "udiv", "mod", "umod", "udivmod", "divmod",
      "ashl", "ashr", "lshr", "neg", "cmp", "ucmp", "abs", "fix", "fixuns", "float", "floatun", "floatuns", "extend",
      "trunc", "add", "sub", "pow", "powi", "mulc", "divc", "unord", "eq", "ne", "ge", "gt", "le", "lt",
  };
  const size_t n = name.size();
  if (name.compare(0, 2, "__") != 0) return false;
  size_t i = 2;
  while (i < n && name[i] >= 'a' && name[i] <= 'z') ++i;
  bool stem = false;
  for (const char *s : kStems) stem = stem || (strlen(s) <= i - 2 && name.compare(2, strlen(s), s) == 0);
  if (!stem) return false;
  const size_t digits = i;
  while (i < n && is_digit(name[i])) ++i;
  if (i == digits) return false;
  if (i < n && std::string_view("ifhtbdsxqc").find(name[i]) != std::string_view::npos) {
    ++i;
    while (i < n && is_digit(name[i])) ++i;
  }
  return i == n;
}

bool allowed(const std::string &name) {
  static const std::set<std::string> exact = [] {
    std::set<std::string> s(std::begin(kRuntime), std::end(kRuntime));
    for (const char *m : kMath) {
      s.insert(m);
      s.insert(std::string(m) + "f");
      s.insert(std::string(m) + "l");
      s.insert(std::string("__") + m + "_finite");
      s.insert(std::string("__") + m + "f_finite");
    }
    return s;
  }();
  if (exact.count(name)) return true;
  return libgcc_helper(name);
}

std::string demangled(const std::string &name) {
  int status = 0;
  char *d = ::abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out = d;
  free(d);
  return out;
}

/** The function's plain name: "std::__cxx11::to_string(int)" → "to_string". */
std::string base_name(const std::string &pretty) {
  std::string s = pretty.substr(0, pretty.find('('));
  size_t colon = s.rfind("::");
  if (colon != std::string::npos) s = s.substr(colon + 2);
  size_t lt = s.find('<');
  if (lt != std::string::npos) s = s.substr(0, lt);
  return s;
}

/** Walks source lines with their position in the user's source: `#line N "file"` and the
 *  preprocessor's `# N "file"` markers set the next line's number (and file). */
// A line marker `[ws]#[ws][line ws]DIGITS[ws "FILE"]REST` (REST without \r or \n, which the regex
// `^\s*#\s*(?:line\s+)?([0-9]+)(?:\s+"([^"]*)")?.*` this replaces could not match): the number,
// and the file when it has one.
bool line_directive(const std::string &line, std::string &number, bool &has_file, std::string &file) {
  const size_t n = line.size();
  size_t i = 0;
  while (i < n && is_space(line[i])) ++i;
  if (i == n || line[i] != '#') return false;
  ++i;
  while (i < n && is_space(line[i])) ++i;
  if (line.compare(i, 4, "line") == 0 && i + 4 < n && is_space(line[i + 4])) {
    i += 4;
    while (i < n && is_space(line[i])) ++i;
  }
  const size_t digits = i;
  while (i < n && is_digit(line[i])) ++i;
  if (i == digits) return false;
  number = line.substr(digits, i - digits);
  has_file = false;
  size_t q = i;
  while (q < n && is_space(line[q])) ++q;
  if (q > i && q < n && line[q] == '"') {
    const size_t close = line.find('"', q + 1);
    if (close != std::string::npos) {
      has_file = true;
      file = line.substr(q + 1, close - q - 1);
      i = close + 1;
    }
  }
  return line.find_first_of("\r\n", i) == std::string::npos;
}

template <typename F>
void for_each_line(const std::string &source, F &&fn) {
  std::istringstream in(source);
  std::string line, number, named;
  std::string file = "program_source";
  bool has_file = false;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line_directive(line, number, has_file, named)) {
      n = std::stoi(number) - 1;
      if (has_file && !named.empty() && named[0] != '<') file = named;
      continue;
    }
    if (fn(line, file + ":" + std::to_string(n) + ":")) return;
  }
}

/** "file:LINE:COL: " of the first use of `name` in the user's source, or "". */
std::string locate(const std::string &source, const std::string &name) {
  std::string found;
  if (name.empty()) return found;
  for_each_line(source, [&](const std::string &line, const std::string &where) {
    for (size_t at = line.find(name); at != std::string::npos; at = line.find(name, at + 1)) {
      bool start = at == 0 || !(isalnum(uint8_t(line[at - 1])) || line[at - 1] == '_');
      size_t end = at + name.size();
      bool stop = end >= line.size() || !(isalnum(uint8_t(line[end])) || line[end] == '_');
      if (start && stop) {
        found = where + std::to_string(at + 1) + ": ";
        return true;
      }
    }
    return false;
  });
  return found;
}

/** The undefined, non-weak symbols of an ELF64 shared object's dynamic symbol table. */
bool undefined_symbols(const std::string &path, std::vector<std::string> &out, std::string &error) {
  std::ifstream f(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (data.size() < sizeof(Elf64_Ehdr) || memcmp(data.data(), ELFMAG, SELFMAG) != 0 || data[EI_CLASS] != ELFCLASS64) {
    error = path + " is not an ELF64 object";
    return false;
  }
  Elf64_Ehdr eh;
  memcpy(&eh, data.data(), sizeof eh);
  if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff + uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr) > data.size()) {
    error = path + " has no readable section table";
    return false;
  }
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  memcpy(sh.data(), data.data() + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr &s : sh) {
    if (s.sh_type != SHT_DYNSYM || s.sh_link >= sh.size()) continue;
    const Elf64_Shdr &strtab = sh[s.sh_link];
    if (s.sh_offset + s.sh_size > data.size() || strtab.sh_offset + strtab.sh_size > data.size()) break;
    for (uint64_t off = s.sh_offset; off + sizeof(Elf64_Sym) <= s.sh_offset + s.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      memcpy(&sym, data.data() + off, sizeof sym);
      if (sym.st_shndx != SHN_UNDEF || sym.st_name == 0 || sym.st_name >= strtab.sh_size) continue;
      if (ELF64_ST_BIND(sym.st_info) == STB_WEAK) continue;
      const char *name = data.data() + strtab.sh_offset + sym.st_name;
      out.emplace_back(name, strnlen(name, strtab.sh_size - sym.st_name));
    }
    return true;
  }
  return true;  // no dynamic symbols at all
}

}  // namespace

bool check_inline_assembly(const std::string &source, std::string &error) {
  // Tokens outside string and character literals (comments are gone after preprocessing).
  for_each_line(source, [&](const std::string &line, const std::string &where) {
    char quote = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (quote) {
        if (c == '\\') ++i;
        else if (c == quote) quote = 0;
        continue;
      }
      if (c == '"' || c == '\'') {
        quote = c;
        continue;
      }
      if (!(isalpha(uint8_t(c)) || c == '_') || (i > 0 && (isalnum(uint8_t(line[i - 1])) || line[i - 1] == '_'))) continue;
      size_t j = i;
      while (j < line.size() && (isalnum(uint8_t(line[j])) || line[j] == '_')) ++j;
      std::string word = line.substr(i, j - i);
      if (word == "asm" || word == "__asm" || word == "__asm__") {
        error = where + std::to_string(i + 1) + ": error: inline assembly is not supported in the Metal Shading Language";
        return true;
      }
      i = j - 1;
    }
    return false;
  });
  return error.empty();
}

bool check_kernel_symbols(const std::string &so_path, const std::string &source, std::string &error) {
  std::vector<std::string> undefined;
  if (!undefined_symbols(so_path, undefined, error)) return false;
  for (const std::string &sym : undefined) {
    std::string name = sym.substr(0, sym.find('@'));
    if (allowed(name)) continue;
    std::string pretty = demangled(name);
    std::string base = name.rfind("_Z", 0) == 0 ? base_name(pretty) : name;
    // Nothing in this process defines it: a function declared but never defined (objects are
    // linked without -z defs, compile.cpp), reported as the linker would.
    if (!dlsym(RTLD_DEFAULT, name.c_str())) {
      error = locate(source, base) + "error: undefined reference to `" + pretty + "'";
      return false;
    }
    error = locate(source, base) + "error: use of '" + pretty +
            "', which is not a Metal Shading Language function (kernels may call the Metal standard library only; "
            "this is host code, such as the C library)";
    return false;
  }
  return true;
}

}  // namespace mgsim
