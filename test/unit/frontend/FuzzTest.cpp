//===- FuzzTest.cpp - The frontend never crashes on bad input -------------===//
//
// Part of attnc. Malformed, truncated, mutated and random inputs must all end
// in either a checked model or at least one reported error.
//
//===----------------------------------------------------------------------===//

#include "test/unit/frontend/ExampleModels.h"
#include "test/unit/frontend/FrontendTestUtil.h"

#include <random>

using namespace attnc;
using namespace attnc::test;

namespace {

/// Loads `source` and checks the frontend's contract: success, or failure
/// with an `error:` diagnostic.
void expectCleanOutcome(llvm::StringRef source) {
  Loaded l = load(source);
  if (!l.model)
    EXPECT_NE(l.diags.find("error:"), std::string::npos)
        << "failed without an error for:\n"
        << source.str();
}

TEST(Fuzz, HandWrittenBadInputs) {
  const char *inputs[] = {
      "",
      " ",
      "\n\n\n",
      "# only a comment",
      "model",
      "model m",
      "model m {",
      "model m { }",
      "model m { output }",
      "model m { output y = }",
      "model m { dim }",
      "model m { dim B <= }",
      "model m { dim B <= -0 }",
      "model m { input x : }",
      "model m { input x : f32[ }",
      "model m { input x : f32[B, }",
      "model m { weight : f32[1] }",
      "model m { weight w : f32[1] layout( }",
      "model m { weight w : f32[1] layout(in, out }",
      "model m { y = f( }",
      "model m { y = f(a = }",
      "model m { y = f(a = b = c) }",
      "model m { y = ((((x }",
      "model m { y = x + }",
      "model m { y = + x }",
      "model m { y = x ++ x }",
      "model m { y = 1e }",
      "model m { y = 1.e5 }",
      "model m { y = - }",
      "model m { y = a..b }",
      "model m { y = a. }",
      "model m { y = .a }",
      "model m { } }",
      "model m { { } }",
      "}}}}",
      "model model { model }",
      "model m { output y = self_attention() }",
      "model m { output y = self_attention(mask = causal) }",
      "model m { output y = linear(, ) }",
      "model m { input x : f32[9223372036854775807, 9223372036854775807]\n"
      "output y = gelu(x) }",
      "model m { input x : f32[2, 9223372036854775808] output y = x }",
      "model m { dim B <= 9223372036854775807 input x : f32[B, 4] output x }",
      "model m { input x : f32[2, 4] output y = self_attention(x, heads = "
      "9223372036854775807, qkv = x, out = x) }",
      "model m { input x : f32[2, 4] output y = layer_norm(x, x, eps = 1e-320)"
      " }",
      "model m { input x : f32[2, 4] output y = x\n output y }",
      "model m { input x : i32[2] output y = x }",
      "model m { input x : f32[2, 4] x = x output x }",
  };
  for (const char *input : inputs)
    expectCleanOutcome(input);
}

TEST(Fuzz, UnterminatedAndBinary) {
  expectCleanOutcome(llvm::StringRef("\0\0\0", 3));
  expectCleanOutcome(llvm::StringRef("model m {\0}", 11));
  expectCleanOutcome("model m { # unterminated comment");
  std::string binary;
  for (int i = 0; i < 4096; ++i)
    binary += static_cast<char>((i * 7919 + 13) & 0xff);
  expectCleanOutcome(binary);
}

TEST(Fuzz, DeepNestingOfEveryKind) {
  expectCleanOutcome("model m { y = " + std::string(10000, '('));
  expectCleanOutcome("model m { y = " + std::string(10000, '(') + "x" +
                     std::string(10000, ')') + " }");
  std::string calls = "model m { y = ";
  for (int i = 0; i < 10000; ++i)
    calls += "f(a = ";
  expectCleanOutcome(calls);
  expectCleanOutcome(std::string(10000, '{'));
  expectCleanOutcome("model m {" + std::string(10000, '['));
}

TEST(Fuzz, EveryTruncationOfTheExamples) {
  for (llvm::StringRef source : {kGpt2Block, kBertLayer})
    for (size_t n = 0; n < source.size(); ++n)
      expectCleanOutcome(source.take_front(n));
}

TEST(Fuzz, RandomMutationsOfTheExamples) {
  std::mt19937 rng(20261121);
  const char alphabet[] = "(){}[],:=+.<-#\n 0123456789eabxyzS_\x01\xff";
  for (llvm::StringRef base : {kGpt2Block, kBertLayer}) {
    for (int iteration = 0; iteration < 1500; ++iteration) {
      std::string source = base.str();
      int edits = 1 + rng() % 4;
      for (int e = 0; e < edits && !source.empty(); ++e) {
        size_t pos = rng() % source.size();
        char c = alphabet[rng() % (sizeof(alphabet) - 1)];
        switch (rng() % 3) {
        case 0:
          source.erase(pos, 1 + rng() % 8);
          break;
        case 1:
          source.insert(pos, 1, c);
          break;
        default:
          source[pos] = c;
          break;
        }
      }
      expectCleanOutcome(source);
    }
  }
}

TEST(Fuzz, RandomBytes) {
  std::mt19937 rng(7);
  for (int iteration = 0; iteration < 300; ++iteration) {
    std::string source(rng() % 512, '\0');
    for (char &c : source)
      c = static_cast<char>(rng() & 0xff);
    if (iteration % 2)
      source = "model m {\n" + source;
    expectCleanOutcome(source);
  }
}

} // namespace
