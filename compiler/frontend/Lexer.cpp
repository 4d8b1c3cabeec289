//===- Lexer.cpp - Tokens of the .attn language ---------------------------===//
//
// Part of attnc.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Lexer.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace attnc;

llvm::StringRef attnc::getTokenKindName(TokenKind kind) {
  switch (kind) {
  case TokenKind::eof:
    return "end of file";
  case TokenKind::error:
    return "invalid token";
  case TokenKind::identifier:
    return "identifier";
  case TokenKind::qualified_name:
    return "qualified name";
  case TokenKind::integer:
    return "integer";
  case TokenKind::real:
    return "real number";
  case TokenKind::kw_model:
    return "'model'";
  case TokenKind::kw_dim:
    return "'dim'";
  case TokenKind::kw_input:
    return "'input'";
  case TokenKind::kw_weight:
    return "'weight'";
  case TokenKind::kw_state:
    return "'state'";
  case TokenKind::kw_output:
    return "'output'";
  case TokenKind::kw_layout:
    return "'layout'";
  case TokenKind::kw_repeat:
    return "'repeat'";
  case TokenKind::l_brace:
    return "'{'";
  case TokenKind::r_brace:
    return "'}'";
  case TokenKind::l_paren:
    return "'('";
  case TokenKind::r_paren:
    return "')'";
  case TokenKind::l_square:
    return "'['";
  case TokenKind::r_square:
    return "']'";
  case TokenKind::comma:
    return "','";
  case TokenKind::colon:
    return "':'";
  case TokenKind::equal:
    return "'='";
  case TokenKind::plus:
    return "'+'";
  case TokenKind::minus:
    return "'-'";
  case TokenKind::star:
    return "'*'";
  case TokenKind::amp:
    return "'&'";
  case TokenKind::less_equal:
    return "'<='";
  }
  return "token";
}

namespace {

/// Past this many lexical errors (e.g. a binary file) the rest is ignored.
constexpr unsigned kMaxLexErrors = 20;

bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

class Lexer {
public:
  Lexer(llvm::StringRef buffer, DiagnosticEngine &diags)
      : cur(buffer.begin()), end(buffer.end()), diags(diags) {}

  std::vector<Token> lexAll() {
    std::vector<Token> tokens;
    while (true) {
      bool startsLine = skipTrivia();
      Token tok = lexToken();
      if (numErrors == kMaxLexErrors && tok.is(TokenKind::error)) {
        diags.note(tok.getLoc(), "too many errors; stopping here");
        cur = end;
        tok = make(TokenKind::eof, end);
      }
      tok.startsLine = startsLine;
      tokens.push_back(tok);
      lastKind = tok.kind;
      if (tok.is(TokenKind::eof))
        return tokens;
    }
  }

private:
  /// Skips whitespace and comments; returns whether a newline was crossed
  /// (or the buffer start), i.e. whether the next token begins a line.
  bool skipTrivia() {
    bool newline = atStart;
    atStart = false;
    while (cur != end) {
      char c = *cur;
      if (c == '\n') {
        newline = true;
        ++cur;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++cur;
      } else if (c == '#') {
        while (cur != end && *cur != '\n')
          ++cur;
      } else {
        break;
      }
    }
    return newline;
  }

  static bool endsOperand(TokenKind kind) {
    switch (kind) {
    case TokenKind::identifier:
    case TokenKind::qualified_name:
    case TokenKind::integer:
    case TokenKind::real:
    case TokenKind::r_paren:
      return true;
    default:
      return false;
    }
  }

  Token make(TokenKind kind, const char *start) {
    Token tok;
    tok.kind = kind;
    tok.spelling = llvm::StringRef(start, cur - start);
    return tok;
  }

  Token makeError(const char *start, const llvm::Twine &msg) {
    ++numErrors;
    diags.error(llvm::SMLoc::getFromPointer(start), msg);
    return make(TokenKind::error, start);
  }

  Token lexToken() {
    const char *start = cur;
    if (cur == end)
      return make(TokenKind::eof, start);
    char c = *cur++;
    switch (c) {
    case '{':
      return make(TokenKind::l_brace, start);
    case '}':
      return make(TokenKind::r_brace, start);
    case '(':
      return make(TokenKind::l_paren, start);
    case ')':
      return make(TokenKind::r_paren, start);
    case '[':
      return make(TokenKind::l_square, start);
    case ']':
      return make(TokenKind::r_square, start);
    case ',':
      return make(TokenKind::comma, start);
    case ':':
      return make(TokenKind::colon, start);
    case '=':
      return make(TokenKind::equal, start);
    case '+':
      return make(TokenKind::plus, start);
    case '<':
      if (cur != end && *cur == '=') {
        ++cur;
        return make(TokenKind::less_equal, start);
      }
      return makeError(start, "unexpected '<'; the only comparison is '<='");
    case '*':
      return make(TokenKind::star, start);
    case '&':
      return make(TokenKind::amp, start);
    case '-':
      // A '-' right before a digit is a negative literal (`eps = -1.0`)
      // unless it follows an operand, where it subtracts (`x -1.0` is
      // `x - 1.0`).
      if (!endsOperand(lastKind) && cur != end &&
          (isDigit(*cur) || *cur == '.'))
        return lexNumber(start);
      return make(TokenKind::minus, start);
    default:
      break;
    }
    if (isDigit(c) || c == '.') {
      --cur;
      return lexNumber(start);
    }
    if (isIdentStart(c))
      return lexName(start);
    if (c >= 0x20 && c < 0x7f)
      return makeError(start, llvm::Twine("unexpected character '") +
                                  llvm::Twine(c) + "'");
    std::string hex;
    llvm::raw_string_ostream(hex)
        << llvm::format_hex(static_cast<unsigned char>(c), 4);
    return makeError(start, "unexpected byte " + hex + " in source");
  }

  Token lexName(const char *start) {
    while (cur != end && isIdentChar(*cur))
      ++cur;
    bool qualified = false;
    while (cur != end && *cur == '.') {
      const char *dot = cur++;
      // A `{i}` component is replaced by the index of `repeat N as i`.
      if (cur != end && *cur == '{') {
        const char *open = cur++;
        while (cur != end && isIdentChar(*cur))
          ++cur;
        if (cur == end || *cur != '}' || cur == open + 1) {
          cur = open + 1;
          return makeError(open, "expected '{NAME}' with the index name of a "
                                 "'repeat N as NAME' block, e.g. 'h.{i}.ln_1'");
        }
        ++cur;
        qualified = true;
        continue;
      }
      if (cur == end || !isIdentChar(*cur)) {
        cur = dot + 1;
        return makeError(dot, "expected a name component after '.' (qualified "
                              "names are written without spaces, "
                              "e.g. 'ln_1.weight')");
      }
      while (cur != end && isIdentChar(*cur))
        ++cur;
      qualified = true;
    }
    if (qualified)
      return make(TokenKind::qualified_name, start);
    llvm::StringRef text(start, cur - start);
    TokenKind kind = llvm::StringSwitch<TokenKind>(text)
                         .Case("model", TokenKind::kw_model)
                         .Case("dim", TokenKind::kw_dim)
                         .Case("input", TokenKind::kw_input)
                         .Case("weight", TokenKind::kw_weight)
                         .Case("state", TokenKind::kw_state)
                         .Case("output", TokenKind::kw_output)
                         .Case("layout", TokenKind::kw_layout)
                         .Case("repeat", TokenKind::kw_repeat)
                         .Default(TokenKind::identifier);
    return make(kind, start);
  }

  /// number := '-'? (digits ('.' digits)? | '.' digits) exponent?
  /// exponent := [eE] [+-]? digits
  Token lexNumber(const char *start) {
    bool isReal = false;
    auto skipDigits = [&] {
      const char *first = cur;
      while (cur != end && isDigit(*cur))
        ++cur;
      return cur != first;
    };
    bool intDigits = skipDigits();
    if (cur != end && *cur == '.') {
      ++cur;
      isReal = true;
      if (!skipDigits())
        return makeError(start, "expected digits after '.' in a number");
    } else if (!intDigits) {
      return makeError(start, "expected digits in a number");
    }
    if (cur != end && (*cur == 'e' || *cur == 'E')) {
      const char *e = cur++;
      if (cur != end && (*cur == '+' || *cur == '-'))
        ++cur;
      if (!skipDigits())
        return makeError(e, "expected digits in the exponent of a number");
      isReal = true;
    }
    if (cur != end && (isIdentStart(*cur) || *cur == '.')) {
      while (cur != end && (isIdentChar(*cur) || *cur == '.'))
        ++cur;
      return makeError(start, "invalid number '" +
                                  llvm::StringRef(start, cur - start) + "'");
    }
    return make(isReal ? TokenKind::real : TokenKind::integer, start);
  }

  const char *cur;
  const char *end;
  bool atStart = true;
  unsigned numErrors = 0;
  /// The previous token, to tell a negative literal from a subtraction.
  TokenKind lastKind = TokenKind::eof;
  DiagnosticEngine &diags;
};

} // namespace

std::vector<Token> attnc::lexBuffer(unsigned bufferId,
                                    DiagnosticEngine &diags) {
  const llvm::MemoryBuffer *buffer =
      diags.getSourceMgr().getMemoryBuffer(bufferId);
  return Lexer(buffer->getBuffer(), diags).lexAll();
}
