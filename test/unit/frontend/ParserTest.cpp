//===- ParserTest.cpp - Parsing .attn files -------------------------------===//
//
// Part of attnc.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Parser.h"
#include "test/unit/frontend/ExampleModels.h"
#include "test/unit/frontend/FrontendTestUtil.h"

using namespace attnc;
using namespace attnc::test;

namespace {

struct Parsed {
  llvm::SourceMgr sm;
  std::unique_ptr<ModelAST> model;
  std::string diags;
};

std::unique_ptr<Parsed> parse(llvm::StringRef source) {
  auto result = std::make_unique<Parsed>();
  unsigned id = result->sm.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "test.attn"), llvm::SMLoc());
  llvm::raw_string_ostream os(result->diags);
  DiagnosticEngine diags(result->sm, os);
  result->model = parseModel(id, diags);
  return result;
}

std::string lineCol(const llvm::SourceMgr &sm, llvm::SMLoc loc) {
  auto [line, col] = sm.getLineAndColumn(loc);
  return std::to_string(line) + ":" + std::to_string(col);
}

TEST(Parser, Gpt2BlockStructure) {
  auto p = parse(kGpt2Block);
  ASSERT_TRUE(p->model) << p->diags;
  const ModelAST &m = *p->model;
  EXPECT_EQ(m.name, "gpt2_block");
  ASSERT_EQ(m.dims.size(), 2u);
  EXPECT_EQ(m.dims[0]->name, "B");
  EXPECT_FALSE(m.dims[0]->bound);
  EXPECT_EQ(m.dims[1]->name, "S");
  EXPECT_EQ(m.dims[1]->bound, 1024);
  ASSERT_EQ(m.weights.size(), 12u);
  EXPECT_EQ(m.weights[2]->name, "attn.c_attn.weight");
  EXPECT_EQ(m.weights[2]->layout, WeightLayout::inOut);
  EXPECT_EQ(m.weights[0]->layout, WeightLayout::outIn);
  EXPECT_EQ(lineCol(p->sm, m.weights[2]->loc.Start), "6:10");
  // input, 5 assignments, output
  ASSERT_EQ(m.body.size(), 7u);
  auto *h = llvm::dyn_cast<AssignStmt>(m.body[1].get());
  ASSERT_TRUE(h);
  auto *call = llvm::dyn_cast<CallExpr>(h->value.get());
  ASSERT_TRUE(call);
  EXPECT_EQ(call->callee, "layer_norm");
  ASSERT_EQ(call->args.size(), 3u);
  EXPECT_EQ(call->args[2].name, "eps");
  auto *eps = llvm::dyn_cast<NumberExpr>(call->args[2].value.get());
  ASSERT_TRUE(eps);
  EXPECT_DOUBLE_EQ(eps->value, 1e-5);
  EXPECT_EQ(lineCol(p->sm, call->getLoc()), "16:8");
  auto *out = llvm::dyn_cast<OutputStmt>(m.body.back().get());
  ASSERT_TRUE(out);
  EXPECT_FALSE(out->exportsExisting);
  EXPECT_EQ(llvm::cast<BinaryExpr>(out->value.get())->op, '+');
}

TEST(Parser, BertLayerStructure) {
  auto p = parse(kBertLayer);
  ASSERT_TRUE(p->model) << p->diags;
  const ModelAST &m = *p->model;
  EXPECT_EQ(m.weights.size(), 16u);
  EXPECT_EQ(m.weights[14]->name, "output.LayerNorm.weight");
  auto *out = llvm::dyn_cast<OutputStmt>(m.body.back().get());
  ASSERT_TRUE(out);
  EXPECT_FALSE(out->exportsExisting);
  EXPECT_EQ(llvm::cast<NameExpr>(out->value.get())->name, "x");
  auto *a = llvm::cast<AssignStmt>(m.body[1].get());
  auto *call = llvm::cast<CallExpr>(a->value.get());
  ASSERT_EQ(call->args.size(), 7u);
  EXPECT_EQ(call->args[2].name, "q");
  EXPECT_EQ(llvm::cast<NameExpr>(call->args[2].value.get())->name,
            "attention.self.query");
}

TEST(Parser, BareOutputExportsAName) {
  auto p = parse("model m { input x : f32[2, 4]\n output x }");
  ASSERT_TRUE(p->model) << p->diags;
  auto *out = llvm::cast<OutputStmt>(p->model->body.back().get());
  EXPECT_TRUE(out->exportsExisting);
  EXPECT_EQ(llvm::cast<NameExpr>(out->value.get())->name, "x");
}

TEST(Parser, AddIsLeftAssociative) {
  auto p =
      parse("model m { input x : f32[2, 4]\n output y = x + x + (x + x) }");
  ASSERT_TRUE(p->model) << p->diags;
  auto *out = llvm::cast<OutputStmt>(p->model->body.back().get());
  auto *top = llvm::cast<BinaryExpr>(out->value.get());
  EXPECT_TRUE(llvm::isa<BinaryExpr>(top->lhs.get()));
  EXPECT_TRUE(llvm::isa<BinaryExpr>(top->rhs.get()));
  EXPECT_EQ(lineCol(p->sm, top->opLoc), "2:19");
}

TEST(Parser, ProductBindsTighterThanSumAndDifference) {
  // x - y * 2 + z is (x - (y * 2)) + z.
  auto p = parse("model m { input x : f32[2, 4]\n output y = x - x * 2 + x }");
  ASSERT_TRUE(p->model) << p->diags;
  auto *top = llvm::cast<BinaryExpr>(
      llvm::cast<OutputStmt>(p->model->body.back().get())->value.get());
  EXPECT_EQ(top->op, '+');
  auto *diff = llvm::cast<BinaryExpr>(top->lhs.get());
  EXPECT_EQ(diff->op, '-');
  auto *product = llvm::cast<BinaryExpr>(diff->rhs.get());
  EXPECT_EQ(product->op, '*');
  EXPECT_EQ(llvm::cast<NumberExpr>(product->rhs.get())->value, 2.0);
}

TEST(Parser, MinusAfterAnOperandSubtracts) {
  // `x -1.0` subtracts; `eps = -1.0` is a negative literal.
  auto p = parse("model m { input x : f32[2, 4]\n output y = f(x -1.0, "
                 "eps = -1.0) }");
  ASSERT_TRUE(p->model) << p->diags;
  auto *call = llvm::cast<CallExpr>(
      llvm::cast<OutputStmt>(p->model->body.back().get())->value.get());
  EXPECT_EQ(llvm::cast<BinaryExpr>(call->args[0].value.get())->op, '-');
  EXPECT_EQ(llvm::cast<NumberExpr>(call->args[1].value.get())->value, -1.0);
}

TEST(Parser, TwoNamesTakeTwoResults) {
  auto p = parse("model m { input x : f32[2, 4]\n a, w = f(x)\n output w }");
  ASSERT_TRUE(p->model) << p->diags;
  const auto &body = p->model->body;
  ASSERT_EQ(body.size(), 4u);
  auto *a = llvm::cast<AssignStmt>(body[1].get());
  auto *w = llvm::cast<ResultDecl>(body[2].get());
  EXPECT_EQ(w->name, "w");
  EXPECT_EQ(w->of, a);
  EXPECT_EQ(w->index, 1u);
  auto bad = parse("model m { input x : f32[2, 4]\n a, = f(x) }");
  EXPECT_TRUE(hasDiag(bad->diags, "2:5", "expected a second name after ','"));
}

TEST(Parser, RepeatWritesItsBodyOncePerIndex) {
  auto p = parse("model m { input x : f32[2, 4]\n"
                 " repeat 3 as i {\n"
                 "  weight h.{i}.w : f32[4, 4]\n"
                 "  repeat 2 as j { x = linear(x, h.{i}.w) }\n"
                 " }\n output x }");
  ASSERT_TRUE(p->model) << p->diags;
  const ModelAST &m = *p->model;
  ASSERT_EQ(m.weights.size(), 3u);
  EXPECT_EQ(m.weights[0]->name, "h.0.w");
  EXPECT_EQ(m.weights[2]->name, "h.2.w");
  // input, 3 x 2 assignments, output
  ASSERT_EQ(m.body.size(), 8u);
  auto *last = llvm::cast<CallExpr>(
      llvm::cast<AssignStmt>(m.body[6].get())->value.get());
  EXPECT_EQ(llvm::cast<NameExpr>(last->args[1].value.get())->name, "h.2.w");
}

TEST(Parser, RepeatErrors) {
  auto outside = parse("model m { input x : f32[2, 4]\n output y = "
                       "linear(x, h.{i}.w) }");
  EXPECT_TRUE(hasDiag(outside->diags, "2:25",
                      "'{i}' is outside a 'repeat N as i { ... }' block"));
  auto count = parse("model m { repeat 0 as i { } }");
  EXPECT_TRUE(
      hasDiag(count->diags, "1:18", "a repeat count must be in 1..4096"));
  EXPECT_EQ(llvm::StringRef(count->diags).count("error:"), 1u) << count->diags;
  auto as = parse("model m { repeat 2 i { } }");
  EXPECT_TRUE(
      hasDiag(as->diags, "1:20", "expected 'as NAME' after the repeat"));
  auto same = parse("model m { repeat 2 as i { repeat 2 as i { } } }");
  EXPECT_TRUE(hasDiag(same->diags, "1:39",
                      "'i' is already the index of an enclosing repeat"));
  // An error in the body is reported once, not once per copy.
  auto body = parse("model m { repeat 5 as i { x = } }");
  EXPECT_EQ(llvm::StringRef(body->diags).count("error:"), 1u) << body->diags;
}

TEST(Parser, EmptyFile) {
  auto p = parse("");
  EXPECT_FALSE(p->model);
  EXPECT_TRUE(
      hasDiag(p->diags, "1:1",
              "expected 'model NAME { ... }' at the start of the file"));
}

TEST(Parser, MissingClosingBrace) {
  auto p = parse("model m {\n  input x : f32[2, 3]\n");
  EXPECT_FALSE(p->model);
  EXPECT_TRUE(hasDiag(p->diags, "3:1", "expected '}' to close model 'm'"));
  EXPECT_TRUE(hasDiag(p->diags, "1:9", "the model's body opened here", "note"));
}

TEST(Parser, TrailingTokens) {
  auto p = parse("model m { output y = x } extra");
  EXPECT_FALSE(p->model);
  EXPECT_TRUE(hasDiag(p->diags, "1:26", "after the end of the model"));
}

TEST(Parser, RecoversAndReportsSeveralErrors) {
  auto p = parse("model m {\n"
                 "  dim B <= 1.5\n"
                 "  input x f32[B, 4]\n"
                 "  weight w : f64[4]\n"
                 "  y = linear(x,, w)\n"
                 "  weight v : f32[4] layout(in)\n"
                 "  z = (x + \n"
                 "  a.b = x\n"
                 "  a.b = x\n"
                 "  output o = x\n"
                 "}\n");
  EXPECT_FALSE(p->model);
  EXPECT_TRUE(hasDiag(p->diags, "2:12",
                      "expected an integer, found real number '1.5'"));
  EXPECT_TRUE(hasDiag(p->diags, "3:11", "expected ':' after the input's name"));
  EXPECT_TRUE(hasDiag(p->diags, "4:14",
                      "unknown element type 'f64'; expected 'f32', 'i32', "
                      "'bf16', 'f16', 'i8' or 'i4'"));
  EXPECT_TRUE(hasDiag(p->diags, "5:16", "expected an expression, found ','"));
  EXPECT_TRUE(hasDiag(p->diags, "6:30", "expected ','"));
  EXPECT_TRUE(hasDiag(p->diags, "8:7", "expected ')' to close the '('"));
  EXPECT_TRUE(hasDiag(p->diags, "7:7", "the '(' is here", "note"));
  EXPECT_TRUE(hasDiag(p->diags, "9:3", "cannot assign to 'a.b'"));
}

TEST(Parser, BadLayout) {
  auto p = parse("model m {\n  weight w : f32[4, 4] layout(in, in)\n}");
  EXPECT_FALSE(p->model);
  EXPECT_TRUE(hasDiag(p->diags, "2:24",
                      "a layout is 'layout(in, out)' or 'layout(out, in)'"));
}

TEST(Parser, UnclosedParenAndCall) {
  auto p = parse("model m {\n  y = gelu(x\n  output y\n}");
  EXPECT_FALSE(p->model);
  EXPECT_TRUE(hasDiag(p->diags, "3:3",
                      "expected ',' or ')' in the arguments of 'gelu'"));
  EXPECT_TRUE(
      hasDiag(p->diags, "2:11", "the argument list opened here", "note"));
}

TEST(Parser, HugeNumbers) {
  auto p = parse("model m {\n  dim B <= 99999999999999999999\n"
                 "  input x : f32[B, 123456789012345678901234]\n"
                 "  y = f(x, eps = 1e999)\n}");
  EXPECT_FALSE(p->model);
  EXPECT_TRUE(
      hasDiag(p->diags, "2:12", "integer '99999999999999999999' is too large"));
  EXPECT_TRUE(hasDiag(p->diags, "3:20", "is too large"));
  EXPECT_TRUE(hasDiag(p->diags, "4:18", "number '1e999' is out of range"));
}

TEST(Parser, EmptyTensorType) {
  auto p = parse("model m {\n  input x : f32[]\n}");
  EXPECT_FALSE(p->model);
  EXPECT_TRUE(
      hasDiag(p->diags, "2:17", "a tensor type needs at least one dim"));
}

TEST(Parser, DeepNestingIsAnError) {
  std::string source = "model m {\n  y = " + std::string(10000, '(') + "x" +
                       std::string(10000, ')') + "\n}";
  auto p = parse(source);
  EXPECT_FALSE(p->model);
  EXPECT_NE(p->diags.find("expression is nested too deeply"),
            std::string::npos);
}

TEST(Parser, DeepCallNestingIsAnError) {
  std::string source = "model m {\n  y = ";
  for (int i = 0; i < 5000; ++i)
    source += "gelu(";
  source += "x" + std::string(5000, ')') + "\n}";
  auto p = parse(source);
  EXPECT_FALSE(p->model);
  EXPECT_NE(p->diags.find("expression is nested too deeply"),
            std::string::npos);
}

TEST(Parser, LongAddChainIsAnError) {
  std::string source = "model m {\n  y = x";
  for (int i = 0; i < 100000; ++i)
    source += " + x";
  source += "\n}";
  auto p = parse(source);
  EXPECT_FALSE(p->model);
  EXPECT_NE(p->diags.find("expression is nested too deeply"),
            std::string::npos);
}

TEST(Parser, ModerateNestingIsFine) {
  std::string source = "model m {\n  y = " + std::string(100, '(') + "x" +
                       std::string(100, ')') + "\n}";
  auto p = parse(source);
  EXPECT_TRUE(p->model) << p->diags;
}

} // namespace
