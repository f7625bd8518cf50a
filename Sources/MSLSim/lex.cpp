// The MSL translator's lexer.
#include "lex.h"

#include <cctype>

namespace mgsim {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::vector<Token> lex(const std::string &s) {
  std::vector<Token> toks;
  size_t i = 0, n = s.size();
  int line = 1;
  bool line_start = true;  // only whitespace since the last newline
  std::string pre;
  auto push = [&](Tok k, size_t b, size_t e, int l) {
    toks.push_back(Token{k, s.substr(b, e - b), pre, l});
    pre.clear();
  };
  while (i < n) {
    char c = s[i];
    if (c == '\n') {
      pre += c;
      ++line;
      ++i;
      line_start = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      pre += c;
      ++i;
      continue;
    }
    if (c == '\\' && i + 1 < n && s[i + 1] == '\n') {  // stray line splice
      pre += "\\\n";
      i += 2;
      ++line;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      size_t e = s.find('\n', i);
      if (e == std::string::npos) e = n;
      pre.append(s, i, e - i);
      i = e;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      e = (e == std::string::npos) ? n : e + 2;
      for (size_t k = i; k < e; ++k)
        if (s[k] == '\n') ++line;
      pre.append(s, i, e - i);
      i = e;
      continue;
    }
    int l = line;
    if (c == '#' && line_start) {
      // A preprocessor directive runs to the end of the line, through line splices.
      size_t b = i;
      while (i < n) {
        if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n') {
          i += 2;
          ++line;
          continue;
        }
        if (s[i] == '\\' && i + 2 < n && s[i + 1] == '\r' && s[i + 2] == '\n') {
          i += 3;
          ++line;
          continue;
        }
        if (s[i] == '\n') break;
        if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {  // a block comment may span lines
          size_t e = s.find("*/", i + 2);
          e = (e == std::string::npos) ? n : e + 2;
          for (size_t k = i; k < e; ++k)
            if (s[k] == '\n') ++line;
          i = e;
          continue;
        }
        ++i;
      }
      push(Tok::PP, b, i, l);
      continue;
    }
    line_start = false;
    size_t b = i;
    if (is_ident_start(c)) {
      while (i < n && is_ident_char(s[i])) ++i;
      // Raw string literal R"delim( ... )delim"
      if (i < n && s[i] == '"' && s[i - 1] == 'R') {
        size_t open = s.find('(', i);
        if (open != std::string::npos) {
          std::string delim = ")" + s.substr(i + 1, open - i - 1) + "\"";
          size_t e = s.find(delim, open);
          e = (e == std::string::npos) ? n : e + delim.size();
          for (size_t k = i; k < e; ++k)
            if (s[k] == '\n') ++line;
          i = e;
          push(Tok::String, b, i, l);
          continue;
        }
      }
      push(Tok::Ident, b, i, l);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      while (i < n) {
        char d = s[i];
        if (is_ident_char(d) || d == '.' || d == '\'') {
          ++i;
        } else if ((d == '+' || d == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' ||
                                               s[i - 1] == 'P')) {
          ++i;
        } else {
          break;
        }
      }
      push(Tok::Number, b, i, l);
      continue;
    }
    if (c == '"' || c == '\'') {
      ++i;
      while (i < n && s[i] != c) {
        if (s[i] == '\\' && i + 1 < n) ++i;
        if (s[i] == '\n') ++line;
        ++i;
      }
      if (i < n) ++i;
      push(Tok::String, b, i, l);
      continue;
    }
    // No ">>" token: it is two '>' (the second with nothing before it), as C++ parsers split it when
    // it closes two template argument lists (S<T<U>>); eval() joins them back into a shift.
    static const char *const puncts[] = {"<<=", ">>=", "...", "->*", "::", "->", "++", "--", "<<",
                                         "<=",  ">=",  "==",  "!=",  "&&", "||", "+=", "-=",
                                         "*=",  "/=",  "%=",  "&=",  "|=", "^=", "##"};
    size_t len = 1;
    for (const char *p : puncts) {
      size_t pl = std::char_traits<char>::length(p);
      if (s.compare(i, pl, p) == 0) {
        len = pl;
        break;
      }
    }
    i += len;
    push(Tok::Punct, b, i, l);
  }
  toks.push_back(Token{Tok::End, "", pre, line});
  return toks;
}

}  // namespace mgsim
