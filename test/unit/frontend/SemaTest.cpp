//===- SemaTest.cpp - Names, shapes and weights of .attn models -----------===//
//
// Part of attnc. Each error class with its message and its line:col.
//
//===----------------------------------------------------------------------===//

#include "test/unit/frontend/ExampleModels.h"
#include "test/unit/frontend/FrontendTestUtil.h"

#include <algorithm>

using namespace attnc;
using namespace attnc::test;

namespace {

/// Lines 1-15; a test's body starts on line 16.
constexpr const char *kPrefix = "model m {\n"
                                "  dim B, S <= 128\n"
                                "  input x : f32[B, S, 64]\n"
                                "  input ids : i32[B, S]\n"
                                "  weight fc.weight : f32[128, 64]\n"
                                "  weight fc.bias : f32[128]\n"
                                "  weight ln.weight : f32[64]\n"
                                "  weight ln.bias : f32[64]\n"
                                "  weight q.weight : f32[64, 64]\n"
                                "  weight k.weight : f32[64, 64]\n"
                                "  weight v.weight : f32[64, 64]\n"
                                "  weight o.weight : f32[64, 64]\n"
                                "  weight o.bias : f32[64]\n"
                                "  weight qkv.weight : f32[192, 64]\n"
                                "  weight qkv.bias : f32[192]\n";

std::string model(llvm::StringRef body) {
  return kPrefix + body.str() + "\n}\n";
}

const OutputStmt &onlyOutput(const ModelAST &m) {
  return *m.getOutputs().front();
}

//===--- The example models ---------------------------------------------===//

TEST(Sema, Gpt2BlockChecks) {
  Loaded l = load(kGpt2Block);
  ASSERT_TRUE(l.model) << l.diags;
  EXPECT_EQ(l.diags, "");
  const ModelAST &m = *l.model;
  const auto *h = llvm::cast<AssignStmt>(m.body[1].get());
  const auto *norm = llvm::cast<BuiltinExpr>(h->value.get());
  EXPECT_EQ(norm->builtin, "layer_norm");
  EXPECT_EQ(norm->getWeight("gamma"), m.lookupWeight("ln_1.weight"));
  EXPECT_EQ(norm->getWeight("beta"), m.lookupWeight("ln_1.bias"));
  EXPECT_DOUBLE_EQ(norm->getAttr("eps")->real, 1e-5);
  EXPECT_EQ(shapeToString(norm->shape), "[B, S, 768]");
  EXPECT_EQ(norm->shape[0].dim, m.lookupDim("B"));

  const auto *a = llvm::cast<AssignStmt>(m.body[2].get());
  const auto *attn = llvm::cast<BuiltinExpr>(a->value.get());
  EXPECT_EQ(attn->builtin, "self_attention");
  EXPECT_EQ(attn->getAttr("heads")->integer, 12);
  EXPECT_EQ(attn->getAttr("causal")->integer, 1);
  EXPECT_EQ(attn->getWeight("qkv.weight"),
            m.lookupWeight("attn.c_attn.weight"));
  EXPECT_EQ(attn->getWeight("qkv.weight")->layout, WeightLayout::inOut);
  EXPECT_EQ(attn->getWeight("qkv.bias"), m.lookupWeight("attn.c_attn.bias"));
  EXPECT_EQ(attn->getWeight("out.weight"),
            m.lookupWeight("attn.c_proj.weight"));
  EXPECT_FALSE(attn->getWeight("q.weight"));
  // The input of the attention is a use of `h`.
  const auto *ref = llvm::cast<ValueRefExpr>(attn->operands[0].get());
  EXPECT_EQ(ref->decl, h);

  const auto *h2 = llvm::cast<AssignStmt>(m.body[4].get());
  EXPECT_DOUBLE_EQ(
      llvm::cast<BuiltinExpr>(h2->value.get())->getAttr("eps")->real, 1e-5);

  const auto *f = llvm::cast<AssignStmt>(m.body[5].get());
  const auto *outer = llvm::cast<BuiltinExpr>(f->value.get());
  EXPECT_EQ(outer->builtin, "linear");
  EXPECT_EQ(outer->getWeight("weight"), m.lookupWeight("mlp.c_proj.weight"));
  EXPECT_EQ(outer->getWeight("bias"), m.lookupWeight("mlp.c_proj.bias"));
  const auto *gelu = llvm::cast<BuiltinExpr>(outer->operands[0].get());
  EXPECT_EQ(gelu->builtin, "gelu");
  EXPECT_EQ(shapeToString(gelu->shape), "[B, S, 3072]");
  EXPECT_EQ(shapeToString(outer->shape), "[B, S, 768]");

  const OutputStmt &y = onlyOutput(m);
  EXPECT_EQ(y.name, "y");
  EXPECT_EQ(llvm::cast<BuiltinExpr>(y.value.get())->builtin, "add");
  EXPECT_EQ(shapeToString(y.shape), "[B, S, 768]");
  EXPECT_EQ(y.elementType, ElementType::f32);
  ASSERT_EQ(m.getInputs().size(), 1u);
  for (const auto &w : m.weights)
    EXPECT_TRUE(w->used) << w->name;
}

TEST(Sema, BertLayerChecksWithReassignment) {
  Loaded l = load(kBertLayer);
  ASSERT_TRUE(l.model) << l.diags;
  EXPECT_EQ(l.diags, "");
  const ModelAST &m = *l.model;
  const auto *attn = llvm::cast<BuiltinExpr>(
      llvm::cast<AssignStmt>(m.body[1].get())->value.get());
  EXPECT_FALSE(attn->getWeight("qkv.weight"));
  EXPECT_FALSE(attn->getAttr("causal"));
  EXPECT_EQ(attn->getWeight("q.weight"),
            m.lookupWeight("attention.self.query.weight"));
  EXPECT_EQ(attn->getWeight("q.bias"),
            m.lookupWeight("attention.self.query.bias"));
  EXPECT_EQ(attn->getWeight("k.weight"),
            m.lookupWeight("attention.self.key.weight"));
  EXPECT_EQ(attn->getWeight("v.bias"),
            m.lookupWeight("attention.self.value.bias"));
  EXPECT_EQ(attn->getWeight("out.bias"),
            m.lookupWeight("attention.output.dense.bias"));
  EXPECT_EQ(llvm::cast<ValueRefExpr>(attn->operands[0].get())->decl,
            m.body[0].get());

  // x = layer_norm(x + a, ...): the `x` inside is the input.
  const auto *x2 = llvm::cast<AssignStmt>(m.body[2].get());
  const auto *norm1 = llvm::cast<BuiltinExpr>(x2->value.get());
  EXPECT_DOUBLE_EQ(norm1->getAttr("eps")->real, 1e-12);
  const auto *add1 = llvm::cast<BuiltinExpr>(norm1->operands[0].get());
  EXPECT_EQ(llvm::cast<ValueRefExpr>(add1->operands[0].get())->decl,
            m.body[0].get());
  // f uses the reassigned x.
  const auto *f = llvm::cast<AssignStmt>(m.body[3].get());
  const auto *inner = llvm::cast<BuiltinExpr>(
      llvm::cast<BuiltinExpr>(
          llvm::cast<BuiltinExpr>(f->value.get())->operands[0].get())
          ->operands[0]
          .get());
  EXPECT_EQ(inner->builtin, "linear");
  EXPECT_EQ(llvm::cast<ValueRefExpr>(inner->operands[0].get())->decl, x2);
  // The second reassignment, and `output y = x` exports it.
  const auto *x3 = llvm::cast<AssignStmt>(m.body[4].get());
  const auto *add2 = llvm::cast<BuiltinExpr>(
      llvm::cast<BuiltinExpr>(x3->value.get())->operands[0].get());
  EXPECT_EQ(llvm::cast<ValueRefExpr>(add2->operands[0].get())->decl, x2);
  const OutputStmt &y = onlyOutput(m);
  EXPECT_FALSE(y.exportsExisting);
  EXPECT_EQ(llvm::cast<ValueRefExpr>(y.value.get())->decl, x3);
  EXPECT_EQ(shapeToString(y.shape), "[B, S, 768]");
}

TEST(Sema, DumpShowsResolvedModel) {
  Loaded l = load(kGpt2Block);
  ASSERT_TRUE(l.model);
  std::string dump;
  llvm::raw_string_ostream os(dump);
  dumpModel(*l.model, os);
  EXPECT_NE(dump.find("a : f32[B, S, 768] = self_attention(h, qkv.weight = "
                      "attn.c_attn.weight layout(in, out), qkv.bias = "
                      "attn.c_attn.bias, out.weight = attn.c_proj.weight "
                      "layout(in, out), out.bias = attn.c_proj.bias, heads = "
                      "12, causal = 1)"),
            std::string::npos)
      << dump;
  EXPECT_NE(dump.find("output y : f32[B, S, 768] = add(x1, f)"),
            std::string::npos)
      << dump;
}

TEST(Sema, ValidSmallModelWithExplicitWeights) {
  Loaded l = load(model("  weight w2 : f32[64, 32] layout(in, out)\n"
                        "  h = linear(x, fc.weight, fc.bias)\n"
                        "  g = relu(linear(x, w2))\n"
                        "  n = layer_norm(x, ln.weight, ln.bias, eps = 1e-6)\n"
                        "  output h\n"
                        "  output g\n"
                        "  output n"));
  ASSERT_TRUE(l.model) << l.diags;
  auto outputs = l.model->getOutputs();
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_EQ(shapeToString(outputs[0]->shape), "[B, S, 128]");
  EXPECT_EQ(shapeToString(outputs[1]->shape), "[B, S, 32]");
  EXPECT_EQ(shapeToString(outputs[2]->shape), "[B, S, 64]");
  const auto *g = llvm::cast<BuiltinExpr>(
      llvm::cast<AssignStmt>(l.model->body[3].get())->value.get());
  EXPECT_EQ(g->builtin, "relu");
  EXPECT_EQ(llvm::cast<BuiltinExpr>(g->operands[0].get())->getWeight("bias"),
            nullptr);
}

//===--- Names ----------------------------------------------------------===//

TEST(Sema, UnknownValueSuggestsClosest) {
  EXPECT_TRUE(failsWith(model("  y = gelu(xx)\n  output y"), "16:12",
                        "unknown value 'xx'; did you mean 'x'?"));
}

TEST(Sema, ValueUsedBeforeAssignment) {
  Loaded l = load(model("  y = gelu(z)\n  z = gelu(x)\n  output y"));
  EXPECT_FALSE(l.model);
  EXPECT_TRUE(hasDiag(l.diags, "16:12", "'z' is used before it is assigned"));
  EXPECT_TRUE(hasDiag(l.diags, "17:3", "it is first assigned here", "note"));
}

TEST(Sema, UnknownWeightOrPrefix) {
  EXPECT_TRUE(failsWith(model("  y = linear(x, fc2)\n  output y"), "16:17",
                        "unknown weight 'fc2' for 'linear'; did you mean "
                        "'fc'?"));
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 4, qkv = qkvv, out = o)\n"
            "  output y"),
      "16:42",
      "unknown module prefix 'qkvv' for 'qkv' (no weight 'qkvv.weight' is "
      "declared); did you mean 'qkv'?"));
  EXPECT_TRUE(failsWith(model("  y = layer_norm(x, lnn)\n  output y"), "16:21",
                        "unknown module prefix 'lnn' for 'layer_norm'"));
  EXPECT_TRUE(failsWith(model("  y = linear(x, x)\n  output y"), "16:17",
                        "'x' is a value, but this argument is a weight"));
}

TEST(Sema, WeightOrPrefixUsedAsValue) {
  EXPECT_TRUE(failsWith(model("  y = x + ln.weight\n  output y"), "16:11",
                        "'ln.weight' is a weight, not a value"));
  EXPECT_TRUE(failsWith(model("  y = gelu(fc)\n  output y"), "16:12",
                        "'fc' is a module prefix, not a value"));
  EXPECT_TRUE(failsWith(model("  y = 3\n  output y"), "16:7",
                        "a number is not a tensor value"));
}

TEST(Sema, DuplicateDeclarations) {
  Loaded l = load(model("  weight fc.bias : f32[128]\n"
                        "  dim B\n"
                        "  input x : f32[B, 64]\n"
                        "  output y = x"));
  EXPECT_FALSE(l.model);
  EXPECT_TRUE(hasDiag(l.diags, "16:10", "weight 'fc.bias' is declared twice"));
  EXPECT_TRUE(
      hasDiag(l.diags, "6:10", "the first declaration is here", "note"));
  EXPECT_TRUE(hasDiag(l.diags, "17:7", "dim 'B' is declared twice"));
  EXPECT_TRUE(hasDiag(l.diags, "2:7", "the first declaration is here", "note"));
  EXPECT_TRUE(hasDiag(l.diags, "18:9", "'x' is already defined"));
}

//===--- Dims and types ---------------------------------------------------===//

TEST(Sema, UndeclaredDim) {
  EXPECT_TRUE(failsWith(model("  input z : f32[B, T, 64]\n  output y = z"),
                        "16:20", "unknown dim 'T'; declare it with 'dim T'"));
}

// An unknown dim in a weight's shape is one error, where it is written; the
// ops that read the weight do not report it again (nor dereference the
// DimDecl it lacks: found by fuzz/frontend_fuzzer).
TEST(Sema, UnknownDimInAWeightIsReportedOnce) {
  Loaded l = load(model("  weight wte.weight : f32[32, nodim]\n"
                        "  e = embedding(ids, wte)\n"
                        "  output y = layer_norm(e, ln)"));
  EXPECT_FALSE(l.model);
  EXPECT_TRUE(hasDiag(l.diags, "16:31",
                      "unknown dim 'nodim'; declare it with 'dim nodim'"));
  EXPECT_EQ(std::count(l.diags.begin(), l.diags.end(), '^'), 1) << l.diags;
}

TEST(Sema, NonPositiveBoundsAndSizes) {
  Loaded l = load(model("  dim C <= 0, D <= -4\n"
                        "  input z : f32[B, 0, 64]\n"
                        "  weight big : f32[2147483648]\n"
                        "  output y = x"));
  EXPECT_FALSE(l.model);
  EXPECT_TRUE(hasDiag(l.diags, "16:12",
                      "the bound of dim 'C' must be in 1..2147483647, got 0"));
  EXPECT_TRUE(hasDiag(l.diags, "16:20",
                      "the bound of dim 'D' must be in 1..2147483647, got -4"));
  EXPECT_TRUE(hasDiag(l.diags, "17:20",
                      "a fixed size must be in 1..2147483647, got 0"));
  EXPECT_TRUE(hasDiag(l.diags, "18:20", "got 2147483648"));
}

TEST(Sema, InputAndWeightTypeRules) {
  Loaded l = load(model("  input v : f32[64]\n"
                        "  weight pos : f32[S, 64]\n"
                        "  weight idx : i32[4]\n"
                        "  weight g : f32[64] layout(in, out)\n"
                        "  output y = x"));
  EXPECT_FALSE(l.model);
  EXPECT_TRUE(hasDiag(l.diags, "16:13",
                      "f32 input 'v' must have rank >= 2 ([..., d_model]), "
                      "got rank 1"));
  EXPECT_TRUE(hasDiag(l.diags, "17:20",
                      "weight shapes must be fixed sizes, but 'S' is a "
                      "symbolic dim"));
  EXPECT_TRUE(hasDiag(l.diags, "18:16",
                      "weight 'idx' must be f32, bf16 or f16 (kept in that "
                      "precision, computed in f32), or i8 or i4 (a "
                      "quantized linear matrix), not i32"));
  EXPECT_TRUE(hasDiag(l.diags, "19:22",
                      "a layout applies only to 2-D weights; 'g' is 1-D"));
}

TEST(Sema, I32InputWhereF32IsNeeded) {
  EXPECT_TRUE(failsWith(model("  y = gelu(ids)\n  output y"), "16:12",
                        "'gelu' needs an f32 tensor, but this is i32"));
  EXPECT_TRUE(failsWith(model("  y = x + ids\n  output y"), "16:11",
                        "'+' needs f32 operands; this one is i32"));
}

//===--- Builtins and arguments -------------------------------------------===//

TEST(Sema, UnknownBuiltin) {
  EXPECT_TRUE(failsWith(model("  y = gleu(x)\n  output y"), "16:7",
                        "unknown builtin 'gleu'; did you mean 'gelu'?"));
  // (softmax itself is now close to softcap: "did you mean 'softcap'?")
  EXPECT_TRUE(failsWith(
      model("  y = quantize(x)\n  output y"), "16:7",
      "unknown builtin 'quantize'; the builtins are linear, "
      "layer_norm, rms_norm, gelu, softcap, dropout, embedding, positions, "
      "sinusoidal, relative_bias, self_attention, cross_attention, attention, "
      "slice, concat, transpose, reshape, sum, mean, relu, tanh, silu"));
}

TEST(Sema, NamedArgumentErrors) {
  EXPECT_TRUE(failsWith(model("  y = layer_norm(x, ln, epsilon = 1e-5)\n"
                              "  output y"),
                        "16:25",
                        "unknown argument 'epsilon' of 'layer_norm'; its named "
                        "arguments are eps"));
  EXPECT_TRUE(
      failsWith(model("  y = self_attention(x, head = 4, qkv = qkv, out = o)\n"
                      "  output y"),
                "16:25",
                "unknown argument 'head' of 'self_attention'; did you mean "
                "'heads'?"));
  EXPECT_TRUE(failsWith(model("  y = relu(x, approximate = tanh)\n  output y"),
                        "16:15",
                        "unknown argument 'approximate' of 'relu'; it takes no "
                        "named arguments"));
  EXPECT_TRUE(failsWith(model("  y = gelu(x, approximate = erf)\n  output y"),
                        "16:29",
                        "'approximate' of 'gelu' must be 'none' (the erf "
                        "form) or 'tanh'"));
  Loaded l = load(model("  y = layer_norm(x, ln, eps = 1e-5, eps = 1e-6)\n"
                        "  output y"));
  EXPECT_FALSE(l.model);
  EXPECT_TRUE(hasDiag(l.diags, "16:37", "argument 'eps' is given twice"));
  EXPECT_TRUE(hasDiag(l.diags, "16:25", "the first one is here", "note"));
}

TEST(Sema, PositionalAfterNamed) {
  EXPECT_TRUE(failsWith(
      model("  y = layer_norm(x, eps = 1e-5, ln)\n  output y"), "16:33",
      "positional argument after the named argument 'eps'; "
      "put positional arguments first"));
}

TEST(Sema, WrongPositionalCount) {
  EXPECT_TRUE(failsWith(model("  y = relu(x, x)\n  output y"), "16:7",
                        "'relu' takes 1 positional argument, got 2; write "
                        "relu(x)"));
  EXPECT_TRUE(failsWith(model("  y = linear(x)\n  output y"), "16:7",
                        "'linear' takes 2 or 3 positional arguments, got 1"));
  EXPECT_TRUE(failsWith(model("  y = self_attention(x, q, heads = 4)\n"
                              "  output y"),
                        "16:7",
                        "'self_attention' takes 1 positional argument, got 2"));
}

//===--- Shapes -----------------------------------------------------------===//

TEST(Sema, LinearInputFeaturesMismatch) {
  EXPECT_TRUE(failsWith(model("  y = linear(linear(x, fc), fc)\n  output y"),
                        "16:29",
                        "linear weight 'fc.weight' is [128, 64] but must be "
                        "[N, 128] ([out, in] layout) for the input's feature "
                        "size 128; if it is stored [in, out], declare it with "
                        "'layout(in, out)'"));
}

TEST(Sema, LinearWeightAndBiasShapes) {
  EXPECT_TRUE(failsWith(model("  weight b.weight : f32[32, 64]\n"
                              "  weight b.bias : f32[64]\n"
                              "  y = linear(x, b)\n  output y"),
                        "18:17",
                        "linear bias 'b.bias' is [64] but must be [32] to "
                        "match the weight's 32 output features"));
  EXPECT_TRUE(failsWith(model("  y = linear(x, ln.weight)\n  output y"),
                        "16:17",
                        "linear weight 'ln.weight' must be 2-D ([out, in] "
                        "layout), but it is [64]"));
  EXPECT_TRUE(failsWith(model("  y = linear(x, fc.weight, fc.bia)\n"
                              "  output y"),
                        "16:28",
                        "unknown weight 'fc.bia' for the bias of 'linear'; "
                        "did you mean 'fc.bias'?"));
}

TEST(Sema, LinearNeedsFixedFeatureSize) {
  EXPECT_TRUE(failsWith(model("  input z : f32[B, S]\n"
                              "  y = linear(z, fc)\n  output y"),
                        "17:14",
                        "'linear' needs a fixed feature size, but the last "
                        "dim of its input is the symbolic dim 'S'"));
}

TEST(Sema, LayerNormParameters) {
  EXPECT_TRUE(failsWith(model("  y = layer_norm(linear(x, fc), ln)\n"
                              "  output y"),
                        "16:33",
                        "layer_norm scale 'ln.weight' is [64] but must be "
                        "[128] to match the input's last dim 128"));
  EXPECT_TRUE(failsWith(model("  y = layer_norm(x, ln, eps = 0)\n  output y"),
                        "16:31",
                        "'eps' of 'layer_norm' must be a positive number, "
                        "such as 1e-5"));
  EXPECT_TRUE(failsWith(model("  y = layer_norm(x, ln, eps = -1e-5)\n"
                              "  output y"),
                        "16:31",
                        "'eps' of 'layer_norm' must be a positive number, "
                        "such as 1e-5"));
  EXPECT_TRUE(failsWith(model("  weight g.weight : f32[64]\n"
                              "  y = layer_norm(x, g)\n  output y"),
                        "17:21",
                        "'layer_norm' needs the shift 'g.bias'; declare it as "
                        "'weight g.bias : f32[D]'"));
}

TEST(Sema, AddShapesMustMatch) {
  EXPECT_TRUE(failsWith(model("  y = x + linear(x, fc)\n  output y"), "16:9",
                        "the operands of '+' must have the same shape, or one "
                        "must be the trailing dims of the other, but "
                        "[B, S, 64] and [B, S, 128] differ in dim 2 (64 vs "
                        "128)"));
  EXPECT_TRUE(failsWith(model("  input z : f32[S, B, 64]\n"
                              "  y = x + z\n  output y"),
                        "17:9",
                        "[B, S, 64] and [S, B, 64] differ in dim 0 (B vs S), "
                        "dim 1 (S vs B)"));
  // A shorter operand broadcasts over the leading dims only.
  EXPECT_TRUE(failsWith(model("  input z : f32[B, 64]\n"
                              "  y = x - z\n  output y"),
                        "17:9",
                        "the operands of '-' must have the same shape, or one "
                        "must be the trailing dims of the other, but "
                        "[B, S, 64] and [B, 64] differ in dim 1 (S vs B)"));
}

TEST(Sema, OperatorsBroadcastAndScale) {
  Loaded l = load(model("  input z : f32[S, 64]\n"
                        "  a = x + z\n  b = x * x - x\n  c = 0.5 * x\n"
                        "  output y = tanh(a) + b * 2 + c"));
  ASSERT_TRUE(l.model) << l.diags;
  const auto &body = l.model->body;
  const auto *a = llvm::cast<BuiltinExpr>(
      llvm::cast<AssignStmt>(body[3].get())->value.get());
  EXPECT_EQ(a->builtin, "add");
  EXPECT_EQ(shapeToString(a->shape), "[B, S, 64]");
  const auto *b = llvm::cast<BuiltinExpr>(
      llvm::cast<AssignStmt>(body[4].get())->value.get());
  EXPECT_EQ(b->builtin, "sub");
  EXPECT_EQ(llvm::cast<BuiltinExpr>(b->operands[0].get())->builtin, "mul");
  const auto *c = llvm::cast<BuiltinExpr>(
      llvm::cast<AssignStmt>(body[5].get())->value.get());
  EXPECT_EQ(c->builtin, "scale");
  EXPECT_DOUBLE_EQ(c->getAttr("factor")->real, 0.5);
  EXPECT_TRUE(failsWith(model("  output y = x + 1.0"), "16:16",
                        "'+' needs two tensors; a number may only scale a "
                        "tensor, as in 'x * 0.5'"));
}

//===--- self_attention ---------------------------------------------------===//

TEST(Sema, AttentionHeadsMustDivideModelDim) {
  EXPECT_TRUE(
      failsWith(model("  y = self_attention(x, heads = 5, qkv = qkv, out = o)\n"
                      "  output y"),
                "16:33", "d_model 64 is not divisible by heads = 5"));
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 0, qkv = qkv, out = o)\n"
            "  output y"),
      "16:33", "'heads' of 'self_attention' must be a positive integer"));
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 2.5, qkv = qkv, out = o)\n"
            "  output y"),
      "16:33",
      "'heads' of 'self_attention' must be a positive integer, "
      "such as 12"));
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, qkv = qkv, out = o)\n  output y"), "16:7",
      "'self_attention' requires 'heads = N'"));
}

TEST(Sema, AttentionProjectionCombinations) {
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 4, qkv = qkv, q = q, k = k, "
            "v = v, out = o)\n  output y"),
      "16:36",
      "give either 'qkv' or 'q', 'k' and 'v' to 'self_attention', "
      "not both"));
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 4, q = q, k = k, out = o)\n"
            "  output y"),
      "16:7",
      "'self_attention' is missing 'v'; separate projections need all "
      "of 'q', 'k' and 'v'"));
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 4, out = o)\n  output y"), "16:7",
      "'self_attention' needs its projections"));
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 4, qkv = qkv)\n  output y"),
      "16:7", "'self_attention' requires 'out = P' (the output projection)"));
}

TEST(Sema, AttentionProjectionShapes) {
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 4, qkv = q, out = o)\n"
            "  output y"),
      "16:42",
      "'qkv' weight 'q.weight' is [64, 64] but must be [192, 64] ([out, in] "
      "layout) for d_model 64"));
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 4, q = q, k = k, v = qkv, out = "
            "o)\n  output y"),
      "16:54", "'v' weight 'qkv.weight' is [192, 64] but must be [64, 64]"));
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 4, qkv = qkv.weight, out = o)\n"
            "  output y"),
      "16:42", "'qkv' takes a module prefix: write 'qkv' for 'qkv.weight'"));
}

TEST(Sema, AttentionLayoutHint) {
  std::string source = kGpt2Block;
  size_t pos = source.find("f32[768, 2304] layout(in, out)");
  source.replace(pos, 30, "f32[768, 2304]");
  EXPECT_TRUE(failsWith(source, "17:44",
                        "'qkv' weight 'attn.c_attn.weight' is [768, 2304] but "
                        "must be [2304, 768] ([out, in] layout) for d_model "
                        "768; if it is stored [in, out], declare it with "
                        "'layout(in, out)'"));
}

TEST(Sema, AttentionGpt2HeadsNotDividing) {
  std::string source = kGpt2Block;
  source.replace(source.find("heads = 12"), 10, "heads = 5");
  EXPECT_TRUE(
      failsWith(source, "17:34", "d_model 768 is not divisible by heads = 5"));
}

TEST(Sema, AttentionMask) {
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 4, qkv = qkv, out = o, mask = "
            "casual)\n  output y"),
      "16:63",
      "unknown mask 'casual'; a mask is none, causal, padding(LENGTHS), "
      "window(W), window(LEFT, RIGHT), alibi, an f32 tensor added to the "
      "scores, or "
      "several joined with '&'"));
  // ids is i32[B, S], not one length per sequence.
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 4, qkv = qkv, out = o, mask = "
            "padding(ids))\n  output y"),
      "16:71",
      "padding lengths must be i32[B], one length per sequence of the batch, "
      "but this is i32[B, S]"));
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 4, qkv = qkv, out = o, mask = "
            "causal & window(0))\n  output y"),
      "16:79", "a window size must be an integer >= 1"));
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 4, qkv = qkv, out = o, mask = "
            "causal & causal)\n  output y"),
      "16:72", "the mask has two 'causal' terms; give each once"));
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(x, heads = 4, qkv = qkv, out = o, mask = "
            "x)\n  output y"),
      "16:63",
      "an additive mask is f32[S, S], [B, S, S] or [B, 4, S, S], but this is "
      "f32[B, S, 64]"));
  EXPECT_TRUE(failsWith(model("  output y = x & x"), "16:16",
                        "'&' joins the terms of an attention mask"));
  Loaded l =
      load(model("  input len : i32[B]\n  input m : f32[B, 4, S, S]\n"
                 "  y = self_attention(x, heads = 4, qkv = qkv, out = o, "
                 "mask = causal & padding(len) & window(3, 1) & m)\n"
                 "  output y"));
  ASSERT_TRUE(l.model) << l.diags;
  const auto *attn = llvm::cast<BuiltinExpr>(
      llvm::cast<AssignStmt>(l.model->body[4].get())->value.get());
  EXPECT_EQ(attn->getAttr("causal")->integer, 1);
  EXPECT_EQ(attn->getAttr("window_left")->integer, 3);
  EXPECT_EQ(attn->getAttr("window_right")->integer, 1);
  EXPECT_EQ(llvm::cast<ValueRefExpr>(attn->getNamedOperand("lengths"))->name,
            "len");
  EXPECT_EQ(llvm::cast<ValueRefExpr>(attn->getNamedOperand("bias"))->name, "m");
}

TEST(Sema, Embedding) {
  Loaded l = load(model("  weight wte.weight : f32[100, 64]\n"
                        "  output y = embedding(ids, wte) + x"));
  ASSERT_TRUE(l.model) << l.diags;
  const auto *y = llvm::cast<BuiltinExpr>(onlyOutput(*l.model).value.get());
  const auto *e = llvm::cast<BuiltinExpr>(y->operands[0].get());
  EXPECT_EQ(e->builtin, "embedding");
  EXPECT_EQ(shapeToString(e->shape), "[B, S, 64]");
  EXPECT_EQ(e->getWeight("table"), l.model->lookupWeight("wte.weight"));
  EXPECT_TRUE(failsWith(
      model("  weight wte.weight : f32[100, 64]\n"
            "  output y = embedding(x, wte)"),
      "17:24", "'embedding' takes i32 ids, but this is f32[B, S, 64]"));
  EXPECT_TRUE(
      failsWith(model("  output y = embedding(ids, ln)"), "16:29",
                "the table of 'embedding' must be 2-D [rows, features], "
                "but 'ln.weight' is [64]"));
}

TEST(Sema, PositionsAndSinusoidal) {
  Loaded l = load(model("  output y = x + sinusoidal(positions(S), 64)"));
  ASSERT_TRUE(l.model) << l.diags;
  const auto *y = llvm::cast<BuiltinExpr>(onlyOutput(*l.model).value.get());
  const auto *pe = llvm::cast<BuiltinExpr>(y->operands[1].get());
  EXPECT_EQ(pe->builtin, "sinusoidal");
  EXPECT_EQ(shapeToString(pe->shape), "[S, 64]");
  const auto *p = llvm::cast<BuiltinExpr>(pe->operands[0].get());
  EXPECT_EQ(p->builtin, "positions");
  EXPECT_EQ(p->elementType, ElementType::i32);
  EXPECT_EQ(shapeToString(p->shape), "[S]");
  // The extent comes from the first input with dim S: x, its dim 1.
  EXPECT_EQ(llvm::cast<ValueRefExpr>(p->operands[0].get())->name, "x");
  EXPECT_EQ(p->getAttr("dim")->integer, 1);
  EXPECT_EQ(p->getAttr("start"), nullptr);

  // BART's learned positions: rows 2 .. S+1 of the table.
  Loaded shifted =
      load(model("  output y = sinusoidal(positions(S, start = 2), 64)"));
  ASSERT_TRUE(shifted.model) << shifted.diags;
  const auto *sp = llvm::cast<BuiltinExpr>(
      llvm::cast<BuiltinExpr>(onlyOutput(*shifted.model).value.get())
          ->operands[0]
          .get());
  EXPECT_EQ(sp->getAttr("start")->integer, 2);
  EXPECT_TRUE(
      failsWith(model("  output y = sinusoidal(positions(S, start = -1), 8)"),
                "16:46", "'start' must be a position from 0 to 2^31 - 1"));

  EXPECT_TRUE(failsWith(model("  output y = sinusoidal(positions(Q), 8)"),
                        "16:35",
                        "the argument of 'positions' must be a declared dim"));
  EXPECT_TRUE(failsWith(model("  dim T <= 8\n"
                              "  output y = sinusoidal(positions(T), 8)"),
                        "17:35", "no input has dim 'T'"));
  EXPECT_TRUE(failsWith(model("  output y = sinusoidal(positions(S), 7)"),
                        "16:39",
                        "the feature count of 'sinusoidal' must be an even "
                        "integer in 2..1048576"));
  EXPECT_TRUE(failsWith(model("  output y = sinusoidal(positions(S), "
                              "2147483646)"),
                        "16:39", "must be an even integer in 2..1048576"));
  EXPECT_TRUE(failsWith(model("  output y = sinusoidal(x, 8)"), "16:25",
                        "'sinusoidal' takes i32 positions"));
}

/// Lines 16-18 declare a memory with its own sequence dim T; a test's call
/// is on line 19.
std::string crossModel(llvm::StringRef call) {
  return model("  dim T <= 32\n"
               "  input mem : f32[B, T, 64]\n"
               "  weight kv.weight : f32[128, 64]\n" +
               call.str());
}

TEST(Sema, CrossAttention) {
  Loaded l =
      load(crossModel("  input len : i32[B]\n"
                      "  a, w = cross_attention(x, mem, heads = 4, q = q, "
                      "kv = kv, out = o, mask = padding(len))\n"
                      "  output w"));
  ASSERT_TRUE(l.model) << l.diags;
  const ResultDecl *w = nullptr;
  for (const auto &decl : l.model->body)
    if (auto *result = llvm::dyn_cast<ResultDecl>(decl.get()))
      w = result;
  ASSERT_TRUE(w);
  EXPECT_EQ(shapeToString(w->shape), "[B, 4, S, T]");

  EXPECT_TRUE(
      failsWith(crossModel("  output y = cross_attention(x, mem, heads "
                           "= 4, q = q, kv = kv, out = o, mask = causal)"),
                "19:81",
                "'cross_attention' masks only the memory: 'causal' "
                "compares query and key positions"));
  EXPECT_TRUE(failsWith(
      crossModel("  output y = cross_attention(x, mem, heads "
                 "= 4, q = q, out = o)"),
      "19:14", "'cross_attention' needs its key and value projections"));
  EXPECT_TRUE(failsWith(crossModel("  output y = cross_attention(x, mem, heads "
                                   "= 4, q = q, kv = qkv, out = o)"),
                        "19:61",
                        "'kv' weight 'qkv.weight' is [192, 64] but "
                        "must be [128, 64]"));
  EXPECT_TRUE(failsWith(crossModel("  output y = cross_attention(x, ids, heads "
                                   "= 4, q = q, kv = kv, out = o)"),
                        "19:33", "cross_attention"));
  // nn.MultiheadAttention's packed in_proj_weight / in_proj_bias.
  EXPECT_TRUE(load(model("  weight mha.in_proj_weight : f32[192, 64]\n"
                         "  weight mha.in_proj_bias : f32[192]\n"
                         "  output y = cross_attention(x, x, heads = 4, qkv = "
                         "mha.in_proj, out = o)"))
                  .model);
  EXPECT_TRUE(failsWith(crossModel("  output y = cross_attention(x, mem, heads "
                                   "= 4, qkv = qkv, kv = kv, out = o)"),
                        "19:49", "give 'cross_attention' either 'qkv'"));
  // Two sequence dims mixed up: S and T are different extents.
  EXPECT_TRUE(
      failsWith(crossModel("  output y = x + mem"), "19:16", "dim 1 (S vs T)"));
}

TEST(Sema, ScoreFunctions) {
  // Luong's general score q . (W k + b) over unprojected states, weights too.
  Loaded l = load(crossModel("  a, w = attention(x, mem, mem, score = "
                             "general, w = q, scale = 0.5)\n  output w"));
  ASSERT_TRUE(l.model) << l.diags;
  EXPECT_TRUE(load(crossModel("  output y = attention(x, mem, mem, score = "
                              "additive, w_query = q, w_key = k, w_score = "
                              "fc)"))
                  .model == nullptr)
      << "fc.weight is [128, 64], not an nn.Linear(A, 1)";
  EXPECT_TRUE(failsWith(crossModel("  output y = attention(x, mem, mem, "
                                   "score = general)"),
                        "19:14", "'score = general' needs 'w = P'"));
  EXPECT_TRUE(failsWith(crossModel("  output y = attention(x, mem, mem, w = "
                                   "q)"),
                        "19:41",
                        "'w' belongs to 'score = general', but the score is "
                        "dot"));
  EXPECT_TRUE(failsWith(crossModel("  output y = attention(x, mem, mem, score "
                                   "= luong)"),
                        "19:45",
                        "'score' of 'attention' must be 'dot' (q . k), "
                        "'general' (Luong: q . W k) or 'additive'"));
  EXPECT_TRUE(failsWith(crossModel("  output y = attention(x, mem, mem, scale "
                                   "= 0)"),
                        "19:45",
                        "'scale' of 'attention' must be a positive number"));
  EXPECT_TRUE(failsWith(crossModel("  output y = attention(x, mem, mem, heads "
                                   "= 2, score = additive, w_query = q, w_key "
                                   "= k, w_score = o)"),
                        "19:45",
                        "an additive score is computed over whole "
                        "vectors: use heads = 1"));
  EXPECT_TRUE(failsWith(crossModel("  output y = attention(x, mem, mem, mask "
                                   "= causal)"),
                        "19:44",
                        "'causal', 'window' and 'alibi' compare query and "
                        "key positions, but the queries run along S and the "
                        "keys "
                        "along T"));
  EXPECT_TRUE(load(crossModel("  output y = attention(x, x, x, mask = causal "
                              "& window(4))"))
                  .model);
  EXPECT_TRUE(failsWith(crossModel("  output y = attention(x, mem, x)"),
                        "19:27",
                        "the queries, keys and values of 'attention' "
                        "must share their batch dims"));
}

TEST(Sema, DropoutIsTheIdentity) {
  Loaded l = load(model("  output y = dropout(tanh(x), 0.1)"));
  ASSERT_TRUE(l.model) << l.diags;
  const auto *y = llvm::cast<BuiltinExpr>(onlyOutput(*l.model).value.get());
  EXPECT_EQ(y->builtin, "tanh");
  EXPECT_TRUE(failsWith(model("  output y = dropout(x, 1.5)"), "16:25",
                        "the dropout probability must be a number in [0, 1)"));
}

TEST(Sema, AttentionWeightsAreASecondResult) {
  Loaded l = load(model("  a, w = self_attention(x, heads = 4, qkv = qkv, "
                        "out = o)\n  output w"));
  ASSERT_TRUE(l.model) << l.diags;
  const auto *w = llvm::cast<ResultDecl>(l.model->body[3].get());
  EXPECT_EQ(shapeToString(w->shape), "[B, 4, S, S]");
  EXPECT_EQ(w->of->name, "a");
  EXPECT_TRUE(llvm::cast<BuiltinExpr>(w->of->value.get())->getAttr("weights"));
  EXPECT_TRUE(failsWith(model("  a, w = linear(x, fc)\n  output w"), "16:6",
                        "'linear' has one result; only self_attention, "
                        "cross_attention and attention have a second one, "
                        "their attention weights"));
}

TEST(Sema, AttentionNeedsF32) {
  EXPECT_TRUE(failsWith(
      model("  y = self_attention(ids, heads = 4, qkv = qkv, out = o)\n"
            "  output y"),
      "16:22", "'self_attention' needs an f32 tensor, but this is i32"));
}

//===--- Outputs and warnings ---------------------------------------------===//

TEST(Sema, OutputRules) {
  EXPECT_TRUE(failsWith(model("  y = gelu(x)"), "1:7",
                        "model 'm' has no output; add 'output NAME = EXPR'"));
  EXPECT_TRUE(failsWith(model("  output y = x\n  output y = gelu(x)"), "17:10",
                        "output 'y' is declared twice"));
  EXPECT_TRUE(failsWith(model("  output zz"), "16:10",
                        "'output zz' exports a value named 'zz', but there is "
                        "none; write 'output zz = EXPR' or assign 'zz' first"));
}

TEST(Sema, UnusedWeightIsAWarning) {
  Loaded l = load("model m {\n  dim B\n  input x : f32[B, 4]\n"
                  "  weight w.weight : f32[4, 4]\n  weight extra : f32[4]\n"
                  "  output y = linear(x, w)\n}\n");
  ASSERT_TRUE(l.model) << l.diags;
  EXPECT_TRUE(hasDiag(l.diags, "5:10",
                      "weight 'extra' is declared but never used", "warning"));
  EXPECT_EQ(l.diags.find("error"), std::string::npos);
}

TEST(Sema, CollectsAllErrors) {
  Loaded l = load(model("  a = gelu(nope)\n"
                        "  b = x + linear(x, fc)\n"
                        "  c = self_attention(x, heads = 5, qkv = qkv, out = "
                        "o, mask = sliding)\n"
                        "  output a"));
  EXPECT_FALSE(l.model);
  EXPECT_TRUE(hasDiag(l.diags, "16:12", "unknown value 'nope'"));
  EXPECT_TRUE(hasDiag(l.diags, "17:9", "differ in dim 2"));
  EXPECT_TRUE(hasDiag(l.diags, "18:33", "not divisible by heads = 5"));
  EXPECT_TRUE(hasDiag(l.diags, "18:63", "unknown mask 'sliding'"));
  // `output a` exports an invalid value: no cascade.
  EXPECT_EQ(l.diags.find("output a"), std::string::npos) << l.diags;
}

TEST(Sema, DiagnosticFormatHasLineAndCaret) {
  Loaded l = load("model m {\n  dim B\n  input x : f32[B, 8]\n"
                  "  output y = gelu(q)\n}\n");
  EXPECT_FALSE(l.model);
  EXPECT_EQ(l.diags, "test.attn:4:19: error: unknown value 'q'\n"
                     "  output y = gelu(q)\n"
                     "                  ^\n");
}

} // namespace
