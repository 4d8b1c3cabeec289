//===- LexerTest.cpp - Tokens of the .attn language -----------------------===//
//
// Part of attnc.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Lexer.h"

#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

using namespace attnc;

namespace {

struct Lexed {
  std::vector<Token> tokens;
  std::string diags;
  unsigned errors = 0;
};

Lexed lex(llvm::StringRef source, llvm::SourceMgr &sm) {
  Lexed result;
  unsigned id = sm.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "lex.attn"), llvm::SMLoc());
  llvm::raw_string_ostream os(result.diags);
  DiagnosticEngine diags(sm, os);
  result.tokens = lexBuffer(id, diags);
  result.errors = diags.getNumErrors();
  return result;
}

std::vector<TokenKind> kinds(const std::vector<Token> &tokens) {
  std::vector<TokenKind> result;
  for (const Token &t : tokens)
    result.push_back(t.kind);
  return result;
}

using TK = TokenKind;

TEST(Lexer, PunctuationAndKeywords) {
  llvm::SourceMgr sm;
  Lexed l =
      lex("model m { dim input weight output layout ( ) [ ] , : = + <= }", sm);
  EXPECT_EQ(l.errors, 0u);
  std::vector<TK> expected = {
      TK::kw_model,  TK::identifier, TK::l_brace,   TK::kw_dim,  TK::kw_input,
      TK::kw_weight, TK::kw_output,  TK::kw_layout, TK::l_paren, TK::r_paren,
      TK::l_square,  TK::r_square,   TK::comma,     TK::colon,   TK::equal,
      TK::plus,      TK::less_equal, TK::r_brace,   TK::eof};
  EXPECT_EQ(kinds(l.tokens), expected);
}

TEST(Lexer, Numbers) {
  llvm::SourceMgr sm;
  // Commas between: a '-' right after a number would subtract.
  Lexed l = lex("768 1e-5 0.5, -1.0 1E+3 .25, -3 1e-12", sm);
  EXPECT_EQ(l.errors, 0u) << l.diags;
  std::vector<TK> expected = {TK::integer, TK::real, TK::real, TK::comma,
                              TK::real,    TK::real, TK::real, TK::comma,
                              TK::integer, TK::real, TK::eof};
  EXPECT_EQ(kinds(l.tokens), expected);
  EXPECT_EQ(l.tokens[1].spelling, "1e-5");
  EXPECT_EQ(l.tokens[4].spelling, "-1.0");
  EXPECT_EQ(l.tokens[8].spelling, "-3");
}

TEST(Lexer, MinusAfterAnOperandIsAnOperator) {
  llvm::SourceMgr sm;
  Lexed l = lex("x -1 (y) - 2 * z -.5", sm);
  EXPECT_EQ(l.errors, 0u) << l.diags;
  std::vector<TK> expected = {
      TK::identifier, TK::minus, TK::integer, TK::l_paren, TK::identifier,
      TK::r_paren,    TK::minus, TK::integer, TK::star,    TK::identifier,
      TK::minus,      TK::real,  TK::eof};
  EXPECT_EQ(kinds(l.tokens), expected);
}

TEST(Lexer, RepeatIndexComponents) {
  llvm::SourceMgr sm;
  Lexed l = lex("repeat h.{i}.attn.{j} h.{ h.{}", sm);
  ASSERT_GE(l.tokens.size(), 2u);
  EXPECT_EQ(l.tokens[0].kind, TK::kw_repeat);
  EXPECT_EQ(l.tokens[1].kind, TK::qualified_name);
  EXPECT_EQ(l.tokens[1].spelling, "h.{i}.attn.{j}");
  EXPECT_EQ(l.errors, 2u) << l.diags;
  EXPECT_NE(l.diags.find("expected '{NAME}' with the index name"),
            std::string::npos)
      << l.diags;
}

TEST(Lexer, QualifiedNamesAreOneToken) {
  llvm::SourceMgr sm;
  Lexed l = lex("encoder.layer.0.attention ln_1.weight output.LayerNorm x", sm);
  EXPECT_EQ(l.errors, 0u) << l.diags;
  std::vector<TK> expected = {TK::qualified_name, TK::qualified_name,
                              TK::qualified_name, TK::identifier, TK::eof};
  EXPECT_EQ(kinds(l.tokens), expected);
  EXPECT_EQ(l.tokens[0].spelling, "encoder.layer.0.attention");
  // A keyword as the first component is part of the name.
  EXPECT_EQ(l.tokens[2].spelling, "output.LayerNorm");
}

TEST(Lexer, CommentsAndLineStarts) {
  llvm::SourceMgr sm;
  Lexed l = lex("# a comment\nx = y # trailing\n  z", sm);
  EXPECT_EQ(l.errors, 0u);
  ASSERT_EQ(l.tokens.size(), 5u);
  EXPECT_TRUE(l.tokens[0].startsLine);
  EXPECT_FALSE(l.tokens[1].startsLine);
  EXPECT_TRUE(l.tokens[3].startsLine);
  EXPECT_EQ(l.tokens[3].spelling, "z");
}

TEST(Lexer, Errors) {
  llvm::SourceMgr sm;
  Lexed l = lex("x $ 1e 1. a. - <\n12abc", sm);
  EXPECT_EQ(l.errors, 6u) << l.diags;
  EXPECT_NE(l.diags.find("lex.attn:1:3: error: unexpected character '$'"),
            std::string::npos)
      << l.diags;
  EXPECT_NE(
      l.diags.find("lex.attn:1:6: error: expected digits in the exponent"),
      std::string::npos)
      << l.diags;
  EXPECT_NE(l.diags.find("lex.attn:1:8: error: expected digits after '.'"),
            std::string::npos)
      << l.diags;
  EXPECT_NE(l.diags.find("lex.attn:1:12: error: expected a name component"),
            std::string::npos)
      << l.diags;
  EXPECT_NE(l.diags.find("lex.attn:1:16: error: unexpected '<'"),
            std::string::npos)
      << l.diags;
  EXPECT_NE(l.diags.find("lex.attn:2:1: error: invalid number '12abc'"),
            std::string::npos)
      << l.diags;
  EXPECT_EQ(l.tokens.back().kind, TK::eof);
}

TEST(Lexer, ErrorShowsLineAndCaret) {
  llvm::SourceMgr sm;
  Lexed l = lex("model m {\n  x = ?\n}", sm);
  EXPECT_EQ(l.diags, "lex.attn:2:7: error: unexpected character '?'\n"
                     "  x = ?\n"
                     "      ^\n");
}

TEST(Lexer, BinaryBytesAreReportedAsHex) {
  llvm::SourceMgr sm;
  Lexed l = lex(llvm::StringRef("a\x01\xff", 3), sm);
  EXPECT_EQ(l.errors, 2u);
  EXPECT_NE(l.diags.find("unexpected byte 0x01"), std::string::npos) << l.diags;
  EXPECT_NE(l.diags.find("unexpected byte 0xff"), std::string::npos) << l.diags;
}

} // namespace
