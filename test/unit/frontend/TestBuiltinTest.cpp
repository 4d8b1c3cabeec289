//===- TestBuiltinTest.cpp - A builtin family defined by a test -----------===//
//
// Part of attnc. The registry's proof: a family of one builtin with one
// weight and one named argument, `gain(x, P, factor = X)` (x times the
// per-feature vector `P.weight`, times X, 1 by default), whose signature,
// check and MLIR emission are all in this file. No other place knows it:
// without registerGainBuiltins it is an unknown builtin.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/EmitContext.h"
#include "compiler/frontend/MLIRGen.h"
#include "test/unit/frontend/FrontendTestUtil.h"

#include "dialects/attn/IR/AttnOps.h"

#include "mlir/IR/MLIRContext.h"

using namespace attnc;
using namespace attnc::test;

namespace {

//===--- The family
//--------------------------------------------------------===//

ExprPtr checkGain(CheckContext &ctx, CallExpr &call, CallArgs &args) {
  ExprPtr x = ctx.checkActivationInput(*args.positional[0], "gain");
  Expr &pArg = *args.positional[1]->value;
  WeightDecl *scale = nullptr;
  if (auto *name = llvm::dyn_cast<NameExpr>(&pArg)) {
    if ((scale = ctx.getWeight(name->name + ".weight")))
      scale->used = true;
    else
      ctx.reportUnknownWeight(*name, "'gain'", /*prefixOnly=*/true);
  } else {
    ctx.errorAt(pArg, "the second argument of 'gain' must be a module prefix");
  }
  int64_t d;
  if (!x || !scale || !ctx.getFeatureDim(*x, "gain", d) ||
      !ctx.checkVector(*scale, pArg, "gain scale", d,
                       "the input's last dim " + std::to_string(d)))
    return nullptr;
  auto gain = std::make_unique<BuiltinExpr>("gain", call.getRange());
  gain->shape = x->shape;
  gain->operands.push_back(std::move(x));
  gain->weights.push_back({"scale", scale});
  gain->attrs.push_back(
      {"factor", BuiltinAttr::getReal(args.number("factor"))});
  return gain;
}

mlir::Value emitGain(EmitContext &ctx, const BuiltinExpr &e,
                     llvm::ArrayRef<mlir::Value> operands) {
  mlir::OpBuilder &builder = ctx.getBuilder();
  mlir::Value scale = ctx.weight(e.getWeight("scale"));
  mlir::Type type = ctx.tensorType(e.shape, e.elementType);
  mlir::Value gain = builder.create<mlir::attn::MulOp>(
      ctx.loc(e.getLoc()), type, operands[0], scale);
  double factor = e.getAttr("factor")->real;
  if (factor == 1)
    return gain;
  return builder.create<mlir::attn::ScaleOp>(ctx.loc(e.getLoc()), type, gain,
                                             builder.getF32FloatAttr(factor));
}

void registerGainBuiltins(BuiltinRegistry &registry) {
  registry.add({"gain",
                2,
                2,
                "gain(x, P)",
                {NamedArg::positiveNumber("factor", "2").byDefault(1.0)},
                checkGain,
                emitGain});
}

//===--- Its tests
//----------------------------------------------------------===//

const BuiltinRegistry &withGain() {
  static const BuiltinRegistry builtins = [] {
    BuiltinRegistry registry = makeBuiltinRegistry(kFunctions);
    registerGainBuiltins(registry);
    return registry;
  }();
  return builtins;
}

constexpr const char *kModel = "model m {\n"
                               "  dim B, S <= 16\n"
                               "  input x : f32[B, S, 4]\n"
                               "  weight g.weight : f32[4]\n"
                               "  output y = gain(relu(x), g)\n"
                               "}\n";

/// The IR MLIRGen emits for `l` with the family registered; "" on failure.
std::string emitWithGain(const Loaded &l) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlirGen(context, *l.model, *l.sourceMgr, withGain());
  std::string ir;
  if (module) {
    llvm::raw_string_ostream os(ir);
    module->print(os);
  }
  return ir;
}

TEST(TestBuiltin, UnknownWithoutItsFamily) {
  Loaded l = load(kModel);
  EXPECT_FALSE(l.model);
  EXPECT_TRUE(hasDiag(l.diags, "5:14", "unknown builtin 'gain'"));
}

TEST(TestBuiltin, ChecksAndEmits) {
  Loaded l = load(kModel, withGain());
  ASSERT_TRUE(l.model) << l.diags;
  const auto *gain =
      llvm::dyn_cast<BuiltinExpr>(l.model->getOutputs().front()->value.get());
  ASSERT_TRUE(gain);
  EXPECT_EQ(gain->builtin, "gain");
  ASSERT_TRUE(gain->getWeight("scale"));
  EXPECT_EQ(gain->getWeight("scale")->name, "g.weight");
  ASSERT_TRUE(gain->getAttr("factor"));
  EXPECT_EQ(gain->getAttr("factor")->real, 1.0) << "the declared default";

  std::string ir = emitWithGain(l);
  ASSERT_FALSE(ir.empty());
  EXPECT_NE(ir.find("attn.weight \"g.weight\" : tensor<4xf32>"),
            std::string::npos)
      << ir;
  EXPECT_NE(ir.find("attn.relu"), std::string::npos) << ir;
  EXPECT_NE(ir.find("attn.mul"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("attn.scale"), std::string::npos) << ir;
}

TEST(TestBuiltin, ItsNamedArgumentIsTyped) {
  Loaded l = load("model m {\n  dim B\n  input x : f32[B, 4]\n"
                  "  weight g.weight : f32[4]\n"
                  "  output y = gain(x, g, factor = 0.5)\n}\n",
                  withGain());
  ASSERT_TRUE(l.model) << l.diags;
  const auto *gain =
      llvm::cast<BuiltinExpr>(l.model->getOutputs().front()->value.get());
  EXPECT_EQ(gain->getAttr("factor")->real, 0.5);

  std::string ir = emitWithGain(l);
  ASSERT_FALSE(ir.empty());
  EXPECT_NE(ir.find("attn.scale"), std::string::npos) << ir;
  EXPECT_NE(ir.find("factor = 5.000000e-01"), std::string::npos) << ir;
}

TEST(TestBuiltin, ItsSignatureAndChecksReport) {
  EXPECT_TRUE(hasDiag(
      load("model m {\n  dim B\n  input x : f32[B, 4]\n"
           "  weight g.weight : f32[3]\n  y = gain(x)\n  output y\n}\n",
           withGain())
          .diags,
      "5:7",
      "'gain' takes 2 positional arguments, got 1; write gain(x, P), with "
      "factor = X (default 1)"));
  EXPECT_TRUE(hasDiag(
      load("model m {\n  dim B\n  input x : f32[B, 4]\n"
           "  weight g.weight : f32[3]\n  y = gain(x, g)\n  output y\n}\n",
           withGain())
          .diags,
      "5:15",
      "gain scale 'g.weight' is [3] but must be [4] to match the input's "
      "last dim 4"));
  EXPECT_TRUE(hasDiag(
      load("model m {\n  dim B\n  input x : f32[B, 4]\n"
           "  weight g.weight : f32[4]\n  y = gain(x, h)\n  output y\n}\n",
           withGain())
          .diags,
      "5:15", "unknown module prefix 'h' for 'gain'"));
  // A wrong kind, and a misspelling, are reported from the declaration.
  EXPECT_TRUE(hasDiag(
      load("model m {\n  dim B\n  input x : f32[B, 4]\n"
           "  weight g.weight : f32[4]\n  y = gain(x, g, factor = g)\n"
           "  output y\n}\n",
           withGain())
          .diags,
      "5:27", "'factor' of 'gain' must be a positive number, such as 2"));
  EXPECT_TRUE(hasDiag(
      load("model m {\n  dim B\n  input x : f32[B, 4]\n"
           "  weight g.weight : f32[4]\n  y = gain(x, g, factr = 2)\n"
           "  output y\n}\n",
           withGain())
          .diags,
      "5:18", "unknown argument 'factr' of 'gain'; did you mean 'factor'?"));
}

} // namespace
