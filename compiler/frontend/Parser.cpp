//===- Parser.cpp - Recursive-descent parser for .attn --------------------===//
//
// Part of attnc. The grammar is in docs/language.md.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Parser.h"
#include "compiler/frontend/Lexer.h"

#include <algorithm>
#include <cmath>

using namespace attnc;

namespace {

/// After this many errors the parser stops: the rest is usually noise.
constexpr unsigned kMaxParseErrors = 20;

class Parser {
public:
  Parser(std::vector<Token> tokens, DiagnosticEngine &diags)
      : tokens(std::move(tokens)), diags(diags),
        errorsAtStart(diags.getNumErrors()) {}

  std::unique_ptr<ModelAST> parseFile();

private:
  //===--- Token access ---------------------------------------------------===//

  const Token &tok() const { return tokens[pos]; }
  const Token &peek(size_t n = 1) const {
    return tokens[std::min(pos + n, tokens.size() - 1)];
  }
  void consume() {
    lastEnd = tok().getEndLoc();
    if (!tok().is(TokenKind::eof))
      ++pos;
  }
  llvm::SMRange rangeFrom(llvm::SMLoc start) const { return {start, lastEnd}; }

  /// Describes the current token for "found ..." in messages.
  std::string describeTok() const {
    switch (tok().kind) {
    case TokenKind::identifier:
    case TokenKind::qualified_name:
    case TokenKind::integer:
    case TokenKind::real:
      return (getTokenKindName(tok().kind) + " '" + tok().spelling + "'").str();
    default:
      return getTokenKindName(tok().kind).str();
    }
  }

  /// Reports an error at the current token, unless the lexer already reported
  /// that token. Returns false so callers can `return error(...)`.
  bool error(const llvm::Twine &msg) {
    if (tok().is(TokenKind::error))
      return false;
    return errorAt(tok().getLoc(), msg, tok().getRange());
  }
  bool errorAt(llvm::SMLoc loc, const llvm::Twine &msg,
               llvm::ArrayRef<llvm::SMRange> ranges = {}) {
    if (!fatal)
      diags.error(loc, msg, ranges);
    if (diags.getNumErrors() - errorsAtStart >= kMaxParseErrors && !fatal) {
      diags.note(loc, "too many errors; stopping here");
      fatal = true;
    }
    return false;
  }
  bool expect(TokenKind kind, const llvm::Twine &context) {
    if (tok().is(kind)) {
      consume();
      return true;
    }
    return error("expected " + getTokenKindName(kind) + " " + context +
                 ", found " + describeTok());
  }

  //===--- Declarations ---------------------------------------------------===//

  bool parseStatement(ModelAST &model);
  bool parseRepeat(ModelAST &model);
  /// The name a token spells, with each `{i}` component replaced by the
  /// index of the enclosing `repeat ... as i`.
  std::string nameOf(const Token &t);
  bool parseDimDecl(ModelAST &model);
  bool parseInputDecl(ModelAST &model);
  bool parseWeightDecl(ModelAST &model);
  bool parseStateDecl(ModelAST &model);
  bool parseAssignment(ModelAST &model);
  bool parseOutput(ModelAST &model);
  bool parseTensorType(TensorType &type);
  bool parseLayout(WeightDecl &weight);
  bool parseInteger(int64_t &value);
  void skipToNextStatement();

  //===--- Expressions ----------------------------------------------------===//

  /// Each returns the tree depth of what it parsed in `depth`; `nesting` is
  /// how deep the parser's own recursion is.
  ExprPtr parseExpr(unsigned nesting, unsigned &depth);
  ExprPtr parseBinary(unsigned nesting, unsigned &depth, int level);
  ExprPtr parsePrimary(unsigned nesting, unsigned &depth);
  ExprPtr parseCall(unsigned nesting, unsigned &depth);
  ExprPtr parseNumber();
  bool checkDepth(unsigned depth, llvm::SMLoc loc);

  std::vector<Token> tokens;
  size_t pos = 0;
  llvm::SMLoc lastEnd;
  DiagnosticEngine &diags;
  unsigned errorsAtStart;
  /// Set when parsing cannot usefully go on (nesting limit, error limit).
  bool fatal = false;
  /// The indices of the enclosing `repeat` blocks, innermost last.
  std::vector<std::pair<std::string, int64_t>> repeatIndices;
};

} // namespace

std::unique_ptr<ModelAST> Parser::parseFile() {
  auto model = std::make_unique<ModelAST>();
  llvm::SMLoc start = tok().getLoc();
  if (!tok().is(TokenKind::kw_model)) {
    error("expected 'model NAME { ... }' at the start of the file, found " +
          describeTok());
    return nullptr;
  }
  consume();
  if (!tok().is(TokenKind::identifier)) {
    error("expected the model's name after 'model', found " + describeTok());
    return nullptr;
  }
  model->name = tok().spelling.str();
  model->nameLoc = tok().getRange();
  consume();
  Token open = tok();
  if (!expect(TokenKind::l_brace, "after the model's name"))
    return nullptr;

  while (!fatal && !tok().is(TokenKind::r_brace) && !tok().is(TokenKind::eof)) {
    size_t before = pos;
    if (parseStatement(*model))
      continue;
    if (pos == before)
      consume();
    skipToNextStatement();
  }
  if (fatal)
    return nullptr;
  if (tok().is(TokenKind::eof)) {
    error("expected '}' to close model '" + model->name + "'");
    diags.note(open.getLoc(), "the model's body opened here");
    return nullptr;
  }
  consume();
  model->range = rangeFrom(start);
  if (!tok().is(TokenKind::eof))
    error("unexpected " + describeTok() +
          " after the end of the model; a file holds one model");
  if (diags.getNumErrors() != errorsAtStart)
    return nullptr;
  return model;
}

/// Skips to a token that can start a statement: a declaration keyword, a
/// `NAME =` at the start of a line, or the model's closing brace.
void Parser::skipToNextStatement() {
  while (true) {
    const Token &t = tok();
    switch (t.kind) {
    case TokenKind::eof:
    case TokenKind::r_brace:
    case TokenKind::kw_dim:
    case TokenKind::kw_input:
    case TokenKind::kw_weight:
    case TokenKind::kw_state:
    case TokenKind::kw_output:
    case TokenKind::kw_repeat:
      return;
    case TokenKind::identifier:
    case TokenKind::qualified_name:
      if (t.startsLine && peek().is(TokenKind::equal))
        return;
      break;
    default:
      break;
    }
    consume();
  }
}

bool Parser::parseStatement(ModelAST &model) {
  switch (tok().kind) {
  case TokenKind::kw_dim:
    return parseDimDecl(model);
  case TokenKind::kw_input:
    return parseInputDecl(model);
  case TokenKind::kw_weight:
    return parseWeightDecl(model);
  case TokenKind::kw_state:
    return parseStateDecl(model);
  case TokenKind::kw_output:
    return parseOutput(model);
  case TokenKind::kw_repeat:
    return parseRepeat(model);
  case TokenKind::identifier:
    return parseAssignment(model);
  case TokenKind::qualified_name:
    if (peek().is(TokenKind::equal))
      return error("cannot assign to '" + tok().spelling +
                   "': value names cannot contain '.'");
    [[fallthrough]];
  default:
    return error(
        "expected a statement ('dim', 'input', 'weight', 'state', 'output' "
        "or 'NAME = EXPR'), found " +
        describeTok());
  }
}

/// The most copies one `repeat` may make: a bound on work, not on models.
constexpr int64_t kMaxRepeat = 4096;

/// repeat := 'repeat' INT 'as' IDENT '{' statement* '}'
/// The body is parsed once per index, with `{IDENT}` in qualified names
/// standing for it, as if it were written out N times.
bool Parser::parseRepeat(ModelAST &model) {
  consume();
  // After an error in the header, the body is skipped whole, so its braces
  // do not read as the model's.
  auto skipBody = [&] {
    while (!tok().is(TokenKind::l_brace) && !tok().is(TokenKind::r_brace) &&
           !tok().is(TokenKind::eof))
      consume();
    for (int depth = 0; !tok().is(TokenKind::eof);) {
      depth += tok().is(TokenKind::l_brace)   ? 1
               : tok().is(TokenKind::r_brace) ? -1
                                              : 0;
      consume();
      if (depth <= 0)
        break;
    }
    return false;
  };
  Token countTok = tok();
  int64_t count;
  if (!parseInteger(count))
    return skipBody();
  if (count < 1 || count > kMaxRepeat) {
    diags.error(countTok.getLoc(),
                "a repeat count must be in 1.." + llvm::Twine(kMaxRepeat) +
                    ", got " + llvm::Twine(count),
                countTok.getRange());
    return skipBody();
  }
  if (!tok().is(TokenKind::identifier) || tok().spelling != "as") {
    error("expected 'as NAME' after the repeat count (as in 'repeat " +
          llvm::Twine(count) + " as i { ... }'), found " + describeTok());
    return skipBody();
  }
  consume();
  if (!tok().is(TokenKind::identifier)) {
    error("expected the index name after 'as', found " + describeTok());
    return skipBody();
  }
  std::string index = tok().spelling.str();
  for (const auto &[outer, value] : repeatIndices)
    if (outer == index) {
      error("'" + index +
            "' is already the index of an enclosing repeat; "
            "give this one another name");
      return skipBody();
    }
  consume();
  Token open = tok();
  if (!expect(TokenKind::l_brace, "after 'repeat N as NAME'"))
    return false;
  size_t body = pos;
  unsigned errorsBefore = diags.getNumErrors();
  for (int64_t i = 0; i < count; ++i) {
    pos = body;
    repeatIndices.push_back({index, i});
    while (!fatal && !tok().is(TokenKind::r_brace) &&
           !tok().is(TokenKind::eof)) {
      size_t before = pos;
      if (parseStatement(model))
        continue;
      if (pos == before)
        consume();
      skipToNextStatement();
    }
    repeatIndices.pop_back();
    // An error in the body is reported once, not once per copy.
    if (fatal || diags.getNumErrors() != errorsBefore)
      break;
  }
  if (fatal)
    return false;
  if (!tok().is(TokenKind::r_brace)) {
    error("expected '}' to close the repeat");
    diags.note(open.getLoc(), "the repeat's body opened here");
    return false;
  }
  consume();
  return true;
}

std::string Parser::nameOf(const Token &t) {
  llvm::StringRef text = t.spelling;
  std::string result;
  while (!text.empty()) {
    size_t open = text.find('{');
    result += text.substr(0, open).str();
    if (open == llvm::StringRef::npos)
      break;
    size_t close = text.find('}', open);
    llvm::StringRef index = text.slice(open + 1, close);
    auto it =
        llvm::find_if(llvm::reverse(repeatIndices),
                      [&](const auto &entry) { return entry.first == index; });
    if (it == repeatIndices.rend()) {
      diags.error(llvm::SMLoc::getFromPointer(index.data() - 1),
                  "'{" + index + "}' is outside a 'repeat N as " + index +
                      " { ... }' block",
                  t.getRange());
      result += "{" + index.str() + "}";
    } else {
      result += std::to_string(it->second);
    }
    text = text.substr(close + 1);
  }
  return result;
}

bool Parser::parseInteger(int64_t &value) {
  if (tok().is(TokenKind::real))
    return error("expected an integer, found real number '" + tok().spelling +
                 "'");
  if (!tok().is(TokenKind::integer))
    return error("expected an integer, found " + describeTok());
  if (tok().spelling.getAsInteger(10, value))
    return error("integer '" + tok().spelling + "' is too large");
  consume();
  return true;
}

/// dim_decl := 'dim' dim_item (',' dim_item)*
/// dim_item := IDENT ('<=' INT)?
bool Parser::parseDimDecl(ModelAST &model) {
  consume();
  do {
    if (!tok().is(TokenKind::identifier))
      return error("expected a dim name, found " + describeTok());
    auto dim = std::make_unique<DimDecl>();
    dim->name = tok().spelling.str();
    dim->loc = tok().getRange();
    consume();
    if (tok().is(TokenKind::less_equal)) {
      consume();
      llvm::SMLoc boundStart = tok().getLoc();
      int64_t bound;
      if (!parseInteger(bound))
        return false;
      dim->bound = bound;
      dim->boundLoc = rangeFrom(boundStart);
    }
    model.dims.push_back(std::move(dim));
  } while (tok().is(TokenKind::comma) && (consume(), true));
  return true;
}

/// type := ('f32' | 'i32' | 'bf16' | 'f16' | 'i8' | 'i4') '[' extent (','
/// extent)* ']'
bool Parser::parseTensorType(TensorType &type) {
  llvm::SMLoc start = tok().getLoc();
  if (!tok().is(TokenKind::identifier))
    return error("expected a tensor type such as 'f32[B, S, 768]', found " +
                 describeTok());
  if (tok().spelling == "f32")
    type.elementType = ElementType::f32;
  else if (tok().spelling == "i32")
    type.elementType = ElementType::i32;
  else if (tok().spelling == "bf16")
    type.elementType = ElementType::bf16;
  else if (tok().spelling == "f16")
    type.elementType = ElementType::f16;
  else if (tok().spelling == "i8")
    type.elementType = ElementType::i8;
  else if (tok().spelling == "i4")
    type.elementType = ElementType::i4;
  else
    return error("unknown element type '" + tok().spelling +
                 "'; expected 'f32', 'i32', 'bf16', 'f16', 'i8' or 'i4'");
  consume();
  if (!expect(TokenKind::l_square, "after the element type"))
    return false;
  if (tok().is(TokenKind::r_square))
    return error("a tensor type needs at least one dim, e.g. 'f32[768]'");
  do {
    Extent extent;
    llvm::SMLoc extentStart = tok().getLoc();
    if (tok().is(TokenKind::identifier)) {
      extent.name = tok().spelling.str();
      consume();
    } else if (tok().is(TokenKind::integer)) {
      if (!parseInteger(extent.size))
        return false;
    } else {
      return error("expected a dim name or a size, found " + describeTok());
    }
    extent.loc = rangeFrom(extentStart);
    type.shape.push_back(std::move(extent));
  } while (tok().is(TokenKind::comma) && (consume(), true));
  if (!expect(TokenKind::r_square, "to close the tensor type"))
    return false;
  type.loc = rangeFrom(start);
  return true;
}

/// input_decl := 'input' IDENT ':' type
bool Parser::parseInputDecl(ModelAST &model) {
  llvm::SMLoc start = tok().getLoc();
  consume();
  if (tok().is(TokenKind::qualified_name))
    return error("input names cannot contain '.'");
  if (!tok().is(TokenKind::identifier))
    return error("expected the input's name, found " + describeTok());
  auto input = std::make_unique<InputDecl>();
  input->name = tok().spelling.str();
  input->nameLoc = tok().getRange();
  consume();
  if (!expect(TokenKind::colon, "after the input's name") ||
      !parseTensorType(input->type))
    return false;
  input->range = rangeFrom(start);
  model.body.push_back(std::move(input));
  return true;
}

/// layout := 'layout' '(' IDENT ',' IDENT ')'
bool Parser::parseLayout(WeightDecl &weight) {
  llvm::SMLoc start = tok().getLoc();
  consume();
  if (!expect(TokenKind::l_paren, "after 'layout'"))
    return false;
  llvm::StringRef first = tok().spelling;
  bool ok = tok().is(TokenKind::identifier);
  consume();
  if (!expect(TokenKind::comma, "in 'layout(in, out)'"))
    return false;
  llvm::StringRef second = tok().spelling;
  ok = ok && tok().is(TokenKind::identifier);
  consume();
  if (!expect(TokenKind::r_paren, "to close 'layout(...)'"))
    return false;
  weight.layoutLoc = rangeFrom(start);
  weight.hasLayoutClause = true;
  if (ok && first == "in" && second == "out")
    weight.layout = WeightLayout::inOut;
  else if (ok && first == "out" && second == "in")
    weight.layout = WeightLayout::outIn;
  else
    return errorAt(start, "a layout is 'layout(in, out)' or 'layout(out, in)'",
                   weight.layoutLoc);
  return true;
}

/// weight_decl := 'weight' qualified_name ':' type layout?
bool Parser::parseWeightDecl(ModelAST &model) {
  consume();
  if (!tok().isName())
    return error("expected the weight's name (its safetensors key), found " +
                 describeTok());
  auto weight = std::make_unique<WeightDecl>();
  weight->name = nameOf(tok());
  weight->loc = tok().getRange();
  consume();
  if (!expect(TokenKind::colon, "after the weight's name") ||
      !parseTensorType(weight->type))
    return false;
  if (tok().is(TokenKind::kw_layout) && !parseLayout(*weight))
    return false;
  model.weights.push_back(std::move(weight));
  return true;
}

/// state_decl := 'state' qualified_name ':' type
bool Parser::parseStateDecl(ModelAST &model) {
  consume();
  if (!tok().isName())
    return error("expected the state's name, found " + describeTok());
  auto state = std::make_unique<StateDecl>();
  state->name = nameOf(tok());
  state->loc = tok().getRange();
  consume();
  if (!expect(TokenKind::colon, "after the state's name") ||
      !parseTensorType(state->type))
    return false;
  model.states.push_back(std::move(state));
  return true;
}

/// assignment := IDENT '=' expr
bool Parser::parseAssignment(ModelAST &model) {
  llvm::SMLoc start = tok().getLoc();
  auto assign = std::make_unique<AssignStmt>();
  assign->name = tok().spelling.str();
  assign->nameLoc = tok().getRange();
  consume();
  // `a, w = self_attention(...)`: the second name takes the call's second
  // result (the attention weights).
  std::unique_ptr<ResultDecl> second;
  if (tok().is(TokenKind::comma)) {
    consume();
    if (!tok().is(TokenKind::identifier))
      return error("expected a second name after ',' (as in 'a, w = "
                   "self_attention(...)'), found " +
                   describeTok());
    second = std::make_unique<ResultDecl>();
    second->name = tok().spelling.str();
    second->nameLoc = tok().getRange();
    second->index = 1;
    consume();
  }
  if (!tok().is(TokenKind::equal))
    return error(
        "expected '=' after '" + assign->name +
        "' (a statement is 'dim', 'input', 'weight', 'state', 'output' or "
        "'NAME = EXPR'), found " +
        describeTok());
  consume();
  unsigned depth;
  assign->value = parseExpr(0, depth);
  if (!assign->value)
    return false;
  assign->range = rangeFrom(start);
  if (second) {
    second->of = assign.get();
    second->range = assign->range;
  }
  model.body.push_back(std::move(assign));
  if (second)
    model.body.push_back(std::move(second));
  return true;
}

/// output := 'output' IDENT ('=' expr)?
bool Parser::parseOutput(ModelAST &model) {
  llvm::SMLoc start = tok().getLoc();
  consume();
  if (tok().is(TokenKind::qualified_name))
    return error("output names cannot contain '.'");
  if (!tok().is(TokenKind::identifier))
    return error("expected the output's name, found " + describeTok());
  auto output = std::make_unique<OutputStmt>();
  output->name = tok().spelling.str();
  output->nameLoc = tok().getRange();
  consume();
  if (tok().is(TokenKind::equal)) {
    consume();
    unsigned depth;
    output->value = parseExpr(0, depth);
    if (!output->value)
      return false;
  } else {
    output->exportsExisting = true;
    output->value = std::make_unique<NameExpr>(output->name, output->nameLoc);
  }
  output->range = rangeFrom(start);
  model.body.push_back(std::move(output));
  return true;
}

bool Parser::checkDepth(unsigned depth, llvm::SMLoc loc) {
  if (depth <= kMaxExprDepth)
    return true;
  errorAt(loc, "expression is nested too deeply (the limit is " +
                   llvm::Twine(kMaxExprDepth) +
                   " levels); split it with assignments");
  fatal = true;
  return false;
}

/// expr := sum ('&' sum)*            (masks: causal & padding(n))
/// sum  := term (('+' | '-') term)*
/// term := primary ('*' primary)*
ExprPtr Parser::parseExpr(unsigned nesting, unsigned &depth) {
  return parseBinary(nesting, depth, /*level=*/0);
}

ExprPtr Parser::parseBinary(unsigned nesting, unsigned &depth, int level) {
  llvm::SMLoc start = tok().getLoc();
  auto operand = [&](unsigned &d) {
    return level < 2 ? parseBinary(nesting, d, level + 1)
                     : parsePrimary(nesting + 1, d);
  };
  auto atOperator = [&] {
    switch (level) {
    case 0:
      return tok().is(TokenKind::amp);
    case 1:
      return tok().is(TokenKind::plus) || tok().is(TokenKind::minus);
    default:
      return tok().is(TokenKind::star);
    }
  };
  ExprPtr lhs = operand(depth);
  if (!lhs)
    return nullptr;
  while (atOperator()) {
    char op = tok().is(TokenKind::plus)    ? '+'
              : tok().is(TokenKind::minus) ? '-'
              : tok().is(TokenKind::amp)   ? '&'
                                           : '*';
    llvm::SMLoc opLoc = tok().getLoc();
    consume();
    unsigned rhsDepth;
    ExprPtr rhs = operand(rhsDepth);
    if (!rhs)
      return nullptr;
    depth = std::max(depth, rhsDepth) + 1;
    if (!checkDepth(depth, opLoc))
      return nullptr;
    lhs = std::make_unique<BinaryExpr>(op, std::move(lhs), std::move(rhs),
                                       opLoc, rangeFrom(start));
  }
  return lhs;
}

/// primary := call | qualified_name | NUMBER | '(' expr ')'
///          | '[' expr (',' expr)* ']'
ExprPtr Parser::parsePrimary(unsigned nesting, unsigned &depth) {
  depth = 1;
  if (nesting > kMaxExprDepth) {
    checkDepth(nesting, tok().getLoc());
    return nullptr;
  }
  switch (tok().kind) {
  case TokenKind::identifier:
  case TokenKind::qualified_name: {
    if (peek().is(TokenKind::l_paren))
      return parseCall(nesting, depth);
    auto name = std::make_unique<NameExpr>(nameOf(tok()), tok().getRange());
    consume();
    return name;
  }
  case TokenKind::integer:
  case TokenKind::real:
    return parseNumber();
  case TokenKind::l_paren: {
    Token open = tok();
    consume();
    ExprPtr inner = parseExpr(nesting + 1, depth);
    if (!inner)
      return nullptr;
    if (!tok().is(TokenKind::r_paren)) {
      error("expected ')' to close the '(', found " + describeTok());
      if (!fatal)
        diags.note(open.getLoc(), "the '(' is here");
      return nullptr;
    }
    consume();
    return inner;
  }
  case TokenKind::l_square: {
    Token open = tok();
    llvm::SMLoc start = open.getLoc();
    consume();
    std::vector<ExprPtr> elements;
    while (true) {
      unsigned elementDepth;
      ExprPtr element = parseExpr(nesting + 1, elementDepth);
      if (!element)
        return nullptr;
      depth = std::max(depth, elementDepth + 1);
      elements.push_back(std::move(element));
      if (tok().is(TokenKind::comma)) {
        consume();
        continue;
      }
      if (tok().is(TokenKind::r_square))
        break;
      error("expected ',' or ']' in the list, found " + describeTok());
      if (!fatal)
        diags.note(open.getLoc(), "the '[' is here");
      return nullptr;
    }
    consume();
    return std::make_unique<ListExpr>(std::move(elements), rangeFrom(start));
  }
  default:
    error("expected an expression, found " + describeTok());
    return nullptr;
  }
}

ExprPtr Parser::parseNumber() {
  const Token &t = tok();
  if (t.is(TokenKind::integer)) {
    int64_t value;
    if (!parseInteger(value))
      return nullptr;
    return std::make_unique<NumberExpr>(static_cast<double>(value), true, value,
                                        t.getRange());
  }
  double value;
  if (t.spelling.getAsDouble(value) || !std::isfinite(value)) {
    error("number '" + t.spelling + "' is out of range");
    return nullptr;
  }
  consume();
  return std::make_unique<NumberExpr>(value, false, 0, t.getRange());
}

/// call := IDENT '(' (argument (',' argument)*)? ')'
/// argument := (IDENT | 'dim') '=' expr | expr
ExprPtr Parser::parseCall(unsigned nesting, unsigned &depth) {
  llvm::SMLoc start = tok().getLoc();
  std::string callee = tok().spelling.str();
  llvm::SMRange calleeLoc = tok().getRange();
  consume();
  Token open = tok();
  consume();
  std::vector<Argument> args;
  unsigned maxArgDepth = 0;
  if (!tok().is(TokenKind::r_paren)) {
    while (true) {
      Argument arg;
      // `dim` is a keyword, and the name of the tensor builtins' argument.
      if ((tok().is(TokenKind::identifier) || tok().is(TokenKind::kw_dim)) &&
          peek().is(TokenKind::equal)) {
        arg.name = tok().spelling.str();
        arg.nameLoc = tok().getRange();
        consume();
        consume();
      }
      unsigned argDepth;
      arg.value = parseExpr(nesting + 1, argDepth);
      if (!arg.value)
        return nullptr;
      maxArgDepth = std::max(maxArgDepth, argDepth);
      args.push_back(std::move(arg));
      if (tok().is(TokenKind::comma)) {
        consume();
        continue;
      }
      if (tok().is(TokenKind::r_paren))
        break;
      error("expected ',' or ')' in the arguments of '" + callee + "', found " +
            describeTok());
      if (!fatal)
        diags.note(open.getLoc(), "the argument list opened here");
      return nullptr;
    }
  }
  consume();
  depth = maxArgDepth + 1;
  if (!checkDepth(depth, start))
    return nullptr;
  return std::make_unique<CallExpr>(std::move(callee), calleeLoc,
                                    std::move(args), rangeFrom(start));
}

std::unique_ptr<ModelAST> attnc::parseModel(unsigned bufferId,
                                            DiagnosticEngine &diags) {
  unsigned errorsBefore = diags.getNumErrors();
  std::vector<Token> tokens = lexBuffer(bufferId, diags);
  std::unique_ptr<ModelAST> model =
      Parser(std::move(tokens), diags).parseFile();
  if (diags.getNumErrors() != errorsBefore)
    return nullptr;
  return model;
}
