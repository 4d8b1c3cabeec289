//===- Lexer.h - Tokens of the .attn language -------------------*- C++ -*-===//
//
// Part of attnc. A hand-written lexer that turns one source buffer into a
// token vector. Lexical errors are reported once, here, and leave an `error`
// token so that the parser can recover without repeating them.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_COMPILER_FRONTEND_LEXER_H
#define ATTNC_COMPILER_FRONTEND_LEXER_H

#include "compiler/frontend/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <vector>

namespace attnc {

enum class TokenKind {
  eof,
  error,
  identifier,     ///< `x`, `ln_1`
  qualified_name, ///< `encoder.layer.0.attention`: one token, no spaces
  integer,        ///< `768`, `-3`
  real,           ///< `1e-5`, `0.5`, `-1.0`
  kw_model,
  kw_dim,
  kw_input,
  kw_weight,
  kw_state,
  kw_output,
  kw_layout,
  kw_repeat,
  l_brace,
  r_brace,
  l_paren,
  r_paren,
  l_square,
  r_square,
  comma,
  colon,
  equal,
  plus,
  minus,
  star,
  amp,
  less_equal,
};

/// A printable name for diagnostics, e.g. "'{'" or "identifier".
llvm::StringRef getTokenKindName(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::eof;
  llvm::StringRef spelling;
  /// Whether the token is the first one on its source line; the parser uses
  /// it to find the next statement after a syntax error.
  bool startsLine = false;

  bool is(TokenKind k) const { return kind == k; }
  bool isName() const {
    return kind == TokenKind::identifier || kind == TokenKind::qualified_name;
  }
  llvm::SMLoc getLoc() const {
    return llvm::SMLoc::getFromPointer(spelling.data());
  }
  llvm::SMLoc getEndLoc() const {
    return llvm::SMLoc::getFromPointer(spelling.data() + spelling.size());
  }
  llvm::SMRange getRange() const { return {getLoc(), getEndLoc()}; }
};

/// Lexes the whole buffer `bufferId` of `diags`' source manager. The result
/// always ends with an `eof` token.
std::vector<Token> lexBuffer(unsigned bufferId, DiagnosticEngine &diags);

} // namespace attnc

#endif // ATTNC_COMPILER_FRONTEND_LEXER_H
