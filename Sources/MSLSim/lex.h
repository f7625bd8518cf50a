// The MSL translator's lexer (private to MSLSim): tokens keep their leading whitespace and comments,
// so rewritten output keeps the input's line structure.
#ifndef MGSIM_LEX_H
#define MGSIM_LEX_H

#include <string>
#include <vector>

namespace mgsim {

enum class Tok { Ident, Number, String, Punct, PP, End };

struct Token {
  Tok kind;
  std::string text;
  std::string pre;  // whitespace and comments before the token
  int line;
};

bool is_ident_start(char c);
bool is_ident_char(char c);
std::vector<Token> lex(const std::string &s);

}  // namespace mgsim

#endif
